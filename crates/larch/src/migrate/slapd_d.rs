//! Reads a `slapd.d` directory (cn=config as LDIF files, the form Debian's package
//! installs and `slaptest -F` writes) into the model.
//!
//! The layout, read in this order:
//! 1. `cn=config.ldif`: the global settings;
//! 2. `cn=config/cn=module{N}.ldif`: `olcModulePath`, `olcModuleLoad`;
//! 3. `cn=config/cn=schema/cn={N}NAME.ldif`: the schemas, in `{N}` order (each file is read
//!    later by Larch's own schema loader, which takes cn=config LDIF as it is);
//! 4. `cn=config/olcDatabase={N}TYPE.ldif`, in `{N}` order: `{-1}frontend` adds to the
//!    global settings, the others are databases; `olcDatabase={N}TYPE/olcOverlay={M}NAME.ldif`
//!    are their overlays, in `{M}` order.
//!
//! Each file is one LDIF entry. Every `olc*` attribute value becomes a directive under its
//! `slapd.conf` name (`directives::from_olc`), with the file and the line its attribute
//! starts on; values lose their `{N}` ordering prefix; `attr:: base64` values are decoded.

use std::path::{Path, PathBuf};

use base64::Engine;

use super::directives;
use super::error::MigrateError;
use super::model::{Database, Directive, Origin, Overlay, SchemaRef, SlapdConfig};
use super::slapd_conf::{overlay_name, schema_name, strip_ordering, MAX_CONFIG_BYTES};
use super::words;

/// Most files in one directory of `slapd.d` (schemas, databases, overlays).
pub const MAX_FILES: usize = 4096;

/// The directives whose value is several words in `slapd.conf` (the others are one value,
/// which may hold blanks: a DN, a path).
const MULTI_WORD: &[&str] = &[
    "access",
    "limits",
    "index",
    "sizelimit",
    "timelimit",
    "logops",
    "logpurge",
    "security",
    "require",
    "allow",
    "disallow",
    "loglevel",
    "password-hash",
    "syncrepl",
    "unique_uri",
    "restrict",
    "authz-regexp",
];

/// One attribute value of an LDIF entry and the line its attribute starts on.
struct Value {
    attribute: String,
    value: String,
    line: u64,
}

/// Reads the directory `dir` (the one holding `cn=config.ldif`).
pub fn read(dir: &Path) -> Result<SlapdConfig, MigrateError> {
    let mut config = SlapdConfig::default();
    let root = dir.join("cn=config.ldif");
    config.global.extend(settings(&root)?);
    let sub = dir.join("cn=config");
    for (_, path) in ordered(&sub, "cn=module")? {
        config.global.extend(settings(&path)?);
    }
    for (_, path) in ordered(&sub.join("cn=schema"), "cn=")? {
        let origin = Origin::new(&path, dn_line(&path));
        config.schemas.push(SchemaRef {
            name: schema_name(&path),
            path,
            inline: None,
            origin,
        });
    }
    for (_, path) in ordered(&sub, "olcDatabase=")? {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let kind = strip_ordering(stem.trim_start_matches("olcDatabase=")).to_ascii_lowercase();
        let directives = settings(&path)?;
        let overlays = overlays(&sub.join(&stem))?;
        if kind == "frontend" {
            config.global.extend(directives);
            config.global_overlays.extend(overlays);
        } else {
            config.databases.push(Database {
                kind,
                origin: Origin::new(&path, dn_line(&path)),
                directives,
                overlays,
            });
        }
    }
    Ok(config)
}

fn overlays(dir: &Path) -> Result<Vec<Overlay>, MigrateError> {
    let mut out = Vec::new();
    for (_, path) in ordered(dir, "olcOverlay=")? {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push(Overlay {
            name: overlay_name(stem.trim_start_matches("olcOverlay=")),
            origin: Origin::new(&path, dn_line(&path)),
            directives: settings(&path)?,
        });
    }
    Ok(out)
}

