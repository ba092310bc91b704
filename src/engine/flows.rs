//! Flows on shared links (`[network.links] model = "flow"`): a message
//! between nodes moves its (s − 1) bytes — LogGOPS's per-byte count — as a
//! flow along its route, and the flows on a link share its bandwidth
//! max–min fairly, each also capped by its NIC's 1/G (progressive filling,
//! as SimGrid's LMM solver). A flow that starts alone on its links, or ends
//! alone, changes no other flow's rate. Otherwise the flows connected to it
//! through shared links (its component) are brought up to date and
//! re-solved, once per instant: every start and end queued for the same
//! time is applied first, then one re-solve (an event queued behind them)
//! covers them all. A halo exchange starts thousands of flows at the same
//! moment on a machine with o = g = 0, and re-solving after each would cost
//! the square of the flows in flight. The rates are the same either way
//! (max–min's solution is unique, and no time passes in between). A flow
//! whose rate changed gets a new completion event, older ones are
//! recognised as stale by a version number (as the memory domains do). A flow's last byte in, the message reaches its
//! receiver after the latency it would have had alone.

use super::probe::{Loss, Message, Probe, NO_LINK};
use super::{Engine, EvKind, Event};
use crate::network::{LinkClassId, Routes};
use crate::program::Program;
use crate::time::{Time, PAST_LIMIT};

/// A link's flows now: 16 bytes, read for every flow that starts or ends
/// and for every link a component's search crosses. Most links carry at
/// most two flows at a time (a NIC's sends to its two halo neighbours), so
/// those are kept here; with three or more they are listed apart. Kept
/// apart from [`LinkUse`] so that the check whether a flow is alone on its
/// links touches a small array (64 Ki ranks have ~460 K links).
#[derive(Default, Clone, Copy)]
struct LinkLoad {
    /// Flows on it now; the first `n` of `ids` when `n` is at most 2.
    n: u32,
    /// A component's mark.
    seen: u32,
    ids: [u32; 2],
}

/// What a link carried, for the run's statistics.
/// A flow's bytes are counted on its links when it ends (`stats` adds the
/// flows still on them), its busy time when the link falls idle: a flow
/// starting alone only writes `since` here.
#[derive(Default, Clone, Copy)]
struct LinkUse {
    bytes: u64,
    busy_ps: Time,
    since: Time,
    /// Most flows at once: raised when two or more share it, and to 1 when a flow leaves it.
    peak: u32,
}

/// Links a route keeps in its flow's own state: a fat tree's routes (a
/// NIC, a link up and one down per level) and a dragonfly's fit.
const INLINE: usize = 8;

/// A flow's route: short ones inline, so that starting a flow writes no
/// heap block of its own (the reused flows' went cold between two waves of
/// flows); longer ones (a torus's across many hops) on the heap.
#[derive(Default)]
#[repr(C)]
struct Route {
    len: u32,
    inline: [u32; INLINE],
    spill: Option<Box<[u32]>>,
}

impl Route {
    fn set(&mut self, route: &[u32]) {
        self.len = route.len() as u32;
        if route.len() <= INLINE {
            self.inline[..route.len()].copy_from_slice(route);
        } else {
            self.spill = Some(route.into());
        }
    }
}

impl std::ops::Deref for Route {
    type Target = [u32];
    #[inline]
    fn deref(&self) -> &[u32] {
        let n = self.len as usize;
        if n <= INLINE {
            &self.inline[..n]
        } else {
            self.spill.as_deref().unwrap_or_default()
        }
    }
}

/// A flow's state that a component's search and progressive filling read
/// (two cache lines: the flows sharing a link with a new one are out of
/// cache, and each line read is a miss); the rest is in [`FlowEnds`].
#[derive(Default)]
#[repr(C, align(64))]
struct Flow {
    // the first line: the search
    route: Route,
    seen: u32,
    /// Progressive filling's result: the link that holds it (NO_LINK: its cap).
    new_blame: u32,
    // the second line: its rate
    remaining: f64,
    rate: f64,
    last: Time,
    cap: f64,
    /// Progressive filling's rate; negative while not yet fixed.
    new_rate: f64,
    /// Since when it has had its rate, and the link that sets it (NO_LINK:
    /// its own cap).
    since: Time,
    /// Its rate alone (the narrowest of its cap and its links).
    alone_rate: f64,
    version: u32,
    blame: u32,
}

/// What a flow needs only when it begins and ends.
#[derive(Default)]
struct FlowEnds {
    /// Its bytes (counted on its links when it ends).
    bytes: u64,
    start: Time,
    /// Its duration alone on its route, for the delay that sharing caused.
    alone_ps: f64,
    /// The link that has cost it the most time so far, and how much.
    worst: u32,
    worst_ps: f64,
    /// The job it belongs to (0 without jobs).
    owner: u32,
    msg: Option<(Event, Message, Time)>,
}

/// Per class of link: what the links of that class carried.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinkClassStats {
    pub class: String,
    pub links: u64,
    pub bytes: u64,
    /// The busiest link's busy time and bytes.
    pub busy_max_ps: Time,
    pub bytes_max: u64,
    /// Most flows at once on one link.
    pub peak_flows: u32,
    /// Time its links cost messages beyond running alone (ps, summed over messages).
    pub delay_ps: f64,
}

