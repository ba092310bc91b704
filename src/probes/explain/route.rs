//! The critical path's route through the ranks: where each path entered each
//! rank (a tree of hops), collected as it grows, and walked back at the end.

use super::{Explain, Path, Segment};
use crate::time::Time;

/// A path arriving on `rank` from hop `from` with causes `at`; `hop` once made.
#[derive(Debug, Clone, Copy)]
pub(super) struct Arrival {
    pub(super) rank: u32,
    pub(super) from: u32,
    pub(super) at: [Time; 7],
    pub(super) hop: Option<u32>,
    /// The shared link its message waited on, and how long.
    pub(super) link: Option<(u32, Time)>,
}

/// A path's arrival on a rank: the hop it came from, and its causes at
/// that moment (they sum to the arrival time). The rank is kept apart
/// ([`Explain::hop_rank`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Hop {
    pub(super) from: u32,
    pub(super) at: [Time; 7],
    /// The iteration the rank was in (UNKNOWN where the program does not say).
    pub(super) iteration: u32,
}

pub(super) const UNKNOWN: u32 = u32::MAX;
/// The root hop: no rank yet.
pub(super) const NOWHERE: Hop = Hop { from: 0, at: [0; 7], iteration: UNKNOWN };
/// The root hop's rank.
pub(super) const NO_RANK: u32 = u32::MAX;
/// Hops kept at least (a collection costs a pass over them); beyond it two
/// per rank. Collections run when the tree holds twice the budget (in tests,
/// twice what the last one kept, to collect early and often).
pub(super) const MIN_HOP_BUDGET: usize = 1 << 15;
pub(super) const HOPS_PER_RANK: usize = 2;

#[cfg(test)]
thread_local! {
    /// Tests: collections run so far on this thread, whether to skip them,
    /// and a hop budget to use instead of the engine's (if not 0).
    pub(super) static COLLECTIONS: std::cell::Cell<(u32, bool, usize)> = const { std::cell::Cell::new((0, false, 0)) };
}
/// Room for the hops one event may add past the threshold (one per clock it
/// sets): the tree grows by doubling, but never past the threshold and this.
pub(super) const HOPS_PER_EVENT: usize = 1024;

impl Explain {
    /// The hop of `path` now on `rank`: its own if it is on that rank; if it
    /// came from elsewhere, a new one that records where and when (when the
    /// current event arrived, if that is how).
    #[inline(always)]
    pub(super) fn arrive(&mut self, path: &Path, rank: u32) -> u32 {
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
            if let Some(link) = a.link {
                self.hop_links.insert(self.hops.len() as u32, link);
            }
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
    pub(super) fn collect(&mut self) {
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
        if !self.hop_links.is_empty() {
            let links = std::mem::take(&mut self.hop_links);
            self.hop_links = links.into_iter().filter(|(h, _)| new[*h as usize] < EARLIER).map(|(h, l)| (new[h as usize], l)).collect();
        }
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
    pub(super) fn route(&self, path: &Path) -> Vec<Segment> {
        let mut hops = Vec::new();
        let mut h = path.hop;
        while h != 0 {
            hops.push((self.hop_rank[h as usize], self.hops[h as usize], self.hop_links.get(&h).copied()));
            h = self.hops[h as usize].from;
        }
        hops.reverse();
        let mut segments = Vec::with_capacity(hops.len());
        for (k, &(rank, hop, link)) in hops.iter().enumerate() {
            let from = hop.at;
            let to = hops.get(k + 1).map_or(path.ps, |(_, next, _)| next.at);
            // a path's causes only grow as it goes
            let ps = std::array::from_fn(|c| to[c].saturating_sub(from[c]));
            debug_assert!((0..7).all(|c| to[c] >= from[c]), "{from:?} to {to:?}");
            let iteration = (hop.iteration != UNKNOWN).then_some(hop.iteration);
            segments.push(Segment { rank, iteration, start: from.iter().sum(), end: to.iter().sum(), ps, link });
        }
        segments
    }

    pub(super) fn push_hop(&mut self, rank: u32, hop: Hop) {
        self.hops.push(hop);
        self.hop_rank.push(rank);
    }
}
