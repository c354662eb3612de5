//! `larch check-config FILE`: everything `larch serve --config FILE` would refuse at
//! start, said at once, without binding a socket or opening the store.
//!
//! The file is read by `ServerConfig::check_with`, the function `larch serve` reads it
//! with, so the two cannot disagree; it reports every error it can find with its key path,
//! line and column (which errors can be found together, and which wait for an earlier one
//! to be mended, is documented in `larch_server::config`'s `read` module). When the file
//! is accepted, what serve reads next is checked too: the `[tls]` certificate, key and
//! client CA files (read and parsed as serve loads them), and the data directory (an
//! existing, writable directory, or a writable parent to create it in).

use std::path::{Path, PathBuf};

use clap::Args;
use larch_server::config::ServerConfig;
use larch_server::tls::TlsState;
use rustix::fs::{access, Access};

/// `larch check-config`.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  \
    larch check-config /etc/larch/larch.toml\n\n\
    On success, `FILE: ok` and a summary on standard output; otherwise every error found, one\n\
    per line as `FILE:LINE:COLUMN: `key`: what is wrong`, then `larch check-config: FILE: N\n\
    errors` on standard error. Exit status 0 or 1.")]
pub struct CheckConfigArgs {
    /// The configuration file (larch.toml).
    pub file: PathBuf,
}

/// `larch check-config`.
pub fn check_config(a: CheckConfigArgs) -> Result<(), String> {
    let file = a.file.display();
    let (config, errors) = match ServerConfig::check_with(&a.file, |_| {}) {
        Ok(config) => {
            let problems = start_checks(&config);
            (Some(config), problems)
        }
        Err(errors) => (None, errors.iter().map(ToString::to_string).collect()),
    };
    match config {
        Some(config) if errors.is_empty() => {
            println!("{file}: ok");
            println!("{}", summary(&config));
            Ok(())
        }
        _ => {
            for e in &errors {
                eprintln!("{e}");
            }
            let n = errors.len();
            Err(format!("{file}: {n} error{}", if n == 1 { "" } else { "s" }))
        }
    }
}

/// What `larch serve` reads after the configuration, before it opens the store: every
/// problem, one line each.
fn start_checks(config: &ServerConfig) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(tls) = &config.tls {
        if let Err(e) = TlsState::load(tls) {
            problems.push(format!("[tls]: {e}"));
        }
    }
    if let Err(e) = data_dir_usable(&config.server.data_dir) {
        problems.push(format!("`server.data_dir`: {e}"));
    }
    problems
}

/// An existing directory this process may write in, or a missing one whose parent is
/// such a directory (serve creates it).
fn data_dir_usable(dir: &Path) -> Result<(), String> {
    let writable = |d: &Path| access(d, Access::WRITE_OK | Access::EXEC_OK).is_ok();
    if dir.exists() {
        if !dir.is_dir() {
            return Err(format!("{} exists and is not a directory", dir.display()));
        }
        if !writable(dir) {
            return Err(format!("{} is not writable", dir.display()));
        }
        return Ok(());
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(format!(
            "{} does not exist, nor does its parent {} (serve creates only the last directory)",
            dir.display(),
            parent.display()
        ));
    }
    if !writable(parent) {
        return Err(format!(
            "{} does not exist and its parent {} is not writable",
            dir.display(),
            parent.display()
        ));
    }
    Ok(())
}

/// Listeners, naming contexts, access rules, data directory.
fn summary(c: &ServerConfig) -> String {
    let listeners: Vec<String> = c.server.listen.iter().map(ToString::to_string).collect();
    let suffixes: Vec<&str> = c.suffixes().collect();
    let rules = if c.access.rules.is_empty() {
        "none (the default policy)".to_string()
    } else {
        c.access.rules.len().to_string()
    };
    format!(
        "  listeners     {} ({})\n  suffixes      {} ({})\n  access rules  {rules}\n  data          {}\n  tls           {}",
        listeners.len(),
        listeners.join(", "),
        suffixes.len(),
        suffixes.join("; "),
        c.server.data_dir.display(),
        if c.tls.is_some() { "on" } else { "off" },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_directories() {
        let base = std::env::temp_dir().join(format!("larch-check-config-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        assert!(data_dir_usable(&base).is_ok());
        assert!(data_dir_usable(&base.join("new")).is_ok());
        let e = data_dir_usable(&base.join("a/b")).unwrap_err();
        assert!(e.contains("nor does its parent"), "{e}");
        let f = base.join("file");
        std::fs::write(&f, "x").unwrap();
        assert!(data_dir_usable(&f).unwrap_err().contains("not a directory"));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
