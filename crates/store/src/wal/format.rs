//! The on-disk format: segment names, the segment header, record frames. Byte-level
//! description in the module documentation of [`crate::wal`] and in `docs/formats.md`.

/// The first 8 octets of every segment.
pub const MAGIC: [u8; 8] = *b"LARCHWAL";
/// The format version written in the segment header of new segments. Readers accept it and
/// [`FORMAT_VERSION_1`]; they refuse any other.
pub const FORMAT_VERSION: u32 = 2;
/// The first format: no commit units (no record continues), and a record checksum that
/// leaves the length out. Still read; never written into.
pub const FORMAT_VERSION_1: u32 = 1;
/// In format 2, the bit of a record's length word that says the record *continues*: the
/// next record belongs to the same commit unit (the changes of one write, which recovery
/// keeps all or none of).
pub const CONTINUES: u32 = 1 << 31;
/// Octets of the segment header: magic, version, first LSN, header CRC32C.
pub const SEGMENT_HEADER_LEN: usize = 24;
/// Octets of a record frame before its payload: length, CRC32C, LSN.
pub const RECORD_HEADER_LEN: usize = 16;
/// The largest payload a record may carry (16 MiB). A larger declared length is corruption,
/// which also bounds what recovery trusts from a damaged length field.
pub const MAX_RECORD_PAYLOAD: usize = 16 << 20;
/// Default size at which the writer starts a new segment (64 MiB). A segment exceeds it
/// only when a single record is larger than the room left in an empty segment.
pub const SEGMENT_SIZE_LIMIT: u64 = 64 << 20;
/// The step in which the segment being written reserves space ahead of its records (4 MiB,
/// or the segment size limit when that is smaller): a batch's fsync then writes only the
/// data, no new blocks or length (`Storage::open_append_reserving`). The reserved space
/// reads as zeros, so the last segment may end in zeros after its last record; the writer
/// gives the space back before it starts the next segment.
pub const SEGMENT_RESERVE_CHUNK: u64 = 4 << 20;

/// Whether everything in `segment` from `offset` on is zero: the space the last segment
/// reserved ahead of its records, not a record. (A torn record is not all zeros: its
/// length word or checksum is written first.)
pub fn is_reserved_tail(segment: &[u8], offset: usize) -> bool {
    segment
        .get(offset..)
        .is_some_and(|tail| tail.chunks(4096).all(|c| c.iter().fold(0, |a, &b| a | b) == 0))
}

/// A problem found in a segment header or a record frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Corruption {
    /// The file ends inside the header or a record (a torn write if at the end of the log).
    #[error("the data ends inside the element")]
    Incomplete,
    /// The segment does not start with [`MAGIC`].
    #[error("not a Larch WAL segment (bad magic)")]
    BadMagic,
    /// A format version this code does not read.
    #[error("unsupported format version {version}")]
    UnsupportedVersion {
        /// The version in the header.
        version: u32,
    },
    /// The header's CRC32C does not match its content.
    #[error("header checksum mismatch")]
    HeaderChecksum,
    /// The first LSN in the header differs from the one in the file name.
    #[error("header says first LSN {header}, file name says {name}")]
    HeaderLsnMismatch {
        /// LSN from the file name.
        name: u64,
        /// LSN from the header.
        header: u64,
    },
    /// A record length above [`MAX_RECORD_PAYLOAD`].
    #[error("record length {len} is above the limit of {MAX_RECORD_PAYLOAD}")]
    LengthTooLarge {
        /// The declared payload length.
        len: u32,
    },
    /// The record's CRC32C does not match its LSN and payload.
    #[error("record checksum mismatch")]
    Checksum,
    /// The log ends inside a commit unit: its last record says the next belongs to the same
    /// unit, and there is no next. Recovery cuts the whole unit at the end of the log.
    #[error("the log ends inside a write of several records")]
    UnfinishedUnit,
    /// The record's LSN is not the next in sequence.
    #[error("expected LSN {expected}, found {found}")]
    UnexpectedLsn {
        /// The LSN that should follow.
        expected: u64,
        /// The LSN in the record.
        found: u64,
    },
}

/// The file name of the segment whose first record has LSN `first_lsn`.
pub fn segment_name(first_lsn: u64) -> String {
    format!("wal-{first_lsn:016x}.log")
}

/// The first LSN named by a segment file name, or `None` if `name` is not exactly a
/// segment name as [`segment_name`] writes it (other files in the directory are ignored).
pub fn parse_segment_name(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("wal-")?.strip_suffix(".log")?;
    if hex.len() != 16 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

fn le_u32(buf: &[u8], at: usize) -> Option<u32> {
    let b: [u8; 4] = buf.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_le_bytes(b))
}

