//! 2-D grid dense kernels of the 2-D grid broadcast paper: block LU without
//! pivoting (HPL-MxP, Algorithm 1) and blocked Floyd–Warshall (Algorithm 2)
//! on a Pr×Pc process grid with a block-cyclic distribution (block (i, j)
//! lives on process (i mod Pr, j mod Pc); rank = row·Pc + column).
//!
//! Step k: the owner of A(k,k) factors it and broadcasts it along its
//! process row and column; that row and column update their panel blocks;
//! the row panel (U) is broadcast down every process column and the column
//! panel (L) along every process row; every process then updates its
//! trailing blocks. Compute times come from flop counts and per-kernel rates
//! (flops / rate), so measured GEMM rates can be plugged in.
//!
//! Broadcasts are relayed here chunk by chunk (see `collectives::relay`)
//! because two of the paper's variants need it: the combined row+column
//! broadcast (Algorithm 3) serves whichever chunk arrives first (MPI_Waitany),
//! and look-ahead overlaps the next panel's broadcast with the trailing
//! update, polling it with MPI_Test between pieces of the update as HPL does.

use super::registry::{generated, Shape, Visited, WorkloadError, WorkloadKind, WorkloadVisitor};
use crate::collectives::relay::{child, chunk_size, chunks, parent};
use crate::collectives::{Algorithm, CollectiveKind};
use crate::network::Network;
use crate::program::driver::Driver;
use crate::program::stream::{Ctx, StreamOp, Workload};
use crate::rule::RuleError;
use crate::time::{Time, PS_PER_S};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kernel {
    /// Block LU without pivoting: the trailing matrix shrinks every step.
    Lu,
    /// Blocked Floyd–Warshall (min-plus): every block is updated every step.
    FloydWarshall,
}

/// Block LU (HPL-MxP) or blocked Floyd-Warshall on a Pr x Pc grid with row/column panel broadcasts (2-D grid paper).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Dense2d {
    pub kernel: Kernel,
    /// Process grid [rows, columns]; rank = row · columns + column.
    #[schemars(inner(range(min = 1)))]
    pub grid: [u32; 2],
    /// Block rows (= block columns) of the matrix, n_b = n / b.
    #[schemars(range(min = 1))]
    pub blocks: u32,
    /// Block size b (elements per side).
    #[schemars(range(min = 1))]
    pub block: u32,
    /// Topology of the row and column broadcasts (any broadcast algorithm).
    pub broadcast: Algorithm,
    /// Algorithm 3: run the row and column panel broadcasts together,
    /// relaying whichever chunk arrives first.
    pub combined: bool,
    /// Chunk size of the broadcasts (0: one message).
    pub chunk_bytes: u64,
    /// Overlap the next panel's broadcast with the trailing update.
    pub lookahead: bool,
    /// Look-ahead: pieces the trailing update is cut into, with a poll of
    /// the broadcast after each.
    #[schemars(range(min = 1, max = 65535))]
    pub progress_chunks: u32,
    /// Synchronize all processes at the start of each step (Algorithm 1, line 6).
    pub barrier: bool,
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub gemm_flops_per_s: f64,
    /// Rate of the diagonal factorization and the panel updates (GETRF/TRSM,
    /// or the Floyd–Warshall and min-plus panel kernels).
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub panel_flops_per_s: f64,
    /// Bytes per element of the diagonal block.
    #[schemars(range(min = 1, max = 64))]
    pub element_bytes: u64,
    /// Bytes per element of the broadcast panels (HPL-MxP casts L and U to FP16).
    #[schemars(range(min = 1, max = 64))]
    pub panel_element_bytes: u64,
}

impl Default for Dense2d {
    fn default() -> Self {
        Dense2d {
            kernel: Kernel::Lu,
            grid: [4, 4],
            blocks: 32,
            block: 512,
            broadcast: Algorithm::Ring,
            combined: false,
            chunk_bytes: 0,
            lookahead: false,
            progress_chunks: 8,
            barrier: false,
            gemm_flops_per_s: 1e12,
            panel_flops_per_s: 1e11,
            element_bytes: 4,
            panel_element_bytes: 4,
        }
    }
}

