//! The noise paper's applications (Widener et al., "Exploring the effect of
//! noise on the performance benefit of nonblocking allreduce") as iteration
//! skeletons with what the applications have: halo exchanges on a process
//! grid, allreduces (blocking or the paper's idealized nonblocking one) at
//! each application's frequency, and AMG's allgather.
//!
//! The paper gives, per application, only the computation-to-communication
//! ratio β on 1,024 nodes (Table 1) and which calls dominate communication
//! (Fig. 2, §2.4). The rest is ours, stated per profile below from the
//! applications' published algorithms: the grid, the messages, how many
//! halo exchanges and allreduces an iteration has. The computation per
//! iteration W is then set so that, noiseless and blocking on the run's
//! network, the application spends β times as long computing as
//! communicating at 1,024 ranks, as Table 1 measured; W stays the same at
//! every scale (weak scaling, as the paper's runs).

use super::registry::{Shape, Visited, WorkloadError, WorkloadKind, WorkloadVisitor};
use super::{CollectiveMode, TAG_COLLECTIVE, TAG_HALO};
use crate::collectives::{auto_algorithm, AutoAlgorithm};
use crate::collectives::{Algorithm, Collective, CollectiveKind};
use crate::engine::Engine;
use crate::network::Network;
use crate::noise::Noise;
use crate::program::driver::{Driver, Packed32};
use crate::program::stream::{Ctx, StreamOp, StreamProgram, Workload};
use crate::record::Recorder;
use crate::rule::RuleError;
use crate::time::Time;
use crate::units::Ranks;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// What one application does per iteration (our reading of the
/// application; the paper gives only `beta` and Fig. 2's shares).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    pub name: &'static str,
    /// Table 1: computation-to-communication ratio on 1,024 nodes.
    pub beta: f64,
    /// Decomposed dimensions: 1 (slabs along z) or 3.
    pub dims: u8,
    /// Exchange with all 3^d − 1 neighbours (faces, edges, corners), or faces only.
    pub all_neighbours: bool,
    /// Wrap around at the grid's ends.
    pub periodic: bool,
    /// Local subdomain edge (points) and bytes per point: a face message
    /// carries edge² points, an edge message edge points, a corner one.
    pub edge: u32,
    pub bytes_per_point: u64,
    /// Halo exchanges per iteration.
    pub halos: u8,
    /// Allreduces (8 bytes) per allreduce step, and iterations between steps.
    pub allreduces: u8,
    pub allreduce_every: u32,
    /// Allgathers per iteration and the bytes each rank contributes.
    pub allgathers: u8,
    pub allgather_bytes: u64,
}

