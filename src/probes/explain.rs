//! Critical-path attribution (`[record] explain`, `--explain`).
//!
//! Every time the engine computes (when a CPU or NIC is next free, when a
//! queued event runs) carries the path that produced it: the picoseconds it
//! owes to each cause and how many times it crossed each LogGOPS parameter.
//! The engine combines times only by adding a cost and by taking a maximum,
//! so a path is extended by a cost's parts and, at a maximum, taken from the
//! latest input. The makespan's path then splits it exactly (the causes sum
//! to it in integer picoseconds), and its counts are the derivatives:
//! T(L + δ) = T(L) + δ·count(L) until the next breakpoint, likewise for o
//! and g, and per byte for G and O.
//!
//! Where inputs tie, the causes come from the first of them and each count
//! is the largest among them: the one-sided derivative for an increase of
//! that parameter (the runtime is the maximum of the tied paths, so it grows
//! as fast as the fastest-growing of them).
//!
//! Counts do not follow a latency regime's multiplier or a platform's
//! per-hop terms (those are not L, o, g, G or O): with regimes the
//! breakdown still sums exactly but dT/dL is the count of messages, not
//! their scaled sum.

use super::{Findings, Message, Probe, Receipt, Report, Send, View, Wait};
use crate::engine::probe::{COLLECTIVE, LATE_RECEIVER, LATE_SENDER};
use crate::engine::{EvKind, Event, Mix, LISTS, MEM_BUSY};
use crate::network::LogGOPS;
use crate::prefetch::{prefetch, prefetch_whole};
use crate::program::{OpKind, Program, ReadyOp};
use crate::time::Time;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// The causes the makespan is split into, in [`Path::ps`] order.
pub const CAUSES: [&str; 7] = ["compute", "cpu_overhead", "nic_gap", "wire_latency", "penalty", "noise", "memory_contention"];
pub const COMPUTE: usize = 0;
pub const OVERHEAD: usize = 1;
pub const NIC: usize = 2;
pub const WIRE: usize = 3;
pub const PENALTY: usize = 4;
pub const NOISE: usize = 5;
pub const MEMORY: usize = 6;

/// The parameters counted (see [`Path::count`]): L, o and g in crossings,
/// G and O in bytes.
pub const PARAMS: [&str; 5] = ["L", "o", "g", "G", "O"];
const L: usize = 0;
const O_CPU: usize = 1;
const GAP: usize = 2;
const G_BYTE: usize = 3;
const O_BYTE: usize = 4;

/// The link classes counts are kept by (the platform's, see
/// `network::platform`): same socket, same node, other nodes.
pub const CLASSES: [&str; 3] = ["same_socket", "same_node", "other_node"];

/// 128 bytes, so that copying one is inlined rather than a call, aligned
/// to cache lines so that one takes two of them (arrays are otherwise only
/// 16-byte aligned, and a path would straddle three).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(align(64))]
pub struct Path {
    /// Picoseconds by cause ([`CAUSES`]); they sum to the path's time.
    pub ps: [Time; 7],
    /// Per link class ([`CLASSES`]): L, o and g crossed.
    crossings: [[u32; 3]; 3],
    /// Per link class: bytes paid G for.
    g_bytes: [u64; 3],
    /// Bytes paid O for, all classes together (kept per class, the path
    /// would not fit in 128 bytes).
    o_bytes: u64,
    /// The path's latest stretch on one rank (an index into
    /// [`Explain::hops`]; 0 before it reached any rank).
    hop: u32,
}

impl Path {
    /// `n` more of parameter `k` ([`PARAMS`]) in link class `class`.
    #[inline]
    fn add_count(&mut self, class: usize, k: usize, n: u64) {
        match k {
            G_BYTE => self.g_bytes[class] += n,
            O_BYTE => self.o_bytes += n,
            _ => self.crossings[class][k] = self.crossings[class][k].saturating_add(n as u32),
        }
    }

    /// How many of parameter `k` the path crossed in `class` (None for O,
    /// which is kept for all classes together).
    pub fn by_class(&self, class: usize, k: usize) -> Option<u64> {
        match k {
            G_BYTE => Some(self.g_bytes[class]),
            O_BYTE => None,
            _ => Some(self.crossings[class][k] as u64),
        }
    }

    /// How many of parameter `k` the path crossed, all classes together: dT/dθ.
    pub fn count(&self, k: usize) -> u64 {
        if k == O_BYTE {
            return self.o_bytes;
        }
        (0..CLASSES.len()).filter_map(|c| self.by_class(c, k)).sum()
    }

    pub fn total(&self) -> Time {
        self.ps.iter().sum()
    }

    /// `ps` more of `cause`.
    #[inline]
    fn add(&mut self, cause: usize, ps: Time) {
        self.ps[cause] += ps;
    }

    /// The per-byte share of a message of `size` bytes: (s−1) bytes.
    fn bytes(size: u64) -> u64 {
        size.saturating_sub(1)
    }

    /// A sender's CPU: o + (s−1)·O.
    fn send_cpu(&mut self, class: usize, p: &LogGOPS, size: u64) {
        self.add(OVERHEAD, p.send_cpu(size));
        self.add_count(class, O_CPU, 1);
        self.add_count(class, O_BYTE, Self::bytes(size));
    }

    /// A NIC, sending or receiving: g + (s−1)·G.
    fn nic(&mut self, class: usize, p: &LogGOPS, size: u64) {
        self.add(NIC, p.send_nic(size));
        self.add_count(class, GAP, 1);
        self.add_count(class, G_BYTE, Self::bytes(size));
    }

    /// A receiver's CPU: o + (s−1)·max(O, G) (both counted where they are
    /// equal). The per-byte part is the parameter's cause: (s−1)·G is the
    /// gap per byte even where the CPU pays it.
    fn recv_cpu(&mut self, class: usize, p: &LogGOPS, size: u64) {
        self.add(OVERHEAD, p.o_ps);
        self.add_count(class, O_CPU, 1);
        let per_byte = p.recv_cpu(size) - p.o_ps;
        self.add(if p.big_o_ps >= p.big_g_ps { OVERHEAD } else { NIC }, per_byte);
        if p.big_o_ps >= p.big_g_ps {
            self.add_count(class, O_BYTE, Self::bytes(size));
        }
        if p.big_g_ps >= p.big_o_ps {
            self.add_count(class, G_BYTE, Self::bytes(size));
        }
    }

    /// A receiver's CPU behind a DMA NIC: o + (s−1)·O.
    fn recv_cpu_dma(&mut self, class: usize, p: &LogGOPS, size: u64) {
        self.add(OVERHEAD, p.recv_cpu_per_byte_o(size));
        self.add_count(class, O_CPU, 1);
        self.add_count(class, O_BYTE, Self::bytes(size));
    }

    /// Whatever of [start, end) a CPU charge of `work` lost to detours.
    fn noise(&mut self, start: Time, work: Time, end: Time) {
        self.add(NOISE, end.saturating_sub(start.saturating_add(work)));
    }

    /// No count any more: what came before no longer moves the time.
    fn restart_counts(&mut self) {
        *self = Path { ps: self.ps, hop: self.hop, ..Path::default() };
    }

    /// Each count raised to `other`'s where that is larger (a tie).
    fn max_counts(&mut self, other: &Path) {
        // (indexed loops: the compiler unrolls them, not the flattened iterators)
        for class in 0..CLASSES.len() {
            for k in 0..3 {
                self.crossings[class][k] = self.crossings[class][k].max(other.crossings[class][k]);
            }
            self.g_bytes[class] = self.g_bytes[class].max(other.g_bytes[class]);
        }
        self.o_bytes = self.o_bytes.max(other.o_bytes);
    }
}

/// The path of the latest of `inputs` (time, path); see the module notes for ties.
/// Copies one path, however many inputs (a clock given twice is one input):
/// the tied ones are only compared.
pub fn latest(inputs: &[(Time, &Path)]) -> Option<Path> {
    let (&(mut best_time, mut best), rest) = inputs.split_first()?;
    let mut first_tie = None;
    for (k, &(t, p)) in rest.iter().enumerate() {
        if t > best_time {
            (best_time, best, first_tie) = (t, p, None);
        } else if t == best_time && !std::ptr::eq(p, best) && first_tie.is_none() {
            first_tie = Some(k);
        }
    }
    let mut path = *best;
    if let Some(k) = first_tie {
        for &(t, p) in &rest[k..] {
            if t == best_time && !std::ptr::eq(p, best) {
                path.max_counts(p);
            }
        }
    }
    Some(path)
}

