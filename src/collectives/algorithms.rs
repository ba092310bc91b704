//! The step functions of every algorithm. Rooted algorithms work on the rank
//! relative to the root, v = (rank − root) mod p.

use super::{ceil_log2, floor_pow2, Algorithm, Collective, CollectiveKind, Step};
use scatter_allgather::scatter_allgather;

mod scatter_allgather;

// Long: the table of every (collective, algorithm) pair, one arm each; the
// arms are calls or a few lines, and one match keeps the dispatch inlined.
#[inline]
pub fn step(c: &Collective, rank: u32, i: u32) -> Option<Step> {
    use Algorithm::*;
    use CollectiveKind::*;
    let p = c.ranks;
    match (c.kind, c.algorithm) {
        (Barrier, Linear) => linear_barrier(rank, p, i),
        (Barrier, RecursiveDoubling) => recursive_doubling_barrier(rank, p, i),
        (Barrier, Binomial) => {
            // fan-in to rank 0, then fan-out: the binomial tree with empty messages
            let tree = Tree { p, root: 0 };
            let fan_in = tree.children(rank) + u32::from(rank != 0);
            if i < fan_in {
                tree.reduce(rank, i, |_| 0, 0)
            } else {
                tree.bcast(rank, i - fan_in, |_| 0, 0)
            }
        }
        (Barrier, _) => dissemination(rank, p, 0, i),
        (Allreduce, Dissemination) => dissemination(rank, p, c.bytes, i),
        (Allreduce, RecursiveDoubling) => recursive_doubling_allreduce(rank, p, c.bytes, i),
        (Allreduce, Ring) => ring(rank, p, c.bytes.div_ceil(p as u64), 2 * (p - 1), i),
        (Allreduce, Rabenseifner) => rabenseifner(rank, p, c.bytes, i),
        (Allreduce, _) => {
            // Binomial reduce to rank 0, then binomial broadcast from it.
            let tree = Tree { p, root: 0 };
            let reduce_steps = tree.children(rank) + u32::from(tree.v(rank) != 0);
            if i < reduce_steps {
                tree.reduce(rank, i, |_| c.bytes, c.bytes)
            } else {
                tree.bcast(rank, i - reduce_steps, |_| c.bytes, c.bytes)
            }
        }
        (Bcast, Binomial | BinaryTree | Knomial) if c.chunk_bytes > 0 => super::relay::relay_bcast(c, rank, i),
        (Bcast, BinaryTree) => binary_tree_bcast(c, rank, i),
        (Bcast, Linear) => linear_bcast(c, rank, i),
        (Bcast, Knomial) => knomial_bcast(c, rank, i),
        (Bcast, ScatterAllgather | ScatterRingAllgather) => scatter_allgather(c, rank, i),
        (Bcast, PipelinedRing | Ring | ModifiedRing | TwoRing | TwoRingModified) => super::relay::relay_bcast(c, rank, i),
        (Bcast, _) => Tree::of(c).bcast(rank, i, |_| c.bytes, c.bytes),
        (Reduce, Rabenseifner) => rabenseifner_reduce(c, rank, i),
        (Reduce, InOrderBinary) => in_order_binary_reduce(c, rank, i),
        (Reduce, Linear | Ring | TwoRing | BinaryTree | Knomial) => tree_reduce(c, rank, i),
        (Reduce, _) => Tree::of(c).reduce(rank, i, |_| c.bytes, c.bytes),
        (Gather, Linear) => linear_gather(c, rank, i, |_| c.bytes),
        (Scatter, Linear) => linear_scatter(c, rank, i, |_| c.bytes),
        (Gather, _) => {
            let t = Tree::of(c);
            t.reduce(rank, i, |child| t.subtree(child) as u64 * c.bytes, t.subtree(t.v(rank)) as u64 * c.bytes)
        }
        (Scatter, _) => {
            let t = Tree::of(c);
            t.bcast(rank, i, |child| t.subtree(child) as u64 * c.bytes, t.subtree(t.v(rank)) as u64 * c.bytes)
        }
        (Allgather, RecursiveDoubling) => {
            let k = i;
            (k < ceil_log2(p)).then(|| {
                let partner = rank ^ (1 << k);
                let bytes = c.bytes << k;
                Step::Exchange { to: partner, send_bytes: bytes, from: partner, recv_bytes: bytes }
            })
        }
        (Allgather, Bruck) => (i < ceil_log2(p)).then(|| {
            let d = 1u32 << i;
            let bytes = c.bytes * d.min(p - d) as u64;
            Step::Exchange { to: (rank + p - d) % p, send_bytes: bytes, from: (rank + d) % p, recv_bytes: bytes }
        }),
        (Allgather, NeighborExchange) => (i < p / 2).then(|| {
            // even ranks meet r+1 first, odd ranks r−1; then they alternate
            let up = rank.is_multiple_of(2) == i.is_multiple_of(2);
            let peer = if up { (rank + 1) % p } else { (rank + p - 1) % p };
            let bytes = if i == 0 { c.bytes } else { 2 * c.bytes };
            Step::Exchange { to: peer, send_bytes: bytes, from: peer, recv_bytes: bytes }
        }),
        (Allgather, _) => ring(rank, p, c.bytes, p - 1, i),
        (ReduceScatter | ReduceScatterBlock, RecursiveHalving) => recursive_halving(rank, p, c.bytes, i),
        (ReduceScatter | ReduceScatterBlock, Butterfly) => butterfly(rank, p, c.bytes, i),
        (ReduceScatter | ReduceScatterBlock, Pairwise) => pairwise(rank, p, c.bytes, i),
        (ReduceScatter | ReduceScatterBlock, Nonoverlapping) => {
            let tree = Tree { p, root: 0 };
            let reduce_steps = tree.children(rank) + u32::from(rank != 0);
            let total = c.bytes * p as u64;
            match (rank, i.checked_sub(reduce_steps)) {
                (_, None) => tree.reduce(rank, i, |_| total, total),
                (0, Some(j)) => (j + 1 < p).then(|| Step::Send { to: j + 1, bytes: c.bytes }),
                (_, Some(0)) => Some(Step::Recv { from: 0, bytes: c.bytes }),
                _ => None,
            }
        }
        (ReduceScatter | ReduceScatterBlock, _) => ring(rank, p, c.bytes, p - 1, i),
        (Scan | Exscan, RecursiveDoubling) => {
            // the i-th k with a partner r XOR 2^k inside the communicator
            let q = (0..ceil_log2(p)).map(|k| rank ^ (1 << k)).filter(|&q| q < p).nth(i as usize)?;
            Some(Step::Exchange { to: q, send_bytes: c.bytes, from: q, recv_bytes: c.bytes })
        }
        (Scan | Exscan, _) => {
            let recv = u32::from(rank > 0);
            match i.checked_sub(recv) {
                None => Some(Step::Recv { from: rank - 1, bytes: c.bytes }),
                Some(0) if rank + 1 < p => Some(Step::Send { to: rank + 1, bytes: c.bytes }),
                _ => None,
            }
        }
        (Alltoall, Linear) => linear_alltoall(rank, p, c.bytes, i),
        (Alltoall, Bruck) => (i < ceil_log2(p)).then(|| {
            let d = 1u32 << i;
            // blocks j in 0..p with bit i set: whole periods of 2d hold d each, plus the tail's
            let (full, tail) = (p / (2 * d), p % (2 * d));
            let bytes = c.bytes * (full * d + tail.saturating_sub(d)) as u64;
            Step::Exchange { to: (rank + d) % p, send_bytes: bytes, from: (rank + p - d) % p, recv_bytes: bytes }
        }),
        (Alltoall, _) => pairwise(rank, p, c.bytes, i),
    }
}

