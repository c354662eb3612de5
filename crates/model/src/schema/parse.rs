//! Parser of one element description (RFC 4512 section 4.1), hand-written.
//!
//! The grammar is flat (one level of parenthesised lists), so the parser is a loop over
//! tokens with no recursion. Tolerated beyond RFC 4512, because real schema files (and
//! slapd) use them:
//! - fields in any order (each at most once); keywords in any case;
//! - any amount of whitespace (newlines and tabs included), none needed around `(`, `)`,
//!   `$` and quoted strings;
//! - OIDs, names and references quoted or not (`SUP 'top'`, `SYNTAX '1.2.3{32}'`,
//!   `NAME cn`), and the `{len}` bound inside or after the quotes;
//! - `SUP ( top )` for one superclass; lists without `$` separators;
//! - `objectidentifier` macros (`name` or `name:suffix`) as the element's OID and in
//!   `SYNTAX`;
//! - in quoted strings, `\` followed by two hex digits is that octet (RFC 4512 defines
//!   `\27` and `\5C`; any other pair is decoded too), and a `\` not followed by two hex
//!   digits is kept as a backslash.
//!
//! Not tolerated: an unclosed quote, a missing `)`, text after the closing `)`, names that
//! are not descriptors (RFC 4512 `keystring`), leading zeros in OID arcs.

use super::description::{
    AttributeTypeDescription, AttributeUsage, DitContentRuleDescription, DitStructureRuleDescription,
    Element, ElementKind, Extension, LdapSyntaxDescription, MatchingRuleDescription,
    MatchingRuleUseDescription, NameFormDescription, ObjectClassDescription, ObjectClassKind,
};
use super::error::{excerpt, ParseError, ParseErrorKind};
use super::limits::{MAX_DESCRIPTION_BYTES, MAX_EXTENSIONS, MAX_LIST_ITEMS, MAX_NAME_BYTES};
use super::macros::OidMacros;

/// A parse error at a byte offset of the description text; the caller turns the offset
/// into a line and column of its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawError {
    /// Byte offset into the description text (always a char boundary).
    pub offset: usize,
    /// What was wrong.
    pub kind: ParseErrorKind,
}

/// Parses one description of the given kind. Macros are expanded with `macros`.
pub(crate) fn parse_description(
    kind: ElementKind,
    text: &str,
    macros: &OidMacros,
) -> Result<Element, RawError> {
    if text.len() > MAX_DESCRIPTION_BYTES {
        return Err(RawError {
            offset: 0,
            kind: ParseErrorKind::TooLarge {
                what: "an element description",
                limit: MAX_DESCRIPTION_BYTES,
            },
        });
    }
    Parser {
        lexer: Lexer::new(text),
        macros,
        kind,
    }
    .description()
}

/// Parses one description given as a string (for example a value of `attributeTypes`),
/// without macros; errors carry the line and column within `text`.
pub fn parse_element(kind: ElementKind, text: &str) -> Result<Element, ParseError> {
    parse_description(kind, text, &OidMacros::new()).map_err(|e| {
        let (line, column) = line_column(text, e.offset);
        ParseError {
            line,
            column,
            kind: e.kind,
        }
    })
}

/// 1-based line and column (in characters) of a byte offset in `text`.
pub(crate) fn line_column(text: &str, offset: usize) -> (u32, u32) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (saturate(line), saturate(column))
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// RFC 4512 `numericoid`: `number *( DOT number )`, no leading zeros.
pub fn is_numeric_oid(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_NAME_BYTES
        && s.split('.').all(|arc| {
            !arc.is_empty()
                && arc.bytes().all(|b| b.is_ascii_digit())
                && (arc.len() == 1 || !arc.starts_with('0'))
        })
}

/// RFC 4512 `descr` (`keystring`): a letter, then letters, digits and hyphens.
pub fn is_descr(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && s.len() <= MAX_NAME_BYTES
}

/// A token of the description grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok<'a> {
    Open,
    Close,
    Dollar,
    /// A quoted string, unescaped.
    Quoted(String),
    /// A run of characters other than whitespace, `(`, `)`, `$` and `'`.
    Word(&'a str),
    End,
}

