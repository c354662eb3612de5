//! Compiling a BER filter against the schema into a flat list of nodes in pre-order.
//! Each node records the size of its subtree, so the children of a list node are found by
//! stepping over subtrees; no node points at another.

use larch_proto::{Filter, FilterNode, FilterSetIter, Substring};

use super::Tri;
use crate::entry::{split_description, Options};
use crate::matching::{self, MatchingRule, RuleUsage, SubstringPosition};
use crate::schema::{AttributeTypeId, ObjectClassId, Schema};
use larch_proto::limits::MAX_FILTER_DEPTH;

/// Which attributes of an entry an assertion looks at: a type, all its subtypes, and
/// values whose options include the assertion's.
#[derive(Debug, Clone)]
pub(super) struct Target {
    pub types: Vec<AttributeTypeId>,
    pub options: Options,
}

#[derive(Debug, Clone)]
pub(super) enum Kind {
    And,
    Or,
    Not,
    Constant(Tri),
    Present(Target),
    Equality {
        target: Target,
        rule: &'static MatchingRule,
        key: Vec<u8>,
        /// `objectClass`-like: values are class names resolved to OIDs.
        object_class: bool,
        /// For `objectClass` itself: the asserted class, which every subclass matches.
        subclass_of: Option<ObjectClassId>,
    },
    Ordering {
        target: Target,
        rule: &'static MatchingRule,
        key: Vec<u8>,
        greater_or_equal: bool,
    },
    Substrings {
        target: Target,
        rule: &'static MatchingRule,
        initial: Option<Vec<u8>>,
        any: Vec<Vec<u8>>,
        final_: Option<Vec<u8>>,
    },
    Approx {
        target: Target,
        key: Vec<u8>,
    },
    Extensible {
        /// `None`: every attribute whose syntax the rule applies to.
        target: Option<Target>,
        rule: &'static MatchingRule,
        key: Vec<u8>,
        dn_attributes: bool,
    },
    /// `(member:1.2.840.113556.1.4.1941:=U)`: the groups `value` (U's DN, as asserted)
    /// belongs to, directly or through nested groups. Undefined until the server resolves
    /// it against a version ([`CompiledFilter::resolve_in_chain`]).
    InChainOf {
        /// The member attribute asserted (what access control sees the filter read).
        target: Target,
        value: Vec<u8>,
    },
    /// A resolved [`Kind::InChainOf`]: the entries whose identifier (the caller's, as
    /// given to [`CompiledFilter::evaluate_entry`]) is one of `ids`, sorted. `value` is
    /// kept for the caller's planner ([`CompiledFilter::in_chain_entries`]).
    EntryIn {
        target: Target,
        value: Vec<u8>,
        ids: Vec<u32>,
    },
}

#[derive(Debug, Clone)]
pub(super) struct Node {
    pub kind: Kind,
    /// Nodes in this subtree, this one included.
    pub size: u32,
}

/// A filter ready to be evaluated against many entries.
///
#[derive(Debug, Clone)]
pub struct CompiledFilter {
    pub(super) nodes: Vec<Node>,
}

