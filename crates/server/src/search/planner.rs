//! The planner proper: a filter, a version and the schema in, a [`Plan`] out.
//!
//! Which index answers which filter item (the leaves of step 1 in the module above):
//! - `(a=v)`: the equality index of `a` and of every subtype of `a` (a filter on `name`
//!   matches `cn` and `sn` values), united. The assertion value is keyed by the rule the
//!   filter check uses, the equality rule of `a`, so each subtype must have that same rule;
//!   a subtype without an equality index, or with another rule, makes the item `All`.
//!   `objectClass`-like types compare class names by class (`person` equals `2.5.6.6`, and
//!   an `objectClass` assertion matches every subclass), so the keys of the OID and of each
//!   name of the class and of its subclasses are all looked up;
//! - `(a=*)`: the presence index of `a` and of its subtypes, united; `(objectClass=*)` holds
//!   for every entry, so it is `All` (the scope is the answer);
//! - substrings, `>=`, `<=`: the substring or ordering index of `a` and of its subtypes under
//!   the same rule, united; an index that cannot answer (pieces shorter than a gram) makes
//!   the item `All`;
//! - approximate and extensible matches: `All` (no index keeps their keys);
//! - an attribute description with options (`cn;lang-fr`) has the candidates of its type:
//!   options only narrow the values the filter check looks at.
//!
//! The planner mirrors how the filter check ([`larch_model::filter::CompiledFilter`])
//! resolves descriptions and rules, so that a leaf it turns into the empty set is one that
//! check can never find TRUE.
//!
//! Soundness also rests on the store indexing every value the filter check can match.
//! Two cases where it does not are open: an ordering key longer than
//! `larch_store::index::MAX_ORDERING_KEY` is left out of the ordering index, and an
//! `objectClass` value with surrounding spaces (which the entry check accepts, as it trims
//! class names) is refused by `objectIdentifierMatch` and so not in the equality index.
//! Entries matched only through such values are not candidates.

use std::fmt;

use larch_model::entry::split_description;
use larch_model::filter::CompiledFilter;
use larch_model::matching::{self, MatchingRule, IN_CHAIN_OID};
use larch_model::schema::{AttributeType, ObjectClass, Schema};
use larch_proto::limits::MAX_FILTER_DEPTH;
use larch_proto::{
    AttributeValueAssertion, Filter, FilterNode, FilterSetIter, MatchingRuleAssertion, Substring,
    SubstringFilter,
};
use larch_store::idset::IdSet;
use larch_store::index::AttrIndex;
use larch_store::Version;

use crate::groups::chain::groups_of;
use crate::groups::GroupSchema;

/// The longest plan description kept, in octets: descriptions go to logs, and a filter of
/// thousands of items must not make a log line of thousands of items. Longer descriptions
/// are cut and end with `...`.
pub const MAX_DESCRIPTION_LEN: usize = 256;

/// Most classes an `objectClass` equality looks up in the index (the class and its
/// subclasses); above it, a class as general as `top` narrows nothing and the scope is
/// scanned.
pub const MAX_CLASS_SPELLINGS: usize = 64;

/// OID of `objectClass`.
const OBJECT_CLASS: &str = "2.5.4.0";
/// OID of `structuralObjectClass`, whose values are class names too.
const STRUCTURAL_OBJECT_CLASS: &str = "2.5.21.9";

/// The entries a search must check against its filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Candidates {
    /// The indexes cannot narrow the search: every entry in the scope is a candidate.
    All,
    /// Only these entries can match (they may lie outside the scope).
    Set(IdSet),
}

impl Candidates {
    /// True for [`Candidates::All`].
    pub fn is_all(&self) -> bool {
        matches!(self, Candidates::All)
    }

    /// True when `id` is a candidate (always, for [`Candidates::All`]).
    pub fn contains(&self, id: u32) -> bool {
        match self {
            Candidates::All => true,
            Candidates::Set(s) => s.contains(id),
        }
    }

    /// The set, unless the plan is [`Candidates::All`].
    pub fn as_set(&self) -> Option<&IdSet> {
        match self {
            Candidates::All => None,
            Candidates::Set(s) => Some(s),
        }
    }
}

