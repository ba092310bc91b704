//! LogGOPS network parameters and the per-message costs derived from them.
//!
//! Costs follow LogGOPSim exactly (see docs/engine-semantics.md):
//! a message of s bytes costs the sender's CPU o + (s-1)·O, the sender's NIC
//! g + (s-1)·G, arrives (first byte) after o + L, and costs the receiver's CPU
//! o + max((s-1)·O, (s-1)·G) and NIC g + (s-1)·G. Messages above S bytes use
//! the rendezvous protocol: the send completes only when the receiver matches.

pub mod mapping;
mod platform;
mod regimes;
mod routes;
pub mod spec;
mod topology;

pub use platform::{Mapping, MemoryDomains, Platform, OTHER_NODE};
pub use regimes::{RankCursor, Regime, RegimeCursor};
pub use routes::{LinkClassId, LinkModel, LinkModelKind, LinksSpec, Routes, Routing};
pub use topology::{Links, Topology};

use crate::rule::RuleError;
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a message above the eager limit travels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Rendezvous {
    /// LogGOPSim's: the data leaves at once; the send completes when the
    /// receiver matches it, at no acknowledgement cost.
    #[default]
    Loggopsim,
    /// A request-to-send and a clear-to-send (0-byte messages, each costing
    /// o + L + o) precede the data. The receiver answers once the receive is
    /// posted, the sender sends the data once its CPU handles the answer, so
    /// computation between them delays the transfer.
    Handshake,
    /// A receiver-driven rendezvous (an RDMA read, as UCX's default `get_zcopy`
    /// scheme): the request-to-send as in `Handshake`, then the receiver's
    /// read request (o + L) reaches the sender's NIC, which sends the data
    /// without the sender's CPU; the send completes as the request arrives.
    Get,
}

/// How a NIC shares work with its CPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NicModel {
    /// LogGOPSim's: a send starts when both the CPU and the NIC are free; a
    /// message is received when both are, the CPU paying o + max((s−1)·O, (s−1)·G).
    #[default]
    Loggopsim,
    /// A DMA NIC: a send is posted when the CPU is free (o + (s−1)·O) and
    /// leaves when the NIC is; the NIC takes arriving data whenever it is
    /// free, while the CPU computes, and the CPU then pays o + (s−1)·O once
    /// the last byte has landed.
    Dma,
}

/// One link class's LogGOPS parameters, in picoseconds (per byte for G and O).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogGOPS {
    pub l_ps: Time,
    pub o_ps: Time,
    pub g_ps: Time,
    #[serde(rename = "big_g_ps_per_byte")]
    pub big_g_ps: f64,
    #[serde(rename = "big_o_ps_per_byte")]
    pub big_o_ps: f64,
    /// Largest message sent eagerly; larger ones use rendezvous.
    pub s_bytes: u64,
}

impl LogGOPS {
    /// LogGOPSim's defaults (its --help): L=2500ns o=1500ns g=1000ns G=6ns O=0 S=65535,
    /// also the scenario's defaults.
    pub const LOGGOPSIM: LogGOPS =
        LogGOPS { l_ps: 2_500_000, o_ps: 1_500_000, g_ps: 1_000_000, big_g_ps: 6_000.0, big_o_ps: 0.0, s_bytes: 65535 };

    pub fn loggopsim_defaults() -> Self {
        Self::LOGGOPSIM
    }

    /// (s-1)·X for the per-byte terms. A 0-byte message costs no per-byte time
    /// (LogGOPSim computes (0-1)·G = -G there, a defect we do not copy).
    #[inline]
    fn per_byte(size: u64, per_byte_ps: f64) -> Time {
        if size <= 1 || per_byte_ps == 0.0 {
            0
        } else {
            // Non-negative, so adding ½ and truncating rounds to nearest
            // (and avoids a libm call on every message).
            // Capped just past the time limit: the run stops there, and no sum wraps.
            ((size - 1) as f64 * per_byte_ps + 0.5).min(crate::time::PAST_LIMIT as f64) as Time
        }
    }

