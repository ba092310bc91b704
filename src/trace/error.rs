//! What can go wrong reading, converting or extrapolating a trace. Each
//! variant says where (file, record, call) in its fields; its text is the
//! message users see.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// A rank file that cannot be opened (a device, missing, unreadable).
    #[error(transparent)]
    File(#[from] crate::files::FileError),
    /// Reading the trace directory or a rank file failed.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A trace directory or rank file that is not a complete trace (headers, footers, the set of files).
    #[error("{}: {message}", path.display())]
    Format { path: PathBuf, message: String },
    /// A record that cannot be decoded (cut short, implausible sizes or times).
    #[error("{}: record {index}: {message}", path.display())]
    Corrupt { path: PathBuf, index: u64, message: String },
    /// A decoded record whose fields break the format's rules (check.rs).
    #[error("{}: record {index} ({op}): {source}", path.display())]
    Record { path: PathBuf, index: u64, op: String, source: super::check::CheckError },
    /// A record the replay cannot turn into operations (convert.rs).
    #[error("{} record {index} ({op}): {source}", path.display())]
    Replay { path: PathBuf, index: u64, op: String, source: Box<super::convert::ConvertError> },
    /// The record of rank 0's MPI_Cart_create, whose grid cannot be extrapolated.
    #[error("{} record {index}: {source}", path.display())]
    CartCreate { path: PathBuf, index: u64, source: super::grid::GridError },
    /// MPI_Cart_create reordered the ranks: `world` sits at `grid_rank`.
    #[error("{} record {index}: MPI_Cart_create placed world rank {world} at grid rank {grid_rank}: a reordered grid does not extrapolate", path.display())]
    Reordered { path: PathBuf, index: u64, world: i32, grid_rank: i32 },
    #[error(transparent)]
    Grid(#[from] super::grid::GridError),
    /// A communicator left incomplete at the end of a rank's records.
    #[error(transparent)]
    Convert(Box<super::convert::ConvertError>),
    /// The template's grid, needed to extrapolate as asked, cannot be found.
    #[error("cannot extrapolate on a grid: {0}")]
    NoGrid(Box<TraceError>),
    /// Neither way to extrapolate fits the trace.
    #[error("cannot extrapolate: not as a Cartesian grid ({grid}), nor periodically ({periodic})")]
    NoExtrapolation { grid: Box<TraceError>, periodic: Box<TraceError> },
    #[error(transparent)]
    NotPeriodic(#[from] PeriodicError),
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A template rank the extrapolation cannot replay (class.rs); `refusal` says what was asked.
    #[error("{refusal}{source}")]
    Template { refusal: String, source: Box<TraceError> },
    #[error("template rank {rank} makes {ops} ops: more than the 2^30 an extrapolation replays")]
    TooManyOps { rank: u32, ops: usize },
    /// Copies of the template ranks would not pair up at scale (class.rs):
    /// `from` sends `sent` messages toward `toward`, where `to` receives `received`.
    #[error("template rank {from} sends {sent} messages of one kind (communicator and tag) to its neighbour at {toward}; at scale that neighbour can replay template rank {to}, which receives {received} of them. The traced ranks exchange different numbers of messages (as when they depend on each rank's data), so copies of them do not pair up (replay it at its traced size, or trace it at the size wanted)")]
    Unpaired { from: u32, sent: u64, toward: String, to: u32, received: u64 },
    #[error("more than {} collectives in progress at once", super::class::SLOTS)]
    TooManyCollectives,
    #[error("a collective of more than 2^25 messages on one rank")]
    CollectiveTooLarge,
    /// A bug: a compiled template that breaks the engine's rules.
    #[error("{0}")]
    Internal(String),
    /// No room for the replay's state.
    #[error("{ranks} ranks: {source}")]
    Alloc { ranks: u32, source: std::collections::TryReserveError },
    /// The replay's state would not fit in memory (checked before allocating).
    #[error("{ranks} ranks: {message}")]
    Memory { ranks: u32, message: String },
    /// An error while replaying simulated rank `rank`.
    #[error("rank {rank}: {source}")]
    Rank { rank: u32, source: Box<TraceError> },
    #[error("writing the GOAL file: {0}")]
    Write(std::io::Error),
    /// Stopped from outside (Ctrl-C) while reading or converting.
    #[error("{}", crate::interrupt::INTERRUPTED)]
    Interrupted,
}

/// What the replay was asked for (its workload keys: algorithms, scale_to,
/// grid, strong, compute_scale, by_call) and cannot do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    #[error("algorithm '{0}': expected collective=algorithm")]
    AlgorithmSyntax(String),
    #[error("algorithm for '{0}': not a collective with a choice of algorithm (barrier, bcast, reduce, allreduce, gather, scatter, allgather, alltoall)")]
    NoChoice(String),
    /// `known`: the collective's algorithms, listed.
    #[error("algorithm for {collective}: '{algorithm}' is not one of {known}")]
    UnknownAlgorithm { collective: String, algorithm: String, known: String },
    #[error("grid {0}: more than 2^32 ranks")]
    GridTooLarge(String),
    #[error("scale_to = {scale_to} disagrees with grid {grid} ({ranks} ranks)")]
    ScaleToDisagrees { scale_to: u32, grid: String, ranks: u32 },
    #[error("strong scaling (--strong) takes the trace to another size: give --scale-to or --grid too")]
    StrongWithoutSize,
    #[error("compute_scale must be a finite number ≥ 0, got {0}")]
    ComputeScale(f64),
    #[error("cannot extrapolate {traced} traced ranks down to {ranks}")]
    Down { traced: u32, ranks: u32 },
    #[error("by_call attributes the replay's time to the traced calls: only for a replay as traced (no scale_to or grid)")]
    ByCallExtrapolated,
    /// `example`: the grid MPI_Dims_create would make, as a grid key ("4x4").
    #[error("{ranks} ranks make no {dims}-dimensional grid: give the grid (e.g. grid = \"{example}\")")]
    NoGridOf { ranks: u32, dims: usize, example: String },
}

/// Why rank q cannot replay trace rank q mod p (periodic extrapolation).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PeriodicError {
    #[error("{ranks} is not a multiple of the {traced} traced ranks")]
    NotAMultiple { ranks: u32, traced: u32 },
    #[error("cannot extrapolate: rank {0} makes a different number of MPI calls than rank 0; only periodic patterns scale")]
    CallCount(usize),
    #[error("cannot extrapolate by rank offsets: call {0} creates a communicator, whose members do not scale so")]
    CreatesComm(u64),
    #[error("cannot extrapolate by rank offsets: call {call} ({op}) has per-rank sizes or neighbours")]
    PerRankSizes { call: u64, op: String },
    #[error("cannot extrapolate: rooted collectives with a root other than rank 0")]
    RootNotZero,
    /// Call `call` of `rank` (`op` at `offset`) is not rank 0's (`op0` at `offset0`).
    #[error("cannot extrapolate: rank {rank} call {call} ({op}, offset {offset}) differs from rank 0's ({op0}, offset {offset0}); only periodic patterns scale")]
    Differs { rank: usize, call: u64, op: String, offset: i64, op0: String, offset0: i64 },
}

