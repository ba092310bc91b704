//! Trace records → engine ops with LogGOPSim's dependencies, one record at a
//! time. A rank's converter keeps only what is open: the ops the next one
//! must wait for, requests in flight, persistent requests and live
//! communicators, so memory is bounded by those, never by the trace length.
//!
//! The rules (the same whether the ops feed the engine or a GOAL file):
//! - the time between two MPI calls becomes computation (`calc`, ns);
//! - every op may start once the op before it has started (`irequires`), and
//!   an op after a blocking call or a wait also requires what it waited for;
//! - nonblocking calls become ops whose completion the matching wait requires;
//! - collectives expand into their algorithm's messages on the members;
//! - calls the replay does not model (RMA, I/O, …) and failed polls become
//!   computation of their measured length, and are counted for the report.

use super::collective::{self, Call, Msg, Round};
use super::format::{self, collective_of, flag, has_p2p_peer, op, Coll, CollMode, Record, PROC_NULL};
use super::grid::{Extrapolation, GridError, Strided};
use super::reader::{Loaded, RecordReader};
use super::TraceError;
use crate::collectives::{Algorithm, CollectiveKind, MpiLibrary};
use crate::program::goal::GoalKind;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, HashMap};
use std::rc::{Rc, Weak};

/// An op handed to a sink, as the sink named it.
/// A record the replay cannot turn into operations; the caller adds the file
/// and the record. Communicators are named with the record that created them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConvertError {
    #[error("MPI_Start of request {0:#x}, which no *_init created")]
    StartWithoutInit(u64),
    #[error("unknown op code {0} (a newer trace format?)")]
    UnknownOp(u16),
    /// -1 is a process outside the traced run (spawned, or connected).
    #[error("peer {peer} is not a rank of this {ranks}-rank run{}", if *peer == -1 { " (a process outside the traced run, e.g. made by MPI_Comm_spawn or reached by MPI_Comm_connect: a replay cannot model it)" } else { "" })]
    Peer { peer: i32, ranks: u32 },
    #[error("a send with tag {0} (MPI tags are ≥ 0)")]
    NegativeTag(i32),
    #[error("a receive with MPI_ANY_TAG that the tracer did not resolve")]
    UnresolvedAnyTag,
    #[error("communicator {0} is not live here")]
    CommNotLive(u32),
    #[error("a rooted collective without a root")]
    NoRoot,
    #[error("root {0} is not a member")]
    RootNotMember(i32),
    #[error("root {root} is out of range for a communicator of {size}")]
    RootOutOfRange { root: u32, size: u32 },
    #[error("collective peer {peer} is not a rank of this {ranks}-rank run")]
    CollectivePeer { peer: u32, ranks: u32 },
    #[error("created from communicator {0}, which is not live here")]
    ParentNotLive(u32),
    #[error("cannot extrapolate by rank offsets: the trace creates communicators, whose members do not scale so")]
    PeriodicComm,
    #[error("member {member} of communicator {comm} out of order")]
    MemberOrder { member: i32, comm: u32 },
    #[error("member record of communicator {0}, which no comm_new announced")]
    UnannouncedMember(u32),
    #[error("communicator {comm} (created at record {created}) has no member records")]
    NoMembers { comm: u32, created: u64 },
    #[error("communicator {comm} (created at record {created}): intercommunicators do not extrapolate on a grid")]
    IntercommOnGrid { comm: u32, created: u64 },
    #[error("communicator {comm} (created at record {created}): {source}")]
    CommGrid { comm: u32, created: u64, source: GridError },
    #[error("communicator {comm} (created at record {created}): this rank is not among its members")]
    NotAmongMembers { comm: u32, created: u64 },
    #[error("communicator {comm} (created at record {created}): member {member} is not a rank of this {traced}-rank trace")]
    MemberOutsideTrace { comm: u32, created: u64, member: u32, traced: u32 },
    #[error("{0} counts for a communicator of more members")]
    Counts(usize),
    #[error(transparent)]
    Grid(#[from] GridError),
    #[error(transparent)]
    Collective(#[from] collective::CollectiveError),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpRef {
    pub slot: u32,
    pub seq: u64,
}

/// An op to execute: send/recv (bytes) or calc (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewOp {
    pub kind: GoalKind,
    pub peer: u32,
    pub tag: u32,
    pub size: u64,
}

/// Where a rank's ops go: the engine's window, a GOAL file, or a template
/// rank's compiled class (class.rs).
pub trait Sink {
    fn add(&mut self, op: NewOp, requires: &[OpRef], irequires: Option<OpRef>) -> OpRef;
    /// Whether the sink takes a collective as one call, which it expands
    /// per member itself (`collective`), rather than as this rank's messages.
    fn takes_collectives(&self) -> bool {
        false
    }
    /// A collective call as one op, standing for the messages `emit` would
    /// add: they require `requires`, the first round starts after
    /// `irequires`, and what waits for the call waits for the returned op.
    fn collective(&mut self, _call: CollectiveCall, _requires: &[OpRef], _irequires: Option<OpRef>) -> OpRef {
        unreachable!("a sink that does not take collectives")
    }
}

/// A collective call as every member of its communicator makes it: what
/// expands it into a member's rounds, given the member's place.
#[derive(Debug, Clone)]
pub struct CollectiveCall {
    pub coll: Coll,
    pub n: u32,
    pub root: u32,
    pub bytes: u64,
    /// Per-member sizes (v-variants), resized to `n` members.
    pub payload: Vec<u64>,
    /// The algorithm, for the collectives the engine has algorithms for.
    pub algorithm: Option<Algorithm>,
    pub tag: u32,
    /// Extrapolated grids: the grid dimensions the communicator spans (bit d).
    pub shape: u8,
}

impl CollectiveCall {
    /// The call as member `me` makes it.
    pub fn at(&self, me: u32) -> collective::Call<'_> {
        collective::Call { coll: self.coll, n: self.n, me, root: self.root, bytes: self.bytes, payload: &self.payload }
    }
}

