//! Search filters (RFC 4511 section 4.5.1.7).
//!
//! A [`Filter`] is always its BER encoding: decoding validates it once, without recursion,
//! and then hands out typed views ([`FilterNode`]) of one node at a time. Built filters
//! (from an RFC 4515 string or a [`FilterBuilder`]) are BER too, held by an [`OwnedFilter`].
//! So a filter is encoded by one copy and never converted between representations.

mod builder;
mod display;
mod parse;
mod validate;

pub use builder::{FilterBuilder, OwnedFilter};
pub use parse::FilterParseError;

use crate::ber::{tag, Reader, Writer};
use crate::error::Result;
use crate::seq::{Element, SeqOf};

/// The BER tags of the filter choices.
pub mod filter_tag {
    #![allow(missing_docs)]
    use crate::ber::tag;
    pub const AND: u8 = tag::context_constructed(0);
    pub const OR: u8 = tag::context_constructed(1);
    pub const NOT: u8 = tag::context_constructed(2);
    pub const EQUALITY: u8 = tag::context_constructed(3);
    pub const SUBSTRINGS: u8 = tag::context_constructed(4);
    pub const GREATER_OR_EQUAL: u8 = tag::context_constructed(5);
    pub const LESS_OR_EQUAL: u8 = tag::context_constructed(6);
    pub const PRESENT: u8 = tag::context(7);
    pub const APPROX: u8 = tag::context_constructed(8);
    pub const EXTENSIBLE: u8 = tag::context_constructed(9);

    pub const SUB_INITIAL: u8 = tag::context(0);
    pub const SUB_ANY: u8 = tag::context(1);
    pub const SUB_FINAL: u8 = tag::context(2);

    pub const MRA_RULE: u8 = tag::context(1);
    pub const MRA_TYPE: u8 = tag::context(2);
    pub const MRA_VALUE: u8 = tag::context(3);
    pub const MRA_DN_ATTRIBUTES: u8 = tag::context(4);
}

use filter_tag as ft;

/// Whether decoding a request validates its filter ([`Filter::decode`]) or takes it as
/// validated before ([`Filter::decode_validated`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FilterCheck {
    /// Validate it: octets from the network.
    Validate,
    /// Decoded and validated before: a copy of a request the server already decoded.
    ValidatedBefore,
}

/// A validated search filter in BER form.
///
/// ```
/// use larch_proto::{FilterNode, OwnedFilter};
/// let f = OwnedFilter::parse("(&(objectClass=person)(|(cn=Al*)(!(mail=*))))").unwrap();
/// let FilterNode::And(parts) = f.as_filter().node() else { panic!() };
/// assert_eq!(parts.iter().count(), 2);
/// assert_eq!(f.as_filter().to_string(), "(&(objectClass=person)(|(cn=Al*)(!(mail=*))))");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Filter<'a> {
    ber: &'a [u8],
}

