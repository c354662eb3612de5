//! The memberUid hook (`groups.sync_member_uid`, off by default): on a POSIX group that
//! also lists its members by DN (rfc2307bis: `posixGroup` with `groupOfNames` or
//! `groupOfMembers`, members in `member`; or with `groupOfUniqueNames`, members in
//! `uniqueMember`), `memberUid` (RFC 2307: the members' `uid` values) is kept in step with
//! the member attribute, and back, so that clients reading either attribute (SSSD with
//! `ldap_schema = rfc2307` or `rfc2307bis`, `getent group` through nslcd) see one
//! membership. The rules are `crate::groups::posix`'s.
//!
//! | write | what changes, in the same transaction |
//! | --- | --- |
//! | Add of such a group | the member attribute gains the entries its `memberUid` values name; `memberUid` gains the `uid` values of the entries it lists |
//! | Modify of such a group (or one that makes an entry such a group) | a member added adds its entry's `uid` values to `memberUid`; one removed removes them, unless another member still has that `uid` or the same modify adds it; a `memberUid` value added adds the entry with that `uid` to the members; one removed removes the members with that `uid`, unless the same modify adds them |
//! | Add of an entry, Modify of its `uid`, or Modify DN of it | the groups that list it get its `uid` values in `memberUid` (its old values leave); the groups whose `memberUid` holds a `uid` it gains list it as a member, when it is the one entry with that `uid` |
//! | Delete of an entry | its `uid` values leave `memberUid` of every such group that listed it, unless another member has them (referential integrity removes its DN) |
//!
//! Group changes happen in `before_change` (the group's own new state); changes to other
//! groups in `after_change`, after referential integrity has rewritten their member
//! values. The memberOf hook, after this one, recomputes the written entry's `memberOf`
//! from the groups that list it once this hook is done.

use larch_model::entry::{Entry, Options};
use larch_model::schema::AttributeTypeId;
use larch_model::schema::Schema;
use larch_store::{EntryId, Version, WriteTxn};

use super::{stored_entry, AppliedWrite, HookContext, NewState, PendingWrite, WriteHook, WriteKind};
use crate::error::OpError;
use crate::groups::posix::{naming_context, synced, values, InVersion, Membership, PosixGroups};
use crate::groups::{GroupSchema, MemberAttribute};
use crate::opattrs::stamp_modified;

/// The memberUid hook.
#[derive(Debug, Clone)]
pub struct MemberUid {
    posix: PosixGroups,
}

/// An entry whose `uid` values a write may have changed: its ID, its values before and
/// after, and whether the groups listing it may lack any of its values (it is new, or
/// under a new name that groups may have listed before).
struct UidChange {
    id: EntryId,
    was: Vec<Vec<u8>>,
    is: Vec<Vec<u8>>,
    relisted: bool,
}

impl MemberUid {
    /// The hook over `groups`, when `schema` has `posixGroup`, `memberUid` and `uid`.
    pub fn new(groups: GroupSchema, schema: &Schema) -> Option<MemberUid> {
        PosixGroups::new(groups, schema).map(|posix| MemberUid { posix })
    }

    /// The attribute whose change makes this hook list an entry in other groups: `uid`.
    pub fn uid(&self) -> AttributeTypeId {
        self.posix.uid.ty
    }

    /// Amends a new or changed group `entry` (entry `old` of `version` before, if any).
    fn amend_group(&self, entry: &mut Entry, old: Option<EntryId>, version: &Version) {
        let stored = entry.to_stored();
        let Some(member) = self.posix.synced_member_attribute(stored.as_ref()) else {
            return;
        };
        let old = old
            .and_then(|id| version.entry(id))
            .filter(|e| self.posix.synced_member_attribute(e.attrs()).is_some())
            .map(|e| self.posix.membership(e.attrs(), member))
            .unwrap_or_default();
        let new = self.posix.membership(stored.as_ref(), member);
        let look = InVersion::new(&self.posix, version, member, &entry.norm_dn);
        let out = synced(&old, &new, &look);
        if out != new {
            entry.set_values(member.ty, &Options::none(), out.members);
            entry.set_values(self.posix.member_uid.ty, &Options::none(), out.uids);
        }
    }

    /// The entries whose `uid` a write changed or that it added or renamed.
    fn uid_changes(&self, applied: &AppliedWrite<'_>, after: &Version) -> Vec<UidChange> {
        let before = applied.before;
        let uids_in = |v: &Version, id: EntryId| {
            v.entry(id)
                .map(|e| self.posix.uids(e.attrs()))
                .unwrap_or_default()
        };
        let uid = self.posix.uid;
        let change = |id: EntryId, relisted: bool| {
            let (was, is) = (uids_in(before, id), uids_in(after, id));
            let differ = !minus(uid, &was, &is).is_empty() || !minus(uid, &is, &was).is_empty();
            (differ || relisted && !is.is_empty()).then_some(UidChange {
                id,
                was,
                is,
                relisted,
            })
        };
        match applied.state {
            NewState::Modify { id, .. } => change(*id, false).into_iter().collect(),
            NewState::Rename { id, .. } => change(*id, true).into_iter().collect(),
            NewState::Add { .. } => change(applied.id, true).into_iter().collect(),
            NewState::Delete { victims } => victims
                .iter()
                .map(|(id, _)| UidChange {
                    id: *id,
                    was: uids_in(before, *id),
                    is: Vec::new(),
                    relisted: false,
                })
                .filter(|c| !c.was.is_empty())
                .collect(),
        }
    }

