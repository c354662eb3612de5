//! The server's configuration: `larch.toml`, its embedded defaults, and their validation.
//!
//! `larch serve` with no arguments runs on [`ServerConfig::default`]; `larch serve --config
//! larch.toml` reads a file in which every key is optional (a missing key keeps its
//! default) and every table is closed (a misspelled key is an error, never ignored). The
//! reference for operators, with every key, type and default, is `docs/configuration.md`;
//! the tests parse its example file, so the two cannot drift apart.
//!
//! Reading a configuration, in steps:
//! 1. the text is parsed as TOML; a syntax error reports the line and column;
//! 2. it is read into closed tables of optional keys; an unknown key or a value of the
//!    wrong type reports the key path (`limits.sizelimit`), line and column;
//! 3. values are converted: listen URLs, durations, sync policy, index kinds; relative
//!    paths (`server.data_dir`, `schema.files`, the `[tls]` files, the logs' `path`) are
//!    taken from the configuration file's directory (from the current directory for text
//!    and for the defaults);
//! 4. [`ServerConfig::validate`] loads the schema (built-in files, then `schema.files`),
//!    normalizes the suffixes and the admin DN through it, resolves the indexes against
//!    it, compiles the access rules against it (`access`), and checks every limit's bounds.
//!
//! The steps find every error they can, not only the first ([`ServerConfig::check_with`],
//! for `larch check-config`; `larch serve` reads through it and stops at the first): which
//! errors are found together, and which wait for another to be mended, is said in `read`.
//!
//! Invariant: a [`ServerConfig`] returned by [`ServerConfig::from_toml_str`] or
//! [`ServerConfig::load`] has passed [`ServerConfig::validate`]; [`ServerConfig::default`]
//! passes it too (a test checks). The fields are public so that tools and tests can build
//! a configuration in code; such a configuration should be validated before use.

pub mod access;
mod bind_throttle;
pub mod cluster;
mod duration;
mod error;
mod error_log;
mod groups;
mod listen;
mod logs;
mod monitor;
mod password;
mod password_policy;
mod raw;
mod read;
pub mod replication;
mod sasl;
mod security;
mod sync_provider;
mod tls;
mod uniqueness;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use larch_model::dn::NormDn;
use larch_model::schema::{BuiltinSchemas, Schema};
use larch_store::index::{IndexConfig, IndexConfigError, IndexKinds, ResolvedIndexes};
use larch_store::wal::SyncPolicy;
use larch_store::StoreOptions;

pub use access::AccessConfig;
pub use bind_throttle::{
    BindThrottleSettings, IpNetwork, DEFAULT_BIND_FAILURE_WINDOW, DEFAULT_BIND_INITIAL_DELAY,
    DEFAULT_BIND_MAX_DELAY, DEFAULT_BIND_MAX_FAILURES, DEFAULT_BIND_MAX_FAILURES_PER_ADDRESS,
    DEFAULT_BIND_MAX_FAILURES_PER_DN, MAX_BIND_DELAY, MAX_EXEMPT_NETWORKS,
};
pub use duration::{format_duration, parse_duration, MAX_DURATION_SECS};
pub use error::{ConfigError, Origin, Position};
pub use error_log::{ErrorLogFormat, ErrorLogLevel, ErrorLogSettings};
pub use groups::GroupSettings;
pub use listen::ListenUrl;
pub use logs::{
    AccessLogFormat, AccessLogLevel, AccessLogSettings, AuditLogSettings, DEFAULT_ACCESS_LOG_FILE,
    DEFAULT_ACCESS_LOG_KEEP, DEFAULT_ACCESS_LOG_MAX_SIZE_MB, DEFAULT_ACCESS_LOG_ROTATE_EVERY,
    DEFAULT_AUDIT_LOG_FILE, DEFAULT_AUDIT_LOG_KEEP, DEFAULT_AUDIT_LOG_MAX_SIZE_MB,
    DEFAULT_AUDIT_LOG_ROTATE_EVERY,
};
pub use monitor::{MetricsSettings, MonitorSettings};
pub use password::{DefaultScheme, PasswordSettings};
pub use password_policy::{PasswordPolicySettings, MAX_GRACE_LOGINS, MAX_IN_HISTORY, MAX_POLICY_FAILURES};
pub use replication::{
    Credentials, ReplicaWrites, ReplicationMode, ReplicationScope, ReplicationSettings, RetrySchedule,
    RetryStep, StartFrom,
};
pub use sasl::{ExternalMap, MapSegment, SaslMechanisms, SaslSettings};
pub use security::{RequireTls, SecuritySettings};
pub use sync_provider::{SyncProviderSettings, DEFAULT_SESSION_LOG, MAX_SESSION_LOG};
pub use tls::{ClientCertificates, TlsSettings};
pub use uniqueness::{UniqueRuleSettings, UniquenessSettings, MAX_UNIQUE_LIST};

use raw::{RawConfig, RawDuration};

/// Default listen address: loopback only, so that a server started without a
/// configuration is not reachable from the network before its operator decides; port 3389
/// needs no privilege (389 does).
pub const DEFAULT_LISTEN: &str = "ldap://127.0.0.1:3389";

/// Default data directory. It is relative: taken from the current directory when the
/// server runs without a configuration file, from the file's directory when it has one
/// (see [`ServerConfig::load`]).
pub const DEFAULT_DATA_DIR: &str = "./larch-data";

/// Default naming context: the placeholder suffix of RFC 2606 examples and of most LDAP
/// documentation.
pub const DEFAULT_SUFFIX: &str = "dc=example,dc=com";

/// RDN of the default admin DN, which is this RDN under the suffix.
pub const DEFAULT_ADMIN_RDN: &str = "cn=admin";

/// Environment variable that holds the admin password (the file never holds it).
pub const DEFAULT_ADMIN_PASSWORD_ENV: &str = "LARCH_ADMIN_PASSWORD";

