//! 389 Directory Server 3.x's JSON access log format: one JSON object per line.
//!
//! Every object opens as 389's `build_base_obj` does:
//!
//! ```text
//! {"local_time":"2026-11-22T10:00:00.123456789 +0000","operation":"SEARCH","key":"1795341000-12",
//!  "conn_id":12,"op_id":1,"msgid":2, ...
//! ```
//!
//! then (when present, in this order) `oid` and `oid_name` (extended operations), `msg`,
//! `authzid` (the Proxied Authorization identity), `request_controls`,
//! `response_controls`, then the fields of the operation, named as 389 names them:
//! `CONNECTION` (`fd`, `slot`, `tls`, `client_ip`, `server_ip`), `TLS_INFO`
//! (`tls_version`, `cipher`, `keysize`), `DISCONNECT` (`fd`, `close_reason` ending in
//! ` - U1`, the code logconv counts), `BIND` (`bind_dn`, `version`, `method` `"128"` or
//! `"sasl"`, `mech`), `UNBIND`, `SEARCH` (`base_dn`, `scope`, `filter`, `attrs` unless all),
//! `ADD`/`MODIFY`/`DELETE` (`target_dn`), `MODRDN` (`target_dn`, `newrdn`, `newsup`,
//! `deleteoldrdn`), `COMPARE` (`target_dn`, `cmp_attr`), `EXTENDED_OP` (`name`),
//! `ABANDON` (`msgid` and `target_op` of the abandoned operation, `"NOTFOUND"` when there
//! was none) and `RESULT` (`tag`, `err`, `nentries`, `notes` as objects with `note`,
//! `description` and, for `A` and `U`, the search's `base_dn`, `filter`, `scope`;
//! `bind_dn` on a successful Bind; `wtime`, `optime`, `etime` as strings of seconds).
//! Larch adds `REFUSED` (`msg`, `client_ip`, `server_ip`) for a connection turned away
//! and `UNDECODABLE` (`request_tag`) for a request that did not decode; 389's analyser
//! skips operations it does not know.
//!
//! Differences from 389, and why: `key` is `<server start second>-<conn_id>` where 389
//! writes the connection's own start second (the event does not carry it; either way the
//! key tells a connection from one of the same number before a restart); a RESULT always
//! has `op_id`, -1 for a Notice of Disconnection (389 leaves out an `op_id` of -1, but never
//! writes such a RESULT, and its analyser needs the field on every RESULT); `msgid` (the
//! request's message ID) is on every operation object, except ABANDON where it is, as in
//! 389, the abandoned one's; a RESULT has no `client_ip` (the event does not carry it);
//! `close_reason` is Larch's description of the closure then 389's code
//! (`client unbind - U1`), where 389 writes its own description before the code;
//! controls are listed without their values, and nothing is truncated (389 cuts strings
//! at 512 octets). `Full` adds `deref`, `sizelimit`, `timelimit`, `attrsonly` to a SEARCH,
//! `attrs` to an ADD, `mods` (`[{"op":"replace","attr":"mail"}]`) to a MODIFY, the request
//! controls (`oid`, `oid_name`, `isCritical`) to every request, and the response controls,
//! the diagnostic message as `msg`, `authz_dn` and `matched_dn` to a RESULT.
//!
//! Strings are escaped as json-c (which 389 uses) escapes them: `"`, `\`, `/`, `\b`, `\f`,
//! `\n`, `\r`, `\t`, other control characters as `\u00XX`; other characters, non-ASCII
//! included, are written as they are. An octet of a DN or filter that is not UTF-8 (a
//! client may send one) is written as the text `\HH`, which means that octet in a DN and
//! in a filter.

use std::net::SocketAddr;

use larch_proto::controls::oid;
use larch_proto::{
    exop, op_tag, AbandonRequest, AddRequest, Authentication, BindRequest, CompareRequest, ExtendedRequest,
    LdapMessage, ModifyDnRequest, ModifyRequest, ProtocolOp, SearchRequest,
};

use super::event::{Close, Connect, Event, Op, Refused, Tls, WallNanos};
use super::fixed::{Fixed, DURATION, I64, U64};
use super::format_389::{
    cipher_name, extended_name, known_notes, modify_kind, proxied_authz_id, push_filter, push_ip,
    SASL_BIND_IN_PROGRESS,
};
use super::level::Level;
use super::number::{push_i64, push_u64};
use super::printable::printable_except;
use super::request;
use super::time::{TimeCache, ISO_LEN};

/// Appends the JSON line or lines of `event` to `out`, each ending in `\n`, and says how
/// many. `started` is the Unix second the server started, the first half of every `key`.
pub fn write(out: &mut Vec<u8>, event: &Event<'_>, level: Level, clock: &mut TimeCache, started: u64) -> u64 {
    let mut line = Line { out, clock, started };
    match event {
        Event::Connect(c) => line.connect(c),
        Event::Tls(t) => line.tls(t),
        Event::Refused(r) => line.refused(r),
        Event::Close(c) => line.close(c),
        Event::Op(o) => return line.op(o, level),
    }
    1
}

/// What every object of one event needs.
struct Line<'a> {
    out: &'a mut Vec<u8>,
    clock: &'a mut TimeCache,
    started: u64,
}

