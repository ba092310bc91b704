//! Back-to-back sparse matrix-vector multiplications (idle-waves paper §3.2,
//! Table 3): each iteration exchanges the needed parts of x with the partner
//! ranks, computes the local and the remote part of y = A·x, optionally
//! synchronises with a barrier, and swaps x and y.
//!
//! - SPLIT-WAIT (Listing 2): Irecv, Isend, local SpMVM, Wait, remote SpMVM.
//! - NON-SPLIT (Listing 3): Irecv, Isend, Wait, local SpMVM, remote SpMVM.
//!
//! The matrix is banded: row i has nonzeros in columns i−b … i+b (clipped at
//! the ends, or wrapped around when periodic); rows are split into equal
//! contiguous blocks. Partners, message sizes and the local/remote nonzero
//! counts follow from that in closed form, so nothing is stored per rank.
//! Any other matrix can be given by its communication instead: a partner
//! file (see `partners`) lists each rank's partners, volumes and nonzeros.

use super::partners::{Partner, PartnerTable};
use super::registry::{generated, Shape, Visited, WorkloadError, WorkloadKind, WorkloadVisitor};
use super::TAG_HALO;
use crate::network::Network;
use crate::program::driver::{Driver, Packed32};
use crate::program::stream::{Ctx, StreamOp, Workload};
use crate::rule::RuleError;
use crate::time::Time;
use crate::units::{optional_path, secs_f64, OptionalPath, Ranks, Seconds};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SpmvMode {
    SplitWait,
    NonSplit,
}

/// Back-to-back sparse matrix-vector products on a banded matrix, split_wait or non_split (idle-waves paper §3.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Spmv {
    #[schemars(with = "Ranks")]
    pub ranks: u32,
    pub iterations: u32,
    #[schemars(range(min = 1))]
    pub rows: u64,
    /// Half-bandwidth b: row i couples to columns i−b … i+b.
    pub bandwidth: u64,
    pub periodic: bool,
    pub mode: SpmvMode,
    pub barrier: bool,
    /// Computation time per nonzero (the kernel is memory bound: about
    /// 12 bytes per nonzero over the core's bandwidth).
    #[serde(rename = "time_per_nonzero_s", with = "secs_f64")]
    #[schemars(with = "Seconds")]
    pub time_per_nonzero_ps: f64,
    /// Bytes per vector element sent (8 for doubles).
    pub bytes_per_element: u64,
    /// Any matrix, by its communication: a partner file replacing rows and bandwidth.
    #[serde(with = "optional_path")]
    #[schemars(with = "OptionalPath")]
    pub partners_file: Option<String>,
    /// Above 0: the kernel is memory-bound (about 12 B per nonzero for CRS)
    /// and contends for the socket's bandwidth (needs [network.memory]).
    pub bytes_per_nonzero: u64,
    /// The partner file, once read.
    #[serde(skip)]
    #[schemars(skip)]
    pub table: Option<Arc<PartnerTable>>,
}

impl Default for Spmv {
    fn default() -> Self {
        Spmv {
            ranks: 64,
            iterations: 100,
            rows: 1 << 20,
            bandwidth: 1000,
            periodic: false,
            mode: SpmvMode::NonSplit,
            barrier: true,
            time_per_nonzero_ps: 1e-9 * crate::time::PS_PER_S,
            bytes_per_element: 8,
            partners_file: None,
            bytes_per_nonzero: 0,
            table: None,
        }
    }
}

/// Most partners a rank may have in the banded matrix.
const MAX_PARTNERS: u64 = 16;
/// Most partners from a file (each needs a send and a receive request slot).
const MAX_FILE_PARTNERS: usize = 32;

const T_ITER: u8 = 0;
const T_EXEC: u8 = 1;
const T_COMM: u8 = 2;
const T_BARRIER: u8 = 3;

/// Where a rank is in an iteration. After posting, NON-SPLIT waits, then
/// computes everything; SPLIT-WAIT computes the local part, waits, then the
/// remote part.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(u8)]
enum Phase {
    #[default]
    Start,
    CommStart,
    PostRecvs,
    PostSends,
    WaitAll,
    CommStop,
    ExecStart,
    ComputeAll,
    ComputeLocal,
    ComputeRemote,
    ExecStop,
    BarrierStart,
    Barrier,
    Stop,
}

