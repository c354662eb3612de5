//! The subject of an X.509 certificate as LDAP sees it: its RDNs, their RFC 4514 string
//! form, and the value of one attribute. SASL EXTERNAL maps a client certificate to an
//! entry with these ([`crate::auth::sasl`]), by the rule `sasl.external_map` gives (whose
//! attribute names the configuration checks against [`ATTRIBUTE_NAMES`]); `crate::tls`
//! shows the server certificate's subject.
//!
//! A certificate lists its subject's RDNs from the most general (`C=`, `O=`) to the most
//! specific (`CN=`); RFC 4514 writes them the other way round. Values in the directory
//! string types (UTF8String, PrintableString, IA5String, NumericString, TeletexString taken
//! as Latin-1, BMPString, UniversalString) become text; a subject holding any other value
//! type cannot be mapped (its text form would be a `#` hex string no entry is named by).

use std::fmt::Write as _;

use x509_parser::der_parser::asn1_rs::Tag;
use x509_parser::prelude::{FromDer, X509Certificate};

/// Attribute names accepted in `sasl.external_map` placeholders and written in the RFC 4514
/// form of a subject, with their OIDs: RFC 4514's table, plus the ones certificates often
/// carry (RFC 4519 and PKCS #9 `emailAddress`).
pub const ATTRIBUTE_NAMES: &[(&str, &str)] = &[
    ("CN", "2.5.4.3"),
    ("SN", "2.5.4.4"),
    ("serialNumber", "2.5.4.5"),
    ("C", "2.5.4.6"),
    ("L", "2.5.4.7"),
    ("ST", "2.5.4.8"),
    ("STREET", "2.5.4.9"),
    ("O", "2.5.4.10"),
    ("OU", "2.5.4.11"),
    ("title", "2.5.4.12"),
    ("givenName", "2.5.4.42"),
    ("DC", "0.9.2342.19200300.100.1.25"),
    ("UID", "0.9.2342.19200300.100.1.1"),
    ("emailAddress", "1.2.840.113549.1.9.1"),
];

/// The OID of a placeholder name (case-insensitive) or of a dotted OID as written.
pub fn attribute_oid(name: &str) -> Option<String> {
    if let Some((_, oid)) = ATTRIBUTE_NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
        return Some((*oid).to_string());
    }
    let dotted = !name.is_empty()
        && name.split('.').count() >= 2
        && name
            .split('.')
            .all(|arc| !arc.is_empty() && arc.bytes().all(|b| b.is_ascii_digit()));
    dotted.then(|| name.to_string())
}

/// The name RFC 4514 output uses for `oid`, if it has one.
fn short_name(oid: &str) -> Option<&'static str> {
    ATTRIBUTE_NAMES.iter().find(|(_, o)| *o == oid).map(|(n, _)| *n)
}

/// One attribute of a subject RDN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectAttribute {
    /// The attribute type's OID, dotted.
    pub oid: String,
    /// The value as text.
    pub value: String,
}

/// A certificate's subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The RDNs in certificate order (most general first); each holds one or more
    /// attributes.
    pub rdns: Vec<Vec<SubjectAttribute>>,
}

impl Subject {
    /// The subject of the DER certificate `der`; the error says why it cannot be used.
    pub fn from_certificate(der: &[u8]) -> Result<Subject, String> {
        let (_, cert) =
            X509Certificate::from_der(der).map_err(|e| format!("the certificate does not parse: {e}"))?;
        let mut rdns = Vec::new();
        for rdn in cert.subject().iter() {
            let mut attrs = Vec::new();
            for atv in rdn.iter() {
                let oid = atv.attr_type().to_id_string();
                let any = atv.attr_value();
                let value = string_value(any.tag(), any.data).ok_or_else(|| {
                    format!("the subject attribute {oid} holds a value that is not a string")
                })?;
                attrs.push(SubjectAttribute { oid, value });
            }
            rdns.push(attrs);
        }
        Ok(Subject { rdns })
    }

    /// The subject as an RFC 4514 string: most specific RDN first, names from
    /// [`ATTRIBUTE_NAMES`] or dotted OIDs, values escaped.
    pub fn to_rfc4514(&self) -> String {
        let mut out = String::new();
        for (i, rdn) in self.rdns.iter().rev().enumerate() {
            if i > 0 {
                out.push(',');
            }
            for (j, a) in rdn.iter().enumerate() {
                if j > 0 {
                    out.push('+');
                }
                match short_name(&a.oid) {
                    Some(n) => out.push_str(n),
                    None => out.push_str(&a.oid),
                }
                out.push('=');
                out.push_str(&escape_value(&a.value));
            }
        }
        out
    }

    /// The value of the attribute `oid` in the most specific RDN that has it.
    pub fn value_of(&self, oid: &str) -> Option<&str> {
        self.rdns
            .iter()
            .rev()
            .flat_map(|rdn| rdn.iter())
            .find(|a| a.oid == oid)
            .map(|a| a.value.as_str())
    }
}

