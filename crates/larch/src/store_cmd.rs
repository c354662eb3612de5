//! The data-directory subcommands: `import`, `export`, `verify` and `snapshot`, over
//! `larch-store`.
//!
//! - `import` creates a data directory from LDIF (offline: it writes one snapshot at LSN 0
//!   and no log), with a progress bar on a terminal; like slapadd it adds the operational
//!   attributes an entry lacks (timestamps, creator, entryUUID, entryCSN,
//!   structuralObjectClass) unless `--no-operational`, then computes every entry's
//!   memberOf from its groups (`larch_server::groups::check`) unless `--no-member-of`
//!   (first, with `groups.sync_member_uid` on in `--config`'s file, bringing `member` and
//!   `memberUid` of every POSIX group in step: `larch_server::groups::posix`), and reports the values `[uniqueness]` says no two entries may share
//!   (`crate::import_unique`; refused with `--unique-strict`);
//! - `export` opens a data directory and writes its entries as LDIF, parents first, in a
//!   form `slapadd` loads (operational attributes included);
//! - `verify` opens a data directory, reports what opening found (snapshot, log replay, a
//!   torn log tail cut, leftover temporary snapshot files removed), the time and memory it
//!   took, and checks every invariant of the loaded version, that every entry's memberOf
//!   is what its groups give it and, with `groups.sync_member_uid` on in `--config`'s
//!   file, that every POSIX group's `member` and `memberUid` are in step;
//! - `snapshot` opens a data directory and writes a snapshot of it (compacting the log).
//!
//! `import`, `export` and `verify` take `--config FILE` instead of `--data` for a directory
//! whose entries need the file's schema (`larch migrate` writes such directories), and for
//! its `[groups]` settings.
//!
//! Each takes `--data DIR`, by default `larch serve`'s own without a configuration file
//! (`larch_server::config::DEFAULT_DATA_DIR`, `./larch-data`): one constant for all.
//!
//! None of them runs while a server has the directory open: they open it themselves.
//! Every command that opens a store closes it without writing a snapshot, so `export` and
//! `verify` leave the snapshots as they found them (opening may still cut a torn log tail
//! and remove a leftover temporary snapshot file, which `verify` reports).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use larch_model::dn::NormDn;
use larch_model::schema::Schema;
use larch_server::config::{ServerConfig, UniquenessSettings, DEFAULT_DATA_DIR};
use larch_server::directory::SERVER_ID;
use larch_server::groups::check::{member_of_mismatches, repair_member_of as repair_member_of_in, Repaired};
use larch_server::groups::posix::{member_uid_mismatches, repair_member_uid, PosixGroups};
use larch_server::groups::GroupSchema;
use larch_server::opattrs::csn::CsnGenerator;
use larch_server::opattrs::import_hook;
use larch_store::import::{export_ldif_without, import_ldif, ImportOptions, ImportProgress};
use larch_store::ldif::LdifWriter;
use larch_store::storage::FsStorage;
use larch_store::{OpenReport, Store, StoreOptions};
use serde_json::json;

use crate::import_unique::{self, find_duplicates};

/// Input read ahead of the import's batch splitter, in octets.
const INPUT_BUFFER: usize = 1 << 20;

/// Output buffered before `export` writes to its file or stdout, in octets.
const OUTPUT_BUFFER: usize = 1 << 20;

/// How often the progress bar redraws (it also redraws on every batch, which is ~1 MiB).
const PROGRESS_TICK: Duration = Duration::from_millis(200);