/// Where the paths live while a run is explained.
#[derive(Default)]
pub struct Explain {
    /// Per rank, one path per CPU and NIC clock (the engine's clock layout
    /// without the two match-list heads).
    clocks: Vec<Path>,
    /// The paths of queued (or waiting) events, by stamp.
    events: EventPaths,
    /// The path of the event being processed, at its time, if `has_cur`
    /// (not for a memory computation's end, whose path is its start's).
    /// Not an `Option`: aligned, that would take 192 bytes, copied by a call.
    cur: Path,
    has_cur: bool,
    /// The clock (an index into `clocks`) whose path `cur` is a copy of, if
    /// one is and that clock has not been set since (NO_CLOCK otherwise): the
    /// two then tie without a count to compare.
    cur_clock: usize,
    /// Engine clock indices to ranks, without a division.
    stride: Divisor,
    /// Scratch: the path of the message being sent.
    msg: Path,
    /// Memory-bound computations running: their start's path and bytes.
    mem: HashMap<(u32, u8), (Path, u64), BuildHasherDefault<Mix>>,
    /// Per rank, what it waited for.
    pub waits: Vec<Waits>,
    /// Where each path entered each rank it went through: a tree, each hop
    /// naming the one it came from. Hops no path leads to any more are
    /// dropped when the tree has doubled (`collect`).
    hops: Vec<Hop>,
    /// Each hop's rank, kept apart from the hop: read at every event, in
    /// an array small enough to stay in cache.
    hop_rank: Vec<u32>,
    /// The tree's size at which to collect.
    collect_at: usize,
    /// Hops kept at most after a collection (beyond it the oldest go).
    hop_budget: usize,
    /// The current event's path came from another rank: its hop there is
    /// made only when a clock takes the path (a message that waits for a
    /// busy CPU does not become part of any route).
    arriving: Option<Arrival>,
}

/// The paths of queued (or waiting) events, in slots reused last freed
/// first (the slot just freed by the event being processed is the one in
/// cache when it queues the next). Stamps are handed out in order and most
/// stored paths are short-lived, so a stamp finds its slot in a table
/// indexed by its low bits (`direct`), which the engine prefetches for the
/// events about to run; a stamp whose entry there is taken by a live one
/// goes to a hash table (`overflow`).
struct EventPaths {
    direct: Vec<Entry>,
    /// log2 of the direct table's size.
    bits: u32,
    overflow: HashMap<u64, u32, BuildHasherDefault<Mix>>,
    slots: Vec<Path>,
    free: Vec<u32>,
}

/// Division by a number fixed for the run (the engine's clocks per rank),
/// by a multiplication: a division instruction takes tens of cycles, and
/// explaining divides at every clock it reads or sets.
#[derive(Debug, Clone, Copy, Default)]
struct Divisor {
    d: u64,
    /// ⌈2^64 / d⌉: ⌊n·m / 2^64⌋ = ⌊n / d⌋ for every n < 2^64 / d (the error
    /// n·(m − 2^64/d)/2^64 stays below 1/d), far beyond any clock index.
    m: u64,
}

impl Divisor {
    fn new(d: usize) -> Self {
        let d = d.max(1) as u64;
        let m = if d == 1 { 0 } else { u64::MAX / d + 1 };
        Divisor { d, m }
    }

    #[inline(always)]
    fn div(self, n: usize) -> usize {
        let q = if self.d == 1 { n as u64 } else { ((n as u128 * self.m as u128) >> 64) as u64 };
        debug_assert_eq!(q, n as u64 / self.d);
        q as usize
    }
}

const NO_CLOCK: usize = usize::MAX;

/// A direct table entry: the slot of the stamp whose low bits lead here,
/// and the stamp's other bits (`tag`). Stamps take 40 bits (queue.rs) and
/// the table at least 2^8 entries, so the tag names the stamp exactly.
#[derive(Clone, Copy)]
struct Entry {
    slot: u32,
    tag: u32,
}

const FREE: Entry = Entry { slot: u32::MAX, tag: 0 };

impl Default for EventPaths {
    fn default() -> Self {
        EventPaths::new(1)
    }
}

impl EventPaths {
    /// `entries`: the size of the direct table (a power of two).
    fn new(entries: usize) -> Self {
        let bits = entries.trailing_zeros();
        EventPaths { direct: vec![FREE; entries], bits, overflow: HashMap::default(), slots: Vec::new(), free: Vec::new() }
    }

    #[inline(always)]
    fn entry(&self, stamp: u64) -> (usize, u32) {
        (stamp as usize & (self.direct.len() - 1), (stamp >> self.bits) as u32)
    }

    /// The slot holding `stamp`'s path, if any, and whether the direct
    /// table names it.
    #[inline(always)]
    fn find(&self, stamp: u64) -> Option<(u32, bool)> {
        let (e, tag) = self.entry(stamp);
        let Entry { slot, tag: t } = self.direct[e];
        if slot != FREE.slot && t == tag {
            return Some((slot, true));
        }
        if self.overflow.is_empty() {
            return None;
        }
        self.overflow.get(&stamp).map(|&i| (i, false))
    }

    fn insert(&mut self, stamp: u64, path: Path) {
        debug_assert!(stamp >> self.bits >> 32 == 0, "stamp {stamp} beyond the tags");
        if let Some((i, _)) = self.find(stamp) {
            self.slots[i as usize] = path;
            return;
        }
        let i = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Path::default());
            (self.slots.len() - 1) as u32
        });
        self.slots[i as usize] = path;
        let (e, tag) = self.entry(stamp);
        if self.direct[e].slot == FREE.slot {
            self.direct[e] = Entry { slot: i, tag };
        } else {
            self.overflow.insert(stamp, i);
        }
    }

    /// Frees `stamp`'s slot and returns it: its path stays there, to be
    /// read in place, until the next `insert`.
    #[inline(always)]
    fn remove(&mut self, stamp: u64) -> Option<&Path> {
        let (i, direct) = self.find(stamp)?;
        if direct {
            let (e, _) = self.entry(stamp);
            self.direct[e] = FREE;
        } else {
            self.overflow.remove(&stamp);
        }
        self.free.push(i);
        Some(&self.slots[i as usize])
    }

    /// For an event `soon` places ahead: its entry in the direct table
    /// (far ahead), or the path that entry names (nearer).
    #[inline(always)]
    fn prefetch_entry(&self, stamp: u64) {
        prefetch(&self.direct, self.entry(stamp).0);
    }
    #[inline(always)]
    fn prefetch_path(&self, stamp: u64) {
        let slot = self.direct[self.entry(stamp).0].slot;
        if slot != FREE.slot {
            prefetch_whole(&self.slots, slot as usize);
        }
    }

    fn values(&self) -> impl Iterator<Item = &Path> {
        self.live().map(|i| &self.slots[i])
    }

    fn renumber(&mut self, f: impl Fn(&mut Path)) {
        let live: Vec<usize> = self.live().collect();
        for i in live {
            f(&mut self.slots[i]);
        }
    }

    /// The slots in use.
    fn live(&self) -> impl Iterator<Item = usize> + '_ {
        let direct = self.direct.iter().map(|e| e.slot).filter(|&i| i != FREE.slot);
        direct.chain(self.overflow.values().copied()).map(|i| i as usize)
    }

    fn bytes(&self) -> usize {
        self.direct.capacity() * std::mem::size_of::<Entry>()
            + self.overflow.capacity() * 13
            + self.slots.capacity() * std::mem::size_of::<Path>()
            + self.free.capacity() * 4
    }
}

/// A path arriving on `rank` from hop `from` with causes `at`; `hop` once made.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    rank: u32,
    from: u32,
    at: [Time; 7],
    hop: Option<u32>,
}

/// A path's arrival on a rank: the hop it came from, and its causes at
/// that moment (they sum to the arrival time). The rank is kept apart
/// ([`Explain::hop_rank`]).
#[derive(Debug, Clone, Copy)]
struct Hop {
    from: u32,
    at: [Time; 7],
    /// The iteration the rank was in (UNKNOWN where the program does not say).
    iteration: u32,
}

const UNKNOWN: u32 = u32::MAX;
/// The root hop: no rank yet.
const NOWHERE: Hop = Hop { from: 0, at: [0; 7], iteration: UNKNOWN };
/// The root hop's rank.
const NO_RANK: u32 = u32::MAX;
/// Hops kept at least (a collection costs a pass over them); beyond it two
/// per rank. Collections run when the tree holds twice the budget (in tests,
/// twice what the last one kept, to collect early and often).
const MIN_HOP_BUDGET: usize = 1 << 15;
const HOPS_PER_RANK: usize = 2;
/// Entries of the events' direct table per rank (rounded up to a power of two).
const DIRECT_PER_RANK: usize = 4;

