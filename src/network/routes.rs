//! Shared links (`[network.links]`): which links a message's bytes cross
//! as a flow, and what each link carries. Links are numbered as slots:
//! each rank's NIC in (when G > 0), each node's link out and in (when the
//! node's bandwidth is given), then the links between switches:
//! a torus's directed links (x, y, z, each way, per node), a fat tree's
//! links per level up and down, a dragonfly's global links (one per ordered
//! pair of groups). A dragonfly's links inside a group are not modelled.
//!
//! A NIC's sending side is not a shared link: LogGOPS's gap (g + (s − 1)·G
//! per message) already spaces its messages, and each flow is capped at 1/G.
//! A flow slowed down the line thus overlaps the NIC's next one, as a NIC
//! with several messages outstanding does; their rates are capped one by
//! one, not together. (Made a shared link, it would tie every flow of a
//! halo exchange into one component to re-solve at each change.)

use super::topology::Links;
use super::Topology;
use crate::rule::RuleError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether links between switches are shared resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LinkModelKind {
    /// Links carry any number of messages at once at full speed
    /// (LogGOPSim's network; the NICs' g and G still serialise).
    #[default]
    None,
    /// A message's bytes are a flow along its route; the flows on a link
    /// share its bandwidth max–min fairly (SimGrid's LMM model).
    Flow,
}

/// How a message's route is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Routing {
    /// Torus: x, then y, then z, the shorter way round (forward at a tie).
    DimensionOrder,
    /// Fat tree: the up-link at each level is chosen by the destination's
    /// digits (destination mod k): one down-path per destination.
    DModK,
    /// Fat tree: the up-links are chosen at random per message (seeded).
    Random,
    /// Dragonfly: straight over the global link between the two groups.
    Minimal,
    /// Dragonfly: through a random intermediate group (two global links).
    Valiant,
    /// Dragonfly: minimal unless its global link carries more than twice the
    /// flows of the busier link of a random Valiant route (UGAL, local information).
    Ugal,
}

impl Routing {
    fn name(self) -> &'static str {
        match self {
            Routing::DimensionOrder => "dimension_order",
            Routing::DModK => "d_mod_k",
            Routing::Random => "random",
            Routing::Minimal => "minimal",
            Routing::Valiant => "valiant",
            Routing::Ugal => "ugal",
        }
    }
}

/// `[network.links]` as written.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LinksSpec {
    pub model: LinkModelKind,
    /// Bandwidth of each link between switches, bytes per second (needed with "flow").
    #[schemars(range(min = 0))]
    pub bandwidth_bytes_per_s: f64,
    /// A dragonfly's global links (0: bandwidth_bytes_per_s).
    #[schemars(range(min = 0))]
    pub global_bandwidth_bytes_per_s: f64,
    /// Fat tree: links between switches carry bandwidth_bytes_per_s / taper (2: a 2:1 tapered tree).
    #[schemars(range(min = 1))]
    pub taper: f64,
    /// The topology's routing (default: dimension_order on a torus, d_mod_k on
    /// a fat tree, minimal on a dragonfly).
    pub routing: Option<Routing>,
    /// Re-solve the rates of flows that share links at most once per this
    /// many seconds: a start or end waits for the interval's end (a new
    /// flow sends nothing until then, the others keep their rates), so a flow
    /// can end up to about this much late (or early, having kept a higher
    /// rate longer). 0: at the instant, exact.
    #[schemars(range(min = 0, max = 1))]
    pub resolve_interval_s: f64,
}

impl Default for LinksSpec {
    fn default() -> Self {
        LinksSpec {
            model: LinkModelKind::None,
            bandwidth_bytes_per_s: 0.0,
            global_bandwidth_bytes_per_s: 0.0,
            taper: 1.0,
            routing: None,
            resolve_interval_s: 0.0,
        }
    }
}

const PS_PER_S: f64 = 1e12;