/// A search plan: the candidates and a short description for logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    candidates: Candidates,
    description: String,
}

impl Plan {
    /// The candidates.
    pub fn candidates(&self) -> &Candidates {
        &self.candidates
    }

    /// The candidates, by value.
    pub fn into_candidates(self) -> Candidates {
        self.candidates
    }

    /// How the candidates were found, e.g. `eq(uid) & pres(mail)`, `sub(cn) | eq(mail)`,
    /// `scan` (no index helps) or `none` (nothing can match). At most
    /// [`MAX_DESCRIPTION_LEN`] octets and `...`.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// True when the search does not scan its scope: the candidates came from indexes, or
    /// the filter can match nothing. False means the search is unindexed.
    pub fn is_indexed(&self) -> bool {
        !self.candidates.is_all()
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.description)
    }
}

/// The plan of one filter item or list, while the plan is being built.
#[derive(Debug)]
struct Part {
    candidates: Candidates,
    text: String,
    /// Made of several parts joined by `&` or `|` (so it needs parentheses inside another).
    composite: bool,
}

impl Part {
    fn scan() -> Part {
        Part {
            candidates: Candidates::All,
            text: "scan".to_string(),
            composite: false,
        }
    }

    fn none() -> Part {
        Part {
            candidates: Candidates::Set(IdSet::new()),
            text: "none".to_string(),
            composite: false,
        }
    }

    fn set(set: IdSet, text: String) -> Part {
        Part {
            candidates: Candidates::Set(set),
            text,
            composite: false,
        }
    }

    fn is_empty_set(&self) -> bool {
        matches!(&self.candidates, Candidates::Set(s) if s.is_empty())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
}

/// An `and` or `or` whose children are being planned.
struct Frame<'a> {
    op: Op,
    children: FilterSetIter<'a>,
    /// The children that gave a set (for a decided frame: the deciding child only).
    sets: Vec<Part>,
    /// The result no longer depends on the remaining children: an `and` met an empty set,
    /// an `or` met `All`.
    decided: bool,
}

impl<'a> Frame<'a> {
    fn new(op: Op, children: FilterSetIter<'a>) -> Frame<'a> {
        Frame {
            op,
            children,
            sets: Vec::new(),
            decided: false,
        }
    }

    fn push(&mut self, part: Part) {
        match (self.op, &part.candidates) {
            // `All` does not narrow an `and`.
            (Op::And, Candidates::All) => {}
            (Op::And, Candidates::Set(_)) if part.is_empty_set() => {
                self.sets = vec![part];
                self.decided = true;
            }
            (Op::Or, Candidates::All) => {
                self.sets.clear();
                self.decided = true;
            }
            (_, Candidates::Set(_)) => self.sets.push(part),
        }
    }

    fn finish(self) -> Part {
        let Frame {
            op,
            mut sets,
            decided,
            ..
        } = self;
        match op {
            Op::And if decided => sets.pop().unwrap_or_else(Part::none),
            Op::Or if decided => Part::scan(),
            // `(&)` is absolute true, and an `and` of unindexed items scans.
            Op::And if sets.is_empty() => Part::scan(),
            // `(|)` is absolute false.
            Op::Or if sets.is_empty() => Part::none(),
            _ if sets.len() == 1 => sets.pop().unwrap_or_else(Part::none),
            Op::And => {
                sets.sort_by_key(|p| p.candidates.as_set().map_or(usize::MAX, IdSet::len));
                let text = join(&sets, " & ");
                let mut acc: Option<IdSet> = None;
                for p in &sets {
                    let Some(s) = p.candidates.as_set() else { continue };
                    let next = match acc {
                        None => s.clone(),
                        Some(a) => a.intersection(s),
                    };
                    let empty = next.is_empty();
                    acc = Some(next);
                    if empty {
                        break;
                    }
                }
                Part {
                    candidates: Candidates::Set(acc.unwrap_or_default()),
                    text,
                    composite: true,
                }
            }
            Op::Or => {
                let text = join(&sets, " | ");
                let mut acc = IdSet::new();
                for s in sets.iter().filter_map(|p| p.candidates.as_set()) {
                    acc = acc.union(s);
                }
                Part {
                    candidates: Candidates::Set(acc),
                    text,
                    composite: true,
                }
            }
        }
    }
}

/// Joins the parts' descriptions, parenthesizing composite ones, within the length limit.
fn join(parts: &[Part], sep: &str) -> String {
    let mut out = String::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        if p.composite {
            out.push('(');
            out.push_str(&p.text);
            out.push(')');
        } else {
            out.push_str(&p.text);
        }
        if out.len() > MAX_DESCRIPTION_LEN {
            break;
        }
    }
    limit(out)
}