/// The line of the `dn:` of the entry in `path` (1 when it cannot be found): where a
/// database, an overlay or a schema "is" in its file.
fn dn_line(path: &Path) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.lines().position(|l| l.starts_with("dn:")))
        .map_or(1, |i| i as u64 + 1)
}

/// The `.ldif` files of `dir` whose names start with `prefix`, by their `{N}` (files
/// without one first, by name). A missing directory has none.
fn ordered(dir: &Path, prefix: &str) -> Result<Vec<(i64, PathBuf)>, MigrateError> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for entry in read {
        let entry = entry.map_err(|e| MigrateError::at(&Origin::new(dir, 0), e.to_string()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(prefix) else {
            continue;
        };
        if !name.ends_with(".ldif") {
            continue;
        }
        let order = rest
            .strip_prefix('{')
            .and_then(|r| r.split('}').next())
            .and_then(|n| n.parse::<i64>().ok())
            .unwrap_or(i64::MIN);
        out.push((order, entry.path()));
        if out.len() > MAX_FILES {
            return Err(MigrateError::at(
                &Origin::new(dir, 0),
                format!("more than {MAX_FILES} files"),
            ));
        }
    }
    out.sort();
    Ok(out)
}

/// The configuration directives of one cn=config entry file.
fn settings(path: &Path) -> Result<Vec<Directive>, MigrateError> {
    let mut out = Vec::new();
    for v in values(path)? {
        let origin = Origin::new(path, v.line);
        let Some(name) = directives::from_olc(&v.attribute) else {
            continue;
        };
        if matches!(name.as_str(), "database" | "overlay" | "backend") {
            continue;
        }
        if name.starts_with("attributetypes")
            || name.starts_with("objectclasses")
            || name == "objectidentifier"
            || name == "ldapsyntaxes"
            || name == "ditcontentrules"
        {
            return Err(MigrateError::at(
                &origin,
                "schema definitions outside cn=schema,cn=config are not read; move them into a \
                 cn=schema child",
            ));
        }
        let value = strip_ordering(&v.value).to_string();
        let args = if MULTI_WORD.contains(&name.as_str()) {
            words::split(&value).map_err(|e| MigrateError::at(&origin, e.to_string()))?
        } else {
            vec![value.clone()]
        };
        out.push(Directive {
            name,
            args,
            text: format!("{}: {value}", v.attribute),
            origin,
        });
    }
    Ok(out)
}

/// The attribute values of the one LDIF entry in `path`, continuations joined.
fn values(path: &Path) -> Result<Vec<Value>, MigrateError> {
    let whole = Origin::new(path, 0);
    let meta = std::fs::metadata(path).map_err(|e| MigrateError::at(&whole, format!("cannot read: {e}")))?;
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(MigrateError::at(&whole, "too large for a cn=config entry"));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| MigrateError::at(&whole, format!("cannot read: {e}")))?;
    let mut logical: Vec<(u64, String)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let number = i as u64 + 1;
        if let Some(rest) = line.strip_prefix(' ') {
            match logical.last_mut() {
                Some((_, l)) => l.push_str(rest),
                None => {
                    return Err(MigrateError::at(
                        &Origin::new(path, number),
                        "a continuation line with nothing to continue",
                    ))
                }
            }
        } else if line.starts_with('#') {
            // A comment; its continuations would wrongly join the previous value.
            logical.push((number, String::from("#")));
        } else if !line.is_empty() {
            logical.push((number, line.to_string()));
        }
    }
    let mut out = Vec::new();
    for (line, l) in logical {
        if l.starts_with('#') {
            continue;
        }
        let origin = Origin::new(path, line);
        let Some(colon) = l.find(':') else {
            return Err(MigrateError::at(
                &origin,
                format!("`{l}` is not an LDIF attribute line"),
            ));
        };
        let attribute = l[..colon].to_string();
        let rest = &l[colon + 1..];
        let value = if let Some(b64) = rest.strip_prefix(':') {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map_err(|e| MigrateError::at(&origin, format!("`{attribute}`: bad base64: {e}")))?;
            String::from_utf8(bytes)
                .map_err(|_| MigrateError::at(&origin, format!("`{attribute}`: value is not UTF-8")))?
        } else if rest.starts_with('<') {
            return Err(MigrateError::at(
                &origin,
                format!("`{attribute}`: URL values are not read"),
            ));
        } else {
            rest.trim_start().to_string()
        };
        if attribute.eq_ignore_ascii_case("dn") {
            continue;
        }
        out.push(Value {
            attribute,
            value,
            line,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tempdir() -> PathBuf {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let d = std::env::temp_dir().join(format!(
            "larch-migrate-d-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn reads_a_slapd_d_tree() {
        let d = tempdir();
        std::fs::create_dir_all(d.join("cn=config/cn=schema")).unwrap();
        std::fs::create_dir_all(d.join("cn=config/olcDatabase={1}mdb")).unwrap();
        std::fs::write(
            d.join("cn=config.ldif"),
            "# AUTO-GENERATED FILE - DO NOT EDIT!! Use ldapmodify.\ndn: cn=config\nobjectClass: olcGlobal\n\
             cn: config\nolcSizeLimit: 200\nolcTLSCertificateFile: /etc/ssl/a b.pem\nentryCSN: x\n",
        )
        .unwrap();
        std::fs::write(
            d.join("cn=config/cn=schema/cn={1}cosine.ldif"),
            "dn: cn={1}cosine\n",
        )
        .unwrap();
        std::fs::write(d.join("cn=config/cn=schema/cn={0}core.ldif"), "dn: cn={0}core\n").unwrap();
        std::fs::write(
            d.join("cn=config/cn=schema/cn={10}local.ldif"),
            "dn: cn={10}local\n",
        )
        .unwrap();
        std::fs::write(
            d.join("cn=config/olcDatabase={-1}frontend.ldif"),
            "dn: olcDatabase={-1}frontend\nolcAccess: {0}to dn.base=\"\" by * read\n",
        )
        .unwrap();
        std::fs::write(
            d.join("cn=config/olcDatabase={1}mdb.ldif"),
            "dn: olcDatabase={1}mdb\nolcDatabase: {1}mdb\nolcSuffix: dc=example,dc=com\n\
             olcRootPW:: e1NTSEF9YWJj\nolcAccess: {0}to attrs=userPassword\n  by self write by * none\n\
             olcDbIndex: cn,sn eq\n",
        )
        .unwrap();
        std::fs::write(
            d.join("cn=config/olcDatabase={1}mdb/olcOverlay={0}memberof.ldif"),
            "dn: olcOverlay={0}memberof\nolcOverlay: {0}memberof\nolcMemberOfGroupOC: groupOfNames\n",
        )
        .unwrap();
        let c = read(&d).unwrap();
        let names: Vec<&str> = c.schemas.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["core", "cosine", "local"]);
        assert_eq!(c.global[0].name, "sizelimit");
        assert_eq!(c.global[1].args, ["/etc/ssl/a b.pem"]);
        assert_eq!(c.global[2].name, "access");
        assert_eq!(c.global[2].args, ["to", "dn.base=", "by", "*", "read"]);
        let db = &c.databases[0];
        assert_eq!(db.kind, "mdb");
        assert_eq!(db.first("rootpw").unwrap().args, ["{SSHA}abc"]);
        let access = db.first("access").unwrap();
        assert_eq!(
            access.args,
            [
                "to",
                "attrs=userPassword",
                "by",
                "self",
                "write",
                "by",
                "*",
                "none"
            ]
        );
        assert_eq!(access.origin.line, 5);
        assert_eq!(db.first("index").unwrap().origin.line, 7);
        assert_eq!(db.overlays[0].name, "memberof");
        assert_eq!(db.overlays[0].directives[0].name, "memberof-group-oc");
    }

    #[test]
    fn broken_ldif_names_its_line() {
        let d = tempdir();
        std::fs::write(d.join("cn=config.ldif"), "dn: cn=config\nolcSizeLimit 200\n").unwrap();
        let e = read(&d).unwrap_err();
        assert_eq!(e.origin.unwrap().line, 2);
    }
}
