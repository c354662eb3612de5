//! Dispatching one decoded request: controls, the operation, its response(s).

use std::sync::Arc;

use larch_proto::ber::{tag, Reader};
use larch_proto::exop::{
    self, notice_of_disconnection as notice, CancelRequest, ExtendedValue, WhoAmIResponse,
};
use larch_proto::{
    op_tag, BindResponse, DecodeError, ExtendedRequest, ExtendedResponse, LdapMessage, LdapResult, MessageId,
    ProtocolOp, ResultCode,
};
use larch_store::{StoreError, WriteTxn};

use super::inflight::{OpClass, OpGuard, StopRequest};
use super::writer::OutSender;
use super::Session;
use crate::acl::ops::check_bind;
use crate::acl::proxy::proxied_identity;
use crate::auth::confidentiality;
use crate::controls::{OpKind, RequestControls, ResponseControl};
use crate::error::OpError;
use crate::identity::Identity;
use crate::ops::{self, WriteContext};
use crate::response::{write_error, write_message, write_success, ResponseSink};
use crate::search::referral::referral_above_text;
use crate::search::{self, SearchContext};

/// Octets a search on a worker thread gathers before handing them to the writer.
pub const SEARCH_FLUSH_BYTES: usize = 64 * 1024;

/// Appends a Notice of Disconnection (`protocolError`) with `why`.
pub(super) fn notice_of_disconnection(out: &mut Vec<u8>, why: &str) {
    notice(why.as_bytes()).encode(out);
}

/// The response tag that answers a request tag, for requests that have one.
fn response_tag(request: u8) -> Option<u8> {
    use op_tag::*;
    Some(match request {
        BIND_REQUEST => BIND_RESPONSE,
        SEARCH_REQUEST => SEARCH_RESULT_DONE,
        MODIFY_REQUEST => MODIFY_RESPONSE,
        ADD_REQUEST => ADD_RESPONSE,
        DEL_REQUEST => DEL_RESPONSE,
        MODIFY_DN_REQUEST => MODIFY_DN_RESPONSE,
        COMPARE_REQUEST => COMPARE_RESPONSE,
        EXTENDED_REQUEST => EXTENDED_RESPONSE,
        _ => return None,
    })
}

/// The message ID and operation tag of a PDU whose envelope is readable.
fn envelope(pdu: &[u8]) -> Option<(MessageId, u8)> {
    let mut r = Reader::new(pdu);
    let mut m = r.read_constructed(tag::SEQUENCE, "LDAPMessage").ok()?;
    let id = m.read_integer(tag::INTEGER, "LDAPMessage.messageID").ok()?;
    let id = MessageId::try_from(id).ok().filter(|id| *id >= 0)?;
    Some((id, m.peek_tag()?))
}

/// Appends a response of any kind carrying `error`.
pub(super) fn write_op_error(out: &mut Vec<u8>, id: MessageId, response: u8, error: &OpError) {
    match response {
        op_tag::BIND_RESPONSE => error.with_result(|result| {
            write_message(
                out,
                id,
                ProtocolOp::BindResponse(BindResponse {
                    result,
                    server_sasl_creds: None,
                }),
                &[],
            )
        }),
        op_tag::EXTENDED_RESPONSE => error.with_result(|result| {
            write_message(
                out,
                id,
                ProtocolOp::ExtendedResponse(ExtendedResponse {
                    result,
                    name: None,
                    value: None,
                }),
                &[],
            )
        }),
        _ => write_error(out, id, response, error, &[]),
    }
}

/// A PDU that frames but does not decode: the operation's error response when its
/// envelope (message ID and operation) is readable, else a Notice of Disconnection.
pub(super) fn undecodable(session: &mut Session, pdu: &[u8], e: DecodeError, out: &mut Vec<u8>) {
    match envelope(pdu) {
        Some((id, op)) if id > 0 => match response_tag(op) {
            Some(response) => {
                let error = OpError::protocol(format!(
                    "the {} cannot be decoded: {e}",
                    larch_proto::op_name(op).unwrap_or("request")
                ));
                write_op_error(out, id, response, &error);
            }
            // Abandon: nothing to answer. Unbind: the client is leaving anyway.
            None if op == op_tag::ABANDON_REQUEST => {}
            None => {
                notice_of_disconnection(out, &format!("message {id}: {e}"));
                session.stop_reading = true;
            }
        },
        _ => {
            notice_of_disconnection(out, &format!("the request cannot be decoded: {e}"));
            session.stop_reading = true;
        }
    }
}

