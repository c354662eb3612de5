//! Schema-aware DN normalization and the normalized form, [`NormDn`].

use std::fmt;

use super::escape::push_key;
use super::{Ava, Dn, DnError};
use crate::matching::MatchingRule;
use crate::syntax::Syntax;

/// What DN normalization needs to know of an attribute type.
#[derive(Debug, Clone, Copy)]
pub struct DnAttribute<'a> {
    /// The name used in normalized DNs: the type's first NAME (or its OID when it has
    /// none). It is lower-cased when written.
    pub canonical: &'a str,
    /// The equality rule whose keys name the entry.
    pub equality: Option<&'static MatchingRule>,
    /// The syntax values must follow.
    pub syntax: Option<&'static Syntax>,
}

/// The schema as DN normalization sees it: attribute types by name, alias or OID.
pub trait DnSchema {
    /// Looks up an attribute type; names are case-insensitive.
    fn dn_attribute(&self, name_or_oid: &str) -> Option<DnAttribute<'_>>;
}

/// A normalized DN: `type=key` pairs, lower-case canonical types, equality keys escaped so
/// that a literal `,` or `+` is always a separator, multi-valued RDNs sorted. Equal exactly
/// when two DNs name the same entry; compact enough to be the store's map key.
///
/// ```
/// use larch_model::dn::NormDn;
/// use larch_model::schema::Schema;
/// let schema = Schema::builtin().unwrap();
/// let (_, a) = NormDn::parse(b"CN=Babs  Jensen, DC=Example,DC=COM", &schema).unwrap();
/// let (_, b) = NormDn::parse(b"2.5.4.3=babs jensen,dc=example,dc=com", &schema).unwrap();
/// assert_eq!(a, b);
/// assert_eq!(a.as_str(), "cn=babs jensen,dc=example,dc=com");
/// assert!(NormDn::parse(b"dc=com", &schema).unwrap().1.is_ancestor_of(&a));
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct NormDn(Box<str>);

impl NormDn {
    /// The root DSE's (empty) DN.
    pub fn root() -> Self {
        NormDn::default()
    }

    /// Normalizes a parsed DN through the schema: every attribute type must be known and
    /// have an equality rule, and every value must follow the type's syntax.
    pub fn normalize(dn: &Dn, schema: &impl DnSchema) -> Result<NormDn, DnError> {
        let mut out = String::with_capacity(64);
        let mut avas: Vec<(String, Vec<u8>)> = Vec::new();
        for (i, rdn) in dn.rdns.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            avas.clear();
            for ava in &rdn.avas {
                avas.push(normalize_ava(ava, schema)?);
            }
            avas.sort();
            if avas.windows(2).any(|w| w[0] == w[1]) {
                return Err(DnError::new(
                    0,
                    format!("RDN `{rdn}` repeats the same attribute value"),
                ));
            }
            for (j, (attr, key)) in avas.iter().enumerate() {
                if j > 0 {
                    out.push('+');
                }
                out.push_str(attr);
                out.push('=');
                push_key(&mut out, key);
            }
        }
        Ok(NormDn(out.into_boxed_str()))
    }

    /// Parses and normalizes in one step.
    pub fn parse(input: &[u8], schema: &impl DnSchema) -> Result<(Dn, NormDn), DnError> {
        let dn = Dn::parse(input)?;
        let norm = Self::normalize(&dn, schema)?;
        Ok((dn, norm))
    }

    /// Wraps a string that is already a normalized DN (e.g. read back from the store's own
    /// files, or a suffix of a `NormDn`).
    pub fn from_normalized(s: &str) -> NormDn {
        NormDn(s.into())
    }

    /// The normalized string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for the root DSE.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The parent's normalized string (`""` for a top-level entry); `None` for the root.
    pub fn parent_str(&self) -> Option<&str> {
        if self.is_root() {
            return None;
        }
        Some(self.0.find(',').map_or("", |i| &self.0[i + 1..]))
    }

    /// The parent; `None` for the root.
    pub fn parent(&self) -> Option<NormDn> {
        self.parent_str().map(NormDn::from_normalized)
    }

    /// The first (leaf) RDN, e.g. `uid=user.1`; empty for the root.
    pub fn rdn(&self) -> &str {
        self.0.find(',').map_or(&self.0, |i| &self.0[..i])
    }

    /// Number of RDNs (0 for the root).
    pub fn depth(&self) -> usize {
        if self.is_root() {
            0
        } else {
            1 + self.0.bytes().filter(|&b| b == b',').count()
        }
    }

    /// True when `self` is a strict ancestor of `other` (the root is the ancestor of every
    /// other DN).
    pub fn is_ancestor_of(&self, other: &NormDn) -> bool {
        let (a, b) = (self.as_str(), other.as_str());
        if a.is_empty() {
            return !b.is_empty();
        }
        b.len() > a.len() && b.ends_with(a) && b.as_bytes()[b.len() - a.len() - 1] == b','
    }

    /// True when `self` is `other` or below it.
    pub fn is_within(&self, other: &NormDn) -> bool {
        self == other || other.is_ancestor_of(self)
    }

    /// True when `self` is an immediate child of `other`.
    pub fn is_child_of(&self, other: &NormDn) -> bool {
        self.parent_str() == Some(other.as_str())
    }
}

impl fmt::Display for NormDn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for NormDn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NormDn({:?})", &*self.0)
    }
}

fn normalize_ava(ava: &Ava, schema: &impl DnSchema) -> Result<(String, Vec<u8>), DnError> {
    let attr = schema
        .dn_attribute(&ava.attr)
        .ok_or_else(|| DnError::new(0, format!("`{}` is not a known attribute type", ava.attr)))?;
    let value = if ava.hex {
        ber_string_contents(&ava.value)
    } else {
        &ava.value[..]
    };
    if let Some(syntax) = attr.syntax {
        if !syntax.validate(value) {
            return Err(DnError::new(
                0,
                format!(
                    "the value of `{}` is not valid for its syntax ({})",
                    ava.attr, syntax.description
                ),
            ));
        }
    }
    let rule = attr.equality.ok_or_else(|| {
        DnError::new(
            0,
            format!(
                "`{}` has no equality matching rule, so it cannot name an entry",
                ava.attr
            ),
        )
    })?;
    let mut key = Vec::with_capacity(value.len());
    rule.normalize(value, &mut key)
        .map_err(|e| DnError::new(0, format!("the value of `{}` cannot be matched: {e}", ava.attr)))?;
    Ok((attr.canonical.to_ascii_lowercase(), key))
}

/// A `#hex` value is the BER encoding of the value (RFC 4514 section 2.4). For the string
/// types the value is the contents; anything else is compared as the whole encoding.
fn ber_string_contents(ber: &[u8]) -> &[u8] {
    // OCTET STRING, UTF8String, PrintableString, T61String, IA5String, UniversalString and
    // BMPString would all be strings; only the single-octet-per-character ones are taken
    // apart here, the rest stay whole.
    const STRING_TAGS: [u8; 5] = [0x04, 0x0c, 0x13, 0x14, 0x16];
    match ber {
        [t, len, rest @ ..] if STRING_TAGS.contains(t) && usize::from(*len) == rest.len() && *len < 0x80 => {
            rest
        }
        _ => ber,
    }
}

impl DnSchema for crate::schema::Schema {
    fn dn_attribute(&self, name_or_oid: &str) -> Option<DnAttribute<'_>> {
        let t = self.attribute_type(name_or_oid)?;
        Some(DnAttribute {
            canonical: t.name(),
            equality: t.equality,
            syntax: Some(t.syntax),
        })
    }
}
