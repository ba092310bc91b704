//! Programs as lazily generated op streams, one sequential MPI process per
//! rank: a [`Workload`] yields the next op of a rank only when the previous
//! one has been issued, so memory stays O(ranks) for any iteration count.
//!
//! Nonblocking requests live in up to 64 slots per rank; `Wait(mask)` blocks
//! until every slot in the mask has completed. A blocking send or receive is
//! an `ISend`/`IRecv` followed by a `Wait` on its slot.

use super::goal::{GoalKind, GoalOp, GoalRank, GoalSchedule};
use super::{Program, ReadyOp, ANY};
use crate::record::Recorder;
use crate::time::{Time, PS_PER_NS};

/// One step of a rank's program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamOp {
    /// Occupy the CPU for this long (noise may stretch it).
    Calc(Time),
    ISend { peer: u32, tag: u32, bytes: u64, slot: u8 },
    IRecv { peer: u32, tag: u32, bytes: u64, slot: u8 },
    /// Block until every request in the slot mask is complete.
    Wait(u64),
    /// MPI_Test(all) on the slot mask: never blocks; the answer is passed to
    /// the workload's next `next` call.
    Test(u64),
    TimerStart { timer: u8, iteration: u32 },
    TimerStop { timer: u8, iteration: u32 },
    Done,
}

/// A built-in program generator.
pub trait Workload {
    /// Per-rank cursor; keep it small, there is one per rank.
    type State: Default + Clone;
    fn num_ranks(&self) -> u32;
    fn iterations(&self) -> u32;
    /// Names of the timers recorded per (rank, iteration).
    fn timer_names(&self) -> Vec<String>;
    /// The op after the ones already generated; `last_test` answers the latest `Test`.
    fn next(&self, rank: u32, state: &mut Self::State, last_test: bool) -> StreamOp;
}

const CALC_ID: u32 = 64;
const TEST_ID: u32 = 65;

const READY: u8 = 1;
const FINISHED: u8 = 2;
const TESTING: u8 = 4;
const LAST_TEST: u8 = 8;

#[derive(Debug, Clone, Default)]
struct RankState<S> {
    /// Slots with an incomplete request.
    pending: u64,
    /// Slots a Wait or Test is about.
    wait_mask: u64,
    flags: u8,
    gen: S,
}

pub struct StreamProgram<W: Workload> {
    pub workload: W,
    ranks: Vec<RankState<W::State>>,
    pub recorder: Recorder,
}

impl<W: Workload> StreamProgram<W> {
    pub fn new(workload: W, recorder: Recorder) -> Self {
        let p = workload.num_ranks() as usize;
        let init = RankState { flags: READY, ..Default::default() };
        StreamProgram { ranks: vec![init; p], workload, recorder }
    }

    /// The workload cursor of `rank` (for inspection after a run).
    pub fn state(&self, rank: u32) -> &W::State {
        &self.ranks[rank as usize].gen
    }

    /// Bytes held per rank by the program state.
    pub fn state_bytes_per_rank() -> usize {
        std::mem::size_of::<RankState<W::State>>()
    }
}

impl<W: Workload> Program for StreamProgram<W> {
    fn num_ranks(&self) -> u32 {
        self.workload.num_ranks()
    }

    #[inline]
    fn started(&mut self, rank: u32, _id: u32) {
        self.ranks[rank as usize].flags |= READY;
    }

    #[inline]
    fn done(&mut self, rank: u32, id: u32) {
        let st = &mut self.ranks[rank as usize];
        if id < 64 {
            st.pending &= !(1u64 << id);
            if st.flags & TESTING == 0 && st.wait_mask != 0 && st.pending & st.wait_mask == 0 {
                st.wait_mask = 0;
                st.flags |= READY;
            }
        } else if id == TEST_ID {
            let complete = st.pending & st.wait_mask == 0;
            st.wait_mask = 0;
            st.flags &= !(TESTING | LAST_TEST);
            if complete {
                st.flags |= LAST_TEST;
            }
        }
    }

