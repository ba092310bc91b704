//! A sparse matrix described by its communication, for the SpMV workload:
//! per rank, the partners it exchanges parts of x with (in posting order),
//! the elements each way, and its local and remote nonzeros.
//!
//! ```text
//! # comments and blank lines are ignored
//! ranks 4
//! nonzeros <rank> <local> <remote>
//! partner <rank> <peer> <send_elements> <recv_elements>
//! ```
//! Every `partner r q s t` needs its mirror `partner q r t s`, so every
//! message has a receiver; errors name the file and line.

use std::collections::HashMap;

/// One partner of a rank: the peer and the elements sent to / received from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partner {
    pub peer: u32,
    pub send: u64,
    pub recv: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartnerTable {
    /// Partners of rank r: entries[offsets[r]..offsets[r+1]].
    offsets: Vec<u32>,
    entries: Vec<Partner>,
    nonzeros: Vec<(u64, u64)>,
}

impl PartnerTable {
    pub fn ranks(&self) -> u32 {
        self.nonzeros.len() as u32
    }

    pub fn partners(&self, rank: u32) -> &[Partner] {
        let r = rank as usize;
        &self.entries[self.offsets[r] as usize..self.offsets[r + 1] as usize]
    }

    /// (local, remote) nonzeros of `rank`.
    pub fn nonzeros(&self, rank: u32) -> (u64, u64) {
        self.nonzeros[rank as usize]
    }

    pub fn read(path: &str) -> Result<Self, String> {
        Self::parse(&crate::files::read_text(path, "partner file")?, path)
    }

    pub fn parse(text: &str, source: &str) -> Result<Self, String> {
        let mut ranks: Option<u32> = None;
        let mut nonzeros: Vec<Option<(u64, u64)>> = Vec::new();
        // (rank, peer) -> (send, recv, line), in file order per rank
        let mut lines: Vec<(u32, u32, u64, u64, usize)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let err = |m: String| format!("{source}:{line}: {m}");
            let words: Vec<&str> = raw.split('#').next().unwrap_or("").split_whitespace().collect();
            let Some((&key, args)) = words.split_first() else { continue };
            let num = |j: usize, what: &str| -> Result<u64, String> {
                let w = args.get(j).ok_or_else(|| err(format!("`{key}` needs {what}")))?;
                w.parse::<u64>().map_err(|_| err(format!("expected {what} (a non-negative integer) as word {}", j + 2)))
            };
            let expect = |n: usize| -> Result<(), String> {
                if args.len() != n {
                    return Err(err(format!("`{key}` takes {n} numbers, found {}", args.len())));
                }
                Ok(())
            };
            let p = match (key, ranks) {
                ("ranks", None) => {
                    expect(1)?;
                    let p = num(0, "the rank count")?;
                    if p == 0 || p > u32::MAX as u64 {
                        return Err(err(format!("rank count {p} is out of range")));
                    }
                    ranks = Some(p as u32);
                    // The table: a nonzeros slot per rank, and per partner line
                    // (≥ 16 bytes of text) its record and hash entry (~80 B).
                    let estimate = p as u128 * 24 + text.len() as u128 / 16 * 80;
                    crate::memory::check_memory(estimate, None).map_err(|e| err(format!("`ranks {p}`: {e}")))?;
                    nonzeros = vec![None; p as usize];
                    continue;
                }
                ("ranks", Some(_)) => return Err(err("`ranks` given twice".into())),
                (_, None) => return Err(err("the first line must be `ranks <count>`".into())),
                (_, Some(p)) => p as u64,
            };
            let rank = num(0, "a rank")?;
            if rank >= p {
                return Err(err(format!("rank {rank} is out of range (0..{p})")));
            }
            match key {
                "nonzeros" => {
                    expect(3)?;
                    let slot = &mut nonzeros[rank as usize];
                    if slot.is_some() {
                        return Err(err(format!("nonzeros of rank {rank} given twice")));
                    }
                    *slot = Some((num(1, "local nonzeros")?, num(2, "remote nonzeros")?));
                }
                "partner" => {
                    expect(4)?;
                    let peer = num(1, "a peer rank")?;
                    if peer >= p || peer == rank {
                        return Err(err(format!("peer {peer} of rank {rank} must be another rank in 0..{p}")));
                    }
                    let (send, recv) = (num(2, "send elements")?, num(3, "receive elements")?);
                    lines.push((rank as u32, peer as u32, send, recv, line));
                }
                _ => return Err(err("unknown record (expected ranks, nonzeros or partner)".into())),
            }
        }
        let p = ranks.ok_or_else(|| format!("{source}: empty; the first line must be `ranks <count>`"))?;
        Self::check_pairs(&lines, source)?;
        let nonzeros = nonzeros
            .into_iter()
            .enumerate()
            .map(|(r, nz)| nz.ok_or_else(|| format!("{source}: rank {r} has no `nonzeros` line")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::from_lines(p, lines, nonzeros))
    }

