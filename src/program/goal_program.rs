//! A GOAL schedule as an engine program: a per-rank dependency graph,
//! released exactly as LogGOPSim releases it (roots in schedule order; freed
//! ops in the order their dependency edges were declared).

use super::goal::{parse_goal_into, GoalError, GoalKind, GoalRank, GoalSchedule, RankSink};
use super::{OpKind, Program, ReadyOp};
use crate::time::{Time, PAST_LIMIT, PS_PER_NS};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum OpState {
    Blocked,
    Issued,
    Started,
    Done,
}

/// No op (the end of a freed list).
const NONE: u32 = u32::MAX;

/// Compressed adjacency over all ops: the dependents of global op i are
/// `targets[offsets[i]..offsets[i + 1]]` (rank-local indices). u32 suffices
/// here as for the ops' own indices: 2^32 ops would take 128 GiB, far past
/// what the memory check lets a run allocate.
#[derive(Debug)]
struct Csr {
    offsets: Vec<u32>,
    targets: Vec<u32>,
}

impl Csr {
    /// Empty, for `ops` ops already pushed with no edges.
    fn with_edgeless(ops: usize) -> Self {
        Csr { offsets: vec![0; ops + 1], targets: Vec::new() }
    }

    /// Appends one rank's `n` ops, with edges (a, b) = "a depends on b"
    /// (`scratch`: reused between calls).
    fn push_rank(&mut self, n: usize, edges: &[(u32, u32)], scratch: &mut Vec<u32>) {
        group_by_prerequisite(n, edges, &mut self.targets, scratch);
        self.offsets.pop(); // (= the rank's first start)
        self.offsets.extend_from_slice(scratch);
    }

    fn range(&self, op: usize) -> std::ops::Range<usize> {
        self.offsets[op] as usize..self.offsets[op + 1] as usize
    }
}

/// Appends `edges` (a, b) = "a depends on b" of a rank's `n` ops to
/// `targets`, grouped by b and in declaration order within a group;
/// `starts[i]` is where op i's group begins in `targets` (n + 1 entries,
/// the last at the rank's end).
fn group_by_prerequisite(n: usize, edges: &[(u32, u32)], targets: &mut Vec<u32>, starts: &mut Vec<u32>) {
    let first = u32::try_from(targets.len()).expect("fewer than 2^32 dependencies");
    starts.clear();
    starts.resize(n + 1, 0);
    for &(_, b) in edges {
        starts[b as usize + 1] += 1;
    }
    starts[0] = first;
    for i in 0..n {
        starts[i + 1] += starts[i];
    }
    targets.resize(targets.len() + edges.len(), 0);
    // each op's start serves as its cursor, then is moved back by its group's size
    for &(a, b) in edges {
        targets[starts[b as usize] as usize] = a;
        starts[b as usize] += 1;
    }
    for i in (1..=n).rev() {
        starts[i] = starts[i - 1];
    }
    starts[0] = first;
}

/// One op as the program keeps it: what `collect` hands out, its state and
/// its dependency bookkeeping in one 32-byte record, so that freeing a
/// dependent touches one cache line rather than one per array.
#[derive(Debug, Clone, Copy)]
struct Op {
    /// Bytes for send/receive; picoseconds for calc.
    size: u64,
    peer: u32,
    tag: u32,
    /// Dependencies not yet met.
    deps_left: u32,
    /// The next op on its rank's freed list (rank-local), or NONE.
    next_freed: u32,
    /// Its done-dependents are `done_targets[done_first..]` up to the next
    /// op's `done_first` (the last op's end is `done_targets.len()`).
    done_first: u32,
    kind: OpKind,
    cpu: u8,
    nic: u8,
    state: OpState,
}

const _: () = assert!(std::mem::size_of::<Op>() == 32);

/// What the program keeps per rank, in one 16-byte record: an event of a
/// rank reads and writes these together, so they share a cache line (in four
/// arrays they were four misses per event at a million ranks).
#[derive(Debug, Clone, Copy)]
struct RankOps {
    /// Its first op's global number (its ops end where the next rank's begin).
    first: u32,
    /// The ops freed and not yet collected, in the order freed: a list
    /// threaded through the ops' `next_freed`, from `freed_head` to `freed_tail`.
    freed_head: u32,
    freed_tail: u32,
    /// Its ops not yet done.
    left: u32,
}

