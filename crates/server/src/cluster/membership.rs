//! Membership changes asked over LDAP (Larch's extended operations
//! [`larch_proto::exop::CLUSTER_ADD_NODE`] and [`CLUSTER_REMOVE_NODE`], run by
//! `session/cluster_membership.rs`): the request checked, run by the node
//! ([`larch_cluster::membership`]), and its outcome as an LDAP result.
//!
//! The outcomes:
//! - `success`, the message saying what was done;
//! - on a follower, a `referral` (10) to the leader's LDAP URL, as for a write (or
//!   `unavailable`, 52, while no leader is known);
//! - `unwillingToPerform` (53): the change makes no sense for this cluster (the node is a
//!   member already, not a member, the last voter; its address is taken; it never caught
//!   up), or the request names a malformed address;
//! - `busy` (51): another membership change is under way;
//! - `unavailable` (52): a configuration was not committed in time (it may still be), or
//!   the engine failed.
//!
//! [`CLUSTER_REMOVE_NODE`]: larch_proto::exop::CLUSTER_REMOVE_NODE

use larch_cluster::{ClusterNode, Member, MembershipError};
use larch_proto::ResultCode;

use crate::config::cluster::{is_host_port, is_ldap_url};
use crate::error::OpError;

/// What the administrator asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MembershipChange {
    /// Add node `id`, reached at `member`.
    Add {
        /// The new node's number.
        id: u64,
        /// Its addresses.
        member: Member,
    },
    /// Remove node `id`.
    Remove {
        /// The node's number.
        id: u64,
    },
}

impl MembershipChange {
    /// The addition of node `id` at Raft address `raft` and URL `ldap_url`, as the request
    /// carried them; malformed ones are refused.
    pub fn add(id: u64, raft: &[u8], ldap_url: &[u8]) -> Result<MembershipChange, OpError> {
        let text = |octets: &[u8], what: &str| {
            std::str::from_utf8(octets)
                .map(str::to_string)
                .map_err(|_| OpError::protocol(format!("add node: the {what} is not UTF-8")))
        };
        let raft = text(raft, "Raft address")?;
        let ldap_url = text(ldap_url, "LDAP URL")?;
        if !is_host_port(&raft) {
            return Err(OpError::unwilling(format!(
                "add node: the Raft address `{raft}` is not host:port"
            )));
        }
        if !is_ldap_url(&ldap_url) {
            return Err(OpError::unwilling(format!(
                "add node: `{ldap_url}` is not an ldap:// or ldaps:// URL"
            )));
        }
        Ok(MembershipChange::Add {
            id,
            member: Member::new(raft, ldap_url),
        })
    }

    /// Runs the change on `node`: what was done, or the result to answer.
    pub async fn run(self, node: &ClusterNode) -> Result<String, OpError> {
        match self {
            MembershipChange::Add { id, member } => {
                let done = format!("node {id} at {member} added as a voter");
                node.add_node(id, member).await.map(|()| done)
            }
            MembershipChange::Remove { id } => {
                let done = format!("node {id} removed from the cluster");
                node.remove_node(id).await.map(|()| done)
            }
        }
        .map_err(refusal)
    }
}

/// The LDAP result of a change not made (see the module documentation).
fn refusal(e: MembershipError) -> OpError {
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
            format!("this server is a follower and knows no LDAP URL of its leader, node {leader}: ask it"),
        ),
        MembershipError::Refused(why) => OpError::unwilling(why),
        MembershipError::InProgress(why) => OpError::new(ResultCode::BUSY, why),
        MembershipError::Unconfirmed(why) => OpError::new(ResultCode::UNAVAILABLE, why),
        other => OpError::new(ResultCode::UNAVAILABLE, other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_addition_needs_well_formed_addresses() {
        let ok = MembershipChange::add(4, b"10.0.0.4:7389", b"ldap://10.0.0.4:389").unwrap();
        assert_eq!(
            ok,
            MembershipChange::Add {
                id: 4,
                member: Member::new("10.0.0.4:7389", "ldap://10.0.0.4:389"),
            }
        );
        for (raft, url, code) in [
            (
                &b"10.0.0.4"[..],
                &b"ldap://h"[..],
                ResultCode::UNWILLING_TO_PERFORM,
            ),
            (b"h:0", b"ldap://h", ResultCode::UNWILLING_TO_PERFORM),
            (b"h:1", b"http://h", ResultCode::UNWILLING_TO_PERFORM),
            (b"h:1", b"ldap://", ResultCode::UNWILLING_TO_PERFORM),
            (b"h:\xff", b"ldap://h", ResultCode::PROTOCOL_ERROR),
        ] {
            let e = MembershipChange::add(4, raft, url).unwrap_err();
            assert_eq!(e.code, code, "{e:?}");
        }
    }

    #[test]
    fn refusals_become_the_documented_results() {
        let referral = refusal(MembershipError::NotLeader {
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
                MembershipError::Refused("x".into()),
                ResultCode::UNWILLING_TO_PERFORM,
            ),
            (MembershipError::InProgress("x".into()), ResultCode::BUSY),
            (MembershipError::Unconfirmed("x".into()), ResultCode::UNAVAILABLE),
            (MembershipError::Engine("x".into()), ResultCode::UNAVAILABLE),
        ];
        for (e, code) in cases {
            assert_eq!(refusal(e.clone()).code, code, "{e:?}");
        }
    }
}
