//! Resolution: from the elements of every file, in load order, to a [`Schema`].
//!
//! 1. Register. Each element is filed under its OID and its names (lower case; attribute
//!    types and object classes have separate name spaces, OIDs are checked across both).
//!    A second definition of the same OID that says the same thing (same names, SUP,
//!    rules, syntax, flags, MUST/MAY sets; DESC, `{len}` and `X-` extensions aside) is
//!    skipped, so a file loaded twice, or OpenLDAP's copy of a standard schema, is
//!    harmless; a different one, or a name already taken, is a conflict naming both
//!    places.
//! 2. Syntaxes described by files are bound to an implementation: Larch's own for the
//!    OID, else the one named by `X-SUBST`. Matching rule descriptions must name a rule
//!    Larch implements. Matching rule uses are ignored (the server computes them).
//! 3. Attribute types are resolved supertype first, by an iterative depth-first walk
//!    along SUP (an explicit stack, no recursion on input; a SUP chain that comes back to
//!    itself is a cycle error): effective syntax, `{len}` and matching rules are the
//!    type's own or its supertype's; USAGE must equal the supertype's; COLLECTIVE is
//!    inherited and requires userApplications; NO-USER-MODIFICATION requires an
//!    operational USAGE. Every rule and syntax must be implemented, and each rule must
//!    be of the kind its keyword needs.
//! 4. Object classes are resolved superclasses first, the same way over the SUP graph:
//!    the complete MUST and MAY sets and the superclass set are unions along the graph;
//!    an abstract class inherits only from abstract ones, an auxiliary one not from a
//!    structural one, a structural one not from an auxiliary one (RFC 4512 section 4.1.1).
//! 5. A MAY attribute type the class also requires (its own MUST or a superclass's) is
//!    dropped from its MAY list and from the description it publishes: MUST wins, and no
//!    type is both MUST and MAY of one class in `cn=Subschema` (RFC 2307's `ipProtocol`
//!    and `oncRpc` say `MUST ( ... $ description ) MAY description`, RFC 4519's
//!    `residentialPerson` has `l` in both).
//!
//! Errors carry the place of the element they concern.

use std::collections::HashMap;

use super::description::{
    AttributeTypeDescription, AttributeUsage, Element, ElementKind, LdapSyntaxDescription,
    ObjectClassDescription, ObjectClassKind,
};
use super::error::{Location, ResolveErrorKind, SchemaError};
use super::file::Definition;
use super::limits::MAX_RESOLVED_CLASS_ENTRIES;
use super::model::{AttributeType, AttributeTypeId, DescribedSyntax, ObjectClass, ObjectClassId, Schema};
use super::names::NameMap;
use crate::matching::{self, MatchingRule, RuleUsage};
use crate::syntax::{self, Syntax};

/// Builds a schema from every element of a load, in load order.
pub(crate) fn resolve(definitions: Vec<Definition>) -> Result<Schema, SchemaError> {
    let mut registry = Registry::default();
    for Definition { element, location } in definitions {
        registry.register(element, location)?;
    }
    let syntaxes = bind_syntaxes(&registry.syntaxes)?;
    let attribute_types = resolve_attribute_types(&registry, &syntaxes)?;
    let attribute_index = index(attribute_types.iter().map(|t| (t.id, &t.oid, &t.names)));
    let object_classes = resolve_object_classes(&registry, &attribute_index)?;
    let class_index = index(object_classes.iter().map(|c| (c.id, &c.oid, &c.names)));
    let mut schema = Schema {
        attribute_types,
        object_classes,
        attribute_index,
        class_index,
        syntaxes,
        other_elements: registry.others,
        direct_subtypes: Vec::new(),
    };
    schema.direct_subtypes = direct_subtypes(&schema.attribute_types);
    Ok(schema)
}

/// Each attribute type's direct subtypes, for [`Schema::family`]: one pass over the types.
fn direct_subtypes(types: &[AttributeType]) -> Vec<Box<[AttributeTypeId]>> {
    let mut subs: Vec<Vec<AttributeTypeId>> = vec![Vec::new(); types.len()];
    for t in types {
        if let Some(list) = t.sup.and_then(|sup| subs.get_mut(sup.index())) {
            list.push(t.id);
        }
    }
    subs.into_iter().map(Vec::into_boxed_slice).collect()
}

