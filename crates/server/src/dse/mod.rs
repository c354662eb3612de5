//! The entries the server answers without storing them: the root DSE (RFC 4512 section
//! 5.1, [`root`]), the subschema subentry `cn=Subschema` (RFC 4512 section 4.2,
//! [`subschema`]) and the `cn=Monitor` subtree ([`monitor`]).
//!
//! Each is built as a [`DseEntry`]: its attributes in the stored form every entry has (so
//! the search's compiled filter and the assertion control evaluate on it as on any entry),
//! plus the computed attributes (`entryDN`, `subschemaSubentry`), which, as for stored
//! entries, are returned when asked for but not matched by filters.
//!
//! Which attributes a search returns follows the request's attribute list as for any
//! entry: user attributes (`objectClass`, `cn`) for an empty list or `*`; operational ones
//! (all the root DSE's other attributes, the subschema's descriptions) by name or under `+`
//! (RFC 3673), as OpenLDAP does.

pub mod monitor;
pub mod root;
pub mod subschema;

use larch_model::entry::{Attribute, Options, StoredEntry, StoredRef};
use larch_model::filter::CompiledFilter;
use larch_model::schema::{AttributeTypeId, Schema};
use larch_proto::SeqOf;

use crate::opattrs::SUBSCHEMA_SUBENTRY_DN;
use crate::select::{write_partial_attribute, Selection};

/// The extended operations the server implements, as the root DSE publishes them
/// (`supportedExtension`): Who am I? (RFC 4532), Cancel (RFC 3909), Password Modify
/// (RFC 3062), Larch's online backup (`docs/backup.md`) and snapshot transfer
/// (`docs/replication.md`).
pub const SUPPORTED_EXTENSIONS: &[&str] = &[
    "1.3.6.1.4.1.4203.1.11.3",
    "1.3.6.1.1.8",
    "1.3.6.1.4.1.4203.1.11.1",
    larch_proto::exop::BACKUP,
    larch_proto::exop::SNAPSHOT_TRANSFER,
];

/// The features the root DSE publishes (`supportedFeatures`): all operational attributes
/// by `+` (RFC 3673), absolute true and false filters (RFC 4526), language tag and range
/// options (RFC 3866), modify-increment (RFC 4525).
pub const SUPPORTED_FEATURES: &[&str] = &[
    "1.3.6.1.4.1.4203.1.5.1",
    "1.3.6.1.4.1.4203.1.5.3",
    "1.3.6.1.4.1.4203.1.5.4",
    "1.3.6.1.4.1.4203.1.5.5",
    "1.3.6.1.1.14",
];

/// An entry built by the server rather than stored.
#[derive(Debug, Clone)]
pub struct DseEntry {
    /// Its DN.
    pub dn: String,
    stored: StoredEntry,
    /// The computed attributes every such entry has, by type (`None`: not in the schema,
    /// or not readable): `entryDN`, whose value is `dn`, and `subschemaSubentry`.
    computed: Computed,
}

/// The types of a [`DseEntry`]'s computed attributes.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Computed {
    entry_dn: Option<AttributeTypeId>,
    subschema_subentry: Option<AttributeTypeId>,
}

impl Computed {
    /// The types as `schema` names them.
    pub(crate) fn of(schema: &Schema) -> Computed {
        Computed {
            entry_dn: schema.attribute_type("entryDN").map(|t| t.id),
            subschema_subentry: schema.attribute_type("subschemaSubentry").map(|t| t.id),
        }
    }

    /// The attributes with their values, for an entry named `dn`.
    fn values<'a>(&self, dn: &'a str) -> impl Iterator<Item = (AttributeTypeId, &'a [u8])> {
        let entry_dn = self.entry_dn.map(|t| (t, dn.as_bytes()));
        let subschema = self
            .subschema_subentry
            .map(|t| (t, SUBSCHEMA_SUBENTRY_DN.as_bytes()));
        entry_dn.into_iter().chain(subschema)
    }
}

