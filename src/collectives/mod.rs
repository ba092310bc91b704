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
pub mod rules;

use crate::rule::RuleError;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

pub use algorithms::subtree_size;
pub use rules::MpiLibrary;

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

impl CollectiveKind {
    /// What runs where neither `algorithm` nor a library rule
    /// ([`rules`]) chooses.
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

/// Peers per batch of the linear alltoall: a rank's nonblocking operations
/// in flight are numbered in 63 wait slots, so at most 31 receives and 31
/// sends go at once (MPICH's `scattered` batches 32; Open MPI's `linear`
/// posts all p − 1: beyond 32 ranks both are run in batches of 31).
pub const LINEAR_BATCH: u32 = 31;

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
