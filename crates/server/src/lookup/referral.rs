//! Referrals (RFC 4511 section 4.1.10, RFC 3296 named subordinate references): an entry of
//! class `referral` whose `ref` values are LDAP URLs (RFC 4516) of the server holding the
//! subtree.
//!
//! Without the ManageDsaIT control, an operation whose target is a referral entry or lies
//! below one gets the result `referral` (10) with the entry's URLs and the referral entry's
//! DN as matchedDN: [`referral_above`] and [`referral_above_text`] for updates and compare,
//! `referral_error` for a search's base. A search meeting referral entries in its scope
//! sends SearchResultReference messages instead (`crate::search::referral`), with the URLs
//! rewritten here (`entry_uris`). With ManageDsaIT, referral entries are ordinary
//! entries.
//!
//! The URLs are rewritten as OpenLDAP's `referral_rewrite` does, in steps:
//! 1. a `ref` value is cut at its first space (the rest is a `labeledURI` label); empty
//!    values are dropped;
//! 2. a URL that is not `ldap://`, `ldaps://` or `ldapi://` is returned as it is; an LDAP
//!    URL that does not parse (bad escape, unknown scope) is dropped;
//! 3. the DN part: for a continuation reference, the URL's own DN if it has one, else the
//!    referral entry's DN; for a referral result about a target DN, the target, with the
//!    referral entry's DN at its end replaced by the URL's DN when the URL has one (so
//!    `ldap://b/ou=x,dc=other` on `ou=x,dc=example` sends `cn=y,ou=x,dc=example` to
//!    `cn=y,ou=x,dc=other`);
//! 4. the scope: the URL's own, else the search's (`base` for the references of a
//!    one-level search, `sub` for the others); none for updates;
//! 5. the URL is printed again: the DN with `?` and characters other than letters,
//!    digits and RFC 2396 marks percent-escaped, trailing empty parts left out.

use larch_model::dn::{Dn, NormDn};
use larch_model::schema::Schema;
use larch_proto::{ResultCode, SearchScope};
use larch_store::{EntryId, Lookup, Version};

use super::class::{nearest_in_class, ClassSet, IndexedClass};
use crate::error::OpError;

/// The referral result for an operation on `dn` (written `dn_text` by the client) when
/// `dn` is a referral entry or lies below one (the nearest such entry counts); `None`
/// otherwise, and when the schema has no `referral` class (`referral_class` is the
/// directory's). Callers skip this under ManageDsaIT. The URLs carry no scope.
pub fn referral_above(
    version: &Version,
    referral_class: Option<&IndexedClass>,
    dn: &NormDn,
    dn_text: &str,
) -> Option<OpError> {
    let referrals = ClassSet::new(version, referral_class)?;
    referral_at_or_above(version, &referrals, dn, dn_text, None)
}

/// [`referral_above`] for a DN as the client wrote it: `None` when it does not parse (the
/// operation then reports invalidDNSyntax itself). Only parsed, through `schema`, when
/// the directory holds a referral entry at all.
pub fn referral_above_text(
    version: &Version,
    referral_class: Option<&IndexedClass>,
    schema: &Schema,
    dn_text: &[u8],
) -> Option<OpError> {
    let referrals = ClassSet::new(version, referral_class)?;
    if referrals.is_known_empty() {
        return None;
    }
    let dn = NormDn::from_text(dn_text, schema).ok()?;
    referral_at_or_above(version, &referrals, &dn, &String::from_utf8_lossy(dn_text), None)
}

/// [`referral_above`] with the class set already resolved and a scope for the URLs.
pub(crate) fn referral_at_or_above(
    version: &Version,
    referrals: &ClassSet,
    dn: &NormDn,
    dn_text: &str,
    scope: Option<SearchScope>,
) -> Option<OpError> {
    if referrals.is_known_empty() {
        return None;
    }
    let start = match version.lookup(dn) {
        Lookup::Found(id) => id,
        Lookup::Missing { matched: Some(id) } => id,
        Lookup::Missing { matched: None } => return None,
    };
    let found = nearest_in_class(version, referrals, start, 0)?;
    Some(referral_error(version, found, Some(dn_text), scope))
}

/// The `referral` (10) result for referral entry `id` about `target` (or the entry itself).
pub(crate) fn referral_error(
    version: &Version,
    id: EntryId,
    target: Option<&str>,
    scope: Option<SearchScope>,
) -> OpError {
    let entry_dn = version.dn(id);
    let uris = entry_uris(version, id, target, scope);
    if uris.is_empty() {
        return OpError::new(
            ResultCode::OTHER,
            format!("referral entry `{entry_dn}` has no usable ref value"),
        )
        .with_matched(entry_dn);
    }
    OpError::referral(entry_dn, uris)
}

