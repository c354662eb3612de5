//! Matching rules (RFC 4517 section 4, plus the OpenLDAP, RFC 4523 and RFC 4530 rules the
//! shipped schemas use), with RFC 4518 string preparation.
//!
//! Every rule turns a value into a *key* ([`MatchingRule::normalize`]):
//! - equality rules: two values match iff their keys are equal;
//! - ordering rules: the byte order of keys is the rule's order;
//! - substring rules: the key of a whole value, prepared for substring matching, which
//!   [`MatchingRule::matches_substrings`] searches for the pieces prepared by
//!   [`MatchingRule::normalize_substring`].
//!
//! A value the rule cannot prepare (not UTF-8, a prohibited code point, not an integer
//! for `integerMatch`, ...) gives [`InvalidValue`]; a filter that meets one evaluates to
//! Undefined. Keys are appended to a caller's buffer so that indexing and filter
//! evaluation reuse one allocation.
//!
//! Key formats, by rule family (stable: indexes store them):
//! - string rules (caseIgnore*, caseExact*, *IA5*, presentationAddressMatch,
//!   protocolInformationMatch, directoryStringFirstComponentMatch): the RFC 4518 prepared
//!   string; equality and ordering keys in compact form (words joined by one space),
//!   substring value keys in RFC 4518 form (see `prep`);
//! - numericString*: the digits; telephoneNumber*: the folded string without spaces and
//!   hyphens;
//! - integerMatch, integerFirstComponentMatch: the integer in its canonical RFC 4517
//!   form (which is unique: no `+`, no leading zero, no `-0`); integerOrderingMatch: a
//!   binary order-preserving form (`integer_ordering_key`), any length;
//! - generalizedTime*: `YYYYMMDDHHMMSS` in UTC followed by the fraction digits of a second,
//!   trailing zeros removed;
//! - distinguishedNameMatch: an RFC 4514 string (see below); uniqueMemberMatch: that, then
//!   `#'bits'B` if present;
//! - objectIdentifier*: a numeric OID as written, or a descriptor in lower case;
//! - octetString*, certificate*: the octets; booleanMatch: `TRUE` or `FALSE`;
//!   bitStringMatch: `'bits'B`; uuid*: the lower-case UUID;
//! - caseIgnoreList*: the lines' keys separated by NUL (which preparation never leaves
//!   inside a line, so no piece of a substring assertion can span two lines).
//!
//! `distinguishedNameMatch` here is schema-less: it parses RFC 4514, lower-cases attribute
//! type names (a name and its OID stay different), prepares every value with
//! caseIgnoreMatch whatever its attribute's real equality rule, sorts the AVAs of each
//! multi-valued RDN, and prints the result with minimal RFC 4514 escaping, so the key is
//! itself a DN with the same key. The schema-aware normalization of the `dn` module
//! supersedes it for stored DNs and wherever a schema is at hand.
//!
//! `objectIdentifierMatch` compares names and OIDs as given (names case-insensitively);
//! resolving a name to its OID is the schema's job, done before calling the rule.
//!
//! Simplified on purpose:
//! - `presentationAddressMatch` and `protocolInformationMatch` compare the string forms
//!   as caseIgnoreMatch does, not the X.500 address components (OpenLDAP does not
//!   implement them at all);
//! - `certificateExactMatch`, `certificatePairExactMatch` and `certificateListExactMatch`
//!   compare whole DER values octet by octet; an RFC 4523 `CertificateExactAssertion`
//!   (serial number and issuer in GSER) is not decoded and is refused as invalid;
//! - `bitStringMatch` compares bit for bit (the Bit String syntax has no named bits, so
//!   trailing zeros count, as RFC 4517 4.2.1 says);
//! - the first-component rules read a value that starts with `(` as an RFC 4512-style
//!   description and take its first element; any other value is taken as the assertion
//!   (the bare component). A directory string assertion that itself starts with `(` is
//!   therefore read as a description.
//!
//! Not provided: `keywordMatch` and `wordMatch` (not expressible as a key per value),
//! `certificateMatch` (needs X.509 decoding of the assertion), OpenLDAP's
//! `directoryStringApproxMatch`/`IA5StringApproxMatch` (approximate matching is
//! [`approx_key`] for every attribute), `authPasswordMatch` and `csnMatch`.

