//! Collective microbenchmark: repeat a collective, optionally with
//! computation before each call (the noise/nonblocking-collectives paper's
//! microbenchmarks).

use super::registry::{generated, Shape, Visited, WorkloadError, WorkloadKind, WorkloadVisitor};
use super::TAG_COLLECTIVE;
use crate::collectives::{auto_algorithm, AutoAlgorithm, MpiLibrary};
use crate::collectives::{Algorithm, Collective, CollectiveKind, Comm};
use crate::network::Network;
use crate::program::driver::{Driver, Packed32};
use crate::program::stream::{Ctx, StreamOp, Workload};
use crate::rule::RuleError;
use crate::time::Time;
use crate::units::{secs, Ranks, Seconds};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a collective call is carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveMode {
    /// Every rank runs its part of the algorithm in the call.
    Blocking,
    /// MPI_I… started before the computation and waited for after it; the
    /// computation is split into `test_chunks` pieces with an MPI_Test
    /// between them (the only moments, without asynchronous progress, at
    /// which the collective's later rounds can be posted).
    Nonblocking,
    /// The idealised nonblocking collective of Widener et al. §2.5: it
    /// completes the moment it is reached and costs nothing.
    Ideal,
}

/// The communicator the collective runs on: every group of the partition runs it at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Communicator {
    #[default]
    World,
    /// The rows of a row-major grid with grid_columns columns.
    Rows,
    /// The columns of a row-major grid with grid_columns columns.
    Columns,
    /// The ranks of each node (network.ranks_per_node consecutive ranks).
    Nodes,
}

/// A loop of one collective (any algorithm; blocking, nonblocking or ideal), with compute between.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CollectiveLoop {
    #[schemars(with = "Ranks")]
    pub ranks: u32,
    pub iterations: u32,
    pub collective: CollectiveKind,
    /// "auto" (None): the collective's default algorithm.
    #[serde(with = "auto_algorithm")]
    #[schemars(with = "AutoAlgorithm")]
    pub algorithm: Option<Algorithm>,
    pub mode: CollectiveMode,
    /// Nonblocking mode: pieces the computation is cut into, with a test between.
    #[schemars(range(min = 1, max = 65535))]
    pub test_chunks: u32,
    #[schemars(with = "crate::units::MessageBytes")]
    pub message_bytes: u64,
    /// Ring broadcasts: the piece size messages are cut into (0: one piece).
    pub chunk_bytes: u64,
    #[serde(rename = "compute_s", with = "secs")]
    #[schemars(with = "Seconds")]
    pub compute_ps: Time,
    /// Group-local root.
    pub root: u32,
    pub communicator: Communicator,
    /// Columns of the row-major grid for communicator "rows" or "columns".
    pub grid_columns: u32,
    /// Per-rank blocks in bytes (group-local ranks), in place of
    /// message_bytes: gatherv, scatterv (linear), allgatherv (ring) and
    /// alltoallv (pairwise; rank j receives counts[j] from every rank).
    pub counts: Vec<u64>,
    /// The communicator resolved (set by [`CollectiveLoop::on_nodes`] for "nodes").
    #[serde(skip)]
    pub comm: Comm,
}

impl Default for CollectiveLoop {
    fn default() -> Self {
        CollectiveLoop {
            ranks: 64,
            iterations: 10,
            collective: CollectiveKind::Allreduce,
            algorithm: None,
            mode: CollectiveMode::Blocking,
            test_chunks: 1,
            message_bytes: 8,
            chunk_bytes: 0,
            compute_ps: 0,
            root: 0,
            communicator: Communicator::World,
            grid_columns: 0,
            counts: Vec::new(),
            comm: Comm::World,
        }
    }
}

/// Per-rank cursor (14 bytes).
#[derive(Debug, Clone, Copy, Default)]
pub struct CollState {
    iter: Packed32,
    driver: Driver,
    phase: Phase,
    /// Computation pieces done in this iteration (nonblocking mode).
    chunk: u16,
}

const T_ITER: u8 = 0;

/// Where a rank is in an iteration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(u8)]
enum Phase {
    #[default]
    Start,
    /// Blocking and ideal: compute; nonblocking: start the collective.
    Begin,
    /// Blocking: inside the collective; nonblocking: computing in pieces.
    Collective,
    /// Nonblocking: the collective's wait was issued.
    Waited,
    /// Nonblocking: test between two pieces.
    Test,
    Stop,
}

impl CollectiveLoop {
    #[inline]
    pub fn call(&self) -> Collective {
        Collective {
            kind: self.collective,
            // a scenario decides "auto" by its mpi_library (WorkloadSpec::with_library); else Open MPI's rule
            algorithm: self.algorithm.unwrap_or_else(|| self.auto_algorithm(MpiLibrary::default())),
            ranks: self.comm.size(self.ranks),
            root: self.root,
            bytes: self.message_bytes,
            chunk_bytes: self.chunk_bytes,
            tag: TAG_COLLECTIVE,
            comm: self.comm,
        }
    }

