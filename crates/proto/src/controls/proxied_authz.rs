use super::{oid, required, ControlValue};
use crate::error::Result;

/// Proxied Authorization v2 (RFC 4370). The value is the authzId itself (`dn:...`,
/// `u:...`, or empty for anonymous), *not* wrapped in BER, and the control must be critical.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxiedAuthz<'a> {
    /// The authorization identity (RFC 4513 section 5.2.1.8), e.g. `dn:uid=a,dc=x`.
    pub authz_id: &'a [u8],
}

impl<'a> ControlValue<'a> for ProxiedAuthz<'a> {
    const OID: &'static str = oid::PROXIED_AUTHZ;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        Ok(ProxiedAuthz {
            authz_id: required(value, "ProxiedAuthz")?,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(self.authz_id);
        true
    }
}
