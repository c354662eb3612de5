//! Groups as the write hooks and the checks see them: which entries are groups, which
//! attributes list their members, how a DN listed there is found again.
//!
//! - A *group* is an entry of one of the group classes the schema defines:
//!   `groupOfNames` and `groupOfMembers` (members in `member`) and `groupOfUniqueNames`
//!   (members in `uniqueMember`), as OpenLDAP's memberof overlay and 389 DS's memberOf
//!   plugin read them.
//! - A *member attribute* holds DNs: `member` and `uniqueMember`. Values are compared by
//!   the attribute's equality rule (`distinguishedNameMatch`, `uniqueMemberMatch`), the
//!   keys its index files them under; a `uniqueMember` value with an optional UID
//!   (`cn=x#'0101'B`) is not the plain DN, as in slapd.
//! - *Who lists an entry* (the groups and other entries whose member attributes hold its
//!   DN) is found through the member attributes' equality indexes (on by default); without
//!   an index, by reading every entry. Index candidates are checked value by value, since
//!   the index files hashes.

pub mod chain;
pub mod check;
pub mod posix;

use larch_model::dn::NormDn;
use larch_model::entry::StoredRef;
use larch_model::matching::MatchingRule;
use larch_model::schema::{AttributeTypeId, ObjectClassId, Schema};
use larch_store::{EntryId, Version};

/// The group classes, by name, and the member attribute each lists members in.
const GROUP_CLASSES: [(&str, &str); 3] = [
    ("groupOfNames", "member"),
    ("groupOfUniqueNames", "uniqueMember"),
    ("groupOfMembers", "member"),
];

/// An attribute that holds member DNs, with its equality rule.
#[derive(Debug, Clone, Copy)]
pub struct MemberAttribute {
    /// The attribute type.
    pub ty: AttributeTypeId,
    /// Its equality rule (the keys values are compared and indexed by).
    pub rule: &'static MatchingRule,
}

impl MemberAttribute {
    /// The key `value` compares by; `None` when the value is not valid under the rule.
    pub fn key(&self, value: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(value.len());
        self.rule.normalize(value, &mut out).ok().map(|()| out)
    }
}

/// The schema elements groups are made of, resolved once per directory.
#[derive(Debug, Clone)]
pub struct GroupSchema {
    /// `objectClass`.
    pub object_class: AttributeTypeId,
    /// The group classes the schema defines, with the member attribute of each.
    classes: Vec<(ObjectClassId, String, AttributeTypeId)>,
    /// `member` and `uniqueMember`, those the schema defines.
    pub members: Vec<MemberAttribute>,
    /// `memberOf`.
    pub member_of: MemberAttribute,
    /// `transitiveMemberOf`: the chain of nested groups ([`chain`]).
    pub transitive: MemberAttribute,
}

impl GroupSchema {
    /// Resolves the elements in `schema`; `None` when it lacks `memberOf` or
    /// `transitiveMemberOf` or has no member attribute with an equality rule.
    pub fn new(schema: &Schema) -> Option<GroupSchema> {
        let attribute = |name: &str| {
            let t = schema.attribute_type(name)?;
            Some(MemberAttribute {
                ty: t.id,
                rule: t.equality?,
            })
        };
        let members: Vec<MemberAttribute> = ["member", "uniqueMember"]
            .iter()
            .filter_map(|n| attribute(n))
            .collect();
        let classes = GROUP_CLASSES
            .iter()
            .filter_map(|(class, attr)| {
                let c = schema.object_class(class)?;
                let a = schema.attribute_type(attr)?;
                Some((c.id, c.name().to_string(), a.id))
            })
            .collect();
        Some(GroupSchema {
            object_class: schema.attribute_type("objectClass")?.id,
            classes,
            member_of: attribute("memberOf")?,
            transitive: attribute("transitiveMemberOf")?,
            members: (!members.is_empty()).then_some(members)?,
        })
    }

    /// The member attribute of type `ty`, if it is one.
    pub fn member_attribute(&self, ty: AttributeTypeId) -> Option<MemberAttribute> {
        self.members.iter().copied().find(|m| m.ty == ty)
    }

