//! Structure of every algorithm (who sends what to whom, message counts),
//! and complete, deadlock-free runs in the engine for many rank counts.

use super::*;
use crate::engine::Engine;
use crate::network::{LogGOPS, Network};
use crate::noise::Noise;
use crate::program::stream::StreamProgram;
use crate::record::Recorder;
use crate::time::Time;
use crate::workloads::{CollectiveLoop, CollectiveMode};

fn call(kind: CollectiveKind, algorithm: Algorithm, ranks: u32, root: u32, bytes: u64) -> Collective {
    Collective { kind, algorithm, ranks, root, bytes, chunk_bytes: 1000, tag: 2, comm: Comm::World }
}

fn sends(c: &Collective) -> Vec<(u32, u32, u64)> {
    let mut out = Vec::new();
    for r in 0..c.ranks {
        for s in c.steps(r) {
            match s {
                Step::Send { to, bytes } | Step::FanOut { to, bytes, .. } => out.push((r, to, bytes)),
                Step::Exchange { to, send_bytes, .. } => out.push((r, to, send_bytes)),
                _ => {}
            }
        }
    }
    out
}

fn receives(c: &Collective) -> usize {
    (0..c.ranks).flat_map(|r| c.steps(r)).filter(|s| matches!(s, Step::Recv { .. } | Step::Exchange { .. } | Step::FanIn { .. })).count()
}

/// Expected message count of each algorithm.
fn messages(kind: CollectiveKind, alg: Algorithm, p: u32, chunks: u64) -> Option<usize> {
    let (p, lg) = (p as usize, ceil_log2(p) as usize);
    let pof2 = floor_pow2(p as u32) as usize;
    use Algorithm::*;
    use CollectiveKind::*;
    Some(match (kind, alg) {
        (Allreduce | Barrier, Dissemination) => p * lg,
        (Allreduce, RecursiveDoubling) => pof2 * pof2.trailing_zeros() as usize + 2 * (p - pof2),
        (Allreduce, Ring) => 2 * p * (p - 1),
        (Allreduce, ReduceBcast) => 2 * (p - 1),
        (Allreduce, Rabenseifner) => 2 * pof2 * pof2.trailing_zeros() as usize + 4 * (p - pof2),
        (Bcast, a) if Algorithm::CHUNKED.contains(&a) => (p - 1) * chunks as usize,
        (Alltoall, Bruck) => p * lg,
        (Reduce, Rabenseifner) => 3 * (p - pof2) + pof2 * pof2.trailing_zeros() as usize + pof2 - 1,
        (Barrier, Linear | Binomial) => 2 * (p - 1),
        (Barrier, RecursiveDoubling) => pof2 * pof2.trailing_zeros() as usize + 2 * (p - pof2),
        (Allgather, Ring) | (Alltoall, _) => p * (p - 1),
        (Allgather, RecursiveDoubling | Bruck) => p * lg,
        (Allgather, NeighborExchange) => p * (p / 2),
        (ReduceScatter | ReduceScatterBlock, Ring | Pairwise) => p * (p - 1),
        (ReduceScatter | ReduceScatterBlock, Nonoverlapping) => 2 * (p - 1),
        // the fold and the hand-back, then log2 rounds of exchanges
        (ReduceScatter | ReduceScatterBlock, RecursiveHalving) => 2 * (p - pof2) + pof2 * pof2.trailing_zeros() as usize,
        // …and the mirror permutation, which leaves the 2^⌈lg/2⌉ bit palindromes in place
        (ReduceScatter | ReduceScatterBlock, Butterfly) => {
            let lg2 = pof2.trailing_zeros() as usize;
            2 * (p - pof2) + pof2 * lg2 + pof2 - (1 << lg2.div_ceil(2))
        }
        (Scan | Exscan, Linear) => p - 1,
        (Scan | Exscan, RecursiveDoubling) => (0..lg).map(|k| (0..p).filter(|r| r ^ (1 << k) < p).count()).sum(),
        // one more message than the tree when the root is not rank p − 1: counted from the steps
        (Reduce, InOrderBinary) => return None,
        // empty blocks are not scattered: counted from the steps, checked by their own test
        (Bcast, ScatterAllgather | ScatterRingAllgather) => return None,
        _ => p - 1, // trees: bcast, reduce, gather, scatter
    })
}

/// Messages of one call as the workloads below run it: the formula, or the steps' own count.
fn expected(kind: CollectiveKind, alg: Algorithm, p: u32, chunks: u64, bytes: u64) -> u64 {
    messages(kind, alg, p, chunks).unwrap_or_else(|| sends(&Collective { chunk_bytes: 30_000, ..call(kind, alg, p, p / 2, bytes) }).len())
        as u64
}

/// The broadcasts that cut messages into chunks.
fn is_relay(kind: CollectiveKind, alg: Algorithm) -> bool {
    kind == CollectiveKind::Bcast && Algorithm::CHUNKED.contains(&alg)
}

/// Whether the algorithm runs on p ranks (recursive doubling allgather
/// needs a power of two, neighbour exchange an even count).
fn fits(kind: CollectiveKind, alg: Algorithm, p: u32) -> bool {
    call(kind, alg, p, 0, 8).validate().is_ok()
}

fn all_calls() -> Vec<(CollectiveKind, Algorithm)> {
    use CollectiveKind::*;
    [Allreduce, Bcast, Reduce, Gather, Scatter, Allgather, Alltoall, Barrier, ReduceScatter, ReduceScatterBlock, Scan, Exscan]
        .into_iter()
        .flat_map(|k| k.algorithms().iter().map(move |&a| (k, a)))
        .collect()
}

#[test]
fn message_counts_match_each_algorithm() {
    for (kind, alg) in all_calls() {
        for p in 1..=40u32 {
            if !fits(kind, alg, p) {
                continue;
            }
            let c = call(kind, alg, p, p / 3, 2500);
            c.validate().unwrap();
            let s = sends(&c);
            if let Some(n) = messages(kind, alg, p, 3) {
                assert_eq!(s.len(), n, "{kind:?}/{alg:?} p={p}");
            }
            assert_eq!(receives(&c), s.len(), "{kind:?}/{alg:?} p={p}: every send has a receive");
            assert!(s.iter().all(|&(a, b, _)| a != b && b < p), "{kind:?}/{alg:?} p={p}: peers in range");
        }
    }
}

