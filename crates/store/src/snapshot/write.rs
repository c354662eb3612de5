//! Writing a snapshot file.
//!
//! Protocol, in steps:
//! 1. Check the metadata (`extra` within [`MAX_EXTRA_LEN`]); remove a stale
//!    `snapshot-<LSN>.tmp` (an earlier attempt at the same LSN, which `open_append` would
//!    otherwise extend); create it afresh and write the header.
//! 2. Take the records in order, refusing an ID that does not strictly ascend, an ID at or
//!    above the next ID, a record above [`MAX_RECORD_LEN`] and more records than the
//!    metadata declares. Frame each into the chunk buffer; before a frame would take a
//!    non-empty chunk past the target size, compress the chunk (LZ4 block, fast mode),
//!    write its header and compressed octets in one write, and note its directory entry.
//! 3. After the last record, write the final chunk, check the count equals the metadata's
//!    entry count, and write the footer (directory, totals, CRC32C) and the trailer.
//! 4. Fsync the file, rename it to `snapshot-<LSN>.snap` (replacing one of the same LSN),
//!    fsync the directory. Only then is the snapshot durable, and only then may the WAL
//!    segments it covers be removed.
//! 5. On any error the temporary file is removed (best effort) and no `.snap` name was
//!    created, so the previous snapshot stays the newest.
//!
//! Memory: one uncompressed chunk, one compressed chunk and the directory (20 octets per
//! chunk); the file is never built in memory.

use std::io;
use std::path::{Path, PathBuf};

use super::format::{
    encode_footer, encode_header, encode_record, encode_trailer, off, snapshot_name, temp_name, ChunkHeader,
    DirEntry, CHUNK_HEADER_LEN, CHUNK_TARGET_LEN, HEADER_FIXED_LEN, MAX_CHUNKS, MAX_CHUNK_LEN,
    MAX_COMPRESSED_LEN, MAX_EXTRA_LEN, MAX_RECORD_LEN, RECORD_HEADER_LEN,
};
use super::{SnapshotError, SnapshotInfo, SnapshotMeta};
use crate::storage::{AppendFile, Storage};

/// How [`write_snapshot_with`] lays out the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOptions {
    /// Uncompressed size a chunk grows to before it is written (default
    /// [`CHUNK_TARGET_LEN`]; clamped to `1..=MAX_CHUNK_LEN`). A chunk holds at least one
    /// record, so a record larger than the target gets a chunk of its own. Smaller targets
    /// make more chunks (more parallelism when loading, less compression).
    pub chunk_target: usize,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            chunk_target: CHUNK_TARGET_LEN,
        }
    }
}

/// Writes a snapshot of `records` (entry ID and record octets, IDs strictly ascending) into
/// `dir` (which must exist) as `snapshot-<meta.lsn>.snap`, with the default options. See
/// the module documentation for the steps and [`SnapshotError`] for what is refused.
pub fn write_snapshot<I, R>(
    storage: &dyn Storage,
    dir: &Path,
    meta: &SnapshotMeta,
    records: I,
) -> Result<SnapshotInfo, SnapshotError>
where
    I: IntoIterator<Item = (u32, R)>,
    R: AsRef<[u8]>,
{
    write_snapshot_with(storage, dir, meta, records, &WriteOptions::default())
}

/// [`write_snapshot`] with explicit [`WriteOptions`].
pub fn write_snapshot_with<I, R>(
    storage: &dyn Storage,
    dir: &Path,
    meta: &SnapshotMeta,
    records: I,
    options: &WriteOptions,
) -> Result<SnapshotInfo, SnapshotError>
where
    I: IntoIterator<Item = (u32, R)>,
    R: AsRef<[u8]>,
{
    if meta.extra.len() > MAX_EXTRA_LEN {
        return Err(SnapshotError::ExtraTooLarge {
            len: meta.extra.len(),
        });
    }
    let tmp = dir.join(temp_name(meta.lsn));
    let path = dir.join(snapshot_name(meta.lsn));
    match storage.remove(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(SnapshotError::io("remove", &tmp, e)),
    }
    let file = storage
        .open_append(&tmp)
        .map_err(|e| SnapshotError::io("create", &tmp, e))?;
    let target = options.chunk_target.clamp(1, MAX_CHUNK_LEN);
    let result = write_body(file, &tmp, meta, records.into_iter(), target).and_then(|info| {
        storage
            .rename(&tmp, &path)
            .map_err(|e| SnapshotError::io("rename", &tmp, e))?;
        storage
            .sync_dir(dir)
            .map_err(|e| SnapshotError::io("sync", dir, e))?;
        Ok(SnapshotInfo {
            path: path.clone(),
            ..info
        })
    });
    if result.is_err() {
        // Best effort: a leftover is also removed by `remove_stale` and by the next write
        // at this LSN, and it never carries the `.snap` name.
        let _ = storage.remove(&tmp);
    }
    result
}

