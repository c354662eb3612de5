//! The memberOf hook: every entry a group lists carries the group's DN in `memberOf`,
//! changed in the same transaction as the write that changed the membership, as
//! OpenLDAP's memberof overlay and 389 DS's memberOf plugin keep it.
//!
//! | write | what changes |
//! | --- | --- |
//! | Add of an entry | its `memberOf`: the groups that already list its DN (`before_change`), and those a hook before this one made list it (`after_change`) |
//! | Add of a group | each listed entry gains the group |
//! | Modify of a group (members, or its classes) | entries no longer listed lose the group, newly listed ones gain it (compared by entry, so a respelled value changes nothing) |
//! | Modify DN of a group, or of an entry above groups | each listed entry's value for the group takes the new DN |
//! | Modify DN of any entry (its subtree included) | its `memberOf`: the groups that list its new name |
//! | Modify of an entry's `uid`, with memberUid kept in step | its `memberOf`: the groups that list it after the write (the memberUid hook may have added it to groups whose `memberUid` holds a `uid` it gained) |
//! | Delete of a group (a subtree delete included) | each listed entry that remains loses the group |
//!
//! A member's own rename or delete changes the groups' values, which is referential
//! integrity's work (`refint.rs`, before this hook in the table): afterwards its
//! `memberOf` is still right. Values are compared by `distinguishedNameMatch`; a listed
//! entry that changes gets the write's modifyTimestamp, modifiersName and entryCSN.
//! `memberOf` is NO-USER-MODIFICATION: clients never write it, and an imported entry's
//! values are recomputed (`crate::groups::check`).
//!
//! Beside memberOf the hook keeps `transitiveMemberOf`, the chain of nested groups
//! (`crate::groups::chain`): for every entry whose memberOf changes, every entry renamed,
//! and every entry whose chain holds one of those. Both attributes of an entry change in
//! one modify.

use std::collections::{BTreeMap, BTreeSet};

use larch_model::entry::Options;
use larch_model::entry::StoredRef;
use larch_model::schema::AttributeTypeId;
use larch_store::{EntryId, Version, WriteTxn};

use super::{stored_entry, AppliedWrite, HookContext, NewState, PendingWrite, WriteHook, WriteKind};
use crate::error::OpError;
use crate::groups::chain::{holding, same_dns, MemberOfView};
use crate::groups::{entry_named, GroupSchema};
use crate::opattrs::stamp_modified;

/// The memberOf hook.
#[derive(Debug, Clone)]
pub struct MemberOf {
    groups: GroupSchema,
    /// `uid`, when the memberUid hook (before this one) makes groups list an entry whose
    /// `uid` a Modify changes: only then does such a Modify change the entry's own
    /// `memberOf`, so only then are its groups looked up again.
    relisting: Option<AttributeTypeId>,
}

/// A change to one entry's `memberOf`.
#[derive(Debug)]
enum Edit {
    /// Gains the group of this DN.
    Gain(String),
    /// Loses the group of this DN.
    Lose(String),
    /// Holds exactly the groups of these DNs.
    Exactly(Vec<String>),
}

impl MemberOf {
    /// The hook over `groups`; `relisting` is `uid` when memberUid is kept in step.
    pub fn new(groups: GroupSchema, relisting: Option<AttributeTypeId>) -> MemberOf {
        MemberOf { groups, relisting }
    }

    /// The edits a write makes to the entries its groups list, by entry.
    fn edits(&self, applied: &AppliedWrite<'_>, after: &Version) -> BTreeMap<EntryId, Vec<Edit>> {
        let mut edits: BTreeMap<EntryId, Vec<Edit>> = BTreeMap::new();
        let before = applied.before;
        let mut push = |id: EntryId, edit: Edit| edits.entry(id).or_default().push(edit);
        match applied.state {
            NewState::Add { .. } => {
                let id = applied.id;
                if let Some(view) = after.entry(id) {
                    push(id, self.listed_by(after, id));
                    for member in self.groups.member_entries(after, view.attrs()) {
                        push(member, Edit::Gain(after.dn(id)));
                    }
                }
            }
            NewState::Modify { id, .. } => {
                let (Some(old), Some(new)) = (before.entry(*id), after.entry(*id)) else {
                    return edits;
                };
                if self.relisted(old.attrs(), new.attrs()) {
                    push(*id, self.listed_by(after, *id));
                }
                for (member, edit) in
                    self.modify_edits(before, old.attrs(), after, new.attrs(), after.dn(*id))
                {
                    push(member, edit);
                }
            }
            NewState::Rename { id, .. } => {
                for renamed in after.subtree(*id) {
                    let Some(view) = after.entry(renamed) else {
                        continue;
                    };
                    // Under its new name an entry is listed by the groups that list that
                    // name (some may have named it before it existed), and by no other.
                    push(renamed, self.listed_by(after, renamed));
                    for member in self.groups.member_entries(after, view.attrs()) {
                        push(member, Edit::Lose(before.dn(renamed)));
                        push(member, Edit::Gain(after.dn(renamed)));
                    }
                }
            }
            NewState::Delete { victims } => {
                for (victim, _) in victims {
                    let Some(view) = before.entry(*victim) else {
                        continue;
                    };
                    for member in self.groups.member_entries(before, view.attrs()) {
                        if after.entry(member).is_some() {
                            push(member, Edit::Lose(before.dn(*victim)));
                        }
                    }
                }
            }
        }
        edits
    }

