//! What the store tells monitoring about its own work: commits (batches, jobs, log records,
//! time to durability) and snapshots (the last one's LSN, size, time and duration).
//!
//! The writer thread is the only one that writes the commit counters (a load and a store
//! each, no read-modify-write); snapshots are recorded by whichever thread wrote them,
//! under a lock taken once per snapshot. Readers ([`crate::Store::stats`]) load them
//! without stopping anything.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::wal::Lsn;

/// The last snapshot written or loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotRecord {
    /// The LSN it covers.
    pub lsn: Lsn,
    /// Its size in octets (for the snapshot loaded at start, from the file system; 0 where
    /// that has none).
    pub bytes: u64,
    /// Entries it holds.
    pub entries: u64,
    /// When it was complete (for the one loaded at start: the file's modification time,
    /// the Unix epoch where the file system has none).
    pub finished: SystemTime,
    /// How long writing it took (zero for the one loaded at start).
    pub duration: Duration,
    /// True for the snapshot loaded at start.
    pub loaded: bool,
}

/// The store's counters.
#[derive(Debug, Default)]
pub(crate) struct StoreStats {
    batches: AtomicU64,
    jobs: AtomicU64,
    records: AtomicU64,
    commit_nanos: AtomicU64,
    commit_max_nanos: AtomicU64,
    largest_batch: AtomicU64,
    proposed_ahead: AtomicU64,
    snapshots: AtomicU64,
    last_snapshot: Mutex<Option<SnapshotRecord>>,
}

/// The store's counters read at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreStatsView {
    /// Batches committed (each one log wait, one fsync under `sync = "always"`).
    pub batches: u64,
    /// Write jobs in those batches.
    pub jobs: u64,
    /// Log records written.
    pub records: u64,
    /// Time from handing a batch to the log to its durability, summed.
    pub commit_time: Duration,
    /// The longest such time.
    pub commit_max: Duration,
    /// The most jobs one batch held.
    pub largest_batch: u64,
    /// Batches a cluster leader's writer proposed while one of its earlier batches was
    /// still being replicated.
    pub proposed_ahead: u64,
    /// Snapshots written since the store opened.
    pub snapshots: u64,
    /// The last snapshot written since the store opened, or the one it loaded.
    pub last_snapshot: Option<SnapshotRecord>,
}

fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

impl StoreStats {
    /// A batch of `jobs` jobs and `records` records became durable `nanos` after it was
    /// handed to the log. One thread only: the writer, or a replicated store's settler.
    pub(crate) fn committed(&self, jobs: u64, records: u64, nanos: u64) {
        bump(&self.batches, 1);
        bump(&self.jobs, jobs);
        bump(&self.records, records);
        bump(&self.commit_nanos, nanos);
        if nanos > self.commit_max_nanos.load(Ordering::Relaxed) {
            self.commit_max_nanos.store(nanos, Ordering::Relaxed);
        }
        if jobs > self.largest_batch.load(Ordering::Relaxed) {
            self.largest_batch.store(jobs, Ordering::Relaxed);
        }
    }

    /// A cluster leader's writer proposed a batch while an earlier one was in flight. Its
    /// writer thread only.
    pub(crate) fn proposed_ahead(&self) {
        bump(&self.proposed_ahead, 1);
    }

    /// A snapshot was written, or loaded at start.
    pub(crate) fn snapshot(&self, record: SnapshotRecord) {
        let mut last = self.last_snapshot.lock().unwrap_or_else(|e| e.into_inner());
        if !record.loaded {
            self.snapshots.fetch_add(1, Ordering::Relaxed);
        }
        if last.is_none_or(|l| l.lsn <= record.lsn) {
            *last = Some(record);
        }
    }

    pub(crate) fn view(&self) -> StoreStatsView {
        StoreStatsView {
            batches: self.batches.load(Ordering::Relaxed),
            jobs: self.jobs.load(Ordering::Relaxed),
            records: self.records.load(Ordering::Relaxed),
            commit_time: Duration::from_nanos(self.commit_nanos.load(Ordering::Relaxed)),
            commit_max: Duration::from_nanos(self.commit_max_nanos.load(Ordering::Relaxed)),
            largest_batch: self.largest_batch.load(Ordering::Relaxed),
            proposed_ahead: self.proposed_ahead.load(Ordering::Relaxed),
            snapshots: self.snapshots.load(Ordering::Relaxed),
            last_snapshot: *self.last_snapshot.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_add_up_and_the_newest_snapshot_is_kept() {
        let s = StoreStats::default();
        s.committed(3, 4, 1_000);
        s.committed(1, 1, 5_000);
        let at = |lsn, loaded| SnapshotRecord {
            lsn,
            bytes: 10,
            entries: 2,
            finished: SystemTime::UNIX_EPOCH,
            duration: Duration::ZERO,
            loaded,
        };
        s.snapshot(at(10, true));
        s.snapshot(at(20, false));
        s.snapshot(at(15, false));
        let v = s.view();
        assert_eq!((v.batches, v.jobs, v.records, v.largest_batch), (2, 4, 5, 3));
        assert_eq!(v.commit_time, Duration::from_nanos(6_000));
        assert_eq!(v.commit_max, Duration::from_nanos(5_000));
        assert_eq!(v.snapshots, 2);
        assert_eq!(v.last_snapshot.map(|r| r.lsn), Some(20));
    }
}
