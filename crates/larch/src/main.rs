//! The `larch` binary. Subcommands that exist: `gen` (benchmark data) and `bench` (the load
//! client), both from `larch-bench`; `import`, `export`, `verify` and `snapshot` on a data
//! directory of `larch-store` (see [`store_cmd`]); `backup` and `restore` (see
//! [`backup_cmd`]); `serve`, the directory server (see [`serve_cmd`]); the administration
//! commands `passwd` (a userPassword value, as slappasswd; [`passwd_cmd`]), `check-config`
//! ([`check_config_cmd`]), `schema check` ([`schema_cmd`]) and `status` (a running server's
//! cn=Monitor in a few lines; [`status_cmd`]); `migrate` (from OpenLDAP: a slapd configuration
//! and slapcat's LDIF into a new Larch directory, with a report; [`migrate`]).
//!
//! Every command but `serve` ends the same way: exit status 0 on success, 1 with one line
//! `larch <command>: <reason>` on standard error otherwise.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use larch_bench::sweep::{self, Sweep};
use larch_bench::template::{FilterTemplate, ValueFile};
use larch_bench::url::LdapUrl;
use larch_bench::{
    Attributes, AuthConnection, BenchConfig, GenConfig, PasswordScheme, TlsOptions, TlsVersion, Workload,
};
use larch_proto::SearchScope;

mod alloc;
mod backup_cmd;
mod check_config_cmd;
mod cluster_cmd;
mod error_log;
mod import_unique;
mod ldap_client;
mod migrate;
mod passwd_cmd;
mod schema_cmd;
mod serve_cmd;
mod status_cmd;
mod store_cmd;
mod tty;

use store_cmd::{ExportArgs, ImportArgs, SnapshotArgs, VerifyArgs};

/// Larch: an LDAPv3 directory server and its tools.
#[derive(Debug, Parser)]
#[command(name = "larch", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the directory server (embedded defaults without --config).
    Serve(serve_cmd::ServeArgs),
    /// Generate DirectoryMark-style benchmark data: LDIF plus value files.
    Gen(GenArgs),
    /// Load an LDAP server and report throughput, latency and CPU use.
    ///
    /// Over ldap://, ldaps:// or ldap:// with --starttls.
    Bench(Box<BenchArgs>),
    /// Create a data directory from LDIF (offline; parents before children).
    Import(ImportArgs),
    /// Write a data directory's entries as LDIF, parents before children.
    Export(ExportArgs),
    /// Open a data directory, check its consistency, report load time and memory.
    Verify(VerifyArgs),
    /// Write a snapshot of a data directory (compacting its log).
    Snapshot(SnapshotArgs),
    /// Back up a running server (it writes DIR on its own host) or a stopped data directory.
    Backup(backup_cmd::BackupArgs),
    /// Check a backup, then restore it into an empty data directory.
    Restore(backup_cmd::RestoreArgs),
    /// A running server's state in a few lines, read from its cn=Monitor.
    Status(status_cmd::StatusArgs),
    /// A cluster: `larch cluster status`, `add-node`, `remove-node`.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Hash a password into a userPassword value, as OpenLDAP's slappasswd.
    Passwd(passwd_cmd::PasswdArgs),
    /// Check a configuration file as `larch serve --config FILE` reads it: every error.
    CheckConfig(check_config_cmd::CheckConfigArgs),
    /// Schema files: `larch schema check FILE...`.
    Schema(schema_cmd::SchemaArgs),
    /// Move from OpenLDAP: a slapd configuration and slapcat's LDIF into a new Larch
    /// directory, with a report of what carried over.
    Migrate(migrate::MigrateArgs),
}