/// A link that held messages back: its name and class, and the time it
/// cost them (ps, summed over messages).
#[derive(Debug, Clone, PartialEq)]
pub struct HeldBack {
    pub link: String,
    pub class: String,
    pub ps: f64,
}

pub struct Flows {
    pub routes: Routes,
    /// Per link (slot): its flows, and what it carried.
    loads: Vec<LinkLoad>,
    uses: Vec<LinkUse>,
    /// The flows of each link that carries three or more.
    lists: rustc_hash::FxHashMap<u32, Vec<u32>>,
    /// Progressive filling's scratch per link (allocated at the first
    /// re-solve): capacity left, flows not yet fixed.
    rem: Vec<f64>,
    unfixed: Vec<u32>,
    flows: Vec<Flow>,
    ends: Vec<FlowEnds>,
    free: Vec<u32>,
    epoch: u32,
    comp_links: Vec<u32>,
    comp_flows: Vec<u32>,
    stack: Vec<u32>,
    /// Scratch for a route and for the completions to schedule.
    route: Vec<u32>,
    due: Vec<Due>,
    /// The links whose flows changed since the last re-solve (it is queued
    /// for now when this is not empty).
    pending: Vec<u32>,
    /// Sends that leave after they are handled (behind their NIC's earlier
    /// sends), by slot until their flow starts; the slots free.
    leaving: Vec<Option<Leaving>>,
    leaving_free: Vec<u32>,
    /// Summed over messages: time beyond what the flow would take alone.
    pub delay_ps: f64,
    pub flowed: u64,
    /// Re-solves run (one per instant at which shared flows changed).
    pub resolves: u64,
    /// Flows and links the re-solves crossed: the work beside the events,
    /// by which the engine's step also ends (Ctrl-C waited tens of seconds
    /// where every event re-solved thousands of flows).
    pub work: u64,
    /// Per link: the time it cost the flows that it held back (allocated at
    /// the first such loss); per job and link, where jobs are told.
    link_delay: Vec<f64>,
    job_delay: rustc_hash::FxHashMap<(u32, u32), f64>,
    /// The first rank of each job, job 0's first (empty: one program; one
    /// job is a job too, whose losses are its own).
    job_starts: Vec<u32>,
    /// For a timeline: per class of link, its flows and busy links over time.
    pub counters: Option<Box<LinkCounters>>,
}

/// Per class of link, how many flows its links carry and how many of its
/// links carry one, sampled at every change (a timeline's counter tracks).
#[derive(Debug, Clone, Default)]
pub struct LinkCounters {
    pub classes: Vec<String>,
    /// Per slot, its class (an index into `classes`).
    class_of: Vec<u8>,
    flows: Vec<u32>,
    busy: Vec<u32>,
    pub samples: Vec<CounterSample>,
    limit: usize,
    pub truncated: bool,
}

/// A class's counts from time `t` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterSample {
    pub t: Time,
    pub class: u8,
    pub flows: u32,
    pub busy: u32,
}

impl LinkCounters {
    /// Flow counts changed by `delta` on the links of `route` at `t`; `links`
    /// holds their flows now.
    fn changed(&mut self, t: Time, route: &[u32], loads: &[LinkLoad], delta: i32) {
        let mut touched: u64 = 0;
        for &s in route {
            let c = self.class_of[s as usize] as usize;
            self.flows[c] = self.flows[c].saturating_add_signed(delta);
            let n = loads[s as usize].n;
            if (delta > 0 && n == 1) || (delta < 0 && n == 0) {
                self.busy[c] = self.busy[c].saturating_add_signed(delta);
            }
            touched |= 1 << c.min(63);
        }
        for c in 0..self.classes.len().min(64) {
            if touched & (1 << c) != 0 {
                if self.samples.len() < self.limit {
                    self.samples.push(CounterSample { t, class: c as u8, flows: self.flows[c], busy: self.busy[c] });
                } else {
                    self.truncated = true;
                }
            }
        }
    }
}

/// A completion to schedule: (time, flow, version).
pub type Due = (Time, u32, u32);

/// The flows on link `s`.
fn on<'a>(loads: &'a [LinkLoad], lists: &'a rustc_hash::FxHashMap<u32, Vec<u32>>, s: u32) -> &'a [u32] {
    let l = &loads[s as usize];
    match l.n {
        0..=2 => &l.ids[..l.n as usize],
        _ => &lists[&s],
    }
}

/// A flow's next version.
fn bump(v: u32) -> u32 {
    v.wrapping_add(1)
}

/// A send whose flow starts when it leaves: what `Engine::start_flow` takes.
struct Leaving {
    msg: Event,
    m: Message,
    left: Time,
    arrive: Time,
    big_g_ps: f64,
}

impl Flows {
    pub fn new(routes: Routes) -> Flows {
        let slots = routes.slots();
        Flows {
            routes,
            loads: vec![LinkLoad::default(); slots],
            uses: vec![LinkUse::default(); slots],
            lists: Default::default(),
            rem: Vec::new(),
            unfixed: Vec::new(),
            flows: Vec::new(),
            ends: Vec::new(),
            free: Vec::new(),
            epoch: 0,
            comp_links: Vec::new(),
            comp_flows: Vec::new(),
            stack: Vec::new(),
            route: Vec::new(),
            due: Vec::new(),
            pending: Vec::new(),
            leaving: Vec::new(),
            leaving_free: Vec::new(),
            delay_ps: 0.0,
            flowed: 0,
            resolves: 0,
            work: 0,
            link_delay: Vec::new(),
            job_delay: Default::default(),
            job_starts: Vec::new(),
            counters: None,
        }
    }