/// Default `store.batch_window_ms` when `sync = "batch"` sets none: one fsync per 10 ms
/// bounds the loss on a crash to 10 ms of acknowledged writes while sharing each fsync
/// among every write of the window.
pub const DEFAULT_BATCH_WINDOW_MS: u64 = 10;

/// Longest `store.batch_window_ms`: beyond a second of acknowledged-but-unsynced writes,
/// `sync = "none"` says more honestly what the operator gets.
pub const MAX_BATCH_WINDOW_MS: u64 = 1000;

/// Default `store.snapshot_interval`: daily, as [`StoreOptions::new`].
pub const DEFAULT_SNAPSHOT_INTERVAL: Duration = Duration::from_secs(24 * 3600);

/// Most threads `server.worker_threads` and `store.load_threads` accept: far above any
/// machine's core count, so a larger number is a typo.
pub const MAX_THREADS: usize = 1024;

/// Most listen URLs: each is a socket; more than this is a mistake, not a deployment.
pub const MAX_LISTEN_URLS: usize = 64;

/// Most naming contexts (`suffix` plus `extra_suffixes`).
pub const MAX_SUFFIXES: usize = 64;

/// Largest configuration file read: a real one is a few kilobytes.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Default `limits.max_pdu_bytes`: the codec's default ([`larch_proto::limits`]), 8 MiB,
/// twice OpenLDAP's `sockbuf_max_incoming_auth` so large photos and certificates fit.
pub const DEFAULT_MAX_PDU_BYTES: usize = larch_proto::limits::DEFAULT_MAX_PDU_BYTES;

/// Smallest `limits.max_pdu_bytes`: below 1 KiB an ordinary bind or search with a few
/// controls no longer fits.
pub const MIN_MAX_PDU_BYTES: usize = 1024;

/// Largest `limits.max_pdu_bytes`: a PDU is buffered whole before it is decoded, so one
/// client may make the server hold this much per connection.
pub const MAX_MAX_PDU_BYTES: usize = 1024 * 1024 * 1024;

/// Default `limits.max_connections`: `None`, the limit follows the process's
/// file-descriptor limit (`net::limits::connection_limit`: the soft limit, which
/// `larch serve` raises to the hard one, less a reserve for the store, the logs, the
/// listeners and TLS files), as slapd and 389 DS size their connection tables. A number
/// set by hand holds instead.
pub const DEFAULT_MAX_CONNECTIONS: Option<usize> = None;

/// Default `limits.max_connections_per_ip`: `None`, no cap per address. Behind a NAT, a
/// load balancer or a connection-pooling proxy every client has one address; slapd and
/// 389 DS have no such cap either. The option stays for servers whose clients each have
/// their own address.
pub const DEFAULT_MAX_CONNECTIONS_PER_IP: Option<usize> = None;

/// Default `limits.max_ops_per_connection`: operations in flight on one connection.
/// Pipelining clients rarely keep more than a few dozen outstanding; beyond this the server
/// stops reading the socket until answers go out, bounding one connection's memory.
pub const DEFAULT_MAX_OPS_PER_CONNECTION: usize = 256;

/// Default `limits.idle_timeout`: a connection with no operation for 15 minutes is closed
/// (OpenLDAP's `idletimeout` is off by default; leaked pool connections then pile up).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Default `limits.write_timeout`: a client that reads none of its answers for 30 s is
/// disconnected, so a stalled reader cannot pin a search's results in memory.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Default `limits.size_limit`: entries one search returns, as OpenLDAP's default
/// `sizelimit` (500); larger results need paging or a higher limit set on purpose.
pub const DEFAULT_SIZE_LIMIT: usize = 500;

/// Default `limits.time_limit`: seconds one search may run, as OpenLDAP's default
/// `timelimit` (3600).
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(3600);

/// Default `limits.lookthrough_limit`: entries an unindexed search may examine before it
/// ends with adminLimitExceeded (11). 100,000 entries take tens of milliseconds; a
/// directory of millions should index what its clients filter on.
pub const DEFAULT_LOOKTHROUGH_LIMIT: usize = 100_000;

/// The whole configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// `[server]`: sockets, data directory, threads.
    pub server: ServerSettings,
    /// `[directory]`: naming contexts and the administrator.
    pub directory: DirectorySettings,
    /// `[schema]`: which schema files to load.
    pub schema: SchemaSettings,
    /// `[store]`: durability and snapshots.
    pub store: StoreSettings,
    /// `[indexes]`: attribute -> index kinds.
    pub indexes: IndexConfig,
    /// `[limits]`: protections against heavy or hostile clients.
    pub limits: Limits,
    /// `[tls]`: certificate and key (`None`: no TLS).
    pub tls: Option<TlsSettings>,
    /// `[security]`: the confidentiality policy.
    pub security: SecuritySettings,
    /// `[sasl]`: SASL mechanisms and the EXTERNAL mapping.
    pub sasl: SaslSettings,
    /// `[password]`: how userPassword values are hashed and which stored forms verify.
    pub password: PasswordSettings,
    /// `[bind_throttle]`: failed binds from one address slow down its later binds.
    pub bind_throttle: BindThrottleSettings,
    /// `[[access]]` and `[access_proxy]`: access control (no rules: the default policy).
    pub access: AccessConfig,
    /// `[access_log]`: the access log.
    pub access_log: AccessLogSettings,
    /// `[audit_log]`: the audit log (every committed change as LDIF).
    pub audit_log: AuditLogSettings,
    /// `[error_log]`: the server's own messages.
    pub error_log: ErrorLogSettings,
    /// `[monitor]`: the counters and `cn=Monitor`.
    pub monitor: MonitorSettings,
    /// `[groups]`: memberOf, referential integrity and memberUid.
    pub groups: GroupSettings,
    /// `[sync_provider]`: the content synchronization provider (RFC 4533).
    pub sync_provider: SyncProviderSettings,
    /// `[uniqueness]`: the attributes no two entries of one subtree may share a value of.
    pub uniqueness: UniquenessSettings,
    /// `[password_policy]`: the default password policy.
    pub password_policy: PasswordPolicySettings,
    /// `[metrics]`: the Prometheus endpoint.
    pub metrics: MetricsSettings,
    /// `[[replication]]`: the providers this server follows as a read replica.
    pub replication: Vec<ReplicationSettings>,
    /// `[cluster]`: this server as a node of a cluster (`None`: it stands alone).
    pub cluster: Option<cluster::ClusterSettings>,
}

