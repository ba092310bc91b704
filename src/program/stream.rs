//! Programs as lazily generated op streams, one sequential MPI process per
//! rank: a [`Workload`] yields the next op of a rank only when the previous
//! one has been issued, so memory stays O(ranks) for any iteration count.
//!
//! Nonblocking requests live in slots per rank; `Wait(mask)` blocks until
//! every slot in the mask has completed. A blocking send or receive is an
//! `ISend`/`IRecv` followed by a `Wait` on its slot. A nonblocking
//! collective running in the background uses the top slots (32 by default,
//! fewer if the workload says so) and the program the ones below.
//!
//! Progress of a nonblocking collective: its first round is posted by the
//! call that starts it; each later round is posted only while the rank is
//! inside an MPI call (a wait or test on anything, or the collective's own
//! wait), unless the platform has asynchronous progress, in which case a
//! round is posted as soon as the previous one completes. Point-to-point
//! messages themselves always progress (see the engine).

use super::driver::Driver;
use super::goal::{GoalKind, GoalOp, GoalRank, GoalSchedule};
pub use super::stream_op::StreamOp;
use super::{Program, ReadyOp, ANY};
use crate::collectives::Collective;
use crate::record::Recorder;
use crate::time::{Time, PS_PER_NS};

/// What a workload may know when it generates the next op.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ctx {
    /// The answer of the latest `Test` or `CollTest`.
    pub last_test: bool,
    /// The rank's current time: when its CPU reaches this op.
    pub time: Time,
    /// The program's request slots still incomplete.
    pub pending: u64,
    /// Whether timer ops are recorded: if not, a workload may skip them
    /// (each costs a call for nothing on the hot path).
    pub records_timers: bool,
}

/// A built-in program generator.
pub trait Workload {
    /// Per-rank cursor; keep it small, there is one per rank.
    type State: Default + Clone;
    fn num_ranks(&self) -> u32;
    fn iterations(&self) -> u32;
    /// Names of the timers recorded per (rank, iteration).
    fn timer_names(&self) -> Vec<String>;
    /// The op after the ones already generated.
    fn next(&self, rank: u32, state: &mut Self::State, ctx: &Ctx) -> StreamOp;
    /// The nonblocking collectives `CollStart` refers to.
    fn collective(&self, _id: u8) -> Option<Collective> {
        None
    }
    /// Step `i` of `rank` in collective `c` (the workload's own schedule, if it has one).
    #[inline(always)]
    fn collective_step(&self, c: &Collective, rank: u32, i: u32) -> Option<crate::collectives::Step> {
        c.step(rank, i)
    }
    /// Whether the program starts nonblocking collectives (their state is
    /// then kept per rank).
    fn uses_background(&self) -> bool {
        false
    }
    /// How many of the 64 request slots the background collective gets (the
    /// program keeps the rest): 2 suffice for allreduce and barrier
    /// algorithms, trees fanning out need up to 32.
    fn background_slots(&self) -> u8 {
        DEFAULT_BG_SLOTS
    }
}

const CALC_ID: u32 = 64;
const TEST_ID: u32 = 65;
/// A zero-cost probe that brings an MPI call to the moment the CPU reaches it.
const SYNC_ID: u32 = 66;
/// A memory-bound computation: its end is known only when it comes, so the
/// next op waits for it (a calc's end is known when it starts).
const MEM_ID: u32 = 67;
/// Request slots a background collective gets by default (the top ones).
const DEFAULT_BG_SLOTS: u8 = 32;

/// A rank's program state, one byte: a set of the flags below.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Flags(u8);

