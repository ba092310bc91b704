//! Bulk-synchronous loop: compute → halo exchange with the neighbours at
//! distances ±d → optional barrier, repeated.

use super::registry::{generated, Shape, Visited, WorkloadError, WorkloadKind, WorkloadVisitor};
use super::TAG_HALO;
use super::{halo_messages, registry::memory_domains};
use crate::network::Network;
use crate::program::driver::{Driver, Packed32};
use crate::program::stream::{Ctx, StreamOp, Workload};
use crate::rule::RuleError;
use crate::time::{from_seconds, Time};
use crate::units::{secs, Ranks, Seconds};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Bulk-synchronous loop: compute, then halo exchange with ranks at the given distances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Bsp {
    #[schemars(with = "Ranks")]
    pub ranks: u32,
    pub iterations: u32,
    #[serde(rename = "compute_s", with = "secs")]
    #[schemars(with = "Seconds")]
    pub compute_ps: Time,
    /// Exchange with r−d and r+d for each d.
    #[schemars(inner(range(min = 1)), extend("uniqueItems" = true))]
    pub distances: Vec<u32>,
    #[schemars(with = "crate::units::MessageBytes")]
    pub message_bytes: u64,
    /// Wrap around at the ends (ring); otherwise edge ranks have fewer neighbours.
    pub periodic: bool,
    pub barrier: bool,
    /// Above 0: each compute phase is memory-bound, moving this many bytes at
    /// the rate its socket gives it (needs [network.memory]); compute_s is then unused.
    pub compute_bytes: u64,
}

impl Default for Bsp {
    fn default() -> Self {
        Bsp {
            ranks: 64,
            iterations: 100,
            compute_ps: from_seconds(1e-4),
            distances: vec![1],
            message_bytes: 8,
            periodic: true,
            barrier: false,
            compute_bytes: 0,
        }
    }
}

/// MPI-augmented STREAM Triad (idle-waves paper §3.1): a sweep over the local arrays, then exchange with r±1..k.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct StreamTriad {
    #[schemars(with = "Ranks")]
    pub ranks: u32,
    pub iterations: u32,
    pub elements_per_rank: u64,
    /// Bytes a sweep moves per element: A = B + s·C loads two, stores one
    /// and write-allocates one (24 for doubles).
    pub bytes_per_element: u64,
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub core_bandwidth_bytes_per_s: f64,
    /// Exchange with every rank within this distance.
    #[schemars(range(min = 1, max = 12))]
    pub max_distance: u32,
    #[schemars(with = "crate::units::MessageBytes")]
    pub message_bytes: u64,
    pub periodic: bool,
    pub barrier: bool,
}

impl Default for StreamTriad {
    fn default() -> Self {
        StreamTriad {
            ranks: 40,
            iterations: 200,
            elements_per_rank: 2_500_000,
            bytes_per_element: 24,
            core_bandwidth_bytes_per_s: 10e9,
            max_distance: 1,
            message_bytes: 8192,
            periodic: false,
            barrier: false,
        }
    }
}

impl StreamTriad {
    pub fn validate(&self) -> Result<(), RuleError> {
        let bw = self.core_bandwidth_bytes_per_s;
        if !(bw.is_finite() && bw > 0.0) {
            return Err(RuleError::new("workload.core_bandwidth_bytes_per_s", format!("must be a positive number, got {bw}")));
        }
        let sweep_s = self.elements_per_rank.saturating_mul(self.bytes_per_element) as f64 / bw;
        let limit_s = crate::time::to_seconds(crate::time::MAX_INPUT);
        if sweep_s > limit_s {
            return Err(RuleError::new(
                "workload.core_bandwidth_bytes_per_s",
                format!("a sweep takes {sweep_s:.3e} s at {bw} B/s, past the engine's limit of about {limit_s:.3e} s"),
            ));
        }
        self.bsp(false).validate()
    }

