//! A connection whose bound account must change its password (password policy's
//! `pwdReset` under `pwdMustChange`): until the change succeeds it may only bind, unbind,
//! abandon, start TLS and change the password (a Modify of userPassword alone, or
//! Password Modify); anything else gets `insufficientAccessRights` (50) with slapd's
//! message, and the password policy control's `changeAfterReset` when asked for.

use std::sync::atomic::Ordering;

use larch_model::entry::resolve_description;
use larch_proto::controls::{oid, Control, PasswordPolicyError};
use larch_proto::exop;
use larch_proto::{ModifyRequest, ProtocolOp, ResultCode, SeqOf};

use super::Session;
use crate::error::OpError;
use crate::outcome::Reply;
use crate::ppolicy::response_control;

/// slapd's words for an operation the restriction refuses.
const RESTRICTED: &str = "Operations are restricted to bind/unbind/abandon/StartTLS/modify password";

/// Whether a request's controls ask for the password policy response control.
pub(super) fn asks_policy(controls: Option<SeqOf<'_, Control<'_>>>) -> bool {
    controls.is_some_and(|cs| cs.iter().any(|c| c.oid == oid::PASSWORD_POLICY.as_bytes()))
}

/// The reply to an error, with the password policy response control when the request
/// asked for it and the error is the policy's.
pub(super) fn error_reply(e: OpError, asks_policy: bool) -> Reply {
    let policy = e.policy.filter(|_| asks_policy);
    let mut reply = Reply::from(e);
    if let Some(error) = policy {
        reply.controls.push(response_control(None, Some(error)));
    }
    reply
}

impl Session {
    /// Whether the connection is restricted to changing its password.
    pub(super) fn must_change_password(&self) -> bool {
        self.must_change.load(Ordering::Acquire)
    }

    /// Sets or lifts the restriction.
    pub(super) fn set_must_change_password(&self, on: bool) {
        self.must_change.store(on, Ordering::Release);
    }

    /// The refusal of `op` on a restricted connection; `None` when it may run.
    pub(super) fn restricted(&self, op: &ProtocolOp<'_>) -> Option<OpError> {
        if !self.must_change_password() {
            return None;
        }
        let allowed = match op {
            ProtocolOp::BindRequest(_) | ProtocolOp::UnbindRequest | ProtocolOp::AbandonRequest(_) => true,
            ProtocolOp::ExtendedRequest(req) => {
                req.name == exop::PASSWORD_MODIFY.as_bytes() || req.name == exop::START_TLS.as_bytes()
            }
            ProtocolOp::ModifyRequest(req) => self.changes_password_only(req),
            _ => false,
        };
        (!allowed).then(|| {
            OpError::new(ResultCode::INSUFFICIENT_ACCESS_RIGHTS, RESTRICTED)
                .with_policy(PasswordPolicyError::ChangeAfterReset)
        })
    }

    /// Whether every change of a Modify is to userPassword.
    fn changes_password_only(&self, req: &ModifyRequest<'_>) -> bool {
        req.changes.iter().all(|c| {
            resolve_description(c.modification.description, &self.dir.schema)
                .is_ok_and(|(ty, _)| ty == self.dir.user_password)
        })
    }
}
