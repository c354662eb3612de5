//! Which attributes are indexed, and how.

use std::collections::BTreeMap;

use larch_model::schema::{AttributeTypeId, Schema};

/// The kinds of index kept for one attribute type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct IndexKinds {
    /// Equality: `(attr=value)` through the type's equality rule.
    pub equality: bool,
    /// Presence: `(attr=*)`.
    pub presence: bool,
    /// Substrings: `(attr=ab*cd*ef)` through the type's substrings rule.
    pub substring: bool,
    /// Ordering: `(attr>=v)`, `(attr<=v)` and server-side sorting through the type's
    /// ordering rule.
    pub ordering: bool,
}

impl IndexKinds {
    /// Equality only.
    pub const EQUALITY: IndexKinds = IndexKinds {
        equality: true,
        presence: false,
        substring: false,
        ordering: false,
    };

    /// True when no kind is set.
    pub fn is_empty(&self) -> bool {
        !(self.equality || self.presence || self.substring || self.ordering)
    }
}

/// The index configuration: attribute names (or OIDs) and their kinds. Changing it takes
/// effect at the next start: indexes are never stored, they are built while a snapshot
/// loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexConfig {
    /// Attribute name or OID -> kinds.
    pub attributes: BTreeMap<String, IndexKinds>,
}

impl Default for IndexConfig {
    /// Equality on objectClass, cn, sn, mail, uid, member and uniqueMember (what OpenLDAP's
    /// and 389-ds's default configurations index), and on memberOf and transitiveMemberOf
    /// (group membership filters, the in-chain rule); presence on objectClass.
    fn default() -> Self {
        let mut attributes = BTreeMap::new();
        for name in [
            "cn",
            "sn",
            "mail",
            "uid",
            "member",
            "uniqueMember",
            "memberOf",
            "transitiveMemberOf",
        ] {
            attributes.insert(name.to_string(), IndexKinds::EQUALITY);
        }
        attributes.insert(
            "objectClass".to_string(),
            IndexKinds {
                presence: true,
                ..IndexKinds::EQUALITY
            },
        );
        IndexConfig { attributes }
    }
}

/// Why an index configuration cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexConfigError {
    /// The attribute is not in the schema.
    #[error("index on `{0}`: no such attribute type in the schema")]
    UnknownAttribute(String),
    /// The kind needs a matching rule the type does not have.
    #[error("{kind} index on `{attribute}`: the attribute type has no {kind} matching rule")]
    NoRule {
        /// The attribute.
        attribute: String,
        /// `equality`, `substring` or `ordering`.
        kind: &'static str,
    },
}

/// The configuration resolved against the schema: one slot per indexed type.
#[derive(Debug, Clone)]
pub struct ResolvedIndexes {
    /// (type, kinds), sorted by type.
    pub(crate) list: Vec<(AttributeTypeId, IndexKinds)>,
}

impl ResolvedIndexes {
    /// Resolves names and checks that each kind has the matching rule it needs.
    pub fn resolve(config: &IndexConfig, schema: &Schema) -> Result<ResolvedIndexes, IndexConfigError> {
        let mut list: Vec<(AttributeTypeId, IndexKinds)> = Vec::new();
        for (name, kinds) in &config.attributes {
            if kinds.is_empty() {
                continue;
            }
            let t = schema
                .attribute_type(name)
                .ok_or_else(|| IndexConfigError::UnknownAttribute(name.clone()))?;
            let missing = |kind| IndexConfigError::NoRule {
                attribute: name.clone(),
                kind,
            };
            if kinds.equality && t.equality.is_none() {
                return Err(missing("equality"));
            }
            if kinds.substring && t.substring.is_none() {
                return Err(missing("substring"));
            }
            if kinds.ordering && t.ordering.is_none() {
                return Err(missing("ordering"));
            }
            match list.iter_mut().find(|(ty, _)| *ty == t.id) {
                // The same type under two names: the union of the kinds.
                Some((_, k)) => {
                    k.equality |= kinds.equality;
                    k.presence |= kinds.presence;
                    k.substring |= kinds.substring;
                    k.ordering |= kinds.ordering;
                }
                None => list.push((t.id, *kinds)),
            }
        }
        list.sort_by_key(|(ty, _)| *ty);
        Ok(ResolvedIndexes { list })
    }

    /// The slot of a type, if it is indexed.
    pub fn slot(&self, ty: AttributeTypeId) -> Option<usize> {
        self.list.binary_search_by_key(&ty, |(t, _)| *t).ok()
    }

    /// The kinds kept for a type (empty when it is not indexed).
    pub fn kinds(&self, ty: AttributeTypeId) -> IndexKinds {
        self.slot(ty).map(|i| self.list[i].1).unwrap_or_default()
    }

    /// Every indexed type with its kinds.
    pub fn iter(&self) -> impl Iterator<Item = (AttributeTypeId, IndexKinds)> + '_ {
        self.list.iter().copied()
    }
}
