//! The referential integrity hook: deleting an entry removes its DN from every `member`
//! and `uniqueMember` value that names it; renaming or moving an entry (its subtree
//! included) rewrites those values to the new DN; in the same transaction as the delete
//! or rename, as OpenLDAP's refint overlay and 389 DS's referential integrity plugin do
//! after the fact.
//!
//! Every entry is read, groups or not (slapd's refint does the same), through the
//! attributes' equality indexes. When the last value of an attribute an entry's classes
//! require would go (the only member of a `groupOfNames`), the value becomes the
//! configured placeholder (`groups.empty_group_member`, the empty DN by default), as
//! slapd's `refint_nothing`: the group stays valid under its schema and lists no entry.
//! A changed entry gets the write's modifyTimestamp, modifiersName and entryCSN.

use std::collections::BTreeMap;

use larch_model::entry::Entry;
use larch_model::entry::Options;
use larch_model::schema::{AttributeTypeId, Schema};
use larch_store::{EntryId, Version, WriteTxn};

use super::{stored_entry, AppliedWrite, HookContext, NewState, WriteHook};
use crate::error::OpError;
use crate::groups::GroupSchema;
use crate::opattrs::stamp_modified;

/// The referential integrity hook.
#[derive(Debug, Clone)]
pub struct ReferentialIntegrity {
    groups: GroupSchema,
    /// The value left in a required member attribute whose last value went.
    placeholder: String,
}

/// A change to one value of a member attribute.
#[derive(Debug)]
struct Edit {
    /// The attribute.
    ty: AttributeTypeId,
    /// The DN whose values change.
    old: String,
    /// The DN they become; `None`: they are removed.
    new: Option<String>,
}

impl ReferentialIntegrity {
    /// The hook over `groups`, with `placeholder` for attributes that must keep a value.
    pub fn new(groups: GroupSchema, placeholder: String) -> ReferentialIntegrity {
        ReferentialIntegrity { groups, placeholder }
    }

    /// The edits a write makes, by the entry that lists a changed DN.
    fn edits(&self, applied: &AppliedWrite<'_>, after: &Version) -> BTreeMap<EntryId, Vec<Edit>> {
        let mut edits: BTreeMap<EntryId, Vec<Edit>> = BTreeMap::new();
        let before = applied.before;
        let mut renamed = |old: String, new: Option<String>| {
            for (id, ty) in self.groups.listing(after, &old, false) {
                edits.entry(id).or_default().push(Edit {
                    ty,
                    old: old.clone(),
                    new: new.clone(),
                });
            }
        };
        match applied.state {
            NewState::Delete { victims } => {
                for (victim, _) in victims {
                    renamed(before.dn(*victim), None);
                }
            }
            NewState::Rename { id, .. } => {
                for moved in after.subtree(*id) {
                    renamed(before.dn(moved), Some(after.dn(moved)));
                }
            }
            NewState::Add { .. } | NewState::Modify { .. } => {}
        }
        edits
    }

    /// Applies `edits` to `entry`; false when nothing changed.
    fn apply(&self, entry: &mut Entry, edits: &[Edit], schema: &Schema) -> bool {
        let mut changed = false;
        for edit in edits {
            let Some(attr) = self.groups.member_attribute(edit.ty) else {
                continue;
            };
            let key = attr.key(edit.old.as_bytes());
            let none = Options::none();
            let Some(values) = entry.attribute(edit.ty, &none).map(|a| a.values.clone()) else {
                continue;
            };
            let mut kept: Vec<Vec<u8>> = Vec::with_capacity(values.len());
            for v in values {
                if attr.key(&v) != key {
                    kept.push(v);
                } else {
                    changed = true;
                    if let Some(new) = &edit.new {
                        if !kept.iter().any(|k| attr.key(k) == attr.key(new.as_bytes())) {
                            kept.push(new.as_bytes().to_vec());
                        }
                    }
                }
            }
            if kept.is_empty() && required(entry, edit.ty, schema, self.groups.object_class) {
                kept.push(self.placeholder.as_bytes().to_vec());
            }
            entry.set_values(edit.ty, &none, kept);
        }
        changed
    }
}

/// Whether one of `entry`'s object classes requires `ty`.
fn required(entry: &Entry, ty: AttributeTypeId, schema: &Schema, object_class: AttributeTypeId) -> bool {
    entry
        .attributes_of(object_class)
        .flat_map(|a| a.values.iter())
        .filter_map(|v| std::str::from_utf8(v).ok())
        .filter_map(|name| schema.object_class(name))
        .any(|c| c.requires(ty))
}

impl WriteHook for ReferentialIntegrity {
    fn name(&self) -> &'static str {
        "referential integrity"
    }

    fn changes_other_entries(&self) -> bool {
        true
    }

    fn after_change(
        &self,
        applied: &AppliedWrite<'_>,
        txn: &mut WriteTxn<'_>,
        ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        if !matches!(applied.state, NewState::Delete { .. } | NewState::Rename { .. }) {
            return Ok(());
        }
        for (id, edits) in self.edits(applied, txn.version()) {
            let after = txn.version();
            let Some(view) = after.entry(id) else {
                continue;
            };
            let mut entry = stored_entry(after, id, view.attrs())?;
            if self.apply(&mut entry, &edits, ctx.schema) {
                stamp_modified(&mut entry, ctx.identity.dn(), applied.stamp, ctx.optypes);
                txn.modify(id, &entry.to_stored())?;
            }
        }
        Ok(())
    }
}
