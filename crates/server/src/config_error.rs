//! Why a configuration cannot be used. Every message names where the configuration came
//! from (the file's path, or `configuration` for text given directly), the key path
//! (`limits.size_limit`) when one key is at fault, and the line and column when the TOML
//! parser knows them.
//!
//! The type is the configuration's ([`crate::config`] re-exports it), kept below both the
//! configuration and access control: the configuration compiles its `[[access]]` rules
//! with `crate::acl`, whose rule language reports its errors with it.

use std::fmt;
use std::path::PathBuf;

use larch_model::schema::SchemaError;

/// Where a configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Text given to [`crate::config::ServerConfig::from_toml_str`], or the embedded defaults.
    Text,
    /// A file read by [`crate::config::ServerConfig::load`].
    File(PathBuf),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Text => f.write_str("configuration"),
            Origin::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// A position in the configuration text, 1-based; displays as `:line:column`, or as
/// nothing when unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Position {
    /// Line and column, when known.
    pub line_column: Option<(usize, usize)>,
}

impl Position {
    /// The position of byte `offset` of `text` (columns count characters).
    pub fn of_offset(text: &str, offset: usize) -> Position {
        let offset = offset.min(text.len());
        let before = text.get(..offset).unwrap_or(text);
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
        Position {
            line_column: Some((line, column)),
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line_column {
            Some((l, c)) => write!(f, ":{l}:{c}"),
            None => Ok(()),
        }
    }
}

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The configuration file could not be read.
    #[error("{}: cannot read the configuration file: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The text is not TOML.
    #[error("{origin}{at}: TOML syntax error: {message}")]
    Syntax {
        /// The file.
        origin: Origin,
        /// Where.
        at: Position,
        /// The parser's message.
        message: String,
    },
    /// A key is unknown, has the wrong type, or a value that cannot be used.
    #[error("{origin}{at}: `{key}`: {message}")]
    Invalid {
        /// The file.
        origin: Origin,
        /// Where, when known.
        at: Position,
        /// The key path, e.g. `limits.size_limit`.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A schema file of `schema.files` could not be loaded (the message names the schema
    /// file and the line).
    #[error("{origin}: `schema.files`: {source}")]
    Schema {
        /// The configuration file.
        origin: Origin,
        /// The schema loader's error (boxed: it is large, and rare).
        #[source]
        source: Box<SchemaError>,
    },
}

impl ConfigError {
    /// An error on one key, at no known position.
    pub(crate) fn invalid(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            origin: Origin::Text,
            at: Position::default(),
            key: key.into(),
            message: message.into(),
        }
    }

    /// The key path the error is about, when it is about one key.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::Invalid { key, .. } => Some(key),
            ConfigError::Schema { .. } => Some("schema.files"),
            _ => None,
        }
    }

    /// The same error, said of `origin`.
    pub(crate) fn with_origin(mut self, new: &Origin) -> ConfigError {
        match &mut self {
            ConfigError::Syntax { origin, .. }
            | ConfigError::Invalid { origin, .. }
            | ConfigError::Schema { origin, .. } => *origin = new.clone(),
            ConfigError::Read { .. } => {}
        }
        self
    }
}
