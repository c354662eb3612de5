//! SASL binds (RFC 4513 section 5.2): the EXTERNAL and PLAIN mechanisms, each in one step
//! (their credentials come with the BindRequest, so no saslBindInProgress exchange).
//!
//! Decisions, in order:
//! 1. a mechanism that is not turned on (`[sasl] mechanisms`) or unknown ->
//!    `authMethodNotSupported` (7);
//! 2. EXTERNAL (RFC 4422 appendix A): the connection must have presented a TLS client
//!    certificate, else `inappropriateAuthentication` (48); its subject is mapped to a DN
//!    by `[sasl] external_map` ([`map_subject`]) and that entry must exist, else
//!    `invalidCredentials` (49);
//! 3. PLAIN (RFC 4616): the confidentiality policy applies first
//!    (`confidentialityRequired` 13 on a plain connection it covers); the message
//!    `[authzid] NUL authcid NUL passwd` is split ([`parse_plain`]); a malformed or absent
//!    message -> `other` (80), what slapd answers for Cyrus SASL's SASL_BADPROT; the
//!    authcid is `dn:<DN>` or a bare DN and the password is checked exactly as a simple
//!    bind checks it (`invalidCredentials` 49 for any mismatch);
//! 4. an authorization identity (PLAIN's authzid, EXTERNAL's credentials) other than the
//!    authenticated one: `dn:<DN>` naming an existing entry, allowed only when
//!    [`may_proxy`] says so; `dn:` alone is anonymous (allowed, as in slapd); anything else
//!    -> `insufficientAccessRights` (50), slapd's answer to SASL_NOAUTHZ.
//!
//! Whatever fails, the connection is anonymous afterwards (the Bind's caller sees to it).

use larch_model::dn::NormDn;
use larch_proto::ResultCode;
use larch_store::Version;
use rustls_pki_types::CertificateDer;

use crate::auth::bind::{simple, MAX_BIND_DN_BYTES};
use crate::auth::confidentiality;
use crate::auth::policy::{wait_blocking, BindPolicy, PolicyReport};
use crate::bind_throttle::Account;
use crate::cert_subject::{escape_value, Subject};
use crate::client::Client;
use crate::config::{ExternalMap, MapSegment, RequireTls};
use crate::directory::Directory;
use crate::error::OpError;
use crate::identity::Identity;
use crate::password::gate;

/// Longest PLAIN message read: two DNs of at most [`MAX_BIND_DN_BYTES`] and a password.
/// RFC 4616 allows 255 octets per field; DNs are often longer, so more is accepted.
pub const MAX_PLAIN_BYTES: usize = 2 * MAX_BIND_DN_BYTES + 4096;

/// The EXTERNAL mechanism's name.
pub const EXTERNAL: &str = "EXTERNAL";
/// The PLAIN mechanism's name.
pub const PLAIN: &str = "PLAIN";

/// The mechanisms the root DSE lists in `supportedSASLMechanisms`: those turned on that a
/// client can use here (EXTERNAL only when client certificates are verified; PLAIN unless
/// it could never be used: TLS required of everyone and no TLS configured).
pub fn advertised(dir: &Directory) -> Vec<&'static str> {
    let c = &dir.config;
    let mut out = Vec::new();
    if c.sasl.mechanisms.external && c.tls.as_ref().is_some_and(|t| t.verifies_client_certificates()) {
        out.push(EXTERNAL);
    }
    if c.sasl.mechanisms.plain && (c.tls.is_some() || c.security.require_tls != RequireTls::Always) {
        out.push(PLAIN);
    }
    out
}

/// Runs a SASL bind with `mechanism` and `credentials` on a connection from `client` that
/// presented `peer_cert` during its TLS handshake.
pub fn bind(
    dir: &Directory,
    version: &Version,
    mechanism: &[u8],
    credentials: Option<&[u8]>,
    client: &Client,
    peer_cert: Option<&CertificateDer<'_>>,
) -> Result<(Identity, PolicyReport), OpError> {
    let m = &dir.config.sasl.mechanisms;
    if m.external && mechanism.eq_ignore_ascii_case(EXTERNAL.as_bytes()) {
        external(dir, version, credentials, client, peer_cert).map(|i| (i, PolicyReport::default()))
    } else if m.plain && mechanism.eq_ignore_ascii_case(PLAIN.as_bytes()) {
        plain(dir, version, credentials, client)
    } else {
        let offered = [(m.external, EXTERNAL), (m.plain, PLAIN)]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| *n)
            .collect::<Vec<_>>();
        let offered = if offered.is_empty() {
            "none is enabled".to_string()
        } else {
            format!("this server offers {}", offered.join(", "))
        };
        Err(OpError::new(
            ResultCode::AUTH_METHOD_NOT_SUPPORTED,
            format!(
                "SASL mechanism `{}` is not supported: {offered}",
                String::from_utf8_lossy(mechanism)
            ),
        ))
    }
}

