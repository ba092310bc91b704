//! MPI message matching: per rank, a queue of posted receives and a queue of
//! unexpected messages, searched first-posted-first (which gives MPI's
//! non-overtaking order between a pair). Entries live in one shared slab with
//! per-rank linked lists, so an idle rank costs 16 bytes, not two vectors.

use crate::program::ANY;

const NIL: u32 = u32::MAX;

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
}

#[derive(Clone, Copy)]
struct Node {
    e: Entry,
    next: u32,
}

#[derive(Clone, Copy)]
struct List {
    head: u32,
    tail: u32,
}

const EMPTY: List = List { head: NIL, tail: NIL };

/// Which of a rank's two queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    Posted = 0,
    Unexpected = 1,
}

pub struct Matcher {
    lists: Vec<[List; 2]>,
    slab: Vec<Node>,
    free: u32,
    live: usize,
}

#[inline]
fn matches(want_src: u32, want_tag: u32, src: u32, tag: u32) -> bool {
    (want_src == ANY || want_src == src) && (want_tag == ANY || want_tag == tag)
}

impl Matcher {
    pub fn new(ranks: u32) -> Self {
        Matcher { lists: vec![[EMPTY, EMPTY]; ranks as usize], slab: Vec::new(), free: NIL, live: 0 }
    }

    pub fn push(&mut self, rank: u32, q: Queue, e: Entry) {
        let idx = if self.free != NIL {
            let i = self.free;
            self.free = self.slab[i as usize].next;
            self.slab[i as usize] = Node { e, next: NIL };
            i
        } else {
            super::queue::push_frugal(&mut self.slab, Node { e, next: NIL });
            (self.slab.len() - 1) as u32
        };
        let list = &mut self.lists[rank as usize][q as usize];
        if list.tail == NIL {
            list.head = idx;
        } else {
            self.slab[list.tail as usize].next = idx;
        }
        list.tail = idx;
        self.live += 1;
    }

    /// Removes and returns the first entry of `rank`'s queue `q` that matches.
    /// For the posted queue, (src, tag) is an arriving message and the entries
    /// carry wildcards; for the unexpected queue, (src, tag) is a receive
    /// (possibly with wildcards) and entries are concrete messages.
    pub fn take(&mut self, rank: u32, q: Queue, src: u32, tag: u32) -> Option<Entry> {
        let mut prev = NIL;
        let mut cur = self.lists[rank as usize][q as usize].head;
        while cur != NIL {
            let node = self.slab[cur as usize];
            let hit = match q {
                Queue::Posted => matches(node.e.src, node.e.tag, src, tag),
                Queue::Unexpected => matches(src, tag, node.e.src, node.e.tag),
            };
            if hit {
                let list = &mut self.lists[rank as usize][q as usize];
                if prev == NIL {
                    list.head = node.next;
                } else {
                    self.slab[prev as usize].next = node.next;
                }
                if list.tail == cur {
                    list.tail = prev;
                }
                self.slab[cur as usize].next = self.free;
                self.free = cur;
                self.live -= 1;
                return Some(node.e);
            }
            prev = cur;
            cur = node.next;
        }
        None
    }

    /// Entries still queued at `rank`, in order.
    pub fn entries(&self, rank: u32, q: Queue) -> Vec<Entry> {
        let mut out = Vec::new();
        let mut cur = self.lists[rank as usize][q as usize].head;
        while cur != NIL {
            out.push(self.slab[cur as usize].e);
            cur = self.slab[cur as usize].next;
        }
        out
    }

    pub fn live(&self) -> usize {
        self.live
    }

    pub fn capacity_bytes(&self) -> usize {
        self.lists.capacity() * std::mem::size_of::<[List; 2]>() + self.slab.capacity() * std::mem::size_of::<Node>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(src: u32, tag: u32, id: u32) -> Entry {
        Entry { src, tag, size: 8, id, cpu: 0, nic: 0 }
    }

    #[test]
    fn first_posted_matching_receive_wins() {
        let mut m = Matcher::new(2);
        m.push(1, Queue::Posted, e(0, 5, 10));
        m.push(1, Queue::Posted, e(ANY, ANY, 11));
        m.push(1, Queue::Posted, e(0, 5, 12));
        assert_eq!(m.take(1, Queue::Posted, 0, 7).unwrap().id, 11); // only the wildcard fits tag 7
        assert_eq!(m.take(1, Queue::Posted, 0, 5).unwrap().id, 10);
        assert_eq!(m.take(1, Queue::Posted, 0, 5).unwrap().id, 12);
        assert!(m.take(1, Queue::Posted, 0, 5).is_none());
        assert_eq!(m.live(), 0);
    }

    #[test]
    fn unexpected_messages_are_non_overtaking_and_slots_are_reused() {
        let mut m = Matcher::new(3);
        for id in 0..3 {
            m.push(2, Queue::Unexpected, e(1, 0, id));
        }
        assert_eq!(m.take(2, Queue::Unexpected, ANY, 0).unwrap().id, 0);
        assert_eq!(m.take(2, Queue::Unexpected, 1, ANY).unwrap().id, 1);
        m.push(2, Queue::Unexpected, e(0, 0, 9));
        assert_eq!(m.entries(2, Queue::Unexpected).iter().map(|x| x.id).collect::<Vec<_>>(), vec![2, 9]);
        assert_eq!(m.slab.len(), 3);
        assert!(m.take(2, Queue::Unexpected, 1, 3).is_none());
    }
}
