//! The platform's mutable state during a run: each node's injection link
//! (the max-rate model), the latency regimes' chains, the traffic counters
//! (per node and per link between switches), and the memory bandwidth
//! domains with their running memory-bound computations.
//!
//! Memory contention: a memory-bound computation moves `bytes` at
//! min(core bandwidth, socket bandwidth / active ranks on its socket).
//! Whenever the set of active ranks on a socket changes, every one of them
//! gets its remaining bytes updated and a new completion event (older ones
//! are recognised as stale by a version number) — a cost proportional to
//! the socket's ranks, not to all ranks. While a rank's computation runs
//! its CPU clock holds `MEM_BUSY`; events that need that CPU are parked on
//! the socket and released when the computation ends.

use super::probe::{Probe, Wait, OTHER};
use super::{Engine, EvKind, Event, SimError};
use crate::network::{Links, MemoryDomains, RankCursor, RegimeCursor, Topology, OTHER_NODE};
use crate::program::Program;
use crate::time::{Time, PAST_LIMIT};

/// The routes a run's messages would take as flows, counted before the run
/// (for the memory estimate: a flow's state grows with its route). Built
/// from the platform alone: nothing per rank or per link.
pub struct FlowRoutes<'a> {
    net: &'a crate::network::Network,
    routes: crate::network::Routes,
    ranks: u32,
}

impl<'a> FlowRoutes<'a> {
    /// Pairs of ranks [`Self::typical`] follows.
    const PAIRS: u64 = 256;

    /// The routes of a run of `ranks` ranks; None without flows.
    pub fn new(net: &'a crate::network::Network, ranks: u32) -> Option<FlowRoutes<'a>> {
        let pl = net.platform.as_deref().filter(|pl| pl.links.flow)?;
        let (nic, node) = Fabric::link_rates(net);
        let routes = crate::network::Routes::new(pl.links, &pl.topology, ranks, Fabric::nodes(pl, ranks), nic, node, pl.seed);
        Some(FlowRoutes { net, routes, ranks })
    }

    /// Links a message of `bytes` bytes from rank `src` to `dst` crosses as a
    /// flow (0: it is not one, its ranks on one node or it one byte).
    pub fn links(&self, src: u32, dst: u32, bytes: u64) -> u32 {
        if bytes <= 1 || src >= self.ranks || dst >= self.ranks || self.net.class(src, dst) != OTHER_NODE {
            return 0;
        }
        let pl = self.net.platform.as_deref().expect("flows imply a platform");
        let mut n = 0;
        self.routes.route((src, dst), (pl.node(src), pl.node(dst)), crate::rng::hash(src as u64, dst as u64, 0, 0), |_| 0, |_| n += 1);
        n
    }

    /// The mean links of a message between ranks picked at random: for a
    /// program whose partners are not known before it is read (a GOAL file, a trace).
    pub fn typical(&self) -> f64 {
        if self.ranks < 2 {
            return 0.0;
        }
        let r = |i: u64, k: u64| (crate::rng::hash(0xE571_0A7E, i, k, 0) % self.ranks as u64) as u32;
        (0..Self::PAIRS).map(|i| self.links(r(i, 0), r(i, 1), 2) as f64).sum::<f64>() / Self::PAIRS as f64
    }
}

/// A CPU clock value meaning "in a memory-bound computation, end unknown".
pub const MEM_BUSY: Time = Time::MAX;

#[derive(Default)]
pub struct Fabric {
    /// When each node's injection link is next free (max-rate model).
    inject_free: Vec<Time>,
    cursors: Vec<RegimeCursor>,
    /// Per regime with a chain per rank (or per link): each rank's (link's)
    /// cursor, else empty.
    rank_cursors: Vec<Vec<RankCursor>>,
    /// Per node: bytes sent to and received from other nodes (what its
    /// NICs carry), with a platform.
    pub node_bytes_out: Vec<u64>,
    pub node_bytes_in: Vec<u64>,
    /// Bytes per slot of the links between switches (see [`Links`]).
    pub links: Links,
    pub link_bytes: Vec<u64>,
    memory: Option<Memory>,
    /// Shared links (`network.links.model = "flow"`).
    pub(super) flows: Option<Box<super::flows::Flows>>,
}

struct Memory {
    bw: MemoryDomains,
    domains: Vec<Domain>,
}

#[derive(Default)]
struct Domain {
    active: Vec<Active>,
    /// When `remaining` was last brought up to date.
    last: Time,
    rate: f64,
    /// Events waiting for the CPU of a rank of this socket.
    parked: Vec<Event>,
    /// Source of versions: unique per scheduled end on this socket, so a
    /// stale end of an earlier computation never matches a later one.
    versions: u64,
}

struct Active {
    rank: u32,
    id: u32,
    cpu: u8,
    start: Time,
    remaining: f64,
    version: u64,
}

impl Fabric {
    /// Refuses latency chains per link on a network where no message crosses one.
    pub fn check(&self, net: &crate::network::Network) -> Result<(), crate::rule::RuleError> {
        let Some(pl) = &net.platform else { return Ok(()) };
        match pl.regimes.iter().position(|r| r.per_link) {
            Some(i) if !self.links.crossable() => Err(crate::rule::RuleError::new(
                format!("network.regimes[{i}].scope"),
                "\"link\" has no link to follow: every node of this run hangs off one switch (or dragonfly group), so no \
                 message crosses a link between switches",
            )),
            _ => Ok(()),
        }
    }

