//! The on-disk format of a snapshot file: file names, the header, chunk headers, record
//! frames inside a chunk, the footer with its chunk directory, the trailer, and the limits
//! every length read from a file is checked against before it is trusted. Byte-level
//! description in the module documentation of [`crate::snapshot`] and in `docs/formats.md`.
//!
//! Decoding functions here only look at octets; they return the offset and the
//! [`Corruption`] found, and the reader adds the file's path.

use super::SnapshotMeta;
use crate::wal::Lsn;

/// The first 8 octets of every snapshot file.
pub const MAGIC: [u8; 8] = *b"LARCHSNP";
/// The last 8 octets of every complete snapshot file (the end of the trailer).
pub const END_MAGIC: [u8; 8] = *b"LARCHEND";
/// The format version written in the header; readers refuse any other.
pub const FORMAT_VERSION: u32 = 1;
/// Octets of the header besides the `extra` blob: 44 octets of fields before it, the
/// CRC32C after it.
pub const HEADER_FIXED_LEN: usize = 48;
/// Octets of a chunk header: first ID, last ID, record count, uncompressed length,
/// compressed length, CRC32C of the compressed octets, CRC32C of the header itself.
pub const CHUNK_HEADER_LEN: usize = 28;
/// Octets before each record's data inside a decompressed chunk: entry ID and length.
pub const RECORD_HEADER_LEN: usize = 8;
/// Octets of the footer besides its chunk directory: LSN, record count, chunk count
/// before it, CRC32C after it.
pub const FOOTER_FIXED_LEN: usize = 24;
/// Octets of one chunk directory entry: offset, length, first ID, last ID.
pub const DIRECTORY_ENTRY_LEN: usize = 20;
/// Octets of the trailer at the very end of the file.
pub const TRAILER_LEN: usize = 24;

/// The largest `extra` blob (16 MiB). It holds the store's attribute-type dictionary and
/// settings, which are far smaller; the limit keeps a corrupt length from being trusted.
pub const MAX_EXTRA_LEN: usize = 16 << 20;
/// The largest record (32 MiB): twice the WAL's payload limit, so every entry the log can
/// carry fits with room for the store's own framing. A corrupt record length above it is
/// refused before it is used.
pub const MAX_RECORD_LEN: usize = 32 << 20;
/// The largest uncompressed chunk: one record of the largest size with its frame. A chunk
/// holds more than one record only while it stays within the chunk target, which is at
/// most this, so no valid chunk is larger; each reading thread allocates at most this much.
pub const MAX_CHUNK_LEN: usize = RECORD_HEADER_LEN + MAX_RECORD_LEN;
/// The largest compressed chunk: above LZ4's worst-case expansion of [`MAX_CHUNK_LEN`]
/// octets (`n + n / 255 + 16`) and of `lz4_flex`'s output bound (`n * 1.1 + 20`).
pub const MAX_COMPRESSED_LEN: usize = MAX_CHUNK_LEN + MAX_CHUNK_LEN / 8 + 64;
/// The most chunks a file may have (4 Mi): at the default target that is about 4 TiB of
/// uncompressed records, beyond any in-memory directory, and the directory stays under
/// 80 MiB.
pub const MAX_CHUNKS: usize = 1 << 22;
/// The largest footer: the fixed part and a directory of [`MAX_CHUNKS`] entries.
pub const MAX_FOOTER_LEN: usize = FOOTER_FIXED_LEN + DIRECTORY_ENTRY_LEN * MAX_CHUNKS;
/// The default uncompressed size a chunk grows to before it is written (1 MiB): large
/// enough for LZ4 to find repetitions across entries and for the per-chunk cost to vanish,
/// small enough that a file of a few hundred MiB splits into enough chunks for every core.
pub const CHUNK_TARGET_LEN: usize = 1 << 20;

