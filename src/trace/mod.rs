//! Replay of traced MPI runs (docs/trace-format.md): records are read and
//! converted lazily as the engine advances ([`window::TraceProgram`]), or
//! streamed into a GOAL file ([`export_goal`]); both apply the same rules
//! ([`convert`]). Extrapolation to more ranks follows a Cartesian grid
//! ([`grid`]) or, for rank-periodic patterns, runs trace rank q mod p as
//! rank q; either way each template rank is converted once ([`class`]).

pub mod by_call;
pub mod check;
pub mod class;
pub mod collective;
pub mod convert;
mod error;
pub mod format;
pub mod grid;
pub mod reader;
mod synthetic;
pub mod window;

use crate::collectives::{Algorithm, CollectiveKind};
use crate::program::goal::GoalKind;
use crate::units::{names, zero_is_none, FilePath};
use convert::{NewOp, OpRef, Placement, RankConv, RankStats, Shared, Sink, Source};
pub use error::{PeriodicError, SpecError, TraceError};
use format::{Footer, Header};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;
pub use synthetic::{write_synthetic, write_synthetic_cart, write_synthetic_grid, write_synthetic_grid3d};

/// A traced MPI run (directory of rank-*.iwt from `idlewave trace build`), replayed as it is read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Directory of rank-*.iwt files.
    #[schemars(with = "FilePath")]
    pub dir: String,
    /// "collective=algorithm" choices, e.g. "allreduce=ring".
    #[serde(default)]
    #[schemars(inner(regex(pattern = "=")))]
    pub algorithms: Vec<String>,
    /// Factor on the traced compute times.
    #[serde(default = "one")]
    #[schemars(range(min = 0))]
    pub compute_scale: f64,
    /// Simulate this many ranks by extrapolation: on the traced Cartesian
    /// grid (MPI_Dims_create's grid of this size), or periodically (a
    /// multiple of the traced count); 0: as many as traced.
    #[serde(default, with = "zero_is_none")]
    #[schemars(with = "u32")]
    pub scale_to: Option<u32>,
    /// The target process grid, e.g. "64x64" (instead of MPI_Dims_create's).
    #[serde(default)]
    pub grid: Option<String>,
    /// Strong scaling on a grid: neighbour messages ∝ subdomain surface,
    /// computation ∝ volume (default: weak scaling, both as traced).
    #[serde(default)]
    pub strong: bool,
    /// Attribute the replay's time inside MPI to the traced calls (the
    /// report's `by_call` table, as `idlewave validate` shows it); only for a
    /// replay as traced.
    #[serde(default)]
    pub by_call: bool,
    /// Whose rules decide collectives without a choice: the platform's
    /// `mpi_library`; if it names none, the trace's own library.
    #[serde(skip)]
    #[schemars(skip)]
    pub library: Option<crate::collectives::MpiLibrary>,
}

fn one() -> f64 {
    1.0
}

/// Bytes of file buffer all ranks share.
const BUFFER_BUDGET: usize = 8 << 20;

/// An opened trace: its files, headers and footers.
pub struct Opened {
    pub files: Vec<(PathBuf, Header)>,
    pub footers: Vec<Footer>,
}

pub fn open(dir: &Path) -> Result<Opened, TraceError> {
    let files = format::rank_files(dir)?;
    let footers = files.iter().map(|(p, h)| format::footer_of(p, h)).collect::<Result<Vec<_>, _>>()?;
    Ok(Opened { files, footers })
}

fn algorithms(spec: &TraceSpec) -> Result<HashMap<CollectiveKind, Algorithm>, TraceError> {
    let mut out = HashMap::new();
    for choice in &spec.algorithms {
        let (k, v) = choice.split_once('=').ok_or_else(|| SpecError::AlgorithmSyntax(choice.clone()))?;
        let (k, v) = (k.trim(), v.trim());
        let kind: CollectiveKind =
            serde_json::from_value(serde_json::Value::String(k.into())).map_err(|_| SpecError::NoChoice(k.into()))?;
        let alg = serde_json::from_value::<Algorithm>(serde_json::Value::String(v.into())).ok().filter(|a| kind.algorithms().contains(a));
        let alg =
            alg.ok_or_else(|| SpecError::UnknownAlgorithm { collective: k.into(), algorithm: v.into(), known: names(kind.algorithms()) })?;
        out.insert(kind, alg);
    }
    Ok(out)
}

