//! The engine benchmark behind `idlewave bench`: events per second and heap
//! bytes per rank on fixed cases. An event is one completed operation (a
//! send, a receive or a computation), so figures compare across simulators.

use crate::collectives::CollectiveKind;
use crate::engine::SimError;
use crate::network::{LogGOPS, Network};
use crate::noise::NoiseSpec;
use crate::sim::{run, Config, WorkloadSpec};
use crate::workloads::{Bsp, CollectiveLoop, CollectiveMode};

pub struct BenchResult {
    pub case: String,
    pub ranks: u32,
    pub events: u64,
    pub wall_s: f64,
    pub events_per_s: f64,
    pub bytes_per_rank: f64,
    /// Case-specific figures (name, value).
    pub extra: Vec<(&'static str, f64)>,
}

impl BenchResult {
    fn of(case: &str, ranks: u32, r: &crate::sim::RunResult, extra: Vec<(&'static str, f64)>) -> Self {
        BenchResult {
            case: case.to_string(),
            ranks,
            events: r.events,
            wall_s: r.wall_s,
            events_per_s: r.events as f64 / r.wall_s.max(1e-9),
            bytes_per_rank: r.peak_bytes as f64 / ranks as f64,
            extra,
        }
    }
}

pub const CASES: [&str; 25] = [
    "bcast_1m",
    "allreduce_4k_x100",
    "allreduce_4k_x100+tree",
    "allreduce_4k_x100+flow",
    "allreduce_64k_x10",
    "allreduce_64k_x10+tree",
    "allreduce_64k_x10+flow",
    "bsp_64k_x100_poisson",
    "bsp_16k_x400_poisson",
    "bsp_128k_x50_poisson",
    "bsp_1m_x6_poisson",
    "bsp_4k_x400",
    "bsp_4k_x400+tree",
    "bsp_4k_x400+flow",
    "bsp_64k_x100",
    "bsp_64k_x100+tree",
    "bsp_64k_x100+flow",
    "allreduce_1m",
    "trace_replay_10m",
    "goal_bcast_1m",
    "goal_bcast_1m_binary",
    "grid_trace_1m",
    "grid3d_trace_1m",
    "allreduce_64k_x10+explain",
    "bsp_64k_x100_poisson+explain",
];

/// Other cases, run only by name (`idlewave bench --case NAME`, `cargo
/// bench -- NAME`): small enough to profile under callgrind (a few
/// milliseconds at 4 Ki ranks), BSP without noise at the sizes of the noise
/// cases, or, at 256 Ki ranks, beyond the caches in a minute.
pub const SMALLER_CASES: [&str; 9] = [
    "allreduce_4k",
    "bsp_4k_x20",
    "bsp_4k_x20_poisson",
    "bsp_16k_x400",
    "bsp_1m_x6",
    "grid_trace_64k",
    "grid3d_trace_64k",
    "grid3d_trace_256k",
    "goal_bcast_64k",
];

/// A case name with this suffix runs the case with the critical path kept.
const EXPLAIN: &str = "+explain";
/// This one on a 2:1 tapered fat tree of radix 36 whose links are shared
/// (`network.links.model = "flow"`), each link as fast as a NIC (1/G).
const FLOW: &str = "+flow";
/// The same fat tree with its links not shared: what the flows cost is the
/// difference between the two.
const TREE: &str = "+tree";

/// The fat tree of the `+flow` and `+tree` cases, for `ranks` ranks.
fn fat_tree(ranks: u32, model: crate::network::LinkModelKind) -> Result<Network, SimError> {
    use crate::network::spec::{NetworkSpec, Shape};
    use crate::network::{LinksSpec, Topology};
    let nic_bytes_per_s = 1e12 / LogGOPS::LOGGOPSIM.big_g_ps;
    let spec = NetworkSpec {
        topology: Topology::FatTree { radix: 36 },
        links: LinksSpec { model, bandwidth_bytes_per_s: nic_bytes_per_s, taper: 2.0, ..Default::default() },
        ..Default::default()
    };
    Ok(spec.engine_network(&Shape::ranks(ranks), 1, None)?)
}

/// The cases' algorithms are fixed (binomial broadcast, dissemination
/// allreduce), so the figures do not move when `auto` changes.
fn collective(ranks: u32, iterations: u32, collective: CollectiveKind) -> WorkloadSpec {
    let algorithm = Some(collective.default_algorithm());
    WorkloadSpec::Collective(CollectiveLoop {
        ranks,
        iterations,
        collective,
        algorithm,
        mode: CollectiveMode::Blocking,
        ..Default::default()
    })
}

impl Config {
    fn workload_and_noise(self) -> (WorkloadSpec, Vec<NoiseSpec>) {
        (self.workload, self.noise)
    }
}

pub fn config(case: &str) -> Option<Config> {
    let (workload, noise) = match case {
        "bcast_1m" => (collective(1 << 20, 1, CollectiveKind::Bcast), vec![]),
        "allreduce_64k_x10" => (collective(1 << 16, 10, CollectiveKind::Allreduce), vec![]),
        "allreduce_1m" => (collective(1 << 20, 1, CollectiveKind::Allreduce), vec![]),
        "allreduce_4k" => (collective(1 << 12, 10, CollectiveKind::Allreduce), vec![]),
        // what shared links cost where the ranks' state fits in the caches (9.8 M events)
        "allreduce_4k_x100" => (collective(1 << 12, 100, CollectiveKind::Allreduce), vec![]),
        "bsp_4k_x20_poisson" => {
            // (c) small enough to profile under callgrind
            let (w, n) = config("bsp_64k_x100_poisson")?.workload_and_noise();
            let WorkloadSpec::Bsp(b) = w else { unreachable!() };
            (WorkloadSpec::Bsp(Bsp { ranks: 1 << 12, iterations: 20, ..b }), n)
        }
        // (c) at three sizes, each with about (c)'s 32.8 M events: noise's cost per event against the ranks
        "bsp_16k_x400_poisson" | "bsp_128k_x50_poisson" | "bsp_1m_x6_poisson" => {
            let (w, n) = config("bsp_64k_x100_poisson")?.workload_and_noise();
            let WorkloadSpec::Bsp(b) = w else { unreachable!() };
            let (ranks, iterations) = match case {
                "bsp_16k_x400_poisson" => (1 << 14, 400),
                "bsp_128k_x50_poisson" => (1 << 17, 50),
                _ => (1 << 20, 6),
            };
            (WorkloadSpec::Bsp(Bsp { ranks, iterations, ..b }), n)
        }
        "bsp_64k_x10_poisson" => {
            let (w, n) = config("bsp_64k_x100_poisson")?.workload_and_noise();
            let WorkloadSpec::Bsp(b) = w else { unreachable!() };
            (WorkloadSpec::Bsp(Bsp { iterations: 10, ..b }), n)
        }
        "bsp_1m_x6" | "bsp_16k_x400" => {
            let (w, _) = config(&format!("{case}_poisson"))?.workload_and_noise();
            (w, vec![])
        }
        "bsp_4k_x20" => {
            let (w, _) = config("bsp_4k_x20_poisson")?.workload_and_noise();
            (w, vec![])
        }
        "bsp_4k_x400" => {
            // as allreduce_4k_x100, for the halo exchange (8.2 M events)
            let (w, _) = config("bsp_4k_x20_poisson")?.workload_and_noise();
            let WorkloadSpec::Bsp(b) = w else { unreachable!() };
            (WorkloadSpec::Bsp(Bsp { iterations: 400, ..b }), vec![])
        }
        "bsp_64k_x100" => {
            // (c) without its noise: what the noise costs
            let (w, _) = config("bsp_64k_x100_poisson")?.workload_and_noise();
            (w, vec![])
        }
        "bsp_64k_x100_poisson" => (
            WorkloadSpec::Bsp(Bsp {
                ranks: 1 << 16,
                iterations: 100,
                compute_ps: 100_000_000, // 100 µs
                distances: vec![1],
                message_bytes: 8192,
                periodic: true,
                barrier: false,
                compute_bytes: 0,
            }),
            // 1 kHz of 25 µs detours
            vec![NoiseSpec::Poisson { rate_per_s: 1000.0, duration_ps: 25_000_000, ranks: None }],
        ),
        _ => return None,
    };
    Some(Config {
        seed: 1,
        network: Network::uniform(LogGOPS::loggopsim_defaults()),
        noise,
        workload,
        jobs: Vec::new(),
        record_timers: false,
        async_progress: false,
        max_memory_bytes: None,
        timeline_spans: 0,
        computation_spans: 0,
        explain: false,
        network_once_read: None,
    })
}

/// Why a benchmark case did not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("unknown bench case '{0}' (known: {known}; by name only: {smaller})", known = CASES.join(", "), smaller = SMALLER_CASES.join(", "))]
    UnknownCase(String),
    /// Writing or reading the case's input (a trace directory, a GOAL file).
    #[error("{}: {source}", path.display())]
    Io { path: std::path::PathBuf, source: std::io::Error },
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
    #[error(transparent)]
    Goal(#[from] crate::program::goal::GoalError),
    #[error(transparent)]
    NoGoalForm(#[from] crate::program::stream::NoGoalForm),
}

fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> BenchError + '_ {
    move |source| BenchError::Io { path: path.to_path_buf(), source }
}

pub fn run_case(case: &str) -> Result<BenchResult, BenchError> {
    if case == "trace_replay_10m" {
        return trace_case(10_000_000);
    }
    if case == "goal_bcast_1m" {
        return goal_case(case, 1 << 20, false);
    }
    if case == "goal_bcast_1m_binary" {
        return goal_case(case, 1 << 20, true);
    }
    if case == "grid_trace_1m" {
        return grid_case(case, 1 << 20, crate::trace::write_synthetic_grid);
    }
    if case == "grid_trace_64k" {
        return grid_case(case, 1 << 16, crate::trace::write_synthetic_grid); // small enough to profile under callgrind
    }
    if case == "grid3d_trace_1m" {
        return grid_case(case, 1 << 20, crate::trace::write_synthetic_grid3d);
    }
    if case == "grid3d_trace_64k" {
        return grid_case(case, 1 << 16, crate::trace::write_synthetic_grid3d);
    }
    if case == "grid3d_trace_256k" {
        return grid_case(case, 1 << 18, crate::trace::write_synthetic_grid3d); // beyond the caches, in a minute
    }
    if case == "goal_bcast_64k" {
        return goal_case(case, 1 << 16, false); // small enough to profile under callgrind
    }
    let (name, explain) = match case.strip_suffix(EXPLAIN) {
        Some(name) => (name, true),
        None => (case, false),
    };
    use crate::network::LinkModelKind;
    let (name, links) = match (name.strip_suffix(FLOW), name.strip_suffix(TREE)) {
        (Some(name), _) => (name, Some(LinkModelKind::Flow)),
        (_, Some(name)) => (name, Some(LinkModelKind::None)),
        _ => (name, None),
    };
    let mut cfg = config(name).ok_or_else(|| BenchError::UnknownCase(case.into()))?;
    cfg.explain = explain;
    if let Some(model) = links {
        cfg.network = fat_tree(cfg.workload.shape().ranks.unwrap_or(1), model)?;
    }
    let cpu = thread_cpu();
    let r = run(&cfg, None)?;
    Ok(BenchResult::of(case, r.ranks, &r, cpu_figures(r.events, cpu)))
}

/// The rate on CPU time since `before` (setup included; steadier than wall
/// time on shared machines), and the kernel's share of that time in percent
/// (page faults: docs/performance.md, "The kernel's share").
fn cpu_figures(events: u64, before: (f64, f64)) -> Vec<(&'static str, f64)> {
    let (user, system) = thread_cpu();
    let (user, system) = (user - before.0, system - before.1);
    let cpu_s = user + system;
    vec![("events_per_cpu_s", events as f64 / cpu_s.max(1e-9)), ("kernel_cpu_pct", 100.0 * system / cpu_s.max(1e-9))]
}

/// A Cartesian trace (`write_synthetic_grid`'s 3×3 halo exchange, or
/// `write_synthetic_grid3d`'s 3-D code; 3 iterations) extrapolated to
/// `ranks` on MPI_Dims_create's grid, generated lazily.
fn grid_case(case: &str, ranks: u32, write: fn(&std::path::Path, u64) -> std::io::Result<()>) -> Result<BenchResult, BenchError> {
    use crate::trace::TraceSpec;
    let dir = std::env::temp_dir().join(format!("idlewave-bench-{case}-{}", std::process::id()));
    write(&dir, 3).map_err(io(&dir))?;
    let spec = TraceSpec {
        dir: dir.display().to_string(),
        algorithms: Default::default(),
        compute_scale: 1.0,
        scale_to: Some(ranks),
        grid: None,
        strong: false,
        by_call: false,
        library: None,
    };
    let mut cfg = config("bcast_1m").expect("a known case");
    cfg.workload = WorkloadSpec::Trace(spec);
    let cpu = thread_cpu();
    let r = run(&cfg, None);
    let figures = r.as_ref().map(|r| cpu_figures(r.events, cpu)).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    let r = r?;
    Ok(BenchResult::of(case, r.ranks, &r, figures))
}

/// CPU seconds of this thread so far (Linux; 0 where unknown), steadier than
/// wall time on shared machines.
pub fn thread_cpu_s() -> f64 {
    let (user, system) = thread_cpu();
    user + system
}

/// This thread's CPU seconds so far in user and in kernel mode (Linux; 0 where unknown).
fn thread_cpu() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/thread-self/stat") else { return (0.0, 0.0) };
    // fields after the command name (which may contain spaces): utime and stime are 14 and 15
    let rest = stat.rsplit_once(')').map_or("", |x| x.1);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) / 100.0, ticks(12) / 100.0)
}

