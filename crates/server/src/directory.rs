//! [`Directory`]: what every operation shares — the configuration, the schema, the store,
//! the CSN generator, the compiled access rules — and the first-start set-up of a data
//! directory.
//!
//! Opening, in steps:
//! 1. load the schema and normalize the suffixes and the admin DN through it;
//! 2. with `[tls]`, read and check the certificate and key (before the store, which may
//!    take long to load, so a bad certificate is reported at once);
//! 3. open the store (newest snapshot, then the log tail);
//! 4. create each configured suffix entry that does not exist, with the object classes its
//!    RDN type implies (`dc` -> dcObject + organization, `o` -> organization, `ou` ->
//!    organizationalUnit, `c` -> country, `l` -> locality); another RDN type is refused
//!    with a message saying to import the suffix entry;
//! 5. create the admin entry if it does not exist (organizationalRole +
//!    simpleSecurityObject) with a userPassword hashed in `[password] default_scheme`
//!    ([`password::hash_new`]): the value of the environment
//!    variable `directory.admin_password_env`, or a generated password returned in
//!    [`Startup::generated_admin_password`] for the caller to print once; when the entry
//!    exists and the variable is set to a password that does not verify, the stored hash
//!    is replaced (the operator's way to reset it).
//!
//! Every entry made here goes through the same schema check and operational attributes
//! as a client's Add, with the empty DN (the server itself) as creatorsName.
//!
//! Then, with `[audit_log]` enabled, the audit log starts: it writes the changes committed
//! from then on, so the entries made here are not in it (a fresh server that replays the
//! log makes its own).

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use larch_model::dn::{Dn, NormDn};
use larch_model::entry::check::check_entry;
use larch_model::entry::{Entry, Options};
use larch_model::schema::{AttributeTypeId, Schema};
use larch_store::storage::{FsStorage, Storage};
use larch_store::{OpenReport, Store, StoreError, StoreReader, WriteHalt};

use crate::accesslog::AccessLog;
use crate::acl::AccessRules;
use crate::auditlog::AuditLog;
use crate::bind_throttle::BindThrottle;
use crate::config::{ConfigError, ServerConfig};
use crate::error::OpError;
use crate::hooks::WriteHooks;
use crate::lookup::{IndexedClass, ALIAS_CLASS, REFERRAL_CLASS};
use crate::monitor::Monitor;
use crate::opattrs::csn::CsnGenerator;
use crate::opattrs::{on_add, on_modify, OpAttrsError, OpStamp, OperationalTypes};
use crate::outcome::Observers;
use crate::output_budget::OutputBudget;
use crate::password;
use crate::ppolicy::PasswordPolicy;
use crate::store_health;
use crate::syncprov::SyncProvider;
use crate::syncrepl::Replication;
use crate::tls::{TlsError, TlsState};
use crate::workers::{threads_for, Workers};

/// The server ID in CSNs (`sid`) of the tools that stamp entries without a configuration
/// (`sync_provider.server_id` names the server's own; its default is this one).
pub const SERVER_ID: u32 = 0;

