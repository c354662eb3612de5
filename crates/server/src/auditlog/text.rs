//! LDIF lines appended straight to the output buffer: octet for octet what the store's
//! [`larch_store::ldif::LdifWriter`] writes (`name: value`, `name:: base64` when the value
//! is not a SAFE-STRING, `name:` for an empty value; lines folded at
//! [`FOLD_COLUMN`] columns), without building a record first, a `String` per attribute
//! description or a buffer per line.
//!
//! Only lines: which records may be written this way (every name a valid attribute
//! description) is `record`'s to decide.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use larch_store::ldif::syntax::is_option;
pub(crate) use larch_store::ldif::syntax::{is_attribute_description, is_reserved_attribute, is_safe_string};
use larch_store::ldif::FOLD_COLUMN;

/// Lines appended to a buffer.
pub(crate) struct Lines<'o> {
    out: &'o mut Vec<u8>,
}

impl<'o> Lines<'o> {
    /// Lines appended to `out`.
    pub(crate) fn new(out: &'o mut Vec<u8>) -> Lines<'o> {
        Lines { out }
    }

    /// A line without a value (`changetype: modify`, `-`), folded.
    pub(crate) fn fixed(&mut self, parts: &[&str]) {
        let start = self.out.len();
        for p in parts {
            self.out.extend_from_slice(p.as_bytes());
        }
        self.end_line(start);
    }

    /// `name: value`, `name:: base64` or `name:`, the name written from `name`'s parts
    /// (`["cn", ";lang-en"]`, `["# ", "csn"]`), folded.
    pub(crate) fn value(&mut self, name: &[&str], value: &[u8]) {
        let start = self.out.len();
        for p in name {
            self.out.extend_from_slice(p.as_bytes());
        }
        if value.is_empty() {
            self.out.push(b':');
        } else if is_safe_string(value) {
            self.out.extend_from_slice(b": ");
            self.out.extend_from_slice(value);
        } else {
            self.out.extend_from_slice(b":: ");
            base64(self.out, value);
        }
        self.end_line(start);
    }

    /// `# name: n`, a number as a comment (`# lsn: 7`).
    pub(crate) fn number_comment(&mut self, name: &str, n: u64) {
        let mut digits = [0u8; 20];
        self.value(&["# ", name], decimal(n, &mut digits));
    }

    /// The blank line that ends a block.
    pub(crate) fn blank(&mut self) {
        self.out.push(b'\n');
    }

    /// Ends the logical line that starts at `start`: folded so that no physical line
    /// exceeds [`FOLD_COLUMN`] (continuation lines start with a space), then a line end.
    fn end_line(&mut self, start: usize) {
        let len = self.out.len() - start;
        if len <= FOLD_COLUMN {
            self.out.push(b'\n');
        } else {
            fold_in_place(self.out, start, len);
        }
    }
}

/// Folds the logical line of `len` octets at `start` (the end of `out`) in place: its
/// first [`FOLD_COLUMN`] octets, then chunks of one less, each after a space, each line
/// ended. The chunks move towards the end, the last first, so nothing is overwritten
/// before it moved.
fn fold_in_place(out: &mut Vec<u8>, start: usize, len: usize) {
    let chunk = FOLD_COLUMN - 1;
    let chunks = (len - FOLD_COLUMN).div_ceil(chunk);
    let new_len = start + len + 1 + 2 * chunks;
    out.resize(new_len, 0);
    let mut src_end = start + len;
    let mut dst_end = new_len;
    for i in (0..chunks).rev() {
        let src_start = start + FOLD_COLUMN + i * chunk;
        let n = src_end - src_start;
        out[dst_end - 1] = b'\n';
        let dst = dst_end - 1 - n;
        out.copy_within(src_start..src_end, dst);
        out[dst - 1] = b' ';
        dst_end = dst - 1;
        src_end = src_start;
    }
    out[start + FOLD_COLUMN] = b'\n';
}

/// Appends `value` in base64 (standard alphabet, padded) to `out`.
fn base64(out: &mut Vec<u8>, value: &[u8]) {
    let at = out.len();
    let n = value.len().div_ceil(3) * 4;
    out.resize(at + n, 0);
    // The room is exactly the encoded length, so this cannot fail.
    let _ = STANDARD.encode_slice(value, &mut out[at..]);
}

/// `n` in decimal, written into the end of `digits`.
fn decimal(mut n: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &digits[i..];
        }
    }
}

/// True when `options` (normalized: `""` or `;lang-en;x`), written after a valid type,
/// make a valid attribute description.
pub(crate) fn are_options(options: &str) -> bool {
    match options.as_bytes().split_first() {
        None => true,
        Some((b';', rest)) => rest.split(|&b| b == b';').all(is_option),
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use larch_store::ldif::LdifWriter;

    /// What the store's writer makes of a comment `name: value`.
    fn by_the_store(name: &str, value: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        LdifWriter::new(&mut out).write_comment(name, value).unwrap();
        out
    }

    #[test]
    fn lines_are_the_store_writers_octet_for_octet() {
        let long: Vec<u8> = (0..400).map(|i| b'a' + (i % 26) as u8).collect();
        let binary: Vec<u8> = (0..=255u8).cycle().take(300).collect();
        let values: [&[u8]; 11] = [
            b"",
            b"x",
            b" leading space",
            b"trailing space ",
            b":colon",
            b"<less",
            "Zo\u{eb}".as_bytes(),
            b"line\nend",
            &long,
            &binary,
            &long[..70],
        ];
        for value in values {
            for name in [
                "n",
                "description",
                "a-name-long-enough-to-fold-with-a-short-value-01234567890123456789",
            ] {
                let mut out = Vec::new();
                Lines::new(&mut out).value(&["# ", name], value);
                assert_eq!(
                    String::from_utf8_lossy(&out),
                    String::from_utf8_lossy(&by_the_store(name, value)),
                    "{name} {value:?}"
                );
            }
        }
        for len in 60..240 {
            let value = &long[..len];
            let mut out = b"before\n".to_vec();
            Lines::new(&mut out).value(&["# ", "x"], value);
            assert_eq!(&out[7..], by_the_store("x", value), "{len}");
        }
        for n in [0, 7, 10, 99, 1234567, u64::MAX] {
            let mut out = Vec::new();
            Lines::new(&mut out).number_comment("lsn", n);
            assert_eq!(out, by_the_store("lsn", n.to_string().as_bytes()));
        }
    }
}
