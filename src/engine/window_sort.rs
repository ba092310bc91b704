//! Ordering one window of the event queue ([`super::queue`]) by (time,
//! stamp) with 8-byte keys, so that sorting moves keys rather than 40-byte
//! events and each event then moves once. It knows an event only by its
//! (time, stamp), so it depends on nothing of the queue's.

use crate::time::Time;

/// Events are grouped by windows of 2^16 ps (65.5 ns): one refill serves
/// every event of a window, sorted then.
pub(super) const WINDOW_BITS: u32 = 16;

/// The low bits of a packed key that hold the event's index in a window of `n`.
pub(super) fn index_mask(n: usize) -> u64 {
    (1u64 << index_bits(n)) - 1
}

fn index_bits(n: usize) -> u32 {
    usize::BITS - n.saturating_sub(1).leading_zeros()
}

/// Orders a window of `n` events (`event(i)`: its time and stamp, stamps
/// unique) as (time, stamp): `InOrder`
/// where they are already, else `keys` filled with one word per event,
/// sorted: the time's offset in the window, then the stamp (less the
/// window's least), then the event's index. `No` where the stamps spread
/// wider than the bits left beside the index (a window of 2^16 events keeps
/// 32 bits: 4·10^9 events between its oldest and newest).
pub(super) fn pack_keys(keys: &mut Vec<u64>, n: usize, event: impl Fn(usize) -> (Time, u64)) -> Packed {
    let ibits = index_bits(n);
    let sbits = 64 - WINDOW_BITS - ibits;
    // one pass for the least stamp and whether the window is in order
    // already, as a window of events all at one time usually is: then no
    // keys, no sort, and the run is the window reversed
    let (mut least, mut in_order) = (u64::MAX, true);
    let mut before = (0, 0);
    for i in 0..n {
        let e = event(i);
        least = least.min(e.1);
        in_order &= i == 0 || before < e;
        before = e;
    }
    if in_order {
        return Packed::InOrder;
    }
    keys.clear();
    for i in 0..n {
        let (time, stamp) = event(i);
        let stamp = stamp - least;
        if stamp >> sbits != 0 {
            return Packed::No;
        }
        keys.push((time & ((1 << WINDOW_BITS) - 1)) << (sbits + ibits) | stamp << ibits | i as u64);
    }
    keys.sort_unstable();
    Packed::Sorted
}

/// What `pack_keys` made of a window.
#[derive(PartialEq)]
pub(super) enum Packed {
    /// Keys sorted.
    Sorted,
    /// The events were in order already (no keys).
    InOrder,
    /// Stamps too far apart for a key (keys of no use).
    No,
}

/// Reorders `v` latest first by its sorted packed `keys` (`pack_keys`),
/// moving each event once: place p takes the event of `keys[n − 1 − p]`,
/// following each cycle of the permutation. `done` is scratch.
pub(super) fn latest_first_in_place<T: Copy>(v: &mut [T], keys: &[u64], done: &mut Vec<u64>) {
    let (n, mask) = (v.len(), index_mask(v.len()));
    done.clear();
    done.resize(n.div_ceil(64), 0);
    let src = |p: usize| (keys[n - 1 - p] & mask) as usize;
    for p in 0..n {
        if done[p / 64] & (1 << (p % 64)) != 0 {
            continue;
        }
        let first = v[p];
        let mut q = p;
        loop {
            done[q / 64] |= 1 << (q % 64);
            let s = src(q);
            if s == p {
                v[q] = first;
                break;
            }
            v[q] = v[s];
            q = s;
        }
    }
}
