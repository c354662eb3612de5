//! Attribute selection (RFC 4511 section 4.5.1.8, RFC 3673): which attributes of an entry a
//! search, a pre-read/post-read control or a base search of the root DSE or `cn=Subschema`
//! returns, and writing them in BER. It is used by `search`, `ops` and `dse` alike and
//! knows none of them.
//!
//! The requested list is read once into a [`Selection`]:
//! - an empty list, or `*`, selects every user attribute;
//! - `+` selects every operational attribute, stored and computed (RFC 3673);
//! - `1.1` alone selects nothing (with other names it is ignored);
//! - a name or OID selects that type and its subtypes (`name` returns `cn` and `sn`); with
//!   options, only the attributes carrying those options (`cn;lang-fr`);
//! - an operational type is returned only when named or under `+`; a computed one
//!   (entryDN, hasSubordinates, numSubordinates, subschemaSubentry) is computed then;
//! - a name the schema does not know, or that is not a description, is ignored
//!   (RFC 4511: "attributes that do not exist ... are ignored").
//!
//! Writing walks the stored attributes once in stored order, tests each against the
//! selection (a schema flag lookup and, for named types, a subtype walk) and against the
//! caller's access predicate, writes the selected ones with their canonical names, then
//! appends the selected computed ones the predicate allows.

use larch_model::entry::{split_description, Options};
use larch_model::schema::{AttributeTypeId, Schema};
use larch_proto::ber::{tag, Writer};
use larch_proto::{encode_search_result_entry, MessageId, SeqOf};
use larch_store::{EntryId, Version};

use crate::opattrs::OperationalTypes;

/// Most attribute descriptions honoured in one request; the rest are ignored (a request
/// listing more names than the schema has types gains nothing from them).
pub const MAX_SELECTED: usize = 1024;

/// A parsed attribute list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selection {
    /// Every user attribute.
    all_user: bool,
    /// Every operational attribute.
    all_operational: bool,
    /// Named types with options, computed ones excluded.
    named: Vec<(AttributeTypeId, Options)>,
    /// Computed types to append, in [`OperationalTypes::computed_types`] order.
    computed: Vec<AttributeTypeId>,
}

impl Selection {
    /// Every user attribute (an empty request list).
    pub fn all_user() -> Selection {
        Selection {
            all_user: true,
            ..Selection::default()
        }
    }

    /// Reads a requested attribute list.
    pub fn parse(attrs: SeqOf<'_, &[u8]>, schema: &Schema, optypes: &OperationalTypes) -> Selection {
        let mut sel = Selection::default();
        let mut any = false;
        let mut named_computed: Vec<AttributeTypeId> = Vec::new();
        for raw in attrs.iter().take(MAX_SELECTED) {
            any = true;
            match raw {
                b"*" => {
                    sel.all_user = true;
                }
                b"+" => {
                    sel.all_operational = true;
                }
                b"1.1" => {}
                _ => {
                    let Some((name, options)) = split_description(raw) else {
                        continue;
                    };
                    let Some(ty) = schema.attribute_type(name) else {
                        continue;
                    };
                    if optypes.is_computed(ty.id) {
                        named_computed.push(ty.id);
                    } else if !sel.named.iter().any(|(t, o)| *t == ty.id && *o == options) {
                        sel.named.push((ty.id, options));
                    }
                }
            }
        }
        if !any {
            sel.all_user = true;
        }
        sel.computed = optypes
            .computed_types()
            .into_iter()
            .filter(|t| sel.all_operational || named_computed.contains(t))
            .collect();
        sel
    }

    /// True when type `ty` is named in the list (not only selected by `*` or `+`).
    pub fn names(&self, ty: AttributeTypeId) -> bool {
        self.named.iter().any(|(t, _)| *t == ty) || self.computed.contains(&ty) && !self.all_operational
    }

    /// True when nothing at all is selected (`1.1`).
    pub fn is_empty(&self) -> bool {
        !self.all_user && !self.all_operational && self.named.is_empty() && self.computed.is_empty()
    }

    /// Whether a stored attribute of type `ty` with normalized options `options` is
    /// selected.
    pub fn selects(&self, ty: AttributeTypeId, options: &str, schema: &Schema) -> bool {
        let operational = schema
            .attribute_type_by_id(ty)
            .is_some_and(|t| t.is_operational());
        if (operational && self.all_operational) || (!operational && self.all_user) {
            return true;
        }
        self.named
            .iter()
            .any(|(want, opts)| opts.is_subset_of_str(options) && schema.is_subtype(ty, *want))
    }

    /// Appends the selected attributes of entry `id` of `version` that `readable` allows
    /// (access control) as `PartialAttribute` TLVs back to back (the contents of a
    /// SearchResultEntry's attribute list). With `types_only`, value sets are empty.
    pub fn write_attributes(
        &self,
        version: &Version,
        id: EntryId,
        optypes: &OperationalTypes,
        types_only: bool,
        readable: &mut dyn FnMut(AttributeTypeId) -> bool,
        out: &mut Vec<u8>,
    ) {
        if self.is_empty() {
            // `1.1`: nothing to walk (an authentication's search by uid asks for this).
            return;
        }
        let Some(entry) = version.entry(id) else {
            return;
        };
        let schema = version.schema();
        for a in entry.attrs().attributes() {
            if self.selects(a.ty, a.options, schema) && readable(a.ty) {
                let name = schema.attribute_type_by_id(a.ty).map_or("", |t| t.name());
                a.write_ber(name, types_only, out);
            }
        }
        for &ty in &self.computed {
            if !readable(ty) {
                continue;
            }
            let Some(values) = optypes.computed(version, id, ty) else {
                continue;
            };
            let name = schema.attribute_type_by_id(ty).map_or("", |t| t.name());
            write_partial_attribute(out, name.as_bytes(), &values, types_only);
        }
    }

    /// Appends a whole SearchResultEntry message for entry `id` named `dn`, with the
    /// attributes `readable` allows; `scratch` is a reused buffer.
    #[allow(clippy::too_many_arguments)]
    pub fn write_entry(
        &self,
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
        message_id: MessageId,
        dn: &str,
        version: &Version,
        id: EntryId,
        optypes: &OperationalTypes,
        types_only: bool,
        readable: &mut dyn FnMut(AttributeTypeId) -> bool,
    ) {
        scratch.clear();
        self.write_attributes(version, id, optypes, types_only, readable, scratch);
        encode_search_result_entry(out, message_id, dn.as_bytes(), scratch);
    }
}

/// Appends one `PartialAttribute` TLV with the given values (empty set with `types_only`).
pub fn write_partial_attribute<V: AsRef<[u8]>>(
    out: &mut Vec<u8>,
    name: &[u8],
    values: &[V],
    types_only: bool,
) {
    let mut w = Writer::new(out);
    let m = w.begin(tag::SEQUENCE);
    w.octet_string(name);
    let s = w.begin(tag::SET);
    if !types_only {
        for v in values {
            w.octet_string(v.as_ref());
        }
    }
    w.end(s);
    w.end(m);
}
