//! Collective microbenchmark: repeat a collective, optionally with
//! computation before each call (the noise/nonblocking-collectives paper's
//! microbenchmarks).

use super::TAG_COLLECTIVE;
use crate::collectives::{Algorithm, Collective, CollectiveKind, Driver};
use crate::program::stream::{StreamOp, Workload};
use crate::time::Time;
use serde::Deserialize;

/// How a collective call is carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveMode {
    /// Every rank runs its part of the algorithm in the call.
    Blocking,
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
    pub root: u32,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct CollState {
    iter: u32,
    phase: u8,
    driver: Driver,
}

const T_ITER: u8 = 0;

impl CollectiveLoop {
    pub fn call(&self) -> Collective {
        Collective {
            kind: self.collective,
            algorithm: self.algorithm.unwrap_or(self.collective.default_algorithm()),
            ranks: self.ranks,
            root: self.root,
            bytes: self.message_bytes,
            chunk_bytes: self.chunk_bytes,
            tag: TAG_COLLECTIVE,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        self.call().validate()
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

    fn next(&self, rank: u32, s: &mut CollState, _last_test: bool) -> StreamOp {
        loop {
            let iteration = s.iter;
            match s.phase {
                0 => {
                    if s.iter == self.iterations {
                        return StreamOp::Done;
                    }
                    s.phase = if self.compute_ps > 0 { 1 } else { 2 };
                    s.driver = Driver::default();
                    return StreamOp::TimerStart { timer: T_ITER, iteration };
                }
                1 => {
                    s.phase = 2;
                    return StreamOp::Calc(self.compute_ps);
                }
                2 => {
                    let op = match self.mode {
                        CollectiveMode::Blocking => s.driver.next(&self.call(), rank),
                        CollectiveMode::Ideal => None,
                    };
                    match op {
                        Some(op) => return op,
                        None => s.phase = 3,
                    }
                }
                _ => {
                    s.phase = 0;
                    s.iter += 1;
                    return StreamOp::TimerStop { timer: T_ITER, iteration };
                }
            }
        }
    }
}
