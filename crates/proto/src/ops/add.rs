use crate::ber::{tag, Reader, Writer};
use crate::error::{DecodeError, DecodeErrorKind, Result};
use crate::ops::PartialAttribute;
use crate::seq::SeqOf;

/// AddRequest (RFC 4511 section 4.7). Every attribute carries at least one value
/// (`vals SET SIZE (1..MAX)`); an empty set is a protocol error.
///
/// ```
/// use larch_proto::{AddRequest, LdapMessage, PartialAttribute, ProtocolOp, SeqOf};
/// let oc: [&[u8]; 2] = [b"top", b"organizationalUnit"];
/// let ou: [&[u8]; 1] = [b"People"];
/// let attrs = [
///     PartialAttribute { description: b"objectClass", values: SeqOf::from_items(&oc) },
///     PartialAttribute { description: b"ou", values: SeqOf::from_items(&ou) },
/// ];
/// let req = AddRequest { entry: b"ou=People,dc=example,dc=com", attributes: SeqOf::from_items(&attrs) };
/// let mut buf = Vec::new();
/// LdapMessage::new(5, ProtocolOp::AddRequest(req)).encode(&mut buf);
/// assert_eq!(LdapMessage::decode(&buf).unwrap().op, ProtocolOp::AddRequest(req));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddRequest<'a> {
    /// The DN of the new entry.
    pub entry: &'a [u8],
    /// Its attributes (`AttributeList`).
    pub attributes: SeqOf<'a, PartialAttribute<'a>>,
}

impl<'a> AddRequest<'a> {
    pub(crate) fn decode_contents(c: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(c);
        let entry = r.read_octets(tag::OCTET_STRING, "AddRequest.entry")?;
        let attributes: SeqOf<'a, PartialAttribute<'a>> =
            SeqOf::decode_contents(r.read(tag::SEQUENCE, "AddRequest.attributes")?)?;
        if attributes.iter().any(|a| a.values.is_empty()) {
            return Err(DecodeError::new(
                DecodeErrorKind::Empty,
                "AddRequest.attributes.vals",
            ));
        }
        r.finish_sequence("AddRequest", &[tag::OCTET_STRING, tag::SEQUENCE])?;
        Ok(AddRequest { entry, attributes })
    }

    pub(crate) fn encode_contents(&self, w: &mut Writer<'_>) {
        w.octet_string(self.entry);
        let m = w.begin(tag::SEQUENCE);
        self.attributes.encode_contents(w);
        w.end(m);
    }
}
