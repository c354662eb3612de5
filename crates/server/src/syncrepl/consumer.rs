//! The consumer task of one `[[replication]]` table: sessions with the provider, one after
//! the other, for as long as the server runs.
//!
//! A session, in steps:
//! 1. connect, TLS, Bind (`super::connection`); state `connecting`;
//! 2. read the stored cookie from the base entry's `contextCSN` values and send the sync
//!    search with it, `rid=NNN,csn=...` (only `rid=NNN` when no CSN is stored, or after
//!    `e-syncRefreshRequired`: a full refresh, whose end deletes what the provider no
//!    longer holds); state `refreshing`;
//! 3. read the provider's messages one at a time; [`super::machine::SyncMachine`] says what
//!    each means; entries are converted to store changes here (off the writer thread) and
//!    queued in a batch;
//! 4. commit the batch through the store's single writer (`super::apply`), waiting for it
//!    to be durable, when: the machine asks (a cookie arrived in persist, or the refresh
//!    ended), the batch is full ([`MAX_BATCH_CHANGES`] changes or [`MAX_BATCH_BYTES`]), or
//!    (in persist) no further message is already buffered, so a change is applied as soon
//!    as it arrives and a burst is applied in one transaction;
//! 5. refreshAndPersist: after the refresh, state `persisting`, and step 3 forever;
//!    refreshOnly: after the SearchResultDone, state `idle` for `interval`, then a new
//!    session.
//!
//! After a failure (the connection, the provider's answer, an entry that cannot be stored,
//! the store), the batch not yet committed is dropped with the cookie it would have
//! carried; the error and the wait are logged, the state is `waiting_to_retry`, and the
//! next session starts after the `retry` schedule's wait (the count starts again once a
//! refresh completes). A schedule that runs out stops the consumer (`stopped`). Nothing
//! retries without a wait of at least one second, except the one immediate full refresh
//! that `e-syncRefreshRequired` asks for.

use std::sync::Arc;

use larch_store::{Store, StoreError};
use tokio::sync::{oneshot, watch};

use super::apply::{
    apply_batch, put_change, stored_csns, Applied, ApplyContext, Change, MAX_BATCH_BYTES, MAX_BATCH_CHANGES,
};
use super::connection::{ClientTls, Connection};
use super::cookie::{Cookie, CsnSet};
use super::error::SyncError;
use super::machine::{Action, SyncMachine};
use super::message::{decode_event, encode_search};
use super::status::{ConsumerState, ConsumerStatus};
use crate::config::ReplicationSettings;

/// One consumer.
pub struct Consumer {
    /// Its table.
    pub settings: ReplicationSettings,
    /// What it reports.
    pub status: Arc<ConsumerStatus>,
    /// The local store.
    pub store: Store,
    /// What applying needs.
    pub ctx: Arc<ApplyContext>,
    /// The largest message accepted from the provider (`limits.max_pdu_bytes`).
    pub max_pdu: usize,
}

/// How a session ended without an error.
enum End {
    /// A refreshOnly search completed.
    Polled,
}

/// The changes waiting for a commit.
#[derive(Default)]
struct Pending {
    changes: Vec<Change>,
    bytes: usize,
}

impl Pending {
    fn push(&mut self, c: Change) {
        self.bytes += c.size();
        self.changes.push(c);
    }

    fn full(&self) -> bool {
        self.changes.len() >= MAX_BATCH_CHANGES || self.bytes >= MAX_BATCH_BYTES
    }
}

/// Whether a session made progress (a refresh completed), so the retry count starts over.
#[derive(Default)]
struct Progress {
    refreshed: bool,
}

impl Consumer {
    /// Runs sessions until `stop` says so (see the module documentation).
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let tls = match ClientTls::new(&self.settings) {
            Ok(t) => t,
            Err(e) => {
                self.status.failed(&e.to_string(), None);
                return;
            }
        };
        let mut attempt: u32 = 0;
        let mut full_refresh = false;
        loop {
            if *stop.borrow() {
                break;
            }
            let mut progress = Progress::default();
            let session = self.session(tls.as_ref(), full_refresh, &mut progress);
            let result = tokio::select! {
                r = session => r,
                _ = stop.changed() => break,
            };
            if progress.refreshed {
                attempt = 0;
                full_refresh = false;
            }
            let wait = match result {
                Ok(End::Polled) => {
                    self.status.set_state(ConsumerState::Idle);
                    self.settings.interval
                }
                Err(SyncError::RefreshRequired) if !full_refresh => {
                    tracing::info!(
                        rid = self.settings.rid,
                        provider = %self.settings.provider,
                        "replication: the provider cannot send the changes since the cookie; refreshing in full"
                    );
                    full_refresh = true;
                    continue;
                }
                Err(e) => {
                    let wait = self.settings.retry.wait(attempt);
                    attempt = attempt.saturating_add(1);
                    self.status.failed(&e.to_string(), wait);
                    match wait {
                        Some(w) => w,
                        None => return,
                    }
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.changed() => break,
            }
        }
        self.status.set_state(ConsumerState::Stopped);
    }