/// Whose collective rules the replay follows: the platform's choice, else
/// the library that ran the trace (its footer), else Open MPI's.
fn library(spec: &TraceSpec, t: &Opened) -> crate::collectives::MpiLibrary {
    spec.library.or_else(|| t.footers.first().and_then(|f| crate::collectives::MpiLibrary::from_version(&f.library))).unwrap_or_default()
}

/// File buffer per rank: the budget shared out, at least 16 records.
fn chunk_bytes(ranks: u32) -> usize {
    (BUFFER_BUDGET / ranks.max(1) as usize).clamp(format::RECORD_BYTES * 16, 1 << 20)
}

/// Whether the run extrapolates (and so replays templates held in memory).
pub fn extrapolates(spec: &TraceSpec, t: &Opened) -> bool {
    spec.grid.is_some() || spec.scale_to.is_some_and(|n| n != t.files.len() as u32)
}

/// The ranks a replay simulates.
pub fn simulated_ranks(spec: &TraceSpec, t: &Opened) -> Result<u32, TraceError> {
    let Some(g) = &spec.grid else { return Ok(spec.scale_to.unwrap_or(t.files.len() as u32)) };
    let dims = grid::parse_dims(g)?;
    let n = dims.iter().try_fold(1u32, |a, &d| a.checked_mul(d)).ok_or_else(|| SpecError::GridTooLarge(g.clone()))?;
    match spec.scale_to {
        Some(s) if s != n => Err(SpecError::ScaleToDisagrees { scale_to: s, grid: g.clone(), ranks: n }.into()),
        _ => Ok(n),
    }
}

/// Bytes a replay of `ranks` ranks holds: per rank its converter and
/// window, with a file buffer (and the path it rereads) when it streams its
/// own file; when it extrapolates, the templates and their compiled classes
/// once (about what their records take), and per rank its place in its
/// class's ops (class.rs).
pub fn bytes_needed(spec: &TraceSpec, t: &Opened, ranks: u32) -> u128 {
    if extrapolates(spec, t) {
        // records in memory are their file's size, give or take the 4-byte payload index
        let files: u128 = t.files.iter().map(|(p, _)| std::fs::metadata(p).map_or(0, |m| m.len()) as u128 * 13 / 12).sum();
        return ranks as u128 * class::BYTES_PER_RANK as u128 + 2 * files;
    }
    let conv = (std::mem::size_of::<RankConv>() + std::mem::size_of::<window::Window>() + 64) as u128;
    let path = t.files.first().map_or(0, |(p, _)| p.as_os_str().len());
    ranks as u128 * (conv + (chunk_bytes(ranks) + path) as u128)
}

/// How the traced ranks become the simulated ones.
enum Plan {
    Traced,
    Periodic,
    Grid(Rc<grid::Extrapolation>),
}

impl Plan {
    fn describe(&self, traced: u32, ranks: u32) -> Option<String> {
        match self {
            Plan::Traced => None,
            Plan::Periodic => Some(format!("periodic: {traced} traced ranks repeated {} times", ranks / traced)),
            Plan::Grid(e) => {
                let g = &e.template;
                let short = (0..g.dims.len()).any(|d| g.periodic[d] && g.dims[d] == 3);
                let paired: Vec<String> =
                    (0..g.dims.len()).filter(|&d| g.dims[d] == 2 && e.target.dims[d] != 2).map(|d| d.to_string()).collect();
                Some(format!(
                    "Cartesian grid {} → {}{}, {} scaling{}{}",
                    g.describe(),
                    grid::describe_dims(&e.target.dims),
                    if e.chosen.is_empty() { String::new() } else { format!(" ({})", e.chosen) },
                    if e.strong { "strong" } else { "weak" },
                    if short {
                        " (3 traced ranks along a periodic dimension: an exchange 2 ranks away reads as one with the neighbour on the other side; trace 5 to rule it out)"
                    } else {
                        ""
                    },
                    if paired.is_empty() {
                        String::new()
                    } else {
                        // pairs do what the 2 traced ranks did, but a delay no longer travels from pair to pair
                        format!(
                            " (dimension {} grows from 2 traced ranks in pairs of neighbours: each pair exchanges as the traced ranks did, with no messages between pairs along it, so delays do not travel along it; trace 3 or more ranks along it for that)",
                            paired.join(", ")
                        )
                    }
                ))
            }
        }
    }
}