/// What every rank's converter shares: the run's parameters and the names
/// that must agree between ranks (message tags, communicator members).
pub struct Shared {
    /// Ranks simulated (the trace's, or the extrapolated count).
    pub ranks: u32,
    /// Ranks in the trace files.
    pub traced: u32,
    pub algorithms: HashMap<CollectiveKind, Algorithm>,
    /// Whose rules decide the others.
    pub library: MpiLibrary,
    pub compute_scale: f64,
    /// How the trace was extrapolated, for the report.
    pub extrapolation: Option<String>,
    /// (communicator context, tag) → engine tag; collectives use negative tags.
    tags: FxHashMap<(u64, i64), u32>,
    /// Per engine tag (they are handed out from 0): whether a collective's.
    collective_tags: Vec<bool>,
    /// Members of each communicator context, shared by all member ranks.
    groups: FxHashMap<u64, Weak<[u32]>>,
}

impl Shared {
    pub fn new(traced: u32, ranks: u32, algorithms: HashMap<CollectiveKind, Algorithm>, library: MpiLibrary, compute_scale: f64) -> Self {
        Shared {
            ranks,
            traced,
            algorithms,
            library,
            compute_scale,
            extrapolation: None,
            tags: FxHashMap::default(),
            collective_tags: Vec::new(),
            groups: FxHashMap::default(),
        }
    }

    fn tag(&mut self, ctx: u64, tag: i64) -> u32 {
        let next = self.tags.len() as u32;
        let t = *self.tags.entry((ctx, tag)).or_insert(next);
        if t == next {
            self.collective_tags.push(tag < 0);
        }
        t
    }

    /// Whether engine tag `tag` carries a collective's messages.
    pub fn is_collective_tag(&self, tag: u32) -> bool {
        self.collective_tags.get(tag as usize).copied().unwrap_or(false)
    }

    fn group(&mut self, ctx: u64, members: Vec<u32>) -> Rc<[u32]> {
        if let Some(g) = self.groups.get(&ctx).and_then(Weak::upgrade) {
            return g;
        }
        let g: Rc<[u32]> = members.into();
        self.groups.insert(ctx, Rc::downgrade(&g));
        g
    }
}

/// splitmix64 step: mixes `v` into `h`.
fn mix(h: u64, v: u64) -> u64 {
    let mut z = h ^ v.wrapping_add(0x9e37_79b9_7f4a_7c15).wrapping_add(h << 6).wrapping_add(h >> 2);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Who is in a communicator, by its local ranks.
#[derive(Debug, Clone)]
enum Members {
    /// The world in order.
    World,
    List(Rc<[u32]>),
    /// A row, column or plane of an extrapolated grid.
    Grid(Strided),
}

impl Members {
    fn len(&self, world: u32) -> u32 {
        match self {
            Members::World => world,
            Members::List(m) => m.len() as u32,
            Members::Grid(g) => g.count(),
        }
    }

    fn world(&self, local: u32) -> u32 {
        match self {
            Members::World => local,
            Members::List(m) => m[local as usize],
            Members::Grid(g) => g.world(local),
        }
    }
}

/// A live communicator of one rank.
#[derive(Debug, Clone)]
struct CommState {
    /// The same on every member (derived from the parent, the creation's
    /// order on the parent, and the members), distinct between communicators
    /// that share a member. (Rows of an extrapolated grid share one: being
    /// disjoint, they never exchange messages.)
    ctx: u64,
    members: Members,
    /// Extrapolated grids: the dimensions it spans (bit d).
    shape: u8,
    /// This rank's index in it.
    me: u32,
    /// Communicators created from it so far, and collectives run on it.
    created: u64,
    colls: u64,
}

/// A communicator whose member records are being read.
struct Pending {
    id: u32,
    parent_ctx: u64,
    order: u64,
    members: Vec<u32>,
    /// An intercommunicator's remote group.
    remote: Vec<u32>,
    index: u64,
}

/// What a rank's trace held besides what was replayed as messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankStats {
    pub records: u64,
    /// Unmodelled calls: footer function index → (calls, seconds), replayed as computation.
    pub unmodelled: BTreeMap<u32, (u64, f64)>,
    /// Collectives on intercommunicators (not modelled): name → (calls, seconds).
    pub intercomm: BTreeMap<String, (u64, f64)>,
    /// Calls replayed at no cost (probes, communicator management, cancel …): name → (calls, seconds).
    pub zero_cost: BTreeMap<String, (u64, f64)>,
    pub polls: u64,
    pub poll_s: f64,
    /// Seconds inside the MPI calls replayed as messages.
    pub mpi_s: f64,
    /// Computation charged, ns.
    pub calc_ns: u64,
    /// First and last timestamps.
    pub t_first: f64,
    pub t_last: f64,
    /// Requests that moved nothing: cancelled ones; and wildcard-tag
    /// receives whose match the trace does not have (left out).
    pub cancelled: u64,
    pub unresolved: u64,
    /// Extrapolation: v-collective calls whose per-member counts differed,
    /// replayed with each member taking its class's count.
    pub resized: u64,
    /// Computations charged so far (the gaps that became a Calc op).
    pub calcs: u32,
    /// Messages sent by the replay (point-to-point and collectives'), and their bytes.
    pub messages: u64,
    pub bytes: u64,
    /// When the replay's time inside MPI is attributed to the calls
    /// (`TraceSpec::by_call`): every modelled call record, in order.
    pub calls: Option<Vec<CallSeg>>,
}

/// A modelled call record, and the computation it follows: the replay's
/// time between computation `segment − 1` and `segment` is shared by the
/// calls of that segment (see `trace::by_call`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallSeg {
    pub segment: u32,
    pub op: u16,
    pub bytes: u64,
    /// The call's traced seconds, on its first record only (a Waitall writes
    /// one record per request, all with the call's times).
    pub traced_s: f64,
    pub first_record: bool,
}