/// The v-variants on group-local ranks, `counts[j]` the block of rank j:
/// gatherv and scatterv linear, allgatherv by the ring, alltoallv pairwise
/// (rank j receives counts[j] bytes from every rank); the schedules of Open
/// MPI's basic component and MPICH's defaults for large or unequal counts.
pub fn v_step(c: &Collective, counts: &[u64], rank: u32, i: u32) -> Option<Step> {
    use CollectiveKind::*;
    let p = c.ranks;
    let size = |j: u32| counts.get(j as usize).copied().unwrap_or(0);
    match c.kind {
        Gather => linear_gather(c, rank, i, size),
        Scatter => linear_scatter(c, rank, i, size),
        Allgather => (i + 1 < p).then(|| {
            // step i passes on block rank − i and receives block rank − i − 1
            let (to, from) = ((rank + 1) % p, (rank + p - 1) % p);
            Step::Exchange { to, send_bytes: size((rank + p - i) % p), from, recv_bytes: size((rank + p - i - 1) % p) }
        }),
        Alltoall => (i + 1 < p).then(|| {
            let (to, from) = ((rank + i + 1) % p, (rank + p - i - 1) % p);
            Step::Exchange { to, send_bytes: size(to), from, recv_bytes: size(rank) }
        }),
        _ => step(c, rank, i),
    }
}

