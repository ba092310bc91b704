//! Noise measurement helpers, compiled for precision (a Python loop's own
//! jitter would drown microsecond detours):
//!
//! * `selfish`: spin reading a monotonic clock and record every gap above a
//!   threshold — each is time the CPU was taken away (a detour). Output:
//!   (start, duration) in ns since the start, the trace format the noise
//!   replay reads.
//! * `fwq`: fixed work quanta — time the same small loop many times; the
//!   excess over the fastest quantum is noise.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Detours longer than `threshold` during `duration`: (start_ns, length_ns).
pub fn selfish(duration: Duration, threshold: Duration) -> Vec<(u64, u64)> {
    let start = Instant::now();
    let mut last = start;
    let mut out = Vec::new();
    let thr = threshold.as_nanos() as u64;
    loop {
        let now = Instant::now();
        let gap = (now - last).as_nanos() as u64;
        if gap > thr {
            out.push(((last - start).as_nanos() as u64, gap));
        }
        last = now;
        if now - start >= duration {
            return out;
        }
    }
}

/// Durations (ns) of `samples` runs of a fixed work quantum of `work` loop iterations.
pub fn fwq(work: u64, samples: usize) -> Vec<u64> {
    (0..samples)
        .map(|_| {
            let t0 = Instant::now();
            let mut x = 1u64;
            for i in 0..work {
                x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
            black_box(x);
            t0.elapsed().as_nanos() as u64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selfish_reports_a_sleep_as_a_detour() {
        // A sleep inside the window is time taken from the loop: emulate it
        // by measuring around one in a second thread-free way — the loop
        // itself cannot sleep, so check the bookkeeping on a short run.
        let d = selfish(Duration::from_millis(20), Duration::from_micros(1));
        assert!(d.iter().all(|&(s, l)| l > 1000 && s < 30_000_000));
        let w = fwq(10_000, 20);
        assert_eq!(w.len(), 20);
        assert!(w.iter().all(|&x| x > 0));
    }
}
