//! An extrapolation compiled once per template rank. Every simulated rank
//! of a class (a Cartesian grid's, grid.rs, or a rank-periodic pattern's)
//! makes its template rank's calls with its peers moved by the same offsets
//! and its collectives run at its own place in its communicators. So the
//! template rank is converted once, on a representative of its class, into
//! a graph of ops whose peers are offsets and whose collectives are single
//! ops ([`Class`]); a
//! simulated rank keeps only how far it got — which ops are issued, started
//! and done, as bits counted from its oldest op not done ([`Cursor`]) — and
//! the collectives it is inside, expanded step by step at its own place
//! ([`Running`]). Ops are released exactly as the per-rank window would
//! release the converter's ops (window.rs): a test compares the replay with
//! the exported GOAL schedule, time for time.
//!
//! A collective's messages follow the converter's rules (`emit` in
//! convert.rs): a round waits for the round before it; nonblocking sends of
//! a fan wait only for what the round they are posted in waits for, and the
//! call's end waits for the fan; the first round also follows program
//! order. Stepping through them needs two counts, not the rounds.

use super::collective::{self, Msg, Stage};
use super::convert::{CollectiveCall, ConvertError, NewOp, OpRef, Placement, RankConv, Shared, Sink, Source};
use super::grid::{Extrapolation, Strided, MAX_DIMS};
use super::reader::Loaded;
use super::TraceError;
use crate::collectives::Collective;
use crate::program::goal::GoalKind;
use crate::program::{OpKind, Program, ReadyOp, ANY};
use crate::time::{Time, PAST_LIMIT, PS_PER_NS};
use rustc_hash::FxHashMap;
use std::rc::Rc;

const NIL: u32 = u32::MAX;

/// Op handles the engine echoes back: a class item's index, or (top bit
/// set) a message of a running collective: whether it is a fan's, the
/// collective's slot on the rank, and its number in the collective.
const COLLECTIVE_OP: u32 = 1 << 31;
const FAN_OP: u32 = 1 << 30;
const SLOT_SHIFT: u32 = 25;
pub(super) const SLOTS: u32 = 32;
const LOCAL: u32 = (1 << SLOT_SHIFT) - 1;

/// A rank's state of an item, as bits.
const ISSUED: u8 = 1;
const STARTED: u8 = 2;
const DONE: u8 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    None,
    Any,
    /// Grid offset from the rank, per dimension.
    Offset([i8; MAX_DIMS]),
    /// Rank-periodic: this many ranks on, round the world.
    Shift(u32),
}

/// How the simulated ranks replay the template ranks.
pub enum Layout {
    Grid(Rc<Extrapolation>),
    /// Rank q replays trace rank q mod `traced`, its peers moved by q − q mod `traced`.
    Periodic {
        traced: u32,
        ranks: u32,
    },
}

/// A simulated rank's communicator, as its collectives need it.
struct Place {
    me: u32,
    /// None: the world, in order.
    members: Option<Strided>,
}

impl Layout {
    fn ranks(&self) -> u32 {
        match self {
            Layout::Grid(e) => e.target.size(),
            Layout::Periodic { ranks, .. } => *ranks,
        }
    }

    fn template_rank(&self, r: u32) -> u32 {
        match self {
            Layout::Grid(e) => e.template_rank(r),
            Layout::Periodic { traced, .. } => r % traced,
        }
    }

    /// A simulated rank that replays template rank `tr`, if any does.
    fn representative(&self, tr: u32) -> Option<u32> {
        match self {
            Layout::Grid(e) => e.representative(tr),
            Layout::Periodic { .. } => Some(tr),
        }
    }

    fn placement(&self, tr: u32) -> Placement {
        match self {
            Layout::Grid(e) => Placement::Grid { ext: e.clone(), template: tr },
            Layout::Periodic { .. } => Placement::Periodic,
        }
    }

    /// What a template that does not extrapolate is refused with, before the converter's reason.
    fn refusal(&self) -> String {
        match self {
            Layout::Grid(e) => format!("cannot extrapolate on the {} grid: ", e.template.describe()),
            Layout::Periodic { .. } => String::new(),
        }
    }

    /// `peer` as an offset from `rep`.
    fn offset(&self, rep: u32, peer: u32) -> Peer {
        match self {
            Layout::Grid(e) => {
                let t = &e.target;
                let (a, b) = (t.coords(rep), t.coords(peer));
                let mut d = [0i8; MAX_DIMS];
                for (k, x) in d.iter_mut().enumerate().take(t.dims.len()) {
                    // neighbours only (the converter refuses others): ±1
                    let off = t.offset(k, a[k], b[k]);
                    debug_assert!(off.abs() <= 1, "a peer {off} ranks away");
                    *x = off as i8;
                }
                Peer::Offset(d)
            }
            Layout::Periodic { ranks, .. } => Peer::Shift(((peer as u64 + *ranks as u64 - rep as u64) % *ranks as u64) as u32),
        }
    }

