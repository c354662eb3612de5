//! Larch's cluster membership changes ([`larch_proto::exop::CLUSTER_ADD_NODE`],
//! [`CLUSTER_REMOVE_NODE`]) on the connection: `larch cluster add-node` and `remove-node`.
//!
//! Steps:
//! 1. the request's controls are read (no proxied authorization), then the requester must
//!    be the configured administrator (`insufficientAccessRights`, 50: the change decides
//!    which machines hold every entry); the value must decode (`protocolError`, 2) and name
//!    a `host:port` and an `ldap://` or `ldaps://` URL (`unwillingToPerform`, 53); a server
//!    that is not a cluster node answers `unwillingToPerform` too;
//! 2. the change runs on a task of its own, by the node ([`larch_cluster::membership`]),
//!    since adding a node waits until it has caught up with the log; the connection goes on
//!    reading and answering meanwhile;
//! 3. its outcome is the answer: `success` with what was done, or the refusal as
//!    `crate::error` maps it (a referral to the leader from a follower, 53, 51, 52).
//!
//! [`CLUSTER_REMOVE_NODE`]: larch_proto::exop::CLUSTER_REMOVE_NODE

use std::sync::Arc;

use larch_cluster::{ClusterNode, Member};
use larch_proto::exop::{
    AddNodeRequest, ExtendedValue, RemoveNodeRequest, CLUSTER_ADD_NODE, CLUSTER_REMOVE_NODE,
};
use larch_proto::ExtendedRequest;

use super::complete::OpTrace;
use super::dispatch::Controls;
use super::Session;
use crate::config::cluster::{is_host_port, is_ldap_url};
use crate::controls::{OpKind, RequestControls};
use crate::error::OpError;
use crate::outcome::Reply;

impl Session {
    /// Runs a membership change request (see the module documentation).
    pub(super) fn cluster_membership(
        &mut self,
        trace: OpTrace,
        req: ExtendedRequest<'_>,
        controls: Controls<'_>,
        pdu: &[u8],
        out: &mut Vec<u8>,
    ) {
        let (node, change, oid) = match self.membership_change(req, controls) {
            Ok(asked) => asked,
            Err(e) => return self.refuse_extended(&trace, pdu, out, e),
        };
        self.answer_extended_later(trace, pdu, async move {
            match change.run(&node).await {
                Ok(done) => Reply {
                    message: done,
                    name: Some(oid),
                    ..Reply::success()
                },
                Err(e) => Reply::from(e),
            }
        });
    }

    /// Step 1: the node, the change asked and the operation's OID, or the error to answer.
    fn membership_change(
        &self,
        req: ExtendedRequest<'_>,
        controls: Controls<'_>,
    ) -> Result<(Arc<ClusterNode>, MembershipChange, &'static str), OpError> {
        RequestControls::parse(controls, OpKind::Extended)?.refuse_proxied("a cluster membership change")?;
        self.administrator_only("change the cluster's members")?;
        let (change, oid) = if req.name == CLUSTER_ADD_NODE.as_bytes() {
            let r = AddNodeRequest::decode_value(req.value)
                .map_err(|e| OpError::protocol(format!("add node: {e}")))?;
            (
                MembershipChange::add(r.node_id, r.raft, r.ldap_url)?,
                CLUSTER_ADD_NODE,
            )
        } else {
            let r = RemoveNodeRequest::decode_value(req.value)
                .map_err(|e| OpError::protocol(format!("remove node: {e}")))?;
            (MembershipChange::Remove { id: r.node_id }, CLUSTER_REMOVE_NODE)
        };
        let node =
            self.dir.cluster.get().cloned().ok_or_else(|| {
                OpError::unwilling("this server is not a cluster node (no [cluster] table)")
            })?;
        Ok((node, change, oid))
    }
}

/// What the administrator asked.
#[derive(Debug, Clone, PartialEq, Eq)]
enum MembershipChange {
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
    fn add(id: u64, raft: &[u8], ldap_url: &[u8]) -> Result<MembershipChange, OpError> {
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
    async fn run(self, node: &ClusterNode) -> Result<String, OpError> {
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
        .map_err(OpError::from)
    }
}

#[cfg(test)]
mod tests {
    use larch_proto::ResultCode;

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
}
