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

mod event_paths;
mod path;
mod record;
mod route;
#[cfg(test)]
mod tests;

use crate::engine::{Event, Mix, LISTS};
use crate::time::Time;
use event_paths::{Entry, EventPaths, DIRECT_PER_RANK};
pub use path::{latest, Path};
use route::{Arrival, Hop, HOPS_PER_RANK};
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
    /// Shared links: per flow in flight, its message's path as it would
    /// arrive alone, its link class, bytes, (s − 1)·G and G.
    flows: HashMap<u32, (Path, usize, u64, Time, f64), BuildHasherDefault<Mix>>,
    /// Per send waiting to leave its NIC before its flow starts: its message's path.
    leaving: HashMap<u32, Path, BuildHasherDefault<Mix>>,
    /// The link (slot, ps) the message about to be queued waited on; per
    /// queued message, likewise; per hop, the link its arrival waited on.
    flow_link: Option<(u32, Time)>,
    msg_links: HashMap<u64, (u32, Time), BuildHasherDefault<Mix>>,
    hop_links: HashMap<u32, (u32, Time), BuildHasherDefault<Mix>>,
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
    /// The shared link the path waited on to get here (its slot) and how
    /// long, if its message came as a flow that sharing held back.
    pub link: Option<(u32, Time)>,
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
    /// The names of the links the route names (filled in by the run, which knows the links).
    pub link_names: Vec<(u32, String)>,
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

/// Bytes per rank explaining adds with shared links: each flow in flight
/// keeps its message's path (as many flows as the engine's estimate allows).
pub fn flow_bytes_per_rank() -> u128 {
    2 * (std::mem::size_of::<Path>() as u128 + 32 + 2 * 24)
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

pub use crate::engine::probe::{COLLECTIVE, LATE_RECEIVER, LATE_SENDER, OTHER};

impl Explain {
    fn bytes(&self) -> usize {
        let path = std::mem::size_of::<Path>();
        self.hops.capacity() * (std::mem::size_of::<Hop>() + 4)
            + self.clocks.capacity() * path
            + self.events.bytes()
            + self.mem.capacity() * (path + 24)
            + self.waits.capacity() * std::mem::size_of::<Waits>()
            + self.flows.capacity() * (path + 32)
            + self.leaving.capacity() * (path + 8)
            + (self.msg_links.capacity() + self.hop_links.capacity()) * 24
    }
}

impl Explain {
    /// The current event's path, if it has one.
    fn cur(&self) -> Option<&Path> {
        self.has_cur.then_some(&self.cur)
    }

    /// Keeps `path` for the event queued with `stamp`.
    fn store(&mut self, stamp: u64, path: Path) {
        self.events.insert(stamp, path);
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
