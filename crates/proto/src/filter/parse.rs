//! RFC 4515 string filters to BER, without recursion: `and`/`or`/`not` open frames on an
//! explicit stack bounded by `MAX_FILTER_DEPTH`.

use super::builder::{FilterBuilder, OwnedFilter};
use crate::limits::MAX_FILTER_DEPTH;

/// Why a string filter was refused, and where (byte offset into the string).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid filter at offset {offset}: {reason}")]
pub struct FilterParseError {
    /// Byte offset of the problem.
    pub offset: usize,
    /// What was wrong.
    pub reason: &'static str,
}

struct Parser<'s> {
    s: &'s [u8],
    pos: usize,
}

#[derive(Clone, Copy)]
struct Frame {
    is_not: bool,
    children: u32,
}

type PResult<T> = std::result::Result<T, FilterParseError>;

impl Parser<'_> {
    fn err<T>(&self, reason: &'static str) -> PResult<T> {
        Err(FilterParseError {
            offset: self.pos,
            reason,
        })
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }
    fn expect(&mut self, c: u8, reason: &'static str) -> PResult<()> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            self.err(reason)
        }
    }
}

pub(super) fn parse(s: &[u8]) -> PResult<OwnedFilter> {
    let mut p = Parser { s, pos: 0 };
    let mut b = FilterBuilder::new();
    p.skip_ws();
    if p.peek() != Some(b'(') {
        // A bare item, as ldapsearch accepts: `cn=foo`.
        let end = trim_end(s);
        if p.pos >= end {
            return p.err("empty filter");
        }
        item(&mut p, &mut b, end)?;
        return finish(&p, &mut b);
    }
    let mut stack = [Frame {
        is_not: false,
        children: 0,
    }; MAX_FILTER_DEPTH];
    let mut depth = 0usize;
    loop {
        if depth > 0 {
            let parent = &mut stack[depth - 1];
            parent.children += 1;
            if parent.is_not && parent.children > 1 {
                return p.err("`!` takes exactly one filter");
            }
        }
        p.expect(b'(', "expected `(`")?;
        match p.peek() {
            Some(c @ (b'&' | b'|' | b'!')) => {
                if depth == MAX_FILTER_DEPTH {
                    return p.err("filter nested too deeply");
                }
                p.pos += 1;
                match c {
                    b'&' => b.begin_and(),
                    b'|' => b.begin_or(),
                    _ => b.begin_not(),
                };
                stack[depth] = Frame {
                    is_not: c == b'!',
                    children: 0,
                };
                depth += 1;
            }
            _ => {
                let end = item_end(&p)?;
                item(&mut p, &mut b, end)?;
                p.expect(b')', "expected `)`")?;
                if depth == 0 {
                    break;
                }
            }
        }
        // Close every list that ends here.
        loop {
            p.skip_ws();
            if depth == 0 || p.peek() != Some(b')') {
                break;
            }
            if stack[depth - 1].is_not && stack[depth - 1].children != 1 {
                return p.err("`!` takes exactly one filter");
            }
            p.pos += 1;
            b.end();
            depth -= 1;
        }
        if depth == 0 {
            break;
        }
        if p.peek().is_none() {
            return p.err("unbalanced parentheses: the filter ends too early");
        }
    }
    p.skip_ws();
    if p.pos != s.len() {
        return p.err("unexpected characters after the filter");
    }
    finish(&p, &mut b)
}

fn finish(p: &Parser<'_>, b: &mut FilterBuilder) -> PResult<OwnedFilter> {
    b.finish().map_err(|_| FilterParseError {
        offset: p.pos,
        reason: "the filter is not well formed",
    })
}

fn trim_end(s: &[u8]) -> usize {
    let mut end = s.len();
    while end > 0 && matches!(s[end - 1], b' ' | b'\t' | b'\n' | b'\r') {
        end -= 1;
    }
    end
}

/// The offset of the `)` that closes the item starting at `p.pos` (escapes skipped).
fn item_end(p: &Parser<'_>) -> PResult<usize> {
    let mut i = p.pos;
    while i < p.s.len() {
        match p.s[i] {
            b')' => return Ok(i),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    Err(FilterParseError {
        offset: p.s.len(),
        reason: "expected `)` to close the item",
    })
}

pub(super) fn is_attr_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b';' | b'.' | b'_')
}

