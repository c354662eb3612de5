use crate::ber::{tag, Reader, Writer};
use crate::error::Result;

/// Tag of `newSuperior` (`[0]`, primitive).
pub const NEW_SUPERIOR_TAG: u8 = tag::context(0);

/// ModifyDNRequest (RFC 4511 section 4.9): rename an entry and/or move it.
///
/// ```
/// use larch_proto::{LdapMessage, ModifyDnRequest, ProtocolOp};
/// let req = ModifyDnRequest {
///     entry: b"uid=alice,ou=People,dc=example,dc=com",
///     new_rdn: b"uid=alice2",
///     delete_old_rdn: true,
///     new_superior: Some(b"ou=Staff,dc=example,dc=com"),
/// };
/// let mut buf = Vec::new();
/// LdapMessage::new(6, ProtocolOp::ModifyDnRequest(req)).encode(&mut buf);
/// assert_eq!(LdapMessage::decode(&buf).unwrap().op, ProtocolOp::ModifyDnRequest(req));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModifyDnRequest<'a> {
    /// The DN of the entry to rename.
    pub entry: &'a [u8],
    /// The new RDN.
    pub new_rdn: &'a [u8],
    /// Remove the old RDN values from the entry.
    pub delete_old_rdn: bool,
    /// The new parent, when moving the entry.
    pub new_superior: Option<&'a [u8]>,
}

impl<'a> ModifyDnRequest<'a> {
    pub(crate) fn decode_contents(c: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(c);
        let entry = r.read_octets(tag::OCTET_STRING, "ModifyDNRequest.entry")?;
        let new_rdn = r.read_octets(tag::OCTET_STRING, "ModifyDNRequest.newrdn")?;
        let delete_old_rdn = r.read_bool(tag::BOOLEAN, "ModifyDNRequest.deleteoldrdn")?;
        let new_superior = r.read_optional(NEW_SUPERIOR_TAG, "ModifyDNRequest.newSuperior")?;
        r.finish_sequence(
            "ModifyDNRequest",
            &[tag::OCTET_STRING, tag::BOOLEAN, NEW_SUPERIOR_TAG],
        )?;
        Ok(ModifyDnRequest {
            entry,
            new_rdn,
            delete_old_rdn,
            new_superior,
        })
    }

    pub(crate) fn encode_contents(&self, w: &mut Writer<'_>) {
        w.octet_string(self.entry);
        w.octet_string(self.new_rdn);
        w.boolean(tag::BOOLEAN, self.delete_old_rdn);
        if let Some(s) = self.new_superior {
            w.octets(NEW_SUPERIOR_TAG, s);
        }
    }
}
