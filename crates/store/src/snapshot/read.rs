//! Reading and verifying a snapshot file.
//!
//! Steps:
//! 1. Read the whole file. Check the header (magic, version, `extra` length bound,
//!    CRC32C) and, when the file has a snapshot name, that its LSN equals the name's.
//! 2. Check the trailer (end marker, CRC32C) and that the footer it points at lies exactly
//!    between the header and the trailer; check the footer (CRC32C, chunk count within
//!    [`MAX_CHUNKS`](super::MAX_CHUNKS), length matching the count) and that its LSN and
//!    record count equal the header's.
//! 3. Walk the chunk directory: chunks must tile the space from the end of the header to
//!    the footer with no gap or overlap, have possible lengths, strictly ascending ID
//!    ranges all below the next ID; each chunk header must pass its own CRC32C, agree with
//!    its directory entry, declare an uncompressed length within [`MAX_CHUNK_LEN`] and a
//!    record count its ID range and length can hold; the counts must add up to the
//!    header's entry count. Nothing has been handed to the caller yet.
//! 4. On `threads` threads (the calling one included), take chunks one at a time: check the
//!    compressed octets' CRC32C, decompress into a per-thread buffer of the declared
//!    length, require exactly that many octets, and walk the records (frames complete,
//!    lengths within [`MAX_RECORD_LEN`](super::MAX_RECORD_LEN), IDs strictly ascending
//!    from the chunk's first ID to its last, no octet left over). Only then is the chunk
//!    handed to the callback.
//! 5. The first failure stops the other threads from taking new chunks; the error of the
//!    lowest-offset chunk that failed is returned. Chunks are delivered in no particular
//!    order, and chunks may have been delivered before an error is returned, so a caller
//!    must discard what it loaded when reading fails.

use std::error::Error as StdError;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::format::{
    decode_footer, decode_header, decode_record, decode_trailer, le_u32, off, parse_snapshot_name, size,
    ChunkHeader, Corruption, DirEntry, HeaderError, Located, CHUNK_HEADER_LEN, DIRECTORY_ENTRY_LEN,
    HEADER_FIXED_LEN, MAX_CHUNK_LEN, MAX_COMPRESSED_LEN, MAX_EXTRA_LEN, RECORD_HEADER_LEN,
};
use super::{SnapshotError, SnapshotInfo, SnapshotMeta};
use crate::storage::Storage;

/// The records of one checked, decompressed chunk, as handed to the callback of
/// [`read_snapshot`]: an iterator of (entry ID, record octets) in ascending ID order,
/// borrowing the reading thread's buffer.
#[derive(Debug, Clone)]
pub struct ChunkRecords<'a> {
    data: &'a [u8],
    pos: usize,
    remaining: u32,
    index: usize,
    offset: u64,
    first_id: u32,
    last_id: u32,
    count: u32,
}

impl ChunkRecords<'_> {
    /// The chunk's position in the file (0 for the first chunk).
    pub fn chunk_index(&self) -> usize {
        self.index
    }

    /// The file offset of the chunk's header.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The entry ID of the chunk's first record.
    pub fn first_id(&self) -> u32 {
        self.first_id
    }

    /// The entry ID of the chunk's last record.
    pub fn last_id(&self) -> u32 {
        self.last_id
    }

    /// How many records the chunk holds (consumed or not).
    pub fn record_count(&self) -> u32 {
        self.count
    }
}

impl<'a> Iterator for ChunkRecords<'a> {
    type Item = (u32, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        // The frames were checked before the chunk was handed out; `None` cannot happen.
        let (id, record, end) = decode_record(self.data, self.pos)?;
        self.pos = end;
        self.remaining -= 1;
        Some((id, record))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.remaining as usize;
        (n, Some(n))
    }
}

impl ExactSizeIterator for ChunkRecords<'_> {}

