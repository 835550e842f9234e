//! Which process this is: a forked child is another one, and must not reuse what its parent
//! drew (random ids, see `random_id.rs`).
//!
//! Asking the kernel (`getpid`) answers for any host, but it is a system call each time,
//! about 250 ns on this project's machine, once a batch. A host that hears of every fork in
//! the child can say so instead: the Python binding registers an `os.register_at_fork` hook
//! (CPython runs it in the child of every `os.fork`, and of C code that forks as its C API
//! asks), calls [`announce_forks`] once and [`forked`] from the hook, and the check becomes a
//! load. The Node binding announces without a hook: a Node process never runs JavaScript in a
//! forked child, so no fork of it ever reaches tooljig. A fork handler of tooljig's own would
//! need `unsafe`, which this workspace forbids.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Whether the host calls [`forked`] in every forked child.
static ANNOUNCED: AtomicBool = AtomicBool::new(false);

/// Forks announced since this library loaded.
static FORKS: AtomicU64 = AtomicU64::new(0);

/// Tells tooljig that the host calls [`forked`] in the child of every fork, before anything
/// else of tooljig runs there; from then on tooljig no longer asks the kernel which process
/// it is in.
pub fn announce_forks() {
    ANNOUNCED.store(true, Ordering::SeqCst);
}

/// Called in a forked child, on the thread that forked (the only one a child has), by a host
/// that [announced](announce_forks) it would.
pub fn forked() {
    FORKS.fetch_add(1, Ordering::SeqCst);
}

/// The forks announced so far: it differs in every forked child of a host that announces
/// them (and is 0 in the first process).
pub fn forks() -> u64 {
    FORKS.load(Ordering::SeqCst)
}

/// A mark that differs in every process this one forks: the forks announced, or the
/// kernel's process id when nobody announces them. The two never collide (the top bit).
pub(crate) fn mark() -> u64 {
    if ANNOUNCED.load(Ordering::SeqCst) {
        (1 << 63) | forks()
    } else {
        u64::from(std::process::id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test for the whole sequence: announcing is process-wide and never undone, so the
    // kernel's answer is checked before it.
    #[test]
    fn the_mark_is_the_pid_until_forks_are_announced_then_moves_with_each_fork() {
        if !ANNOUNCED.load(Ordering::SeqCst) {
            assert_eq!(mark(), u64::from(std::process::id()));
        }
        announce_forks();
        let before = mark();
        assert_ne!(
            before,
            u64::from(std::process::id()),
            "never a pid once announced"
        );
        forked();
        assert_ne!(mark(), before, "a forked child is another process");
        assert_eq!(mark(), (1 << 63) | forks());
    }
}
