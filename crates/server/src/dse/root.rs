//! The root DSE (RFC 4512 section 5.1): what a client reads with a base search of the
//! empty DN to learn what the server supports.
//!
//! Attributes, as OpenLDAP publishes them: `objectClass: top` (the user attribute a search
//! with no attribute list gets); operational: `namingContexts` (every configured suffix as
//! written), `supportedControl` ([`crate::controls::SUPPORTED_CONTROLS`]),
//! `supportedExtension` ([`super::SUPPORTED_EXTENSIONS`]), `supportedFeatures`
//! ([`super::SUPPORTED_FEATURES`]), `supportedLDAPVersion: 3`, `vendorName`,
//! `vendorVersion` (RFC 3045), and the computed `entryDN` (empty) and `subschemaSubentry`.
//! `supportedSASLMechanisms` is absent: no SASL mechanism is offered.

use super::{Builder, DseEntry};
use crate::controls::SUPPORTED_CONTROLS;
use crate::directory::Directory;
use crate::opattrs::SUBSCHEMA_SUBENTRY_DN;

/// The `vendorName` value.
pub const VENDOR_NAME: &str = "Larch";

/// The `vendorVersion` value: the server crate's version.
pub const VENDOR_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The root DSE of `dir`.
pub fn root_dse(dir: &Directory) -> DseEntry {
    let schema = &*dir.schema;
    let mut b = Builder::default();
    b.add(schema, "objectClass", &["top"]);
    let contexts: Vec<&str> = dir.config.suffixes().collect();
    b.add(schema, "namingContexts", &contexts);
    b.add(schema, "supportedControl", &SUPPORTED_CONTROLS);
    b.add(schema, "supportedExtension", super::SUPPORTED_EXTENSIONS);
    b.add(schema, "supportedFeatures", super::SUPPORTED_FEATURES);
    b.add(schema, "supportedLDAPVersion", &["3"]);
    b.add(schema, "vendorName", &[VENDOR_NAME]);
    b.add(schema, "vendorVersion", &[VENDOR_VERSION]);
    b.computed(schema, "entryDN", "");
    b.computed(schema, "subschemaSubentry", SUBSCHEMA_SUBENTRY_DN);
    b.build("")
}
