//! LogGOPSim's binary GOAL schedules: what its `txt2bin` writes and its
//! simulator maps into memory. ATLAHS's LogGOPSim and htsim back ends read
//! the same layout (their `Parser.hpp` and `Goal.hpp` serialise it unchanged). Read (memory-mapped) into the same
//! [`GoalSchedule`] as the text, and written byte for byte as `txt2bin`
//! writes it (tested against its output).
//!
//! The layout (LogGOPSim's `src/LogGOPSim/Parser.hpp`, `serialize_mmap`),
//! little-endian, packed:
//!
//! ```text
//! u64 magic 4223
//! u32 num_ranks, u8 max_cpu, u8 max_nic
//! per rank: u64 start, u64 end        (offsets from byte 8, the byte after the magic)
//! per rank, from its start:
//!   u32 nodes, u32 roots, u32 root[roots]          (ops no other op waits for)
//!   per node (39 bytes): u32 dependencies, u8 type (1 send, 2 recv, 3 calc),
//!     u32 peer, u64 size, u32 tag, u8 cpu, u8 nic,
//!     u32 done_count, u32 done_first, u32 start_count, u32 start_first
//!   u32 appendix[...]: the ops that wait for each node to be done (done_count
//!     from done_first), then to have started (irequires), node by node
//! ```
//!
//! `dependencies` counts the ops a node waits for; a node's `done` list names
//! the ops that wait for it (in the order their `requires` appeared).

use super::goal::{GoalError, GoalKind, GoalOp, GoalRank, GoalSchedule, ANY};
use super::goal_program::{GoalProgram, GoalProgramBuilder};
use std::path::Path;

/// The first eight bytes of a binary schedule (LogGOPSim's `MAGIC_COOKIE`).
pub const MAGIC: u64 = 4223;
/// The magic of a schedule a LogGOPSim `--save-mem` run consumed (`MAGIC_COOKIE_INVALID`).
pub const CONSUMED: u64 = 2342;
const HEADER: usize = 8 + 4 + 1 + 1;
const NODE: usize = 4 + 1 + 4 + 8 + 4 + 1 + 1 + 4 * 4;
const SEND: u8 = 1;
const RECV: u8 = 2;
const CALC: u8 = 3;

/// Whether `head` (a file's first bytes) begins a binary schedule.
pub fn is_binary(head: &[u8]) -> bool {
    head.len() >= 8 && u64::from_le_bytes(head[..8].try_into().expect("8 bytes")) == MAGIC
}

/// Reads a binary schedule from a file, memory-mapped.
pub fn read_binary_file(path: &Path) -> Result<GoalSchedule, GoalError> {
    let file = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| GoalError::io(&file, e))?;
    // SAFETY: the map is read only and dropped before we return; a file
    // truncated meanwhile by another process could fault (as any mmap reader).
    let map = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| GoalError::io(&file, e))?;
    read_binary(&map, &file)
}

/// The rank count a binary schedule declares (its header).
pub fn binary_ranks(head: &[u8], file: &str) -> Result<u32, GoalError> {
    Reader { b: head, file }.u32(8).and_then(|n| if n == 0 { Err(error(file, "the schedule has 0 ranks".into())) } else { Ok(n) })
}

fn error(file: &str, message: String) -> GoalError {
    GoalError { file: file.to_string(), line: 0, column: 0, message, interrupted: false }
}

/// Bounds-checked little-endian reads, each failure naming its byte.
struct Reader<'a> {
    b: &'a [u8],
    file: &'a str,
}

impl Reader<'_> {
    fn bytes<const N: usize>(&self, at: usize) -> Result<[u8; N], GoalError> {
        self.b
            .get(at..at.saturating_add(N))
            .map(|s| s.try_into().expect("N bytes"))
            .ok_or_else(|| self.fail(at, format!("the file ends at byte {}, inside a record", self.b.len())))
    }
    fn u32(&self, at: usize) -> Result<u32, GoalError> {
        Ok(u32::from_le_bytes(self.bytes(at)?))
    }
    fn u64(&self, at: usize) -> Result<u64, GoalError> {
        Ok(u64::from_le_bytes(self.bytes(at)?))
    }
    fn fail(&self, at: usize, message: String) -> GoalError {
        error(self.file, format!("byte {at}: {message}"))
    }
}

/// Parses a binary schedule; every inconsistency is an error naming its byte.
pub fn read_binary(b: &[u8], file: &str) -> Result<GoalSchedule, GoalError> {
    let mut ranks = Vec::new();
    let num_ranks = each_rank(b, file, |_, g, _| ranks.push(g.clone()))?;
    Ok(GoalSchedule { num_ranks, ranks })
}

