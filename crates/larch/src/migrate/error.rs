//! The one error of a migration that stops it: what was wrong and where.

use std::fmt;

use super::model::Origin;

/// A refusal: the configuration, a schema or the LDIF cannot be read as it is. Nothing is
/// written to the output directory when one occurs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrateError {
    /// The file and line at fault, when there is one.
    pub origin: Option<Origin>,
    /// What is wrong.
    pub message: String,
}

impl MigrateError {
    /// An error at `origin`.
    pub fn at(origin: &Origin, message: impl Into<String>) -> MigrateError {
        MigrateError {
            origin: Some(origin.clone()),
            message: message.into(),
        }
    }

    /// An error with no place in a file.
    pub fn new(message: impl Into<String>) -> MigrateError {
        MigrateError {
            origin: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for MigrateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            Some(o) => write!(f, "{o}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}
