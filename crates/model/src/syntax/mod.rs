//! Attribute syntaxes (RFC 4517 section 3, plus the RFC 2307 NIS syntaxes and RFC 4530
//! UUID): what the octets of a value must look like.
//!
//! A [`Syntax`] is a static record with a validator; [`lookup`] finds one by numeric OID
//! and [`all`] lists them for `cn=Subschema`'s `ldapSyntaxes`. Validation takes arbitrary
//! octets, never panics, never recurses, and does bounded work per octet.
//!
//! How strictly each syntax is checked:
//! - Exactly as RFC 4517's ABNF: Boolean, Integer, Bit String, Printable String, IA5 String,
//!   Numeric String, Country String, OID, Telephone Number, Facsimile Telephone Number,
//!   Telex Number, Other Mailbox, Delivery Method, Postal Address, Guide, Enhanced Guide,
//!   Generalized Time and UTC Time (both also check the day against the month), UUID,
//!   Directory String (one or more UTF-8 characters), and the RFC 4512 schema
//!   descriptions (keywords in any order, whitespace may include tabs and line breaks).
//! - Substring Assertion: the ABNF, but an empty initial or final piece next to a leading
//!   or trailing `*` is accepted ("foo*"), as in LDAP filters.
//! - DN and Name and Optional UID: RFC 4514 plus the usual leniency (spaces around
//!   separators); see the `dn` submodule.
//! - Certificate, Certificate List, Certificate Pair and Supported Algorithm: a DER
//!   SEQUENCE header (tag 0x30, minimal definite length) whose length covers exactly the
//!   rest of the value; the contents are not decoded.
//! - JPEG: starts with the SOI marker; Audio and Fax: non-empty; Binary and Octet String:
//!   anything.
//! - Permissive, non-empty UTF-8: ACI Item, Data Quality, DSA Quality, DSE Type, Protocol
//!   Information, Presentation Address, Supplier Information, Supplier Or Consumer,
//!   Supplier And Consumer, Modify Rights, LDAP Schema Definition, LDAP Schema
//!   Description, Teletex Terminal Identifier, and the RFC 2252 Access Point and DL Submit
//!   Permission. Their grammars (X.500 ASN.1 or RFC 1278 string forms) are rarely used
//!   by LDAP clients and not worth a parser each; Subtree Specification checks balanced
//!   braces only.
//! - NIS (RFC 2307): nisNetgroupTriple is `(host,user,domain)`, bootParameter is
//!   `key=server:path`, both IA5.

mod description;
pub(crate) mod dn;
mod guide;
pub(crate) mod text;
pub(crate) mod time;

use description::Kind;

/// An attribute syntax: its OID, its description, and how to check a value.
#[derive(Debug)]
pub struct Syntax {
    /// The numeric OID, e.g. `1.3.6.1.4.1.1466.115.121.1.15`.
    pub oid: &'static str,
    /// The RFC's name for it, e.g. `Directory String`.
    pub description: &'static str,
    /// False for syntaxes whose values are binary (certificates, JPEG, audio, ...):
    /// published as `X-NOT-HUMAN-READABLE 'TRUE'`.
    pub human_readable: bool,
    /// True when values must be transferred with the `;binary` option (RFC 4522): the
    /// certificate syntaxes of RFC 4523. Published as `X-BINARY-TRANSFER-REQUIRED 'TRUE'`.
    pub binary_transfer_required: bool,
    validator: fn(&[u8]) -> bool,
}

impl Syntax {
    /// Whether `value` is a valid value of this syntax. Any octets may be passed.
    pub fn validate(&self, value: &[u8]) -> bool {
        (self.validator)(value)
    }

    /// The RFC 4512 `SyntaxDescription` published in `ldapSyntaxes`, e.g.
    /// `( 1.3.6.1.4.1.1466.115.121.1.8 DESC 'Certificate' X-BINARY-TRANSFER-REQUIRED 'TRUE'
    /// X-NOT-HUMAN-READABLE 'TRUE' )`.
    pub fn definition(&self) -> String {
        let mut s = format!("( {} DESC '{}'", self.oid, self.description);
        if self.binary_transfer_required {
            s.push_str(" X-BINARY-TRANSFER-REQUIRED 'TRUE'");
        }
        if !self.human_readable {
            s.push_str(" X-NOT-HUMAN-READABLE 'TRUE'");
        }
        s.push_str(" )");
        s
    }
}

macro_rules! syntaxes {
    ($( $suffix:literal, $desc:literal, $readable:expr, $binary:expr, $validator:expr; )*) => {
        [$( Syntax {
            oid: $suffix,
            description: $desc,
            human_readable: $readable,
            binary_transfer_required: $binary,
            validator: $validator,
        }, )*]
    };
}

