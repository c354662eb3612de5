//! `[tls]`: the server's certificate and key, and what it asks of clients' certificates.
//!
//! The table is optional: without it the server has no TLS (`ldaps://` listeners are
//! refused, StartTLS answers `unavailable`). With it, `certificate` and `key` are required;
//! both are PEM files (the chain, leaf first; one private key in PKCS#8, PKCS#1 or SEC1
//! form). `client_ca` names the CAs whose client certificates are accepted, and
//! `client_certificates` says whether one is asked for: `"none"` (never), `"request"`
//! (asked for, optional: a client without one still connects, but cannot bind with SASL
//! EXTERNAL), `"require"` (the handshake fails without a valid one). TLS 1.2 and 1.3 are
//! both offered.
//!
//! Relative paths are taken from the configuration file's directory, as `server.data_dir`
//! (see [`super::ServerConfig::load`]). The files are read when the server starts and on
//! SIGHUP ([`crate::tls`]), not when the configuration is parsed, so a configuration can be
//! checked on another machine.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{ConfigError, ListenUrl};

/// `[tls]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTls {
    pub certificate: Option<String>,
    pub key: Option<String>,
    pub client_ca: Option<String>,
    pub client_certificates: Option<String>,
}

/// Whether the server asks for a client certificate during the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientCertificates {
    /// Never asked for.
    #[default]
    None,
    /// Asked for; a client without one still connects.
    Request,
    /// Asked for; the handshake fails without a certificate issued by `client_ca`.
    Require,
}

/// `[tls]`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// The certificate chain (PEM, leaf first).
    pub certificate: PathBuf,
    /// The private key of the leaf certificate (PEM).
    pub key: PathBuf,
    /// CA certificates (PEM) that issue the client certificates the server accepts.
    pub client_ca: Option<PathBuf>,
    /// Whether a client certificate is asked for.
    pub client_certificates: ClientCertificates,
}

impl TlsSettings {
    /// True when clients may present certificates the server verifies (a CA file, and
    /// `client_certificates` other than `"none"`): what SASL EXTERNAL needs.
    pub fn verifies_client_certificates(&self) -> bool {
        self.client_ca.is_some() && self.client_certificates != ClientCertificates::None
    }

    /// Takes relative paths from `base` (the configuration file's directory).
    pub(crate) fn resolve_paths(&mut self, base: &Path) {
        self.certificate = base.join(&self.certificate);
        self.key = base.join(&self.key);
        if let Some(ca) = &mut self.client_ca {
            *ca = base.join(&*ca);
        }
    }

    /// Converts the table as written.
    pub(crate) fn from_raw(raw: RawTls) -> Result<TlsSettings, ConfigError> {
        let path = |key: &str, v: Option<String>| -> Result<PathBuf, ConfigError> {
            match v {
                Some(p) if !p.is_empty() => Ok(PathBuf::from(p)),
                Some(_) => Err(ConfigError::invalid(format!("tls.{key}"), "must not be empty")),
                None => Err(ConfigError::invalid(
                    format!("tls.{key}"),
                    "required when the [tls] table is present (a PEM file)",
                )),
            }
        };
        let certificate = path("certificate", raw.certificate)?;
        let key = path("key", raw.key)?;
        let client_ca = match raw.client_ca {
            Some(ca) => Some(path("client_ca", Some(ca))?),
            None => None,
        };
        let client_certificates = match raw.client_certificates.as_deref() {
            None => {
                if client_ca.is_some() {
                    ClientCertificates::Request
                } else {
                    ClientCertificates::None
                }
            }
            Some("none") => ClientCertificates::None,
            Some("request") => ClientCertificates::Request,
            Some("require") => ClientCertificates::Require,
            Some(other) => {
                return Err(ConfigError::invalid(
                    "tls.client_certificates",
                    format!("`{other}`: expected \"none\", \"request\" or \"require\""),
                ))
            }
        };
        let settings = TlsSettings {
            certificate,
            key,
            client_ca,
            client_certificates,
        };
        settings.validate()?;
        Ok(settings)
    }

    /// Checks what does not need the files: a client certificate mode needs a CA.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if self.client_ca.is_none() && self.client_certificates != ClientCertificates::None {
            return Err(ConfigError::invalid(
                "tls.client_certificates",
                "asking for client certificates needs `tls.client_ca` (the CAs that issue them)",
            ));
        }
        Ok(())
    }
}

/// Refuses an `ldaps://` listener without `[tls]`, and checks `[tls]` itself.
pub(crate) fn check_listeners(listen: &[ListenUrl], tls: Option<&TlsSettings>) -> Result<(), ConfigError> {
    match tls {
        Some(t) => t.validate(),
        None => match listen.iter().position(|u| u.tls) {
            Some(i) => Err(ConfigError::invalid(
                format!("server.listen[{i}]"),
                format!(
                    "`{}` needs TLS: add a [tls] table with the certificate and key (or run with --demo-tls)",
                    listen[i]
                ),
            )),
            None => Ok(()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(cert: Option<&str>, key: Option<&str>, ca: Option<&str>, mode: Option<&str>) -> RawTls {
        RawTls {
            certificate: cert.map(str::to_string),
            key: key.map(str::to_string),
            client_ca: ca.map(str::to_string),
            client_certificates: mode.map(str::to_string),
        }
    }

    #[test]
    fn modes_and_defaults() {
        let t = TlsSettings::from_raw(raw(Some("c.pem"), Some("k.pem"), None, None)).unwrap();
        assert_eq!(t.client_certificates, ClientCertificates::None);
        assert!(!t.verifies_client_certificates());
        let t = TlsSettings::from_raw(raw(Some("c.pem"), Some("k.pem"), Some("ca.pem"), None)).unwrap();
        assert_eq!(t.client_certificates, ClientCertificates::Request);
        assert!(t.verifies_client_certificates());
        let t = TlsSettings::from_raw(raw(Some("c"), Some("k"), Some("ca"), Some("require"))).unwrap();
        assert_eq!(t.client_certificates, ClientCertificates::Require);
        let t = TlsSettings::from_raw(raw(Some("c"), Some("k"), Some("ca"), Some("none"))).unwrap();
        assert!(!t.verifies_client_certificates());
    }

    #[test]
    fn refusals_name_the_key() {
        for (r, key) in [
            (raw(None, Some("k"), None, None), "tls.certificate"),
            (raw(Some("c"), None, None, None), "tls.key"),
            (raw(Some(""), Some("k"), None, None), "tls.certificate"),
            (raw(Some("c"), Some("k"), Some(""), None), "tls.client_ca"),
            (
                raw(Some("c"), Some("k"), None, Some("require")),
                "tls.client_certificates",
            ),
            (
                raw(Some("c"), Some("k"), Some("ca"), Some("always")),
                "tls.client_certificates",
            ),
        ] {
            let e = TlsSettings::from_raw(r).unwrap_err();
            assert_eq!(e.key(), Some(key), "{e}");
        }
    }

    #[test]
    fn relative_paths_follow_the_base() {
        let mut t =
            TlsSettings::from_raw(raw(Some("c.pem"), Some("/abs/k.pem"), Some("ca.pem"), None)).unwrap();
        t.resolve_paths(Path::new("/etc/larch"));
        assert_eq!(t.certificate, PathBuf::from("/etc/larch/c.pem"));
        assert_eq!(t.key, PathBuf::from("/abs/k.pem"));
        assert_eq!(t.client_ca, Some(PathBuf::from("/etc/larch/ca.pem")));
    }
}
