//! Alias dereferencing (RFC 4511 section 4.5.1.3, RFC 4512 section 2.6): an entry of class
//! `alias` stands for the entry its `aliasedObjectName` names.
//!
//! - `derefFindingBaseObj` and `derefAlways` apply to the base: [`deref_base`] follows the
//!   chain of aliases from the base to an entry that is not an alias; an alias above a
//!   missing base is followed too, and the rest of the base's DN is looked up below its
//!   target (as OpenLDAP does). A missing target, a loop or a chain longer than
//!   [`MAX_ALIAS_CHAIN`] fails the search (`aliasProblem` 33, or
//!   `aliasDereferencingProblem` 36 for the length), matchedDN the last alias looked at.
//! - `derefInSearching` and `derefAlways` apply below the base: [`alias_scopes`] finds the
//!   aliases in the scope, follows each to its target, and adds the target as a further
//!   scope (its subtree for a subtree or subordinate search, the target alone for a
//!   one-level search), repeating for aliases inside the added scopes. An alias whose chain
//!   fails is skipped. Alias entries themselves are not returned. A scope already covered
//!   by another is not added, and the search skips entries of a scope that an earlier
//!   scope holds, so each entry is returned once.

use larch_model::dn::NormDn;
use larch_proto::{ResultCode, SearchScope};
use larch_store::{EntryId, Lookup, Version};

use super::scope::in_scope;
use crate::error::OpError;
use crate::lookup::class::ClassSet;

/// Longest chain of aliases followed (an alias naming an alias naming ...): RFC 4512 puts
/// no bound, OpenLDAP's default `max_deref_depth` is 15; real chains have one link.
pub const MAX_ALIAS_CHAIN: usize = 15;

/// Most scopes one search gathers through aliases: each is walked in full, so a directory
/// of many aliases cannot make one search walk the tree hundreds of times.
pub const MAX_ALIAS_SCOPES: usize = 256;

/// Why following an alias failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AliasFailure {
    /// The alias looked at last.
    pub at: EntryId,
    /// The result for the client.
    pub error: OpError,
}

/// The target of alias `id`'s `aliasedObjectName`, looked up.
fn alias_target(version: &Version, id: EntryId) -> Result<Lookup, OpError> {
    let schema = version.schema();
    let dn = || version.dn(id);
    let ty = schema
        .attribute_type("aliasedObjectName")
        .ok_or_else(|| OpError::new(ResultCode::ALIAS_PROBLEM, "the schema lacks aliasedObjectName"))?;
    let entry = version
        .entry(id)
        .ok_or_else(|| OpError::new(ResultCode::ALIAS_PROBLEM, "alias entry vanished"))?;
    let mut values = entry.attrs().attribute(ty.id).flat_map(|a| a.values.iter());
    let (Some(value), None) = (values.next(), values.next()) else {
        return Err(OpError::new(
            ResultCode::ALIAS_PROBLEM,
            format!("alias `{}` needs exactly one aliasedObjectName value", dn()),
        ));
    };
    let norm = NormDn::from_text(value, schema).map_err(|e| {
        OpError::new(
            ResultCode::ALIAS_PROBLEM,
            format!("alias `{}` has an invalid aliasedObjectName: {e}", dn()),
        )
    })?;
    Ok(version.lookup(&norm))
}

/// Follows aliases from `start` to an entry that is not an alias.
pub fn follow(version: &Version, aliases: &ClassSet, start: EntryId) -> Result<EntryId, AliasFailure> {
    let mut cur = start;
    let mut seen: Vec<EntryId> = Vec::new();
    for _ in 0..=MAX_ALIAS_CHAIN {
        if !aliases.contains(version, cur) {
            return Ok(cur);
        }
        if seen.contains(&cur) {
            return Err(AliasFailure {
                at: cur,
                error: OpError::new(
                    ResultCode::ALIAS_PROBLEM,
                    format!("circular alias at `{}`", version.dn(cur)),
                ),
            });
        }
        seen.push(cur);
        match alias_target(version, cur) {
            Ok(Lookup::Found(t)) => cur = t,
            Ok(Lookup::Missing { .. }) => {
                return Err(AliasFailure {
                    at: cur,
                    error: OpError::new(
                        ResultCode::ALIAS_PROBLEM,
                        format!("the object aliased by `{}` does not exist", version.dn(cur)),
                    ),
                })
            }
            Err(error) => return Err(AliasFailure { at: cur, error }),
        }
    }
    Err(AliasFailure {
        at: cur,
        error: OpError::new(
            ResultCode::ALIAS_DEREFERENCING_PROBLEM,
            format!(
                "more than {MAX_ALIAS_CHAIN} aliases in a chain at `{}`",
                version.dn(start)
            ),
        ),
    })
}

