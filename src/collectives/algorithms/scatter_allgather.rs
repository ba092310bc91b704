//! Open MPI's scatter-allgather broadcast: a binomial scatter of the
//! message's blocks, then a ring or recursive-doubling allgather of them.

use crate::collectives::{Algorithm, Collective, Step};

/// The steps of Open MPI's `bcast_intra_scatter_allgather(_ring)` for
/// relative rank v, generated in order; `step` takes the i-th. Block b
/// holds bytes [b·s, (b+1)·s) of the message, s = ⌈n/p⌉.
pub(super) fn scatter_allgather(c: &Collective, rank: u32, i: u32) -> Option<Step> {
    let b = Blocks::new(c, rank);
    let mut nth = Nth { steps: 0, i };
    if let Some(st) = binomial_scatter(&b, &mut nth) {
        return Some(st);
    }
    if c.algorithm == Algorithm::ScatterRingAllgather {
        return ring_allgather(&b, &mut nth);
    }
    doubling_allgather(&b, &mut nth)
}

/// A message of n bytes cut into p blocks of s = ⌈n/p⌉, seen from relative
/// rank v of a collective rooted at `root`.
struct Blocks {
    p: u64,
    n: u64,
    s: u64,
    v: u64,
    root: u64,
}

impl Blocks {
    fn new(c: &Collective, rank: u32) -> Self {
        let (p, n) = (c.ranks as u64, c.bytes);
        let v = (rank as u64 + p - c.root as u64) % p;
        Blocks { p, n, s: n.div_ceil(p), v, root: c.root as u64 }
    }

    /// The absolute rank of relative rank `x`.
    #[inline]
    fn abs(&self, x: u64) -> u32 {
        ((x % self.p + self.root) % self.p) as u32
    }

    /// Bytes from block `b` to the end.
    #[inline]
    fn bytes_from(&self, b: u64) -> u64 {
        self.n.saturating_sub(b * self.s)
    }
}

/// Picks the i-th of the steps generated in order.
struct Nth {
    steps: u32,
    i: u32,
}

impl Nth {
    #[inline]
    fn emit(&mut self, st: Step) -> Option<Step> {
        self.steps += 1;
        (self.steps - 1 == self.i).then_some(st)
    }
}

/// Binomial scatter: receive my subtree's blocks, then hand the children theirs.
#[inline]
fn binomial_scatter(b: &Blocks, nth: &mut Nth) -> Option<Step> {
    let (p, s, v) = (b.p, b.s, b.v);
    let mut mask = 1u64;
    let mut have = if v == 0 { b.n } else { 0 };
    while mask < p {
        if v & mask != 0 {
            have = b.bytes_from(v).min(mask * s);
            if have > 0 {
                if let Some(st) = nth.emit(Step::Recv { from: b.abs(v + p - mask), bytes: have }) {
                    return Some(st);
                }
            }
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if v + mask < p {
            let send = have.saturating_sub(s * mask);
            if send > 0 {
                if let Some(st) = nth.emit(Step::Send { to: b.abs(v + mask), bytes: send }) {
                    return Some(st);
                }
                have -= send;
            }
        }
        mask >>= 1;
    }
    None
}

/// Ring allgather: step k passes block (v − k) on to v + 1.
#[inline]
fn ring_allgather(b: &Blocks, nth: &mut Nth) -> Option<Step> {
    let (p, s, v) = (b.p, b.s, b.v);
    for k in 0..p.saturating_sub(1) {
        let send = b.bytes_from((v + p - k) % p).min(s);
        let recv = b.bytes_from((v + p - k - 1) % p).min(s);
        if let Some(st) = nth.emit(Step::Exchange { to: b.abs(v + 1), send_bytes: send, from: b.abs(v + p - 1), recv_bytes: recv }) {
            return Some(st);
        }
    }
    None
}

/// Recursive doubling allgather, with Open MPI's recursive-halving patch for non-powers of two.
#[inline]
fn doubling_allgather(b: &Blocks, nth: &mut Nth) -> Option<Step> {
    let (p, s, v) = (b.p, b.s, b.v);
    let mut cur = b.bytes_from(v).min(s);
    let mut mask = 1u64;
    while mask < p {
        let vremote = v ^ mask;
        let (my_root, remote_root) = (v & !(mask - 1), vremote & !(mask - 1));
        let mut recv = 0;
        if vremote < p {
            recv = b.bytes_from(remote_root).min(mask * s);
            if let Some(st) = nth.emit(Step::Exchange { to: b.abs(vremote), send_bytes: cur, from: b.abs(vremote), recv_bytes: recv }) {
                return Some(st);
            }
            cur += recv;
        }
        if remote_root + mask > p {
            let alldata = p.saturating_sub(my_root + mask);
            let mut h = mask >> 1;
            while h > 0 {
                let vr = v ^ h;
                let tree_root = v & !((h << 1) - 1);
                if vr > v && v < tree_root + alldata && vr >= tree_root + alldata && vr < p {
                    if let Some(st) = nth.emit(Step::Send { to: b.abs(vr), bytes: recv }) {
                        return Some(st);
                    }
                } else if vr < v && vr < tree_root + alldata && v >= tree_root + alldata {
                    // what the sender passes on: the block range it just received
                    let got = b.bytes_from(remote_root).min(mask * s);
                    if let Some(st) = nth.emit(Step::Recv { from: b.abs(vr), bytes: got }) {
                        return Some(st);
                    }
                    cur += got;
                    recv = got;
                }
                h >>= 1;
            }
        }
        mask <<= 1;
    }
    None
}
