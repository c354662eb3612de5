//! The two schema file formats, read into element descriptions with their places.
//!
//! **OpenLDAP `.schema`** (slapd.conf syntax), read as slapd reads it:
//! 1. A line that starts with whitespace continues the previous line (its first whitespace
//!    character becomes a space); a line ending in a single `\` is joined with the next
//!    line as is.
//! 2. Any other line starts a new logical line. An empty line ends one. A logical line
//!    starting with `#` is a comment, continuation lines included (so commenting out the
//!    first line of a definition comments out all of it).
//! 3. Tolerance beyond slapd: a continuation line whose first non-blank character is `#`
//!    is skipped, so one field of a definition can be commented out.
//! 4. The first word is the directive, case-insensitive: `attributetype`, `objectclass`,
//!    `objectidentifier`, `ldapsyntax`, `ditcontentrule`, `matchingrule`,
//!    `matchingruleuse`, `ditstructurerule`, `nameform` (plural forms too); the rest is
//!    the description, or for `objectidentifier` a name and an OID.
//!
//! **LDIF** (RFC 2849), as cn=config exports and 389-ds / ApacheDS schema files are:
//! 1. A line starting with a space (a tab is tolerated) continues the previous one, minus
//!    that one character; `#` lines (and their continuations) are comments; empty lines
//!    separate records; `-` lines (change records) are skipped.
//! 2. Values of `attributeTypes`, `objectClasses`, `ldapSyntaxes`, `matchingRules`,
//!    `matchingRuleUse`, `dITContentRules`, `dITStructureRules`, `nameForms`, their
//!    `olc` forms, and `olcObjectIdentifier` are read, whatever the record (`dn:`,
//!    `changetype:` and every other attribute are ignored); attribute options
//!    (`;x-foo`) are ignored.
//! 3. `attr:: base64` values are decoded; `attr:< URL` values are refused; a leading
//!    `{n}` ordering prefix (cn=config) is removed.
//!
//! Errors point at the line and column of the file: a description assembled from several
//! lines keeps a map from its offsets back to the lines. Inside a base64 value the
//! position is that of the value.

use std::path::Path;
use std::sync::Arc;

use super::description::{Element, ElementKind};
use super::error::{excerpt, Location, ParseErrorKind, SchemaError};
use super::limits::{MAX_DESCRIPTION_BYTES, MAX_ELEMENTS, MAX_FILE_BYTES};
use super::macros::{DefineError, OidMacros};
use super::parse::parse_description;

/// The format of a schema file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaFormat {
    /// OpenLDAP `.schema` (slapd.conf) syntax.
    OpenLdap,
    /// LDIF: cn=config (`olcAttributeTypes: {0}( ... )`) or subschema entries
    /// (`attributeTypes: ( ... )`).
    Ldif,
}

impl SchemaFormat {
    /// The format a file name implies: `.ldif` (any case) is LDIF, anything else the
    /// OpenLDAP `.schema` syntax.
    pub fn from_path(path: &Path) -> SchemaFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("ldif") => SchemaFormat::Ldif,
            _ => SchemaFormat::OpenLdap,
        }
    }
}

/// One element read from a file, with the place its definition starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// The element.
    pub element: Element,
    /// Where its definition starts (the directive or the LDIF attribute).
    pub location: Location,
}