/// Lower-case name and OID index.
fn index<'a, I: Copy>(items: impl Iterator<Item = (I, &'a String, &'a Vec<String>)>) -> NameMap<I> {
    let mut map = NameMap::default();
    for (id, oid, names) in items {
        map.insert(Box::from(oid.as_str()), id);
        for name in names {
            map.insert(Box::from(name.to_ascii_lowercase().as_str()), id);
        }
    }
    map
}

/// The elements of a load, deduplicated, with their places.
#[derive(Default)]
struct Registry {
    attribute_types: Vec<(AttributeTypeDescription, Location)>,
    /// Lower-case names and OIDs to indexes of `attribute_types`.
    attribute_keys: HashMap<String, usize>,
    object_classes: Vec<(ObjectClassDescription, Location)>,
    class_keys: HashMap<String, usize>,
    syntaxes: Vec<(LdapSyntaxDescription, Location)>,
    syntax_keys: HashMap<String, usize>,
    /// DIT content rules, DIT structure rules, name forms.
    others: Vec<(Element, Location)>,
    other_keys: HashMap<(ElementKind, String), usize>,
}

fn conflict(
    kind: ElementKind,
    element: &Element,
    at: Location,
    previous: &Location,
    what: String,
) -> SchemaError {
    SchemaError::Conflict {
        at,
        previous: previous.clone(),
        kind,
        element: element.label(),
        what,
    }
}

impl Registry {
    fn register(&mut self, element: Element, location: Location) -> Result<(), SchemaError> {
        let kind = element.kind();
        match element {
            Element::AttributeType(desc) => register_named(
                NamedRegistry {
                    keys: &mut self.attribute_keys,
                    items: &mut self.attribute_types,
                    noun: "attribute type",
                },
                (&self.class_keys, "object class", &|i| {
                    let (c, at) = &self.object_classes[i];
                    (label(&c.names, &c.oid), at.clone())
                }),
                desc,
                location,
                kind,
                attribute_type_differences,
                Element::AttributeType,
            )?,
            Element::ObjectClass(desc) => register_named(
                NamedRegistry {
                    keys: &mut self.class_keys,
                    items: &mut self.object_classes,
                    noun: "object class",
                },
                (&self.attribute_keys, "attribute type", &|i| {
                    let (a, at) = &self.attribute_types[i];
                    (label(&a.names, &a.oid), at.clone())
                }),
                desc,
                location,
                kind,
                object_class_differences,
                Element::ObjectClass,
            )?,
            Element::LdapSyntax(desc) => {
                if let Some(&i) = self.syntax_keys.get(&desc.oid) {
                    let (previous, previous_at) = &self.syntaxes[i];
                    if substitute(previous) == substitute(&desc) {
                        return Ok(());
                    }
                    let what = format!("same OID {}, different X-SUBST", desc.oid);
                    return Err(conflict(
                        kind,
                        &Element::LdapSyntax(desc),
                        location,
                        previous_at,
                        what,
                    ));
                }
                self.syntax_keys.insert(desc.oid.clone(), self.syntaxes.len());
                self.syntaxes.push((desc, location));
            }
            Element::MatchingRule(desc) => {
                // Rules are code: a description may only restate one Larch implements.
                if matching::lookup(&desc.oid).is_none() {
                    return Err(SchemaError::Resolve {
                        at: location,
                        kind,
                        element: Element::MatchingRule(desc.clone()).label(),
                        reason: ResolveErrorKind::UnimplementedMatchingRule { oid: desc.oid },
                    });
                }
            }
            // The server computes matchingRuleUse from the loaded schema.
            Element::MatchingRuleUse(_) => {}
            other @ (Element::DitContentRule(_) | Element::DitStructureRule(_) | Element::NameForm(_)) => {
                let key = (kind, other.identifier());
                if let Some(&i) = self.other_keys.get(&key) {
                    let (previous, previous_at) = &self.others[i];
                    if *previous == other {
                        return Ok(());
                    }
                    let what = format!("same identifier {}, different definition", key.1);
                    return Err(conflict(kind, &other, location, previous_at, what));
                }
                self.other_keys.insert(key, self.others.len());
                self.others.push((other, location));
            }
        }
        Ok(())
    }
}

