//! Node topologies: how many links a message between two nodes crosses.
//! Nodes are numbered in the topology's own order (a torus's x fastest, a
//! fat tree's leaves left to right, a dragonfly's routers group by group),
//! so consecutive nodes are close.

use crate::rule::RuleError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Topology {
    /// Every pair of nodes one link apart.
    #[default]
    FullyConnected,
    /// A k-ary fat tree of switches with `radix` ports: radix/2 nodes per
    /// leaf, (radix/2)^l per level-l subtree; up to the common ancestor and
    /// down again.
    FatTree {
        /// Ports per switch (even, at least 4: half go down to nodes or switches below, half up).
        #[serde(default = "radix")]
        #[schemars(range(min = 4))]
        radix: u32,
    },
    /// A 3-D torus of nodes (x fastest), wrap-around links, minimal routing.
    Torus {
        #[schemars(inner(range(min = 1)))]
        dims: [u32; 3],
    },
    /// Routers with `nodes_per_router` nodes, `routers_per_group` all-to-all
    /// within a group, one global hop between groups (minimal routing).
    Dragonfly {
        #[serde(default = "nodes_per_router")]
        #[schemars(range(min = 1))]
        nodes_per_router: u32,
        #[serde(default = "routers_per_group")]
        #[schemars(range(min = 1))]
        routers_per_group: u32,
    },
}

fn radix() -> u32 {
    36
}
fn nodes_per_router() -> u32 {
    4
}
fn routers_per_group() -> u32 {
    96
}

impl Topology {
    /// Its nodes where it has a fixed number of them: a torus's x·y·z. A
    /// fully connected network, a fat tree (which gains levels) and a
    /// dragonfly (which gains groups) have as many as the run puts ranks on.
    pub fn node_count(&self) -> Option<u64> {
        match *self {
            Topology::Torus { dims } => Some(dims.iter().map(|&d| d as u64).product()),
            _ => None,
        }
    }

    /// Its size for a reader, where it has one: "a 2×2×1 torus of 4 nodes".
    pub fn describe_size(&self) -> Option<String> {
        match *self {
            Topology::Torus { dims } => {
                let n: u64 = dims.iter().map(|&d| d as u64).product();
                Some(format!("a {}×{}×{} torus of {n} node{}", dims[0], dims[1], dims[2], if n == 1 { "" } else { "s" }))
            }
            _ => None,
        }
    }

    pub fn validate(&self, nodes: u64) -> Result<(), RuleError> {
        match *self {
            // radix/2 ≥ 2 children per switch, or no level ever joins two nodes
            Topology::FatTree { radix } if radix < 4 || radix % 2 == 1 => Err(RuleError::new(
                "network.topology.radix",
                format!("must be even (half a switch's ports go down, half up) and at least 4, got {radix}"),
            )),
            Topology::Torus { dims } => {
                let n: u64 = dims.iter().map(|&d| d as u64).product();
                if dims.contains(&0) || n < nodes {
                    return Err(RuleError::new(
                        "network.topology.dims",
                        format!(
                            "a {}×{}×{} torus has {n} node{}, the run needs {nodes}",
                            dims[0],
                            dims[1],
                            dims[2],
                            if n == 1 { "" } else { "s" }
                        ),
                    ));
                }
                Ok(())
            }
            Topology::Dragonfly { nodes_per_router, routers_per_group } if nodes_per_router == 0 || routers_per_group == 0 => {
                Err(RuleError::new("network.topology", "a dragonfly needs nodes_per_router and routers_per_group ≥ 1"))
            }
            _ => Ok(()),
        }
    }

    /// Links between two distinct nodes.
    #[inline]
    pub fn hops(&self, a: u32, b: u32) -> u32 {
        match *self {
            Topology::FullyConnected => 1,
            Topology::FatTree { radix } => {
                let down = (radix / 2).max(2) as u64; // ≥ 2, so the climb ends (validate refuses radix < 4)
                let (mut a, mut b, mut level) = (a as u64, b as u64, 0);
                while a != b {
                    (a, b, level) = (a / down, b / down, level + 1);
                }
                2 * level.max(1)
            }
            Topology::Torus { dims } => {
                let coord = |n: u32| [n % dims[0], (n / dims[0]) % dims[1], n / (dims[0] * dims[1])];
                let (ca, cb) = (coord(a), coord(b));
                (0..3)
                    .map(|i| {
                        let d = ca[i].abs_diff(cb[i]);
                        d.min(dims[i] - d)
                    })
                    .sum::<u32>()
                    .max(1)
            }
            Topology::Dragonfly { nodes_per_router, routers_per_group } => {
                let (ra, rb) = (a / nodes_per_router, b / nodes_per_router);
                if ra == rb {
                    2
                } else if ra / routers_per_group == rb / routers_per_group {
                    3
                } else {
                    5
                }
            }
        }
    }
}

