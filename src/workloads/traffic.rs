//! Background traffic: ranks that only move bytes, in rounds, to load a
//! network beside another job (`[[jobs]]`).

use super::registry::{generated, Shape, Visited, WorkloadError, WorkloadKind, WorkloadVisitor};
use crate::network::Network;
use crate::program::stream::{Ctx, StreamOp, Workload};
use crate::program::ANY;
use crate::rule::RuleError;
use crate::time::Time;
use crate::units::Ranks;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who sends to whom in a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// Each round every rank sends to the rank a random distance away (one
    /// distance per round, drawn from the seed): every destination equally
    /// likely, every rank receiving one message.
    #[default]
    Uniform,
    /// Every round the same random permutation without fixed points (drawn
    /// from the seed): every rank sends to another rank and receives from one.
    Permutation,
    /// Every rank sends to rank 0.
    Incast,
}

/// Background traffic: `rounds` rounds of a wait of message_bytes / rate,
/// then one message per rank by `pattern`, all received before the next round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Traffic {
    #[schemars(with = "Ranks")]
    pub ranks: u32,
    pub pattern: Pattern,
    #[schemars(with = "crate::units::MessageBytes")]
    pub message_bytes: u64,
    /// Each rank's offered load in bytes per second (the wait between rounds
    /// is message_bytes / rate; a round also waits for its messages).
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub rate_bytes_per_s: f64,
    #[schemars(range(min = 1))]
    pub rounds: u32,
    /// Draws the pattern's distances or permutation.
    pub seed: u64,
}

impl Default for Traffic {
    fn default() -> Self {
        Traffic { ranks: 64, pattern: Pattern::Uniform, message_bytes: 1 << 20, rate_bytes_per_s: 1e9, rounds: 100, seed: 1 }
    }
}

/// Receives rank 0 of an incast posts at once (request slots are 64).
const BATCH: u32 = 32;
/// A round's message tag: the round, above the other workloads' tags.
const TAG_BASE: u32 = 1 << 16;

impl Traffic {
    pub fn validate(&self) -> Result<(), RuleError> {
        if self.ranks < 2 {
            return Err(RuleError::new("workload.ranks", "background traffic needs at least 2 ranks"));
        }
        if !(self.rate_bytes_per_s > 0.0 && self.rate_bytes_per_s.is_finite()) {
            return Err(RuleError::new("workload.rate_bytes_per_s", format!("must be a finite rate > 0, got {}", self.rate_bytes_per_s)));
        }
        if self.rounds == 0 {
            return Err(RuleError::new("workload.rounds", "must be at least 1"));
        }
        Ok(())
    }

    fn interval(&self) -> Time {
        (self.message_bytes as f64 / self.rate_bytes_per_s * 1e12).round().min(crate::time::PAST_LIMIT as f64) as Time
    }

    /// The round's distance (uniform), in 1..ranks.
    fn distance(&self, round: u32) -> u32 {
        1 + (crate::rng::hash(self.seed, 0x7AFF, round as u64, 0) % (self.ranks as u64 - 1)) as u32
    }

    /// The seeded permutation: r → a·r + b mod n, a bijection without a
    /// table for a coprime to n. It has a fixed point where (a − 1)·r ≡ −b
    /// (mod n) has a solution, that is where g = gcd(a − 1, n) divides b; so
    /// a is drawn with a − 1 sharing a prime factor with n (g > 1; a prime n
    /// leaves a = 1, a shift) and b off the multiples of g: no rank sends to
    /// itself. Worked out once per run (it factors n).
    fn permutation(&self) -> Affine {
        let n = self.ranks as u64;
        if n < 2 {
            return Affine { n: n.max(1), a: 1, b: 0, inv: 1 }; // (refused by validate)
        }
        // a ≡ 1 (mod p), p the smallest prime factor of n; t = 0 (a = 1) is coprime, so the search ends
        let p = (2..).take_while(|d| d * d <= n).find(|d| n.is_multiple_of(*d)).unwrap_or(n);
        let m = n / p;
        let mut t = crate::rng::hash(self.seed, 0x7AFE, 0, 0) % m;
        let a = loop {
            let a = (1 + p * t) % n;
            if gcd(a, n) == 1 {
                break a;
            }
            t = (t + 1) % m;
        };
        let g = gcd((a + n - 1) % n, n);
        // b ≡ 0 (mod g) moves to b + 1, still below n (n − 1 is not a multiple of g)
        let mut b = crate::rng::hash(self.seed, 0x7AFE, 1, 0) % n;
        if b.is_multiple_of(g) {
            b += 1;
        }
        Affine { n, a, b, inv: mod_inverse(a, n) }
    }
}

