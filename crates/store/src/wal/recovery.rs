//! Recovery (verify every segment, cut a torn or corrupt tail, report it) and the record
//! reader used for replay.
//!
//! Recovery steps:
//! 1. List the directory; files named exactly `wal-<16 hex>.log` are segments, sorted by
//!    their first LSN; other files are ignored.
//! 2. Every segment's header must be valid and name the same first LSN as the file name;
//!    every segment after the first must start right after the previous one's last LSN.
//! 3. Every record must have a length within [`MAX_RECORD_PAYLOAD`], a matching CRC32C,
//!    and the next LSN.
//! 4. In the last segment, the first record that fails step 3 (or ends early) starts the
//!    tail that is cut; when the records before it end inside a commit unit (the last good
//!    record has the continues bit), the cut starts at that unit's first record instead.
//!    The file is truncated there (durably) and the cut is returned in
//!    [`RecoveryReport::cut`]. A last segment shorter than its header, or whose invalid
//!    header is followed by nothing but reserved zeros, is removed (the cut has offset 0):
//!    it was created just before a crash, and its header is fsynced before any record.
//!    When everything from the first failing record on is zeros, that is the space the
//!    segment reserved ahead of its records ([`SEGMENT_RESERVE_CHUNK`]), not damage: the
//!    file is truncated there the same way, but nothing is reported (a write that reached
//!    none of its octets to the disk was never acknowledged, as with a file that never
//!    grew).
//! 5. Anywhere else (a non-last segment, or a complete but invalid header) a failure is a
//!    [`WalError`] naming the file and offset: a finished segment was fsynced before the
//!    next one was created, so damage there is not a torn write and cutting it would
//!    silently drop acknowledged records. A non-last segment that ends inside a commit unit
//!    is such damage too (units are never split between segments).

use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(doc)]
use super::format::SEGMENT_RESERVE_CHUNK;
use super::format::{
    decode_header, decode_record, is_reserved_tail, parse_segment_name, Corruption, SegmentHeader,
    SEGMENT_HEADER_LEN,
};
use super::{Lsn, WalError};
use crate::storage::Storage;

/// Where recovery cut the log, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailCut {
    /// The segment that was cut (the last one).
    pub path: PathBuf,
    /// The offset of the first octet removed: the end of the last good record (or 0 when
    /// the segment was removed because its header was incomplete).
    pub offset: u64,
    /// How many octets were removed.
    pub discarded: u64,
    /// What was wrong at `offset`.
    pub reason: Corruption,
}

/// What recovery found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecoveryReport {
    /// Segments that remain, in LSN order.
    pub segments: Vec<PathBuf>,
    /// Valid records that remain.
    pub records: u64,
    /// LSN of the first remaining record.
    pub first_lsn: Option<Lsn>,
    /// LSN of the last remaining record.
    pub last_lsn: Option<Lsn>,
    /// The LSN the next record gets (`None` when there is no segment at all).
    pub next_lsn: Option<Lsn>,
    /// The torn or corrupt tail that was cut, if any.
    pub cut: Option<TailCut>,
    /// Octets in the last segment after recovery (header included), if there is one.
    pub(crate) last_segment_len: u64,
    /// The format of the last segment's records (the writer never appends to an older
    /// format's segment).
    pub(crate) last_segment_version: u32,
}

/// A segment file: its path and the LSN its name declares.
#[derive(Debug, Clone)]
pub(crate) struct SegmentFile {
    pub path: PathBuf,
    pub first_lsn: Lsn,
}

/// The segments in `dir`, sorted by first LSN.
pub(crate) fn list_segments(storage: &dyn Storage, dir: &Path) -> Result<Vec<SegmentFile>, WalError> {
    let names = storage.list(dir).map_err(|e| WalError::io("list", dir, e))?;
    let mut segments: Vec<SegmentFile> = names
        .iter()
        .filter_map(|n| {
            parse_segment_name(n).map(|first_lsn| SegmentFile {
                path: dir.join(n),
                first_lsn,
            })
        })
        .collect();
    segments.sort_by_key(|s| s.first_lsn);
    Ok(segments)
}