/// Reads a whole schema file: its elements, in order. `objectidentifier` macros it
/// defines are added to `macros` (and may be used by later files of the same load).
pub fn parse_file(
    file: &str,
    text: &str,
    format: SchemaFormat,
    macros: &mut OidMacros,
) -> Result<Vec<Definition>, SchemaError> {
    let file: Arc<str> = Arc::from(file);
    if text.len() > MAX_FILE_BYTES {
        return Err(SchemaError::Parse {
            at: Location {
                file,
                line: 1,
                column: 1,
            },
            reason: ParseErrorKind::TooLarge {
                what: "a schema file",
                limit: MAX_FILE_BYTES,
            },
        });
    }
    // A reader stops at the first malformed line; the statements before it are parsed
    // first, so that the error reported is the first one in the file.
    let mut statements = Vec::new();
    let read = match format {
        SchemaFormat::OpenLdap => read_openldap(text, &file, &mut statements),
        SchemaFormat::Ldif => read_ldif(text, &file, &mut statements),
    };
    let mut definitions = Vec::new();
    for statement in statements {
        let location = Location {
            file: file.clone(),
            line: statement.line,
            column: statement.column,
        };
        let body = statement.text.get(statement.body_start..).unwrap_or("");
        let error_at = |offset: usize, reason: ParseErrorKind| {
            let (line, column) = statement
                .map
                .locate(&statement.text, statement.body_start + offset);
            SchemaError::Parse {
                at: Location {
                    file: file.clone(),
                    line,
                    column,
                },
                reason,
            }
        };
        match statement.kind {
            StatementKind::Macro => {
                let words: Vec<&str> = body.split_whitespace().collect();
                let [name, value] = words.as_slice() else {
                    return Err(SchemaError::Parse {
                        at: location,
                        reason: ParseErrorKind::MacroSyntax,
                    });
                };
                match macros.define(name, value, location.clone()) {
                    Ok(()) => {}
                    Err(DefineError::Invalid(reason)) => {
                        let name_at = body.find(name).unwrap_or(0);
                        let after_name = name_at + name.len();
                        let value_at =
                            after_name + body.get(after_name..).and_then(|r| r.find(value)).unwrap_or(0);
                        let at = if matches!(reason, ParseErrorKind::InvalidMacroName { .. }) {
                            name_at
                        } else {
                            value_at
                        };
                        return Err(error_at(at, reason));
                    }
                    Err(DefineError::Conflict {
                        previous,
                        previous_oid,
                        oid,
                    }) => {
                        return Err(SchemaError::MacroConflict {
                            at: location,
                            previous,
                            name: (*name).to_owned(),
                            what: format!("{oid} here, {previous_oid} there"),
                        });
                    }
                }
            }
            StatementKind::Element(kind) => {
                if definitions.len() == MAX_ELEMENTS {
                    return Err(SchemaError::TooLarge {
                        what: "the number of schema elements",
                        limit: MAX_ELEMENTS,
                    });
                }
                let element =
                    parse_description(kind, body, macros).map_err(|e| error_at(e.offset, e.kind))?;
                definitions.push(Definition { element, location });
            }
        }
    }
    read.map(|()| definitions)
}

/// What a statement defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StatementKind {
    Element(ElementKind),
    Macro,
}

/// One logical statement of a file: a description (or macro definition) with the map
/// from its text back to the file.
struct Statement {
    kind: StatementKind,
    /// The assembled logical line (or decoded value).
    text: String,
    /// Where the description (or the macro's name) starts in `text`.
    body_start: usize,
    map: SourceMap,
    /// Where the statement starts in the file.
    line: u32,
    column: u32,
}

/// Maps byte offsets of an assembled text back to file lines and columns.
#[derive(Debug, Default)]
struct SourceMap {
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, Copy)]
struct Piece {
    /// Offset in the assembled text where this piece starts.
    offset: usize,
    line: u32,
    column: u32,
    /// False inside decoded (base64) text: every offset maps to the piece's start.
    exact: bool,
}

impl SourceMap {
    fn push(&mut self, offset: usize, line: u32, column: u32, exact: bool) {
        self.pieces.push(Piece {
            offset,
            line,
            column,
            exact,
        });
    }

    fn locate(&self, text: &str, offset: usize) -> (u32, u32) {
        let index = self.pieces.partition_point(|p| p.offset <= offset);
        let Some(piece) = index.checked_sub(1).and_then(|i| self.pieces.get(i)) else {
            return self.pieces.first().map_or((1, 1), |p| (p.line, p.column));
        };
        if !piece.exact {
            return (piece.line, piece.column);
        }
        let chars = text.get(piece.offset..offset).map_or(0, |s| s.chars().count());
        (
            piece.line,
            piece
                .column
                .saturating_add(u32::try_from(chars).unwrap_or(u32::MAX)),
        )
    }
}

/// A logical line being assembled.
struct Logical {
    text: String,
    map: SourceMap,
    line: u32,
    comment: bool,
    /// The previous physical line ended with a `\` (OpenLDAP format only).
    joined: bool,
}

impl Logical {
    fn start(line: &str, line_no: u32, comment: bool) -> Logical {
        let mut map = SourceMap::default();
        map.push(0, line_no, 1, true);
        Logical {
            text: line.to_owned(),
            map,
            line: line_no,
            comment,
            joined: false,
        }
    }

    fn append(&mut self, piece: &str, line_no: u32, column: u32) -> Result<(), ParseErrorKind> {
        if self.text.len() + piece.len() > MAX_DESCRIPTION_BYTES {
            return Err(ParseErrorKind::TooLarge {
                what: "an element description",
                limit: MAX_DESCRIPTION_BYTES,
            });
        }
        self.map.push(self.text.len(), line_no, column, true);
        self.text.push_str(piece);
        Ok(())
    }
}

fn line_number(index: usize) -> u32 {
    u32::try_from(index + 1).unwrap_or(u32::MAX)
}

fn parse_error(file: &Arc<str>, line: u32, column: u32, reason: ParseErrorKind) -> SchemaError {
    SchemaError::Parse {
        at: Location {
            file: file.clone(),
            line,
            column,
        },
        reason,
    }
}

