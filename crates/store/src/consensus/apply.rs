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
use super::PreparedChain;
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
/// exactly the oldest of the leader's `prepared` ones, computed on the version it follows,
/// is not replayed: its computed version takes the place of `version`. An entry that
/// does not follow the version's LSN, or a change that does not apply, is an error: the
/// node's state no longer matches the log.
pub(crate) fn apply_entries<'e>(
    version: &mut Version,
    base: &Arc<Version>,
    entries: impl IntoIterator<Item = (Lsn, &'e ReplicatedEntry)>,
    prepared: &mut PreparedChain,
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
                        prepared.taken = None;
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

/// The leader's computed version, when the batch at `lsn` is the oldest of its prepared
/// ones and comes right after the version it was computed on: the version `base` when the
/// call started (the first entry the call applies), or the prepared version the chain gave
/// for the entry before. Prepared versions for this LSN or an earlier one are taken off the
/// chain either way: once the entry is applied they are of no use.
fn take_prepared(
    chain: &mut PreparedChain,
    base: &Arc<Version>,
    version: &Version,
    lsn: Lsn,
    entry: &ReplicatedEntry,
) -> Option<Version> {
    while chain.queue.front().is_some_and(|p| p.lsn < lsn) {
        chain.queue.pop_front();
    }
    if chain.queue.front()?.lsn != lsn {
        return None;
    }
    let p = chain.queue.pop_front()?;
    let follows = match &p.base {
        Some(b) => Arc::ptr_eq(b, base) && version.lsn == base.lsn,
        None => chain.taken == Some(version.lsn),
    };
    if !follows || p.leadership != entry.leadership || lsn != version.lsn + 1 {
        chain.taken = None;
        return None;
    }
    chain.taken = Some(lsn);
    chain.taken_total += 1;
    Some(p.working)
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
