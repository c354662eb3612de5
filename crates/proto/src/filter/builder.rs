//! Building filters in BER form: [`FilterBuilder`] for code, [`OwnedFilter::parse`] for
//! RFC 4515 strings (config, logs, the bench tool).

use super::{filter_tag as ft, Filter, FilterParseError};
use crate::ber::{Mark, Writer};
use crate::error::{DecodeError, DecodeErrorKind, Result};

/// A filter that owns its BER encoding.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct OwnedFilter {
    ber: Vec<u8>,
}

impl OwnedFilter {
    /// Parses an RFC 4515 string filter, e.g. `(&(objectClass=person)(cn=Al*))`.
    ///
    /// Like OpenLDAP's tools it also accepts a bare item without parentheses (`cn=foo`),
    /// white space between the parts of a list, and the RFC 2254 escapes `\*`, `\(`, `\)`
    /// and `\\` next to RFC 4515's `\2a` form.
    ///
    /// ```
    /// use larch_proto::OwnedFilter;
    /// let f = OwnedFilter::parse("(cn=Babs Jensen)").unwrap();
    /// assert_eq!(f.as_ber(), b"\xa3\x11\x04\x02cn\x04\x0bBabs Jensen");
    /// assert!(OwnedFilter::parse("(cn=a").is_err());
    /// ```
    pub fn parse(s: &str) -> std::result::Result<Self, FilterParseError> {
        super::parse::parse(s.as_bytes())
    }

    /// Wraps BER octets after validating that they are exactly one filter.
    pub fn from_ber(ber: Vec<u8>) -> Result<Self> {
        Filter::from_ber(&ber)?;
        Ok(OwnedFilter { ber })
    }

    /// The borrowed view.
    #[inline]
    pub fn as_filter(&self) -> Filter<'_> {
        Filter::from_validated(&self.ber)
    }

    /// The BER octets.
    #[inline]
    pub fn as_ber(&self) -> &[u8] {
        &self.ber
    }

    /// The BER octets, by value.
    pub fn into_ber(self) -> Vec<u8> {
        self.ber
    }
}

impl std::fmt::Debug for OwnedFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OwnedFilter({})", self.as_filter())
    }
}

impl std::fmt::Display for OwnedFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.as_filter(), f)
    }
}

impl std::str::FromStr for OwnedFilter {
    type Err = FilterParseError;
    fn from_str(s: &str) -> std::result::Result<Self, FilterParseError> {
        Self::parse(s)
    }
}

/// Writes a filter in BER, node by node, without recursion.
///
/// ```
/// use larch_proto::FilterBuilder;
/// let mut b = FilterBuilder::new();
/// b.begin_and();
/// b.equality(b"objectClass", b"person");
/// b.begin_not();
/// b.present(b"mail");
/// b.end();
/// b.end();
/// assert_eq!(b.finish().unwrap().to_string(), "(&(objectClass=person)(!(mail=*)))");
/// ```
#[derive(Debug, Default)]
pub struct FilterBuilder {
    buf: Vec<u8>,
    open: Vec<Mark>,
}

impl FilterBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    fn writer(&mut self) -> Writer<'_> {
        Writer::new(&mut self.buf)
    }

    fn begin(&mut self, t: u8) -> &mut Self {
        let m = self.writer().begin(t);
        self.open.push(m);
        self
    }

    /// Opens an `and`; close it with [`FilterBuilder::end`].
    pub fn begin_and(&mut self) -> &mut Self {
        self.begin(ft::AND)
    }

    /// Opens an `or`; close it with [`FilterBuilder::end`].
    pub fn begin_or(&mut self) -> &mut Self {
        self.begin(ft::OR)
    }

    /// Opens a `not`; write exactly one filter, then [`FilterBuilder::end`].
    pub fn begin_not(&mut self) -> &mut Self {
        self.begin(ft::NOT)
    }

    /// Closes the innermost open `and`, `or` or `not`. Extra calls do nothing (and
    /// [`FilterBuilder::finish`] then reports the imbalance, if any).
    pub fn end(&mut self) -> &mut Self {
        if let Some(m) = self.open.pop() {
            self.writer().end(m);
        }
        self
    }

    fn ava(&mut self, t: u8, description: &[u8], value: &[u8]) -> &mut Self {
        let mut w = self.writer();
        let m = w.begin(t);
        w.octet_string(description);
        w.octet_string(value);
        w.end(m);
        self
    }

    /// `(description=value)`.
    pub fn equality(&mut self, description: &[u8], value: &[u8]) -> &mut Self {
        self.ava(ft::EQUALITY, description, value)
    }

    /// `(description>=value)`.
    pub fn greater_or_equal(&mut self, description: &[u8], value: &[u8]) -> &mut Self {
        self.ava(ft::GREATER_OR_EQUAL, description, value)
    }

    /// `(description<=value)`.
    pub fn less_or_equal(&mut self, description: &[u8], value: &[u8]) -> &mut Self {
        self.ava(ft::LESS_OR_EQUAL, description, value)
    }

    /// `(description~=value)`.
    pub fn approx(&mut self, description: &[u8], value: &[u8]) -> &mut Self {
        self.ava(ft::APPROX, description, value)
    }

    /// `(description=*)`.
    pub fn present(&mut self, description: &[u8]) -> &mut Self {
        self.writer().octets(ft::PRESENT, description);
        self
    }

    /// `(description=initial*any1*any2*final)`, with the parts exactly as given.
    pub fn substrings(
        &mut self,
        description: &[u8],
        initial: Option<&[u8]>,
        any: &[&[u8]],
        final_: Option<&[u8]>,
    ) -> &mut Self {
        let mut w = self.writer();
        let m = w.begin(ft::SUBSTRINGS);
        w.octet_string(description);
        let s = w.begin(crate::ber::tag::SEQUENCE);
        if let Some(i) = initial {
            w.octets(ft::SUB_INITIAL, i);
        }
        for a in any {
            w.octets(ft::SUB_ANY, a);
        }
        if let Some(f) = final_ {
            w.octets(ft::SUB_FINAL, f);
        }
        w.end(s);
        w.end(m);
        self
    }

    /// `(description:dn:rule:=value)`, each of description, `:dn` and rule optional.
    pub fn extensible(
        &mut self,
        rule: Option<&[u8]>,
        description: Option<&[u8]>,
        value: &[u8],
        dn_attributes: bool,
    ) -> &mut Self {
        let mut w = self.writer();
        let m = w.begin(ft::EXTENSIBLE);
        if let Some(r) = rule {
            w.octets(ft::MRA_RULE, r);
        }
        if let Some(d) = description {
            w.octets(ft::MRA_TYPE, d);
        }
        w.octets(ft::MRA_VALUE, value);
        if dn_attributes {
            w.boolean(ft::MRA_DN_ATTRIBUTES, true);
        }
        w.end(m);
        self
    }

    /// How many `and`/`or`/`not` are open.
    pub fn depth(&self) -> usize {
        self.open.len()
    }

    /// Checks the filter (balanced, one top-level node, `not` arity, depth at most
    /// [`crate::limits::MAX_FILTER_DEPTH`]) and returns it, leaving the builder empty.
    pub fn finish(&mut self) -> Result<OwnedFilter> {
        if !self.open.is_empty() {
            return Err(DecodeError::new(
                DecodeErrorKind::Truncated,
                "FilterBuilder: unclosed and/or/not",
            ));
        }
        OwnedFilter::from_ber(std::mem::take(&mut self.buf))
    }
}