    /// The rank at offset `p` from rank `r`.
    fn moved(&self, r: u32, p: Peer) -> u32 {
        match (self, p) {
            (Layout::Grid(e), Peer::Offset(d)) => {
                let t = &e.target;
                let mut c = t.coords(r);
                for k in 0..t.dims.len() {
                    let n = t.dims[k] as i64;
                    // (a neighbour's offset is less than the extent: wrapped without a division)
                    let x = c[k] as i64 + d[k] as i64;
                    c[k] = if (0..n).contains(&x) {
                        x
                    } else if (-n..0).contains(&x) {
                        x + n
                    } else if (n..2 * n).contains(&x) {
                        x - n
                    } else {
                        x.rem_euclid(n)
                    } as u32;
                }
                t.rank(&c)
            }
            (Layout::Periodic { ranks, .. }, Peer::Shift(s)) => ((r as u64 + s as u64) % *ranks as u64) as u32,
            (_, Peer::Any) => ANY,
            _ => 0,
        }
    }

    /// Rank `r`'s communicator of shape `shape` (grid dimensions it spans;
    /// a periodic pattern has only the world).
    fn comm(&self, r: u32, shape: u8) -> Place {
        match self {
            Layout::Grid(e) => {
                let g = e.comm_at(r, shape);
                Place { me: g.me, members: (!g.world).then_some(g.members) }
            }
            Layout::Periodic { .. } => Place { me: r, members: None },
        }
    }
}

impl Place {
    fn world(&self, local: u32) -> u32 {
        self.members.as_ref().map_or(local, |m| m.world(local))
    }
}

#[derive(Debug, Clone, Copy)]
struct Item {
    kind: OpKind,
    /// The collective it stands for (index into `Class::calls`), or NIL.
    call: u32,
    peer: Peer,
    tag: u32,
    size: u64,
    /// Its `requires`, a range of `Class::deps`.
    requires: (u32, u32),
    irequires: u32,
}

/// A collective call of the class, with what expands it for any member.
struct ClassCall {
    call: CollectiveCall,
    /// The engine's algorithm, for the collectives it has them for.
    engine: Option<Collective>,
}

/// Lists of items by item: `targets[offsets[i]..offsets[i + 1]]`.
#[derive(Default)]
struct Edges {
    offsets: Vec<u32>,
    targets: Vec<u32>,
}

impl Edges {
    /// The reverse of the items' dependencies on one kind (`of`), each list
    /// in item order.
    fn build(n: usize, of: impl Fn(usize) -> Vec<u32>) -> Edges {
        let lists: Vec<Vec<u32>> = (0..n).map(of).collect();
        let mut offsets = vec![0u32; n + 1];
        for l in &lists {
            for &d in l {
                offsets[d as usize + 1] += 1;
            }
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut targets = vec![0u32; *offsets.last().unwrap_or(&0) as usize];
        for (j, l) in lists.iter().enumerate() {
            for &d in l {
                targets[fill[d as usize] as usize] = j as u32;
                fill[d as usize] += 1;
            }
        }
        Edges { offsets, targets }
    }

    fn of(&self, i: u32) -> std::ops::Range<usize> {
        self.offsets[i as usize] as usize..self.offsets[i as usize + 1] as usize
    }
}

/// A template rank converted once: its ops, shared by every rank of its class.
pub struct Class {
    items: Vec<Item>,
    deps: Vec<u32>,
    calls: Vec<ClassCall>,
    on_start: Edges,
    on_done: Edges,
    /// Items with no dependencies: issued when the rank begins.
    initial: Vec<u32>,
    /// The converter that compiled it (its statistics feed the report).
    pub conv: RankConv,
    /// Simulated ranks in the class.
    pub members: u32,
    /// The representative it was compiled on.
    rep: u32,
}

/// The sink a class is compiled into.
struct Compiler<'a> {
    layout: &'a Layout,
    rep: u32,
    items: Vec<Item>,
    deps: Vec<u32>,
    calls: Vec<ClassCall>,
}

impl Compiler<'_> {
    fn push(&mut self, item: Item, requires: &[OpRef]) -> OpRef {
        let i = self.items.len() as u32;
        self.deps.extend(requires.iter().map(|r| r.slot));
        let requires = ((self.deps.len() - requires.len()) as u32, requires.len() as u32);
        self.items.push(Item { requires, ..item });
        OpRef { slot: i, seq: i as u64 }
    }
}