/// Where dereferencing the base led.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseLookup {
    /// The base entry (after following aliases).
    Found(EntryId),
    /// No such entry; the deepest existing ancestor.
    Missing {
        /// The ancestor, if any.
        matched: Option<EntryId>,
    },
}

/// Looks the base up, following aliases at the base and above a missing base (see the
/// module documentation). With `deref` false it is a plain lookup.
pub fn deref_base(
    version: &Version,
    aliases: Option<&ClassSet>,
    base: &NormDn,
    deref: bool,
) -> Result<BaseLookup, OpError> {
    let Some(aliases) = aliases.filter(|_| deref) else {
        return Ok(match version.lookup(base) {
            Lookup::Found(id) => BaseLookup::Found(id),
            Lookup::Missing { matched } => BaseLookup::Missing { matched },
        });
    };
    let fail = |f: AliasFailure| f.error.with_matched(version.dn(f.at));
    let mut dn = base.clone();
    for _ in 0..=MAX_ALIAS_CHAIN {
        match version.lookup(&dn) {
            Lookup::Found(id) => return follow(version, aliases, id).map(BaseLookup::Found).map_err(fail),
            Lookup::Missing { matched: Some(m) } if aliases.contains(version, m) => {
                let target = follow(version, aliases, m).map_err(fail)?;
                // The RDNs of the base below the alias, then the target's DN.
                let matched_depth = version.norm_dn(m).depth();
                let rdns: Vec<&str> = dn.as_str().split(',').collect();
                let stub = rdns.len().saturating_sub(matched_depth);
                let mut next = rdns[..stub].join(",");
                let target_dn = version.norm_dn(target);
                if !target_dn.is_root() {
                    next.push(',');
                    next.push_str(target_dn.as_str());
                }
                dn = NormDn::from_normalized(&next);
            }
            Lookup::Missing { matched } => return Ok(BaseLookup::Missing { matched }),
        }
    }
    Err(OpError::new(
        ResultCode::ALIAS_DEREFERENCING_PROBLEM,
        format!("more than {MAX_ALIAS_CHAIN} aliases above the base `{base}`"),
    ))
}

/// Whether scope `outer` holds every entry of scope `inner`.
fn covers(version: &Version, outer: (EntryId, SearchScope), inner: (EntryId, SearchScope)) -> bool {
    let (r, s) = outer;
    let (t, u) = inner;
    match (s, u) {
        (_, SearchScope::Base) => in_scope(version, r, s, t),
        (SearchScope::Subtree, _) => r == 0 || version.is_within(t, r),
        (SearchScope::Subordinate, _) => t != r && (r == 0 || version.is_within(t, r)),
        _ => false,
    }
}

/// The scopes a `derefInSearching` search walks: `first` (the request's), then one per
/// alias target (see the module documentation). A base that is an alias (when it was not
/// dereferenced in finding) is followed too when the scope holds it, as OpenLDAP does.
pub fn alias_scopes(
    version: &Version,
    aliases: &ClassSet,
    first: (EntryId, SearchScope),
) -> Result<Vec<(EntryId, SearchScope)>, OpError> {
    let mut scopes = vec![first];
    if first.1 == SearchScope::Base || aliases.is_known_empty() {
        return Ok(scopes);
    }
    // Every alias of the directory once: from the index, else by a walk of the entries.
    let all: Vec<EntryId> = match aliases.members() {
        Some(set) => set.iter().collect(),
        None => version
            .entries()
            .filter(|e| aliases.test().holds(e.attrs(), version.schema()))
            .map(|e| e.id)
            .collect(),
    };
    let target_scope = if first.1 == SearchScope::OneLevel {
        SearchScope::Base
    } else {
        SearchScope::Subtree
    };
    let mut i = 0;
    while i < scopes.len() {
        let (root, scope) = scopes[i];
        for &a in &all {
            if !in_scope(version, root, scope, a) {
                continue;
            }
            let Ok(target) = follow(version, aliases, a) else {
                continue;
            };
            let new = (target, target_scope);
            if scopes.iter().any(|&s| covers(version, s, new)) {
                continue;
            }
            if scopes.len() >= MAX_ALIAS_SCOPES {
                return Err(OpError::new(
                    ResultCode::ADMIN_LIMIT_EXCEEDED,
                    format!("dereferencing aliases would search more than {MAX_ALIAS_SCOPES} scopes"),
                ));
            }
            scopes.push(new);
        }
        i += 1;
    }
    Ok(scopes)
}
