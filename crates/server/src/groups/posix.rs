//! POSIX groups listed both ways (`groups.sync_member_uid`): a `posixGroup` that is also a
//! group of DNs (rfc2307bis: with `groupOfNames` or `groupOfMembers`, members in
//! `member`; or with `groupOfUniqueNames`, members in `uniqueMember`) lists each member
//! by DN and by login name (`memberUid`, RFC 2307). The rules that keep the two in step,
//! which the memberUid hook applies on every write (`crate::hooks`), and the from-scratch
//! check behind `larch verify` and `larch import`.
//!
//! - The entry a `memberUid` value names is the one entry with that `uid` (compared by
//!   `uid`'s equality rule) below the group's naming context, found through `uid`'s
//!   equality index; a value no entry or several entries hold names no member (RFC 2307
//!   allows names of accounts outside the directory). `memberUid` values are compared by
//!   `memberUid`'s own rule (case matters).
//! - A group is *in step* when every entry its member attribute names has its `uid` values
//!   in `memberUid`, and every entry a `memberUid` value names is listed in the member
//!   attribute: [`synced`] of the group from nothing (the union of both) leaves it as it is.
//!   Values naming no entry are kept on both sides.

use std::collections::BTreeSet;

use larch_model::dn::{Dn, NormDn};
use larch_model::entry::{Entry, Options, StoredRef};
use larch_model::schema::{AttributeTypeId, Schema};
use larch_store::{EntryId, Store, StoreError, Version};

use super::{entry_named, GroupSchema, MemberAttribute};

/// What the memberUid rules read, resolved once per directory.
#[derive(Debug, Clone)]
pub struct PosixGroups {
    /// The group classes and member attributes.
    pub groups: GroupSchema,
    posix_group: String,
    object_class: MemberAttribute,
    /// `memberUid`.
    pub member_uid: MemberAttribute,
    /// `uid`.
    pub uid: MemberAttribute,
}

/// A group's member DNs (in its member attribute) and `memberUid` values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Membership {
    /// The member attribute's values.
    pub members: Vec<Vec<u8>>,
    /// The `memberUid` values.
    pub uids: Vec<Vec<u8>>,
}

/// How the two attributes are read: the keys of each, and the lookups between them.
pub trait Lookups {
    /// Compares member values.
    fn member_key(&self, value: &[u8]) -> Option<Vec<u8>>;
    /// Compares `memberUid` values.
    fn uid_key(&self, value: &[u8]) -> Option<Vec<u8>>;
    /// The `uid` values of the entry a member value names (none: no such entry).
    fn uids_of(&self, member: &[u8]) -> Vec<Vec<u8>>;
    /// The DN of the one entry whose `uid` is `uid`.
    fn dn_of(&self, uid: &[u8]) -> Option<Vec<u8>>;
}

/// Values compared by a key function.
struct ByKey<'a>(&'a dyn Fn(&[u8]) -> Option<Vec<u8>>);

impl ByKey<'_> {
    fn contains(&self, values: &[Vec<u8>], value: &[u8]) -> bool {
        let key = (self.0)(value);
        values.iter().any(|v| (self.0)(v) == key)
    }

    /// `values` less those of `other`.
    fn minus(&self, values: &[Vec<u8>], other: &[Vec<u8>]) -> Vec<Vec<u8>> {
        values
            .iter()
            .filter(|v| !self.contains(other, v))
            .cloned()
            .collect()
    }

    fn push_new(&self, values: &mut Vec<Vec<u8>>, value: Vec<u8>) {
        if !self.contains(values, &value) {
            values.push(value);
        }
    }
}

