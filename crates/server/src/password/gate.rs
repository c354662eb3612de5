//! Running slow password work (checking or hashing an argon2, PBKDF2 or crypt value) off
//! the connection threads, a few at a time.
//!
//! Invariants:
//! - at most [`slow_permits`] slow checks or hashes run at once in the process (one per
//!   core), so a burst of binds cannot take more than that many cores, nor more memory than
//!   that many times the largest argon2 value allowed
//!   ([`super::argon::MAX_ARGON2_MEMORY_KIB`]);
//! - a tokio worker thread never waits for slow work: a caller that owns its data runs it
//!   with `tokio::task::spawn_blocking` and [`with_permit`] (the Bind); a caller that
//!   borrows the request (Add and Modify hashing a new userPassword while they prepare)
//!   uses [`blocking_section`], which hands the worker's other tasks to another thread
//!   (`tokio::task::block_in_place`) on the multi-threaded runtime the server runs on, and
//!   simply runs the work where there is no runtime or a single-threaded one (tools, tests).

use std::sync::{Condvar, LazyLock, Mutex};

/// The process-wide count of slow password operations that may run at once.
static GATE: LazyLock<Gate> = LazyLock::new(|| Gate::new(slow_permits()));

/// Most slow password operations at once: one per core the process may use (at least 1,
/// at most [`MAX_SLOW_PERMITS`]).
pub fn slow_permits() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_SLOW_PERMITS)
}

/// Threads the runtime's blocking pool may hold (`larch serve` sets it): the slow checks
/// that may run at once ([`slow_permits`]), plus [`BLOCKING_SPARE`] for worker threads
/// handed over in [`blocking_section`]. A burst of binds beyond it waits as tasks, not as
/// threads (tokio's default would grow the pool to 512 threads, each with its stack).
pub fn blocking_threads() -> usize {
    slow_permits() + BLOCKING_SPARE
}

/// Blocking threads beyond [`slow_permits`]: a worker thread in [`blocking_section`] waits
/// for a permit while its replacement takes one of these.
pub const BLOCKING_SPARE: usize = 2;

/// Upper bound of [`slow_permits`]: even on a very large machine, 64 argon2 checks at the
/// largest memory allowed already take 4 GiB.
pub const MAX_SLOW_PERMITS: usize = 64;

/// A counting semaphore for threads that may block.
struct Gate {
    free: Mutex<usize>,
    freed: Condvar,
}

impl Gate {
    fn new(permits: usize) -> Gate {
        Gate {
            free: Mutex::new(permits),
            freed: Condvar::new(),
        }
    }

    fn acquire(&self) -> Permit<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Permit { gate: self }
    }
}

/// One slow operation's place; returned when dropped (also on unwind).
struct Permit<'a> {
    gate: &'a Gate,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut free = self.gate.free.lock().unwrap_or_else(|e| e.into_inner());
        *free += 1;
        self.gate.freed.notify_one();
    }
}

/// Runs `f` once one of the [`slow_permits`] places is free. Call it from a thread that may
/// block (a blocking-pool thread, or inside [`blocking_section`]).
pub fn with_permit<R>(f: impl FnOnce() -> R) -> R {
    let _permit = GATE.acquire();
    f()
}

/// Runs `f` (slow password work) with a permit, without holding up the tokio worker thread
/// this is called on (see the module documentation).
pub fn blocking_section<R>(f: impl FnOnce() -> R) -> R {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let multi_thread = Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(|| with_permit(f))
    } else {
        with_permit(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn no_more_than_the_permits_run_at_once() {
        let gate = Arc::new(Gate::new(2));
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (gate, running, most) = (gate.clone(), running.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let _p = gate.acquire();
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        running.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(most.load(Ordering::SeqCst) <= 2);
        assert_eq!(*gate.free.lock().unwrap(), 2, "every permit came back");
    }

    #[test]
    fn blocking_section_runs_with_and_without_a_runtime() {
        assert_eq!(blocking_section(|| 7), 7);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        assert_eq!(rt.block_on(async { blocking_section(|| 8) }), 8);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        assert_eq!(
            rt.block_on(async { tokio::spawn(async { blocking_section(|| 9) }).await.unwrap() }),
            9
        );
    }
}