    #[inline]
    pub fn send_cpu(&self, size: u64) -> Time {
        self.o_ps + Self::per_byte(size, self.big_o_ps)
    }
    #[inline]
    pub fn send_nic(&self, size: u64) -> Time {
        self.g_ps + Self::per_byte(size, self.big_g_ps)
    }
    #[inline]
    pub fn recv_cpu(&self, size: u64) -> Time {
        self.o_ps + Self::per_byte(size, self.big_o_ps).max(Self::per_byte(size, self.big_g_ps))
    }
    /// The receiver's CPU cost with a DMA NIC ([`NicModel::Dma`]).
    #[inline]
    pub fn recv_cpu_per_byte_o(&self, size: u64) -> Time {
        self.o_ps + Self::per_byte(size, self.big_o_ps)
    }
    #[inline]
    pub fn recv_nic(&self, size: u64) -> Time {
        self.g_ps + Self::per_byte(size, self.big_g_ps)
    }
    #[inline]
    pub fn is_rendezvous(&self, size: u64) -> bool {
        size > self.s_bytes
    }

    pub fn validate(&self, what: &str) -> Result<(), RuleError> {
        use crate::time::MAX_INPUT;
        for (name, v) in [("G", self.big_g_ps), ("O", self.big_o_ps)] {
            if !(v.is_finite() && (0.0..=MAX_INPUT as f64).contains(&v)) {
                return Err(RuleError::new(
                    format!("{what}.{name}"),
                    format!("must be a finite number between 0 and {MAX_INPUT} ps, got {v}"),
                ));
            }
        }
        for (name, v) in [("L", self.l_ps), ("o", self.o_ps), ("g", self.g_ps)] {
            if v > MAX_INPUT {
                return Err(RuleError::new(format!("{what}.{name}"), format!("must be at most {MAX_INPUT} ps (about 13 days), got {v}")));
            }
        }
        Ok(())
    }
}

/// The parameters of one link class, by protocol: messages up to
/// `short_max_bytes` use `short`, up to the eager limit (`eager.s_bytes`)
/// `eager`, larger ones `rendezvous` (Table 1 of the Krylov paper gives
/// postal α, β per protocol and class). Absent protocols use `eager`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkClass {
    pub eager: LogGOPS,
    #[serde(default)]
    pub short_max_bytes: u64,
    #[serde(default)]
    pub short: Option<LogGOPS>,
    #[serde(default)]
    pub rendezvous: Option<LogGOPS>,
}

impl LinkClass {
    pub fn uniform(p: LogGOPS) -> Self {
        LinkClass { eager: p, short_max_bytes: 0, short: None, rendezvous: None }
    }

    /// The three protocols' parameters, every one with the class's eager limit.
    fn table(&self) -> ([LogGOPS; 3], u64) {
        let s = self.eager.s_bytes;
        let with_s = |p: LogGOPS| LogGOPS { s_bytes: s, ..p };
        ([with_s(self.short.unwrap_or(self.eager)), self.eager, with_s(self.rendezvous.unwrap_or(self.eager))], self.short_max_bytes)
    }
}

/// Most ports a NIC may have (`nic_ports`); each costs 16 bytes per rank.
pub const MAX_NIC_PORTS: u8 = 16;

/// Which parameters a message between two ranks uses, and what it meets on
/// the way: link class (same socket, same node, other node), the node
/// topology's hops, the node's injection bandwidth and latency regimes.
///
/// It is given as one description, a [`Platform`]; the engine takes the
/// plain LogGOPS path itself when the description needs nothing more.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "Platform")]
pub struct Network {
    /// Between ranks on different nodes (and the only class when ranks_per_node = 1).
    pub inter_node: LogGOPS,
    /// Between ranks on the same node; defaults to inter_node when absent.
    #[serde(default)]
    pub intra_node: Option<LogGOPS>,
    /// Block mapping: ranks r and q share a node iff r / ranks_per_node == q / ranks_per_node.
    pub ranks_per_node: u32,
    /// The platform beyond plain LogGOPS (None: LogGOPSim's model exactly).
    #[serde(default)]
    pub platform: Option<Box<Platform>>,
    pub rendezvous: Rendezvous,
    pub nic_model: NicModel,
    /// Ports per NIC: a send takes the port free first, so a rank can feed
    /// this many messages at once, each at 1/G (1: LogGOPSim's one NIC).
    pub nic_ports: u8,
}

impl From<Platform> for Network {
    fn from(p: Platform) -> Self {
        if p.is_plain() {
            return Network {
                inter_node: p.inter_node.eager,
                intra_node: p.intra_node.map(|c| c.eager),
                ranks_per_node: p.ranks_per_node,
                platform: None,
                rendezvous: Rendezvous::default(),
                nic_model: NicModel::default(),
                nic_ports: 1,
            };
        }
        Network {
            inter_node: p.inter_node.eager,
            intra_node: None,
            ranks_per_node: p.ranks_per_node,
            platform: Some(Box::new(p)),
            ..Network::uniform(LogGOPS::LOGGOPSIM)
        }
    }
}