/// The rewritten `ref` values of referral entry `id`: about `target` for a referral
/// result, with `scope` added where the URL has none (see the module documentation).
pub(crate) fn entry_uris(
    version: &Version,
    id: EntryId,
    target: Option<&str>,
    scope: Option<SearchScope>,
) -> Vec<String> {
    let schema = version.schema();
    let (Some(entry), Some(ref_type)) = (version.entry(id), schema.attribute_type("ref")) else {
        return Vec::new();
    };
    let entry_dn = version.dn(id);
    let mut out = Vec::new();
    for a in entry.attrs().attribute(ref_type.id) {
        for v in a.values.iter() {
            let Ok(text) = std::str::from_utf8(v) else {
                continue;
            };
            let uri = text.trim_start().split(char::is_whitespace).next().unwrap_or("");
            if uri.is_empty() {
                continue;
            }
            if let Some(u) = rewrite_uri(uri, &entry_dn, target, scope, schema) {
                out.push(u);
            }
        }
    }
    out
}

/// The parts of an LDAP URL (RFC 4516): `scheme://hostport/dn?attrs?scope?filter?exts`.
struct LdapUrl<'a> {
    scheme: &'a str,
    hostport: &'a str,
    /// The DN, percent-decoded (empty when absent).
    dn: String,
    attrs: Option<&'a str>,
    scope: Option<SearchScope>,
    filter: Option<&'a str>,
    exts: Option<&'a str>,
}

/// Reads a scope as RFC 4516 and OpenLDAP write it.
fn parse_scope(s: &str) -> Option<SearchScope> {
    match s.to_ascii_lowercase().as_str() {
        "base" => Some(SearchScope::Base),
        "one" | "onelevel" => Some(SearchScope::OneLevel),
        "sub" | "subtree" => Some(SearchScope::Subtree),
        "subord" | "subordinate" | "children" => Some(SearchScope::Subordinate),
        _ => None,
    }
}

fn scope_name(scope: SearchScope) -> &'static str {
    match scope {
        SearchScope::Base => "base",
        SearchScope::OneLevel => "one",
        SearchScope::Subtree => "sub",
        SearchScope::Subordinate => "subordinate",
    }
}

/// Percent-decodes `s`; `None` for a bad escape or a result that is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Percent-escapes a URL's DN part as OpenLDAP's `hex_escape` does without flags: `?` and
/// every octet that is not a letter, a digit, `,`, `/` or one of `;:@&=+$-_.!~*'()`.
pub(crate) fn percent_escape(s: &str, out: &mut String) {
    for &b in s.as_bytes() {
        let keep = b.is_ascii_alphanumeric() || b",/;:@&=+$-_.!~*'()".contains(&b);
        if keep {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b >> 4)]));
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b & 15)]));
        }
    }
}

/// Splits an LDAP URL; `Err(())` for an LDAP URL that does not parse, `Ok(None)` for a URL
/// of another scheme.
#[allow(clippy::result_unit_err)]
fn parse_ldap_url(uri: &str) -> Result<Option<LdapUrl<'_>>, ()> {
    let Some((scheme, rest)) = uri.split_once("://") else {
        return Ok(None);
    };
    if !["ldap", "ldaps", "ldapi"]
        .iter()
        .any(|s| s.eq_ignore_ascii_case(scheme))
    {
        return Ok(None);
    }
    let (hostport, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], Some(&rest[i + 1..])),
        Some(_) => return Err(()),
        None => (rest, None),
    };
    let mut url = LdapUrl {
        scheme,
        hostport,
        dn: String::new(),
        attrs: None,
        scope: None,
        filter: None,
        exts: None,
    };
    let Some(path) = path else { return Ok(Some(url)) };
    let mut parts = path.splitn(5, '?');
    url.dn = percent_decode(parts.next().unwrap_or("")).ok_or(())?;
    url.attrs = parts.next();
    url.scope = match parts.next() {
        None | Some("") => None,
        Some(s) => Some(parse_scope(&percent_decode(s).ok_or(())?).ok_or(())?),
    };
    url.filter = parts.next();
    url.exts = parts.next();
    Ok(Some(url))
}

/// Whether two DNs name the same entry: normalized through the schema when both can be,
/// else compared as case-insensitive text (a remote server's DN may use types this schema
/// does not define).
fn same_dn(a: &str, b: &str, schema: &Schema) -> bool {
    match (
        NormDn::parse(a.as_bytes(), schema),
        NormDn::parse(b.as_bytes(), schema),
    ) {
        (Ok((_, x)), Ok((_, y))) => x == y,
        _ => a.eq_ignore_ascii_case(b),
    }
}

