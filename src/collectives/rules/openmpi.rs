//! Open MPI's fixed decision rules (the tuned component's
//! ompi/mca/coll/tuned/coll_tuned_decision_fixed.c, Open MPI main 8efebee,
//! the same tables as v5.0), each a [`Table`] of Open MPI's algorithm
//! numbers and a function mapping those numbers to ours. Sizes are in
//! bytes: Open MPI's `dsize` (count × datatype size), per rank or in total
//! as each function says. Segment sizes are Open MPI's default of 0 (no
//! segmentation), fan-in and fan-out 2, k-nomial radix 4.

use super::{lookup, Table, ANY, REST};
use crate::collectives::Algorithm::{self, *};

/// `ompi_coll_tuned_allreduce_intra_dec_fixed` (a commutative operation),
/// by the whole vector: 2 nonoverlapping, 3 recursive doubling, 4 ring, 5
/// segmented ring, 6 Rabenseifner. (Its rank rows are written `ranks <=
/// 3`, `<= 7`, …: here as `< 4`, `< 8`.)
pub const ALLREDUCE: Table = &[
    (4, &[(8, 4), (4096, 3), (8192, 4), (16384, 3), (65536, 4), (262144, 5), (REST, 6)]),
    (8, &[(16, 4), (8192, 3), (REST, 6)]),
    (16, &[(8192, 3), (REST, 6)]),
    (32, &[(64, 5), (4096, 3), (REST, 6)]),
    (64, &[(128, 5), (REST, 6)]),
    (128, &[(262144, 3), (REST, 6)]),
    (256, &[(131072, 2), (262144, 3), (REST, 6)]),
    (512, &[(4096, 2), (REST, 6)]),
    (2048, &[(2048, 2), (16384, 3), (REST, 6)]),
    (4096, &[(2048, 2), (4096, 5), (16384, 3), (REST, 6)]),
    (ANY, &[(2048, 2), (16384, 5), (32768, 3), (REST, 6)]),
];

/// Allreduce: 2 nonoverlapping (reduce, then bcast: here binomial trees),
/// 5 segmented ring (with the default segment size 0 the plain ring). The
/// ring falls back to recursive doubling when the vector has fewer
/// elements than ranks; elements are taken as 8-byte doubles.
pub fn allreduce(ranks: u32, bytes: u64) -> Algorithm {
    match lookup(ALLREDUCE, ranks, bytes) {
        2 => ReduceBcast,
        4 | 5 if bytes / 8 < ranks as u64 => RecursiveDoubling,
        4 | 5 => Ring,
        6 => Rabenseifner,
        _ => RecursiveDoubling,
    }
}

/// `ompi_coll_tuned_bcast_intra_dec_fixed`, by the message: 1 linear, 2
/// chain, 3 pipeline, 4 split binary tree, 5 binary tree, 6 binomial, 7
/// k-nomial, 8 scatter + allgather, 9 scatter + ring allgather.
pub const BCAST: Table = &[
    (4, &[(32, 3), (256, 5), (512, 3), (1024, 7), (32768, 1), (131072, 5), (262144, 2), (524288, 1), (1048576, 6), (REST, 5)]),
    (8, &[(64, 5), (128, 6), (2048, 5), (8192, 6), (1048576, 1), (REST, 2)]),
    (16, &[(8, 7), (64, 5), (4096, 7), (16384, 5), (32768, 6), (REST, 1)]),
    (32, &[(4096, 7), (1048576, 6), (REST, 8)]),
    (64, &[(2048, 6), (REST, 7)]),
    (128, &[(REST, 7)]),
    (256, &[(2, 6), (16384, 5), (32768, 1), (65536, 5), (REST, 7)]),
    (1024, &[(16384, 7), (32768, 4), (REST, 7)]),
    (2048, &[(524288, 7), (REST, 8)]),
    (4096, &[(262144, 7), (REST, 8)]),
    (ANY, &[(8192, 7), (16384, 5), (262144, 7), (REST, 8)]),
];