/// The membership after a group's change from `old` (empty: the group is new, or was no
/// such group) to `new`:
/// 1. each `memberUid` value added brings the entry it names into the members;
/// 2. each `memberUid` value removed takes out the members that have it as `uid`, unless
///    the same change lists them (in the member attribute, or through another value added);
/// 3. each member now listed that was not before, or kept by rule 2's exception, brings its
///    `uid` values into `memberUid`;
/// 4. each member no longer listed takes its `uid` values out of `memberUid`, unless the
///    same change adds them or a member still listed has them.
///
/// From nothing, the result is the union of both attributes: the group in step.
pub fn synced(old: &Membership, new: &Membership, look: &dyn Lookups) -> Membership {
    let member_key = |v: &[u8]| look.member_key(v);
    let uid_key = |v: &[u8]| look.uid_key(v);
    let (members, uids) = (ByKey(&member_key), ByKey(&uid_key));
    let added_members = members.minus(&new.members, &old.members);
    let added_uids = uids.minus(&new.uids, &old.uids);
    let removed_uids = uids.minus(&old.uids, &new.uids);

    let mut out = new.clone();
    let joined: Vec<Vec<u8>> = added_uids.iter().filter_map(|u| look.dn_of(u)).collect();
    for dn in &joined {
        members.push_new(&mut out.members, dn.clone());
    }
    out.members.retain(|m| {
        members.contains(&added_members, m)
            || members.contains(&joined, m)
            || !look.uids_of(m).iter().any(|u| uids.contains(&removed_uids, u))
    });
    for member in &out.members {
        let held = look.uids_of(member);
        let kept = held.iter().any(|u| uids.contains(&removed_uids, u));
        if kept || !members.contains(&old.members, member) {
            for uid in held {
                uids.push_new(&mut out.uids, uid);
            }
        }
    }
    let still_held: Vec<Vec<u8>> = out.members.iter().flat_map(|m| look.uids_of(m)).collect();
    let gone: Vec<Vec<u8>> = members
        .minus(&old.members, &out.members)
        .iter()
        .flat_map(|m| look.uids_of(m))
        .filter(|u| !uids.contains(&added_uids, u) && !uids.contains(&still_held, u))
        .collect();
    out.uids.retain(|u| !uids.contains(&gone, u));
    out
}

/// [`Lookups`] in one version, for one group's member attribute, below one naming context.
pub struct InVersion<'a> {
    posix: &'a PosixGroups,
    version: &'a Version,
    member: MemberAttribute,
    scope: Option<EntryId>,
}

impl<'a> InVersion<'a> {
    /// The lookups for a group named `dn` whose members are in `member`.
    pub fn new(
        posix: &'a PosixGroups,
        version: &'a Version,
        member: MemberAttribute,
        dn: &NormDn,
    ) -> InVersion<'a> {
        InVersion {
            posix,
            version,
            member,
            scope: naming_context(version, dn),
        }
    }
}

impl Lookups for InVersion<'_> {
    fn member_key(&self, value: &[u8]) -> Option<Vec<u8>> {
        self.member.key(value)
    }

    fn uid_key(&self, value: &[u8]) -> Option<Vec<u8>> {
        self.posix.member_uid.key(value)
    }

    fn uids_of(&self, member: &[u8]) -> Vec<Vec<u8>> {
        entry_named(self.version, member)
            .and_then(|id| self.version.entry(id))
            .map(|e| self.posix.uids(e.attrs()))
            .unwrap_or_default()
    }

    fn dn_of(&self, uid: &[u8]) -> Option<Vec<u8>> {
        let holders = self.posix.holders_of_uid(self.version, uid, self.scope?);
        match holders.as_slice() {
            [one] => Some(self.version.dn(*one).into_bytes()),
            _ => None,
        }
    }
}

/// The naming context `dn` lies in, if `version` holds it.
pub fn naming_context(version: &Version, dn: &NormDn) -> Option<EntryId> {
    version
        .naming_contexts()
        .iter()
        .find(|id| dn.is_within(&version.norm_dn(*id)))
}

impl PosixGroups {
    /// The rules over `groups`, when `schema` has `posixGroup`, `memberUid` and `uid`.
    pub fn new(groups: GroupSchema, schema: &Schema) -> Option<PosixGroups> {
        let attribute = |name: &str| {
            let t = schema.attribute_type(name)?;
            Some(MemberAttribute {
                ty: t.id,
                rule: t.equality?,
            })
        };
        Some(PosixGroups {
            posix_group: schema.object_class("posixGroup")?.name().to_string(),
            object_class: attribute("objectClass")?,
            member_uid: attribute("memberUid")?,
            uid: attribute("uid")?,
            groups,
        })
    }

