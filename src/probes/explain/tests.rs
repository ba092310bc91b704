use super::route::COLLECTIONS;
use super::*;
use crate::network::Network;
use crate::sim::{run, Config};

fn config(doc: serde_json::Value) -> Config {
    crate::scenario::config_of(&doc.to_string()).expect("a valid scenario")
}

fn explained(cfg: &Config) -> Explained {
    let r = run(&Config { explain: true, ..cfg.clone() }, None).expect("runs");
    let x = r.explained.expect("explained");
    assert_eq!(x.makespan, r.makespan);
    assert_eq!(r.finish_times[x.last_rank as usize], x.makespan, "the last rank ends the run");
    assert_eq!(x.path.total(), r.makespan, "the causes sum to the makespan: {x:?}");
    check_route(&x);
    x
}

/// The route covers [0, makespan) without gaps, each segment's causes
/// sum to its length, a segment changes rank, and per cause the
/// segments add up to the path's split.
fn check_route(x: &Explained) {
    let r = &x.route;
    assert!(!r.is_empty() || x.makespan == 0);
    if let (Some(first), Some(last)) = (r.first(), r.last()) {
        // a budget set by a test may drop the start
        let start = if COLLECTIONS.get().2 == 0 { 0 } else { first.start };
        assert_eq!((first.start, last.end), (start, x.makespan), "{r:?}");
    }
    for w in r.windows(2) {
        assert_eq!(w[0].end, w[1].start, "contiguous: {r:?}");
        assert_ne!(w[0].rank, w[1].rank, "a segment changes rank: {r:?}");
    }
    for s in r {
        assert_eq!(s.ps.iter().sum::<Time>(), s.end - s.start, "{s:?}");
    }
    let by_cause: [Time; 7] = std::array::from_fn(|c| r.iter().map(|s| s.ps[c]).sum());
    if r.first().is_some_and(|s| s.start == 0) {
        assert_eq!(by_cause, x.path.ps);
    }
}

fn makespan(cfg: &Config) -> Time {
    run(cfg, None).expect("runs").makespan
}

/// Adds `d` to parameter `k` ([`PARAMS`]) of every link class.
fn perturb(net: &mut Network, k: usize, d: f64) {
    for p in std::iter::once(&mut net.inter_node).chain(net.intra_node.as_mut()) {
        match k {
            L => p.l_ps += d as u64,
            O_CPU => p.o_ps += d as u64,
            GAP => p.g_ps += d as u64,
            G_BYTE => p.big_g_ps += d,
            _ => p.big_o_ps += d,
        }
    }
}

fn count(path: &Path, k: usize) -> u64 {
    path.count(k)
}

/// T(θ + δ) − T(θ) = δ · dT/dθ for each parameter, and the causes
/// match the counts term by term (no noise, no platform here). Where
/// events tie at θ (`jumps`) the runtime jumps under any increase: then
/// the slope after the jump must be the derivative.
fn check_derivatives(label: &str, cfg: &Config, jumps: bool) {
    let x = explained(cfg);
    let net = &cfg.network.inter_node;
    let p = &x.path;
    assert_eq!(p.ps[WIRE], count(p, L) * net.l_ps, "{label}: wire = L · count");
    let o_bytes = if net.big_o_ps > 0.0 { count(p, O_BYTE) as f64 * net.big_o_ps } else { 0.0 };
    assert_eq!(p.ps[OVERHEAD], count(p, O_CPU) * net.o_ps + o_bytes.round() as Time, "{label}: overhead");
    check_slopes(label, cfg, &x, jumps);
}

/// T(θ + δ) − T(θ) = δ · dT/dθ for each parameter (after the jump, where
/// events tie at θ: `jumps`).
fn check_slopes(label: &str, cfg: &Config, x: &Explained, jumps: bool) {
    let p = &x.path;
    for (k, name) in PARAMS.iter().enumerate() {
        // per byte: a step small enough for megabyte messages; each
        // (s−1)·G is rounded to whole ps, so allow half a ps per term
        let (d, slack) = if k >= G_BYTE { (1.0 / 64.0, count(p, O_CPU) + count(p, GAP)) } else { (3.0, 0) };
        let at = |m: f64| {
            let mut up = cfg.clone();
            perturb(&mut up.network, k, m * d);
            makespan(&up) as f64
        };
        let (t0, t1, t2) = (x.makespan as f64, at(1.0), at(2.0));
        let want = d * count(p, k) as f64;
        let what = format!("{label}: dT/d{name} = {}", count(p, k));
        assert!((t2 - t1 - want).abs() <= slack as f64, "{what} but T moved by {} from δ to 2δ = {}", t2 - t1, 2.0 * d);
        if !jumps {
            assert!((t1 - t0 - want).abs() <= slack as f64, "{what} but T moved by {} for δ = {d}", t1 - t0);
        }
    }
}

