//! Reading configuration text into a [`ServerConfig`], finding every error it can rather
//! than the first: `larch serve` stops at the first one it is given, `larch check-config`
//! prints them all, and both come through [`read`].
//!
//! Which errors are found together, step by step:
//! 1. TOML syntax: every syntax error the parser recovers from, with line and column; the
//!    reading stops there (a document with broken syntax has no reliable tables);
//! 2. types and unknown keys, one top-level table at a time: an error in `[limits]` does
//!    not hide one in `[store]`; within one table serde stops at its first error. The tables
//!    that failed are left out of the next steps;
//! 3. conversion, one section at a time ([`ServerConfig`]'s `from_raw`): a section stops at
//!    its first error, and is then left out of step 4;
//! 4. validation ([`ServerConfig::validate_skipping`]): independent checks all run; a
//!    check that reads a section refused before, or needs what another check refused (the
//!    schema for the suffixes, indexes and access rules; the suffixes for the admin DN), is
//!    skipped, so one mistake is reported once and not again as its consequences.
//!
//! Errors that name a key but no position (steps 3 and 4 know keys, not lines) get the
//! position of that key in the text (or of its nearest enclosing key that is written
//! there), found through the spans of the parsed document ([`locate`]).

use std::collections::BTreeSet;
use std::path::Path;

use serde::Deserialize;
use toml::de::{DeTable, DeValue, Deserializer};
use toml::Spanned;

use super::raw::RawConfig;
use super::{key_at, ConfigError, Origin, Position, ServerConfig};

/// Reads `text`; relative paths are taken from `base` when given. On error, every error
/// found (never an empty list), in the order of the steps above.
pub(super) fn read(
    text: &str,
    base: Option<&Path>,
    adjust: impl FnOnce(&mut ServerConfig),
) -> Result<ServerConfig, Vec<ConfigError>> {
    // Step 1.
    let (document, syntax) = DeTable::parse_recoverable(text);
    if !syntax.is_empty() {
        return Err(syntax
            .iter()
            .map(|e| ConfigError::Syntax {
                origin: Origin::Text,
                at: e
                    .span()
                    .map(|s| Position::of_offset(text, s.start))
                    .unwrap_or_default(),
                message: e.message().trim().to_string(),
            })
            .collect());
    }
    // Step 2.
    let mut errors = Vec::new();
    let mut failed = BTreeSet::new();
    let span = document.span();
    for (key, value) in document.get_ref().iter() {
        let mut one = DeTable::new();
        one.insert(key.clone(), value.clone());
        if let Err(e) = RawConfig::deserialize(Deserializer::from(Spanned::new(span.clone(), one))) {
            errors.push(serde_error(text, &e));
            failed.insert(key.get_ref().to_string());
        }
    }
    let mut rest = DeTable::new();
    for (key, value) in document.get_ref().iter() {
        if !failed.contains(key.get_ref().as_ref()) {
            rest.insert(key.clone(), value.clone());
        }
    }
    let raw = match RawConfig::deserialize(Deserializer::from(Spanned::new(span, rest))) {
        Ok(raw) => raw,
        Err(e) => {
            errors.push(serde_error(text, &e));
            return Err(located(errors, text, document.get_ref()));
        }
    };
    // Step 3.
    let (mut config, converted) = ServerConfig::from_raw(raw);
    for e in &converted {
        if let Some(section) = e.key().and_then(|k| k.split(['.', '[']).next()) {
            failed.insert(section.to_string());
        }
    }
    errors.extend(converted);
    if let Some(base) = base {
        config.resolve_paths(base);
    }
    adjust(&mut config);
    // Step 4.
    errors.extend(config.validate_skipping(&failed));
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(located(errors, text, document.get_ref()))
    }
}

/// A serde error: its position, and the key path at that position.
fn serde_error(text: &str, e: &toml::de::Error) -> ConfigError {
    let offset = e.span().map(|s| s.start);
    ConfigError::Invalid {
        origin: Origin::Text,
        at: offset.map(|o| Position::of_offset(text, o)).unwrap_or_default(),
        key: offset.map(|o| key_at(text, o)).unwrap_or_default(),
        message: e.message().trim().to_string(),
    }
}

/// `errors`, each error on a key without a position given the key's position in `text`.
fn located(mut errors: Vec<ConfigError>, text: &str, document: &DeTable<'_>) -> Vec<ConfigError> {
    for e in &mut errors {
        if let ConfigError::Invalid { at, key, .. } = e {
            if at.line_column.is_none() {
                if let Some(offset) = locate(document, key) {
                    *at = Position::of_offset(text, offset);
                }
            }
        }
    }
    errors
}

/// One step of a key path: a table key or an array index.
#[derive(Debug, PartialEq)]
enum Step<'k> {
    Key(&'k str),
    Index(usize),
}

