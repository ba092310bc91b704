//! The MPI libraries' rules for `algorithm = "auto"`: which algorithm Open
//! MPI's tuned component ([`openmpi`]) or MPICH's default selection
//! ([`mpich`]) runs for a collective of a given size on a given number of
//! ranks. Kept apart from the algorithms (`algorithms.rs`) because they
//! change with the libraries' releases, not with the model; every table
//! names the file and function it was copied from.

pub mod mpich;
pub mod openmpi;

use super::{Algorithm, CollectiveKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The MPI library whose collective rules `algorithm = "auto"` follows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MpiLibrary {
    /// Open MPI's tuned component (fixed decision rules).
    #[default]
    OpenMpi,
    /// MPICH's default selection (maint/tuning/coll/mpir/generic.json).
    Mpich,
}

impl MpiLibrary {
    /// The library named by `MPI_Get_library_version`'s string, if it is one of ours
    /// ("Open MPI v4.1.4, …", "MPICH Version: 4.1 …"); others (Intel MPI,
    /// MVAPICH, Cray MPICH's own tuning) have rules of their own: None.
    pub fn from_version(version: &str) -> Option<Self> {
        let v = version.to_ascii_lowercase();
        if v.starts_with("open mpi") {
            Some(MpiLibrary::OpenMpi)
        } else if v.starts_with("mpich") {
            Some(MpiLibrary::Mpich)
        } else {
            None
        }
    }
}

impl CollectiveKind {
    /// What `algorithm = "auto"` runs on `ranks` ranks for a message of
    /// `bytes` under `library`'s rules, else (MPICH's gather and scatter,
    /// whose only intra-communicator algorithm is the binomial tree, and
    /// Open MPI's scans) [`Self::default_algorithm`].
    pub fn auto_algorithm(self, library: MpiLibrary, ranks: u32, bytes: u64) -> Algorithm {
        use CollectiveKind::*;
        use MpiLibrary::*;
        match (self, library) {
            (Allreduce, OpenMpi) => openmpi::allreduce(ranks, bytes),
            (Allreduce, Mpich) => mpich::allreduce(ranks, bytes),
            (Bcast, OpenMpi) => openmpi::bcast(ranks, bytes),
            (Bcast, Mpich) => mpich::bcast(ranks, bytes),
            (Allgather, OpenMpi) => openmpi::allgather(ranks, bytes),
            (Allgather, Mpich) => mpich::allgather(ranks, bytes),
            (Alltoall, OpenMpi) => openmpi::alltoall(ranks, bytes),
            (Alltoall, Mpich) => mpich::alltoall(ranks, bytes),
            (Barrier, OpenMpi) => openmpi::barrier(ranks),
            (Gather, OpenMpi) => openmpi::gather(ranks, bytes),
            (Scatter, OpenMpi) => openmpi::scatter(ranks, bytes),
            (Reduce, OpenMpi) => openmpi::reduce(ranks, bytes),
            (Reduce, Mpich) => mpich::reduce(ranks, bytes),
            (ReduceScatter, OpenMpi) => openmpi::reduce_scatter(ranks, bytes),
            (ReduceScatterBlock, OpenMpi) => openmpi::reduce_scatter_block(ranks, bytes),
            (ReduceScatter | ReduceScatterBlock, Mpich) => mpich::reduce_scatter(ranks, bytes),
            // Open MPI's tuned component has no fixed rule for the scans: its
            // basic component's linear chain runs; MPICH: recursive doubling
            // (its `smp` variant, for ranks placed node by node, is not modelled)
            (Scan | Exscan, Mpich) => Algorithm::RecursiveDoubling,
            // MPICH's barrier: k-dissemination with k = 2 (generic.json), our
            // default; its gather and scatter: binomial, our default too
            _ => self.default_algorithm(),
        }
    }
}

/// A decision table as the libraries write it: rows of rank counts, each
/// row bands of message sizes, each band the library's own algorithm
/// number. Row `(r, bands)` serves communicators of fewer than `r` ranks
/// not served by an earlier row; band `(b, alg)` sizes below `b` not
/// served by an earlier band. The last row and band take everything left
/// (their bound is written [`ANY`] or [`REST`]).
pub type Table = &'static [(u32, &'static [(u64, u8)])];

/// The bound of a last row: any number of ranks.
pub const ANY: u32 = u32::MAX;
/// The bound of a last band: any size.
pub const REST: u64 = u64::MAX;

/// The algorithm number `table` gives for `ranks` ranks and `bytes`.
pub fn lookup(table: Table, ranks: u32, bytes: u64) -> u8 {
    let (_, bands) = table.iter().find(|(r, _)| ranks < *r).unwrap_or_else(|| table.last().expect("an empty decision table"));
    bands.iter().find(|(b, _)| bytes < *b).unwrap_or_else(|| bands.last().expect("an empty row of a decision table")).1
}

#[cfg(test)]
mod tests {
    use super::{openmpi::*, Table, ANY, REST};

    /// A table copied with a bound out of order or a last row or band not
    /// taking the rest would shadow rows silently.
    #[test]
    fn tables_are_ordered_and_total() {
        let tables: [(&str, Table); 10] = [
            ("allreduce", ALLREDUCE),
            ("bcast", BCAST),
            ("allgather", ALLGATHER),
            ("alltoall", ALLTOALL),
            ("barrier", BARRIER),
            ("gather", GATHER),
            ("scatter", SCATTER),
            ("reduce", REDUCE),
            ("reduce_scatter", REDUCE_SCATTER),
            ("reduce_scatter_block", REDUCE_SCATTER_BLOCK),
        ];
        for (name, table) in tables {
            assert!(table.windows(2).all(|w| w[0].0 < w[1].0), "{name}: rank rows out of order");
            assert_eq!(table.last().unwrap().0, ANY, "{name}: the last row must take any ranks");
            for (r, bands) in table {
                assert!(bands.windows(2).all(|w| w[0].0 < w[1].0), "{name}, below {r} ranks: bands out of order");
                assert_eq!(bands.last().unwrap().0, REST, "{name}, below {r} ranks: the last band must take the rest");
            }
        }
    }
}
