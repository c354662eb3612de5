//! Filters to RFC 4515 strings, for logs and tools, without recursion.

use std::fmt::{self, Write};

use super::{Filter, FilterNode, FilterSetIter, Substring};
use crate::limits::MAX_FILTER_DEPTH;

impl fmt::Display for Filter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One iterator per open and/or/not; validation bounds the depth.
        let empty = FilterSetIter { rest: &[] };
        let mut stack = [empty; MAX_FILTER_DEPTH + 1];
        let mut depth = 0usize;
        let mut next = Some(*self);
        loop {
            if let Some(filter) = next.take() {
                if let Some(children) = write_node(f, filter)? {
                    if depth == stack.len() {
                        return f.write_str("...)");
                    }
                    stack[depth] = children;
                    depth += 1;
                }
            }
            if depth == 0 {
                return Ok(());
            }
            match stack[depth - 1].next() {
                Some(child) => next = Some(child),
                None => {
                    f.write_char(')')?;
                    depth -= 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
            }
        }
    }
}

impl fmt::Debug for Filter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Filter({self})")
    }
}

/// Writes a leaf completely, or the opening of a list; returns the children of a list.
fn write_node<'a>(
    f: &mut fmt::Formatter<'_>,
    filter: Filter<'a>,
) -> Result<Option<FilterSetIter<'a>>, fmt::Error> {
    let ava = |f: &mut fmt::Formatter<'_>, op: &str, d: &[u8], v: &[u8]| {
        f.write_char('(')?;
        attr(f, d)?;
        f.write_str(op)?;
        value(f, v)?;
        f.write_char(')')
    };
    match filter.node() {
        FilterNode::And(set) => {
            f.write_str("(&")?;
            return Ok(Some(set.iter()));
        }
        FilterNode::Or(set) => {
            f.write_str("(|")?;
            return Ok(Some(set.iter()));
        }
        FilterNode::Not(inner) => {
            f.write_str("(!")?;
            return Ok(Some(FilterSetIter { rest: inner.as_ber() }));
        }
        FilterNode::Equality(a) => ava(f, "=", a.description, a.value)?,
        FilterNode::GreaterOrEqual(a) => ava(f, ">=", a.description, a.value)?,
        FilterNode::LessOrEqual(a) => ava(f, "<=", a.description, a.value)?,
        FilterNode::Approx(a) => ava(f, "~=", a.description, a.value)?,
        FilterNode::Present(d) => {
            f.write_char('(')?;
            attr(f, d)?;
            f.write_str("=*)")?;
        }
        FilterNode::Substrings(s) => {
            f.write_char('(')?;
            attr(f, s.description)?;
            f.write_char('=')?;
            // Only empty initial/final parts would print as `*`, which reads as a presence
            // test; `**` (one empty `any`) matches the same values and says substrings.
            let only_empty_ends = s
                .substrings
                .iter()
                .all(|p| matches!(p, Substring::Initial(b"") | Substring::Final(b"")));
            if only_empty_ends {
                f.write_str("**)")?;
                return Ok(None);
            }
            let mut wrote_star = false;
            for part in s.substrings.iter() {
                match part {
                    Substring::Initial(v) => {
                        value(f, v)?;
                        f.write_char('*')?;
                    }
                    Substring::Any(v) => {
                        if !wrote_star {
                            f.write_char('*')?;
                        }
                        value(f, v)?;
                        f.write_char('*')?;
                    }
                    Substring::Final(v) => {
                        if !wrote_star {
                            f.write_char('*')?;
                        }
                        value(f, v)?;
                    }
                }
                wrote_star = matches!(part, Substring::Initial(_) | Substring::Any(_));
            }
            f.write_char(')')?;
        }
        FilterNode::Extensible(m) => {
            f.write_char('(')?;
            if let Some(d) = m.description {
                attr(f, d)?;
            }
            if m.dn_attributes {
                f.write_str(":dn")?;
            }
            if let Some(r) = m.rule {
                f.write_char(':')?;
                attr(f, r)?;
            }
            f.write_str(":=")?;
            value(f, m.value)?;
            f.write_char(')')?;
        }
        FilterNode::Unknown { .. } => f.write_str("(?=undefined)")?,
    }
    Ok(None)
}

/// Attribute descriptions and rule names are written as they are when every octet is one
/// the RFC 4515 grammar allows there; any other octet is shown hex-escaped, so the text can
/// never read as a different filter (`~` in a description would otherwise turn a presence
/// test into an approximate match).
fn attr(f: &mut fmt::Formatter<'_>, d: &[u8]) -> fmt::Result {
    for &c in d {
        if super::parse::is_attr_char(c) {
            f.write_char(c as char)?;
        } else {
            write!(f, "\\{c:02x}")?;
        }
    }
    Ok(())
}

/// RFC 4515 value escaping: `*`, `(`, `)`, `\`, NUL and octets that are not UTF-8 become
/// `\HH`; valid UTF-8 is written as is.
fn value(f: &mut fmt::Formatter<'_>, v: &[u8]) -> fmt::Result {
    for chunk in v.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '*' | '(' | ')' | '\\' | '\0' => write!(f, "\\{:02x}", c as u32)?,
                _ => f.write_char(c)?,
            }
        }
        for &b in chunk.invalid() {
            write!(f, "\\{b:02x}")?;
        }
    }
    Ok(())
}