/// The first LSN of the oldest segment in `dir` (`None` when there is no segment): the
/// oldest record the log can still give, once the segment holds one.
pub fn oldest_segment_lsn(storage: &dyn Storage, dir: &Path) -> Result<Option<Lsn>, WalError> {
    Ok(list_segments(storage, dir)?.first().map(|s| s.first_lsn))
}

/// Verifies the log in `dir`, cuts a torn or corrupt tail of the last segment, and reports.
pub fn recover(storage: &dyn Storage, dir: &Path) -> Result<RecoveryReport, WalError> {
    let segments = list_segments(storage, dir)?;
    let mut report = RecoveryReport::default();
    let mut expected: Option<Lsn> = None;
    let count = segments.len();
    for (i, seg) in segments.iter().enumerate() {
        let is_last = i + 1 == count;
        if seg.first_lsn == 0 {
            // LSNs start at 1; 0 means "before the first record" everywhere.
            return Err(WalError::LsnGap {
                path: seg.path.clone(),
                expected: expected.unwrap_or(1),
                found: 0,
            });
        }
        if let Some(e) = expected {
            if seg.first_lsn != e {
                return Err(WalError::LsnGap {
                    path: seg.path.clone(),
                    expected: e,
                    found: seg.first_lsn,
                });
            }
        }
        let data = storage
            .read(&seg.path)
            .map_err(|e| WalError::io("read", &seg.path, e))?;
        let version = match decode_header(&data) {
            Ok(SegmentHeader { first_lsn, version }) if first_lsn == seg.first_lsn => version,
            Ok(SegmentHeader { first_lsn, .. }) => {
                return Err(WalError::BadHeader {
                    path: seg.path.clone(),
                    problem: Corruption::HeaderLsnMismatch {
                        name: seg.first_lsn,
                        header: first_lsn,
                    },
                })
            }
            // Created but crashed before its header was durable: no record can be in it (a
            // segment's header is fsynced before any record is written). With its space
            // reserved ahead, such a segment is a header's torn prefix, or nothing, followed
            // by zeros.
            Err(problem)
                if is_last
                    && (problem == Corruption::Incomplete || is_reserved_tail(&data, SEGMENT_HEADER_LEN)) =>
            {
                storage
                    .remove(&seg.path)
                    .map_err(|e| WalError::io("remove", &seg.path, e))?;
                storage.sync_dir(dir).map_err(|e| WalError::io("sync", dir, e))?;
                report.cut = Some(TailCut {
                    path: seg.path.clone(),
                    offset: 0,
                    discarded: data.len() as u64,
                    reason: problem,
                });
                report.next_lsn = Some(seg.first_lsn);
                report.last_segment_len = 0;
                return Ok(report);
            }
            Err(problem) => {
                return Err(WalError::BadHeader {
                    path: seg.path.clone(),
                    problem,
                })
            }
        };
        report.segments.push(seg.path.clone());
        let scan = scan_records(&data, seg.first_lsn, version)?;
        match (scan.end_problem(), is_last) {
            (None, _) => {}
            (Some((offset, problem)), true) => {
                storage
                    .truncate(&seg.path, offset as u64)
                    .map_err(|e| WalError::io("truncate", &seg.path, e))?;
                // The segment's reserved zeros after its last record are not damage.
                let reserved = problem != Corruption::UnfinishedUnit && is_reserved_tail(&data, offset);
                report.cut = (!reserved).then(|| TailCut {
                    path: seg.path.clone(),
                    offset: offset as u64,
                    discarded: (data.len() - offset) as u64,
                    reason: problem,
                });
            }
            (Some((offset, problem)), false) => {
                return Err(WalError::CorruptRecord {
                    path: seg.path.clone(),
                    offset: offset as u64,
                    problem,
                })
            }
        }
        if let Some(last) = scan.kept.last_lsn {
            report
                .first_lsn
                .get_or_insert(scan.kept.first_lsn.unwrap_or(last));
            report.last_lsn = Some(last);
        }
        report.records += scan.kept.records;
        expected = Some(scan.kept.next_lsn);
        if is_last {
            report.next_lsn = Some(scan.kept.next_lsn);
            report.last_segment_len = scan.kept.end as u64;
            report.last_segment_version = version;
        }
    }
    Ok(report)
}

