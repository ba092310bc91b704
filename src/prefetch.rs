//! Cache hints: asking the CPU to bring a value into cache a few events
//! before it is read. The engine, its queue, the noise cache and programs'
//! per-rank state all prefetch the next events' data; the helpers sit here,
//! below all of them, so that none depends on another to use them.

/// Asks the CPU to bring `v[i]` into cache (a hint: no effect elsewhere
/// than x86-64, and none if `i` is out of range). A value of up to two
/// lines is fetched whole: arrays are only 16-byte aligned, so a 32-byte
/// value straddles two lines at every other index.
#[inline(always)]
pub fn prefetch<T>(v: &[T], i: usize) {
    if let Some(x) = v.get(i) {
        let start = x as *const T as *const i8;
        prefetch_line(start);
        if std::mem::size_of::<T>() > 16 {
            prefetch_line(start.wrapping_add(std::mem::size_of::<T>() - 1));
        }
    }
}

/// [`prefetch`] for every cache line of `v[i]` (values larger than one),
/// the last included where the value is not aligned to lines.
#[inline(always)]
pub fn prefetch_whole<T>(v: &[T], i: usize) {
    if let Some(x) = v.get(i) {
        let start = x as *const T as *const i8;
        let size = std::mem::size_of::<T>();
        for offset in (0..size).step_by(64) {
            prefetch_line(start.wrapping_add(offset));
        }
        if !std::mem::align_of::<T>().is_multiple_of(64) {
            prefetch_line(start.wrapping_add(size - 1));
        }
    }
}

#[inline(always)]
fn prefetch_line(at: *const i8) {
    // SAFETY: prefetching is a hint; it never faults, even on bad addresses
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
