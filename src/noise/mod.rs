//! CPU detours ("noise") that steal a rank's processor: OS noise, daemons,
//! uncoordinated checkpoints, replayed measurements, or a single injected delay.
//!
//! Every source is *stateless*: the detours of a rank are a pure function of
//! (seed, source index, rank), so any time window can be queried in any order,
//! no per-rank state is stored, and runs are reproducible.
//!
//! Charging rule: a CPU charge of `work` ps starting at `t` ends once `work` ps
//! of detour-free time have elapsed. A detour running at `t`, or starting
//! before the work is finished, pushes the end back by its length (detours that
//! begin inside the extension count too; LogGOPSim only counts those that
//! begin inside the original window).
//!
//! Times are signed 64-bit picoseconds here (±106 days of simulated time).

pub mod trace;

pub use trace::{parse_noise_trace, read_noise_trace};

use crate::rng::{hash, unit};
use crate::rule::RuleError;
use crate::time::{from_seconds, to_seconds, Time, PS_PER_NS};
use crate::units::{secs, FilePath, PositiveSeconds, Seconds};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use trace::NoiseTraceError;

/// One detour source of a scenario's `[[noise]]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum NoiseSpec {
    /// A detour of duration_s every period_s (random phase per rank unless cosched).
    Periodic {
        #[serde(rename = "period_s", with = "secs", default = "d_period")]
        #[schemars(with = "PositiveSeconds")]
        period_ps: Time,
        #[serde(rename = "duration_s", with = "secs", default = "d_periodic_duration")]
        #[schemars(with = "Seconds")]
        duration_ps: Time,
        /// Every rank's detours at the same moments.
        #[serde(default)]
        cosched: bool,
        /// The ranks it hits (absent: all).
        #[serde(default)]
        ranks: Option<Vec<u32>>,
    },
    /// Detours of duration_s arriving as a Poisson process of rate_hz per rank.
    Poisson {
        #[serde(rename = "rate_hz", default = "d_rate")]
        #[schemars(extend("exclusiveMinimum" = 0))]
        rate_per_s: f64,
        #[serde(rename = "duration_s", with = "secs", default = "d_poisson_duration")]
        #[schemars(with = "PositiveSeconds")]
        duration_ps: Time,
        #[serde(default)]
        ranks: Option<Vec<u32>>,
    },
    /// Replay of a measured detour trace file (start<TAB>duration in ns per line), looped.
    Trace {
        #[schemars(with = "FilePath")]
        path: String,
        #[serde(default)]
        cosched: bool,
        #[serde(default)]
        ranks: Option<Vec<u32>>,
    },
    /// Uncoordinated checkpoints: duration_s every interval_s, each rank at its own phase.
    Checkpoint {
        #[serde(rename = "interval_s", with = "secs", default = "d_interval")]
        #[schemars(with = "PositiveSeconds")]
        interval_ps: Time,
        #[serde(rename = "duration_s", with = "secs", default = "d_checkpoint_duration")]
        #[schemars(with = "Seconds")]
        duration_ps: Time,
        #[serde(default)]
        ranks: Option<Vec<u32>>,
    },
    /// One detour of duration_s on one rank at start_s (e.g. to launch an idle wave).
    Single {
        rank: u32,
        #[serde(rename = "start_s", with = "secs", default)]
        #[schemars(with = "Seconds")]
        start_ps: Time,
        #[serde(rename = "duration_s", with = "secs", default = "d_single_duration")]
        #[schemars(with = "PositiveSeconds")]
        duration_ps: Time,
    },
    /// Like `Trace`, with the detours given inline as (start_ps, duration_ps) (from Rust only).
    #[serde(skip)]
    TraceData { detours: Vec<(Time, Time)>, cosched: bool, ranks: Option<Vec<u32>> },
}

