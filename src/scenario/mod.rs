//! The scenario: what a user writes, owned here once.
//!
//! These serde types *are* the schema: key names (with their units), types,
//! defaults (each type's `Default`), ranges and choices (schemars
//! attributes), descriptions (doc comments) and the rules that tie keys
//! together (`validate`, returning [`RuleError`] with the key). [`schema`]
//! turns them into a JSON Schema, which [`load`] walks to check a TOML file
//! (or a dict from Python) key by key, fill in the defaults and resolve
//! paths, and which `idlewave schema` prints for editors. Every error is a
//! [`ScenarioError`] naming the source, key, line and column. A checked
//! document (JSON) is read back with [`parse`]; [`Scenario::config`] turns a
//! scenario into the engine's run configuration.

pub mod load;

pub use load::ErrorKind;

use crate::network::spec::{MappingSpec, NetworkSpec};
use crate::noise::NoiseSpec;
use crate::sim::{Config, WorkloadSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A simulation scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Scenario {
    /// Every random draw of the run follows from it.
    pub seed: u64,
    pub name: String,
    pub network: NetworkSpec,
    /// Detour sources ([[noise]] tables).
    pub noise: Vec<NoiseSpec>,
    pub workload: WorkloadSpec,
    /// Jobs that share the machine ([[jobs]]), in place of [workload].
    pub jobs: Vec<crate::jobs::JobSpec>,
    pub record: Record,
    pub limits: Limits,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            seed: 1,
            name: String::new(),
            network: NetworkSpec::default(),
            noise: Vec::new(),
            workload: WorkloadSpec::default(),
            jobs: Vec::new(),
            record: Record::default(),
            limits: Limits::default(),
        }
    }
}

/// What a run keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Record {
    /// The per-(rank, iteration) timers.
    pub timers: bool,
    /// The critical path: the makespan split by cause and its derivatives in L, o, g, G and O (`idlewave explain`).
    pub explain: bool,
}

impl Default for Record {
    fn default() -> Self {
        Record { timers: true, explain: false }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Refuse runs estimated above this (0: 80% of available memory).
    pub max_memory_bytes: u64,
}

/// A scenario that cannot be accepted: where (source, key path, line and
/// column of the offending value, or of its table for a missing key), what
/// kind of problem, and the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ScenarioError {
    /// The file (or `<string>`, `<dict>`); empty when not known.
    pub source_name: String,
    /// The key path, e.g. `noise[1].duration_s` (empty: not tied to a key).
    pub key: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub kind: ErrorKind,
    pub message: String,
}

impl ScenarioError {
    /// `scn.toml:3:12: noise[1].duration_s: must be >= 0, got -1`.
    fn render(&self) -> String {
        let mut at = self.source_name.clone();
        if let Some(l) = self.line {
            at += &format!(":{l}");
            if let Some(c) = self.column {
                at += &format!(":{c}");
            }
        }
        let mut out = if at.is_empty() { String::new() } else { format!("{at}: ") };
        if !self.key.is_empty() {
            out += &format!("{}: ", self.key);
        }
        out + &self.message
    }
}

pub use crate::rule::RuleError;

impl From<RuleError> for ScenarioError {
    fn from(e: RuleError) -> Self {
        ScenarioError { source_name: String::new(), key: e.key, line: None, column: None, kind: ErrorKind::Rule, message: e.message }
    }
}

/// The scenario's JSON Schema.
pub fn schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Scenario)).expect("a schema is JSON")
}

/// Reads a checked scenario document (JSON) and checks its rules: the tests'
/// way in (users' scenarios come through `load`, Python's as a `Scenario`).
#[cfg(test)]
pub fn parse(json: &str) -> Result<Scenario, ScenarioError> {
    let de = &mut serde_json::Deserializer::from_str(json);
    let scn: Scenario = serde_path_to_error::deserialize(de).map_err(serde_error)?;
    scn.validate()?;
    Ok(scn)
}

/// The typed scenario of a checked document, its rules checked.
pub fn from_document(doc: &serde_json::Value) -> Result<Scenario, ScenarioError> {
    let scn: Scenario = serde_path_to_error::deserialize(doc).map_err(serde_error)?;
    scn.validate()?;
    Ok(scn)
}

fn serde_error<E: std::fmt::Display>(e: serde_path_to_error::Error<E>) -> ScenarioError {
    let key = e.path().to_string();
    ScenarioError {
        source_name: String::new(),
        key: if key == "." { String::new() } else { key },
        line: None,
        column: None,
        kind: ErrorKind::Type,
        message: e.into_inner().to_string(),
    }
}

/// The jobs' ranks in all, which must number a u32.
fn fit_ranks(total: u64) -> Result<u32, RuleError> {
    u32::try_from(total).map_err(|_| RuleError::new("jobs", "the jobs' ranks add up to more than 2^32"))
}

/// The run configuration of a scenario document (JSON), for tests.
#[cfg(test)]
pub fn config_of(json: &str) -> Result<Config, ScenarioError> {
    parse(json)?.config()
}

