//! Chebyshev filter diagonalization (idle-waves paper §3.3): n_p polynomial
//! steps applied to n_s/n_b blocks of n_b vectors, each step a halo exchange
//! of the block and a kernel (SpMMV + BLAS-1), in one of three schemes:
//!
//! - NON-SPLIT: for each block, for each step: exchange, then the kernel;
//! - SPLIT-WAIT: for each block, for each step: start the exchange, local
//!   kernel, wait, remote kernel (which re-reads the result: extra traffic);
//! - PIPELINE: for each step: exchange block 0; then for each block k start
//!   the exchange of block k+1, run kernel k, wait.
//!
//! Partners come as signed rank offsets with message sizes per vector, as in
//! Table 7 (M1–M9): an offset d means "receive from r+d, send to r−d" (both
//! for ±d), so every send meets a receive; open boundaries drop the partners
//! beyond the ends. An optional barrier follows every polynomial step.

use super::registry::memory_domains;
use super::registry::{generated, Shape, Visited, WorkloadError, WorkloadKind, WorkloadVisitor};
use super::TAG_HALO;
use crate::network::Network;
use crate::program::driver::{Driver, Packed32};
use crate::program::stream::{Ctx, StreamOp, Workload};
use crate::rule::RuleError;
use crate::time::{from_seconds, Time};
use crate::units::{secs, Ranks, Seconds};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChebMode {
    NonSplit,
    SplitWait,
    Pipeline,
}

/// Chebyshev filter diagonalization (idle-waves paper §3.3): non_split, split_wait or pipeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ChebFd {
    #[schemars(with = "Ranks")]
    pub ranks: u32,
    /// Subspace size n_s, block size n_b (n_s/n_b blocks), polynomial degree n_p.
    #[schemars(range(min = 1))]
    pub subspace: u32,
    #[schemars(range(min = 1))]
    pub block: u32,
    #[schemars(range(min = 1))]
    pub degree: u32,
    pub mode: ChebMode,
    /// A Table 7 configuration (M1–M9) to take the partners from ("" = offsets).
    #[schemars(with = "Table7Name")]
    pub preset: String,
    /// Receive from r+offset, send to r−offset, for each offset…
    pub offsets: Vec<i64>,
    /// …this many bytes per vector.
    pub offset_bytes: Vec<u64>,
    /// Kernel time per vector of a block and polynomial step.
    #[serde(rename = "kernel_per_vector_s", with = "secs")]
    #[schemars(with = "Seconds")]
    pub kernel_per_vector_ps: Time,
    /// Bytes the kernel moves per vector of a block and polynomial step (0:
    /// core-bound, `kernel_per_vector_s`). Above 0 the kernel is memory-bound
    /// and contends for its socket's bandwidth (needs `[network.memory]`):
    /// the paper's code balance, rows × (260/n_b + 80) B for complex TOPI-EHN.
    pub kernel_bytes_per_vector: u64,
    /// Share of the kernel that needs remote elements (split-wait's second part).
    #[schemars(range(min = 0, max = 1))]
    pub remote_fraction: f64,
    /// Extra kernel time split-wait pays for updating the result twice, as a share.
    #[schemars(range(min = 0))]
    pub split_overhead: f64,
    pub barrier: bool,
    /// (offset, bytes per vector), from the preset or the offsets (see [`ChebFd::resolved`]).
    #[serde(skip)]
    pub partners: Vec<(i64, u64)>,
}

impl Default for ChebFd {
    fn default() -> Self {
        ChebFd {
            ranks: 64,
            subspace: 32,
            block: 2,
            degree: 10,
            mode: ChebMode::NonSplit,
            preset: "M3".into(),
            offsets: vec![],
            offset_bytes: vec![],
            kernel_per_vector_ps: from_seconds(1e-3),
            kernel_bytes_per_vector: 0,
            remote_fraction: 0.2,
            split_overhead: 0.1,
            barrier: false,
            partners: vec![],
        }
    }
}