impl Line<'_> {
    fn connect(&mut self, c: &Connect) {
        self.begin(c.time, "CONNECTION", c.conn);
        self.number("fd", c.fd.into());
        self.number("slot", c.fd.into());
        self.boolean("tls", c.ldaps);
        self.ip("client_ip", c.peer);
        self.ip("server_ip", c.local);
        self.end();
    }

    fn tls(&mut self, t: &Tls<'_>) {
        self.begin(t.time, "TLS_INFO", t.conn);
        self.string("tls_version", t.version.as_bytes());
        self.string("cipher", cipher_name(t.cipher).as_bytes());
        self.number("keysize", t.keysize.into());
        self.end();
    }

    fn refused(&mut self, r: &Refused<'_>) {
        self.begin(r.time, "REFUSED", r.conn);
        self.string("msg", r.reason.as_bytes());
        self.ip("client_ip", r.peer);
        self.ip("server_ip", r.local);
        self.end();
    }

    fn close(&mut self, c: &Close) {
        self.begin(c.time, "DISCONNECT", c.conn);
        self.op_id(c.op);
        self.number("fd", c.fd.into());
        self.key("close_reason");
        self.out.push(b'"');
        push_text(self.out, c.reason.describe().as_bytes());
        self.out.extend_from_slice(b" - ");
        self.out.extend_from_slice(c.reason.code().as_bytes());
        self.out.push(b'"');
        self.end();
    }

    /// The request object (or the Abandon's), then the RESULT; says how many were written.
    fn op(&mut self, op: &Op<'_>, level: Level) -> u64 {
        let request = request::decode(op);
        let abandon = request.as_ref().and_then(|msg| match msg.op {
            ProtocolOp::AbandonRequest(a) => Some((msg, a)),
            _ => None,
        });
        let mut lines = 0;
        if let Some((msg, a)) = abandon {
            self.abandon(op, msg, &a, level);
            lines += 1;
        } else if level.writes_requests() && self.request(op, request.as_ref(), level) {
            lines += 1;
        }
        if op.response_tag != 0 {
            self.result(op, request.as_ref(), level);
            lines += 1;
        }
        lines
    }

    /// The request object, when there is one to write (says whether there was).
    fn request(&mut self, op: &Op<'_>, request: Option<&LdapMessage<'_>>, level: Level) -> bool {
        let Some(msg) = request else {
            if op.undecodable || !op.request.is_empty() {
                self.begin_op(op, op.received, "UNDECODABLE", true);
                self.number("request_tag", op.request_tag.into());
                self.end();
                return true;
            }
            return false;
        };
        self.begin_op(op, op.received, operation_name(&msg.op), true);
        if let ProtocolOp::ExtendedRequest(e) = &msg.op {
            self.string("oid", e.name);
            self.string("oid_name", oid_name(e.name).as_bytes());
        }
        if !matches!(msg.op, ProtocolOp::BindRequest(_)) {
            if let Some(id) = proxied_authz_id(msg) {
                self.string("authzid", id);
            }
        }
        if level.is_full() {
            self.request_controls(msg);
        }
        match &msg.op {
            ProtocolOp::BindRequest(b) => self.bind(b),
            ProtocolOp::UnbindRequest => {}
            ProtocolOp::SearchRequest(s) => self.search(s, level),
            ProtocolOp::ModifyRequest(m) => self.modify(m, level),
            ProtocolOp::AddRequest(a) => self.add(a, level),
            ProtocolOp::DelRequest(d) => self.string("target_dn", d.dn),
            ProtocolOp::ModifyDnRequest(m) => self.modify_dn(m),
            ProtocolOp::CompareRequest(c) => self.compare(c),
            ProtocolOp::ExtendedRequest(e) => self.extended(e),
            other => self.number("request_tag", other.tag().into()),
        }
        self.end();
        true
    }

    fn bind(&mut self, b: &BindRequest<'_>) {
        self.string("bind_dn", b.name);
        self.number("version", b.version.into());
        match b.authentication {
            Authentication::Simple(_) => self.string("method", b"128"),
            Authentication::Sasl { mechanism, .. } => {
                self.string("method", b"sasl");
                self.string("mech", mechanism);
            }
            Authentication::Other { tag, .. } => {
                self.key("method");
                self.out.push(b'"');
                push_u64(self.out, tag.into());
                self.out.push(b'"');
            }
        }
    }

    fn search(&mut self, s: &SearchRequest<'_>, level: Level) {
        self.string("base_dn", s.base);
        self.number("scope", s.scope as u64);
        self.key("filter");
        self.out.push(b'"');
        push_filter(self.out, &s.filter, plain_text, push_text);
        self.out.push(b'"');
        if !s.attributes.is_empty() {
            self.strings("attrs", s.attributes.iter());
        }
        if level.is_full() {
            self.number("deref", s.deref_aliases as u64);
            self.number("sizelimit", s.size_limit.into());
            self.number("timelimit", s.time_limit.into());
            self.boolean("attrsonly", s.types_only);
        }
    }

    fn modify(&mut self, m: &ModifyRequest<'_>, level: Level) {
        self.string("target_dn", m.object);
        if level.is_full() {
            self.key("mods");
            self.out.push(b'[');
            for (i, change) in m.changes.iter().enumerate() {
                if i > 0 {
                    self.out.push(b',');
                }
                self.out.extend_from_slice(b"{\"op\":\"");
                self.out
                    .extend_from_slice(modify_kind(change.operation).as_bytes());
                self.out.push(b'"');
                self.string("attr", change.modification.description);
                self.out.push(b'}');
            }
            self.out.push(b']');
        }
    }

    fn add(&mut self, a: &AddRequest<'_>, level: Level) {
        self.string("target_dn", a.entry);
        if level.is_full() {
            self.strings("attrs", a.attributes.iter().map(|attr| attr.description));
        }
    }

    fn modify_dn(&mut self, m: &ModifyDnRequest<'_>) {
        self.string("target_dn", m.entry);
        self.string("newrdn", m.new_rdn);
        if let Some(sup) = m.new_superior {
            self.string("newsup", sup);
        }
        self.boolean("deleteoldrdn", m.delete_old_rdn);
    }

    fn compare(&mut self, c: &CompareRequest<'_>) {
        self.string("target_dn", c.entry);
        self.string("cmp_attr", c.ava.description);
    }

    fn extended(&mut self, e: &ExtendedRequest<'_>) {
        if let Some(name) = extended_name(e.name) {
            self.string("name", name.as_bytes());
        }
    }

    fn abandon(&mut self, op: &Op<'_>, msg: &LdapMessage<'_>, a: &AbandonRequest, level: Level) {
        self.begin_op(op, op.received, "ABANDON", false);
        if level.is_full() {
            self.request_controls(msg);
        }
        self.signed("msgid", a.message_id.into());
        self.key("target_op");
        if op.target_op < 0 {
            self.out.extend_from_slice(b"\"NOTFOUND\"");
        } else {
            self.out.push(b'"');
            push_i64(self.out, op.target_op);
            self.out.push(b'"');
        }
        self.end();
    }

    fn result(&mut self, op: &Op<'_>, request: Option<&LdapMessage<'_>>, level: Level) {
        let bind = op.response_tag == op_tag::BIND_RESPONSE;
        self.begin_op(op, op.finished, "RESULT", true);
        if bind && op.result == SASL_BIND_IN_PROGRESS {
            self.string("msg", b"SASL bind in progress");
        } else if level.is_full() && !op.message.is_empty() {
            self.string("msg", op.message.as_bytes());
        }
        if level.is_full() {
            self.response_controls(op.response_controls);
        }
        self.number("tag", op.response_tag.into());
        self.number("err", op.result.into());
        self.number("nentries", op.entries.into());
        self.notes(op.notes, request);
        if bind && op.result == 0 {
            self.string("bind_dn", op.authz_dn.as_bytes());
        }
        let mut times = Fixed::<{ 39 + 3 * DURATION }>::new();
        times
            .text(b",\"wtime\":\"")
            .duration(op.wait_ns)
            .text(b"\",\"optime\":\"")
            .duration(op.work_ns)
            .text(b"\",\"etime\":\"")
            .duration(op.wait_ns.saturating_add(op.work_ns))
            .text(b"\"");
        times.append_to(self.out);
        if level.is_full() {
            if !bind {
                self.string("authz_dn", op.authz_dn.as_bytes());
            }
            if !op.matched.is_empty() {
                self.string("matched_dn", op.matched.as_bytes());
            }
        }
        self.end();
    }

    /// `"notes":[{"note":"U","description":"...","base_dn":"...","filter":"...","scope":2}]`
    fn notes(&mut self, notes: &str, request: Option<&LdapMessage<'_>>) {
        if known_notes(notes).next().is_none() {
            return;
        }
        let search = request.and_then(|msg| match msg.op {
            ProtocolOp::SearchRequest(s) => Some(s),
            _ => None,
        });
        self.key("notes");
        self.out.push(b'[');
        for (i, (letter, description)) in known_notes(notes).enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.out.extend_from_slice(b"{\"note\":\"");
            self.out.push(letter);
            self.out.push(b'"');
            self.string("description", description.as_bytes());
            if let (Some(s), b'A' | b'U') = (&search, letter) {
                self.string("base_dn", s.base);
                self.key("filter");
                self.out.push(b'"');
                push_filter(self.out, &s.filter, plain_text, push_text);
                self.out.push(b'"');
                self.number("scope", s.scope as u64);
            }
            self.out.push(b'}');
        }
        self.out.push(b']');
    }

    fn request_controls(&mut self, msg: &LdapMessage<'_>) {
        let controls = msg.controls();
        if controls.is_empty() {
            return;
        }
        self.key("request_controls");
        self.out.push(b'[');
        for (i, control) in controls.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.out.extend_from_slice(b"{\"oid\":\"");
            push_text(self.out, control.oid);
            self.out.push(b'"');
            self.string("oid_name", oid_name(control.oid).as_bytes());
            self.boolean("isCritical", control.critical);
            self.out.push(b'}');
        }
        self.out.push(b']');
    }

    fn response_controls(&mut self, oids: &str) {
        let mut oids = oids.split(' ').filter(|o| !o.is_empty()).peekable();
        if oids.peek().is_none() {
            return;
        }
        self.key("response_controls");
        self.out.push(b'[');
        for (i, oid) in oids.enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.out.extend_from_slice(b"{\"oid\":\"");
            push_text(self.out, oid.as_bytes());
            self.out.push(b'"');
            self.string("oid_name", oid_name(oid.as_bytes()).as_bytes());
            self.out.push(b'}');
        }
        self.out.push(b']');
    }

    /// `{"local_time":"...","operation":"...","key":"...","conn_id":N`
    fn begin(&mut self, time: WallNanos, operation: &str, conn: u64) {
        let mut head = Fixed::<{ 15 + ISO_LEN + 15 }>::new();
        head.text(b"{\"local_time\":\"")
            .text(&self.clock.iso(time))
            .text(b"\",\"operation\":\"");
        head.append_to(self.out);
        self.out.extend_from_slice(operation.as_bytes());
        let mut f = Fixed::<{ 9 + U64 + 1 + U64 + 12 + U64 }>::new();
        f.text(b"\",\"key\":\"")
            .u64(self.started)
            .text(b"-")
            .u64(conn)
            .text(b"\",\"conn_id\":")
            .u64(conn);
        f.append_to(self.out);
    }

    /// [`Line::begin`], then `op_id` and, when asked, `msgid`. A RESULT has an `op_id` even
    /// when it is -1 (a Notice of Disconnection): 389's analyser keys results by it.
    fn begin_op(&mut self, op: &Op<'_>, time: WallNanos, operation: &str, msgid: bool) {
        self.begin(time, operation, op.conn);
        if operation == "RESULT" {
            self.signed("op_id", op.op);
        } else {
            self.op_id(op.op);
        }
        if msgid {
            self.signed("msgid", op.msgid.into());
        }
    }

    /// 389 leaves `op_id` out when it is -1 (no operation).
    fn op_id(&mut self, op: i64) {
        if op != -1 {
            self.signed("op_id", op);
        }
    }

    fn end(&mut self) {
        self.out.extend_from_slice(b"}\n");
    }

    /// `,"name":`
    fn key(&mut self, name: &str) {
        self.out.extend_from_slice(b",\"");
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    fn string(&mut self, name: &str, value: &[u8]) {
        self.key(name);
        self.out.push(b'"');
        push_text(self.out, value);
        self.out.push(b'"');
    }

    fn strings<'v>(&mut self, name: &str, values: impl Iterator<Item = &'v [u8]>) {
        self.key(name);
        self.out.push(b'[');
        for (i, value) in values.enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.out.push(b'"');
            push_text(self.out, value);
            self.out.push(b'"');
        }
        self.out.push(b']');
    }

    /// `,"name":value`, assembled on the stack and appended in one copy (a key's three
    /// pieces and the digits appended one by one were most of what a line's numbers cost).
    fn number(&mut self, name: &str, value: u64) {
        self.integer(name, false, value);
    }

    /// [`Line::number`] for a signed value.
    fn signed(&mut self, name: &str, value: i64) {
        self.integer(name, value < 0, value.unsigned_abs());
    }

    /// `,"name":-magnitude` or `,"name":magnitude`.
    fn integer(&mut self, name: &str, negative: bool, magnitude: u64) {
        let sign: &[u8] = if negative { b"-" } else { b"" };
        if name.len() > MAX_NUMBER_NAME {
            self.key(name);
            self.out.extend_from_slice(sign);
            push_u64(self.out, magnitude);
            return;
        }
        let mut f = Fixed::<{ MAX_NUMBER_NAME + 4 + I64 }>::new();
        f.text(b",\"")
            .text(name.as_bytes())
            .text(b"\":")
            .text(sign)
            .u64(magnitude);
        f.append_to(self.out);
    }

    fn boolean(&mut self, name: &str, value: bool) {
        self.key(name);
        self.out.extend_from_slice(if value { b"true" } else { b"false" });
    }

    /// An address as 389 writes it (no port, `"unknown"` when there is none).
    fn ip(&mut self, name: &str, addr: Option<SocketAddr>) {
        self.key(name);
        self.out.push(b'"');
        push_ip(self.out, addr);
        self.out.push(b'"');
    }
}

