//! Frames and decodes arbitrary octets as a stream of LDAPMessages. Properties checked:
//! no panic, no hang, no read beyond the frame; every decoded message re-encodes to octets
//! that decode to an equal message (and re-encode identically); every filter formats to an
//! RFC 4515 string, and when that string parses, formatting the result gives it back. (BER
//! can carry attribute descriptions no string filter can, so the exact BER round trip is
//! checked by the `filter_string` target, for filters that began as text.) An extended
//! request's or response's value is also read as every typed value the server decodes
//! (whatever its OID, to reach them more often): no panic, and one that decodes encodes to
//! a value that decodes equal.
#![no_main]

use larch_proto::exop::{
    AddNodeRequest, BackupRequest, BackupResponse, BindOutcomeRequest, BindOutcomeResponse, CancelRequest,
    ExtendedValue, PasswordModifyRequest, PasswordModifyResponse, RemoveNodeRequest, SnapshotDone,
    SnapshotPiece,
};
use larch_proto::frame::{frame, Frame};
use larch_proto::{LdapMessage, ProtocolOp};
use libfuzzer_sys::fuzz_target;

/// A small PDU limit so the fuzzer explores the too-large path too.
const MAX_PDU: usize = 64 * 1024;

/// Reads `value` as a `$ty`; one that decodes must survive its own encoding.
macro_rules! typed_value {
    ($ty:ident, $value:expr) => {{
        if let Ok(typed) = $ty::decode_value($value) {
            let mut out = Vec::new();
            let has = typed.encode_value(&mut out);
            let again = $ty::decode_value(has.then_some(&out[..])).expect("a re-encoded value must decode");
            assert_eq!(again, typed);
        }
    }};
}

/// Every typed extended value the server decodes, read from `value`.
fn typed_values(value: Option<&[u8]>) {
    typed_value!(CancelRequest, value);
    typed_value!(PasswordModifyRequest, value);
    typed_value!(PasswordModifyResponse, value);
    typed_value!(BackupRequest, value);
    typed_value!(BackupResponse, value);
    if let Some(Ok(piece)) = value.map(SnapshotPiece::decode) {
        let mut out = Vec::new();
        piece.encode(&mut out);
        assert_eq!(
            SnapshotPiece::decode(&out).expect("a re-encoded piece must decode"),
            piece
        );
    }
    typed_value!(SnapshotDone, value);
    typed_value!(AddNodeRequest, value);
    typed_value!(RemoveNodeRequest, value);
    typed_value!(BindOutcomeRequest, value);
    typed_value!(BindOutcomeResponse, value);
}

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    // Decode each PDU of the stream, as a connection would.
    while let Ok(Frame::Complete(n)) = frame(rest, MAX_PDU) {
        let pdu = &rest[..n];
        rest = &rest[n..];
        let Ok(msg) = LdapMessage::decode(pdu) else {
            continue;
        };
        let mut once = Vec::new();
        msg.encode(&mut once);
        let again = LdapMessage::decode(&once).expect("a re-encoded message must decode");
        assert_eq!(again, msg);
        let mut twice = Vec::new();
        again.encode(&mut twice);
        assert_eq!(once, twice);
        match &msg.op {
            ProtocolOp::ExtendedRequest(r) => typed_values(r.value),
            ProtocolOp::ExtendedResponse(r) => typed_values(r.value),
            _ => {}
        }
        if let ProtocolOp::SearchRequest(r) = msg.op {
            let text = r.filter.to_string();
            if let Ok(parsed) = larch_proto::OwnedFilter::parse(&text) {
                assert_eq!(parsed.to_string(), text);
            }
        }
    }
});
