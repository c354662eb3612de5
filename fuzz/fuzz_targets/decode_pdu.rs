//! Frames and decodes arbitrary octets as a stream of LDAPMessages. Properties checked:
//! no panic, no hang, no read beyond the frame; every decoded message re-encodes to octets
//! that decode to an equal message (and re-encode identically); every filter formats to an
//! RFC 4515 string, and when that string parses, formatting the result gives it back. (BER
//! can carry attribute descriptions no string filter can, so the exact BER round trip is
//! checked by the `filter_string` target, for filters that began as text.)
#![no_main]

use larch_proto::frame::{frame, Frame};
use larch_proto::{LdapMessage, ProtocolOp};
use libfuzzer_sys::fuzz_target;

/// A small PDU limit so the fuzzer explores the too-large path too.
const MAX_PDU: usize = 64 * 1024;

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
        if let ProtocolOp::SearchRequest(r) = msg.op {
            let text = r.filter.to_string();
            if let Ok(parsed) = larch_proto::OwnedFilter::parse(&text) {
                assert_eq!(parsed.to_string(), text);
            }
        }
    }
});
