//! The store's health in the error log: each [`StoreEvent`] the store reports becomes one
//! `tracing` event, with the file and the cause.
//!
//! The store keeps its health itself (`larch_store::health`: the write halt, set once;
//! snapshot failures and their back-off) and reports each change of it once, on its own
//! threads. This module only words it for the error log:
//! 1. writes halted: `error`, once — the operation, the file, the system's words for the
//!    cause, and that a restart is needed once the disk is fixed (clients get `unavailable`
//!    with the same cause, without the file: [`crate::error::OpError::writes_halted`]);
//! 2. a snapshot failed: `error`, with the failures in a row and when it is tried again;
//! 3. a snapshot written after failures: `info`.
//!
//! The running state is read from [`crate::directory::Directory::write_halt`] (and the
//! store's `health()`), for health checks and monitoring.

use std::sync::Arc;

use larch_store::health::EventSink;
use larch_store::StoreEvent;

/// The words of step 1.
const WRITES_HALTED: &str = "the directory stopped accepting writes: the write-ahead log failed; \
     reads go on, every write gets `unavailable` (52); restart the server once the disk is fixed \
     (every acknowledged write is kept)";

/// The sink that writes the store's events to the error log.
pub fn error_log_sink() -> EventSink {
    Arc::new(log_store_event)
}

/// Steps 1 to 3: one error log line per event.
pub fn log_store_event(event: &StoreEvent) {
    match event {
        StoreEvent::WritesHalted(halt) => match &halt.undo_failed {
            None => tracing::error!(
                op = %halt.op,
                path = %halt.path.display(),
                cause = %halt.cause,
                "{WRITES_HALTED}"
            ),
            Some(undo) => tracing::error!(
                op = %halt.op,
                path = %halt.path.display(),
                cause = %halt.cause,
                undo_error = %undo,
                "{WRITES_HALTED}; the failed batch could not be taken out of the log, so a restart \
                 may replay whole records of it that no client was told were written"
            ),
        },
        StoreEvent::SnapshotFailed {
            error,
            failures,
            retry_in,
        } => tracing::error!(
            error = %error,
            failures_in_a_row = failures,
            retry_in_secs = retry_in.as_secs(),
            "writing a snapshot failed; the log keeps every change and writes go on"
        ),
        StoreEvent::SnapshotRecovered { failures } => {
            tracing::info!(failures_before = failures, "a snapshot was written again")
        }
        other => tracing::warn!(event = ?other, "the store reported an event"),
    }
}
