//! Guide (1.3.6.1.4.1.1466.115.121.1.25) and Enhanced Guide (.21), RFC 4517 3.3.10/3.3.14.
//!
//! The `criteria` grammar nests (`term = EXCLAIM term / LPAREN criteria RPAREN / ...`); it
//! is checked by a flat state machine with a depth counter, not by recursion, and nesting
//! beyond [`MAX_GUIDE_DEPTH`] is refused. Spaces are allowed between tokens.

use super::text::oid;

/// Deepest parenthesis nesting accepted in guide criteria.
pub(crate) const MAX_GUIDE_DEPTH: usize = 64;

fn trim_spaces(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|&b| b != b' ').unwrap_or(v.len());
    let end = v.iter().rposition(|&b| b != b' ').map_or(start, |e| e + 1);
    &v[start..end]
}

/// `criteria = and-term *( BAR and-term )` and the rest of its grammar.
fn criteria(v: &[u8]) -> bool {
    let mut depth = 0usize;
    let mut expect_term = true;
    let mut i = 0;
    while i < v.len() {
        let b = v[i];
        if b == b' ' {
            i += 1;
            continue;
        }
        if expect_term {
            match b {
                b'!' => i += 1,
                b'(' => {
                    depth += 1;
                    if depth > MAX_GUIDE_DEPTH {
                        return false;
                    }
                    i += 1;
                }
                b'?' => {
                    let rest = &v[i..];
                    let len = if rest.starts_with(b"?true") {
                        5
                    } else if rest.starts_with(b"?false") {
                        6
                    } else {
                        return false;
                    };
                    i += len;
                    expect_term = false;
                }
                _ => {
                    let start = i;
                    while i < v.len() && (v[i].is_ascii_alphanumeric() || v[i] == b'-' || v[i] == b'.') {
                        i += 1;
                    }
                    if !oid(&v[start..i]) || v.get(i) != Some(&b'$') {
                        return false;
                    }
                    i += 1;
                    let start = i;
                    while i < v.len() && v[i].is_ascii_alphabetic() {
                        i += 1;
                    }
                    if ![&b"EQ"[..], b"SUBSTR", b"GE", b"LE", b"APPROX"].contains(&&v[start..i]) {
                        return false;
                    }
                    expect_term = false;
                }
            }
        } else {
            match b {
                b')' if depth > 0 => depth -= 1,
                b'|' | b'&' => expect_term = true,
                _ => return false,
            }
            i += 1;
        }
    }
    !expect_term && depth == 0
}

/// Guide: `[ object-class SHARP ] criteria`.
pub(crate) fn guide(v: &[u8]) -> bool {
    match v.iter().position(|&b| b == b'#') {
        Some(hash) => oid(trim_spaces(&v[..hash])) && criteria(&v[hash + 1..]),
        None => criteria(v),
    }
}

/// Enhanced Guide: `object-class SHARP WSP criteria WSP SHARP WSP subset`.
pub(crate) fn enhanced_guide(v: &[u8]) -> bool {
    let mut parts = v.split(|&b| b == b'#');
    let (Some(class), Some(crit), Some(subset), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let subset = trim_spaces(subset);
    oid(trim_spaces(class))
        && criteria(crit)
        && [&b"baseobject"[..], b"oneLevel", b"wholeSubtree"]
            .iter()
            .any(|s| s.eq_ignore_ascii_case(subset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guides() {
        assert!(enhanced_guide(b"person#(sn$EQ)#oneLevel"));
        assert!(enhanced_guide(
            b"2.5.6.6 # !(sn$EQ|cn$SUBSTR)&?true # wholeSubtree"
        ));
        assert!(!enhanced_guide(b"person#(sn$EQ)#everywhere"));
        assert!(!enhanced_guide(b"person#(sn$EQ#oneLevel"));
        assert!(!enhanced_guide(b"person#(sn$EQ)"));
        assert!(guide(b"(sn$EQ)"));
        assert!(guide(b"person#sn$EQ&(cn$APPROX|?false)"));
        assert!(!guide(b"person#sn$EQUAL"));
        assert!(!guide(b"sn$EQ&"));
        assert!(!guide(b"sn$EQ)"));
        assert!(!guide(b""));
        let deep = format!(
            "{}sn$EQ{}",
            "(".repeat(MAX_GUIDE_DEPTH + 1),
            ")".repeat(MAX_GUIDE_DEPTH + 1)
        );
        assert!(!guide(deep.as_bytes()));
        let ok = format!(
            "{}sn$EQ{}",
            "(".repeat(MAX_GUIDE_DEPTH),
            ")".repeat(MAX_GUIDE_DEPTH)
        );
        assert!(guide(ok.as_bytes()));
    }
}