/// One node of a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterNode<'a> {
    /// `and`: true when every sub-filter is (an empty `and` is TRUE, RFC 4526).
    And(FilterSet<'a>),
    /// `or`: true when any sub-filter is (an empty `or` is FALSE, RFC 4526).
    Or(FilterSet<'a>),
    /// `not`.
    Not(Filter<'a>),
    /// `equalityMatch`.
    Equality(AttributeValueAssertion<'a>),
    /// `substrings`.
    Substrings(SubstringFilter<'a>),
    /// `greaterOrEqual`.
    GreaterOrEqual(AttributeValueAssertion<'a>),
    /// `lessOrEqual`.
    LessOrEqual(AttributeValueAssertion<'a>),
    /// `present`: the attribute description.
    Present(&'a [u8]),
    /// `approxMatch`.
    Approx(AttributeValueAssertion<'a>),
    /// `extensibleMatch`.
    Extensible(MatchingRuleAssertion<'a>),
    /// A context-specific choice this codec does not know. The Filter CHOICE is extensible;
    /// like OpenLDAP, the server evaluates it to Undefined rather than failing the search.
    Unknown {
        /// The tag of the choice.
        tag: u8,
    },
}

/// `AttributeValueAssertion`: an attribute description and an assertion value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AttributeValueAssertion<'a> {
    /// The attribute description.
    pub description: &'a [u8],
    /// The assertion value (not escaped; raw octets).
    pub value: &'a [u8],
}

/// One part of a substrings filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Substring<'a> {
    /// `initial`: the value starts with this.
    Initial(&'a [u8]),
    /// `any`: the value contains this, after the previous parts.
    Any(&'a [u8]),
    /// `final`: the value ends with this.
    Final(&'a [u8]),
}

/// `SubstringFilter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubstringFilter<'a> {
    /// The attribute description.
    pub description: &'a [u8],
    /// The parts, in order: at most one initial (first), any number of any, at most one
    /// final (last), at least one part in all.
    pub substrings: SeqOf<'a, Substring<'a>>,
}

/// `MatchingRuleAssertion` of an extensible match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MatchingRuleAssertion<'a> {
    /// `matchingRule`: a rule name or OID.
    pub rule: Option<&'a [u8]>,
    /// `type`: the attribute description.
    pub description: Option<&'a [u8]>,
    /// `matchValue`.
    pub value: &'a [u8],
    /// `dnAttributes`: also match the attributes of the entry's DN.
    pub dn_attributes: bool,
}

/// The sub-filters of an `and` or `or`, read lazily.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct FilterSet<'a> {
    contents: &'a [u8],
}

impl<'a> Filter<'a> {
    /// Reads and validates one filter from `r`.
    pub(crate) fn decode(r: &mut Reader<'a>) -> Result<Self> {
        let (_, _, tlv) = r.read_any("filter")?;
        validate::validate(tlv)?;
        Ok(Filter { ber: tlv })
    }

    /// Reads one filter from `r` that was validated before: the same octets, decoded
    /// earlier by [`Filter::decode`] (a copy of a request the server already decoded).
    /// A filter that was not gives `Unknown` nodes where it is malformed, never a panic.
    pub(crate) fn decode_validated(r: &mut Reader<'a>) -> Result<Self> {
        let (_, _, tlv) = r.read_any("filter")?;
        Ok(Filter { ber: tlv })
    }

    /// Validates `ber`, which must be exactly one filter.
    pub fn from_ber(ber: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(ber);
        let f = Self::decode(&mut r)?;
        r.finish("filter")?;
        Ok(f)
    }

    /// Wraps one filter's BER that was validated before, without validating it again: for a
    /// copy of a request the server already decoded (the access log's writer reads the
    /// requests it logs back this way). Octets that were never validated give `Unknown`
    /// nodes where they are malformed, never a panic, as with
    /// [`crate::LdapMessage::decode_validated_before`].
    #[inline]
    pub const fn from_validated_before(ber: &'a [u8]) -> Self {
        Filter { ber }
    }

    /// A filter from octets validated earlier (by `validate` or by construction).
    #[inline]
    pub(crate) const fn from_validated(ber: &'a [u8]) -> Self {
        Filter { ber }
    }

    /// The filter's BER encoding (one TLV).
    #[inline]
    pub const fn as_ber(&self) -> &'a [u8] {
        self.ber
    }

    /// The top node of this filter.
    pub fn node(&self) -> FilterNode<'a> {
        let mut r = Reader::new(self.ber);
        let Ok((t, c, _)) = r.read_any("filter") else {
            return FilterNode::Unknown { tag: 0 };
        };
        node_of(t, c)
    }
}

/// Builds the node view of a validated filter element; validation guarantees that the
/// inner reads succeed, and a failure degrades to `Unknown` rather than panicking.
fn node_of(t: u8, c: &[u8]) -> FilterNode<'_> {
    let unknown = FilterNode::Unknown { tag: t };
    match t {
        ft::AND => FilterNode::And(FilterSet { contents: c }),
        ft::OR => FilterNode::Or(FilterSet { contents: c }),
        ft::NOT => FilterNode::Not(Filter::from_validated(c)),
        ft::EQUALITY => AttributeValueAssertion::decode_contents(c, "").map_or(unknown, FilterNode::Equality),
        ft::GREATER_OR_EQUAL => {
            AttributeValueAssertion::decode_contents(c, "").map_or(unknown, FilterNode::GreaterOrEqual)
        }
        ft::LESS_OR_EQUAL => {
            AttributeValueAssertion::decode_contents(c, "").map_or(unknown, FilterNode::LessOrEqual)
        }
        ft::APPROX => AttributeValueAssertion::decode_contents(c, "").map_or(unknown, FilterNode::Approx),
        ft::PRESENT => FilterNode::Present(c),
        ft::SUBSTRINGS => SubstringFilter::decode_contents(c).map_or(unknown, FilterNode::Substrings),
        ft::EXTENSIBLE => MatchingRuleAssertion::decode_contents(c).map_or(unknown, FilterNode::Extensible),
        _ => unknown,
    }
}

impl<'a> FilterSet<'a> {
    /// An empty set.
    pub const EMPTY: FilterSet<'static> = FilterSet { contents: &[] };

    /// A set holding exactly `filter` (how a `not` node's operand can be walked like the
    /// children of an `and` or `or`).
    #[inline]
    pub fn of_one(filter: Filter<'a>) -> FilterSet<'a> {
        FilterSet {
            contents: filter.as_ber(),
        }
    }

    /// The sub-filters, in order.
    #[inline]
    pub fn iter(&self) -> FilterSetIter<'a> {
        FilterSetIter { rest: self.contents }
    }

    /// True for `(&)` and `(|)`.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.contents.is_empty()
    }
}

impl<'a> IntoIterator for FilterSet<'a> {
    type Item = Filter<'a>;
    type IntoIter = FilterSetIter<'a>;
    fn into_iter(self) -> FilterSetIter<'a> {
        self.iter()
    }
}

/// Iterator over a [`FilterSet`].
#[derive(Clone, Copy)]
pub struct FilterSetIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for FilterSetIter<'a> {
    type Item = Filter<'a>;
    #[inline]
    fn next(&mut self) -> Option<Filter<'a>> {
        if self.rest.is_empty() {
            return None;
        }
        let mut r = Reader::new(self.rest);
        match r.read_any("filter") {
            Ok((_, _, tlv)) => {
                self.rest = r.remaining();
                Some(Filter::from_validated(tlv))
            }
            Err(_) => {
                self.rest = &[];
                None
            }
        }
    }
}