// The defaults of the noise sources.
fn d_period() -> Time {
    from_seconds(1e-3)
}
fn d_periodic_duration() -> Time {
    from_seconds(2.5e-5)
}
fn d_rate() -> f64 {
    100.0
}
fn d_poisson_duration() -> Time {
    from_seconds(1e-4)
}
fn d_interval() -> Time {
    from_seconds(60.0)
}
fn d_checkpoint_duration() -> Time {
    from_seconds(1.0)
}
fn d_single_duration() -> Time {
    from_seconds(1e-3)
}

impl NoiseSpec {
    /// Checks the keys against each other and the run's rank count (None: not known yet).
    pub fn validate(&self, ranks: Option<u32>) -> Result<(), RuleError> {
        let shorter = |d: Time, span: Time, dk: &str, sk: &str| {
            if d >= span {
                Err(RuleError::new(dk, format!("must be < {sk} ({}), got {} (the CPU would never run)", to_seconds(span), to_seconds(d))))
            } else {
                Ok(())
            }
        };
        match self {
            NoiseSpec::Periodic { period_ps, duration_ps, .. } => shorter(*duration_ps, *period_ps, "duration_s", "period_s")?,
            NoiseSpec::Checkpoint { interval_ps, duration_ps, .. } => shorter(*duration_ps, *interval_ps, "duration_s", "interval_s")?,
            NoiseSpec::Poisson { rate_per_s, duration_ps, .. } => {
                let duty = rate_per_s * to_seconds(*duration_ps);
                if duty >= 1.0 {
                    return Err(RuleError::new(
                        "duration_s",
                        format!("rate_hz * duration_s must be < 1 (the CPU would never run), got {duty:.6}"),
                    ));
                }
            }
            _ => {}
        }
        if let NoiseSpec::Periodic { ranks: Some(rs), .. }
        | NoiseSpec::Poisson { ranks: Some(rs), .. }
        | NoiseSpec::Trace { ranks: Some(rs), .. }
        | NoiseSpec::Checkpoint { ranks: Some(rs), .. } = self
        {
            if rs.is_empty() {
                // (a source that hits no rank did nothing, silently)
                return Err(RuleError::new("ranks", "lists no rank: leave ranks out for a source that hits every rank"));
            }
        }
        let Some(p) = ranks else { return Ok(()) };
        match self {
            NoiseSpec::Single { rank, .. } if *rank >= p => {
                Err(RuleError::new("rank", format!("must be below the run's {p} ranks, got {rank}")))
            }
            NoiseSpec::Periodic { ranks: Some(rs), .. }
            | NoiseSpec::Poisson { ranks: Some(rs), .. }
            | NoiseSpec::Trace { ranks: Some(rs), .. }
            | NoiseSpec::Checkpoint { ranks: Some(rs), .. } => match rs.iter().enumerate().find(|(_, &r)| r >= p) {
                Some((j, r)) => Err(RuleError::new(format!("ranks[{j}]"), format!("must be below the run's {p} ranks, got {r}"))),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

/// A detour as an absolute interval [start, end) in simulated time. Starts may
/// lie before 0 for sources that are periodic in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Detour {
    start: i64,
    end: i64,
}

#[derive(Debug, Clone)]
enum Kind {
    Periodic {
        period: Time,
        duration: Time,
        cosched: bool,
    },
    /// `cdf[n]`: P(at most n arrivals in a window), one expected per window.
    Poisson {
        window: f64,
        cdf: Box<[f64; MAX_ARRIVALS_PER_WINDOW]>,
        duration: Time,
    },
    Trace {
        detours: Vec<(Time, Time)>,
        span: Time,
        cosched: bool,
    },
    Single {
        rank: u32,
        start: Time,
        duration: Time,
    },
}

#[derive(Debug, Clone)]
struct Source {
    kind: Kind,
    /// Sorted; `None` = every rank.
    ranks: Option<Vec<u32>>,
    stream: u64,
}

/// Units of a cached answer's reach (1,024 ps): without them a query more
/// than 4.3 ms before the next detour (1.4% of gaps at 1 kHz) missed the
/// cache until it came nearer.
const BACK_SHIFT: u32 = 10;

/// A rank's last detour answer (its length is the source's): the detour's
/// start, in two halves so the record packs in 12 bytes, and how long
/// before its end the query came, in whole units of 2^BACK_SHIFT ps (up to
/// 4.4 s). Valid for queries in [end − back, end): rounding down keeps the
/// interval true, only shorter.
#[derive(Debug, Clone, Copy)]
struct Cached {
    start: [u32; 2],
    back: u32,
}

impl Cached {
    /// An empty interval: answers nothing.
    const NONE: Cached = Cached { start: [0, 0], back: 0 };

    fn new(query: i64, d: Detour) -> Cached {
        let back = u32::try_from((d.end - query) >> BACK_SHIFT).unwrap_or(u32::MAX);
        Cached { start: [d.start as u32, (d.start >> 32) as u32], back }
    }

    #[inline]
    fn answer(&self, t: i64, len: i64) -> Option<Detour> {
        let start = (self.start[1] as i32 as i64) << 32 | self.start[0] as i64;
        let end = start + len;
        (end - ((self.back as i64) << BACK_SHIFT) <= t && t < end).then_some(Detour { start, end })
    }
}

/// All detour sources of a run.
#[derive(Debug, Clone, Default)]
pub struct Noise {
    sources: Vec<Source>,
    seed: u64,
    /// With a single source of fixed-length detours (periodic or Poisson):
    /// per rank, the last answer. It stays the answer for every query in
    /// [query time, detour end), which covers most CPU charges between two
    /// detours. Costs 12 bytes per rank; other sources go uncached.
    cache: Vec<Cached>,
    /// The cached source's detour length.
    cached_len: i64,
    too_dense: bool,
    /// The (rank, start) of the last CPU charge that found the CPU taken by
    /// a detour when it was ready (see [`Noise::charge_started_in_detour`]).
    waited_at: Option<(u32, Time)>,
}

/// Detours one CPU charge may cross before the run is stopped (noise so
/// dense for the work that simulating it detour by detour would not end).
pub const MAX_DETOURS_PER_CHARGE: u32 = 1 << 24;

/// Poisson arrivals per window: at most this many are drawn (P(more) < 1e-25 at mean 1).
const MAX_ARRIVALS_PER_WINDOW: usize = 24;

/// Why the noise sources cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum NoiseError {
    /// A source's parameters, at its key (`noise[1].rate_hz`).
    #[error(transparent)]
    Rule(#[from] RuleError),
    /// A detour trace that cannot be read.
    #[error(transparent)]
    Trace(#[from] NoiseTraceError),
}

impl Noise {
    pub fn none() -> Self {
        Noise::default()
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Builds the sources, checking parameters; `ranks` bounds rank selectors.
    pub fn new(specs: &[NoiseSpec], seed: u64, num_ranks: u32) -> Result<Self, NoiseError> {
        let mut sources = Vec::with_capacity(specs.len());
        for (i, spec) in specs.iter().enumerate() {
            let at = format!("noise[{i}]");
            spec.validate(Some(num_ranks)).map_err(|e| e.within(&format!("{at}.")))?;
            let check_ranks = |ranks: &Option<Vec<u32>>| -> Result<Option<Vec<u32>>, NoiseError> {
                match ranks {
                    None => Ok(None),
                    Some(list) => {
                        let mut sorted = list.clone();
                        sorted.sort_unstable();
                        sorted.dedup();
                        Ok(Some(sorted))
                    }
                }
            };
            let (kind, ranks) = match spec {
                NoiseSpec::Periodic { period_ps, duration_ps, cosched, ranks } => {
                    (Kind::Periodic { period: *period_ps, duration: *duration_ps, cosched: *cosched }, check_ranks(ranks)?)
                }
                NoiseSpec::Checkpoint { interval_ps, duration_ps, ranks } => {
                    (Kind::Periodic { period: *interval_ps, duration: *duration_ps, cosched: false }, check_ranks(ranks)?)
                }
                NoiseSpec::Poisson { rate_per_s, duration_ps, ranks } => {
                    if !(rate_per_s.is_finite() && *rate_per_s > 0.0 && *duration_ps > 0) {
                        let got = crate::units::show(*rate_per_s);
                        return Err(
                            RuleError::new(format!("{at}.rate_hz"), format!("rate and duration must be positive, got {got}")).into()
                        );
                    }
                    let window = 1e12 / rate_per_s; // one expected arrival per window
                    if !window.is_finite() {
                        // (an infinite window would place its draws at 0·∞)
                        let too_small =
                            format!("{} Hz is too small to represent; leave the source out for no noise", crate::units::show(*rate_per_s));
                        return Err(RuleError::new(format!("{at}.rate_hz"), too_small).into());
                    }
                    (Kind::Poisson { window, cdf: Box::new(poisson_cdf(1.0)), duration: *duration_ps }, check_ranks(ranks)?)
                }
                NoiseSpec::Trace { path, cosched, ranks } => {
                    // a file that cannot be read is the key's (`noise[0].path`); a bad line is the file's own
                    let detours = read_noise_trace(std::path::Path::new(path)).map_err(|e| match e {
                        NoiseTraceError::File(f) => NoiseError::Rule(RuleError::new(format!("{at}.path"), f.to_string())),
                        e => NoiseError::Trace(e),
                    })?;
                    let kind =
                        trace_kind(detours, *cosched).map_err(|what| RuleError::new(format!("{at}.path"), format!("{path}: {what}")))?;
                    (kind, check_ranks(ranks)?)
                }
                NoiseSpec::TraceData { detours, cosched, ranks } => {
                    (trace_kind(detours.clone(), *cosched).map_err(|what| RuleError::new(&at, what))?, check_ranks(ranks)?)
                }
                NoiseSpec::Single { rank, start_ps, duration_ps } => {
                    (Kind::Single { rank: *rank, start: *start_ps, duration: *duration_ps }, None)
                }
            };
            sources.push(Source { kind, ranks, stream: i as u64 + 1 });
        }
        let fixed_len = match sources.as_slice() {
            [Source { kind: Kind::Periodic { duration, .. } | Kind::Poisson { duration, .. }, .. }] => Some(*duration as i64),
            _ => None,
        };
        let cache = if fixed_len.is_some() { crate::memory::per_rank(num_ranks as usize, Cached::NONE) } else { Vec::new() };
        Ok(Noise { sources, seed, cache, cached_len: fixed_len.unwrap_or(0), too_dense: false, waited_at: None })
    }

    /// Hints that `rank`'s cached detour will be needed soon.
    #[inline(always)]
    pub fn prefetch(&self, rank: u32) {
        crate::prefetch::prefetch(&self.cache, rank as usize);
    }

    /// The first detour of `rank` (over all sources) that ends after `t`.
    #[inline]
    fn next_detour(&mut self, rank: u32, t: i64) -> Option<Detour> {
        if let Some(c) = self.cache.get_mut(rank as usize) {
            if let Some(d) = c.answer(t, self.cached_len) {
                return Some(d);
            }
            let s = &self.sources[0];
            let d = if s.applies_to(rank) { s.first_ending_after(self.seed, rank, t) } else { None };
            *c = d.map_or(Cached::NONE, |d| Cached::new(t, d));
            return d;
        }
        self.first_detour_uncached(rank, t)
    }

    fn first_detour_uncached(&self, rank: u32, t: i64) -> Option<Detour> {
        self.sources.iter().filter(|s| s.applies_to(rank)).filter_map(|s| s.first_ending_after(self.seed, rank, t)).min_by_key(|d| d.start)
    }

    /// When a CPU charge of `work` ps that may start at `start` ends, given the
    /// detours of `rank`.
    pub fn cpu_end(&mut self, rank: u32, start: Time, work: Time) -> Time {
        // work past the engine's limit (a workload's rate of almost nothing) is cut there, where the
        // run stops: start, a time below the limit, plus it cannot wrap
        let work = work.min(crate::time::PAST_LIMIT);
        if self.sources.is_empty() {
            return start + work;
        }
        let mut t = start as i64;
        let mut remaining = work as i64;
        for _ in 0..MAX_DETOURS_PER_CHARGE {
            if t > crate::time::TIME_LIMIT as i64 {
                return crate::time::PAST_LIMIT; // the run stops there
            }
            match self.next_detour(rank, t) {
                Some(d) if d.start <= t => {
                    // CPU taken right now: wait it out (noted if the charge was ready then:
                    // only a rare case pays for the note)
                    if t == start as i64 {
                        self.waited_at = Some((rank, start));
                    }
                    t = d.end
                }
                Some(d) if d.start < t + remaining => {
                    remaining -= d.start - t;
                    t = d.end;
                }
                _ => return (t + remaining) as Time,
            }
        }
        self.too_dense = true;
        crate::time::PAST_LIMIT
    }

    /// Whether the CPU charge of `rank` ready at `start`, which [`Noise::cpu_end`]
    /// has just been asked about (the last charge asked), found the CPU taken by a
    /// detour then: it started at the detour's end, whenever it was ready.
    /// Answered from that call, not by asking the sources again (which costs as
    /// much as the charge: the cache answers only later times).
    pub fn charge_started_in_detour(&self, rank: u32, start: Time) -> bool {
        let waited = self.waited_at == Some((rank, start));
        debug_assert_eq!(
            waited,
            !self.sources.is_empty() && self.first_detour_uncached(rank, start as i64).is_some_and(|d| d.start <= start as i64),
            "rank {rank} at {start}: not the last charge asked?"
        );
        waited
    }

    /// Whether a charge crossed more than [`MAX_DETOURS_PER_CHARGE`] detours.
    pub fn too_dense(&self) -> bool {
        self.too_dense
    }

    /// Calls `f(start, end)` for each detour of `rank` inside [start, end)
    /// (clipped to it) — for timelines.
    pub fn detours_in(&self, rank: u32, start: Time, end: Time, mut f: impl FnMut(Time, Time)) {
        let mut t = start as i64;
        while t < end as i64 {
            match self.first_detour_uncached(rank, t) {
                Some(d) if d.start < end as i64 => {
                    f(d.start.max(t) as Time, d.end.min(end as i64) as Time);
                    t = d.end;
                }
                _ => break,
            }
        }
    }

    /// Total detour time a rank suffers in [0, horizon) — for reporting.
    pub fn stolen_in(&self, rank: u32, horizon: Time) -> Time {
        let mut t: i64 = 0;
        let mut stolen: i64 = 0;
        let h = horizon as i64;
        while t < h {
            match self.first_detour_uncached(rank, t) {
                Some(d) if d.start < h => {
                    stolen += d.end.min(h) - d.start.max(t);
                    t = d.end;
                }
                _ => break,
            }
        }
        stolen as Time
    }
}

/// A detour trace as a source; what is wrong with it, if anything.
fn trace_kind(mut detours: Vec<(Time, Time)>, cosched: bool) -> Result<Kind, &'static str> {
    detours.retain(|&(_, d)| d > 0);
    if detours.is_empty() {
        return Err("the noise trace holds no detours");
    }
    detours.sort_unstable();
    // Merge overlapping detours so ends are sorted too (binary search needs it).
    let mut merged: Vec<(Time, Time)> = Vec::with_capacity(detours.len());
    for (s, d) in detours {
        match merged.last_mut() {
            Some((ls, ld)) if s <= *ls + *ld => *ld = (*ld).max(s + d - *ls),
            _ => merged.push((s, d)),
        }
    }
    let (ls, ld) = *merged.last().unwrap();
    let span = ls + ld;
    if merged.iter().map(|&(_, d)| d).sum::<Time>() >= span {
        return Err("the noise trace is all detour (the CPU would never run)");
    }
    Ok(Kind::Trace { detours: merged, span, cosched })
}

impl Source {
    #[inline]
    fn applies_to(&self, rank: u32) -> bool {
        match &self.ranks {
            None => true,
            Some(list) => list.binary_search(&rank).is_ok(),
        }
    }

    /// Per-rank (or shared, if co-scheduled) phase in [0, span), in whole
    /// nanoseconds so LogGOPSim-mode times stay integral.
    fn phase(&self, seed: u64, rank: u32, cosched: bool, span: Time) -> i64 {
        let who = if cosched { u64::MAX } else { rank as u64 };
        let ps = (unit(hash(seed, self.stream, who, u64::MAX)) * span as f64) as i64;
        ps - ps % PS_PER_NS as i64
    }

    /// The first detour of this source on `rank` whose end is after `t`.
    fn first_ending_after(&self, seed: u64, rank: u32, t: i64) -> Option<Detour> {
        match &self.kind {
            Kind::Periodic { period, duration, cosched } => {
                let (p, d) = (*period as i64, *duration as i64);
                let phase = self.phase(seed, rank, *cosched, *period);
                // Detour k occupies [phase + k·p, phase + k·p + d).
                let k = (t - phase).div_euclid(p);
                let start = phase + k * p;
                let start = if start + d > t { start } else { start + p };
                Some(Detour { start, end: start + d })
            }
            Kind::Poisson { window, cdf, duration } => {
                let d = *duration as i64;
                // A detour that started up to `d` before t may still run.
                let mut w = ((t - d) as f64 / window).floor() as i64;
                loop {
                    if w as f64 * window > crate::time::TIME_LIMIT as f64 {
                        return None; // no detour begins before the engine's time limit
                    }
                    let mut starts = [0i64; MAX_ARRIVALS_PER_WINDOW];
                    let n = self.poisson_window(seed, rank, w, *window, cdf, &mut starts);
                    for &s in &starts[..n] {
                        if s > crate::time::TIME_LIMIT as i64 {
                            return None; // (and s + d might not fit)
                        }
                        if s + d > t {
                            return Some(Detour { start: s, end: s + d });
                        }
                    }
                    w += 1;
                }
            }
            Kind::Trace { detours, span, cosched } => {
                let span_i = *span as i64;
                let offset = self.phase(seed, rank, *cosched, *span);
                // Rank-local trace time: τ = t + offset, looping every span.
                let tau = t + offset;
                let cycle = tau.div_euclid(span_i);
                let pos = tau.rem_euclid(span_i) as Time;
                let i = detours.partition_point(|&(s, d)| s + d <= pos);
                let (cycle, (s, d)) = if i < detours.len() { (cycle, detours[i]) } else { (cycle + 1, detours[0]) };
                let start = cycle * span_i + s as i64 - offset;
                Some(Detour { start, end: start + d as i64 })
            }
            Kind::Single { rank: r, start, duration } => {
                let (s, e) = (*start as i64, (*start + *duration) as i64);
                (*r == rank && e > t && duration > &0).then_some(Detour { start: s, end: e })
            }
        }
    }

    /// Sorted arrival times of window `w` (a Poisson count, uniform positions).
    fn poisson_window(&self, seed: u64, rank: u32, w: i64, window: f64, cdf: &[f64; MAX_ARRIVALS_PER_WINDOW], out: &mut [i64]) -> usize {
        let key = w as u64;
        let u = unit(hash(seed, self.stream, rank as u64, key.wrapping_mul(0x1_0000_0001)));
        // Inversion sampling of the count.
        let mut n = 0usize;
        while u > cdf[n] && n + 1 < out.len() {
            n += 1;
        }
        let base = w as f64 * window;
        for (i, slot) in out.iter_mut().take(n).enumerate() {
            let v = unit(hash(seed, self.stream ^ ((i as u64 + 1) << 32), rank as u64, key));
            *slot = (base + v * window) as i64;
        }
        out[..n].sort_unstable();
        n
    }
}

/// P(at most n arrivals) for a Poisson count of mean `mean`, n < the
/// table's length: the sums the sampler inverts, computed once per source
/// rather than on every window drawn.
fn poisson_cdf(mean: f64) -> [f64; MAX_ARRIVALS_PER_WINDOW] {
    let mut cdf = [0.0; MAX_ARRIVALS_PER_WINDOW];
    let (mut p, mut sum) = ((-mean).exp(), 0.0);
    for (n, c) in cdf.iter_mut().enumerate() {
        if n > 0 {
            p *= mean / n as f64;
        }
        sum += p;
        *c = sum;
    }
    cdf
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Time = 1_000_000; // ps per µs

    fn one(spec: NoiseSpec) -> Noise {
        Noise::new(&[spec], 42, 8).unwrap()
    }

    #[test]
    fn no_noise_costs_nothing() {
        assert_eq!(Noise::none().cpu_end(3, 10, 5), 15);
    }

    #[test]
    fn single_detour_extends_work_that_overlaps_it() {
        let mut n = one(NoiseSpec::Single { rank: 2, start_ps: 100, duration_ps: 50 });
        assert_eq!(n.cpu_end(2, 0, 100), 100); // ends exactly when the detour starts
        assert_eq!(n.cpu_end(2, 0, 101), 151);
        assert_eq!(n.cpu_end(2, 120, 10), 160); // starts inside: waits it out
        assert_eq!(n.cpu_end(1, 0, 101), 101); // other ranks untouched
        assert_eq!(n.cpu_end(2, 200, 10), 210);
    }

    #[test]
    fn cosched_periodic_noise_takes_its_duty_cycle() {
        // 10% duty cycle: 1000 µs of work takes ~1111 µs.
        let mut n = one(NoiseSpec::Periodic { period_ps: 100 * US, duration_ps: 10 * US, cosched: true, ranks: None });
        let end = n.cpu_end(0, 0, 1000 * US);
        assert!((end as f64 - 1000.0 * US as f64 / 0.9).abs() <= 10.0 * US as f64, "end {end}");
        // co-scheduled: every rank sees the same detours
        assert_eq!(n.cpu_end(0, 5, 333 * US), n.cpu_end(7, 5, 333 * US));
        assert_eq!(n.stolen_in(3, 1000 * 100 * US), 1000 * 10 * US);
    }

    #[test]
    fn uncoordinated_phases_differ_between_ranks() {
        let mut n = one(NoiseSpec::Checkpoint { interval_ps: 1000 * US, duration_ps: 100 * US, ranks: None });
        let ends: Vec<Time> = (0..8).map(|r| n.cpu_end(r, 0, 500 * US)).collect();
        // each rank loses between nothing and one whole checkpoint
        assert!(ends.iter().all(|&e| (500 * US..=600 * US).contains(&e)), "{ends:?}");
        assert!(ends.windows(2).any(|w| w[0] != w[1]), "{ends:?}");
    }

    #[test]
    fn poisson_noise_steals_rate_times_duration() {
        let mut n = one(NoiseSpec::Poisson { rate_per_s: 1000.0, duration_ps: 50 * US, ranks: None });
        let horizon: Time = 2_000_000 * US; // 2 s → ~2000 detours of 50 µs = ~5%
        let stolen: f64 = (0..4).map(|r| n.stolen_in(r, horizon) as f64).sum::<f64>() / 4.0;
        let frac = stolen / horizon as f64;
        assert!((frac - 0.05).abs() < 0.006, "fraction {frac}");
        // stateless: querying out of order gives the same answer
        let a = n.cpu_end(1, 123 * US, 777 * US);
        let _ = n.cpu_end(1, 0, 5);
        assert_eq!(a, n.cpu_end(1, 123 * US, 777 * US));
    }

    #[test]
    fn trace_replay_loops_and_respects_cosched() {
        let spec = NoiseSpec::TraceData { detours: vec![(0, 10), (100, 20)], cosched: true, ranks: None };
        let mut n = one(spec);
        // span = 120; 30 of every 120 ps are stolen
        assert_eq!(n.stolen_in(0, 1200), 300);
        assert_eq!(n.cpu_end(0, 0, 1000), n.cpu_end(5, 0, 1000));
    }

    #[test]
    fn cached_and_uncached_answers_agree() {
        // short detours; detours longer than u32 ps (5 ms); queries more
        // than 4.3 ms (u32 ps) and more than 4.4 s (the cache's reach)
        // before a detour's end (periods 20 ms and 10 s)
        let specs = [
            NoiseSpec::Poisson { rate_per_s: 5000.0, duration_ps: 20 * US, ranks: None },
            NoiseSpec::Periodic { period_ps: 20_000 * US, duration_ps: 5_000 * US, cosched: false, ranks: None },
            NoiseSpec::Periodic { period_ps: 20_000 * US, duration_ps: 1_000 * US, cosched: false, ranks: None },
            NoiseSpec::Periodic { period_ps: 10_000_000 * US, duration_ps: 1_000 * US, cosched: false, ranks: None },
        ];
        for spec in specs {
            let mut cached = one(spec.clone());
            // two sources disable the cache; the second never fires on rank 1
            let mut plain = Noise::new(&[spec.clone(), NoiseSpec::Single { rank: 0, start_ps: 0, duration_ps: 1 }], 42, 8).unwrap();
            let mut t = 0;
            for i in 0..5000u64 {
                let work = (i * 7919) % (300 * US) * if i % 7 == 0 { 30 } else { 1 };
                let a = cached.cpu_end(1, t, work);
                assert_eq!(a, plain.cpu_end(1, t, work), "{spec:?} query {i}");
                t = a + (i % 3) * US;
            }
        }
    }

    #[test]
    fn rates_too_small_to_represent_are_refused_and_tiny_ones_add_nothing() {
        let spec = |rate_per_s| NoiseSpec::Poisson { rate_per_s, duration_ps: 1_000_000, ranks: None };
        for rate in [1e-300, 5e-324] {
            let e = Noise::new(&[spec(rate)], 1, 4).unwrap_err();
            let e = e.to_string();
            assert!(e.contains("noise[0].rate_hz") && e.contains("too small"), "{e}");
        }
        // one detour expected per 1e302 s: none before the engine's time limit
        let mut n = Noise::new(&[spec(1e-290)], 1, 4).unwrap();
        assert_eq!(n.cpu_end(0, 0, 1_000_000_000), 1_000_000_000);
    }

    #[test]
    fn rank_selectors_and_bad_parameters_are_checked() {
        let mut n = one(NoiseSpec::Periodic { period_ps: 100, duration_ps: 50, cosched: true, ranks: Some(vec![3]) });
        assert_eq!(n.cpu_end(2, 0, 1000), 1000);
        assert!(n.cpu_end(3, 0, 1000) > 1900);
        let bad = Noise::new(&[NoiseSpec::Periodic { period_ps: 100, duration_ps: 100, cosched: true, ranks: None }], 1, 4);
        assert!(bad.unwrap_err().to_string().contains("noise[0].duration_s: must be < period_s"));
        let bad = Noise::new(&[NoiseSpec::Single { rank: 9, start_ps: 0, duration_ps: 1 }], 1, 4);
        assert!(bad.unwrap_err().to_string().contains("noise[0].rank: must be below the run's 4 ranks"));
    }
}
