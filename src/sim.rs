//! One simulation run: a configuration (from a scenario, see
//! [`crate::scenario`]) in, results out.

use crate::alloc;
use crate::engine::{Engine, SimError};
use crate::memory::check_memory;
use crate::network::Network;
use crate::noise::{Noise, NoiseSpec};
use crate::probes::{Explain, Report, Timeline};
use crate::program::goal_file::read_goal_program;
use crate::program::stream::{StreamProgram, Workload};
use crate::program::Program;
use crate::record::Recorder;
use crate::time::Time;
use crate::trace::Replay;
pub use crate::workloads::{Visited, WorkloadSpec, WorkloadVisitor};
use std::time::Instant;

/// A run as the engine takes it (see [`crate::scenario::Scenario::config`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub seed: u64,
    pub network: Network,
    pub noise: Vec<NoiseSpec>,
    pub workload: WorkloadSpec,
    /// Jobs sharing the machine (then `workload` is not run; the network's mapping places them).
    pub jobs: Vec<crate::jobs::JobSpec>,
    /// Record the per-(rank, iteration) timers.
    pub record_timers: bool,
    /// Nonblocking collectives advance without MPI calls (a progress thread).
    pub async_progress: bool,
    /// Refuse runs whose state is estimated above this; None = 80% of available memory.
    pub max_memory_bytes: Option<u64>,
    /// Capture a timeline of up to this many spans (0: none).
    pub timeline_spans: u64,
    /// Without a timeline: capture up to this many computations alone (a
    /// trace replay's `by_call` attribution needs them), not returned.
    pub computation_spans: u64,
    /// Keep the critical path (see `probes::explain`).
    pub explain: bool,
    /// The network to build once a GOAL file or trace gives the rank count,
    /// which its mapping needs (`network` holds it block-mapped until then).
    pub network_once_read: Option<Box<crate::network::spec::NetworkSpec>>,
}

/// `cfg` with its network built for `ranks`, where the mapping waited for them.
fn mapped(cfg: &Config, ranks: u32) -> Result<std::borrow::Cow<'_, Config>, SimError> {
    let Some(spec) = &cfg.network_once_read else { return Ok(std::borrow::Cow::Borrowed(cfg)) };
    let shape = crate::workloads::Shape::ranks(ranks);
    let network = spec.engine_network(&shape, cfg.seed, cfg.max_memory_bytes)?;
    Ok(std::borrow::Cow::Owned(Config { network, network_once_read: None, ..cfg.clone() }))
}

/// Timelines are for looking at: beyond this many ranks no picture helps.
pub const TIMELINE_MAX_RANKS: u32 = 4096;

/// What a run produces.
pub struct RunResult {
    pub finish_times: Vec<Time>,
    pub timer_names: Vec<String>,
    /// Per timer, ranks × iterations in seconds, row-major.
    pub timers: Vec<Vec<f64>>,
    pub ranks: u32,
    pub iterations: u32,
    pub makespan: Time,
    pub events: u64,
    pub wall_s: f64,
    /// Peak heap bytes allocated by the engine during the run.
    pub peak_bytes: usize,
    /// The peak the run was estimated to need, and checked against, before it allocated.
    pub estimated_bytes: Option<u128>,
    /// Quantities the workload derived (e.g. a skeleton's computation time), in seconds.
    pub derived: Vec<(String, f64)>,
    /// The captured timeline, if asked for, and whether it hit its limit.
    pub timeline: Option<(Vec<crate::probes::timeline::Span>, bool)>,
    /// For trace replays: what was not modelled, and the traced time in MPI.
    pub trace_report: Option<crate::trace::Report>,
    /// The makespan's critical path, if asked for.
    pub explained: Option<crate::probes::explain::Explained>,
    /// With shared links: the links that held messages back the most; per
    /// job (of a run of `[[jobs]]`), its own, with what all its links cost it (ps).
    pub held_back: Vec<crate::engine::HeldBack>,
    pub job_held_back: Vec<(Vec<crate::engine::HeldBack>, f64)>,
    /// Per job (of a run of `[[jobs]]`): the results' key of its links held back.
    pub job_held_back_keys: Vec<String>,
    /// With shared links and a timeline: each class's flows and busy links over time.
    pub link_counters: Option<crate::engine::LinkCounters>,
}

/// How many of the links that held messages back the most a run names.
const HELD_BACK_TOP: usize = 5;

/// Called between chunks of events with (simulated time, events so far);
/// returning false stops the run.
/// Told (simulated time, events so far, the share of the work done if the
/// program knows it) between chunks of events; false stops the run.
pub type Progress<'a> = &'a mut dyn FnMut(Time, u64, Option<f64>) -> bool;

const CHUNK: u64 = 1 << 20;

/// Engine bytes per rank whatever the workload: the clocks and match lists
/// of one CPU and one NIC (32) and the finish times the run returns (8).
const ENGINE_BYTES_PER_RANK: u128 = 32 + 8;

/// The engine's fixed bytes per rank with the platform's per-node and per-socket tables.
fn engine_bytes_per_rank(cfg: &Config) -> u128 {
    // each NIC port beyond the first adds a send and a receive clock; a
    // progress thread a CPU clock
    let ports = 16 * (cfg.network.nic_ports.max(1) as u128 - 1);
    let cpus = if cfg.async_progress { 8 } else { 0 };
    // one periodic or Poisson source is cached: 12 bytes per rank
    let noise = if cfg.noise.is_empty() { 0 } else { 12 };
    ENGINE_BYTES_PER_RANK + ports + cpus + noise + crate::engine::Fabric::bytes_per_rank_bound(&cfg.network)
}