impl std::fmt::Debug for FilterSet<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> AttributeValueAssertion<'a> {
    pub(crate) fn decode_contents(c: &'a [u8], ctx: &'static str) -> Result<Self> {
        if let Some(ava) = Self::short_form(c) {
            return Ok(ava);
        }
        let mut r = Reader::new(c);
        let description = r.read_octets(tag::OCTET_STRING, ctx)?;
        let value = r.read_octets(tag::OCTET_STRING, ctx)?;
        r.finish_sequence(ctx, &[tag::OCTET_STRING])?;
        Ok(AttributeValueAssertion { description, value })
    }

    /// The usual shape, read without the general reader: two OCTET STRINGs with one-octet
    /// lengths and nothing after them (`None` for any other shape, which the reader then
    /// decodes or refuses). Every filter an index answers is evaluated and logged through
    /// this.
    #[inline]
    fn short_form(c: &'a [u8]) -> Option<Self> {
        let [tag::OCTET_STRING, d_len @ 0..=0x7f, rest @ ..] = c else {
            return None;
        };
        let (description, rest) = rest.split_at_checked(usize::from(*d_len))?;
        match rest {
            [tag::OCTET_STRING, v_len @ 0..=0x7f, value @ ..] if value.len() == usize::from(*v_len) => {
                Some(AttributeValueAssertion { description, value })
            }
            _ => None,
        }
    }

    pub(crate) fn encode_contents(&self, w: &mut Writer<'_>) {
        w.octet_string(self.description);
        w.octet_string(self.value);
    }
}

impl<'a> Element<'a> for Substring<'a> {
    fn decode(r: &mut Reader<'a>) -> Result<Self> {
        const CTX: &str = "SubstringFilter.substrings";
        let (t, c, _) = r.read_any(CTX)?;
        match t {
            ft::SUB_INITIAL => Ok(Substring::Initial(c)),
            ft::SUB_ANY => Ok(Substring::Any(c)),
            ft::SUB_FINAL => Ok(Substring::Final(c)),
            found => Err(crate::error::DecodeError::new(
                crate::error::DecodeErrorKind::InvalidTag { found },
                CTX,
            )),
        }
    }

    fn encode(&self, w: &mut Writer<'_>) {
        match *self {
            Substring::Initial(v) => w.octets(ft::SUB_INITIAL, v),
            Substring::Any(v) => w.octets(ft::SUB_ANY, v),
            Substring::Final(v) => w.octets(ft::SUB_FINAL, v),
        }
    }
}