// Request slots: each of the two broadcasts a rank takes part in has one
// receive and one (blocking) send in flight at most.
const ROW_RECV: u8 = 0;
const ROW_SEND: u8 = 1;
const COL_RECV: u8 = 2;
const COL_SEND: u8 = 3;
const TAG_BASE: u32 = 16;

const T_ITER: u8 = 0;

// relay flags
const POSTED: u8 = 1;
const RECEIVED: u8 = 2;
const SENDING: u8 = 4;
const TESTING: u8 = 8;
const STALLED: u8 = 16;

/// Where a rank is in one broadcast: the chunk it is on and the next child
/// to serve it to.
#[derive(Debug, Clone, Copy, Default)]
struct Relay {
    chunk: u32,
    child: u8,
    flags: u8,
}

/// One broadcast along a process row or column, as one rank sees it.
#[derive(Debug, Clone, Copy)]
struct Bcast {
    along_row: bool,
    /// Group size and this rank's position relative to the root.
    p: u32,
    v: u32,
    root: u32,
    bytes: u64,
    chunks: u32,
    tag: u32,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct DenseState {
    k: u32,
    phase: Phase,
    /// The panel being factored is step k+1's (look-ahead), not step k's.
    ahead: bool,
    piece: u16,
    driver: Driver,
    row: Relay,
    col: Relay,
}

/// Where a rank is in a step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(u8)]
enum Phase {
    #[default]
    Start,
    Barrier,
    /// Factor the diagonal block (its owner), then send it along the row and column.
    Diag,
    DiagRow,
    DiagCol,
    /// Update the panels with the diagonal block.
    Panel,
    /// Broadcast the panels (blocking).
    Bcast,
    /// Update the trailing matrix.
    Update,
    /// Look-ahead: post the next panels' broadcasts, then update in pieces, polling between them.
    AheadStart,
    AheadPiece,
    AheadPoll,
    AheadFinish,
    Stop,
}

impl Dense2d {
    pub fn validate(&self) -> Result<(), RuleError> {
        let p = self.grid[0] as u64 * self.grid[1] as u64;
        if p == 0 || p > u32::MAX as u64 {
            return Err(RuleError::new("workload.grid", format!("{}×{} is not a valid process grid", self.grid[0], self.grid[1])));
        }
        if self.blocks == 0 || self.block == 0 {
            return Err(RuleError::new("workload.blocks", "blocks and block must be positive"));
        }
        if !CollectiveKind::Bcast.algorithms().contains(&self.broadcast) {
            use crate::units::{name, names};
            return Err(RuleError::new(
                "workload.broadcast",
                format!(
                    "'{}' is not a broadcast algorithm (choose from {})",
                    name(&self.broadcast),
                    names(CollectiveKind::Bcast.algorithms())
                ),
            ));
        }
        if self.broadcast == Algorithm::PipelinedRing && self.chunk_bytes == 0 {
            return Err(RuleError::new("workload.chunk_bytes", "pipelined_ring needs chunk_bytes > 0 (or use ring for one piece)"));
        }
        if !(self.gemm_flops_per_s > 0.0 && self.panel_flops_per_s > 0.0) {
            return Err(RuleError::new("workload.gemm_flops_per_s", "the flop rates must be positive"));
        }
        if self.lookahead && !(1..=u16::MAX as u32).contains(&self.progress_chunks) {
            return Err(RuleError::new("workload.progress_chunks", format!("must be between 1 and {}", u16::MAX)));
        }
        if self.lookahead && self.barrier {
            return Err(RuleError::new("workload.barrier", "a barrier every step would undo the look-ahead; use one or the other"));
        }
        let panel = self.blocks.div_ceil(self.grid[0].min(self.grid[1])) as u128 * self.block as u128 * self.block as u128;
        if panel * self.panel_element_bytes.max(self.element_bytes) as u128 >= crate::units::MAX_MESSAGE_BYTES as u128 {
            return Err(RuleError::new("workload.block", "a panel of more than 2^47 bytes"));
        }
        Ok(())
    }

    fn coords(&self, rank: u32) -> (u32, u32) {
        (rank / self.grid[1], rank % self.grid[1])
    }

    /// Blocks i in [from, n_b) with i mod P = q.
    fn count(&self, from: u32, period: u32, q: u32) -> u32 {
        let n = self.blocks;
        if from >= n {
            return 0;
        }
        let first = from + (q + period - from % period) % period;
        if first >= n {
            0
        } else {
            (n - 1 - first) / period + 1
        }
    }

