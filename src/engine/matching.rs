//! MPI message matching: per rank, a queue of posted receives and a queue of
//! unexpected messages, searched first-posted-first (which gives MPI's
//! non-overtaking order between a pair). Entries live in two shared slabs
//! (posted receives keep only what matching needs: 16 bytes; unexpected
//! messages 24) with per-rank circular lists: a list is known by its tail,
//! whose successor is the head, so a rank's two lists fit one u64 that the
//! caller keeps next to the rank's clocks, and an empty list costs no cache
//! miss.

use crate::program::ANY;
use crate::units::MAX_MESSAGE_BYTES;

const NIL: u32 = u32::MAX;

/// A posted receive (its size, cpu, nic and mark are not kept: 0) or an
/// unexpected message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Posted receive: the wanted source (may be ANY). Unexpected message: its sender.
    pub src: u32,
    pub tag: u32,
    pub size: u64,
    /// Posted receive: the receive's op id. Unexpected message: the send's op id.
    pub id: u32,
    pub cpu: u8,
    pub nic: u8,
    /// Unexpected: a handshake rendezvous's request-to-send, not the data.
    pub rts: bool,
}

/// A posted receive, 16 bytes: what matching and completion need.
#[derive(Clone, Copy)]
struct Posted {
    src: u32,
    tag: u32,
    id: u32,
    next: u32,
}

/// An unexpected message, 24 bytes: a posted receive's fields, with cpu
/// and nic in the top 16 bits of the size and the request-to-send mark in
/// the bit below them.
#[derive(Clone, Copy)]
struct Message {
    base: Posted,
    size_cpu_nic: u64,
}

const SIZE_BITS: u32 = 47;
// every size the engine lets in fits the packing
const _: () = assert!(MAX_MESSAGE_BYTES <= 1 << SIZE_BITS);

/// A slab node on a circular list: its source, tag, id and link are a `Posted`.
trait Node: Copy {
    fn new(e: Entry) -> Self;
    fn entry(&self) -> Entry;
    fn base(&self) -> &Posted;
    fn base_mut(&mut self) -> &mut Posted;
}

impl Node for Posted {
    fn new(e: Entry) -> Self {
        Posted { src: e.src, tag: e.tag, id: e.id, next: NIL }
    }
    fn entry(&self) -> Entry {
        Entry { src: self.src, tag: self.tag, size: 0, id: self.id, cpu: 0, nic: 0, rts: false }
    }
    #[inline(always)]
    fn base(&self) -> &Posted {
        self
    }
    #[inline(always)]
    fn base_mut(&mut self) -> &mut Posted {
        self
    }
}

impl Node for Message {
    fn new(e: Entry) -> Self {
        debug_assert!(e.size < 1 << SIZE_BITS);
        let packed = e.size | (e.rts as u64) << SIZE_BITS | (e.cpu as u64) << 56 | (e.nic as u64) << 48;
        Message { base: Posted::new(e), size_cpu_nic: packed }
    }
    fn entry(&self) -> Entry {
        Entry {
            size: self.size_cpu_nic & ((1 << SIZE_BITS) - 1),
            cpu: (self.size_cpu_nic >> 56) as u8,
            nic: (self.size_cpu_nic >> 48) as u8,
            rts: self.size_cpu_nic >> SIZE_BITS & 1 == 1,
            ..self.base.entry()
        }
    }
    #[inline(always)]
    fn base(&self) -> &Posted {
        &self.base
    }
    #[inline(always)]
    fn base_mut(&mut self) -> &mut Posted {
        &mut self.base
    }
}

/// Nodes of one kind, with a free list threaded through the unused ones.
struct Slab<N> {
    nodes: Vec<N>,
    free: u32,
}

impl<N: Node> Slab<N> {
    fn new() -> Self {
        Slab { nodes: Vec::new(), free: NIL }
    }

    /// Appends `e` to the circular list ending at `tail`; returns the new tail.
    fn push(&mut self, tail: u32, e: Entry) -> u32 {
        let idx = if self.free != NIL {
            let i = self.free;
            self.free = self.nodes[i as usize].base().next;
            // the next push takes that node: its line may have gone cold
            crate::prefetch::prefetch(&self.nodes, self.free as usize);
            self.nodes[i as usize] = N::new(e);
            i
        } else {
            super::queue::push_frugal(&mut self.nodes, N::new(e));
            (self.nodes.len() - 1) as u32
        };
        if tail == NIL {
            self.nodes[idx as usize].base_mut().next = idx;
        } else {
            let head = self.nodes[tail as usize].base().next;
            self.nodes[idx as usize].base_mut().next = head;
            self.nodes[tail as usize].base_mut().next = idx;
        }
        idx
    }

