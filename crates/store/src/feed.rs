//! The change feed: after each batch is published, subscribers receive its changes in commit
//! order, each with its LSN; a subscriber that falls behind catches up from the write-ahead
//! log, and the writer never waits for one.
//!
//! # Protocol
//!
//! 1. [`crate::Store::subscribe`] registers a slot with the hub, under the hub's lock: a
//!    queue of at most [`MAX_FEED_BATCHES`] batches, a `behind` flag and a `closed` flag.
//!    Only then does it read the published LSN `P` (the LSN of the current version). From
//!    [`FeedStart::Now`] it owes the changes after `P`; from [`FeedStart::After`]`(n)` the
//!    changes after `n`, those up to `P` read from the log segments first (step 5).
//! 2. The writer, when it starts a batch, loads the number of subscribers (one atomic load).
//!    When there are some, each change's decoded form (the [`Change`] the transaction built
//!    and encoded anyway) is kept beside its payload, with the entry's records before and
//!    after the change ([`EntryStates`]: reference counts on the records the versions
//!    hold); when there are none, nothing is kept.
//! 3. After publishing the batch's version, and before reporting the jobs' results, the
//!    writer hands the batch (one `Arc`, shared by every subscriber) to each slot, under the
//!    slot's lock: if `behind` is set it skips the slot; if the queue has room it pushes the
//!    batch; otherwise (a full queue, or a batch whose changes were not kept because it
//!    started before the first subscriber came) it sets `behind` and wakes the subscriber.
//! 4. A subscription tracks `next`, the LSN of the first change it still owes. It takes the
//!    batches in its queue in order; a batch wholly below `next` (already read from the
//!    log) is dropped and one straddling `next` is cut.
//! 5. When its queue is empty and `behind` is set, it clears `behind` under the slot's lock
//!    (the writer queues for it again from the next batch), *then* reads `P` anew, and reads
//!    the records `next..=P` from the log, at most [`MAX_CATCH_UP_CHANGES`] per call,
//!    checking that each record's LSN is `next`. Then it goes back to its queue (step 4). If
//!    the queue filled up meanwhile, `behind` is set again and the cycle repeats; a
//!    subscriber that reads faster than the writer writes ends up live.
//! 6. If the log no longer holds `next` (a snapshot removed its segment), the read fails with
//!    [`FeedError::SnapshotNeeded`], and keeps failing so: the subscriber must start again
//!    from a snapshot, either the current version ([`crate::Store::subscribe_at_current`])
//!    or a snapshot file at LSN `s` followed by a subscription from `After(s)`.
//! 7. When the writer stops (the store closes), it sets `closed` in every slot and empties
//!    the hub. A subscription delivers what is queued, then the log records up to the last
//!    published LSN if it still owes some, then fails with [`FeedError::Closed`].
//!
//! 8. In a cluster, a node that installs a snapshot sent by its leader publishes the
//!    snapshot's version, then marks every slot with the snapshot's LSN `S` and empties its
//!    queue ([`FeedHub::reset`]). A subscription that sees the mark while it still owes a
//!    change up to `S` fails with [`FeedError::SnapshotNeeded`] (the changes up to `S` are
//!    in no log of this node), and keeps failing so until it starts again from the
//!    current version.
//!
//! # Invariants
//!
//! 1. **No gap.** A batch the writer did not queue for a slot was published before the
//!    writer took the slot's lock to skip it or to set `behind`; the subscriber clears
//!    `behind` in a later lock of the slot, and reads `P` after that, so `P` covers the
//!    batch and the log read up to `P` delivers it. A slot registered after the writer went
//!    through the hub reads `P` after the registration, so after the publication. (If the
//!    writer skipped the hub because it loaded a count of 0 while a subscriber registered,
//!    that subscriber still read `P` after the publication: had it read `P` before, its
//!    registration would have happened before the writer's load, which would have seen it.)
//! 2. **No duplicate.** `next` only moves forward, and a change is delivered only at `next`.
//! 3. **The writer never waits for a subscriber.** It holds a slot's lock for one push or
//!    one flag; a subscription holds it for one pop or one flag, never while it reads the
//!    log or its caller works. A full queue is never waited on.
//! 4. **No subscriber, no work.** Two atomic loads per batch; no change is kept, cloned or
//!    allocated.
//!
//! # Limits
//!
//! [`MAX_FEED_BATCHES`] batches queued per subscriber, each holding at most
//! [`crate::writer::MAX_BATCH`] changes; [`MAX_CATCH_UP_CHANGES`] changes per batch read
//! from the log.
//!
//! # Costs
//!
//! - With subscribers, the writer keeps the decoded changes it built anyway (no copy) and
//!   the records before and after each (two reference counts; a delete's describing
//!   attributes, a few values, are copied), allocates one `Vec` and one `Arc` per batch, and
//!   takes each slot's lock once per batch.
//! - A catch-up runs on the subscriber's thread: it reads the segment holding `next` whole
//!   (up to [`crate::wal::SEGMENT_SIZE_LIMIT`], 64 MiB) and each later one, verifying every
//!   record's CRC, and decodes the records it delivers.
//! - A subscription keeps the store's last published version alive after the store is
//!   closed, until it is dropped (it reads `P` from it).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use larch_model::entry::StoredEntry;

