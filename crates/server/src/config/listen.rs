//! Listen addresses: `ldap://host:port` and `ldaps://host:port` URLs.
//!
//! The host is an IPv4 address, a DNS name, or an IPv6 address in brackets
//! (`ldaps://[::1]:3636`). The port defaults to 389 for `ldap://` and 636 for `ldaps://`, as
//! in RFC 4516 LDAP URLs. A path other than `/`, a query, user information or any other
//! scheme (including `ldapi://`, not supported yet) is refused.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Longest host name accepted (RFC 1035's limit on a DNS name).
const MAX_HOST_LEN: usize = 253;

/// One address the server listens on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ListenUrl {
    /// `ldaps://`: TLS from the first byte. `ldap://` listeners offer StartTLS instead.
    pub tls: bool,
    /// The host: an IP address (IPv6 without its brackets) or a DNS name.
    pub host: String,
    /// The TCP port (never 0).
    pub port: u16,
}

impl ListenUrl {
    /// Parses a listen URL; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<ListenUrl, String> {
        let (tls, rest) = if let Some(rest) = strip_prefix_ci(text, "ldap://") {
            (false, rest)
        } else if let Some(rest) = strip_prefix_ci(text, "ldaps://") {
            (true, rest)
        } else if strip_prefix_ci(text, "ldapi://").is_some() {
            return Err(format!("`{text}`: ldapi:// (Unix sockets) is not supported"));
        } else {
            return Err(format!("`{text}` is not an ldap:// or ldaps:// URL"));
        };
        let authority = match rest.find('/') {
            Some(i) if &rest[i..] == "/" => &rest[..i],
            Some(_) => return Err(format!("`{text}`: a listen URL has no path, query or DN")),
            None => rest,
        };
        if authority.contains(['@', '?', '#']) {
            return Err(format!("`{text}`: a listen URL has only a host and a port"));
        }
        let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
            let Some(end) = inner.find(']') else {
                return Err(format!("`{text}`: `[` without `]` around the IPv6 address"));
            };
            let addr = &inner[..end];
            if addr.parse::<Ipv6Addr>().is_err() {
                return Err(format!("`{text}`: `{addr}` is not an IPv6 address"));
            }
            let after = &inner[end + 1..];
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(format!("`{text}`: expected `:port` after the IPv6 address")),
            };
            (addr.to_string(), port)
        } else {
            let (host, port) = match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            };
            if host.contains(':') {
                return Err(format!(
                    "`{text}`: an IPv6 address must be written in brackets, `[::1]`"
                ));
            }
            check_host(text, host)?;
            (host.to_ascii_lowercase(), port)
        };
        let port = match port {
            None => {
                if tls {
                    636
                } else {
                    389
                }
            }
            Some(p) => match p.parse::<u16>() {
                Ok(0) => return Err(format!("`{text}`: port 0 is not a fixed port")),
                Ok(n) if p.bytes().all(|b| b.is_ascii_digit()) => n,
                _ => return Err(format!("`{text}`: `{p}` is not a port (1 to 65535)")),
            },
        };
        Ok(ListenUrl { tls, host, port })
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &s[prefix.len()..])
}

fn check_host(text: &str, host: &str) -> Result<(), String> {
    if host.is_empty() {
        return Err(format!(
            "`{text}`: no host (write 0.0.0.0 or [::] for every address)"
        ));
    }
    if host.parse::<Ipv4Addr>().is_ok() {
        return Ok(());
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    if host.len() > MAX_HOST_LEN || !host.split('.').all(label_ok) {
        return Err(format!("`{text}`: `{host}` is not a host name or IPv4 address"));
    }
    Ok(())
}

impl fmt::Display for ListenUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "ldaps" } else { "ldap" };
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
    fn accepts_and_round_trips() {
        for (text, tls, host, port) in [
            ("ldap://127.0.0.1:3389", false, "127.0.0.1", 3389),
            ("ldaps://[::1]:3636", true, "::1", 3636),
            ("LDAP://Ldap.Example.com", false, "ldap.example.com", 389),
            ("ldaps://0.0.0.0/", true, "0.0.0.0", 636),
            ("ldap://[::]", false, "::", 389),
        ] {
            let u = ListenUrl::parse(text).unwrap();
            assert_eq!((u.tls, u.host.as_str(), u.port), (tls, host, port), "{text}");
            assert_eq!(ListenUrl::parse(&u.to_string()), Ok(u));
        }
    }

    #[test]
    fn refuses() {
        for bad in [
            "",
            "http://h:1",
            "ldapi://%2Frun%2Fldap",
            "ldap://",
            "ldap://:389",
            "ldap://h:0",
            "ldap://h:65536",
            "ldap://h:+1",
            "ldap://::1:389",
            "ldap://[::1",
            "ldap://[zz]:1",
            "ldap://[::1]x",
            "ldap://h:389/dc=x",
            "ldap://u@h:389",
            "ldap://bad_host:1",
            "ldap://-a.b:1",
        ] {
            assert!(ListenUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