/// A description that has an OID and names (attribute types and object classes).
trait Named: Clone {
    fn oid(&self) -> &str;
    fn names(&self) -> &[String];
}

impl Named for AttributeTypeDescription {
    fn oid(&self) -> &str {
        &self.oid
    }
    fn names(&self) -> &[String] {
        &self.names
    }
}

impl Named for ObjectClassDescription {
    fn oid(&self) -> &str {
        &self.oid
    }
    fn names(&self) -> &[String] {
        &self.names
    }
}

/// One kind's table: lower-cased names and OIDs to indexes, the descriptions, and the
/// kind's noun for messages.
struct NamedRegistry<'r, D> {
    keys: &'r mut HashMap<String, usize>,
    items: &'r mut Vec<(D, Location)>,
    noun: &'static str,
}

/// The other kind sharing the OID space: its keys, noun, and a label and location by index.
type OtherKind<'r> = (
    &'r HashMap<String, usize>,
    &'static str,
    &'r dyn Fn(usize) -> (String, Location),
);

/// Registers an attribute type or object class: a repeat of the same OID is skipped when it
/// means the same thing and a conflict naming both places when it differs; an OID used by
/// the other kind, or a name already taken, is a conflict.
#[allow(clippy::too_many_arguments)]
fn register_named<D: Named>(
    this: NamedRegistry<'_, D>,
    other: OtherKind<'_>,
    desc: D,
    location: Location,
    kind: ElementKind,
    differences: fn(&D, &D) -> Vec<&'static str>,
    wrap: fn(D) -> Element,
) -> Result<(), SchemaError> {
    if let Some(&i) = this.keys.get(desc.oid()) {
        let (previous, previous_at) = &this.items[i];
        let differences = differences(previous, &desc);
        if differences.is_empty() {
            return Ok(());
        }
        let what = format!("same OID {}, different {}", desc.oid(), differences.join(", "));
        return Err(conflict(kind, &wrap(desc), location, previous_at, what));
    }
    let (other_keys, other_noun, other_label) = other;
    if let Some(&i) = other_keys.get(desc.oid()) {
        let (name, previous_at) = other_label(i);
        let what = format!("OID {} is already the {other_noun} {name}", desc.oid());
        return Err(conflict(kind, &wrap(desc), location, &previous_at, what));
    }
    let new = this.items.len();
    for name in desc.names() {
        let key = name.to_ascii_lowercase();
        if let Some(&i) = this.keys.get(&key).filter(|&&i| i != new) {
            let (other, previous_at) = &this.items[i];
            let what = format!("the name {name} is already the {} {}", this.noun, other.oid());
            return Err(conflict(kind, &wrap(desc.clone()), location, previous_at, what));
        }
        this.keys.insert(key, new);
    }
    this.keys.insert(desc.oid().to_string(), new);
    this.items.push((desc, location));
    Ok(())
}

fn label(names: &[String], oid: &str) -> String {
    names.first().cloned().unwrap_or_else(|| oid.to_owned())
}

/// The `X-SUBST` value of a syntax description, if any.
fn substitute(desc: &LdapSyntaxDescription) -> Option<&str> {
    desc.extensions
        .iter()
        .find(|e| e.name.eq_ignore_ascii_case("X-SUBST"))
        .and_then(|e| e.values.first())
        .map(String::as_str)
}

/// Lower-cased, sorted, deduplicated copy of a list of names or references.
fn name_set(names: &[String]) -> Vec<String> {
    let mut set: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
    set.sort_unstable();
    set.dedup();
    set
}

/// A matching rule reference compared by the rule it names (its OID when known).
fn rule_key(rule: &Option<String>) -> Option<String> {
    rule.as_ref()
        .map(|r| matching::lookup(r).map_or_else(|| r.to_ascii_lowercase(), |m| m.oid.to_owned()))
}

