//! OpenLDAP `objectidentifier` macros: `objectidentifier NetscapeLDAP 2.16.840.1.113730.3`
//! lets later descriptions write `NetscapeLDAP:1.198` for `2.16.840.1.113730.3.1.198`.
//!
//! Macros are global to one schema load and apply to the statements after their
//! definition, in file order (as in slapd). A macro's value may itself use an earlier
//! macro (`objectidentifier NetscapeLDAPattributeType NetscapeLDAP:1`); it is expanded
//! when defined, so expansion never chains at use. Names compare case-insensitively.
//! Expansion applies where slapd applies it: an element's own OID and a `SYNTAX` OID.

use std::collections::HashMap;

use super::error::{Location, ParseErrorKind};
use super::limits::MAX_NAME_BYTES;
use super::parse::is_numeric_oid;

/// A defined macro.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MacroDefinition {
    /// The expanded numeric OID.
    oid: String,
    /// Where it was defined.
    at: Location,
}

/// The `objectidentifier` macros defined so far in a schema load.
#[derive(Debug, Clone, Default)]
pub struct OidMacros {
    /// Lower-cased name to definition.
    by_name: HashMap<String, MacroDefinition>,
}

/// Why a macro could not be defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DefineError {
    /// The name or the value is malformed.
    Invalid(ParseErrorKind),
    /// The name is already defined with a different value: the earlier definition's
    /// place and value.
    Conflict {
        previous: Location,
        previous_oid: String,
        oid: String,
    },
}

impl OidMacros {
    /// No macros.
    pub fn new() -> OidMacros {
        OidMacros::default()
    }

    /// The numeric OID a macro name stands for, if defined.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.by_name
            .get(&name.to_ascii_lowercase())
            .map(|d| d.oid.as_str())
    }

    /// How many macros are defined.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether no macro is defined.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Defines `name` as `value` (a numeric OID, or `macro` / `macro:suffix` of an earlier
    /// macro). Redefining a name with the same OID is accepted (files loaded twice).
    pub(crate) fn define(&mut self, name: &str, value: &str, at: Location) -> Result<(), DefineError> {
        if !is_macro_name(name) {
            return Err(DefineError::Invalid(ParseErrorKind::InvalidMacroName {
                text: super::error::excerpt(name),
            }));
        }
        let oid = self.expand(value).map_err(DefineError::Invalid)?;
        let key = name.to_ascii_lowercase();
        if let Some(previous) = self.by_name.get(&key) {
            if previous.oid == oid {
                return Ok(());
            }
            return Err(DefineError::Conflict {
                previous: previous.at.clone(),
                previous_oid: previous.oid.clone(),
                oid,
            });
        }
        self.by_name.insert(key, MacroDefinition { oid, at });
        Ok(())
    }

    /// Expands `text` to a numeric OID: a numeric OID is returned as is; `name` is the
    /// macro's OID; `name:suffix` appends `.suffix` (digits and dots) to it.
    pub fn expand(&self, text: &str) -> Result<String, ParseErrorKind> {
        if is_numeric_oid(text) {
            return Ok(text.to_owned());
        }
        let unknown = || ParseErrorKind::UnknownMacro {
            text: super::error::excerpt(text),
        };
        if text.len() > MAX_NAME_BYTES {
            return Err(ParseErrorKind::TooLarge {
                what: "an OID",
                limit: MAX_NAME_BYTES,
            });
        }
        let (name, suffix) = match text.split_once(':') {
            Some((name, suffix)) => (name, Some(suffix)),
            None => (text, None),
        };
        let Some(base) = self.get(name) else {
            return Err(if text.starts_with(|c: char| c.is_ascii_digit()) {
                ParseErrorKind::InvalidOid {
                    text: super::error::excerpt(text),
                }
            } else {
                unknown()
            });
        };
        let oid = match suffix {
            None => base.to_owned(),
            Some(suffix) => format!("{base}.{suffix}"),
        };
        if oid.len() > MAX_NAME_BYTES {
            return Err(ParseErrorKind::TooLarge {
                what: "an OID",
                limit: MAX_NAME_BYTES,
            });
        }
        if !is_numeric_oid(&oid) {
            return Err(ParseErrorKind::InvalidOid {
                text: super::error::excerpt(text),
            });
        }
        Ok(oid)
    }
}

/// A macro name: a letter, then letters, digits, `-` and `_` (slapd's own `core.schema`
/// uses names like `x-deref`).
fn is_macro_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && name.len() <= MAX_NAME_BYTES
}
