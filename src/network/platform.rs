//! A platform: node shape (ranks per node and socket), where each rank runs
//! (the mapping), the link classes a message can take (same socket, same
//! node, other node; each with per-protocol parameters), the node topology
//! with per-hop latency and a congestion penalty, the node's injection
//! bandwidth (the max-rate model), latency regimes, and memory-bandwidth
//! domains (one per socket).

use super::{LinkClass, LinkModel, LogGOPS, Regime, Topology};
use crate::rule::RuleError;
use crate::time::Time;
use serde::Deserialize;

/// Where ranks run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Mapping {
    /// Consecutive ranks fill a node.
    #[default]
    Block,
    /// Rank r on node r mod nodes.
    RoundRobin { nodes: u32 },
    /// The node of every rank (Cartesian, 2-D grid, topology-aware or a
    /// user's file, computed by the scenario layer).
    Table { nodes: Vec<u32> },
}

/// Memory bandwidth per socket and per core, in bytes per picosecond.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryDomains {
    pub socket_bytes_per_ps: f64,
    pub core_bytes_per_ps: f64,
}

impl MemoryDomains {
    /// Ranks in memory-bound work that saturate a socket.
    pub fn saturation_ranks(&self) -> f64 {
        self.socket_bytes_per_ps / self.core_bytes_per_ps
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    pub inter_node: LinkClass,
    #[serde(default)]
    pub intra_node: Option<LinkClass>,
    #[serde(default)]
    pub intra_socket: Option<LinkClass>,
    pub ranks_per_node: u32,
    /// 0: a node is one socket.
    #[serde(default)]
    pub ranks_per_socket: u32,
    #[serde(default)]
    pub mapping: Mapping,
    #[serde(default)]
    pub topology: Topology,
    /// Latency added per link between nodes.
    #[serde(default)]
    pub hop_latency_ps: Time,
    /// Congestion penalty T = stalls_per_byte · n · n_cores · stall_ps · hops
    /// (Krylov paper §5.7; n_cores = ranks_per_node, which share the NIC).
    #[serde(default)]
    pub stalls_per_byte: f64,
    #[serde(default)]
    pub stall_ps: f64,
    /// The node's off-node injection: picoseconds per byte (1/β_node); 0 = unlimited.
    #[serde(default)]
    pub node_ps_per_byte: f64,
    #[serde(default)]
    pub regimes: Vec<Regime>,
    #[serde(default)]
    pub memory: Option<MemoryDomains>,
    /// Shared links between nodes.
    #[serde(default)]
    pub links: LinkModel,
    /// Seeds the regimes (set from the scenario's seed).
    #[serde(default)]
    pub seed: u64,
    /// Per class (socket, node, other node): the three protocols and the short limit.
    #[serde(skip)]
    pub(crate) classes: Vec<([LogGOPS; 3], u64)>,
    /// Position of each rank within its node (Table and RoundRobin mappings).
    #[serde(skip)]
    pub(crate) slot_of: Vec<u32>,
}

pub const SAME_SOCKET: usize = 0;
pub const SAME_NODE: usize = 1;
pub const OTHER_NODE: usize = 2;

impl Platform {
    /// Whether plain LogGOPS (one link set inside a node, one between
    /// nodes, block mapping) describes it exactly: no protocol switch, no
    /// socket class, topology, injection limit, regimes or memory domains.
    pub fn is_plain(&self) -> bool {
        let plain = |c: &LinkClass| c.short.is_none() && c.rendezvous.is_none();
        self.intra_socket.is_none()
            && self.ranks_per_socket == 0
            && plain(&self.inter_node)
            && self.intra_node.as_ref().is_none_or(plain)
            && self.mapping == Mapping::Block
            && self.topology == Topology::FullyConnected
            && self.hop_latency_ps == 0
            && self.stalls_per_byte == 0.0
            && self.node_ps_per_byte == 0.0
            && self.regimes.is_empty()
            && self.memory.is_none()
            && !self.links.flow
    }

