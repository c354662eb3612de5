//! Schema errors. A broken schema file stops the server at startup, so every error names
//! the file, the line and column, the element when there is one, and what was wrong; a
//! conflict names both places.

use std::fmt;
use std::sync::Arc;

use super::description::ElementKind;

/// A place in a schema file: file name (as given to the loader), 1-based line and column
/// (the column counts characters, not bytes).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Location {
    /// The file name, or `builtin:<name>` for a shipped schema file.
    pub file: Arc<str>,
    /// 1-based line number.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// What was wrong with the text of a schema file or an element description.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The description ended where more was required.
    #[error("the description ends where {expected} was expected")]
    UnexpectedEnd {
        /// What the grammar required here.
        expected: &'static str,
    },
    /// A token other than the one the grammar requires here.
    #[error("expected {expected}, found {found:?}")]
    Expected {
        /// What the grammar required here.
        expected: &'static str,
        /// The text that was found (shortened).
        found: String,
    },
    /// A `'` that is never closed.
    #[error("a quoted string is not closed")]
    UnterminatedString,
    /// Escapes in a quoted string that do not decode to UTF-8.
    #[error("a quoted string's escapes do not decode to UTF-8")]
    InvalidEscape,
    /// A keyword that this kind of element does not have.
    #[error("{keyword:?} is not a field of {kind} descriptions")]
    UnknownKeyword {
        /// The word found.
        keyword: String,
        /// The element being parsed.
        kind: ElementKind,
    },
    /// A field given twice (or two of ABSTRACT / STRUCTURAL / AUXILIARY).
    #[error("{keyword} is given more than once")]
    DuplicateKeyword {
        /// The repeated keyword.
        keyword: String,
    },
    /// Not a numeric OID (digits separated by dots, no leading zeros).
    #[error("{text:?} is not a numeric OID")]
    InvalidOid {
        /// The text found.
        text: String,
    },
    /// Neither a numeric OID nor a defined `objectidentifier` macro.
    #[error("{text:?} is neither a numeric OID nor a defined objectidentifier macro (name or name:suffix)")]
    UnknownMacro {
        /// The text found.
        text: String,
    },
    /// Not a valid descriptor (a letter, then letters, digits and hyphens).
    #[error("{text:?} is not a valid name (a letter, then letters, digits and hyphens)")]
    InvalidName {
        /// The text found.
        text: String,
    },
    /// Neither a name nor a numeric OID.
    #[error("{text:?} is neither a name nor a numeric OID")]
    InvalidNameOrOid {
        /// The text found.
        text: String,
    },
    /// A `{len}` bound that is not a decimal number fitting 32 bits.
    #[error("{text:?} is not a valid length bound ({{digits}})")]
    InvalidLength {
        /// The text found.
        text: String,
    },
    /// A USAGE value other than the four RFC 4512 defines.
    #[error(
        "{text:?} is not a USAGE (userApplications, directoryOperation, distributedOperation, dSAOperation)"
    )]
    InvalidUsage {
        /// The text found.
        text: String,
    },
    /// A DIT structure rule ID that is not a decimal number fitting 32 bits.
    #[error("{text:?} is not a rule ID (a decimal number)")]
    InvalidRuleId {
        /// The text found.
        text: String,
    },
    /// An extension name that is not `X-` followed by letters, digits, `-` and `_`.
    #[error("{text:?} is not a valid extension name (X- then letters, digits, - and _)")]
    InvalidExtension {
        /// The text found.
        text: String,
    },
    /// A field this kind of element requires is missing.
    #[error("the description has no {keyword}, which {kind} descriptions require")]
    MissingField {
        /// The missing keyword.
        keyword: &'static str,
        /// The element being parsed.
        kind: ElementKind,
    },
    /// Text after the closing parenthesis.
    #[error("unexpected text after the closing parenthesis: {found:?}")]
    TrailingText {
        /// The text found (shortened).
        found: String,
    },
    /// A list, a description, a name or a file above its named limit.
    #[error("{what} exceeds the limit of {limit}")]
    TooLarge {
        /// What is too large.
        what: &'static str,
        /// The limit (see `schema::limits`).
        limit: usize,
    },
    /// A directive in a `.schema` file that is not a schema directive.
    #[error("{directive:?} is not a schema directive (attributetype, objectclass, objectidentifier, ldapsyntax, ditcontentrule, ...)")]
    UnknownDirective {
        /// The word found.
        directive: String,
    },
    /// An `objectidentifier` line without exactly a name and a value.
    #[error("objectidentifier needs exactly a name and an OID (or name:suffix)")]
    MacroSyntax,
    /// An invalid `objectidentifier` macro name.
    #[error("{text:?} is not a valid objectidentifier name")]
    InvalidMacroName {
        /// The text found.
        text: String,
    },
    /// The file is not UTF-8.
    #[error("the file is not UTF-8")]
    InvalidUtf8,
    /// An LDIF line that is neither a comment, `-`, nor `attribute: value`.
    #[error("not an LDIF line (attribute: value)")]
    NotLdif,
    /// An LDIF `::` value that is not valid base64, or not UTF-8 once decoded.
    #[error("the base64 value is invalid or does not decode to UTF-8")]
    InvalidBase64,
    /// An LDIF `:<` URL value for a schema attribute.
    #[error("URL values (:<) are not supported in schema files")]
    UrlValue,
}