fn net() -> serde_json::Value {
    // G a whole number of ps per byte, so (s−1)·G is exact
    serde_json::json!({"L_s": 2.5e-6, "o_s": 1.5e-6, "g_s": 1.0e-6, "G_s_per_byte": 6e-9, "S_bytes": 65535})
}

/// Dropping the hops no path leads to changes no route (and happens).
#[test]
fn collecting_hops_keeps_the_route() {
    let cfg = config(serde_json::json!({"network": net(), "noise": [{"kind": "poisson", "rate_hz": 20000.0, "duration_s": 5e-6}],
        "workload": {"kind": "bsp", "ranks": 16, "iterations": 8, "compute_s": 1e-5, "distances": [1, 2], "message_bytes": 1024}}));
    COLLECTIONS.set((0, false, 0));
    let collected = explained(&cfg);
    assert!(COLLECTIONS.get().0 > 3, "collections: {:?}", COLLECTIONS.get());
    COLLECTIONS.set((0, true, 0));
    let kept = explained(&cfg);
    assert_eq!(collected.route, kept.route);
    assert!(collected.route.len() > 8, "{:?}", collected.route);
    // over its budget it drops the route's start, and only that
    COLLECTIONS.set((0, false, 20));
    let cut = explained(&cfg);
    COLLECTIONS.set((0, false, 0));
    assert!(cut.route[0].start > 0 && cut.route.len() < kept.route.len(), "{:?}", cut.route);
    let tail = &kept.route[kept.route.len() - cut.route.len() + 1..];
    assert_eq!(&cut.route[1..], tail);
    assert_eq!(cut.route[0].rank, kept.route[kept.route.len() - cut.route.len()].rank);
}

/// Each rank's idle time, charged to its iterations (the `waiting`
/// timer), adds up to its waits.
#[test]
fn waits_per_iteration_add_up_to_the_waits() {
    let cfg = config(serde_json::json!({"network": net(), "noise": [{"kind": "poisson", "rate_hz": 20000.0, "duration_s": 5e-6}],
        "workload": {"kind": "bsp", "ranks": 12, "iterations": 6, "compute_s": 1e-5, "distances": [1, 2], "message_bytes": 100000}}));
    let r = run(&Config { explain: true, ..cfg.clone() }, None).expect("runs");
    let x = r.explained.as_ref().expect("explained");
    let t = r.timer_names.iter().position(|n| n == crate::record::WAITING).expect("a waiting timer");
    let iters = r.iterations as usize;
    let mut waited = 0.0;
    for (rank, w) in x.waits.iter().enumerate() {
        let total = (w.late_sender + w.late_receiver + w.other) as f64 * 1e-12;
        let per_iteration: f64 = r.timers[t][rank * iters..(rank + 1) * iters].iter().sum();
        assert!((per_iteration - total).abs() <= 1e-15 * iters as f64 + 1e-9 * total, "rank {rank}: {per_iteration} vs {total}");
        waited += total;
    }
    assert!(waited > 0.0);
    // not explained: no such timer
    let plain = run(&cfg, None).expect("runs");
    assert!(!plain.timer_names.iter().any(|n| n == crate::record::WAITING));
}

#[test]
fn a_path_is_copied_inline() {
    assert_eq!(std::mem::size_of::<Path>(), 128);
}

