//! The error log of `larch serve`: the server's own messages (`tracing` events, from this
//! crate and from larch-server) written to standard error or a file, as text or JSON lines,
//! from the level `[error_log]` names (see `docs/logs.md`).
//!
//! The subscriber, in layers:
//! 1. a level filter inside a [`reload::Layer`], so that SIGHUP can swap it for another
//!    level without a restart ([`set_level`]; the swap rebuilds tracing's per-callsite
//!    interest cache, so the new level holds from the next event on);
//! 2. the formatter: tracing-subscriber's text format (time, level, target, message,
//!    fields) or its JSON lines with the message's fields at the top level;
//! 3. the writer: standard error, or an [`ErrorLogFile`] appended to under a lock (one
//!    write per message) and reopened by name on SIGHUP (for logrotate).
//!
//! Messages printed before the configuration is read (an error in it) do not go through
//! here: they are said on standard error by `main`.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use larch_server::config::{ErrorLogFormat, ErrorLogLevel, ErrorLogSettings};
use tracing::Subscriber;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Layered, SubscriberExt};
use tracing_subscriber::{fmt, reload, Layer, Registry};

/// The handle that swaps the level filter of an installed subscriber.
pub type LevelHandle = reload::Handle<LevelFilter, Registry>;

/// The file mode of a new error log file: it may hold the generated admin password (the
/// first start writes it there), so only the server's user reads it.
const FILE_MODE: u32 = 0o600;

/// The filter that lets through the messages of `level` and of every more severe level.
pub fn level_filter(level: ErrorLogLevel) -> LevelFilter {
    match level {
        ErrorLogLevel::Error => LevelFilter::ERROR,
        ErrorLogLevel::Warn => LevelFilter::WARN,
        ErrorLogLevel::Info => LevelFilter::INFO,
        ErrorLogLevel::Debug => LevelFilter::DEBUG,
        ErrorLogLevel::Trace => LevelFilter::TRACE,
    }
}

/// Swaps the filter behind `handle` for the one of `level`; the next event is filtered by
/// it. Fails only when the subscriber is gone or its lock poisoned.
pub fn set_level<S>(handle: &reload::Handle<LevelFilter, S>, level: ErrorLogLevel) -> Result<(), String> {
    handle
        .reload(level_filter(level))
        .map_err(|e| format!("cannot change the error log level: {e}"))
}

/// The subscriber below the formatter: the registry and the reloadable level filter.
type Filtered = Layered<reload::Layer<LevelFilter, Registry>, Registry>;

/// Builds the subscriber of the module doc, writing to `writer`, and the handle of its
/// level filter. Not installed: [`ErrorLog::install`] makes it the process's, tests use it
/// with `tracing::subscriber::with_default`.
pub fn subscriber<W>(
    format: ErrorLogFormat,
    level: ErrorLogLevel,
    writer: W,
) -> (impl Subscriber + Send + Sync + 'static, LevelHandle)
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let (filter, handle) = reload::Layer::new(level_filter(level));
    let formatter: Box<dyn Layer<Filtered> + Send + Sync> = match format {
        ErrorLogFormat::Text => fmt::layer().with_ansi(false).with_writer(writer).boxed(),
        ErrorLogFormat::Json => fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .with_writer(writer)
            .boxed(),
    };
    (Registry::default().with(filter).with(formatter), handle)
}

/// The installed error log: where it writes, and its level, which SIGHUP may change.
pub struct ErrorLog {
    handle: LevelHandle,
    level: Mutex<ErrorLogLevel>,
    file: Option<Arc<ErrorLogFile>>,
}

impl ErrorLog {
    /// Opens the file of `settings` (if any) and makes the subscriber writing to it the
    /// process's. Called once, before anything is logged.
    pub fn install(settings: &ErrorLogSettings) -> Result<ErrorLog, String> {
        let file = match &settings.path {
            None => None,
            Some(p) => {
                Some(Arc::new(ErrorLogFile::open(p).map_err(|e| {
                    format!("cannot open the error log {}: {e}", p.display())
                })?))
            }
        };
        let handle = match &file {
            None => set_global(settings.format, settings.level, io::stderr)?,
            Some(f) => set_global(settings.format, settings.level, SharedFile(Arc::clone(f)))?,
        };
        Ok(ErrorLog {
            handle,
            level: Mutex::new(settings.level),
            file,
        })
    }

    /// The file written to, `None` for standard error.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref().map(ErrorLogFile::path)
    }

    /// The level in force.
    pub fn level(&self) -> ErrorLogLevel {
        *self.level.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the level in force at once.
    pub fn set_level(&self, level: ErrorLogLevel) -> Result<(), String> {
        let mut current = self.level.lock().unwrap_or_else(|e| e.into_inner());
        set_level(&self.handle, level)?;
        *current = level;
        Ok(())
    }

    /// Reopens the file by name (after logrotate moved it); nothing for standard error.
    /// On failure the file open until now is kept.
    pub fn reopen(&self) -> io::Result<()> {
        match &self.file {
            Some(f) => f.reopen(),
            None => Ok(()),
        }
    }
}

fn set_global<W>(format: ErrorLogFormat, level: ErrorLogLevel, writer: W) -> Result<LevelHandle, String>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let (subscriber, handle) = subscriber(format, level, writer);
    tracing::subscriber::set_global_default(subscriber)
        .map_err(|e| format!("cannot install the error log: {e}"))?;
    Ok(handle)
}