/// Which trace rank a simulated rank replays, and how its peers move.
#[derive(Debug, Clone)]
pub enum Placement {
    /// As traced.
    Traced,
    /// Periodic extrapolation: rank q replays trace rank q mod p, each peer
    /// at the offset it had around the traced ranks (modulo p, as
    /// `check_periodic` compares them), now around all ranks
    /// (`RankConv::periodic_peer`).
    Periodic,
    /// Cartesian extrapolation: the template rank of its class (grid.rs).
    Grid { ext: Rc<Extrapolation>, template: u32 },
}

/// Where a converter's records come from: streamed from its file, or a
/// template in memory that many simulated ranks replay.
#[derive(Debug)]
pub enum Source {
    /// (boxed: a template's ranks, of which there may be millions, keep `Memory`)
    File(Box<RecordReader>),
    Memory {
        records: Rc<Loaded>,
        next: usize,
    },
}

impl Source {
    fn next(&mut self, payload: &mut Vec<u64>) -> Result<Option<Record>, TraceError> {
        match self {
            Source::File(r) => r.next(payload),
            Source::Memory { records, next } => {
                payload.clear();
                let Some((r, p)) = records.get(*next) else { return Ok(None) };
                payload.extend_from_slice(p);
                *next += 1;
                Ok(Some(*r))
            }
        }
    }

    fn index(&self) -> u64 {
        match self {
            Source::File(r) => r.index,
            Source::Memory { next, .. } => *next as u64,
        }
    }

    fn path(&self) -> &std::path::Path {
        match self {
            Source::File(r) => r.path(),
            Source::Memory { records, .. } => &records.path,
        }
    }
}

/// The ops a request's wait requires: one for a point-to-point request
/// (the common case, kept without an allocation), a collective's last round.
#[derive(Debug)]
enum Completes {
    One(OpRef),
    Many(Vec<OpRef>),
}

impl Completes {
    fn ops(&self) -> &[OpRef] {
        match self {
            Completes::One(o) => std::slice::from_ref(o),
            Completes::Many(v) => v,
        }
    }
}

/// A rank's open requests by handle. The few a rank usually has open (a
/// halo's receives and sends) are kept in a short list searched in order,
/// a third of a hash table's memory, which matters when an extrapolation
/// keeps millions of ranks; past [`FEW_REQUESTS`] a table takes over, so
/// many open requests cost one hash lookup each, not a scan.
#[derive(Debug)]
enum Requests {
    Few(Vec<(u64, Completes)>),
    Many(FxHashMap<u64, Completes>),
}

const FEW_REQUESTS: usize = 16;

/// Creation kinds (comm_new's tag; docs/trace-format.md) made by their members only.
const CREATE_GROUP: i32 = 6;
const FIRST_SEEN: i32 = 14;
/// A pending communicator's order among those with its members (`by_members`), not its parent's.
const BY_MEMBERS: u64 = u64::MAX;

impl Requests {
    /// Opens `req` (a handle reused while open now stands for `ops`).
    fn insert(&mut self, req: u64, ops: Completes) {
        match self {
            Requests::Few(few) => {
                if let Some(e) = few.iter_mut().find(|e| e.0 == req) {
                    e.1 = ops;
                } else if few.len() < FEW_REQUESTS {
                    few.push((req, ops));
                } else {
                    let mut many: FxHashMap<u64, Completes> = few.drain(..).collect();
                    many.insert(req, ops);
                    *self = Requests::Many(many);
                }
            }
            Requests::Many(many) => {
                many.insert(req, ops);
            }
        }
    }

    /// Closes `req`, giving the ops its completion requires.
    fn remove(&mut self, req: u64) -> Option<Completes> {
        match self {
            Requests::Few(few) => {
                let i = few.iter().position(|e| e.0 == req)?;
                Some(few.swap_remove(i).1)
            }
            Requests::Many(many) => many.remove(&req),
        }
    }
}

/// One rank's converter.
pub struct RankConv {
    pub rank: u32,
    /// The trace rank it replays.
    pub source_rank: u32,
    reader: Source,
    placement: Placement,
    payload: Vec<u64>,
    last: Option<f64>,
    prev: Option<OpRef>,
    must: Vec<OpRef>,
    sendrecv: Vec<OpRef>,
    reqs: Requests,
    persistent: FxHashMap<u64, (Record, Vec<u64>)>,
    comms: FxHashMap<u32, CommState>,
    /// (boxed: open only while a communicator's member records are read)
    pending: Option<Box<Pending>>,
    /// Intercommunicators made so far per member set (both groups), for their contexts.
    intercomms: FxHashMap<u64, u64>,
    /// Communicators made so far by calls only their members make (create_group,
    /// or first seen: made by a call the replay does not model), per parent
    /// and member set: the members make them in the same order, so the count
    /// tells apart two with the same members, where the parent's count would
    /// drift between members and non-members.
    by_members: FxHashMap<u64, u64>,
    /// The (t0, t1) of the call whose time was counted last: a Waitall or
    /// Startall writes one record per request, all with the call's times.
    counted: (f64, f64),
    pub stats: RankStats,
    /// Whether this converter's tables of calls (unmodelled, zero-cost,
    /// intercommunicator) feed the report: only the first of each trace
    /// rank's, as the others replay the same records (an extrapolation
    /// would otherwise keep millions of copies).
    pub reports: bool,
    pub finished: bool,
}

impl RankConv {
    /// `rank` simulated from trace rank `source_rank`'s records, placed so.
    pub fn new(rank: u32, source_rank: u32, reader: Source, placement: Placement) -> Self {
        let shape = match &placement {
            Placement::Grid { ext, .. } => (1u8 << ext.target.dims.len()) - 1,
            _ => 0,
        };
        let world = CommState { ctx: 0, members: Members::World, shape, me: rank, created: 0, colls: 0 };
        RankConv {
            rank,
            source_rank,
            reader,
            placement,
            payload: Vec::new(),
            last: None,
            prev: None,
            must: Vec::new(),
            sendrecv: Vec::new(),
            reqs: Requests::Few(Vec::new()),
            persistent: FxHashMap::default(),
            comms: FxHashMap::from_iter([(0, world)]),
            pending: None,
            counted: (f64::NAN, f64::NAN),
            intercomms: FxHashMap::default(),
            by_members: FxHashMap::default(),
            stats: RankStats::default(),
            reports: true,
            finished: false,
        }
    }

