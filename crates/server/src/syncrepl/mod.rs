//! Larch as a read replica of an OpenLDAP provider: the consumer side of RFC 4533 (Content
//! Synchronization, "syncrepl"), one consumer task per `[[replication]]` table.
//!
//! How it fits together, in steps:
//! 1. [`Replication::configured`] (at `Directory::open`): each table's base normalized and
//!    checked against the suffixes, its status created; the store indexes `entryUUID`
//!    for equality when any table exists (`ServerConfig::index_config`);
//! 2. [`Replication::start`] (by `larch serve`, once the store is loaded and set up): one
//!    tokio task per table ([`consumer::Consumer::run`]);
//! 3. each task connects, binds and runs the sync search (`connection`, `message`), turns
//!    each provider message into store changes (`machine`, `present`), and commits them in
//!    batches with the cookie they lead to, through the store's single writer (`apply`);
//! 4. meanwhile client writes inside a replicated subtree get a referral (`read_only`), or
//!    are forwarded to the provider where the table says `writes = "chain"` (`chain`), and
//!    reads are served; operators see each consumer's state (`status`) in the error log,
//!    `/metrics` and `cn=Replication,cn=Monitor`;
//! 5. [`Consumers::stop`] (at shutdown, before the store closes) ends the tasks; a batch
//!    already handed to the writer completes, nothing else is written.
//!
//! Files: `cookie.rs` (OpenLDAP's cookie and CSN sets), `connection.rs` (TCP, TLS, Bind,
//! framed reads), `message.rs` (the provider's PDUs as events; the search request),
//! `machine.rs` (what each event means, when a cookie may be stored), `present.rs`
//! (present-phase bookkeeping), `apply.rs` (changes in a store transaction, the cookie
//! kept as `contextCSN`), `consumer.rs` (the session loop, batches, retries),
//! `status.rs` (what operators see), `read_only.rs` (the referral for client writes),
//! `chain.rs` (client writes forwarded to the provider), `error.rs` ([`SyncError`]).
//!
//! Invariants:
//! - the provider's entries are stored as sent: its entryUUID, entryCSN, timestamps and
//!   names are kept (no write hook runs); `contextCSN` and computed attributes are left
//!   out;
//! - the cookie is stored in the same transaction as the last change it covers, never
//!   before: after a crash the provider sends again whatever may be missing, and every
//!   change applies idempotently;
//! - nothing the provider sends can panic the server or make it buffer beyond
//!   `limits.max_pdu_bytes` per message and [`apply::MAX_BATCH_BYTES`] per batch.

pub mod apply;
pub mod bootstrap;
pub mod chain;
pub mod connection;
pub mod consumer;
pub mod cookie;
pub mod error;
pub mod machine;
pub mod message;
pub mod present;
pub mod read_only;
pub mod status;

use std::sync::Arc;

use larch_model::dn::NormDn;
use larch_model::schema::Schema;
use larch_store::Store;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use error::SyncError;
pub use status::{ConsumerState, ConsumerStatus, StatusView};

use crate::config::{ConfigError, ReplicaWrites, ReplicationSettings, ServerConfig};
use crate::opattrs::OperationalTypes;

/// How long shutdown waits for the consumer tasks to end.
pub const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// One configured consumer.
#[derive(Debug)]
pub struct Replica {
    /// Its table.
    pub settings: ReplicationSettings,
    /// Its base, normalized.
    pub base: NormDn,
    /// The URL client writes are referred to.
    pub referral: String,
    /// Where client writes are forwarded (`writes = "chain"`).
    pub chain: Option<Arc<chain::Chain>>,
    /// What it reports.
    pub status: Arc<ConsumerStatus>,
}

impl Replica {
    /// What applying this table's changes needs.
    fn apply_context(
        &self,
        schema: &Arc<Schema>,
        suffixes: &[NormDn],
        optypes: OperationalTypes,
    ) -> Result<apply::ApplyContext, String> {
        apply::ApplyContext::new(
            Arc::clone(schema),
            self.base.clone(),
            self.settings.scope,
            suffixes.to_vec(),
            optypes,
        )
    }
}

