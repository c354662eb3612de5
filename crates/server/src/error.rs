//! The one place where failures become LDAP results: [`OpError`] carries the RFC 4511
//! result code, the matchedDN and a diagnostic message for a person, and every error type
//! an operation can meet (model, store, DN, decoding, a cluster membership change)
//! converts into it here.

use larch_cluster::MembershipError;
use larch_model::dn::DnError;
use larch_model::ModelError;
use larch_proto::controls::PasswordPolicyError;
use larch_proto::{DecodeError, LdapResult, ResultCode};
use larch_store::consensus::ReplicateError;
use larch_store::{StoreError, WriteHalt};

use crate::opattrs::OpAttrsError;

/// An operation's failure as the client will see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpError {
    /// The result code.
    pub code: ResultCode,
    /// `matchedDN`: with noSuchObject (and aliasProblem, invalidDNSyntax for a bad base),
    /// the deepest existing ancestor of the name asked for, as stored.
    pub matched_dn: String,
    /// The diagnostic message.
    pub message: String,
    /// Referral URIs (only with [`ResultCode::REFERRAL`]).
    pub referrals: Vec<String>,
    /// The password policy error behind the failure, for the password policy response
    /// control when the request asked for it.
    pub policy: Option<PasswordPolicyError>,
}

impl OpError {
    /// An error with a code and a message.
    pub fn new(code: ResultCode, message: impl Into<String>) -> OpError {
        OpError {
            code,
            matched_dn: String::new(),
            message: message.into(),
            referrals: Vec::new(),
            policy: None,
        }
    }

    /// Sets the password policy error.
    pub fn with_policy(mut self, error: PasswordPolicyError) -> OpError {
        self.policy = Some(error);
        self
    }

    /// `protocolError` (2).
    pub fn protocol(message: impl Into<String>) -> OpError {
        OpError::new(ResultCode::PROTOCOL_ERROR, message)
    }

    /// `unwillingToPerform` (53).
    pub fn unwilling(message: impl Into<String>) -> OpError {
        OpError::new(ResultCode::UNWILLING_TO_PERFORM, message)
    }

    /// `noSuchObject` (32) naming `dn`, with the deepest existing ancestor as matchedDN.
    pub fn no_such_object(dn: &str, matched_dn: impl Into<String>) -> OpError {
        OpError {
            matched_dn: matched_dn.into(),
            ..OpError::new(ResultCode::NO_SUCH_OBJECT, format!("no entry `{dn}`"))
        }
    }

    /// `referral` (10) to `uris`, with the DN of the referral entry as matchedDN.
    pub fn referral(matched_dn: impl Into<String>, uris: Vec<String>) -> OpError {
        OpError {
            matched_dn: matched_dn.into(),
            referrals: uris,
            ..OpError::new(ResultCode::REFERRAL, "")
        }
    }

    /// `unavailable` (52) for every write once the store has stopped accepting them (its
    /// write-ahead log failed; see `larch_store::health`): the same words whatever
    /// connection asks, the system's words for the cause, what the operator must do, and
    /// no file name (that is in the error log).
    pub fn writes_halted(halt: &WriteHalt) -> OpError {
        OpError::new(
            ResultCode::UNAVAILABLE,
            format!(
                "the directory cannot write: the write-ahead log failed to {} ({}); \
                 restart the server once the disk is fixed",
                halt.op, halt.cause
            ),
        )
    }

    /// Sets the matchedDN.
    pub fn with_matched(mut self, matched_dn: impl Into<String>) -> OpError {
        self.matched_dn = matched_dn.into();
        self
    }

    /// Calls `f` with the `LDAPResult` of this error (borrowing its strings).
    pub fn with_result<R>(&self, f: impl FnOnce(LdapResult<'_>) -> R) -> R {
        let uris: Vec<&[u8]> = self.referrals.iter().map(|u| u.as_bytes()).collect();
        let mut result = LdapResult::new(self.code, self.matched_dn.as_bytes(), self.message.as_bytes());
        if !uris.is_empty() {
            result.referral = Some(larch_proto::SeqOf::from_items(&uris));
        }
        f(result)
    }
}

impl std::fmt::Display for OpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.code.name().unwrap_or("result");
        write!(f, "{name} ({}): {}", self.code.0, self.message)
    }
}

impl std::error::Error for OpError {}