/// The process grid of the trace in `dir` (as an extrapolation finds it):
/// its dimensions and which are periodic.
pub fn grid_of(dir: &Path) -> Result<(Vec<u32>, Vec<bool>), TraceError> {
    let t = open(dir)?;
    let templates: Vec<Rc<reader::Loaded>> =
        t.files.iter().map(|(p, h)| reader::Loaded::read(p, h).map(Rc::new)).collect::<Result<_, _>>()?;
    let g = template_grid(&templates)?;
    Ok((g.dims, g.periodic))
}

/// The template's grid: a world-sized MPI_Cart_create on rank 0, else
/// inferred from the neighbour pairs of every rank.
fn template_grid(templates: &[Rc<reader::Loaded>]) -> Result<grid::Grid, TraceError> {
    let world = templates.len() as u32;
    if let Some(l) = templates.first() {
        for i in 0..l.records.len() {
            let (r, payload) = l.get(i).expect("in range");
            if let Some(g) = grid::from_cart_create(r, payload, world) {
                // the grid's rank order must be the world's (MPI_Cart_create with reorder = false, or an identity reorder)
                let members = l.records[i + 1..].iter().take_while(|m| m.op == format::op::COMM_MEMBER && m.comm == r.peer as u32);
                if let Some(m) = members.into_iter().find(|m| m.peer != m.tag) {
                    return Err(TraceError::Reordered { path: l.path.clone(), index: i as u64, world: m.peer, grid_rank: m.tag });
                }
                return g.map_err(|source| TraceError::CartCreate { path: l.path.clone(), index: i as u64, source });
            }
        }
    }
    let mut pairs = Vec::new();
    for (rank, l) in templates.iter().enumerate() {
        for i in 0..l.records.len() {
            let (r, payload) = l.get(i).expect("in range");
            grid::pairs_of(rank as u32, r, payload, &mut pairs);
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    Ok(grid::infer(world, &pairs)?)
}

fn plan(spec: &TraceSpec, t: &Opened, templates: &[Rc<reader::Loaded>], ranks: u32) -> Result<Plan, TraceError> {
    let traced = t.files.len() as u32;
    if spec.strong && spec.scale_to.is_none() && spec.grid.is_none() {
        return Err(SpecError::StrongWithoutSize.into());
    }
    if !extrapolates(spec, t) {
        return Ok(Plan::Traced);
    }
    let cart = templates
        .first()
        .is_some_and(|l| (0..l.records.len()).any(|i| l.get(i).is_some_and(|(r, p)| grid::from_cart_create(r, p, traced).is_some())));
    let on_grid = |g: grid::Grid| -> Result<Plan, TraceError> {
        let (dims, chosen) = match &spec.grid {
            Some(s) => (grid::parse_dims(s)?, ""),
            None => grid::target_dims(&g, ranks)?,
        };
        let mut e = grid::Extrapolation::new(g, dims, spec.strong)?;
        e.chosen = chosen;
        Ok(Plan::Grid(Rc::new(e)))
    };
    if cart || spec.grid.is_some() || spec.strong {
        return on_grid(template_grid(templates).map_err(|e| TraceError::NoGrid(Box::new(e)))?);
    }
    let periodic = if ranks.is_multiple_of(traced) { check_periodic(t) } else { Err(PeriodicError::NotAMultiple { ranks, traced }.into()) };
    match (periodic, template_grid(templates)) {
        (Ok(()), _) => Ok(Plan::Periodic),
        (Err(_), Ok(g)) => on_grid(g),
        (Err(p), Err(g)) => Err(TraceError::NoExtrapolation { grid: Box::new(g), periodic: Box::new(p) }),
    }
}

/// A replay's program: the traced ranks or a periodic extrapolation
/// converted rank by rank as they run, or a Cartesian extrapolation
/// compiled once per template rank (class.rs).
pub enum Replay {
    Window(window::TraceProgram),
    Class(class::ClassProgram),
}

/// The program that replays `t` as `spec` says.
pub fn program(spec: &TraceSpec, t: &Opened) -> Result<Replay, TraceError> {
    let (shared, plan, templates) = setup(spec, t)?;
    let layout = match plan {
        Plan::Grid(e) => class::Layout::Grid(e),
        Plan::Periodic => class::Layout::Periodic { traced: t.files.len() as u32, ranks: shared.ranks },
        Plan::Traced => {
            let mut convs = converters_of(t, &plan, &templates, shared.ranks)?;
            if spec.by_call {
                convs.iter_mut().for_each(|c| c.stats.calls = Some(Vec::new()));
            }
            return Ok(Replay::Window(window::TraceProgram::new(shared, convs)?));
        }
    };
    Ok(Replay::Class(class::ClassProgram::new(shared, layout, &templates)?))
}

/// The converters of every simulated rank, and what they share.
pub fn converters(spec: &TraceSpec, t: &Opened) -> Result<(Shared, Vec<RankConv>), TraceError> {
    let (shared, plan, templates) = setup(spec, t)?;
    if let Plan::Grid(e) = &plan {
        check_template(e, &templates, spec)?;
    }
    let convs = converters_of(t, &plan, &templates, shared.ranks)?;
    Ok((shared, convs))
}

/// What every replay of `t` shares, how its ranks map onto the traced
/// ones, and the templates an extrapolation replays.
fn setup(spec: &TraceSpec, t: &Opened) -> Result<(Shared, Plan, Vec<Rc<reader::Loaded>>), TraceError> {
    let traced = t.files.len() as u32;
    let ranks = simulated_ranks(spec, t)?;
    if !(spec.compute_scale.is_finite() && spec.compute_scale >= 0.0) {
        return Err(SpecError::ComputeScale(spec.compute_scale).into());
    }
    if ranks < traced && spec.grid.is_none() {
        return Err(SpecError::Down { traced, ranks }.into());
    }
    if spec.by_call && extrapolates(spec, t) {
        return Err(SpecError::ByCallExtrapolated.into());
    }
    let templates: Vec<Rc<reader::Loaded>> = if extrapolates(spec, t) {
        t.files.iter().map(|(p, h)| reader::Loaded::read(p, h).map(Rc::new)).collect::<Result<_, _>>()?
    } else {
        Vec::new()
    };
    let plan = plan(spec, t, &templates, ranks)?;
    let mut scale = spec.compute_scale;
    if let Plan::Grid(e) = &plan {
        if e.target.size() != ranks {
            return Err(SpecError::NoGridOf {
                ranks,
                dims: e.template.dims.len(),
                example: grid::describe_dims(&e.target.dims).replace('×', "x"),
            }
            .into());
        }
        if e.strong {
            scale *= e.volume();
        }
    }
    let mut shared = Shared::new(traced, ranks, algorithms(spec)?, library(spec, t), scale);
    shared.extrapolation = plan.describe(traced, ranks);
    Ok((shared, plan, templates))
}

/// A converter per simulated rank.
fn converters_of(t: &Opened, plan: &Plan, templates: &[Rc<reader::Loaded>], ranks: u32) -> Result<Vec<RankConv>, TraceError> {
    // a converter per simulated rank: refused, not aborted, where they would not fit
    // (an export to billions of ranks asked for terabytes)
    let need = ranks as u128 * std::mem::size_of::<RankConv>() as u128;
    crate::memory::check_memory(need, None).map_err(|e| TraceError::Memory { ranks, message: e.to_string() })?;
    let mut convs = Vec::new();
    convs.try_reserve_exact(ranks as usize).map_err(|source| TraceError::Alloc { ranks, source })?;
    let traced = t.files.len() as u32;
    let chunk = chunk_bytes(ranks);
    let memory = |src: u32| Source::Memory { records: templates[src as usize].clone(), next: 0 };
    let mut reporting = vec![true; traced as usize];
    convs.extend(
        (0..ranks)
            .map(|q| match plan {
                Plan::Traced => {
                    let (p, h) = &t.files[q as usize];
                    RankConv::new(q, q, Source::File(Box::new(reader::RecordReader::new(p, h, chunk))), Placement::Traced)
                }
                Plan::Periodic => RankConv::new(q, q % traced, memory(q % traced), Placement::Periodic),
                Plan::Grid(e) => {
                    let tr = e.template_rank(q);
                    RankConv::new(q, tr, memory(tr), Placement::Grid { ext: e.clone(), template: tr })
                }
            })
            .map(|mut c| {
                c.reports = std::mem::replace(&mut reporting[c.source_rank as usize], false);
                c
            }),
    );
    Ok(convs)
}

/// Refuses, before the export, a template that does not extrapolate: its
/// classes are compiled (and dropped), naming the first record that does not fit.
fn check_template(e: &Rc<grid::Extrapolation>, templates: &[Rc<reader::Loaded>], spec: &TraceSpec) -> Result<(), TraceError> {
    let mut sh = Shared::new(templates.len() as u32, e.target.size(), algorithms(spec)?, Default::default(), 1.0);
    class::Class::compile_all(&class::Layout::Grid(e.clone()), templates, &mut sh).map(drop)
}

/// Whether every rank makes the same calls as rank 0 with the same
/// neighbour offsets (mod p), so that rank q can replay rank q mod p.
pub fn check_periodic(t: &Opened) -> Result<(), TraceError> {
    use format::{collective_of, op};
    let p = t.files.len() as i64;
    let offset = |code: u16, peer: i32, r: i64| -> i64 {
        let p2p = collective_of(code).is_none() && !matches!(code, op::COMM_NEW | op::COMM_MEMBER | op::COMM_FREE);
        if p2p && peer >= 0 {
            (peer as i64 - r).rem_euclid(p)
        } else {
            peer as i64
        }
    };
    let (p0, h0) = &t.files[0];
    for (r, (pr, hr)) in t.files.iter().enumerate().skip(1) {
        let (mut a, mut b) = (Calls::new(p0, h0), Calls::new(pr, hr));
        let mut i = 0u64;
        loop {
            let (x, y) = match (a.next()?, b.next()?) {
                (None, None) => break,
                (Some(x), Some(y)) => (x, y),
                _ => return Err(PeriodicError::CallCount(r).into()),
            };
            if x.op == op::COMM_NEW || y.op == op::COMM_NEW {
                return Err(PeriodicError::CreatesComm(i).into());
            }
            if a.payload || b.payload {
                return Err(PeriodicError::PerRankSizes { call: i, op: format::op_name(x.op) }.into());
            }
            if let Some((c, _)) = collective_of(x.op) {
                if c.is_rooted() && x.peer != 0 {
                    return Err(PeriodicError::RootNotZero.into());
                }
            }
            let same = x.op == y.op
                && offset(x.op, x.peer, 0) == offset(y.op, y.peer, r as i64)
                && x.bytes == y.bytes
                && x.comm == y.comm
                && (x.tag == y.tag || x.op == op::OTHER);
            if !same {
                return Err(PeriodicError::Differs {
                    rank: r,
                    call: i,
                    op: format::op_name(y.op),
                    offset: offset(y.op, y.peer, r as i64),
                    op0: format::op_name(x.op),
                    offset0: offset(x.op, x.peer, 0),
                }
                .into());
            }
            i += 1;
        }
    }
    Ok(())
}

/// A rank's records without its polls (their count depends on timing).
struct Calls {
    reader: reader::RecordReader,
    buf: Vec<u64>,
    payload: bool,
}

impl Calls {
    fn new(path: &Path, h: &Header) -> Self {
        Calls { reader: reader::RecordReader::new(path, h, 1 << 16), buf: Vec::new(), payload: false }
    }

    fn next(&mut self) -> Result<Option<format::Record>, TraceError> {
        loop {
            let r = self.reader.next(&mut self.buf)?;
            self.payload = !self.buf.is_empty();
            if r.is_none_or(|r| r.op != format::op::POLL) {
                return Ok(r);
            }
        }
    }
}

/// What the replay could not model, and how the trace's time in MPI
/// compares with the replay's.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Report {
    pub library: String,
    /// What the traced times between calls measure: "wall", or "cpu" (the
    /// thread's CPU time, IDLEWAVE_TRACE_CLOCK=cpu); "mixed" when the rank
    /// files disagree.
    pub trace_clock: String,
    /// How the trace was extrapolated ("" when replayed as traced).
    pub extrapolation: String,
    /// Whose rules chose the collective algorithms not given explicitly.
    pub collective_rules: crate::collectives::MpiLibrary,
    pub traced_ranks: u32,
    pub ranks: u32,
    pub records: u64,
    /// Sum over traced ranks of their traced span (first to last call), seconds.
    pub traced_s: f64,
    /// (name, calls, seconds, share of traced time), replayed as computation.
    pub unmodelled: Vec<(String, u64, f64, f64)>,
    /// (name, calls, seconds, share) replayed at no cost.
    pub zero_cost: Vec<(String, u64, f64, f64)>,
    pub polls: u64,
    pub poll_s: f64,
    pub cancelled: u64,
    /// Receives with a wildcard tag whose match the trace does not have: left out.
    pub unresolved_wildcards: u64,
    /// Extrapolated v-collective calls (over all simulated ranks) whose traced
    /// per-member counts differed: each member took its class's count.
    pub resized_v_collectives: u64,
    /// Per traced rank: seconds inside the calls replayed as messages.
    pub traced_mpi_s: Vec<f64>,
    /// Per traced rank: first to last call, seconds.
    pub traced_span_s: Vec<f64>,
    /// Per traced rank: the tracer's own time taken out of that span (empty
    /// for traces that do not say: older ones, or the overhead kept).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tracer_s: Vec<f64>,
    /// Per simulated rank: computation charged, seconds.
    pub calc_s: Vec<f64>,
    /// With `by_call`: the traced and the replayed time inside MPI by call.
    pub by_call: Vec<by_call::CallRow>,
    /// Messages the replay sent (point-to-point and collectives'), and their bytes.
    pub messages: u64,
    pub bytes: u64,
    /// Per rank class (the simulated ranks that replay one traced rank), by traced rank.
    pub classes: Vec<ClassRow>,
}

/// The simulated ranks that replay one traced rank: a traced rank itself in
/// a replay as traced; its class on a grid; every traced-size-th rank
/// periodically.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ClassRow {
    pub traced_rank: u32,
    pub ranks: u64,
    pub messages: u64,
    pub bytes: u64,
    /// Means per rank of the class: time inside MPI (finish − computation) and computation.
    pub mpi_s: f64,
    pub calc_s: f64,
}

