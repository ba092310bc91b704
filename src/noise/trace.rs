//! Reader for measured detour traces: one `start<TAB>duration` pair per line,
//! in nanoseconds, `#` comments and blank lines ignored (LogGOPSim reads a
//! trailing newline as an extra detour; we do not).

use crate::time::{Time, MAX_INPUT, PS_PER_NS};
use std::path::Path;

/// A detour trace that cannot be read; all but `File` name the file and line.
#[derive(Debug, thiserror::Error)]
pub enum NoiseTraceError {
    #[error(transparent)]
    File(#[from] crate::files::FileError),
    /// A field missing; `text` is the line as written, for context.
    #[error("{file}:{line}: expected a {what} in ns (line: '{text}')")]
    Missing { file: String, line: usize, what: &'static str, text: String },
    #[error("{file}:{line}: expected a {what} in ns")]
    NotANumber { file: String, line: usize, what: &'static str },
    #[error("{file}:{line}: the {what} must be a non-negative number")]
    Negative { file: String, line: usize, what: &'static str },
    #[error("{file}:{line}: expected the end of the line after the duration")]
    Trailing { file: String, line: usize },
    /// Past the engine's limit for a time it is given (2^60 ps).
    #[error("{file}:{line}: the {what} is beyond the engine's limit of 2^60 ps (about 13 days)")]
    TooLarge { file: String, line: usize, what: &'static str },
}

impl NoiseTraceError {
    /// The file named.
    pub fn path(&self) -> &str {
        match self {
            NoiseTraceError::File(e) => e.path(),
            NoiseTraceError::Missing { file, .. }
            | NoiseTraceError::NotANumber { file, .. }
            | NoiseTraceError::Negative { file, .. }
            | NoiseTraceError::Trailing { file, .. }
            | NoiseTraceError::TooLarge { file, .. } => file,
        }
    }

    /// The line to blame (from 1), where one is.
    pub fn line(&self) -> Option<usize> {
        match self {
            NoiseTraceError::File(_) => None,
            NoiseTraceError::Missing { line, .. }
            | NoiseTraceError::NotANumber { line, .. }
            | NoiseTraceError::Negative { line, .. }
            | NoiseTraceError::Trailing { line, .. }
            | NoiseTraceError::TooLarge { line, .. } => Some(*line),
        }
    }
}

/// Parses a trace; detours come back in picoseconds.
pub fn parse_noise_trace(text: &str, file: &str) -> Result<Vec<(Time, Time)>, NoiseTraceError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut fields = line.split_whitespace();
        let (file, n) = (file.to_string(), i + 1);
        let mut number = |what: &'static str| -> Result<Time, NoiseTraceError> {
            let tok = fields.next().ok_or_else(|| NoiseTraceError::Missing { file: file.clone(), line: n, what, text: line.into() })?;
            let v: f64 = tok.parse().map_err(|_| NoiseTraceError::NotANumber { file: file.clone(), line: n, what })?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(NoiseTraceError::Negative { file: file.clone(), line: n, what });
            }
            let ps = (v * PS_PER_NS as f64).round();
            if ps > MAX_INPUT as f64 {
                // (a saturated sum of start and duration read as "all detour" before)
                return Err(NoiseTraceError::TooLarge { file: file.clone(), line: n, what });
            }
            Ok(ps as Time)
        };
        let start = number("start time")?;
        let duration = number("duration")?;
        if start + duration > MAX_INPUT {
            return Err(NoiseTraceError::TooLarge { file, line: n, what: "detour's end" });
        }
        if fields.next().is_some() {
            return Err(NoiseTraceError::Trailing { file, line: n });
        }
        out.push((start, duration));
    }
    Ok(out)
}

pub fn read_noise_trace(path: &Path) -> Result<Vec<(Time, Time)>, NoiseTraceError> {
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
        let e = parse_noise_trace("1\t2\nabc\t3\n", "n.txt").unwrap_err().to_string();
        assert!(e.starts_with("n.txt:2:"), "{e}");
        let e = parse_noise_trace("1\n", "n.txt").unwrap_err().to_string();
        assert!(e.contains("n.txt:1") && e.contains("duration"), "{e}");
        let e = parse_noise_trace("1 -2\n", "n.txt").unwrap_err().to_string();
        assert!(e.contains("non-negative"), "{e}");
        let e = parse_noise_trace("1\t2\t3\n", "n.txt").unwrap_err().to_string();
        assert!(e.ends_with("expected the end of the line after the duration"), "{e}");
    }

    #[test]
    fn times_past_the_engines_limit_are_refused_at_their_line() {
        // 2^60 ps is 1,152,921,504,606,846.976 ns: a start just below it, with no duration, fits
        assert!(parse_noise_trace("1152921504606846\t0\n", "n.txt").is_ok());
        for text in ["1\t2\n99999999999999999999999\t100\n", "1\t2\n18446744073709000\t1000\n", "1\t2\n1152921504606846\t1000\n"] {
            let e = parse_noise_trace(text, "n.txt").unwrap_err().to_string();
            assert!(e.starts_with("n.txt:2:") && e.contains("2^60 ps"), "{e}");
        }
    }
}
