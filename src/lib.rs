//! idlewave's simulation engine: a discrete-event LogGOPS simulator of MPI
//! programs under system noise, LogGOPSim-compatible on GOAL schedules.

pub mod alloc;
pub mod bench;
pub mod collectives;
pub mod engine;
pub mod files;
#[cfg(test)]
mod fuzz;
pub mod interrupt;
pub mod jobs;
pub mod memory;
pub mod network;
pub mod noise;
pub mod noisemeter;
pub mod prefetch;
pub mod probes;
pub mod program;
pub mod record;
pub mod rng;
pub mod rule;
pub mod scenario;
pub mod sim;
pub mod time;
pub mod trace;
pub mod units;
pub mod workloads;

#[cfg(feature = "python")]
mod python;
