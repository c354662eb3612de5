//! `larch backup` and `larch restore` (`docs/backup.md`).
//!
//! - `backup -H URL -D DN -w PW --to DIR` asks a running server for a backup with Larch's
//!   backup extended operation: the server writes DIR on its own host while it serves (as
//!   389 DS's `dsconf backup create` does), so the command needs only an LDAP connection
//!   and the administrator's password, never access to the data directory;
//! - `backup --data DATA --to DIR` takes the same backup of a stopped server's data
//!   directory by opening it (nothing may have it open);
//! - `restore --from DIR --data DATA` checks the whole backup, then writes it into an empty
//!   data directory.
//!
//! Each prints one line on success and exits 0, or prints one line saying why and exits 1.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use larch_bench::url::LdapUrl;
use larch_proto::exop::{BackupRequest, BackupResponse, ExtendedValue, BACKUP};
use larch_proto::ResultCode;
use larch_store::backup::{restore, RestoreReport};
use larch_store::storage::FsStorage;
use larch_store::BackupOptions;

use crate::ldap_client::{runtime, Conn, Target};

/// The software named in the manifest of an offline backup.
const SOFTWARE: &str = concat!("larch ", env!("CARGO_PKG_VERSION"));

/// `larch backup`.
#[derive(Debug, Args)]
#[command(
    after_help = "Online (the server writes DIR on its own host while it serves; DIR must be an\n\
    absolute path that does not exist or is empty):\n  \
    larch backup -H ldap://127.0.0.1:389 -D cn=admin,dc=example,dc=com -y pwfile --to /var/backups/larch-1\n\
    Offline (a stopped server's data directory):\n  \
    larch backup --data ./larch-data --to /var/backups/larch-1"
)]
pub struct BackupArgs {
    /// Where to write the backup: an absolute path on the server's host, missing or empty.
    #[arg(long, value_name = "DIR")]
    pub to: PathBuf,
    /// Server URL: ldap://host[:389] or ldaps://host[:636].
    #[arg(
        short = 'H',
        long,
        default_value = "ldap://127.0.0.1:389",
        conflicts_with = "data"
    )]
    pub url: String,
    /// The administrator's DN (`directory.admin_dn`).
    #[arg(short = 'D', long, value_name = "DN", required_unless_present = "data")]
    pub bind_dn: Option<String>,
    /// The administrator's password.
    #[arg(short = 'w', long, value_name = "PASSWORD", conflicts_with_all = ["password_file", "data"])]
    pub password: Option<String>,
    /// A file holding the administrator's password (one trailing newline is ignored).
    #[arg(short = 'y', long, value_name = "FILE", conflicts_with = "data")]
    pub password_file: Option<PathBuf>,
    /// Send StartTLS on the ldap:// URL first.
    #[arg(long, conflicts_with = "data")]
    pub starttls: bool,
    /// PEM file of the CA certificates to trust for ldaps:// or StartTLS.
    #[arg(long, value_name = "PEM", conflicts_with = "data")]
    pub ca_file: Option<PathBuf>,
    /// Back up this stopped server's data directory instead (nothing may have it open).
    #[arg(long, value_name = "DATA")]
    pub data: Option<PathBuf>,
}

/// `larch restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The backup directory (written by `larch backup`).
    #[arg(long, value_name = "DIR")]
    pub from: PathBuf,
    /// The data directory to create: missing or empty.
    #[arg(long, value_name = "DATA")]
    pub data: PathBuf,
}

/// `larch backup`.
pub fn backup(a: BackupArgs) -> Result<(), String> {
    match &a.data {
        Some(data) => offline(data, &a.to),
        None => online(&a),
    }
}

/// `larch restore`.
pub fn restore_cmd(a: RestoreArgs) -> Result<(), String> {
    let data = absolute(&a.data)?;
    let RestoreReport {
        manifest, elapsed, ..
    } = restore(&FsStorage, &a.from, &data).map_err(|e| format!("restore refused: {e}"))?;
    println!(
        "restored {} into {}: LSN {} (snapshot at {}), {} entries, {:.1} MB, {:.2} s; serve it with `server.data_dir = \"{}\"` in larch.toml",
        a.from.display(),
        data.display(),
        manifest.end_lsn,
        manifest.snapshot_lsn,
        manifest.entries,
        manifest.total_bytes() as f64 / 1e6,
        elapsed.as_secs_f64(),
        data.display()
    );
    Ok(())
}

fn absolute(p: &Path) -> Result<PathBuf, String> {
    std::path::absolute(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// The offline form: opens the data directory as the other store commands do.
fn offline(data: &Path, to: &Path) -> Result<(), String> {
    let to = absolute(to)?;
    let (store, _) = crate::store_cmd::open(data, 0)?;
    let options = BackupOptions {
        software: SOFTWARE.to_string(),
        suffixes: Vec::new(),
        full_speed: true,
    };
    let taken = store.backup(&to, &options);
    store
        .close(false)
        .map_err(|e| format!("closing the store failed: {e}"))?;
    let report = taken.map_err(|e| format!("backup not taken: {e}"))?;
    let m = &report.manifest;
    summary(
        &to,
        m.end_lsn,
        m.snapshot_lsn,
        m.entries,
        m.total_bytes(),
        report.elapsed.as_secs_f64(),
    );
    Ok(())
}

fn summary(to: &Path, end: u64, snapshot: u64, entries: u64, octets: u64, seconds: f64) {
    println!(
        "backup written to {}: LSN {end} (snapshot at {snapshot}), {entries} entries, {:.1} MB, {seconds:.2} s",
        to.display(),
        octets as f64 / 1e6
    );
}

/// The online form: bind as the administrator, send the backup request, wait.
fn online(a: &BackupArgs) -> Result<(), String> {
    let target = Target {
        url: a.url.clone(),
        bind_dn: a.bind_dn.clone().unwrap_or_default(),
        password: a.password.clone(),
        password_file: a.password_file.clone(),
        starttls: a.starttls,
        ca_file: a.ca_file.clone(),
    };
    let started = Instant::now();
    let answer = runtime()?.block_on(async {
        let (c, url) = target.connect().await?;
        request(c, &url, &a.to).await
    })?;
    let done = BackupResponse::decode_value(answer.as_deref())
        .map_err(|e| format!("the server's answer to the backup does not decode: {e}"))?;
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    summary(
        &a.to,
        count(done.end_lsn),
        count(done.snapshot_lsn),
        count(done.entries),
        count(done.octets),
        started.elapsed().as_secs_f64(),
    );
    Ok(())
}

/// The backup request on a bound connection; its response value.
async fn request(mut c: Conn, url: &LdapUrl, to: &Path) -> Result<Option<Vec<u8>>, String> {
    let dir = to
        .to_str()
        .ok_or_else(|| format!("{}: the path is not UTF-8", to.display()))?;
    let mut value = Vec::new();
    BackupRequest {
        directory: dir.as_bytes(),
    }
    .encode_value(&mut value);
    let answer = c
        .extended(3, BACKUP, Some(&value))
        .await
        .map_err(|e| format!("backup request to {url}: {e}"))?;
    c.unbind(4).await;
    if answer.code != ResultCode::SUCCESS {
        let message = if answer.message.is_empty() {
            String::new()
        } else {
            format!(": {}", answer.message)
        };
        return Err(format!(
            "the server refused the backup ({}){message}",
            answer.code
        ));
    }
    Ok(answer.value)
}
