//! A client write chained to the provider on a replica (`writes = "chain"`,
//! [`crate::syncrepl::chain`]), or forwarded to the leader on a cluster's follower
//! ([`crate::forwarding`]).
//!
//! Steps:
//! 1. the request's controls are read and checked for its kind, the confidentiality policy
//!    applies as to every write, and the identity the write runs as is worked out (a
//!    Proxied Authorization control of the client's is checked by this server's rules);
//! 2. the operation takes one of the connection's permits and is registered (as a write:
//!    Cancel does not stop it, Abandon only silences its response);
//! 3. a task forwards it and completes it with the provider's (or leader's) reply: one
//!    outcome, logged and counted here like any other operation.

use std::sync::Arc;

use larch_proto::op_tag;

use super::complete::{Ending, OpTrace};
use super::dispatch::{response_tag, Controls};
use super::inflight::{OpClass, StopRequest};
use super::restricted::error_reply;
use super::Session;
use crate::auth::confidentiality;
use crate::controls::{OpKind, RequestControls};
use crate::error::OpError;
use crate::identity::Identity;
use crate::syncrepl::chain::Chain;

impl Session {
    /// Forwards request `pdu` (of `kind`) through `chain` (see the module documentation).
    pub(super) async fn chain(
        &mut self,
        trace: OpTrace,
        chain: Arc<Chain>,
        kind: OpKind,
        controls: Controls<'_>,
        pdu: &[u8],
        out: &mut Vec<u8>,
    ) {
        let response = response_tag(trace.request_tag).unwrap_or(op_tag::EXTENDED_RESPONSE);
        let identity = match self.chained_identity(controls, kind) {
            Ok(identity) => identity,
            Err(e) => {
                let reply = error_reply(e, self.asks_policy);
                return self.complete(&trace, pdu, None, out, Ending::reply(response, &reply));
            }
        };
        let completion = self.completion(trace, pdu, identity.clone());
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return;
        };
        let guard = self
            .inflight
            .register(completion.msgid(), completion.op(), OpClass::Write);
        let tx = self.done_tx.clone();
        let request = pdu.to_vec();
        let authz_id = identity.authz_id();
        tokio::spawn(async move {
            let reply = chain.forward(&request, &authz_id).await;
            let abandoned = guard.state().stop_request() == StopRequest::Abandon;
            completion.complete_write(abandoned, response, &reply, &tx);
            drop(guard);
            drop(permit);
        });
    }

    /// Step 1.
    fn chained_identity(&mut self, controls: Controls<'_>, kind: OpKind) -> Result<Arc<Identity>, OpError> {
        let controls = RequestControls::parse(controls, kind)?;
        confidentiality::require_tls(&self.dir, &self.client, confidentiality::what(kind))?;
        self.acting_identity(&controls)
    }
}