/// The event queue's bytes whatever the ranks: its ring of 4,096 windows.
const QUEUE_FIXED_BYTES: u128 = 56 << 10;

/// The engine's bytes for `ranks` ranks, with what does not grow with them;
/// with shared links, a rank's flows in flight crossing `links` links
/// together ([`flow_links`]).
fn engine_bytes(cfg: &Config, ranks: u128, links: f64) -> u128 {
    let flows = crate::engine::Fabric::flow_bytes(&cfg.network, ranks.min(u32::MAX as u128) as u32, links);
    ranks * engine_bytes_per_rank(cfg) + QUEUE_FIXED_BYTES + crate::engine::Fabric::fixed_bytes(&cfg.network) + flows
}

/// Ranks whose first messages are followed along their routes, for the
/// estimate of a run with shared links; of each, at most this many ops of
/// its program are looked at and this many steps of a collective it starts.
const ROUTE_SAMPLES: u64 = 256;
const SAMPLE_OPS: usize = 512;
const SAMPLE_STEPS: u32 = 64;

/// With shared links, the links a rank's flows in flight cross at once,
/// for the estimate: a flow's state grows with its route (a torus's route
/// can cross a hundred links and more). The estimate counts two flows per
/// rank in flight: per rank of a sample, the two longest routes among the
/// messages it has outstanding together (sent before it waits), in the
/// phase of its first messages where they are longest; averaged over the
/// sample. `first`: its first rank on the network (`ranks` in all; a job's
/// ranks follow the jobs before it). 0 without flows.
fn flow_links<W: Workload>(w: &W, net: &Network, first: u32, ranks: u32) -> f64 {
    use crate::collectives::Step;
    use crate::program::stream::{Ctx, StreamOp};
    let Some(routes) = crate::engine::FlowRoutes::new(net, ranks) else { return 0.0 };
    let p = w.num_ranks();
    if p == 0 {
        return 0.0;
    }
    let samples = ROUTE_SAMPLES.min(p as u64);
    let mut total = 0u64;
    for i in 0..samples {
        // all ranks when there are few, else spread at random (a fat tree's
        // routes differ between neighbouring ranks)
        let r = if samples == p as u64 { i as u32 } else { (crate::rng::hash(0xE571_0A7E, i, 1, 0) % p as u64) as u32 };
        let links = |to: u32, bytes: u64| if to < p { routes.links(first + r, first + to, bytes) } else { 0 };
        // the two longest routes of the messages outstanding now, and the most they crossed together
        let (mut now, mut most) = ([0u32; 2], 0u32);
        let send = |now: &mut [u32; 2], l: u32| {
            if l > now[0] {
                *now = [l, now[0]];
            } else if l > now[1] {
                now[1] = l;
            }
        };
        let done = |now: &mut [u32; 2], most: &mut u32| {
            *most = (*most).max(now[0] + now[1]);
            *now = [0; 2];
        };
        let mut st = W::State::default();
        for _ in 0..SAMPLE_OPS {
            match w.next(r, &mut st, &Ctx::default()) {
                StreamOp::ISend { peer, bytes, .. } | StreamOp::CollSend { peer, bytes, .. } => send(&mut now, links(peer, bytes)),
                StreamOp::Wait(_) | StreamOp::WaitAny(_) | StreamOp::CollWait => done(&mut now, &mut most),
                StreamOp::CollStart(id) => {
                    // a nonblocking collective's rounds, each waited for
                    let Some(c) = w.collective(id) else { continue };
                    let mut round = [0u32; 2];
                    for k in 0..SAMPLE_STEPS {
                        match w.collective_step(&c, r, k) {
                            Some(Step::Send { to, bytes } | Step::Exchange { to, send_bytes: bytes, .. }) => {
                                send(&mut round, links(to, bytes));
                                done(&mut round, &mut most);
                            }
                            Some(Step::FanOut { to, bytes, .. }) => send(&mut round, links(to, bytes)),
                            Some(Step::WaitFanOut { .. }) => done(&mut round, &mut most),
                            Some(_) => {}
                            None => break,
                        }
                    }
                    done(&mut round, &mut most);
                }
                StreamOp::Done => break,
                _ => {}
            }
        }
        done(&mut now, &mut most);
        total += most as u64;
    }
    total as f64 / samples as f64
}

/// With shared links, the links a rank's flows in flight cross at once for
/// a program whose messages are not known before it is read (a GOAL file, a
/// trace, a calibration's collective): two routes between ranks picked at
/// random. 0 without flows.
fn typical_flow_links(net: &Network, ranks: u32) -> f64 {
    crate::engine::FlowRoutes::new(net, ranks).map_or(0.0, |r| 2.0 * r.typical())
}

/// What a run is estimated to need before it allocates, and against what it is checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub ranks: u32,
    /// Peak heap bytes of the run (engine, program, timers, results).
    pub bytes: u128,
}

/// Estimates the peak memory of a generated workload.
/// `first`, `ranks`: where its ranks are on the network (see [`flow_links`]).
struct EstimateStream<'a> {
    cfg: &'a Config,
    first: u32,
    ranks: Option<u32>,
}

impl WorkloadVisitor for EstimateStream<'_> {
    /// The estimate, and the links a rank's flows in flight cross ([`flow_links`]).
    type Out = (Estimate, f64);
    fn visit<W: Workload + Clone + 'static>(self, w: W) -> Self::Out {
        let links = flow_links(&w, &self.cfg.network, self.first, self.ranks.unwrap_or(w.num_ranks()));
        (Estimate { ranks: w.num_ranks(), bytes: stream_bytes(&w, self.cfg, links) }, links)
    }
}

