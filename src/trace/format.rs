//! The tracer's file format, version 2 (docs/trace-format.md): constants,
//! op codes, the record, header and footer, and a writer. Reading the
//! records, checked, is reader.rs.

use super::TraceError;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

pub const MAGIC: &[u8; 8] = b"IWTRACE2";
pub const FOOTER_MAGIC: &[u8; 8] = b"IWFOOT02";
pub const HEADER_BYTES: u64 = 64;
pub const RECORD_BYTES: usize = 48;

/// The header's `clock` field: what the times between calls measure.
pub mod clock {
    /// The wall clock (also what traces older than the field mean: zero).
    pub const WALL: u32 = 0;
    /// IDLEWAVE_TRACE_CLOCK=cpu: the thread's CPU time between calls, the wall clock inside them.
    pub const CPU: u32 = 1;

    pub fn name(code: u32) -> Option<&'static str> {
        match code {
            WALL => Some("wall"),
            CPU => Some("cpu"),
            _ => None,
        }
    }
}

/// Peer values that are not ranks.
pub const ANY_SOURCE: i32 = -1;
pub const PROC_NULL: i32 = -2;
pub const ANY_TAG: i32 = -1;

// op, OP_NAMES, flag, Coll, COLLS and Coll::name, from the one table the
// tracer (C) and the Python reader share: src/trace/ops.txt.
include!("ops_gen.rs");

impl Coll {
    pub fn is_rooted(self) -> bool {
        matches!(self, Coll::Bcast | Coll::Reduce | Coll::Gather | Coll::Scatter | Coll::Gatherv | Coll::Scatterv)
    }
}

/// Ops of point-to-point calls whose peer is a rank of the trace (moved by
/// extrapolation; here with the codes, for the converter and the grid alike).
pub fn has_p2p_peer(code: u16) -> bool {
    matches!(
        code,
        op::SEND
            | op::RECV
            | op::ISEND
            | op::IRECV
            | op::SENDRECV_SEND
            | op::SENDRECV_RECV
            | op::MRECV
            | op::IMRECV
            | op::WAIT
            | op::TEST
            | op::START
            | op::SEND_INIT
            | op::RECV_INIT
    )
}

/// How a collective record was called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollMode {
    Blocking,
    Nonblocking,
    Persistent,
}

/// Splits a collective op code into its collective and mode.
pub fn collective_of(code: u16) -> Option<(Coll, CollMode)> {
    let n = COLLS.len() as u16;
    let (base, mode) = match code {
        c if (op::COLL_BASE..op::COLL_BASE + n).contains(&c) => (op::COLL_BASE, CollMode::Blocking),
        c if (op::COLL_BASE + op::NONBLOCKING..op::COLL_BASE + op::NONBLOCKING + n).contains(&c) => {
            (op::COLL_BASE + op::NONBLOCKING, CollMode::Nonblocking)
        }
        c if (op::COLL_BASE + op::PERSISTENT..op::COLL_BASE + op::PERSISTENT + n).contains(&c) => {
            (op::COLL_BASE + op::PERSISTENT, CollMode::Persistent)
        }
        _ => return None,
    };
    Some((COLLS[(code - base) as usize], mode))
}

/// The name of an op code, for reports and the Python side.
pub fn op_name(code: u16) -> String {
    if let Some((c, mode)) = collective_of(code) {
        return match mode {
            CollMode::Blocking => c.name().to_string(),
            CollMode::Nonblocking => format!("i{}", c.name()),
            CollMode::Persistent => format!("{}_init", c.name()),
        };
    }
    match OP_NAMES.iter().find(|(c, _)| *c == code) {
        Some((_, name)) => name.to_string(),
        None => format!("op{code}"),
    }
}

/// Every op code with its name (for the Python side's table check).
pub fn all_ops() -> Vec<(u16, String)> {
    let mut codes: Vec<u16> = OP_NAMES.iter().map(|(c, _)| *c).collect();
    for base in [op::COLL_BASE, op::COLL_BASE + op::NONBLOCKING, op::COLL_BASE + op::PERSISTENT] {
        codes.extend(base..base + COLLS.len() as u16);
    }
    codes.into_iter().map(|c| (c, op_name(c))).collect()
}

/// A neighbourhood collective's payload, `[n_sources, n_destinations,
/// sources…, destinations…, receive bytes…, send bytes…]`: the two counts,
/// if its length is what they say.
pub fn neighbour_counts(payload: &[u64]) -> Option<(usize, usize)> {
    let (&ns, &nd) = (payload.first()?, payload.get(1)?);
    let n = ns.checked_add(nd)?;
    (n.checked_mul(2)?.checked_add(2)? == payload.len() as u64).then_some((ns as usize, nd as usize))
}

