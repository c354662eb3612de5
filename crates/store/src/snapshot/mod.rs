//! Snapshot files: a consistent image of the whole directory at one LSN, written in the
//! background from an old immutable version while writes continue, and loaded at startup
//! in parallel, after which the WAL records after its LSN are replayed.
//!
//! This module owns the file format and its I/O only. The records inside are opaque octet
//! strings (the store defines them), each tagged with its entry ID (u32); IDs strictly
//! ascend through the file and are all below the header's next ID.
//!
//! # Format (version 1; the same text, with more detail, is in `docs/formats.md`)
//!
//! A snapshot is one file, `snapshot-<LSN>.snap`, where `<LSN>` is the LSN it was taken at
//! as exactly 16 lowercase hexadecimal digits. It is written as `snapshot-<LSN>.tmp` and
//! renamed when complete. Other names are ignored. All integers are little-endian; every
//! checksum is CRC32C (Castagnoli).
//!
//! File layout: header, chunks back to back, footer, trailer. Every octet is covered by a
//! checksum, and the chunks tile the space between header and footer exactly.
//!
//! Header, 48 + `x` octets:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | magic `LARCHSNP` (ASCII) |
//! | 8 | 4 | format version, u32 = 1 |
//! | 12 | 8 | LSN, u64 (equals the file name's) |
//! | 20 | 4 | next ID, u32 (every entry ID in the file is below it) |
//! | 24 | 8 | entry count, u64 |
//! | 32 | 8 | creation time, u64 seconds since the Unix epoch |
//! | 40 | 4 | `x`: length of the extra blob, u32, at most [`MAX_EXTRA_LEN`] |
//! | 44 | x | extra blob (opaque here; the store's dictionary and settings) |
//! | 44 + x | 4 | CRC32C of octets 0..44 + x |
//!
//! Chunk, 28 + `c` octets:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 4 | first entry ID, u32 |
//! | 4 | 4 | last entry ID, u32 |
//! | 8 | 4 | record count, u32, at least 1 |
//! | 12 | 4 | uncompressed length `u`, u32, at most [`MAX_CHUNK_LEN`] |
//! | 16 | 4 | compressed length `c`, u32 |
//! | 20 | 4 | CRC32C of the `c` compressed octets |
//! | 24 | 4 | CRC32C of octets 0..24 of this chunk header |
//! | 28 | c | the records, LZ4 block format (no frame), `u` octets once decompressed |
//!
//! Decompressed, a chunk is its records back to back, each an entry ID (u32), a length
//! `n` (u32, at most [`MAX_RECORD_LEN`]) and `n` octets.
//!
//! Footer, 24 + 20 × `k` octets (`k` chunks):
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | LSN, u64 (equals the header's) |
//! | 8 | 8 | record count, u64 (equals the header's entry count) |
//! | 16 | 4 | `k`: chunk count, u32, at most [`MAX_CHUNKS`] |
//! | 20 + 20 i | 8 | chunk `i`: offset of its header, u64 |
//! | 28 + 20 i | 4 | chunk `i`: length, u32 (28 + `c`) |
//! | 32 + 20 i | 4 | chunk `i`: first entry ID, u32 |
//! | 36 + 20 i | 4 | chunk `i`: last entry ID, u32 |
//! | 20 + 20 k | 4 | CRC32C of octets 0..20 + 20 k of the footer |
//!
//! Trailer, the last 24 octets of the file:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | footer offset, u64 |
//! | 8 | 4 | footer length, u32 |
//! | 12 | 4 | CRC32C of octets 0..12 of the trailer |
//! | 16 | 8 | end marker `LARCHEND` (ASCII) |
//!
//! Writing (see [`write_snapshot`]) streams records into chunks of about
//! [`CHUNK_TARGET_LEN`] uncompressed octets and holds one chunk and the directory in
//! memory. Reading (see [`read_snapshot`]) checks header, trailer, footer and every chunk
//! header before any record is handed out, then decompresses and checks the chunks on
//! several threads, delivering them **in no particular order**.

mod format;
mod read;
mod write;

use std::error::Error as StdError;
use std::io;
use std::path::{Path, PathBuf};

pub use format::{
    parse_snapshot_name, parse_temp_name, snapshot_name, temp_name, Corruption, CHUNK_HEADER_LEN,
    CHUNK_TARGET_LEN, DIRECTORY_ENTRY_LEN, END_MAGIC, FOOTER_FIXED_LEN, FORMAT_VERSION, HEADER_FIXED_LEN,
    MAGIC, MAX_CHUNKS, MAX_CHUNK_LEN, MAX_COMPRESSED_LEN, MAX_EXTRA_LEN, MAX_FOOTER_LEN, MAX_RECORD_LEN,
    RECORD_HEADER_LEN, TRAILER_LEN,
};
pub use read::{read_meta, read_snapshot, verify_snapshot, ChunkRecords};
pub use write::{write_snapshot, write_snapshot_with, WriteOptions, MAX_WRITE_THREADS};

use crate::storage::Storage;
use crate::wal::Lsn;

/// What a snapshot's header declares besides its records.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SnapshotMeta {
    /// The LSN the snapshot was taken at: replay continues with the WAL record after it.
    pub lsn: Lsn,
    /// The entry ID the store hands out next; every ID in the file is below it.
    pub next_id: u32,
    /// How many records the file holds.
    pub entry_count: u64,
    /// When the snapshot was taken, in seconds since the Unix epoch.
    pub created_unix_secs: u64,
    /// An opaque blob for the store (its attribute-type dictionary and settings), at most
    /// [`MAX_EXTRA_LEN`] octets.
    pub extra: Vec<u8>,
}

