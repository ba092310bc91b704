//! Where each rank's clocks sit in the engine's one array of them (see
//! `Engine::clocks`): shared by the engine and the probes that read it.

use crate::network::{Network, NicModel};
use crate::program::{OpKind, ReadyOp};
use crate::time::Time;

/// Words per rank after its clocks: its two match lists share one.
pub(crate) const LISTS: usize = 1;

/// Per rank, `ncpu` CPU clocks, `nnic` send and `nnic` receive NIC
/// clocks, then the match lists: `stride` words.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub stride: usize,
    pub ncpu: usize,
    pub nnic: usize,
}

impl Layout {
    pub fn new(ncpu: usize, nnic: usize) -> Self {
        Layout { stride: ncpu + 2 * nnic + LISTS, ncpu, nnic }
    }

    /// Index of a CPU's clock.
    #[inline]
    pub fn o(&self, rank: u32, cpu: u8) -> usize {
        rank as usize * self.stride + (cpu as usize).min(self.ncpu - 1)
    }

    /// Index of a NIC's send clock; its receive clock is `nnic` further on.
    #[inline]
    pub fn gs(&self, rank: u32, nic: u8) -> usize {
        rank as usize * self.stride + self.ncpu + (nic as usize).min(self.nnic - 1)
    }

    #[inline]
    pub fn gr(&self, rank: u32, nic: u8) -> usize {
        self.gs(rank, nic) + self.nnic
    }

    /// Index of a rank's match lists.
    #[inline]
    pub fn lists(&self, rank: u32) -> usize {
        (rank as usize + 1) * self.stride - LISTS
    }

    /// The clocks a send waits for, given its CPU's and NIC's: with
    /// LogGOPSim's NIC both, with a DMA NIC (which queues the message) the CPU.
    #[inline(always)]
    pub fn send_clocks(&self, model: NicModel, c: usize, n: usize) -> [usize; 2] {
        match model {
            NicModel::Loggopsim => [c, n],
            NicModel::Dma => [c, c],
        }
    }

    /// With `nic_ports` > 1, the port of `rank`'s NIC that is free first
    /// (the lowest-numbered at a tie).
    #[cold]
    pub fn port(&self, clocks: &[Time], rank: u32) -> u8 {
        let first = self.gs(rank, 0);
        let clocks = &clocks[first..first + self.nnic];
        (0..self.nnic).min_by_key(|&i| clocks[i]).unwrap_or(0) as u8
    }

    /// The NIC a ready op uses: its own, or with ports the one free first.
    #[inline(always)]
    pub fn nic_for(&self, net: &Network, clocks: &[Time], r: u32, op: &ReadyOp) -> u8 {
        if net.nic_ports > 1 && op.kind == OpKind::Send {
            self.port(clocks, r)
        } else {
            op.nic
        }
    }

    /// The clocks the event for `op` of rank `r` waits for.
    pub fn op_clocks(&self, net: &Network, clocks: &[Time], r: u32, op: &ReadyOp) -> [usize; 2] {
        let c = self.o(r, op.cpu);
        match op.kind {
            OpKind::Send => self.send_clocks(net.nic_model, c, self.gs(r, self.nic_for(net, clocks, r, op))),
            _ => [c, c],
        }
    }
}