use crate::consensus::{EntryBody, ReplicatedEntry};
use crate::record::EntryRecord;
use crate::storage::Storage;
use crate::version::Version;
use crate::version_cell::VersionCell;
use crate::wal::record::Change;
use crate::wal::{oldest_segment_lsn, Lsn, Record, WalError, WalReader};

/// Batches queued for one subscriber before it is marked behind. A subscriber that pauses
/// longer than this many batches then reads the log instead (a segment read, 64 MiB at most
/// at once); a longer queue holds more memory per slow subscriber (a batch holds up to
/// [`crate::writer::MAX_BATCH`] changes, but under load a batch is one group commit, a few
/// to a few hundred changes).
pub const MAX_FEED_BATCHES: usize = 256;

/// Changes in one batch read from the log while catching up: bounds the memory one
/// delivered batch holds and the time one call takes (the same as a writer batch).
pub const MAX_CATCH_UP_CHANGES: usize = crate::writer::MAX_BATCH;

/// Where a subscription starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedStart {
    /// With the first batch published after the subscription.
    Now,
    /// With the change after this LSN (0: the first change ever); the changes already
    /// committed come from the log segments still on disk.
    After(Lsn),
}

/// One committed change and its LSN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedChange {
    /// The change's LSN.
    pub lsn: Lsn,
    /// The change is the last of its write (its commit unit): the writes of a batch end
    /// where this is true (and every batch ends with one, unless the log could not be
    /// read further).
    pub ends_write: bool,
    /// The change, as logged: the DN and the entry's stored attributes after the change (a
    /// delete's are the attributes the server gave to describe it).
    pub change: Change,
    /// The entry's stored states around the change, as the writer had them in hand, for a
    /// change the writer handed over; `None` for one read from the log (which holds only
    /// `change`). A subscriber that needs attributes by type reads them here without going
    /// through the schema, and a modify's previous state without looking it up.
    pub states: Option<EntryStates>,
}

/// The stored states of the entry a change touched ([`CommittedChange::states`]): the
/// records the versions before and after the change hold (shared, not copied: an
/// [`EntryRecord`] is a reference count), and a delete's describing attributes as the
/// caller handed them to [`crate::WriteTxn::delete_with`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EntryStates {
    /// The entry just before the change (a modify, rename or delete).
    pub before: Option<EntryRecord>,
    /// The entry just after the change (an add, modify or rename).
    pub after: Option<EntryRecord>,
    /// The attributes that describe a delete (empty for a delete without them; `None` for
    /// other changes).
    pub described: Option<StoredEntry>,
}

/// Consecutive committed changes, in commit order, never empty. A live batch is one of the
/// writer's batches (all of it or none of it is visible to readers), or its tail where a
/// catch-up from the log ended inside it; batches read from the log while catching up are
/// cut after [`MAX_CATCH_UP_CHANGES`] changes, not at the writer's batch boundaries, but
/// never inside a commit unit (the changes of one write): a batch ends where a write ends
/// (unless the log could not be read further), so a subscriber that treats the end of a
/// batch as the end of a write is right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedBatch {
    changes: Vec<CommittedChange>,
    from_log: bool,
}

