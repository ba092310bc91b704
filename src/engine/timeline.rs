//! Optional capture of what every rank did, for timelines (Perfetto/Chrome
//! JSON and PNG): CPU intervals of computation and of MPI overheads, and
//! messages from send to arrival. Off unless asked for; bounded in size.

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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub rank: u32,
    pub peer: u32,
    pub start: Time,
    pub end: Time,
    pub activity: Activity,
}

#[derive(Debug, Default)]
pub struct Timeline {
    pub spans: Vec<Span>,
    limit: usize,
    pub truncated: bool,
}

impl Timeline {
    pub fn new(limit: usize) -> Self {
        Timeline { spans: Vec::new(), limit, truncated: false }
    }

    #[inline]
    pub fn push(&mut self, rank: u32, peer: u32, start: Time, end: Time, activity: Activity) {
        if self.spans.len() < self.limit {
            self.spans.push(Span { rank, peer, start, end, activity });
        } else {
            self.truncated = true;
        }
    }
}
