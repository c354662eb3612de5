//! `larch-cluster`: highly available writes. The store's write-ahead log is the log of an
//! [openraft](https://docs.rs/openraft) cluster: a write is proposed by the leader's
//! single writer, acknowledged once a majority has it on disk, and applied by every
//! node's store in log order. openraft is pinned and stays behind the store's
//! [`Replicator`](larch_store::consensus::Replicator) trait and this crate's types.
//!
//! The parts, one job each:
//! - [`types`]: openraft's type configuration, and entries converted to and from the
//!   store's replicated entries (entry `i` is the WAL record with LSN `i + 1`);
//! - [`log_store`]: openraft's log storage on the store's WAL;
//! - [`raft_state`]: the vote and the purged log ID, in one small file;
//! - [`state_machine`]: the store, applying committed entries, writing and installing
//!   snapshots;
//! - [`snapshot_state`]: the consensus state a snapshot's header carries;
//! - [`snapshot_file`]: a snapshot file as openraft's snapshot data, read and written in
//!   chunks;
//! - [`existing_data`]: a single server's data made a new cluster's starting point, on the
//!   node that bootstraps it, before openraft starts;
//! - [`member`]: what the configuration records of each member (Raft address, LDAP URL);
//! - [`membership`]: nodes added to and removed from a running cluster, on its leader;
//! - [`node`]: a running node, and the writer's way into the cluster;
//! - [`read_index`]: linearizable reads, the read index asked once per round of readers;
//! - [`status`]: a node's view of the cluster in plain terms, for monitoring;
//! - [`network`]: how nodes reach each other: in one process for tests, or over TCP
//!   (optionally mutual TLS) with a hand-written binary encoding of openraft's messages.
//!
//! `docs/cluster.md` says what is guaranteed and what is not built yet.

// openraft's traits fix the error types (`StorageError`, `RPCError`: 128 to 224 octets);
// the helpers that build them return them as the traits do.
#![allow(clippy::result_large_err)]

pub mod existing_data;
pub mod log_store;
pub mod member;
pub mod membership;
pub mod network;
pub mod node;
pub mod raft_state;
pub mod read_index;
pub mod snapshot_file;
pub mod snapshot_state;
pub mod state_machine;
pub mod status;
pub mod types;

pub use member::Member;
pub use membership::MembershipError;
pub use node::{ClusterError, ClusterNode, Timing};