/// A problem found in a snapshot file. The offset it was found at travels beside it, in
/// [`SnapshotError::Corrupt`](super::SnapshotError::Corrupt).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Corruption {
    /// The file ends inside the named element (a truncated or partly written file).
    #[error("the file ends inside the {0}")]
    Truncated(&'static str),
    /// The file does not start with [`MAGIC`].
    #[error("not a Larch snapshot (bad magic)")]
    BadMagic,
    /// The file does not end with [`END_MAGIC`] (truncated, or not written to the end).
    #[error("the end marker is missing (truncated or incomplete file)")]
    NoEndMarker,
    /// A CRC32C over the named element does not match.
    #[error("{0} checksum mismatch")]
    Checksum(&'static str),
    /// The header's `extra` blob is declared longer than [`MAX_EXTRA_LEN`].
    #[error("extra header data of {len} octets is above the limit of {MAX_EXTRA_LEN}")]
    ExtraTooLarge {
        /// The declared length.
        len: u64,
    },
    /// The header's LSN differs from the one in the file name.
    #[error("header says LSN {header}, file name says {name}")]
    NameLsnMismatch {
        /// LSN from the file name.
        name: Lsn,
        /// LSN from the header.
        header: Lsn,
    },
    /// The trailer points at a footer that is not between the header and the trailer.
    #[error("the trailer points at a footer of {len} octets at offset {offset}, outside the file's layout")]
    FooterBounds {
        /// The footer offset in the trailer.
        offset: u64,
        /// The footer length in the trailer.
        len: u64,
    },
    /// The footer declares more than [`MAX_CHUNKS`] chunks.
    #[error("{count} chunks is above the limit of {MAX_CHUNKS}")]
    TooManyChunks {
        /// The declared chunk count.
        count: u64,
    },
    /// The footer's length does not fit its chunk count.
    #[error("a footer of {len} octets cannot hold a directory of {chunks} chunks")]
    FooterLength {
        /// The footer's length.
        len: u64,
        /// The chunk count it declares.
        chunks: u64,
    },
    /// The footer's LSN or record count differs from the header's.
    #[error("the footer says {field} {footer}, the header says {header}")]
    FooterMismatch {
        /// `"LSN"` or `"record count"`.
        field: &'static str,
        /// The header's value.
        header: u64,
        /// The footer's value.
        footer: u64,
    },
    /// A chunk does not start where the previous one (or the header) ends, or the last one
    /// does not end where the footer starts.
    #[error("chunk expected at offset {expected}, the directory says {found}")]
    ChunkLayout {
        /// Where the chunk (or the footer) should start.
        expected: u64,
        /// Where the directory puts it.
        found: u64,
    },
    /// A chunk length outside the possible range (shorter than its header or above the
    /// compressed limit).
    #[error("chunk length {len} is impossible")]
    ChunkLength {
        /// The length in the directory.
        len: u64,
    },
    /// Entry IDs that do not strictly ascend (inside a chunk, across chunks, or a chunk
    /// whose first ID is above its last).
    #[error("entry ID {found} does not follow {previous}")]
    IdsNotAscending {
        /// The previous ID (or the chunk's first ID).
        previous: u32,
        /// The ID that should be larger.
        found: u32,
    },
    /// An entry ID at or above the header's next ID.
    #[error("entry ID {id} is not below the next ID {next_id}")]
    IdNotBelowNextId {
        /// The ID.
        id: u32,
        /// The header's next ID.
        next_id: u32,
    },
    /// A chunk header that disagrees with the chunk directory.
    #[error("the chunk header says {field} {header}, the directory says {directory}")]
    ChunkMismatch {
        /// `"first ID"`, `"last ID"` or `"compressed length"`.
        field: &'static str,
        /// The chunk header's value.
        header: u64,
        /// The directory's value.
        directory: u64,
    },
    /// A chunk's uncompressed length above [`MAX_CHUNK_LEN`].
    #[error("uncompressed chunk length {len} is above the limit of {MAX_CHUNK_LEN}")]
    ChunkTooLarge {
        /// The declared length.
        len: u64,
    },
    /// A record count that the chunk cannot hold (zero, more than its ID range, more frames
    /// than its length allows), or a total that differs from the header's entry count.
    #[error("record count {count} is impossible here (expected {expected})")]
    BadCount {
        /// The count found.
        count: u64,
        /// What it had to be (or the largest it could be).
        expected: u64,
    },
    /// LZ4 refused the compressed octets.
    #[error("LZ4 decompression failed: {0}")]
    Decompress(String),
    /// LZ4 produced a different number of octets than the chunk header declares.
    #[error("the chunk decompressed to {found} octets, its header says {expected}")]
    DecompressedLength {
        /// The declared uncompressed length.
        expected: u64,
        /// What decompression produced.
        found: u64,
    },
    /// A record frame inside a chunk that is cut off or declares a length above
    /// [`MAX_RECORD_LEN`]; `at` is its position in the decompressed chunk.
    #[error("bad record frame at position {at} of the decompressed chunk")]
    BadRecord {
        /// Position of the frame inside the decompressed chunk.
        at: u64,
    },
    /// Octets left in a decompressed chunk after its last record.
    #[error("{count} octets follow the chunk's last record")]
    TrailingOctets {
        /// How many.
        count: u64,
    },
}

/// A located problem: the file offset it was found at and what it is.
pub(crate) type Located = (u64, Corruption);

/// Why a header was refused: a corruption, or a version this code does not read.
#[derive(Debug)]
pub(crate) enum HeaderError {
    Corrupt(Located),
    Version(u32),
}

/// The file name of the snapshot taken at `lsn`.
pub fn snapshot_name(lsn: Lsn) -> String {
    format!("snapshot-{lsn:016x}.snap")
}

/// The name of the temporary file a snapshot at `lsn` is written to before its rename.
pub fn temp_name(lsn: Lsn) -> String {
    format!("snapshot-{lsn:016x}.tmp")
}

fn parse_with_suffix(name: &str, suffix: &str) -> Option<Lsn> {
    let hex = name.strip_prefix("snapshot-")?.strip_suffix(suffix)?;
    if hex.len() != 16 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// The LSN named by a snapshot file name, or `None` if `name` is not exactly a name as
/// [`snapshot_name`] writes it.
pub fn parse_snapshot_name(name: &str) -> Option<Lsn> {
    parse_with_suffix(name, ".snap")
}

/// The LSN named by a temporary file name as [`temp_name`] writes it.
pub fn parse_temp_name(name: &str) -> Option<Lsn> {
    parse_with_suffix(name, ".tmp")
}

pub(crate) fn le_u32(buf: &[u8], at: usize) -> Option<u32> {
    let b: [u8; 4] = buf.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_le_bytes(b))
}

pub(crate) fn le_u64(buf: &[u8], at: usize) -> Option<u64> {
    let b: [u8; 8] = buf.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// A `usize` as a file offset (lossless on every supported platform).
pub(crate) fn off(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// A `u64` from the file as a `usize`, saturating (callers bound it first).
pub(crate) fn size(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Appends the header for `meta`. The caller has checked `meta.extra.len() <=
/// MAX_EXTRA_LEN`.
pub(crate) fn encode_header(meta: &SnapshotMeta, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&meta.lsn.to_le_bytes());
    out.extend_from_slice(&meta.next_id.to_le_bytes());
    out.extend_from_slice(&meta.entry_count.to_le_bytes());
    out.extend_from_slice(&meta.created_unix_secs.to_le_bytes());
    let extra_len = u32::try_from(meta.extra.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&extra_len.to_le_bytes());
    out.extend_from_slice(&meta.extra);
    let crc = crc32c::crc32c(out.get(start..).unwrap_or_default());
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Checks the header at the start of `data`; returns what it declares and its length.
/// Order: magic, version (so a newer file gets a clear message), `extra` length bound,
/// completeness, checksum.
pub(crate) fn decode_header(data: &[u8]) -> Result<(SnapshotMeta, usize), HeaderError> {
    let bad = |at: usize, c: Corruption| HeaderError::Corrupt((off(at), c));
    match data.get(..MAGIC.len()) {
        Some(m) if m == MAGIC => {}
        Some(_) => return Err(bad(0, Corruption::BadMagic)),
        None if MAGIC.starts_with(data) => return Err(bad(0, Corruption::Truncated("header"))),
        None => return Err(bad(0, Corruption::BadMagic)),
    }
    let truncated = || bad(0, Corruption::Truncated("header"));
    let version = le_u32(data, 8).ok_or_else(truncated)?;
    if version != FORMAT_VERSION {
        return Err(HeaderError::Version(version));
    }
    let lsn = le_u64(data, 12).ok_or_else(truncated)?;
    let next_id = le_u32(data, 20).ok_or_else(truncated)?;
    let entry_count = le_u64(data, 24).ok_or_else(truncated)?;
    let created_unix_secs = le_u64(data, 32).ok_or_else(truncated)?;
    let extra_len = le_u32(data, 40).ok_or_else(truncated)?;
    if extra_len as usize > MAX_EXTRA_LEN {
        return Err(bad(
            40,
            Corruption::ExtraTooLarge {
                len: u64::from(extra_len),
            },
        ));
    }
    let len = HEADER_FIXED_LEN + extra_len as usize;
    let crc_at = len - 4;
    let crc = le_u32(data, crc_at).ok_or_else(truncated)?;
    let covered = data.get(..crc_at).ok_or_else(truncated)?;
    if crc32c::crc32c(covered) != crc {
        return Err(bad(crc_at, Corruption::Checksum("header")));
    }
    let extra = data.get(44..crc_at).ok_or_else(truncated)?.to_vec();
    let meta = SnapshotMeta {
        lsn,
        next_id,
        entry_count,
        created_unix_secs,
        extra,
    };
    Ok((meta, len))
}

/// A chunk header as written before the compressed octets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkHeader {
    pub first_id: u32,
    pub last_id: u32,
    pub count: u32,
    pub raw_len: u32,
    pub packed_len: u32,
    pub data_crc: u32,
}

impl ChunkHeader {
    /// Writes the header into the first [`CHUNK_HEADER_LEN`] octets of `out`.
    pub(crate) fn encode(&self, out: &mut [u8; CHUNK_HEADER_LEN]) {
        let fields = [
            self.first_id,
            self.last_id,
            self.count,
            self.raw_len,
            self.packed_len,
            self.data_crc,
        ];
        for (slot, v) in out.chunks_exact_mut(4).zip(fields) {
            slot.copy_from_slice(&v.to_le_bytes());
        }
        let crc = crc32c::crc32c(out.get(..24).unwrap_or_default());
        if let Some(slot) = out.get_mut(24..28) {
            slot.copy_from_slice(&crc.to_le_bytes());
        }
    }

    /// Reads and checks (own CRC only) the chunk header at `at` of `data`.
    pub(crate) fn decode(data: &[u8], at: usize) -> Result<ChunkHeader, Located> {
        let truncated = || (off(at), Corruption::Truncated("chunk header"));
        let h = data
            .get(at..at.saturating_add(CHUNK_HEADER_LEN))
            .ok_or_else(truncated)?;
        let f = |i: usize| le_u32(h, i * 4).ok_or_else(truncated);
        let crc = f(6)?;
        if crc32c::crc32c(h.get(..24).unwrap_or_default()) != crc {
            return Err((off(at), Corruption::Checksum("chunk header")));
        }
        Ok(ChunkHeader {
            first_id: f(0)?,
            last_id: f(1)?,
            count: f(2)?,
            raw_len: f(3)?,
            packed_len: f(4)?,
            data_crc: f(5)?,
        })
    }
}

/// One entry of the chunk directory in the footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DirEntry {
    /// Offset of the chunk header.
    pub offset: u64,
    /// Chunk header plus compressed octets.
    pub len: u32,
    pub first_id: u32,
    pub last_id: u32,
}

/// Appends the footer (fixed fields, directory, CRC32C).
pub(crate) fn encode_footer(lsn: Lsn, records: u64, chunks: &[DirEntry], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(&records.to_le_bytes());
    let count = u32::try_from(chunks.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&count.to_le_bytes());
    for c in chunks {
        out.extend_from_slice(&c.offset.to_le_bytes());
        out.extend_from_slice(&c.len.to_le_bytes());
        out.extend_from_slice(&c.first_id.to_le_bytes());
        out.extend_from_slice(&c.last_id.to_le_bytes());
    }
    let crc = crc32c::crc32c(out.get(start..).unwrap_or_default());
    out.extend_from_slice(&crc.to_le_bytes());
}

/// The footer's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Footer {
    pub lsn: Lsn,
    pub records: u64,
    pub chunks: Vec<DirEntry>,
}

/// Reads and checks (CRC, length against chunk count, chunk limit) the footer occupying
/// `data[at..at + len]`. The directory is allocated only after its size is known to fit.
pub(crate) fn decode_footer(data: &[u8], at: usize, len: usize) -> Result<Footer, Located> {
    let truncated = || (off(at), Corruption::Truncated("footer"));
    let f = data.get(at..at.saturating_add(len)).ok_or_else(truncated)?;
    if len < FOOTER_FIXED_LEN {
        return Err((
            off(at),
            Corruption::FooterLength {
                len: off(len),
                chunks: 0,
            },
        ));
    }
    let crc_at = len - 4;
    let crc = le_u32(f, crc_at).ok_or_else(truncated)?;
    if crc32c::crc32c(f.get(..crc_at).unwrap_or_default()) != crc {
        return Err((off(at + crc_at), Corruption::Checksum("footer")));
    }
    let lsn = le_u64(f, 0).ok_or_else(truncated)?;
    let records = le_u64(f, 8).ok_or_else(truncated)?;
    let count = le_u32(f, 16).ok_or_else(truncated)? as usize;
    if count > MAX_CHUNKS {
        return Err((off(at + 16), Corruption::TooManyChunks { count: off(count) }));
    }
    if len != FOOTER_FIXED_LEN + DIRECTORY_ENTRY_LEN * count {
        return Err((
            off(at),
            Corruption::FooterLength {
                len: off(len),
                chunks: off(count),
            },
        ));
    }
    let mut chunks = Vec::with_capacity(count);
    for i in 0..count {
        let e = 20 + DIRECTORY_ENTRY_LEN * i;
        chunks.push(DirEntry {
            offset: le_u64(f, e).ok_or_else(truncated)?,
            len: le_u32(f, e + 8).ok_or_else(truncated)?,
            first_id: le_u32(f, e + 12).ok_or_else(truncated)?,
            last_id: le_u32(f, e + 16).ok_or_else(truncated)?,
        });
    }
    Ok(Footer { lsn, records, chunks })
}

/// Appends the trailer pointing at a footer of `footer_len` octets at `footer_offset`.
pub(crate) fn encode_trailer(footer_offset: u64, footer_len: u32, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&footer_offset.to_le_bytes());
    out.extend_from_slice(&footer_len.to_le_bytes());
    let crc = crc32c::crc32c(out.get(start..).unwrap_or_default());
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&END_MAGIC);
}