/// Per-rank cursor.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpmvState {
    iter: Packed32,
    phase: Phase,
    idx: u8,
    reqs: u8,
    barrier: Driver,
}

impl Spmv {
    /// Reads the partner file, if the matrix comes from one.
    pub fn loaded(&self) -> Result<Spmv, WorkloadError> {
        let mut w = self.clone();
        if let (Some(path), None) = (&self.partners_file, &self.table) {
            w.table = Some(Arc::new(PartnerTable::read(path).map_err(WorkloadError::PartnerFile)?));
        }
        Ok(w)
    }

    /// The banded matrix's partners, volumes and nonzeros as a table (what a
    /// partner file for it would hold).
    pub fn banded_table(&self) -> PartnerTable {
        PartnerTable::from_parts(
            (0..self.ranks)
                .map(|r| {
                    let ps = (0..=u8::MAX)
                        .map_while(|k| self.partner(r, k))
                        .flatten()
                        .map(|(peer, send, recv)| Partner { peer, send, recv })
                        .collect();
                    (ps, self.nonzeros(r as u64))
                })
                .collect(),
        )
    }

    pub fn validate(&self) -> Result<(), RuleError> {
        if !(self.time_per_nonzero_ps.is_finite() && self.time_per_nonzero_ps >= 0.0) {
            return Err(RuleError::new("workload.time_per_nonzero_s", "must be non-negative"));
        }
        if let Some(t) = &self.table {
            if t.ranks() != self.ranks {
                return Err(RuleError::new(
                    "workload.ranks",
                    format!("{} ranks, but the partner file describes {}", self.ranks, t.ranks()),
                ));
            }
            if let Some(r) = (0..t.ranks()).find(|&r| t.partners(r).len() > MAX_FILE_PARTNERS) {
                return Err(RuleError::new(
                    "workload.partners_file",
                    format!("rank {r} has {} partners in the partner file; at most {MAX_FILE_PARTNERS} are supported", t.partners(r).len()),
                ));
            }
            return Ok(());
        }
        if self.partners_file.is_some() {
            return Ok(()); // checked once the file is read
        }
        let (p, n, b) = (self.ranks as u64, self.rows, self.bandwidth);
        if p == 0 || n < p {
            return Err(RuleError::new("workload.rows", format!("must be at least ranks ({p}), got {n}")));
        }
        // the largest block's nonzeros, at most (rows/ranks + 1)·(2·bandwidth + 1), must be a count
        // the engine can charge: the sums below (and their time) then cannot wrap
        let most = n.div_ceil(p) as u128 * (2 * b as u128 + 1);
        if most > crate::time::MAX_INPUT as u128 {
            return Err(RuleError::new(
                "workload.rows",
                format!("{n} rows with bandwidth {b} on {p} ranks give up to {most} nonzeros per rank; at most 2^60 are supported"),
            ));
        }
        if self.periodic && 2 * b + n.div_ceil(p) > n {
            return Err(RuleError::new(
                "workload.bandwidth",
                format!("{b} is too large for {n} periodic rows (2·b + rows per rank must not exceed rows)"),
            ));
        }
        let reach = self.reach();
        if 2 * reach > MAX_PARTNERS {
            return Err(RuleError::new(
                "workload.bandwidth",
                format!("{b} couples each rank to ranks up to {reach} away; at most {} partners are supported (use fewer ranks or a narrower band)", MAX_PARTNERS),
            ));
        }
        Ok(())
    }

    fn lo(&self, r: u64) -> u64 {
        (r as u128 * self.rows as u128 / self.ranks as u128) as u64
    }

    /// How many ranks away a partner can be.
    fn reach(&self) -> u64 {
        let smallest_block = self.rows / self.ranks as u64;
        self.bandwidth.div_ceil(smallest_block.max(1)).min(self.ranks as u64 - 1)
    }

    /// Elements of rank `from`'s block of x that rank `to` needs.
    pub fn volume(&self, from: u64, to: u64) -> u64 {
        if from == to {
            return 0;
        }
        let (n, b) = (self.rows as i128, self.bandwidth as i128);
        let (flo, fhi) = (self.lo(from) as i128, self.lo(from + 1) as i128);
        let (tlo, thi) = (self.lo(to) as i128 - b, self.lo(to + 1) as i128 + b);
        let shifts: &[i128] = if self.periodic { &[-n, 0, n] } else { &[0] };
        shifts
            .iter()
            .map(|s| {
                let (lo, hi) = (tlo.max(flo + s).max(if self.periodic { i128::MIN } else { 0 }), thi.min(fhi + s));
                (hi - lo).max(0)
            })
            .sum::<i128>() as u64
    }

