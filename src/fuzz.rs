//! Property tests over the parsers and the engine: whatever the input, an
//! answer or an error, never a panic, a wrapped time or a hang. `cargo test`
//! runs a few cases of each; `make fuzz` runs many (FUZZ_CASES).
//!
//! The corpus of known cases is in `tests/test_hardening.py`.

use crate::scenario;
use crate::sim::{self, Config};
use proptest::prelude::*;
use serde_json::{json, Value};

fn cases() -> u32 {
    std::env::var("FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48)
}

/// `cargo test` draws the same cases every run (a red CI names a code change,
/// not a lucky draw); `make fuzz` (FUZZ_CASES set) explores new ones each time.
fn rng_seed() -> proptest::test_runner::RngSeed {
    use proptest::test_runner::RngSeed;
    if std::env::var_os("FUZZ_CASES").is_some() {
        RngSeed::Random
    } else {
        RngSeed::Fixed(0x1d1e_3a5e)
    }
}

/// Numbers at the edges users hit: zero, one, the limits of each integer
/// width, huge and tiny floats, negatives.
fn edge_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(2)),
        Just(json!(-1)),
        Just(json!(255)),
        Just(json!(65535)),
        Just(json!(u32::MAX)),
        Just(json!(u64::MAX)),
        Just(json!(i64::MAX)),
        Just(json!(1e-13)),
        Just(json!(1e-12)),
        Just(json!(0.5)),
        Just(json!(1e6)),
        Just(json!(1e18)),
        Just(json!(1e300)),
        (0u64..64).prop_map(|x| json!(x)),
        (0.0f64..1e-3).prop_map(|x| json!(x)),
    ]
}

fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![edge_number(), any::<bool>().prop_map(Value::from), "[a-z_]{0,8}".prop_map(Value::from), Just(Value::Null)];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,6}", inner, 0..3).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A scenario that is mostly right: a real workload (or topology, mapping,
/// noise source) with one key set to an edge value.
fn near_valid_scenario() -> impl Strategy<Value = Value> {
    let workloads = prop_oneof![
        Just(json!({"kind": "bsp", "ranks": 6, "iterations": 3})),
        Just(json!({"kind": "collective", "ranks": 8, "iterations": 2, "collective": "allreduce"})),
        Just(json!({"kind": "collective", "ranks": 8, "iterations": 2, "collective": "bcast", "algorithm": "ring"})),
        Just(json!({"kind": "skeleton", "ranks": 8, "iterations": 2, "app": "CTH"})),
        Just(json!({"kind": "spmv", "ranks": 4, "iterations": 2, "rows": 400, "bandwidth": 20})),
        Just(json!({"kind": "fem_matvec", "ranks": 4, "iterations": 3, "hiding": "dynamic_alpha"})),
        Just(json!({"kind": "stream_triad", "ranks": 4, "iterations": 2, "elements_per_rank": 1000})),
        Just(json!({"kind": "krylov", "iterations": 2, "grid": [2, 2, 1], "local": [4, 4, 4]})),
        Just(json!({"kind": "krylov_kernel", "iterations": 2, "grid": [2, 2, 1], "local": [4, 4, 4]})),
        Just(json!({"kind": "chebfd", "ranks": 6, "subspace": 4, "degree": 2})),
        Just(json!({"kind": "dense2d", "grid": [2, 2], "blocks": 4, "block": 8})),
    ];
    let keys = "(ranks|iterations|compute_s|message_bytes|distances|root|chunk_bytes|test_chunks|rows|bandwidth|time_per_nonzero_s|element_s|epsilon_s|alpha0|elements|grid|local|stencil|subspace|block|blocks|degree|kernel_per_vector_s|gemm_flops_per_s|progress_chunks|overlap_s|max_distance|core_bandwidth_bytes_per_s|beta|input_bytes)";
    let net_keys = "(L_s|o_s|g_s|G_s_per_byte|O_s_per_byte|S_bytes|ranks_per_node|ranks_per_socket|node_bandwidth_bytes_per_s|hop_latency_s|stalls_per_byte|stall_s)";
    let topologies = prop_oneof![
        Just(json!({"kind": "fully_connected"})),
        (0u32..10).prop_map(|r| json!({"kind": "fat_tree", "radix": r})),
        Just(json!({"kind": "torus", "dims": [2, 2, 2]})),
        (0u32..3, 0u32..3).prop_map(|(a, b)| json!({"kind": "dragonfly", "nodes_per_router": a, "routers_per_group": b})),
    ];
    let noise = prop_oneof![
        Just(json!([])),
        (edge_number(), edge_number()).prop_map(|(r, d)| json!([{"kind": "poisson", "rate_hz": r, "duration_s": d}])),
        (edge_number(), edge_number()).prop_map(|(p, d)| json!([{"kind": "periodic", "period_s": p, "duration_s": d}])),
        (edge_number(), edge_number()).prop_map(|(i, d)| json!([{"kind": "checkpoint", "interval_s": i, "duration_s": d}])),
        (edge_number(), edge_number()).prop_map(|(s, d)| json!([{"kind": "single", "rank": 1, "start_s": s, "duration_s": d}])),
    ];
    (workloads, keys, edge_number(), net_keys, edge_number(), topologies, noise).prop_map(|(mut w, k, v, nk, nv, topo, noise)| {
        w[k] = v;
        let mut net = json!({"ranks_per_node": 2, "topology": topo});
        net[nk] = nv;
        json!({"workload": w, "network": net, "noise": noise, "record": {"timers": false}, "limits": {"max_memory_bytes": 64 << 20}})
    })
}

