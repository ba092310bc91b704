//! Runs a collective's steps as stream ops, one at a time: a rank's whole
//! collective state is this small cursor.

use super::stream_op::StreamOp;
use crate::collectives::{Collective, Step};

/// Walks a rank through a collective's steps, one stream op at a time.
/// Slots: 0 for receives, 1 for exchange sends, 1..=n for a fan's sends and receives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Driver {
    index: Packed32,
    sub: u8,
    /// What the closing wait of the current step covers (so the step need
    /// not be computed again for it): 1 = slot 0, 3 = slots 0 and 1.
    wait: u8,
}

impl Driver {
    #[inline(always)]
    pub fn next(&mut self, c: &Collective, rank: u32) -> Option<StreamOp> {
        self.next_with(c.tag, |i| c.step(rank, i))
    }

    /// `next` for steps given by `step(i)` (a workload's own, such as the
    /// v-variants with per-rank counts).
    #[inline(always)]
    pub fn next_with(&mut self, tag: u32, step: impl Fn(u32) -> Option<Step>) -> Option<StreamOp> {
        if self.sub > 0 && (self.wait == 1 || self.sub == 2) {
            let mask = self.wait as u64;
            (self.index, self.sub, self.wait) = (self.index.next(), 0, 0);
            return Some(StreamOp::Wait(mask));
        }
        let step = step(self.index.get())?;
        Some(match (step, self.sub) {
            (Step::Recv { from, bytes }, _) => {
                (self.sub, self.wait) = (1, 1);
                StreamOp::CollRecv { peer: from, tag, bytes, slot: 0 }
            }
            (Step::Send { to, bytes }, _) => {
                (self.sub, self.wait) = (1, 1);
                StreamOp::CollSend { peer: to, tag, bytes, slot: 0 }
            }
            (Step::Exchange { from, recv_bytes, .. }, 0) => {
                (self.sub, self.wait) = (1, 3);
                StreamOp::CollRecv { peer: from, tag, bytes: recv_bytes, slot: 0 }
            }
            (Step::Exchange { to, send_bytes, .. }, _) => {
                self.sub = 2;
                StreamOp::CollSend { peer: to, tag, bytes: send_bytes, slot: 1 }
            }
            (Step::FanOut { to, bytes, k }, _) => {
                self.index = self.index.next();
                StreamOp::CollSend { peer: to, tag, bytes, slot: 1 + k }
            }
            (Step::FanIn { from, bytes, k }, _) => {
                self.index = self.index.next();
                StreamOp::CollRecv { peer: from, tag, bytes, slot: 1 + k }
            }
            (Step::WaitFanOut { n }, _) => {
                self.index = self.index.next();
                StreamOp::Wait(((1u64 << n) - 1) << 1)
            }
        })
    }
}

/// A u32 kept as two u16 halves: per-rank cursors holding one then align to
/// 2 bytes, so a rank's program state packs without padding (the BSP
/// cursor with its barrier driver fits 14 bytes, its program state 32).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Packed32([u16; 2]);

impl Packed32 {
    #[inline(always)]
    pub fn get(self) -> u32 {
        (self.0[1] as u32) << 16 | self.0[0] as u32
    }
    #[inline(always)]
    pub fn new(v: u32) -> Self {
        Packed32([v as u16, (v >> 16) as u16])
    }
    #[inline(always)]
    pub fn next(self) -> Self {
        Self::new(self.get() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::stream::StreamProgram;
    use crate::workloads::Bsp;

    #[test]
    fn packed_halves_round_trip_and_keep_the_bsp_state_at_32_bytes() {
        for v in [0, 1, 65_535, 65_536, u32::MAX - 1] {
            assert_eq!(Packed32::new(v).get(), v);
            assert_eq!(Packed32::new(v).next().get(), v + 1);
        }
        assert_eq!(std::mem::size_of::<Driver>(), 6);
        assert_eq!(StreamProgram::<Bsp>::state_bytes_per_rank(&Bsp::default()), 32);
    }

    #[test]
    fn cursors_with_a_packed_count_keep_their_program_state_at_32_bytes() {
        // a u32 count in them would align the cursor to 4 and the state to 40 bytes
        use crate::workloads::{ChebFd, CollectiveLoop, Krylov, Spmv};
        assert_eq!(StreamProgram::<CollectiveLoop>::state_bytes_per_rank(&CollectiveLoop::default()), 32);
        assert_eq!(StreamProgram::<ChebFd>::state_bytes_per_rank(&ChebFd::default()), 32);
        assert_eq!(StreamProgram::<Krylov>::state_bytes_per_rank(&Krylov::default()), 32);
        assert_eq!(StreamProgram::<Spmv>::state_bytes_per_rank(&Spmv::default()), 32);
    }
}
