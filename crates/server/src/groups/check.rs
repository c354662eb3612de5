//! memberOf and transitiveMemberOf recomputed from scratch: what every entry's `memberOf`
//! and chain of nested groups must hold given the groups of a version, compared with what
//! it holds. `larch verify` reports the
//! differences; `larch import` writes the recomputed values (an LDIF's own `memberOf`
//! values, from another server, are not trusted).

use std::collections::BTreeMap;

use larch_model::dn::{Dn, NormDn};
use larch_model::entry::{Entry, Options, StoredRef};
use larch_model::schema::AttributeTypeId;
use larch_store::{EntryId, Store, StoreError, Version};

use super::chain::{same_dns, MemberOfView};
use super::GroupSchema;

/// An entry whose `memberOf` or `transitiveMemberOf` differs from what its groups say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberOfMismatch {
    /// The attribute that differs: `memberOf` or `transitiveMemberOf`.
    pub attribute: &'static str,
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
/// from [`expected_member_of`], then those whose `transitiveMemberOf` differs from the
/// chain those values give.
pub fn member_of_mismatches(version: &Version, groups: &GroupSchema) -> Vec<MemberOfMismatch> {
    let expected = expected_member_of(version, groups);
    let mut out = Vec::new();
    for view in version.entries() {
        let want = expected.get(&view.id).cloned().unwrap_or_default();
        let found = stored_values(view.attrs(), groups.member_of.ty);
        if !same_dns(groups.member_of, &found, &want) {
            out.push(mismatch("memberOf", version, view.id, want, &found));
        }
    }
    let pending: BTreeMap<EntryId, Vec<Vec<u8>>> = version
        .entries()
        .map(|view| {
            let want = expected.get(&view.id).cloned().unwrap_or_default();
            (view.id, want.into_iter().map(String::into_bytes).collect())
        })
        .collect();
    let chains = MemberOfView {
        version,
        pending: &pending,
        member_of: groups.member_of,
    };
    for view in version.entries() {
        let want = chains.chain(chains.direct(view.id));
        let found = stored_values(view.attrs(), groups.transitive.ty);
        if !same_dns(groups.transitive, &found, &want) {
            out.push(mismatch("transitiveMemberOf", version, view.id, want, &found));
        }
    }
    out
}

fn stored_values(attrs: StoredRef<'_>, ty: AttributeTypeId) -> Vec<Vec<u8>> {
    attrs
        .attribute(ty)
        .flat_map(|a| a.values.iter())
        .map(<[u8]>::to_vec)
        .collect()
}

fn mismatch(
    attribute: &'static str,
    version: &Version,
    id: EntryId,
    expected: Vec<String>,
    found: &[Vec<u8>],
) -> MemberOfMismatch {
    MemberOfMismatch {
        attribute,
        id,
        dn: version.dn(id),
        expected,
        found: found
            .iter()
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .collect(),
    }
}

/// How many values [`repair_member_of`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Repaired {
    /// Entries whose `memberOf` changed.
    pub member_of: usize,
    /// Entries whose `transitiveMemberOf` changed.
    pub transitive: usize,
}

/// Writes the expected values into every entry whose `memberOf` or `transitiveMemberOf`
/// differs ([`member_of_mismatches`]), in one write (one commit unit); says how many
/// changed. `larch import` runs it
/// on the directory it made. The entries' other attributes (their timestamps included)
/// are left as they are: the values are what the data always implied.
pub fn repair_member_of(store: &Store, groups: &GroupSchema) -> Result<Repaired, StoreError> {
    let groups = groups.clone();
    store.write(move |txn| {
        let version = txn.version().clone();
        let mismatches = member_of_mismatches(&version, &groups);
        // Both attributes of an entry in one modify.
        let mut by_entry: BTreeMap<EntryId, Vec<&MemberOfMismatch>> = BTreeMap::new();
        for m in &mismatches {
            by_entry.entry(m.id).or_default().push(m);
        }
        for (id, fixes) in by_entry {
            let Some(view) = version.entry(id) else {
                continue;
            };
            // The DN is not part of the stored form: the entry is only rebuilt.
            let mut entry = Entry::from_stored(Dn::default(), NormDn::root(), view.attrs());
            for m in fixes {
                let ty = match m.attribute {
                    "memberOf" => groups.member_of.ty,
                    _ => groups.transitive.ty,
                };
                let values = m.expected.iter().map(|d| d.as_bytes().to_vec()).collect();
                entry.set_values(ty, &Options::none(), values);
            }
            txn.modify(id, &entry.to_stored())?;
        }
        let member_of = mismatches.iter().filter(|m| m.attribute == "memberOf").count();
        Ok::<Repaired, StoreError>(Repaired {
            member_of,
            transitive: mismatches.len() - member_of,
        })
    })?
}
