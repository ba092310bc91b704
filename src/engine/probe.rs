//! The engine's side of observing a run: what it tells an observer (a
//! probe), and what the observer may read. The observers themselves
//! (critical path, timeline) live in probes/ and depend on this, never
//! the other way round.
//!
//! The engine (`engine/mod.rs`) calls its probe once at each place where
//! something an observer may want happens — an event begins, a CPU is
//! charged for work or overhead, a message leaves or arrives, a wait ends —
//! and otherwise knows nothing of what the probe keeps. A probe sees the
//! engine through a [`View`] (read-only: a probe cannot change the run).
//!
//! Every method has a no-op default marked `#[inline(always)]`, so that with
//! [`NoProbe`] (the engine's default) every call, and the arguments built
//! only for it, compile away: the engine is generic over its probe, not
//! calling through a pointer.
//!
//! The calls that end a CPU's wait return the idle time they found (0 for
//! none): the engine hands it to the program's per-iteration wait timer
//! (`Program::waited`), which the program owns, so that probes stay readers.

use super::{Event, Layout};
use crate::network::{LogGOPS, Network};
use crate::noise::Noise;
use crate::program::{Program, ReadyOp};
use crate::time::Time;

/// What a probe may read of the engine when it is called. The engine keeps
/// this part of its state here, so that a probe is passed one reference
/// rather than a struct of references built at every call (explaining is
/// called a few times per event, out of line).
pub struct View<P> {
    /// Per rank, side by side so one cache line serves an event: when each
    /// CPU is next free ("next_o"), then when each NIC can next inject
    /// ("next_gs"), then accept ("next_gr"), then its two match lists
    /// (posted receives, unexpected messages) in one word. Index with `o`,
    /// `gs`, `gr`, `lists` (where they sit: `layout`). A probe called after
    /// a charge sees the clocks as set by it; what they held before comes
    /// in the call's arguments.
    pub clocks: Vec<Time>,
    /// The time of the event being processed (of the last one, between events).
    pub now: Time,
    pub net: Network,
    pub noise: Noise,
    pub program: P,
    pub layout: Layout,
}

impl<P: Program> View<P> {
    pub fn num_ranks(&self) -> u32 {
        self.program.num_ranks()
    }

    /// The clocks the event for `op` of rank `r` waits for.
    pub fn op_clocks(&self, r: u32, op: &ReadyOp) -> [usize; 2] {
        self.layout.op_clocks(&self.net, &self.clocks, r, op)
    }

    /// When rank `r` finished: the latest of its CPUs' clocks.
    pub fn finish_time(&self, r: u32) -> Time {
        let c = self.layout.o(r, 0);
        self.clocks[c..c + self.layout.ncpu].iter().copied().max().unwrap_or(0)
    }
}

/// A CPU that was idle until `at`, when something from rank `on` let it go
/// on (`why`: one of the wait classes, [`LATE_SENDER`] etc.). `before`:
/// its clock until then (the wait is `at − before` if positive).
#[derive(Debug, Clone, Copy)]
pub struct Wait {
    pub rank: u32,
    pub before: Time,
    pub at: Time,
    pub why: usize,
    pub on: u32,
}

/// Wait classes: what ended a [`Wait`]. A message's arrival ended it (a
/// late sender), or a receiver matching a rendezvous send (a late
/// receiver), or either inside a collective (collective imbalance), or
/// anything else (the rank's own NIC, another of its CPUs' work).
pub const LATE_SENDER: usize = 0;
pub const LATE_RECEIVER: usize = 1;
pub const OTHER: usize = 2;
pub const COLLECTIVE: usize = 3;

/// What a wait ended by event `ev` from another rank was: `p2p` (a late
/// sender or receiver), or collective imbalance if a collective sent it.
#[inline]
pub fn by_peer(p2p: usize, ev: &Event) -> usize {
    if ev.is_collective() {
        COLLECTIVE
    } else {
        p2p
    }
}