impl Sink for Compiler<'_> {
    fn add(&mut self, new: NewOp, requires: &[OpRef], irequires: Option<OpRef>) -> OpRef {
        let (kind, size, peer) = match new.kind {
            GoalKind::Send => (OpKind::Send, new.size, self.layout.offset(self.rep, new.peer)),
            GoalKind::Recv if new.peer == ANY => (OpKind::Recv, new.size, Peer::Any),
            GoalKind::Recv => (OpKind::Recv, new.size, self.layout.offset(self.rep, new.peer)),
            GoalKind::Calc => (OpKind::Calc, new.size.saturating_mul(PS_PER_NS).min(PAST_LIMIT), Peer::None),
        };
        let item = Item { kind, call: NIL, peer, tag: new.tag, size, requires: (0, 0), irequires: irequires.map_or(NIL, |r| r.slot) };
        self.push(item, requires)
    }

    fn takes_collectives(&self) -> bool {
        true
    }

    fn collective(&mut self, call: CollectiveCall, requires: &[OpRef], irequires: Option<OpRef>) -> OpRef {
        let c = call.at(0);
        // (checked already: the converter expanded it for the representative)
        let engine = collective::engine_call(&c)
            .and_then(|(kind, bytes)| collective::engine_collective(kind, call.algorithm, call.n, call.root, bytes).ok());
        let item = Item {
            kind: OpKind::Calc,
            call: self.calls.len() as u32,
            peer: Peer::None,
            tag: call.tag,
            size: 0,
            requires: (0, 0),
            irequires: irequires.map_or(NIL, |r| r.slot),
        };
        self.calls.push(ClassCall { call, engine });
        self.push(item, requires)
    }
}

impl Class {
    /// Converts template rank `tr` on its representative `rep`.
    fn compile(layout: &Layout, tr: u32, rep: u32, records: Rc<Loaded>, shared: &mut Shared) -> Result<Class, TraceError> {
        let mut conv = RankConv::new(rep, tr, Source::Memory { records, next: 0 }, layout.placement(tr));
        let mut sink = Compiler { layout, rep, items: Vec::new(), deps: Vec::new(), calls: Vec::new() };
        let mut steps = 0u32;
        while conv.advance(shared, &mut sink)? {
            steps = steps.wrapping_add(1);
            if steps.is_multiple_of(1 << 16) && !crate::interrupt::keep_going() {
                return Err(TraceError::Interrupted);
            }
        }
        let Compiler { items, deps, calls, .. } = sink;
        if items.len() >= FAN_OP as usize {
            return Err(TraceError::TooManyOps { rank: tr, ops: items.len() });
        }
        let requires = |j: usize| {
            let (a, n) = items[j].requires;
            deps[a as usize..(a + n) as usize].to_vec()
        };
        // What waits for a collective's start waits for its end as well (the
        // converter's rules), so a collective starts, for its dependents, when
        // it ends; the replay relies on this.
        if let Some(j) = (0..items.len()).find(|&j| {
            let i = items[j].irequires;
            i != NIL && items[i as usize].call != NIL && !requires(j).contains(&i)
        }) {
            return Err(TraceError::Internal(format!("template rank {tr}: op {j} follows a collective it does not wait for (internal)")));
        }
        let on_done = Edges::build(items.len(), requires);
        let on_start = Edges::build(items.len(), |j| if items[j].irequires == NIL { vec![] } else { vec![items[j].irequires] });
        let initial =
            (0..items.len() as u32).filter(|&j| items[j as usize].requires.1 == 0 && items[j as usize].irequires == NIL).collect();
        conv.reports = true;
        Ok(Class { items, deps, calls, on_start, on_done, initial, conv, members: 0, rep })
    }

    /// Every template rank's class (None: no simulated rank replays it);
    /// the error names the first record that does not extrapolate.
    pub fn compile_all(layout: &Layout, templates: &[Rc<Loaded>], shared: &mut Shared) -> Result<Vec<Option<Class>>, TraceError> {
        let mut classes = Vec::with_capacity(templates.len());
        for (tr, l) in templates.iter().enumerate() {
            classes.push(match layout.representative(tr as u32) {
                Some(rep) => Some(
                    Class::compile(layout, tr as u32, rep, l.clone(), shared)
                        .map_err(|e| TraceError::Template { refusal: layout.refusal(), source: Box::new(e) })?,
                ),
                None => None,
            });
        }
        if let Layout::Grid(e) = layout {
            check_pairing(e, &classes).map_err(|why| TraceError::Template { refusal: layout.refusal(), source: Box::new(why) })?;
        }
        Ok(classes)
    }

    /// Messages sent to (`true`) and received from (`false`) each
    /// neighbour offset, by tag; None if a receive takes any source or tag.
    fn p2p_counts(&self) -> Option<FxHashMap<Channel, u64>> {
        let mut n = FxHashMap::default();
        for it in &self.items {
            let send = match it.kind {
                OpKind::Send => true,
                OpKind::Recv => false,
                _ => continue,
            };
            match it.peer {
                Peer::Offset(d) if it.tag != ANY => *n.entry((d, send, it.tag)).or_insert(0) += 1,
                Peer::Offset(_) | Peer::Any => return None,
                Peer::None | Peer::Shift(_) => {}
            }
        }
        Some(n)
    }
}

/// Messages to (`true`) or from a neighbour offset, with one tag.
type Channel = ([i8; MAX_DIMS], bool, u32);

