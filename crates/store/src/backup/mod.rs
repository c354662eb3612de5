//! Online backup and restore: a copy of a data directory that restores to exactly the
//! state of one LSN, taken while the store serves.
//!
//! Why this shape: a snapshot alone is consistent but old by the time it is written (writes
//! go on meanwhile); the log alone is complete but unbounded. A backup is therefore a
//! snapshot at LSN *S* written from the version current when the backup starts (an old,
//! immutable version, so readers and the writer are never stopped), plus the log records
//! *S*+1..*E* up to an LSN *E* that was durable once the snapshot was written, cut at that
//! record boundary. Restoring loads the snapshot and replays the records, as every start
//! does.
//!
//! Taking one ([`crate::Store::backup`]), in steps:
//! 1. the target directory must be absolute and missing or empty ([`check_target`]);
//! 2. the log from *S*+1 on is pinned ([`pin`]): the store's own snapshots, which remove
//!    the segments they cover, leave it alone until the backup ends;
//! 3. the snapshot at *S* is written into `DIR/snapshots/` (temporary name, fsync, rename,
//!    directory fsync, as every snapshot), paced to [`take::BACKUP_DUTY_CYCLE`] of a core;
//! 4. *E* is read: the log's durable LSN (at least *S*);
//! 5. the segments holding *S*+1..*E* are copied into `DIR/wal/`, each cut after record *E*
//!    and checked record by record as it is read ([`take`]);
//! 6. the manifest ([`manifest`]) is written last: a temporary file, fsynced, renamed to
//!    `DIR/MANIFEST`, the directory fsynced. A backup without a manifest is incomplete and
//!    restore refuses it.
//!
//! Restoring ([`mod@restore`]) checks everything before it writes anything usable
//! ([`verify`]): the manifest's own checksum, every file's size and CRC32C, the snapshot's
//! own checks, and every log record (checksums, an unbroken LSN sequence from *S*+1 to
//! exactly *E*). Then it copies into an empty data directory, the log first and the
//! snapshot last, so the snapshot's rename is the moment the directory becomes a store.

pub mod files;
pub mod manifest;
pub mod pin;
pub mod restore;
pub mod take;
pub mod verify;

use std::io;
use std::path::{Path, PathBuf};

pub use manifest::{FileEntry, Manifest, MANIFEST_NAME};
pub use restore::{restore, RestoreReport};
pub use take::{BackupOptions, BackupReport};
pub use verify::verify_backup;

use crate::storage::{DirState, Storage};

/// What can go wrong taking, checking or restoring a backup. Every message names the
/// directory or file concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackupError {
    /// The directory to write (a backup's target, a restore's data directory) cannot be
    /// used: not absolute, not empty, not a directory.
    #[error("{}: {problem}", path.display())]
    Target {
        /// The directory.
        path: PathBuf,
        /// Why it cannot be used.
        problem: String,
    },
    /// A filesystem operation failed.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The backup has no manifest (it is incomplete: taking it stopped before the end) or
    /// its manifest is damaged.
    #[error("{}: {problem}", path.display())]
    Manifest {
        /// The manifest's path.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A file of the backup is missing or damaged.
    #[error("{}: {problem}", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The live store could not give what the backup needs (its snapshot or log failed).
    #[error("{0}")]
    Source(String),
}

impl BackupError {
    pub(crate) fn io<'p>(op: &'static str, path: &'p Path) -> impl FnOnce(io::Error) -> BackupError + 'p {
        move |source| BackupError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn damaged(path: &Path, problem: impl Into<String>) -> BackupError {
        BackupError::Damaged {
            path: path.to_path_buf(),
            problem: problem.into(),
        }
    }

    /// True when the request itself cannot be carried out as asked (a target that is not
    /// absolute or not empty), as opposed to a failure on the way.
    pub fn is_refusal(&self) -> bool {
        matches!(self, BackupError::Target { .. })
    }
}

/// Step 1: `dir` must be an absolute path naming nothing yet or an empty directory. `what`
/// says what the directory is for, in the message.
pub fn check_target(storage: &dyn Storage, dir: &Path, what: &str) -> Result<(), BackupError> {
    let refuse = |problem: String| BackupError::Target {
        path: dir.to_path_buf(),
        problem,
    };
    if !dir.is_absolute() {
        return Err(refuse(format!("the {what} must be an absolute path")));
    }
    match storage.dir_state(dir).map_err(BackupError::io("examine", dir))? {
        DirState::Missing | DirState::Empty => Ok(()),
        DirState::NotEmpty => Err(refuse(format!(
            "the {what} is not empty; nothing was written (name a new or empty directory)"
        ))),
        DirState::NotADirectory => Err(refuse(format!("the {what} exists and is not a directory"))),
    }
}
