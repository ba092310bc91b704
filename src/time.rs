//! Simulated time: integer picoseconds, so sums of LogGOPS terms are exact and
//! runs are bit-reproducible (no floating-point accumulation in the engine).

/// A point in (or span of) simulated time, in picoseconds.
pub type Time = u64;

pub const PS_PER_NS: Time = 1_000;
pub const PS_PER_S: f64 = 1e12;

/// Seconds (as given by users) to picoseconds, rounded half to even (as
/// Python's `round`, which scenarios were converted with before).
pub fn from_seconds(s: f64) -> Time {
    (s * PS_PER_S).round_ties_even() as Time
}

pub fn to_seconds(t: Time) -> f64 {
    t as f64 / PS_PER_S
}