impl ServerConfig {
    /// The access log's file: `access_log.path`, or [`DEFAULT_ACCESS_LOG_FILE`] below the
    /// data directory.
    pub fn access_log_path(&self) -> PathBuf {
        match &self.access_log.path {
            Some(p) => p.clone(),
            None => self.server.data_dir.join(DEFAULT_ACCESS_LOG_FILE),
        }
    }

    /// The audit log's file: `audit_log.path`, or [`DEFAULT_AUDIT_LOG_FILE`] below the
    /// data directory.
    pub fn audit_log_path(&self) -> PathBuf {
        match &self.audit_log.path {
            Some(p) => p.clone(),
            None => self.server.data_dir.join(DEFAULT_AUDIT_LOG_FILE),
        }
    }
}

/// `[server]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSettings {
    /// Addresses to listen on (at least one).
    pub listen: Vec<ListenUrl>,
    /// The store's data directory.
    pub data_dir: PathBuf,
    /// Threads serving connections (0: one per core).
    pub worker_threads: usize,
}

/// `[directory]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectorySettings {
    /// The main naming context.
    pub suffix: String,
    /// Further naming contexts, none within another.
    pub extra_suffixes: Vec<String>,
    /// The administrator's DN, at or below one of the suffixes.
    pub admin_dn: String,
    /// Environment variable holding the administrator's password.
    pub admin_password_env: String,
    /// Whether anonymous binds (empty DN, empty password) are accepted.
    pub allow_anonymous_bind: bool,
    /// Whether unauthenticated binds (a DN with an empty password, RFC 4513 section 5.1.2)
    /// are accepted as anonymous; when false they get unwillingToPerform (53).
    pub allow_unauthenticated_bind: bool,
}

/// `[schema]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaSettings {
    /// The shipped files loaded first.
    pub builtin: BuiltinSchemas,
    /// The operator's files, loaded after the shipped ones, in order.
    pub files: Vec<PathBuf>,
}

/// `[store]`.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreSettings {
    /// When a write is acknowledged.
    pub sync: SyncPolicy,
    /// Snapshot this often (`None`: only at close and on demand).
    pub snapshot_interval: Option<Duration>,
    /// Also snapshot after this many log records (`None`: never).
    pub snapshot_after_records: Option<u64>,
    /// Threads loading a snapshot at startup (0: one per core).
    pub load_threads: usize,
}

/// `[limits]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest LDAPMessage accepted, in bytes.
    pub max_pdu_bytes: usize,
    /// Most open connections (`None`: as many as the file-descriptor limit allows).
    pub max_connections: Option<usize>,
    /// Most open connections from one IP address (`None`: no cap per address).
    pub max_connections_per_ip: Option<usize>,
    /// Most operations in flight on one connection.
    pub max_ops_per_connection: usize,
    /// Close a connection idle this long (`None`: never).
    pub idle_timeout: Option<Duration>,
    /// Close a connection whose client reads nothing for this long.
    pub write_timeout: Duration,
    /// Most entries one search returns (sizeLimitExceeded, 4, beyond).
    pub size_limit: usize,
    /// Longest one search may run (timeLimitExceeded, 3, beyond).
    pub time_limit: Duration,
    /// Most entries an unindexed search examines (adminLimitExceeded, 11, beyond).
    pub lookthrough_limit: usize,
}

impl Default for ServerConfig {
    /// The embedded defaults `larch serve` runs on without a configuration file.
    fn default() -> Self {
        let listen = ListenUrl {
            tls: false,
            host: "127.0.0.1".to_string(),
            port: 3389,
        };
        ServerConfig {
            server: ServerSettings {
                listen: vec![listen],
                data_dir: PathBuf::from(DEFAULT_DATA_DIR),
                worker_threads: 0,
            },
            directory: DirectorySettings {
                suffix: DEFAULT_SUFFIX.to_string(),
                extra_suffixes: Vec::new(),
                admin_dn: format!("{DEFAULT_ADMIN_RDN},{DEFAULT_SUFFIX}"),
                admin_password_env: DEFAULT_ADMIN_PASSWORD_ENV.to_string(),
                allow_anonymous_bind: true,
                allow_unauthenticated_bind: false,
            },
            schema: SchemaSettings {
                builtin: BuiltinSchemas::Standard,
                files: Vec::new(),
            },
            store: StoreSettings {
                sync: SyncPolicy::Always,
                snapshot_interval: Some(DEFAULT_SNAPSHOT_INTERVAL),
                snapshot_after_records: Some(larch_store::DEFAULT_SNAPSHOT_AFTER_RECORDS),
                load_threads: 0,
            },
            indexes: IndexConfig::default(),
            limits: Limits {
                max_pdu_bytes: DEFAULT_MAX_PDU_BYTES,
                max_connections: DEFAULT_MAX_CONNECTIONS,
                max_connections_per_ip: DEFAULT_MAX_CONNECTIONS_PER_IP,
                max_ops_per_connection: DEFAULT_MAX_OPS_PER_CONNECTION,
                idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
                write_timeout: DEFAULT_WRITE_TIMEOUT,
                size_limit: DEFAULT_SIZE_LIMIT,
                time_limit: DEFAULT_TIME_LIMIT,
                lookthrough_limit: DEFAULT_LOOKTHROUGH_LIMIT,
            },
            tls: None,
            security: SecuritySettings::default(),
            sasl: SaslSettings::default(),
            password: PasswordSettings::default(),
            bind_throttle: BindThrottleSettings::default(),
            access: AccessConfig::default(),
            access_log: AccessLogSettings::default(),
            audit_log: AuditLogSettings::default(),
            error_log: ErrorLogSettings::default(),
            monitor: MonitorSettings::default(),
            metrics: MetricsSettings::default(),
            replication: Vec::new(),
            cluster: None,
            groups: GroupSettings::default(),
            sync_provider: SyncProviderSettings::default(),
            uniqueness: UniquenessSettings::default(),
            password_policy: PasswordPolicySettings::default(),
        }
    }
}