    /// Samples each class's flows and busy links from now on, up to `limit` samples.
    pub fn record_counters(&mut self, limit: usize) {
        let mut ids: Vec<LinkClassId> = (0..self.loads.len()).map(|s| self.routes.link(s).0).collect();
        let class_of_slot = ids.clone();
        ids.sort();
        ids.dedup();
        let class_of = class_of_slot.iter().map(|c| ids.binary_search(c).unwrap_or(0) as u8).collect();
        let n = ids.len();
        self.counters = Some(Box::new(LinkCounters {
            classes: ids.iter().map(|c| c.name()).collect(),
            class_of,
            flows: vec![0; n],
            busy: vec![0; n],
            samples: Vec::new(),
            limit,
            truncated: false,
        }));
    }

    /// The run's ranks are jobs', each job's from its first rank on
    /// (`firsts`, ascending, job 0's first): losses are kept per job too.
    pub fn set_jobs(&mut self, firsts: &[u32]) {
        self.job_starts = firsts.to_vec();
    }

    /// The job of rank `rank`.
    fn job_of(&self, rank: u32) -> u32 {
        (self.job_starts.partition_point(|&f| f <= rank) as u32).saturating_sub(1)
    }

    /// Closes flow `id`'s stretch at its rate up to `now`: what it lost
    /// against running alone goes to the link that held it back.
    fn close(&mut self, id: u32, now: Time) {
        let f = &mut self.flows[id as usize];
        let (dt, rate, blame) = (now.saturating_sub(f.since), f.rate, f.blame);
        f.since = now;
        if dt == 0 || blame == NO_LINK || rate <= 0.0 {
            return;
        }
        let lost = dt as f64 * (1.0 - rate / f.alone_rate);
        if lost <= dt as f64 * 1e-9 {
            // (at its rate alone, give or take rounding)
            return;
        }
        let f = &mut self.ends[id as usize];
        let owner = f.owner;
        if f.worst == blame {
            f.worst_ps += lost;
        } else if lost > f.worst_ps {
            (f.worst, f.worst_ps) = (blame, lost);
        }
        if self.link_delay.is_empty() {
            self.link_delay = vec![0.0; self.loads.len()];
        }
        self.link_delay[blame as usize] += lost;
        if !self.job_starts.is_empty() {
            *self.job_delay.entry((owner, blame)).or_default() += lost;
        }
    }

    /// Per link that held flows back: its slot and the time it cost them
    /// (ps, summed over messages), the largest first (at most `top`).
    pub fn worst_links(&self, top: usize) -> Vec<(u32, f64)> {
        let mut v: Vec<(u32, f64)> = self.link_delay.iter().enumerate().filter(|(_, &d)| d > 0.0).map(|(s, &d)| (s as u32, d)).collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(top);
        v
    }

    /// Job `job`'s links that held its flows back, the largest first (at most
    /// `top`), and the time all its links cost it (ps).
    pub fn job_worst_links(&self, job: u32, top: usize) -> (Vec<(u32, f64)>, f64) {
        let mut v: Vec<(u32, f64)> = self.job_delay.iter().filter(|((j, _), _)| *j == job).map(|(&(_, s), &d)| (s, d)).collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        // (+ 0.0: an empty sum is −0.0, which the summary printed)
        let total = v.iter().map(|x| x.1).sum::<f64>() + 0.0;
        v.truncate(top);
        (v, total)
    }

    /// Bytes per link: its flows now and what it carried, and what the
    /// first flows that share a link or are held back by one add for every
    /// link (progressive filling's capacity left and flows unfixed, the time
    /// each link cost).
    pub fn bytes_per_slot() -> u128 {
        (std::mem::size_of::<LinkLoad>() + std::mem::size_of::<LinkUse>() + 8 + 4 + 8) as u128
    }

    /// Bytes per rank for its flows in flight, about two per rank at once in
    /// the halo exchanges and collectives measured (docs/links.md), whose
    /// routes cross `links` links together: a flow's state and its
    /// completion event (and the stale one a re-solve leaves queued); per
    /// link of a route, what flows sharing links keep (the link's list of
    /// its flows, the links waiting for a re-solve and the re-solve's search,
    /// each with the spare capacity of its growth) and the route itself where
    /// too long to keep inline (a torus's across many hops).
    pub fn bytes_in_flight_per_rank(links: f64) -> u128 {
        let flow = (std::mem::size_of::<Flow>() + std::mem::size_of::<FlowEnds>()) as u128 + 2 * 40;
        2 * flow + (links * Self::BYTES_PER_LINK).ceil() as u128
    }

    /// Per link of a flow's route (see `bytes_in_flight_per_rank`): measured
    /// 22–25 bytes on tori of 32 Ki and 1 Mi ranks whose halo exchanges'
    /// routes cross 48 and 150 links.
    pub const BYTES_PER_LINK: f64 = 28.0;

    pub fn bytes(&self) -> usize {
        self.loads.capacity() * std::mem::size_of::<LinkLoad>()
            + self.uses.capacity() * std::mem::size_of::<LinkUse>()
            + self.lists.values().map(|l| l.capacity() * 4 + 32).sum::<usize>()
            + self.rem.capacity() * 12
            + self.flows.capacity() * std::mem::size_of::<Flow>()
            + self.ends.capacity() * std::mem::size_of::<FlowEnds>()
            + self.flows.iter().map(|f| f.route.spill.as_ref().map_or(0, |r| r.len() * 4)).sum::<usize>()
    }

