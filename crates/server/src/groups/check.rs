//! memberOf recomputed from scratch: what every entry's `memberOf` must hold given the
//! groups of a version, compared with what it holds. `larch verify` reports the
//! differences; `larch import` writes the recomputed values (an LDIF's own `memberOf`
//! values, from another server, are not trusted).

use std::collections::BTreeMap;

use larch_model::entry::{Attribute, Options, StoredEntry, StoredRef};
use larch_model::schema::AttributeTypeId;
use larch_store::{EntryId, Store, StoreError, Version};

use super::GroupSchema;

/// An entry whose `memberOf` differs from what its groups say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberOfMismatch {
    /// The entry.
    pub id: EntryId,
    /// Its DN.
    pub dn: String,
    /// The group DNs it should hold, in the order of [`expected_member_of`].
    pub expected: Vec<String>,
    /// The values it holds.
    pub found: Vec<String>,
}

/// For every entry some group lists: the DNs of those groups, in group ID order.
pub fn expected_member_of(version: &Version, groups: &GroupSchema) -> BTreeMap<EntryId, Vec<String>> {
    let mut expected: BTreeMap<EntryId, Vec<String>> = BTreeMap::new();
    for view in version.entries() {
        if !groups.is_group(view.attrs()) {
            continue;
        }
        let group_dn = version.dn(view.id);
        for member in groups.member_entries(version, view.attrs()) {
            expected.entry(member).or_default().push(group_dn.clone());
        }
    }
    expected
}

/// The entries whose `memberOf` values differ, as sets under `distinguishedNameMatch`,
/// from [`expected_member_of`].
pub fn member_of_mismatches(version: &Version, groups: &GroupSchema) -> Vec<MemberOfMismatch> {
    let expected = expected_member_of(version, groups);
    let rule = groups.member_of;
    let keys = |values: &[String]| {
        let mut k: Vec<Option<Vec<u8>>> = values.iter().map(|v| rule.key(v.as_bytes())).collect();
        k.sort();
        k.dedup();
        k
    };
    let mut out = Vec::new();
    for view in version.entries() {
        let found: Vec<String> = view
            .attrs()
            .attribute(rule.ty)
            .flat_map(|a| a.values.iter())
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .collect();
        let want = expected.get(&view.id).cloned().unwrap_or_default();
        if keys(&found) != keys(&want) {
            out.push(MemberOfMismatch {
                id: view.id,
                dn: version.dn(view.id),
                expected: want,
                found,
            });
        }
    }
    out
}

/// Writes the [`expected_member_of`] values into every entry whose `memberOf` differs, in
/// one write (one commit unit); returns how many entries changed. `larch import` runs it
/// on the directory it made. The entries' other attributes (their timestamps included)
/// are left as they are: the values are what the data always implied.
pub fn repair_member_of(store: &Store, groups: &GroupSchema) -> Result<usize, StoreError> {
    let ty = groups.member_of.ty;
    let groups = groups.clone();
    store.write(move |txn| {
        let version = txn.version().clone();
        let mismatches = member_of_mismatches(&version, &groups);
        for m in &mismatches {
            let Some(view) = version.entry(m.id) else {
                continue;
            };
            let mut entry = StoredEntryEdit::of(view.attrs());
            entry.set(ty, m.expected.iter().map(|d| d.as_bytes().to_vec()).collect());
            txn.modify(m.id, &entry.finish())?;
        }
        Ok::<usize, StoreError>(mismatches.len())
    })?
}

/// The attributes of a stored entry, owned, with one type's values replaced.
struct StoredEntryEdit(Vec<Attribute>);

impl StoredEntryEdit {
    fn of(attrs: StoredRef<'_>) -> StoredEntryEdit {
        StoredEntryEdit(
            attrs
                .attributes()
                .map(|a| Attribute {
                    ty: a.ty,
                    options: a.options(),
                    values: a.values.iter().map(<[u8]>::to_vec).collect(),
                })
                .collect(),
        )
    }

    fn set(&mut self, ty: AttributeTypeId, values: Vec<Vec<u8>>) {
        self.0.retain(|a| a.ty != ty);
        if !values.is_empty() {
            self.0.push(Attribute {
                ty,
                options: Options::none(),
                values,
            });
        }
    }

    fn finish(self) -> StoredEntry {
        StoredEntry::build(&self.0)
    }
}
