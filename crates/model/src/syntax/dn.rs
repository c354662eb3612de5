//! A small RFC 4514 DN reader for the DN syntax (1.3.6.1.4.1.1466.115.121.1.12) and the
//! schema-less `distinguishedNameMatch`. The `dn` module owns the real DN type; this one
//! exists so that syntaxes and matching rules do not depend on it.
//!
//! Accepted beyond RFC 4514 section 3, as OpenLDAP and most servers do: spaces around `=`,
//! `,` and `+`, and around the whole DN (unescaped leading and trailing spaces of a value
//! are not part of it). Refused: unescaped `"`, `;`, `<`, `>` and NUL in values, a `\`
//! not followed by a special character or two hex digits, values that are not UTF-8 after
//! unescaping, empty RDNs, attribute types that are neither a descriptor nor a numeric OID.

use super::text::{descr, numeric_oid};

/// Most attribute-value assertions accepted in one DN; bounds the work on hostile input.
pub(crate) const MAX_DN_AVAS: usize = 1024;

/// One attribute type and value of an RDN, unescaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ava<'a> {
    /// The type as written (a descriptor or a numeric OID).
    pub attr_type: &'a [u8],
    pub value: AvaValue,
    /// This AVA starts a new RDN (false: joined to the previous one by `+`).
    pub starts_rdn: bool,
}

/// The value of an AVA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AvaValue {
    /// A string value, unescaped; always valid UTF-8.
    String(Vec<u8>),
    /// A `#hexstring` value: the BER octets it encodes.
    Ber(Vec<u8>),
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn skip_spaces(v: &[u8], mut i: usize) -> usize {
    while v.get(i) == Some(&b' ') {
        i += 1;
    }
    i
}

/// Reads a DN into its AVAs, in the order written (most specific RDN first). The empty
/// DN (or only spaces) gives no AVAs.
pub(crate) fn parse_dn(v: &[u8]) -> Result<Vec<Ava<'_>>, &'static str> {
    let mut avas = Vec::new();
    let mut i = skip_spaces(v, 0);
    if i == v.len() {
        return Ok(avas);
    }
    let mut starts_rdn = true;
    loop {
        if avas.len() == MAX_DN_AVAS {
            return Err("too many attribute values in the DN");
        }
        // attributeType
        let type_start = i;
        while v
            .get(i)
            .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        {
            i += 1;
        }
        let attr_type = &v[type_start..i];
        if !(descr(attr_type) || numeric_oid(attr_type)) {
            return Err("an attribute type is neither a descriptor nor a numeric OID");
        }
        i = skip_spaces(v, i);
        if v.get(i) != Some(&b'=') {
            return Err("an attribute type is not followed by '='");
        }
        i = skip_spaces(v, i + 1);
        // attributeValue
        let value;
        if v.get(i) == Some(&b'#') {
            i += 1;
            let mut ber = Vec::new();
            while let Some(&h) = v.get(i) {
                let Some(hi) = hex_value(h) else { break };
                let Some(lo) = v.get(i + 1).copied().and_then(hex_value) else {
                    return Err("odd number of hex digits in a #hexstring value");
                };
                ber.push(hi << 4 | lo);
                i += 2;
            }
            if ber.is_empty() {
                return Err("an empty #hexstring value");
            }
            value = AvaValue::Ber(ber);
            i = skip_spaces(v, i);
        } else {
            let mut s = Vec::new();
            let mut significant_len = 0; // length of `s` up to its last escaped or non-space byte
            while let Some(&b) = v.get(i) {
                match b {
                    b',' | b'+' => break,
                    b'\\' => {
                        let next = v.get(i + 1).copied();
                        match next {
                            Some(
                                c @ (b' ' | b'"' | b'#' | b'+' | b',' | b';' | b'<' | b'=' | b'>' | b'\\'),
                            ) => {
                                s.push(c);
                                i += 2;
                            }
                            Some(h) => {
                                let (Some(hi), Some(lo)) =
                                    (hex_value(h), v.get(i + 2).copied().and_then(hex_value))
                                else {
                                    return Err("a backslash is not followed by a special character or two hex digits");
                                };
                                s.push(hi << 4 | lo);
                                i += 3;
                            }
                            None => return Err("a DN ends with a backslash"),
                        }
                        significant_len = s.len();
                    }
                    b'"' | b';' | b'<' | b'>' | 0 => {
                        return Err("a DN value holds an unescaped '\"', ';', '<', '>' or NUL");
                    }
                    b' ' => {
                        s.push(b);
                        i += 1;
                    }
                    _ => {
                        s.push(b);
                        significant_len = s.len();
                        i += 1;
                    }
                }
            }
            s.truncate(significant_len);
            if std::str::from_utf8(&s).is_err() {
                return Err("a DN value is not UTF-8");
            }
            value = AvaValue::String(s);
        }
        avas.push(Ava {
            attr_type,
            value,
            starts_rdn,
        });
        match v.get(i) {
            None => return Ok(avas),
            Some(b',') => starts_rdn = true,
            Some(b'+') => starts_rdn = false,
            Some(_) => return Err("unexpected character after a #hexstring value"),
        }
        i = skip_spaces(v, i + 1);
        if i == v.len() {
            return Err("a DN ends with a separator");
        }
    }
}

