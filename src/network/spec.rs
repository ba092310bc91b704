//! The scenario's `[network]` table as users write it (seconds, names, one
//! table per link class with per-protocol sub-tables) and its conversion to
//! the engine's [`Platform`].
//!
//! Sub-tables inherit: a key missing from `intra_node` takes the value of
//! the enclosing link table, `intra_socket` that of `intra_node` (if given,
//! else the enclosing table's), and `short` and `rendezvous` that of their
//! link table. The front end fills these in: the schema marks such tables
//! `x-inherit` (true: from the enclosing table; a key name: from that
//! sibling when it is given).

use super::mapping;
use super::{LinkClass, LogGOPS, Regime, Topology, MAX_NIC_PORTS};
use super::{Mapping, MemoryDomains, Platform};
use crate::rule::RuleError;
use crate::time::{from_seconds, Time, PS_PER_S};
use crate::units::{secs, secs_f64, secs_f64_list, FilePath, PositiveSeconds, Ranks, Seconds, SecondsList};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One protocol's LogGOPS parameters (LogGOPSim's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Protocol {
    /// Latency L.
    #[serde(rename = "L_s", with = "secs")]
    #[schemars(with = "Seconds")]
    pub l_ps: Time,
    /// CPU overhead o per message.
    #[serde(rename = "o_s", with = "secs")]
    #[schemars(with = "Seconds")]
    pub o_ps: Time,
    /// NIC gap g per message.
    #[serde(rename = "g_s", with = "secs")]
    #[schemars(with = "Seconds")]
    pub g_ps: Time,
    /// Gap per byte G.
    #[serde(rename = "G_s_per_byte", with = "secs_f64")]
    #[schemars(with = "Seconds")]
    pub big_g_ps: f64,
    /// CPU overhead per byte O.
    #[serde(rename = "O_s_per_byte", with = "secs_f64")]
    #[schemars(with = "Seconds")]
    pub big_o_ps: f64,
}

impl Default for Protocol {
    /// LogGOPSim's defaults (its --help): L=2500ns o=1500ns g=1000ns G=6ns O=0.
    fn default() -> Self {
        Protocol {
            l_ps: from_seconds(2.5e-6),
            o_ps: from_seconds(1.5e-6),
            g_ps: from_seconds(1e-6),
            big_g_ps: 6e-9 * PS_PER_S,
            big_o_ps: 0.0,
        }
    }
}

impl Protocol {
    pub fn with_eager_limit(self, s_bytes: u64) -> LogGOPS {
        LogGOPS { l_ps: self.l_ps, o_ps: self.o_ps, g_ps: self.g_ps, big_g_ps: self.big_g_ps, big_o_ps: self.big_o_ps, s_bytes }
    }
}

/// LogGOPSim's largest eager message.
pub const DEFAULT_S_BYTES: u64 = LogGOPS::LOGGOPSIM.s_bytes;

fn default_s_bytes() -> u64 {
    DEFAULT_S_BYTES
}

fn default_short_max() -> u64 {
    1024
}

/// Messages up to max_bytes: their own parameters (e.g. an inline protocol).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
pub struct Short {
    #[serde(default = "default_short_max")]
    pub max_bytes: u64,
    #[serde(flatten)]
    pub params: Protocol,
}

/// One link class: its eager parameters, eager limit, and optionally a
/// short and a rendezvous protocol with parameters of their own.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
pub struct Link {
    #[serde(flatten)]
    pub eager: Protocol,
    /// Largest message sent eagerly; larger ones use rendezvous.
    #[serde(rename = "S_bytes", default = "default_s_bytes")]
    pub s_bytes: u64,
    #[serde(default)]
    #[schemars(extend("x-inherit" = true))]
    pub short: Option<Short>,
    #[serde(default)]
    #[schemars(extend("x-inherit" = true))]
    pub rendezvous: Option<Protocol>,
}

impl Default for Link {
    fn default() -> Self {
        Link { eager: Protocol::default(), s_bytes: DEFAULT_S_BYTES, short: None, rendezvous: None }
    }
}

