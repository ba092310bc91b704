//! Jobs that share a machine (`[[jobs]]`): each job's workload runs on its
//! own ranks, placed on nodes by its placement; the engine runs them as one
//! program whose ranks are the jobs' ranks one job after another, so their
//! messages meet on the network's shared links.

use crate::program::{OpKind, Program, ReadyOp, ANY};
use crate::rule::RuleError;
use crate::time::Time;
use crate::units::{secs, Seconds};
use crate::workloads::WorkloadSpec;
use schemars::JsonSchema;

use serde::{Deserialize, Serialize};

/// The figures the results give per job, each under [`figure_key`]: sim.rs
/// writes them (the links that held the job back reach the Python summary
/// with their key); no two jobs' may coincide.
pub mod figure {
    pub const RANKS: &str = "ranks";
    pub const MAKESPAN_S: &str = "makespan_s";
    pub const ALONE_S: &str = "alone_s";
    pub const SLOWDOWN: &str = "slowdown";
    pub const LINK_DELAY_S: &str = "link_delay_s";
    pub const LINK_DELAY_ALONE_S: &str = "link_delay_alone_s";
    pub const LINKS_HELD_BACK: &str = "links_held_back";
}

/// Every figure of [`figure`].
pub const FIGURES: [&str; 7] = [
    figure::RANKS,
    figure::MAKESPAN_S,
    figure::ALONE_S,
    figure::SLOWDOWN,
    figure::LINK_DELAY_S,
    figure::LINK_DELAY_ALONE_S,
    figure::LINKS_HELD_BACK,
];

/// The results' key of a job's figure: `job_<name>_<figure>`.
pub fn figure_key(job: &str, figure: &str) -> String {
    format!("job_{job}_{figure}")
}

/// Where a job's ranks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// The first free nodes, in order.
    #[default]
    Contiguous,
    /// Every other free node (two interleaved jobs alternate node by node).
    Interleaved,
    /// Free nodes drawn at random (from the scenario's seed).
    Random,
    /// The nodes listed in `nodes`.
    Nodes,
}

/// One `[[jobs]]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// Names the job in the results (default: job0, job1, …).
    #[serde(default)]
    pub name: String,
    /// When its ranks start.
    #[serde(default, rename = "start_s", with = "secs")]
    #[schemars(with = "Seconds")]
    pub start_ps: Time,
    #[serde(default)]
    pub placement: Placement,
    /// The nodes of `placement = "nodes"`, one per ranks_per_node ranks.
    #[serde(default)]
    pub nodes: Vec<u32>,
    /// Any workload: built in, a GOAL file or a trace (without `by_call`).
    pub workload: WorkloadSpec,
}

impl JobSpec {
    pub fn name(&self, i: usize) -> String {
        if self.name.is_empty() {
            format!("job{i}")
        } else {
            self.name.clone()
        }
    }

    /// Refuses what cannot apply to job `i`, without reading its files.
    pub fn check(&self, i: usize) -> Result<(), RuleError> {
        match &self.workload {
            // the replay's report (and so its attribution to calls) is the standalone run's
            WorkloadSpec::Trace(t) if t.by_call => Err(RuleError::new(
                format!("jobs[{i}].workload.by_call"),
                "a trace replayed as a job has no report of its calls: replay it alone for by_call",
            )),
            WorkloadSpec::Goal { .. } | WorkloadSpec::Trace(_) => Ok(()),
            built_in => built_in.shape().ranks.map(|_| ()).ok_or_else(|| no_rank_count(i)),
        }
    }

    /// Its rank count as written: a built-in workload's; None for a GOAL
    /// file or trace, whose count is in the file.
    pub fn written_ranks(&self) -> Option<u32> {
        self.workload.shape().ranks
    }

    /// Its rank count: a built-in workload's, or what its GOAL file
    /// declares or its trace replays (their headers are read, not their ops).
    pub fn ranks(&self, i: usize) -> Result<u32, RuleError> {
        match &self.workload {
            WorkloadSpec::Goal { path } => crate::program::goal_file::read_goal_ranks(std::path::Path::new(path))
                .map_err(|e| RuleError::new(format!("jobs[{i}].workload.path"), e.to_string())),
            WorkloadSpec::Trace(spec) => {
                let t = crate::trace::open(std::path::Path::new(&spec.dir))
                    .map_err(|e| RuleError::new(format!("jobs[{i}].workload.dir"), e.to_string()))?;
                // (the only failures: a grid that disagrees with scale_to or is too large)
                crate::trace::simulated_ranks(spec, &t).map_err(|e| RuleError::new(format!("jobs[{i}].workload.grid"), e.to_string()))
            }
            built_in => built_in.shape().ranks.ok_or_else(|| no_rank_count(i)),
        }
    }
}