/// A Cartesian communicator's payload, `[ndims, dims…, periods…]`: ndims,
/// if its length is what it says.
pub fn cart_dims(payload: &[u64]) -> Option<usize> {
    let &nd = payload.first()?;
    (nd.checked_mul(2)?.checked_add(1)? == payload.len() as u64).then_some(nd as usize)
}

/// One record, decoded.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Record {
    pub op: u16,
    pub flags: u16,
    pub comm: u32,
    pub peer: i32,
    pub tag: i32,
    pub bytes: u64,
    pub req: u64,
    pub t0: f64,
    pub t1: f64,
}

impl Record {
    pub(super) fn decode(b: &[u8]) -> Self {
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        Record {
            op: u16_at(0),
            flags: u16_at(2),
            comm: u32_at(4),
            peer: u32_at(8) as i32,
            tag: u32_at(12) as i32,
            bytes: u64_at(16),
            req: u64_at(24),
            t0: f64::from_bits(u64_at(32)),
            t1: f64::from_bits(u64_at(40)),
        }
    }

    pub fn has(&self, f: u16) -> bool {
        self.flags & f != 0
    }
}

/// What the footer says about a rank's run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Footer {
    pub library: String,
    /// (MPI function name, calls, seconds inside), in index order.
    pub functions: Vec<(String, u64, f64)>,
    /// The tracer's own time taken out of the timeline (entry `tracer_s`;
    /// None in older traces and in those written with the overhead kept).
    pub tracer_s: Option<f64>,
}

/// The header of a rank file.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub rank: i32,
    pub size: i32,
    pub records: u64,
    pub footer_offset: u64,
    pub t_init: f64,
    /// What the times between calls measure ([`clock`]).
    pub clock: u32,
}

pub fn header_of(path: &Path) -> Result<Header, TraceError> {
    let (mut f, _) = crate::files::open_regular(path, "rank file")?;
    let mut h = [0u8; HEADER_BYTES as usize];
    let got = read_full(&mut f, &mut h).map_err(TraceError::io(path))?;
    if got == 0 {
        return Err(TraceError::format(path, "empty (0 bytes): a rank file cut before its header, or not written"));
    }
    if got < 8 && MAGIC.starts_with(&h[..got]) {
        return Err(TraceError::format(path, format!("truncated header ({got} bytes)")));
    }
    if got < 8 || &h[..8] != MAGIC {
        let hint = if got >= 8 && &h[..7] == b"IWTRACE" { " (an older trace version: trace the run again with this idlewave)" } else { "" };
        return Err(TraceError::format(path, format!("not an idlewave trace (bad magic){hint}")));
    }
    if got < HEADER_BYTES as usize {
        return Err(TraceError::format(path, "truncated in the header"));
    }
    let i32_at = |o: usize| i32::from_le_bytes(h[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().unwrap());
    let clock = u32::from_le_bytes(h[40..44].try_into().unwrap());
    if clock::name(clock).is_none() {
        return Err(TraceError::format(path, format!("unknown clock {clock} in the header (a newer tracer?)")));
    }
    Ok(Header {
        rank: i32_at(8),
        size: i32_at(12),
        records: u64_at(16),
        footer_offset: u64_at(24),
        t_init: f64::from_bits(u64_at(32)),
        clock,
    })
}

pub(super) fn read_full(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        let n = f.read(&mut buf[got..])?;
        if n == 0 {
            break;
        }
        got += n;
    }
    Ok(got)
}