/// A send's charge: CPU clock `c` and NIC clock `n` of the sender `src`
/// (before it: `wait.before` and `n_before`), for a message of `size`
/// bytes to `dst` that left at `depart`. `waited_for`: the clocks the send
/// waited for, if it was posted when they freed up rather than when the
/// current event ran.
#[derive(Debug, Clone, Copy)]
pub struct Send {
    pub c: usize,
    pub n: usize,
    pub n_before: Time,
    pub depart: Time,
    pub waited_for: Option<[usize; 2]>,
    pub src: u32,
    pub dst: u32,
    pub size: u64,
}

/// A message (or a handshake's control message) just queued for its
/// receiver with `stamp`: the sender's CPU busy over `cpu` (None for a
/// control message, whose overhead is not drawn), the message in flight
/// over `flight`; `tag` and `bytes` as shown.
#[derive(Debug, Clone, Copy)]
pub struct Message {
    pub stamp: u64,
    pub src: u32,
    pub dst: u32,
    pub cpu: Option<(Time, Time)>,
    pub flight: (Time, Time),
    pub tag: u32,
    pub bytes: u64,
}

/// A message of `size` bytes from `src` handled by `dst`'s CPU (clock `c`)
/// and, unless it landed through a DMA NIC first, its NIC (clock `n`).
#[derive(Debug, Clone, Copy)]
pub struct Receipt {
    pub c: usize,
    pub n: Option<usize>,
    pub src: u32,
    pub dst: u32,
    pub size: u64,
    pub tag: u32,
    /// Its bytes came as a flow: the receiver pays o + (s − 1)·O and g, not G.
    pub flowed: bool,
}

/// No link: a flow held back by its own cap (its NIC's 1/G).
pub const NO_LINK: u32 = u32::MAX;

/// What a flow that ended lost to its links: its time beyond running alone
/// (ps) and the link that cost it the most of that (else, if a link rather
/// than its NIC set its pace alone, the narrowest; NO_LINK if neither).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Loss {
    pub delay_ps: Time,
    pub link: u32,
    /// That link is a receiving NIC (its bandwidth is 1/G too).
    pub nic_in: bool,
    /// Its duration alone on its route (ps, rounded up as its end is), and as it ran.
    pub alone_ps: Time,
    pub duration_ps: Time,
}

/// An observer of the engine (see the module notes). `P`: the program run.
/// What an observer hands back after the run is its own (probes/).
#[allow(unused_variables)]
pub trait Probe {
    /// Before the run: the engine is built, nothing has happened.
    #[inline(always)]
    fn attach<P: Program>(&mut self, v: &View<P>) {}

    /// The queue's next event `ev` begins (`v.now` is its time).
    #[inline(always)]
    fn begin<P: Program>(&mut self, v: &View<P>, ev: &Event) {}

    /// `soon` is a few events ahead (nearer if `near`): a hint to bring
    /// what it will read into cache.
    #[inline(always)]
    fn prefetch<P: Program>(&self, v: &View<P>, soon: &Event, near: bool) {}

    /// Rank `rank`'s initial ops are about to run, at time 0.
    #[inline(always)]
    fn rank_started(&mut self, rank: u32) {}

    /// An op of `rank` was queued with `stamp` for when its clocks are free.
    #[inline(always)]
    fn issued<P: Program>(&mut self, v: &View<P>, stamp: u64, rank: u32, op: &ReadyOp) {}

    /// An event was queued again, with `stamp`, for the current time.
    #[inline(always)]
    fn requeued_now(&mut self, stamp: u64) {}

    /// An event parked behind a memory-bound computation on CPU clock `c`
    /// was queued again with `stamp`, now that it ended.
    #[inline(always)]
    fn released<P: Program>(&mut self, v: &View<P>, stamp: u64, c: usize) {}

