//! Applying committed entries of the replicated log to a version (step 4 of [`super`]).
//!
//! Every node applies every committed entry, in log order, the same way: a blank or
//! membership entry moves the version's LSN on and changes nothing; a batch of writes that
//! landed where it was computed to land ([`WriteBatch::fits`]) applies every change of
//! every write, as replay does at a single server's start; one that did not is skipped. An entry at or below the
//! version's LSN is already in it (the engine may hand entries again after a restart)
//! and is skipped too.

#[cfg(doc)]
use super::entry::WriteBatch;
use std::sync::Arc;

use super::entry::{EntryBody, ReplicatedEntry};
use super::Prepared;
use crate::error::StoreError;
use crate::feed::CommittedChange;
use crate::txn::apply_change;
use crate::version::Version;
use crate::wal::record::Change;
use crate::wal::Lsn;

/// What applying an entry did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The entry changed no entry (a blank or membership entry).
    Nothing,
    /// The batch's writes were applied.
    Write,
    /// The batch landed elsewhere than it was computed for, and was skipped.
    Superseded,
    /// The version already held the entry.
    Already,
}

/// Applies `entries` (each with its LSN, in order) to `version`, a copy of `base`; the
/// changes applied are appended to `feed` when `keep_feed`, each with its entry's LSN (a
/// batch's changes share it; the last change of each write ends the write). A batch that is
/// exactly the leader's `prepared` one, first after `base`, is not replayed: its
/// computed version takes the place of `version` (`prepared` is then taken). An entry that
/// does not follow the version's LSN, or a change that does not apply, is an error: the
/// node's state no longer matches the log.
pub(crate) fn apply_entries<'e>(
    version: &mut Version,
    base: &Arc<Version>,
    entries: impl IntoIterator<Item = (Lsn, &'e ReplicatedEntry)>,
    prepared: &mut Option<Prepared>,
    scratch: &mut Vec<u8>,
    feed: &mut Option<Vec<CommittedChange>>,
) -> Result<Vec<Applied>, StoreError> {
    let mut done = Vec::new();
    for (lsn, entry) in entries {
        if lsn <= version.lsn {
            done.push(Applied::Already);
            continue;
        }
        if lsn != version.lsn + 1 {
            return Err(StoreError::Replay {
                lsn,
                problem: format!("the entry does not follow LSN {}, the last applied", version.lsn),
            });
        }
        let applied = match &entry.body {
            EntryBody::Blank | EntryBody::Membership(_) => Applied::Nothing,
            EntryBody::Write(batch) if !batch.fits(lsn) => Applied::Superseded,
            EntryBody::Write(batch) => {
                match take_prepared(prepared, base, version, lsn, entry) {
                    Some(computed) => {
                        *version = computed;
                        if let Some(feed) = feed {
                            for write in &batch.writes {
                                feed_write(lsn, write, feed)?;
                            }
                        }
                    }
                    None => {
                        for write in &batch.writes {
                            apply_write(version, lsn, write, scratch, feed)?;
                        }
                    }
                }
                Applied::Write
            }
        };
        version.lsn = lsn;
        done.push(applied);
    }
    Ok(done)
}

/// The leader's computed version, when the batch at `lsn` is its prepared one and comes
/// first after the version it was computed on.
fn take_prepared(
    prepared: &mut Option<Prepared>,
    base: &Arc<Version>,
    version: &Version,
    lsn: Lsn,
    entry: &ReplicatedEntry,
) -> Option<Version> {
    let p = prepared.as_ref()?;
    let same = p.lsn == lsn
        && p.leadership == entry.leadership
        && Arc::ptr_eq(&p.base, base)
        && version.lsn == base.lsn
        && lsn == base.lsn + 1;
    if !same {
        return None;
    }
    prepared.take().map(|p| p.working)
}

/// One write of a batch at `lsn`: its changes applied in order, each handed to `feed`.
fn apply_write(
    version: &mut Version,
    lsn: Lsn,
    write: &[Vec<u8>],
    scratch: &mut Vec<u8>,
    feed: &mut Option<Vec<CommittedChange>>,
) -> Result<(), StoreError> {
    for (i, payload) in write.iter().enumerate() {
        let change = decode(lsn, payload)?;
        apply_change(version, &change, scratch).map_err(|problem| StoreError::Replay { lsn, problem })?;
        if let Some(feed) = feed {
            feed.push(CommittedChange {
                lsn,
                ends_write: i + 1 == write.len(),
                change,
                states: None,
            });
        }
    }
    Ok(())
}

/// One write of a batch at `lsn` handed to `feed` without applying it (also what the
/// change feed reads back from the log).
pub(crate) fn feed_write(
    lsn: Lsn,
    write: &[Vec<u8>],
    feed: &mut Vec<CommittedChange>,
) -> Result<(), StoreError> {
    for (i, payload) in write.iter().enumerate() {
        feed.push(CommittedChange {
            lsn,
            ends_write: i + 1 == write.len(),
            change: decode(lsn, payload)?,
            states: None,
        });
    }
    Ok(())
}

fn decode(lsn: Lsn, payload: &[u8]) -> Result<Change, StoreError> {
    Change::decode(payload).map_err(|e| StoreError::Replay {
        lsn,
        problem: e.to_string(),
    })
}
