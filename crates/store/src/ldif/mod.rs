//! RFC 2849 LDIF: a streaming reader ([`LdifReader`]) and writer ([`LdifWriter`]).
//!
//! Records keep DNs and values as raw octets and attribute descriptions as written: there is
//! no schema here. The importer resolves names and checks values later.
//!
//! # What the reader accepts
//!
//! - An optional `version: 1` line at the very start of the input (any other version is
//!   refused).
//! - Comments: a line starting with `#`, and any continuation lines that fold onto it, in or
//!   between records.
//! - Line folding: a line starting with exactly one space continues the previous line (the
//!   space is dropped). LF and CRLF line ends.
//! - Records separated by one or more blank lines. Each starts with `dn:` (text) or `dn::`
//!   (base64).
//! - `attr: value`, `attr:: base64` and `attr:< URL` lines, where `attr` is an attribute
//!   description (a name or numeric OID, then `;option`s). Keywords (`dn`, `changetype`,
//!   `add`, ...) are case-insensitive.
//! - Content records (`dn` and at least one attribute value) and change records
//!   (`changetype: add | delete | modify | modrdn | moddn`), with `control:` lines (OID,
//!   optional `true`/`false` criticality, optional value, text or base64) between the DN and
//!   the `changetype:` line. Modify records hold `add:`/`delete:`/`replace:`/`increment:`
//!   sections, each ended by `-` (the last `-` of a record may be left out, as OpenLDAP
//!   allows); `modrdn` and `moddn` need `newrdn` and `deleteoldrdn: 0|1` and take an optional
//!   `newsuperior`. `moddn` is read as [`LdifChange::ModRdn`].
//! - Text values that contain octets above 0x7F (RFC 2849 says they should be base64, but
//!   many tools write UTF-8 as it is; OpenLDAP accepts it too) and trailing spaces, which are
//!   kept.
//! - `attr:< file:///path` only when the reader was built with
//!   [`allow_file_urls(true)`](LdifReader::allow_file_urls); the file is read with a size
//!   limit. `%XX` escapes in the path are decoded.
//!
//! # What the reader refuses
//!
//! Every refusal is an [`LdifError`] naming the line where the record starts, the line at
//! fault and the reason. The reader stops after the first error (it does not resynchronise).
//!
//! - Text values that start with a space, `:` or `<` (they must be base64) or contain NUL
//!   or CR; base64 that does not decode.
//! - URLs when not allowed, and any URL that is not `file://` when allowed.
//! - A continuation line with nothing to continue; a line without a colon; a malformed
//!   attribute description or OID.
//! - Records without `dn:`; `control:` lines without `changetype:`; content or add records
//!   without attributes; `dn`, `control` or `changetype` used as an attribute in a content or
//!   add record (it would be ambiguous); anything after a delete or modrdn record's fields;
//!   values in a modify section for another attribute.
//! - Input beyond the limits of [`LdifLimits`]: physical line length, record size (unfolded
//!   lines plus file contents) and lines per record. Memory use is bounded by these limits;
//!   records are read one at a time.
//!
//! # What the writer writes
//!
//! Attributes in the order given; lines folded at [`FOLD_COLUMN`] columns; values and DNs
//! that are not SAFE-STRINGs (leading space, `:` or `<`, trailing space, NUL, CR, LF or any
//! octet above 0x7F) in base64. Anything the reader returns, the writer writes so that the
//! reader reads it back equal.

mod error;
mod reader;
pub mod syntax;
mod writer;

pub use error::{LdifError, LdifErrorKind};
pub use reader::LdifReader;
pub use writer::LdifWriter;

/// Longest physical line the reader accepts, in octets, not counting the line end. Lines
/// this long only occur when a writer did not fold; folded values can be longer.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Largest record the reader accepts: the unfolded lines of one record plus the contents of
/// the files its URLs name, in octets. This bounds the reader's memory.
pub const MAX_RECORD_BYTES: usize = 16 << 20;

/// Most non-comment lines (the `dn:` line, controls, attribute values, section markers) in
/// one record.
pub const MAX_VALUES_PER_RECORD: usize = 100_000;

