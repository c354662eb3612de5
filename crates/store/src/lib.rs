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
//! - snapshots ([`snapshot`]) written from an old version while writes go on, loaded in
//!   parallel at startup ([`load`]), then the log tail replayed ([`Store::open`]);
//! - the [`storage`] trait beneath every file, so tests inject torn writes and crashes;
//! - LDIF ([`ldif`]) reading and writing, offline import and export.
//!
//! What it is not: it knows nothing of sockets, LDAP sessions, access control or operational
//! attributes; the server checks entries against the schema and computes their final
//! attributes, and the store checks the tree (parents, names, leaves).

#![forbid(unsafe_code)]

pub mod error;
pub mod idset;
pub mod import;
pub mod index;
pub mod ldif;
pub mod load;
pub mod ordindex;
pub mod pmap;
pub mod record;
pub mod snapshot;
pub mod storage;
mod store;
mod sync;
pub mod txn;
pub mod version;
pub mod version_cell;
pub mod wal;
pub mod writer;

pub use error::StoreError;
pub use record::{EntryId, EntryRecord};
pub use store::{
    OpenReport, Store, StoreOptions, StoreReader, DEFAULT_SNAPSHOT_AFTER_RECORDS,
    DEFAULT_SNAPSHOT_DUTY_CYCLE, KEEP_SNAPSHOTS,
};
pub use txn::WriteTxn;
pub use version::{EntryView, Lookup, Version};