#[test]
fn dissemination_makes_n_log_n_dependencies_and_binomial_n_minus_1() {
    // Widener et al. §4.3: 15× more direct dependencies at 32Ki ranks.
    let p = 32 * 1024;
    let diss = p as usize * ceil_log2(p) as usize;
    assert_eq!(messages(CollectiveKind::Allreduce, Algorithm::Dissemination, p, 1), Some(diss));
    assert_eq!(messages(CollectiveKind::Bcast, Algorithm::Binomial, p, 1), Some(p as usize - 1));
    assert!(diss / (p as usize - 1) >= 15);
    let small = call(CollectiveKind::Bcast, Algorithm::Binomial, 64, 0, 8);
    assert_eq!(sends(&small).len(), 63);
}

#[test]
fn gather_and_scatter_carry_whole_subtrees() {
    let p = 13;
    let gather = call(CollectiveKind::Gather, Algorithm::Binomial, p, 0, 10);
    // The root receives every other rank's block exactly once in total.
    let to_root: u64 = sends(&gather).iter().filter(|s| s.1 == 0).map(|s| s.2).sum();
    assert_eq!(to_root, 10 * (p as u64 - 1));
    let scatter = call(CollectiveKind::Scatter, Algorithm::Binomial, p, 0, 10);
    let from_root: u64 = sends(&scatter).iter().filter(|s| s.0 == 0).map(|s| s.2).sum();
    assert_eq!(from_root, 10 * (p as u64 - 1));
    assert_eq!((subtree_size(16, 0), subtree_size(16, 1), subtree_size(16, 2), subtree_size(16, 8)), (16, 8, 4, 1));
}

#[test]
fn recursive_doubling_folds_non_powers_of_two() {
    // p = 6: ranks 0 and 2 hand over to 1 and 3, the four others exchange.
    let c = call(CollectiveKind::Allreduce, Algorithm::RecursiveDoubling, 6, 0, 8);
    assert_eq!(c.steps(0), vec![Step::Send { to: 1, bytes: 8 }, Step::Recv { from: 1, bytes: 8 }]);
    let ex = |peer| Step::Exchange { to: peer, send_bytes: 8, from: peer, recv_bytes: 8 };
    assert_eq!(c.steps(1), vec![Step::Recv { from: 0, bytes: 8 }, ex(3), ex(4), Step::Send { to: 0, bytes: 8 }]);
    assert_eq!(c.steps(5), vec![ex(4), ex(3)]);
}

#[test]
fn invalid_choices_are_rejected() {
    let mut c = call(CollectiveKind::Barrier, Algorithm::Ring, 8, 0, 8);
    assert!(c.validate().unwrap_err().to_string().contains("not an algorithm"));
    c = call(CollectiveKind::Allgather, Algorithm::RecursiveDoubling, 12, 0, 8);
    assert!(c.validate().unwrap_err().to_string().contains("power-of-two"));
    c = call(CollectiveKind::Reduce, Algorithm::Binomial, 8, 8, 8);
    assert!(c.validate().unwrap_err().to_string().contains("workload.root: must be < ranks (8)"));
}

fn run(w: CollectiveLoop) -> Engine<StreamProgram<CollectiveLoop>> {
    let mut e =
        Engine::new(StreamProgram::new(w, Recorder::disabled()), Network::uniform(LogGOPS::loggopsim_defaults()), Noise::none()).unwrap();
    e.run().unwrap();
    e
}

fn coll(ranks: u32, collective: CollectiveKind, algorithm: Algorithm, bytes: u64, mode: CollectiveMode) -> CollectiveLoop {
    CollectiveLoop {
        ranks,
        iterations: 2,
        collective,
        algorithm: Some(algorithm),
        mode,
        message_bytes: bytes,
        chunk_bytes: 30_000,
        compute_ps: 1_000_000,
        root: ranks / 2,
        test_chunks: 1,
        ..Default::default()
    }
}

#[test]
fn every_algorithm_runs_to_completion_eager_and_rendezvous() {
    for (kind, alg) in all_calls() {
        for p in [1u32, 2, 3, 5, 8, 13, 16, 33] {
            if !fits(kind, alg, p) {
                continue;
            }
            for bytes in [8u64, 100_000] {
                let w = coll(p, kind, alg, bytes, CollectiveMode::Blocking);
                let chunks = if is_relay(kind, alg) { bytes.div_ceil(30_000) } else { 1 };
                let e = run(w);
                let msgs = expected(kind, alg, p, chunks, bytes);
                // per iteration: one computation per rank, each message sent and received once
                assert_eq!(e.events, 2 * (p as u64 + 2 * msgs), "{kind:?}/{alg:?} p={p} bytes={bytes}");
            }
        }
    }
}

#[test]
fn ideal_mode_removes_the_collective_time_exactly() {
    for (kind, alg) in all_calls().into_iter().filter(|&(k, a)| fits(k, a, 12)) {
        let e = run(coll(12, kind, alg, 64, CollectiveMode::Ideal));
        assert!((0..12).all(|r| e.finish_time(r) == 2 * 1_000_000), "{kind:?}/{alg:?}");
        assert_eq!(e.events, 24);
    }
}

#[test]
fn linear_broadcast_is_paced_by_the_roots_gap() {
    let p = LogGOPS::loggopsim_defaults();
    let n = 10u32;
    let mut w = coll(n, CollectiveKind::Bcast, Algorithm::Linear, 1, CollectiveMode::Blocking);
    (w.root, w.iterations, w.compute_ps) = (0, 1, 0);
    let e = run(w);
    // The root's sends start every max(o, g); the last one lands o + L later,
    // and receiving it costs o.
    let last: Time = (n as Time - 2) * p.o_ps.max(p.g_ps) + p.o_ps + p.l_ps + p.o_ps;
    assert_eq!((1..n).map(|r| e.finish_time(r)).max().unwrap(), last);
}

