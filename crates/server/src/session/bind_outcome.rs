//! Larch's cluster bind outcome ([`larch_proto::exop::CLUSTER_BIND_OUTCOME`]) on the
//! connection: the leader records a bind a follower decided under password policy
//! ([`crate::auth::cluster_record`] sends it).
//!
//! Steps:
//! 1. the request's controls are read and the identity it runs as worked out (the
//!    follower's chain names itself in a Proxied Authorization control); it must be the
//!    administrator or this node's `cluster.bind_dn`, the identity followers forward as
//!    (`insufficientAccessRights`, 50: a record can lock any account); a server that is
//!    not a cluster node answers `unwillingToPerform` (53); the value must decode
//!    (`protocolError`, 2) and name a DN (`invalidDNSyntax`, 34);
//! 2. the record goes to this node's writer as a bind's on this node would
//!    ([`crate::auth::policy::record_here`]): read in the writer's transaction, written
//!    through the write hooks when something changed; a node that no longer leads refuses
//!    it (a referral to the leader, or `unavailable`);
//! 3. once it is durable and applied, the answer is `success` with the store's LSN, which
//!    the follower waits to apply. An account that no longer exists, or no password policy
//!    in force, records nothing and succeeds.

use larch_model::dn::NormDn;
use larch_proto::exop::{BindOutcomeRequest, BindOutcomeResponse, ExtendedValue, CLUSTER_BIND_OUTCOME};
use larch_proto::{ExtendedRequest, ResultCode};
use tokio::sync::oneshot;

use super::complete::OpTrace;
use super::dispatch::Controls;
use super::Session;
use crate::auth::cluster_record::update_of;
use crate::auth::policy::record_here;
use crate::config::cluster::ClusterWrites;
use crate::controls::{OpKind, RequestControls};
use crate::error::OpError;
use crate::outcome::Reply;
use crate::ppolicy::AccountUpdate;

impl Session {
    /// Records a follower's bind (see the module documentation).
    pub(super) fn cluster_bind_outcome(
        &mut self,
        trace: OpTrace,
        req: ExtendedRequest<'_>,
        controls: Controls<'_>,
        pdu: &[u8],
        out: &mut Vec<u8>,
    ) {
        let (account, update, time) = match self.bind_outcome_asked(req, controls) {
            Ok(asked) => asked,
            Err(e) => return self.refuse_extended(&trace, pdu, out, e),
        };
        let (settled_tx, settled_rx) = oneshot::channel();
        record_here(&self.dir, account, update, time, move |settled| {
            let _ = settled_tx.send(settled);
        });
        let dir = self.dir.clone();
        self.answer_extended_later(trace, pdu, async move {
            match settled_rx.await {
                Ok(settled) => match settled.map_err(OpError::from).and_then(|r| r) {
                    Ok(()) => applied_reply(dir.store.current().lsn()),
                    Err(e) => Reply::from(e),
                },
                Err(_) => Reply::from(OpError::new(ResultCode::UNAVAILABLE, "the store stopped")),
            }
        });
    }

    /// Step 1: the account, its record and the bind's time, or the error to answer.
    fn bind_outcome_asked(
        &mut self,
        req: ExtendedRequest<'_>,
        controls: Controls<'_>,
    ) -> Result<(NormDn, AccountUpdate, i64), OpError> {
        let controls = RequestControls::parse(controls, OpKind::Extended)?;
        let identity = self.acting_identity(&controls)?;
        let Some(cluster) = &self.dir.config.cluster else {
            return Err(OpError::unwilling(
                "this server is not a cluster node (no [cluster] table)",
            ));
        };
        let forwarder = match &cluster.writes {
            ClusterWrites::Forward(f) => NormDn::from_text(f.bind_dn.as_bytes(), &*self.dir.schema).ok(),
            _ => None,
        };
        let allowed = identity.is_admin() || forwarder.is_some_and(|f| identity.norm_dn() == Some(&f));
        if !allowed {
            return Err(OpError::new(
                ResultCode::INSUFFICIENT_ACCESS_RIGHTS,
                "only the administrator or cluster.bind_dn may record a bind's outcome",
            ));
        }
        let request = BindOutcomeRequest::decode_value(req.value)
            .map_err(|e| OpError::protocol(format!("bind outcome: {e}")))?;
        let account = NormDn::from_text(request.account, &*self.dir.schema)?;
        Ok((account, update_of(request.outcome), request.time_micros))
    }
}

/// Step 3's answer.
fn applied_reply(lsn: u64) -> Reply {
    let mut value = Vec::new();
    BindOutcomeResponse { lsn }.encode_value(&mut value);
    Reply {
        name: Some(CLUSTER_BIND_OUTCOME),
        value: Some(value),
        ..Reply::success()
    }
}
