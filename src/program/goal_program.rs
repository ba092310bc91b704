//! A GOAL schedule as an engine program: a per-rank dependency graph,
//! released exactly as LogGOPSim releases it (roots in schedule order; freed
//! ops in the order their dependency edges were declared).

use super::goal::{GoalKind, GoalSchedule};
use super::{OpKind, Program, ReadyOp};
use crate::time::{Time, PAST_LIMIT, PS_PER_NS};

/// Compressed adjacency: successors of op i are targets[offsets[i]..offsets[i+1]].
#[derive(Debug, Default)]
struct Csr {
    offsets: Vec<u32>,
    targets: Vec<u32>,
}

impl Csr {
    /// Edges (a, b) = "a depends on b", grouped by b, keeping declaration order.
    fn from_edges(n: usize, edges: &[(u32, u32)]) -> Self {
        let mut offsets = vec![0u32; n + 1];
        for &(_, b) in edges {
            offsets[b as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut targets = vec![0u32; edges.len()];
        for &(a, b) in edges {
            targets[fill[b as usize] as usize] = a;
            fill[b as usize] += 1;
        }
        Csr { offsets, targets }
    }

    fn of(&self, i: u32) -> &[u32] {
        &self.targets[self.offsets[i as usize] as usize..self.offsets[i as usize + 1] as usize]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum OpState {
    Blocked,
    Issued,
    Started,
    Done,
}

struct RankGraph {
    ops: Vec<ReadyOp>,
    deps_left: Vec<u32>,
    state: Vec<OpState>,
    on_done: Csr,
    on_start: Csr,
    freed: Vec<u32>,
    done_count: usize,
}

pub struct GoalProgram {
    num_ranks: u32,
    ranks: Vec<RankGraph>,
    max_cpu: u8,
    max_nic: u8,
}

impl GoalProgram {
    /// `calc` sizes in the schedule are nanoseconds.
    pub fn new(s: &GoalSchedule) -> Self {
        let ranks = s
            .ranks
            .iter()
            .map(|g| {
                let n = g.ops.len();
                let mut deps_left = vec![0u32; n];
                for &(a, _) in g.requires.iter().chain(&g.irequires) {
                    deps_left[a as usize] += 1;
                }
                let ops: Vec<ReadyOp> = g
                    .ops
                    .iter()
                    .enumerate()
                    .map(|(i, o)| {
                        let (kind, size) = match o.kind {
                            GoalKind::Send => (OpKind::Send, o.size),
                            GoalKind::Recv => (OpKind::Recv, o.size),
                            GoalKind::Calc => (OpKind::Calc, o.size.saturating_mul(PS_PER_NS).min(PAST_LIMIT)),
                        };
                        ReadyOp { kind, peer: o.peer, tag: o.tag, size, id: i as u32, cpu: o.cpu, nic: o.nic }
                    })
                    .collect();
                let freed: Vec<u32> = (0..n as u32).filter(|&i| deps_left[i as usize] == 0).collect();
                let mut state = vec![OpState::Blocked; n];
                for &i in &freed {
                    state[i as usize] = OpState::Issued;
                }
                RankGraph {
                    ops,
                    deps_left,
                    state,
                    on_done: Csr::from_edges(n, &g.requires),
                    on_start: Csr::from_edges(n, &g.irequires),
                    freed,
                    done_count: 0,
                }
            })
            .collect();
        GoalProgram { num_ranks: s.num_ranks, ranks, max_cpu: s.max_cpu(), max_nic: s.max_nic() }
    }

    /// Counts down the dependents of `id` (start- or done-dependents).
    fn release(g: &mut RankGraph, on_start: bool, id: u32) {
        let csr = if on_start { &g.on_start } else { &g.on_done };
        for &a in csr.of(id) {
            let left = &mut g.deps_left[a as usize];
            *left -= 1;
            if *left == 0 {
                g.state[a as usize] = OpState::Issued;
                g.freed.push(a);
            }
        }
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
        self.ranks.iter().map(|g| g.freed.len() as u32).max().unwrap_or(0)
    }

    fn started(&mut self, rank: u32, id: u32) {
        let g = &mut self.ranks[rank as usize];
        g.state[id as usize] = OpState::Started;
        Self::release(g, true, id);
    }

    fn done(&mut self, rank: u32, id: u32) {
        let g = &mut self.ranks[rank as usize];
        g.state[id as usize] = OpState::Done;
        g.done_count += 1;
        Self::release(g, false, id);
    }

    fn collect(&mut self, rank: u32, _now: Time, _cpu_free: Time, out: &mut Vec<ReadyOp>) -> Result<(), String> {
        let g = &mut self.ranks[rank as usize];
        out.extend(g.freed.drain(..).map(|i| g.ops[i as usize]));
        Ok(())
    }

    fn is_finished(&self, rank: u32) -> bool {
        let g = &self.ranks[rank as usize];
        g.done_count == g.ops.len()
    }

    fn describe_stuck(&self, rank: u32) -> String {
        let g = &self.ranks[rank as usize];
        let blocked = g.state.iter().filter(|&&s| s == OpState::Blocked).count();
        let open: Vec<String> = g
            .state
            .iter()
            .enumerate()
            .filter(|(_, &s)| s == OpState::Started || s == OpState::Issued)
            .take(3)
            .map(|(i, _)| {
                let o = &g.ops[i];
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
            g.done_count,
            g.ops.len(),
            if open.is_empty() { String::new() } else { format!("; unfinished: {}", open.join(", ")) }
        )
    }
}
