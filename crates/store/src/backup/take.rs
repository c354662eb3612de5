//! Taking a backup: the snapshot written from an old version into the target, the log
//! segments after it copied up to the end LSN, the manifest last (steps 3 to 6 of the
//! module documentation of [`crate::backup`]; [`crate::Store::backup`] does steps 1 and 2).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::files::{checksum, create_dir, sync_dir, write_atomically, write_new};
use super::manifest::{
    snapshot_path, FileEntry, Manifest, MANIFEST_NAME, MANIFEST_TEMP_NAME, SNAPSHOT_SUBDIR, WAL_SUBDIR,
};
use super::{check_target, BackupError};
use crate::snapshot::{write_snapshot_with, SnapshotMeta, WriteOptions};
use crate::storage::Storage;
use crate::version::Version;
use crate::wal::{decode_header, decode_record, list_segments, segment_name, Lsn, SEGMENT_HEADER_LEN};

/// Share of one core an online backup's snapshot may keep busy: half of the scheduled
/// snapshots' [`crate::DEFAULT_SNAPSHOT_DUTY_CYCLE`]. A backup is asked for while the server
/// serves, often under load; on the 2-core machine a search load saturating both cores kept
/// 71% to 102% of its rate (median 76%) with 0.5 and a 1M-entry backup took 8 to 11 s
/// (`docs/benchmarks.md`, "Online backup of 1M entries"); a quarter of a core halves that
/// cost for about twice the time.
pub const BACKUP_DUTY_CYCLE: f64 = 0.25;

/// What the caller adds to a backup.
#[derive(Debug, Clone, Default)]
pub struct BackupOptions {
    /// The software taking it, written in the manifest (e.g. `larch 0.1.0`).
    pub software: String,
    /// The configured naming contexts, written in the manifest.
    pub suffixes: Vec<String>,
    /// Write the snapshot on every core at full speed (offline); otherwise it is paced
    /// like the store's scheduled snapshots, so reads and writes keep their pace.
    pub full_speed: bool,
}

/// What a backup holds.
#[derive(Debug, Clone)]
pub struct BackupReport {
    /// The backup directory.
    pub dir: PathBuf,
    /// Its manifest, as written.
    pub manifest: Manifest,
    /// How long taking it took.
    pub elapsed: Duration,
}

/// What the store hands a backup: its files, the version to write, and the log's state.
pub(crate) struct Source<'a> {
    pub storage: &'a dyn Storage,
    /// The live log's directory.
    pub wal_dir: &'a Path,
    /// The version the snapshot is written from, and its header.
    pub version: &'a Version,
    pub meta: SnapshotMeta,
    pub write: WriteOptions,
    /// The log's durable LSN, read after the snapshot is written.
    pub durable_lsn: &'a dyn Fn() -> Lsn,
    /// Held while the snapshot is written: one snapshot at a time, so a scheduled one
    /// waits rather than doubling the load.
    pub snapshot_lock: &'a Mutex<()>,
}

