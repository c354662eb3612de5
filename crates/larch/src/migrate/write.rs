//! Writes the migration: `DIR/larch.toml`, `DIR/schema/*` and the data directory
//! `DIR/data`, all or nothing.
//!
//! In steps:
//! 1. everything is written into a staging directory beside `DIR`
//!    (`.DIR.migrating-PID`);
//! 2. the schema files, then the data (`entries::import`), then `larch.toml`;
//! 3. `larch.toml` is read back by `ServerConfig::check_with`, the function `larch serve`
//!    and `larch check-config` read it with; an access rule or an index Larch refuses
//!    there is left out and reported as dropped, and the file written again;
//! 4. the staging directory is renamed to `DIR`. On any error it is removed, so `DIR` is
//!    either complete or untouched.

use std::path::{Path, PathBuf};

use larch_server::config::ServerConfig;
use larch_server::password::hash_new;

use super::config_file::{self, DataFacts};
use super::entries::{self, Adjust, EntryStats};
use super::error::MigrateError;
use super::model::dn_key;
use super::plan::Plan;
use super::report::{Fate, Report};

/// Rounds of step 3 before giving up (each leaves out at least one rule or index).
const MAX_CHECK_ROUNDS: usize = 300;

/// Writes `plan` and the entries of `ldifs` into `out`; returns the report's data items.
pub fn write(plan: &Plan, ldifs: &[PathBuf], out: &Path, threads: usize) -> Result<Report, MigrateError> {
    if out.exists()
        && std::fs::read_dir(out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(MigrateError::new(format!(
            "{} exists and is not empty: migrate into a new directory",
            out.display()
        )));
    }
    let name = out
        .file_name()
        .ok_or_else(|| MigrateError::new(format!("{}: not a directory name", out.display())))?;
    let staging = out.with_file_name(format!(
        ".{}.migrating-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&staging);
    let result = write_into(plan, ldifs, &staging, threads).and_then(|report| {
        if out.exists() {
            std::fs::remove_dir(out).map_err(|e| MigrateError::new(format!("{}: {e}", out.display())))?;
        }
        std::fs::rename(&staging, out).map_err(|e| {
            MigrateError::new(format!(
                "cannot rename {} to {}: {e}",
                staging.display(),
                out.display()
            ))
        })?;
        Ok(report)
    });
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

fn io(path: &Path, e: std::io::Error) -> MigrateError {
    MigrateError::new(format!("cannot write {}: {e}", path.display()))
}

fn write_into(plan: &Plan, ldifs: &[PathBuf], dir: &Path, threads: usize) -> Result<Report, MigrateError> {
    let schema_dir = dir.join("schema");
    std::fs::create_dir_all(&schema_dir).map_err(|e| io(&schema_dir, e))?;
    for f in &plan.schema_files {
        let p = schema_dir.join(&f.name);
        std::fs::write(&p, &f.text).map_err(|e| io(&p, e))?;
    }
    let admin = admin_password(plan)?;
    let adjust = Adjust {
        strip: plan
            .maintained
            .iter()
            .filter(|a| plan.schema.attribute_type(a).is_none())
            .map(|a| a.to_ascii_lowercase())
            .collect(),
        excluded: plan.excluded_suffixes.clone(),
        admin: plan.admin.dn.clone().zip(admin),
    };
    let creator = plan.admin.dn.clone().unwrap_or_default();
    let stats = entries::import(
        ldifs,
        &dir.join("data"),
        plan.schema.clone(),
        &plan.suffixes,
        &creator,
        &adjust,
        threads,
    )?;
    let mut report = data_report(plan, &stats);
    if plan.groups.member_of {
        let data = dir.join("data");
        let changed = crate::store_cmd::repair_member_of(&data, threads, plan.schema.clone())
            .map_err(MigrateError::new)?
            .member_of;
        if changed == 0 {
            report.push(
                Fate::Carried,
                "memberOf values",
                "every entry's memberOf is what its groups give it",
                None,
            );
        } else {
            report.push(
                Fate::Changed,
                format!("memberOf of {changed} entries"),
                "recomputed from the groups that list them: slapd's values differed",
                None,
            );
        }
    }
    let facts = DataFacts {
        cleartext_passwords: stats.schemes.contains_key("cleartext")
            || stats.schemes.contains_key("{CLEARTEXT}"),
    };
    let config = dir.join("larch.toml");
    let (mut skip_rules, mut skip_indexes) = (Vec::new(), Vec::new());
    for _ in 0..MAX_CHECK_ROUNDS {
        let text = config_file::render(plan, facts, &skip_rules, &skip_indexes);
        std::fs::write(&config, text).map_err(|e| io(&config, e))?;
        let errors = match ServerConfig::check_with(&config, |_| {}) {
            Ok(_) => return Ok(report),
            Err(errors) => errors,
        };
        let before = skip_rules.len() + skip_indexes.len();
        for e in &errors {
            let key = e.key().unwrap_or("");
            if let Some(i) = key
                .strip_prefix("access[")
                .and_then(|r| r.split(']').next())
                .and_then(|n| n.parse::<usize>().ok())
            {
                // The index counts the rules written, which skip the ones already left out.
                let Some(i) = (0..plan.access.len()).filter(|j| !skip_rules.contains(j)).nth(i) else {
                    continue;
                };
                let rule = &plan.access[i];
                report.push(
                    Fate::Dropped,
                    &rule.text,
                    format!("Larch refuses the rule: {e}"),
                    Some(&rule.origin),
                );
                skip_rules.push(i);
            } else if let Some(attr) = key.strip_prefix("indexes.") {
                report.push(
                    Fate::Dropped,
                    format!("index {attr}"),
                    format!("Larch refuses the index: {e}"),
                    None,
                );
                skip_indexes.push(attr.trim_matches('"').to_string());
            }
        }
        if skip_rules.len() + skip_indexes.len() == before {
            let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
            return Err(MigrateError::new(format!(
                "the larch.toml written does not pass the configuration check: {}",
                all.join("; ")
            )));
        }
    }
    Err(MigrateError::new(
        "the larch.toml written does not pass the configuration check",
    ))
}

/// The admin's userPassword value: the rootPW's hash as it is, a cleartext rootPW hashed.
fn admin_password(plan: &Plan) -> Result<Option<Vec<u8>>, MigrateError> {
    let Some(pw) = &plan.admin.password else {
        return Ok(None);
    };
    match larch_server::password::parse_stored(pw.as_bytes()) {
        Some((larch_server::password::Scheme::Cleartext, clear)) => {
            let mut settings = larch_server::config::PasswordSettings::default();
            if let Some(name) = plan.password_scheme {
                if let Some(s) = larch_server::config::DefaultScheme::from_name(name) {
                    settings.default_scheme = s;
                }
            }
            hash_new(&settings, clear)
                .map(Some)
                .map_err(|e| MigrateError::new(format!("cannot hash the rootPW: {e}")))
        }
        _ => Ok(Some(pw.as_bytes().to_vec())),
    }
}

/// The report's items about the data.
fn data_report(plan: &Plan, s: &EntryStats) -> Report {
    let mut r = Report::default();
    r.push(
        Fate::Carried,
        format!("{} entries", s.entries),
        format!("imported into data/ under {}", plan.suffixes.join(", ")),
        None,
    );
    if s.with_uuid > 0 {
        r.push(
            Fate::Carried,
            "operational attributes (entryUUID, entryCSN, createTimestamp, creatorsName, modifiersName, modifyTimestamp)",
            format!("kept as slapcat wrote them ({} entries with an entryUUID)", s.with_uuid),
            None,
        );
    }
    if s.context_csns > 0 {
        r.push(
            Fate::Carried,
            format!("contextCSN ({} values)", s.context_csns),
            "kept on the suffix entries",
            None,
        );
    }
    for (scheme, n) in &s.schemes {
        if scheme == "cleartext" || scheme == "{CLEARTEXT}" {
            r.push(
                Fate::Changed,
                format!("userPassword {scheme} ({n} values)"),
                "kept; password.allow_cleartext = true so that they verify as in slapd (set new passwords, then turn it off)",
                None,
            );
        } else if larch_server::password::parse_stored(format!("{scheme}x").as_bytes()).is_some() {
            r.push(
                Fate::Carried,
                format!("userPassword {scheme} ({n} values)"),
                "kept as is; Larch verifies this scheme",
                None,
            );
        } else {
            r.push(
                Fate::Dropped,
                format!("userPassword {scheme} ({n} values)"),
                "kept as is, but Larch does not verify this scheme: these users cannot bind until given a new password",
                None,
            );
        }
    }
    for (attr, n) in &s.stripped {
        r.push(
            Fate::Dropped,
            format!("{attr} ({n} values)"),
            "left out of the entries: its overlay is not carried over and Larch's schema does not define it",
            None,
        );
    }
    if s.excluded > 0 {
        r.push(
            Fate::Changed,
            format!("{} entries of accesslog's database", s.excluded),
            "left out (see the accesslog overlay)",
            None,
        );
    }
    if let Some(dn) = &plan.admin.dn {
        let (fate, note) = if !s.admin_in_data {
            (
                Fate::Carried,
                format!("not in the data: added as an organizationalRole ({})", dn_key(dn)),
            )
        } else if s.admin_password_replaced {
            (
                Fate::Changed,
                "its userPassword is now the rootPW (slapd checked the rootPW for this DN, Larch checks the \
                 entry); the entry's own value is replaced"
                    .to_string(),
            )
        } else {
            (
                Fate::Carried,
                "its entry's userPassword is the rootPW already".to_string(),
            )
        };
        r.push(fate, format!("admin entry {dn}"), note, None);
    }
    r
}