/// Bcast: chain and pipeline are a single chain when unsegmented (our
/// 1-ring); the split binary tree runs as the binary tree (it differs only
/// in splitting the message over the two subtrees, used for 256–1023 ranks
/// and 16–32 KiB).
pub fn bcast(ranks: u32, bytes: u64) -> Algorithm {
    match lookup(BCAST, ranks, bytes) {
        1 => Linear,
        2 | 3 => Ring,
        4 | 5 => BinaryTree,
        6 => Binomial,
        7 => Knomial,
        // (it falls back to linear below one element per rank: bytes taken as the count)
        8 if bytes < ranks as u64 => Linear,
        8 => ScatterAllgather,
        _ => ScatterRingAllgather,
    }
}

/// `ompi_coll_tuned_allgather_intra_dec_fixed`, by the bytes each rank
/// contributes: 2 Bruck (radix 2), 3 recursive doubling, 4 ring, 5
/// neighbour exchange, 6 two_proc.
pub const ALLGATHER: Table = &[
    (3, &[(REST, 6)]),
    (32, &[(REST, 3)]),
    (64, &[(1024, 3), (65536, 5), (REST, 4)]),
    (128, &[(512, 3), (65536, 5), (REST, 4)]),
    (256, &[(512, 3), (131072, 5), (524288, 4), (1048576, 5), (REST, 4)]),
    (512, &[(32, 3), (128, 2), (1024, 3), (131072, 5), (524288, 4), (1048576, 5), (REST, 4)]),
    (1024, &[(64, 3), (256, 2), (2048, 3), (REST, 5)]),
    (2048, &[(4, 3), (8, 2), (16, 3), (32, 2), (256, 3), (512, 2), (4096, 3), (REST, 5)]),
    (4096, &[(32, 2), (128, 3), (512, 2), (4096, 3), (REST, 5)]),
    (ANY, &[(2, 3), (8, 2), (16, 3), (512, 2), (4096, 3), (REST, 5)]),
];

/// Allgather: recursive doubling runs Bruck on non-powers of two, as Open
/// MPI does; two_proc (2 ranks: one exchange) as recursive doubling;
/// neighbour exchange the ring on odd counts.
pub fn allgather(ranks: u32, bytes: u64) -> Algorithm {
    match lookup(ALLGATHER, ranks, bytes) {
        2 => Bruck,
        3 | 6 if ranks.is_power_of_two() => RecursiveDoubling,
        3 | 6 => Bruck,
        4 => Ring,
        _ if ranks.is_multiple_of(2) => NeighborExchange,
        _ => Ring,
    }
}

/// `ompi_coll_tuned_alltoall_intra_dec_fixed`, by the bytes sent to each
/// peer: 1 linear, 2 pairwise, 3 modified Bruck, 4 linear_sync, 5
/// two_proc.
pub const ALLTOALL: Table = &[
    (3, &[(2, 2), (4, 5), (16, 2), (64, 5), (256, 2), (4096, 5), (32768, 2), (262144, 4), (1048576, 5), (REST, 2)]),
    (8, &[(8192, 4), (16384, 1), (65536, 4), (524288, 1), (1048576, 2), (REST, 1)]),
    (16, &[(262144, 4), (REST, 1)]),
    (32, &[(4, 4), (512, 3), (8192, 4), (32768, 1), (262144, 4), (524288, 1), (REST, 4)]),
    (64, &[(512, 3), (524288, 1), (REST, 4)]),
    (128, &[(1024, 3), (2048, 1), (4096, 4), (262144, 1), (REST, 2)]),
    (256, &[(1024, 3), (2048, 4), (262144, 1), (REST, 2)]),
    (512, &[(1024, 3), (8192, 4), (32768, 1), (REST, 2)]),
    (1024, &[(512, 3), (8192, 4), (16384, 1), (131072, 4), (262144, 1), (REST, 2)]),
    (2048, &[(512, 3), (1024, 4), (2048, 1), (16384, 4), (262144, 1), (REST, 4)]),
    (4096, &[(1024, 3), (4096, 4), (8192, 1), (131072, 4), (REST, 1)]),
    (ANY, &[(2048, 3), (8192, 4), (16384, 1), (32768, 4), (65536, 1), (REST, 4)]),
];

