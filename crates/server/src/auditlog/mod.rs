//! The audit log: every change the directory commits, in commit order, as an RFC 2849 LDIF
//! change record preceded by comments (`# lsn:`, `# csn:`, `# modifiersName:`, `# time:`),
//! so that `ldapmodify -f` replays it into another server. Off by default
//! (`[audit_log] enabled = true`).
//!
//! How a change gets to the file:
//! 1. [`AuditLog::start`] opens the file and subscribes to the store's change feed from the
//!    current version ([`larch_store::Store::subscribe_at_current`]), then starts the log's
//!    thread (`writer`). The feed gives what the store committed and nothing else: a
//!    refused operation never reaches the log, and the changes come in commit order, each
//!    with its LSN. The writer never waits for the log: a log that falls behind reads the
//!    write-ahead log's segments, and one that falls behind a snapshot that removed them
//!    notes the changes it skipped (`writer`).
//! 2. A modify record is the difference from the entry's previous state. The feed hands
//!    each change the store's writer delivered over with the entry's stored records before
//!    and after it ([`larch_store::EntryStates`]), so the thread reads both by attribute
//!    type, with no schema lookup and no decoding. A change the feed reads back from the
//!    write-ahead log (the thread fell behind) holds only the attributes after it, by name:
//!    its previous state comes from a version of the directory the thread keeps, brought
//!    up to date with the changes since only when such a change comes (`previous`,
//!    `writer`).
//! 3. Each change becomes text (`record`; renames in `modrdn`, attributes in `attrs`), and
//!    each batch of changes is appended to the file in one write (the access log's
//!    [`crate::accesslog::file::LogFile`]: rotation by size and age, retention, reopening
//!    by name on SIGHUP). A rotated file always ends with a whole record.
//!
//! Where it starts: with the changes after the directory's LSN when the server starts,
//! after the server created its suffix and admin entries (a fresh server makes its own, so
//! a replay does not collide with them). The log does not look for the last LSN in an
//! existing file (that would mean reading a file of up to `max_size_mb` at every start);
//! instead each start writes `# audit log started: <time>, with the changes after lsn N`,
//! so a gap (changes committed but not yet written when the server was killed) shows
//! as the difference between the last `# lsn:` before that line and `N`. At a clean
//! shutdown [`AuditLog::close`] writes every change committed before it.
//!
//! Durability: the file is written (not synced) batch by batch, and synced at close and
//! at rotation; the write-ahead log, not the audit log, is what makes a change durable.

mod attrs;
mod direct;
mod modrdn;
pub mod previous;
mod record;
mod text;
pub mod writer;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use larch_model::schema::Schema;
use larch_store::storage::Storage;
use larch_store::wal::Lsn;
use larch_store::Store;

use crate::accesslog::file::{LogFile, Rotation};
use crate::config::AuditLogSettings;
use writer::{Shared, Writer};

/// What the audit log has done, for monitoring and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditLogStats {
    /// Committed changes written to the file (a rename written as a modrdn and a modify
    /// record counts once).
    pub records_written: u64,
    /// Committed changes not in the file because the change feed could not deliver them
    /// (the log segments holding them were removed); each run is noted in the file.
    pub changes_skipped: u64,
    /// Committed changes whose records were lost because a write to the file failed.
    pub records_lost: u64,
    /// Writes to the file that failed.
    pub write_errors: u64,
}

/// A running audit log (see the module documentation).
#[derive(Debug)]
pub struct AuditLog {
    shared: Arc<Shared>,
    store: Store,
    path: PathBuf,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl AuditLog {
    /// Opens the log file at `path` through `storage`, subscribes to `store`'s change feed
    /// from its current version, and starts the log's thread. `schema` is the store's.
    pub fn start(
        settings: &AuditLogSettings,
        path: PathBuf,
        storage: Arc<dyn Storage>,
        store: &Store,
        schema: Arc<Schema>,
    ) -> io::Result<Arc<AuditLog>> {
        let rotation = Rotation {
            max_size: settings.max_size,
            every: settings.rotate_every,
            keep: settings.keep,
        };
        let file = LogFile::open(storage, path.clone(), rotation)?;
        let (base, sub) = store
            .subscribe_at_current()
            .map_err(|e| io::Error::other(format!("cannot follow the store's changes: {e}")))?;
        let shared = Arc::new(Shared::new(base.lsn()));
        let writer = Writer::new(store.clone(), schema, file, Arc::clone(&shared), base, sub);
        let thread = std::thread::Builder::new()
            .name("larch-audit-log".into())
            .spawn(move || writer.run())?;
        Ok(Arc::new(AuditLog {
            shared,
            store: store.clone(),
            path,
            thread: Mutex::new(Some(thread)),
        }))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Asks the thread to reopen the file by name before its next write (SIGHUP, after
    /// logrotate moved the file).
    pub fn reopen(&self) {
        self.shared.reopen.store(true, Ordering::Release);
    }

    /// The LSN of the last change written to the file (or noted as skipped).
    pub fn last_lsn(&self) -> Lsn {
        self.shared.handled.load(Ordering::Acquire)
    }

    /// Writes every change committed so far (writes queued before the call included: it
    /// waits for the store's writer to finish them), then stops the thread and syncs the
    /// file. Changes committed later are not written. After the store is closed, writes
    /// every change the store committed.
    pub fn close(&self) {
        let mut thread = self.thread.lock().unwrap_or_else(|e| e.into_inner());
        let Some(handle) = thread.take() else { return };
        // A write that changes nothing returns once every job queued before it is
        // published (or at once, with an error, when the store is closed).
        let _ = self.store.write(|_| ());
        self.shared
            .stop_at
            .store(self.store.current().lsn(), Ordering::Release);
        let _ = handle.join();
    }

    /// What the log has done so far.
    pub fn stats(&self) -> AuditLogStats {
        let s = &self.shared;
        AuditLogStats {
            records_written: s.records_written.load(Ordering::Relaxed),
            changes_skipped: s.changes_skipped.load(Ordering::Relaxed),
            records_lost: s.records_lost.load(Ordering::Relaxed),
            write_errors: s.write_errors.load(Ordering::Relaxed),
        }
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        self.close();
    }
}
