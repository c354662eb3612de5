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
//! Compression runs on [`WriteOptions::threads`] threads: chunks are gathered one per
//! thread, compressed at once on scoped threads, then written in order, so the file is the
//! same whatever the thread count. [`WriteOptions::duty_cycle`] paces a snapshot written
//! while the server runs: after each group of chunks the writer sleeps so that it is busy
//! at most that fraction of the time, leaving the cores to the writes it must not slow.
//!
//! Memory: one uncompressed and one compressed buffer per thread, and the directory (20
//! octets per chunk); the file is never built in memory.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::format::{
    encode_footer, encode_header, encode_record, encode_trailer, off, snapshot_name, temp_name, ChunkHeader,
    DirEntry, CHUNK_HEADER_LEN, CHUNK_TARGET_LEN, HEADER_FIXED_LEN, MAX_CHUNKS, MAX_CHUNK_LEN,
    MAX_COMPRESSED_LEN, MAX_EXTRA_LEN, MAX_RECORD_LEN, RECORD_HEADER_LEN,
};
use super::{SnapshotError, SnapshotInfo, SnapshotMeta};
use crate::storage::{AppendFile, Storage};

/// How [`write_snapshot_with`] lays out the file.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteOptions {
    /// Uncompressed size a chunk grows to before it is written (default
    /// [`CHUNK_TARGET_LEN`]; clamped to `1..=MAX_CHUNK_LEN`). A chunk holds at least one
    /// record, so a record larger than the target gets a chunk of its own. Smaller targets
    /// make more chunks (more parallelism when loading, less compression).
    pub chunk_target: usize,
    /// Threads compressing chunks (at least 1, at most [`MAX_WRITE_THREADS`]).
    pub threads: usize,
    /// Fraction of the time the writer may be busy, in `(0, 1]`; 1 writes at full speed.
    pub duty_cycle: f64,
}

/// Most compression threads.
pub const MAX_WRITE_THREADS: usize = 64;

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            chunk_target: CHUNK_TARGET_LEN,
            threads: 1,
            duty_cycle: 1.0,
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
    let result = write_body(file, &tmp, meta, records.into_iter(), options).and_then(|info| {
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
    options: &WriteOptions,
) -> Result<SnapshotInfo, SnapshotError> {
    let target = options.chunk_target.clamp(1, MAX_CHUNK_LEN);
    let duty_cycle = if options.duty_cycle.is_finite() {
        options.duty_cycle.clamp(0.01, 1.0)
    } else {
        1.0
    };
    let mut w = ChunkWriter {
        file,
        path: tmp,
        offset: 0,
        raw: Vec::with_capacity(target.saturating_add(RECORD_HEADER_LEN).min(MAX_CHUNK_LEN)),
        count: 0,
        first_id: 0,
        last_id: 0,
        directory: Vec::new(),
        pending: Vec::new(),
        threads: options.threads.clamp(1, MAX_WRITE_THREADS),
        duty_cycle,
        busy_since: Instant::now(),
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
    w.write_pending()?;

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
    count: u32,
    first_id: u32,
    last_id: u32,
    directory: Vec<DirEntry>,
    /// Full chunks waiting to be compressed together.
    pending: Vec<Pending>,
    threads: usize,
    duty_cycle: f64,
    /// When the writer last woke from pacing.
    busy_since: Instant,
}

/// A full chunk, before compression.
struct Pending {
    raw: Vec<u8>,
    count: u32,
    first_id: u32,
    last_id: u32,
}

/// A chunk compressed: header and data, ready to write.
struct Packed {
    bytes: Vec<u8>,
    first_id: u32,
    last_id: u32,
}

impl ChunkWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> Result<(), SnapshotError> {
        self.file
            .write_all(buf)
            .map_err(|e| SnapshotError::io("write", self.path, e))?;
        self.offset += off(buf.len());
        Ok(())
    }

    /// Queues the chunk being built (which holds at least one record); compresses and
    /// writes the queue when it holds one chunk per thread.
    fn flush_chunk(&mut self) -> Result<(), SnapshotError> {
        if self.directory.len() + self.pending.len() >= MAX_CHUNKS {
            return Err(SnapshotError::TooManyChunks);
        }
        let capacity = self.raw.capacity();
        self.pending.push(Pending {
            raw: std::mem::replace(&mut self.raw, Vec::with_capacity(capacity)),
            count: self.count,
            first_id: self.first_id,
            last_id: self.last_id,
        });
        self.count = 0;
        if self.pending.len() >= self.threads {
            self.write_pending()?;
        }
        Ok(())
    }

    /// Compresses the queued chunks in parallel and writes them in order.
    fn write_pending(&mut self) -> Result<(), SnapshotError> {
        let pending = std::mem::take(&mut self.pending);
        if pending.is_empty() {
            return Ok(());
        }
        let path = self.path;
        let packed: Vec<Result<Packed, SnapshotError>> = if pending.len() == 1 {
            pending.iter().map(|p| compress(p, path)).collect()
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = pending
                    .iter()
                    .map(|p| s.spawn(move || compress(p, path)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(SnapshotError::io(
                                "compress a chunk for",
                                path,
                                io::Error::other("a compression thread failed"),
                            ))
                        })
                    })
                    .collect()
            })
        };
        for chunk in packed {
            let chunk = chunk?;
            let entry = DirEntry {
                offset: self.offset,
                len: u32::try_from(chunk.bytes.len()).map_err(|_| too_large(path))?,
                first_id: chunk.first_id,
                last_id: chunk.last_id,
            };
            self.write(&chunk.bytes)?;
            self.directory.push(entry);
        }
        self.pace();
        Ok(())
    }

    /// Sleeps so that the writer is busy at most `duty_cycle` of the time.
    fn pace(&mut self) {
        if self.duty_cycle < 1.0 {
            let busy = self.busy_since.elapsed();
            let idle = busy.mul_f64((1.0 - self.duty_cycle) / self.duty_cycle);
            std::thread::sleep(idle.min(MAX_PACING_SLEEP));
            self.busy_since = Instant::now();
        }
    }
}