/// A generated workload's estimated peak bytes: the engine, the program,
/// the timers (and one timer's matrix more while they are handed over), a
/// critical path and a timeline if asked for; `links`: what a rank's flows
/// in flight cross ([`flow_links`]).
fn stream_bytes<W: Workload>(w: &W, cfg: &Config, links: f64) -> u128 {
    let (p, iters) = (w.num_ranks(), w.iterations());
    let waits = cfg.record_timers && cfg.explain;
    let matrix = p as u128 * iters as u128 * std::mem::size_of::<Time>() as u128;
    let timers = w.timer_names().len() + usize::from(waits);
    // handing the timers over copies one matrix, where there are several
    let handover = if timers > 1 { matrix } else { 0 };
    let timer_bytes = if cfg.record_timers { Recorder::bytes_needed(w.timer_names().len(), p, iters) + handover } else { 0 }
        + if waits { Recorder::wait_bytes_needed(p, iters) } else { 0 };
    let program_bytes = p as u128 * StreamProgram::<W>::state_bytes_per_rank(w) as u128;
    let dynamic = p as u128 * cfg.workload.in_flight_bytes_per_rank();
    let explain = if cfg.explain { p as u128 * crate::probes::explain::explain_bytes_per_rank() } else { 0 };
    let spans = cfg.timeline_spans.max(cfg.computation_spans) as u128 * crate::probes::timeline::Timeline::SPAN_BYTES;
    engine_bytes(cfg, p as u128, links) + program_bytes + timer_bytes + dynamic + explain + spans
}

/// The estimate the run is checked against before it allocates (a GOAL
/// file or trace is opened, not loaded). None for a skeleton or app whose
/// program comes from a calibration run that did not fit.
pub fn estimate(cfg: &Config) -> Result<Estimate, SimError> {
    if !cfg.jobs.is_empty() {
        return jobs_estimate(cfg);
    }
    match &cfg.workload {
        WorkloadSpec::Goal { path } => {
            let size = goal_file_size(path).map_err(|m| crate::rule::RuleError::new("workload.path", m))?;
            // the ranks are known once the file is read
            Ok(Estimate { ranks: 0, bytes: goal_bytes(cfg, size) })
        }
        WorkloadSpec::Trace(spec) => {
            let t = crate::trace::open(std::path::Path::new(&spec.dir))?;
            let ranks = crate::trace::simulated_ranks(spec, &t)?;
            let cfg = &*mapped(cfg, ranks)?;
            Ok(Estimate { ranks, bytes: trace_bytes(spec, &t, ranks, cfg, typical_flow_links(&cfg.network, ranks)) })
        }
        generated => {
            if let Some(ranks) = generated.calibration_ranks() {
                check_memory(calibration_bytes(cfg, ranks), cfg.max_memory_bytes)?;
            }
            let ((e, _), _) = generated.visit(&cfg.network, EstimateStream { cfg, first: 0, ranks: None })?.expect("a generated workload");
            Ok(e)
        }
    }
}

/// Jobs: the engine's state for all their ranks, each job's program and what it has in flight.
fn jobs_estimate(cfg: &Config) -> Result<Estimate, SimError> {
    let ranks: Vec<u32> = cfg.jobs.iter().enumerate().map(|(i, j)| j.ranks(i)).collect::<Result<_, _>>()?;
    let total = ranks.iter().map(|&r| r as u64).sum::<u64>().min(u32::MAX as u64) as u32;
    let mut e = Estimate { ranks: 0, bytes: 0 };
    // the links of a flow, over all the jobs' ranks
    let mut links = 0.0;
    for (i, j) in cfg.jobs.iter().enumerate() {
        let ranks = ranks[i];
        let one = Config { workload: j.workload.clone(), jobs: Vec::new(), record_timers: false, ..cfg.clone() };
        // each job's estimate as it would run alone, where that counts an engine for its ranks
        let (alone, engine, l) = match &j.workload {
            WorkloadSpec::Goal { path } => {
                let size = goal_file_size(path).map_err(|m| crate::rule::RuleError::new(format!("jobs[{i}].workload.path"), m))?;
                (goal_bytes(&one, size) + ranks as u128 * j.workload.in_flight_bytes_per_rank(), 0, typical_flow_links(&cfg.network, total))
            }
            WorkloadSpec::Trace(spec) => {
                let t = crate::trace::open(std::path::Path::new(&spec.dir))?;
                let l = typical_flow_links(&cfg.network, total);
                (trace_bytes(spec, &t, ranks, &one, l), engine_bytes(&one, ranks as u128, l), l)
            }
            built_in => {
                let visitor = EstimateStream { cfg: &one, first: e.ranks, ranks: Some(total) };
                let ((part, l), _) = built_in.visit(&cfg.network, visitor)?.expect("a built-in workload");
                (part.bytes, engine_bytes(&one, ranks as u128, l), l)
            }
        };
        // keep its program's share: the engine is counted once, for all ranks
        e.bytes += alone - engine.min(alone);
        e.ranks += ranks;
        links += l * ranks as f64;
    }
    e.bytes += engine_bytes(cfg, e.ranks as u128, if e.ranks > 0 { links / e.ranks as f64 } else { 0.0 });
    Ok(e)
}

/// A GOAL op takes ~20 bytes of text and ~60 bytes once loaded.
fn goal_bytes(cfg: &Config, size: u64) -> u128 {
    size as u128 * 4 + crate::engine::Fabric::fixed_bytes(&cfg.network)
}

