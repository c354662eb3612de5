use crate::ber::{tag, Reader, Writer};
use crate::error::Result;
use crate::filter::AttributeValueAssertion;

/// CompareRequest (RFC 4511 section 4.10): does this entry hold this value?
///
/// ```
/// use larch_proto::{AttributeValueAssertion, CompareRequest, LdapMessage, ProtocolOp};
/// let req = CompareRequest {
///     entry: b"uid=alice,dc=example,dc=com",
///     ava: AttributeValueAssertion { description: b"title", value: b"Engineer" },
/// };
/// let mut buf = Vec::new();
/// LdapMessage::new(8, ProtocolOp::CompareRequest(req)).encode(&mut buf);
/// assert_eq!(LdapMessage::decode(&buf).unwrap().op, ProtocolOp::CompareRequest(req));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompareRequest<'a> {
    /// The DN of the entry.
    pub entry: &'a [u8],
    /// The assertion.
    pub ava: AttributeValueAssertion<'a>,
}

impl<'a> CompareRequest<'a> {
    pub(crate) fn decode_contents(c: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(c);
        let entry = r.read_octets(tag::OCTET_STRING, "CompareRequest.entry")?;
        let ava = AttributeValueAssertion::decode_contents(
            r.read(tag::SEQUENCE, "CompareRequest.ava")?,
            "CompareRequest.ava",
        )?;
        r.finish_sequence("CompareRequest", &[tag::OCTET_STRING, tag::SEQUENCE])?;
        Ok(CompareRequest { entry, ava })
    }

    pub(crate) fn encode_contents(&self, w: &mut Writer<'_>) {
        w.octet_string(self.entry);
        let m = w.begin(tag::SEQUENCE);
        self.ava.encode_contents(w);
        w.end(m);
    }
}
