//! The configuration file: defaults, the documented example, and refusals.
//!
//! `docs/configuration.md` is read here: its tables' "Default" column and its default
//! index table must equal `ServerConfig::default()`, and its example file must parse to
//! the values it shows, so the reference cannot drift from the code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use larch_model::schema::{BuiltinSchemas, Schema};
use larch_server::acl::rule::Keyword;
use larch_server::acl::{Privileges, Scope};
use larch_server::config::{
    AccessLogFormat, AccessLogLevel, ClientCertificates, ConfigError, DefaultScheme, ErrorLogFormat,
    ErrorLogLevel, ExternalMap, IpNetwork, ListenUrl, RequireTls, SaslMechanisms, ServerConfig, TlsSettings,
};
use larch_store::index::{IndexConfig, IndexKinds};
use larch_store::wal::SyncPolicy;
use proptest::prelude::*;

fn doc() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fenced blocks of the document whose opening fence is exactly `fence`, in order.
fn blocks(doc: &str, fence: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        match &mut current {
            None if line.trim_end() == fence => current = Some(String::new()),
            Some(text) if line.trim_end() == "```" => {
                out.push(std::mem::take(text));
                current = None;
            }
            Some(text) => {
                text.push_str(line);
                text.push('\n');
            }
            None => {}
        }
    }
    out
}

fn example() -> String {
    let toml = blocks(&doc(), "```toml");
    assert_eq!(
        toml.len(),
        1,
        "the document has exactly one ```toml block, the example file"
    );
    toml[0].clone()
}

/// `section -> [(key, default as written)]` from the reference tables: under each
/// "## `[section]`" heading, the first backticked text of the Default column.
fn documented_defaults(doc: &str) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut section: Option<String> = None;
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            section = h
                .strip_prefix("`[")
                .and_then(|s| s.strip_suffix("]`"))
                .map(str::to_string);
            continue;
        }
        let Some(sec) = &section else { continue };
        let cells: Vec<&str> = line.split(" | ").collect();
        if !line.starts_with("| `") || cells.len() < 4 {
            continue;
        }
        let key = cells[0].trim_start_matches("| ").trim_matches('`').to_string();
        let default = cells[2].split('`').nth(1).unwrap_or("").to_string();
        out.entry(sec.clone()).or_default().push((key, default));
    }
    out
}

#[test]
fn documented_defaults_are_the_defaults() {
    let doc = doc();
    let defaults = documented_defaults(&doc);
    let sections: Vec<&str> = defaults.keys().map(String::as_str).collect();
    assert_eq!(
        sections,
        [
            "[replication]",
            "access_log",
            "audit_log",
            "bind_throttle",
            "cluster",
            "directory",
            "error_log",
            "groups",
            "limits",
            "metrics",
            "monitor",
            "password",
            "password_policy",
            "sasl",
            "schema",
            "security",
            "server",
            "store",
            "sync_provider",
            "tls",
            "uniqueness"
        ]
    );
    let mut text = String::new();
    let mut count = 0;
    for (section, keys) in &defaults {
        // `[tls]` has no defaults: without the table there is no TLS (checked below).
        // `[[replication]]` has required keys: without a table the server is no replica.
        // `[cluster]` too: without it the server stands alone (checked below).
        if section == "tls" || section == "[replication]" || section == "cluster" {
            continue;
        }
        text.push_str(&format!("[{section}]\n"));
        for (key, value) in keys {
            // `cn=admin,<suffix>` is a rule, checked below; the batch window needs batch.
            // No default (`[metrics] listen`: no endpoint) is written as none.
            if value.contains('<') || key == "batch_window_ms" || value.is_empty() {
                continue;
            }
            text.push_str(&format!("{key} = {value}\n"));
            count += 1;
        }
    }
    assert!(count >= 20, "only {count} documented defaults found:\n{text}");
    let from_doc = ServerConfig::from_toml_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(from_doc, ServerConfig::default(), "\n{text}");

    // The default index table as documented.
    let plain = blocks(&doc, "```");
    let table = plain
        .iter()
        .find(|b| b.starts_with("[indexes]"))
        .expect("documented default indexes");
    let c = ServerConfig::from_toml_str(table).unwrap();
    assert_eq!(c.index_config(), IndexConfig::default());

    let d = ServerConfig::default();
    assert_eq!(d.directory.admin_dn, "cn=admin,dc=example,dc=com");
    assert_eq!(d.limits.max_pdu_bytes, larch_proto::limits::DEFAULT_MAX_PDU_BYTES);
    d.validate().unwrap();
    // An empty file is the defaults.
    assert_eq!(ServerConfig::from_toml_str("").unwrap(), d);
    assert_eq!(d.tls, None);
    assert_eq!(d.cluster, None);
    assert_eq!(d.security.require_tls, RequireTls::Remote);
    assert_eq!(
        d.sasl.mechanisms,
        SaslMechanisms {
            external: true,
            plain: true
        }
    );
    assert_eq!(d.sasl.external_map, ExternalMap::Subject);
}

