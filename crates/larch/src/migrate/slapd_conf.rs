//! Reads a `slapd.conf` file (and the configuration files it `include`s) into the model.
//!
//! How a file is read, as slapd reads it:
//! 1. a line starting with a blank continues the previous one; a `#` line is a comment;
//!    an empty line ends a directive;
//! 2. the first word names the directive (any case); the rest is split into words
//!    (`words::split`);
//! 3. `include FILE`: a file ending in `.schema` is a schema the configuration loads;
//!    any other is read here in place (at most [`MAX_INCLUDE_DEPTH`] deep);
//! 4. schema definitions written in the file itself (`attributetype`, `objectclass`,
//!    `objectidentifier`, ...) are kept as one inline schema whose lines are those of
//!    the file (every other line left empty), so a schema error names the file's line;
//! 5. `database TYPE` opens a database section; `overlay NAME` an overlay in it (or
//!    globally before any database); an overlay's own directives go to the overlay, the
//!    others to its database;
//! 6. a directive slapd does not know is refused with its file and line.

use std::path::{Path, PathBuf};

use super::directives::{self, Section};
use super::error::MigrateError;
use super::model::{Database, Directive, Origin, Overlay, SchemaRef, SlapdConfig};
use super::words;

/// Largest configuration file read: real ones are a few kilobytes.
pub const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;

/// Deepest chain of `include`s of configuration files (slapd has no limit; a loop would
/// never end).
pub const MAX_INCLUDE_DEPTH: usize = 16;

/// Reads `path` and what it includes.
pub fn read(path: &Path) -> Result<SlapdConfig, MigrateError> {
    let mut reader = Reader::default();
    reader.file(path, 0)?;
    Ok(reader.finish())
}

/// The model as it is built, file after file.
#[derive(Default)]
struct Reader {
    config: SlapdConfig,
    /// The inline schema of each file with definitions: (path, text, first origin).
    inline: Vec<(PathBuf, String, Origin)>,
}

/// One logical line: its first line number and its text, continuations joined.
fn logical_lines(text: &str) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = Vec::new();
    let mut current: Option<(u64, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let number = i as u64 + 1;
        let continues = line.starts_with([' ', '\t']) && !line.trim().is_empty();
        if continues {
            if let Some((_, text)) = current.as_mut() {
                text.push(' ');
                text.push_str(line.trim());
            }
            // A continuation of a comment or of nothing is ignored, as slapd does.
            continue;
        }
        if let Some(done) = current.take() {
            out.push(done);
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        current = Some((number, line.trim_end().to_string()));
    }
    out.extend(current);
    out
}

impl Reader {
    fn file(&mut self, path: &Path, depth: usize) -> Result<(), MigrateError> {
        let text = read_text(path)?;
        let lines = logical_lines(&text);
        let total_lines = text.lines().count();
        for (number, line) in lines {
            let origin = Origin::new(path, number);
            let mut words = words::split(&line).map_err(|e| MigrateError::at(&origin, e.to_string()))?;
            if words.is_empty() {
                continue;
            }
            let name = words.remove(0).to_ascii_lowercase();
            let directive = Directive {
                name,
                args: words,
                text: line.clone(),
                origin,
            };
            self.directive(directive, path, &text, total_lines, depth)?;
        }
        Ok(())
    }

    fn section(&self) -> Section {
        if self.config.databases.is_empty() {
            Section::Global
        } else {
            Section::Database
        }
    }

    fn directive(
        &mut self,
        d: Directive,
        path: &Path,
        text: &str,
        total_lines: usize,
        depth: usize,
    ) -> Result<(), MigrateError> {
        if !directives::is_known(&d.name, self.section()) {
            let where_ = match self.section() {
                Section::Global => "the global section",
                Section::Database => "a database section",
            };
            return Err(MigrateError::at(
                &d.origin,
                format!("unknown directive `{}` in {where_} (see slapd.conf(5))", d.name),
            ));
        }
        match d.name.as_str() {
            "include" => self.include(&d, path, depth),
            "database" => {
                let kind = d
                    .args
                    .first()
                    .map(|k| k.to_ascii_lowercase())
                    .ok_or_else(|| MigrateError::at(&d.origin, "`database` needs a type (mdb, ...)"))?;
                self.config.databases.push(Database {
                    kind,
                    origin: d.origin,
                    directives: Vec::new(),
                    overlays: Vec::new(),
                });
                Ok(())
            }
            "overlay" => {
                let name =
                    d.args.first().map(|k| overlay_name(k)).ok_or_else(|| {
                        MigrateError::at(&d.origin, "`overlay` needs a name (memberof, ...)")
                    })?;
                let overlay = Overlay {
                    name,
                    origin: d.origin,
                    directives: Vec::new(),
                };
                match self.config.databases.last_mut() {
                    Some(db) => db.overlays.push(overlay),
                    None => self.config.global_overlays.push(overlay),
                }
                Ok(())
            }
            name if directives::SCHEMA.contains(&name) => {
                self.inline_schema(&d, path, text, total_lines);
                Ok(())
            }
            _ => {
                self.place(d);
                Ok(())
            }
        }
    }