#[test]
fn pipelining_beats_a_single_message_for_large_broadcasts() {
    let mut chain = coll(16, CollectiveKind::Bcast, Algorithm::PipelinedRing, 1 << 20, CollectiveMode::Blocking);
    (chain.iterations, chain.compute_ps, chain.root, chain.chunk_bytes) = (1, 0, 0, 1 << 16);
    let piped = run(chain.clone());
    chain.chunk_bytes = 1 << 20;
    let whole = run(chain);
    let makespan = |e: &Engine<StreamProgram<CollectiveLoop>>| (0..16).map(|r| e.finish_time(r)).max().unwrap();
    assert!(makespan(&piped) * 3 < makespan(&whole), "{} vs {}", makespan(&piped), makespan(&whole));
    // a segmented binary tree: the levels forward segments while the root still
    // sends, instead of each of the 4 levels sending the whole message to two children
    let mut tree = coll(16, CollectiveKind::Bcast, Algorithm::BinaryTree, 1 << 20, CollectiveMode::Blocking);
    (tree.iterations, tree.compute_ps, tree.root, tree.chunk_bytes) = (1, 0, 0, 1 << 16);
    let segmented = makespan(&run(tree.clone()));
    tree.chunk_bytes = 0;
    let unsegmented = makespan(&run(tree));
    assert!(segmented * 2 < unsegmented, "{segmented} vs {unsegmented}");
}

fn run_with(w: CollectiveLoop, async_progress: bool) -> Time {
    let p = w.ranks;
    let prog = StreamProgram::new(w, Recorder::disabled()).with_async_progress(async_progress);
    let mut e = Engine::new(prog, Network::uniform(LogGOPS::loggopsim_defaults()), Noise::none()).unwrap();
    e.run().unwrap();
    (0..p).map(|r| e.finish_time(r)).max().unwrap()
}

#[test]
fn nonblocking_collectives_progress_only_inside_mpi_calls_unless_asynchronous() {
    let c: Time = 200_000_000; // 200 µs of computation to overlap
    let mut w = coll(16, CollectiveKind::Allreduce, Algorithm::Dissemination, 8, CollectiveMode::Blocking);
    (w.iterations, w.compute_ps) = (1, c);
    let blocking = run_with(w.clone(), false);
    let round = 5_542_000; // o + L + o + (s−1)G
    assert_eq!(blocking, c + 4 * round);
    let ideal = run_with(CollectiveLoop { mode: CollectiveMode::Ideal, ..w.clone() }, false);
    assert_eq!(ideal, c);
    let nb = CollectiveLoop { mode: CollectiveMode::Nonblocking, ..w.clone() };
    // Without tests or a progress thread only the first round overlaps: the
    // rest runs inside the final wait.
    let no_progress = run_with(nb.clone(), false);
    assert!(no_progress > c + 3 * round && no_progress < blocking, "{no_progress}");
    // Testing between pieces of the computation posts the next rounds.
    let polled = run_with(CollectiveLoop { test_chunks: 8, ..nb.clone() }, false);
    assert!(polled < no_progress, "{polled}");
    // Every round then waits in the background; only its CPU overheads
    // (o to send, o + (s−1)G to receive) remain on the critical path.
    assert_eq!(polled, c + 4 * (1_500_000 + 1_542_000));
    // A progress thread overlaps the whole collective.
    let threaded = run_with(nb, true);
    assert!(threaded < c + round, "{threaded}");
    assert!(threaded >= ideal);
}

#[test]
fn nonblocking_mode_completes_every_algorithm() {
    for (kind, alg) in all_calls() {
        for async_progress in [false, true] {
            let p = 11;
            if !fits(kind, alg, p) {
                continue;
            }
            let w = CollectiveLoop { test_chunks: 3, ..coll(p, kind, alg, 70_000, CollectiveMode::Nonblocking) };
            let prog = StreamProgram::new(w, Recorder::disabled()).with_async_progress(async_progress);
            let mut e = Engine::new(prog, Network::uniform(LogGOPS::loggopsim_defaults()), Noise::none()).unwrap();
            e.run().unwrap_or_else(|err| panic!("{kind:?}/{alg:?} async={async_progress}: {err}"));
            let chunks = if is_relay(kind, alg) { 3 } else { 1 };
            assert_eq!(e.events, 2 * (3 * p as u64 + 2 * expected(kind, alg, p, chunks, 70_000)), "{kind:?}/{alg:?}");
        }
    }
}

/// The relay topologies are trees: every non-root rank has one parent that
/// lists it as a child, and the root reaches everyone.
#[test]
fn relay_topologies_are_spanning_trees() {
    use relay::{child, children, parent};
    for &alg in CollectiveKind::Bcast.algorithms() {
        for p in 1..=40u32 {
            let mut reached = vec![false; p as usize];
            let mut stack = vec![0u32];
            while let Some(v) = stack.pop() {
                assert!(!reached[v as usize], "{alg:?} p={p}: {v} reached twice");
                reached[v as usize] = true;
                for j in 0..children(alg, v, p) {
                    let c = child(alg, v, p, j).unwrap();
                    assert_eq!(parent(alg, c, p), Some(v), "{alg:?} p={p}: parent of {c}");
                    stack.push(c);
                }
            }
            assert!(reached.iter().all(|&r| r), "{alg:?} p={p}: not everyone reached");
        }
    }
}

#[test]
fn ring_family_shapes_match_hpl() {
    use relay::{child, children, parent};
    use Algorithm::*;
    let kids = |alg, v, p| (0..children(alg, v, p)).map(|j| child(alg, v, p, j).unwrap()).collect::<Vec<_>>();
    // 1-ring: a chain.
    assert_eq!((kids(Ring, 0, 6), kids(Ring, 4, 6), kids(Ring, 5, 6)), (vec![1], vec![5], vec![]));
    // modified ring: 1 is fed directly and forwards nothing; 2 starts the chain.
    assert_eq!((kids(ModifiedRing, 0, 6), kids(ModifiedRing, 1, 6), kids(ModifiedRing, 2, 6)), (vec![1, 2], vec![], vec![3]));
    // 2-ring over 7: up 1→2→3, down 6→5→4.
    assert_eq!(
        (kids(TwoRing, 0, 7), kids(TwoRing, 3, 7), kids(TwoRing, 6, 7), parent(TwoRing, 4, 7)),
        (vec![1, 6], vec![], vec![5], Some(5))
    );
    // modified 2-ring over 7: 1 direct, then up 2→3→4, down 6→5.
    assert_eq!((kids(TwoRingModified, 0, 7), kids(TwoRingModified, 2, 7), kids(TwoRingModified, 6, 7)), (vec![1, 2, 6], vec![3], vec![5]));
    // The longest chain sets the latency: p−1 hops for the 1-ring, about half for the 2-rings.
    let depth = |alg, p| {
        (0..p)
            .map(|mut v| {
                let mut d = 0;
                while let Some(u) = parent(alg, v, p) {
                    v = u;
                    d += 1;
                }
                d
            })
            .max()
            .unwrap()
    };
    assert_eq!((depth(Ring, 16), depth(ModifiedRing, 16), depth(TwoRing, 16), depth(TwoRingModified, 16)), (15, 14, 8, 7));
}

