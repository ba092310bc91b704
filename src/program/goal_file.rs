//! A GOAL file of either format: LogGOPSim's text (`goal`) or its binary
//! layout (`goal_bin`), told apart by the binary's magic number.

use super::goal::{read_goal_text_file, read_goal_text_ranks, GoalError, GoalSchedule};
use super::goal_bin::{binary_ranks, is_binary, read_binary_file};
use std::io::Read as _;
use std::path::Path;

/// Whether the file at `path` begins as a binary schedule (false if it cannot be read).
pub fn is_binary_file(path: &Path) -> bool {
    let mut head = [0u8; 8];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && is_binary(&head)
}

/// Reads a GOAL schedule, text or binary. I/O errors become a [`GoalError`] with line 0.
pub fn read_goal_file(path: &Path) -> Result<GoalSchedule, GoalError> {
    if is_binary_file(path) {
        read_binary_file(path)
    } else {
        read_goal_text_file(path)
    }
}

/// The rank count a GOAL file declares, without reading its schedule (a
/// binary's header; a text's `num_ranks`).
pub fn read_goal_ranks(path: &Path) -> Result<u32, GoalError> {
    if is_binary_file(path) {
        let mut head = Vec::new();
        let file = path.display().to_string();
        std::fs::File::open(path).and_then(|f| f.take(12).read_to_end(&mut head)).map_err(|e| GoalError::io(&file, e))?;
        binary_ranks(&head, &file)
    } else {
        read_goal_text_ranks(path)
    }
}
