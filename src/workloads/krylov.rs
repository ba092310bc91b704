//! Preconditioned conjugate-gradient iterations (krylov-postal-models §3):
//! PCG, single-allreduce SAPCG, nonblocking NBPCG, pipelined PIPECG and
//! two-iteration pipelined PIPE2CG, on a 3-D process grid with a 7- or
//! 27-point halo (6 face, 12 edge, 8 corner messages; open boundaries).
//!
//! Each iteration is a sequence of stages. The matrix-vector product posts
//! the halo, computes the diagonal block while it is in flight, waits, and
//! computes the rest (the overlap PETSc's MatMult does). PCG calls two
//! blocking allreduces per iteration and SAPCG one; NBPCG overlaps each of
//! its two with the product or the preconditioner; PIPECG overlaps one with
//! both; PIPE2CG overlaps one with two iterations' worth. A nonblocking
//! allreduce advances inside the halo waits (they are MPI calls) or with a
//! progress thread.

use super::registry::{generated, Shape, Visited, WorkloadError, WorkloadKind, WorkloadVisitor};
use super::{TAG_COLLECTIVE, TAG_HALO};
use crate::collectives::{auto_algorithm, AutoAlgorithm};
use crate::collectives::{Algorithm, Collective, CollectiveKind};
use crate::network::Network;
use crate::program::driver::{Driver, Packed32};
use crate::program::stream::{Ctx, StreamOp, Workload};
use crate::rule::RuleError;
use crate::time::{from_seconds, Time};
use crate::units::{secs, Seconds};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    Pcg,
    Sapcg,
    Nbpcg,
    Pipecg,
    Pipe2cg,
    /// The §3.1 kernels (the `krylov_kernel` workload): a blocking or
    /// nonblocking allreduce, or a halo exchange, with two busy-waits:
    /// `precond_ps` (overlappable with the nonblocking call) and `vector_ps`
    /// (trailing).
    #[serde(skip)]
    AllreduceBlocking,
    #[serde(skip)]
    AllreduceNonblocking,
    #[serde(skip)]
    HaloBlocking,
    #[serde(skip)]
    HaloNonblocking,
}

/// PCG, SAPCG, NBPCG, PIPECG or PIPE2CG iterations on a 3-D process grid with a 7- or 27-point halo.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Krylov {
    pub iterations: u32,
    /// Process grid px × py × pz (= ranks).
    #[schemars(inner(range(min = 1)))]
    pub grid: [u32; 3],
    /// Grid points per rank nx × ny × nz.
    #[schemars(inner(range(min = 1)))]
    pub local: [u32; 3],
    /// 7 (faces only) or 27 (faces, edges and corners).
    #[schemars(range(min = 7, max = 27))]
    pub stencil: u8,
    pub method: Method,
    #[serde(with = "auto_algorithm")]
    #[schemars(with = "AutoAlgorithm")]
    pub algorithm: Option<Algorithm>,
    #[serde(rename = "spmv_s", with = "secs")]
    #[schemars(with = "Seconds")]
    pub spmv_ps: Time,
    #[serde(rename = "precond_s", with = "secs")]
    #[schemars(with = "Seconds")]
    pub precond_ps: Time,
    #[serde(rename = "vector_s", with = "secs")]
    #[schemars(with = "Seconds")]
    pub vector_ps: Time,
    /// Share of the product computed while the halo is in flight.
    #[schemars(range(min = 0, max = 1))]
    pub diagonal_fraction: f64,
    /// The preconditioner cut into this many pieces with an MPI_Test on the
    /// running nonblocking allreduce (or halo) between them, as the paper's
    /// kernels do to let MPI progress (§4).
    #[schemars(range(min = 1, max = 128))]
    pub test_chunks: u32,
}

