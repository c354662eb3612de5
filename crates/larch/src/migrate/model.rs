//! The slapd configuration as read, independent of its source form: `slapd.conf` lines and
//! cn=config attributes both become [`Directive`]s named as in `slapd.conf(5)` (`suffix`,
//! `index`, `access`, ...), each with the file and line it came from, grouped into the
//! global section, databases and their overlays. The mapping to Larch (`plan`) reads only
//! this model.

use std::fmt;
use std::path::PathBuf;

/// Where a directive, a schema or an entry came from: a file and a line (1-based; 0 when
/// the whole file is meant).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file, as given or found.
    pub file: PathBuf,
    /// The line in it.
    pub line: u64,
}

impl Origin {
    /// `file` at `line`.
    pub fn new(file: impl Into<PathBuf>, line: u64) -> Origin {
        Origin {
            file: file.into(),
            line,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file.display())
        } else {
            write!(f, "{}:{}", self.file.display(), self.line)
        }
    }
}

/// One directive: its name in `slapd.conf` form (lowercase), its arguments (quotes
/// removed) and the text as written, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// Lowercase `slapd.conf` name (`olcDbIndex` is `index`).
    pub name: String,
    /// The arguments, split into words as slapd splits them.
    pub args: Vec<String>,
    /// The line as written (continuations joined), for the report.
    pub text: String,
    /// Where it was written.
    pub origin: Origin,
}

impl Directive {
    /// The arguments joined by spaces.
    pub fn rest(&self) -> String {
        self.args.join(" ")
    }
}

/// A schema the configuration loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaRef {
    /// Its name without directory, ordering prefix or extension (`core`, `local`).
    pub name: String,
    /// The file holding it (a `.schema` file, a cn=schema child `.ldif`, or the
    /// `slapd.conf` whose inline definitions [`SchemaRef::inline`] holds).
    pub path: PathBuf,
    /// Definitions written in `slapd.conf` itself (`attributetype`, `objectclass`,
    /// `objectidentifier` lines), in `.schema` syntax.
    pub inline: Option<String>,
    /// The `include` line or the cn=schema child that loads it.
    pub origin: Origin,
}

/// An overlay on a database (or on the frontend).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlay {
    /// `memberof`, `refint`, ... (lowercase, without ordering prefix).
    pub name: String,
    /// The `overlay` line or the olcOverlay entry.
    pub origin: Origin,
    /// Its own directives (`memberof-group-oc`, `olcRefintAttribute`, ...).
    pub directives: Vec<Directive>,
}

/// One database section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Database {
    /// `mdb`, `hdb`, `monitor`, `config`, ... (lowercase).
    pub kind: String,
    /// The `database` line or the olcDatabase entry.
    pub origin: Origin,
    /// Its directives, in order.
    pub directives: Vec<Directive>,
    /// Its overlays, in order.
    pub overlays: Vec<Overlay>,
}

impl Database {
    /// The directives called `name`.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Directive> + 'a {
        self.directives.iter().filter(move |d| d.name == name)
    }

    /// The first directive called `name`.
    pub fn first(&self, name: &str) -> Option<&Directive> {
        self.directives.iter().find(|d| d.name == name)
    }

    /// True for the kinds that hold entries (slapcat exports them).
    pub fn holds_entries(&self) -> bool {
        matches!(self.kind.as_str(), "mdb" | "hdb" | "bdb" | "ldif" | "wt")
    }
}

/// A whole slapd configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SlapdConfig {
    /// The schemas, in load order.
    pub schemas: Vec<SchemaRef>,
    /// Global directives (and the frontend database's), in order.
    pub global: Vec<Directive>,
    /// Overlays configured globally (on the frontend).
    pub global_overlays: Vec<Overlay>,
    /// The databases, in order (the frontend and cn=config excluded; a `database config`
    /// section is kept, as `config`).
    pub databases: Vec<Database>,
}

/// A DN compared without case and without blanks around its separators: enough to tell
/// whether two DNs of one configuration are the same or one lies below the other (the
/// schema-aware normalization is Larch's, when the written configuration is checked).
pub fn dn_key(dn: &str) -> String {
    let mut out = String::with_capacity(dn.len());
    let mut chars = dn.trim().chars().peekable();
    while let Some(c) = chars.next() {
        if matches!(c, ',' | '=' | '+') {
            while out.ends_with(' ') {
                out.pop();
            }
            out.push(c);
            while chars.peek() == Some(&' ') {
                chars.next();
            }
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// True when `dn` is `base` or lies below it (both as [`dn_key`]s); the empty base holds
/// every DN.
pub fn within(dn: &str, base: &str) -> bool {
    base.is_empty() || dn == base || dn.ends_with(&format!(",{base}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dn_keys() {
        assert_eq!(
            dn_key("OU=People, DC=Example ,dc=com"),
            "ou=people,dc=example,dc=com"
        );
        assert!(within("ou=a,dc=x", "dc=x"));
        assert!(within("dc=x", "dc=x"));
        assert!(!within("dc=xdc=x", "dc=x"));
        assert!(!within("ou=a,dc=xy", "dc=x"));
        assert!(within("dc=x", ""));
    }
}