/// `c` with coordinate `d` set to `x`.
fn with(mut c: [u32; MAX_DIMS], d: usize, x: u32) -> [u32; MAX_DIMS] {
    c[d] = x;
    c
}

/// An offset as "(+1, 0, -1)".
fn describe_offset(off: &[i8]) -> String {
    let parts: Vec<String> = off.iter().map(|&x| if x > 0 { format!("+{x}") } else { x.to_string() }).collect();
    format!("({})", parts.join(", "))
}

/// Copies of the template ranks pair up at scale: for every two classes
/// that are neighbours somewhere on the target grid, the messages one sends
/// toward the other equal, tag by tag, those the other receives from it.
/// In the trace each rank's partner was a different rank; at scale it may
/// be a copy of another class, or of its own, so a code whose ranks
/// exchange different numbers of messages (which depend on their data) would
/// otherwise stop midway with ranks waiting for each other.
fn check_pairing(e: &Extrapolation, classes: &[Option<Class>]) -> Result<(), TraceError> {
    let dims = e.template.dims.len();
    let counts: Vec<_> = classes.iter().map(|c| c.as_ref().and_then(Class::p2p_counts)).collect();
    // per dimension and step (-1, 0, 1): the template coordinates found side by side on the target
    let steps: Vec<[Vec<(u32, u32)>; 3]> = (0..dims)
        .map(|d| {
            std::array::from_fn(|i| {
                let (n, step) = (e.target.dims[d] as i64, i as i64 - 1);
                let mut pairs: Vec<(u32, u32)> = (0..n)
                    .filter_map(|x| {
                        let y = if e.target.periodic[d] { (x + step).rem_euclid(n) } else { x + step };
                        (0..n).contains(&y).then(|| (e.class(d, x as u32), e.class(d, y as u32)))
                    })
                    .collect();
                pairs.sort_unstable();
                pairs.dedup();
                pairs
            })
        })
        .collect();
    for (t, mine) in counts.iter().enumerate() {
        let Some(mine) = mine else { continue };
        let at = e.template.coords(t as u32);
        for (&(off, send, tag), &n) in mine {
            // the template coordinates of every neighbour at `off` on the target
            let mut peers = vec![[0u32; MAX_DIMS]];
            for (d, side_by_side) in steps.iter().enumerate() {
                let next: Vec<u32> = side_by_side[(off[d] + 1) as usize].iter().filter(|p| p.0 == at[d]).map(|p| p.1).collect();
                peers = peers.iter().flat_map(|q| next.iter().map(move |&x| with(*q, d, x))).collect();
            }
            let back = off.map(|x| -x);
            for q in peers {
                let u = e.template.rank(&q);
                let Some(theirs) = &counts[u as usize] else { continue };
                let m = theirs.get(&(back, !send, tag)).copied().unwrap_or(0);
                if m != n {
                    let (from, to, toward, (sent, received)) = if send { (t as u32, u, off, (n, m)) } else { (u, t as u32, back, (m, n)) };
                    return Err(TraceError::Unpaired { from, sent, toward: describe_offset(&toward[..dims]), to, received });
                }
            }
        }
    }
    Ok(())
}

/// One collective a rank is inside: its rounds are generated one at a time.
#[derive(Clone, Copy)]
struct Running {
    /// The class item it stands for.
    item: u32,
    /// The rank's place in the communicator.
    me: u32,
    slot: u8,
    next_step: u32,
    /// Messages issued so far (each numbered by its order).
    issued: u32,
    /// What the next round waits for: the messages numbered [lo, hi) (only
    /// a fan's, if `fans`; none: the collective's own dependencies), and
    /// how many of them are not done.
    wait: (u32, u32),
    wait_fans: bool,
    waiting: u32,
    /// The open fan: its messages are numbered from `fan_from`; how many are not done.
    fan_from: u32,
    fan_left: u32,
    /// Messages issued and not done.
    outstanding: u32,
    /// No rounds are left.
    ended: bool,
    /// A fan was opened since the last one closed: only then can a close
    /// be the next stage (every algorithm closes a fan after its messages).
    fan_open: bool,
}

/// An item no collective stands for: a free place in [`ClassProgram::heads`].
const NO_ITEM: u32 = u32::MAX;

impl Running {
    /// A free place; a new collective is this with its item, place and slot.
    const FREE: Running = Running {
        item: NO_ITEM,
        me: 0,
        slot: 0,
        next_step: 0,
        issued: 0,
        wait: (0, 0),
        wait_fans: false,
        waiting: 0,
        fan_from: 0,
        fan_left: 0,
        outstanding: 0,
        ended: false,
        fan_open: false,
    };
}

/// A simulated rank's progress through its class's items: items below
/// `base` are done; the states of the 64 from `base` are bits; later ones
/// (a request left open across many calls) in `far`.
#[derive(Default)]
struct Cursor {
    base: u32,
    /// The template rank, and (top bit) whether the rank has begun.
    class: u32,
    bits: [u64; 3],
    far: Option<Box<FxHashMap<u32, u8>>>,
}