    /// What "auto" runs: the v-variant's schedule with per-rank counts, else `library`'s rule.
    pub fn auto_algorithm(&self, library: MpiLibrary) -> Algorithm {
        match (self.counts.is_empty(), v_algorithm(self.collective)) {
            (false, Some(a)) => a,
            _ => self.collective.auto_algorithm(library, self.comm.size(self.ranks), self.message_bytes),
        }
    }

    /// The next op of the running blocking collective.
    #[inline(always)]
    fn drive(&self, driver: &mut Driver, rank: u32) -> Option<StreamOp> {
        if self.counts.is_empty() {
            return driver.next(&self.call(), rank);
        }
        let c = self.call();
        driver.next_with(c.tag, |i| c.v_step(&self.counts, rank, i))
    }

    /// The workload with its communicator resolved on a network of
    /// `ranks_per_node` ranks per node.
    pub fn on_nodes(&self, ranks_per_node: u32) -> Self {
        let comm = match self.communicator {
            Communicator::World => Comm::World,
            Communicator::Rows => Comm::Blocks { size: self.grid_columns },
            Communicator::Columns => Comm::Strided { stride: self.grid_columns },
            Communicator::Nodes => Comm::Blocks { size: ranks_per_node },
        };
        CollectiveLoop { comm, ..self.clone() }
    }

    /// Checks the keys against each other (the communicator resolved).
    pub fn validate(&self) -> Result<(), RuleError> {
        if !(1..=u16::MAX as u32).contains(&self.test_chunks) {
            return Err(RuleError::new("workload.test_chunks", format!("must be between 1 and {}, got {}", u16::MAX, self.test_chunks)));
        }
        match self.communicator {
            Communicator::Rows | Communicator::Columns if self.grid_columns == 0 || !self.ranks.is_multiple_of(self.grid_columns) => {
                return Err(RuleError::new(
                    "workload.grid_columns",
                    format!(
                        "must divide ranks ({}) for communicator {:?}, got {}",
                        self.ranks,
                        self.communicator_name(),
                        self.grid_columns
                    ),
                ));
            }
            Communicator::World | Communicator::Nodes if self.grid_columns != 0 => {
                return Err(RuleError::new(
                    "workload.grid_columns",
                    format!("only applies to communicator 'rows' or 'columns', not {:?}", self.communicator_name()),
                ));
            }
            _ => {}
        }
        let size = self.comm.group_size(self.ranks).map_err(|e| RuleError::new("workload.communicator", e))?;
        if self.root >= size {
            let what = if self.comm == Comm::World {
                "ranks".to_string()
            } else {
                format!("the group size ({size}) of communicator {:?}", self.communicator_name())
            };
            let what = if self.comm == Comm::World { format!("{what} ({size})") } else { what };
            return Err(RuleError::new("workload.root", format!("must be < {what}, got {}", self.root)));
        }
        let call = self.call();
        if !self.counts.is_empty() {
            let Some(v) = v_algorithm(self.collective) else {
                return Err(RuleError::new("workload.counts", "per-rank counts apply to gather, scatter, allgather and alltoall"));
            };
            if call.algorithm != v {
                return Err(RuleError::new(
                    "workload.algorithm",
                    format!("with per-rank counts, {} runs {} (use auto)", crate::units::name(&self.collective), crate::units::name(&v)),
                ));
            }
            if self.counts.len() != size as usize {
                return Err(RuleError::new(
                    "workload.counts",
                    format!("needs one count per rank of the communicator ({size}), got {}", self.counts.len()),
                ));
            }
        }
        if self.chunk_bytes > 0 && self.collective != CollectiveKind::Bcast {
            return Err(RuleError::new("workload.chunk_bytes", "only broadcasts cut messages into chunks"));
        }
        call.algorithm.check_chunks(self.chunk_bytes)?;
        call.validate()
    }

    fn communicator_name(&self) -> String {
        serde_json::to_value(self.communicator).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
    }

    /// One piece of the computation in nonblocking mode (the last takes the rest).
    fn piece(&self, k: u32) -> Time {
        let n = self.test_chunks as Time;
        let base = self.compute_ps / n;
        if k + 1 == self.test_chunks {
            self.compute_ps - base * (n - 1)
        } else {
            base
        }
    }
}

impl WorkloadKind for CollectiveLoop {
    fn shape(&self) -> Shape {
        Shape::ranks(self.ranks)
    }

    fn check(&self, ranks_per_node: u32, _: bool) -> Result<(), RuleError> {
        self.on_nodes(ranks_per_node).validate()
    }