/// `links`: what a rank's flows in flight cross ([`typical_flow_links`]).
fn trace_bytes(spec: &crate::trace::TraceSpec, t: &crate::trace::Opened, ranks: u32, cfg: &Config, links: f64) -> u128 {
    engine_bytes(cfg, ranks as u128, links)
        + ranks as u128 * cfg.workload.in_flight_bytes_per_rank()
        + crate::trace::bytes_needed(spec, t, ranks)
}

/// A skeleton or app first runs its collective once on every rank (to
/// calibrate): that run must fit as well (its program state well within 128 B/rank).
fn calibration_bytes(cfg: &Config, ranks: u32) -> u128 {
    engine_bytes(cfg, ranks as u128, typical_flow_links(&cfg.network, ranks))
        + ranks as u128 * (128 + WorkloadSpec::Collective(Default::default()).in_flight_bytes_per_rank())
}

pub fn run(cfg: &Config, progress: Option<Progress>) -> Result<RunResult, SimError> {
    alloc::reset_peak();
    let baseline = alloc::live_bytes();
    let mut result = if cfg.jobs.is_empty() { run_workload(cfg, progress)? } else { run_jobs(cfg, progress)? };
    result.peak_bytes = alloc::peak_bytes().saturating_sub(baseline);
    if let Some(m) = cfg.network.platform.as_ref().and_then(|p| p.memory) {
        // Ranks in memory-bound work that saturate a socket's bandwidth.
        result.derived.push(("memory_saturation_ranks".into(), m.saturation_ranks()));
    }
    Ok(result)
}

/// Runs a generated workload.
struct RunStream<'a, 'p> {
    cfg: &'a Config,
    progress: Option<Progress<'p>>,
}

impl WorkloadVisitor for RunStream<'_, '_> {
    type Out = Result<RunResult, SimError>;
    fn visit<W: Workload + Clone + 'static>(self, w: W) -> Self::Out {
        run_stream(w, self.cfg, self.progress)
    }
}

fn run_workload(cfg: &Config, mut progress: Option<Progress>) -> Result<RunResult, SimError> {
    match &cfg.workload {
        WorkloadSpec::Goal { path } => {
            let size = goal_file_size(path).map_err(|m| crate::rule::RuleError::new("workload.path", m))?;
            check_memory(goal_bytes(cfg, size), cfg.max_memory_bytes)?;
            let program = read_goal_program(std::path::Path::new(path))?;
            let ranks = program.num_ranks();
            let cfg = &*mapped(cfg, ranks)?;
            // the engine's share, once the file gives the ranks
            let links = typical_flow_links(&cfg.network, ranks);
            let estimated =
                goal_bytes(cfg, size) + engine_bytes(cfg, ranks as u128, links) + ranks as u128 * cfg.workload.in_flight_bytes_per_rank();
            check_memory(estimated, cfg.max_memory_bytes)?;
            let noise = Noise::new(&cfg.noise, cfg.seed, ranks)?;
            run_program(program, cfg, noise, progress, |_| (Vec::new(), Vec::new(), 0)).map(|(mut r, _)| {
                r.estimated_bytes = Some(estimated);
                r
            })
        }
        WorkloadSpec::Trace(spec) => run_trace(spec, cfg, progress),
        generated => {
            if let Some(ranks) = generated.calibration_ranks() {
                // the calibration run comes before the run's own check
                check_memory(calibration_bytes(cfg, ranks), cfg.max_memory_bytes)?;
            }
            let visitor = RunStream { cfg, progress: progress.take() };
            let (result, derived) = generated.visit(&cfg.network, visitor)?.expect("a generated workload");
            let mut r = result?;
            r.derived.splice(0..0, derived);
            Ok(r)
        }
    }
}

/// A built-in workload as a program of its own type, boxed (a job of several).
struct BoxProgram;

impl WorkloadVisitor for BoxProgram {
    type Out = Box<dyn Program>;
    fn visit<W: Workload + Clone + 'static>(self, w: W) -> Self::Out {
        Box::new(StreamProgram::new(w, Recorder::disabled()))
    }
}

/// Job `i`'s program, of `ranks` ranks: a built-in workload's, a GOAL
/// file's or a trace's replay (without its report). Its file's errors are
/// placed at the job's key.
fn job_program(j: &crate::jobs::JobSpec, i: usize, ranks: u32, net: &Network) -> Result<Box<dyn Program>, SimError> {
    let at = |key: &str| {
        let key = format!("jobs[{i}].workload{key}");
        move |e: SimError| match e {
            SimError::Invalid(m) => SimError::Rule(crate::rule::RuleError::new(key, m)),
            e => e,
        }
    };
    let program: Box<dyn Program> = match &j.workload {
        WorkloadSpec::Goal { path } => Box::new(read_goal_program(std::path::Path::new(path)).map_err(|e| at(".path")(e.into()))?),
        WorkloadSpec::Trace(spec) => {
            let t = crate::trace::open(std::path::Path::new(&spec.dir)).map_err(|e| at(".dir")(e.into()))?;
            match crate::trace::program(spec, &t).map_err(|e| at("")(e.into()))? {
                Replay::Window(p) => Box::new(p),
                Replay::Class(p) => Box::new(p),
            }
        }
        built_in => built_in.visit(net, BoxProgram)?.expect("a built-in workload").0,
    };
    if program.num_ranks() != ranks {
        // its file changed since its ranks were placed
        return Err(at("")(SimError::Invalid(format!("has {} ranks now, {ranks} when placed", program.num_ranks()))));
    }
    Ok(program)
}