const BEGUN: u32 = 1 << 31;

/// What a simulated rank holds at most, as the memory estimate allows for
/// it: its cursor, and its place for a collective in progress.
pub const BYTES_PER_RANK: usize = std::mem::size_of::<Cursor>() + std::mem::size_of::<Running>();

impl Cursor {
    fn state(&self, i: u32) -> u8 {
        if i < self.base {
            return ISSUED | STARTED | DONE;
        }
        let k = i - self.base;
        if k < 64 {
            (0..3).fold(0, |s, b| s | (((self.bits[b] >> k) & 1) as u8) << b)
        } else {
            self.far.as_ref().and_then(|f| f.get(&i).copied()).unwrap_or(0)
        }
    }

    fn set(&mut self, i: u32, state: u8) {
        if i < self.base {
            return;
        }
        let k = i - self.base;
        if k < 64 {
            for b in 0..3 {
                if state & (1 << b) != 0 {
                    self.bits[b] |= 1 << k;
                }
            }
        } else {
            *self.far.get_or_insert_with(Default::default).entry(i).or_insert(0) |= state;
        }
    }

    /// Moves `base` past the items done, taking later states into the bits.
    fn advance(&mut self) {
        let k = self.bits[2].trailing_ones();
        if k == 0 {
            return;
        }
        for b in &mut self.bits {
            *b = if k == 64 { 0 } else { *b >> k };
        }
        self.base += k;
        let Some(mut far) = self.far.take() else { return };
        let base = self.base;
        far.retain(|&i, s| {
            let near = i - base < 64;
            if near {
                for b in 0..3 {
                    if *s & (1 << b) != 0 {
                        self.bits[b] |= 1 << (i - base);
                    }
                }
            }
            !near
        });
        if !far.is_empty() {
            self.far = Some(far);
        }
        self.advance();
    }
}

/// The engine program of a Cartesian extrapolation.
pub struct ClassProgram {
    pub shared: Shared,
    layout: Layout,
    /// By template rank (None: no simulated rank replays it).
    pub classes: Vec<Option<Class>>,
    cursors: Vec<Cursor>,
    /// By rank, the collective it is inside (`NO_ITEM`: none), in one array
    /// beside the cursors rather than behind a pointer from them, so that an
    /// event's rank finds it with no load in between (its address is known
    /// ahead, and fetched with the cursor); allocated when the first one
    /// begins. A rank inside two or more at once (nonblocking collectives)
    /// keeps the others in `more`.
    heads: Vec<Running>,
    more: FxHashMap<u32, Vec<Running>>,
    /// Ops released and not yet collected, by rank.
    ready: Vec<(u32, ReadyOp)>,
    error: Option<TraceError>,
    max_initial: u32,
    /// By template rank: messages its class's ranks sent, and their bytes.
    sent: Vec<(u64, u64)>,
}

impl ClassProgram {
    pub fn new(mut shared: Shared, layout: Layout, templates: &[Rc<Loaded>]) -> Result<Self, TraceError> {
        let mut classes = Class::compile_all(&layout, templates, &mut shared)?;
        let ranks = layout.ranks();
        let mut cursors = Vec::new();
        cursors.try_reserve_exact(ranks as usize).map_err(|source| TraceError::Alloc { ranks, source })?;
        crate::memory::prefer_huge_pages(&cursors);
        for r in 0..ranks {
            // (at tens of millions of ranks this loop takes seconds, mostly the kernel zeroing pages)
            if r.is_multiple_of(1 << 16) && !crate::interrupt::keep_going() {
                return Err(TraceError::Interrupted);
            }
            let tr = layout.template_rank(r);
            classes[tr as usize].as_mut().expect("a rank's class is compiled").members += 1;
            cursors.push(Cursor { class: tr, ..Default::default() });
        }
        let sent = vec![(0, 0); classes.len()];
        let mut p = ClassProgram {
            shared,
            layout,
            classes,
            cursors,
            heads: Vec::new(),
            more: FxHashMap::default(),
            ready: Vec::new(),
            error: None,
            max_initial: 0,
            sent,
        };
        p.max_initial = p.count_initial()?;
        Ok(p)
    }

    /// The most ops a rank issues when it begins: its class's first items,
    /// and the first rounds of the collectives among them (counted rank by
    /// rank, since they depend on the rank's place).
    fn count_initial(&mut self) -> Result<u32, TraceError> {
        let mut most = 0;
        for c in self.classes.iter().flatten() {
            most = most.max(c.initial.len() as u32);
        }
        if !self.classes.iter().flatten().any(|c| c.initial.iter().any(|&i| c.items[i as usize].call != NIL)) {
            return Ok(most);
        }
        for r in 0..self.cursors.len() as u32 {
            if r.is_multiple_of(1 << 16) && !crate::interrupt::keep_going() {
                return Err(TraceError::Interrupted);
            }
            self.begin(r);
            most = most.max(self.ready.len() as u32);
            self.ready.clear();
            self.cursors[r as usize] = Cursor { class: self.cursors[r as usize].class & !BEGUN, ..Default::default() };
            if let Some(e) = self.error.take() {
                return Err(e);
            }
        }
        Ok(most)
    }