    fn collect(&mut self, rank: u32, now: Time, cpu_free: Time, out: &mut Vec<ReadyOp>) -> Result<(), String> {
        let st = &mut self.ranks[rank as usize];
        if st.flags & READY == 0 {
            return Ok(());
        }
        st.flags &= !READY;
        loop {
            let op = self.workload.next(rank, &mut st.gen, st.flags & LAST_TEST != 0);
            match op {
                StreamOp::Calc(ps) => {
                    out.push(ReadyOp::calc(ps, CALC_ID));
                    return Ok(());
                }
                StreamOp::ISend { peer, tag, bytes, slot } | StreamOp::IRecv { peer, tag, bytes, slot } => {
                    let bit = 1u64 << slot;
                    if slot >= 64 || st.pending & bit != 0 {
                        return Err(format!("rank {rank}: request slot {slot} reused while still pending (workload error)"));
                    }
                    st.pending |= bit;
                    out.push(match op {
                        StreamOp::ISend { .. } => ReadyOp::send(peer, tag, bytes, slot as u32),
                        _ => ReadyOp::recv(peer, tag, bytes, slot as u32),
                    });
                    return Ok(());
                }
                StreamOp::Wait(mask) => {
                    if st.pending & mask != 0 {
                        st.wait_mask = mask;
                        return Ok(());
                    }
                }
                StreamOp::Test(mask) => {
                    st.wait_mask = mask;
                    st.flags |= TESTING;
                    out.push(ReadyOp::probe(TEST_ID));
                    return Ok(());
                }
                StreamOp::TimerStart { timer, iteration } => self.recorder.start(timer, rank, iteration, now.max(cpu_free)),
                StreamOp::TimerStop { timer, iteration } => self.recorder.stop(timer, rank, iteration, now.max(cpu_free)),
                StreamOp::Done => {
                    st.flags |= FINISHED;
                    return Ok(());
                }
            }
        }
    }

    fn is_finished(&self, rank: u32) -> bool {
        self.ranks[rank as usize].flags & FINISHED != 0
    }

    fn describe_stuck(&self, rank: u32) -> String {
        let st = &self.ranks[rank as usize];
        if st.wait_mask != 0 {
            format!("blocked in a wait on {} request(s)", (st.pending & st.wait_mask).count_ones())
        } else {
            "blocked".into()
        }
    }
}

/// Writes a workload as the equivalent GOAL schedule: each rank's ops form a
/// chain (an op may start once the previous one has started), and an op that
/// follows a `Wait` also requires the waited-on requests to be done — the
/// same ordering the stream engine applies, so both give identical times.
pub fn export_goal<W: Workload>(wl: &W) -> Result<GoalSchedule, String> {
    let p = wl.num_ranks();
    let mut ranks = Vec::with_capacity(p as usize);
    for r in 0..p {
        let mut g = GoalRank::default();
        let mut st = W::State::default();
        let mut slot_op = [u32::MAX; 64];
        let mut waited: Vec<u32> = Vec::new();
        loop {
            let op = wl.next(r, &mut st, false);
            let goal_op = match op {
                StreamOp::Calc(ps) => GoalOp { kind: GoalKind::Calc, peer: 0, tag: 0, size: (ps + PS_PER_NS / 2) / PS_PER_NS, cpu: 0, nic: 0 },
                StreamOp::ISend { peer, tag, bytes, .. } => GoalOp { kind: GoalKind::Send, peer, tag, size: bytes, cpu: 0, nic: 0 },
                StreamOp::IRecv { peer, tag, bytes, .. } => GoalOp { kind: GoalKind::Recv, peer, tag, size: bytes, cpu: 0, nic: 0 },
                StreamOp::Wait(mask) => {
                    waited.extend((0..64).filter(|s| mask >> s & 1 == 1).map(|s| slot_op[s]).filter(|&i| i != u32::MAX));
                    continue;
                }
                StreamOp::Test(_) => return Err("workloads that call MPI_Test depend on timing and have no GOAL form".into()),
                StreamOp::TimerStart { .. } | StreamOp::TimerStop { .. } => continue,
                StreamOp::Done => break,
            };
            let idx = g.ops.len() as u32;
            if idx > 0 {
                g.irequires.push((idx, idx - 1));
            }
            waited.sort_unstable();
            waited.dedup();
            g.requires.extend(waited.drain(..).map(|w| (idx, w)));
            if let StreamOp::ISend { slot, .. } | StreamOp::IRecv { slot, .. } = op {
                slot_op[slot as usize] = idx;
            }
            debug_assert!(goal_op.peer != ANY || goal_op.kind == GoalKind::Recv);
            g.ops.push(goal_op);
        }
        ranks.push(g);
    }
    Ok(GoalSchedule { num_ranks: p, ranks })
}