/// The six applications of the paper (Table 1's β; the structure from each
/// application's algorithm, see the "noise paper's applications" table in docs/workloads.md).
pub const PROFILES: [Profile; 6] = [
    // V-cycle: halo exchanges on each level, a residual norm, and the
    // coarse levels' allgather (Fig. 2: the only other collective that matters).
    Profile {
        name: "AMG2006",
        beta: 1.59,
        dims: 3,
        all_neighbours: true,
        periodic: false,
        edge: 32,
        bytes_per_point: 8,
        halos: 4,
        allreduces: 1,
        allreduce_every: 1,
        allgathers: 1,
        allgather_bytes: 8,
    },
    // Shock physics: several face exchanges of many fields per cycle, one
    // allreduce for the time step (Fig. 2: under 30% of communication).
    Profile {
        name: "CTH",
        beta: 1.25,
        dims: 3,
        all_neighbours: false,
        periodic: false,
        edge: 48,
        bytes_per_point: 40,
        halos: 2,
        allreduces: 1,
        allreduce_every: 1,
        allgathers: 0,
        allgather_bytes: 0,
    },
    // CG on slabs along z (HPCCG's decomposition): one halo for the
    // product, two dot products (Fig. 2: over 80% in allreduce).
    Profile {
        name: "HPCCG",
        beta: 95.15,
        dims: 1,
        all_neighbours: false,
        periodic: false,
        edge: 100,
        bytes_per_point: 8,
        halos: 1,
        allreduces: 2,
        allreduce_every: 1,
        allgathers: 0,
        allgather_bytes: 0,
    },
    // Molecular dynamics: forward and reverse ghost communication each
    // step on a periodic box, an allreduce only when re-neighbouring
    // (every 20 steps in the LJ benchmark): "infrequent use" (§4.2).
    Profile {
        name: "LAMMPS",
        beta: 37.46,
        dims: 3,
        all_neighbours: false,
        periodic: true,
        edge: 20,
        bytes_per_point: 24,
        halos: 2,
        allreduces: 1,
        allreduce_every: 20,
        allgathers: 0,
        allgather_bytes: 0,
    },
    // Hydrodynamics on a 3-D cube: three exchanges with all 26 neighbours
    // (nodal positions/velocities, forces, gradients) and the time-step
    // minimum per step.
    Profile {
        name: "LULESH",
        beta: 4.37,
        dims: 3,
        all_neighbours: true,
        periodic: false,
        edge: 30,
        bytes_per_point: 24,
        halos: 3,
        allreduces: 1,
        allreduce_every: 1,
        allgathers: 0,
        allgather_bytes: 0,
    },
    // CG on a 3-D decomposition with a 27-point operator: one halo with
    // all 26 neighbours, two dot products per iteration.
    Profile {
        name: "miniFE",
        beta: 10.31,
        dims: 3,
        all_neighbours: true,
        periodic: false,
        edge: 100,
        bytes_per_point: 8,
        halos: 1,
        allreduces: 2,
        allreduce_every: 1,
        allgathers: 0,
        allgather_bytes: 0,
    },
];

/// Table 1 measured β on this many nodes.
pub const CALIBRATION_RANKS: u32 = 1024;

/// A noise-paper application: halo exchanges, allreduces (blocking or idealized) and AMG's allgather, compute set from Table 1's beta.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct App {
    #[schemars(with = "Ranks")]
    pub ranks: u32,
    pub iterations: u32,
    /// One of the paper's applications.
    #[schemars(with = "ProfileName")]
    pub app: String,
    /// The allreduces: "blocking", or "ideal" (the paper's idealized
    /// nonblocking allreduce: done the moment it is reached, free).
    /// Halos and allgathers stay blocking.
    pub mode: CollectiveMode,
    /// Allreduce algorithm; "auto" is the paper's dissemination
    /// (LogGOPSim's, §2.1). AMG's allgather is Bruck's.
    #[serde(with = "auto_algorithm")]
    #[schemars(with = "AutoAlgorithm")]
    pub algorithm: Option<Algorithm>,
}

impl Default for App {
    fn default() -> Self {
        App { ranks: 64, iterations: 100, app: "HPCCG".into(), mode: CollectiveMode::Blocking, algorithm: None }
    }
}

/// Schema of `app`: one of the profiles.
struct ProfileName;
impl JsonSchema for ProfileName {
    fn schema_name() -> Cow<'static, str> {
        "AppProfile".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
        json_schema!({"type": "string", "enum": names})
    }
}

/// The loop `App` runs, with its computation resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct AppLoop {
    pub profile: Profile,
    pub ranks: u32,
    pub iterations: u32,
    pub mode: CollectiveMode,
    pub algorithm: Algorithm,
    /// Process grid x × y × z (= ranks).
    pub grid: [u32; 3],
    /// Computation per iteration, split evenly after each communication step.
    pub compute_ps: Time,
}

impl App {
    pub fn profile(&self) -> Result<Profile, RuleError> {
        PROFILES.iter().find(|p| p.name == self.app).copied().ok_or_else(|| {
            let names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
            RuleError::new("workload.app", format!("must be one of {}; got {:?}", names.join(", "), self.app))
        })
    }

