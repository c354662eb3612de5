use crate::ber::{tag, Reader, Writer};
use crate::error::{DecodeError, DecodeErrorKind, Result};
use crate::filter::{Filter, FilterCheck};
use crate::seq::SeqOf;

/// The tags of the SearchRequest components: the universal ones, and every filter choice.
const SEARCH_REQUEST_COMPONENTS: &[u8] = &[
    tag::OCTET_STRING,
    tag::ENUMERATED,
    tag::INTEGER,
    tag::BOOLEAN,
    tag::SEQUENCE,
    crate::filter_tag::AND,
    crate::filter_tag::OR,
    crate::filter_tag::NOT,
    crate::filter_tag::EQUALITY,
    crate::filter_tag::SUBSTRINGS,
    crate::filter_tag::GREATER_OR_EQUAL,
    crate::filter_tag::LESS_OR_EQUAL,
    crate::filter_tag::PRESENT,
    crate::filter_tag::APPROX,
    crate::filter_tag::EXTENSIBLE,
];

/// Search scope (RFC 4511 section 4.5.1.2, plus `subordinateSubtree`, the "children" scope
/// of draft-sermersheim-ldap-subordinate-scope that OpenLDAP and 389-ds accept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SearchScope {
    /// `baseObject` (0): the base entry only.
    Base = 0,
    /// `singleLevel` (1): the immediate children of the base.
    OneLevel = 1,
    /// `wholeSubtree` (2): the base and everything below it.
    Subtree = 2,
    /// `subordinateSubtree` (3): everything below the base, not the base itself.
    Subordinate = 3,
}

/// Alias dereferencing (RFC 4511 section 4.5.1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DerefAliases {
    /// `neverDerefAliases` (0).
    Never = 0,
    /// `derefInSearching` (1): below the base only.
    InSearching = 1,
    /// `derefFindingBaseObj` (2): when locating the base only.
    FindingBaseObject = 2,
    /// `derefAlways` (3).
    Always = 3,
}

/// SearchRequest (RFC 4511 section 4.5.1).
///
/// ```
/// use larch_proto::{DerefAliases, LdapMessage, OwnedFilter, ProtocolOp, SearchRequest, SearchScope, SeqOf};
/// let filter = OwnedFilter::parse("(&(objectClass=inetOrgPerson)(uid=user.1))").unwrap();
/// let attrs: [&[u8]; 2] = [b"cn", b"mail"];
/// let req = SearchRequest {
///     base: b"ou=People,dc=example,dc=com",
///     scope: SearchScope::Subtree,
///     deref_aliases: DerefAliases::Never,
///     size_limit: 0,
///     time_limit: 0,
///     types_only: false,
///     filter: filter.as_filter(),
///     attributes: SeqOf::from_items(&attrs),
/// };
/// let mut buf = Vec::new();
/// LdapMessage::new(2, ProtocolOp::SearchRequest(req)).encode(&mut buf);
/// let ProtocolOp::SearchRequest(back) = LdapMessage::decode(&buf).unwrap().op else { panic!() };
/// assert_eq!(back, req);
/// assert_eq!(back.filter.to_string(), "(&(objectClass=inetOrgPerson)(uid=user.1))");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchRequest<'a> {
    /// `baseObject`: where the search starts.
    pub base: &'a [u8],
    /// How far below the base to look.
    pub scope: SearchScope,
    /// When to dereference aliases.
    pub deref_aliases: DerefAliases,
    /// Most entries to return; 0 means no client limit.
    pub size_limit: u32,
    /// Most seconds to spend; 0 means no client limit.
    pub time_limit: u32,
    /// Return attribute descriptions without values.
    pub types_only: bool,
    /// The filter, still in BER form (validated).
    pub filter: Filter<'a>,
    /// Requested attributes: empty means all user attributes; may hold `*`, `+`, `1.1`.
    pub attributes: SeqOf<'a, &'a [u8]>,
}

impl<'a> SearchRequest<'a> {
    /// Decodes the request, validating its filter unless `filters` says it was before.
    pub(crate) fn decode_contents_with(c: &'a [u8], filters: FilterCheck) -> Result<Self> {
        let mut r = Reader::new(c);
        let base = r.read_octets(tag::OCTET_STRING, "SearchRequest.baseObject")?;
        let scope = match r.read_integer(tag::ENUMERATED, "SearchRequest.scope")? {
            0 => SearchScope::Base,
            1 => SearchScope::OneLevel,
            2 => SearchScope::Subtree,
            3 => SearchScope::Subordinate,
            value => {
                return Err(DecodeError::new(
                    DecodeErrorKind::UnknownEnumerated { value },
                    "SearchRequest.scope",
                ))
            }
        };
        let deref_aliases = match r.read_integer(tag::ENUMERATED, "SearchRequest.derefAliases")? {
            0 => DerefAliases::Never,
            1 => DerefAliases::InSearching,
            2 => DerefAliases::FindingBaseObject,
            3 => DerefAliases::Always,
            value => {
                return Err(DecodeError::new(
                    DecodeErrorKind::UnknownEnumerated { value },
                    "SearchRequest.derefAliases",
                ))
            }
        };
        let max = i64::from(i32::MAX);
        let size_limit = r.read_integer_in(tag::INTEGER, 0, max, "SearchRequest.sizeLimit")? as u32;
        let time_limit = r.read_integer_in(tag::INTEGER, 0, max, "SearchRequest.timeLimit")? as u32;
        let types_only = r.read_bool(tag::BOOLEAN, "SearchRequest.typesOnly")?;
        let filter = match filters {
            FilterCheck::Validate => Filter::decode(&mut r)?,
            FilterCheck::ValidatedBefore => Filter::decode_validated(&mut r)?,
        };
        let attrs = r.read(tag::SEQUENCE, "SearchRequest.attributes")?;
        let attributes = SeqOf::decode_contents(attrs).map_err(|e| e.within("SearchRequest.attributes"))?;
        r.finish_sequence("SearchRequest", SEARCH_REQUEST_COMPONENTS)?;
        Ok(SearchRequest {
            base,
            scope,
            deref_aliases,
            size_limit,
            time_limit,
            types_only,
            filter,
            attributes,
        })
    }

    pub(crate) fn encode_contents(&self, w: &mut Writer<'_>) {
        w.octet_string(self.base);
        w.integer(tag::ENUMERATED, self.scope as i64);
        w.integer(tag::ENUMERATED, self.deref_aliases as i64);
        w.integer(tag::INTEGER, i64::from(self.size_limit));
        w.integer(tag::INTEGER, i64::from(self.time_limit));
        w.boolean(tag::BOOLEAN, self.types_only);
        w.raw(self.filter.as_ber());
        let m = w.begin(tag::SEQUENCE);
        self.attributes.encode_contents(w);
        w.end(m);
    }
}