/// Reads a binary schedule from a file (memory-mapped) into an engine
/// program, one rank at a time.
pub fn read_binary_program(path: &Path) -> Result<GoalProgram, GoalError> {
    let file = path.display().to_string();
    let map = crate::program::mapped::map(path)?;
    let mut b: Option<GoalProgramBuilder> = None;
    let mut released = 0;
    // (the header is checked against the file's size before the first rank comes)
    each_rank(&map, &file, |ranks, g, end| {
        b.get_or_insert_with(|| GoalProgramBuilder::new(ranks, ranks as usize, map.len() / NODE)).push_rank(g);
        // (ranks' data usually follow one another; where not, pages come back as read)
        crate::program::mapped::release_behind(&map, &mut released, end);
    })?;
    Ok(b.expect("a schedule has ranks").finish())
}

/// Hands each rank's schedule to `f` (with the rank count and the end of its
/// data) in rank order; returns the rank count. The rank's schedule is lent
/// from one buffer reused for every rank.
fn each_rank(b: &[u8], file: &str, mut f: impl FnMut(u32, &GoalRank, usize)) -> Result<u32, GoalError> {
    let r = Reader { b, file };
    if !is_binary(b) {
        return Err(r.fail(0, format!("not a binary GOAL schedule (no magic number {MAGIC})")));
    }
    let num_ranks = binary_ranks(b, file)?;
    let table = HEADER as u64 + 16 * num_ranks as u64;
    if table > b.len() as u64 {
        return Err(r.fail(8, format!("{num_ranks} ranks need a {table}-byte header; the file has {} bytes", b.len())));
    }
    let mut scratch = Scratch::default();
    for rank in 0..num_ranks {
        let at = HEADER + 16 * rank as usize;
        let (start, end) = (r.u64(at)?.saturating_add(8), r.u64(at + 8)?.saturating_add(8));
        if start < table || start > end || end > b.len() as u64 {
            return Err(r.fail(at, format!("rank {rank}'s data [{start}, {end}) is not inside the file's {} bytes", b.len())));
        }
        read_rank(&r, (start as usize, end as usize), rank, num_ranks, &mut scratch)?;
        f(num_ranks, &scratch.rank, end as usize);
    }
    Ok(num_ranks)
}

