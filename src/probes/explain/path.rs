//! A path: the picoseconds a time owes to each cause and the parameters it
//! crossed, and how paths combine at a maximum.

use super::{CLASSES, GAP, G_BYTE, NIC, NOISE, OVERHEAD, O_BYTE, O_CPU};
use crate::network::LogGOPS;
use crate::time::Time;

/// 128 bytes, so that copying one is inlined rather than a call, aligned
/// to cache lines so that one takes two of them (arrays are otherwise only
/// 16-byte aligned, and a path would straddle three).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(align(64))]
pub struct Path {
    /// Picoseconds by cause ([`CAUSES`]); they sum to the path's time.
    pub ps: [Time; 7],
    /// Per link class ([`CLASSES`]): L, o and g crossed.
    pub(super) crossings: [[u32; 3]; 3],
    /// Per link class: bytes paid G for.
    pub(super) g_bytes: [u64; 3],
    /// Bytes paid O for, all classes together (kept per class, the path
    /// would not fit in 128 bytes).
    pub(super) o_bytes: u64,
    /// The path's latest stretch on one rank (an index into
    /// [`super::Explain::hops`]; 0 before it reached any rank).
    pub(super) hop: u32,
}

impl Path {
    /// `n` more of parameter `k` ([`PARAMS`]) in link class `class`.
    #[inline]
    pub(super) fn add_count(&mut self, class: usize, k: usize, n: u64) {
        match k {
            G_BYTE => self.g_bytes[class] += n,
            O_BYTE => self.o_bytes += n,
            _ => self.crossings[class][k] = self.crossings[class][k].saturating_add(n as u32),
        }
    }

    /// How many of parameter `k` the path crossed in `class` (None for O,
    /// which is kept for all classes together).
    pub fn by_class(&self, class: usize, k: usize) -> Option<u64> {
        match k {
            G_BYTE => Some(self.g_bytes[class]),
            O_BYTE => None,
            _ => Some(self.crossings[class][k] as u64),
        }
    }

    /// How many of parameter `k` the path crossed, all classes together: dT/dθ.
    pub fn count(&self, k: usize) -> u64 {
        if k == O_BYTE {
            return self.o_bytes;
        }
        (0..CLASSES.len()).filter_map(|c| self.by_class(c, k)).sum()
    }

    pub fn total(&self) -> Time {
        self.ps.iter().sum()
    }

    /// `ps` more of `cause`.
    #[inline]
    pub(super) fn add(&mut self, cause: usize, ps: Time) {
        self.ps[cause] += ps;
    }

    /// The per-byte share of a message of `size` bytes: (s−1) bytes.
    fn bytes(size: u64) -> u64 {
        size.saturating_sub(1)
    }

    /// A sender's CPU: o + (s−1)·O.
    pub(super) fn send_cpu(&mut self, class: usize, p: &LogGOPS, size: u64) {
        self.add(OVERHEAD, p.send_cpu(size));
        self.add_count(class, O_CPU, 1);
        self.add_count(class, O_BYTE, Self::bytes(size));
    }

    /// A NIC, sending or receiving: g + (s−1)·G.
    pub(super) fn nic(&mut self, class: usize, p: &LogGOPS, size: u64) {
        self.add(NIC, p.send_nic(size));
        self.add_count(class, GAP, 1);
        self.add_count(class, G_BYTE, Self::bytes(size));
    }

    /// A receiver's CPU: o + (s−1)·max(O, G) (both counted where they are
    /// equal). The per-byte part is the parameter's cause: (s−1)·G is the
    /// gap per byte even where the CPU pays it.
    pub(super) fn recv_cpu(&mut self, class: usize, p: &LogGOPS, size: u64) {
        self.add(OVERHEAD, p.o_ps);
        self.add_count(class, O_CPU, 1);
        let per_byte = p.recv_cpu(size) - p.o_ps;
        self.add(if p.big_o_ps >= p.big_g_ps { OVERHEAD } else { NIC }, per_byte);
        if p.big_o_ps >= p.big_g_ps {
            self.add_count(class, O_BYTE, Self::bytes(size));
        }
        if p.big_g_ps >= p.big_o_ps {
            self.add_count(class, G_BYTE, Self::bytes(size));
        }
    }

    /// A receiver's CPU behind a DMA NIC: o + (s−1)·O.
    pub(super) fn recv_cpu_dma(&mut self, class: usize, p: &LogGOPS, size: u64) {
        self.add(OVERHEAD, p.recv_cpu_per_byte_o(size));
        self.add_count(class, O_CPU, 1);
        self.add_count(class, O_BYTE, Self::bytes(size));
    }

    /// Whatever of [start, end) a CPU charge of `work` lost to detours.
    pub(super) fn noise(&mut self, start: Time, work: Time, end: Time) {
        self.add(NOISE, end.saturating_sub(start.saturating_add(work)));
    }

    /// No count any more: what came before no longer moves the time.
    pub(super) fn restart_counts(&mut self) {
        *self = Path { ps: self.ps, hop: self.hop, ..Path::default() };
    }

    /// Each count raised to `other`'s where that is larger (a tie).
    pub(super) fn max_counts(&mut self, other: &Path) {
        // (indexed loops: the compiler unrolls them, not the flattened iterators)
        for class in 0..CLASSES.len() {
            for k in 0..3 {
                self.crossings[class][k] = self.crossings[class][k].max(other.crossings[class][k]);
            }
            self.g_bytes[class] = self.g_bytes[class].max(other.g_bytes[class]);
        }
        self.o_bytes = self.o_bytes.max(other.o_bytes);
    }
}

/// The path of the latest of `inputs` (time, path); see the module notes for ties.
/// Copies one path, however many inputs (a clock given twice is one input):
/// the tied ones are only compared.
pub fn latest(inputs: &[(Time, &Path)]) -> Option<Path> {
    let (&(mut best_time, mut best), rest) = inputs.split_first()?;
    let mut first_tie = None;
    for (k, &(t, p)) in rest.iter().enumerate() {
        if t > best_time {
            (best_time, best, first_tie) = (t, p, None);
        } else if t == best_time && !std::ptr::eq(p, best) && first_tie.is_none() {
            first_tie = Some(k);
        }
    }
    let mut path = *best;
    if let Some(k) = first_tie {
        for &(t, p) in &rest[k..] {
            if t == best_time && !std::ptr::eq(p, best) {
                path.max_counts(p);
            }
        }
    }
    Some(path)
}