/// Runs the jobs together, then each alone on the same nodes (the others'
/// ranks idle): per job its makespan from its start, alone and together,
/// and the slowdown, as derived figures `job_<name>_…`.
fn run_jobs(cfg: &Config, progress: Option<Progress>) -> Result<RunResult, SimError> {
    use crate::jobs::{figure, Idle, Jobs, Part};
    let names: Vec<String> = cfg.jobs.iter().enumerate().map(|(i, j)| j.name(i)).collect();
    let ranks: Vec<u32> = cfg.jobs.iter().enumerate().map(|(i, j)| j.ranks(i)).collect::<Result<_, _>>()?;
    let total: u32 = ranks.iter().sum();
    let estimated = jobs_estimate(cfg)?.bytes;
    check_memory(estimated, cfg.max_memory_bytes)?;
    let build = |only: Option<usize>| -> Result<Jobs, SimError> {
        let (mut parts, mut first) = (Vec::new(), 0);
        for (i, j) in cfg.jobs.iter().enumerate() {
            let program: Box<dyn Program> =
                if only.is_none_or(|k| k == i) { job_program(j, i, ranks[i], &cfg.network)? } else { Box::new(Idle(ranks[i])) };
            parts.push(Part { first, ranks: ranks[i], start: j.start_ps, program });
            first += ranks[i];
        }
        Ok(Jobs::new(parts, names.clone()))
    };
    let none = |_: &mut Jobs| (Vec::new(), Vec::new(), 0);
    let (mut result, _) = run_program(build(None)?, cfg, Noise::new(&cfg.noise, cfg.seed, total)?, progress, none)?;
    let mut first = 0usize;
    let mut derived = Vec::new();
    for (i, j) in cfg.jobs.iter().enumerate() {
        let span = |finish: &[Time]| finish[first..first + ranks[i] as usize].iter().max().map_or(0, |&t| t.saturating_sub(j.start_ps));
        let together = span(&result.finish_times);
        let alone_cfg = Config { explain: false, timeline_spans: 0, ..cfg.clone() };
        let (alone_run, _) = run_program(build(Some(i))?, &alone_cfg, Noise::new(&cfg.noise, cfg.seed, total)?, None, none)?;
        let alone = span(&alone_run.finish_times);
        let key = |figure| crate::jobs::figure_key(&names[i], figure);
        derived.push((key(figure::RANKS), ranks[i] as f64));
        derived.push((key(figure::MAKESPAN_S), together as f64 / 1e12));
        derived.push((key(figure::ALONE_S), alone as f64 / 1e12));
        derived.push((key(figure::SLOWDOWN), if alone > 0 { together as f64 / alone as f64 } else { 1.0 }));
        if let (Some((_, together)), Some((_, alone))) = (result.job_held_back.get(i), alone_run.job_held_back.get(i)) {
            // sharing's cost to its messages, with the others and among its own alone
            derived.push((key(figure::LINK_DELAY_S), together / 1e12));
            derived.push((key(figure::LINK_DELAY_ALONE_S), alone / 1e12));
        }
        first += ranks[i] as usize;
    }
    result.derived.splice(0..0, derived);
    result.job_held_back_keys = names.iter().map(|name| crate::jobs::figure_key(name, figure::LINKS_HELD_BACK)).collect();
    result.estimated_bytes = Some(estimated);
    Ok(result)
}

fn run_trace(spec: &crate::trace::TraceSpec, cfg: &Config, progress: Option<Progress>) -> Result<RunResult, SimError> {
    let t = crate::trace::open(std::path::Path::new(&spec.dir))?;
    let ranks = crate::trace::simulated_ranks(spec, &t)?;
    let mut cfg = mapped(cfg, ranks)?;
    if spec.by_call && cfg.timeline_spans == 0 {
        // one computation per traced record at most, and one more per rank
        let records = t.files.iter().map(|(_, h)| h.records.min(1 << 40)).sum::<u64>();
        cfg.to_mut().computation_spans = records + ranks as u64;
    }
    let cfg = &*cfg;
    let estimated = trace_bytes(spec, &t, ranks, cfg, typical_flow_links(&cfg.network, ranks));
    check_memory(estimated, cfg.max_memory_bytes)?;
    let noise = Noise::new(&cfg.noise, cfg.seed, ranks)?;
    let extrapolated = crate::trace::extrapolates(spec, &t);
    let (mut r, replay) = match crate::trace::program(spec, &t)? {
        Replay::Window(p) => run_replay(p, cfg, noise, progress, extrapolated).map(|(r, p)| (r, Replay::Window(p))),
        Replay::Class(p) => run_replay(p, cfg, noise, progress, extrapolated).map(|(r, p)| (r, Replay::Class(p))),
    }?;
    let mut report = crate::trace::replay_report(&t, &replay);
    crate::trace::add_classes(&mut report, &replay, &r.finish_times);
    if spec.by_call {
        let (spans, truncated) = if cfg.timeline_spans > 0 { r.timeline.clone() } else { r.timeline.take() }.unwrap_or_default();
        if truncated {
            return Err(SimError::Invalid("by_call: the timeline was cut short; ask for a larger one, or none".into()));
        }
        report.by_call = crate::trace::attribute(&replay, &spans, &r.finish_times).map_err(SimError::Invalid)?;
    }
    r.trace_report = Some(report);
    r.estimated_bytes = Some(estimated);
    Ok(r)
}

