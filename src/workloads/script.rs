//! A program given as explicit per-rank op lists (tests, small hand-written
//! programs, replayed traces). Memory is O(total ops), unlike the generators.

use crate::program::stream::{Ctx, StreamOp, Workload};

#[derive(Debug, Clone, Default)]
pub struct Script {
    pub ranks: Vec<Vec<StreamOp>>,
    pub iterations: u32,
    pub timers: Vec<String>,
}

/// Position in the list, and the answers of the rank's `Test`s (bit k = k-th test).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptState {
    pub next: u32,
    pub tests_seen: u8,
    pub test_results: u64,
    after_test: bool,
}

impl Workload for Script {
    type State = ScriptState;

    fn num_ranks(&self) -> u32 {
        self.ranks.len() as u32
    }
    fn iterations(&self) -> u32 {
        self.iterations
    }
    fn timer_names(&self) -> Vec<String> {
        self.timers.clone()
    }

    fn next(&self, rank: u32, s: &mut ScriptState, ctx: &Ctx) -> StreamOp {
        if s.after_test {
            if ctx.last_test && s.tests_seen < 64 {
                s.test_results |= 1 << s.tests_seen;
            }
            s.tests_seen += 1;
            s.after_test = false;
        }
        let op = self.ranks[rank as usize].get(s.next as usize).copied().unwrap_or(StreamOp::Done);
        s.next += 1;
        s.after_test = matches!(op, StreamOp::Test(_));
        op
    }
}
