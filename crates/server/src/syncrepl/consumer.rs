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
//! 4. commit the batch, with the newest cookie received, through the store's single writer
//!    (`super::apply`), waiting for it to be durable, when: the refresh ended, the batch
//!    is full ([`MAX_BATCH_CHANGES`] changes or [`MAX_BATCH_BYTES`]), or (in persist) no
//!    further message is buffered or readable without waiting. A change is applied as soon
//!    as it arrives when changes come one by one, and a burst in few transactions: a
//!    provider that puts a cookie on every write (Larch, slapd) does not cost a commit and
//!    an fsync per write;
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
use super::connection::{ClientTls, Connection, Upstream};
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
        let tls = match ClientTls::new(&Upstream::from(&self.settings)) {
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
        let mut conn = Connection::open(&Upstream::from(&self.settings), tls, self.max_pdu).await?;
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
            // A cookie in persist (`Action::Commit`) is stored with the next commit, which
            // waits while more messages are ready; the end of a refresh commits at once.
            let mut refresh_over = false;
            let mut finished = false;
            for action in machine.handle(event)? {
                match action {
                    Action::Put(e) => pending.push(put_change(&self.ctx, &e)?),
                    Action::Delete(u) => pending.push(Change::Delete(u)),
                    Action::DeleteUnmentioned(p) => pending.push(Change::DeleteUnmentioned(p)),
                    Action::Commit => {}
                    Action::RefreshDone => {
                        refresh_over = true;
                        progress.refreshed = true;
                    }
                    Action::Finished => {
                        refresh_over = true;
                        finished = true;
                        progress.refreshed = true;
                    }
                }
            }
            if !machine.in_refresh() && !pending.changes.is_empty() {
                self.status.left_step();
            }
            let idle = !machine.in_refresh() && !conn.pdu_ready().await?;
            if refresh_over || pending.full() || idle {
                self.commit(&mut machine, std::mem::take(&mut pending)).await?;
            }
            if progress.refreshed && self.status.state() == ConsumerState::Refreshing && !finished {
                self.status.set_state(ConsumerState::Persisting);
            }
            if finished {
                // In step at the end of the poll, and no longer known to be after it.
                self.status.caught_up();
                self.status.left_step();
                return Ok(End::Polled);
            }
            if idle && progress.refreshed && pending.changes.is_empty() {
                self.status.caught_up();
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
            let newest = c.newest().map(|n| n.as_str());
            if let Some(csn) = newest.filter(|_| self.status.state() == ConsumerState::Persisting) {
                self.status.delay_of(csn);
            }
            self.status.applied(applied.changes, newest);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ServerConfig;
    use crate::opattrs::OperationalTypes;
    use crate::syncrepl::message::tests::{done_pdu, entry_pdu};
    use crate::syncrepl::message::SEARCH_ID;
    use larch_model::dn::NormDn;
    use larch_model::schema::Schema;
    use larch_proto::controls::{ControlValue, SyncDone, SyncRequest, SyncStateKind};
    use larch_proto::{BindResponse, LdapMessage, LdapResult, ProtocolOp, ResultCode};
    use larch_store::index::IndexConfig;
    use larch_store::wal::SyncPolicy;
    use larch_store::StoreOptions;
    use tokio::net::TcpListener;

    const C1: &str = "20261127021024.123456Z#000000#000#000000";
    const C2: &str = "20261127021030.000000Z#000000#000#000000";
    const SUFFIX: [u8; 16] = [1; 16];
    const OU: [u8; 16] = [2; 16];

    /// The fake provider's side of one connection: the Bind answered, the search's cookie
    /// returned, then `answer` sent.
    async fn serve_one(listener: &TcpListener, answer: Vec<Vec<u8>>) -> String {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut conn = Connection::over(Box::new(tcp), 1 << 20);
        let bind = conn.next_pdu().await.unwrap().to_vec();
        let bind = LdapMessage::decode(&bind).unwrap();
        assert!(matches!(bind.op, ProtocolOp::BindRequest(_)));
        let ok = BindResponse {
            result: LdapResult::new(ResultCode::SUCCESS, b"", b""),
            server_sasl_creds: None,
        };
        conn.send(&LdapMessage::new(bind.message_id, ProtocolOp::BindResponse(ok)))
            .await
            .unwrap();
        let pdu = conn.next_pdu().await.unwrap().to_vec();
        let search = LdapMessage::decode(&pdu).unwrap();
        assert_eq!(search.message_id, SEARCH_ID);
        let c = search.controls().iter().next().unwrap();
        let cookie = SyncRequest::from_control(&c).unwrap().cookie.unwrap();
        let cookie = String::from_utf8(cookie.to_vec()).unwrap();
        for a in answer {
            conn.send_encoded(&a).await.unwrap();
        }
        cookie
    }

    fn entry(uuid: &[u8; 16], dn: &str, attrs: &[(&str, &[&str])]) -> Vec<u8> {
        entry_pdu(SyncStateKind::Add, uuid, dn, attrs, None)
    }

    fn done(code: ResultCode, cookie: Option<&str>) -> Vec<u8> {
        let d = cookie.map(|c| SyncDone {
            cookie: Some(c.as_bytes()),
            refresh_deletes: true,
        });
        done_pdu(code, d)
    }

    /// refreshOnly against a fake provider: a full refresh, a poll with the cookie answered
    /// `e-syncRefreshRequired`, at once a full refresh again (without a CSN) whose end
    /// deletes the entry it no longer lists; the cookie kept on the base entry throughout.
    #[test]
    fn refresh_only_polls_and_refreshes_in_full_when_asked() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let text = format!(
                "[[replication]]\nrid = 9\nprovider = \"ldap://127.0.0.1:{port}\"\nbind_dn = \"cn=r\"\n\
                 credentials = \"x\"\nbase = \"dc=example,dc=com\"\nmode = \"refreshOnly\"\ninterval = \"1s\"\n\
                 retry = \"1s +\"\n"
            );
            let settings = ServerConfig::from_toml_str(&text).unwrap().replication.remove(0);
            let schema = Arc::new(Schema::builtin().unwrap());
            let dir = std::env::temp_dir().join(format!("larch-syncrepl-consumer-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let mut o = StoreOptions::new(&dir, Arc::clone(&schema));
            o.sync = SyncPolicy::None;
            o.snapshot_interval = None;
            o.snapshot_after_records = None;
            let mut indexes = IndexConfig::default();
            indexes.attributes.entry("entryUUID".into()).or_default().equality = true;
            o.indexes = indexes;
            let (store, _) = Store::open(o).unwrap();
            let base = NormDn::from_text(b"dc=example,dc=com", &*schema).unwrap();
            let ctx = ApplyContext::new(
                Arc::clone(&schema),
                base.clone(),
                settings.scope,
                vec![base.clone()],
                OperationalTypes::new(&schema).unwrap(),
            )
            .unwrap();
            let status = Arc::new(ConsumerStatus::new(9, &settings.provider, &settings.base));
            let consumer = Consumer {
                settings,
                status: Arc::clone(&status),
                store: store.clone(),
                ctx: Arc::new(ctx),
                max_pdu: 1 << 20,
            };
            let (stop, stopped) = watch::channel(false);
            let task = tokio::spawn(consumer.run(stopped));
            let suffix = || {
                entry(
                    &SUFFIX,
                    "dc=example,dc=com",
                    &[("objectClass", &["top", "dcObject", "organization"]), ("dc", &["example"]), ("o", &["x"])],
                )
            };
            let ou = entry(
                &OU,
                "ou=a,dc=example,dc=com",
                &[("objectClass", &["organizationalUnit"]), ("ou", &["a"])],
            );
            // 1: the first refresh, in full.
            let c1 = format!("rid=009,csn={C1}");
            let sent = serve_one(&listener, vec![suffix(), ou, done(ResultCode::SUCCESS, Some(&c1))]).await;
            assert_eq!(sent, "rid=009");
            // 2: a poll a second later, with the cookie; the provider cannot serve it.
            let sent = serve_one(&listener, vec![done(ResultCode::E_SYNC_REFRESH_REQUIRED, None)]).await;
            assert_eq!(sent, c1);
            let csns = stored_csns(&store.current(), &ctx_of(&schema)).unwrap();
            assert_eq!(csns.newest().map(|c| c.as_str()), Some(C1));
            // 3: at once, a full refresh that no longer lists ou=a.
            let c2 = format!("rid=009,csn={C2}");
            let sent = serve_one(&listener, vec![suffix(), done(ResultCode::SUCCESS, Some(&c2))]).await;
            assert_eq!(sent, "rid=009");
            // The consumer commits, then idles: wait for it.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while status.view().last_csn.as_deref() != Some(C2) {
                assert!(std::time::Instant::now() < deadline, "{:?}", status.view());
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            let v = store.current();
            assert!(v.find(&base).is_some());
            assert!(v.find(&NormDn::from_text(b"ou=a,dc=example,dc=com", &*schema).unwrap()).is_none());
            let view = status.view();
            // suffix, ou=a; suffix again, ou=a deleted.
            assert_eq!(view.changes_applied, 4);
            // e-syncRefreshRequired is no failure: a full refresh follows at once.
            assert_eq!(view.last_error, None);
            stop.send(true).unwrap();
            task.await.unwrap();
            assert_eq!(status.state(), ConsumerState::Stopped);
            let _ = store.close(false);
            let _ = std::fs::remove_dir_all(&dir);
        });
    }

    fn ctx_of(schema: &Arc<Schema>) -> ApplyContext {
        let base = NormDn::from_text(b"dc=example,dc=com", &**schema).unwrap();
        ApplyContext::new(
            Arc::clone(schema),
            base.clone(),
            crate::config::ReplicationScope::Sub,
            vec![base],
            OperationalTypes::new(schema).unwrap(),
        )
        .unwrap()
    }
}
