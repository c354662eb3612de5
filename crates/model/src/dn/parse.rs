//! The RFC 4514 parser: one forward pass over the octets, no recursion.

use std::borrow::Cow;

use super::{Ava, Dn, Rdn};

/// Why a DN was refused, and where (byte offset into the DN). The server answers with
/// `invalidDNSyntax` (34) and this text as the diagnostic message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid DN at offset {offset}: {reason}")]
pub struct DnError {
    /// Byte offset of the problem.
    pub offset: usize,
    /// What was wrong.
    pub reason: Cow<'static, str>,
}

impl DnError {
    pub(crate) fn new(offset: usize, reason: impl Into<Cow<'static, str>>) -> Self {
        DnError {
            offset,
            reason: reason.into(),
        }
    }
}

struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }
    fn skip_spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
    }
    fn err<T>(&self, reason: &'static str) -> Result<T, DnError> {
        Err(DnError::new(self.pos, reason))
    }
}

/// Parses a whole DN.
pub(super) fn parse(input: &[u8]) -> Result<Dn, DnError> {
    if let Err(e) = std::str::from_utf8(input) {
        return Err(DnError::new(e.valid_up_to(), "a DN must be UTF-8"));
    }
    let mut c = Cursor { s: input, pos: 0 };
    c.skip_spaces();
    if c.peek().is_none() {
        return Ok(Dn::default());
    }
    let mut rdns = Vec::new();
    loop {
        let mut avas = Vec::with_capacity(1);
        loop {
            avas.push(ava(&mut c)?);
            c.skip_spaces();
            if c.peek() == Some(b'+') {
                c.pos += 1;
                continue;
            }
            break;
        }
        rdns.push(Rdn { avas });
        match c.peek() {
            None => return Ok(Dn { rdns }),
            // RFC 2253 allowed `;` between RDNs; OpenLDAP still accepts it.
            Some(b',' | b';') => {
                c.pos += 1;
                c.skip_spaces();
                if c.peek().is_none() {
                    return c.err("expected an RDN after the separator");
                }
            }
            Some(_) => return c.err("expected `,` or `+` after a value"),
        }
    }
}

fn ava(c: &mut Cursor<'_>) -> Result<Ava, DnError> {
    c.skip_spaces();
    let attr = attribute_type(c)?;
    c.skip_spaces();
    if c.peek() != Some(b'=') {
        return c.err("expected `=` after the attribute type");
    }
    c.pos += 1;
    c.skip_spaces();
    if c.peek() == Some(b'#') {
        c.pos += 1;
        let value = hex_value(c)?;
        return Ok(Ava {
            attr,
            value,
            hex: true,
        });
    }
    let value = string_value(c)?;
    Ok(Ava {
        attr,
        value,
        hex: false,
    })
}

/// `descr` (ALPHA *(ALPHA / DIGIT / "-")) or `numericoid` (number *("." number)).
fn attribute_type(c: &mut Cursor<'_>) -> Result<String, DnError> {
    let start = c.pos;
    match c.peek() {
        Some(b) if b.is_ascii_alphabetic() => {
            while matches!(c.peek(), Some(b) if b.is_ascii_alphanumeric() || b == b'-') {
                c.pos += 1;
            }
        }
        Some(b) if b.is_ascii_digit() => loop {
            let number_start = c.pos;
            while matches!(c.peek(), Some(b) if b.is_ascii_digit()) {
                c.pos += 1;
            }
            let number = &c.s[number_start..c.pos];
            if number.is_empty() {
                return c.err("expected a number in the OID");
            }
            if number.len() > 1 && number[0] == b'0' {
                return Err(DnError::new(number_start, "an OID number has no leading zero"));
            }
            if c.peek() == Some(b'.') {
                c.pos += 1;
            } else {
                break;
            }
        },
        _ => return c.err("expected an attribute type (a name or a numeric OID)"),
    }
    // Validated as ASCII just above.
    Ok(String::from_utf8_lossy(&c.s[start..c.pos]).into_owned())
}

/// `#` followed by an even number of hex digits, up to a separator or trailing spaces.
fn hex_value(c: &mut Cursor<'_>) -> Result<Vec<u8>, DnError> {
    let mut out = Vec::new();
    loop {
        match (c.peek(), c.s.get(c.pos + 1).copied()) {
            (Some(h), Some(l)) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit() => {
                out.push(hex_digit(h) << 4 | hex_digit(l));
                c.pos += 2;
            }
            (Some(h), _) if h.is_ascii_hexdigit() => return c.err("a `#` value needs pairs of hex digits"),
            _ => break,
        }
    }
    if out.is_empty() {
        return c.err("a `#` value needs at least one pair of hex digits");
    }
    c.skip_spaces();
    match c.peek() {
        None | Some(b',' | b'+' | b';') => Ok(out),
        Some(_) => c.err("a `#` value holds only hex digits"),
    }
}

fn hex_digit(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    }
}

/// A string value: escapes removed, unescaped leading spaces already skipped, unescaped
/// trailing spaces dropped.
fn string_value(c: &mut Cursor<'_>) -> Result<Vec<u8>, DnError> {
    let mut out = Vec::new();
    // Length of `out` up to and including its last significant octet.
    let mut significant = 0usize;
    while let Some(b) = c.peek() {
        match b {
            b',' | b'+' | b';' => break,
            b'\\' => {
                c.pos += 1;
                match (c.peek(), c.s.get(c.pos + 1).copied()) {
                    (Some(h), Some(l)) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit() => {
                        out.push(hex_digit(h) << 4 | hex_digit(l));
                        c.pos += 2;
                    }
                    (Some(s @ (b' ' | b'"' | b'#' | b'+' | b',' | b';' | b'<' | b'=' | b'>' | b'\\')), _) => {
                        out.push(s);
                        c.pos += 1;
                    }
                    _ => return c.err("`\\` must be followed by a special character or two hex digits"),
                }
                significant = out.len();
            }
            b'"' | b'<' | b'>' => return c.err("`\"`, `<` and `>` must be escaped in a DN value"),
            0 => return c.err("NUL must be escaped as `\\00` in a DN value"),
            b' ' => {
                out.push(b);
                c.pos += 1;
            }
            _ => {
                out.push(b);
                c.pos += 1;
                significant = out.len();
            }
        }
    }
    out.truncate(significant);
    if std::str::from_utf8(&out).is_err() {
        return c.err("escaped octets must form UTF-8 in a string value (use the `#` form for binary)");
    }
    Ok(out)
}
