//! The access log's per-thread buffers: where the request path leaves its records.
//!
//! Each thread that completes operations (the runtime's workers, search threads, the
//! store's writer) gets one [`Slot`] per log the first time it logs: a `Vec<u8>` behind a
//! mutex that only that thread and the log's writer ever lock, so the lock is uncontended
//! except for the moment the writer swaps the buffer out. Nothing else is shared on the
//! request path: no global queue, no shared counter.
//!
//! Bounds: a slot holds at most [`MAX_SLOT_BYTES`]; a record that does not fit is dropped
//! and counted in the slot (the writer reports drops in the log itself). When a slot
//! passes [`WAKE_BYTES`] the writer is woken early, so a busy server drains well before
//! its buffers fill.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};

use super::event::{self, Event};

/// Most octets one thread's slot holds before records are dropped (about 15,000 search
/// records). With the writer draining every [`super::writer::DRAIN_INTERVAL`] and on
/// [`WAKE_BYTES`], a slot fills only when the disk cannot keep up.
pub const MAX_SLOT_BYTES: usize = 4 << 20;

/// A slot this full wakes the writer before its next round.
pub const WAKE_BYTES: usize = 256 << 10;

/// One thread's records for one log.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    inner: Mutex<SlotData>,
}

#[derive(Debug, Default)]
pub(crate) struct SlotData {
    /// Encoded records ([`event::encode`]), oldest first.
    pub records: Vec<u8>,
    /// Records dropped because the slot was full, since the writer last looked.
    pub dropped: u64,
    /// The writer was woken for this slot since it last drained it.
    woken: bool,
}

impl Slot {
    pub(crate) fn lock(&self) -> MutexGuard<'_, SlotData> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl SlotData {
    /// Hands the records to the writer, keeping `spare`'s allocation for the next ones.
    pub(crate) fn take(&mut self, spare: &mut Vec<u8>) -> u64 {
        spare.clear();
        std::mem::swap(&mut self.records, spare);
        self.woken = false;
        std::mem::take(&mut self.dropped)
    }
}

/// Every slot of one log, and the writer's wake-up.
#[derive(Debug)]
pub(crate) struct Buffers {
    /// This log's number, to find its slot among a thread's.
    id: u64,
    slots: Mutex<Vec<Arc<Slot>>>,
    wake: Mutex<bool>,
    wake_cv: Condvar,
    closed: AtomicBool,
}

static NEXT_LOG: AtomicU64 = AtomicU64::new(1);

/// A thread's slot for one log: the log's number, the log (to forget the slot once the log
/// is gone), the slot.
type ThreadSlot = (u64, Weak<Buffers>, Arc<Slot>);

thread_local! {
    /// This thread's slots, one per live log (a process runs one log; tests run several).
    static SLOTS: RefCell<Vec<ThreadSlot>> = const { RefCell::new(Vec::new()) };
}

impl Buffers {
    pub(crate) fn new() -> Arc<Buffers> {
        Arc::new(Buffers {
            id: NEXT_LOG.fetch_add(1, Ordering::Relaxed),
            slots: Mutex::new(Vec::new()),
            wake: Mutex::new(false),
            wake_cv: Condvar::new(),
            closed: AtomicBool::new(false),
        })
    }

    /// Appends the record of `event` to this thread's slot.
    pub(crate) fn append(self: &Arc<Self>, mono_ns: u64, event: &Event<'_>) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        SLOTS.with(|slots| {
            let mut slots = slots.borrow_mut();
            let i = match slots.iter().position(|(id, _, _)| *id == self.id) {
                Some(i) => i,
                None => {
                    // Forget the slots of logs that are gone.
                    slots.retain(|(_, log, _)| log.strong_count() > 0);
                    let slot = Arc::new(Slot::default());
                    self.lock_slots().push(slot.clone());
                    slots.push((self.id, Arc::downgrade(self), slot));
                    slots.len() - 1
                }
            };
            let mut data = slots[i].2.lock();
            if data.records.len() >= MAX_SLOT_BYTES {
                data.dropped += 1;
                return;
            }
            event::encode(&mut data.records, mono_ns, event);
            if data.records.len() >= WAKE_BYTES && !data.woken {
                data.woken = true;
                drop(data);
                self.wake();
            }
        });
    }

    /// Wakes the writer.
    pub(crate) fn wake(&self) {
        *self.wake.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake_cv.notify_one();
    }

    /// Waits until woken or `timeout` passes.
    pub(crate) fn wait(&self, timeout: std::time::Duration) {
        let woken = self.wake.lock().unwrap_or_else(|e| e.into_inner());
        let (mut woken, _) = self
            .wake_cv
            .wait_timeout_while(woken, timeout, |w| !*w)
            .unwrap_or_else(|e| e.into_inner());
        *woken = false;
    }

    /// Every slot (the writer drains them in turn).
    pub(crate) fn slots(&self) -> Vec<Arc<Slot>> {
        let mut slots = self.lock_slots();
        // A slot whose thread ended is kept until it is empty, then forgotten.
        slots.retain(|s| Arc::strong_count(s) > 1 || !s.lock().records.is_empty());
        slots.clone()
    }

    /// No more records are taken (the log is closing).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        self.wake();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    fn lock_slots(&self) -> MutexGuard<'_, Vec<Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }
}