/// `larch import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Data directory to create (must hold no snapshot and no log); by default the one
    /// `larch serve` uses without a configuration file.
    #[arg(long, default_value = DEFAULT_DATA_DIR, conflicts_with = "config")]
    pub data: PathBuf,
    /// Take the schema (built-in set and `schema.files`), the data directory and the
    /// naming contexts from this larch.toml instead of the built-in schema and --data.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Parsing threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Read `attr:< file://...` values from the filesystem.
    #[arg(long)]
    pub allow_file_urls: bool,
    /// Naming context allowed as a top entry (repeatable); none given: any entry whose
    /// parent is absent from the input becomes a naming context.
    #[arg(long = "suffix", value_name = "DN")]
    pub suffixes: Vec<String>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// The creatorsName/modifiersName of entries that have none (as slapadd uses the
    /// database's root DN).
    #[arg(long, value_name = "DN", default_value = "cn=admin,dc=example,dc=com")]
    pub creator: String,
    /// Store entries exactly as the LDIF has them: no createTimestamp, entryUUID,
    /// entryCSN, structuralObjectClass etc. added where missing.
    #[arg(long)]
    pub no_operational: bool,
    /// Leave memberOf as the LDIF has it (by default every entry's memberOf is computed
    /// from the groups that list it, as the server keeps it; see docs/groups.md). With
    /// `groups.sync_member_uid = true` in --config's file, `member` and `memberUid` of every
    /// POSIX group are brought in step first, whatever this option says.
    #[arg(long)]
    pub no_member_of: bool,
    /// Refuse the import (leaving no snapshot) when two entries of one scope share a
    /// value `[uniqueness]` says must be unique (`uid` below each naming context without
    /// --config); by default they are reported and imported.
    #[arg(long)]
    pub unique_strict: bool,
    /// The LDIF file (`-`: standard input). Parents must come before their children.
    pub file: PathBuf,
}

/// `larch export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Data directory (default: the one `larch serve` uses without a configuration file).
    #[arg(long, default_value = DEFAULT_DATA_DIR, conflicts_with = "config")]
    pub data: PathBuf,
    /// Take the schema and the data directory from this larch.toml (needed for a
    /// directory whose entries use the file's own schema files).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Export only this entry and its subtree (default: every naming context).
    #[arg(long, value_name = "DN")]
    pub base: Option<String>,
    /// Output file (default: standard output).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
}

/// `larch verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Data directory (default: the one `larch serve` uses without a configuration file).
    #[arg(long, default_value = DEFAULT_DATA_DIR, conflicts_with = "config")]
    pub data: PathBuf,
    /// Take the schema, the data directory and the `[groups]` settings from this
    /// larch.toml: memberOf is not checked with `member_of = false`, and every POSIX
    /// group's `member` and `memberUid` are checked with `sync_member_uid = true`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Loading threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Do not check that every entry's memberOf is what its groups give it (for a
    /// directory served with `groups.member_of = false`).
    #[arg(long)]
    pub no_member_of: bool,
}

/// `larch snapshot`.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Data directory (default: the one `larch serve` uses without a configuration file).
    #[arg(long, default_value = DEFAULT_DATA_DIR)]
    pub data: PathBuf,
    /// Loading threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

fn schema() -> Result<Arc<Schema>, String> {
    Schema::builtin()
        .map(Arc::new)
        .map_err(|e| format!("the built-in schema does not load: {e}"))
}

/// The schema, the data directory and the naming contexts of `--config FILE`, or the
/// built-in schema, `data` and no naming context.
fn with_config(config: &Option<PathBuf>, data: &Path) -> Result<(Arc<Schema>, PathBuf, Vec<String>), String> {
    let Some(path) = config else {
        return Ok((schema()?, data.to_path_buf(), Vec::new()));
    };
    let c = ServerConfig::load(path).map_err(|e| e.to_string())?;
    let schema = c.schema().map_err(|e| e.to_string())?;
    let suffixes = c.suffixes().map(str::to_string).collect();
    Ok((Arc::new(schema), c.server.data_dir.clone(), suffixes))
}

fn to_json(v: &serde_json::Value) -> Result<String, String> {
    serde_json::to_string_pretty(v).map_err(|e| e.to_string())
}

/// Megabytes (10^6 octets), for humans.
fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// `n / d`, 0 when `d` is 0.
fn per(n: f64, d: f64) -> f64 {
    if d > 0.0 {
        n / d
    } else {
        0.0
    }
}