    /// Asks for flow `id`'s state, or (`links`) for its links'.
    #[inline]
    pub fn prefetch(&self, id: u32, links: bool) {
        if !links {
            crate::prefetch::prefetch_whole(&self.flows, id as usize);
            crate::prefetch::prefetch_whole(&self.ends, id as usize);
        } else if let Some(f) = self.flows.get(id as usize) {
            for &s in f.route.iter() {
                crate::prefetch::prefetch(&self.loads, s as usize);
                crate::prefetch::prefetch(&self.uses, s as usize);
            }
        }
    }

    /// Asks for the link counts a flow from rank `src` (node `a`) to `dst`
    /// (node `b`) will read when it starts, and their statistics it will
    /// write, where its route depends only on its ends (else the receiving
    /// NIC's alone): called as its send is queued, so that they arrive before
    /// it runs. (Their statistics are on other lines, written as each link
    /// turns busy: out of the cache at 64 Ki ranks, docs/links.md.)
    #[inline]
    pub fn prefetch_route(&self, (src, dst): (u32, u32), (a, b): (u32, u32)) {
        let fetch = |s: usize| {
            crate::prefetch::prefetch(&self.loads, s);
            crate::prefetch::prefetch(&self.uses, s);
        };
        if self.routes.fixed() {
            self.routes.route((src, dst), (a, b), 0, |_| 0, fetch);
        } else {
            fetch(dst as usize);
        }
    }

    /// Flows a link carries now.
    pub fn load(&self, slot: usize) -> usize {
        self.loads[slot].n as usize
    }

    fn add(&mut self, s: u32, id: u32) {
        let l = &mut self.loads[s as usize];
        match l.n {
            0 | 1 => l.ids[l.n as usize] = id,
            2 => {
                self.lists.insert(s, vec![l.ids[0], l.ids[1], id]);
            }
            _ => self.lists.get_mut(&s).expect("listed").push(id),
        }
        l.n += 1;
    }

    fn remove(&mut self, s: u32, id: u32) {
        let l = &mut self.loads[s as usize];
        match l.n {
            1 => debug_assert_eq!(l.ids[0], id),
            2 => {
                debug_assert!(l.ids.contains(&id));
                if l.ids[0] == id {
                    l.ids[0] = l.ids[1];
                }
            }
            3 => {
                // back to two: the two left, in the order the list had them
                let mut list = self.lists.remove(&s).expect("listed");
                let i = list.iter().position(|&x| x == id).expect("a flow is on its links");
                list.swap_remove(i);
                l.ids = [list[0], list[1]];
            }
            _ => {
                let list = self.lists.get_mut(&s).expect("listed");
                let i = list.iter().position(|&x| x == id).expect("a flow is on its links");
                list.swap_remove(i);
            }
        }
        l.n -= 1;
    }

    /// Starts a flow of `bytes` over `route` at `now`, capped at `cap` bytes
    /// per ps; `msg` is delivered `latency` after its last byte.
    /// Pushes the completions to (re)schedule into `due` (re-solving at once).
    #[cfg(test)]
    pub fn start(&mut self, now: Time, route: &[u32], bytes: u64, cap: f64, msg: (Event, Message, Time), due: &mut Vec<Due>) {
        let id = self.prepare(route, bytes, cap, msg);
        let _ = self.begin(now, id, due);
        self.settle(now, due);
    }

    /// A flow to begin later (`begin`): its route, bytes, cap and message. Returns its id.
    pub fn prepare(&mut self, route: &[u32], bytes: u64, cap: f64, msg: (Event, Message, Time)) -> u32 {
        // `begin` reads its links' loads: ask for them while its state arrives
        for &s in route {
            crate::prefetch::prefetch(&self.loads, s as usize);
        }
        let id = self.free.pop().unwrap_or_else(|| {
            self.flows.push(Flow::default());
            self.ends.push(FlowEnds::default());
            self.flows.len() as u32 - 1
        });
        if let Some(&next) = self.free.last() {
            // the next flow to start reuses it: flows end in waves (a step of
            // a collective) and are reused last freed first, so by then its
            // state would have gone cold
            crate::prefetch::prefetch_whole(&self.flows, next as usize);
            crate::prefetch::prefetch_whole(&self.ends, next as usize);
        }
        let narrowest = route.iter().map(|&s| self.routes.cap(s as usize)).fold(cap, f64::min);
        let owner = if self.job_starts.is_empty() { 0 } else { self.job_of(msg.1.src) };
        let f = &mut self.flows[id as usize];
        f.route.set(route);
        (f.remaining, f.rate, f.cap) = (bytes as f64, 0.0, cap);
        (f.alone_rate, f.blame) = (narrowest, NO_LINK);
        let e = &mut self.ends[id as usize];
        // (what its links count when it ends: the bytes they counted when it began)
        e.bytes = bytes as f64 as u64;
        e.alone_ps = bytes as f64 / narrowest;
        (e.worst, e.worst_ps) = (NO_LINK, 0.0);
        e.owner = owner;
        e.msg = Some(msg);
        id
    }