impl ServerConfig {
    /// Reads a configuration from TOML text; relative paths are taken from the current
    /// directory. Errors say `configuration` where a file's errors give its path.
    pub fn from_toml_str(text: &str) -> Result<ServerConfig, ConfigError> {
        Self::parse(text, None, |_| {}).map_err(|e| e.with_origin(&Origin::Text))
    }

    /// Reads a configuration file; relative paths in it (`server.data_dir`, `schema.files`)
    /// are taken from the file's directory, so the file means the same wherever the server
    /// is started from. Every error names the file.
    pub fn load(path: impl AsRef<Path>) -> Result<ServerConfig, ConfigError> {
        Self::load_with(path, |_| {})
    }

    /// [`ServerConfig::load`], with `adjust` applied to the configuration before it is
    /// validated (`larch serve --demo-tls` turns TLS on there, so that the file's
    /// `ldaps://` listeners are accepted).
    pub fn load_with(
        path: impl AsRef<Path>,
        adjust: impl FnOnce(&mut ServerConfig),
    ) -> Result<ServerConfig, ConfigError> {
        Self::check_with(path, adjust).map_err(first)
    }

    /// [`ServerConfig::load_with`] reporting every error it finds rather than the first
    /// (`larch check-config`; `larch serve` reads its file through this same function).
    /// Which errors can be found together is said in [`read`]. The list is never empty.
    pub fn check_with(
        path: impl AsRef<Path>,
        adjust: impl FnOnce(&mut ServerConfig),
    ) -> Result<ServerConfig, Vec<ConfigError>> {
        let path = path.as_ref();
        let read_err = |source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(|e| vec![read_err(e)])?;
        let mut text = String::new();
        file.take(MAX_CONFIG_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|e| vec![read_err(e)])?;
        if text.len() as u64 > MAX_CONFIG_BYTES {
            return Err(vec![read_err(std::io::Error::other(format!(
                "larger than {MAX_CONFIG_BYTES} bytes, not a configuration file"
            )))]);
        }
        let base = path.parent().unwrap_or(Path::new(""));
        let origin = Origin::File(path.to_path_buf());
        read::read(&text, Some(base), adjust)
            .map_err(|errors| errors.into_iter().map(|e| e.with_origin(&origin)).collect())
    }

    fn parse(
        text: &str,
        base: Option<&Path>,
        adjust: impl FnOnce(&mut ServerConfig),
    ) -> Result<ServerConfig, ConfigError> {
        read::read(text, base, adjust).map_err(first)
    }

    /// Relative paths of the file taken from `base`, the file's directory.
    fn resolve_paths(&mut self, base: &Path) {
        self.server.data_dir = base.join(&self.server.data_dir);
        for f in &mut self.schema.files {
            *f = base.join(&*f);
        }
        if let Some(t) = &mut self.tls {
            t.resolve_paths(base);
        }
        if let Some(p) = &mut self.access_log.path {
            *p = base.join(&*p);
        }
        if let Some(p) = &mut self.audit_log.path {
            *p = base.join(&*p);
        }
        if let Some(p) = &mut self.error_log.path {
            *p = base.join(&*p);
        }
        for r in &mut self.replication {
            r.resolve_paths(base);
        }
        if let Some(c) = &mut self.cluster {
            c.resolve_paths(base);
        }
    }

