//! The uniqueness hook: no two entries of one scope (a configured subtree, or a naming
//! context) share a value of a unique attribute (`uid` by default), as OpenLDAP's unique
//! overlay and 389 DS's attribute uniqueness plugin refuse it. Each rule of `[uniqueness]`
//! (its attributes, its scopes; one `olcUniqueURI` each in OpenLDAP) is checked on its own,
//! in order, and the first refusal is the write's.
//!
//! | write | values checked |
//! | --- | --- |
//! | Add | every value of each unique attribute |
//! | Modify | the values the modify adds (a value the entry already held is not checked again) |
//! | Modify DN within one parent | the values the new RDN adds |
//! | Modify DN that moves the entry, or that brings it into a scope it was not in | every value of the entry and of every entry below it |
//!
//! The check runs in `before_change`, on the store's writer thread, against the
//! transaction's version: two writes that would add the same value one after the other,
//! from any connections, cannot both pass. A refusal is `constraintViolation` (19); its
//! message names the entry that holds the value only when the requester may read that
//! entry and the attribute (the access rules decide, as for a search), and otherwise
//! says that another entry holds it.

use larch_model::dn::NormDn;
use larch_model::entry::Entry;
use larch_proto::ResultCode;
use larch_store::{EntryId, Version};

use super::{HookContext, NewState, PendingWrite, WriteHook};
use crate::acl::{EntryAccess, Privileges, Target, What};
use crate::error::OpError;
use crate::uniqueness::{holder, Scopes, UniqueAttribute, UniqueRule};

/// The uniqueness hook.
#[derive(Debug, Clone)]
pub struct Unique {
    rules: Vec<Rule>,
}

/// One rule: its attributes, unique within each of its scopes.
#[derive(Debug, Clone)]
struct Rule {
    attributes: Vec<UniqueAttribute>,
    scopes: Scopes,
}

/// Values one entry of a write brings, to be checked.
struct Checked<'a> {
    /// The entry's name after the write.
    dn: &'a NormDn,
    /// The values, by attribute.
    values: Vec<(UniqueAttribute, Vec<Vec<u8>>)>,
}

impl Unique {
    /// The hook over `rules`, each checked on its own.
    pub fn new(rules: Vec<UniqueRule>) -> Unique {
        let rules = rules
            .into_iter()
            .map(|r| Rule {
                attributes: r.attributes,
                scopes: r.scopes,
            })
            .collect();
        Unique { rules }
    }
}

impl Rule {
    /// Every value of `entry`'s unique attributes.
    fn all_values(&self, entry: &Entry) -> Vec<(UniqueAttribute, Vec<Vec<u8>>)> {
        self.attributes
            .iter()
            .map(|a| {
                let values = entry
                    .attributes_of(a.ty)
                    .flat_map(|x| x.values.iter())
                    .cloned()
                    .collect();
                (*a, values)
            })
            .collect()
    }

    /// The values of `entry`'s unique attributes that entry `id` of `version` lacks.
    fn added_values(
        &self,
        entry: &Entry,
        version: &Version,
        id: EntryId,
    ) -> Vec<(UniqueAttribute, Vec<Vec<u8>>)> {
        let old = version.entry(id).map(|e| e.attrs());
        self.all_values(entry)
            .into_iter()
            .map(|(a, values)| {
                let new = values
                    .into_iter()
                    .filter(|v| match (old, a.key(v)) {
                        (Some(old), Some(key)) => !a.holds_key(old, &key),
                        _ => true,
                    })
                    .collect();
                (a, new)
            })
            .collect()
    }

    /// Refuses the first value of `checked` that an entry `skip` does not accept holds in
    /// one of the scopes of `checked.dn`.
    fn refuse_taken(
        &self,
        version: &Version,
        checked: &Checked<'_>,
        skip: &dyn Fn(EntryId) -> bool,
        ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        let scopes = self.scopes.of(version, checked.dn);
        for (attr, values) in &checked.values {
            for value in values {
                let Some(key) = attr.key(value) else {
                    continue;
                };
                for (root, root_dn) in &scopes {
                    if let Some(other) = holder(version, attr, value, &key, *root, skip) {
                        return Err(taken(version, attr, value, other, root_dn, ctx));
                    }
                }
            }
        }
        Ok(())
    }

