//! 389 Directory Server's text access log format, line for line as its analyser `logconv`
//! reads it.
//!
//! Every line is `[time] conn=N ...`, the time in UTC with nanoseconds
//! (`[22/Nov/2026:10:00:00.123456789 +0000]`). One [`Event`] gives:
//!
//! ```text
//! conn=12 fd=64 slot=64 connection from 127.0.0.1 to 127.0.0.1      (SSL connection from: ldaps)
//! conn=12 TLS1.3 128-bit AES-GCM
//! conn=13 refused from 127.0.0.1 to 127.0.0.1 - busy                 (Larch's own; logconv skips it)
//! conn=12 op=-1 fd=64 closed - U1
//! conn=12 op=1 SRCH base="dc=x" scope=2 filter="(uid=a)" attrs=ALL  (request line, at Op::received)
//! conn=12 op=1 RESULT err=0 tag=101 nentries=1 wtime=0.000051234 optime=0.000210000 etime=0.000261234
//! ```
//!
//! An operation writes its request line (levels `Default` and `Full`), then its RESULT line
//! when a response was sent (`tag` is the response's tag, `etime` = `wtime` + `optime`).
//! The request lines are 389's: `BIND dn="" method=128 version=3` (simple) or
//! `method=sasl version=3 mech=PLAIN`, `UNBIND`, `SRCH base= scope= filter= attrs=ALL` or
//! `attrs="cn sn"`, `ADD dn=`, `MOD dn=`, `DEL dn=`, `MODRDN dn= newrdn= newsuperior=`
//! (`"(null)"` when absent), `CMP dn= attr=`, `EXT oid= name=`; a request carrying the
//! Proxied Authorization control adds `authzid="..."`. `ABANDON targetop=N msgid=M` (or
//! `targetop=NOTFOUND`) is one line with no RESULT, written at every level since it is the
//! Abandon's outcome (logconv counts it as a result too). A request that does not decode
//! gives `UNDECODABLE tag=N`, a line logconv counts nowhere, and its RESULT. A successful
//! Bind's RESULT ends with `dn="..."`, the identity established; `notes=U,P
//! details="Partially Unindexed Filter,Paged Search"` follows the times as 389 prints it.
//!
//! `Full` adds, after 389's fields: on an Add `attrs="objectClass cn"` (the types added), on
//! a Modify `mods="replace:mail add:description"`, on a ModifyDN `deleteoldrdn=`, on any
//! request `ctrls=OID:critical,OID`; on a Search `deref= sizelimit= timelimit= attrsonly=`
//! and `ctrls=` come before `attrs=`, since logconv takes the filter to be everything up
//! to the line's last `" `, and on a Bind `ctrls=` comes before `mech=`, since it takes
//! the mechanism to be the rest of the line. On a RESULT: `authzdn=""` (not on a Bind, whose `dn=` says
//! it), `matched=""`, `ctrls=OID,OID` (response controls) and ` - ` then the diagnostic
//! message, last.
//!
//! Escaping: 389 escapes nothing; this writer escapes only what could make a line two lines
//! or a field two fields, and always as a `\HH` hex pair, which means the same octet in a
//! DN (RFC 4514) and in a filter (RFC 4515). In a quoted DN, filter or OID: control
//! characters, `"` and octets that are not UTF-8. In a name (attribute type, mechanism,
//! control OID): every octet but letters, digits and `.;_-*+@`. In the trailing message:
//! control characters only. Backslashes and non-ASCII characters are written as they are.
//! DNs are written as the client sent them (389 writes them normalized), values never.
//! Like 389, nothing stops a DN from containing text logconv looks for (` ADD`,
//! ` RESULT err=`): logconv matches substrings anywhere in a line.

use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};

use larch_proto::controls::{oid, Control, ControlValue, ProxiedAuthz};
use larch_proto::{
    exop, op_tag, AbandonRequest, AddRequest, Authentication, BindRequest, CompareRequest, ExtendedRequest,
    Filter, LdapMessage, ModifyDnRequest, ModifyOperation, ModifyRequest, ProtocolOp, SearchRequest,
    SearchScope,
};

use super::event::{Close, Connect, Event, Op, Refused, Tls, WallNanos};
use super::fixed::{Fixed, DURATION, I64, U64};
use super::level::Level;
use super::number::{push_i64, push_u64};
use super::printable::printable_except;
use super::request;
use super::time::{TimeCache, TEXT_LEN};

/// Appends the line or lines of `event` to `out`, each ending in `\n`, and says how many.
pub fn write(out: &mut Vec<u8>, event: &Event<'_>, level: Level, clock: &mut TimeCache) -> u64 {
    match event {
        Event::Connect(c) => write_connect(out, c, clock),
        Event::Tls(t) => write_tls(out, t, clock),
        Event::Refused(r) => write_refused(out, r, clock),
        Event::Close(c) => write_close(out, c, clock),
        Event::Op(o) => return write_op(out, o, level, clock),
    }
    1
}

fn write_connect(out: &mut Vec<u8>, c: &Connect, clock: &mut TimeCache) {
    start_line(out, clock, c.time, c.conn);
    out.extend_from_slice(b" fd=");
    push_u64(out, c.fd.into());
    out.extend_from_slice(b" slot=");
    push_u64(out, c.fd.into());
    out.extend_from_slice(if c.ldaps {
        b" SSL connection from "
    } else {
        b" connection from "
    });
    push_ip(out, c.peer);
    out.extend_from_slice(b" to ");
    push_ip(out, c.local);
    out.push(b'\n');
}

fn write_tls(out: &mut Vec<u8>, t: &Tls<'_>, clock: &mut TimeCache) {
    start_line(out, clock, t.time, t.conn);
    out.push(b' ');
    push_field(out, t.version.as_bytes(), Field::Name);
    out.push(b' ');
    push_u64(out, t.keysize.into());
    out.extend_from_slice(b"-bit ");
    push_field(out, cipher_name(t.cipher).as_bytes(), Field::Name);
    out.push(b'\n');
}

fn write_refused(out: &mut Vec<u8>, r: &Refused<'_>, clock: &mut TimeCache) {
    start_line(out, clock, r.time, r.conn);
    out.extend_from_slice(b" refused from ");
    push_ip(out, r.peer);
    out.extend_from_slice(b" to ");
    push_ip(out, r.local);
    out.extend_from_slice(b" - ");
    push_field(out, r.reason.as_bytes(), Field::Text);
    out.push(b'\n');
}

fn write_close(out: &mut Vec<u8>, c: &Close, clock: &mut TimeCache) {
    start_op_line(out, clock, c.time, c.conn, c.op);
    out.extend_from_slice(b" fd=");
    push_u64(out, c.fd.into());
    out.extend_from_slice(b" closed - ");
    out.extend_from_slice(c.reason.code().as_bytes());
    out.push(b'\n');
}