    /// The member attribute of `attrs` when it is a POSIX group that also lists members by
    /// DN (`member` before `uniqueMember` if it somehow has both), else `None`.
    pub fn synced_member_attribute(&self, attrs: StoredRef<'_>) -> Option<MemberAttribute> {
        let posix = attrs
            .attribute(self.groups.object_class)
            .flat_map(|a| a.values.iter())
            .any(|v| v.eq_ignore_ascii_case(self.posix_group.as_bytes()));
        if !posix {
            return None;
        }
        let types = self.groups.group_member_types(attrs);
        self.groups
            .members
            .iter()
            .copied()
            .find(|m| types.contains(&m.ty))
    }

    /// The `uid` values of `attrs`.
    pub fn uids(&self, attrs: StoredRef<'_>) -> Vec<Vec<u8>> {
        values(attrs, self.uid.ty)
    }

    /// The membership of a group whose members are in `member`.
    pub fn membership(&self, attrs: StoredRef<'_>, member: MemberAttribute) -> Membership {
        Membership {
            members: values(attrs, member.ty),
            uids: values(attrs, self.member_uid.ty),
        }
    }

    /// The entries below `scope` whose `uid` is `uid`.
    pub fn holders_of_uid(&self, version: &Version, uid: &[u8], scope: EntryId) -> Vec<EntryId> {
        let Some(key) = self.uid.key(uid) else {
            return Vec::new();
        };
        let holds = |id: &EntryId| {
            version.is_within(*id, scope)
                && version.entry(*id).is_some_and(|e| {
                    self.uids(e.attrs())
                        .iter()
                        .any(|v| self.uid.key(v).as_ref() == Some(&key))
                })
        };
        match indexed(version, self.uid, uid) {
            Some(candidates) => candidates.into_iter().filter(holds).collect(),
            None => version.subtree(scope).filter(holds).collect(),
        }
    }

    /// The POSIX groups below `scope` kept in step whose `memberUid` holds `uid`, through
    /// `memberUid`'s equality index, else `objectClass`'s (the POSIX groups), else every
    /// entry of the naming context.
    pub fn groups_with_member_uid(&self, version: &Version, uid: &[u8], scope: EntryId) -> Vec<EntryId> {
        let key = self.member_uid.key(uid);
        let lists = |id: &EntryId| {
            version.is_within(*id, scope)
                && version.entry(*id).is_some_and(|e| {
                    self.synced_member_attribute(e.attrs()).is_some()
                        && values(e.attrs(), self.member_uid.ty)
                            .iter()
                            .any(|v| self.member_uid.key(v) == key)
                })
        };
        let candidates = indexed(version, self.member_uid, uid)
            .or_else(|| indexed(version, self.object_class, self.posix_group.as_bytes()));
        match candidates {
            Some(ids) => ids.into_iter().filter(lists).collect(),
            None => version.subtree(scope).filter(lists).collect(),
        }
    }

    /// The membership group `id` (of `version`, whose attributes are `attrs`) must have to
    /// be in step, when it is a group kept in step and differs from it.
    pub fn out_of_step(
        &self,
        version: &Version,
        id: EntryId,
        attrs: StoredRef<'_>,
    ) -> Option<(MemberAttribute, Membership)> {
        let member = self.synced_member_attribute(attrs)?;
        let now = self.membership(attrs, member);
        let look = InVersion::new(self, version, member, &version.norm_dn(id));
        let want = synced(&Membership::default(), &now, &look);
        let same = |a: &[Vec<u8>], b: &[Vec<u8>], key: &dyn Fn(&[u8]) -> Option<Vec<u8>>| {
            let keys = |vs: &[Vec<u8>]| vs.iter().map(|v| key(v)).collect::<BTreeSet<_>>();
            keys(a) == keys(b)
        };
        let in_step = same(&now.members, &want.members, &|v| member.key(v))
            && same(&now.uids, &want.uids, &|v| self.member_uid.key(v));
        (!in_step).then_some((member, want))
    }
}

/// A group whose `member` (or `uniqueMember`) and `memberUid` are not in step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberUidMismatch {
    /// The group.
    pub id: EntryId,
    /// Its DN.
    pub dn: String,
    /// Member DNs it lacks.
    pub missing_members: Vec<String>,
    /// `memberUid` values it lacks.
    pub missing_uids: Vec<String>,
}