/// SASL EXTERNAL: the identity of the TLS client certificate.
fn external(
    dir: &Directory,
    version: &Version,
    authzid: Option<&[u8]>,
    client: &Client,
    peer_cert: Option<&CertificateDer<'_>>,
) -> Result<Identity, OpError> {
    let Some(cert) = peer_cert else {
        let why = if client.tls {
            "the client presented no certificate during the TLS handshake"
        } else {
            "the connection is not protected by TLS (use StartTLS or ldaps:// with a client certificate)"
        };
        return Err(OpError::new(
            ResultCode::INAPPROPRIATE_AUTHENTICATION,
            format!("SASL EXTERNAL needs a TLS client certificate: {why}"),
        ));
    };
    let invalid = |m: String| OpError::new(ResultCode::INVALID_CREDENTIALS, format!("SASL EXTERNAL: {m}"));
    let subject = Subject::from_certificate(cert).map_err(invalid)?;
    let dn = map_subject(&dir.config.sasl.external_map, &subject).map_err(invalid)?;
    let norm = NormDn::from_text(dn.as_bytes(), &*dir.schema).map_err(|e| {
        invalid(format!(
            "the certificate subject `{}` maps to `{dn}`, which is not a DN: {}",
            subject.to_rfc4514(),
            e.reason
        ))
    })?;
    let Some(id) = version.find(&norm) else {
        return Err(invalid(format!(
            "no entry `{dn}` for the certificate subject `{}`",
            subject.to_rfc4514()
        )));
    };
    // A certificate proves no password: of the password policy, only a lock applies.
    if let Some(policy) = BindPolicy::read(dir, version, id, &norm) {
        policy.check_lock()?;
    }
    let admin = norm == dir.admin_dn;
    let identity = Identity::Dn {
        dn: version.dn(id),
        norm,
        admin,
    };
    match authzid {
        Some(z) if !z.is_empty() => authorize(dir, version, identity, z, client),
        _ => Ok(identity),
    }
}

/// The DN `map` gives the certificate subject `subject`.
pub fn map_subject(map: &ExternalMap, subject: &Subject) -> Result<String, String> {
    match map {
        ExternalMap::Subject => Ok(subject.to_rfc4514()),
        ExternalMap::Template(segments) => {
            let mut out = String::new();
            for s in segments {
                match s {
                    MapSegment::Text(t) => out.push_str(t),
                    MapSegment::Attribute { oid, name } => {
                        let value = subject.value_of(oid).ok_or_else(|| {
                            format!(
                                "the certificate subject `{}` has no {name} for the external_map template",
                                subject.to_rfc4514()
                            )
                        })?;
                        out.push_str(&escape_value(value));
                    }
                }
            }
            Ok(out)
        }
    }
}

/// The three fields of a PLAIN message (RFC 4616 section 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainMessage<'a> {
    /// The authorization identity (empty: the authentication identity).
    pub authzid: &'a [u8],
    /// The authentication identity.
    pub authcid: &'a [u8],
    /// The password.
    pub password: &'a [u8],
}

/// Splits a PLAIN message `[authzid] NUL authcid NUL passwd`; the error says what is wrong.
pub fn parse_plain(message: &[u8]) -> Result<PlainMessage<'_>, String> {
    if message.len() > MAX_PLAIN_BYTES {
        return Err(format!("the message is longer than {MAX_PLAIN_BYTES} octets"));
    }
    let mut parts = message.splitn(3, |&b| b == 0);
    let (Some(authzid), Some(authcid), Some(password)) = (parts.next(), parts.next(), parts.next()) else {
        return Err("the message is not `[authzid] NUL authcid NUL password` (fewer than two NULs)".into());
    };
    if password.contains(&0) {
        return Err("the message has more than two NULs".into());
    }
    if authcid.is_empty() {
        return Err("the authentication identity is empty".into());
    }
    if password.is_empty() {
        return Err("the password is empty".into());
    }
    Ok(PlainMessage {
        authzid,
        authcid,
        password,
    })
}