    pub fn validate(&self) -> Result<(), RuleError> {
        self.program_with(0).map(|_| ())
    }

    fn program_with(&self, compute_ps: Time) -> Result<AppLoop, RuleError> {
        let profile = self.profile()?;
        if self.mode == CollectiveMode::Nonblocking {
            return Err(RuleError::new("workload.mode", "\"blocking\" or \"ideal\" (the paper's idealized nonblocking allreduce)"));
        }
        if self.ranks < 2 {
            return Err(RuleError::new("workload.ranks", format!("at least 2, got {}", self.ranks)));
        }
        let grid = match profile.dims {
            1 => [1, 1, self.ranks],
            _ => {
                let d = crate::trace::grid::dims_create(self.ranks, 3);
                [d[2], d[1], d[0]]
            }
        };
        let w = AppLoop {
            profile,
            ranks: self.ranks,
            iterations: self.iterations,
            mode: self.mode,
            algorithm: self.algorithm(),
            grid,
            compute_ps,
        };
        w.collective(CollectiveKind::Allreduce).validate()?;
        if profile.allgathers > 0 {
            w.collective(CollectiveKind::Allgather).validate()?;
        }
        Ok(w)
    }

    fn algorithm(&self) -> Algorithm {
        self.algorithm.unwrap_or(Algorithm::Dissemination)
    }

    /// Noiseless, blocking communication time per iteration at 1,024 ranks
    /// (no computation): c of Table 1's β = W / c.
    pub fn communication_time(&self, net: &Network) -> Result<Time, WorkloadError> {
        let profile = self.profile()?;
        let calib = App { ranks: CALIBRATION_RANKS, iterations: profile.allreduce_every, mode: CollectiveMode::Blocking, ..self.clone() };
        let once = calib.program_with(0)?;
        let mut e =
            Engine::new(StreamProgram::new(once, Recorder::disabled()), net.clone(), Noise::none()).map_err(WorkloadError::Calibration)?;
        e.run().map_err(WorkloadError::Calibration)?;
        let total = (0..CALIBRATION_RANKS).map(|r| e.finish_time(r)).max().unwrap_or(0);
        Ok(total / profile.allreduce_every as Time)
    }

    /// The loop to run (W = β·c), with W and c.
    pub fn program(&self, net: &Network) -> Result<(AppLoop, Time, Time), WorkloadError> {
        let c = self.communication_time(net)?;
        let w = (self.profile()?.beta * c as f64).round() as Time;
        Ok((self.program_with(w)?, w, c))
    }
}

impl WorkloadKind for App {
    fn shape(&self) -> Shape {
        Shape::ranks(self.ranks)
    }

    fn check(&self, _: u32, _: bool) -> Result<(), RuleError> {
        self.validate()
    }

    fn in_flight_bytes_per_rank(&self) -> u128 {
        // neighbours: 2 of a slab, 6 faces or all 26 of a 3-D block
        let neighbours = self.profile().map_or(26, |p| match (p.dims, p.all_neighbours) {
            (1, _) => 2,
            (_, false) => 6,
            (_, true) => 26,
        });
        85 + 25 * neighbours
    }

    /// The loop with its computation derived from the communication's time on `net`.
    fn prepare<V: WorkloadVisitor>(&self, net: &Network, v: V) -> Result<Visited<V::Out>, WorkloadError> {
        let (w, compute, communication) = self.program(net)?;
        let derived = vec![
            ("compute_per_iteration_s".into(), crate::time::to_seconds(compute)),
            ("communication_per_iteration_s".into(), crate::time::to_seconds(communication)),
        ];
        Ok(Some((v.visit(w), derived)))
    }

    fn calibration_ranks(&self) -> Option<u32> {
        Some(self.ranks)
    }
}