/// Collects an inline operation's responses into the read's output buffer.
struct InlineSink<'a> {
    out: &'a mut Vec<u8>,
}

impl ResponseSink for InlineSink<'_> {
    fn buf(&mut self) -> &mut Vec<u8> {
        self.out
    }
    fn flush(&mut self) -> bool {
        true
    }
    fn stopped(&self) -> bool {
        false
    }
}

/// Sends a search's responses from a worker thread, waiting while the client is slow.
struct ChannelSink {
    buf: Vec<u8>,
    tx: OutSender,
    guard: OpGuard,
    gone: bool,
}

impl ResponseSink for ChannelSink {
    fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }
    fn flush(&mut self) -> bool {
        if self.buf.len() >= SEARCH_FLUSH_BYTES {
            let chunk = std::mem::take(&mut self.buf);
            if self.tx.blocking_send(chunk).is_err() {
                self.gone = true;
            }
        }
        !self.stopped()
    }
    fn stopped(&self) -> bool {
        let stop = self.gone || self.guard.state().stopped();
        if stop {
            self.guard.state().note_seen_stop();
        }
        stop
    }
}

impl Session {
    /// Runs one decoded request.
    pub(super) async fn dispatch(&mut self, msg: LdapMessage<'_>, out: &mut Vec<u8>) {
        let id = msg.message_id;
        if id == 0 {
            notice_of_disconnection(out, "message ID 0 is reserved for unsolicited notifications");
            self.stop_reading = true;
            return;
        }
        match msg.op {
            ProtocolOp::BindRequest(req) => {
                // Bind is a barrier: wait until nothing is in flight. Only this task takes
                // permits, so when all of them are free (the common case) none can be taken
                // while the bind runs and the semaphore need not be touched.
                let all = if self.permits.available_permits() == self.max_ops as usize {
                    None
                } else {
                    Some(self.permits.clone().acquire_many_owned(self.max_ops).await)
                };
                let result = match RequestControls::parse(msg.controls, OpKind::Bind) {
                    Ok(_) => match self.run_bind(&req).await {
                        Ok((identity, entry)) => {
                            let (dir, version) = (&self.dir, self.reader.current());
                            check_bind(
                                &dir.acl,
                                version,
                                &identity,
                                entry,
                                &self.client,
                                dir.user_password,
                            )
                            .map(|()| identity)
                        }
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(e),
                };
                drop(all);
                self.paged_reset();
                match result {
                    Ok(identity) => {
                        self.identity = Arc::new(identity);
                        write_message(
                            out,
                            id,
                            ProtocolOp::BindResponse(BindResponse {
                                result: LdapResult::success(),
                                server_sasl_creds: None,
                            }),
                            &[],
                        );
                    }
                    Err(e) => {
                        self.identity = Arc::new(Identity::Anonymous);
                        write_op_error(out, id, op_tag::BIND_RESPONSE, &e);
                    }
                }
            }
            ProtocolOp::UnbindRequest => {
                self.inflight.abandon_all();
                self.stop_reading = true;
                self.unbound = true;
            }
            ProtocolOp::AbandonRequest(req) => {
                if let Some(op) = self.inflight.get(req.message_id) {
                    op.request(StopRequest::Abandon);
                }
            }
            ProtocolOp::SearchRequest(req) => {
                let controls = match RequestControls::parse(msg.controls, OpKind::Search) {
                    Ok(c) => c,
                    Err(e) => return write_error(out, id, op_tag::SEARCH_RESULT_DONE, &e, &[]),
                };
                let version = self.reader.current().clone();
                let proxied;
                let identity: &Identity = match controls.proxied_authz {
                    None => &self.identity,
                    Some(_) => match self.effective_identity(&controls, &version) {
                        Ok(i) => {
                            proxied = i;
                            &proxied
                        }
                        Err(e) => return write_error(out, id, op_tag::SEARCH_RESULT_DONE, &e, &[]),
                    },
                };
                let ctx = SearchContext {
                    dir: &self.dir,
                    version: &version,
                    identity,
                    client: &self.client,
                    last_base: Some(&self.last_base),
                };
                let prepared = match search::prepare(&ctx, &req, &controls, &self.paged) {
                    Ok(p) => p,
                    Err(e) => return write_error(out, id, op_tag::SEARCH_RESULT_DONE, &e, &[]),
                };
                if prepared.is_small() {
                    prepared.run(&self.dir, id, &mut InlineSink { out }, &self.paged);
                    return;
                }
                let Ok(permit) = self.permits.clone().acquire_owned().await else {
                    return;
                };
                let guard = self.inflight.register(id, OpClass::Search);
                let (dir, paged, tx) = (self.dir.clone(), self.paged.clone(), self.out_tx.clone());
                tokio::task::spawn_blocking(move || {
                    let mut sink = ChannelSink {
                        buf: Vec::new(),
                        tx,
                        guard,
                        gone: false,
                    };
                    prepared.run(&dir, id, &mut sink, &paged);
                    // A search that saw a stop request wrote no SearchResultDone.
                    let state = sink.guard.state().clone();
                    if state.seen_stop() && state.stop_request() == StopRequest::Cancel {
                        let e = OpError::new(ResultCode::CANCELED, "the search was canceled");
                        write_error(&mut sink.buf, id, op_tag::SEARCH_RESULT_DONE, &e, &[]);
                        state.mark_canceled();
                    }
                    if !sink.buf.is_empty() && !sink.gone {
                        let _ = sink.tx.blocking_send(std::mem::take(&mut sink.buf));
                    }
                    drop(sink);
                    drop(permit);
                });
            }
            ProtocolOp::CompareRequest(req) => {
                let result = RequestControls::parse(msg.controls, OpKind::Compare).and_then(|controls| {
                    let proxied;
                    let identity: &Identity = match controls.proxied_authz {
                        None => &self.identity,
                        Some(_) => {
                            let version = self.reader.current().clone();
                            proxied = self.effective_identity(&controls, &version)?;
                            &proxied
                        }
                    };
                    let version = self.reader.current();
                    if !controls.manage_dsa_it {
                        if let Some(e) = referral_above_text(&self.dir, version, req.entry) {
                            return Err(e);
                        }
                    }
                    ops::compare::compare(&self.dir, version, identity, &self.client, &req, &controls)
                });
                let done = match result {
                    Ok(true) => OpError::new(ResultCode::COMPARE_TRUE, ""),
                    Ok(false) => OpError::new(ResultCode::COMPARE_FALSE, ""),
                    Err(e) => e,
                };
                write_error(out, id, op_tag::COMPARE_RESPONSE, &done, &[]);
            }
            ProtocolOp::AddRequest(req) => {
                let prepared = self.prepare_write(msg.controls, OpKind::Add, req.entry, |ctx, c| {
                    ops::add::prepare_add(ctx, &req, c)
                });
                match prepared {
                    Ok((p, identity)) => {
                        self.submit(id, op_tag::ADD_RESPONSE, identity, move |txn, ctx| {
                            ops::add::apply_add(txn, ctx, p)
                        })
                        .await
                    }
                    Err(e) => write_error(out, id, op_tag::ADD_RESPONSE, &e, &[]),
                }
            }
            ProtocolOp::DelRequest(req) => {
                let prepared = self.prepare_write(msg.controls, OpKind::Delete, req.dn, |ctx, c| {
                    ops::delete::prepare_delete(ctx, &req, c)
                });
                match prepared {
                    Ok((p, identity)) => {
                        self.submit(id, op_tag::DEL_RESPONSE, identity, move |txn, ctx| {
                            ops::delete::apply_delete(txn, ctx, p)
                        })
                        .await
                    }
                    Err(e) => write_error(out, id, op_tag::DEL_RESPONSE, &e, &[]),
                }
            }
            ProtocolOp::ModifyRequest(req) => {
                let prepared = self.prepare_write(msg.controls, OpKind::Modify, req.object, |ctx, c| {
                    ops::modify::prepare_modify(ctx, &req, c)
                });
                match prepared {
                    Ok((p, identity)) => {
                        self.submit(id, op_tag::MODIFY_RESPONSE, identity, move |txn, ctx| {
                            ops::modify::apply_modify(txn, ctx, p)
                        })
                        .await
                    }
                    Err(e) => write_error(out, id, op_tag::MODIFY_RESPONSE, &e, &[]),
                }
            }
            ProtocolOp::ModifyDnRequest(req) => {
                let prepared = self.prepare_write(msg.controls, OpKind::ModifyDn, req.entry, |ctx, c| {
                    ops::modify_dn::prepare_modify_dn(ctx, &req, c)
                });
                match prepared {
                    Ok((p, identity)) => {
                        self.submit(id, op_tag::MODIFY_DN_RESPONSE, identity, move |txn, ctx| {
                            ops::modify_dn::apply_modify_dn(txn, ctx, p)
                        })
                        .await
                    }
                    Err(e) => write_error(out, id, op_tag::MODIFY_DN_RESPONSE, &e, &[]),
                }
            }
            ProtocolOp::ExtendedRequest(req) if req.name == exop::PASSWORD_MODIFY.as_bytes() => {
                self.password_modify(id, req, msg, out).await
            }
            ProtocolOp::ExtendedRequest(req) => self.extended(id, req, msg, out),
            other => {
                notice_of_disconnection(
                    out,
                    &format!("message {id}: a client may not send a {}", other.name()),
                );
                self.stop_reading = true;
            }
        }
    }

    /// The identity an operation runs as: the connection's, or the one its Proxied
    /// Authorization control names (RFC 4370; `acl::proxy`), read from `version`.
    fn effective_identity(
        &self,
        controls: &RequestControls<'_>,
        version: &larch_store::Version,
    ) -> Result<Arc<Identity>, OpError> {
        match controls.proxied_authz {
            None => Ok(self.identity.clone()),
            Some(authz_id) => proxied_identity(
                &self.dir.acl,
                &self.dir.admin_dn,
                version,
                &self.identity,
                &self.client,
                authz_id,
            )
            .map(Arc::new),
        }
    }

    /// The common steps of a write before it goes to the store: its controls, the
    /// confidentiality policy (`confidentialityRequired`, 13), the identity it runs as
    /// (proxied authorization), then (without ManageDsaIT) a `referral` (10) when the
    /// target DN is or lies below a referral entry, and last `prepare` on this connection
    /// (with its early access check). The referral comes before the operation's own
    /// checks, as slapd's frontend checks referrals before the backend runs the operation:
    /// a client without write access there learns where the entry is held rather than
    /// getting insufficientAccessRights.
    fn prepare_write<'m, P>(
        &mut self,
        controls: Option<larch_proto::SeqOf<'m, larch_proto::controls::Control<'m>>>,
        kind: OpKind,
        dn_text: &[u8],
        prepare: impl FnOnce(&WriteContext<'_>, &RequestControls<'m>) -> Result<P, OpError>,
    ) -> Result<(P, Arc<Identity>), OpError> {
        let controls = RequestControls::parse(controls, kind)?;
        confidentiality::require_tls(&self.dir, &self.client, confidentiality::what(kind))?;
        let identity = if controls.proxied_authz.is_some() {
            let version = self.reader.current().clone();
            self.effective_identity(&controls, &version)?
        } else {
            self.identity.clone()
        };
        if !controls.manage_dsa_it {
            if let Some(e) = referral_above_text(&self.dir, self.reader.current(), dn_text) {
                return Err(e);
            }
        }
        let ctx = WriteContext {
            dir: &self.dir,
            identity: &identity,
            client: &self.client,
        };
        let prepared = prepare(&ctx, &controls)?;
        Ok((prepared, identity))
    }