impl CommittedBatch {
    /// The changes, LSNs ascending: consecutive on a single server; in a cluster the
    /// changes of one write share its entry's LSN, and LSNs of entries that changed
    /// nothing are missing.
    pub fn changes(&self) -> &[CommittedChange] {
        &self.changes
    }

    /// The LSN of the first change.
    pub fn first_lsn(&self) -> Lsn {
        self.changes.first().map_or(0, |c| c.lsn)
    }

    /// The LSN of the last change.
    pub fn last_lsn(&self) -> Lsn {
        self.changes.last().map_or(0, |c| c.lsn)
    }

    /// How many changes.
    pub fn len(&self) -> usize {
        self.changes.len()
    }

    /// Never true for a delivered batch.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// True when the batch was read from the log (while catching up), false when the
    /// writer handed it over.
    pub fn from_log(&self) -> bool {
        self.from_log
    }
}

/// Why a subscription cannot go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FeedError {
    /// The log no longer holds the changes the subscription owes (a snapshot covered them
    /// and their segments were removed). Start again from a snapshot: see
    /// [`crate::Store::subscribe_at_current`].
    #[error(
        "the log no longer holds LSN {from_lsn} (it starts at LSN {oldest_available}); \
         start again from a snapshot"
    )]
    SnapshotNeeded {
        /// The first LSN the subscription needed.
        from_lsn: Lsn,
        /// The oldest LSN the log can give.
        oldest_available: Lsn,
    },
    /// A subscription from an LSN the store has not reached.
    #[error("LSN {after} is beyond the last committed LSN {last}")]
    Ahead {
        /// The LSN asked for.
        after: Lsn,
        /// The last committed LSN.
        last: Lsn,
    },
    /// The log ends before a committed LSN (it was damaged or changed under the store).
    #[error("the log ends before LSN {next}, yet changes up to LSN {committed} were committed")]
    LogEnded {
        /// The first LSN missing.
        next: Lsn,
        /// The last committed LSN.
        committed: Lsn,
    },
    /// A log record that is not a change (or, in a cluster, not an entry).
    #[error("log record {lsn}: {problem}")]
    Decode {
        /// The record.
        lsn: Lsn,
        /// What is wrong with it.
        problem: String,
    },
    /// Reading the log failed.
    #[error(transparent)]
    Wal(#[from] WalError),
    /// The store is closed: every change it committed was delivered.
    #[error("the store is shut down")]
    Closed,
}

/// What the writer and a subscription share for one subscriber.
struct Slot {
    state: Mutex<SlotState>,
    /// Wakes the subscription when a batch is queued, `behind` is set, or `closed`.
    wake: Condvar,
}

struct SlotState {
    queue: VecDeque<Arc<CommittedBatch>>,
    /// The writer skipped a batch: the subscription must read the log after its queue.
    behind: bool,
    /// The writer has stopped.
    closed: bool,
    /// A cluster node installed a snapshot at this LSN (0: none since the last take):
    /// the changes up to it are in no log.
    gap: Lsn,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        // Every update is a single push, pop or flag assignment; a poisoned lock is intact.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Step 3: queue the batch, or mark the slot behind. Never waits for the subscriber.
    fn offer(&self, batch: Option<&Arc<CommittedBatch>>) {
        let mut s = self.lock();
        if s.behind {
            return;
        }
        match batch {
            Some(b) if s.queue.len() < MAX_FEED_BATCHES => s.queue.push_back(Arc::clone(b)),
            _ => s.behind = true,
        }
        drop(s);
        self.wake.notify_one();
    }
}

struct HubState {
    slots: Vec<Arc<Slot>>,
    closed: bool,
}

/// The writer's side of the feed: the registered subscribers.
pub(crate) struct FeedHub {
    /// `slots.len()`, readable without the lock: the writer's test for "no subscriber".
    subscribers: AtomicUsize,
    state: Mutex<HubState>,
}

