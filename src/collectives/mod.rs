//! Collective algorithms as small per-rank state machines that expand into
//! point-to-point stream ops. Each yields `None` once its part is complete.
//! Request slots: a collective uses slots from 0 upward; the caller must not
//! have requests pending in them.

use crate::program::stream::StreamOp;

/// ceil(log2(p)) for p ≥ 1.
#[inline]
pub fn ceil_log2(p: u32) -> u32 {
    if p <= 1 { 0 } else { 32 - (p - 1).leading_zeros() }
}

/// Dissemination (Hensgen et al.): in round k each rank sends to r+2^k and
/// receives from r-2^k (mod p). Allreduce of small data and barrier
/// (0 bytes) in ⌈log2 p⌉ rounds; n·⌈log2 p⌉ messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dissemination {
    round: u8,
    step: u8,
}

impl Dissemination {
    pub fn next(&mut self, rank: u32, p: u32, bytes: u64, tag: u32) -> Option<StreamOp> {
        if self.round as u32 >= ceil_log2(p) {
            return None;
        }
        let dist = (1u64 << self.round) % p as u64;
        let op = match self.step {
            0 => StreamOp::IRecv { peer: ((rank as u64 + p as u64 - dist) % p as u64) as u32, tag, bytes, slot: 0 },
            1 => StreamOp::ISend { peer: ((rank as u64 + dist) % p as u64) as u32, tag, bytes, slot: 1 },
            _ => {
                self.round += 1;
                self.step = 0;
                return Some(StreamOp::Wait(0b11));
            }
        };
        self.step += 1;
        Some(op)
    }
}

/// Binomial-tree broadcast from `root`: relative rank v receives from v with
/// its highest bit cleared, then sends to v + 2^k for every 2^k > v (in
/// ascending order), as LogGOPSim's schedgen. n−1 messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BinomialBcast {
    step: u8,
    /// Next child exponent.
    k: u8,
    sends: u8,
}

impl BinomialBcast {
    pub fn next(&mut self, rank: u32, p: u32, root: u32, bytes: u64, tag: u32) -> Option<StreamOp> {
        let v = (rank + p - root) % p;
        loop {
            match self.step {
                0 => {
                    self.step = 2;
                    self.k = if v == 0 { 0 } else { 32 - v.leading_zeros() as u8 };
                    if v != 0 {
                        self.step = 1;
                        let parent = v & !(1u32 << (31 - v.leading_zeros()));
                        return Some(StreamOp::IRecv { peer: (parent + root) % p, tag, bytes, slot: 0 });
                    }
                }
                1 => {
                    self.step = 2;
                    return Some(StreamOp::Wait(1));
                }
                2 => {
                    let child = v as u64 + (1u64 << self.k);
                    if self.k < 32 && child < p as u64 {
                        self.k += 1;
                        self.sends += 1;
                        return Some(StreamOp::ISend { peer: ((child as u32) + root) % p, tag, bytes, slot: self.sends });
                    }
                    self.step = 3;
                    if self.sends > 0 {
                        let mask = ((1u64 << self.sends) - 1) << 1;
                        return Some(StreamOp::Wait(mask));
                    }
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain_bcast(rank: u32, p: u32, root: u32) -> Vec<StreamOp> {
        let mut b = BinomialBcast::default();
        std::iter::from_fn(|| b.next(rank, p, root, 8, 0)).collect()
    }

    #[test]
    fn binomial_tree_matches_loggopsim_schedgen_layout() {
        // binary_tree_16.goal: 0 → 1,2,4,8; 1 → 3,5,9; 3 ← 1 and → 7,11; 12 ← 4.
        let sends = |r| drain_bcast(r, 16, 0).iter().filter_map(|o| match o { StreamOp::ISend { peer, .. } => Some(*peer), _ => None }).collect::<Vec<_>>();
        assert_eq!(sends(0), vec![1, 2, 4, 8]);
        assert_eq!(sends(1), vec![3, 5, 9]);
        assert_eq!(sends(3), vec![7, 11]);
        assert_eq!(sends(12), Vec::<u32>::new());
        assert!(matches!(drain_bcast(12, 16, 0)[0], StreamOp::IRecv { peer: 4, .. }));
        // n-1 messages in total, for any p and root
        for p in [1u32, 2, 7, 16, 100] {
            let total: usize = (0..p).map(|r| drain_bcast(r, p, p / 3).iter().filter(|o| matches!(o, StreamOp::ISend { .. })).count()).sum();
            assert_eq!(total, p as usize - 1, "p={p}");
        }
    }

    #[test]
    fn dissemination_has_n_log_n_messages_and_right_peers() {
        assert_eq!(ceil_log2(1), 0);
        assert_eq!(ceil_log2(16), 4);
        assert_eq!(ceil_log2(17), 5);
        let mut d = Dissemination::default();
        let ops: Vec<StreamOp> = std::iter::from_fn(|| d.next(0, 16, 1, 3)).collect();
        assert_eq!(ops.len(), 12);
        assert!(matches!(ops[0], StreamOp::IRecv { peer: 15, .. }));
        assert!(matches!(ops[4], StreamOp::ISend { peer: 2, .. }));
        assert!(matches!(ops[9], StreamOp::IRecv { peer: 8, .. }));
    }
}
