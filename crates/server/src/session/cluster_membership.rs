//! Larch's cluster membership changes ([`larch_proto::exop::CLUSTER_ADD_NODE`],
//! [`CLUSTER_REMOVE_NODE`]) on the connection: `larch cluster add-node` and `remove-node`.
//!
//! Steps:
//! 1. the request's controls are read (no proxied authorization), then the requester must
//!    be the configured administrator (`insufficientAccessRights`, 50: the change decides
//!    which machines hold every entry); the value must decode (`protocolError`, 2); a server
//!    that is not a cluster node answers `unwillingToPerform` (53);
//! 2. the change runs on a task of its own ([`crate::cluster::membership`]), since adding
//!    a node waits until it has caught up with the log; the connection goes on reading and
//!    answering meanwhile;
//! 3. its outcome is the answer: `success` with what was done, a referral to the leader
//!    from a follower, or the refusal's code and reason.
//!
//! [`CLUSTER_REMOVE_NODE`]: larch_proto::exop::CLUSTER_REMOVE_NODE

use std::sync::Arc;

use larch_cluster::ClusterNode;
use larch_proto::exop::{
    AddNodeRequest, ExtendedValue, RemoveNodeRequest, CLUSTER_ADD_NODE, CLUSTER_REMOVE_NODE,
};
use larch_proto::{op_tag, ExtendedRequest};

use super::complete::{Ending, OpTrace};
use super::dispatch::Controls;
use super::Session;
use crate::cluster::membership::MembershipChange;
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
        let tx = self.out_tx.clone();
        let completion = self.completion(trace, pdu, self.identity.clone());
        tokio::spawn(async move {
            let reply = match change.run(&node).await {
                Ok(done) => Reply {
                    message: done,
                    name: Some(oid),
                    ..Reply::success()
                },
                Err(e) => Reply::from(e),
            };
            let mut out = Vec::new();
            completion.complete(&mut out, Ending::reply(op_tag::EXTENDED_RESPONSE, &reply));
            let _ = tx.send(out).await;
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
