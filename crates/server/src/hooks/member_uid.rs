//! The memberUid hook (`groups.sync_member_uid`, off by default): on a POSIX group that
//! also lists its members by DN (rfc2307bis: `posixGroup` with `groupOfNames` or
//! `groupOfMembers`), `memberUid` (RFC 2307: the members' `uid` values) is kept in step
//! with `member`, and back, so that clients reading either attribute (SSSD with
//! `ldap_schema = rfc2307` or `rfc2307bis`, `getent group` through nslcd) see one
//! membership.
//!
//! | write | what changes, in the same transaction |
//! | --- | --- |
//! | Add of such a group | `memberUid` gains the `uid` values of the entries `member` names; `member` gains the DN of the entry each `memberUid` value names |
//! | Modify of such a group (or one that makes an entry such a group) | a `member` value added adds its entry's `uid` values to `memberUid`; one removed removes them, unless another member still has that `uid` or the same modify adds it; a `memberUid` value added adds the DN of the entry with that `uid` to `member`; one removed removes the members with that `uid`, unless the same modify adds them |
//! | Modify of an entry's `uid`, or Modify DN that changes it | its old values leave, its new ones join, `memberUid` of every such group that lists it |
//! | Delete of an entry | its `uid` values leave `memberUid` of every such group that listed it, unless another member has them (referential integrity removes its DN) |
//!
//! The entry a `memberUid` value names is the one entry with that `uid` (compared by
//! `uid`'s equality rule) below the group's naming context, found through `uid`'s equality
//! index; a value no entry or several entries hold changes no `member` (RFC 2307 allows
//! names of accounts outside the directory). `memberUid` values are compared by
//! `memberUid`'s own rule (case matters). Group changes happen in `before_change` (the
//! group's own new state); changes to other groups in `after_change`, after referential
//! integrity has rewritten their `member` values.

use larch_model::entry::{Entry, Options, StoredRef};
use larch_model::schema::{AttributeTypeId, Schema};
use larch_store::{EntryId, Version, WriteTxn};

use super::{stored_entry, AppliedWrite, HookContext, NewState, PendingWrite, WriteHook, WriteKind};
use crate::error::OpError;
use crate::groups::{entry_named, GroupSchema, MemberAttribute};
use crate::opattrs::stamp_modified;
use crate::uniqueness::Scopes;

/// The memberUid hook.
#[derive(Debug, Clone)]
pub struct MemberUid {
    groups: GroupSchema,
    posix_group: String,
    member: MemberAttribute,
    member_uid: MemberAttribute,
    uid: MemberAttribute,
}

/// Values compared by a key.
trait Keyed {
    fn key_of(&self, value: &[u8]) -> Option<Vec<u8>>;

    fn contains(&self, values: &[Vec<u8>], value: &[u8]) -> bool {
        let key = self.key_of(value);
        values.iter().any(|v| self.key_of(v) == key)
    }

    /// `values` less those of `other`.
    fn minus(&self, values: &[Vec<u8>], other: &[Vec<u8>]) -> Vec<Vec<u8>> {
        values
            .iter()
            .filter(|v| !self.contains(other, v))
            .cloned()
            .collect()
    }
}

impl Keyed for MemberAttribute {
    fn key_of(&self, value: &[u8]) -> Option<Vec<u8>> {
        self.key(value)
    }
}

/// A group's `member` and `memberUid` values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Membership {
    members: Vec<Vec<u8>>,
    uids: Vec<Vec<u8>>,
}

/// How the two attributes are read: the keys of each, and the lookups between them.
trait Lookups {
    /// Compares `member` values.
    fn member_key(&self, value: &[u8]) -> Option<Vec<u8>>;
    /// Compares `memberUid` values.
    fn uid_key(&self, value: &[u8]) -> Option<Vec<u8>>;
    /// The `uid` values of the entry a `member` value names (none: no such entry).
    fn uids_of(&self, member: &[u8]) -> Vec<Vec<u8>>;
    /// The DN of the one entry whose `uid` is `uid`.
    fn dn_of(&self, uid: &[u8]) -> Option<Vec<u8>>;
}

struct ByKey<'a, F: Fn(&[u8]) -> Option<Vec<u8>>>(&'a F);

impl<F: Fn(&[u8]) -> Option<Vec<u8>>> Keyed for ByKey<'_, F> {
    fn key_of(&self, value: &[u8]) -> Option<Vec<u8>> {
        (self.0)(value)
    }
}

