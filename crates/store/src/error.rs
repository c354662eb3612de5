//! The store's errors, and the LDAP result code each one means to a client.

use std::path::PathBuf;
use std::sync::Arc;

use larch_proto::ResultCode;

use crate::consensus::ReplicateError;
use crate::health::WriteHalt;
use crate::snapshot::SnapshotError;
use crate::wal::WalError;

/// What can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The entry does not exist.
    #[error("no such entry")]
    NoSuchEntry,
    /// The parent of a new or moved entry does not exist.
    #[error("the parent entry does not exist")]
    NoSuchParent,
    /// An entry with that name already exists.
    #[error("an entry with that name already exists")]
    AlreadyExists,
    /// Deleting an entry that has children.
    #[error("the entry has subordinate entries")]
    NotLeaf,
    /// Moving an entry below itself.
    #[error("an entry cannot be moved below itself")]
    MoveBelowItself,
    /// A DN deeper than [`crate::version::MAX_DN_DEPTH`].
    #[error("the DN would be deeper than {} RDNs", crate::version::MAX_DN_DEPTH)]
    TooDeep,
    /// An entry too large for one log record.
    #[error(
        "the entry takes {len} octets, above the limit of {} for one change",
        crate::wal::MAX_RECORD_PAYLOAD
    )]
    TooLarge {
        /// The encoded change's size.
        len: usize,
    },
    /// All 2^32 - 1 entry IDs are used (export and import to compact them).
    #[error("entry IDs are exhausted; export and re-import the directory")]
    IdsExhausted,
    /// The log refused or lost a write; the store accepts no more writes until it is
    /// reopened.
    #[error("the transaction log failed: {0}")]
    Wal(#[from] WalError),
    /// A snapshot could not be written or read.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// A cluster did not apply the write ([`crate::consensus`]).
    #[error(transparent)]
    Replication(#[from] ReplicateError),
    /// Something a store in a cluster does not do, or a single server's store cannot;
    /// the message says which.
    #[error("{0}")]
    Unsupported(&'static str),
    /// The store is closing or closed.
    #[error("the store is shut down")]
    Closed,
    /// The store stopped accepting writes after its log failed ([`crate::health`]): every
    /// write gets this same halt until the store is reopened.
    #[error("the store accepts no writes: {0}; reopen it once the disk is fixed")]
    Failed(Arc<WriteHalt>),
    /// A record in the log cannot be replayed (the log does not match the snapshot).
    #[error("cannot replay log record {lsn}: {problem}")]
    Replay {
        /// The record.
        lsn: u64,
        /// Why.
        problem: String,
    },
    /// The newest snapshot is unreadable; startup stops rather than serve lost data.
    #[error("{problem}")]
    CorruptSnapshot {
        /// The damaged file.
        path: PathBuf,
        /// The full message: what is wrong and what the operator can do.
        problem: String,
    },
    /// The index configuration does not fit the schema.
    #[error(transparent)]
    IndexConfig(#[from] crate::index::IndexConfigError),
    /// A filesystem operation outside the log and snapshots.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    /// The LDAP result code a client gets for this error (RFC 4511 appendix A).
    pub fn result_code(&self) -> ResultCode {
        match self {
            StoreError::NoSuchEntry | StoreError::NoSuchParent => ResultCode::NO_SUCH_OBJECT,
            StoreError::AlreadyExists => ResultCode::ENTRY_ALREADY_EXISTS,
            StoreError::NotLeaf => ResultCode::NOT_ALLOWED_ON_NON_LEAF,
            StoreError::MoveBelowItself | StoreError::TooDeep | StoreError::IdsExhausted => {
                ResultCode::UNWILLING_TO_PERFORM
            }
            StoreError::TooLarge { .. } => ResultCode::ADMIN_LIMIT_EXCEEDED,
            StoreError::Closed | StoreError::Failed(_) | StoreError::Wal(_) => ResultCode::UNAVAILABLE,
            // A follower that knows the leader refers the client there (the server makes
            // the referral); with no leader known (an election), the cluster is briefly
            // unavailable.
            StoreError::Replication(ReplicateError::NotLeader { leader: Some(_) }) => ResultCode::REFERRAL,
            StoreError::Replication(ReplicateError::NotLeader { leader: None }) => ResultCode::UNAVAILABLE,
            StoreError::Replication(ReplicateError::Superseded) => ResultCode::BUSY,
            StoreError::Replication(ReplicateError::Unavailable(_)) => ResultCode::UNAVAILABLE,
            _ => ResultCode::OTHER,
        }
    }
}