impl LinksSpec {
    /// Checks the keys against each other and the topology.
    pub fn validate(&self, topology: &Topology) -> Result<(), RuleError> {
        let key = |k: &str| format!("network.links.{k}");
        if !(self.taper >= 1.0 && self.taper.is_finite()) {
            return Err(RuleError::new(key("taper"), format!("must be at least 1, got {}", self.taper)));
        }
        for (k, v) in
            [("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s), ("global_bandwidth_bytes_per_s", self.global_bandwidth_bytes_per_s)]
        {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(RuleError::new(key(k), format!("must be a finite bandwidth ≥ 0, got {v}")));
            }
        }
        if !(self.resolve_interval_s >= 0.0 && self.resolve_interval_s <= 1.0) {
            return Err(RuleError::new(
                key("resolve_interval_s"),
                format!("must be between 0 (exact) and 1 s, got {}", self.resolve_interval_s),
            ));
        }
        if self.taper != 1.0 && !matches!(topology, Topology::FatTree { .. }) {
            return Err(RuleError::new(
                key("taper"),
                format!("a taper thins a fat tree's up-links; a {} topology has none", crate::units::name(topology)),
            ));
        }
        if self.model == LinkModelKind::None {
            return Ok(());
        }
        let switches = !matches!(topology, Topology::FullyConnected);
        if switches && self.bandwidth_bytes_per_s <= 0.0 {
            return Err(RuleError::new(key("bandwidth_bytes_per_s"), "the \"flow\" model needs the links' bandwidth (bytes per second)"));
        }
        if let Some(r) = self.routing {
            let allowed: &[Routing] = match topology {
                Topology::FullyConnected => &[],
                Topology::Torus { .. } => &[Routing::DimensionOrder],
                Topology::FatTree { .. } => &[Routing::DModK, Routing::Random],
                Topology::Dragonfly { .. } => &[Routing::Minimal, Routing::Valiant, Routing::Ugal],
            };
            if !allowed.contains(&r) {
                let names: Vec<&str> = allowed.iter().map(|r| r.name()).collect();
                return Err(RuleError::new(
                    key("routing"),
                    format!(
                        "\"{}\" does not apply to a {} topology (it takes {})",
                        r.name(),
                        crate::units::name(topology),
                        if names.is_empty() { "no routing: every node is one link from every other".to_string() } else { names.join(", ") }
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The engine's model, units in picoseconds.
    pub fn model(&self, topology: &Topology) -> LinkModel {
        let routing = self.routing.unwrap_or(match topology {
            Topology::FatTree { .. } => Routing::DModK,
            Topology::Dragonfly { .. } => Routing::Minimal,
            _ => Routing::DimensionOrder,
        });
        let global = if self.global_bandwidth_bytes_per_s > 0.0 { self.global_bandwidth_bytes_per_s } else { self.bandwidth_bytes_per_s };
        LinkModel {
            flow: self.model == LinkModelKind::Flow,
            bytes_per_ps: self.bandwidth_bytes_per_s / PS_PER_S,
            global_bytes_per_ps: global / PS_PER_S,
            taper: self.taper,
            routing,
            resolve_interval_ps: (self.resolve_interval_s * PS_PER_S).round() as u64,
        }
    }
}

/// The engine's view of `[network.links]`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default)]
pub struct LinkModel {
    pub flow: bool,
    pub bytes_per_ps: f64,
    pub global_bytes_per_ps: f64,
    pub taper: f64,
    pub routing: Routing,
    /// Flows' rates are re-solved at multiples of this (0: at every instant).
    pub resolve_interval_ps: u64,
}

impl Default for LinkModel {
    fn default() -> Self {
        LinkModel {
            flow: false,
            bytes_per_ps: 0.0,
            global_bytes_per_ps: 0.0,
            taper: 1.0,
            routing: Routing::DimensionOrder,
            resolve_interval_ps: 0,
        }
    }
}

/// What kind of link a slot is (for the per-class counters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LinkClassId {
    NicIn,
    NodeOut,
    NodeIn,
    /// A torus's links along dimension 0, 1 or 2.
    Torus(u8),
    /// A fat tree's links from level i to i + 1 (leaves are level 1).
    Up(u8),
    Down(u8),
    Global,
}

impl LinkClassId {
    pub fn name(self) -> String {
        match self {
            LinkClassId::NicIn => "nic_in".into(),
            LinkClassId::NodeOut => "node_out".into(),
            LinkClassId::NodeIn => "node_in".into(),
            LinkClassId::Torus(d) => format!("torus_{}", ["x", "y", "z"][d as usize]),
            LinkClassId::Up(l) => format!("up_{l}"),
            LinkClassId::Down(l) => format!("down_{l}"),
            LinkClassId::Global => "global".into(),
        }
    }
}

#[derive(Debug, Clone)]
enum Switches {
    None,
    Torus(Links),
    /// k nodes per leaf; per level i ≥ 1 (index i − 1): the first slot of its
    /// up-links and the number of links each way.
    FatTree {
        k: u64,
        levels: Vec<(usize, u64)>,
    },
    Dragonfly {
        per_group: u32,
        groups: u32,
    },
}

/// The slots of a run's shared links and how a message crosses them.
#[derive(Debug, Clone)]
pub struct Routes {
    ranks: u32,
    nodes: u32,
    /// NIC links' capacity in bytes per ps (0: NICs are not links).
    nic: f64,
    /// Node links' capacity (0: none).
    node: f64,
    switch_first: usize,
    switches: Switches,
    /// Every switch link's capacity (one per topology; a dragonfly's are global).
    switch_cap: f64,
    slots: usize,
    model: LinkModel,
    seed: u64,
}

/// Random stream of the route choices.
const ROUTE: u64 = 0x5EC5_0000;

impl Routes {
    /// `nic_bytes_per_ps`: a NIC's rate (1/G; 0 when G is 0),
    /// `node_bytes_per_ps`: a node's (0: unlimited).
    pub fn new(
        model: LinkModel,
        topology: &Topology,
        ranks: u32,
        nodes: u32,
        nic_bytes_per_ps: f64,
        node_bytes_per_ps: f64,
        seed: u64,
    ) -> Routes {
        let nic_slots = if nic_bytes_per_ps > 0.0 { ranks as usize } else { 0 };
        let node_slots = if node_bytes_per_ps > 0.0 { 2 * nodes as usize } else { 0 };
        let switch_first = nic_slots + node_slots;
        let (switches, n) = match *topology {
            Topology::FullyConnected => (Switches::None, 0),
            Topology::Torus { .. } => {
                let l = Links::new(topology, nodes);
                let n = l.slots();
                (Switches::Torus(l), n)
            }
            Topology::FatTree { radix } => {
                let k = (radix / 2).max(2) as u64;
                let (mut levels, mut n, mut span) = (Vec::new(), 0usize, k);
                while span < nodes as u64 {
                    let m = (nodes as u64).div_ceil(span) * span;
                    levels.push((switch_first + n, m));
                    n += 2 * m as usize;
                    span = span.saturating_mul(k);
                }
                (Switches::FatTree { k, levels }, n)
            }
            Topology::Dragonfly { nodes_per_router, routers_per_group } => {
                let per_group = nodes_per_router.saturating_mul(routers_per_group);
                let groups = nodes.div_ceil(per_group);
                (Switches::Dragonfly { per_group, groups }, groups as usize * groups as usize)
            }
        };
        let switch_cap = match switches {
            Switches::None => 0.0,
            Switches::Torus(_) => model.bytes_per_ps,
            Switches::FatTree { .. } => model.bytes_per_ps / model.taper,
            Switches::Dragonfly { .. } => model.global_bytes_per_ps,
        };
        Routes {
            ranks,
            nodes,
            nic: nic_bytes_per_ps,
            node: node_bytes_per_ps,
            switch_first,
            switches,
            switch_cap,
            slots: switch_first + n,
            model,
            seed,
        }
    }

    /// Slots a run on these ranks and nodes would have, before building them (for the memory estimate).
    pub fn slot_count(model: LinkModel, topology: &Topology, ranks: u32, nodes: u32, nic: bool, node: bool) -> u128 {
        let _ = model;
        let base = if nic { ranks as u128 } else { 0 } + if node { 2 * nodes as u128 } else { 0 };
        base + match *topology {
            Topology::FullyConnected => 0,
            Topology::Torus { dims } => 6 * dims.iter().map(|&d| d as u128).product::<u128>(),
            Topology::FatTree { radix } => {
                let k = (radix / 2).max(2) as u128;
                let (mut n, mut span) = (0u128, k);
                while span < nodes as u128 {
                    n += 2 * (nodes as u128).div_ceil(span) * span;
                    span *= k;
                }
                n
            }
            Topology::Dragonfly { nodes_per_router, routers_per_group } => {
                let g = (nodes as u128).div_ceil((nodes_per_router as u128 * routers_per_group as u128).max(1));
                g * g
            }
        }
    }

    /// Flows' rates are re-solved at multiples of this many ps (0: at every instant).
    pub fn resolve_interval(&self) -> u64 {
        self.model.resolve_interval_ps
    }

    pub fn slots(&self) -> usize {
        self.slots
    }

    /// A slot's capacity in bytes per ps: its class's, found without a
    /// look-up (a flow's start reads it for each link of its route).
    #[inline]
    pub fn cap(&self, slot: usize) -> f64 {
        if slot < self.switch_first {
            let nic_slots = if self.nic > 0.0 { self.ranks as usize } else { 0 };
            if slot < nic_slots {
                self.nic
            } else {
                self.node
            }
        } else {
            self.switch_cap
        }
    }

    /// A slot's class and capacity in bytes per ps.
    pub fn link(&self, slot: usize) -> (LinkClassId, f64) {
        let nic_slots = if self.nic > 0.0 { self.ranks as usize } else { 0 };
        let cap = self.cap(slot);
        if slot < nic_slots {
            return (LinkClassId::NicIn, cap);
        }
        if slot < self.switch_first {
            let s = slot - nic_slots;
            return (if s < self.nodes as usize { LinkClassId::NodeOut } else { LinkClassId::NodeIn }, cap);
        }
        let s = slot - self.switch_first;
        let class = match &self.switches {
            Switches::None => unreachable!("no switch links"),
            Switches::Torus(_) => LinkClassId::Torus((s % 6 / 2) as u8),
            Switches::FatTree { levels, .. } => {
                let i = levels.partition_point(|&(first, _)| first <= slot) - 1;
                let (first, m) = levels[i];
                if slot < first + m as usize {
                    LinkClassId::Up(i as u8 + 1)
                } else {
                    LinkClassId::Down(i as u8 + 1)
                }
            }
            Switches::Dragonfly { .. } => LinkClassId::Global,
        };
        (class, cap)
    }

    /// Whether a message's route depends only on its ends (not on a random
    /// draw or on the links' load).
    pub fn fixed(&self) -> bool {
        matches!(self.model.routing, Routing::DimensionOrder | Routing::DModK | Routing::Minimal)
    }

    /// A slot's name for a reader: its class and which one, e.g. `nic_in of
    /// rank 7`, `node_out of node 3`, `torus_y- of node 12`, `up_2 #5` (a fat
    /// tree's links of a level are numbered from 0), `global g0→g3`.
    pub fn name(&self, slot: usize) -> String {
        let (class, _) = self.link(slot);
        let nic_slots = if self.nic > 0.0 { self.ranks as usize } else { 0 };
        let class_name = class.name();
        match (class, &self.switches) {
            (LinkClassId::NicIn, _) => format!("{class_name} of rank {slot}"),
            (LinkClassId::NodeOut, _) => format!("{class_name} of node {}", slot - nic_slots),
            (LinkClassId::NodeIn, _) => format!("{class_name} of node {}", slot - nic_slots - self.nodes as usize),
            (LinkClassId::Torus(_), _) => {
                let s = slot - self.switch_first;
                format!("{class_name}{} of node {}", if s % 2 == 1 { "-" } else { "+" }, s / 6)
            }
            (LinkClassId::Up(_) | LinkClassId::Down(_), Switches::FatTree { levels, .. }) => {
                let i = levels.partition_point(|&(first, _)| first <= slot) - 1;
                let (first, m) = levels[i];
                let j = (slot - first) % m as usize;
                format!("{class_name} #{j}")
            }
            (_, Switches::Dragonfly { groups, .. }) => {
                let s = slot - self.switch_first;
                let g = *groups as usize;
                format!("{class_name} g{}→g{}", s / g, s % g)
            }
            _ => format!("{class_name} #{slot}"),
        }
    }

    /// Calls `f` with each slot a message from rank `src` (node `a`) to rank
    /// `dst` (node `b`, another node) crosses. `key` seeds a random choice;
    /// `load(slot)` is the flows a link carries now (for adaptive routing).
    #[inline]
    pub fn route(&self, (src, dst): (u32, u32), (a, b): (u32, u32), key: u64, load: impl Fn(usize) -> usize, mut f: impl FnMut(usize)) {
        let _ = src;
        if self.nic > 0.0 {
            f(dst as usize);
        }
        if self.node > 0.0 {
            let first = if self.nic > 0.0 { self.ranks as usize } else { 0 };
            f(first + a as usize);
            f(first + self.nodes as usize + b as usize);
        }
        let first = self.switch_first;
        match &self.switches {
            Switches::None => {}
            Switches::Torus(l) => l.route(a, b, |s| f(first + s)),
            Switches::FatTree { k, levels } => {
                let (a, b) = (a as u64, b as u64);
                let r = match self.model.routing {
                    Routing::Random => crate::rng::hash(self.seed, ROUTE, key, 0),
                    _ => b,
                };
                let mut span = *k;
                for &(up, m) in levels {
                    if a / span == b / span {
                        break;
                    }
                    f(up + ((a / span) * span + r % span) as usize);
                    f(up + m as usize + ((b / span) * span + r % span) as usize);
                    span = span.saturating_mul(*k);
                }
            }
            Switches::Dragonfly { per_group, groups } => {
                let (ga, gb) = ((a / per_group) as usize, (b / per_group) as usize);
                if ga == gb {
                    return;
                }
                let g = *groups as usize;
                let direct = first + ga * g + gb;
                let detour = || {
                    // an intermediate group other than the two ends
                    let mut m = (crate::rng::hash(self.seed, ROUTE, key, 0) % (g as u64 - 2)) as usize;
                    for end in [ga.min(gb), ga.max(gb)] {
                        if m >= end {
                            m += 1;
                        }
                    }
                    (first + ga * g + m, first + m * g + gb)
                };
                match self.model.routing {
                    Routing::Valiant if g > 2 => {
                        let (x, y) = detour();
                        f(x);
                        f(y);
                    }
                    Routing::Ugal if g > 2 => {
                        let (x, y) = detour();
                        if load(direct) > 2 * load(x).max(load(y)) {
                            f(x);
                            f(y);
                        } else {
                            f(direct);
                        }
                    }
                    _ => f(direct),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(routing: Routing) -> LinkModel {
        LinkModel { flow: true, bytes_per_ps: 1.0, global_bytes_per_ps: 1.0, taper: 1.0, routing, resolve_interval_ps: 0 }
    }

    fn crossed(r: &Routes, a: u32, b: u32, key: u64) -> Vec<usize> {
        let mut v = Vec::new();
        r.route((a, b), (a, b), key, |_| 0, |s| v.push(s));
        v
    }

    #[test]
    fn d_mod_k_gives_each_destination_its_own_down_path_and_a_shift_its_own_up_links() {
        // 64 nodes, k = 4 (radix 8): three switch levels, two levels of links
        let ft = Topology::FatTree { radix: 8 };
        let r = Routes::new(model(Routing::DModK), &ft, 64, 64, 0.0, 0.0, 1);
        assert_eq!(r.slots(), 2 * 64 + 2 * 64);
        // a shift by half the machine crosses the top: 4 links each, none shared
        let mut used = std::collections::HashMap::new();
        for a in 0..64u32 {
            let v = crossed(&r, a, (a + 32) % 64, 0);
            assert_eq!(v.len(), 4);
            for s in v {
                *used.entry(s).or_insert(0) += 1;
            }
        }
        assert!(used.values().all(|&n| n == 1), "d-mod-k routes a shift without sharing a link");
        // two sources of one leaf to two destinations with equal low digits share their up-link
        let (x, y) = (crossed(&r, 0, 16, 0), crossed(&r, 1, 20, 0));
        assert_eq!(x[0], y[0]);
        // every message to one destination comes down the same links
        let downs = |a| crossed(&r, a, 63, 0).into_iter().filter(|&s| matches!(r.link(s).0, LinkClassId::Down(_))).collect::<Vec<_>>();
        assert_eq!(downs(0), downs(20));
        // same leaf: no switch link; same pod: one up, one down at level 1
        assert!(crossed(&r, 0, 3, 0).is_empty());
        let v = crossed(&r, 0, 5, 0);
        assert_eq!((r.link(v[0]).0, r.link(v[1]).0), (LinkClassId::Up(1), LinkClassId::Down(1)));
    }

    #[test]
    fn random_up_paths_spread_and_are_seeded() {
        let ft = Topology::FatTree { radix: 8 };
        let r = Routes::new(model(Routing::Random), &ft, 64, 64, 0.0, 0.0, 7);
        let tops: std::collections::HashSet<usize> = (0..200).map(|k| crossed(&r, 0, 32, k)[2]).collect();
        assert!(tops.len() >= 12, "16 top up-links from node 0's pod: {}", tops.len());
        assert_eq!(crossed(&r, 0, 32, 5), crossed(&r, 0, 32, 5));
        // every route still ends at the destination's leaf: its last down-link is one of the destination leaf's
        for k in 0..50 {
            let v = crossed(&r, 0, 33, k);
            let down = v[1] - r.switch_first - 64; // the level-1 down-link
            assert_eq!(down / 4, 33 / 4, "{v:?}");
        }
    }

    #[test]
    fn dragonfly_routes_take_one_or_two_global_links() {
        let d = Topology::Dragonfly { nodes_per_router: 2, routers_per_group: 2 }; // 4 nodes per group
        let min = Routes::new(model(Routing::Minimal), &d, 36, 36, 0.0, 0.0, 3);
        assert_eq!(min.slots(), 81);
        assert_eq!(crossed(&min, 0, 5, 0), vec![1]); // group 0 → 1
        assert!(crossed(&min, 0, 3, 0).is_empty());
        let val = Routes::new(model(Routing::Valiant), &d, 36, 36, 0.0, 0.0, 3);
        for k in 0..100 {
            let v = crossed(&val, 0, 5, k);
            assert_eq!(v.len(), 2);
            let m = v[0] % 9;
            assert!(m != 0 && m != 1 && v[1] == m * 9 + 1, "{v:?}");
        }
        // UGAL: minimal while the direct link is not busier than twice the detour
        let ugal = Routes::new(model(Routing::Ugal), &d, 36, 36, 0.0, 0.0, 3);
        let route = |busy: usize| {
            let mut v = Vec::new();
            ugal.route((0, 5), (0, 5), 1, |s| if s == 1 { busy } else { 0 }, |s| v.push(s));
            v.len()
        };
        assert_eq!((route(0), route(1)), (1, 2));
    }

    #[test]
    fn nic_and_node_links_come_first() {
        let r = Routes::new(model(Routing::DimensionOrder), &Topology::Torus { dims: [4, 1, 1] }, 8, 4, 0.5, 0.25, 0);
        assert_eq!(r.slots(), 8 + 8 + 24);
        let mut v = Vec::new();
        r.route((1, 6), (0, 3), 0, |_| 0, |s| v.push(s));
        // NIC into rank 6, node 0 out, node 3 in, then x− from node 0
        assert_eq!(v, vec![6, 8, 8 + 4 + 3, 16 + 1]);
        assert_eq!(r.link(6), (LinkClassId::NicIn, 0.5));
        assert_eq!(r.link(8 + 5), (LinkClassId::NodeIn, 0.25));
        assert_eq!(r.link(16 + 1).0, LinkClassId::Torus(0));
    }

    #[test]
    fn routing_must_suit_the_topology_and_flow_needs_a_bandwidth() {
        let spec = LinksSpec { model: LinkModelKind::Flow, routing: Some(Routing::Valiant), ..Default::default() };
        let e = spec.validate(&Topology::FatTree { radix: 8 }).unwrap_err();
        assert!(e.to_string().contains("bandwidth"), "{e}");
        let spec = LinksSpec { bandwidth_bytes_per_s: 1e9, ..spec };
        let e = spec.validate(&Topology::FatTree { radix: 8 }).unwrap_err();
        assert!(e.to_string().contains("d_mod_k, random"), "{e}");
        assert!(LinksSpec { taper: 0.5, ..Default::default() }.validate(&Topology::FullyConnected).is_err());
        assert!(spec.validate(&Topology::Dragonfly { nodes_per_router: 1, routers_per_group: 1 }).is_ok());
    }
}