    pub fn new(net: &crate::network::Network, ranks: u32) -> Fabric {
        let Some(pl) = &net.platform else {
            // plain LogGOPS with nodes: only the traffic counters
            let nodes = if net.ranks_per_node > 1 { ranks.div_ceil(net.ranks_per_node) as usize } else { 0 };
            return Fabric { node_bytes_out: vec![0; nodes], node_bytes_in: vec![0; nodes], ..Fabric::default() };
        };
        let nodes = (0..ranks).map(|r| pl.node(r) + 1).max().unwrap_or(0) as usize;
        let links = Links::new(&pl.topology, nodes as u32);
        let slots = links.slots();
        Fabric {
            link_bytes: vec![0; links.slots()],
            links,
            inject_free: if pl.node_ps_per_byte > 0.0 { vec![0; nodes] } else { Vec::new() },
            cursors: vec![RegimeCursor::default(); pl.regimes.len()],
            rank_cursors: pl
                .regimes
                .iter()
                .map(|r| match (r.per_rank, r.per_link) {
                    (true, _) => vec![RankCursor::default(); ranks as usize],
                    (_, true) => vec![RankCursor::default(); slots],
                    _ => Vec::new(),
                })
                .collect(),
            node_bytes_out: vec![0; nodes],
            node_bytes_in: vec![0; nodes],
            memory: pl.memory.map(|bw| Memory { bw, domains: (0..pl.sockets(ranks)).map(|_| Domain::default()).collect() }),
            flows: pl.links.flow.then(|| {
                let (nic, node) = Self::link_rates(net);
                let routes = crate::network::Routes::new(pl.links, &pl.topology, ranks, nodes as u32, nic, node, pl.seed);
                Box::new(super::flows::Flows::new(routes))
            }),
        }
    }

    /// A NIC's and a node's rate in bytes per ps as shared links (0: not a link):
    /// 1/G between nodes (times the ports), and the node's bandwidth.
    fn link_rates(net: &crate::network::Network) -> (f64, f64) {
        let pl = net.platform.as_deref().expect("links need a platform");
        let g = pl.inter_node.eager.big_g_ps;
        let nic = if g > 0.0 { net.nic_ports.max(1) as f64 / g } else { 0.0 };
        (nic, if pl.node_ps_per_byte > 0.0 { 1.0 / pl.node_ps_per_byte } else { 0.0 })
    }

    /// Nodes a run of `ranks` ranks spans, from the mapping (without its ranks' state).
    fn nodes(pl: &crate::network::Platform, ranks: u32) -> u32 {
        match &pl.mapping {
            crate::network::Mapping::Block => ranks.div_ceil(pl.ranks_per_node.max(1)),
            crate::network::Mapping::RoundRobin { nodes } => *nodes,
            crate::network::Mapping::Table { nodes } => nodes.iter().copied().max().map_or(0, |m| m + 1),
        }
    }

    /// Bytes of the shared links' state for a run of `ranks` ranks (0
    /// without flows): the links' state, and per rank its flows in flight,
    /// whose routes cross `links` links together ([`FlowRoutes`] counts them).
    pub fn flow_bytes(net: &crate::network::Network, ranks: u32, links: f64) -> u128 {
        let Some(pl) = net.platform.as_deref().filter(|pl| pl.links.flow) else { return 0 };
        let (nic, node) = Self::link_rates(net);
        crate::network::Routes::slot_count(pl.links, &pl.topology, ranks, Self::nodes(pl, ranks), nic > 0.0, node > 0.0)
            * super::flows::Flows::bytes_per_slot()
            + ranks as u128 * super::flows::Flows::bytes_in_flight_per_rank(links)
    }

