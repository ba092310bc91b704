//! Collective microbenchmark: repeat a collective, optionally with
//! computation before each call.

use super::{TAG_ALLREDUCE, TAG_BARRIER, TAG_BCAST};
use crate::collectives::{BinomialBcast, Dissemination};
use crate::program::stream::{StreamOp, Workload};
use crate::time::Time;
use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveKind {
    /// Binomial-tree broadcast.
    Bcast,
    /// Dissemination allreduce.
    Allreduce,
    /// Dissemination barrier (0-byte messages).
    Barrier,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveLoop {
    pub ranks: u32,
    pub iterations: u32,
    pub collective: CollectiveKind,
    pub message_bytes: u64,
    pub compute_ps: Time,
    pub root: u32,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct CollState {
    iter: u32,
    phase: u8,
    bcast: BinomialBcast,
    diss: Dissemination,
}

const T_ITER: u8 = 0;

impl CollectiveLoop {
    pub fn validate(&self) -> Result<(), String> {
        if self.ranks == 0 {
            return Err("ranks must be at least 1".into());
        }
        if self.root >= self.ranks {
            return Err(format!("workload.root: rank {} is out of range (0..{})", self.root, self.ranks));
        }
        Ok(())
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
                    s.bcast = BinomialBcast::default();
                    s.diss = Dissemination::default();
                    return StreamOp::TimerStart { timer: T_ITER, iteration };
                }
                1 => {
                    s.phase = 2;
                    return StreamOp::Calc(self.compute_ps);
                }
                2 => {
                    let op = match self.collective {
                        CollectiveKind::Bcast => s.bcast.next(rank, self.ranks, self.root, self.message_bytes, TAG_BCAST),
                        CollectiveKind::Allreduce => s.diss.next(rank, self.ranks, self.message_bytes, TAG_ALLREDUCE),
                        CollectiveKind::Barrier => s.diss.next(rank, self.ranks, 0, TAG_BARRIER),
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
