//! Evaluating a compiled filter against one entry, iteratively.
//!
//! Steps: descend from the root; a list node opens a frame (identity TRUE for `and`, FALSE
//! for `or`); a leaf is evaluated against the entry's values; each result is folded into
//! the innermost frame, which closes early when its result is decided (`and` meets FALSE,
//! `or` meets TRUE) or when its last child is done; `not` flips its one child.

use larch_proto::limits::MAX_FILTER_DEPTH;

use super::compile::{class_key, rule_applies, CompiledFilter, Kind, Target};
use super::Tri;
use crate::dn::Dn;
use crate::entry::StoredRef;
use crate::matching::{self, MatchingRule, RuleUsage};
use crate::schema::Schema;

/// Frames of the stack tried first (filters nested deeper use [`MAX_FILTER_DEPTH`] + 1).
const SMALL_STACK_FRAMES: usize = 8;

const EMPTY_FRAME: Frame = Frame {
    node: 0,
    acc: Tri::True,
    child: 0,
    end: 0,
};

/// The entry a filter is evaluated against: its attributes, the caller's identifier of it
/// (for resolved in-chain assertions) and its DN (for `:dn:` matches).
#[derive(Clone, Copy)]
struct Subject<'a> {
    entry: StoredRef<'a>,
    id: Option<u32>,
    dn: Option<&'a Dn>,
}

#[derive(Clone, Copy)]
struct Frame {
    node: u32,
    acc: Tri,
    /// The child being evaluated.
    child: u32,
    end: u32,
}

impl CompiledFilter {
    /// Evaluates the filter against an entry. Its DN is needed only for `:dn:` extensible
    /// matches ([`CompiledFilter::needs_dn`]); without it those look at the attributes
    /// alone. `scratch` is a reusable buffer for value keys. A resolved in-chain assertion
    /// on a member attribute is Undefined here: it needs the entry's identifier
    /// ([`CompiledFilter::evaluate_entry`]).
    pub fn evaluate(
        &self,
        entry: StoredRef<'_>,
        dn: Option<&Dn>,
        schema: &Schema,
        scratch: &mut Vec<u8>,
    ) -> Tri {
        self.evaluate_as(Subject { entry, id: None, dn }, schema, scratch)
    }

    /// [`CompiledFilter::evaluate`] of the entry the caller identifies by `id` (the
    /// identifiers [`CompiledFilter::resolve_in_chain`] was given), which resolved in-chain
    /// assertions test.
    pub fn evaluate_entry(
        &self,
        entry: StoredRef<'_>,
        id: u32,
        dn: Option<&Dn>,
        schema: &Schema,
        scratch: &mut Vec<u8>,
    ) -> Tri {
        self.evaluate_as(
            Subject {
                entry,
                id: Some(id),
                dn,
            },
            schema,
            scratch,
        )
    }

    fn evaluate_as(&self, subject: Subject<'_>, schema: &Schema, scratch: &mut Vec<u8>) -> Tri {
        // Most filters nest a few levels: a small stack first, the deepest only for a
        // filter that needs it (zeroing 65 frames for every entry cost more than
        // evaluating `(uid=x)`).
        let mut small = [EMPTY_FRAME; SMALL_STACK_FRAMES];
        if let Some(result) = self.run(&mut small, subject, schema, scratch) {
            return result;
        }
        let mut deepest = [EMPTY_FRAME; MAX_FILTER_DEPTH + 1];
        self.run(&mut deepest, subject, schema, scratch)
            .unwrap_or(Tri::Undefined)
    }

    /// [`CompiledFilter::evaluate`] with `stack`; `None` when the filter nests deeper than
    /// `stack` holds.
    fn run(
        &self,
        stack: &mut [Frame],
        subject: Subject<'_>,
        schema: &Schema,
        scratch: &mut Vec<u8>,
    ) -> Option<Tri> {
        let mut depth = 0usize;
        let mut i = 0u32;
        loop {
            // Descend to a leaf (or an empty list), opening frames on the way.
            let mut result = loop {
                let Some(node) = self.nodes.get(i as usize) else {
                    return Some(Tri::Undefined);
                };
                let acc = match node.kind {
                    Kind::And => Tri::True,
                    Kind::Or => Tri::False,
                    Kind::Not => Tri::Undefined,
                    _ => break self.leaf(&node.kind, subject, schema, scratch),
                };
                if node.size == 1 {
                    // `(&)` is TRUE and `(|)` FALSE (RFC 4526); a `not` always has a child.
                    break acc;
                }
                if depth == stack.len() {
                    return None;
                }
                stack[depth] = Frame {
                    node: i,
                    acc,
                    child: i + 1,
                    end: i + node.size,
                };
                depth += 1;
                i += 1;
            };
            // Fold the result upwards until a frame has another child to evaluate.
            loop {
                if depth == 0 {
                    return Some(result);
                }
                let frame = &mut stack[depth - 1];
                let decided = match self.nodes[frame.node as usize].kind {
                    Kind::And => {
                        frame.acc = frame.acc.and(result);
                        frame.acc == Tri::False
                    }
                    Kind::Or => {
                        frame.acc = frame.acc.or(result);
                        frame.acc == Tri::True
                    }
                    _ => {
                        frame.acc = result.not();
                        true
                    }
                };
                frame.child += self.nodes[frame.child as usize].size;
                if decided || frame.child >= frame.end {
                    result = frame.acc;
                    depth -= 1;
                    continue;
                }
                i = frame.child;
                break;
            }
        }
    }