    /// Bytes per link a flow's route crosses (see [`Self::flow_bytes`]).
    pub fn flow_bytes_per_link() -> f64 {
        super::flows::Flows::BYTES_PER_LINK
    }

    /// At most this many bytes per rank (a node or a socket has at least
    /// one rank), for the memory estimate made before anything is allocated.
    pub fn bytes_per_rank_bound(net: &crate::network::Network) -> u128 {
        // the per-node traffic counters (a node has at least one rank), and a
        // fat tree's or dragonfly's link bundles: at most 2 per node
        let counters = if net.platform.is_some() || net.ranks_per_node > 1 { 16 } else { 0 };
        let counters = counters
            + match net.platform.as_ref().map(|p| &p.topology) {
                Some(Topology::FatTree { .. } | Topology::Dragonfly { .. }) => 16,
                _ => 0,
            };
        counters
            + net.platform.as_ref().map_or(0, |pl| {
                let inject = if pl.node_ps_per_byte > 0.0 { 8 } else { 0 };
                // a chain per rank, or per link of a fat tree or dragonfly (at most
                // 2 per node; a torus's are in fixed_bytes)
                let bundles = if matches!(pl.topology, Topology::Torus { .. }) { 0 } else { 2 };
                let chains: usize = pl
                    .regimes
                    .iter()
                    .map(|r| {
                        if r.per_rank {
                            1
                        } else if r.per_link {
                            bundles
                        } else {
                            0
                        }
                    })
                    .sum();
                let chains = chains * std::mem::size_of::<RankCursor>();
                inject + chains as u128 + if pl.memory.is_some() { std::mem::size_of::<Domain>() as u128 } else { 0 }
            })
    }

    /// Bytes whatever the ranks: a torus's link counters, 6 per node of the torus.
    /// A torus's link chains too, for regimes with `per_link`.
    pub fn fixed_bytes(net: &crate::network::Network) -> u128 {
        let Some(pl) = net.platform.as_ref() else { return 0 };
        match pl.topology {
            Topology::Torus { dims } => {
                let chains = pl.regimes.iter().filter(|r| r.per_link).count() as u128;
                (8 + chains * std::mem::size_of::<RankCursor>() as u128) * 6 * dims.iter().map(|&d| d as u128).product::<u128>()
            }
            _ => 0,
        }
    }

    /// Asks for a flow's state (`links`: then its links', once its state has arrived).
    #[inline]
    pub(super) fn prefetch_flow(&self, id: u32, links: bool) {
        if let Some(f) = &self.flows {
            f.prefetch(id, links);
        }
    }

    /// Asks for the links a message from `src` to `dst` (other nodes) will cross as a flow.
    #[inline]
    pub(super) fn prefetch_route(&self, net: &crate::network::Network, src: u32, dst: u32) {
        if let (Some(f), Some(pl)) = (&self.flows, net.platform.as_deref()) {
            f.prefetch_route((src, dst), (pl.node(src), pl.node(dst)));
        }
    }

