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
    /// Each rank's current iteration (the latest a timer started in): where
    /// its idle time is added ([`Recorder::tracking_waits`]), and how far
    /// the run is ([`Recorder::progress`]).
    current: Vec<u32>,
    /// Whether the last timer is [`WAITING`] (`tracking_waits`).
    tracks_waits: bool,
}

/// The timer [`Recorder::tracking_waits`] adds.
pub const WAITING: &str = "waiting";

impl Recorder {
    pub fn disabled() -> Self {
        Recorder { names: Vec::new(), ranks: 0, iterations: 0, data: Vec::new(), enabled: false, current: Vec::new(), tracks_waits: false }
    }

    /// Bytes `new` would allocate.
    pub fn bytes_needed(timers: usize, ranks: u32, iterations: u32) -> u128 {
        timers as u128 * ranks as u128 * iterations as u128 * std::mem::size_of::<Time>() as u128 + ranks as u128 * 4
    }

    pub fn new(names: Vec<String>, ranks: u32, iterations: u32) -> Self {
        let n = names.len() * ranks as usize * iterations as usize;
        let current = vec![0; ranks as usize];
        Recorder {
            ranks: ranks as usize,
            iterations: iterations as usize,
            data: vec![UNSET; n],
            names,
            enabled: true,
            current,
            tracks_waits: false,
        }
    }

    /// Adds a timer [`WAITING`]: per (rank, iteration), the idle time the
    /// engine reports (`waited`), charged to the iteration the rank is in.
    pub fn tracking_waits(mut self) -> Self {
        if self.enabled {
            self.names.push(WAITING.into());
            self.data.resize(self.data.len() + self.ranks * self.iterations, 0);
            self.tracks_waits = true;
        }
        self
    }

    /// Bytes `tracking_waits` adds.
    pub fn wait_bytes_needed(ranks: u32, iterations: u32) -> u128 {
        ranks as u128 * iterations as u128 * std::mem::size_of::<Time>() as u128
    }

    /// The iteration `rank` is in (the latest a timer started in), if timers are recorded.
    pub fn iteration(&self, rank: u32) -> Option<u32> {
        self.current.get(rank as usize).copied()
    }

    /// The share of all ranks' iterations begun so far, from at most 4,096
    /// ranks spread evenly (cheap at any scale; None without iterations).
    pub fn progress(&self) -> Option<f64> {
        if self.current.is_empty() || self.iterations == 0 {
            return None;
        }
        let step = self.current.len().div_ceil(4096);
        let sample = self.current.iter().step_by(step);
        let (sum, n) = sample.fold((0u64, 0u64), |(s, n), &i| (s + i as u64, n + 1));
        Some(sum as f64 / (n as f64 * self.iterations as f64))
    }

    /// `rank` sat idle `idle` ps in its current iteration.
    #[inline]
    pub fn waited(&mut self, rank: u32, idle: Time) {
        if let Some(&i) = self.current.get(rank as usize).filter(|_| self.tracks_waits) {
            if let Some(k) = self.slot((self.names.len() - 1) as u8, rank, i) {
                self.data[k] += idle;
            }
        }
    }

    #[inline]
    fn slot(&self, timer: u8, rank: u32, iteration: u32) -> Option<usize> {
        let (t, r, i) = (timer as usize, rank as usize, iteration as usize);
        (self.enabled && t < self.names.len() && i < self.iterations).then(|| (t * self.ranks + r) * self.iterations + i)
    }

    #[inline]
    pub fn start(&mut self, timer: u8, rank: u32, iteration: u32, at: Time) {
        if let Some(c) = self.current.get_mut(rank as usize) {
            *c = iteration.min(self.iterations.saturating_sub(1) as u32);
        }
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

    /// Every timer in seconds (NaN where unset), as `seconds` gives them,
    /// taking the matrices: converted in place, so handing them over copies
    /// one timer's matrix at a time, not all of them.
    pub fn take_seconds(&mut self) -> Vec<Vec<f64>> {
        let n = self.ranks * self.iterations;
        let mut data = std::mem::take(&mut self.data);
        let convert = |v: Vec<Time>| -> Vec<f64> { v.into_iter().map(|v| if v == UNSET { f64::NAN } else { to_seconds(v) }).collect() };
        let mut out = Vec::with_capacity(self.names.len());
        for t in (1..self.names.len()).rev() {
            let tail = data.split_off(t * n);
            data.shrink_to_fit();
            out.push(convert(tail));
        }
        if !self.names.is_empty() {
            out.push(convert(data));
        }
        out.reverse();
        out
    }

    /// Raw picosecond durations of one timer (for exact comparisons).
    pub fn picos(&self, timer: usize) -> &[Time] {
        let n = self.ranks * self.iterations;
        &self.data[timer * n..(timer + 1) * n]
    }

    pub fn capacity_bytes(&self) -> usize {
        self.data.capacity() * std::mem::size_of::<Time>() + self.current.capacity() * 4
    }
}