/// A synthetic trace of about `records` records (16 ranks in a ring with
/// polls and allreduces): conversion alone (streamed into a discarded GOAL
/// file) and the whole replay, with records/s and peak heap memory.
fn trace_case(records: u64) -> Result<BenchResult, BenchError> {
    use crate::trace::{export_goal, write_synthetic, TraceSpec};
    let ranks = 16u32;
    let iterations = records / (6 * ranks as u64);
    let dir = std::env::temp_dir().join(format!("idlewave-bench-trace-{}", std::process::id()));
    write_synthetic(&dir, ranks, iterations).map_err(io(&dir))?;
    let total = ranks as u64 * (iterations * 6 + 2);
    let spec = TraceSpec {
        dir: dir.display().to_string(),
        algorithms: Default::default(),
        compute_scale: 1.0,
        scale_to: None,
        grid: None,
        strong: false,
        by_call: false,
        library: None,
    };
    let result = (|| {
        crate::alloc::reset_peak();
        let base = crate::alloc::live_bytes();
        let (wall, cpu) = (std::time::Instant::now(), thread_cpu_s());
        export_goal(&spec, &mut std::io::sink())?;
        let (convert_s, convert_cpu_s) = (wall.elapsed().as_secs_f64(), thread_cpu_s() - cpu);
        let convert_peak = crate::alloc::peak_bytes().saturating_sub(base);
        let mut cfg = config("bcast_1m").expect("a known case");
        cfg.workload = WorkloadSpec::Trace(spec.clone());
        let cpu = thread_cpu_s();
        let r = run(&cfg, None)?;
        let replay_cpu_s = thread_cpu_s() - cpu;
        Ok(BenchResult::of(
            "trace_replay_10m",
            ranks,
            &r,
            vec![
                ("records", total as f64),
                ("convert_records_per_s", total as f64 / convert_s.max(1e-9)),
                ("convert_records_per_cpu_s", total as f64 / convert_cpu_s.max(1e-9)),
                ("convert_peak_bytes", convert_peak as f64),
                ("replay_records_per_s", total as f64 / r.wall_s.max(1e-9)),
                ("replay_records_per_cpu_s", total as f64 / replay_cpu_s.max(1e-9)),
                ("replay_peak_bytes", r.peak_bytes as f64),
            ],
        ))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// GOAL mode: case (a)'s binomial broadcast written as a GOAL file, then
/// parsed alone (ops/s) and run whole (peak bytes include the parse).
/// The binomial broadcast written as a GOAL file (text, or LogGOPSim's
/// binary layout), read alone, then read and run.
fn goal_case(case: &str, ranks: u32, binary: bool) -> Result<BenchResult, BenchError> {
    use crate::program::goal::write_goal;
    let WorkloadSpec::Collective(w) = collective(ranks, 1, CollectiveKind::Bcast) else { unreachable!() };
    let sched = crate::program::stream::export_goal(&w, None)?;
    let ops = sched.num_ops() as f64;
    let path = std::env::temp_dir().join(format!("idlewave-bench-{}.{}", std::process::id(), if binary { "bin" } else { "goal" }));
    let bytes = if binary { crate::program::goal_bin::write_binary(&sched) } else { write_goal(&sched).into_bytes() };
    std::fs::write(&path, bytes).map_err(io(&path))?;
    drop(sched);
    let result = (|| {
        let (wall, cpu) = (std::time::Instant::now(), thread_cpu_s());
        drop(crate::program::goal_file::read_goal_program(&path)?);
        let (parse_s, parse_cpu_s) = (wall.elapsed().as_secs_f64(), thread_cpu_s() - cpu);
        let file_bytes = std::fs::metadata(&path).map_err(io(&path))?.len() as f64;
        let mut cfg = config("bcast_1m").expect("a known case");
        cfg.workload = WorkloadSpec::Goal { path: path.display().to_string() };
        let r = run(&cfg, None)?;
        let extra = vec![
            ("ops", ops),
            ("parse_ops_per_s", ops / parse_s.max(1e-9)),
            ("parse_ops_per_cpu_s", ops / parse_cpu_s.max(1e-9)),
            ("parse_bytes_per_cpu_s", file_bytes / parse_cpu_s.max(1e-9)),
            ("peak_bytes", r.peak_bytes as f64),
        ];
        Ok(BenchResult::of(case, ranks, &r, extra))
    })();
    let _ = std::fs::remove_file(&path);
    result
}