#[test]
fn chunked_rings_forward_each_chunk_once_in_order() {
    for alg in [Algorithm::Ring, Algorithm::ModifiedRing, Algorithm::TwoRing, Algorithm::TwoRingModified] {
        let mut c = call(CollectiveKind::Bcast, alg, 9, 4, 2500);
        c.chunk_bytes = 1000;
        for r in 0..9 {
            let got: Vec<u64> =
                c.steps(r).iter().filter_map(|s| if let Step::Recv { bytes, .. } = s { Some(*bytes) } else { None }).collect();
            let want: Vec<u64> = if r == 4 { vec![] } else { vec![1000, 1000, 500] };
            assert_eq!(got, want, "{alg:?} rank {r}");
        }
        // unchunked: one message per edge
        c.chunk_bytes = 0;
        assert_eq!(sends(&c).len(), 8);
        assert!(sends(&c).iter().all(|s| s.2 == 2500));
    }
}

/// Rows and columns of a 3×4 grid run their collectives side by side.
#[test]
fn sub_communicators_map_group_ranks_to_world_ranks() {
    let rows = Comm::Blocks { size: 4 };
    let cols = Comm::Strided { stride: 4 };
    assert_eq!((rows.group_size(12), cols.group_size(12)), (Ok(4), Ok(3)));
    assert!(Comm::Blocks { size: 5 }.group_size(12).unwrap_err().contains("divide"));
    assert_eq!((rows.local(6), rows.global(6, 3), cols.local(6), cols.global(6, 2)), (2, 7, 1, 10));
    // A binomial broadcast from group-local root 1 in every column.
    let mut c = call(CollectiveKind::Bcast, Algorithm::Binomial, 3, 1, 8);
    c.comm = cols;
    let mut s: Vec<(u32, u32)> = (0..12)
        .flat_map(|r| {
            c.steps(r).into_iter().filter_map(move |st| match st {
                Step::FanOut { to, .. } | Step::Send { to, .. } => Some((r, to)),
                _ => None,
            })
        })
        .collect();
    s.sort();
    // column j holds ranks j, j+4, j+8; its root is j+4
    let mut want: Vec<(u32, u32)> = (0..4).flat_map(|j| [(j + 4, j + 8), (j + 4, j)]).collect();
    want.sort();
    assert_eq!(s, want);
    // and the engine runs all groups to completion with the right message count
    let w = CollectiveLoop { comm: rows, ..coll(12, CollectiveKind::Allreduce, Algorithm::Dissemination, 8, CollectiveMode::Blocking) };
    let w = CollectiveLoop { root: 0, ..w };
    let e = run(w);
    assert_eq!(e.events, 2 * (12 + 2 * 3 * 4 * 2)); // 3 rows × 4 ranks × log2(4) messages
}

#[test]
fn auto_allreduce_follows_open_mpis_rule_by_size_and_ranks() {
    use Algorithm::*;
    // (ranks, bytes) -> what ompi_coll_tuned_allreduce_intra_dec_fixed runs
    // for MPI_SUM on doubles (rule 4/5 = ring, or recursive doubling below one
    // element per rank; 2 = reduce + bcast; 6 = Rabenseifner).
    let table = [
        (2, 4, RecursiveDoubling), // rule 4, 0 elements < 2 ranks
        (2, 100, RecursiveDoubling),
        (2, 65536, Ring), // rule 5
        (2, 1 << 20, Rabenseifner),
        (6, 8, RecursiveDoubling),
        (6, 8192, Rabenseifner),
        (16, 32, RecursiveDoubling), // rule 5, 4 elements < 16 ranks
        (20, 2000, RecursiveDoubling),
        (40, 64, RecursiveDoubling), // rule 5, 8 elements < 40 ranks
        (40, 4096, Rabenseifner),
        (64, 8, RecursiveDoubling),
        (64, 1 << 20, Rabenseifner),
        (200, 8, ReduceBcast),
        (200, 200_000, RecursiveDoubling),
        (1024, 8, ReduceBcast),
        (1024, 8192, RecursiveDoubling),
        (1024, 1 << 20, Rabenseifner),
        (3000, 3000, RecursiveDoubling), // rule 5, 375 elements < 3000 ranks
        (65536, 8, ReduceBcast),
        (65536, 20_000, RecursiveDoubling),
        (65536, 1 << 20, Rabenseifner),
    ];
    for (ranks, bytes, want) in table {
        assert_eq!(CollectiveKind::Allreduce.auto_algorithm(MpiLibrary::OpenMpi, ranks, bytes), want, "{ranks} ranks, {bytes} B");
    }
    assert_eq!(CollectiveKind::Bcast.auto_algorithm(MpiLibrary::OpenMpi, 64, 1 << 20), Algorithm::Knomial);
    // 64–127 ranks: 7
}

#[test]
fn auto_picks_a_bandwidth_algorithm_for_large_allreduces() {
    // The case: 1 MiB on 64 ranks; dissemination moves p·log p whole
    // vectors, Rabenseifner about 2 vectors per rank.
    let time = |alg: Algorithm| {
        let w = CollectiveLoop {
            ranks: 64,
            iterations: 1,
            collective: CollectiveKind::Allreduce,
            algorithm: Some(alg),
            message_bytes: 1 << 20,
            ..Default::default()
        };
        let mut e =
            Engine::new(StreamProgram::new(w, Recorder::disabled()), Network::uniform(LogGOPS::loggopsim_defaults()), Noise::none())
                .unwrap();
        e.run().unwrap();
        (0..64).map(|r| e.finish_time(r)).max().unwrap()
    };
    let auto = CollectiveKind::Allreduce.auto_algorithm(MpiLibrary::OpenMpi, 64, 1 << 20);
    let (t_auto, t_diss) = (time(auto), time(Algorithm::Dissemination));
    assert!(t_auto * 3 < t_diss, "{auto:?}: {t_auto} ps vs dissemination {t_diss} ps");
}