    /// A computation of `work` ps from `wait.at` set CPU clock `c`.
    #[inline(always)]
    fn computed<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, work: Time) -> Time {
        0
    }

    /// A test (an MPI_Test-like probe op) cost nothing but detours on CPU clock `c`.
    #[inline(always)]
    fn tested<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize) -> Time {
        0
    }

    /// A send's overheads were charged from `wait.at` (see [`Send`]).
    #[inline(always)]
    fn sent<P: Program>(&mut self, v: &View<P>, wait: Wait, send: Send, p: &LogGOPS) -> Time {
        0
    }

    /// A handshake's control message from `wait.rank` to `to` cost o on CPU clock `c`.
    #[inline(always)]
    fn control_sent<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, to: u32, p: &LogGOPS) -> Time {
        0
    }

    /// A get rendezvous's data left NIC clock `n` of `src` at `depart`, read
    /// by `dst` (the current event is the read request): no CPU time.
    #[inline(always)]
    fn pulled<P: Program>(&mut self, v: &View<P>, n: usize, depart: Time, p: &LogGOPS, msg: (u32, u32, u64)) {}

    /// A control message from `wait.on` cost its receiver o on CPU clock `c`.
    #[inline(always)]
    fn control_received<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, p: &LogGOPS) -> Time {
        0
    }

    /// The message from `src` to `dst` flew `latency` (L, regime-scaled),
    /// then `hops` ps of per-hop latency and `extra` ps of platform
    /// penalties (stalls, waiting for the node's link).
    #[inline(always)]
    fn flew<P: Program>(&mut self, v: &View<P>, (src, dst): (u32, u32), latency: Time, hops: Time, extra: Time) {}

    /// A message was queued for its receiver (see [`Message`]).
    #[inline(always)]
    fn message_queued<P: Program>(&mut self, v: &View<P>, m: Message) {}

    /// The message whose send (and `flew`) was just told moves its bytes as
    /// flow `id` over shared links, instead of being queued now.
    #[inline(always)]
    fn flow_started<P: Program>(&mut self, v: &View<P>, id: u32, m: &Message) {}

    /// The message whose send was just told leaves its NIC later than now:
    /// its flow starts then, from `slot` (`flow_leaves`).
    #[inline(always)]
    fn flow_waits<P: Program>(&mut self, v: &View<P>, slot: u32) {}

    /// The send waiting in `slot` leaves now: its flow is started next
    /// (`flow_started`), or its message queued.
    #[inline(always)]
    fn flow_leaves<P: Program>(&mut self, v: &View<P>, slot: u32) {}

    /// Flow `id` ended, having lost `loss` to sharing; its message is queued next.
    #[inline(always)]
    fn flow_ended<P: Program>(&mut self, v: &View<P>, id: u32, loss: Loss) {}

    /// A rendezvous send of `wait.rank` completed as its receiver matched
    /// it: its CPU clock `c` and NIC clock `n` (before: `wait.before` and
    /// `n_before`) moved up to `wait.at`.
    #[inline(always)]
    fn rendezvous_done<P: Program>(&mut self, v: &View<P>, wait: Wait, (c, n): (usize, usize), n_before: Time) -> Time {
        0
    }

    /// A message's receiving overheads were charged (see [`Receipt`]).
    #[inline(always)]
    fn received<P: Program>(&mut self, v: &View<P>, wait: Wait, r: Receipt, p: &LogGOPS) -> Time {
        0
    }

    /// A DMA NIC took a message of `size` bytes from `src` to `dst` (NIC
    /// clock `n`); the CPU's part is queued with `stamp`.
    #[inline(always)]
    fn landing<P: Program>(&mut self, v: &View<P>, stamp: u64, n: usize, p: &LogGOPS, (src, dst, size): (u32, u32, u64)) {}

    /// A memory-bound computation of `bytes` started on `cpu` of `wait.rank`.
    #[inline(always)]
    fn mem_started<P: Program>(&mut self, v: &View<P>, wait: Wait, cpu: u8, bytes: u64) -> Time {
        0
    }

    /// It ended at `end` on CPU clock `c` (which holds that end with any
    /// detours after it); it started at `start`, and alone it would have
    /// run at `core_bytes_per_ps`.
    #[inline(always)]
    fn mem_finished<P: Program>(
        &mut self,
        v: &View<P>,
        (rank, cpu, c): (u32, u8, usize),
        (start, end): (Time, Time),
        core_bytes_per_ps: f64,
    ) {
    }
}