    fn in_flight_bytes_per_rank(&self) -> u128 {
        match self.mode {
            CollectiveMode::Nonblocking => 72,
            CollectiveMode::Blocking | CollectiveMode::Ideal => 48,
        }
    }

    fn prepare<V: WorkloadVisitor>(&self, net: &Network, v: V) -> Result<Visited<V::Out>, WorkloadError> {
        generated(self.on_nodes(net.ranks_per_node), v)
    }

    /// Decided once, here, for the whole loop (a library's default where none is named).
    fn with_library(&mut self, library: Option<MpiLibrary>) {
        if self.algorithm.is_none() {
            self.algorithm = Some(self.auto_algorithm(library.unwrap_or_default()));
        }
    }

    fn collective_algorithm(&self) -> Option<Algorithm> {
        self.algorithm
    }
}

impl Workload for CollectiveLoop {
    type State = CollState;

    fn num_ranks(&self) -> u32 {
        self.ranks
    }
    fn iterations(&self) -> u32 {
        self.iterations
    }
    fn timer_names(&self) -> Vec<String> {
        vec!["iteration".into()]
    }

    fn collective(&self, _id: u8) -> Option<Collective> {
        Some(self.call())
    }

    #[inline(always)]
    fn collective_step(&self, c: &Collective, rank: u32, i: u32) -> Option<crate::collectives::Step> {
        if self.counts.is_empty() {
            c.step(rank, i)
        } else {
            c.v_step(&self.counts, rank, i)
        }
    }

    fn uses_background(&self) -> bool {
        self.mode == CollectiveMode::Nonblocking
    }

    fn next(&self, rank: u32, s: &mut CollState, _ctx: &Ctx) -> StreamOp {
        // The hot path: inside a blocking collective.
        if s.phase == Phase::Collective && self.mode == CollectiveMode::Blocking {
            if let Some(op) = self.drive(&mut s.driver, rank) {
                return op;
            }
            s.phase = Phase::Stop;
        }
        loop {
            let iteration = s.iter.get();
            match (self.mode, s.phase) {
                (_, Phase::Start) => {
                    if s.iter.get() == self.iterations {
                        return StreamOp::Done;
                    }
                    s.phase = Phase::Begin;
                    s.chunk = 0;
                    s.driver = Driver::default();
                    return StreamOp::TimerStart { timer: T_ITER, iteration };
                }
                // Blocking and ideal: compute, then the collective.
                (CollectiveMode::Blocking | CollectiveMode::Ideal, Phase::Begin) => {
                    s.phase = Phase::Collective;
                    if self.compute_ps > 0 {
                        return StreamOp::Calc(self.compute_ps);
                    }
                }
                (CollectiveMode::Blocking, Phase::Collective) => match self.drive(&mut s.driver, rank) {
                    Some(op) => return op,
                    None => s.phase = Phase::Stop,
                },
                (CollectiveMode::Ideal, Phase::Collective) => s.phase = Phase::Stop,
                // Nonblocking: start, compute in pieces with a test between, wait.
                (CollectiveMode::Nonblocking, Phase::Begin) => {
                    s.phase = Phase::Collective;
                    return StreamOp::CollStart(0);
                }
                (CollectiveMode::Nonblocking, Phase::Collective) => {
                    if s.chunk as u32 == self.test_chunks {
                        s.phase = Phase::Waited;
                        return StreamOp::CollWait;
                    }
                    s.phase = Phase::Test;
                    s.chunk += 1;
                    return StreamOp::Calc(self.piece(s.chunk as u32 - 1));
                }
                (CollectiveMode::Nonblocking, Phase::Test) => {
                    s.phase = Phase::Collective;
                    if (s.chunk as u32) < self.test_chunks {
                        return StreamOp::CollTest;
                    }
                }
                (CollectiveMode::Nonblocking, Phase::Waited) => s.phase = Phase::Stop,
                (CollectiveMode::Blocking | CollectiveMode::Ideal, Phase::Waited | Phase::Test) => {
                    unreachable!("only nonblocking iterations wait for or test a collective")
                }
                (_, Phase::Stop) => {
                    s.phase = Phase::Start;
                    s.iter = s.iter.next();
                    return StreamOp::TimerStop { timer: T_ITER, iteration };
                }
            }
        }
    }
}

/// The schedule of a collective's v-variant (Open MPI's basic component).
fn v_algorithm(kind: CollectiveKind) -> Option<Algorithm> {
    Some(match kind {
        CollectiveKind::Gather | CollectiveKind::Scatter => Algorithm::Linear,
        CollectiveKind::Allgather => Algorithm::Ring,
        CollectiveKind::Alltoall => Algorithm::Pairwise,
        _ => return None,
    })
}
