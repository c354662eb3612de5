//! The store's health — whether it accepts writes, how its snapshots fare — and the
//! events it reports to whoever opened it.
//!
//! The store writes no log of its own: it knows nothing of the server's error log, its
//! format or its levels. It keeps its state here, readable at any time
//! ([`crate::Store::health`], [`crate::Store::write_halt`]), and hands each change of it,
//! once, to the [`EventSink`] given in [`crate::StoreOptions::events`], which the server
//! turns into error log lines. A test reads the same events without a logger.
//!
//! Protocol, in steps:
//! 1. The first failure of the write-ahead log (a write, an fsync, a new segment) stops
//!    the log's writer for good ([`crate::wal`]): it calls back here, and the failure
//!    becomes the store's [`WriteHalt`], set once. [`StoreEvent::WritesHalted`] is
//!    reported at that moment, once, whichever thread or connection met it.
//! 2. From then on every write gets [`crate::StoreError::Failed`] with that same halt,
//!    whatever connection asks; reads go on, on the last published version, which holds
//!    every acknowledged write. Only reopening the store (a restart) clears the halt:
//!    after a failed fsync the kernel may have dropped the pages, so retrying proves
//!    nothing.
//! 3. A failed snapshot changes nothing of the directory (its temporary file is removed,
//!    the log is kept). It is counted, reported ([`StoreEvent::SnapshotFailed`]), and the
//!    periodic snapshot waits [`snapshot_retry_delay`] before trying again, doubling from
//!    [`SNAPSHOT_RETRY_FIRST`] up to [`SNAPSHOT_RETRY_MAX`]; the next success resets it and
//!    is reported ([`StoreEvent::SnapshotRecovered`]).

use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use crate::wal::WalError;

/// The first wait before a failed periodic snapshot is tried again. Long enough not to
/// spin on a full disk (each attempt writes up to a whole snapshot's octets before it
/// fails), short enough that a freed disk gets a snapshot within a minute.
pub const SNAPSHOT_RETRY_FIRST: Duration = Duration::from_secs(30);

/// The longest wait between attempts at a failing periodic snapshot. The log keeps every
/// change meanwhile; a longer wait only lets it, and the next startup's replay, grow.
pub const SNAPSHOT_RETRY_MAX: Duration = Duration::from_secs(30 * 60);

/// The wait before the next periodic snapshot after `failures` failed ones in a row:
/// nothing after none, then [`SNAPSHOT_RETRY_FIRST`] doubled per further failure, at most
/// [`SNAPSHOT_RETRY_MAX`].
pub fn snapshot_retry_delay(failures: u32) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let doublings = (failures - 1).min(31);
    SNAPSHOT_RETRY_FIRST
        .saturating_mul(1u32 << doublings)
        .min(SNAPSHOT_RETRY_MAX)
}

/// Why the store stopped accepting writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteHalt {
    /// What the log was doing: `write`, `sync`, `create`, ...
    pub op: String,
    /// The file or directory (for the error log; not shown to clients).
    pub path: PathBuf,
    /// The system's words for the failure, e.g. `No space left on device`.
    pub cause: String,
    /// The failure's kind (`StorageFull` for a full disk).
    pub kind: io::ErrorKind,
    /// When it happened.
    pub since: SystemTime,
    /// Set when the records of the failed batch could not be taken out of the log again
    /// (see [`crate::wal`]): a restart may then replay whole records no client was told
    /// were written.
    pub undo_failed: Option<String>,
}

impl WriteHalt {
    /// The halt a log error means.
    pub fn from_wal(error: &WalError) -> WriteHalt {
        let (op, path, cause, kind) = match error {
            WalError::Io { op, path, source } => (
                (*op).to_string(),
                path.clone(),
                system_words(source),
                source.kind(),
            ),
            other => (
                "append to".to_string(),
                PathBuf::new(),
                other.to_string(),
                io::ErrorKind::Other,
            ),
        };
        WriteHalt {
            op,
            path,
            cause,
            kind,
            since: SystemTime::now(),
            undo_failed: None,
        }
    }
}