/// Splits an OpenLDAP `.schema` file into statements.
fn read_openldap(text: &str, file: &Arc<str>, statements: &mut Vec<Statement>) -> Result<(), SchemaError> {
    let mut current: Option<Logical> = None;
    for (index, raw) in text.split('\n').enumerate() {
        let line_no = line_number(index);
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let starts_blank = line.starts_with([' ', '\t']);
        if let Some(logical) = current.as_mut() {
            if logical.joined {
                // The previous line ended in `\`: this line is appended as is.
                logical.joined = false;
                logical
                    .append(line, line_no, 1)
                    .map_err(|r| parse_error(file, line_no, 1, r))?;
                mark_joined(logical);
                continue;
            }
            if starts_blank {
                if !logical.comment && !line.trim_start().starts_with('#') {
                    // The first whitespace character becomes a space (both are one byte).
                    let piece = format!(" {}", &line[1..]);
                    logical
                        .append(&piece, line_no, 1)
                        .map_err(|r| parse_error(file, line_no, 1, r))?;
                    mark_joined(logical);
                }
                continue;
            }
            finish_openldap(current.take(), file, statements)?;
        } else if starts_blank && line.trim().is_empty() {
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let mut logical = Logical::start(line, line_no, line.trim_start().starts_with('#'));
        mark_joined(&mut logical);
        current = Some(logical);
    }
    finish_openldap(current, file, statements)
}

/// Applies slapd's trailing-backslash rule: a logical line ending in a single `\` loses
/// it and is joined with the next physical line.
fn mark_joined(logical: &mut Logical) {
    if logical.comment {
        return;
    }
    if logical.text.ends_with('\\') && !logical.text.ends_with("\\\\") {
        logical.text.pop();
        logical.joined = true;
    }
}

/// The statement kind a `.schema` directive or LDIF attribute names.
fn kind_of_directive(word: &str) -> Option<StatementKind> {
    Some(match word.to_ascii_lowercase().as_str() {
        "attributetype" | "attributetypes" => StatementKind::Element(ElementKind::AttributeType),
        "objectclass" | "objectclasses" => StatementKind::Element(ElementKind::ObjectClass),
        "ldapsyntax" | "ldapsyntaxes" => StatementKind::Element(ElementKind::LdapSyntax),
        "matchingrule" | "matchingrules" => StatementKind::Element(ElementKind::MatchingRule),
        "matchingruleuse" | "matchingruleuses" => StatementKind::Element(ElementKind::MatchingRuleUse),
        "ditcontentrule" | "ditcontentrules" => StatementKind::Element(ElementKind::DitContentRule),
        "ditstructurerule" | "ditstructurerules" => StatementKind::Element(ElementKind::DitStructureRule),
        "nameform" | "nameforms" => StatementKind::Element(ElementKind::NameForm),
        "objectidentifier" => StatementKind::Macro,
        _ => return None,
    })
}

/// The statement kind an LDIF attribute holds: the subschema attribute names (RFC 4512
/// section 4.2, plural) and their cn=config `olc` forms, and `olcObjectIdentifier`. The
/// entry's own `objectClass` attribute is not one of them.
fn kind_of_ldif_attribute(attribute: &str) -> Option<StatementKind> {
    let lower = attribute.to_ascii_lowercase();
    let (olc, base) = match lower.strip_prefix("olc") {
        Some(base) => (true, base),
        None => (false, lower.as_str()),
    };
    Some(match base {
        "attributetypes" => StatementKind::Element(ElementKind::AttributeType),
        "objectclasses" => StatementKind::Element(ElementKind::ObjectClass),
        "ldapsyntaxes" => StatementKind::Element(ElementKind::LdapSyntax),
        "matchingrules" => StatementKind::Element(ElementKind::MatchingRule),
        "matchingruleuse" => StatementKind::Element(ElementKind::MatchingRuleUse),
        "ditcontentrules" => StatementKind::Element(ElementKind::DitContentRule),
        "ditstructurerules" => StatementKind::Element(ElementKind::DitStructureRule),
        "nameforms" => StatementKind::Element(ElementKind::NameForm),
        "objectidentifier" if olc => StatementKind::Macro,
        _ => return None,
    })
}

fn finish_openldap(
    logical: Option<Logical>,
    file: &Arc<str>,
    out: &mut Vec<Statement>,
) -> Result<(), SchemaError> {
    let Some(logical) = logical else { return Ok(()) };
    if logical.comment {
        return Ok(());
    }
    let start = logical.text.len() - logical.text.trim_start().len();
    let rest = &logical.text[start..];
    let end = start + rest.find(char::is_whitespace).unwrap_or(rest.len());
    let directive = &logical.text[start..end];
    if directive.is_empty() {
        return Ok(());
    }
    let (line, column) = logical.map.locate(&logical.text, start);
    let Some(kind) = kind_of_directive(directive) else {
        return Err(parse_error(
            file,
            line,
            column,
            ParseErrorKind::UnknownDirective {
                directive: excerpt(directive),
            },
        ));
    };
    out.push(Statement {
        kind,
        body_start: end,
        text: logical.text,
        map: logical.map,
        line,
        column,
    });
    Ok(())
}

/// Splits an LDIF file into statements (values of the schema attributes).
fn read_ldif(text: &str, file: &Arc<str>, statements: &mut Vec<Statement>) -> Result<(), SchemaError> {
    let mut current: Option<Logical> = None;
    for (index, raw) in text.split('\n').enumerate() {
        let line_no = line_number(index);
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.starts_with([' ', '\t']) {
            match current.as_mut() {
                Some(logical) => {
                    if !logical.comment {
                        logical
                            .append(&line[1..], line_no, 2)
                            .map_err(|r| parse_error(file, line_no, 1, r))?;
                    }
                }
                None if line.trim().is_empty() => {}
                None => return Err(parse_error(file, line_no, 1, ParseErrorKind::NotLdif)),
            }
            continue;
        }
        finish_ldif(current.take(), file, statements)?;
        if !line.is_empty() {
            current = Some(Logical::start(line, line_no, line.starts_with('#')));
        }
    }
    finish_ldif(current, file, statements)
}

fn finish_ldif(
    logical: Option<Logical>,
    file: &Arc<str>,
    out: &mut Vec<Statement>,
) -> Result<(), SchemaError> {
    let Some(logical) = logical else { return Ok(()) };
    if logical.comment || logical.text.trim() == "-" {
        return Ok(());
    }
    let Some(colon) = logical.text.find(':') else {
        return Err(parse_error(file, logical.line, 1, ParseErrorKind::NotLdif));
    };
    let attribute = logical.text[..colon].split(';').next().unwrap_or("").trim_end();
    let Some(kind) = kind_of_ldif_attribute(attribute) else {
        return Ok(());
    };
    let after = colon + 1;
    let rest = &logical.text[after..];
    let (line, column) = (logical.line, 1);
    if let Some(encoded) = rest.strip_prefix(':') {
        let padding = encoded.len() - encoded.trim_start().len();
        let (value_line, value_column) = logical.map.locate(&logical.text, after + 1 + padding);
        let decoded = decode_base64(encoded.trim())
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| parse_error(file, value_line, value_column, ParseErrorKind::InvalidBase64))?;
        let mut map = SourceMap::default();
        map.push(0, value_line, value_column, false);
        let body_start = ordering_prefix_len(&decoded);
        out.push(Statement {
            kind,
            text: decoded,
            body_start,
            map,
            line,
            column,
        });
        return Ok(());
    }
    if rest.starts_with('<') {
        let (l, c) = logical.map.locate(&logical.text, after);
        return Err(parse_error(file, l, c, ParseErrorKind::UrlValue));
    }
    let value_start = after + (rest.len() - rest.trim_start_matches(' ').len());
    let body_start = value_start + ordering_prefix_len(&logical.text[value_start..]);
    out.push(Statement {
        kind,
        body_start,
        text: logical.text,
        map: logical.map,
        line,
        column,
    });
    Ok(())
}

