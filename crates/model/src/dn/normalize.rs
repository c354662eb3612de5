//! Schema-aware DN normalization and the normalized form, [`NormDn`].

use std::fmt;
use std::ops::Range;

use super::escape::push_key;
use super::{parse, Dn, DnError};
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
        let mut n = Normalizer::new(schema);
        for rdn in &dn.rdns {
            for (j, ava) in rdn.avas.iter().enumerate() {
                n.ava(ava.attr.as_str(), &ava.value, ava.hex, j == 0)?;
            }
        }
        n.finish()
    }

    /// Parses and normalizes in one step.
    pub fn parse(input: &[u8], schema: &impl DnSchema) -> Result<(Dn, NormDn), DnError> {
        let dn = Dn::parse(input)?;
        let norm = Self::normalize(&dn, schema)?;
        Ok((dn, norm))
    }

    /// Parses and normalizes without building the [`Dn`]: the same result and errors as
    /// [`NormDn::parse`], for callers that need only the normalized form (a bind DN, a
    /// search base, an entry to look up). Values without escapes are not copied.
    ///
    /// ```
    /// use larch_model::dn::NormDn;
    /// use larch_model::schema::Schema;
    /// let schema = Schema::builtin().unwrap();
    /// let n = NormDn::from_text(b"UID=Babs+CN=B\\2c J, dc=Example", &schema).unwrap();
    /// assert_eq!(n, NormDn::parse(b"cn=b\\, j+uid=babs,dc=example", &schema).unwrap().1);
    /// assert_eq!(n.as_str(), "cn=b\\2c j+uid=babs,dc=example");
    /// ```
    pub fn from_text(input: &[u8], schema: &impl DnSchema) -> Result<NormDn, DnError> {
        let mut n = Normalizer::new(schema);
        // A syntax error anywhere in the text wins over a schema error (as in `parse`), so
        // the first schema error waits until the whole text has been read.
        let mut refused = None;
        parse::parse_with(input, |ava, starts_rdn| {
            if refused.is_none() {
                refused = n.ava(ava.attr, &ava.value, ava.hex, starts_rdn).err();
            }
            Ok(())
        })?;
        match refused {
            Some(e) => Err(e),
            None => n.finish(),
        }
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

/// Builds a normalized DN one AVA at a time. The AVAs of an RDN wait in `pending` (their
/// keys in `keys`) until the RDN is complete, since a multi-valued RDN is written sorted;
/// the buffers are reused from RDN to RDN, so a DN costs a few allocations, not a few per
/// AVA.
struct Normalizer<'s, S> {
    schema: &'s S,
    out: String,
    keys: Vec<u8>,
    /// The current RDN's AVAs: canonical type name and the range of its key in `keys`.
    pending: Vec<(&'s str, Range<usize>)>,
}

impl<'s, S: DnSchema> Normalizer<'s, S> {
    fn new(schema: &'s S) -> Self {
        Normalizer {
            schema,
            out: String::with_capacity(64),
            keys: Vec::with_capacity(64),
            pending: Vec::with_capacity(2),
        }
    }

    /// Takes the next AVA (`starts_rdn` for the first of an RDN).
    fn ava(&mut self, attr_text: &str, value: &[u8], hex: bool, starts_rdn: bool) -> Result<(), DnError> {
        if starts_rdn {
            self.flush()?;
        }
        let schema: &'s S = self.schema;
        let attr = schema
            .dn_attribute(attr_text)
            .ok_or_else(|| DnError::new(0, format!("`{attr_text}` is not a known attribute type")))?;
        let value = if hex { ber_string_contents(value) } else { value };
        if let Some(syntax) = attr.syntax {
            if !syntax.validate(value) {
                return Err(DnError::new(
                    0,
                    format!(
                        "the value of `{attr_text}` is not valid for its syntax ({})",
                        syntax.description
                    ),
                ));
            }
        }
        let rule = attr.equality.ok_or_else(|| {
            DnError::new(
                0,
                format!("`{attr_text}` has no equality matching rule, so it cannot name an entry"),
            )
        })?;
        let start = self.keys.len();
        rule.normalize(value, &mut self.keys)
            .map_err(|e| DnError::new(0, format!("the value of `{attr_text}` cannot be matched: {e}")))?;
        self.pending.push((attr.canonical, start..self.keys.len()));
        Ok(())
    }

    /// Writes the pending RDN, its AVAs sorted by (type, key).
    fn flush(&mut self) -> Result<(), DnError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let keys = &self.keys;
        if self.pending.len() > 1 {
            let order = |a: &(&str, Range<usize>), b: &(&str, Range<usize>)| {
                let lower = |s: &str| s.bytes().map(|b| b.to_ascii_lowercase()).collect::<Vec<u8>>();
                lower(a.0)
                    .cmp(&lower(b.0))
                    .then_with(|| keys[a.1.clone()].cmp(&keys[b.1.clone()]))
            };
            self.pending.sort_by(order);
            if self.pending.windows(2).any(|w| order(&w[0], &w[1]).is_eq()) {
                let rdn = self
                    .pending
                    .iter()
                    .map(|(attr, key)| format!("{attr}={}", String::from_utf8_lossy(&keys[key.clone()])))
                    .collect::<Vec<_>>()
                    .join("+");
                return Err(DnError::new(
                    0,
                    format!("RDN `{rdn}` repeats the same attribute value"),
                ));
            }
        }
        if !self.out.is_empty() {
            self.out.push(',');
        }
        for (j, (attr, key)) in self.pending.iter().enumerate() {
            if j > 0 {
                self.out.push('+');
            }
            self.out.extend(attr.chars().map(|c| c.to_ascii_lowercase()));
            self.out.push('=');
            push_key(&mut self.out, &keys[key.clone()]);
        }
        self.pending.clear();
        self.keys.clear();
        Ok(())
    }

    fn finish(mut self) -> Result<NormDn, DnError> {
        self.flush()?;
        Ok(NormDn(self.out.into_boxed_str()))
    }
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