    /// Nonzeros of rank r in its own columns (local) and in others' (remote).
    pub fn nonzeros(&self, r: u64) -> (u64, u64) {
        if let Some(t) = &self.table {
            return t.nonzeros(r as u32);
        }
        let (lo, hi, b, n) = (self.lo(r), self.lo(r + 1), self.bandwidth, self.rows);
        let rows = hi - lo;
        // Columns each edge row reaches past its block, summed over the rows
        // near that edge, capped where the matrix ends (open boundaries).
        let (cap_left, cap_right) = if self.periodic { (u64::MAX, u64::MAX) } else { (lo, n - hi) };
        let remote = overflow(rows, b, cap_left) + overflow(rows, b, cap_right);
        let total = if self.periodic {
            rows * (2 * b + 1)
        } else {
            // Row i has min(i, b) + min(n−1−i, b) + 1 nonzeros.
            sum_min(lo, hi, b) + sum_min(n - hi, n - lo, b) + rows
        };
        (total - remote, remote)
    }

    /// Partner k of `rank` (even k: r−j, odd k: r+j with j = k/2+1), with
    /// the elements each way, or None when past the last partner; Some(None)
    /// for a slot with nobody there.
    fn partner(&self, rank: u32, k: u8) -> Option<Option<(u32, u64, u64)>> {
        if let Some(t) = &self.table {
            return t.partners(rank).get(k as usize).map(|e| Some((e.peer, e.send, e.recv)));
        }
        let j = k as u64 / 2 + 1;
        if j > self.reach() {
            return None;
        }
        let (r, p) = (rank as i64, self.ranks as i64);
        let q = if k.is_multiple_of(2) { r - j as i64 } else { r + j as i64 };
        let q = if self.periodic {
            q.rem_euclid(p)
        } else if (0..p).contains(&q) {
            q
        } else {
            return Some(None);
        };
        // Around a small ring one rank can appear at several offsets: keep
        // it only at its shortest distance, and once.
        let circular = (q - r).rem_euclid(p).min((r - q).rem_euclid(p));
        if q == r || circular != j as i64 || (k % 2 == 1 && (r - j as i64).rem_euclid(p) == q) {
            return Some(None);
        }
        let (send, recv) = (self.volume(rank as u64, q as u64), self.volume(q as u64, rank as u64));
        Some((send > 0 || recv > 0).then_some((q as u32, send, recv)))
    }

    fn compute(&self, nonzeros: u64) -> StreamOp {
        if self.bytes_per_nonzero > 0 {
            StreamOp::Mem(nonzeros.saturating_mul(self.bytes_per_nonzero))
        } else {
            // (cut past the engine's limit, where the run stops, rather than wrap)
            StreamOp::Calc((nonzeros as f64 * self.time_per_nonzero_ps).round().min(crate::time::PAST_LIMIT as f64) as Time)
        }
    }
}

/// Σ over the first min(rows, b) rows t = 0, 1, … of min(cap, b − t): the
/// columns they reach beyond one edge of the block.
fn overflow(rows: u64, b: u64, cap: u64) -> u64 {
    let m = rows.min(b) as u128;
    let (b, cap) = (b as u128, cap as u128);
    // Terms b − t for t < m; those above cap count as cap.
    let capped = m.min(b.saturating_sub(cap));
    let rest_first = capped;
    let series = |from: u128, to: u128| -> u128 {
        // Σ_{t=from}^{to-1} (b − t)
        if to <= from {
            0
        } else {
            (to - from) * b - (to * (to - 1) / 2 - if from == 0 { 0 } else { from * (from - 1) / 2 })
        }
    };
    (capped * cap + series(rest_first, m)) as u64
}

/// Σ_{i=a}^{z−1} min(i, b).
fn sum_min(a: u64, z: u64, b: u64) -> u64 {
    let (a, z, b) = (a as u128, z as u128, b as u128);
    let split = z.min(b).max(a); // i < split counts i, the rest count b
    let below = if split > a { (split * (split - 1) - a * a.saturating_sub(1)) / 2 } else { 0 };
    (below + (z - split) * b) as u64
}

