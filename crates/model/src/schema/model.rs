//! The resolved schema: attribute types and object classes with every reference bound.
//!
//! Attribute types and object classes live in two vectors and refer to each other by
//! index ([`AttributeTypeId`], [`ObjectClassId`]), so a schema is one owned value with no
//! self-references; an ID is also the compact, interned form the store keeps for an
//! attribute description. IDs are only meaningful for the schema that issued them.

use super::description::{
    AttributeTypeDescription, AttributeUsage, Element, LdapSyntaxDescription, ObjectClassDescription,
    ObjectClassKind,
};
use super::error::Location;
use super::limits::MAX_NAME_BYTES;
use super::names::NameMap;
use crate::matching::MatchingRule;
use crate::syntax::Syntax;

/// Index of an attribute type in its [`Schema`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AttributeTypeId(pub(crate) u32);

impl AttributeTypeId {
    /// The index as a `usize` (IDs are dense, from 0, in load order).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Index of an object class in its [`Schema`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectClassId(pub(crate) u32);

impl ObjectClassId {
    /// The index as a `usize` (IDs are dense, from 0, in load order).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// An attribute type with its effective syntax and matching rules.
#[derive(Debug, Clone)]
pub struct AttributeType {
    /// This type's ID in its schema.
    pub id: AttributeTypeId,
    /// Numeric OID.
    pub oid: String,
    /// Names in order; the first is the primary name. May be empty.
    pub names: Vec<String>,
    /// The direct supertype (`SUP`).
    pub sup: Option<AttributeTypeId>,
    /// Effective equality rule: the type's own, or inherited along `SUP`.
    pub equality: Option<&'static MatchingRule>,
    /// Effective ordering rule: the type's own, or inherited along `SUP`.
    pub ordering: Option<&'static MatchingRule>,
    /// Effective substrings rule: the type's own, or inherited along `SUP`.
    pub substring: Option<&'static MatchingRule>,
    /// Effective syntax implementation. For a syntax a schema file maps with `X-SUBST`,
    /// the implementation substituted; `syntax_oid` keeps the declared OID.
    pub syntax: &'static Syntax,
    /// Effective syntax OID as declared (own or inherited).
    pub syntax_oid: String,
    /// Effective `{len}` bound (advisory), own or inherited with the syntax.
    pub syntax_len: Option<u32>,
    /// `SINGLE-VALUE` (not inherited).
    pub single_value: bool,
    /// `NO-USER-MODIFICATION`.
    pub no_user_modification: bool,
    /// `OBSOLETE`.
    pub obsolete: bool,
    /// `COLLECTIVE`, own or inherited (subtypes of collective types are collective).
    pub collective: bool,
    /// `USAGE` (equal to the supertype's).
    pub usage: AttributeUsage,
    pub(crate) description: AttributeTypeDescription,
    pub(crate) location: Location,
}

impl AttributeType {
    /// The first name, or the OID when the type has no name.
    pub fn name(&self) -> &str {
        self.names.first().map_or(self.oid.as_str(), String::as_str)
    }

    /// Whether the type is operational (any USAGE but `userApplications`).
    pub fn is_operational(&self) -> bool {
        self.usage.is_operational()
    }

    /// Whether `name` (case-insensitive) is one of this type's names or its OID.
    pub fn has_name(&self, name: &str) -> bool {
        self.oid == name || self.names.iter().any(|n| n.eq_ignore_ascii_case(name))
    }

    /// The description as written in its schema file (macros expanded), as published in
    /// `cn=Subschema`.
    pub fn description(&self) -> &AttributeTypeDescription {
        &self.description
    }