/// `larch cluster ...`.
#[derive(Debug, Subcommand)]
enum ClusterCommand {
    /// The node's role, the leader, the term, how far its log and store reach, and the
    /// members, read from its cn=Cluster,cn=Monitor (docs/cluster.md).
    Status(status_cmd::StatusArgs),
    /// Add a node to a running cluster: it joins as a learner, catches up with the log,
    /// then votes (docs/cluster.md, "Adding and removing nodes").
    AddNode(cluster_cmd::AddNodeArgs),
    /// Remove a node (running or down, the leader included) from a running cluster.
    RemoveNode(cluster_cmd::RemoveNodeArgs),
}

/// `larch gen`.
#[derive(Debug, Args)]
struct GenArgs {
    /// Number of inetOrgPerson entries.
    #[arg(short = 'n', long, default_value_t = 100_000)]
    entries: u64,
    /// Output directory: data.ldif, cn.txt, uid.txt, mail.txt, dn.txt.
    #[arg(short, long, default_value = "larch-data")]
    out: PathBuf,
    /// Seed: the same seed gives the same octets.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Suffix (first RDN dc=, o= or ou=).
    #[arg(long, default_value = "dc=example,dc=com")]
    suffix: String,
    /// Organizational units under ou=People (0: people directly under it).
    #[arg(long, default_value_t = 0)]
    ous: u32,
    /// groupOfNames entries under ou=Groups.
    #[arg(long, default_value_t = 0)]
    groups: u32,
    /// Members per group.
    #[arg(long, default_value_t = 50)]
    group_members: u32,
    /// People are also posixAccounts (uidNumber, gidNumber, homeDirectory, loginShell,
    /// gecos) and groups posixGroups with a gidNumber (groupOfNames + posixGroup: import
    /// with `[schema] builtin = "rfc2307bis"`).
    #[arg(long)]
    posix: bool,
    /// POSIX groups also list their members' uid values in memberUid (with --posix).
    #[arg(long, requires = "posix")]
    member_uid: bool,
    /// userPassword scheme: SSHA, SSHA256, SSHA512 or CLEARTEXT.
    #[arg(long, default_value = "SSHA")]
    password_scheme: PasswordScheme,
    /// Every person's password.
    #[arg(long, default_value = "password")]
    password: String,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

/// `larch bench`.
#[derive(Debug, Args)]
#[command(after_help = "Workloads:\n  \
    search  random value from --values in --filter (DSRK searchrate, DirectoryMark)\n  \
    auth    search --auth-filter with a uid from --auth-values, then bind as the DN found (SLAMD);\n          \
    --auth-connection same (one at a time per connection) or new (connect+search+bind+unbind)\n  \
    modify  replace --modify-attribute of a random DN from --dns (DSRK modrate)\n  \
    mixed   --search-percent searches, the rest modifies\n  \
    add     add new entries under --add-parent (left in place)\n  \
    delete  delete each DN of --dns once, in order\n  \
    churn   add new entries and delete them again\n\n\
    With --data DIR (the output of `larch gen`), --values, --auth-values and --dns default to the\n\
    value file of the filter's attribute (DIR/cn.txt for (cn={})), DIR/uid.txt and DIR/dn.txt.\n\n\
    TLS: -H ldaps://host[:636] or -H ldap://host --starttls, with --ca-file PEM (or\n\
    --tls-insecure). Sessions are resumed from a cache shared by the run unless\n\
    --no-tls-resumption; the report names the version, cipher suite and how many handshakes\n\
    were full or resumed. With --auth-connection new, StartTLS and the handshake are part of\n\
    each measured operation.")]
struct BenchArgs {
    /// Server URL: ldap://host[:389] or ldaps://host[:636].
    #[arg(short = 'H', long, default_value = "ldap://127.0.0.1:389")]
    url: String,
    /// Send StartTLS on the ldap:// URL before anything else (not with ldaps://).
    #[arg(long)]
    starttls: bool,
    /// PEM file of the CA certificates to trust for TLS (required unless --tls-insecure).
    #[arg(long, value_name = "PEM")]
    ca_file: Option<PathBuf>,
    /// TLS without verifying the server's certificate (said so in the report).
    #[arg(long)]
    tls_insecure: bool,
    /// Client certificate chain (PEM) for TLS; needs --key.
    #[arg(long, value_name = "PEM", requires = "key")]
    cert: Option<PathBuf>,
    /// Private key (PEM) of --cert.
    #[arg(long, value_name = "PEM", requires = "cert")]
    key: Option<PathBuf>,
    /// Name sent as SNI and verified in the certificate (default: the URL's host).
    #[arg(long, value_name = "NAME")]
    tls_server_name: Option<String>,
    /// Only this TLS version: 1.2 or 1.3 (default: both offered).
    #[arg(long, value_name = "1.2|1.3", value_parser = parse_tls_version)]
    tls_version: Option<TlsVersion>,
    /// Full TLS handshakes only: no session cache.
    #[arg(long)]
    no_tls_resumption: bool,
    /// Key exchange groups the client offers, in order, comma-separated (e.g. `X25519` as an
    /// OpenSSL 3.0 client; default: X25519MLKEM768, X25519, secp256r1, secp384r1).
    #[arg(long, value_name = "GROUP,...", value_delimiter = ',')]
    tls_groups: Option<Vec<String>>,
    /// search, auth, modify, mixed, add, delete or churn.
    #[arg(short = 'W', long, default_value = "search", value_parser = parse_workload)]
    workload: Workload,
    /// Connections (auth with --auth-connection new: concurrent operations).
    #[arg(short = 'c', long, default_value_t = 8)]
    connections: usize,
    /// Operations in flight per connection (pipeline depth; auth uses 1).
    #[arg(short = 'd', long, default_value_t = 8)]
    depth: usize,
    /// Client threads (default: the CPUs this process may run on).
    #[arg(short = 't', long)]
    threads: Option<usize>,
    /// Measured duration (e.g. 10s, 500ms, 2m).
    #[arg(short = 'l', long, default_value = "10s", value_parser = parse_duration)]
    duration: Duration,
    /// Warm-up before measuring.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    warmup: Duration,
    /// Target rate in operations per second (open loop); default: as fast as possible.
    #[arg(short = 'r', long)]
    rate: Option<f64>,
    /// Bind DN for every connection before the run (anonymous if absent).
    #[arg(short = 'D', long)]
    bind_dn: Option<String>,
    /// Bind password.
    #[arg(short = 'w', long, default_value = "")]
    bind_password: String,
    /// Directory written by `larch gen`: default value files.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Search base.
    #[arg(short = 'b', long, default_value = "dc=example,dc=com")]
    base: String,
    /// Search scope: base, one, sub or children.
    #[arg(short = 's', long, default_value = "sub", value_parser = parse_scope)]
    scope: SearchScope,
    /// Filter template; {} is replaced by a random value (escaped).
    #[arg(short = 'f', long, default_value = "(cn={})")]
    filter: String,
    /// Attributes to return: all, none (1.1), or a comma-separated list.
    #[arg(short = 'a', long, default_value = "all")]
    attrs: String,
    /// Value file for --filter (one value per line).
    #[arg(long)]
    values: Option<PathBuf>,
    /// Size limit sent with searches (0: none).
    #[arg(long, default_value_t = 0)]
    size_limit: u32,
    /// Filter template of the auth workload's search.
    #[arg(long, default_value = "(uid={})")]
    auth_filter: String,
    /// Value file for --auth-filter.
    #[arg(long)]
    auth_values: Option<PathBuf>,
    /// Password the auth workload binds with.
    #[arg(long, default_value = "password")]
    auth_password: String,
    /// Auth on the same connection or a new connection per operation.
    #[arg(long, default_value = "same", value_parser = ["same", "new"])]
    auth_connection: String,
    /// DN file for modify and delete.
    #[arg(long)]
    dns: Option<PathBuf>,
    /// Attribute replaced by modify.
    #[arg(long, default_value = "description")]
    modify_attribute: String,
    /// Percentage of searches in the mixed workload.
    #[arg(long, default_value_t = 80)]
    search_percent: u32,
    /// Parent of the entries add and churn create.
    #[arg(long, default_value = "ou=People,dc=example,dc=com")]
    add_parent: String,
    /// Seed of the random choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// PID of the server, to report its CPU per operation (Linux /proc).
    #[arg(long)]
    server_pid: Option<u32>,
    /// Seconds to wait for operations in flight after the window.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    drain_timeout: Duration,
    /// One run per value: connections=1,2,4,... (also depth=, rate=, threads=).
    #[arg(long)]
    sweep: Option<String>,
    /// Where --sweep writes its SVG chart.
    #[arg(long, default_value = "sweep.svg")]
    svg: PathBuf,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Print the report as one line of key=value pairs (for shell scripts).
    #[arg(long, conflicts_with = "json")]
    line: bool,
    /// No progress lines.
    #[arg(short, long)]
    quiet: bool,
}

fn parse_workload(s: &str) -> Result<Workload, String> {
    Workload::parse(s).ok_or_else(|| {
        let names: Vec<&str> = Workload::ALL.iter().map(|w| w.name()).collect();
        format!("unknown workload `{s}` ({})", names.join(", "))
    })
}

fn parse_tls_version(s: &str) -> Result<TlsVersion, String> {
    TlsVersion::parse(s).ok_or_else(|| format!("unknown TLS version `{s}` (1.2 or 1.3)"))
}

fn parse_scope(s: &str) -> Result<SearchScope, String> {
    Ok(match s {
        "base" => SearchScope::Base,
        "one" | "onelevel" => SearchScope::OneLevel,
        "sub" | "subtree" => SearchScope::Subtree,
        "children" | "subordinate" => SearchScope::Subordinate,
        _ => return Err(format!("unknown scope `{s}` (base, one, sub, children)")),
    })
}

/// `10`, `10s`, `500ms`, `2m`, `1.5s`.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num.parse().map_err(|_| format!("invalid duration `{s}`"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("invalid duration unit in `{s}` (ms, s, m, h)")),
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("invalid duration `{s}`"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => {
            let _ = <Cli as clap::CommandFactory>::command().print_help();
            ExitCode::from(2)
        }
        Some(Command::Serve(args)) => serve_cmd::serve(args),
        Some(Command::Gen(args)) => report("gen", gen(args)),
        Some(Command::Bench(args)) => report("bench", bench(*args)),
        Some(Command::Import(args)) => report("import", store_cmd::import(args)),
        Some(Command::Export(args)) => report("export", store_cmd::export(args)),
        Some(Command::Verify(args)) => report("verify", store_cmd::verify(args)),
        Some(Command::Snapshot(args)) => report("snapshot", store_cmd::snapshot(args)),
        Some(Command::Passwd(args)) => report("passwd", passwd_cmd::passwd(args)),
        Some(Command::CheckConfig(args)) => report("check-config", check_config_cmd::check_config(args)),
        Some(Command::Schema(args)) => report("schema check", schema_cmd::schema(args)),
        Some(Command::Backup(args)) => report("backup", backup_cmd::backup(args)),
        Some(Command::Restore(args)) => report("restore", backup_cmd::restore_cmd(args)),
        Some(Command::Status(args)) => report("status", status_cmd::status(args)),
        Some(Command::Cluster(ClusterCommand::Status(args))) => {
            report("cluster status", status_cmd::cluster_status(args))
        }
        Some(Command::Cluster(ClusterCommand::AddNode(args))) => {
            report("cluster add-node", cluster_cmd::add_node(args))
        }
        Some(Command::Cluster(ClusterCommand::RemoveNode(args))) => {
            report("cluster remove-node", cluster_cmd::remove_node(args))
        }
        Some(Command::Migrate(args)) => migrate::migrate(args),
    }
}

