//! Collective algorithms, expanded into point-to-point messages.
//!
//! Every algorithm is a pure function from (rank, step index) to a [`Step`]:
//! receive, send, exchange (send and receive at once), or a fan-out of
//! nonblocking sends closed by a wait. The program's
//! [`crate::program::driver::Driver`] turns steps into stream ops, so a rank's
//! whole collective state is two small counters, and the same description
//! serves simulation, GOAL export, trace replay and structure tests.
//!
//! `bytes` is the full vector for allreduce, broadcast and reduce, and one
//! rank's block for gather, scatter, allgather and alltoall.

mod algorithms;
pub mod relay;

use crate::scenario::RuleError;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

pub use algorithms::subtree_size;

/// ceil(log2(p)) for p ≥ 1.
#[inline]
pub fn ceil_log2(p: u32) -> u32 {
    if p <= 1 {
        0
    } else {
        32 - (p - 1).leading_zeros()
    }
}

/// Largest power of two ≤ p (p ≥ 1).
#[inline]
pub fn floor_pow2(p: u32) -> u32 {
    1 << (31 - p.leading_zeros())
}

/// One step of a rank's part in a collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Recv {
        from: u32,
        bytes: u64,
    },
    /// A blocking send.
    Send {
        to: u32,
        bytes: u64,
    },
    /// Receive from `from` while sending to `to`; both must complete.
    Exchange {
        to: u32,
        send_bytes: u64,
        from: u32,
        recv_bytes: u64,
    },
    /// The k-th of a run of nonblocking sends, closed by `WaitFanOut`.
    FanOut {
        to: u32,
        bytes: u64,
        k: u8,
    },
    /// The k-th of a run of nonblocking operations that is a receive
    /// (numbered with the run's sends), closed by `WaitFanOut`.
    FanIn {
        from: u32,
        bytes: u64,
        k: u8,
    },
    WaitFanOut {
        n: u8,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveKind {
    Allreduce,
    Bcast,
    Reduce,
    Gather,
    Scatter,
    Allgather,
    Alltoall,
    Barrier,
    /// MPI_Reduce_scatter with equal counts: `bytes` is each rank's block.
    ReduceScatter,
    /// MPI_Reduce_scatter_block: the same exchange, chosen by its own rules.
    ReduceScatterBlock,
    /// Inclusive prefix reduction of a `bytes` vector.
    Scan,
    /// Exclusive prefix reduction.
    Exscan,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// Round k: send to r+2^k, receive from r−2^k (allreduce, barrier).
    Dissemination,
    /// Pairwise exchanges with r XOR 2^k; non-powers of two fold the extra
    /// ranks in first and hand the result back last (allreduce, allgather);
    /// scan and exscan exchange the whole vector with every r XOR 2^k < p
    /// (MPICH's `recursive_doubling`).
    RecursiveDoubling,
    /// p−1 neighbour exchanges around a ring, twice for allreduce
    /// (reduce-scatter, then allgather); one block each for reduce_scatter.
    /// For reduce: a single chain to the root (Open MPI's unsegmented
    /// `pipeline`).
    Ring,
    /// Binomial reduce to rank 0, then binomial broadcast (allreduce).
    ReduceBcast,
    /// Reduce-scatter by recursive halving, then allgather by recursive
    /// doubling (allreduce); non-powers of two fold pairs in first, as Open
    /// MPI's `redscat_allgather` does.
    Rabenseifner,
    /// Binomial tree, LogGOPSim's schedgen layout (bcast, reduce, gather, scatter).
    Binomial,
    /// Binary tree: children 2v+1, 2v+2 (bcast; reduce receives from them).
    BinaryTree,
    /// The root sends to every rank in turn (bcast); every rank posts all
    /// its receives and sends at once and waits for them (alltoall, in
    /// batches of [`LINEAR_BATCH`] peers). Reduce: the root receives from
    /// every rank in turn. Scan, exscan: a chain, r−1 to r.
    Linear,
    /// A chain from the root, the message cut into chunks (bcast).
    PipelinedRing,
    /// HPL's modified 1-ring: the root feeds rank+1 directly and rank+2
    /// starts the chain (bcast; chunks optional).
    ModifiedRing,
    /// Two chains from the root, one up and one down (bcast; chunks optional).
    /// For reduce: Open MPI's `chain` with fan-out 2 (its chains are
    /// consecutive blocks of ranks, ours run up and down: same lengths).
    TwoRing,
    /// rank+1 fed directly, then a 2-ring over the rest (bcast; chunks optional).
    TwoRingModified,
    /// Step k: send to r+k, receive from r−k (alltoall; reduce_scatter
    /// sends r+k its block).
    Pairwise,
    /// k-nomial tree of radix 4, MPICH's and Open MPI's `knomial` layout:
    /// v's parent is v − v mod 4^(j+1) for the lowest nonzero base-4 digit j;
    /// children are served largest subtree first, nonblocking (bcast;
    /// reduce receives from them).
    Knomial,
    /// van de Geijn: binomial scatter of ⌈n/p⌉-byte blocks, then a
    /// recursive-doubling allgather, non-powers of two patched up by
    /// recursive halving as Open MPI's `scatter_allgather` does (bcast).
    ScatterAllgather,
    /// Binomial scatter, then a ring allgather of the blocks (bcast).
    ScatterRingAllgather,
    /// Bruck: ⌈log2 p⌉ rounds; allgather: round k sends min(2^k, p − 2^k)
    /// blocks to r − 2^k and receives from r + 2^k; alltoall: round k sends
    /// the blocks whose index has bit k set to r + 2^k, receives from r − 2^k.
    Bruck,
    /// Open MPI's neighbour exchange: p/2 steps with the two ring
    /// neighbours in turn, one block first, then two (allgather; even p).
    NeighborExchange,
    /// Recursive halving (MPICH's and Open MPI's): with rem = p − 2^⌊log2 p⌋,
    /// the even ranks below 2·rem hand their whole vector to the next odd
    /// rank; the rest halve the vector log2 times (largest distance first);
    /// the odd ranks hand the folded-out ranks their blocks (reduce_scatter).
    RecursiveHalving,
    /// Open MPI's butterfly (Träff 2005): the fold of recursive halving,
    /// halving exchanges at distance 1, 2, 4, …, then the blocks moved to
    /// their owners by the mirror permutation (reduce_scatter).
    Butterfly,
    /// Open MPI's non-overlapping reduce_scatter: a binomial reduce of the
    /// whole vector to rank 0, which then sends every rank its block.
    Nonoverlapping,
    /// Open MPI's in-order binary tree (reduce): a binary tree rooted at
    /// rank p − 1, which hands the result to the root if that is another
    /// rank. Open MPI numbers the tree in order (so that non-commutative
    /// operations reduce in rank order); the depth and fan-in are the same.
    InOrderBinary,
}

/// The communicator a collective runs on: the whole world, or one of a
/// partition of it into equal groups, every group running the collective at
/// once. `ranks` and `root` of a [`Collective`] are then group-local.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Comm {
    #[default]
    World,
    /// Consecutive blocks of `size` ranks: the rows of a row-major grid with
    /// `size` columns, or the ranks of a node under block mapping.
    Blocks { size: u32 },
    /// Ranks equal modulo `stride`: the columns of a row-major grid with
    /// `stride` columns.
    Strided { stride: u32 },
}