mod approx;
mod prep;
mod rules;

pub use approx::approx_key;

/// What a matching rule is used for in an attribute type (`EQUALITY`, `ORDERING`, `SUBSTR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleUsage {
    /// Equality: keys are equal iff values match.
    Equality,
    /// Ordering: byte order of keys is the value order.
    Ordering,
    /// Substrings: value keys are searched for prepared pieces.
    Substring,
}

/// Which piece of a substring assertion is being prepared: the insignificant-space rules
/// of RFC 4518 2.6.1 differ for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubstringPosition {
    /// The `initial` piece (before the first `*`).
    Initial,
    /// An `any` piece (between two `*`).
    Any,
    /// The `final` piece (after the last `*`).
    Final,
}

/// A value a matching rule cannot prepare; filters treat it as Undefined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid value for the matching rule: {reason}")]
pub struct InvalidValue {
    /// Why, in words.
    pub reason: &'static str,
}

impl InvalidValue {
    /// An `InvalidValue` saying `reason`.
    pub const fn new(reason: &'static str) -> Self {
        InvalidValue { reason }
    }
}

/// How a rule computes its keys (private: the table below is the whole set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// RFC 4518 prepared string, compact spaces; `fold` for case-ignore rules; `ia5`
    /// refuses non-ASCII values.
    String {
        fold: bool,
        ia5: bool,
    },
    /// RFC 4518 prepared string for substring matching.
    Substrings {
        fold: bool,
        ia5: bool,
    },
    NumericString,
    NumericStringSubstrings,
    Telephone,
    TelephoneSubstrings,
    Integer,
    IntegerOrdering,
    GeneralizedTime,
    DistinguishedName,
    UniqueMember,
    OctetString,
    Certificate,
    Boolean,
    ObjectIdentifier,
    ObjectIdentifierFirstComponent,
    IntegerFirstComponent,
    DirectoryStringFirstComponent,
    BitString,
    CaseIgnoreList,
    CaseIgnoreListSubstrings,
    Uuid,
}

/// A matching rule: its identity, what it is for, and how it computes keys.
#[derive(Debug)]
pub struct MatchingRule {
    /// The numeric OID, e.g. `2.5.13.2`.
    pub oid: &'static str,
    /// The name, e.g. `caseIgnoreMatch`.
    pub name: &'static str,
    /// Equality, ordering or substrings.
    pub usage: RuleUsage,
    /// The OID of the assertion syntax.
    pub syntax_oid: &'static str,
    kind: Kind,
}

impl MatchingRule {
    /// Appends the comparison key of an attribute or assertion value to `out` (see the
    /// module documentation). On error `out` may hold a partial key; callers truncate.
    pub fn normalize(&self, value: &[u8], out: &mut Vec<u8>) -> Result<(), InvalidValue> {
        rules::normalize(self.kind, value, out)
    }

    /// Appends the key of one piece of a substring assertion. Only substring rules have
    /// pieces; other rules answer `InvalidValue`.
    pub fn normalize_substring(
        &self,
        part: &[u8],
        position: SubstringPosition,
        out: &mut Vec<u8>,
    ) -> Result<(), InvalidValue> {
        rules::normalize_substring(self.kind, part, position, out)
    }

