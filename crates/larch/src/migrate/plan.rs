//! The slapd model mapped onto Larch: what `larch.toml` will say, which schema files are
//! written beside it, and the report of every directive. Nothing is written here.
//!
//! In steps:
//! 1. the schemas: the ones Larch ships (`core`, `cosine`, `inetorgperson`, `nis`,
//!    `dyngroup`, `duaconf`; `rfc2307bis`) are its built-in ones, every other is copied;
//!    all are loaded with Larch's loader now, from the slapd files, so that a broken one
//!    is refused with its own file and line;
//! 2. the global section's directives;
//! 3. each database: suffixes, the admin (the first database's rootDN and rootPW), its
//!    directives and overlays (`overlays`), its access rules confined to its suffixes;
//! 4. the access rules in slapd's order of evaluation: each database's, then the global
//!    ones; slapd's default (everyone reads) made explicit where it had no rule.

use std::sync::Arc;

use larch_model::schema::{BuiltinSchemas, Schema, SchemaFormat, SchemaSource};

use super::acl::{self, Clause, Rule};
use super::error::MigrateError;
use super::model::{dn_key, within, Database, Directive, Origin, SchemaRef, SlapdConfig};
use super::overlays::{self, GroupsPlan, OverlayPlan, UniquenessPlan};
use super::report::{Fate, Report};

/// The schemas Larch ships under the names OpenLDAP's files have.
const BUILTIN_NAMES: &[&str] = &["core", "cosine", "inetorgperson", "nis", "dyngroup", "duaconf"];

/// slapd's "unlimited" as a Larch limit: the largest count a search could return.
pub const UNLIMITED: usize = u32::MAX as usize;

/// A schema file to write beside `larch.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaFile {
    /// Its name in `schema/` (`10-local.schema`).
    pub name: String,
    /// Its text.
    pub text: String,
}

/// The administrator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Admin {
    /// The rootDN, when a database has one within a suffix.
    pub dn: Option<String>,
    /// The rootPW as stored (a `{SCHEME}` hash, or cleartext).
    pub password: Option<String>,
}

/// `[limits]` values slapd set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    /// `size_limit`.
    pub size: Option<usize>,
    /// `time_limit`, in seconds.
    pub time: Option<u64>,
    /// `lookthrough_limit`.
    pub lookthrough: Option<usize>,
    /// `idle_timeout`, in seconds (0: none).
    pub idle: Option<u64>,
    /// `write_timeout`, in seconds.
    pub write: Option<u64>,
}

/// `[tls]` files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tls {
    /// `certificate`.
    pub certificate: Option<String>,
    /// `key`.
    pub key: Option<String>,
    /// `client_ca`.
    pub client_ca: Option<String>,
    /// `client_certificates`.
    pub client_certificates: Option<&'static str>,
}

