//! Where the paths of queued events are kept, found by their stamps.

use super::Path;
use crate::engine::Mix;
use crate::prefetch::{prefetch, prefetch_whole};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// Entries of the events' direct table per rank (rounded up to a power of two).
pub(super) const DIRECT_PER_RANK: usize = 4;

/// The paths of queued (or waiting) events, in slots reused last freed
/// first (the slot just freed by the event being processed is the one in
/// cache when it queues the next). Stamps are handed out in order and most
/// stored paths are short-lived, so a stamp finds its slot in a table
/// indexed by its low bits (`direct`), which the engine prefetches for the
/// events about to run; a stamp whose entry there is taken by a live one
/// goes to a hash table (`overflow`).
pub(super) struct EventPaths {
    direct: Vec<Entry>,
    /// log2 of the direct table's size.
    bits: u32,
    overflow: HashMap<u64, u32, BuildHasherDefault<Mix>>,
    slots: Vec<Path>,
    free: Vec<u32>,
}

/// A direct table entry: the slot of the stamp whose low bits lead here,
/// and the stamp's other bits (`tag`). Stamps take 40 bits (queue.rs) and
/// the table at least 2^8 entries, so the tag names the stamp exactly.
#[derive(Clone, Copy)]
pub(super) struct Entry {
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
    pub(super) fn new(entries: usize) -> Self {
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
    pub(super) fn find(&self, stamp: u64) -> Option<(u32, bool)> {
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

    pub(super) fn insert(&mut self, stamp: u64, path: Path) {
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
    pub(super) fn remove(&mut self, stamp: u64) -> Option<&Path> {
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
    pub(super) fn prefetch_entry(&self, stamp: u64) {
        prefetch(&self.direct, self.entry(stamp).0);
    }
    #[inline(always)]
    pub(super) fn prefetch_path(&self, stamp: u64) {
        let slot = self.direct[self.entry(stamp).0].slot;
        if slot != FREE.slot {
            prefetch_whole(&self.slots, slot as usize);
        }
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &Path> {
        self.live().map(|i| &self.slots[i])
    }

    pub(super) fn renumber(&mut self, f: impl Fn(&mut Path)) {
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

    pub(super) fn bytes(&self) -> usize {
        self.direct.capacity() * std::mem::size_of::<Entry>()
            + self.overflow.capacity() * 13
            + self.slots.capacity() * std::mem::size_of::<Path>()
            + self.free.capacity() * 4
    }
}
