//! Random ids (runs, leases, preferences, operator requests, MCP sessions) without a system
//! call each.
//!
//! A v4 UUID is 16 bytes from the OS's random generator, and asking the kernel for each costs
//! a `getrandom` system call: about 200 ns on this project's machine, paid by every batch for
//! its run id, 5% of a one-call batch. So each thread draws many ids' worth at once and hands
//! them out 16 bytes at a time; they stay the kernel's bytes, as unguessable as before.
//!
//! What a buffer must never do is outlive a `fork`: parent and child would then hand out the
//! same ids (a Python app that forks its workers after the engine made one id, as gunicorn's
//! `preload_app` does, would give every worker the same run ids and lease owners). So a buffer
//! remembers the process that filled it ([`process::Mark`]), and another process throws it
//! away.

use crate::process;
use std::cell::RefCell;

/// How many ids one draw from the kernel yields.
const IDS_PER_DRAW: usize = 32;

/// One thread's unspent random bytes.
struct Pool {
    bytes: [u8; 16 * IDS_PER_DRAW],
    /// Ids handed out from `bytes`; `IDS_PER_DRAW` when it is spent (or never filled).
    used: usize,
    /// The process that filled `bytes`.
    filled_in: process::Mark,
}

thread_local! {
    // Boxed: a library loaded with `dlopen` (the Node addon) gets its thread-locals from a
    // static block of about 1.6 KB shared by every such library, and half a kilobyte inline
    // made loading the addon fail ("cannot allocate memory in static TLS block").
    static POOL: RefCell<Option<Box<Pool>>> = const { RefCell::new(None) };
}

/// A random (v4) UUID.
pub(crate) fn uuid() -> uuid::Uuid {
    POOL.with_borrow_mut(|slot| {
        let pool = slot.get_or_insert_with(|| {
            Box::new(Pool {
                bytes: [0; 16 * IDS_PER_DRAW],
                used: IDS_PER_DRAW,
                filled_in: process::Mark::here(),
            })
        });
        if pool.used == IDS_PER_DRAW || pool.filled_in.moved() {
            if getrandom::fill(&mut pool.bytes).is_err() {
                // The kernel refused a large draw (it does not on Linux); take the slow road.
                return uuid::Uuid::new_v4();
            }
            pool.used = 0;
            pool.filled_in = process::Mark::here();
        }
        let at = pool.used * 16;
        pool.used += 1;
        let mut id = [0u8; 16];
        id.copy_from_slice(&pool.bytes[at..at + 16]);
        // Spent bytes do not stay in memory to be read later.
        pool.bytes[at..at + 16].fill(0);
        uuid::Builder::from_random_bytes(id).into_uuid()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_version_4_and_distinct_across_draws_and_threads() {
        let mine: Vec<_> = (0..IDS_PER_DRAW * 3).map(|_| uuid()).collect();
        let theirs =
            std::thread::spawn(|| (0..IDS_PER_DRAW * 3).map(|_| uuid()).collect::<Vec<_>>())
                .join()
                .unwrap();
        let all: HashSet<_> = mine.iter().chain(&theirs).collect();
        assert_eq!(all.len(), IDS_PER_DRAW * 6);
        assert!(all.iter().all(|id| id.get_version_num() == 4));
    }

    /// A buffer filled by another process (what a forked child inherits) is not used.
    #[test]
    fn a_buffer_from_another_process_is_thrown_away() {
        let first = uuid(); // fills this thread's buffer
        let next = POOL.with_borrow_mut(|slot| {
            let pool = slot.as_mut().expect("filled by the first id");
            pool.filled_in = process::Mark::elsewhere(); // as if it were the parent's
            let at = pool.used * 16;
            let mut id = [0u8; 16];
            id.copy_from_slice(&pool.bytes[at..at + 16]);
            uuid::Builder::from_random_bytes(id).into_uuid()
        });
        let drawn = uuid();
        assert_ne!(drawn, next, "handed out the other process's next id");
        assert_ne!(drawn, first);
    }
}
