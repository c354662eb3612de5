//! Key computation for each rule family, and substring search over keys.

use super::prep::{self, Spaces};
use super::{InvalidValue, Kind, SubstringPosition};
use crate::syntax::{dn, text, time};

const fn invalid(reason: &'static str) -> InvalidValue {
    InvalidValue::new(reason)
}

pub(super) fn normalize(kind: Kind, value: &[u8], out: &mut Vec<u8>) -> Result<(), InvalidValue> {
    match kind {
        Kind::String { fold, ia5 } => {
            check_string(value, ia5)?;
            prep::prepare_spaces(value, fold, Spaces::Compact, out)
        }
        Kind::Substrings { fold, ia5 } => {
            check_string(value, ia5)?;
            prep::prepare_spaces(value, fold, Spaces::SubstringValue, out)
        }
        Kind::NumericString | Kind::NumericStringSubstrings => numeric_string(value, out),
        // The empty string is accepted although the syntax refuses it: it is the key of
        // a value made only of spaces and hyphens, and keys must be valid inputs.
        Kind::Telephone | Kind::TelephoneSubstrings => prep::prepare_removing(value, true, out),
        Kind::Integer => integer(value, out),
        Kind::IntegerOrdering => {
            if !text::integer(value) {
                return Err(invalid("the value is not an integer"));
            }
            integer_ordering_key(value, out);
            Ok(())
        }
        Kind::GeneralizedTime => {
            let t =
                time::parse_generalized_time(value).ok_or(invalid("the value is not a generalized time"))?;
            time::utc_key(&t, out).map_err(invalid)
        }
        Kind::DistinguishedName => distinguished_name(value, out),
        Kind::UniqueMember => {
            let (name, uid) = dn::split_name_and_uid(value);
            distinguished_name(name, out)?;
            if let Some(bits) = uid {
                out.extend_from_slice(b"#'");
                out.extend_from_slice(bits);
                out.extend_from_slice(b"'B");
            }
            Ok(())
        }
        Kind::OctetString => {
            out.extend_from_slice(value);
            Ok(())
        }
        Kind::Certificate => {
            if !text::der_sequence(value) {
                return Err(invalid("the value is not a DER SEQUENCE"));
            }
            out.extend_from_slice(value);
            Ok(())
        }
        Kind::Boolean => {
            if !text::boolean(value) {
                return Err(invalid("the value is not TRUE or FALSE"));
            }
            out.extend_from_slice(value);
            Ok(())
        }
        Kind::ObjectIdentifier => object_identifier(value, out),
        Kind::ObjectIdentifierFirstComponent => match first_component(value) {
            Some(FirstComponent::Word(w)) => object_identifier(w, out),
            Some(FirstComponent::Quoted(_)) => Err(invalid("the first component is not an OID")),
            None => object_identifier(value, out),
        },
        Kind::IntegerFirstComponent => match first_component(value) {
            Some(FirstComponent::Word(w)) => integer(w, out),
            Some(FirstComponent::Quoted(_)) => Err(invalid("the first component is not an integer")),
            None => integer(value, out),
        },
        Kind::DirectoryStringFirstComponent => match first_component(value) {
            Some(FirstComponent::Quoted(q)) => {
                let unescaped = unescape_qdstring(q).ok_or(invalid("a quoted string has a bad escape"))?;
                prep::prepare_spaces(&unescaped, true, Spaces::Compact, out)
            }
            Some(FirstComponent::Word(w)) => prep::prepare_spaces(w, true, Spaces::Compact, out),
            None => prep::prepare_spaces(value, true, Spaces::Compact, out),
        },
        Kind::BitString => {
            if !text::bit_string(value) {
                return Err(invalid("the value is not a bit string"));
            }
            out.extend_from_slice(value);
            Ok(())
        }
        Kind::CaseIgnoreList => case_ignore_list(value, Spaces::Compact, out),
        Kind::CaseIgnoreListSubstrings => case_ignore_list(value, Spaces::SubstringValue, out),
        Kind::Uuid => {
            if !text::uuid(value) {
                return Err(invalid("the value is not a UUID"));
            }
            out.extend(value.iter().map(u8::to_ascii_lowercase));
            Ok(())
        }
    }
}