#[test]
fn documented_example_parses_to_its_values() {
    let c = ServerConfig::from_toml_str(&example()).unwrap_or_else(|e| panic!("{e}"));
    let urls: Vec<String> = c.server.listen.iter().map(ListenUrl::to_string).collect();
    assert_eq!(urls, ["ldap://0.0.0.0:389", "ldaps://[::]:636"]);
    assert_eq!(c.server.data_dir, PathBuf::from("/var/lib/larch"));
    assert_eq!(c.server.worker_threads, 8);
    assert_eq!(c.directory.suffix, "dc=corp,dc=example");
    assert_eq!(c.directory.extra_suffixes, ["o=legacy"]);
    assert_eq!(c.directory.admin_dn, "cn=manager,dc=corp,dc=example");
    assert_eq!(c.directory.admin_password_env, "CORP_LDAP_ADMIN_PASSWORD");
    assert!(!c.directory.allow_anonymous_bind);
    assert!(!c.directory.allow_unauthenticated_bind);
    assert_eq!(c.schema.builtin, BuiltinSchemas::Rfc2307bis);
    assert!(c.schema.files.is_empty());
    assert_eq!(
        c.store.sync,
        SyncPolicy::Batch {
            window: Duration::from_millis(5)
        }
    );
    assert_eq!(c.store.snapshot_interval, Some(Duration::from_secs(6 * 3600)));
    assert_eq!(c.store.snapshot_after_records, Some(250_000));
    assert_eq!(c.store.load_threads, 4);
    let eq = IndexKinds::EQUALITY;
    let expected: BTreeMap<String, IndexKinds> = [
        ("objectClass", IndexKinds { presence: true, ..eq }),
        (
            "cn",
            IndexKinds {
                substring: true,
                ..eq
            },
        ),
        (
            "mail",
            IndexKinds {
                substring: true,
                ..eq
            },
        ),
        ("uid", eq),
        ("member", eq),
        (
            "createTimestamp",
            IndexKinds {
                ordering: true,
                ..IndexKinds::default()
            },
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(c.index_config().attributes, expected);
    let l = &c.limits;
    assert_eq!(l.max_pdu_bytes, 4_194_304);
    assert_eq!(l.max_connections, Some(10_000));
    assert_eq!(l.max_connections_per_ip, Some(500));
    assert_eq!(l.max_ops_per_connection, 64);
    assert_eq!(l.idle_timeout, Some(Duration::from_secs(1800)));
    assert_eq!(l.write_timeout, Duration::from_secs(60));
    assert_eq!(l.size_limit, 2000);
    assert_eq!(l.time_limit, Duration::from_secs(600));
    assert_eq!(l.lookthrough_limit, 250_000);
    assert_eq!(
        c.tls,
        Some(TlsSettings {
            certificate: PathBuf::from("tls/server.pem"),
            key: PathBuf::from("tls/server.key"),
            client_ca: Some(PathBuf::from("tls/clients-ca.pem")),
            client_certificates: ClientCertificates::Require,
        })
    );
    assert_eq!(c.security.require_tls, RequireTls::Always);
    assert_eq!(
        c.sasl.mechanisms,
        SaslMechanisms {
            external: true,
            plain: false
        }
    );
    assert_eq!(
        c.sasl.external_map,
        ExternalMap::parse("uid={CN},ou=people,dc=corp,dc=example").unwrap()
    );
    assert_eq!(c.password.default_scheme, DefaultScheme::Pbkdf2Sha512);
    assert!(c.password.allow_cleartext);
    let t = &c.bind_throttle;
    assert!(!t.enabled);
    assert_eq!(t.max_failures, 10);
    assert_eq!(t.max_failures_per_dn, 50);
    assert_eq!(t.max_failures_per_address, 200);
    assert_eq!(t.window, Duration::from_secs(300));
    assert_eq!(t.initial_delay, Duration::from_millis(500));
    assert_eq!(t.max_delay, Duration::from_secs(8));
    assert!(t.exempt_loopback);
    assert_eq!(
        t.exempt,
        [
            IpNetwork::parse("192.0.2.10").unwrap(),
            IpNetwork::parse("2001:db8:1::/48").unwrap()
        ]
    );
    let l = &c.access_log;
    assert!(!l.enabled);
    assert_eq!(l.path.as_deref(), Some(Path::new("/var/log/larch/access")));
    assert_eq!(l.format, AccessLogFormat::Json);
    assert_eq!(l.level, AccessLogLevel::Full);
    assert_eq!(l.max_size, 500 << 20);
    assert_eq!(l.rotate_every, Some(Duration::from_secs(12 * 3600)));
    assert_eq!(l.keep, 30);
    let a = &c.audit_log;
    assert!(a.enabled);
    assert_eq!(a.path.as_deref(), Some(Path::new("/var/log/larch/audit")));
    assert_eq!(a.max_size, 0);
    assert_eq!(a.rotate_every, Some(Duration::from_secs(7 * 24 * 3600)));
    assert_eq!(a.keep, 52);
    let e = &c.error_log;
    assert_eq!(e.path.as_deref(), Some(Path::new("/var/log/larch/error")));
    assert_eq!(e.format, ErrorLogFormat::Json);
    assert_eq!(e.level, ErrorLogLevel::Debug);
    // Access control: three rules and one proxy clause, as written.
    let a = &c.access;
    assert_eq!(a.rules.len(), 3);
    assert_eq!(
        a.rules[0].attrs.as_deref(),
        Some(&["userPassword".to_string()][..])
    );
    assert_eq!(a.rules[0].by.len(), 2);
    assert_eq!(a.rules[0].by[0].who.keyword, Some(Keyword::SelfEntry));
    assert_eq!(a.rules[0].by[0].access, Privileges::parse("=wx").unwrap());
    assert_eq!(a.rules[0].by[1].access, Privileges::parse("auth").unwrap());
    let people = &a.rules[1];
    assert_eq!(people.dn.as_deref(), Some("ou=people,dc=corp,dc=example"));
    assert_eq!(people.scope, Scope::Children);
    assert_eq!(people.filter.as_deref(), Some("(objectClass=inetOrgPerson)"));
    assert_eq!(
        people.attrs.as_deref(),
        Some(&["mail".to_string(), "entry".to_string()][..])
    );
    assert_eq!(
        people.by[1].who.group.as_deref(),
        Some("cn=helpdesk,ou=groups,dc=corp,dc=example")
    );
    assert_eq!(people.by[2].who.dn.as_deref(), Some("ou=apps,dc=corp,dc=example"));
    assert_eq!(people.by[2].who.scope, Scope::Subtree);
    assert_eq!(people.by[2].access, Privileges::parse("read").unwrap());
    assert_eq!(a.rules[2].by[0].who.keyword, Some(Keyword::Users));
    assert_eq!(a.proxy.len(), 1);
    assert_eq!(
        a.proxy[0].dn.as_deref(),
        Some("cn=portal,ou=apps,dc=corp,dc=example")
    );
    assert_eq!(
        a.proxy[0].peer.map(|p| p.to_string()).as_deref(),
        Some("10.0.0.0/8")
    );

    // Every key of the example differs from its default, so each one is really read.
    let d = ServerConfig::default();
    assert_ne!(c.server, d.server);
    assert_ne!(c.directory.allow_anonymous_bind, d.directory.allow_anonymous_bind);
    assert_ne!(c.password, d.password);
    assert_ne!(c.bind_throttle, d.bind_throttle);
    assert_ne!(c.access_log, d.access_log);
    assert_ne!(c.audit_log, d.audit_log);
    assert_ne!(c.error_log.path, d.error_log.path);
    assert_ne!(c.error_log.format, d.error_log.format);
    assert_ne!(c.error_log.level, d.error_log.level);
    assert!(c.groups.sync_member_uid && !d.groups.sync_member_uid);
    assert_eq!(c.uniqueness.attributes, ["uid"]);
    assert!(c.uniqueness.subtrees.is_empty());
    assert_eq!(c.uniqueness.rules.len(), 1);
    assert_eq!(c.uniqueness.rules[0].attributes, ["mail"]);
    assert_eq!(c.uniqueness.rules[0].subtrees, ["ou=people,dc=corp,dc=example"]);

    let schema = Arc::new(c.schema().unwrap());
    let norm = c.normalized_suffixes(&schema).unwrap();
    assert_eq!(
        norm.iter().map(|n| n.as_str()).collect::<Vec<_>>(),
        ["dc=corp,dc=example", "o=legacy"]
    );
    let o = c.to_store_options(schema);
    assert_eq!(o.dir, PathBuf::from("/var/lib/larch"));
    assert_eq!(o.sync, c.store.sync);
    assert_eq!(o.threads, 4);
    assert_eq!(o.snapshot_interval, Some(Duration::from_secs(6 * 3600)));
    assert_eq!(o.snapshot_after_records, Some(250_000));
    assert_eq!(o.indexes, c.index_config());
}

#[test]
fn store_options_of_defaults_match_the_store() {
    let schema = Arc::new(Schema::builtin().unwrap());
    let ours = ServerConfig::default().to_store_options(Arc::clone(&schema));
    let store = larch_store::StoreOptions::new(ours.dir.clone(), schema);
    assert_eq!(ours.sync, store.sync);
    assert_eq!(ours.threads, store.threads);
    assert_eq!(ours.snapshot_interval, store.snapshot_interval);
    assert_eq!(ours.snapshot_after_records, store.snapshot_after_records);
    assert_eq!(ours.indexes, store.indexes);
}

/// Parses `text`, expects a refusal naming `key`, and returns the message.
fn refused(text: &str, key: &str) -> String {
    match ServerConfig::from_toml_str(text) {
        Ok(c) => panic!("accepted:\n{text}\n{c:?}"),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains(key), "`{msg}` does not name `{key}`");
            assert_eq!(e.key(), Some(key), "{msg}");
            msg
        }
    }
}