impl Flags {
    /// The next op may be generated.
    const READY: Flags = Flags(1);
    const FINISHED: Flags = Flags(2);
    /// A test's probe is out; its answer comes with `done`.
    const TESTING: Flags = Flags(4);
    /// The answer of the latest test.
    const LAST_TEST: Flags = Flags(8);
    /// The program is inside an MPI call (`call` says which).
    const IN_MPI: Flags = Flags(16);
    /// A nonblocking collective runs in the background.
    const BG_ACTIVE: Flags = Flags(32);
    /// A background op was issued and has not started yet.
    const BG_INFLIGHT: Flags = Flags(64);
    /// Waiting for the CPU to reach the current MPI call.
    const SYNCING: Flags = Flags(128);

    #[inline(always)]
    fn contains(self, f: Flags) -> bool {
        self.0 & f.0 == f.0
    }
    #[inline(always)]
    fn intersects(self, f: Flags) -> bool {
        self.0 & f.0 != 0
    }
    #[inline(always)]
    fn insert(&mut self, f: Flags) {
        self.0 |= f.0;
    }
    #[inline(always)]
    fn remove(&mut self, f: Flags) {
        self.0 &= !f.0;
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    #[inline(always)]
    fn bitor(self, f: Flags) -> Flags {
        Flags(self.0 | f.0)
    }
}

/// The MPI call a rank is in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(u8)]
enum Call {
    #[default]
    Wait,
    WaitAny,
    Test,
    CollStart,
    CollWait,
    CollTest,
}

/// Per rank: 24 bytes plus the workload's cursor.
#[derive(Debug, Clone, Default)]
struct RankState<S> {
    /// Slots with an incomplete request (the program's and the background's).
    pending: u64,
    /// The program's slots the current Wait or Test is about.
    wait_mask: u64,
    flags: Flags,
    call: Call,
    gen: S,
}

/// A rank's running nonblocking collective (only for workloads that use them).
#[derive(Debug, Clone, Copy, Default)]
struct Background {
    driver: Driver,
    /// Background slots (shifted down to 0) its current round waits for.
    wait: u32,
    id: u8,
}

impl Background {
    #[inline]
    fn wait_bits(&self, base: u8) -> u64 {
        (self.wait as u64) << base
    }
}

pub struct StreamProgram<W: Workload> {
    pub workload: W,
    ranks: Vec<RankState<W::State>>,
    background: Vec<Background>,
    /// First slot of the background collective; the program has the ones below.
    bg_base: u8,
    pub recorder: Recorder,
    async_progress: bool,
}

impl<W: Workload> StreamProgram<W> {
    pub fn new(workload: W, recorder: Recorder) -> Self {
        let p = workload.num_ranks() as usize;
        let init = RankState { flags: Flags::READY, ..Default::default() };
        let background = if workload.uses_background() { vec![Background::default(); p] } else { Vec::new() };
        let bg_base = if workload.uses_background() { 64 - workload.background_slots().clamp(1, 32) } else { 64 };
        StreamProgram { ranks: crate::memory::per_rank(p, init), background, bg_base, workload, recorder, async_progress: false }
    }

    /// Background collectives advance as soon as a round completes, not
    /// only inside MPI calls: a progress thread on a second CPU of each rank
    /// posts their ops and receives their messages.
    pub fn with_async_progress(mut self, on: bool) -> Self {
        self.async_progress = on;
        self
    }

    /// The workload cursor of `rank` (for inspection after a run).
    pub fn state(&self, rank: u32) -> &W::State {
        &self.ranks[rank as usize].gen
    }