/// IA5 String values are ASCII and may be empty; Directory String, Printable String
/// and the other syntaxes these rules apply to have at least one character (RFC 4517 3.3.6).
fn check_string(value: &[u8], ia5: bool) -> Result<(), InvalidValue> {
    if ia5 {
        if !value.is_ascii() {
            return Err(invalid("the value is not an IA5 string"));
        }
    } else if value.is_empty() {
        return Err(invalid("the value is empty"));
    }
    Ok(())
}

pub(super) fn normalize_substring(
    kind: Kind,
    part: &[u8],
    position: SubstringPosition,
    out: &mut Vec<u8>,
) -> Result<(), InvalidValue> {
    match kind {
        Kind::Substrings { fold, ia5 } => {
            if ia5 && !part.is_ascii() {
                return Err(invalid("the value is not an IA5 string"));
            }
            prep::prepare_spaces(part, fold, Spaces::Piece(position), out)
        }
        Kind::CaseIgnoreListSubstrings => prep::prepare_spaces(part, true, Spaces::Piece(position), out),
        Kind::NumericStringSubstrings => {
            // A piece may be all spaces (it then matches anywhere), so it is not checked
            // as a Numeric String value, which must be non-empty.
            if !part.iter().all(|&b| b.is_ascii_digit() || b == b' ') {
                return Err(invalid("the value is not a numeric string"));
            }
            out.extend(part.iter().copied().filter(|&b| b != b' '));
            Ok(())
        }
        Kind::TelephoneSubstrings => prep::prepare_removing(part, true, out),
        _ => Err(invalid("the matching rule is not a substrings rule")),
    }
}

/// Leftmost, non-overlapping search of the pieces in the value key. Keys of substring
/// rules are UTF-8, so `str::find` (linear time, Two-Way) is used, and a match of a
/// UTF-8 piece in UTF-8 text always starts and ends on character boundaries.
pub(super) fn matches_substrings(
    value_key: &[u8],
    initial: Option<&[u8]>,
    any: &[impl AsRef<[u8]>],
    final_: Option<&[u8]>,
) -> bool {
    let Ok(value) = std::str::from_utf8(value_key) else {
        return false;
    };
    let mut start = 0;
    let mut end = value.len();
    if let Some(initial) = initial {
        let Ok(initial) = std::str::from_utf8(initial) else {
            return false;
        };
        if !value.starts_with(initial) {
            return false;
        }
        start = initial.len();
    }
    if let Some(final_) = final_ {
        let Ok(final_) = std::str::from_utf8(final_) else {
            return false;
        };
        if !value.ends_with(final_) || value.len() - final_.len() < start {
            return false;
        }
        end = value.len() - final_.len();
    }
    for piece in any {
        let Ok(piece) = std::str::from_utf8(piece.as_ref()) else {
            return false;
        };
        match value[start..end].find(piece) {
            Some(at) => start += at + piece.len(),
            None => return false,
        }
    }
    true
}

fn numeric_string(value: &[u8], out: &mut Vec<u8>) -> Result<(), InvalidValue> {
    if !text::numeric_string(value) {
        return Err(invalid("the value is not a numeric string"));
    }
    out.extend(value.iter().copied().filter(|&b| b != b' '));
    Ok(())
}

fn integer(value: &[u8], out: &mut Vec<u8>) -> Result<(), InvalidValue> {
    if !text::integer(value) {
        return Err(invalid("the value is not an integer"));
    }
    out.extend_from_slice(value);
    Ok(())
}