#[test]
fn auto_allreduce_follows_mpichs_rule() {
    use Algorithm::*;
    // generic.json: ≤ 8 B or fewer doubles than pof2(ranks) → recursive doubling, else Rabenseifner
    for (ranks, bytes, want) in [
        (64, 8, RecursiveDoubling),
        (64, 256, RecursiveDoubling), // 32 doubles < 64
        (64, 512, Rabenseifner),
        (100, 504, RecursiveDoubling), // 63 doubles < 64 = pof2(100)
        (100, 512, Rabenseifner),
        (1024, 1 << 20, Rabenseifner),
        (3, 16, Rabenseifner),
    ] {
        assert_eq!(CollectiveKind::Allreduce.auto_algorithm(MpiLibrary::Mpich, ranks, bytes), want, "{ranks} ranks, {bytes} B");
    }
}

#[test]
fn scatter_allgather_delivers_every_block_once() {
    // Each rank receives its binomial subtree's blocks in the scatter and,
    // in the allgather, every block but its own: n − own + subtree bytes.
    for alg in [Algorithm::ScatterAllgather, Algorithm::ScatterRingAllgather] {
        for p in 1..=40u32 {
            for n in [2500u64, 40, 7] {
                let root = p / 3;
                let c = call(CollectiveKind::Bcast, alg, p, root, n);
                let s = n.div_ceil(p as u64);
                let from_block = |b: u64| n.saturating_sub(b * s);
                for r in 0..p {
                    let v = ((r + p - root) % p) as u64;
                    let subtree = if v == 0 { 0 } else { from_block(v).min((v & v.wrapping_neg()) * s) };
                    let got: u64 = c
                        .steps(r)
                        .into_iter()
                        .map(|st| match st {
                            Step::Recv { bytes, .. } => bytes,
                            Step::Exchange { recv_bytes, .. } => recv_bytes,
                            _ => 0,
                        })
                        .sum();
                    assert_eq!(got, n - from_block(v).min(s) + subtree, "{alg:?} p={p} n={n} rank {r}");
                }
                let sent: u64 = sends(&c).iter().map(|x| x.2).sum();
                let received: u64 = (0..p)
                    .flat_map(|r| c.steps(r))
                    .map(|st| match st {
                        Step::Recv { bytes, .. } => bytes,
                        Step::Exchange { recv_bytes, .. } => recv_bytes,
                        _ => 0,
                    })
                    .sum();
                assert_eq!(sent, received, "{alg:?} p={p} n={n}");
            }
        }
    }
}

#[test]
fn knomial_tree_has_radix_4_and_log4_depth() {
    use super::relay::{children, parent};
    // root's children in a 64-rank radix-4 tree: 16, 32, 48, then 4, 8, 12, then 1, 2, 3
    let c = Collective { chunk_bytes: 0, ..call(CollectiveKind::Bcast, Algorithm::Knomial, 64, 0, 8) };
    let to: Vec<u32> = c.steps(0).into_iter().filter_map(|s| if let Step::FanOut { to, .. } = s { Some(to) } else { None }).collect();
    assert_eq!(to, vec![16, 32, 48, 4, 8, 12, 1, 2, 3]);
    assert_eq!(parent(Algorithm::Knomial, 37, 64), Some(36));
    assert_eq!(parent(Algorithm::Knomial, 36, 64), Some(32));
    assert_eq!(children(Algorithm::Knomial, 36, 64), 3);
    let depth = |mut v: u32| {
        let mut d = 0;
        while let Some(u) = parent(Algorithm::Knomial, v, 1 << 12) {
            v = u;
            d += 1;
        }
        d
    };
    assert_eq!((0..1 << 12).map(depth).max(), Some(6)); // log4(4096) digits
}

#[test]
fn auto_follows_open_mpi_and_mpich_bcast_and_allgather_tables() {
    use super::rules::{mpich, openmpi};
    use Algorithm::*;
    // (ranks, bytes, Open MPI's algorithm number in coll_tuned_decision_fixed.c → ours)
    for (p, n, want) in [
        (2, 16, Ring),                     // <4 ranks, <32 B: 3 pipeline (unsegmented: one chain)
        (2, 2048, Linear),                 // 1 basic linear
        (6, 100, Binomial),                // 6
        (12, 1000, Knomial),               // 7
        (20, 100_000, Binomial),           // 6
        (20, 2 << 20, ScatterAllgather),   // 8
        (100, 8, Knomial),                 // 7
        (200, 1000, BinaryTree),           // 5
        (500, 20_000, BinaryTree),         // 4 split binary tree, run as the binary tree
        (1500, 1 << 20, ScatterAllgather), // 8
        (8192, 10_000, BinaryTree),        // 5
    ] {
        assert_eq!(openmpi::bcast(p, n), want, "open mpi bcast p={p} n={n}");
    }
    for (p, n, want) in [
        (4, 1 << 20, Binomial),
        (64, 12288, Binomial),
        (64, 12289, ScatterAllgather),
        (64, 524289, ScatterRingAllgather),
        (100, 100_000, ScatterRingAllgather),
    ] {
        assert_eq!(mpich::bcast(p, n), want, "mpich bcast p={p} n={n}");
    }
    assert_eq!(mpich::allgather(64, 8000), RecursiveDoubling); // 512,000 B < 512 KiB
    assert_eq!(mpich::allgather(64, 8200), Ring);
    assert_eq!(mpich::allgather(100, 800), Bruck); // 80,000 B < 80 KiB
    assert_eq!(mpich::allgather(100, 900), Ring);
}