/// The registry, in OID order of RFC 4517 first, then the RFC 2307 and RFC 4530 ones and
/// the two legacy X.500 syntaxes RFC 2252 listed.
static SYNTAXES: [Syntax; 58] = syntaxes![
    "1.3.6.1.4.1.1466.115.121.1.1", "ACI Item", true, false, text::permissive_text;
    "1.3.6.1.4.1.1466.115.121.1.3", "Attribute Type Description", true, false, |v| description::validate(Kind::AttributeType, v);
    "1.3.6.1.4.1.1466.115.121.1.4", "Audio", false, false, text::non_empty;
    "1.3.6.1.4.1.1466.115.121.1.5", "Binary", false, false, text::any_octets;
    "1.3.6.1.4.1.1466.115.121.1.6", "Bit String", true, false, text::bit_string;
    "1.3.6.1.4.1.1466.115.121.1.7", "Boolean", true, false, text::boolean;
    "1.3.6.1.4.1.1466.115.121.1.8", "Certificate", false, true, text::der_sequence;
    "1.3.6.1.4.1.1466.115.121.1.9", "Certificate List", false, true, text::der_sequence;
    "1.3.6.1.4.1.1466.115.121.1.10", "Certificate Pair", false, true, text::der_sequence;
    "1.3.6.1.4.1.1466.115.121.1.11", "Country String", true, false, text::country_string;
    "1.3.6.1.4.1.1466.115.121.1.12", "DN", true, false, dn::distinguished_name;
    "1.3.6.1.4.1.1466.115.121.1.13", "Data Quality", true, false, text::permissive_text;
    "1.3.6.1.4.1.1466.115.121.1.14", "Delivery Method", true, false, text::delivery_method;
    "1.3.6.1.4.1.1466.115.121.1.15", "Directory String", true, false, text::directory_string;
    "1.3.6.1.4.1.1466.115.121.1.16", "DIT Content Rule Description", true, false, |v| description::validate(Kind::DitContentRule, v);
    "1.3.6.1.4.1.1466.115.121.1.17", "DIT Structure Rule Description", true, false, |v| description::validate(Kind::DitStructureRule, v);
    "1.3.6.1.4.1.1466.115.121.1.19", "DSA Quality", true, false, text::permissive_text;
    "1.3.6.1.4.1.1466.115.121.1.20", "DSE Type", true, false, text::permissive_text;
    "1.3.6.1.4.1.1466.115.121.1.21", "Enhanced Guide", true, false, guide::enhanced_guide;
    "1.3.6.1.4.1.1466.115.121.1.22", "Facsimile Telephone Number", true, false, text::facsimile_telephone_number;
    "1.3.6.1.4.1.1466.115.121.1.23", "Fax", false, false, text::non_empty;
    "1.3.6.1.4.1.1466.115.121.1.24", "Generalized Time", true, false, time::generalized_time;
    "1.3.6.1.4.1.1466.115.121.1.25", "Guide", true, false, guide::guide;
    "1.3.6.1.4.1.1466.115.121.1.26", "IA5 String", true, false, text::ia5_string;
    "1.3.6.1.4.1.1466.115.121.1.27", "INTEGER", true, false, text::integer;
    "1.3.6.1.4.1.1466.115.121.1.28", "JPEG", false, false, text::jpeg;
    "1.3.6.1.4.1.1466.115.121.1.30", "Matching Rule Description", true, false, |v| description::validate(Kind::MatchingRule, v);
    "1.3.6.1.4.1.1466.115.121.1.31", "Matching Rule Use Description", true, false, |v| description::validate(Kind::MatchingRuleUse, v);
    "1.3.6.1.4.1.1466.115.121.1.34", "Name And Optional UID", true, false, dn::name_and_optional_uid;
    "1.3.6.1.4.1.1466.115.121.1.35", "Name Form Description", true, false, |v| description::validate(Kind::NameForm, v);
    "1.3.6.1.4.1.1466.115.121.1.36", "Numeric String", true, false, text::numeric_string;
    "1.3.6.1.4.1.1466.115.121.1.37", "Object Class Description", true, false, |v| description::validate(Kind::ObjectClass, v);
    "1.3.6.1.4.1.1466.115.121.1.38", "OID", true, false, text::oid;
    "1.3.6.1.4.1.1466.115.121.1.39", "Other Mailbox", true, false, text::other_mailbox;
    "1.3.6.1.4.1.1466.115.121.1.40", "Octet String", true, false, text::any_octets;
    "1.3.6.1.4.1.1466.115.121.1.41", "Postal Address", true, false, text::postal_address;
    "1.3.6.1.4.1.1466.115.121.1.42", "Protocol Information", true, false, text::permissive_text;
    "1.3.6.1.4.1.1466.115.121.1.43", "Presentation Address", true, false, text::permissive_text;
    "1.3.6.1.4.1.1466.115.121.1.44", "Printable String", true, false, text::printable_string;
    "1.3.6.1.4.1.1466.115.121.1.45", "Subtree Specification", true, false, text::subtree_specification;
    "1.3.6.1.4.1.1466.115.121.1.46", "Supplier Information", true, false, text::permissive_text;
    "1.3.6.1.4.1.1466.115.121.1.47", "Supplier Or Consumer", true, false, text::permissive_text;
    "1.3.6.1.4.1.1466.115.121.1.48", "Supplier And Consumer", true, false, text::permissive_text;
    "1.3.6.1.4.1.1466.115.121.1.49", "Supported Algorithm", false, true, text::der_sequence;
    "1.3.6.1.4.1.1466.115.121.1.50", "Telephone Number", true, false, text::telephone_number;
    "1.3.6.1.4.1.1466.115.121.1.51", "Teletex Terminal Identifier", true, false, text::permissive_text;
    "1.3.6.1.4.1.1466.115.121.1.52", "Telex Number", true, false, text::telex_number;
    "1.3.6.1.4.1.1466.115.121.1.53", "UTC Time", true, false, time::utc_time;
    "1.3.6.1.4.1.1466.115.121.1.54", "LDAP Syntax Description", true, false, |v| description::validate(Kind::LdapSyntax, v);
    "1.3.6.1.4.1.1466.115.121.1.55", "Modify Rights", true, false, text::permissive_text;
    "1.3.6.1.4.1.1466.115.121.1.56", "LDAP Schema Definition", true, false, text::permissive_text;
    "1.3.6.1.4.1.1466.115.121.1.57", "LDAP Schema Description", true, false, text::permissive_text;
    "1.3.6.1.4.1.1466.115.121.1.58", "Substring Assertion", true, false, text::substring_assertion;
    "1.3.6.1.1.1.0.0", "RFC2307 NIS Netgroup Triple", true, false, text::nis_netgroup_triple;
    "1.3.6.1.1.1.0.1", "RFC2307 Boot Parameter", true, false, text::boot_parameter;
    "1.3.6.1.1.16.1", "UUID", true, false, text::uuid;
    "1.3.6.1.4.1.1466.115.121.1.2", "Access Point", true, false, text::permissive_text;
    "1.3.6.1.4.1.1466.115.121.1.18", "DL Submit Permission", true, false, text::permissive_text;
];

