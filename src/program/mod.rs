//! What ranks execute. The engine sees a program only through [`Program`]:
//! it reports when an operation has started or is done, and asks which
//! operations became executable. Two kinds implement it:
//! [`goal::GoalProgram`] (a materialised LogGOPSim GOAL dependency graph) and
//! [`stream::StreamProgram`] (ops generated lazily, iteration by iteration, so
//! memory stays O(ranks) for any iteration count).

pub mod driver;
pub mod goal;
pub mod goal_bin;
pub mod goal_file;
pub mod goal_program;
pub mod mapped;
pub mod stream;
pub mod stream_op;

use crate::time::Time;

/// Wildcard for a receive's source or tag (MPI_ANY_SOURCE / MPI_ANY_TAG).
pub const ANY: u32 = u32::MAX;

/// Operation kinds, in LogGOPSim's order: ops freed together are issued
/// sends first, then receives, then computations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum OpKind {
    Send = 1,
    Recv = 2,
    Calc = 3,
    /// A zero-cost MPI_Test: completes after every message due at the same
    /// instant has been received, so it sees what has arrived by then.
    Probe = 4,
    /// A memory-bound computation of `size` bytes, at the bandwidth its
    /// socket's memory domain gives it.
    Mem = 5,
}

impl OpKind {
    /// A send or a receive (the ops a tag means something for).
    pub fn is_message(self) -> bool {
        matches!(self, OpKind::Send | OpKind::Recv)
    }
}

/// An operation the program hands to the engine for execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadyOp {
    pub kind: OpKind,
    /// Destination (send) or source (receive, may be ANY); unused for calc.
    pub peer: u32,
    pub tag: u32,
    /// Bytes for send/receive; picoseconds of work for calc.
    pub size: u64,
    /// The program's own handle, echoed back in `started`/`done`.
    pub id: u32,
    pub cpu: u8,
    pub nic: u8,
    /// A message of a collective operation (its waits are collective
    /// imbalance when the run is explained, not late senders or receivers).
    pub collective: bool,
}

impl ReadyOp {
    pub fn calc(size_ps: Time, id: u32) -> Self {
        ReadyOp { kind: OpKind::Calc, peer: 0, tag: 0, size: size_ps, id, cpu: 0, nic: 0, collective: false }
    }
    pub fn mem(bytes: u64, id: u32) -> Self {
        ReadyOp { kind: OpKind::Mem, peer: 0, tag: 0, size: bytes, id, cpu: 0, nic: 0, collective: false }
    }
    pub fn probe(id: u32) -> Self {
        ReadyOp { kind: OpKind::Probe, peer: 0, tag: 0, size: 0, id, cpu: 0, nic: 0, collective: false }
    }
    pub fn send(peer: u32, tag: u32, bytes: u64, id: u32) -> Self {
        ReadyOp { kind: OpKind::Send, peer, tag, size: bytes, id, cpu: 0, nic: 0, collective: false }
    }
    pub fn recv(peer: u32, tag: u32, bytes: u64, id: u32) -> Self {
        ReadyOp { kind: OpKind::Recv, peer, tag, size: bytes, id, cpu: 0, nic: 0, collective: false }
    }
    /// The op, marked as part of a collective (or not).
    pub fn of_collective(self, collective: bool) -> Self {
        ReadyOp { collective, ..self }
    }
}

/// The engine's view of a program.
pub trait Program {
    fn num_ranks(&self) -> u32;
    fn num_cpus(&self) -> u8 {
        1
    }
    fn num_nics(&self) -> u8 {
        1
    }
    /// The most ops `collect` returns for one rank before anything has run.
    fn max_initial_ops(&self) -> u32 {
        1
    }
    /// Whether many ops of one rank can wait for the same CPU at once (a GOAL
    /// schedule can have thousands), so the engine keeps waiting lines
    /// (engine/waiting.rs). Generated workloads have a few, and the lines'
    /// bookkeeping would only cost them time.
    fn many_ready_ops(&self) -> bool {
        false
    }
    /// Hints that `rank`'s state will be needed soon (the engine calls it
    /// a few events ahead, so the memory access overlaps other work).
    #[inline(always)]
    fn prefetch(&self, _rank: u32) {}
    /// Op `id` of `rank` has started (its `irequires` dependents may go).
    fn started(&mut self, rank: u32, id: u32);
    /// Op `id` of `rank` is done (its `requires` dependents may go).
    fn done(&mut self, rank: u32, id: u32);
    /// Appends the ops of `rank` that became executable, in schedule order.
    /// `now` is the engine's time and `cpu_free` when the rank's CPU is next
    /// free; programs that record timestamps use max(now, cpu_free).
    fn collect(&mut self, rank: u32, now: Time, cpu_free: Time, out: &mut Vec<ReadyOp>) -> Result<(), String>;
    /// Whether `rank` has nothing left to do.
    fn is_finished(&self, rank: u32) -> bool;
    /// What a stuck rank is blocked in, for deadlock reports.
    fn describe_stuck(&self, rank: u32) -> String;
    /// Where the program runs several jobs: each job's first rank, in
    /// order (job 0's first). Empty for one program.
    fn job_firsts(&self) -> Vec<u32> {
        Vec::new()
    }
    /// `rank`'s CPU sat idle `idle` ps (told when the run is explained;
    /// programs that record per-iteration timers add it to the iteration).
    fn waited(&mut self, _rank: u32, _idle: Time) {}
    /// The iteration `rank` is in, if the program counts them.
    fn iteration(&self, _rank: u32) -> Option<u32> {
        None
    }
    /// The share of the program done so far (0 to 1), if it knows it.
    fn progress(&self) -> Option<f64> {
        None
    }
}