/// `larch import`.
pub fn import(mut a: ImportArgs) -> Result<(), String> {
    let (schema, data, config_suffixes) = with_config(&a.config, &a.data)?;
    a.data = data;
    if a.suffixes.is_empty() {
        a.suffixes = config_suffixes;
    }
    let mut naming_contexts = Vec::with_capacity(a.suffixes.len());
    for s in &a.suffixes {
        let (_, norm) = NormDn::parse(s.as_bytes(), &*schema).map_err(|e| format!("--suffix `{s}`: {e}"))?;
        naming_contexts.push(norm);
    }
    let stdin = a.file.as_os_str() == "-";
    let (input, size): (Box<dyn BufRead + Send>, Option<u64>) = if stdin {
        (
            Box::new(BufReader::with_capacity(INPUT_BUFFER, std::io::stdin())),
            None,
        )
    } else {
        let f = File::open(&a.file).map_err(|e| format!("cannot open {}: {e}", a.file.display()))?;
        let size = f.metadata().ok().map(|m| m.len()).filter(|&n| n > 0);
        (Box::new(BufReader::with_capacity(INPUT_BUFFER, f)), size)
    };
    let csn = CsnGenerator::new(SERVER_ID).map_err(|e| e.to_string())?;
    let hook = import_hook(Arc::new(csn), a.creator.clone(), schema.clone());
    let imported_schema = schema.clone();
    let options = ImportOptions {
        dir: a.data.clone(),
        storage: Arc::new(FsStorage),
        schema,
        threads: a.threads,
        naming_contexts,
        hook: if a.no_operational { None } else { Some(&hook) },
        allow_file_urls: a.allow_file_urls,
    };
    let bar = progress_bar(size);
    let started = Instant::now();
    let result = import_ldif(&options, input, |p: ImportProgress| {
        bar.set_position(p.bytes);
        let rate = per(p.entries as f64, p.elapsed.as_secs_f64());
        if size.is_some_and(|s| p.bytes >= s) {
            bar.set_message(format!(
                "{} entries, {rate:.0} entries/s; writing the snapshot",
                p.entries
            ));
        } else {
            bar.set_message(format!("{} entries, {rate:.0} entries/s", p.entries));
        }
    });
    bar.finish_and_clear();
    let report = result.map_err(|e| format!("import into {} failed: {e}", a.data.display()))?;
    let settings = a
        .config
        .as_ref()
        .map(|path| ServerConfig::load(path).map_err(|e| e.to_string()))
        .transpose()?;
    let uniqueness = settings
        .as_ref()
        .map_or_else(UniquenessSettings::default, |c| c.uniqueness.clone());
    let sync_member_uid = settings.as_ref().is_some_and(|c| c.groups.sync_member_uid);
    let found = find_duplicates(&a.data, a.threads, imported_schema.clone(), &uniqueness)?;
    for d in &found {
        eprintln!("{}", import_unique::line(d));
    }
    if a.unique_strict && !found.is_empty() {
        return import_unique::refuse(&found, &a.data);
    }
    let repaired = repair_groups(
        &a.data,
        a.threads,
        imported_schema,
        sync_member_uid,
        !a.no_member_of,
    )?;
    let member_of = repaired.member_of;
    let secs = started.elapsed().as_secs_f64();
    let rate = per(report.entries as f64, secs);
    if a.json {
        println!(
            "{}",
            to_json(&json!({
                "entries": report.entries,
                "seconds": secs,
                "entries_per_sec": rate,
                "parse_seconds": report.parse_time.as_secs_f64(),
                "write_seconds": report.write_time.as_secs_f64(),
                "snapshot": report.snapshot.path,
                "snapshot_bytes": report.snapshot.bytes,
                "member_uid_groups_updated": repaired.member_uid,
                "member_of_updated": member_of.map(|r| r.member_of),
                "transitive_member_of_updated": member_of.map(|r| r.transitive),
                "duplicates": found.len(),
            }))?
        );
    } else {
        println!(
            "imported {} entries in {secs:.2} s ({rate:.0} entries/s; reading and checking {:.2} s, \
             writing the snapshot {:.2} s); snapshot {} ({:.1} MB)",
            report.entries,
            report.parse_time.as_secs_f64(),
            report.write_time.as_secs_f64(),
            report.snapshot.path.display(),
            mb(report.snapshot.bytes),
        );
        if let Some(n) = repaired.member_uid {
            println!("member and memberUid brought in step: {n} POSIX groups updated");
        }
        if let Some(r) = member_of {
            println!(
                "memberOf computed from the groups: {} memberOf and {} transitiveMemberOf values updated",
                r.member_of, r.transitive
            );
        }
        if !found.is_empty() {
            println!(
                "{} duplicate values of unique attributes (listed above)",
                found.len()
            );
        }
    }
    Ok(())
}

