//! The server's counters: one slot per thread, summed when read.
//!
//! Every thread that ends operations (the runtime's workers, the search threads, the
//! store's writer, the blocking pool) gets its own [`Slot`] of counters the first time it
//! counts: a cache-line-aligned array of `u64`s that only that thread writes, with a plain
//! load and store (no read-modify-write instruction, no lock). Nothing shared is written on
//! the request path, so counting costs a few nanoseconds and never contends.
//!
//! Reading ([`Counters::totals`]) locks the list of slots and sums them; a reader may see
//! a count one operation behind, never a torn one (each cell is an atomic).
//!
//! A thread that exits (the blocking pool retires idle threads) folds its slot into the
//! `retired` sums and leaves the list, so the list never grows past the threads alive and
//! no count is lost; the slot, zeroed, goes to the next thread that counts.
//!
//! Counting is on every operation's path, so finding the thread's slot is one read of a
//! thread-local (`LAST`) and a comparison; the first count of a thread takes the slow
//! path, which makes its slot.
//!
//! Layout: one flat array per slot, indexed by the constants below, so summing is one loop
//! and [`Totals`] names what each range means.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use super::kinds::{BindMethod, OpKind, BIND_METHODS, CLOSE_REASONS, OP_KINDS};
use super::latency::LATENCY_BUCKETS;
use crate::outcome::Sent;

/// Result codes counted one by one: 0 to 123 (RFC 4511's and the cancel and assertion
/// codes of RFCs 3909 and 4528); every other code is counted in one more cell.
pub const COUNTED_RESULT_CODES: usize = 124;

/// Where each counter lives in a slot.
mod at {
    use super::*;
    pub const INITIATED: usize = 0;
    pub const COMPLETED: usize = INITIATED + OP_KINDS;
    pub const RESULTS: usize = COMPLETED + OP_KINDS;
    /// `COUNTED_RESULT_CODES` cells, then one for every other code.
    pub const RESULT_OTHER: usize = RESULTS + COUNTED_RESULT_CODES;
    pub const LATENCY: usize = RESULT_OTHER + 1;
    pub const LATENCY_SUM_NS: usize = LATENCY + OP_KINDS * LATENCY_BUCKETS;
    pub const ENTRIES: usize = LATENCY_SUM_NS + OP_KINDS;
    pub const REFERENCES: usize = ENTRIES + 1;
    pub const BYTES: usize = REFERENCES + 1;
    pub const UNDECODABLE: usize = BYTES + 1;
    pub const ACCEPTED: usize = UNDECODABLE + 1;
    pub const CLOSED: usize = ACCEPTED + 1;
    pub const REFUSED: usize = CLOSED + 1;
    pub const TLS: usize = REFUSED + 1;
    /// Per method, successes then failures.
    pub const BINDS: usize = TLS + 1;
    /// Per [`crate::outcome::CloseReason`] number.
    pub const CLOSE_REASONS: usize = BINDS + BIND_METHODS * 2;
    pub const LEN: usize = CLOSE_REASONS + super::CLOSE_REASONS;
}

/// One thread's counters, alone on its cache lines.
#[repr(align(64))]
#[derive(Debug)]
pub(crate) struct Slot {
    cells: [AtomicU64; at::LEN],
}

impl Slot {
    fn new() -> Slot {
        Slot {
            cells: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Adds `n` to cell `i`. Only the slot's own thread calls this, so a load and a store
    /// are enough (readers only load).
    #[inline]
    fn add(&self, i: usize, n: u64) {
        let c = &self.cells[i];
        c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }
}

/// What one thread counts through; see [`Counters::count`].
#[derive(Debug, Clone, Copy)]
pub struct Tally<'a> {
    slot: &'a Slot,
}

impl Tally<'_> {
    /// An operation of `kind` started.
    #[inline]
    pub fn initiated(&self, kind: OpKind) {
        self.slot.add(at::INITIATED + kind as usize, 1);
    }

    /// An operation of `kind` ended after `nanos` (received to answered).
    #[inline]
    pub fn completed(&self, kind: OpKind, nanos: u64) {
        let k = kind as usize;
        self.slot.add(at::COMPLETED + k, 1);
        let bucket = super::latency::bucket(nanos);
        self.slot.add(at::LATENCY + k * LATENCY_BUCKETS + bucket, 1);
        self.slot.add(at::LATENCY_SUM_NS + k, nanos);
    }

    /// A response with result code `code` was sent.
    #[inline]
    pub fn result(&self, code: u32) {
        let i = if (code as usize) < COUNTED_RESULT_CODES {
            at::RESULTS + code as usize
        } else {
            at::RESULT_OTHER
        };
        self.slot.add(i, 1);
    }