/// The order-preserving key of a valid RFC 4517 integer (no `+`, no leading zeros, no
/// `-0`), of any length:
///
/// - zero: `[0x02]`;
/// - positive: `0x03`, then the digit count `n` as `k` (its length in bytes, 1..=8) and
///   `n`'s `k` big-endian bytes, then the ASCII digits;
/// - negative: `0x01`, then the same length-and-digits encoding of the magnitude with
///   every byte complemented (`0xFF - b`), so a larger magnitude sorts first.
///
/// Between two numbers of one sign, a different digit count is decided at the length
/// bytes (more digits = larger magnitude) before either key ends; the same count gives
/// keys of equal length, compared digit by digit. So byte order is numeric order.
pub(crate) fn integer_ordering_key(value: &[u8], out: &mut Vec<u8>) {
    let (negative, digits) = match value.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, value),
    };
    if digits == b"0" {
        out.push(0x02);
        return;
    }
    let n = digits.len() as u64;
    let len_bytes = n.to_be_bytes();
    let skip = len_bytes.iter().take_while(|&&b| b == 0).count();
    let k = (8 - skip) as u8;
    let start = out.len();
    out.push(if negative { 0x01 } else { 0x03 });
    out.push(k);
    out.extend_from_slice(&len_bytes[skip..]);
    out.extend_from_slice(digits);
    if negative {
        for b in &mut out[start + 1..] {
            *b = 0xFF - *b;
        }
    }
}

fn object_identifier(value: &[u8], out: &mut Vec<u8>) -> Result<(), InvalidValue> {
    if text::numeric_oid(value) {
        out.extend_from_slice(value);
    } else if text::descr(value) {
        out.extend(value.iter().map(u8::to_ascii_lowercase));
    } else {
        return Err(invalid("the value is neither a numeric OID nor a descriptor"));
    }
    Ok(())
}

enum FirstComponent<'a> {
    Word(&'a [u8]),
    Quoted(&'a [u8]),
}

/// The first component of an RFC 4512-style description `( first ... )`, or `None` when
/// the value does not start with `(` (then it is an assertion value, the bare component).
fn first_component(value: &[u8]) -> Option<FirstComponent<'_>> {
    let is_ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let start = value.iter().position(|b| !is_ws(b))?;
    let rest = value[start..].strip_prefix(b"(")?;
    let rest = &rest[rest.iter().position(|b| !is_ws(b)).unwrap_or(rest.len())..];
    if let Some(q) = rest.strip_prefix(b"'") {
        let end = q.iter().position(|&b| b == b'\'').unwrap_or(q.len());
        return Some(FirstComponent::Quoted(&q[..end]));
    }
    let end = rest
        .iter()
        .position(|b| is_ws(b) || *b == b')' || *b == b'(')
        .unwrap_or(rest.len());
    Some(FirstComponent::Word(&rest[..end]))
}

/// RFC 4512 `qdstring` escapes: `\27` is `'`, `\5C` is `\`.
fn unescape_qdstring(q: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(q.len());
    let mut i = 0;
    while i < q.len() {
        if q[i] == b'\\' {
            match q.get(i + 1..i + 3) {
                Some(e) if e == b"27" => out.push(b'\''),
                Some(e) if e.eq_ignore_ascii_case(b"5C") => out.push(b'\\'),
                _ => return None,
            }
            i += 3;
        } else {
            out.push(q[i]);
            i += 1;
        }
    }
    Some(out)
}

fn case_ignore_list(value: &[u8], mode: Spaces, out: &mut Vec<u8>) -> Result<(), InvalidValue> {
    if std::str::from_utf8(value).is_err() {
        return Err(invalid("the value is not UTF-8"));
    }
    let mut first = true;
    let mut error = None;
    let ok = text::postal_lines(value, |line| {
        if !first {
            out.push(0);
        }
        first = false;
        match prep::prepare_spaces(line, true, mode, out) {
            Ok(()) => true,
            Err(e) => {
                error = Some(e);
                false
            }
        }
    });
    match (ok, error) {
        (true, _) => Ok(()),
        (false, Some(e)) => Err(e),
        (false, None) => Err(invalid("the value is not a postal address")),
    }
}

