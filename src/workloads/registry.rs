//! The one registry of workload kinds: what every kind answers
//! ([`WorkloadKind`]), the scenario's choice among them ([`WorkloadSpec`])
//! and the one list that dispatches over them ([`each_workload!`]).
//!
//! Adding a workload: write its type and its `impl WorkloadKind` in its own
//! file, then add its variant to `WorkloadSpec` and its line to
//! `each_workload!` beside it (the compiler points at the line if it is
//! missing). The dispatch runs once per run, at setup: the program it hands
//! to a [`WorkloadVisitor`] is a concrete type, so the engine's event loop is
//! monomorphised for it as before.

use super::{App, Bsp, ChebFd, CollectiveLoop, Dense2d, FemMatvec, GoalFile, Krylov, KrylovKernel, Skeleton, Spmv, StreamTriad};
use crate::collectives::{Algorithm, MpiLibrary};
use crate::engine::SimError;
pub use crate::network::spec::Shape;
use crate::network::Network;
use crate::program::stream::Workload;
use crate::rule::RuleError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What runs: a built-in workload, a GOAL schedule or a traced application.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// Bulk-synchronous loop: compute, then halo exchange with ranks at the given distances.
    Bsp(Bsp),
    /// A loop of one collective (any algorithm; blocking, nonblocking or ideal), with compute between.
    Collective(CollectiveLoop),
    /// Allreduce-dominated BSP application skeleton: compute beta x (allreduce time), then the allreduce.
    Skeleton(Skeleton),
    /// A noise-paper application (AMG2006, CTH, HPCCG, LAMMPS, LULESH, miniFE): halos, allreduces (blocking or ideal), compute from Table 1's beta.
    App(App),
    /// Back-to-back sparse matrix-vector products on a banded matrix, split_wait or non_split (idle-waves paper §3.2).
    Spmv(Spmv),
    /// Finite-element MatVec hiding communication with fixed alpha, dynamic alpha or MPI test (HMM paper §2.4).
    FemMatvec(FemMatvec),
    /// MPI-augmented STREAM Triad (idle-waves paper §3.1): a sweep over the local arrays, then exchange with r±1..k.
    StreamTriad(StreamTriad),
    /// PCG, SAPCG, NBPCG, PIPECG or PIPE2CG iterations on a 3-D process grid with a 7- or 27-point halo.
    Krylov(Krylov),
    /// The Krylov paper's section 3.1 kernels: blocking or nonblocking allreduce or halo exchange between two busy-waits.
    KrylovKernel(KrylovKernel),
    /// Chebyshev filter diagonalization (idle-waves paper §3.3): non_split, split_wait or pipeline.
    Chebfd(ChebFd),
    /// Block LU (HPL-MxP) or blocked Floyd-Warshall on a Pr x Pc grid with row/column panel broadcasts (2-D grid paper).
    Dense2d(Dense2d),
    /// Background traffic: rounds of one message per rank (uniform, permutation or incast) at an offered rate, to load the network beside a job.
    Traffic(super::Traffic),
    /// A LogGOPSim GOAL schedule file (calc times in ns).
    Goal {
        #[schemars(with = "crate::units::FilePath")]
        path: String,
    },
    /// A traced MPI run (directory of rank-*.iwt from `idlewave trace build`), replayed as it is read.
    Trace(crate::trace::TraceSpec),
}

/// The one list of workload kinds: `each_workload!(spec, w => body)` runs
/// `body` with `w` bound to the kind's own type (behind `&` or `&mut` as
/// `spec` is). A GOAL file is the variant's path seen as a [`GoalFile`]
/// (the variant keeps its inline table in the schema).
macro_rules! each_workload {
    ($spec:expr, $w:ident => $body:expr) => {
        match $spec {
            WorkloadSpec::Bsp($w) => $body,
            WorkloadSpec::Collective($w) => $body,
            WorkloadSpec::Skeleton($w) => $body,
            WorkloadSpec::App($w) => $body,
            WorkloadSpec::Spmv($w) => $body,
            WorkloadSpec::FemMatvec($w) => $body,
            WorkloadSpec::StreamTriad($w) => $body,
            WorkloadSpec::Krylov($w) => $body,
            WorkloadSpec::KrylovKernel($w) => $body,
            WorkloadSpec::Chebfd($w) => $body,
            WorkloadSpec::Dense2d($w) => $body,
            WorkloadSpec::Traffic($w) => $body,
            WorkloadSpec::Goal { path } => {
                let $w = &mut GoalFile { path: path.as_str() };
                $body
            }
            WorkloadSpec::Trace($w) => $body,
        }
    };
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec::Bsp(Bsp::default())
    }
}

impl WorkloadSpec {
    /// What the mapping needs: the rank count and process grid, where the workload fixes them.
    pub fn shape(&self) -> Shape {
        each_workload!(self, w => w.shape())
    }

    /// The rules that tie the workload's keys together, on a network of
    /// `ranks_per_node` ranks per node, with memory domains or not (files
    /// are read when it runs).
    pub fn validate(&self, ranks_per_node: u32, memory_domains: bool) -> Result<(), RuleError> {
        each_workload!(self, w => w.check(ranks_per_node, memory_domains))
    }

    /// See [`WorkloadKind::in_flight_bytes_per_rank`].
    pub fn in_flight_bytes_per_rank(&self) -> u128 {
        each_workload!(self, w => w.in_flight_bytes_per_rank())
    }