fn no_rank_count(i: usize) -> RuleError {
    RuleError::new(format!("jobs[{i}].workload.ranks"), "a job needs its rank count")
}

/// Each rank's node for jobs of `ranks` ranks each, `per_node` ranks per
/// node, placed in order (a job's ranks fill its nodes in order).
pub fn place(jobs: &[JobSpec], ranks: &[u32], per_node: u32, seed: u64) -> Result<Vec<u32>, RuleError> {
    let need: Vec<u32> = ranks.iter().map(|&r| r.div_ceil(per_node.max(1))).collect();
    let listed = jobs.iter().flat_map(|j| j.nodes.iter().map(|&n| n + 1)).max().unwrap_or(0);
    let pool = need.iter().map(|&n| n as u64).sum::<u64>().max(listed as u64);
    if pool > u32::MAX as u64 {
        return Err(RuleError::new("jobs", format!("{pool} nodes are too many")));
    }
    let mut free = vec![true; pool as usize];
    let mut table = Vec::with_capacity(ranks.iter().map(|&r| r as usize).sum());
    for (i, j) in jobs.iter().enumerate() {
        let n = need[i] as usize;
        let nodes: Vec<u32> = match j.placement {
            Placement::Nodes => {
                if j.nodes.len() != n {
                    return Err(RuleError::new(
                        format!("jobs[{i}].nodes"),
                        format!("{} nodes listed, the job's {} ranks need {n}", j.nodes.len(), ranks[i]),
                    ));
                }
                for &node in &j.nodes[..n] {
                    if !std::mem::replace(&mut free[node as usize], false) {
                        return Err(RuleError::new(format!("jobs[{i}].nodes"), format!("node {node} is already taken")));
                    }
                }
                j.nodes[..n].to_vec()
            }
            policy => {
                let mut open: Vec<u32> = (0..pool as u32).filter(|&k| free[k as usize]).collect();
                match policy {
                    Placement::Interleaved => {
                        // every other free node first, then the rest
                        let every_other = open.iter().step_by(2).chain(open.iter().skip(1).step_by(2));
                        open = every_other.copied().collect();
                    }
                    Placement::Random => {
                        for k in (1..open.len()).rev() {
                            let r = crate::rng::hash(seed, 0x10B5, i as u64, k as u64) % (k as u64 + 1);
                            open.swap(k, r as usize);
                        }
                    }
                    _ => {}
                }
                if open.len() < n {
                    return Err(RuleError::new(format!("jobs[{i}].placement"), "not enough free nodes left"));
                }
                open.truncate(n);
                for &node in &open {
                    free[node as usize] = false;
                }
                open
            }
        };
        table.extend((0..ranks[i]).map(|r| nodes[(r / per_node.max(1)) as usize]));
    }
    Ok(table)
}

/// A job's program in the combined run, and where its ranks begin.
pub struct Part {
    pub first: u32,
    pub ranks: u32,
    pub start: Time,
    pub program: Box<dyn Program>,
}

/// A program that does nothing: a job left out of a run (the others' run alone).
pub struct Idle(pub u32);

impl Program for Idle {
    fn num_ranks(&self) -> u32 {
        self.0
    }
    fn started(&mut self, _: u32, _: u32) {}
    fn done(&mut self, _: u32, _: u32) {}
    fn collect(&mut self, _: u32, _: Time, _: Time, _: &mut Vec<ReadyOp>) -> Result<(), String> {
        Ok(())
    }
    fn is_finished(&self, _: u32) -> bool {
        true
    }
    fn describe_stuck(&self, _: u32) -> String {
        "nothing (a job left out of this run)".into()
    }
}

/// The op id of the wait before a job's start.
const START: u32 = u32::MAX;

/// The jobs as one program: rank r of the whole run is rank r − first of its job.
pub struct Jobs {
    parts: Vec<Part>,
    names: Vec<String>,
    /// Per rank: its part, and where it is in its wait for the job's start.
    part_of: Vec<u32>,
    begun: Vec<Start>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    Due,
    Waiting,
    Begun,
}

