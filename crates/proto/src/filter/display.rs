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
        // A single assertion, the usual filter, needs no stack.
        let Some(children) = write_node(out, *self) else {
            return;
        };
        // One iterator per open and/or/not; validation bounds the depth.
        let empty = FilterSetIter { rest: &[] };
        let mut stack = [empty; MAX_FILTER_DEPTH + 1];
        stack[0] = children;
        let mut depth = 1usize;
        let mut next = None;
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
    if d.iter().all(|&c| super::parse::is_attr_char(c)) {
        out.extend_from_slice(d);
        return;
    }
    write_escaping(out, d, |c| !super::parse::is_attr_char(c));
}

/// RFC 4515 value escaping: `*`, `(`, `)`, `\`, NUL and octets that are not UTF-8 become
/// `\HH`; valid UTF-8 is written as is.
fn value(out: &mut Vec<u8>, v: &[u8]) {
    let special = |c: u8| matches!(c, b'*' | b'(' | b')' | b'\\' | b'\0');
    if plain_value(v) {
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

/// True when `v` is ASCII without an octet that RFC 4515 escapes in a value, checked
/// eight octets at a time: a value is written in one copy when this holds. (`+` is taken
/// for a special here, with `(`, `)` and `*` next to it: a value holding one goes through
/// the octet-by-octet path, which writes it as it is.)
fn plain_value(v: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // An octet of `w` below `n` (for `w` without its high bits set and `n` <= 128).
    let below = |w: u64, n: u64| w.wrapping_sub(ONES * n) & !w & HIGH != 0;
    let mut words = v.chunks_exact(8);
    for word in &mut words {
        let mut octets = [0u8; 8];
        octets.copy_from_slice(word);
        let w = u64::from_le_bytes(octets);
        // NUL, `(` `)` `*` `+` (0x28..=0x2b: below 4 once 0x28 is taken away) and `\`.
        if w & HIGH != 0
            || below(w, 1)
            || below(w ^ (ONES * 0x28), 4)
            || below(w ^ (ONES * u64::from(b'\\')), 1)
        {
            return false;
        }
    }
    words
        .remainder()
        .iter()
        .all(|&c| c.is_ascii() && !matches!(c, b'*' | b'(' | b')' | b'\\' | b'\0'))
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
    fn a_plain_value_is_one_without_an_octet_to_escape_at_any_position() {
        let escaped = |v: &[u8]| {
            v.iter()
                .any(|&c| !c.is_ascii() || matches!(c, b'*' | b'(' | b')' | b'\\' | b'\0'))
        };
        for len in 0..20 {
            for at in 0..len {
                for octet in [
                    0u8, b'(', b')', b'*', b'+', b'\\', b'\'', b',', 0x7f, 0x80, 0xe9, 0xff,
                ] {
                    let mut v = vec![b'a'; len];
                    v[at] = octet;
                    let plain = super::plain_value(&v);
                    // `+` may be taken for a special; nothing to escape is never missed.
                    assert!(!(plain && escaped(&v)), "{v:?}");
                    if octet != b'+' {
                        assert_eq!(plain, !escaped(&v), "{v:?}");
                    }
                }
            }
            assert!(super::plain_value(&vec![b'z'; len]));
        }
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
