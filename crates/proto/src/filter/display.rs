//! Filters to RFC 4515 strings, for logs and tools, without recursion.
//!
//! [`Filter::write_text`] appends the text to a byte buffer in runs (a value or an
//! attribute description is one copy unless it holds an octet to escape): the access log
//! writes every search's filter this way. `Display` gives the same text.

use std::fmt;

use super::{Filter, FilterNode, FilterSetIter, Substring};
use crate::limits::MAX_FILTER_DEPTH;

impl Filter<'_> {
    /// Appends the filter as an RFC 4515 string, e.g. `(&(objectClass=person)(cn=Al*))`.
    /// The text is UTF-8: octets that are not are written escaped.
    pub fn write_text(&self, out: &mut Vec<u8>) {
        // One iterator per open and/or/not; validation bounds the depth.
        let empty = FilterSetIter { rest: &[] };
        let mut stack = [empty; MAX_FILTER_DEPTH + 1];
        let mut depth = 0usize;
        let mut next = Some(*self);
        loop {
            if let Some(filter) = next.take() {
                if let Some(children) = write_node(out, filter) {
                    if depth == stack.len() {
                        out.extend_from_slice(b"...)");
                        return;
                    }
                    stack[depth] = children;
                    depth += 1;
                }
            }
            if depth == 0 {
                return;
            }
            match stack[depth - 1].next() {
                Some(child) => next = Some(child),
                None => {
                    out.push(b')');
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
            }
        }
    }
}

impl fmt::Display for Filter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = Vec::new();
        self.write_text(&mut text);
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Filter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Filter({self})")
    }
}

/// Writes a leaf completely, or the opening of a list; returns the children of a list.
fn write_node<'a>(out: &mut Vec<u8>, filter: Filter<'a>) -> Option<FilterSetIter<'a>> {
    let ava = |out: &mut Vec<u8>, op: &[u8], d: &[u8], v: &[u8]| {
        out.push(b'(');
        attr(out, d);
        out.extend_from_slice(op);
        value(out, v);
        out.push(b')');
    };
    match filter.node() {
        FilterNode::And(set) => {
            out.extend_from_slice(b"(&");
            return Some(set.iter());
        }
        FilterNode::Or(set) => {
            out.extend_from_slice(b"(|");
            return Some(set.iter());
        }
        FilterNode::Not(inner) => {
            out.extend_from_slice(b"(!");
            return Some(FilterSetIter { rest: inner.as_ber() });
        }
        FilterNode::Equality(a) => ava(out, b"=", a.description, a.value),
        FilterNode::GreaterOrEqual(a) => ava(out, b">=", a.description, a.value),
        FilterNode::LessOrEqual(a) => ava(out, b"<=", a.description, a.value),
        FilterNode::Approx(a) => ava(out, b"~=", a.description, a.value),
        FilterNode::Present(d) => {
            out.push(b'(');
            attr(out, d);
            out.extend_from_slice(b"=*)");
        }
        FilterNode::Substrings(s) => {
            out.push(b'(');
            attr(out, s.description);
            out.push(b'=');
            // Only empty initial/final parts would print as `*`, which reads as a presence
            // test; `**` (one empty `any`) matches the same values and says substrings.
            let only_empty_ends = s
                .substrings
                .iter()
                .all(|p| matches!(p, Substring::Initial(b"") | Substring::Final(b"")));
            if only_empty_ends {
                out.extend_from_slice(b"**)");
                return None;
            }
            let mut wrote_star = false;
            for part in s.substrings.iter() {
                match part {
                    Substring::Initial(v) => {
                        value(out, v);
                        out.push(b'*');
                    }
                    Substring::Any(v) => {
                        if !wrote_star {
                            out.push(b'*');
                        }
                        value(out, v);
                        out.push(b'*');
                    }
                    Substring::Final(v) => {
                        if !wrote_star {
                            out.push(b'*');
                        }
                        value(out, v);
                    }
                }
                wrote_star = matches!(part, Substring::Initial(_) | Substring::Any(_));
            }
            out.push(b')');
        }
        FilterNode::Extensible(m) => {
            out.push(b'(');
            if let Some(d) = m.description {
                attr(out, d);
            }
            if m.dn_attributes {
                out.extend_from_slice(b":dn");
            }
            if let Some(r) = m.rule {
                out.push(b':');
                attr(out, r);
            }
            out.extend_from_slice(b":=");
            value(out, m.value);
            out.push(b')');
        }
        FilterNode::Unknown { .. } => out.extend_from_slice(b"(?=undefined)"),
    }
    None
}

