//! Matrix-free finite-element MatVec with communication hiding (HMM paper
//! §2.3–2.4, Algorithm 2), optionally inside a CG loop (one allreduce per
//! iteration):
//!
//! 1. post receives of the non-owned input DOFs; send the owned ones; post
//!    receives of the output contributions;
//! 2. compute the first block E1 of non-mirror elements;
//! 3. wait for the input; compute the mirror elements; send the outputs;
//! 4. compute the second block E2; wait for the outputs.
//!
//! The split |E1| = ⌊α·N⌋ is fixed (α = α0), dynamic (Algorithm 3: damped
//! updates from the observed waiting times), or decided at run time by
//! computing E1 in chunks and testing the input between them (MPI test; α is
//! then inferred). Recorded per (rank, iteration): T_in (E1 + input wait),
//! T_out (E2 + output wait), their sum, both waiting times and α.

use super::halo_messages;
use super::registry::{generated, Shape, Visited, WorkloadError, WorkloadKind, WorkloadVisitor};
use super::TAG_HALO;
use crate::collectives::{Collective, CollectiveKind};
use crate::network::Network;
use crate::program::driver::Driver;
use crate::program::stream::{Ctx, StreamOp, Workload};
use crate::rule::RuleError;
use crate::time::{from_seconds, to_seconds, Time};
use crate::units::{secs, PositiveSeconds, Ranks, Seconds};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Hiding {
    FixedAlpha,
    DynamicAlpha,
    MpiTest,
}

/// Finite-element MatVec hiding communication with fixed alpha, dynamic alpha or MPI test (HMM paper §2.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FemMatvec {
    #[schemars(with = "Ranks")]
    pub ranks: u32,
    pub iterations: u32,
    /// Neighbours r ± d (periodic).
    #[schemars(inner(range(min = 1)), extend("uniqueItems" = true))]
    pub distances: Vec<u32>,
    pub input_bytes: u64,
    pub output_bytes: u64,
    /// Non-mirror elements N = |E1 ∪ E2| and mirror elements |M| per rank.
    pub elements: u32,
    pub mirror_elements: u32,
    #[serde(rename = "element_s", with = "secs")]
    #[schemars(with = "Seconds")]
    pub element_ps: Time,
    pub hiding: Hiding,
    #[schemars(range(min = 0, max = 1))]
    pub alpha0: f64,
    /// Damping θ of the dynamic update.
    #[schemars(range(min = 0, max = 1))]
    pub theta: f64,
    /// Zero-latency threshold ε.
    #[serde(rename = "epsilon_s", with = "secs")]
    #[schemars(with = "PositiveSeconds")]
    pub epsilon_ps: Time,
    /// Elements computed between two tests (MPI test).
    #[schemars(range(min = 1))]
    pub test_chunk_elements: u32,
    /// One 8-byte allreduce per iteration, as in CG.
    pub cg: bool,
}

impl Default for FemMatvec {
    fn default() -> Self {
        FemMatvec {
            ranks: 64,
            iterations: 100,
            distances: vec![1],
            input_bytes: 4096,
            output_bytes: 4096,
            elements: 1000,
            mirror_elements: 100,
            element_ps: from_seconds(1e-6),
            hiding: Hiding::FixedAlpha,
            alpha0: 0.5,
            theta: 0.5,
            epsilon_ps: from_seconds(1e-4),
            test_chunk_elements: 50,
            cg: true,
        }
    }
}

const T_ITER: u8 = 0;
const T_MATVEC: u8 = 1;
const T_IN: u8 = 2;
const T_OUT: u8 = 3;
const T_WAIT_IN: u8 = 4;
const T_WAIT_OUT: u8 = 5;
const T_ALPHA: u8 = 6;

/// Most neighbours: four request slots each (input and output, both ways).
const MAX_NEIGHBOURS: usize = 8;

/// Where a rank is in one MatVec.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(u8)]
enum Phase {
    #[default]
    Start,
    /// Post the input receives, the input sends, the output receives.
    PostInRecvs,
    PostInSends,
    PostOutRecvs,
    /// E1: the elements computed before the input is waited for.
    E1Start,
    E1,
    /// MPI test: test the input between chunks of E1.
    TestInput,
    WaitIn,
    /// After the input: the mirror elements, then the output sends.
    Mirror,
    PostOutSends,
    E2,
    WaitOut,
    RecordIn,
    RecordOut,
    RecordMatvec,
    RecordWaitIn,
    RecordWaitOut,
    RecordAlpha,
    /// CG: the dot product's allreduce.
    Allreduce,
    Stop,
}