impl Default for Krylov {
    fn default() -> Self {
        Krylov {
            iterations: 100,
            grid: [4, 4, 4],
            local: [32, 32, 32],
            stencil: 27,
            method: Method::Pcg,
            algorithm: None,
            spmv_ps: from_seconds(1e-4),
            precond_ps: from_seconds(1e-4),
            vector_ps: from_seconds(2e-5),
            diagonal_fraction: 0.7,
            test_chunks: 1,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KernelOp {
    Allreduce,
    Halo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KernelMode {
    Blocking,
    Nonblocking,
}

/// The Krylov paper's section 3.1 kernels: blocking or nonblocking allreduce or halo exchange between two busy-waits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct KrylovKernel {
    pub iterations: u32,
    pub kernel: KernelOp,
    pub mode: KernelMode,
    /// The busy-wait the nonblocking call can overlap.
    #[serde(rename = "overlap_s", with = "secs")]
    #[schemars(with = "Seconds")]
    pub overlap_ps: Time,
    /// The busy-wait after it.
    #[serde(rename = "trailing_s", with = "secs")]
    #[schemars(with = "Seconds")]
    pub trailing_ps: Time,
    #[schemars(inner(range(min = 1)))]
    pub grid: [u32; 3],
    #[schemars(inner(range(min = 1)))]
    pub local: [u32; 3],
    #[schemars(range(min = 7, max = 27))]
    pub stencil: u8,
    #[serde(with = "auto_algorithm")]
    #[schemars(with = "AutoAlgorithm")]
    pub algorithm: Option<Algorithm>,
    /// The overlapped busy-wait cut into this many pieces with an MPI_Test between them.
    #[schemars(range(min = 1, max = 128))]
    pub test_chunks: u32,
}

impl Default for KrylovKernel {
    fn default() -> Self {
        KrylovKernel {
            iterations: 100,
            kernel: KernelOp::Allreduce,
            mode: KernelMode::Blocking,
            overlap_ps: from_seconds(1e-4),
            trailing_ps: from_seconds(1e-4),
            grid: [4, 4, 4],
            local: [32, 32, 32],
            stencil: 7,
            algorithm: None,
            test_chunks: 1,
        }
    }
}

impl KrylovKernel {
    /// The kernel as a solver workload: busy-wait 1 overlaps the
    /// nonblocking call, busy-wait 2 trails it (the solver's preconditioner
    /// and vector stages).
    pub fn solver(&self) -> Krylov {
        let method = match (self.kernel, self.mode) {
            (KernelOp::Allreduce, KernelMode::Blocking) => Method::AllreduceBlocking,
            (KernelOp::Allreduce, KernelMode::Nonblocking) => Method::AllreduceNonblocking,
            (KernelOp::Halo, KernelMode::Blocking) => Method::HaloBlocking,
            (KernelOp::Halo, KernelMode::Nonblocking) => Method::HaloNonblocking,
        };
        Krylov {
            iterations: self.iterations,
            grid: self.grid,
            local: self.local,
            stencil: self.stencil,
            method,
            algorithm: self.algorithm,
            spmv_ps: 0,
            precond_ps: self.overlap_ps,
            vector_ps: self.trailing_ps,
            diagonal_fraction: 0.0,
            test_chunks: self.test_chunks,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Spmv,
    Precond,
    Vector,
    /// Blocking allreduce of this many dot products.
    Allreduce(u8),
    /// Start a nonblocking allreduce of this many dot products.
    Start(u8),
    Wait,
    /// Post the halo's receives and sends (Halo_Receive, Halo_Send).
    HaloPost,
    /// MPI_Waitall on the halo.
    HaloWait,
}

use Stage::*;

const PCG: &[Stage] = &[Spmv, Allreduce(1), Vector, Precond, Allreduce(1), Vector];
const SAPCG: &[Stage] = &[Spmv, Precond, Allreduce(2), Vector];
const NBPCG: &[Stage] = &[Start(1), Spmv, Wait, Vector, Start(1), Precond, Wait, Vector];
const PIPECG: &[Stage] = &[Start(3), Precond, Spmv, Wait, Vector];
const PIPE2CG_FIRST: &[Stage] = &[Start(5), Precond, Spmv, Vector];
const PIPE2CG_SECOND: &[Stage] = &[Precond, Spmv, Wait, Vector];
const PIPE2CG_LAST: &[Stage] = &[Start(5), Precond, Spmv, Wait, Vector];
// The kernels of §3.1, with Precond and Vector as the two busy-waits.
const ALLREDUCE_BLOCKING: &[Stage] = &[Allreduce(1), Precond, Vector];
const ALLREDUCE_NONBLOCKING: &[Stage] = &[Start(1), Precond, Wait, Vector];
const HALO_BLOCKING: &[Stage] = &[HaloPost, HaloWait, Precond, Vector];
const HALO_NONBLOCKING: &[Stage] = &[HaloPost, Precond, HaloWait, Vector];

const T_ITER: u8 = 0;
const T_SPMV: u8 = 1;
const T_REDUCE: u8 = 2;

/// Per-rank cursor (14 bytes).
#[derive(Debug, Clone, Copy, Default)]
pub struct KrylovState {
    iter: Packed32,
    driver: Driver,
    stage: u8,
    sub: u8,
    idx: u8,
}

/// The 26 neighbour offsets; the first 6 are the faces.
pub(super) const OFFSETS: [[i8; 3]; 26] = {
    let mut out = [[0i8; 3]; 26];
    let (mut faces, mut others) = (0, 6);
    let mut i = 0;
    while i < 27 {
        let d = [(i % 3) as i8 - 1, ((i / 3) % 3) as i8 - 1, (i / 9) as i8 - 1];
        let nonzero = (d[0] != 0) as usize + (d[1] != 0) as usize + (d[2] != 0) as usize;
        if nonzero == 1 {
            out[faces] = d;
            faces += 1;
        } else if nonzero > 1 {
            out[others] = d;
            others += 1;
        }
        i += 1;
    }
    out
};

impl Krylov {
    pub fn ranks(&self) -> u32 {
        self.grid.iter().product()
    }

    pub fn validate(&self) -> Result<(), RuleError> {
        if self.grid.contains(&0) || self.local.contains(&0) {
            return Err(RuleError::new("workload.grid", "grid and local must be positive in every dimension"));
        }
        if (self.grid.iter().map(|&g| g as u64).product::<u64>()) > crate::units::MAX_RANKS as u64 {
            return Err(RuleError::new("workload.grid", format!("more than {} ranks", crate::units::MAX_RANKS)));
        }
        if self.stencil != 7 && self.stencil != 27 {
            return Err(RuleError::new("workload.stencil", format!("must be 7 or 27, got {}", self.stencil)));
        }
        if !(0.0..=1.0).contains(&self.diagonal_fraction) {
            return Err(RuleError::new("workload.diagonal_fraction", "must be between 0 and 1"));
        }
        if !(1..=128).contains(&self.test_chunks) {
            return Err(RuleError::new("workload.test_chunks", format!("must be between 1 and 128, got {}", self.test_chunks)));
        }
        self.allreduce(1).validate()
    }

    fn allreduce(&self, dots: u8) -> Collective {
        Collective {
            kind: CollectiveKind::Allreduce,
            algorithm: self.algorithm.unwrap_or(Algorithm::Dissemination),
            ranks: self.ranks(),
            root: 0,
            bytes: 8 * dots as u64,
            chunk_bytes: 0,
            comm: crate::collectives::Comm::World,
            tag: TAG_COLLECTIVE,
        }
    }

    fn stages(&self, iteration: u32) -> &'static [Stage] {
        match self.method {
            Method::Pcg => PCG,
            Method::Sapcg => SAPCG,
            Method::Nbpcg => NBPCG,
            Method::Pipecg => PIPECG,
            Method::Pipe2cg if iteration % 2 == 1 => PIPE2CG_SECOND,
            Method::Pipe2cg if iteration + 1 == self.iterations => PIPE2CG_LAST,
            Method::Pipe2cg => PIPE2CG_FIRST,
            Method::AllreduceBlocking => ALLREDUCE_BLOCKING,
            Method::AllreduceNonblocking => ALLREDUCE_NONBLOCKING,
            Method::HaloBlocking => HALO_BLOCKING,
            Method::HaloNonblocking => HALO_NONBLOCKING,
        }
    }

    /// Neighbour k of `rank` that exists (open boundaries) with its message
    /// size, or None past the stencil; Some(None) where the grid ends.
    fn neighbour(&self, rank: u32, k: u8) -> Option<Option<(u32, u64)>> {
        let count = if self.stencil == 7 { 6 } else { 26 };
        let d = *OFFSETS.get(k as usize).filter(|_| (k as usize) < count)?;
        let [px, py, pz] = self.grid.map(|g| g as i64);
        let r = rank as i64;
        let c = [r % px, (r / px) % py, r / (px * py)];
        let mut q = [0i64; 3];
        for i in 0..3 {
            q[i] = c[i] + d[i] as i64;
            if q[i] < 0 || q[i] >= [px, py, pz][i] {
                return Some(None);
            }
        }
        // A face carries a plane, an edge a line, a corner a point.
        let points: u64 = (0..3).map(|i| if d[i] == 0 { self.local[i] as u64 } else { 1 }).product();
        Some(Some(((q[0] + px * (q[1] + py * q[2])) as u32, points * 8)))
    }

    fn slots(&self) -> u8 {
        if self.stencil == 7 {
            6
        } else {
            26
        }
    }
}

impl WorkloadKind for Krylov {
    fn shape(&self) -> Shape {
        Shape::grid(&self.grid)
    }

    fn check(&self, _: u32, _: bool) -> Result<(), RuleError> {
        self.validate()
    }

    fn in_flight_bytes_per_rank(&self) -> u128 {
        80 + 20 * (self.stencil as u128 - 1)
    }

    fn prepare<V: WorkloadVisitor>(&self, _: &Network, v: V) -> Result<Visited<V::Out>, WorkloadError> {
        generated(self.clone(), v)
    }
}

impl WorkloadKind for KrylovKernel {
    fn shape(&self) -> Shape {
        Shape::grid(&self.grid)
    }

    fn check(&self, _: u32, _: bool) -> Result<(), RuleError> {
        self.solver().validate()
    }

    fn in_flight_bytes_per_rank(&self) -> u128 {
        match self.kernel {
            KernelOp::Allreduce => 60,
            KernelOp::Halo => 60 + 24 * (self.stencil as u128 - 1),
        }
    }

    fn prepare<V: WorkloadVisitor>(&self, _: &Network, v: V) -> Result<Visited<V::Out>, WorkloadError> {
        generated(self.solver(), v)
    }
}

impl Workload for Krylov {
    type State = KrylovState;

    fn num_ranks(&self) -> u32 {
        self.ranks()
    }
    fn iterations(&self) -> u32 {
        self.iterations
    }
    fn timer_names(&self) -> Vec<String> {
        vec!["iteration".into(), "spmv".into(), "reduce".into()]
    }
    fn collective(&self, dots: u8) -> Option<Collective> {
        Some(self.allreduce(dots))
    }
    fn uses_background(&self) -> bool {
        matches!(self.method, Method::Nbpcg | Method::Pipecg | Method::Pipe2cg | Method::AllreduceNonblocking)
    }
    fn background_slots(&self) -> u8 {
        2
    }

    fn next(&self, rank: u32, s: &mut KrylovState, _ctx: &Ctx) -> StreamOp {
        loop {
            let iteration = s.iter.get();
            if iteration == self.iterations {
                return StreamOp::Done;
            }
            let stages = self.stages(iteration);
            if s.stage as usize == stages.len() {
                (s.stage, s.sub) = (0, 0);
                s.iter = s.iter.next();
                return StreamOp::TimerStop { timer: T_ITER, iteration };
            }
            if s.stage == 0 && s.sub == 0 {
                s.sub = 1;
                return StreamOp::TimerStart { timer: T_ITER, iteration };
            }
            let done = Self::stage_done;
            match (stages[s.stage as usize], s.sub) {
                (Precond, _) if self.test_chunks <= 1 => {
                    done(s);
                    return StreamOp::Calc(self.precond_ps);
                }
                (Precond, _) => match self.precond_chunk(s) {
                    Some(op) => return op,
                    None => continue,
                },
                (Vector, _) => {
                    done(s);
                    return StreamOp::Calc(self.vector_ps);
                }
                (Start(dots), _) => {
                    done(s);
                    return StreamOp::CollStart(dots);
                }
                (Wait, 0 | 1) => {
                    s.sub = 2;
                    return StreamOp::TimerStart { timer: T_REDUCE, iteration };
                }
                (Wait, 2) => {
                    s.sub = 3;
                    return StreamOp::CollWait;
                }
                (Wait, _) => {
                    done(s);
                    return StreamOp::TimerStop { timer: T_REDUCE, iteration };
                }
                (Allreduce(_), 0 | 1) => {
                    (s.sub, s.driver) = (2, Driver::default());
                    return StreamOp::TimerStart { timer: T_REDUCE, iteration };
                }
                (Allreduce(dots), _) => match s.driver.next(&self.allreduce(dots), rank) {
                    Some(op) => return op,
                    None => {
                        done(s);
                        return StreamOp::TimerStop { timer: T_REDUCE, iteration };
                    }
                },
                (stage @ (Spmv | HaloPost | HaloWait), _) => {
                    if let Some(op) = self.product(rank, stage, s, iteration) {
                        return op;
                    }
                }
            }
        }
    }
}

impl Krylov {
    /// The stage is done: on to the next one's first step.
    #[inline]
    fn stage_done(s: &mut KrylovState) {
        (s.stage, s.sub, s.idx) = (s.stage + 1, u8::from(s.stage + 1 == 0), 0);
    }

    /// The preconditioner in `test_chunks` pieces, a test between two:
    /// steps 0, 2, 4…: the pieces; 1, 3, …: the tests (None: the stage is
    /// done, no op).
    #[inline]
    fn precond_chunk(&self, s: &mut KrylovState) -> Option<StreamOp> {
        let (step, n) = (s.idx as u32, self.test_chunks);
        if step == 2 * n - 1 {
            Self::stage_done(s);
            return None;
        }
        s.idx += 1;
        if step % 2 == 0 {
            let piece = self.precond_ps / n as Time;
            let last = self.precond_ps - piece * (n as Time - 1);
            return Some(StreamOp::Calc(if step / 2 + 1 == n { last } else { piece }));
        }
        Some(if self.uses_background() { StreamOp::CollTest } else { StreamOp::Test((1u64 << (2 * self.slots())) - 1) })
    }

    /// A stage of the product: post receives, then sends, compute the
    /// diagonal block, wait for the halo, compute the rest (None: on to the
    /// next step without an op).
    #[inline]
    fn product(&self, rank: u32, stage: Stage, s: &mut KrylovState, iteration: u32) -> Option<StreamOp> {
        let done = Self::stage_done;
        match (stage, s.sub) {
            (Spmv | HaloPost, 0 | 1) => {
                (s.sub, s.idx) = (2, 0);
                return Some(StreamOp::TimerStart { timer: T_SPMV, iteration });
            }
            (HaloWait, 0 | 1) => {
                s.sub = 2;
                return Some(StreamOp::Wait((1u64 << (2 * self.slots())) - 1));
            }
            (HaloWait, _) => {
                done(s);
                return Some(StreamOp::TimerStop { timer: T_SPMV, iteration });
            }
            (Spmv | HaloPost, 2 | 3) => match self.neighbour(rank, s.idx) {
                None => (s.sub, s.idx) = (s.sub + 1, 0),
                Some(None) => s.idx += 1,
                Some(Some((peer, bytes))) => {
                    let slot = s.idx + if s.sub == 2 { 0 } else { self.slots() };
                    s.idx += 1;
                    return Some(if s.sub == 2 {
                        StreamOp::IRecv { peer, tag: TAG_HALO, bytes, slot }
                    } else {
                        StreamOp::ISend { peer, tag: TAG_HALO, bytes, slot }
                    });
                }
            },
            (HaloPost, _) => done(s),
            (Spmv, 4) => {
                s.sub = 5;
                return Some(StreamOp::Calc((self.spmv_ps as f64 * self.diagonal_fraction) as Time));
            }
            (Spmv, 5) => {
                s.sub = 6;
                return Some(StreamOp::Wait((1u64 << (2 * self.slots())) - 1));
            }
            (Spmv, 6) => {
                s.sub = 7;
                return Some(StreamOp::Calc(self.spmv_ps - (self.spmv_ps as f64 * self.diagonal_fraction) as Time));
            }
            (Spmv, _) => {
                done(s);
                return Some(StreamOp::TimerStop { timer: T_SPMV, iteration });
            }
            _ => unreachable!("{stage:?} is not a stage of the product"),
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::network::{LogGOPS, Network, NicModel, Rendezvous};
    use crate::noise::Noise;
    use crate::program::stream::StreamProgram;
    use crate::record::Recorder;

    fn solver(method: Method, stencil: u8) -> Krylov {
        Krylov {
            iterations: 6,
            grid: [3, 2, 2],
            local: [10, 8, 6],
            stencil,
            method,
            algorithm: None,
            spmv_ps: 40_000_000,
            precond_ps: 30_000_000,
            vector_ps: 5_000_000,
            diagonal_fraction: 0.7,
            test_chunks: 1,
        }
    }

    fn run(k: Krylov, async_progress: bool) -> (Time, u64) {
        let p = k.ranks();
        let prog = StreamProgram::new(k, Recorder::disabled()).with_async_progress(async_progress);
        let mut e = Engine::new(prog, Network::uniform(LogGOPS::loggopsim_defaults()), Noise::none()).unwrap();
        e.run().unwrap();
        ((0..p).map(|r| e.finish_time(r)).max().unwrap(), e.events)
    }

    #[test]
    fn halo_has_faces_edges_and_corners_with_their_sizes() {
        let k = solver(Method::Pcg, 27);
        // rank 0 sits in a corner of the 3×2×2 grid: 3 faces, 3 edges, 1 corner
        let n: Vec<(u32, u64)> = (0..26).filter_map(|i| k.neighbour(0, i).unwrap()).collect();
        assert_eq!(n.len(), 7);
        assert_eq!(n.iter().filter(|x| x.1 == 8 * 8 * 6).count(), 1); // x-face: ny·nz
        assert!(n.contains(&(1 + 3 + 6, 8))); // the corner: one point
        let k7 = solver(Method::Pcg, 7);
        assert_eq!((0..26).filter_map(|i| k7.neighbour(4, i).and_then(|x| x)).count(), 4);
    }

    #[test]
    fn every_method_completes_with_its_allreduce_count() {
        for stencil in [7, 27] {
            for (method, allreduces_per_iter) in
                [(Method::Pcg, 2.0), (Method::Sapcg, 1.0), (Method::Nbpcg, 2.0), (Method::Pipecg, 1.0), (Method::Pipe2cg, 0.5)]
            {
                let k = solver(method, stencil);
                let p = k.ranks() as u64;
                let halo: u64 = (0..k.ranks()).map(|r| (0..26).filter_map(|i| k.neighbour(r, i).and_then(|x| x)).count() as u64).sum();
                let (_, events) = run(k, false);
                let per_iter_calc = match method {
                    Method::Pcg => 5,
                    Method::Sapcg => 4,
                    Method::Nbpcg => 5,
                    _ => 4,
                } as u64;
                let diss = 2 * p * 4; // ⌈log2 12⌉ = 4 rounds, each a send and a receive
                let expected = 6 * (2 * halo + p * per_iter_calc) + (6.0 * allreduces_per_iter) as u64 * diss;
                assert_eq!(events, expected, "{method:?} stencil {stencil}");
            }
        }
    }

    #[test]
    fn pipelining_hides_the_allreduces() {
        let slow_network = |m| Krylov { spmv_ps: 400_000_000, precond_ps: 300_000_000, ..solver(m, 27) };
        let pcg = run(slow_network(Method::Pcg), false).0;
        let sapcg = run(slow_network(Method::Sapcg), false).0;
        let pipecg = run(slow_network(Method::Pipecg), true).0;
        assert!(sapcg < pcg, "{sapcg} {pcg}");
        assert!(pipecg < sapcg, "{pipecg} {sapcg}");
    }

    /// The §3.1 listings: the op order of each kernel on one rank.
    #[test]
    fn kernels_follow_the_listings_of_section_3_1() {
        let ops = |method| {
            let k = Krylov { iterations: 1, precond_ps: 7, vector_ps: 9, ..solver(method, 7) };
            let mut s = KrylovState::default();
            let mut out = Vec::new();
            loop {
                match k.next(5, &mut s, &Ctx::default()) {
                    StreamOp::Done => break,
                    StreamOp::TimerStart { .. } | StreamOp::TimerStop { .. } => {}
                    StreamOp::IRecv { .. } | StreamOp::CollRecv { .. } => out.push("irecv"),
                    StreamOp::ISend { .. } | StreamOp::CollSend { .. } => out.push("isend"),
                    StreamOp::Calc(7) => out.push("busy1"),
                    StreamOp::Calc(9) => out.push("busy2"),
                    StreamOp::Wait(_) => out.push("wait"),
                    StreamOp::CollStart(_) => out.push("iallreduce"),
                    StreamOp::CollWait => out.push("collwait"),
                    op => panic!("{op:?}"),
                }
            }
            out.dedup();
            out
        };
        assert_eq!(ops(Method::HaloBlocking), ["irecv", "isend", "wait", "busy1", "busy2"]);
        assert_eq!(ops(Method::HaloNonblocking), ["irecv", "isend", "busy1", "wait", "busy2"]);
        assert_eq!(ops(Method::AllreduceNonblocking), ["iallreduce", "busy1", "collwait", "busy2"]);
        let blocking = ops(Method::AllreduceBlocking);
        assert_eq!(&blocking[blocking.len() - 2..], ["busy1", "busy2"]);
    }

    #[test]
    fn nonblocking_kernels_hide_communication_behind_the_first_busy_wait() {
        for (blocking, nonblocking) in
            [(Method::HaloBlocking, Method::HaloNonblocking), (Method::AllreduceBlocking, Method::AllreduceNonblocking)]
        {
            let k = |method| Krylov { local: [64, 64, 64], precond_ps: 200_000_000, vector_ps: 10_000_000, ..solver(method, 7) };
            let (tb, _) = run(k(blocking), true);
            let (tn, _) = run(k(nonblocking), true);
            // 6 iterations of 210 µs busy-waiting is the floor
            assert!(tn < tb && tn >= 6 * 210_000_000, "{nonblocking:?}: {tn} vs {tb}");
        }
    }

    /// Mean iteration time (ps) of the §3.1 halo kernel on a 4×4×4 grid with
    /// n×n faces of doubles, a 1 ms overlapped busy-wait (10 pieces with tests
    /// in nonblocking mode) and 0.1 ms after it.
    fn halo_kernel(n: u32, mode: KernelMode, eager_limit: u64, rendezvous: Rendezvous, nic_model: NicModel) -> Time {
        let k = KrylovKernel {
            iterations: 4,
            kernel: KernelOp::Halo,
            mode,
            overlap_ps: 1_000_000_000,
            trailing_ps: 100_000_000,
            grid: [4, 4, 4],
            local: [n, n, n],
            test_chunks: if mode == KernelMode::Nonblocking { 10 } else { 1 },
            ..Default::default()
        };
        let net = Network { rendezvous, nic_model, ..Network::uniform(LogGOPS { s_bytes: eager_limit, ..LogGOPS::loggopsim_defaults() }) };
        let mut e = Engine::new(StreamProgram::new(k.solver(), Recorder::disabled()), net, Noise::none()).unwrap();
        e.run().unwrap();
        (0..64).map(|r| e.finish_time(r)).max().unwrap() / 4
    }

    /// The Krylov paper's Fig. 3: the nonblocking halo hides its messages
    /// behind the busy-wait once they are large. LogGOPSim's NIC cannot: the
    /// receiver's CPU takes each message, so the transfer waits for the
    /// computation to end.
    #[test]
    fn a_dma_nic_lets_the_nonblocking_halo_overlap_as_in_fig_3() {
        use KernelMode::*;
        let eager = u64::MAX >> 20;
        let (r, l, d) = (Rendezvous::Loggopsim, NicModel::Loggopsim, NicModel::Dma);
        // 64×64 faces (32 KiB): 6 faces at 6 ns/byte, about 1.2 ms per rank
        let (blocking, nonblocking) = (halo_kernel(64, Blocking, eager, r, d), halo_kernel(64, Nonblocking, eager, r, d));
        assert!(nonblocking * 10 < blocking * 6, "dma: {nonblocking} vs {blocking}");
        let (blocking, nonblocking) = (halo_kernel(64, Blocking, eager, r, l), halo_kernel(64, Nonblocking, eager, r, l));
        assert!(nonblocking * 10 > blocking * 9, "loggopsim: {nonblocking} vs {blocking}");
        // small faces (16×16, 2 KiB): both hide them behind 1 ms, and both NICs agree blocking costs more
        assert!(halo_kernel(16, Nonblocking, eager, r, d) < halo_kernel(16, Blocking, eager, r, d));
    }

    /// The paper's Fig. 13: with the eager limit at 8 KiB, blocking halos of
    /// 32 KiB and more are faster sent eagerly than by rendezvous, whose
    /// handshake synchronises the pairs; at 8 KiB (eager either way) they agree.
    #[test]
    fn a_rendezvous_handshake_makes_eager_halos_faster_as_in_fig_13() {
        use KernelMode::*;
        let (eager, rdv, h, d) = (u64::MAX >> 20, 8192, Rendezvous::Handshake, NicModel::Dma);
        for n in [64u32, 128] {
            let (e, r) = (halo_kernel(n, Blocking, eager, h, d), halo_kernel(n, Blocking, rdv, h, d));
            assert!(e * 105 < r * 100, "{n}×{n} faces: eager {e} vs rendezvous {r}");
        }
        assert_eq!(halo_kernel(32, Blocking, eager, h, d), halo_kernel(32, Blocking, rdv, h, d));
        // LogGOPSim's rendezvous has no handshake: it does not slow the halo
        let lr = Rendezvous::Loggopsim;
        assert!(halo_kernel(64, Blocking, rdv, lr, d) <= halo_kernel(64, Blocking, eager, lr, d));
    }
}