impl CompiledFilter {
    /// Compiles `filter` (validated BER, so its depth is at most `MAX_FILTER_DEPTH`).
    pub fn compile(filter: Filter<'_>, schema: &Schema) -> CompiledFilter {
        let mut nodes: Vec<Node> = Vec::new();
        // Open list nodes: (index of the node, remaining children).
        let mut open: Vec<(usize, FilterSetIter<'_>)> = Vec::with_capacity(8);
        let mut next = Some(filter);
        loop {
            if let Some(f) = next.take() {
                let index = nodes.len();
                match f.node() {
                    FilterNode::And(set) | FilterNode::Or(set) if open.len() < MAX_FILTER_DEPTH => {
                        let and = matches!(f.node(), FilterNode::And(_));
                        nodes.push(Node {
                            kind: if and { Kind::And } else { Kind::Or },
                            size: 1,
                        });
                        open.push((index, set.iter()));
                    }
                    FilterNode::Not(inner) if open.len() < MAX_FILTER_DEPTH => {
                        nodes.push(Node {
                            kind: Kind::Not,
                            size: 1,
                        });
                        open.push((index, single(inner)));
                    }
                    FilterNode::And(_) | FilterNode::Or(_) | FilterNode::Not(_) => nodes.push(Node {
                        kind: Kind::Constant(Tri::Undefined),
                        size: 1,
                    }),
                    leaf => nodes.push(Node {
                        kind: compile_leaf(leaf, schema),
                        size: 1,
                    }),
                }
            }
            // Descend into the next child of the innermost open list, or close it.
            let Some((index, children)) = open.last_mut() else {
                break;
            };
            match children.next() {
                Some(child) => next = Some(child),
                None => {
                    let index = *index;
                    open.pop();
                    nodes[index].size = (nodes.len() - index) as u32;
                }
            }
        }
        CompiledFilter { nodes }
    }
}

/// An iterator over exactly one filter (the operand of a `not`).
fn single(f: Filter<'_>) -> FilterSetIter<'_> {
    larch_proto::FilterSet::of_one(f).iter()
}

const UNDEFINED: Kind = Kind::Constant(Tri::Undefined);

fn target(description: &[u8], schema: &Schema) -> Option<Target> {
    let (ty, options) = split_description(description)?;
    let t = schema.attribute_type(ty)?;
    let types = schema.family(t.id);
    Some(Target { types, options })
}

fn normalized(rule: &MatchingRule, value: &[u8]) -> Option<Vec<u8>> {
    let mut key = Vec::with_capacity(value.len());
    rule.normalize(value, &mut key).ok()?;
    Some(key)
}

/// The key of an object class name or OID: the class's OID when the schema knows it.
pub(super) fn class_key(schema_oid: Option<&str>, value: &[u8], out: &mut Vec<u8>) {
    match schema_oid {
        Some(oid) => out.extend_from_slice(oid.as_bytes()),
        None => out.extend(value.iter().map(u8::to_ascii_lowercase)),
    }
}

fn compile_leaf(node: FilterNode<'_>, schema: &Schema) -> Kind {
    match node {
        FilterNode::Present(d) => target(d, schema).map_or(Kind::Constant(Tri::False), Kind::Present),
        FilterNode::Equality(a) => {
            let Some(target) = target(a.description, schema) else {
                return UNDEFINED;
            };
            let t = schema.attribute_type_by_id(target.types[0]);
            let Some(rule) = t.and_then(|t| t.equality) else {
                return UNDEFINED;
            };
            let object_class = t.is_some_and(|t| t.oid == "2.5.4.0" || t.oid == "2.5.21.9");
            let subclass_of = if t.is_some_and(|t| t.oid == "2.5.4.0") {
                schema
                    .object_class(String::from_utf8_lossy(a.value).trim())
                    .map(|c| c.id)
            } else {
                None
            };
            let key = if object_class {
                let mut k = Vec::new();
                let name = String::from_utf8_lossy(a.value);
                class_key(
                    schema.object_class(name.trim()).map(|c| c.oid.as_str()),
                    a.value,
                    &mut k,
                );
                k
            } else {
                let Some(k) = normalized(rule, a.value) else {
                    return UNDEFINED;
                };
                k
            };
            Kind::Equality {
                target,
                rule,
                key,
                object_class,
                subclass_of,
            }
        }
        FilterNode::GreaterOrEqual(a) | FilterNode::LessOrEqual(a) => {
            let greater_or_equal = matches!(node, FilterNode::GreaterOrEqual(_));
            let Some(target) = target(a.description, schema) else {
                return UNDEFINED;
            };
            let Some(rule) = schema
                .attribute_type_by_id(target.types[0])
                .and_then(|t| t.ordering)
            else {
                return UNDEFINED;
            };
            let Some(key) = normalized(rule, a.value) else {
                return UNDEFINED;
            };
            Kind::Ordering {
                target,
                rule,
                key,
                greater_or_equal,
            }
        }
        FilterNode::Substrings(s) => {
            let Some(target) = target(s.description, schema) else {
                return UNDEFINED;
            };
            let Some(rule) = schema
                .attribute_type_by_id(target.types[0])
                .and_then(|t| t.substring)
            else {
                return UNDEFINED;
            };
            let (mut initial, mut any, mut final_) = (None, Vec::new(), None);
            for part in s.substrings.iter() {
                let (value, position) = match part {
                    Substring::Initial(v) => (v, SubstringPosition::Initial),
                    Substring::Any(v) => (v, SubstringPosition::Any),
                    Substring::Final(v) => (v, SubstringPosition::Final),
                };
                let mut key = Vec::with_capacity(value.len());
                if rule.normalize_substring(value, position, &mut key).is_err() {
                    return UNDEFINED;
                }
                match position {
                    SubstringPosition::Initial => initial = Some(key),
                    SubstringPosition::Any => any.push(key),
                    SubstringPosition::Final => final_ = Some(key),
                }
            }
            Kind::Substrings {
                target,
                rule,
                initial,
                any,
                final_,
            }
        }
        FilterNode::Approx(a) => {
            let Some(target) = target(a.description, schema) else {
                return UNDEFINED;
            };
            let Some(rule) = schema
                .attribute_type_by_id(target.types[0])
                .and_then(|t| t.equality)
            else {
                return UNDEFINED;
            };
            if is_string_rule(rule) {
                let mut key = Vec::new();
                matching::approx_key(a.value, &mut key);
                Kind::Approx { target, key }
            } else {
                // RFC 4511 4.5.1.7.6: with no approximate rule, equality is used.
                let Some(key) = normalized(rule, a.value) else {
                    return UNDEFINED;
                };
                Kind::Equality {
                    target,
                    rule,
                    key,
                    object_class: false,
                    subclass_of: None,
                }
            }
        }
        FilterNode::Extensible(m) => {
            let target = match m.description {
                Some(d) => match target(d, schema) {
                    Some(t) => Some(t),
                    None => return UNDEFINED,
                },
                None => None,
            };
            let rule = match m.rule {
                Some(r) => match std::str::from_utf8(r).ok().and_then(matching::lookup) {
                    Some(rule) if rule.oid == matching::IN_CHAIN_OID => {
                        return in_chain(target, m.value, schema);
                    }
                    Some(rule) => rule,
                    // An unknown rule: RFC 4511 4.5.1.7.7 says Undefined.
                    None => return UNDEFINED,
                },
                None => match target
                    .as_ref()
                    .and_then(|t| schema.attribute_type_by_id(t.types[0]))
                    .and_then(|t| t.equality)
                {
                    Some(rule) => rule,
                    None => return UNDEFINED,
                },
            };
            if rule.usage == RuleUsage::Substring {
                return UNDEFINED;
            }
            // With a type, the rule must apply to its syntax (RFC 4511 4.5.1.7.7).
            if let Some(t) = target
                .as_ref()
                .and_then(|t| schema.attribute_type_by_id(t.types[0]))
            {
                if !rule_applies(rule, t) {
                    return UNDEFINED;
                }
            }
            let Some(key) = normalized(rule, m.value) else {
                return UNDEFINED;
            };
            Kind::Extensible {
                target,
                rule,
                key,
                dn_attributes: m.dn_attributes,
            }
        }
        FilterNode::Unknown { .. } | FilterNode::And(_) | FilterNode::Or(_) | FilterNode::Not(_) => UNDEFINED,
    }
}

/// The in-chain rule on `target`: on `memberOf` (or `transitiveMemberOf`), the entries
/// whose chain of nested groups holds the asserted group, which the server keeps in
/// `transitiveMemberOf`: an equality on that type. On `member` or `uniqueMember`, the
/// groups the asserted entry belongs to through nested groups: resolved by the server.
/// Any other attribute, or none: Undefined.
fn in_chain(target: Option<Target>, value: &[u8], schema: &Schema) -> Kind {
    let (Some(target), Some(chain)) = (target, schema.attribute_type("transitiveMemberOf")) else {
        return UNDEFINED;
    };
    let Some(asserted) = schema.attribute_type_by_id(target.types[0]) else {
        return UNDEFINED;
    };
    if asserted.has_name("memberOf") || asserted.id == chain.id {
        let Some(rule) = chain.equality else {
            return UNDEFINED;
        };
        let Some(key) = normalized(rule, value) else {
            return UNDEFINED;
        };
        return Kind::Equality {
            target: Target {
                types: schema.family(chain.id),
                options: target.options,
            },
            rule,
            key,
            object_class: false,
            subclass_of: None,
        };
    }
    if asserted.has_name("member") || asserted.has_name("uniqueMember") {
        return Kind::InChainOf {
            target,
            value: value.to_vec(),
        };
    }
    UNDEFINED
}

impl CompiledFilter {
    /// Resolves every `(member:1.2.840.113556.1.4.1941:=U)` of the filter: `groups_of`
    /// gives, for U's DN as asserted, the identifiers of the groups U belongs to through
    /// nested groups (none when U does not exist), the same identifiers the caller then
    /// hands to [`CompiledFilter::evaluate_entry`]. Each distinct value is resolved once.
    pub fn resolve_in_chain(&mut self, groups_of: &dyn Fn(&[u8]) -> Vec<u32>) {
        for i in 0..self.nodes.len() {
            let Kind::InChainOf { target, value } = &self.nodes[i].kind else {
                continue;
            };
            let ids = match self.in_chain_entries(value) {
                Some(known) => known.to_vec(),
                None => {
                    let mut ids = groups_of(value);
                    ids.sort_unstable();
                    ids.dedup();
                    ids
                }
            };
            self.nodes[i].kind = Kind::EntryIn {
                target: target.clone(),
                value: value.clone(),
                ids,
            };
        }
    }

    /// The identifiers a resolved in-chain assertion on a member attribute with the
    /// asserted value `value` found, sorted; `None` when the filter has none resolved.
    pub fn in_chain_entries(&self, value: &[u8]) -> Option<&[u32]> {
        self.nodes.iter().find_map(|n| match &n.kind {
            Kind::EntryIn { value: v, ids, .. } if v[..] == value[..] => Some(ids.as_slice()),
            _ => None,
        })
    }

    /// True when the filter holds an in-chain assertion on a member attribute, which
    /// [`CompiledFilter::resolve_in_chain`] must resolve before it is evaluated.
    pub fn has_in_chain_members(&self) -> bool {
        self.nodes
            .iter()
            .any(|n| matches!(n.kind, Kind::InChainOf { .. }))
    }
}

/// Rules over directory strings, for which approximate matching means something.
pub(super) fn is_string_rule(rule: &MatchingRule) -> bool {
    matches!(
        rule.name,
        "caseIgnoreMatch"
            | "caseExactMatch"
            | "caseIgnoreIA5Match"
            | "caseExactIA5Match"
            | "caseIgnoreListMatch"
    )
}

/// Whether an extensible match's rule can compare values of this attribute type: it is one
/// of the type's own rules, or its assertion syntax is the type's syntax.
pub(super) fn rule_applies(rule: &MatchingRule, t: &crate::schema::AttributeType) -> bool {
    [t.equality, t.ordering]
        .iter()
        .flatten()
        .any(|r| r.oid == rule.oid)
        || rule.syntax_oid == t.syntax.oid
}