/// Open MPI's basic linear gather: every rank sends its block to the root,
/// which receives them in rank order (an empty block is an empty message).
fn linear_gather(c: &Collective, rank: u32, i: u32, size: impl Fn(u32) -> u64) -> Option<Step> {
    if rank != c.root {
        return (i == 0).then(|| Step::Send { to: c.root, bytes: size(rank) });
    }
    let j = if i < c.root { i } else { i + 1 };
    (j < c.ranks).then(|| Step::Recv { from: j, bytes: size(j) })
}

/// Open MPI's basic linear scatter: the root sends each rank its block in turn.
fn linear_scatter(c: &Collective, rank: u32, i: u32, size: impl Fn(u32) -> u64) -> Option<Step> {
    if rank != c.root {
        return (i == 0).then(|| Step::Recv { from: c.root, bytes: size(rank) });
    }
    let j = if i < c.root { i } else { i + 1 };
    (j < c.ranks).then(|| Step::Send { to: j, bytes: size(j) })
}

/// Step k = i + 1: send `bytes` to r+k, receive them from r−k.
fn pairwise(rank: u32, p: u32, bytes: u64, i: u32) -> Option<Step> {
    (i + 1 < p).then(|| {
        let k = i + 1;
        Step::Exchange { to: (rank + k) % p, send_bytes: bytes, from: (rank + p - k) % p, recv_bytes: bytes }
    })
}

/// A reduce up the tree of the broadcast `c.algorithm` names: receive from
/// the children, the last served first, then send to the parent.
fn tree_reduce(c: &Collective, rank: u32, i: u32) -> Option<Step> {
    use super::relay::{child, children, parent};
    let p = c.ranks;
    let v = (rank + p - c.root) % p;
    let abs = |x: u32| ((x as u64 + c.root as u64) % p as u64) as u32;
    let n = children(c.algorithm, v, p);
    if i < n {
        return Some(Step::Recv { from: abs(child(c.algorithm, v, p, n - 1 - i)?), bytes: c.bytes });
    }
    let to = parent(c.algorithm, v, p).filter(|_| i == n)?;
    Some(Step::Send { to: abs(to), bytes: c.bytes })
}

/// [`Algorithm::InOrderBinary`]: the binary-tree reduce rooted at p − 1,
/// then p − 1 hands the result to the root.
fn in_order_binary_reduce(c: &Collective, rank: u32, i: u32) -> Option<Step> {
    let top = c.ranks - 1;
    let tree = Collective { algorithm: Algorithm::BinaryTree, root: top, ..*c };
    let v = (rank + c.ranks - top) % c.ranks;
    let tree_steps = super::relay::children(Algorithm::BinaryTree, v, c.ranks) + u32::from(rank != top);
    if i < tree_steps {
        return tree_reduce(&tree, rank, i);
    }
    match (i == tree_steps && c.root != top, rank) {
        (true, r) if r == top => Some(Step::Send { to: c.root, bytes: c.bytes }),
        (true, r) if r == c.root => Some(Step::Recv { from: top, bytes: c.bytes }),
        _ => None,
    }
}

/// The shape both reduce-scatter folds share: with rem = p − 2^⌊log2 p⌋,
/// index v among the 2^⌊log2 p⌋ stands for ranks 2v and 2v + 1 (v < rem:
/// two blocks) or rank v + rem (one block).
struct Folded {
    rem: u32,
    rounds: u32,
    block: u64,
}

impl Folded {
    fn new(p: u32, block: u64) -> Self {
        let pof2 = floor_pow2(p);
        Folded { rem: p - pof2, rounds: pof2.trailing_zeros(), block }
    }

