//! Network latency regimes: a Markov chain over latency levels, as the HMM
//! paper measured on Anvil and Frontera (its conclusion proposes injecting
//! them). State i multiplies the latency of the link classes it covers by
//! `multiplier[i]` and adds a normal delay N(add_mean[i], add_sd[i]) (cut
//! at 0), the fields `idlewave regimes` reports (μ_i, σ_i and the
//! transition matrix per `step_ps` of simulated time).
//!
//! The trajectory is a pure function of (seed, chain): holding times are
//! geometric in steps and jumps follow the transition row without the
//! diagonal, each drawn from a hash of the change's index, so a run is
//! reproducible whatever the event order.

use crate::rng::{hash, unit};
use crate::time::Time;
use serde::Deserialize;

/// Random streams (distinct from the noise sources').
const REGIME_CHAIN: u64 = 0x5EC1_0000;
const REGIME_DELAY: u64 = 0x5EC2_0000;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Regime {
    /// Link classes covered: bit 0 same socket, bit 1 same node, bit 2 other node.
    pub classes: u8,
    pub step_ps: Time,
    /// Row-stochastic: transition[i][j] = P(state j at step k+1 | state i at step k).
    pub transition: Vec<Vec<f64>>,
    pub multiplier: Vec<f64>,
    pub add_mean_ps: Vec<f64>,
    pub add_sd_ps: Vec<f64>,
    #[serde(default)]
    pub initial: usize,
    /// A chain per sending rank instead of one for the network.
    #[serde(default)]
    pub per_rank: bool,
    /// A chain per link between switches (the topology's, see `Links`): a
    /// message between nodes takes the slowest state of the links it
    /// crosses; one that crosses none keeps the initial state.
    #[serde(default)]
    pub per_link: bool,
}

impl Regime {
    /// The latency of a message in `state`; `key` makes its delay draw unique.
    pub fn apply(&self, state: usize, latency: Time, seed: u64, key: u64) -> Time {
        let mut l = latency as f64 * self.multiplier[state];
        let (mean, sd) = (self.add_mean_ps[state], self.add_sd_ps[state]);
        if mean != 0.0 || sd != 0.0 {
            let z = if sd > 0.0 { normal(seed, key) } else { 0.0 };
            l += (mean + sd * z).max(0.0);
        }
        l.round().max(0.0) as Time
    }

    /// Whether `a` is a slower state than `b`: a larger multiplier, then a
    /// larger mean added delay.
    pub fn slower(&self, a: usize, b: usize) -> bool {
        (self.multiplier[a], self.add_mean_ps[a]) > (self.multiplier[b], self.add_mean_ps[b])
    }
}

