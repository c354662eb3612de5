//! Publication of immutable versions to many readers: a [`VersionCell`] holds the current
//! `Arc<T>` (for the store, the current version of the directory), and each reader thread
//! keeps a [`VersionReader`] that caches the `Arc` it last saw together with that version's
//! generation number.
//!
//! In the steady state, when nothing has been published since a reader last looked,
//! [`VersionReader::current`] is one atomic load and a comparison: no lock, no reference
//! count change, no write to memory shared with other threads. Only the first call after a
//! publication takes the cell's mutex to pick up the new version. The writer publishes a
//! new version after each committed batch, so the mutex is taken about once per reader per
//! batch, never per request.
//!
//! # Protocol
//!
//! The cell holds, under one mutex, the current `Arc<T>` and its generation (0 for the
//! initial version, then +1 per publication). An atomic copy of the generation, written
//! only while the mutex is held, lets readers check for news without locking.
//!
//! Publishing `next` ([`VersionCell::publish`]):
//!
//! 1. lock the mutex;
//! 2. store `next` as the current version and increment the generation in the locked
//!    state, keeping the previous `Arc`;
//! 3. still holding the mutex, store the new generation in the atomic with `Release`;
//! 4. unlock, then drop the previous `Arc` (if that was the last reference, the old
//!    version is freed here, outside the lock, so readers on the slow path never wait for
//!    a large version to be torn down).
//!
//! Reading ([`VersionReader::current`]):
//!
//! 1. load the atomic generation with `Acquire`;
//! 2. if it equals the generation cached with the reader's `Arc` (and the reader has not
//!    [released](VersionReader::release) it), return the cached `Arc`: done;
//! 3. otherwise (slow path) lock the mutex, clone the current `Arc` and read its generation
//!    *from the locked state*, unlock;
//! 4. cache that pair, drop the previously cached `Arc` (outside the lock), and return the
//!    new one.
//!
//! Publishers are serialized by the mutex, so generations are assigned in the order the
//! publications take the lock. The store has a single writer thread; two threads
//! publishing at once are still safe, but the one that locks last wins.
//!
//! # Invariants
//!
//! 1. **Freshness**: once [`publish`](VersionCell::publish) has returned, every
//!    [`current`](VersionReader::current) call on any reader that begins afterwards (that
//!    is, is ordered after the publication by any synchronization, such as a message on a
//!    channel or the request that caused it) returns that version or a newer one. The
//!    atomic store of step 3 happens before that call's load, so the load sees the new
//!    generation or a later one; the reader's cached generation is older, so the reader
//!    takes the slow path and reads under the lock a version at least as new.
//! 2. **Lifetime**: a version returned by `current` is never freed while the reader holds
//!    it. The reader owns a strong reference until its next `current` or `release` call or
//!    its drop; the borrow returned by `current` ends before any of those can run.
//! 3. **Order**: each reader sees versions in publication order, never going backwards.
//!    A reader only replaces its cached version on the slow path, with the version current
//!    at the time it holds the lock. Its previous version was current at an earlier lock
//!    acquisition, and the current version only moves forward.
//!
//! The cached generation is always exactly the generation of the cached `Arc`, which is
//! why the slow path reads the two together under the lock. Had it read the generation
//! after unlocking (from the atomic), a publication in between would pair the old `Arc`
//! with the new generation: every later fast path would find the generations equal and
//! return the old version, and the reader would stay stale until the next publication,
//! which may never come if the writer goes idle. (The converse mismatch, a newer `Arc`
//! with an older generation, would only cost one extra slow path.)
//!
//! The version's contents reach a reader through the mutex (the publisher's unlock, then
//! the reader's lock), not through the atomic: invariant 1 rests only on the atomic's
//! coherence, and the fast path returns an `Arc` the reader itself fetched under the lock.
//! The `Release`/`Acquire` pair on the generation is kept anyway so that seeing generation
//! `n` also means seeing everything the writer did before publishing it; the `Acquire` load
//! is a plain load on x86 and costs little elsewhere.
//!
//! A reader keeps its cached version alive until its next call. A worker that goes idle
//! should call [`VersionReader::release`], so that it does not pin an old version's memory
//! while the writer moves on; the next `current` simply takes the slow path.
//!
//! Slow-path hits are counted ([`VersionCell::slow_path_hits`]) for monitoring: about one
//! per reader per publication is expected; many more would mean readers are being
//! released and re-primed on every request.
//!
//! # Model checking
//!
//! The primitives come from the crate's `sync` shim, so the protocol can be checked under
//! the loom model checker, which explores every interleaving of small scenarios (one
//! publisher with two readers, consecutive publications, drop accounting). From the
//! workspace root:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p larch-store --test loom_version_cell --release
//! ```
//!
//! Only that test target is meant to be built with `--cfg loom`.

use std::mem;

use crate::sync::{Arc, AtomicU64, Mutex, MutexGuard, Ordering};

/// The state that only changes under the mutex: the current version and its generation.
struct Slot<T: ?Sized> {
    version: Arc<T>,
    generation: u64,
}