impl Tok<'_> {
    fn describe(&self) -> String {
        match self {
            Tok::Open => "(".to_owned(),
            Tok::Close => ")".to_owned(),
            Tok::Dollar => "$".to_owned(),
            Tok::Quoted(s) => format!("'{}'", excerpt(s)),
            Tok::Word(w) => excerpt(w),
            Tok::End => "the end of the description".to_owned(),
        }
    }
}

#[derive(Debug, Clone)]
struct Token<'a> {
    tok: Tok<'a>,
    /// Byte offset of the token's first character.
    at: usize,
}

/// Splits a description into tokens, on demand.
struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str) -> Lexer<'a> {
        Lexer { text, pos: 0 }
    }

    fn next(&mut self) -> Result<Token<'a>, RawError> {
        self.scan()
    }

    /// Whether the next character (no whitespace skipped) is `c`.
    fn next_char_is(&self, c: char) -> bool {
        self.text.get(self.pos..).is_some_and(|rest| rest.starts_with(c))
    }

    fn scan(&mut self) -> Result<Token<'a>, RawError> {
        let rest = self.text.get(self.pos..).unwrap_or("");
        let trimmed = rest.trim_start();
        self.pos += rest.len() - trimmed.len();
        let at = self.pos;
        let Some(first) = trimmed.chars().next() else {
            return Ok(Token { tok: Tok::End, at });
        };
        let tok = match first {
            '(' => {
                self.pos += 1;
                Tok::Open
            }
            ')' => {
                self.pos += 1;
                Tok::Close
            }
            '$' => {
                self.pos += 1;
                Tok::Dollar
            }
            '\'' => {
                let body_and_rest = &trimmed[1..];
                let Some(end) = body_and_rest.find('\'') else {
                    return Err(RawError {
                        offset: at,
                        kind: ParseErrorKind::UnterminatedString,
                    });
                };
                let body = &body_and_rest[..end];
                self.pos += end + 2;
                Tok::Quoted(unescape(body).ok_or(RawError {
                    offset: at,
                    kind: ParseErrorKind::InvalidEscape,
                })?)
            }
            _ => {
                let end = trimmed
                    .find(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | '$' | '\''))
                    .unwrap_or(trimmed.len());
                self.pos += end;
                Tok::Word(&trimmed[..end])
            }
        };
        Ok(Token { tok, at })
    }
}

