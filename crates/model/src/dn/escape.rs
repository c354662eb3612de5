//! RFC 4514 value escaping for printing DNs.

use std::fmt::{self, Write};

/// Characters RFC 4514 section 2.4 requires escaping anywhere in a value.
fn always_escaped(c: char) -> bool {
    matches!(c, '"' | '+' | ',' | ';' | '<' | '>' | '\\')
}

/// Writes a value in RFC 4514 string form: `"+,;<>\` as `\c`, a leading space or `#` and a
/// trailing space as `\ ` / `\#`, NUL and octets that are not UTF-8 as `\XX`.
pub(super) fn write_value(f: &mut fmt::Formatter<'_>, value: &[u8]) -> fmt::Result {
    let last = value.len().saturating_sub(1);
    let mut pos = 0usize;
    for chunk in value.utf8_chunks() {
        for c in chunk.valid().chars() {
            let at_start = pos == 0;
            let at_end = pos + c.len_utf8() - 1 == last;
            if always_escaped(c) || (at_start && (c == ' ' || c == '#')) || (at_end && c == ' ') {
                f.write_char('\\')?;
                f.write_char(c)?;
            } else if c == '\0' {
                f.write_str("\\00")?;
            } else {
                f.write_char(c)?;
            }
            pos += c.len_utf8();
        }
        for &b in chunk.invalid() {
            write!(f, "\\{b:02X}")?;
            pos += 1;
        }
    }
    Ok(())
}

/// Appends a normalized key to a normalized DN string. Every octet that could be read as
/// structure (`,` `+` `=` `\` and the other specials), spaces at either end, control
/// characters and octets that are not UTF-8 become `\xx` (lower-case hex), so a literal `,`
/// or `+` in a normalized DN is always a separator and distinct keys give distinct strings.
pub(super) fn push_key(out: &mut String, key: &[u8]) {
    // The common case: printable ASCII with nothing to escape.
    let plain = |b: u8| {
        (0x20..0x7f).contains(&b)
            && !matches!(b, b'"' | b'+' | b',' | b';' | b'<' | b'>' | b'\\' | b'=' | b'#')
    };
    if key.iter().all(|&b| plain(b)) && key.first() != Some(&b' ') && key.last() != Some(&b' ') {
        out.extend(key.iter().map(|&b| char::from(b)));
        return;
    }
    push_key_escaping(out, key);
}

/// [`push_key`] character by character.
fn push_key_escaping(out: &mut String, key: &[u8]) {
    let last = key.len().saturating_sub(1);
    let mut pos = 0usize;
    for chunk in key.utf8_chunks() {
        for c in chunk.valid().chars() {
            let edge_space = c == ' ' && (pos == 0 || pos + c.len_utf8() - 1 == last);
            let special = always_escaped(c) || matches!(c, '=' | '#') || c.is_control();
            if special || edge_space {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(out, "\\{b:02x}");
                }
            } else {
                out.push(c);
            }
            pos += c.len_utf8();
        }
        for &b in chunk.invalid() {
            let _ = write!(out, "\\{b:02x}");
            pos += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_ascii_shortcut_writes_what_the_general_path_writes(
            key in prop_oneof![
                "[ -~]{0,12}".prop_map(String::into_bytes),
                proptest::collection::vec(any::<u8>(), 0..12),
            ]
        ) {
            let (mut fast, mut general) = (String::new(), String::new());
            push_key(&mut fast, &key);
            push_key_escaping(&mut general, &key);
            prop_assert_eq!(fast, general);
        }
    }
}