/// The replay's figures per rank class and in total (messages, bytes), from
/// the finish times of a run of `replay` and the report's computation per rank.
pub fn add_classes(report: &mut Report, replay: &Replay, finish: &[crate::time::Time]) {
    let traced = report.traced_ranks as usize;
    let mut rows: Vec<ClassRow> = (0..traced as u32).map(|r| ClassRow { traced_rank: r, ..Default::default() }).collect();
    let mut add = |class: usize, q: usize| {
        let row = &mut rows[class];
        row.ranks += 1;
        let calc = report.calc_s.get(q).copied().unwrap_or(0.0);
        row.calc_s += calc;
        row.mpi_s += finish.get(q).map_or(0.0, |&t| crate::time::to_seconds(t) - calc);
    };
    match replay {
        Replay::Window(p) => {
            for (q, c) in p.convs.iter().enumerate() {
                add(c.source_rank as usize, q);
            }
            for c in &p.convs {
                let row = &mut rows[c.source_rank as usize];
                row.messages += c.stats.messages;
                row.bytes += c.stats.bytes;
            }
        }
        Replay::Class(p) => {
            for q in 0..report.ranks {
                add(p.class_of(q) as usize, q as usize);
            }
            for (row, &(m, b)) in rows.iter_mut().zip(p.sent_by_class()) {
                (row.messages, row.bytes) = (m, b);
            }
        }
    }
    rows.retain(|r| r.ranks > 0);
    for row in &mut rows {
        row.mpi_s /= row.ranks as f64;
        row.calc_s /= row.ranks as f64;
    }
    report.messages = rows.iter().map(|r| r.messages).sum();
    report.bytes = rows.iter().map(|r| r.bytes).sum();
    report.classes = rows;
}