    /// The rank that index v runs on (the odd one of a pair).
    fn real(&self, v: u32) -> u32 {
        if v < self.rem {
            2 * v + 1
        } else {
            v + self.rem
        }
    }

    /// Bytes of the blocks of indices lo..hi.
    fn bytes(&self, lo: u32, hi: u32) -> u64 {
        let doubled = hi.min(self.rem).saturating_sub(lo.min(self.rem));
        self.block * (hi - lo + doubled) as u64
    }

    /// Step `i` of the fold on `rank` of `p`: an even rank of a pair sends
    /// its whole vector to rank + 1, then receives its block from
    /// `block_from` (Err: that step, or None past it); an odd one first
    /// receives the vector. Ok: the rank's index and whether it stands for
    /// a pair, with `i` counted from the start of the halving.
    fn fold(&self, rank: u32, p: u32, i: u32, block_from: impl Fn() -> u32) -> Result<(u32, bool, u32), Option<Step>> {
        let total = self.block * p as u64;
        match (rank < 2 * self.rem, rank.is_multiple_of(2), i) {
            (true, true, 0) => Err(Some(Step::Send { to: rank + 1, bytes: total })),
            (true, true, 1) => Err(Some(Step::Recv { from: block_from(), bytes: self.block })),
            (true, true, _) => Err(None),
            (true, false, 0) => Err(Some(Step::Recv { from: rank - 1, bytes: total })),
            (true, false, i) => Ok((rank / 2, true, i - 1)),
            (false, _, i) => Ok((rank - self.rem, false, i)),
        }
    }
}

/// [`Algorithm::RecursiveHalving`] on p blocks of `block` bytes.
fn recursive_halving(rank: u32, p: u32, block: u64, i: u32) -> Option<Step> {
    let f = Folded::new(p, block);
    let (v, paired, j) = match f.fold(rank, p, i, || rank + 1) {
        Ok(at) => at,
        Err(step) => return step,
    };
    if j == f.rounds {
        return paired.then(|| Step::Send { to: rank - 1, bytes: block });
    }
    if j > f.rounds {
        return None;
    }
    // MPICH's index walk: keep the half holding v's block, largest distance first
    let (mut send_idx, mut recv_idx, mut last) = (0, 0, 1u32 << f.rounds);
    for k in 0..=j {
        let mask = 1u32 << (f.rounds - 1 - k);
        let peer = v ^ mask;
        let (sent, got) = if v < peer {
            send_idx = recv_idx + mask;
            ((send_idx, last), (recv_idx, send_idx))
        } else {
            recv_idx = send_idx + mask;
            ((send_idx, recv_idx), (recv_idx, last))
        };
        if k == j {
            let to = f.real(peer);
            return Some(Step::Exchange { to, send_bytes: f.bytes(sent.0, sent.1), from: to, recv_bytes: f.bytes(got.0, got.1) });
        }
        send_idx = recv_idx;
        last = recv_idx + mask;
    }
    None
}

/// Reverses the low `bits` bits of v.
fn mirror(v: u32, bits: u32) -> u32 {
    if bits == 0 {
        v
    } else {
        v.reverse_bits() >> (32 - bits)
    }
}

/// [`Algorithm::Butterfly`] on p blocks of `block` bytes (Open MPI's
/// `reduce_scatter_intra_butterfly`).
fn butterfly(rank: u32, p: u32, block: u64, i: u32) -> Option<Step> {
    let f = Folded::new(p, block);
    let (v, _, j) = match f.fold(rank, p, i, || f.real(mirror(rank / 2, f.rounds))) {
        Ok(at) => at,
        Err(step) => return step,
    };
    if j < f.rounds {
        let (mut send_idx, mut recv_idx, mut nblocks) = (0u32, 0u32, 1u32 << f.rounds);
        for k in 0..=j {
            nblocks /= 2;
            if v & (1 << k) == 0 {
                send_idx += nblocks;
            } else {
                recv_idx += nblocks;
            }
            if k == j {
                let to = f.real(v ^ (1 << k));
                let (send_bytes, recv_bytes) = (f.bytes(send_idx, send_idx + nblocks), f.bytes(recv_idx, recv_idx + nblocks));
                return Some(Step::Exchange { to, send_bytes, from: to, recv_bytes });
            }
            send_idx = recv_idx;
        }
    }
    // the blocks go to their owners: the mirror image's rank, and its folded-out partner first
    let w = mirror(v, f.rounds);
    let mut k = j - f.rounds;
    if w < f.rem {
        if k == 0 {
            return Some(Step::Send { to: 2 * w, bytes: block });
        }
        k -= 1;
    }
    let to = f.real(w);
    (k == 0 && w != v).then_some(Step::Exchange { to, send_bytes: block, from: to, recv_bytes: block })
}