    /// Puts the prepared flow `id` on its links at `now`. Returns whether
    /// a re-solve must be queued for now (see `settle`).
    #[must_use]
    pub fn begin(&mut self, now: Time, id: u32, due: &mut Vec<Due>) -> bool {
        let route = std::mem::take(&mut self.flows[id as usize].route);
        // alone on its links (the common case): its rate is the narrowest, nothing to re-solve
        let alone = route.iter().all(|&s| self.loads[s as usize].n == 0);
        let (f, e) = (&mut self.flows[id as usize], &mut self.ends[id as usize]);
        (f.last, e.start, f.since) = (now, now, now);
        if alone {
            f.rate = f.remaining / e.alone_ps;
            f.version = bump(f.version);
            due.push(((now as f64 + e.alone_ps.ceil()).min(PAST_LIMIT as f64) as Time, id, f.version));
        }
        for &s in route.iter() {
            self.add(s, id);
            let n = self.loads[s as usize].n;
            let u = &mut self.uses[s as usize];
            if n == 1 {
                u.since = now;
            } else {
                u.peak = u.peak.max(n);
            }
        }
        if let Some(c) = self.counters.as_deref_mut() {
            c.changed(now, &route, &self.loads, 1);
        }
        let queue = !alone && self.pending.is_empty();
        if !alone {
            self.pending.extend_from_slice(&route);
        }
        self.flows[id as usize].route = route;
        queue
    }

    /// The re-solve queued for `now`: brings the flows connected to the
    /// links that changed up to `now` and gives them their max–min rates.
    pub fn settle(&mut self, now: Time, due: &mut Vec<Due>) {
        if self.pending.is_empty() {
            return;
        }
        self.resolves += 1;
        let seeds = std::mem::take(&mut self.pending);
        self.component(&seeds);
        self.work += (self.comp_flows.len() + self.comp_links.len()) as u64;
        self.pending = seeds;
        self.pending.clear();
        self.advance(now);
        self.solve(now, due);
    }

    /// The flow `id`'s completion as scheduled with `version`: None if stale,
    /// else its message and latency, and whether a re-solve must be queued
    /// for now for what shared links with it (see `settle`).
    pub fn finish(&mut self, now: Time, id: u32, version: u32) -> Option<((Event, Message, Time), Loss, bool)> {
        let f = self.flows.get(id as usize)?;
        if f.version != version || f.rate == 0.0 || self.ends[id as usize].msg.is_none() {
            return None;
        }
        self.close(id, now);
        let route = std::mem::take(&mut self.flows[id as usize].route);
        let alone = route.iter().all(|&s| self.loads[s as usize].n == 1);
        let bytes = self.ends[id as usize].bytes;
        for &s in route.iter() {
            self.remove(s, id);
            let u = &mut self.uses[s as usize];
            u.bytes += bytes;
            u.peak = u.peak.max(1);
            if self.loads[s as usize].n == 0 {
                u.busy_ps += now - u.since;
            }
        }
        let queue = !alone && self.pending.is_empty();
        if !alone {
            self.pending.extend_from_slice(&route);
        }
        if let Some(c) = self.counters.as_deref_mut() {
            c.changed(now, &route, &self.loads, -1);
        }
        let (f, e) = (&mut self.flows[id as usize], &mut self.ends[id as usize]);
        f.route = route;
        f.version = bump(f.version);
        self.delay_ps += ((now - e.start) as f64 - e.alone_ps).max(0.0);
        self.flowed += 1;
        let alone_ps = e.alone_ps.ceil() as Time;
        // the link that cost it the most under sharing; if none, the narrowest
        // link on its route where that, not its NIC, set its pace alone
        let link = if e.worst == NO_LINK && f.alone_rate < f.cap {
            f.route.iter().copied().find(|&s| self.routes.cap(s as usize) <= f.alone_rate).unwrap_or(NO_LINK)
        } else {
            e.worst
        };
        let nic_in = (link as usize) < self.routes.slots() && self.routes.link(link as usize).0 == LinkClassId::NicIn;
        let loss = Loss { delay_ps: (now - e.start).saturating_sub(alone_ps), link, nic_in, alone_ps, duration_ps: now - e.start };
        let msg = e.msg.take();
        self.free.push(id);
        msg.map(|m| (m, loss, queue))
    }

