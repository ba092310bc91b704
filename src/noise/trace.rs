//! Reader for measured detour traces: one `start<TAB>duration` pair per line,
//! in nanoseconds, `#` comments and blank lines ignored (LogGOPSim reads a
//! trailing newline as an extra detour; we do not).

use crate::time::{Time, PS_PER_NS};
use std::path::Path;

/// Parses a trace; detours come back in picoseconds.
pub fn parse_noise_trace(text: &str, file: &str) -> Result<Vec<(Time, Time)>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut fields = line.split_whitespace();
        let mut number = |what: &str| -> Result<Time, String> {
            let tok = fields.next().ok_or_else(|| format!("{file}:{}: expected a {what} in ns (line: '{line}')", i + 1))?;
            let v: f64 = tok.parse().map_err(|_| format!("{file}:{}: expected a {what} in ns", i + 1))?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{file}:{}: the {what} must be a non-negative number", i + 1));
            }
            Ok((v * PS_PER_NS as f64).round() as Time)
        };
        let start = number("start time")?;
        let duration = number("duration")?;
        if fields.next().is_some() {
            return Err(format!("{file}:{}: expected end of line after the duration, ", i + 1));
        }
        out.push((start, duration));
    }
    Ok(out)
}

pub fn read_noise_trace(path: &Path) -> Result<Vec<(Time, Time)>, String> {
    let text = crate::files::read_text(&path.display().to_string(), "noise trace")?;
    parse_noise_trace(&text, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pairs_and_skips_comments_and_trailing_newline() {
        let t = parse_noise_trace("# selfish\n100\t5\n250.5\t1.5\n\n", "n.txt").unwrap();
        assert_eq!(t, vec![(100_000, 5_000), (250_500, 1_500)]);
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        let e = parse_noise_trace("1\t2\nabc\t3\n", "n.txt").unwrap_err();
        assert!(e.starts_with("n.txt:2:"), "{e}");
        let e = parse_noise_trace("1\n", "n.txt").unwrap_err();
        assert!(e.contains("n.txt:1") && e.contains("duration"), "{e}");
        let e = parse_noise_trace("1 -2\n", "n.txt").unwrap_err();
        assert!(e.contains("non-negative"), "{e}");
    }
}
