//! Access control: who may do what to which entries and attributes, with OpenLDAP's
//! `access to <what> by <who> <access>` semantics (`slapd.access(5)`).
//!
//! The rules come from `[[access]]` in `larch.toml` (read by [`written`] for the
//! configuration), or, when there are none, from the built-in default policy
//! ([`default_policy`]). They are compiled once at load ([`AccessRules::compile`]): DNs
//! normalized, attribute names resolved to types (subtypes included), filters compiled;
//! every error names the rule's index and key.
//!
//! How a check is decided (`acl::entry`), for a requester, an entry and a *what* (an
//! attribute type, or the pseudo-attributes `entry` and `children`):
//! 1. the configured admin has every privilege, whatever the rules say (OpenLDAP's
//!    rootdn);
//! 2. the rules are looked at in order; the first whose `attrs` covers the what, whose `dn`
//!    and `scope` hold the entry and whose `filter` matches it decides;
//! 3. within that rule the first `by` clause whose conditions all hold for the requester
//!    decides: its privileges must include the ones needed; no clause holding means no
//!    access (the implicit `by * none`);
//! 4. no rule deciding means no access.
//!
//! Cost (`acl::eval`): everything that depends only on the requester (the clause each
//! rule picks for it, group membership, peer address) is decided once per operation in a
//! [`Requester`]. Rule sets whose clauses name no DN, group or peer (the default policy)
//! are decided at load for the two classes anonymous and authenticated, so an operation
//! only picks one. For reading and searching, each requester also has attribute masks
//! (which types are granted, denied, or depend on the entry), so a search of the default
//! policy looks at a bit per attribute and allocates nothing per entry. Per entry only what
//! depends on it is done: a DN suffix test, a rule's filter, the `self` comparison.
//!
//! Modules: `rule` (the model: privileges, scopes, who, rules), `written` (the rules as
//! written, read from TOML), `compile`, `eval` (requesters and masks), `entry` (per-entry
//! checks and DN tests), `group` (bounded membership), `default` (the default policy),
//! `proxy` (RFC 4370), `ops` (the checks each operation makes, with their refusals).

mod compile;
mod default;
pub mod entry;
mod eval;
mod group;
pub mod ops;
pub mod proxy;
pub mod rule;
pub mod written;

use larch_model::dn::NormDn;
use larch_model::schema::AttributeTypeId;

pub use default::{default_policy, DEFAULT_POLICY};
pub use entry::{EntryAccess, Target};
pub use eval::Requester;
pub use group::{MAX_ACCESS_GROUPS, MAX_MEMBER_VALUES};
pub use rule::{Privileges, Scope, What};

use crate::client::Client;
use crate::identity::Identity;
use eval::View;
use rule::{Rule, Who};

/// A compiled rule set: what the server enforces.
#[derive(Debug, Clone)]
pub struct AccessRules {
    /// The rules, in order.
    rules: Vec<Rule>,
    /// Who may use the proxied authorization control (besides the admin).
    proxy: Vec<Who>,
    /// The group DNs the clauses name (a clause holds an index into this list).
    groups: Vec<NormDn>,
    /// The outcomes and masks of the anonymous (0) and authenticated (1) classes, when no
    /// clause needs more than the class to be decided.
    classes: Option<Box<[View; 2]>>,
    /// Attribute types in the schema (the size of type sets).
    type_count: usize,
    /// `member` and `uniqueMember`, where the schema has them.
    member_types: Vec<AttributeTypeId>,
    /// True when the rules are the built-in default policy.
    is_default: bool,
}

impl AccessRules {
    /// True when the rules are the built-in default policy (the configuration has none).
    pub fn is_default_policy(&self) -> bool {
        self.is_default
    }

    /// The number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// True when there are no rules (nobody but the admin has any access).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether `identity`, connected as `client`, may use the proxied authorization
    /// control (RFC 4370) or name another authorization identity (a SASL authzid): the
    /// admin always may; others when a clause of `access_proxy.allow` holds for them.
    pub fn may_proxy(&self, identity: &Identity, client: &Client) -> bool {
        identity.is_admin()
            || self
                .proxy
                .iter()
                .any(|w| eval::who_matches(w, identity, client, &mut |_| false) == eval::WhoMatch::Yes)
    }
}