impl Comm {
    /// The rank's index inside its group.
    #[inline]
    pub fn local(self, rank: u32) -> u32 {
        match self {
            Comm::World => rank,
            Comm::Blocks { size } => rank % size,
            Comm::Strided { stride } => rank / stride,
        }
    }

    /// The world rank of member `local` of `rank`'s group.
    #[inline]
    pub fn global(self, rank: u32, local: u32) -> u32 {
        match self {
            Comm::World => local,
            Comm::Blocks { size } => rank - rank % size + local,
            Comm::Strided { stride } => local * stride + rank % stride,
        }
    }

    /// Size of every group of a world of `world` ranks (checked by `group_size`).
    #[inline]
    pub fn size(self, world: u32) -> u32 {
        match self {
            Comm::World => world,
            Comm::Blocks { size } => size,
            Comm::Strided { stride } => world / stride.max(1),
        }
    }

    /// Size of every group when the world has `world` ranks, or why the
    /// world cannot be split so.
    pub fn group_size(self, world: u32) -> Result<u32, String> {
        let (n, what) = match self {
            Comm::World => return Ok(world),
            Comm::Blocks { size } => (size, "group size"),
            Comm::Strided { stride } => (stride, "stride (grid columns)"),
        };
        if n == 0 || !world.is_multiple_of(n) {
            return Err(format!("the communicator's {what} {n} must divide the {world} ranks"));
        }
        Ok(self.size(world))
    }
}

/// A collective algorithm or "auto" (None: the default rule picks one).
pub mod auto_algorithm {
    use super::Algorithm;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(a: &Option<Algorithm>, s: S) -> Result<S::Ok, S::Error> {
        match a {
            None => s.serialize_str("auto"),
            Some(a) => a.serialize(s),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Algorithm>, D::Error> {
        let s = String::deserialize(d)?;
        if s == "auto" {
            return Ok(None);
        }
        Algorithm::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(&s)).map(Some)
    }
}

/// Schema of a collective algorithm or "auto".
pub struct AutoAlgorithm;
impl JsonSchema for AutoAlgorithm {
    fn schema_name() -> Cow<'static, str> {
        "AutoAlgorithm".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let algorithm = generator.subschema_for::<Algorithm>();
        json_schema!({"anyOf": [{"const": "auto", "description": "the MPI library's choice"}, algorithm]})
    }
}

impl Algorithm {
    /// The broadcasts that relay a message cut into chunk_bytes pieces: the
    /// rings, and the segmented trees (each segment received from the
    /// parent, then sent to the children in turn).
    pub const CHUNKED: [Algorithm; 8] = [
        Algorithm::PipelinedRing,
        Algorithm::Ring,
        Algorithm::ModifiedRing,
        Algorithm::TwoRing,
        Algorithm::TwoRingModified,
        Algorithm::Binomial,
        Algorithm::BinaryTree,
        Algorithm::Knomial,
    ];