/// Exit status 0, or 1 after `larch <command>: <reason>` on standard error.
fn report(command: &str, r: Result<(), String>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("larch {command}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn gen(a: GenArgs) -> Result<(), String> {
    let cfg = GenConfig {
        entries: a.entries,
        seed: a.seed,
        suffix: a.suffix,
        ous: a.ous,
        groups: a.groups,
        group_members: a.group_members,
        scheme: a.password_scheme,
        password: a.password,
        posix: a.posix,
        member_uid: a.member_uid,
    };
    let summary = larch_bench::generate_to_dir(cfg, &a.out).map_err(|e| e.to_string())?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?
        );
    } else {
        println!(
            "wrote {} entries ({} people, {} groups, {} ous) to {}: {:.1} MB of LDIF, {:.0} octets per person, in {:.2} s",
            summary.total_entries,
            summary.people,
            summary.groups,
            summary.ous,
            a.out.join(larch_bench::gen::files::LDIF).display(),
            summary.ldif_bytes as f64 / 1e6,
            summary.avg_person_bytes,
            summary.elapsed.as_secs_f64()
        );
    }
    Ok(())
}

fn load_values(path: &Path) -> Result<Arc<ValueFile>, String> {
    ValueFile::read(path).map(Arc::new).map_err(|e| e.to_string())
}