/// Every rank's ops in one flat array indexed by global op number (a rank's
/// ops are `ranks[r].first..ranks[r + 1].first`), so a million-rank schedule
/// takes 32 bytes per op, 4 per dependency and 16 per rank, with no per-rank
/// allocation.
pub struct GoalProgram {
    num_ranks: u32,
    ranks: Vec<RankOps>,
    ops: Vec<Op>,
    done_targets: Vec<u32>,
    /// Dependents on an op's start (GOAL's `irequires`), kept only when the
    /// schedule has any: most have none.
    on_start: Option<Csr>,
    max_initial_ops: u32,
    max_cpu: u8,
    max_nic: u8,
}

impl GoalProgram {
    /// `calc` sizes in the schedule are nanoseconds.
    pub fn new(s: &GoalSchedule) -> Self {
        Self::build(s.num_ranks, s.max_cpu(), s.max_nic(), s.num_ops(), s.ranks.iter())
    }

    /// Like `new`, freeing each rank's parsed form once converted, so the
    /// schedule and the program are never both whole in memory.
    pub fn from_schedule(s: GoalSchedule) -> Self {
        let (cpu, nic, n) = (s.max_cpu(), s.max_nic(), s.num_ops());
        Self::build(s.num_ranks, cpu, nic, n, s.ranks.into_iter())
    }

    fn build<R: std::borrow::Borrow<GoalRank>>(
        num_ranks: u32,
        max_cpu: u8,
        max_nic: u8,
        total_ops: usize,
        ranks: impl Iterator<Item = R>,
    ) -> Self {
        let mut b = GoalProgramBuilder::new(num_ranks, num_ranks as usize, total_ops);
        for g in ranks {
            b.push_rank(g.borrow());
        }
        let p = b.finish();
        debug_assert_eq!((p.max_cpu, p.max_nic), (max_cpu, max_nic));
        p
    }

    /// Appends op `id` (its rank's ops start at `base`) to `rank`'s freed list.
    #[inline]
    fn free(&mut self, rank: u32, base: usize, id: u32) {
        let o = &mut self.ops[base + id as usize];
        o.state = OpState::Issued;
        o.next_freed = NONE;
        let at = &mut self.ranks[rank as usize];
        match std::mem::replace(&mut at.freed_tail, id) {
            NONE => at.freed_head = id,
            tail => self.ops[base + tail as usize].next_freed = id,
        }
    }

    /// Counts down one dependency of each op in `dependents` (rank-local).
    #[inline]
    fn count_down(&mut self, rank: u32, base: usize, dependents: std::ops::Range<usize>, on_start: bool) {
        for k in dependents {
            let a = if on_start { self.on_start.as_ref().expect("start edges").targets[k] } else { self.done_targets[k] };
            let o = &mut self.ops[base + a as usize];
            o.deps_left -= 1;
            if o.deps_left == 0 {
                self.free(rank, base, a);
            }
        }
    }

    fn done_range(&self, op: usize) -> std::ops::Range<usize> {
        let end = self.ops.get(op + 1).map_or(self.done_targets.len(), |o| o.done_first as usize);
        self.ops[op].done_first as usize..end
    }

    fn rank_ops(&self, rank: u32) -> std::ops::Range<usize> {
        let end = self.ranks.get(rank as usize + 1).map_or(self.ops.len(), |next| next.first as usize);
        self.ranks[rank as usize].first as usize..end
    }
}

/// Builds a [`GoalProgram`] rank by rank, as a reader hands over each
/// rank's parsed block (in rank order) and drops it: a schedule's parsed
/// form is never whole in memory, only the program.
pub struct GoalProgramBuilder {
    p: GoalProgram,
    /// Scratch: where each op's group of dependents starts.
    count: Vec<u32>,
}

