//! Restoring a backup into an empty data directory.
//!
//! Steps:
//! 1. the data directory must be absolute and missing or empty: a restore never mixes a
//!    backup with a directory's own files;
//! 2. the whole backup is checked ([`super::verify`]) before anything is written;
//! 3. the log segments are copied into `DATA/wal/`, each copy's checksum compared with the
//!    manifest again (a file changed since step 2 is refused), fsynced, the directory
//!    fsynced;
//! 4. the snapshot is copied as `DATA/snapshots/snapshot-<S>.tmp`, compared, fsynced, and
//!    renamed to its `.snap` name, the directory fsynced: only now does the directory hold
//!    a store. Interrupted before, it holds a log that starts after LSN 1 with no snapshot,
//!    which the store refuses to open (records are missing), or nothing at all.
//!
//! The store opened on it then loads the snapshot at *S* and replays *S*+1..*E*: the state
//! at the backup's end LSN.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::files::{copy, create_dir, sync_dir};
use super::manifest::{FileEntry, Manifest, SNAPSHOT_SUBDIR, WAL_SUBDIR};
use super::verify::verify_backup;
use super::{check_target, BackupError};
use crate::snapshot::{snapshot_name, temp_name};
use crate::storage::Storage;

/// What a restore wrote.
#[derive(Debug, Clone)]
pub struct RestoreReport {
    /// The data directory.
    pub data: PathBuf,
    /// The backup's manifest.
    pub manifest: Manifest,
    /// How long checking and copying took.
    pub elapsed: Duration,
}

/// Restores the backup in `from` into `data` (see the module documentation).
pub fn restore(storage: &dyn Storage, from: &Path, data: &Path) -> Result<RestoreReport, BackupError> {
    let started = Instant::now();
    check_target(storage, data, "data directory")?;
    let manifest = verify_backup(storage, from)?;
    let snapshots = data.join(SNAPSHOT_SUBDIR);
    let wal = data.join(WAL_SUBDIR);
    for dir in [data, &snapshots, &wal] {
        create_dir(storage, dir)?;
    }
    for entry in manifest.segments() {
        let name = entry.path.strip_prefix("wal/").unwrap_or(&entry.path);
        copy_checked(storage, from, entry, &wal.join(name))?;
    }
    sync_dir(storage, &wal)?;
    if let Some(entry) = manifest.snapshot() {
        let tmp = snapshots.join(temp_name(manifest.snapshot_lsn));
        copy_checked(storage, from, entry, &tmp)?;
        let path = snapshots.join(snapshot_name(manifest.snapshot_lsn));
        storage
            .rename(&tmp, &path)
            .map_err(BackupError::io("rename", &tmp))?;
        sync_dir(storage, &snapshots)?;
    }
    sync_dir(storage, data)?;
    Ok(RestoreReport {
        data: data.to_path_buf(),
        manifest,
        elapsed: started.elapsed(),
    })
}

/// Copies one listed file to `to` and compares what was copied with the manifest.
fn copy_checked(storage: &dyn Storage, from: &Path, entry: &FileEntry, to: &Path) -> Result<(), BackupError> {
    let source = from.join(&entry.path);
    let (size, crc) = copy(storage, &source, to)?;
    if size != entry.size || crc != entry.crc32c {
        return Err(BackupError::damaged(
            &source,
            "changed while it was restored (size or CRC32C no longer as the manifest says); empty the data directory and restore again",
        ));
    }
    Ok(())
}
