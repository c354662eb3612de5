use super::{oid, required, ControlValue};
use crate::error::Result;
use crate::filter::Filter;

/// Assertion (RFC 4528): the operation proceeds only if the target entry matches the
/// filter; otherwise the result is `assertionFailed` (122). The value is a BER Filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Assertion<'a> {
    /// The filter the entry must match.
    pub filter: Filter<'a>,
}

impl<'a> ControlValue<'a> for Assertion<'a> {
    const OID: &'static str = oid::ASSERTION;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        let v = required(value, "Assertion")?;
        Ok(Assertion {
            filter: Filter::from_ber(v).map_err(|e| e.within("Assertion.filter"))?,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(self.filter.as_ber());
        true
    }
}
