//! Validators for the small string syntaxes of RFC 4517 section 3.3, and the lexical
//! helpers (numeric OIDs, descriptors, bit strings) the matching rules reuse.
//!
//! Every function takes arbitrary octets and answers without panicking; none recurses.

/// RFC 4517 3.2 `PrintableCharacter`: ALPHA / DIGIT / SQUOTE / LPAREN / RPAREN / PLUS /
/// COMMA / HYPHEN / DOT / EQUALS / SLASH / COLON / QUESTION / SPACE.
pub(crate) fn is_printable_char(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'\'' | b'(' | b')' | b'+' | b',' | b'-' | b'.' | b'=' | b'/' | b':' | b'?' | b' '
        )
}

/// Printable String (1.3.6.1.4.1.1466.115.121.1.44): `1*PrintableCharacter`.
pub(crate) fn printable_string(v: &[u8]) -> bool {
    !v.is_empty() && v.iter().all(|&b| is_printable_char(b))
}

/// IA5 String (.26): `*(%x00-7F)`; the empty string is allowed.
pub(crate) fn ia5_string(v: &[u8]) -> bool {
    v.is_ascii()
}

/// Directory String (.15): one or more UTF-8 encoded characters.
pub(crate) fn directory_string(v: &[u8]) -> bool {
    !v.is_empty() && std::str::from_utf8(v).is_ok()
}

/// Any octets at all (Octet String .40, Binary .5).
pub(crate) fn any_octets(_v: &[u8]) -> bool {
    true
}

/// Non-empty octets (Audio .4, Fax .23): formats not checked.
pub(crate) fn non_empty(v: &[u8]) -> bool {
    !v.is_empty()
}

/// Numeric String (.36): `1*(DIGIT / SPACE)`.
pub(crate) fn numeric_string(v: &[u8]) -> bool {
    !v.is_empty() && v.iter().all(|&b| b.is_ascii_digit() || b == b' ')
}

/// Boolean (.7): exactly `TRUE` or `FALSE` (upper case, as RFC 4517 3.3.3 says).
pub(crate) fn boolean(v: &[u8]) -> bool {
    v == b"TRUE" || v == b"FALSE"
}

/// Integer (.27): `( HYPHEN LDIGIT *DIGIT ) / number`, so no `+`, no leading zeros, no `-0`.
pub(crate) fn integer(v: &[u8]) -> bool {
    let digits = match v.split_first() {
        Some((b'-', rest)) => {
            if rest.first() == Some(&b'0') {
                return false;
            }
            rest
        }
        _ => v,
    };
    number(digits)
}

/// RFC 4512 `number = DIGIT / ( LDIGIT 1*DIGIT )`.
pub(crate) fn number(v: &[u8]) -> bool {
    match v {
        [] => false,
        [d] => d.is_ascii_digit(),
        [first, rest @ ..] => (b'1'..=b'9').contains(first) && rest.iter().all(u8::is_ascii_digit),
    }
}

/// RFC 4512 `numericoid = number 1*( DOT number )`.
pub(crate) fn numeric_oid(v: &[u8]) -> bool {
    let mut arcs = 0usize;
    for arc in v.split(|&b| b == b'.') {
        if !number(arc) {
            return false;
        }
        arcs += 1;
    }
    arcs >= 2
}

/// RFC 4512 `descr = keystring = leadkeychar *keychar` (ALPHA, then ALPHA / DIGIT / HYPHEN).
pub(crate) fn descr(v: &[u8]) -> bool {
    match v.split_first() {
        Some((first, rest)) => {
            first.is_ascii_alphabetic() && rest.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-')
        }
        None => false,
    }
}

/// OID (.38): `numericoid / descr`.
pub(crate) fn oid(v: &[u8]) -> bool {
    numeric_oid(v) || descr(v)
}

/// The binary digits of a Bit String (.6) `'0101'B`, or `None`.
pub(crate) fn bit_string_digits(v: &[u8]) -> Option<&[u8]> {
    let inner = v.strip_prefix(b"'")?.strip_suffix(b"'B")?;
    inner.iter().all(|&b| b == b'0' || b == b'1').then_some(inner)
}

/// Bit String (.6): `SQUOTE *binary-digit SQUOTE "B"`.
pub(crate) fn bit_string(v: &[u8]) -> bool {
    bit_string_digits(v).is_some()
}

/// Country String (.11): exactly two printable characters (the ISO 3166 list is not
/// checked: it changes, and RFC 4517 only asks for the form).
pub(crate) fn country_string(v: &[u8]) -> bool {
    v.len() == 2 && v.iter().all(|&b| is_printable_char(b))
}

/// Telephone Number (.50): a Printable String. RFC 4517 3.3.31 says values *should*
/// follow E.123 but servers must not insist; OpenLDAP checks the same.
pub(crate) fn telephone_number(v: &[u8]) -> bool {
    printable_string(v)
}

