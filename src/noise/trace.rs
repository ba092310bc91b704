//! Reader for measured detour traces: one `start<TAB>duration` pair per line,
//! in nanoseconds, `#` comments and blank lines ignored (LogGOPSim reads a
//! trailing newline as an extra detour; we do not).

use crate::time::{Time, PS_PER_NS};
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
    #[error("{file}:{line}: expected end of line after the duration, ")]
    Trailing { file: String, line: usize },
}

impl NoiseTraceError {
    /// The file named.
    pub fn path(&self) -> &str {
        match self {
            NoiseTraceError::File(e) => e.path(),
            NoiseTraceError::Missing { file, .. }
            | NoiseTraceError::NotANumber { file, .. }
            | NoiseTraceError::Negative { file, .. }
            | NoiseTraceError::Trailing { file, .. } => file,
        }
    }

    /// The line to blame (from 1), where one is.
    pub fn line(&self) -> Option<usize> {
        match self {
            NoiseTraceError::File(_) => None,
            NoiseTraceError::Missing { line, .. }
            | NoiseTraceError::NotANumber { line, .. }
            | NoiseTraceError::Negative { line, .. }
            | NoiseTraceError::Trailing { line, .. } => Some(*line),
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
            Ok((v * PS_PER_NS as f64).round() as Time)
        };
        let start = number("start time")?;
        let duration = number("duration")?;
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
    }
}
