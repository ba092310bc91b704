//! Events waiting for the same busy resources, moved as one.
//!
//! LogGOPSim re-queues an op whose CPU (or NIC) is busy for the moment it
//! frees up; with n ops ready at once on one CPU each of them is re-queued
//! every time the CPU frees, n²/2 queue operations in all. Here only the
//! first of them (lowest stamp) — the head — is in the queue; the others
//! wait behind it in stamp order. That changes nothing: waiters on the same
//! resources are blocked exactly when the head is, and re-queued to the same
//! moment, so in LogGOPSim they would pop right behind it and be re-queued
//! again. When the head runs, the next waiter is queued at that very moment
//! with its own stamp and is looked at in turn, as it would have been.

use super::queue::{EvKind, Event};
use crate::time::Time;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// The resources an event needs: (rank, CPU, NIC class, NIC).
pub type Resources = u64;

/// Which resources `ev` waits for, if it is a kind that waits in line.
#[inline]
pub fn resources(ev: &Event) -> Option<Resources> {
    let class = match ev.kind() {
        EvKind::Calc | EvKind::Probe => 0,
        EvKind::Send => 1,
        EvKind::Msg => 2,
        _ => return None,
    };
    let nic = if class == 0 { 0 } else { ev.nic() as u64 };
    Some((ev.rank as u64) << 32 | (ev.cpu() as u64) << 16 | class << 8 | nic)
}

#[derive(Debug)]
struct Line {
    /// When the head is queued for.
    time: Time,
    head: u64,
    /// The others, by stamp.
    behind: VecDeque<Event>,
}

/// The waiting lines, one per set of busy resources that has waiters.
#[derive(Debug, Default)]
pub struct Waiting {
    lines: HashMap<Resources, Line, BuildHasherDefault<Mix>>,
    /// Re-queue every waiter as LogGOPSim does (the reference the tests compare with).
    pub off: bool,
    /// Lines without waiters behind the head are dropped when there are this many lines.
    sweep_at: usize,
}

/// Lines kept before those with nobody behind the head are dropped.
const MIN_SWEEP: usize = 4096;

/// What to do with an event that must wait until `free`.
pub enum Wait {
    /// Queue it (it heads its line).
    Queue(Event),
    /// It waits behind the head.
    Behind,
}

impl Waiting {
    /// Lines on (`on`) or every waiter re-queued.
    pub fn new(on: bool) -> Self {
        Waiting { off: !on, ..Default::default() }
    }

    /// `ev` must wait until `free`.
    pub fn wait(&mut self, mut ev: Event, free: Time) -> Wait {
        let Some(key) = resources(&ev).filter(|_| !self.off) else { return Wait::Queue(ev) };
        let stamp = ev.stamp();
        match self.lines.get_mut(&key) {
            Some(line) if line.head == stamp => {
                line.time = free; // the head waits again, its line with it
                ev.set_line_head();
                Wait::Queue(ev)
            }
            Some(line) if line.time == free && stamp > line.head => {
                let at = line.behind.partition_point(|e| e.stamp() < stamp);
                line.behind.insert(at, ev);
                Wait::Behind
            }
            Some(_) => Wait::Queue(ev), // another moment, or ahead of the head: on its own
            None => {
                if self.lines.len() >= self.sweep_at.max(MIN_SWEEP) {
                    self.sweep();
                }
                self.lines.insert(key, Line { time: free, head: stamp, behind: VecDeque::new() });
                ev.set_line_head();
                Wait::Queue(ev)
            }
        }
    }

    /// After `ev` was processed at `now`: if it headed a line and did not
    /// wait again, the next in line, to be queued at `now`.
    #[inline(always)]
    pub fn next_after(&mut self, ev: &Event, now: Time) -> Option<Event> {
        if !ev.is_line_head() {
            return None;
        }
        self.next_in_line(ev, now)
    }

    #[inline(never)]
    fn next_in_line(&mut self, ev: &Event, now: Time) -> Option<Event> {
        let key = resources(ev)?;
        let line = self.lines.get_mut(&key)?;
        if line.head != ev.stamp() || line.time != now {
            return None;
        }
        match line.behind.pop_front() {
            Some(mut next) => {
                line.head = next.stamp();
                next.time = now;
                next.set_line_head();
                Some(next)
            }
            None => {
                self.lines.remove(&key);
                None
            }
        }
    }

    /// Drops the lines with nobody behind their head. They are bookkeeping
    /// only: a head that finds no line simply runs or waits as in LogGOPSim,
    /// so memory stays with the lines that save work (one waiter per rank,
    /// the common case under noise, would otherwise keep a line per rank).
    #[cold]
    fn sweep(&mut self) {
        self.lines.retain(|_, l| !l.behind.is_empty());
        self.sweep_at = 2 * self.lines.len();
    }

    pub fn capacity_bytes(&self) -> usize {
        self.lines.capacity() * (std::mem::size_of::<Line>() + 8) + self.lines.values().map(|l| l.behind.capacity() * 48).sum::<usize>()
    }
}

/// A multiplicative hash for the integer keys (the default SipHash is slow here).
#[derive(Default)]
pub struct Mix(u64);

impl Hasher for Mix {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (x ^ x >> 29).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    }
}