    /// Where the reader is, for messages.
    pub fn position(&self) -> String {
        format!("{} record {}", self.reader.path().display(), self.reader.index())
    }

    /// Converts the next record; false once the trace is over.
    pub fn advance(&mut self, sh: &mut Shared, sink: &mut impl Sink) -> Result<bool, TraceError> {
        let index = self.reader.index();
        let Some(mut r) = self.reader.next(&mut self.payload)? else {
            self.close_pending(sh)?;
            self.finished = true;
            return Ok(false);
        };
        let code = r.op;
        let res = match &self.placement {
            Placement::Traced => Ok(()),
            Placement::Periodic => {
                if has_p2p_peer(r.op) && r.peer >= 0 {
                    // the peer's offset around the traced ranks, as check_periodic compares them:
                    // a ring's last rank sends +1 to the first, so at scale to the next copy's first
                    r.peer = self.periodic_peer(sh, r.peer as u32) as i32;
                }
                Ok(())
            }
            Placement::Grid { ext, template } => regrid(ext, self.rank, *template, &mut r, &mut self.payload),
        };
        res.and_then(|()| self.record(sh, sink, &r)).map_err(|source| TraceError::Replay {
            path: self.reader.path().to_path_buf(),
            index,
            op: format::op_name(code),
            source: Box::new(source),
        })?;
        self.stats.records += 1;
        Ok(true)
    }

    /// A traced peer's rank in a periodic extrapolation (see [`Placement::Periodic`]):
    /// at the offset it had around the traced ranks, the shorter way round
    /// (a ring's last rank sends +1 to the first, so at scale to the next
    /// copy's first; the first receives from −1, the previous copy's last).
    /// Half-way round either way is the same peer: it stays in this copy, so
    /// that sender and receiver still pair up.
    fn periodic_peer(&self, sh: &Shared, peer: u32) -> u32 {
        let (traced, ranks) = (sh.traced as i64, sh.ranks as i64);
        let (me, src) = (self.rank as i64, self.source_rank as i64);
        let d = (peer as i64 - src).rem_euclid(traced);
        let offset = match (2 * d).cmp(&traced) {
            std::cmp::Ordering::Less => d,
            std::cmp::Ordering::Greater => d - traced,
            std::cmp::Ordering::Equal => peer as i64 - src,
        };
        (me + offset).rem_euclid(ranks) as u32
    }

    fn record(&mut self, sh: &mut Shared, sink: &mut impl Sink, r: &Record) -> Result<(), ConvertError> {
        if r.op == op::COMM_MEMBER {
            return self.member(r);
        }
        self.close_pending(sh)?;
        match r.op {
            op::OTHER => {
                // Its time stays in the gap before the next call: computation.
                if self.reports {
                    let e = self.stats.unmodelled.entry(r.tag as u32).or_default();
                    *e = (e.0 + 1, e.1 + (r.t1 - r.t0));
                }
                return Ok(());
            }
            op::POLL => {
                self.stats.polls += r.bytes;
                self.stats.poll_s += r.t1 - r.t0;
                return Ok(());
            }
            op::INIT => {
                self.last = Some(r.t1);
                self.stats.t_first = r.t0;
                return Ok(());
            }
            _ => {}
        }
        self.stats.t_last = self.stats.t_last.max(r.t1);
        // (before MPI_Finalize too: the traced run's time includes that work)
        self.gap(sh.compute_scale, sink, r.t0);
        self.last = Some(self.last.map_or(r.t1, |l| l.max(r.t1)));
        self.call(sh, sink, r)
    }

    /// The computation between the previous call and this one.
    fn gap(&mut self, scale: f64, sink: &mut impl Sink, t0: f64) {
        let Some(last) = self.last else { return };
        if t0 > last {
            // (a damaged timestamp gives a huge gap: cut past the time limit, where the run stops)
            let ns = ((t0 - last) * 1e9 * scale).round().min((crate::time::PAST_LIMIT / crate::time::PS_PER_NS) as f64) as u64;
            if ns > 0 {
                self.stats.calc_ns = self.stats.calc_ns.saturating_add(ns);
                self.stats.calcs += 1;
                let o = self.op(sink, NewOp { kind: GoalKind::Calc, peer: 0, tag: 0, size: ns }, None, true);
                self.step(o, true);
            }
        }
    }

    /// Adds a call's time inside MPI, once per call.
    fn count_mpi(&mut self, r: &Record) {
        let first_record = (r.t0, r.t1) != self.counted;
        if first_record {
            self.counted = (r.t0, r.t1);
            self.stats.mpi_s += r.t1 - r.t0;
        }
        if let Some(calls) = &mut self.stats.calls {
            let traced_s = if first_record { r.t1 - r.t0 } else { 0.0 };
            calls.push(CallSeg { segment: self.stats.calcs, op: r.op, bytes: r.bytes, traced_s, first_record });
        }
    }

    fn zero_cost(&mut self, r: &Record) {
        if self.reports {
            let e = self.stats.zero_cost.entry(format::op_name(r.op)).or_default();
            *e = (e.0 + 1, e.1 + (r.t1 - r.t0));
        }
    }