    /// Marks the flows connected to `seeds` (links) through shared links.
    fn component(&mut self, seeds: &[u32]) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            // marks wrapped: clear them so an old mark never matches
            self.loads.iter_mut().for_each(|l| l.seen = 0);
            self.flows.iter_mut().for_each(|f| f.seen = 0);
            self.epoch = 1;
        }
        self.comp_links.clear();
        self.comp_flows.clear();
        self.stack.clear();
        self.stack.extend_from_slice(seeds);
        while let Some(s) = self.stack.pop() {
            let l = &mut self.loads[s as usize];
            if l.seen == self.epoch {
                continue;
            }
            l.seen = self.epoch;
            self.comp_links.push(s);
            for &id in on(&self.loads, &self.lists, s) {
                let f = &mut self.flows[id as usize];
                if f.seen != self.epoch {
                    f.seen = self.epoch;
                    self.comp_flows.push(id);
                    self.stack.extend_from_slice(&f.route);
                }
            }
        }
    }

    /// When a re-solve asked for at `now` runs: at `now`, or with an interval
    /// set, at the end of the interval `now` is in.
    pub fn solve_time(&self, now: Time) -> Time {
        match self.routes.resolve_interval() {
            0 => now,
            i => now.div_ceil(i).saturating_mul(i).min(PAST_LIMIT),
        }
    }

    /// Brings the component's remaining bytes up to `now`.
    fn advance(&mut self, now: Time) {
        for &id in &self.comp_flows {
            let f = &mut self.flows[id as usize];
            f.remaining = (f.remaining - f.rate * (now - f.last) as f64).max(0.0);
            f.last = now;
        }
    }

    /// Max–min fair rates for the component (progressive filling), and new
    /// completions for the flows whose rate changed.
    fn solve(&mut self, now: Time, due: &mut Vec<Due>) {
        if self.rem.is_empty() {
            (self.rem, self.unfixed) = (vec![0.0; self.loads.len()], vec![0; self.loads.len()]);
        }
        for &s in &self.comp_links {
            (self.rem[s as usize], self.unfixed[s as usize]) = (self.routes.cap(s as usize), self.loads[s as usize].n);
        }
        for &id in &self.comp_flows {
            self.flows[id as usize].new_rate = -1.0;
        }
        let mut left = self.comp_flows.len();
        while left > 0 {
            let before = left;
            let mut level = f64::INFINITY;
            for &s in &self.comp_links {
                let n = self.unfixed[s as usize];
                if n > 0 {
                    level = level.min(self.rem[s as usize].max(0.0) / n as f64);
                }
            }
            for &id in &self.comp_flows {
                let f = &self.flows[id as usize];
                if f.new_rate < 0.0 {
                    level = level.min(f.cap);
                }
            }
            let tol = level * (1.0 + 1e-9);
            for &id in &self.comp_flows {
                let f = &self.flows[id as usize];
                if f.new_rate >= 0.0 {
                    continue;
                }
                // what holds it at the level: its cap, else the first link at it
                let blame = if f.cap <= tol {
                    Some(NO_LINK)
                } else {
                    f.route.iter().copied().find(|&s| self.rem[s as usize].max(0.0) / self.unfixed[s as usize] as f64 <= tol)
                };
                if let Some(blame) = blame {
                    let f = &mut self.flows[id as usize];
                    (f.new_rate, f.new_blame) = (level, blame);
                    for &s in f.route.iter() {
                        self.rem[s as usize] -= level;
                        self.unfixed[s as usize] -= 1;
                    }
                    left -= 1;
                }
            }
            if left == before {
                // rounding left no link at the level: the rest get it
                for &id in &self.comp_flows {
                    let f = &mut self.flows[id as usize];
                    if f.new_rate < 0.0 {
                        (f.new_rate, f.new_blame) = (level, NO_LINK);
                    }
                }
                left = 0;
            }
        }
        for k in 0..self.comp_flows.len() {
            let id = self.comp_flows[k];
            let f = &self.flows[id as usize];
            if f.new_rate != f.rate || f.new_blame != f.blame {
                self.close(id, now);
            }
            let f = &mut self.flows[id as usize];
            f.blame = f.new_blame;
            if f.new_rate != f.rate {
                f.rate = f.new_rate;
                f.version = bump(f.version);
                let t = (now as f64 + (f.remaining / f.rate).ceil()).min(PAST_LIMIT as f64) as Time;
                due.push((t, id, f.version));
            }
        }
    }

    /// Per class of link: what its links carried, ended at `end` (links still busy count until then).
    pub fn stats(&self, end: Time) -> Vec<LinkClassStats> {
        let mut by: std::collections::BTreeMap<LinkClassId, LinkClassStats> = Default::default();
        // the flows still on their links: their bytes, counted by the links when they end
        let mut in_flight: rustc_hash::FxHashMap<u32, u64> = Default::default();
        for (f, e) in self.flows.iter().zip(&self.ends).filter(|(_, e)| e.msg.is_some()) {
            for &s in f.route.iter() {
                *in_flight.entry(s).or_default() += e.bytes;
            }
        }
        for (s, (l, u)) in self.loads.iter().zip(&self.uses).enumerate() {
            let class = self.routes.link(s).0;
            let e = by.entry(class).or_insert_with(|| LinkClassStats { class: class.name(), ..Default::default() });
            let busy = u.busy_ps + if l.n == 0 { 0 } else { end.saturating_sub(u.since) };
            let bytes = u.bytes + in_flight.get(&(s as u32)).copied().unwrap_or(0);
            // (a flow on it now is one at once, at least)
            let peak = u.peak.max((l.n > 0) as u32);
            e.links += 1;
            e.bytes += bytes;
            e.busy_max_ps = e.busy_max_ps.max(busy);
            e.bytes_max = e.bytes_max.max(bytes);
            e.peak_flows = e.peak_flows.max(peak);
            e.delay_ps += self.link_delay.get(s).copied().unwrap_or(0.0);
        }
        by.into_values().collect()
    }
}

impl<P: Program, O: Probe> Engine<P, O> {
    /// Whether a message of `size` bytes from `src` to `dst` travels as a
    /// flow: flows are on, the ranks are on different nodes, and it has bytes
    /// beyond its first.
    #[inline]
    pub(super) fn flows_on(&self, src: u32, dst: u32, size: u64) -> bool {
        self.fabric.flows.is_some() && size > 1 && self.view.net.class(src, dst) == crate::network::OTHER_NODE
    }

