//! Dispatching one decoded request: one function per operation, each ending in the
//! session's completion (`complete.rs`), which encodes the response and reports the
//! outcome.

use std::sync::Arc;

use larch_proto::ber::{tag, Reader};
use larch_proto::controls::Control;
use larch_proto::exop::{self, CancelRequest, ExtendedValue, WhoAmIResponse};
use larch_proto::{
    op_tag, BindRequest, CompareRequest, DecodeError, ExtendedRequest, LdapMessage, MessageId, ProtocolOp,
    ResultCode, SearchRequest, SeqOf,
};
use larch_store::{StoreError, Version, WriteTxn};

use super::complete::{Completion, Ending, OpTrace};
use super::inflight::{OpClass, StopRequest};
use super::restricted::{asks_policy, error_reply};
use super::search_job::{SearchJob, MAX_WAITING_SEARCHES_PER_THREAD};
use super::Session;
use crate::acl::ops::check_bind;
use crate::acl::proxy::proxied_identity;
use crate::auth::confidentiality;
use crate::auth::policy::PolicyReport;
use crate::controls::{OpKind, RequestControls, ResponseControl};
use crate::directory::Directory;
use crate::error::OpError;
use crate::forwarding;
use crate::identity::Identity;
use crate::lookup::referral_above_text;
use crate::ops::{self, WriteContext};
use crate::outcome::{respond, BindMethod, CloseReason, Reply};
use crate::ppolicy::response_control;
use crate::response::ResponseSink;
use crate::search::{self, SearchContext};
use crate::syncrepl::read_only::{self, Route};

/// The controls of a request, as decoded.
pub(super) type Controls<'m> = Option<SeqOf<'m, Control<'m>>>;

/// The response tag that answers a request tag, for requests that have one.
pub(super) fn response_tag(request: u8) -> Option<u8> {
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

/// What a request that writes an entry (Add, Delete, Modify, ModifyDN) writes, for the
/// replica's routing (`crate::syncrepl::read_only`).
struct WriteTarget<'m> {
    kind: OpKind,
    dn: &'m [u8],
    new_superior: Option<&'m [u8]>,
}