    fn call(&mut self, sh: &mut Shared, sink: &mut impl Sink, r: &Record) -> Result<(), ConvertError> {
        if let Some((coll, mode)) = collective_of(r.op) {
            return self.collective_call(sh, sink, coll, mode, r);
        }
        match r.op {
            op::FINALIZE => Ok(()),
            op::SEND | op::RECV | op::MRECV => {
                self.count_mpi(r);
                if r.peer == PROC_NULL {
                    return Ok(());
                }
                let kind = if r.op == op::SEND { GoalKind::Send } else { GoalKind::Recv };
                let o = self.message(sh, sink, kind, r, None, true)?;
                self.step(o, true);
                Ok(())
            }
            op::SENDRECV_SEND => self.sendrecv_send(sh, sink, r),
            op::SENDRECV_RECV => self.sendrecv_recv(sh, sink, r),
            op::ISEND | op::IRECV | op::IMRECV => {
                self.count_mpi(r);
                let kind = if r.op == op::ISEND { GoalKind::Send } else { GoalKind::Recv };
                self.post(sh, sink, kind, r, r.req)
            }
            op::WAIT | op::TEST => {
                self.count_mpi(r);
                if let Some(done) = self.reqs.remove(r.req) {
                    self.must.extend_from_slice(done.ops());
                }
                Ok(())
            }
            op::SEND_INIT | op::RECV_INIT => {
                self.zero_cost(r);
                self.persistent.insert(r.req, (*r, Vec::new()));
                Ok(())
            }
            op::START => self.start(sh, sink, r),
            op::REQUEST_FREE => {
                self.zero_cost(r);
                self.persistent.remove(&r.req);
                self.reqs.remove(r.req);
                Ok(())
            }
            op::COMM_NEW => {
                self.zero_cost(r);
                self.comm_new(r)
            }
            op::COMM_FREE => {
                self.zero_cost(r);
                if r.comm != 0 {
                    self.comms.remove(&r.comm);
                }
                Ok(())
            }
            op::PROBE | op::IPROBE | op::MPROBE | op::IMPROBE | op::CANCEL => {
                self.zero_cost(r);
                Ok(())
            }
            other => Err(ConvertError::UnknownOp(other)),
        }
    }

    /// A collective call: skipped on an intercommunicator, kept for its
    /// start if persistent, else converted now.
    fn collective_call(
        &mut self,
        sh: &mut Shared,
        sink: &mut impl Sink,
        coll: Coll,
        mode: CollMode,
        r: &Record,
    ) -> Result<(), ConvertError> {
        if r.has(flag::INTERCOMM) {
            if self.reports {
                let e = self.stats.intercomm.entry(format!("{} on an intercommunicator", coll.name())).or_default();
                *e = (e.0 + 1, e.1 + (r.t1 - r.t0));
            }
            return Ok(());
        }
        match mode {
            CollMode::Persistent => {
                self.zero_cost(r);
                self.persistent.insert(r.req, (*r, self.payload.clone()));
                Ok(())
            }
            CollMode::Blocking | CollMode::Nonblocking => {
                self.count_mpi(r);
                let payload = std::mem::take(&mut self.payload);
                let res = self.collective(sh, sink, coll, mode == CollMode::Blocking, r, &payload);
                self.payload = payload;
                res
            }
        }
    }

    /// The send half of an MPI_Sendrecv: both halves complete together,
    /// when the receive half is read.
    fn sendrecv_send(&mut self, sh: &mut Shared, sink: &mut impl Sink, r: &Record) -> Result<(), ConvertError> {
        self.count_mpi(r);
        self.sendrecv.clear();
        if r.peer != PROC_NULL {
            let o = self.message(sh, sink, GoalKind::Send, r, None, true)?;
            self.step(o, false);
            self.sendrecv.push(o);
        }
        Ok(())
    }

    /// The receive half of an MPI_Sendrecv: what follows depends on both halves.
    fn sendrecv_recv(&mut self, sh: &mut Shared, sink: &mut impl Sink, r: &Record) -> Result<(), ConvertError> {
        if r.peer != PROC_NULL {
            let o = self.message(sh, sink, GoalKind::Recv, r, Some(&[]), true)?;
            self.step(o, false);
            self.sendrecv.push(o);
        }
        let both = std::mem::take(&mut self.sendrecv);
        self.must.extend(both);
        Ok(())
    }

    /// MPI_Start of a persistent request: the operation its init recorded.
    fn start(&mut self, sh: &mut Shared, sink: &mut impl Sink, r: &Record) -> Result<(), ConvertError> {
        self.count_mpi(r);
        let Some((t, payload)) = self.persistent.get(&r.req).cloned() else {
            return Err(ConvertError::StartWithoutInit(r.req));
        };
        if let Some((coll, _)) = collective_of(t.op) {
            return self.collective(sh, sink, coll, false, &Record { req: r.req, ..t }, &payload);
        }
        // A wildcard persistent receive: the tracer put the source and tag it matched on the start.
        let mut m = Record { req: r.req, flags: t.flags | (r.flags & (flag::CANCELLED | flag::UNRESOLVED)), ..t };
        if r.has(flag::ANY_SOURCE) || r.has(flag::ANY_TAG) {
            (m.peer, m.tag) = (r.peer, r.tag);
        }
        let kind = if t.op == op::SEND_INIT { GoalKind::Send } else { GoalKind::Recv };
        self.post(sh, sink, kind, &m, r.req)
    }

    /// A nonblocking send or receive (or a started persistent one).
    fn post(&mut self, sh: &mut Shared, sink: &mut impl Sink, kind: GoalKind, r: &Record, req: u64) -> Result<(), ConvertError> {
        if r.has(flag::CANCELLED) {
            self.stats.cancelled += 1;
            return Ok(());
        }
        if r.peer == PROC_NULL {
            return Ok(());
        }
        let unresolved = r.has(flag::UNRESOLVED) || r.peer < 0;
        if unresolved && (kind == GoalKind::Send || r.tag < 0) {
            // a wildcard tag cannot be confined to its communicator in the replay
            self.stats.unresolved += 1;
            return Ok(());
        }
        let o = if unresolved {
            // A wildcard-source receive whose completion the trace does not
            // have (freed before it completed): a wildcard in the replay too.
            self.wildcard_recv(sh, sink, r)?
        } else {
            self.message(sh, sink, kind, r, None, true)?
        };
        self.step(o, false);
        self.reqs.insert(req, Completes::One(o));
        Ok(())
    }