/// The request line (or the Abandon's), then the RESULT line; says how many were written.
fn write_op(out: &mut Vec<u8>, op: &Op<'_>, level: Level, clock: &mut TimeCache) -> u64 {
    let request = request::decode(op);
    let abandon = request.as_ref().and_then(|msg| match msg.op {
        ProtocolOp::AbandonRequest(a) => Some((msg, a)),
        _ => None,
    });
    let mut lines = 0;
    if let Some((msg, a)) = abandon {
        write_abandon(out, op, msg, &a, level, clock);
        lines += 1;
    } else if level.writes_requests() && write_request(out, op, request.as_ref(), level, clock) {
        lines += 1;
    }
    if op.response_tag != 0 {
        write_result(out, op, level, clock);
        lines += 1;
    }
    lines
}

/// The request line, when there is one to write (says whether there was).
fn write_request(
    out: &mut Vec<u8>,
    op: &Op<'_>,
    request: Option<&LdapMessage<'_>>,
    level: Level,
    clock: &mut TimeCache,
) -> bool {
    let Some(msg) = request else {
        if op.undecodable || !op.request.is_empty() {
            start_op_line(out, clock, op.received, op.conn, op.op);
            push_undecodable(out, op.request_tag);
            out.push(b'\n');
            return true;
        }
        return false;
    };
    start_op_line(out, clock, op.received, op.conn, op.op);
    match &msg.op {
        ProtocolOp::BindRequest(b) => push_bind(out, msg, b, level),
        ProtocolOp::UnbindRequest => out.extend_from_slice(b" UNBIND"),
        ProtocolOp::SearchRequest(s) => push_search(out, msg, s, level),
        ProtocolOp::ModifyRequest(m) => push_modify(out, m, level),
        ProtocolOp::AddRequest(a) => push_add(out, a, level),
        ProtocolOp::DelRequest(d) => push_dn(out, b" DEL dn=\"", d.dn),
        ProtocolOp::ModifyDnRequest(m) => push_modify_dn(out, m, level),
        ProtocolOp::CompareRequest(c) => push_compare(out, c),
        ProtocolOp::ExtendedRequest(e) => push_extended(out, e),
        other => push_undecodable(out, other.tag()),
    }
    if !matches!(msg.op, ProtocolOp::BindRequest(_)) {
        push_proxied_authz(out, msg);
    }
    let placed_own_controls = matches!(msg.op, ProtocolOp::SearchRequest(_) | ProtocolOp::BindRequest(_));
    if level.is_full() && !placed_own_controls {
        push_request_controls(out, msg);
    }
    out.push(b'\n');
    true
}

fn push_undecodable(out: &mut Vec<u8>, tag: u8) {
    out.extend_from_slice(b" UNDECODABLE tag=");
    push_u64(out, tag.into());
}

/// At `Full` the controls come after `version=` and before `mech=`: logconv takes the
/// mechanism to be the rest of the line.
fn push_bind(out: &mut Vec<u8>, msg: &LdapMessage<'_>, b: &BindRequest<'_>, level: Level) {
    push_dn(out, b" BIND dn=\"", b.name);
    out.extend_from_slice(b" method=");
    match b.authentication {
        Authentication::Simple(_) => out.extend_from_slice(b"128"),
        Authentication::Sasl { .. } => out.extend_from_slice(b"sasl"),
        Authentication::Other { tag, .. } => push_u64(out, tag.into()),
    }
    out.extend_from_slice(b" version=");
    push_u64(out, b.version.into());
    if level.is_full() {
        push_request_controls(out, msg);
    }
    if let Authentication::Sasl { mechanism, .. } = b.authentication {
        out.extend_from_slice(b" mech=");
        push_field(out, mechanism, Field::Name);
    }
}

/// At `Full` the extra arguments and the controls come before `attrs=`: logconv reads the
/// filter as everything up to the last `" ` of the line, so nothing may follow a quoted
/// attribute list (389 itself breaks this only with `authzid=`, as here).
fn push_search(out: &mut Vec<u8>, msg: &LdapMessage<'_>, s: &SearchRequest<'_>, level: Level) {
    push_dn(out, b" SRCH base=\"", s.base);
    out.extend_from_slice(match s.scope {
        SearchScope::Base => b" scope=0 filter=\"",
        SearchScope::OneLevel => b" scope=1 filter=\"",
        SearchScope::Subtree => b" scope=2 filter=\"",
        SearchScope::Subordinate => b" scope=3 filter=\"",
    });
    push_filter(
        out,
        &s.filter,
        |text| printable_except(text, b"\""),
        |out, text| push_field(out, text, Field::Quoted),
    );
    out.push(b'"');
    if level.is_full() {
        out.extend_from_slice(b" deref=");
        push_u64(out, s.deref_aliases as u64);
        out.extend_from_slice(b" sizelimit=");
        push_u64(out, s.size_limit.into());
        out.extend_from_slice(b" timelimit=");
        push_u64(out, s.time_limit.into());
        out.extend_from_slice(b" attrsonly=");
        push_u64(out, u64::from(s.types_only));
        push_request_controls(out, msg);
    }
    out.extend_from_slice(b" attrs=");
    if s.attributes.is_empty() {
        out.extend_from_slice(b"ALL");
    } else {
        push_names(out, s.attributes.iter());
    }
}

fn push_modify(out: &mut Vec<u8>, m: &ModifyRequest<'_>, level: Level) {
    push_dn(out, b" MOD dn=\"", m.object);
    if level.is_full() {
        out.extend_from_slice(b" mods=\"");
        for (i, change) in m.changes.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            out.extend_from_slice(modify_kind(change.operation).as_bytes());
            out.push(b':');
            push_field(out, change.modification.description, Field::Name);
        }
        out.push(b'"');
    }
}

/// The name of a change's kind, as LDIF spells it.
pub(super) fn modify_kind(kind: ModifyOperation) -> &'static str {
    match kind {
        ModifyOperation::Add => "add",
        ModifyOperation::Delete => "delete",
        ModifyOperation::Replace => "replace",
        ModifyOperation::Increment => "increment",
    }
}

fn push_add(out: &mut Vec<u8>, a: &AddRequest<'_>, level: Level) {
    push_dn(out, b" ADD dn=\"", a.entry);
    if level.is_full() {
        out.extend_from_slice(b" attrs=");
        push_names(out, a.attributes.iter().map(|attr| attr.description));
    }
}