#[test]
fn alltoall_algorithms_deliver_every_block_once() {
    // each rank receives the p − 1 blocks meant for it: linear in batches, pairwise in p − 1
    // steps; Bruck in ⌈log2 p⌉ rounds, a block relayed once per set bit of its offset
    for alg in [Algorithm::Bruck, Algorithm::Linear, Algorithm::Pairwise] {
        for p in [2u32, 3, 5, 8, 13, 31, 32, 33, 64, 70] {
            let c = call(CollectiveKind::Alltoall, alg, p, 0, 100);
            for r in 0..p {
                let got: u64 = c
                    .steps(r)
                    .into_iter()
                    .map(|st| match st {
                        Step::Recv { bytes, .. } | Step::FanIn { bytes, .. } => bytes,
                        Step::Exchange { recv_bytes, .. } => recv_bytes,
                        _ => 0,
                    })
                    .sum();
                // Bruck forwards block j once per set bit of j
                let hops: u64 = if alg == Algorithm::Bruck { (1..p).map(|j| j.count_ones() as u64).sum() } else { p as u64 - 1 };
                assert_eq!(got, 100 * hops, "{alg:?} p={p} rank {r}");
            }
        }
    }
    // a batch of the linear alltoall never holds more than 62 operations (63 wait slots)
    let c = call(CollectiveKind::Alltoall, Algorithm::Linear, 100, 0, 8);
    assert!(c.steps(5).iter().all(|s| !matches!(s, Step::WaitFanOut { n } if *n > 62)));
}

#[test]
fn auto_follows_open_mpi_and_mpich_alltoall_tables() {
    use super::rules::{mpich, openmpi};
    use Algorithm::*;
    // (ranks, bytes per peer, Open MPI's number in coll_tuned_decision_fixed.c → ours)
    for (p, n, want) in [
        (2, 8, Pairwise),         // 2
        (2, 100, Pairwise),       // 2
        (2, 1000, Pairwise),      // 5 two_proc
        (4, 100, Linear),         // 4 linear_sync, no request limit
        (20, 100, Bruck),         // 3 modified Bruck
        (40, 100_000, Linear),    // 1
        (100, 1 << 20, Pairwise), // 2
        (5000, 1000, Bruck),      // 3
    ] {
        assert_eq!(openmpi::alltoall(p, n), want, "open mpi alltoall p={p} n={n}");
    }
    assert_eq!(mpich::alltoall(4, 32768), Linear);
    assert_eq!(mpich::alltoall(4, 32769), Pairwise);
    assert_eq!(mpich::alltoall(64, 256), Bruck);
    assert_eq!(mpich::alltoall(64, 257), Linear);
    assert_eq!(mpich::alltoall(64, 40_000), Pairwise);
}

#[test]
fn open_mpi_barrier_table() {
    use super::rules::openmpi;
    use Algorithm::*;
    for (p, want) in [
        (2, RecursiveDoubling),
        (5, Linear),
        (40, RecursiveDoubling),
        (100, Dissemination),
        (300, Binomial),
        (2000, Binomial),
        (5000, Dissemination),
    ] {
        assert_eq!(openmpi::barrier(p), want, "p={p}");
    }
    assert_eq!(CollectiveKind::Barrier.auto_algorithm(MpiLibrary::Mpich, 300, 0), Dissemination);
    // the linear barrier's root works through 129 peers in runs of at most 62
    let c = call(CollectiveKind::Barrier, Linear, 130, 0, 0);
    assert_eq!((sends(&c).len(), receives(&c)), (2 * 129, 2 * 129));
    assert!(c.steps(0).iter().all(|s| !matches!(s, Step::WaitFanOut { n } if *n > 62)));
}

#[test]
fn rabenseifner_reduce_gathers_the_whole_vector_at_the_root() {
    use super::rules::mpich;
    for p in [2u32, 3, 4, 6, 8, 13, 16, 33] {
        for root in [0, p / 2, p - 1] {
            let n = 1u64 << 20;
            let c = call(CollectiveKind::Reduce, Algorithm::Rabenseifner, p, root, n);
            let rounds = floor_pow2(p).trailing_zeros();
            // the root is relative rank 0: even, so with folded pairs it first takes two fold steps
            let fold = if p > floor_pow2(p) { 2 } else { 0 };
            // the root ends the gather having received all pieces but its own
            let gathered: u64 = c
                .steps(root)
                .into_iter()
                .skip(fold + rounds as usize)
                .map(|s| if let Step::Recv { bytes, .. } = s { bytes } else { 0 })
                .sum();
            assert_eq!(gathered, n - (n >> rounds), "p={p} root={root}");
            assert_eq!(c.steps(root).last().map(|s| matches!(s, Step::Send { .. })), Some(false), "the root sends nothing last");
        }
    }
    assert_eq!(mpich::reduce(64, 2048), Algorithm::Binomial);
    assert_eq!(mpich::reduce(64, 4096), Algorithm::Rabenseifner);
    assert_eq!(mpich::reduce(1024, 4096), Algorithm::Binomial); // 512 doubles < 1024
}

/// Bytes a call's ranks send in all.
fn bytes_sent(c: &Collective) -> u64 {
    sends(c).iter().map(|s| s.2).sum()
}

#[test]
fn reduce_scatter_moves_the_closed_form_volume_and_every_rank_gets_its_block() {
    use Algorithm::*;
    let b = 1000u64;
    for p in [2u32, 3, 5, 6, 8, 12, 16, 27, 32, 40] {
        let (pof2, rem) = (floor_pow2(p) as u64, (p - floor_pow2(p)) as u64);
        let pb = p as u64 * b;
        let lg2 = pof2.trailing_zeros();
        // the halvings move half the vector per pair and round: p·b·(2^⌊lg p⌋ − 1) in all
        let halving = pb * (pof2 - 1);
        let palindromes = 1u64 << lg2.div_ceil(2);
        for (alg, want) in [
            (Ring, pb * (p as u64 - 1)),
            (Pairwise, pb * (p as u64 - 1)),
            (Nonoverlapping, pb * (p as u64 - 1) + b * (p as u64 - 1)),
            (RecursiveHalving, rem * pb + halving + rem * b),
            (Butterfly, rem * pb + halving + rem * b + (pof2 - palindromes) * b),
        ] {
            let c = call(CollectiveKind::ReduceScatter, alg, p, 0, b);
            assert_eq!(bytes_sent(&c), want, "{alg:?} p={p}");
            // a folded-out rank's last step receives its own block
            for r in (0..2 * rem as u32).step_by(2).filter(|_| matches!(alg, RecursiveHalving | Butterfly)) {
                assert_eq!(c.steps(r).last().copied().map(|s| matches!(s, Step::Recv { bytes, .. } if bytes == b)), Some(true));
            }
        }
    }
    // neighbour exchange: every rank receives the p − 1 other blocks
    for p in [2u32, 4, 6, 10, 32] {
        let c = call(CollectiveKind::Allgather, NeighborExchange, p, 0, 100);
        for r in 0..p {
            let got: u64 = c.steps(r).iter().map(|s| if let Step::Exchange { recv_bytes, .. } = s { *recv_bytes } else { 0 }).sum();
            assert_eq!(got, 100 * (p as u64 - 1), "p={p} r={r}");
        }
    }
    // in-order binary: the tree rooted at p − 1, one more message to another root
    for (p, root, msgs) in [(7u32, 6u32, 6usize), (7, 0, 7), (10, 3, 10)] {
        let c = call(CollectiveKind::Reduce, InOrderBinary, p, root, 8);
        assert_eq!(sends(&c).len(), msgs, "p={p} root={root}");
        if root == p - 1 {
            assert!(c.steps(root).iter().all(|s| matches!(s, Step::Recv { .. })), "the tree's own root only receives");
        } else {
            assert_eq!(c.steps(root).last().copied(), Some(Step::Recv { from: p - 1, bytes: 8 }), "p − 1 hands the result on");
        }
    }
}