/// Schema of `preset`: "" or M1–M9.
struct Table7Name;
impl JsonSchema for Table7Name {
    fn schema_name() -> Cow<'static, str> {
        "Table7Name".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<String> = std::iter::once(String::new()).chain((1..=9).map(|i| format!("M{i}"))).collect();
        json_schema!({"type": "string", "enum": names})
    }
}

/// Which part of a kernel an op runs.
#[derive(Debug, Clone, Copy)]
enum Part {
    Whole,
    Local,
    Remote,
}

/// Most partner offsets: each takes a send and a receive slot, for two
/// blocks in flight (64 slots).
const MAX_OFFSETS: usize = 16;

const T_ITER: u8 = 0;
const T_KERNEL: u8 = 1;
const T_COMM: u8 = 2;

/// Where a rank is in one (block, step).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(u8)]
enum Phase {
    #[default]
    Start,
    /// Start an exchange (or skip: the pipeline posted it with the block before).
    Begin,
    /// Post this block's exchange.
    PostOwn,
    /// Post the next block's exchange (pipeline).
    PostNext,
    /// Own exchange posted: wait now (non-split, pipeline head) or later (split-wait).
    Posted,
    CommStopAfterWait,
    /// Exchange handled; the pipeline may post the next block's.
    Prepared,
    PostedNext,
    KernelStart,
    Kernel,
    /// Split-wait and pipeline wait inside the kernel.
    KernelWait,
    /// Split-wait's remote part.
    KernelRemote,
    KernelStop,
    StepEnd,
    Barrier,
    Stop,
}

/// Per-rank cursor.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChebState {
    /// Sequence number of the (block, step) pair being worked on.
    seq: Packed32,
    phase: Phase,
    idx: u8,
    /// Which half of the slots the exchange in flight uses (pipeline).
    half: u8,
    barrier: Driver,
}

impl ChebFd {
    /// The workload with a preset's partners filled in, on a platform with
    /// memory domains or not (`memory_bound`: what a kernel given in bytes needs).
    pub fn resolved(&self, memory_bound: bool) -> Result<ChebFd, RuleError> {
        if self.kernel_bytes_per_vector > 0 && !memory_bound {
            return Err(RuleError::new(
                "workload.kernel_bytes_per_vector",
                "a memory-bound kernel needs memory domains \
                        ([network.memory] socket and core bandwidths); or give kernel_per_vector_s",
            ));
        }
        let mut c = self.clone();
        if self.offsets.len() != self.offset_bytes.len() {
            return Err(RuleError::new(
                "workload.offset_bytes",
                format!("needs one size per offset ({}), got {}", self.offsets.len(), self.offset_bytes.len()),
            ));
        }
        if self.preset.is_empty() == self.offsets.is_empty() {
            return Err(RuleError::new("workload.preset", "give either a preset (M1–M9) or offsets with offset_bytes, not both"));
        }
        c.partners = if self.preset.is_empty() {
            self.offsets.iter().copied().zip(self.offset_bytes.iter().copied()).collect()
        } else {
            table7(&self.preset)
                .ok_or_else(|| RuleError::new("workload.preset", format!("unknown configuration '{}' (M1–M9)", self.preset)))?
        };
        c.validate()?;
        Ok(c)
    }

