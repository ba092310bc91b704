//! Schedule files read memory-mapped: the pages behind the reader are
//! given back as it goes, so a run holds the program, not the file.

use super::goal::{utf8, GoalError};
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

/// Bytes read before the pages behind are given back (small in tests,
/// whose files stay small: the heap's peak is checked by other tests).
const RELEASE_EVERY: usize = if cfg!(test) { 64 << 10 } else { 16 << 20 };

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
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no preconditions
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if n > 0 && (n as usize).is_power_of_two() {
            n as usize
        } else {
            4096
        }
    })
}

/// The mapped bytes as text, checked a window at a time with the pages
/// behind given back, so that checking a large file does not hold it whole
/// (the parse that follows reads the pages again from the page cache).
pub fn mapped_utf8<'a>(map: &'a memmap2::Mmap, file: &str) -> Result<&'a str, GoalError> {
    let bytes: &[u8] = map;
    let (mut checked, mut released) = (0, 0);
    while checked < bytes.len() {
        let end = (checked + RELEASE_EVERY).min(bytes.len());
        match std::str::from_utf8(&bytes[checked..end]) {
            Ok(_) => checked = end,
            // a character cut by the window's end: check it with the next window
            Err(e) if e.error_len().is_none() && end < bytes.len() && e.valid_up_to() > 0 => checked += e.valid_up_to(),
            Err(_) => return Err(utf8(&bytes[..end], file).expect_err("the same bytes failed")), // (naming the line)
        }
        release_behind(map, &mut released, checked);
    }
    // SAFETY: every byte was checked above, window by window, each window
    // ending on a character boundary
    Ok(unsafe { std::str::from_utf8_unchecked(bytes) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped(name: &str, bytes: &[u8]) -> (std::path::PathBuf, memmap2::Mmap) {
        let path = std::env::temp_dir().join(format!("idlewave-mapped-{name}-{}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        let m = map(&path).unwrap();
        (path, m)
    }

    /// Lines of ASCII with a 3-byte character cut by each window's end.
    fn text_across_windows() -> Vec<u8> {
        let mut t = Vec::new();
        while t.len() < 2 * RELEASE_EVERY + 100 {
            let next_cut = (t.len() / RELEASE_EVERY + 1) * RELEASE_EVERY;
            if t.len() + 64 > next_cut {
                t.resize(next_cut - 1, b'x');
                t.extend_from_slice("€\n".as_bytes()); // € starts one byte before the cut
            } else {
                t.extend_from_slice(b"// a comment line of the schedule\n");
            }
        }
        t
    }

    #[test]
    fn a_character_cut_by_a_window_is_checked_whole() {
        let t = text_across_windows();
        let (path, m) = mapped("cut", &t);
        let text = mapped_utf8(&m, "f.goal").expect("valid");
        assert_eq!(text.as_bytes(), &t[..]);
        assert_eq!(text.matches('€').count(), 2);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_bad_byte_past_the_first_window_is_reported_at_its_line() {
        let mut t = text_across_windows();
        let lines_before = t[..RELEASE_EVERY + 10].iter().filter(|&&b| b == b'\n').count();
        t[RELEASE_EVERY + 10] = 0xff;
        let (path, m) = mapped("bad", &t);
        let e = mapped_utf8(&m, "f.goal").expect_err("0xff is not UTF-8");
        assert_eq!((e.line, e.message.as_str()), (lines_before + 1, "the file is not valid UTF-8"));
        std::fs::remove_file(path).unwrap();
    }
}
