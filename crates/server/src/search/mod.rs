//! Search planning: which entries a search must check against its filter.
//!
//! A search answers with the entries in its scope for which the filter is TRUE. Checking
//! every entry in the scope costs one filter evaluation per entry; the planner
//! ([`plan`]) uses the store's attribute indexes to find a smaller set of candidates, and
//! the search then evaluates the full filter on those candidates only.
//!
//! Invariant (soundness): for every filter, the candidates contain every entry for which
//! the filter evaluates to TRUE. Candidates may hold extra entries (hash collisions, grams
//! shared by non-matching values, assertion options, scope); the filter check removes them.
//!
//! How a plan is computed, bottom up over the filter (with an explicit stack, no recursion):
//! 1. each leaf gives either a set of IDs from an index ([`Candidates::Set`]) or
//!    [`Candidates::All`] when no index can narrow it; a leaf that can never be TRUE (an
//!    undefined attribute type, a type without the rule the assertion needs, an unknown
//!    filter choice) gives the empty set;
//! 2. an `and` intersects the sets of its children, smallest first, ignoring children that
//!    gave `All`, and stops at the first empty result; `(&)` (absolute true) is `All`;
//! 3. an `or` unites the sets of its children, and is `All` as soon as one child is; `(|)`
//!    (absolute false) is the empty set;
//! 4. a `not` is always `All`: under three-valued logic an entry outside a child's
//!    candidates may make the child Undefined rather than FALSE, and `not` of Undefined is
//!    not TRUE, so a complement would be sound only by accident.
//!
//! Cost model. Index lookups cost one hash probe per equality key, one probe per 3-octet
//! gram of a substring assertion, and a range walk for `>=`/`<=`; each set operation is
//! linear in the sizes of the sets involved (sets are sorted arrays or bitmaps). A filter
//! item on a type with `k` subtypes costs `k + 1` lookups and a union. Then
//! [`candidates_in_scope`] yields the candidates in the scope: for a set, one membership
//! test per candidate (base: a comparison; one level: one parent lookup; subtree: a walk up
//! the tree, at most the entry's depth); for `All`, a walk of the scope itself (one entry,
//! the children of the base, or the subtree below it). The filter check that follows costs
//! one evaluation per yielded ID, so the plan's value is the number of IDs it removes.
//! [`Plan::is_indexed`] tells the server whether the search scans its scope, for the
//! lookthrough limit it puts on unindexed searches.

mod access;
pub mod deref;
mod monitor;
pub mod paged;
mod planner;
pub mod referral;
pub mod run;
mod scope;
pub mod sort;
pub(crate) mod sync;
mod walk;

pub use planner::{plan, plan_compiled, Candidates, Plan, MAX_DESCRIPTION_LEN};
pub use scope::{candidates_in_scope, in_scope, ScopeIter};

pub use paged::{PagedSearches, MAX_PAGED_SEARCHES};
pub use referral::referral_above;
pub use run::{prepare, PreparedSearch, SearchContext, Step};