    /// Per simulated rank, the computation its class charges (ns).
    pub fn calc_ns_by_rank(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.cursors.len() as u32).map(|r| self.class(r).conv.stats.calc_ns)
    }

    /// Per template rank: (messages, bytes) its class's ranks sent.
    pub fn sent_by_class(&self) -> &[(u64, u64)] {
        &self.sent
    }

    /// The template rank whose class rank `r` belongs to.
    pub fn class_of(&self, r: u32) -> u32 {
        self.cursors[r as usize].class & !BEGUN
    }

    fn count_send(&mut self, r: u32, bytes: u64) {
        let k = self.class_of(r) as usize;
        let c = &mut self.sent[k];
        c.0 += 1;
        c.1 += bytes;
    }

    fn class(&self, r: u32) -> &Class {
        self.classes[(self.cursors[r as usize].class & !BEGUN) as usize].as_ref().expect("compiled")
    }

    fn fail(&mut self, e: TraceError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    fn begin(&mut self, r: u32) {
        self.cursors[r as usize].class |= BEGUN;
        let initial = self.class(r).initial.clone();
        for i in initial {
            self.check(r, i);
        }
    }

    /// Issues item `j` of rank `r` if everything it waits for is there.
    fn check(&mut self, r: u32, j: u32) {
        let cur = &self.cursors[r as usize];
        let state = cur.state(j);
        if state & ISSUED != 0 || state & DONE != 0 {
            return;
        }
        let c = self.class(r);
        let it = c.items[j as usize];
        let (a, n) = it.requires;
        if !c.deps[a as usize..(a + n) as usize].iter().all(|&d| cur.state(d) & DONE != 0) {
            return;
        }
        let follows = it.irequires == NIL || cur.state(it.irequires) & STARTED != 0;
        if it.call == NIL {
            if follows {
                self.cursors[r as usize].set(j, ISSUED);
                let peer = self.layout.moved(r, it.peer);
                let collective = it.kind.is_message() && self.shared.is_collective_tag(it.tag);
                let op = ReadyOp { kind: it.kind, peer, tag: it.tag, size: it.size, id: j, cpu: 0, nic: 0, collective };
                if it.kind == OpKind::Send {
                    self.count_send(r, it.size);
                }
                self.ready.push((r, op));
            }
            return;
        }
        self.enter(r, j, it.call, follows);
    }

    /// Collective item `j` (call `k`) of rank `r`, its dependencies done:
    /// one without messages for this rank is done at once (what waits for
    /// it waits for its dependencies, as the converter has it); otherwise
    /// its first round goes once program order allows (`follows`).
    fn enter(&mut self, r: u32, j: u32, k: u32, follows: bool) {
        let c = self.class(r);
        let cc = &c.calls[k as usize];
        let me = self.layout.comm(r, cc.call.shape).me;
        let empty = match &cc.engine {
            Some(e) => e.step(me, 0).is_none(),
            // (checks the call's payload: a later stage reads the same)
            None => match collective::stage_at(&cc.call.at(me), 0) {
                Ok(first) => first.is_none(),
                Err(e) => return self.fail(TraceError::Rank { rank: r, source: Box::new(ConvertError::from(e).into()) }),
            },
        };
        if empty {
            self.cursors[r as usize].set(j, ISSUED | STARTED | DONE);
            return self.finished_item(r, j);
        }
        if !follows {
            return;
        }
        self.cursors[r as usize].set(j, ISSUED);
        let used = self.running(r).fold(0u32, |used, x| used | 1 << x.slot);
        if used == u32::MAX {
            return self.fail(TraceError::Rank { rank: r, source: Box::new(TraceError::TooManyCollectives) });
        }
        // a new collective: nothing issued, waited for or done yet
        let running = Running { item: j, me, slot: used.trailing_ones() as u8, ..Running::FREE };
        self.put_back(r, running);
        self.step_collective(r, j);
    }

    /// The first stage at or after step `i` of the collective running as
    /// item `j` of rank `r`, and the step after it: generated where it is
    /// needed, so a rank inside a collective holds no list of its rounds.
    fn stage(&self, r: u32, x: &Running, i: u32) -> Option<(Stage, u32)> {
        let c = self.class(r);
        let cc = &c.calls[c.items[x.item as usize].call as usize];
        match &cc.engine {
            Some(e) => e.step(x.me, i).map(|s| (Stage::of_step(s), i + 1)),
            None => collective::stage_at(&cc.call.at(x.me), i).expect("its payload was checked when the rank entered it"),
        }
    }

    /// The collectives rank `r` is inside.
    fn running(&self, r: u32) -> impl Iterator<Item = &Running> {
        let head = self.heads.get(r as usize).filter(|x| x.item != NO_ITEM);
        head.into_iter().chain(self.more.get(&r).into_iter().flatten())
    }

    /// Takes the running collective of item `j` off rank `r` (put it back with `put_back`).
    fn take_running(&mut self, r: u32, j: u32) -> Running {
        let head = &mut self.heads[r as usize];
        if head.item == j {
            return std::mem::replace(head, Running::FREE);
        }
        let others = self.more.get_mut(&r).expect("a running collective");
        let x = others.swap_remove(others.iter().position(|x| x.item == j).expect("a running collective"));
        if others.is_empty() {
            self.more.remove(&r);
        }
        x
    }

    /// Puts a collective rank `r` is inside in its place.
    fn put_back(&mut self, r: u32, x: Running) {
        if self.heads.is_empty() {
            self.heads = crate::memory::per_rank(self.cursors.len(), Running::FREE);
        }
        let head = &mut self.heads[r as usize];
        if head.item == NO_ITEM {
            *head = x;
        } else {
            self.more.entry(r).or_default().push(x);
        }
    }

    /// Issues the collective's rounds for as long as what they wait for is
    /// done; ends it when no round is left and its last ones are done.
    // Long: one loop over a collective's stages: what each waits for, issues
    // and closes, beside the state it changes, read in one place.
    fn step_collective(&mut self, r: u32, j: u32) {
        let mut x = self.take_running(r, j);
        let k = self.class(r).items[j as usize].call;
        let (tag, shape) = {
            let cc = &self.class(r).calls[k as usize].call;
            (cc.tag, cc.shape)
        };
        // (worked out once a message is to go: most calls come from a
        // round's first message done, with the rest still to wait for)
        let mut members = None;
        loop {
            if x.waiting > 0 && !x.fan_open {
                // the next stage cannot be a fan's close: nothing to do yet
                break;
            }
            let next = if x.ended { None } else { self.stage(r, &x, x.next_step) };
            if x.waiting > 0 {
                // a fan closed right away replaces what the next round waits for
                if next.map(|(s, _)| s) != Some(Stage::CloseFan) {
                    break;
                }
            }
            let Some((stage, after)) = next else {
                x.ended = true;
                break;
            };
            x.next_step = after;
            let send = |x: &mut Running, m: Msg, fan: bool| {
                let local = x.issued;
                x.issued += 1;
                x.outstanding += 1;
                (local, m, fan)
            };
            let mut out: [(u32, Msg, bool); 2] = [(0, Msg { send: false, peer: 0, bytes: 0 }, false); 2];
            let mut n = 0;
            match stage {
                Stage::Fan(m) => {
                    out[0] = send(&mut x, m, true);
                    n = 1;
                    x.fan_left += 1;
                    x.fan_open = true;
                }
                Stage::Together(ms, len) => {
                    let lo = x.issued;
                    for &m in &ms[..len as usize] {
                        out[n] = send(&mut x, m, false);
                        n += 1;
                    }
                    (x.wait, x.wait_fans, x.waiting) = ((lo, x.issued), false, len as u32);
                }
                Stage::CloseFan => {
                    debug_assert!(x.fan_open, "a fan closed that was not opened");
                    x.fan_open = false;
                    (x.wait, x.wait_fans, x.waiting) = ((x.fan_from, x.issued), true, x.fan_left);
                    (x.fan_from, x.fan_left) = (x.issued, 0);
                }
            }
            for &(local, m, fan) in &out[..n] {
                if local > LOCAL {
                    self.put_back(r, x);
                    return self.fail(TraceError::Rank { rank: r, source: Box::new(TraceError::CollectiveTooLarge) });
                }
                let peer = members.get_or_insert_with(|| self.layout.comm(r, shape)).world(m.peer);
                if peer >= self.cursors.len() as u32 {
                    self.put_back(r, x);
                    return self.fail(ConvertError::CollectivePeer { peer, ranks: self.cursors.len() as u32 }.into());
                }
                let id = COLLECTIVE_OP | if fan { FAN_OP } else { 0 } | (x.slot as u32) << SLOT_SHIFT | local;
                let kind = if m.send { OpKind::Send } else { OpKind::Recv };
                if m.send {
                    self.count_send(r, m.bytes);
                }
                self.ready.push((r, ReadyOp { kind, peer, tag, size: m.bytes, id, cpu: 0, nic: 0, collective: true }));
            }
        }
        let over = x.ended && x.waiting == 0 && x.fan_left == 0;
        let gone = over && x.outstanding == 0;
        let first_time = over && self.cursors[r as usize].state(j) & DONE == 0;
        if !gone {
            self.put_back(r, x);
        }
        if first_time {
            self.cursors[r as usize].set(j, STARTED | DONE);
            self.finished_item(r, j);
        }
    }

    /// A message of a collective is done.
    fn collective_op_done(&mut self, r: u32, id: u32) {
        let (slot, local, fan) = ((id >> SLOT_SHIFT) as u8 & (SLOTS as u8 - 1), id & LOCAL, id & FAN_OP != 0);
        let head = self.heads.get_mut(r as usize).filter(|x| x.item != NO_ITEM);
        let x = head
            .into_iter()
            .chain(self.more.get_mut(&r).into_iter().flatten())
            .find(|x| x.slot == slot)
            .expect("a message of a collective running");
        x.outstanding -= 1;
        if fan == x.wait_fans && (x.wait.0..x.wait.1).contains(&local) {
            x.waiting -= 1;
        }
        if fan && local >= x.fan_from {
            x.fan_left -= 1;
        }
        let j = x.item;
        self.step_collective(r, j)
    }

    /// Collective item `j` of rank `r` is done: what follows it and what
    /// waits for it may go (it counts as started when it is done).
    fn finished_item(&mut self, r: u32, j: u32) {
        self.release(r, j, false);
        self.release(r, j, true);
    }

    fn edges(&self, r: u32, done: bool) -> &Edges {
        let c = self.class(r);
        if done {
            &c.on_done
        } else {
            &c.on_start
        }
    }

    /// Checks the items waiting for item `j` to be done (`done`) or to
    /// have started; once done, moves the rank's cursor on.
    fn release(&mut self, r: u32, j: u32, done: bool) {
        for e in self.edges(r, done).of(j) {
            let t = self.edges(r, done).targets[e];
            self.check(r, t);
        }
        if done {
            self.cursors[r as usize].advance();
        }
    }
}