    /// Where the type is defined.
    pub fn location(&self) -> &Location {
        &self.location
    }
}

/// An object class with its superclasses and complete attribute sets resolved.
#[derive(Debug, Clone)]
pub struct ObjectClass {
    /// This class's ID in its schema.
    pub id: ObjectClassId,
    /// Numeric OID.
    pub oid: String,
    /// Names in order; the first is the primary name. May be empty.
    pub names: Vec<String>,
    /// `ABSTRACT`, `STRUCTURAL` or `AUXILIARY`.
    pub kind: ObjectClassKind,
    /// `OBSOLETE`.
    pub obsolete: bool,
    /// Direct superclasses (`SUP`).
    pub sup: Vec<ObjectClassId>,
    /// Attribute types this class requires directly (`MUST`), in the order written.
    pub must: Vec<AttributeTypeId>,
    /// Attribute types this class allows directly (`MAY`), in the order written.
    pub may: Vec<AttributeTypeId>,
    pub(crate) all_must: Vec<AttributeTypeId>,
    pub(crate) all_may: Vec<AttributeTypeId>,
    pub(crate) superclasses: Vec<ObjectClassId>,
    pub(crate) description: ObjectClassDescription,
    pub(crate) location: Location,
}

impl ObjectClass {
    /// The first name, or the OID when the class has no name.
    pub fn name(&self) -> &str {
        self.names.first().map_or(self.oid.as_str(), String::as_str)
    }

    /// Whether `name` (case-insensitive) is one of this class's names or its OID.
    pub fn has_name(&self, name: &str) -> bool {
        self.oid == name || self.names.iter().any(|n| n.eq_ignore_ascii_case(name))
    }

    /// Every attribute type required by this class or any superclass, sorted by ID,
    /// without duplicates.
    pub fn all_must(&self) -> &[AttributeTypeId] {
        &self.all_must
    }

    /// Every attribute type allowed by this class or any superclass and not required
    /// (a type both required and allowed along the chain is required), sorted by ID.
    pub fn all_may(&self) -> &[AttributeTypeId] {
        &self.all_may
    }

    /// Whether an entry of this class must hold the attribute type.
    pub fn requires(&self, attribute: AttributeTypeId) -> bool {
        self.all_must.binary_search(&attribute).is_ok()
    }

    /// Whether an entry of this class may hold the attribute type (required or allowed).
    pub fn allows(&self, attribute: AttributeTypeId) -> bool {
        self.requires(attribute) || self.all_may.binary_search(&attribute).is_ok()
    }

    /// Every superclass, direct or not, sorted by ID (the class itself excluded).
    pub fn superclasses(&self) -> &[ObjectClassId] {
        &self.superclasses
    }

    /// Whether this class is `other` or inherits from it.
    pub fn is_subclass_of(&self, other: ObjectClassId) -> bool {
        self.id == other || self.superclasses.binary_search(&other).is_ok()
    }

    /// The description as written in its schema file (macros expanded), as published in
    /// `cn=Subschema`.
    pub fn description(&self) -> &ObjectClassDescription {
        &self.description
    }

    /// Where the class is defined.
    pub fn location(&self) -> &Location {
        &self.location
    }
}

/// An `ldapsyntax` a schema file describes, with the implementation it resolves to.
#[derive(Debug, Clone)]
pub struct DescribedSyntax {
    /// The description as written.
    pub description: LdapSyntaxDescription,
    /// The implementation: Larch's own for the OID, or the `X-SUBST` one.
    pub implementation: &'static Syntax,
    /// Where it is defined.
    pub location: Location,
}

/// A loaded, resolved schema. Built by [`Schema::builtin`], [`Schema::load`] and their
/// variants (see the `load` module); read-only afterwards.
#[derive(Debug, Clone)]
pub struct Schema {
    pub(crate) attribute_types: Vec<AttributeType>,
    pub(crate) object_classes: Vec<ObjectClass>,
    /// Lower-case names and OIDs of attribute types.
    pub(crate) attribute_index: NameMap<AttributeTypeId>,
    /// Lower-case names and OIDs of object classes.
    pub(crate) class_index: NameMap<ObjectClassId>,
    /// Syntaxes described by schema files, in load order.
    pub(crate) syntaxes: Vec<DescribedSyntax>,
    /// DIT content rules, DIT structure rules and name forms, kept as written.
    pub(crate) other_elements: Vec<(Element, Location)>,
    /// Per attribute type (by ID): its direct subtypes (the types naming it as `SUP`), in
    /// ID order; computed at load so that [`Schema::family`] walks only the types it
    /// returns (filters and the planner ask for a family on every search).
    pub(crate) direct_subtypes: Vec<Box<[AttributeTypeId]>>,
}

/// Folds ASCII letters of `name` to lower case into `buf` without allocating; `None` for
/// a name that cannot be a schema name or OID (too long).
fn fold<'b>(name: &str, buf: &'b mut [u8; MAX_NAME_BYTES]) -> Option<&'b str> {
    let bytes = name.as_bytes();
    let out = buf.get_mut(..bytes.len())?;
    for (o, b) in out.iter_mut().zip(bytes) {
        *o = b.to_ascii_lowercase();
    }
    std::str::from_utf8(out).ok()
}