    /// What the engine relies on (the scenario's rules, `NetworkSpec::validate`, check the rest).
    pub fn validate(&self) -> Result<(), RuleError> {
        if self.ranks_per_node == 0 {
            return Err(RuleError::new("network.ranks_per_node", "must be at least 1"));
        }
        for (name, c) in [
            ("network", Some(&self.inter_node)),
            ("network.intra_node", self.intra_node.as_ref()),
            ("network.intra_socket", self.intra_socket.as_ref()),
        ] {
            if let Some(c) = c {
                for p in [Some(&c.eager), c.short.as_ref(), c.rendezvous.as_ref()].into_iter().flatten() {
                    p.validate(name)?;
                }
            }
        }
        Ok(())
    }

    /// Builds the lookup tables for a run of `ranks` ranks and checks the
    /// mapping and topology against it.
    pub fn prepare_for(&mut self, ranks: u32) -> Result<(), RuleError> {
        self.validate()?;
        let inter = self.inter_node.table();
        let node = self.intra_node.as_ref().map_or(inter, |c| c.table());
        let socket = self.intra_socket.as_ref().map_or(node, |c| c.table());
        self.classes = vec![socket, node, inter];
        let rpn = self.ranks_per_node;
        self.slot_of.clear();
        let nodes = match &self.mapping {
            Mapping::Block => ranks.div_ceil(rpn),
            Mapping::RoundRobin { nodes } => {
                if *nodes == 0 || (*nodes as u64) * (rpn as u64) < ranks as u64 {
                    return Err(RuleError::new("network.mapping", format!("{nodes} nodes of {rpn} ranks cannot hold {ranks} ranks")));
                }
                *nodes
            }
            Mapping::Table { nodes } => {
                if nodes.len() != ranks as usize {
                    return Err(RuleError::new("network.mapping", format!("{} entries for {ranks} ranks", nodes.len())));
                }
                // (node numbers index per-node state: whoever made the table
                // bounded them, a mapping file's by the rank count, jobs' listed
                // nodes by the memory they make; a torus's are checked below)
                // Slots: ranks in order within each node (sorting, not a per-node table).
                let mut order: Vec<u32> = (0..ranks).collect();
                order.sort_by_key(|&r| (nodes[r as usize], r));
                self.slot_of = vec![0; ranks as usize];
                let mut run = 0u32;
                for (i, &r) in order.iter().enumerate() {
                    run = if i > 0 && nodes[order[i - 1] as usize] == nodes[r as usize] { run + 1 } else { 0 };
                    if run >= rpn {
                        return Err(RuleError::new(
                            "network.mapping",
                            format!("puts more than ranks_per_node ({rpn}) ranks on node {}", nodes[r as usize]),
                        ));
                    }
                    self.slot_of[r as usize] = run;
                }
                nodes.iter().copied().max().map_or(0, |m| m + 1)
            }
        };
        self.topology.validate(nodes as u64)
    }

    #[inline]
    pub fn node(&self, r: u32) -> u32 {
        match &self.mapping {
            Mapping::Block => r / self.ranks_per_node,
            Mapping::RoundRobin { nodes } => r % nodes,
            Mapping::Table { nodes } => nodes[r as usize],
        }
    }

    /// Position of rank r within its node.
    #[inline]
    fn slot(&self, r: u32) -> u32 {
        match &self.mapping {
            Mapping::Block => r % self.ranks_per_node,
            Mapping::RoundRobin { nodes } => r / nodes,
            Mapping::Table { .. } => self.slot_of[r as usize],
        }
    }

    fn sockets_per_node(&self) -> u32 {
        if self.ranks_per_socket == 0 {
            1
        } else {
            self.ranks_per_node.div_ceil(self.ranks_per_socket)
        }
    }

    /// The memory domain (socket) of rank r, numbered across nodes.
    #[inline]
    pub fn socket(&self, r: u32) -> u32 {
        let within = self.slot(r).checked_div(self.ranks_per_socket).unwrap_or(0);
        self.node(r) * self.sockets_per_node() + within
    }