/// Reads the footer; errors name the file.
pub fn footer_of(path: &Path, h: &Header) -> Result<Footer, TraceError> {
    if h.footer_offset == u64::MAX || h.records == u64::MAX {
        return Err(TraceError::format(
            path,
            "the run did not reach MPI_Finalize (the header was never completed); replay needs a complete trace",
        ));
    }
    let (mut f, len) = crate::files::open_regular(path, "rank file")?;
    if h.footer_offset < HEADER_BYTES || h.footer_offset >= len {
        return Err(TraceError::format(
            path,
            format!("footer offset {} is outside the file ({len} bytes): truncated or corrupt", h.footer_offset),
        ));
    }
    f.seek(SeekFrom::Start(h.footer_offset)).map_err(TraceError::io(path))?;
    // Footers are small (a few hundred functions); refuse absurd ones.
    let n = (len - h.footer_offset).min(16 << 20) as usize;
    let mut b = vec![0u8; n];
    let got = read_full(&mut f, &mut b).map_err(TraceError::io(path))?;
    b.truncate(got);
    let bad = |what: &str| TraceError::format(path, format!("footer: {what} (truncated or corrupt)"));
    let mut at = 0usize;
    let mut take = |k: usize| -> Result<&[u8], TraceError> {
        let s = b.get(at..at + k).ok_or_else(|| bad("ends early"))?;
        at += k;
        Ok(s)
    };
    if take(8)? != FOOTER_MAGIC {
        return Err(bad("bad magic"));
    }
    let lib_len = u32::from_le_bytes(take(4)?.try_into().unwrap()) as usize;
    let library = String::from_utf8_lossy(take(lib_len)?).trim_end_matches('\0').trim().to_string();
    let count = u32::from_le_bytes(take(4)?.try_into().unwrap()) as usize;
    let mut functions = Vec::with_capacity(count.min(4096));
    for _ in 0..count {
        let l = u16::from_le_bytes(take(2)?.try_into().unwrap()) as usize;
        let fname = String::from_utf8_lossy(take(l)?).to_string();
        let calls = u64::from_le_bytes(take(8)?.try_into().unwrap());
        let secs = f64::from_bits(u64::from_le_bytes(take(8)?.try_into().unwrap()));
        functions.push((fname, calls, secs));
    }
    // (key, value) entries follow in newer traces: what the tracer was built
    // for and ran with (not needed here), and the time it took out
    let mut tracer_s = None;
    if let Ok(count) = take(4) {
        let entries = u32::from_le_bytes(count.try_into().unwrap());
        for _ in 0..entries {
            let kl = u16::from_le_bytes(take(2)?.try_into().unwrap()) as usize;
            let key = take(kl)?.to_vec();
            let vl = u32::from_le_bytes(take(4)?.try_into().unwrap()) as usize;
            let value = take(vl)?;
            if key == b"tracer_s" {
                tracer_s =
                    std::str::from_utf8(value).ok().and_then(|v| v.trim().parse::<f64>().ok()).filter(|v| v.is_finite() && *v >= 0.0);
            }
        }
    }
    Ok(Footer { library, functions, tracer_s })
}

/// The rank files of a trace directory, checked for completeness.
pub fn rank_files(dir: &Path) -> Result<Vec<(PathBuf, Header)>, TraceError> {
    let entries = std::fs::read_dir(dir).map_err(TraceError::io(dir))?;
    let mut found: Vec<(u32, PathBuf)> = Vec::new();
    for e in entries {
        let p = e.map_err(TraceError::io(dir))?.path();
        let Some(file) = p.file_name().and_then(|s| s.to_str()) else { continue };
        if let Some(r) = file.strip_prefix("rank-").and_then(|s| s.strip_suffix(".iwt")) {
            if let Ok(r) = r.parse::<u32>() {
                found.push((r, p));
            }
        }
    }
    if found.is_empty() {
        return Err(TraceError::format(dir, "no rank-*.iwt files (was the tracer preloaded?)"));
    }
    found.sort();
    if let Some(w) = found.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(TraceError::format(dir, format!("two files name rank {} ({}, {})", w[0].0, w[0].1.display(), w[1].1.display())));
    }
    if found[0].0 != 0 {
        return Err(TraceError::format(dir, "rank-0.iwt is missing"));
    }
    // rank 0's header says how many ranks the run had: a file beyond them is the one to blame, not a gap
    let size = header_of(&found[0].1)?.size;
    if let Some((_, p)) = found.iter().find(|(r, _)| size > 0 && *r as i64 >= size as i64) {
        let last = size - 1;
        return Err(TraceError::format(
            p,
            format!("not a rank of this run: rank-0.iwt says the run had {size} ranks (rank-0.iwt to rank-{last}.iwt); move the file out of the trace"),
        ));
    }
    let mut out = Vec::with_capacity(found.len());
    for (i, (r, p)) in found.into_iter().enumerate() {
        if r as usize != i {
            return Err(TraceError::format(dir, format!("rank-{i}.iwt is missing ({size} ranks, rank-0.iwt says)")));
        }
        let h = header_of(&p)?;
        if h.rank != i as i32 {
            return Err(TraceError::format(&p, format!("says it is rank {}, not {i}", h.rank)));
        }
        out.push((p, h));
    }
    let size = out[0].1.size;
    if let Some((p, h)) = out.iter().find(|(_, h)| h.size != size) {
        return Err(TraceError::format(p, format!("says the run had {} ranks, rank 0's file says {size}", h.size)));
    }
    if size <= 0 {
        return Err(TraceError::format(&out[0].0, format!("a run of {size} ranks in its header")));
    }
    if out.len() < size as usize {
        return Err(TraceError::format(dir, format!("rank-{}.iwt is missing ({size} ranks, rank-0.iwt says)", out.len())));
    }
    Ok(out)
}

/// Writes a trace file (tests, the synthetic benchmark).
pub struct Writer {
    out: std::io::BufWriter<File>,
    records: u64,
    written: u64,
    clock: u32,
}

