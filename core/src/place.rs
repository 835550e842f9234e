//! A call's place among the `concurrency` of its batch.
//!
//! `concurrency` bounds the app's work a batch runs at once: its hooks, resolvers and
//! handlers. A call that waits for the state store (its idempotency claim, its recorded
//! result) runs nothing of the app's, so it gives its place up meanwhile and takes one again
//! before the app's code runs next. The batch's other calls then reach the store together,
//! and one group commit of the store (one sync of its disk) serves far more of them: with
//! 1,000 durable calls in a batch, the store is no longer fed 256 at a time.
//!
//! An atomic batch is the exception: there a call keeps its place from its start to its
//! end, so that, as `concurrency` promises, a failure stops every call after it from
//! starting (with `concurrency: 1`, the calls run strictly one after another).

use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The places of one batch: `concurrency` of them, or no limit at all when the batch has no
/// more calls than that (most batches: nothing to count then).
#[derive(Debug, Clone)]
pub(crate) struct Places {
    places: Option<Arc<Semaphore>>,
    /// An atomic batch's calls keep their places to the end.
    kept: bool,
}

impl Places {
    /// `concurrency` places (at least one) for a batch of `calls`.
    pub(crate) fn new(concurrency: usize, calls: usize, atomic: bool) -> Places {
        Places {
            places: (concurrency < calls)
                .then(|| Arc::new(Semaphore::new(concurrency.clamp(1, Semaphore::MAX_PERMITS)))),
            kept: atomic,
        }
    }

    /// A free place, if there is one now.
    pub(crate) fn take(&self) -> Option<Place> {
        let held = match &self.places {
            Some(places) => Some(places.clone().try_acquire_owned().ok()?),
            None => None,
        };
        Some(Place {
            places: self.places.clone(),
            held,
            kept: self.kept,
        })
    }

    /// Waits until a place is free, without taking it (never, without a limit: every call
    /// has one at once).
    pub(crate) async fn freed(&self) {
        match &self.places {
            // Never closed, so the acquire ends with a permit; dropping it frees it again.
            Some(places) => drop(places.acquire().await),
            None => std::future::pending().await,
        }
    }
}

/// A call's place: held while the app's code may run for it.
#[derive(Debug)]
pub struct Place {
    places: Option<Arc<Semaphore>>,
    held: Option<OwnedSemaphorePermit>,
    kept: bool,
}

impl Place {
    /// Gives the place up while the call waits for something that is not the app's code
    /// (unless the batch is atomic).
    pub(crate) fn step_out(&mut self) {
        if !self.kept {
            self.held = None;
        }
    }

    /// Takes a place again (after the calls already waiting for one), if it was given up.
    pub(crate) async fn step_in(&mut self) {
        if let (None, Some(places)) = (&self.held, &self.places) {
            self.held = places.clone().acquire_owned().await.ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_place_given_up_is_taken_by_the_next_and_taken_back_after() {
        let places = Places::new(1, 2, false);
        let mut first = places.take().unwrap();
        assert!(places.take().is_none(), "one place, held");
        first.step_out();
        let second = places.take().expect("the place given up");
        let back = tokio::spawn(async move {
            first.step_in().await;
            first
        });
        tokio::task::yield_now().await;
        assert!(!back.is_finished(), "waits while the other holds it");
        drop(second);
        let first = back.await.unwrap();
        assert!(first.held.is_some());
        assert!(places.take().is_none());
    }

    #[test]
    fn an_atomic_batchs_call_keeps_its_place() {
        let places = Places::new(1, 2, true);
        let mut first = places.take().unwrap();
        first.step_out();
        assert!(places.take().is_none());
    }

    #[test]
    fn a_batch_within_its_concurrency_counts_nothing() {
        let places = Places::new(4, 4, false);
        let all: Vec<Place> = (0..100).filter_map(|_| places.take()).collect();
        assert_eq!(all.len(), 100);
        assert!(all.iter().all(|p| p.held.is_none() && p.places.is_none()));
        assert!(
            Places::new(0, 2, false).take().is_some(),
            "at least one place"
        );
        assert!(
            Places::new(usize::MAX - 1, usize::MAX, false)
                .take()
                .is_some()
        );
    }
}