/// Cuts a description to [`MAX_DESCRIPTION_LEN`] octets (at a character boundary) and
/// marks the cut with `...`.
/// A leaf's description, `kind(attribute)`: built by hand, since `format!` was 400
/// instructions per search, 2% of an exact search's (callgrind).
fn described(kind: &str, attribute: &str) -> String {
    let mut text = String::with_capacity(kind.len() + attribute.len() + 2);
    text.push_str(kind);
    text.push('(');
    text.push_str(attribute);
    text.push(')');
    text
}

fn limit(mut text: String) -> String {
    if text.len() <= MAX_DESCRIPTION_LEN {
        return text;
    }
    let mut end = MAX_DESCRIPTION_LEN.saturating_sub(3);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str("...");
    text
}

/// Plans a search with `filter` over `version`: the candidates it must check and a
/// description of how they were found.
///
/// The candidates contain every entry for which `filter` evaluates to TRUE under `schema`
/// (which must be the schema the version's indexes were built with).
pub fn plan(filter: Filter<'_>, version: &Version, schema: &Schema) -> Plan {
    plan_with(filter, None, version, schema)
}

/// [`plan`], taking the groups of each in-chain assertion on a member attribute from
/// `compiled` (the same filter, compiled and resolved against `version` by
/// `crate::groups::chain::resolve_in_chain`) instead of resolving them again.
pub fn plan_compiled(
    filter: Filter<'_>,
    compiled: &CompiledFilter,
    version: &Version,
    schema: &Schema,
) -> Plan {
    plan_with(filter, Some(compiled), version, schema)
}

fn plan_with(
    filter: Filter<'_>,
    resolved: Option<&CompiledFilter>,
    version: &Version,
    schema: &Schema,
) -> Plan {
    let ctx = Ctx {
        version,
        schema,
        resolved,
    };
    // Open lists, innermost last; the filter was validated, so at most MAX_FILTER_DEPTH.
    let mut stack: Vec<Frame<'_>> = Vec::with_capacity(8);
    let mut next = Some(filter);
    loop {
        let mut result = None;
        if let Some(f) = next.take() {
            match f.node() {
                FilterNode::And(set) if stack.len() < MAX_FILTER_DEPTH => {
                    stack.push(Frame::new(Op::And, set.iter()));
                }
                FilterNode::Or(set) if stack.len() < MAX_FILTER_DEPTH => {
                    stack.push(Frame::new(Op::Or, set.iter()));
                }
                // Deeper than a valid filter can be: scanning is always sound.
                FilterNode::And(_) | FilterNode::Or(_) => result = Some(Part::scan()),
                // Never a complement (see the module documentation).
                FilterNode::Not(_) => result = Some(Part::scan()),
                leaf => result = Some(ctx.leaf(leaf)),
            }
        }
        // Fold finished parts upwards until some list has another child to plan.
        loop {
            if let Some(part) = result.take() {
                match stack.last_mut() {
                    Some(frame) => frame.push(part),
                    None => {
                        return Plan {
                            candidates: part.candidates,
                            description: limit(part.text),
                        }
                    }
                }
            }
            let Some(frame) = stack.last_mut() else {
                // Unreachable: a list was just opened or a part just folded into one.
                return Plan {
                    candidates: Candidates::All,
                    description: "scan".to_string(),
                };
            };
            if !frame.decided {
                if let Some(child) = frame.children.next() {
                    next = Some(child);
                    break;
                }
            }
            result = stack.pop().map(Frame::finish);
        }
    }
}

