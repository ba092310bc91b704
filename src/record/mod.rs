//! Named timers recorded per (rank, iteration) into dense matrices.

use crate::time::{to_seconds, Time};

const UNSET: Time = Time::MAX;

/// Durations of named regions, one ranks × iterations matrix per timer.
pub struct Recorder {
    names: Vec<String>,
    ranks: usize,
    iterations: usize,
    /// [timer][rank][iteration]; holds the start time until the timer stops.
    data: Vec<Time>,
    enabled: bool,
}

impl Recorder {
    pub fn disabled() -> Self {
        Recorder { names: Vec::new(), ranks: 0, iterations: 0, data: Vec::new(), enabled: false }
    }

    /// Bytes `new` would allocate.
    pub fn bytes_needed(timers: usize, ranks: u32, iterations: u32) -> u128 {
        timers as u128 * ranks as u128 * iterations as u128 * std::mem::size_of::<Time>() as u128
    }

    pub fn new(names: Vec<String>, ranks: u32, iterations: u32) -> Self {
        let n = names.len() * ranks as usize * iterations as usize;
        Recorder { ranks: ranks as usize, iterations: iterations as usize, data: vec![UNSET; n], names, enabled: true }
    }

    #[inline]
    fn slot(&self, timer: u8, rank: u32, iteration: u32) -> Option<usize> {
        let (t, r, i) = (timer as usize, rank as usize, iteration as usize);
        (self.enabled && t < self.names.len() && i < self.iterations).then(|| (t * self.ranks + r) * self.iterations + i)
    }

    #[inline]
    pub fn start(&mut self, timer: u8, rank: u32, iteration: u32, at: Time) {
        if let Some(k) = self.slot(timer, rank, iteration) {
            self.data[k] = at;
        }
    }

    #[inline]
    pub fn stop(&mut self, timer: u8, rank: u32, iteration: u32, at: Time) {
        if let Some(k) = self.slot(timer, rank, iteration) {
            if self.data[k] != UNSET {
                self.data[k] = at - self.data[k];
            }
        }
    }

    /// Stores a plain value (not a duration) for a timer slot: `seconds()`
    /// returns it unchanged (to 1e-12).
    #[inline]
    pub fn value(&mut self, timer: u8, rank: u32, iteration: u32, v: f64) {
        if let Some(k) = self.slot(timer, rank, iteration) {
            self.data[k] = (v.max(0.0) * 1e12).round() as Time;
        }
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    pub fn dims(&self) -> (usize, usize) {
        (self.ranks, self.iterations)
    }

    /// One timer's matrix in seconds, row-major (rank, iteration); NaN where never stopped.
    pub fn seconds(&self, timer: usize) -> Vec<f64> {
        let n = self.ranks * self.iterations;
        self.data[timer * n..(timer + 1) * n].iter().map(|&v| if v == UNSET { f64::NAN } else { to_seconds(v) }).collect()
    }

    /// Raw picosecond durations of one timer (for exact comparisons).
    pub fn picos(&self, timer: usize) -> &[Time] {
        let n = self.ranks * self.iterations;
        &self.data[timer * n..(timer + 1) * n]
    }

    pub fn capacity_bytes(&self) -> usize {
        self.data.capacity() * std::mem::size_of::<Time>()
    }
}
