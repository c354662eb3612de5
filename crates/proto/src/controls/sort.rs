//! Server-side sorting (RFC 2891).

use super::{oid, sequence, ControlValue};
use crate::ber::{tag, Reader, Writer};
use crate::error::{DecodeError, DecodeErrorKind, Result};
use crate::result::ResultCode;
use crate::seq::{Element, SeqOf};

const ORDERING_RULE: u8 = tag::context(0);
const REVERSE_ORDER: u8 = tag::context(1);
const RESPONSE_ATTRIBUTE: u8 = tag::context(0);

/// One sort key: `SEQUENCE { attributeType, orderingRule [0] OPTIONAL, reverseOrder [1]
/// BOOLEAN DEFAULT FALSE }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey<'a> {
    /// The attribute description to sort on.
    pub attribute: &'a [u8],
    /// An ordering rule other than the attribute's own.
    pub ordering_rule: Option<&'a [u8]>,
    /// Sort in descending order.
    pub reverse: bool,
}

impl<'a> Element<'a> for SortKey<'a> {
    fn decode(r: &mut Reader<'a>) -> Result<Self> {
        let mut k = r.read_constructed(tag::SEQUENCE, "SortKey")?;
        let attribute = k.read_octets(tag::OCTET_STRING, "SortKey.attributeType")?;
        let ordering_rule = k.read_optional(ORDERING_RULE, "SortKey.orderingRule")?;
        let reverse = match k.peek_tag() {
            Some(REVERSE_ORDER) => k.read_bool(REVERSE_ORDER, "SortKey.reverseOrder")?,
            _ => false,
        };
        k.finish_sequence("SortKey", &[tag::OCTET_STRING, ORDERING_RULE, REVERSE_ORDER])?;
        Ok(SortKey {
            attribute,
            ordering_rule,
            reverse,
        })
    }

    fn encode(&self, w: &mut Writer<'_>) {
        let m = w.begin(tag::SEQUENCE);
        w.octet_string(self.attribute);
        if let Some(r) = self.ordering_rule {
            w.octets(ORDERING_RULE, r);
        }
        if self.reverse {
            w.boolean(REVERSE_ORDER, true);
        }
        w.end(m);
    }
}

/// Sort request: `SortKeyList ::= SEQUENCE OF SortKey` (at least one key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortRequest<'a> {
    /// The keys, most significant first.
    pub keys: SeqOf<'a, SortKey<'a>>,
}

impl<'a> ControlValue<'a> for SortRequest<'a> {
    const OID: &'static str = oid::SORT_REQUEST;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "SortRequest";
        let (outer, r) = sequence(value, CTX)?;
        outer.finish(CTX)?;
        let keys = SeqOf::decode_contents(r.remaining())?;
        if keys.is_empty() {
            return Err(DecodeError::new(DecodeErrorKind::Empty, CTX));
        }
        Ok(SortRequest { keys })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        self.keys.encode_contents(&mut w);
        w.end(m);
        true
    }
}

/// Sort response: `SEQUENCE { sortResult ENUMERATED, attributeType [0] OPTIONAL }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortResponse<'a> {
    /// `success`, or why the results are not sorted (e.g. `inappropriateMatching`).
    pub result: ResultCode,
    /// The attribute that caused the failure.
    pub attribute: Option<&'a [u8]>,
}

impl<'a> ControlValue<'a> for SortResponse<'a> {
    const OID: &'static str = oid::SORT_RESPONSE;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "SortResponse";
        let (outer, mut r) = sequence(value, CTX)?;
        let result = r.read_integer_in(tag::ENUMERATED, 0, i64::from(i32::MAX), "SortResponse.sortResult")?;
        let attribute = r.read_optional(RESPONSE_ATTRIBUTE, "SortResponse.attributeType")?;
        r.finish_sequence(CTX, &[tag::ENUMERATED, RESPONSE_ATTRIBUTE])?;
        outer.finish(CTX)?;
        Ok(SortResponse {
            result: ResultCode(result as u32),
            attribute,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        w.integer(tag::ENUMERATED, i64::from(self.result.0));
        if let Some(a) = self.attribute {
            w.octets(RESPONSE_ATTRIBUTE, a);
        }
        w.end(m);
        true
    }
}