fn push_modify_dn(out: &mut Vec<u8>, m: &ModifyDnRequest<'_>, level: Level) {
    push_dn(out, b" MODRDN dn=\"", m.entry);
    push_dn(out, b" newrdn=\"", m.new_rdn);
    push_dn(out, b" newsuperior=\"", m.new_superior.unwrap_or(b"(null)"));
    if level.is_full() {
        out.extend_from_slice(b" deleteoldrdn=");
        push_u64(out, u64::from(m.delete_old_rdn));
    }
}

fn push_compare(out: &mut Vec<u8>, c: &CompareRequest<'_>) {
    push_dn(out, b" CMP dn=\"", c.entry);
    out.extend_from_slice(b" attr=\"");
    push_field(out, c.ava.description, Field::Name);
    out.push(b'"');
}

fn push_extended(out: &mut Vec<u8>, e: &ExtendedRequest<'_>) {
    push_dn(out, b" EXT oid=\"", e.name);
    if let Some(name) = extended_name(e.name) {
        out.extend_from_slice(b" name=\"");
        out.extend_from_slice(name.as_bytes());
        out.push(b'"');
    }
}

/// The name 389 logs for an extended operation (its plugin's), or Larch's for one 389
/// does not have.
pub(super) fn extended_name(oid: &[u8]) -> Option<&'static str> {
    Some(match oid {
        o if o == exop::START_TLS.as_bytes() => "start_tls_plugin",
        o if o == exop::PASSWORD_MODIFY.as_bytes() => "passwd_modify_plugin",
        o if o == exop::WHO_AM_I.as_bytes() => "whoami-plugin",
        o if o == exop::CANCEL.as_bytes() => "cancel",
        _ => return None,
    })
}

fn write_abandon(
    out: &mut Vec<u8>,
    op: &Op<'_>,
    msg: &LdapMessage<'_>,
    a: &AbandonRequest,
    level: Level,
    clock: &mut TimeCache,
) {
    start_op_line(out, clock, op.received, op.conn, op.op);
    out.extend_from_slice(b" ABANDON targetop=");
    if op.target_op < 0 {
        out.extend_from_slice(b"NOTFOUND");
    } else {
        push_i64(out, op.target_op);
    }
    out.extend_from_slice(b" msgid=");
    push_i64(out, a.message_id.into());
    if level.is_full() {
        push_request_controls(out, msg);
    }
    out.push(b'\n');
}

/// `authzid="..."` when the request carries the Proxied Authorization control: the identity
/// it asks for, without the `dn:` of a DN form.
fn push_proxied_authz(out: &mut Vec<u8>, msg: &LdapMessage<'_>) {
    if let Some(id) = proxied_authz_id(msg) {
        push_dn(out, b" authzid=\"", id);
    }
}

/// The identity the Proxied Authorization control of `msg` asks for, `dn:` removed.
pub(super) fn proxied_authz_id<'a>(msg: &LdapMessage<'a>) -> Option<&'a [u8]> {
    let control = msg
        .controls()
        .iter()
        .find(|c| c.oid == oid::PROXIED_AUTHZ.as_bytes())?;
    let id = ProxiedAuthz::from_control(&control).ok()?.authz_id;
    Some(id.strip_prefix(b"dn:").unwrap_or(id))
}

fn push_request_controls(out: &mut Vec<u8>, msg: &LdapMessage<'_>) {
    let controls = msg.controls();
    if controls.is_empty() {
        return;
    }
    out.extend_from_slice(b" ctrls=");
    for (i, Control { oid, critical, .. }) in controls.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_field(out, oid, Field::Name);
        if critical {
            out.extend_from_slice(b":critical");
        }
    }
}

fn write_result(out: &mut Vec<u8>, op: &Op<'_>, level: Level, clock: &mut TimeCache) {
    let bind = op.response_tag == op_tag::BIND_RESPONSE;
    // Everything up to `etime` in one copy.
    let mut f = Fixed::<{ OP_HEAD + 12 + U64 + 5 + U64 + 10 + U64 + 22 + 3 * DURATION }>::new();
    op_head(&mut f, clock, op.finished, op.conn, op.op);
    f.text(b" RESULT err=")
        .u64(op.result.into())
        .text(b" tag=")
        .u64(op.response_tag.into())
        .text(b" nentries=")
        .u64(op.entries.into())
        .text(b" wtime=")
        .duration(op.wait_ns)
        .text(b" optime=")
        .duration(op.work_ns)
        .text(b" etime=")
        .duration(op.wait_ns.saturating_add(op.work_ns));
    f.append_to(out);
    push_notes(out, op.notes);
    if level.is_full() {
        if !bind {
            push_dn(out, b" authzdn=\"", op.authz_dn.as_bytes());
        }
        if !op.matched.is_empty() {
            push_dn(out, b" matched=\"", op.matched.as_bytes());
        }
        push_response_controls(out, op.response_controls);
    }
    if bind && op.result == 0 {
        push_dn(out, b" dn=\"", op.authz_dn.as_bytes());
    }
    if bind && op.result == SASL_BIND_IN_PROGRESS {
        out.extend_from_slice(b", SASL bind in progress");
    }
    if level.is_full() && !op.message.is_empty() {
        out.extend_from_slice(b" - ");
        push_field(out, op.message.as_bytes(), Field::Text);
    }
    out.push(b'\n');
}

/// `saslBindInProgress`: a step of a SASL exchange, not an error (389 says so in the line).
pub(super) const SASL_BIND_IN_PROGRESS: u32 = 14;

/// 389's operation notes, in the order it writes them, with their descriptions.
pub(super) const NOTES: [(u8, &str); 7] = [
    (b'U', "Partially Unindexed Filter"),
    (b'P', "Paged Search"),
    (b'A', "Fully Unindexed Filter"),
    (b'F', "Filter Element Missing From Schema"),
    (b'M', "Multi-factor Authentication"),
    (b'N', "Not synchronous operation"),
    (b'B', "Blocked because too many operations"),
];