/// What reading a rank fills, kept from rank to rank (a million ranks would
/// otherwise allocate millions of small vectors).
#[derive(Default)]
struct Scratch {
    rank: GoalRank,
    /// Per op, how many ops the lists say it waits for.
    waits_for: Vec<u32>,
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn read_rank(r: &Reader, (start, end): (usize, usize), rank: u32, num_ranks: u32, scratch: &mut Scratch) -> Result<(), GoalError> {
    let nodes = r.u32(start)? as usize;
    let roots = r.u32(start + 4)? as usize;
    let first_node = start + 8 + 4 * roots;
    let appendix = first_node.saturating_add(nodes.saturating_mul(NODE));
    if appendix > end {
        return Err(r.fail(start, format!("rank {rank}'s {nodes} ops and {roots} roots do not fit in its {} bytes", end - start)));
    }
    // (every node and root lies before `appendix` <= `end` <= the file's length: checked)
    let app = &r.b[appendix..end - (end - appendix) % 4];
    let app_len = app.len() / 4;
    let Scratch { rank: out, waits_for } = scratch;
    out.ops.clear();
    out.ops.reserve(nodes);
    out.requires.clear();
    out.irequires.clear();
    waits_for.clear();
    waits_for.resize(nodes, 0);
    for i in 0..nodes {
        let at = first_node + i * NODE;
        let node: &[u8; NODE] = r.b[at..at + NODE].try_into().expect("a node's bytes");
        let (kind, peer) = (node[4], le_u32(node, 5));
        let kind = match kind {
            SEND => GoalKind::Send,
            RECV => GoalKind::Recv,
            CALC => GoalKind::Calc,
            k => return Err(r.fail(at + 4, format!("rank {rank} op {i}: type {k} (1 send, 2 recv, 3 calc)"))),
        };
        let any_allowed = kind == GoalKind::Recv;
        if kind != GoalKind::Calc && peer >= num_ranks && !(any_allowed && peer == ANY) {
            return Err(r.fail(at + 5, format!("rank {rank} op {i}: peer {peer} of {num_ranks} ranks")));
        }
        let size = u64::from_le_bytes(node[9..17].try_into().expect("8 bytes"));
        out.ops.push(GoalOp { kind, peer, tag: le_u32(node, 17), size, cpu: node[21], nic: node[22] });
        for (list, count_at) in [(0, 23), (1, 31)] {
            let (count, first) = (le_u32(node, count_at) as usize, le_u32(node, count_at + 4) as usize);
            if count == 0 {
                continue;
            }
            if first.saturating_add(count) > app_len {
                return Err(r.fail(at + count_at, format!("rank {rank} op {i}: ops {first}..{} past the {app_len} listed", first + count)));
            }
            for (k, a) in app[4 * first..4 * (first + count)].chunks_exact(4).enumerate() {
                let a = u32::from_le_bytes(a.try_into().expect("4 bytes"));
                if a as usize >= nodes {
                    return Err(r.fail(appendix + 4 * (first + k), format!("rank {rank}: op {a} of {nodes} waits for op {i}")));
                }
                waits_for[a as usize] += 1;
                if list == 0 { &mut out.requires } else { &mut out.irequires }.push((a, i as u32));
            }
        }
    }
    for (i, &n) in waits_for.iter().enumerate() {
        let at = first_node + i * NODE;
        let said = le_u32(r.b, at);
        if said != n {
            return Err(r.fail(at, format!("rank {rank} op {i}: says it waits for {said} ops, {n} name it")));
        }
    }
    let mut free = (0..nodes as u32).filter(|&i| waits_for[i as usize] == 0);
    let listed_are_free = (0..roots).all(|k| Some(le_u32(r.b, start + 8 + 4 * k)) == free.next()) && free.next().is_none();
    if !listed_are_free {
        return Err(r.fail(start + 8, format!("rank {rank}: the ops listed as waiting for none are not those that wait for none")));
    }
    Ok(())
}

/// The schedule as `txt2bin` writes it: the same bytes for the same schedule
/// (each op's waiters in the order of their `requires`, then `irequires`).
pub fn write_binary(s: &GoalSchedule) -> Vec<u8> {
    let n = s.num_ranks as usize;
    let mut out = Vec::with_capacity(HEADER + 16 * n + s.num_ops() * (NODE + 8));
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&s.num_ranks.to_le_bytes());
    out.push(s.max_cpu());
    out.push(s.max_nic());
    out.resize(HEADER + 16 * n, 0);
    for (rank, g) in s.ranks.iter().enumerate() {
        let start = out.len() as u64 - 8;
        let nodes = g.ops.len();
        // who waits for each op to be done, and to have started, in file order
        let mut done: Vec<Vec<u32>> = vec![Vec::new(); nodes];
        let mut started: Vec<Vec<u32>> = vec![Vec::new(); nodes];
        let mut waits = vec![0u32; nodes];
        for &(a, b) in &g.requires {
            done[b as usize].push(a);
            waits[a as usize] += 1;
        }
        for &(a, b) in &g.irequires {
            started[b as usize].push(a);
            waits[a as usize] += 1;
        }
        let roots: Vec<u32> = (0..nodes as u32).filter(|&i| waits[i as usize] == 0).collect();
        out.extend_from_slice(&(nodes as u32).to_le_bytes());
        out.extend_from_slice(&(roots.len() as u32).to_le_bytes());
        roots.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        let mut listed = 0u32;
        for (i, op) in g.ops.iter().enumerate() {
            out.extend_from_slice(&waits[i].to_le_bytes());
            out.push(match op.kind {
                GoalKind::Send => SEND,
                GoalKind::Recv => RECV,
                GoalKind::Calc => CALC,
            });
            out.extend_from_slice(&op.peer.to_le_bytes());
            out.extend_from_slice(&op.size.to_le_bytes());
            out.extend_from_slice(&op.tag.to_le_bytes());
            out.push(op.cpu);
            out.push(op.nic);
            for list in [&done[i], &started[i]] {
                out.extend_from_slice(&(list.len() as u32).to_le_bytes());
                out.extend_from_slice(&listed.to_le_bytes());
                listed += list.len() as u32;
            }
        }
        for i in 0..nodes {
            done[i].iter().chain(&started[i]).for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }
        let end = out.len() as u64 - 8;
        let at = HEADER + 16 * rank;
        out[at..at + 8].copy_from_slice(&start.to_le_bytes());
        out[at + 8..at + 16].copy_from_slice(&end.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::goal::parse_goal;
    use crate::program::goal_file::{read_goal_file, read_goal_ranks};

    fn data(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/loggopsim").join(name)
    }

    fn text(name: &str) -> GoalSchedule {
        let path = if name == "dissemination_16" {
            "examples/dissemination_16.goal".to_string()
        } else {
            format!("tests/data/loggopsim/{name}.goal")
        };
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        parse_goal(&std::fs::read_to_string(&path).unwrap(), "t.goal").unwrap()
    }

    /// The text's dependencies in the binary's order: grouped by the op waited for.
    fn canonical(mut s: GoalSchedule) -> GoalSchedule {
        for r in &mut s.ranks {
            r.requires.sort_by_key(|&(_, b)| b);
            r.irequires.sort_by_key(|&(_, b)| b);
        }
        s
    }

    #[test]
    fn writes_what_loggopsims_txt2bin_writes_byte_for_byte() {
        for name in ["binary_tree_32", "mixed", "dissemination_16"] {
            let theirs = std::fs::read(data(&format!("{name}.bin"))).unwrap();
            assert_eq!(write_binary(&text(name)), theirs, "{name}");
        }
    }

    #[test]
    fn reads_txt2bins_output_as_the_text() {
        for name in ["binary_tree_32", "mixed", "dissemination_16"] {
            let path = data(&format!("{name}.bin"));
            let read = read_goal_file(&path).unwrap();
            assert_eq!(read, canonical(text(name)), "{name}");
            assert_eq!(read_goal_ranks(&path).unwrap(), read.num_ranks);
        }
        let mixed = read_goal_file(&data("mixed.bin")).unwrap();
        assert_eq!(mixed.ranks[0].irequires, vec![(2, 0)]);
        assert_eq!((mixed.ranks[0].ops[3].peer, mixed.ranks[0].ops[3].tag), (ANY, ANY));
        assert_eq!((mixed.max_cpu(), mixed.max_nic()), (1, 1));
    }

    #[test]
    fn a_damaged_file_is_refused_naming_its_byte() {
        let good = std::fs::read(data("mixed.bin")).unwrap();
        let fails = |bytes: &[u8]| read_binary(bytes, "x.bin").unwrap_err().to_string();
        // cut short: rank 2's data lies past the end
        let e = fails(&good[..good.len() - 10]);
        assert!(e.starts_with("x.bin: byte ") && e.contains("rank 2"), "{e}");
        // an op's type: rank 0's first op is at 8 + 4 + 1 + 1 + 48 (table) + 8 + 4 (one root) = 74, type at +4
        let mut bad = good.clone();
        bad[78] = 9;
        assert_eq!(fails(&bad), "x.bin: byte 78: rank 0 op 0: type 9 (1 send, 2 recv, 3 calc)");
        // a dependency count the lists do not back
        let mut bad = good.clone();
        bad[74] = 1;
        assert!(fails(&bad).contains("rank 0 op 0: says it waits for 1 ops, 0 name it"), "{}", fails(&bad));
        // a send to a rank that does not exist
        let mut bad = good.clone();
        bad[79..83].copy_from_slice(&7u32.to_le_bytes());
        assert!(fails(&bad).contains("peer 7 of 3 ranks"));
        assert!(fails(&good[..10]).contains("the file ends at byte 10"), "{}", fails(&good[..10]));
        assert!(fails(&good[..40]).contains("3 ranks need a 62-byte header"), "{}", fails(&good[..40]));
        assert!(fails(b"num_ranks 2\n").contains("not a binary GOAL schedule"));
    }

    #[test]
    fn a_schedule_used_up_by_save_mem_is_refused_saying_so() {
        let mut bytes = std::fs::read(data("mixed.bin")).unwrap();
        bytes[..8].copy_from_slice(&CONSUMED.to_le_bytes());
        let path = std::env::temp_dir().join(format!("idlewave-consumed-{}.bin", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        let (read, ranks) = (read_goal_file(&path).unwrap_err().to_string(), read_goal_ranks(&path).unwrap_err().to_string());
        std::fs::remove_file(&path).unwrap();
        for e in [read, ranks] {
            assert!(e.contains("--save-mem") && e.contains("magic 2342"), "{e}");
        }
    }

    #[test]
    fn text_and_binary_run_to_the_same_end() {
        use crate::network::{LogGOPS, Network};
        use crate::noise::Noise;
        for name in ["binary_tree_32", "mixed", "dissemination_16"] {
            let run = |s: GoalSchedule| {
                let mut e = crate::engine::Engine::new(
                    crate::program::goal_program::GoalProgram::from_schedule(s),
                    Network::uniform(LogGOPS::loggopsim_defaults()),
                    Noise::none(),
                )
                .unwrap();
                e.run().unwrap();
                (0..e.num_ranks()).map(|r| e.finish_time(r)).collect::<Vec<_>>()
            };
            let from_text = run(text(name));
            assert_eq!(run(read_goal_file(&data(&format!("{name}.bin"))).unwrap()), from_text, "{name}");
            assert!(from_text.iter().any(|&t| t > 0));
        }
    }
}