/// No observer: every call compiles away.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProbe;

impl Probe for NoProbe {}

/// A probe that may be off for a run (decided when the run starts).
impl<A: Probe> Probe for Option<A> {
    #[inline(always)]
    fn attach<P: Program>(&mut self, v: &View<P>) {
        if let Some(a) = self {
            a.attach(v)
        }
    }
    #[inline(always)]
    fn begin<P: Program>(&mut self, v: &View<P>, ev: &Event) {
        if let Some(a) = self {
            a.begin(v, ev)
        }
    }
    #[inline(always)]
    fn prefetch<P: Program>(&self, v: &View<P>, soon: &Event, near: bool) {
        if let Some(a) = self {
            a.prefetch(v, soon, near)
        }
    }
    #[inline(always)]
    fn rank_started(&mut self, rank: u32) {
        if let Some(a) = self {
            a.rank_started(rank)
        }
    }
    #[inline(always)]
    fn issued<P: Program>(&mut self, v: &View<P>, stamp: u64, rank: u32, op: &ReadyOp) {
        if let Some(a) = self {
            a.issued(v, stamp, rank, op)
        }
    }
    #[inline(always)]
    fn requeued_now(&mut self, stamp: u64) {
        if let Some(a) = self {
            a.requeued_now(stamp)
        }
    }
    #[inline(always)]
    fn released<P: Program>(&mut self, v: &View<P>, stamp: u64, c: usize) {
        if let Some(a) = self {
            a.released(v, stamp, c)
        }
    }
    #[inline(always)]
    fn computed<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, work: Time) -> Time {
        self.as_mut().map_or(0, |a| a.computed(v, wait, c, work))
    }
    #[inline(always)]
    fn tested<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize) -> Time {
        self.as_mut().map_or(0, |a| a.tested(v, wait, c))
    }
    #[inline(always)]
    fn sent<P: Program>(&mut self, v: &View<P>, wait: Wait, send: Send, p: &LogGOPS) -> Time {
        self.as_mut().map_or(0, |a| a.sent(v, wait, send, p))
    }
    #[inline(always)]
    fn control_sent<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, to: u32, p: &LogGOPS) -> Time {
        self.as_mut().map_or(0, |a| a.control_sent(v, wait, c, to, p))
    }
    #[inline(always)]
    fn pulled<P: Program>(&mut self, v: &View<P>, n: usize, depart: Time, p: &LogGOPS, msg: (u32, u32, u64)) {
        if let Some(a) = self.as_mut() {
            a.pulled(v, n, depart, p, msg)
        }
    }
    #[inline(always)]
    fn control_received<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, p: &LogGOPS) -> Time {
        self.as_mut().map_or(0, |a| a.control_received(v, wait, c, p))
    }
    #[inline(always)]
    fn flew<P: Program>(&mut self, v: &View<P>, ends: (u32, u32), latency: Time, hops: Time, extra: Time) {
        if let Some(a) = self {
            a.flew(v, ends, latency, hops, extra)
        }
    }
    #[inline(always)]
    fn message_queued<P: Program>(&mut self, v: &View<P>, m: Message) {
        if let Some(a) = self {
            a.message_queued(v, m)
        }
    }
    #[inline(always)]
    fn flow_started<P: Program>(&mut self, v: &View<P>, id: u32, m: &Message) {
        if let Some(a) = self {
            a.flow_started(v, id, m)
        }
    }
    #[inline(always)]
    fn flow_waits<P: Program>(&mut self, v: &View<P>, slot: u32) {
        if let Some(a) = self {
            a.flow_waits(v, slot)
        }
    }
    #[inline(always)]
    fn flow_leaves<P: Program>(&mut self, v: &View<P>, slot: u32) {
        if let Some(a) = self {
            a.flow_leaves(v, slot)
        }
    }
    #[inline(always)]
    fn flow_ended<P: Program>(&mut self, v: &View<P>, id: u32, loss: Loss) {
        if let Some(a) = self {
            a.flow_ended(v, id, loss)
        }
    }
    #[inline(always)]
    fn rendezvous_done<P: Program>(&mut self, v: &View<P>, wait: Wait, clocks: (usize, usize), n_before: Time) -> Time {
        self.as_mut().map_or(0, |a| a.rendezvous_done(v, wait, clocks, n_before))
    }
    #[inline(always)]
    fn received<P: Program>(&mut self, v: &View<P>, wait: Wait, r: Receipt, p: &LogGOPS) -> Time {
        self.as_mut().map_or(0, |a| a.received(v, wait, r, p))
    }
    #[inline(always)]
    fn landing<P: Program>(&mut self, v: &View<P>, stamp: u64, n: usize, p: &LogGOPS, msg: (u32, u32, u64)) {
        if let Some(a) = self {
            a.landing(v, stamp, n, p, msg)
        }
    }
    #[inline(always)]
    fn mem_started<P: Program>(&mut self, v: &View<P>, wait: Wait, cpu: u8, bytes: u64) -> Time {
        self.as_mut().map_or(0, |a| a.mem_started(v, wait, cpu, bytes))
    }
    #[inline(always)]
    fn mem_finished<P: Program>(&mut self, v: &View<P>, at: (u32, u8, usize), span: (Time, Time), core_bytes_per_ps: f64) {
        if let Some(a) = self {
            a.mem_finished(v, at, span, core_bytes_per_ps)
        }
    }
}

