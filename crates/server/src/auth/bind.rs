//! The Bind operation (RFC 4511 section 4.2, RFC 4513 section 5): who the connection is
//! after a BindRequest.
//!
//! Decisions, in order:
//! 1. a version other than 3 -> `protocolError` (2);
//! 2. SASL: decided by [`crate::auth::sasl`] (EXTERNAL, PLAIN); an authentication choice
//!    this server does not know -> `authMethodNotSupported` (7);
//! 3. empty name and empty password: anonymous (RFC 4513 5.1.1), refused with
//!    `inappropriateAuthentication` (48) when `allow_anonymous_bind` is off;
//! 4. empty name with a password -> `unwillingToPerform` (53): it is neither anonymous
//!    nor a name/password bind, and accepting it as anonymous would let a client believe
//!    it authenticated;
//! 5. a name with an empty password: an unauthenticated bind (RFC 4513 5.1.2), refused with
//!    `unwillingToPerform` (53) unless `allow_unauthenticated_bind`; when allowed the
//!    connection is anonymous;
//! 6. a name and a password: the confidentiality policy applies first
//!    (`confidentialityRequired` 13 on a plain connection it covers, see
//!    [`crate::auth::confidentiality`]); the name must parse (`invalidDNSyntax` 34), the entry must
//!    exist and hold a userPassword value the password verifies against; anything else is
//!    `invalidCredentials` (49), the same answer whether or not the entry exists.
//!
//! Whatever the outcome, a failed bind leaves the connection anonymous (RFC 4511 4.2.1).

use larch_model::dn::NormDn;
use larch_proto::{Authentication, BindRequest, ResultCode};
use larch_store::Version;
use rustls_pki_types::CertificateDer;

use crate::auth::{confidentiality, password, sasl};
use crate::client::Client;
use crate::directory::Directory;
use crate::error::OpError;
use crate::identity::Identity;

/// Longest bind DN looked at; a longer one cannot name an entry the store accepts.
pub const MAX_BIND_DN_BYTES: usize = 16 * 1024;

/// Runs a bind against `version` for a connection from `client`, which presented
/// `peer_cert` in its TLS handshake: the new identity, or the error to answer.
pub fn bind(
    dir: &Directory,
    version: &Version,
    req: &BindRequest<'_>,
    client: &Client,
    peer_cert: Option<&CertificateDer<'_>>,
) -> Result<Identity, OpError> {
    if req.version != 3 {
        return Err(OpError::protocol(format!(
            "LDAP version {} is not supported; this server speaks LDAPv3",
            req.version
        )));
    }
    let password_given = match req.authentication {
        Authentication::Simple(p) => p,
        Authentication::Sasl {
            mechanism,
            credentials,
        } => return sasl::bind(dir, version, mechanism, credentials, client, peer_cert),
        Authentication::Other { tag, .. } => {
            return Err(OpError::new(
                ResultCode::AUTH_METHOD_NOT_SUPPORTED,
                format!("authentication choice 0x{tag:02x} is not supported; use simple"),
            ))
        }
    };
    let settings = &dir.config.directory;
    match (req.name.is_empty(), password_given.is_empty()) {
        (true, true) => {
            if settings.allow_anonymous_bind {
                Ok(Identity::Anonymous)
            } else {
                Err(OpError::new(
                    ResultCode::INAPPROPRIATE_AUTHENTICATION,
                    "anonymous bind is disabled on this server",
                ))
            }
        }
        (true, false) => Err(OpError::unwilling(
            "a password without a name is neither an anonymous nor a simple bind; give the DN to bind as",
        )),
        (false, true) => {
            if settings.allow_unauthenticated_bind {
                Ok(Identity::Anonymous)
            } else {
                Err(OpError::unwilling(
                    "unauthenticated bind (a DN with an empty password) is not allowed (RFC 4513 section 5.1.2)",
                ))
            }
        }
        (false, false) => {
            confidentiality::require_tls(dir, client, "a simple bind with a password")?;
            simple(dir, version, req.name, password_given)
        }
    }
}

/// A name/password bind (also SASL PLAIN's check).
pub(crate) fn simple(
    dir: &Directory,
    version: &Version,
    name: &[u8],
    given: &[u8],
) -> Result<Identity, OpError> {
    let invalid = || OpError::new(ResultCode::INVALID_CREDENTIALS, "invalid credentials");
    if name.len() > MAX_BIND_DN_BYTES {
        return Err(invalid());
    }
    let (_, norm) = NormDn::parse(name, &*dir.schema)
        .map_err(|e| OpError::new(ResultCode::INVALID_DN_SYNTAX, format!("bind DN: {e}")))?;
    let Some(id) = version.find(&norm) else {
        return Err(invalid());
    };
    let Some(entry) = version.entry(id) else {
        return Err(invalid());
    };
    let ok = entry
        .attrs()
        .attribute(dir.user_password)
        .any(|a| a.values.iter().any(|stored| password::verify(given, stored)));
    if !ok {
        return Err(invalid());
    }
    let admin = norm == dir.admin_dn;
    Ok(Identity::Dn {
        dn: version.dn(id),
        norm,
        admin,
    })
}