/// Computes every entry's memberOf and transitiveMemberOf in the imported directory `dir`
/// and, when some changed, writes a new snapshot holding them; says how many changed.
pub(crate) fn repair_member_of(dir: &Path, threads: usize, schema: Arc<Schema>) -> Result<Repaired, String> {
    let repaired = repair_groups(dir, threads, schema, false, true)?;
    Ok(repaired.member_of.unwrap_or_default())
}

/// What [`repair_groups`] changed: `None` for what it was not asked to compute.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GroupRepairs {
    /// POSIX groups whose `member` or `memberUid` changed.
    pub member_uid: Option<usize>,
    /// memberOf and transitiveMemberOf values changed.
    pub member_of: Option<Repaired>,
}

/// In the imported directory `dir`, in one opening of the store: brings `member` and
/// `memberUid` of every POSIX group in step (with `member_uid`), then computes every
/// entry's memberOf and transitiveMemberOf (with `member_of`; after memberUid, whose
/// members count); when something changed, writes a new snapshot holding it.
pub(crate) fn repair_groups(
    dir: &Path,
    threads: usize,
    schema: Arc<Schema>,
    member_uid: bool,
    member_of: bool,
) -> Result<GroupRepairs, String> {
    if !member_uid && !member_of {
        return Ok(GroupRepairs::default());
    }
    let (store, _) = open_with(dir, threads, schema)?;
    let Some(groups) = GroupSchema::new(store.current().schema()) else {
        return with_store(&store, |_| {
            Ok(GroupRepairs {
                member_uid: member_uid.then_some(0),
                member_of: member_of.then(Repaired::default),
            })
        });
    };
    let posix = PosixGroups::new(groups.clone(), store.current().schema());
    let changed = (|| {
        let uids = match (&posix, member_uid) {
            (Some(posix), true) => Some(repair_member_uid(&store, posix).map_err(|e| {
                format!(
                    "bringing member and memberUid in step in {} failed: {e}",
                    dir.display()
                )
            })?),
            (None, true) => Some(0),
            (_, false) => None,
        };
        let of = if member_of {
            Some(
                repair_member_of_in(&store, &groups)
                    .map_err(|e| format!("computing memberOf in {} failed: {e}", dir.display()))?,
            )
        } else {
            None
        };
        Ok::<GroupRepairs, String>(GroupRepairs {
            member_uid: uids,
            member_of: of,
        })
    })();
    let wrote = matches!(&changed, Ok(r)
        if r.member_uid.unwrap_or(0) > 0 || r.member_of.is_some_and(|m| m.member_of + m.transitive > 0));
    let closed = store
        .close(wrote)
        .map_err(|e| format!("closing the store failed: {e}"));
    let changed = changed?;
    closed?;
    Ok(changed)
}