#[cfg(test)]
thread_local! {
    /// Tests: collections run so far on this thread, whether to skip them,
    /// and a hop budget to use instead of the engine's (if not 0).
    static COLLECTIONS: std::cell::Cell<(u32, bool, usize)> = const { std::cell::Cell::new((0, false, 0)) };
}
/// Room for the hops one event may add past the threshold (one per clock it
/// sets): the tree grows by doubling, but never past the threshold and this.
const HOPS_PER_EVENT: usize = 1024;

/// One stretch of the critical path on one rank: from `start` (ps) to
/// `end`, with what it spent there by cause ([`CAUSES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub rank: u32,
    /// The rank's iteration when the path arrived, if the program counts them.
    pub iteration: Option<u32>,
    pub start: Time,
    pub end: Time,
    pub ps: [Time; 7],
}

/// The makespan's path: its split and the derivatives, with the rank that
/// finished last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explained {
    pub makespan: Time,
    pub last_rank: u32,
    pub path: Path,
    /// Bytes the paths took at most (kept beside the engine's own).
    pub peak_bytes: usize,
    /// Per rank, what it waited for.
    pub waits: Vec<Waits>,
    /// The path's route through the ranks, in time order.
    pub route: Vec<Segment>,
}

/// Bytes per rank explaining adds (for the memory estimate made before the
/// run): a path per CPU and NIC clock (three with one CPU and one NIC), the
/// wait counters, the events' direct table (rounded up to a power of two:
/// at most twice its entries) and the paths of queued events with their
/// free-list entries (at most one per rank at once on the bench cases:
/// allow 4), and the route's hops (collected at twice their budget).
pub fn explain_bytes_per_rank() -> u128 {
    let path = std::mem::size_of::<Path>();
    let hops = 2 * HOPS_PER_RANK * (std::mem::size_of::<Hop>() + 4);
    let events = 2 * DIRECT_PER_RANK * std::mem::size_of::<Entry>() + 4 * (path + 4);
    (4 * path + std::mem::size_of::<Waits>() + events + hops) as u128
}

/// What one rank waited for: CPU idle time ended by a message's arrival
/// (a late sender), by a receiver matching its rendezvous send (a late
/// receiver), by either inside a collective (collective imbalance), or by
/// anything else (its NIC, another CPU's work), with the longest single
/// wait and the rank it waited on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Waits {
    pub late_sender: Time,
    pub late_receiver: Time,
    /// Ended by a collective's message or handshake: collective imbalance.
    pub collective: Time,
    pub other: Time,
    pub longest: Time,
    /// The rank the longest wait was on (the rank itself for "other").
    pub longest_on: u32,
}

impl Explain {
    fn bytes(&self) -> usize {
        let path = std::mem::size_of::<Path>();
        self.hops.capacity() * (std::mem::size_of::<Hop>() + 4)
            + self.clocks.capacity() * path
            + self.events.bytes()
            + self.mem.capacity() * (path + 24)
            + self.waits.capacity() * std::mem::size_of::<Waits>()
    }
}

/// Explaining as a probe: each call extends the paths of the clocks the
/// engine just set (the heavy work out of line, so that the engine's
/// handlers stay small).
impl Probe for Explain {
    fn attach<P: Program>(&mut self, v: &View<P>) {
        self.init(v);
    }
    #[inline(always)]
    fn begin<P: Program>(&mut self, v: &View<P>, ev: &Event) {
        self.begin_event(v, ev);
    }
    #[inline(always)]
    fn prefetch<P: Program>(&self, v: &View<P>, soon: &Event, near: bool) {
        self.prefetch_for(v, soon, near);
    }
    #[inline(always)]
    fn rank_started(&mut self, rank: u32) {
        // events run straight away at start-up take time 0's empty path, on that rank
        self.cur = Path { hop: 1 + rank, ..Path::default() };
        self.has_cur = true;
        self.cur_clock = NO_CLOCK;
    }
    #[inline(always)]
    fn issued<P: Program>(&mut self, v: &View<P>, stamp: u64, rank: u32, op: &ReadyOp) {
        self.issue(v, stamp, v.op_clocks(rank, op), op.kind == OpKind::Recv);
    }
    #[inline(always)]
    fn requeued_now(&mut self, stamp: u64) {
        // it takes the current event's path (if it has one; else its clocks' when it runs)
        if self.has_cur {
            self.store(stamp, self.cur);
        }
    }
    fn released<P: Program>(&mut self, v: &View<P>, stamp: u64, c: usize) {
        let path = self.latest(v, [(c, v.clocks[c]); 2], true);
        self.store(stamp, path);
    }
    #[inline(always)]
    fn computed<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, work: Time) -> Time {
        let idle = self.wait(wait);
        self.compute(v, c, wait.at, work);
        idle
    }
    #[inline(always)]
    fn tested<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize) -> Time {
        self.computed(v, wait, c, 0)
    }
    #[inline(always)]
    fn sent<P: Program>(&mut self, v: &View<P>, wait: Wait, s: Send, p: &LogGOPS) -> Time {
        // posted when its clocks freed up: the latest of them, as they were
        let before = |i: usize| if i == s.c { wait.before } else { s.n_before };
        let base = match s.waited_for {
            None => self.cur_path(),
            Some([a, b]) => self.latest(v, [(a, before(a)), (b, before(b))], false),
        };
        let idle = self.wait(wait);
        self.send(v, base, (s.c, s.n), (wait.at, s.depart), p, (s.src, s.dst, s.size));
        idle
    }
    #[inline(always)]
    fn control_sent<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, to: u32, p: &LogGOPS) -> Time {
        // it was sent at the later of the CPU's clock and now
        let base = self.latest(v, [(c, wait.before); 2], true);
        let idle = self.wait(wait);
        self.control(v, base, c, wait.at, p, (wait.rank, to));
        idle
    }
    #[inline(always)]
    fn control_received<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, p: &LogGOPS) -> Time {
        let idle = self.wait(wait);
        self.control_in(v, c, p, (wait.on, wait.rank));
        idle
    }
    #[inline(always)]
    fn flew<P: Program>(&mut self, v: &View<P>, (src, dst): (u32, u32), latency: Time, hops: Time, extra: Time) {
        let class = v.net.class(src, dst);
        let m = &mut self.msg;
        m.add(WIRE, latency + hops);
        m.add_count(class, L, 1);
        m.add(PENALTY, extra);
    }
    #[inline(always)]
    fn message_queued<P: Program>(&mut self, _v: &View<P>, m: Message) {
        // it takes the path built for it (`send`, `control`, then `flew`)
        self.store(m.stamp, self.msg);
    }
    #[inline(always)]
    fn rendezvous_done<P: Program>(&mut self, v: &View<P>, wait: Wait, (c, n): (usize, usize), n_before: Time) -> Time {
        self.complete(v, wait, (c, n), n_before)
    }
    #[inline(always)]
    fn received<P: Program>(&mut self, v: &View<P>, wait: Wait, r: Receipt, p: &LogGOPS) -> Time {
        let idle = self.wait(wait);
        match r.n {
            Some(n) => self.receive(v, (r.c, n), p, (r.src, r.dst, r.size)),
            None => self.landed(v, r.c, p, (r.src, r.dst, r.size)),
        }
        idle
    }
    #[inline(always)]
    fn landing<P: Program>(&mut self, v: &View<P>, stamp: u64, n: usize, p: &LogGOPS, msg: (u32, u32, u64)) {
        let path = self.land(v, n, p, msg);
        self.store(stamp, path);
    }
    fn mem_started<P: Program>(&mut self, _v: &View<P>, wait: Wait, cpu: u8, bytes: u64) -> Time {
        let idle = self.wait(wait);
        let start = self.cur().copied().unwrap_or_default();
        self.mem.insert((wait.rank, cpu), (start, bytes));
        idle
    }
    #[inline(always)]
    fn mem_finished<P: Program>(&mut self, v: &View<P>, at: (u32, u8, usize), span: (Time, Time), core_bytes_per_ps: f64) {
        self.mem_end(v, at, span, core_bytes_per_ps);
    }
}

impl Report for Explain {
    fn report<P: Program>(&mut self, v: &View<P>, out: &mut Findings) {
        out.explained = Some(self.explanation(v));
    }
}