impl FeedHub {
    pub(crate) fn new() -> FeedHub {
        FeedHub {
            subscribers: AtomicUsize::new(0),
            state: Mutex::new(HubState {
                slots: Vec::new(),
                closed: false,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        // Updated by single pushes, removals and assignments; a poisoned lock is intact.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True when some subscription is registered (step 2).
    pub(crate) fn has_subscribers(&self) -> bool {
        self.subscriber_count() > 0
    }

    pub(crate) fn subscriber_count(&self) -> usize {
        self.subscribers.load(Ordering::SeqCst)
    }

    fn register(&self) -> Result<Arc<Slot>, FeedError> {
        let mut hub = self.lock();
        if hub.closed {
            return Err(FeedError::Closed);
        }
        let slot = Arc::new(Slot {
            state: Mutex::new(SlotState {
                queue: VecDeque::new(),
                behind: false,
                closed: false,
                gap: 0,
            }),
            wake: Condvar::new(),
        });
        hub.slots.push(Arc::clone(&slot));
        self.subscribers.store(hub.slots.len(), Ordering::SeqCst);
        Ok(slot)
    }

    fn unregister(&self, slot: &Arc<Slot>) {
        let mut hub = self.lock();
        hub.slots.retain(|s| !Arc::ptr_eq(s, slot));
        self.subscribers.store(hub.slots.len(), Ordering::SeqCst);
    }

    /// Step 3, on the writer thread after a batch was published: `kept` holds the batch's
    /// changes (LSNs from `first_lsn`) when it started with subscribers, or nothing, and
    /// `ends` which of them end a write. Leaves `kept` empty.
    pub(crate) fn deliver(
        &self,
        first_lsn: Lsn,
        logged: usize,
        kept: &mut Vec<(Change, EntryStates)>,
        ends: &[bool],
    ) {
        if !self.has_subscribers() {
            kept.clear();
            return;
        }
        let batch = (logged > 0 && kept.len() == logged).then(|| {
            Arc::new(CommittedBatch {
                changes: kept
                    .drain(..)
                    .zip(first_lsn..)
                    .zip(ends.iter().copied().chain(std::iter::repeat(true)))
                    .map(|(((change, states), lsn), ends_write)| CommittedChange {
                        lsn,
                        ends_write,
                        change,
                        states: Some(states),
                    })
                    .collect(),
                from_log: false,
            })
        });
        kept.clear();
        let hub = self.lock();
        for slot in &hub.slots {
            slot.offer(batch.as_ref());
        }
    }

    /// In a cluster, after committed entries were applied and published: hands their
    /// changes (LSNs ascending) to every subscriber.
    pub(crate) fn deliver_committed(&self, changes: Vec<CommittedChange>) {
        if changes.is_empty() || !self.has_subscribers() {
            return;
        }
        let batch = Arc::new(CommittedBatch {
            changes,
            from_log: false,
        });
        let hub = self.lock();
        for slot in &hub.slots {
            slot.offer(Some(&batch));
        }
    }

    /// Step 8: a cluster node installed a snapshot at `lsn` and published its version:
    /// every subscription that still owes a change up to `lsn` must start again from a
    /// snapshot. What is queued is dropped (the subscriber rebuilds from the version).
    pub(crate) fn reset(&self, lsn: Lsn) {
        let hub = self.lock();
        for slot in &hub.slots {
            let mut s = slot.lock();
            s.queue.clear();
            s.gap = s.gap.max(lsn);
            drop(s);
            slot.wake.notify_one();
        }
    }

    /// Step 7: the writer has stopped.
    pub(crate) fn close(&self) {
        let mut hub = self.lock();
        hub.closed = true;
        for slot in hub.slots.drain(..) {
            slot.lock().closed = true;
            slot.wake.notify_all();
        }
        self.subscribers.store(0, Ordering::SeqCst);
    }
}

/// What a subscription reads the log and the published LSN through.
pub(crate) struct LogSource {
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) wal_dir: PathBuf,
    pub(crate) cell: Arc<VersionCell<Version>>,
    /// The log is a cluster's replicated log: its payloads are entries
    /// ([`crate::consensus::entry`]), not changes.
    pub(crate) replicated: bool,
}

/// How long a read may wait for a batch.
#[derive(Clone, Copy)]
enum Wait {
    No,
    Until(Instant),
    Forever,
}

/// What the queue gave.
enum Taken {
    Batch(Arc<CommittedBatch>),
    /// Step 8: a snapshot was installed at this LSN.
    Gap(Lsn),
    CatchUp,
    Closed,
    Nothing,
}

/// A catch-up in progress: the log records up to `up_to`.
struct CatchUp {
    reader: WalReader<'static>,
    up_to: Lsn,
}

/// One subscriber's end of the feed ([`crate::Store::subscribe`]). Dropping it unregisters
/// it. Reads block the calling thread (they may read log segments from disk); a plain
/// thread or a blocking task should own it.
pub struct FeedSubscription {
    hub: Arc<FeedHub>,
    slot: Arc<Slot>,
    source: LogSource,
    /// The LSN of the first change still owed.
    next: Lsn,
    catch_up: Option<CatchUp>,
    /// The log must be read up to the published LSN before the queue (step 5).
    must_catch_up: bool,
    /// `closed` was seen and the final catch-up started.
    closing: bool,
    /// The changes up to this LSN are in no log (step 8).
    gap: Lsn,
}

impl std::fmt::Debug for FeedSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedSubscription")
            .field("next", &self.next)
            .field("catching_up", &self.catch_up.is_some())
            .finish_non_exhaustive()
    }
}

/// Step 1. Returns the subscription and the version whose LSN it starts after when `from`
/// is `Now`.
pub(crate) fn subscribe(
    hub: &Arc<FeedHub>,
    source: LogSource,
    from: FeedStart,
) -> Result<(FeedSubscription, Arc<Version>), FeedError> {
    let slot = hub.register()?;
    let current = source.cell.load();
    let published = current.lsn;
    let mut sub = FeedSubscription {
        hub: Arc::clone(hub),
        slot,
        source,
        next: published.saturating_add(1),
        catch_up: None,
        must_catch_up: false,
        closing: false,
        gap: 0,
    };
    if let FeedStart::After(after) = from {
        if after > published {
            return Err(FeedError::Ahead {
                after,
                last: published,
            });
        }
        sub.next = after.saturating_add(1);
        if after < published {
            sub.must_catch_up = true;
            // Refuse now what the first read would refuse (a segment may still go before
            // then; the read checks again).
            let oldest = sub.oldest_available()?;
            if oldest > sub.next {
                return Err(FeedError::SnapshotNeeded {
                    from_lsn: sub.next,
                    oldest_available: oldest,
                });
            }
        }
    }
    Ok((sub, current))
}

impl FeedSubscription {
    /// The next batch; waits for one. After [`FeedError::Closed`] every committed change
    /// was delivered.
    pub fn recv(&mut self) -> Result<Arc<CommittedBatch>, FeedError> {
        loop {
            if let Some(batch) = self.next_batch(Wait::Forever)? {
                return Ok(batch);
            }
        }
    }