impl std::fmt::Display for WriteHalt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the write-ahead log failed to {} {}: {}",
            self.op,
            self.path.display(),
            self.cause
        )?;
        if let Some(undo) = &self.undo_failed {
            write!(f, " (and the failed batch could not be removed from it: {undo})")?;
        }
        Ok(())
    }
}

/// An I/O error in the system's words, without Rust's ` (os error N)` suffix.
pub fn system_words(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text.get(..at).unwrap_or(&text).to_string(),
        _ => text,
    }
}

/// What the store reports, once per change of its health.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum StoreEvent {
    /// The log failed; the store accepts no more writes until it is reopened.
    WritesHalted(Arc<WriteHalt>),
    /// A snapshot failed; the directory and the log are as they were.
    SnapshotFailed {
        /// What went wrong.
        error: String,
        /// Failed snapshots in a row, this one included.
        failures: u32,
        /// When the periodic snapshot tries again.
        retry_in: Duration,
    },
    /// A snapshot was written after failed ones.
    SnapshotRecovered {
        /// How many had failed in a row.
        failures: u32,
    },
}

/// Receives the store's events. Called on the store's own threads (the log writer, the
/// snapshot thread, a caller of [`crate::Store::snapshot`]): it must return quickly and
/// must not write to the store.
pub type EventSink = Arc<dyn Fn(&StoreEvent) + Send + Sync>;

/// The store's health as [`crate::Store::health`] reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreHealth {
    /// `Some` once the store has stopped accepting writes, with why.
    pub write_halt: Option<Arc<WriteHalt>>,
    /// Snapshots failed in a row (0 after a success).
    pub snapshot_failures: u32,
    /// The last snapshot failure's message, while `snapshot_failures > 0`.
    pub last_snapshot_error: Option<String>,
}

impl StoreHealth {
    /// True while the store accepts writes.
    pub fn writable(&self) -> bool {
        self.write_halt.is_none()
    }
}

#[derive(Debug, Default)]
struct SnapshotState {
    failures: u32,
    last_error: Option<String>,
    retry_at: Option<Instant>,
}

/// The shared health state (see the module documentation).
#[derive(Default)]
pub(crate) struct Health {
    halt: OnceLock<Arc<WriteHalt>>,
    snapshots: Mutex<SnapshotState>,
    sink: Option<EventSink>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health")
            .field("halt", &self.halt.get())
            .finish_non_exhaustive()
    }
}

impl Health {
    pub(crate) fn new(sink: Option<EventSink>) -> Health {
        Health {
            sink,
            ..Health::default()
        }
    }

    fn report(&self, event: &StoreEvent) {
        if let Some(sink) = &self.sink {
            sink(event);
        }
    }

    fn snapshots(&self) -> std::sync::MutexGuard<'_, SnapshotState> {
        // Updated in single assignments; a poisoned lock is still consistent.
        self.snapshots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Step 1: records the halt unless one is recorded already, reporting it the first
    /// time; returns the halt in force.
    pub(crate) fn halt(&self, halt: WriteHalt) -> Arc<WriteHalt> {
        let mut first = false;
        let kept = self.halt.get_or_init(|| {
            first = true;
            Arc::new(halt)
        });
        if first {
            self.report(&StoreEvent::WritesHalted(Arc::clone(kept)));
        }
        Arc::clone(kept)
    }

    pub(crate) fn write_halt(&self) -> Option<Arc<WriteHalt>> {
        self.halt.get().cloned()
    }

    /// Step 3: a failed snapshot, at `now`.
    pub(crate) fn snapshot_failed(&self, error: String, now: Instant) {
        let event = {
            let mut s = self.snapshots();
            s.failures = s.failures.saturating_add(1);
            let retry_in = snapshot_retry_delay(s.failures);
            s.retry_at = now.checked_add(retry_in);
            s.last_error = Some(error.clone());
            StoreEvent::SnapshotFailed {
                error,
                failures: s.failures,
                retry_in,
            }
        };
        self.report(&event);
    }

    /// Step 3: a snapshot written; reported when it ends a run of failures.
    pub(crate) fn snapshot_written(&self) {
        let failures = {
            let mut s = self.snapshots();
            std::mem::take(&mut *s).failures
        };
        if failures > 0 {
            self.report(&StoreEvent::SnapshotRecovered { failures });
        }
    }