    /// Whether the value key `value_key` (from [`normalize`](Self::normalize)) holds the
    /// prepared pieces in order: `initial` at the start, each of `any` after the previous
    /// piece without overlap, `final_` at the end. False for rules that are not substring
    /// rules and for keys that are not valid UTF-8 (no substring rule produces those).
    pub fn matches_substrings(
        &self,
        value_key: &[u8],
        initial: Option<&[u8]>,
        any: &[impl AsRef<[u8]>],
        final_: Option<&[u8]>,
    ) -> bool {
        self.usage == RuleUsage::Substring && rules::matches_substrings(value_key, initial, any, final_)
    }

    /// The RFC 4512 `MatchingRuleDescription` published in `matchingRules`, e.g.
    /// `( 2.5.13.2 NAME 'caseIgnoreMatch' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )`.
    pub fn definition(&self) -> String {
        format!("( {} NAME '{}' SYNTAX {} )", self.oid, self.name, self.syntax_oid)
    }
}

const fn rule(
    oid: &'static str,
    name: &'static str,
    usage: RuleUsage,
    syntax_oid: &'static str,
    kind: Kind,
) -> MatchingRule {
    MatchingRule {
        oid,
        name,
        usage,
        syntax_oid,
        kind,
    }
}

/// The OID of the in-chain rule (Active Directory's `LDAP_MATCHING_RULE_IN_CHAIN`).
pub const IN_CHAIN_OID: &str = "1.2.840.113556.1.4.1941";

/// Syntax OIDs used below.
mod syn {
    pub const BIT_STRING: &str = "1.3.6.1.4.1.1466.115.121.1.6";
    pub const BOOLEAN: &str = "1.3.6.1.4.1.1466.115.121.1.7";
    pub const CERTIFICATE: &str = "1.3.6.1.4.1.1466.115.121.1.8";
    pub const CERTIFICATE_LIST: &str = "1.3.6.1.4.1.1466.115.121.1.9";
    pub const CERTIFICATE_PAIR: &str = "1.3.6.1.4.1.1466.115.121.1.10";
    pub const DN: &str = "1.3.6.1.4.1.1466.115.121.1.12";
    pub const DIRECTORY_STRING: &str = "1.3.6.1.4.1.1466.115.121.1.15";
    pub const GENERALIZED_TIME: &str = "1.3.6.1.4.1.1466.115.121.1.24";
    pub const IA5_STRING: &str = "1.3.6.1.4.1.1466.115.121.1.26";
    pub const INTEGER: &str = "1.3.6.1.4.1.1466.115.121.1.27";
    pub const NAME_AND_OPTIONAL_UID: &str = "1.3.6.1.4.1.1466.115.121.1.34";
    pub const NUMERIC_STRING: &str = "1.3.6.1.4.1.1466.115.121.1.36";
    pub const OID: &str = "1.3.6.1.4.1.1466.115.121.1.38";
    pub const OCTET_STRING: &str = "1.3.6.1.4.1.1466.115.121.1.40";
    pub const POSTAL_ADDRESS: &str = "1.3.6.1.4.1.1466.115.121.1.41";
    pub const PROTOCOL_INFORMATION: &str = "1.3.6.1.4.1.1466.115.121.1.42";
    pub const PRESENTATION_ADDRESS: &str = "1.3.6.1.4.1.1466.115.121.1.43";
    pub const TELEPHONE_NUMBER: &str = "1.3.6.1.4.1.1466.115.121.1.50";
    pub const SUBSTRING_ASSERTION: &str = "1.3.6.1.4.1.1466.115.121.1.58";
    pub const UUID: &str = "1.3.6.1.1.16.1";
}

use RuleUsage::{Equality, Ordering, Substring};

const CASE_IGNORE: Kind = Kind::String {
    fold: true,
    ia5: false,
};
const CASE_EXACT: Kind = Kind::String {
    fold: false,
    ia5: false,
};