    /// The table of partner `lines` (rank, peer, send, recv, line), each
    /// rank's in file order.
    fn from_lines(p: u32, mut lines: Vec<(u32, u32, u64, u64, usize)>, nonzeros: Vec<(u64, u64)>) -> Self {
        lines.sort_by_key(|l| (l.0, l.4));
        let mut offsets = vec![0u32; p as usize + 1];
        for l in &lines {
            offsets[l.0 as usize + 1] += 1;
        }
        for r in 0..p as usize {
            offsets[r + 1] += offsets[r];
        }
        let entries = lines.iter().map(|&(_, peer, send, recv, _)| Partner { peer, send, recv }).collect();
        PartnerTable { offsets, entries, nonzeros }
    }

    /// Each (rank, peer) pair of partner `lines` is given once, and its peer
    /// gives the pair back with send and receive swapped.
    fn check_pairs(lines: &[(u32, u32, u64, u64, usize)], source: &str) -> Result<(), String> {
        let mut seen: HashMap<(u32, u32), (u64, u64, usize)> = HashMap::with_capacity(lines.len());
        for &(r, q, s, t, line) in lines {
            if let Some(&(_, _, first)) = seen.get(&(r, q)) {
                return Err(format!("{source}:{line}: partner {q} of rank {r} already given on line {first}"));
            }
            seen.insert((r, q), (s, t, line));
        }
        for &(r, q, s, t, line) in lines {
            match seen.get(&(q, r)) {
                None => return Err(format!("{source}:{line}: rank {r} lists {q} as a partner but {q} does not list {r}")),
                Some(&(s2, t2, l2)) if (s2, t2) != (t, s) => {
                    return Err(format!(
                        "{source}:{line}: rank {r} sends {s} and receives {t} elements with {q}, but line {l2} says {q} sends {s2} and receives {t2}"
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The table as text in the format `parse` reads.
    pub fn write(&self) -> String {
        let mut out =
            format!("# idlewave SpMV partners: per rank, x elements sent to / received from each partner\nranks {}\n", self.ranks());
        for r in 0..self.ranks() {
            let (l, m) = self.nonzeros(r);
            out += &format!("nonzeros {r} {l} {m}\n");
            for e in self.partners(r) {
                out += &format!("partner {r} {} {} {}\n", e.peer, e.send, e.recv);
            }
        }
        out
    }

    pub fn from_parts(parts: Vec<(Vec<Partner>, (u64, u64))>) -> Self {
        let mut offsets = vec![0u32];
        let mut entries = Vec::new();
        let mut nonzeros = Vec::new();
        for (ps, nz) in parts {
            entries.extend(ps);
            offsets.push(entries.len() as u32);
            nonzeros.push(nz);
        }
        PartnerTable { offsets, entries, nonzeros }
    }
}