impl Report {
    /// True when anything was not modelled: the result is then approximate.
    pub fn approximate(&self) -> bool {
        !self.unmodelled.is_empty() || self.unresolved_wildcards > 0 || self.resized_v_collectives > 0
    }
}

pub fn report(t: &Opened, shared: &Shared, convs: &[RankConv]) -> Report {
    let calc_s = convs.iter().map(|c| c.stats.calc_ns as f64 * 1e-9).collect();
    let resized = convs.iter().map(|c| c.stats.resized).sum();
    report_of(t, shared, convs.iter().filter(|c| c.reports), calc_s, resized)
}

/// The report of a replay, whichever its program.
pub fn replay_report(t: &Opened, replay: &Replay) -> Report {
    match replay {
        Replay::Window(p) => report(t, &p.shared, &p.convs),
        Replay::Class(p) => {
            let calc_s = p.calc_ns_by_rank().map(|ns| ns as f64 * 1e-9).collect();
            let classes = p.classes.iter().flatten();
            let resized = classes.clone().map(|c| c.conv.stats.resized * c.members as u64).sum();
            report_of(t, &p.shared, classes.map(|c| &c.conv), calc_s, resized)
        }
    }
}

/// The replay's time inside MPI by traced call (see [`by_call`]); for a
/// replay as traced, whose ranks are the traced ones.
pub fn attribute(
    replay: &Replay,
    spans: &[crate::probes::timeline::Span],
    finish: &[crate::time::Time],
) -> Result<Vec<by_call::CallRow>, String> {
    let Replay::Window(p) = replay else { return Err("by_call: only for a replay as traced".into()) };
    let calls: Vec<&[convert::CallSeg]> = p.convs.iter().map(|c| c.stats.calls.as_deref().unwrap_or(&[])).collect();
    let calcs: Vec<u32> = p.convs.iter().map(|c| c.stats.calcs).collect();
    by_call::by_call(&calls, &calcs, spans, finish)
}

