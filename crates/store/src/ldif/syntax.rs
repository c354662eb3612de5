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
        _ => v
            .iter()
            .all(|&b| matches!(b, 0x01..=0x7f) && b != b'\r' && b != b'\n'),
    }
}