/// The longest single pause of a paced writer (bounds how late a snapshot can finish if
/// one group of chunks was slow for reasons outside the writer).
const MAX_PACING_SLEEP: Duration = Duration::from_secs(1);

fn too_large(path: &Path) -> SnapshotError {
    SnapshotError::io("compress a chunk for", path, io::Error::other("too large"))
}

/// Compresses one chunk (LZ4 block, fast mode) behind its header.
fn compress(p: &Pending, path: &Path) -> Result<Packed, SnapshotError> {
    let mut bytes = vec![0u8; CHUNK_HEADER_LEN + lz4_flex::block::get_maximum_output_size(p.raw.len())];
    let out = bytes.get_mut(CHUNK_HEADER_LEN..).unwrap_or_default();
    let packed_len = lz4_flex::block::compress_into(&p.raw, out)
        .map_err(|e| SnapshotError::io("compress a chunk for", path, io::Error::other(e.to_string())))?;
    // Both lengths are within the format's limits by construction (records were checked
    // against MAX_RECORD_LEN and the target is at most MAX_CHUNK_LEN); a failure here would
    // be a bug, reported rather than written.
    if p.raw.len() > MAX_CHUNK_LEN || packed_len > MAX_COMPRESSED_LEN {
        return Err(too_large(path));
    }
    let raw_len = u32::try_from(p.raw.len()).map_err(|_| too_large(path))?;
    let packed_u32 = u32::try_from(packed_len).map_err(|_| too_large(path))?;
    let total = CHUNK_HEADER_LEN + packed_len;
    bytes.truncate(total);
    let data_crc = crc32c::crc32c(bytes.get(CHUNK_HEADER_LEN..).unwrap_or_default());
    let header = ChunkHeader {
        first_id: p.first_id,
        last_id: p.last_id,
        count: p.count,
        raw_len,
        packed_len: packed_u32,
        data_crc,
    };
    let mut h = [0u8; CHUNK_HEADER_LEN];
    header.encode(&mut h);
    if let Some(slot) = bytes.get_mut(..CHUNK_HEADER_LEN) {
        slot.copy_from_slice(&h);
    }
    Ok(Packed {
        bytes,
        first_id: p.first_id,
        last_id: p.last_id,
    })
}