/// The longest name [`Line::number`] assembles on the stack (a longer one is appended
/// piece by piece).
const MAX_NUMBER_NAME: usize = 16;

/// The `operation` of a request object, as 389 names it.
fn operation_name(op: &ProtocolOp<'_>) -> &'static str {
    match op {
        ProtocolOp::BindRequest(_) => "BIND",
        ProtocolOp::UnbindRequest => "UNBIND",
        ProtocolOp::SearchRequest(_) => "SEARCH",
        ProtocolOp::ModifyRequest(_) => "MODIFY",
        ProtocolOp::AddRequest(_) => "ADD",
        ProtocolOp::DelRequest(_) => "DELETE",
        ProtocolOp::ModifyDnRequest(_) => "MODRDN",
        ProtocolOp::CompareRequest(_) => "COMPARE",
        ProtocolOp::AbandonRequest(_) => "ABANDON",
        ProtocolOp::ExtendedRequest(_) => "EXTENDED_OP",
        _ => "UNDECODABLE",
    }
}

/// The name 389's `get_oid_name` gives an OID Larch meets, `Unknown` for the others (as
/// 389 says).
fn oid_name(oid: &[u8]) -> &'static str {
    const NAMES: [(&str, &str); 16] = [
        (oid::MANAGE_DSA_IT, "LDAP_CONTROL_MANAGEDSAIT"),
        (oid::PROXIED_AUTHZ, "LDAP_CONTROL_PROXIEDAUTH"),
        (oid::ASSERTION, "LDAP_CONTROL_ASSERT"),
        (oid::PRE_READ, "LDAP_CONTROL_PRE_READ_ENTRY"),
        (oid::POST_READ, "LDAP_CONTROL_POST_READ_ENTRY"),
        (oid::SORT_REQUEST, "LDAP_CONTROL_SORTREQUEST"),
        (oid::SORT_RESPONSE, "LDAP_CONTROL_SORTRESPONSE"),
        (oid::PAGED_RESULTS, "LDAP_CONTROL_PAGEDRESULTS"),
        (oid::PERMISSIVE_MODIFY, "LDAP_CONTROL_X_PERMISSIVE_MODIFY"),
        (oid::SUBTREE_DELETE, "LDAP_CONTROL_X_TREE_DELETE"),
        ("1.3.6.1.4.1.4203.1.9.1", "LDAP_SYNC_OID"),
        ("2.16.840.1.113730.3.4.3", "LDAP_CONTROL_PERSISTENTSEARCH"),
        ("2.16.840.1.113730.3.4.9", "LDAP_CONTROL_VLVREQUEST"),
        ("1.3.6.1.4.1.42.2.27.8.5.1", "LDAP_CONTROL_PASSWORDPOLICY"),
        (exop::START_TLS, "START_TLS_OID"),
        (exop::PASSWORD_MODIFY, "EXTOP_PASSWD_OID"),
    ];
    NAMES
        .iter()
        .find(|(o, _)| o.as_bytes() == oid)
        .map_or("Unknown", |(_, name)| name)
}

