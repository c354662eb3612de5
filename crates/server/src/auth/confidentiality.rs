//! The confidentiality policy (`[security] require_tls`): which connections must be
//! protected by TLS before they send a password or change the directory.
//!
//! [`require_tls`] is called at the top of every write (`write_preamble` in the session's
//! dispatch: Add, Delete, Modify, ModifyDN) and of every Bind that carries a password
//! (simple with a password, SASL PLAIN). It answers `confidentialityRequired` (13) when
//! the policy applies to the connection:
//! - a connection protected by TLS (`ldaps://`, or after StartTLS): never;
//! - `"never"`: never; `"always"`: always;
//! - `"remote"` (the default): unless the client connects over the loopback interface;
//! - a client without an address (operations run in-process, as in tests): never, there
//!   is no network to protect.
//!
//! Anonymous binds, unauthenticated binds (no password) and reads are not affected: slapd's
//! `security ssf=`/`simple_bind=`/`update_ssf=` settings make the same distinction.

use larch_proto::ResultCode;

use crate::client::Client;
use crate::config::RequireTls;
use crate::controls::OpKind;
use crate::directory::Directory;
use crate::error::OpError;

/// True when `policy` requires TLS of `client` and the connection is not protected.
pub fn applies(policy: RequireTls, client: &Client) -> bool {
    if client.tls || client.addr.is_none() {
        return false;
    }
    match policy {
        RequireTls::Always => true,
        RequireTls::Never => false,
        RequireTls::Remote => !client.is_loopback(),
    }
}

/// How a message names an operation of kind `kind` ("an Add").
pub fn what(kind: OpKind) -> &'static str {
    match kind {
        OpKind::Add => "an Add",
        OpKind::Delete => "a Delete",
        OpKind::Modify => "a Modify",
        OpKind::ModifyDn => "a ModifyDN",
        OpKind::Bind => "a Bind",
        OpKind::Search => "a Search",
        OpKind::Compare => "a Compare",
        OpKind::Extended => "an extended operation",
        OpKind::Other => "the operation",
    }
}

/// `Ok` when `client` may do `what` (e.g. "a simple bind with a password", "an Add") under
/// the configured policy, else `confidentialityRequired` (13) saying how to comply.
pub fn require_tls(dir: &Directory, client: &Client, what: &str) -> Result<(), OpError> {
    let policy = dir.config.security.require_tls;
    if !applies(policy, client) {
        return Ok(());
    }
    let why = match policy {
        RequireTls::Remote => "from another host",
        _ => "on this server",
    };
    Err(OpError::new(
        ResultCode::CONFIDENTIALITY_REQUIRED,
        format!(
            "{what} needs a connection protected by TLS {why}: use StartTLS (ldapsearch -ZZ) or an ldaps:// URL"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn client(addr: Option<&str>, tls: bool) -> Client {
        Client {
            addr: addr.map(|a| a.parse::<SocketAddr>().unwrap()),
            tls,
        }
    }

    #[test]
    fn policy_table() {
        let loopback = client(Some("127.0.0.1:5000"), false);
        let loopback6 = client(Some("[::1]:5000"), false);
        let remote = client(Some("192.0.2.7:5000"), false);
        let remote_tls = client(Some("192.0.2.7:5000"), true);
        let local = client(None, false);
        for (policy, c, expected) in [
            (RequireTls::Remote, &loopback, false),
            (RequireTls::Remote, &loopback6, false),
            (RequireTls::Remote, &remote, true),
            (RequireTls::Remote, &remote_tls, false),
            (RequireTls::Always, &loopback, true),
            (RequireTls::Always, &remote, true),
            (RequireTls::Always, &remote_tls, false),
            (RequireTls::Always, &local, false),
            (RequireTls::Never, &remote, false),
            (RequireTls::Never, &loopback, false),
        ] {
            assert_eq!(applies(policy, c), expected, "{policy:?} {c:?}");
        }
    }
}