impl Link {
    fn class(&self) -> LinkClass {
        LinkClass {
            eager: self.eager.with_eager_limit(self.s_bytes),
            short_max_bytes: self.short.map_or(0, |s| s.max_bytes),
            short: self.short.map(|s| s.params.with_eager_limit(self.s_bytes)),
            rendezvous: self.rendezvous.map(|p| p.with_eager_limit(self.s_bytes)),
        }
    }

    fn validate(&self, at: &str) -> Result<(), RuleError> {
        match self.short {
            Some(s) if s.max_bytes > self.s_bytes => {
                Err(RuleError::new(format!("{at}short.max_bytes"), format!("must be <= S_bytes ({}), got {}", self.s_bytes, s.max_bytes)))
            }
            _ => Ok(()),
        }
    }
}

/// Where ranks run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum MappingSpec {
    /// Consecutive ranks fill a node.
    #[default]
    Block,
    /// Rank r on node r mod nodes.
    RoundRobin,
    /// Node-aware: each node holds a compact block of the process grid.
    Cartesian(GridMapping),
    /// 2-D grid with node_grid = [Qr, Qc] processes per node (2-D grid paper §3.2.1).
    Grid2d(GridMapping),
    /// Cartesian blocks laid onto the torus so neighbouring blocks are neighbouring nodes.
    TopologyAware(GridMapping),
    /// One node number per rank per line.
    File {
        #[schemars(with = "FilePath")]
        path: String,
    },
}

/// The process grid (first dimension fastest in rank order) and the block of it a node holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GridMapping {
    /// Default: the workload's grid.
    #[schemars(inner(range(min = 1)))]
    pub grid: Vec<u32>,
    /// Default: the most compact block of ranks_per_node ranks.
    #[schemars(inner(range(min = 1)))]
    pub node_grid: Vec<u32>,
}

/// Memory bandwidth per socket and per core (the memory-bound kernels contend for it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub socket_bandwidth_bytes_per_s: f64,
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub core_bandwidth_bytes_per_s: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LinkClassName {
    IntraSocket,
    IntraNode,
    InterNode,
}

/// A Markov chain of latency regimes (e.g. quiet and congested).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegimeSpec {
    /// The link classes it covers (a chain that covers none would do nothing).
    #[serde(default = "inter_node_only")]
    #[schemars(length(min = 1))]
    pub classes: Vec<LinkClassName>,
    /// The chain steps every step_s.
    #[serde(rename = "step_s", with = "secs", default = "default_step")]
    #[schemars(with = "PositiveSeconds")]
    pub step_ps: Time,
    /// Row-stochastic: transition[i][j] = P(state j next | state i now).
    #[schemars(inner(inner(range(min = 0, max = 1))), length(min = 1, max = 64))]
    pub transition: Vec<Vec<f64>>,
    /// Latency multiplier per state.
    #[schemars(inner(range(min = 0)))]
    pub multiplier: Vec<f64>,
    /// Added latency per state: mean and standard deviation (default 0).
    #[serde(rename = "add_mean_s", default, with = "secs_f64_list")]
    #[schemars(with = "SecondsList")]
    pub add_mean_ps: Vec<f64>,
    #[serde(rename = "add_sd_s", default, with = "secs_f64_list")]
    #[schemars(with = "SecondsList")]
    pub add_sd_ps: Vec<f64>,
    #[serde(default)]
    #[schemars(range(max = 63))]
    pub initial: u8,
    /// "network": one chain for every message; "rank": each rank's messages
    /// follow a chain of its own (same matrix, independent trajectories);
    /// "link": each link between switches of the topology has its own, and a
    /// message between nodes takes the slowest state of the links it crosses.
    #[serde(default)]
    pub scope: RegimeScope,
}

/// Whose latency one chain governs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RegimeScope {
    #[default]
    Network,
    /// The sending rank's: a chain per rank.
    Rank,
    /// The links': a chain per link between switches.
    Link,
}

fn inter_node_only() -> Vec<LinkClassName> {
    vec![LinkClassName::InterNode]
}