/// `server.listen[1]` as `server`, `listen`, `[1]`; `None` for a path it cannot read.
fn steps(path: &str) -> Option<Vec<Step<'_>>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (name, mut indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            out.push(Step::Key(name));
        }
        while let Some(inner) = indexes.strip_prefix('[') {
            let end = inner.find(']')?;
            out.push(Step::Index(inner[..end].parse().ok()?));
            indexes = &inner[end + 1..];
        }
    }
    Some(out)
}

/// The offset in the text of the deepest part of `path` written in `document`: the key
/// itself when it is there, else the nearest enclosing one (`server.listen` for a default
/// that only `server` overrides, ...); `None` when not even the first step is written.
pub(super) fn locate(document: &DeTable<'_>, path: &str) -> Option<usize> {
    let mut found = None;
    let mut value: Option<&DeValue<'_>> = None;
    for step in steps(path)? {
        let next = match (step, value) {
            (Step::Key(name), None) => document
                .iter()
                .find(|(k, _)| k.get_ref() == name)
                .map(|(k, v)| (k.span().start, v)),
            (Step::Key(name), Some(DeValue::Table(t))) => t
                .iter()
                .find(|(k, _)| k.get_ref() == name)
                .map(|(k, v)| (k.span().start, v)),
            (Step::Index(i), Some(DeValue::Array(a))) => a.get(i).map(|v| (v.span().start, v)),
            _ => None,
        };
        let Some((offset, v)) = next else { break };
        found = Some(offset);
        value = Some(v.get_ref());
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_paths_are_read_in_steps() {
        assert_eq!(
            steps("server.listen[1]").unwrap(),
            [Step::Key("server"), Step::Key("listen"), Step::Index(1)]
        );
        assert_eq!(
            steps("access[0].who").unwrap(),
            [Step::Key("access"), Step::Index(0), Step::Key("who")]
        );
        assert!(steps("a[x]").is_none());
        assert!(steps("a[1").is_none());
    }

    #[test]
    fn keys_are_located_at_their_deepest_written_part() {
        let text = "[server]\nlisten = [\"ldap://a:1\",\n  \"ldap://b:2\"]\n\n[[access]]\nwho = \"x\"\n[[access]]\nwho = \"y\"\n";
        let doc = DeTable::parse(text).unwrap();
        let at = |key| locate(doc.get_ref(), key).map(|o| Position::of_offset(text, o).line_column.unwrap());
        assert_eq!(at("server.listen[1]"), Some((3, 3)));
        assert_eq!(at("server.listen"), Some((2, 1)));
        assert_eq!(at("server.data_dir"), Some((1, 2)));
        assert_eq!(at("access[1].who"), Some((8, 1)));
        assert_eq!(at("limits.size_limit"), None);
        assert_eq!(at("access[7].who").map(|(l, _)| l), Some(5));
    }

    #[test]
    fn errors_in_different_sections_are_all_found_with_their_lines() {
        let text = "[server]\nworker_threads = \"many\"\n\n[store]\nsync = \"sometimes\"\n\n[limits]\nsize_limit = 0\n";
        let errors = read(text, None, |_| {}).unwrap_err();
        let said: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 3, "{said:#?}");
        assert!(said[0].starts_with("configuration:2:"), "{said:#?}");
        assert!(said[0].contains("server.worker_threads"), "{said:#?}");
        assert!(
            said[1].starts_with("configuration:5:1: `store.sync`"),
            "{said:#?}"
        );
        assert!(
            said[2].starts_with("configuration:8:1: `limits.size_limit`"),
            "{said:#?}"
        );
    }

    #[test]
    fn a_refused_section_is_not_reported_again_through_its_consequences() {
        // The schema file does not load: the access rule naming an attribute it might
        // define is not compiled against a schema without it.
        let text = "[schema]\nfiles = [\"/nonexistent/x.schema\"]\n\n[[access]]\nattrs = [\"nosuchattr\"]\nby = [{ who = \"self\", access = \"write\" }]\n";
        let errors = read(text, None, |_| {}).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert_eq!(errors[0].key(), Some("schema.files"));
        // Without the schema's failure, the rule's own error is found.
        let alone = text.replace("[schema]\nfiles = [\"/nonexistent/x.schema\"]\n", "");
        let errors = read(&alone, None, |_| {}).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(errors[0].to_string().contains("nosuchattr"), "{}", errors[0]);
        // A syntax error stops the reading, every syntax error is reported.
        let errors = read("[server\nx = = 1\n", None, |_| {}).unwrap_err();
        assert!(
            errors.iter().all(|e| matches!(e, ConfigError::Syntax { .. })),
            "{errors:#?}"
        );
    }
}
