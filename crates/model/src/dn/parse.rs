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
    /// The same octets as text (the whole DN is checked to be UTF-8 first).
    text: &'a str,
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

/// One AVA as the parser read it, borrowed from the input where it can be (a value with no
/// escape is a slice of the input).
#[derive(Debug)]
pub(super) struct AvaText<'a> {
    /// The attribute type as written.
    pub attr: &'a str,
    /// The value with escapes removed (for `#hex`, the decoded octets).
    pub value: Cow<'a, [u8]>,
    /// True when the value was written as `#` and hex pairs.
    pub hex: bool,
}

impl AvaText<'_> {
    fn into_owned(self) -> Ava {
        Ava {
            attr: self.attr.to_owned(),
            value: self.value.into_owned(),
            hex: self.hex,
        }
    }
}

/// Parses a whole DN into its owned form.
pub(super) fn parse(input: &[u8]) -> Result<Dn, DnError> {
    let mut rdns: Vec<Rdn> = Vec::new();
    parse_with(input, |ava, starts_rdn| {
        match rdns.last_mut() {
            Some(rdn) if !starts_rdn => rdn.avas.push(ava.into_owned()),
            _ => rdns.push(Rdn {
                avas: vec![ava.into_owned()],
            }),
        }
        Ok(())
    })?;
    Ok(Dn { rdns })
}

/// Reads a whole DN, handing each AVA to `each` in order, leaf RDN first, with `true` for
/// the first AVA of each RDN. Nothing is allocated for a value without escapes. The first
/// error, the parser's or `each`'s, ends the pass.
pub(super) fn parse_with<'a>(
    input: &'a [u8],
    mut each: impl FnMut(AvaText<'a>, bool) -> Result<(), DnError>,
) -> Result<(), DnError> {
    let text = match std::str::from_utf8(input) {
        Ok(t) => t,
        Err(e) => return Err(DnError::new(e.valid_up_to(), "a DN must be UTF-8")),
    };
    let mut c = Cursor {
        s: input,
        text,
        pos: 0,
    };
    c.skip_spaces();
    if c.peek().is_none() {
        return Ok(());
    }
    loop {
        let mut starts_rdn = true;
        loop {
            each(ava(&mut c)?, starts_rdn)?;
            starts_rdn = false;
            c.skip_spaces();
            if c.peek() == Some(b'+') {
                c.pos += 1;
                continue;
            }
            break;
        }
        match c.peek() {
            None => return Ok(()),
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

fn ava<'a>(c: &mut Cursor<'a>) -> Result<AvaText<'a>, DnError> {
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
        return Ok(AvaText {
            attr,
            value: Cow::Owned(value),
            hex: true,
        });
    }
    let value = string_value(c)?;
    Ok(AvaText {
        attr,
        value,
        hex: false,
    })
}

/// `descr` (ALPHA *(ALPHA / DIGIT / "-")) or `numericoid` (number *("." number)).
fn attribute_type<'a>(c: &mut Cursor<'a>) -> Result<&'a str, DnError> {
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
    // ASCII, checked just above, so both ends are character boundaries.
    Ok(c.text.get(start..c.pos).unwrap_or_default())
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
/// trailing spaces dropped. Borrowed from the input unless it holds an escape.
fn string_value<'a>(c: &mut Cursor<'a>) -> Result<Cow<'a, [u8]>, DnError> {
    let start = c.pos;
    // End of the last significant octet read so far.
    let mut significant = start;
    loop {
        match c.peek() {
            // A slice of UTF-8 text between ASCII delimiters: UTF-8 itself.
            None | Some(b',' | b'+' | b';') => return Ok(Cow::Borrowed(&c.s[start..significant])),
            Some(b'\\') => break,
            Some(b'"' | b'<' | b'>') => return c.err("`\"`, `<` and `>` must be escaped in a DN value"),
            Some(0) => return c.err("NUL must be escaped as `\\00` in a DN value"),
            Some(b' ') => c.pos += 1,
            Some(_) => {
                c.pos += 1;
                significant = c.pos;
            }
        }
    }
    // An escape: copy what was read and go on octet by octet.
    let mut out = c.s[start..c.pos].to_vec();
    let mut significant = significant - start;
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
    Ok(Cow::Owned(out))
}
