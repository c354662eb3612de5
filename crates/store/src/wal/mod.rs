//! The write-ahead log: every change is appended here, and fsynced, before it is
//! acknowledged; at startup the records after the snapshot's LSN are replayed.
//!
//! # Format (version 2; the same text, with tables, is in `docs/formats.md`)
//!
//! A log is a directory of segment files named `wal-<LSN>.log`, where `<LSN>` is the LSN of
//! the segment's first record as exactly 16 lowercase hexadecimal digits. Other file names
//! are ignored. All integers are little-endian.
//!
//! Segment header, 24 octets:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | magic `LARCHWAL` (ASCII) |
//! | 8 | 4 | format version, u32 = 2 (1 is still read, see below) |
//! | 12 | 8 | first LSN, u64 (equals the file name's) |
//! | 20 | 4 | CRC32C (Castagnoli) of octets 0..20 |
//!
//! Then records, back to back, until the end of the file (or the last segment's reserved
//! zeros):
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 4 | length word, u32: bits 0..31 the payload length `n`, at most [`MAX_RECORD_PAYLOAD`]; bit 31 ([`CONTINUES`]) set when the next record belongs to the same commit unit |
//! | 4 | 4 | CRC32C over the length word's 4 octets, the LSN's 8, then the payload |
//! | 8 | 8 | LSN, u64: 1 for the first record ever, then +1 per record, no gaps |
//! | 16 | n | payload (opaque here; the store writes a [`record::Change`]) |
//!
//! A *commit unit* is the records of one write that changed several entries (a subtree
//! delete; a write whose hooks changed other entries): every record of it but the last has
//! the [`CONTINUES`] bit. A unit is never split between segments, and recovery keeps a unit
//! whole or not at all: a log that ends inside one (a crash while it was written) loses the
//! whole unit, which was never acknowledged. A one-record write is a unit of one.
//!
//! A new segment starts when the next unit would take the current one past the size limit
//! ([`SEGMENT_SIZE_LIMIT`] by default), so the next segment's name is one past the previous
//! segment's last LSN. A segment is fsynced, and gives back the space it reserved ahead of its
//! records ([`SEGMENT_RESERVE_CHUNK`] at a time, so that a sync writes only data), before its
//! successor is created; only a crash leaves the last segment ending in reserved zeros.
//!
//! Format 1 (segments written before commit units) has no [`CONTINUES`] bit (its checksum
//! covers the LSN and the payload only); such segments are read as units of one record, and
//! the log never appends to one: opening a log whose last segment is of format 1 starts a
//! new segment.
//!
//! Recovery rules: see [`recovery`](recover) — in short, a torn or corrupt tail of the
//! *last* segment is truncated at the end of the last good record, or of the last whole
//! commit unit, and reported in [`RecoveryReport::cut`]; damage anywhere else is an error
//! naming the file and offset.
//!
//! Durability: see [`SyncPolicy`]; group commit is described in the writer's module.

mod format;
pub mod record;
mod recovery;
mod truncate;
mod writer;

use std::io;
use std::path::{Path, PathBuf};

pub use format::{
    decode_header, decode_record, encode_header, encode_record, parse_segment_name, record_crc,
    record_crc_v1, segment_name, Corruption, Frame, SegmentHeader, CONTINUES, FORMAT_VERSION,
    FORMAT_VERSION_1, MAGIC, MAX_RECORD_PAYLOAD, RECORD_HEADER_LEN, SEGMENT_HEADER_LEN,
    SEGMENT_RESERVE_CHUNK, SEGMENT_SIZE_LIMIT,
};
pub(crate) use recovery::list_segments;
pub use recovery::{oldest_segment_lsn, recover, Record, RecoveryReport, TailCut, WalReader};
pub use writer::{Acknowledged, FailureHook, LogRecord, SyncPolicy, Wal, WalOptions};

/// A log sequence number: 1 for the first record, then consecutive.
pub type Lsn = u64;

/// What can go wrong with the log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WalError {
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
    /// A segment header that is wrong (not a torn write: that is cut and reported).
    #[error("{}: bad WAL segment header: {problem}", path.display())]
    BadHeader {
        /// The segment.
        path: PathBuf,
        /// What is wrong.
        problem: Corruption,
    },
    /// A damaged record that recovery must not cut (it is not in the tail of the log).
    #[error("{}: corrupt WAL record at offset {offset}: {problem}", path.display())]
    CorruptRecord {
        /// The segment.
        path: PathBuf,
        /// Offset of the record's first octet.
        offset: u64,
        /// What is wrong.
        problem: Corruption,
    },
    /// A segment that does not start right after its predecessor (a missing segment).
    #[error("{}: segment starts at LSN {found}, expected {expected}", path.display())]
    LsnGap {
        /// The segment.
        path: PathBuf,
        /// The LSN that should start it.
        expected: Lsn,
        /// The LSN its name declares.
        found: Lsn,
    },
    /// A payload above [`MAX_RECORD_PAYLOAD`].
    #[error("a WAL record of {len} octets is above the limit of {MAX_RECORD_PAYLOAD}")]
    RecordTooLarge {
        /// The payload's length.
        len: usize,
    },
    /// No LSN is left (after 2^64 - 1 records).
    #[error("the LSN space is exhausted")]
    LsnExhausted,
    /// The writer stopped on an earlier error; the log must be reopened.
    #[error("the WAL writer stopped after an error: {0}")]
    Failed(String),
    /// The log is being closed.
    #[error("the WAL is closed")]
    Closed,
}

impl WalError {
    pub(crate) fn io(op: &'static str, path: &Path, source: io::Error) -> Self {
        WalError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}