fn le_u64(buf: &[u8], at: usize) -> Option<u64> {
    let b: [u8; 8] = buf.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// Appends a segment header for a segment starting at `first_lsn`.
pub fn encode_header(first_lsn: u64, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&first_lsn.to_le_bytes());
    let crc = crc32c::crc32c(out.get(start..).unwrap_or_default());
    out.extend_from_slice(&crc.to_le_bytes());
}

/// What a segment header declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentHeader {
    /// The LSN of the segment's first record.
    pub first_lsn: u64,
    /// The format of its records ([`FORMAT_VERSION`] or [`FORMAT_VERSION_1`]).
    pub version: u32,
}

/// Checks a segment header at the start of `buf`.
pub fn decode_header(buf: &[u8]) -> Result<SegmentHeader, Corruption> {
    let header = buf.get(..SEGMENT_HEADER_LEN).ok_or(Corruption::Incomplete)?;
    if header.get(..8) != Some(&MAGIC[..]) {
        return Err(Corruption::BadMagic);
    }
    let version = le_u32(header, 8).ok_or(Corruption::Incomplete)?;
    if version != FORMAT_VERSION && version != FORMAT_VERSION_1 {
        return Err(Corruption::UnsupportedVersion { version });
    }
    let first_lsn = le_u64(header, 12).ok_or(Corruption::Incomplete)?;
    let crc = le_u32(header, 20).ok_or(Corruption::Incomplete)?;
    if crc32c::crc32c(header.get(..20).unwrap_or_default()) != crc {
        return Err(Corruption::HeaderChecksum);
    }
    Ok(SegmentHeader { first_lsn, version })
}

/// The CRC32C of a record: over the length word's 4 little-endian octets (the
/// [`CONTINUES`] bit included), the LSN's 8, then the payload. (Format 1 left the length
/// out: [`record_crc_v1`].)
pub fn record_crc(word: u32, lsn: u64, payload: &[u8]) -> u32 {
    let head = crc32c::crc32c_append(crc32c::crc32c(&word.to_le_bytes()), &lsn.to_le_bytes());
    crc32c::crc32c_append(head, payload)
}

/// The CRC32C of a format-1 record: over the LSN's 8 little-endian octets, then the payload.
pub fn record_crc_v1(lsn: u64, payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&lsn.to_le_bytes()), payload)
}

/// Appends one record frame in the current format; `continues` when the next record
/// belongs to the same commit unit. The caller has checked
/// `payload.len() <= MAX_RECORD_PAYLOAD`.
pub fn encode_record(lsn: u64, payload: &[u8], continues: bool, out: &mut Vec<u8>) {
    debug_assert!(payload.len() <= MAX_RECORD_PAYLOAD);
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    let word = if continues { len | CONTINUES } else { len };
    out.extend_from_slice(&word.to_le_bytes());
    out.extend_from_slice(&record_crc(word, lsn, payload).to_le_bytes());
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(payload);
}

/// One record frame decoded from a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The record's LSN.
    pub lsn: u64,
    /// The record's payload.
    pub payload: &'a [u8],
    /// The next record belongs to the same commit unit (always false in format 1).
    pub continues: bool,
    /// Offset just after the frame.
    pub end: usize,
}

/// Decodes the record frame at `offset` of a segment of format `version`, which must carry
/// `expected_lsn`.
pub fn decode_record(
    segment: &[u8],
    offset: usize,
    expected_lsn: u64,
    version: u32,
) -> Result<Frame<'_>, Corruption> {
    let word = le_u32(segment, offset).ok_or(Corruption::Incomplete)?;
    let crc = le_u32(segment, offset.saturating_add(4)).ok_or(Corruption::Incomplete)?;
    let lsn = le_u64(segment, offset.saturating_add(8)).ok_or(Corruption::Incomplete)?;
    // Format 1 has no flag: a set top bit there is a length above the limit.
    let (len, continues) = match version {
        FORMAT_VERSION_1 => (word, false),
        _ => (word & !CONTINUES, word & CONTINUES != 0),
    };
    if len as usize > MAX_RECORD_PAYLOAD {
        return Err(Corruption::LengthTooLarge { len });
    }
    let start = offset.saturating_add(RECORD_HEADER_LEN);
    let end = start.saturating_add(len as usize);
    let payload = segment.get(start..end).ok_or(Corruption::Incomplete)?;
    let expected_crc = match version {
        FORMAT_VERSION_1 => record_crc_v1(lsn, payload),
        _ => record_crc(word, lsn, payload),
    };
    if expected_crc != crc {
        return Err(Corruption::Checksum);
    }
    if lsn != expected_lsn {
        return Err(Corruption::UnexpectedLsn {
            expected: expected_lsn,
            found: lsn,
        });
    }
    Ok(Frame {
        lsn,
        payload,
        continues,
        end,
    })
}