    pub fn validate(&self) -> Result<(), RuleError> {
        if self.block == 0 || self.subspace == 0 || !self.subspace.is_multiple_of(self.block) {
            return Err(RuleError::new(
                "workload.subspace",
                format!("must be a multiple of block ({}), got {}", self.block, self.subspace),
            ));
        }
        if self.partners.len() > MAX_OFFSETS {
            return Err(RuleError::new("workload.offsets", format!("at most {MAX_OFFSETS} offsets are supported")));
        }
        if self.degree == 0 {
            return Err(RuleError::new("workload.degree", "must be at least 1"));
        }
        let sweeps = (self.subspace / self.block) as u64 * self.degree as u64;
        if sweeps > u32::MAX as u64 {
            return Err(RuleError::new(
                "workload.degree",
                format!("(subspace / block) · degree = {sweeps} kernel sweeps; at most 2^32 − 1 are supported"),
            ));
        }
        if (self.kernel_per_vector_ps as u128) * self.block as u128 > crate::time::MAX_INPUT as u128 {
            return Err(RuleError::new(
                "workload.kernel_per_vector_s",
                "a block's kernel takes longer than the engine's limit of about 13 days",
            ));
        }
        if let Some((_, b)) = self.partners.iter().find(|(_, b)| *b as u128 * self.block as u128 >= crate::units::MAX_MESSAGE_BYTES as u128)
        {
            return Err(RuleError::new(
                "workload.offset_bytes",
                format!("{b} bytes per vector make a block's message of 2^47 bytes or more"),
            ));
        }
        if let Some((d, _)) = self.partners.iter().find(|(d, _)| *d == 0 || d.unsigned_abs() >= self.ranks as u64) {
            return Err(RuleError::new("workload.offsets", format!("offset {d} must be non-zero and smaller than ranks")));
        }
        // the remote part moves (remote_fraction + split_overhead) of a block's bytes
        let kernel = self.kernel_bytes_per_vector as f64 * self.block as f64 * (1.0 + self.split_overhead);
        if kernel >= crate::units::MAX_MESSAGE_BYTES as f64 {
            return Err(RuleError::new("workload.kernel_bytes_per_vector", "a block's kernel moves 2^47 bytes or more"));
        }
        if !(0.0..=1.0).contains(&self.remote_fraction) || self.split_overhead < 0.0 {
            return Err(RuleError::new("workload.remote_fraction", "must be in [0, 1] and split_overhead non-negative"));
        }
        Ok(())
    }

    fn blocks(&self) -> u32 {
        self.subspace / self.block
    }

    /// Partner j (receives for even j, sends for odd j) of `rank`, if it exists.
    fn partner(&self, rank: u32, j: usize) -> Option<Option<(u32, u64, bool)>> {
        let (d, bytes) = *self.partners.get(j / 2)?;
        let receive = j.is_multiple_of(2);
        let q = rank as i64 + if receive { d } else { -d };
        Some((0..self.ranks as i64).contains(&q).then_some((q as u32, bytes * self.block as u64, receive)))
    }

    fn kernel(&self) -> Time {
        self.kernel_per_vector_ps * self.block as Time
    }

    /// A kernel's share: all of it, split-wait's local part or its remote
    /// part (which re-reads the result: `split_overhead` more).
    fn kernel_share(&self, part: Part) -> f64 {
        match part {
            Part::Whole => 1.0,
            Part::Local => 1.0 - self.remote_fraction,
            Part::Remote => self.remote_fraction + self.split_overhead,
        }
    }

    /// The op running that share of the kernel: computation, or memory traffic.
    fn kernel_op(&self, part: Part) -> StreamOp {
        let share = self.kernel_share(part);
        if self.kernel_bytes_per_vector > 0 {
            StreamOp::Mem(((self.kernel_bytes_per_vector * self.block as u64) as f64 * share).round() as u64)
        } else {
            StreamOp::Calc((self.kernel() as f64 * share).round() as Time)
        }
    }

    /// The (block, step) pair of sequence number `seq`, in the mode's loop order.
    fn position(&self, seq: u32) -> (u32, u32) {
        match self.mode {
            ChebMode::Pipeline => (seq % self.blocks(), seq / self.blocks()),
            _ => (seq / self.degree, seq % self.degree),
        }
    }
}

impl WorkloadKind for ChebFd {
    fn shape(&self) -> Shape {
        Shape::ranks(self.ranks)
    }

    fn check(&self, _: u32, memory_domains: bool) -> Result<(), RuleError> {
        self.resolved(memory_domains).map(|_| ())
    }

    fn in_flight_bytes_per_rank(&self) -> u128 {
        match self.mode {
            ChebMode::NonSplit => 170,
            ChebMode::SplitWait | ChebMode::Pipeline => 180,
        }
    }