    /// Sends `msg` (queued for `arrive`, leaving its NIC at `depart`, and
    /// `left` after the sender's overhead) as a flow: its last byte arrives
    /// when the flow ends, then the message takes the time from `depart` to
    /// `arrive` it had alone. A send that leaves later than now (a DMA NIC
    /// still sending earlier messages, a handshake's data behind them) holds
    /// no link until then: its flow starts when it leaves.
    #[cold]
    pub(super) fn start_flow(&mut self, msg: Event, m: Message, (depart, left): (Time, Time), arrive: Time, big_g_ps: f64) {
        if depart > self.view.now {
            let flows = self.fabric.flows.as_deref_mut().expect("flows on");
            let it = Some(Leaving { msg, m, left, arrive, big_g_ps });
            let slot = match flows.leaving_free.pop() {
                Some(slot) => {
                    flows.leaving[slot as usize] = it;
                    slot
                }
                None => {
                    flows.leaving.push(it);
                    flows.leaving.len() as u32 - 1
                }
            };
            self.queue.push_new(Event::new(depart, EvKind::FlowStart, 0, 0, 0, msg.rank, 0, 0, slot));
            self.tell(|o, v| o.flow_waits(v, slot));
            return;
        }
        let pl = self.view.net.platform.as_deref().expect("flows imply a platform");
        let (a, b) = (pl.node(m.src), pl.node(m.dst));
        let key = crate::rng::hash(m.src as u64, m.dst as u64, left, m.bytes);
        let flows = self.fabric.flows.as_deref_mut().expect("flows on");
        let mut route = std::mem::take(&mut flows.route);
        route.clear();
        flows.routes.route((m.src, m.dst), (a, b), key, |s| flows.load(s), |s| route.push(s as u32));
        let cap = if big_g_ps > 0.0 { 1.0 / big_g_ps } else { f64::INFINITY };
        if route.is_empty() && cap.is_infinite() {
            // nothing limits it: it arrives as it would without flows
            flows.route = route;
            return self.deliver_flowed(msg, m, arrive);
        }
        // The flow begins as the send is handled, and its message arrives
        // the latency after its last byte, the sender's overhead included
        // (the same end alone; begun `left` later, events would be added
        // and a flow's state would go cold in between).
        let now = self.view.now;
        let mut due = std::mem::take(&mut flows.due);
        let id = flows.prepare(&route, m.bytes - 1, cap, (msg, m, arrive - now));
        let settle = flows.begin(now, id, &mut due);
        flows.route = route;
        self.tell(|o, v| o.flow_started(v, id, &m));
        self.schedule_flows(due, msg.rank);
        if settle {
            let at = self.fabric.flows.as_deref().expect("flows on").solve_time(now);
            self.queue.push_new(Event::new(at, EvKind::FlowSolve, 0, 0, 0, msg.rank, 0, 0, 0));
        }
    }

    /// A send's flow starting as it leaves its NIC (`start_flow`).
    pub(super) fn on_flow_start(&mut self, ev: Event) {
        let flows = self.fabric.flows.as_deref_mut().expect("flow events imply flows");
        let Leaving { msg, m, left, arrive, big_g_ps } = flows.leaving[ev.id as usize].take().expect("a send waiting to leave");
        flows.leaving_free.push(ev.id);
        self.tell(|o, v| o.flow_leaves(v, ev.id));
        self.start_flow(msg, m, (ev.time, left), arrive, big_g_ps);
    }

    /// The re-solve queued behind the flows' starts and ends at this time.
    pub(super) fn on_flow_solve(&mut self, ev: Event) {
        let flows = self.fabric.flows.as_deref_mut().expect("flow events imply flows");
        let mut due = std::mem::take(&mut flows.due);
        flows.settle(ev.time, &mut due);
        self.schedule_flows(due, ev.rank);
    }

    /// A flow's completion as last scheduled (ignored if stale).
    pub(super) fn on_flow_done(&mut self, ev: Event) {
        let flows = self.fabric.flows.as_deref_mut().expect("flow events imply flows");
        let done = flows.finish(ev.time, ev.id, ev.tag);
        if let Some(((msg, m, latency), loss, settle)) = done {
            if settle {
                let at = flows.solve_time(ev.time);
                self.queue.push_new(Event::new(at, EvKind::FlowSolve, 0, 0, 0, ev.rank, 0, 0, 0));
            }
            self.tell(|o, v| o.flow_ended(v, ev.id, loss));
            self.deliver_flowed(msg, m, ev.time.saturating_add(latency).min(PAST_LIMIT));
        }
    }

    /// Queues the flows' new completions (`rank`: any rank, for prefetching).
    fn schedule_flows(&mut self, mut due: Vec<Due>, rank: u32) {
        for (t, id, version) in due.drain(..) {
            self.queue.push_new(Event::new(t, EvKind::FlowDone, 0, 0, 0, rank, 0, version, id));
        }
        self.fabric.flows.as_deref_mut().expect("flows").due = due;
    }