    /// Entry `id` holds exactly the groups of `after` that list it. The entry a write adds,
    /// changes or renames gets this edit: a hook before this one (memberUid) may have made
    /// groups list it.
    fn listed_by(&self, after: &Version, id: EntryId) -> Edit {
        let listing = self.groups.groups_listing(after, &after.dn(id));
        Edit::Exactly(listing.iter().map(|g| after.dn(*g)).collect())
    }

    /// Whether a Modify of `old` into `new` may have made other groups list the entry:
    /// its `uid` changed while memberUid is kept in step.
    fn relisted(&self, old: StoredRef<'_>, new: StoredRef<'_>) -> bool {
        self.relisting.is_some_and(|uid| {
            let was = old.attribute(uid).flat_map(|a| a.values.iter());
            let is = new.attribute(uid).flat_map(|a| a.values.iter());
            !was.eq(is)
        })
    }

    /// The edits a Modify of entry `old` (in `before`) into `new` (in `after`) makes. When
    /// its group classes stay, only the member values that changed are looked up (adding
    /// one member to a large group reads one value); a value removed loses its entry the
    /// group only when no other value still names it.
    fn modify_edits(
        &self,
        before: &Version,
        old: StoredRef<'_>,
        after: &Version,
        new: StoredRef<'_>,
        group_dn: String,
    ) -> Vec<(EntryId, Edit)> {
        let mut out = Vec::new();
        if self.groups.group_member_types(old) != self.groups.group_member_types(new) {
            let was = self.groups.member_entries(before, old);
            let is = self.groups.member_entries(after, new);
            out.extend(
                was.iter()
                    .filter(|m| is.binary_search(m).is_err())
                    .map(|m| (*m, Edit::Lose(group_dn.clone()))),
            );
            out.extend(
                is.iter()
                    .filter(|m| was.binary_search(m).is_err())
                    .map(|m| (*m, Edit::Gain(group_dn.clone()))),
            );
            return out;
        }
        let (removed, added) = value_changes(self.groups.member_values(old), self.groups.member_values(new));
        if !removed.is_empty() {
            let is = self.groups.member_entries(after, new);
            for value in removed {
                if let Some(m) = entry_named(before, value).filter(|m| is.binary_search(m).is_err()) {
                    out.push((m, Edit::Lose(group_dn.clone())));
                }
            }
        }
        for value in added {
            if let Some(m) = entry_named(after, value) {
                out.push((m, Edit::Gain(group_dn.clone())));
            }
        }
        out
    }

    /// `attrs`' memberOf values after `edits`, or `None` when they do not change.
    fn edited_values(&self, attrs: StoredRef<'_>, edits: &[Edit]) -> Option<Vec<Vec<u8>>> {
        let rule = self.groups.member_of;
        let mut values: Vec<Vec<u8>> = attrs
            .attribute(rule.ty)
            .flat_map(|a| a.values.iter())
            .map(<[u8]>::to_vec)
            .collect();
        let mut changed = false;
        for edit in edits {
            match edit {
                Edit::Lose(dn) => {
                    let key = rule.key(dn.as_bytes());
                    let before = values.len();
                    values.retain(|v| rule.key(v) != key);
                    changed |= values.len() != before;
                }
                Edit::Gain(dn) => {
                    let key = rule.key(dn.as_bytes());
                    if !values.iter().any(|v| rule.key(v) == key) {
                        values.push(dn.as_bytes().to_vec());
                        changed = true;
                    }
                }
                Edit::Exactly(dns) => {
                    let keys = |vs: &mut dyn Iterator<Item = &[u8]>| {
                        let mut k: Vec<Option<Vec<u8>>> = vs.map(|v| rule.key(v)).collect();
                        k.sort();
                        k
                    };
                    let now = keys(&mut values.iter().map(Vec::as_slice));
                    let wanted = keys(&mut dns.iter().map(String::as_bytes));
                    if now != wanted {
                        values = dns.iter().map(|d| d.as_bytes().to_vec()).collect();
                        changed = true;
                    }
                }
            }
        }
        changed.then_some(values)
    }
}