/// The records of one segment that recovery keeps: up to the end of its last whole unit.
#[derive(Debug, Clone, Copy)]
struct Kept {
    /// Offset just after the last kept record (the header's end when none is kept).
    end: usize,
    records: u64,
    first_lsn: Option<Lsn>,
    last_lsn: Option<Lsn>,
    /// The LSN after the last kept record.
    next_lsn: Lsn,
}

/// What reading a segment's records found.
#[derive(Debug)]
struct Scan {
    kept: Kept,
    /// The first record that failed to decode: its offset and the problem.
    bad: Option<(usize, Corruption)>,
    /// The segment's last good records form an unfinished unit starting at this offset.
    unfinished_from: Option<usize>,
}

impl Scan {
    /// Where the segment stops being whole, and why: at an unfinished unit's first record
    /// (however it ends), else at the first bad record.
    fn end_problem(&self) -> Option<(usize, Corruption)> {
        match (self.unfinished_from, self.bad) {
            (Some(offset), _) => Some((offset, Corruption::UnfinishedUnit)),
            (None, bad) => bad,
        }
    }
}

/// Reads the records of a segment of format `version` whose first LSN is `first_lsn`,
/// keeping whole units only.
fn scan_records(data: &[u8], first_lsn: Lsn, version: u32) -> Result<Scan, WalError> {
    let mut kept = Kept {
        end: SEGMENT_HEADER_LEN,
        records: 0,
        first_lsn: None,
        last_lsn: None,
        next_lsn: first_lsn,
    };
    // The unit being read: its start offset, and the records read in it so far.
    let mut unit: Option<(usize, u64)> = None;
    let mut offset = SEGMENT_HEADER_LEN;
    let mut next = first_lsn;
    let mut bad = None;
    while offset < data.len() {
        match decode_record(data, offset, next, version) {
            Ok(frame) => {
                next = frame.lsn.checked_add(1).ok_or(WalError::LsnExhausted)?;
                let (start, count) = unit.take().unwrap_or((offset, 0));
                if frame.continues {
                    unit = Some((start, count + 1));
                } else {
                    kept.records += count + 1;
                    kept.first_lsn.get_or_insert(frame.lsn - count);
                    kept.last_lsn = Some(frame.lsn);
                    kept.next_lsn = next;
                    kept.end = frame.end;
                }
                offset = frame.end;
            }
            Err(problem) => {
                bad = Some((offset, problem));
                break;
            }
        }
    }
    Ok(Scan {
        kept,
        bad,
        unfinished_from: unit.map(|(start, _)| start),
    })
}

/// One record read back from the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The record's LSN.
    pub lsn: Lsn,
    /// The payload as appended.
    pub payload: Vec<u8>,
    /// The next record belongs to the same commit unit (the same write).
    pub continues: bool,
}

/// Iterates the records of a log directory after a given LSN, one segment in memory at a
/// time, verifying every CRC and the LSN sequence again.
///
/// It does not cut anything: run [`recover`] (or [`super::Wal::open`]) first. An incomplete
/// record at the end of the last segment ends the iteration (it is a write in progress), as
/// do the zeros of the space the last segment reserved after its records;
/// any other problem is yielded once as an error, and the iteration ends.
pub struct WalReader<'s> {
    storage: StorageRef<'s>,
    segments: std::vec::IntoIter<SegmentFile>,
    remaining_segments: usize,
    /// The segment being read: its path, content, format version and read offset.
    current: Option<(PathBuf, Vec<u8>, u32, usize)>,
    next_lsn: Option<Lsn>,
    after: Lsn,
    up_to: Lsn,
    done: bool,
}

/// The storage a reader reads through: borrowed (replay) or shared (a change feed's reader,
/// which lives across calls).
enum StorageRef<'s> {
    Borrowed(&'s dyn Storage),
    Shared(Arc<dyn Storage>),
}

impl StorageRef<'_> {
    fn get(&self) -> &dyn Storage {
        match self {
            StorageRef::Borrowed(s) => *s,
            StorageRef::Shared(s) => &**s,
        }
    }
}