/// Reads the snapshot at `path`, checks all of it, and hands every chunk's records to
/// `on_chunk` on one of `threads` threads (at least one: the calling thread; extra ones are
/// scoped threads). Returns the header's metadata.
///
/// Chunks arrive **in no particular order**, each at most once, never before steps 1 to 3
/// of the module documentation have passed and never before the chunk itself has been
/// checked. When an error is returned (a [`SnapshotError::Corrupt`] naming the path and
/// offset, or the callback's error in [`SnapshotError::Callback`]), other chunks may
/// already have been delivered: discard them.
pub fn read_snapshot<F, E>(
    storage: &dyn Storage,
    path: &Path,
    threads: usize,
    on_chunk: F,
) -> Result<SnapshotMeta, SnapshotError>
where
    F: Fn(&mut ChunkRecords<'_>) -> Result<(), E> + Sync,
    E: Into<Box<dyn StdError + Send + Sync>>,
{
    load(storage, path, threads, &on_chunk).map(|(meta, _)| meta)
}

/// Checks everything [`read_snapshot`] checks (every checksum, decompression, every record
/// frame) on the calling thread, without handing records out. For `larch verify` and for
/// choosing which snapshot to load.
pub fn verify_snapshot(storage: &dyn Storage, path: &Path) -> Result<SnapshotInfo, SnapshotError> {
    let ignore = |_: &mut ChunkRecords<'_>| Ok::<(), std::convert::Infallible>(());
    load(storage, path, 1, &ignore).map(|(_, info)| info)
}

/// The header of the snapshot at `path` (step 1 for the header alone: magic, version,
/// `extra` bound, CRC32C), reading only the header's octets: what a snapshot declares,
/// without the cost of reading a large file. The rest of the file is not checked.
pub fn read_meta(storage: &dyn Storage, path: &Path) -> Result<SnapshotMeta, SnapshotError> {
    use std::io::Read;
    let io = |e| SnapshotError::io("read", path, e);
    let mut file = storage.open_read(path).map_err(io)?;
    let mut header = vec![0; HEADER_FIXED_LEN - 4];
    file.read_exact(&mut header).map_err(io)?;
    // The `extra` length (checked against its bound by `decode_header` below; a larger
    // value reads no more than the bound and the next octet).
    let extra_len = size(u64::from(le_u32(&header, 40).unwrap_or(0))).min(MAX_EXTRA_LEN + 1);
    let mut rest = Vec::new();
    file.take(off(extra_len + 4)).read_to_end(&mut rest).map_err(io)?;
    header.extend_from_slice(&rest);
    let (meta, _) = decode_header(&header).map_err(|e| match e {
        HeaderError::Corrupt(l) => SnapshotError::corrupt(path, l),
        HeaderError::Version(version) => SnapshotError::UnsupportedVersion {
            path: path.to_path_buf(),
            version,
        },
    })?;
    Ok(meta)
}

/// One chunk to load: its place in the file and its checked header.
#[derive(Debug, Clone, Copy)]
struct Job {
    index: usize,
    entry: DirEntry,
    header: ChunkHeader,
}

fn load<F, E>(
    storage: &dyn Storage,
    path: &Path,
    threads: usize,
    on_chunk: &F,
) -> Result<(SnapshotMeta, SnapshotInfo), SnapshotError>
where
    F: Fn(&mut ChunkRecords<'_>) -> Result<(), E> + Sync,
    E: Into<Box<dyn StdError + Send + Sync>>,
{
    let data = storage
        .read(path)
        .map_err(|e| SnapshotError::io("read", path, e))?;
    let (meta, jobs) = check_layout(path, &data)?;
    run_chunks(path, &data, &jobs, threads, on_chunk)?;
    let info = SnapshotInfo {
        path: path.to_path_buf(),
        lsn: meta.lsn,
        bytes: off(data.len()),
        chunks: off(jobs.len()),
        entries: meta.entry_count,
    };
    Ok((meta, info))
}

/// Steps 1 to 3: everything but the chunks' contents.
fn check_layout(path: &Path, data: &[u8]) -> Result<(SnapshotMeta, Vec<Job>), SnapshotError> {
    let bad = |l: Located| SnapshotError::corrupt(path, l);
    let (meta, header_len) = decode_header(data).map_err(|e| match e {
        HeaderError::Corrupt(l) => bad(l),
        HeaderError::Version(version) => SnapshotError::UnsupportedVersion {
            path: path.to_path_buf(),
            version,
        },
    })?;
    let name_lsn = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_snapshot_name);
    if let Some(name) = name_lsn {
        if name != meta.lsn {
            return Err(bad((
                12,
                Corruption::NameLsnMismatch {
                    name,
                    header: meta.lsn,
                },
            )));
        }
    }
    let (footer_at, footer_len) = decode_trailer(data, header_len).map_err(bad)?;
    let footer = decode_footer(data, footer_at, footer_len).map_err(bad)?;
    let footer_off = off(footer_at);
    if footer.lsn != meta.lsn {
        return Err(bad((
            footer_off,
            Corruption::FooterMismatch {
                field: "LSN",
                header: meta.lsn,
                footer: footer.lsn,
            },
        )));
    }
    if footer.records != meta.entry_count {
        return Err(bad((
            footer_off + 8,
            Corruption::FooterMismatch {
                field: "record count",
                header: meta.entry_count,
                footer: footer.records,
            },
        )));
    }

    let mut jobs = Vec::with_capacity(footer.chunks.len());
    let mut expected = off(header_len);
    let mut previous: Option<u32> = None;
    let mut total: u64 = 0;
    for (index, &entry) in footer.chunks.iter().enumerate() {
        let entry_at = footer_off + off(20 + DIRECTORY_ENTRY_LEN * index);
        if entry.offset != expected {
            return Err(bad((
                entry_at,
                Corruption::ChunkLayout {
                    expected,
                    found: entry.offset,
                },
            )));
        }
        let len = entry.len as usize;
        let end = entry.offset.saturating_add(u64::from(entry.len));
        if !(CHUNK_HEADER_LEN..=CHUNK_HEADER_LEN + MAX_COMPRESSED_LEN).contains(&len) || end > footer_off {
            return Err(bad((
                entry_at + 8,
                Corruption::ChunkLength {
                    len: u64::from(entry.len),
                },
            )));
        }
        let floor = previous.unwrap_or(entry.first_id);
        if entry.first_id > entry.last_id || (previous.is_some() && entry.first_id <= floor) {
            let (p, f) = if entry.first_id > entry.last_id {
                (entry.first_id, entry.last_id)
            } else {
                (floor, entry.first_id)
            };
            return Err(bad((
                entry_at + 12,
                Corruption::IdsNotAscending {
                    previous: p,
                    found: f,
                },
            )));
        }
        if entry.last_id >= meta.next_id {
            return Err(bad((
                entry_at + 16,
                Corruption::IdNotBelowNextId {
                    id: entry.last_id,
                    next_id: meta.next_id,
                },
            )));
        }
        previous = Some(entry.last_id);

        let header = ChunkHeader::decode(data, size(entry.offset)).map_err(bad)?;
        let mismatch = [
            ("first ID", header.first_id, entry.first_id),
            ("last ID", header.last_id, entry.last_id),
            (
                "compressed length",
                header.packed_len,
                entry.len.saturating_sub(CHUNK_HEADER_LEN as u32),
            ),
        ]
        .into_iter()
        .find(|(_, h, d)| h != d);
        if let Some((field, h, d)) = mismatch {
            return Err(bad((
                entry.offset,
                Corruption::ChunkMismatch {
                    field,
                    header: u64::from(h),
                    directory: u64::from(d),
                },
            )));
        }
        if header.raw_len as usize > MAX_CHUNK_LEN {
            return Err(bad((
                entry.offset + 12,
                Corruption::ChunkTooLarge {
                    len: u64::from(header.raw_len),
                },
            )));
        }
        let span = u64::from(entry.last_id - entry.first_id) + 1;
        let fit = u64::from(header.raw_len) / off(RECORD_HEADER_LEN);
        let count = u64::from(header.count);
        if count == 0 || count > span || count > fit {
            return Err(bad((
                entry.offset + 8,
                Corruption::BadCount {
                    count,
                    expected: span.min(fit),
                },
            )));
        }
        total += count;
        expected = end;
        jobs.push(Job { index, entry, header });
    }
    if expected != footer_off {
        return Err(bad((
            footer_off,
            Corruption::ChunkLayout {
                expected,
                found: footer_off,
            },
        )));
    }
    if total != meta.entry_count {
        return Err(bad((
            footer_off + 8,
            Corruption::BadCount {
                count: total,
                expected: meta.entry_count,
            },
        )));
    }
    Ok((meta, jobs))
}

/// Step 4 for one chunk: check, decompress into `buf`, walk the records, hand them out.
fn load_chunk<F, E>(
    path: &Path,
    data: &[u8],
    job: &Job,
    buf: &mut Vec<u8>,
    on_chunk: &F,
) -> Result<(), SnapshotError>
where
    F: Fn(&mut ChunkRecords<'_>) -> Result<(), E> + Sync,
    E: Into<Box<dyn StdError + Send + Sync>>,
{
    let at = job.entry.offset;
    let bad = |offset: u64, problem: Corruption| SnapshotError::corrupt(path, (offset, problem));
    let start = size(at).saturating_add(CHUNK_HEADER_LEN);
    let end = size(at).saturating_add(job.entry.len as usize);
    let packed = data
        .get(start..end)
        .ok_or_else(|| bad(at, Corruption::Truncated("chunk")))?;
    if crc32c::crc32c(packed) != job.header.data_crc {
        return Err(bad(off(start), Corruption::Checksum("chunk data")));
    }
    // Bounded by MAX_CHUNK_LEN in `check_layout`.
    let raw_len = job.header.raw_len as usize;
    buf.clear();
    buf.resize(raw_len, 0);
    let n = lz4_flex::block::decompress_into(packed, buf)
        .map_err(|e| bad(off(start), Corruption::Decompress(e.to_string())))?;
    if n != raw_len {
        return Err(bad(
            off(start),
            Corruption::DecompressedLength {
                expected: off(raw_len),
                found: off(n),
            },
        ));
    }
    let chunk = buf.get(..raw_len).unwrap_or_default();
    check_records(chunk, &job.header).map_err(|p| bad(at, p))?;
    let mut records = ChunkRecords {
        data: chunk,
        pos: 0,
        remaining: job.header.count,
        index: job.index,
        offset: at,
        first_id: job.header.first_id,
        last_id: job.header.last_id,
        count: job.header.count,
    };
    on_chunk(&mut records).map_err(|e| SnapshotError::Callback {
        path: path.to_path_buf(),
        offset: at,
        source: e.into(),
    })
}

/// Walks a decompressed chunk's record frames against its header.
fn check_records(chunk: &[u8], header: &ChunkHeader) -> Result<(), Corruption> {
    let mut pos = 0;
    let mut previous: Option<u32> = None;
    for _ in 0..header.count {
        let (id, _, end) = decode_record(chunk, pos).ok_or(Corruption::BadRecord { at: off(pos) })?;
        let floor = previous.unwrap_or(header.first_id);
        let ascending = match previous {
            Some(p) => id > p,
            None => id == header.first_id,
        };
        if !ascending {
            return Err(Corruption::IdsNotAscending {
                previous: floor,
                found: id,
            });
        }
        previous = Some(id);
        pos = end;
    }
    if let Some(last) = previous {
        if last != header.last_id {
            return Err(Corruption::IdsNotAscending {
                previous: last,
                found: header.last_id,
            });
        }
    }
    if pos != chunk.len() {
        return Err(Corruption::TrailingOctets {
            count: off(chunk.len() - pos),
        });
    }
    Ok(())
}

/// Step 4 and 5: the calling thread plus up to `threads - 1` scoped threads take chunks
/// from a shared counter until none is left or one fails.
fn run_chunks<F, E>(
    path: &Path,
    data: &[u8],
    jobs: &[Job],
    threads: usize,
    on_chunk: &F,
) -> Result<(), SnapshotError>
where
    F: Fn(&mut ChunkRecords<'_>) -> Result<(), E> + Sync,
    E: Into<Box<dyn StdError + Send + Sync>>,
{
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<(u64, SnapshotError)>> = Mutex::new(None);
    let work = || {
        let mut buf = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let Some(job) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) else {
                break;
            };
            if let Err(e) = load_chunk(path, data, job, &mut buf, on_chunk) {
                stop.store(true, Ordering::Relaxed);
                // Only this function holds the lock, for one assignment; poisoning cannot
                // leave the slot half-written.
                let mut slot = failure.lock().unwrap_or_else(|p| p.into_inner());
                if slot.as_ref().is_none_or(|(o, _)| job.entry.offset < *o) {
                    *slot = Some((job.entry.offset, e));
                }
                break;
            }
        }
    };
    let helpers = threads.min(jobs.len()).saturating_sub(1);
    std::thread::scope(|s| {
        for _ in 0..helpers {
            // A thread that cannot be created only means less parallelism: the calling
            // thread (and the helpers that did start) take all remaining chunks.
            if std::thread::Builder::new()
                .name("snapshot-load".into())
                .spawn_scoped(s, work)
                .is_err()
            {
                break;
            }
        }
        work();
    });
    match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}