#[test]
fn unknown_keys_are_refused_with_their_path_and_position() {
    let msg = refused("[limits]\nsize_limit = 5\nsizelimit = 5\n", "limits.sizelimit");
    assert!(msg.starts_with("configuration:3:1: "), "{msg}");
    refused("[server]\nlisten = []\nport = 1\n", "server.port");
    refused("[limit]\nsize_limit = 5\n", "limit");
    refused(
        "[directory]\nsuffix = \"dc=a\"\n\n[store]\nsync = \"always\"\nsnapshots = 1\n",
        "store.snapshots",
    );
    // A value of the wrong type names its key too.
    let msg = refused("[limits]\nsize_limit = \"many\"\n", "limits.size_limit");
    assert!(msg.starts_with("configuration:2:"), "{msg}");
    refused(
        "[server]\nlisten = [\n  \"ldap://a:1\",\n  7,\n]\n",
        "server.listen",
    );
}

#[test]
fn bad_values_are_refused_naming_the_key() {
    for (text, key) in [
        ("[server]\nlisten = [\"http://h:1\"]", "server.listen[0]"),
        (
            "[server]\nlisten = [\"ldap://a:1\", \"ldap://[::1\"]",
            "server.listen[1]",
        ),
        (
            "[server]\nlisten = [\"ldap://a:1\", \"ldap://a:1\"]",
            "server.listen[1]",
        ),
        ("[server]\nlisten = []", "server.listen"),
        ("[server]\nworker_threads = 100000", "server.worker_threads"),
        ("[directory]\nsuffix = \"dc=example,,dc=com\"", "directory.suffix"),
        ("[directory]\nsuffix = \"nosuchattr=x\"", "directory.suffix"),
        ("[directory]\nsuffix = \"\"", "directory.suffix"),
        (
            "[directory]\nextra_suffixes = [\"ou=x,dc=example,dc=com\"]",
            "directory.extra_suffixes[0]",
        ),
        (
            "[directory]\nextra_suffixes = [\"o=a\", \"o=a\"]",
            "directory.extra_suffixes[1]",
        ),
        (
            "[directory]\nadmin_dn = \"cn=admin,dc=other\"",
            "directory.admin_dn",
        ),
        ("[directory]\nadmin_dn = \"cn=admin\"", "directory.admin_dn"),
        ("[directory]\nadmin_dn = \"cn=\\\\zz\"", "directory.admin_dn"),
        (
            "[directory]\nadmin_password_env = \"A-B\"",
            "directory.admin_password_env",
        ),
        (
            "[directory]\nadmin_password_env = \"\"",
            "directory.admin_password_env",
        ),
        ("[schema]\nbuiltin = \"full\"", "schema.builtin"),
        ("[schema]\nfiles = [\"/nonexistent/x.schema\"]", "schema.files"),
        ("[store]\nsync = \"sometimes\"", "store.sync"),
        ("[store]\nbatch_window_ms = 5", "store.batch_window_ms"),
        (
            "[store]\nsync = \"always\"\nbatch_window_ms = 5",
            "store.batch_window_ms",
        ),
        (
            "[store]\nsync = \"batch\"\nbatch_window_ms = 0",
            "store.batch_window_ms",
        ),
        (
            "[store]\nsync = \"batch\"\nbatch_window_ms = 1001",
            "store.batch_window_ms",
        ),
        ("[store]\nsnapshot_interval = \"24\"", "store.snapshot_interval"),
        ("[store]\nsnapshot_interval = \"1y\"", "store.snapshot_interval"),
        ("[store]\nsnapshot_interval = -5", "store.snapshot_interval"),
        ("[indexes]\ncn = [\"eq\", \"fuzzy\"]", "indexes.cn"),
        ("[indexes]\ncn = []", "indexes.cn"),
        ("[indexes]\nnoSuchAttribute = [\"eq\"]", "indexes.noSuchAttribute"),
        ("[indexes]\nobjectClass = [\"ord\"]", "indexes.objectClass"),
        ("[limits]\nmax_pdu_bytes = 0", "limits.max_pdu_bytes"),
        (
            "[limits]\nmax_connections = 10\nmax_connections_per_ip = 11",
            "limits.max_connections_per_ip",
        ),
        (
            "[limits]\nmax_ops_per_connection = 0",
            "limits.max_ops_per_connection",
        ),
        ("[limits]\nsize_limit = 0", "limits.size_limit"),
        ("[limits]\nlookthrough_limit = 0", "limits.lookthrough_limit"),
        ("[limits]\nwrite_timeout = \"0\"", "limits.write_timeout"),
        ("[limits]\ntime_limit = 0", "limits.time_limit"),
        ("[limits]\nidle_timeout = \"15 minutes\"", "limits.idle_timeout"),
        ("[password]\ndefault_scheme = \"md5\"", "password.default_scheme"),
        (
            "[password]\nallow_cleartext = \"yes\"",
            "password.allow_cleartext",
        ),
        ("[password]\nhash = \"ssha\"", "password.hash"),
        ("[bind_throttle]\nmax_failures = 0", "bind_throttle.max_failures"),
        (
            "[bind_throttle]\nmax_failures_per_dn = 1000001",
            "bind_throttle.max_failures_per_dn",
        ),
        ("[bind_throttle]\nwindow = \"0\"", "bind_throttle.window"),
        (
            "[bind_throttle]\ninitial_delay = 0",
            "bind_throttle.initial_delay",
        ),
        (
            "[bind_throttle]\ninitial_delay = \"5s\"\nmax_delay = \"2s\"",
            "bind_throttle.max_delay",
        ),
        ("[bind_throttle]\nmax_delay = \"2m\"", "bind_throttle.max_delay"),
        (
            "[bind_throttle]\nexempt = [\"10.0.0.0/40\"]",
            "bind_throttle.exempt[0]",
        ),
        (
            "[bind_throttle]\nexempt = [\"10.0.0.1\", \"gateway\"]",
            "bind_throttle.exempt[1]",
        ),
        ("[error_log]\nformat = \"389\"", "error_log.format"),
        ("[error_log]\nlevel = \"WARN\"", "error_log.level"),
        ("[error_log]\nlevel = 3", "error_log.level"),
        ("[error_log]\nfile = \"error.log\"", "error_log.file"),
        ("[uniqueness]\nattributes = [\"nosuch\"]", "uniqueness.attributes"),
        ("[uniqueness]\nattributes = [\"audio\"]", "uniqueness.attributes"),
        ("[uniqueness]\nsubtrees = [\"not a dn\"]", "uniqueness.subtrees"),
        ("[uniqueness]\nscope = \"sub\"", "uniqueness.scope"),
        (
            "[[uniqueness.rule]]\nattributes = [\"nosuch\"]",
            "uniqueness.rule[0].attributes",
        ),
        (
            "[[uniqueness.rule]]\nattributes = []",
            "uniqueness.rule[0].attributes",
        ),
    ] {
        refused(text, key);
    }
}