impl Explain {
    /// Keeps the critical path from now on (before the run starts).
    fn init<P: Program>(&mut self, v: &View<P>) {
        let stride = v.layout.stride;
        let per_rank = stride - LISTS;
        let ranks = v.num_ranks() as usize;
        // every clock starts on its rank, at hop 1 + rank
        let clocks = (0..ranks * per_rank).map(|i| Path { hop: (1 + i / per_rank) as u32, ..Path::default() });
        let hop_budget = MIN_HOP_BUDGET.max(HOPS_PER_RANK * ranks);
        #[cfg(test)]
        let hop_budget = match COLLECTIONS.get().2 {
            0 => hop_budget,
            b => b,
        };
        *self = Explain {
            clocks: clocks.collect(),
            waits: vec![Waits::default(); ranks],
            hops: Vec::with_capacity(1 + ranks + HOPS_PER_EVENT),
            hop_rank: Vec::with_capacity(1 + ranks + HOPS_PER_EVENT),
            // tests: a few entries, so that stamps often overflow
            events: EventPaths::new(if cfg!(test) { 4 } else { (DIRECT_PER_RANK * ranks).next_power_of_two().max(1 << 8) }),
            collect_at: if cfg!(test) { 64 } else { 2 * hop_budget },
            hop_budget,
            cur_clock: NO_CLOCK,
            stride: Divisor::new(stride),
            ..Default::default()
        };
        self.push_hop(NO_RANK, NOWHERE);
        for rank in 0..ranks as u32 {
            self.push_hop(rank, Hop { iteration: v.program.iteration(rank).unwrap_or(UNKNOWN), ..NOWHERE });
        }
    }

    /// Brings into cache what the event `soon` is about to read: far ahead,
    /// its rank's clock paths and its entry in the events' table; nearer
    /// (`near`), the path that entry names.
    #[inline(always)]
    fn prefetch_for<P: Program>(&self, v: &View<P>, soon: &Event, near: bool) {
        if near {
            self.events.prefetch_path(soon.stamp());
            return;
        }
        self.events.prefetch_entry(soon.stamp());
        let rank = soon.rank;
        // its wait counters, added to when it ends a wait
        prefetch(&self.waits, rank as usize);
        let per_rank = v.layout.stride - LISTS;
        let first = rank as usize * per_rank;
        for i in first..first + per_rank {
            prefetch_whole(&self.clocks, i);
        }
    }

    /// The makespan's path.
    pub fn explanation<P: Program>(&self, v: &View<P>) -> Explained {
        let p = v.num_ranks();
        let makespan = (0..p).map(|r| v.finish_time(r)).max().unwrap_or(0);
        let last_rank = (0..p).find(|&r| v.finish_time(r) == makespan).unwrap_or(0);
        let inputs = (0..p)
            .flat_map(|r| (0..v.layout.ncpu).map(move |c| v.layout.o(r, c as u8)))
            .filter(|&i| v.clocks[i] == makespan)
            .map(|i| (v.clocks[i], self.clock(i)));
        let path = latest(&inputs.collect::<Vec<_>>()).unwrap_or_default();
        let route = self.route(&path);
        Explained { makespan, last_rank, path, peak_bytes: self.bytes(), waits: self.waits.clone(), route }
    }

    /// An event was popped: its path becomes the current one. Only events
    /// whose time no clock holds have their path stored (messages in flight,
    /// ops freed by another resource's event); for the others it is the
    /// path of the clocks they waited for, which still hold their time.
    #[inline(never)]
    fn begin_event<P: Program>(&mut self, v: &View<P>, ev: &Event) {
        if self.hops.len() >= self.collect_at {
            self.collect();
        }
        // a message queued for its receiver's free moment (`handled_from`)
        // carries its arrival's path: at a later time, it is the clocks'
        // (read in place: a stored path is 128 bytes, copied only into `cur`)
        if let Some(s) = self.events.remove(ev.stamp()).filter(|s| s.total() == ev.time) {
            // a path from the rank's own clocks is on that rank (`arrive` made
            // it so): only a stored one may come from elsewhere
            let elsewhere = self.hop_rank[s.hop as usize] != ev.rank;
            self.arriving = elsewhere.then_some(Arrival { rank: ev.rank, from: s.hop, at: s.ps, hop: None });
            self.cur = *s;
            self.has_cur = true;
            self.cur_clock = NO_CLOCK;
        } else {
            self.arriving = None;
            let mut cur_clock = NO_CLOCK;
            let cur = resources(v, ev).and_then(|[a, b]| {
                let at = [a, b].into_iter().filter(|&i| v.clocks[i] == ev.time);
                let mut slots = at.map(|i| self.slot(i));
                let first = slots.next()?;
                match slots.next().filter(|&s| s != first) {
                    // two clocks tie: their paths' counts are compared
                    Some(second) => latest(&[first, second].map(|s| (ev.time, &self.clocks[s]))),
                    None => {
                        cur_clock = first;
                        Some(self.clocks[first])
                    }
                }
            });
            self.has_cur = cur.is_some();
            self.cur_clock = cur_clock;
            if let Some(p) = cur {
                self.cur = p;
            }
        }
        debug_assert!(self.cur().is_none_or(|p| p.total() == ev.time), "path {:?} for {ev:?}", self.cur());
        debug_assert!(self.cur().is_none_or(|p| (self.hop_rank[p.hop as usize] != ev.rank) == self.arriving.is_some()));
    }

    /// An op was queued with `stamp` for the latest of clocks `idx` and
    /// now: its path is stored if now decided its time, or if the op runs at
    /// that time whatever its clocks do by then (`fixed`: a receive is
    /// posted without waiting for the CPU).
    fn issue<P: Program>(&mut self, v: &View<P>, stamp: u64, [a, b]: [usize; 2], fixed: bool) {
        if fixed || (v.clocks[a] <= v.now && v.clocks[b] <= v.now) {
            let path = self.latest(v, [(a, v.clocks[a]), (b, v.clocks[b])], true);
            self.store(stamp, path);
        }
    }

    /// A CPU's wait ended (see [`Wait`]): counted by what ended it. Returns
    /// the idle time (0 if none, or if the CPU was in a memory-bound
    /// computation, whose end is not a wait).
    fn wait(&mut self, w: Wait) -> Time {
        let idle = w.at.saturating_sub(w.before);
        if idle == 0 || w.before == MEM_BUSY {
            return 0;
        }
        let waits = &mut self.waits[w.rank as usize];
        match w.why {
            LATE_SENDER => waits.late_sender += idle,
            LATE_RECEIVER => waits.late_receiver += idle,
            COLLECTIVE => waits.collective += idle,
            _ => waits.other += idle,
        }
        if idle > waits.longest {
            (waits.longest, waits.longest_on) = (idle, w.on);
        }
        idle
    }

    /// The current event's path (at its time).
    fn cur_path(&self) -> Path {
        self.cur().copied().unwrap_or_default()
    }

    /// The path of the latest of clocks `inputs` (index, time: a clock's
    /// time may be the one it held before the charge the call is about)
    /// and, if `with_now`, the current event. A clock given twice is one input.
    fn latest<P: Program>(&self, v: &View<P>, [(a, ta), (b, tb)]: [(usize, Time); 2], with_now: bool) -> Path {
        let (sa, sb) = (self.slot(a), self.slot(b));
        // the current path copies a clock now at its time: the same input
        let is_cur = |slot: usize, t: Time| {
            let same = slot == self.cur_clock && t == v.now;
            debug_assert!(!same || self.cur() == Some(&self.clocks[slot]), "clock slot {slot} is not the current path");
            same
        };
        // (a clock given twice is the same path: `latest` takes it once)
        let inputs = [(ta, &self.clocks[sa]), (tb, &self.clocks[sb]), (v.now, &self.cur)];
        let with_now = with_now && self.has_cur && !is_cur(sa, ta) && !is_cur(sb, tb);
        latest(&inputs[..if with_now { 3 } else { 2 }]).unwrap_or_default()
    }

    /// Clock `i` is now `v.clocks[i]`, reached by `path`.
    fn set<P: Program>(&mut self, v: &View<P>, i: usize, mut path: Path) {
        let rank = self.stride.div(i) as u32;
        debug_assert_eq!(path.total(), v.clocks[i], "clock {i}");
        if self.slot(i) == self.cur_clock {
            self.cur_clock = NO_CLOCK;
        }
        let hops = self.hops.len();
        path.hop = self.arrive(&path, rank);
        *self.clock_mut(i) = path;
        if self.hops.len() > hops {
            // a new hop: the iteration the rank is in
            self.hops[path.hop as usize].iteration = v.program.iteration(rank).unwrap_or(UNKNOWN);
        }
    }

