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
//!
//! Step 6 is split so that the connection can run the password check where it belongs:
//! [`stage`] makes decisions 1 to 5 and the lookup, and hands back a [`PasswordCheck`]
//! that owns what it needs (the presented password, the entry's userPassword values, the
//! identity to take on success). The connection runs it inline when every stored value is
//! cheap ({SSHA} and the other digests) and on a blocking thread otherwise (argon2, PBKDF2,
//! crypt; [`PasswordCheck::is_slow`]), after the failed-bind throttle
//! ([`crate::bind_throttle`]) has had its say. [`bind`] does both steps inline.

use larch_model::dn::NormDn;
use larch_proto::{Authentication, BindRequest, ResultCode};
use larch_store::{EntryId, Version};
use rustls_pki_types::CertificateDer;

use super::policy::{BindPolicy, PolicyReport};
use super::{confidentiality, sasl};
use crate::bind_throttle::Account;
use crate::client::Client;
use crate::config::PasswordSettings;
use crate::directory::Directory;
use crate::error::OpError;
use crate::identity::Identity;
use crate::lookup::LastBase;
use crate::password;

/// Longest bind DN looked at; a longer one cannot name an entry the store accepts.
pub const MAX_BIND_DN_BYTES: usize = 16 * 1024;

/// A bind after its decisions: done, or a password left to check.
#[derive(Debug)]
pub enum Staged {
    /// Decided (anonymous, unauthenticated, SASL), with what password policy reports.
    Done(Identity, PolicyReport),
    /// A name/password bind whose password is still to be checked (boxed: it carries the
    /// account's policy and state).
    Check(Box<PasswordCheck>),
}

/// A name/password bind's password check, owning everything it needs (it may run on
/// another thread).
#[derive(Debug)]
pub struct PasswordCheck {
    given: Vec<u8>,
    /// The entry's userPassword values (none when there is no such entry).
    stored: Vec<Vec<u8>>,
    /// Who the connection becomes on success (`None`: no such entry).
    identity: Option<Identity>,
    /// The entry found, in the version the bind looked it up in.
    entry: Option<EntryId>,
    /// The account the failed-bind throttle counts this check under.
    account: Account,
    settings: PasswordSettings,
    /// The password policy of the account (`None`: none applies).
    policy: Option<BindPolicy>,
}

impl PasswordCheck {
    /// True when one of the stored values is of a slow scheme (argon2, PBKDF2, crypt), so
    /// the check must not run on a connection thread.
    pub fn is_slow(&self) -> bool {
        self.stored
            .iter()
            .take(password::MAX_VALUES_CHECKED)
            .any(|v| password::is_slow(v))
    }

    /// The entry the bind names, when it exists (the access check after the password
    /// check reads it without a second lookup).
    pub fn entry(&self) -> Option<EntryId> {
        self.entry
    }

    /// The account the failed-bind throttle counts this check under: the normalized bind
    /// DN (the empty one for a name too long to be an entry's).
    pub fn account(&self) -> Account {
        self.account
    }

    /// The account's password policy, taken out to be applied around the check
    /// ([`crate::auth::policy`]).
    pub fn take_policy(&mut self) -> Option<BindPolicy> {
        self.policy.take()
    }

    /// Checks the password: the identity, or `invalidCredentials` (49).
    pub fn run(self) -> Result<Identity, OpError> {
        match self.identity {
            Some(identity) if password::verify_any(&self.given, &self.stored, &self.settings) => Ok(identity),
            _ => Err(invalid_credentials()),
        }
    }
}

/// The one answer to a failed name/password bind, whatever failed.
fn invalid_credentials() -> OpError {
    OpError::new(ResultCode::INVALID_CREDENTIALS, "invalid credentials")
}

/// Runs a bind against `version` for a connection from `client`, which presented
/// `peer_cert` in its TLS handshake, the password check inline: the new identity, or the
/// error to answer.
pub fn bind(
    dir: &Directory,
    version: &Version,
    req: &BindRequest<'_>,
    client: &Client,
    peer_cert: Option<&CertificateDer<'_>>,
) -> Result<Identity, OpError> {
    match stage(dir, version, req, client, peer_cert, None)? {
        Staged::Done(identity, _) => Ok(identity),
        Staged::Check(mut check) => {
            if let Some(policy) = check.take_policy() {
                policy.check_lock()?;
            }
            check.run()
        }
    }
}

/// Makes the bind's decisions (see the module documentation) up to the password check.
pub fn stage(
    dir: &Directory,
    version: &Version,
    req: &BindRequest<'_>,
    client: &Client,
    peer_cert: Option<&CertificateDer<'_>>,
    last_base: Option<&LastBase>,
) -> Result<Staged, OpError> {
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
        } => {
            return sasl::bind(dir, version, mechanism, credentials, client, peer_cert)
                .map(|(identity, report)| Staged::Done(identity, report))
        }
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
                Ok(Staged::Done(Identity::Anonymous, PolicyReport::default()))
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
                Ok(Staged::Done(Identity::Anonymous, PolicyReport::default()))
            } else {
                Err(OpError::unwilling(
                    "unauthenticated bind (a DN with an empty password) is not allowed (RFC 4513 section 5.1.2)",
                ))
            }
        }
        (false, false) => {
            confidentiality::require_tls(dir, client, "a simple bind with a password")?;
            simple(dir, version, req.name, password_given, last_base).map(|c| Staged::Check(Box::new(c)))
        }
    }
}

/// A name/password bind: the lookup, and the check to run (also SASL PLAIN's). The
/// connection's last search base, when given, spares normalizing the part of the name
/// that repeats it.
pub(crate) fn simple(
    dir: &Directory,
    version: &Version,
    name: &[u8],
    given: &[u8],
    last_base: Option<&LastBase>,
) -> Result<PasswordCheck, OpError> {
    let mut check = PasswordCheck {
        given: given.to_vec(),
        stored: Vec::new(),
        identity: None,
        entry: None,
        account: dir.bind_throttle.account(""),
        settings: dir.config.password.clone(),
        policy: None,
    };
    if name.len() > MAX_BIND_DN_BYTES {
        return Ok(check);
    }
    let norm = match last_base {
        Some(cache) => cache.normalize_dn(name, &dir.schema),
        None => NormDn::from_text(name, &*dir.schema),
    }
    .map_err(|e| OpError::new(ResultCode::INVALID_DN_SYNTAX, format!("bind DN: {e}")))?;
    check.account = dir.bind_throttle.account(norm.as_str());
    let Some(id) = version.find(&norm) else {
        return Ok(check);
    };
    let Some(entry) = version.entry(id) else {
        return Ok(check);
    };
    check.stored = entry
        .attrs()
        .attribute(dir.user_password)
        .flat_map(|a| a.values.iter().map(<[u8]>::to_vec).collect::<Vec<_>>())
        .take(password::MAX_VALUES_CHECKED)
        .collect();
    let admin = norm == dir.admin_dn;
    check.policy = BindPolicy::read(dir, version, id, &norm);
    check.entry = Some(id);
    check.identity = Some(Identity::Dn {
        dn: version.dn(id),
        norm,
        admin,
    });
    Ok(check)
}