impl Program for ClassProgram {
    fn num_ranks(&self) -> u32 {
        self.cursors.len() as u32
    }

    fn max_initial_ops(&self) -> u32 {
        self.max_initial
    }

    fn started(&mut self, rank: u32, id: u32) {
        if id & COLLECTIVE_OP == 0 {
            self.cursors[rank as usize].set(id, STARTED);
            self.release(rank, id, false);
        }
    }

    #[inline]
    fn prefetch(&self, rank: u32) {
        crate::prefetch::prefetch(&self.cursors, rank as usize);
        // the collective in progress (a rank in a long one gets many events)
        crate::prefetch::prefetch(&self.heads, rank as usize);
    }

    fn done(&mut self, rank: u32, id: u32) {
        if id & COLLECTIVE_OP != 0 {
            return self.collective_op_done(rank, id);
        }
        self.cursors[rank as usize].set(id, STARTED | DONE);
        self.release(rank, id, true);
    }

    fn collect(&mut self, rank: u32, _now: Time, _cpu_free: Time, out: &mut Vec<ReadyOp>) -> Result<(), String> {
        if self.cursors[rank as usize].class & BEGUN == 0 {
            self.begin(rank);
        }
        if let Some(e) = self.error.take() {
            // as text: the engine's Program trait has no error type of its own yet
            return Err(e.to_string());
        }
        if self.ready.iter().all(|e| e.0 == rank) {
            out.extend(self.ready.drain(..).map(|e| e.1));
        } else {
            out.extend(self.ready.iter().filter(|e| e.0 == rank).map(|e| e.1));
            self.ready.retain(|e| e.0 != rank);
        }
        Ok(())
    }