/// Held by tests that allocate a lot, and by those that measure the
/// process-wide peak of allocated memory (so they do not see each other's).
pub static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs a configuration for at most a million events.
fn run_briefly(mut cfg: Config) {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    cfg.max_memory_bytes = Some(cfg.max_memory_bytes.unwrap_or(64 << 20).min(64 << 20));
    let mut stop = |_t, events: u64, _done| events < 1_000_000;
    let _ = sim::run(&cfg, Some(&mut stop));
}

/// Inputs the property tests found panicking once (overflows, a sentinel
/// taken for a time, an allocation before the memory check): each runs or
/// is refused now.
#[test]
fn found_cases_run_or_are_refused() {
    let platform = r#""ranks_per_node": 2, "topology": {"kind": "fully_connected"}"#;
    let cases = [
        (r#""kind": "bsp", "ranks": 6, "iterations": 3, "compute_s": 0"#, r#", "node_bandwidth_bytes_per_s": 1e-13"#),
        (r#""kind": "spmv", "ranks": 4, "iterations": 2, "rows": 18446744073709551615, "bandwidth": 20"#, ""),
        (r#""kind": "spmv", "ranks": 4, "iterations": 2, "rows": 400, "bandwidth": 18446744073709551615"#, ""),
        (r#""kind": "stream_triad", "ranks": 4, "iterations": 2, "elements_per_rank": 1000, "core_bandwidth_bytes_per_s": 0"#, ""),
        (r#""kind": "dense2d", "grid": [2, 2], "blocks": 4, "block": 8, "gemm_flops_per_s": 1e-13"#, ""),
        (r#""kind": "fem_matvec", "ranks": 4, "iterations": 3, "hiding": "dynamic_alpha", "element_s": 1e6"#, ""),
        (r#""kind": "skeleton", "ranks": 4294967295, "iterations": 2, "app": "CTH""#, ""),
        (r#""kind": "chebfd", "ranks": 4, "subspace": 4294967295, "block": 1, "degree": 4294967295, "preset": "M1""#, ""),
    ];
    for (workload, network) in cases {
        let case = format!(r#"{{"workload": {{{workload}}}, "network": {{{platform}{network}}}}}"#);
        if let Ok(cfg) = scenario::config_of(&case) {
            run_briefly(cfg);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), rng_seed: rng_seed(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn goal_text_never_panics(text in "(num_ranks [0-9]{1,3}\n)?(rank [0-9] \\{\n([a-z][0-9]: (send|recv|calc) [0-9]{1,20}b? ?(to|from)? ?[0-9]? ?(tag [0-9]+)?\n|[a-z][0-9] i?requires [a-z][0-9]\n){0,6}\\}\n){0,3}") {
        if let Ok(s) = crate::program::goal::parse_goal(&text, "fuzz.goal") {
            let cfg = Config { workload: sim::WorkloadSpec::Goal { path: String::new() }, ..crate::bench::config("bcast_1m").unwrap() };
            let net = cfg.network.clone();
            if let Ok(mut e) = crate::engine::Engine::new(crate::program::goal_program::GoalProgram::new(&s), net, crate::noise::Noise::none()) {
                let _ = e.step(100_000);
            }
        }
    }

    #[test]
    fn any_text_never_panics_a_parser(text in "\\PC{0,200}") {
        let _ = crate::program::goal::parse_goal(&text, "fuzz.goal");
        let _ = crate::noise::trace::parse_noise_trace(&text, "fuzz.txt");
        let _ = crate::workloads::partners::PartnerTable::parse(&text, "fuzz.txt");
        let _ = scenario::parse(&text);
    }

    #[test]
    fn any_json_scenario_is_accepted_or_refused(v in any_value()) {
        let _ = scenario::config_of(&v.to_string());
    }

    #[test]
    fn near_valid_scenarios_run_or_are_refused(v in near_valid_scenario()) {
        if let Ok(cfg) = scenario::config_of(&v.to_string()) {
            run_briefly(cfg);
        }
    }

    #[test]
    fn corrupted_traces_are_refused_with_a_message(flips in prop::collection::vec((0usize..4096, any::<u8>()), 1..8)) {
        let dir = std::env::temp_dir().join(format!("idlewave-fuzz-trace-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        crate::trace::write_synthetic(&dir, 2, 3).unwrap();
        let file = dir.join("rank-0.iwt");
        let mut bytes = std::fs::read(&file).unwrap();
        for (at, b) in flips {
            let n = bytes.len();
            bytes[at % n] = b;
        }
        std::fs::write(&file, bytes).unwrap();
        let spec = crate::trace::TraceSpec { dir: dir.display().to_string(), algorithms: vec![], compute_scale: 1.0, scale_to: None, grid: None, strong: false, by_call: false, library: None };
        let cfg = Config { workload: sim::WorkloadSpec::Trace(spec), ..crate::bench::config("bcast_1m").unwrap() };
        run_briefly(cfg);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// One record of a near-valid trace: any op of the table (and a few no
/// table has), peers around the run's ranks, communicators that exist or
/// not, a handful of request ids (so waits meet posts, or do not), sizes and
/// times at the edges, sometimes a payload.
fn trace_record() -> impl Strategy<Value = (crate::trace::format::Record, Vec<u64>)> {
    use crate::trace::format::{all_ops, Record};
    let mut codes: Vec<u16> = all_ops().into_iter().map(|(c, _)| c).collect();
    codes.extend([0, 23, 31, 54, 118, 131, 254]);
    let op = prop::sample::select(codes);
    let peer = prop_oneof![4 => -3i32..6, 1 => Just(i32::MIN), 1 => Just(i32::MAX)];
    let comm = prop_oneof![4 => 0u32..4, 1 => Just(u32::MAX)];
    let bytes = prop_oneof![4 => 0u64..10_000, 1 => Just(crate::units::MAX_MESSAGE_BYTES - 1), 1 => Just(u64::MAX), 1 => Just(1u64 << 40)];
    let flags = prop_oneof![3 => Just(0u16), 1 => 0u16..0x200, 1 => any::<u16>()];
    let time = prop_oneof![8 => 0.0f64..1e-3, 1 => Just(-1.0), 1 => Just(1e300), 1 => Just(f64::NAN)];
    let value = prop_oneof![4 => 0u64..8, 1 => Just(u64::MAX), 1 => Just(u64::MAX - 1), 1 => Just(1u64 << 50)];
    let payload = prop_oneof![3 => Just(Vec::new()), 2 => prop::collection::vec(value, 0..14)];
    (op, flags, comm, peer, -2i32..5, bytes, 0u64..7, time, 0.0f64..1e-4, payload).prop_map(
        |(op, flags, comm, peer, tag, bytes, req, t0, took, payload)| {
            (Record { op, flags, comm, peer, tag, bytes, req, t0, t1: t0 + took }, payload)
        },
    )
}

/// How a fuzzed trace is broken after it is written.
#[derive(Debug, Clone)]
enum Damage {
    None,
    /// The file cut at this fraction of its length.
    Truncate(f64),
    /// (offset, byte) written over the file.
    Flip(Vec<(usize, u8)>),
    /// The file replaced by these bytes, behind a valid magic or not.
    Bytes(bool, Vec<u8>),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        4 => Just(Damage::None),
        1 => (0.0f64..1.0).prop_map(Damage::Truncate),
        1 => prop::collection::vec((0usize..4096, any::<u8>()), 1..6).prop_map(Damage::Flip),
        1 => (any::<bool>(), prop::collection::vec(any::<u8>(), 0..300)).prop_map(|(m, b)| Damage::Bytes(m, b)),
    ]
}

/// A trace of 1 to 3 ranks: per rank init, random records (times made to
/// advance unless a record's own are odd), finalize; then one rank's file
/// damaged. Returns the directory.
fn write_fuzzed_trace(name: &str, ranks: &[Vec<(crate::trace::format::Record, Vec<u64>)>], hit: usize, how: &Damage) -> std::path::PathBuf {
    use crate::trace::format::{op, Footer, Record, Writer, MAGIC};
    let dir = std::env::temp_dir().join(format!("idlewave-fuzz-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let n = ranks.len() as i32;
    for (r, recs) in ranks.iter().enumerate() {
        let path = dir.join(format!("rank-{r}.iwt"));
        let mut w = Writer::create(&path, r as i32, n).unwrap();
        let mut t = 0.0;
        w.record(&Record { op: op::INIT, peer: -1, ..Default::default() }, &[]).unwrap();
        for (x, payload) in recs {
            let mut x = *x;
            if (0.0..1.0).contains(&x.t0) {
                let took = x.t1 - x.t0;
                (x.t0, x.t1) = (t + x.t0, t + x.t0 + took);
                t = x.t1;
            }
            w.record(&x, payload).unwrap();
        }
        w.record(&Record { op: op::FINALIZE, peer: -1, t0: t, t1: t, ..Default::default() }, &[]).unwrap();
        w.finish(&Footer { library: "Open MPI v5.0.0".into(), functions: vec![("MPI_Win_fence".into(), 1, 0.1)], tracer_s: None }).unwrap();
    }
    let file = dir.join(format!("rank-{}.iwt", hit % ranks.len()));
    let mut bytes = std::fs::read(&file).unwrap();
    match how {
        Damage::None => {}
        Damage::Truncate(f) => bytes.truncate((bytes.len() as f64 * f) as usize),
        Damage::Flip(flips) => {
            for &(at, b) in flips {
                let n = bytes.len();
                bytes[at % n] = b;
            }
        }
        Damage::Bytes(magic, b) => {
            bytes = if *magic { MAGIC.to_vec() } else { Vec::new() };
            bytes.extend_from_slice(b);
        }
    }
    std::fs::write(&file, bytes).unwrap();
    dir
}

/// Everything that reads a trace, on `dir`: the replay (as traced, with the
/// time by call, extrapolated periodically and on a grid), the GOAL export,
/// the grid finder. Each gives an answer or an error.
fn read_every_way(dir: &std::path::Path) {
    let base = crate::trace::TraceSpec {
        dir: dir.display().to_string(),
        algorithms: vec![],
        compute_scale: 1.0,
        scale_to: None,
        grid: None,
        strong: false,
        by_call: false,
        library: None,
    };
    let traced = crate::trace::format::rank_files(dir).map_or(1, |f| f.len() as u32);
    let specs = [
        base.clone(),
        crate::trace::TraceSpec { by_call: true, ..base.clone() },
        crate::trace::TraceSpec { scale_to: Some(2 * traced), ..base.clone() },
        crate::trace::TraceSpec { grid: Some("2x2".into()), ..base.clone() },
    ];
    for spec in specs {
        let _ = crate::trace::export_goal(&spec, &mut std::io::sink());
        let cfg = Config { workload: sim::WorkloadSpec::Trace(spec), timeline_spans: 10_000, ..crate::bench::config("bcast_1m").unwrap() };
        run_briefly(cfg);
    }
    let _ = crate::trace::grid_of(dir);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), rng_seed: rng_seed(), failure_persistence: None, ..ProptestConfig::default() })]

    /// Near-valid traces (every op, peers, communicators, requests, sizes
    /// and times at the edges, payloads), some damaged after writing: the
    /// reader, the replay and the export answer or refuse, never panic or hang.
    #[test]
    fn fuzz_traces_are_replayed_or_refused(
        ranks in prop::collection::vec(prop::collection::vec(trace_record(), 0..24), 1..4),
        hit in 0usize..4,
        how in damage(),
    ) {
        let dir = write_fuzzed_trace("records", &ranks, hit, &how);
        read_every_way(&dir);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Traces of programs that make sense (every rank runs the same steps:
    /// ring exchanges, persistent requests, collectives on the world and on
    /// a communicator made for them, nonblocking collectives, polls, calls
    /// not modelled), then one field of one record set to an edge value and
    /// sometimes the file damaged: replayed or refused, never a panic.
    #[test]
    fn fuzz_plausible_programs_are_replayed_or_refused(
        steps in prop::collection::vec((0u8..12, 1u64..3000), 0..16),
        ranks in 1usize..5,
        mutation in prop::option::of((0usize..400, 0u8..8, prop_oneof![Just(-3i64), Just(-1), Just(0), Just(1), Just(7), Just(i64::MAX), Just(u32::MAX as i64)])),
        hit in 0usize..4,
        how in damage(),
    ) {
        let mut per_rank: Vec<_> = (0..ranks as i32).map(|r| plausible_program(r, ranks as i32, &steps)).collect();
        if let Some((at, field, v)) = mutation {
            let recs = &mut per_rank[hit % ranks];
            if !recs.is_empty() {
                let n = recs.len();
                let x = &mut recs[at % n].0;
                match field {
                    0 => x.op = v as u16,
                    1 => x.flags = v as u16,
                    2 => x.comm = v as u32,
                    3 => x.peer = v as i32,
                    4 => x.tag = v as i32,
                    5 => x.bytes = v as u64,
                    6 => x.req = v as u64,
                    _ => x.t1 = x.t0 + v as f64 * 1e-3,
                }
            }
        }
        let dir = write_fuzzed_trace("programs", &per_rank, hit, &how);
        read_every_way(&dir);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), rng_seed: rng_seed(), failure_persistence: None, ..ProptestConfig::default() })]

    /// A halo exchange on a Cartesian grid (the template the grid
    /// extrapolation compiles per class), with a few words of one rank's
    /// file overwritten by edge values: extrapolated, replayed and exported,
    /// or refused.
    #[test]
    fn fuzz_grid_traces_extrapolate_or_refuse(
        periodic in any::<bool>(),
        words in prop::collection::vec((0usize..200, prop_oneof![Just(0u64), Just(1), Just(2), Just(u64::MAX), Just(u32::MAX as u64), Just(1u64 << 31), Just(0x8000), 0u64..16]), 0..4),
        half in any::<bool>(),
        hit in 0usize..4,
    ) {
        let dir = std::env::temp_dir().join(format!("idlewave-fuzz-grid-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        crate::trace::write_synthetic_cart(&dir, &[2, 2], &[periodic, false], 2).unwrap();
        let file = dir.join(format!("rank-{hit}.iwt"));
        let mut bytes = std::fs::read(&file).unwrap();
        for (w, v) in words {
            // a u32 or u64 field of a record, or of a payload, past the header
            let at = 64 + 4 * w;
            let b = if half { (v as u32).to_le_bytes().to_vec() } else { v.to_le_bytes().to_vec() };
            if at + b.len() <= bytes.len() {
                bytes[at..at + b.len()].copy_from_slice(&b);
            }
        }
        std::fs::write(&file, bytes).unwrap();
        read_every_way(&dir);
        for spec in [("4x4", None), ("2x2", Some(8)), ("4x2", None)] {
            let spec = crate::trace::TraceSpec {
                dir: dir.display().to_string(), algorithms: vec![], compute_scale: 1.0, scale_to: spec.1, grid: Some(spec.0.into()),
                strong: spec.1.is_none(), by_call: false, library: None,
            };
            let _ = crate::trace::export_goal(&spec, &mut std::io::sink());
            let cfg = Config { workload: sim::WorkloadSpec::Trace(spec), ..crate::bench::config("bcast_1m").unwrap() };
            run_briefly(cfg);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Traces the trace fuzzers found panicking: each is replayed or refused now.
#[test]
fn found_trace_cases_are_refused() {
    use crate::trace::format::{op, Coll, Record};
    // a Cartesian payload whose ndims, doubled, wraps around to its length (1 + 2 × (2^63 + 2) = 5)
    let cart = Record { op: op::COMM_NEW, peer: 1, tag: 7, ..Default::default() };
    let wraps = [(1u64 << 63) + 2, 2, 2, 0, 0];
    assert!(matches!(crate::trace::grid::from_cart_create(&cart, &wraps, 4), Some(Err(_))));
    // and a neighbourhood payload whose counts do
    let nbr = Record { op: op::COLL_BASE + Coll::NeighborAlltoall as u16, peer: -1, ..Default::default() };
    let wraps = [u64::MAX, 1, 0, 0];
    assert!(crate::trace::collective::neighbour_round(&wraps).is_err());
    let mut pairs = Vec::new();
    crate::trace::grid::pairs_of(0, &nbr, &wraps, &mut pairs);
    assert!(pairs.is_empty());
    let dir = std::env::temp_dir().join(format!("idlewave-fuzz-found-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    crate::trace::write_synthetic_cart(&dir, &[2, 2], &[false, false], 2).unwrap();
    let file = dir.join("rank-0.iwt");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[172..180].copy_from_slice(&(1u64 << 31).to_le_bytes());
    std::fs::write(&file, bytes).unwrap();
    read_every_way(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// One rank's records of a program every rank runs alike (see
/// `fuzz_plausible_programs_are_replayed_or_refused`): `steps` are (what, bytes).
fn plausible_program(r: i32, n: i32, steps: &[(u8, u64)]) -> Records {
    use crate::trace::format::{op, Coll};
    let (right, left) = ((r + 1) % n, (r + n - 1) % n);
    let mut out = Vec::new();
    let mut next_req = 1u64;
    let mut req = || {
        next_req += 1;
        next_req
    };
    let rec = plausible_record;
    let mut comms = 0u32;
    for &(what, bytes) in steps {
        match what {
            0 => {
                let (a, b) = (req(), req());
                ring_exchange(&mut out, (left, right), bytes, (a, b));
            }
            1 => {
                out.push((rec(op::SENDRECV_SEND, 0, right, 2, bytes, 0), vec![]));
                out.push((rec(op::SENDRECV_RECV, 0, left, 2, bytes, 0), vec![]));
            }
            2 => {
                let (a, b) = (req(), req());
                persistent_ring_exchange(&mut out, (left, right), bytes, (a, b));
            }
            3 => out.push((rec(op::COLL_BASE + Coll::Allreduce as u16, comms, -1, 0, bytes, 0), vec![])),
            4 => out.push((rec(op::COLL_BASE + Coll::Bcast as u16, comms, 0, 0, bytes, 0), vec![])),
            5 => {
                let v = vec![bytes; 2 * n as usize];
                out.push((rec(op::COLL_BASE + Coll::Alltoallv as u16, 0, -1, 0, bytes * n as u64, 0), v));
            }
            6 => {
                let v: Vec<u64> = (0..n).map(|q| bytes + q as u64).collect();
                out.push((rec(op::COLL_BASE + Coll::Allgatherv as u16, 0, -1, 0, bytes + r as u64, 0), v));
            }
            7 => {
                // a duplicate of the world, then its collectives go there
                comms += 1;
                out.push((rec(op::COMM_NEW, 0, comms as i32, 3, 0, 0), vec![]));
                for m in 0..n {
                    out.push((rec(op::COMM_MEMBER, comms, m, m, 0, 0), vec![]));
                }
            }
            8 => {
                let a = req();
                out.push((rec(op::COLL_BASE + op::NONBLOCKING + Coll::Barrier as u16, 0, -1, 0, 0, a), vec![]));
                out.push((rec(op::POLL, 0, -1, 0, 5, a), vec![]));
                out.push((rec(op::WAIT, 0, -1, 0, 0, a), vec![]));
            }
            9 => {
                // neighbours on a ring: [nin, nout, sources, destinations, receive bytes, send bytes]
                let v = vec![2, 2, left as u64, right as u64, left as u64, right as u64, bytes, bytes, bytes, bytes];
                out.push((rec(op::COLL_BASE + Coll::NeighborAlltoall as u16, 0, -1, 0, bytes, 0), v));
            }
            10 => out.push((rec(op::OTHER, 0, -1, 0, 0, 0), vec![])),
            _ => {
                let a = req();
                out.push((rec(op::OTHER, 0, -1, 0, 0, a), vec![]));
                out.push((rec(op::WAIT, u32::MAX, -1, 0, 0, a), vec![]));
                out.push((rec(op::WAIT, u32::MAX, -1, 0, 0, req()), vec![]));
            }
        }
    }
    out
}

type Records = Vec<(crate::trace::format::Record, Vec<u64>)>;

/// A record of `plausible_program`: every call takes a microsecond.
fn plausible_record(op: u16, comm: u32, peer: i32, tag: i32, bytes: u64, req: u64) -> crate::trace::format::Record {
    crate::trace::format::Record { op, comm, peer, tag, bytes, req, t0: 1e-6, t1: 2e-6, ..Default::default() }
}

/// Receive from the left and send to the right, with requests `a` and `b`.
fn ring_exchange(out: &mut Records, (left, right): (i32, i32), bytes: u64, (a, b): (u64, u64)) {
    use crate::trace::format::op;
    let rec = plausible_record;
    out.push((rec(op::IRECV, 0, left, 1, bytes, a), vec![]));
    out.push((rec(op::ISEND, 0, right, 1, bytes, b), vec![]));
    out.push((rec(op::WAIT, 0, left, 1, 0, a), vec![]));
    out.push((rec(op::WAIT, 0, -1, 0, 0, b), vec![]));
}

/// The same as persistent requests `a` and `b`, started twice, then freed.
fn persistent_ring_exchange(out: &mut Records, (left, right): (i32, i32), bytes: u64, (a, b): (u64, u64)) {
    use crate::trace::format::op;
    let rec = plausible_record;
    out.push((rec(op::RECV_INIT, 0, left, 3, bytes, a), vec![]));
    out.push((rec(op::SEND_INIT, 0, right, 3, bytes, b), vec![]));
    for _ in 0..2 {
        out.push((rec(op::START, 0, left, 3, 0, a), vec![]));
        out.push((rec(op::START, 0, right, 3, 0, b), vec![]));
        out.push((rec(op::WAIT, 0, left, 3, 0, a), vec![]));
        out.push((rec(op::WAIT, 0, -1, 0, 0, b), vec![]));
    }
    out.push((rec(op::REQUEST_FREE, 0, -1, 0, 0, a), vec![]));
    out.push((rec(op::REQUEST_FREE, 0, -1, 0, 0, b), vec![]));
}

/// A random GOAL schedule with contention: several ranks, two CPUs and two
/// NICs, zero-length calcs, eager and rendezvous sends, dependencies.
fn contended_goal() -> impl Strategy<Value = String> {
    let op = (0u8..3, 0u32..3, prop_oneof![Just(0u64), Just(1), 1u64..200_000], 0u8..2, 0u8..2, 0u32..3);
    (
        2u32..4,
        prop::collection::vec(prop::collection::vec(op, 1..14), 4),
        prop::collection::vec((0usize..14, 0usize..14, any::<bool>()), 0..10),
    )
        .prop_map(|(ranks, ops, deps)| {
            // sends from rank r to q are matched by receives on q from r with the same tag, in order
            let mut text = format!("num_ranks {ranks}\n");
            let mut recvs: Vec<Vec<String>> = vec![Vec::new(); ranks as usize];
            let mut bodies: Vec<Vec<String>> = vec![Vec::new(); ranks as usize];
            for (r, list) in ops.iter().take(ranks as usize).enumerate() {
                for &(kind, peer, size, cpu, nic, tag) in list {
                    let q = (r as u32 + 1 + peer % (ranks - 1)) % ranks;
                    match kind {
                        0 => bodies[r].push(format!("calc {} cpu {cpu}", size / 100)),
                        _ => {
                            bodies[r].push(format!("send {size}b to {q} tag {tag} cpu {cpu} nic {nic}"));
                            recvs[q as usize].push(format!("recv {size}b from {r} tag {tag} cpu {nic} nic {cpu}"));
                        }
                    }
                }
            }
            for r in 0..ranks as usize {
                text += &format!("rank {r} {{\n");
                let all: Vec<String> = bodies[r].iter().chain(&recvs[r]).cloned().collect();
                for (i, op) in all.iter().enumerate() {
                    text += &format!("l{i}: {op}\n");
                }
                for &(a, b, start) in &deps {
                    if a < all.len() && b < a {
                        text += &format!("l{a} {} l{b}\n", if start { "irequires" } else { "requires" });
                    }
                }
                text += "}\n";
            }
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases() * 4, rng_seed: rng_seed(), failure_persistence: None, ..ProptestConfig::default() })]

    /// The queue shortcuts (waiting lines, engine/waiting.rs, and messages
    /// queued for a busy receiver's free moment, `handled_from`) change how
    /// often the queue is touched, never what happens: every finish time and
    /// event count equals LogGOPSim's re-queue-every-waiter order, with and
    /// without noise, for both NIC models and every rendezvous protocol.
    #[test]
    fn queue_shortcuts_change_nothing(
        text in contended_goal(),
        s_bytes in prop_oneof![Just(100u64), Just(65_535)],
        noisy in any::<bool>(),
        variant in 0u8..4,
    ) {
        use crate::network::{NicModel, Rendezvous};
        let s = crate::program::goal::parse_goal(&text, "t.goal").unwrap();
        let p = crate::network::LogGOPS { s_bytes, ..crate::network::LogGOPS::loggopsim_defaults() };
        let mut net = crate::network::Network::uniform(p);
        match variant {
            1 => net.rendezvous = Rendezvous::Handshake,
            2 => net.nic_model = NicModel::Dma,
            3 => net.rendezvous = Rendezvous::Get,
            _ => {}
        }
        let run = |off: bool| {
            let program = crate::program::goal_program::GoalProgram::new(&s);
            // frequent detours of a few µs: messages often reach a busy CPU
            let spec = crate::noise::NoiseSpec::Poisson { rate_per_s: 2e5, duration_ps: 3_000_000, ranks: None };
            let noise = if noisy { crate::noise::Noise::new(&[spec], 7, 4).unwrap() } else { crate::noise::Noise::none() };
            let mut e = crate::engine::Engine::new(program, net.clone(), noise).unwrap();
            e.set_shortcuts(!off);
            let r = e.run().map_err(|e| e.to_string());
            (r, (0..e.num_ranks()).map(|q| e.finish_time(q)).collect::<Vec<_>>(), e.events)
        };
        prop_assert_eq!(run(false), run(true));
    }

    /// Nor what explaining finds: with the shortcuts on, a message queued
    /// for its busy receiver's free moment takes the receiver's path there,
    /// as when it is re-queued; the makespan's split, its derivatives, the
    /// route and every rank's waits are the same either way.
    #[test]
    fn queue_shortcuts_change_no_explanation(text in contended_goal(), s_bytes in prop_oneof![Just(100u64), Just(65_535)]) {
        let s = crate::program::goal::parse_goal(&text, "t.goal").unwrap();
        let p = crate::network::LogGOPS { s_bytes, ..crate::network::LogGOPS::loggopsim_defaults() };
        let net = crate::network::Network::uniform(p);
        let run = |off: bool| {
            let program = crate::program::goal_program::GoalProgram::new(&s);
            let spec = crate::noise::NoiseSpec::Poisson { rate_per_s: 2e5, duration_ps: 3_000_000, ranks: None };
            let noise = crate::noise::Noise::new(&[spec], 7, 4).unwrap();
            let mut e = crate::engine::Engine::with_probe(program, net.clone(), noise, crate::probes::Explain::default()).unwrap();
            e.set_shortcuts(!off);
            let r = e.run().map_err(|e| e.to_string());
            (r, crate::probes::explain::Explained { peak_bytes: 0, ..e.probe().explanation(&e.view) }, e.events)
        };
        prop_assert_eq!(run(false), run(true));
    }
}