    /// Whether `chunk_bytes` suits this (broadcast) algorithm.
    pub fn check_chunks(self, chunk_bytes: u64) -> Result<(), RuleError> {
        use crate::units::names;
        if chunk_bytes > 0 && !Self::CHUNKED.contains(&self) {
            return Err(RuleError::new(
                "workload.chunk_bytes",
                format!("only these broadcasts cut messages into chunks: {}", names(&Self::CHUNKED)),
            ));
        }
        if self == Algorithm::PipelinedRing && chunk_bytes == 0 {
            return Err(RuleError::new("workload.chunk_bytes", "pipelined_ring needs chunk_bytes > 0 (or use ring for one piece)"));
        }
        Ok(())
    }
}

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
        match (self, library) {
            (CollectiveKind::Allreduce, MpiLibrary::OpenMpi) => open_mpi_allreduce(ranks, bytes),
            (CollectiveKind::Allreduce, MpiLibrary::Mpich) => mpich_allreduce(ranks, bytes),
            (CollectiveKind::Bcast, MpiLibrary::OpenMpi) => open_mpi_bcast(ranks, bytes),
            (CollectiveKind::Bcast, MpiLibrary::Mpich) => mpich_bcast(ranks, bytes),
            (CollectiveKind::Allgather, MpiLibrary::Mpich) => mpich_allgather(ranks, bytes),
            (CollectiveKind::Alltoall, MpiLibrary::OpenMpi) => open_mpi_alltoall(ranks, bytes),
            (CollectiveKind::Alltoall, MpiLibrary::Mpich) => mpich_alltoall(ranks, bytes),
            (CollectiveKind::Barrier, MpiLibrary::OpenMpi) => open_mpi_barrier(ranks),
            (CollectiveKind::Gather, MpiLibrary::OpenMpi) => open_mpi_gather(ranks, bytes),
            (CollectiveKind::Scatter, MpiLibrary::OpenMpi) => open_mpi_scatter(ranks, bytes),
            (CollectiveKind::Reduce, MpiLibrary::Mpich) => mpich_reduce(ranks, bytes),
            (CollectiveKind::Reduce, MpiLibrary::OpenMpi) => open_mpi_reduce(ranks, bytes),
            (CollectiveKind::Allgather, MpiLibrary::OpenMpi) => open_mpi_allgather(ranks, bytes),
            (CollectiveKind::ReduceScatter, MpiLibrary::OpenMpi) => open_mpi_reduce_scatter(ranks, bytes),
            (CollectiveKind::ReduceScatterBlock, MpiLibrary::OpenMpi) => open_mpi_reduce_scatter_block(ranks, bytes),
            (CollectiveKind::ReduceScatter | CollectiveKind::ReduceScatterBlock, MpiLibrary::Mpich) => mpich_reduce_scatter(ranks, bytes),
            // Open MPI's tuned component has no fixed rule for the scans: its
            // basic component's linear chain runs; MPICH: recursive doubling
            // (its `smp` variant, for ranks placed node by node, is not modelled)
            (CollectiveKind::Scan | CollectiveKind::Exscan, MpiLibrary::Mpich) => Algorithm::RecursiveDoubling,
            // MPICH: k-dissemination with k = 2 (generic.json), our default
            _ => self.default_algorithm(),
        }
    }

    pub fn default_algorithm(self) -> Algorithm {
        match self {
            CollectiveKind::Allreduce | CollectiveKind::Barrier => Algorithm::Dissemination,
            CollectiveKind::Bcast | CollectiveKind::Reduce | CollectiveKind::Gather | CollectiveKind::Scatter => Algorithm::Binomial,
            CollectiveKind::Allgather => Algorithm::Ring,
            CollectiveKind::Alltoall => Algorithm::Pairwise,
            CollectiveKind::ReduceScatter | CollectiveKind::ReduceScatterBlock => Algorithm::Ring,
            CollectiveKind::Scan | CollectiveKind::Exscan => Algorithm::Linear,
        }
    }

    /// The algorithms this collective can use.
    pub fn algorithms(self) -> &'static [Algorithm] {
        use Algorithm::*;
        match self {
            CollectiveKind::Allreduce => &[Dissemination, RecursiveDoubling, Ring, ReduceBcast, Rabenseifner],
            CollectiveKind::Bcast => &[
                Binomial,
                BinaryTree,
                Linear,
                PipelinedRing,
                Ring,
                ModifiedRing,
                TwoRing,
                TwoRingModified,
                Knomial,
                ScatterAllgather,
                ScatterRingAllgather,
            ],
            CollectiveKind::Reduce => &[Binomial, Rabenseifner, Linear, Ring, TwoRing, BinaryTree, InOrderBinary, Knomial],
            CollectiveKind::Gather | CollectiveKind::Scatter => &[Binomial, Linear],
            CollectiveKind::Allgather => &[Ring, RecursiveDoubling, Bruck, NeighborExchange],
            CollectiveKind::Alltoall => &[Pairwise, Linear, Bruck],
            CollectiveKind::Barrier => &[Dissemination, Linear, RecursiveDoubling, Binomial],
            CollectiveKind::ReduceScatter | CollectiveKind::ReduceScatterBlock => {
                &[Ring, RecursiveHalving, Butterfly, Pairwise, Nonoverlapping]
            }
            CollectiveKind::Scan | CollectiveKind::Exscan => &[Linear, RecursiveDoubling],
        }
    }

    pub fn is_rooted(self) -> bool {
        matches!(self, CollectiveKind::Bcast | CollectiveKind::Reduce | CollectiveKind::Gather | CollectiveKind::Scatter)
    }
}

/// One collective call, as every rank sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Collective {
    pub kind: CollectiveKind,
    pub algorithm: Algorithm,
    pub ranks: u32,
    pub root: u32,
    pub bytes: u64,
    /// Chunk size of the ring broadcasts (0: the whole message at once).
    pub chunk_bytes: u64,
    pub tag: u32,
    /// Which ranks take part, as groups; `ranks` and `root` are group-local.
    pub comm: Comm,
}

