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

/// Bytes in the largest binary unit up to PiB that keeps a digit before the
/// point (bytes below 1 MiB as they are).
pub(crate) fn size(bytes: u128) -> String {
    if bytes < 1 << 20 {
        return format!("{bytes} bytes");
    }
    let (unit, name) = [(1u128 << 50, "PiB"), (1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB")]
        .into_iter()
        .find(|&(u, _)| bytes >= u)
        .unwrap_or((1 << 20, "MiB"));
    format!("{:.2} {name}", bytes as f64 / unit as f64)
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

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_take_the_largest_unit_with_a_digit_before_the_point() {
        let cases = [
            (1_048_575u128, "1048575 bytes"),
            (1 << 20, "1.00 MiB"),
            (3 << 29, "1.50 GiB"),
            (16_000 << 30, "15.62 TiB"),
            (3_200_212 << 30, "3.05 PiB"),
            (u128::MAX, "302231454903657293676544.00 PiB"),
        ];
        for (bytes, text) in cases {
            assert_eq!(super::size(bytes), text);
        }
    }
}
