//! Node topologies: how many links a message between two nodes crosses.
//! Nodes are numbered in the topology's own order (a torus's x fastest, a
//! fat tree's leaves left to right, a dragonfly's routers group by group),
//! so consecutive nodes are close.

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
        /// Ports per switch (at least 4: half go down to nodes or switches below).
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
    pub fn validate(&self, nodes: u64) -> Result<(), String> {
        match *self {
            // radix/2 ≥ 2 children per switch, or no level ever joins two nodes
            Topology::FatTree { radix } if radix < 4 => Err(format!("network.topology.radix: must be at least 4, got {radix}")),
            Topology::Torus { dims } => {
                let n: u64 = dims.iter().map(|&d| d as u64).product();
                if dims.contains(&0) || n < nodes {
                    return Err(format!(
                        "network.topology: a {}×{}×{} torus has {n} nodes, the run needs {nodes}",
                        dims[0], dims[1], dims[2]
                    ));
                }
                Ok(())
            }
            Topology::Dragonfly { nodes_per_router, routers_per_group } if nodes_per_router == 0 || routers_per_group == 0 => {
                Err("network.topology: a dragonfly needs nodes_per_router and routers_per_group ≥ 1".into())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_counts_follow_each_shape() {
        let ft = Topology::FatTree { radix: 4 }; // 2 nodes per leaf, 4 per pod
        assert_eq!((ft.hops(0, 1), ft.hops(0, 2), ft.hops(0, 4), ft.hops(0, 8)), (2, 4, 6, 8));
        let t = Topology::Torus { dims: [4, 4, 2] };
        assert_eq!((t.hops(0, 1), t.hops(0, 3), t.hops(0, 2), t.hops(0, 5), t.hops(0, 16 + 10)), (1, 1, 2, 2, 1 + 2 + 2));
        let d = Topology::Dragonfly { nodes_per_router: 4, routers_per_group: 8 };
        assert_eq!((d.hops(0, 3), d.hops(0, 4), d.hops(0, 32)), (2, 3, 5));
        assert_eq!(Topology::FullyConnected.hops(3, 9), 1);
        assert!(t.validate(33).unwrap_err().contains("torus"));
    }
}
