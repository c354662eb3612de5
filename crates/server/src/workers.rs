//! A fixed pool of threads for the work that must not run on the connections' tokio
//! threads: the steps of large searches (`session::search_job`).
//!
//! How it works:
//! 1. [`Workers::new`] starts a fixed number of threads (one per core by default, see
//!    [`worker_count`]); the number never changes, whatever clients do;
//! 2. [`Workers::submit`] puts a job at the back of one queue and wakes a thread; it never
//!    waits, so it may be called from a tokio thread, a worker thread or the writer of a
//!    connection;
//! 3. a thread takes the job at the front and runs it to its end. A job that cannot go on
//!    (its client is not reading) does not wait on the thread: it is handed to whoever
//!    will submit it again (see `session::writer`), and a job whose turn is over submits
//!    itself again, to the back of the queue, so long searches take turns;
//! 4. a job that panics is reported and the thread goes on with the next;
//! 5. dropping the pool lets the threads finish the queue and end; nothing joins them, so
//!    the last owner of the pool may be a job on one of its threads.
//!
//! The queue is not bounded here: what feeds it is (each connection has a fixed number of
//! large searches at once, and the connections are counted), so it holds at most one job
//! per running search.
//!
//! Why not a crate (rayon, a tokio blocking pool): rayon's pool is for work that completes,
//! not jobs that leave and come back, and tokio's blocking pool grows a thread per waiting
//! task up to 512, which is exactly what must not happen.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// One unit of work.
pub type Job = Box<dyn FnOnce() + Send + 'static>;

/// Most threads a pool takes, whatever the machine: far above the cores of any server
/// this runs on, and a bound on the process's thread count.
pub const MAX_WORKERS: usize = 256;

/// The threads a pool takes by default: one per core the process may use, at least 1,
/// at most [`MAX_WORKERS`].
pub fn worker_count() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_WORKERS)
}

/// The threads for a configured count (`server.worker_threads`): [`worker_count`] for 0,
/// else the count. The tokio runtime and the search threads both take it.
pub fn threads_for(configured: usize) -> usize {
    match configured {
        0 => worker_count(),
        n => n,
    }
}

/// A fixed pool of threads (see the module documentation).
#[derive(Debug)]
pub struct Workers {
    shared: Arc<Shared>,
    threads: usize,
}

/// A handle that submits jobs to a pool; cheap to clone, kept by jobs that come back.
#[derive(Debug, Clone)]
pub struct WorkersHandle {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    stopping: bool,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("jobs", &self.jobs.len())
            .field("stopping", &self.stopping)
            .finish()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn submit(&self, job: Job) {
        self.lock().jobs.push_back(job);
        self.ready.notify_one();
    }

    /// A thread's loop: the next job, until the pool is dropped and the queue is empty.
    fn work(&self, name: &str) {
        loop {
            let job = {
                let mut state = self.lock();
                loop {
                    if let Some(job) = state.jobs.pop_front() {
                        break job;
                    }
                    if state.stopping {
                        return;
                    }
                    state = self.ready.wait(state).unwrap_or_else(|e| e.into_inner());
                }
            };
            if catch_unwind(AssertUnwindSafe(job)).is_err() {
                tracing::error!(pool = name, "a job panicked; the thread goes on with the next");
            }
        }
    }
}

impl Workers {
    /// A pool of `threads` threads (at least 1, at most [`MAX_WORKERS`]) named `name`.
    /// Fails only when the system refuses a thread.
    pub fn new(name: &str, threads: usize) -> std::io::Result<Workers> {
        let threads = threads.clamp(1, MAX_WORKERS);
        let shared = Arc::new(Shared::default());
        for _ in 0..threads {
            let shared = shared.clone();
            let label = name.to_string();
            std::thread::Builder::new()
                .name(name.to_string())
                .spawn(move || shared.work(&label))?;
        }
        Ok(Workers { shared, threads })
    }

    /// Queues `job` (never waits).
    pub fn submit(&self, job: Job) {
        self.shared.submit(job);
    }

    /// A handle for jobs that submit themselves again.
    pub fn handle(&self) -> WorkersHandle {
        WorkersHandle {
            shared: self.shared.clone(),
        }
    }

    /// The pool's threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Jobs waiting for a thread now.
    pub fn queued(&self) -> usize {
        self.shared.lock().jobs.len()
    }
}

impl WorkersHandle {
    /// Queues `job` (never waits).
    pub fn submit(&self, job: Job) {
        self.shared.submit(job);
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.shared.lock().stopping = true;
        self.shared.ready.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn runs_every_job_on_no_more_than_its_threads() {
        let pool = Workers::new("test-pool", 3).unwrap();
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (done_tx, done_rx) = mpsc::channel();
        for _ in 0..40 {
            let (running, most, done_tx) = (running.clone(), most.clone(), done_tx.clone());
            pool.submit(Box::new(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(2));
                running.fetch_sub(1, Ordering::SeqCst);
                done_tx.send(()).unwrap();
            }));
        }
        for _ in 0..40 {
            done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        }
        let most = most.load(Ordering::SeqCst);
        assert!((1..=3).contains(&most), "{most} jobs ran at once on 3 threads");
    }

    #[test]
    fn a_job_that_submits_itself_again_goes_behind_the_others() {
        let pool = Workers::new("test-pool", 1).unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let (done_tx, done_rx) = mpsc::channel();
        // Hold the only thread until every job is queued.
        let (go_tx, go_rx) = mpsc::channel::<()>();
        pool.submit(Box::new(move || go_rx.recv().unwrap()));
        let handle = pool.handle();
        {
            let (order, done_tx) = (order.clone(), done_tx.clone());
            pool.submit(Box::new(move || {
                order.lock().unwrap().push("long, first turn");
                let again = done_tx.clone();
                handle.submit(Box::new(move || {
                    order.lock().unwrap().push("long, second turn");
                    again.send(()).unwrap();
                }));
            }));
        }
        {
            let (order, done_tx) = (order.clone(), done_tx.clone());
            pool.submit(Box::new(move || {
                order.lock().unwrap().push("short");
                done_tx.send(()).unwrap();
            }));
        }
        go_tx.send(()).unwrap();
        for _ in 0..2 {
            done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        }
        assert_eq!(
            *order.lock().unwrap(),
            ["long, first turn", "short", "long, second turn"]
        );
    }

    #[test]
    fn a_panicking_job_does_not_take_its_thread() {
        let pool = Workers::new("test-pool", 1).unwrap();
        pool.submit(Box::new(|| panic!("a job that fails")));
        let (tx, rx) = mpsc::channel();
        pool.submit(Box::new(move || tx.send(7).unwrap()));
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 7);
    }
}