    /// The BSP loop it is: a sweep at the core's bandwidth, or, with memory
    /// domains on the platform (`memory_bound`), a memory-bound sweep that
    /// contends for its socket's bandwidth.
    pub fn bsp(&self, memory_bound: bool) -> Bsp {
        let sweep_bytes = self.elements_per_rank.saturating_mul(self.bytes_per_element);
        Bsp {
            ranks: self.ranks,
            iterations: self.iterations,
            compute_ps: from_seconds(sweep_bytes as f64 / self.core_bandwidth_bytes_per_s),
            distances: (1..=self.max_distance).collect(),
            message_bytes: self.message_bytes,
            periodic: self.periodic,
            barrier: self.barrier,
            compute_bytes: if memory_bound { sweep_bytes } else { 0 },
        }
    }
}

const T_ITER: u8 = 0;
const T_COMPUTE: u8 = 1;
const T_COMM: u8 = 2;
const T_BARRIER: u8 = 3;

/// Per-rank cursor (14 bytes).
#[derive(Debug, Clone, Copy, Default)]
pub struct BspState {
    iter: Packed32,
    phase: Phase,
    /// Neighbour index within the receive or send phase.
    idx: u8,
    /// Slots used by this iteration's halo requests.
    reqs: u8,
    barrier: Driver,
}

/// Where a rank is in an iteration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(u8)]
enum Phase {
    #[default]
    Start,
    ComputeStart,
    Compute,
    ComputeStop,
    CommStart,
    /// Post all receives, then all sends, then wait for everything.
    PostRecvs,
    PostSends,
    Wait,
    CommStop,
    BarrierStart,
    Barrier,
    Stop,
}

/// Most neighbours a rank may have: each needs a send and a receive slot
/// (48 of a rank's 63), enough for the idle-waves paper's ±(1, …, 12).
pub const MAX_NEIGHBOURS: usize = 24;

impl Bsp {
    pub fn validate(&self) -> Result<(), RuleError> {
        if self.ranks == 0 {
            return Err(RuleError::new("workload.ranks", "must be at least 1"));
        }
        super::check_distances(&self.distances, self.ranks, MAX_NEIGHBOURS / 2)?;
        Ok(())
    }

    /// Neighbour `idx` of `rank` (even: r−d, odd: r+d), or None past the
    /// list; `Some(None)` for a neighbour beyond an open boundary.
    fn neighbour(&self, rank: u32, idx: u8) -> Option<Option<u32>> {
        let d = *self.distances.get(idx as usize / 2)? as i64;
        let (r, p) = (rank as i64, self.ranks as i64);
        let q = if idx.is_multiple_of(2) { r - d } else { r + d };
        // d < p (validated), so one wrap suffices: no division on this hot path
        let wrapped = if q < 0 {
            q + p
        } else if q >= p {
            q - p
        } else {
            q
        };
        Some(if self.periodic { Some(wrapped as u32) } else { (0..p).contains(&q).then_some(q as u32) })
    }
}

impl WorkloadKind for Bsp {
    fn shape(&self) -> Shape {
        Shape::ranks(self.ranks)
    }

    fn check(&self, _: u32, _: bool) -> Result<(), RuleError> {
        self.validate()
    }

    /// A rank's small messages are all in flight at once (64 bytes each: an
    /// event and a posted receive); large ones take turns on the NIC.
    fn in_flight_bytes_per_rank(&self) -> u128 {
        8 + if self.message_bytes <= 256 { 64 } else { 40 } * halo_messages(self.distances.len())
    }

    fn prepare<V: WorkloadVisitor>(&self, _: &Network, v: V) -> Result<Visited<V::Out>, WorkloadError> {
        generated(self.clone(), v)
    }
}

impl WorkloadKind for StreamTriad {
    fn shape(&self) -> Shape {
        Shape::ranks(self.ranks)
    }

    fn check(&self, _: u32, _: bool) -> Result<(), RuleError> {
        self.validate()
    }

    /// Long sweeps: their completions wait beyond the queue's ring, in a heap that grows by doubling.
    fn in_flight_bytes_per_rank(&self) -> u128 {
        140 + 16 * halo_messages(self.max_distance as usize)
    }

    fn prepare<V: WorkloadVisitor>(&self, net: &Network, v: V) -> Result<Visited<V::Out>, WorkloadError> {
        generated(self.bsp(memory_domains(net)), v)
    }
}