    fn prepare<V: WorkloadVisitor>(&self, net: &Network, v: V) -> Result<Visited<V::Out>, WorkloadError> {
        generated(self.resolved(memory_domains(net))?, v)
    }
}

impl Workload for ChebFd {
    type State = ChebState;

    fn num_ranks(&self) -> u32 {
        self.ranks
    }
    fn iterations(&self) -> u32 {
        self.blocks() * self.degree
    }
    fn timer_names(&self) -> Vec<String> {
        vec!["iteration".into(), "kernel".into(), "comm".into()]
    }

    fn next(&self, rank: u32, s: &mut ChebState, _ctx: &Ctx) -> StreamOp {
        loop {
            let seq = s.seq.get();
            if seq == self.iterations() {
                return StreamOp::Done;
            }
            let (block, _step) = self.position(seq);
            let pipeline = self.mode == ChebMode::Pipeline;
            match s.phase {
                Phase::Start => {
                    s.phase = Phase::Begin;
                    s.idx = 0;
                    return StreamOp::TimerStart { timer: T_ITER, iteration: seq };
                }
                // Start an exchange: the pipeline's first block of a step
                // posts its own; every block posts the next one's.
                Phase::Begin => {
                    if pipeline && block > 0 {
                        s.phase = Phase::Prepared; // block k's exchange was posted with block k−1
                        continue;
                    }
                    s.phase = Phase::PostOwn;
                    return StreamOp::TimerStart { timer: T_COMM, iteration: seq };
                }
                Phase::PostOwn | Phase::PostNext => {
                    if let Some(op) = self.post(rank, s) {
                        return op;
                    }
                }
                // After posting: non-split and the pipeline's head wait now;
                // split-wait computes the local part first.
                Phase::Posted => {
                    if self.mode == ChebMode::SplitWait {
                        s.phase = Phase::Prepared;
                        return StreamOp::TimerStop { timer: T_COMM, iteration: seq };
                    }
                    s.phase = Phase::CommStopAfterWait;
                    return StreamOp::Wait(self.slots(s.half));
                }
                Phase::CommStopAfterWait => {
                    s.phase = Phase::Prepared;
                    return StreamOp::TimerStop { timer: T_COMM, iteration: seq };
                }
                Phase::Prepared => {
                    s.phase = Phase::KernelStart;
                    // The pipeline posts the next block's exchange before computing.
                    if pipeline && block + 1 < self.blocks() {
                        s.phase = Phase::PostNext;
                        s.idx = 0;
                        continue;
                    }
                }
                Phase::PostedNext => s.phase = Phase::KernelStart,
                Phase::KernelStart | Phase::Kernel | Phase::KernelWait | Phase::KernelRemote | Phase::KernelStop => {
                    if let Some(op) = self.kernel_phase(s, seq, block) {
                        return op;
                    }
                }
                Phase::StepEnd => {
                    // A barrier closes each polynomial step (in the pipeline,
                    // after its last block).
                    let last_of_step = if pipeline { block + 1 == self.blocks() } else { true };
                    s.phase = Phase::Barrier;
                    s.barrier = Driver::default();
                    if !(self.barrier && last_of_step) {
                        s.phase = Phase::Stop;
                    }
                }
                Phase::Barrier => match super::barrier_step(&mut s.barrier, self.ranks, rank) {
                    Some(op) => return op,
                    None => s.phase = Phase::Stop,
                },
                Phase::Stop => {
                    s.phase = Phase::Start;
                    s.seq = s.seq.next();
                    return StreamOp::TimerStop { timer: T_ITER, iteration: seq };
                }
            }
        }
    }
}

impl ChebFd {
    /// The request slots of exchange buffer `half` (two halves, so that the
    /// pipeline posts the next block's while this one's is in flight).
    #[inline]
    fn slots(&self, half: u8) -> u64 {
        let n = self.partners.len() * 2;
        (u64::MAX >> (64 - n)) << (half as usize * n)
    }

