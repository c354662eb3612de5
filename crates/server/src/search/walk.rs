//! The candidates of a search as an owned, resumable walk: what a paged search keeps
//! between pages ([`Progress`]).
//!
//! A [`Walker`] yields the IDs a search must check, over one or more scopes (the request's,
//! then those alias dereferencing adds):
//! - from an index set ([`Mode::Set`], [`Mode::List`]): the candidates, in ID order, that
//!   lie in some scope; each once;
//! - by walking the tree ([`Mode::Dfs`]): each scope in turn, depth first, parents before
//!   children, siblings in ID order; entries of a scope that an earlier scope holds are
//!   skipped, so each entry comes once. [`Candidates::prune`] skips the subtree below the
//!   entry just yielded (a referral entry's).
//!
//! The same walk, the same version, the same IDs: an index set is kept as such while a
//! page runs and becomes a list of the remaining IDs when a page ends (so a later page
//! starts where it stopped without skipping), and the tree walk's stack is its own state.

use larch_proto::SearchScope;
use larch_store::idset::{self, IdSet};
use larch_store::version::MAX_DN_DEPTH;
use larch_store::{EntryId, Version};

use super::scope::in_scope;

/// A source of candidate IDs for the search loop.
pub(crate) trait Candidates {
    /// The next candidate.
    fn next_id(&mut self, version: &Version) -> Option<EntryId>;
    /// Do not walk below the entry last yielded.
    fn prune(&mut self);
    /// True when the source walks the tree (so pruning works); false for index sets, whose
    /// candidates below a referral entry the caller must recognise itself.
    fn walks_tree(&self) -> bool;
}

/// Whether `id` lies in one of `scopes`.
fn in_any(version: &Version, scopes: &[(EntryId, SearchScope)], id: EntryId) -> bool {
    scopes.iter().any(|&(r, s)| in_scope(version, r, s, id))
}

/// An index set iterated in place, by a run that will not need to resume it.
pub(crate) struct SetSource<'a> {
    pub(crate) it: idset::Iter<'a>,
    pub(crate) scopes: &'a [(EntryId, SearchScope)],
}

impl Candidates for SetSource<'_> {
    fn next_id(&mut self, version: &Version) -> Option<EntryId> {
        self.it.by_ref().find(|&id| in_any(version, self.scopes, id))
    }
    fn prune(&mut self) {}
    fn walks_tree(&self) -> bool {
        false
    }
}

/// One level of the tree walk: sibling IDs and the next position.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    ids: Vec<EntryId>,
    pos: usize,
}

/// How a walker finds its candidates.
#[derive(Debug, Clone)]
pub(crate) enum Mode {
    /// An index set not yet iterated.
    Set(IdSet),
    /// The remaining IDs of an index set.
    List {
        /// The IDs.
        ids: Vec<EntryId>,
        /// The next one.
        pos: usize,
    },
    /// A walk of the scopes.
    Dfs {
        /// The scope being walked.
        scope: usize,
        /// False until that scope's walk has started.
        started: bool,
        /// The walk's stack.
        stack: Vec<Frame>,
        /// The entry last yielded, whose children come next unless pruned.
        expand: Option<EntryId>,
    },
    /// Nothing more.
    Done,
}

/// The candidates of a search.
#[derive(Debug, Clone)]
pub(crate) struct Walker {
    /// The request's scope first, then the scopes aliases add.
    pub(crate) scopes: Vec<(EntryId, SearchScope)>,
    /// Where the candidates come from.
    pub(crate) mode: Mode,
    /// A matching entry found after the previous page was full: returned first.
    pub(crate) pending: Option<EntryId>,
}

impl Walker {
    /// A walker over an index set (`Some`) or over the scopes themselves.
    pub(crate) fn new(scopes: Vec<(EntryId, SearchScope)>, set: Option<IdSet>) -> Walker {
        let mode = match set {
            Some(s) => Mode::Set(s),
            None => Mode::Dfs {
                scope: 0,
                started: false,
                stack: Vec::new(),
                expand: None,
            },
        };
        Walker {
            scopes,
            mode,
            pending: None,
        }
    }