/// The syntax with this numeric OID. The OID must be exact: no spaces, no `{len}` bound
/// (the schema strips a `SYNTAX` bound before looking up).
pub fn lookup(oid: &str) -> Option<&'static Syntax> {
    SYNTAXES.iter().find(|s| s.oid == oid)
}

/// Every syntax this server knows, for `cn=Subschema`'s `ldapSyntaxes`.
pub fn all() -> &'static [Syntax] {
    &SYNTAXES
}

/// The OID of Directory String, the syntax most attribute types use.
pub const DIRECTORY_STRING: &str = "1.3.6.1.4.1.1466.115.121.1.15";

#[cfg(test)]
mod tests {
    use super::*;

    /// The common prefix of the RFC 4517 syntax OIDs.
    const P: &str = "1.3.6.1.4.1.1466.115.121.1.";

    #[test]
    fn registry_is_consistent() {
        let mut oids: Vec<&str> = all().iter().map(|s| s.oid).collect();
        oids.sort_unstable();
        let before = oids.len();
        oids.dedup();
        assert_eq!(before, oids.len(), "duplicate syntax OID");
        for s in all() {
            assert!(text::numeric_oid(s.oid.as_bytes()), "{}", s.oid);
            assert!(std::ptr::eq(lookup(s.oid).unwrap(), s));
            assert!(
                s.oid.starts_with(P) || s.oid.starts_with("1.3.6.1.1."),
                "{}",
                s.oid
            );
            assert!(
                description::validate(Kind::LdapSyntax, s.definition().as_bytes()),
                "{}",
                s.definition()
            );
        }
        assert!(lookup(" 1.3.6.1.4.1.1466.115.121.1.15").is_none());
        assert!(lookup("1.3.6.1.4.1.1466.115.121.1.15").is_some());
    }
}