/// The DN of a rewritten URL (OpenLDAP's `referral_dn_muck`): see step 3 of the module
/// documentation. `None` drops the DN part.
fn rewrite_dn(url_dn: &str, entry_dn: &str, target: Option<&str>, schema: &Schema) -> Option<String> {
    let url_dn = if url_dn.is_empty() {
        None
    } else {
        // An unparsable DN in the URL is dropped, as OpenLDAP's dnPretty failure does.
        Some(Dn::parse(url_dn.as_bytes()).ok()?.to_string())
    };
    let Some(target) = target else {
        return Some(url_dn.unwrap_or_else(|| entry_dn.to_string()));
    };
    let Some(url_dn) = url_dn else {
        return Some(target.to_string());
    };
    if same_dn(&url_dn, entry_dn, schema) {
        return Some(target.to_string());
    }
    let (Ok(t), Ok((_, base_norm))) = (
        Dn::parse(target.as_bytes()),
        NormDn::parse(entry_dn.as_bytes(), schema),
    ) else {
        return Some(target.to_string());
    };
    let Some(extra) = t.rdns.len().checked_sub(base_norm.depth()) else {
        return Some(target.to_string());
    };
    let tail = Dn {
        rdns: t.rdns[extra..].to_vec(),
    };
    match NormDn::normalize(&tail, schema) {
        Ok(n) if n == base_norm => {}
        _ => return Some(target.to_string()),
    }
    let mut out = String::new();
    for rdn in &t.rdns[..extra] {
        out.push_str(&rdn.to_string());
        out.push(',');
    }
    out.push_str(&url_dn);
    Some(out)
}

/// Rewrites one `ref` URI (steps 2 to 5 of the module documentation): `entry_dn` is the
/// referral entry's DN, `target` the DN the operation named (None for a continuation
/// reference), `scope` the scope to add when the URL has none. `None` drops the URI.
pub fn rewrite_uri(
    uri: &str,
    entry_dn: &str,
    target: Option<&str>,
    scope: Option<SearchScope>,
    schema: &Schema,
) -> Option<String> {
    let url = match parse_ldap_url(uri) {
        Ok(Some(u)) => u,
        Ok(None) => return Some(uri.to_string()),
        Err(()) => return None,
    };
    let dn = rewrite_dn(&url.dn, entry_dn, target, schema).unwrap_or_default();
    let scope = url.scope.or(scope);
    let parts = if url.exts.is_some() {
        5
    } else if url.filter.is_some() {
        4
    } else if scope.is_some() {
        3
    } else if url.attrs.is_some() {
        2
    } else if !dn.is_empty() {
        1
    } else {
        0
    };
    let mut out = String::with_capacity(uri.len() + dn.len() + 8);
    out.push_str(&url.scheme.to_ascii_lowercase());
    out.push_str("://");
    out.push_str(url.hostport);
    if parts >= 1 {
        out.push('/');
        percent_escape(&dn, &mut out);
    }
    if parts >= 2 {
        out.push('?');
        out.push_str(url.attrs.unwrap_or(""));
    }
    if parts >= 3 {
        out.push('?');
        out.push_str(scope.map_or("", scope_name));
    }
    if parts >= 4 {
        out.push('?');
        out.push_str(url.filter.unwrap_or(""));
    }
    if parts >= 5 {
        out.push('?');
        out.push_str(url.exts.unwrap_or(""));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        Schema::builtin().unwrap()
    }

    #[test]
    fn continuation_takes_the_entry_dn_and_scope() {
        let s = schema();
        assert_eq!(
            rewrite_uri("ldap://h:389", "ou=x,dc=e", None, Some(SearchScope::Subtree), &s).unwrap(),
            "ldap://h:389/ou=x,dc=e??sub"
        );
        assert_eq!(
            rewrite_uri(
                "ldap://h/ou=y,dc=o",
                "ou=x,dc=e",
                None,
                Some(SearchScope::Base),
                &s
            )
            .unwrap(),
            "ldap://h/ou=y,dc=o??base"
        );
        assert_eq!(
            rewrite_uri(
                "ldap://h/ou=y,dc=o??one",
                "ou=x,dc=e",
                None,
                Some(SearchScope::Base),
                &s
            )
            .unwrap(),
            "ldap://h/ou=y,dc=o??one"
        );
    }

    #[test]
    fn target_below_the_referral_moves_to_the_url_dn() {
        let s = schema();
        assert_eq!(
            rewrite_uri(
                "ldap://h/ou=y,dc=o",
                "ou=x,dc=e",
                Some("cn=A B,ou=x,dc=e"),
                None,
                &s
            )
            .unwrap(),
            "ldap://h/cn=A%20B,ou=y,dc=o"
        );
        assert_eq!(
            rewrite_uri(
                "ldap://h/",
                "ou=x,dc=e",
                Some("cn=a,OU=X,dc=e"),
                Some(SearchScope::Subtree),
                &s
            )
            .unwrap(),
            "ldap://h/cn=a,OU=X,dc=e??sub"
        );
        assert_eq!(
            rewrite_uri(
                "ldap://h/OU=X,dc=e",
                "ou=x,dc=e",
                Some("cn=a,ou=x,dc=e"),
                None,
                &s
            )
            .unwrap(),
            "ldap://h/cn=a,ou=x,dc=e"
        );
    }

    #[test]
    fn other_schemes_pass_and_bad_urls_drop() {
        let s = schema();
        assert_eq!(
            rewrite_uri("http://x/y", "ou=x", None, Some(SearchScope::Subtree), &s).unwrap(),
            "http://x/y"
        );
        assert_eq!(rewrite_uri("ldap://h/%zz", "ou=x", None, None, &s), None);
        assert_eq!(rewrite_uri("ldap://h/dc=x??weird", "ou=x", None, None, &s), None);
    }
}