/// Every configured consumer (none when this server is not a replica).
#[derive(Debug, Default)]
pub struct Replication {
    /// The consumers, in table order.
    pub consumers: Vec<Replica>,
}

impl Replication {
    /// Step 1 of the module documentation.
    pub fn configured(
        config: &ServerConfig,
        schema: &Schema,
        suffixes: &[NormDn],
    ) -> Result<Replication, ConfigError> {
        let mut consumers = Vec::with_capacity(config.replication.len());
        for (i, s) in config.replication.iter().enumerate() {
            let base = s
                .normalized_base(schema, suffixes)
                .map_err(|e| ConfigError::invalid(format!("replication[{i}].base"), e))?;
            let chain = match s.writes {
                ReplicaWrites::Referral => None,
                ReplicaWrites::Chain => Some(Arc::new(
                    chain::Chain::new(s, config.limits.max_pdu_bytes).map_err(|e| {
                        ConfigError::invalid(format!("replication[{i}].writes"), e.to_string())
                    })?,
                )),
            };
            consumers.push(Replica {
                settings: s.clone(),
                base,
                referral: s.referral.clone(),
                chain,
                status: Arc::new(ConsumerStatus::new(s.rid, &s.provider, &s.base)),
            });
        }
        Ok(Replication { consumers })
    }

    /// True when this server replicates nothing.
    pub fn is_empty(&self) -> bool {
        self.consumers.is_empty()
    }

    /// Each consumer's status now.
    pub fn views(&self) -> Vec<StatusView> {
        self.consumers.iter().map(|c| c.status.view()).collect()
    }

    /// The table that starts a new replica from its provider's snapshot
    /// (`start_from = "snapshot"`), if any.
    pub fn snapshot_table(&self) -> Option<&Replica> {
        self.consumers
            .iter()
            .find(|r| r.settings.start_from == crate::config::StartFrom::Snapshot)
    }

    /// After a start from a snapshot ([`bootstrap`]): the snapshot's context CSNs become
    /// the cookie of the table that fetched it; the number of CSNs stored.
    pub fn seed_from_snapshot(
        &self,
        store: &Store,
        schema: &Arc<Schema>,
        suffixes: &[NormDn],
        optypes: OperationalTypes,
    ) -> Result<usize, String> {
        let Some(r) = self.snapshot_table() else {
            return Ok(0);
        };
        let ctx = r.apply_context(schema, suffixes, optypes)?;
        bootstrap::seed_cookie(store, &Arc::new(ctx)).map_err(|e| e.to_string())
    }

    /// Step 2: one task per consumer on `runtime`.
    pub fn start(
        &self,
        store: &Store,
        schema: &Arc<Schema>,
        suffixes: &[NormDn],
        optypes: OperationalTypes,
        max_pdu: usize,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Consumers, String> {
        let (stop, stopped) = watch::channel(false);
        let mut tasks = Vec::with_capacity(self.consumers.len());
        for r in &self.consumers {
            let ctx = r.apply_context(schema, suffixes, optypes)?;
            let consumer = consumer::Consumer {
                settings: r.settings.clone(),
                status: Arc::clone(&r.status),
                store: store.clone(),
                ctx: Arc::new(ctx),
                max_pdu,
            };
            if let Ok(c) = apply::stored_csns(&store.current(), &consumer.ctx) {
                r.status.set_csn(c.newest().map(|c| c.as_str()));
            }
            tracing::info!(
                rid = r.settings.rid,
                provider = %r.settings.provider,
                base = %r.settings.base,
                "replication: starting the consumer"
            );
            tasks.push(runtime.spawn(consumer.run(stopped.clone())));
        }
        Ok(Consumers { stop, tasks })
    }
}

/// The running consumer tasks.
#[derive(Debug)]
pub struct Consumers {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Consumers {
    /// Step 5: tells every task to stop and waits for them, at most [`STOP_WAIT`].
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let all = async {
            for t in self.tasks {
                let _ = t.await;
            }
        };
        let _ = tokio::time::timeout(STOP_WAIT, all).await;
    }
}
