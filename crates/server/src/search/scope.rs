//! Search scopes over entry IDs: whether an entry is in a scope, and the candidates of a
//! plan that are.
//!
//! Base ID 0 stands for the root above the naming contexts (the parent ID the store gives
//! them): its one-level scope is the naming contexts and its subtree is the whole
//! directory; it is not an entry, so its base scope holds nothing (the root DSE is not
//! stored).

use larch_proto::SearchScope;
use larch_store::{EntryId, Version};

use super::planner::{Candidates, Plan};

/// True when entry `id` exists and lies in the `scope` of `base`.
pub fn in_scope(version: &Version, base: EntryId, scope: SearchScope, id: EntryId) -> bool {
    let Some(entry) = version.entry(id) else {
        return false;
    };
    match scope {
        SearchScope::Base => id == base,
        SearchScope::OneLevel => entry.parent() == base,
        SearchScope::Subtree => base == 0 || version.is_within(id, base),
        SearchScope::Subordinate => id != base && (base == 0 || version.is_within(id, base)),
    }
}

/// The IDs of the entries a search must check: the plan's candidates in the scope, or the
/// whole scope when the plan is [`Candidates::All`]. Each ID is yielded once; a set's
/// candidates come in ID order, a scanned subtree parents first.
pub fn candidates_in_scope<'a>(
    plan: &'a Plan,
    version: &'a Version,
    base: EntryId,
    scope: SearchScope,
) -> ScopeIter<'a> {
    let inner: Box<dyn Iterator<Item = EntryId> + 'a> = match plan.candidates() {
        Candidates::Set(set) => Box::new(set.iter().filter(move |&id| in_scope(version, base, scope, id))),
        Candidates::All => match scope {
            SearchScope::Base => {
                Box::new(std::iter::once(base).filter(move |&id| version.entry(id).is_some()))
            }
            // The children set is copied out: the version hands out its own sets by value.
            SearchScope::OneLevel => Box::new(version.children(base).iter().collect::<Vec<_>>().into_iter()),
            SearchScope::Subtree | SearchScope::Subordinate if base == 0 => {
                Box::new(version.entries().map(|e| e.id))
            }
            SearchScope::Subtree => Box::new(version.subtree(base)),
            // The subtree walk yields its root first.
            SearchScope::Subordinate => Box::new(version.subtree(base).skip(1)),
        },
    };
    ScopeIter { inner }
}

/// The iterator of [`candidates_in_scope`].
pub struct ScopeIter<'a> {
    inner: Box<dyn Iterator<Item = EntryId> + 'a>,
}

impl Iterator for ScopeIter<'_> {
    type Item = EntryId;

    fn next(&mut self) -> Option<EntryId> {
        self.inner.next()
    }
}

impl std::fmt::Debug for ScopeIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScopeIter")
    }
}