impl Phase {
    /// The request block of a posting phase (slots block·n .. block·n + n).
    fn block(self) -> usize {
        match self {
            Phase::PostInRecvs => 0,
            Phase::PostInSends => 1,
            _ => 2,
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct MatvecState {
    iter: u32,
    phase: Phase,
    idx: u8,
    /// α for the next MatVec (dynamic: carried over; set from alpha0 at start).
    alpha: f64,
    /// α the MatVec just finished used (inferred, for MPI test).
    alpha_used: f64,
    /// Elements of E1 computed so far (MPI test) or planned.
    e1: u32,
    /// Times: E1 started, input wait started, T_in, E2 started, output wait started.
    t_e1: Time,
    t_wait: Time,
    t_in: Time,
    wait_in: Time,
    t_e2: Time,
    started: bool,
    allreduce: Driver,
}

impl FemMatvec {
    pub fn validate(&self) -> Result<(), RuleError> {
        super::check_distances(&self.distances, self.ranks, MAX_NEIGHBOURS / 2)?;
        if !(0.0..=1.0).contains(&self.alpha0) || !(0.0..=1.0).contains(&self.theta) {
            return Err(RuleError::new("workload.alpha0", "alpha0 and theta must be between 0 and 1"));
        }
        if self.hiding == Hiding::DynamicAlpha && self.epsilon_ps == 0 {
            return Err(RuleError::new("workload.epsilon_s", "must be positive for dynamic_alpha"));
        }
        if self.hiding == Hiding::MpiTest && self.test_chunk_elements == 0 {
            return Err(RuleError::new("workload.test_chunk_elements", "must be positive for mpi_test"));
        }
        Ok(())
    }

    fn neighbours(&self) -> usize {
        2 * self.distances.len()
    }

    fn neighbour(&self, rank: u32, k: usize) -> u32 {
        let d = self.distances[k / 2] as i64;
        let q = if k.is_multiple_of(2) { rank as i64 - d } else { rank as i64 + d };
        q.rem_euclid(self.ranks as i64) as u32
    }

    fn calc(&self, elements: u32) -> StreamOp {
        StreamOp::Calc((elements as Time).saturating_mul(self.element_ps))
    }

    fn mask(&self, group: usize) -> u64 {
        let n = self.neighbours();
        ((1u64 << n) - 1) << (group * n)
    }

    /// Algorithm 3: the next α from this MatVec's waiting times.
    pub fn next_alpha(&self, alpha: f64, wait_in: Time, wait_out: Time) -> f64 {
        next_alpha(alpha, wait_in as f64, wait_out as f64, self.theta, self.epsilon_ps as f64)
    }
}

/// Algorithm 3 of the HMM paper: α moves toward the split that balances the
/// waits for the input (`wait_in`) and output (`wait_out`) exchanges, damped
/// by θ; waits below ε count as zero. Any time unit, the same for all three.
pub fn next_alpha(alpha: f64, wait_in: f64, wait_out: f64, theta: f64, eps: f64) -> f64 {
    let a = alpha.clamp(1e-6, 1.0 - 1e-6);
    let r = a / (1.0 - a);
    let r = if wait_in > eps && wait_out < eps {
        r * wait_in / eps
    } else if wait_in < eps && wait_out > eps {
        r * eps / wait_out
    } else {
        r
    };
    theta * (r / (1.0 + r)) + (1.0 - theta) * alpha
}

impl WorkloadKind for FemMatvec {
    fn shape(&self) -> Shape {
        Shape::ranks(self.ranks)
    }

    fn check(&self, _: u32, _: bool) -> Result<(), RuleError> {
        self.validate()
    }

    /// Whatever the hiding: testing for messages keeps no more in flight than waiting.
    fn in_flight_bytes_per_rank(&self) -> u128 {
        156 + 12 * halo_messages(self.distances.len())
    }

    fn prepare<V: WorkloadVisitor>(&self, _: &Network, v: V) -> Result<Visited<V::Out>, WorkloadError> {
        generated(self.clone(), v)
    }

    fn no_goal_export(&self) -> Option<&'static str> {
        (self.hiding != Hiding::FixedAlpha).then_some("dynamic α and MPI test adapt to timing and have no GOAL form")
    }
}

impl Workload for FemMatvec {
    type State = MatvecState;

    fn num_ranks(&self) -> u32 {
        self.ranks
    }
    fn iterations(&self) -> u32 {
        self.iterations
    }
    fn timer_names(&self) -> Vec<String> {
        ["iteration", "matvec", "t_in", "t_out", "wait_in", "wait_out", "alpha"].map(String::from).to_vec()
    }

    fn next(&self, rank: u32, s: &mut MatvecState, ctx: &Ctx) -> StreamOp {
        let n = self.neighbours();
        let iteration = s.iter;
        loop {
            // (the helpers return None when the phase moved on without an op)
            let op = match s.phase {
                Phase::Start => {
                    if s.iter == self.iterations {
                        return StreamOp::Done;
                    }
                    if !s.started {
                        (s.started, s.alpha) = (true, self.alpha0);
                    }
                    (s.phase, s.idx) = (Phase::PostInRecvs, 0);
                    Some(StreamOp::TimerStart { timer: T_ITER, iteration })
                }
                Phase::PostInRecvs | Phase::PostInSends | Phase::PostOutRecvs => self.post(rank, s),
                Phase::E1Start | Phase::E1 | Phase::TestInput => self.compute_e1(s, ctx),
                Phase::WaitIn => {
                    s.t_wait = ctx.time;
                    s.phase = Phase::Mirror;
                    Some(StreamOp::Wait(self.mask(0)))
                }
                Phase::Mirror => {
                    s.wait_in = ctx.time - s.t_wait;
                    s.t_in = ctx.time - s.t_e1;
                    s.phase = Phase::PostOutSends;
                    Some(self.calc(self.mirror_elements))
                }
                Phase::PostOutSends => {
                    let k = s.idx as usize;
                    if k == n {
                        (s.phase, s.idx) = (Phase::E2, 0);
                        continue;
                    }
                    s.idx += 1;
                    let slot = (3 * n + k) as u8;
                    Some(StreamOp::ISend { peer: self.neighbour(rank, k), tag: TAG_HALO + 1, bytes: self.output_bytes, slot })
                }
                Phase::E2 => {
                    s.t_e2 = ctx.time;
                    s.phase = Phase::WaitOut;
                    Some(self.calc(self.elements - s.e1))
                }
                Phase::WaitOut => {
                    s.t_wait = ctx.time;
                    s.phase = Phase::RecordIn;
                    Some(StreamOp::Wait(self.mask(1) | self.mask(2) | self.mask(3)))
                }
                Phase::RecordIn
                | Phase::RecordOut
                | Phase::RecordMatvec
                | Phase::RecordWaitIn
                | Phase::RecordWaitOut
                | Phase::RecordAlpha => Some(self.record(s, ctx, iteration)),
                Phase::Allreduce if self.cg => match s
                    .allreduce
                    .next(&Collective::dissemination(CollectiveKind::Allreduce, self.ranks, 8, super::TAG_COLLECTIVE), rank)
                {
                    Some(op) => Some(op),
                    None => {
                        s.phase = Phase::Stop;
                        None
                    }
                },
                Phase::Allreduce | Phase::Stop => {
                    s.phase = Phase::Start;
                    s.iter += 1;
                    Some(StreamOp::TimerStop { timer: T_ITER, iteration })
                }
            };
            if let Some(op) = op {
                return op;
            }
        }
    }
}

impl FemMatvec {
    /// The posting phases: one receive or send per call, to each neighbour
    /// in turn, then on to the next phase (None: no op). Slots: 0..n input
    /// receives, n..2n input sends, 2n..3n output receives (3n..4n: the
    /// output sends, posted after the input has arrived).
    #[inline]
    fn post(&self, rank: u32, s: &mut MatvecState) -> Option<StreamOp> {
        let n = self.neighbours();
        let k = s.idx as usize;
        if k == n {
            let next = match s.phase {
                Phase::PostInRecvs => Phase::PostInSends,
                Phase::PostInSends => Phase::PostOutRecvs,
                _ => Phase::E1Start,
            };
            (s.phase, s.idx) = (next, 0);
            return None;
        }
        s.idx += 1;
        let peer = self.neighbour(rank, k);
        let slot = (s.phase.block() * n + k) as u8;
        Some(match s.phase {
            Phase::PostInRecvs => StreamOp::IRecv { peer, tag: TAG_HALO, bytes: self.input_bytes, slot },
            Phase::PostInSends => StreamOp::ISend { peer, tag: TAG_HALO, bytes: self.input_bytes, slot },
            _ => StreamOp::IRecv { peer, tag: TAG_HALO + 1, bytes: self.output_bytes, slot },
        })
    }

    /// E1, the elements computed before the input is waited for: in one
    /// calc, or (MPI test) in chunks with a test of the input after each
    /// until it has arrived or nothing is left (None: no op).
    #[inline]
    fn compute_e1(&self, s: &mut MatvecState, ctx: &Ctx) -> Option<StreamOp> {
        match s.phase {
            Phase::E1Start => {
                s.t_e1 = ctx.time;
                s.phase = Phase::E1;
                if self.hiding == Hiding::MpiTest {
                    s.e1 = 0;
                    return None;
                }
                s.e1 = (s.alpha * self.elements as f64).floor() as u32;
                Some(self.calc(s.e1))
            }
            Phase::E1 if self.hiding == Hiding::MpiTest => {
                if s.e1 > 0 && ctx.last_test || s.e1 == self.elements {
                    s.phase = Phase::WaitIn;
                    return None;
                }
                let chunk = self.test_chunk_elements.min(self.elements - s.e1);
                s.e1 += chunk;
                s.phase = Phase::TestInput;
                Some(self.calc(chunk))
            }
            Phase::TestInput => {
                s.phase = Phase::E1;
                Some(StreamOp::Test(self.mask(0)))
            }
            _ => {
                s.phase = Phase::WaitIn;
                None
            }
        }
    }

    /// After both waits: the iteration's timers, one record per call.
    #[inline]
    fn record(&self, s: &mut MatvecState, ctx: &Ctx, iteration: u32) -> StreamOp {
        match s.phase {
            Phase::RecordIn => {
                let (wait_out, t_out) = (ctx.time - s.t_wait, ctx.time - s.t_e2);
                let alpha_used = if self.hiding == Hiding::MpiTest { s.e1 as f64 / self.elements.max(1) as f64 } else { s.alpha };
                if self.hiding == Hiding::DynamicAlpha {
                    s.alpha = self.next_alpha(s.alpha, s.wait_in, wait_out);
                }
                s.phase = Phase::RecordOut;
                // Keep the two results where the next phases record them.
                (s.t_wait, s.t_e2) = (wait_out, t_out);
                s.alpha_used = alpha_used;
                StreamOp::Record { timer: T_IN, iteration, value: to_seconds(s.t_in) }
            }
            Phase::RecordOut => {
                s.phase = Phase::RecordMatvec;
                StreamOp::Record { timer: T_OUT, iteration, value: to_seconds(s.t_e2) }
            }
            Phase::RecordMatvec => {
                s.phase = Phase::RecordWaitIn;
                StreamOp::Record { timer: T_MATVEC, iteration, value: to_seconds(s.t_in + s.t_e2) }
            }
            Phase::RecordWaitIn => {
                s.phase = Phase::RecordWaitOut;
                StreamOp::Record { timer: T_WAIT_IN, iteration, value: to_seconds(s.wait_in) }
            }
            Phase::RecordWaitOut => {
                s.phase = Phase::RecordAlpha;
                StreamOp::Record { timer: T_WAIT_OUT, iteration, value: to_seconds(s.t_wait) }
            }
            _ => {
                s.phase = Phase::Allreduce;
                s.allreduce = Driver::default();
                StreamOp::Record { timer: T_ALPHA, iteration, value: s.alpha_used }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mv(hiding: Hiding) -> FemMatvec {
        FemMatvec {
            ranks: 8,
            iterations: 50,
            distances: vec![1],
            input_bytes: 4096,
            output_bytes: 4096,
            elements: 1000,
            mirror_elements: 100,
            element_ps: 1_000_000, // 1 µs per element: 1 ms of non-mirror work
            hiding,
            alpha0: 0.5,
            theta: 0.5,
            epsilon_ps: 100_000_000, // 0.1 ms
            test_chunk_elements: 50,
            cg: true,
        }
    }

    #[test]
    fn algorithm_3_moves_alpha_towards_the_side_that_waits() {
        let m = mv(Hiding::DynamicAlpha);
        let eps = m.epsilon_ps;
        // input latency exposed, output hidden: α grows towards 1
        let mut a = 0.5;
        for _ in 0..30 {
            a = m.next_alpha(a, 4 * eps, 0);
        }
        assert!(a > 0.95, "{a}");
        // output exposed, input hidden: α shrinks towards 0
        let mut b = 0.5;
        for _ in 0..30 {
            b = m.next_alpha(b, 0, 4 * eps);
        }
        assert!(b < 0.05, "{b}");
        // both below (or both above) the threshold: unchanged
        assert_eq!(m.next_alpha(0.3, eps / 2, eps / 3), 0.3);
        assert_eq!(m.next_alpha(0.3, 2 * eps, 3 * eps), 0.3);
    }
}