/// Collects attributes by type name; names the schema lacks are left out.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    attrs: Vec<Attribute>,
}

impl Builder {
    /// Adds an attribute with `values` (none: nothing added).
    pub(crate) fn add<V: AsRef<[u8]>>(&mut self, schema: &Schema, name: &str, values: &[V]) {
        if let Some(t) = schema.attribute_type(name) {
            self.add_type(t.id, values);
        }
    }

    /// Adds an attribute of type `ty` with `values` (none: nothing added).
    pub(crate) fn add_type<V: AsRef<[u8]>>(&mut self, ty: AttributeTypeId, values: &[V]) {
        if values.is_empty() {
            return;
        }
        self.attrs.push(Attribute {
            ty,
            options: Options::none(),
            values: values.iter().map(|v| v.as_ref().to_vec()).collect(),
        });
    }

    /// The entry, with the computed `entryDN` and `subschemaSubentry`.
    pub(crate) fn build(self, schema: &Schema, dn: &str) -> DseEntry {
        DseEntry::new(
            dn.to_string(),
            StoredEntry::build(&self.attrs),
            Computed::of(schema),
        )
    }
}

/// Whether the requested attribute list names `ty` or a supertype of it (with any
/// options).
fn names_type(requested: SeqOf<'_, &[u8]>, ty: AttributeTypeId, schema: &Schema) -> bool {
    requested.iter().any(|raw| {
        larch_model::entry::split_description(raw)
            .and_then(|(name, _)| schema.attribute_type(name))
            .is_some_and(|t| schema.is_subtype(ty, t.id))
    })
}

impl DseEntry {
    /// The entry named `dn` with the attributes of `stored` and the computed ones.
    pub(crate) fn new(dn: String, stored: StoredEntry, computed: Computed) -> DseEntry {
        DseEntry { dn, stored, computed }
    }

    /// The same entry with only the attributes `keep` accepts (stored and computed): what
    /// a requester may read of it.
    pub fn retain(&self, keep: impl Fn(AttributeTypeId) -> bool) -> DseEntry {
        let attrs: Vec<Attribute> = self
            .stored()
            .attributes()
            .filter(|a| keep(a.ty))
            .map(|a| Attribute {
                ty: a.ty,
                options: a.options(),
                values: a.values.iter().map(<[u8]>::to_vec).collect(),
            })
            .collect();
        DseEntry {
            dn: self.dn.clone(),
            stored: StoredEntry::build(&attrs),
            computed: Computed {
                entry_dn: self.computed.entry_dn.filter(|&t| keep(t)),
                subschema_subentry: self.computed.subschema_subentry.filter(|&t| keep(t)),
            },
        }
    }

    /// The stored form of its attributes (computed ones excluded).
    pub fn stored(&self) -> StoredRef<'_> {
        self.stored.as_ref()
    }

    /// Whether `filter` is TRUE for the entry.
    pub fn matches(&self, filter: &CompiledFilter, schema: &Schema) -> bool {
        let mut scratch = Vec::new();
        filter.matches(self.stored(), None, schema, &mut scratch)
    }

    /// Appends the selected attributes as `PartialAttribute` TLVs (the contents of a
    /// SearchResultEntry's attribute list); `requested` is the request's list, which
    /// says whether computed attributes were named.
    pub fn write_attributes(
        &self,
        selection: &Selection,
        requested: SeqOf<'_, &[u8]>,
        schema: &Schema,
        types_only: bool,
        out: &mut Vec<u8>,
    ) {
        for a in self.stored().attributes() {
            if selection.selects(a.ty, a.options, schema) {
                let name = schema.attribute_type_by_id(a.ty).map_or("", |t| t.name());
                a.write_ber(name, types_only, out);
            }
        }
        for (ty, value) in self.computed.values(&self.dn) {
            if selection.selects(ty, "", schema) || names_type(requested, ty, schema) {
                let name = schema.attribute_type_by_id(ty).map_or("", |t| t.name());
                write_partial_attribute(out, name.as_bytes(), &[value], types_only);
            }
        }
    }
}
