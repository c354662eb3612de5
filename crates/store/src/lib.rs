//! `larch-store`: the in-memory MVCC database beneath the server.
//!
//! What it is:
//! - every entry in memory once, as one compact record ([`record`]) in a persistent table by
//!   dense [`EntryId`], with a DN index, children sets and attribute indexes ([`index`])
//!   built from persistent structures ([`pmap`], [`idset`], [`ordindex`]);
//! - [`Version`]s: immutable, published by the writer after each durable batch through a
//!   [`version_cell`]; readers take the current one without a lock;
//! - one writer thread ([`writer`]) that applies write closures copy-on-write, logs each
//!   change in the write-ahead log ([`wal`]) with group commit, then publishes;
//! - a change feed ([`feed`]): subscribers receive each published batch's changes with
//!   their LSNs, and catch up from the log when they fall behind;
//! - snapshots ([`snapshot`]) written from an old version while writes go on, loaded in
//!   parallel at startup ([`load`]), then the log tail replayed ([`Store::open`]); written
//!   on a schedule ([`schedule`]) that bounds the log any start replays, crashes included;
//! - the [`storage`] trait beneath every file, so tests inject torn writes and crashes;
//! - [`consensus`]: the seam to a cluster's consensus engine, when the log is a
//!   replicated log (writes proposed, committed entries applied by every node);
//! - [`stats`]: commits and snapshots counted for monitoring;
//! - its [`health`]: whether it accepts writes (a failed log stops them for good until it is
//!   reopened) and how snapshots fare, readable at any time and reported as events;
//! - LDIF ([`ldif`]) reading and writing, offline import and export;
//! - online backup and restore ([`backup`]): a snapshot written from an old version plus
//!   the log after it, checked as a whole before it is restored.
//!
//! What it is not: it knows nothing of sockets, LDAP sessions, access control or operational
//! attributes; the server checks entries against the schema and computes their final
//! attributes, and the store checks the tree (parents, names, leaves).

#![forbid(unsafe_code)]
// Under `--cfg loom` only the version cell and its `sync` shim are built: the loom model
// test exercises them alone, with loom's `Arc`, `Mutex` and atomics.

#[cfg(not(loom))]
pub mod backup;
#[cfg(not(loom))]
pub mod consensus;
#[cfg(not(loom))]
pub mod error;
#[cfg(not(loom))]
pub mod feed;
#[cfg(not(loom))]
pub mod health;
#[cfg(not(loom))]
pub mod idset;
#[cfg(not(loom))]
pub mod import;
#[cfg(not(loom))]
pub mod index;
#[cfg(not(loom))]
pub mod ldif;
#[cfg(not(loom))]
pub mod load;
#[cfg(not(loom))]
pub mod ordindex;
#[cfg(not(loom))]
pub mod pmap;
#[cfg(not(loom))]
pub mod record;
#[cfg(not(loom))]
pub mod schedule;
#[cfg(not(loom))]
pub mod snapshot;
#[cfg(not(loom))]
pub mod stats;
#[cfg(not(loom))]
pub mod storage;
#[cfg(not(loom))]
mod store;
mod sync;
#[cfg(not(loom))]
pub mod txn;
#[cfg(not(loom))]
pub mod version;
pub mod version_cell;
#[cfg(not(loom))]
pub mod wal;
#[cfg(not(loom))]
pub mod writer;

#[cfg(not(loom))]
pub use backup::{BackupError, BackupOptions, BackupReport};
#[cfg(not(loom))]
pub use error::StoreError;
#[cfg(not(loom))]
pub use feed::{CommittedBatch, CommittedChange, EntryStates, FeedError, FeedStart, FeedSubscription};
#[cfg(not(loom))]
pub use health::{StoreEvent, StoreHealth, WriteHalt};
#[cfg(not(loom))]
pub use record::{EntryId, EntryRecord};
#[cfg(not(loom))]
pub use stats::{SnapshotRecord, StoreStatsView};
#[cfg(not(loom))]
pub use store::{
    OpenReport, OpenedSnapshot, ReplicatedSnapshot, StartupSnapshot, Store, StoreOptions, StoreReader,
    TransferSnapshot, DEFAULT_SNAPSHOT_AFTER_RECORDS, DEFAULT_SNAPSHOT_DUTY_CYCLE, KEEP_SNAPSHOTS,
};
#[cfg(not(loom))]
pub use txn::{Savepoint, WriteTxn};
#[cfg(not(loom))]
pub use version::{EntryView, Lookup, Version};
