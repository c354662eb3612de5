//! Access control in a search: what a [`WalkSearch`](super::run) carries to decide, per
//! candidate, whether the filter may test an attribute, whether the entry is returned, and
//! which of its attributes are.
//!
//! Decided once, when the search is prepared:
//! 1. the requester ([`Requester`]): the admin, or the outcome of every rule for it;
//! 2. the filter: the types the requester may search on no entry are hidden (each
//!    assertion on one is Undefined); the filter's types whose search right depends on the
//!    entry are listed;
//! 3. whether entry visibility (`read` on `entry`) is the same for every entry.
//!
//! Per candidate, only what depends on it: for the listed types, which the requester may
//! not search on this entry (the filter hiding them is built once per such set and kept);
//! visibility, when it depends on the entry; and for each returned attribute whose read
//! right depends on the entry, the rules (the others are a bit in the requester's mask).
//! Entries the requester may not read are skipped silently and do not count against the
//! size limit; attributes it may not read are left out (in typesOnly too).

use larch_model::filter::CompiledFilter;
use larch_model::schema::{AttributeTypeId, Schema};
use larch_store::{EntryId, Version};

use crate::acl::{AccessRules, EntryAccess, Privileges, Requester, Target, What};

/// Most distinct sets of hidden types whose filter a search keeps (a rule set that makes
/// more differ between entries builds the filter again for each entry beyond them).
const MAX_CACHED_FILTERS: usize = 16;

/// The access state of one search.
#[derive(Debug)]
pub(crate) struct SearchAccess {
    requester: Requester,
    /// The filter's types whose search right depends on the entry (at most 64 are tracked
    /// as a mask; all are checked).
    dependent: Vec<AttributeTypeId>,
    /// `read` on `entry`, when the same for every entry.
    visible: Option<bool>,
}

/// Per-run state: filters built for sets of hidden types.
#[derive(Debug, Default)]
pub(crate) struct FilterCache {
    filters: Vec<(u64, CompiledFilter)>,
    scratch: Option<CompiledFilter>,
}

impl SearchAccess {
    /// Prepares the checks of `requester`; `filter` is replaced by its copy without the
    /// types the requester may never search.
    pub(crate) fn new(
        rules: &AccessRules,
        requester: Requester,
        filter: &mut CompiledFilter,
        schema: &Schema,
    ) -> SearchAccess {
        let mut dependent = Vec::new();
        if !requester.is_admin() {
            let never = |t: AttributeTypeId| {
                requester.uniform(rules, What::Attribute(t), Privileges::SEARCH) == Some(false)
            };
            if let Some(hidden) = filter.hide(&never, schema) {
                *filter = hidden;
            }
            if requester.any_attribute_depends(rules, Privileges::SEARCH) {
                dependent = filter
                    .tested_types(schema)
                    .into_iter()
                    .filter(|&t| {
                        requester
                            .uniform(rules, What::Attribute(t), Privileges::SEARCH)
                            .is_none()
                    })
                    .collect();
            }
        }
        SearchAccess {
            visible: requester.uniform(rules, What::Entry, Privileges::READ),
            requester,
            dependent,
        }
    }

    /// The filter to test entry `id` with: `filter`, or a copy hiding the types the
    /// requester may not search on this entry.
    pub(crate) fn filter_for<'f>(
        &self,
        rules: &AccessRules,
        filter: &'f CompiledFilter,
        cache: &'f mut FilterCache,
        version: &Version,
        id: EntryId,
    ) -> &'f CompiledFilter {
        if self.dependent.is_empty() {
            return filter;
        }
        let mut access = EntryAccess::new(rules, &self.requester, Target::Stored { version, id });
        let mut mask = 0u64;
        let mut hidden: Vec<AttributeTypeId> = Vec::new();
        for (i, &t) in self.dependent.iter().enumerate() {
            if !access.allows(What::Attribute(t), Privileges::SEARCH) {
                if i < 64 {
                    mask |= 1 << i;
                }
                hidden.push(t);
            }
        }
        if hidden.is_empty() {
            return filter;
        }
        let schema = version.schema();
        let build = || {
            filter
                .hide(&|t| hidden.contains(&t), schema)
                .unwrap_or_else(|| filter.clone())
        };
        if self.dependent.len() > 64 {
            return cache.scratch.insert(build());
        }
        match cache.filters.iter().position(|(m, _)| *m == mask) {
            Some(i) => &cache.filters[i].1,
            None if cache.filters.len() < MAX_CACHED_FILTERS => {
                cache.filters.push((mask, build()));
                &cache.filters[cache.filters.len() - 1].1
            }
            None => cache.scratch.insert(build()),
        }
    }

    /// Whether the requester may search on type `t` of entry `id` (for a sort key whose
    /// right depends on the entry).
    pub(crate) fn searchable(
        &self,
        rules: &AccessRules,
        version: &Version,
        id: EntryId,
        t: AttributeTypeId,
    ) -> bool {
        match self
            .requester
            .uniform(rules, What::Attribute(t), Privileges::SEARCH)
        {
            Some(b) => b,
            None => EntryAccess::new(rules, &self.requester, Target::Stored { version, id })
                .allows(What::Attribute(t), Privileges::SEARCH),
        }
    }

    /// Whether entry `id` is returned (`read` on `entry`).
    pub(crate) fn visible(&self, rules: &AccessRules, version: &Version, id: EntryId) -> bool {
        match self.visible {
            Some(v) => v,
            None => EntryAccess::new(rules, &self.requester, Target::Stored { version, id })
                .allows(What::Entry, Privileges::READ),
        }
    }

    /// Whether a search reference for referral entry `id` is sent (`disclose` on `entry`).
    pub(crate) fn disclosed(&self, rules: &AccessRules, version: &Version, id: EntryId) -> bool {
        EntryAccess::new(rules, &self.requester, Target::Stored { version, id })
            .allows(What::Entry, Privileges::DISCLOSE)
    }

    /// A predicate saying which attribute types of entry `id` are returned.
    pub(crate) fn readable<'a>(
        &'a self,
        rules: &'a AccessRules,
        version: &'a Version,
        id: EntryId,
    ) -> impl FnMut(AttributeTypeId) -> bool + 'a {
        let mut per_entry: Option<EntryAccess<'a>> = None;
        move |t| match self
            .requester
            .uniform(rules, What::Attribute(t), Privileges::READ)
        {
            Some(b) => b,
            None => per_entry
                .get_or_insert_with(|| {
                    EntryAccess::new(rules, &self.requester, Target::Stored { version, id })
                })
                .allows(What::Attribute(t), Privileges::READ),
        }
    }
}
