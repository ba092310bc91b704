//! One step of a rank's stream program: what a [`Workload`] yields and the
//! collective driver emits. Its own module, below both, so that the driver
//! (driver.rs) and the stream program that runs it (stream.rs) each depend
//! on it rather than on each other.
//!
//! [`Workload`]: super::stream::Workload

use super::ReadyOp;
use crate::time::Time;

/// One step of a rank's program.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StreamOp {
    /// Occupy the CPU for this long (noise may stretch it).
    Calc(Time),
    /// Memory-bound work moving this many bytes, at the rate the rank's
    /// socket gives it (the platform's memory domains).
    Mem(u64),
    ISend {
        peer: u32,
        tag: u32,
        bytes: u64,
        slot: u8,
    },
    IRecv {
        peer: u32,
        tag: u32,
        bytes: u64,
        slot: u8,
    },
    /// `ISend` and `IRecv` of a collective (what the collective driver
    /// emits): waits for them are collective imbalance when the run is
    /// explained.
    CollSend {
        peer: u32,
        tag: u32,
        bytes: u64,
        slot: u8,
    },
    CollRecv {
        peer: u32,
        tag: u32,
        bytes: u64,
        slot: u8,
    },
    /// Block until every request in the slot mask is complete.
    Wait(u64),
    /// Block until at least one request in the slot mask is complete
    /// (MPI_Waitany; `Ctx::pending` then tells which).
    WaitAny(u64),
    /// MPI_Test(all) on the slot mask: never blocks; the answer is passed to
    /// the workload's next `next` call.
    Test(u64),
    /// Start the workload's nonblocking collective number `id` (MPI_I…).
    CollStart(u8),
    /// MPI_Wait on the running nonblocking collective.
    CollWait,
    /// MPI_Test on the running nonblocking collective (answer as for `Test`).
    CollTest,
    TimerStart {
        timer: u8,
        iteration: u32,
    },
    TimerStop {
        timer: u8,
        iteration: u32,
    },
    /// Record a value (a duration in seconds, or any quantity) directly.
    Record {
        timer: u8,
        iteration: u32,
        value: f64,
    },
    Done,
}

impl StreamOp {
    /// A send or receive as the engine's op (its id the request slot plus
    /// `base`) and its slot; None for other ops.
    pub(super) fn message(self, base: u8) -> Option<(ReadyOp, u8)> {
        let id = |slot: u8| (slot + base) as u32;
        Some(match self {
            StreamOp::ISend { peer, tag, bytes, slot } => (ReadyOp::send(peer, tag, bytes, id(slot)), slot),
            StreamOp::IRecv { peer, tag, bytes, slot } => (ReadyOp::recv(peer, tag, bytes, id(slot)), slot),
            StreamOp::CollSend { peer, tag, bytes, slot } => (ReadyOp::send(peer, tag, bytes, id(slot)).of_collective(true), slot),
            StreamOp::CollRecv { peer, tag, bytes, slot } => (ReadyOp::recv(peer, tag, bytes, id(slot)).of_collective(true), slot),
            _ => return None,
        })
    }
}
