//! A trace as an engine program, generated lazily: each rank keeps a window
//! of the ops converted but not yet done, with their dependency counts, and
//! converts further records only when its newest op has become ready.
//!
//! This releases ops exactly as the materialised GOAL schedule would
//! ([`crate::program::goal_program::GoalProgram`]): the converter never
//! makes an op ready before the op it follows in the trace (each op either
//! follows its predecessor or shares its dependencies), so an op converted
//! when its predecessor becomes ready takes the same place in the engine's
//! queue as it would have had all along. A test checks the replay against
//! the exported GOAL file, time for time.

use super::convert::{NewOp, OpRef, RankConv, Shared, Sink};
use super::TraceError;
use crate::program::goal::GoalKind;
use crate::program::{OpKind, Program, ReadyOp};
use crate::time::{Time, PAST_LIMIT, PS_PER_NS};

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
enum State {
    Blocked,
    Ready,
    Started,
    Done,
}

/// 48 bytes: the op's id is its slot, and a trace's ops all run on CPU and NIC 0.
#[derive(Debug, Clone, Copy)]
struct Node {
    seq: u64,
    size: u64,
    peer: u32,
    tag: u32,
    kind: OpKind,
    state: State,
    deps_left: u32,
    /// Linked lists (in `edges`) of the ops waiting for this one to start / be done.
    on_start: (u32, u32),
    on_done: (u32, u32),
}

#[derive(Debug, Clone, Copy)]
struct Edge {
    target: u32,
    next: u32,
}

/// One rank's live ops.
#[derive(Debug)]
pub struct Window {
    nodes: Vec<Node>,
    edges: Vec<Edge>,
    /// Heads of the free slots' lists, threaded through the slots
    /// themselves (a node's `deps_left`, an edge's `next`) so that a window
    /// costs no free-list buffers: an extrapolation keeps millions.
    free_node: u32,
    free_edge: u32,
    next_seq: u64,
    newest: Option<OpRef>,
    ready: Vec<u32>,
    live: u32,
}

impl Default for Window {
    fn default() -> Self {
        Window {
            nodes: Vec::new(),
            edges: Vec::new(),
            free_node: NIL,
            free_edge: NIL,
            next_seq: 0,
            newest: None,
            ready: Vec::new(),
            live: 0,
        }
    }
}

impl Window {
    fn node(&self, r: OpRef) -> Option<&Node> {
        self.nodes.get(r.slot as usize).filter(|n| n.seq == r.seq)
    }

    /// Appends `target` to a list (kept in the order the dependents were converted).
    fn push_edge(&mut self, list: (u32, u32), target: u32) -> (u32, u32) {
        let i = put(&mut self.edges, &mut self.free_edge, Edge { target, next: NIL }, |e| e.next);
        if list.1 == NIL {
            (i, i)
        } else {
            self.edges[list.1 as usize].next = i;
            (list.0, i)
        }
    }

    /// Counts down the dependents on a list, and frees the list.
    fn release(&mut self, list: (u32, u32)) {
        let mut e = list.0;
        while e != NIL {
            let Edge { target, next } = self.edges[e as usize];
            let n = &mut self.nodes[target as usize];
            n.deps_left -= 1;
            if n.deps_left == 0 {
                n.state = State::Ready;
                self.ready.push(target);
            }
            self.edges[e as usize].next = self.free_edge;
            self.free_edge = e;
            e = next;
        }
    }

    fn newest_blocked(&self) -> bool {
        self.newest.and_then(|r| self.node(r)).is_some_and(|n| n.state == State::Blocked)
    }

    fn retire(&mut self, slot: u32) {
        let n = &mut self.nodes[slot as usize];
        n.seq = u64::MAX;
        // done and started: no edge leads to it any more, so the count is free to link
        n.deps_left = self.free_node;
        self.free_node = slot;
        self.live -= 1;
    }

    pub fn live(&self) -> u32 {
        self.live
    }
}

/// Stores `item` in the free slot `free` heads (taking the next free one
/// from the slot's `link`), or in a new slot; returns its index.
fn put<T>(items: &mut Vec<T>, free: &mut u32, item: T, link: impl Fn(&T) -> u32) -> u32 {
    if *free == NIL {
        items.push(item);
        return (items.len() - 1) as u32;
    }
    let i = *free;
    *free = link(&items[i as usize]);
    items[i as usize] = item;
    i
}

impl Sink for Window {
    fn add(&mut self, new: NewOp, requires: &[OpRef], irequires: Option<OpRef>) -> OpRef {
        let seq = self.next_seq;
        self.next_seq += 1;
        let (kind, size) = match new.kind {
            GoalKind::Send => (OpKind::Send, new.size),
            GoalKind::Recv => (OpKind::Recv, new.size),
            GoalKind::Calc => (OpKind::Calc, new.size.saturating_mul(PS_PER_NS).min(PAST_LIMIT)),
        };
        let node = Node {
            seq,
            size,
            peer: new.peer,
            tag: new.tag,
            kind,
            state: State::Blocked,
            deps_left: 0,
            on_start: (NIL, NIL),
            on_done: (NIL, NIL),
        };
        let slot = put(&mut self.nodes, &mut self.free_node, node, |n| n.deps_left);
        self.live += 1;
        let mut deps = 0;
        for &d in requires {
            if self.node(d).is_some_and(|n| n.state != State::Done) {
                let list = self.nodes[d.slot as usize].on_done;
                self.nodes[d.slot as usize].on_done = self.push_edge(list, slot);
                deps += 1;
            }
        }
        if let Some(d) = irequires {
            if self.node(d).is_some_and(|n| n.state < State::Started) {
                let list = self.nodes[d.slot as usize].on_start;
                self.nodes[d.slot as usize].on_start = self.push_edge(list, slot);
                deps += 1;
            }
        }
        let n = &mut self.nodes[slot as usize];
        n.deps_left = deps;
        if deps == 0 {
            n.state = State::Ready;
            self.ready.push(slot);
        }
        let r = OpRef { slot, seq };
        self.newest = Some(r);
        r
    }
}

