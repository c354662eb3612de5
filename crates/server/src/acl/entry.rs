//! Checks on one entry: [`EntryAccess::allows`], and the DN tests they need.
//!
//! How one check is decided (the evaluation order of the module `acl`):
//! 1. the admin is granted everything;
//! 2. for read and search, the requester's mask answers when the decision is the same for
//!    every entry (nothing about the entry is looked at);
//! 3. otherwise the rules are looked at in order: a rule that does not cover the *what* is
//!    skipped; a rule with a DN or filter is tested against the entry (the result is kept
//!    for the next check on the same entry); the first rule left decides with the
//!    requester's outcome for it, its self part when the entry is the requester's own;
//! 4. no rule left: denied.
//!
//! DN tests need no allocation: a stored entry's normalized DN is the chain of normalized
//! RDNs up to its naming context, compared against the rule's DN from the right in two
//! passes over the chain (its length first, then the bytes). In a normalized DN every `,`
//! separates RDNs (values escape theirs), so RDNs are counted by commas.

use larch_model::dn::Dn;
use larch_model::entry::StoredRef;
use larch_model::schema::Schema;
use larch_store::version::MAX_DN_DEPTH;
use larch_store::{EntryId, Version};

use super::eval::Decision;
use super::rule::{Privileges, What};
use super::{AccessRules, Requester};
use larch_model::dn::NormDn;

/// The entry a check is about.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// An entry of a version.
    Stored {
        /// The version.
        version: &'a Version,
        /// The entry.
        id: EntryId,
    },
    /// An entry given by name and attributes: one about to be added, or the root above
    /// the naming contexts (empty DN, no attributes) whose `children` a new naming context
    /// is added to.
    Named {
        /// The normalized DN.
        dn: &'a NormDn,
        /// The DN as written (for filters with `:dn:` matches).
        written: Option<&'a Dn>,
        /// The attributes.
        attrs: StoredRef<'a>,
        /// The schema (for the rules' filters).
        schema: &'a Schema,
    },
}

/// The number of RDNs `dn` has below `base` (0 when they are equal), or `None` when `dn`
/// is not `base` nor below it. Both are normalized DN strings; the empty `base` is the
/// root, above everything.
pub fn levels_below(dn: &str, base: &str) -> Option<usize> {
    if base.is_empty() {
        return Some(if dn.is_empty() {
            0
        } else {
            commas(dn.as_bytes()) + 1
        });
    }
    if dn == base {
        return Some(0);
    }
    let cut = dn.len().checked_sub(base.len() + 1)?;
    (dn.ends_with(base) && dn.as_bytes().get(cut) == Some(&b',')).then(|| commas(&dn.as_bytes()[..=cut]))
}

fn commas(s: &[u8]) -> usize {
    s.iter().filter(|&&c| c == b',').count()
}

/// [`levels_below`] for entry `id` of `version`, without building its DN; `None` also when
/// there is no such entry.
pub fn stored_levels_below(version: &Version, id: EntryId, base: &str) -> Option<usize> {
    // Pass 1: the DN's length and number of RDNs.
    let mut total = 0usize;
    let mut segments = 0usize;
    let mut rdns = 0usize;
    let mut cur = id;
    for _ in 0..=MAX_DN_DEPTH {
        let Some(e) = version.entry(cur) else { break };
        let s = e.norm_rdn().as_bytes();
        total += s.len();
        segments += 1;
        rdns += 1 + commas(s);
        cur = e.parent();
        if cur == 0 {
            break;
        }
    }
    if segments == 0 {
        return None;
    }
    total += segments - 1;
    if base.is_empty() {
        return Some(rdns);
    }
    let start = total.checked_sub(base.len())?;
    let b = base.as_bytes();
    // Pass 2: the DN from `start` on must be `base`, the octet before it a comma; RDNs
    // before `start` are counted by their commas.
    let mut before = 0usize;
    let mut off = 0usize;
    let mut cur = id;
    let mut check = |piece: &[u8], off: usize| -> bool {
        let end = off + piece.len();
        if off < start {
            let upto = end.min(start);
            let head = &piece[..upto - off];
            before += commas(head);
            if upto == start && head.last() != Some(&b',') {
                return false;
            }
        }
        if end > start {
            let from = off.max(start);
            if b.get(from - start..end - start) != Some(&piece[from - off..]) {
                return false;
            }
        }
        true
    };
    for i in 0..=MAX_DN_DEPTH {
        let Some(e) = version.entry(cur) else { break };
        if i > 0 {
            if !check(b",", off) {
                return None;
            }
            off += 1;
        }
        let s = e.norm_rdn().as_bytes();
        if !check(s, off) {
            return None;
        }
        off += s.len();
        cur = e.parent();
        if cur == 0 {
            break;
        }
    }
    Some(before)
}