    /// The block rows and columns rank (pr, pc) updates in step k: below and
    /// right of the diagonal for LU, every one but k's for Floyd–Warshall.
    fn trailing(&self, k: u32, pr: u32, pc: u32) -> (u32, u32) {
        match self.kernel {
            Kernel::Lu => (self.count(k + 1, self.grid[0], pr), self.count(k + 1, self.grid[1], pc)),
            Kernel::FloydWarshall => (
                self.count(0, self.grid[0], pr) - u32::from(k % self.grid[0] == pr),
                self.count(0, self.grid[1], pc) - u32::from(k % self.grid[1] == pc),
            ),
        }
    }

    fn block_ps(&self, blocks: u64, flops_per_block: f64, rate: f64) -> Time {
        (blocks as f64 * flops_per_block / rate * PS_PER_S).round() as Time
    }

    fn b3(&self) -> f64 {
        (self.block as f64).powi(3)
    }

    fn diag_ps(&self) -> Time {
        let flops = match self.kernel {
            Kernel::Lu => 2.0 / 3.0 * self.b3(),
            Kernel::FloydWarshall => 2.0 * self.b3(),
        };
        self.block_ps(1, flops, self.panel_flops_per_s)
    }

    /// Panel update of `blocks` blocks (TRSM for LU, min-plus for FW).
    fn panel_ps(&self, blocks: u64) -> Time {
        let per = match self.kernel {
            Kernel::Lu => self.b3(),
            Kernel::FloydWarshall => 2.0 * self.b3(),
        };
        self.block_ps(blocks, per, self.panel_flops_per_s)
    }

    fn update_ps(&self, blocks: u64) -> Time {
        self.block_ps(blocks, 2.0 * self.b3(), self.gemm_flops_per_s)
    }

    /// Blocks of step k's trailing update that belong to step k+1's panel.
    fn next_panel_blocks(&self, k: u32, pr: u32, pc: u32) -> u64 {
        let (rows, cols) = self.trailing(k, pr, pc);
        let in_row = (k + 1) % self.grid[0] == pr && rows > 0;
        let in_col = (k + 1) % self.grid[1] == pc && cols > 0;
        (if in_row { cols } else { 0 } + if in_col { rows } else { 0 }) as u64 - u64::from(in_row && in_col)
    }

    fn bytes_of(&self, blocks: u32, element_bytes: u64) -> u64 {
        blocks as u64 * self.block as u64 * self.block as u64 * element_bytes
    }

    /// A broadcast of step kp: `diag` (A(k,k)) or the panels (U down the
    /// columns, L along the rows). Ranks outside it get zero chunks.
    fn bcast(&self, rank: u32, kp: u32, along_row: bool, diag: bool) -> Bcast {
        let (pr, pc) = self.coords(rank);
        let (owner_r, owner_c) = (kp % self.grid[0], kp % self.grid[1]);
        let (p, local, root) = if along_row { (self.grid[1], pc, owner_c) } else { (self.grid[0], pr, owner_r) };
        let bytes = if diag {
            let member = if along_row { pr == owner_r } else { pc == owner_c };
            if member {
                self.bytes_of(1, self.element_bytes)
            } else {
                0
            }
        } else {
            // L (along the row) has this process row's panel blocks, U this column's.
            let (rows, cols) = self.trailing(kp, pr, pc);
            self.bytes_of(if along_row { rows } else { cols }, self.panel_element_bytes)
        };
        let active = bytes > 0 && p > 1;
        let kind = 2 * u32::from(!diag) + u32::from(!along_row);
        Bcast {
            along_row,
            p,
            v: (local + p - root) % p,
            root,
            bytes,
            chunks: if active { chunks(bytes, self.chunk_bytes) as u32 } else { 0 },
            tag: TAG_BASE + 8 * (kp % 2) + kind,
        }
    }

    fn world(&self, rank: u32, b: &Bcast, v: u32) -> u32 {
        let local = (v + b.root) % b.p;
        let (pr, pc) = self.coords(rank);
        if b.along_row {
            pr * self.grid[1] + local
        } else {
            local * self.grid[1] + pc
        }
    }