/// The fields in which two definitions of one attribute type OID differ in meaning.
fn attribute_type_differences(
    a: &AttributeTypeDescription,
    b: &AttributeTypeDescription,
) -> Vec<&'static str> {
    let lower = |s: &Option<String>| s.as_ref().map(|s| s.to_ascii_lowercase());
    let checks = [
        ("NAME", name_set(&a.names) == name_set(&b.names)),
        ("SUP", lower(&a.sup) == lower(&b.sup)),
        ("EQUALITY", rule_key(&a.equality) == rule_key(&b.equality)),
        ("ORDERING", rule_key(&a.ordering) == rule_key(&b.ordering)),
        ("SUBSTR", rule_key(&a.substr) == rule_key(&b.substr)),
        ("SYNTAX", a.syntax == b.syntax),
        ("SINGLE-VALUE", a.single_value == b.single_value),
        ("COLLECTIVE", a.collective == b.collective),
        (
            "NO-USER-MODIFICATION",
            a.no_user_modification == b.no_user_modification,
        ),
        ("USAGE", a.usage == b.usage),
        ("OBSOLETE", a.obsolete == b.obsolete),
    ];
    checks
        .iter()
        .filter(|(_, same)| !same)
        .map(|(field, _)| *field)
        .collect()
}

/// The fields in which two definitions of one object class OID differ in meaning.
fn object_class_differences(a: &ObjectClassDescription, b: &ObjectClassDescription) -> Vec<&'static str> {
    let checks = [
        ("NAME", name_set(&a.names) == name_set(&b.names)),
        ("SUP", name_set(&a.sup) == name_set(&b.sup)),
        ("kind", a.kind == b.kind),
        ("MUST", name_set(&a.must) == name_set(&b.must)),
        ("MAY", name_set(&a.may) == name_set(&b.may)),
        ("OBSOLETE", a.obsolete == b.obsolete),
    ];
    checks
        .iter()
        .filter(|(_, same)| !same)
        .map(|(field, _)| *field)
        .collect()
}

/// Binds each described syntax to an implementation.
fn bind_syntaxes(
    described: &[(LdapSyntaxDescription, Location)],
) -> Result<Vec<DescribedSyntax>, SchemaError> {
    described
        .iter()
        .map(|(desc, location)| {
            let implementation = syntax::lookup(&desc.oid)
                .or_else(|| substitute(desc).and_then(syntax::lookup))
                .ok_or_else(|| SchemaError::Resolve {
                    at: location.clone(),
                    kind: ElementKind::LdapSyntax,
                    element: desc.oid.clone(),
                    reason: ResolveErrorKind::UnknownSyntax {
                        oid: substitute(desc).unwrap_or(&desc.oid).to_owned(),
                    },
                })?;
            Ok(DescribedSyntax {
                description: desc.clone(),
                implementation,
                location: location.clone(),
            })
        })
        .collect()
}

/// The effective fields of an attribute type, computed supertype first.
struct Effective {
    syntax: &'static Syntax,
    syntax_oid: String,
    syntax_len: Option<u32>,
    equality: Option<&'static MatchingRule>,
    ordering: Option<&'static MatchingRule>,
    substring: Option<&'static MatchingRule>,
    collective: bool,
}

/// Depth-first walk state of one node.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Visit {
    New,
    OnStack,
    Done,
}