#[inline]
fn dissemination(rank: u32, p: u32, bytes: u64, k: u32) -> Option<Step> {
    (k < ceil_log2(p)).then(|| {
        // 2^k < p here, so no modulo is needed (this runs for every message).
        let d = 1u32 << k;
        let to = if rank >= p - d { rank - (p - d) } else { rank + d };
        let from = if rank >= d { rank - d } else { rank + (p - d) };
        Step::Exchange { to, send_bytes: bytes, from, recv_bytes: bytes }
    })
}

/// `steps` exchanges with the ring neighbours: send to r+1, receive from r−1.
fn ring(rank: u32, p: u32, bytes: u64, steps: u32, i: u32) -> Option<Step> {
    (i < steps).then(|| Step::Exchange { to: (rank + 1) % p, send_bytes: bytes, from: (rank + p - 1) % p, recv_bytes: bytes })
}

/// MPICH's recursive doubling: with rem = p − 2^⌊log2 p⌋, the even ranks
/// below 2·rem hand their data to the next odd rank and wait; the remaining
/// 2^⌊log2 p⌋ ranks exchange pairwise; the odd ranks then hand the result back.
fn recursive_doubling_allreduce(rank: u32, p: u32, bytes: u64, i: u32) -> Option<Step> {
    let pof2 = floor_pow2(p);
    let rem = p - pof2;
    let rounds = pof2.trailing_zeros();
    if rank < 2 * rem && rank.is_multiple_of(2) {
        return match i {
            0 => Some(Step::Send { to: rank + 1, bytes }),
            1 => Some(Step::Recv { from: rank + 1, bytes }),
            _ => None,
        };
    }
    let folded = rank < 2 * rem; // an odd rank standing in for its even neighbour
    let (newrank, i) = if folded {
        if i == 0 {
            return Some(Step::Recv { from: rank - 1, bytes });
        }
        (rank / 2, i - 1)
    } else {
        (rank - rem, i)
    };
    if i < rounds {
        let partner_new = newrank ^ (1 << i);
        let partner = if partner_new < rem { partner_new * 2 + 1 } else { partner_new + rem };
        return Some(Step::Exchange { to: partner, send_bytes: bytes, from: partner, recv_bytes: bytes });
    }
    (folded && i == rounds).then(|| Step::Send { to: rank - 1, bytes })
}

/// Open MPI's `redscat_allgather`: with rem = p − 2^⌊log2 p⌋, ranks below
/// 2·rem pair up (even r with r+1): they swap halves, the odd one sends its
/// reduced half to the even one and waits for the result. The 2^⌊log2 p⌋
/// remaining ranks reduce-scatter by recursive halving (round k exchanges
/// bytes/2^(k+1) with vrank XOR 2^k), allgather back in reverse order, and
/// the even ranks hand the result to their odd partners.
fn rabenseifner(rank: u32, p: u32, bytes: u64, i: u32) -> Option<Step> {
    let rounds = floor_pow2(p).trailing_zeros();
    match halving(rank, p, bytes, i, |r| r) {
        Halving::Step(s) => Some(s),
        Halving::Folded(2) => Some(Step::Recv { from: rank - 1, bytes }), // the result, handed back
        Halving::Folded(_) => None,
        Halving::Then { vrank, j, real } if j < rounds => {
            let k = rounds - 1 - j; // allgather, back in reverse
            let (partner, size) = (real(vrank ^ (1 << k)), bytes.div_ceil(2u64 << k));
            Some(Step::Exchange { to: partner, send_bytes: size, from: partner, recv_bytes: size })
        }
        Halving::Then { j, .. } => (rank < 2 * (p - floor_pow2(p)) && j == rounds).then(|| Step::Send { to: rank + 1, bytes }),
    }
}

