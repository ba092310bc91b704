//! Observers of a run: the critical path ([`Explain`]) and the timeline
//! ([`Timeline`]), and what they hand back at the end ([`Findings`]).
//!
//! What the engine tells an observer, and what the observer may read of it
//! (the [`Probe`] trait, the [`View`]), is the engine's: engine/probe.rs,
//! re-exported here for the observers. The engine knows nothing of this
//! module: it is generic over its probe, and the observers depend on it.

pub mod explain;
pub mod timeline;

pub use crate::engine::probe::{Message, NoProbe, Probe, Receipt, Send, View, Wait};
use crate::engine::Engine;
use crate::program::Program;

pub use explain::Explain;
pub use timeline::Timeline;

/// What probes hand back at the end of a run.
#[derive(Default)]
pub struct Findings {
    /// The timeline's spans, and whether it was cut at its limit.
    pub timeline: Option<(Vec<timeline::Span>, bool)>,
    pub explained: Option<explain::Explained>,
}

/// A probe that hands back what it found after the run.
#[allow(unused_variables)]
pub trait Report: Probe {
    fn report<P: Program>(&mut self, v: &View<P>, out: &mut Findings) {}
}

impl Report for NoProbe {}

impl<A: Report> Report for Option<A> {
    fn report<P: Program>(&mut self, v: &View<P>, out: &mut Findings) {
        if let Some(a) = self {
            a.report(v, out)
        }
    }
}

impl<A: Report, B: Report> Report for (A, B) {
    fn report<P: Program>(&mut self, v: &View<P>, out: &mut Findings) {
        self.0.report(v, out);
        self.1.report(v, out);
    }
}

impl<P: Program, O: Report> Engine<P, O> {
    /// What the probe found (after the run).
    pub fn findings(&mut self) -> Findings {
        let mut out = Findings::default();
        self.tell(|o, v| o.report(v, &mut out));
        out
    }
}