/// Largest file an `attr:< file://` URL may name, in octets (also bounded by what remains of
/// [`MAX_RECORD_BYTES`]).
pub const MAX_URL_FILE_BYTES: u64 = 16 << 20;

/// Column at which the writer folds lines (RFC 2849 recommends 76 or fewer).
pub const FOLD_COLUMN: usize = 76;

/// The limits a reader enforces; [`LdifLimits::default`] gives the named constants above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LdifLimits {
    /// Longest physical line, in octets (see [`MAX_LINE_BYTES`]).
    pub max_line_bytes: usize,
    /// Largest record, in octets (see [`MAX_RECORD_BYTES`]).
    pub max_record_bytes: usize,
    /// Most lines per record (see [`MAX_VALUES_PER_RECORD`]).
    pub max_values_per_record: usize,
    /// Largest file read through a URL (see [`MAX_URL_FILE_BYTES`]).
    pub max_url_file_bytes: u64,
}

impl Default for LdifLimits {
    fn default() -> Self {
        LdifLimits {
            max_line_bytes: MAX_LINE_BYTES,
            max_record_bytes: MAX_RECORD_BYTES,
            max_values_per_record: MAX_VALUES_PER_RECORD,
            max_url_file_bytes: MAX_URL_FILE_BYTES,
        }
    }
}

/// One LDIF record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LdifRecord {
    /// A content record: an entry, as `ldapsearch` prints it and `slapadd` loads it.
    Content {
        /// The DN, as written (after base64 decoding when it was `dn::`).
        dn: Vec<u8>,
        /// Attribute descriptions and values, one pair per line, in file order.
        attributes: Vec<(String, Vec<u8>)>,
    },
    /// A change record: what `ldapmodify` sends.
    Change {
        /// The DN of the entry to change.
        dn: Vec<u8>,
        /// The `control:` lines, in file order.
        controls: Vec<LdifControl>,
        /// The change itself.
        change: LdifChange,
    },
}

/// A `control:` line of a change record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdifControl {
    /// The control type, a numeric OID.
    pub oid: String,
    /// Whether the control was marked `true` (critical).
    pub critical: bool,
    /// The control value, if there was one.
    pub value: Option<Vec<u8>>,
}

/// What a change record asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LdifChange {
    /// `changetype: add`: a new entry with these attribute values.
    Add {
        /// Attribute descriptions and values, one pair per line, in file order.
        attributes: Vec<(String, Vec<u8>)>,
    },
    /// `changetype: delete`.
    Delete,
    /// `changetype: modify`: these modifications, in order.
    Modify {
        /// The sections of the record.
        modifications: Vec<LdifModification>,
    },
    /// `changetype: modrdn` or `changetype: moddn`.
    ModRdn {
        /// The new RDN.
        new_rdn: Vec<u8>,
        /// `deleteoldrdn: 1`.
        delete_old_rdn: bool,
        /// The new parent, if the entry moves.
        new_superior: Option<Vec<u8>>,
    },
}

/// One section of a modify record, from `add:`/`delete:`/`replace:`/`increment:` to `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdifModification {
    /// What to do.
    pub op: LdifModOp,
    /// The attribute description named on the section's first line.
    pub attribute: String,
    /// The values listed in the section (possibly none).
    pub values: Vec<Vec<u8>>,
}

/// The kind of a modify section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LdifModOp {
    /// `add:`: add values.
    Add,
    /// `delete:`: delete these values, or the whole attribute when there are none.
    Delete,
    /// `replace:`: replace all values (none: remove the attribute).
    Replace,
    /// `increment:` (RFC 4525): add the value to the integer.
    Increment,
}

impl LdifModOp {
    /// The keyword that starts the section in LDIF.
    pub fn keyword(self) -> &'static str {
        match self {
            LdifModOp::Add => "add",
            LdifModOp::Delete => "delete",
            LdifModOp::Replace => "replace",
            LdifModOp::Increment => "increment",
        }
    }
}