/// Where a rank is in the phase that Rabenseifner's allreduce and reduce share.
enum Halving<R: Fn(u32) -> u32> {
    Step(Step),
    /// A folded-out odd rank past its two fold steps (at its step `n`).
    Folded(u32),
    /// Past the reduce-scatter: the rank's index among the 2^⌊log2 p⌋, its
    /// step counted from there, and the rank of an index.
    Then {
        vrank: u32,
        j: u32,
        real: R,
    },
}

/// The shared phase on rank `rel` (relative to the root; `abs` maps back):
/// with rem = p − 2^⌊log2 p⌋, ranks below 2·rem pair up (even r with r+1):
/// they swap halves, the odd one sends its reduced half to the even one and
/// is out. The 2^⌊log2 p⌋ remaining ranks reduce-scatter by recursive
/// halving: round k exchanges bytes/2^(k+1) with vrank XOR 2^k.
fn halving(rel: u32, p: u32, bytes: u64, i: u32, abs: impl Fn(u32) -> u32 + Copy) -> Halving<impl Fn(u32) -> u32> {
    let pof2 = floor_pow2(p);
    let (rem, rounds) = (p - pof2, pof2.trailing_zeros());
    let (lhalf, rhalf) = (bytes / 2, bytes - bytes / 2);
    let paired = rel < 2 * rem;
    let real = move |v: u32| abs(if v < rem { 2 * v } else { v + rem });
    if paired && rel % 2 == 1 {
        return match i {
            0 => Halving::Step(Step::Exchange { to: abs(rel - 1), send_bytes: lhalf, from: abs(rel - 1), recv_bytes: rhalf }),
            1 => Halving::Step(Step::Send { to: abs(rel - 1), bytes: rhalf }),
            n => Halving::Folded(n),
        };
    }
    let (vrank, i) = match (paired, i) {
        (true, 0) => return Halving::Step(Step::Exchange { to: abs(rel + 1), send_bytes: rhalf, from: abs(rel + 1), recv_bytes: lhalf }),
        (true, 1) => return Halving::Step(Step::Recv { from: abs(rel + 1), bytes: rhalf }),
        (true, _) => (rel / 2, i - 2),
        (false, _) => (rel - rem, i),
    };
    if i < rounds {
        let (partner, size) = (real(vrank ^ (1 << i)), bytes.div_ceil(2u64 << i));
        return Halving::Step(Step::Exchange { to: partner, send_bytes: size, from: partner, recv_bytes: size });
    }
    Halving::Then { vrank, j: i - rounds, real }
}

/// Reduce-scatter + gather (MPICH's `reduce_scatter_gather`, Open MPI's
/// `redscat_gather`) on ranks relative to the root: the phase of
/// [`halving`], then the pieces gathered back to relative rank 0 in reverse
/// order, the piece doubling at each step.
fn rabenseifner_reduce(c: &Collective, rank: u32, i: u32) -> Option<Step> {
    let (p, bytes) = (c.ranks, c.bytes);
    let rel = (rank + p - c.root) % p;
    let root = c.root as u64;
    let abs = move |r: u32| ((r as u64 + root) % p as u64) as u32;
    let rounds = floor_pow2(p).trailing_zeros();
    let (vrank, mut j, real) = match halving(rel, p, bytes, i, abs) {
        Halving::Step(s) => return Some(s),
        Halving::Folded(_) => return None,
        Halving::Then { vrank, j, real } => (vrank, j, real),
    };
    // gather: merge on bit k = rounds − 1 down to 0; the rank with bit k set sends and is done
    for k in (0..rounds).rev() {
        let piece = bytes.div_ceil(1u64 << (k + 1)); // what a rank holds after halving on bits 0..=k
        if vrank & (1 << k) != 0 {
            return (j == 0).then(|| Step::Send { to: real(vrank ^ (1 << k)), bytes: piece });
        }
        if j == 0 {
            return Some(Step::Recv { from: real(vrank ^ (1 << k)), bytes: piece });
        }
        j -= 1;
    }
    None
}