/// Alltoall: linear_sync, with the default of no request limit, is linear;
/// two_proc (2 ranks: one exchange) is pairwise.
pub fn alltoall(ranks: u32, bytes: u64) -> Algorithm {
    match lookup(ALLTOALL, ranks, bytes) {
        1 | 4 => Linear,
        3 => Bruck,
        _ => Pairwise,
    }
}

/// `ompi_coll_tuned_barrier_intra_dec_fixed`, by ranks alone: 1 linear, 3
/// recursive doubling, 4 Bruck, 6 tree.
pub const BARRIER: Table = &[
    (4, &[(REST, 3)]),
    (8, &[(REST, 1)]),
    (64, &[(REST, 3)]),
    (256, &[(REST, 4)]),
    (512, &[(REST, 6)]),
    (1024, &[(REST, 4)]),
    (4096, &[(REST, 6)]),
    (ANY, &[(REST, 4)]),
];

/// Barrier: Bruck is our dissemination, the tree our binomial fan-in and
/// fan-out.
pub fn barrier(ranks: u32) -> Algorithm {
    match lookup(BARRIER, ranks, 0) {
        1 => Linear,
        3 => RecursiveDoubling,
        6 => Binomial,
        _ => Dissemination,
    }
}

/// `ompi_coll_tuned_gather_intra_dec_fixed`, by each rank's block: 1 basic
/// linear, 2 binomial, 3 linear_sync.
pub const GATHER: Table = &[
    (4, &[(2, 3), (4, 1), (32768, 2), (65536, 1), (131072, 2), (REST, 3)]),
    (8, &[(1024, 2), (8192, 1), (32768, 2), (262144, 1), (REST, 3)]),
    (256, &[(REST, 2)]),
    (512, &[(2048, 2), (8192, 1), (REST, 2)]),
    (ANY, &[(REST, 2)]),
];

/// Gather: linear_sync (linear with a zero-byte go-ahead from the root to
/// each sender) runs as linear.
pub fn gather(ranks: u32, bytes: u64) -> Algorithm {
    match lookup(GATHER, ranks, bytes) {
        2 => Binomial,
        _ => Linear,
    }
}

/// `ompi_coll_tuned_scatter_intra_dec_fixed`, by each rank's block: 1
/// basic linear, 2 binomial, 3 linear_nb.
pub const SCATTER: Table = &[
    (4, &[(2, 3), (131072, 1), (262144, 3), (REST, 1)]),
    (8, &[(2048, 2), (4096, 1), (8192, 2), (32768, 1), (1048576, 3), (REST, 1)]),
    (16, &[(16384, 2), (1048576, 3), (REST, 1)]),
    (32, &[(16384, 2), (32768, 1), (REST, 3)]),
    (64, &[(512, 2), (8192, 3), (16384, 2), (REST, 3)]),
    (ANY, &[(512, 2), (REST, 3)]),
];

/// Scatter: linear_nb (the root's sends nonblocking) runs as linear.
pub fn scatter(ranks: u32, bytes: u64) -> Algorithm {
    match lookup(SCATTER, ranks, bytes) {
        2 => Binomial,
        _ => Linear,
    }
}

/// `ompi_coll_tuned_reduce_intra_dec_fixed` (a commutative operation), by
/// the vector: 1 linear, 2 chain, 3 pipeline, 4 binary, 5 binomial, 6
/// in-order binary, 7 Rabenseifner.
pub const REDUCE: Table = &[
    (4, &[(8, 7), (16, 4), (32, 3), (262144, 1), (524288, 3), (1048576, 2), (REST, 3)]),
    (8, &[(4096, 4), (65536, 2), (262144, 5), (524288, 1), (1048576, 5), (REST, 1)]),
    (16, &[(8192, 4), (REST, 5)]),
    (32, &[(4096, 4), (REST, 5)]),
    (256, &[(REST, 5)]),
    (512, &[(8192, 5), (16384, 6), (REST, 5)]),
    (2048, &[(REST, 5)]),
    (4096, &[(512, 5), (1024, 6), (8192, 5), (16384, 6), (REST, 5)]),
    (ANY, &[(16, 5), (32, 6), (1024, 5), (2048, 6), (8192, 5), (16384, 6), (REST, 5)]),
];

