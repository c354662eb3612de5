//! Cutting the log back: every record from an LSN on removed, durably (a replicated log's
//! uncommitted tail that a new leader's log replaces; see [`super::Wal::truncate_from`]).
//!
//! Segments whose first LSN is at or after the cut are removed, newest first; the segment
//! holding the cut is truncated at the start of the cut's record and fsynced; then the
//! directory is fsynced. A crash in between leaves a log that ends earlier than it did
//! and later than the cut, with whole records: recovery reads it as it is, and the caller
//! (which had asked for the cut) cuts it again. The cut never removes part of a commit
//! unit a caller did not ask to remove: replicated logs write one record per unit.

use std::path::{Path, PathBuf};

use super::format::{decode_header, decode_record, is_reserved_tail, SEGMENT_HEADER_LEN};
use super::recovery::list_segments;
use super::{Lsn, WalError};
use crate::storage::Storage;

/// The last segment left after a cut, and its length.
pub(crate) struct CutEnd {
    pub path: PathBuf,
    pub len: u64,
}

/// Removes every record with LSN >= `from` from the log in `dir`; returns the segment
/// that now ends the log (`None` when no segment is left).
pub(crate) fn cut_from(storage: &dyn Storage, dir: &Path, from: Lsn) -> Result<Option<CutEnd>, WalError> {
    let segments = list_segments(storage, dir)?;
    let mut end = None;
    for seg in segments.iter().rev() {
        if seg.first_lsn >= from {
            storage
                .remove(&seg.path)
                .map_err(|e| WalError::io("remove", &seg.path, e))?;
            continue;
        }
        let data = storage
            .read(&seg.path)
            .map_err(|e| WalError::io("read", &seg.path, e))?;
        let offset = record_offset(&data, &seg.path, from)?;
        if offset < data.len() {
            storage
                .truncate(&seg.path, offset as u64)
                .map_err(|e| WalError::io("truncate", &seg.path, e))?;
        }
        end = Some(CutEnd {
            path: seg.path.clone(),
            len: offset as u64,
        });
        break;
    }
    storage.sync_dir(dir).map_err(|e| WalError::io("sync", dir, e))?;
    Ok(end)
}

/// The offset of record `lsn` in a segment, or its end (before any reserved zeros) when the
/// segment ends before it.
fn record_offset(data: &[u8], path: &Path, lsn: Lsn) -> Result<usize, WalError> {
    let header = decode_header(data).map_err(|problem| WalError::BadHeader {
        path: path.to_path_buf(),
        problem,
    })?;
    let mut offset = SEGMENT_HEADER_LEN;
    let mut next = header.first_lsn;
    while offset < data.len() && next < lsn {
        let frame = match decode_record(data, offset, next, header.version) {
            Ok(frame) => frame,
            Err(_) if is_reserved_tail(data, offset) => break,
            Err(problem) => {
                return Err(WalError::CorruptRecord {
                    path: path.to_path_buf(),
                    offset: offset as u64,
                    problem,
                })
            }
        };
        offset = frame.end;
        next += 1;
    }
    Ok(offset)
}