impl GoalProgramBuilder {
    /// For `num_ranks` ranks; the hints reserve room for that many ranks
    /// and ops (estimates from the file's size, which bound what a tiny
    /// file declaring huge counts can allocate; the arrays grow past them).
    pub fn new(num_ranks: u32, ranks_hint: usize, ops_hint: usize) -> Self {
        let n = ranks_hint.min(num_ranks as usize);
        GoalProgramBuilder {
            p: GoalProgram {
                num_ranks,
                ranks: Vec::with_capacity(n),
                ops: Vec::with_capacity(ops_hint),
                done_targets: Vec::with_capacity(ops_hint),
                on_start: None,
                max_initial_ops: 0,
                max_cpu: 0,
                max_nic: 0,
            },
            count: Vec::new(),
        }
    }

    /// Ranks pushed so far.
    pub fn ranks(&self) -> u32 {
        self.p.ranks.len() as u32
    }

    /// Appends the next rank's ops (`calc` sizes in nanoseconds).
    pub fn push_rank(&mut self, g: &GoalRank) {
        let p = &mut self.p;
        let r = p.ranks.len() as u32;
        assert!(r < p.num_ranks, "more rank blocks than num_ranks");
        let base = p.ops.len();
        let n = g.ops.len();
        // Done-dependents grouped by the op they wait for, in declaration order.
        let starts = &mut self.count;
        group_by_prerequisite(n, &g.requires, &mut p.done_targets, starts);
        p.ops.extend(g.ops.iter().enumerate().map(|(i, o)| {
            let (kind, size) = match o.kind {
                GoalKind::Send => (OpKind::Send, o.size),
                GoalKind::Recv => (OpKind::Recv, o.size),
                GoalKind::Calc => (OpKind::Calc, o.size.saturating_mul(PS_PER_NS).min(PAST_LIMIT)),
            };
            Op {
                size,
                peer: o.peer,
                tag: o.tag,
                deps_left: 0,
                next_freed: NONE,
                done_first: starts[i],
                kind,
                cpu: o.cpu,
                nic: o.nic,
                state: OpState::Blocked,
            }
        }));
        p.max_cpu = g.ops.iter().map(|o| o.cpu).fold(p.max_cpu, u8::max);
        p.max_nic = g.ops.iter().map(|o| o.nic).fold(p.max_nic, u8::max);
        for &(a, _) in g.requires.iter().chain(&g.irequires) {
            p.ops[base + a as usize].deps_left += 1;
        }
        if p.on_start.is_none() && !g.irequires.is_empty() {
            p.on_start = Some(Csr::with_edgeless(base));
        }
        if let Some(c) = &mut p.on_start {
            c.push_rank(n, &g.irequires, &mut self.count);
        }
        // (its ops' indices and the next rank's `first` are u32s too)
        assert!(u32::try_from(p.ops.len()).is_ok(), "fewer than 2^32 ops");
        let first = base as u32;
        p.ranks.push(RankOps { first, freed_head: NONE, freed_tail: NONE, left: n as u32 });
        let mut roots = 0;
        for i in 0..n as u32 {
            if p.ops[base + i as usize].deps_left == 0 {
                p.free(r, base, i);
                roots += 1;
            }
        }
        p.max_initial_ops = p.max_initial_ops.max(roots);
    }

    /// The program, once every rank is pushed.
    pub fn finish(self) -> GoalProgram {
        assert_eq!(self.ranks(), self.p.num_ranks, "a rank block is missing");
        self.p
    }
}

/// Parses GOAL text straight into an engine program: each rank block is
/// converted as it is parsed and then dropped.
pub fn parse_goal_program(text: &str, file: &str) -> Result<GoalProgram, GoalError> {
    parse_goal_program_with(text, file, &mut |_| ())
}

/// As [`parse_goal_program`], telling `parsed_to` how far the text is parsed after each rank block.
pub fn parse_goal_program_with(text: &str, file: &str, parsed_to: &mut dyn FnMut(usize)) -> Result<GoalProgram, GoalError> {
    let mut sink = InOrder { builder: None, pending: Default::default(), parsed_to };
    parse_goal_into(text, file, &mut sink)?;
    debug_assert!(sink.pending.is_empty(), "every rank came, so none waits");
    Ok(sink.builder.expect("a complete schedule declares its ranks").finish())
}

