//! Ctrl-C inside long loops that run before or outside the event loop
//! (GOAL parsing, trace export): the caller installs a check (the Python
//! bindings check for pending signals), and the loops ask it now and then.

use std::cell::Cell;

thread_local! {
    static CHECK: Cell<Option<fn() -> bool>> = const { Cell::new(None) };
}

/// Runs `f` with `check` (false: stop) as this thread's interrupt check.
pub fn with_check<T>(check: fn() -> bool, f: impl FnOnce() -> T) -> T {
    let before = CHECK.with(|c| c.replace(Some(check)));
    let out = f();
    CHECK.with(|c| c.set(before));
    out
}

/// Whether to go on: false once the user asked to stop.
#[inline]
pub fn keep_going() -> bool {
    CHECK.with(|c| c.get()).is_none_or(|check| check())
}

/// What loops report when stopped.
pub const INTERRUPTED: &str = "interrupted";
