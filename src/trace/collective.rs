//! A traced collective as rounds of point-to-point messages on its
//! communicator's members. The collectives the engine has algorithms for
//! use them (the user's choice or the library's rule), MPI_Reduce_scatter
//! too when its counts are equal; the others (v-variants, unequal
//! reduce-scatters, neighbourhood collectives) use the linear or ring
//! schedules of Open MPI's basic component, with the traced per-peer sizes.

use super::format::Coll;
use crate::collectives::{Algorithm, Collective, CollectiveKind, Comm, Step};

/// One message of a round: to (send) or from (receive) a member (local index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Msg {
    pub send: bool,
    pub peer: u32,
    pub bytes: u64,
}

/// What a rank does in a collective, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Round {
    /// Messages posted together that must all complete before the next round.
    Together(Vec<Msg>),
    /// A nonblocking send left open until `CloseFan`.
    Fan(Msg),
    CloseFan,
}

/// The collective a trace record calls, with everything it needs.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub coll: Coll,
    /// Members (comm size) and this rank's and the root's local index.
    pub n: u32,
    pub me: u32,
    pub root: u32,
    pub bytes: u64,
    pub payload: &'a [u64],
}

/// The engine's collective for a traced call, where it has algorithms for
/// it, and the size its algorithms take (a reduce-scatter's block).
pub fn engine_call(call: &Call) -> Option<(CollectiveKind, u64)> {
    if call.coll == Coll::ReduceScatter {
        let counts = call.payload.get(..call.n as usize)?;
        return counts.iter().all(|&c| c == counts[0]).then(|| (CollectiveKind::ReduceScatter, counts[0]));
    }
    Some((kind_of(call.coll)?, call.bytes))
}

fn kind_of(c: Coll) -> Option<CollectiveKind> {
    Some(match c {
        Coll::Barrier => CollectiveKind::Barrier,
        Coll::Bcast => CollectiveKind::Bcast,
        Coll::Reduce => CollectiveKind::Reduce,
        Coll::Allreduce => CollectiveKind::Allreduce,
        Coll::Gather => CollectiveKind::Gather,
        Coll::Scatter => CollectiveKind::Scatter,
        Coll::Allgather => CollectiveKind::Allgather,
        Coll::Alltoall => CollectiveKind::Alltoall,
        Coll::ReduceScatterBlock => CollectiveKind::ReduceScatterBlock,
        Coll::Scan => CollectiveKind::Scan,
        Coll::Exscan => CollectiveKind::Exscan,
        _ => return None,
    })
}

/// The engine's algorithm for `kind`, as chosen (None: the default).
pub fn engine_rounds(
    kind: CollectiveKind,
    algorithm: Option<Algorithm>,
    n: u32,
    me: u32,
    root: u32,
    bytes: u64,
) -> Result<Vec<Round>, CollectiveError> {
    let c = engine_collective(kind, algorithm, n, root, bytes)?;
    Ok((0..).map_while(|i| c.step(me, i)).map(|s| Stage::of_step(s).round()).collect())
}

/// A traced collective the replay cannot expand into messages.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CollectiveError {
    #[error("{coll} needs {want} per-member sizes in its payload, the record has {got}")]
    Payload { coll: &'static str, want: usize, got: usize },
    #[error("neighbourhood collective: payload does not match its neighbour counts")]
    NeighbourPayload,
    /// A bug: the converter expands these itself.
    #[error("neighbourhood collectives are expanded by the caller")]
    Neighbourhood,
    /// The collectives module's own check of the call (its key is the workload's).
    #[error("{0}")]
    Engine(#[from] crate::rule::RuleError),
}

/// The engine's collective on `n` members (local ranks), checked.
pub fn engine_collective(
    kind: CollectiveKind,
    algorithm: Option<Algorithm>,
    n: u32,
    root: u32,
    bytes: u64,
) -> Result<Collective, CollectiveError> {
    let c = Collective {
        kind,
        algorithm: algorithm.unwrap_or_else(|| kind.auto_algorithm(Default::default(), n, bytes)),
        ranks: n,
        root,
        bytes,
        chunk_bytes: 0,
        tag: 0,
        comm: Comm::World,
    };
    c.validate()?;
    Ok(c)
}

/// A round of at most two messages, without an allocation: what the
/// engine's algorithms produce step by step (and every round of a call on a
/// communicator, neighbourhood collectives aside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Together([Msg; 2], u8),
    Fan(Msg),
    CloseFan,
}

