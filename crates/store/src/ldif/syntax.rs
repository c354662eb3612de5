//! The small grammar rules reader and writer share, so that what one accepts the other
//! writes (and the audit log, which writes LDIF lines of its own, decides as they do).

/// RFC 2849 `ldap-oid`: `number *("." number)` (leading zeros tolerated).
pub fn is_numeric_oid(s: &[u8]) -> bool {
    !s.is_empty()
        && s.split(|&b| b == b'.')
            .all(|part| !part.is_empty() && part.iter().all(u8::is_ascii_digit))
}

/// RFC 2849 `AttributeDescription`: `AttributeType *(";" option)`, where the type is an OID
/// or a name (`ALPHA *(ALPHA / DIGIT / "-")`) and an option is `1*(ALPHA / DIGIT / "-")`.
pub fn is_attribute_description(s: &[u8]) -> bool {
    let mut parts = s.split(|&b| b == b';');
    let Some(ty) = parts.next() else { return false };
    let type_ok = match ty.first() {
        Some(b) if b.is_ascii_digit() => is_numeric_oid(ty),
        Some(b) if b.is_ascii_alphabetic() => ty.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'-'),
        _ => false,
    };
    type_ok && parts.all(is_option)
}

/// An attribute option: `1*(ALPHA / DIGIT / "-")`.
pub fn is_option(opt: &[u8]) -> bool {
    !opt.is_empty() && opt.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'-')
}

/// Names that cannot be attributes of content and add records: after `dn:` they would be
/// read as the start of a change record (and `dn` twice is surely a mistake).
pub fn is_reserved_attribute(s: &str) -> bool {
    ["dn", "control", "changetype"]
        .iter()
        .any(|k| s.eq_ignore_ascii_case(k))
}

/// Whether a value may be written as text (`attr: value`): an RFC 2849 SAFE-STRING (no
/// leading space, `:` or `<`; only octets 0x01-0x7F other than CR and LF) that also does
/// not end in a space (readers differ on trailing spaces).
pub fn is_safe_string(v: &[u8]) -> bool {
    match (v.first(), v.last()) {
        (None, _) => true,
        (Some(b' ' | b':' | b'<'), _) | (_, Some(b' ')) => false,
        _ => safe_chars(v),
    }
}

/// Every octet of `v` is a SAFE-CHAR (0x01-0x7F but CR and LF), eight octets at a time:
/// the audit log asks this of every value it writes, and octet by octet it was a tenth of
/// the log's work per modify (callgrind).
fn safe_chars(v: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // Nonzero exactly when some octet of `x` is zero (no octet of `x` has its high bit set
    // where it is used below).
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH != 0;
    let mut chunks = v.chunks_exact(8);
    for chunk in &mut chunks {
        let w = u64::from_ne_bytes(chunk.try_into().expect("eight octets"));
        if w & HIGH != 0
            || has_zero(w)
            || has_zero(w ^ (ONES * u64::from(b'\r')))
            || has_zero(w ^ (ONES * u64::from(b'\n')))
        {
            return false;
        }
    }
    chunks
        .remainder()
        .iter()
        .all(|&b| matches!(b, 0x01..=0x7f) && b != b'\r' && b != b'\n')
}

#[cfg(test)]
mod tests {
    #[test]
    fn safe_chars_eight_at_a_time_are_safe_chars_one_at_a_time() {
        let one_at_a_time = |v: &[u8]| {
            v.iter()
                .all(|&b| matches!(b, 0x01..=0x7f) && b != b'\r' && b != b'\n')
        };
        let mut v = b"cn=Some Value, ou=People; dc=example".to_vec();
        for len in 0..v.len() {
            for at in 0..len {
                for bad in [
                    0x00,
                    b'\r',
                    b'\n',
                    0x80,
                    0xff,
                    0x0b,
                    0x7f,
                    0x01,
                    0x8a,
                    0x8d,
                    0x0a ^ 0x80,
                ] {
                    let keep = v[at];
                    v[at] = bad;
                    assert_eq!(
                        super::safe_chars(&v[..len]),
                        one_at_a_time(&v[..len]),
                        "{:?}",
                        &v[..len]
                    );
                    v[at] = keep;
                }
            }
            assert!(super::safe_chars(&v[..len]));
        }
    }
}
