//! Errors of the LDIF reader.

use std::fmt;
use std::io;

/// Why the reader refused its input, with where.
#[derive(Debug, thiserror::Error)]
#[error("LDIF line {line} (record starting at line {record_line}): {kind}")]
pub struct LdifError {
    /// The line (1-based) where the record began; 0 when no record had begun.
    pub record_line: u64,
    /// The line (1-based) at fault: the first physical line of the offending logical line.
    pub line: u64,
    /// What was wrong.
    pub kind: LdifErrorKind,
}

/// What was wrong with the input.
#[derive(Debug)]
pub enum LdifErrorKind {
    /// The input does not follow RFC 2849; the text says how.
    Syntax(String),
    /// A physical line is longer than the limit.
    LineTooLong {
        /// The limit, in octets.
        limit: usize,
    },
    /// A record is larger than the limit.
    RecordTooLarge {
        /// The limit, in octets.
        limit: usize,
    },
    /// A record has more lines than the limit.
    TooManyValues {
        /// The limit, in lines.
        limit: usize,
    },
    /// An `attr:< URL` line in a reader not built with `allow_file_urls(true)`.
    UrlRefused(String),
    /// Reading the input or a `file://` URL failed.
    Io(io::Error),
}

impl fmt::Display for LdifErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LdifErrorKind::Syntax(reason) => f.write_str(reason),
            LdifErrorKind::LineTooLong { limit } => write!(f, "line is longer than {limit} octets"),
            LdifErrorKind::RecordTooLarge { limit } => write!(f, "record is larger than {limit} octets"),
            LdifErrorKind::TooManyValues { limit } => write!(f, "record has more than {limit} lines"),
            LdifErrorKind::UrlRefused(url) => write!(
                f,
                "value given by URL {url:?} refused: this reader does not read files \
                 (build it with allow_file_urls(true))"
            ),
            LdifErrorKind::Io(e) => write!(f, "I/O error: {e}"),
        }
    }
}