    /// Bytes held per rank by the program state.
    pub fn state_bytes_per_rank(workload: &W) -> usize {
        std::mem::size_of::<RankState<W::State>>() + if workload.uses_background() { std::mem::size_of::<Background>() } else { 0 }
    }
}

/// A workload that breaks the stream program's rules while it runs: a bug
/// in the workload, named by rank.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StreamError {
    #[error("rank {rank}: request slot {slot} reused while still pending (workload error)")]
    SlotReused { rank: u32, slot: u8 },
    #[error("rank {rank}: request slot {slot} is reserved for nonblocking collectives (workload error)")]
    ReservedSlot { rank: u32, slot: u8 },
    #[error("rank {0}: wait or test on slots reserved for nonblocking collectives (workload error)")]
    ReservedWait(u32),
    #[error("rank {rank}: nonblocking collective {id} is not defined (workload error)")]
    UndefinedCollective { rank: u32, id: u8 },
    /// `op`: the stream op, as Debug shows it.
    #[error("rank {rank}: unexpected {op} in a collective")]
    UnexpectedOp { rank: u32, op: String },
    #[error("rank {0}: MPI_Waitany on no request (workload error)")]
    EmptyWaitAny(u32),
    #[error("rank {0}: the workload starts a nonblocking collective but did not declare it (workload error)")]
    UndeclaredCollective(u32),
    #[error("rank {0}: a nonblocking collective started while another is running (workload error)")]
    CollectiveRunning(u32),
    #[error("rank {0}: finished with a nonblocking collective still running (workload error)")]
    FinishedInCollective(u32),
    #[error("rank {rank}: the nonblocking collective needs more than the workload's {slots} background slots (workload error)")]
    TooManyBackground { rank: u32, slots: u8 },
}

/// What a workload does that a GOAL schedule cannot say.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoGoalForm {
    #[error("memory-bound computation depends on contention and has no GOAL form")]
    MemoryBound,
    #[error("workloads that call MPI_Test or MPI_Waitany depend on timing and have no GOAL form")]
    Timing,
    #[error("nonblocking collectives progress with MPI calls and have no GOAL form")]
    NonblockingCollectives,
    /// The schedule, held whole and then its text, would not fit in memory.
    #[error("the GOAL schedule of {ranks} ranks would take about {need} of memory and more ({limit}); export fewer ranks or iterations")]
    TooLarge { ranks: u32, need: String, limit: String },
}

/// The stream program's errors, boxed: they are rare, and a one-word
/// `Result` keeps the per-op calls returning in a register.
type Fallible<T> = Result<T, Box<StreamError>>;

/// Marks a request slot busy and hands the op to the engine.
#[inline(always)]
fn issue<S>(rank: u32, st: &mut RankState<S>, out: &mut Vec<ReadyOp>, op: ReadyOp, slot: u8) -> Fallible<()> {
    let bit = 1u64 << slot;
    if slot >= 64 || st.pending & bit != 0 {
        return Err(StreamError::SlotReused { rank, slot }.into());
    }
    st.pending |= bit;
    out.push(op);
    Ok(())
}

impl<W: Workload> Program for StreamProgram<W> {
    fn num_ranks(&self) -> u32 {
        self.workload.num_ranks()
    }

    fn waited(&mut self, rank: u32, idle: Time) {
        self.recorder.waited(rank, idle);
    }

    fn progress(&self) -> Option<f64> {
        self.recorder.progress()
    }

    fn iteration(&self, rank: u32) -> Option<u32> {
        self.recorder.iteration(rank)
    }

    fn num_cpus(&self) -> u8 {
        1 + u8::from(self.async_progress)
    }

    #[inline(always)]
    fn prefetch(&self, rank: u32) {
        crate::prefetch::prefetch(&self.ranks, rank as usize);
    }

    #[inline]
    fn started(&mut self, rank: u32, id: u32) {
        let st = &mut self.ranks[rank as usize];
        if (self.bg_base as u32..64).contains(&id) {
            st.flags.remove(Flags::BG_INFLIGHT);
        } else if id < SYNC_ID {
            // the program's own requests, calcs and tests (not syncs or
            // memory work, whose next op waits for their end)
            st.flags.insert(Flags::READY);
        }
    }