/// Parses one item (`attr=value`, `attr>=v`, `attr:dn:rule:=v`, ...) ending at `end`.
fn item(p: &mut Parser<'_>, b: &mut FilterBuilder, end: usize) -> PResult<()> {
    let start = p.pos;
    while p.pos < end && is_attr_char(p.s[p.pos]) {
        p.pos += 1;
    }
    let attr = &p.s[start..p.pos];
    let Some(op) = p.s.get(p.pos).copied().filter(|_| p.pos < end) else {
        return p.err("expected `=`, `~=`, `>=`, `<=` or `:` after the attribute");
    };
    match op {
        b':' => return extensible(p, b, attr, start, end),
        b'~' | b'>' | b'<' => {
            if attr.is_empty() {
                return p.err("missing attribute description");
            }
            p.pos += 1;
            p.expect(b'=', "expected `=` after `~`, `>` or `<`")?;
            let value = unescape(p, end)?;
            match op {
                b'~' => b.approx(attr, &value),
                b'>' => b.greater_or_equal(attr, &value),
                _ => b.less_or_equal(attr, &value),
            };
        }
        b'=' => {
            if attr.is_empty() {
                return p.err("missing attribute description");
            }
            p.pos += 1;
            equality_or_substrings(p, b, attr, end)?;
        }
        _ => return p.err("invalid character in attribute description"),
    }
    Ok(())
}

fn equality_or_substrings(p: &mut Parser<'_>, b: &mut FilterBuilder, attr: &[u8], end: usize) -> PResult<()> {
    if &p.s[p.pos..end] == b"*" {
        p.pos = end;
        b.present(attr);
        return Ok(());
    }
    // Split on unescaped `*`.
    let mut parts: Vec<Vec<u8>> = Vec::new();
    loop {
        let part_end = next_star(p.s, p.pos, end);
        parts.push(unescape(p, part_end)?);
        if part_end == end {
            break;
        }
        p.pos = part_end + 1;
    }
    if parts.len() == 1 {
        b.equality(attr, &parts[0]);
        return Ok(());
    }
    // RFC 4515: `[initial] any [final]` where every `any` value may be empty (libldap
    // encodes `(cn=a**b)` with an empty `any`, so Larch keeps it too); an empty initial or
    // final is simply absent.
    let last = parts.len() - 1;
    let initial = Some(parts[0].as_slice()).filter(|v| !v.is_empty());
    let final_ = Some(parts[last].as_slice()).filter(|v| !v.is_empty());
    let any: Vec<&[u8]> = parts[1..last].iter().map(Vec::as_slice).collect();
    if initial.is_none() && final_.is_none() && any.is_empty() {
        return p.err("a substring filter needs at least one part");
    }
    b.substrings(attr, initial, &any, final_);
    Ok(())
}

fn next_star(s: &[u8], mut i: usize, end: usize) -> usize {
    while i < end {
        match s[i] {
            b'*' => return i,
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    end
}

/// `[attr][:dn][:rule]:=value`.
fn extensible(
    p: &mut Parser<'_>,
    b: &mut FilterBuilder,
    attr: &[u8],
    start: usize,
    end: usize,
) -> PResult<()> {
    let mut dn = false;
    let mut rule: Option<&[u8]> = None;
    loop {
        p.expect(b':', "expected `:`")?;
        if p.peek() == Some(b'=') {
            p.pos += 1;
            break;
        }
        let token_start = p.pos;
        while p.pos < end && is_attr_char(p.s[p.pos]) {
            p.pos += 1;
        }
        let token = &p.s[token_start..p.pos];
        if token.is_empty() {
            return p.err("expected `dn`, a matching rule or `=` after `:`");
        }
        if token.eq_ignore_ascii_case(b"dn") && !dn && rule.is_none() {
            dn = true;
        } else if rule.is_none() {
            rule = Some(token);
        } else {
            return p.err("an extensible match takes at most one matching rule");
        }
    }
    if attr.is_empty() && rule.is_none() {
        p.pos = start;
        return p.err("an extensible match needs an attribute, a matching rule or both");
    }
    let value = unescape(p, end)?;
    b.extensible(rule, Some(attr).filter(|a| !a.is_empty()), &value, dn);
    Ok(())
}

/// Decodes an assertion value up to `end`: `\HH` per RFC 4515, and the RFC 2254 form
/// `\c` for one of `*()\` as OpenLDAP still accepts.
fn unescape(p: &mut Parser<'_>, end: usize) -> PResult<Vec<u8>> {
    let mut out = Vec::with_capacity(end - p.pos);
    while p.pos < end {
        let c = p.s[p.pos];
        match c {
            b'\\' => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (p.s.get(p.pos + 1).copied(), p.s.get(p.pos + 2).copied()) {
                    (Some(h), Some(l)) if p.pos + 2 < end && hex(h).is_some() && hex(l).is_some() => {
                        out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                        p.pos += 3;
                    }
                    (Some(c @ (b'*' | b'(' | b')' | b'\\')), _) if p.pos + 1 < end => {
                        out.push(c);
                        p.pos += 2;
                    }
                    _ => return p.err("`\\` must be followed by two hexadecimal digits"),
                }
            }
            b'(' => return p.err("`(` must be escaped as `\\28` in a value"),
            0 => return p.err("NUL must be escaped as `\\00` in a value"),
            _ => {
                out.push(c);
                p.pos += 1;
            }
        }
    }
    Ok(out)
}
