//! A log's file (the access log's and the audit log's): appends, rotation by size and age
//! with a retention count, and reopening by name (for logrotate, on SIGHUP). Every write,
//! rename and removal goes through the store's [`Storage`] trait, so tests can make the
//! disk fail; only the look at what kind of file the path names does not.
//!
//! Rotation, in steps (as 389 Directory Server names its rotated logs):
//! 1. the file is renamed `NAME.YYYYmmdd-HHMMSS` (UTC, the time of rotation; further
//!    rotations in the same second add `.1`, `.2`..., one more than the highest there);
//! 2. a new, empty `NAME` is opened;
//! 3. rotated files beyond `keep` are removed, oldest first: ordered by their time, then
//!    by their number (so `.10` comes after `.9`); files of other names are left alone.
//!
//! Only a regular file is rotated: a path that names something else, or a link to it
//! (`/dev/null`, a FIFO, a terminal), is written to as it is and never renamed, so that
//! `path = "/dev/null"` cannot move the system's `/dev/null` away.
//!
//! A failed write is never retried in place (the octets may be half written): the lines
//! of that batch are counted as lost, the file is reopened before the next batch, and the
//! failure is reported once per run of failures.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use larch_store::storage::{AppendFile, Storage};

use super::time::civil_date;

/// How the file is rotated.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rotation {
    /// Rotate after this many octets (0: never by size).
    pub max_size: u64,
    /// Rotate once the file is this old.
    pub every: Option<Duration>,
    /// Rotated files kept.
    pub keep: u32,
}

/// The open log file.
pub(crate) struct LogFile {
    storage: Arc<dyn Storage>,
    path: PathBuf,
    rotation: Rotation,
    file: Option<Box<dyn AppendFile>>,
    /// Octets written since the file was opened by this process.
    written: u64,
    /// The path names a regular file (or a link to one): only then is it rotated.
    regular: bool,
    opened: Instant,
}

impl std::fmt::Debug for LogFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogFile").field("path", &self.path).finish()
    }
}

impl LogFile {
    /// Opens (creates) the file at `path`, and its directory.
    pub(crate) fn open(storage: Arc<dyn Storage>, path: PathBuf, rotation: Rotation) -> io::Result<LogFile> {
        let mut f = LogFile {
            storage,
            path,
            rotation,
            file: None,
            written: 0,
            regular: true,
            opened: Instant::now(),
        };
        f.reopen()?;
        Ok(f)
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Closes the file and opens `path` again (a file logrotate moved away is replaced
    /// by a new one).
    pub(crate) fn reopen(&mut self) -> io::Result<()> {
        self.file = None;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            self.storage.create_dir_all(dir)?;
        }
        self.file = Some(self.storage.open_append(&self.path)?);
        self.regular = std::fs::metadata(&self.path).map_or(true, |m| m.file_type().is_file());
        self.written = 0;
        self.opened = Instant::now();
        Ok(())
    }

    /// Appends `octets` (whole lines), rotating first when due. On an error the file is
    /// closed, to be reopened by the next call.
    pub(crate) fn append(&mut self, octets: &[u8]) -> io::Result<()> {
        if self.file.is_none() {
            self.reopen()?;
        }
        if self.rotation_due() {
            self.rotate()?;
        }
        let Some(file) = self.file.as_mut() else {
            return Err(io::Error::other("the log file is not open"));
        };
        match file.write_all(octets) {
            Ok(()) => {
                self.written += octets.len() as u64;
                Ok(())
            }
            Err(e) => {
                self.file = None;
                Err(e)
            }
        }
    }

    /// Flushes what was written to the disk (at close).
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        match self.file.as_mut() {
            Some(f) => f.sync(),
            None => Ok(()),
        }
    }

    fn rotation_due(&self) -> bool {
        let r = &self.rotation;
        let by_size = r.max_size > 0 && self.written >= r.max_size;
        let by_age = r
            .every
            .is_some_and(|every| self.opened.elapsed() >= every && self.written > 0);
        self.regular && (by_size || by_age)
    }

    /// Steps 1 to 3 of the module documentation.
    fn rotate(&mut self) -> io::Result<()> {
        if let Some(mut f) = self.file.take() {
            let _ = f.sync();
        }
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = self.path.parent().map(Path::to_path_buf).unwrap_or_default();
        let stamp = rotation_stamp(SystemTime::now());
        let same_second = self
            .storage
            .list(&dir)
            .unwrap_or_default()
            .iter()
            .filter_map(|f| rotated_order(&name, f))
            .filter(|(t, _)| *t == stamp)
            .map(|(_, n)| n)
            .max();
        let rotated = match same_second {
            None => format!("{name}.{stamp}"),
            Some(n) => format!("{name}.{stamp}.{}", n + 1),
        };
        self.storage.rename(&self.path, &dir.join(&rotated))?;
        self.reopen()?;
        self.remove_old(&dir, &name);
        Ok(())
    }