/// The links between switches (routers) that a run's messages cross, as
/// counter slots: a torus's directed links; a fat tree's bundles of
/// parallel links between levels, one up and one down per subtree; a
/// dragonfly's global links, one bundle out of and one into each group.
/// The nodes' own links are the NICs, counted per node. Routing is the
/// minimal one `hops` counts: a torus goes x, then y, then z, the shorter
/// way round (forward at a tie).
#[derive(Debug, Clone, Default)]
pub struct Links {
    kind: LinkKind,
    slots: usize,
}

#[derive(Debug, Clone, Default)]
enum LinkKind {
    #[default]
    None,
    Torus([u32; 3]),
    /// Switch ports down, and per level j ≥ 1 the first slot of its bundles.
    FatTree {
        down: u64,
        offsets: Vec<usize>,
    },
    Dragonfly {
        nodes_per_group: u32,
        groups: u32,
    },
}

impl Links {
    /// The slots for a run on `nodes` nodes (none for a fully connected network).
    pub fn new(t: &Topology, nodes: u32) -> Links {
        match *t {
            Topology::FullyConnected => Links::default(),
            Topology::Torus { dims } => {
                Links { kind: LinkKind::Torus(dims), slots: 6 * dims.iter().map(|&d| d as usize).product::<usize>() }
            }
            Topology::FatTree { radix } => {
                let down = (radix / 2).max(2) as u64;
                // bundles leave level-j subtrees for j = 1 … until one subtree holds every node
                let (mut offsets, mut slots, mut span) = (vec![0], 0usize, down);
                while span < nodes as u64 {
                    offsets.push(slots);
                    slots += 2 * (nodes as u64).div_ceil(span) as usize;
                    span = span.saturating_mul(down);
                }
                Links { kind: LinkKind::FatTree { down, offsets }, slots }
            }
            Topology::Dragonfly { nodes_per_router, routers_per_group } => {
                let per_group = nodes_per_router.saturating_mul(routers_per_group);
                let groups = nodes.div_ceil(per_group);
                Links { kind: LinkKind::Dragonfly { nodes_per_group: per_group, groups }, slots: 2 * groups as usize }
            }
        }
    }

    /// Counter slots (0: links are not counted).
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Whether some message between two of the run's nodes crosses a link
    /// between switches (not when every node hangs off one switch or group).
    pub fn crossable(&self) -> bool {
        match &self.kind {
            LinkKind::None => false,
            LinkKind::Torus(dims) => dims.iter().product::<u32>() > 1,
            LinkKind::FatTree { .. } => self.slots > 0,
            LinkKind::Dragonfly { groups, .. } => *groups > 1,
        }
    }

    /// Bytes per slot to bytes per link: the parallel links a slot stands for.
    pub fn parallel(&self, slot: usize) -> u64 {
        match &self.kind {
            // a level-j subtree has as many links up as nodes (full bisection)
            LinkKind::FatTree { down, offsets } => down.pow(offsets.partition_point(|&o| o <= slot) as u32 - 1),
            LinkKind::Dragonfly { groups, .. } => (*groups as u64 - 1).max(1),
            _ => 1,
        }
    }