    /// The next batch, or `None` after `timeout` without one.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<Option<Arc<CommittedBatch>>, FeedError> {
        let wait = Instant::now()
            .checked_add(timeout)
            .map_or(Wait::Forever, Wait::Until);
        self.next_batch(wait)
    }

    /// The next batch if one is ready (catching up reads the log, so this may still take the
    /// time of a segment read), else `None`.
    pub fn try_recv(&mut self) -> Result<Option<Arc<CommittedBatch>>, FeedError> {
        self.next_batch(Wait::No)
    }

    /// The LSN of the last change delivered (or the one the subscription started after).
    pub fn last_lsn(&self) -> Lsn {
        self.next.saturating_sub(1)
    }

    /// Starts the subscription again after the current version, as
    /// [`crate::Store::subscribe_at_current`] would: what was queued is dropped, a
    /// [`FeedError::SnapshotNeeded`] is over, and the changes after the returned version
    /// follow. For a subscriber that fell behind the log and rebuilds its state from a
    /// version. The queue is emptied and `behind` cleared under the slot's lock *before*
    /// the version is read (as in step 5), so a batch not in that version is queued after
    /// the clearing, or read from the log.
    pub fn restart_at_current(&mut self) -> Arc<Version> {
        {
            let mut slot = self.slot.lock();
            slot.queue.clear();
            slot.behind = false;
            slot.gap = 0;
        }
        let current = self.source.cell.load();
        self.next = current.lsn.saturating_add(1);
        self.catch_up = None;
        self.must_catch_up = false;
        self.gap = 0;
        current
    }

