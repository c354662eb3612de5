//! Checking a backup before anything is restored from it: the manifest (present, its own
//! checksum, its structure), every file it lists (present, its size, its CRC32C), the
//! snapshot's own checks (every chunk, the directory, the totals; its LSN and entry count
//! equal to the manifest's), and the log's own checks (every segment header and record
//! checksum, an unbroken LSN sequence from the snapshot's next LSN to exactly the end LSN).
//! Files in the backup directory that the manifest does not list are ignored: restore
//! copies only what it lists.

use std::io::ErrorKind;
use std::path::Path;

use super::files::checksum;
use super::manifest::{Manifest, MANIFEST_NAME};
use super::BackupError;
use crate::snapshot::verify_snapshot;
use crate::storage::Storage;
use crate::wal::{decode_header, decode_record, Lsn, SEGMENT_HEADER_LEN};

/// Checks the backup in `from` as the module documentation says; returns its manifest.
pub fn verify_backup(storage: &dyn Storage, from: &Path) -> Result<Manifest, BackupError> {
    let manifest = read_manifest(storage, from)?;
    for f in &manifest.files {
        let path = from.join(&f.path);
        let (size, crc) = match checksum(storage, &path) {
            Err(BackupError::Io { source, .. }) if source.kind() == ErrorKind::NotFound => {
                return Err(BackupError::damaged(
                    &path,
                    "missing: the manifest lists it; the backup is incomplete",
                ))
            }
            other => other?,
        };
        if size != f.size {
            return Err(BackupError::damaged(
                &path,
                format!(
                    "{size} octets where the manifest says {}: the file is truncated or was changed",
                    f.size
                ),
            ));
        }
        if crc != f.crc32c {
            return Err(BackupError::damaged(
                &path,
                format!(
                    "CRC32C {crc:08x} where the manifest says {:08x}: the file is damaged",
                    f.crc32c
                ),
            ));
        }
    }
    check_snapshot(storage, from, &manifest)?;
    check_log(storage, from, &manifest)?;
    Ok(manifest)
}

/// The manifest, present and intact.
fn read_manifest(storage: &dyn Storage, from: &Path) -> Result<Manifest, BackupError> {
    let path = from.join(MANIFEST_NAME);
    let refuse = |problem: String| BackupError::Manifest {
        path: path.clone(),
        problem,
    };
    let data = match storage.read(&path) {
        Ok(d) => d,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(refuse(
                "missing: the backup is incomplete (taking it stopped before the end) or this is not a backup directory"
                    .into(),
            ))
        }
        Err(e) => return Err(BackupError::io("read", &path)(e)),
    };
    Manifest::parse(&data).map_err(|p| refuse(format!("damaged manifest: {p}")))
}

/// The snapshot's own checks, and its LSN and entry count against the manifest's.
fn check_snapshot(storage: &dyn Storage, from: &Path, manifest: &Manifest) -> Result<(), BackupError> {
    let Some(entry) = manifest.snapshot() else {
        return Err(BackupError::Manifest {
            path: from.join(MANIFEST_NAME),
            problem: "no snapshot is listed".into(),
        });
    };
    let path = from.join(&entry.path);
    let info = verify_snapshot(storage, &path).map_err(|e| {
        let text = e.to_string();
        let prefix = format!("{}: ", path.display());
        BackupError::damaged(&path, text.strip_prefix(&prefix).unwrap_or(&text))
    })?;
    if info.lsn != manifest.snapshot_lsn || info.entries != manifest.entries {
        return Err(BackupError::damaged(
            &path,
            format!(
                "LSN {} with {} entries where the manifest says LSN {} with {}",
                info.lsn, info.entries, manifest.snapshot_lsn, manifest.entries
            ),
        ));
    }
    Ok(())
}

/// Every record of every listed segment, and the LSNs they cover.
fn check_log(storage: &dyn Storage, from: &Path, manifest: &Manifest) -> Result<(), BackupError> {
    let needed = manifest.snapshot_lsn.saturating_add(1);
    let mut next: Option<Lsn> = None;
    for entry in manifest.segments() {
        let path = from.join(&entry.path);
        let data = storage.read(&path).map_err(BackupError::io("read", &path))?;
        let (first, version) = match decode_header(&data) {
            Ok(header) => (header.first_lsn, header.version),
            Err(problem) => {
                return Err(BackupError::damaged(
                    &path,
                    format!("bad segment header: {problem}"),
                ))
            }
        };
        match next {
            None if first > needed => {
                return Err(BackupError::damaged(
                    &path,
                    format!("the log starts at LSN {first}; the snapshot needs it from LSN {needed}"),
                ))
            }
            Some(n) if n != first => {
                return Err(BackupError::damaged(
                    &path,
                    format!("the segment starts at LSN {first}, expected {n}: a segment is missing"),
                ))
            }
            _ => {}
        }
        let mut offset = SEGMENT_HEADER_LEN;
        let mut lsn = first;
        let mut in_unit = false;
        while offset < data.len() {
            let frame = decode_record(&data, offset, lsn, version).map_err(|problem| {
                BackupError::damaged(&path, format!("log record at offset {offset}: {problem}"))
            })?;
            offset = frame.end;
            in_unit = frame.continues;
            lsn += 1;
        }
        // A backup ends at a published version, and units never span segments.
        if in_unit {
            return Err(BackupError::damaged(
                &path,
                format!(
                    "the segment ends inside a write of several records (LSN {})",
                    lsn - 1
                ),
            ));
        }
        next = Some(lsn);
    }
    let last = next.map_or(manifest.snapshot_lsn, |n| n - 1);
    if last != manifest.end_lsn {
        let shown = manifest
            .segments()
            .last()
            .map_or_else(|| from.join("wal"), |s| from.join(&s.path));
        return Err(BackupError::damaged(
            &shown,
            format!(
                "the log ends at LSN {last} where the manifest says {}",
                manifest.end_lsn
            ),
        ));
    }
    Ok(())
}
