use super::{ExtendedValue, WHO_AM_I};
use crate::error::Result;

/// "Who am I?" response value (RFC 4532): the authzId (`dn:...` or `u:...`), or nothing
/// for an anonymous session. The value is the string itself, not BER.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WhoAmIResponse<'a> {
    /// The authorization identity; empty for anonymous.
    pub authz_id: &'a [u8],
}

impl<'a> ExtendedValue<'a> for WhoAmIResponse<'a> {
    const OID: &'static str = WHO_AM_I;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        Ok(WhoAmIResponse {
            authz_id: value.unwrap_or_default(),
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(self.authz_id);
        true
    }
}