    /// The store's current version: it holds every change delivered so far (a batch is
    /// published before it is handed to subscribers), and may hold later ones. A
    /// subscriber that reads the directory needs nothing else of the store, so it does
    /// not keep the store open.
    pub fn current(&self) -> Arc<Version> {
        self.source.cell.load()
    }

    fn next_batch(&mut self, wait: Wait) -> Result<Option<Arc<CommittedBatch>>, FeedError> {
        loop {
            if self.next <= self.gap {
                return Err(FeedError::SnapshotNeeded {
                    from_lsn: self.next,
                    oldest_available: self.gap.saturating_add(1),
                });
            }
            if self.must_catch_up || self.catch_up.is_some() {
                // A snapshot installed meanwhile ends the catch-up (step 8).
                let gap = std::mem::take(&mut self.slot.lock().gap);
                if gap > 0 {
                    self.gap = self.gap.max(gap);
                    self.catch_up = None;
                    self.must_catch_up = false;
                    continue;
                }
            }
            if self.must_catch_up {
                self.start_catch_up()?;
            }
            if self.catch_up.is_some() {
                if let Some(batch) = self.read_log()? {
                    return Ok(Some(batch));
                }
                continue;
            }
            match self.take(wait) {
                Taken::Batch(batch) => {
                    if let Some(batch) = self.owed_part(batch) {
                        return Ok(Some(batch));
                    }
                }
                Taken::CatchUp => self.must_catch_up = true,
                Taken::Gap(lsn) => {
                    self.gap = self.gap.max(lsn);
                    self.catch_up = None;
                    self.must_catch_up = false;
                }
                Taken::Closed => {
                    if self.closing {
                        return Err(FeedError::Closed);
                    }
                    self.closing = true;
                    self.must_catch_up = true;
                }
                Taken::Nothing => return Ok(None),
            }
        }
    }