#[test]
fn reduce_scatter_algorithms_trade_latency_for_bandwidth() {
    let makespan = |alg: Algorithm, bytes: u64| {
        let mut w = coll(64, CollectiveKind::ReduceScatter, alg, bytes, CollectiveMode::Blocking);
        (w.iterations, w.compute_ps) = (1, 0);
        let e = run(w);
        (0..64).map(|r| e.finish_time(r)).max().unwrap()
    };
    use Algorithm::*;
    // 8-byte blocks: log2(64) = 6 rounds beat the ring's 63 steps and the root's 63 sends
    let small: Vec<Time> = [RecursiveHalving, Butterfly, Ring, Nonoverlapping].iter().map(|&a| makespan(a, 8)).collect();
    assert!(small[0] * 3 < small[2] && small[1] * 3 < small[2] && small[0] < small[3], "{small:?}");
    // 64 KiB blocks (4 MiB vector): reducing the whole vector to one rank loses to the
    // bandwidth-optimal algorithms, which each move (p − 1)·b per rank
    let large: Vec<Time> = [RecursiveHalving, Butterfly, Ring, Nonoverlapping].iter().map(|&a| makespan(a, 65536)).collect();
    assert!(large[..3].iter().all(|&t| t * 2 < large[3]), "{large:?}");
}

#[test]
fn auto_follows_open_mpi_gather_and_scatter_tables() {
    use super::rules::openmpi;
    use Algorithm::*;
    // (ranks, bytes per block, Open MPI's algorithm number in coll_tuned_decision_fixed.c → ours)
    for (p, n, want) in [
        (3, 1, Linear),           // 3 linear_sync
        (3, 1000, Binomial),      // 2
        (3, 40_000, Linear),      // 1
        (6, 500, Binomial),       // 2
        (6, 4000, Linear),        // 1
        (100, 1 << 20, Binomial), // 2 at 8–255 ranks whatever the size
        (300, 4096, Linear),      // 1
        (300, 8192, Binomial),    // 2
        (5000, 4096, Binomial),
    ] {
        assert_eq!(openmpi::gather(p, n), want, "open mpi gather p={p} n={n}");
    }
    for (p, n, want) in [
        (3, 1000, Linear),      // 1
        (6, 1000, Binomial),    // 2
        (6, 100_000, Linear),   // 3 linear_nb
        (12, 8000, Binomial),   // 2
        (20, 20_000, Linear),   // 1
        (40, 10_000, Binomial), // 2
        (1024, 256, Binomial),  // 2
        (1024, 1024, Linear),   // 3 linear_nb
    ] {
        assert_eq!(openmpi::scatter(p, n), want, "open mpi scatter p={p} n={n}");
    }
    // auto follows them under Open MPI, and MPICH's only tree under MPICH
    assert_eq!(CollectiveKind::Scatter.auto_algorithm(MpiLibrary::OpenMpi, 1024, 1024), Linear);
    assert_eq!(CollectiveKind::Scatter.auto_algorithm(MpiLibrary::Mpich, 1024, 1024), Binomial);
    assert_eq!(CollectiveKind::Gather.auto_algorithm(MpiLibrary::OpenMpi, 300, 4096), Linear);
}

#[test]
fn auto_follows_open_mpi_reduce_allgather_and_reduce_scatter_tables() {
    use super::rules::{mpich, openmpi};
    use Algorithm::*;
    // (ranks, bytes, Open MPI's algorithm number in coll_tuned_decision_fixed.c → ours)
    for (p, n, want) in [
        (2, 4, Rabenseifner),         // 7
        (3, 20, Ring),                // 3 pipeline, unsegmented: one chain
        (3, 1000, Linear),            // 1
        (3, 600_000, TwoRing),        // 2 chain, fan-in 2
        (6, 1000, BinaryTree),        // 4
        (6, 100_000, Binomial),       // 5
        (300, 10_000, InOrderBinary), // 6
        (3000, 600, InOrderBinary),   // 6
        (3000, 5000, Binomial),       // 5
        (10_000, 20, InOrderBinary),  // 6
    ] {
        assert_eq!(openmpi::reduce(p, n), want, "open mpi reduce p={p} n={n}");
    }
    for (p, n, want) in [
        (2, 1 << 20, RecursiveDoubling), // 6 two_proc: one exchange
        (16, 100, RecursiveDoubling),    // 3
        (12, 100, Bruck),                // 3, which runs Bruck on a non-power of two
        (40, 2000, NeighborExchange),    // 5
        (41, 2000, Ring),                // 5, which runs the ring on an odd count
        (40, 100_000, Ring),             // 4
        (300, 64, Bruck),                // 2
        (4096, 8, RecursiveDoubling),    // 3
        (4096, 100, Bruck),              // 2
        (4096, 5000, NeighborExchange),  // 5
    ] {
        assert_eq!(openmpi::allgather(p, n), want, "open mpi allgather p={p} n={n}");
    }
    // reduce_scatter by the total vector (p blocks), reduce_scatter_block by one block
    for (p, block, want) in [
        (2, 20_000, Ring),           // 3: 40,000 B
        (2, 40_000, Butterfly),      // 4: 80,000 B
        (6, 1, Nonoverlapping),      // 1: 6 B
        (6, 1000, RecursiveHalving), // 2
        (6, 100_000, Ring),          // 3
        (40, 1000, Butterfly),       // 4
        (100, 2, Nonoverlapping),    // 1: 200 B
        (100, 3, RecursiveHalving),  // 2: 300 B
        (5000, 1, RecursiveHalving), // 2: 5,000 B
    ] {
        assert_eq!(openmpi::reduce_scatter(p, block), want, "open mpi reduce_scatter p={p} block={block}");
    }
    for (p, block, want) in [
        (3, 2, RecursiveHalving),     // 2 recursive doubling, run as recursive halving
        (3, 200, RecursiveHalving),   // 3
        (3, 200_000, Nonoverlapping), // 1 basic linear
        (12, 64, Butterfly),          // 4
        (100, 10, Nonoverlapping),    // 1
        (100, 1000, Butterfly),       // 4
    ] {
        assert_eq!(openmpi::reduce_scatter_block(p, block), want, "open mpi reduce_scatter_block p={p} block={block}");
    }
    assert_eq!(mpich::reduce_scatter(64, 8191), RecursiveHalving); // 524,224 B < 512 KiB
    assert_eq!(mpich::reduce_scatter(64, 8192), Pairwise);
    assert_eq!(CollectiveKind::Scan.auto_algorithm(MpiLibrary::OpenMpi, 64, 8), Linear);
    assert_eq!(CollectiveKind::Exscan.auto_algorithm(MpiLibrary::Mpich, 64, 8), RecursiveDoubling);
}