/// Steps 1 (after creation) to 3 and the file fsync of step 4; the file is closed on
/// return.
fn write_body<R: AsRef<[u8]>>(
    file: Box<dyn AppendFile>,
    tmp: &Path,
    meta: &SnapshotMeta,
    records: impl Iterator<Item = (u32, R)>,
    target: usize,
) -> Result<SnapshotInfo, SnapshotError> {
    let mut w = ChunkWriter {
        file,
        path: tmp,
        offset: 0,
        raw: Vec::with_capacity(target.saturating_add(RECORD_HEADER_LEN).min(MAX_CHUNK_LEN)),
        packed: Vec::new(),
        count: 0,
        first_id: 0,
        last_id: 0,
        directory: Vec::new(),
    };
    let mut header = Vec::with_capacity(meta.extra.len() + HEADER_FIXED_LEN);
    encode_header(meta, &mut header);
    w.write(&header)?;

    let mut given: u64 = 0;
    let mut previous: Option<u32> = None;
    for (id, record) in records {
        let data = record.as_ref();
        if let Some(p) = previous {
            if id <= p {
                return Err(SnapshotError::NotAscending {
                    previous: p,
                    found: id,
                });
            }
        }
        previous = Some(id);
        if id >= meta.next_id {
            return Err(SnapshotError::IdNotBelowNextId {
                id,
                next_id: meta.next_id,
            });
        }
        if data.len() > MAX_RECORD_LEN {
            return Err(SnapshotError::RecordTooLarge { id, len: data.len() });
        }
        given += 1;
        if given > meta.entry_count {
            return Err(SnapshotError::CountMismatch {
                declared: meta.entry_count,
                given,
            });
        }
        if w.count > 0 && w.raw.len() + RECORD_HEADER_LEN + data.len() > target {
            w.flush_chunk()?;
        }
        if w.count == 0 {
            w.first_id = id;
        }
        w.last_id = id;
        w.count += 1;
        encode_record(id, data, &mut w.raw);
    }
    if given != meta.entry_count {
        return Err(SnapshotError::CountMismatch {
            declared: meta.entry_count,
            given,
        });
    }
    if w.count > 0 {
        w.flush_chunk()?;
    }

    let footer_offset = w.offset;
    let mut tail = Vec::with_capacity(w.directory.len() * 20 + 64);
    encode_footer(meta.lsn, given, &w.directory, &mut tail);
    let footer_len = u32::try_from(tail.len()).map_err(|_| SnapshotError::TooManyChunks)?;
    encode_trailer(footer_offset, footer_len, &mut tail);
    w.write(&tail)?;
    w.file.sync().map_err(|e| SnapshotError::io("sync", tmp, e))?;
    Ok(SnapshotInfo {
        path: PathBuf::new(),
        lsn: meta.lsn,
        bytes: w.offset,
        chunks: off(w.directory.len()),
        entries: given,
    })
}

/// The file being written and the chunk being built.
struct ChunkWriter<'a> {
    file: Box<dyn AppendFile>,
    path: &'a Path,
    /// Octets written so far (the next chunk's offset).
    offset: u64,
    /// Record frames of the chunk being built.
    raw: Vec<u8>,
    /// Chunk header and compressed octets; kept between chunks to reuse its allocation.
    packed: Vec<u8>,
    count: u32,
    first_id: u32,
    last_id: u32,
    directory: Vec<DirEntry>,
}

impl ChunkWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> Result<(), SnapshotError> {
        self.file
            .write_all(buf)
            .map_err(|e| SnapshotError::io("write", self.path, e))?;
        self.offset += off(buf.len());
        Ok(())
    }

    /// Compresses and writes the chunk being built (which holds at least one record) and
    /// records it in the directory.
    fn flush_chunk(&mut self) -> Result<(), SnapshotError> {
        if self.directory.len() >= MAX_CHUNKS {
            return Err(SnapshotError::TooManyChunks);
        }
        let need = CHUNK_HEADER_LEN + lz4_flex::block::get_maximum_output_size(self.raw.len());
        if self.packed.len() < need {
            self.packed.resize(need, 0);
        }
        let out = self.packed.get_mut(CHUNK_HEADER_LEN..).unwrap_or_default();
        let packed_len = lz4_flex::block::compress_into(&self.raw, out).map_err(|e| {
            SnapshotError::io("compress a chunk for", self.path, io::Error::other(e.to_string()))
        })?;
        // Both lengths are within the format's limits by construction (records were checked
        // against MAX_RECORD_LEN and the target is at most MAX_CHUNK_LEN); a failure here
        // would be a bug, reported rather than written.
        let too_large =
            || SnapshotError::io("compress a chunk for", self.path, io::Error::other("too large"));
        if self.raw.len() > MAX_CHUNK_LEN || packed_len > MAX_COMPRESSED_LEN {
            return Err(too_large());
        }
        let raw_len = u32::try_from(self.raw.len()).map_err(|_| too_large())?;
        let packed_u32 = u32::try_from(packed_len).map_err(|_| too_large())?;
        let total = CHUNK_HEADER_LEN + packed_len;
        let data_crc = crc32c::crc32c(self.packed.get(CHUNK_HEADER_LEN..total).unwrap_or_default());
        let header = ChunkHeader {
            first_id: self.first_id,
            last_id: self.last_id,
            count: self.count,
            raw_len,
            packed_len: packed_u32,
            data_crc,
        };
        let mut h = [0u8; CHUNK_HEADER_LEN];
        header.encode(&mut h);
        if let Some(slot) = self.packed.get_mut(..CHUNK_HEADER_LEN) {
            slot.copy_from_slice(&h);
        }
        let entry = DirEntry {
            offset: self.offset,
            len: u32::try_from(total).map_err(|_| too_large())?,
            first_id: self.first_id,
            last_id: self.last_id,
        };
        self.file
            .write_all(self.packed.get(..total).unwrap_or_default())
            .map_err(|e| SnapshotError::io("write", self.path, e))?;
        self.offset += off(total);
        self.directory.push(entry);
        self.raw.clear();
        self.count = 0;
        Ok(())
    }
}