    /// The configuration of `raw`'s values over the defaults, and every error found on the
    /// way: each section is converted on its own, so an error in one does not hide an error
    /// in another. Within a section the first error ends it, half converted: the checks of
    /// [`ServerConfig::validate_skipping`] then skip that section.
    fn from_raw(raw: RawConfig) -> (ServerConfig, Vec<ConfigError>) {
        let mut c = ServerConfig::default();
        let mut errors = Vec::new();
        step(&mut errors, || {
            if let Some(s) = raw.server {
                if let Some(list) = s.listen {
                    c.server.listen = Vec::with_capacity(list.len().min(MAX_LISTEN_URLS));
                    for (i, u) in list.iter().enumerate() {
                        let url = ListenUrl::parse(u)
                            .map_err(|m| ConfigError::invalid(format!("server.listen[{i}]"), m))?;
                        c.server.listen.push(url);
                    }
                }
                if let Some(d) = s.data_dir {
                    c.server.data_dir = PathBuf::from(d);
                }
                if let Some(n) = s.worker_threads {
                    c.server.worker_threads = to_usize("server.worker_threads", n)?;
                }
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(d) = raw.directory {
                let suffix_given = d.suffix.is_some();
                if let Some(s) = d.suffix {
                    c.directory.suffix = s;
                }
                if let Some(x) = d.extra_suffixes {
                    c.directory.extra_suffixes = x;
                }
                match d.admin_dn {
                    Some(a) => c.directory.admin_dn = a,
                    None if suffix_given => {
                        c.directory.admin_dn = format!("{DEFAULT_ADMIN_RDN},{}", c.directory.suffix);
                    }
                    None => {}
                }
                if let Some(e) = d.admin_password_env {
                    c.directory.admin_password_env = e;
                }
                if let Some(b) = d.allow_anonymous_bind {
                    c.directory.allow_anonymous_bind = b;
                }
                if let Some(b) = d.allow_unauthenticated_bind {
                    c.directory.allow_unauthenticated_bind = b;
                }
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(s) = raw.schema {
                if let Some(b) = s.builtin {
                    c.schema.builtin = match b.as_str() {
                        "standard" => BuiltinSchemas::Standard,
                        "rfc2307bis" => BuiltinSchemas::Rfc2307bis,
                        "system" => BuiltinSchemas::SystemOnly,
                        other => {
                            return Err(ConfigError::invalid(
                                "schema.builtin",
                                format!("`{other}`: expected \"standard\", \"rfc2307bis\" or \"system\""),
                            ))
                        }
                    };
                }
                if let Some(f) = s.files {
                    c.schema.files = f.into_iter().map(PathBuf::from).collect();
                }
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(s) = raw.store {
                c.store.sync = match (s.sync.as_deref(), s.batch_window_ms) {
                    (None | Some("always"), None) => SyncPolicy::Always,
                    (Some("none"), None) => SyncPolicy::None,
                    (Some("batch"), w) => {
                        let ms = w.unwrap_or(DEFAULT_BATCH_WINDOW_MS);
                        if !(1..=MAX_BATCH_WINDOW_MS).contains(&ms) {
                            return Err(ConfigError::invalid(
                                "store.batch_window_ms",
                                format!("{ms} is outside 1 to {MAX_BATCH_WINDOW_MS} milliseconds"),
                            ));
                        }
                        SyncPolicy::Batch {
                            window: Duration::from_millis(ms),
                        }
                    }
                    (None | Some("always" | "none"), Some(_)) => {
                        return Err(ConfigError::invalid(
                            "store.batch_window_ms",
                            "only meaningful with sync = \"batch\"",
                        ))
                    }
                    (Some(other), _) => {
                        return Err(ConfigError::invalid(
                            "store.sync",
                            format!("`{other}`: expected \"always\", \"batch\" or \"none\""),
                        ))
                    }
                };
                if let Some(d) = s.snapshot_interval {
                    let d = duration("store.snapshot_interval", &d)?;
                    c.store.snapshot_interval = (!d.is_zero()).then_some(d);
                }
                if let Some(n) = s.snapshot_after_records {
                    c.store.snapshot_after_records = (n != 0).then_some(n);
                }
                if let Some(n) = s.load_threads {
                    c.store.load_threads = to_usize("store.load_threads", n)?;
                }
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(table) = raw.indexes {
                c.indexes = index_config(&table)?;
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(l) = raw.limits {
                let lim = &mut c.limits;
                set_usize(&mut lim.max_pdu_bytes, "limits.max_pdu_bytes", l.max_pdu_bytes)?;
                set_optional_usize(
                    &mut lim.max_connections,
                    "limits.max_connections",
                    l.max_connections,
                )?;
                set_optional_usize(
                    &mut lim.max_connections_per_ip,
                    "limits.max_connections_per_ip",
                    l.max_connections_per_ip,
                )?;
                set_usize(
                    &mut lim.max_ops_per_connection,
                    "limits.max_ops_per_connection",
                    l.max_ops_per_connection,
                )?;
                set_usize(&mut lim.size_limit, "limits.size_limit", l.size_limit)?;
                set_usize(
                    &mut lim.lookthrough_limit,
                    "limits.lookthrough_limit",
                    l.lookthrough_limit,
                )?;
                if let Some(d) = l.idle_timeout {
                    let d = duration("limits.idle_timeout", &d)?;
                    lim.idle_timeout = (!d.is_zero()).then_some(d);
                }
                if let Some(d) = l.write_timeout {
                    lim.write_timeout = duration("limits.write_timeout", &d)?;
                }
                if let Some(d) = l.time_limit {
                    lim.time_limit = duration("limits.time_limit", &d)?;
                }
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(t) = raw.tls {
                c.tls = Some(TlsSettings::from_raw(t)?);
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(s) = raw.security {
                c.security.apply(s)?;
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(s) = raw.sasl {
                c.sasl.apply(s)?;
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(p) = raw.password {
                c.password = PasswordSettings::from_raw(p)?;
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(t) = raw.bind_throttle {
                c.bind_throttle = BindThrottleSettings::from_raw(t)?;
            }
            Ok(())
        });
        step(&mut errors, || {
            c.access = access::parse(raw.access, raw.access_proxy)?;
            Ok(())
        });
        step(&mut errors, || {
            if let Some(l) = raw.access_log {
                c.access_log = AccessLogSettings::from_raw(l)?;
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(l) = raw.audit_log {
                c.audit_log = AuditLogSettings::from_raw(l)?;
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(l) = raw.error_log {
                c.error_log = ErrorLogSettings::from_raw(l)?;
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(m) = raw.monitor {
                c.monitor = MonitorSettings::from_raw(m);
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(m) = raw.metrics {
                c.metrics = MetricsSettings::from_raw(m)?;
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(g) = raw.groups {
                c.groups = GroupSettings::from_raw(g)?;
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(p) = raw.sync_provider {
                c.sync_provider = SyncProviderSettings::from_raw(p)?;
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(u) = raw.uniqueness {
                c.uniqueness = UniquenessSettings::from_raw(u)?;
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(p) = raw.password_policy {
                c.password_policy = PasswordPolicySettings::from_raw(p)?;
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(r) = raw.replication {
                c.replication = ReplicationSettings::list_from_raw(r)?;
            }
            Ok(())
        });
        step(&mut errors, || {
            if let Some(k) = raw.cluster {
                c.cluster = Some(cluster::ClusterSettings::from_raw(k)?);
            }
            Ok(())
        });
        (c, errors)
    }

    /// Checks everything a configuration built in code may get wrong: loads the schema,
    /// normalizes the suffixes and the admin DN through it, resolves the indexes, and
    /// checks every bound. [`ServerConfig::from_toml_str`] and [`ServerConfig::load`] run
    /// it before returning.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self.validate_skipping(&BTreeSet::new()).into_iter().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Every error [`ServerConfig::validate`] can find, not only the first. Independent
    /// checks all run; a check that reads a section named in `skip` (a section whose
    /// conversion failed, half done) does not, nor does one that needs what an earlier
    /// check refused: without a schema that loads, the suffixes, the admin DN, the indexes
    /// and the access rules are not checked; with a refused suffix, the admin DN is not.
    pub fn validate_skipping(&self, skip: &BTreeSet<String>) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        let reads = |sections: &[&str]| sections.iter().all(|s| !skip.contains(*s));
        fn check(errors: &mut Vec<ConfigError>, ok: bool, r: Result<(), ConfigError>) {
            if let (true, Err(e)) = (ok, r) {
                errors.push(e);
            }
        }
        check(&mut errors, reads(&["server"]), self.validate_listeners());
        check(
            &mut errors,
            reads(&["server", "tls"]),
            tls::check_listeners(&self.server.listen, self.tls.as_ref()),
        );
        check(&mut errors, reads(&["server"]), self.validate_server());
        check(&mut errors, reads(&["store"]), self.validate_store());
        check(&mut errors, reads(&["limits"]), self.validate_limits());
        check(
            &mut errors,
            reads(&["bind_throttle"]),
            self.bind_throttle.validate(),
        );
        check(&mut errors, reads(&["access_log"]), self.access_log.validate());
        check(&mut errors, reads(&["audit_log"]), self.audit_log.validate());
        check(&mut errors, reads(&["directory"]), self.validate_password_env());
        check(
            &mut errors,
            reads(&["cluster", "tls", "replication"]),
            self.validate_cluster(),
        );
        if !reads(&["schema"]) {
            return errors;
        }
        let schema = match self.schema() {
            Ok(s) => s,
            Err(e) => {
                errors.push(e);
                return errors;
            }
        };
        if reads(&["directory"]) {
            match self.normalized_suffixes(&schema) {
                Ok(suffixes) => {
                    check(&mut errors, true, self.normalized_admin_dn(&schema).map(|_| ()));
                    check(
                        &mut errors,
                        reads(&["replication"]),
                        replication::validate(&self.replication, &schema, &suffixes),
                    );
                }
                Err(e) => errors.push(e),
            }
        }
        check(
            &mut errors,
            reads(&["indexes"]),
            ResolvedIndexes::resolve(&self.indexes, &schema)
                .map(|_| ())
                .map_err(|e| {
                    let attr = match &e {
                        IndexConfigError::UnknownAttribute(a) => a,
                        IndexConfigError::NoRule { attribute, .. } => attribute,
                    };
                    ConfigError::invalid(format!("indexes.{attr}"), e.to_string())
                }),
        );
        check(
            &mut errors,
            reads(&["access", "access_proxy"]),
            crate::acl::AccessRules::compile(&self.access, &schema).map(|_| ()),
        );
        check(
            &mut errors,
            reads(&["uniqueness"]),
            self.uniqueness.validate(&schema),
        );
        errors
    }

    /// A cluster over TLS needs `[tls]` with `client_ca` (the peers' certificates); a
    /// cluster node is not also a read replica of another provider.
    fn validate_cluster(&self) -> Result<(), ConfigError> {
        let Some(cluster) = &self.cluster else {
            return Ok(());
        };
        if cluster.tls && self.tls.as_ref().is_none_or(|t| t.client_ca.is_none()) {
            return Err(ConfigError::invalid(
                "cluster.tls",
                "the Raft transport over TLS needs [tls] certificate, key and client_ca (the CA of the peers' \
                 certificates)",
            ));
        }
        if !self.replication.is_empty() {
            return Err(ConfigError::invalid(
                "cluster",
                "a cluster node cannot also be a read replica ([[replication]]): its writes go through the \
                 cluster's leader",
            ));
        }
        Ok(())
    }

    fn validate_listeners(&self) -> Result<(), ConfigError> {
        let s = &self.server;
        if s.listen.is_empty() {
            return Err(ConfigError::invalid("server.listen", "list at least one address"));
        }
        if s.listen.len() > MAX_LISTEN_URLS {
            return Err(ConfigError::invalid(
                "server.listen",
                format!("at most {MAX_LISTEN_URLS} addresses"),
            ));
        }
        for (i, u) in s.listen.iter().enumerate() {
            if u.port == 0 {
                return Err(ConfigError::invalid(
                    format!("server.listen[{i}]"),
                    "port 0 is not a fixed port",
                ));
            }
            if s.listen[..i].contains(u) {
                return Err(ConfigError::invalid(
                    format!("server.listen[{i}]"),
                    format!("`{u}` is listed twice"),
                ));
            }
        }
        Ok(())
    }

    fn validate_server(&self) -> Result<(), ConfigError> {
        if self.server.data_dir.as_os_str().is_empty() {
            return Err(ConfigError::invalid("server.data_dir", "must not be empty"));
        }
        check_max("server.worker_threads", self.server.worker_threads, MAX_THREADS)
    }

    fn validate_store(&self) -> Result<(), ConfigError> {
        check_max("store.load_threads", self.store.load_threads, MAX_THREADS)?;
        if let SyncPolicy::Batch { window } = self.store.sync {
            let ms = window.as_millis();
            if !(1..=u128::from(MAX_BATCH_WINDOW_MS)).contains(&ms) {
                return Err(ConfigError::invalid(
                    "store.batch_window_ms",
                    format!("{ms} is outside 1 to {MAX_BATCH_WINDOW_MS} milliseconds"),
                ));
            }
        }
        if self.store.snapshot_interval.is_some_and(|d| d.is_zero()) {
            return Err(ConfigError::invalid(
                "store.snapshot_interval",
                "write \"0\" as no interval (None)",
            ));
        }
        Ok(())
    }

    fn validate_password_env(&self) -> Result<(), ConfigError> {
        let env = &self.directory.admin_password_env;
        let env_ok = env
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && env.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !env_ok {
            return Err(ConfigError::invalid(
                "directory.admin_password_env",
                format!("`{env}` is not an environment variable name (letters, digits, `_`)"),
            ));
        }
        Ok(())
    }

    fn validate_limits(&self) -> Result<(), ConfigError> {
        let l = &self.limits;
        if !(MIN_MAX_PDU_BYTES..=MAX_MAX_PDU_BYTES).contains(&l.max_pdu_bytes) {
            return Err(ConfigError::invalid(
                "limits.max_pdu_bytes",
                format!(
                    "{} is outside {MIN_MAX_PDU_BYTES} to {MAX_MAX_PDU_BYTES} bytes",
                    l.max_pdu_bytes
                ),
            ));
        }
        for (key, v) in [
            ("limits.max_connections", l.max_connections.unwrap_or(1)),
            (
                "limits.max_connections_per_ip",
                l.max_connections_per_ip.unwrap_or(1),
            ),
            ("limits.max_ops_per_connection", l.max_ops_per_connection),
            ("limits.size_limit", l.size_limit),
            ("limits.lookthrough_limit", l.lookthrough_limit),
        ] {
            if v == 0 {
                return Err(ConfigError::invalid(
                    key,
                    "must be at least 1 (0 would refuse all work)",
                ));
            }
        }
        if let (Some(per_ip), Some(total)) = (l.max_connections_per_ip, l.max_connections) {
            if per_ip > total {
                return Err(ConfigError::invalid(
                    "limits.max_connections_per_ip",
                    format!("{per_ip} is above limits.max_connections ({total})"),
                ));
            }
        }
        for (key, d) in [
            ("limits.write_timeout", l.write_timeout),
            ("limits.time_limit", l.time_limit),
        ] {
            if d.is_zero() {
                return Err(ConfigError::invalid(
                    key,
                    "must not be 0 (it would end every operation at once)",
                ));
            }
        }
        if l.idle_timeout.is_some_and(|d| d.is_zero()) {
            return Err(ConfigError::invalid(
                "limits.idle_timeout",
                "write \"0\" as no timeout (None)",
            ));
        }
        Ok(())
    }

    /// Loads the schema: the built-in files chosen by `schema.builtin`, then
    /// `schema.files` in order.
    pub fn schema(&self) -> Result<Schema, ConfigError> {
        Schema::load_with(self.schema.builtin, &self.schema.files).map_err(|source| ConfigError::Schema {
            origin: Origin::Text,
            source: Box::new(source),
        })
    }

    /// Every naming context, the main suffix first.
    pub fn suffixes(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.directory.suffix.as_str())
            .chain(self.directory.extra_suffixes.iter().map(String::as_str))
    }

    /// The naming contexts normalized through `schema`, the main suffix first; refused when
    /// one is the root DSE, does not parse, lies within another, or within `cn=Monitor`.
    pub fn normalized_suffixes(&self, schema: &Schema) -> Result<Vec<NormDn>, ConfigError> {
        let count = 1 + self.directory.extra_suffixes.len();
        if count > MAX_SUFFIXES {
            return Err(ConfigError::invalid(
                "directory.extra_suffixes",
                format!("at most {MAX_SUFFIXES} naming contexts"),
            ));
        }
        let mut out: Vec<NormDn> = Vec::with_capacity(count);
        for (i, s) in self.suffixes().enumerate() {
            let key = if i == 0 {
                "directory.suffix".to_string()
            } else {
                format!("directory.extra_suffixes[{}]", i - 1)
            };
            let dn = normalize(&key, s, schema)?;
            if dn.is_root() {
                return Err(ConfigError::invalid(
                    key,
                    "a suffix cannot be the root DSE (empty DN)",
                ));
            }
            if crate::acl::rule::in_monitor(&dn) {
                return Err(ConfigError::invalid(
                    key,
                    format!("`{s}` is within cn=Monitor, the subtree the server builds for monitoring"),
                ));
            }
            if let Some(other) = out.iter().find(|o| dn.is_within(o) || o.is_within(&dn)) {
                return Err(ConfigError::invalid(
                    key,
                    format!("`{s}` overlaps the naming context `{other}`: one would hide the other"),
                ));
            }
            out.push(dn);
        }
        Ok(out)
    }

    /// The admin DN normalized through `schema`; refused unless it is at or below one of
    /// the suffixes (its entry, which holds the hashed password, lives in the directory).
    pub fn normalized_admin_dn(&self, schema: &Schema) -> Result<NormDn, ConfigError> {
        let key = "directory.admin_dn";
        let dn = normalize(key, &self.directory.admin_dn, schema)?;
        let suffixes = self.normalized_suffixes(schema)?;
        if !suffixes.iter().any(|s| dn.is_within(s)) {
            return Err(ConfigError::invalid(
                key,
                format!(
                    "`{}` is not within a naming context ({}): the admin entry, which holds the hashed \
                     password, must be stored under one",
                    self.directory.admin_dn,
                    self.suffixes().collect::<Vec<_>>().join("; ")
                ),
            ));
        }
        Ok(dn)
    }

    /// The index configuration (`[indexes]`, or the store's defaults).
    pub fn index_config(&self) -> IndexConfig {
        let mut indexes = self.indexes.clone();
        // A replica finds the local entry of each change by its entryUUID
        // (`crate::syncrepl::apply`): an equality index makes that one lookup.
        if !self.replication.is_empty() {
            indexes
                .attributes
                .entry("entryUUID".to_string())
                .or_default()
                .equality = true;
        }
        indexes
    }

    /// The store's options: data directory, indexes, sync policy, snapshot schedule, load
    /// threads; the rest (storage, segment size, duty cycle) keep [`StoreOptions::new`]'s
    /// defaults.
    pub fn to_store_options(&self, schema: Arc<Schema>) -> StoreOptions {
        let mut o = StoreOptions::new(self.server.data_dir.clone(), schema);
        o.indexes = self.index_config();
        o.sync = self.store.sync;
        o.threads = self.store.load_threads;
        o.snapshot_interval = self.store.snapshot_interval;
        o.snapshot_after_records = self.store.snapshot_after_records;
        o.replicated = self.cluster.is_some();
        o
    }
}

fn normalize(key: &str, dn: &str, schema: &Schema) -> Result<NormDn, ConfigError> {
    NormDn::parse(dn.as_bytes(), schema)
        .map(|(_, n)| n)
        .map_err(|e| ConfigError::invalid(key, format!("`{dn}` is not a valid DN: {}", e.reason)))
}

/// The first of a list of errors (the lists of [`read`] are never empty).
fn first(errors: Vec<ConfigError>) -> ConfigError {
    errors
        .into_iter()
        .next()
        .unwrap_or_else(|| ConfigError::invalid("", "refused without a reason"))
}

/// Runs one section's conversion, keeping its error.
fn step(errors: &mut Vec<ConfigError>, f: impl FnOnce() -> Result<(), ConfigError>) {
    if let Err(e) = f() {
        errors.push(e);
    }
}

fn to_usize(key: &str, n: u64) -> Result<usize, ConfigError> {
    usize::try_from(n).map_err(|_| ConfigError::invalid(key, format!("{n} is too large")))
}

/// Sets a limit where 0 means none (`None`).
fn set_optional_usize(field: &mut Option<usize>, key: &str, v: Option<u64>) -> Result<(), ConfigError> {
    if let Some(n) = v {
        *field = (n != 0).then(|| to_usize(key, n)).transpose()?;
    }
    Ok(())
}

fn set_usize(field: &mut usize, key: &str, v: Option<u64>) -> Result<(), ConfigError> {
    if let Some(n) = v {
        *field = to_usize(key, n)?;
    }
    Ok(())
}

fn check_max(key: &str, v: usize, max: usize) -> Result<(), ConfigError> {
    if v > max {
        return Err(ConfigError::invalid(key, format!("{v} is above {max}")));
    }
    Ok(())
}

fn duration(key: &str, raw: &RawDuration) -> Result<Duration, ConfigError> {
    match raw {
        RawDuration::Secs(s) => duration::duration_from_secs(*s),
        RawDuration::Text(t) => parse_duration(t),
    }
    .map_err(|m| ConfigError::invalid(key, m))
}

/// Index kind names accepted in `[indexes]`, short and long.
fn index_kind(name: &str) -> Option<fn(&mut IndexKinds)> {
    Some(match name {
        "eq" | "equality" => |k| k.equality = true,
        "pres" | "presence" => |k| k.presence = true,
        "sub" | "substring" | "substrings" => |k| k.substring = true,
        "ord" | "ordering" => |k| k.ordering = true,
        _ => return None,
    })
}

fn index_config(table: &BTreeMap<String, Vec<String>>) -> Result<IndexConfig, ConfigError> {
    let mut attributes = BTreeMap::new();
    for (attr, kinds) in table {
        let key = format!("indexes.{attr}");
        if kinds.is_empty() {
            return Err(ConfigError::invalid(
                key,
                "list at least one kind (remove the line to index nothing)",
            ));
        }
        let mut k = IndexKinds::default();
        for name in kinds {
            let set = index_kind(name).ok_or_else(|| {
                ConfigError::invalid(
                    &key,
                    format!("`{name}` is not an index kind: expected eq, pres, sub or ord (or equality, presence, substring, ordering)"),
                )
            })?;
            set(&mut k);
        }
        attributes.insert(attr.clone(), k);
    }
    Ok(IndexConfig { attributes })
}

/// The key path of the line holding byte `offset`: the last `[table]` header before it
/// and the key of the nearest `key = ` line at or above it (a value of a multi-line array
/// belongs to the key that opened it). Used for serde's errors, which carry a span but no
/// key path.
fn key_at(text: &str, offset: usize) -> String {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line_end = text[before.len()..]
        .find('\n')
        .map_or(text.len(), |i| before.len() + i);
    let mut key: Option<&str> = None;
    let lines: Vec<&str> = text[..line_end].lines().collect();
    for (n, line) in lines.iter().enumerate().rev() {
        let t = line.trim();
        if let Some(header) = t.strip_prefix("[[") {
            // An array of tables: `name[i]`, i counting the same headers before this one.
            let name = header.split(']').next().unwrap_or("").trim().trim_matches('"');
            let i = lines[..n]
                .iter()
                .filter(|l| {
                    l.trim()
                        .strip_prefix("[[")
                        .is_some_and(|h| h.split(']').next().unwrap_or("").trim().trim_matches('"') == name)
                })
                .count();
            return match key {
                Some(k) => format!("{name}[{i}].{k}"),
                None => format!("{name}[{i}]"),
            };
        }
        if let Some(header) = t.strip_prefix('[') {
            let name = header.split(']').next().unwrap_or("").trim().trim_matches('"');
            return match key {
                Some(k) => format!("{name}.{k}"),
                None => name.to_string(),
            };
        }
        if key.is_none() && !t.starts_with('#') {
            if let Some((k, _)) = t.split_once('=') {
                key = Some(k.trim().trim_matches('"'));
            }
        }
    }
    key.unwrap_or("").to_string()
}