fn resolve_attribute_types(
    registry: &Registry,
    syntaxes: &[DescribedSyntax],
) -> Result<Vec<AttributeType>, SchemaError> {
    let types = &registry.attribute_types;
    let error = |i: usize, reason: ResolveErrorKind| {
        let (desc, location) = &types[i];
        SchemaError::Resolve {
            at: location.clone(),
            kind: ElementKind::AttributeType,
            element: label(&desc.names, &desc.oid),
            reason,
        }
    };
    // Supertype of each type, by index.
    let mut sups = Vec::with_capacity(types.len());
    for (i, (desc, _)) in types.iter().enumerate() {
        let sup = match &desc.sup {
            None => None,
            Some(name) => match registry.attribute_keys.get(&name.to_ascii_lowercase()) {
                Some(&j) => Some(j),
                None => {
                    return Err(error(
                        i,
                        ResolveErrorKind::UnknownSuperiorType { name: name.clone() },
                    ))
                }
            },
        };
        sups.push(sup);
    }
    let described: HashMap<&str, &'static Syntax> = syntaxes
        .iter()
        .map(|s| (s.description.oid.as_str(), s.implementation))
        .collect();
    let mut effective: Vec<Option<Effective>> = (0..types.len()).map(|_| None).collect();
    let mut state = vec![Visit::New; types.len()];
    let mut stack: Vec<usize> = Vec::new();
    for start in 0..types.len() {
        if state[start] == Visit::Done {
            continue;
        }
        stack.push(start);
        state[start] = Visit::OnStack;
        while let Some(&top) = stack.last() {
            if let Some(sup) = sups[top] {
                match state[sup] {
                    Visit::New => {
                        state[sup] = Visit::OnStack;
                        stack.push(sup);
                        continue;
                    }
                    Visit::OnStack => {
                        let from = stack.iter().position(|&i| i == sup).unwrap_or(0);
                        let mut chain: Vec<String> = stack[from..]
                            .iter()
                            .map(|&i| label(&types[i].0.names, &types[i].0.oid))
                            .collect();
                        chain.push(label(&types[sup].0.names, &types[sup].0.oid));
                        return Err(error(
                            top,
                            ResolveErrorKind::Cycle {
                                chain: chain.join(" -> "),
                            },
                        ));
                    }
                    Visit::Done => {}
                }
            }
            let sup_effective = sups[top].and_then(|s| effective[s].as_ref());
            let computed = effective_of(
                &types[top].0,
                sups[top].map(|s| &types[s].0),
                sup_effective,
                &described,
            )
            .map_err(|reason| error(top, reason))?;
            effective[top] = Some(computed);
            state[top] = Visit::Done;
            stack.pop();
        }
    }
    let mut resolved = Vec::with_capacity(types.len());
    for (i, ((desc, location), eff)) in types.iter().zip(effective).enumerate() {
        let Some(eff) = eff else {
            // Unreachable: the walk computes every type or returns an error.
            return Err(error(i, ResolveErrorKind::NoSyntax));
        };
        resolved.push(AttributeType {
            id: AttributeTypeId(id_u32(i)),
            oid: desc.oid.clone(),
            names: desc.names.clone(),
            sup: sups[i].map(|s| AttributeTypeId(id_u32(s))),
            equality: eff.equality,
            ordering: eff.ordering,
            substring: eff.substring,
            syntax: eff.syntax,
            syntax_oid: eff.syntax_oid,
            syntax_len: eff.syntax_len,
            single_value: desc.single_value,
            no_user_modification: desc.no_user_modification,
            obsolete: desc.obsolete,
            collective: eff.collective,
            usage: desc.usage,
            description: desc.clone(),
            location: location.clone(),
        });
    }
    Ok(resolved)
}

/// IDs fit 32 bits: a load holds at most `MAX_ELEMENTS` elements.
fn id_u32(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

/// The effective fields of one attribute type, given its supertype's.
fn effective_of(
    desc: &AttributeTypeDescription,
    sup: Option<&AttributeTypeDescription>,
    sup_effective: Option<&Effective>,
    described: &HashMap<&str, &'static Syntax>,
) -> Result<Effective, ResolveErrorKind> {
    if let Some(sup) = sup {
        if sup.usage != desc.usage {
            return Err(ResolveErrorKind::UsageMismatch {
                usage: desc.usage.keyword(),
                sup: label(&sup.names, &sup.oid),
                sup_usage: sup.usage.keyword(),
            });
        }
    }
    let (syntax, syntax_oid, syntax_len) = match (&desc.syntax, sup_effective) {
        (Some(oid), _) => {
            let implementation = syntax::lookup(oid)
                .or_else(|| described.get(oid.as_str()).copied())
                .ok_or_else(|| ResolveErrorKind::UnknownSyntax { oid: oid.clone() })?;
            (implementation, oid.clone(), desc.syntax_len)
        }
        (None, Some(sup)) => (sup.syntax, sup.syntax_oid.clone(), sup.syntax_len),
        (None, None) => return Err(ResolveErrorKind::NoSyntax),
    };
    let rule = |name: &Option<String>, keyword: &'static str, usage: RuleUsage, inherited| match name {
        None => Ok(inherited),
        Some(name) => {
            let rule = matching::lookup(name).ok_or_else(|| ResolveErrorKind::UnknownMatchingRule {
                name: name.clone(),
                keyword,
            })?;
            if rule.usage != usage {
                return Err(ResolveErrorKind::WrongRuleUsage {
                    name: name.clone(),
                    keyword,
                    usage: match usage {
                        RuleUsage::Equality => "equality",
                        RuleUsage::Ordering => "ordering",
                        RuleUsage::Substring => "substrings",
                    },
                });
            }
            Ok(Some(rule))
        }
    };
    let equality = rule(
        &desc.equality,
        "EQUALITY",
        RuleUsage::Equality,
        sup_effective.and_then(|s| s.equality),
    )?;
    let ordering = rule(
        &desc.ordering,
        "ORDERING",
        RuleUsage::Ordering,
        sup_effective.and_then(|s| s.ordering),
    )?;
    let substring = rule(
        &desc.substr,
        "SUBSTR",
        RuleUsage::Substring,
        sup_effective.and_then(|s| s.substring),
    )?;
    let collective = desc.collective || sup_effective.is_some_and(|s| s.collective);
    if collective && desc.usage != AttributeUsage::UserApplications {
        return Err(ResolveErrorKind::CollectiveOperational);
    }
    if desc.no_user_modification && desc.usage == AttributeUsage::UserApplications {
        return Err(ResolveErrorKind::NoUserModificationUserType);
    }
    Ok(Effective {
        syntax,
        syntax_oid,
        syntax_len,
        equality,
        ordering,
        substring,
        collective,
    })
}

