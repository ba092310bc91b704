//! Reading the text files a scenario names (partner, mapping and noise-trace
//! files): regular files only and of bounded size, so that naming a device
//! or a huge file gives an error instead of exhausting memory. Errors name
//! the file, never its contents.

use std::io::Read;

/// The largest text input read whole.
pub const MAX_TEXT_BYTES: u64 = 1 << 30;

/// `path` opened for reading if it is a regular file (a device or FIFO is
/// an error naming it, never waited on), with its size.
pub fn open_regular(path: &std::path::Path, what: &str) -> Result<(std::fs::File, u64), String> {
    let name = path.display();
    // without blocking: opening a FIFO for reading would wait for a writer
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
    }
    .map_err(|e| format!("{name}: cannot read the {what}: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("{name}: cannot read the {what}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{name}: the {what} must be a regular file"));
    }
    Ok((file, meta.len()))
}

pub fn read_text(path: &str, what: &str) -> Result<String, String> {
    let (file, len) = open_regular(std::path::Path::new(path), what)?;
    if len > MAX_TEXT_BYTES {
        return Err(format!("{path}: the {what} is {} MiB, more than the {} MiB read whole", len >> 20, MAX_TEXT_BYTES >> 20));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(MAX_TEXT_BYTES + 1).read_to_end(&mut bytes).map_err(|e| format!("{path}: cannot read the {what}: {e}"))?;
    String::from_utf8(bytes).map_err(|e| format!("{path}: the {what} is not UTF-8 text (at byte {})", e.utf8_error().valid_up_to()))
}