fn default_step() -> Time {
    from_seconds(1e-3)
}

impl RegimeSpec {
    fn validate(&self, at: &str) -> Result<(), RuleError> {
        let n = self.transition.len();
        for (i, row) in self.transition.iter().enumerate() {
            if row.len() != n {
                return Err(RuleError::new(
                    format!("{at}.transition[{i}]"),
                    format!("must have {n} entries (one per state), got {}", row.len()),
                ));
            }
            let sum: f64 = row.iter().sum();
            if (sum - 1.0).abs() > 1e-6 {
                return Err(RuleError::new(format!("{at}.transition[{i}]"), format!("probabilities must sum to 1, got {sum:.6}")));
            }
        }
        for (key, v) in [("multiplier", &self.multiplier), ("add_mean_s", &self.add_mean_ps), ("add_sd_s", &self.add_sd_ps)] {
            if !v.is_empty() && v.len() != n || v.is_empty() && key == "multiplier" {
                return Err(RuleError::new(format!("{at}.{key}"), format!("needs one value per state ({n}), got {}", v.len())));
            }
        }
        if self.add_sd_ps.iter().any(|&x| x < 0.0) {
            return Err(RuleError::new(format!("{at}.add_sd_s"), "must be >= 0"));
        }
        if self.initial as usize >= n {
            return Err(RuleError::new(format!("{at}.initial"), format!("must be < the number of states ({n}), got {}", self.initial)));
        }
        Ok(())
    }

    fn regime(&self) -> Regime {
        let n = self.transition.len();
        let or_zeros = |v: &Vec<f64>| if v.is_empty() { vec![0.0; n] } else { v.clone() };
        Regime {
            classes: self.classes.iter().fold(0, |m, c| m | 1 << *c as u8),
            step_ps: self.step_ps,
            transition: self.transition.clone(),
            multiplier: self.multiplier.clone(),
            add_mean_ps: or_zeros(&self.add_mean_ps),
            add_sd_ps: or_zeros(&self.add_sd_ps),
            initial: self.initial as usize,
            per_rank: self.scope == RegimeScope::Rank,
            per_link: self.scope == RegimeScope::Link,
        }
    }
}