impl Jobs {
    pub fn new(parts: Vec<Part>, names: Vec<String>) -> Jobs {
        let part_of = parts.iter().enumerate().flat_map(|(i, p)| std::iter::repeat_n(i as u32, p.ranks as usize)).collect();
        let begun = parts
            .iter()
            .flat_map(|p| std::iter::repeat_n(if p.start == 0 { Start::Begun } else { Start::Due }, p.ranks as usize))
            .collect();
        Jobs { parts, names, part_of, begun }
    }

    #[inline]
    fn at(&self, rank: u32) -> (usize, u32) {
        let i = self.part_of[rank as usize] as usize;
        (i, rank - self.parts[i].first)
    }
}

impl Program for Jobs {
    fn num_ranks(&self) -> u32 {
        self.part_of.len() as u32
    }
    fn num_cpus(&self) -> u8 {
        self.parts.iter().map(|p| p.program.num_cpus()).max().unwrap_or(1)
    }
    fn num_nics(&self) -> u8 {
        self.parts.iter().map(|p| p.program.num_nics()).max().unwrap_or(1)
    }
    fn max_initial_ops(&self) -> u32 {
        self.parts.iter().map(|p| p.program.max_initial_ops()).max().unwrap_or(1).max(1)
    }
    fn many_ready_ops(&self) -> bool {
        self.parts.iter().any(|p| p.program.many_ready_ops())
    }
    fn started(&mut self, rank: u32, id: u32) {
        let (i, local) = self.at(rank);
        if self.begun[rank as usize] == Start::Begun {
            self.parts[i].program.started(local, id);
        }
    }
    fn done(&mut self, rank: u32, id: u32) {
        let (i, local) = self.at(rank);
        if self.begun[rank as usize] == Start::Waiting && id == START {
            self.begun[rank as usize] = Start::Begun;
        } else {
            self.parts[i].program.done(local, id);
        }
    }
    fn collect(&mut self, rank: u32, now: Time, cpu_free: Time, out: &mut Vec<ReadyOp>) -> Result<(), String> {
        let (i, local) = self.at(rank);
        let p = &mut self.parts[i];
        match self.begun[rank as usize] {
            Start::Due => {
                // the rank idles until its job starts (noise on it can delay the start)
                self.begun[rank as usize] = Start::Waiting;
                out.push(ReadyOp { kind: OpKind::Calc, peer: 0, tag: 0, size: p.start, id: START, cpu: 0, nic: 0, collective: false });
                return Ok(());
            }
            Start::Waiting => return Ok(()),
            Start::Begun => {}
        }
        let from = out.len();
        p.program.collect(local, now, cpu_free, out)?;
        for op in &mut out[from..] {
            if matches!(op.kind, OpKind::Send | OpKind::Recv) && op.peer != ANY {
                op.peer += p.first;
            }
        }
        Ok(())
    }
    fn is_finished(&self, rank: u32) -> bool {
        let (i, local) = self.at(rank);
        self.begun[rank as usize] == Start::Begun && self.parts[i].program.is_finished(local)
    }
    fn job_firsts(&self) -> Vec<u32> {
        self.parts.iter().map(|p| p.first).collect()
    }
    fn describe_stuck(&self, rank: u32) -> String {
        let (i, local) = self.at(rank);
        format!("job {} rank {local}: {}", self.names[i], self.parts[i].program.describe_stuck(local))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(placement: Placement, nodes: Vec<u32>) -> JobSpec {
        JobSpec { name: String::new(), start_ps: 0, placement, nodes, workload: WorkloadSpec::default() }
    }

    #[test]
    fn placements_share_out_the_nodes() {
        use Placement::*;
        // two jobs of 4 ranks, 2 per node: 2 nodes each
        let two = |a, b| place(&[job(a, vec![]), job(b, vec![])], &[4, 4], 2, 1).unwrap();
        assert_eq!(two(Contiguous, Contiguous), vec![0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(two(Interleaved, Interleaved), vec![0, 0, 2, 2, 1, 1, 3, 3]);
        let r = two(Random, Contiguous);
        let mut first: Vec<u32> = r[..4].to_vec();
        first.dedup();
        assert_eq!(first.len(), 2);
        assert!(r[4..].iter().all(|n| !first.contains(n)), "{r:?}");
        assert_eq!(r, two(Random, Contiguous), "seeded");
        // listed nodes, then the rest from what is left
        let t = place(&[job(Nodes, vec![3, 0]), job(Contiguous, vec![])], &[4, 4], 2, 1).unwrap();
        assert_eq!(t, vec![3, 3, 0, 0, 1, 1, 2, 2]);
        let e = place(&[job(Nodes, vec![1]), job(Nodes, vec![1])], &[2, 2], 2, 1).unwrap_err();
        assert_eq!(e.key, "jobs[1].nodes");
        let e = place(&[job(Nodes, vec![1])], &[4], 2, 1).unwrap_err();
        assert!(e.message.contains("need 2"), "{e}");
    }

    use crate::engine::SimError;
    use crate::sim::{estimate, run};

    const GOAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/dissemination_16.goal");
    const NET: &str = r#""network": {"ranks_per_node": 2, "topology": {"kind": "fat_tree", "radix": 8}}"#;

    fn alone(workload: &str) -> crate::sim::RunResult {
        run(&crate::scenario::config_of(&format!(r#"{{{NET}, "workload": {workload}}}"#)).unwrap(), None).unwrap()
    }

    fn jobs(jobs: &str) -> Result<crate::sim::RunResult, SimError> {
        let cfg = crate::scenario::config_of(&format!(r#"{{{NET}, "jobs": {jobs}}}"#)).map_err(|e| SimError::Invalid(e.to_string()))?;
        run(&cfg, None)
    }

    fn derived(r: &crate::sim::RunResult, name: &str) -> f64 {
        r.derived.iter().find(|(k, _)| k == name).unwrap_or_else(|| panic!("no {name}")).1
    }

    #[test]
    fn a_goal_file_runs_as_a_job_as_it_runs_alone() {
        let goal = format!(r#"{{"kind": "goal", "path": "{GOAL}"}}"#);
        let standalone = alone(&goal);
        let r = jobs(&format!(r#"[{{"name": "g", "workload": {goal}}}]"#)).unwrap();
        assert_eq!((r.ranks, r.makespan), (16, standalone.makespan));
        assert_eq!(derived(&r, "job_g_ranks"), 16.0);
        // beside a job of its own size, on the next nodes: its ranks come first
        let two = jobs(&format!(r#"[{{"name": "g", "workload": {goal}}}, {{"workload": {{"kind": "bsp", "ranks": 8}}}}]"#)).unwrap();
        assert_eq!(two.ranks, 24);
        assert_eq!(two.finish_times[..16], standalone.finish_times[..]);
        assert_eq!(derived(&two, "job_g_alone_s"), standalone.makespan as f64 / 1e12);
    }

    #[test]
    fn a_trace_replays_as_a_job_as_it_replays_alone() {
        let dir = std::env::temp_dir().join(format!("idlewave-job-trace-{}", std::process::id()));
        crate::trace::write_synthetic(&dir, 4, 3).unwrap();
        let dir = dir.display();
        for extra in ["", r#", "scale_to": 8"#] {
            let trace = format!(r#"{{"kind": "trace", "dir": "{dir}"{extra}}}"#);
            let standalone = alone(&trace);
            let r = jobs(&format!(r#"[{{"workload": {{"kind": "bsp", "ranks": 2}}}}, {{"name": "t", "workload": {trace}}}]"#)).unwrap();
            let ranks = standalone.ranks as usize;
            assert_eq!(r.ranks as usize, 2 + ranks);
            assert_eq!(derived(&r, "job_t_alone_s"), standalone.makespan as f64 / 1e12, "{extra}");
        }
        // by_call needs the standalone replay's report
        let e =
            crate::scenario::config_of(&format!(r#"{{"jobs": [{{"workload": {{"kind": "trace", "dir": "{dir}", "by_call": true}}}}]}}"#));
        assert_eq!(e.unwrap_err().key, "jobs[0].workload.by_call");
        std::fs::remove_dir_all(dir.to_string()).unwrap();
    }

    #[test]
    fn a_run_writes_each_job_s_figures_under_the_keys_the_names_are_checked_against() {
        let net = r#""network": {"G_s_per_byte": 1e-9, "topology": {"kind": "fat_tree", "radix": 4},
            "links": {"model": "flow", "bandwidth_bytes_per_s": 1e9}}"#;
        let bsp = r#"{"kind": "bsp", "ranks": 4, "iterations": 2, "distances": [2]}"#;
        let cfg = crate::scenario::config_of(&format!(r#"{{{net}, "jobs": [{{"name": "a", "workload": {bsp}}}, {{"workload": {bsp}}}]}}"#));
        let r = run(&cfg.unwrap(), None).unwrap();
        let mut written: Vec<String> = r.derived.iter().map(|(k, _)| k.clone()).filter(|k| k.starts_with("job_")).collect();
        written.extend(r.job_held_back_keys.iter().cloned());
        written.sort();
        let mut listed: Vec<String> = ["a", "job1"].iter().flat_map(|name| FIGURES.map(|f| figure_key(name, f))).collect();
        listed.sort();
        assert_eq!(written, listed);
    }

    #[test]
    fn listed_nodes_go_up_to_the_topology_s_nodes_not_the_rank_count() {
        // a radix-8 fat tree gains a level for node 20: 8 ranks, 2 per node, run there
        let bsp = r#"{"kind": "bsp", "ranks": 8, "iterations": 2, "distances": [2]}"#;
        let r = jobs(&format!(r#"[{{"name": "a", "placement": "nodes", "nodes": [0, 1, 2, 20], "workload": {bsp}}}]"#)).unwrap();
        assert_eq!(r.ranks, 8);
        // … and a job of one rank per node on nodes 0–6 and 20, as a dragonfly does
        let df = r#""network": {"topology": {"kind": "dragonfly", "nodes_per_router": 2, "routers_per_group": 2}}"#;
        let one = r#"{"kind": "bsp", "ranks": 8, "iterations": 2}"#;
        let nodes = "[0, 1, 2, 3, 4, 5, 6, 20]";
        let cfg =
            crate::scenario::config_of(&format!(r#"{{{df}, "jobs": [{{"placement": "nodes", "nodes": {nodes}, "workload": {one}}}]}}"#));
        assert_eq!(run(&cfg.unwrap(), None).unwrap().ranks, 8);
        // a torus has its nodes: one beyond them is refused at the job's key, whatever the rank count
        let torus = r#""network": {"ranks_per_node": 2, "topology": {"kind": "torus", "dims": [2, 2, 1]}}"#;
        let e = crate::scenario::config_of(&format!(
            r#"{{{torus}, "jobs": [{{"placement": "nodes", "nodes": [0, 1, 2, 4], "workload": {bsp}}}]}}"#
        ))
        .unwrap_err();
        assert_eq!(e.key, "jobs[0].nodes[3]", "{e}");
        assert!(e.to_string().contains("node 4 is not on a 2×2×1 torus of 4 nodes"), "{e}");
    }

    #[test]
    fn a_job_s_file_is_placed_at_its_key_and_counted_in_the_estimate() {
        let e = crate::scenario::config_of(r#"{"jobs": [{"workload": {"kind": "goal", "path": "/no/such.goal"}}]}"#).unwrap_err();
        assert_eq!(e.key, "jobs[0].workload.path");
        let e = crate::scenario::config_of(r#"{"jobs": [{"workload": {"kind": "trace", "dir": "/no/such/trace"}}]}"#).unwrap_err();
        assert_eq!(e.key, "jobs[0].workload.dir");
        let bsp = r#"{"kind": "bsp", "ranks": 16}"#;
        let one = crate::scenario::config_of(&format!(r#"{{"jobs": [{{"workload": {bsp}}}]}}"#)).unwrap();
        let cfg = crate::scenario::config_of(&format!(
            r#"{{"jobs": [{{"workload": {bsp}}}, {{"workload": {{"kind": "goal", "path": "{GOAL}"}}}}]}}"#
        ))
        .unwrap();
        let (e1, e2) = (estimate(&one).unwrap(), estimate(&cfg).unwrap());
        assert_eq!(e2.ranks, 32);
        // the schedule's text, 4 bytes per byte once loaded
        let size = std::fs::metadata(GOAL).unwrap().len() as u128;
        assert!(e2.bytes >= e1.bytes + 4 * size, "{e1:?} {e2:?}");
        let r = run(&cfg, None).unwrap();
        assert_eq!(r.estimated_bytes, Some(e2.bytes));
        let tight = crate::sim::Config { max_memory_bytes: Some(e2.bytes as u64 - 1), ..cfg };
        assert!(matches!(run(&tight, None), Err(SimError::MemoryLimit(_))));
    }
}
