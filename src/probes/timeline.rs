//! Optional capture of what every rank did, for timelines (Perfetto/Chrome
//! JSON and PNG): CPU intervals of computation and of MPI overheads, and
//! messages from send to arrival, and the noise detours inside CPU
//! intervals. Off unless asked for; bounded in size.

use super::{Findings, Message, Probe, Receipt, Report, View, Wait};
use crate::network::LogGOPS;
use crate::program::Program;
use crate::time::Time;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Activity {
    Compute = 0,
    /// CPU overhead of sending (o + (s−1)·O).
    Send = 1,
    /// CPU overhead of receiving.
    Recv = 2,
    /// A message in flight: `rank` sent it to `peer`, [start, end) from send to arrival.
    Message = 3,
    /// A noise detour that took the CPU inside one of the intervals above.
    Noise = 4,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub rank: u32,
    pub peer: u32,
    pub start: Time,
    pub end: Time,
    pub activity: Activity,
    /// For sends, receives and messages: the message's tag and bytes.
    pub tag: u32,
    pub bytes: u64,
}

#[derive(Debug, Default)]
pub struct Timeline {
    pub spans: Vec<Span>,
    limit: usize,
    pub truncated: bool,
    /// Keep only spans of this activity (the computations, for attributing
    /// a replay's time to its calls), or all.
    only: Option<Activity>,
}

impl Timeline {
    pub fn new(limit: usize) -> Self {
        Timeline { spans: Vec::new(), limit, truncated: false, only: None }
    }

    /// A timeline of the computations alone.
    pub fn computations(limit: usize) -> Self {
        Timeline { only: Some(Activity::Compute), ..Timeline::new(limit) }
    }

    /// Bytes one span takes (the memory estimate made before the run).
    pub const SPAN_BYTES: u128 = std::mem::size_of::<Span>() as u128;

    #[inline]
    pub fn push(&mut self, rank: u32, peer: u32, (start, end): (Time, Time), activity: Activity, (tag, bytes): (u32, u64)) {
        if self.only.is_some_and(|a| a != activity) {
            return;
        }
        if self.spans.len() < self.limit {
            self.spans.push(Span { rank, peer, start, end, activity, tag, bytes });
        } else {
            self.truncated = true;
        }
    }
}

impl Timeline {
    /// A CPU interval of `rank`'s, and the detours that took the CPU inside it.
    fn cpu<P: Program>(&mut self, v: &View<P>, (rank, peer): (u32, u32), span: (Time, Time), what: Activity, msg: (u32, u64)) {
        self.push(rank, peer, span, what, msg);
        v.noise.detours_in(rank, span.0, span.1, |s, e| self.push(rank, rank, (s, e), Activity::Noise, (0, 0)));
    }
}

/// The timeline records at the probe's calls; each record is kept out of
/// line (`#[cold]`), out of the hot path's way.
impl Probe for Timeline {
    #[inline(always)]
    fn computed<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, _work: Time) -> Time {
        self.compute_span(v, wait.rank, (wait.at, v.clocks[c]));
        0
    }

    #[inline(always)]
    fn message_queued<P: Program>(&mut self, v: &View<P>, m: Message) {
        self.message(v, m);
    }

    #[inline(always)]
    fn received<P: Program>(&mut self, v: &View<P>, wait: Wait, r: Receipt, _p: &LogGOPS) -> Time {
        self.receipt(v, (wait.at, v.clocks[r.c]), r);
        0
    }

    #[inline(always)]
    fn mem_finished<P: Program>(&mut self, v: &View<P>, (rank, _, c): (u32, u8, usize), (start, _): (Time, Time), _core: f64) {
        self.compute_span(v, rank, (start, v.clocks[c]));
    }
}

impl Report for Timeline {
    fn report<P: Program>(&mut self, _v: &View<P>, out: &mut Findings) {
        out.timeline = Some((std::mem::take(&mut self.spans), self.truncated));
    }
}

impl Timeline {
    #[cold]
    #[inline(never)]
    fn compute_span<P: Program>(&mut self, v: &View<P>, rank: u32, span: (Time, Time)) {
        self.cpu(v, (rank, 0), span, Activity::Compute, (0, 0));
    }

    #[cold]
    #[inline(never)]
    fn message<P: Program>(&mut self, v: &View<P>, m: Message) {
        if let Some(span) = m.cpu {
            self.cpu(v, (m.src, m.dst), span, Activity::Send, (m.tag, m.bytes));
        }
        self.push(m.src, m.dst, m.flight, Activity::Message, (m.tag, m.bytes));
    }

    #[cold]
    #[inline(never)]
    fn receipt<P: Program>(&mut self, v: &View<P>, span: (Time, Time), r: Receipt) {
        self.cpu(v, (r.dst, r.src), span, Activity::Recv, (r.tag, r.size));
    }
}