impl Workload for Bsp {
    type State = BspState;

    fn num_ranks(&self) -> u32 {
        self.ranks
    }
    fn iterations(&self) -> u32 {
        self.iterations
    }
    fn timer_names(&self) -> Vec<String> {
        let mut t = vec!["iteration".to_string(), "compute".into(), "comm".into()];
        if self.barrier {
            t.push("barrier".into());
        }
        t
    }

    #[inline]
    fn next(&self, rank: u32, s: &mut BspState, ctx: &Ctx) -> StreamOp {
        loop {
            let iteration = s.iter.get();
            match s.phase {
                Phase::Start => {
                    if iteration == self.iterations {
                        return StreamOp::Done;
                    }
                    s.phase = Phase::ComputeStart;
                    if ctx.records_timers {
                        return StreamOp::TimerStart { timer: T_ITER, iteration };
                    }
                }
                Phase::ComputeStart => {
                    s.phase = Phase::Compute;
                    if ctx.records_timers {
                        return StreamOp::TimerStart { timer: T_COMPUTE, iteration };
                    }
                }
                Phase::Compute => {
                    s.phase = Phase::ComputeStop;
                    return if self.compute_bytes > 0 { StreamOp::Mem(self.compute_bytes) } else { StreamOp::Calc(self.compute_ps) };
                }
                Phase::ComputeStop => {
                    s.phase = Phase::CommStart;
                    s.idx = 0;
                    s.reqs = 0;
                    if ctx.records_timers {
                        return StreamOp::TimerStop { timer: T_COMPUTE, iteration };
                    }
                }
                Phase::CommStart => {
                    s.phase = Phase::PostRecvs;
                    if ctx.records_timers {
                        return StreamOp::TimerStart { timer: T_COMM, iteration };
                    }
                }
                Phase::PostRecvs | Phase::PostSends => {
                    if let Some(op) = self.post(rank, s) {
                        return op;
                    }
                }
                Phase::Wait => {
                    s.phase = Phase::CommStop;
                    let mask = if s.reqs >= 64 { u64::MAX } else { (1u64 << s.reqs) - 1 };
                    return StreamOp::Wait(mask);
                }
                Phase::CommStop => {
                    s.phase = if self.barrier { Phase::BarrierStart } else { Phase::Stop };
                    if ctx.records_timers {
                        return StreamOp::TimerStop { timer: T_COMM, iteration };
                    }
                }
                Phase::BarrierStart => {
                    s.phase = Phase::Barrier;
                    s.barrier = Driver::default();
                    if ctx.records_timers {
                        return StreamOp::TimerStart { timer: T_BARRIER, iteration };
                    }
                }
                Phase::Barrier => match super::barrier_step(&mut s.barrier, self.ranks, rank) {
                    Some(op) => return op,
                    None => {
                        s.phase = Phase::Stop;
                        if ctx.records_timers {
                            return StreamOp::TimerStop { timer: T_BARRIER, iteration };
                        }
                    }
                },
                Phase::Stop => {
                    s.phase = Phase::Start;
                    s.iter = s.iter.next();
                    if ctx.records_timers {
                        return StreamOp::TimerStop { timer: T_ITER, iteration };
                    }
                }
            }
        }
    }
}

impl Bsp {
    /// Posting the halo exchange: a receive from each neighbour, then a
    /// send to each, one per call, then on to the wait (None: no op).
    #[inline]
    fn post(&self, rank: u32, s: &mut BspState) -> Option<StreamOp> {
        match self.neighbour(rank, s.idx) {
            None => {
                s.phase = if s.phase == Phase::PostRecvs { Phase::PostSends } else { Phase::Wait };
                s.idx = 0;
            }
            Some(None) => s.idx += 1,
            Some(Some(peer)) => {
                s.idx += 1;
                let slot = s.reqs;
                s.reqs += 1;
                let bytes = self.message_bytes;
                return Some(if s.phase == Phase::PostRecvs {
                    StreamOp::IRecv { peer, tag: TAG_HALO, bytes, slot }
                } else {
                    StreamOp::ISend { peer, tag: TAG_HALO, bytes, slot }
                });
            }
        }
        None
    }
}