/// Appends the schema-less key of a DN: see the module documentation of `matching`.
pub(crate) fn distinguished_name(value: &[u8], out: &mut Vec<u8>) -> Result<(), InvalidValue> {
    let avas = dn::parse_dn(value).map_err(invalid)?;
    let mut rdn: Vec<Vec<u8>> = Vec::new();
    let mut first_rdn = true;
    let mut flush = |rdn: &mut Vec<Vec<u8>>, out: &mut Vec<u8>| {
        rdn.sort_unstable();
        if !first_rdn {
            out.push(b',');
        }
        first_rdn = false;
        for (i, ava) in rdn.iter().enumerate() {
            if i > 0 {
                out.push(b'+');
            }
            out.extend_from_slice(ava);
        }
        rdn.clear();
    };
    let mut value_key = Vec::new();
    for ava in avas {
        if ava.starts_rdn && !rdn.is_empty() {
            flush(&mut rdn, out);
        }
        let mut key: Vec<u8> = ava.attr_type.iter().map(u8::to_ascii_lowercase).collect();
        key.push(b'=');
        let string = match &ava.value {
            dn::AvaValue::String(s) => Ok(&s[..]),
            dn::AvaValue::Ber(ber) => dn::ber_string_contents(ber).ok_or(ber),
        };
        match string {
            Ok(s) => {
                value_key.clear();
                prep::prepare_spaces(s, true, Spaces::Compact, &mut value_key)?;
                escape_dn_value(&value_key, &mut key);
            }
            Err(ber) => {
                // Not a string type: kept as the BER octets, in the #hexstring form.
                key.push(b'#');
                for b in ber {
                    key.push(HEX[usize::from(b >> 4)]);
                    key.push(HEX[usize::from(b & 0xF)]);
                }
            }
        }
        rdn.push(key);
    }
    if !rdn.is_empty() {
        flush(&mut rdn, out);
    }
    Ok(())
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// RFC 4514 2.4 escaping of a prepared value: `"`, `+`, `,`, `;`, `<`, `>`, `\` always; `#`
/// and space at the start; space at the end.
fn escape_dn_value(v: &[u8], out: &mut Vec<u8>) {
    let last = v.len().saturating_sub(1);
    for (i, &b) in v.iter().enumerate() {
        let escape = matches!(b, b'"' | b'+' | b',' | b';' | b'<' | b'>' | b'\\')
            || (i == 0 && (b == b'#' || b == b' '))
            || (i == last && b == b' ');
        if escape {
            out.push(b'\\');
        }
        out.push(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ord(v: &str) -> Vec<u8> {
        let mut out = Vec::new();
        integer_ordering_key(v.as_bytes(), &mut out);
        out
    }

    #[test]
    fn integer_keys_sort_numerically() {
        let sorted = [
            "-100000000000000000000",
            "-10",
            "-9",
            "-1",
            "0",
            "1",
            "9",
            "10",
            "11",
            "100",
            "99999999999999999999",
        ];
        for pair in sorted.windows(2) {
            assert!(ord(pair[0]) < ord(pair[1]), "{} < {}", pair[0], pair[1]);
        }
        assert_eq!(ord("0"), vec![0x02]);
        assert_eq!(ord("5"), vec![0x03, 1, 1, b'5']);
    }

    #[test]
    fn first_components() {
        let mut out = Vec::new();
        normalize(
            Kind::ObjectIdentifierFirstComponent,
            b"( 2.5.4.3 NAME 'cn' )",
            &mut out,
        )
        .unwrap();
        assert_eq!(out, b"2.5.4.3");
        out.clear();
        normalize(Kind::IntegerFirstComponent, b"(1 NAME 'r' FORM f)", &mut out).unwrap();
        assert_eq!(out, b"1");
        out.clear();
        normalize(
            Kind::DirectoryStringFirstComponent,
            b"( 'It\\27s  Me' x )",
            &mut out,
        )
        .unwrap();
        assert_eq!(out, b"it's me");
    }
}