    pub fn bytes(&self) -> usize {
        (self.inject_free.capacity() + self.node_bytes_out.capacity() + self.node_bytes_in.capacity() + self.link_bytes.capacity()) * 8
            + self.rank_cursors.iter().map(|c| c.capacity() * std::mem::size_of::<RankCursor>()).sum::<usize>()
            + self.memory.as_ref().map_or(0, |m| m.domains.capacity() * std::mem::size_of::<Domain>())
            + self.flows.as_ref().map_or(0, |f| f.bytes())
    }
}

impl<P: Program, O: Probe> Engine<P, O> {
    /// Counts a message between nodes of plain LogGOPS (block mapping).
    #[inline]
    pub(super) fn count_plain(&mut self, src: u32, dst: u32, size: u64) {
        let rpn = self.view.net.ranks_per_node.max(1);
        if !self.fabric.node_bytes_out.is_empty() && src / rpn != dst / rpn {
            self.fabric.node_bytes_out[(src / rpn) as usize] += size;
            self.fabric.node_bytes_in[(dst / rpn) as usize] += size;
        }
    }
}

/// Random stream of the per-rank regime chains' seeds.
const REGIME_RANK: u64 = 0x5EC3_0000;
/// Random stream of the per-link chains' seeds.
const REGIME_LINK: u64 = 0x5EC4_0000;

impl<P: Program, O: Probe> Engine<P, O> {
    /// When a message leaving `src` at `depart` (its send overhead done)
    /// reaches `dst`, given the link class's latency `l`.
    pub(super) fn arrival(&mut self, src: u32, dst: u32, size: u64, depart: Time, l: Time) -> Time {
        let Some(pl) = self.view.net.platform.as_deref() else {
            self.count_plain(src, dst, size);
            self.tell(|o, v| o.flew(v, (src, dst), l, 0, 0));
            return depart + l;
        };
        let class = pl.class(src, dst);
        let mut latency = l;
        for (i, r) in pl.regimes.iter().enumerate() {
            if r.classes >> class & 1 == 1 {
                let seed = crate::rng::mix64(pl.seed ^ i as u64);
                let state = if r.per_link {
                    if class != OTHER_NODE {
                        r.initial
                    } else {
                        // the slowest of the crossed links' chains, each seeded apart
                        let (mut slowest, Fabric { links, rank_cursors, .. }) = (None, &mut self.fabric);
                        links.route(pl.node(src), pl.node(dst), |s| {
                            let st = rank_cursors[i][s].state_at(r, crate::rng::hash(seed, REGIME_LINK, s as u64, 0), depart);
                            slowest = Some(match slowest {
                                Some(b) if !r.slower(st, b) => b,
                                _ => st,
                            });
                        });
                        slowest.unwrap_or(r.initial)
                    }
                } else {
                    match self.fabric.rank_cursors[i].get_mut(src as usize) {
                        // the sender's own chain, seeded apart from every other rank's
                        Some(c) => c.state_at(r, crate::rng::hash(seed, REGIME_RANK, src as u64, 0), depart),
                        None => self.fabric.cursors[i].state_at(r, seed, depart),
                    }
                };
                let key = crate::rng::hash(src as u64, dst as u64, depart, size);
                latency = r.apply(state, latency, seed, key);
            }
        }
        if class != OTHER_NODE {
            self.tell(|o, v| o.flew(v, (src, dst), latency, 0, 0));
            return depart + latency;
        }
        let (ns, nd) = (pl.node(src), pl.node(dst));
        self.fabric.node_bytes_out[ns as usize] += size;
        self.fabric.node_bytes_in[nd as usize] += size;
        if !self.fabric.link_bytes.is_empty() {
            let Fabric { links, link_bytes, .. } = &mut self.fabric;
            links.route(ns, nd, |s| link_bytes[s] += size);
        }
        let hops = pl.topology.hops(ns, nd);
        let on_path = pl.path_latency(hops, size);
        let hop_latency = pl.hop_latency_ps.saturating_mul(hops as Time).min(on_path);
        let mut start = depart;
        if let (Some(free), None) = (self.fabric.inject_free.get_mut(ns as usize), &self.fabric.flows) {
            // The node's off-node bytes share one link of 1/node_ps_per_byte.
            start = start.max(*free);
            // (a link too slow for the run is cut past the limit, where the run stops, never wrapping)
            let busy = (size as f64 * pl.node_ps_per_byte).round().min(PAST_LIMIT as f64) as Time;
            *free = (start + busy).min(PAST_LIMIT);
        }
        // stalls and the wait for the node's link are the platform's penalties
        let extra = on_path - hop_latency + (start - depart);
        self.tell(|o, v| o.flew(v, (src, dst), latency, hop_latency, extra));
        start.saturating_add(latency).saturating_add(on_path).min(PAST_LIMIT)
    }

    /// Starts a memory-bound computation of `ev.size` bytes on its rank's socket.
    pub(super) fn on_mem(&mut self, ev: Event) {
        let c = self.o(ev.rank, ev.cpu());
        if self.view.clocks[c] > ev.time {
            self.defer(ev, self.view.clocks[c], [c, c]);
            return;
        }
        let wait = Wait { rank: ev.rank, before: self.view.clocks[c], at: ev.time, why: OTHER, on: ev.rank };
        self.tell_wait(wait, |o, v, w| o.mem_started(v, w, ev.cpu(), ev.size));
        let d = self.view.net.platform.as_deref().expect("checked when issued").socket(ev.rank) as usize;
        let mem = self.fabric.memory.as_mut().expect("checked when issued");
        self.view.clocks[c] = MEM_BUSY;
        self.view.program.started(ev.rank, ev.id);
        self.touched.push(ev.rank);
        let dom = &mut mem.domains[d];
        advance(dom, ev.time);
        dom.active.push(Active { rank: ev.rank, id: ev.id, cpu: ev.cpu(), start: ev.time, remaining: ev.size as f64, version: 0 });
        self.reschedule(d);
    }