/// The engine program of a trace replay.
pub struct TraceProgram {
    pub shared: Shared,
    pub convs: Vec<RankConv>,
    windows: Vec<Window>,
    error: Option<TraceError>,
    max_initial: u32,
}

impl TraceProgram {
    pub fn new(shared: Shared, convs: Vec<RankConv>) -> Result<Self, TraceError> {
        let windows = convs.iter().map(|_| Window::default()).collect();
        let mut p = TraceProgram { shared, convs, windows, error: None, max_initial: 0 };
        for r in 0..p.convs.len() {
            p.pump(r as u32)?;
            p.max_initial = p.max_initial.max(p.windows[r].ready.len() as u32);
        }
        Ok(p)
    }

    /// Converts records of `rank` while its newest op is not blocked.
    fn pump(&mut self, rank: u32) -> Result<(), TraceError> {
        let (conv, win) = (&mut self.convs[rank as usize], &mut self.windows[rank as usize]);
        while !conv.finished && !win.newest_blocked() {
            conv.advance(&mut self.shared, win)?;
        }
        Ok(())
    }

    fn pump_or_keep_error(&mut self, rank: u32) {
        if self.error.is_none() && self.windows[rank as usize].newest.is_some() && !self.windows[rank as usize].newest_blocked() {
            if let Err(e) = self.pump(rank) {
                self.error = Some(e);
            }
        }
    }

    /// Ops converted but not done, over all ranks (for the memory report).
    pub fn live_ops(&self) -> u64 {
        self.windows.iter().map(|w| w.live as u64).sum()
    }
}

impl Program for TraceProgram {
    fn num_ranks(&self) -> u32 {
        self.convs.len() as u32
    }

    fn max_initial_ops(&self) -> u32 {
        self.max_initial
    }

    fn started(&mut self, rank: u32, id: u32) {
        let w = &mut self.windows[rank as usize];
        let n = &mut w.nodes[id as usize];
        n.state = State::Started;
        let list = std::mem::replace(&mut n.on_start, (NIL, NIL));
        w.release(list);
        self.pump_or_keep_error(rank);
    }

    fn done(&mut self, rank: u32, id: u32) {
        let w = &mut self.windows[rank as usize];
        let n = &mut w.nodes[id as usize];
        let was_started = n.state == State::Started;
        n.state = State::Done;
        let list = std::mem::replace(&mut n.on_done, (NIL, NIL));
        w.release(list);
        if was_started {
            w.retire(id);
        }
        self.pump_or_keep_error(rank);
    }

    fn collect(&mut self, rank: u32, _now: Time, _cpu_free: Time, out: &mut Vec<ReadyOp>) -> Result<(), String> {
        if let Some(e) = self.error.take() {
            // as text: the engine's Program trait has no error type of its own yet
            return Err(e.to_string());
        }
        let w = &mut self.windows[rank as usize];
        let stats = &mut self.convs[rank as usize].stats;
        for slot in w.ready.drain(..) {
            let n = &mut w.nodes[slot as usize];
            n.state = State::Ready;
            if n.kind == OpKind::Send {
                stats.messages += 1;
                stats.bytes += n.size;
            }
            let collective = n.kind.is_message() && self.shared.is_collective_tag(n.tag);
            out.push(ReadyOp { kind: n.kind, peer: n.peer, tag: n.tag, size: n.size, id: slot, cpu: 0, nic: 0, collective });
        }
        Ok(())
    }

    fn is_finished(&self, rank: u32) -> bool {
        self.convs[rank as usize].finished && self.windows[rank as usize].live == 0
    }

    fn describe_stuck(&self, rank: u32) -> String {
        let w = &self.windows[rank as usize];
        let open: Vec<String> = w
            .nodes
            .iter()
            .filter(|n| n.seq != u64::MAX && n.state != State::Done)
            .take(3)
            .map(|n| match n.kind {
                OpKind::Send => format!("send {} B to {} ({:?})", n.size, n.peer, n.state),
                OpKind::Recv => format!("recv {} B from {} ({:?})", n.size, n.peer, n.state),
                _ => format!("calc ({:?})", n.state),
            })
            .collect();
        format!("{} ops open (at {}): {}", w.live, self.convs[rank as usize].position(), open.join(", "))
    }
}

#[cfg(test)]
mod tests {
    /// An extrapolation keeps about ten live ops per simulated rank.
    #[test]
    fn a_live_op_takes_48_bytes() {
        assert_eq!(std::mem::size_of::<super::Node>(), 48);
    }
}