    /// The next op that advances a relay without blocking on a receive, or
    /// None when it is done or needs its next chunk. Its messages are a
    /// broadcast's (waits for them are collective imbalance).
    fn relay_op(&self, rank: u32, b: &Bcast, r: &mut Relay) -> Option<StreamOp> {
        let (recv, send) = if b.along_row { (ROW_RECV, ROW_SEND) } else { (COL_RECV, COL_SEND) };
        loop {
            if r.chunk >= b.chunks {
                return None;
            }
            if r.flags & SENDING != 0 {
                r.flags &= !SENDING;
                r.child += 1;
                return Some(StreamOp::Wait(1 << send));
            }
            let bytes = chunk_size(b.bytes, self.chunk_bytes, r.chunk as u64);
            if b.v == 0 || r.flags & RECEIVED != 0 {
                if let Some(c) = child(self.broadcast, b.v, b.p, r.child as u32) {
                    r.flags |= SENDING;
                    return Some(StreamOp::CollSend { peer: self.world(rank, b, c), tag: b.tag, bytes, slot: send });
                }
                *r = Relay { chunk: r.chunk + 1, child: 0, flags: 0 };
                continue;
            }
            if r.flags & POSTED == 0 {
                r.flags |= POSTED;
                let from = parent(self.broadcast, b.v, b.p).expect("a non-root has a parent");
                return Some(StreamOp::CollRecv { peer: self.world(rank, b, from), tag: b.tag, bytes, slot: recv });
            }
            return None;
        }
    }

    /// Runs a broadcast to completion with blocking waits.
    fn relay_blocking(&self, rank: u32, b: &Bcast, r: &mut Relay) -> Option<StreamOp> {
        if let Some(op) = self.relay_op(rank, b, r) {
            return Some(op);
        }
        (r.chunk < b.chunks).then(|| {
            r.flags |= RECEIVED; // the wait returns once it has arrived
            StreamOp::Wait(1 << if b.along_row { ROW_RECV } else { COL_RECV })
        })
    }

    /// Both panel broadcasts of step kp to completion: one after the other
    /// (U down the column, then L along the row), or combined (Algorithm 3).
    fn panels_blocking(&self, rank: u32, kp: u32, s: &mut DenseState, ctx: &Ctx) -> Option<StreamOp> {
        let (lrow, ucol) = (self.bcast(rank, kp, true, false), self.bcast(rank, kp, false, false));
        if !self.combined {
            return self.relay_blocking(rank, &ucol, &mut s.col).or_else(|| self.relay_blocking(rank, &lrow, &mut s.row));
        }
        let mut waiting = 0u64;
        for (b, r, slot) in [(&lrow, &mut s.row, ROW_RECV), (&ucol, &mut s.col, COL_RECV)] {
            if r.flags & POSTED != 0 && ctx.pending & (1 << slot) == 0 {
                r.flags |= RECEIVED;
            }
            if let Some(op) = self.relay_op(rank, b, r) {
                return Some(op);
            }
            if r.chunk < b.chunks {
                waiting |= 1 << slot;
            }
        }
        (waiting != 0).then_some(StreamOp::WaitAny(waiting))
    }

    /// Look-ahead: advance both panel broadcasts as far as they go without
    /// blocking, testing each pending receive once. None: nothing more now.
    fn panels_poll(&self, rank: u32, kp: u32, s: &mut DenseState, ctx: &Ctx) -> Option<StreamOp> {
        let (lrow, ucol) = (self.bcast(rank, kp, true, false), self.bcast(rank, kp, false, false));
        for (b, r, slot) in [(&ucol, &mut s.col, COL_RECV), (&lrow, &mut s.row, ROW_RECV)] {
            if r.flags & TESTING != 0 {
                r.flags &= !TESTING;
                r.flags |= if ctx.last_test { RECEIVED } else { STALLED };
            }
            if r.flags & STALLED != 0 {
                continue;
            }
            if let Some(op) = self.relay_op(rank, b, r) {
                return Some(op);
            }
            if r.chunk < b.chunks {
                r.flags |= TESTING;
                return Some(StreamOp::Test(1 << slot));
            }
        }
        s.row.flags &= !STALLED;
        s.col.flags &= !STALLED;
        None
    }