fn write_target<'m>(op: &ProtocolOp<'m>) -> Option<WriteTarget<'m>> {
    let (kind, dn, new_superior) = match op {
        ProtocolOp::AddRequest(r) => (OpKind::Add, r.entry, None),
        ProtocolOp::DelRequest(r) => (OpKind::Delete, r.dn, None),
        ProtocolOp::ModifyRequest(r) => (OpKind::Modify, r.object, None),
        ProtocolOp::ModifyDnRequest(r) => (OpKind::ModifyDn, r.entry, r.new_superior),
        _ => return None,
    };
    Some(WriteTarget {
        kind,
        dn,
        new_superior,
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

impl Session {
    /// Where write `t` goes: to a replica's provider (`read_only`), to a cluster's leader
    /// (`forwarding`), or run here.
    fn route_write(&self, t: &WriteTarget<'_>, controls: Option<&SeqOf<'_, Control<'_>>>) -> Route {
        match read_only::route_write_text(&self.dir.replication, &self.dir.schema, t.dn, t.new_superior) {
            Route::Local => forwarding::route_write_text(
                self.dir.cluster_forwarding.get(),
                &self.dir.schema,
                &self.dir.suffixes,
                t.dn,
                forwarding::is_forwarded(controls),
            ),
            elsewhere => elsewhere,
        }
    }

    /// Runs one decoded request, `pdu` its octets.
    pub(super) async fn dispatch(&mut self, msg: LdapMessage<'_>, pdu: &[u8], out: &mut Vec<u8>) {
        let id = msg.message_id;
        if id == 0 {
            let why = "message ID 0 is reserved for unsolicited notifications";
            return self.disconnect(msg.op.tag(), pdu, false, why.to_string(), out);
        }
        let trace = self.begin(id, msg.op.tag());
        self.asks_policy = asks_policy(msg.controls);
        if let Some(e) = self.restricted(&msg.op) {
            let response = response_tag(msg.op.tag()).unwrap_or(op_tag::EXTENDED_RESPONSE);
            let reply = error_reply(e, self.asks_policy);
            return self.complete(&trace, pdu, None, out, Ending::reply(response, &reply));
        }
        if let Some(t) = write_target(&msg.op) {
            match self.route_write(&t, msg.controls.as_ref()) {
                Route::Local => {}
                Route::Refer(e) => {
                    let response = response_tag(msg.op.tag()).unwrap_or(op_tag::MODIFY_RESPONSE);
                    let reply = error_reply(e, self.asks_policy);
                    return self.complete(&trace, pdu, None, out, Ending::reply(response, &reply));
                }
                Route::Chain(chain) => return self.chain(trace, chain, t.kind, msg.controls, pdu, out).await,
            }
        }
        match msg.op {
            ProtocolOp::BindRequest(req) => self.bind(trace, &req, msg.controls, pdu, out).await,
            ProtocolOp::UnbindRequest => {
                self.inflight.abandon_all();
                self.out_tx.resume_waiting();
                self.stop_reading = true;
                self.unbound = true;
                self.complete(&trace, pdu, None, out, Ending::silent());
            }
            ProtocolOp::AbandonRequest(req) => {
                let target = self.inflight.get(req.message_id);
                if let Some(op) = &target {
                    op.request(StopRequest::Abandon);
                    // A search waiting for the client to read sees it now.
                    self.out_tx.resume_waiting();
                }
                let ending = Ending {
                    target_op: target.map_or(-1, |op| op.op_number),
                    ..Ending::silent()
                };
                self.complete(&trace, pdu, None, out, ending);
            }
            ProtocolOp::SearchRequest(req) => self.search(trace, &req, msg.controls, pdu, out).await,
            ProtocolOp::CompareRequest(req) => {
                let reply = match crate::linearizable::barrier(&self.dir, req.entry).await {
                    Ok(()) => self.compare(&req, msg.controls),
                    Err(e) => Reply::from(e),
                };
                self.complete(
                    &trace,
                    pdu,
                    None,
                    out,
                    Ending::reply(op_tag::COMPARE_RESPONSE, &reply),
                );
            }
            ProtocolOp::AddRequest(req) => {
                let prepared = self.prepare_write(msg.controls, OpKind::Add, req.entry, |ctx, c| {
                    ops::add::prepare_add(ctx, &req, c)
                });
                self.write(trace, pdu, out, prepared, ops::add::apply_add).await
            }
            ProtocolOp::DelRequest(req) => {
                let prepared = self.prepare_write(msg.controls, OpKind::Delete, req.dn, |ctx, c| {
                    ops::delete::prepare_delete(ctx, &req, c)
                });
                self.write(trace, pdu, out, prepared, ops::delete::apply_delete)
                    .await
            }
            ProtocolOp::ModifyRequest(req) => {
                let prepared = self.prepare_write(msg.controls, OpKind::Modify, req.object, |ctx, c| {
                    ops::modify::prepare_modify(ctx, &req, c)
                });
                self.write(trace, pdu, out, prepared, ops::modify::apply_modify)
                    .await
            }
            ProtocolOp::ModifyDnRequest(req) => {
                let prepared = self.prepare_write(msg.controls, OpKind::ModifyDn, req.entry, |ctx, c| {
                    ops::modify_dn::prepare_modify_dn(ctx, &req, c)
                });
                self.write(trace, pdu, out, prepared, ops::modify_dn::apply_modify_dn)
                    .await
            }
            ProtocolOp::ExtendedRequest(req) if req.name == exop::PASSWORD_MODIFY.as_bytes() => {
                self.password_modify(trace, req, msg.controls, pdu, out).await
            }
            ProtocolOp::ExtendedRequest(req) if req.name == exop::BACKUP.as_bytes() => {
                self.backup(trace, req, msg.controls, pdu, out)
            }
            ProtocolOp::ExtendedRequest(req) if req.name == exop::SNAPSHOT_TRANSFER.as_bytes() => {
                self.snapshot_transfer(trace, req, msg.controls, pdu, out)
            }
            ProtocolOp::ExtendedRequest(req)
                if req.name == exop::CLUSTER_ADD_NODE.as_bytes()
                    || req.name == exop::CLUSTER_REMOVE_NODE.as_bytes() =>
            {
                self.cluster_membership(trace, req, msg.controls, pdu, out)
            }
            ProtocolOp::ExtendedRequest(req) if req.name == exop::CLUSTER_BIND_OUTCOME.as_bytes() => {
                self.cluster_bind_outcome(trace, req, msg.controls, pdu, out)
            }
            ProtocolOp::ExtendedRequest(req) => self.extended(trace, req, msg.controls, pdu, out),
            other => {
                let why = format!("message {id}: a client may not send a {}", other.name());
                self.disconnect(other.tag(), pdu, false, why, out);
            }
        }
    }

    /// A PDU that frames but does not decode: the operation's `protocolError` response
    /// when its envelope (message ID and operation) is readable, else a Notice of
    /// Disconnection.
    pub(super) fn undecodable(&mut self, pdu: &[u8], e: DecodeError, out: &mut Vec<u8>) {
        let Some((id, op)) = envelope(pdu).filter(|(id, _)| *id > 0) else {
            let why = format!("the request cannot be decoded: {e}");
            return self.disconnect(0, pdu, true, why, out);
        };
        let ending = match response_tag(op) {
            Some(response) => {
                let what = larch_proto::op_name(op).unwrap_or("request");
                let reply = Reply::from(OpError::protocol(format!("the {what} cannot be decoded: {e}")));
                let trace = self.begin(id, op);
                let ending = Ending {
                    undecodable: true,
                    ..Ending::reply(response, &reply)
                };
                return self.complete(&trace, pdu, None, out, ending);
            }
            // Abandon: nothing to answer. Unbind: the client is leaving anyway.
            None if op == op_tag::ABANDON_REQUEST => Ending {
                undecodable: true,
                ..Ending::silent()
            },
            None => return self.disconnect(op, pdu, true, format!("message {id}: {e}"), out),
        };
        let trace = self.begin(id, op);
        self.complete(&trace, pdu, None, out, ending);
    }

    /// Ends the connection with a Notice of Disconnection (`protocolError`) saying `why`,
    /// in answer to `pdu` (a request with tag `request_tag`, 0 when unreadable).
    pub(super) fn disconnect(
        &mut self,
        request_tag: u8,
        pdu: &[u8],
        undecodable: bool,
        why: String,
        out: &mut Vec<u8>,
    ) {
        let reply = respond::notice(ResultCode::PROTOCOL_ERROR, why);
        let trace = self.begin_notice(request_tag);
        let ending = Ending {
            undecodable,
            ..Ending::reply(op_tag::EXTENDED_RESPONSE, &reply)
        };
        self.complete(&trace, pdu, None, out, ending);
        self.stop_reading = true;
        self.bad_pdu = Some(CloseReason::BadPdu);
    }

    /// Bind: a barrier (nothing in flight while it runs), then the new identity.
    async fn bind(
        &mut self,
        trace: OpTrace,
        req: &BindRequest<'_>,
        controls: Controls<'_>,
        pdu: &[u8],
        out: &mut Vec<u8>,
    ) {
        // Wait until nothing is in flight. Only this task takes permits, so when all of
        // them are free (the common case) none can be taken while the bind runs and the
        // semaphore need not be touched.
        let all = if self.permits.available_permits() == self.max_ops as usize {
            None
        } else {
            Some(self.permits.clone().acquire_many_owned(self.max_ops).await)
        };
        let result = match RequestControls::parse(controls, OpKind::Bind) {
            Ok(_) => self.bind_identity(req).await,
            Err(e) => Err(e),
        };
        drop(all);
        self.paged_reset();
        let reply = match result {
            Ok((identity, report)) => {
                self.identity = Arc::new(identity);
                self.set_must_change_password(report.must_change);
                let mut reply = Reply::success();
                if self.asks_policy && report != PolicyReport::default() {
                    reply
                        .controls
                        .push(response_control(report.warning, report.error));
                }
                reply
            }
            Err(e) => {
                self.identity = Arc::new(Identity::Anonymous);
                self.set_must_change_password(false);
                error_reply(e, self.asks_policy)
            }
        };
        let ending = Ending {
            bind_method: Some(BindMethod::of(&req.authentication)),
            ..Ending::reply(op_tag::BIND_RESPONSE, &reply)
        };
        self.complete(&trace, pdu, None, out, ending);
    }

    /// The identity a Bind establishes: the password check (`bind.rs`), then the access
    /// rules' `auth` right on the entry.
    async fn bind_identity(&mut self, req: &BindRequest<'_>) -> Result<(Identity, PolicyReport), OpError> {
        let (identity, entry, report) = self.run_bind(req).await?;
        let (dir, version) = (&self.dir, self.reader.current());
        check_bind(
            &dir.acl,
            version,
            &identity,
            entry,
            &self.client,
            dir.user_password,
        )?;
        Ok((identity, report))
    }

    /// Search: prepared on the current version, run inline when small, else on a worker
    /// thread that streams its entries.
    async fn search(
        &mut self,
        trace: OpTrace,
        req: &SearchRequest<'_>,
        controls: Controls<'_>,
        pdu: &[u8],
        out: &mut Vec<u8>,
    ) {
        if let Err(e) = crate::linearizable::barrier(&self.dir, req.base).await {
            let reply = Reply::from(e);
            let ending = Ending::reply(op_tag::SEARCH_RESULT_DONE, &reply);
            return self.complete(&trace, pdu, None, out, ending);
        }
        let version = self.reader.current().clone();
        let prepared = RequestControls::parse(controls, OpKind::Search).and_then(|controls| {
            let identity = self.effective_identity(&controls, &version)?;
            let ctx = SearchContext {
                dir: &self.dir,
                conn: self.conn,
                version: &version,
                identity: &identity,
                client: &self.client,
                last_base: Some(&self.last_base),
            };
            let prepared = search::prepare(&ctx, req, &controls, &self.paged)?;
            Ok((prepared, identity))
        });
        let (prepared, identity) = match prepared {
            Ok(p) => p,
            Err(e) => {
                let reply = Reply::from(e);
                let ending = Ending::reply(op_tag::SEARCH_RESULT_DONE, &reply);
                return self.complete(&trace, pdu, None, out, ending);
            }
        };
        if prepared.is_small() {
            let before = out.len();
            let end = prepared.run(&self.dir, trace.msgid, &mut InlineSink { out }, &self.paged);
            let decoded = LdapMessage {
                message_id: trace.msgid,
                op: ProtocolOp::SearchRequest(*req),
                controls,
            };
            let ending = Ending::search(&end, (out.len() - before) as u64).with_request(&decoded);
            return self.complete(&trace, pdu, Some(&identity), out, ending);
        }
        let waiting = self.dir.search_workers.queued();
        let most = MAX_WAITING_SEARCHES_PER_THREAD * self.dir.search_workers.threads();
        if waiting >= most && !prepared.is_continued() {
            let reply = Reply::from(OpError::new(
                ResultCode::BUSY,
                format!("the server is busy: {waiting} searches are waiting for a search thread; try again"),
            ));
            let ending = Ending::reply(op_tag::SEARCH_RESULT_DONE, &reply);
            return self.complete(&trace, pdu, Some(&identity), out, ending);
        }
        // What the read answered so far goes out first, so that the search's entries never
        // overtake the answers to earlier requests (a Bind's, above all).
        if !out.is_empty() && self.out_tx.write(std::mem::take(out)).await.is_err() {
            return;
        }
        let Ok(place) = self.search_places.clone().acquire_owned().await else {
            return;
        };
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return;
        };
        let guard = self.inflight.register(trace.msgid, trace.op, OpClass::Search);
        let completion = self.completion(trace, pdu, identity);
        SearchJob::start(
            prepared,
            self.dir.clone(),
            self.paged.clone(),
            completion,
            self.out_tx.clone(),
            guard,
            (permit, place),
        );
    }

    /// Compare: a read, inline.
    fn compare(&mut self, req: &CompareRequest<'_>, controls: Controls<'_>) -> Reply {
        match self.run_compare(req, controls) {
            Ok(true) => Reply::code(ResultCode::COMPARE_TRUE),
            Ok(false) => Reply::code(ResultCode::COMPARE_FALSE),
            Err(e) => Reply::from(e),
        }
    }

    fn run_compare(&mut self, req: &CompareRequest<'_>, controls: Controls<'_>) -> Result<bool, OpError> {
        let controls = RequestControls::parse(controls, OpKind::Compare)?;
        let proxied = match controls.proxied_authz {
            None => None,
            Some(_) => {
                let version = self.reader.current().clone();
                Some(self.effective_identity(&controls, &version)?)
            }
        };
        let identity: &Identity = proxied.as_deref().unwrap_or(&self.identity);
        let version = self.reader.current();
        if !controls.manage_dsa_it {
            if let Some(e) = referral_above(&self.dir, version, req.entry) {
                return Err(e);
            }
        }
        ops::compare::compare(&self.dir, version, identity, &self.client, req, &controls)
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

    /// The identity a write (or Password Modify, WhoAmI) runs as: the connection's, or the
    /// one a Proxied Authorization control names (checked by the access rules).
    pub(super) fn acting_identity(
        &mut self,
        controls: &RequestControls<'_>,
    ) -> Result<Arc<Identity>, OpError> {
        if controls.proxied_authz.is_some() {
            let version = self.reader.current().clone();
            self.effective_identity(controls, &version)
        } else {
            Ok(self.identity.clone())
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
        controls: Controls<'m>,
        kind: OpKind,
        dn_text: &[u8],
        prepare: impl FnOnce(&WriteContext<'_>, &RequestControls<'m>) -> Result<P, OpError>,
    ) -> Result<(P, Arc<Identity>), OpError> {
        let controls = RequestControls::parse(controls, kind)?;
        confidentiality::require_tls(&self.dir, &self.client, confidentiality::what(kind))?;
        let identity = self.acting_identity(&controls)?;
        if !controls.manage_dsa_it {
            if let Some(e) = referral_above(&self.dir, self.reader.current(), dn_text) {
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

    /// Add, Delete, Modify, Modify DN: a refusal at once, or the prepared change handed to
    /// the store's writer, answered when durable.
    async fn write<P: Send + 'static>(
        &mut self,
        trace: OpTrace,
        pdu: &[u8],
        out: &mut Vec<u8>,
        prepared: Result<(P, Arc<Identity>), OpError>,
        apply: fn(&mut WriteTxn<'_>, &WriteContext<'_>, P) -> Result<Vec<ResponseControl>, OpError>,
    ) {
        let response = response_tag(trace.request_tag).unwrap_or(op_tag::MODIFY_RESPONSE);
        match prepared {
            Ok((p, identity)) => {
                let completion = self.completion(trace, pdu, identity.clone());
                self.submit(completion, response, identity, move |txn, ctx| {
                    apply(txn, ctx, p).map(|controls| Reply::success().with_controls(controls))
                })
                .await
            }
            Err(e) => {
                let reply = error_reply(e, self.asks_policy);
                self.complete(&trace, pdu, None, out, Ending::reply(response, &reply));
            }
        }
    }

    /// Hands a write, run as `identity`, to the store's writer; its response (kind
    /// `response`) is sent and its outcome reported when it is durable. An abandoned write
    /// still commits, without a response.
    pub(super) async fn submit<F>(
        &mut self,
        completion: Completion,
        response: u8,
        identity: Arc<Identity>,
        apply: F,
    ) where
        F: FnOnce(&mut WriteTxn<'_>, &WriteContext<'_>) -> Result<Reply, OpError> + Send + 'static,
    {
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return;
        };
        let guard = self
            .inflight
            .register(completion.msgid(), completion.op(), OpClass::Write);
        let dir = self.dir.clone();
        let client = self.client.clone();
        let tx = self.done_tx.clone();
        let store = self.dir.store.clone();
        let asks_policy = self.asks_policy;
        // On a connection restricted to changing its password, only a password change
        // gets here; its success lifts the restriction.
        let lifts = self.must_change_password().then(|| self.must_change.clone());
        store.submit(
            move |txn| {
                let ctx = WriteContext {
                    dir: &dir,
                    identity: &identity,
                    client: &client,
                };
                apply(txn, &ctx)
            },
            move |settled: Result<Result<Reply, OpError>, StoreError>| {
                let reply = match settled.unwrap_or_else(|e| Err(OpError::from(e))) {
                    Ok(reply) => {
                        if let Some(flag) = &lifts {
                            flag.store(false, std::sync::atomic::Ordering::Release);
                        }
                        reply
                    }
                    Err(e) => error_reply(e, asks_policy),
                };
                let abandoned = guard.state().stop_request() == StopRequest::Abandon;
                completion.complete_write(abandoned, response, &reply, &tx);
                drop(guard);
                drop(permit);
            },
        );
    }

    /// Extended operations: WhoAmI, Cancel, StartTLS (`starttls.rs`); any other OID is a
    /// `protocolError` naming it. (Password Modify is dispatched to `password_modify`,
    /// which is asynchronous, and Larch's backup to `backup`, cluster membership changes
    /// to `cluster_membership` and a follower's bind records to `bind_outcome`, which end
    /// on their own tasks.)
    fn extended(
        &mut self,
        trace: OpTrace,
        req: ExtendedRequest<'_>,
        controls: Controls<'_>,
        pdu: &[u8],
        out: &mut Vec<u8>,
    ) {
        let name = String::from_utf8_lossy(req.name);
        let reply = match RequestControls::parse(controls, OpKind::Extended) {
            Err(e) => Reply::from(e),
            Ok(controls) => match &*name {
                exop::WHO_AM_I => match self.acting_identity(&controls) {
                    Ok(identity) => who_am_i(&identity, req.value.is_some()),
                    Err(e) => Reply::from(e),
                },
                exop::CANCEL => match controls.refuse_proxied("Cancel").and_then(|()| {
                    CancelRequest::decode_value(req.value)
                        .map_err(|e| OpError::protocol(format!("Cancel: {e}")))
                }) {
                    Err(e) => Reply::from(e),
                    Ok(cancel) => return self.cancel(trace, pdu, cancel.cancel_id, out),
                },
                exop::START_TLS => match controls.refuse_proxied("StartTLS") {
                    Err(e) => Reply::from(e),
                    Ok(()) => self.start_tls_request(req.value.is_some()),
                },
                _ => Reply::from(OpError::protocol(format!(
                    "extended operation {name} is not supported"
                ))),
            },
        };
        self.complete(
            &trace,
            pdu,
            None,
            out,
            Ending::reply(op_tag::EXTENDED_RESPONSE, &reply),
        );
    }

    /// Cancel (RFC 3909): asks operation `target` to stop and answers once it has.
    fn cancel(&mut self, trace: OpTrace, pdu: &[u8], target: MessageId, out: &mut Vec<u8>) {
        let Some(op) = self.inflight.get(target) else {
            let reply = Reply::from(OpError::new(
                ResultCode::NO_SUCH_OPERATION,
                format!("no operation with message ID {target} is in progress"),
            ));
            return self.complete(
                &trace,
                pdu,
                None,
                out,
                Ending::reply(op_tag::EXTENDED_RESPONSE, &reply),
            );
        };
        if op.class == OpClass::Write {
            // A write handed to the store commits or fails as a whole.
            op.request(StopRequest::None);
        } else {
            op.request(StopRequest::Cancel);
            // A search waiting for the client to read sees it now.
            self.out_tx.resume_waiting();
        }
        // Through the same queue as the search's own responses, after them: the canceled
        // operation's final response goes out before the Cancel's.
        let tx = self.out_tx.clone();
        let completion = self.completion(trace, pdu, self.identity.clone());
        tokio::spawn(async move {
            op.finished().await;
            let reply = if op.canceled() {
                Reply::success()
            } else {
                Reply::from(OpError::new(
                    ResultCode::TOO_LATE,
                    format!("operation {target} completed before it could be canceled"),
                ))
            };
            let mut out = Vec::new();
            let ending = Ending {
                target_op: op.op_number,
                ..Ending::reply(op_tag::EXTENDED_RESPONSE, &reply)
            };
            completion.complete(&mut out, ending);
            let _ = tx.send(out).await;
        });
    }

    /// Forgets paged searches (after a bind, pages belong to the old identity).
    pub(super) fn paged_reset(&mut self) {
        let mut p = self.paged.lock().unwrap_or_else(|e| e.into_inner());
        p.clear();
    }
}

/// The `referral` result for an operation on `dn_text` at or below a referral entry of
/// `version` ([`referral_above_text`] with the directory's referral class).
fn referral_above(dir: &Directory, version: &Version, dn_text: &[u8]) -> Option<OpError> {
    referral_above_text(version, dir.referral_class.as_ref(), &dir.schema, dn_text)
}

/// WhoAmI (RFC 4532): the authorization identity the request runs as (the connection's,
/// or the one a Proxied Authorization control assumes, as section 2 asks).
fn who_am_i(identity: &Identity, has_value: bool) -> Reply {
    if has_value {
        return Reply::from(OpError::protocol(
            "the WhoAmI request carries no value (RFC 4532)",
        ));
    }
    let authz = identity.authz_id();
    let mut value = Vec::new();
    WhoAmIResponse {
        authz_id: authz.as_bytes(),
    }
    .encode_value(&mut value);
    Reply {
        value: Some(value),
        ..Reply::success()
    }
}
