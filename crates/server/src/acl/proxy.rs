//! The Proxied Authorization control (RFC 4370): an operation runs as another identity.
//!
//! [`proxied_identity`], in order (every refusal is `authorizationDenied`, 123, which
//! RFC 4370 section 4 calls proxiedAuthorizationDenied):
//! 1. the requester must hold the proxy right ([`AccessRules::may_proxy`]: the admin, or a
//!    clause of `access_proxy.allow`);
//! 2. an empty authzId is the anonymous identity;
//! 3. `dn:<DN>`: the DN must parse and name an existing entry of the operation's version;
//!    the identity is that entry (the admin when it is the configured admin DN);
//! 4. `u:<user>` and anything else: refused (no mapping of user names is configured).
//!
//! The criticality rule (a non-critical control is a `protocolError`, RFC 4370 section 3)
//! is applied where the control is read ([`crate::controls`]). The operation then runs as
//! the returned identity: its access checks, its limits, and creatorsName/modifiersName.

use larch_model::dn::NormDn;
use larch_proto::ResultCode;
use larch_store::Version;

use super::AccessRules;
use crate::client::Client;
use crate::error::OpError;
use crate::identity::Identity;

fn denied(message: String) -> OpError {
    OpError::new(ResultCode::AUTHORIZATION_DENIED, message)
}

/// The identity an operation carrying the control with `authz_id` runs as (see the module
/// documentation); `admin_dn` is the configured administrator.
pub fn proxied_identity(
    rules: &AccessRules,
    admin_dn: &NormDn,
    version: &Version,
    identity: &Identity,
    client: &Client,
    authz_id: &[u8],
) -> Result<Identity, OpError> {
    let shown = String::from_utf8_lossy(authz_id);
    if !rules.may_proxy(identity, client) {
        let who = match identity {
            Identity::Anonymous => "an anonymous client".to_string(),
            Identity::Dn { dn, .. } => format!("`{dn}`"),
        };
        return Err(denied(format!(
            "{who} may not use proxied authorization (access_proxy.allow); requested authzId `{shown}`"
        )));
    }
    if authz_id.is_empty() {
        return Ok(Identity::Anonymous);
    }
    let Some(dn_text) = authz_id.strip_prefix(b"dn:") else {
        return Err(denied(if authz_id.starts_with(b"u:") {
            format!("authzId `{shown}`: `u:` identities are not mapped to entries on this server; use `dn:`")
        } else {
            format!("authzId `{shown}` is neither `dn:<DN>`, `u:<user>` nor empty (RFC 4513 section 5.2.1.8)")
        }));
    };
    let norm = NormDn::from_text(dn_text, version.schema())
        .map_err(|e| denied(format!("authzId `{shown}`: invalid DN: {e}")))?;
    let Some(id) = version.find(&norm) else {
        return Err(denied(format!("authzId `{shown}`: no such entry")));
    };
    let admin = &norm == admin_dn;
    Ok(Identity::Dn {
        dn: version.dn(id),
        norm,
        admin,
    })
}
