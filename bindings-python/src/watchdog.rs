//! One thread that hands a driven batch to the runtime when its loop stops answering.
//!
//! A batch polled on its event loop (`driven.rs`) dies with the loop unless someone notices
//! that a wake from another thread went unanswered. A timer task per such wake noticed it,
//! but spawning one woke a tokio worker each time: 9–12 µs on a one-call batch whose sync
//! handler's end wakes it from a worker thread. Here a wake only records the batch (once until
//! it is checked) in a list this thread scans a few times a second: a lock and a push.
//!
//! A recorded batch is checked once [`TAKE_OVER`] has passed: if no poll began since, the loop
//! never came back for it and the runtime takes the future; if one did and another poll is
//! queued now (woken meanwhile, while recorded), it is recorded again from here.

use crate::driven::{Driven, TAKE_OVER};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

/// A batch waiting to be checked.
struct Armed {
    driven: Weak<Driven>,
    /// Its polls begun when it was recorded.
    polls: u64,
    at: Instant,
}

/// The recorded batches, and whether this process has a scanning thread (a forked child does
/// not have its parent's).
struct Watch {
    armed: Vec<Armed>,
    scanning: bool,
}

static WATCH: Mutex<Watch> = Mutex::new(Watch {
    armed: Vec::new(),
    scanning: false,
});

/// How often the thread looks; a take-over comes at most this much after [`TAKE_OVER`].
const TICK: Duration = Duration::from_millis(250);

fn lock() -> MutexGuard<'static, Watch> {
    WATCH.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Records `driven`, woken from elsewhere with a poll queued, unless it is recorded already.
/// Takes no lock of the batch: the waking thread may hold locks the polling loop waits for.
pub fn arm(driven: &Arc<Driven>) {
    if driven.armed.swap(true, Ordering::SeqCst) {
        return;
    }
    let entry = Armed {
        driven: Arc::downgrade(driven),
        polls: driven.polls.load(Ordering::SeqCst),
        at: Instant::now(),
    };
    let mut watch = lock();
    watch.armed.push(entry);
    if !watch.scanning {
        let started = std::thread::Builder::new()
            .name("tooljig-take-over".into())
            .spawn(scan);
        // Without the thread a stalled loop's batch waits for the loop, as an asyncio task
        // would; nothing else is lost, so a failed spawn is tried again at the next wake.
        watch.scanning = started.is_ok();
    }
}

/// In a forked child: the parent's batches are not this process's to finish, and its thread
/// is not here.
pub fn forget_after_fork() {
    let mut watch = lock();
    watch.armed.clear();
    watch.scanning = false;
}

fn scan() {
    loop {
        std::thread::sleep(TICK);
        let now = Instant::now();
        let due: Vec<Armed> = {
            let mut watch = lock();
            let (due, waiting) = std::mem::take(&mut watch.armed)
                .into_iter()
                .partition(|a| now.duration_since(a.at) >= TAKE_OVER);
            watch.armed = waiting;
            due
        };
        for entry in due {
            if let Some(driven) = entry.driven.upgrade() {
                check(&driven, entry.polls);
            }
        }
    }
}

/// A recorded batch whose time has come: taken over, or recorded again, or let go.
fn check(driven: &Arc<Driven>, polls: u64) {
    // Cleared before `queued` is read: a wake that queued a poll after that read records the
    // batch itself, and one that found it recorded had set `queued` before this read.
    driven.armed.store(false, Ordering::SeqCst);
    if driven.take_over(polls) {
        return;
    }
    if driven.queued.load(Ordering::SeqCst) {
        arm(driven);
    }
}
