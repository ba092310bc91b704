//! Built-in programs, generated lazily per rank.

mod app;
mod bsp;
mod chebfd;
mod collective;
mod dense2d;
mod krylov;
mod matvec;
pub mod partners;
mod registry;
mod replay;
mod script;
mod skeleton;
mod spmv;
mod traffic;

pub use app::{App, AppLoop, Profile as AppProfile, CALIBRATION_RANKS, PROFILES as APP_PROFILES};
pub use bsp::{Bsp, StreamTriad};
pub use chebfd::{table7 as chebfd_table7, ChebFd, ChebMode};
pub use collective::{CollectiveLoop, CollectiveMode, Communicator};
pub use dense2d::{Dense2d, Kernel as DenseKernel};
pub use krylov::{KernelOp, Krylov, KrylovKernel, Method as KrylovMethod};
pub use matvec::{next_alpha as matvec_next_alpha, FemMatvec, Hiding};
pub use registry::{generated, Shape, Visited, WorkloadError, WorkloadKind, WorkloadSpec, WorkloadVisitor};
pub use replay::GoalFile;
pub use script::{Script, ScriptState};
pub use skeleton::{Skeleton, PRESETS as SKELETON_PRESETS};
pub use spmv::{Spmv, SpmvMode};
pub use traffic::{Pattern as TrafficPattern, Traffic};

/// Tags keep the traffic of different program parts apart.
pub const TAG_HALO: u32 = 1;
pub const TAG_COLLECTIVE: u32 = 2;
pub const TAG_BARRIER: u32 = 4;

/// The next op of a dissemination barrier over all `ranks` (None once it is
/// over): the barrier every bulk-synchronous workload may close a step with.
fn barrier_step(driver: &mut crate::program::driver::Driver, ranks: u32, rank: u32) -> Option<crate::program::stream::StreamOp> {
    use crate::collectives::{Collective, CollectiveKind};
    driver.next(&Collective::dissemination(CollectiveKind::Barrier, ranks, 0, TAG_BARRIER), rank)
}

use crate::rule::RuleError;

/// Messages a rank sends in one exchange, to partners at ±d for each of `distances` distances.
fn halo_messages(distances: usize) -> u128 {
    2 * distances as u128
}

/// The rule for neighbour distances ±d: at most `max`, each in 1..ranks.
pub fn check_distances(distances: &[u32], ranks: u32, max: usize) -> Result<(), RuleError> {
    if distances.len() > max {
        return Err(RuleError::new("workload.distances", format!("at most {max} distances are supported, got {}", distances.len())));
    }
    match distances.iter().enumerate().find(|(_, &d)| d == 0 || d >= ranks) {
        Some((i, d)) => Err(RuleError::new(format!("workload.distances[{i}]"), format!("must be < ranks ({ranks}), got {d}"))),
        None => Ok(()),
    }
}