    /// Puts a directive in its overlay, database or the global section.
    fn place(&mut self, d: Directive) {
        let overlay_directive = directives::is_overlay_directive(&d.name);
        match self.config.databases.last_mut() {
            Some(db) => match db.overlays.last_mut() {
                Some(ov) if overlay_directive => ov.directives.push(d),
                _ => db.directives.push(d),
            },
            None => match self.config.global_overlays.last_mut() {
                Some(ov) if overlay_directive => ov.directives.push(d),
                _ => self.config.global.push(d),
            },
        }
    }

    fn include(&mut self, d: &Directive, path: &Path, depth: usize) -> Result<(), MigrateError> {
        let Some(target) = d.args.first() else {
            return Err(MigrateError::at(&d.origin, "`include` needs a file"));
        };
        let mut target = PathBuf::from(target);
        if target.is_relative() {
            // slapd takes it from its working directory; the configuration's directory is
            // the better guess for a file read elsewhere, and the working directory next.
            if let Some(dir) = path.parent() {
                let beside = dir.join(&target);
                if beside.exists() {
                    target = beside;
                }
            }
        }
        if target.extension().is_some_and(|e| e == "schema" || e == "ldif") {
            self.config.schemas.push(SchemaRef {
                name: schema_name(&target),
                path: target,
                inline: None,
                origin: d.origin.clone(),
            });
            return Ok(());
        }
        if depth + 1 >= MAX_INCLUDE_DEPTH {
            return Err(MigrateError::at(
                &d.origin,
                format!("includes nest deeper than {MAX_INCLUDE_DEPTH} files (a loop?)"),
            ));
        }
        self.file(&target, depth + 1)
    }

    /// Adds a definition line to the file's inline schema (its lines at their places).
    fn inline_schema(&mut self, d: &Directive, path: &Path, text: &str, total_lines: usize) {
        let index = match self.inline.iter().position(|(p, _, _)| p == path) {
            Some(i) => i,
            None => {
                self.inline
                    .push((path.to_path_buf(), "\n".repeat(total_lines), d.origin.clone()));
                // Loaded where its first definition stands among the includes.
                self.config.schemas.push(SchemaRef {
                    name: format!("{}-local", schema_name(path)),
                    path: path.to_path_buf(),
                    inline: Some(String::new()),
                    origin: d.origin.clone(),
                });
                self.inline.len() - 1
            }
        };
        // The definition's own lines, continuations included, at their line numbers.
        let start = d.origin.line as usize - 1;
        let source: Vec<&str> = text.lines().collect();
        let mut end = start + 1;
        while end < source.len() && source[end].starts_with([' ', '\t']) && !source[end].trim().is_empty() {
            end += 1;
        }
        let entry = &mut self.inline[index].1;
        let mut lines: Vec<String> = entry.split('\n').map(str::to_string).collect();
        for (i, line) in source[start..end].iter().enumerate() {
            if let Some(slot) = lines.get_mut(start + i) {
                *slot = (*line).to_string();
            }
        }
        *entry = lines.join("\n");
    }

    fn finish(mut self) -> SlapdConfig {
        for (path, text, _) in self.inline {
            if let Some(s) = self
                .config
                .schemas
                .iter_mut()
                .find(|s| s.inline.is_some() && s.path == path)
            {
                s.inline = Some(text);
            }
        }
        self.config
    }
}

/// `{2}memberof` -> `memberof`; `memberof.la` -> `memberof`.
pub fn overlay_name(word: &str) -> String {
    let w = strip_ordering(word);
    let w = w
        .strip_suffix(".la")
        .or_else(|| w.strip_suffix(".so"))
        .unwrap_or(w);
    w.to_ascii_lowercase()
}