/// Runs a trace's replay program; an extrapolated one that does not pair up is refused with the likely cause.
fn run_replay<P: Program>(
    program: P,
    cfg: &Config,
    noise: Noise,
    progress: Option<Progress>,
    extrapolated: bool,
) -> Result<(RunResult, P), SimError> {
    run_program(program, cfg, noise, progress, |_| (Vec::new(), Vec::new(), 0)).map_err(|e| match e {
        // what the up-front checks cannot see: messages that pair up in number but not in order
        SimError::Deadlock(s) | SimError::Unmatched(s) if extrapolated => SimError::Invalid(format!(
            "cannot extrapolate: the extrapolated program does not pair up ({s}). Its messages pair up in number \
             (checked before the run), so their order or partners differ: copies of traced ranks that order their \
             exchanges differently wait for each other, and along a periodic dimension of 3 traced ranks an exchange \
             2 ranks away looks like one with the neighbour on the other side (trace with 5 or more ranks along \
             periodic dimensions to have that refused up front)"
        )),
        e => e,
    })
}

fn run_stream<W: Workload>(w: W, cfg: &Config, progress: Option<Progress>) -> Result<RunResult, SimError> {
    let (p, iters) = (w.num_ranks(), w.iterations());
    let names = w.timer_names();
    let waits = cfg.record_timers && cfg.explain;
    if cfg.explain {
        check_explain(p, cfg)?;
    }
    let estimated = stream_bytes(&w, cfg, flow_links(&w, &cfg.network, 0, w.num_ranks()));
    check_memory(estimated, cfg.max_memory_bytes).map_err(|e| {
        if cfg.explain {
            SimError::MemoryLimit(format!(
                "{e} (of it, explaining keeps about {} bytes per rank; run without explain)",
                crate::probes::explain::explain_bytes_per_rank()
            ))
        } else {
            e.into()
        }
    })?;
    let noise = Noise::new(&cfg.noise, cfg.seed, p)?; // its cache is in engine_bytes_per_rank
    let recorder = if cfg.record_timers { Recorder::new(names, p, iters) } else { Recorder::disabled() };
    // explained: each rank's idle time per iteration, as one more timer
    let recorder = if waits { recorder.tracking_waits() } else { recorder };
    let program = StreamProgram::new(w, recorder).with_async_progress(cfg.async_progress);
    run_program(program, cfg, noise, progress, |prog: &mut StreamProgram<W>| {
        // converted in place: one timer's matrix is copied at a time
        let timers = prog.recorder.take_seconds();
        // the workload's iterations, timed or not (P_D subtracts one barrier per iteration)
        (prog.recorder.names().to_vec(), timers, iters)
    })
    .map(|(mut r, _)| {
        r.estimated_bytes = Some(estimated);
        r
    })
}

/// Refuses to explain a run whose critical path alone would not fit.
fn check_explain(ranks: u32, cfg: &Config) -> Result<(), SimError> {
    let flows = cfg.network.platform.as_ref().is_some_and(|pl| pl.links.flow);
    let per_rank = crate::probes::explain::explain_bytes_per_rank() + if flows { crate::probes::explain::flow_bytes_per_rank() } else { 0 };
    check_memory(ranks as u128 * per_rank, cfg.max_memory_bytes).map_err(|e| {
        SimError::MemoryLimit(format!(
            "{e} (for the critical path alone: explaining keeps about {per_rank} bytes per rank; run without explain)"
        ))
    })
}

fn run_program<P: Program>(
    program: P,
    cfg: &Config,
    noise: Noise,
    progress: Option<Progress>,
    extract: impl FnOnce(&mut P) -> (Vec<String>, Vec<Vec<f64>>, u32),
) -> Result<(RunResult, P), SimError> {
    let wall = Instant::now();
    let mut net = cfg.network.clone();
    if let Some(pl) = net.platform.as_mut() {
        pl.seed = cfg.seed;
    }
    // the probes asked for: each combination is its own engine, so that
    // what is not asked for costs nothing (a timeline beside the critical
    // path is decided at run time: one engine less to compile)
    let timeline = if cfg.timeline_spans > 0 {
        Some(Timeline::new(cfg.timeline_spans as usize))
    } else if cfg.computation_spans > 0 {
        Some(Timeline::computations(cfg.computation_spans as usize))
    } else {
        None
    };
    match (cfg.explain, timeline) {
        (true, timeline) => {
            check_explain(program.num_ranks(), cfg)?;
            drive(Engine::with_probe(program, net, noise, (Explain::default(), timeline))?, cfg, progress, extract, wall)
        }
        (false, Some(timeline)) => drive(Engine::with_probe(program, net, noise, timeline)?, cfg, progress, extract, wall),
        (false, None) => drive(Engine::new(program, net, noise)?, cfg, progress, extract, wall),
    }
}

