//! What a record must make sense as, checked as the reader reads it
//! (docs/trace-format.md, "Records the reader refuses"): peers that are ranks
//! of the run, sizes the engine can hold, and requests that are completed,
//! started, freed or cancelled only while they exist, posted once while
//! open. The reader names the file and the record; the replay and the GOAL
//! export never see a record that fails.
//!
//! A rank's checker keeps what is open (its requests, and its persistent
//! requests until they are freed), like the converter: memory is bounded by
//! those, never by the trace's length.

use super::format::{cart_dims, collective_of, neighbour_counts, op, Coll, CollMode, Record};
use crate::units::MAX_MESSAGE_BYTES;
use rustc_hash::FxHashMap;

/// The comm field of a record that names none (the tracer's IW_NOCOMM).
pub const NO_COMM: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Open {
    /// The record that posted (or created) it.
    at: u64,
    /// Posted by a call the replay does not model (`other`): it may be a
    /// persistent one (partitioned communication), which MPI_Start starts.
    other: bool,
    persistent: bool,
    /// A persistent request between its start and its completion.
    active: bool,
}

/// One rank's record checker.
#[derive(Debug)]
pub struct Checker {
    /// Ranks in the run (the header's world size).
    size: i32,
    open: FxHashMap<u64, Open>,
    /// The largest request id met so far: the tracer hands them out in
    /// increasing order, so a larger one was never posted before.
    newest: Option<u64>,
    /// MPI_Comm_idup calls whose comm_new names no request (traces older
    /// than the field): each lets one wait complete a request no record posted.
    unnamed_idups: u64,
}

/// What is wrong with one record; the reader adds the file, the record and its op.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CheckError {
    #[error("peer {peer} is not a rank of this {ranks}-rank run (nor -1, any source, or -2, MPI_PROC_NULL)")]
    Peer { peer: i32, ranks: i32 },
    #[error("root {root} is not a rank of this {ranks}-rank run (nor -1, none)")]
    Root { root: i32, ranks: i32 },
    #[error("member {member} is not a rank of this {ranks}-rank run (nor -1, a process outside it)")]
    Member { member: i32, ranks: i32 },
    #[error("member rank {0} in its communicator is negative")]
    NegativeMemberRank(i32),
    #[error("new communicator id {0} (ids are ≥ 0, or -1 for MPI_COMM_NULL)")]
    CommId(i32),
    #[error("a Cartesian payload of {0} values that does not hold [ndims, dims…, periods…]")]
    CartPayload(usize),
    #[error("a Cartesian dimension of {0} ranks")]
    CartDimension(u64),
    #[error("a neighbourhood payload of {0} values that does not hold [n_sources, n_destinations, their ranks, their sizes]")]
    NeighbourPayload(usize),
    #[error("neighbour {neighbour} is not a rank of this {ranks}-rank run (nor -2, MPI_PROC_NULL)")]
    Neighbour { neighbour: i64, ranks: i32 },
    #[error("a size of {0} bytes in its payload, past the engine's limit of 2^47 (corrupt file?)")]
    Size(u64),
    /// `at`: the record that posted or created the request.
    #[error("posts request {req} again while it is open (posted at record {at})")]
    PostedTwice { req: u64, at: u64 },
    #[error("starts request {req}, which is not persistent (posted at record {at} by a nonblocking call)")]
    NotPersistent { req: u64, at: u64 },
    #[error("starts request {req} again before it completed (created at record {at})")]
    StartedTwice { req: u64, at: u64 },
    #[error("completes persistent request {req}, which was not started since it last completed (created at record {at})")]
    NotStarted { req: u64, at: u64 },
    #[error("completes request {0}, which no earlier record posted")]
    NeverPosted(u64),
    #[error("completes request {0}, which is not open: it completed or was freed before, or was never posted")]
    NotOpen(u64),
    /// `verb`: "frees" or "cancels".
    #[error("{verb} request {req}, which is not open (never posted, or completed or freed before)")]
    NotOpenToEnd { verb: &'static str, req: u64 },
}

/// comm_new's creation kind (tag) for MPI_Comm_idup.
const IDUP: i32 = 4;