/// The membership after a group's change from `old` (empty: the group is new, or was no
/// such group) to `new`, as the module documentation's rules give it.
fn synced(old: &Membership, new: &Membership, look: &dyn Lookups) -> Membership {
    let member_key = |v: &[u8]| look.member_key(v);
    let uid_key = |v: &[u8]| look.uid_key(v);
    let (members, uids) = (ByKey(&member_key), ByKey(&uid_key));
    let added_members = members.minus(&new.members, &old.members);
    let removed_members = members.minus(&old.members, &new.members);
    let added_uids = uids.minus(&new.uids, &old.uids);
    let removed_uids = uids.minus(&old.uids, &new.uids);

    let mut out = new.clone();
    for uid in &added_uids {
        if let Some(dn) = look.dn_of(uid) {
            if !members.contains(&out.members, &dn) {
                out.members.push(dn);
            }
        }
    }
    out.members.retain(|m| {
        members.contains(&added_members, m)
            || !look.uids_of(m).iter().any(|u| uids.contains(&removed_uids, u))
    });
    for member in &added_members {
        for uid in look.uids_of(member) {
            if !uids.contains(&out.uids, &uid) {
                out.uids.push(uid);
            }
        }
    }
    let still_held: Vec<Vec<u8>> = out.members.iter().flat_map(|m| look.uids_of(m)).collect();
    let gone: Vec<Vec<u8>> = removed_members
        .iter()
        .flat_map(|m| look.uids_of(m))
        .filter(|u| !uids.contains(&added_uids, u) && !uids.contains(&still_held, u))
        .collect();
    out.uids.retain(|u| !uids.contains(&gone, u));
    out
}

/// [`Lookups`] in one version, below one naming context.
struct InVersion<'a> {
    hook: &'a MemberUid,
    version: &'a Version,
    scope: Option<EntryId>,
}

impl Lookups for InVersion<'_> {
    fn member_key(&self, value: &[u8]) -> Option<Vec<u8>> {
        self.hook.member.key(value)
    }

    fn uid_key(&self, value: &[u8]) -> Option<Vec<u8>> {
        self.hook.member_uid.key(value)
    }

    fn uids_of(&self, member: &[u8]) -> Vec<Vec<u8>> {
        entry_named(self.version, member)
            .and_then(|id| self.version.entry(id))
            .map(|e| self.hook.uids(e.attrs()))
            .unwrap_or_default()
    }

    fn dn_of(&self, uid: &[u8]) -> Option<Vec<u8>> {
        let scope = self.scope?;
        let holders = self.hook.holders_of_uid(self.version, uid, scope);
        match holders.as_slice() {
            [one] => Some(self.version.dn(*one).into_bytes()),
            _ => None,
        }
    }
}

impl MemberUid {
    /// The hook over `groups`, when `schema` has `posixGroup`, `memberUid`, `uid` and
    /// `member`.
    pub fn new(groups: GroupSchema, schema: &Schema) -> Option<MemberUid> {
        let attribute = |name: &str| {
            let t = schema.attribute_type(name)?;
            Some(MemberAttribute {
                ty: t.id,
                rule: t.equality?,
            })
        };
        let member = attribute("member")?;
        Some(MemberUid {
            posix_group: schema.object_class("posixGroup")?.name().to_string(),
            member_uid: attribute("memberUid")?,
            uid: attribute("uid")?,
            member,
            groups,
        })
    }

    /// Whether `attrs` is a POSIX group that lists members in `member`.
    fn is_synced_group(&self, attrs: StoredRef<'_>) -> bool {
        let posix = attrs
            .attribute(self.groups.object_class)
            .flat_map(|a| a.values.iter())
            .any(|v| v.eq_ignore_ascii_case(self.posix_group.as_bytes()));
        posix && self.groups.group_member_types(attrs).contains(&self.member.ty)
    }

    /// The `uid` values of `attrs`.
    fn uids(&self, attrs: StoredRef<'_>) -> Vec<Vec<u8>> {
        values(attrs, self.uid.ty)
    }

