//! The single writer thread: batches of write closures, one log wait and one publication
//! per batch.
//!
//! Protocol, in steps:
//! 1. [`crate::Store::submit`] queues a job on a bounded channel
//!    ([`MAX_QUEUED_WRITES`]; a full queue makes submitters wait, which is the back pressure
//!    on clients that write faster than the disk syncs).
//! 2. The writer takes every queued job (at most [`MAX_BATCH`]), clones the current version
//!    (its roots only) and runs the jobs one after another on the clone through a
//!    [`WriteTxn`]; each change is applied copy-on-write and encoded as a log record. Nodes
//!    copied once in a batch are owned by the clone, so later jobs change them in place.
//!    The records of one job form one commit unit of the log (every record but its last
//!    marked as continuing), so a crash never leaves part of a job in the log: a subtree
//!    delete, or a write whose hooks changed other entries, is replayed whole or not at
//!    all.
//! 3. It hands all records of the batch to the log and waits for the last one: the log's
//!    group commit makes one fsync cover the whole batch (and jobs queued meanwhile form the
//!    next batch).
//! 4. Once the records are acknowledged, it publishes the new version (readers see all of
//!    the batch or none of it), hands the batch's changes to the change feed's subscribers
//!    ([`crate::feed`]: a non-blocking push into each one's bounded queue; with no
//!    subscriber, nothing is kept or copied), then reports each job's result.
//! 5. If the log fails, the batch's version is dropped, jobs that changed something get
//!    [`StoreError::Failed`], and every later job too, with the same [`WriteHalt`] (the
//!    store's health, [`crate::health`]): a log that failed an fsync cannot be trusted
//!    again until the store is reopened (recovery then decides what survived). The log
//!    has taken the batch's records out again, so none of it is replayed after a restart.
//!
//! Nothing is visible to readers, and no result is reported, before its record is
//! acknowledged (durable under `sync = always`).

use std::sync::mpsc::{Receiver, RecvError, TryRecvError};
use std::sync::Arc;
use std::time::Instant;

use crate::error::StoreError;
use crate::feed::{EntryStates, FeedHub};
use crate::health::{Health, WriteHalt};
use crate::stats::StoreStats;
use crate::txn::WriteTxn;
use crate::version::Version;
use crate::version_cell::VersionCell;
use crate::wal::record::Change;
use crate::wal::{LogRecord, Lsn, Wal};

/// Jobs waiting for the writer before submitters block.
pub const MAX_QUEUED_WRITES: usize = 4096;

/// Jobs in one batch (one log wait, one publication).
pub const MAX_BATCH: usize = 1024;

/// Reports a job's result once its batch is durable (or failed).
pub(crate) type Finish = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

