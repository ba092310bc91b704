//! Reading the text files a scenario names (partner, mapping and noise-trace
//! files): regular files only and of bounded size, so that naming a device
//! or a huge file gives an error instead of exhausting memory. Errors name
//! the file, never its contents.

use std::io::Read;

/// The largest text input read whole.
pub const MAX_TEXT_BYTES: u64 = 1 << 30;

/// Why a named input could not be read; each names the file and what it was for.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{path}: cannot read the {what}: {source}")]
    Read { path: String, what: String, source: std::io::Error },
    /// A device, FIFO or directory: refused rather than waited on or read forever.
    #[error("{path}: the {what} must be a regular file")]
    NotRegular { path: String, what: String },
    #[error("{path}: the {what} is {} MiB, more than the {} MiB read whole", bytes >> 20, MAX_TEXT_BYTES >> 20)]
    TooLarge { path: String, what: String, bytes: u64 },
    #[error("{path}: the {what} is not UTF-8 text (at byte {at})")]
    NotUtf8 { path: String, what: String, at: usize },
}

impl FileError {
    /// The file named.
    pub fn path(&self) -> &str {
        match self {
            FileError::Read { path, .. }
            | FileError::NotRegular { path, .. }
            | FileError::TooLarge { path, .. }
            | FileError::NotUtf8 { path, .. } => path,
        }
    }
}

/// For callers whose errors are still text (partner and mapping files).
impl From<FileError> for String {
    fn from(e: FileError) -> Self {
        e.to_string()
    }
}

/// `path` opened for reading if it is a regular file (a device or FIFO is
/// an error naming it, never waited on), with its size.
pub fn open_regular(path: &std::path::Path, what: &str) -> Result<(std::fs::File, u64), FileError> {
    let read = |source| FileError::Read { path: path.display().to_string(), what: what.into(), source };
    // without blocking: opening a FIFO for reading would wait for a writer
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
    }
    .map_err(read)?;
    let meta = file.metadata().map_err(read)?;
    if !meta.is_file() {
        return Err(FileError::NotRegular { path: path.display().to_string(), what: what.into() });
    }
    Ok((file, meta.len()))
}

pub fn read_text(path: &str, what: &str) -> Result<String, FileError> {
    let (file, len) = open_regular(std::path::Path::new(path), what)?;
    if len > MAX_TEXT_BYTES {
        return Err(FileError::TooLarge { path: path.into(), what: what.into(), bytes: len });
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(MAX_TEXT_BYTES + 1).read_to_end(&mut bytes).map_err(|source| FileError::Read {
        path: path.into(),
        what: what.into(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| FileError::NotUtf8 { path: path.into(), what: what.into(), at: e.utf8_error().valid_up_to() })
}
