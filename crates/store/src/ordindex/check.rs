//! Whole-tree walks: [`OrdTree::check_invariants`] and [`OrdTree::heap_bytes`]. Both
//! visit every node once with an explicit stack.

use std::cmp::Ordering;
use std::sync::Arc;

use super::packed::{cmp_pair, Packed};
use super::{Node, OrdTree, MAX_KEY_LEN};

/// A pair bound during the check: (key, ID).
type PairBound<'a> = Option<(&'a [u8], u32)>;

/// A node to check, with what its parent says about it.
struct Frame<'a> {
    /// The node.
    node: &'a Node,
    /// Its depth (0 for the root).
    depth: usize,
    /// Every pair under it must be at or above this.
    lower: PairBound<'a>,
    /// Every pair under it must be below this.
    upper: PairBound<'a>,
}

/// Checks that the pairs of `run` are strictly ascending and lie in `[lower, upper)`.
fn check_run(run: &Packed, lower: PairBound<'_>, upper: PairBound<'_>) -> Result<(), String> {
    for i in 0..run.len() {
        let (k, id) = run.pair(i);
        if let Some(prev) = i.checked_sub(1) {
            let (pk, pid) = run.pair(prev);
            if cmp_pair(pk, pid, k, id) != Ordering::Less {
                return Err(format!("pair {i} ({k:?}, {id}) is not above the pair before it"));
            }
        }
        if let Some((lk, lid)) = lower {
            if cmp_pair(k, id, lk, lid) == Ordering::Less {
                return Err(format!(
                    "pair {i} ({k:?}, {id}) is below the lower bound ({lk:?}, {lid})"
                ));
            }
        }
        if let Some((uk, uid)) = upper {
            if cmp_pair(k, id, uk, uid) != Ordering::Less {
                return Err(format!(
                    "pair {i} ({k:?}, {id}) is not below the upper bound ({uk:?}, {uid})"
                ));
            }
        }
    }
    Ok(())
}

impl<const LEAF: usize, const FANOUT: usize> OrdTree<LEAF, FANOUT> {
    /// Verifies the structure, for tests and diagnostics: invariants 1 to 4 of the module
    /// documentation, that is
    /// - each node's packed buffers are consistent and its keys at most [`MAX_KEY_LEN`];
    /// - pairs and separators strictly ascend within each node;
    /// - separators are correct: every pair under child `i` lies in `[sep(i - 1), sep(i))`
    ///   within the bounds the ancestors set;
    /// - node fill: leaves (but the root) hold `LEAF / 2 ..= LEAF` pairs, inner nodes have
    ///   one more child than separators and (but the root) `FANOUT / 2 ..= FANOUT` children,
    ///   an inner root at least 2;
    /// - every leaf is at depth [`height`](Self::height), and the leaves hold
    ///   [`len`](Self::len) pairs.
    ///
    /// Returns the first violation found, described with the node's depth.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut stack = vec![Frame {
            node: &self.root,
            depth: 0,
            lower: None,
            upper: None,
        }];
        let mut pairs = 0usize;
        while let Some(Frame {
            node,
            depth,
            lower,
            upper,
        }) = stack.pop()
        {
            let at = |what: &str, e: String| format!("{what} at depth {depth}: {e}");
            match node {
                Node::Leaf(leaf) => {
                    leaf.check(MAX_KEY_LEN).map_err(|e| at("leaf", e))?;
                    check_run(leaf, lower, upper).map_err(|e| at("leaf", e))?;
                    if depth != self.height {
                        return Err(at(
                            "leaf",
                            format!("leaf depth differs from height {}", self.height),
                        ));
                    }
                    let n = leaf.len();
                    if n > LEAF || (depth > 0 && n < Self::LEAF_MIN) {
                        return Err(at(
                            "leaf",
                            format!("{n} pairs, outside {}..={LEAF}", Self::LEAF_MIN),
                        ));
                    }
                    pairs += n;
                }
                Node::Inner(inner) => {
                    inner.seps.check(MAX_KEY_LEN).map_err(|e| at("inner node", e))?;
                    check_run(&inner.seps, lower, upper).map_err(|e| at("inner node", e))?;
                    if depth >= self.height {
                        return Err(at(
                            "inner node",
                            format!("not above the leaf level {}", self.height),
                        ));
                    }
                    let n = inner.children.len();
                    if inner.seps.len() + 1 != n {
                        let e = format!("{} separators for {n} children", inner.seps.len());
                        return Err(at("inner node", e));
                    }
                    let min = if depth == 0 { 2 } else { Self::FANOUT_MIN };
                    if n > FANOUT || n < min {
                        return Err(at(
                            "inner node",
                            format!("{n} children, outside {min}..={FANOUT}"),
                        ));
                    }
                    for (i, child) in inner.children.iter().enumerate() {
                        let lower = match i.checked_sub(1) {
                            Some(p) => Some(inner.seps.pair(p)),
                            None => lower,
                        };
                        let upper = if i + 1 < n {
                            Some(inner.seps.pair(i))
                        } else {
                            upper
                        };
                        stack.push(Frame {
                            node: child,
                            depth: depth + 1,
                            lower,
                            upper,
                        });
                    }
                }
            }
        }
        if pairs != self.len {
            return Err(format!("leaves hold {pairs} pairs, length says {}", self.len));
        }
        Ok(())
    }

    /// Octets on the heap reachable from this version: every node (its `Arc` allocation
    /// and its buffers' capacity). Nodes shared with other versions are counted in each.
    pub fn heap_bytes(&self) -> usize {
        // The reference counts that `Arc` allocates alongside the node.
        const ARC_COUNTS: usize = 2 * std::mem::size_of::<usize>();
        let mut total = 0;
        let mut stack: Vec<&Node> = vec![&self.root];
        while let Some(node) = stack.pop() {
            total += ARC_COUNTS + std::mem::size_of::<Node>();
            match node {
                Node::Leaf(leaf) => total += leaf.heap_bytes(),
                Node::Inner(inner) => {
                    total += inner.seps.heap_bytes();
                    total += inner.children.capacity() * std::mem::size_of::<Arc<Node>>();
                    stack.extend(inner.children.iter().map(|c| &**c));
                }
            }
        }
        total
    }
}