/// The error log's file: opened for appending (its directory created), written one
/// message at a time under a lock, reopened by name on request.
#[derive(Debug)]
pub struct ErrorLogFile {
    path: PathBuf,
    file: Mutex<File>,
}

impl ErrorLogFile {
    /// Opens (creates) the file at `path`, and its directory.
    pub fn open(path: &Path) -> io::Result<ErrorLogFile> {
        Ok(ErrorLogFile {
            path: path.to_path_buf(),
            file: Mutex::new(open_append(path)?),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the path again and writes there from now on; on failure the open file is
    /// kept.
    pub fn reopen(&self) -> io::Result<()> {
        let new = open_append(&self.path)?;
        *self.lock() = new;
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, File> {
        self.file.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(FILE_MODE)
        .open(path)
}

/// The formatter's writer for an [`ErrorLogFile`]: each message is formatted whole, then
/// written under the file's lock, so lines of different threads never interleave.
struct SharedFile(Arc<ErrorLogFile>);

/// The file, locked for one message.
struct LockedFile<'a>(MutexGuard<'a, File>);

impl Write for LockedFile<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl<'a> MakeWriter<'a> for SharedFile {
    type Writer = LockedFile<'a>;

    fn make_writer(&'a self) -> LockedFile<'a> {
        LockedFile(self.0.lock())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer the test reads back.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Buffer {
        fn lines(&self) -> Vec<String> {
            let b = self.0.lock().unwrap();
            String::from_utf8(b.clone())
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect()
        }
    }

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Buffer {
        type Writer = Buffer;

        fn make_writer(&'a self) -> Buffer {
            self.clone()
        }
    }

    #[test]
    fn the_level_is_swapped_through_the_reload_handle() {
        let out = Buffer::default();
        let (subscriber, handle) = subscriber(ErrorLogFormat::Text, ErrorLogLevel::Warn, out.clone());
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("hidden at warn");
            tracing::warn!(n = 1, "shown at warn");
            set_level(&handle, ErrorLogLevel::Info).unwrap();
            tracing::info!("shown at info");
            tracing::debug!("hidden at info");
            set_level(&handle, ErrorLogLevel::Trace).unwrap();
            tracing::trace!("shown at trace");
            set_level(&handle, ErrorLogLevel::Error).unwrap();
            tracing::warn!("hidden at error");
            tracing::error!("shown at error");
        });
        let lines = out.lines();
        assert_eq!(lines.len(), 4, "{lines:#?}");
        for (line, (level, text)) in lines.iter().zip([
            (" WARN ", "shown at warn n=1"),
            (" INFO ", "shown at info"),
            ("TRACE ", "shown at trace"),
            ("ERROR ", "shown at error"),
        ]) {
            assert!(line.contains(level) && line.ends_with(text), "{line}");
            assert!(line.contains("larch::error_log::tests: "), "{line}");
        }
        // Once the subscriber is gone, a swap says so rather than pretending.
        assert!(set_level(&handle, ErrorLogLevel::Info).is_err());
    }

    #[test]
    fn every_level_lets_through_itself_and_what_is_more_severe() {
        use tracing::Level;
        for level in ErrorLogLevel::ALL {
            let f = level_filter(level);
            let shown: Vec<Level> = [Level::ERROR, Level::WARN, Level::INFO, Level::DEBUG, Level::TRACE]
                .into_iter()
                .filter(|l| f >= *l)
                .collect();
            assert_eq!(shown.len(), level as usize + 1, "{level}: {shown:?}");
            assert_eq!(f.to_string(), level.as_str());
        }
    }

    #[test]
    fn json_lines_carry_time_level_message_fields_and_target() {
        let out = Buffer::default();
        let (subscriber, _handle) = subscriber(ErrorLogFormat::Json, ErrorLogLevel::Info, out.clone());
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(entries = 12u64, dir = %"/var/lib/larch", "loaded the directory");
            tracing::debug!("hidden at info");
        });
        let lines = out.lines();
        assert_eq!(lines.len(), 1, "{lines:#?}");
        let v: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(v["level"], "INFO", "{v}");
        assert_eq!(v["message"], "loaded the directory", "{v}");
        assert_eq!(v["entries"], 12, "{v}");
        assert_eq!(v["dir"], "/var/lib/larch", "{v}");
        assert_eq!(v["target"], "larch::error_log::tests", "{v}");
        assert!(v["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{v}");
    }

    #[test]
    fn the_file_is_appended_to_and_reopened_by_name() {
        let dir = std::env::temp_dir().join(format!("larch-error-log-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("logs/error.log");
        let file = Arc::new(ErrorLogFile::open(&path).unwrap());
        assert_eq!(file.path(), path);
        let (subscriber, _handle) = subscriber(
            ErrorLogFormat::Text,
            ErrorLogLevel::Info,
            SharedFile(Arc::clone(&file)),
        );
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("first");
            // logrotate moves the file away; the next line still goes to the moved file
            // until the server is told to reopen.
            std::fs::rename(&path, dir.join("error.log.1")).unwrap();
            tracing::info!("second");
            file.reopen().unwrap();
            tracing::info!("third");
        });
        let read = |p: &Path| std::fs::read_to_string(p).unwrap();
        let old = read(&dir.join("error.log.1"));
        assert!(old.contains("first\n") && old.contains("second\n"), "{old}");
        let new = read(&path);
        assert_eq!(new.lines().count(), 1, "{new}");
        assert!(new.ends_with("third\n"), "{new}");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