    /// What an operation sent: its final response's result code, when it had one, and
    /// `sent`'s entries, references and octets. The messages sent are the responses,
    /// entries and references counted ([`Totals::pdus`]).
    #[inline]
    pub fn answered(&self, code: Option<u32>, sent: &Sent) {
        if let Some(code) = code {
            self.result(code);
        }
        if sent.entries != 0 {
            self.slot.add(at::ENTRIES, u64::from(sent.entries));
        }
        if sent.references != 0 {
            self.slot.add(at::REFERENCES, u64::from(sent.references));
        }
        self.slot.add(at::BYTES, sent.bytes);
    }

    /// A request that did not decode.
    pub fn undecodable(&self) {
        self.slot.add(at::UNDECODABLE, 1);
    }

    /// A Bind by `method` ended, successfully or not.
    pub fn bind(&self, method: BindMethod, ok: bool) {
        self.slot
            .add(at::BINDS + method as usize * 2 + usize::from(!ok), 1);
    }

    /// A connection was accepted.
    pub fn accepted(&self) {
        self.slot.add(at::ACCEPTED, 1);
    }

    /// A connection closed, for reason number `reason` (`CloseReason as u8`).
    pub fn closed(&self, reason: u8) {
        self.slot.add(at::CLOSED, 1);
        if (reason as usize) < CLOSE_REASONS {
            self.slot.add(at::CLOSE_REASONS + reason as usize, 1);
        }
    }

    /// A connection was refused at a limit.
    pub fn refused(&self) {
        self.slot.add(at::REFUSED, 1);
    }

    /// A TLS handshake completed.
    pub fn tls(&self) {
        self.slot.add(at::TLS, 1);
    }
}

