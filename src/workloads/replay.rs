//! GOAL files and traces as workload kinds: no program is generated, and
//! their ranks are known once the file is read (sim runs them).

use super::registry::{Shape, Visited, WorkloadError, WorkloadKind, WorkloadVisitor};
use crate::collectives::MpiLibrary;
use crate::network::Network;
use crate::rule::RuleError;
use crate::trace::TraceSpec;

/// A replayed rank keeps one queued event (40 bytes) and one match entry (24) in flight.
const REPLAYED_IN_FLIGHT_BYTES: u128 = 40 + 24;

/// A LogGOPSim GOAL schedule file: `WorkloadSpec::Goal`'s path.
pub struct GoalFile<'a> {
    pub path: &'a str,
}

impl WorkloadKind for GoalFile<'_> {
    fn shape(&self) -> Shape {
        Shape::default()
    }

    fn check(&self, _: u32, _: bool) -> Result<(), RuleError> {
        Ok(())
    }

    fn in_flight_bytes_per_rank(&self) -> u128 {
        REPLAYED_IN_FLIGHT_BYTES
    }

    fn prepare<V: WorkloadVisitor>(&self, _: &Network, _: V) -> Result<Visited<V::Out>, WorkloadError> {
        Ok(None)
    }

    fn no_goal_export(&self) -> Option<&'static str> {
        Some("the scenario already is a GOAL schedule")
    }
}

impl WorkloadKind for TraceSpec {
    fn shape(&self) -> Shape {
        Shape::default()
    }

    fn check(&self, _: u32, _: bool) -> Result<(), RuleError> {
        Ok(())
    }

    fn in_flight_bytes_per_rank(&self) -> u128 {
        REPLAYED_IN_FLIGHT_BYTES
    }

    fn prepare<V: WorkloadVisitor>(&self, _: &Network, _: V) -> Result<Visited<V::Out>, WorkloadError> {
        Ok(None)
    }

    /// A replay decides `auto` per call (the trace's own library where the scenario names none).
    fn with_library(&mut self, library: Option<MpiLibrary>) {
        self.library = library;
    }

    fn no_goal_export(&self) -> Option<&'static str> {
        Some("a trace is exported with `idlewave trace export`")
    }
}