/// A permutation of 0..n as r → a·r + b mod n (a coprime to n), and its inverse.
#[derive(Debug, Clone, Copy)]
struct Affine {
    n: u64,
    a: u64,
    b: u64,
    inv: u64,
}

impl Affine {
    /// Rank r's destination.
    fn to(&self, r: u32) -> u32 {
        ((self.a * r as u64 + self.b) % self.n) as u32
    }

    /// Rank r's source: a⁻¹·(r − b) mod n.
    fn from(&self, r: u32) -> u32 {
        (((r as u64 + self.n - self.b) % self.n) * self.inv % self.n) as u32
    }
}

/// Background traffic as it runs: its permutation worked out once.
#[derive(Debug, Clone)]
pub struct Running {
    spec: Traffic,
    perm: Affine,
}

impl Running {
    fn new(spec: Traffic) -> Running {
        Running { perm: spec.permutation(), spec }
    }

    /// This round's destination and source of `rank` (None: no message).
    fn peers(&self, rank: u32, round: u32) -> (Option<u32>, Option<u32>) {
        let n = self.spec.ranks;
        match self.spec.pattern {
            Pattern::Uniform => {
                let d = self.spec.distance(round);
                (Some((rank + d) % n), Some((rank + n - d) % n))
            }
            // (no fixed point: every rank sends and receives)
            Pattern::Permutation => (Some(self.perm.to(rank)), Some(self.perm.from(rank))),
            Pattern::Incast => ((rank != 0).then_some(0), None),
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn mod_inverse(a: u64, n: u64) -> u64 {
    // extended Euclid; a and n are coprime
    let (mut t, mut new_t, mut r, mut new_r) = (0i128, 1i128, n as i128, a as i128);
    while new_r != 0 {
        let q = r / new_r;
        (t, new_t) = (new_t, t - q * new_t);
        (r, new_r) = (new_r, r - q * new_r);
    }
    (t.rem_euclid(n as i128)) as u64
}

#[derive(Debug, Clone, Default)]
pub struct TrafficState {
    round: u32,
    phase: Phase,
    /// Receives posted this round, and those before the current batch.
    posted: u32,
    batch_start: u32,
    /// Whether this round's send is posted, and in the current batch.
    sent: bool,
    send_in_batch: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Phase {
    #[default]
    Compute,
    Post,
    Next,
}

impl Workload for Running {
    type State = TrafficState;
    fn num_ranks(&self) -> u32 {
        self.spec.ranks
    }
    fn iterations(&self) -> u32 {
        self.spec.rounds
    }
    fn timer_names(&self) -> Vec<String> {
        Vec::new()
    }

    /// A round: the wait, then the receives posted (an incast's root in
    /// batches, each waited for), the send posted, and all waited for.
    fn next(&self, rank: u32, s: &mut TrafficState, _: &Ctx) -> StreamOp {
        loop {
            let t = &self.spec;
            if s.round == t.rounds {
                return StreamOp::Done;
            }
            let tag = TAG_BASE + s.round;
            match s.phase {
                Phase::Compute => {
                    s.phase = Phase::Post;
                    return StreamOp::Calc(t.interval());
                }
                Phase::Post => {
                    let (to, from) = self.peers(rank, s.round);
                    let incoming = if t.pattern == Pattern::Incast && rank == 0 { t.ranks - 1 } else { u32::from(from.is_some()) };
                    let in_batch = s.posted - s.batch_start;
                    if s.posted < incoming && in_batch < BATCH {
                        s.posted += 1;
                        return StreamOp::IRecv { peer: from.unwrap_or(ANY), tag, bytes: t.message_bytes, slot: in_batch as u8 };
                    }
                    if !s.sent {
                        s.sent = true;
                        if let Some(peer) = to {
                            s.send_in_batch = true;
                            return StreamOp::ISend { peer, tag, bytes: t.message_bytes, slot: in_batch as u8 };
                        }
                    }
                    let outstanding = in_batch + u32::from(s.send_in_batch);
                    (s.batch_start, s.send_in_batch) = (s.posted, false);
                    if s.posted == incoming {
                        s.phase = Phase::Next;
                    }
                    if outstanding > 0 {
                        return StreamOp::Wait((1u64 << outstanding) - 1);
                    }
                }
                Phase::Next => {
                    *s = TrafficState { round: s.round + 1, ..TrafficState::default() };
                }
            }
        }
    }
}

impl WorkloadKind for Traffic {
    fn shape(&self) -> Shape {
        Shape::ranks(self.ranks)
    }
    fn check(&self, _: u32, _: bool) -> Result<(), RuleError> {
        self.validate()
    }
    /// A round's messages: up to 32 posted receives on an incast's root.
    fn in_flight_bytes_per_rank(&self) -> u128 {
        128
    }
    fn prepare<V: WorkloadVisitor>(&self, _: &Network, v: V) -> Result<Visited<V::Out>, WorkloadError> {
        generated(Running::new(self.clone()), v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::network::{LogGOPS, Network};
    use crate::noise::Noise;
    use crate::program::stream::StreamProgram;
    use crate::record::Recorder;

    fn run(t: Traffic) -> (u64, Time) {
        let program = StreamProgram::new(Running::new(t), Recorder::disabled());
        let mut e = Engine::new(program, Network::uniform(LogGOPS::LOGGOPSIM), Noise::none()).unwrap();
        e.run().unwrap();
        (e.events, (0..e.num_ranks()).map(|r| e.finish_time(r)).max().unwrap())
    }

    #[test]
    fn every_pattern_sends_one_message_per_rank_and_round_and_ends() {
        // events: a computation per rank and round, and a send and a receive per message
        for (pattern, messages) in [(Pattern::Uniform, 50), (Pattern::Incast, 49)] {
            let t = Traffic { ranks: 50, pattern, rounds: 3, message_bytes: 1000, ..Default::default() };
            assert_eq!(run(t).0, 3 * (50 + 2 * messages), "{pattern:?}");
        }
        let t = Traffic { ranks: 50, pattern: Pattern::Permutation, rounds: 3, message_bytes: 1000, seed: 7, ..Default::default() };
        assert_eq!(run(t).0, 3 * (50 + 2 * 50));
    }

    #[test]
    fn a_permutation_sends_every_rank_to_another() {
        // it had fixed points, ranks that sent nothing: with 2 ranks half the seeds gave no traffic at all
        for seed in 1..=8 {
            let t = Traffic { ranks: 2, pattern: Pattern::Permutation, rounds: 3, message_bytes: 1000, seed, ..Default::default() };
            assert_eq!(run(t).0, 3 * (2 + 2 * 2), "seed {seed}");
        }
        // every size (primes, prime powers, products of odd primes) and seed: a bijection, its inverse, no fixed point
        for n in (2..=64).chain([97, 105, 243, 1001, 4096, 65_537]) {
            for seed in 0..16 {
                let p = Traffic { ranks: n, seed, ..Default::default() }.permutation();
                let mut image: Vec<u32> = (0..n).map(|r| p.to(r)).collect();
                assert!((0..n).all(|r| p.to(r) != r), "n {n} seed {seed}: {p:?}");
                assert!((0..n).all(|r| p.from(p.to(r)) == r), "n {n} seed {seed}: {p:?}");
                image.sort_unstable();
                assert!(image.iter().copied().eq(0..n), "n {n} seed {seed}: a bijection");
            }
        }
        // not only shifts where n has a proper factor: the seed draws a too
        let multipliers: std::collections::HashSet<u64> =
            (0..16).map(|seed| Traffic { ranks: 48, seed, ..Default::default() }.permutation().a).collect();
        assert!(multipliers.len() > 4, "{multipliers:?}");
    }

    #[test]
    fn an_incast_is_slower_than_uniform_traffic_and_the_rate_spaces_rounds() {
        let base = Traffic { ranks: 40, rounds: 4, message_bytes: 100_000, rate_bytes_per_s: 1e12, ..Default::default() };
        let (_, uniform) = run(base.clone());
        let (_, incast) = run(Traffic { pattern: Pattern::Incast, ..base.clone() });
        assert!(incast > 10 * uniform, "{incast} vs {uniform}");
        // at a low rate the waits set the time: 4 rounds of 1 ms
        let (_, slow) = run(Traffic { rate_bytes_per_s: 1e8, ..base });
        assert!(slow >= 4_000_000_000 && slow < 4_000_000_000 + uniform, "{slow}");
    }
}