/// Runs an engine (observed by probe `O`) to the end.
fn drive<P: Program, O: Report>(
    mut engine: Engine<P, O>,
    cfg: &Config,
    mut progress: Option<Progress>,
    extract: impl FnOnce(&mut P) -> (Vec<String>, Vec<Vec<f64>>, u32),
    wall: Instant,
) -> Result<(RunResult, P), SimError> {
    if cfg.timeline_spans > 0 {
        if engine.num_ranks() > TIMELINE_MAX_RANKS {
            return Err(SimError::Invalid(format!(
                "a timeline of {} ranks is too large to draw or load; timelines are limited to {TIMELINE_MAX_RANKS} ranks",
                engine.num_ranks()
            )));
        }
        check_memory(cfg.timeline_spans as u128 * Timeline::SPAN_BYTES, cfg.max_memory_bytes)?;
        // shared links' counters beside the spans: as many samples at most (16 bytes each)
        engine.record_link_counters(cfg.timeline_spans as usize);
    } else if cfg.computation_spans > 0 {
        check_memory(cfg.computation_spans as u128 * Timeline::SPAN_BYTES, cfg.max_memory_bytes)?;
    }
    loop {
        let finished = engine.step(CHUNK)?;
        if finished {
            break;
        }
        if let Some(cb) = progress.as_mut() {
            if !cb(engine.now(), engine.events, engine.view.program.progress()) {
                return Err(SimError::Interrupted);
            }
        }
    }
    let wall_s = wall.elapsed().as_secs_f64();

    let p = engine.num_ranks();
    let finish_times: Vec<Time> = (0..p).map(|r| engine.finish_time(r)).collect();
    let makespan = finish_times.iter().copied().max().unwrap_or(0);
    let (timer_names, timers, iterations) = extract(&mut engine.view.program);
    let crate::probes::Findings { timeline, mut explained } = engine.findings();
    if let Some(x) = explained.as_mut() {
        let mut slots: Vec<u32> = x.route.iter().filter_map(|s| s.link.map(|l| l.0)).collect();
        slots.sort_unstable();
        slots.dedup();
        x.link_names = slots.into_iter().filter_map(|s| Some((s, engine.link_name(s)?))).collect();
    }
    let link_counters = engine.take_link_counters();
    let jobs = engine.view.program.job_firsts().len() as u32;
    let held_back = engine.links_held_back(None, HELD_BACK_TOP).map(|(w, _)| w).unwrap_or_default();
    let job_held_back = (0..jobs).filter_map(|j| engine.links_held_back(Some(j), HELD_BACK_TOP)).collect();
    let mut derived = node_traffic(engine.node_traffic());
    derived.extend(link_traffic(engine.link_traffic()));
    if let Some(shared) = engine.shared_links() {
        derived.extend(shared_links(shared));
    }
    let result = RunResult {
        finish_times,
        timer_names,
        timers,
        ranks: p,
        iterations,
        makespan,
        events: engine.events,
        wall_s,
        peak_bytes: alloc::peak_bytes(),
        estimated_bytes: None,
        derived,
        timeline,
        trace_report: None,
        explained,
        held_back,
        job_held_back,
        job_held_back_keys: Vec::new(),
        link_counters,
    };
    Ok((result, engine.view.program))
}

/// What the nodes' NICs carried to and from other nodes: the total, and
/// the busiest and mean node each way (the 2-D grid paper's per-NIC cost).
fn node_traffic((out, inn): (&[u64], &[u64])) -> Vec<(String, f64)> {
    if out.is_empty() {
        return Vec::new();
    }
    let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len() as f64;
    let max = |v: &[u64]| v.iter().copied().max().unwrap_or(0) as f64;
    vec![
        ("off_node_bytes".into(), out.iter().sum::<u64>() as f64),
        ("node_bytes_out_max".into(), max(out)),
        ("node_bytes_out_mean".into(), mean(out)),
        ("node_bytes_in_max".into(), max(inn)),
        ("node_bytes_in_mean".into(), mean(inn)),
    ]
}

/// What the links between switches carried: the busiest link and the mean
/// over all links of the topology (a bundle of parallel links counts as
/// its share per link).
fn link_traffic((bytes, links): (&[u64], &crate::network::Links)) -> Vec<(String, f64)> {
    if bytes.is_empty() {
        return Vec::new();
    }
    let per_link = |s: usize| bytes[s] as f64 / links.parallel(s) as f64;
    let count: u64 = (0..bytes.len()).map(|s| links.parallel(s)).sum();
    vec![
        ("link_bytes_max".into(), (0..bytes.len()).map(per_link).fold(0.0, f64::max)),
        ("link_bytes_mean".into(), bytes.iter().sum::<u64>() as f64 / count as f64),
    ]
}

/// What the shared links did: per class of link (`nic_out`, `up_1`,
/// `global`, …) the bytes, the busiest link's busy time and the most flows
/// at once on one link; and the time sharing added to messages, in total.
fn shared_links((classes, delay_ps, flowed): (Vec<crate::engine::LinkClassStats>, f64, u64)) -> Vec<(String, f64)> {
    let mut v = vec![("flow_messages".into(), flowed as f64), ("flow_delay_s".into(), delay_ps / 1e12)];
    for c in classes {
        v.push((format!("links_{}_bytes", c.class), c.bytes as f64));
        v.push((format!("links_{}_busy_max_s", c.class), c.busy_max_ps as f64 / 1e12));
        v.push((format!("links_{}_peak_flows", c.class), c.peak_flows as f64));
        v.push((format!("links_{}_delay_s", c.class), c.delay_ps / 1e12));
    }
    v
}

/// A GOAL file's size, which bounds what loading it takes (a device or
/// pipe has none, so only regular files are read).
fn goal_file_size(path: &str) -> Result<u64, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{path}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{path}: a GOAL schedule must be a regular file"));
    }
    Ok(meta.len())
}

/// LogGOPSim's command-line mode: a GOAL file on one uniform network.
/// Returns each host's finishing time (the latest time any of its CPUs was busy).
pub fn run_goal(path: &str, net: Network, noise: &[NoiseSpec], seed: u64) -> Result<(Vec<Time>, u64), SimError> {
    let size = goal_file_size(path)?;
    check_memory(size as u128 * 4, None)?;
    let program = read_goal_program(std::path::Path::new(path))?;
    let noise = Noise::new(noise, seed, program.num_ranks())?;
    let mut engine = Engine::new(program, net, noise)?;
    while !engine.step(CHUNK)? {
        if !crate::interrupt::keep_going() {
            return Err(SimError::Interrupted);
        }
    }
    Ok(((0..engine.num_ranks()).map(|r| engine.finish_time(r)).collect(), engine.events))
}

#[cfg(test)]
mod estimate_tests {
    use super::*;

    fn config(doc: &str) -> Config {
        crate::scenario::config_of(doc).expect("a valid scenario")
    }