impl Collective {
    /// A dissemination collective of `kind` on all `ranks` (barriers and the
    /// small allreduces of solvers).
    pub fn dissemination(kind: CollectiveKind, ranks: u32, bytes: u64, tag: u32) -> Self {
        Collective { kind, algorithm: Algorithm::Dissemination, ranks, root: 0, bytes, chunk_bytes: 0, tag, comm: Comm::World }
    }

    pub fn validate(&self) -> Result<(), RuleError> {
        use crate::units::{name, names};
        if self.ranks == 0 {
            return Err(RuleError::new("workload.ranks", "a collective needs at least one rank"));
        }
        let (alg, kind) = (name(&self.algorithm), name(&self.kind));
        if !self.kind.algorithms().contains(&self.algorithm) {
            return Err(RuleError::new(
                "workload.algorithm",
                format!("'{alg}' is not an algorithm for {kind} (choose from auto, {})", names(self.kind.algorithms())),
            ));
        }
        if self.root >= self.ranks {
            return Err(RuleError::new("workload.root", format!("must be < ranks ({}), got {}", self.ranks, self.root)));
        }
        if self.kind == CollectiveKind::Allgather && self.algorithm == Algorithm::RecursiveDoubling && !self.ranks.is_power_of_two() {
            return Err(RuleError::new(
                "workload.algorithm",
                format!("recursive_doubling allgather needs a power-of-two rank count, got {}; use ring", self.ranks),
            ));
        }
        if self.algorithm == Algorithm::NeighborExchange && !self.ranks.is_multiple_of(2) {
            return Err(RuleError::new(
                "workload.algorithm",
                format!("neighbor_exchange needs an even rank count, got {}; use ring", self.ranks),
            ));
        }
        if self.chunk_bytes == 0 {
            self.algorithm.check_chunks(0)?;
        }
        Ok(())
    }

    /// Step `i` of (world) `rank`, or None once its part is over.
    #[inline]
    pub fn step(&self, rank: u32, i: u32) -> Option<Step> {
        if self.comm == Comm::World {
            return algorithms::step(self, rank, i);
        }
        self.step_in_group(rank, i)
    }

    /// `step` on a sub-communicator: the algorithm on group-local ranks,
    /// peers mapped back to world ranks (kept apart so that the world case
    /// stays small enough to inline).
    #[inline(never)]
    fn step_in_group(&self, rank: u32, i: u32) -> Option<Step> {
        Some(self.world_step(rank, algorithms::step(self, self.comm.local(rank), i)?))
    }

    /// Step `i` of (world) `rank` in the v-variant with per-rank blocks
    /// `counts` (group-local ranks); see [`algorithms::v_step`].
    pub fn v_step(&self, counts: &[u64], rank: u32, i: u32) -> Option<Step> {
        Some(self.world_step(rank, algorithms::v_step(self, counts, self.comm.local(rank), i)?))
    }

    /// A group-local step of `rank` with world-rank peers.
    fn world_step(&self, rank: u32, step: Step) -> Step {
        if self.comm == Comm::World {
            return step;
        }
        let g = |l: u32| self.comm.global(rank, l);
        match step {
            Step::Recv { from, bytes } => Step::Recv { from: g(from), bytes },
            Step::Send { to, bytes } => Step::Send { to: g(to), bytes },
            Step::Exchange { to, send_bytes, from, recv_bytes } => Step::Exchange { to: g(to), send_bytes, from: g(from), recv_bytes },
            Step::FanOut { to, bytes, k } => Step::FanOut { to: g(to), bytes, k },
            Step::FanIn { from, bytes, k } => Step::FanIn { from: g(from), bytes, k },
            w @ Step::WaitFanOut { .. } => w,
        }
    }

    /// Every step of `rank`, in order (for tests and inspection).
    pub fn steps(&self, rank: u32) -> Vec<Step> {
        (0..).map_while(|i| self.step(rank, i)).collect()
    }
}

#[cfg(test)]
mod tests;

/// Open MPI's fixed decision for allreduce with a commutative operation
/// (`ompi_coll_tuned_allreduce_intra_dec_fixed`, ompi/mca/coll/tuned/
/// coll_tuned_decision_fixed.c, main branch of 2026 = v6.1 development; the
/// same table as v5.0). Its algorithm numbers: 2 nonoverlapping (reduce, then
/// bcast: here binomial trees), 3 recursive doubling, 4 ring, 5 segmented
/// ring (with the default segment size 0 it runs the plain ring), 6
/// Rabenseifner. The ring falls back to recursive doubling when the vector
/// has fewer elements than ranks; elements are taken as 8-byte doubles.
pub fn open_mpi_allreduce(ranks: u32, bytes: u64) -> Algorithm {
    use Algorithm::*;
    let rule: u8 = match (ranks, bytes) {
        (0..=3, b) => match b {
            0..8 => 4,
            8..4096 => 3,
            4096..8192 => 4,
            8192..16384 => 3,
            16384..65536 => 4,
            65536..262144 => 5,
            _ => 6,
        },
        (4..=7, b) => match b {
            0..16 => 4,
            16..8192 => 3,
            _ => 6,
        },
        (8..=15, b) => {
            if b < 8192 {
                3
            } else {
                6
            }
        }
        (16..=31, b) => match b {
            0..64 => 5,
            64..4096 => 3,
            _ => 6,
        },
        (32..=63, b) => {
            if b < 128 {
                5
            } else {
                6
            }
        }
        (64..=127, b) => {
            if b < 262144 {
                3
            } else {
                6
            }
        }
        (128..=255, b) => match b {
            0..131072 => 2,
            131072..262144 => 3,
            _ => 6,
        },
        (256..=511, b) => {
            if b < 4096 {
                2
            } else {
                6
            }
        }
        (512..=2047, b) => match b {
            0..2048 => 2,
            2048..16384 => 3,
            _ => 6,
        },
        (2048..=4095, b) => match b {
            0..2048 => 2,
            2048..4096 => 5,
            4096..16384 => 3,
            _ => 6,
        },
        (_, b) => match b {
            0..2048 => 2,
            2048..16384 => 5,
            16384..32768 => 3,
            _ => 6,
        },
    };
    match rule {
        2 => ReduceBcast,
        4 | 5 if bytes / 8 < ranks as u64 => RecursiveDoubling,
        4 | 5 => Ring,
        6 => Rabenseifner,
        _ => RecursiveDoubling,
    }
}

