//! Built-in programs, generated lazily per rank.

mod bsp;
mod chebfd;
mod collective;
mod dense2d;
mod krylov;
mod matvec;
pub mod partners;
mod script;
mod skeleton;
mod spmv;

pub use bsp::Bsp;
pub use chebfd::{table7 as chebfd_table7, ChebFd, ChebMode};
pub use collective::{CollectiveLoop, CollectiveMode};
pub use dense2d::{Dense2d, Kernel as DenseKernel};
pub use krylov::{Krylov, Method as KrylovMethod};
pub use matvec::{FemMatvec, Hiding};
pub use script::{Script, ScriptState};
pub use skeleton::{Skeleton, PRESETS as SKELETON_PRESETS};
pub use spmv::{Spmv, SpmvMode};

/// Tags keep the traffic of different program parts apart.
pub const TAG_HALO: u32 = 1;
pub const TAG_COLLECTIVE: u32 = 2;
pub const TAG_BARRIER: u32 = 4;