#[test]
fn zero_means_off_where_documented() {
    let c = ServerConfig::from_toml_str(
        "[store]\nsnapshot_interval = \"0\"\nsnapshot_after_records = 0\n[limits]\nidle_timeout = 0\n",
    )
    .unwrap();
    assert_eq!(c.store.snapshot_interval, None);
    assert_eq!(c.store.snapshot_after_records, None);
    assert_eq!(c.limits.idle_timeout, None);
    // 0 connections: the limit follows the open-files limit, no cap per address.
    let c =
        ServerConfig::from_toml_str("[limits]\nmax_connections = 0\nmax_connections_per_ip = 0\n").unwrap();
    assert_eq!(
        (c.limits.max_connections, c.limits.max_connections_per_ip),
        (None, None)
    );
    assert_eq!(c.limits, ServerConfig::default().limits);
    let c = ServerConfig::from_toml_str("[bind_throttle]\nmax_failures_per_dn = 0\n").unwrap();
    assert_eq!(c.bind_throttle.max_failures_per_dn, 0);
    assert_eq!(c.bind_throttle.max_failures_per_address, 0);
    let c = ServerConfig::from_toml_str("[store]\nsync = \"batch\"\n").unwrap();
    assert_eq!(
        c.store.sync,
        SyncPolicy::Batch {
            window: Duration::from_millis(larch_server::config::DEFAULT_BATCH_WINDOW_MS)
        }
    );
    assert_eq!(
        ServerConfig::from_toml_str("[store]\nsync = \"none\"\n")
            .unwrap()
            .store
            .sync,
        SyncPolicy::None
    );
}