/// Facsimile Telephone Number (.22): `telephone-number *( DOLLAR fax-parameter )`.
pub(crate) fn facsimile_telephone_number(v: &[u8]) -> bool {
    const PARAMETERS: [&[u8]; 7] = [
        b"twoDimensional",
        b"fineResolution",
        b"unlimitedLength",
        b"b4Length",
        b"a3Width",
        b"b4Width",
        b"uncompressed",
    ];
    let mut parts = v.split(|&b| b == b'$');
    let Some(number) = parts.next() else { return false };
    printable_string(number) && parts.all(|p| PARAMETERS.iter().any(|k| k.eq_ignore_ascii_case(p)))
}

/// Telex Number (.52): `actual-number DOLLAR country-code DOLLAR answerback`, each a
/// Printable String.
pub(crate) fn telex_number(v: &[u8]) -> bool {
    let mut n = 0;
    for part in v.split(|&b| b == b'$') {
        if !printable_string(part) {
            return false;
        }
        n += 1;
    }
    n == 3
}

/// Other Mailbox (.39): `mailbox-type DOLLAR mailbox`; a Printable String then an IA5 String.
pub(crate) fn other_mailbox(v: &[u8]) -> bool {
    match v.iter().position(|&b| b == b'$') {
        Some(i) => printable_string(&v[..i]) && ia5_string(&v[i + 1..]),
        None => false,
    }
}

/// Delivery Method (.14): `pdm *( [SP] DOLLAR [SP] pdm )` with the ten method names.
pub(crate) fn delivery_method(v: &[u8]) -> bool {
    const METHODS: [&[u8]; 10] = [
        b"any",
        b"mhs",
        b"physical",
        b"telex",
        b"teletex",
        b"g3fax",
        b"g4fax",
        b"ia5",
        b"videotex",
        b"telephone",
    ];
    v.split(|&b| b == b'$').all(|part| {
        let p = part.strip_prefix(b" ").unwrap_or(part);
        let p = p.strip_suffix(b" ").unwrap_or(p);
        METHODS.iter().any(|m| m.eq_ignore_ascii_case(p))
    })
}

/// Postal Address (.41): `line *( DOLLAR line )`, each line one or more UTF-8 characters
/// where `$` and `\` appear only as the escapes `\24` and `\5C`.
pub(crate) fn postal_address(v: &[u8]) -> bool {
    std::str::from_utf8(v).is_ok() && postal_lines(v, |_| true)
}

/// Splits a Postal Address into its unescaped lines and hands each to `line`; false if
/// the form is wrong (an empty line, a stray backslash) or `line` refuses one.
pub(crate) fn postal_lines(v: &[u8], mut line: impl FnMut(&[u8]) -> bool) -> bool {
    let mut current = Vec::new();
    let mut i = 0;
    let mut line_len = 0usize; // characters in the line as written, escapes included
    while i <= v.len() {
        match v.get(i) {
            None | Some(b'$') => {
                if line_len == 0 || !line(&current) {
                    return false;
                }
                current.clear();
                line_len = 0;
                i += 1;
            }
            Some(b'\\') => {
                let esc = v.get(i + 1..i + 3);
                if esc.is_some_and(|e| e == b"24") {
                    current.push(b'$');
                } else if esc.is_some_and(|e| e.eq_ignore_ascii_case(b"5C")) {
                    current.push(b'\\');
                } else {
                    return false;
                }
                line_len += 1;
                i += 3;
            }
            Some(&b) => {
                current.push(b);
                line_len += 1;
                i += 1;
            }
        }
    }
    true
}

/// Substring Assertion (.58): pieces separated by `*`, where `*` and `\` inside a piece are
/// written `\2A` and `\5C`; inner pieces are non-empty and at least one piece is. The
/// RFC 4517 3.3.30 ABNF would also refuse an empty final piece after a trailing `*`
/// ("foo*"); that form is accepted, as in LDAP filters.
pub(crate) fn substring_assertion(v: &[u8]) -> bool {
    if std::str::from_utf8(v).is_err() {
        return false;
    }
    let pieces: Vec<&[u8]> = v.split(|&b| b == b'*').collect();
    let last = pieces.len() - 1;
    let mut any_content = false;
    for (i, piece) in pieces.iter().enumerate() {
        if piece.is_empty() {
            if i != 0 && i != last {
                return false;
            }
            continue;
        }
        any_content = true;
        let mut j = 0;
        while j < piece.len() {
            if piece[j] == b'\\' {
                match piece.get(j + 1..j + 3) {
                    Some(e) if e.eq_ignore_ascii_case(b"2A") || e.eq_ignore_ascii_case(b"5C") => j += 3,
                    _ => return false,
                }
            } else {
                j += 1;
            }
        }
    }
    any_content
}

