/// DelRequest (RFC 4511 section 4.8): remove one leaf entry. Its contents are the DN itself.
///
/// ```
/// use larch_proto::{DelRequest, LdapMessage, ProtocolOp};
/// let msg = LdapMessage::new(3, ProtocolOp::DelRequest(DelRequest { dn: b"uid=a,dc=x" }));
/// let mut buf = Vec::new();
/// msg.encode(&mut buf);
/// assert_eq!(LdapMessage::decode(&buf).unwrap().op, msg.op);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelRequest<'a> {
    /// The DN of the entry to delete.
    pub dn: &'a [u8],
}