/// The clock of the trace's rank files (see [`format::clock`]).
fn trace_clock(t: &Opened) -> String {
    let first = t.files.first().map_or(format::clock::WALL, |(_, h)| h.clock);
    if t.files.iter().any(|(_, h)| h.clock != first) {
        return "mixed".into();
    }
    format::clock::name(first).unwrap_or("wall").into()
}

/// The report from one converter per trace rank (`reporting`) and, per
/// simulated rank, the computation charged.
fn report_of<'a>(t: &Opened, shared: &Shared, reporting: impl Iterator<Item = &'a RankConv>, calc_s: Vec<f64>, resized: u64) -> Report {
    let traced = t.files.len();
    let mut unmodelled: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    let mut zero: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    let mut r = Report {
        library: t.footers.first().map(|f| f.library.clone()).unwrap_or_default(),
        trace_clock: trace_clock(t),
        traced_ranks: traced as u32,
        ranks: calc_s.len() as u32,
        extrapolation: shared.extrapolation.clone().unwrap_or_default(),
        collective_rules: shared.library,
        ..Default::default()
    };
    // Traced quantities from one converter of each trace rank.
    for c in reporting {
        let s: &RankStats = &c.stats;
        let names = &t.footers[c.source_rank as usize].functions;
        for (&i, &(n, secs)) in &s.unmodelled {
            let name = names.get(i as usize).map_or_else(|| format!("function #{i}"), |f| f.0.clone());
            let e = unmodelled.entry(name).or_default();
            *e = (e.0 + n, e.1 + secs);
        }
        for (name, &(n, secs)) in s.intercomm.iter() {
            let e = unmodelled.entry(name.clone()).or_default();
            *e = (e.0 + n, e.1 + secs);
        }
        for (name, &(n, secs)) in &s.zero_cost {
            let e = zero.entry(name.clone()).or_default();
            *e = (e.0 + n, e.1 + secs);
        }
        r.records += s.records;
        r.traced_s += (s.t_last - s.t_first).max(0.0);
        r.polls += s.polls;
        r.poll_s += s.poll_s;
        r.cancelled += s.cancelled;
        r.unresolved_wildcards += s.unresolved;
        r.traced_mpi_s.push(s.mpi_s);
        r.traced_span_s.push((s.t_last - s.t_first).max(0.0));
        r.tracer_s.push(t.footers[c.source_rank as usize].tracer_s.unwrap_or(0.0));
    }
    if t.footers.iter().all(|f| f.tracer_s.is_none()) {
        r.tracer_s.clear();
    }
    r.calc_s = calc_s;
    r.resized_v_collectives = resized;
    let share = |secs: f64| if r.traced_s > 0.0 { secs / r.traced_s } else { 0.0 };
    let table = |m: BTreeMap<String, (u64, f64)>| {
        let mut v: Vec<(String, u64, f64, f64)> = m.into_iter().map(|(k, (n, s))| (k, n, s, share(s))).collect();
        v.sort_by(|a, b| b.2.total_cmp(&a.2));
        v
    };
    r.unmodelled = table(unmodelled);
    r.zero_cost = table(zero);
    r
}

