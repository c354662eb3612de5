//! What a requester gets from each rule, decided once per operation: the [`Requester`].
//!
//! Steps, for a requester that is not the admin:
//! 1. for each rule, its clauses are looked at in order until one holds for the requester
//!    without looking at the entry (keyword, DN, group, peer): that clause's privileges are
//!    the rule's *other* outcome (none when no clause holds); a `self` clause met before it
//!    (whose other conditions hold) gives the *self* outcome, used for the requester's own
//!    entry;
//! 2. from the outcomes, a mask per privilege of interest (read, search): for each
//!    attribute type and for `entry` and `children`, whether the first rule covering it
//!    grants the privilege for every entry, denies it for every entry, or depends on the
//!    entry (the rule has a DN or a filter, or its self and other outcomes differ on it);
//! 3. when no clause of any rule names a DN, group or peer, steps 1 and 2 were done at
//!    load for the classes anonymous and authenticated ([`AccessRules::classes`]) and the
//!    requester only points at its class.
//!
//! Group membership is read from the operation's version, each group at most once per
//! requester and only when a clause naming it is reached.

use larch_model::dn::NormDn;
use larch_store::Version;

use super::entry::levels_below;
use super::group::is_member;
use super::rule::{Keyword, Privileges, Rule, TypeSet, What, Who};
use super::AccessRules;
use crate::client::Client;
use crate::identity::Identity;

/// What one rule grants a requester.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// For the requester's own entry, when a `self` clause comes first.
    pub self_privileges: Option<Privileges>,
    /// For every other entry (and the own entry without a `self` clause).
    pub other: Privileges,
}

/// A decision that may or may not depend on the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Granted for every entry.
    Allow,
    /// Denied for every entry.
    Deny,
    /// Look at the entry.
    Depends,
}

/// For one privilege: the decision on `entry`, `children` and every attribute type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mask {
    pub entry: Decision,
    pub children: Decision,
    /// Types granted for every entry.
    pub allowed: TypeSet,
    /// Types whose decision depends on the entry.
    pub dependent: TypeSet,
}

impl Mask {
    /// The decision on `what`.
    pub fn decide(&self, what: What) -> Decision {
        match what {
            What::Entry => self.entry,
            What::Children => self.children,
            What::Attribute(t) if self.allowed.contains(t) => Decision::Allow,
            What::Attribute(t) if self.dependent.contains(t) => Decision::Depends,
            What::Attribute(_) => Decision::Deny,
        }
    }

    /// Computes the mask of `need` from the outcomes (see the module documentation).
    fn new(rules: &[Rule], outcomes: &[Outcome], need: Privileges, type_count: usize) -> Mask {
        let mut undecided = TypeSet::full(type_count);
        let mut allowed = TypeSet::empty(type_count);
        let mut dependent = TypeSet::empty(type_count);
        let mut entry = None;
        let mut children = None;
        for (rule, o) in rules.iter().zip(outcomes) {
            if rule.monitor_only() {
                continue;
            }
            let depends = rule.depends_on_entry()
                || o.self_privileges
                    .is_some_and(|s| s.contains(need) != o.other.contains(need));
            let decision = if depends {
                Decision::Depends
            } else if o.other.contains(need) {
                Decision::Allow
            } else {
                Decision::Deny
            };
            let target = match decision {
                Decision::Depends => Some(&mut dependent),
                Decision::Allow => Some(&mut allowed),
                Decision::Deny => None,
            };
            undecided.take_into(rule.attrs.as_ref().map(|a| &a.types), target);
            if entry.is_none() && rule.covers(What::Entry) {
                entry = Some(decision);
            }
            if children.is_none() && rule.covers(What::Children) {
                children = Some(decision);
            }
        }
        Mask {
            entry: entry.unwrap_or(Decision::Deny),
            children: children.unwrap_or(Decision::Deny),
            allowed,
            dependent,
        }
    }
}

/// The outcomes of every rule for one requester, with its masks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct View {
    pub outcomes: Box<[Outcome]>,
    /// Some outcome has a self part.
    pub has_self: bool,
    pub read: Mask,
    pub search: Mask,
}

impl View {
    pub fn new(rules: &[Rule], outcomes: Vec<Outcome>, type_count: usize) -> View {
        View {
            has_self: outcomes.iter().any(|o| o.self_privileges.is_some()),
            read: Mask::new(rules, &outcomes, Privileges::READ, type_count),
            search: Mask::new(rules, &outcomes, Privileges::SEARCH, type_count),
            outcomes: outcomes.into_boxed_slice(),
        }
    }

    /// The mask of `need`, when one is kept for it.
    pub fn mask(&self, need: Privileges) -> Option<&Mask> {
        if need == Privileges::READ {
            Some(&self.read)
        } else if need == Privileges::SEARCH {
            Some(&self.search)
        } else {
            None
        }
    }
}

/// Whether a clause's conditions hold for a requester.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WhoMatch {
    No,
    Yes,
    /// Yes, for the requester's own entry only (a `self` clause).
    IfSelf,
}