/// A write job: runs on the writer thread with the transaction, or with the error that
/// stops the store, and returns what to call when its batch is settled.
pub(crate) type Job = Box<dyn FnOnce(Result<&mut WriteTxn<'_>, StoreError>) -> Finish + Send>;

/// Tells the feed's subscribers that the writer stopped, however it stops.
struct CloseFeed(Arc<FeedHub>);

impl Drop for CloseFeed {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The writer loop; returns when every sender is gone.
pub(crate) fn run(
    jobs: Receiver<Job>,
    cell: Arc<VersionCell<Version>>,
    wal: Arc<Wal>,
    feed: Arc<FeedHub>,
    health: Arc<Health>,
    stats: Arc<StoreStats>,
) {
    let feed = CloseFeed(feed);
    let mut current = cell.load();
    let mut failed: Option<Arc<WriteHalt>> = None;
    let mut log: Vec<LogRecord> = Vec::new();
    // The batch's changes and the entries' states for the feed, kept only while it has
    // subscribers.
    let mut kept: Vec<(Change, EntryStates)> = Vec::new();
    let mut scratch: Vec<u8> = Vec::with_capacity(1024);
    loop {
        let Some(batch) = next_batch(&jobs) else {
            return;
        };
        // A halt met by this thread, or by the log's own thread between batches (a late
        // fsync under `sync = batch`).
        if let Some(halt) = failed.clone().or_else(|| health.write_halt()) {
            for job in batch {
                job(Err(StoreError::Failed(Arc::clone(&halt))))(Err(StoreError::Failed(Arc::clone(&halt))));
            }
            continue;
        }
        let mut working: Version = (*current).clone();
        let mut finishers: Vec<(Finish, bool)> = Vec::with_capacity(batch.len());
        log.clear();
        kept.clear();
        let keep_changes = feed.0.has_subscribers();
        for job in batch {
            let before = log.len();
            let mut txn = WriteTxn {
                version: &mut working,
                log: &mut log,
                scratch: &mut scratch,
                changes: &mut kept,
                keep_changes,
            };
            let finish = job(Ok(&mut txn));
            mark_unit(log.get_mut(before..).unwrap_or_default());
            finishers.push((finish, log.len() > before));
        }
        if log.is_empty() {
            for (finish, _) in finishers {
                finish(Ok(()));
            }
            continue;
        }
        let logged = log.len();
        // Where each write ends, for the feed's subscribers (the log takes the records).
        let ends: Vec<bool> = if keep_changes {
            log.iter().map(|r| !r.continues).collect()
        } else {
            Vec::new()
        };
        let handed = Instant::now();
        match log_batch(&wal, &mut log) {
            Ok((first, last)) => {
                let nanos = u64::try_from(handed.elapsed().as_nanos()).unwrap_or(u64::MAX);
                stats.committed(finishers.len() as u64, logged as u64, nanos);
                working.lsn = last;
                let next = Arc::new(working);
                cell.publish(Arc::clone(&next));
                current = next;
                feed.0.deliver(first, logged, &mut kept, &ends);
                for (finish, _) in finishers {
                    finish(Ok(()));
                }
            }
            Err(e) => {
                kept.clear();
                // The log has recorded the halt already (its failure hook); an error of
                // another kind (no LSN left) becomes the halt here.
                let halt = health.halt(halt_of(&e));
                failed = Some(Arc::clone(&halt));
                for (finish, changed) in finishers {
                    finish(if changed {
                        Err(StoreError::Failed(Arc::clone(&halt)))
                    } else {
                        Ok(())
                    });
                }
            }
        }
    }
}

/// Step 2's first half: waits for a job, then takes every job queued behind it, up to
/// [`MAX_BATCH`]; `None` once every sender is gone.
pub(crate) fn next_batch(jobs: &Receiver<Job>) -> Option<Vec<Job>> {
    let first = match jobs.recv() {
        Ok(job) => job,
        Err(RecvError) => return None,
    };
    let mut batch = vec![first];
    while batch.len() < MAX_BATCH {
        match jobs.try_recv() {
            Ok(job) => batch.push(job),
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
        }
    }
    Some(batch)
}

/// Makes one job's records one commit unit: each continues but the last.
fn mark_unit(records: &mut [LogRecord]) {
    let Some((_, rest)) = records.split_last_mut() else {
        return;
    };
    for record in rest {
        record.continues = true;
    }
}

/// Hands the records to the log at once and waits for the last; returns the first and
/// last LSNs (consecutive: this thread is the log's only writer).
fn log_batch(wal: &Wal, log: &mut Vec<LogRecord>) -> Result<(Lsn, Lsn), StoreError> {
    let Some((first, last)) = wal.submit_batch(std::mem::take(log))? else {
        return Err(StoreError::Closed);
    };
    wal.wait_for(last)?;
    Ok((first, last))
}

/// The halt a failed batch means, when the log did not record one itself.
fn halt_of(e: &StoreError) -> WriteHalt {
    match e {
        StoreError::Wal(w) => WriteHalt::from_wal(w),
        StoreError::Failed(h) => (**h).clone(),
        other => WriteHalt::from_wal(&crate::wal::WalError::Failed(other.to_string())),
    }
}
