//! The pending-event queue, ordered by (time, insertion stamp) exactly like
//! LogGOPSim's STRICT_ORDER queue: events at equal times run in the order they
//! were first created; a re-queued event keeps its original stamp.
//!
//! Most new events are due "now" (ops freed by the current event), so those go
//! to a FIFO, which is already in key order, instead of the heap.

use crate::time::Time;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum EvKind {
    Send = 1,
    Recv = 2,
    Calc = 3,
    /// A message's first byte reaching its receiver.
    Msg = 4,
    /// MPI_Test; `tag` is 0 when first queued, 1 once deferred behind same-time events.
    Probe = 5,
}

#[derive(Debug, Clone, Copy)]
pub struct Event {
    pub time: Time,
    pub stamp: u64,
    pub size: u64,
    /// Owner (for Msg: the receiver).
    pub rank: u32,
    /// Send: destination; Recv: source (or ANY); Msg: the sender.
    pub peer: u32,
    pub tag: u32,
    /// Program handle (for Msg: the sender's send op).
    pub id: u32,
    pub kind: EvKind,
    pub cpu: u8,
    pub nic: u8,
}

impl Event {
    #[inline]
    fn key(&self) -> (Time, u64) {
        (self.time, self.stamp)
    }
}

/// Min-heap adapter.
struct ByKey(Event);

impl PartialEq for ByKey {
    fn eq(&self, o: &Self) -> bool {
        self.0.key() == o.0.key()
    }
}
impl Eq for ByKey {}
impl PartialOrd for ByKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for ByKey {
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.key().cmp(&self.0.key())
    }
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<ByKey>,
    /// Events all due at `fifo_time`, in stamp order.
    fifo: VecDeque<Event>,
    fifo_time: Time,
    next_stamp: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.heap.len() + self.fifo.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn stamps_issued(&self) -> u64 {
        self.next_stamp
    }

    /// Queues a new event, giving it the next stamp.
    #[inline]
    pub fn push_new(&mut self, mut ev: Event) {
        ev.stamp = self.next_stamp;
        self.next_stamp += 1;
        // Fresh stamps are the largest so far, so appending keeps the FIFO sorted.
        if self.fifo.is_empty() || self.fifo_time == ev.time {
            self.fifo_time = ev.time;
            self.fifo.push_back(ev);
        } else {
            self.heap.push(ByKey(ev));
        }
    }

    /// Re-queues an event at a later time, keeping its stamp.
    #[inline]
    pub fn push_again(&mut self, ev: Event) {
        self.heap.push(ByKey(ev));
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        let from_heap = match (self.heap.peek(), self.fifo.front()) {
            (Some(h), Some(f)) => h.0.key() < f.key(),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        if from_heap {
            self.heap.pop().map(|b| b.0)
        } else {
            self.fifo.pop_front()
        }
    }

    /// Bytes held by the queue's buffers (for memory accounting).
    pub fn capacity_bytes(&self) -> usize {
        (self.heap.capacity() + self.fifo.capacity()) * std::mem::size_of::<Event>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time: Time, id: u32) -> Event {
        Event { time, stamp: 0, size: 0, rank: 0, peer: 0, tag: 0, id, kind: EvKind::Calc, cpu: 0, nic: 0 }
    }

    #[test]
    fn pops_by_time_then_creation_order() {
        let mut q = EventQueue::new();
        for (t, id) in [(5, 0), (1, 1), (5, 2), (1, 3), (0, 4)] {
            q.push_new(ev(t, id));
        }
        let order: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|e| e.id).collect();
        assert_eq!(order, vec![4, 1, 3, 0, 2]);
    }

    #[test]
    fn requeued_event_keeps_its_place_among_equal_times() {
        let mut q = EventQueue::new();
        q.push_new(ev(0, 0)); // stamp 0
        q.push_new(ev(10, 1)); // stamp 1
        let mut first = q.pop().unwrap();
        first.time = 10; // re-queued at 10 with stamp 0: goes before id 1
        q.push_again(first);
        q.push_new(ev(10, 2)); // stamp 2
        let order: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|e| e.id).collect();
        assert_eq!(order, vec![0, 1, 2]);
    }
}