/// An attribute value of a directory string type as text; `None` for other types or
/// octets that are not text in their type's encoding.
fn string_value(tag: Tag, data: &[u8]) -> Option<String> {
    match tag {
        Tag::Utf8String | Tag::PrintableString | Tag::Ia5String | Tag::NumericString | Tag::VisibleString => {
            std::str::from_utf8(data).ok().map(str::to_string)
        }
        // T.61 is close enough to Latin-1 for the names certificates hold.
        Tag::TeletexString => Some(data.iter().map(|&b| char::from(b)).collect()),
        Tag::BmpString => {
            if data.len() % 2 != 0 {
                return None;
            }
            let units = data.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]]));
            char::decode_utf16(units).collect::<Result<String, _>>().ok()
        }
        Tag::UniversalString => {
            if data.len() % 4 != 0 {
                return None;
            }
            data.chunks_exact(4)
                .map(|c| char::from_u32(u32::from_be_bytes([c[0], c[1], c[2], c[3]])))
                .collect()
        }
        _ => None,
    }
}

/// Escapes an attribute value for an RFC 4514 string (section 2.4): `"`, `+`, `,`, `;`,
/// `<`, `>`, `\` and `=` with a backslash, a leading `#` or space and a trailing space
/// likewise, NUL and other control characters as `\XX`.
pub fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 4);
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        match c {
            '"' | '+' | ',' | ';' | '<' | '>' | '\\' | '=' => {
                out.push('\\');
                out.push(c);
            }
            '#' if i == 0 => out.push_str("\\#"),
            ' ' if i == 0 || i == last => out.push_str("\\ "),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(rdns: &[&[(&str, &str)]]) -> Subject {
        Subject {
            rdns: rdns
                .iter()
                .map(|rdn| {
                    rdn.iter()
                        .map(|(o, v)| SubjectAttribute {
                            oid: (*o).to_string(),
                            value: (*v).to_string(),
                        })
                        .collect()
                })
                .collect(),
        }
    }

    #[test]
    fn rfc4514_form_reverses_and_escapes() {
        let s = subject(&[
            &[("0.9.2342.19200300.100.1.25", "com")],
            &[("0.9.2342.19200300.100.1.25", "example")],
            &[("2.5.4.11", "people")],
            &[("2.5.4.3", "Smith, John"), ("0.9.2342.19200300.100.1.1", "js")],
        ]);
        assert_eq!(
            s.to_rfc4514(),
            "CN=Smith\\, John+UID=js,OU=people,DC=example,DC=com"
        );
        let s = subject(&[&[("1.2.3.4", "x")], &[("2.5.4.3", " #lead")]]);
        assert_eq!(s.to_rfc4514(), "CN=\\ #lead,1.2.3.4=x");
    }

    #[test]
    fn value_of_takes_the_most_specific() {
        let s = subject(&[
            &[("2.5.4.3", "outer")],
            &[("2.5.4.10", "o")],
            &[("2.5.4.3", "inner")],
        ]);
        assert_eq!(s.value_of("2.5.4.3"), Some("inner"));
        assert_eq!(s.value_of("2.5.4.10"), Some("o"));
        assert_eq!(s.value_of("2.5.4.11"), None);
    }

    #[test]
    fn escaping() {
        for (raw, escaped) in [
            ("plain", "plain"),
            ("a,b+c", "a\\,b\\+c"),
            ("#x", "\\#x"),
            ("x#", "x#"),
            (" a ", "\\ a\\ "),
            ("a\\b\"c;<d>=", "a\\\\b\\\"c\\;\\<d\\>\\="),
            ("nul\0", "nul\\00"),
            ("", ""),
            (" ", "\\ "),
        ] {
            assert_eq!(escape_value(raw), escaped, "{raw:?}");
        }
    }

    #[test]
    fn string_types() {
        assert_eq!(
            string_value(Tag::Utf8String, "é".as_bytes()).as_deref(),
            Some("é")
        );
        assert_eq!(string_value(Tag::TeletexString, &[0xe9]).as_deref(), Some("é"));
        assert_eq!(
            string_value(Tag::BmpString, &[0, 0x41, 0, 0xe9]).as_deref(),
            Some("Aé")
        );
        assert_eq!(string_value(Tag::BmpString, &[0, 0x41, 0]), None);
        assert_eq!(
            string_value(Tag::UniversalString, &[0, 0, 0, 0x41]).as_deref(),
            Some("A")
        );
        assert_eq!(string_value(Tag::Utf8String, &[0xff]), None);
        assert_eq!(string_value(Tag::OctetString, b"x"), None);
    }

    #[test]
    fn placeholder_names() {
        assert_eq!(attribute_oid("cn").as_deref(), Some("2.5.4.3"));
        assert_eq!(
            attribute_oid("EMAILADDRESS").as_deref(),
            Some("1.2.840.113549.1.9.1")
        );
        assert_eq!(attribute_oid("2.5.4.3").as_deref(), Some("2.5.4.3"));
        for bad in ["", "nosuch", "2", "2..5", "2.5.x", ".2.5"] {
            assert_eq!(attribute_oid(bad), None, "{bad}");
        }
    }
}