#[test]
fn admin_dn_follows_the_suffix_and_normalizes() {
    let c = ServerConfig::from_toml_str("[directory]\nsuffix = \"DC=Corp, DC=Example\"\n").unwrap();
    assert_eq!(c.directory.admin_dn, "cn=admin,DC=Corp, DC=Example");
    let schema = c.schema().unwrap();
    assert_eq!(
        c.normalized_admin_dn(&schema).unwrap().as_str(),
        "cn=admin,dc=corp,dc=example"
    );
    // The admin may be in an extra suffix, or be the suffix itself.
    ServerConfig::from_toml_str("[directory]\nextra_suffixes = [\"o=x\"]\nadmin_dn = \"cn=root,o=x\"\n")
        .unwrap();
    ServerConfig::from_toml_str("[directory]\nadmin_dn = \"DC=EXAMPLE,dc=com\"\n").unwrap();
}

#[test]
fn syntax_errors_give_line_and_column() {
    let e = ServerConfig::from_toml_str("[server]\nworker_threads = 4\ndata_dir = /var\n").unwrap_err();
    assert!(matches!(e, ConfigError::Syntax { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.starts_with("configuration:3:12: TOML syntax error"), "{msg}");
    let e = ServerConfig::from_toml_str("[limits]\nsize_limit = 1\nsize_limit = 2\n").unwrap_err();
    assert!(e.to_string().starts_with("configuration:3:"), "{e}");
}

#[test]
fn files_are_named_and_relative_paths_follow_the_file() {
    let dir = std::env::temp_dir().join(format!("larch-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let missing = dir.join("missing.toml");
    let e = ServerConfig::load(&missing).unwrap_err();
    assert!(matches!(e, ConfigError::Read { .. }));
    assert!(e.to_string().starts_with(&missing.display().to_string()), "{e}");

    std::fs::write(
        dir.join("extra.schema"),
        "attributetype ( 1.3.6.1.4.1.99999.1.1 NAME 'larchTestAttr' EQUALITY caseIgnoreMatch \
         SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\n",
    )
    .unwrap();
    let file = dir.join("larch.toml");
    std::fs::write(
        &file,
        "[server]\ndata_dir = \"data\"\n[schema]\nfiles = [\"extra.schema\"]\n[indexes]\nlarchTestAttr = [\"eq\"]\n",
    )
    .unwrap();
    let c = ServerConfig::load(&file).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.server.data_dir, dir.join("data"));
    assert_eq!(c.schema.files, [dir.join("extra.schema")]);
    assert!(c.schema().unwrap().attribute_type("larchTestAttr").is_some());

    std::fs::write(&file, "[limits]\n\nsize_limit = 0\n").unwrap();
    let msg = ServerConfig::load(&file).unwrap_err().to_string();
    assert!(
        msg.starts_with(&format!("{}:3:1: `limits.size_limit`", file.display())),
        "{msg}"
    );
    std::fs::write(&file, "[limits]\nsize_limit = =\n").unwrap();
    let msg = ServerConfig::load(&file).unwrap_err().to_string();
    assert!(
        msg.starts_with(&format!("{}:2:14: TOML syntax error", file.display())),
        "{msg}"
    );

    // The [tls] files follow the configuration file too.
    std::fs::write(
        &file,
        "[tls]\ncertificate = \"tls/c.pem\"\nkey = \"/abs/k.pem\"\nclient_ca = \"ca.pem\"\n",
    )
    .unwrap();
    let t = ServerConfig::load(&file).unwrap().tls.unwrap();
    assert_eq!(t.certificate, dir.join("tls/c.pem"));
    assert_eq!(t.key, PathBuf::from("/abs/k.pem"));
    assert_eq!(t.client_ca, Some(dir.join("ca.pem")));

    // So do the logs' files; without a path they go below the data directory.
    std::fs::write(
        &file,
        "[server]\ndata_dir = \"data\"\n[audit_log]\nenabled = true\npath = \"logs/changes.ldif\"\n",
    )
    .unwrap();
    let c = ServerConfig::load(&file).unwrap();
    assert_eq!(c.audit_log_path(), dir.join("logs/changes.ldif"));
    assert_eq!(c.access_log_path(), dir.join("data/logs/access"));
    std::fs::write(&file, "[server]\ndata_dir = \"data\"\n").unwrap();
    assert_eq!(
        ServerConfig::load(&file).unwrap().audit_log_path(),
        dir.join("data/logs/audit")
    );
    // So do the logs' files.
    std::fs::write(
        &file,
        "[error_log]\npath = \"logs/error\"\n[access_log]\npath = \"/abs/access\"\n",
    )
    .unwrap();
    let c = ServerConfig::load(&file).unwrap();
    assert_eq!(c.error_log.path, Some(dir.join("logs/error")));
    assert_eq!(c.access_log.path, Some(PathBuf::from("/abs/access")));

    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tls_security_and_sasl_keys() {
    let tls = "[tls]\ncertificate = \"c.pem\"\nkey = \"k.pem\"\n";
    let c = ServerConfig::from_toml_str(&format!(
        "[server]\nlisten = [\"ldaps://127.0.0.1:636\"]\n{tls}[security]\nrequire_tls = \"never\"\n\
         [sasl]\nmechanisms = [\"plain\", \"External\"]\nexternal_map = \"cn={{cn}}+uid={{UID}},dc=x\"\n"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let t = c.tls.unwrap();
    assert_eq!(t.client_certificates, ClientCertificates::None);
    assert_eq!(c.security.require_tls, RequireTls::Never);
    assert_eq!(
        c.sasl.mechanisms,
        SaslMechanisms {
            external: true,
            plain: true
        }
    );
    let c = ServerConfig::from_toml_str("[sasl]\nmechanisms = []\n").unwrap();
    assert_eq!(
        c.sasl.mechanisms,
        SaslMechanisms {
            external: false,
            plain: false
        }
    );

    let msg = refused(
        "[server]\nlisten = [\"ldap://a:1\", \"ldaps://a:2\"]\n",
        "server.listen[1]",
    );
    assert!(msg.contains("needs TLS"), "{msg}");
    for (text, key) in [
        ("[tls]\nkey = \"k.pem\"\n".to_string(), "tls.certificate"),
        ("[tls]\ncertificate = \"c.pem\"\n".to_string(), "tls.key"),
        (
            format!("{tls}client_certificates = \"require\"\n"),
            "tls.client_certificates",
        ),
        (
            format!("{tls}client_ca = \"ca.pem\"\nclient_certificates = \"maybe\"\n"),
            "tls.client_certificates",
        ),
        (format!("{tls}ciphers = \"all\"\n"), "tls.ciphers"),
        (
            "[security]\nrequire_tls = \"sometimes\"\n".to_string(),
            "security.require_tls",
        ),
        (
            "[security]\nrequire_tls = true\n".to_string(),
            "security.require_tls",
        ),
        (
            "[sasl]\nmechanisms = [\"PLAIN\", \"GSSAPI\"]\n".to_string(),
            "sasl.mechanisms[1]",
        ),
        (
            "[sasl]\nexternal_map = \"uid=fixed,dc=x\"\n".to_string(),
            "sasl.external_map",
        ),
        (
            "[sasl]\nexternal_map = \"uid={nosuch},dc=x\"\n".to_string(),
            "sasl.external_map",
        ),
        (
            "[sasl]\nexternal_map = \"uid={CN},,dc=x\"\n".to_string(),
            "sasl.external_map",
        ),
        (
            "[sasl]\nexternal_map = \"{CN}\"\n".to_string(),
            "sasl.external_map",
        ),
    ] {
        refused(&text, key);
    }
}

proptest! {
    /// Any in-range limit written in the file comes back as written; zero is refused.
    #[test]
    fn limits_round_trip(size in 0u64..1_000_000, ops in 0u64..10_000, secs in 0i64..1_000_000) {
        let text = format!("[limits]\nsize_limit = {size}\nmax_ops_per_connection = {ops}\ntime_limit = {secs}\n");
        match ServerConfig::from_toml_str(&text) {
            Ok(c) => {
                prop_assert!(size > 0 && ops > 0 && secs > 0);
                prop_assert_eq!(c.limits.size_limit as u64, size);
                prop_assert_eq!(c.limits.max_ops_per_connection as u64, ops);
                prop_assert_eq!(c.limits.time_limit, Duration::from_secs(secs as u64));
            }
            Err(e) => {
                prop_assert!(size == 0 || ops == 0 || secs == 0, "{}", e);
            }
        }
    }

    /// Durations written with units parse to their sum, in seconds or as a string.
    #[test]
    fn durations_in_the_file(h in 0u64..1000, m in 0u64..60, s in 0u64..60) {
        let text = format!("[limits]\nwrite_timeout = \"{h}h{m}m{s}s\"\n");
        let total = h * 3600 + m * 60 + s;
        match ServerConfig::from_toml_str(&text) {
            Ok(c) => prop_assert_eq!(c.limits.write_timeout, Duration::from_secs(total)),
            Err(e) => prop_assert!(total == 0, "{}", e),
        }
    }

    /// Arbitrary text never panics the reader.
    #[test]
    fn arbitrary_text_is_answered(text in "\\PC{0,200}") {
        let _ = ServerConfig::from_toml_str(&text);
    }
}

#[test]
fn a_suffix_within_cn_monitor_is_refused() {
    for text in [
        "[directory]\nsuffix = \"cn=Monitor\"\nadmin_dn = \"cn=admin,cn=Monitor\"\n",
        "[directory]\nextra_suffixes = [\"ou=x,CN=monitor\"]\n",
    ] {
        let e = ServerConfig::from_toml_str(text).unwrap_err().to_string();
        assert!(e.contains("cn=Monitor"), "{e}");
    }
    // A suffix that only ends like it is fine.
    ServerConfig::from_toml_str("[directory]\nextra_suffixes = [\"cn=notMonitor\"]\n").unwrap();
}

/// A `[[replication]]` table with only its required keys, and `extra` lines.
fn replica(extra: &str) -> String {
    format!(
        "[[replication]]\nrid = 1\nprovider = \"ldap://provider.example:389\"\nbind_dn = \"cn=replicator,dc=example,dc=com\"\n\
         credentials = \"secret\"\nbase = \"dc=example,dc=com\"\n{extra}"
    )
}

#[test]
fn replication_tables_take_the_documented_defaults() {
    use larch_server::config::{Credentials, ReplicationMode, ReplicationScope, RetrySchedule};
    let c = ServerConfig::from_toml_str(&replica("")).unwrap();
    let r = &c.replication[0];
    assert_eq!((r.rid, r.provider_url.port, r.starttls), (1, 389, false));
    assert_eq!(r.credentials, Credentials::Inline("secret".into()));
    assert_eq!(r.filter, "(objectClass=*)");
    assert_eq!(r.attributes, ["*", "+", "transitiveMemberOf"]);
    assert_eq!(
        (r.scope, r.mode),
        (ReplicationScope::Sub, ReplicationMode::RefreshAndPersist)
    );
    assert_eq!(r.interval, Duration::from_secs(60));
    assert_eq!(r.retry, RetrySchedule::parse("5s 12, 60s +").unwrap());
    assert_eq!(r.referral, "ldap://provider.example:389");
    // The documented defaults are these.
    let doc = doc();
    for (key, default) in [
        ("filter", "\"(objectClass=*)\""),
        ("attributes", "[\"*\", \"+\", \"transitiveMemberOf\"]"),
        ("scope", "\"sub\""),
        ("mode", "\"refreshAndPersist\""),
        ("interval", "\"60s\""),
        ("retry", "\"5s 12, 60s +\""),
        ("starttls", "false"),
        ("start_from", "\"refresh\""),
        ("writes", "\"referral\""),
    ] {
        assert!(doc.contains(&format!("| `{key}` | ")), "{key} undocumented");
        let with = ServerConfig::from_toml_str(&replica(&format!("{key} = {default}\n"))).unwrap();
        assert_eq!(with, c, "{key} = {default}");
    }
    // A replica indexes entryUUID for equality; other servers keep the default indexes.
    assert!(c.index_config().attributes["entryUUID"].equality);
    assert!(!ServerConfig::default()
        .index_config()
        .attributes
        .contains_key("entryUUID"));
    let full = replica(
        "mode = \"refreshOnly\"\ninterval = \"5m\"\nscope = \"one\"\nretry = \"1s 3\"\nreferral = \"ldap://rw.example\"\n",
    );
    let c = ServerConfig::from_toml_str(&full).unwrap();
    assert_eq!(c.replication[0].mode, ReplicationMode::RefreshOnly);
    assert_eq!(c.replication[0].retry.wait(3), None);
    let chained = ServerConfig::from_toml_str(&replica("writes = \"chain\"\n")).unwrap();
    assert_eq!(
        chained.replication[0].writes,
        larch_server::config::ReplicaWrites::Chain
    );
}

#[test]
fn replication_tables_are_refused_naming_the_key() {
    for (text, key) in [
        (replica("").replace("rid = 1\n", ""), "replication[0].rid"),
        (replica("").replace("rid = 1", "rid = 1000"), "replication[0].rid"),
        (
            replica("").replace("ldap://provider.example:389", "http://x"),
            "replication[0].provider",
        ),
        (
            replica("").replace("credentials = \"secret\"\n", ""),
            "replication[0].credentials",
        ),
        (
            replica("credentials_file = \"pw\"\n"),
            "replication[0].credentials_file",
        ),
        (
            replica("").replace("base = \"dc=example,dc=com\"", "base = \"not a dn\""),
            "replication[0].base",
        ),
        (
            replica("").replace("base = \"dc=example,dc=com\"", "base = \"dc=other\""),
            "replication[0].base",
        ),
        (replica("filter = \"(cn=\"\n"), "replication[0].filter"),
        (replica("scope = \"children\"\n"), "replication[0].scope"),
        (replica("mode = \"persist\"\n"), "replication[0].mode"),
        (replica("writes = \"forward\"\n"), "replication[0].writes"),
        (replica("interval = \"0\"\n"), "replication[0].interval"),
        (replica("retry = \"5s\"\n"), "replication[0].retry"),
        (replica("starttls = true\n"), "replication[0].ca_file"),
        (replica("ca_file = \"ca.pem\"\n"), "replication[0].ca_file"),
        (
            replica("starttls = true\nca_file = \"ca.pem\"\nclient_cert = \"c.pem\"\n"),
            "replication[0].client_key",
        ),
        (replica("unknown = 1\n"), "replication[0].unknown"),
        (format!("{}\n{}", replica(""), replica("")), "replication[1].rid"),
        (
            format!(
                "{}\n{}",
                replica(""),
                replica("").replace("rid = 1", "rid = 2").replace(
                    "base = \"dc=example,dc=com\"",
                    "base = \"ou=x,dc=example,dc=com\""
                )
            ),
            "replication[1].base",
        ),
    ] {
        refused(&text, key);
    }
}

#[test]
fn uniqueness_rules_are_read_and_their_errors_located() {
    let text = "[uniqueness]\nattributes = [\"uid\"]\n\n[[uniqueness.rule]]\nattributes = [\"mail\"]\nsubtrees = [\"ou=people,dc=example,dc=com\"]\n\n[[uniqueness.rule]]\nattributes = [\"employeeNumber\", \"cn\"]\n";
    let c = ServerConfig::from_toml_str(text).unwrap();
    assert_eq!(c.uniqueness.attributes, ["uid"]);
    assert_eq!(c.uniqueness.rules.len(), 2);
    assert_eq!(c.uniqueness.rules[0].attributes, ["mail"]);
    assert_eq!(c.uniqueness.rules[0].subtrees, ["ou=people,dc=example,dc=com"]);
    assert_eq!(c.uniqueness.rules[1].attributes, ["employeeNumber", "cn"]);
    assert!(c.uniqueness.rules[1].subtrees.is_empty());
    let schema = c.schema().unwrap();
    assert_eq!(c.uniqueness.rules(&schema).unwrap().len(), 3);
    // Without the rule tables, the keys mean what they always did.
    let c =
        ServerConfig::from_toml_str("[uniqueness]\nsubtrees = [\"ou=people,dc=example,dc=com\"]\n").unwrap();
    assert_eq!(c.uniqueness.attributes, ["uid"]);
    assert!(c.uniqueness.rules.is_empty());

    // An unknown key of a rule, by its path and position.
    let msg = refused(
        "[uniqueness]\nattributes = [\"uid\"]\n\n[[uniqueness.rule]]\nattributes = [\"mail\"]\n\n[[uniqueness.rule]]\nattributes = [\"cn\"]\nbase = \"dc=x\"\n",
        "uniqueness.rule[1].base",
    );
    assert!(msg.starts_with("configuration:9:"), "{msg}");
    // A rule without attributes.
    let msg = refused(
        "[[uniqueness.rule]]\nsubtrees = [\"dc=x\"]\n",
        "uniqueness.rule[0]",
    );
    assert!(msg.contains("attributes"), "{msg}");
    // A value the schema refuses: the rule's own key, at its line.
    let msg = refused(
        "[[uniqueness.rule]]\nattributes = [\"mail\"]\n\n[[uniqueness.rule]]\nattributes = [\"audio\"]\n",
        "uniqueness.rule[1].attributes",
    );
    assert!(msg.starts_with("configuration:5:"), "{msg}");
    assert!(msg.contains("no equality rule"), "{msg}");
    let msg = refused(
        "[[uniqueness.rule]]\nattributes = [\"mail\"]\nsubtrees = [\"not a dn\"]\n",
        "uniqueness.rule[0].subtrees",
    );
    assert!(msg.starts_with("configuration:3:"), "{msg}");
}