    /// `path`, the time a CPU charge on clock `c` was ready at `start`, as
    /// the start of that charge. Where a detour holds the CPU at `start`,
    /// the charge starts when the detour ends whenever it was ready, so no
    /// parameter before it moves the end: the counts (the slopes) start
    /// again from zero there, while the causes still sum to the time.
    fn charge_from<P: Program>(&self, v: &View<P>, path: &mut Path, c: usize, start: Time) {
        let rank = self.stride.div(c) as u32;
        if v.noise.charge_started_in_detour(rank, start) {
            path.restart_counts();
        }
    }

    /// A computation of `work` ps from the current event's time set CPU clock `c`.
    #[inline(never)]
    fn compute<P: Program>(&mut self, v: &View<P>, c: usize, start: Time, work: Time) {
        let mut path = self.cur_path();
        self.charge_from(v, &mut path, c, start);
        path.add(COMPUTE, work);
        path.noise(start, work, v.clocks[c]);
        self.set(v, c, path);
    }

    /// A send of `size` bytes from `src` to `dst`, posted at `start` (path
    /// `base`), set CPU clock `c` and NIC clock `n`; its data left at
    /// `depart`. Leaves the path of `depart` + o (what `flew` extends) in `msg`.
    #[inline(never)]
    fn send<P: Program>(
        &mut self,
        v: &View<P>,
        base: Path,
        (c, n): (usize, usize),
        (start, depart): (Time, Time),
        p: &LogGOPS,
        (src, dst, size): (u32, u32, u64),
    ) {
        let class = v.net.class(src, dst);
        let mut cpu = base;
        self.charge_from(v, &mut cpu, c, start);
        cpu.send_cpu(class, p, size);
        cpu.noise(start, p.send_cpu(size), v.clocks[c]);
        self.set(v, c, cpu);
        // with a DMA NIC the data may leave after the NIC's previous message
        // (the NIC clock's path, not yet set)
        let mut out = if depart > start { self.clocks[self.slot(n)] } else { base };
        let mut nic = out;
        nic.nic(class, p, size);
        self.set(v, n, nic);
        out.add(OVERHEAD, p.o_ps);
        out.add_count(class, O_CPU, 1);
        self.msg = out;
    }

    /// A message of `size` bytes from `src` arrived (the current event) and
    /// set CPU clock `c` and NIC clock `n` of its receiver.
    #[inline(never)]
    fn receive<P: Program>(&mut self, v: &View<P>, (c, n): (usize, usize), p: &LogGOPS, (src, dst, size): (u32, u32, u64)) {
        let class = v.net.class(src, dst);
        let base = self.cur_path();
        let mut cpu = base;
        self.charge_from(v, &mut cpu, c, v.now);
        cpu.recv_cpu(class, p, size);
        cpu.noise(v.now, p.recv_cpu(size), v.clocks[c]);
        self.set(v, c, cpu);
        let mut nic = base;
        nic.nic(class, p, size);
        self.set(v, n, nic);
    }

    /// With a DMA NIC: the NIC took the message (clock `n`); the CPU's part
    /// is queued for the NIC's end minus g, with the path returned.
    #[inline(never)]
    fn land<P: Program>(&mut self, v: &View<P>, n: usize, p: &LogGOPS, (src, dst, size): (u32, u32, u64)) -> Path {
        let class = v.net.class(src, dst);
        let mut nic = self.cur_path();
        nic.nic(class, p, size);
        self.set(v, n, nic);
        let mut landed = nic;
        landed.ps[NIC] -= p.g_ps;
        landed.crossings[class][GAP] -= 1;
        landed
    }

    /// With a DMA NIC: the CPU handled a landed message (clock `c`).
    #[inline(never)]
    fn landed<P: Program>(&mut self, v: &View<P>, c: usize, p: &LogGOPS, (src, dst, size): (u32, u32, u64)) {
        let class = v.net.class(src, dst);
        let mut cpu = self.cur_path();
        self.charge_from(v, &mut cpu, c, v.now);
        cpu.recv_cpu_dma(class, p, size);
        cpu.noise(v.now, p.recv_cpu_per_byte_o(size), v.clocks[c]);
        self.set(v, c, cpu);
    }

    /// A control message's o from `base` at `start` set CPU clock `c`; the
    /// message's path (o, then `flew`) is left in `msg`.
    #[inline(never)]
    fn control<P: Program>(&mut self, v: &View<P>, base: Path, c: usize, start: Time, p: &LogGOPS, (from, to): (u32, u32)) {
        let class = v.net.class(from, to);
        let mut cpu = base;
        self.charge_from(v, &mut cpu, c, start);
        cpu.add(OVERHEAD, p.o_ps);
        cpu.add_count(class, O_CPU, 1);
        cpu.noise(start, p.o_ps, v.clocks[c]);
        self.set(v, c, cpu);
        let mut out = base;
        out.add(OVERHEAD, p.o_ps);
        out.add_count(class, O_CPU, 1);
        self.msg = out;
    }

    /// A control message's arrival (the current event) cost o on CPU clock `c`.
    #[inline(never)]
    fn control_in<P: Program>(&mut self, v: &View<P>, c: usize, p: &LogGOPS, (from, to): (u32, u32)) {
        let class = v.net.class(from, to);
        let mut cpu = self.cur_path();
        self.charge_from(v, &mut cpu, c, v.now);
        cpu.add(OVERHEAD, p.o_ps);
        cpu.add_count(class, O_CPU, 1);
        cpu.noise(v.now, p.o_ps, v.clocks[c]);
        self.set(v, c, cpu);
    }

    /// A rendezvous send completed (see `Probe::rendezvous_done`): each of
    /// its clocks takes the later of its own path and the current event's.
    #[inline(never)]
    fn complete<P: Program>(&mut self, v: &View<P>, wait: Wait, (c, n): (usize, usize), n_before: Time) -> Time {
        let pc = self.latest(v, [(c, wait.before); 2], true);
        let pn = self.latest(v, [(n, n_before); 2], true);
        let idle = self.wait(wait);
        self.set(v, c, pc);
        self.set(v, n, pn);
        idle
    }

    /// A memory-bound computation ended at `mem_end` on CPU clock `c` (which
    /// holds that end with any detours after it). The time it would have
    /// taken alone at the core's bandwidth is computation; the rest, up to
    /// `mem_end`, is contention for the socket's bandwidth.
    #[inline(never)]
    fn mem_end<P: Program>(
        &mut self,
        v: &View<P>,
        (rank, cpu, c): (u32, u8, usize),
        (start, mem_end): (Time, Time),
        core_bytes_per_ps: f64,
    ) {
        let (mut path, bytes) = self.mem.remove(&(rank, cpu)).unwrap_or_default();
        self.charge_from(v, &mut path, c, start);
        let alone = ((bytes as f64 / core_bytes_per_ps).ceil() as Time).min(mem_end - start);
        path.add(COMPUTE, alone);
        path.add(MEMORY, mem_end - start - alone);
        path.add(NOISE, v.clocks[c] - mem_end);
        self.has_cur = false;
        self.cur_clock = NO_CLOCK;
        self.set(v, c, path);
    }
}

/// The clocks an event waits for before it runs (as `defer` is told).
fn resources<P: Program>(v: &View<P>, ev: &Event) -> Option<[usize; 2]> {
    let c = v.layout.o(ev.rank, ev.cpu());
    Some(match ev.kind() {
        EvKind::Calc | EvKind::Probe | EvKind::Mem | EvKind::Recv => [c, c],
        EvKind::Send => v.layout.send_clocks(v.net.nic_model, c, v.layout.gs(ev.rank, ev.nic())),
        EvKind::Msg | EvKind::Data if v.net.nic_model == crate::network::NicModel::Dma => {
            let n = v.layout.gr(ev.rank, ev.nic());
            [n, n]
        }
        EvKind::Msg | EvKind::Data => [c, v.layout.gr(ev.rank, ev.nic())],
        EvKind::Rts | EvKind::Cts | EvKind::Landed | EvKind::DataLanded => [c, c],
        EvKind::MemDone => return None,
    })
}

impl Explain {
    /// The current event's path, if it has one.
    fn cur(&self) -> Option<&Path> {
        self.has_cur.then_some(&self.cur)
    }

    /// The hop of `path` now on `rank`: its own if it is on that rank; if it
    /// came from elsewhere, a new one that records where and when (when the
    /// current event arrived, if that is how).
    #[inline(always)]
    fn arrive(&mut self, path: &Path, rank: u32) -> u32 {
        debug_assert_ne!(path.hop, 0, "a path starts on a rank");
        if self.hop_rank[path.hop as usize] == rank {
            return path.hop;
        }
        self.new_hop(path, rank)
    }

