use crate::ber::{integer_octets, length_octets, tag, tlv_len, Reader, Writer};
use crate::error::Result;
use crate::message::{op_tag, MessageId};
use crate::result::non_empty_uris;
use crate::seq::{Element, SeqOf};

/// `PartialAttribute` / `Attribute`: an attribute description and its values. In a
/// SearchResultEntry the value set may be empty (typesOnly); in an AddRequest it may not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartialAttribute<'a> {
    /// The attribute description, e.g. `cn` or `userCertificate;binary`.
    pub description: &'a [u8],
    /// The values.
    pub values: SeqOf<'a, &'a [u8]>,
}

impl<'a> Element<'a> for PartialAttribute<'a> {
    fn decode(r: &mut Reader<'a>) -> Result<Self> {
        let mut a = r.read_constructed(tag::SEQUENCE, "PartialAttribute")?;
        let description = a.read_octets(tag::OCTET_STRING, "PartialAttribute.type")?;
        let vals = a.read(tag::SET, "PartialAttribute.vals")?;
        let values = SeqOf::decode_contents(vals).map_err(|e| e.within("PartialAttribute.vals"))?;
        a.finish_sequence("PartialAttribute", &[tag::OCTET_STRING, tag::SET])?;
        Ok(PartialAttribute { description, values })
    }

    fn encode(&self, w: &mut Writer<'_>) {
        let m = w.begin(tag::SEQUENCE);
        w.octet_string(self.description);
        let s = w.begin(tag::SET);
        self.values.encode_contents(w);
        w.end(s);
        w.end(m);
    }
}

/// SearchResultEntry (RFC 4511 section 4.5.2).
///
/// ```
/// use larch_proto::{LdapMessage, PartialAttribute, ProtocolOp, SearchResultEntry, SeqOf};
/// let cn: [&[u8]; 1] = [b"Alice Liddell"];
/// let attrs = [PartialAttribute { description: b"cn", values: SeqOf::from_items(&cn) }];
/// let entry = SearchResultEntry { object_name: b"uid=alice,dc=example,dc=com", attributes: SeqOf::from_items(&attrs) };
/// let mut buf = Vec::new();
/// LdapMessage::new(2, ProtocolOp::SearchResultEntry(entry)).encode(&mut buf);
/// assert_eq!(LdapMessage::decode(&buf).unwrap().op, ProtocolOp::SearchResultEntry(entry));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchResultEntry<'a> {
    /// The entry's DN.
    pub object_name: &'a [u8],
    /// Its attributes (`PartialAttributeList`).
    pub attributes: SeqOf<'a, PartialAttribute<'a>>,
}

impl<'a> SearchResultEntry<'a> {
    pub(crate) fn decode_contents(c: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(c);
        let object_name = r.read_octets(tag::OCTET_STRING, "SearchResultEntry.objectName")?;
        let attrs = r.read(tag::SEQUENCE, "SearchResultEntry.attributes")?;
        let attributes = SeqOf::decode_contents(attrs)?;
        r.finish_sequence("SearchResultEntry", &[tag::OCTET_STRING, tag::SEQUENCE])?;
        Ok(SearchResultEntry {
            object_name,
            attributes,
        })
    }

    pub(crate) fn encode_contents(&self, w: &mut Writer<'_>) {
        w.octet_string(self.object_name);
        let m = w.begin(tag::SEQUENCE);
        self.attributes.encode_contents(w);
        w.end(m);
    }
}