/// SASL PLAIN: a DN and its password, checked as a simple bind checks them, password
/// policy included (the records it waits for are waited for here).
fn plain(
    dir: &Directory,
    version: &Version,
    credentials: Option<&[u8]>,
    client: &Client,
) -> Result<(Identity, PolicyReport), OpError> {
    confidentiality::require_tls(dir, client, "SASL PLAIN")?;
    let other = |m: String| OpError::new(ResultCode::OTHER, format!("SASL PLAIN: {m}"));
    let message = credentials.ok_or_else(|| {
        other("no credentials: send `[authzid] NUL authcid NUL password` with the BindRequest".into())
    })?;
    let msg = parse_plain(message).map_err(other)?;
    let name = strip_ci(msg.authcid, b"dn:").unwrap_or(msg.authcid);
    if strip_ci(msg.authcid, b"u:").is_some() {
        return Err(OpError::new(
            ResultCode::INVALID_CREDENTIALS,
            "SASL PLAIN: the authentication identity must be `dn:<DN>` or a DN (user names are not mapped)",
        ));
    }
    let mut report = PolicyReport::default();
    let checked = simple(dir, version, name, msg.password, None).and_then(|mut check| {
        let policy = check.take_policy();
        if let Some(p) = &policy {
            p.check_lock()?;
        }
        let checked = if check.is_slow() {
            gate::blocking_section(|| check.run())
        } else {
            check.run()
        };
        let Some(policy) = policy else {
            return checked;
        };
        let (checked, told, pending) = policy.conclude(dir, checked);
        report = told;
        if let Some(p) = pending {
            wait_blocking(p);
        }
        checked
    });
    let identity = checked.map_err(|e| {
        if e.code == ResultCode::INVALID_DN_SYNTAX {
            OpError::new(
                ResultCode::INVALID_CREDENTIALS,
                format!(
                    "SASL PLAIN: the authentication identity must be `dn:<DN>` or a DN: {}",
                    e.message
                ),
            )
        } else {
            e
        }
    })?;
    if msg.authzid.is_empty() {
        Ok((identity, report))
    } else {
        authorize(dir, version, identity, msg.authzid, client).map(|i| (i, report))
    }
}

/// The account the failed-bind throttle counts a SASL bind under: for PLAIN (turned on),
/// the authentication identity's DN, normalized (the empty one when it is not a DN, which
/// fails as a wrong password does); `None` for a bind that checks no password (EXTERNAL,
/// an unknown mechanism, a message that does not parse).
pub fn plain_account(dir: &Directory, mechanism: &[u8], credentials: Option<&[u8]>) -> Option<Account> {
    if !(dir.config.sasl.mechanisms.plain && mechanism.eq_ignore_ascii_case(PLAIN.as_bytes())) {
        return None;
    }
    let msg = parse_plain(credentials?).ok()?;
    let name = strip_ci(msg.authcid, b"dn:").unwrap_or(msg.authcid);
    let norm = (name.len() <= MAX_BIND_DN_BYTES)
        .then(|| NormDn::from_text(name, &*dir.schema).ok())
        .flatten();
    Some(
        dir.bind_throttle
            .account(norm.as_ref().map_or("", NormDn::as_str)),
    )
}

/// `text` without `prefix` (compared without regard to ASCII case).
fn strip_ci<'a>(text: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