/// A parse error in one element description given as a string (for example a value of
/// `attributeTypes`): 1-based line and column within that string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {kind}")]
pub struct ParseError {
    /// 1-based line within the description.
    pub line: u32,
    /// 1-based column (characters) within the line.
    pub column: u32,
    /// What was wrong.
    pub kind: ParseErrorKind,
}

/// Why a parsed element could not be resolved into the schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveErrorKind {
    /// A syntax OID that neither Larch implements nor a loaded `ldapsyntax` substitutes.
    #[error("unknown syntax {oid} (define it with ldapsyntax ( {oid} ... X-SUBST '<implemented syntax OID>' ) to map it)")]
    UnknownSyntax {
        /// The syntax OID.
        oid: String,
    },
    /// A matching rule Larch does not implement.
    #[error("unknown matching rule {name} in {keyword}")]
    UnknownMatchingRule {
        /// The name or OID as written.
        name: String,
        /// EQUALITY, ORDERING or SUBSTR.
        keyword: &'static str,
    },
    /// A matching rule used in the wrong place (a substring rule as EQUALITY, ...).
    #[error("{name} is not a{article} {usage} rule, so it cannot be the {keyword} rule", article = if *usage == "equality" || *usage == "ordering" { "n" } else { "" })]
    WrongRuleUsage {
        /// The name or OID as written.
        name: String,
        /// EQUALITY, ORDERING or SUBSTR.
        keyword: &'static str,
        /// equality, ordering or substring.
        usage: &'static str,
    },
    /// A matching rule description for a rule Larch does not implement.
    #[error(
        "matching rule {oid} is not implemented by Larch; schema files cannot define new matching rules"
    )]
    UnimplementedMatchingRule {
        /// The rule's OID.
        oid: String,
    },
    /// An attribute type with neither SYNTAX nor SUP.
    #[error("an attribute type needs SYNTAX or SUP")]
    NoSyntax,
    /// A SUP naming no known attribute type.
    #[error("SUP {name}: no such attribute type")]
    UnknownSuperiorType {
        /// The name or OID as written.
        name: String,
    },
    /// A SUP naming no known object class.
    #[error("SUP {name}: no such object class")]
    UnknownSuperiorClass {
        /// The name or OID as written.
        name: String,
    },
    /// A MUST or MAY naming no known attribute type.
    #[error("{keyword} {name}: no such attribute type")]
    UnknownAttributeType {
        /// The name or OID as written.
        name: String,
        /// MUST or MAY.
        keyword: &'static str,
    },
    /// A SUP chain that comes back to where it started.
    #[error("SUP cycle: {chain}")]
    Cycle {
        /// The names along the cycle, `a -> b -> a`.
        chain: String,
    },
    /// An attribute type whose USAGE differs from its supertype's.
    #[error("USAGE {usage} differs from the USAGE {sup_usage} of its supertype {sup}")]
    UsageMismatch {
        /// This type's usage.
        usage: &'static str,
        /// The supertype's name.
        sup: String,
        /// The supertype's usage.
        sup_usage: &'static str,
    },
    /// A collective attribute type that is not userApplications (RFC 3671).
    #[error("a COLLECTIVE attribute type must have USAGE userApplications")]
    CollectiveOperational,
    /// A subtype of a collective type that is not itself collective (RFC 3671).
    #[error("subtypes of the collective attribute type {sup} must be COLLECTIVE")]
    CollectiveSubtype {
        /// The supertype's name.
        sup: String,
    },
    /// NO-USER-MODIFICATION on a userApplications type (RFC 4512 section 4.1.2).
    #[error("NO-USER-MODIFICATION requires an operational USAGE")]
    NoUserModificationUserType,
    /// An object class whose superclass is of a kind it may not inherit from
    /// (RFC 4512 section 2.4).
    #[error("a{article} {kind} class cannot have the {sup_kind} class {sup} as superclass", article = if *kind == "abstract" || *kind == "auxiliary" { "n" } else { "" })]
    SuperclassKind {
        /// This class's kind.
        kind: &'static str,
        /// The superclass's name.
        sup: String,
        /// The superclass's kind.
        sup_kind: &'static str,
    },
}

