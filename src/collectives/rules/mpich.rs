//! MPICH's default algorithm selection (maint/tuning/coll/mpir/generic.json,
//! MPICH main of 2026 = 5.1.0a1; a built-in commutative operation, not in
//! place). Its rules are a few comparisons each, written out as functions;
//! the thresholds are generic.json's (`avg_msg_size`, `total_msg_size`,
//! `comm_size` bounds, inclusive where it writes `<=`).
//!
//! Collectives absent here follow the rule in [`super`]: gather and scatter
//! have one intra-communicator algorithm (binomial), the barrier is
//! k-dissemination with k = 2 (our dissemination).

use crate::collectives::{floor_pow2, Algorithm};

/// Allreduce: recursive doubling up to 8 bytes or when the vector has fewer
/// elements (taken as 8-byte doubles) than the largest power of two ≤
/// ranks, else reduce-scatter + allgather (Rabenseifner). MPICH folds each
/// extra rank in with one whole-vector message where Open MPI swaps halves
/// and sends one half back; we run Open MPI's fold for both (on non-powers
/// of two, half a vector more per folded pair).
pub fn allreduce(ranks: u32, bytes: u64) -> Algorithm {
    if bytes <= 8 || bytes / 8 < floor_pow2(ranks.max(1)) as u64 {
        Algorithm::RecursiveDoubling
    } else {
        Algorithm::Rabenseifner
    }
}

/// Bcast: binomial below 8 ranks or up to 12 KiB; then, on a power of two
/// up to 512 KiB, scatter + recursive-doubling allgather; else scatter +
/// ring allgather.
pub fn bcast(ranks: u32, bytes: u64) -> Algorithm {
    if ranks < 8 || bytes <= 12288 {
        Algorithm::Binomial
    } else if ranks.is_power_of_two() && bytes <= 524288 {
        Algorithm::ScatterAllgather
    } else {
        Algorithm::ScatterRingAllgather
    }
}

/// Allgather, by the total gathered size: a power of two below 512 KiB runs
/// recursive doubling, others below 80 KiB Bruck, the rest the ring.
pub fn allgather(ranks: u32, bytes: u64) -> Algorithm {
    let total = bytes.saturating_mul(ranks as u64);
    if ranks.is_power_of_two() && total < 524288 {
        Algorithm::RecursiveDoubling
    } else if !ranks.is_power_of_two() && total < 81920 {
        Algorithm::Bruck
    } else {
        Algorithm::Ring
    }
}

/// Alltoall, by the bytes sent to each peer: below 8 ranks `scattered`
/// (our batched linear) up to 32 KiB, else pairwise; from 8 ranks Bruck up
/// to 256 B, scattered up to 32 KiB, pairwise above.
pub fn alltoall(ranks: u32, bytes: u64) -> Algorithm {
    match (ranks < 8, bytes) {
        (true, 0..=32768) => Algorithm::Linear,
        (false, 0..=256) => Algorithm::Bruck,
        (false, 257..=32768) => Algorithm::Linear,
        _ => Algorithm::Pairwise,
    }
}

/// Reduce: binomial up to 2 KiB, or below one double per rank of the
/// largest power of two; else reduce-scatter + gather.
pub fn reduce(ranks: u32, bytes: u64) -> Algorithm {
    if bytes <= 2048 || bytes / 8 < floor_pow2(ranks.max(1)) as u64 {
        Algorithm::Binomial
    } else {
        Algorithm::Rabenseifner
    }
}

/// Reduce_scatter and reduce_scatter_block, by the total vector of p
/// blocks: recursive halving below 512 KiB, pairwise above.
pub fn reduce_scatter(ranks: u32, bytes: u64) -> Algorithm {
    if bytes.saturating_mul(ranks as u64) < 524288 {
        Algorithm::RecursiveHalving
    } else {
        Algorithm::Pairwise
    }
}
