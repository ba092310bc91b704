//! Schedule files read memory-mapped: the pages behind the reader are
//! given back as it goes, so a run holds the program, not the file.

use super::goal::GoalError;
use std::path::Path;

/// Maps `path` read-only for a front-to-back read.
pub fn map(path: &Path) -> Result<memmap2::Mmap, GoalError> {
    let file = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| GoalError::io(&file, e))?;
    // SAFETY: the map is read only and dropped by the reader; a file
    // truncated meanwhile by another process could fault (as any mmap reader).
    let map = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| GoalError::io(&file, e))?;
    let _ = map.advise(memmap2::Advice::Sequential);
    Ok(map)
}

/// Bytes read before the pages behind are given back.
const RELEASE_EVERY: usize = 16 << 20;

/// Gives back the pages of `map` before `to` once RELEASE_EVERY more are
/// behind (`released`: how far it went). Their contents stay in the page
/// cache, and a later read (an error message's line count) faults them in again.
pub fn release_behind(map: &memmap2::Mmap, released: &mut usize, to: usize) {
    let to = to & !(page_size() - 1);
    if to >= *released + RELEASE_EVERY {
        // SAFETY: a read-only map of a file: dropping its pages loses nothing
        let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, 0, to) };
        *released = to;
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 && (n as usize).is_power_of_two() {
        n as usize
    } else {
        4096
    }
}
