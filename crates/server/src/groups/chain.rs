//! Nested groups: the groups an entry belongs to directly or through groups that are
//! members of groups, kept in its `transitiveMemberOf` by the memberOf hook so that the
//! in-chain rule (`1.2.840.113556.1.4.1941`) is answered from that attribute's index, not
//! by walking groups at search time.
//!
//! The chain of an entry follows `memberOf` values from group to group, breadth first,
//! each group once (a cycle ends where it closes: a group in a cycle is in its own chain),
//! at most [`MAX_GROUP_NESTING`] levels deep. When a write changes memberOf values, the
//! chains that may change are those of the entries changed and of every entry whose chain
//! holds one of them, found through the `transitiveMemberOf` index.

use std::collections::{BTreeMap, BTreeSet};

use larch_model::filter::CompiledFilter;
use larch_store::{EntryId, Version};

use super::{entry_named, MemberAttribute};

/// The deepest nesting the chain follows: groups further than this many levels above an
/// entry are not in its chain. Real directories nest a handful of levels; the bound keeps
/// a pathological tree from making one write recompute without end.
pub const MAX_GROUP_NESTING: usize = 32;

/// memberOf values as a write leaves them: its new values where it changed them, else the
/// stored ones.
#[derive(Debug, Clone, Copy)]
pub struct MemberOfView<'a> {
    /// The directory during the write.
    pub version: &'a Version,
    /// New memberOf values by entry.
    pub pending: &'a BTreeMap<EntryId, Vec<Vec<u8>>>,
    /// `memberOf`.
    pub member_of: MemberAttribute,
}

impl MemberOfView<'_> {
    /// The memberOf values of `id`.
    pub fn direct(&self, id: EntryId) -> Vec<Vec<u8>> {
        if let Some(values) = self.pending.get(&id) {
            return values.clone();
        }
        self.version
            .entry(id)
            .map(|view| {
                view.attrs()
                    .attribute(self.member_of.ty)
                    .flat_map(|a| a.values.iter())
                    .map(<[u8]>::to_vec)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The chain that starts from the memberOf values `direct`: the DNs of every group
    /// reached, nearest first, each once.
    pub fn chain(&self, direct: Vec<Vec<u8>>) -> Vec<String> {
        let mut seen: BTreeSet<EntryId> = BTreeSet::new();
        let mut chain = Vec::new();
        let mut level = direct;
        for _ in 0..MAX_GROUP_NESTING {
            let mut next = Vec::new();
            for value in &level {
                let Some(group) = entry_named(self.version, value) else {
                    continue;
                };
                if seen.insert(group) {
                    chain.push(self.version.dn(group));
                    next.extend(self.direct(group));
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        chain
    }
}

/// The entries of `version` whose `transitiveMemberOf` (`chain`) holds `dn`, through its
/// index or, without one, by reading every entry.
pub fn holding(version: &Version, chain: MemberAttribute, dn: &str) -> Vec<EntryId> {
    let Some(key) = chain.key(dn.as_bytes()) else {
        return Vec::new();
    };
    // The index files the hash of the key just worked out: no second normalization.
    let candidates: Vec<EntryId> = match version
        .index(chain.ty)
        .and_then(|index| index.equality_keyed(version.keyer().key(&key)))
    {
        Some(set) => set.iter().collect(),
        None => version.entries().map(|e| e.id).collect(),
    };
    candidates
        .into_iter()
        .filter(|id| {
            version.entry(*id).is_some_and(|view| {
                view.attrs()
                    .attribute(chain.ty)
                    .flat_map(|a| a.values.iter())
                    .any(|v| chain.key(v).as_deref() == Some(key.as_slice()))
            })
        })
        .collect()
}

/// Whether two lists of DN values hold the same DNs under `rule`.
pub fn same_dns(rule: MemberAttribute, a: &[Vec<u8>], b: &[String]) -> bool {
    let mut x: Vec<Option<Vec<u8>>> = a.iter().map(|v| rule.key(v)).collect();
    let mut y: Vec<Option<Vec<u8>>> = b.iter().map(|v| rule.key(v.as_bytes())).collect();
    x.sort();
    x.dedup();
    y.sort();
    y.dedup();
    x == y
}

/// The groups the entry named `value` (a DN as a filter asserts it) belongs to directly or
/// through nested groups, read from its `transitiveMemberOf`; none when no such entry.
pub fn groups_of(version: &Version, chain: MemberAttribute, value: &[u8]) -> Vec<EntryId> {
    let Some(view) = entry_named(version, value).and_then(|id| version.entry(id)) else {
        return Vec::new();
    };
    let mut ids: Vec<EntryId> = view
        .attrs()
        .attribute(chain.ty)
        .flat_map(|a| a.values.iter())
        .filter_map(|v| entry_named(version, v))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Resolves the filter's in-chain assertions on member attributes against `version` into
/// the IDs of the groups they name ([`CompiledFilter::resolve_in_chain`]; the search then
/// tests each entry by its ID, and plans from the same IDs); nothing to do for most filters.
pub fn resolve_in_chain(filter: &mut CompiledFilter, version: &Version) {
    if !filter.has_in_chain_members() {
        return;
    }
    let Some(groups) = super::GroupSchema::new(version.schema()) else {
        return;
    };
    filter.resolve_in_chain(&|value| groups_of(version, groups.transitive, value));
}