/// Rank blocks on their way into a program, which takes them in rank order.
struct InOrder<'f> {
    builder: Option<GoalProgramBuilder>,
    /// Blocks that came before a rank below them, by rank.
    pending: std::collections::BTreeMap<u32, GoalRank>,
    parsed_to: &'f mut dyn FnMut(usize),
}

impl RankSink for InOrder<'_> {
    fn num_ranks(&mut self, num_ranks: u32, ranks_hint: usize, ops_hint: usize) {
        self.builder = Some(GoalProgramBuilder::new(num_ranks, ranks_hint, ops_hint));
    }

    fn rank(&mut self, id: u32, block: GoalRank, parsed_to: usize) {
        let b = self.builder.as_mut().expect("num_ranks precedes every rank block");
        if id != b.ranks() {
            self.pending.insert(id, block);
            return;
        }
        b.push_rank(&block);
        drop(block);
        while let Some(next) = self.pending.remove(&b.ranks()) {
            b.push_rank(&next);
        }
        (self.parsed_to)(parsed_to);
    }
}

impl Program for GoalProgram {
    fn num_ranks(&self) -> u32 {
        self.num_ranks
    }
    fn num_cpus(&self) -> u8 {
        self.max_cpu.saturating_add(1)
    }
    fn num_nics(&self) -> u8 {
        self.max_nic.saturating_add(1)
    }

    fn many_ready_ops(&self) -> bool {
        true
    }

    fn max_initial_ops(&self) -> u32 {
        self.max_initial_ops
    }

    #[inline]
    fn prefetch(&self, rank: u32) {
        crate::prefetch::prefetch(&self.ranks, rank as usize);
    }

    fn started(&mut self, rank: u32, id: u32) {
        let base = self.ranks[rank as usize].first as usize;
        self.ops[base + id as usize].state = OpState::Started;
        if let Some(c) = &self.on_start {
            let dependents = c.range(base + id as usize);
            self.count_down(rank, base, dependents, true);
        }
    }

    fn done(&mut self, rank: u32, id: u32) {
        let at = &mut self.ranks[rank as usize];
        at.left -= 1;
        let base = at.first as usize;
        self.ops[base + id as usize].state = OpState::Done;
        let dependents = self.done_range(base + id as usize);
        self.count_down(rank, base, dependents, false);
    }

    fn collect(&mut self, rank: u32, _now: Time, _cpu_free: Time, out: &mut Vec<ReadyOp>) -> Result<(), String> {
        let at = &mut self.ranks[rank as usize];
        let base = at.first as usize;
        let mut id = std::mem::replace(&mut at.freed_head, NONE);
        at.freed_tail = NONE;
        while id != NONE {
            let o = &self.ops[base + id as usize];
            out.push(ReadyOp { kind: o.kind, peer: o.peer, tag: o.tag, size: o.size, id, cpu: o.cpu, nic: o.nic, collective: false });
            id = o.next_freed;
        }
        Ok(())
    }

    fn is_finished(&self, rank: u32) -> bool {
        self.ranks[rank as usize].left == 0
    }

    fn describe_stuck(&self, rank: u32) -> String {
        let ops = &self.ops[self.rank_ops(rank)];
        let blocked = ops.iter().filter(|o| o.state == OpState::Blocked).count();
        let open: Vec<String> = ops
            .iter()
            .enumerate()
            .filter(|(_, o)| o.state == OpState::Started || o.state == OpState::Issued)
            .take(3)
            .map(|(i, _)| {
                let o = &ops[i];
                match o.kind {
                    OpKind::Send => format!("op {i} (send {} B to {})", o.size, o.peer),
                    OpKind::Recv => format!(
                        "op {i} (recv {} B from {})",
                        o.size,
                        if o.peer == super::ANY { "any".to_string() } else { o.peer.to_string() }
                    ),
                    OpKind::Calc | OpKind::Probe | OpKind::Mem => format!("op {i} (calc)"),
                }
            })
            .collect();
        format!(
            "{} of {} ops done, {blocked} never became ready{}",
            ops.len() - self.ranks[rank as usize].left as usize,
            ops.len(),
            if open.is_empty() { String::new() } else { format!("; unfinished: {}", open.join(", ")) }
        )
    }
}