fn binary_tree_bcast(c: &Collective, rank: u32, i: u32) -> Option<Step> {
    let p = c.ranks as u64;
    let v = (rank as u64 + p - c.root as u64) % p;
    let abs = |x: u64| ((x + c.root as u64) % p) as u32;
    let mut i = i as u64;
    if v > 0 {
        if i == 0 {
            return Some(Step::Recv { from: abs((v - 1) / 2), bytes: c.bytes });
        }
        i -= 1;
    }
    let children: Vec<u64> = [2 * v + 1, 2 * v + 2].into_iter().filter(|&x| x < p).collect();
    match i as usize {
        k if k < children.len() => Some(Step::FanOut { to: abs(children[k]), bytes: c.bytes, k: k as u8 }),
        k if k == children.len() && k > 0 => Some(Step::WaitFanOut { n: k as u8 }),
        _ => None,
    }
}

/// The root sends to every other rank with blocking sends (at most 64
/// requests may be outstanding per rank, and an eager send completes at once
/// anyway).
fn linear_bcast(c: &Collective, rank: u32, i: u32) -> Option<Step> {
    let p = c.ranks;
    let v = (rank + p - c.root) % p;
    if v == 0 {
        (i + 1 < p).then(|| Step::Send { to: (c.root + i + 1) % p, bytes: c.bytes })
    } else {
        (i == 0).then_some(Step::Recv { from: c.root, bytes: c.bytes })
    }
}

/// Receive from the k-nomial parent, then nonblocking sends to the children, then wait.
fn knomial_bcast(c: &Collective, rank: u32, i: u32) -> Option<Step> {
    use super::relay::{child, children, parent};
    let p = c.ranks;
    let v = (rank + p - c.root) % p;
    let abs = |x: u32| ((x as u64 + c.root as u64) % p as u64) as u32;
    let mut i = i;
    if let Some(f) = parent(Algorithm::Knomial, v, p) {
        if i == 0 {
            return Some(Step::Recv { from: abs(f), bytes: c.bytes });
        }
        i -= 1;
    }
    let n = children(Algorithm::Knomial, v, p);
    if i < n {
        let to = child(Algorithm::Knomial, v, p, i)?;
        Some(Step::FanOut { to: abs(to), bytes: c.bytes, k: i as u8 })
    } else {
        (i == n && n > 0).then_some(Step::WaitFanOut { n: n as u8 })
    }
}

/// Open MPI's `barrier_intra_basic_linear`: every rank sends to rank 0 and
/// waits for its answer; rank 0 receives from all, then answers all, each
/// in nonblocking runs of at most 62.
fn linear_barrier(rank: u32, p: u32, i: u32) -> Option<Step> {
    if rank != 0 {
        return match i {
            0 => Some(Step::Send { to: 0, bytes: 0 }),
            1 => Some(Step::Recv { from: 0, bytes: 0 }),
            _ => None,
        };
    }
    let others = p - 1;
    let batches = others.div_ceil(62);
    let per_phase = others + batches; // each batch's operations and its wait
    let (phase, mut k) = (i / per_phase.max(1), i % per_phase.max(1));
    if phase >= 2 || others == 0 {
        return None;
    }
    let mut first = 1;
    loop {
        let n = 62.min(p - first);
        if k < n {
            let peer = first + k;
            return Some(if phase == 0 {
                Step::FanIn { from: peer, bytes: 0, k: k as u8 }
            } else {
                Step::FanOut { to: peer, bytes: 0, k: k as u8 }
            });
        }
        if k == n {
            return Some(Step::WaitFanOut { n: n as u8 });
        }
        k -= n + 1;
        first += n;
    }
}

/// Open MPI's `barrier_intra_recursivedoubling`: with 2^⌊log2 p⌋ = a, ranks
/// from a up first exchange with rank − a (and wait there to the end);
/// ranks below p − a receive from rank + a, the first a ranks exchange with
/// rank XOR 2^k, then release rank + a.
fn recursive_doubling_barrier(rank: u32, p: u32, i: u32) -> Option<Step> {
    let a = floor_pow2(p);
    let rounds = a.trailing_zeros();
    if rank >= a {
        return match i {
            0 => Some(Step::Send { to: rank - a, bytes: 0 }),
            1 => Some(Step::Recv { from: rank - a, bytes: 0 }),
            _ => None,
        };
    }
    let extra = rank + a < p;
    let i = if extra {
        if i == 0 {
            return Some(Step::Recv { from: rank + a, bytes: 0 });
        }
        i - 1
    } else {
        i
    };
    if i < rounds {
        let partner = rank ^ (1 << i);
        return Some(Step::Exchange { to: partner, send_bytes: 0, from: partner, recv_bytes: 0 });
    }
    (extra && i == rounds).then(|| Step::Send { to: rank + a, bytes: 0 })
}