#[test]
fn every_algorithm_completes_with_a_handshake_rendezvous_and_a_dma_nic() {
    use crate::network::{NicModel, Rendezvous};
    let protocols =
        [(Rendezvous::Handshake, NicModel::Loggopsim), (Rendezvous::Loggopsim, NicModel::Dma), (Rendezvous::Handshake, NicModel::Dma)];
    for (kind, alg) in all_calls() {
        for (p, (rendezvous, nic_model)) in [5u32, 8].into_iter().flat_map(|p| protocols.map(|x| (p, x))) {
            if !fits(kind, alg, p) {
                continue;
            }
            for mode in [CollectiveMode::Blocking, CollectiveMode::Nonblocking] {
                let w = CollectiveLoop { test_chunks: 3, ..coll(p, kind, alg, 100_000, mode) };
                let net = Network { rendezvous, nic_model, ..Network::uniform(LogGOPS::loggopsim_defaults()) };
                let mut e = Engine::new(StreamProgram::new(w, Recorder::disabled()), net, Noise::none()).unwrap();
                e.run().unwrap_or_else(|err| panic!("{kind:?}/{alg:?} p={p} {mode:?}: {err}"));
                let chunks = if is_relay(kind, alg) { 100_000u64.div_ceil(30_000) } else { 1 };
                let calcs = if mode == CollectiveMode::Blocking { p } else { 3 * p } as u64;
                assert_eq!(e.events, 2 * (calcs + 2 * expected(kind, alg, p, chunks, 100_000)), "{kind:?}/{alg:?} p={p} {mode:?}");
            }
        }
    }
}

#[test]
fn v_variants_deliver_each_ranks_block_and_equal_counts_match_the_plain_collectives() {
    use CollectiveKind::*;
    for p in [2u32, 3, 7, 12] {
        let counts: Vec<u64> = (0..p as u64).map(|j| 100 * (j + 1)).collect();
        let total: u64 = counts.iter().sum();
        for kind in [Gather, Scatter, Allgather, Alltoall] {
            let root = p / 2;
            let c = call(kind, Algorithm::Linear, p, root, 0);
            let got = |r: u32| -> u64 {
                (0..)
                    .map_while(|i| c.v_step(&counts, r, i))
                    .map(|s| match s {
                        Step::Recv { bytes, .. } => bytes,
                        Step::Exchange { recv_bytes, .. } => recv_bytes,
                        _ => 0,
                    })
                    .sum()
            };
            for r in 0..p {
                let want = match kind {
                    Gather if r == root => total - counts[r as usize],
                    Gather => 0,
                    Scatter if r == root => 0,
                    Scatter => counts[r as usize],
                    Allgather => total - counts[r as usize],
                    _ => (p as u64 - 1) * counts[r as usize],
                };
                assert_eq!(got(r), want, "{kind:?} p={p} rank {r}");
            }
        }
    }
    // equal counts: the same times as the plain collective (linear gather and
    // scatter, ring allgather, pairwise alltoall), blocking and nonblocking
    for (kind, alg) in
        [(Gather, Algorithm::Linear), (Scatter, Algorithm::Linear), (Allgather, Algorithm::Ring), (Alltoall, Algorithm::Pairwise)]
    {
        for mode in [CollectiveMode::Blocking, CollectiveMode::Nonblocking] {
            let plain = coll(9, kind, alg, 3000, mode);
            let v = CollectiveLoop { counts: vec![3000; 9], message_bytes: 1, ..plain.clone() };
            let (a, b) = (run(CollectiveLoop { chunk_bytes: 0, ..plain }), run(CollectiveLoop { chunk_bytes: 0, ..v }));
            assert_eq!(
                (0..9).map(|r| a.finish_time(r)).collect::<Vec<_>>(),
                (0..9).map(|r| b.finish_time(r)).collect::<Vec<_>>(),
                "{kind:?} {mode:?}"
            );
            assert_eq!(a.events, b.events);
        }
    }
}

#[test]
fn v_variant_counts_are_checked() {
    let base = CollectiveLoop { ranks: 4, collective: CollectiveKind::Gather, counts: vec![8, 16, 24, 32], ..Default::default() };
    assert!(base.validate().is_ok());
    let short = CollectiveLoop { counts: vec![8, 16], ..base.clone() };
    assert!(short.validate().unwrap_err().to_string().contains("one count per rank of the communicator (4), got 2"));
    let tree = CollectiveLoop { algorithm: Some(Algorithm::Binomial), ..base.clone() };
    assert!(tree.validate().unwrap_err().to_string().contains("gather runs linear"));
    let allreduce = CollectiveLoop { collective: CollectiveKind::Allreduce, ..base };
    assert!(allreduce.validate().unwrap_err().to_string().starts_with("workload.counts"));
}