    pub(super) fn has_memory(&self) -> bool {
        self.fabric.memory.is_some()
    }

    /// A memory-bound computation's scheduled end (ignored if stale).
    pub(super) fn on_mem_done(&mut self, ev: Event) {
        let mem = self.fabric.memory.as_mut().expect("memory events imply domains");
        let core = mem.bw.core_bytes_per_ps;
        let d = self.view.net.platform.as_deref().expect("memory implies a platform").socket(ev.rank) as usize;
        let dom = &mut mem.domains[d];
        let version = (ev.peer as u64) << 32 | ev.tag as u64;
        let Some(i) = dom.active.iter().position(|a| a.rank == ev.rank && a.version == version) else { return };
        advance(dom, ev.time);
        let a = dom.active.swap_remove(i);
        let mut released: Vec<Event> = Vec::new();
        dom.parked.retain(|e| {
            if e.rank == a.rank {
                released.push(*e);
                false
            } else {
                true
            }
        });
        let c = self.o(a.rank, a.cpu);
        self.view.clocks[c] = self.view.noise.cpu_end(a.rank, a.start, ev.time - a.start);
        self.tell(|o, v| o.mem_finished(v, (a.rank, a.cpu, c), (a.start, ev.time), core));
        self.view.program.done(a.rank, a.id);
        self.touched.push(a.rank);
        self.events += 1;
        for mut e in released {
            e.time = self.view.clocks[c].max(self.view.now);
            self.tell(|o, v| o.released(v, e.stamp(), c));
            self.queue.push_again(e);
        }
        self.reschedule(d);
    }

    /// New rates and completion events for every computation on socket `d`.
    fn reschedule(&mut self, d: usize) {
        let mem = self.fabric.memory.as_mut().expect("memory");
        let dom = &mut mem.domains[d];
        let n = dom.active.len().max(1) as f64;
        dom.rate = mem.bw.core_bytes_per_ps.min(mem.bw.socket_bytes_per_ps / n);
        for a in dom.active.iter_mut() {
            dom.versions += 1;
            a.version = dom.versions;
            let t = self.view.now + (a.remaining / dom.rate).ceil() as Time;
            let (hi, lo) = ((a.version >> 32) as u32, a.version as u32);
            self.queue.push_new(Event::new(t, EvKind::MemDone, a.cpu, 0, 0, a.rank, hi, lo, a.id));
        }
    }

    /// Re-queues an event for when its CPU (or NIC) is free, or parks it
    /// while the CPU is in a memory-bound computation of unknown end.
    #[inline]
    /// `idx`: the clocks it waits for (the latest of them is free at `free`;
    /// when explaining, the event takes their path when it runs).
    pub(super) fn defer(&mut self, mut ev: Event, free: Time, idx: [usize; 2]) {
        debug_assert!(free == MEM_BUSY || idx.iter().any(|&i| self.view.clocks[i] == free));
        if free == MEM_BUSY {
            let pl = self.view.net.platform.as_deref().expect("MEM_BUSY implies a platform");
            let d = pl.socket(ev.rank) as usize;
            self.fabric.memory.as_mut().expect("memory").domains[d].parked.push(ev);
            return;
        }
        ev.time = free;
        if let super::waiting::Wait::Queue(ev) = self.waiting.wait(ev, free) {
            self.queue.push_again(ev);
        }
    }
}

fn advance(dom: &mut Domain, now: Time) {
    let moved = dom.rate * (now - dom.last) as f64;
    for a in dom.active.iter_mut() {
        a.remaining = (a.remaining - moved).max(0.0);
    }
    dom.last = now;
}

pub(super) fn no_memory(rank: u32) -> SimError {
    SimError::Invalid(format!(
        "rank {rank}: the workload has memory-bound computation but the platform has no memory domains (set [network.memory])"
    ))
}

#[cfg(test)]
mod tests {
    use crate::engine::Engine;
    use crate::network::{LinkClass, LogGOPS, Mapping, MemoryDomains, Network, Platform, Regime, Topology};
    use crate::noise::Noise;
    use crate::program::stream::{Ctx, StreamOp, StreamProgram, Workload};
    use crate::record::Recorder;
    use crate::time::Time;

    /// Each rank runs a fixed list of ops.
    #[derive(Clone)]
    struct Ops(Vec<Vec<StreamOp>>);