/// The notes of `notes` that 389 knows, in its order.
pub(super) fn known_notes(notes: &str) -> impl Iterator<Item = (u8, &'static str)> + '_ {
    NOTES
        .into_iter()
        .filter(|(letter, _)| notes.as_bytes().contains(letter))
}

/// ` notes=U,P details="Partially Unindexed Filter,Paged Search"`; letters 389 does not
/// know are ignored.
fn push_notes(out: &mut Vec<u8>, notes: &str) {
    if known_notes(notes).next().is_none() {
        return;
    }
    for (i, (letter, _)) in known_notes(notes).enumerate() {
        out.extend_from_slice(if i == 0 { b" notes=" } else { b"," });
        out.push(letter);
    }
    for (i, (_, details)) in known_notes(notes).enumerate() {
        out.extend_from_slice(if i == 0 { b" details=\"" } else { b"," });
        out.extend_from_slice(details.as_bytes());
    }
    out.push(b'"');
}

fn push_response_controls(out: &mut Vec<u8>, oids: &str) {
    for (i, oid) in oids.split(' ').filter(|o| !o.is_empty()).enumerate() {
        out.extend_from_slice(if i == 0 { b" ctrls=" } else { b"," });
        push_field(out, oid.as_bytes(), Field::Name);
    }
}

/// The symmetric cipher of a suite as NSS names it (389 prints NSS's name): `AES-GCM`,
/// `CHACHA20POLY1305`, `AES`; a suite it cannot place is named whole.
pub(super) fn cipher_name(suite: &str) -> &str {
    if suite.contains("AES") && suite.contains("GCM") {
        "AES-GCM"
    } else if suite.contains("CHACHA20") {
        "CHACHA20POLY1305"
    } else if suite.contains("AES") && suite.contains("CBC") {
        "AES"
    } else {
        suite
    }
}

/// `[time] conn=N`
fn start_line(out: &mut Vec<u8>, clock: &mut TimeCache, time: WallNanos, conn: u64) {
    let mut f = Fixed::<{ TEXT_LEN + 6 + U64 }>::new();
    f.text(&clock.text(time)).text(b" conn=").u64(conn);
    f.append_to(out);
}

/// The widest `[time] conn=N op=M`.
const OP_HEAD: usize = TEXT_LEN + 6 + U64 + 4 + I64;

/// `[time] conn=N op=M` into `f`.
#[inline]
fn op_head<const N: usize>(f: &mut Fixed<N>, clock: &mut TimeCache, time: WallNanos, conn: u64, op: i64) {
    f.text(&clock.text(time))
        .text(b" conn=")
        .u64(conn)
        .text(b" op=")
        .i64(op);
}

/// `[time] conn=N op=M`
fn start_op_line(out: &mut Vec<u8>, clock: &mut TimeCache, time: WallNanos, conn: u64, op: i64) {
    let mut f = Fixed::<OP_HEAD>::new();
    op_head(&mut f, clock, time, conn, op);
    f.append_to(out);
}

/// `prefix` (which opens a quote), the DN, and the closing quote.
fn push_dn(out: &mut Vec<u8>, prefix: &[u8], dn: &[u8]) {
    out.extend_from_slice(prefix);
    push_field(out, dn, Field::Quoted);
    out.push(b'"');
}

/// `"a b c"`: names separated by spaces, in quotes, as 389 writes an attribute list.
fn push_names<'a>(out: &mut Vec<u8>, names: impl Iterator<Item = &'a [u8]>) {
    out.push(b'"');
    for (i, name) in names.enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        push_field(out, name, Field::Name);
    }
    out.push(b'"');
}

/// An address as 389 writes it: no port, an IPv4-mapped IPv6 address as IPv4,
/// `unknown` when there is none.
pub(super) fn push_ip(out: &mut Vec<u8>, addr: Option<SocketAddr>) {
    let Some(addr) = addr else {
        out.extend_from_slice(b"unknown");
        return;
    };
    let ip = match addr.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    let _ = write!(out, "{ip}");
}

/// What kind of text a field holds, which decides what is escaped in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    /// A DN, filter or OID inside `"..."`: control characters, `"` and octets that are not
    /// UTF-8 are escaped.
    Quoted,
    /// An attribute type, mechanism or control OID, in a list: everything but letters,
    /// digits and `.;_-*+@` is escaped.
    Name,
    /// Free text that runs to the end of the line: control characters and octets that are
    /// not UTF-8 are escaped.
    Text,
}

impl Field {
    fn escapes(self, b: u8) -> bool {
        match self {
            Field::Quoted => b < 0x20 || b == 0x7f || b == b'"',
            Field::Name => {
                !matches!(b, b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b';' | b'_' | b'-' | b'*' | b'+' | b'@')
            }
            Field::Text => b < 0x20 || b == 0x7f,
        }
    }
}

/// Appends `s`, escaping what `field` requires as `\HH`.
pub(super) fn push_field(out: &mut Vec<u8>, s: &[u8], field: Field) {
    // The common case, printable ASCII with nothing to escape, is one copy.
    let plain = match field {
        Field::Quoted => printable_except(s, b"\""),
        Field::Text => printable_except(s, b""),
        Field::Name => s.iter().all(|&b| !field.escapes(b)),
    };
    if plain {
        out.extend_from_slice(s);
        return;
    }
    for chunk in s.utf8_chunks() {
        let valid = chunk.valid().as_bytes();
        let mut from = 0;
        for (i, &b) in valid.iter().enumerate() {
            if (b.is_ascii() && field.escapes(b)) || (!b.is_ascii() && field == Field::Name) {
                out.extend_from_slice(&valid[from..i]);
                push_hex_pair(out, b);
                from = i + 1;
            }
        }
        out.extend_from_slice(&valid[from..]);
        for &b in chunk.invalid() {
            push_hex_pair(out, b);
        }
    }
}

fn push_hex_pair(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(&[b'\\', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]);
}

/// Appends the RFC 4515 text of `filter` as a field: written once, straight into `out`,
/// and left there when `plain` accepts it whole (the common case); otherwise
/// written again through `escape`, the format's field escaping, without allocating.
pub(super) fn push_filter(
    out: &mut Vec<u8>,
    filter: &Filter<'_>,
    plain: impl Fn(&[u8]) -> bool,
    escape: impl Fn(&mut Vec<u8>, &[u8]),
) {
    let start = out.len();
    filter.write_text(out);
    let end = out.len();
    if plain(&out[start..]) {
        return;
    }
    // Escaped after the text, a stack buffer at a time (no allocation per line), then the
    // text removed from in front of its escaped form.
    let mut chunk = [0u8; 64];
    let mut at = start;
    while at < end {
        let mut n = (end - at).min(chunk.len());
        // The text is UTF-8: a piece never ends inside a character.
        while at + n < end && out[at + n] & 0xc0 == 0x80 {
            n -= 1;
        }
        chunk[..n].copy_from_slice(&out[at..at + n]);
        escape(out, &chunk[..n]);
        at += n;
    }
    out.drain(start..end);
}

#[cfg(test)]
mod tests {
    use larch_proto::controls::Control;
    use larch_proto::{
        AttributeValueAssertion, BindResponse, Change, DelRequest, DerefAliases, LdapResult, OwnedFilter,
        PartialAttribute, ResultCode, SearchScope, SeqOf,
    };

    use super::*;
    use crate::accesslog::event::CloseReason;
    use crate::accesslog::test_events::{op, pdu, T0};