/// What [`write_snapshot`] wrote, or what [`verify_snapshot`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// The snapshot file.
    pub path: PathBuf,
    /// The LSN it was taken at.
    pub lsn: Lsn,
    /// The file's size in octets.
    pub bytes: u64,
    /// How many chunks it holds.
    pub chunks: u64,
    /// How many records it holds.
    pub entries: u64,
}

/// What can go wrong writing, reading or listing snapshots.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// A storage operation failed.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// What was being done (`"read"`, `"sync"`, ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The file is damaged, truncated or not a snapshot.
    #[error("{}: corrupt snapshot at offset {offset}: {problem}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Offset of the element (or field) found wrong.
        offset: u64,
        /// What is wrong.
        problem: Corruption,
    },
    /// The file declares a format version this code does not read.
    #[error(
        "{}: snapshot format version {version} is not supported (this build reads version {FORMAT_VERSION})",
        path.display()
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version in its header.
        version: u32,
    },
    /// The caller's chunk callback failed; reading stopped.
    #[error("{}: loading the chunk at offset {offset} failed: {source}", path.display())]
    Callback {
        /// The file.
        path: PathBuf,
        /// Offset of the chunk being loaded.
        offset: u64,
        /// The callback's error.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The records given to the writer do not strictly ascend by entry ID.
    #[error("snapshot records must have strictly ascending IDs: {found} after {previous}")]
    NotAscending {
        /// The previous record's ID.
        previous: u32,
        /// The offending ID.
        found: u32,
    },
    /// A record given to the writer has an ID at or above the metadata's next ID.
    #[error("snapshot record ID {id} is not below the next ID {next_id}")]
    IdNotBelowNextId {
        /// The record's ID.
        id: u32,
        /// The metadata's next ID.
        next_id: u32,
    },
    /// The writer was given a different number of records than the metadata declares.
    #[error("the snapshot metadata declares {declared} entries, {given} records were given")]
    CountMismatch {
        /// The metadata's entry count.
        declared: u64,
        /// How many records were given (at least; counting stops one past `declared`).
        given: u64,
    },
    /// A record above [`MAX_RECORD_LEN`].
    #[error("snapshot record {id} of {len} octets is above the limit of {MAX_RECORD_LEN}")]
    RecordTooLarge {
        /// The record's ID.
        id: u32,
        /// Its length.
        len: usize,
    },
    /// An `extra` blob above [`MAX_EXTRA_LEN`].
    #[error("snapshot extra data of {len} octets is above the limit of {MAX_EXTRA_LEN}")]
    ExtraTooLarge {
        /// Its length.
        len: usize,
    },
    /// The records need more than [`MAX_CHUNKS`] chunks.
    #[error("the snapshot needs more than {MAX_CHUNKS} chunks")]
    TooManyChunks,
}