/// A standard normal from two hashed uniforms (Box–Muller).
fn normal(seed: u64, key: u64) -> f64 {
    let u1 = unit(hash(seed, REGIME_DELAY, key, 1)).max(1e-300);
    let u2 = unit(hash(seed, REGIME_DELAY, key, 2));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Where a chain is: its change points so far (step, state), extended on
/// demand as simulated time advances.
#[derive(Debug, Clone, Default)]
pub struct RegimeCursor {
    changes: Vec<(u64, u8)>,
    /// First step not yet covered by `changes`.
    horizon: u64,
}

/// The end (step) of change `k` of a chain, entered at step `start` in
/// `state`: a geometric holding time of at least one step.
fn holding_end(r: &Regime, seed: u64, k: u64, start: u64, state: u8) -> u64 {
    let stay = r.transition[state as usize][state as usize];
    let hold = if stay >= 1.0 {
        u64::MAX / 2
    } else if stay <= 0.0 {
        1
    } else {
        let u = unit(hash(seed, REGIME_CHAIN, k, 3)).max(1e-300);
        ((u.ln() / stay.ln()).floor() as u64).saturating_add(1)
    };
    start.saturating_add(hold)
}

/// The state after change `k` leaves `state`: by its row without the diagonal.
fn jump(r: &Regime, seed: u64, k: u64, state: u8) -> u8 {
    let row = &r.transition[state as usize];
    let mut u = unit(hash(seed, REGIME_CHAIN, k, 4)) * (1.0 - row[state as usize]);
    let mut next = state as usize;
    for (j, &p) in row.iter().enumerate() {
        if j == state as usize {
            continue;
        }
        next = j;
        if u < p {
            break;
        }
        u -= p;
    }
    next as u8
}

impl RegimeCursor {
    pub fn state_at(&mut self, r: &Regime, seed: u64, t: Time) -> usize {
        let step = t / r.step_ps;
        if self.changes.is_empty() {
            self.changes.push((0, r.initial as u8));
            self.horizon = 0;
        }
        while self.horizon <= step {
            let k = self.changes.len() as u64;
            let (start, state) = *self.changes.last().unwrap();
            let end = holding_end(r, seed, k, start, state);
            self.horizon = end;
            if end > step {
                break;
            }
            self.changes.push((end, jump(r, seed, k, state)));
        }
        let i = self.changes.partition_point(|c| c.0 <= step);
        self.changes[i - 1].1 as usize
    }
}

/// One rank's chain (`per_rank`), kept as its current stretch only (24
/// bytes): a rank sends at non-decreasing times, so it only moves forward;
/// a query before its stretch replays the chain from the start, which gives
/// the same trajectory (a pure function of the seed and change index).
#[derive(Debug, Clone, Copy, Default)]
pub struct RankCursor {
    /// Change index of the current stretch, plus one (0: not started).
    k: u64,
    start: u64,
    end: u64,
    state: u8,
}

impl RankCursor {
    pub fn state_at(&mut self, r: &Regime, seed: u64, t: Time) -> usize {
        let step = t / r.step_ps;
        if self.k == 0 || step < self.start {
            let state = r.initial as u8;
            *self = RankCursor { k: 1, start: 0, end: holding_end(r, seed, 1, 0, state), state };
        }
        while self.end <= step {
            let state = jump(r, seed, self.k, self.state);
            let k = self.k + 1;
            *self = RankCursor { k, start: self.end, end: holding_end(r, seed, k, self.end, state), state };
        }
        self.state as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_state(stay: f64) -> Regime {
        Regime {
            classes: 4,
            step_ps: 1000,
            transition: vec![vec![stay, 1.0 - stay], vec![1.0 - stay, stay]],
            multiplier: vec![1.0, 3.0],
            add_mean_ps: vec![0.0, 500.0],
            add_sd_ps: vec![0.0, 0.0],
            initial: 0,
            per_rank: false,
            per_link: false,
        }
    }

    #[test]
    fn occupancy_and_holding_times_follow_the_transition_matrix() {
        let r = two_state(0.99);
        let mut c = RegimeCursor::default();
        let steps = 200_000u64;
        let in_one = (0..steps).filter(|&s| c.state_at(&r, 7, s * 1000) == 1).count() as f64 / steps as f64;
        assert!((in_one - 0.5).abs() < 0.05, "{in_one}");
        // mean holding time 1/(1-0.99) = 100 steps
        let switches = c.changes.len() as f64;
        let mean_hold = steps as f64 / switches;
        assert!((mean_hold - 100.0).abs() < 10.0, "{mean_hold}");
        // looking back gives the same answers; another cursor agrees
        let mut d = RegimeCursor::default();
        assert!((0..2000).all(|s| d.state_at(&r, 7, s * 97_000) == c.state_at(&r, 7, s * 97_000)));
        assert_eq!(r.apply(1, 1000, 7, 1), 3500);
        // a rank's cursor keeps only its current stretch but walks the same
        // trajectory, forward, and backward by replaying
        let mut k = RankCursor::default();
        assert!((0..5000).all(|s| k.state_at(&r, 7, s * 1000) == c.state_at(&r, 7, s * 1000)));
        assert_eq!(k.state_at(&r, 7, 1_234_000), c.state_at(&r, 7, 1_234_000));
        assert_eq!(r.apply(0, 1000, 7, 1), 1000);
    }
}
