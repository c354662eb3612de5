//! `ldap://host:port/` and `ldaps://host:port/` URLs (RFC 4516, the scheme, host and port
//! only). The port defaults to 389 for `ldap://` and 636 for `ldaps://`; an IPv6 address is
//! written in brackets and kept without them.

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdapUrl {
    /// `ldaps://`: TLS from the first octet.
    pub ldaps: bool,
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
}

/// Why a URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// `ldapi://` (Unix sockets) is not supported.
    #[error("ldapi:// is not supported by `larch bench` (use ldap://host:port)")]
    UnixNotSupported,
    /// Anything else.
    #[error("invalid LDAP URL `{0}` (expected ldap://host[:port][/] or ldaps://host[:port][/])")]
    Invalid(String),
}

impl LdapUrl {
    /// Parses `ldap://host[:port][/]` (port 389 by default) or `ldaps://host[:port][/]`
    /// (port 636). Only the scheme, host and port are read; a DN, attributes or filter after
    /// the `/` are refused.
    ///
    /// ```
    /// use larch_bench::url::LdapUrl;
    /// let u = LdapUrl::parse("ldap://127.0.0.1:3890/").unwrap();
    /// assert_eq!((u.host.as_str(), u.port, u.ldaps), ("127.0.0.1", 3890, false));
    /// assert_eq!(LdapUrl::parse("ldap://[::1]").unwrap().port, 389);
    /// assert_eq!(LdapUrl::parse("ldaps://x").unwrap().port, 636);
    /// ```
    pub fn parse(s: &str) -> Result<Self, UrlError> {
        let invalid = || UrlError::Invalid(s.to_string());
        let lower = s.to_ascii_lowercase();
        if lower.starts_with("ldapi://") {
            return Err(UrlError::UnixNotSupported);
        }
        let (ldaps, rest) = if lower.starts_with("ldaps://") {
            (true, s.get("ldaps://".len()..).ok_or_else(invalid)?)
        } else if lower.starts_with("ldap://") {
            (false, s.get("ldap://".len()..).ok_or_else(invalid)?)
        } else {
            return Err(invalid());
        };
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
            None if ldaps => 636,
            None => 389,
        };
        let host = if host.is_empty() { "localhost" } else { host };
        Ok(LdapUrl {
            ldaps,
            host: host.to_string(),
            port,
        })
    }
}

impl std::fmt::Display for LdapUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.ldaps { "ldaps" } else { "ldap" };
        if self.host.contains(':') {
            write!(f, "{scheme}://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{scheme}://{}:{}", self.host, self.port)
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
                ldaps: false,
                host: "h".into(),
                port: 389
            }
        );
        assert_eq!(p("LDAP://h:1/").unwrap().port, 1);
        assert_eq!(p("ldap://").unwrap().host, "localhost");
        assert_eq!(
            p("ldap://[::1]:636").unwrap(),
            LdapUrl {
                ldaps: false,
                host: "::1".into(),
                port: 636
            }
        );
        assert_eq!(p("ldap://[::1]:636").unwrap().to_string(), "ldap://[::1]:636");
        assert_eq!(
            p("ldaps://h").unwrap(),
            LdapUrl {
                ldaps: true,
                host: "h".into(),
                port: 636
            }
        );
        assert_eq!(p("LDAPS://h:6360/").unwrap().port, 6360);
        assert_eq!(
            p("ldaps://[2001:db8::1]").unwrap(),
            LdapUrl {
                ldaps: true,
                host: "2001:db8::1".into(),
                port: 636
            }
        );
        assert_eq!(
            p("ldaps://[::1]:1636/").unwrap().to_string(),
            "ldaps://[::1]:1636"
        );
        assert_eq!(p("ldaps://").unwrap().to_string(), "ldaps://localhost:636");
        assert_eq!(p("ldapi:///"), Err(UrlError::UnixNotSupported));
        for bad in [
            "http://h",
            "ldap://h:0",
            "ldap://h:99999",
            "ldap://h:x",
            "ldap://h/dc=x",
            "ldap://[::1",
            "ldaps://h:0",
            "ldaps://h/dc=x",
            "ldaps://[::1]x",
            "ldaps:/h",
        ] {
            assert!(matches!(p(bad), Err(UrlError::Invalid(_))), "{bad}");
        }
    }
}