impl Schema {
    /// The attribute type with this name (any of its names, case-insensitive) or numeric
    /// OID. Options (`cn;lang-en`) are the caller's to strip.
    pub fn attribute_type(&self, name_or_oid: &str) -> Option<&AttributeType> {
        let mut buf = [0u8; MAX_NAME_BYTES];
        let key = fold(name_or_oid, &mut buf)?;
        let id = self.attribute_index.get(key)?;
        self.attribute_types.get(id.index())
    }

    /// The object class with this name (case-insensitive) or numeric OID.
    pub fn object_class(&self, name_or_oid: &str) -> Option<&ObjectClass> {
        let mut buf = [0u8; MAX_NAME_BYTES];
        let key = fold(name_or_oid, &mut buf)?;
        let id = self.class_index.get(key)?;
        self.object_classes.get(id.index())
    }

    /// The attribute type with this ID (`None` for an ID of another schema that is out
    /// of range).
    pub fn attribute_type_by_id(&self, id: AttributeTypeId) -> Option<&AttributeType> {
        self.attribute_types.get(id.index())
    }

    /// The object class with this ID.
    pub fn object_class_by_id(&self, id: ObjectClassId) -> Option<&ObjectClass> {
        self.object_classes.get(id.index())
    }

    /// Every attribute type, in load order (ID order).
    pub fn attribute_types(&self) -> impl Iterator<Item = &AttributeType> {
        self.attribute_types.iter()
    }

    /// Every object class, in load order (ID order).
    pub fn object_classes(&self) -> impl Iterator<Item = &ObjectClass> {
        self.object_classes.iter()
    }

    /// `id` followed by every subtype of it, direct or not: the types a filter or an index
    /// lookup on `id` covers (RFC 4512 section 2.5.1). Empty for an unknown ID. The work is
    /// proportional to the family's size (an explicit stack, no recursion: SUP chains may
    /// be long).
    pub fn family(&self, id: AttributeTypeId) -> Vec<AttributeTypeId> {
        if self.attribute_types.get(id.index()).is_none() {
            return Vec::new();
        }
        let mut family = vec![id];
        let mut next = 0;
        // The SUP relation was checked acyclic at load, so each type is reached once.
        while let Some(&t) = family.get(next) {
            next += 1;
            if let Some(subs) = self.direct_subtypes.get(t.index()) {
                family.extend_from_slice(subs);
            }
        }
        family
    }

    /// Whether `sub` is `sup` or a subtype of it along `SUP` (RFC 4512 section 2.5.1:
    /// a filter on `name` also matches `cn` values).
    pub fn is_subtype(&self, sub: AttributeTypeId, sup: AttributeTypeId) -> bool {
        let mut current = Some(sub);
        // The SUP chains were checked acyclic at load; the bound is a second guard.
        for _ in 0..=self.attribute_types.len() {
            match current {
                Some(id) if id == sup => return true,
                Some(id) => current = self.attribute_types.get(id.index()).and_then(|t| t.sup),
                None => return false,
            }
        }
        false
    }

    /// Syntaxes described by schema files (`ldapsyntax`), in load order.
    pub fn described_syntaxes(&self) -> &[DescribedSyntax] {
        &self.syntaxes
    }

    /// DIT content rules, DIT structure rules and name forms of the schema files, as
    /// written (parsed and published, not enforced), with their places.
    pub fn other_elements(&self) -> impl Iterator<Item = (&Element, &Location)> {
        self.other_elements.iter().map(|(e, l)| (e, l))
    }
}
