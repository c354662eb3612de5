//! [`SyncError`]: why a consumer's session with its provider ended. Every one is followed by
//! a retry per the table's `retry` schedule (`super::consumer`), except where said.

use larch_proto::ResultCode;

use super::cookie::CookieError;

/// Why a session ended.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// A socket or file operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The provider closed the connection.
    #[error("the provider closed the connection")]
    Closed,
    /// No answer in time.
    #[error("no answer to the {0} within the time limit")]
    Timeout(&'static str),
    /// TLS could not be set up or the handshake failed.
    #[error("TLS: {0}")]
    Tls(String),
    /// The provider sent octets that are not the LDAP messages expected.
    #[error("protocol: {0}")]
    Protocol(String),
    /// The provider announced a message larger than the limit.
    #[error("the provider sent a message over the limit of {max} octets")]
    TooLarge {
        /// The limit (`limits.max_pdu_bytes`).
        max: usize,
    },
    /// The provider answered an operation with a failure.
    #[error("the provider answered the {what} with {} ({}): {message}", code.0, code.name().unwrap_or("unknown"))]
    Refused {
        /// The operation.
        what: &'static str,
        /// The result code.
        code: ResultCode,
        /// The diagnostic message.
        message: String,
    },
    /// `credentials_file` cannot be read.
    #[error("credentials_file {path}: {reason}")]
    Credentials {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// A cookie that cannot be read (from the provider or from the base entry).
    #[error("cookie: {0}")]
    Cookie(#[from] CookieError),
    /// An entry the provider sent cannot be stored here.
    #[error("entry `{dn}` from the provider: {reason}")]
    Entry {
        /// Its DN.
        dn: String,
        /// Why.
        reason: String,
    },
    /// A change could not be applied to the local store (the batch was not committed).
    #[error("applying the provider's changes: {0}")]
    Apply(String),
    /// The store refused the write as a whole (closed, writes halted).
    #[error("the store: {0}")]
    Store(#[from] larch_store::StoreError),
    /// The provider cannot send a delta from the cookie (`e-syncRefreshRequired`, 4096): the
    /// next search sends no cookie (a full refresh), at once.
    #[error("the provider asks for a full refresh (e-syncRefreshRequired)")]
    RefreshRequired,
}

impl SyncError {
    /// An I/O error while doing `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> SyncError {
        SyncError::Io {
            what: what.into(),
            source,
        }
    }
}