/// A cn=config ordering prefix removed: `{3}x` -> `x`.
pub fn strip_ordering(word: &str) -> &str {
    if let Some(rest) = word.strip_prefix('{') {
        if let Some(end) = rest.find('}') {
            if rest[..end].chars().all(|c| c.is_ascii_digit() || c == '-') {
                return &rest[end + 1..];
            }
        }
    }
    word
}

/// `/etc/ldap/schema/core.schema` -> `core`; `cn={4}local.ldif` -> `local`.
pub fn schema_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = stem.strip_prefix("cn=").unwrap_or(&stem);
    strip_ordering(stem).to_string()
}

fn read_text(path: &Path) -> Result<String, MigrateError> {
    let whole = Origin::new(path, 0);
    let meta = std::fs::metadata(path).map_err(|e| MigrateError::at(&whole, format!("cannot read: {e}")))?;
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(MigrateError::at(
            &whole,
            format!(
                "{} octets; a configuration file is at most {MAX_CONFIG_BYTES}",
                meta.len()
            ),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| MigrateError::at(&whole, format!("cannot read: {e}")))?;
    String::from_utf8(bytes).map_err(|_| MigrateError::at(&whole, "not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_str(text: &str) -> Result<SlapdConfig, MigrateError> {
        let dir = tempdir();
        let path = dir.join("slapd.conf");
        std::fs::write(&path, text).unwrap();
        read(&path)
    }

    fn tempdir() -> PathBuf {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let d = std::env::temp_dir().join(format!(
            "larch-migrate-conf-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn sections_overlays_and_continuations() {
        let c = read_str(
            "# a comment\ninclude /etc/ldap/schema/core.schema\nsizelimit 100\n\
             access to *\n  by self write\n  by * read\n\ndatabase mdb\nsuffix \"dc=example,dc=com\"\n\
             index cn,sn eq,sub\noverlay memberof\nmemberof-group-oc groupOfNames\nrootdn cn=admin,dc=example,dc=com\n",
        )
        .unwrap();
        assert_eq!(c.schemas.len(), 1);
        assert_eq!(c.schemas[0].name, "core");
        assert_eq!(c.global.len(), 2);
        assert_eq!(c.global[1].name, "access");
        assert_eq!(
            c.global[1].args,
            ["to", "*", "by", "self", "write", "by", "*", "read"]
        );
        assert_eq!(c.global[1].origin.line, 4);
        let db = &c.databases[0];
        assert_eq!(db.kind, "mdb");
        assert_eq!(db.first("suffix").unwrap().args, ["dc=example,dc=com"]);
        assert_eq!(db.overlays[0].name, "memberof");
        assert_eq!(db.overlays[0].directives[0].name, "memberof-group-oc");
        // A database directive after an overlay belongs to the database.
        assert!(db.first("rootdn").is_some());
    }

    #[test]
    fn unknown_directive_names_file_and_line() {
        let e = read_str("database mdb\nsuffix dc=x\nindx cn eq\n").unwrap_err();
        assert_eq!(e.origin.as_ref().unwrap().line, 3);
        assert!(
            e.to_string().contains("slapd.conf:3: unknown directive `indx`"),
            "{e}"
        );
        let e = read_str("frobnicate yes\n").unwrap_err();
        assert!(e.message.contains("global section"), "{e}");
    }

    #[test]
    fn inline_schema_keeps_line_numbers() {
        let c = read_str(
            "include /etc/ldap/schema/core.schema\nobjectidentifier Ex 1.3.6.1.4.1.99999\n\
             attributetype ( Ex:1 NAME 'exA'\n  SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\ndatabase mdb\n",
        )
        .unwrap();
        assert_eq!(c.schemas.len(), 2);
        let inline = c.schemas[1].inline.as_deref().unwrap();
        let lines: Vec<&str> = inline.split('\n').collect();
        assert_eq!(lines[0], "");
        assert!(lines[1].starts_with("objectidentifier"));
        assert!(lines[2].starts_with("attributetype"));
        assert!(lines[3].contains("SYNTAX"));
    }

    #[test]
    fn names() {
        assert_eq!(overlay_name("{0}memberof"), "memberof");
        assert_eq!(schema_name(Path::new("/x/cn={4}local.ldif")), "local");
        assert_eq!(strip_ordering("{12}to *"), "to *");
    }
}