/// What a node of the machine costs at least, in placing jobs and in the
/// network's per-node and per-link state (an estimate with room to spare:
/// it guards against a typo'd node number or torus size, not a tight limit).
const NODE_BYTES: u128 = 64;

/// A machine of `nodes` nodes (as `key` sizes it) refused before anything
/// is allocated for it, where its state would not fit in memory.
fn check_machine(nodes: u128, makes: &str, key: &str, hint: &str, limit: Option<u64>) -> Result<(), ScenarioError> {
    crate::memory::check_memory(nodes * NODE_BYTES, limit).map_err(|e| {
        let (need, have) = (crate::memory::size(e.estimate), crate::memory::size(e.limit));
        let what = format!("{makes} a machine of {nodes} nodes, about {need} of state, more than {} ({have}): {hint}", e.what);
        ScenarioError { kind: ErrorKind::Memory, ..ScenarioError::from(RuleError::new(key, what)) }
    })
}

impl Scenario {
    /// The rules that tie keys together.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.network.validate()?;
        let ranks = if self.jobs.is_empty() { self.workload.shape().ranks } else { self.written_job_ranks()? };
        for (i, n) in self.noise.iter().enumerate() {
            n.validate(ranks).map_err(|e| e.within(&format!("noise[{i}].")))?;
        }
        if self.jobs.is_empty() {
            return Ok(self.workload.validate(self.network.ranks_per_node, self.network.memory.is_some())?);
        }
        if self.workload != WorkloadSpec::default() {
            return Err(RuleError::new("workload", "give either [workload] or [[jobs]], not both").into());
        }
        if self.network.mapping != MappingSpec::Block {
            return Err(RuleError::new("network.mapping", "jobs are placed by their own placement: leave the mapping as block").into());
        }
        let mut names = std::collections::HashMap::new();
        let mut figures = std::collections::HashMap::new();
        for (i, j) in self.jobs.iter().enumerate() {
            // the results name each job's figures by its name: two alike would be one
            if let Some(first) = names.insert(j.name(i), i) {
                return Err(RuleError::new(
                    format!("jobs[{i}].name"),
                    format!("{:?} is jobs[{first}]'s name already: give each job its own", j.name(i)),
                )
                .into());
            }
            // nor may one job's figure be named as another's ("x"'s link_delay_alone_s and "x_link_delay"'s alone_s)
            for figure in crate::jobs::FIGURES {
                let key = crate::jobs::figure_key(&j.name(i), figure);
                if let Some(&(first, theirs)) = figures.get(&key).filter(|(k, _)| *k != i) {
                    return Err(RuleError::new(
                        format!("jobs[{i}].name"),
                        format!(
                            "{:?} names its {figure} in the results as {key}, which is already jobs[{first}]'s {theirs}: give \
                             it a name that does not begin with another job's name and _",
                            j.name(i)
                        ),
                    )
                    .into());
                }
                figures.insert(key, (i, figure));
            }
            if (j.placement == crate::jobs::Placement::Nodes) == j.nodes.is_empty() {
                return Err(RuleError::new(format!("jobs[{i}].nodes"), "give nodes with placement = \"nodes\", and only then").into());
            }
            // a torus has its nodes; a fat tree or dragonfly grows to the highest one listed
            if let (Some(count), Some(size)) = (self.network.topology.node_count(), self.network.topology.describe_size()) {
                if let Some((k, node)) = j.nodes.iter().enumerate().find(|(_, &n)| n as u64 >= count) {
                    return Err(RuleError::new(
                        format!("jobs[{i}].nodes[{k}]"),
                        format!("node {node} is not on {size}: its nodes are numbered 0 to {}", count.saturating_sub(1)),
                    )
                    .into());
                }
            }
            j.workload
                .validate(self.network.ranks_per_node, self.network.memory.is_some())
                .map_err(|e| e.within(&format!("jobs[{i}].")))?;
        }
        Ok(())
    }

    /// The jobs' ranks in all, where the scenario says them (None where a
    /// GOAL file or trace gives a job's: they are read with the files).
    fn written_job_ranks(&self) -> Result<Option<u32>, RuleError> {
        let mut total = Some(0u64);
        for (i, j) in self.jobs.iter().enumerate() {
            j.check(i)?;
            total = total.zip(j.written_ranks()).map(|(t, r)| t + r as u64);
        }
        total.map(fit_ranks).transpose()
    }

    /// Each job's rank count (a GOAL file's or trace's read from its headers).
    fn job_ranks(&self) -> Result<Vec<u32>, RuleError> {
        let ranks: Vec<u32> = self.jobs.iter().enumerate().map(|(i, j)| j.ranks(i)).collect::<Result<_, _>>()?;
        fit_ranks(ranks.iter().map(|&r| r as u64).sum())?;
        Ok(ranks)
    }

    /// The engine's configuration of the run.
    pub fn config(&self) -> Result<Config, ScenarioError> {
        let limit = (self.limits.max_memory_bytes > 0).then_some(self.limits.max_memory_bytes);
        if !self.jobs.is_empty() {
            let ranks = self.job_ranks()?;
            let total: u32 = ranks.iter().sum();
            // (where a GOAL file or trace gave ranks, the noise meets them only now)
            for (i, n) in self.noise.iter().enumerate() {
                n.validate(Some(total)).map_err(|e| e.within(&format!("noise[{i}].")))?;
            }
            crate::memory::check_memory(total as u128 * 16, limit).map_err(|e| RuleError::new("jobs", e.to_string()))?;
            // the highest node listed sizes the machine (its per-node state), before anything is allocated
            let highest = self.jobs.iter().enumerate().flat_map(|(i, j)| j.nodes.iter().enumerate().map(move |(k, &n)| (n, i, k))).max();
            if let Some((node, i, k)) = highest {
                check_machine(
                    node as u128 + 1,
                    &format!("node {node} makes"),
                    &format!("jobs[{i}].nodes[{k}]"),
                    "number the nodes from 0",
                    limit,
                )?;
            }
            let nodes = crate::jobs::place(&self.jobs, &ranks, self.network.ranks_per_node, self.seed)?;
            return Ok(Config {
                seed: self.seed,
                network: self.network.engine_network_placed(nodes, self.seed, limit)?,
                network_once_read: None,
                noise: self.noise.clone(),
                workload: self.workload.clone(),
                jobs: self
                    .jobs
                    .iter()
                    .map(|j| crate::jobs::JobSpec { workload: j.workload.clone().with_library(self.network.mpi_library), ..j.clone() })
                    .collect(),
                record_timers: false,
                async_progress: self.network.async_progress,
                max_memory_bytes: limit,
                timeline_spans: 0,
                computation_spans: 0,
                explain: self.record.explain,
            });
        }
        if let crate::network::Topology::Torus { dims } = self.network.topology {
            let nodes = dims.iter().map(|&d| d as u128).product();
            check_machine(nodes, "these dimensions make", "network.topology.dims", "give the torus the run's size", limit)?;
        }
        let shape = self.workload.shape();
        self.network.check_mapping_grid(&shape)?;
        // a GOAL file or trace gives its rank count once read: its mapping is built then
        let later = shape.ranks.is_none() && self.network.maps_by_rank_count();
        let now = if later { NetworkSpec { mapping: MappingSpec::Block, ..self.network.clone() } } else { self.network.clone() };
        let network = now.engine_network(&shape, self.seed, limit)?;
        Ok(Config {
            seed: self.seed,
            network,
            network_once_read: later.then(|| Box::new(self.network.clone())),
            noise: self.noise.clone(),
            workload: self.workload.clone().with_library(self.network.mpi_library),
            jobs: Vec::new(),
            record_timers: self.record.timers,
            async_progress: self.network.async_progress,
            max_memory_bytes: limit,
            timeline_spans: 0,
            computation_spans: 0,
            explain: self.record.explain,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_round_trip_and_name_their_units() {
        let doc = serde_json::to_string(&Scenario::default()).unwrap();
        assert_eq!(parse(&doc).unwrap(), Scenario::default());
        let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(v["network"]["L_s"], 2.5e-6);
        assert_eq!(v["workload"]["kind"], "bsp");
        assert_eq!(v["workload"]["compute_s"], 1e-4);
    }

    #[test]
    fn errors_name_the_key() {
        // (inside tagged and flattened tables serde buffers, so the path
        // stops at the table; the Python front end checks types first)
        let e = parse(r#"{"seed": "x"}"#).unwrap_err();
        assert_eq!(e.key, "seed");
        let e = parse(r#"{"workload": {"kind": "bsp", "ranks": 4, "distances": [4]}}"#).unwrap_err();
        assert_eq!((e.key.as_str(), e.message.as_str()), ("workload.distances[0]", "must be < ranks (4), got 4"));
        let e = parse(r#"{"noise": [{"kind": "periodic", "period_s": 1e-3, "duration_s": 1e-3}]}"#).unwrap_err();
        assert_eq!(e.key, "noise[0].duration_s");
        let e = parse(r#"{"network": {"regimes": [{"transition": [[1.0, 0.0], [0.7, 0.7]], "multiplier": [1, 2]}]}}"#).unwrap_err();
        assert_eq!(e.key, "network.regimes[0].transition[1]");
        let e = parse(r#"{"network": {"regimes": [{"transition": [[1.0]], "multiplier": [1], "initial": 1}]}}"#).unwrap_err();
        assert_eq!(e.key, "network.regimes[0].initial");
    }

    #[test]
    fn seconds_become_picoseconds_half_to_even() {
        let s = parse(r#"{"workload": {"kind": "bsp", "compute_s": 2.5e-12}}"#).unwrap();
        let WorkloadSpec::Bsp(b) = s.workload else { panic!() };
        assert_eq!(b.compute_ps, 2);
    }
}