/// Whether `push_text` writes all of `s` as it is (it may also for some `s` refused
/// here: DEL is written as it is).
fn plain_text(s: &[u8]) -> bool {
    printable_except(s, b"\"\\/")
}

/// Appends `s` escaped for the inside of a JSON string, as json-c escapes; an octet that
/// is not UTF-8 becomes the text `\HH`.
fn push_text(out: &mut Vec<u8>, s: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    if plain_text(s) {
        out.extend_from_slice(s);
        return;
    }
    for chunk in s.utf8_chunks() {
        let valid = chunk.valid().as_bytes();
        let mut from = 0;
        for (i, &b) in valid.iter().enumerate() {
            let short: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'/' => b"\\/",
                0x08 => b"\\b",
                0x0c => b"\\f",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0..=0x1f => b"",
                _ => continue,
            };
            out.extend_from_slice(&valid[from..i]);
            from = i + 1;
            if short.is_empty() {
                out.extend_from_slice(b"\\u00");
                out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]);
            } else {
                out.extend_from_slice(short);
            }
        }
        out.extend_from_slice(&valid[from..]);
        for &b in chunk.invalid() {
            out.extend_from_slice(&[b'\\', b'\\', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]);
        }
    }
}

#[cfg(test)]
mod tests {
    use larch_proto::controls::Control;
    use larch_proto::{
        AttributeValueAssertion, Change, DelRequest, DerefAliases, ModifyOperation, OwnedFilter,
        PartialAttribute, SearchScope, SeqOf,
    };
    use serde_json::Value;