/// Writes GOAL text: one rank block at a time, as the converter produces it.
struct GoalText<'a, W: Write> {
    out: &'a mut W,
    next: u32,
    err: Option<std::io::Error>,
}

impl<W: Write> Sink for GoalText<'_, W> {
    fn add(&mut self, op: NewOp, requires: &[OpRef], irequires: Option<OpRef>) -> OpRef {
        let l = self.next;
        self.next += 1;
        let res = (|| -> std::io::Result<()> {
            match op.kind {
                GoalKind::Send => writeln!(self.out, "l{l}: send {}b to {} tag {}", op.size, op.peer, op.tag)?,
                GoalKind::Recv if op.peer == crate::program::ANY => writeln!(self.out, "l{l}: recv {}b from -1 tag {}", op.size, op.tag)?,
                GoalKind::Recv => writeln!(self.out, "l{l}: recv {}b from {} tag {}", op.size, op.peer, op.tag)?,
                GoalKind::Calc => writeln!(self.out, "l{l}: calc {}", op.size)?,
            }
            for d in requires {
                writeln!(self.out, "l{l} requires l{}", d.slot)?;
            }
            if let Some(d) = irequires {
                writeln!(self.out, "l{l} irequires l{}", d.slot)?;
            }
            Ok(())
        })();
        if let Err(e) = res {
            self.err.get_or_insert(e);
        }
        OpRef { slot: l, seq: l as u64 }
    }
}

/// Streams the replay's schedule as a GOAL file; returns (ranks, ops).
pub fn export_goal(spec: &TraceSpec, out: &mut impl Write) -> Result<(u32, u64), TraceError> {
    let t = open(Path::new(&spec.dir))?;
    let (mut shared, mut convs) = converters(spec, &t)?;
    let io = TraceError::Write;
    writeln!(out, "num_ranks {}", convs.len()).map_err(io)?;
    let mut ops = 0u64;
    for (r, c) in convs.iter_mut().enumerate() {
        writeln!(out, "rank {r} {{").map_err(io)?;
        let mut sink = GoalText { out, next: 0, err: None };
        let mut steps = 0u32;
        while c.advance(&mut shared, &mut sink)? {
            if let Some(e) = sink.err.take() {
                return Err(io(e));
            }
            steps = steps.wrapping_add(1);
            if steps.is_multiple_of(1 << 16) && !crate::interrupt::keep_going() {
                return Err(TraceError::Interrupted);
            }
        }
        ops += sink.next as u64;
        writeln!(out, "}}").map_err(io)?;
    }
    Ok((convs.len() as u32, ops))
}

#[cfg(test)]
mod tests;