/// Decodes `\HH` escapes; a `\` not followed by two hex digits stays a backslash.
/// Returns `None` when the result is not UTF-8.
fn unescape(body: &str) -> Option<String> {
    if !body.contains('\\') {
        return Some(body.to_owned());
    }
    let bytes = body.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\\' {
            let hex = bytes.get(i + 1..i + 3).and_then(|pair| {
                let hi = (pair[0] as char).to_digit(16)?;
                let lo = (pair[1] as char).to_digit(16)?;
                u8::try_from(hi * 16 + lo).ok()
            });
            if let Some(octet) = hex {
                out.push(octet);
                i += 3;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// The fields a description can have; which ones a kind accepts is in `field_for`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Name,
    Desc,
    Obsolete,
    /// One superior (attribute type).
    SupOne,
    /// A list of superiors (object class).
    SupList,
    /// A list of rule IDs (DIT structure rule).
    SupRules,
    Equality,
    Ordering,
    Substr,
    /// `noidlen` (attribute type).
    Syntax,
    /// `numericoid` (matching rule).
    SyntaxOid,
    SingleValue,
    Collective,
    NoUserModification,
    Usage,
    Kind(ObjectClassKind),
    Must,
    May,
    Aux,
    Not,
    Applies,
    Form,
    Oc,
}

impl Field {
    /// Bit used to detect a repeated field (the three class kinds share one).
    fn bit(self) -> u32 {
        let index = match self {
            Field::Name => 0,
            Field::Desc => 1,
            Field::Obsolete => 2,
            Field::SupOne | Field::SupList | Field::SupRules => 3,
            Field::Equality => 4,
            Field::Ordering => 5,
            Field::Substr => 6,
            Field::Syntax | Field::SyntaxOid => 7,
            Field::SingleValue => 8,
            Field::Collective => 9,
            Field::NoUserModification => 10,
            Field::Usage => 11,
            Field::Kind(_) => 12,
            Field::Must => 13,
            Field::May => 14,
            Field::Aux => 15,
            Field::Not => 16,
            Field::Applies => 17,
            Field::Form => 18,
            Field::Oc => 19,
        };
        1 << index
    }
}

/// The field a keyword names for this kind of element, if it has it.
fn field_for(kind: ElementKind, keyword: &str) -> Option<Field> {
    const COMMON: [(&str, Field); 3] = [
        ("NAME", Field::Name),
        ("DESC", Field::Desc),
        ("OBSOLETE", Field::Obsolete),
    ];
    let specific: &[(&str, Field)] = match kind {
        ElementKind::AttributeType => &[
            ("SUP", Field::SupOne),
            ("EQUALITY", Field::Equality),
            ("ORDERING", Field::Ordering),
            ("SUBSTR", Field::Substr),
            ("SYNTAX", Field::Syntax),
            ("SINGLE-VALUE", Field::SingleValue),
            ("COLLECTIVE", Field::Collective),
            ("NO-USER-MODIFICATION", Field::NoUserModification),
            ("USAGE", Field::Usage),
        ],
        ElementKind::ObjectClass => &[
            ("SUP", Field::SupList),
            ("ABSTRACT", Field::Kind(ObjectClassKind::Abstract)),
            ("STRUCTURAL", Field::Kind(ObjectClassKind::Structural)),
            ("AUXILIARY", Field::Kind(ObjectClassKind::Auxiliary)),
            ("MUST", Field::Must),
            ("MAY", Field::May),
        ],
        // RFC 4512 gives a syntax only DESC (and extensions); NAME is tolerated as slapd
        // does, OBSOLETE is refused below.
        ElementKind::LdapSyntax => &[],
        ElementKind::MatchingRule => &[("SYNTAX", Field::SyntaxOid)],
        ElementKind::MatchingRuleUse => &[("APPLIES", Field::Applies)],
        ElementKind::DitContentRule => &[
            ("AUX", Field::Aux),
            ("MUST", Field::Must),
            ("MAY", Field::May),
            ("NOT", Field::Not),
        ],
        ElementKind::DitStructureRule => &[("FORM", Field::Form), ("SUP", Field::SupRules)],
        ElementKind::NameForm => &[("OC", Field::Oc), ("MUST", Field::Must), ("MAY", Field::May)],
    };
    let common: &[(&str, Field)] = if kind == ElementKind::LdapSyntax {
        &COMMON[..2]
    } else {
        &COMMON
    };
    common
        .iter()
        .chain(specific)
        .find(|(k, _)| k.eq_ignore_ascii_case(keyword))
        .map(|&(_, field)| field)
}

/// Everything a description can hold, filled in field by field.
#[derive(Default)]
struct Fields {
    names: Vec<String>,
    desc: Option<String>,
    obsolete: bool,
    sup: Vec<String>,
    sup_rules: Vec<u32>,
    equality: Option<String>,
    ordering: Option<String>,
    substr: Option<String>,
    syntax: Option<String>,
    syntax_len: Option<u32>,
    single_value: bool,
    collective: bool,
    no_user_modification: bool,
    usage: AttributeUsage,
    kind: ObjectClassKind,
    must: Vec<String>,
    may: Vec<String>,
    aux: Vec<String>,
    not: Vec<String>,
    applies: Option<Vec<String>>,
    form: Option<String>,
    oc: Option<String>,
    extensions: Vec<Extension>,
    /// Bits of `Field::bit` seen so far.
    seen: u32,
}

struct Parser<'a, 'm> {
    lexer: Lexer<'a>,
    macros: &'m OidMacros,
    kind: ElementKind,
}

impl Parser<'_, '_> {
    fn description(mut self) -> Result<Element, RawError> {
        let open = self.lexer.next()?;
        if open.tok != Tok::Open {
            return Err(expected("'(' opening the description", &open));
        }
        let id_token = self.lexer.next()?;
        let start = id_token.at;
        let mut rule_id = 0;
        let mut oid = String::new();
        if self.kind == ElementKind::DitStructureRule {
            rule_id = rule_id_of(&id_token)?;
        } else {
            oid = self.element_oid(&id_token)?;
        }
        let mut fields = Fields::default();
        loop {
            let token = self.lexer.next()?;
            let keyword = match &token.tok {
                Tok::Close => break,
                Tok::Word(word) => *word,
                _ => return Err(expected("a keyword or ')'", &token)),
            };
            if keyword.len() > 2 && keyword.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("X-")) {
                self.extension(&mut fields, keyword, token.at)?;
                continue;
            }
            let Some(field) = field_for(self.kind, keyword) else {
                return Err(RawError {
                    offset: token.at,
                    kind: ParseErrorKind::UnknownKeyword {
                        keyword: excerpt(keyword),
                        kind: self.kind,
                    },
                });
            };
            if fields.seen & field.bit() != 0 {
                return Err(RawError {
                    offset: token.at,
                    kind: ParseErrorKind::DuplicateKeyword {
                        keyword: keyword.to_ascii_uppercase(),
                    },
                });
            }
            fields.seen |= field.bit();
            self.field(&mut fields, field)?;
        }
        let after = self.lexer.next()?;
        if after.tok != Tok::End {
            let rest = self.lexer.text.get(after.at..).unwrap_or("");
            return Err(RawError {
                offset: after.at,
                kind: ParseErrorKind::TrailingText { found: excerpt(rest) },
            });
        }
        self.build(oid, rule_id, fields, start)
    }

    /// Reads the value of one field into `fields`.
    fn field(&mut self, fields: &mut Fields, field: Field) -> Result<(), RawError> {
        match field {
            Field::Name => fields.names = self.qdescrs()?,
            Field::Desc => fields.desc = Some(self.qdstring()?),
            Field::Obsolete => fields.obsolete = true,
            Field::SupOne => fields.sup = vec![self.oid_ref()?],
            Field::SupList => fields.sup = self.oids()?,
            Field::SupRules => fields.sup_rules = self.rule_ids()?,
            Field::Equality => fields.equality = Some(self.oid_ref()?),
            Field::Ordering => fields.ordering = Some(self.oid_ref()?),
            Field::Substr => fields.substr = Some(self.oid_ref()?),
            Field::Syntax | Field::SyntaxOid => {
                let (oid, len) = self.noidlen()?;
                fields.syntax = Some(oid);
                if field == Field::Syntax {
                    fields.syntax_len = len;
                }
            }
            Field::SingleValue => fields.single_value = true,
            Field::Collective => fields.collective = true,
            Field::NoUserModification => fields.no_user_modification = true,
            Field::Usage => {
                let token = self.lexer.next()?;
                let word = match &token.tok {
                    Tok::Word(w) => *w,
                    Tok::Quoted(q) => q.as_str(),
                    _ => return Err(expected("a USAGE keyword", &token)),
                };
                fields.usage = AttributeUsage::from_keyword(word).ok_or_else(|| RawError {
                    offset: token.at,
                    kind: ParseErrorKind::InvalidUsage { text: excerpt(word) },
                })?;
            }
            Field::Kind(kind) => fields.kind = kind,
            Field::Must => fields.must = self.oids()?,
            Field::May => fields.may = self.oids()?,
            Field::Aux => fields.aux = self.oids()?,
            Field::Not => fields.not = self.oids()?,
            Field::Applies => fields.applies = Some(self.oids()?),
            Field::Form => fields.form = Some(self.oid_ref()?),
            Field::Oc => fields.oc = Some(self.oid_ref()?),
        }
        Ok(())
    }

    /// Builds the typed description, checking the fields each kind requires.
    fn build(&self, oid: String, rule_id: u32, f: Fields, start: usize) -> Result<Element, RawError> {
        let missing = |keyword: &'static str| RawError {
            offset: start,
            kind: ParseErrorKind::MissingField {
                keyword,
                kind: self.kind,
            },
        };
        Ok(match self.kind {
            ElementKind::AttributeType => {
                if f.sup.is_empty() && f.syntax.is_none() {
                    return Err(missing("SUP or SYNTAX"));
                }
                Element::AttributeType(AttributeTypeDescription {
                    oid,
                    names: f.names,
                    desc: f.desc,
                    obsolete: f.obsolete,
                    sup: f.sup.into_iter().next(),
                    equality: f.equality,
                    ordering: f.ordering,
                    substr: f.substr,
                    syntax: f.syntax,
                    syntax_len: f.syntax_len,
                    single_value: f.single_value,
                    collective: f.collective,
                    no_user_modification: f.no_user_modification,
                    usage: f.usage,
                    extensions: f.extensions,
                })
            }
            ElementKind::ObjectClass => Element::ObjectClass(ObjectClassDescription {
                oid,
                names: f.names,
                desc: f.desc,
                obsolete: f.obsolete,
                sup: f.sup,
                kind: f.kind,
                must: f.must,
                may: f.may,
                extensions: f.extensions,
            }),
            ElementKind::LdapSyntax => Element::LdapSyntax(LdapSyntaxDescription {
                oid,
                names: f.names,
                desc: f.desc,
                extensions: f.extensions,
            }),
            ElementKind::MatchingRule => Element::MatchingRule(MatchingRuleDescription {
                oid,
                names: f.names,
                desc: f.desc,
                obsolete: f.obsolete,
                syntax: f.syntax.ok_or_else(|| missing("SYNTAX"))?,
                extensions: f.extensions,
            }),
            ElementKind::MatchingRuleUse => Element::MatchingRuleUse(MatchingRuleUseDescription {
                oid,
                names: f.names,
                desc: f.desc,
                obsolete: f.obsolete,
                applies: f.applies.ok_or_else(|| missing("APPLIES"))?,
                extensions: f.extensions,
            }),
            ElementKind::DitContentRule => Element::DitContentRule(DitContentRuleDescription {
                oid,
                names: f.names,
                desc: f.desc,
                obsolete: f.obsolete,
                aux: f.aux,
                must: f.must,
                may: f.may,
                not: f.not,
                extensions: f.extensions,
            }),
            ElementKind::DitStructureRule => Element::DitStructureRule(DitStructureRuleDescription {
                rule_id,
                names: f.names,
                desc: f.desc,
                obsolete: f.obsolete,
                form: f.form.ok_or_else(|| missing("FORM"))?,
                sup: f.sup_rules,
                extensions: f.extensions,
            }),
            ElementKind::NameForm => {
                let oc = f.oc.ok_or_else(|| missing("OC"))?;
                if f.must.is_empty() {
                    return Err(missing("MUST"));
                }
                Element::NameForm(NameFormDescription {
                    oid,
                    names: f.names,
                    desc: f.desc,
                    obsolete: f.obsolete,
                    oc,
                    must: f.must,
                    may: f.may,
                    extensions: f.extensions,
                })
            }
        })
    }

    /// The element's own OID: numeric, or a macro (quoted or not).
    fn element_oid(&self, token: &Token<'_>) -> Result<String, RawError> {
        let text = match &token.tok {
            Tok::Word(w) => *w,
            Tok::Quoted(q) => q.as_str(),
            _ => return Err(expected("the element's OID", token)),
        };
        self.macros.expand(text).map_err(|kind| RawError {
            offset: token.at,
            kind,
        })
    }

    /// `qdescrs`: one name, or a parenthesised list of names (possibly empty).
    fn qdescrs(&mut self) -> Result<Vec<String>, RawError> {
        let token = self.lexer.next()?;
        match token.tok {
            Tok::Open => {}
            _ => return Ok(vec![name_of(&token)?]),
        }
        let mut names = Vec::new();
        loop {
            let token = self.lexer.next()?;
            if token.tok == Tok::Close {
                return Ok(names);
            }
            if names.len() == MAX_LIST_ITEMS {
                return Err(too_many(&token));
            }
            names.push(name_of(&token)?);
        }
    }

    /// `qdstring`: one quoted string.
    fn qdstring(&mut self) -> Result<String, RawError> {
        let token = self.lexer.next()?;
        match token.tok {
            Tok::Quoted(s) => Ok(s),
            _ => Err(expected("a quoted string", &token)),
        }
    }

    /// `oid`: one name or numeric OID (quoted or not).
    fn oid_ref(&mut self) -> Result<String, RawError> {
        let token = self.lexer.next()?;
        oid_ref_of(&token)
    }

    /// `oids`: one `oid`, or a parenthesised list separated by `$` (separators may be
    /// left out; an empty list or an empty entry is refused).
    fn oids(&mut self) -> Result<Vec<String>, RawError> {
        let token = self.lexer.next()?;
        match token.tok {
            Tok::Open => {}
            _ => return Ok(vec![oid_ref_of(&token)?]),
        }
        let mut oids = Vec::new();
        let mut after_dollar = false;
        loop {
            let token = self.lexer.next()?;
            match token.tok {
                Tok::Close if !oids.is_empty() && !after_dollar => return Ok(oids),
                Tok::Dollar if !oids.is_empty() && !after_dollar => after_dollar = true,
                Tok::Word(_) | Tok::Quoted(_) => {
                    if oids.len() == MAX_LIST_ITEMS {
                        return Err(too_many(&token));
                    }
                    oids.push(oid_ref_of(&token)?);
                    after_dollar = false;
                }
                _ => return Err(expected("a name or OID", &token)),
            }
        }
    }

    /// `noidlen`: a numeric OID (or macro) with an optional `{len}`, quoted or not; the
    /// bound may also follow a quoted OID directly (`'1.2.3'{32}`).
    fn noidlen(&mut self) -> Result<(String, Option<u32>), RawError> {
        let token = self.lexer.next()?;
        let text = match &token.tok {
            Tok::Word(w) => *w,
            Tok::Quoted(q) => q.as_str(),
            _ => return Err(expected("a syntax OID", &token)),
        };
        // Offsets inside a quoted string are not offsets of the source text (escapes).
        let bound_at = |i: usize| {
            if matches!(token.tok, Tok::Word(_)) {
                token.at + i
            } else {
                token.at
            }
        };
        let (oid_text, mut len) = match text.find('{') {
            Some(i) => (&text[..i], Some(length_of(&text[i..], bound_at(i))?)),
            None => (text, None),
        };
        let oid = self.macros.expand(oid_text).map_err(|kind| RawError {
            offset: token.at,
            kind,
        })?;
        if len.is_none() && self.lexer.next_char_is('{') {
            let bound = self.lexer.next()?;
            if let Tok::Word(w) = bound.tok {
                len = Some(length_of(w, bound.at)?);
            }
        }
        Ok((oid, len))
    }

    /// `ruleids`: one rule ID or a parenthesised list separated by spaces (`$` tolerated).
    fn rule_ids(&mut self) -> Result<Vec<u32>, RawError> {
        let token = self.lexer.next()?;
        match token.tok {
            Tok::Open => {}
            _ => return Ok(vec![rule_id_of(&token)?]),
        }
        let mut ids = Vec::new();
        loop {
            let token = self.lexer.next()?;
            match token.tok {
                Tok::Close if !ids.is_empty() => return Ok(ids),
                Tok::Dollar if !ids.is_empty() => {}
                _ => {
                    if ids.len() == MAX_LIST_ITEMS {
                        return Err(too_many(&token));
                    }
                    ids.push(rule_id_of(&token)?);
                }
            }
        }
    }

    /// An `X-` extension: its values are one quoted string or a parenthesised list.
    fn extension(&mut self, fields: &mut Fields, name: &str, at: usize) -> Result<(), RawError> {
        let valid = name.len() <= MAX_NAME_BYTES
            && name
                .bytes()
                .skip(2)
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid {
            return Err(RawError {
                offset: at,
                kind: ParseErrorKind::InvalidExtension { text: excerpt(name) },
            });
        }
        if fields.extensions.len() == MAX_EXTENSIONS {
            return Err(RawError {
                offset: at,
                kind: ParseErrorKind::TooLarge {
                    what: "the number of extensions",
                    limit: MAX_EXTENSIONS,
                },
            });
        }
        let token = self.lexer.next()?;
        let values = match token.tok {
            Tok::Quoted(s) => vec![s],
            Tok::Open => {
                let mut values = Vec::new();
                loop {
                    let token = self.lexer.next()?;
                    match token.tok {
                        Tok::Close => break values,
                        Tok::Quoted(_) if values.len() == MAX_LIST_ITEMS => return Err(too_many(&token)),
                        Tok::Quoted(s) => values.push(s),
                        _ => return Err(expected("a quoted string or ')'", &token)),
                    }
                }
            }
            _ => return Err(expected("a quoted string or '(' after an extension name", &token)),
        };
        fields.extensions.push(Extension {
            name: name.to_ascii_uppercase(),
            values,
        });
        Ok(())
    }
}

