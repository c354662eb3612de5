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
        // changed something.
        let base = cell.load();
        let mut working: Version = (*base).clone();
        let mut batch_out = WriteBatch {
            expected_lsn: base.lsn + 1,
            writes: Vec::new(),
        };
        let mut finishers: Vec<(Finish, bool)> = Vec::with_capacity(batch.len());
        for job in batch {
            log.clear();
            let mut txn = WriteTxn {
                version: &mut working,
                log: &mut log,
                scratch: &mut scratch,
                changes: &mut kept,
                keep_changes: false,
            };
            let finish = job(Ok(&mut txn));
            let changed = !log.is_empty();
            if changed {
                batch_out.writes.push(log.drain(..).map(|r| r.payload).collect());
            }
            finishers.push((finish, changed));
        }
        if batch_out.writes.is_empty() {
            for (finish, _) in finishers {
                finish(Ok(()));
            }
            continue;
        }
        // Steps 3 and 4: proposed, committed, applied by every node (here too).
        let records = batch_out.writes.iter().map(|w| w.len() as u64).sum();
        *lock(&prepared) = Some(Prepared {
            leadership,
            lsn: batch_out.expected_lsn,
            base,
            working,
        });
        let handed = Instant::now();
        let result = replicator.replicate(batch_out);
        // Used by the apply path, or of no use any more.
        lock(&prepared).take();
        let nanos = u64::try_from(handed.elapsed().as_nanos()).unwrap_or(u64::MAX);
        stats.committed(finishers.len() as u64, records, nanos);
        for (finish, changed) in finishers {
            finish(match (&result, changed) {
                (_, false) | (Ok(_), true) => Ok(()),
                (Err(e), true) => Err(StoreError::Replication(e.clone())),
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
