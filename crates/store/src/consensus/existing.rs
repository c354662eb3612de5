//! Existing data as a cluster's starting point: what a data directory holds, told from its
//! files before the store opens ([`inspect`]), and a single server's data converted into a
//! cluster node's ([`Store::convert_to_replicated`](crate::Store::convert_to_replicated)).
//!
//! A single server's data directory (its own, a `larch restore`d backup, or `larch
//! import`'s output) has snapshots whose header carries no consensus section and a log of
//! `Change` records (docs/formats.md); a cluster node's newest snapshot carries the
//! section, and its log holds replicated entries only (converting starts the log again).
//! The two payloads cannot be mistaken for each other: a `Change` opens with a BER tag
//! (`a0` to `a3`), a replicated entry with its kind (0 to 2).
//!
//! Only the newest snapshot's header and the log's first record are read: a directory is
//! either wholly a single server's or wholly a cluster node's, and reading the whole log
//! would cost a replay.

use std::io;
use std::path::Path;

use crate::error::StoreError;
use crate::load::split_extra;
use crate::snapshot::{self, SnapshotError};
use crate::storage::Storage;
use crate::wal::record::Change;
use crate::wal::{Lsn, WalReader};

/// What a data directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataKind {
    /// Nothing: no entry in a snapshot, no log record.
    Empty,
    /// A single server's data: a log of `Change` records, or none and a newest snapshot
    /// with entries and without a consensus section; `lsn` is the newest snapshot's (the
    /// log may reach further).
    SingleServer {
        /// The newest snapshot's LSN (0 without one).
        lsn: Lsn,
    },
    /// A cluster node's data: its newest snapshot carries a consensus section, or its log
    /// holds replicated entries.
    Replicated,
}

/// What the data directory `dir` on `storage` holds (see the module documentation).
pub fn inspect(storage: &dyn Storage, dir: &Path) -> Result<DataKind, StoreError> {
    let newest = newest_snapshot(storage, &dir.join("snapshots"))?;
    let lsn = newest.map_or(0, |s| s.lsn);
    // A log of `Change` records is a single server's even after a consensus section: a
    // converted directory served by a single server again.
    match first_record_is_change(storage, &dir.join("wal"))? {
        Some(true) => return Ok(DataKind::SingleServer { lsn }),
        Some(false) => return Ok(DataKind::Replicated),
        None => {}
    }
    Ok(match newest {
        Some(s) if s.replicated => DataKind::Replicated,
        // `larch import`'s output holds its entries at LSN 0.
        Some(s) if s.lsn > 0 || s.entries > 0 => DataKind::SingleServer { lsn },
        _ => DataKind::Empty,
    })
}

/// What a snapshot's header says.
#[derive(Debug, Clone, Copy)]
struct Newest {
    lsn: Lsn,
    entries: u64,
    /// Whether it carries a consensus section.
    replicated: bool,
}

/// The newest snapshot in `dir`, `None` when there is none (or no directory).
fn newest_snapshot(storage: &dyn Storage, dir: &Path) -> Result<Option<Newest>, StoreError> {
    let listed = match snapshot::list_snapshots(storage, dir) {
        Ok(listed) => listed,
        Err(SnapshotError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let Some((lsn, path)) = listed.into_iter().next() else {
        return Ok(None);
    };
    let meta = snapshot::read_meta(storage, &path)?;
    let (_, consensus) = split_extra(&meta.extra).map_err(|problem| StoreError::CorruptSnapshot {
        path: path.clone(),
        problem,
    })?;
    Ok(Some(Newest {
        lsn,
        entries: meta.entry_count,
        replicated: consensus.is_some(),
    }))
}

/// Whether the log's first record in `dir` is a single server's `Change`; `None` when the
/// log holds no record (or there is no directory).
fn first_record_is_change(storage: &dyn Storage, dir: &Path) -> Result<Option<bool>, StoreError> {
    match storage.list(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(StoreError::Io {
                op: "list",
                path: dir.to_path_buf(),
                source: e,
            })
        }
        Ok(_) => {}
    }
    // A first record that does not read (torn by a crash) is left to the store's opening,
    // which cuts or reports it.
    let Some(Ok(first)) = WalReader::open(storage, dir, 0, Lsn::MAX)?.next() else {
        return Ok(None);
    };
    Ok(Some(Change::decode(&first.payload).is_ok()))
}