    /// Number of memory domains for `ranks` ranks.
    pub fn sockets(&self, ranks: u32) -> u32 {
        (0..ranks).map(|r| self.socket(r) + 1).max().unwrap_or(0)
    }

    #[inline]
    pub fn class(&self, a: u32, b: u32) -> usize {
        if self.node(a) != self.node(b) {
            OTHER_NODE
        } else if self.ranks_per_socket > 0 && self.slot(a) / self.ranks_per_socket == self.slot(b) / self.ranks_per_socket {
            SAME_SOCKET
        } else {
            SAME_NODE
        }
    }

    #[inline]
    pub fn params(&self, a: u32, b: u32, size: u64) -> &LogGOPS {
        let (table, short_max) = &self.classes[self.class(a, b)];
        let proto = if *short_max > 0 && size <= *short_max {
            0
        } else if size <= table[1].s_bytes {
            1
        } else {
            2
        };
        &table[proto]
    }

    /// Latency a message of `size` bytes adds crossing `hops` links: the
    /// per-hop latency and the congestion penalty.
    #[inline]
    pub fn path_latency(&self, hops: u32, size: u64) -> Time {
        let stalls = self.stalls_per_byte * size as f64 * self.ranks_per_node as f64 * self.stall_ps * hops as f64;
        // each term cut past the engine's limit (where the run stops), so the sum cannot wrap
        let cut = crate::time::PAST_LIMIT;
        self.hop_latency_ps.saturating_mul(hops as Time).min(cut) + (stalls.round().min(cut as f64) as Time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn platform(mapping: Mapping) -> Platform {
        let base = LogGOPS::loggopsim_defaults();
        let class = |l| LinkClass::uniform(LogGOPS { l_ps: l, ..base });
        Platform {
            inter_node: LinkClass { short_max_bytes: 64, short: Some(LogGOPS { l_ps: 7, ..base }), ..class(1000) },
            intra_node: Some(class(100)),
            intra_socket: Some(class(10)),
            ranks_per_node: 4,
            ranks_per_socket: 2,
            mapping,
            topology: Topology::FullyConnected,
            hop_latency_ps: 0,
            stalls_per_byte: 0.0,
            stall_ps: 0.0,
            node_ps_per_byte: 0.0,
            regimes: vec![],
            memory: None,
            links: LinkModel::default(),
            seed: 0,
            classes: vec![],
            slot_of: vec![],
        }
    }

    #[test]
    fn link_class_and_protocol_follow_placement_and_size() {
        let mut p = platform(Mapping::Block);
        p.prepare_for(8).unwrap();
        assert_eq!((p.params(0, 1, 100).l_ps, p.params(0, 2, 100).l_ps, p.params(0, 4, 100).l_ps), (10, 100, 1000));
        assert_eq!(p.params(0, 4, 64).l_ps, 7); // short protocol off-node
        assert_eq!((p.socket(0), p.socket(2), p.socket(5), p.sockets(8)), (0, 1, 2, 4));
        let mut rr = platform(Mapping::RoundRobin { nodes: 2 });
        rr.prepare_for(8).unwrap();
        assert_eq!((rr.node(0), rr.node(1), rr.node(2)), (0, 1, 0));
        assert_eq!(rr.params(0, 2, 100).l_ps, 10); // slots 0 and 1 of node 0: one socket
        let mut t = platform(Mapping::Table { nodes: vec![1, 1, 0, 0, 0, 0, 1, 1] });
        t.prepare_for(8).unwrap();
        assert_eq!((t.class(0, 1), t.class(0, 6), t.class(0, 2)), (SAME_SOCKET, SAME_NODE, OTHER_NODE));
        let mut bad = platform(Mapping::Table { nodes: vec![0; 5] });
        assert!(bad.prepare_for(5).unwrap_err().to_string().contains("more than ranks_per_node"));
    }
}
