//! Attribute uniqueness as the write hook and the import see it: which subtrees a name
//! belongs to, and which other entry of a subtree already holds a value.
//!
//! - A *rule* is a set of unique attributes with its scopes (`[uniqueness]`'s default
//!   rule and each `[[uniqueness.rule]]`); rules are checked one by one.
//! - A *scope* is a subtree inside which no two entries may share a value of a unique
//!   attribute: each configured subtree, or, with none configured, each naming context.
//!   Scopes are checked one by one (389 DS's `uniqueness-subtrees`): the same value in two
//!   scopes is allowed.
//! - Two values are the same when the attribute's equality rule says so (`uid` is
//!   `caseIgnoreMatch`: `Alice` and `alice` clash). Values of an attribute with options
//!   (`uid;lang-de`) count as values of the attribute.
//! - *Who holds a value* is found through the attribute's equality index (`uid` and `mail`
//!   are indexed by default), whose candidates are checked value by value since the index
//!   files hashes; without an index, by reading every entry.

pub mod duplicates;

use larch_model::dn::NormDn;
use larch_model::entry::StoredRef;
use larch_model::matching::MatchingRule;
use larch_model::schema::AttributeTypeId;
use larch_store::{EntryId, Version};

/// An attribute whose values must be unique, resolved in a schema.
#[derive(Debug, Clone, Copy)]
pub struct UniqueAttribute {
    /// The attribute type.
    pub ty: AttributeTypeId,
    /// Its equality rule, which decides when two values are the same.
    pub rule: &'static MatchingRule,
}

impl UniqueAttribute {
    /// The key `value` compares by; `None` when the value is not valid under the rule
    /// (then it equals nothing).
    pub fn key(&self, value: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(value.len());
        self.rule.normalize(value, &mut out).ok().map(|()| out)
    }

    /// Every value `attrs` holds of the attribute, with options or without.
    pub fn values<'a>(&self, attrs: StoredRef<'a>) -> impl Iterator<Item = &'a [u8]> + 'a {
        attrs.attribute(self.ty).flat_map(|a| a.values.iter())
    }

    /// Whether `attrs` holds a value whose key is `key`.
    pub fn holds_key(&self, attrs: StoredRef<'_>, key: &[u8]) -> bool {
        self.values(attrs).any(|v| self.key(v).as_deref() == Some(key))
    }
}

/// Attributes unique within scopes: one rule of `[uniqueness]`, resolved in a schema.
#[derive(Debug, Clone)]
pub struct UniqueRule {
    /// The attributes (at least one).
    pub attributes: Vec<UniqueAttribute>,
    /// Where their values must be unique.
    pub scopes: Scopes,
}

/// Where values must be unique.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scopes {
    /// Each naming context on its own.
    NamingContexts,
    /// Each of these subtrees on its own.
    Subtrees(Vec<NormDn>),
}

impl Scopes {
    /// The scopes a name `dn` lies in, as the entries of `version` that root them. A scope
    /// whose root is not in `version` holds no entry yet and is left out.
    pub fn of(&self, version: &Version, dn: &NormDn) -> Vec<(EntryId, NormDn)> {
        let roots: Vec<(EntryId, NormDn)> = match self {
            Scopes::NamingContexts => version
                .naming_contexts()
                .iter()
                .map(|id| (id, version.norm_dn(id)))
                .collect(),
            Scopes::Subtrees(subtrees) => subtrees
                .iter()
                .filter_map(|s| Some((version.find(s)?, s.clone())))
                .collect(),
        };
        roots.into_iter().filter(|(_, root)| dn.is_within(root)).collect()
    }
}

/// The first entry of `version` within the subtree of `scope`, other than those `skip`
/// accepts, that holds a value of `attr` whose key is `key` (the key of `value`).
pub fn holder(
    version: &Version,
    attr: &UniqueAttribute,
    value: &[u8],
    key: &[u8],
    scope: EntryId,
    skip: &dyn Fn(EntryId) -> bool,
) -> Option<EntryId> {
    let indexed = version
        .index(attr.ty)
        .and_then(|index| index.equality(attr.rule, value, version.keyer()));
    let holds = |id: EntryId| {
        !skip(id)
            && version.is_within(id, scope)
            && version.entry(id).is_some_and(|e| attr.holds_key(e.attrs(), key))
    };
    match indexed {
        Some(candidates) => candidates.iter().find(|id| holds(*id)),
        None => version.subtree(scope).find(|id| holds(*id)),
    }
}
