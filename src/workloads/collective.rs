//! Collective microbenchmark: repeat a collective, optionally with
//! computation before each call (the noise/nonblocking-collectives paper's
//! microbenchmarks).

use super::TAG_COLLECTIVE;
use crate::collectives::{Algorithm, Collective, CollectiveKind, Comm};
use crate::program::driver::Driver;
use crate::program::stream::{Ctx, StreamOp, Workload};
use crate::time::Time;
use serde::Deserialize;

/// How a collective call is carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveMode {
    /// Every rank runs its part of the algorithm in the call.
    Blocking,
    /// MPI_I… started before the computation and waited for after it; the
    /// computation is split into `test_chunks` pieces with an MPI_Test
    /// between them (the only moments, without asynchronous progress, at
    /// which the collective's later rounds can be posted).
    Nonblocking,
    /// The idealised nonblocking collective of Widener et al. §2.5: it
    /// completes the moment it is reached and costs nothing.
    Ideal,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveLoop {
    pub ranks: u32,
    pub iterations: u32,
    pub collective: CollectiveKind,
    /// None: the collective's default algorithm.
    pub algorithm: Option<Algorithm>,
    pub mode: CollectiveMode,
    pub message_bytes: u64,
    pub chunk_bytes: u64,
    pub compute_ps: Time,
    /// Group-local root.
    pub root: u32,
    /// Nonblocking mode: pieces the computation is cut into, with a test between.
    pub test_chunks: u32,
    /// Run the collective in every group of this partition at once.
    #[serde(default)]
    pub comm: Comm,
}

/// Per-rank cursor (16 bytes).
#[derive(Debug, Clone, Copy, Default)]
pub struct CollState {
    iter: u32,
    driver: Driver,
    phase: Phase,
    /// Computation pieces done in this iteration (nonblocking mode).
    chunk: u16,
}

const T_ITER: u8 = 0;

/// Where a rank is in an iteration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(u8)]
enum Phase {
    #[default]
    Start,
    /// Blocking and ideal: compute; nonblocking: start the collective.
    Begin,
    /// Blocking: inside the collective; nonblocking: computing in pieces.
    Collective,
    /// Nonblocking: the collective's wait was issued.
    Waited,
    /// Nonblocking: test between two pieces.
    Test,
    Stop,
}

impl CollectiveLoop {
    #[inline]
    pub fn call(&self) -> Collective {
        Collective {
            kind: self.collective,
            algorithm: self.algorithm.unwrap_or(self.collective.default_algorithm()),
            ranks: self.comm.size(self.ranks),
            root: self.root,
            bytes: self.message_bytes,
            chunk_bytes: self.chunk_bytes,
            tag: TAG_COLLECTIVE,
            comm: self.comm,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.mode == CollectiveMode::Nonblocking && !(1..=u16::MAX as u32).contains(&self.test_chunks) {
            return Err(format!("workload.test_chunks must be between 1 and {}", u16::MAX));
        }
        self.comm.group_size(self.ranks).map_err(|e| format!("workload.communicator: {e}"))?;
        self.call().validate()
    }

    /// One piece of the computation in nonblocking mode (the last takes the rest).
    fn piece(&self, k: u32) -> Time {
        let n = self.test_chunks as Time;
        let base = self.compute_ps / n;
        if k + 1 == self.test_chunks {
            self.compute_ps - base * (n - 1)
        } else {
            base
        }
    }
}

impl Workload for CollectiveLoop {
    type State = CollState;

    fn num_ranks(&self) -> u32 {
        self.ranks
    }
    fn iterations(&self) -> u32 {
        self.iterations
    }
    fn timer_names(&self) -> Vec<String> {
        vec!["iteration".into()]
    }

    fn collective(&self, _id: u8) -> Option<Collective> {
        Some(self.call())
    }

    fn uses_background(&self) -> bool {
        self.mode == CollectiveMode::Nonblocking
    }

    fn next(&self, rank: u32, s: &mut CollState, _ctx: &Ctx) -> StreamOp {
        // The hot path: inside a blocking collective.
        if s.phase == Phase::Collective && self.mode == CollectiveMode::Blocking {
            if let Some(op) = s.driver.next(&self.call(), rank) {
                return op;
            }
            s.phase = Phase::Stop;
        }
        loop {
            let iteration = s.iter;
            match (self.mode, s.phase) {
                (_, Phase::Start) => {
                    if s.iter == self.iterations {
                        return StreamOp::Done;
                    }
                    s.phase = Phase::Begin;
                    s.chunk = 0;
                    s.driver = Driver::default();
                    return StreamOp::TimerStart { timer: T_ITER, iteration };
                }
                // Blocking and ideal: compute, then the collective.
                (CollectiveMode::Blocking | CollectiveMode::Ideal, Phase::Begin) => {
                    s.phase = Phase::Collective;
                    if self.compute_ps > 0 {
                        return StreamOp::Calc(self.compute_ps);
                    }
                }
                (CollectiveMode::Blocking, Phase::Collective) => match s.driver.next(&self.call(), rank) {
                    Some(op) => return op,
                    None => s.phase = Phase::Stop,
                },
                (CollectiveMode::Ideal, Phase::Collective) => s.phase = Phase::Stop,
                // Nonblocking: start, compute in pieces with a test between, wait.
                (CollectiveMode::Nonblocking, Phase::Begin) => {
                    s.phase = Phase::Collective;
                    return StreamOp::CollStart(0);
                }
                (CollectiveMode::Nonblocking, Phase::Collective) => {
                    if s.chunk as u32 == self.test_chunks {
                        s.phase = Phase::Waited;
                        return StreamOp::CollWait;
                    }
                    s.phase = Phase::Test;
                    s.chunk += 1;
                    return StreamOp::Calc(self.piece(s.chunk as u32 - 1));
                }
                (CollectiveMode::Nonblocking, Phase::Test) => {
                    s.phase = Phase::Collective;
                    if (s.chunk as u32) < self.test_chunks {
                        return StreamOp::CollTest;
                    }
                }
                (CollectiveMode::Nonblocking, Phase::Waited) => s.phase = Phase::Stop,
                (CollectiveMode::Blocking | CollectiveMode::Ideal, Phase::Waited | Phase::Test) => {
                    unreachable!("only nonblocking iterations wait for or test a collective")
                }
                (_, Phase::Stop) => {
                    s.phase = Phase::Start;
                    s.iter += 1;
                    return StreamOp::TimerStop { timer: T_ITER, iteration };
                }
            }
        }
    }
}