    /// Group `group` of `txn` after entry `member` lost `lose` and gained `gain` as its
    /// `uid`: its `memberUid`, written when it changes.
    fn retune_group(
        &self,
        txn: &mut WriteTxn<'_>,
        group: EntryId,
        lose: &[Vec<u8>],
        gain: &[Vec<u8>],
        applied: &AppliedWrite<'_>,
        ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        let after = txn.version();
        let Some(view) = after
            .entry(group)
            .filter(|e| self.posix.synced_member_attribute(e.attrs()).is_some())
        else {
            return Ok(());
        };
        let still_held: Vec<Vec<u8>> = self
            .posix
            .groups
            .member_entries(after, view.attrs())
            .into_iter()
            .filter_map(|m| after.entry(m))
            .flat_map(|e| self.posix.uids(e.attrs()))
            .collect();
        let member_uid = self.posix.member_uid;
        let mut uids = values(view.attrs(), member_uid.ty);
        let before = uids.clone();
        uids.retain(|u| !contains(member_uid, lose, u) || contains(member_uid, &still_held, u));
        for u in gain {
            if !contains(member_uid, &uids, u) {
                uids.push(u.clone());
            }
        }
        if uids == before {
            return Ok(());
        }
        let mut entry = stored_entry(after, group, view.attrs())?;
        entry.set_values(member_uid.ty, &Options::none(), uids);
        stamp_modified(&mut entry, ctx.identity.dn(), applied.stamp, ctx.optypes);
        txn.modify(group, &entry.to_stored())?;
        Ok(())
    }

    /// Entry `id` of `txn` gained `gained` as `uid` values (and holds `all`): every group of
    /// its naming context whose `memberUid` holds one of them, and for which it is the one
    /// entry with that `uid`, lists it as a member, with all its `uid` values.
    fn join_groups(
        &self,
        txn: &mut WriteTxn<'_>,
        id: EntryId,
        gained: &[Vec<u8>],
        all: &[Vec<u8>],
        applied: &AppliedWrite<'_>,
        ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        let Some(scope) = naming_context(txn.version(), &txn.version().norm_dn(id)) else {
            return Ok(());
        };
        for uid in gained {
            let after = txn.version();
            if self.posix.holders_of_uid(after, uid, scope) != [id] {
                continue;
            }
            for group in self.posix.groups_with_member_uid(after, uid, scope) {
                self.join_group(txn, group, id, all, applied, ctx)?;
            }
        }
        Ok(())
    }

    /// Group `group` of `txn` lists entry `id` as a member, with its `uid` values `uids`.
    fn join_group(
        &self,
        txn: &mut WriteTxn<'_>,
        group: EntryId,
        id: EntryId,
        uids: &[Vec<u8>],
        applied: &AppliedWrite<'_>,
        ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        let after = txn.version();
        let Some(view) = after.entry(group) else {
            return Ok(());
        };
        let Some(member) = self.posix.synced_member_attribute(view.attrs()) else {
            return Ok(());
        };
        let dn = after.dn(id).into_bytes();
        let mut now: Membership = self.posix.membership(view.attrs(), member);
        let before = now.clone();
        push_new(member, &mut now.members, dn);
        for u in uids {
            push_new(self.posix.member_uid, &mut now.uids, u.clone());
        }
        if now == before {
            return Ok(());
        }
        let mut entry = stored_entry(after, group, view.attrs())?;
        entry.set_values(member.ty, &Options::none(), now.members);
        entry.set_values(self.posix.member_uid.ty, &Options::none(), now.uids);
        stamp_modified(&mut entry, ctx.identity.dn(), applied.stamp, ctx.optypes);
        txn.modify(group, &entry.to_stored())?;
        Ok(())
    }
}

fn contains(attr: MemberAttribute, values: &[Vec<u8>], value: &[u8]) -> bool {
    let key = attr.key(value);
    values.iter().any(|v| attr.key(v) == key)
}

/// `values` less those of `other`, compared by `attr`'s rule.
fn minus(attr: MemberAttribute, values: &[Vec<u8>], other: &[Vec<u8>]) -> Vec<Vec<u8>> {
    values
        .iter()
        .filter(|v| !contains(attr, other, v))
        .cloned()
        .collect()
}

fn push_new(attr: MemberAttribute, values: &mut Vec<Vec<u8>>, value: Vec<u8>) {
    if !contains(attr, values, &value) {
        values.push(value);
    }
}

impl WriteHook for MemberUid {
    fn name(&self) -> &'static str {
        "memberUid"
    }

    fn before_change(
        &self,
        write: &mut PendingWrite,
        version: &Version,
        _ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        match &mut write.state {
            NewState::Add { entry, .. } => self.amend_group(entry, None, version),
            NewState::Modify { id, entry } => self.amend_group(entry, Some(*id), version),
            NewState::Rename { .. } | NewState::Delete { .. } => {}
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
        let uid = self.posix.uid;
        for change in self.uid_changes(applied, txn.version()) {
            let lose = minus(uid, &change.was, &change.is);
            let gained = minus(uid, &change.is, &change.was);
            // Groups listing an entry new or renamed may have listed its name before it
            // had these values: they get all of them.
            let gain = if change.relisted { &change.is } else { &gained };
            // A deleted entry is found among the groups that listed it before the write; a
            // renamed one under its new name (referential integrity has rewritten it).
            let groups = match txn.version().entry(change.id) {
                Some(_) => self
                    .posix
                    .groups
                    .groups_listing(txn.version(), &txn.version().dn(change.id)),
                None => self
                    .posix
                    .groups
                    .groups_listing(applied.before, &applied.before.dn(change.id)),
            };
            for group in groups {
                self.retune_group(txn, group, &lose, gain, applied, ctx)?;
            }
            if txn.version().entry(change.id).is_some() && !gained.is_empty() {
                self.join_groups(txn, change.id, &gained, &change.is, applied, ctx)?;
            }
        }
        Ok(())
    }
}