/// Ops whose peer is a world rank, MPI_ANY_SOURCE (-1) or MPI_PROC_NULL (-2).
fn peer_is_rank(code: u16) -> bool {
    matches!(
        code,
        op::SEND
            | op::RECV
            | op::ISEND
            | op::IRECV
            | op::SENDRECV_SEND
            | op::SENDRECV_RECV
            | op::PROBE
            | op::IPROBE
            | op::MPROBE
            | op::IMPROBE
            | op::MRECV
            | op::IMRECV
            | op::WAIT
            | op::TEST
            | op::SEND_INIT
            | op::RECV_INIT
            | op::START
    )
}

impl Checker {
    pub fn new(size: i32) -> Self {
        Checker { size, open: FxHashMap::default(), newest: None, unnamed_idups: 0 }
    }

    /// Requests open now (for tests of the memory bound).
    pub fn open_requests(&self) -> usize {
        self.open.len()
    }

    /// Record `index`, `r` with its payload: Ok, or what is wrong with it.
    pub fn check(&mut self, index: u64, r: &Record, payload: &[u64]) -> Result<(), CheckError> {
        let res = self.check_fields(r, payload).and_then(|()| self.check_request(index, r));
        if r.op != op::POLL {
            // (a poll names the request it polled, whichever it was)
            self.newest = Some(self.newest.map_or(r.req, |n| n.max(r.req)));
        }
        res
    }

    fn check_fields(&self, r: &Record, payload: &[u64]) -> Result<(), CheckError> {
        let n = self.size;
        let coll = collective_of(r.op);
        if peer_is_rank(r.op) && !(-2..n).contains(&r.peer) {
            return Err(CheckError::Peer { peer: r.peer, ranks: n });
        }
        if coll.is_some() && !(-2..n).contains(&r.peer) {
            return Err(CheckError::Root { root: r.peer, ranks: n });
        }
        if r.op == op::COMM_MEMBER && !(-1..n).contains(&r.peer) {
            return Err(CheckError::Member { member: r.peer, ranks: n });
        }
        if r.op == op::COMM_MEMBER && r.tag < 0 {
            return Err(CheckError::NegativeMemberRank(r.tag));
        }
        if r.op == op::COMM_NEW && r.peer < -1 {
            return Err(CheckError::CommId(r.peer));
        }
        if r.op == op::COMM_NEW && !payload.is_empty() {
            let Some(nd) = cart_dims(payload) else {
                return Err(CheckError::CartPayload(payload.len()));
            };
            if let Some(&d) = payload[1..1 + nd].iter().find(|&&d| d == 0 || d > i32::MAX as u64) {
                return Err(CheckError::CartDimension(d));
            }
        }
        if let Some((c, _)) = coll {
            // sizes in a collective's payload (a neighbourhood collective's also holds its neighbours)
            let sizes = match c {
                Coll::NeighborAllgather
                | Coll::NeighborAllgatherv
                | Coll::NeighborAlltoall
                | Coll::NeighborAlltoallv
                | Coll::NeighborAlltoallw
                    if !payload.is_empty() =>
                {
                    let Some((ns, nd)) = neighbour_counts(payload) else {
                        return Err(CheckError::NeighbourPayload(payload.len()));
                    };
                    if let Some(&p) = payload[2..2 + ns + nd].iter().find(|&&p| !(-2..n as i64).contains(&(p as i64))) {
                        return Err(CheckError::Neighbour { neighbour: p as i64, ranks: n });
                    }
                    &payload[2 + ns + nd..]
                }
                _ => payload,
            };
            if let Some(&b) = sizes.iter().find(|&&b| b >= MAX_MESSAGE_BYTES) {
                return Err(CheckError::Size(b));
            }
        }
        Ok(())
    }

