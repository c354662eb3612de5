//! The writer thread of a replicated store (steps 1 to 4 of [`super`]).

use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::{Prepared, ReplicateError, ReplicatorSlot, WriteBatch};
use crate::error::StoreError;
use crate::stats::StoreStats;
use crate::txn::WriteTxn;
use crate::version::Version;
use crate::version_cell::VersionCell;
use crate::wal::{Lsn, MAX_RECORD_PAYLOAD};
use crate::writer::{next_batch, Finish, Job};

/// The writer loop; returns when every sender is gone.
pub(crate) fn run(
    jobs: Receiver<Job>,
    cell: Arc<VersionCell<Version>>,
    slot: ReplicatorSlot,
    prepared: Arc<Mutex<Option<Prepared>>>,
    stats: Arc<StoreStats>,
) {
    let mut log = Vec::new();
    let mut kept = Vec::new();
    let mut scratch: Vec<u8> = Vec::with_capacity(1024);
    loop {
        let Some(batch) = next_batch(&jobs) else {
            return;
        };
        let Some(replicator) = slot.get() else {
            refuse(
                batch,
                &ReplicateError::Unavailable("the cluster is not started".into()),
            );
            continue;
        };
        let leadership = match replicator.ready() {
            Ok(l) => l,
            Err(e) => {
                refuse(batch, &e);
                continue;
            }
        };
        // Step 2: the batch on a copy of the newest version, one write per job that
        // changed something, cut into entries of at most MAX_ENTRY_WRITE_OCTETS.
        let base = cell.load();
        let mut run = Run::new(base.lsn + 1);
        let mut working: Version = (*base).clone();
        for job in batch {
            let before = working.clone();
            log.clear();
            let mut txn = WriteTxn {
                version: &mut working,
                log: &mut log,
                scratch: &mut scratch,
                changes: &mut kept,
                keep_changes: false,
            };
            let finish = job(Ok(&mut txn));
            let write: Vec<Vec<u8>> = log.drain(..).map(|r| r.payload).collect();
            if write_octets(&write) > MAX_ENTRY_WRITE_OCTETS {
                // Too large for any entry: undone, refused as a single server refuses a
                // change too large for a log record.
                working = before;
                let len = write_octets(&write);
                run.finishers
                    .push((finish, Outcome::Refused(StoreError::TooLarge { len })));
                continue;
            }
            run.add(finish, write, &before);
        }
        if run.entries.iter().all(|e| e.writes.is_empty()) {
            run.finish_all(&[]);
            continue;
        }
        // Steps 3 and 4: proposed one after another, each committed and applied by every
        // node (here too) before the next; the first with the writer's version prepared.
        let records = run
            .entries
            .iter()
            .flat_map(|e| &e.writes)
            .map(|w| w.len() as u64)
            .sum();
        let jobs_count = run.finishers.len() as u64;
        let first_done = run.first_done.take().unwrap_or(working);
        let handed = Instant::now();
        let mut results: Vec<Result<Lsn, ReplicateError>> = Vec::with_capacity(run.entries.len());
        for (i, entry) in std::mem::take(&mut run.entries).into_iter().enumerate() {
            if let Some(Err(_)) = results.last() {
                // Computed on an entry that was not applied: never proposed.
                results.push(Err(ReplicateError::Superseded));
                continue;
            }
            if i == 0 {
                *lock(&prepared) = Some(Prepared {
                    leadership,
                    lsn: entry.expected_lsn,
                    base: Arc::clone(&base),
                    working: first_done.clone(),
                });
            }
            results.push(replicator.replicate(entry));
            // Used by the apply path, or of no use any more.
            lock(&prepared).take();
        }
        let nanos = u64::try_from(handed.elapsed().as_nanos()).unwrap_or(u64::MAX);
        stats.committed(jobs_count, records, nanos);
        run.finish_all(&results);
    }
}

/// The largest write (its changes, as an entry holds them) a batch entry takes: a WAL
/// record's limit, less room for the entry's own fields.
pub const MAX_ENTRY_WRITE_OCTETS: usize = MAX_RECORD_PAYLOAD - (64 << 10);

/// Octets `write` takes in an entry.
fn write_octets(write: &[Vec<u8>]) -> usize {
    4 + write.iter().map(|c| 4 + c.len()).sum::<usize>()
}

/// How a job ends once its entry is settled.
enum Outcome {
    /// It changed nothing.
    Unchanged,
    /// Its write is in entry `i` of the run.
    In(usize),
    /// It was refused before it was proposed.
    Refused(StoreError),
}

/// One batch of jobs cut into entries.
struct Run {
    entries: Vec<WriteBatch>,
    /// Octets of the last entry's writes.
    octets: usize,
    finishers: Vec<(Finish, Outcome)>,
    /// The version after the first entry's writes, once a second entry starts.
    first_done: Option<Version>,
}

impl Run {
    fn new(expected_lsn: Lsn) -> Run {
        Run {
            entries: vec![WriteBatch {
                expected_lsn,
                writes: Vec::new(),
            }],
            octets: 0,
            finishers: Vec::new(),
            first_done: None,
        }
    }

    /// Adds a job's write (empty: it changed nothing); a write that does not fit the
    /// current entry starts the next one, to land right after it. `before` is the version
    /// before the write.
    fn add(&mut self, finish: Finish, write: Vec<Vec<u8>>, before: &Version) {
        if write.is_empty() {
            self.finishers.push((finish, Outcome::Unchanged));
            return;
        }
        let size = write_octets(&write);
        let current_lsn = self.entries.last().map_or(0, |e| e.expected_lsn);
        if self.octets + size > MAX_ENTRY_WRITE_OCTETS {
            if self.entries.len() == 1 {
                self.first_done = Some(before.clone());
            }
            self.entries.push(WriteBatch {
                expected_lsn: current_lsn + 1,
                writes: Vec::new(),
            });
            self.octets = 0;
        }
        self.octets += size;
        let i = self.entries.len() - 1;
        if let Some(entry) = self.entries.last_mut() {
            entry.writes.push(write);
        }
        self.finishers.push((finish, Outcome::In(i)));
    }

    /// Reports each job's result: `results` has one per entry.
    fn finish_all(self, results: &[Result<Lsn, ReplicateError>]) {
        for (finish, outcome) in self.finishers {
            finish(match outcome {
                Outcome::Unchanged => Ok(()),
                Outcome::Refused(e) => Err(e),
                Outcome::In(i) => match results.get(i) {
                    Some(Ok(_)) => Ok(()),
                    Some(Err(e)) => Err(StoreError::Replication(e.clone())),
                    None => Err(StoreError::Replication(ReplicateError::Superseded)),
                },
            });
        }
    }
}

/// Fails every job of a batch that cannot be written here.
fn refuse(batch: Vec<Job>, why: &ReplicateError) {
    for job in batch {
        let e = || StoreError::Replication(why.clone());
        job(Err(e()))(Err(e()));
    }
}

/// The prepared slot; its holders never leave it half written.
pub(crate) fn lock(prepared: &Mutex<Option<Prepared>>) -> MutexGuard<'_, Option<Prepared>> {
    prepared.lock().unwrap_or_else(|e| e.into_inner())
}
