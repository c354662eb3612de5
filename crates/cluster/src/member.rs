//! What the cluster's configuration records of each member: where its Raft transport
//! listens and where LDAP clients reach it. openraft keeps one [`Member`] per node in every
//! membership entry of the log, so a node added at run time is known to every node (its
//! address for the transport, its URL for a follower's referrals) without any
//! configuration file naming it.

use std::fmt;

/// One member of the cluster (openraft's `Node` type for [`crate::types::Larch`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Member {
    /// Where its Raft transport listens: `host:port`.
    pub raft: String,
    /// Where clients reach it: an `ldap://` or `ldaps://` URL, for referrals to it when it
    /// leads; empty when unknown (a follower then answers writes with `unavailable`).
    pub ldap_url: String,
}

impl Member {
    /// The member at Raft address `raft`, reached by clients at `ldap_url`.
    pub fn new(raft: impl Into<String>, ldap_url: impl Into<String>) -> Member {
        Member {
            raft: raft.into(),
            ldap_url: ldap_url.into(),
        }
    }

    /// Where clients reach it, when known.
    pub fn client_url(&self) -> Option<&str> {
        Some(self.ldap_url.as_str()).filter(|u| !u.is_empty())
    }
}

impl fmt::Display for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.raft)?;
        if let Some(url) = self.client_url() {
            write!(f, " ({url})")?;
        }
        Ok(())
    }
}