    /// The member attributes of the group classes `attrs` holds (none: not a group).
    pub fn group_member_types(&self, attrs: StoredRef<'_>) -> Vec<AttributeTypeId> {
        let mut types = Vec::new();
        for value in attrs.attribute(self.object_class).flat_map(|a| a.values.iter()) {
            for (_, name, ty) in &self.classes {
                if value.eq_ignore_ascii_case(name.as_bytes()) && !types.contains(ty) {
                    types.push(*ty);
                }
            }
        }
        types
    }

    /// Whether `attrs` is a group.
    pub fn is_group(&self, attrs: StoredRef<'_>) -> bool {
        !self.group_member_types(attrs).is_empty()
    }

    /// The DNs a group lists as members (the values of its classes' member attributes),
    /// as written; empty for an entry that is not a group.
    pub fn member_values<'a>(&self, attrs: StoredRef<'a>) -> Vec<&'a [u8]> {
        let types = self.group_member_types(attrs);
        types
            .iter()
            .flat_map(|ty| attrs.attribute(*ty))
            .flat_map(|a| a.values.iter())
            .collect()
    }

    /// The entries of `version` a group lists (values naming no entry are left out), each
    /// once.
    pub fn member_entries(&self, version: &Version, attrs: StoredRef<'_>) -> Vec<EntryId> {
        let mut ids: Vec<EntryId> = self
            .member_values(attrs)
            .into_iter()
            .filter_map(|v| entry_named(version, v))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// The entries of `version` whose member attributes (of any class: referential
    /// integrity reads every entry, as slapd's refint does) hold `dn`, with the member
    /// attributes that hold it. Only groups, with `groups_only`.
    pub fn listing(&self, version: &Version, dn: &str, groups_only: bool) -> Vec<(EntryId, AttributeTypeId)> {
        let mut found = Vec::new();
        for m in &self.members {
            let Some(key) = m.key(dn.as_bytes()) else {
                continue;
            };
            let candidates: Vec<EntryId> = match version.index(m.ty) {
                Some(index) => match index.equality(m.rule, dn.as_bytes(), version.keyer()) {
                    Some(set) => set.iter().collect(),
                    None => version.entries().map(|e| e.id).collect(),
                },
                None => version.entries().map(|e| e.id).collect(),
            };
            for id in candidates {
                let Some(view) = version.entry(id) else {
                    continue;
                };
                let attrs = view.attrs();
                if groups_only && !self.group_member_types(attrs).contains(&m.ty) {
                    continue;
                }
                let holds = attrs
                    .attribute(m.ty)
                    .flat_map(|a| a.values.iter())
                    .any(|v| m.key(v).as_deref() == Some(key.as_slice()));
                if holds {
                    found.push((id, m.ty));
                }
            }
        }
        found
    }

    /// The groups of `version` that list `dn` as a member, each once, in ID order.
    pub fn groups_listing(&self, version: &Version, dn: &str) -> Vec<EntryId> {
        let mut ids: Vec<EntryId> = self
            .listing(version, dn, true)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

/// The entry of `version` a DN value names, if it parses and exists. A `uniqueMember`
/// value's optional UID is not part of the name.
pub fn entry_named(version: &Version, value: &[u8]) -> Option<EntryId> {
    let name = strip_uid(value);
    let norm = NormDn::from_text(name, version.schema()).ok()?;
    version.find(&norm)
}

/// A `uniqueMember` value without its optional `#'...'B` UID (RFC 4517
/// NameAndOptionalUID); other values unchanged.
fn strip_uid(value: &[u8]) -> &[u8] {
    match value.iter().rposition(|&b| b == b'#') {
        Some(at) if value.ends_with(b"'B") && value.get(at + 1) == Some(&b'\'') => {
            value.get(..at).unwrap_or(value)
        }
        _ => value,
    }
}

#[cfg(test)]
mod tests {
    use super::strip_uid;

    #[test]
    fn a_unique_member_uid_is_not_part_of_the_name() {
        assert_eq!(strip_uid(b"cn=a,dc=x#'0101'B"), b"cn=a,dc=x");
        assert_eq!(strip_uid(b"cn=a,dc=x"), b"cn=a,dc=x");
        assert_eq!(strip_uid(b"cn=a\\#b,dc=x"), b"cn=a\\#b,dc=x");
    }
}
