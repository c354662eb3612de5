//! Validation of the RFC 4512 section 4.1 schema descriptions used as attribute values
//! (Attribute Type, Object Class, LDAP Syntax, Matching Rule, Matching Rule Use, DIT
//! Content Rule, DIT Structure Rule and Name Form descriptions).
//!
//! This checks the form only: the first element, the keywords allowed for the kind, each
//! at most once, each followed by the value shape RFC 4512 gives it, and `X-` extensions.
//! Keywords may come in any order (RFC 4512 fixes one, but servers read any). Whether the
//! OIDs name anything is the schema's business. Whitespace may be spaces, tabs or line
//! breaks. The parse is a flat token walk: lists cannot nest, so nothing recurses.

use super::text::{descr, number, numeric_oid, oid};

/// Most tokens read from one description; bounds the work on hostile input.
const MAX_TOKENS: usize = 65_536;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Open,
    Close,
    Dollar,
    Quoted(&'a [u8]),
    Word(&'a [u8]),
}

fn tokenize(v: &[u8]) -> Option<Vec<Token<'_>>> {
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < v.len() {
        if tokens.len() == MAX_TOKENS {
            return None;
        }
        match v[i] {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b'(' => {
                tokens.push(Token::Open);
                i += 1;
            }
            b')' => {
                tokens.push(Token::Close);
                i += 1;
            }
            b'$' => {
                tokens.push(Token::Dollar);
                i += 1;
            }
            b'\'' => {
                let len = v[i + 1..].iter().position(|&b| b == b'\'')?;
                tokens.push(Token::Quoted(&v[i + 1..i + 1 + len]));
                i += len + 2;
            }
            _ => {
                let start = i;
                while i < v.len()
                    && !matches!(v[i], b' ' | b'\t' | b'\r' | b'\n' | b'(' | b')' | b'$' | b'\'')
                {
                    i += 1;
                }
                tokens.push(Token::Word(&v[start..i]));
            }
        }
    }
    Some(tokens)
}

/// What follows a keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Flag,
    Qdescrs,
    Qdstring,
    Oid,
    Oids,
    Noidlen,
    NumericOid,
    Usage,
    RuleIds,
}

/// The kinds of description, with their first element and keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    AttributeType,
    ObjectClass,
    LdapSyntax,
    MatchingRule,
    MatchingRuleUse,
    DitContentRule,
    DitStructureRule,
    NameForm,
}

impl Kind {
    fn keywords(self) -> &'static [(&'static str, Shape)] {
        use Shape::*;
        match self {
            Kind::AttributeType => &[
                ("NAME", Qdescrs),
                ("DESC", Qdstring),
                ("OBSOLETE", Flag),
                ("SUP", Oid),
                ("EQUALITY", Oid),
                ("ORDERING", Oid),
                ("SUBSTR", Oid),
                ("SYNTAX", Noidlen),
                ("SINGLE-VALUE", Flag),
                ("COLLECTIVE", Flag),
                ("NO-USER-MODIFICATION", Flag),
                ("USAGE", Usage),
            ],
            Kind::ObjectClass => &[
                ("NAME", Qdescrs),
                ("DESC", Qdstring),
                ("OBSOLETE", Flag),
                ("SUP", Oids),
                ("ABSTRACT", Flag),
                ("STRUCTURAL", Flag),
                ("AUXILIARY", Flag),
                ("MUST", Oids),
                ("MAY", Oids),
            ],
            Kind::LdapSyntax => &[("DESC", Qdstring)],
            Kind::MatchingRule => &[
                ("NAME", Qdescrs),
                ("DESC", Qdstring),
                ("OBSOLETE", Flag),
                ("SYNTAX", NumericOid),
            ],
            Kind::MatchingRuleUse => &[
                ("NAME", Qdescrs),
                ("DESC", Qdstring),
                ("OBSOLETE", Flag),
                ("APPLIES", Oids),
            ],
            Kind::DitContentRule => &[
                ("NAME", Qdescrs),
                ("DESC", Qdstring),
                ("OBSOLETE", Flag),
                ("AUX", Oids),
                ("MUST", Oids),
                ("MAY", Oids),
                ("NOT", Oids),
            ],
            Kind::DitStructureRule => &[
                ("NAME", Qdescrs),
                ("DESC", Qdstring),
                ("OBSOLETE", Flag),
                ("FORM", Oid),
                ("SUP", RuleIds),
            ],
            Kind::NameForm => &[
                ("NAME", Qdescrs),
                ("DESC", Qdstring),
                ("OBSOLETE", Flag),
                ("OC", Oid),
                ("MUST", Oids),
                ("MAY", Oids),
            ],
        }
    }

    /// Keywords a description of this kind must have.
    fn required(self) -> &'static [&'static str] {
        match self {
            Kind::MatchingRule => &["SYNTAX"],
            Kind::MatchingRuleUse => &["APPLIES"],
            Kind::DitStructureRule => &["FORM"],
            Kind::NameForm => &["OC", "MUST"],
            _ => &[],
        }
    }
}