    /// Posting an exchange, this block's (`PostOwn`) or the next one's:
    /// one receive or send per call, then on (None: no op).
    #[inline]
    fn post(&self, rank: u32, s: &mut ChebState) -> Option<StreamOp> {
        let n = self.partners.len() * 2;
        match self.partner(rank, s.idx as usize) {
            None => {
                s.idx = 0;
                s.phase = if s.phase == Phase::PostOwn { Phase::Posted } else { Phase::PostedNext };
            }
            Some(None) => s.idx += 1,
            Some(Some((peer, bytes, receive))) => {
                let half = if s.phase == Phase::PostOwn { s.half } else { s.half ^ 1 };
                let slot = s.idx + half * n as u8;
                s.idx += 1;
                return Some(if receive {
                    StreamOp::IRecv { peer, tag: TAG_HALO, bytes, slot }
                } else {
                    StreamOp::ISend { peer, tag: TAG_HALO, bytes, slot }
                });
            }
        }
        None
    }

    /// The kernel of block `block` in step `seq`: whole, or (split wait)
    /// its local part, the wait, its remote part; in the pipeline, the wait
    /// for the next block's exchange comes after it (None: no op).
    #[inline]
    fn kernel_phase(&self, s: &mut ChebState, seq: u32, block: u32) -> Option<StreamOp> {
        match s.phase {
            Phase::KernelStart => {
                s.phase = Phase::Kernel;
                return Some(StreamOp::TimerStart { timer: T_KERNEL, iteration: seq });
            }
            Phase::Kernel => {
                s.phase = Phase::KernelWait;
                return Some(self.kernel_op(if self.mode == ChebMode::SplitWait { Part::Local } else { Part::Whole }));
            }
            Phase::KernelWait => {
                s.phase = Phase::KernelRemote;
                match self.mode {
                    ChebMode::SplitWait => return Some(StreamOp::Wait(self.slots(s.half))),
                    ChebMode::Pipeline if block + 1 < self.blocks() => {
                        // the next block's exchange, posted before this kernel
                        s.half ^= 1;
                        return Some(StreamOp::Wait(self.slots(s.half)));
                    }
                    _ => {}
                }
            }
            Phase::KernelRemote => {
                s.phase = Phase::KernelStop;
                if self.mode == ChebMode::SplitWait {
                    return Some(self.kernel_op(Part::Remote));
                }
            }
            Phase::KernelStop => {
                s.phase = Phase::StepEnd;
                return Some(StreamOp::TimerStop { timer: T_KERNEL, iteration: seq });
            }
            _ => unreachable!("not a kernel phase: {:?}", s.phase),
        }
        None
    }
}