    /// The checks of a Modify DN of entry `id` into `entry`.
    fn check_rename(
        &self,
        version: &Version,
        id: EntryId,
        entry: &Entry,
        ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        let old_dn = version.norm_dn(id);
        let moved = old_dn.parent_str() != entry.norm_dn.parent_str();
        let old_scopes = self.scopes.of(version, &old_dn);
        let enters = self
            .scopes
            .of(version, &entry.norm_dn)
            .iter()
            .any(|s| !old_scopes.contains(s));
        if !moved && !enters {
            let checked = Checked {
                dn: &entry.norm_dn,
                values: self.added_values(entry, version, id),
            };
            return self.refuse_taken(version, &checked, &|other| other == id, ctx);
        }
        // The whole subtree arrives: every value of every entry of it, each at its new
        // name; the subtree's own entries do not clash with each other.
        let in_subtree = |other: EntryId| version.is_within(other, id);
        let checked = Checked {
            dn: &entry.norm_dn,
            values: self.all_values(entry),
        };
        self.refuse_taken(version, &checked, &in_subtree, ctx)?;
        for below in version.subtree(id).skip(1) {
            let Some(view) = version.entry(below) else {
                continue;
            };
            let new_dn = renamed(&version.norm_dn(below), &old_dn, &entry.norm_dn);
            let values = self
                .attributes
                .iter()
                .map(|a| (*a, a.values(view.attrs()).map(<[u8]>::to_vec).collect()))
                .collect();
            let checked = Checked { dn: &new_dn, values };
            self.refuse_taken(version, &checked, &in_subtree, ctx)?;
        }
        Ok(())
    }

    /// The checks of `write` under this rule.
    fn check(&self, write: &PendingWrite, version: &Version, ctx: &HookContext<'_>) -> Result<(), OpError> {
        match &write.state {
            NewState::Add { entry, .. } => {
                let checked = Checked {
                    dn: &entry.norm_dn,
                    values: self.all_values(entry),
                };
                self.refuse_taken(version, &checked, &|_| false, ctx)
            }
            NewState::Modify { id, entry } => {
                let checked = Checked {
                    dn: &entry.norm_dn,
                    values: self.added_values(entry, version, *id),
                };
                self.refuse_taken(version, &checked, &|other| other == *id, ctx)
            }
            NewState::Rename { id, entry, .. } => self.check_rename(version, *id, entry, ctx),
            NewState::Delete { .. } => Ok(()),
        }
    }
}

/// `dn` (within `old_root`) once `old_root` is renamed to `new_root`.
fn renamed(dn: &NormDn, old_root: &NormDn, new_root: &NormDn) -> NormDn {
    let (d, o) = (dn.as_str(), old_root.as_str());
    let head = d.strip_suffix(o).unwrap_or(d);
    NormDn::from_normalized(&format!("{head}{}", new_root.as_str()))
}

/// The refusal of `value` of `attr`, held by `other` within the scope rooted at `root`.
fn taken(
    version: &Version,
    attr: &UniqueAttribute,
    value: &[u8],
    other: EntryId,
    root: &NormDn,
    ctx: &HookContext<'_>,
) -> OpError {
    let name = ctx.schema.attribute_type_by_id(attr.ty).map_or("?", |t| t.name());
    let value = String::from_utf8_lossy(value);
    let holder = if may_read(version, attr, other, ctx) {
        format!("`{}`", version.dn(other))
    } else {
        "another entry".to_string()
    };
    OpError::new(
        ResultCode::CONSTRAINT_VIOLATION,
        format!("{name} `{value}` is already held by {holder}; {name} values must be unique below `{root}`"),
    )
}

/// Whether the requester may read entry `id` and its `attr`.
fn may_read(version: &Version, attr: &UniqueAttribute, id: EntryId, ctx: &HookContext<'_>) -> bool {
    let requester = ctx.access.requester(ctx.identity, ctx.client, version);
    if requester.is_admin() {
        return true;
    }
    let mut access = EntryAccess::new(ctx.access, &requester, Target::Stored { version, id });
    access.allows(What::Entry, Privileges::READ) && access.allows(What::Attribute(attr.ty), Privileges::READ)
}

impl WriteHook for Unique {
    fn name(&self) -> &'static str {
        "uniqueness"
    }

    fn before_change(
        &self,
        write: &mut PendingWrite,
        version: &Version,
        ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        for rule in &self.rules {
            rule.check(write, version, ctx)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::renamed;
    use larch_model::dn::NormDn;

    #[test]
    fn an_entry_below_a_moved_root_takes_its_new_name() {
        let n = NormDn::from_normalized;
        assert_eq!(
            renamed(&n("uid=a,ou=old,dc=x"), &n("ou=old,dc=x"), &n("ou=new,ou=y,dc=x")),
            n("uid=a,ou=new,ou=y,dc=x")
        );
        assert_eq!(
            renamed(&n("ou=old,dc=x"), &n("ou=old,dc=x"), &n("ou=n,dc=x")),
            n("ou=n,dc=x")
        );
    }
}
