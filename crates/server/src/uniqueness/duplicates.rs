//! The values a whole directory holds twice in one scope, for `larch import` (which loads
//! an LDIF without the write hooks and reports what the uniqueness hook would have
//! refused).

use std::collections::{HashMap, HashSet};

use larch_store::{EntryId, Version};

use super::{Scopes, UniqueAttribute, UniqueRule};

/// A value two entries of one scope share.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Duplicate {
    /// The attribute.
    pub attribute: String,
    /// The value, as the later entry holds it.
    pub value: String,
    /// The scope's root DN.
    pub scope: String,
    /// The entry that holds it first (in a walk of the scope, parents first).
    pub first: String,
    /// The entry that holds it again.
    pub again: String,
}

/// Every value held by more than one entry of a scope of a rule of `rules` in `version`:
/// one [`Duplicate`] per entry after the first, rule by rule, each rule's scopes in name
/// order. A duplicate two rules both find (two rules over one attribute and scope) is
/// reported once.
pub fn duplicates(version: &Version, rules: &[UniqueRule]) -> Vec<Duplicate> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for rule in rules {
        for d in in_rule(version, &rule.attributes, &rule.scopes) {
            if seen.insert(d.clone()) {
                out.push(d);
            }
        }
    }
    out
}

/// The duplicates of `attributes` within each of `scopes`, scopes in name order.
fn in_rule(version: &Version, attributes: &[UniqueAttribute], scopes: &Scopes) -> Vec<Duplicate> {
    let mut roots: Vec<EntryId> = match scopes {
        Scopes::NamingContexts => version.naming_contexts().iter().collect(),
        Scopes::Subtrees(subtrees) => subtrees.iter().filter_map(|s| version.find(s)).collect(),
    };
    roots.sort_by_cached_key(|id| version.norm_dn(*id).as_str().to_string());
    let mut out = Vec::new();
    for root in roots {
        for attr in attributes {
            out.extend(in_scope(version, attr, root));
        }
    }
    out
}

/// The duplicates of `attr` below `root`.
fn in_scope(version: &Version, attr: &UniqueAttribute, root: EntryId) -> Vec<Duplicate> {
    let name = version
        .schema()
        .attribute_type_by_id(attr.ty)
        .map_or_else(|| "?".to_string(), |t| t.name().to_string());
    let mut first_holder: HashMap<Vec<u8>, EntryId> = HashMap::new();
    let mut out = Vec::new();
    for id in version.subtree(root) {
        let Some(view) = version.entry(id) else {
            continue;
        };
        let mut seen_here: Vec<Vec<u8>> = Vec::new();
        for value in attr.values(view.attrs()) {
            let Some(key) = attr.key(value) else {
                continue;
            };
            if seen_here.contains(&key) {
                continue;
            }
            match first_holder.get(&key) {
                Some(first) => out.push(Duplicate {
                    attribute: name.clone(),
                    value: String::from_utf8_lossy(value).into_owned(),
                    scope: version.dn(root),
                    first: version.dn(*first),
                    again: version.dn(id),
                }),
                None => {
                    first_holder.insert(key.clone(), id);
                }
            }
            seen_here.push(key);
        }
    }
    out
}
