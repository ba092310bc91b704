//! The memory a run may take: the limit, and the check made against an
//! estimate before anything large is allocated (by the run in sim.rs, the
//! network's mapping tables, workloads' partner files). Below all of them,
//! so that none depends on the run to refuse what would not fit.

/// Available memory in bytes (Linux MemAvailable), if known.
pub fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Bytes in GiB, or in MiB or bytes where GiB would print 0.00.
pub(crate) fn size(bytes: u128) -> String {
    let b = bytes as f64;
    match bytes {
        0..=1_048_575 => format!("{bytes} bytes"),
        1_048_576..=1_073_741_823 => format!("{:.2} MiB", b / (1u64 << 20) as f64),
        _ => format!("{:.2} GiB", b / (1u64 << 30) as f64),
    }
}

/// The limit runs are checked against, and what it is: the configured one,
/// or 80% of the available memory (None where that is not known).
pub fn memory_limit(limit: Option<u64>) -> Option<(u128, &'static str)> {
    match limit {
        Some(l) => Some((l as u128, "the configured max_memory_bytes")),
        None => available_memory().map(|a| (a as u128 * 8 / 10, "80% of available memory")),
    }
}

/// A run whose estimated footprint exceeds the limit `what` (both in bytes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "this run needs about {}, more than {what} ({}); reduce ranks or iterations, or disable timer recording",
    size(*.estimate),
    size(*.limit)
)]
pub struct OverLimit {
    pub estimate: u128,
    pub limit: u128,
    pub what: &'static str,
}

/// Refuses a run whose estimated footprint exceeds the limit, before allocating.
pub fn check_memory(estimate: u128, limit: Option<u64>) -> Result<(), OverLimit> {
    let Some((limit, what)) = memory_limit(limit) else { return Ok(()) };
    if estimate > limit {
        return Err(OverLimit { estimate, limit, what });
    }
    Ok(())
}

/// Asks the kernel to back `v`'s allocated buffer with transparent huge pages
/// (2 MiB) where it allows them on request (Linux's `madvise` mode), before
/// the pages are first touched. Per-rank arrays are read in rank order that
/// events make random: at a million ranks, with 4 KiB pages, nearly every
/// such read misses the TLB as well as the cache. Small buffers are left as
/// they are; elsewhere the advice is a no-op.
#[allow(clippy::ptr_arg)] // (its capacity, not its length)
pub fn prefer_huge_pages<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = v.capacity() * std::mem::size_of::<T>();
        if bytes < 2 * HUGE {
            return;
        }
        let start = v.as_ptr() as usize;
        let (first, end) = (start.next_multiple_of(HUGE), (start + bytes) / HUGE * HUGE);
        if end > first {
            // SAFETY: advice on whole pages inside `v`'s own allocation; it changes no contents.
            unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE) };
        }
    }
}

/// `n` copies of `value`, on huge pages where the kernel gives them
/// ([`prefer_huge_pages`]).
pub fn per_rank<T: Clone>(n: usize, value: T) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    prefer_huge_pages(&v);
    v.resize(n, value);
    v
}