    /// False while a periodic snapshot waits out its back-off at `now`.
    pub(crate) fn snapshot_due(&self, now: Instant) -> bool {
        self.snapshots().retry_at.is_none_or(|at| now >= at)
    }

    pub(crate) fn read(&self) -> StoreHealth {
        let s = self.snapshots();
        StoreHealth {
            write_halt: self.write_halt(),
            snapshot_failures: s.failures,
            last_snapshot_error: s.last_error.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_delay_doubles_from_the_first_up_to_the_most() {
        assert_eq!(snapshot_retry_delay(0), Duration::ZERO);
        assert_eq!(snapshot_retry_delay(1), SNAPSHOT_RETRY_FIRST);
        assert_eq!(snapshot_retry_delay(2), SNAPSHOT_RETRY_FIRST * 2);
        assert_eq!(snapshot_retry_delay(3), SNAPSHOT_RETRY_FIRST * 4);
        assert_eq!(snapshot_retry_delay(40), SNAPSHOT_RETRY_MAX);
        assert_eq!(snapshot_retry_delay(u32::MAX), SNAPSHOT_RETRY_MAX);
        let mut previous = Duration::ZERO;
        for n in 0..64 {
            let d = snapshot_retry_delay(n);
            assert!(d >= previous && d <= SNAPSHOT_RETRY_MAX, "{n}: {d:?}");
            previous = d;
        }
    }

    #[test]
    fn a_failed_snapshot_holds_back_the_next_until_its_delay_passed_and_a_success_clears_it() {
        let events = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&events);
        let health = Health::new(Some(Arc::new(move |e: &StoreEvent| {
            seen.lock().unwrap().push(format!("{e:?}"));
        })));
        let t0 = Instant::now();
        assert!(health.snapshot_due(t0));
        health.snapshot_failed("disk full".into(), t0);
        assert!(!health.snapshot_due(t0));
        assert!(!health.snapshot_due(t0 + SNAPSHOT_RETRY_FIRST - Duration::from_millis(1)));
        assert!(health.snapshot_due(t0 + SNAPSHOT_RETRY_FIRST));
        let t1 = t0 + SNAPSHOT_RETRY_FIRST;
        health.snapshot_failed("disk full".into(), t1);
        assert!(!health.snapshot_due(t1 + SNAPSHOT_RETRY_FIRST));
        assert!(health.snapshot_due(t1 + SNAPSHOT_RETRY_FIRST * 2));
        let read = health.read();
        assert_eq!(read.snapshot_failures, 2);
        assert_eq!(read.last_snapshot_error.as_deref(), Some("disk full"));
        health.snapshot_written();
        assert!(health.snapshot_due(t1));
        assert_eq!(health.read(), StoreHealth::default());
        let events = events.lock().unwrap();
        assert_eq!(events.len(), 3, "{events:?}");
        assert!(
            events[2].contains("SnapshotRecovered { failures: 2 }"),
            "{events:?}"
        );
    }

    #[test]
    fn a_halt_is_kept_and_reported_once() {
        let count = Arc::new(Mutex::new(0));
        let seen = Arc::clone(&count);
        let health = Health::new(Some(Arc::new(move |e: &StoreEvent| {
            assert!(matches!(e, StoreEvent::WritesHalted(_)));
            *seen.lock().unwrap() += 1;
        })));
        let full = io::Error::from_raw_os_error(28);
        let first = WriteHalt::from_wal(&WalError::Io {
            op: "write",
            path: "/data/wal".into(),
            source: full,
        });
        assert_eq!(first.cause, "No space left on device");
        assert_eq!(first.kind, io::ErrorKind::StorageFull);
        let kept = health.halt(first.clone());
        let again = health.halt(WriteHalt {
            op: "sync".into(),
            ..first.clone()
        });
        assert_eq!(*kept, first);
        assert_eq!(*again, first, "the first halt stays in force");
        assert_eq!(*count.lock().unwrap(), 1);
        assert!(!health.read().writable());
    }
}