fn expected(what: &'static str, token: &Token<'_>) -> RawError {
    let kind = match token.tok {
        Tok::End => ParseErrorKind::UnexpectedEnd { expected: what },
        _ => ParseErrorKind::Expected {
            expected: what,
            found: token.tok.describe(),
        },
    };
    RawError {
        offset: token.at,
        kind,
    }
}

fn too_many(token: &Token<'_>) -> RawError {
    RawError {
        offset: token.at,
        kind: ParseErrorKind::TooLarge {
            what: "the number of entries in a list",
            limit: MAX_LIST_ITEMS,
        },
    }
}

/// A name (`qdescr`), quoted or (tolerated) bare.
fn name_of(token: &Token<'_>) -> Result<String, RawError> {
    let text = match &token.tok {
        Tok::Quoted(q) => q.as_str(),
        Tok::Word(w) => *w,
        _ => return Err(expected("a quoted name", token)),
    };
    if is_descr(text) {
        Ok(text.to_owned())
    } else {
        Err(RawError {
            offset: token.at,
            kind: ParseErrorKind::InvalidName { text: excerpt(text) },
        })
    }
}

/// A reference (`oid`): a name or a numeric OID, quoted or not.
fn oid_ref_of(token: &Token<'_>) -> Result<String, RawError> {
    let text = match &token.tok {
        Tok::Quoted(q) => q.as_str(),
        Tok::Word(w) => *w,
        _ => return Err(expected("a name or OID", token)),
    };
    if is_descr(text) || is_numeric_oid(text) {
        Ok(text.to_owned())
    } else {
        Err(RawError {
            offset: token.at,
            kind: ParseErrorKind::InvalidNameOrOid { text: excerpt(text) },
        })
    }
}