/// Why a directory could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    /// The configuration does not hold together.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store failed to open or to write a set-up entry.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The schema lacks what the server needs.
    #[error(transparent)]
    OpAttrs(#[from] OpAttrsError),
    /// The TLS certificate, key or client CA cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The access log cannot be opened.
    #[error("cannot open the access log {path}: {source}")]
    AccessLog {
        /// Its file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The audit log cannot be opened.
    #[error("cannot open the audit log {path}: {source}")]
    AuditLog {
        /// Its file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A set-up entry could not be built.
    #[error("cannot create `{dn}`: {reason}")]
    Setup {
        /// The entry.
        dn: String,
        /// Why.
        reason: String,
    },
}

/// What opening found and did, for the caller to report.
#[derive(Debug, Default)]
pub struct Startup {
    /// The store's report (snapshot loaded, log records replayed, a cut tail).
    pub report: OpenReport,
    /// DNs of the entries created (suffixes, admin).
    pub created: Vec<String>,
    /// A password generated for the admin on first start: print it once, it is stored
    /// only hashed.
    pub generated_admin_password: Option<String>,
    /// True when the admin password was reset from the environment.
    pub admin_password_reset: bool,
}

/// The shared state of a running server.
#[derive(Debug)]
pub struct Directory {
    /// The validated configuration.
    pub config: ServerConfig,
    /// The schema.
    pub schema: Arc<Schema>,
    /// The store.
    pub store: Store,
    /// The IDs of the operational attribute types.
    pub optypes: OperationalTypes,
    /// CSNs for entryCSN.
    pub csn: Arc<CsnGenerator>,
    /// The naming contexts, normalized, the main suffix first.
    pub suffixes: Vec<NormDn>,
    /// The normalized admin DN.
    pub admin_dn: NormDn,
    /// The userPassword type.
    pub user_password: AttributeTypeId,
    /// The TLS configuration (`None` without `[tls]`), reloadable.
    pub tls: Option<Arc<TlsState>>,
    /// Failed password checks per (address, DN), per DN and per address (`[bind_throttle]`).
    pub bind_throttle: BindThrottle,
    /// The compiled access rules (the default policy when the configuration has none).
    pub acl: Arc<AccessRules>,
    /// The `referral` class (RFC 3296) with its index keys; `None` when the schema lacks it.
    pub referral_class: Option<IndexedClass>,
    /// The `alias` class (RFC 4512) with its index keys; `None` when the schema lacks it.
    pub alias_class: Option<IndexedClass>,
    /// Who is told how every operation ended and what happened to every connection (the
    /// access log; see [`crate::outcome`]).
    pub observers: Observers,
    /// The access log, when `[access_log]` is enabled (also among the observers).
    pub access_log: Option<Arc<AccessLog>>,
    /// The counters and open connections behind `cn=Monitor` and `/metrics`, when
    /// `monitor.enabled` (also among the observers).
    pub monitor: Option<Arc<Monitor>>,
    /// The write hooks, in order (see [`crate::hooks`]).
    pub hooks: WriteHooks,
    /// The password policy (`[password_policy]`; `None` when off), see [`crate::ppolicy`].
    pub password_policy: Option<Arc<PasswordPolicy>>,
    /// The audit log, when `[audit_log]` is enabled.
    pub audit_log: Option<Arc<AuditLog>>,
    /// The content synchronization provider (RFC 4533), unless `sync_provider.enabled`
    /// is false ([`crate::syncprov`]).
    pub sync_provider: Option<Arc<SyncProvider>>,
    /// The threads large searches run on ([`crate::workers`]): one per core, or
    /// `server.worker_threads`.
    pub search_workers: Workers,
    /// The server-wide count of response octets waiting for clients
    /// ([`crate::output_budget`]).
    pub output_budget: Arc<OutputBudget>,
    /// When the directory was opened (the start time monitoring reports, also with
    /// `monitor.enabled = false`).
    pub started: SystemTime,
    /// The same moment on the monotonic clock (uptime).
    pub started_at: Instant,
    /// The `[[replication]]` consumers (none: not a replica), see [`crate::syncrepl`].
    pub replication: Replication,
    /// This server's cluster node, once it runs (`[cluster]`, see [`crate::cluster`]).
    pub cluster: std::sync::OnceLock<std::sync::Arc<larch_cluster::ClusterNode>>,
    /// A cluster node's forwarding of client writes to the leader, once the node runs,
    /// when `cluster.writes` forwards (see [`crate::forwarding`]).
    pub cluster_forwarding: std::sync::OnceLock<crate::forwarding::Forwarding>,
}

impl Directory {
    /// Opens the store of `config` and sets up a new data directory (see the module
    /// documentation).
    pub fn open(config: ServerConfig) -> Result<(Directory, Startup), DirectoryError> {
        Directory::open_on(config, Arc::new(FsStorage))
    }

    /// [`Directory::open`] with the store's files on `storage` (a test's misbehaving disk).
    /// The store's health events go to the error log ([`store_health`]).
    pub fn open_on(
        config: ServerConfig,
        storage: Arc<dyn Storage>,
    ) -> Result<(Directory, Startup), DirectoryError> {
        let (started, started_at) = (SystemTime::now(), Instant::now());
        let schema = Arc::new(config.schema()?);
        let suffixes = config.normalized_suffixes(&schema)?;
        let admin_dn = config.normalized_admin_dn(&schema)?;
        let replication = Replication::configured(&config, &schema, &suffixes)?;
        let optypes = OperationalTypes::new(&schema)?;
        let user_password = schema
            .attribute_type("userPassword")
            .map(|t| t.id)
            .ok_or_else(|| setup_error("", "the schema does not define userPassword"))?;
        let tls = config.tls.as_ref().map(TlsState::load).transpose()?.map(Arc::new);
        let acl = Arc::new(AccessRules::compile(&config.access, &schema)?);
        let password_policy = PasswordPolicy::configured(&config.password_policy, &schema).map(Arc::new);
        let hooks = WriteHooks::configured(&config, &schema)?
            .with_password_policy(password_policy.clone(), &config.password);
        let access_log = start_access_log(&config)?;
        let mut observers = Observers::default();
        if let Some(log) = &access_log {
            observers.add(log.clone());
        }
        let monitor = config.monitor.enabled.then(|| Arc::new(Monitor::new()));
        if let Some(m) = &monitor {
            observers.add(m.clone());
        }
        let mut store_options = config.to_store_options(schema.clone());
        store_options.storage = storage;
        store_options.events = Some(store_health::error_log_sink());
        let (store, report) = Store::open(store_options)?;
        let csn = Arc::new(
            CsnGenerator::new(u32::from(config.sync_provider.server_id)).map_err(|e| setup_error("", e))?,
        );
        let bind_throttle = BindThrottle::new(config.bind_throttle.clone());
        let current = store.current();
        let referral_class = IndexedClass::named(&current, REFERRAL_CLASS);
        let alias_class = IndexedClass::named(&current, ALIAS_CLASS);
        drop(current);
        let search_workers = match Workers::new("larch-search", threads_for(config.server.worker_threads)) {
            Ok(w) => w,
            Err(e) => {
                let _ = store.close(false);
                return Err(setup_error("", format!("cannot start the search threads: {e}")));
            }
        };
        let mut dir = Directory {
            config,
            schema,
            store,
            optypes,
            csn,
            suffixes,
            admin_dn,
            user_password,
            tls,
            bind_throttle,
            acl,
            referral_class,
            alias_class,
            observers,
            access_log,
            monitor,
            hooks,
            password_policy,
            audit_log: None,
            sync_provider: None,
            search_workers,
            output_budget: Arc::new(OutputBudget::default()),
            started,
            started_at,
            replication,
            cluster: std::sync::OnceLock::new(),
            cluster_forwarding: std::sync::OnceLock::new(),
        };
        let mut startup = Startup {
            report,
            ..Startup::default()
        };
        // A cluster node writes through the cluster's leader, which it does not have
        // yet: the cluster sets up the directory once it runs (`crate::cluster`).
        let set_up = match dir.config.cluster {
            None => dir.set_up(&mut startup),
            Some(_) => Ok(()),
        };
        let started = set_up
            .and_then(|()| start_audit_log(&dir.config, &dir.store, &dir.schema))
            .and_then(|audit_log| Ok((audit_log, start_sync_provider(&dir)?)));
        match started {
            Ok((audit_log, sync_provider)) => {
                dir.audit_log = audit_log;
                dir.sync_provider = sync_provider;
            }
            Err(e) => {
                let _ = dir.store.close(false);
                return Err(e);
            }
        }
        Ok((dir, startup))
    }

    /// A reader of the store's current version.
    pub fn reader(&self) -> StoreReader {
        self.store.reader()
    }

    /// The directory's write health: `None` while it accepts writes; `Some` with why
    /// (the log's operation, file and cause, and since when) once the store has stopped
    /// accepting them after its write-ahead log failed. It stays set until a restart;
    /// reads go on meanwhile. Lock-free, for health checks (`/readyz`) and monitoring.
    pub fn write_halt(&self) -> Option<Arc<WriteHalt>> {
        self.store.write_halt()
    }

    /// `unavailable` (52), in the words every write gets, once writes are halted
    /// ([`Directory::write_halt`]); the first check of every update, so the answer does
    /// not depend on the request or on which connection met the failure.
    pub fn check_writable(&self) -> Result<(), OpError> {
        match self.write_halt() {
            None => Ok(()),
            Some(halt) => Err(OpError::writes_halted(&halt)),
        }
    }

    /// In a cluster, on the leader: creates the suffix and admin entries the directory
    /// still lacks (and resets the admin password from the environment when asked), as a
    /// single server does when it opens. What it did is in the returned [`Startup`] (its
    /// store report empty).
    pub fn set_up_missing(&self) -> Result<Startup, DirectoryError> {
        let mut startup = Startup::default();
        self.set_up(&mut startup)?;
        Ok(startup)
    }

    /// True when every suffix entry and the admin entry exist.
    pub fn is_set_up(&self) -> bool {
        let version = self.store.current();
        self.suffixes.iter().all(|s| version.find(s).is_some()) && version.find(&self.admin_dn).is_some()
    }

    /// Creates missing suffix and admin entries; resets the admin password from the
    /// environment when asked.
    fn set_up(&self, startup: &mut Startup) -> Result<(), DirectoryError> {
        let version = self.store.current();
        let written: Vec<&str> = self.config.suffixes().collect();
        for (norm, text) in self.suffixes.iter().zip(written) {
            if version.find(norm).is_none() {
                let entry = suffix_entry(text, norm, &self.schema)?;
                self.add_internal(entry, true)?;
                startup.created.push(text.to_string());
            }
        }
        let env = &self.config.directory.admin_password_env;
        let from_env = std::env::var(env).ok().filter(|p| !p.is_empty());
        let version = self.store.current();
        match version.find(&self.admin_dn) {
            None => {
                let password = match from_env {
                    Some(p) => p,
                    None => {
                        let p = password::generate().map_err(|e| setup_error("admin password", e))?;
                        startup.generated_admin_password = Some(p.clone());
                        p
                    }
                };
                let entry = self.admin_entry(&password)?;
                self.add_internal(entry, false)?;
                startup.created.push(self.config.directory.admin_dn.clone());
            }
            Some(id) => {
                let Some(p) = from_env else { return Ok(()) };
                let view = version.entry(id).ok_or(StoreError::NoSuchEntry)?;
                let verifies = view.attrs().attribute(self.user_password).any(|a| {
                    a.values
                        .iter()
                        .any(|v| password::verify(p.as_bytes(), v, &self.config.password))
                });
                if !verifies {
                    let dn = Dn::parse(version.dn(id).as_bytes()).map_err(|e| setup_error("admin", e))?;
                    let mut entry = Entry::from_stored(dn, self.admin_dn.clone(), view.attrs());
                    let hashed = password::hash_new(&self.config.password, p.as_bytes())
                        .map_err(|e| setup_error("admin password", e))?;
                    entry.set_values(self.user_password, &Options::none(), vec![hashed]);
                    on_modify(&mut entry, "", &OpStamp::now(&self.csn), &self.schema)?;
                    let stored = entry.to_stored();
                    self.store.write(move |txn| txn.modify(id, &stored))??;
                    startup.admin_password_reset = true;
                }
            }
        }
        Ok(())
    }

    /// The admin entry with `password` hashed.
    fn admin_entry(&self, password_text: &str) -> Result<Entry, DirectoryError> {
        let text = &self.config.directory.admin_dn;
        let dn = Dn::parse(text.as_bytes()).map_err(|e| setup_error(text, e))?;
        let rdn = dn
            .rdns
            .first()
            .ok_or_else(|| setup_error(text, "the admin DN is empty"))?;
        let mut entry = Entry::new(dn.clone(), self.admin_dn.clone());
        let hashed = password::hash_new(&self.config.password, password_text.as_bytes())
            .map_err(|e| setup_error(text, e))?;
        let mut values = vec![
            ("objectClass", b"organizationalRole".to_vec()),
            ("objectClass", b"simpleSecurityObject".to_vec()),
            ("userPassword", hashed),
        ];
        for ava in &rdn.avas {
            values.push((ava.attr.as_str(), ava.value.clone()));
        }
        if !rdn.avas.iter().any(|a| {
            self.schema
                .attribute_type(&a.attr)
                .is_some_and(|t| t.has_name("cn"))
        }) {
            return Err(setup_error(
                text,
                "the admin entry is an organizationalRole, named by `cn` (e.g. cn=admin,<suffix>)",
            ));
        }
        push_all(&mut entry, &values, &self.schema, text)?;
        Ok(entry)
    }

    /// Checks `entry`, sets its operational attributes and adds it.
    fn add_internal(&self, mut entry: Entry, naming_context: bool) -> Result<(), DirectoryError> {
        let dn_text = entry.dn.to_string();
        let checked = check_entry(&entry, &self.schema).map_err(|e| setup_error(&dn_text, e))?;
        on_add(
            &mut entry,
            &checked,
            "",
            &OpStamp::now(&self.csn),
            &self.schema,
            false,
        )?;
        let stored = entry.to_stored();
        let (dn, norm) = (entry.dn, entry.norm_dn);
        self.store
            .write(move |txn| txn.add(&dn, &norm, &stored, naming_context))?
            .map_err(|e| setup_error(&dn_text, e))?;
        Ok(())
    }
}

fn setup_error(dn: &str, reason: impl std::fmt::Display) -> DirectoryError {
    DirectoryError::Setup {
        dn: dn.to_string(),
        reason: reason.to_string(),
    }
}

/// Adds `(type name, value)` pairs to `entry`.
fn push_all(
    entry: &mut Entry,
    values: &[(&str, Vec<u8>)],
    schema: &Schema,
    dn: &str,
) -> Result<(), DirectoryError> {
    for (name, value) in values {
        let ty = schema
            .attribute_type(name)
            .ok_or_else(|| setup_error(dn, format!("the schema does not define `{name}`")))?;
        if entry.attributes_of(ty.id).any(|a| a.values.contains(value)) {
            continue;
        }
        entry.push_value(ty.id, &Options::none(), value.clone());
    }
    Ok(())
}

/// The entry of a suffix, with the object classes its RDN's type implies.
fn suffix_entry(text: &str, norm: &NormDn, schema: &Schema) -> Result<Entry, DirectoryError> {
    let dn = Dn::parse(text.as_bytes()).map_err(|e| setup_error(text, e))?;
    let rdn = dn
        .rdns
        .first()
        .ok_or_else(|| setup_error(text, "a suffix cannot be empty"))?;
    let [ava] = rdn.avas.as_slice() else {
        return Err(setup_error(
            text,
            "a multi-valued RDN names no single object class; import the suffix entry with `larch import`",
        ));
    };
    let ty = schema
        .attribute_type(&ava.attr)
        .ok_or_else(|| setup_error(text, format!("the schema does not define `{}`", ava.attr)))?;
    let name = ty.name().to_ascii_lowercase();
    let mut values: Vec<(&str, Vec<u8>)> = vec![("objectClass", b"top".to_vec())];
    match name.as_str() {
        "dc" => {
            values.push(("objectClass", b"dcObject".to_vec()));
            values.push(("objectClass", b"organization".to_vec()));
            values.push(("o", ava.value.clone()));
        }
        "o" => values.push(("objectClass", b"organization".to_vec())),
        "ou" => values.push(("objectClass", b"organizationalUnit".to_vec())),
        "c" => values.push(("objectClass", b"country".to_vec())),
        "l" => values.push(("objectClass", b"locality".to_vec())),
        _ => {
            return Err(setup_error(
                text,
                format!(
                    "no object class is implied by an RDN of type `{}`; import the suffix entry with \
                     `larch import`",
                    ty.name()
                ),
            ))
        }
    }
    values.push((ty.name(), ava.value.clone()));
    let mut entry = Entry::new(dn.clone(), norm.clone());
    push_all(&mut entry, &values, schema, text)?;
    Ok(entry)
}

/// Starts the access log of `config`, when it is enabled.
fn start_access_log(config: &ServerConfig) -> Result<Option<Arc<AccessLog>>, DirectoryError> {
    if !config.access_log.enabled {
        return Ok(None);
    }
    let path = config.access_log_path();
    AccessLog::start(&config.access_log, path.clone(), Arc::new(FsStorage))
        .map(Some)
        .map_err(|source| DirectoryError::AccessLog { path, source })
}

/// Starts the synchronization provider, unless `sync_provider.enabled` is false.
fn start_sync_provider(dir: &Directory) -> Result<Option<Arc<SyncProvider>>, DirectoryError> {
    let settings = &dir.config.sync_provider;
    if !settings.enabled {
        return Ok(None);
    }
    let provider = SyncProvider::new(settings.server_id, settings.session_log);
    provider
        .start(&dir.store, dir.schema.clone(), dir.acl.clone(), dir.optypes)
        .map_err(|e| setup_error("", format!("cannot start the synchronization provider: {e}")))?;
    Ok(Some(provider))
}

/// Starts the audit log of `config`, when it is enabled, following `store`'s changes from
/// its current version.
fn start_audit_log(
    config: &ServerConfig,
    store: &Store,
    schema: &Arc<Schema>,
) -> Result<Option<Arc<AuditLog>>, DirectoryError> {
    if !config.audit_log.enabled {
        return Ok(None);
    }
    let path = config.audit_log_path();
    AuditLog::start(
        &config.audit_log,
        path.clone(),
        Arc::new(FsStorage),
        store,
        Arc::clone(schema),
    )
    .map(Some)
    .map_err(|source| DirectoryError::AuditLog { path, source })
}