    /// One session (steps 1 to 5).
    async fn session(
        &self,
        tls: Option<&ClientTls>,
        full_refresh: bool,
        progress: &mut Progress,
    ) -> Result<End, SyncError> {
        self.status.set_state(ConsumerState::Connecting);
        let mut conn = Connection::open(&self.settings, tls, self.max_pdu).await?;
        let stored = stored_csns(&self.store.current(), &self.ctx)?;
        // The cookie always names the replica (slapd echoes it); without a CSN it asks for a
        // full refresh.
        let full = full_refresh || stored.is_empty();
        let cookie = Cookie {
            rid: Some(self.settings.rid),
            sid: None,
            csns: if full { CsnSet::default() } else { stored.clone() },
        }
        .format();
        let mut out = Vec::new();
        encode_search(&self.settings, Some(cookie.as_bytes()), &mut out)?;
        let mut machine = SyncMachine::new(self.settings.mode, stored, full);
        conn.send_encoded(&out).await?;
        self.status.set_state(ConsumerState::Refreshing);
        let mut pending = Pending::default();
        loop {
            let pdu = conn.next_pdu().await?;
            let event = decode_event(pdu)?;
            tracing::debug!(rid = self.settings.rid, event = %event.summary(), "replication: from the provider");
            let mut commit = false;
            let mut finished = false;
            for action in machine.handle(event)? {
                match action {
                    Action::Put(e) => pending.push(put_change(&self.ctx, &e)?),
                    Action::Delete(u) => pending.push(Change::Delete(u)),
                    Action::DeleteUnmentioned(p) => pending.push(Change::DeleteUnmentioned(p)),
                    Action::Commit => commit = true,
                    Action::RefreshDone => {
                        commit = true;
                        progress.refreshed = true;
                    }
                    Action::Finished => {
                        commit = true;
                        finished = true;
                        progress.refreshed = true;
                    }
                }
            }
            let idle = !machine.in_refresh() && !conn.has_buffered_pdu();
            if commit || pending.full() || (idle && !pending.changes.is_empty()) {
                self.commit(&mut machine, std::mem::take(&mut pending)).await?;
            }
            if progress.refreshed && self.status.state() == ConsumerState::Refreshing && !finished {
                self.status.set_state(ConsumerState::Persisting);
            }
            if finished {
                return Ok(End::Polled);
            }
        }
    }

    /// Step 4: the batch and the machine's cookie, in one transaction, waited for.
    async fn commit(&self, machine: &mut SyncMachine, pending: Pending) -> Result<(), SyncError> {
        let cookie = machine.cookie_to_store();
        if pending.changes.is_empty() && cookie.is_none() {
            return Ok(());
        }
        let applied = self.write(pending.changes, cookie.clone()).await?;
        if let Some(c) = cookie {
            self.status
                .applied(applied.changes, c.newest().map(|n| n.as_str()));
            machine.cookie_stored(c);
        } else {
            self.status.applied(applied.changes, None);
        }
        if applied.kept > 0 {
            tracing::warn!(
                rid = self.settings.rid,
                kept = applied.kept,
                "replication: entries the provider no longer lists were kept because entries outside the replicated \
                 scope are below them"
            );
        }
        Ok(())
    }

    async fn write(&self, changes: Vec<Change>, cookie: Option<CsnSet>) -> Result<Applied, SyncError> {
        let (tx, rx) = oneshot::channel();
        let ctx = Arc::clone(&self.ctx);
        self.store.submit(
            move |txn| apply_batch(txn, &ctx, changes, cookie.as_ref()),
            move |r| {
                let _ = tx.send(r);
            },
        );
        rx.await.map_err(|_| SyncError::Store(StoreError::Closed))??
    }
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("rid", &self.settings.rid)
            .field("provider", &self.settings.provider)
            .finish()
    }
}