/// A `{digits}` bound.
fn length_of(text: &str, at: usize) -> Result<u32, RawError> {
    let digits = text.strip_prefix('{').and_then(|t| t.strip_suffix('}'));
    match digits {
        Some(d) if !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) => d.parse::<u32>().ok(),
        _ => None,
    }
    .ok_or_else(|| RawError {
        offset: at,
        kind: ParseErrorKind::InvalidLength { text: excerpt(text) },
    })
}

/// A DIT structure rule ID: decimal digits fitting 32 bits.
fn rule_id_of(token: &Token<'_>) -> Result<u32, RawError> {
    let text = match &token.tok {
        Tok::Word(w) => *w,
        Tok::Quoted(q) => q.as_str(),
        _ => return Err(expected("a rule ID", token)),
    };
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(id) = text.parse::<u32>() {
            return Ok(id);
        }
    }
    Err(RawError {
        offset: token.at,
        kind: ParseErrorKind::InvalidRuleId { text: excerpt(text) },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column("ab\ncdé f", 0), (1, 1));
        assert_eq!(line_column("ab\ncdé f", 3), (2, 1));
        assert_eq!(line_column("ab\ncdé f", 7), (2, 4));
    }

    #[test]
    fn unescape_keeps_lone_backslashes() {
        assert_eq!(unescape(r"a\27b\5cc\5Cd\x\4").as_deref(), Some(r"a'b\c\d\x\4"));
        assert_eq!(unescape(r"\c3"), None);
        assert_eq!(unescape(r"\c3\a9").as_deref(), Some("é"));
    }
}