    /// Removes the first node from the head on that `hit` accepts; returns
    /// its entry and the list's new tail.
    #[inline]
    fn take(&mut self, tail: u32, hit: impl Fn(&N) -> bool) -> Option<(Entry, u32)> {
        if tail == NIL {
            return None;
        }
        let mut prev = tail;
        let mut cur = self.nodes[tail as usize].base().next;
        loop {
            let node = self.nodes[cur as usize];
            if hit(&node) {
                let new_tail = if cur == prev {
                    NIL // it was the only one
                } else {
                    self.nodes[prev as usize].base_mut().next = node.base().next;
                    if cur == tail {
                        prev
                    } else {
                        tail
                    }
                };
                self.nodes[cur as usize].base_mut().next = self.free;
                self.free = cur;
                return Some((node.entry(), new_tail));
            }
            if cur == tail {
                return None;
            }
            prev = cur;
            cur = node.base().next;
        }
    }

    fn entries(&self, tail: u32) -> Vec<Entry> {
        let mut out = Vec::new();
        if tail == NIL {
            return out;
        }
        let mut cur = self.nodes[tail as usize].base().next;
        loop {
            out.push(self.nodes[cur as usize].entry());
            if cur == tail {
                return out;
            }
            cur = self.nodes[cur as usize].base().next;
        }
    }

    #[inline(always)]
    fn prefetch(&self, i: u32) {
        crate::prefetch::prefetch(&self.nodes, i as usize);
    }

    fn capacity_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<N>()
    }
}

/// A rank's two lists: the tails' slab indices, the posted receives' in
/// the low half, the unexpected messages' in the high half.
pub type Lists = u64;

pub const EMPTY_LISTS: Lists = u64::MAX;

#[inline(always)]
fn tail(l: Lists, q: Queue) -> u32 {
    (l >> (32 * q as u32)) as u32
}

#[inline(always)]
fn set_tail(l: &mut Lists, q: Queue, t: u32) {
    let shift = 32 * q as u32;
    *l = *l & !(0xffff_ffff << shift) | (t as u64) << shift;
}

/// Which of a rank's two queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    Posted = 0,
    Unexpected = 1,
}

pub struct Matcher {
    posted: Slab<Posted>,
    unexpected: Slab<Message>,
    live: usize,
}

#[inline]
fn matches(want_src: u32, want_tag: u32, src: u32, tag: u32) -> bool {
    (want_src == ANY || want_src == src) && (want_tag == ANY || want_tag == tag)
}

impl Default for Matcher {
    fn default() -> Self {
        Self::new()
    }
}

impl Matcher {
    pub fn new() -> Self {
        Matcher { posted: Slab::new(), unexpected: Slab::new(), live: 0 }
    }

    /// Hints that the tails of `lists` (and so the heads' indices) will be needed soon.
    #[inline(always)]
    pub fn prefetch(&self, lists: Lists) {
        self.posted.prefetch(tail(lists, Queue::Posted));
        self.unexpected.prefetch(tail(lists, Queue::Unexpected));
    }

    /// Appends `e` to list `q` of `lists`.
    #[inline]
    pub fn push(&mut self, lists: &mut Lists, q: Queue, e: Entry) {
        let t = tail(*lists, q);
        let new_tail = match q {
            Queue::Posted => self.posted.push(t, e),
            Queue::Unexpected => self.unexpected.push(t, e),
        };
        set_tail(lists, q, new_tail);
        self.live += 1;
    }

    /// Removes and returns the first entry of list `q` that matches. For the
    /// posted receives, (src, tag) is an arriving message and the entries
    /// carry wildcards; for the unexpected messages, (src, tag) is a
    /// receive (possibly with wildcards) and entries are concrete messages.
    #[inline]
    pub fn take(&mut self, lists: &mut Lists, q: Queue, src: u32, tag: u32) -> Option<Entry> {
        let t = tail(*lists, q);
        let (e, new_tail) = match q {
            Queue::Posted => self.posted.take(t, |n| matches(n.src, n.tag, src, tag)),
            Queue::Unexpected => self.unexpected.take(t, |n| matches(src, tag, n.base.src, n.base.tag)),
        }?;
        set_tail(lists, q, new_tail);
        self.live -= 1;
        Some(e)
    }

    /// Entries still in list `q` of `lists`, in order.
    pub fn entries(&self, lists: Lists, q: Queue) -> Vec<Entry> {
        match q {
            Queue::Posted => self.posted.entries(tail(lists, q)),
            Queue::Unexpected => self.unexpected.entries(tail(lists, q)),
        }
    }