impl Writer {
    pub fn create(path: &Path, rank: i32, size: i32) -> std::io::Result<Self> {
        use std::io::Write;
        let mut out = std::io::BufWriter::new(File::create(path)?);
        let mut h = [0u8; HEADER_BYTES as usize];
        h[..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&rank.to_le_bytes());
        h[12..16].copy_from_slice(&size.to_le_bytes());
        h[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        h[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        out.write_all(&h)?;
        Ok(Writer { out, records: 0, written: HEADER_BYTES, clock: clock::WALL })
    }

    /// The header's clock (written by [`Writer::finish`]).
    pub fn with_clock(mut self, clock: u32) -> Self {
        self.clock = clock;
        self
    }

    pub fn record(&mut self, r: &Record, payload: &[u64]) -> std::io::Result<()> {
        use std::io::Write;
        let mut b = [0u8; RECORD_BYTES];
        let flags = if payload.is_empty() { r.flags & !flag::PAYLOAD } else { r.flags | flag::PAYLOAD };
        b[0..2].copy_from_slice(&r.op.to_le_bytes());
        b[2..4].copy_from_slice(&flags.to_le_bytes());
        b[4..8].copy_from_slice(&r.comm.to_le_bytes());
        b[8..12].copy_from_slice(&r.peer.to_le_bytes());
        b[12..16].copy_from_slice(&r.tag.to_le_bytes());
        b[16..24].copy_from_slice(&r.bytes.to_le_bytes());
        b[24..32].copy_from_slice(&r.req.to_le_bytes());
        b[32..40].copy_from_slice(&r.t0.to_bits().to_le_bytes());
        b[40..48].copy_from_slice(&r.t1.to_bits().to_le_bytes());
        self.out.write_all(&b)?;
        self.written += RECORD_BYTES as u64;
        if !payload.is_empty() {
            self.out.write_all(&(payload.len() as u64).to_le_bytes())?;
            for v in payload {
                self.out.write_all(&v.to_le_bytes())?;
            }
            self.written += 8 + 8 * payload.len() as u64;
        }
        self.records += 1;
        Ok(())
    }

    /// Writes the footer and completes the header.
    pub fn finish(mut self, footer: &Footer) -> std::io::Result<()> {
        use std::io::Write;
        let footer_at = self.written;
        self.out.write_all(FOOTER_MAGIC)?;
        self.out.write_all(&(footer.library.len() as u32).to_le_bytes())?;
        self.out.write_all(footer.library.as_bytes())?;
        self.out.write_all(&(footer.functions.len() as u32).to_le_bytes())?;
        for (name, calls, secs) in &footer.functions {
            self.out.write_all(&(name.len() as u16).to_le_bytes())?;
            self.out.write_all(name.as_bytes())?;
            self.out.write_all(&calls.to_le_bytes())?;
            self.out.write_all(&secs.to_bits().to_le_bytes())?;
        }
        let mut f = self.out.into_inner().map_err(|e| e.into_error())?;
        f.seek(SeekFrom::Start(16))?;
        f.write_all(&self.records.to_le_bytes())?;
        f.write_all(&footer_at.to_le_bytes())?;
        f.seek(SeekFrom::Start(40))?;
        f.write_all(&self.clock.to_le_bytes())?;
        Ok(())
    }
}

#[cfg(test)]
mod clock_tests {
    use super::*;

    fn written(dir: &Path, clock: Option<u32>) -> PathBuf {
        let path = dir.join(format!("rank-{}.iwt", clock.map_or(9, |c| c)));
        let w = Writer::create(&path, 0, 1).unwrap();
        let w = match clock {
            Some(c) => w.with_clock(c),
            None => w,
        };
        w.finish(&Footer { library: "x".into(), functions: vec![], tracer_s: None }).unwrap();
        path
    }

    #[test]
    fn the_header_clock_round_trips_and_older_traces_mean_the_wall_clock() {
        let dir = std::env::temp_dir().join(format!("idlewave-clock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(header_of(&written(&dir, Some(clock::CPU))).unwrap().clock, clock::CPU);
        assert_eq!(header_of(&written(&dir, Some(clock::WALL))).unwrap().clock, clock::WALL);
        // a writer that says nothing leaves the field zero, as traces from before it: the wall clock
        assert_eq!(header_of(&written(&dir, None)).unwrap().clock, clock::WALL);
        assert_eq!(clock::name(clock::CPU), Some("cpu"));
        // an unknown clock is refused, naming the file
        let e = header_of(&written(&dir, Some(7))).unwrap_err().to_string();
        assert!(e.contains("unknown clock 7") && e.contains("rank-7.iwt"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