    /// The one dispatch that hands a built-in workload to generic code:
    /// it is checked and made ready (files loaded, shapes resolved, a
    /// skeleton's program derived from the network) and handed to `v`, with
    /// the figures it derived. None for GOAL files and traces, which are not
    /// generated workloads.
    pub fn visit<V: WorkloadVisitor>(&self, net: &Network, v: V) -> Result<Visited<V::Out>, WorkloadError> {
        self.validate(net.ranks_per_node, memory_domains(net))?;
        each_workload!(self, w => w.prepare(net, v))
    }

    /// See [`WorkloadKind::calibration_ranks`].
    pub fn calibration_ranks(&self) -> Option<u32> {
        each_workload!(self, w => w.calibration_ranks())
    }

    /// `algorithm = "auto"` decided by `library`'s rules (see [`WorkloadKind::with_library`]).
    pub fn with_library(mut self, library: Option<MpiLibrary>) -> Self {
        each_workload!(&mut self, w => w.with_library(library));
        self
    }

    /// See [`WorkloadKind::collective_algorithm`].
    pub fn collective_algorithm(&self) -> Option<Algorithm> {
        each_workload!(self, w => w.collective_algorithm())
    }

    /// See [`WorkloadKind::no_goal_export`].
    pub fn no_goal_export(&self) -> Option<&'static str> {
        each_workload!(self, w => w.no_goal_export())
    }
}

/// What every workload kind answers. Implemented by each kind's type in the
/// file that defines it; reached through [`WorkloadSpec`]'s methods.
pub trait WorkloadKind {
    /// The rank count and process grid, where the workload fixes them.
    fn shape(&self) -> Shape;

    /// The rules that tie the workload's keys together, on a network of
    /// `ranks_per_node` ranks per node, with memory domains or not (files
    /// are read when it runs).
    fn check(&self, ranks_per_node: u32, memory_domains: bool) -> Result<(), RuleError>;

    /// Bytes per rank the event queue and the match lists hold at their
    /// peak (with the spare capacity of their growth), and what the
    /// workload keeps per rank beside its program state (partner tables).
    /// This depends on how many messages and computations a rank has
    /// outstanding at once, which the workload's shape gives: measured for
    /// each kind at 256 Ki and 1 Mi ranks (tests/test_memory_estimate.py)
    /// and set a little above.
    fn in_flight_bytes_per_rank(&self) -> u128;

    /// The workload made ready (checked already by [`Self::check`]) and
    /// handed to `v` with the figures it derived; None where no program is
    /// generated (GOAL files, traces). Most kinds hand over themselves
    /// ([`generated`]).
    fn prepare<V: WorkloadVisitor>(&self, net: &Network, v: V) -> Result<Visited<V::Out>, WorkloadError>;

    /// Ranks of a run that calibrates the workload before it runs (whose
    /// memory is checked first), if it has one.
    fn calibration_ranks(&self) -> Option<u32> {
        None
    }

    /// Decides `algorithm = "auto"` by `library`'s rules, where the kind
    /// runs a collective chosen so.
    fn with_library(&mut self, _library: Option<MpiLibrary>) {}

    /// The collective algorithm the workload runs, reported with its results.
    fn collective_algorithm(&self) -> Option<Algorithm> {
        None
    }

    /// Why the workload is not exported as a GOAL schedule, where the kind
    /// knows before its program is generated (otherwise the export finds
    /// the first op without a GOAL form).
    fn no_goal_export(&self) -> Option<&'static str> {
        None
    }
}

/// What [`WorkloadKind::prepare`] gives for a workload that runs as it is.
pub fn generated<W: Workload + Clone + 'static, V: WorkloadVisitor>(w: W, v: V) -> Result<Visited<V::Out>, WorkloadError> {
    Ok(Some((v.visit(w), Vec::new())))
}

/// Generic code over the built-in workloads: running, exporting.
pub trait WorkloadVisitor {
    type Out;
    fn visit<W: Workload + Clone + 'static>(self, w: W) -> Self::Out;
}

/// What a visit gives: the visitor's answer and the figures the workload derived.
pub type Visited<T> = Option<(T, Vec<(String, f64)>)>;

/// Why a workload could not be made ready to run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkloadError {
    /// A rule that ties the workload's keys together is broken.
    #[error(transparent)]
    Rule(#[from] RuleError),
    /// The partner file could not be read (the text names the file and line).
    #[error("{0}")]
    PartnerFile(String),
    /// The run that calibrates the workload's computation failed.
    #[error("{0}")]
    Calibration(SimError),
}

/// Outside the event loop, a workload that cannot be made ready is invalid
/// input; a broken rule keeps its key (the scenario's file is named with it).
impl From<WorkloadError> for SimError {
    fn from(e: WorkloadError) -> Self {
        match e {
            WorkloadError::Rule(e) => SimError::Rule(e),
            WorkloadError::Calibration(e) => e,
            e @ WorkloadError::PartnerFile(_) => SimError::Invalid(e.to_string()),
        }
    }
}

/// Whether the network's platform has memory domains (memory-bound work contends there).
pub(super) fn memory_domains(net: &Network) -> bool {
    net.platform.as_ref().is_some_and(|p| p.memory.is_some())
}
