//! The directory schema (RFC 4512): attribute types, object classes, and the syntaxes and
//! matching rules they use, loaded from the shipped schema files and the operator's.
//!
//! What it is:
//! - a hand-written, iterative parser of RFC 4512 element descriptions ([`parse_element`]),
//!   tolerant of the variations real schema files use (see the `parse` module);
//! - readers for OpenLDAP `.schema` files and LDIF schema files (cn=config exports,
//!   subschema entries), with `objectidentifier` macros ([`parse_file`]);
//! - the shipped schema files ([`builtin`]), written from the RFCs;
//! - resolution into a [`Schema`]: names and OIDs looked up case-insensitively, SUP
//!   chains followed (effective syntax and matching rules of attribute types, complete
//!   MUST/MAY sets of object classes), every syntax and matching rule bound to Larch's
//!   implementation (`crate::syntax`, `crate::matching`), every reference checked;
//! - the values of the `cn=Subschema` entry ([`Schema::subschema`]), in RFC 4512 form.
//!
//! What it is not: it does not check entries against the schema (that is the entry
//! model's job, using [`Schema`]), does not enforce DIT content rules, DIT structure
//! rules or name forms (they are parsed and published only), and does not implement
//! syntaxes or matching rules (a schema file can only map an unknown syntax onto an
//! implemented one, with `ldapsyntax ( oid ... X-SUBST 'implemented-oid' )`).
//!
//! Every bound on input-derived work is a named constant in [`limits`]. Errors name the
//! file, line, column and element ([`SchemaError`]).
//!
//! ```
//! use larch_model::schema::{BuiltinSchemas, ElementKind, Schema, SchemaFormat, SchemaSource};
//!
//! // The shipped schemas plus an operator file (given as text here; `Schema::load` reads
//! // paths, `.ldif` as LDIF and anything else as OpenLDAP `.schema`).
//! let local = SchemaSource {
//!     name: "local.schema",
//!     text: "objectidentifier example 1.3.6.1.4.1.99999\n\
//!            attributetype ( example:1 NAME 'badge' SUP name SINGLE-VALUE )\n\
//!            objectclass ( example:2 NAME 'employee' SUP inetOrgPerson MUST badge )\n",
//!     format: SchemaFormat::OpenLdap,
//! };
//! let schema = Schema::from_sources(BuiltinSchemas::Standard, &[local]).unwrap();
//! let badge = schema.attribute_type("BADGE").unwrap();
//! assert_eq!(badge.oid, "1.3.6.1.4.1.99999.1");
//! assert_eq!(badge.equality.unwrap().name, "caseIgnoreMatch"); // inherited from `name`
//! let employee = schema.object_class("employee").unwrap();
//! assert!(employee.requires(badge.id) && employee.requires(schema.attribute_type("sn").unwrap().id));
//!
//! // A broken file stops the load with file, line, column and reason.
//! let broken = SchemaSource {
//!     name: "broken.schema",
//!     text: "objectclass ( 1.2.3 NAME 'x' SUP top MUST nosuchattribute )",
//!     format: SchemaFormat::OpenLdap,
//! };
//! let error = Schema::from_sources(BuiltinSchemas::Standard, &[broken]).unwrap_err();
//! assert_eq!(error.to_string(), "broken.schema:1:1: object class x: MUST nosuchattribute: no such attribute type");
//!
//! // cn=Subschema values.
//! let subschema = schema.subschema();
//! assert!(subschema.values(ElementKind::ObjectClass).iter().any(|v| v.contains("'employee'")));
//! ```

pub mod builtin;
mod description;
mod error;
mod file;
pub mod limits;
mod load;
mod macros;
mod model;
mod names;
mod parse;
mod resolve;
mod subschema;

pub use builtin::BuiltinSchemas;
pub use description::{
    AttributeTypeDescription, AttributeUsage, DitContentRuleDescription, DitStructureRuleDescription,
    Element, ElementKind, Extension, LdapSyntaxDescription, MatchingRuleDescription,
    MatchingRuleUseDescription, NameFormDescription, ObjectClassDescription, ObjectClassKind,
};
pub use error::{Location, ParseError, ParseErrorKind, ResolveErrorKind, SchemaError};
pub use file::{parse_file, Definition, SchemaFormat};
pub use load::SchemaSource;
pub use macros::OidMacros;
pub use model::{AttributeType, AttributeTypeId, DescribedSyntax, ObjectClass, ObjectClassId, Schema};
pub use parse::{is_descr, is_numeric_oid, parse_element};
pub use subschema::Subschema;