/// Everything the migration writes, decided.
#[derive(Debug)]
pub struct Plan {
    /// `schema.builtin`.
    pub builtin: &'static str,
    /// `schema.files`, in load order.
    pub schema_files: Vec<SchemaFile>,
    /// The schema, loaded.
    pub schema: Arc<Schema>,
    /// The naming contexts, in order.
    pub suffixes: Vec<String>,
    /// Suffixes whose entries are not migrated (accesslog's databases).
    pub excluded_suffixes: Vec<String>,
    /// The administrator.
    pub admin: Admin,
    /// `[indexes]`, in order.
    pub indexes: Vec<(String, Vec<&'static str>)>,
    /// `[limits]`.
    pub limits: Limits,
    /// `[tls]`.
    pub tls: Tls,
    /// `[[access]]`.
    pub access: Vec<Rule>,
    /// `password.default_scheme`.
    pub password_scheme: Option<&'static str>,
    /// `directory.allow_anonymous_bind`.
    pub allow_anonymous_bind: Option<bool>,
    /// `directory.allow_unauthenticated_bind`.
    pub allow_unauthenticated_bind: Option<bool>,
    /// `[audit_log]`.
    pub audit_log: Option<Option<String>>,
    /// Attributes dropped overlays maintained on entries.
    pub maintained: Vec<String>,
    /// `[groups]`: the memberof and refint overlays.
    pub groups: GroupsPlan,
    /// `[uniqueness]`: the unique overlays (`None`: there was none).
    pub uniqueness: Option<UniquenessPlan>,
    /// What became of each directive.
    pub report: Report,
}

/// Maps `config`.
pub fn plan(config: &SlapdConfig) -> Result<Plan, MigrateError> {
    let mut report = Report::default();
    let (builtin, schema_files, schema) = schemas(&config.schemas, &mut report)?;
    let mut p = Plan {
        builtin: match builtin {
            BuiltinSchemas::Rfc2307bis => "rfc2307bis",
            _ => "standard",
        },
        schema_files,
        schema,
        suffixes: Vec::new(),
        excluded_suffixes: Vec::new(),
        admin: Admin::default(),
        indexes: Vec::new(),
        limits: Limits::default(),
        tls: Tls::default(),
        access: Vec::new(),
        password_scheme: None,
        allow_anonymous_bind: None,
        allow_unauthenticated_bind: None,
        audit_log: None,
        maintained: Vec::new(),
        groups: GroupsPlan::default(),
        uniqueness: None,
        report,
    };
    let mut overlay_plan = OverlayPlan::default();
    overlays::map(&config.global_overlays, &mut overlay_plan, &mut p.report);
    for db in &config.databases {
        overlays::map(&db.overlays, &mut overlay_plan, &mut p.report);
    }
    p.excluded_suffixes = overlay_plan.log_databases.iter().map(|s| dn_key(s)).collect();
    let mut global_rules = Vec::new();
    for d in &config.global {
        if d.name == "access" {
            let m = acl::map(d, None);
            p.report.extend(m.report);
            global_rules.extend(m.rule);
        } else {
            setting(d, &mut p);
        }
    }
    let mut any_access = config.global.iter().any(|d| d.name == "access");
    let global_has_rules = any_access;
    for db in &config.databases {
        any_access |= database(db, &mut p, global_has_rules)?;
    }
    p.access.extend(global_rules);
    if p.access.is_empty() && any_access {
        p.access.push(Rule {
            dn: None,
            scope: None,
            filter: None,
            attrs: None,
            by: vec![clause("*", "none")],
            origin: Origin::new("(slapd)", 0),
            text: "access to * by * none".into(),
        });
        p.report.push(
            Fate::Changed,
            "the implicit `access to * by * none` ending slapd's rules",
            "written as a rule: none of the configured rules maps, and Larch would otherwise run its default policy",
            None,
        );
    }
    p.audit_log = overlay_plan.audit_log;
    p.maintained = overlay_plan.maintained;
    p.groups = overlay_plan.groups;
    p.uniqueness = overlay_plan.uniqueness;
    if p.suffixes.is_empty() {
        return Err(MigrateError::new(
            "the configuration has no database with a suffix: there is nothing to migrate",
        ));
    }
    admin_note(&mut p);
    p.report.push(
        Fate::Changed,
        "listeners (slapd -h URLs)",
        "they are on slapd's command line, not in its configuration: set server.listen in larch.toml \
         (written as ldap://127.0.0.1:3389)",
        None,
    );
    Ok(p)
}

fn clause(who: &'static str, access: &str) -> Clause {
    Clause {
        who: Some(who),
        access: access.into(),
        ..Clause::default()
    }
}

/// Step 1: the schemas.
fn schemas(
    refs: &[SchemaRef],
    report: &mut Report,
) -> Result<(BuiltinSchemas, Vec<SchemaFile>, Arc<Schema>), MigrateError> {
    let mut builtin = BuiltinSchemas::Standard;
    let mut files = Vec::new();
    let mut texts: Vec<(String, String, SchemaFormat)> = Vec::new();
    for s in refs {
        let what = match &s.inline {
            Some(_) => format!("schema definitions in {}", s.path.display()),
            None => format!("schema {} ({})", s.name, s.path.display()),
        };
        let lower = s.name.to_ascii_lowercase();
        if BUILTIN_NAMES.contains(&lower.as_str()) && s.inline.is_none() {
            report.push(
                Fate::Carried,
                what,
                "built into Larch (schema.builtin)",
                Some(&s.origin),
            );
            continue;
        }
        if lower == "rfc2307bis" && s.inline.is_none() {
            builtin = BuiltinSchemas::Rfc2307bis;
            report.push(
                Fate::Carried,
                what,
                "schema.builtin = \"rfc2307bis\"",
                Some(&s.origin),
            );
            continue;
        }
        let text = match &s.inline {
            Some(t) => t.clone(),
            None => std::fs::read_to_string(&s.path)
                .map_err(|e| MigrateError::at(&s.origin, format!("cannot read {}: {e}", s.path.display())))?,
        };
        let format = if s.inline.is_some() {
            SchemaFormat::OpenLdap
        } else {
            SchemaFormat::from_path(&s.path)
        };
        let ext = if format == SchemaFormat::Ldif {
            "ldif"
        } else {
            "schema"
        };
        let name = format!("{:02}-{}.{ext}", files.len() + 1, s.name);
        report.push(
            Fate::Carried,
            what,
            format!("schema/{name}, in schema.files"),
            Some(&s.origin),
        );
        files.push(SchemaFile {
            name,
            text: text.clone(),
        });
        texts.push((s.path.display().to_string(), text, format));
    }
    let sources: Vec<SchemaSource<'_>> = texts
        .iter()
        .map(|(name, text, format)| SchemaSource {
            name,
            text,
            format: *format,
        })
        .collect();
    let schema = Schema::from_sources(builtin, &sources)
        .map_err(|e| MigrateError::new(format!("the schema does not load in Larch: {e}")))?;
    Ok((builtin, files, Arc::new(schema)))
}

/// Step 3: one database. Returns whether it had access rules.
fn database(db: &Database, p: &mut Plan, global_has_rules: bool) -> Result<bool, MigrateError> {
    let what = format!("database {}", db.kind);
    let suffixes: Vec<String> = db.all("suffix").filter_map(|d| d.args.first().cloned()).collect();
    let own_rules = db.all("access").count() > 0;
    match db.kind.as_str() {
        "config" => {
            p.report.push(
                Fate::Changed,
                what,
                "cn=config: Larch's configuration is larch.toml, read at start and not changed over LDAP; \
                 the config database's own access rules and rootDN are not carried over",
                Some(&db.origin),
            );
            return Ok(false);
        }
        "monitor" => {
            p.report.push(
                Fate::Carried,
                what,
                "cn=Monitor is built into Larch ([monitor])",
                Some(&db.origin),
            );
            for d in db.all("access") {
                let m = acl::map(d, Some("cn=Monitor"));
                p.report.extend(m.report);
                p.access.extend(m.rule);
            }
            return Ok(own_rules);
        }
        _ if !db.holds_entries() => {
            p.report.push(
                Fate::Dropped,
                what,
                format!("Larch has no {} backend: it stores its own entries only", db.kind),
                Some(&db.origin),
            );
            return Ok(false);
        }
        _ => {}
    }
    if suffixes.iter().any(|s| p.excluded_suffixes.contains(&dn_key(s))) {
        p.report.push(
            Fate::Changed,
            format!("{what} ({})", suffixes.join(", ")),
            "accesslog's log database: not migrated (see the accesslog overlay); its entries are left out",
            Some(&db.origin),
        );
        return Ok(false);
    }
    if suffixes.is_empty() {
        p.report.push(
            Fate::Dropped,
            what,
            "a database without a suffix holds nothing Larch can serve",
            Some(&db.origin),
        );
        return Ok(false);
    }
    p.report.push(
        Fate::Carried,
        &what,
        "entries imported into Larch's store (server.data_dir)",
        Some(&db.origin),
    );
    for d in &db.directives {
        match d.name.as_str() {
            "suffix" => {
                let s = d.args.first().cloned().unwrap_or_default();
                let note = if p.suffixes.is_empty() {
                    "directory.suffix"
                } else {
                    "directory.extra_suffixes"
                };
                p.report.push(Fate::Carried, &d.text, note, Some(&d.origin));
                p.suffixes.push(s);
            }
            "rootdn" => rootdn(d, p, &suffixes, db.first("rootpw")),
            "rootpw" if db.first("rootdn").is_none() => p.report.push(
                Fate::Dropped,
                "rootpw (hidden)",
                "a rootPW without a rootDN names no one",
                Some(&d.origin),
            ),
            "rootpw" => {}
            "access" => {
                for s in &suffixes {
                    let m = acl::map(d, Some(s));
                    p.report.extend(m.report);
                    p.access.extend(m.rule);
                }
            }
            _ => setting(d, p),
        }
    }
    if !own_rules && !global_has_rules {
        for s in &suffixes {
            p.access.push(Rule {
                dn: Some(s.clone()),
                scope: Some("subtree"),
                filter: None,
                attrs: None,
                by: vec![clause("*", "read")],
                origin: db.origin.clone(),
                text: "access to * by * read".into(),
            });
        }
        p.report.push(
            Fate::Carried,
            format!("{what}: no access rule (slapd's default: everyone reads everything)"),
            "written as a rule, since Larch's own default policy differs",
            Some(&db.origin),
        );
    }
    Ok(own_rules)
}

/// A database's rootDN (and the rootPW of its database).
fn rootdn(d: &Directive, p: &mut Plan, db_suffixes: &[String], rootpw: Option<&Directive>) {
    let dn = d.args.first().cloned().unwrap_or_default();
    let key = dn_key(&dn);
    if !db_suffixes.iter().any(|s| within(&key, &dn_key(s))) {
        p.report.push(
            Fate::Dropped,
            &d.text,
            "Larch's admin must be an entry within a naming context",
            Some(&d.origin),
        );
        return;
    }
    if p.admin.dn.is_some() {
        p.report.push(
            Fate::Dropped,
            &d.text,
            "Larch has one admin (the first database's rootDN); this DN binds only with its entry's userPassword",
            Some(&d.origin),
        );
        return;
    }
    p.admin.dn = Some(dn);
    p.report
        .push(Fate::Carried, &d.text, "directory.admin_dn", Some(&d.origin));
    let Some(pw) = rootpw else {
        p.report.push(
            Fate::Changed,
            format!("{}: no rootpw", d.text),
            "the admin binds with its entry's userPassword; without an entry, Larch creates one at first \
             start with a generated password (or $LARCH_ADMIN_PASSWORD)",
            Some(&d.origin),
        );
        return;
    };
    let value = pw.args.first().cloned().unwrap_or_default();
    // The report never shows the password, hashed or not.
    let shown = format!(
        "rootpw {}",
        larch_server::password::scheme_label(value.as_bytes())
    );
    match larch_server::password::parse_stored(value.as_bytes()) {
        Some((larch_server::password::Scheme::Cleartext, _)) => {
            p.report.push(
                Fate::Changed,
                "rootpw (cleartext)",
                "hashed into the admin entry's userPassword with password.default_scheme",
                Some(&pw.origin),
            );
            p.admin.password = Some(value);
        }
        Some(_) => {
            p.report.push(
                Fate::Carried,
                shown.trim_end().to_string(),
                "the admin entry's userPassword, the hash kept as it is",
                Some(&pw.origin),
            );
            p.admin.password = Some(value);
        }
        None => p.report.push(
            Fate::Dropped,
            shown,
            "Larch does not verify this scheme: the admin keeps its entry's userPassword, or gets a \
             generated one",
            Some(&pw.origin),
        ),
    }
}

/// Reports an admin without a rootDN.
fn admin_note(p: &mut Plan) {
    if p.admin.dn.is_none() {
        p.report.push(
            Fate::Changed,
            "no rootdn within a suffix",
            format!(
                "Larch's admin is cn=admin,{} (its default), created at first start with a generated \
                 password (or $LARCH_ADMIN_PASSWORD)",
                p.suffixes[0]
            ),
            None,
        );
    }
}

/// Step 2 (and the databases' other directives): one setting.
fn setting(d: &Directive, p: &mut Plan) {
    let first = d.args.first().map(String::as_str).unwrap_or("");
    let (fate, note): (Fate, String) = match d.name.as_str() {
        "rootpw" => {
            // Never shown, hashed or not.
            let what = "rootpw (hidden)";
            p.report.push(Fate::Dropped, what, "outside a database it names no admin", Some(&d.origin));
            return;
        }
        "index" => return index(d, p),
        "sizelimit" | "timelimit" => return limit_words(d, &d.args, p),
        "limits" => return limits_directive(d, p),
        "idletimeout" => match first.parse::<u64>() {
            Ok(n) => {
                p.limits.idle = Some(n);
                (Fate::Carried, format!("limits.idle_timeout = \"{n}s\""))
            }
            Err(_) => (Fate::Dropped, "not a number of seconds".into()),
        },
        "writetimeout" => match first.parse::<u64>() {
            Ok(0) => (Fate::Changed, "no write timeout in slapd; Larch keeps limits.write_timeout = \"30s\"".into()),
            Ok(n) => {
                p.limits.write = Some(n);
                (Fate::Carried, format!("limits.write_timeout = \"{n}s\""))
            }
            Err(_) => (Fate::Dropped, "not a number of seconds".into()),
        },
        "tlscertificatefile" => {
            p.tls.certificate = Some(first.to_string());
            (Fate::Carried, "tls.certificate".into())
        }
        "tlscertificatekeyfile" => {
            p.tls.key = Some(first.to_string());
            (Fate::Carried, "tls.key".into())
        }
        "tlscacertificatefile" => {
            p.tls.client_ca = Some(first.to_string());
            (Fate::Carried, "tls.client_ca (the CA of client certificates)".into())
        }
        "tlsverifyclient" => {
            let v = match first.to_ascii_lowercase().as_str() {
                "never" => "none",
                "allow" | "try" => "request",
                "demand" | "hard" | "true" => "require",
                _ => "none",
            };
            p.tls.client_certificates = Some(v);
            (Fate::Carried, format!("tls.client_certificates = \"{v}\""))
        }
        "tlsciphersuite" | "tlsprotocolmin" | "tlsdhparamfile" | "tlseccurve" | "tlsecname" | "tlsrandfile" => (
            Fate::Changed,
            "Larch offers TLS 1.3 and 1.2 with rustls's default cipher suites and groups".into(),
        ),
        "tlscacertificatepath" | "tlscrlfile" | "tlscrlcheck" => {
            (Fate::Dropped, "Larch takes a CA file (tls.client_ca) and checks no CRL".into())
        }
        "password-hash" => match first.to_ascii_uppercase().as_str() {
            "{SSHA}" => scheme(p, "ssha"),
            "{SSHA512}" => scheme(p, "ssha512"),
            "{PBKDF2-SHA512}" => scheme(p, "pbkdf2-sha512"),
            "{ARGON2}" => scheme(p, "argon2id"),
            _ => (
                Fate::Changed,
                "new passwords are hashed with password.default_scheme = \"argon2id\"; stored hashes keep verifying".into(),
            ),
        },
        "disallow" => {
            let mut rest = Vec::new();
            for w in &d.args {
                if w.eq_ignore_ascii_case("bind_anon") {
                    p.allow_anonymous_bind = Some(false);
                } else {
                    rest.push(w.as_str());
                }
            }
            if rest.is_empty() {
                (Fate::Carried, "directory.allow_anonymous_bind = false".into())
            } else {
                (Fate::Dropped, format!("Larch has no equivalent of {}", rest.join(", ")))
            }
        }
        "allow" => {
            let mut rest = Vec::new();
            for w in &d.args {
                match w.to_ascii_lowercase().as_str() {
                    "bind_anon_dn" => p.allow_unauthenticated_bind = Some(true),
                    "none" => {}
                    _ => rest.push(w.as_str()),
                }
            }
            if rest.is_empty() {
                (Fate::Carried, "directory.allow_unauthenticated_bind".into())
            } else {
                (Fate::Dropped, format!("Larch has no equivalent of {} (LDAPv3 only)", rest.join(", ")))
            }
        }
        "require" if first.eq_ignore_ascii_case("none") => (Fate::Carried, "nothing is required (the default)".into()),
        "security" => (
            Fate::Dropped,
            "Larch has no SSF rules; [security] require_tls says which connections need TLS".into(),
        ),
        "directory" => (Fate::Carried, "server.data_dir = \"data\", imported from the LDIF".into()),
        "maxsize" | "maxreaders" | "mode" | "checkpoint" | "envflags" | "searchstack" | "multival" | "idlexp"
        | "maxentrysize" | "rtxnsize" | "dbpagesize" | "cachesize" | "idlcachesize" | "dncachesize" | "dbconfig"
        | "txn_max" | "dbmaxsize" | "dirtyread" | "checksum" | "cachefree" | "linearindex" | "lockdetect"
        | "shm_key" => (
            Fate::Changed,
            "back-mdb tuning: Larch's store (snapshots and a write-ahead log) has no such setting".into(),
        ),
        "dbnosync" => (
            Fate::Changed,
            "Larch fsyncs before acknowledging a write ([store] sync = \"always\"); \"batch\" or \"none\" trade that away".into(),
        ),
        "pidfile" | "argsfile" => (
            Fate::Changed,
            "Larch writes no PID or arguments file: run it in the foreground under systemd (contrib/systemd)".into(),
        ),
        "loglevel" | "logfile" | "logfile-format" | "logfile-only" | "logfile-rotate" => (
            Fate::Changed,
            "Larch's [error_log] (level info) and [access_log] (on by default) replace slapd's debug levels".into(),
        ),
        "modulepath" | "moduleload" => (
            Fate::Carried,
            "nothing to load: Larch is one binary (password schemes are built in; overlays have their own lines)".into(),
        ),
        "threads" | "tool-threads" | "listener-threads" | "threadqueues" | "concurrency" | "conn_max_pending"
        | "conn_max_pending_auth" | "gentlehup" | "index_hash64" | "index_intlen" | "index_substr_any_len"
        | "index_substr_any_step" | "index_substr_if_maxlen" | "index_substr_if_minlen" | "tcp-buffer"
        | "sockbuf_max_incoming" | "sockbuf_max_incoming_auth" | "sortvals" => (
            Fate::Changed,
            "tuning without an equivalent: Larch sizes its threads by cores, its PDUs by limits.max_pdu_bytes".into(),
        ),
        "lastmod" if first.eq_ignore_ascii_case("on") || first.eq_ignore_ascii_case("true") => {
            (Fate::Carried, "Larch maintains the operational attributes".into())
        }
        "readonly" | "hidden" | "monitoring" | "add_content_acl"
            if first.eq_ignore_ascii_case("off") || first.eq_ignore_ascii_case("false") =>
        {
            (Fate::Carried, "the default in Larch too".into())
        }
        "monitoring" => (Fate::Carried, "Larch counts operations for cn=Monitor ([monitor])".into()),
        "serverid" | "syncrepl" | "mirrormode" | "multiprovider" | "multimaster" | "updateref" => {
            (Fate::Dropped, "Larch has no replication yet".into())
        }
        "authz-regexp" | "authz-policy" | "authid-rewriteengine" | "authid-rewritemap" | "authid-rewriterule" => (
            Fate::Dropped,
            "Larch maps no authorization identities; proxied authorization is granted in [access_proxy]".into(),
        ),
        "sasl-host" | "sasl-realm" | "sasl-secprops" | "sasl-auxprops" | "sasl-cbinding" => (
            Fate::Dropped,
            "Larch's SASL is EXTERNAL and PLAIN, configured in [sasl]".into(),
        ),
        _ => (Fate::Dropped, "no equivalent in Larch".into()),
    };
    p.report.push(fate, &d.text, note, Some(&d.origin));
}

fn scheme(p: &mut Plan, name: &'static str) -> (Fate, String) {
    p.password_scheme = Some(name);
    (Fate::Carried, format!("password.default_scheme = \"{name}\""))
}

/// `index ATTRS [KINDS]`.
fn index(d: &Directive, p: &mut Plan) {
    let attrs = d.args.first().map(String::as_str).unwrap_or("");
    let kinds_text = d.args.get(1).map(String::as_str).unwrap_or("eq");
    if attrs.eq_ignore_ascii_case("default") {
        p.report.push(
            Fate::Carried,
            &d.text,
            "the default kinds of the index lines without kinds",
            Some(&d.origin),
        );
        return;
    }
    let mut kinds: Vec<&'static str> = Vec::new();
    let mut notes = Vec::new();
    let mut fate = Fate::Carried;
    for k in kinds_text.split(',').map(str::trim) {
        let mapped = match k.to_ascii_lowercase().as_str() {
            "eq" | "equality" => Some("eq"),
            "pres" | "present" | "presence" => Some("pres"),
            "sub" | "substr" | "substring" | "substrings" => Some("sub"),
            "subinitial" | "subany" | "subfinal" => {
                fate = fate.max(Fate::Changed);
                notes.push(format!("{k} as sub (Larch's substring index serves every part)"));
                Some("sub")
            }
            "approx" => {
                fate = Fate::Dropped;
                notes.push(
                    "approx: Larch has no approximate index (such filters are evaluated unindexed)"
                        .to_string(),
                );
                None
            }
            "nolang" | "nosubtypes" | "notags" => None,
            _ => {
                fate = Fate::Dropped;
                notes.push(format!("{k}: not an index kind"));
                None
            }
        };
        if let Some(m) = mapped {
            if !kinds.contains(&m) {
                kinds.push(m);
            }
        }
    }
    let mut written = Vec::new();
    for attr in attrs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        let Some(t) = p.schema.attribute_type(attr) else {
            fate = Fate::Dropped;
            notes.push(format!("{attr}: not in the schema"));
            continue;
        };
        let usable: Vec<&'static str> = kinds
            .iter()
            .copied()
            .filter(|k| match *k {
                "eq" => t.equality.is_some(),
                "sub" => t.substring.is_some(),
                _ => true,
            })
            .collect();
        if usable.len() < kinds.len() {
            fate = Fate::Dropped;
            notes.push(format!(
                "{attr}: the schema gives it no matching rule for some of {}",
                kinds.join(",")
            ));
        }
        if usable.is_empty() {
            continue;
        }
        match p.indexes.iter_mut().find(|(a, _)| a.eq_ignore_ascii_case(attr)) {
            Some((_, existing)) => {
                for k in usable {
                    if !existing.contains(&k) {
                        existing.push(k);
                    }
                }
            }
            None => p.indexes.push((attr.to_string(), usable.clone())),
        }
        written.push(attr);
    }
    let mut note = if written.is_empty() {
        "nothing indexed".to_string()
    } else {
        format!(
            "[indexes] {} = [{}]",
            written.join(", "),
            kinds
                .iter()
                .map(|k| format!("\"{k}\""))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    if !notes.is_empty() {
        note.push_str(&format!("; {}", notes.join("; ")));
    }
    p.report.push(fate, &d.text, note, Some(&d.origin));
}

/// `sizelimit`/`timelimit` words, or those of a `limits *` line.
fn limit_words(d: &Directive, words: &[String], p: &mut Plan) {
    let mut notes = Vec::new();
    let mut fate = Fate::Carried;
    let time = d.name == "timelimit";
    for w in words {
        let lower = w.to_ascii_lowercase();
        let (key, value) = match lower.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (
                if time {
                    "time".to_string()
                } else {
                    "size".to_string()
                },
                lower.clone(),
            ),
        };
        let number = match value.as_str() {
            "unlimited" | "-1" | "none" => None,
            v => match v.parse::<u64>() {
                Ok(n) => Some(n),
                Err(_) => {
                    fate = Fate::Dropped;
                    notes.push(format!("`{w}` is not a limit"));
                    continue;
                }
            },
        };
        match key.as_str() {
            "size" | "size.soft" | "size.hard" => {
                let n = number.map_or(UNLIMITED, |n| n as usize).max(1);
                if key == "size.hard" && p.limits.size.is_some() {
                    fate = fate.max(Fate::Changed);
                    notes.push(
                        "the hard limit is above the soft one: Larch has one limit, the soft one is kept"
                            .into(),
                    );
                    continue;
                }
                set(&mut p.limits.size, n, "limits.size_limit", &mut fate, &mut notes);
                if number.is_none() {
                    fate = fate.max(Fate::Changed);
                    notes.push(format!("unlimited written as {UNLIMITED}"));
                }
            }
            "time" | "time.soft" | "time.hard" => {
                let n = number
                    .unwrap_or(crate::migrate::plan::UNLIMITED as u64 / 1000)
                    .max(1);
                if key == "time.hard" && p.limits.time.is_some() {
                    fate = fate.max(Fate::Changed);
                    notes.push(
                        "the hard limit is above the soft one: Larch has one limit, the soft one is kept"
                            .into(),
                    );
                    continue;
                }
                set(&mut p.limits.time, n, "limits.time_limit", &mut fate, &mut notes);
                if number.is_none() {
                    fate = fate.max(Fate::Changed);
                    notes.push(format!("unlimited written as {n} s"));
                }
            }
            "size.unchecked" => {
                let n = number.map_or(UNLIMITED, |n| n as usize).max(1);
                set(
                    &mut p.limits.lookthrough,
                    n,
                    "limits.lookthrough_limit",
                    &mut fate,
                    &mut notes,
                );
            }
            _ => {
                fate = Fate::Dropped;
                notes.push(format!("`{w}`: Larch has no such limit"));
            }
        }
    }
    p.report.push(fate, &d.text, notes.join("; "), Some(&d.origin));
}

/// Sets a limit, noting a second, different value.
fn set<T: PartialEq + Copy + std::fmt::Display>(
    slot: &mut Option<T>,
    value: T,
    key: &str,
    fate: &mut Fate,
    notes: &mut Vec<String>,
) {
    match *slot {
        Some(old) if old != value => {
            *fate = (*fate).max(Fate::Changed);
            notes.push(format!(
                "{key} is already {old}: Larch has one limit for every database, the first is kept"
            ));
        }
        Some(_) => notes.push(format!("{key} = {value}")),
        None => {
            *slot = Some(value);
            notes.push(format!("{key} = {value}"));
        }
    }
}

/// `limits <who> <limit>...`: only `*` (everyone) maps.
fn limits_directive(d: &Directive, p: &mut Plan) {
    let who = d.args.first().map(String::as_str).unwrap_or("");
    if who != "*" {
        p.report.push(
            Fate::Dropped,
            &d.text,
            "Larch's limits are the same for every requester (only `limits *` maps)",
            Some(&d.origin),
        );
        return;
    }
    let (mut size, mut time) = (Vec::new(), Vec::new());
    for w in &d.args[1..] {
        if w.to_ascii_lowercase().starts_with("time") {
            time.push(w.clone());
        } else {
            size.push(w.clone());
        }
    }
    if !size.is_empty() {
        let sd = Directive {
            name: "sizelimit".into(),
            ..d.clone()
        };
        limit_words(&sd, &size, p);
    }
    if !time.is_empty() {
        let td = Directive {
            name: "timelimit".into(),
            ..d.clone()
        };
        limit_words(&td, &time, p);
    }
}