/// The machine: LogGOPS parameters per link class and protocol, node shape,
/// mapping, topology, penalties, latency regimes and memory domains.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("additionalProperties" = false))]
pub struct NetworkSpec {
    /// Between nodes (and everywhere, unless intra_node / intra_socket are given).
    #[serde(flatten)]
    pub link: Link,
    #[schemars(with = "Ranks")]
    pub ranks_per_node: u32,
    /// Nonblocking collectives advance without MPI calls (a progress thread).
    pub async_progress: bool,
    /// Messages above the eager limit: "loggopsim" (the data leaves at once,
    /// the send completes at the match), "handshake" (request-to-send and
    /// clear-to-send first; the data leaves when the sender's CPU handles the answer)
    /// or "get" (the same, but the receiver reads the data: the sender's NIC
    /// answers without its CPU).
    pub rendezvous_model: crate::network::Rendezvous,
    /// "loggopsim" (a send waits for the NIC; receiving occupies the CPU for
    /// o + max((s−1)·O, (s−1)·G)) or "dma" (sends are queued to the NIC; it
    /// takes arriving data while the CPU computes, which then pays o + (s−1)·O).
    pub nic_model: crate::network::NicModel,
    /// Ports per NIC (multi-rail): a send leaves on the port that is free
    /// first, so a rank serves up to this many messages at once, each at
    /// 1/G; a message is received on the receiver's port of the same number.
    /// 1 is LogGOPSim's NIC.
    #[schemars(range(min = 1, max = MAX_NIC_PORTS))]
    pub nic_ports: u8,
    /// A preset name or a platform TOML file whose [network] keys this table's own keys override.
    pub platform: String,
    /// 0: a node is one socket (one memory domain).
    pub ranks_per_socket: u32,
    /// The max-rate model: a node's off-node traffic shares this bandwidth (0: unlimited).
    #[schemars(range(min = 0))]
    pub node_bandwidth_bytes_per_s: f64,
    /// Latency per link between nodes.
    #[serde(rename = "hop_latency_s", with = "secs")]
    #[schemars(with = "Seconds")]
    pub hop_latency_ps: Time,
    /// The congestion penalty stalls_per_byte · n · ranks_per_node · stall_s · hops
    /// (Krylov paper §5.7, n_cores = ranks_per_node).
    #[schemars(range(min = 0))]
    pub stalls_per_byte: f64,
    #[serde(rename = "stall_s", with = "secs_f64")]
    #[schemars(with = "Seconds")]
    pub stall_ps: f64,
    /// Between ranks of one node (missing keys: the values above).
    #[schemars(extend("x-inherit" = true))]
    pub intra_node: Option<Link>,
    /// Between ranks of one socket (missing keys: intra_node's, if given).
    #[schemars(extend("x-inherit" = "intra_node"))]
    pub intra_socket: Option<Link>,
    pub topology: Topology,
    pub mapping: MappingSpec,
    pub memory: Option<Memory>,
    /// Shared links between nodes: off ("none", LogGOPSim's network) or flows sharing each link's bandwidth.
    pub links: crate::network::LinksSpec,
    pub regimes: Vec<RegimeSpec>,
    /// The MPI library whose collective rules `algorithm = "auto"` follows
    /// (none: a trace's own library, else Open MPI).
    pub mpi_library: Option<crate::collectives::MpiLibrary>,
    /// Whether the values between nodes were measured. A platform fitted on
    /// one host says false: a run on more than ranks_per_node ranks then
    /// sends messages between nodes at values nobody measured, and says so.
    pub off_node_measured: bool,
    /// How the ping-pong that calibrated this platform held its buffers:
    /// 0, one buffer that stays in the cache; more, each message a fresh
    /// slot of regions of this many bytes, so that its data came from memory
    /// (`idlewave measure pingpong --set span_bytes=`). A record, which the
    /// simulation does not use; `idlewave validate` checks the platform with
    /// a ping-pong that holds its buffers the same way.
    pub calibration_span_bytes: u64,
}

impl Default for NetworkSpec {
    fn default() -> Self {
        NetworkSpec {
            link: Link::default(),
            ranks_per_node: 1,
            async_progress: false,
            rendezvous_model: Default::default(),
            nic_model: Default::default(),
            nic_ports: 1,
            platform: String::new(),
            ranks_per_socket: 0,
            node_bandwidth_bytes_per_s: 0.0,
            hop_latency_ps: 0,
            stalls_per_byte: 0.0,
            stall_ps: 0.0,
            intra_node: None,
            intra_socket: None,
            topology: Topology::FullyConnected,
            mapping: MappingSpec::Block,
            memory: None,
            links: Default::default(),
            regimes: Vec::new(),
            mpi_library: None,
            off_node_measured: true,
            calibration_span_bytes: 0,
        }
    }
}

impl NetworkSpec {
    /// Checks the keys against each other.
    pub fn validate(&self) -> Result<(), RuleError> {
        if self.ranks_per_socket > self.ranks_per_node {
            return Err(RuleError::new(
                "network.ranks_per_socket",
                format!("must be <= ranks_per_node ({}), got {}", self.ranks_per_node, self.ranks_per_socket),
            ));
        }
        if !(1..=MAX_NIC_PORTS).contains(&self.nic_ports) {
            return Err(RuleError::new("network.nic_ports", format!("must be 1 to {MAX_NIC_PORTS}, got {}", self.nic_ports)));
        }
        self.link.validate("network.")?;
        self.links.validate(&self.topology)?;
        for (name, l) in [("intra_node", &self.intra_node), ("intra_socket", &self.intra_socket)] {
            if let Some(l) = l {
                l.validate(&format!("network.{name}."))?;
            }
        }
        for (i, r) in self.regimes.iter().enumerate() {
            r.validate(&format!("network.regimes[{i}]"))?;
            if r.scope == RegimeScope::Link && self.topology == Topology::FullyConnected {
                return Err(RuleError::new(
                    format!("network.regimes[{i}].scope"),
                    "\"link\" needs a topology with links between switches (torus, fat_tree or dragonfly)",
                ));
            }
            if r.scope == RegimeScope::Link && !r.classes.contains(&LinkClassName::InterNode) {
                return Err(RuleError::new(
                    format!("network.regimes[{i}].scope"),
                    "\"link\" governs messages between nodes: classes must include \"inter_node\"",
                ));
            }
        }
        Ok(())
    }