    /// Steps 4 and 5 on the slot: the next queued batch, or the news that the log must be
    /// read (clearing `behind`), or that the writer stopped; waits as `wait` allows.
    fn take(&self, wait: Wait) -> Taken {
        let mut s = self.slot.lock();
        loop {
            if s.gap > 0 {
                return Taken::Gap(std::mem::take(&mut s.gap));
            }
            if let Some(batch) = s.queue.pop_front() {
                return Taken::Batch(batch);
            }
            if s.behind {
                s.behind = false;
                return Taken::CatchUp;
            }
            if s.closed {
                return Taken::Closed;
            }
            s = match wait {
                Wait::No => return Taken::Nothing,
                Wait::Forever => self.slot.wake.wait(s).unwrap_or_else(|e| e.into_inner()),
                Wait::Until(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Taken::Nothing;
                    }
                    self.slot
                        .wake
                        .wait_timeout(s, deadline - now)
                        .map(|(g, _)| g)
                        .unwrap_or_else(|e| e.into_inner().0)
                }
            };
        }
    }

    /// Step 4: the part of a queued batch still owed, or `None` when all of it was
    /// delivered. A batch that starts after `next` cannot follow from the protocol; it is
    /// dropped and the log read instead (it was published before it was queued, so the log
    /// read up to the published LSN holds it).
    fn owed_part(&mut self, batch: Arc<CommittedBatch>) -> Option<Arc<CommittedBatch>> {
        if batch.is_empty() || batch.last_lsn() < self.next {
            return None;
        }
        let first = batch.first_lsn();
        if first > self.next {
            self.must_catch_up = true;
            return None;
        }
        let next = self.next;
        let skip = batch
            .changes
            .iter()
            .position(|c| c.lsn >= next)
            .unwrap_or(batch.changes.len());
        self.next = batch.last_lsn().saturating_add(1);
        if skip == 0 {
            return Some(batch);
        }
        Some(Arc::new(CommittedBatch {
            changes: batch.changes.get(skip..).unwrap_or_default().to_vec(),
            from_log: false,
        }))
    }

    /// Step 5: starts reading the log from `next` up to the published LSN.
    fn start_catch_up(&mut self) -> Result<(), FeedError> {
        self.catch_up = None;
        let up_to = self.source.cell.load().lsn;
        if self.next <= up_to {
            let reader = WalReader::open_shared(
                Arc::clone(&self.source.storage),
                &self.source.wal_dir,
                self.next.saturating_sub(1),
                up_to,
            )?;
            self.catch_up = Some(CatchUp { reader, up_to });
        }
        self.must_catch_up = false;
        Ok(())
    }

    /// Up to [`MAX_CATCH_UP_CHANGES`] records from the log, and the rest of the commit
    /// unit (one write) the last of them belongs to. Changes read before a failure are
    /// delivered first; the failure comes with the next call, which reads again.
    fn read_log(&mut self) -> Result<Option<Arc<CommittedBatch>>, FeedError> {
        let Some(catch_up) = self.catch_up.as_mut() else {
            return Ok(None);
        };
        let mut changes: Vec<CommittedChange> = Vec::new();
        let mut failure: Option<FeedError> = None;
        let mut in_unit = false;
        while (changes.len() < MAX_CATCH_UP_CHANGES || in_unit) && self.next <= catch_up.up_to {
            match catch_up.reader.next() {
                Some(Ok(record)) if record.lsn == self.next => {
                    match changes_of(&record, self.source.replicated) {
                        Ok(read) => {
                            changes.extend(read);
                            in_unit = record.continues;
                            self.next += 1;
                        }
                        Err(problem) => {
                            failure = Some(FeedError::Decode {
                                lsn: record.lsn,
                                problem,
                            });
                            break;
                        }
                    }
                }
                // A record after `next`: the segments holding `next` are gone.
                Some(Ok(record)) => {
                    failure = Some(FeedError::SnapshotNeeded {
                        from_lsn: self.next,
                        oldest_available: record.lsn,
                    });
                    break;
                }
                Some(Err(e)) => {
                    failure = Some(FeedError::Wal(e));
                    break;
                }
                None => {
                    failure = Some(FeedError::LogEnded {
                        next: self.next,
                        committed: catch_up.up_to,
                    });
                    break;
                }
            }
        }
        if failure.is_some() || self.next > catch_up.up_to {
            self.catch_up = None;
        }
        if let Some(failure) = failure {
            self.must_catch_up = true;
            if changes.is_empty() {
                return Err(self.explain(failure));
            }
        }
        if changes.is_empty() {
            return Ok(None);
        }
        Ok(Some(Arc::new(CommittedBatch {
            changes,
            from_log: true,
        })))
    }

    /// A failed log read means [`FeedError::SnapshotNeeded`] when the oldest segment now
    /// starts after `next` (a snapshot removed segments, perhaps while they were being read).
    fn explain(&self, failure: FeedError) -> FeedError {
        match self.oldest_available() {
            Ok(oldest) if oldest > self.next => FeedError::SnapshotNeeded {
                from_lsn: self.next,
                oldest_available: oldest,
            },
            _ => failure,
        }
    }

    /// The oldest LSN the log can give: its oldest segment's first LSN (one past the
    /// published LSN when there is no segment).
    fn oldest_available(&self) -> Result<Lsn, FeedError> {
        let oldest = oldest_segment_lsn(&*self.source.storage, &self.source.wal_dir)?;
        Ok(oldest.unwrap_or_else(|| self.source.cell.load().lsn.saturating_add(1)))
    }
}

impl Drop for FeedSubscription {
    fn drop(&mut self) {
        self.hub.unregister(&self.slot);
    }
}

/// The changes a log record holds: its one change on a single server; in a cluster, the
/// changes of a batch's writes if the batch was applied (see [`crate::consensus::apply`]),
/// none for another entry.
fn changes_of(record: &Record, replicated: bool) -> Result<Vec<CommittedChange>, String> {
    if !replicated {
        let change = Change::decode(&record.payload).map_err(|e| e.to_string())?;
        return Ok(vec![CommittedChange {
            lsn: record.lsn,
            ends_write: !record.continues,
            change,
            states: None,
        }]);
    }
    let entry = ReplicatedEntry::decode(&record.payload).map_err(|e| e.to_string())?;
    let EntryBody::Write(batch) = entry.body else {
        return Ok(Vec::new());
    };
    if !batch.fits(record.lsn) {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for write in &batch.writes {
        crate::consensus::apply::feed_write(record.lsn, write, &mut out).map_err(|e| match e {
            crate::StoreError::Replay { problem, .. } => problem,
            other => other.to_string(),
        })?;
    }
    Ok(out)
}
