//! The root DSE (RFC 4512 section 5.1): what a client reads with a base search of the
//! empty DN to learn what the server supports.
//!
//! Attributes, as OpenLDAP publishes them: `objectClass: top` (the user attribute a search
//! with no attribute list gets); operational: `namingContexts` (every configured suffix as
//! written), `monitorContext` (`cn=Monitor`, with the monitor on), `supportedControl` ([`crate::controls::SUPPORTED_CONTROLS`]),
//! `supportedExtension` ([`super::SUPPORTED_EXTENSIONS`]), `supportedFeatures`
//! ([`super::SUPPORTED_FEATURES`]), `supportedLDAPVersion: 3`, `vendorName`,
//! `vendorVersion` (RFC 3045), `supportedSASLMechanisms` (the mechanisms a client can use
//! here, [`crate::auth::sasl::advertised`]; absent when none), and the computed `entryDN`
//! (empty) and `subschemaSubentry`. StartTLS is in `supportedExtension` only when TLS is
//! configured, Larch's cluster membership changes only on a cluster node.

use super::{Builder, DseEntry};
use crate::controls::SUPPORTED_CONTROLS;
use crate::directory::Directory;

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
    if dir.monitor.is_some() {
        b.add(schema, "monitorContext", &[super::monitor::MONITOR_DN]);
    }
    b.add(schema, "supportedControl", &SUPPORTED_CONTROLS);
    let mut extensions = super::SUPPORTED_EXTENSIONS.to_vec();
    if dir.config.tls.is_some() {
        extensions.push(larch_proto::exop::START_TLS);
    }
    if dir.config.cluster.is_some() {
        extensions.push(larch_proto::exop::CLUSTER_ADD_NODE);
        extensions.push(larch_proto::exop::CLUSTER_REMOVE_NODE);
    }
    b.add(schema, "supportedExtension", &extensions);
    b.add(
        schema,
        "supportedSASLMechanisms",
        &crate::auth::sasl::advertised(dir),
    );
    b.add(schema, "supportedFeatures", super::SUPPORTED_FEATURES);
    b.add(schema, "supportedLDAPVersion", &["3"]);
    b.add(schema, "vendorName", &[VENDOR_NAME]);
    b.add(schema, "vendorVersion", &[VENDOR_VERSION]);
    b.build(schema, "")
}