    /// The trailing update that look-ahead leaves after the next panel, in pieces.
    fn piece_ps(&self, k: u32, pr: u32, pc: u32, i: u32) -> Time {
        let (rows, cols) = self.trailing(k, pr, pc);
        let total = self.update_ps(rows as u64 * cols as u64 - self.next_panel_blocks(k, pr, pc));
        let n = self.progress_chunks as Time;
        if i + 1 == self.progress_chunks {
            total - total / n * (n - 1)
        } else {
            total / n
        }
    }
}

impl WorkloadKind for Dense2d {
    /// rank = row · columns + column: columns vary fastest.
    fn shape(&self) -> Shape {
        Shape { ranks: Some(self.grid[0] * self.grid[1]), grid: Some(vec![self.grid[1], self.grid[0]]), node_grid_reversed: true }
    }

    fn check(&self, _: u32, _: bool) -> Result<(), RuleError> {
        self.validate()
    }

    fn in_flight_bytes_per_rank(&self) -> u128 {
        8
    }

    fn prepare<V: WorkloadVisitor>(&self, _: &Network, v: V) -> Result<Visited<V::Out>, WorkloadError> {
        generated(self.clone(), v)
    }
}

impl Workload for Dense2d {
    type State = DenseState;

    fn num_ranks(&self) -> u32 {
        self.grid[0] * self.grid[1]
    }
    fn iterations(&self) -> u32 {
        self.blocks
    }
    fn timer_names(&self) -> Vec<String> {
        vec!["iteration".into()]
    }

    fn next(&self, rank: u32, s: &mut DenseState, ctx: &Ctx) -> StreamOp {
        let (pr, pc) = self.coords(rank);
        loop {
            let k = s.k;
            let kp = k + u32::from(s.ahead);
            match s.phase {
                Phase::Start => {
                    if k == self.blocks {
                        return StreamOp::Done;
                    }
                    (s.phase, s.ahead, s.driver) = (Phase::Barrier, false, Driver::default());
                    return StreamOp::TimerStart { timer: T_ITER, iteration: k };
                }
                Phase::Barrier => {
                    if self.barrier {
                        if let Some(op) = super::barrier_step(&mut s.driver, self.num_ranks(), rank) {
                            return op;
                        }
                    }
                    // With look-ahead, step k's panel was factored and sent during step k−1.
                    s.phase = if self.lookahead && k > 0 { Phase::Update } else { Phase::Diag };
                }
                Phase::Diag | Phase::DiagRow | Phase::DiagCol => {
                    if let Some(op) = self.factor_panel(rank, s, kp, (pr, pc)) {
                        return op;
                    }
                }
                Phase::Panel => {
                    (s.row, s.col) = (Relay::default(), Relay::default());
                    s.phase = if s.ahead { Phase::AheadStart } else { Phase::Bcast };
                }
                Phase::Bcast => match self.panels_blocking(rank, kp, s, ctx) {
                    Some(op) => return op,
                    None => s.phase = Phase::Update,
                },
                Phase::Update => {
                    if self.lookahead && k + 1 < self.blocks {
                        // The blocks of the next panel first, then factor and send it.
                        (s.phase, s.ahead) = (Phase::Diag, true);
                        let next = self.next_panel_blocks(k, pr, pc);
                        if next > 0 {
                            return StreamOp::Calc(self.update_ps(next));
                        }
                    } else {
                        s.phase = Phase::Stop;
                        let (rows, cols) = self.trailing(k, pr, pc);
                        if rows as u64 * cols as u64 > 0 {
                            return StreamOp::Calc(self.update_ps(rows as u64 * cols as u64));
                        }
                    }
                }
                Phase::AheadStart | Phase::AheadPiece | Phase::AheadPoll | Phase::AheadFinish => {
                    if let Some(op) = self.look_ahead(rank, s, ctx, (pr, pc)) {
                        return op;
                    }
                }
                Phase::Stop => {
                    (s.phase, s.k) = (Phase::Start, k + 1);
                    return StreamOp::TimerStop { timer: T_ITER, iteration: k };
                }
            }
        }
    }
}

impl Dense2d {
    /// Factoring panel `kp`: the diagonal block on its owner, relayed along
    /// its row and column, then the panel's blocks (None: no op).
    #[inline]
    fn factor_panel(&self, rank: u32, s: &mut DenseState, kp: u32, (pr, pc): (u32, u32)) -> Option<StreamOp> {
        match s.phase {
            Phase::Diag => {
                s.phase = Phase::DiagRow;
                s.row = Relay::default();
                if (pr, pc) == (kp % self.grid[0], kp % self.grid[1]) {
                    return Some(StreamOp::Calc(self.diag_ps()));
                }
            }
            Phase::DiagRow => match self.relay_blocking(rank, &self.bcast(rank, kp, true, true), &mut s.row) {
                Some(op) => return Some(op),
                None => (s.phase, s.col) = (Phase::DiagCol, Relay::default()),
            },
            Phase::DiagCol => match self.relay_blocking(rank, &self.bcast(rank, kp, false, true), &mut s.col) {
                Some(op) => return Some(op),
                None => {
                    s.phase = Phase::Panel;
                    let (rows, cols) = self.trailing(kp, pr, pc);
                    let blocks = if pr == kp % self.grid[0] { cols } else { 0 } + if pc == kp % self.grid[1] { rows } else { 0 };
                    if blocks > 0 {
                        return Some(StreamOp::Calc(self.panel_ps(blocks as u64)));
                    }
                }
            },
            _ => unreachable!("not a phase of the panel's factorisation: {:?}", s.phase),
        }
        None
    }