    /// The index set, when the walk has not started on it yet (taken out: the walker is
    /// then done).
    pub(crate) fn take_set(&mut self) -> Option<IdSet> {
        if !matches!(self.mode, Mode::Set(_)) {
            return None;
        }
        match std::mem::replace(&mut self.mode, Mode::Done) {
            Mode::Set(set) => Some(set),
            other => {
                self.mode = other;
                None
            }
        }
    }

    /// How many candidates remain at most, when known without walking.
    pub(crate) fn remaining_hint(&self) -> Option<usize> {
        match &self.mode {
            Mode::Set(s) => Some(s.len()),
            Mode::List { ids, pos } => Some(ids.len().saturating_sub(*pos)),
            Mode::Done => Some(0),
            Mode::Dfs { .. } => None,
        }
    }
}

/// Whether the walk of scope `scope` goes below the entries it yields.
fn deep(scope: SearchScope) -> bool {
    matches!(scope, SearchScope::Subtree | SearchScope::Subordinate)
}

impl Candidates for Walker {
    fn next_id(&mut self, version: &Version) -> Option<EntryId> {
        match &mut self.mode {
            Mode::Set(_) => {
                // Sets are iterated through `SetSource`; a walker holding one was not
                // started, so convert it.
                let Mode::Set(set) = std::mem::replace(&mut self.mode, Mode::Done) else {
                    return None;
                };
                self.mode = Mode::List {
                    ids: set.iter().collect(),
                    pos: 0,
                };
                self.next_id(version)
            }
            Mode::List { ids, pos } => {
                while let Some(&id) = ids.get(*pos) {
                    *pos += 1;
                    if in_any(version, &self.scopes, id) {
                        return Some(id);
                    }
                }
                None
            }
            Mode::Dfs {
                scope,
                started,
                stack,
                expand,
            } => loop {
                let &(root, kind) = self.scopes.get(*scope)?;
                if !*started {
                    *started = true;
                    stack.clear();
                    *expand = None;
                    let first = match kind {
                        SearchScope::Base => vec![root],
                        SearchScope::Subtree if root != 0 => vec![root],
                        _ => version.children(root).iter().collect(),
                    };
                    stack.push(Frame { ids: first, pos: 0 });
                }
                if let Some(e) = expand.take() {
                    if deep(kind) && stack.len() <= MAX_DN_DEPTH && version.has_children(e) {
                        stack.push(Frame {
                            ids: version.children(e).iter().collect(),
                            pos: 0,
                        });
                    }
                }
                let Some(top) = stack.last_mut() else {
                    *scope += 1;
                    *started = false;
                    continue;
                };
                let Some(&id) = top.ids.get(top.pos) else {
                    stack.pop();
                    continue;
                };
                top.pos += 1;
                if version.entry(id).is_none() {
                    continue;
                }
                *expand = Some(id);
                let current = *scope;
                if in_any(version, &self.scopes[..current], id) {
                    continue;
                }
                return Some(id);
            },
            Mode::Done => None,
        }
    }

    fn prune(&mut self) {
        if let Mode::Dfs { expand, .. } = &mut self.mode {
            *expand = None;
        }
    }

    fn walks_tree(&self) -> bool {
        matches!(self.mode, Mode::Dfs { .. })
    }
}

/// Where a search stands: its candidates (or its sorted results) and its counters, kept
/// between the pages of a paged search.
#[derive(Debug, Clone)]
pub(crate) struct Progress {
    /// What comes next.
    pub(crate) source: Source,
    /// Entries returned on earlier pages (the size limit counts them all).
    pub(crate) returned: usize,
    /// Candidates examined on earlier pages (the lookthrough limit counts them all).
    pub(crate) examined: usize,
    /// Whether the lookthrough limit counts this search's candidates.
    pub(crate) counted: bool,
}

/// The rest of a search's results.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// Candidates still to be checked against the filter.
    Walk(Walker),
    /// Matched entries, sorted; the next is at `pos`.
    Sorted {
        /// The IDs in order.
        ids: Vec<EntryId>,
        /// The next one.
        pos: usize,
    },
}