/// The complete sets of one object class, over all its superclasses.
#[derive(Default)]
struct Closure {
    superclasses: Vec<usize>,
    must: Vec<AttributeTypeId>,
    may: Vec<AttributeTypeId>,
}

/// Resolved references of one object class, before the closure.
struct ClassLinks {
    sup: Vec<usize>,
    must: Vec<AttributeTypeId>,
    may: Vec<AttributeTypeId>,
}

fn resolve_object_classes(
    registry: &Registry,
    attribute_index: &NameMap<AttributeTypeId>,
) -> Result<Vec<ObjectClass>, SchemaError> {
    let classes = &registry.object_classes;
    let error = |i: usize, reason: ResolveErrorKind| {
        let (desc, location) = &classes[i];
        SchemaError::Resolve {
            at: location.clone(),
            kind: ElementKind::ObjectClass,
            element: label(&desc.names, &desc.oid),
            reason,
        }
    };
    let mut links = Vec::with_capacity(classes.len());
    for (i, (desc, _)) in classes.iter().enumerate() {
        let mut sup = Vec::with_capacity(desc.sup.len());
        for name in &desc.sup {
            let Some(&j) = registry.class_keys.get(&name.to_ascii_lowercase()) else {
                return Err(error(
                    i,
                    ResolveErrorKind::UnknownSuperiorClass { name: name.clone() },
                ));
            };
            let sup_kind = classes[j].0.kind;
            let allowed = match desc.kind {
                ObjectClassKind::Abstract => sup_kind == ObjectClassKind::Abstract,
                ObjectClassKind::Auxiliary => sup_kind != ObjectClassKind::Structural,
                ObjectClassKind::Structural => sup_kind != ObjectClassKind::Auxiliary,
            };
            if !allowed {
                return Err(error(
                    i,
                    ResolveErrorKind::SuperclassKind {
                        kind: desc.kind.adjective(),
                        sup: label(&classes[j].0.names, &classes[j].0.oid),
                        sup_kind: sup_kind.adjective(),
                    },
                ));
            }
            if !sup.contains(&j) {
                sup.push(j);
            }
        }
        let attributes =
            |names: &[String], keyword: &'static str| -> Result<Vec<AttributeTypeId>, SchemaError> {
                let mut ids = Vec::with_capacity(names.len());
                for name in names {
                    let Some(&id) = attribute_index.get(name.to_ascii_lowercase().as_str()) else {
                        return Err(error(
                            i,
                            ResolveErrorKind::UnknownAttributeType {
                                name: name.clone(),
                                keyword,
                            },
                        ));
                    };
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
                Ok(ids)
            };
        links.push(ClassLinks {
            sup,
            must: attributes(&desc.must, "MUST")?,
            may: attributes(&desc.may, "MAY")?,
        });
    }

    // Closure over the SUP graph, superclasses first: an explicit stack of (class, next
    // superclass to visit).
    let mut closures: Vec<Option<Closure>> = (0..classes.len()).map(|_| None).collect();
    let mut state = vec![Visit::New; classes.len()];
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let mut total_entries = 0usize;
    for start in 0..classes.len() {
        if state[start] == Visit::Done {
            continue;
        }
        state[start] = Visit::OnStack;
        stack.push((start, 0));
        while let Some(frame) = stack.last_mut() {
            let node = frame.0;
            if let Some(&sup) = links[node].sup.get(frame.1) {
                frame.1 += 1;
                match state[sup] {
                    Visit::New => {
                        state[sup] = Visit::OnStack;
                        stack.push((sup, 0));
                    }
                    Visit::OnStack => {
                        let from = stack.iter().position(|&(i, _)| i == sup).unwrap_or(0);
                        let mut chain: Vec<String> = stack[from..]
                            .iter()
                            .map(|&(i, _)| label(&classes[i].0.names, &classes[i].0.oid))
                            .collect();
                        chain.push(label(&classes[sup].0.names, &classes[sup].0.oid));
                        return Err(error(
                            node,
                            ResolveErrorKind::Cycle {
                                chain: chain.join(" -> "),
                            },
                        ));
                    }
                    Visit::Done => {}
                }
                continue;
            }
            let mut superclasses = Vec::new();
            let mut must = links[node].must.clone();
            let mut may = links[node].may.clone();
            for &sup in &links[node].sup {
                superclasses.push(sup);
                if let Some(Closure {
                    superclasses: sup_classes,
                    must: sup_must,
                    may: sup_may,
                }) = &closures[sup]
                {
                    superclasses.extend_from_slice(sup_classes);
                    must.extend_from_slice(sup_must);
                    may.extend_from_slice(sup_may);
                }
            }
            superclasses.sort_unstable();
            superclasses.dedup();
            must.sort_unstable();
            must.dedup();
            may.sort_unstable();
            may.dedup();
            may.retain(|id| must.binary_search(id).is_err());
            total_entries += superclasses.len() + must.len() + may.len();
            if total_entries > MAX_RESOLVED_CLASS_ENTRIES {
                return Err(SchemaError::TooLarge {
                    what: "the resolved object class sets (superclasses, MUST, MAY) of the schema",
                    limit: MAX_RESOLVED_CLASS_ENTRIES,
                });
            }
            closures[node] = Some(Closure {
                superclasses,
                must,
                may,
            });
            state[node] = Visit::Done;
            stack.pop();
        }
    }

    let mut resolved = Vec::with_capacity(classes.len());
    for (i, (((desc, location), link), closure)) in classes.iter().zip(links).zip(closures).enumerate() {
        let Closure {
            superclasses,
            must: all_must,
            may: all_may,
        } = closure.unwrap_or_default();
        let mut may = link.may;
        may.retain(|id| all_must.binary_search(id).is_err());
        let description = without_required_may(desc, &all_must, attribute_index);
        resolved.push(ObjectClass {
            id: ObjectClassId(id_u32(i)),
            oid: desc.oid.clone(),
            names: desc.names.clone(),
            kind: desc.kind,
            obsolete: desc.obsolete,
            sup: link.sup.iter().map(|&s| ObjectClassId(id_u32(s))).collect(),
            must: link.must,
            may,
            all_must,
            all_may,
            superclasses: superclasses
                .into_iter()
                .map(|s| ObjectClassId(id_u32(s)))
                .collect(),
            description,
            location: location.clone(),
        });
    }
    Ok(resolved)
}

/// The class's description as the schema keeps and publishes it: a MAY attribute type the
/// class requires anyway (its own MUST or a superclass's) is left out of MAY, so no type is
/// both MUST and MAY of one class in `cn=Subschema`. RFC 2307's `ipProtocol` and `oncRpc`
/// list `description` as both, RFC 4519's `residentialPerson` `l` (OpenLDAP's schema files
/// copy them, and slapd publishes them so); X.501 gives MUST precedence, which is what the
/// closure does already, so the MAY was never more than a restatement.
fn without_required_may(
    desc: &ObjectClassDescription,
    all_must: &[AttributeTypeId],
    attribute_index: &NameMap<AttributeTypeId>,
) -> ObjectClassDescription {
    let required = |name: &String| {
        attribute_index
            .get(name.to_ascii_lowercase().as_str())
            .is_some_and(|id| all_must.binary_search(id).is_ok())
    };
    let mut published = desc.clone();
    published.may.retain(|name| !required(name));
    published
}