/// The identity `authenticated` acts as when it asks for `authzid`.
fn authorize(
    dir: &Directory,
    version: &Version,
    authenticated: Identity,
    authzid: &[u8],
    client: &Client,
) -> Result<Identity, OpError> {
    let text = String::from_utf8_lossy(authzid);
    let denied = |m: String| OpError::new(ResultCode::INSUFFICIENT_ACCESS_RIGHTS, m);
    let Some(dn) = strip_ci(authzid, b"dn:") else {
        return Err(denied(format!(
            "authorization identity `{text}`: only the `dn:<DN>` form is supported"
        )));
    };
    if dn.is_empty() {
        return Ok(Identity::Anonymous);
    }
    if dn.len() > MAX_BIND_DN_BYTES {
        return Err(denied(format!(
            "authorization identity: longer than {MAX_BIND_DN_BYTES} octets"
        )));
    }
    let norm = NormDn::from_text(dn, &*dir.schema).map_err(|e| {
        denied(format!(
            "authorization identity `{text}` is not a DN: {}",
            e.reason
        ))
    })?;
    if authenticated.norm_dn() == Some(&norm) {
        return Ok(authenticated);
    }
    if !may_proxy(dir, &authenticated, client) {
        return Err(denied(format!(
            "`{}` may not act as `{}`: it has no proxy authorization right",
            authenticated.dn(),
            String::from_utf8_lossy(dn)
        )));
    }
    let Some(id) = version.find(&norm) else {
        return Err(denied(format!(
            "authorization identity: no entry `{}`",
            String::from_utf8_lossy(dn)
        )));
    };
    let admin = norm == dir.admin_dn;
    Ok(Identity::Dn {
        dn: version.dn(id),
        norm,
        admin,
    })
}

/// Whether `authenticated`, connected from `client`, may act as another identity (a SASL
/// authorization identity): the proxy right of the access rules (`[access_proxy]`; the
/// administrator always has it, as slapd lets its rootdn authorize as any DN).
fn may_proxy(dir: &Directory, authenticated: &Identity, client: &Client) -> bool {
    dir.acl.may_proxy(authenticated, client)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cert_subject::SubjectAttribute;

    #[test]
    fn plain_messages() {
        let m = parse_plain(b"\0dn:cn=a,dc=x\0secret").unwrap();
        assert_eq!(
            m,
            PlainMessage {
                authzid: b"",
                authcid: b"dn:cn=a,dc=x",
                password: b"secret"
            }
        );
        let m = parse_plain(b"dn:cn=b\0cn=a\0p w").unwrap();
        assert_eq!(
            (m.authzid, m.authcid, m.password),
            (&b"dn:cn=b"[..], &b"cn=a"[..], &b"p w"[..])
        );
        for (bad, why) in [
            (&b""[..], "NUL"),
            (b"cn=a secret", "NUL"),
            (b"cn=a\0secret", "NUL"),
            (b"\0\0secret", "authentication identity is empty"),
            (b"\0cn=a\0", "password is empty"),
            (b"\0cn=a\0pw\0", "more than two NULs"),
            (b"a\0b\0c\0d", "more than two NULs"),
        ] {
            let e = parse_plain(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        let long = vec![b'a'; MAX_PLAIN_BYTES + 1];
        assert!(parse_plain(&long).unwrap_err().contains("longer"));
    }

    fn subject() -> Subject {
        let a = |oid: &str, value: &str| SubjectAttribute {
            oid: oid.into(),
            value: value.into(),
        };
        Subject {
            rdns: vec![
                vec![a("0.9.2342.19200300.100.1.25", "com")],
                vec![a("0.9.2342.19200300.100.1.25", "example")],
                vec![a("2.5.4.11", "people")],
                vec![a("2.5.4.3", "Doe, Jane+x")],
            ],
        }
    }

    #[test]
    fn external_mapping() {
        assert_eq!(
            map_subject(&ExternalMap::Subject, &subject()).unwrap(),
            "CN=Doe\\, Jane\\+x,OU=people,DC=example,DC=com"
        );
        let t = ExternalMap::parse("uid={CN},ou={ou},dc=example,dc=com").unwrap();
        assert_eq!(
            map_subject(&t, &subject()).unwrap(),
            "uid=Doe\\, Jane\\+x,ou=people,dc=example,dc=com"
        );
        let t = ExternalMap::parse("uid={UID},dc=example,dc=com").unwrap();
        let e = map_subject(&t, &subject()).unwrap_err();
        assert!(e.contains("has no UID"), "{e}");
    }

    #[test]
    fn prefixes() {
        assert_eq!(strip_ci(b"DN:cn=a", b"dn:"), Some(&b"cn=a"[..]));
        assert_eq!(strip_ci(b"dn", b"dn:"), None);
        assert_eq!(strip_ci(b"cn=a", b"dn:"), None);
    }
}