    /// The entries below `scope` whose `uid` is `uid`.
    fn holders_of_uid(&self, version: &Version, uid: &[u8], scope: EntryId) -> Vec<EntryId> {
        let Some(key) = self.uid.key(uid) else {
            return Vec::new();
        };
        let holds = |id: &EntryId| {
            version.is_within(*id, scope)
                && version.entry(*id).is_some_and(|e| {
                    e.attrs()
                        .attribute(self.uid.ty)
                        .flat_map(|a| a.values.iter())
                        .any(|v| self.uid.key(v).as_deref() == Some(key.as_slice()))
                })
        };
        let indexed = version
            .index(self.uid.ty)
            .and_then(|index| index.equality(self.uid.rule, uid, version.keyer()));
        match indexed {
            Some(candidates) => candidates.iter().filter(holds).collect(),
            None => version.subtree(scope).filter(holds).collect(),
        }
    }

    /// Amends a new or changed group `entry` (entry `old` of `version` before, if any).
    fn amend_group(&self, entry: &mut Entry, old: Option<EntryId>, version: &Version) {
        let stored = entry.to_stored();
        if !self.is_synced_group(stored.as_ref()) {
            return;
        }
        let old = old
            .and_then(|id| version.entry(id))
            .filter(|e| self.is_synced_group(e.attrs()))
            .map(|e| self.membership(e.attrs()))
            .unwrap_or_default();
        let new = self.membership(stored.as_ref());
        let scope = Scopes::NamingContexts
            .of(version, &entry.norm_dn)
            .first()
            .map(|(id, _)| *id);
        let look = InVersion {
            hook: self,
            version,
            scope,
        };
        let out = synced(&old, &new, &look);
        if out != new {
            entry.set_values(self.member.ty, &Options::none(), out.members);
            entry.set_values(self.member_uid.ty, &Options::none(), out.uids);
        }
    }

    fn membership(&self, attrs: StoredRef<'_>) -> Membership {
        Membership {
            members: values(attrs, self.member.ty),
            uids: values(attrs, self.member_uid.ty),
        }
    }