/// A bar over the input's octets when stderr is a terminal and the size is known, a
/// spinner when it is not known, nothing when stderr is not a terminal.
fn progress_bar(size: Option<u64>) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = match size {
        Some(total) => {
            let bar = ProgressBar::new(total);
            if let Ok(style) = ProgressStyle::with_template(
                "{elapsed_precise} [{wide_bar}] {bytes}/{total_bytes} {msg} (ETA {eta})",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        }
        None => {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{elapsed_precise} {spinner} {bytes} read, {msg}")
            {
                bar.set_style(style);
            }
            bar
        }
    };
    bar.enable_steady_tick(PROGRESS_TICK);
    bar
}

/// Opens the store in `dir`, which must exist (opening would otherwise create an empty
/// one, and an empty export or verification of a mistyped path helps nobody).
pub(crate) fn open(dir: &Path, threads: usize) -> Result<(Store, OpenReport), String> {
    open_with(dir, threads, schema()?)
}

/// [`open`] with the schema given.
pub(crate) fn open_with(
    dir: &Path,
    threads: usize,
    schema: Arc<Schema>,
) -> Result<(Store, OpenReport), String> {
    if !dir.is_dir() {
        return Err(format!(
            "{} is not a data directory (it does not exist)",
            dir.display()
        ));
    }
    let mut options = StoreOptions::new(dir, schema);
    options.threads = threads;
    options.snapshot_interval = None;
    options.snapshot_after_records = None;
    let opened =
        Store::open(options).map_err(|e| format!("cannot open the store in {}: {e}", dir.display()))?;
    // What loading freed (the file buffer, the keys sorted into the indexes) goes back to
    // the OS now, as the server does after its load.
    crate::alloc::release_free_memory();
    Ok(opened)
}

/// Runs `f` on an open store, then closes it without a snapshot, whatever `f` returned.
pub(crate) fn with_store<T>(store: &Store, f: impl FnOnce(&Store) -> Result<T, String>) -> Result<T, String> {
    let result = f(store);
    let closed = store
        .close(false)
        .map_err(|e| format!("closing the store failed: {e}"));
    let value = result?;
    closed?;
    Ok(value)
}

/// `larch export`.
pub fn export(mut a: ExportArgs) -> Result<(), String> {
    let (schema, data, _) = with_config(&a.config, &a.data)?;
    a.data = data;
    let (store, _) = open_with(&a.data, 0, schema)?;
    with_store(&store, |store| {
        let version = store.current();
        let base = match &a.base {
            None => None,
            Some(b) => {
                let (_, norm) = NormDn::parse(b.as_bytes(), version.schema())
                    .map_err(|e| format!("--base `{b}`: {e}"))?;
                match version.find(&norm) {
                    Some(id) => Some(id),
                    None => {
                        return Err(format!(
                            "--base `{b}`: no such entry in {}; nothing exported",
                            a.data.display()
                        ))
                    }
                }
            }
        };
        let started = Instant::now();
        let (out, name): (Box<dyn Write>, String) = match &a.out {
            Some(p) => (
                Box::new(File::create(p).map_err(|e| format!("cannot create {}: {e}", p.display()))?),
                p.display().to_string(),
            ),
            None => (Box::new(std::io::stdout().lock()), "standard output".into()),
        };
        let mut writer = LdifWriter::new(BufWriter::with_capacity(OUTPUT_BUFFER, out));
        // No `version: 1` line: slapadd takes it for an attribute of the first entry, and
        // slapcat writes none either. transitiveMemberOf is Larch's own, derived from the
        // groups (an import computes it again): another server would not know the type.
        let leave_out: Vec<_> = version
            .schema()
            .attribute_type("transitiveMemberOf")
            .map(|t| t.id)
            .into_iter()
            .collect();
        let written = export_ldif_without(&version, base, &leave_out, &mut writer)
            .and_then(|n| writer.flush().map(|()| n));
        let n = match written {
            Ok(n) => n,
            Err(e) => {
                if let Some(p) = &a.out {
                    // A partial file would pass for a complete export.
                    let _ = std::fs::remove_file(p);
                }
                return Err(format!("writing {name} failed: {e}"));
            }
        };
        eprintln!(
            "exported {n} entries to {name} in {:.2} s",
            started.elapsed().as_secs_f64()
        );
        Ok(())
    })
}

