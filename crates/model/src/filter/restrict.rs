//! Which attribute types a compiled filter reads, and a copy of it that treats some of them
//! as unreadable.
//!
//! A server that controls access evaluates a filter as if the attributes the requester may
//! not search were not there to be tested: each assertion on such a type is Undefined
//! (what OpenLDAP's `test_filter` does when `access_allowed(..., ACL_SEARCH)` fails). This
//! module knows nothing of access rules; it is given the types to hide.
//!
//! How:
//! 1. a leaf *reads* the types of its target (the asserted type and its subtypes); an
//!    extensible match without a type reads every type its rule applies to; constants read
//!    nothing;
//! 2. [`CompiledFilter::hide`] first scans the leaves (no allocation) and returns `None`
//!    when no leaf reads a hidden type; otherwise it copies the nodes and turns each such
//!    leaf into the constant Undefined, keeping every subtree size, so the copy evaluates
//!    like the original wherever no hidden type is involved.
//!
//! Soundness for index planning: Undefined is below TRUE and FALSE in information order and
//! `and`, `or`, `not` are monotonic in it, so an entry for which the copy is TRUE makes the
//! original TRUE too; candidates planned from the original stay a superset.

use super::compile::{rule_applies, CompiledFilter, Kind, Node, Target};
use super::Tri;
use crate::schema::{AttributeTypeId, Schema};

impl CompiledFilter {
    /// Every attribute type a leaf of the filter reads, each once, in ascending ID order.
    pub fn tested_types(&self, schema: &Schema) -> Vec<AttributeTypeId> {
        let mut out: Vec<AttributeTypeId> = Vec::new();
        for node in &self.nodes {
            reads(&node.kind, schema, &mut |t| {
                out.push(t);
                false
            });
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// True when some leaf reads a type for which `pred` holds.
    pub fn reads_any(&self, pred: &dyn Fn(AttributeTypeId) -> bool, schema: &Schema) -> bool {
        self.nodes
            .iter()
            .any(|n| reads(&n.kind, schema, &mut |t| pred(t)))
    }

    /// A copy in which every leaf that reads a type `hidden` holds is the constant
    /// Undefined; `None` when no leaf reads one (the filter is usable as it is).
    pub fn hide(&self, hidden: &dyn Fn(AttributeTypeId) -> bool, schema: &Schema) -> Option<CompiledFilter> {
        if !self.reads_any(hidden, schema) {
            return None;
        }
        let nodes = self
            .nodes
            .iter()
            .map(|n| {
                if reads(&n.kind, schema, &mut |t| hidden(t)) {
                    Node {
                        kind: Kind::Constant(Tri::Undefined),
                        size: n.size,
                    }
                } else {
                    n.clone()
                }
            })
            .collect();
        Some(CompiledFilter { nodes })
    }
}

/// Calls `f` with each type leaf `kind` reads until `f` returns true; returns whether it
/// did. List nodes and constants read nothing themselves.
fn reads(kind: &Kind, schema: &Schema, f: &mut dyn FnMut(AttributeTypeId) -> bool) -> bool {
    let target: &Target = match kind {
        Kind::And | Kind::Or | Kind::Not | Kind::Constant(_) => return false,
        Kind::Present(target)
        | Kind::Equality { target, .. }
        | Kind::Ordering { target, .. }
        | Kind::Substrings { target, .. }
        | Kind::Approx { target, .. }
        | Kind::InChainOf { target, .. }
        | Kind::EntryIn { target, .. } => target,
        Kind::Extensible {
            target: Some(target), ..
        } => target,
        Kind::Extensible {
            target: None, rule, ..
        } => {
            return schema
                .attribute_types()
                .filter(|t| rule_applies(rule, t))
                .any(|t| f(t.id));
        }
    };
    target.types.iter().any(|&t| f(t))
}