impl Stage {
    pub fn of_step(s: Step) -> Stage {
        let one = |m: Msg| Stage::Together([m, m], 1);
        match s {
            Step::Send { to, bytes } => one(Msg { send: true, peer: to, bytes }),
            Step::Recv { from, bytes } => one(Msg { send: false, peer: from, bytes }),
            Step::Exchange { to, send_bytes, from, recv_bytes } => {
                Stage::Together([Msg { send: false, peer: from, bytes: recv_bytes }, Msg { send: true, peer: to, bytes: send_bytes }], 2)
            }
            Step::FanOut { to, bytes, .. } => Stage::Fan(Msg { send: true, peer: to, bytes }),
            Step::FanIn { from, bytes, .. } => Stage::Fan(Msg { send: false, peer: from, bytes }),
            Step::WaitFanOut { .. } => Stage::CloseFan,
        }
    }

    fn round(self) -> Round {
        match self {
            Stage::Together(m, n) => Round::Together(m[..n as usize].to_vec()),
            Stage::Fan(m) => Round::Fan(m),
            Stage::CloseFan => Round::CloseFan,
        }
    }
}

fn payload<'a>(call: &Call<'a>, want: usize) -> Result<&'a [u64], CollectiveError> {
    if call.payload.len() < want {
        return Err(CollectiveError::Payload { coll: call.coll.name(), want, got: call.payload.len() });
    }
    Ok(&call.payload[..want])
}

/// The stage of up to two messages that moves the nonzero ones among `msgs`
/// (receives first), or None if none moves anything.
fn stage_of(msgs: [Msg; 2], n: usize) -> Option<Stage> {
    let mut v = [msgs[0]; 2];
    let mut k = 0;
    for m in msgs[..n].iter().filter(|m| m.bytes > 0) {
        v[k] = *m;
        k += 1;
    }
    if k == 2 && v[0].send && !v[1].send {
        v.swap(0, 1);
    }
    (k > 0).then(|| Stage::Together(if k == 1 { [v[0], v[0]] } else { v }, k as u8))
}

/// Member `me` + `k` on a ring of `n` (`me` < `n`), without a division
/// when `k` < `n`, as every step's is (a ring step took seven divisions,
/// which showed in a 3-D replay's profile).
#[inline]
fn ring_next(me: u32, k: u32, n: u32) -> u32 {
    let s = me + if k < n { k } else { k % n };
    if s >= n {
        s - n
    } else {
        s
    }
}

/// Member `me` − `k` on a ring of `n` (`me` < `n`), as `ring_next`.
#[inline]
fn ring_prev(me: u32, k: u32, n: u32) -> u32 {
    let k = if k < n { k } else { k % n };
    if me >= k {
        me - k
    } else {
        me + n - k
    }
}

/// The `i`-th stage of a collective the engine has no algorithm for, as a
/// raw step that may move nothing (`Some(None)`: go on to the next); None
/// past the last. Each is found in O(1) (a root's closing fan scans the
/// sizes once), so a rank holds no list of its rounds.
// Long: one arm per collective the engine has no algorithm for, each a few
// lines; one match keeps the whole table of them in one place.
fn raw_stage(call: &Call, i: u32) -> Result<Option<Option<Stage>>, CollectiveError> {
    let (n, me, root) = (call.n, call.me, call.root);
    let next = |k: u32| ring_next(me, k, n);
    let prev = |k: u32| ring_prev(me, k, n);
    let one = |m: Msg| Some(stage_of([m, m], 1));
    // the members other than the root, in order: the root's i-th peer
    let other = |i: u32| if i < root { i } else { i + 1 };
    Ok(match call.coll {
        Coll::Gatherv | Coll::Scatterv => {
            let send = call.coll == Coll::Scatterv;
            if me != root {
                (i == 0).then(|| stage_of([Msg { send: !send, peer: root, bytes: call.bytes }; 2], 1))
            } else {
                let sizes = payload(call, n as usize)?;
                let peers = n.saturating_sub(1);
                if i < peers {
                    let m = Msg { send, peer: other(i), bytes: sizes[other(i) as usize] };
                    if send {
                        Some((m.bytes > 0).then_some(Stage::Fan(m)))
                    } else {
                        one(m)
                    }
                } else if send && i == peers {
                    // a scatter's fan closes once, if it sent anything
                    Some((0..n).any(|j| j != root && sizes[j as usize] > 0).then_some(Stage::CloseFan))
                } else {
                    None
                }
            }
        }
        Coll::Allgatherv => {
            // Ring: step s passes on block (me − s), receives block (me − s − 1).
            let sizes = payload(call, n as usize)?;
            (i + 1 < n).then(|| {
                stage_of(
                    [
                        Msg { send: false, peer: prev(1), bytes: sizes[prev(i + 1) as usize] },
                        Msg { send: true, peer: next(1), bytes: sizes[prev(i) as usize] },
                    ],
                    2,
                )
            })
        }
        Coll::Alltoallv | Coll::Alltoallw => {
            // Pairwise: step s sends to me+s and receives from me−s.
            let sizes = payload(call, 2 * n as usize)?;
            let (send, recv) = sizes.split_at(n as usize);
            let s = i + 1;
            (s < n).then(|| {
                stage_of(
                    [
                        Msg { send: false, peer: prev(s), bytes: recv[prev(s) as usize] },
                        Msg { send: true, peer: next(s), bytes: send[next(s) as usize] },
                    ],
                    2,
                )
            })
        }
        Coll::ReduceScatter => {
            // Unequal counts: reduce the whole vector to member 0 (Open MPI's
            // non-overlapping algorithm), then scatter the blocks.
            let sizes = payload(call, n as usize)?;
            let reduce = engine_collective(CollectiveKind::Reduce, None, n, 0, sizes.iter().sum())?;
            match reduce.step(me, i) {
                Some(step) => Some(Some(Stage::of_step(step))),
                None => {
                    let first = (0..).take_while(|&k| reduce.step(me, k).is_some()).count() as u32;
                    let scatter = Call { root: 0, coll: Coll::Scatterv, bytes: sizes[me as usize], ..*call };
                    raw_stage(&scatter, i - first)?
                }
            }
        }
        Coll::NeighborAllgather | Coll::NeighborAllgatherv | Coll::NeighborAlltoall | Coll::NeighborAlltoallv | Coll::NeighborAlltoallw => {
            return Err(CollectiveError::Neighbourhood);
        }
        Coll::Barrier
        | Coll::Bcast
        | Coll::Reduce
        | Coll::Allreduce
        | Coll::Gather
        | Coll::Scatter
        | Coll::Allgather
        | Coll::Alltoall
        | Coll::ReduceScatterBlock
        | Coll::Scan
        | Coll::Exscan => {
            unreachable!("the engine's algorithms step these")
        }
    })
}

