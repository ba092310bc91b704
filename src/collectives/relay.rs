//! Broadcast topologies as parent/children functions of the rank relative
//! to the root (v = 0 is the root), and the chunked relay built on them:
//! each rank receives every chunk from its parent and forwards it to its
//! children in order. The ring family follows HPL's panel broadcasts, which
//! the 2-D grid paper (§3.3, Fig. 8) compares:
//!
//! * 1-ring: 0 → 1 → 2 → … → p−1.
//! * modified 1-ring: the root sends to 1 (the next panel's owner, which
//!   then forwards nothing) and to 2, which starts the ring 2 → 3 → … .
//! * 2-ring (bidirectional): the root starts two chains, one up
//!   1 → 2 → … → h, the other down p−1 → p−2 → … → h+1.
//! * modified 2-ring: 1 directly from the root, then a 2-ring over 2..p−1.
//!
//! The trees (binomial, binary, linear) are here too so that workloads that
//! relay broadcasts themselves (the 2-D dense kernels) share one definition.

use super::{Algorithm, Collective, Step};

/// Parent of relative rank v (None for the root).
pub fn parent(alg: Algorithm, v: u32, p: u32) -> Option<u32> {
    use Algorithm::*;
    if v == 0 || v >= p {
        return None;
    }
    Some(match alg {
        Binomial => v & !(1 << (31 - v.leading_zeros())),
        BinaryTree => (v - 1) / 2,
        Linear => 0,
        TwoRing => {
            let h = p / 2; // up chain 1..=h, down chain p−1 ..= h+1
            if v <= h {
                v - 1
            } else if v == p - 1 {
                0
            } else {
                v + 1
            }
        }
        Knomial => {
            let m = knomial_mask(v, p);
            (v as u64 - v as u64 % (KNOMIAL_RADIX as u64 * m as u64)) as u32
        }
        ModifiedRing if v <= 2 => 0,
        TwoRingModified if v == 1 => 0,
        TwoRingModified => {
            let h = 1 + (p - 1) / 2; // up chain 2..=h, down chain p−1 ..= h+1
            if v == 2 || v == p - 1 {
                0
            } else if v <= h {
                v - 1
            } else {
                v + 1
            }
        }
        _ => v - 1, // 1-ring, pipelined ring, and the modified ring from 3 on
    })
}

/// The j-th child of relative rank v, in the order it is served.
pub fn child(alg: Algorithm, v: u32, p: u32, j: u32) -> Option<u32> {
    use Algorithm::*;
    let c = match alg {
        Binomial => {
            let k = (32 - v.leading_zeros()) + j; // children v + 2^k for 2^k > v
            if k >= 32 {
                return None;
            }
            v as u64 + (1u64 << k)
        }
        Knomial => {
            // masks below v's receiving one, largest first; digits 1..radix within each
            let (mut m, mut j) = (knomial_mask(v, p) as u64 / KNOMIAL_RADIX as u64, j as u64);
            while m > 0 {
                let here = (1..KNOMIAL_RADIX as u64).filter(|d| v as u64 + d * m < p as u64).count() as u64;
                if j < here {
                    return Some(v + (j as u32 + 1) * m as u32);
                }
                j -= here;
                m /= KNOMIAL_RADIX as u64;
            }
            return None;
        }
        BinaryTree if j < 2 => 2 * v as u64 + 1 + j as u64,
        BinaryTree => return None,
        Linear if v == 0 => 1 + j as u64,
        Linear => return None,
        TwoRing => {
            let h = p / 2;
            match (v, j) {
                (0, 0) => 1,
                (0, 1) if p - 1 > h => (p - 1).into(),
                (0, _) => return None,
                (v, 0) if v < h => (v + 1).into(),
                (v, 0) if v > h + 1 => (v - 1).into(),
                _ => return None,
            }
        }
        ModifiedRing => match (v, j) {
            (0, 0 | 1) => (1 + j).into(),
            (1, _) | (_, 1..) => return None,
            (v, _) => (v + 1).into(),
        },
        TwoRingModified => {
            let h = 1 + (p - 1) / 2;
            match (v, j) {
                (0, 0 | 1) => (1 + j).into(),
                (0, 2) if p - 1 > h => (p - 1).into(),
                (0, _) | (1, _) => return None,
                (v, 0) if (2..h).contains(&v) => (v + 1).into(),
                (v, 0) if v > h + 1 => (v - 1).into(),
                _ => return None,
            }
        }
        _ if j == 0 => (v + 1).into(), // rings
        _ => return None,
    };
    (c < p as u64).then_some(c as u32)
}

/// The radix of the k-nomial tree (Open MPI's `coll_tuned_bcast_knomial_radix` default).
pub const KNOMIAL_RADIX: u32 = 4;

/// The power of the radix at which v receives (its lowest nonzero digit);
/// for the root, the first power ≥ p.
fn knomial_mask(v: u32, p: u32) -> u32 {
    let k = KNOMIAL_RADIX as u64;
    let mut m = 1u64;
    while m < p as u64 {
        if !(v as u64).is_multiple_of(k * m) {
            break;
        }
        m *= k;
    }
    m.min(u32::MAX as u64) as u32
}

/// Number of children of relative rank v.
pub fn children(alg: Algorithm, v: u32, p: u32) -> u32 {
    if alg == Algorithm::Linear {
        return if v == 0 { p.saturating_sub(1) } else { 0 }; // (not counted one by one: p can be large)
    }
    (0..).take_while(|&j| child(alg, v, p, j).is_some()).count() as u32
}

/// Number of chunks a message of `bytes` is cut into (`chunk` 0: one piece).
pub fn chunks(bytes: u64, chunk: u64) -> u64 {
    if chunk == 0 {
        1
    } else {
        bytes.div_ceil(chunk).max(1)
    }
}

/// Size of chunk k.
pub fn chunk_size(bytes: u64, chunk: u64, k: u64) -> u64 {
    if chunk == 0 {
        bytes
    } else {
        chunk.min(bytes - (k * chunk).min(bytes))
    }
}

/// A relayed broadcast's steps: per chunk, receive it from the parent, then
/// send it to each child with a blocking send (a ring rank has one child;
/// the root of a 2-ring serves its two or three in turn, as HPL does).
pub fn relay_bcast(c: &Collective, rank: u32, i: u32) -> Option<Step> {
    let p = c.ranks;
    let v = (rank + p - c.root) % p;
    let abs = |x: u32| ((x as u64 + c.root as u64) % p as u64) as u32;
    let from = parent(c.algorithm, v, p);
    let n = children(c.algorithm, v, p) as u64;
    let per_chunk = n + u64::from(from.is_some());
    if per_chunk == 0 {
        return None;
    }
    let (k, j) = (i as u64 / per_chunk, i as u64 % per_chunk);
    if k >= chunks(c.bytes, c.chunk_bytes) {
        return None;
    }
    let bytes = chunk_size(c.bytes, c.chunk_bytes, k);
    Some(match from {
        Some(f) if j == 0 => Step::Recv { from: abs(f), bytes },
        Some(_) => Step::Send { to: abs(child(c.algorithm, v, p, j as u32 - 1)?), bytes },
        None => Step::Send { to: abs(child(c.algorithm, v, p, j as u32)?), bytes },
    })
}