/// Reduce: chain with fan-in 2 is our two chains (its chains are
/// consecutive blocks of ranks, ours run up and down: same lengths); the
/// unsegmented pipeline one chain, our ring.
pub fn reduce(ranks: u32, bytes: u64) -> Algorithm {
    match lookup(REDUCE, ranks, bytes) {
        1 => Linear,
        2 => TwoRing,
        3 => Ring,
        4 => BinaryTree,
        6 => InOrderBinary,
        7 => Rabenseifner,
        _ => Binomial,
    }
}

/// `ompi_coll_tuned_reduce_scatter_intra_dec_fixed` (a commutative
/// operation), by the total vector, p blocks: 1 non-overlapping, 2
/// recursive halving, 3 ring, 4 butterfly.
pub const REDUCE_SCATTER: Table = &[
    (4, &[(65536, 3), (131072, 4), (REST, 3)]),
    (8, &[(8, 1), (262144, 2), (REST, 3)]),
    (32, &[(262144, 2), (REST, 3)]),
    (64, &[(64, 1), (2048, 2), (524288, 4), (REST, 3)]),
    (128, &[(256, 1), (512, 2), (2048, 4), (4096, 2), (REST, 4)]),
    (256, &[(256, 1), (512, 2), (REST, 4)]),
    (512, &[(256, 1), (1024, 2), (REST, 4)]),
    (1024, &[(512, 1), (2048, 2), (8192, 4), (16384, 2), (REST, 4)]),
    (2048, &[(512, 1), (4096, 2), (16384, 4), (32768, 2), (REST, 4)]),
    (4096, &[(512, 1), (4096, 2), (REST, 4)]),
    (ANY, &[(1024, 1), (8192, 2), (REST, 4)]),
];

/// Reduce_scatter, `bytes` one rank's block.
pub fn reduce_scatter(ranks: u32, bytes: u64) -> Algorithm {
    match lookup(REDUCE_SCATTER, ranks, bytes.saturating_mul(ranks as u64)) {
        1 => Nonoverlapping,
        2 => RecursiveHalving,
        3 => Ring,
        _ => Butterfly,
    }
}

/// `ompi_coll_tuned_reduce_scatter_block_intra_dec_fixed` (a commutative
/// operation), by one rank's block: 1 basic linear, 2 recursive doubling,
/// 3 recursive halving, 4 butterfly.
pub const REDUCE_SCATTER_BLOCK: Table = &[
    (4, &[(4, 2), (8, 4), (16, 3), (128, 4), (256, 3), (4096, 4), (8192, 3), (131072, 4), (REST, 1)]),
    (8, &[(8, 3), (32, 2), (256, 4), (8192, 3), (16384, 4), (1048576, 3), (REST, 1)]),
    (16, &[(4, 1), (32, 3), (128, 4), (524288, 3), (4194304, 1), (REST, 4)]),
    (32, &[(32, 1), (524288, 3), (2097152, 1), (4194304, 3), (REST, 4)]),
    (ANY, &[(4, 3), (16, 1), (65536, 4), (262144, 1), (REST, 4)]),
];

/// Reduce_scatter_block: basic linear (reduce, then scatter) is our
/// non-overlapping; recursive doubling, picked only for blocks under 32 B
/// on fewer than 8 ranks, runs as recursive halving (same rounds).
pub fn reduce_scatter_block(ranks: u32, bytes: u64) -> Algorithm {
    match lookup(REDUCE_SCATTER_BLOCK, ranks, bytes) {
        1 => Nonoverlapping,
        2 | 3 => RecursiveHalving,
        _ => Butterfly,
    }
}