impl SnapshotError {
    pub(crate) fn io(op: &'static str, path: &Path, source: io::Error) -> Self {
        SnapshotError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn corrupt(path: &Path, (offset, problem): (u64, Corruption)) -> Self {
        SnapshotError::Corrupt {
            path: path.to_path_buf(),
            offset,
            problem,
        }
    }
}

/// The snapshots in `dir`, newest (highest LSN) first. Temporary files and other names are
/// ignored; nothing is opened, so a listed snapshot may still turn out corrupt.
pub fn list_snapshots(storage: &dyn Storage, dir: &Path) -> Result<Vec<(Lsn, PathBuf)>, SnapshotError> {
    let names = storage.list(dir).map_err(|e| SnapshotError::io("list", dir, e))?;
    let mut snaps: Vec<(Lsn, PathBuf)> = names
        .iter()
        .filter_map(|n| parse_snapshot_name(n).map(|lsn| (lsn, dir.join(n))))
        .collect();
    snaps.sort_by_key(|s| std::cmp::Reverse(s.0));
    Ok(snaps)
}

/// Removes leftover temporary files (`snapshot-<LSN>.tmp`: a snapshot write that a crash
/// or an error interrupted before its rename) and fsyncs the directory if anything was
/// removed; returns the removed paths. A temporary file is never loaded (only `.snap` names
/// are), so removing it loses nothing; left alone it would hold its disk space until the
/// next completed snapshot. Call it only when no snapshot is being written into `dir` (the
/// store does at open, before anything can write one).
pub fn remove_temp_files(storage: &dyn Storage, dir: &Path) -> Result<Vec<PathBuf>, SnapshotError> {
    let doomed = temp_files(storage, dir)?;
    remove_and_sync(storage, dir, &doomed)?;
    Ok(doomed)
}

/// Removes leftover temporary files (as [`remove_temp_files`]) and every snapshot but the
/// newest `keep`, then fsyncs the directory if anything was removed; returns the removed
/// paths. The store keeps 2, so a corrupt newest file has a fallback. Call it only when no
/// snapshot is being written into `dir` (it would remove that write's temporary file).
pub fn remove_stale(storage: &dyn Storage, dir: &Path, keep: usize) -> Result<Vec<PathBuf>, SnapshotError> {
    let mut doomed = temp_files(storage, dir)?;
    doomed.extend(
        list_snapshots(storage, dir)?
            .into_iter()
            .skip(keep)
            .map(|(_, p)| p),
    );
    remove_and_sync(storage, dir, &doomed)?;
    Ok(doomed)
}

/// The temporary files (`snapshot-<LSN>.tmp`) in `dir`.
fn temp_files(storage: &dyn Storage, dir: &Path) -> Result<Vec<PathBuf>, SnapshotError> {
    let names = storage.list(dir).map_err(|e| SnapshotError::io("list", dir, e))?;
    Ok(names
        .iter()
        .filter(|n| parse_temp_name(n).is_some())
        .map(|n| dir.join(n))
        .collect())
}

/// Removes `paths` (one already gone is no error), then fsyncs `dir` if there were any.
fn remove_and_sync(storage: &dyn Storage, dir: &Path, paths: &[PathBuf]) -> Result<(), SnapshotError> {
    for path in paths {
        match storage.remove(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(SnapshotError::io("remove", path, e)),
        }
    }
    if !paths.is_empty() {
        storage
            .sync_dir(dir)
            .map_err(|e| SnapshotError::io("sync", dir, e))?;
    }
    Ok(())
}