/// Checks on one entry for one requester; results that depend on the entry are kept for
/// the next check.
#[derive(Debug)]
pub struct EntryAccess<'a> {
    rules: &'a AccessRules,
    requester: &'a Requester,
    target: Target<'a>,
    /// Rules (the first 64) whose DN and filter were tested, and those that hold.
    tested: u64,
    holds: u64,
    is_self: Option<bool>,
    scratch: Vec<u8>,
}

impl<'a> EntryAccess<'a> {
    /// Checks of `requester` on `target`.
    pub fn new(rules: &'a AccessRules, requester: &'a Requester, target: Target<'a>) -> EntryAccess<'a> {
        EntryAccess {
            rules,
            requester,
            target,
            tested: 0,
            holds: 0,
            is_self: None,
            scratch: Vec::new(),
        }
    }

    /// Whether the requester has every privilege of `need` on `what` of the entry.
    pub fn allows(&mut self, what: What, need: Privileges) -> bool {
        let Some(view) = self.rules.view(self.requester) else {
            return true;
        };
        // The masks leave out the rules about cn=Monitor (`Rule::monitor_only`): valid for
        // every entry but the monitor's.
        let mask = if self.in_monitor() { None } else { view.mask(need) };
        if let Some(mask) = mask {
            match mask.decide(what) {
                Decision::Allow => return true,
                Decision::Deny => return false,
                Decision::Depends => {}
            }
        }
        for (i, rule) in self.rules.rules().iter().enumerate() {
            if !rule.covers(what) {
                continue;
            }
            if rule.depends_on_entry() && !self.rule_holds(i) {
                continue;
            }
            let Some(o) = view.outcomes.get(i) else {
                return false;
            };
            let granted = match o.self_privileges {
                Some(s) if self.is_self() => s,
                _ => o.other,
            };
            return granted.contains(need);
        }
        false
    }

    /// Whether the target is a `cn=Monitor` entry (never a stored one).
    fn in_monitor(&self) -> bool {
        match &self.target {
            Target::Stored { .. } => false,
            Target::Named { dn, .. } => super::rule::in_monitor(dn),
        }
    }

    /// Whether rule `i`'s DN and filter hold for the entry.
    fn rule_holds(&mut self, i: usize) -> bool {
        let bit = if i < 64 { 1u64 << i } else { 0 };
        if self.tested & bit != 0 {
            return self.holds & bit != 0;
        }
        let Some(rule) = self.rules.rules().get(i) else {
            return false;
        };
        let mut ok = true;
        if let Some((dn, scope)) = &rule.dn {
            let levels = match self.target {
                Target::Stored { version, id } => stored_levels_below(version, id, dn.as_str()),
                Target::Named { dn: own, .. } => levels_below(own.as_str(), dn.as_str()),
            };
            ok = levels.is_some_and(|l| scope.holds(l));
        }
        if ok {
            if let Some(filter) = &rule.filter {
                ok = match self.target {
                    Target::Stored { version, id } => match version.entry(id) {
                        Some(e) => {
                            let dn = filter
                                .needs_dn()
                                .then(|| Dn::parse(version.dn(id).as_bytes()).ok())
                                .flatten();
                            filter.matches(e.attrs(), dn.as_ref(), version.schema(), &mut self.scratch)
                        }
                        None => false,
                    },
                    Target::Named {
                        attrs,
                        written,
                        schema,
                        ..
                    } => filter.matches(attrs, written, schema, &mut self.scratch),
                };
            }
        }
        if bit != 0 {
            self.tested |= bit;
            if ok {
                self.holds |= bit;
            }
        }
        ok
    }

    /// Whether the entry is the requester's own.
    fn is_self(&mut self) -> bool {
        if let Some(s) = self.is_self {
            return s;
        }
        let s = match self.requester.self_dn() {
            None => false,
            Some(me) => match self.target {
                Target::Stored { version, id } => {
                    // The leaf RDN first: most entries are not the requester's.
                    version.entry(id).is_some_and(|e| {
                        me.as_str().starts_with(e.norm_rdn())
                            && stored_levels_below(version, id, me.as_str()) == Some(0)
                    })
                }
                Target::Named { dn, .. } => dn == me,
            },
        };
        self.is_self = Some(s);
        s
    }
}

impl EntryAccess<'_> {
    /// `filter` with every type the requester may not search on this entry hidden (each
    /// assertion on one is Undefined, as slapd's `test_filter` makes it); `None` when it
    /// may search them all.
    pub fn hide_unsearchable(
        &mut self,
        filter: &larch_model::filter::CompiledFilter,
        schema: &Schema,
    ) -> Option<larch_model::filter::CompiledFilter> {
        if self.requester.is_admin() {
            return None;
        }
        let denied: Vec<larch_model::schema::AttributeTypeId> = filter
            .tested_types(schema)
            .into_iter()
            .filter(|&t| !self.allows(What::Attribute(t), Privileges::SEARCH))
            .collect();
        if denied.is_empty() {
            return None;
        }
        filter.hide(&|t| denied.binary_search(&t).is_ok(), schema)
    }
}