    /// The entries whose `uid` a write changed, with their values before and after.
    fn uid_changes(&self, applied: &AppliedWrite<'_>, after: &Version) -> Vec<UidChange> {
        let before = applied.before;
        let uids_in =
            |v: &Version, id: EntryId| v.entry(id).map(|e| self.uids(e.attrs())).unwrap_or_default();
        let changed = |id: EntryId| {
            let (was, is) = (uids_in(before, id), uids_in(after, id));
            let differ = self.uid.minus(&was, &is).len() + self.uid.minus(&is, &was).len() > 0;
            differ.then_some((id, was, is))
        };
        match applied.state {
            NewState::Modify { id, .. } => changed(*id).into_iter().collect(),
            NewState::Rename { id, .. } => changed(*id).into_iter().collect(),
            NewState::Delete { victims } => victims
                .iter()
                .map(|(id, _)| (*id, uids_in(before, *id), Vec::new()))
                .filter(|(_, was, _)| !was.is_empty())
                .collect(),
            NewState::Add { .. } => Vec::new(),
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
        let Some(view) = after.entry(group).filter(|e| self.is_synced_group(e.attrs())) else {
            return Ok(());
        };
        let still_held: Vec<Vec<u8>> = self
            .groups
            .member_entries(after, view.attrs())
            .into_iter()
            .filter_map(|m| after.entry(m))
            .flat_map(|e| self.uids(e.attrs()))
            .collect();
        let mut uids = values(view.attrs(), self.member_uid.ty);
        let before = uids.clone();
        uids.retain(|u| !self.member_uid.contains(lose, u) || self.member_uid.contains(&still_held, u));
        for u in gain {
            if !self.member_uid.contains(&uids, u) {
                uids.push(u.clone());
            }
        }
        if uids == before {
            return Ok(());
        }
        let mut entry = stored_entry(after, group, view.attrs())?;
        entry.set_values(self.member_uid.ty, &Options::none(), uids);
        stamp_modified(&mut entry, ctx.identity.dn(), applied.stamp, ctx.optypes);
        txn.modify(group, &entry.to_stored())?;
        Ok(())
    }
}

/// An entry whose `uid` a write changed: its ID, its values before and after.
type UidChange = (EntryId, Vec<Vec<u8>>, Vec<Vec<u8>>);

/// Every value of `ty` in `attrs` (options ignored).
fn values(attrs: StoredRef<'_>, ty: AttributeTypeId) -> Vec<Vec<u8>> {
    attrs
        .attribute(ty)
        .flat_map(|a| a.values.iter())
        .map(<[u8]>::to_vec)
        .collect()
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
        for (id, was, is) in self.uid_changes(applied, txn.version()) {
            let lose = self.uid.minus(&was, &is);
            let gain = self.uid.minus(&is, &was);
            // A deleted entry is found among the groups that listed it before the write; a
            // renamed one under its new name (referential integrity has rewritten it).
            let groups = match txn.version().entry(id) {
                Some(_) => self.groups.groups_listing(txn.version(), &txn.version().dn(id)),
                None => self.groups.groups_listing(applied.before, &applied.before.dn(id)),
            };
            for group in groups {
                self.retune_group(txn, group, &lose, &gain, applied, ctx)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{synced, Lookups, Membership};

    /// Users `uid=<name>,ou=people` with uid `<name>`; `uid=twin1` and `uid=twin2` both
    /// have uid `twin`.
    struct People;

    impl Lookups for People {
        fn member_key(&self, value: &[u8]) -> Option<Vec<u8>> {
            Some(value.to_ascii_lowercase())
        }
        fn uid_key(&self, value: &[u8]) -> Option<Vec<u8>> {
            Some(value.to_vec())
        }
        fn uids_of(&self, member: &[u8]) -> Vec<Vec<u8>> {
            let m = String::from_utf8_lossy(member).to_ascii_lowercase();
            let Some(name) = m.strip_prefix("uid=").and_then(|r| r.strip_suffix(",ou=people")) else {
                return Vec::new();
            };
            let uid = if name.starts_with("twin") { "twin" } else { name };
            vec![uid.as_bytes().to_vec()]
        }
        fn dn_of(&self, uid: &[u8]) -> Option<Vec<u8>> {
            (uid != b"twin" && uid != b"local").then(|| [b"uid=", uid, b",ou=people"].concat())
        }
    }

    fn m(members: &[&str], uids: &[&str]) -> Membership {
        Membership {
            members: members.iter().map(|s| s.as_bytes().to_vec()).collect(),
            uids: uids.iter().map(|s| s.as_bytes().to_vec()).collect(),
        }
    }

    #[test]
    fn a_new_group_gets_the_union_of_both_attributes() {
        let out = synced(&m(&[], &[]), &m(&["uid=a,ou=people"], &["b", "local"]), &People);
        assert_eq!(
            out,
            m(&["uid=a,ou=people", "uid=b,ou=people"], &["b", "local", "a"])
        );
    }

    #[test]
    fn members_added_and_removed_carry_their_uids() {
        let old = m(&["uid=a,ou=people", "uid=b,ou=people"], &["a", "b"]);
        let new = m(&["uid=b,ou=people", "UID=C,ou=people"], &["a", "b"]);
        assert_eq!(
            synced(&old, &new, &People),
            m(&["uid=b,ou=people", "UID=C,ou=people"], &["b", "c"])
        );
    }

    #[test]
    fn a_uid_another_member_still_has_stays() {
        let old = m(&["uid=twin1,ou=people", "uid=twin2,ou=people"], &["twin"]);
        let new = m(&["uid=twin2,ou=people"], &["twin"]);
        assert_eq!(synced(&old, &new, &People), new);
    }

    #[test]
    fn member_uids_added_and_removed_carry_their_entries() {
        let old = m(&["uid=a,ou=people"], &["a"]);
        let new = m(&["uid=a,ou=people"], &["d", "twin"]);
        // `a` removed: its member goes; `d` added: its entry joins; `twin` names two entries:
        // no member added for it.
        assert_eq!(
            synced(&old, &new, &People),
            m(&["uid=d,ou=people"], &["d", "twin"])
        );
    }

    #[test]
    fn an_addition_wins_over_a_removal_in_one_modify() {
        let old = m(&["uid=a,ou=people"], &["a"]);
        // The client adds member e and removes memberUid e: e stays a member with its uid.
        let new = m(&["uid=a,ou=people", "uid=e,ou=people"], &["a"]);
        let old_with_e = m(&["uid=a,ou=people"], &["a", "e"]);
        assert_eq!(
            synced(&old_with_e, &new, &People),
            m(&["uid=a,ou=people", "uid=e,ou=people"], &["a", "e"])
        );
        assert_eq!(synced(&old, &old, &People), old);
    }
}