/// Every group of `version` kept in step that is not, in ID order.
pub fn member_uid_mismatches(version: &Version, posix: &PosixGroups) -> Vec<MemberUidMismatch> {
    let text = |vs: Vec<Vec<u8>>| -> Vec<String> {
        vs.into_iter()
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .collect()
    };
    let mut out = Vec::new();
    for view in version.entries() {
        let Some((member, want)) = posix.out_of_step(version, view.id, view.attrs()) else {
            continue;
        };
        let now = posix.membership(view.attrs(), member);
        let member_key = |v: &[u8]| member.key(v);
        let uid_key = |v: &[u8]| posix.member_uid.key(v);
        out.push(MemberUidMismatch {
            id: view.id,
            dn: version.dn(view.id),
            missing_members: text(ByKey(&member_key).minus(&want.members, &now.members)),
            missing_uids: text(ByKey(&uid_key).minus(&want.uids, &now.uids)),
        });
    }
    out
}

/// Brings every group kept in step into step ([`member_uid_mismatches`]) in one write (one
/// commit unit); says how many groups changed. `larch import` runs it on the directory it
/// made, before memberOf is computed (the members it adds are members like any other).
/// The groups' other attributes (their timestamps included) are left as they are.
pub fn repair_member_uid(store: &Store, posix: &PosixGroups) -> Result<usize, StoreError> {
    let posix = posix.clone();
    store.write(move |txn| {
        let version = txn.version().clone();
        let mut changed = 0;
        for view in version.entries() {
            let Some((member, want)) = posix.out_of_step(&version, view.id, view.attrs()) else {
                continue;
            };
            // The DN is not part of the stored form: the entry is only rebuilt.
            let mut entry = Entry::from_stored(Dn::default(), NormDn::root(), view.attrs());
            entry.set_values(member.ty, &Options::none(), want.members);
            entry.set_values(posix.member_uid.ty, &Options::none(), want.uids);
            txn.modify(view.id, &entry.to_stored())?;
            changed += 1;
        }
        Ok::<usize, StoreError>(changed)
    })?
}

/// The candidates `attr`'s equality index gives for `value`, when it has one.
fn indexed(version: &Version, attr: MemberAttribute, value: &[u8]) -> Option<Vec<EntryId>> {
    let set = version
        .index(attr.ty)?
        .equality(attr.rule, value, version.keyer())?;
    Some(set.iter().collect())
}

/// Every value of `ty` in `attrs` (options ignored).
pub fn values(attrs: StoredRef<'_>, ty: AttributeTypeId) -> Vec<Vec<u8>> {
    attrs
        .attribute(ty)
        .flat_map(|a| a.values.iter())
        .map(<[u8]>::to_vec)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{synced, Lookups, Membership};

    /// Users `uid=<name>,ou=people` with uid `<name>`; `uid=twin1` and `uid=twin2` both
    /// have uid `twin`; `uid=dual,ou=people` has uids `dual` and `dual2`.
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
            match name {
                n if n.starts_with("twin") => vec![b"twin".to_vec()],
                "dual" => vec![b"dual".to_vec(), b"dual2".to_vec()],
                n => vec![n.as_bytes().to_vec()],
            }
        }
        fn dn_of(&self, uid: &[u8]) -> Option<Vec<u8>> {
            match uid {
                b"twin" | b"local" => None,
                b"dual2" => Some(b"uid=dual,ou=people".to_vec()),
                _ => Some([b"uid=", uid, b",ou=people"].concat()),
            }
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
        // The union is in step: syncing it again from nothing changes nothing.
        assert_eq!(synced(&m(&[], &[]), &out, &People), out);
    }

    #[test]
    fn a_member_joined_through_one_uid_brings_its_others() {
        let out = synced(&m(&[], &[]), &m(&[], &["dual2"]), &People);
        assert_eq!(out, m(&["uid=dual,ou=people"], &["dual2", "dual"]));
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
    fn a_member_removed_through_one_uid_takes_its_others() {
        let old = m(&["uid=dual,ou=people"], &["dual", "dual2"]);
        let new = m(&["uid=dual,ou=people"], &["dual2"]);
        assert_eq!(synced(&old, &new, &People), m(&[], &[]));
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
        // The client removes memberUid dual and adds dual2, the same entry's other uid: it
        // stays a member, with both.
        let old = m(&["uid=dual,ou=people"], &["dual"]);
        let new = m(&["uid=dual,ou=people"], &["dual2"]);
        assert_eq!(
            synced(&old, &new, &People),
            m(&["uid=dual,ou=people"], &["dual2", "dual"])
        );
    }
}