/// Reads and checks the trailer at the end of `data`, whose header is `header_len` octets;
/// returns the footer's offset and length, checked to lie exactly between the header and
/// the trailer.
pub(crate) fn decode_trailer(data: &[u8], header_len: usize) -> Result<(usize, usize), Located> {
    let end = data.len();
    if end < header_len.saturating_add(TRAILER_LEN) {
        return Err((off(end), Corruption::Truncated("trailer")));
    }
    let at = end - TRAILER_LEN;
    let truncated = || (off(at), Corruption::Truncated("trailer"));
    let t = data.get(at..).ok_or_else(truncated)?;
    if t.get(16..24) != Some(&END_MAGIC[..]) {
        return Err((off(at + 16), Corruption::NoEndMarker));
    }
    let crc = le_u32(t, 12).ok_or_else(truncated)?;
    if crc32c::crc32c(t.get(..12).unwrap_or_default()) != crc {
        return Err((off(at + 12), Corruption::Checksum("trailer")));
    }
    let footer_offset = le_u64(t, 0).ok_or_else(truncated)?;
    let footer_len = le_u32(t, 8).ok_or_else(truncated)?;
    let bounds = Corruption::FooterBounds {
        offset: footer_offset,
        len: u64::from(footer_len),
    };
    let fits = footer_offset >= off(header_len)
        && (footer_len as usize) <= MAX_FOOTER_LEN
        && footer_offset.checked_add(u64::from(footer_len)) == Some(off(at));
    if !fits {
        return Err((off(at), bounds));
    }
    Ok((size(footer_offset), footer_len as usize))
}

/// Appends one record frame to a chunk being built. The caller has checked
/// `data.len() <= MAX_RECORD_LEN`.
pub(crate) fn encode_record(id: u32, data: &[u8], out: &mut Vec<u8>) {
    let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(data);
}

/// Reads the record frame at `at` of a decompressed chunk: its ID, data and end. `None`
/// when the frame is cut off or its length is above [`MAX_RECORD_LEN`].
pub(crate) fn decode_record(chunk: &[u8], at: usize) -> Option<(u32, &[u8], usize)> {
    let id = le_u32(chunk, at)?;
    let len = le_u32(chunk, at.checked_add(4)?)? as usize;
    if len > MAX_RECORD_LEN {
        return None;
    }
    let start = at.checked_add(RECORD_HEADER_LEN)?;
    let end = start.checked_add(len)?;
    Some((id, chunk.get(start..end)?, end))
}