/// Batches of up to [`super::LINEAR_BATCH`] peers j: receive from r − j
/// and send to r + j, all at once, then wait for the batch.
fn linear_alltoall(rank: u32, p: u32, bytes: u64, i: u32) -> Option<Step> {
    let b = super::LINEAR_BATCH;
    let per_batch = 2 * b + 1;
    let (batch, k) = (i / per_batch, i % per_batch);
    let first = 1 + batch * b;
    if first >= p {
        return None;
    }
    let n = b.min(p - first);
    Some(if k < n {
        Step::FanIn { from: (rank + p - (first + k)) % p, bytes, k: k as u8 }
    } else if k < 2 * n {
        Step::FanOut { to: (rank + first + k - n) % p, bytes, k: k as u8 }
    } else if k == 2 * n {
        Step::WaitFanOut { n: (2 * n) as u8 }
    } else {
        // (a short last batch ends early: move on to the next batch, which does not exist)
        return linear_alltoall(rank, p, bytes, (batch + 1) * per_batch);
    })
}

/// LogGOPSim's schedgen binomial tree: relative rank v receives from v with
/// its highest bit cleared and sends to v + 2^k for every 2^k > v.
struct Tree {
    p: u32,
    root: u32,
}

impl Tree {
    fn of(c: &Collective) -> Self {
        Tree { p: c.ranks, root: c.root }
    }

    fn v(&self, rank: u32) -> u32 {
        (rank + self.p - self.root) % self.p
    }

    fn abs(&self, v: u32) -> u32 {
        ((v as u64 + self.root as u64) % self.p as u64) as u32
    }

    /// Exponent of v's first child: 2^k > v.
    fn first_k(v: u32) -> u32 {
        32 - v.leading_zeros()
    }

    fn children(&self, rank: u32) -> u32 {
        let v = self.v(rank);
        let room = (self.p - v - 1) as u64; // children v + 2^k need 2^k ≤ room
        if room == 0 {
            return 0;
        }
        let top = 63 - room.leading_zeros(); // largest k with 2^k ≤ room
        (top + 1).saturating_sub(Self::first_k(v))
    }

    fn child(&self, v: u32, j: u32) -> u32 {
        v + (1 << (Self::first_k(v) + j))
    }

    fn parent(v: u32) -> u32 {
        v & !(1 << (31 - v.leading_zeros()))
    }

    fn subtree(&self, v: u32) -> u32 {
        subtree_size(self.p, v)
    }

    /// Receive from the parent, then send to every child (nonblocking), then wait.
    fn bcast(&self, rank: u32, i: u32, child_bytes: impl Fn(u32) -> u64, own_bytes: u64) -> Option<Step> {
        let v = self.v(rank);
        let mut i = i;
        if v > 0 {
            if i == 0 {
                return Some(Step::Recv { from: self.abs(Self::parent(v)), bytes: own_bytes });
            }
            i -= 1;
        }
        let n = self.children(rank);
        if i < n {
            let child = self.child(v, i);
            Some(Step::FanOut { to: self.abs(child), bytes: child_bytes(child), k: i as u8 })
        } else {
            (i == n && n > 0).then_some(Step::WaitFanOut { n: n as u8 })
        }
    }

    /// The broadcast reversed: receive from the children, smallest subtree
    /// first, then send to the parent.
    fn reduce(&self, rank: u32, i: u32, child_bytes: impl Fn(u32) -> u64, own_bytes: u64) -> Option<Step> {
        let v = self.v(rank);
        let n = self.children(rank);
        if i < n {
            let child = self.child(v, n - 1 - i);
            Some(Step::Recv { from: self.abs(child), bytes: child_bytes(child) })
        } else {
            (i == n && v > 0).then(|| Step::Send { to: self.abs(Self::parent(v)), bytes: own_bytes })
        }
    }
}

/// Ranks in the binomial subtree of relative rank v among p.
pub fn subtree_size(p: u32, v: u32) -> u32 {
    let span = 1u64 << Tree::first_k(v);
    ((p - v) as u64).div_ceil(span) as u32
}