/// Appends a whole SearchResultEntry LDAPMessage (no controls) built from an attribute list
/// that is already BER-encoded, the way the store keeps entries: the concatenated
/// `PartialAttribute` TLVs, without the enclosing SEQUENCE header.
///
/// This is the hot path of every search. All lengths are computed first, so the output is
/// one exact-size header followed by two copies (the DN and the attribute list).
///
/// ```
/// use larch_proto::{encode_search_result_entry, LdapMessage, ProtocolOp};
/// // PartialAttribute { cn: ["x"] } in BER.
/// let stored = [0x30, 0x09, 0x04, 0x02, b'c', b'n', 0x31, 0x03, 0x04, 0x01, b'x'];
/// let mut out = Vec::new();
/// encode_search_result_entry(&mut out, 5, b"cn=x", &stored);
/// let ProtocolOp::SearchResultEntry(e) = LdapMessage::decode(&out).unwrap().op else { panic!() };
/// assert_eq!(e.object_name, b"cn=x");
/// assert_eq!(e.attributes.iter().next().unwrap().description, b"cn");
/// ```
#[inline]
pub fn encode_search_result_entry(
    out: &mut Vec<u8>,
    message_id: MessageId,
    dn: &[u8],
    attributes_ber: &[u8],
) {
    let id = i64::from(message_id);
    let id_len = integer_octets(id);
    let entry_len = tlv_len(dn.len()) + tlv_len(attributes_ber.len());
    let message_len = 2 + id_len + tlv_len(entry_len);
    out.reserve(1 + length_octets(message_len) + message_len);
    let mut w = Writer::new(out);
    w.header(tag::SEQUENCE, message_len);
    w.integer(tag::INTEGER, id);
    w.header(op_tag::SEARCH_RESULT_ENTRY, entry_len);
    w.octets(tag::OCTET_STRING, dn);
    w.octets(tag::SEQUENCE, attributes_ber);
}

/// A SearchResultEntry like [`encode_search_result_entry`], followed by response controls
/// (RFC 4511 section 4.1.11): a syncrepl provider's Sync State control (RFC 4533) on each
/// entry it sends.
///
/// ```
/// use larch_proto::controls::Control;
/// use larch_proto::{encode_search_result_entry_with_controls, LdapMessage, ProtocolOp};
/// let control = Control { oid: b"1.3.6.1.4.1.4203.1.9.1.2", critical: false, value: Some(b"v") };
/// let mut out = Vec::new();
/// encode_search_result_entry_with_controls(&mut out, 5, b"cn=x", &[], &[control]);
/// let msg = LdapMessage::decode(&out).unwrap();
/// let ProtocolOp::SearchResultEntry(e) = msg.op else { panic!() };
/// assert_eq!(e.object_name, b"cn=x");
/// assert_eq!(msg.controls().iter().next(), Some(control));
/// ```
pub fn encode_search_result_entry_with_controls(
    out: &mut Vec<u8>,
    message_id: MessageId,
    dn: &[u8],
    attributes_ber: &[u8],
    controls: &[crate::controls::Control<'_>],
) {
    let mut w = Writer::new(out);
    let m = w.begin(tag::SEQUENCE);
    w.integer(tag::INTEGER, i64::from(message_id));
    let e = w.begin(op_tag::SEARCH_RESULT_ENTRY);
    w.octets(tag::OCTET_STRING, dn);
    w.octets(tag::SEQUENCE, attributes_ber);
    w.end(e);
    if !controls.is_empty() {
        let c = w.begin(tag::context_constructed(0));
        for control in controls {
            control.encode(&mut w);
        }
        w.end(c);
    }
    w.end(m);
}

/// SearchResultReference (RFC 4511 section 4.5.3): continuation URIs, at least one.
///
/// ```
/// use larch_proto::{LdapMessage, ProtocolOp, SearchResultReference, SeqOf};
/// let uris: [&[u8]; 1] = [b"ldap://other.example.com/ou=x,dc=example,dc=com??sub"];
/// let r = SearchResultReference { uris: SeqOf::from_items(&uris) };
/// let mut buf = Vec::new();
/// LdapMessage::new(2, ProtocolOp::SearchResultReference(r)).encode(&mut buf);
/// assert_eq!(LdapMessage::decode(&buf).unwrap().op, ProtocolOp::SearchResultReference(r));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchResultReference<'a> {
    /// The URIs.
    pub uris: SeqOf<'a, &'a [u8]>,
}

impl<'a> SearchResultReference<'a> {
    pub(crate) fn decode_contents(c: &'a [u8]) -> Result<Self> {
        Ok(SearchResultReference {
            uris: non_empty_uris(c, "SearchResultReference")?,
        })
    }

    pub(crate) fn encode_contents(&self, w: &mut Writer<'_>) {
        self.uris.encode_contents(w);
    }
}