/// Table 7 (a): M1–M9 partner offsets and message sizes (bytes per vector,
/// at 64 nodes); ±d stands for both d and −d.
pub fn table7(name: &str) -> Option<Vec<(i64, u64)>> {
    let kb = |x: f64| (x * 1000.0).round() as u64;
    let both = |d: i64, s: f64| vec![(d, kb(s)), (-d, kb(s))];
    let one = |d: i64, s: f64| vec![(d, kb(s))];
    let v: Vec<Vec<(i64, u64)>> = match name {
        "M1" => vec![both(1, 1050.0), one(-20, 105.0), one(-19, 0.128)],
        "M2" => vec![both(1, 1050.0), both(20, 48.0), both(19, 8.0)],
        "M3" => vec![both(1, 1050.0)],
        "M4" => vec![both(1, 1050.0), one(-20, 105.0), both(160, 48.0), both(159, 8.0), one(-19, 0.128)],
        "M5" => vec![both(1, 1050.0), one(-20, 105.0), one(-19, 0.128)],
        "M6" => vec![both(1, 1050.0), one(-20, 48.0), one(-140, 48.0), one(-19, 8.0), one(-141, 8.0)],
        "M7" => vec![both(1, 1050.0), one(-20, 105.0), one(-480, 48.0), one(-160, 48.0), one(-481, 8.0), one(-159, 8.0), one(-19, 0.128)],
        "M8" => vec![both(1, 1050.0), one(-20, 105.0), one(-560, 48.0), one(-80, 48.0), one(-561, 8.0), one(-79, 8.0), one(-19, 0.128)],
        "M9" => vec![both(1, 1050.0), one(-20, 105.0), one(-80, 96.0), one(-79, 8.0), one(-81, 8.0), one(-19, 0.128)],
        _ => return None,
    };
    Some(v.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::network::{LogGOPS, Network};
    use crate::noise::Noise;
    use crate::program::stream::StreamProgram;
    use crate::record::Recorder;

    fn cheb(mode: ChebMode, barrier: bool) -> ChebFd {
        ChebFd {
            ranks: 24,
            subspace: 8,
            block: 2,
            degree: 5,
            mode,
            partners: vec![(1, 2_000), (-1, 2_000), (-3, 400)],
            kernel_per_vector_ps: 50_000_000,
            kernel_bytes_per_vector: 0,
            remote_fraction: 0.2,
            split_overhead: 0.1,
            barrier,
            preset: String::new(),
            offsets: vec![1, -1, -3],
            offset_bytes: vec![2_000, 2_000, 400],
        }
    }

    fn run(c: ChebFd) -> (Time, u64) {
        let p = c.ranks;
        // 50 µs of latency to hide; small messages so the receive overhead stays small
        let net = Network::uniform(LogGOPS { l_ps: 50_000_000, ..LogGOPS::loggopsim_defaults() });
        let mut e = Engine::new(StreamProgram::new(c, Recorder::disabled()), net, Noise::none()).unwrap();
        e.run().unwrap();
        ((0..p).map(|r| e.finish_time(r)).max().unwrap(), e.events)
    }

    #[test]
    fn every_mode_exchanges_each_block_at_every_step() {
        for mode in [ChebMode::NonSplit, ChebMode::SplitWait, ChebMode::Pipeline] {
            for barrier in [false, true] {
                let c = cheb(mode, barrier);
                let msgs: u64 = (0..c.ranks).map(|r| (0..6).filter_map(|j| c.partner(r, j).flatten()).filter(|x| x.2).count() as u64).sum();
                let sweeps = (c.blocks() * c.degree) as u64;
                let kernels = if mode == ChebMode::SplitWait { 2 } else { 1 };
                let barriers = if barrier { c.degree as u64 * if mode == ChebMode::Pipeline { 1 } else { c.blocks() as u64 } } else { 0 };
                let (_, events) = run(c);
                assert_eq!(events, sweeps * (2 * msgs + 24 * kernels) + barriers * 2 * 24 * 5, "{mode:?} barrier={barrier}");
            }
        }
    }

    #[test]
    fn the_pipeline_overlaps_and_split_wait_pays_for_its_extra_traffic() {
        let non_split = run(cheb(ChebMode::NonSplit, false)).0;
        let pipeline = run(cheb(ChebMode::Pipeline, false)).0;
        let split = run(cheb(ChebMode::SplitWait, false)).0;
        assert!(pipeline < non_split, "{pipeline} {non_split}");
        assert!(split > pipeline, "{split} {pipeline}");
    }

    #[test]
    fn table_7_presets_pair_every_send_with_a_receive() {
        for m in ["M1", "M2", "M3", "M4", "M5", "M6", "M7", "M8", "M9"] {
            let partners = table7(m).unwrap();
            let c = ChebFd { ranks: 1280, partners, ..cheb(ChebMode::NonSplit, false) };
            c.validate().unwrap_or_else(|e| panic!("{m}: {e}"));
            let mut e = Engine::new(
                StreamProgram::new(ChebFd { degree: 1, subspace: 2, ..c }, Recorder::disabled()),
                Network::uniform(LogGOPS::loggopsim_defaults()),
                Noise::none(),
            )
            .unwrap();
            e.run().unwrap_or_else(|err| panic!("{m}: {err}"));
        }
        assert_eq!(table7("M3").unwrap(), vec![(1, 1_050_000), (-1, 1_050_000)]);
        assert!(table7("M10").is_none());
    }
}