    /// A send or receive op for record `r` (peer and tag resolved).
    fn message(
        &mut self,
        sh: &mut Shared,
        sink: &mut impl Sink,
        kind: GoalKind,
        r: &Record,
        after: Option<&[OpRef]>,
        chain: bool,
    ) -> Result<OpRef, ConvertError> {
        if r.peer < 0 || r.peer as u32 >= sh.ranks {
            return Err(ConvertError::Peer { peer: r.peer, ranks: sh.ranks });
        }
        if r.tag < 0 && kind == GoalKind::Send {
            return Err(ConvertError::NegativeTag(r.tag));
        }
        if r.tag < 0 {
            return Err(ConvertError::UnresolvedAnyTag);
        }
        let ctx = self.comms.get(&r.comm).ok_or(ConvertError::CommNotLive(r.comm))?.ctx;
        let tag = sh.tag(ctx, r.tag as i64);
        Ok(self.op(sink, NewOp { kind, peer: r.peer as u32, tag, size: r.bytes }, after, chain))
    }

    fn wildcard_recv(&mut self, sh: &mut Shared, sink: &mut impl Sink, r: &Record) -> Result<OpRef, ConvertError> {
        let ctx = self.comms.get(&r.comm).ok_or(ConvertError::CommNotLive(r.comm))?.ctx;
        let tag = sh.tag(ctx, r.tag as i64);
        Ok(self.op(sink, NewOp { kind: GoalKind::Recv, peer: crate::program::ANY, tag, size: r.bytes }, None, true))
    }

    /// Hands an op to the sink: it requires `after` (default: what the
    /// program must wait for, which it then consumes) and, with `chain`,
    /// starts after the previous op started.
    fn op(&mut self, sink: &mut impl Sink, new: NewOp, after: Option<&[OpRef]>, chain: bool) -> OpRef {
        let prev = if chain { self.prev } else { None };
        match after {
            Some(deps) => sink.add(new, deps, prev),
            None => {
                let o = sink.add(new, &self.must, prev);
                self.must.clear();
                o
            }
        }
    }

    fn step(&mut self, o: OpRef, blocking: bool) {
        self.prev = Some(o);
        if blocking {
            self.must.push(o);
        }
    }

    fn collective(
        &mut self,
        sh: &mut Shared,
        sink: &mut impl Sink,
        coll: Coll,
        blocking: bool,
        r: &Record,
        payload: &[u64],
    ) -> Result<(), ConvertError> {
        let ranks = sh.ranks;
        let cs = self.comms.get_mut(&r.comm).ok_or(ConvertError::CommNotLive(r.comm))?;
        let members = cs.members.clone();
        let n = members.len(ranks);
        let world_of = |local: u32| members.world(local);
        let root = if coll.is_rooted() {
            if r.peer < 0 {
                return Err(ConvertError::NoRoot);
            }
            match (&self.placement, &members) {
                (Placement::Grid { ext, .. }, _) => ext.root(cs.shape, ext.local_in(cs.shape, r.peer as u32)?)?,
                (_, Members::List(m)) => m.iter().position(|&w| w == r.peer as u32).ok_or(ConvertError::RootNotMember(r.peer))? as u32,
                _ => r.peer as u32,
            }
        } else {
            0
        };
        if root >= n {
            return Err(ConvertError::RootOutOfRange { root, size: n });
        }
        let me = cs.me;
        let tag = sh.tag(cs.ctx, -1 - (cs.colls % 65536) as i64);
        cs.colls += 1;
        let rounds = match coll {
            Coll::NeighborAllgather
            | Coll::NeighborAllgatherv
            | Coll::NeighborAlltoall
            | Coll::NeighborAlltoallv
            | Coll::NeighborAlltoallw => {
                let mut msgs = collective::neighbour_round(payload)?;
                if matches!(self.placement, Placement::Periodic) {
                    for m in &mut msgs {
                        m.peer = self.periodic_peer(sh, m.peer);
                    }
                }
                // peers are world ranks already: map them to "local" = world
                return self.emit(sink, vec![Round::Together(msgs)], |w| w, tag, blocking, r.req, ranks);
            }
            _ => {
                let resized;
                let payload = match &self.placement {
                    Placement::Grid { ext, .. } if !payload.is_empty() => {
                        let exact;
                        let row = cs.shape.count_ones() == 1;
                        (resized, exact) = resize(coll, payload, n, row, |j| ext.template_member(cs.shape, j))?;
                        self.stats.resized += u64::from(!exact);
                        &resized[..]
                    }
                    _ => payload,
                };
                let call = Call { coll, n, me, root, bytes: r.bytes, payload };
                let alg = collective::engine_call(&call)
                    .map(|(k, bytes)| sh.algorithms.get(&k).copied().unwrap_or_else(|| k.auto_algorithm(sh.library, n, bytes)));
                let rounds = collective::rounds(&call, alg)?;
                if sink.takes_collectives() {
                    let shape = cs.shape;
                    let call = CollectiveCall { coll, n, root, bytes: r.bytes, payload: payload.to_vec(), algorithm: alg, tag, shape };
                    let m = sink.collective(call, &self.must, self.prev);
                    let start = self.must.clone();
                    self.collective_done(vec![m], start, blocking, r.req);
                    return Ok(());
                }
                rounds
            }
        };
        self.emit(sink, rounds, world_of, tag, blocking, r.req, ranks)
    }