    impl Workload for Ops {
        type State = usize;
        fn num_ranks(&self) -> u32 {
            self.0.len() as u32
        }
        fn iterations(&self) -> u32 {
            1
        }
        fn timer_names(&self) -> Vec<String> {
            vec![]
        }
        fn next(&self, rank: u32, s: &mut usize, _: &Ctx) -> StreamOp {
            *s += 1;
            self.0[rank as usize].get(*s - 1).copied().unwrap_or(StreamOp::Done)
        }
    }

    fn platform(rpn: u32) -> Platform {
        let json = format!(
            r#"{{"inter_node": {{"eager": {{"l_ps": 1000000, "o_ps": 0, "g_ps": 0, "big_g_ps_per_byte": 0.0, "big_o_ps_per_byte": 0.0, "s_bytes": 1000000}}}},
                "ranks_per_node": {rpn}}}"#
        );
        serde_json::from_str(&json).unwrap()
    }

    fn run(ops: Vec<Vec<StreamOp>>, pl: Platform) -> Vec<Time> {
        let p = ops.len() as u32;
        let net = Network { ranks_per_node: pl.ranks_per_node, ..Network::uniform(pl.inter_node.eager) };
        let net = Network { platform: Some(Box::new(pl)), ..net };
        let mut e = Engine::new(StreamProgram::new(Ops(ops), Recorder::disabled()), net, Noise::none()).unwrap();
        e.run().unwrap();
        (0..p).map(|r| e.finish_time(r)).collect()
    }

    fn memory(socket: f64, core: f64) -> Option<MemoryDomains> {
        Some(MemoryDomains { socket_bytes_per_ps: socket, core_bytes_per_ps: core })
    }

    #[test]
    fn memory_bound_ranks_share_their_socket_beyond_saturation() {
        // Socket 40 B/ns, core 10 B/ns: 4 ranks saturate it.
        for n in [1u32, 2, 4, 8] {
            let mut pl = platform(8);
            pl.memory = memory(0.04, 0.01);
            let t = run((0..n).map(|_| vec![StreamOp::Mem(1_000_000)]).collect(), pl);
            let rate = (0.01f64).min(0.04 / n as f64);
            assert!(t.iter().all(|&x| x == (1e6 / rate).ceil() as Time), "n={n}: {t:?}");
        }
        // Core-bound work beside them is unaffected.
        let mut pl = platform(9);
        pl.memory = memory(0.04, 0.01);
        let t = run(vec![vec![StreamOp::Mem(1_000_000)]; 8].into_iter().chain([vec![StreamOp::Calc(5_000)]]).collect(), pl);
        assert_eq!(t[8], 5_000);
    }

    #[test]
    fn rates_change_when_ranks_join_and_leave() {
        // Socket 10 B/ns, core 10 B/ns. Rank 0 moves 100 kB alone for 4 µs
        // (40 kB), then shares with rank 1 (5 B/ns each) — rank 1 needs
        // 20 kB, done at 8 µs — then rank 0 finishes its last 40 kB alone.
        let mut pl = platform(2);
        pl.memory = memory(0.01, 0.01);
        let t = run(vec![vec![StreamOp::Mem(100_000)], vec![StreamOp::Calc(4_000_000), StreamOp::Mem(20_000)]], pl);
        assert_eq!(t, vec![12_000_000, 8_000_000]);
    }

    /// A rank's next computation must not be ended by a stale end event
    /// of its previous one; the socket's throughput is never exceeded.
    #[test]
    fn consecutive_memory_work_never_beats_the_socket_bandwidth() {
        let mut pl = platform(6);
        pl.memory = memory(0.01, 0.004);
        let ops: Vec<Vec<StreamOp>> = (0..6)
            .map(|r| {
                let mut v = vec![StreamOp::Calc(r as Time * 777_000)];
                v.extend((0..20).map(|k| StreamOp::Mem(50_000 + 10_000 * ((r + k) % 3) as u64)));
                v
            })
            .collect();
        let bytes: u64 = (0..6u64).map(|r| (0..20u64).map(|k| 50_000 + 10_000 * ((r + k) % 3)).sum::<u64>()).sum();
        let t = run(ops, pl);
        let bound = (bytes as f64 / 0.01) as Time;
        assert!(*t.iter().max().unwrap() >= bound, "{t:?} < {bound}");
    }

    #[test]
    fn a_message_arriving_during_memory_work_is_received_after_it() {
        // Rank 1 computes 10 µs of memory work; rank 0's message (1 µs
        // latency) waits for its CPU, then takes o.
        let mut pl = platform(2);
        pl.ranks_per_node = 1;
        pl.memory = memory(0.01, 0.01);
        pl.inter_node.eager.o_ps = 300;
        let recv = StreamOp::IRecv { peer: 0, tag: 1, bytes: 8, slot: 0 };
        let t = run(
            vec![
                vec![StreamOp::ISend { peer: 1, tag: 1, bytes: 8, slot: 0 }, StreamOp::Wait(1)],
                vec![recv, StreamOp::Mem(100_000), StreamOp::Wait(1)],
            ],
            pl,
        );
        assert_eq!(t[1], 10_000_000 + 300);
    }

    #[test]
    fn a_node_injects_its_off_node_bytes_one_after_another() {
        // 4 ranks on node 0 each send 1000 B to node 1 at once; the node's
        // link takes 2 ps per byte, so arrivals are 2 ns apart.
        let mut pl = platform(4);
        pl.node_ps_per_byte = 2.0;
        let ops: Vec<Vec<StreamOp>> = (0..8)
            .map(|r| {
                if r < 4 {
                    vec![StreamOp::ISend { peer: r + 4, tag: 1, bytes: 1000, slot: 0 }, StreamOp::Wait(1)]
                } else {
                    vec![StreamOp::IRecv { peer: r - 4, tag: 1, bytes: 1000, slot: 0 }, StreamOp::Wait(1)]
                }
            })
            .collect();
        let t = run(ops, pl);
        let mut arrivals: Vec<Time> = t[4..].to_vec();
        arrivals.sort();
        assert_eq!(arrivals, vec![1_000_000, 1_002_000, 1_004_000, 1_006_000]);
    }

    #[test]
    fn a_node_link_too_slow_for_the_run_stops_it_instead_of_wrapping() {
        // 8e28 ps per message, and stalls of 1e27 ps per hop: each is cut
        // past the limit (found by the fuzz test as an overflow)
        for slow in [true, false] {
            let mut pl = platform(4);
            pl.topology = Topology::Torus { dims: [4, 1, 1] };
            if slow {
                pl.node_ps_per_byte = 1e25;
            } else {
                (pl.hop_latency_ps, pl.stalls_per_byte, pl.stall_ps) = (1 << 60, 1e6, 1e15);
            }
            let ops: Vec<Vec<StreamOp>> = (0..8)
                .map(|r| match r {
                    0..4 => vec![StreamOp::ISend { peer: r + 4, tag: 1, bytes: 8192, slot: 0 }, StreamOp::Wait(1)],
                    _ => vec![StreamOp::IRecv { peer: r - 4, tag: 1, bytes: 8192, slot: 0 }, StreamOp::Wait(1)],
                })
                .collect();
            let net = Network { ranks_per_node: pl.ranks_per_node, ..Network::uniform(pl.inter_node.eager) };
            let net = Network { platform: Some(Box::new(pl)), ..net };
            let mut e = Engine::new(StreamProgram::new(Ops(ops), Recorder::disabled()), net, Noise::none()).unwrap();
            let err = e.run().unwrap_err().to_string();
            assert!(err.contains("past the engine's limit"), "{err}");
        }
    }

    #[test]
    fn hops_and_congestion_add_latency() {
        let mut pl = platform(2);
        (pl.topology, pl.hop_latency_ps, pl.stalls_per_byte, pl.stall_ps) = (Topology::Torus { dims: [4, 1, 1] }, 100, 0.5, 2.0);
        let send = |to| vec![StreamOp::ISend { peer: to, tag: 1, bytes: 10, slot: 0 }, StreamOp::Wait(1)];
        let recv = vec![StreamOp::IRecv { peer: 0, tag: 1, bytes: 10, slot: 0 }, StreamOp::Wait(1)];
        let t = run(vec![send(4), vec![], vec![], vec![], recv, vec![], vec![], vec![]], pl);
        // node 0 to node 2, 2 hops: 1 µs + 2·100 ps + stalls/byte 0.5 · 10 B · 2 cores · 2 ps · 2 hops
        assert_eq!(t[4], 1_000_000 + 200 + 40);
    }

    /// Two latency states, ×1 and ×3 on messages between nodes, the chain
    /// staying with probability `stay` per step of `step_ps`.
    fn two_states(step_ps: Time, stay: f64, initial: usize) -> Regime {
        Regime {
            classes: 0b100,
            step_ps,
            transition: vec![vec![stay, 1.0 - stay], vec![1.0 - stay, stay]],
            multiplier: vec![1.0, 3.0],
            add_mean_ps: vec![0.0, 0.0],
            add_sd_ps: vec![0.0, 0.0],
            initial,
            per_rank: false,
            per_link: false,
        }
    }

    #[test]
    fn a_latency_regime_scales_messages_while_it_lasts() {
        // Always in state 1 (latency ×3): the chain starts there and stays.
        let r = two_states(1_000, 1.0, 1);
        let mut pl = platform(1);
        pl.regimes = vec![r];
        let t = run(
            vec![
                vec![StreamOp::ISend { peer: 1, tag: 1, bytes: 10, slot: 0 }, StreamOp::Wait(1)],
                vec![StreamOp::IRecv { peer: 0, tag: 1, bytes: 10, slot: 0 }, StreamOp::Wait(1)],
            ],
            pl,
        );
        assert_eq!(t[1], 3_000_000);
        let _ = (LinkClass::uniform(LogGOPS::loggopsim_defaults()), Mapping::Block);
    }

    #[test]
    fn per_rank_chains_give_each_sender_its_own_trajectory() {
        // Two senders on separate nodes, each sending 400 messages 1 µs apart
        // under a chain stepping every µs (latency ×3 in state 1, half the time).
        let r = Regime { per_rank: true, ..two_states(1_000_000, 0.9, 0) };
        let mut pl = platform(1);
        pl.regimes = vec![r.clone()];
        let states = |pl: &Platform| {
            let net = Network { platform: Some(Box::new(pl.clone())), ..Network::uniform(LogGOPS::loggopsim_defaults()) };
            let mut e = Engine::new(StreamProgram::new(Ops(vec![vec![]; 4]), Recorder::disabled()), net, Noise::none()).unwrap();
            // latency 1 µs (×3 in state 1): read the state back from the arrival
            (0..400u64)
                .map(|k| [0u32, 1].map(|src| u8::from(e.arrival(src, src + 2, 0, k * 1_000_000, 1_000_000) - k * 1_000_000 > 1_000_000)))
                .collect::<Vec<_>>()
        };
        let a = states(&pl);
        let (r0, r1): (Vec<u8>, Vec<u8>) = a.iter().map(|s| (s[0], s[1])).unzip();
        assert_ne!(r0, r1, "the ranks' chains are independent");
        for seq in [&r0, &r1] {
            let share = seq.iter().map(|&x| x as f64).sum::<f64>() / seq.len() as f64;
            let switches = seq.windows(2).filter(|w| w[0] != w[1]).count();
            // stationary share 1/2; about 400·0.1 = 40 switches
            assert!((0.25..0.75).contains(&share) && (20..70).contains(&switches), "{share} {switches}");
        }
        assert_eq!(a, states(&pl), "seeded: the same run gives the same trajectories");
        // one network-wide chain: every sender sees the same state
        pl.regimes[0].per_rank = false;
        assert!(states(&pl).iter().all(|s| s[0] == s[1]));
    }

    #[test]
    fn per_link_chains_follow_the_links_a_message_crosses() {
        // A ring of 8 nodes (torus 8×1×1), latency ×3 in state 1 of a chain
        // stepping every µs: messages over the same link see the same state,
        // over other links independent ones; a two-link route takes the slower.
        let r = Regime { per_link: true, ..two_states(1_000_000, 0.9, 0) };
        let mut pl = platform(1);
        pl.topology = Topology::Torus { dims: [8, 1, 1] };
        pl.regimes = vec![r];
        let net = Network { platform: Some(Box::new(pl)), ..Network::uniform(LogGOPS::loggopsim_defaults()) };
        let mut e = Engine::new(StreamProgram::new(Ops(vec![vec![]; 8]), Recorder::disabled()), net, Noise::none()).unwrap();
        let mut slow = |src: u32, dst: u32, k: u64| e.arrival(src, dst, 0, k * 1_000_000, 1_000_000) - k * 1_000_000 > 1_000_000;
        let (mut same, mut other, mut slower) = (true, 0, true);
        for k in 0..400 {
            // 0→1 and 0→2 both cross node 0's x+ link; 4→5 crosses another
            let (a, b, c, d) = (slow(0, 1, k), slow(0, 2, k), slow(4, 5, k), slow(1, 2, k));
            same &= !a || b; // 0→2 is at least as slow as its first link
            slower &= b == (a || d); // and exactly the slower of 0→1's and 1→2's links
            other += (a != c) as u32;
        }
        assert!(same && slower);
        assert!(other > 50, "independent links disagree often: {other} of 400");
    }
}