/// The resident set size of this process, from `/proc/self/status` (Linux).
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// `larch verify`.
pub fn verify(mut a: VerifyArgs) -> Result<(), String> {
    let (schema, data, _) = with_config(&a.config, &a.data)?;
    a.data = data;
    let groups_settings = a
        .config
        .as_ref()
        .map(|path| ServerConfig::load(path).map_err(|e| e.to_string()))
        .transpose()?
        .map(|c| c.groups)
        .unwrap_or_default();
    let check_member_of = !a.no_member_of && groups_settings.member_of;
    let (store, report) = open_with(&a.data, a.threads, schema)?;
    let rss = resident_bytes();
    with_store(&store, |store| {
        let version = store.current();
        let entries = version.len();
        let heap = version.heap_bytes();
        let started = Instant::now();
        let check = version.check();
        let check_time = started.elapsed();
        let member_of = GroupSchema::new(version.schema())
            .filter(|_| check_member_of)
            .map(|g| member_of_mismatches(&version, &g))
            .unwrap_or_default();
        // None: not checked (`groups.sync_member_uid` off).
        let member_uid = GroupSchema::new(version.schema())
            .filter(|_| groups_settings.sync_member_uid)
            .and_then(|g| PosixGroups::new(g, version.schema()))
            .map(|p| member_uid_mismatches(&version, &p));
        let n = entries as f64;
        let per_entry = |bytes: usize| per(bytes as f64, n);
        if a.json {
            let cut = report.wal_cut.as_ref().map(|c| {
                json!({
                    "path": c.path,
                    "offset": c.offset,
                    "discarded": c.discarded,
                    "reason": c.reason.to_string(),
                })
            });
            let part = |bytes: usize| json!({"bytes": bytes, "per_entry": per_entry(bytes)});
            println!(
                "{}",
                to_json(&json!({
                    "data": a.data,
                    "entries": entries,
                    "lsn": version.lsn(),
                    "snapshot": report.snapshot.as_ref().map(|(p, lsn)| json!({"path": p, "lsn": lsn})),
                    "replayed": report.replayed,
                    "wal_cut": cut,
                    "removed_temp_files": report.removed_temp_files,
                    "load_seconds": report.load_time.as_secs_f64(),
                    "replay_seconds": report.replay_time.as_secs_f64(),
                    "rss_bytes": rss,
                    "rss_per_entry": rss.map(|r| per(r as f64, n)),
                    "heap": {
                        "entries": part(heap.entries),
                        "dn_index": part(heap.dn_index),
                        "children": part(heap.children),
                        "attribute_indexes": part(heap.attribute_indexes),
                        "total": part(heap.total()),
                    },
                    "check": {
                        "ok": check.is_ok(),
                        "error": check.as_ref().err(),
                        "seconds": check_time.as_secs_f64(),
                    },
                    "member_uid": member_uid.as_ref().map(|m| json!({
                        "ok": m.is_empty(),
                        "differing": m.iter().map(|g| json!({
                            "dn": g.dn, "missing_members": g.missing_members, "missing_member_uids": g.missing_uids,
                        })).collect::<Vec<_>>(),
                    })),
                    "member_of": {
                        "ok": member_of.is_empty(),
                        "differing": member_of.iter().map(|m| json!({
                            "attribute": m.attribute, "dn": m.dn, "found": m.found, "expected": m.expected,
                        })).collect::<Vec<_>>(),
                    },
                }))?
            );
        } else {
            println!("data directory   {}", a.data.display());
            println!("entries          {entries} (last LSN {})", version.lsn());
            match &report.snapshot {
                Some((p, lsn)) => println!("snapshot         {} (LSN {lsn})", p.display()),
                None => println!("snapshot         none (empty directory or log only)"),
            }
            println!("log replayed     {} records", report.replayed);
            match &report.wal_cut {
                Some(c) => println!(
                    "torn log tail    CUT: {} at offset {}, {} octets discarded ({})",
                    c.path.display(),
                    c.offset,
                    c.discarded,
                    c.reason
                ),
                None => println!("torn log tail    none"),
            }
            for p in &report.removed_temp_files {
                println!("removed          {} (an interrupted snapshot write)", p.display());
            }
            println!("load time        {:.3} s", report.load_time.as_secs_f64());
            println!("replay time      {:.3} s", report.replay_time.as_secs_f64());
            match rss {
                Some(r) => println!(
                    "resident memory  {:.1} MB ({:.0} octets per entry)",
                    mb(r),
                    per(r as f64, n)
                ),
                None => println!("resident memory  unknown (no /proc/self/status)"),
            }
            println!("heap, per entry:");
            for (name, bytes) in [
                ("entries", heap.entries),
                ("DN index", heap.dn_index),
                ("children", heap.children),
                ("attribute indexes", heap.attribute_indexes),
                ("total", heap.total()),
            ] {
                println!(
                    "  {name:<18} {:>10.1} MB {:>8.1} octets",
                    mb(bytes as u64),
                    per_entry(bytes)
                );
            }
            match &check {
                Ok(()) => println!("check            ok ({:.3} s)", check_time.as_secs_f64()),
                Err(e) => println!("check            FAILED: {e}"),
            }
            match member_uid.as_ref().map(|m| m.first()) {
                None => println!("memberUid        not checked (groups.sync_member_uid off)"),
                Some(None) => println!("memberUid        ok"),
                Some(Some(g)) => println!(
                    "memberUid        {} POSIX groups not in step; first: {} lacks members {:?} and memberUid values {:?}",
                    member_uid.as_ref().map_or(0, Vec::len),
                    g.dn,
                    g.missing_members,
                    g.missing_uids
                ),
            }
            match member_of.first() {
                None if !check_member_of => println!("memberOf         not checked"),
                None => println!("memberOf         ok"),
                Some(m) => println!(
                    "memberOf         {} values differ from the groups; first: {} of {} holds {:?}, the groups say {:?}",
                    member_of.len(),
                    m.attribute,
                    m.dn,
                    m.found,
                    m.expected
                ),
            }
        }
        check.map_err(|e| format!("{} fails its consistency check: {e}", a.data.display()))?;
        if let Some(g) = member_uid.as_ref().and_then(|m| m.first()) {
            return Err(format!(
                "{}: {} POSIX groups' member and memberUid are not in step (first: {})",
                a.data.display(),
                member_uid.as_ref().map_or(0, Vec::len),
                g.dn
            ));
        }
        match member_of.first() {
            None => Ok(()),
            Some(m) => Err(format!(
                "{}: {} memberOf or transitiveMemberOf values are not what the groups give (first: {} of {})",
                a.data.display(),
                member_of.len(),
                m.attribute,
                m.dn
            )),
        }
    })
}

/// `larch snapshot`.
pub fn snapshot(a: SnapshotArgs) -> Result<(), String> {
    let (store, _) = open(&a.data, a.threads)?;
    with_store(&store, |store| {
        let started = Instant::now();
        let written = store
            .snapshot()
            .map_err(|e| format!("the snapshot of {} failed: {e}", a.data.display()))?;
        match written {
            Some(info) => println!(
                "wrote {} at LSN {}: {} entries, {} chunks, {:.1} MB, in {:.2} s",
                info.path.display(),
                info.lsn,
                info.entries,
                info.chunks,
                mb(info.bytes),
                started.elapsed().as_secs_f64()
            ),
            None => println!(
                "nothing to write: the newest snapshot already covers LSN {}",
                store.current().lsn()
            ),
        }
        Ok(())
    })
}
