//! The server-wide bound on response octets waiting to be written to clients.
//!
//! Each connection bounds what waits in its own queue (`session::writer`); this bounds the
//! sum, so that many clients that stop reading at once cannot make the server hold more
//! than [`MAX_BUFFERED_OUTPUT`] octets of answers.
//!
//! Protocol:
//! 1. a connection's queue counts every chunk it takes in ([`OutputBudget::take`]) and
//!    gives the octets back when its writer takes the chunk out ([`OutputBudget::give`]);
//! 2. a large search asks first ([`OutputBudget::try_take`]): over the bound, it gets no
//!    room and hands itself to [`OutputBudget::wait`] instead of waiting on a thread;
//! 3. `wait` queues the search's resumption, then looks at the count again and resumes
//!    every waiter at once if room appeared meanwhile; `give` lowers the count, then
//!    resumes every waiter if there is any. Both the flag that says "someone waits" and
//!    the count are sequentially consistent, so one of the two always sees the other: no
//!    waiter is forgotten;
//! 4. every waiter is resumed, not one: a resumed search may find its own connection full
//!    and wait there instead, without using the room it was woken for.
//!
//! The reading side of a connection counts its chunks too but never waits here: it is held
//! back by its own queue and its operation permits.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Most response octets the server holds for clients at once, over all connections,
/// before large searches wait (each connection holds at most
/// `session::CONNECTION_BUFFERED_OUTPUT` of them): 128 connections' worth of full queues,
/// a small share of a server's memory, and far more than fast clients keep waiting.
pub const MAX_BUFFERED_OUTPUT: usize = 128 * 1024 * 1024;

/// A resumption: submits a waiting search again.
pub type Resume = Box<dyn FnOnce() + Send + 'static>;

/// The count of buffered octets and the searches waiting for room.
pub struct OutputBudget {
    limit: usize,
    used: AtomicUsize,
    someone_waits: AtomicBool,
    waiting: Mutex<Vec<Resume>>,
}

impl std::fmt::Debug for OutputBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputBudget")
            .field("limit", &self.limit)
            .field("used", &self.used())
            .finish()
    }
}

impl Default for OutputBudget {
    fn default() -> OutputBudget {
        OutputBudget::new(MAX_BUFFERED_OUTPUT)
    }
}

impl OutputBudget {
    /// A budget of `limit` octets.
    pub fn new(limit: usize) -> OutputBudget {
        OutputBudget {
            limit,
            used: AtomicUsize::new(0),
            someone_waits: AtomicBool::new(false),
            waiting: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Resume>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Octets counted now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }

    /// Counts `n` octets without asking (the reading side).
    pub fn take(&self, n: usize) {
        self.used.fetch_add(n, Ordering::SeqCst);
    }

    /// Counts `n` octets if the count is below the limit (so the count passes it by at most
    /// one chunk per search, and a chunk larger than the whole budget still goes); false
    /// when it is not.
    pub fn try_take(&self, n: usize) -> bool {
        let before = self.used.fetch_add(n, Ordering::SeqCst);
        if before < self.limit {
            return true;
        }
        self.give(n);
        false
    }

    /// Gives back `n` octets and resumes the waiters, if any (step 3).
    pub fn give(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::SeqCst);
        if self.someone_waits.load(Ordering::SeqCst) {
            self.resume_all();
        }
    }

    /// Keeps `resume` until octets are given back; runs it at once if room appeared since
    /// the caller's `try_take` failed (step 3).
    pub fn wait(&self, resume: Resume) {
        {
            let mut waiting = self.lock();
            waiting.push(resume);
            self.someone_waits.store(true, Ordering::SeqCst);
        }
        if self.used.load(Ordering::SeqCst) < self.limit {
            self.resume_all();
        }
    }

    fn resume_all(&self) {
        let resumed = {
            let mut waiting = self.lock();
            self.someone_waits.store(false, Ordering::SeqCst);
            std::mem::take(&mut *waiting)
        };
        for resume in resumed {
            resume();
        }
    }

    /// Searches waiting for room now.
    pub fn waiting(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn over_the_limit_a_search_waits_until_octets_are_given_back() {
        let budget = OutputBudget::new(100);
        assert!(budget.try_take(60));
        assert!(budget.try_take(60), "below the limit, a chunk goes");
        assert!(!budget.try_take(60), "at 120 of 100, it waits");
        assert_eq!(budget.used(), 120, "a refused take counts nothing");
        let resumed = Arc::new(AtomicUsize::new(0));
        let r = resumed.clone();
        budget.wait(Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
        }));
        assert_eq!(resumed.load(Ordering::SeqCst), 0);
        budget.give(60);
        assert_eq!(resumed.load(Ordering::SeqCst), 1);
        assert_eq!(budget.waiting(), 0);
        assert!(budget.try_take(60));
    }

    #[test]
    fn a_chunk_larger_than_the_budget_goes_when_nothing_else_is_counted() {
        let budget = OutputBudget::new(10);
        assert!(budget.try_take(1000));
        assert!(!budget.try_take(1));
        budget.give(1000);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_wait_after_room_appeared_resumes_at_once() {
        let budget = OutputBudget::new(100);
        budget.take(100);
        assert!(!budget.try_take(10));
        // Room appears before the search hands itself over.
        budget.give(100);
        let resumed = Arc::new(AtomicUsize::new(0));
        let r = resumed.clone();
        budget.wait(Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
        }));
        assert_eq!(resumed.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn no_waiter_is_forgotten_under_races() {
        let budget = Arc::new(OutputBudget::new(1000));
        let resumed = Arc::new(AtomicUsize::new(0));
        let waiters = 2000;
        std::thread::scope(|s| {
            let (b, r) = (budget.clone(), resumed.clone());
            s.spawn(move || {
                for _ in 0..waiters {
                    if b.try_take(600) {
                        r.fetch_add(1, Ordering::SeqCst);
                        b.give(600);
                    } else {
                        let r = r.clone();
                        b.wait(Box::new(move || {
                            r.fetch_add(1, Ordering::SeqCst);
                        }));
                    }
                }
            });
            let b = budget.clone();
            s.spawn(move || {
                for _ in 0..waiters {
                    b.take(1000);
                    std::hint::spin_loop();
                    b.give(1000);
                }
            });
        });
        assert_eq!(budget.used(), 0);
        assert_eq!(budget.waiting(), 0, "every waiter was resumed");
        assert_eq!(resumed.load(Ordering::SeqCst), waiters);
    }
}