/// RFC 4512 `dstring = 1*( QS / QQ / QUTF8 )`: UTF-8, non-empty, `'` and `\` only as the
/// escapes `\27` and `\5C`.
fn dstring(v: &[u8]) -> bool {
    if v.is_empty() || std::str::from_utf8(v).is_err() {
        return false;
    }
    let mut i = 0;
    while i < v.len() {
        if v[i] == b'\\' {
            match v.get(i + 1..i + 3) {
                Some(e) if e == b"27" || e.eq_ignore_ascii_case(b"5C") => i += 3,
                _ => return false,
            }
        } else {
            i += 1;
        }
    }
    true
}

/// RFC 4512 `xstring = "X" HYPHEN 1*( ALPHA / HYPHEN / USCORE )`.
fn xstring(v: &[u8]) -> bool {
    v.len() > 2
        && v.starts_with(b"X-")
        && v[2..]
            .iter()
            .all(|&b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')
}

fn noidlen(v: &[u8]) -> bool {
    match v.iter().position(|&b| b == b'{') {
        None => numeric_oid(v),
        Some(brace) => numeric_oid(&v[..brace]) && v.ends_with(b"}") && number(&v[brace + 1..v.len() - 1]),
    }
}

/// Reads a value that is one item or a parenthesised list of items (separated by `$`
/// when `dollars`); returns the index after it, or `None`.
fn list(
    tokens: &[Token<'_>],
    mut i: usize,
    dollars: bool,
    item: impl Fn(&Token<'_>) -> bool,
) -> Option<usize> {
    match tokens.get(i)? {
        Token::Open if dollars => {
            // oidlist = oid *( WSP DOLLAR WSP oid ): at least one item.
            if !item(tokens.get(i + 1)?) {
                return None;
            }
            i += 2;
            loop {
                match tokens.get(i)? {
                    Token::Close => return Some(i + 1),
                    Token::Dollar if item(tokens.get(i + 1)?) => i += 2,
                    _ => return None,
                }
            }
        }
        Token::Open => {
            // qdescrlist, qdstringlist, ruleidlist: items separated by spaces, maybe none.
            i += 1;
            loop {
                match tokens.get(i)? {
                    Token::Close => return Some(i + 1),
                    t if item(t) => i += 1,
                    _ => return None,
                }
            }
        }
        t if item(t) => Some(i + 1),
        _ => None,
    }
}

fn word(t: &Token<'_>, check: fn(&[u8]) -> bool) -> bool {
    matches!(t, Token::Word(w) if check(w))
}

/// Checks a description of the given kind.
pub(crate) fn validate(kind: Kind, v: &[u8]) -> bool {
    if std::str::from_utf8(v).is_err() {
        return false;
    }
    let Some(tokens) = tokenize(v) else { return false };
    if tokens.first() != Some(&Token::Open) || tokens.last() != Some(&Token::Close) || tokens.len() < 3 {
        return false;
    }
    let first_ok = match tokens[1] {
        Token::Word(w) if kind == Kind::DitStructureRule => number(w),
        Token::Word(w) => numeric_oid(w),
        _ => false,
    };
    if !first_ok {
        return false;
    }
    let keywords = kind.keywords();
    let mut seen: u32 = 0;
    let end = tokens.len() - 1;
    let mut i = 2;
    while i < end {
        let Token::Word(keyword) = tokens[i] else {
            return false;
        };
        i += 1;
        if xstring(keyword) {
            match list(
                &tokens[..end],
                i,
                false,
                |t| matches!(t, Token::Quoted(q) if dstring(q)),
            ) {
                Some(next) => i = next,
                None => return false,
            }
            continue;
        }
        let Some(index) = keywords.iter().position(|(k, _)| k.as_bytes() == keyword) else {
            return false;
        };
        if seen & (1 << index) != 0 {
            return false;
        }
        seen |= 1 << index;
        let toks = &tokens[..end];
        let next = match keywords[index].1 {
            Shape::Flag => Some(i),
            Shape::Qdescrs => list(toks, i, false, |t| matches!(t, Token::Quoted(q) if descr(q))),
            Shape::Qdstring => matches!(toks.get(i), Some(Token::Quoted(q)) if dstring(q)).then_some(i + 1),
            Shape::Oid => toks.get(i).filter(|t| word(t, oid)).map(|_| i + 1),
            Shape::Oids => list(toks, i, true, |t| word(t, oid)),
            Shape::Noidlen => toks.get(i).filter(|t| word(t, noidlen)).map(|_| i + 1),
            Shape::NumericOid => toks.get(i).filter(|t| word(t, numeric_oid)).map(|_| i + 1),
            Shape::Usage => toks
                .get(i)
                .filter(|t| {
                    matches!(t, Token::Word(w) if [&b"userApplications"[..], b"directoryOperation", b"distributedOperation", b"dSAOperation"].contains(w))
                })
                .map(|_| i + 1),
            Shape::RuleIds => list(toks, i, false, |t| word(t, number)),
        };
        match next {
            Some(n) => i = n,
            None => return false,
        }
    }
    // At most one object class kind.
    if kind == Kind::ObjectClass {
        let kinds = (4..=6).filter(|&k| seen & (1 << k) != 0).count();
        if kinds > 1 {
            return false;
        }
    }
    kind.required().iter().all(|r| {
        keywords
            .iter()
            .position(|(k, _)| k == r)
            .is_some_and(|ix| seen & (1 << ix) != 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_types() {
        let ok = [
            "( 2.5.4.3 NAME 'cn' SUP name )",
            "( 2.5.4.0 NAME 'objectClass' EQUALITY objectIdentifierMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.38 )",
            "( 2.5.4.41 NAME 'name' EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15{32768} )",
            "( 2.5.18.1 NAME 'createTimestamp' EQUALITY generalizedTimeMatch ORDERING generalizedTimeOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 SINGLE-VALUE NO-USER-MODIFICATION USAGE directoryOperation )",
            "( 0.9.2342.19200300.100.1.1 NAME ( 'uid' 'userid' ) DESC 'RFC1274: user identifier' X-ORIGIN 'RFC 4519' )",
            "(1.2.3 NAME('a''b')DESC 'it\\27s')",
            "( 1.2.3 X-ORDERED 'VALUES' X-LIST ( 'a' 'b' ) )",
        ];
        for v in ok {
            assert!(validate(Kind::AttributeType, v.as_bytes()), "{v}");
        }
        let bad = [
            "( 2.5.4.3 NAME 'cn' NAME 'x' )",
            "( cn NAME 'cn' )",
            "2.5.4.3 NAME 'cn'",
            "( 2.5.4.3 NAME 'cn' USAGE nobody )",
            "( 2.5.4.3 NAME 'c n' )",
            "( 2.5.4.3 DESC 'it's' )",
            "( 2.5.4.3 SYNTAX 1.2.3{x} )",
            "( 2.5.4.3 MUST cn )",
            "( 2.5.4.3 NAME 'cn' ) )",
            "( 2.5.4.3 NAME ( 'cn' )",
            "( 2.5.4.3 'cn' )",
            "( 2.5.4.3 X-Y 'a' X-Z )",
        ];
        for v in bad {
            assert!(!validate(Kind::AttributeType, v.as_bytes()), "{v}");
        }
    }

    #[test]
    fn other_kinds() {
        assert!(validate(
            Kind::ObjectClass,
            b"( 2.5.6.6 NAME 'person' SUP top STRUCTURAL MUST ( sn $ cn ) MAY ( userPassword $ telephoneNumber ) )"
        ));
        assert!(!validate(
            Kind::ObjectClass,
            b"( 2.5.6.6 NAME 'person' MUST ( sn cn ) )"
        ));
        assert!(!validate(
            Kind::ObjectClass,
            b"( 2.5.6.6 NAME 'person' MUST ( sn $ ) )"
        ));
        assert!(!validate(Kind::ObjectClass, b"( 2.5.6.6 ABSTRACT STRUCTURAL )"));
        assert!(validate(
            Kind::LdapSyntax,
            b"( 1.3.6.1.4.1.1466.115.121.1.15 DESC 'Directory String' )"
        ));
        assert!(!validate(
            Kind::LdapSyntax,
            b"( 1.3.6.1.4.1.1466.115.121.1.15 NAME 'x' )"
        ));
        assert!(validate(
            Kind::MatchingRule,
            b"( 2.5.13.2 NAME 'caseIgnoreMatch' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )"
        ));
        assert!(!validate(
            Kind::MatchingRule,
            b"( 2.5.13.2 NAME 'caseIgnoreMatch' )"
        ));
        assert!(validate(
            Kind::MatchingRuleUse,
            b"( 2.5.13.16 APPLIES ( givenName $ surname ) )"
        ));
        assert!(validate(
            Kind::DitContentRule,
            b"( 2.5.6.4 DESC 'content rule for organization' NOT ( x121Address $ telexNumber ) )"
        ));
        assert!(validate(
            Kind::DitStructureRule,
            b"( 2 DESC 'organization structure rule' FORM 2.5.15.3 SUP ( 1 3 ) )"
        ));
        assert!(!validate(Kind::DitStructureRule, b"( 2.5 FORM 2.5.15.3 )"));
        assert!(validate(
            Kind::NameForm,
            b"( 2.5.15.3 NAME 'orgNameForm' OC organization MUST o )"
        ));
        assert!(!validate(
            Kind::NameForm,
            b"( 2.5.15.3 NAME 'orgNameForm' OC organization )"
        ));
    }
}