/// Decides `who` for `identity` connected as `client`; `member(i)` says whether the
/// requester is a member of group `i`.
pub(crate) fn who_matches(
    who: &Who,
    identity: &Identity,
    client: &Client,
    member: &mut dyn FnMut(usize) -> bool,
) -> WhoMatch {
    let authenticated = identity.is_authenticated();
    let keyword_ok = match who.keyword {
        None | Some(Keyword::Anyone) => true,
        Some(Keyword::Anonymous) => !authenticated,
        Some(Keyword::Users) | Some(Keyword::SelfEntry) => authenticated,
        Some(Keyword::Admin) => identity.is_admin(),
    };
    if !keyword_ok {
        return WhoMatch::No;
    }
    if let Some(net) = &who.peer {
        if !client.addr.is_some_and(|a| net.contains(a.ip())) {
            return WhoMatch::No;
        }
    }
    if let Some((dn, scope)) = &who.dn {
        let within = identity
            .norm_dn()
            .and_then(|n| levels_below(n.as_str(), dn.as_str()))
            .is_some_and(|l| scope.holds(l));
        if !within {
            return WhoMatch::No;
        }
    }
    if let Some(g) = who.group {
        if !authenticated || !member(g) {
            return WhoMatch::No;
        }
    }
    if who.keyword == Some(Keyword::SelfEntry) {
        WhoMatch::IfSelf
    } else {
        WhoMatch::Yes
    }
}

/// The outcome of each rule for a requester (step 1 of the module documentation).
pub(crate) fn outcomes(
    rules: &[Rule],
    identity: &Identity,
    client: &Client,
    member: &mut dyn FnMut(usize) -> bool,
) -> Vec<Outcome> {
    rules
        .iter()
        .map(|rule| {
            let mut out = Outcome {
                self_privileges: None,
                other: Privileges::NONE,
            };
            for clause in &rule.clauses {
                match who_matches(&clause.who, identity, client, member) {
                    WhoMatch::No => {}
                    WhoMatch::IfSelf => {
                        out.self_privileges.get_or_insert(clause.privileges);
                    }
                    WhoMatch::Yes => {
                        out.other = clause.privileges;
                        break;
                    }
                }
            }
            out
        })
        .collect()
}

/// One operation's requester, decided against the rules once (see the module
/// documentation). It owns what it holds, so a prepared search can carry it to another
/// thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requester {
    inner: Inner,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Inner {
    /// The admin: every privilege.
    Admin,
    Rules {
        view: ViewRef,
        /// The requester's DN, when some outcome has a self part.
        self_dn: Option<NormDn>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ViewRef {
    /// One of [`AccessRules::classes`].
    Class(usize),
    Own(Box<View>),
}

impl AccessRules {
    /// Decides what `identity`, connected as `client`, gets from each rule; group
    /// membership is read from `version`.
    pub fn requester(&self, identity: &Identity, client: &Client, version: &Version) -> Requester {
        if identity.is_admin() {
            return Requester { inner: Inner::Admin };
        }
        let view = match &self.classes {
            Some(_) => ViewRef::Class(usize::from(identity.is_authenticated())),
            None => {
                let mut known: Vec<Option<bool>> = vec![None; self.groups.len()];
                let mut member = |g: usize| -> bool {
                    if let Some(Some(m)) = known.get(g) {
                        return *m;
                    }
                    let m = match (self.groups.get(g), identity.norm_dn()) {
                        (Some(group), Some(_)) => {
                            is_member(version, group, identity.dn(), &self.member_types)
                        }
                        _ => false,
                    };
                    if let Some(slot) = known.get_mut(g) {
                        *slot = Some(m);
                    }
                    m
                };
                let o = outcomes(&self.rules, identity, client, &mut member);
                ViewRef::Own(Box::new(View::new(&self.rules, o, self.type_count)))
            }
        };
        let mut r = Requester {
            inner: Inner::Rules { view, self_dn: None },
        };
        if self.view(&r).is_some_and(|v| v.has_self) {
            if let Inner::Rules { self_dn, .. } = &mut r.inner {
                *self_dn = identity.norm_dn().cloned();
            }
        }
        r
    }

    /// The requester's view of the rules; `None` for the admin.
    pub(crate) fn view<'a>(&'a self, r: &'a Requester) -> Option<&'a View> {
        match &r.inner {
            Inner::Admin => None,
            Inner::Rules {
                view: ViewRef::Own(v),
                ..
            } => Some(v),
            Inner::Rules {
                view: ViewRef::Class(c),
                ..
            } => self.classes.as_ref().and_then(|c2| c2.get(*c)),
        }
    }

    /// The rules, in order.
    pub(crate) fn rules(&self) -> &[Rule] {
        &self.rules
    }
}

impl Requester {
    /// The admin's requester (every privilege).
    pub fn admin() -> Requester {
        Requester { inner: Inner::Admin }
    }

    /// True for the admin.
    pub fn is_admin(&self) -> bool {
        matches!(self.inner, Inner::Admin)
    }

    /// The requester's DN, when a `self` clause may need it.
    pub(crate) fn self_dn(&self) -> Option<&NormDn> {
        match &self.inner {
            Inner::Rules { self_dn, .. } => self_dn.as_ref(),
            Inner::Admin => None,
        }
    }

    /// The decision on `what` for `need` when it is the same for every entry: `Some(true)`
    /// granted, `Some(false)` denied, `None` when it depends on the entry (or no mask is
    /// kept for `need`: only read and search have one).
    pub fn uniform(&self, rules: &AccessRules, what: What, need: Privileges) -> Option<bool> {
        let Some(view) = rules.view(self) else {
            return Some(true);
        };
        match view.mask(need)?.decide(what) {
            Decision::Allow => Some(true),
            Decision::Deny => Some(false),
            Decision::Depends => None,
        }
    }

    /// True when some attribute type's `need` decision depends on the entry.
    pub fn any_attribute_depends(&self, rules: &AccessRules, need: Privileges) -> bool {
        rules
            .view(self)
            .and_then(|v| v.mask(need))
            .is_some_and(|m| !m.dependent.is_empty())
    }
}