    /// Removes rotated files beyond `keep`, oldest first.
    fn remove_old(&self, dir: &Path, name: &str) {
        let mut rotated: Vec<((String, u64), String)> = self
            .storage
            .list(dir)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|f| rotated_order(name, &f).map(|order| (order, f)))
            .collect();
        rotated.sort();
        let excess = rotated.len().saturating_sub(self.rotation.keep as usize);
        for (_, old) in &rotated[..excess] {
            let _ = self.storage.remove(&dir.join(old));
        }
    }
}

/// The order of `file` among the rotated files of `name` (`NAME.YYYYmmdd-HHMMSS[.N]`): its
/// time stamp, then its number (0 without one); `None` for any other file.
fn rotated_order(name: &str, file: &str) -> Option<(String, u64)> {
    let rest = file.strip_prefix(name)?.strip_prefix('.')?;
    let (stamp, n) = match rest.split_once('.') {
        Some((stamp, n)) => (stamp, n.parse().ok()?),
        None => (rest, 0),
    };
    let well_formed = stamp.len() == 15
        && stamp
            .char_indices()
            .all(|(i, c)| if i == 8 { c == '-' } else { c.is_ascii_digit() });
    well_formed.then(|| (stamp.to_string(), n))
}

/// `YYYYmmdd-HHMMSS` in UTC.
fn rotation_stamp(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_date(secs / 86_400);
    let s = secs % 86_400;
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use larch_store::storage::FsStorage;

    #[test]
    fn stamps_are_calendar_dates() {
        assert_eq!(rotation_stamp(UNIX_EPOCH), "19700101-000000");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_702_043); // 2026-11-26 14:07:23
        assert_eq!(rotation_stamp(t), "20261126-140723");
    }

    #[test]
    fn rotated_files_order_by_time_then_number() {
        let mut names = vec![
            "access.20261126-140723.10",
            "access.20261126-140723.2",
            "access.20261126-140724",
            "access.20261126-140723",
            "access.20261126-140723.1",
        ];
        names.sort_by_key(|n| rotated_order("access", n).unwrap());
        assert_eq!(
            names,
            [
                "access.20261126-140723",
                "access.20261126-140723.1",
                "access.20261126-140723.2",
                "access.20261126-140723.10",
                "access.20261126-140724"
            ]
        );
        for other in [
            "access",
            "access.gz",
            "access.20261126-140723.x",
            "access.moved.1",
            "audit.20261126-140723",
        ] {
            assert_eq!(rotated_order("access", other), None, "{other}");
        }
    }

    #[test]
    fn rotation_by_size_keeps_the_newest_files() {
        let dir = std::env::temp_dir().join(format!("larch-logfile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let storage: Arc<dyn Storage> = Arc::new(FsStorage);
        let rotation = Rotation {
            max_size: 100,
            every: None,
            keep: 2,
        };
        let mut f = LogFile::open(storage, dir.join("access"), rotation).unwrap();
        let line = [b'x'; 60];
        for _ in 0..10 {
            f.append(&line).unwrap();
        }
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        // The live file and at most two rotated ones; every file holds whole appends.
        assert_eq!(
            names.iter().filter(|n| n.starts_with("access.")).count(),
            2,
            "{names:?}"
        );
        for n in &names {
            let len = std::fs::metadata(dir.join(n)).unwrap().len();
            assert!(len % 60 == 0 && len <= 120, "{n}: {len}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_path_that_is_not_a_regular_file_is_never_rotated() {
        // A link to /dev/null: were it rotated, the link (not /dev/null) would be renamed
        // and a regular file made in its place.
        let dir = std::env::temp_dir().join(format!("larch-logfile-null-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("access");
        std::os::unix::fs::symlink("/dev/null", &path).unwrap();
        let storage: Arc<dyn Storage> = Arc::new(FsStorage);
        let rotation = Rotation {
            max_size: 100,
            every: Some(Duration::from_nanos(1)),
            keep: 2,
        };
        let mut f = LogFile::open(storage, path.clone(), rotation).unwrap();
        for _ in 0..10 {
            f.append(&[b'x'; 60]).unwrap();
        }
        f.reopen().unwrap();
        f.append(&[b'x'; 60]).unwrap();
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["access"]);
        assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_symlink());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