    /// The rounds' messages as ops (the rules of `_collective` in the GOAL
    /// writer this replaces): the first round also follows program order.
    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        sink: &mut impl Sink,
        rounds: Vec<Round>,
        world_of: impl Fn(u32) -> u32,
        tag: u32,
        blocking: bool,
        req: u64,
        ranks: u32,
    ) -> Result<(), ConvertError> {
        let start = self.must.clone();
        let mut done = start.clone();
        let mut fan: Vec<OpRef> = Vec::new();
        let mut first = true;
        let mut add = |this: &mut Self, m: Msg, deps: &[OpRef], chain: bool| -> Result<OpRef, ConvertError> {
            let peer = world_of(m.peer);
            if peer >= ranks {
                return Err(ConvertError::CollectivePeer { peer, ranks });
            }
            let kind = if m.send { GoalKind::Send } else { GoalKind::Recv };
            Ok(this.op(sink, NewOp { kind, peer, tag, size: m.bytes }, Some(deps), chain))
        };
        for round in rounds {
            match round {
                Round::Together(msgs) => {
                    let mut ops = Vec::with_capacity(msgs.len());
                    for m in msgs {
                        ops.push(add(self, m, &done, first)?);
                    }
                    done = ops;
                    first = false;
                }
                Round::Fan(m) => {
                    let o = add(self, m, &done, first)?;
                    fan.push(o);
                }
                Round::CloseFan => {
                    done = std::mem::take(&mut fan);
                    first = false;
                }
            }
        }
        done.extend(fan);
        self.collective_done(done, start, blocking, req);
        Ok(())
    }

    /// What a collective leaves for the ops after it: its last round (`done`,
    /// or with no messages what it required, `start`) is what a blocking
    /// call makes the next op wait for, or what a nonblocking one's wait does.
    fn collective_done(&mut self, mut done: Vec<OpRef>, start: Vec<OpRef>, blocking: bool, req: u64) {
        if done.is_empty() {
            done = start;
        }
        if blocking {
            if let Some(&last) = done.last() {
                self.prev = Some(last);
            }
            self.must = done;
        } else {
            self.reqs.insert(req, Completes::Many(done));
        }
    }

    fn comm_new(&mut self, r: &Record) -> Result<(), ConvertError> {
        let parent_ctx = match self.comms.get_mut(&r.comm) {
            Some(p) if r.tag == CREATE_GROUP || r.tag == FIRST_SEEN => Some((p.ctx, BY_MEMBERS)),
            Some(p) => {
                p.created += 1;
                Some((p.ctx, p.created))
            }
            None if r.comm == u32::MAX || r.tag == FIRST_SEEN => None,
            None => return Err(ConvertError::ParentNotLive(r.comm)),
        };
        if r.peer < 0 {
            return Ok(()); // MPI_COMM_NULL on this rank
        }
        if matches!(self.placement, Placement::Periodic) {
            return Err(ConvertError::PeriodicComm);
        }
        let (ctx, order) = parent_ctx.unwrap_or((0x5eed, BY_MEMBERS));
        self.pending = Some(Box::new(Pending {
            id: r.peer as u32,
            parent_ctx: mix(ctx, r.tag as u64),
            order,
            members: Vec::new(),
            remote: Vec::new(),
            index: self.reader.index(),
        }));
        Ok(())
    }

    fn member(&mut self, r: &Record) -> Result<(), ConvertError> {
        match self.pending.as_mut() {
            Some(p) if p.id == r.comm => {
                let group = if r.has(flag::REMOTE) { &mut p.remote } else { &mut p.members };
                if r.tag as usize != group.len() {
                    return Err(ConvertError::MemberOrder { member: r.tag, comm: r.comm });
                }
                group.push(r.peer as u32);
                Ok(())
            }
            // The world's members, or a repeat: nothing new.
            _ if r.comm == 0 || self.comms.contains_key(&r.comm) => Ok(()),
            _ => Err(ConvertError::UnannouncedMember(r.comm)),
        }
    }

    fn close_pending(&mut self, sh: &mut Shared) -> Result<(), ConvertError> {
        let Some(mut p) = self.pending.take() else { return Ok(()) };
        let (comm, created) = (p.id, p.index.saturating_sub(1));
        if p.members.is_empty() {
            return Err(ConvertError::NoMembers { comm, created });
        }
        if p.order == BY_MEMBERS {
            let key = p.members.iter().fold(p.parent_ctx, |h, &w| mix(h, w as u64));
            let n = self.by_members.entry(key).or_insert(0);
            *n += 1;
            p.order = *n;
        }
        if let Placement::Grid { ext, template } = &self.placement {
            if !p.remote.is_empty() {
                return Err(ConvertError::IntercommOnGrid { comm, created });
            }
            let g = ext.sub_grid(self.rank, *template, &p.members).map_err(|source| ConvertError::CommGrid { comm, created, source })?;
            let ctx = mix(mix(p.parent_ctx, p.order), 0x6d1d_0000 | g.mask as u64);
            let members = if g.world { Members::World } else { Members::Grid(g.members) };
            self.comms.insert(p.id, CommState { ctx, members, shape: g.mask, me: g.me, created: 0, colls: 0 });
            return Ok(());
        }
        let me = p.members.iter().position(|&w| w == self.rank).ok_or(ConvertError::NotAmongMembers { comm, created })?;
        if let Some(&w) = p.members.iter().find(|&&w| w >= sh.traced) {
            return Err(ConvertError::MemberOutsideTrace { comm, created, member: w, traced: sh.traced });
        }
        let world = p.members.len() as u32 == sh.ranks && p.members.iter().enumerate().all(|(i, &w)| i as u32 == w);
        let ctx = if p.remote.is_empty() {
            p.members.iter().fold(mix(p.parent_ctx, p.order), |h, &w| mix(h, w as u64))
        } else {
            // The two sides of an intercommunicator have different parents and
            // local groups: its context comes from both groups, in rank order,
            // and how many intercommunicators they formed before.
            let mut both: Vec<u32> = p.members.iter().chain(&p.remote).copied().collect();
            both.sort_unstable();
            let key = both.iter().fold(0x1c0, |h, &w| mix(h, w as u64));
            let n = self.intercomms.entry(key).or_insert(0);
            *n += 1;
            mix(key, *n)
        };
        let members = if world { Members::World } else { Members::List(sh.group(ctx, p.members)) };
        self.comms.insert(p.id, CommState { ctx, members, shape: 0, me: me as u32, created: 0, colls: 0 });
        Ok(())
    }
}