/// Where a rank is in an iteration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(u8)]
enum Phase {
    #[default]
    Start,
    /// Halo `step`: post receives (idx < n), sends, then wait.
    Halo,
    /// Allreduce `step` (with its timer around it).
    Allreduce,
    Allgather,
    /// The computation after communication step `step`.
    Compute,
    Stop,
}

/// Per-rank cursor (14 bytes).
#[derive(Debug, Clone, Copy, Default)]
pub struct AppState {
    iter: Packed32,
    driver: Driver,
    phase: Phase,
    /// Communication step within the iteration (halos, allreduces, allgathers).
    step: u8,
    /// Message index within a halo (receives, then sends, then the wait).
    idx: u8,
    timing: bool,
}

const T_ITER: u8 = 0;
const T_ALLREDUCE: u8 = 1;

impl AppLoop {
    fn collective(&self, kind: CollectiveKind) -> Collective {
        // the allgather is Bruck's, the dissemination allgather (the paper
        // calls both of its collectives dissemination-based, §4.3)
        let (bytes, algorithm) = match kind {
            CollectiveKind::Allgather => (self.profile.allgather_bytes, Algorithm::Bruck),
            _ => (8, self.algorithm),
        };
        Collective {
            kind,
            algorithm,
            ranks: self.ranks,
            root: 0,
            bytes,
            chunk_bytes: 0,
            comm: crate::collectives::Comm::World,
            tag: TAG_COLLECTIVE,
        }
    }

    fn neighbours(&self) -> u8 {
        match (self.profile.dims, self.profile.all_neighbours) {
            (1, _) => 2,
            (_, false) => 6,
            (_, true) => 26,
        }
    }

    /// Neighbour k of `rank` and its message size; None where the grid ends.
    fn neighbour(&self, rank: u32, k: u8) -> Option<(u32, u64)> {
        let d = if self.profile.dims == 1 { [[0, 0, -1], [0, 0, 1]][k as usize] } else { super::krylov::OFFSETS[k as usize] };
        let [px, py, pz] = self.grid.map(|g| g as i64);
        let r = rank as i64;
        let c = [r % px, (r / px) % py, r / (px * py)];
        let mut q = [0i64; 3];
        for i in 0..3 {
            let n = [px, py, pz][i];
            q[i] = c[i] + d[i] as i64;
            if q[i] < 0 || q[i] >= n {
                if !self.profile.periodic || n == 1 {
                    return None;
                }
                q[i] = q[i].rem_euclid(n);
            }
        }
        // a face carries a plane of points, an edge a line, a corner one point
        let points = (self.profile.edge as u64).pow(d.iter().filter(|&&x| x == 0).count() as u32);
        Some(((q[0] + px * (q[1] + py * q[2])) as u32, points * self.profile.bytes_per_point))
    }

    /// Whether iteration `i` has its allreduce step.
    fn reduces(&self, i: u32) -> bool {
        (i + 1).is_multiple_of(self.profile.allreduce_every)
    }

    /// Communication steps of iteration `i`: halos, then allreduces, then allgathers.
    fn steps(&self, i: u32) -> u8 {
        self.profile.halos + if self.reduces(i) { self.profile.allreduces } else { 0 } + self.profile.allgathers
    }

    /// The computation after each step: W spread over the iteration's
    /// steps on average (an iteration without its allreduce step computes
    /// what it would have computed after it too).
    fn piece(&self, i: u32, step: u8) -> Time {
        let p = &self.profile;
        let mean_steps = p.halos as f64 + p.allreduces as f64 / p.allreduce_every as f64 + p.allgathers as f64;
        let piece = (self.compute_ps as f64 / mean_steps).round() as Time;
        let skipped = if self.reduces(i) { 0 } else { p.allreduces as Time };
        if step + 1 == self.steps(i) {
            piece * (1 + skipped)
        } else {
            piece
        }
    }

