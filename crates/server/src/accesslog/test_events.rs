//! Events the formatters' unit tests share: a request PDU as a client sends it, and an
//! operation on connection 12 that took 51,234 ns waiting and 210,000 ns working from
//! [`T0`].

use larch_proto::controls::Control;
use larch_proto::{LdapMessage, ProtocolOp, SeqOf};

use super::event::{Close, CloseReason, Event, Op, WallNanos};

/// 2026-11-22T10:00:00.123456789Z
pub(crate) const T0: WallNanos = 1_795_341_600_123_456_789;

/// The octets of message 2 carrying `op` and `controls`.
pub(crate) fn pdu(op: ProtocolOp<'_>, controls: &[Control<'_>]) -> Vec<u8> {
    let mut msg = LdapMessage::new(2, op);
    if !controls.is_empty() {
        msg.controls = Some(SeqOf::from_items(controls));
    }
    let mut buf = Vec::new();
    msg.encode(&mut buf);
    buf
}

/// Operation 1 (message 2) of connection 12 answering `request` with `response_tag`,
/// successful, nothing sent but the response.
pub(crate) fn op(request: &[u8], response_tag: u8) -> Op<'_> {
    Op {
        conn: 12,
        op: 1,
        msgid: 2,
        received: T0,
        finished: T0 + 261_234,
        wait_ns: 51_234,
        work_ns: 210_000,
        request_tag: LdapMessage::decode(request).map_or(0, |m| m.op.tag()),
        request,
        decoded: None,
        undecodable: false,
        response_tag,
        result: 0,
        matched: "",
        message: "",
        entries: 0,
        references: 0,
        bytes: 0,
        authz_dn: "",
        target_op: -1,
        response_controls: "",
        notes: "",
    }
}

/// Connection `conn` closed by an Unbind after one operation, at `time`.
pub(crate) fn close(conn: u64, time: u64) -> Event<'static> {
    Event::Close(Close {
        conn,
        time,
        op: 1,
        fd: 9,
        reason: CloseReason::Unbind,
    })
}