    #[test]
    fn the_run_is_checked_against_the_estimate_it_reports() {
        let cfg = config(r#"{"workload": {"kind": "bsp", "ranks": 64, "iterations": 3}}"#);
        let e = estimate(&cfg).unwrap();
        assert_eq!(e.ranks, 64);
        let r = run(&cfg, None).unwrap();
        assert_eq!(r.estimated_bytes, Some(e.bytes));
        // a limit just below the estimate refuses the run before it allocates
        let tight = Config { max_memory_bytes: Some(e.bytes as u64 - 1), ..cfg };
        assert!(matches!(run(&tight, None), Err(SimError::MemoryLimit(_))));
    }

    #[test]
    fn the_estimate_grows_with_the_messages_a_rank_keeps_in_flight() {
        let one = config(r#"{"workload": {"kind": "bsp", "ranks": 1000, "distances": [1]}}"#);
        let two = config(r#"{"workload": {"kind": "bsp", "ranks": 1000, "distances": [1, 2]}}"#);
        assert!(two.workload.in_flight_bytes_per_rank() > one.workload.in_flight_bytes_per_rank());
        assert!(estimate(&two).unwrap().bytes > estimate(&one).unwrap().bytes);
    }

    /// A scenario on a torus of 8×8×`z` nodes with shared links.
    fn on_flow_torus(z: u32, workload: &str) -> Config {
        config(&format!(
            r#"{{"network": {{"G_s_per_byte": 1e-10, "topology": {{"kind": "torus", "dims": [8, 8, {z}]}},
                "links": {{"model": "flow", "bandwidth_bytes_per_s": 1e10}}}}, "workload": {workload}}}"#
        ))
    }

    #[test]
    fn with_shared_links_the_estimate_counts_the_routes_of_the_flows_in_flight() {
        let bsp = |d: u32| on_flow_torus(8, &format!(r#"{{"kind": "bsp", "ranks": 512, "distances": [{d}], "periodic": true}}"#));
        let (near, far) = (bsp(64), bsp(4 * 64));
        let links = |cfg: &Config| match &cfg.workload {
            WorkloadSpec::Bsp(b) => flow_links(b, &cfg.network, 0, 512),
            _ => unreachable!(),
        };
        // two flows in flight per rank, each into its receiver's NIC and over 1 link of z, or 4
        assert_eq!((links(&near), links(&far)), (4.0, 10.0));
        let grown = estimate(&far).unwrap().bytes - estimate(&near).unwrap().bytes;
        assert_eq!(grown, 512 * ((6.0 * crate::engine::Fabric::flow_bytes_per_link()) as u128));
        // and nothing without shared links
        let plain = config(r#"{"workload": {"kind": "bsp", "ranks": 512, "distances": [256]}}"#);
        assert_eq!(flow_links(&crate::workloads::Bsp::default(), &plain.network, 0, 512), 0.0);
    }

    #[test]
    fn every_workload_kind_s_routes_are_sampled_on_shared_links() {
        // a rank's first ops are followed whatever they wait for (tests, nonblocking collectives)
        for w in [
            r#"{"kind": "bsp", "ranks": 512, "iterations": 2, "distances": [1, 2], "barrier": true}"#,
            r#"{"kind": "stream_triad", "ranks": 512, "iterations": 2, "max_distance": 2}"#,
            r#"{"kind": "fem_matvec", "ranks": 512, "iterations": 1, "hiding": "mpi_test"}"#,
            r#"{"kind": "chebfd", "ranks": 512, "subspace": 4, "degree": 2, "mode": "pipeline"}"#,
            r#"{"kind": "collective", "ranks": 512, "iterations": 2, "mode": "nonblocking"}"#,
            r#"{"kind": "collective", "ranks": 512, "iterations": 2}"#,
            r#"{"kind": "skeleton", "ranks": 512, "iterations": 1, "beta": 0.5}"#,
            r#"{"kind": "app", "ranks": 512, "iterations": 1}"#,
            r#"{"kind": "spmv", "ranks": 512, "iterations": 1, "rows": 8192, "bandwidth": 40}"#,
            r#"{"kind": "krylov", "iterations": 1, "grid": [8, 8, 8]}"#,
            r#"{"kind": "krylov_kernel", "iterations": 1, "grid": [8, 8, 8], "kernel": "halo", "mode": "nonblocking"}"#,
            r#"{"kind": "dense2d", "grid": [16, 32], "blocks": 2, "block": 64}"#,
            r#"{"kind": "traffic", "ranks": 512, "pattern": "uniform"}"#,
        ] {
            // (an app calibrates on 1,024 ranks)
            let cfg = on_flow_torus(16, w);
            let plain = Config { network: config(&format!(r#"{{"workload": {w}}}"#)).network, ..cfg.clone() };
            let (e, p) = (estimate(&cfg).expect(w).bytes, estimate(&plain).expect(w).bytes);
            assert!(e > p, "{w}: {e} with flows, {p} without");
        }
    }

    #[test]
    fn timers_are_handed_over_as_they_read() {
        let mut rec = Recorder::new(vec!["a".into(), "b".into(), "c".into()], 3, 2);
        rec.start(0, 1, 0, 5);
        rec.stop(0, 1, 0, 1_000_005);
        rec.start(2, 2, 1, 0);
        rec.stop(2, 2, 1, 7);
        let want: Vec<Vec<f64>> = (0..3).map(|t| rec.seconds(t)).collect();
        let got = rec.take_seconds();
        assert_eq!(got.len(), 3);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.len(), 6);
            assert!(g.iter().zip(w).all(|(a, b)| a == b || a.is_nan() && b.is_nan()));
        }
    }
}