impl<'a> SubstringFilter<'a> {
    pub(crate) fn decode_contents(c: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(c);
        let description = r.read_octets(tag::OCTET_STRING, "SubstringFilter.type")?;
        let substrings = SeqOf::decode_contents(r.read(tag::SEQUENCE, "SubstringFilter.substrings")?)?;
        r.finish_sequence("SubstringFilter", &[tag::OCTET_STRING, tag::SEQUENCE])?;
        Ok(SubstringFilter {
            description,
            substrings,
        })
    }
}

impl<'a> MatchingRuleAssertion<'a> {
    pub(crate) fn decode_contents(c: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(c);
        let rule = r.read_optional(ft::MRA_RULE, "MatchingRuleAssertion.matchingRule")?;
        let description = r.read_optional(ft::MRA_TYPE, "MatchingRuleAssertion.type")?;
        let value = r.read_octets(ft::MRA_VALUE, "MatchingRuleAssertion.matchValue")?;
        let dn_attributes = match r.peek_tag() {
            Some(ft::MRA_DN_ATTRIBUTES) => {
                r.read_bool(ft::MRA_DN_ATTRIBUTES, "MatchingRuleAssertion.dnAttributes")?
            }
            _ => false,
        };
        r.finish_sequence(
            "MatchingRuleAssertion",
            &[ft::MRA_RULE, ft::MRA_TYPE, ft::MRA_VALUE, ft::MRA_DN_ATTRIBUTES],
        )?;
        Ok(MatchingRuleAssertion {
            rule,
            description,
            value,
            dn_attributes,
        })
    }
}

impl<'a> Element<'a> for Filter<'a> {
    fn decode(r: &mut Reader<'a>) -> Result<Self> {
        Filter::decode(r)
    }
    fn encode(&self, w: &mut Writer<'_>) {
        w.raw(self.ber);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_validated_before_reads_as_the_validated_one_and_garbage_never_panics() {
        let f = OwnedFilter::parse("(&(cn=a*b)(!(sn=x))(uid>=7))").unwrap();
        let ber = f.as_filter().as_ber();
        assert_eq!(Filter::from_validated_before(ber), Filter::from_ber(ber).unwrap());
        assert_eq!(
            Filter::from_validated_before(ber).to_string(),
            f.as_filter().to_string()
        );
        // Never validated: cut anywhere, or a length octet changed, it still writes a text.
        for cut in 0..ber.len() {
            let mut text = Vec::new();
            Filter::from_validated_before(&ber[..cut]).write_text(&mut text);
            assert!(!text.is_empty(), "cut at {cut}");
        }
        let mut bad = ber.to_vec();
        bad[3] = 0x7f;
        let mut text = Vec::new();
        Filter::from_validated_before(&bad).write_text(&mut text);
        assert!(text.starts_with(b"(&"));
    }

    /// The general reader's reading of an assertion, without the short form.
    fn by_the_reader(c: &[u8]) -> Option<(&[u8], &[u8])> {
        let mut r = Reader::new(c);
        let d = r.read_octets(tag::OCTET_STRING, "").ok()?;
        let v = r.read_octets(tag::OCTET_STRING, "").ok()?;
        r.finish_sequence("", &[tag::OCTET_STRING]).ok()?;
        Some((d, v))
    }

    proptest::proptest! {
        #[test]
        fn the_short_form_reads_what_the_reader_reads(
            d in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..140),
            v in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..140),
            cut in proptest::prelude::any::<proptest::sample::Index>(),
            flip in proptest::prelude::any::<proptest::sample::Index>(),
            octet in proptest::prelude::any::<u8>(),
            damage in 0u8..3,
        ) {
            let mut c = Vec::new();
            let mut w = Writer::new(&mut c);
            w.octet_string(&d);
            w.octet_string(&v);
            match damage {
                1 => c.truncate(cut.index(c.len() + 1)),
                2 => {
                    let i = flip.index(c.len());
                    c[i] = octet;
                }
                _ => {}
            }
            let general = by_the_reader(&c);
            if let Some(short) = AttributeValueAssertion::short_form(&c) {
                proptest::prop_assert_eq!(Some((short.description, short.value)), general);
            }
            let read = AttributeValueAssertion::decode_contents(&c, "").ok().map(|a| (a.description, a.value));
            proptest::prop_assert_eq!(read, general);
        }
    }
}
