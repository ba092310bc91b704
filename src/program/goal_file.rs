//! A GOAL file of either format: LogGOPSim's text (`goal`) or its binary
//! layout (`goal_bin`), told apart by the binary's magic number.

use super::goal::{read_goal_text_file, read_goal_text_ranks, GoalError, GoalSchedule};
use super::goal_bin::{binary_ranks, is_binary, read_binary_file, read_binary_program, CONSUMED, MAGIC};
use super::goal_program::{parse_goal_program, parse_goal_program_with, GoalProgram};
use super::mapped::{map, mapped_utf8, release_behind};
use std::io::Read as _;
use std::path::Path;

/// The file's first eight bytes (None if it cannot be read or is shorter).
fn head(path: &Path) -> Option<[u8; 8]> {
    let mut head = [0u8; 8];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).ok().map(|_| head)
}

/// Whether the file at `path` begins as a binary schedule (false if it cannot be read).
pub fn is_binary_file(path: &Path) -> bool {
    head(path).is_some_and(|h| is_binary(&h))
}

/// Refuses a binary schedule that LogGOPSim's `--save-mem` run consumed:
/// it counts dependencies down in the file itself and, to say so, replaces
/// the magic number with 2342 (in LogGOPSim and in ATLAHS alike); and one
/// cut short within its magic number, which no text file begins as.
fn refuse_consumed(path: &Path) -> Result<(), GoalError> {
    let refuse = |message: String| Err(GoalError { file: path.display().to_string(), line: 0, column: 0, message, interrupted: false });
    match head(path) {
        Some(h) if u64::from_le_bytes(h) == CONSUMED => refuse(
            "a binary schedule that a LogGOPSim --save-mem run has used up (magic 2342: its dependency counts were \
             changed in place); convert the text schedule again (txt2bin, or idlewave goal convert)"
                .into(),
        ),
        Some(_) => Ok(()),
        None => {
            let start = std::fs::read(path).unwrap_or_default();
            if !start.is_empty() && start.len() < 8 && MAGIC.to_le_bytes().starts_with(&start) {
                return refuse(format!("a binary GOAL schedule cut short: {} bytes, not even its 8-byte magic number", start.len()));
            }
            Ok(())
        }
    }
}

/// Reads a GOAL file with `binary` or `text` by its format, a used-up binary refused first.
fn by_format<T>(path: &Path, binary: fn(&Path) -> Result<T, GoalError>, text: fn(&Path) -> Result<T, GoalError>) -> Result<T, GoalError> {
    refuse_consumed(path)?;
    if is_binary_file(path) {
        binary(path)
    } else {
        text(path)
    }
}

/// Reads a GOAL schedule, text or binary. I/O errors become a [`GoalError`] with line 0.
pub fn read_goal_file(path: &Path) -> Result<GoalSchedule, GoalError> {
    by_format(path, read_binary_file, read_goal_text_file)
}

/// Reads a GOAL schedule, text or binary, straight into an engine program
/// (rank by rank: its parsed form is never whole in memory).
pub fn read_goal_program(path: &Path) -> Result<GoalProgram, GoalError> {
    by_format(path, read_binary_program, read_goal_text_program)
}

/// Reads a GOAL text file into an engine program, memory-mapped.
fn read_goal_text_program(path: &Path) -> Result<GoalProgram, GoalError> {
    let file = path.display().to_string();
    if std::fs::metadata(path).map_err(|e| GoalError::io(&file, e))?.len() == 0 {
        // (an empty file cannot be mapped)
        return parse_goal_program("", &file);
    }
    let map = map(path)?;
    let mut released = 0;
    parse_goal_program_with(mapped_utf8(&map, &file)?, &file, &mut |to| release_behind(&map, &mut released, to))
}

/// The rank count a GOAL file declares, without reading its schedule (a
/// binary's header; a text's `num_ranks`).
pub fn read_goal_ranks(path: &Path) -> Result<u32, GoalError> {
    refuse_consumed(path)?;
    if is_binary_file(path) {
        let mut head = Vec::new();
        let file = path.display().to_string();
        std::fs::File::open(path).and_then(|f| f.take(12).read_to_end(&mut head)).map_err(|e| GoalError::io(&file, e))?;
        binary_ranks(&head, &file)
    } else {
        read_goal_text_ranks(path)
    }
}