    fn kind_of(&self, i: u32, step: u8) -> Phase {
        let reduces = if self.reduces(i) { self.profile.allreduces } else { 0 };
        if step < self.profile.halos {
            Phase::Halo
        } else if step < self.profile.halos + reduces {
            Phase::Allreduce
        } else {
            Phase::Allgather
        }
    }
}

impl Workload for AppLoop {
    type State = AppState;

    fn num_ranks(&self) -> u32 {
        self.ranks
    }
    fn iterations(&self) -> u32 {
        self.iterations
    }
    fn timer_names(&self) -> Vec<String> {
        vec!["iteration".into(), "allreduce".into()]
    }

    fn next(&self, rank: u32, s: &mut AppState, _ctx: &Ctx) -> StreamOp {
        let n = self.neighbours();
        loop {
            let i = s.iter.get();
            match s.phase {
                Phase::Start if i == self.iterations => return StreamOp::Done,
                Phase::Start => {
                    (s.phase, s.step, s.idx) = (self.kind_of(i, 0), 0, 0);
                    return StreamOp::TimerStart { timer: T_ITER, iteration: i };
                }
                Phase::Halo if s.idx < 2 * n => {
                    let k = s.idx % n;
                    let recv = s.idx < n;
                    s.idx += 1;
                    if let Some((peer, bytes)) = self.neighbour(rank, k) {
                        let slot = if recv { k } else { n + k };
                        return if recv {
                            StreamOp::IRecv { peer, tag: TAG_HALO, bytes, slot }
                        } else {
                            StreamOp::ISend { peer, tag: TAG_HALO, bytes, slot }
                        };
                    }
                }
                Phase::Halo => {
                    s.phase = Phase::Compute;
                    return StreamOp::Wait((1u64 << (2 * n)) - 1);
                }
                Phase::Allreduce if self.mode == CollectiveMode::Ideal => s.phase = Phase::Compute,
                Phase::Allreduce if !s.timing => {
                    (s.timing, s.driver) = (true, Driver::default());
                    return StreamOp::TimerStart { timer: T_ALLREDUCE, iteration: i };
                }
                Phase::Allreduce => match s.driver.next(&self.collective(CollectiveKind::Allreduce), rank) {
                    Some(op) => return op,
                    None => {
                        (s.timing, s.phase) = (false, Phase::Compute);
                        return StreamOp::TimerStop { timer: T_ALLREDUCE, iteration: i };
                    }
                },
                Phase::Allgather => match s.driver.next(&self.collective(CollectiveKind::Allgather), rank) {
                    Some(op) => return op,
                    None => s.phase = Phase::Compute,
                },
                Phase::Compute => {
                    let piece = self.piece(i, s.step);
                    s.step += 1;
                    s.idx = 0;
                    s.driver = Driver::default();
                    s.phase = if s.step == self.steps(i) { Phase::Stop } else { self.kind_of(i, s.step) };
                    if piece > 0 {
                        return StreamOp::Calc(piece);
                    }
                }
                Phase::Stop => {
                    (s.phase, s.iter) = (Phase::Start, Packed32::new(i + 1));
                    return StreamOp::TimerStop { timer: T_ITER, iteration: i };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::LogGOPS;
    use crate::program::stream::StreamProgram;

    fn app(name: &str, ranks: u32, mode: CollectiveMode) -> App {
        App { ranks, iterations: 20, app: name.into(), mode, algorithm: None }
    }

    /// Runs `w` without noise; the makespan and the engine's event count.
    fn run(w: AppLoop, net: &Network) -> (Time, u64) {
        let p = w.ranks;
        let mut e = Engine::new(StreamProgram::new(w, Recorder::disabled()), net.clone(), Noise::none()).unwrap();
        e.run().unwrap();
        ((0..p).map(|r| e.finish_time(r)).max().unwrap(), e.events)
    }

    #[test]
    fn halo_messages_follow_the_grid_faces_edges_and_corners() {
        let (w, _, _) = app("LULESH", 27, CollectiveMode::Blocking).program(&Network::uniform(LogGOPS::LOGGOPSIM)).unwrap();
        assert_eq!(w.grid, [3, 3, 3]);
        let sizes = |r: u32| (0..26).filter_map(|k| w.neighbour(r, k)).map(|(_, b)| b).collect::<Vec<_>>();
        // the centre rank has all 26: 6 faces of 30² points, 12 edges of 30, 8 corners of 1 (24 B each)
        let centre = sizes(13);
        assert_eq!(centre.len(), 26);
        assert_eq!(centre.iter().filter(|&&b| b == 900 * 24).count(), 6);
        assert_eq!(centre.iter().filter(|&&b| b == 30 * 24).count(), 12);
        assert_eq!(centre.iter().filter(|&&b| b == 24).count(), 8);
        // a corner rank of an open grid: 3 faces, 3 edges, 1 corner
        assert_eq!(sizes(0).len(), 7);
        // HPCCG: slabs along z, open ends: two neighbours inside, one at the ends
        let h = app("HPCCG", 8, CollectiveMode::Blocking).program_with(0).unwrap();
        assert_eq!(h.grid, [1, 1, 8]);
        assert_eq!((0..2).filter_map(|k| h.neighbour(3, k)).map(|(p, _)| p).collect::<Vec<_>>(), vec![2, 4]);
        assert_eq!((0..2).filter_map(|k| h.neighbour(0, k)).count(), 1);
        // LAMMPS wraps around: every rank has 6 face neighbours
        let l = app("LAMMPS", 64, CollectiveMode::Blocking).program_with(0).unwrap();
        assert!((0..64).all(|r| (0..6).filter_map(|k| l.neighbour(r, k)).count() == 6));
    }

    #[test]
    fn events_count_every_message_and_allreduce_at_the_apps_frequency() {
        // 8 ranks on a 2×2×2 grid, faces only (CTH): each rank has 3 face
        // neighbours; per iteration 2 halos, 1 dissemination allreduce
        // (3 rounds of a send and a receive), 3 computations
        let net = Network::uniform(LogGOPS::LOGGOPSIM);
        let w = App { iterations: 5, ..app("CTH", 8, CollectiveMode::Blocking) }.program_with(1000).unwrap();
        let per_rank_iteration = 2 * 3 * 2 + 3 * 2 + 3;
        assert_eq!(run(w, &net).1, 8 * 5 * per_rank_iteration);
        // LAMMPS reduces every 20 steps: 40 steps on 8 ranks hold 2 allreduces
        let w = App { iterations: 40, ..app("LAMMPS", 8, CollectiveMode::Blocking) }.program_with(1000).unwrap();
        let halos = 40 * 2 * 6 * 2; // periodic 2×2×2: 6 faces (pairs of the same peer)
        let computes = 40 * 2 + 2; // two halos a step, the reducing steps one more
        assert_eq!(run(w, &net).1, 8 * (halos + 2 * 3 * 2 + computes));
    }

    #[test]
    fn ideal_allreduce_speedup_stays_under_equation_4() {
        // Noiseless: removing the allreduces saves at most their share of
        // the time, so T/T̂ ≤ (1+β)/β (Eq. 4) — less here, since halos stay.
        let net = Network::uniform(LogGOPS::LOGGOPSIM);
        for p in PROFILES {
            let ranks = 64;
            let (blocking, w, c) = app(p.name, ranks, CollectiveMode::Blocking).program(&net).unwrap();
            assert_eq!(w, (p.beta * c as f64).round() as Time);
            let ideal = AppLoop { mode: CollectiveMode::Ideal, ..blocking.clone() };
            let (tb, ti) = (run(blocking, &net).0 as f64, run(ideal, &net).0 as f64);
            let bound = (1.0 + p.beta) / p.beta;
            assert!(tb / ti <= bound, "{}: {} > {bound}", p.name, tb / ti);
        }
    }
}
