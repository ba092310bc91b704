//! BSP application skeleton with a computation-to-communication ratio β
//! (Widener et al. §2.3, §3.2): each iteration computes W, then calls an
//! allreduce; W = β · c, where c is the allreduce's own noiseless time on the
//! same network, measured by simulating it once. Presets carry the β of the
//! paper's Table 1 (measured on 1,024 nodes).

use super::{CollectiveLoop, CollectiveMode};
use crate::collectives::{Algorithm, CollectiveKind};
use crate::engine::Engine;
use crate::network::Network;
use crate::noise::Noise;
use crate::program::stream::StreamProgram;
use crate::record::Recorder;
use crate::time::Time;
use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skeleton {
    pub ranks: u32,
    pub iterations: u32,
    /// Computation-to-communication ratio.
    pub beta: f64,
    pub algorithm: Option<Algorithm>,
    pub mode: CollectiveMode,
    pub message_bytes: u64,
    pub test_chunks: u32,
}

/// Table 1 of the noise paper: application → β.
pub const PRESETS: [(&str, f64); 6] =
    [("AMG2006", 1.59), ("CTH", 1.25), ("HPCCG", 95.15), ("LAMMPS", 37.46), ("LULESH", 4.37), ("miniFE", 10.31)];

impl Skeleton {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.beta.is_finite() && self.beta > 0.0) {
            return Err(format!("workload.beta must be a positive number, got {}", self.beta));
        }
        self.with_compute(0).validate()
    }

    fn with_compute(&self, compute_ps: Time) -> CollectiveLoop {
        CollectiveLoop {
            ranks: self.ranks,
            iterations: self.iterations,
            collective: CollectiveKind::Allreduce,
            algorithm: self.algorithm,
            mode: self.mode,
            message_bytes: self.message_bytes,
            chunk_bytes: 1,
            compute_ps,
            root: 0,
            test_chunks: self.test_chunks,
            comm: Default::default(),
        }
    }

    /// The allreduce's noiseless, blocking time c on `net`.
    pub fn collective_time(&self, net: &Network) -> Result<Time, String> {
        let once = CollectiveLoop { iterations: 1, mode: CollectiveMode::Blocking, ..self.with_compute(0) };
        let mut e = Engine::new(StreamProgram::new(once, Recorder::disabled()), net.clone(), Noise::none()).map_err(|e| e.to_string())?;
        e.run().map_err(|e| e.to_string())?;
        Ok((0..self.ranks).map(|r| e.finish_time(r)).max().unwrap_or(0))
    }

    /// The loop to run: W = β·c of computation, then the allreduce.
    pub fn program(&self, net: &Network) -> Result<(CollectiveLoop, Time, Time), String> {
        let c = self.collective_time(net)?;
        let w = (self.beta * c as f64).round() as Time;
        Ok((self.with_compute(w), w, c))
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