/// Moves a template record to target rank `rank`: its point-to-point peer
/// (and, for strong scaling, its bytes) and a neighbourhood collective's
/// neighbours and sizes.
fn regrid(ext: &Extrapolation, rank: u32, template: u32, r: &mut Record, payload: &mut [u64]) -> Result<(), ConvertError> {
    if has_p2p_peer(r.op) && r.peer >= 0 {
        let tpeer = r.peer as u32;
        r.bytes = ext.bytes(template, tpeer, r.bytes)?;
        r.peer = ext.peer(rank, template, tpeer)? as i32;
        return Ok(());
    }
    let Some((coll, _)) = collective_of(r.op) else { return Ok(()) };
    if !coll.name().starts_with("neighbor_") || payload.len() < 2 {
        return Ok(());
    }
    let Some((ns, nd)) = format::neighbour_counts(payload) else {
        return Err(collective::CollectiveError::NeighbourPayload.into());
    };
    let (peers, sizes) = payload[2..].split_at_mut(ns + nd);
    for (p, size) in peers.iter_mut().zip(sizes.iter_mut()) {
        if (*p as i64) >= 0 {
            let tpeer = *p as u32;
            *size = ext.bytes(template, tpeer, *size)?;
            *p = ext.peer(rank, template, tpeer)? as u64;
        }
    }
    Ok(())
}

/// A per-member payload of a v-collective on a communicator that grew:
/// every member gets the count of its class's member in the template
/// (`template_member`), which is what that member's own call sends or
/// receives, so both sides of every message agree. Exact when the traced
/// counts were equal; the bool says so, and the others are counted for the report.
/// On a `row` (a communicator along one grid dimension), counts that every
/// member holds alike (allgatherv, reduce_scatter) and that follow the
/// member's position exactly (`along_row`) follow it at the new size too.
fn resize(coll: Coll, payload: &[u64], n: u32, row: bool, template_member: impl Fn(u32) -> u32) -> Result<(Vec<u64>, bool), ConvertError> {
    let parts = if matches!(coll, Coll::Alltoallv | Coll::Alltoallw) { 2 } else { 1 };
    let old = payload.len() / parts;
    if old == 0 {
        return Ok((payload.to_vec(), true));
    }
    let shared = row && matches!(coll, Coll::Allgatherv | Coll::ReduceScatter);
    let mut out = Vec::with_capacity(parts * n as usize);
    let mut exact = true;
    for part in payload.chunks(old) {
        if let Some((c0, c1)) = along_row(part, n).filter(|_| shared) {
            out.extend((0..n as i64).map(|j| (c0 + c1 * j) as u64));
            continue;
        }
        exact &= part.iter().all(|&v| v == part[0]);
        for j in 0..n {
            let t = template_member(j) as usize;
            out.push(*part.get(t).ok_or(ConvertError::Counts(old))?);
        }
    }
    Ok((out, exact))
}

/// `c0 + c1·i` if the counts of 3 or more members follow their position i
/// exactly (2 fit any line) and it stays ≥ 0 up to member n − 1.
fn along_row(counts: &[u64], n: u32) -> Option<(i64, i64)> {
    let (c0, c1) = (*counts.first()? as i64, *counts.get(1)? as i64 - *counts.first()? as i64);
    let fits = counts.len() >= 3 && counts.iter().enumerate().all(|(i, &v)| v as i64 == c0 + c1 * i as i64);
    (fits && c0 + c1 * (n as i64 - 1) >= 0).then_some((c0, c1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_counts_follow_their_position_only_where_three_members_show_it() {
        assert_eq!(along_row(&[64, 65, 66], 6), Some((64, 1)));
        assert_eq!(along_row(&[8, 8, 8], 9), Some((8, 0)));
        assert_eq!(along_row(&[66, 65, 64], 100), None, "negative counts by member 66");
        assert_eq!(along_row(&[8, 8, 16], 6), None);
        assert_eq!(along_row(&[8, 16], 6), None, "two members fit any line");
        // on a row, an allgatherv's counts follow the line; elsewhere (or a gatherv, whose members send their
        // own counts) each member takes its class's count
        let class = |j: u32| [0, 1, 1, 1, 2][j as usize];
        assert_eq!(resize(Coll::Allgatherv, &[64, 65, 66], 5, true, class).unwrap(), (vec![64, 65, 66, 67, 68], true));
        assert_eq!(resize(Coll::Allgatherv, &[64, 65, 66], 5, false, class).unwrap(), (vec![64, 65, 65, 65, 66], false));
        assert_eq!(resize(Coll::Gatherv, &[64, 65, 66], 5, true, class).unwrap(), (vec![64, 65, 65, 65, 66], false));
    }

    fn op(i: u64) -> Completes {
        Completes::One(OpRef { slot: i as u32, seq: i })
    }

    fn slot(c: Option<Completes>) -> Option<u32> {
        c.map(|c| c.ops()[0].slot)
    }

    #[test]
    fn open_requests_are_found_by_handle_in_the_list_and_past_it_in_the_table() {
        for open in [3u64, FEW_REQUESTS as u64, 40] {
            let mut reqs = Requests::Few(Vec::new());
            for h in 0..open {
                reqs.insert(1000 + h, op(h));
            }
            assert_eq!(matches!(reqs, Requests::Many(_)), open > FEW_REQUESTS as u64, "{open} open");
            // a handle reused while open stands for its new ops
            reqs.insert(1000, op(77));
            // closed in an order unlike the opening one (7 is prime to each count), each gives its own op
            for i in 0..open {
                let h = i * 7 % open;
                let want = if h == 0 { 77 } else { h as u32 };
                assert_eq!(slot(reqs.remove(1000 + h)), Some(want), "{open} open, handle {h}");
            }
            for h in 0..open {
                assert_eq!(slot(reqs.remove(1000 + h)), None, "{open} open: handle {h} still open");
            }
        }
    }
}
