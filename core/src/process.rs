//! Which process this is: a forked child is another one, and must not reuse what its parent
//! drew (random ids, see `random_id.rs`).
//!
//! Asking the kernel (`getpid`) answers for any host, but it is a system call each time, and
//! every batch asked once for its run id: 0.6 µs of a 5 µs one-call batch in a loop on this
//! project's machine (BENCHMARKS.md), and more in an MCP server, where the call runs cold
//! between HTTP requests. So the child is told apart without asking:
//!
//! - by a `pthread_atfork` handler that counts forks in each child (the `forkguard` crate;
//!   this workspace forbids `unsafe`, which registering one takes). glibc runs it in the child
//!   of every `fork()`, whoever calls it: Rust, CPython's `os.fork`, C code. A check is an
//!   atomic load;
//! - or by the host, which [announces](announce_forks) that it calls [`forked`] in the child
//!   of every fork. The Node binding announces without a hook: a Node process never runs
//!   JavaScript in a forked child, so no fork of it ever reaches tooljig, and its addon
//!   registers no handler;
//! - and, where no handler can be registered, by the kernel's process id after all.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Whether the host calls [`forked`] in every forked child.
static ANNOUNCED: AtomicBool = AtomicBool::new(false);

/// Forks announced since this library loaded.
static FORKS: AtomicU64 = AtomicU64::new(0);

/// Tells tooljig that the host calls [`forked`] in the child of every fork, before anything
/// else of tooljig runs there; from then on tooljig counts on that rather than on a fork
/// handler of its own (which a host that never forks need not have registered in it).
pub fn announce_forks() {
    ANNOUNCED.store(true, Ordering::SeqCst);
}

/// Called in a forked child, on the thread that forked (the only one a child has), by a host
/// that counts forks: for its own state, read back with [`forks`], and for tooljig's too once
/// it has [announced](announce_forks) it.
pub fn forked() {
    FORKS.fetch_add(1, Ordering::SeqCst);
}

/// The forks counted by [`forked`] so far: it differs in every forked child of a host that
/// counts them (and is 0 in the first process).
pub fn forks() -> u64 {
    FORKS.load(Ordering::SeqCst)
}

/// The process some state was made in, to tell when it is asked in another: a child forked
/// since, which inherited the state.
#[derive(Debug)]
pub(crate) struct Mark(Flavor);

#[derive(Debug)]
enum Flavor {
    /// The forks the host had announced when the mark was made.
    Announced(u64),
    /// A fork handler's count, as it was when the mark was made.
    #[cfg(unix)]
    Handler(forkguard::atfork::Guard),
    /// The kernel's process id (no fork handler could be registered).
    Pid(u32),
}

impl Mark {
    /// This process, now.
    pub(crate) fn here() -> Mark {
        if ANNOUNCED.load(Ordering::SeqCst) {
            return Mark(Flavor::Announced(forks()));
        }
        // Registered once per process, on the first call; `ENOMEM` is its only failure.
        #[cfg(unix)]
        if let Ok(guard) = forkguard::atfork::Guard::try_new() {
            return Mark(Flavor::Handler(guard));
        }
        Mark(Flavor::Pid(std::process::id()))
    }

    /// Whether this is another process than the one the mark was made in. A mark made before
    /// the host announced its forks no longer tells, and says so.
    pub(crate) fn moved(&mut self) -> bool {
        let announced = ANNOUNCED.load(Ordering::SeqCst);
        match &mut self.0 {
            Flavor::Announced(forks_then) => *forks_then != forks(),
            #[cfg(unix)]
            Flavor::Handler(guard) => guard.detected_fork() || announced,
            Flavor::Pid(pid) => *pid != std::process::id() || announced,
        }
    }

    /// A mark of some other process, as a forked child finds its parent's.
    #[cfg(test)]
    pub(crate) fn elsewhere() -> Mark {
        Mark(Flavor::Pid(std::process::id().wrapping_add(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test for the whole sequence: announcing is process-wide and never undone, so the
    // marks made before it are checked first.
    #[test]
    fn a_mark_stays_put_until_forks_are_announced_then_moves_with_each_fork() {
        if !ANNOUNCED.load(Ordering::SeqCst) {
            let mut mark = Mark::here();
            #[cfg(unix)]
            assert!(
                matches!(mark.0, Flavor::Handler(_)),
                "a fork handler, not getpid"
            );
            assert!(!mark.moved(), "no fork yet");
            announce_forks();
            assert!(
                mark.moved(),
                "a mark from before the announcement does not tell"
            );
        }
        announce_forks();
        let mut mark = Mark::here();
        assert!(!mark.moved());
        forked();
        assert!(mark.moved(), "a forked child is another process");
        assert!(Mark::elsewhere().moved());
    }
}
