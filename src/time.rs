//! Simulated time: integer picoseconds, so sums of LogGOPS terms are exact and
//! runs are bit-reproducible (no floating-point accumulation in the engine).

/// A point in (or span of) simulated time, in picoseconds.
pub type Time = u64;

pub const PS_PER_NS: Time = 1_000;

/// The largest time (or time per byte times a size) any input may give:
/// 2^60 ps, about 13 days.
pub const MAX_INPUT: Time = 1 << 60;
/// The engine refuses to simulate past 2^62 ps (about 53 days). With every
/// input at most [`MAX_INPUT`], a time below the limit plus a dozen inputs
/// stays below 2^64, so no sum can wrap before the limit is noticed; and
/// sentinels such as `Time::MAX` are never real times.
pub const TIME_LIMIT: Time = 1 << 62;

/// What a longer duration is cut to: still past the limit (so the run
/// stops with [`past_limit`]), never wrapping a sum.
pub const PAST_LIMIT: Time = TIME_LIMIT + 1;

/// The error for a run that passes [`TIME_LIMIT`].
pub fn past_limit(t: Time) -> String {
    format!(
        "simulated time reached {:.4e} s, past the engine's limit of 2^62 ps (about {:.1} days); \
         shorten the run (fewer iterations, shorter compute or noise)",
        to_seconds(t),
        to_seconds(TIME_LIMIT) / 86400.0
    )
}
pub const PS_PER_S: f64 = 1e12;

/// Seconds (as given by users) to picoseconds, rounded half to even (as
/// Python's `round`, which scenarios were converted with before).
pub fn from_seconds(s: f64) -> Time {
    (s * PS_PER_S).round_ties_even() as Time
}

pub fn to_seconds(t: Time) -> f64 {
    t as f64 / PS_PER_S
}
