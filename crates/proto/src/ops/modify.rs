use crate::ber::{tag, Reader, Writer};
use crate::error::{DecodeError, DecodeErrorKind, Result};
use crate::ops::PartialAttribute;
use crate::seq::{Element, SeqOf};

/// What one change of a ModifyRequest does (RFC 4511 section 4.6, RFC 4525).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModifyOperation {
    /// `add` (0): add values, creating the attribute if needed.
    Add = 0,
    /// `delete` (1): delete the listed values, or the whole attribute if none are listed.
    Delete = 1,
    /// `replace` (2): replace all values (no values deletes the attribute).
    Replace = 2,
    /// `increment` (3, RFC 4525): add the single value to an integer attribute.
    Increment = 3,
}

/// One change: an operation and the attribute it applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change<'a> {
    /// The operation.
    pub operation: ModifyOperation,
    /// The attribute description and values it carries.
    pub modification: PartialAttribute<'a>,
}

impl<'a> Element<'a> for Change<'a> {
    fn decode(r: &mut Reader<'a>) -> Result<Self> {
        let mut c = r.read_constructed(tag::SEQUENCE, "ModifyRequest.change")?;
        let operation = match c.read_integer(tag::ENUMERATED, "ModifyRequest.change.operation")? {
            0 => ModifyOperation::Add,
            1 => ModifyOperation::Delete,
            2 => ModifyOperation::Replace,
            3 => ModifyOperation::Increment,
            value => {
                return Err(DecodeError::new(
                    DecodeErrorKind::UnknownEnumerated { value },
                    "ModifyRequest.change.operation",
                ))
            }
        };
        let modification =
            PartialAttribute::decode(&mut c).map_err(|e| e.within("ModifyRequest.change.modification"))?;
        c.finish_sequence("ModifyRequest.change", &[tag::ENUMERATED, tag::SEQUENCE])?;
        Ok(Change {
            operation,
            modification,
        })
    }

    fn encode(&self, w: &mut Writer<'_>) {
        let m = w.begin(tag::SEQUENCE);
        w.integer(tag::ENUMERATED, self.operation as i64);
        self.modification.encode(w);
        w.end(m);
    }
}

/// ModifyRequest (RFC 4511 section 4.6): all changes apply, in order, or none do.
///
/// ```
/// use larch_proto::{Change, LdapMessage, ModifyOperation, ModifyRequest, PartialAttribute, ProtocolOp, SeqOf};
/// let mail: [&[u8]; 1] = [b"alice@example.com"];
/// let changes = [Change {
///     operation: ModifyOperation::Replace,
///     modification: PartialAttribute { description: b"mail", values: SeqOf::from_items(&mail) },
/// }];
/// let req = ModifyRequest { object: b"uid=alice,dc=example,dc=com", changes: SeqOf::from_items(&changes) };
/// let mut buf = Vec::new();
/// LdapMessage::new(4, ProtocolOp::ModifyRequest(req)).encode(&mut buf);
/// assert_eq!(LdapMessage::decode(&buf).unwrap().op, ProtocolOp::ModifyRequest(req));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModifyRequest<'a> {
    /// The DN of the entry to modify.
    pub object: &'a [u8],
    /// The changes, in order.
    pub changes: SeqOf<'a, Change<'a>>,
}

impl<'a> ModifyRequest<'a> {
    pub(crate) fn decode_contents(c: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(c);
        let object = r.read_octets(tag::OCTET_STRING, "ModifyRequest.object")?;
        let changes = SeqOf::decode_contents(r.read(tag::SEQUENCE, "ModifyRequest.changes")?)?;
        r.finish_sequence("ModifyRequest", &[tag::OCTET_STRING, tag::SEQUENCE])?;
        Ok(ModifyRequest { object, changes })
    }

    pub(crate) fn encode_contents(&self, w: &mut Writer<'_>) {
        w.octet_string(self.object);
        let m = w.begin(tag::SEQUENCE);
        self.changes.encode_contents(w);
        w.end(m);
    }
}
