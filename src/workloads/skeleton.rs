//! BSP application skeleton with a computation-to-communication ratio β
//! (Widener et al. §2.3, §3.2): each iteration computes W, then calls an
//! allreduce; W = β · c, where c is the allreduce's own noiseless time on the
//! same network, measured by simulating it once. Presets carry the β of the
//! paper's Table 1 (measured on 1,024 nodes).

use super::registry::{Shape, Visited, WorkloadError, WorkloadKind, WorkloadVisitor};
use super::{CollectiveLoop, CollectiveMode};
use crate::collectives::{auto_algorithm, AutoAlgorithm};
use crate::collectives::{Algorithm, CollectiveKind};
use crate::engine::{Engine, SimError};
use crate::network::Network;
use crate::noise::Noise;
use crate::program::stream::StreamProgram;
use crate::record::Recorder;
use crate::rule::RuleError;
use crate::time::Time;
use crate::units::Ranks;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Allreduce-dominated BSP application skeleton: compute beta x (allreduce time), then the allreduce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Skeleton {
    #[schemars(with = "Ranks")]
    pub ranks: u32,
    pub iterations: u32,
    /// An application of Table 1 whose β to use ("" = give beta).
    #[schemars(with = "AppName")]
    pub app: String,
    /// Computation-to-communication ratio (when app is "").
    #[schemars(range(min = 0))]
    pub beta: f64,
    #[serde(with = "auto_algorithm")]
    #[schemars(with = "AutoAlgorithm")]
    pub algorithm: Option<Algorithm>,
    pub mode: CollectiveMode,
    #[schemars(range(min = 1, max = 65535))]
    pub test_chunks: u32,
    #[schemars(with = "crate::units::MessageBytes")]
    pub message_bytes: u64,
}

impl Default for Skeleton {
    fn default() -> Self {
        Skeleton {
            ranks: 64,
            iterations: 100,
            app: String::new(),
            beta: 0.0,
            algorithm: None,
            mode: CollectiveMode::Blocking,
            test_chunks: 1,
            message_bytes: 8,
        }
    }
}

/// Table 1 of the noise paper: application → β.
pub const PRESETS: [(&str, f64); 6] =
    [("AMG2006", 1.59), ("CTH", 1.25), ("HPCCG", 95.15), ("LAMMPS", 37.46), ("LULESH", 4.37), ("miniFE", 10.31)];

/// Schema of `app`: "" or a Table 1 application.
struct AppName;
impl JsonSchema for AppName {
    fn schema_name() -> Cow<'static, str> {
        "AppName".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = std::iter::once("").chain(PRESETS.iter().map(|(n, _)| *n)).collect();
        json_schema!({"type": "string", "enum": names})
    }
}

impl Skeleton {
    /// β: the app's from Table 1, else the given one.
    pub fn ratio(&self) -> f64 {
        PRESETS.iter().find(|(n, _)| *n == self.app).map_or(self.beta, |(_, b)| *b)
    }

    pub fn validate(&self) -> Result<(), RuleError> {
        let apps = PRESETS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
        if (self.beta > 0.0) != self.app.is_empty() {
            let which = if self.app.is_empty() { "neither was given" } else { "both were given" };
            return Err(RuleError::new("workload.beta", format!("give either beta > 0 or app (one of {apps}); {which}")));
        }
        if !self.app.is_empty() && !PRESETS.iter().any(|(n, _)| *n == self.app) {
            return Err(RuleError::new("workload.app", format!("must be one of {apps}; got {:?}", self.app)));
        }
        if !self.ratio().is_finite() {
            return Err(RuleError::new("workload.beta", format!("must be finite, got {}", self.beta)));
        }
        self.with_compute(0).validate()
    }

