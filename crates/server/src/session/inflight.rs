//! Operations in flight on one connection: what Abandon and Cancel find by message ID.
//!
//! Only operations that outlive the read that brought them are registered: searches
//! running on a worker thread and writes waiting for the store. Inline operations finish
//! before the connection reads its next request, so there is nothing to stop.
//!
//! The table belongs to one connection; its lock is never shared between connections
//! (there is no global lock on the request path).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use larch_proto::MessageId;
use tokio::sync::Notify;

/// What has been asked of a running operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopRequest {
    /// Nothing: run to completion.
    None,
    /// Abandon (RFC 4511 section 4.11): stop and send nothing more.
    Abandon,
    /// Cancel (RFC 3909): stop and answer `canceled` (118).
    Cancel,
}

/// The kinds of registered operations (Cancel treats them differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpClass {
    /// A search, which checks for a stop request between entries.
    Search,
    /// A write already handed to the store: it will commit or fail as a whole.
    Write,
}

/// One registered operation.
#[derive(Debug)]
pub struct OpState {
    /// Its kind.
    pub class: OpClass,
    /// Its number on the connection (the access log's `op=`).
    pub op_number: i64,
    stop: AtomicU8,
    done: Notify,
    finished: AtomicBool,
    seen_stop: AtomicBool,
    canceled: AtomicBool,
}

impl OpState {
    fn new(class: OpClass, op_number: i64) -> OpState {
        OpState {
            class,
            op_number,
            stop: AtomicU8::new(0),
            done: Notify::new(),
            finished: AtomicBool::new(false),
            seen_stop: AtomicBool::new(false),
            canceled: AtomicBool::new(false),
        }
    }

    /// Asks the operation to stop (the first request wins).
    pub fn request(&self, what: StopRequest) {
        let code = match what {
            StopRequest::None => return,
            StopRequest::Abandon => 1,
            StopRequest::Cancel => 2,
        };
        let _ = self
            .stop
            .compare_exchange(0, code, Ordering::AcqRel, Ordering::Acquire);
    }

    /// What has been asked.
    pub fn stop_request(&self) -> StopRequest {
        match self.stop.load(Ordering::Acquire) {
            0 => StopRequest::None,
            1 => StopRequest::Abandon,
            _ => StopRequest::Cancel,
        }
    }

    /// True once a stop is requested.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire) != 0
    }

    /// Records that the operation saw its stop request and stopped (it sent no final
    /// response of its own).
    pub fn note_seen_stop(&self) {
        self.seen_stop.store(true, Ordering::Release);
    }

    /// True when the operation stopped on a request.
    pub fn seen_stop(&self) -> bool {
        self.seen_stop.load(Ordering::Acquire)
    }

    /// Records that the operation ended as canceled (it answered `canceled`).
    pub fn mark_canceled(&self) {
        self.canceled.store(true, Ordering::Release);
    }

    /// True when the operation ended as canceled.
    pub fn canceled(&self) -> bool {
        self.canceled.load(Ordering::Acquire)
    }

    /// Waits until the operation has finished (returns at once if it has).
    pub async fn finished(&self) {
        loop {
            let notified = self.done.notified();
            if self.finished.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

/// The operations in flight on one connection.
#[derive(Debug, Default)]
pub struct InFlight {
    ops: Mutex<HashMap<MessageId, Arc<OpState>>>,
}

impl InFlight {
    /// Registers operation `id` (number `op_number` on the connection); the returned
    /// guard removes it when dropped (when the operation has sent its last response).
    pub fn register(self: &Arc<Self>, id: MessageId, op_number: i64, class: OpClass) -> OpGuard {
        let state = Arc::new(OpState::new(class, op_number));
        self.lock().insert(id, state.clone());
        OpGuard {
            table: self.clone(),
            id,
            state,
        }
    }

    /// The operation with message ID `id`, if in flight.
    pub fn get(&self, id: MessageId) -> Option<Arc<OpState>> {
        self.lock().get(&id).cloned()
    }

    /// Asks every operation in flight to stop (Bind waits instead; this is for a closing
    /// connection).
    pub fn abandon_all(&self) {
        for op in self.lock().values() {
            op.request(StopRequest::Abandon);
        }
    }

    /// How many operations are in flight.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when none is in flight.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<MessageId, Arc<OpState>>> {
        self.ops.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Keeps an operation registered; dropping it marks the operation finished.
#[derive(Debug)]
pub struct OpGuard {
    table: Arc<InFlight>,
    id: MessageId,
    state: Arc<OpState>,
}

impl OpGuard {
    /// The operation's state.
    pub fn state(&self) -> &Arc<OpState> {
        &self.state
    }
}

impl Drop for OpGuard {
    fn drop(&mut self) {
        {
            let mut ops = self.table.lock();
            if ops.get(&self.id).is_some_and(|s| Arc::ptr_eq(s, &self.state)) {
                ops.remove(&self.id);
            }
        }
        self.state.finished.store(true, Ordering::Release);
        self.state.done.notify_waiters();
    }
}