/// UUID (1.3.6.1.1.16.1, RFC 4530): `8HEX "-" 4HEX "-" 4HEX "-" 4HEX "-" 12HEX`.
pub(crate) fn uuid(v: &[u8]) -> bool {
    v.len() == 36
        && v.iter().enumerate().all(|(i, &b)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        })
}

/// A DER-encoded SEQUENCE: tag 0x30, a definite length in minimal form, and exactly that
/// many content octets. The contents are not decoded: certificates, CRLs, certificate
/// pairs and algorithm identifiers are checked only for this outer shape.
pub(crate) fn der_sequence(v: &[u8]) -> bool {
    let [0x30, first_len, rest @ ..] = v else {
        return false;
    };
    if *first_len < 0x80 {
        return rest.len() == usize::from(*first_len);
    }
    let n = usize::from(first_len & 0x7f);
    // 0x80 is the indefinite form (not DER); more than 8 length octets cannot be real.
    if n == 0 || n > 8 || rest.len() < n {
        return false;
    }
    let (len_octets, content) = rest.split_at(n);
    if len_octets[0] == 0 {
        return false; // not minimal
    }
    let mut len: u64 = 0;
    for &b in len_octets {
        len = (len << 8) | u64::from(b);
    }
    len >= 0x80 && u64::try_from(content.len()).is_ok_and(|c| c == len)
}

/// JPEG (.28): JFIF and Exif files start with the SOI marker `FF D8 FF`; the rest of the
/// image is not decoded.
pub(crate) fn jpeg(v: &[u8]) -> bool {
    v.starts_with(&[0xFF, 0xD8, 0xFF])
}

/// The permissive check for syntaxes whose string forms are not worth a full parser
/// (ACI Item, Data Quality, DSA Quality, DSE Type, Protocol Information, Presentation
/// Address, Supplier*, Modify Rights, LDAP Schema Definition/Description): non-empty UTF-8.
pub(crate) fn permissive_text(v: &[u8]) -> bool {
    directory_string(v)
}

/// Subtree Specification (.45, RFC 3672): a GSER value, checked permissively: UTF-8, starts
/// with `{` and ends with `}` (spaces around allowed), braces balanced outside quotes.
pub(crate) fn subtree_specification(v: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(v) else {
        return false;
    };
    let s = s.trim_matches(' ');
    if !s.starts_with('{') || !s.ends_with('}') {
        return false;
    }
    let mut depth: usize = 0;
    let mut in_quotes = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => in_quotes = !in_quotes,
            '{' if !in_quotes => depth += 1,
            '}' if !in_quotes => {
                depth = match depth.checked_sub(1) {
                    Some(d) => d,
                    None => return false,
                };
                if depth == 0 && i + 1 != s.len() {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0 && !in_quotes
}

/// nisNetgroupTripleSyntax (1.3.6.1.1.1.0.0, RFC 2307): `( host , user , domain )` where
/// each member may be empty; checked as: IA5, parenthesised, exactly two commas inside.
pub(crate) fn nis_netgroup_triple(v: &[u8]) -> bool {
    let Some(inner) = v.strip_prefix(b"(").and_then(|r| r.strip_suffix(b")")) else {
        return false;
    };
    inner.is_ascii() && !inner.contains(&b'(') && inner.iter().filter(|&&b| b == b',').count() == 2
}

/// bootParameterSyntax (1.3.6.1.1.1.0.1, RFC 2307): `key=server:/path`; checked as IA5
/// with a non-empty key before `=` and a `:` after it.
pub(crate) fn boot_parameter(v: &[u8]) -> bool {
    if !v.is_ascii() {
        return false;
    }
    match v.iter().position(|&b| b == b'=') {
        Some(eq) if eq > 0 => v[eq + 1..].contains(&b':'),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_lengths() {
        assert!(der_sequence(&[0x30, 0x00]));
        assert!(der_sequence(&[0x30, 0x01, 0x05]));
        assert!(!der_sequence(&[0x30, 0x02, 0x05]));
        assert!(!der_sequence(&[0x30, 0x81, 0x01, 0x05])); // not minimal
        let mut long = vec![0x30, 0x81, 0x80];
        long.extend(std::iter::repeat_n(0u8, 0x80));
        assert!(der_sequence(&long));
        assert!(!der_sequence(&[0x30, 0x80]));
        assert!(!der_sequence(&[0x31, 0x00]));
    }

    #[test]
    fn postal_escapes() {
        let mut lines = Vec::new();
        assert!(postal_lines(b"1 Main St\\24$Apt \\5c3", |l| {
            lines.push(l.to_vec());
            true
        }));
        assert_eq!(lines, vec![b"1 Main St$".to_vec(), b"Apt \\3".to_vec()]);
        assert!(!postal_address(b"a$$b"));
        assert!(!postal_address(b"a\\b"));
        assert!(!postal_address(b""));
    }
}