    fn check_request(&mut self, index: u64, r: &Record) -> Result<(), CheckError> {
        let req = r.req;
        let coll = collective_of(r.op).map(|(_, m)| m);
        let posts = matches!(r.op, op::ISEND | op::IRECV | op::IMRECV)
            || coll == Some(CollMode::Nonblocking)
            || (matches!(r.op, op::OTHER | op::COMM_NEW) && req != 0);
        if r.op == op::COMM_NEW && r.tag == IDUP && req == 0 {
            self.unnamed_idups += 1;
        }
        let creates = matches!(r.op, op::SEND_INIT | op::RECV_INIT) || coll == Some(CollMode::Persistent);
        if posts || creates {
            if let Some(o) = self.open.get(&req) {
                return Err(CheckError::PostedTwice { req, at: o.at });
            }
            self.open.insert(req, Open { at: index, other: r.op == op::OTHER, persistent: creates, active: false });
            return Ok(());
        }
        match r.op {
            op::START => match self.open.get_mut(&req) {
                Some(o) if o.other && !o.active => {
                    (o.persistent, o.active) = (true, true);
                    Ok(())
                }
                Some(o) if !o.persistent => Err(CheckError::NotPersistent { req, at: o.at }),
                Some(o) if o.active => Err(CheckError::StartedTwice { req, at: o.at }),
                Some(o) => {
                    o.active = true;
                    Ok(())
                }
                None => {
                    // made where the tracer could not see it (the converter says whether it can replay it)
                    self.open.insert(req, Open { at: index, other: false, persistent: true, active: true });
                    Ok(())
                }
            },
            op::WAIT | op::TEST => match self.open.get_mut(&req) {
                Some(o) if o.persistent && !o.active => Err(CheckError::NotStarted { req, at: o.at }),
                Some(o) if o.persistent => {
                    o.active = false;
                    Ok(())
                }
                Some(_) => {
                    self.open.remove(&req);
                    Ok(())
                }
                // a request made where the tracer could not see it (a generalized
                // request): the tracer names no communicator and gives it a new id
                None if r.comm == NO_COMM && self.newest.is_none_or(|n| req > n) => Ok(()),
                None if self.unnamed_idups > 0 => {
                    self.unnamed_idups -= 1;
                    Ok(())
                }
                None if self.newest.is_none_or(|n| req > n) => Err(CheckError::NeverPosted(req)),
                None => Err(CheckError::NotOpen(req)),
            },
            op::REQUEST_FREE | op::CANCEL if req != 0 => match self.open.get(&req) {
                Some(_) if r.op == op::REQUEST_FREE => {
                    self.open.remove(&req);
                    Ok(())
                }
                Some(_) => Ok(()),
                None => Err(CheckError::NotOpenToEnd { verb: if r.op == op::REQUEST_FREE { "frees" } else { "cancels" }, req }),
            },
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(op: u16, comm: u32, peer: i32, req: u64) -> Record {
        Record { op, comm, peer, req, ..Default::default() }
    }

    /// Runs `records` through a 4-rank checker: the first error, with its record index.
    fn first_error(records: &[Record]) -> Option<(usize, String)> {
        let mut c = Checker::new(4);
        records.iter().enumerate().find_map(|(i, r)| c.check(i as u64, r, &[]).err().map(|e| (i, e.to_string())))
    }

    #[test]
    fn requests_are_completed_only_while_open() {
        let (isend, wait) = (|req| rec(op::ISEND, 0, 1, req), |req| rec(op::WAIT, 0, -1, req));
        assert_eq!(first_error(&[isend(1), wait(1)]), None);
        // a handle reposted after it completed (synthetic traces do that) is open again
        assert_eq!(first_error(&[isend(1), wait(1), isend(1), wait(1)]), None);
        let (i, e) = first_error(&[isend(1), wait(2)]).unwrap();
        assert_eq!((i, e.as_str()), (1, "completes request 2, which no earlier record posted"));
        let (i, e) = first_error(&[isend(1), isend(2), wait(1), wait(1)]).unwrap();
        assert!(i == 3 && e.contains("completes request 1, which is not open"), "{e}");
        let (i, e) = first_error(&[isend(1), isend(1)]).unwrap();
        assert_eq!((i, e.as_str()), (1, "posts request 1 again while it is open (posted at record 0)"));
        // a request the tracer did not see made (a generalized request): no communicator, a new id
        assert_eq!(first_error(&[isend(1), wait(1), rec(op::WAIT, NO_COMM, -1, 2)]), None);
        assert!(first_error(&[isend(5), wait(5), rec(op::WAIT, NO_COMM, -1, 3)]).is_some());
        // frees and cancels of requests that are not open
        assert!(first_error(&[rec(op::REQUEST_FREE, 0, -1, 4)]).unwrap().1.contains("frees request 4, which is not open"));
        assert!(first_error(&[rec(op::CANCEL, 0, -1, 4)]).unwrap().1.contains("cancels request 4"));
        assert_eq!(first_error(&[rec(op::REQUEST_FREE, 0, -1, 0), rec(op::CANCEL, NO_COMM, -1, 0)]), None);
    }

    #[test]
    fn persistent_requests_complete_once_per_start() {
        let (init, start, wait) = (rec(op::SEND_INIT, 0, 1, 3), rec(op::START, 0, 1, 3), rec(op::WAIT, 0, -1, 3));
        let free = rec(op::REQUEST_FREE, 0, -1, 3);
        assert_eq!(first_error(&[init, start, wait, start, wait, free]), None);
        assert!(first_error(&[init, wait]).unwrap().1.contains("which was not started since it last completed"));
        assert!(first_error(&[init, start, start]).unwrap().1.contains("starts request 3 again before it completed"));
        assert!(first_error(&[init, free, start, wait, wait]).is_some());
        assert!(first_error(&[rec(op::ISEND, 0, 1, 3), start]).unwrap().1.contains("not persistent"));
        // one a call the replay does not model made (partitioned communication) may be started
        assert_eq!(first_error(&[rec(op::OTHER, 0, -1, 3), start, wait, start, wait]), None);
        // a persistent collective
        let coll = op::COLL_BASE + op::PERSISTENT + Coll::Allreduce as u16;
        assert_eq!(first_error(&[rec(coll, 0, -1, 3), start, wait]), None);
    }

    #[test]
    fn comm_idup_names_its_request_and_older_traces_are_read_as_before() {
        let idup = |req| Record { tag: IDUP, ..rec(op::COMM_NEW, 0, 1, req) };
        assert_eq!(first_error(&[idup(7), rec(op::WAIT, 0, -1, 7)]), None);
        // older tracers left its req zero: one wait on a request no record posted is its completion
        assert_eq!(first_error(&[idup(0), rec(op::ISEND, 0, 1, 9), rec(op::WAIT, 0, -1, 9), rec(op::WAIT, 0, -1, 8)]), None);
        assert!(first_error(&[idup(0), rec(op::WAIT, 0, -1, 8), rec(op::WAIT, 0, -1, 8)]).is_some());
    }

    #[test]
    fn peers_roots_members_and_payload_sizes_are_of_the_run() {
        assert_eq!(first_error(&[rec(op::SEND, 0, 3, 0), rec(op::RECV, 0, -2, 0), rec(op::IRECV, 0, -1, 1)]), None);
        assert!(first_error(&[rec(op::SEND, 0, 4, 0)]).unwrap().1.starts_with("peer 4 is not a rank of this 4-rank run"));
        assert!(first_error(&[rec(op::RECV, 0, -3, 0)]).is_some());
        let bcast = op::COLL_BASE + Coll::Bcast as u16;
        assert!(first_error(&[rec(bcast, 0, 9, 0)]).unwrap().1.starts_with("root 9 is not a rank"));
        assert!(first_error(&[Record { tag: 0, ..rec(op::COMM_MEMBER, 1, 4, 0) }]).unwrap().1.starts_with("member 4"));
        let mut c = Checker::new(4);
        let gatherv = rec(op::COLL_BASE + Coll::Gatherv as u16, 0, 0, 0);
        assert_eq!(c.check(0, &gatherv, &[1, 2, u64::MAX, 4]), Err(CheckError::Size(u64::MAX)));
        // a neighbourhood collective's payload holds its neighbours (-2 as u64 for MPI_PROC_NULL) before the sizes
        let nbr = rec(op::COLL_BASE + Coll::NeighborAlltoall as u16, 0, -1, 0);
        assert_eq!(c.check(1, &nbr, &[1, 1, (-2i64) as u64, 1, 8, 8]), Ok(()));
        assert!(c.check(2, &nbr, &[1, 1, 0, 1, 8, 1 << 60]).is_err());
    }
}