    #[inline(never)]
    fn new_hop(&mut self, path: &Path, rank: u32) -> u32 {
        let mut hop = Hop { from: path.hop, at: path.ps, iteration: UNKNOWN };
        if let Some(a) = self.arriving.as_mut().filter(|a| a.rank == rank && a.from == path.hop) {
            if let Some(h) = a.hop {
                return h;
            }
            hop.at = a.at;
            a.hop = Some(self.hops.len() as u32);
        }
        if self.hops.len() == self.hops.capacity() {
            // double, but not past what a collection lets the tree reach
            let cap = self.hops.capacity();
            let most = (self.collect_at.saturating_add(HOPS_PER_EVENT)).max(cap + 1);
            self.hops.reserve_exact((2 * cap).min(most) - cap);
            self.hop_rank.reserve_exact(self.hops.capacity() - self.hop_rank.len());
        }
        self.push_hop(rank, hop);
        (self.hops.len() - 1) as u32
    }

    /// Drops the hops no stored path leads back to and renumbers the rest
    /// (between events: no path lives outside these stores then). A hop
    /// comes after the one it came from, so one pass in order renumbers.
    /// If more than the budget are still wanted, the oldest of those that
    /// are not a path's latest are dropped too (the routes then start later:
    /// along a route times only grow, so what goes is each route's start).
    fn collect(&mut self) {
        #[cfg(test)]
        {
            let (n, skip, budget) = COLLECTIONS.get();
            if skip {
                self.collect_at = usize::MAX;
                return;
            }
            COLLECTIONS.set((n + 1, skip, budget));
        }
        const DROP: u32 = u32::MAX;
        const LATEST: u32 = u32::MAX - 1;
        const EARLIER: u32 = u32::MAX - 2;
        let mut new = vec![DROP; self.hops.len()];
        new[0] = 0;
        // the paths' hops, read once (a pass over the paths reads a line per path)
        let roots: Vec<u32> =
            self.clocks.iter().chain(self.events.values()).chain(self.mem.values().map(|(p, _)| p)).map(|p| p.hop).collect();
        for &h in &roots {
            new[h as usize] = if h == 0 { 0 } else { LATEST };
        }
        let mut earlier = 0;
        for &root in &roots {
            let mut h = self.hops[root as usize].from;
            while new[h as usize] == DROP {
                new[h as usize] = EARLIER;
                earlier += 1;
                h = self.hops[h as usize].from;
            }
        }
        let latest = new.iter().filter(|&&m| m == LATEST).count();
        if latest + earlier > self.hop_budget {
            // keep the newest earlier hops, up to half the budget in all
            let drop = (latest + earlier - self.hop_budget / 2).min(earlier);
            let mut times: Vec<Time> = (1..self.hops.len()).filter(|&i| new[i] == EARLIER).map(|i| self.hops[i].at.iter().sum()).collect();
            let cut = if drop == earlier { Time::MAX } else { *times.select_nth_unstable(drop).1 };
            for (i, m) in new.iter_mut().enumerate() {
                if *m == EARLIER && self.hops[i].at.iter().sum::<Time>() < cut {
                    *m = DROP;
                }
            }
        }
        let mut n = 1;
        for i in 1..self.hops.len() {
            if new[i] == DROP {
                continue;
            }
            let hop = self.hops[i];
            let from = new[hop.from as usize];
            self.hops[n] = Hop { from: if from == DROP { 0 } else { from }, ..hop };
            self.hop_rank[n] = self.hop_rank[i];
            new[i] = n as u32;
            n += 1;
        }
        self.hops.truncate(n);
        self.hop_rank.truncate(n);
        if cfg!(test) {
            self.collect_at = 64.max(2 * n);
        }
        let renumber = |p: &mut Path| p.hop = new[p.hop as usize];
        self.clocks.iter_mut().for_each(renumber);
        self.events.renumber(renumber);
        self.mem.values_mut().for_each(|(p, _)| renumber(p));
    }

    /// `path`'s stretches on each rank, first to last: each from its
    /// arrival to the next (the last to the path's end). The first starts
    /// at 0 unless a collection dropped the route's start.
    fn route(&self, path: &Path) -> Vec<Segment> {
        let mut hops = Vec::new();
        let mut h = path.hop;
        while h != 0 {
            hops.push((self.hop_rank[h as usize], self.hops[h as usize]));
            h = self.hops[h as usize].from;
        }
        hops.reverse();
        let mut segments = Vec::with_capacity(hops.len());
        for (k, (rank, hop)) in hops.iter().enumerate() {
            let from = hop.at;
            let to = hops.get(k + 1).map_or(path.ps, |(_, next)| next.at);
            // a path's causes only grow as it goes
            let ps = std::array::from_fn(|c| to[c].saturating_sub(from[c]));
            debug_assert!((0..7).all(|c| to[c] >= from[c]), "{from:?} to {to:?}");
            let iteration = (hop.iteration != UNKNOWN).then_some(hop.iteration);
            segments.push(Segment { rank: *rank, iteration, start: from.iter().sum(), end: to.iter().sum(), ps });
        }
        segments
    }

    /// Keeps `path` for the event queued with `stamp`.
    fn store(&mut self, stamp: u64, path: Path) {
        self.events.insert(stamp, path);
    }

    fn push_hop(&mut self, rank: u32, hop: Hop) {
        self.hops.push(hop);
        self.hop_rank.push(rank);
    }