    /// Calls `f` with the slot of each link between switches that a message
    /// from node `a` to node `b` crosses.
    #[inline]
    pub fn route(&self, a: u32, b: u32, mut f: impl FnMut(usize)) {
        match &self.kind {
            LinkKind::None => {}
            LinkKind::Torus(dims) => {
                let mut coord = [a % dims[0], (a / dims[0]) % dims[1], a / (dims[0] * dims[1])];
                let to = [b % dims[0], (b / dims[0]) % dims[1], b / (dims[0] * dims[1])];
                for d in 0..3 {
                    let n = dims[d];
                    let ahead = (to[d] + n - coord[d]) % n;
                    let (steps, back) = if ahead <= n - ahead { (ahead, false) } else { (n - ahead, true) };
                    for _ in 0..steps {
                        let node = coord[0] + dims[0] * (coord[1] + dims[1] * coord[2]);
                        f(6 * node as usize + 2 * d + back as usize);
                        coord[d] = if back { (coord[d] + n - 1) % n } else { (coord[d] + 1) % n };
                    }
                }
            }
            LinkKind::FatTree { down, offsets } => {
                let (mut sa, mut sb) = (a as u64 / down, b as u64 / down);
                for &o in &offsets[1..] {
                    if sa == sb {
                        break;
                    }
                    f(o + 2 * sa as usize);
                    f(o + 2 * sb as usize + 1);
                    (sa, sb) = (sa / down, sb / down);
                }
            }
            LinkKind::Dragonfly { nodes_per_group, .. } => {
                let (ga, gb) = (a / nodes_per_group, b / nodes_per_group);
                if ga != gb {
                    f(2 * ga as usize);
                    f(2 * gb as usize + 1);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crossed(l: &Links, a: u32, b: u32) -> Vec<usize> {
        let mut v = Vec::new();
        l.route(a, b, |s| v.push(s));
        v
    }

    #[test]
    fn routes_cross_as_many_links_as_hops_count() {
        // torus: every hop is a link between nodes (routers)
        let t = Topology::Torus { dims: [4, 3, 2] };
        let l = Links::new(&t, 24);
        for (a, b) in (0..24).flat_map(|a| (0..24).map(move |b| (a, b))).filter(|(a, b)| a != b) {
            let v = crossed(&l, a, b);
            assert_eq!(v.len() as u32, t.hops(a, b), "{a}→{b}");
            assert!(v.iter().all(|&s| s < l.slots()));
        }
        // 0 → 3 on a ring of 4 is one step back along x: node 0's x− link
        assert_eq!(crossed(&l, 0, 3), vec![1]);
        // 0 → 2: two steps forward (a tie), then nothing
        assert_eq!(crossed(&l, 0, 2), vec![0, 6]);
        // fat tree: hops − 2 links between switches (the two node links are the NICs)
        let ft = Topology::FatTree { radix: 4 }; // 2 nodes per leaf
        let l = Links::new(&ft, 16);
        for (a, b) in (0..16).flat_map(|a| (0..16).map(move |b| (a, b))).filter(|(a, b)| a != b) {
            let v = crossed(&l, a, b);
            assert_eq!(v.len() as u32, ft.hops(a, b) - 2, "{a}→{b}");
            assert!(v.iter().all(|&s| s < l.slots()));
        }
        // bundles: a leaf's 2 links up, a pod's 4, the 8-node halves' 8
        assert_eq!((l.parallel(0), l.parallel(2 * 8), l.parallel(l.slots() - 1), l.slots()), (2, 4, 8, 16 + 8 + 4));
        // dragonfly: a global link between groups only
        let d = Topology::Dragonfly { nodes_per_router: 2, routers_per_group: 2 };
        let l = Links::new(&d, 12);
        assert_eq!((crossed(&l, 0, 3), crossed(&l, 0, 4), l.slots(), l.parallel(0)), (vec![], vec![0, 3], 6, 2));
        assert_eq!(Links::new(&Topology::FullyConnected, 8).slots(), 0);
    }

    #[test]
    fn hop_counts_follow_each_shape() {
        let ft = Topology::FatTree { radix: 4 }; // 2 nodes per leaf, 4 per pod
        assert_eq!((ft.hops(0, 1), ft.hops(0, 2), ft.hops(0, 4), ft.hops(0, 8)), (2, 4, 6, 8));
        let t = Topology::Torus { dims: [4, 4, 2] };
        assert_eq!((t.hops(0, 1), t.hops(0, 3), t.hops(0, 2), t.hops(0, 5), t.hops(0, 16 + 10)), (1, 1, 2, 2, 1 + 2 + 2));
        let d = Topology::Dragonfly { nodes_per_router: 4, routers_per_group: 8 };
        assert_eq!((d.hops(0, 3), d.hops(0, 4), d.hops(0, 32)), (2, 3, 5));
        assert_eq!(Topology::FullyConnected.hops(3, 9), 1);
        assert!(t.validate(33).unwrap_err().to_string().contains("torus"));
    }
}