    /// Hands a write, run as `identity`, to the store's writer; its response is sent when
    /// it is durable.
    async fn submit<F>(&mut self, id: MessageId, response: u8, identity: Arc<Identity>, apply: F)
    where
        F: FnOnce(&mut WriteTxn<'_>, &WriteContext<'_>) -> Result<Vec<ResponseControl>, OpError>
            + Send
            + 'static,
    {
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return;
        };
        let guard = self.inflight.register(id, OpClass::Write);
        let dir = self.dir.clone();
        let client = self.client.clone();
        let tx = self.done_tx.clone();
        let store = self.dir.store.clone();
        store.submit(
            move |txn| {
                let ctx = WriteContext {
                    dir: &dir,
                    identity: &identity,
                    client: &client,
                };
                apply(txn, &ctx)
            },
            move |settled: Result<Result<Vec<ResponseControl>, OpError>, StoreError>| {
                let result = settled.unwrap_or_else(|e| Err(OpError::from(e)));
                if guard.state().stop_request() != StopRequest::Abandon {
                    let mut out = Vec::new();
                    match &result {
                        Ok(controls) => write_success(&mut out, id, response, controls),
                        Err(e) => write_error(&mut out, id, response, e, &[]),
                    }
                    let _ = tx.send(out);
                }
                drop(guard);
                drop(permit);
            },
        );
    }

    /// Extended operations: WhoAmI, Cancel, StartTLS (`starttls.rs`); any other OID is a
    /// `protocolError` naming it. (Password Modify is dispatched to `password_modify`,
    /// which is asynchronous.)
    fn extended(&mut self, id: MessageId, req: ExtendedRequest<'_>, msg: LdapMessage<'_>, out: &mut Vec<u8>) {
        if let Err(e) = RequestControls::parse(msg.controls, OpKind::Extended) {
            return write_op_error(out, id, op_tag::EXTENDED_RESPONSE, &e);
        }
        let name = String::from_utf8_lossy(req.name);
        match &*name {
            exop::WHO_AM_I => {
                if req.value.is_some() {
                    let e = OpError::protocol("the WhoAmI request carries no value (RFC 4532)");
                    return write_op_error(out, id, op_tag::EXTENDED_RESPONSE, &e);
                }
                let authz = self.identity.authz_id();
                let mut value = Vec::new();
                WhoAmIResponse {
                    authz_id: authz.as_bytes(),
                }
                .encode_value(&mut value);
                write_message(
                    out,
                    id,
                    ProtocolOp::ExtendedResponse(ExtendedResponse {
                        result: LdapResult::success(),
                        name: None,
                        value: Some(&value),
                    }),
                    &[],
                );
            }
            exop::CANCEL => match CancelRequest::decode_value(req.value) {
                Err(e) => write_op_error(
                    out,
                    id,
                    op_tag::EXTENDED_RESPONSE,
                    &OpError::protocol(format!("Cancel: {e}")),
                ),
                Ok(cancel) => self.cancel(id, cancel.cancel_id, out),
            },
            exop::START_TLS => self.start_tls_request(id, req.value.is_some(), out),
            _ => write_op_error(
                out,
                id,
                op_tag::EXTENDED_RESPONSE,
                &OpError::protocol(format!("extended operation {name} is not supported")),
            ),
        }
    }

    /// Cancel (RFC 3909): asks operation `target` to stop and answers once it has.
    fn cancel(&mut self, id: MessageId, target: MessageId, out: &mut Vec<u8>) {
        let Some(op) = self.inflight.get(target) else {
            let e = OpError::new(
                ResultCode::NO_SUCH_OPERATION,
                format!("no operation with message ID {target} is in progress"),
            );
            return write_op_error(out, id, op_tag::EXTENDED_RESPONSE, &e);
        };
        if op.class == OpClass::Write {
            // A write handed to the store commits or fails as a whole.
            op.request(StopRequest::None);
        } else {
            op.request(StopRequest::Cancel);
        }
        // Through the same queue as the search's own responses, after them: the canceled
        // operation's final response goes out before the Cancel's.
        let tx = self.out_tx.clone();
        tokio::spawn(async move {
            op.finished().await;
            let result = if op.canceled() {
                Ok(())
            } else {
                Err(OpError::new(
                    ResultCode::TOO_LATE,
                    format!("operation {target} completed before it could be canceled"),
                ))
            };
            let mut out = Vec::new();
            match result {
                Ok(()) => write_message(
                    &mut out,
                    id,
                    ProtocolOp::ExtendedResponse(ExtendedResponse {
                        result: LdapResult::success(),
                        name: None,
                        value: None,
                    }),
                    &[],
                ),
                Err(e) => write_op_error(&mut out, id, op_tag::EXTENDED_RESPONSE, &e),
            }
            let _ = tx.send(out).await;
        });
    }

    /// Forgets paged searches (after a bind, pages belong to the old identity).
    pub(super) fn paged_reset(&mut self) {
        let mut p = self.paged.lock().unwrap_or_else(|e| e.into_inner());
        p.clear();
    }
}
