//! Streaming a rank's records from its file, each checked as it is read
//! (check.rs), and holding a rank's records in memory (`Loaded`, read the
//! same way). The reader holds a small buffer per rank and reopens the file
//! at each refill, so thousands of ranks need neither thousands of
//! descriptors nor memory proportional to the trace.

use super::check::Checker;
use super::format::{flag, op_name, read_full, Header, Record, HEADER_BYTES, RECORD_BYTES};
use super::TraceError;
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Streams one rank's records (and payloads) from its file.
#[derive(Debug)]
pub struct RecordReader {
    path: PathBuf,
    /// File offset of the next unread byte.
    offset: u64,
    /// Records still to read (from the header).
    left: u64,
    /// Where the records end: the footer's offset.
    end: u64,
    /// Index of the next record (for error messages).
    pub index: u64,
    buf: Vec<u8>,
    pos: usize,
    chunk: usize,
    /// What each record must make sense as (check.rs).
    check: Checker,
}

impl RecordReader {
    /// `chunk`: bytes to read at a time.
    pub fn new(path: &Path, h: &Header, chunk: usize) -> Self {
        RecordReader {
            path: path.to_path_buf(),
            offset: HEADER_BYTES,
            left: h.records,
            end: h.footer_offset,
            index: 0,
            buf: Vec::new(),
            pos: 0,
            chunk: chunk.max(RECORD_BYTES * 4),
            check: Checker::new(h.size),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn corrupt(&self, message: impl Into<String>) -> TraceError {
        TraceError::Corrupt { path: self.path.clone(), index: self.index, message: message.into() }
    }

    /// Makes at least `n` unread bytes available, or fails naming the record.
    fn need(&mut self, n: usize) -> Result<(), TraceError> {
        if self.buf.len() - self.pos >= n {
            return Ok(());
        }
        self.buf.drain(..self.pos);
        self.pos = 0;
        // never into the footer: a header claiming more records than the file holds is an error here
        let want = (self.chunk.max(n) - self.buf.len()).min(self.end.saturating_sub(self.offset) as usize);
        let (mut f, _) = crate::files::open_regular(&self.path, "rank file")?;
        f.seek(SeekFrom::Start(self.offset)).map_err(TraceError::io(&self.path))?;
        let old = self.buf.len();
        self.buf.resize(old + want, 0);
        let got = read_full(&mut f, &mut self.buf[old..]).map_err(TraceError::io(&self.path))?;
        self.buf.truncate(old + got);
        self.offset += got as u64;
        if self.buf.len() < n {
            let why =
                if self.offset >= self.end { "the records end there (the footer follows): the header claims more" } else { "truncated" };
            return Err(self.corrupt(why));
        }
        Ok(())
    }

    /// The next record and its payload (appended to `payload`, cleared first), or None at the end.
    pub fn next(&mut self, payload: &mut Vec<u64>) -> Result<Option<Record>, TraceError> {
        payload.clear();
        if self.left == 0 {
            return Ok(None);
        }
        self.need(RECORD_BYTES)?;
        let r = Record::decode(&self.buf[self.pos..self.pos + RECORD_BYTES]);
        self.pos += RECORD_BYTES;
        if r.bytes >= crate::units::MAX_MESSAGE_BYTES {
            // refused here, naming the record, rather than by the engine (replay) or LogGOPSim (export)
            return Err(self.corrupt(format!("{} bytes, past the engine's limit of 2^47 (corrupt file?)", r.bytes)));
        }
        if !(r.t0.is_finite() && r.t1.is_finite()) {
            return Err(self.corrupt(format!("its times ({}, {}) are not finite numbers (corrupt file)", r.t0, r.t1)));
        }
        if r.has(flag::PAYLOAD) {
            self.need(8)?;
            let n = u64::from_le_bytes(self.buf[self.pos..self.pos + 8].try_into().unwrap());
            self.pos += 8;
            if n > (1 << 26) {
                return Err(self.corrupt(format!("payload of {n} values is implausible (corrupt file)")));
            }
            let bytes = n as usize * 8;
            self.need(bytes)?;
            payload.extend(self.buf[self.pos..self.pos + bytes].chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())));
            self.pos += bytes;
        }
        self.check.check(self.index, &r, payload).map_err(|source| TraceError::Record {
            path: self.path.clone(),
            index: self.index,
            op: op_name(r.op),
            source,
        })?;
        self.left -= 1;
        self.index += 1;
        Ok(Some(r))
    }
}

/// A rank's records held in memory: the template that many simulated
/// ranks replay, each with its own cursor.
#[derive(Debug)]
pub struct Loaded {
    pub path: PathBuf,
    pub records: Vec<Record>,
    /// Per record: start of its payload in `payloads` (u32::MAX: none); the first value is the length.
    payload_at: Vec<u32>,
    payloads: Vec<u64>,
}

impl Loaded {
    pub fn read(path: &Path, h: &Header) -> Result<Self, TraceError> {
        let mut reader = RecordReader::new(path, h, 1 << 16);
        let cap = h.records.min(1 << 24) as usize;
        let mut l = Loaded {
            path: path.to_path_buf(),
            records: Vec::with_capacity(cap),
            payload_at: Vec::with_capacity(cap),
            payloads: Vec::new(),
        };
        let mut buf = Vec::new();
        while let Some(r) = reader.next(&mut buf)? {
            l.records.push(r);
            if buf.is_empty() {
                l.payload_at.push(u32::MAX);
            } else {
                let at = u32::try_from(l.payloads.len()).map_err(|_| TraceError::format(path, "payloads beyond 2^32 values"))?;
                l.payload_at.push(at);
                l.payloads.push(buf.len() as u64);
                l.payloads.extend_from_slice(&buf);
            }
        }
        Ok(l)
    }

    /// Record `i` and its payload (empty if none).
    pub fn get(&self, i: usize) -> Option<(&Record, &[u64])> {
        let r = self.records.get(i)?;
        let at = self.payload_at[i];
        if at == u32::MAX {
            return Some((r, &[]));
        }
        let at = at as usize;
        let n = self.payloads[at] as usize;
        Some((r, &self.payloads[at + 1..at + 1 + n]))
    }

    /// Bytes this holds.
    pub fn bytes(&self) -> usize {
        self.records.capacity() * std::mem::size_of::<Record>() + self.payload_at.capacity() * 4 + self.payloads.capacity() * 8
    }
}