    use super::*;
    use crate::accesslog::event::CloseReason;
    use crate::accesslog::test_events::{op, pdu, T0};

    const AT: &str = "2026-11-22T10:00:00.123456789 +0000";
    /// T0 + 261 234 ns, when the operations below finish.
    const END: &str = "2026-11-22T10:00:00.123718023 +0000";
    const STARTED: u64 = 1_795_341_000;
    const TIMES: &str = r#""wtime":"0.000051234","optime":"0.000210000","etime":"0.000261234""#;

    #[test]
    fn numbers_are_the_same_text_whether_assembled_on_the_stack_or_not() {
        let long = "a_name_longer_than_sixteen";
        assert!(long.len() > MAX_NUMBER_NAME);
        for name in ["tag", "sixteen_octets__", long] {
            for (value, signed) in [(0u64, 0i64), (7, -1), (101, -12_345), (u64::MAX, i64::MIN)] {
                let (mut out, mut clock) = (Vec::new(), TimeCache::new());
                let mut line = Line {
                    out: &mut out,
                    clock: &mut clock,
                    started: STARTED,
                };
                line.number(name, value);
                line.signed(name, signed);
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    format!(",\"{name}\":{value},\"{name}\":{signed}")
                );
            }
        }
    }

    /// The JSON of `event` at `level`, every line checked to be one JSON object.
    fn json(event: &Event<'_>, level: Level) -> String {
        let mut out = Vec::new();
        let lines = write(&mut out, event, level, &mut TimeCache::new(), STARTED);
        assert_eq!(
            lines,
            out.iter().filter(|&&b| b == b'\n').count() as u64,
            "lines said"
        );
        let text = String::from_utf8(out).expect("the log is UTF-8");
        for line in text.lines() {
            let value: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            assert!(value.is_object(), "{line}");
        }
        text
    }

    fn levels(o: &Op<'_>) -> [String; 3] {
        let e = Event::Op(o.clone());
        [
            json(&e, Level::Results),
            json(&e, Level::Default),
            json(&e, Level::Full),
        ]
    }

    /// One object of connection 12: the base fields, then `rest` (which starts with a comma).
    fn obj(time: &str, operation: &str, rest: &str) -> String {
        format!(
            "{{\"local_time\":\"{time}\",\"operation\":\"{operation}\",\"key\":\"{STARTED}-12\",\"conn_id\":12{rest}}}\n"
        )
    }

    #[test]
    fn connection_events() {
        let connect = Event::Connect(Connect {
            conn: 12,
            time: T0,
            peer: Some("[::ffff:10.0.0.7]:40000".parse().unwrap()),
            local: Some("[::1]:636".parse().unwrap()),
            fd: 64,
            ldaps: true,
        });
        assert_eq!(
            json(&connect, Level::Results),
            obj(
                AT,
                "CONNECTION",
                r#","fd":64,"slot":64,"tls":true,"client_ip":"10.0.0.7","server_ip":"::1""#
            )
        );
        let tls = Event::Tls(Tls {
            conn: 12,
            time: T0,
            version: "TLS1.3",
            cipher: "TLS13_AES_256_GCM_SHA384",
            keysize: 256,
        });
        assert_eq!(
            json(&tls, Level::Default),
            obj(
                AT,
                "TLS_INFO",
                r#","tls_version":"TLS1.3","cipher":"AES-GCM","keysize":256"#
            )
        );
        let refused = Event::Refused(Refused {
            conn: 12,
            time: T0,
            peer: Some("192.0.2.1:5000".parse().unwrap()),
            local: None,
            reason: "busy",
        });
        assert_eq!(
            json(&refused, Level::Full),
            obj(
                AT,
                "REFUSED",
                r#","msg":"busy","client_ip":"192.0.2.1","server_ip":"unknown""#
            )
        );
        let close = |op, reason| {
            Event::Close(Close {
                conn: 12,
                time: T0,
                op,
                fd: 64,
                reason,
            })
        };
        assert_eq!(
            json(&close(-1, CloseReason::Idle), Level::Results),
            obj(AT, "DISCONNECT", r#","fd":64,"close_reason":"idle timeout - T1""#)
        );
        assert_eq!(
            json(&close(3, CloseReason::Unbind), Level::Results),
            obj(
                AT,
                "DISCONNECT",
                r#","op_id":3,"fd":64,"close_reason":"client unbind - U1""#
            )
        );
    }

    #[test]
    fn binds_and_unbind() {
        let req = pdu(
            ProtocolOp::BindRequest(BindRequest {
                version: 3,
                name: b"uid=a,dc=x",
                authentication: Authentication::Simple(b"secret"),
            }),
            &[],
        );
        let mut ok = op(&req, op_tag::BIND_RESPONSE);
        ok.authz_dn = "uid=a,dc=x";
        let request = obj(
            AT,
            "BIND",
            r#","op_id":1,"msgid":2,"bind_dn":"uid=a,dc=x","version":3,"method":"128""#,
        );
        let result = obj(
            END,
            "RESULT",
            &format!(r#","op_id":1,"msgid":2,"tag":97,"err":0,"nentries":0,"bind_dn":"uid=a,dc=x",{TIMES}"#),
        );
        assert_eq!(
            levels(&ok),
            [result.clone(), request.clone() + &result, request + &result]
        );
        assert!(!levels(&ok)[2].contains("secret"));

        let sasl = pdu(
            ProtocolOp::BindRequest(BindRequest {
                version: 3,
                name: b"",
                authentication: Authentication::Sasl {
                    mechanism: b"PLAIN",
                    credentials: Some(b"\0a\0secret"),
                },
            }),
            &[],
        );
        let mut failed = op(&sasl, op_tag::BIND_RESPONSE);
        failed.result = 49;
        failed.message = "invalid credentials";
        assert_eq!(
            levels(&failed)[2],
            obj(
                AT,
                "BIND",
                r#","op_id":1,"msgid":2,"bind_dn":"","version":3,"method":"sasl","mech":"PLAIN""#
            ) + &obj(
                END,
                "RESULT",
                &format!(
                    r#","op_id":1,"msgid":2,"msg":"invalid credentials","tag":97,"err":49,"nentries":0,{TIMES}"#
                )
            )
        );
        let mut step = op(&sasl, op_tag::BIND_RESPONSE);
        step.result = 14;
        assert_eq!(
            levels(&step)[0],
            obj(
                END,
                "RESULT",
                &format!(
                    r#","op_id":1,"msgid":2,"msg":"SASL bind in progress","tag":97,"err":14,"nentries":0,{TIMES}"#
                )
            )
        );

        let unbind = pdu(ProtocolOp::UnbindRequest, &[]);
        let line = obj(AT, "UNBIND", r#","op_id":1,"msgid":2"#);
        assert_eq!(levels(&op(&unbind, 0)), [String::new(), line.clone(), line]);
    }

    #[test]
    fn searches_with_notes_and_every_argument() {
        let filter = OwnedFilter::parse("(&(objectClass=person)(uid=a/b*))").unwrap();
        let attrs: [&[u8]; 2] = [b"cn", b"sn"];
        let req = SearchRequest {
            base: b"dc=x",
            scope: SearchScope::Subtree,
            deref_aliases: DerefAliases::Never,
            size_limit: 5,
            time_limit: 0,
            types_only: false,
            filter: filter.as_filter(),
            attributes: SeqOf::from_items(&attrs),
        };
        let paged = Control {
            oid: oid::PAGED_RESULTS.as_bytes(),
            critical: true,
            value: Some(&[0x30, 0x05, 0x02, 0x01, 0x0a, 0x04, 0x00]),
        };
        let proxy = Control {
            oid: oid::PROXIED_AUTHZ.as_bytes(),
            critical: true,
            value: Some(b"dn:uid=b,dc=x"),
        };
        let req = pdu(ProtocolOp::SearchRequest(req), &[paged, proxy]);
        let mut o = op(&req, op_tag::SEARCH_RESULT_DONE);
        o.entries = 2;
        o.notes = "PU";
        o.authz_dn = "uid=b,dc=x";
        o.response_controls = "1.2.840.113556.1.4.319";
        let args = r#","base_dn":"dc=x","scope":2,"filter":"(&(objectClass=person)(uid=a\/b*))","attrs":["cn","sn"]"#;
        let request = obj(
            AT,
            "SEARCH",
            &format!(r#","op_id":1,"msgid":2,"authzid":"uid=b,dc=x"{args}"#),
        );
        let notes = r#","notes":[{"note":"U","description":"Partially Unindexed Filter","base_dn":"dc=x","filter":"(&(objectClass=person)(uid=a\/b*))","scope":2},{"note":"P","description":"Paged Search"}]"#;
        let result = obj(
            END,
            "RESULT",
            &format!(r#","op_id":1,"msgid":2,"tag":101,"err":0,"nentries":2{notes},{TIMES}"#),
        );
        let full_request = obj(
            AT,
            "SEARCH",
            &format!(
                r#","op_id":1,"msgid":2,"authzid":"uid=b,dc=x","request_controls":[{{"oid":"1.2.840.113556.1.4.319","oid_name":"LDAP_CONTROL_PAGEDRESULTS","isCritical":true}},{{"oid":"2.16.840.1.113730.3.4.18","oid_name":"LDAP_CONTROL_PROXIEDAUTH","isCritical":true}}]{args},"deref":0,"sizelimit":5,"timelimit":0,"attrsonly":false"#
            ),
        );
        let full_result = obj(
            END,
            "RESULT",
            &format!(
                r#","op_id":1,"msgid":2,"response_controls":[{{"oid":"1.2.840.113556.1.4.319","oid_name":"LDAP_CONTROL_PAGEDRESULTS"}}],"tag":101,"err":0,"nentries":2{notes},{TIMES},"authz_dn":"uid=b,dc=x""#
            ),
        );
        assert_eq!(
            levels(&o),
            [result.clone(), request + &result, full_request + &full_result]
        );

        let everything = OwnedFilter::parse("(objectClass=*)").unwrap();
        let all = SearchRequest {
            base: b"",
            scope: SearchScope::Base,
            deref_aliases: DerefAliases::Always,
            size_limit: 0,
            time_limit: 0,
            types_only: true,
            filter: everything.as_filter(),
            attributes: SeqOf::default(),
        };
        let req = pdu(ProtocolOp::SearchRequest(all), &[]);
        assert_eq!(
            levels(&op(&req, 0))[1],
            obj(
                AT,
                "SEARCH",
                r#","op_id":1,"msgid":2,"base_dn":"","scope":0,"filter":"(objectClass=*)""#
            )
        );
    }

    #[test]
    fn writes_compare_and_extended_operations() {
        let values: [&[u8]; 1] = [b"v"];
        let attrs = [PartialAttribute {
            description: b"cn",
            values: SeqOf::from_items(&values),
        }];
        let add = pdu(
            ProtocolOp::AddRequest(AddRequest {
                entry: b"cn=a,dc=x",
                attributes: SeqOf::from_items(&attrs),
            }),
            &[],
        );
        let result = |tag: u8, rest: &str| {
            obj(
                END,
                "RESULT",
                &format!(r#","op_id":1,"msgid":2,"tag":{tag},"err":0,"nentries":0,{TIMES}{rest}"#),
            )
        };
        let target = r#","op_id":1,"msgid":2,"target_dn":"cn=a,dc=x""#;
        assert_eq!(
            levels(&op(&add, op_tag::ADD_RESPONSE)),
            [
                result(105, ""),
                obj(AT, "ADD", target) + &result(105, ""),
                obj(AT, "ADD", &format!(r#"{target},"attrs":["cn"]"#)) + &result(105, r#","authz_dn":"""#),
            ]
        );

        let changes = [
            Change {
                operation: ModifyOperation::Replace,
                modification: attrs[0],
            },
            Change {
                operation: ModifyOperation::Delete,
                modification: PartialAttribute {
                    description: b"sn",
                    values: SeqOf::default(),
                },
            },
        ];
        let modify = pdu(
            ProtocolOp::ModifyRequest(ModifyRequest {
                object: b"cn=a,dc=x",
                changes: SeqOf::from_items(&changes),
            }),
            &[],
        );
        let mut o = op(&modify, op_tag::MODIFY_RESPONSE);
        o.result = 32;
        o.matched = "dc=x";
        o.message = "no such entry";
        assert_eq!(
            levels(&o)[2],
            obj(
                AT,
                "MODIFY",
                &format!(r#"{target},"mods":[{{"op":"replace","attr":"cn"}},{{"op":"delete","attr":"sn"}}]"#)
            ) + &obj(
                END,
                "RESULT",
                &format!(
                    r#","op_id":1,"msgid":2,"msg":"no such entry","tag":103,"err":32,"nentries":0,{TIMES},"authz_dn":"","matched_dn":"dc=x""#
                )
            )
        );

        let delete = pdu(ProtocolOp::DelRequest(DelRequest { dn: b"cn=a,dc=x" }), &[]);
        assert_eq!(
            levels(&op(&delete, op_tag::DEL_RESPONSE))[1],
            obj(AT, "DELETE", target) + &result(107, "")
        );

        let moved = pdu(
            ProtocolOp::ModifyDnRequest(ModifyDnRequest {
                entry: b"cn=a,dc=x",
                new_rdn: b"cn=b",
                delete_old_rdn: true,
                new_superior: Some(b"ou=y,dc=x"),
            }),
            &[],
        );
        assert_eq!(
            levels(&op(&moved, 0))[1],
            obj(
                AT,
                "MODRDN",
                &format!(r#"{target},"newrdn":"cn=b","newsup":"ou=y,dc=x","deleteoldrdn":true"#)
            )
        );
        let renamed = pdu(
            ProtocolOp::ModifyDnRequest(ModifyDnRequest {
                entry: b"cn=a,dc=x",
                new_rdn: b"cn=b",
                delete_old_rdn: false,
                new_superior: None,
            }),
            &[],
        );
        assert_eq!(
            levels(&op(&renamed, 0))[1],
            obj(
                AT,
                "MODRDN",
                &format!(r#"{target},"newrdn":"cn=b","deleteoldrdn":false"#)
            )
        );

        let compare = pdu(
            ProtocolOp::CompareRequest(CompareRequest {
                entry: b"cn=a,dc=x",
                ava: AttributeValueAssertion {
                    description: b"userPassword",
                    value: b"never logged",
                },
            }),
            &[],
        );
        let all = levels(&op(&compare, 0));
        assert_eq!(
            all[1],
            obj(AT, "COMPARE", &format!(r#"{target},"cmp_attr":"userPassword""#))
        );
        assert!(!all[2].contains("never logged"));

        for (oid, oid_name, name) in [
            (exop::START_TLS, "START_TLS_OID", r#","name":"start_tls_plugin""#),
            (
                exop::PASSWORD_MODIFY,
                "EXTOP_PASSWD_OID",
                r#","name":"passwd_modify_plugin""#,
            ),
            (exop::WHO_AM_I, "Unknown", r#","name":"whoami-plugin""#),
            ("1.2.3.4", "Unknown", ""),
        ] {
            let ext = pdu(
                ProtocolOp::ExtendedRequest(ExtendedRequest {
                    name: oid.as_bytes(),
                    value: None,
                }),
                &[],
            );
            assert_eq!(
                levels(&op(&ext, op_tag::EXTENDED_RESPONSE))[1],
                obj(
                    AT,
                    "EXTENDED_OP",
                    &format!(r#","op_id":1,"msgid":2,"oid":"{oid}","oid_name":"{oid_name}"{name}"#)
                ) + &result(120, "")
            );
        }
    }

    #[test]
    fn abandon_undecodable_requests_and_notices() {
        let req = pdu(ProtocolOp::AbandonRequest(AbandonRequest { message_id: 5 }), &[]);
        let mut found = op(&req, 0);
        found.target_op = 4;
        let line = obj(AT, "ABANDON", r#","op_id":1,"msgid":5,"target_op":"4""#);
        assert_eq!(levels(&found), [line.clone(), line.clone(), line]);
        let line = obj(AT, "ABANDON", r#","op_id":1,"msgid":5,"target_op":"NOTFOUND""#);
        assert_eq!(levels(&op(&req, 0))[0], line);

        let mut garbage = op(&[0x30, 0x03, 0x02, 0x01], op_tag::SEARCH_RESULT_DONE);
        garbage.undecodable = true;
        garbage.request_tag = 0x63;
        garbage.result = 2;
        let result = obj(
            END,
            "RESULT",
            &format!(r#","op_id":1,"msgid":2,"tag":101,"err":2,"nentries":0,{TIMES}"#),
        );
        assert_eq!(
            levels(&garbage)[..2],
            [
                result.clone(),
                obj(AT, "UNDECODABLE", r#","op_id":1,"msgid":2,"request_tag":99"#) + &result
            ]
        );

        let mut notice = op(&[], op_tag::EXTENDED_RESPONSE);
        notice.op = -1;
        notice.msgid = 0;
        notice.result = 2;
        assert_eq!(
            levels(&notice)[1],
            obj(
                END,
                "RESULT",
                &format!(r#","op_id":-1,"msgid":0,"tag":120,"err":2,"nentries":0,{TIMES}"#)
            )
        );
    }

    #[test]
    fn strings_are_escaped_as_json_c_does_and_read_back_whole() {
        let dn = "cn=\"Q\" \\2C a/b Ünï\n\t\u{1}\u{7f}例,dc=x";
        let filter = OwnedFilter::parse("(cn=a\"b\\2a\u{e9}\n)").unwrap();
        let req = SearchRequest {
            base: dn.as_bytes(),
            scope: SearchScope::Base,
            deref_aliases: DerefAliases::Never,
            size_limit: 0,
            time_limit: 0,
            types_only: false,
            filter: filter.as_filter(),
            attributes: SeqOf::default(),
        };
        let req = pdu(ProtocolOp::SearchRequest(req), &[]);
        let got = levels(&op(&req, 0))[1].clone();
        assert_eq!(
            got,
            obj(
                AT,
                "SEARCH",
                r#","op_id":1,"msgid":2,"base_dn":"cn=\"Q\" \\2C a\/b Ünï\n\t\u0001<7f>例,dc=x","scope":0,"filter":"(cn=a\"b\\2aé\n)""#
            )
            .replace("<7f>", "\u{7f}")
        );
        let value: Value = serde_json::from_str(got.trim_end()).unwrap();
        assert_eq!(value["base_dn"], dn);
        assert_eq!(value["filter"], "(cn=a\"b\\2aé\n)");

        let delete = pdu(ProtocolOp::DelRequest(DelRequest { dn: b"cn=\xff,dc=x" }), &[]);
        let got = levels(&op(&delete, 0))[1].clone();
        let value: Value = serde_json::from_str(got.trim_end()).unwrap();
        assert_eq!(value["target_dn"], "cn=\\ff,dc=x");
    }

    #[test]
    fn no_input_panics_and_every_line_is_one_json_object() {
        let filter = OwnedFilter::parse("(&(uid=a)(|(cn=b*)(!(sn=c))))").unwrap();
        let attrs: [&[u8]; 1] = [b"cn"];
        let req = SearchRequest {
            base: b"dc=x",
            scope: SearchScope::Subtree,
            deref_aliases: DerefAliases::Never,
            size_limit: 0,
            time_limit: 0,
            types_only: false,
            filter: filter.as_filter(),
            attributes: SeqOf::from_items(&attrs),
        };
        let good = pdu(
            ProtocolOp::SearchRequest(req),
            &[Control {
                oid: b"1.2.3",
                critical: true,
                value: None,
            }],
        );
        let mut inputs: Vec<Vec<u8>> = (0..good.len()).map(|n| good[..n].to_vec()).collect();
        for i in 0..good.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] ^= flip;
                inputs.push(bad);
            }
        }
        for input in &inputs {
            for undecodable in [false, true] {
                let mut o = op(input, op_tag::SEARCH_RESULT_DONE);
                o.undecodable = undecodable;
                o.notes = "?AU\n";
                o.message = "\u{0}\"\\";
                o.response_controls = " 1.2 \n ";
                for text in levels(&o) {
                    // `json` parsed every line already.
                    assert!(text.ends_with('\n'));
                    assert_eq!(text.matches("\"operation\":\"RESULT\"").count(), 1);
                }
            }
        }
    }
}