/// The current version of something immutable, shared with many [`VersionReader`]s.
///
/// Put it in an `Arc` (the standard library's, even under loom: it only shares the cell
/// and takes no part in the protocol) and give each reader thread its own
/// [`reader`](VersionCell::reader).
pub struct VersionCell<T: ?Sized> {
    /// The current version and its generation: the authoritative pair.
    slot: Mutex<Slot<T>>,
    /// A copy of `slot.generation`, stored (with `Release`) only while `slot` is locked;
    /// readers load it (with `Acquire`) on every call to decide whether to lock.
    generation: AtomicU64,
    /// How many times a reader took the slow path (monitoring only, `Relaxed`).
    slow_path_hits: AtomicU64,
}

impl<T: ?Sized> VersionCell<T> {
    /// A cell whose current version is `initial`, at generation 0.
    pub fn new(initial: Arc<T>) -> Self {
        VersionCell {
            slot: Mutex::new(Slot {
                version: initial,
                generation: 0,
            }),
            generation: AtomicU64::new(0),
            slow_path_hits: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Slot<T>> {
        // Nothing that can panic runs with the lock held (an `Arc` clone or move and an
        // integer increment), so the slot is never left half-updated and a poisoned lock
        // is still consistent.
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes `next` the current version (steps 1 to 4 of the protocol in the module
    /// documentation).
    ///
    /// Meant for a single writer thread; concurrent calls are serialized by the mutex and
    /// the last to lock wins. When this returns, every reader's next
    /// [`current`](VersionReader::current) returns `next` or a newer version. The previous
    /// version is dropped here if no reader holds it.
    pub fn publish(&self, next: Arc<T>) {
        let previous = {
            let mut slot = self.lock();
            let previous = mem::replace(&mut slot.version, next);
            // A u64 incremented even a million times a second lasts over 500,000 years, so
            // wrapping (to a generation a reader might still have cached) cannot happen.
            slot.generation = slot.generation.wrapping_add(1);
            self.generation.store(slot.generation, Ordering::Release);
            previous
        };
        drop(previous);
    }

    /// The current version, taking the lock (the slow path: for occasional callers that
    /// have no [`VersionReader`]).
    pub fn load(&self) -> Arc<T> {
        Arc::clone(&self.lock().version)
    }

    /// The current version and its generation, read together under the lock.
    fn load_with_generation(&self) -> (Arc<T>, u64) {
        let slot = self.lock();
        (Arc::clone(&slot.version), slot.generation)
    }

    /// The generation of the current version: 0 for the initial version, then one more per
    /// [`publish`](VersionCell::publish).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// How many times readers have taken the slow path (locked to fetch a new version),
    /// in total since the cell was created. For monitoring; not synchronized with
    /// anything else.
    pub fn slow_path_hits(&self) -> u64 {
        self.slow_path_hits.load(Ordering::Relaxed)
    }

    /// A new reader for one thread. It holds no version until its first
    /// [`current`](VersionReader::current) call.
    pub fn reader(self: &std::sync::Arc<Self>) -> VersionReader<T> {
        VersionReader {
            cell: std::sync::Arc::clone(self),
            cached: None,
            generation: 0,
        }
    }
}

/// One thread's view of a [`VersionCell`]: caches the last version it fetched so that
/// [`current`](VersionReader::current) needs no lock while nothing new is published.
///
/// Not shared between threads (`current` takes `&mut self`): each worker thread owns one.
pub struct VersionReader<T: ?Sized> {
    cell: std::sync::Arc<VersionCell<T>>,
    /// The version fetched on the last slow path; `None` before the first call and after
    /// [`release`](VersionReader::release).
    cached: Option<Arc<T>>,
    /// The generation of `cached` (meaningless while `cached` is `None`).
    generation: u64,
}

impl<T: ?Sized> VersionReader<T> {
    /// The current version (the reading steps of the protocol in the module
    /// documentation).
    ///
    /// Without a lock or any shared write when nothing was published since this reader's
    /// last call. The version stays alive at least until this reader's next `current` or
    /// [`release`](VersionReader::release); clone the `Arc` to keep it longer.
    pub fn current(&mut self) -> &Arc<T> {
        let published = self.cell.generation.load(Ordering::Acquire);
        // Moving the cached `Arc` out and back in changes no reference count.
        let version = match self.cached.take() {
            Some(cached) if self.generation == published => cached,
            stale => {
                self.cell.slow_path_hits.fetch_add(1, Ordering::Relaxed);
                let (version, generation) = self.cell.load_with_generation();
                self.generation = generation;
                // The lock is released: dropping what may be the last reference to an
                // old version does not hold up anyone.
                drop(stale);
                version
            }
        };
        self.cached.insert(version)
    }

    /// Drops the cached version, so an idle reader does not keep an old version alive.
    /// The next [`current`](VersionReader::current) fetches the current version under the
    /// lock.
    pub fn release(&mut self) {
        self.cached = None;
    }

    /// The cell this reader reads.
    pub fn cell(&self) -> &std::sync::Arc<VersionCell<T>> {
        &self.cell
    }
}