    /// The engine's network for a workload of this shape: the platform
    /// with the NIC and rendezvous models.
    pub fn engine_network(&self, shape: &Shape, seed: u64, memory_limit: Option<u64>) -> Result<crate::network::Network, RuleError> {
        Ok(crate::network::Network {
            rendezvous: self.rendezvous_model,
            nic_model: self.nic_model,
            nic_ports: self.nic_ports,
            ..crate::network::Network::from(self.platform(shape, seed, memory_limit)?)
        })
    }

    /// The engine's network for ranks placed on `nodes` (one per rank), as jobs are.
    pub fn engine_network_placed(
        &self,
        nodes: Vec<u32>,
        seed: u64,
        memory_limit: Option<u64>,
    ) -> Result<crate::network::Network, RuleError> {
        let mut pl = self.platform(&Shape::ranks(nodes.len() as u32), seed, memory_limit)?;
        pl.mapping = Mapping::Table { nodes };
        Ok(crate::network::Network {
            rendezvous: self.rendezvous_model,
            nic_model: self.nic_model,
            nic_ports: self.nic_ports,
            ..crate::network::Network::from(pl)
        })
    }

    /// Whether the mapping needs the rank count, which a GOAL file or trace
    /// gives only once read (the network is then built after reading it).
    pub fn maps_by_rank_count(&self) -> bool {
        self.mapping != MappingSpec::Block
    }

