//! The subschema subentry `cn=Subschema` (RFC 4512 section 4.2): the schema in force,
//! published as attribute values.
//!
//! Attributes, as OpenLDAP publishes them: `objectClass` top, subentry, subschema,
//! extensibleObject and `cn: Subschema` (user attributes); operational:
//! `subtreeSpecification: {}` (which slapd leaves out, see below),
//! `structuralObjectClass: subentry`, `createTimestamp` and `modifyTimestamp` (the time
//! the process first published a schema: the schema is loaded at startup and never changes
//! while it runs), the descriptions rendered by `larch_model::schema::Schema::subschema`
//! (`ldapSyntaxes`, `matchingRules`, `matchingRuleUse`, `attributeTypes`, `objectClasses`,
//! and DIT content rules, structure rules and name forms when the schema has any), and the
//! computed `entryDN` and `subschemaSubentry`.
//!
//! The entry conforms to its own classes: `subentry` (RFC 3672) requires `cn` and
//! `subtreeSpecification`, and slapd's entry has no `subtreeSpecification`. Larch gives it
//! the empty specification `{}`, which RFC 3672 section 2.1 reads as the whole
//! administrative area: the one subschema governs every entry the server holds.
//!
//! Rendering every description takes a while (hundreds of values), so the entry is built
//! once per schema and kept: the cache holds the schema by `Weak` pointer, so a new schema
//! (another directory in the same process) is never mistaken for the old one.

use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::SystemTime;

use larch_model::schema::Schema;

use super::{Builder, DseEntry};
use crate::opattrs::time::generalized_time;
use crate::opattrs::SUBSCHEMA_SUBENTRY_DN;

/// The empty SubtreeSpecification (RFC 3672 section 2.1): base, chop and filter all at
/// their defaults, that is every entry of the administrative area.
const WHOLE_AREA: &str = "{}";

/// The entry last built, with the schema it was built from.
type Cached = Option<(Weak<Schema>, Arc<DseEntry>)>;

static CACHE: Mutex<Cached> = Mutex::new(None);
static FIRST_PUBLISHED: OnceLock<SystemTime> = OnceLock::new();

/// The subschema subentry for `schema` (built once per schema).
pub fn subschema_entry(schema: &Arc<Schema>) -> Arc<DseEntry> {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((weak, entry)) = &*cache {
        if std::ptr::eq(weak.as_ptr(), Arc::as_ptr(schema)) {
            return entry.clone();
        }
    }
    let entry = Arc::new(build(schema));
    *cache = Some((Arc::downgrade(schema), entry.clone()));
    entry
}

fn build(schema: &Schema) -> DseEntry {
    let time = generalized_time(*FIRST_PUBLISHED.get_or_init(SystemTime::now));
    let mut b = Builder::default();
    b.add(
        schema,
        "objectClass",
        &["top", "subentry", "subschema", "extensibleObject"],
    );
    b.add(schema, "cn", &["Subschema"]);
    b.add(schema, "subtreeSpecification", &[WHOLE_AREA]);
    b.add(schema, "structuralObjectClass", &["subentry"]);
    b.add(schema, "createTimestamp", &[&time]);
    b.add(schema, "modifyTimestamp", &[&time]);
    let rendered = schema.subschema();
    for (name, values) in rendered.attributes() {
        b.add(schema, name, values);
    }
    b.build(schema, SUBSCHEMA_SUBENTRY_DN)
}