/// Attribute descriptions and rule names are written as they are when every octet is one
/// the RFC 4515 grammar allows there; any other octet is shown hex-escaped, so the text can
/// never read as a different filter (`~` in a description would otherwise turn a presence
/// test into an approximate match).
fn attr(out: &mut Vec<u8>, d: &[u8]) {
    write_escaping(out, d, |c| !super::parse::is_attr_char(c));
}

/// RFC 4515 value escaping: `*`, `(`, `)`, `\`, NUL and octets that are not UTF-8 become
/// `\HH`; valid UTF-8 is written as is.
fn value(out: &mut Vec<u8>, v: &[u8]) {
    let special = |c: u8| matches!(c, b'*' | b'(' | b')' | b'\\' | b'\0');
    if v.iter().all(|&c| c.is_ascii() && !special(c)) {
        out.extend_from_slice(v);
        return;
    }
    for chunk in v.utf8_chunks() {
        // Every octet to escape is ASCII, so escaping octets of valid UTF-8 never splits
        // a character.
        write_escaping(out, chunk.valid().as_bytes(), special);
        for &b in chunk.invalid() {
            push_hex(out, b);
        }
    }
}

/// Appends `s`, the octets `escaped` accepts as `\HH`, the runs between them in one copy
/// each.
fn write_escaping(out: &mut Vec<u8>, s: &[u8], escaped: impl Fn(u8) -> bool) {
    let mut from = 0;
    for (i, &c) in s.iter().enumerate() {
        if escaped(c) {
            out.extend_from_slice(&s[from..i]);
            push_hex(out, c);
            from = i + 1;
        }
    }
    out.extend_from_slice(&s[from..]);
}

fn push_hex(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(&[b'\\', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]);
}

#[cfg(test)]
mod tests {
    use crate::filter::FilterBuilder;
    use crate::OwnedFilter;

    fn text(f: &OwnedFilter) -> String {
        let mut out = Vec::new();
        f.as_filter().write_text(&mut out);
        let shown = f.as_filter().to_string();
        assert_eq!(out, shown.as_bytes(), "write_text and Display agree");
        shown
    }

    #[test]
    fn values_are_escaped_in_runs_and_invalid_utf8_as_hex() {
        let f = OwnedFilter::parse("(&(cn=a\\2ab\\28c\\29\\5c\\00é)(sn=plain)(!(mail=*)))").unwrap();
        assert_eq!(text(&f), "(&(cn=a\\2ab\\28c\\29\\5c\\00é)(sn=plain)(!(mail=*)))");
        let mut b = FilterBuilder::new();
        b.equality(b"cn", b"\xff\xfeok\x01");
        assert_eq!(text(&b.finish().unwrap()), "(cn=\\ff\\feok\x01)");
    }

    #[test]
    fn substrings_extensible_and_odd_descriptions() {
        let f = OwnedFilter::parse("(|(cn=ab*c\\2a*d)(cn:dn:caseExactMatch:=x))").unwrap();
        assert_eq!(text(&f), "(|(cn=ab*c\\2a*d)(cn:dn:caseExactMatch:=x))");
        let mut b = FilterBuilder::new();
        b.present(b"a=b~");
        assert_eq!(text(&b.finish().unwrap()), "(a\\3db\\7e=*)");
    }
}