impl WriteHook for MemberOf {
    fn name(&self) -> &'static str {
        "memberOf"
    }

    fn before_change(
        &self,
        write: &mut PendingWrite,
        version: &Version,
        _ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        if let NewState::Add { entry, .. } = &mut write.state {
            let groups = self.groups.groups_listing(version, &entry.dn.to_string());
            let values: Vec<Vec<u8>> = groups.iter().map(|g| version.dn(*g).into_bytes()).collect();
            let none = BTreeMap::new();
            let chain = self.view(version, &none).chain(values.clone());
            entry.set_values(self.groups.member_of.ty, &Options::none(), values);
            let chain = chain.into_iter().map(String::into_bytes).collect();
            entry.set_values(self.groups.transitive.ty, &Options::none(), chain);
        }
        Ok(())
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
        if applied.kind == WriteKind::PasswordModify {
            return Ok(());
        }
        let after = txn.version();
        let member_of = self.new_member_of(applied, after);
        let chains = self.new_chains(applied, after, &member_of);
        let changed: BTreeSet<EntryId> = member_of.keys().chain(chains.keys()).copied().collect();
        for id in changed {
            let after = txn.version();
            let Some(view) = after.entry(id) else {
                continue;
            };
            let mut entry = stored_entry(after, id, view.attrs())?;
            if let Some(values) = member_of.get(&id) {
                entry.set_values(self.groups.member_of.ty, &Options::none(), values.clone());
            }
            if let Some(chain) = chains.get(&id) {
                let values = chain.iter().map(|d| d.as_bytes().to_vec()).collect();
                entry.set_values(self.groups.transitive.ty, &Options::none(), values);
            }
            stamp_modified(&mut entry, ctx.identity.dn(), applied.stamp, ctx.optypes);
            txn.modify(id, &entry.to_stored())?;
        }
        Ok(())
    }
}

impl MemberOf {
    /// memberOf values as `pending` leaves them, over `version`.
    fn view<'a>(
        &self,
        version: &'a Version,
        pending: &'a BTreeMap<EntryId, Vec<Vec<u8>>>,
    ) -> MemberOfView<'a> {
        MemberOfView {
            version,
            pending,
            member_of: self.groups.member_of,
        }
    }

    /// The entries whose memberOf the write changes, with their new values.
    fn new_member_of(&self, applied: &AppliedWrite<'_>, after: &Version) -> BTreeMap<EntryId, Vec<Vec<u8>>> {
        let mut out = BTreeMap::new();
        for (id, edits) in self.edits(applied, after) {
            let Some(view) = after.entry(id) else {
                continue;
            };
            if let Some(values) = self.edited_values(view.attrs(), &edits) {
                out.insert(id, values);
            }
        }
        out
    }

    /// The entries whose chain of nested groups changes ([`crate::groups::chain`]), with
    /// their new chains: those whose memberOf changes, the entries renamed, and every entry
    /// whose chain holds one of them. An entry whose memberOf changes is written anyway, so
    /// its chain is written without comparing it to the stored one (a comparison keys
    /// every value of both); any other entry only when its chain differs.
    fn new_chains(
        &self,
        applied: &AppliedWrite<'_>,
        after: &Version,
        member_of: &BTreeMap<EntryId, Vec<Vec<u8>>>,
    ) -> BTreeMap<EntryId, Vec<String>> {
        let mut roots: BTreeSet<EntryId> = member_of.keys().copied().collect();
        let mut names: Vec<String> = roots.iter().map(|id| after.dn(*id)).collect();
        if let NewState::Rename { id, .. } = applied.state {
            for renamed in after.subtree(*id) {
                roots.insert(renamed);
                names.push(applied.before.dn(renamed));
            }
        }
        for name in &names {
            roots.extend(holding(after, self.groups.transitive, name));
        }
        let view = self.view(after, member_of);
        let mut out = BTreeMap::new();
        for id in roots {
            let Some(entry) = after.entry(id) else {
                continue;
            };
            let chain = view.chain(view.direct(id));
            if member_of.contains_key(&id) {
                out.insert(id, chain);
                continue;
            }
            let stored: Vec<Vec<u8>> = entry
                .attrs()
                .attribute(self.groups.transitive.ty)
                .flat_map(|a| a.values.iter())
                .map(<[u8]>::to_vec)
                .collect();
            if !same_dns(self.groups.transitive, &stored, &chain) {
                out.insert(id, chain);
            }
        }
        out
    }
}

/// The values of `old` that `new` lacks and those `new` adds, compared as octets (each
/// value counted as often as it appears).
fn value_changes<'a>(mut old: Vec<&'a [u8]>, mut new: Vec<&'a [u8]>) -> (Vec<&'a [u8]>, Vec<&'a [u8]>) {
    old.sort_unstable();
    new.sort_unstable();
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        match (old.get(i), new.get(j)) {
            (Some(a), Some(b)) if a == b => {
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a < b => {
                removed.push(*a);
                i += 1;
            }
            (Some(a), None) => {
                removed.push(*a);
                i += 1;
            }
            (_, Some(b)) => {
                added.push(*b);
                j += 1;
            }
            (None, None) => break,
        }
    }
    (removed, added)
}

#[cfg(test)]
mod tests {
    use super::value_changes;

    #[test]
    fn value_changes_compare_as_multisets() {
        let (removed, added) = value_changes(
            vec![b"b".as_slice(), b"a", b"c", b"c"],
            vec![b"c".as_slice(), b"d", b"a"],
        );
        assert_eq!(removed, [b"b".as_slice(), b"c"]);
        assert_eq!(added, [b"d".as_slice()]);
        let (removed, added) = value_changes(vec![], vec![b"x".as_slice()]);
        assert!(removed.is_empty());
        assert_eq!(added, [b"x".as_slice()]);
    }
}