    #[inline]
    fn done(&mut self, rank: u32, id: u32) {
        let st = &mut self.ranks[rank as usize];
        if id < 64 {
            st.pending &= !(1u64 << id);
        } else if id == SYNC_ID {
            st.flags.remove(Flags::SYNCING);
        } else if id == MEM_ID {
            st.flags.insert(Flags::READY);
        } else if id == TEST_ID {
            let complete = st.pending & st.wait_mask == 0;
            st.flags.remove(Flags::TESTING | Flags::LAST_TEST);
            if complete {
                st.flags.insert(Flags::LAST_TEST);
            }
        }
    }

    fn collect(&mut self, rank: u32, now: Time, cpu_free: Time, out: &mut Vec<ReadyOp>) -> Result<(), String> {
        // Fast exit: nothing to do.
        if !self.ranks[rank as usize].flags.intersects(Flags::READY | Flags::IN_MPI | Flags::BG_ACTIVE) {
            return Ok(());
        }
        let mut r = Rank {
            workload: &self.workload,
            recorder: &mut self.recorder,
            async_progress: self.async_progress,
            rank,
            st: &mut self.ranks[rank as usize],
            bg: self.background.get_mut(rank as usize),
            bg_base: self.bg_base,
            now,
            cpu_free,
            out,
        };
        // as text: the engine's Program trait has no error type of its own yet
        r.advance().map_err(|e| e.to_string())
    }

    fn is_finished(&self, rank: u32) -> bool {
        self.ranks[rank as usize].flags.contains(Flags::FINISHED)
    }

    fn describe_stuck(&self, rank: u32) -> String {
        let st = &self.ranks[rank as usize];
        let main = st.pending & st.wait_mask;
        let bg = st.pending & (!0u64).checked_shl(self.bg_base as u32).unwrap_or(0);
        match (st.flags.contains(Flags::IN_MPI), st.call) {
            (true, Call::CollWait) => format!("blocked in the wait for a nonblocking collective ({} request(s) open)", bg.count_ones()),
            (true, Call::WaitAny) => format!("blocked in a waitany on {} request(s)", main.count_ones()),
            (true, _) if main != 0 => format!("blocked in a wait on {} request(s)", main.count_ones()),
            _ => "blocked".into(),
        }
    }
}

/// One rank's program being advanced at `now` (its CPU busy until `cpu_free`).
struct Rank<'a, W: Workload> {
    workload: &'a W,
    recorder: &'a mut Recorder,
    async_progress: bool,
    rank: u32,
    st: &'a mut RankState<W::State>,
    bg: Option<&'a mut Background>,
    bg_base: u8,
    now: Time,
    cpu_free: Time,
    out: &'a mut Vec<ReadyOp>,
}

