//! The Password Modify extended operation (RFC 3062) on the connection.
//!
//! Steps:
//! 1. the request's controls and value are read (`protocolError`, 2, when the value does
//!    not decode); the confidentiality policy applies as to every write
//!    (`confidentialityRequired`, 13, see [`crate::auth::confidentiality`]);
//! 2. [`crate::ops::password_modify::prepare_password_modify`] checks the requester (the
//!    connection's identity, or the one a Proxied Authorization control assumes, RFC 4370),
//!    the target and the access on the current version; on a replica, a target inside a
//!    replicated subtree is referred or chained to the provider (`crate::syncrepl`); on a
//!    cluster's follower, the request is forwarded to the leader (`crate::forwarding`);
//! 3. when an old password is given, the failed-bind throttle applies to the target entry
//!    from the client's address as for a Bind of it (the old password is a guess like a
//!    bind's): the check may be held back or refused, a wrong old password counts as a
//!    failure and a right one clears the pair's failures;
//! 4. the old-password check, the generation of a new password and its hashing run on a
//!    blocking thread with a slow-work permit when they are slow (argon2, PBKDF2), else
//!    inline;
//! 5. the change goes to the store's writer like every write (the operation holds one of
//!    the connection's permits and is registered for Cancel), and the ExtendedResponse,
//!    with genPasswd when the server generated the password, is sent once it is durable.

use std::sync::Arc;

use larch_proto::exop::{ExtendedValue, PasswordModifyRequest, PasswordModifyResponse};
use larch_proto::{op_tag, ExtendedRequest, ResultCode};

use super::bind::Checked;
use super::complete::{Ending, OpTrace};
use super::dispatch::Controls;
use super::Session;
use crate::auth::confidentiality;
use crate::controls::{OpKind, RequestControls};
use crate::error::OpError;
use crate::forwarding;
use crate::identity::Identity;
use crate::ops::password_modify::{
    apply_password_modify, prepare_password_modify, FinishError, ReadyPasswordModify,
};
use crate::outcome::Reply;
use crate::password::gate;
use crate::syncrepl::chain::Chain;
use crate::syncrepl::read_only::{self, Route};

impl Session {
    /// Runs a Password Modify request (see the module documentation).
    pub(super) async fn password_modify(
        &mut self,
        trace: OpTrace,
        req: ExtendedRequest<'_>,
        controls: Controls<'_>,
        pdu: &[u8],
        out: &mut Vec<u8>,
    ) {
        match self.prepare_password_change(req, controls).await {
            Ok(PasswordChange::Chained(chain)) => {
                self.chain(trace, chain, OpKind::Extended, controls, pdu, out)
                    .await
            }
            Ok(PasswordChange::Ready(ready, identity)) => {
                let completion = self.completion(trace, pdu, identity.clone());
                self.submit(
                    completion,
                    op_tag::EXTENDED_RESPONSE,
                    identity,
                    move |txn, ctx| {
                        let generated = ready.generated.clone();
                        apply_password_modify(txn, ctx, ready)?;
                        Ok(password_modify_reply(generated.as_deref()))
                    },
                )
                .await
            }
            Err(e) => {
                let reply = super::restricted::error_reply(e, self.asks_policy);
                self.complete(
                    &trace,
                    pdu,
                    None,
                    out,
                    Ending::reply(op_tag::EXTENDED_RESPONSE, &reply),
                );
            }
        }
    }

    /// Steps 1 to 4 of the module documentation: the change ready for the writer, or the
    /// error to answer.
    async fn prepare_password_change(
        &mut self,
        req: ExtendedRequest<'_>,
        controls: Controls<'_>,
    ) -> Result<PasswordChange, OpError> {
        let forwarded = forwarding::is_forwarded(controls.as_ref());
        let controls = RequestControls::parse(controls, OpKind::Extended)?;
        confidentiality::require_tls(&self.dir, &self.client, "a Password Modify")?;
        let request = PasswordModifyRequest::decode_value(req.value)
            .map_err(|e| OpError::protocol(format!("Password Modify: {e}")))?;
        let identity = self.acting_identity(&controls)?;
        let prepared = {
            let version = self.reader.current().clone();
            let ctx = crate::ops::WriteContext {
                dir: &self.dir,
                identity: &identity,
                client: &self.client,
            };
            prepare_password_modify(&ctx, &version, &request, controls.manage_dsa_it)?
        };
        let route = match read_only::route_write(
            &self.dir.replication,
            Some(prepared.target()),
            prepared.target().as_str(),
        ) {
            Route::Local => forwarding::route_write(
                self.dir.cluster_forwarding.get(),
                &self.dir.suffixes,
                Some(prepared.target()),
                forwarded,
            ),
            elsewhere => elsewhere,
        };
        match route {
            Route::Local => {}
            Route::Refer(e) => return Err(e),
            Route::Chain(chain) => return Ok(PasswordChange::Chained(chain)),
        }
        let ip = self.client.addr.map(|a| a.ip());
        let account = prepared
            .checks_old_password()
            .then(|| self.dir.bind_throttle.account(prepared.target().as_str()));
        if let Some(account) = account {
            self.throttle(ip, account, "password checks").await?;
        }
        let settings = self.dir.config.password.clone();
        let finished = if prepared.is_slow(&settings) {
            tokio::task::spawn_blocking(move || gate::with_permit(|| prepared.finish(&settings)))
                .await
                .unwrap_or_else(|_| {
                    Err(FinishError::Other(OpError::new(
                        ResultCode::OTHER,
                        "the password check did not complete",
                    )))
                })
        } else {
            prepared.finish(&settings)
        };
        if let Some(account) = account {
            let checked = match &finished {
                Ok(_) => Checked::Right,
                Err(FinishError::OldPassword(_)) => Checked::Wrong,
                Err(FinishError::Other(_)) => Checked::Neither,
            };
            self.tell_throttle(checked, ip, account);
        }
        finished
            .map(|ready| PasswordChange::Ready(ready, identity))
            .map_err(FinishError::into_op_error)
    }
}

/// What steps 1 to 4 lead to.
enum PasswordChange {
    /// The change, ready for the writer, and the identity it runs as (the connection's, or
    /// the one a Proxied Authorization control assumes).
    Ready(ReadyPasswordModify, Arc<Identity>),
    /// On a replica that chains writes (the target is replicated) or a cluster's follower
    /// that forwards them: the request goes to the provider or the leader as it is
    /// (`crate::syncrepl::chain`).
    Chained(Arc<Chain>),
}

/// The success reply, with genPasswd when the server generated the password.
fn password_modify_reply(generated: Option<&str>) -> Reply {
    let mut value = Vec::new();
    let has_value = PasswordModifyResponse {
        generated_password: generated.map(str::as_bytes),
    }
    .encode_value(&mut value);
    Reply {
        value: has_value.then_some(value),
        ..Reply::success()
    }
}
