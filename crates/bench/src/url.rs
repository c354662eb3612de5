//! `ldap://host:port/` URLs (RFC 4516, the scheme, host and port only).

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdapUrl {
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
}

/// Why a URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// `ldaps://` (and StartTLS) are not implemented by the load client yet.
    #[error("ldaps:// is not supported by `larch bench` yet (plain ldap:// only)")]
    TlsNotSupported,
    /// `ldapi://` (Unix sockets) is not supported.
    #[error("ldapi:// is not supported by `larch bench` (use ldap://host:port)")]
    UnixNotSupported,
    /// Anything else.
    #[error("invalid LDAP URL `{0}` (expected ldap://host[:port][/])")]
    Invalid(String),
}

impl LdapUrl {
    /// Parses `ldap://host[:port][/...]`; the port defaults to 389. Only the scheme, host and
    /// port are read; a DN, attributes or filter after the `/` are refused.
    ///
    /// ```
    /// use larch_bench::url::LdapUrl;
    /// let u = LdapUrl::parse("ldap://127.0.0.1:3890/").unwrap();
    /// assert_eq!((u.host.as_str(), u.port), ("127.0.0.1", 3890));
    /// assert_eq!(LdapUrl::parse("ldap://[::1]").unwrap().port, 389);
    /// assert!(LdapUrl::parse("ldaps://x").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Self, UrlError> {
        let invalid = || UrlError::Invalid(s.to_string());
        let lower = s.to_ascii_lowercase();
        if lower.starts_with("ldaps://") {
            return Err(UrlError::TlsNotSupported);
        }
        if lower.starts_with("ldapi://") {
            return Err(UrlError::UnixNotSupported);
        }
        if !lower.starts_with("ldap://") {
            return Err(invalid());
        }
        let rest = &s["ldap://".len()..];
        let (hostport, path) = rest.split_once('/').unwrap_or((rest, ""));
        if !path.is_empty() {
            return Err(invalid());
        }
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(invalid)?;
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(invalid()),
            };
            (h, port)
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        let port = match port {
            Some(p) => p.parse::<u16>().ok().filter(|&p| p != 0).ok_or_else(invalid)?,
            None => 389,
        };
        let host = if host.is_empty() { "localhost" } else { host };
        Ok(LdapUrl {
            host: host.to_string(),
            port,
        })
    }
}

impl std::fmt::Display for LdapUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "ldap://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "ldap://{}:{}", self.host, self.port)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let p = |s| LdapUrl::parse(s);
        assert_eq!(
            p("ldap://h").unwrap(),
            LdapUrl {
                host: "h".into(),
                port: 389
            }
        );
        assert_eq!(p("LDAP://h:1/").unwrap().port, 1);
        assert_eq!(p("ldap://").unwrap().host, "localhost");
        assert_eq!(
            p("ldap://[::1]:636").unwrap(),
            LdapUrl {
                host: "::1".into(),
                port: 636
            }
        );
        assert_eq!(p("ldap://[::1]:636").unwrap().to_string(), "ldap://[::1]:636");
        assert_eq!(p("ldaps://h"), Err(UrlError::TlsNotSupported));
        assert_eq!(p("ldapi:///"), Err(UrlError::UnixNotSupported));
        for bad in [
            "http://h",
            "ldap://h:0",
            "ldap://h:99999",
            "ldap://h:x",
            "ldap://h/dc=x",
            "ldap://[::1",
        ] {
            assert!(matches!(p(bad), Err(UrlError::Invalid(_))), "{bad}");
        }
    }
}
