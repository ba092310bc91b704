//! The engine benchmark behind `idlewave bench`: events per second and heap
//! bytes per rank on fixed cases. An event is one completed operation (a
//! send, a receive or a computation), so figures compare across simulators.

use crate::network::{LogGOPS, Network};
use crate::noise::NoiseSpec;
use crate::sim::{run, Config, WorkloadSpec};
use crate::collectives::CollectiveKind;
use crate::workloads::{Bsp, CollectiveLoop, CollectiveMode};

pub struct BenchResult {
    pub case: String,
    pub ranks: u32,
    pub events: u64,
    pub wall_s: f64,
    pub events_per_s: f64,
    pub bytes_per_rank: f64,
}

pub const CASES: [&str; 4] = ["bcast_1m", "allreduce_64k_x10", "bsp_64k_x100_poisson", "allreduce_1m"];

fn collective(ranks: u32, iterations: u32, collective: CollectiveKind) -> WorkloadSpec {
    WorkloadSpec::Collective(CollectiveLoop {
        ranks,
        iterations,
        collective,
        algorithm: None,
        mode: CollectiveMode::Blocking,
        message_bytes: 8,
        chunk_bytes: 0,
        compute_ps: 0,
        root: 0,
        test_chunks: 1,
        comm: Default::default(),
    })
}

pub fn config(case: &str) -> Option<Config> {
    let (workload, noise) = match case {
        "bcast_1m" => (collective(1 << 20, 1, CollectiveKind::Bcast), vec![]),
        "allreduce_64k_x10" => (collective(1 << 16, 10, CollectiveKind::Allreduce), vec![]),
        "allreduce_1m" => (collective(1 << 20, 1, CollectiveKind::Allreduce), vec![]),
        "allreduce_4k" => (collective(1 << 12, 10, CollectiveKind::Allreduce), vec![]),
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
        record_timers: false,
        async_progress: false,
        max_memory_bytes: None,
        timeline_spans: 0,
    })
}

pub fn run_case(case: &str) -> Result<BenchResult, String> {
    let cfg = config(case).ok_or_else(|| format!("unknown bench case '{case}' (known: {})", CASES.join(", ")))?;
    let r = run(&cfg, None)?;
    Ok(BenchResult {
        case: case.to_string(),
        ranks: r.ranks,
        events: r.events,
        wall_s: r.wall_s,
        events_per_s: r.events as f64 / r.wall_s.max(1e-9),
        bytes_per_rank: r.peak_bytes as f64 / r.ranks as f64,
    })
}