    /// True when evaluation looks at the entry's DN (an extensible match with `:dn:`), so
    /// the caller must pass it to [`CompiledFilter::evaluate`].
    pub fn needs_dn(&self) -> bool {
        self.nodes.iter().any(|n| {
            matches!(
                n.kind,
                Kind::Extensible {
                    dn_attributes: true,
                    ..
                }
            )
        })
    }

    /// True when the filter evaluates to TRUE.
    pub fn matches(
        &self,
        entry: StoredRef<'_>,
        dn: Option<&Dn>,
        schema: &Schema,
        scratch: &mut Vec<u8>,
    ) -> bool {
        self.evaluate(entry, dn, schema, scratch) == Tri::True
    }

    /// True when [`CompiledFilter::evaluate_entry`] is TRUE.
    pub fn matches_entry(
        &self,
        entry: StoredRef<'_>,
        id: u32,
        dn: Option<&Dn>,
        schema: &Schema,
        scratch: &mut Vec<u8>,
    ) -> bool {
        self.evaluate_entry(entry, id, dn, schema, scratch) == Tri::True
    }

    fn leaf(&self, kind: &Kind, subject: Subject<'_>, schema: &Schema, scratch: &mut Vec<u8>) -> Tri {
        let Subject { entry, id, dn } = subject;
        match kind {
            Kind::Constant(t) => *t,
            Kind::Present(target) => Tri::from_bool(values(entry, target).next().is_some()),
            Kind::Equality {
                target,
                rule,
                key,
                object_class,
                subclass_of,
            } => Tri::from_bool(values(entry, target).any(|v| {
                scratch.clear();
                let normalized = if *object_class {
                    let name = std::str::from_utf8(v).unwrap_or("");
                    let class = schema.object_class(name.trim());
                    // `objectClass` matches subclasses too (slapd's objectSubClassMatch:
                    // `(objectClass=person)` is TRUE for an inetOrgPerson).
                    if let (Some(c), Some(subclass_of)) = (class, subclass_of) {
                        if c.id == *subclass_of || c.is_subclass_of(*subclass_of) {
                            return true;
                        }
                    }
                    class_key(class.map(|c| c.oid.as_str()), v, scratch);
                    true
                } else {
                    rule.normalize(v, scratch).is_ok()
                };
                normalized && scratch[..] == key[..]
            })),
            Kind::Ordering {
                target,
                rule,
                key,
                greater_or_equal,
            } => Tri::from_bool(values(entry, target).any(|v| {
                scratch.clear();
                rule.normalize(v, scratch).is_ok()
                    && if *greater_or_equal {
                        scratch[..] >= key[..]
                    } else {
                        scratch[..] <= key[..]
                    }
            })),
            Kind::Substrings {
                target,
                rule,
                initial,
                any,
                final_,
            } => Tri::from_bool(values(entry, target).any(|v| {
                scratch.clear();
                rule.normalize(v, scratch).is_ok()
                    && rule.matches_substrings(scratch, initial.as_deref(), any, final_.as_deref())
            })),
            Kind::Approx { target, key } => Tri::from_bool(values(entry, target).any(|v| {
                scratch.clear();
                matching::approx_key(v, scratch);
                scratch[..] == key[..]
            })),
            Kind::Extensible {
                target,
                rule,
                key,
                dn_attributes,
            } => {
                let hit = |v: &[u8], scratch: &mut Vec<u8>| extensible_hit(rule, key, v, scratch);
                let in_entry = match target {
                    Some(target) => values(entry, target).any(|v| hit(v, scratch)),
                    None => entry.attributes().any(|a| {
                        schema
                            .attribute_type_by_id(a.ty)
                            .is_some_and(|t| rule_applies(rule, t))
                            && a.values.iter().any(|v| hit(v, scratch))
                    }),
                };
                let in_dn = *dn_attributes
                    && dn
                        .into_iter()
                        .flat_map(|dn| dn.rdns.iter())
                        .flat_map(|r| r.avas.iter())
                        .any(|ava| {
                            let Some(t) = schema.attribute_type(&ava.attr) else {
                                return false;
                            };
                            let wanted = match target {
                                Some(target) => target.types.contains(&t.id),
                                None => rule_applies(rule, t),
                            };
                            wanted && hit(&ava.value, scratch)
                        });
                Tri::from_bool(in_entry || in_dn)
            }
            // Not resolved against a version: nothing to decide with.
            Kind::InChainOf { .. } => Tri::Undefined,
            Kind::EntryIn { ids, .. } => match id {
                Some(id) => Tri::from_bool(ids.binary_search(&id).is_ok()),
                None => Tri::Undefined,
            },
            Kind::And | Kind::Or | Kind::Not => Tri::Undefined,
        }
    }
}

/// Equality rules match equal keys; ordering rules match values *less than* the assertion
/// (X.501's ordering match, as RFC 4511 4.5.1.7.7 applies it).
fn extensible_hit(rule: &MatchingRule, key: &[u8], v: &[u8], scratch: &mut Vec<u8>) -> bool {
    scratch.clear();
    if rule.normalize(v, scratch).is_err() {
        return false;
    }
    match rule.usage {
        RuleUsage::Ordering => scratch[..] < key[..],
        _ => scratch[..] == key[..],
    }
}

/// The values an assertion looks at: of the type or a subtype, with at least the
/// assertion's options.
fn values<'e>(entry: StoredRef<'e>, target: &'e Target) -> impl Iterator<Item = &'e [u8]> + 'e {
    target
        .types
        .iter()
        .flat_map(move |&ty| entry.attribute(ty))
        .filter(move |a| target.options.is_subset_of_str(a.options_str()))
        .flat_map(|a| a.values.iter())
}