/// The first stage that moves something at raw step `i` or after, with the
/// raw step to go on from; None when the collective has no more. For the
/// collectives the engine has no algorithm for (`engine_call` is None).
pub fn stage_at(call: &Call, mut i: u32) -> Result<Option<(Stage, u32)>, CollectiveError> {
    loop {
        match raw_stage(call, i)? {
            None => return Ok(None),
            Some(Some(s)) => return Ok(Some((s, i + 1))),
            Some(None) => i += 1,
        }
    }
}

/// The rounds of `call` on this rank; `algorithm` applies to the collectives
/// the engine has algorithms for.
pub fn rounds(call: &Call, algorithm: Option<Algorithm>) -> Result<Vec<Round>, CollectiveError> {
    if let Some((kind, bytes)) = engine_call(call) {
        return engine_rounds(kind, algorithm, call.n, call.me, call.root, bytes);
    }
    let mut out = Vec::new();
    let mut i = 0;
    while let Some((s, next)) = stage_at(call, i)? {
        out.push(s.round());
        i = next;
    }
    Ok(out)
}

/// A neighbourhood collective's single round, with world-rank peers:
/// `[n_src, n_dst, src…, dst…, recv bytes…, send bytes…]`; PROC_NULL
/// neighbours (−2) move nothing.
pub fn neighbour_round(payload: &[u64]) -> Result<Vec<Msg>, CollectiveError> {
    let (ns, nd) = super::format::neighbour_counts(payload).ok_or(CollectiveError::NeighbourPayload)?;
    let srcs = &payload[2..2 + ns];
    let dsts = &payload[2 + ns..2 + ns + nd];
    let rb = &payload[2 + ns + nd..2 + 2 * ns + nd];
    let sb = &payload[2 + 2 * ns + nd..];
    let real = |p: u64| (p as i64) >= 0;
    let mut v: Vec<Msg> =
        srcs.iter().zip(rb).filter(|(p, _)| real(**p)).map(|(&p, &b)| Msg { send: false, peer: p as u32, bytes: b }).collect();
    v.extend(dsts.iter().zip(sb).filter(|(p, _)| real(**p)).map(|(&p, &b)| Msg { send: true, peer: p as u32, bytes: b }));
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_neighbours_are_the_modular_ones() {
        for n in 1..9u32 {
            for me in 0..n {
                for k in 0..3 * n {
                    assert_eq!(ring_next(me, k, n), (me + k) % n, "next: me {me}, k {k}, n {n}");
                    assert_eq!(ring_prev(me, k, n), (me + n - k % n) % n, "prev: me {me}, k {k}, n {n}");
                }
            }
        }
    }

    /// A member's call: its own block is its entry in a per-member payload.
    fn call(coll: Coll, n: u32, me: u32, payload: &[u64]) -> Call<'_> {
        let bytes = if payload.len() == n as usize { payload[me as usize] } else { 8 };
        Call { coll, n, me, root: 0, bytes, payload }
    }

    /// Every message sent is received by its peer with the same size.
    fn balanced(coll: Coll, n: u32, payloads: &[Vec<u64>]) {
        let mut sent = std::collections::BTreeMap::new();
        let mut got = std::collections::BTreeMap::new();
        for me in 0..n {
            for r in rounds(&call(coll, n, me, &payloads[me as usize]), None).unwrap() {
                let msgs = match r {
                    Round::Together(v) => v,
                    Round::Fan(m) => vec![m],
                    Round::CloseFan => vec![],
                };
                for m in msgs {
                    let key = if m.send { (me, m.peer) } else { (m.peer, me) };
                    *(if m.send { &mut sent } else { &mut got }).entry(key).or_insert(0u64) += m.bytes;
                }
            }
        }
        assert_eq!(sent, got, "{coll:?}");
        assert!(!sent.is_empty());
    }

    #[test]
    fn uneven_alltoallv_moves_each_pair_its_own_count() {
        // rank i sends (i + 1) * (j + 1) bytes to j, zero to itself; 0 → 2 sends nothing
        let n = 4u32;
        let count = |i: u32, j: u32| if i == j || (i, j) == (0, 2) { 0 } else { ((i + 1) * (j + 1)) as u64 };
        let payloads: Vec<Vec<u64>> = (0..n).map(|me| (0..n).map(|j| count(me, j)).chain((0..n).map(|j| count(j, me))).collect()).collect();
        balanced(Coll::Alltoallv, n, &payloads);
        let r0 = rounds(&call(Coll::Alltoallv, n, 0, &payloads[0]), None).unwrap();
        let sends: u64 =
            r0.iter().flat_map(|r| if let Round::Together(v) = r { v.clone() } else { vec![] }).filter(|m| m.send).map(|m| m.bytes).sum();
        assert_eq!(sends, 2 + 4);
    }

    #[test]
    fn v_variants_and_scans_balance() {
        let n = 5u32;
        let sizes: Vec<u64> = (0..n as u64).map(|i| 10 * i).collect(); // member 0 contributes 0 bytes
        let p = vec![sizes.clone(); n as usize];
        balanced(Coll::Allgatherv, n, &p);
        balanced(Coll::Gatherv, n, &p);
        balanced(Coll::Scatterv, n, &p);
        balanced(Coll::ReduceScatter, n, &p);
        balanced(Coll::Scan, n, &vec![vec![]; n as usize]);
    }

    /// A root other than member 0 and members with nothing to move, round by
    /// round: the rounds skip the root and the empty blocks, and a scatter's
    /// fan closes only if it sent something.
    #[test]
    fn v_variants_skip_the_root_and_empty_blocks() {
        let m = |send, peer, bytes| Msg { send, peer, bytes };
        let at = |coll, me, root, sizes: &[u64]| {
            let c = Call { coll, n: sizes.len() as u32, me, root, bytes: sizes[me as usize], payload: sizes };
            rounds(&c, None).unwrap()
        };
        let t = |v: Vec<Msg>| Round::Together(v);
        let sizes = [5, 0, 7, 3];
        assert_eq!(at(Coll::Scatterv, 2, 2, &sizes), vec![Round::Fan(m(true, 0, 5)), Round::Fan(m(true, 3, 3)), Round::CloseFan]);
        assert_eq!(at(Coll::Gatherv, 2, 2, &sizes), vec![t(vec![m(false, 0, 5)]), t(vec![m(false, 3, 3)])]);
        assert_eq!(at(Coll::Gatherv, 3, 2, &sizes), vec![t(vec![m(true, 2, 3)])]);
        // member 1's block is empty; a root that sends nothing has no fan to close
        assert_eq!(at(Coll::Scatterv, 1, 2, &sizes), vec![]);
        assert_eq!(at(Coll::Scatterv, 2, 2, &[0, 0, 7, 0]), vec![]);
        // ring allgatherv on member 1 of 3: it passes on its own block, then receives block 2 (block 0 is empty)
        assert_eq!(at(Coll::Allgatherv, 1, 0, &[0, 4, 6]), vec![t(vec![m(true, 2, 4)]), t(vec![m(false, 0, 6)])]);
        // stage by stage: the step to go on from is past the empty ones
        let c = Call { coll: Coll::Scatterv, n: 4, me: 2, root: 2, bytes: 7, payload: &sizes };
        assert_eq!(stage_at(&c, 1).unwrap(), Some((Stage::Fan(m(true, 3, 3)), 3)));
        assert_eq!(stage_at(&c, 4).unwrap(), None);
    }

    #[test]
    fn neighbour_payload_skips_proc_null() {
        let null = (-2i64) as u64;
        let m = neighbour_round(&[2, 2, 3, null, null, 5, 16, 0, 0, 24]).unwrap();
        assert_eq!(m, vec![Msg { send: false, peer: 3, bytes: 16 }, Msg { send: true, peer: 5, bytes: 24 }]);
        assert!(neighbour_round(&[2, 2, 3]).is_err());
    }
}