/// Steps 3 to 6 into `to`, which [`check_target`] accepted.
pub(crate) fn take(
    src: &Source<'_>,
    to: &Path,
    options: &BackupOptions,
) -> Result<BackupReport, BackupError> {
    let started = Instant::now();
    let storage = src.storage;
    let mut manifest = Manifest {
        software: options.software.clone(),
        created_unix_secs: 0,
        snapshot_lsn: src.version.lsn,
        end_lsn: src.version.lsn,
        entries: src.version.len() as u64,
        suffixes: options.suffixes.clone(),
        files: Vec::new(),
    };
    // A name the manifest cannot carry is refused before anything is written.
    manifest.encode().map_err(|problem| BackupError::Target {
        path: to.to_path_buf(),
        problem,
    })?;
    check_target(storage, to, "backup directory")?;
    let snapshots = to.join(SNAPSHOT_SUBDIR);
    let wal = to.join(WAL_SUBDIR);
    for dir in [to, &snapshots, &wal] {
        create_dir(storage, dir)?;
    }
    let info = {
        let _one = src.snapshot_lock.lock().unwrap_or_else(|e| e.into_inner());
        write_snapshot_with(
            storage,
            &snapshots,
            &src.meta,
            src.version.entries.iter().map(|(id, r)| (id, r.as_bytes())),
            &src.write,
        )
        .map_err(|e| BackupError::Source(format!("the backup's snapshot could not be written: {e}")))?
    };
    let (size, crc32c) = checksum(storage, &info.path)?;
    manifest.files.push(FileEntry {
        path: snapshot_path(info.lsn),
        size,
        crc32c,
    });
    manifest.end_lsn = (src.durable_lsn)().max(src.version.lsn);
    manifest.files.extend(copy_log(
        storage,
        src.wal_dir,
        &wal,
        manifest.snapshot_lsn,
        manifest.end_lsn,
    )?);
    sync_dir(storage, &wal)?;
    manifest.created_unix_secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let text = manifest.encode().map_err(BackupError::Source)?;
    write_atomically(storage, to, MANIFEST_TEMP_NAME, MANIFEST_NAME, text.as_bytes())?;
    if let Some(parent) = to.parent() {
        sync_dir(storage, parent)?;
    }
    Ok(BackupReport {
        dir: to.to_path_buf(),
        manifest,
        elapsed: started.elapsed(),
    })
}

/// Step 5: copies the records `after + 1 ..= end` of the log in `wal_dir` into `to`, one
/// file per segment holding any of them, each cut after record `end` (records at or before
/// `after` in the first segment come along; replay skips them). Every record copied is
/// checked (checksum, LSN sequence) as it is read.
fn copy_log(
    storage: &dyn Storage,
    wal_dir: &Path,
    to: &Path,
    after: Lsn,
    end: Lsn,
) -> Result<Vec<FileEntry>, BackupError> {
    let mut copied = Vec::new();
    let mut next = after.saturating_add(1);
    if end < next {
        return Ok(copied);
    }
    let source =
        |problem: String| BackupError::Source(format!("the log in {}: {problem}", wal_dir.display()));
    let segments = list_segments(storage, wal_dir).map_err(|e| source(e.to_string()))?;
    for (i, seg) in segments.iter().enumerate() {
        if next > end {
            break;
        }
        if segments.get(i + 1).is_some_and(|n| n.first_lsn <= next) {
            continue; // every record of it is before `next`
        }
        if seg.first_lsn > next {
            return Err(source(format!(
                "LSN {next} is missing (a segment starts at {})",
                seg.first_lsn
            )));
        }
        let data = storage
            .read(&seg.path)
            .map_err(BackupError::io("read", &seg.path))?;
        let version = match decode_header(&data) {
            Ok(header) if header.first_lsn == seg.first_lsn => header.version,
            _ => return Err(source(format!("{}: bad segment header", seg.path.display()))),
        };
        let mut offset = SEGMENT_HEADER_LEN;
        let mut lsn = seg.first_lsn;
        while offset < data.len() && lsn <= end {
            let frame = decode_record(&data, offset, lsn, version).map_err(|problem| {
                source(format!(
                    "{}: record at offset {offset}: {problem}",
                    seg.path.display()
                ))
            })?;
            offset = frame.end;
            lsn += 1;
        }
        let kept = data.get(..offset).unwrap_or_default();
        let name = segment_name(seg.first_lsn);
        write_new(storage, &to.join(&name), kept)?;
        copied.push(FileEntry {
            path: format!("{WAL_SUBDIR}/{name}"),
            size: kept.len() as u64,
            crc32c: crc32c::crc32c(kept),
        });
        next = lsn;
    }
    if next <= end {
        return Err(source(format!(
            "the log ends before LSN {end} (at LSN {})",
            next - 1
        )));
    }
    Ok(copied)
}