/// Two probes on one run, `A` told first. Both see the same wait, so
/// either's idle time is the wait's (the larger is taken: a probe that
/// does not look at waits says 0).
impl<A: Probe, B: Probe> Probe for (A, B) {
    #[inline(always)]
    fn attach<P: Program>(&mut self, v: &View<P>) {
        self.0.attach(v);
        self.1.attach(v);
    }
    #[inline(always)]
    fn begin<P: Program>(&mut self, v: &View<P>, ev: &Event) {
        self.0.begin(v, ev);
        self.1.begin(v, ev);
    }
    #[inline(always)]
    fn prefetch<P: Program>(&self, v: &View<P>, soon: &Event, near: bool) {
        self.0.prefetch(v, soon, near);
        self.1.prefetch(v, soon, near);
    }
    #[inline(always)]
    fn rank_started(&mut self, rank: u32) {
        self.0.rank_started(rank);
        self.1.rank_started(rank);
    }
    #[inline(always)]
    fn issued<P: Program>(&mut self, v: &View<P>, stamp: u64, rank: u32, op: &ReadyOp) {
        self.0.issued(v, stamp, rank, op);
        self.1.issued(v, stamp, rank, op);
    }
    #[inline(always)]
    fn requeued_now(&mut self, stamp: u64) {
        self.0.requeued_now(stamp);
        self.1.requeued_now(stamp);
    }
    #[inline(always)]
    fn released<P: Program>(&mut self, v: &View<P>, stamp: u64, c: usize) {
        self.0.released(v, stamp, c);
        self.1.released(v, stamp, c);
    }
    #[inline(always)]
    fn computed<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, work: Time) -> Time {
        self.0.computed(v, wait, c, work).max(self.1.computed(v, wait, c, work))
    }
    #[inline(always)]
    fn tested<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize) -> Time {
        self.0.tested(v, wait, c).max(self.1.tested(v, wait, c))
    }
    #[inline(always)]
    fn sent<P: Program>(&mut self, v: &View<P>, wait: Wait, send: Send, p: &LogGOPS) -> Time {
        self.0.sent(v, wait, send, p).max(self.1.sent(v, wait, send, p))
    }
    #[inline(always)]
    fn control_sent<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, to: u32, p: &LogGOPS) -> Time {
        self.0.control_sent(v, wait, c, to, p).max(self.1.control_sent(v, wait, c, to, p))
    }
    #[inline(always)]
    fn pulled<P: Program>(&mut self, v: &View<P>, n: usize, depart: Time, p: &LogGOPS, msg: (u32, u32, u64)) {
        self.0.pulled(v, n, depart, p, msg);
        self.1.pulled(v, n, depart, p, msg);
    }
    #[inline(always)]
    fn control_received<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, p: &LogGOPS) -> Time {
        self.0.control_received(v, wait, c, p).max(self.1.control_received(v, wait, c, p))
    }
    #[inline(always)]
    fn flew<P: Program>(&mut self, v: &View<P>, ends: (u32, u32), latency: Time, hops: Time, extra: Time) {
        self.0.flew(v, ends, latency, hops, extra);
        self.1.flew(v, ends, latency, hops, extra);
    }
    #[inline(always)]
    fn message_queued<P: Program>(&mut self, v: &View<P>, m: Message) {
        self.0.message_queued(v, m);
        self.1.message_queued(v, m);
    }
    #[inline(always)]
    fn flow_started<P: Program>(&mut self, v: &View<P>, id: u32, m: &Message) {
        self.0.flow_started(v, id, m);
        self.1.flow_started(v, id, m);
    }
    #[inline(always)]
    fn flow_waits<P: Program>(&mut self, v: &View<P>, slot: u32) {
        self.0.flow_waits(v, slot);
        self.1.flow_waits(v, slot);
    }
    #[inline(always)]
    fn flow_leaves<P: Program>(&mut self, v: &View<P>, slot: u32) {
        self.0.flow_leaves(v, slot);
        self.1.flow_leaves(v, slot);
    }
    #[inline(always)]
    fn flow_ended<P: Program>(&mut self, v: &View<P>, id: u32, loss: Loss) {
        self.0.flow_ended(v, id, loss);
        self.1.flow_ended(v, id, loss);
    }
    #[inline(always)]
    fn rendezvous_done<P: Program>(&mut self, v: &View<P>, wait: Wait, clocks: (usize, usize), n_before: Time) -> Time {
        self.0.rendezvous_done(v, wait, clocks, n_before).max(self.1.rendezvous_done(v, wait, clocks, n_before))
    }
    #[inline(always)]
    fn received<P: Program>(&mut self, v: &View<P>, wait: Wait, r: Receipt, p: &LogGOPS) -> Time {
        self.0.received(v, wait, r, p).max(self.1.received(v, wait, r, p))
    }
    #[inline(always)]
    fn landing<P: Program>(&mut self, v: &View<P>, stamp: u64, n: usize, p: &LogGOPS, msg: (u32, u32, u64)) {
        self.0.landing(v, stamp, n, p, msg);
        self.1.landing(v, stamp, n, p, msg);
    }
    #[inline(always)]
    fn mem_started<P: Program>(&mut self, v: &View<P>, wait: Wait, cpu: u8, bytes: u64) -> Time {
        self.0.mem_started(v, wait, cpu, bytes).max(self.1.mem_started(v, wait, cpu, bytes))
    }
    #[inline(always)]
    fn mem_finished<P: Program>(&mut self, v: &View<P>, at: (u32, u8, usize), span: (Time, Time), core_bytes_per_ps: f64) {
        self.0.mem_finished(v, at, span, core_bytes_per_ps);
        self.1.mem_finished(v, at, span, core_bytes_per_ps);
    }
}