impl<'s> WalReader<'s> {
    /// A reader of the records with `after < LSN <= up_to` in `dir`.
    pub fn open(storage: &'s dyn Storage, dir: &Path, after: Lsn, up_to: Lsn) -> Result<Self, WalError> {
        Self::open_with(StorageRef::Borrowed(storage), dir, after, up_to)
    }

    /// [`WalReader::open`] holding its own reference to the storage, so the reader can be
    /// kept between calls.
    pub fn open_shared(
        storage: Arc<dyn Storage>,
        dir: &Path,
        after: Lsn,
        up_to: Lsn,
    ) -> Result<WalReader<'static>, WalError> {
        WalReader::open_with(StorageRef::Shared(storage), dir, after, up_to)
    }

    fn open_with(storage: StorageRef<'s>, dir: &Path, after: Lsn, up_to: Lsn) -> Result<Self, WalError> {
        let mut segments = list_segments(storage.get(), dir)?;
        // Skip whole segments whose successor starts at or before `after + 1`: every record
        // in them is at or before `after`.
        let skip = segments
            .windows(2)
            .take_while(|w| w.get(1).is_some_and(|n| n.first_lsn <= after.saturating_add(1)))
            .count();
        segments.drain(..skip);
        Ok(WalReader {
            storage,
            remaining_segments: segments.len(),
            segments: segments.into_iter(),
            current: None,
            next_lsn: None,
            after,
            up_to,
            done: false,
        })
    }

    fn fail(&mut self, e: WalError) -> Option<Result<Record, WalError>> {
        self.done = true;
        Some(Err(e))
    }
}

impl Iterator for WalReader<'_> {
    type Item = Result<Record, WalError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            let Some((path, data, version, offset)) = self.current.as_mut() else {
                let Some(seg) = self.segments.next() else {
                    self.done = true;
                    return None;
                };
                self.remaining_segments -= 1;
                if let Some(n) = self.next_lsn {
                    if n != seg.first_lsn {
                        return self.fail(WalError::LsnGap {
                            path: seg.path,
                            expected: n,
                            found: seg.first_lsn,
                        });
                    }
                }
                let data = match self.storage.get().read(&seg.path) {
                    Ok(d) => d,
                    Err(e) => return self.fail(WalError::io("read", &seg.path, e)),
                };
                let version = match decode_header(&data) {
                    Ok(SegmentHeader { first_lsn, version }) if first_lsn == seg.first_lsn => version,
                    Ok(SegmentHeader { first_lsn, .. }) => {
                        return self.fail(WalError::BadHeader {
                            path: seg.path,
                            problem: Corruption::HeaderLsnMismatch {
                                name: seg.first_lsn,
                                header: first_lsn,
                            },
                        })
                    }
                    Err(problem) => {
                        return self.fail(WalError::BadHeader {
                            path: seg.path,
                            problem,
                        })
                    }
                };
                self.next_lsn = Some(seg.first_lsn);
                self.current = Some((seg.path, data, version, SEGMENT_HEADER_LEN));
                continue;
            };
            if *offset >= data.len() {
                self.current = None;
                continue;
            }
            let expected = self.next_lsn.unwrap_or(0);
            if expected > self.up_to {
                self.done = true;
                return None;
            }
            match decode_record(data, *offset, expected, *version) {
                Ok(frame) => {
                    *offset = frame.end;
                    self.next_lsn = expected.checked_add(1);
                    if frame.lsn > self.after {
                        return Some(Ok(Record {
                            lsn: frame.lsn,
                            payload: frame.payload.to_vec(),
                            continues: frame.continues,
                        }));
                    }
                }
                Err(Corruption::Incomplete) if self.remaining_segments == 0 => {
                    self.done = true;
                    return None;
                }
                // The last segment's reserved space after its last record.
                Err(_) if self.remaining_segments == 0 && is_reserved_tail(data, *offset) => {
                    self.done = true;
                    return None;
                }
                Err(problem) => {
                    let e = WalError::CorruptRecord {
                        path: path.clone(),
                        offset: *offset as u64,
                        problem,
                    };
                    return self.fail(e);
                }
            }
        }
    }
}
