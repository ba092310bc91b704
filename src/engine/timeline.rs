//! Optional capture of what every rank did, for timelines (Perfetto/Chrome
//! JSON and PNG): CPU intervals of computation and of MPI overheads, and
//! messages from send to arrival, and the noise detours inside CPU
//! intervals. Off unless asked for; bounded in size.

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