    /// Where engine clock `i` keeps its path in `clocks` (the engine's
    /// layout without the match-list heads).
    #[inline(always)]
    fn slot(&self, i: usize) -> usize {
        i - LISTS * self.stride.div(i)
    }
    #[inline]
    fn clock(&self, i: usize) -> &Path {
        &self.clocks[self.slot(i)]
    }
    #[inline]
    fn clock_mut(&mut self, i: usize) -> &mut Path {
        let slot = self.slot(i);
        &mut self.clocks[slot]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::Network;
    use crate::sim::{run, Config};

    fn config(doc: serde_json::Value) -> Config {
        crate::scenario::config_of(&doc.to_string()).expect("a valid scenario")
    }

    fn explained(cfg: &Config) -> Explained {
        let r = run(&Config { explain: true, ..cfg.clone() }, None).expect("runs");
        let x = r.explained.expect("explained");
        assert_eq!(x.makespan, r.makespan);
        assert_eq!(r.finish_times[x.last_rank as usize], x.makespan, "the last rank ends the run");
        assert_eq!(x.path.total(), r.makespan, "the causes sum to the makespan: {x:?}");
        check_route(&x);
        x
    }

    /// The route covers [0, makespan) without gaps, each segment's causes
    /// sum to its length, a segment changes rank, and per cause the
    /// segments add up to the path's split.
    fn check_route(x: &Explained) {
        let r = &x.route;
        assert!(!r.is_empty() || x.makespan == 0);
        if let (Some(first), Some(last)) = (r.first(), r.last()) {
            // a budget set by a test may drop the start
            let start = if COLLECTIONS.get().2 == 0 { 0 } else { first.start };
            assert_eq!((first.start, last.end), (start, x.makespan), "{r:?}");
        }
        for w in r.windows(2) {
            assert_eq!(w[0].end, w[1].start, "contiguous: {r:?}");
            assert_ne!(w[0].rank, w[1].rank, "a segment changes rank: {r:?}");
        }
        for s in r {
            assert_eq!(s.ps.iter().sum::<Time>(), s.end - s.start, "{s:?}");
        }
        let by_cause: [Time; 7] = std::array::from_fn(|c| r.iter().map(|s| s.ps[c]).sum());
        if r.first().is_some_and(|s| s.start == 0) {
            assert_eq!(by_cause, x.path.ps);
        }
    }

    fn makespan(cfg: &Config) -> Time {
        run(cfg, None).expect("runs").makespan
    }

    /// Adds `d` to parameter `k` ([`PARAMS`]) of every link class.
    fn perturb(net: &mut Network, k: usize, d: f64) {
        for p in std::iter::once(&mut net.inter_node).chain(net.intra_node.as_mut()) {
            match k {
                L => p.l_ps += d as u64,
                O_CPU => p.o_ps += d as u64,
                GAP => p.g_ps += d as u64,
                G_BYTE => p.big_g_ps += d,
                _ => p.big_o_ps += d,
            }
        }
    }

    fn count(path: &Path, k: usize) -> u64 {
        path.count(k)
    }

    /// T(θ + δ) − T(θ) = δ · dT/dθ for each parameter, and the causes
    /// match the counts term by term (no noise, no platform here). Where
    /// events tie at θ (`jumps`) the runtime jumps under any increase: then
    /// the slope after the jump must be the derivative.
    fn check_derivatives(label: &str, cfg: &Config, jumps: bool) {
        let x = explained(cfg);
        let net = &cfg.network.inter_node;
        let p = &x.path;
        assert_eq!(p.ps[WIRE], count(p, L) * net.l_ps, "{label}: wire = L · count");
        let o_bytes = if net.big_o_ps > 0.0 { count(p, O_BYTE) as f64 * net.big_o_ps } else { 0.0 };
        assert_eq!(p.ps[OVERHEAD], count(p, O_CPU) * net.o_ps + o_bytes.round() as Time, "{label}: overhead");
        check_slopes(label, cfg, &x, jumps);
    }

    /// T(θ + δ) − T(θ) = δ · dT/dθ for each parameter (after the jump, where
    /// events tie at θ: `jumps`).
    fn check_slopes(label: &str, cfg: &Config, x: &Explained, jumps: bool) {
        let p = &x.path;
        for (k, name) in PARAMS.iter().enumerate() {
            // per byte: a step small enough for megabyte messages; each
            // (s−1)·G is rounded to whole ps, so allow half a ps per term
            let (d, slack) = if k >= G_BYTE { (1.0 / 64.0, count(p, O_CPU) + count(p, GAP)) } else { (3.0, 0) };
            let at = |m: f64| {
                let mut up = cfg.clone();
                perturb(&mut up.network, k, m * d);
                makespan(&up) as f64
            };
            let (t0, t1, t2) = (x.makespan as f64, at(1.0), at(2.0));
            let want = d * count(p, k) as f64;
            let what = format!("{label}: dT/d{name} = {}", count(p, k));
            assert!((t2 - t1 - want).abs() <= slack as f64, "{what} but T moved by {} from δ to 2δ = {}", t2 - t1, 2.0 * d);
            if !jumps {
                assert!((t1 - t0 - want).abs() <= slack as f64, "{what} but T moved by {} for δ = {d}", t1 - t0);
            }
        }
    }

    fn net() -> serde_json::Value {
        // G a whole number of ps per byte, so (s−1)·G is exact
        serde_json::json!({"L_s": 2.5e-6, "o_s": 1.5e-6, "g_s": 1.0e-6, "G_s_per_byte": 6e-9, "S_bytes": 65535})
    }

    /// Dropping the hops no path leads to changes no route (and happens).
    #[test]
    fn collecting_hops_keeps_the_route() {
        let cfg = config(serde_json::json!({"network": net(), "noise": [{"kind": "poisson", "rate_hz": 20000.0, "duration_s": 5e-6}],
            "workload": {"kind": "bsp", "ranks": 16, "iterations": 8, "compute_s": 1e-5, "distances": [1, 2], "message_bytes": 1024}}));
        COLLECTIONS.set((0, false, 0));
        let collected = explained(&cfg);
        assert!(COLLECTIONS.get().0 > 3, "collections: {:?}", COLLECTIONS.get());
        COLLECTIONS.set((0, true, 0));
        let kept = explained(&cfg);
        assert_eq!(collected.route, kept.route);
        assert!(collected.route.len() > 8, "{:?}", collected.route);
        // over its budget it drops the route's start, and only that
        COLLECTIONS.set((0, false, 20));
        let cut = explained(&cfg);
        COLLECTIONS.set((0, false, 0));
        assert!(cut.route[0].start > 0 && cut.route.len() < kept.route.len(), "{:?}", cut.route);
        let tail = &kept.route[kept.route.len() - cut.route.len() + 1..];
        assert_eq!(&cut.route[1..], tail);
        assert_eq!(cut.route[0].rank, kept.route[kept.route.len() - cut.route.len()].rank);
    }

    /// Each rank's idle time, charged to its iterations (the `waiting`
    /// timer), adds up to its waits.
    #[test]
    fn waits_per_iteration_add_up_to_the_waits() {
        let cfg = config(serde_json::json!({"network": net(), "noise": [{"kind": "poisson", "rate_hz": 20000.0, "duration_s": 5e-6}],
            "workload": {"kind": "bsp", "ranks": 12, "iterations": 6, "compute_s": 1e-5, "distances": [1, 2], "message_bytes": 100000}}));
        let r = run(&Config { explain: true, ..cfg.clone() }, None).expect("runs");
        let x = r.explained.as_ref().expect("explained");
        let t = r.timer_names.iter().position(|n| n == crate::record::WAITING).expect("a waiting timer");
        let iters = r.iterations as usize;
        let mut waited = 0.0;
        for (rank, w) in x.waits.iter().enumerate() {
            let total = (w.late_sender + w.late_receiver + w.other) as f64 * 1e-12;
            let per_iteration: f64 = r.timers[t][rank * iters..(rank + 1) * iters].iter().sum();
            assert!((per_iteration - total).abs() <= 1e-15 * iters as f64 + 1e-9 * total, "rank {rank}: {per_iteration} vs {total}");
            waited += total;
        }
        assert!(waited > 0.0);
        // not explained: no such timer
        let plain = run(&cfg, None).expect("runs");
        assert!(!plain.timer_names.iter().any(|n| n == crate::record::WAITING));
    }

    #[test]
    fn a_path_is_copied_inline() {
        assert_eq!(std::mem::size_of::<Path>(), 128);
    }

    #[test]
    fn a_ping_pong_splits_into_its_closed_form() {
        let dir = std::env::temp_dir().join(format!("idlewave-explain-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let goal = dir.join("pingpong.goal");
        let s = 1000u64;
        std::fs::write(
            &goal,
            format!(
                "num_ranks 2\nrank 0 {{\nl1: send {s}b to 1 tag 0\nl2: recv {s}b from 1 tag 0\nl2 requires l1\n}}\n\
                 rank 1 {{\nl1: recv {s}b from 0 tag 0\nl2: send {s}b to 0 tag 0\nl2 requires l1\n}}\n"
            ),
        )
        .unwrap();
        let cfg = config(serde_json::json!({"network": net(), "workload": {"kind": "goal", "path": goal.display().to_string()}}));
        let x = explained(&cfg);
        let (o, l, g_bytes) = (1_500_000, 2_500_000, (s - 1) * 6_000);
        // each way: the sender's o, L, the receiver's o + (s−1)·G
        assert_eq!(x.path.ps[OVERHEAD], 4 * o);
        assert_eq!(x.path.ps[WIRE], 2 * l);
        assert_eq!(x.path.ps[NIC], 2 * g_bytes);
        assert_eq!(x.makespan, 4 * o + 2 * l + 2 * g_bytes);
        assert_eq!([count(&x.path, L), count(&x.path, O_CPU), count(&x.path, GAP), count(&x.path, G_BYTE)], [2, 4, 0, 2 * (s - 1)]);
        check_derivatives("ping-pong", &cfg, false);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Rank 0's second send waits for its CPU (o, then a calc) and its NIC
    /// (g + 1000·G of the first send), both free at 7 µs. Raising o, g or G
    /// each delays it, so each count must be the larger of the two paths'.
    #[test]
    fn tied_clocks_take_the_larger_counts() {
        let dir = std::env::temp_dir().join(format!("idlewave-explain-tie-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let goal = dir.join("tie.goal");
        std::fs::write(
            &goal,
            "num_ranks 2\nrank 0 {\nl1: send 1001b to 1 tag 0\nl2: calc 5500\nl2 requires l1\nl3: send 1b to 1 tag 1\nl3 requires l2\n\
             l4: calc 20000\nl4 requires l3\n}\nrank 1 {\nl1: recv 1001b from 0 tag 0\nl2: recv 1b from 0 tag 1\n}\n",
        )
        .unwrap();
        let cfg = config(serde_json::json!({"network": net(), "workload": {"kind": "goal", "path": goal.display().to_string()}}));
        let x = explained(&cfg);
        // o + calc = g + 1000·G = 7 µs; then o and the last calc
        assert_eq!(x.makespan, 7_000_000 + 1_500_000 + 20_000_000);
        assert_eq!([count(&x.path, L), count(&x.path, O_CPU), count(&x.path, GAP), count(&x.path, G_BYTE)], [0, 2, 1, 1000]);
        check_derivatives("tied clocks", &cfg, false);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_binomial_broadcast_splits_into_its_closed_form() {
        // Largest subtree first, o > g: the path runs down the first
        // children, each level costing o (send) + L + o + (s−1)·G (receive).
        for (ranks, levels) in [(8u32, 3u64), (64, 6)] {
            let s = 1000u64;
            let cfg = config(serde_json::json!({"network": net(), "workload": {
                "kind": "collective", "collective": "bcast", "algorithm": "binomial", "ranks": ranks, "iterations": 1,
                "message_bytes": s, "compute_s": 0.0}}));
            let x = explained(&cfg);
            let (o, l, g_bytes) = (1_500_000, 2_500_000, (s - 1) * 6_000);
            assert_eq!(x.path.ps[OVERHEAD], levels * 2 * o, "{ranks} ranks");
            assert_eq!(x.path.ps[WIRE], levels * l);
            assert_eq!(x.path.ps[NIC], levels * g_bytes);
            assert_eq!(x.makespan, levels * (2 * o + l + g_bytes));
            // down the first children (v sends first to v + the lowest
            // power of two above v): 0, 1, 3, 7, ...; on the root o + L, on
            // each next rank o + (s−1)·G, then o + L (the last: o + (s−1)·G)
            let ranks_on: Vec<u32> = x.route.iter().map(|s| s.rank).collect();
            let want: Vec<u32> = (0..=levels).map(|k| (1 << k) - 1).collect();
            assert_eq!(ranks_on, want, "{ranks} ranks: {:?}", x.route);
            let lengths: Vec<Time> = x.route.iter().map(|s| s.end - s.start).collect();
            let mut expect = vec![o + l];
            expect.extend(std::iter::repeat_n(o + g_bytes + o + l, levels as usize - 1));
            expect.push(o + g_bytes);
            assert_eq!(lengths, expect);
        }
    }

    /// Every clock's path holds its time (debug builds assert it at each
    /// step) under noise, platforms, protocols, NIC models and memory
    /// contention; explaining changes no result.
    #[test]
    fn paths_hold_their_times_under_every_model() {
        let bsp = serde_json::json!({"kind": "bsp", "ranks": 16, "iterations": 4, "compute_s": 1e-5,
                                     "distances": [1, 2], "message_bytes": 100000});
        let poisson = serde_json::json!([{"kind": "poisson", "rate_hz": 20000.0, "duration_s": 5e-6}]);
        let cases = [
            serde_json::json!({"noise": poisson, "workload": bsp}),
            serde_json::json!({"network": {"rendezvous_model": "handshake"}, "noise": poisson, "workload": bsp}),
            serde_json::json!({"network": {"nic_model": "dma"}, "noise": poisson, "workload": bsp}),
            serde_json::json!({"network": {"nic_ports": 3}, "noise": poisson, "workload": bsp}),
            serde_json::json!({"network": {"ranks_per_node": 2, "topology": {"kind": "torus", "dims": [4, 2, 1]},
                                           "regimes": [{"transition": [[0.9, 0.1], [0.2, 0.8]], "multiplier": [1.0, 3.0],
                                                        "step_s": 1e-6, "scope": "link"}]},
                               "workload": bsp}),
            serde_json::json!({"network": {"nic_ports": 2, "nic_model": "dma"},
                               "workload": {"kind": "collective", "collective": "bcast", "algorithm": "two_ring_modified",
                                            "ranks": 9, "iterations": 2, "message_bytes": 1000000, "chunk_bytes": 200000}}),
            serde_json::json!({"network": {"ranks_per_node": 4, "node_bandwidth_bytes_per_s": 5e9, "hop_latency_s": 1e-7,
                                           "stalls_per_byte": 0.01, "stall_s": 1e-9, "topology": {"kind": "torus", "dims": [2, 2, 1]},
                                           "regimes": [{"transition": [[0.9, 0.1], [0.2, 0.8]], "multiplier": [1.0, 3.0]}]},
                               "workload": bsp}),
            serde_json::json!({"network": {"ranks_per_node": 8, "ranks_per_socket": 4,
                                           "memory": {"socket_bandwidth_bytes_per_s": 4e10, "core_bandwidth_bytes_per_s": 1.5e10}},
                               "noise": poisson,
                               "workload": {"kind": "bsp", "ranks": 16, "iterations": 4, "compute_bytes": 4000000,
                                            "distances": [1], "message_bytes": 1024}}),
            serde_json::json!({"network": {"async_progress": true}, "noise": poisson,
                               "workload": {"kind": "collective", "collective": "allreduce", "mode": "nonblocking", "ranks": 16,
                                            "iterations": 3, "message_bytes": 4096, "compute_s": 1e-4, "test_chunks": 4}}),
        ];
        let mut causes = [0; 7];
        for doc in cases {
            let cfg = config(doc.clone());
            let x = explained(&cfg);
            assert_eq!(x.makespan, makespan(&cfg), "{doc}");
            for (a, b) in causes.iter_mut().zip(x.path.ps) {
                *a += b.min(1);
            }
        }
        // each cause is met on some path: noise, penalties, memory contention included
        assert_eq!(causes.iter().filter(|&&n| n > 0).count(), 7, "{causes:?}");
    }

    /// Every algorithm of every collective, eager (64 B) and rendezvous
    /// (100 kB, past S), on 6 and 16 ranks (the power-of-two-only ones on 16).
    #[test]
    fn derivatives_match_finite_differences_on_every_collective_algorithm() {
        use crate::collectives::{Algorithm::*, CollectiveKind::*};
        let kinds =
            [Allreduce, Bcast, Reduce, Gather, Scatter, Allgather, Alltoall, Barrier, ReduceScatter, ReduceScatterBlock, Scan, Exscan];
        let mut checked = 0;
        for kind in kinds {
            for &alg in kind.algorithms() {
                for bytes in [64u64, 100_000] {
                    for ranks in [6u32, 16] {
                        if kind == Allgather && alg == RecursiveDoubling && !ranks.is_power_of_two() {
                            continue;
                        }
                        let kind_s = serde_json::to_value(kind).unwrap();
                        let alg_s = serde_json::to_value(alg).unwrap();
                        let chunk_bytes = if alg == PipelinedRing { 16384 } else { 0 };
                        let cfg = config(serde_json::json!({"network": net(), "workload": {
                            "kind": "collective", "collective": kind_s, "algorithm": alg_s, "ranks": ranks, "iterations": 3,
                            "message_bytes": bytes, "chunk_bytes": chunk_bytes, "compute_s": 2e-5}}));
                        // all-to-all: arrivals tie with the CPU's next send
                        check_derivatives(&format!("{kind:?}/{alg:?}, {bytes} B on {ranks}"), &cfg, kind == Alltoall);
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 210);
    }

    /// Under noise a charge that starts inside a detour ends when the
    /// detour does, whenever it was ready: the counts restart there and
    /// stay the local slope (they used to add up the whole path, e.g. 299
    /// crossings of L where the runtime moved by 12 ps per ps).
    #[test]
    fn derivatives_under_noise_are_the_local_slope() {
        let mut restarted = 0;
        for (seed, rate_hz, ranks, iterations) in [(4, 1000.0, 4, 1), (1, 20000.0, 8, 4), (2, 20000.0, 16, 6), (3, 5000.0, 9, 8)] {
            let cfg = config(serde_json::json!({"network": net(), "seed": seed,
                "noise": [{"kind": "poisson", "rate_hz": rate_hz, "duration_s": 5e-6}],
                "workload": {"kind": "bsp", "ranks": ranks, "iterations": iterations, "compute_s": 1e-5, "distances": [1],
                             "message_bytes": 1024, "periodic": true}}));
            let x = explained(&cfg);
            // below L·count: some count restarted inside a detour
            restarted += usize::from(x.path.ps[WIRE] > count(&x.path, L) * cfg.network.inter_node.l_ps);
            check_slopes(&format!("seed {seed}, {rate_hz} Hz, {ranks} ranks"), &cfg, &x, false);
        }
        assert!(restarted >= 2, "only {restarted} of the runs crossed a detour on the path");
    }

    #[test]
    fn derivatives_match_finite_differences_on_applications() {
        let workloads = [
            serde_json::json!({"kind": "bsp", "ranks": 16, "iterations": 4, "compute_s": 1e-5, "distances": [1, 2], "message_bytes": 1024}),
            serde_json::json!({"kind": "bsp", "ranks": 9, "iterations": 3, "compute_s": 1e-5, "distances": [1], "message_bytes": 200000}),
            serde_json::json!({"kind": "krylov", "grid": [2, 2, 2], "iterations": 3}),
            serde_json::json!({"kind": "krylov", "grid": [2, 2, 2], "iterations": 3, "method": "pipecg"}),
            serde_json::json!({"kind": "dense2d", "grid": [2, 3], "blocks": 4}),
        ];
        for w in workloads {
            let cfg = config(serde_json::json!({"network": net(), "workload": w}));
            check_derivatives(&w.to_string(), &cfg, false);
        }
    }
}