    fn is_finished(&self, rank: u32) -> bool {
        let cur = &self.cursors[rank as usize];
        cur.base as usize == self.class(rank).items.len() && self.running(rank).next().is_none()
    }

    fn describe_stuck(&self, rank: u32) -> String {
        let cur = &self.cursors[rank as usize];
        let c = self.class(rank);
        let open: Vec<String> = (cur.base..c.items.len() as u32)
            .filter(|&i| cur.state(i) & DONE == 0)
            .take(3)
            .map(|i| {
                let it = &c.items[i as usize];
                let state = match cur.state(i) {
                    s if s & STARTED != 0 => "started",
                    s if s & ISSUED != 0 => "issued",
                    _ => "blocked",
                };
                let peer = match it.peer {
                    Peer::Any => "any".into(),
                    p => self.layout.moved(rank, p).to_string(),
                };
                match (it.call, it.kind) {
                    (k, _) if k != NIL => format!("{} ({state})", c.calls[k as usize].call.coll.name()),
                    (_, OpKind::Send) => format!("send {} B to {peer} ({state})", it.size),
                    (_, OpKind::Recv) => format!("recv {} B from {peer} ({state})", it.size),
                    _ => format!("calc ({state})"),
                }
            })
            .collect();
        format!(
            "op {} of {} of template rank {} (replayed as on rank {}): {}",
            cur.base,
            c.items.len(),
            cur.class & !BEGUN,
            c.rep,
            open.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    /// What an extrapolation keeps per simulated rank (docs/performance.md, (g)).
    #[test]
    fn a_rank_takes_40_bytes_and_44_more_inside_a_collective() {
        assert_eq!(std::mem::size_of::<super::Cursor>(), 40);
        assert_eq!(std::mem::size_of::<super::Running>(), 44);
    }
}