    /// A mapping laid on a process grid needs one: the workload's, or
    /// `mapping.grid` where the workload has none (GOAL files, traces).
    pub fn check_mapping_grid(&self, shape: &Shape) -> Result<(), RuleError> {
        if let MappingSpec::Cartesian(g) | MappingSpec::Grid2d(g) | MappingSpec::TopologyAware(g) = &self.mapping {
            if g.grid.is_empty() && shape.grid.is_none() {
                return Err(RuleError::new(
                    "network.mapping.grid",
                    format!(
                        "the {} mapping needs the process grid (the workload has none: give mapping.grid)",
                        crate::units::name(&self.mapping)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The engine's platform for a workload of this shape.
    /// `memory_limit`: the run's limit (None: 80% of available memory),
    /// checked before a mapping table is built.
    pub fn platform(&self, shape: &Shape, seed: u64, memory_limit: Option<u64>) -> Result<Platform, RuleError> {
        let mapping = match &self.mapping {
            MappingSpec::Block => Mapping::Block,
            other => {
                let ranks = shape.ranks.expect("a mapping other than block is built once the rank count is known");
                // the table, each rank's slot in its node, and the sort that finds the slots
                crate::memory::check_memory(ranks as u128 * 16, memory_limit)
                    .map_err(|e| RuleError::new("network.mapping", e.to_string()))?;
                self.mapping_table(other, ranks, shape)?
            }
        };
        let bw = self.node_bandwidth_bytes_per_s;
        Ok(Platform {
            inter_node: self.link.class(),
            intra_node: self.intra_node.map(|l| l.class()),
            intra_socket: self.intra_socket.map(|l| l.class()),
            ranks_per_node: self.ranks_per_node,
            ranks_per_socket: self.ranks_per_socket,
            mapping,
            topology: self.topology.clone(),
            hop_latency_ps: self.hop_latency_ps,
            stalls_per_byte: self.stalls_per_byte,
            stall_ps: self.stall_ps,
            node_ps_per_byte: if bw > 0.0 { PS_PER_S / bw } else { 0.0 },
            regimes: self.regimes.iter().map(RegimeSpec::regime).collect(),
            memory: self.memory.map(|m| MemoryDomains {
                socket_bytes_per_ps: m.socket_bandwidth_bytes_per_s / PS_PER_S,
                core_bytes_per_ps: m.core_bandwidth_bytes_per_s / PS_PER_S,
            }),
            links: self.links.model(&self.topology),
            seed,
            classes: Vec::new(),
            slot_of: Vec::new(),
        })
    }

    fn mapping_table(&self, spec: &MappingSpec, ranks: u32, shape: &Shape) -> Result<Mapping, RuleError> {
        let per_node = self.ranks_per_node;
        let (g, torus) = match spec {
            MappingSpec::Block => return Ok(Mapping::Block),
            MappingSpec::RoundRobin => return Ok(Mapping::RoundRobin { nodes: ranks.div_ceil(per_node) }),
            MappingSpec::File { path } => {
                let nodes = mapping::read_file(path, ranks)?;
                // Node numbers index per-node state: keep them below the rank
                // count (or the torus's node count), so memory follows the run.
                let bound = self.topology.node_count().unwrap_or(0).max(ranks as u64);
                if let Some((r, &n)) = nodes.iter().enumerate().find(|(_, &n)| n as u64 >= bound) {
                    return Err(RuleError::new(
                        "network.mapping",
                        format!("rank {r} is on node {n}; node numbers must be below {bound} (the rank count, or a torus's node count)"),
                    ));
                }
                return Ok(Mapping::Table { nodes });
            }
            MappingSpec::Cartesian(g) | MappingSpec::Grid2d(g) => (g, None),
            MappingSpec::TopologyAware(g) => (g, if let Topology::Torus { dims } = self.topology { Some(dims) } else { None }),
        };
        let grid = if g.grid.is_empty() { shape.grid.clone() } else { Some(g.grid.clone()) };
        let kind = crate::units::name(spec);
        let grid = grid.ok_or_else(|| {
            RuleError::new("network.mapping.grid", format!("the {kind} mapping needs the process grid (the workload has none)"))
        })?;
        let held: u64 = grid.iter().map(|&d| d as u64).product();
        if held != ranks as u64 {
            return Err(RuleError::new("network.mapping.grid", format!("{grid:?} holds {held} ranks, the workload has {ranks}")));
        }
        let block = match (g.node_grid.is_empty(), shape.node_grid_reversed) {
            (true, _) => mapping::node_blocks(&grid, per_node).map_err(|e| RuleError::new("network.mapping.node_grid", e))?,
            (false, false) => g.node_grid.clone(),
            (false, true) => g.node_grid.iter().rev().copied().collect(),
        };
        let in_block: u64 = block.iter().map(|&d| d as u64).product();
        if matches!(spec, MappingSpec::Grid2d(_)) && in_block != per_node as u64 {
            return Err(RuleError::new(
                "network.mapping.node_grid",
                format!("{block:?} holds {in_block} ranks, ranks_per_node is {per_node}"),
            ));
        }
        mapping::cartesian(&grid, &block, torus).map(|nodes| Mapping::Table { nodes }).map_err(|e| RuleError::new("network.mapping", e))
    }
}

/// What the mapping needs to know of the workload.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Shape {
    pub ranks: Option<u32>,
    /// The process grid, first dimension fastest in rank order.
    pub grid: Option<Vec<u32>>,
    /// The workload writes grids slowest dimension first (dense2d's [rows,
    /// columns]), so a mapping's node_grid is given that way too.
    pub node_grid_reversed: bool,
}

impl Shape {
    /// `ranks` ranks in no particular grid.
    pub fn ranks(ranks: u32) -> Self {
        Shape { ranks: Some(ranks), grid: None, node_grid_reversed: false }
    }

    /// The ranks of a process grid, first dimension fastest.
    pub fn grid(grid: &[u32]) -> Self {
        Shape { ranks: Some(grid.iter().product()), grid: Some(grid.to_vec()), node_grid_reversed: false }
    }
}
