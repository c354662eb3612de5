//! `larch migrate`: from OpenLDAP in one step. Reads a slapd configuration (a `slapd.d`
//! directory or a `slapd.conf` file) and slapcat's LDIF, writes `DIR/larch.toml`, the
//! schema files it loads and a data directory, and reports each item of the configuration
//! and the data as carried over, changed in meaning or dropped, with where it came from.
//!
//! The steps, one module each:
//! 1. read the configuration into one model ([`slapd_d`] or [`slapd_conf`] -> [`model`]);
//!    an unknown directive or an unreadable file stops here, with its file and line;
//! 2. map it ([`plan`], with [`acl`] and [`overlays`]), loading every schema with Larch's
//!    loader, so a broken schema file stops here with its file and line;
//! 3. write ([`write`]: [`entries`] for the data through the import path, [`config_file`]
//!    for larch.toml, checked as `larch check-config` checks it), all or nothing;
//! 4. print the [`report`] (text, or JSON with `--json`). Exit status 0 when everything was
//!    carried over (changes in meaning included), 3 when something was dropped, 1 on an
//!    error, in which case nothing is written.

mod acl;
mod config_file;
mod directives;
mod entries;
mod error;
mod model;
mod overlays;
mod plan;
mod report;
mod slapd_conf;
mod slapd_d;
mod words;
mod write;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

pub use error::MigrateError;
use model::SlapdConfig;

/// `larch migrate`.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  \
    slapcat -F /etc/ldap/slapd.d -b dc=example,dc=com -l example.ldif\n  \
    larch migrate --slapd-config /etc/ldap/slapd.d --ldif example.ldif --out /var/lib/larch-migrated\n\n\
    Writes DIR/larch.toml, DIR/schema/ and DIR/data (a new directory, all or nothing), and\n\
    prints what was carried over, changed in meaning or dropped, each with its slapd line.\n\
    Exit status 0: everything carried over; 3: something was dropped; 1: an error (nothing\n\
    written). See docs/migration.md.")]
pub struct MigrateArgs {
    /// slapd's configuration: a slapd.d directory (cn=config) or a slapd.conf file.
    #[arg(long, value_name = "PATH")]
    pub slapd_config: PathBuf,
    /// slapcat's output (repeat for one file per database).
    #[arg(long, value_name = "FILE", required = true)]
    pub ldif: Vec<PathBuf>,
    /// The directory to create: larch.toml, schema/, data/.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Parsing threads of the import (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

/// Reads the configuration in whichever form it is.
fn read_config(path: &std::path::Path) -> Result<SlapdConfig, MigrateError> {
    if path.is_dir() {
        if !path.join("cn=config.ldif").is_file() {
            return Err(MigrateError::new(format!(
                "{} is a directory without cn=config.ldif: not a slapd.d",
                path.display()
            )));
        }
        slapd_d::read(path)
    } else {
        slapd_conf::read(path)
    }
}

/// `larch migrate`: the report on standard output, then exit status 0 or 3; or one line
/// on standard error and exit status 1.
pub fn migrate(a: MigrateArgs) -> ExitCode {
    match run(&a) {
        Ok(report) => {
            if a.json {
                match serde_json::to_string_pretty(&report.to_json()) {
                    Ok(s) => println!("{s}"),
                    Err(e) => {
                        eprintln!("larch migrate: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                print!("{}", report.to_text());
                println!("wrote {}", a.out.join("larch.toml").display());
            }
            ExitCode::from(report.exit_status())
        }
        Err(e) => {
            eprintln!("larch migrate: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(a: &MigrateArgs) -> Result<report::Report, MigrateError> {
    for l in &a.ldif {
        if !l.is_file() {
            return Err(MigrateError::new(format!("{}: no such LDIF file", l.display())));
        }
    }
    let config = read_config(&a.slapd_config)?;
    let mut plan = plan::plan(&config)?;
    let data = write::write(&plan, &a.ldif, &a.out, a.threads)?;
    plan.report.extend(data);
    Ok(std::mem::take(&mut plan.report))
}