impl WorkloadKind for Spmv {
    fn shape(&self) -> Shape {
        Shape::ranks(self.ranks)
    }

    fn check(&self, _: u32, _: bool) -> Result<(), RuleError> {
        self.validate()
    }

    fn in_flight_bytes_per_rank(&self) -> u128 {
        match self.mode {
            SpmvMode::NonSplit | SpmvMode::SplitWait => 290,
        }
    }

    /// The partner file read, and checked against the ranks.
    fn prepare<V: WorkloadVisitor>(&self, _: &Network, v: V) -> Result<Visited<V::Out>, WorkloadError> {
        let w = self.loaded()?;
        w.validate()?;
        generated(w, v)
    }
}

impl Workload for Spmv {
    type State = SpmvState;

    fn num_ranks(&self) -> u32 {
        self.ranks
    }
    fn iterations(&self) -> u32 {
        self.iterations
    }
    fn timer_names(&self) -> Vec<String> {
        let mut t = vec!["iteration".to_string(), "exec".into(), "comm".into()];
        if self.barrier {
            t.push("barrier".into());
        }
        t
    }

    fn next(&self, rank: u32, s: &mut SpmvState, _ctx: &Ctx) -> StreamOp {
        let (local, remote) = self.nonzeros(rank as u64);
        let split = self.mode == SpmvMode::SplitWait;
        loop {
            let iteration = s.iter.get();
            match s.phase {
                Phase::Start => {
                    if s.iter.get() == self.iterations {
                        return StreamOp::Done;
                    }
                    (s.phase, s.idx, s.reqs) = (Phase::CommStart, 0, 0);
                    return StreamOp::TimerStart { timer: T_ITER, iteration };
                }
                Phase::CommStart => {
                    s.phase = Phase::PostRecvs;
                    return StreamOp::TimerStart { timer: T_COMM, iteration };
                }
                Phase::PostRecvs | Phase::PostSends => {
                    if let Some(op) = self.post(rank, s, split) {
                        return op;
                    }
                }
                // (SPLIT-WAIT: the wait is communication time even inside the kernel.)
                Phase::WaitAll => {
                    s.phase = if split { Phase::ComputeRemote } else { Phase::CommStop };
                    return StreamOp::Wait((1u64 << s.reqs) - 1);
                }
                Phase::CommStop => {
                    s.phase = Phase::ExecStart;
                    return StreamOp::TimerStop { timer: T_COMM, iteration };
                }
                Phase::ExecStart => {
                    s.phase = if split { Phase::ComputeLocal } else { Phase::ComputeAll };
                    return StreamOp::TimerStart { timer: T_EXEC, iteration };
                }
                Phase::ComputeAll => {
                    s.phase = Phase::ExecStop;
                    return self.compute(local + remote);
                }
                Phase::ComputeLocal => {
                    s.phase = Phase::WaitAll;
                    return self.compute(local);
                }
                Phase::ComputeRemote => {
                    s.phase = Phase::ExecStop;
                    return self.compute(remote);
                }
                Phase::ExecStop => {
                    s.phase = if self.barrier { Phase::BarrierStart } else { Phase::Stop };
                    s.barrier = Driver::default();
                    return StreamOp::TimerStop { timer: T_EXEC, iteration };
                }
                Phase::BarrierStart => {
                    s.phase = Phase::Barrier;
                    return StreamOp::TimerStart { timer: T_BARRIER, iteration };
                }
                Phase::Barrier => match super::barrier_step(&mut s.barrier, self.ranks, rank) {
                    Some(op) => return op,
                    None => {
                        s.phase = Phase::Stop;
                        return StreamOp::TimerStop { timer: T_BARRIER, iteration };
                    }
                },
                Phase::Stop => {
                    s.phase = Phase::Start;
                    s.iter = s.iter.next();
                    return StreamOp::TimerStop { timer: T_ITER, iteration };
                }
            }
        }
    }
}