impl From<ModelError> for OpError {
    fn from(e: ModelError) -> OpError {
        OpError::new(e.result_code(), e.to_string())
    }
}

impl From<DnError> for OpError {
    fn from(e: DnError) -> OpError {
        OpError::new(ResultCode::INVALID_DN_SYNTAX, e.to_string())
    }
}

impl From<StoreError> for OpError {
    fn from(e: StoreError) -> OpError {
        match e {
            StoreError::Failed(halt) => OpError::writes_halted(&halt),
            // A cluster's follower refers the write to the leader, as slapd's shadow
            // refers updates to its `updateref`: the URL names no DN, so the client
            // writes the same DN there (RFC 4511, 4.1.10).
            StoreError::Replication(ReplicateError::NotLeader { leader: Some(url) }) => OpError {
                message: "this server is a follower in a cluster: write to its leader".into(),
                ..OpError::referral("", vec![url])
            },
            e => OpError::new(e.result_code(), e.to_string()),
        }
    }
}

impl From<OpAttrsError> for OpError {
    /// The server could not set an entry's operational attributes (a schema without one of
    /// their types, no random bytes for entryUUID): `other`, the client did nothing wrong.
    fn from(e: OpAttrsError) -> OpError {
        OpError::new(
            ResultCode::OTHER,
            format!("cannot set the operational attributes: {e}"),
        )
    }
}

impl From<DecodeError> for OpError {
    /// A field that decoded as BER but not as what the protocol allows (a control value, an
    /// extended operation's value): `protocolError`.
    fn from(e: DecodeError) -> OpError {
        OpError::protocol(e.to_string())
    }
}

impl From<MembershipError> for OpError {
    /// A cluster membership change not made (`larch cluster add-node`, `remove-node`): on
    /// a follower, a referral to the leader's LDAP URL as for a write (`unavailable` while
    /// no leader, or none with a known URL); `unwillingToPerform` when the change makes no
    /// sense for this cluster (a member already, not a member, the last voter, an address
    /// taken, a node that never caught up); `busy` while another change runs;
    /// `unavailable` when a configuration was not committed in time, or the engine failed.
    fn from(e: MembershipError) -> OpError {
        match e {
            MembershipError::NotLeader {
                leader: Some(leader),
                leader_url: Some(url),
            } => OpError {
                message: format!("this server is a follower in a cluster: ask its leader, node {leader}"),
                ..OpError::referral("", vec![url])
            },
            MembershipError::NotLeader { leader: None, .. } => OpError::new(
                ResultCode::UNAVAILABLE,
                "no leader is known now (an election, or no majority): try again once one is elected",
            ),
            MembershipError::NotLeader {
                leader: Some(leader), ..
            } => OpError::new(
                ResultCode::UNAVAILABLE,
                format!(
                    "this server is a follower and knows no LDAP URL of its leader, node {leader}: ask it"
                ),
            ),
            MembershipError::Refused(why) => OpError::unwilling(why),
            MembershipError::InProgress(why) => OpError::new(ResultCode::BUSY, why),
            MembershipError::Unconfirmed(why) => OpError::new(ResultCode::UNAVAILABLE, why),
            other => OpError::new(ResultCode::UNAVAILABLE, other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_refusals_become_the_documented_results() {
        let referral = OpError::from(MembershipError::NotLeader {
            leader: Some(2),
            leader_url: Some("ldap://b".into()),
        });
        assert_eq!(referral.code, ResultCode::REFERRAL);
        assert_eq!(referral.referrals, vec!["ldap://b".to_string()]);
        let cases = [
            (
                MembershipError::NotLeader {
                    leader: None,
                    leader_url: None,
                },
                ResultCode::UNAVAILABLE,
            ),
            (
                MembershipError::NotLeader {
                    leader: Some(2),
                    leader_url: None,
                },
                ResultCode::UNAVAILABLE,
            ),
            (
                MembershipError::Refused("x".into()),
                ResultCode::UNWILLING_TO_PERFORM,
            ),
            (MembershipError::InProgress("x".into()), ResultCode::BUSY),
            (MembershipError::Unconfirmed("x".into()), ResultCode::UNAVAILABLE),
            (MembershipError::Engine("x".into()), ResultCode::UNAVAILABLE),
        ];
        for (e, code) in cases {
            assert_eq!(OpError::from(e.clone()).code, code, "{e:?}");
        }
    }
}