    /// Queues a message whose bytes have arrived (the receiver pays no per-byte G again).
    fn deliver_flowed(&mut self, mut msg: Event, mut m: Message, arrive: Time) {
        msg.set_flowed();
        msg.time = self.handled_from(msg.rank, msg.cpu(), msg.nic(), arrive);
        m.stamp = self.queue.push_new(msg);
        m.flight.1 = arrive;
        self.tell(|o, v| o.message_queued(v, m));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{LinkModel, Topology};

    /// Flows over hand-made links: `caps` per link, one capacity and then
    /// at most one other. A fully connected network has no links between
    /// switches: the first run are its NICs' links, the second its nodes'.
    fn flows(caps: &[f64]) -> Flows {
        let first = caps.iter().take_while(|&&c| c == caps[0]).count();
        let rest = &caps[first..];
        assert!(rest.iter().all(|&c| c == rest[0]), "two capacities at most: {caps:?}");
        let nodes = rest.len().div_ceil(2) as u32;
        let model = LinkModel { flow: true, ..Default::default() };
        let node_cap = rest.first().copied().unwrap_or(0.0);
        Flows::new(Routes::new(model, &Topology::FullyConnected, first as u32, nodes, caps[0], node_cap, 0))
    }

    fn msg() -> (Event, Message, Time) {
        let m = Message { stamp: 0, src: 0, dst: 1, cpu: None, flight: (0, 0), tag: 0, bytes: 0 };
        (Event::new(0, EvKind::Msg, 0, 0, 0, 1, 0, 0, 0), m, 0)
    }

    /// Runs flows (start time, route, bytes, cap) to the end; each one's end time.
    fn ends(caps: &[f64], starts: &[(Time, Vec<u32>, u64, f64)]) -> Vec<Time> {
        let mut f = flows(caps);
        let mut due = Vec::new();
        let mut pending: Vec<(Time, u32, u32)> = Vec::new();
        let mut ended = vec![0; starts.len()];
        let mut next_start = 0;
        // flows are numbered in start order (none ends before the last starts, so none is reused)
        loop {
            let t_start = starts.get(next_start).map(|s| s.0);
            pending.sort();
            let t_due = pending.first().map(|d| d.0);
            match (t_start, t_due) {
                (Some(ts), td) if td.is_none_or(|td| ts <= td) => {
                    let (t, route, bytes, cap) = &starts[next_start];
                    f.start(*t, route, *bytes, *cap, msg(), &mut due);
                    next_start += 1;
                }
                (_, Some(_)) => {
                    let (t, id, v) = pending.remove(0);
                    if f.finish(t, id, v).is_some() {
                        ended[id as usize] = t;
                    }
                    f.settle(t, &mut due);
                }
                _ => break,
            }
            pending.append(&mut due);
        }
        ended
    }

    #[test]
    fn a_flows_search_state_is_two_cache_lines() {
        assert_eq!(std::mem::size_of::<Flow>(), 128);
        assert_eq!(std::mem::offset_of!(Flow, new_blame), 60);
    }

    #[test]
    fn flows_on_one_link_share_it_equally() {
        // n flows of 1 MB on a 1 B/ps link: each 1/n, all end at n µs
        for n in 1..6u64 {
            let t = ends(&[1.0], &(0..n).map(|_| (0, vec![0], 1_000_000, f64::INFINITY)).collect::<Vec<_>>());
            assert!(t.iter().all(|&x| x == n * 1_000_000), "n={n}: {t:?}");
        }
    }

    #[test]
    fn progressive_filling_gives_the_max_min_rates() {
        // Links a (1 B/ps) and b (2 B/ps); flow 0 crosses both, flow 1 a, flow 2 b.
        // Max–min: flows 0 and 1 get 0.5 on a; flow 2 the rest of b, 1.5.
        let mut f = flows(&[1.0, 2.0]);
        let mut due = Vec::new();
        for r in [vec![0, 1], vec![0], vec![1]] {
            f.start(0, &r, 3_000_000, f64::INFINITY, msg(), &mut due);
        }
        let rates: Vec<f64> = f.flows.iter().map(|x| x.rate).collect();
        assert_eq!(rates, vec![0.5, 0.5, 1.5]);
        // a cap below the fair share frees capacity for the others
        let mut f = flows(&[1.0]);
        f.start(0, &[0], 1000, 0.2, msg(), &mut due);
        f.start(0, &[0], 1000, f64::INFINITY, msg(), &mut due);
        assert_eq!(f.flows.iter().map(|x| x.rate).collect::<Vec<_>>(), vec![0.2, 0.8]);
    }

    #[test]
    fn rates_change_when_flows_join_and_leave() {
        // 1 B/ps: flow 0 (4 MB) alone for 1 µs (1 MB moved), then shares with
        // flow 1 (1 MB): both at 0.5 until flow 1 ends at 3 µs; flow 0 has
        // 2 MB left, alone again: ends at 5 µs.
        let t = ends(&[1.0], &[(0, vec![0], 4_000_000, f64::INFINITY), (1_000_000, vec![0], 1_000_000, f64::INFINITY)]);
        assert_eq!(t, vec![5_000_000, 3_000_000]);
    }

    #[test]
    fn the_parking_lot_gives_the_long_flow_its_share_of_every_link() {
        // 3 links of 1 B/ps in a row; one flow over all three, one per link:
        // every flow 0.5, the long one ends with the short ones (2 µs for 1 MB)
        let mut starts = vec![(0, vec![0, 1, 2], 1_000_000, f64::INFINITY)];
        starts.extend((0..3).map(|l| (0, vec![l], 1_000_000, f64::INFINITY)));
        assert_eq!(ends(&[1.0; 3], &starts), vec![2_000_000; 4]);
    }
}