    #[test]
    fn a_filter_to_escape_is_escaped_as_its_whole_text_would_be() {
        // Longer than the stack piece, with two-octet characters across its edges.
        let long = format!("(cn={}\"x\u{1}{}é)", "é".repeat(40), "ü".repeat(30));
        let mut b = larch_proto::FilterBuilder::new();
        b.equality(b"cn", long.as_bytes());
        let f = b.finish().unwrap();
        let mut text = Vec::new();
        f.as_filter().write_text(&mut text);
        let mut expected = b"prefix ".to_vec();
        push_field(&mut expected, &text, Field::Quoted);
        let mut out = b"prefix ".to_vec();
        push_filter(
            &mut out,
            &f.as_filter(),
            |text| printable_except(text, b"\""),
            |out, text| push_field(out, text, Field::Quoted),
        );
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&expected));
        assert!(out.windows(3).any(|w| w == b"\\22"));
    }

    const AT: &str = "[22/Nov/2026:10:00:00.123456789 +0000]";
    /// T0 + 261 234 ns, when the operations below finish.
    const END: &str = "[22/Nov/2026:10:00:00.123718023 +0000]";
    const TIMES: &str = "wtime=0.000051234 optime=0.000210000 etime=0.000261234";

    fn text(event: &Event<'_>, level: Level) -> String {
        let mut out = Vec::new();
        let lines = write(&mut out, event, level, &mut TimeCache::new());
        assert_eq!(
            lines,
            out.iter().filter(|&&b| b == b'\n').count() as u64,
            "lines said"
        );
        String::from_utf8(out).expect("the log is UTF-8")
    }

    /// The lines of `o` at each level: Results, Default, Full.
    fn levels(o: &Op<'_>) -> [String; 3] {
        let e = Event::Op(o.clone());
        [
            text(&e, Level::Results),
            text(&e, Level::Default),
            text(&e, Level::Full),
        ]
    }

    fn lines(ls: &[&str]) -> String {
        ls.iter().map(|l| format!("{l}\n")).collect()
    }

    fn simple_bind<'a>(dn: &'a [u8], password: &'a [u8]) -> ProtocolOp<'a> {
        ProtocolOp::BindRequest(BindRequest {
            version: 3,
            name: dn,
            authentication: Authentication::Simple(password),
        })
    }

    fn search_pdu(base: &[u8], filter: &OwnedFilter, attrs: &[&[u8]]) -> Vec<u8> {
        let req = SearchRequest {
            base,
            scope: SearchScope::Subtree,
            deref_aliases: DerefAliases::Never,
            size_limit: 0,
            time_limit: 0,
            types_only: false,
            filter: filter.as_filter(),
            attributes: SeqOf::from_items(attrs),
        };
        pdu(ProtocolOp::SearchRequest(req), &[])
    }

    #[test]
    fn connections_as_389_writes_them() {
        let connect = |peer: Option<&str>, ldaps| Connect {
            conn: 12,
            time: T0,
            peer: peer.map(|p| p.parse().unwrap()),
            local: Some("127.0.0.1:389".parse().unwrap()),
            fd: 64,
            ldaps,
        };
        for level in [Level::Results, Level::Default, Level::Full] {
            assert_eq!(
                text(&Event::Connect(connect(Some("127.0.0.1:40000"), false)), level),
                format!("{AT} conn=12 fd=64 slot=64 connection from 127.0.0.1 to 127.0.0.1\n")
            );
        }
        assert_eq!(
            text(
                &Event::Connect(connect(Some("[::1]:40000"), true)),
                Level::Default
            ),
            format!("{AT} conn=12 fd=64 slot=64 SSL connection from ::1 to 127.0.0.1\n")
        );
        assert_eq!(
            text(
                &Event::Connect(connect(Some("[::ffff:10.0.0.7]:40000"), false)),
                Level::Default
            ),
            format!("{AT} conn=12 fd=64 slot=64 connection from 10.0.0.7 to 127.0.0.1\n")
        );
        assert_eq!(
            text(&Event::Connect(connect(None, false)), Level::Default),
            format!("{AT} conn=12 fd=64 slot=64 connection from unknown to 127.0.0.1\n")
        );
    }

    #[test]
    fn tls_refusals_and_closures() {
        let tls = |cipher| {
            Event::Tls(Tls {
                conn: 12,
                time: T0,
                version: "TLS1.3",
                cipher,
                keysize: 128,
            })
        };
        assert_eq!(
            text(&tls("TLS13_AES_128_GCM_SHA256"), Level::Results),
            format!("{AT} conn=12 TLS1.3 128-bit AES-GCM\n")
        );
        assert_eq!(
            text(&tls("TLS13_CHACHA20_POLY1305_SHA256"), Level::Full),
            format!("{AT} conn=12 TLS1.3 128-bit CHACHA20POLY1305\n")
        );
        assert_eq!(
            text(&tls("TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"), Level::Full),
            format!("{AT} conn=12 TLS1.3 128-bit AES\n")
        );
        assert_eq!(
            text(&tls("ODD SUITE"), Level::Full),
            format!("{AT} conn=12 TLS1.3 128-bit ODD\\20SUITE\n")
        );

        let refused = Event::Refused(Refused {
            conn: 13,
            time: T0,
            peer: Some("192.0.2.1:5000".parse().unwrap()),
            local: None,
            reason: "too many connections\nfrom this address",
        });
        assert_eq!(
            text(&refused, Level::Results),
            format!("{AT} conn=13 refused from 192.0.2.1 to unknown - too many connections\\0afrom this address\n")
        );

        let codes = [
            (CloseReason::Unbind, "U1"),
            (CloseReason::ClientClosed, "B1"),
            (CloseReason::BadPdu, "B3"),
            (CloseReason::Idle, "T1"),
            (CloseReason::WriteTimeout, "T2"),
            (CloseReason::Shutdown, "S1"),
            (CloseReason::ReadError, "A1"),
            (CloseReason::TlsFailed, "P2"),
            (CloseReason::PduTooLarge, "B2"),
        ];
        for (reason, code) in codes {
            for (last_op, op_text) in [(-1, "-1"), (7, "7")] {
                let close = Event::Close(Close {
                    conn: 12,
                    time: T0,
                    op: last_op,
                    fd: 64,
                    reason,
                });
                assert_eq!(
                    text(&close, Level::Results),
                    format!("{AT} conn=12 op={op_text} fd=64 closed - {code}\n")
                );
            }
        }
    }

    #[test]
    fn simple_binds_ok_and_failed() {
        let req = pdu(simple_bind(b"uid=a,dc=x", b"secret"), &[]);
        let mut ok = op(&req, op_tag::BIND_RESPONSE);
        ok.authz_dn = "uid=a,dc=x";
        let result = format!("{END} conn=12 op=1 RESULT err=0 tag=97 nentries=0 {TIMES} dn=\"uid=a,dc=x\"");
        let request = format!("{AT} conn=12 op=1 BIND dn=\"uid=a,dc=x\" method=128 version=3");
        assert_eq!(
            levels(&ok),
            [
                lines(&[&result]),
                lines(&[&request, &result]),
                lines(&[&request, &result])
            ]
        );

        let mut failed = op(&req, op_tag::BIND_RESPONSE);
        failed.result = 49;
        failed.message = "invalid credentials";
        let result = format!("{END} conn=12 op=1 RESULT err=49 tag=97 nentries=0 {TIMES}");
        assert_eq!(
            levels(&failed),
            [
                lines(&[&result]),
                lines(&[&request, &result]),
                lines(&[&request, &format!("{result} - invalid credentials")]),
            ]
        );

        let anonymous = pdu(simple_bind(b"", b""), &[]);
        assert_eq!(
            levels(&op(&anonymous, op_tag::BIND_RESPONSE))[1],
            lines(&[
                &format!("{AT} conn=12 op=1 BIND dn=\"\" method=128 version=3"),
                &format!("{END} conn=12 op=1 RESULT err=0 tag=97 nentries=0 {TIMES} dn=\"\""),
            ])
        );
    }

    #[test]
    fn sasl_binds_name_their_mechanism() {
        let sasl = |mechanism: &'static [u8]| {
            pdu(
                ProtocolOp::BindRequest(BindRequest {
                    version: 3,
                    name: b"",
                    authentication: Authentication::Sasl {
                        mechanism,
                        credentials: Some(b"\0uid=a\0secret"),
                    },
                }),
                &[],
            )
        };
        let req = sasl(b"PLAIN");
        let mut ok = op(&req, op_tag::BIND_RESPONSE);
        ok.authz_dn = "uid=a,dc=x";
        assert_eq!(
            levels(&ok)[1],
            lines(&[
                &format!("{AT} conn=12 op=1 BIND dn=\"\" method=sasl version=3 mech=PLAIN"),
                &format!("{END} conn=12 op=1 RESULT err=0 tag=97 nentries=0 {TIMES} dn=\"uid=a,dc=x\""),
            ])
        );
        let req = sasl(b"EXTERNAL");
        let mut step = op(&req, op_tag::BIND_RESPONSE);
        step.result = SASL_BIND_IN_PROGRESS;
        assert_eq!(
            levels(&step)[2],
            lines(&[
                &format!("{AT} conn=12 op=1 BIND dn=\"\" method=sasl version=3 mech=EXTERNAL"),
                &format!("{END} conn=12 op=1 RESULT err=14 tag=97 nentries=0 {TIMES}, SASL bind in progress"),
            ])
        );
        let policy = Control {
            oid: b"1.3.6.1.4.1.42.2.27.8.5.1",
            critical: false,
            value: None,
        };
        for (authentication, method) in [
            (
                Authentication::Sasl {
                    mechanism: b"PLAIN",
                    credentials: None,
                },
                "method=sasl version=3 ctrls=1.3.6.1.4.1.42.2.27.8.5.1 mech=PLAIN",
            ),
            (
                Authentication::Simple(b"pw"),
                "method=128 version=3 ctrls=1.3.6.1.4.1.42.2.27.8.5.1",
            ),
        ] {
            let bind = BindRequest {
                version: 3,
                name: b"",
                authentication,
            };
            let req = pdu(ProtocolOp::BindRequest(bind), &[policy]);
            assert_eq!(
                levels(&op(&req, 0))[2],
                lines(&[&format!("{AT} conn=12 op=1 BIND dn=\"\" {method}")])
            );
        }
        let other = pdu(
            ProtocolOp::BindRequest(BindRequest {
                version: 2,
                name: b"cn=x",
                authentication: Authentication::Other {
                    tag: 0x81,
                    contents: b"",
                },
            }),
            &[],
        );
        assert_eq!(
            levels(&op(&other, 0))[1],
            lines(&[&format!(
                "{AT} conn=12 op=1 BIND dn=\"cn=x\" method=129 version=2"
            )])
        );
    }

    #[test]
    fn unbind_has_a_request_line_only() {
        let req = pdu(ProtocolOp::UnbindRequest, &[]);
        let line = format!("{AT} conn=12 op=1 UNBIND");
        assert_eq!(
            levels(&op(&req, 0)),
            [String::new(), lines(&[&line]), lines(&[&line])]
        );
    }

    #[test]
    fn searches_with_attribute_lists_notes_and_every_argument() {
        let filter = OwnedFilter::parse("(&(objectClass=person)(uid=a*))").unwrap();
        let req = search_pdu(b"dc=x", &filter, &[]);
        let mut o = op(&req, op_tag::SEARCH_RESULT_DONE);
        o.entries = 3;
        o.notes = "U";
        let request = format!(
            "{AT} conn=12 op=1 SRCH base=\"dc=x\" scope=2 filter=\"(&(objectClass=person)(uid=a*))\""
        );
        let result = format!(
            "{END} conn=12 op=1 RESULT err=0 tag=101 nentries=3 {TIMES} notes=U details=\"Partially Unindexed Filter\""
        );
        assert_eq!(
            levels(&o),
            [
                lines(&[&result]),
                lines(&[&format!("{request} attrs=ALL"), &result]),
                lines(&[
                    &format!("{request} deref=0 sizelimit=0 timelimit=0 attrsonly=0 attrs=ALL"),
                    &format!("{result} authzdn=\"\""),
                ]),
            ]
        );

        let filter = OwnedFilter::parse("(uid=*)").unwrap();
        let attrs: [&[u8]; 3] = [b"cn", b"sn", b"+"];
        let req = SearchRequest {
            base: b"ou=People,dc=x",
            scope: SearchScope::OneLevel,
            deref_aliases: DerefAliases::Always,
            size_limit: 10,
            time_limit: 5,
            types_only: true,
            filter: filter.as_filter(),
            attributes: SeqOf::from_items(&attrs),
        };
        let paged = Control {
            oid: oid::PAGED_RESULTS.as_bytes(),
            critical: true,
            value: Some(&[0x30, 0x05, 0x02, 0x01, 0x0a, 0x04, 0x00]),
        };
        let manage = Control {
            oid: oid::MANAGE_DSA_IT.as_bytes(),
            critical: false,
            value: None,
        };
        let req = pdu(ProtocolOp::SearchRequest(req), &[paged, manage]);
        let mut o = op(&req, op_tag::SEARCH_RESULT_DONE);
        o.entries = 10;
        o.notes = "PAU";
        o.authz_dn = "uid=a,dc=x";
        o.response_controls = "1.2.840.113556.1.4.319";
        let request = format!("{AT} conn=12 op=1 SRCH base=\"ou=People,dc=x\" scope=1 filter=\"(uid=*)\"");
        let result = format!(
            "{END} conn=12 op=1 RESULT err=0 tag=101 nentries=10 {TIMES} notes=U,P,A details=\"Partially Unindexed Filter,Paged Search,Fully Unindexed Filter\""
        );
        assert_eq!(
            levels(&o),
            [
                lines(&[&result]),
                lines(&[&format!("{request} attrs=\"cn sn +\""), &result]),
                lines(&[
                    &format!(
                        "{request} deref=3 sizelimit=10 timelimit=5 attrsonly=1 ctrls=1.2.840.113556.1.4.319:critical,2.16.840.1.113730.3.4.2 attrs=\"cn sn +\""
                    ),
                    &format!("{result} authzdn=\"uid=a,dc=x\" ctrls=1.2.840.113556.1.4.319"),
                ]),
            ]
        );
    }

    #[test]
    fn writes_name_their_entry_and_full_adds_types_and_changes() {
        let oc: [&[u8]; 2] = [b"top", b"person"];
        let cn: [&[u8]; 1] = [b"a"];
        let attrs = [
            PartialAttribute {
                description: b"objectClass",
                values: SeqOf::from_items(&oc),
            },
            PartialAttribute {
                description: b"cn",
                values: SeqOf::from_items(&cn),
            },
        ];
        let add = pdu(
            ProtocolOp::AddRequest(AddRequest {
                entry: b"cn=a,dc=x",
                attributes: SeqOf::from_items(&attrs),
            }),
            &[],
        );
        let mut o = op(&add, op_tag::ADD_RESPONSE);
        o.authz_dn = "cn=admin";
        let request = format!("{AT} conn=12 op=1 ADD dn=\"cn=a,dc=x\"");
        let result = format!("{END} conn=12 op=1 RESULT err=0 tag=105 nentries=0 {TIMES}");
        assert_eq!(
            levels(&o),
            [
                lines(&[&result]),
                lines(&[&request, &result]),
                lines(&[
                    &format!("{request} attrs=\"objectClass cn\""),
                    &format!("{result} authzdn=\"cn=admin\""),
                ]),
            ]
        );

        let mail: [&[u8]; 1] = [b"a@x"];
        let changes = [
            Change {
                operation: ModifyOperation::Replace,
                modification: PartialAttribute {
                    description: b"mail",
                    values: SeqOf::from_items(&mail),
                },
            },
            Change {
                operation: ModifyOperation::Add,
                modification: PartialAttribute {
                    description: b"description",
                    values: SeqOf::from_items(&mail),
                },
            },
            Change {
                operation: ModifyOperation::Delete,
                modification: PartialAttribute {
                    description: b"seeAlso",
                    values: SeqOf::default(),
                },
            },
            Change {
                operation: ModifyOperation::Increment,
                modification: PartialAttribute {
                    description: b"uidNumber",
                    values: SeqOf::from_items(&mail),
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
        let request = format!("{AT} conn=12 op=1 MOD dn=\"cn=a,dc=x\"");
        let result = format!("{END} conn=12 op=1 RESULT err=32 tag=103 nentries=0 {TIMES}");
        assert_eq!(
            levels(&o),
            [
                lines(&[&result]),
                lines(&[&request, &result]),
                lines(&[
                    &format!(
                        "{request} mods=\"replace:mail add:description delete:seeAlso increment:uidNumber\""
                    ),
                    &format!("{result} authzdn=\"\" matched=\"dc=x\" - no such entry"),
                ]),
            ]
        );

        let delete = pdu(ProtocolOp::DelRequest(DelRequest { dn: b"cn=a,dc=x" }), &[]);
        let o = op(&delete, op_tag::DEL_RESPONSE);
        let request = format!("{AT} conn=12 op=1 DEL dn=\"cn=a,dc=x\"");
        let result = format!("{END} conn=12 op=1 RESULT err=0 tag=107 nentries=0 {TIMES}");
        assert_eq!(
            levels(&o),
            [
                lines(&[&result]),
                lines(&[&request, &result]),
                lines(&[&request, &format!("{result} authzdn=\"\"")]),
            ]
        );
    }

    #[test]
    fn modrdn_compare_and_extended_operations() {
        let moved = pdu(
            ProtocolOp::ModifyDnRequest(ModifyDnRequest {
                entry: b"cn=a,dc=x",
                new_rdn: b"cn=b",
                delete_old_rdn: true,
                new_superior: Some(b"ou=y,dc=x"),
            }),
            &[],
        );
        let request =
            format!("{AT} conn=12 op=1 MODRDN dn=\"cn=a,dc=x\" newrdn=\"cn=b\" newsuperior=\"ou=y,dc=x\"");
        let result = format!("{END} conn=12 op=1 RESULT err=0 tag=109 nentries=0 {TIMES}");
        assert_eq!(
            levels(&op(&moved, op_tag::MODIFY_DN_RESPONSE)),
            [
                lines(&[&result]),
                lines(&[&request, &result]),
                lines(&[
                    &format!("{request} deleteoldrdn=1"),
                    &format!("{result} authzdn=\"\"")
                ]),
            ]
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
            levels(&op(&renamed, 0))[2],
            lines(&[&format!(
                "{AT} conn=12 op=1 MODRDN dn=\"cn=a,dc=x\" newrdn=\"cn=b\" newsuperior=\"(null)\" deleteoldrdn=0"
            )])
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
        let mut o = op(&compare, op_tag::COMPARE_RESPONSE);
        o.result = 6;
        let request = format!("{AT} conn=12 op=1 CMP dn=\"cn=a,dc=x\" attr=\"userPassword\"");
        let result = format!("{END} conn=12 op=1 RESULT err=6 tag=111 nentries=0 {TIMES}");
        let all = levels(&o);
        assert_eq!(all[1], lines(&[&request, &result]));
        assert!(!all[2].contains("never logged"));

        for (oid, name) in [
            (exop::START_TLS, Some("start_tls_plugin")),
            (exop::WHO_AM_I, Some("whoami-plugin")),
            (exop::PASSWORD_MODIFY, Some("passwd_modify_plugin")),
            (exop::CANCEL, Some("cancel")),
            ("1.2.3.4", None),
        ] {
            let ext = pdu(
                ProtocolOp::ExtendedRequest(ExtendedRequest {
                    name: oid.as_bytes(),
                    value: Some(b"secret value"),
                }),
                &[],
            );
            let name = name.map_or(String::new(), |n| format!(" name=\"{n}\""));
            let request = format!("{AT} conn=12 op=1 EXT oid=\"{oid}\"{name}");
            let result = format!("{END} conn=12 op=1 RESULT err=0 tag=120 nentries=0 {TIMES}");
            assert_eq!(
                levels(&op(&ext, op_tag::EXTENDED_RESPONSE)),
                [
                    lines(&[&result]),
                    lines(&[&request, &result]),
                    lines(&[&request, &format!("{result} authzdn=\"\"")]),
                ]
            );
        }
    }

    #[test]
    fn abandon_is_one_line_at_every_level() {
        let req = pdu(ProtocolOp::AbandonRequest(AbandonRequest { message_id: 5 }), &[]);
        let mut found = op(&req, 0);
        found.target_op = 4;
        let line = lines(&[&format!("{AT} conn=12 op=1 ABANDON targetop=4 msgid=5")]);
        assert_eq!(levels(&found), [line.clone(), line.clone(), line]);
        let missing = op(&req, 0);
        let line = lines(&[&format!("{AT} conn=12 op=1 ABANDON targetop=NOTFOUND msgid=5")]);
        assert_eq!(levels(&missing), [line.clone(), line.clone(), line]);
        let with_control = pdu(
            ProtocolOp::AbandonRequest(AbandonRequest { message_id: 5 }),
            &[Control {
                oid: b"1.2.3",
                critical: false,
                value: None,
            }],
        );
        assert_eq!(
            levels(&op(&with_control, 0))[2],
            lines(&[&format!(
                "{AT} conn=12 op=1 ABANDON targetop=NOTFOUND msgid=5 ctrls=1.2.3"
            )])
        );
    }

    #[test]
    fn proxied_authorization_shows_as_authzid() {
        let proxy = Control {
            oid: oid::PROXIED_AUTHZ.as_bytes(),
            critical: true,
            value: Some(b"dn:uid=b,dc=x"),
        };
        let delete = pdu(ProtocolOp::DelRequest(DelRequest { dn: b"cn=a,dc=x" }), &[proxy]);
        let mut o = op(&delete, op_tag::DEL_RESPONSE);
        o.authz_dn = "uid=b,dc=x";
        let request = format!("{AT} conn=12 op=1 DEL dn=\"cn=a,dc=x\" authzid=\"uid=b,dc=x\"");
        let result = format!("{END} conn=12 op=1 RESULT err=0 tag=107 nentries=0 {TIMES}");
        assert_eq!(
            levels(&o),
            [
                lines(&[&result]),
                lines(&[&request, &result]),
                lines(&[
                    &format!("{request} ctrls=2.16.840.1.113730.3.4.18:critical"),
                    &format!("{result} authzdn=\"uid=b,dc=x\""),
                ]),
            ]
        );
    }

    #[test]
    fn requests_that_do_not_decode_still_give_their_result() {
        let mut garbage = op(&[0x30, 0x03, 0x02, 0x01], op_tag::SEARCH_RESULT_DONE);
        garbage.request_tag = 0;
        garbage.result = 2;
        garbage.undecodable = true;
        let result = format!("{END} conn=12 op=1 RESULT err=2 tag=101 nentries=0 {TIMES}");
        let request = format!("{AT} conn=12 op=1 UNDECODABLE tag=0");
        assert_eq!(
            levels(&garbage),
            [
                lines(&[&result]),
                lines(&[&request, &result]),
                lines(&[&request, &format!("{result} authzdn=\"\"")]),
            ]
        );

        // A well-formed message that is no request.
        let response = pdu(
            ProtocolOp::BindResponse(BindResponse {
                result: LdapResult::new(ResultCode::SUCCESS, b"", b""),
                server_sasl_creds: None,
            }),
            &[],
        );
        let mut o = op(&response, op_tag::EXTENDED_RESPONSE);
        o.result = 2;
        assert_eq!(
            levels(&o)[1],
            lines(&[
                &format!("{AT} conn=12 op=1 UNDECODABLE tag=97"),
                &format!("{END} conn=12 op=1 RESULT err=2 tag=120 nentries=0 {TIMES}"),
            ])
        );

        // A Notice of Disconnection answers no operation and has no request.
        let mut notice = op(&[], op_tag::EXTENDED_RESPONSE);
        notice.op = -1;
        notice.msgid = 0;
        notice.result = 2;
        let result = lines(&[&format!(
            "{END} conn=12 op=-1 RESULT err=2 tag=120 nentries=0 {TIMES}"
        )]);
        assert_eq!(levels(&notice)[1], result);
    }

    #[test]
    fn quotes_newlines_backslashes_and_other_scripts_stay_on_one_line() {
        let dn = "cn=\"Quoted\" \\2C Ünïcødé\nNext,dc=例え".as_bytes();
        let filter = OwnedFilter::parse("(cn=a\"b\\2a\u{e9}\n)").unwrap();
        let attrs: [&[u8]; 2] = [b"cn x", b"s\"n"];
        let req = SearchRequest {
            base: dn,
            scope: SearchScope::Base,
            deref_aliases: DerefAliases::Never,
            size_limit: 0,
            time_limit: 0,
            types_only: false,
            filter: filter.as_filter(),
            attributes: SeqOf::from_items(&attrs),
        };
        let req = pdu(ProtocolOp::SearchRequest(req), &[]);
        let mut o = op(&req, op_tag::SEARCH_RESULT_DONE);
        o.message = "line one\r\nline \"two\"";
        o.authz_dn = "cn=\"x\"";
        let got = levels(&o)[2].clone();
        assert_eq!(
            got,
            lines(&[
                &format!(
                    "{AT} conn=12 op=1 SRCH base=\"cn=\\22Quoted\\22 \\2C Ünïcødé\\0aNext,dc=例え\" scope=0 \
                     filter=\"(cn=a\\22b\\2aé\\0a)\" deref=0 sizelimit=0 timelimit=0 attrsonly=0 attrs=\"cn\\20x s\\22n\""
                ),
                &format!(
                    "{END} conn=12 op=1 RESULT err=0 tag=101 nentries=0 {TIMES} authzdn=\"cn=\\22x\\22\" \
                     - line one\\0d\\0aline \"two\""
                ),
            ])
        );

        // Octets that are not UTF-8 (a DN on the wire may hold anything).
        let delete = pdu(
            ProtocolOp::DelRequest(DelRequest {
                dn: b"cn=\xff\xfe,dc=x",
            }),
            &[],
        );
        assert_eq!(
            levels(&op(&delete, 0))[1],
            lines(&[&format!("{AT} conn=12 op=1 DEL dn=\"cn=\\ff\\fe,dc=x\"")])
        );
    }

    #[test]
    fn no_input_panics_and_every_line_is_a_whole_line() {
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
                o.notes = "?U\n";
                o.message = "\u{0}\u{7f}";
                for text in levels(&o) {
                    assert!(text.ends_with('\n'));
                    for line in text.lines() {
                        assert!(line.starts_with("[22/Nov/2026:10:00:00."), "{line:?}");
                        assert!(!line.contains('\r') && !line.contains('\0'), "{line:?}");
                    }
                    assert_eq!(text.matches(" RESULT ").count(), 1);
                }
            }
        }
    }
}