/// DN syntax check.
pub(crate) fn distinguished_name(v: &[u8]) -> bool {
    parse_dn(v).is_ok()
}

/// Splits a Name and Optional UID (`distinguishedName [ SHARP BitString ]`) into the DN
/// and the bit string's digits. When the value ends like a bit string (`#'0101'B`) that
/// part is taken as the UID, as RFC 4517 3.3.21 intends, even though `#` may also appear
/// unescaped inside a DN value.
pub(crate) fn split_name_and_uid(v: &[u8]) -> (&[u8], Option<&[u8]>) {
    if v.ends_with(b"'B") {
        if let Some(hash) = v.windows(2).rposition(|w| w == b"#'") {
            if let Some(bits) = super::text::bit_string_digits(&v[hash + 1..]) {
                return (&v[..hash], Some(bits));
            }
        }
    }
    (v, None)
}

/// Name and Optional UID syntax check (.34).
pub(crate) fn name_and_optional_uid(v: &[u8]) -> bool {
    let (dn, _) = split_name_and_uid(v);
    distinguished_name(dn)
}

/// Decodes the contents of a BER string value (OCTET STRING, UTF8String, PrintableString,
/// IA5String, T61String, VisibleString with a definite length that covers the rest) if
/// they are UTF-8, so that `cn=#04024869` compares equal to `cn=Hi`. Other encodings
/// (BMPString, UniversalString, constructed forms) stay opaque.
pub(crate) fn ber_string_contents(ber: &[u8]) -> Option<&[u8]> {
    let (&tag, rest) = ber.split_first()?;
    if !matches!(tag, 0x04 | 0x0C | 0x13 | 0x14 | 0x16 | 0x1A) {
        return None;
    }
    let (&first, rest) = rest.split_first()?;
    let (len, content) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let mut len = 0usize;
        for &b in &rest[..n] {
            len = (len << 8) | usize::from(b);
        }
        (len, &rest[n..])
    };
    (content.len() == len && std::str::from_utf8(content).is_ok()).then_some(content)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(dn: &str) -> Vec<(String, bool)> {
        parse_dn(dn.as_bytes())
            .unwrap()
            .into_iter()
            .map(|a| {
                let v = match a.value {
                    AvaValue::String(s) => String::from_utf8(s).unwrap(),
                    AvaValue::Ber(b) => format!("#{}", b.len()),
                };
                (
                    format!("{}={}", String::from_utf8_lossy(a.attr_type), v),
                    a.starts_rdn,
                )
            })
            .collect()
    }

    #[test]
    fn reads_rfc4514_examples() {
        assert_eq!(
            values("UID=jsmith,DC=example,DC=net"),
            vec![
                ("UID=jsmith".into(), true),
                ("DC=example".into(), true),
                ("DC=net".into(), true)
            ]
        );
        assert_eq!(
            values("OU=Sales+CN=J.  Smith,DC=example,DC=net")[..2],
            [("OU=Sales".into(), true), ("CN=J.  Smith".into(), false)]
        );
        assert_eq!(
            values("CN=James \\\"Jim\\\" Smith\\, III")[0].0,
            "CN=James \"Jim\" Smith, III"
        );
        assert_eq!(values("CN=Before\\0dAfter")[0].0, "CN=Before\rAfter");
        assert_eq!(
            values("1.3.6.1.4.1.1466.0=#04024869")[0].0,
            "1.3.6.1.4.1.1466.0=#4"
        );
        assert_eq!(values("CN=Lu\\C4\\8Di\\C4\\87")[0].0, "CN=Lučić");
        assert_eq!(values(" cn = a b  , dc = x ")[0].0, "cn=a b");
        assert_eq!(values("cn=\\ a\\ ")[0].0, "cn= a ");
        assert!(values("").is_empty());
    }

    #[test]
    fn refuses() {
        for bad in [
            "cn", "cn=a,", "=a", "cn=a;b", "cn=a\\", "cn=\\zz", "cn=\\ff", "1cn=a", "cn=#0", "cn=#", ",cn=a",
        ] {
            assert!(parse_dn(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn name_and_uid() {
        assert_eq!(
            split_name_and_uid(b"cn=a#'0101'B"),
            (&b"cn=a"[..], Some(&b"0101"[..]))
        );
        assert_eq!(split_name_and_uid(b"cn=a"), (&b"cn=a"[..], None));
        assert!(name_and_optional_uid(
            b"1.3.6.1.4.1.1466.0=#04024869,O=Test,C=GB#'0101'B"
        ));
        assert!(!name_and_optional_uid(b"cn=a#'012'B,"));
    }
}