    /// Look-ahead: the trailing update of step k in pieces, polling the
    /// next panel's broadcast between them, then finishing it (None: no op).
    #[inline]
    fn look_ahead(&self, rank: u32, s: &mut DenseState, ctx: &Ctx, (pr, pc): (u32, u32)) -> Option<StreamOp> {
        let k = s.k;
        let kp = k + u32::from(s.ahead);
        match s.phase {
            Phase::AheadStart => match self.panels_poll(rank, kp, s, ctx) {
                Some(op) => return Some(op),
                None => (s.phase, s.piece) = (Phase::AheadPiece, 0),
            },
            Phase::AheadPiece => {
                if s.piece as u32 == self.progress_chunks {
                    s.phase = Phase::AheadFinish;
                    return None;
                }
                s.phase = Phase::AheadPoll;
                s.piece += 1;
                let t = self.piece_ps(k, pr, pc, s.piece as u32 - 1);
                if t > 0 {
                    return Some(StreamOp::Calc(t));
                }
            }
            Phase::AheadPoll => match self.panels_poll(rank, kp, s, ctx) {
                Some(op) => return Some(op),
                None => s.phase = Phase::AheadPiece,
            },
            Phase::AheadFinish => match self.panels_blocking(rank, kp, s, ctx) {
                Some(op) => return Some(op),
                None => s.phase = Phase::Stop,
            },
            _ => unreachable!("not a look-ahead phase: {:?}", s.phase),
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::network::{LogGOPS, Network};
    use crate::noise::Noise;
    use crate::program::stream::StreamProgram;
    use crate::record::Recorder;
    use std::cell::RefCell;

    fn lu(rows: u32, cols: u32) -> Dense2d {
        Dense2d {
            kernel: Kernel::Lu,
            grid: [rows, cols],
            blocks: 6,
            block: 64,
            broadcast: Algorithm::Ring,
            combined: false,
            chunk_bytes: 0,
            lookahead: false,
            progress_chunks: 4,
            barrier: false,
            gemm_flops_per_s: 1e10,
            panel_flops_per_s: 2e9,
            element_bytes: 4,
            panel_element_bytes: 2,
        }
    }

    /// Every send the workload issues: (from, to, tag, bytes).
    type Sends = Vec<(u32, u32, u32, u64)>;

    struct Spy {
        w: Dense2d,
        sends: RefCell<Sends>,
    }

    impl Workload for Spy {
        type State = DenseState;
        fn num_ranks(&self) -> u32 {
            self.w.num_ranks()
        }
        fn iterations(&self) -> u32 {
            self.w.iterations()
        }
        fn timer_names(&self) -> Vec<String> {
            self.w.timer_names()
        }
        fn next(&self, rank: u32, s: &mut DenseState, ctx: &Ctx) -> StreamOp {
            let op = self.w.next(rank, s, ctx);
            if let StreamOp::ISend { peer, tag, bytes, .. } | StreamOp::CollSend { peer, tag, bytes, .. } = op {
                self.sends.borrow_mut().push((rank, peer, tag, bytes));
            }
            op
        }
    }

    fn run(w: &Dense2d, net: Network) -> (Sends, Time, Vec<f64>) {
        w.validate().unwrap();
        let p = w.num_ranks();
        let spy = Spy { w: w.clone(), sends: RefCell::new(Vec::new()) };
        let prog = StreamProgram::new(spy, Recorder::new(vec!["iteration".into()], p, w.blocks));
        let mut e = Engine::new(prog, net, Noise::none()).unwrap();
        e.run().unwrap_or_else(|err| panic!("{w:?}: {err}"));
        let makespan = (0..p).map(|r| e.finish_time(r)).max().unwrap();
        let iters = e.view.program.recorder.seconds(0);
        (e.view.program.workload.sends.into_inner(), makespan, iters)
    }

    fn net() -> Network {
        Network::uniform(LogGOPS::loggopsim_defaults())
    }

    /// Bytes every step must move: A(k,k) along one row and one column, each
    /// column's U share down the column, each row's L share along the row.
    fn expected_bytes(w: &Dense2d) -> u64 {
        let (pr_n, pc_n) = (w.grid[0] as u64, w.grid[1] as u64);
        let diag = w.bytes_of(1, w.element_bytes);
        (0..w.blocks)
            .map(|k| {
                let u: u64 = (0..w.grid[1]).map(|c| w.bytes_of(w.trailing(k, k % w.grid[0], c).1, w.panel_element_bytes)).sum();
                let l: u64 = (0..w.grid[0]).map(|r| w.bytes_of(w.trailing(k, r, k % w.grid[1]).0, w.panel_element_bytes)).sum();
                (pc_n - 1) * diag + (pr_n - 1) * diag + (pr_n - 1) * u + (pc_n - 1) * l
            })
            .sum()
    }

    #[test]
    fn every_variant_moves_exactly_the_panels_and_completes() {
        for kernel in [Kernel::Lu, Kernel::FloydWarshall] {
            for &broadcast in CollectiveKind::Bcast.algorithms() {
                for (combined, lookahead, chunk) in [(false, false, 0), (true, false, 3000), (false, true, 0), (true, true, 5000)] {
                    for s_bytes in [65535, 1000] {
                        let w = Dense2d {
                            kernel,
                            broadcast,
                            combined,
                            lookahead,
                            chunk_bytes: if broadcast == Algorithm::PipelinedRing { 4000 } else { chunk },
                            ..lu(3, 4)
                        };
                        let mut n = net();
                        n.inter_node.s_bytes = s_bytes; // eager, then rendezvous
                        let (sends, _, _) = run(&w, n);
                        let total: u64 = sends.iter().map(|s| s.3).sum();
                        assert_eq!(total, expected_bytes(&w), "{w:?}");
                        assert!(sends.iter().all(|s| s.0 != s.1), "{w:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn one_process_runs_the_flop_model_exactly() {
        for kernel in [Kernel::Lu, Kernel::FloydWarshall] {
            let w = Dense2d { kernel, ..lu(1, 1) };
            let (sends, makespan, _) = run(&w, net());
            assert!(sends.is_empty());
            let b3 = 64f64.powi(3);
            let n = w.blocks as f64;
            let ps = |flops: f64, rate: f64| (flops / rate * 1e12).round() as Time;
            let want: Time = (0..w.blocks)
                .map(|k| {
                    let t = match kernel {
                        Kernel::Lu => n - k as f64 - 1.0,
                        Kernel::FloydWarshall => n - 1.0,
                    };
                    let (diag, panel) = match kernel {
                        Kernel::Lu => (2.0 / 3.0 * b3, b3),
                        Kernel::FloydWarshall => (2.0 * b3, 2.0 * b3),
                    };
                    ps(diag, 2e9) + if t > 0.0 { ps(2.0 * t * panel, 2e9) + ps(t * t * 2.0 * b3, 1e10) } else { 0 }
                })
                .sum();
            assert_eq!(makespan, want, "{kernel:?}");
        }
    }

    #[test]
    fn a_row_of_four_relays_the_diagonal_block_then_the_l_panel() {
        let w = lu(1, 4);
        let (sends, _, _) = run(&w, net());
        let step0: Vec<_> = sends.iter().filter(|s| s.2 < 24).take(6).map(|s| (s.0, s.1, s.2)).collect();
        // A(0,0) along the ring 0→1→2→3 (tag 16), then L (tag 18) the same way.
        let mut by_rank = step0.clone();
        by_rank.sort_by_key(|s| (s.0, s.2));
        assert_eq!(by_rank, vec![(0, 1, 16), (0, 1, 18), (1, 2, 16), (1, 2, 18), (2, 3, 16), (2, 3, 18)]);
    }

    #[test]
    fn lu_steps_shrink_while_floyd_warshall_steps_stay_level() {
        let (_, _, lu_t) = run(&Dense2d { blocks: 8, ..lu(2, 2) }, net());
        let (_, _, fw_t) = run(&Dense2d { blocks: 8, kernel: Kernel::FloydWarshall, ..lu(2, 2) }, net());
        let step = |t: &[f64], k: usize| (0..4).map(|r| t[r * 8 + k]).fold(0.0, f64::max);
        assert!(step(&lu_t, 0) > 3.0 * step(&lu_t, 6), "{lu_t:?}");
        assert!((step(&fw_t, 1) - step(&fw_t, 6)).abs() < 0.05 * step(&fw_t, 1), "{fw_t:?}");
    }

    #[test]
    fn lookahead_hides_the_panel_broadcast_behind_the_update() {
        // Slow network, big panels: communication is worth hiding.
        let mut n = net();
        n.inter_node.big_g_ps = 1000.0; // 1 GB/s
        let base = Dense2d { blocks: 8, block: 256, ..lu(3, 3) };
        let (_, plain, _) = run(&base, n.clone());
        let (_, ahead, _) = run(&Dense2d { lookahead: true, progress_chunks: 16, ..base.clone() }, n.clone());
        assert!((ahead as f64) < 0.9 * plain as f64, "look-ahead {ahead} vs {plain}");
        // Without polling during the update (one piece) less of it hides.
        let (_, unpolled, _) = run(&Dense2d { lookahead: true, progress_chunks: 1, ..base.clone() }, n);
        assert!(ahead < unpolled, "{ahead} vs {unpolled}");
    }

    #[test]
    fn chunking_pipelines_the_ring_and_the_two_ring_halves_the_chain() {
        let mut n = net();
        n.inter_node.big_g_ps = 1000.0;
        let base = Dense2d { blocks: 4, block: 512, gemm_flops_per_s: 1e13, panel_flops_per_s: 1e13, ..lu(1, 8) };
        let (_, whole, _) = run(&base, n.clone());
        let (_, chunked, _) = run(&Dense2d { chunk_bytes: 64 << 10, ..base.clone() }, n.clone());
        assert!(chunked < whole, "{chunked} vs {whole}");
        let (_, two, _) = run(&Dense2d { broadcast: Algorithm::TwoRing, ..base.clone() }, n.clone());
        assert!(two < whole, "{two} vs {whole}");
        // Algorithm 3 on a 4×4 grid: serving row and column chunks as they
        // arrive beats finishing the column broadcast before the row one.
        let grid = Dense2d { grid: [4, 4], blocks: 8, chunk_bytes: 256 << 10, ..base };
        let (_, sequential, _) = run(&grid, n.clone());
        let (_, combined, _) = run(&Dense2d { combined: true, ..grid }, n);
        assert!((combined as f64) < 0.97 * sequential as f64, "{combined} vs {sequential}");
    }

    #[test]
    fn invalid_grids_and_rates_are_rejected() {
        assert!(Dense2d { grid: [0, 1], ..lu(1, 1) }.validate().unwrap_err().to_string().contains("grid"));
        assert!(Dense2d { gemm_flops_per_s: 0.0, ..lu(1, 1) }.validate().unwrap_err().to_string().contains("rates"));
        assert!(Dense2d { broadcast: Algorithm::Dissemination, ..lu(1, 1) }.validate().unwrap_err().to_string().contains("broadcast"));
        assert!(Dense2d { lookahead: true, barrier: true, ..lu(1, 1) }.validate().unwrap_err().to_string().contains("look-ahead"));
    }
}