impl Network {
    pub fn uniform(p: LogGOPS) -> Self {
        Network {
            inter_node: p,
            intra_node: None,
            ranks_per_node: 1,
            platform: None,
            rendezvous: Rendezvous::default(),
            nic_model: NicModel::default(),
            nic_ports: 1,
        }
    }

    #[inline(always)]
    pub fn params(&self, a: u32, b: u32, size: u64) -> &LogGOPS {
        if self.platform.is_some() {
            return self.platform_params(a, b, size);
        }
        match &self.intra_node {
            Some(intra) if a / self.ranks_per_node == b / self.ranks_per_node => intra,
            _ => &self.inter_node,
        }
    }

    /// The link class of a message from `a` to `b`: the platform's, else
    /// same node where `intra_node` applies and other node otherwise.
    pub fn class(&self, a: u32, b: u32) -> usize {
        match &self.platform {
            Some(pl) => pl.class(a, b),
            None if self.intra_node.is_some() && a / self.ranks_per_node == b / self.ranks_per_node => platform::SAME_NODE,
            None => OTHER_NODE,
        }
    }

    /// Kept out of line so that plain LogGOPS runs pay one test for it.
    #[inline(never)]
    fn platform_params(&self, a: u32, b: u32, size: u64) -> &LogGOPS {
        self.platform.as_deref().expect("checked").params(a, b, size)
    }

    pub fn validate(&self) -> Result<(), RuleError> {
        if self.ranks_per_node == 0 {
            return Err(RuleError::new("network.ranks_per_node", "must be at least 1"));
        }
        if !(1..=MAX_NIC_PORTS).contains(&self.nic_ports) {
            return Err(RuleError::new("network.nic_ports", format!("must be 1 to {MAX_NIC_PORTS}, got {}", self.nic_ports)));
        }
        self.inter_node.validate("network")?;
        if let Some(p) = &self.intra_node {
            p.validate("network.intra_node")?;
        }
        if let Some(pl) = &self.platform {
            pl.validate()?;
        }
        Ok(())
    }

    /// Builds the platform's lookup tables for a run of `ranks` ranks.
    pub fn prepare(&mut self, ranks: u32) -> Result<(), RuleError> {
        match self.platform.as_mut() {
            Some(pl) => pl.prepare_for(ranks),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_match_loggops_formulas() {
        let p = LogGOPS { l_ps: 100, o_ps: 10, g_ps: 20, big_g_ps: 2.0, big_o_ps: 1.0, s_bytes: 64 };
        assert_eq!(p.send_cpu(11), 10 + 10);
        assert_eq!(p.send_nic(11), 20 + 20);
        assert_eq!(p.recv_cpu(11), 10 + 20); // max((s-1)O, (s-1)G)
        assert_eq!(p.recv_nic(11), 20 + 20);
        assert_eq!(p.send_nic(0), 20); // no negative per-byte term
        assert!(!p.is_rendezvous(64) && p.is_rendezvous(65));
    }

    #[test]
    fn one_description_takes_the_plain_path_only_when_it_needs_nothing_more() {
        let eager = r#"{"eager": {"l_ps": 1, "o_ps": 2, "g_ps": 3, "big_g_ps_per_byte": 0.0, "big_o_ps_per_byte": 0.0, "s_bytes": 10}}"#;
        let plain = format!(r#"{{"inter_node": {eager}, "intra_node": {eager}, "ranks_per_node": 4}}"#);
        let n: Network = serde_json::from_str(&plain).unwrap();
        assert!(n.platform.is_none() && n.intra_node.is_some() && n.ranks_per_node == 4);
        for extra in [r#""mapping": {"kind": "round_robin", "nodes": 2}"#, r#""node_ps_per_byte": 0.5"#, r#""ranks_per_socket": 2"#] {
            let json = format!(r#"{{"inter_node": {eager}, "ranks_per_node": 4, {extra}}}"#);
            let n: Network = serde_json::from_str(&json).unwrap();
            assert!(n.platform.is_some(), "{extra}");
        }
    }

    #[test]
    fn intra_node_class_applies_within_a_node_only() {
        let inter = LogGOPS::loggopsim_defaults();
        let intra = LogGOPS { l_ps: 1, ..inter };
        let n = Network { intra_node: Some(intra), ranks_per_node: 4, ..Network::uniform(inter) };
        assert_eq!(n.params(0, 3, 8).l_ps, 1);
        assert_eq!(n.params(3, 4, 8).l_ps, inter.l_ps);
    }
}