/// What leaf planning looks at.
struct Ctx<'v> {
    version: &'v Version,
    schema: &'v Schema,
    /// The filter compiled, its in-chain assertions resolved.
    resolved: Option<&'v CompiledFilter>,
}

impl Ctx<'_> {
    fn leaf(&self, node: FilterNode<'_>) -> Part {
        match node {
            FilterNode::Equality(a) => self.equality(a),
            FilterNode::Present(d) => self.presence(d),
            FilterNode::Substrings(s) => self.substrings(s),
            FilterNode::GreaterOrEqual(a) => self.ordering(a, true),
            FilterNode::LessOrEqual(a) => self.ordering(a, false),
            FilterNode::Approx(a) => match self.asserted_type(a.description) {
                // As the filter check: approximate matching falls back to equality, and
                // without an equality rule the item is Undefined.
                Some(t) if t.equality.is_some() => Part::scan(),
                _ => Part::none(),
            },
            FilterNode::Extensible(m) => self.extensible(m),
            // An unknown choice evaluates to Undefined, never TRUE.
            FilterNode::Unknown { .. } => Part::none(),
            FilterNode::And(_) | FilterNode::Or(_) | FilterNode::Not(_) => Part::scan(),
        }
    }

    /// The type an attribute description names (options dropped: they only narrow).
    fn asserted_type(&self, description: &[u8]) -> Option<&AttributeType> {
        let (ty, _options) = split_description(description)?;
        self.schema.attribute_type(ty)
    }

    /// The type and every subtype of it.
    fn family<'s>(&'s self, t: &AttributeType) -> impl Iterator<Item = &'s AttributeType> + 's {
        let schema: &'s Schema = self.schema;
        schema
            .family(t.id)
            .into_iter()
            .filter_map(move |id| schema.attribute_type_by_id(id))
    }

    /// Unites, over `t` and its subtypes, the sets `lookup` finds in each type's index;
    /// `All` as soon as one type has no index or `lookup` cannot answer for it.
    fn union_over(
        &self,
        t: &AttributeType,
        text: String,
        mut lookup: impl FnMut(&AttrIndex, &AttributeType) -> Option<IdSet>,
    ) -> Part {
        let mut acc = IdSet::new();
        for ty in self.family(t) {
            let Some(index) = self.version.index(ty.id) else {
                return Part::scan();
            };
            let Some(set) = lookup(index, ty) else {
                return Part::scan();
            };
            acc = if acc.is_empty() { set } else { acc.union(&set) };
        }
        Part::set(acc, text)
    }

    /// Extensible matches scan, but for the in-chain rule: on `memberOf`, the
    /// `transitiveMemberOf` index as an equality; on `member` or `uniqueMember`, the groups
    /// in the asserted entry's `transitiveMemberOf` (`crate::groups::chain`).
    fn extensible(&self, m: MatchingRuleAssertion<'_>) -> Part {
        let in_chain = m
            .rule
            .and_then(|r| std::str::from_utf8(r).ok())
            .and_then(matching::lookup)
            .is_some_and(|r| r.oid == IN_CHAIN_OID);
        if !in_chain {
            return Part::scan();
        }
        let Some(t) = m.description.and_then(|d| self.asserted_type(d)) else {
            return Part::none();
        };
        let member = t.has_name("member") || t.has_name("uniqueMember");
        if let Some(ids) = self
            .resolved
            .filter(|_| member)
            .and_then(|f| f.in_chain_entries(m.value))
        {
            return Part::set(IdSet::from_sorted(ids), described("in-chain", t.name()));
        }
        let Some(groups) = GroupSchema::new(self.schema) else {
            return Part::none();
        };
        let chain = groups.transitive;
        if t.has_name("memberOf") || t.id == chain.ty {
            let Some(chain_type) = self.schema.attribute_type_by_id(chain.ty) else {
                return Part::none();
            };
            let keyer = self.version.keyer();
            return self.union_over(chain_type, "in-chain(memberOf)".into(), |index, ty| {
                index.equality(same_rule(ty.equality, chain.rule)?, m.value, keyer)
            });
        }
        if member {
            let ids = groups_of(self.version, chain, m.value);
            return Part::set(IdSet::from_sorted(&ids), described("in-chain", t.name()));
        }
        Part::none()
    }

    fn equality(&self, a: AttributeValueAssertion<'_>) -> Part {
        let Some(t) = self.asserted_type(a.description) else {
            return Part::none();
        };
        let Some(rule) = t.equality else {
            return Part::none();
        };
        let keyer = self.version.keyer();
        let text = described("eq", t.name());
        if t.oid == OBJECT_CLASS || t.oid == STRUCTURAL_OBJECT_CLASS {
            // The filter check compares classes, so every spelling of the class matches.
            let name = String::from_utf8_lossy(a.value);
            let Some(class) = self.schema.object_class(name.trim()) else {
                return Part::scan();
            };
            // `objectClass` also matches the subclasses (the filter check's subclass rule), so
            // their spellings are looked up too; `structuralObjectClass` only the class.
            let classes: Vec<&ObjectClass> = if t.oid == OBJECT_CLASS {
                self.schema
                    .object_classes()
                    .filter(|c| c.id == class.id || c.is_subclass_of(class.id))
                    .collect()
            } else {
                vec![class]
            };
            if classes.len() > MAX_CLASS_SPELLINGS {
                return Part::scan();
            }
            let spellings: Vec<&str> = classes
                .iter()
                .flat_map(|c| std::iter::once(c.oid.as_str()).chain(c.names.iter().map(String::as_str)))
                .collect();
            return self.union_over(t, text, |index, ty| {
                let ty_rule = same_rule(ty.equality, rule)?;
                let mut acc = IdSet::new();
                for s in &spellings {
                    acc = acc.union(&index.equality(ty_rule, s.as_bytes(), keyer)?);
                }
                Some(acc)
            });
        }
        self.union_over(t, text, |index, ty| {
            index.equality(same_rule(ty.equality, rule)?, a.value, keyer)
        })
    }

    fn presence(&self, description: &[u8]) -> Part {
        let Some(t) = self.asserted_type(description) else {
            return Part::none();
        };
        if t.oid == OBJECT_CLASS {
            return Part::scan();
        }
        self.union_over(t, described("pres", t.name()), |index, _| {
            index.presence().cloned()
        })
    }

    fn substrings(&self, s: SubstringFilter<'_>) -> Part {
        let Some(t) = self.asserted_type(s.description) else {
            return Part::none();
        };
        let Some(rule) = t.substring else {
            return Part::none();
        };
        let (mut initial, mut any, mut final_) = (None, Vec::new(), None);
        for piece in s.substrings.iter() {
            match piece {
                Substring::Initial(v) => initial = Some(v),
                Substring::Any(v) => any.push(v),
                Substring::Final(v) => final_ = Some(v),
            }
        }
        let keyer = self.version.keyer();
        self.union_over(t, described("sub", t.name()), |index, ty| {
            index.substrings(same_rule(ty.substring, rule)?, initial, &any, final_, keyer)
        })
    }

    fn ordering(&self, a: AttributeValueAssertion<'_>, greater: bool) -> Part {
        let Some(t) = self.asserted_type(a.description) else {
            return Part::none();
        };
        let Some(rule) = t.ordering else {
            return Part::none();
        };
        let text = described(if greater { "ge" } else { "le" }, t.name());
        self.union_over(t, text, |index, ty| {
            index.ordering(same_rule(ty.ordering, rule)?, a.value, greater)
        })
    }
}

/// A subtype's rule when it is the asserted type's rule (the one the filter check
/// applies to the subtype's values too), else `None`.
fn same_rule(ty_rule: Option<&'static MatchingRule>, rule: &MatchingRule) -> Option<&'static MatchingRule> {
    ty_rule.filter(|r| r.oid == rule.oid)
}