/// The slots of one set of counters.
#[derive(Debug)]
struct Shared {
    /// This set's number, to find its slot among a thread's.
    id: u64,
    /// The slots of the threads alive that counted in this set.
    slots: Mutex<Vec<&'static Slot>>,
    /// The sums of the slots of threads that exited.
    retired: Slot,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Vec<&'static Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Folds an exiting thread's slot into the retired sums and takes it off the list.
    fn retire(&self, slot: &'static Slot) {
        let mut slots = self.lock();
        for (r, c) in self.retired.cells.iter().zip(&slot.cells) {
            r.fetch_add(c.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        slots.retain(|s| !std::ptr::eq(*s, slot));
    }
}

/// Slots whose threads exited, zeroed, for the next thread that counts. Slots are never
/// freed (see [`LAST`]); reusing them bounds their number by the most threads alive at once.
static FREE_SLOTS: Mutex<Vec<&'static Slot>> = Mutex::new(Vec::new());

/// A slot for a thread that counts for the first time: a free one, or a new one.
fn take_slot() -> &'static Slot {
    let free = FREE_SLOTS.lock().unwrap_or_else(|e| e.into_inner()).pop();
    free.unwrap_or_else(|| Box::leak(Box::new(Slot::new())))
}

/// Zeroes `slot`, which no set lists any more, and offers it to the next thread.
fn free_slot(slot: &'static Slot) {
    for c in &slot.cells {
        c.store(0, Ordering::Relaxed);
    }
    FREE_SLOTS.lock().unwrap_or_else(|e| e.into_inner()).push(slot);
}

/// A thread's slots, one per live set of counters (a server has one; tests run several).
/// Dropped when the thread exits: each slot is folded into its set's retired sums and
/// freed.
struct ThreadSlots(Vec<(u64, Weak<Shared>, &'static Slot)>);

impl Drop for ThreadSlots {
    fn drop(&mut self) {
        // Counts made after this (by other thread-locals' destructors) take the slow path,
        // which finds `SLOTS` gone and counts in the retired sums.
        let _ = LAST.try_with(|last| last.set(None));
        for (_, shared, slot) in self.0.drain(..) {
            if let Some(shared) = shared.upgrade() {
                shared.retire(slot);
            }
            free_slot(slot);
        }
    }
}

thread_local! {
    // Initialized without code, so an access is not checked for a first use.
    static SLOTS: RefCell<ThreadSlots> = const { RefCell::new(ThreadSlots(Vec::new())) };
    /// The set this thread counted in last, and its slot there: the path every count takes
    /// (one read of a thread-local without a destructor, so no check of its state, and no
    /// borrow flag). This is why slots are `'static`: a borrowed slot could not be kept
    /// here without `unsafe`.
    static LAST: Cell<Option<(u64, &'static Slot)>> = const { Cell::new(None) };
}

static NEXT_SET: AtomicU64 = AtomicU64::new(1);

/// The server's counters. Cloning shares them.
#[derive(Debug, Clone)]
pub struct Counters {
    shared: Arc<Shared>,
}

impl Default for Counters {
    fn default() -> Counters {
        Counters::new()
    }
}

impl Counters {
    /// A new set, every counter zero.
    pub fn new() -> Counters {
        Counters {
            shared: Arc::new(Shared {
                id: NEXT_SET.fetch_add(1, Ordering::Relaxed),
                slots: Mutex::new(Vec::new()),
                retired: Slot::new(),
            }),
        }
    }

    /// Runs `f` with this thread's tally (its slot is found the first time).
    #[inline]
    pub fn count(&self, f: impl FnOnce(Tally<'_>)) {
        match LAST.try_with(Cell::get) {
            Ok(Some((id, slot))) if id == self.shared.id => f(Tally { slot }),
            _ => self.count_slowly(f),
        }
    }

    /// [`Counters::count`] when this set is not the thread's last: its slot is looked up
    /// (made and listed the first time) and becomes the last.
    #[cold]
    #[inline(never)]
    fn count_slowly(&self, f: impl FnOnce(Tally<'_>)) {
        let slot = SLOTS
            .try_with(|cell| {
                let mut slots = cell.borrow_mut();
                let slot = self.thread_slot(&mut slots);
                let _ = LAST.try_with(|last| last.set(Some((self.shared.id, slot))));
                slot
            })
            .ok();
        match slot {
            Some(slot) => f(Tally { slot }),
            // The thread is exiting and its slots are gone: count in the retired sums.
            None => {
                let _guard = self.shared.lock();
                f(Tally {
                    slot: &self.shared.retired,
                });
            }
        }
    }

    /// This thread's slot of this set, made and listed the first time.
    fn thread_slot(&self, slots: &mut ThreadSlots) -> &'static Slot {
        if let Some((_, _, slot)) = slots.0.iter().find(|(id, _, _)| *id == self.shared.id) {
            return slot;
        }
        // A new set for this thread: free the slots of sets that are gone.
        slots.0.retain(|(_, shared, slot)| {
            let alive = shared.strong_count() > 0;
            if !alive {
                free_slot(slot);
            }
            alive
        });
        let slot = take_slot();
        self.shared.lock().push(slot);
        slots.0.push((self.shared.id, Arc::downgrade(&self.shared), slot));
        slot
    }

    /// Every counter, summed over the threads.
    pub fn totals(&self) -> Totals {
        let mut cells = vec![0u64; at::LEN];
        let slots = self.shared.lock();
        for slot in slots.iter() {
            for (t, c) in cells.iter_mut().zip(&slot.cells) {
                *t = t.wrapping_add(c.load(Ordering::Relaxed));
            }
        }
        for (t, c) in cells.iter_mut().zip(&self.shared.retired.cells) {
            *t = t.wrapping_add(c.load(Ordering::Relaxed));
        }
        Totals { cells }
    }

    /// The number of slots in use (threads that counted and are alive).
    pub fn slot_count(&self) -> usize {
        self.shared.lock().len()
    }
}

/// The counters summed at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Totals {
    cells: Vec<u64>,
}

impl Totals {
    /// Operations of `kind` started.
    pub fn initiated(&self, kind: OpKind) -> u64 {
        self.cells[at::INITIATED + kind as usize]
    }

    /// Operations of `kind` ended.
    pub fn completed(&self, kind: OpKind) -> u64 {
        self.cells[at::COMPLETED + kind as usize]
    }

    /// Operations of every kind started.
    pub fn initiated_all(&self) -> u64 {
        OpKind::ALL.iter().map(|&k| self.initiated(k)).sum()
    }

    /// Operations of every kind ended.
    pub fn completed_all(&self) -> u64 {
        OpKind::ALL.iter().map(|&k| self.completed(k)).sum()
    }

    /// Responses by result code: `(code, count)` for every code counted at least once;
    /// codes above 123 are counted together under `None`.
    pub fn results(&self) -> impl Iterator<Item = (Option<u32>, u64)> + '_ {
        let counted = (0..COUNTED_RESULT_CODES).map(|c| (Some(c as u32), self.cells[at::RESULTS + c]));
        counted
            .chain(std::iter::once((None, self.cells[at::RESULT_OTHER])))
            .filter(|&(_, n)| n != 0)
    }

    /// Responses with result code `code` (a code above 123: every such code).
    pub fn result(&self, code: u32) -> u64 {
        if (code as usize) < COUNTED_RESULT_CODES {
            self.cells[at::RESULTS + code as usize]
        } else {
            self.cells[at::RESULT_OTHER]
        }
    }

    /// The latency histogram of `kind`: counts per bucket (not cumulative; bucket `i`
    /// holds operations at most [`super::latency::upper_bound_micros`]`(i)` long) and the
    /// sum of their durations in nanoseconds.
    pub fn latency(&self, kind: OpKind) -> (&[u64], u64) {
        let start = at::LATENCY + kind as usize * LATENCY_BUCKETS;
        (
            &self.cells[start..start + LATENCY_BUCKETS],
            self.cells[at::LATENCY_SUM_NS + kind as usize],
        )
    }

    /// SearchResultEntry messages sent.
    pub fn entries(&self) -> u64 {
        self.cells[at::ENTRIES]
    }

    /// SearchResultReference messages sent.
    pub fn references(&self) -> u64 {
        self.cells[at::REFERENCES]
    }

    /// Octets sent to clients.
    pub fn bytes(&self) -> u64 {
        self.cells[at::BYTES]
    }

    /// LDAP messages sent to clients.
    pub fn pdus(&self) -> u64 {
        let responses: u64 = self.cells[at::RESULTS..=at::RESULT_OTHER].iter().sum();
        self.entries() + self.references() + responses
    }

    /// Requests that did not decode.
    pub fn undecodable(&self) -> u64 {
        self.cells[at::UNDECODABLE]
    }

    /// Connections accepted since the start.
    pub fn accepted(&self) -> u64 {
        self.cells[at::ACCEPTED]
    }

    /// Connections closed since the start.
    pub fn closed(&self) -> u64 {
        self.cells[at::CLOSED]
    }

    /// Connections closed for reason number `reason`.
    pub fn closed_for(&self, reason: u8) -> u64 {
        if (reason as usize) < CLOSE_REASONS {
            self.cells[at::CLOSE_REASONS + reason as usize]
        } else {
            0
        }
    }

    /// Connections open now.
    pub fn current(&self) -> u64 {
        self.accepted().saturating_sub(self.closed())
    }

    /// Connections refused at a limit.
    pub fn refused(&self) -> u64 {
        self.cells[at::REFUSED]
    }

    /// TLS handshakes completed.
    pub fn tls(&self) -> u64 {
        self.cells[at::TLS]
    }

    /// Binds by `method` that succeeded (`ok`) or failed.
    pub fn binds(&self, method: BindMethod, ok: bool) -> u64 {
        self.cells[at::BINDS + method as usize * 2 + usize::from(!ok)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_many_threads_sum_and_survive_the_threads() {
        let counters = Counters::new();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let c = counters.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        c.count(|t| {
                            t.initiated(OpKind::Search);
                            t.completed(OpKind::Search, 5_000);
                            t.result(0);
                            let sent = Sent {
                                entries: 2,
                                references: 0,
                                bytes: 100,
                            };
                            t.answered(None, &sent);
                        });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let totals = counters.totals();
        assert_eq!(totals.initiated(OpKind::Search), 8000);
        assert_eq!(totals.completed(OpKind::Search), 8000);
        assert_eq!(totals.completed_all(), 8000);
        assert_eq!(totals.result(0), 8000);
        assert_eq!(totals.entries(), 16_000);
        assert_eq!(totals.bytes(), 800_000);
        assert_eq!(totals.pdus(), 24_000);
        let (buckets, sum) = totals.latency(OpKind::Search);
        assert_eq!(buckets.iter().sum::<u64>(), 8000);
        assert_eq!(sum, 8000 * 5_000);
        // The threads exited: their slots were folded in and left the list.
        assert_eq!(counters.slot_count(), 0);
    }

    #[test]
    fn two_sets_on_one_thread_count_apart() {
        let a = Counters::new();
        let b = Counters::new();
        a.count(|t| t.accepted());
        b.count(|t| t.accepted());
        b.count(|t| t.closed(2));
        assert_eq!(a.totals().accepted(), 1);
        assert_eq!(a.totals().current(), 1);
        assert_eq!(b.totals().current(), 0);
        assert_eq!(b.totals().closed_for(2), 1);
    }

    #[test]
    fn unusual_result_codes_share_one_cell() {
        let c = Counters::new();
        c.count(|t| {
            t.result(49);
            t.result(4096);
            t.result(16654);
        });
        let totals = c.totals();
        assert_eq!(totals.result(49), 1);
        assert_eq!(totals.result(4096), 2);
        let listed: Vec<_> = totals.results().collect();
        assert_eq!(listed, vec![(Some(49), 1), (None, 2)]);
    }

    #[test]
    fn binds_count_by_method_and_result() {
        let c = Counters::new();
        c.count(|t| {
            t.bind(BindMethod::Simple, true);
            t.bind(BindMethod::Simple, false);
            t.bind(BindMethod::Simple, false);
            t.bind(BindMethod::External, true);
        });
        let totals = c.totals();
        assert_eq!(totals.binds(BindMethod::Simple, true), 1);
        assert_eq!(totals.binds(BindMethod::Simple, false), 2);
        assert_eq!(totals.binds(BindMethod::External, true), 1);
        assert_eq!(totals.binds(BindMethod::Anonymous, true), 0);
    }
}