/// Why a schema could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// A schema file could not be read.
    #[error("{file}: cannot read the schema file: {source}")]
    Read {
        /// The file name.
        file: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The text of a schema file is not well-formed.
    #[error("{at}: {reason}")]
    Parse {
        /// Where.
        at: Location,
        /// What was wrong.
        reason: ParseErrorKind,
    },
    /// An element refers to something that does not exist, or breaks a rule of RFC 4512.
    #[error("{at}: {kind} {element}: {reason}")]
    Resolve {
        /// Where the element is defined.
        at: Location,
        /// Which kind of element.
        kind: ElementKind,
        /// The element's first name, or its OID.
        element: String,
        /// What was wrong.
        reason: ResolveErrorKind,
    },
    /// The same OID or name defined twice, differently.
    #[error("{at}: {kind} {element} conflicts with the definition at {previous}: {what}")]
    Conflict {
        /// Where the second definition is.
        at: Location,
        /// Where the first definition is.
        previous: Location,
        /// Which kind of element.
        kind: ElementKind,
        /// The element's first name, or its OID.
        element: String,
        /// What differs.
        what: String,
    },
    /// An `objectidentifier` macro defined twice with different values.
    #[error("{at}: objectidentifier {name} conflicts with the definition at {previous}: {what}")]
    MacroConflict {
        /// Where the second definition is.
        at: Location,
        /// Where the first definition is.
        previous: Location,
        /// The macro's name.
        name: String,
        /// The two values (`1.2.3 here, 1.2.4 there`).
        what: String,
    },
    /// More files or elements than the named limits allow.
    #[error("{what} exceeds the limit of {limit}")]
    TooLarge {
        /// What is too large.
        what: &'static str,
        /// The limit (see `schema::limits`).
        limit: usize,
    },
}

impl SchemaError {
    /// The location the error points at, when it has one.
    pub fn location(&self) -> Option<&Location> {
        match self {
            SchemaError::Parse { at, .. }
            | SchemaError::Resolve { at, .. }
            | SchemaError::Conflict { at, .. }
            | SchemaError::MacroConflict { at, .. } => Some(at),
            SchemaError::Read { .. } | SchemaError::TooLarge { .. } => None,
        }
    }
}

/// Shortens a found token for an error message.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX_CHARS: usize = 40;
    let mut out: String = text.chars().take(MAX_CHARS).collect();
    if text.chars().nth(MAX_CHARS).is_some() {
        out.push_str("...");
    }
    out
}