impl<W: Workload> Rank<'_, W> {
    /// Runs the program as far as it can go now.
    #[inline]
    fn advance(&mut self) -> Fallible<()> {
        let t = self.now.max(self.cpu_free);
        let rank = self.rank;
        loop {
            let flags = self.st.flags;
            if flags.contains(Flags::SYNCING) {
                return Ok(());
            }
            if flags.contains(Flags::BG_ACTIVE) && (flags.contains(Flags::IN_MPI) || self.async_progress) {
                self.progress_background()?;
            }
            if self.st.flags.contains(Flags::IN_MPI) && self.leave_call().is_break() {
                return Ok(());
            }
            if !self.st.flags.contains(Flags::READY) {
                return Ok(());
            }
            self.st.flags.remove(Flags::READY);
            // (the background's slots are the top ones, above bg_base)
            let pending = self.st.pending & !(!0u64).checked_shl(self.bg_base as u32).unwrap_or(0);
            let ctx =
                Ctx { last_test: self.st.flags.contains(Flags::LAST_TEST), time: t, pending, records_timers: self.recorder.is_enabled() };
            let op = self.workload.next(rank, &mut self.st.gen, &ctx);
            if self.perform(op, t)?.is_break() {
                return Ok(());
            }
        }
    }

    /// The MPI call the program is in has returned, if it has: Break while
    /// it has not, or when its answer is still to come (a test, answered by
    /// a probe that sees every message due by then).
    #[inline]
    fn leave_call(&mut self) -> std::ops::ControlFlow<()> {
        use std::ops::ControlFlow;
        if !self.call_done() {
            return ControlFlow::Break(());
        }
        self.st.flags.remove(Flags::IN_MPI);
        match self.st.call {
            Call::Test => {
                self.st.flags.insert(Flags::TESTING);
                self.out.push(ReadyOp::probe(TEST_ID));
                return ControlFlow::Break(());
            }
            Call::CollTest => {
                self.st.flags.remove(Flags::LAST_TEST);
                if !self.st.flags.contains(Flags::BG_ACTIVE) {
                    self.st.flags.insert(Flags::LAST_TEST);
                }
            }
            _ => {}
        }
        self.st.flags.insert(Flags::READY);
        ControlFlow::Continue(())
    }

    /// Does what the program's next op `op` asks at time `t`: Continue if
    /// the program goes on at once, Break when it waits (for its CPU, a
    /// message, an MPI call) or is done.
    #[inline]
    fn perform(&mut self, op: StreamOp, t: Time) -> Fallible<std::ops::ControlFlow<()>> {
        use std::ops::ControlFlow;
        let rank = self.rank;
        match op {
            StreamOp::Calc(ps) => {
                self.out.push(ReadyOp::calc(ps, CALC_ID));
                return Ok(ControlFlow::Break(()));
            }
            StreamOp::Mem(bytes) => {
                self.out.push(ReadyOp::mem(bytes, MEM_ID));
                return Ok(ControlFlow::Break(()));
            }
            StreamOp::ISend { peer, tag, bytes, slot } | StreamOp::CollSend { peer, tag, bytes, slot } => {
                check_main_slot(rank, slot, self.bg_base)?;
                let send = ReadyOp::send(peer, tag, bytes, slot as u32).of_collective(matches!(op, StreamOp::CollSend { .. }));
                return issue(rank, self.st, self.out, send, slot).map(ControlFlow::Break);
            }
            StreamOp::IRecv { peer, tag, bytes, slot } | StreamOp::CollRecv { peer, tag, bytes, slot } => {
                check_main_slot(rank, slot, self.bg_base)?;
                let recv = ReadyOp::recv(peer, tag, bytes, slot as u32).of_collective(matches!(op, StreamOp::CollRecv { .. }));
                return issue(rank, self.st, self.out, recv, slot).map(ControlFlow::Break);
            }
            // The common case: a wait with nothing in the background that
            // is already satisfied returns at once.
            StreamOp::Wait(mask) if !self.st.flags.contains(Flags::BG_ACTIVE) && self.st.pending & mask == 0 => {
                self.st.flags.insert(Flags::READY);
            }
            StreamOp::Wait(mask) => self.enter(Call::Wait, mask)?,
            StreamOp::WaitAny(0) => {
                return Err(StreamError::EmptyWaitAny(rank).into());
            }
            StreamOp::WaitAny(mask) => self.enter(Call::WaitAny, mask)?,
            StreamOp::Test(mask) => self.enter(Call::Test, mask)?,
            StreamOp::CollStart(id) => {
                let Some(bg) = self.bg.as_deref_mut() else {
                    return Err(StreamError::UndeclaredCollective(rank).into());
                };
                if self.st.flags.contains(Flags::BG_ACTIVE) {
                    return Err(StreamError::CollectiveRunning(rank).into());
                }
                *bg = Background { driver: Driver::default(), wait: 0, id };
                self.st.flags.insert(Flags::BG_ACTIVE);
                self.enter(Call::CollStart, 0)?;
            }
            StreamOp::CollWait => self.enter(Call::CollWait, 0)?,
            StreamOp::CollTest => self.enter(Call::CollTest, 0)?,
            StreamOp::TimerStart { timer, iteration } => {
                self.recorder.start(timer, rank, iteration, t);
                self.st.flags.insert(Flags::READY);
            }
            StreamOp::TimerStop { timer, iteration } => {
                self.recorder.stop(timer, rank, iteration, t);
                self.st.flags.insert(Flags::READY);
            }
            StreamOp::Record { timer, iteration, value } => {
                self.recorder.value(timer, rank, iteration, value);
                self.st.flags.insert(Flags::READY);
            }
            StreamOp::Done => {
                if self.st.flags.contains(Flags::BG_ACTIVE) {
                    return Err(StreamError::FinishedInCollective(rank).into());
                }
                self.st.flags.insert(Flags::FINISHED);
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Enters an MPI call. One that progresses a background collective
    /// without a progress thread must act when the CPU gets there, not when
    /// the program reaches it (the CPU may still be busy): a probe waits.
    fn enter(&mut self, call: Call, mask: u64) -> Fallible<()> {
        if mask.checked_shr(self.bg_base as u32).unwrap_or(0) != 0 {
            return Err(StreamError::ReservedWait(self.rank).into());
        }
        self.st.call = call;
        self.st.wait_mask = mask;
        self.st.flags.insert(Flags::IN_MPI);
        if self.st.flags.contains(Flags::BG_ACTIVE) && !self.async_progress && self.cpu_free > self.now {
            self.st.flags.insert(Flags::SYNCING);
            self.out.push(ReadyOp::probe(SYNC_ID));
        }
        Ok(())
    }

    /// Whether the MPI call the rank is in has finished.
    fn call_done(&self) -> bool {
        let st = &*self.st;
        match st.call {
            Call::Wait => st.pending & st.wait_mask == 0,
            Call::WaitAny => st.pending & st.wait_mask != st.wait_mask,
            Call::CollWait => !st.flags.contains(Flags::BG_ACTIVE),
            Call::Test | Call::CollStart | Call::CollTest => {
                let bg_wait = self.bg.as_ref().map_or(0, |b| b.wait_bits(self.bg_base));
                !st.flags.contains(Flags::BG_INFLIGHT) && (!st.flags.contains(Flags::BG_ACTIVE) || st.pending & bg_wait != 0)
            }
        }
    }

    /// Posts the background collective's ops while it may progress: one op
    /// at a time (the next once it has started), until a round must wait.
    fn progress_background(&mut self) -> Fallible<()> {
        let rank = self.rank;
        let cpu = u8::from(self.async_progress);
        let base = self.bg_base;
        let Some(bg) = self.bg.as_deref_mut() else { return Ok(()) };
        let st = &mut *self.st;
        while st.flags.contains(Flags::BG_ACTIVE) && !st.flags.contains(Flags::BG_INFLIGHT) {
            if bg.wait != 0 {
                if st.pending & bg.wait_bits(base) != 0 {
                    return Ok(());
                }
                bg.wait = 0;
            }
            let coll = self.workload.collective(bg.id).ok_or(StreamError::UndefinedCollective { rank, id: bg.id })?;
            let workload = &self.workload;
            let op = match bg.driver.next_with(coll.tag, |i| workload.collective_step(&coll, rank, i)) {
                None => {
                    st.flags.remove(Flags::BG_ACTIVE);
                    continue;
                }
                Some(StreamOp::Wait(mask)) => {
                    bg.wait = mask as u32;
                    continue;
                }
                Some(other) => match other.message(base) {
                    Some(m) => m,
                    None => return Err(StreamError::UnexpectedOp { rank, op: format!("{other:?}") }.into()),
                },
            };
            if op.1 >= 64 - base {
                return Err(StreamError::TooManyBackground { rank, slots: 64 - base }.into());
            }
            issue(rank, st, self.out, ReadyOp { cpu, ..op.0 }, op.1 + base)?;
            st.flags.insert(Flags::BG_INFLIGHT);
        }
        Ok(())
    }
}

fn check_main_slot(rank: u32, slot: u8, bg_base: u8) -> Fallible<()> {
    if slot >= bg_base {
        return Err(StreamError::ReservedSlot { rank, slot }.into());
    }
    Ok(())
}

/// Writes a workload as the equivalent GOAL schedule: each rank's ops form a
/// chain (an op may start once the previous one has started), and an op that
/// follows a `Wait` also requires the waited-on requests to be done — the
/// same ordering the stream engine applies, so both give identical times.
pub fn export_goal<W: Workload>(wl: &W, limit: Option<u64>) -> Result<GoalSchedule, NoGoalForm> {
    let p = wl.num_ranks();
    // what the schedule holds (and its text, written from it later): checked
    // as it grows, before allocating more than the machine has
    let per_op = (std::mem::size_of::<GoalOp>() + 2 * std::mem::size_of::<(u32, u32)>() + 40) as u128;
    let mut ops = 0u128;
    let check = |ops: u128| {
        let need = p as u128 * std::mem::size_of::<GoalRank>() as u128 + ops * per_op;
        crate::memory::check_memory(need, limit).map_err(|e| NoGoalForm::TooLarge {
            ranks: p,
            need: crate::memory::size(need),
            limit: format!("{}: {}", e.what, crate::memory::size(e.limit)),
        })
    };
    check(0)?;
    let mut ranks = Vec::with_capacity(p as usize);
    for r in 0..p {
        let mut g = GoalRank::default();
        let mut st = W::State::default();
        let mut slot_op = [u32::MAX; 64];
        let mut waited: Vec<u32> = Vec::new();
        loop {
            let op = wl.next(r, &mut st, &Ctx::default());
            let goal_op = match op {
                StreamOp::Calc(ps) => {
                    GoalOp { kind: GoalKind::Calc, peer: 0, tag: 0, size: (ps + PS_PER_NS / 2) / PS_PER_NS, cpu: 0, nic: 0 }
                }
                StreamOp::ISend { peer, tag, bytes, .. } | StreamOp::CollSend { peer, tag, bytes, .. } => {
                    GoalOp { kind: GoalKind::Send, peer, tag, size: bytes, cpu: 0, nic: 0 }
                }
                StreamOp::IRecv { peer, tag, bytes, .. } | StreamOp::CollRecv { peer, tag, bytes, .. } => {
                    GoalOp { kind: GoalKind::Recv, peer, tag, size: bytes, cpu: 0, nic: 0 }
                }
                StreamOp::Wait(mask) => {
                    waited.extend((0..64).filter(|s| mask >> s & 1 == 1).map(|s| slot_op[s]).filter(|&i| i != u32::MAX));
                    continue;
                }
                StreamOp::Mem(_) => return Err(NoGoalForm::MemoryBound),
                StreamOp::Test(_) | StreamOp::CollTest | StreamOp::WaitAny(_) => return Err(NoGoalForm::Timing),
                StreamOp::CollStart(_) | StreamOp::CollWait => return Err(NoGoalForm::NonblockingCollectives),
                StreamOp::TimerStart { .. } | StreamOp::TimerStop { .. } | StreamOp::Record { .. } => continue,
                StreamOp::Done => break,
            };
            let idx = g.ops.len() as u32;
            if idx > 0 {
                g.irequires.push((idx, idx - 1));
            }
            waited.sort_unstable();
            waited.dedup();
            g.requires.extend(waited.drain(..).map(|w| (idx, w)));
            if let Some((_, slot)) = op.message(0) {
                slot_op[slot as usize] = idx;
            }
            debug_assert!(goal_op.peer != ANY || goal_op.kind == GoalKind::Recv);
            g.ops.push(goal_op);
            ops += 1;
            if ops.is_multiple_of(1 << 20) {
                check(ops)?;
            }
        }
        ranks.push(g);
    }
    Ok(GoalSchedule { num_ranks: p, ranks })
}
