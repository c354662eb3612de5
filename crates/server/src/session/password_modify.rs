//! The Password Modify extended operation (RFC 3062) on the connection.
//!
//! Steps:
//! 1. the request's controls and value are read (`protocolError`, 2, when the value does
//!    not decode); the confidentiality policy applies as to every write
//!    (`confidentialityRequired`, 13, see [`crate::auth::confidentiality`]);
//! 2. [`crate::ops::password_modify::prepare_password_modify`] checks the requester, the
//!    target and the access on the current version;
//! 3. when an old password is given, the failed-bind throttle of the client's address
//!    applies as for a Bind (the old password is a guess like a bind's): the check may be
//!    held back or refused, and a wrong old password counts as a failure;
//! 4. the old-password check, the generation of a new password and its hashing run on a
//!    blocking thread with a slow-work permit when they are slow (argon2, PBKDF2), else
//!    inline;
//! 5. the change goes to the store's writer like every write (the operation holds one of
//!    the connection's permits and is registered for Cancel), and the ExtendedResponse,
//!    with genPasswd when the server generated the password, is sent once it is durable.

use std::time::Instant;

use larch_proto::exop::{ExtendedValue, PasswordModifyRequest, PasswordModifyResponse};
use larch_proto::{
    op_tag, ExtendedRequest, ExtendedResponse, LdapMessage, LdapResult, MessageId, ProtocolOp, ResultCode,
};
use larch_store::StoreError;

use super::dispatch::write_op_error;
use super::inflight::{OpClass, StopRequest};
use super::Session;
use crate::auth::confidentiality;
use crate::auth::password::gate;
use crate::controls::{OpKind, RequestControls};
use crate::error::OpError;
use crate::ops::password_modify::{
    apply_password_modify, prepare_password_modify, FinishError, ReadyPasswordModify,
};
use crate::ops::WriteContext;
use crate::response::write_message;

impl Session {
    /// Runs a Password Modify request (see the module documentation).
    pub(super) async fn password_modify(
        &mut self,
        id: MessageId,
        req: ExtendedRequest<'_>,
        msg: LdapMessage<'_>,
        out: &mut Vec<u8>,
    ) {
        let fail = |out: &mut Vec<u8>, e: &OpError| write_op_error(out, id, op_tag::EXTENDED_RESPONSE, e);
        let controls = match RequestControls::parse(msg.controls, OpKind::Extended) {
            Ok(c) => c,
            Err(e) => return fail(out, &e),
        };
        if let Err(e) = confidentiality::require_tls(&self.dir, &self.client, "a Password Modify") {
            return fail(out, &e);
        }
        let request = match PasswordModifyRequest::decode_value(req.value) {
            Ok(r) => r,
            Err(e) => return fail(out, &OpError::protocol(format!("Password Modify: {e}"))),
        };
        let prepared = {
            let version = self.reader.current().clone();
            let ctx = WriteContext {
                dir: &self.dir,
                identity: &self.identity,
                client: &self.client,
            };
            match prepare_password_modify(&ctx, &version, &request, controls.manage_dsa_it) {
                Ok(p) => p,
                Err(e) => return fail(out, &e),
            }
        };
        let ip = self.client.addr.map(|a| a.ip());
        let throttled = prepared.checks_old_password().then_some(ip).flatten();
        if throttled.is_some() {
            if let Err(e) = self.throttle(throttled, "password checks").await {
                return fail(out, &e);
            }
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
        let ready = match finished {
            Ok(r) => r,
            Err(e) => {
                if let (FinishError::OldPassword(_), Some(ip)) = (&e, throttled) {
                    self.dir.bind_throttle.record_failure(ip, Instant::now());
                }
                return fail(out, &e.into_op_error());
            }
        };
        self.submit_password_modify(id, ready).await;
    }

    /// Hands the change to the store's writer; the response goes out once it is durable.
    async fn submit_password_modify(&mut self, id: MessageId, ready: ReadyPasswordModify) {
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return;
        };
        let guard = self.inflight.register(id, OpClass::Write);
        let dir = self.dir.clone();
        let identity = self.identity.clone();
        let client = self.client.clone();
        let tx = self.done_tx.clone();
        let generated = ready.generated.clone();
        self.dir.store.submit(
            move |txn| {
                let ctx = WriteContext {
                    dir: &dir,
                    identity: &identity,
                    client: &client,
                };
                apply_password_modify(txn, &ctx, ready)
            },
            move |settled: Result<Result<(), OpError>, StoreError>| {
                let result = settled.unwrap_or_else(|e| Err(OpError::from(e)));
                if guard.state().stop_request() != StopRequest::Abandon {
                    let mut out = Vec::new();
                    match &result {
                        Ok(()) => {
                            let mut value = Vec::new();
                            let has_value = PasswordModifyResponse {
                                generated_password: generated.as_deref().map(str::as_bytes),
                            }
                            .encode_value(&mut value);
                            write_message(
                                &mut out,
                                id,
                                ProtocolOp::ExtendedResponse(ExtendedResponse {
                                    result: LdapResult::success(),
                                    name: None,
                                    value: has_value.then_some(value.as_slice()),
                                }),
                                &[],
                            );
                        }
                        Err(e) => write_op_error(&mut out, id, op_tag::EXTENDED_RESPONSE, e),
                    }
                    let _ = tx.send(out);
                }
                drop(guard);
                drop(permit);
            },
        );
    }
}