impl TraceError {
    pub fn format(path: &std::path::Path, message: impl Into<String>) -> Self {
        TraceError::Format { path: path.to_path_buf(), message: message.into() }
    }

    /// The rank file or trace directory to blame, where one is.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            TraceError::File(e) => Some(std::path::Path::new(e.path())),
            TraceError::Io { path, .. }
            | TraceError::Format { path, .. }
            | TraceError::Corrupt { path, .. }
            | TraceError::Record { path, .. }
            | TraceError::Replay { path, .. }
            | TraceError::CartCreate { path, .. }
            | TraceError::Reordered { path, .. } => Some(path),
            TraceError::NoGrid(e) | TraceError::Template { source: e, .. } | TraceError::Rank { source: e, .. } => e.path(),
            _ => None,
        }
    }

    /// The record to blame (its index in the rank file, from 0), where one is.
    pub fn record(&self) -> Option<u64> {
        match self {
            TraceError::Corrupt { index, .. }
            | TraceError::Record { index, .. }
            | TraceError::Replay { index, .. }
            | TraceError::CartCreate { index, .. }
            | TraceError::Reordered { index, .. } => Some(*index),
            TraceError::NoGrid(e) | TraceError::Template { source: e, .. } | TraceError::Rank { source: e, .. } => e.record(),
            _ => None,
        }
    }

    pub fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |source| TraceError::Io { path: path.to_path_buf(), source }
    }
}

impl From<super::convert::ConvertError> for TraceError {
    fn from(e: super::convert::ConvertError) -> Self {
        TraceError::Convert(Box::new(e))
    }
}

/// A run's errors: an interrupted replay stops as Ctrl-C does; the rest is invalid input.
impl From<TraceError> for crate::engine::SimError {
    fn from(e: TraceError) -> Self {
        let mut inner = &e;
        while let TraceError::Rank { source, .. } = inner {
            inner = source;
        }
        match inner {
            TraceError::Interrupted => crate::engine::SimError::Interrupted,
            _ => crate::engine::SimError::Invalid(e.to_string()),
        }
    }
}
