//! Entries of one object class: whether an entry is a referral (RFC 3296 `referral`) or an
//! alias (RFC 4512 `alias`), asked for every candidate of a search and for the target of an
//! update or a compare (the referral check, [`super::referral`]). The directory works out
//! the two classes' index keys once, when it opens ([`IndexedClass`]).
//!
//! An entry belongs to the class when one of its `objectClass` values names the class (by
//! any of its names or its OID, case-insensitively, surrounding spaces ignored, as the
//! entry check reads class names).
//!
//! How membership is answered, cheapest first:
//! 1. when `objectClass` has an equality index (the default configuration), the members
//!    are read once per search from the index (one probe per spelling of the class), so
//!    the common case, no referral and no alias in the directory, costs nothing per entry;
//! 2. otherwise each entry asked about has its `objectClass` values read (a few schema
//!    lookups).
//!
//! The index keeps every value the entry check accepts except class names with surrounding
//! spaces (see the planner's documentation); such entries are found by step 2 only.

use larch_model::entry::StoredRef;
use larch_model::schema::{AttributeTypeId, ObjectClassId, Schema};
use larch_store::idset::IdSet;
use larch_store::index::AttrIndex;
use larch_store::{EntryId, Version};

/// The name of the RFC 3296 class of referral entries.
pub const REFERRAL_CLASS: &str = "referral";
/// The name of the RFC 4512 class of alias entries.
pub const ALIAS_CLASS: &str = "alias";

/// Tests entries for one object class.
#[derive(Debug, Clone, Copy)]
pub struct ClassTest {
    object_class: AttributeTypeId,
    class: ObjectClassId,
}

impl ClassTest {
    /// The test for the class `name` of `schema`; `None` when the schema lacks the class or
    /// `objectClass` (then no entry can belong to it).
    pub fn new(schema: &Schema, name: &str) -> Option<ClassTest> {
        Some(ClassTest {
            object_class: schema.attribute_type("objectClass")?.id,
            class: schema.object_class(name)?.id,
        })
    }

    /// Whether the entry's `objectClass` values name the class.
    pub fn holds(&self, entry: StoredRef<'_>, schema: &Schema) -> bool {
        entry.attribute(self.object_class).any(|a| {
            a.values.iter().any(|v| {
                std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| schema.object_class(s.trim()))
                    .is_some_and(|c| c.id == self.class)
            })
        })
    }
}

/// A class test with the `objectClass` index keys of the class's spellings (its OID and
/// names) worked out once: they depend only on the schema and the store's index keyer,
/// which never change while the server runs. Asking a version for the members is then a
/// few index probes, not a schema lookup and a key normalization per spelling (about 2,300
/// instructions per search under callgrind before).
#[derive(Debug, Clone)]
pub struct IndexedClass {
    test: ClassTest,
    /// The index keys; `None` when `objectClass` has no equality rule.
    keys: Option<Vec<u64>>,
}

impl IndexedClass {
    /// The class `name` for the store `version` belongs to; `None` when the schema lacks
    /// the class or `objectClass`.
    pub fn named(version: &Version, name: &str) -> Option<IndexedClass> {
        Some(IndexedClass::new(
            version,
            ClassTest::new(version.schema(), name)?,
        ))
    }

    fn new(version: &Version, test: ClassTest) -> IndexedClass {
        let schema = version.schema();
        let keys = (|| {
            let rule = schema.attribute_type_by_id(test.object_class)?.equality?;
            let class = schema.object_class_by_id(test.class)?;
            let spellings = std::iter::once(class.oid.as_str()).chain(class.names.iter().map(String::as_str));
            Some(
                spellings
                    .filter_map(|s| AttrIndex::equality_key(rule, s.as_bytes(), version.keyer()))
                    .collect(),
            )
        })();
        IndexedClass { test, keys }
    }

    /// The members in `version` from the `objectClass` equality index; `None` when
    /// `objectClass` has no equality index.
    pub fn members(&self, version: &Version) -> Option<IdSet> {
        let index = version.index(self.test.object_class)?;
        let mut acc = IdSet::new();
        for &key in self.keys.as_ref()? {
            let set = index.equality_keyed(key)?;
            if !set.is_empty() {
                acc = if acc.is_empty() { set } else { acc.union(&set) };
            }
        }
        Some(acc)
    }
}

/// Membership of one class for one search: the index's answer when there is one, else a
/// look at each entry asked about.
#[derive(Debug, Clone)]
pub struct ClassSet {
    test: ClassTest,
    members: Option<IdSet>,
}

impl ClassSet {
    /// The members of `class` in `version`; `None` when the schema lacks the class.
    pub fn new(version: &Version, class: Option<&IndexedClass>) -> Option<ClassSet> {
        let class = class?;
        Some(ClassSet {
            test: class.test,
            members: class.members(version),
        })
    }

    /// True when it is known that no entry belongs to the class.
    pub fn is_known_empty(&self) -> bool {
        self.members.as_ref().is_some_and(IdSet::is_empty)
    }

    /// The members, when the index gave them.
    pub fn members(&self) -> Option<&IdSet> {
        self.members.as_ref()
    }

    /// Whether entry `id` of `version` belongs to the class.
    pub fn contains(&self, version: &Version, id: EntryId) -> bool {
        match &self.members {
            Some(set) => set.contains(id),
            None => version
                .entry(id)
                .is_some_and(|e| self.test.holds(e.attrs(), version.schema())),
        }
    }

    /// The test itself.
    pub fn test(&self) -> &ClassTest {
        &self.test
    }
}

/// Whether `id` or one of its ancestors up to (and including) `stop` belongs to `class`;
/// returns the nearest such entry. `stop` 0 walks up to the naming context.
pub fn nearest_in_class(version: &Version, class: &ClassSet, id: EntryId, stop: EntryId) -> Option<EntryId> {
    if class.is_known_empty() {
        return None;
    }
    let mut cur = id;
    for _ in 0..=larch_store::version::MAX_DN_DEPTH {
        if cur == 0 {
            return None;
        }
        if class.contains(version, cur) {
            return Some(cur);
        }
        if cur == stop {
            return None;
        }
        cur = version.entry(cur)?.parent();
    }
    None
}