#[test]
fn a_ping_pong_splits_into_its_closed_form() {
    let dir = std::env::temp_dir().join(format!("idlewave-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let goal = dir.join("pingpong.goal");
    let s = 1000u64;
    std::fs::write(
        &goal,
        format!(
            "num_ranks 2\nrank 0 {{\nl1: send {s}b to 1 tag 0\nl2: recv {s}b from 1 tag 0\nl2 requires l1\n}}\n\
             rank 1 {{\nl1: recv {s}b from 0 tag 0\nl2: send {s}b to 0 tag 0\nl2 requires l1\n}}\n"
        ),
    )
    .unwrap();
    let cfg = config(serde_json::json!({"network": net(), "workload": {"kind": "goal", "path": goal.display().to_string()}}));
    let x = explained(&cfg);
    let (o, l, g_bytes) = (1_500_000, 2_500_000, (s - 1) * 6_000);
    // each way: the sender's o, L, the receiver's o + (s−1)·G
    assert_eq!(x.path.ps[OVERHEAD], 4 * o);
    assert_eq!(x.path.ps[WIRE], 2 * l);
    assert_eq!(x.path.ps[NIC], 2 * g_bytes);
    assert_eq!(x.makespan, 4 * o + 2 * l + 2 * g_bytes);
    assert_eq!([count(&x.path, L), count(&x.path, O_CPU), count(&x.path, GAP), count(&x.path, G_BYTE)], [2, 4, 0, 2 * (s - 1)]);
    check_derivatives("ping-pong", &cfg, false);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rank 0's second send waits for its CPU (o, then a calc) and its NIC
/// (g + 1000·G of the first send), both free at 7 µs. Raising o, g or G
/// each delays it, so each count must be the larger of the two paths'.
#[test]
fn tied_clocks_take_the_larger_counts() {
    let dir = std::env::temp_dir().join(format!("idlewave-explain-tie-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let goal = dir.join("tie.goal");
    std::fs::write(
        &goal,
        "num_ranks 2\nrank 0 {\nl1: send 1001b to 1 tag 0\nl2: calc 5500\nl2 requires l1\nl3: send 1b to 1 tag 1\nl3 requires l2\n\
         l4: calc 20000\nl4 requires l3\n}\nrank 1 {\nl1: recv 1001b from 0 tag 0\nl2: recv 1b from 0 tag 1\n}\n",
    )
    .unwrap();
    let cfg = config(serde_json::json!({"network": net(), "workload": {"kind": "goal", "path": goal.display().to_string()}}));
    let x = explained(&cfg);
    // o + calc = g + 1000·G = 7 µs; then o and the last calc
    assert_eq!(x.makespan, 7_000_000 + 1_500_000 + 20_000_000);
    assert_eq!([count(&x.path, L), count(&x.path, O_CPU), count(&x.path, GAP), count(&x.path, G_BYTE)], [0, 2, 1, 1000]);
    check_derivatives("tied clocks", &cfg, false);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_binomial_broadcast_splits_into_its_closed_form() {
    // Largest subtree first, o > g: the path runs down the first
    // children, each level costing o (send) + L + o + (s−1)·G (receive).
    for (ranks, levels) in [(8u32, 3u64), (64, 6)] {
        let s = 1000u64;
        let cfg = config(serde_json::json!({"network": net(), "workload": {
            "kind": "collective", "collective": "bcast", "algorithm": "binomial", "ranks": ranks, "iterations": 1,
            "message_bytes": s, "compute_s": 0.0}}));
        let x = explained(&cfg);
        let (o, l, g_bytes) = (1_500_000, 2_500_000, (s - 1) * 6_000);
        assert_eq!(x.path.ps[OVERHEAD], levels * 2 * o, "{ranks} ranks");
        assert_eq!(x.path.ps[WIRE], levels * l);
        assert_eq!(x.path.ps[NIC], levels * g_bytes);
        assert_eq!(x.makespan, levels * (2 * o + l + g_bytes));
        // down the first children (v sends first to v + the lowest
        // power of two above v): 0, 1, 3, 7, ...; on the root o + L, on
        // each next rank o + (s−1)·G, then o + L (the last: o + (s−1)·G)
        let ranks_on: Vec<u32> = x.route.iter().map(|s| s.rank).collect();
        let want: Vec<u32> = (0..=levels).map(|k| (1 << k) - 1).collect();
        assert_eq!(ranks_on, want, "{ranks} ranks: {:?}", x.route);
        let lengths: Vec<Time> = x.route.iter().map(|s| s.end - s.start).collect();
        let mut expect = vec![o + l];
        expect.extend(std::iter::repeat_n(o + g_bytes + o + l, levels as usize - 1));
        expect.push(o + g_bytes);
        assert_eq!(lengths, expect);
    }
}

/// Every clock's path holds its time (debug builds assert it at each
/// step) under noise, platforms, protocols, NIC models and memory
/// contention; explaining changes no result.
#[test]
fn paths_hold_their_times_under_every_model() {
    let bsp = serde_json::json!({"kind": "bsp", "ranks": 16, "iterations": 4, "compute_s": 1e-5,
                                 "distances": [1, 2], "message_bytes": 100000});
    let poisson = serde_json::json!([{"kind": "poisson", "rate_hz": 20000.0, "duration_s": 5e-6}]);
    let cases = [
        serde_json::json!({"noise": poisson, "workload": bsp}),
        serde_json::json!({"network": {"rendezvous_model": "handshake"}, "noise": poisson, "workload": bsp}),
        serde_json::json!({"network": {"rendezvous_model": "get"}, "noise": poisson, "workload": bsp}),
        serde_json::json!({"network": {"rendezvous_model": "get", "nic_model": "dma"}, "noise": poisson,
                           "workload": {"kind": "krylov_kernel", "kernel": "halo", "grid": [2, 2, 2], "local": [128, 128, 128],
                                        "overlap_s": 1e-4, "trailing_s": 1e-5, "iterations": 2, "mode": "nonblocking",
                                        "test_chunks": 4}}),
        serde_json::json!({"network": {"nic_model": "dma"}, "noise": poisson, "workload": bsp}),
        serde_json::json!({"network": {"nic_ports": 3}, "noise": poisson, "workload": bsp}),
        serde_json::json!({"network": {"ranks_per_node": 2, "topology": {"kind": "torus", "dims": [4, 2, 1]},
                                       "regimes": [{"transition": [[0.9, 0.1], [0.2, 0.8]], "multiplier": [1.0, 3.0],
                                                    "step_s": 1e-6, "scope": "link"}]},
                           "workload": bsp}),
        serde_json::json!({"network": {"nic_ports": 2, "nic_model": "dma"},
                           "workload": {"kind": "collective", "collective": "bcast", "algorithm": "two_ring_modified",
                                        "ranks": 9, "iterations": 2, "message_bytes": 1000000, "chunk_bytes": 200000}}),
        serde_json::json!({"network": {"ranks_per_node": 4, "node_bandwidth_bytes_per_s": 5e9, "hop_latency_s": 1e-7,
                                       "stalls_per_byte": 0.01, "stall_s": 1e-9, "topology": {"kind": "torus", "dims": [2, 2, 1]},
                                       "regimes": [{"transition": [[0.9, 0.1], [0.2, 0.8]], "multiplier": [1.0, 3.0]}]},
                           "workload": bsp}),
        serde_json::json!({"network": {"ranks_per_node": 8, "ranks_per_socket": 4,
                                       "memory": {"socket_bandwidth_bytes_per_s": 4e10, "core_bandwidth_bytes_per_s": 1.5e10}},
                           "noise": poisson,
                           "workload": {"kind": "bsp", "ranks": 16, "iterations": 4, "compute_bytes": 4000000,
                                        "distances": [1], "message_bytes": 1024}}),
        serde_json::json!({"network": {"async_progress": true}, "noise": poisson,
                           "workload": {"kind": "collective", "collective": "allreduce", "mode": "nonblocking", "ranks": 16,
                                        "iterations": 3, "message_bytes": 4096, "compute_s": 1e-4, "test_chunks": 4}}),
    ];
    let mut causes = [0; 7];
    for doc in cases {
        let cfg = config(doc.clone());
        let x = explained(&cfg);
        assert_eq!(x.makespan, makespan(&cfg), "{doc}");
        for (a, b) in causes.iter_mut().zip(x.path.ps) {
            *a += b.min(1);
        }
    }
    // each cause is met on some path: noise, penalties, memory contention included
    assert_eq!(causes.iter().filter(|&&n| n > 0).count(), 7, "{causes:?}");
}

/// Every algorithm of every collective, eager (64 B) and rendezvous
/// (100 kB, past S), on 6 and 16 ranks (the power-of-two-only ones on 16).
#[test]
fn derivatives_match_finite_differences_on_every_collective_algorithm() {
    use crate::collectives::{Algorithm::*, CollectiveKind::*};
    let kinds = [Allreduce, Bcast, Reduce, Gather, Scatter, Allgather, Alltoall, Barrier, ReduceScatter, ReduceScatterBlock, Scan, Exscan];
    let mut checked = 0;
    for kind in kinds {
        for &alg in kind.algorithms() {
            for bytes in [64u64, 100_000] {
                for ranks in [6u32, 16] {
                    if kind == Allgather && alg == RecursiveDoubling && !ranks.is_power_of_two() {
                        continue;
                    }
                    let kind_s = serde_json::to_value(kind).unwrap();
                    let alg_s = serde_json::to_value(alg).unwrap();
                    let chunk_bytes = if alg == PipelinedRing { 16384 } else { 0 };
                    let cfg = config(serde_json::json!({"network": net(), "workload": {
                        "kind": "collective", "collective": kind_s, "algorithm": alg_s, "ranks": ranks, "iterations": 3,
                        "message_bytes": bytes, "chunk_bytes": chunk_bytes, "compute_s": 2e-5}}));
                    // all-to-all: arrivals tie with the CPU's next send
                    check_derivatives(&format!("{kind:?}/{alg:?}, {bytes} B on {ranks}"), &cfg, kind == Alltoall);
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 210);
}

/// Under noise a charge that starts inside a detour ends when the
/// detour does, whenever it was ready: the counts restart there and
/// stay the local slope (they used to add up the whole path, e.g. 299
/// crossings of L where the runtime moved by 12 ps per ps).
#[test]
fn derivatives_under_noise_are_the_local_slope() {
    let mut restarted = 0;
    for (seed, rate_hz, ranks, iterations) in [(4, 1000.0, 4, 1), (1, 20000.0, 8, 4), (2, 20000.0, 16, 6), (3, 5000.0, 9, 8)] {
        let cfg = config(serde_json::json!({"network": net(), "seed": seed,
            "noise": [{"kind": "poisson", "rate_hz": rate_hz, "duration_s": 5e-6}],
            "workload": {"kind": "bsp", "ranks": ranks, "iterations": iterations, "compute_s": 1e-5, "distances": [1],
                         "message_bytes": 1024, "periodic": true}}));
        let x = explained(&cfg);
        // below L·count: some count restarted inside a detour
        restarted += usize::from(x.path.ps[WIRE] > count(&x.path, L) * cfg.network.inter_node.l_ps);
        check_slopes(&format!("seed {seed}, {rate_hz} Hz, {ranks} ranks"), &cfg, &x, false);
    }
    assert!(restarted >= 2, "only {restarted} of the runs crossed a detour on the path");
}

#[test]
fn derivatives_match_finite_differences_on_applications() {
    let workloads = [
        serde_json::json!({"kind": "bsp", "ranks": 16, "iterations": 4, "compute_s": 1e-5, "distances": [1, 2], "message_bytes": 1024}),
        serde_json::json!({"kind": "bsp", "ranks": 9, "iterations": 3, "compute_s": 1e-5, "distances": [1], "message_bytes": 200000}),
        serde_json::json!({"kind": "krylov", "grid": [2, 2, 2], "iterations": 3}),
        serde_json::json!({"kind": "krylov", "grid": [2, 2, 2], "iterations": 3, "method": "pipecg"}),
        serde_json::json!({"kind": "dense2d", "grid": [2, 3], "blocks": 4}),
    ];
    for w in workloads {
        let cfg = config(serde_json::json!({"network": net(), "workload": w}));
        check_derivatives(&w.to_string(), &cfg, false);
    }
}

/// A get rendezvous sends from the sender's NIC alone: the derivatives
/// still match finite differences, the sender's o off the data's path.
#[test]
fn derivatives_match_finite_differences_with_a_get_rendezvous() {
    for (nic, w) in [
        (
            "loggopsim",
            serde_json::json!({"kind": "bsp", "ranks": 9, "iterations": 3, "compute_s": 1e-5, "distances": [1],
                                         "message_bytes": 200000}),
        ),
        (
            "dma",
            serde_json::json!({"kind": "krylov_kernel", "kernel": "halo", "grid": [2, 2, 2], "local": [128, 128, 128],
                                   "overlap_s": 1e-4, "trailing_s": 1e-5, "iterations": 2, "mode": "nonblocking",
                                   "test_chunks": 4}),
        ),
    ] {
        let mut network = net();
        network["rendezvous_model"] = "get".into();
        network["nic_model"] = nic.into();
        let cfg = config(serde_json::json!({"network": network, "workload": w}));
        check_derivatives(&format!("get, {nic} NIC: {w}"), &cfg, false);
    }
}