    pub fn live(&self) -> usize {
        self.live
    }

    pub fn capacity_bytes(&self) -> usize {
        self.posted.capacity_bytes() + self.unexpected.capacity_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(src: u32, tag: u32, id: u32) -> Entry {
        Entry { src, tag, size: 8, id, cpu: 0, nic: 0, rts: false }
    }

    #[test]
    fn nodes_are_small_and_round_trip_their_entry() {
        assert_eq!((std::mem::size_of::<Message>(), std::mem::size_of::<Posted>()), (24, 16));
        let x = Entry { src: 3, tag: ANY, size: (1 << 46) + 5, id: 77, cpu: 255, nic: 255, rts: true };
        assert_eq!(Message::new(x).entry(), x);
        let posted = Entry { size: 0, cpu: 0, nic: 0, rts: false, ..x };
        assert_eq!(Posted::new(x).entry(), posted);
    }

    #[test]
    fn first_posted_matching_receive_wins() {
        let mut m = Matcher::new();
        let mut l = EMPTY_LISTS;
        m.push(&mut l, Queue::Posted, e(0, 5, 10));
        m.push(&mut l, Queue::Posted, e(ANY, ANY, 11));
        m.push(&mut l, Queue::Posted, e(0, 5, 12));
        assert_eq!(m.take(&mut l, Queue::Posted, 0, 7).unwrap().id, 11); // only the wildcard fits tag 7
        assert_eq!(m.take(&mut l, Queue::Posted, 0, 5).unwrap().id, 10);
        assert_eq!(m.take(&mut l, Queue::Posted, 0, 5).unwrap().id, 12);
        assert!(m.take(&mut l, Queue::Posted, 0, 5).is_none());
        assert_eq!((m.live(), l), (0, EMPTY_LISTS));
    }

    #[test]
    fn unexpected_messages_are_non_overtaking_and_slots_are_reused() {
        let mut m = Matcher::new();
        let mut l = EMPTY_LISTS;
        for id in 0..3 {
            m.push(&mut l, Queue::Unexpected, e(1, 0, id));
        }
        assert_eq!(m.take(&mut l, Queue::Unexpected, ANY, 0).unwrap().id, 0);
        assert_eq!(m.take(&mut l, Queue::Unexpected, 1, ANY).unwrap().id, 1);
        m.push(&mut l, Queue::Unexpected, e(0, 0, 9));
        assert_eq!(m.entries(l, Queue::Unexpected).iter().map(|x| x.id).collect::<Vec<_>>(), vec![2, 9]);
        assert_eq!(m.unexpected.nodes.len(), 3);
        assert!(m.take(&mut l, Queue::Unexpected, 1, 3).is_none());
        // removing the tail keeps appends in order
        assert_eq!(m.take(&mut l, Queue::Unexpected, 0, 0).unwrap().id, 9);
        m.push(&mut l, Queue::Unexpected, e(4, 4, 5));
        assert_eq!(m.entries(l, Queue::Unexpected).iter().map(|x| x.id).collect::<Vec<_>>(), vec![2, 5]);
    }

    #[test]
    fn a_ranks_two_lists_share_one_word_independently() {
        let mut m = Matcher::new();
        let mut l = EMPTY_LISTS;
        for id in 0..3 {
            m.push(&mut l, Queue::Posted, e(1, 0, id));
            m.push(&mut l, Queue::Unexpected, e(2, 0, 10 + id));
        }
        // the head, then a new tail, of the posted list
        assert_eq!(m.take(&mut l, Queue::Posted, 1, 0).map(|x| x.id), Some(0));
        m.push(&mut l, Queue::Posted, e(3, 0, 3));
        assert_eq!(m.take(&mut l, Queue::Posted, 3, 0).map(|x| x.id), Some(3));
        m.push(&mut l, Queue::Posted, e(4, 0, 4));
        assert_eq!(m.entries(l, Queue::Posted).iter().map(|x| x.id).collect::<Vec<_>>(), vec![1, 2, 4]);
        assert_eq!(m.entries(l, Queue::Unexpected).iter().map(|x| x.id).collect::<Vec<_>>(), vec![10, 11, 12]);
        for src in [4, 1, 1] {
            assert!(m.take(&mut l, Queue::Posted, src, 0).is_some());
        }
        assert_eq!(tail(l, Queue::Posted), NIL);
        assert_eq!(m.entries(l, Queue::Unexpected).len(), 3);
        assert!(m.take(&mut l, Queue::Unexpected, 9, 0).is_none());
    }
}