/// MPICH's default allreduce selection for a built-in commutative operation
/// (maint/tuning/coll/mpir/generic.json, MPICH main of 2026 = 5.1.0a1):
/// recursive doubling up to 8 bytes or when the vector has fewer elements
/// (taken as 8-byte doubles) than the largest power of two ≤ ranks, else
/// reduce-scatter + allgather (Rabenseifner). MPICH folds each extra rank in
/// with one whole-vector message where Open MPI swaps halves and sends one
/// half back; we run Open MPI's fold for both (on non-powers of two, half a
/// vector more per folded pair).
pub fn mpich_allreduce(ranks: u32, bytes: u64) -> Algorithm {
    if bytes <= 8 || bytes / 8 < floor_pow2(ranks.max(1)) as u64 {
        Algorithm::RecursiveDoubling
    } else {
        Algorithm::Rabenseifner
    }
}

/// Open MPI's fixed rule for MPI_Bcast (`ompi_coll_tuned_bcast_intra_dec_fixed`,
/// ompi/mca/coll/tuned/coll_tuned_decision_fixed.c, Open MPI main 8efebee,
/// as in v5.0), with its segment size 0 (no segmentation) and k-nomial radix
/// 4. Its algorithms: 1 linear, 2 chain and 3 pipeline (a single chain
/// when unsegmented: our 1-ring), 4 split binary tree (run here as the
/// binary tree: it differs only in splitting the message over the two
/// subtrees, used for 256–1023 ranks and 16–32 KiB), 5 binary tree, 6
/// binomial, 7 k-nomial, 8 scatter + allgather, 9 scatter + ring allgather.
pub fn open_mpi_bcast(ranks: u32, bytes: u64) -> Algorithm {
    use Algorithm::*;
    let alg: u8 = match ranks {
        0..4 => match bytes {
            0..32 => 3,
            32..256 => 5,
            256..512 => 3,
            512..1024 => 7,
            1024..32768 => 1,
            32768..131072 => 5,
            131072..262144 => 2,
            262144..524288 => 1,
            524288..1048576 => 6,
            _ => 5,
        },
        4..8 => match bytes {
            0..64 => 5,
            64..128 => 6,
            128..2048 => 5,
            2048..8192 => 6,
            8192..1048576 => 1,
            _ => 2,
        },
        8..16 => match bytes {
            0..8 => 7,
            8..64 => 5,
            64..4096 => 7,
            4096..16384 => 5,
            16384..32768 => 6,
            _ => 1,
        },
        16..32 => match bytes {
            0..4096 => 7,
            4096..1048576 => 6,
            _ => 8,
        },
        32..64 => {
            if bytes < 2048 {
                6
            } else {
                7
            }
        }
        64..128 => 7,
        128..256 => match bytes {
            0..2 => 6,
            2..16384 => 5,
            16384..32768 => 1,
            32768..65536 => 5,
            _ => 7,
        },
        256..1024 => match bytes {
            0..16384 => 7,
            16384..32768 => 4,
            _ => 7,
        },
        1024..2048 => {
            if bytes < 524288 {
                7
            } else {
                8
            }
        }
        2048..4096 => {
            if bytes < 262144 {
                7
            } else {
                8
            }
        }
        _ => match bytes {
            0..8192 => 7,
            8192..16384 => 5,
            16384..262144 => 7,
            _ => 8,
        },
    };
    match alg {
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

/// MPICH's default MPI_Bcast selection (maint/tuning/coll/mpir/generic.json,
/// MPICH 5.1.0a1): binomial below 8 ranks or up to 12 KiB; then, on a power
/// of two up to 512 KiB, scatter + recursive-doubling allgather; else
/// scatter + ring allgather.
pub fn mpich_bcast(ranks: u32, bytes: u64) -> Algorithm {
    if ranks < 8 || bytes <= 12288 {
        Algorithm::Binomial
    } else if ranks.is_power_of_two() && bytes <= 524288 {
        Algorithm::ScatterAllgather
    } else {
        Algorithm::ScatterRingAllgather
    }
}

/// MPICH's default MPI_Allgather selection (generic.json as above), by the
/// total gathered size: a power of two below 512 KiB runs recursive
/// doubling, others below 80 KiB Bruck, the rest the ring.
pub fn mpich_allgather(ranks: u32, bytes: u64) -> Algorithm {
    let total = bytes.saturating_mul(ranks as u64);
    if ranks.is_power_of_two() && total < 524288 {
        Algorithm::RecursiveDoubling
    } else if !ranks.is_power_of_two() && total < 81920 {
        Algorithm::Bruck
    } else {
        Algorithm::Ring
    }
}

/// Peers per batch of the linear alltoall: a rank's nonblocking operations
/// in flight are numbered in 63 wait slots, so at most 31 receives and 31
/// sends go at once (MPICH's `scattered` batches 32; Open MPI's `linear`
/// posts all p − 1: beyond 32 ranks both are run in batches of 31).
pub const LINEAR_BATCH: u32 = 31;

/// Open MPI's fixed rule for MPI_Alltoall (`ompi_coll_tuned_alltoall_intra_dec_fixed`,
/// coll_tuned_decision_fixed.c, Open MPI main 8efebee, as in v5.0), by the
/// bytes sent to each peer. Its algorithms: 1 linear, 2 pairwise, 3
/// modified Bruck, 4 linear_sync (with the default of no request limit, the
/// same as linear), 5 two_proc (2 ranks: one exchange, as pairwise).
pub fn open_mpi_alltoall(ranks: u32, bytes: u64) -> Algorithm {
    use Algorithm::*;
    let alg: u8 = match ranks {
        0..=2 => match bytes {
            0..2 => 2,
            2..4 => 5,
            4..16 => 2,
            16..64 => 5,
            64..256 => 2,
            256..4096 => 5,
            4096..32768 => 2,
            32768..262144 => 4,
            262144..1048576 => 5,
            _ => 2,
        },
        3..8 => match bytes {
            0..8192 => 4,
            8192..16384 => 1,
            16384..65536 => 4,
            65536..524288 => 1,
            524288..1048576 => 2,
            _ => 1,
        },
        8..16 => {
            if bytes < 262144 {
                4
            } else {
                1
            }
        }
        16..32 => match bytes {
            0..4 => 4,
            4..512 => 3,
            512..8192 => 4,
            8192..32768 => 1,
            32768..262144 => 4,
            262144..524288 => 1,
            _ => 4,
        },
        32..64 => match bytes {
            0..512 => 3,
            512..524288 => 1,
            _ => 4,
        },
        64..128 => match bytes {
            0..1024 => 3,
            1024..2048 => 1,
            2048..4096 => 4,
            4096..262144 => 1,
            _ => 2,
        },
        128..256 => match bytes {
            0..1024 => 3,
            1024..2048 => 4,
            2048..262144 => 1,
            _ => 2,
        },
        256..512 => match bytes {
            0..1024 => 3,
            1024..8192 => 4,
            8192..32768 => 1,
            _ => 2,
        },
        512..1024 => match bytes {
            0..512 => 3,
            512..8192 => 4,
            8192..16384 => 1,
            16384..131072 => 4,
            131072..262144 => 1,
            _ => 2,
        },
        1024..2048 => match bytes {
            0..512 => 3,
            512..1024 => 4,
            1024..2048 => 1,
            2048..16384 => 4,
            16384..262144 => 1,
            _ => 4,
        },
        2048..4096 => match bytes {
            0..1024 => 3,
            1024..4096 => 4,
            4096..8192 => 1,
            8192..131072 => 4,
            _ => 1,
        },
        _ => match bytes {
            0..2048 => 3,
            2048..8192 => 4,
            8192..16384 => 1,
            16384..32768 => 4,
            32768..65536 => 1,
            _ => 4,
        },
    };
    match alg {
        1 | 4 => Linear,
        3 => Bruck,
        _ => Pairwise,
    }
}

/// MPICH's default MPI_Alltoall selection (generic.json, MPICH 5.1.0a1; not
/// in place), by the bytes sent to each peer: below 8 ranks `scattered`
/// (our batched linear) up to 32 KiB, else pairwise; from 8 ranks Bruck up
/// to 256 B, scattered up to 32 KiB, pairwise above.
pub fn mpich_alltoall(ranks: u32, bytes: u64) -> Algorithm {
    match (ranks < 8, bytes) {
        (true, 0..=32768) => Algorithm::Linear,
        (false, 0..=256) => Algorithm::Bruck,
        (false, 257..=32768) => Algorithm::Linear,
        _ => Algorithm::Pairwise,
    }
}

/// Open MPI's fixed rule for MPI_Barrier (`ompi_coll_tuned_barrier_intra_dec_fixed`,
/// coll_tuned_decision_fixed.c, Open MPI main 8efebee, as in v5.0): 1
/// linear, 3 recursive doubling, 4 Bruck (our dissemination), 6 tree (our
/// binomial fan-in and fan-out).
pub fn open_mpi_barrier(ranks: u32) -> Algorithm {
    use Algorithm::*;
    match ranks {
        0..4 => RecursiveDoubling,
        4..8 => Linear,
        8..64 => RecursiveDoubling,
        64..256 => Dissemination,
        256..512 => Binomial,
        512..1024 => Dissemination,
        1024..4096 => Binomial,
        _ => Dissemination,
    }
}

/// Open MPI's fixed rule for MPI_Gather (`ompi_coll_tuned_gather_intra_dec_fixed`,
/// coll_tuned_decision_fixed.c, Open MPI main 8efebee, as in v5.0), by
/// each rank's block: 1 basic linear, 2 binomial, 3 linear_sync (linear
/// with a zero-byte go-ahead from the root to each sender; run here as
/// linear).
pub fn open_mpi_gather(ranks: u32, bytes: u64) -> Algorithm {
    use Algorithm::*;
    let alg: u8 = match ranks {
        0..4 => match bytes {
            0..2 => 3,
            2..4 => 1,
            4..32768 => 2,
            32768..65536 => 1,
            65536..131072 => 2,
            _ => 3,
        },
        4..8 => match bytes {
            0..1024 => 2,
            1024..8192 => 1,
            8192..32768 => 2,
            32768..262144 => 1,
            _ => 3,
        },
        256..512 => match bytes {
            2048..8192 => 1,
            _ => 2,
        },
        _ => 2,
    };
    if alg == 2 {
        Binomial
    } else {
        Linear
    }
}

/// Open MPI's fixed rule for MPI_Scatter (`ompi_coll_tuned_scatter_intra_dec_fixed`,
/// coll_tuned_decision_fixed.c, Open MPI main 8efebee, as in v5.0), by
/// each rank's block: 1 basic linear, 2 binomial, 3 linear_nb (the root's
/// sends nonblocking; run here as linear).
pub fn open_mpi_scatter(ranks: u32, bytes: u64) -> Algorithm {
    use Algorithm::*;
    let alg: u8 = match ranks {
        0..4 => match bytes {
            0..2 => 3,
            2..131072 => 1,
            131072..262144 => 3,
            _ => 1,
        },
        4..8 => match bytes {
            0..2048 => 2,
            2048..4096 => 1,
            4096..8192 => 2,
            8192..32768 => 1,
            32768..1048576 => 3,
            _ => 1,
        },
        8..16 => match bytes {
            0..16384 => 2,
            16384..1048576 => 3,
            _ => 1,
        },
        16..32 => match bytes {
            0..16384 => 2,
            16384..32768 => 1,
            _ => 3,
        },
        32..64 => match bytes {
            0..512 => 2,
            512..8192 => 3,
            8192..16384 => 2,
            _ => 3,
        },
        _ => match bytes {
            0..512 => 2,
            _ => 3,
        },
    };
    if alg == 2 {
        Binomial
    } else {
        Linear
    }
}

/// MPICH's default MPI_Reduce selection (generic.json, MPICH 5.1.0a1; a
/// built-in operation): binomial up to 2 KiB, or below one double per rank
/// of the largest power of two; else reduce-scatter + gather.
pub fn mpich_reduce(ranks: u32, bytes: u64) -> Algorithm {
    if bytes <= 2048 || bytes / 8 < floor_pow2(ranks.max(1)) as u64 {
        Algorithm::Binomial
    } else {
        Algorithm::Rabenseifner
    }
}

/// Open MPI's fixed rule for MPI_Reduce with a commutative operation
/// (`ompi_coll_tuned_reduce_intra_dec_fixed`, coll_tuned_decision_fixed.c,
/// Open MPI main 8efebee, as in v5.0), fan-in 2 and no segmentation. Its
/// algorithms: 1 linear, 2 chain (fan-in 2: our two chains), 3 pipeline
/// (unsegmented: one chain, our ring), 4 binary, 5 binomial, 6 in-order
/// binary, 7 Rabenseifner.
pub fn open_mpi_reduce(ranks: u32, bytes: u64) -> Algorithm {
    use Algorithm::*;
    let alg: u8 = match ranks {
        0..4 => match bytes {
            0..8 => 7,
            8..16 => 4,
            16..32 => 3,
            32..262144 => 1,
            262144..524288 => 3,
            524288..1048576 => 2,
            _ => 3,
        },
        4..8 => match bytes {
            0..4096 => 4,
            4096..65536 => 2,
            65536..262144 => 5,
            262144..524288 => 1,
            524288..1048576 => 5,
            _ => 1,
        },
        8..16 => {
            if bytes < 8192 {
                4
            } else {
                5
            }
        }
        16..32 => {
            if bytes < 4096 {
                4
            } else {
                5
            }
        }
        32..256 => 5,
        256..512 => match bytes {
            8192..16384 => 6,
            _ => 5,
        },
        512..2048 => 5,
        2048..4096 => match bytes {
            512..1024 | 8192..16384 => 6,
            _ => 5,
        },
        _ => match bytes {
            16..32 | 1024..2048 | 8192..16384 => 6,
            _ => 5,
        },
    };
    match alg {
        1 => Linear,
        2 => TwoRing,
        3 => Ring,
        4 => BinaryTree,
        6 => InOrderBinary,
        7 => Rabenseifner,
        _ => Binomial,
    }
}

/// Open MPI's fixed rule for MPI_Allgather (`ompi_coll_tuned_allgather_intra_dec_fixed`,
/// as above), by the bytes each rank contributes. Its algorithms: 2 Bruck
/// (radix 2), 3 recursive doubling (Bruck on non-powers of two), 4 ring, 5
/// neighbour exchange (the ring on odd counts), 6 two_proc (2 ranks: one
/// exchange, as recursive doubling).
pub fn open_mpi_allgather(ranks: u32, bytes: u64) -> Algorithm {
    use Algorithm::*;
    let alg: u8 = match ranks {
        0..=2 => 6,
        3..32 => 3,
        32..64 => match bytes {
            0..1024 => 3,
            1024..65536 => 5,
            _ => 4,
        },
        64..128 => match bytes {
            0..512 => 3,
            512..65536 => 5,
            _ => 4,
        },
        128..256 => match bytes {
            0..512 => 3,
            512..131072 | 524288..1048576 => 5,
            _ => 4,
        },
        256..512 => match bytes {
            0..32 | 128..1024 => 3,
            32..128 => 2,
            1024..131072 | 524288..1048576 => 5,
            _ => 4,
        },
        512..1024 => match bytes {
            0..64 | 256..2048 => 3,
            64..256 => 2,
            _ => 5,
        },
        1024..2048 => match bytes {
            4..8 | 16..32 | 256..512 => 2,
            0..4096 => 3,
            _ => 5,
        },
        2048..4096 => match bytes {
            0..32 | 128..512 => 2,
            0..4096 => 3,
            _ => 5,
        },
        _ => match bytes {
            0..2 | 8..16 | 512..4096 => 3,
            0..512 => 2,
            _ => 5,
        },
    };
    match alg {
        2 => Bruck,
        3 | 6 if ranks.is_power_of_two() => RecursiveDoubling,
        3 | 6 => Bruck,
        4 => Ring,
        _ if ranks.is_multiple_of(2) => NeighborExchange,
        _ => Ring,
    }
}

/// Open MPI's fixed rule for MPI_Reduce_scatter with a commutative
/// operation (`ompi_coll_tuned_reduce_scatter_intra_dec_fixed`, as above),
/// by the total vector, p blocks of `bytes`. Its algorithms: 1
/// non-overlapping, 2 recursive halving, 3 ring, 4 butterfly.
pub fn open_mpi_reduce_scatter(ranks: u32, bytes: u64) -> Algorithm {
    use Algorithm::*;
    let total = bytes.saturating_mul(ranks as u64);
    let alg: u8 = match ranks {
        0..4 => match total {
            65536..131072 => 4,
            _ => 3,
        },
        4..8 => match total {
            0..8 => 1,
            8..262144 => 2,
            _ => 3,
        },
        8..32 => {
            if total < 262144 {
                2
            } else {
                3
            }
        }
        32..64 => match total {
            0..64 => 1,
            64..2048 => 2,
            2048..524288 => 4,
            _ => 3,
        },
        64..128 => match total {
            0..256 => 1,
            256..512 | 2048..4096 => 2,
            _ => 4,
        },
        128..256 => match total {
            0..256 => 1,
            256..512 => 2,
            _ => 4,
        },
        256..512 => match total {
            0..256 => 1,
            256..1024 => 2,
            _ => 4,
        },
        512..1024 => match total {
            0..512 => 1,
            512..2048 | 8192..16384 => 2,
            _ => 4,
        },
        1024..2048 => match total {
            0..512 => 1,
            512..4096 | 16384..32768 => 2,
            _ => 4,
        },
        2048..4096 => match total {
            0..512 => 1,
            512..4096 => 2,
            _ => 4,
        },
        _ => match total {
            0..1024 => 1,
            1024..8192 => 2,
            _ => 4,
        },
    };
    match alg {
        1 => Nonoverlapping,
        2 => RecursiveHalving,
        3 => Ring,
        _ => Butterfly,
    }
}

/// Open MPI's fixed rule for MPI_Reduce_scatter_block with a commutative
/// operation (`ompi_coll_tuned_reduce_scatter_block_intra_dec_fixed`, as
/// above), by one rank's block. Its algorithms: 1 basic linear (reduce,
/// then scatter: our non-overlapping), 2 recursive doubling, 3 recursive
/// halving, 4 butterfly. Recursive doubling, picked only for blocks under
/// 32 B on fewer than 8 ranks, is run as recursive halving (same rounds).
pub fn open_mpi_reduce_scatter_block(ranks: u32, bytes: u64) -> Algorithm {
    use Algorithm::*;
    let alg: u8 = match ranks {
        0..4 => match bytes {
            0..4 => 2,
            4..8 | 16..128 | 256..4096 | 8192..131072 => 4,
            8..16 | 128..256 | 4096..8192 => 3,
            _ => 1,
        },
        4..8 => match bytes {
            0..8 | 256..8192 | 16384..1048576 => 3,
            8..32 => 2,
            32..256 | 8192..16384 => 4,
            _ => 1,
        },
        8..16 => match bytes {
            0..4 => 1,
            4..32 => 3,
            32..128 => 4,
            128..524288 => 3,
            524288..4194304 => 1,
            _ => 4,
        },
        16..32 => match bytes {
            0..32 => 1,
            32..524288 => 3,
            524288..2097152 => 1,
            2097152..4194304 => 3,
            _ => 4,
        },
        _ => match bytes {
            0..4 => 3,
            4..16 => 1,
            16..65536 => 4,
            65536..262144 => 1,
            _ => 4,
        },
    };
    match alg {
        1 => Nonoverlapping,
        2 | 3 => RecursiveHalving,
        _ => Butterfly,
    }
}

/// MPICH's default MPI_Reduce_scatter(_block) selection (generic.json,
/// MPICH 5.1.0a1; a commutative operation), by the total vector of p blocks:
/// recursive halving below 512 KiB, pairwise above.
pub fn mpich_reduce_scatter(ranks: u32, bytes: u64) -> Algorithm {
    if bytes.saturating_mul(ranks as u64) < 524288 {
        Algorithm::RecursiveHalving
    } else {
        Algorithm::Pairwise
    }
}
