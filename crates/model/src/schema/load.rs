//! Loading: the shipped schema files, then the operator's, parsed in order (so that
//! `objectidentifier` macros of earlier files serve later ones), then resolved as a
//! whole (so a file may refer to elements of any other file of the load).

use std::path::PathBuf;

use super::builtin::BuiltinSchemas;
use super::error::{Location, ParseErrorKind, SchemaError};
use super::file::{parse_file, SchemaFormat};
use super::limits::{MAX_ELEMENTS, MAX_FILES, MAX_FILE_BYTES};
use super::macros::OidMacros;
use super::model::Schema;
use super::resolve::resolve;

/// A schema file given as text, for schemas built in memory (tests, tools, configuration
/// that embeds schema).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaSource<'a> {
    /// The name errors and locations use.
    pub name: &'a str,
    /// The file's text.
    pub text: &'a str,
    /// Its format.
    pub format: SchemaFormat,
}

impl Schema {
    /// The shipped standard schemas ([`BuiltinSchemas::Standard`]), no operator file.
    pub fn builtin() -> Result<Schema, SchemaError> {
        Schema::from_sources(BuiltinSchemas::Standard, &[])
    }

    /// The shipped standard schemas (when `builtin`; the system schema alone otherwise),
    /// then the operator's files in order. A file whose name ends in `.ldif` is read as
    /// LDIF, any other as an OpenLDAP `.schema` file.
    pub fn load(builtin: bool, files: &[PathBuf]) -> Result<Schema, SchemaError> {
        let builtins = if builtin {
            BuiltinSchemas::Standard
        } else {
            BuiltinSchemas::SystemOnly
        };
        Schema::load_with(builtins, files)
    }

    /// As [`Schema::load`], with a choice of shipped files (for example
    /// [`BuiltinSchemas::Rfc2307bis`]).
    pub fn load_with(builtins: BuiltinSchemas, files: &[PathBuf]) -> Result<Schema, SchemaError> {
        if files.len() > MAX_FILES {
            return Err(SchemaError::TooLarge {
                what: "the number of schema files",
                limit: MAX_FILES,
            });
        }
        let mut texts = Vec::with_capacity(files.len());
        for path in files {
            texts.push((
                path.display().to_string(),
                read(path)?,
                SchemaFormat::from_path(path),
            ));
        }
        let sources: Vec<SchemaSource<'_>> = texts
            .iter()
            .map(|(name, text, format)| SchemaSource {
                name,
                text,
                format: *format,
            })
            .collect();
        Schema::from_sources(builtins, &sources)
    }

    /// The chosen shipped files, then `sources` in order.
    pub fn from_sources(
        builtins: BuiltinSchemas,
        sources: &[SchemaSource<'_>],
    ) -> Result<Schema, SchemaError> {
        if sources.len() > MAX_FILES {
            return Err(SchemaError::TooLarge {
                what: "the number of schema files",
                limit: MAX_FILES,
            });
        }
        let mut macros = OidMacros::new();
        let mut definitions = Vec::new();
        let builtin_names: Vec<String> = builtins
            .files()
            .iter()
            .map(|f| format!("builtin:{}", f.name))
            .collect();
        let all = builtins
            .files()
            .iter()
            .zip(&builtin_names)
            .map(|(f, name)| (name.as_str(), f.text, f.format))
            .chain(sources.iter().map(|s| (s.name, s.text, s.format)));
        for (name, text, format) in all {
            let parsed = parse_file(name, text, format, &mut macros)?;
            if definitions.len() + parsed.len() > MAX_ELEMENTS {
                return Err(SchemaError::TooLarge {
                    what: "the number of schema elements",
                    limit: MAX_ELEMENTS,
                });
            }
            definitions.extend(parsed);
        }
        resolve(definitions)
    }
}

/// Reads one schema file: size-checked before reading, UTF-8 checked after, with the line
/// and column of the first invalid byte.
fn read(path: &PathBuf) -> Result<String, SchemaError> {
    let file = path.display().to_string();
    let read_error = |source| SchemaError::Read {
        file: file.clone(),
        source,
    };
    let size = std::fs::metadata(path).map_err(read_error)?.len();
    let too_large = SchemaError::Parse {
        at: Location {
            file: file.as_str().into(),
            line: 1,
            column: 1,
        },
        reason: ParseErrorKind::TooLarge {
            what: "a schema file",
            limit: MAX_FILE_BYTES,
        },
    };
    if size > MAX_FILE_BYTES as u64 {
        return Err(too_large);
    }
    let bytes = std::fs::read(path).map_err(read_error)?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(too_large);
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        // The valid prefix is UTF-8 by definition.
        let prefix = std::str::from_utf8(valid).unwrap_or("");
        let (line, column) = super::parse::line_column(prefix, prefix.len());
        SchemaError::Parse {
            at: Location {
                file: file.as_str().into(),
                line,
                column,
            },
            reason: ParseErrorKind::InvalidUtf8,
        }
    })
}