    fn with_compute(&self, compute_ps: Time) -> CollectiveLoop {
        CollectiveLoop {
            ranks: self.ranks,
            iterations: self.iterations,
            collective: CollectiveKind::Allreduce,
            // "auto" is the noise paper's choice: LogGOPSim's dissemination allreduce (§2.1)
            algorithm: self.algorithm.or(Some(Algorithm::Dissemination)),
            mode: self.mode,
            message_bytes: self.message_bytes,
            chunk_bytes: 0,
            compute_ps,
            root: 0,
            test_chunks: self.test_chunks,
            communicator: Default::default(),
            grid_columns: 0,
            counts: Vec::new(),
            comm: Default::default(),
        }
    }

    /// The allreduce's noiseless, blocking time c on `net`.
    pub fn collective_time(&self, net: &Network) -> Result<Time, SimError> {
        let once = CollectiveLoop { iterations: 1, mode: CollectiveMode::Blocking, ..self.with_compute(0) };
        let mut e = Engine::new(StreamProgram::new(once, Recorder::disabled()), net.clone(), Noise::none())?;
        e.run()?;
        Ok((0..self.ranks).map(|r| e.finish_time(r)).max().unwrap_or(0))
    }

    /// The loop to run: W = β·c of computation, then the allreduce.
    pub fn program(&self, net: &Network) -> Result<(CollectiveLoop, Time, Time), WorkloadError> {
        let c = self.collective_time(net).map_err(WorkloadError::Calibration)?;
        let w = (self.ratio() * c as f64).round() as Time;
        Ok((self.with_compute(w), w, c))
    }
}

impl WorkloadKind for Skeleton {
    fn shape(&self) -> Shape {
        Shape::ranks(self.ranks)
    }

    fn check(&self, _: u32, _: bool) -> Result<(), RuleError> {
        self.validate()
    }

    fn in_flight_bytes_per_rank(&self) -> u128 {
        80
    }

    /// The loop with its computation derived from the allreduce's time on `net`.
    fn prepare<V: WorkloadVisitor>(&self, net: &Network, v: V) -> Result<Visited<V::Out>, WorkloadError> {
        let (w, compute, collective) = self.program(net)?;
        let derived = vec![
            ("compute_per_iteration_s".into(), crate::time::to_seconds(compute)),
            ("collective_s".into(), crate::time::to_seconds(collective)),
        ];
        Ok(Some((v.visit(w), derived)))
    }

    fn calibration_ranks(&self) -> Option<u32> {
        Some(self.ranks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::LogGOPS;

    fn makespan(w: CollectiveLoop, net: &Network) -> f64 {
        let p = w.ranks;
        let mut e = Engine::new(StreamProgram::new(w, Recorder::disabled()), net.clone(), Noise::none()).unwrap();
        e.run().unwrap();
        (0..p).map(|r| e.finish_time(r)).max().unwrap() as f64
    }

    #[test]
    fn ideal_allreduce_speedup_meets_but_never_beats_the_table_1_bounds() {
        let net = Network::uniform(LogGOPS::loggopsim_defaults());
        for (app, beta) in PRESETS {
            for ranks in [16u32, 100] {
                let sk = Skeleton {
                    ranks,
                    iterations: 20,
                    app: String::new(),
                    beta,
                    algorithm: None,
                    mode: CollectiveMode::Blocking,
                    message_bytes: 8,
                    test_chunks: 1,
                };
                let (blocking, w, c) = sk.program(&net).unwrap();
                assert_eq!(w, (beta * c as f64).round() as Time);
                let ideal = CollectiveLoop { mode: CollectiveMode::Ideal, ..blocking.clone() };
                let speedup = makespan(blocking, &net) / makespan(ideal, &net);
                let bound = ((1.0 + beta) / beta).min(1.0 + beta); // Eq. (4), (5)
                assert!(speedup <= bound * (1.0 + 1e-9), "{app} p={ranks}: {speedup} > {bound}");
                // noiseless, the collective is the whole communication: the bound is reached
                assert!((speedup - bound).abs() < 1e-6, "{app} p={ranks}: {speedup} vs {bound}");
            }
        }
    }
}
