use super::format::{flag, op, Coll, Footer, Record, Writer, COLLS, MAGIC, PROC_NULL};
use super::window::TraceProgram;
use super::*;
use crate::engine::Engine;
use crate::network::{LogGOPS, Network};
use crate::noise::Noise;
use crate::program::goal::parse_goal;
use crate::program::goal_program::GoalProgram;
use crate::time::Time;

/// A test's trace directory, removed when the test ends (a run of the
/// suite would otherwise leave a few dozen traces behind in the temp dir).
struct TmpDir(PathBuf);

impl std::ops::Deref for TmpDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TmpDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tmp(name: &str) -> TmpDir {
    let d = std::env::temp_dir().join(format!("idlewave-trace-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TmpDir(d)
}

fn spec(dir: &Path) -> TraceSpec {
    TraceSpec {
        dir: dir.display().to_string(),
        algorithms: vec![],
        compute_scale: 1.0,
        scale_to: None,
        grid: None,
        strong: false,
        by_call: false,
        library: None,
    }
}

/// Replays with the program a simulation uses (converted as it runs, or
/// an extrapolation compiled once per template rank); returns (finish
/// times, events, report).
fn replay(spec: &TraceSpec) -> Result<(Vec<Time>, u64, Report), String> {
    fn run<P: crate::program::Program>(p: P) -> Result<(Vec<Time>, u64, P), String> {
        let n = p.num_ranks();
        let mut e = Engine::new(p, Network::uniform(LogGOPS::loggopsim_defaults()), Noise::none()).map_err(|e| e.to_string())?;
        e.run().map_err(|e| e.to_string())?;
        Ok(((0..n).map(|r| e.finish_time(r)).collect(), e.events, e.view.program))
    }
    let t = open(Path::new(&spec.dir)).map_err(|e| e.to_string())?;
    let (finish, events, replayed) = match program(spec, &t).map_err(|e| e.to_string())? {
        Replay::Window(p) => run(p).map(|(f, e, p)| (f, e, Replay::Window(p)))?,
        Replay::Class(p) => run(p).map(|(f, e, p)| (f, e, Replay::Class(p)))?,
    };
    let mut report = replay_report(&t, &replayed);
    add_classes(&mut report, &replayed, &finish);
    Ok((finish, events, report))
}

/// Replays the exported GOAL schedule.
fn replay_goal(spec: &TraceSpec) -> (Vec<Time>, u64, String) {
    let mut text = Vec::new();
    export_goal(spec, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let sched = parse_goal(&text, "export").unwrap();
    let p = sched.num_ranks;
    let mut e = Engine::new(GoalProgram::new(&sched), Network::uniform(LogGOPS::loggopsim_defaults()), Noise::none()).unwrap();
    e.run().unwrap();
    ((0..p).map(|r| e.finish_time(r)).collect(), e.events, text)
}

/// A trace written record by record (times advance 1 µs per call).
struct Rank {
    w: Writer,
    t: f64,
    functions: Vec<(String, u64, f64)>,
}

impl Rank {
    fn new(dir: &Path, rank: i32, size: i32) -> Self {
        let mut r = Rank { w: Writer::create(&dir.join(format!("rank-{rank}.iwt")), rank, size).unwrap(), t: 0.0, functions: Vec::new() };
        r.rec(Record { op: op::INIT, peer: -1, ..Default::default() }, &[]);
        r
    }
    fn rec(&mut self, mut x: Record, payload: &[u64]) -> &mut Self {
        x.t0 = self.t;
        x.t1 = self.t + 1e-6;
        self.t += 3e-6;
        self.w.record(&x, payload).unwrap();
        self
    }
    fn p2p(&mut self, code: u16, peer: i32, tag: i32, bytes: u64, req: u64) -> &mut Self {
        self.rec(Record { op: code, peer, tag, bytes, req, ..Default::default() }, &[])
    }
    fn coll(&mut self, c: Coll, comm: u32, bytes: u64, payload: &[u64]) -> &mut Self {
        self.rec(Record { op: op::COLL_BASE + c as u16, comm, peer: -1, bytes, ..Default::default() }, payload)
    }
    fn finish(self) {
        self.finish_as("test");
    }
    fn finish_as(mut self, library: &str) {
        self.rec(Record { op: op::FINALIZE, peer: -1, ..Default::default() }, &[]);
        self.w.finish(&Footer { library: library.into(), functions: self.functions, tracer_s: None }).unwrap();
    }
}

#[test]
fn lazy_replay_equals_the_exported_goal_schedule() {
    let d = tmp("synthetic");
    write_synthetic(&d, 5, 40).unwrap();
    let (finish, events, rep) = replay(&spec(&d)).unwrap();
    let (finish_goal, events_goal, _) = replay_goal(&spec(&d));
    assert_eq!(finish, finish_goal);
    assert_eq!(events, events_goal);
    // per iteration and rank: 2 ring messages and a 5-rank dissemination allreduce (3 rounds of an exchange), sent + received, and calcs
    assert!(events > 40 * 5 * 2 * (2 + 3));
    assert_eq!(rep.polls, 5 * 40 * 10);
    assert_eq!(rep.records, 5 * (2 + 40 * 6));
}

#[test]
fn every_family_replays_with_the_messages_the_program_sent() {
    // 4 ranks: ring isend/irecv with a wildcard receive the tracer resolved, a
    // PROC_NULL neighbour, a cancelled wildcard receive, persistent requests
    // started 3 times, an uneven alltoallv, a neighbourhood exchange, 2,000
    // split/free pairs with an allreduce on each, an RMA call and polls.
    let d = tmp("families");
    let p = 4i32;
    let null = (-2i64) as u64;
    for r in 0..p {
        let mut k = Rank::new(&d, r, p);
        let (left, right) = ((r + p - 1) % p, (r + 1) % p);
        k.rec(
            Record { op: op::IRECV, flags: flag::ANY_SOURCE | flag::ANY_TAG, peer: left, tag: 7, bytes: 64, req: 1, ..Default::default() },
            &[],
        );
        k.p2p(op::ISEND, right, 7, 64, 2).p2p(op::ISEND, -2, 7, 64, 3);
        k.rec(Record { op: op::IRECV, flags: flag::CANCELLED, peer: -1, tag: -1, bytes: 8, req: 4, ..Default::default() }, &[]);
        k.p2p(op::CANCEL, -1, 0, 0, 4);
        k.p2p(op::WAIT, left, 7, 0, 1).p2p(op::WAIT, -1, 0, 0, 2).p2p(op::WAIT, -1, 0, 0, 3).p2p(op::WAIT, -1, 0, 0, 4);
        k.p2p(op::SEND_INIT, right, 9, 100, 10).p2p(op::RECV_INIT, left, 9, 100, 11);
        for _ in 0..3 {
            k.p2p(op::START, -1, 0, 0, 11).p2p(op::START, -1, 0, 0, 10);
            k.p2p(op::WAIT, left, 9, 0, 11).p2p(op::WAIT, -1, 0, 0, 10);
        }
        k.p2p(op::REQUEST_FREE, -1, 0, 0, 10).p2p(op::REQUEST_FREE, -1, 0, 0, 11);
        // alltoallv: rank i sends (i+1)*(j+1) bytes to j ≠ i
        let cnt = |i: i32, j: i32| if i == j { 0 } else { ((i + 1) * (j + 1)) as u64 };
        let pay: Vec<u64> = (0..p).map(|j| cnt(r, j)).chain((0..p).map(|j| cnt(j, r))).collect();
        k.coll(Coll::Alltoallv, 0, pay[..p as usize].iter().sum(), &pay);
        // a non-periodic 1-D neighbourhood: ends have PROC_NULL
        let nb = |x: i32| if (0..p).contains(&x) { x as u64 } else { null };
        k.coll(Coll::NeighborAlltoall, 0, 32, &[2, 2, nb(r - 1), nb(r + 1), nb(r - 1), nb(r + 1), 32, 32, 32, 32]);
        k.rec(Record { op: op::POLL, peer: -1, bytes: 25, ..Default::default() }, &[]);
        k.rec(Record { op: op::OTHER, tag: 0, ..Default::default() }, &[]);
        for i in 0..2000u32 {
            let id = 1 + i;
            // split into halves {0,1}, {2,3}
            k.rec(Record { op: op::COMM_NEW, comm: 0, peer: id as i32, tag: 1, ..Default::default() }, &[]);
            let half = r / 2 * 2;
            for (local, w) in [half, half + 1].into_iter().enumerate() {
                k.rec(Record { op: op::COMM_MEMBER, comm: id, peer: w, tag: local as i32, ..Default::default() }, &[]);
            }
            k.coll(Coll::Allreduce, id, 8, &[]);
            k.rec(Record { op: op::COMM_FREE, comm: id, ..Default::default() }, &[]);
        }
        k.functions = vec![("MPI_Win_fence".into(), 1, 1e-6)];
        k.finish();
    }
    let (_, events, rep) = replay(&spec(&d)).expect("replays");
    // messages, each counted sent and received: ring 4, persistent 12, alltoallv 12, neighbours 2·3,
    // allreduce on pairs: 2 per pair per call → 2 pairs × 2 × 2000
    let msgs = 4 + 12 + 12 + 6 + 2 * 2 * 2000;
    // one computation before every call replayed (polls and RMA fold into the next gap):
    // 9 ring calls, 2 inits, 12 starts/waits, 2 frees, 2 collectives, 3 per split/free pair, finalize
    let calcs = 4 * (9 + 2 + 12 + 2 + 2 + 3 * 2000 + 1);
    assert_eq!(events, 2 * msgs + calcs);
    assert_eq!(rep.cancelled, 4);
    assert_eq!(rep.polls, 4 * 25);
    let (name, calls, secs, _) = &rep.unmodelled[0];
    assert_eq!((name.as_str(), *calls, rep.unmodelled.len()), ("MPI_Win_fence", 4, 1));
    assert!((secs - 4e-6).abs() < 1e-12);
    assert!(rep.approximate());
    let (_, events_goal, goal) = replay_goal(&spec(&d));
    assert_eq!(events, events_goal);
    // the PROC_NULL send and the cancelled receive move nothing
    assert!(!goal.contains("to 4294967294"));
}

#[test]
fn periodic_patterns_extrapolate_and_others_are_refused() {
    let d = tmp("periodic");
    write_synthetic(&d, 4, 10).unwrap();
    let (f4, e4, _) = replay(&spec(&d)).unwrap();
    let s = TraceSpec { scale_to: Some(12), ..spec(&d) };
    let (f12, e12, rep) = replay(&s).unwrap();
    assert_eq!(f12.len(), 12);
    assert_eq!(rep.ranks, 12);
    assert!(e12 > 3 * e4 - 3 * 4 * 10 * 8, "{e12} vs {e4}"); // allreduce has one more round at 12 ranks
    assert!(f12.iter().max() >= f4.iter().max());
    assert!(replay(&TraceSpec { scale_to: Some(10), ..spec(&d) }).unwrap_err().contains("not a multiple of the 4 traced ranks"));
    // strong scaling needs a size to scale to (it was ignored)
    assert!(replay(&TraceSpec { strong: true, ..spec(&d) }).unwrap_err().contains("give --scale-to or --grid too"));
    // the traced ring of 4 becomes one ring of 12: rank 3 sends on to rank 4
    // (it sent +1 around the traced ranks, to rank 0), the last rank to rank 0
    // (it used to be three rings of 4); the replay is its exported schedule
    let (f_goal, e_goal, goal) = replay_goal(&s);
    assert_eq!((f_goal, e_goal), (f12, e12));
    let sends_of = |r: u32| -> Vec<&str> {
        let block = goal.split(&format!("rank {r} {{")).nth(1).expect("the rank's block").split('}').next().unwrap();
        block.lines().filter(|l| l.contains("send 4096b")).collect()
    };
    for (r, to) in [(0, 1), (3, 4), (7, 8), (11, 0)] {
        let sends = sends_of(r);
        assert!(sends.len() == 10 && sends.iter().all(|l| l.contains(&format!("to {to} "))), "rank {r}: {sends:?}");
    }
    // rank 1 sends to an odd partner: not periodic
    let d2 = tmp("aperiodic");
    for r in 0..2 {
        let mut k = Rank::new(&d2, r, 2);
        k.p2p(op::SEND, 1 - r, 0, 8, 0).p2p(op::RECV, 1 - r, 0, 8, 0);
        if r == 1 {
            k.coll(Coll::Barrier, 0, 0, &[]);
        }
        k.finish();
    }
    let e = replay(&TraceSpec { scale_to: Some(4), ..spec(&d2) }).unwrap_err();
    assert!(e.contains("only periodic patterns scale"), "{e}");
}

// Long: one trace directory broken in each way a reader meets, in turn (each case
// undoes the one before), so that every message is checked against the same files.
#[test]
fn broken_files_are_named_with_the_record() {
    let d = tmp("broken");
    write_synthetic(&d, 2, 3).unwrap();
    let f = d.join("rank-1.iwt");
    let full = std::fs::read(&f).unwrap();
    // truncated in the middle of record 5
    std::fs::write(&f, &full[..64 + 48 * 5 + 20]).unwrap();
    let e = replay(&spec(&d)).unwrap_err();
    assert!(e.contains("rank-1.iwt") && (e.contains("truncated") || e.contains("footer")), "{e}");
    // foreign file
    std::fs::write(&f, b"hello world, not a trace at all............................................").unwrap();
    let e = replay(&spec(&d)).unwrap_err();
    assert!(e.contains("rank-1.iwt: not an idlewave trace"), "{e}");
    // a run that died: header never completed
    let mut w = Writer::create(&f, 1, 2).unwrap();
    w.record(&Record { op: op::INIT, ..Default::default() }, &[]).unwrap();
    drop(w);
    let e = replay(&spec(&d)).unwrap_err();
    assert!(e.contains("did not reach MPI_Finalize"), "{e}");
    // an unknown op names file and record
    let mut w = Writer::create(&f, 1, 2).unwrap();
    w.record(&Record { op: op::INIT, ..Default::default() }, &[]).unwrap();
    w.record(&Record { op: 200, ..Default::default() }, &[]).unwrap();
    w.finish(&Footer::default()).unwrap();
    let e = replay(&spec(&d)).unwrap_err();
    assert!(e.contains("rank-1.iwt record 1") && e.contains("unknown op code 200"), "{e}");
    // a time that is not a number
    let mut w = Writer::create(&f, 1, 2).unwrap();
    w.record(&Record { op: op::INIT, ..Default::default() }, &[]).unwrap();
    w.record(&Record { op: op::FINALIZE, t0: 1.0, t1: f64::NAN, ..Default::default() }, &[]).unwrap();
    w.finish(&Footer::default()).unwrap();
    let e = replay(&spec(&d)).unwrap_err();
    assert!(e.contains("rank-1.iwt: record 1: its times (1, NaN) are not finite numbers"), "{e}");
    // a size past what the engine (and so an exported GOAL file) can hold
    let mut w = Writer::create(&f, 1, 2).unwrap();
    w.record(&Record { op: op::INIT, ..Default::default() }, &[]).unwrap();
    w.record(&Record { op: op::SEND, peer: 0, bytes: 1 << 61, ..Default::default() }, &[]).unwrap();
    w.finish(&Footer::default()).unwrap();
    let e = replay(&spec(&d)).unwrap_err();
    assert!(e.contains("rank-1.iwt: record 1: 2305843009213693952 bytes, past the engine's limit of 2^47"), "{e}");
    // a header claiming more records than the file holds: the footer is not read as records
    write_synthetic(&d, 2, 3).unwrap();
    let mut bytes = std::fs::read(&f).unwrap();
    let records = u64::from_le_bytes(bytes[16..24].try_into().unwrap());
    bytes[16..24].copy_from_slice(&(records + 50).to_le_bytes());
    std::fs::write(&f, &bytes).unwrap();
    let e = replay(&spec(&d)).unwrap_err();
    assert!(e.contains(&format!("rank-1.iwt: record {records}: the records end there")), "{e}");
    // ranks that disagree on the run's size
    write_synthetic(&d, 2, 3).unwrap();
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[12..16].copy_from_slice(&5i32.to_le_bytes());
    std::fs::write(&f, &bytes).unwrap();
    assert!(open(&d).err().unwrap().to_string().contains("rank-1.iwt: says the run had 5 ranks, rank 0's file says 2"));
    // a FIFO in place of a rank file is refused, not waited on
    std::fs::remove_file(&f).unwrap();
    let fifo = std::ffi::CString::new(f.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    assert!(open(&d).err().unwrap().to_string().contains("rank-1.iwt: the rank file must be a regular file"));
    std::fs::remove_file(&f).unwrap();
    // two files for one rank
    write_synthetic(&d, 2, 3).unwrap();
    std::fs::copy(&f, d.join("rank-01.iwt")).unwrap();
    assert!(open(&d).err().unwrap().to_string().contains("two files name rank 1"));
    std::fs::remove_file(d.join("rank-01.iwt")).unwrap();
    // a file beyond the run is the one blamed (it was "rank-2.iwt is missing"); an empty or cut one is said so
    std::fs::copy(&f, d.join("rank-99.iwt")).unwrap();
    let e = open(&d).err().unwrap().to_string();
    assert!(e.contains("rank-99.iwt: not a rank of this run: rank-0.iwt says the run had 2 ranks (rank-0.iwt to rank-1.iwt)"), "{e}");
    std::fs::remove_file(d.join("rank-99.iwt")).unwrap();
    std::fs::write(&f, b"").unwrap();
    assert!(open(&d).err().unwrap().to_string().contains("rank-1.iwt: empty (0 bytes)"));
    std::fs::write(&f, &MAGIC[..5]).unwrap();
    assert!(open(&d).err().unwrap().to_string().contains("rank-1.iwt: truncated header (5 bytes)"));
    // a missing rank
    std::fs::remove_file(&f).unwrap();
    assert!(open(&d).err().unwrap().to_string().contains("rank-1.iwt is missing (2 ranks, rank-0.iwt says)"));
    std::fs::remove_file(d.join("rank-0.iwt")).unwrap();
    write_synthetic(&d, 2, 3).unwrap();
    std::fs::remove_file(d.join("rank-0.iwt")).unwrap();
    assert!(open(&d).err().unwrap().to_string().contains("rank-0.iwt is missing"));
}

#[test]
fn memory_is_bounded_by_open_requests_not_trace_length() {
    let d = tmp("window");
    write_synthetic(&d, 3, 20_000).unwrap();
    let t = open(&d).unwrap();
    let (shared, convs) = converters(&spec(&d), &t).unwrap();
    let prog = TraceProgram::new(shared, convs).unwrap();
    let mut e = Engine::new(prog, Network::uniform(LogGOPS::loggopsim_defaults()), Noise::none()).unwrap();
    let mut most = 0;
    while !e.step(1000).unwrap() {
        most = most.max(e.view.program.live_ops());
    }
    assert!(most < 3 * 16, "{most} ops open at once");
}

#[test]
fn a_waitall_counts_its_time_inside_mpi_once() {
    let d = tmp("waitall");
    for r in 0..2i32 {
        let mut k = Rank::new(&d, r, 2);
        k.p2p(op::IRECV, 1 - r, 1, 8, 1).p2p(op::ISEND, 1 - r, 1, 8, 2);
        // one Waitall of 2 ms completing both requests: two records with the call's times
        let (t0, t1) = (k.t, k.t + 2e-3);
        for (req, peer) in [(1, 1 - r), (2, -1)] {
            k.w.record(&Record { op: op::WAIT, peer, tag: 1, req, t0, t1, ..Default::default() }, &[]).unwrap();
        }
        k.t = t1 + 1e-6;
        k.finish();
    }
    let (_, _, rep) = replay(&spec(&d)).unwrap();
    for s in rep.traced_mpi_s {
        assert!((s - (2e-3 + 2e-6)).abs() < 1e-9, "{s}");
    }
}

#[test]
fn the_work_before_finalize_is_replayed() {
    // a barrier at 0.5 s, then 0.5 s of work before MPI_Finalize at 1 s
    let d = tmp("finalize-gap");
    for r in 0..2i32 {
        let mut k = Rank::new(&d, r, 2);
        k.t = 0.5;
        k.coll(Coll::Barrier, 0, 0, &[]);
        k.t = 1.0;
        k.finish();
    }
    let (finish, _, rep) = replay(&spec(&d)).unwrap();
    let end = crate::time::to_seconds(*finish.iter().max().unwrap());
    let traced = rep.traced_span_s.iter().cloned().fold(0.0, f64::max);
    assert!((traced - (1.0 + 1e-6)).abs() < 1e-9, "{traced}");
    // the replay's network is not the traced one: only the barrier's few µs may differ
    assert!((end - 1.0).abs() < 1e-4, "replayed {end} s against 1 s traced");
}

#[test]
fn a_replay_too_large_for_memory_is_refused_before_allocating() {
    let d = tmp("huge");
    write_synthetic(&d, 2, 1).unwrap();
    let mut cfg = crate::bench::config("bcast_1m").unwrap();
    cfg.workload = crate::sim::WorkloadSpec::Trace(TraceSpec { scale_to: Some(1 << 30), ..spec(&d) });
    cfg.max_memory_bytes = Some(1 << 30);
    let _alone = crate::fuzz::HEAVY.lock().unwrap_or_else(|e| e.into_inner()); // the peak is process-wide
    crate::alloc::reset_peak();
    let e = crate::sim::run(&cfg, None).err().unwrap();
    assert!(matches!(e, crate::engine::SimError::MemoryLimit(ref m) if m.contains("GiB")), "{e}");
    assert!(crate::alloc::peak_bytes() < 64 << 20);
}

#[test]
fn auto_follows_the_traced_library_unless_the_platform_names_one() {
    use crate::collectives::MpiLibrary::{Mpich, OpenMpi};
    // 1 KiB on 16 ranks: MPICH's rule runs Rabenseifner, Open MPI's recursive doubling
    let d = tmp("mpich");
    for r in 0..16 {
        let mut k = Rank::new(&d, r, 16);
        k.coll(Coll::Allreduce, 0, 1024, &[]);
        k.finish_as("MPICH Version:      4.1.2\nMPICH Release date: Wed Jun  7 15:22:45 CDT 2023");
    }
    let run = |library| replay(&TraceSpec { library, ..spec(&d) }).unwrap();
    let (traced, explicit_mpich, explicit_ompi) = (run(None), run(Some(Mpich)), run(Some(OpenMpi)));
    assert_eq!(traced.2.collective_rules, Mpich);
    assert_eq!((traced.0.clone(), traced.1), (explicit_mpich.0, explicit_mpich.1));
    assert_ne!(traced.1, explicit_ompi.1);
    assert_eq!(crate::collectives::MpiLibrary::from_version("Open MPI v4.1.4, package: Debian OpenMPI"), Some(OpenMpi));
    assert_eq!(crate::collectives::MpiLibrary::from_version("Intel(R) MPI Library 2021.6"), None);
}

/// A rank's MPI_Cart_create of a non-periodic 3×3 grid (communicator 1)
/// whose grid rank m is world rank `world_of(m)`.
fn cart_3x3(k: &mut Rank, world_of: impl Fn(i32) -> i32) {
    k.rec(Record { op: op::COMM_NEW, comm: 0, peer: 1, tag: 7, ..Default::default() }, &[2, 3, 3, 0, 0]);
    for m in 0..9 {
        k.rec(Record { op: op::COMM_MEMBER, comm: 1, peer: world_of(m), tag: m, ..Default::default() }, &[]);
    }
}

#[test]
fn unequal_v_collective_counts_follow_their_class_and_are_reported() {
    // a 3×3 grid whose Allgatherv counts differ per member
    let d = tmp("vgrid");
    for r in 0..9 {
        let mut k = Rank::new(&d, r, 9);
        cart_3x3(&mut k, |m| m);
        let counts: Vec<u64> = (1..=9).map(|m| 8 * m).collect();
        k.coll(Coll::Allgatherv, 1, 8 * (r as u64 + 1), &counts);
        k.finish();
    }
    let (_, _, rep) = replay(&TraceSpec { scale_to: Some(36), ..spec(&d) }).unwrap();
    assert_eq!(rep.resized_v_collectives, 36);
    assert!(rep.approximate());
    let (_, _, exact) = replay(&spec(&d)).unwrap();
    assert_eq!(exact.resized_v_collectives, 0);
}

#[test]
fn a_reordered_cartesian_grid_is_refused() {
    let d = tmp("reordered");
    for r in 0..9 {
        let mut k = Rank::new(&d, r, 9);
        cart_3x3(&mut k, |m| 8 - m);
        k.coll(Coll::Barrier, 1, 0, &[]);
        k.finish();
    }
    let e = replay(&TraceSpec { scale_to: Some(36), ..spec(&d) }).unwrap_err();
    assert!(e.contains("a reordered grid does not extrapolate") && e.contains("rank-0.iwt record 1"), "{e}");
}

#[test]
fn reduce_scatters_and_scans_replay_with_the_librarys_algorithms() {
    // 6 ranks: MPI_Reduce_scatter_block of 100 KiB blocks, MPI_Reduce_scatter
    // with equal and with unequal counts, MPI_Scan and MPI_Exscan
    let d = tmp("reduce-scatter");
    let p = 6u32;
    for r in 0..p {
        let mut k = Rank::new(&d, r as i32, p as i32);
        k.coll(Coll::ReduceScatterBlock, 0, 102_400, &[]);
        k.coll(Coll::ReduceScatter, 0, 800, &[800; 6]);
        k.coll(Coll::ReduceScatter, 0, 8 * (r as u64 + 1), &[8, 16, 24, 32, 40, 48]);
        k.coll(Coll::Scan, 0, 40, &[]);
        k.coll(Coll::Exscan, 0, 40, &[]);
        k.finish_as("Open MPI v5.0.11");
    }
    let events = |algorithms: &[&str], library: Option<crate::collectives::MpiLibrary>| {
        let s = TraceSpec { algorithms: algorithms.iter().map(|a| a.to_string()).collect(), library, ..spec(&d) };
        replay(&s).unwrap().1
    };
    // Open MPI's rules on 6 ranks: recursive halving for both reduce-scatters
    // (2·2 fold messages + 4·2 exchanges = 12 each), the linear chains of its
    // basic scans (5 each); the unequal one reduces to rank 0 and scatters (5 + 5)
    let open_mpi = events(&[], None);
    let msgs = |rs_block: u64, rs: u64, scans: u64| 2 * (rs_block + rs + 10 + scans);
    let ring = events(&["reduce_scatter_block=ring"], None);
    assert_eq!(ring - open_mpi, msgs(30, 12, 10) - msgs(12, 12, 10));
    let rings = events(&["reduce_scatter_block=ring", "reduce_scatter=ring"], None);
    assert_eq!(rings - open_mpi, msgs(30, 30, 10) - msgs(12, 12, 10));
    // MPICH: recursive halving again (600 KiB > 512 KiB total for the block one: pairwise,
    // 30 messages), and recursive-doubling scans: partners r XOR 1, 2, 4 inside 6 ranks (6 + 4 + 4 = 14 each)
    let mpich = events(&[], Some(crate::collectives::MpiLibrary::Mpich));
    assert_eq!(mpich - open_mpi, msgs(30, 12, 28) - msgs(12, 12, 10));
}

/// Rank `r`'s MPI_Cart_create of the 3×3 grid `g` (communicator 1), then
/// its row (communicator 2, dimension 1 varies) and column (3).
fn cart_with_rows_and_columns(k: &mut Rank, g: &grid::Grid, r: u32) {
    let p = g.periodic[0] as u64;
    k.rec(Record { op: op::COMM_NEW, comm: 0, peer: 1, tag: 7, ..Default::default() }, &[2, 3, 3, p, p]);
    for m in 0..9 {
        k.rec(Record { op: op::COMM_MEMBER, comm: 1, peer: m, tag: m, ..Default::default() }, &[]);
    }
    let c = g.coords(r);
    for (id, dim) in [(2u32, 1usize), (3, 0)] {
        k.rec(Record { op: op::COMM_NEW, comm: 1, peer: id as i32, tag: 8, ..Default::default() }, &[]);
        for x in 0..3 {
            let mut m = c;
            m[dim] = x;
            k.rec(Record { op: op::COMM_MEMBER, comm: id, peer: g.rank(&m) as i32, tag: x as i32, ..Default::default() }, &[]);
        }
    }
}

/// Rank `r`'s neighbour `s` steps along dimension `dim` of grid `g`
/// (wrapping if periodic), or MPI_PROC_NULL past an edge.
fn neighbour(g: &grid::Grid, r: u32, dim: usize, s: i64) -> i32 {
    let mut c = g.coords(r);
    let n = g.dims[dim] as i64;
    let x = c[dim] as i64 + s;
    let x = if g.periodic[dim] { x.rem_euclid(n) } else { x };
    if !(0..n).contains(&x) {
        return PROC_NULL;
    }
    c[dim] = x as u32;
    g.rank(&c) as i32
}

/// A 3×3 grid (periodic or not) whose ranks compute for different times and
/// then exchange halos and run every kind of collective on rows, columns
/// and the world: blocking, nonblocking (overlapping a Sendrecv and each
/// other), rooted at edges, v-variants, a neighbourhood collective and
/// persistent requests.
fn write_busy_grid(d: &Path, periodic: bool) {
    let g = grid::Grid::new(vec![3, 3], vec![periodic; 2]).unwrap();
    for r in 0..9u32 {
        let c = g.coords(r);
        let mut k = Rank::new(d, r as i32, 9);
        cart_with_rows_and_columns(&mut k, &g, r);
        let step = |dim: usize, s: i64| neighbour(&g, r, dim, s);
        let neighbours = [step(0, -1), step(0, 1), step(1, -1), step(1, 1)];
        for it in 0..2u64 {
            k.t += 1e-5 * (1 + r % 4) as f64; // computation, different per class
            halo_exchange(&mut k, &neighbours);
            k.coll(Coll::Allreduce, 2, 8 << (it * 15), &[]);
            bcast_over_sendrecv(&mut k, &c, &neighbours);
            rooted_and_v_collectives(&mut k, &g, &c, r);
            two_nonblocking_collectives(&mut k);
            neighbourhood_alltoall(&mut k, &neighbours);
            persistent_pair(&mut k, &neighbours);
        }
        k.finish();
    }
}

/// Each rank's halo exchange with its four neighbours, then waits for it.
fn halo_exchange(k: &mut Rank, neighbours: &[i32; 4]) {
    let mut req = 0;
    for &n in neighbours {
        k.p2p(op::IRECV, n, 1, 4096, 10 + req).p2p(op::ISEND, n, 1, 4096, 11 + req);
        req += 2;
    }
    for q in 0..req {
        k.p2p(op::WAIT, -1, 0, 0, 10 + q);
    }
}

/// A nonblocking broadcast in flight over a Sendrecv and a barrier.
fn bcast_over_sendrecv(k: &mut Rank, c: &grid::Coords, neighbours: &[i32; 4]) {
    // a nonblocking broadcast down each column from its top, over a Sendrecv along the row
    k.rec(
        Record {
            op: op::COLL_BASE + op::NONBLOCKING + Coll::Bcast as u16,
            comm: 3,
            peer: c[1] as i32,
            bytes: 65536,
            req: 100,
            ..Default::default()
        },
        &[],
    );
    k.p2p(op::SENDRECV_SEND, neighbours[3], 2, 512, 0).p2p(op::SENDRECV_RECV, neighbours[2], 2, 512, 0);
    k.coll(Coll::Barrier, 0, 0, &[]);
    k.p2p(op::WAIT, -1, 0, 0, 100);
}

/// Rooted collectives with roots at the grid's edges, and v-variants with unequal counts.
fn rooted_and_v_collectives(k: &mut Rank, g: &grid::Grid, c: &grid::Coords, r: u32) {
    // rooted on the row's last member, with unequal counts
    let last = g.rank(&[c[0], 2, 0]) as i32;
    k.rec(
        Record { op: op::COLL_BASE + Coll::Gatherv as u16, comm: 2, peer: last, bytes: 64 * (c[1] as u64 + 1), ..Default::default() },
        &[64, 128, 192],
    );
    k.rec(Record { op: op::COLL_BASE + Coll::Scatterv as u16, comm: 3, peer: c[1] as i32, bytes: 32, ..Default::default() }, &[32, 32, 32]);
    k.coll(Coll::Alltoallv, 3, 0, &[16, 32, 48, 48, 32, 16]);
    k.coll(Coll::ReduceScatter, 0, 8 * (r as u64 + 1), &[8, 16, 24, 32, 40, 48, 56, 64, 72]);
    k.coll(Coll::Scan, 2, 40, &[]);
    k.coll(Coll::Allgatherv, 2, 8, &[8, 8, 8]);
    k.rec(Record { op: op::COLL_BASE + Coll::Reduce as u16, comm: 0, peer: 8, bytes: 4096, ..Default::default() }, &[]);
    k.rec(Record { op: op::COLL_BASE + Coll::Gather as u16, comm: 3, peer: c[1] as i32, bytes: 1024, ..Default::default() }, &[]);
}

fn two_nonblocking_collectives(k: &mut Rank) {
    // two nonblocking collectives in flight at once
    k.rec(
        Record {
            op: op::COLL_BASE + op::NONBLOCKING + Coll::Allreduce as u16,
            comm: 0,
            peer: -1,
            bytes: 1 << 20,
            req: 101,
            ..Default::default()
        },
        &[],
    );
    k.rec(
        Record {
            op: op::COLL_BASE + op::NONBLOCKING + Coll::Alltoall as u16,
            comm: 2,
            peer: -1,
            bytes: 256,
            req: 102,
            ..Default::default()
        },
        &[],
    );
    k.p2p(op::WAIT, -1, 0, 0, 102).p2p(op::WAIT, -1, 0, 0, 101);
}

fn neighbourhood_alltoall(k: &mut Rank, neighbours: &[i32; 4]) {
    // a neighbourhood alltoall with the four neighbours: [n_src, n_dst, src…, dst…, recv bytes…, send bytes…]
    let nb: Vec<u64> = neighbours.iter().map(|&n| n as i64 as u64).collect();
    let mut payload = vec![4, 4];
    payload.extend(&nb);
    payload.extend(&nb);
    payload.extend([256u64; 8]);
    k.coll(Coll::NeighborAlltoall, 1, 256, &payload);
}

fn persistent_pair(k: &mut Rank, neighbours: &[i32; 4]) {
    // persistent requests with the row neighbours
    k.p2p(op::RECV_INIT, neighbours[2], 3, 128, 200).p2p(op::SEND_INIT, neighbours[3], 3, 128, 201);
    k.p2p(op::START, -1, 0, 0, 200).p2p(op::START, -1, 0, 0, 201);
    k.p2p(op::WAIT, -1, 0, 0, 200).p2p(op::WAIT, -1, 0, 0, 201);
    k.p2p(op::REQUEST_FREE, -1, 0, 0, 200).p2p(op::REQUEST_FREE, -1, 0, 0, 201);
}

#[test]
fn extrapolations_compiled_per_class_replay_as_their_goal_export() {
    for periodic in [false, true] {
        let d = tmp(&format!("busy-grid-{periodic}"));
        write_busy_grid(&d, periodic);
        for grid in ["3x3", "6x6", "5x4", "4x7"] {
            let s = TraceSpec { grid: Some(grid.into()), ..spec(&d) };
            let (finish, events, _) = replay(&s).unwrap();
            let (finish_goal, events_goal, _) = replay_goal(&s);
            assert_eq!(events, events_goal, "{grid}, periodic {periodic}");
            assert_eq!(finish, finish_goal, "{grid}, periodic {periodic}");
        }
    }
    // a receive left open across 200 calls (past the cursor's 64 bits)
    let d = tmp("open-receive");
    let g = grid::Grid::new(vec![3, 3], vec![true; 2]).unwrap();
    for r in 0..9u32 {
        let c = g.coords(r);
        let (left, right) = (g.rank(&[c[0], (c[1] + 2) % 3, 0]) as i32, g.rank(&[c[0], (c[1] + 1) % 3, 0]) as i32);
        let mut k = Rank::new(&d, r as i32, 9);
        k.rec(Record { op: op::COMM_NEW, comm: 0, peer: 1, tag: 7, ..Default::default() }, &[2, 3, 3, 1, 1]);
        for m in 0..9 {
            k.rec(Record { op: op::COMM_MEMBER, comm: 1, peer: m, tag: m, ..Default::default() }, &[]);
        }
        k.p2p(op::IRECV, left, 9, 1 << 20, 1);
        for i in 0..50 {
            k.t += 1e-6 * (1 + (r + i) % 3) as f64;
            k.p2p(op::ISEND, right, 1, 64, 2).p2p(op::IRECV, left, 1, 64, 3).p2p(op::WAIT, -1, 0, 0, 2).p2p(op::WAIT, -1, 0, 0, 3);
        }
        k.p2p(op::SEND, right, 9, 1 << 20, 0).p2p(op::WAIT, -1, 0, 0, 1);
        k.finish();
    }
    let s = TraceSpec { grid: Some("4x5".into()), ..spec(&d) };
    let (finish, events, _) = replay(&s).unwrap();
    let (finish_goal, events_goal, _) = replay_goal(&s);
    assert_eq!((finish, events), (finish_goal, events_goal));
    // a rank-periodic ring with an allreduce, repeated 3 times
    let d = tmp("periodic-ring");
    write_synthetic(&d, 5, 6).unwrap();
    let s = TraceSpec { scale_to: Some(15), ..spec(&d) };
    let (finish, events, _) = replay(&s).unwrap();
    let (finish_goal, events_goal, _) = replay_goal(&s);
    assert_eq!((finish, events), (finish_goal, events_goal));
    // the benchmark's template, a row allreduce after a halo, at 32×32
    let d = tmp("synthetic-grid");
    write_synthetic_grid(&d, 3).unwrap();
    let s = TraceSpec { scale_to: Some(1024), ..spec(&d) };
    let (finish, events, _) = replay(&s).unwrap();
    let (finish_goal, events_goal, _) = replay_goal(&s);
    assert_eq!((finish, events), (finish_goal, events_goal));
}

/// A halo and a row allreduce traced on a small grid and extrapolated
/// replays exactly as the same program traced on the target grid, also
/// where a dimension of fewer than 3 ranks keeps its size (LAMMPS on 9
/// ranks traces 1×3×3). `--scale-to` grows a grid MPI_Dims_create made as
/// MPI_Dims_create would, and refuses where that grows a dimension with no
/// interior in the trace.
#[test]
fn extrapolated_grids_replay_as_the_program_traced_at_their_size() {
    let cases: [(&[u32], &[bool], &[u32]); 5] = [
        (&[3, 3], &[false, false], &[6, 5]),
        (&[1, 3, 3], &[true, true, true], &[1, 7, 5]),
        (&[3, 1], &[false, false], &[8, 1]),
        (&[2, 3], &[false, true], &[2, 7]),
        (&[2, 4], &[true, true], &[2, 9]),
    ];
    for (i, (small, periodic, big)) in cases.into_iter().enumerate() {
        let (d, direct) = (tmp(&format!("grid-small-{i}")), tmp(&format!("grid-big-{i}")));
        write_synthetic_cart(&d, small, periodic, 2).unwrap();
        write_synthetic_cart(&direct, big, periodic, 2).unwrap();
        let want = replay(&spec(&direct)).unwrap();
        let name = big.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("x");
        let got = replay(&TraceSpec { grid: Some(name), ..spec(&d) }).unwrap();
        assert_eq!((got.0.clone(), got.1), (want.0.clone(), want.1), "{small:?} to {big:?}");
        // the same messages and bytes, counted per class and in total
        let ranks_in = |r: &Report| r.classes.iter().map(|c| c.ranks).sum::<u64>();
        assert_eq!((got.2.messages, got.2.bytes), (want.2.messages, want.2.bytes), "{small:?} to {big:?}");
        assert!(want.2.messages > 0 && want.2.bytes > 0);
        assert_eq!((ranks_in(&got.2), ranks_in(&want.2)), (want.0.len() as u64, want.0.len() as u64));
        assert_eq!(got.2.classes.len(), small.iter().product::<u32>() as usize, "a class per template rank");
        assert_eq!(got.2.classes.iter().map(|c| c.messages).sum::<u64>(), got.2.messages);
        // a class's time in MPI is its ranks' (finish − computation), on average
        let mean_mpi: f64 = got.2.classes.iter().map(|c| c.mpi_s * c.ranks as f64).sum::<f64>() / want.0.len() as f64;
        let direct: f64 = got.0.iter().zip(&got.2.calc_s).map(|(&f, c)| crate::time::to_seconds(f) - c).sum::<f64>();
        assert!((mean_mpi - direct / want.0.len() as f64).abs() < 1e-9);
        let ranks = big.iter().product::<u32>();
        let scaled = replay(&TraceSpec { scale_to: Some(ranks), ..spec(&d) });
        match i {
            // MPI_Dims_create's grid at the traced size and at the target: the same grid
            1 | 3 => assert_eq!(scaled.unwrap().0, want.0, "{small:?} to {ranks} ranks"),
            // 2×4 at 18 ranks would be MPI_Dims_create's 3×6: the 2 would grow
            4 => {
                let e = scaled.unwrap_err();
                assert!(e.contains("MPI_Dims_create's 3×6") && e.contains("dimension 0 grows from 2 to 3"), "{e}");
            }
            _ => {}
        }
    }
    let d = tmp("grid-no-interior");
    write_synthetic_cart(&d, &[1, 2, 2], &[true; 3], 1).unwrap();
    let e = replay(&TraceSpec { scale_to: Some(16), ..spec(&d) }).unwrap_err();
    assert!(e.contains("MPI_Dims_create's 2×4×2") && e.contains("no interior to repeat"), "{e}");
    // a grid MPI_Dims_create does not make keeps its small dimensions
    let d = tmp("grid-not-a-multiple");
    write_synthetic_cart(&d, &[2, 6], &[false; 2], 1).unwrap();
    let e = replay(&TraceSpec { scale_to: Some(15), ..spec(&d) }).unwrap_err();
    assert!(e.contains("multiples of 2 ranks, not to 15"), "{e}");
}

/// The 3-D extrapolation benchmark's template (rooted and v-collectives on
/// rows and the world each iteration) on 6×6×6 replays as the program
/// written at that size: roots moved to the row's and the world's last
/// rank, every message there, the allgatherv's counts carried along the
/// row (8·(64 + i)), exact: the same finish times. Without that line each
/// member would take its class's count (the template's 3 are edge,
/// interior, edge).
#[test]
fn the_3d_benchmark_template_extrapolates_its_roots_and_v_collectives() {
    let (d, direct) = (tmp("grid3d-small"), tmp("grid3d-big"));
    write_synthetic_grid3d(&d, 2).unwrap();
    super::synthetic::cart_program(&direct, &[6, 6, 6], &[true; 3], 2, true).unwrap();
    let want = replay(&spec(&direct)).unwrap();
    let got = replay(&TraceSpec { grid: Some("6x6x6".into()), ..spec(&d) }).unwrap();
    assert_eq!(got.2.messages, want.2.messages);
    assert!(want.2.messages > 0);
    assert_eq!((got.0.clone(), got.1, got.2.bytes), (want.0.clone(), want.1, want.2.bytes));
    assert_eq!((got.2.resized_v_collectives, want.2.resized_v_collectives), (0, 0));
}

/// A random program on a 3×3 grid (periodic or not), the same calls on
/// every rank: halos and Sendrecvs along random dimensions, every
/// collective on the world, rows or columns, blocking or waited for a few
/// calls later, roots on edges, v-counts with zeros (members with nothing
/// to do), and computation that differs by rank.
fn write_random_grid(d: &Path, seed: u64) {
    let periodic = seed % 2 == 1;
    let g = grid::Grid::new(vec![3, 3], vec![periodic; 2]).unwrap();
    for r in 0..9u32 {
        let c = g.coords(r);
        let mut x = seed;
        let mut draw = |n: u64| {
            x = crate::rng::mix64(x);
            x % n
        };
        let mut k = Rank::new(d, r as i32, 9);
        cart_with_rows_and_columns(&mut k, &g, r);
        let step = |dim: usize, s: i64| neighbour(&g, r, dim, s);
        let mut open: Vec<(u64, u64)> = Vec::new(); // (request, calls left before its wait)
        for call in 0..40u64 {
            k.t += 1e-6 * ((r as u64 + call + draw(3)) % 5) as f64;
            let req = 1000 + call * 4;
            let later = draw(4);
            let (comm, members_dim) = [(0u32, None), (2, Some(1usize)), (3, Some(0))][draw(3) as usize];
            // a root on an edge of the communicator, as a world rank
            let root = match members_dim {
                None => [0, 8][draw(2) as usize],
                Some(dim) => {
                    let mut m = c;
                    m[dim] = [0, 2][draw(2) as usize];
                    g.rank(&m) as i32
                }
            };
            let n = if comm == 0 { 9 } else { 3 };
            let bytes = [8u64, 1000, 65536, 1 << 20][draw(4) as usize];
            let counts: Vec<u64> = (0..n).map(|_| [0u64, 16, 4096][draw(3) as usize]).collect();
            let coll = COLLS[draw(17) as usize];
            match draw(4) {
                0 => {
                    let (dim, s) = (draw(2) as usize, [-1, 1][draw(2) as usize]);
                    k.p2p(op::IRECV, step(dim, -s), 4, bytes, req).p2p(op::ISEND, step(dim, s), 4, bytes, req + 1);
                    open.extend([(req, later), (req + 1, later)]);
                }
                1 => {
                    let dim = draw(2) as usize;
                    k.p2p(op::SENDRECV_SEND, step(dim, 1), 5, bytes, 0).p2p(op::SENDRECV_RECV, step(dim, -1), 5, bytes, 0);
                }
                _ => {
                    // this rank's place in the communicator: member j sends counts[j] where counts are per member
                    let me = members_dim.map_or(r as usize, |dim| c[dim] as usize);
                    let payload: Vec<u64> = match coll {
                        // everyone sends counts[j] to member j, so member j receives counts[j] from everyone
                        Coll::Alltoallv | Coll::Alltoallw => counts.iter().copied().chain(std::iter::repeat_n(counts[me], n)).collect(),
                        Coll::Gatherv | Coll::Scatterv | Coll::Allgatherv | Coll::ReduceScatter => counts.clone(),
                        _ => vec![],
                    };
                    let mine = if payload.is_empty() { bytes } else { counts[me] };
                    let nonblocking = draw(2) == 1;
                    let code = op::COLL_BASE + if nonblocking { op::NONBLOCKING } else { 0 } + coll as u16;
                    let peer = if coll.is_rooted() { root } else { -1 };
                    k.rec(Record { op: code, comm, peer, bytes: mine, req, ..Default::default() }, &payload);
                    if nonblocking {
                        open.push((req, later));
                    }
                }
            }
            for o in &mut open {
                if o.1 == 0 {
                    k.p2p(op::WAIT, -1, 0, 0, o.0);
                }
                o.1 = o.1.wrapping_sub(1);
            }
            open.retain(|o| o.1 != u64::MAX);
        }
        for (q, _) in open {
            k.p2p(op::WAIT, -1, 0, 0, q);
        }
        k.finish();
    }
}

#[test]
fn random_grid_programs_compiled_per_class_replay_as_their_goal_export() {
    for seed in 0..24u64 {
        let d = tmp(&format!("random-grid-{seed}"));
        write_random_grid(&d, seed);
        let grid = ["3x3", "4x5", "6x6", "5x3"][seed as usize % 4];
        let s = TraceSpec { grid: Some(grid.into()), ..spec(&d) };
        let (finish, events, _) = replay(&s).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let (finish_goal, events_goal, _) = replay_goal(&s);
        assert_eq!((finish, events), (finish_goal, events_goal), "seed {seed} on {grid}");
    }
}

/// A periodic 3×3 grid whose ranks send 1, 2 or 3 messages to their +x
/// neighbour (by their x), each receiving what its −x neighbour sent: it
/// pairs up as traced, but at scale a copy of one rank may face a copy of
/// another, so it is refused before the run, naming the two counts.
#[test]
fn data_dependent_message_counts_are_refused_before_the_run() {
    let d = tmp("data-dependent");
    let g = grid::Grid::new(vec![3, 3], vec![true; 2]).unwrap();
    let sends = |x: u32| 1 + x as u64;
    for r in 0..9u32 {
        let mut k = Rank::new(&d, r as i32, 9);
        cart_with_rows_and_columns(&mut k, &g, r);
        let x = g.coords(r)[0];
        let mut req = 100;
        for _ in 0..sends((x + 2) % 3) {
            k.p2p(op::IRECV, neighbour(&g, r, 0, -1), 4, 64, req);
            req += 1;
        }
        for _ in 0..sends(x) {
            k.p2p(op::ISEND, neighbour(&g, r, 0, 1), 4, 64, req);
            req += 1;
        }
        for q in 100..req {
            k.p2p(op::WAIT, -1, 0, 0, q);
        }
        k.finish();
    }
    // as traced, each copy faces the rank it faced in the trace
    replay(&TraceSpec { grid: Some("3x3".into()), ..spec(&d) }).unwrap();
    let e = replay(&TraceSpec { grid: Some("6x3".into()), ..spec(&d) }).unwrap_err();
    assert!(e.contains("cannot extrapolate on the 3×3 (periodic) grid") && e.contains("do not pair up"), "{e}");
    assert!(e.contains("sends 2 messages") && e.contains("receives 1 of them"), "{e}");
}

/// Communicator `id` made from `parent` (`kind`: the creation kind) with members `members`.
fn comm(k: &mut Rank, parent: u32, id: u32, kind: i32, members: &[i32]) {
    k.rec(Record { op: op::COMM_NEW, comm: parent, peer: id as i32, tag: kind, ..Default::default() }, &[]);
    for (local, &w) in members.iter().enumerate() {
        k.rec(Record { op: op::COMM_MEMBER, comm: id, peer: w, tag: local as i32, ..Default::default() }, &[]);
    }
}

#[test]
fn communicators_made_by_their_members_only_keep_every_later_one_apart() {
    // ranks 0 and 1 make a communicator by create_group (rank 2 does not
    // call it), then all three dup the world and meet in a barrier: the dup
    // is the same communicator on every rank (it used to count as the
    // world's second on ranks 0 and 1, and its first on rank 2: a deadlock)
    let d = tmp("create_group");
    for r in 0..3 {
        let mut k = Rank::new(&d, r, 3);
        if r < 2 {
            comm(&mut k, 0, 1, 6, &[0, 1]);
            k.coll(Coll::Allreduce, 1, 8, &[]);
        }
        comm(&mut k, 0, 2, 3, &[0, 1, 2]);
        k.coll(Coll::Barrier, 2, 0, &[]);
        k.finish();
    }
    replay(&spec(&d)).expect("no deadlock");
    // two communicators the tracer saw made by a call it does not model
    // (MPI_Comm_create_from_group), with the same members, made in the same
    // order on both: rank 0 sends 8 bytes on the first, then 80,000 on the
    // second; rank 1 receives on the second first. Each receive matches its
    // own communicator's send (they had one context: 80,000 matched 8)
    let d = tmp("same_members");
    for r in 0..2 {
        let mut k = Rank::new(&d, r, 2);
        comm(&mut k, u32::MAX, 1, 14, &[0, 1]);
        comm(&mut k, u32::MAX, 2, 14, &[0, 1]);
        let both = [(1u32, 8u64), (2, 80_000)];
        for (c, bytes) in if r == 0 { both } else { [both[1], both[0]] } {
            let (code, peer) = if r == 0 { (op::SEND, 1) } else { (op::RECV, 0) };
            k.rec(Record { op: code, comm: c, peer, tag: 0, bytes, ..Default::default() }, &[]);
        }
        k.finish();
    }
    let (_, _, goal) = replay_goal(&spec(&d));
    let tag_of = |what: &str| {
        let line = goal.lines().find(|l| l.contains(what)).unwrap_or_else(|| panic!("{what} in {goal}"));
        line.split("tag ").nth(1).map(|t| t.trim().to_string())
    };
    assert_eq!(tag_of("send 80000b"), tag_of("recv 80000b"), "{goal}");
    assert_eq!(tag_of("send 8b"), tag_of("recv 8b"), "{goal}");
    assert_ne!(tag_of("send 8b"), tag_of("send 80000b"), "{goal}");
}

#[test]
fn by_call_shares_the_replayed_time_in_mpi_among_the_traced_calls() {
    let d = tmp("by-call");
    write_synthetic(&d, 4, 20).unwrap();
    let mut cfg = crate::bench::config("bcast_1m").unwrap();
    cfg.workload = crate::sim::WorkloadSpec::Trace(TraceSpec { by_call: true, ..spec(&d) });
    let r = crate::sim::run(&cfg, None).unwrap();
    assert!(r.timeline.is_none(), "the computations captured for the table are not a timeline to write");
    let rep = r.trace_report.unwrap();
    let rows = &rep.by_call;
    // conservation: the rows add up to the replay's time outside computation, over all ranks
    let replayed: f64 = rows.iter().map(|c| c.replayed_s).sum();
    let outside: f64 = (0..4).map(|q| crate::time::to_seconds(r.finish_times[q]) - rep.calc_s[q]).sum();
    assert!((replayed - outside).abs() < 1e-12 * outside.max(1.0), "{replayed} vs {outside}");
    // the traced side is the trace's own time in modelled calls, and the counts are the calls made
    let traced: f64 = rows.iter().map(|c| c.traced_s).sum();
    assert!((traced - rep.traced_mpi_s.iter().sum::<f64>()).abs() < 1e-12);
    let calls = |name: &str| rows.iter().find(|c| c.call.starts_with(name)).map(|c| c.calls);
    assert_eq!(calls("MPI_Allreduce"), Some(4 * 20));
    assert_eq!(calls("MPI_Isend"), Some(4 * 20));
    assert_eq!(calls("MPI_Wait"), Some(4 * 20 * 2));
    assert_eq!(rows.iter().find(|c| c.call == "MPI_Isend").unwrap().bytes, 4 * 20 * 4096);
    // largest disagreement first
    let gaps: Vec<f64> = rows.iter().map(|c| (c.replayed_s - c.traced_s).abs()).collect();
    assert!(gaps.windows(2).all(|w| w[0] >= w[1]), "{gaps:?}");
    // only as traced
    cfg.workload = crate::sim::WorkloadSpec::Trace(TraceSpec { by_call: true, scale_to: Some(8), ..spec(&d) });
    assert!(crate::sim::run(&cfg, None).err().unwrap().to_string().contains("only for a replay as traced"));
}

#[test]
fn an_interrupted_replay_is_interrupted_whichever_rank_it_stopped_in() {
    use crate::engine::SimError;
    let nested = TraceError::Rank { rank: 3, source: Box::new(TraceError::Rank { rank: 1, source: Box::new(TraceError::Interrupted) }) };
    assert_eq!(SimError::from(nested), SimError::Interrupted);
    let other = TraceError::Rank { rank: 3, source: Box::new(TraceError::Internal("x".into())) };
    assert_eq!(SimError::from(other), SimError::Invalid("rank 3: x".into()));
}