static RULES: [MatchingRule; 39] = [
    rule(
        "2.5.13.0",
        "objectIdentifierMatch",
        Equality,
        syn::OID,
        Kind::ObjectIdentifier,
    ),
    rule(
        "2.5.13.1",
        "distinguishedNameMatch",
        Equality,
        syn::DN,
        Kind::DistinguishedName,
    ),
    rule(
        "2.5.13.2",
        "caseIgnoreMatch",
        Equality,
        syn::DIRECTORY_STRING,
        CASE_IGNORE,
    ),
    rule(
        "2.5.13.3",
        "caseIgnoreOrderingMatch",
        Ordering,
        syn::DIRECTORY_STRING,
        CASE_IGNORE,
    ),
    rule(
        "2.5.13.4",
        "caseIgnoreSubstringsMatch",
        Substring,
        syn::SUBSTRING_ASSERTION,
        Kind::Substrings {
            fold: true,
            ia5: false,
        },
    ),
    rule(
        "2.5.13.5",
        "caseExactMatch",
        Equality,
        syn::DIRECTORY_STRING,
        CASE_EXACT,
    ),
    rule(
        "2.5.13.6",
        "caseExactOrderingMatch",
        Ordering,
        syn::DIRECTORY_STRING,
        CASE_EXACT,
    ),
    rule(
        "2.5.13.7",
        "caseExactSubstringsMatch",
        Substring,
        syn::SUBSTRING_ASSERTION,
        Kind::Substrings {
            fold: false,
            ia5: false,
        },
    ),
    rule(
        "2.5.13.8",
        "numericStringMatch",
        Equality,
        syn::NUMERIC_STRING,
        Kind::NumericString,
    ),
    rule(
        "2.5.13.9",
        "numericStringOrderingMatch",
        Ordering,
        syn::NUMERIC_STRING,
        Kind::NumericString,
    ),
    rule(
        "2.5.13.10",
        "numericStringSubstringsMatch",
        Substring,
        syn::SUBSTRING_ASSERTION,
        Kind::NumericStringSubstrings,
    ),
    rule(
        "2.5.13.11",
        "caseIgnoreListMatch",
        Equality,
        syn::POSTAL_ADDRESS,
        Kind::CaseIgnoreList,
    ),
    rule(
        "2.5.13.12",
        "caseIgnoreListSubstringsMatch",
        Substring,
        syn::SUBSTRING_ASSERTION,
        Kind::CaseIgnoreListSubstrings,
    ),
    rule("2.5.13.13", "booleanMatch", Equality, syn::BOOLEAN, Kind::Boolean),
    rule("2.5.13.14", "integerMatch", Equality, syn::INTEGER, Kind::Integer),
    rule(
        "2.5.13.15",
        "integerOrderingMatch",
        Ordering,
        syn::INTEGER,
        Kind::IntegerOrdering,
    ),
    rule(
        "2.5.13.16",
        "bitStringMatch",
        Equality,
        syn::BIT_STRING,
        Kind::BitString,
    ),
    rule(
        "2.5.13.17",
        "octetStringMatch",
        Equality,
        syn::OCTET_STRING,
        Kind::OctetString,
    ),
    rule(
        "2.5.13.18",
        "octetStringOrderingMatch",
        Ordering,
        syn::OCTET_STRING,
        Kind::OctetString,
    ),
    rule(
        "2.5.13.20",
        "telephoneNumberMatch",
        Equality,
        syn::TELEPHONE_NUMBER,
        Kind::Telephone,
    ),
    rule(
        "2.5.13.21",
        "telephoneNumberSubstringsMatch",
        Substring,
        syn::SUBSTRING_ASSERTION,
        Kind::TelephoneSubstrings,
    ),
    rule(
        "2.5.13.22",
        "presentationAddressMatch",
        Equality,
        syn::PRESENTATION_ADDRESS,
        CASE_IGNORE,
    ),
    rule(
        "2.5.13.23",
        "uniqueMemberMatch",
        Equality,
        syn::NAME_AND_OPTIONAL_UID,
        Kind::UniqueMember,
    ),
    rule(
        "2.5.13.24",
        "protocolInformationMatch",
        Equality,
        syn::PROTOCOL_INFORMATION,
        CASE_IGNORE,
    ),
    rule(
        "2.5.13.27",
        "generalizedTimeMatch",
        Equality,
        syn::GENERALIZED_TIME,
        Kind::GeneralizedTime,
    ),
    rule(
        "2.5.13.28",
        "generalizedTimeOrderingMatch",
        Ordering,
        syn::GENERALIZED_TIME,
        Kind::GeneralizedTime,
    ),
    rule(
        "2.5.13.29",
        "integerFirstComponentMatch",
        Equality,
        syn::INTEGER,
        Kind::IntegerFirstComponent,
    ),
    rule(
        "2.5.13.30",
        "objectIdentifierFirstComponentMatch",
        Equality,
        syn::OID,
        Kind::ObjectIdentifierFirstComponent,
    ),
    rule(
        "2.5.13.31",
        "directoryStringFirstComponentMatch",
        Equality,
        syn::DIRECTORY_STRING,
        Kind::DirectoryStringFirstComponent,
    ),
    rule(
        "2.5.13.34",
        "certificateExactMatch",
        Equality,
        syn::CERTIFICATE,
        Kind::Certificate,
    ),
    rule(
        "2.5.13.36",
        "certificatePairExactMatch",
        Equality,
        syn::CERTIFICATE_PAIR,
        Kind::Certificate,
    ),
    rule(
        "2.5.13.38",
        "certificateListExactMatch",
        Equality,
        syn::CERTIFICATE_LIST,
        Kind::Certificate,
    ),
    rule(
        "1.3.6.1.4.1.1466.109.114.1",
        "caseExactIA5Match",
        Equality,
        syn::IA5_STRING,
        Kind::String {
            fold: false,
            ia5: true,
        },
    ),
    rule(
        "1.3.6.1.4.1.1466.109.114.2",
        "caseIgnoreIA5Match",
        Equality,
        syn::IA5_STRING,
        Kind::String {
            fold: true,
            ia5: true,
        },
    ),
    rule(
        "1.3.6.1.4.1.1466.109.114.3",
        "caseIgnoreIA5SubstringsMatch",
        Substring,
        syn::SUBSTRING_ASSERTION,
        Kind::Substrings {
            fold: true,
            ia5: true,
        },
    ),
    rule(
        "1.3.6.1.4.1.4203.1.2.1",
        "caseExactIA5SubstringsMatch",
        Substring,
        syn::SUBSTRING_ASSERTION,
        Kind::Substrings {
            fold: false,
            ia5: true,
        },
    ),
    rule("1.3.6.1.1.16.2", "uuidMatch", Equality, syn::UUID, Kind::Uuid),
    rule(
        "1.3.6.1.1.16.3",
        "uuidOrderingMatch",
        Ordering,
        syn::UUID,
        Kind::Uuid,
    ),
    // Active Directory's LDAP_MATCHING_RULE_IN_CHAIN: `(memberOf:1.2.840.113556.1.4.1941:=G)`
    // and `(member:1.2.840.113556.1.4.1941:=U)` follow nested groups. Values compare as
    // DNs; what the rule means is decided when a filter is compiled (`crate::filter`).
    rule(
        IN_CHAIN_OID,
        "inChainMatch",
        Equality,
        syn::DN,
        Kind::DistinguishedName,
    ),
];

/// The rule with this name (case-insensitive) or numeric OID.
pub fn lookup(name_or_oid: &str) -> Option<&'static MatchingRule> {
    RULES
        .iter()
        .find(|r| r.oid == name_or_oid || r.name.eq_ignore_ascii_case(name_or_oid))
}

/// Every matching rule this server implements, for `cn=Subschema`'s `matchingRules`.
pub fn all() -> &'static [MatchingRule] {
    &RULES
}