impl Spmv {
    /// Posting the exchange: all receives, then all sends, one per call,
    /// then on to the wait, or (split wait) to the local part (None: no op).
    #[inline]
    fn post(&self, rank: u32, s: &mut SpmvState, split: bool) -> Option<StreamOp> {
        match self.partner(rank, s.idx) {
            None => {
                s.phase = match (s.phase, split) {
                    (Phase::PostRecvs, _) => Phase::PostSends,
                    (_, true) => Phase::CommStop,
                    (_, false) => Phase::WaitAll,
                };
                s.idx = 0;
            }
            Some(None) => s.idx += 1,
            Some(Some((peer, send, recv))) => {
                s.idx += 1;
                let recving = s.phase == Phase::PostRecvs;
                let (slot, elements) = (s.reqs, if recving { recv } else { send });
                s.reqs += 1;
                let bytes = elements.saturating_mul(self.bytes_per_element);
                return Some(if recving {
                    StreamOp::IRecv { peer, tag: TAG_HALO, bytes, slot }
                } else {
                    StreamOp::ISend { peer, tag: TAG_HALO, bytes, slot }
                });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn banded(ranks: u32, rows: u64, b: u64, periodic: bool) -> Spmv {
        Spmv {
            ranks,
            iterations: 3,
            rows,
            bandwidth: b,
            periodic,
            mode: SpmvMode::NonSplit,
            barrier: false,
            time_per_nonzero_ps: 1000.0,
            bytes_per_element: 8,
            partners_file: None,
            table: None,
            bytes_per_nonzero: 0,
        }
    }

    fn run(m: Spmv) -> (Vec<Time>, u64) {
        use crate::engine::Engine;
        use crate::network::{LogGOPS, Network};
        use crate::noise::Noise;
        use crate::program::stream::StreamProgram;
        use crate::record::Recorder;
        let p = m.ranks;
        let mut e =
            Engine::new(StreamProgram::new(m, Recorder::disabled()), Network::uniform(LogGOPS::loggopsim_defaults()), Noise::none())
                .unwrap();
        e.run().unwrap();
        ((0..p).map(|r| e.finish_time(r)).collect(), e.events)
    }

    /// Writing the banded matrix as a partner file and reading it back
    /// reproduces the run exactly.
    #[test]
    fn a_partner_file_replays_the_banded_matrix_exactly() {
        for (p, n, b, periodic, mode) in [(6, 600, 150, false, SpmvMode::SplitWait), (5, 500, 30, true, SpmvMode::NonSplit)] {
            let m = Spmv { mode, barrier: true, ..banded(p, n, b, periodic) };
            let text = m.banded_table().write();
            let table = PartnerTable::parse(&text, "m.txt").unwrap();
            assert_eq!(table, m.banded_table());
            let from_file = Spmv { table: Some(Arc::new(table)), rows: 1, bandwidth: 0, ..m.clone() };
            from_file.validate().unwrap();
            assert_eq!(run(from_file), run(m));
        }
    }

    #[test]
    fn partner_files_with_mistakes_are_reported_by_line() {
        let bad = [
            ("nonzeros 0 1 1\n", "m.txt:1: the first line must be `ranks <count>`"),
            (
                "ranks 2\nnonzeros 0 1 1\nnonzeros 1 1 1\npartner 0 1 5 4\npartner 1 0 5 4\n",
                "m.txt:4: rank 0 sends 5 and receives 4 elements with 1, but line 5 says 1 sends 5 and receives 4",
            ),
            ("ranks 2\nnonzeros 0 1 1\nnonzeros 1 1 1\npartner 0 1 5 4\n", "m.txt:4: rank 0 lists 1 as a partner but 1 does not list 0"),
            ("ranks 2\nnonzeros 0 1 1\npartner 0 2 1 1\n", "m.txt:3: peer 2 of rank 0 must be another rank in 0..2"),
            ("ranks 2\nnonzeros 0 1 1\n", "m.txt: rank 1 has no `nonzeros` line"),
            ("ranks 2\nnonzeros 0 x 1\n", "m.txt:2: expected local nonzeros (a non-negative integer) as word 3"),
            ("ranks 2\nedge 0 1\n", "m.txt:2: unknown record (expected ranks, nonzeros or partner)"),
        ];
        for (text, want) in bad {
            let e = PartnerTable::parse(text, "m.txt").unwrap_err();
            assert!(e.starts_with(want), "{e}");
        }
    }

    /// The same quantities by brute force over the matrix.
    fn brute(m: &Spmv) -> (Vec<(u64, u64)>, Vec<Vec<u64>>) {
        let (p, n, b) = (m.ranks as u64, m.rows as i64, m.bandwidth as i64);
        let owner = |c: u64| (0..p).find(|&r| c >= m.lo(r) && c < m.lo(r + 1)).unwrap();
        let mut nnz = vec![(0, 0); p as usize];
        let mut need = vec![vec![std::collections::BTreeSet::new(); p as usize]; p as usize];
        for i in 0..n {
            let me = owner(i as u64);
            for c in i - b..=i + b {
                let c = if m.periodic {
                    c.rem_euclid(n)
                } else if (0..n).contains(&c) {
                    c
                } else {
                    continue;
                };
                let o = owner(c as u64);
                if o == me {
                    nnz[me as usize].0 += 1;
                } else {
                    nnz[me as usize].1 += 1;
                    need[o as usize][me as usize].insert(c);
                }
            }
        }
        let vol = need.iter().map(|row| row.iter().map(|s| s.len() as u64).collect()).collect();
        (nnz, vol)
    }

    #[test]
    fn closed_forms_match_the_matrix() {
        for (p, n, b, periodic) in
            [(4, 40, 3, false), (5, 53, 7, false), (6, 60, 12, true), (3, 30, 9, true), (8, 64, 1, false), (7, 100, 25, false)]
        {
            let m = banded(p, n, b, periodic);
            m.validate().unwrap();
            let (nnz, vol) = brute(&m);
            for r in 0..p as u64 {
                assert_eq!(m.nonzeros(r), nnz[r as usize], "nnz p={p} n={n} b={b} periodic={periodic} r={r}");
                for q in 0..p as u64 {
                    assert_eq!(m.volume(r, q), vol[r as usize][q as usize], "vol {r}->{q} p={p} n={n} b={b} periodic={periodic}");
                }
            }
        }
    }

    #[test]
    fn the_two_modes_follow_listings_2_and_3() {
        let ops = |mode| {
            let m = Spmv { mode, ..banded(4, 40, 3, false) };
            let mut s = SpmvState::default();
            let mut out = Vec::new();
            loop {
                match m.next(1, &mut s, &Ctx::default()) {
                    StreamOp::TimerStop { timer: 0, .. } => break,
                    StreamOp::TimerStart { .. } | StreamOp::TimerStop { .. } => {}
                    op => out.push(op),
                }
            }
            out
        };
        let recv = |peer, bytes, slot| StreamOp::IRecv { peer, tag: TAG_HALO, bytes, slot };
        let send = |peer, bytes, slot| StreamOp::ISend { peer, tag: TAG_HALO, bytes, slot };
        // rank 1 owns rows 10..20; needs 3 columns from each side, 6 + 3·2 … nonzeros remote
        let (local, remote) = banded(4, 40, 3, false).nonzeros(1);
        assert_eq!((local, remote), (10 * 7 - 12, 12));
        assert_eq!(
            ops(SpmvMode::SplitWait),
            vec![
                recv(0, 24, 0),
                recv(2, 24, 1),
                send(0, 24, 2),
                send(2, 24, 3),
                StreamOp::Calc(local * 1000),
                StreamOp::Wait(0b1111),
                StreamOp::Calc(remote * 1000)
            ]
        );
        assert_eq!(
            ops(SpmvMode::NonSplit),
            vec![
                recv(0, 24, 0),
                recv(2, 24, 1),
                send(0, 24, 2),
                send(2, 24, 3),
                StreamOp::Wait(0b1111),
                StreamOp::Calc((local + remote) * 1000)
            ]
        );
    }

    #[test]
    fn every_partner_appears_once_and_volumes_add_up() {
        for (p, n, b) in [(3u32, 300u64, 90u64), (5, 50, 12), (4, 400, 150)] {
            let m = banded(p, n, b, true);
            m.validate().unwrap();
            for r in 0..p {
                let peers: Vec<u32> = (0..).map_while(|k| m.partner(r, k)).flatten().map(|x| x.0).collect();
                let mut unique = peers.clone();
                unique.sort_unstable();
                unique.dedup();
                assert_eq!(peers.len(), unique.len(), "p={p} r={r}: {peers:?}");
                let received: u64 = (0..).map_while(|k| m.partner(r, k)).flatten().map(|x| x.2).sum();
                let needed: u64 = (0..p as u64).map(|q| m.volume(q, r as u64)).sum();
                assert_eq!(received, needed);
            }
        }
    }

    #[test]
    fn too_wide_bands_are_refused() {
        assert!(banded(64, 640, 200, false).validate().unwrap_err().to_string().contains("partners"));
        assert!(banded(4, 40, 18, true).validate().unwrap_err().to_string().contains("too large"));
    }
}