/// The attribute the first `{}` of a template is asserted on: `(cn={})` gives `cn`.
fn template_attribute(template: &str) -> Option<&str> {
    let before = &template[..template.find("{}")?];
    let eq = before.rfind('=')?;
    let start = before[..eq].rfind('(').map_or(0, |i| i + 1);
    let attr = before[start..eq].trim_end_matches(['~', '<', '>', ':']);
    (!attr.is_empty()).then_some(attr)
}

/// The value file given, or the one `larch gen` wrote for `attr` in `--data`.
fn value_file(
    given: &Option<PathBuf>,
    data: &Option<PathBuf>,
    file: Option<String>,
) -> Result<Option<Arc<ValueFile>>, String> {
    let path = match (given, data, file) {
        (Some(p), _, _) => p.clone(),
        (None, Some(d), Some(f)) if d.join(&f).exists() => d.join(f),
        _ => return Ok(None),
    };
    load_values(&path).map(Some)
}

fn bench(a: BenchArgs) -> Result<(), String> {
    let url = LdapUrl::parse(&a.url).map_err(|e| e.to_string())?;
    let mut cfg = BenchConfig::new(url, a.workload);
    cfg.connections = a.connections;
    cfg.depth = a.depth;
    if let Some(t) = a.threads {
        cfg.threads = t.max(1);
    }
    cfg.duration = a.duration;
    cfg.warmup = a.warmup;
    cfg.rate = a.rate;
    cfg.bind = a.bind_dn.clone().map(|dn| (dn, a.bind_password.clone()));
    cfg.base = a.base.clone();
    cfg.scope = a.scope;
    cfg.filter = if a.filter.contains("{}") {
        FilterTemplate::parse(&a.filter)
    } else {
        FilterTemplate::fixed(&a.filter)
    }
    .map_err(|e| e.to_string())?;
    cfg.attributes = Attributes::parse(&a.attrs);
    cfg.size_limit = a.size_limit;
    cfg.auth_filter = FilterTemplate::parse(&a.auth_filter).map_err(|e| e.to_string())?;
    cfg.auth_password = a.auth_password.clone();
    cfg.auth_connection = if a.auth_connection == "new" {
        AuthConnection::New
    } else {
        AuthConnection::Same
    };
    cfg.modify_attribute = a.modify_attribute.clone();
    cfg.search_percent = a.search_percent;
    cfg.add_parent = a.add_parent.clone();
    cfg.seed = a.seed;
    cfg.server_pid = a.server_pid;
    cfg.progress = !a.quiet;
    cfg.drain_timeout = a.drain_timeout;
    cfg.tls = TlsOptions {
        starttls: a.starttls,
        ca_file: a.ca_file.clone(),
        insecure: a.tls_insecure,
        cert: a.cert.clone(),
        key: a.key.clone(),
        server_name: a.tls_server_name.clone(),
        version: a.tls_version,
        resumption: !a.no_tls_resumption,
        groups: a.tls_groups.clone(),
    };
    // The contradictions (--starttls with ldaps://, TLS without a CA, ...) before any file is read.
    cfg.tls.transport(&cfg.url)?;
    let needs_search =
        matches!(a.workload, Workload::Search | Workload::Mixed) && cfg.filter.placeholders() > 0;
    if needs_search {
        let file = template_attribute(&a.filter).map(|attr| format!("{}.txt", attr.to_ascii_lowercase()));
        cfg.values = value_file(&a.values, &a.data, file)?;
    }
    if a.workload == Workload::Auth {
        let file =
            template_attribute(&a.auth_filter).map(|attr| format!("{}.txt", attr.to_ascii_lowercase()));
        cfg.auth_values = value_file(&a.auth_values, &a.data, file)?;
    }
    if matches!(a.workload, Workload::Modify | Workload::Mixed | Workload::Delete) {
        cfg.dns = value_file(&a.dns, &a.data, Some("dn.txt".into()))?;
    }

    let Some(sweep_arg) = &a.sweep else {
        let report = larch_bench::run(&cfg).map_err(|e| e.to_string())?;
        if a.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
            );
        } else if a.line {
            println!("{}", report.to_line());
        } else {
            print!("{}", report.to_text());
        }
        return Ok(());
    };
    let sweep = Sweep::parse(sweep_arg)?;
    let mut points = Vec::new();
    for &v in &sweep.values {
        let c = sweep.apply(&cfg, v);
        if !a.quiet {
            eprintln!("--- {} = {v}", sweep.param.name());
        }
        let r = larch_bench::run(&c).map_err(|e| e.to_string())?;
        if !a.json && !a.quiet {
            eprint!("{}", r.to_text());
        }
        points.push((v, r));
    }
    let title = format!(
        "larch bench {} on {}: throughput and p99 vs {}",
        points[0].1.workload,
        cfg.url,
        sweep.param.name()
    );
    std::fs::write(&a.svg, sweep::svg(sweep.param, &points, &title))
        .map_err(|e| format!("{}: {e}", a.svg.display()))?;
    if a.json {
        let json = serde_json::json!({
            "param": sweep.param.name(),
            "svg": a.svg,
            "points": points.iter().map(|(v, r)| serde_json::json!({"value": v, "report": r})).collect::<Vec<_>>(),
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?
        );
    } else if a.line {
        for (v, r) in &points {
            println!("{}={v} {}", sweep.param.name(), r.to_line());
        }
    } else {
        print!("{}", sweep::table(sweep.param, &points));
        println!("chart: {}", a.svg.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("2x").is_err());
        assert!(parse_duration("s").is_err());
    }

    #[test]
    fn template_attributes() {
        assert_eq!(template_attribute("(cn={})"), Some("cn"));
        assert_eq!(template_attribute("(&(objectClass=person)(uid={}))"), Some("uid"));
        assert_eq!(template_attribute("mail={}"), Some("mail"));
        assert_eq!(template_attribute("(cn~={})"), Some("cn"));
        assert_eq!(template_attribute("(objectClass=*)"), None);
    }

    #[test]
    fn cli_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from([
            "larch",
            "bench",
            "-H",
            "ldap://h:1",
            "-W",
            "auth",
            "--auth-connection",
            "new",
        ])
        .unwrap();
        let Some(Command::Bench(b)) = cli.command else {
            panic!()
        };
        assert_eq!(b.workload, Workload::Auth);
        assert!(Cli::try_parse_from(["larch", "bench", "-W", "nope"]).is_err());
        assert!(Cli::try_parse_from(["larch", "gen", "--password-scheme", "md5"]).is_err());
    }

    #[test]
    fn bench_tls_flags() {
        let cli = Cli::try_parse_from([
            "larch",
            "bench",
            "-H",
            "ldap://[::1]:3389",
            "--starttls",
            "--ca-file",
            "ca.pem",
            "--cert",
            "c.pem",
            "--key",
            "k.pem",
            "--tls-server-name",
            "ldap.example.com",
            "--tls-version",
            "1.3",
            "--no-tls-resumption",
            "--tls-groups",
            "X25519,secp256r1",
        ])
        .unwrap();
        let Some(Command::Bench(b)) = cli.command else {
            panic!()
        };
        assert!(b.starttls && b.no_tls_resumption && !b.tls_insecure);
        assert_eq!(b.tls_version, Some(TlsVersion::Tls13));
        assert_eq!(
            b.tls_groups,
            Some(vec!["X25519".to_string(), "secp256r1".to_string()])
        );
        assert_eq!(b.tls_server_name.as_deref(), Some("ldap.example.com"));
        // --cert without --key (and the reverse) are refused by the parser.
        assert!(Cli::try_parse_from(["larch", "bench", "--cert", "c.pem"]).is_err());
        assert!(Cli::try_parse_from(["larch", "bench", "--key", "k.pem"]).is_err());
        assert!(Cli::try_parse_from(["larch", "bench", "--tls-version", "1.1"]).is_err());
        // Contradictions are refused before anything is read or connected.
        let refused = |args: &[&str]| {
            let mut all = vec!["larch", "bench", "-W", "auth", "--auth-values", "/nonexistent"];
            all.extend_from_slice(args);
            let Some(Command::Bench(b)) = Cli::try_parse_from(all).unwrap().command else {
                panic!()
            };
            bench(*b).unwrap_err()
        };
        let e = refused(&["-H", "ldaps://h", "--starttls", "--tls-insecure"]);
        assert!(e.contains("--starttls"), "{e}");
        let e = refused(&["-H", "ldaps://h"]);
        assert!(e.contains("--ca-file") && e.contains("--tls-insecure"), "{e}");
        let e = refused(&["-H", "ldap://h", "--starttls"]);
        assert!(e.contains("--ca-file"), "{e}");
        let e = refused(&["-H", "ldap://h", "--ca-file", "ca.pem"]);
        assert!(e.contains("plain"), "{e}");
    }

    #[test]
    fn store_commands_parse() {
        let cli = Cli::try_parse_from([
            "larch",
            "import",
            "--data",
            "d",
            "--suffix",
            "dc=a",
            "--suffix",
            "dc=b",
            "--threads",
            "3",
            "-",
        ])
        .unwrap();
        let Some(Command::Import(i)) = cli.command else {
            panic!()
        };
        assert_eq!(i.suffixes, ["dc=a", "dc=b"]);
        assert_eq!(i.threads, 3);
        assert_eq!(i.file, PathBuf::from("-"));
        assert!(!i.allow_file_urls);
        assert!(
            Cli::try_parse_from(["larch", "import", "--data", "d"]).is_err(),
            "the file is required"
        );
        let Some(Command::Export(e)) = Cli::try_parse_from(["larch", "export"]).unwrap().command else {
            panic!()
        };
        assert_eq!(
            e.data,
            PathBuf::from(larch_server::config::DEFAULT_DATA_DIR),
            "serve's data directory by default"
        );
        let cli =
            Cli::try_parse_from(["larch", "export", "--data", "d", "--base", "dc=a", "-o", "x"]).unwrap();
        let Some(Command::Export(e)) = cli.command else {
            panic!()
        };
        assert_eq!(e.base.as_deref(), Some("dc=a"));
        assert_eq!(e.out, Some(PathBuf::from("x")));
        assert!(matches!(
            Cli::try_parse_from(["larch", "verify", "--data", "d", "--json"])
                .unwrap()
                .command,
            Some(Command::Verify(VerifyArgs { json: true, .. }))
        ));
        assert!(matches!(
            Cli::try_parse_from(["larch", "snapshot", "--data", "d"])
                .unwrap()
                .command,
            Some(Command::Snapshot(_))
        ));
    }
}