/// Length of a cn=config `{n}` ordering prefix at the start of a value (0 if none).
fn ordering_prefix_len(value: &str) -> usize {
    let Some(inner) = value.strip_prefix('{') else {
        return 0;
    };
    let digits = inner.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && inner.as_bytes().get(digits) == Some(&b'}') {
        digits + 2
    } else {
        0
    }
}

/// Decodes standard base64 (RFC 4648, `=` padding optional); `None` if malformed.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let body = text.trim_end_matches('=');
    if text.len() - body.len() > 2 || body.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() / 4 * 3 + 2);
    for chunk in body.as_bytes().chunks(4) {
        let mut acc = 0u32;
        for &c in chunk {
            acc = (acc << 6) | value(c)?;
        }
        match chunk.len() {
            4 => out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]),
            3 => out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]),
            2 => out.push((acc >> 4) as u8),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_with_and_without_padding() {
        assert_eq!(decode_base64("aGVsbG8=").as_deref(), Some(&b"hello"[..]));
        assert_eq!(decode_base64("aGVsbG8").as_deref(), Some(&b"hello"[..]));
        assert_eq!(decode_base64("aGVsbA==").as_deref(), Some(&b"hell"[..]));
        assert_eq!(decode_base64("").as_deref(), Some(&b""[..]));
        assert_eq!(decode_base64("a"), None);
        assert_eq!(decode_base64("a*bc"), None);
    }

    #[test]
    fn ordering_prefix() {
        assert_eq!(ordering_prefix_len("{12}( 1.2 )"), 4);
        assert_eq!(ordering_prefix_len("{}( 1.2 )"), 0);
        assert_eq!(ordering_prefix_len("( 1.2 )"), 0);
    }
}
