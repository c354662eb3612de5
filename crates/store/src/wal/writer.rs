//! The writer thread and group commit.
//!
//! Protocol, in steps:
//! 1. [`Wal::append`] locks the shared state, takes the next LSN (so LSNs follow submission
//!    order), queues the payload, wakes the writer, and waits until its LSN is acknowledged
//!    or the writer has failed.
//! 2. The writer thread takes the whole queue at once: every record that arrived while it
//!    was busy with the previous batch (including its fsync).
//! 3. It frames the records into one buffer and writes it; when the next commit unit (a
//!    record, or the records of one caller's write that [`Wal::submit_batch`] marked as
//!    continuing) would push the segment past the size limit, it first writes and fsyncs
//!    what it has, gives back the space the segment reserved ahead of its records
//!    ([`SEGMENT_RESERVE_CHUNK`]), then creates the next segment (header written and
//!    fsynced, directory fsynced). A unit is never split between segments.
//! 4. Under [`SyncPolicy::Always`] it fsyncs once for the whole batch, then acknowledges
//!    every record in it. Under `Batch` and `None` it acknowledges after the write and
//!    fsyncs later (`Batch`: at most `window` after the first unsynced write; `None`: at a
//!    segment roll, on [`Wal::sync`] and on close).
//!    On close, after the last fsync, the last segment gives back its reserved space.
//! 5. Any I/O error (a failed write or fsync, a segment that cannot be created) stops the
//!    writer for good: the records not yet acknowledged, and every later append, get
//!    [`WalError::Failed`], and [`WalOptions::on_failure`] is told, once. An fsync is never
//!    retried: after a failure Linux may have dropped the dirty pages and a second fsync
//!    would report success for data that is gone, so the log must be reopened (recovery
//!    then decides what survived).
//! 6. Before it stops, the writer takes the failed batch out of the log again: the segment
//!    the batch began in is truncated back to its length before the batch (durably), and a
//!    segment the batch created is removed. A full disk usually accepts part of a write
//!    before refusing the rest; without this, a restart would replay the batch's first
//!    records, and a job that logged several (a subtree delete) would be half applied
//!    although no client was told it was written. [`Wal::submit_batch`] queues a caller's
//!    records at once, so one writer batch never holds part of them. If the undo fails
//!    too, the error passed to `on_failure` says so.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::format::{
    encode_header, encode_record, segment_name, FORMAT_VERSION, MAX_RECORD_PAYLOAD, RECORD_HEADER_LEN,
    SEGMENT_HEADER_LEN, SEGMENT_RESERVE_CHUNK, SEGMENT_SIZE_LIMIT,
};
use super::recovery::{recover, RecoveryReport, WalReader};
use super::{Lsn, WalError};
use crate::storage::{AppendFile, Storage};

/// When an appended record counts as acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncPolicy {
    /// Acknowledge after the record is fsynced (group commit shares one fsync among all
    /// records that arrived during the previous one). Nothing acknowledged is ever lost.
    #[default]
    Always,
    /// Acknowledge after the write; fsync at most `window` after the first unsynced write.
    /// A crash may lose up to `window` of acknowledged records.
    Batch {
        /// The longest time an acknowledged record may stay unsynced.
        window: Duration,
    },
    /// Acknowledge after the write; fsync only at segment rolls, [`Wal::sync`] and close.
    /// For benchmarks that say so: a crash may lose any acknowledged record.
    None,
}

/// Run by the writer thread once a record is acknowledged ([`Wal::on_acknowledged`]), or
/// with the error that stopped the writer (or [`WalError::Closed`] when the log closed
/// first). It must not block: it runs between the writer's batches.
pub type Acknowledged = Box<dyn FnOnce(Result<(), WalError>) + Send>;

/// Told of the error that stopped the writer (see the module documentation, step 5).
pub type FailureHook = Arc<dyn Fn(&WalError, Option<&WalError>) + Send + Sync>;

/// How to open a [`Wal`].
#[derive(Clone)]
pub struct WalOptions {
    /// When records are acknowledged.
    pub sync: SyncPolicy,
    /// Size at which a new segment is started (default [`SEGMENT_SIZE_LIMIT`]).
    pub segment_size_limit: u64,
    /// The LSN of the first record when the directory holds no segment (at least 1); for
    /// example one past the LSN of the snapshot the log continues.
    pub first_lsn: Lsn,
    /// Called once, on the writer thread, with the error that stopped the writer and, if
    /// the failed batch could not be taken out of the log again, the error of that undo.
    pub on_failure: Option<FailureHook>,
}

impl std::fmt::Debug for WalOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalOptions")
            .field("sync", &self.sync)
            .field("segment_size_limit", &self.segment_size_limit)
            .field("first_lsn", &self.first_lsn)
            .field("on_failure", &self.on_failure.is_some())
            .finish()
    }
}

impl Default for WalOptions {
    fn default() -> Self {
        WalOptions {
            sync: SyncPolicy::Always,
            segment_size_limit: SEGMENT_SIZE_LIMIT,
            first_lsn: 1,
            on_failure: None,
        }
    }
}

/// A record to append, as [`Wal::submit_batch`] takes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogRecord {
    /// The payload.
    pub payload: Vec<u8>,
    /// The next record belongs to the same commit unit: recovery keeps both or neither.
    pub continues: bool,
}

impl LogRecord {
    /// A record that ends its unit.
    pub fn single(payload: Vec<u8>) -> LogRecord {
        LogRecord {
            payload,
            continues: false,
        }
    }
}

/// A record queued for the writer thread.
struct Queued {
    lsn: Lsn,
    record: LogRecord,
}

/// Octets the frames of `unit` take.
fn frame_octets(unit: &[Queued]) -> u64 {
    unit.iter()
        .map(|q| (RECORD_HEADER_LEN + q.record.payload.len()) as u64)
        .sum()
}

/// The end (exclusive) of the commit unit that starts at `start` of `batch`: just after
/// its first record that does not continue, or the batch's end.
fn unit_end(batch: &[Queued], start: usize) -> usize {
    batch
        .iter()
        .skip(start)
        .position(|q| !q.record.continues)
        .map_or(batch.len(), |i| start + i + 1)
}

#[derive(Default)]
struct State {
    queue: Vec<Queued>,
    /// The LSN the next append gets.
    next_lsn: Lsn,
    /// Every record up to this LSN is acknowledged.
    acked_lsn: Lsn,
    /// Every record up to this LSN is fsynced.
    durable_lsn: Lsn,
    /// Set when the writer stopped on an error.
    failed: Option<String>,
    closing: bool,
    sync_requested: bool,
    /// A cut asked for ([`Wal::truncate_from`], [`Wal::restart_at`]): records from the
    /// first LSN on go, and the log goes on at the second.
    cut: Option<(Lsn, Lsn)>,
    /// Cuts done so far (a caller waits for the count to pass its own).
    cuts_done: u64,
    /// What to run once a record is acknowledged, in LSN order ([`Wal::on_acknowledged`]).
    on_acked: VecDeque<(Lsn, Acknowledged)>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the writer thread.
    work: Condvar,
    /// Wakes appenders waiting for acknowledgement.
    done: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is updated in single assignments; a panicking holder cannot leave it
        // inconsistent, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The write-ahead log: recovery at open, then appends with group commit.
pub struct Wal {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// The writer thread's view of the current segment.
struct SegmentWriter {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    /// The segment being written.
    path: PathBuf,
    file: Box<dyn AppendFile>,
    size: u64,
    records_in_segment: u64,
    limit: u64,
    buf: Vec<u8>,
    /// LSN of the last record in `buf` or written.
    framed_lsn: Lsn,
    written_lsn: Lsn,
    synced_lsn: Lsn,
    /// Where the batch being written began (step 6).
    mark: BatchMark,
}

/// The log as it was before the batch being written: the segment and its length, the LSNs
/// written and synced, and the segments the batch created since.
#[derive(Default)]
struct BatchMark {
    path: PathBuf,
    size: u64,
    records_in_segment: u64,
    written_lsn: Lsn,
    synced_lsn: Lsn,
    created: Vec<PathBuf>,
}

/// The step in which a segment of at most `limit` octets reserves space.
fn reserve_chunk(limit: u64) -> u64 {
    SEGMENT_RESERVE_CHUNK.min(limit)
}

/// Opens the segment at `path` to write after what it holds (recovery has cut any
/// reserved zeros), reserving space for a segment of at most `limit` octets.
fn open_segment(
    storage: &dyn Storage,
    path: &Path,
    limit: u64,
    what: &'static str,
) -> Result<Box<dyn AppendFile>, WalError> {
    storage
        .open_append_reserving(path, reserve_chunk(limit))
        .map_err(|e| WalError::io(what, path, e))
}

fn create_segment(
    storage: &dyn Storage,
    dir: &Path,
    first_lsn: Lsn,
    limit: u64,
) -> Result<Box<dyn AppendFile>, WalError> {
    let path = dir.join(segment_name(first_lsn));
    let mut file = open_segment(storage, &path, limit, "create")?;
    let mut header = Vec::with_capacity(SEGMENT_HEADER_LEN);
    encode_header(first_lsn, &mut header);
    file.write_all(&header)
        .map_err(|e| WalError::io("write", &path, e))?;
    file.sync().map_err(|e| WalError::io("sync", &path, e))?;
    storage.sync_dir(dir).map_err(|e| WalError::io("sync", dir, e))?;
    Ok(file)
}

/// Opening over a last segment of an older format: the segment is kept as it is (the
/// records it holds are read in their format; fsynced now, as every segment is before its
/// successor exists) and the next segment starts after it; when it holds no record, its
/// name is the next segment's, so it is removed instead.
fn retire_old_format_segment(
    storage: &dyn Storage,
    dir: &Path,
    path: &Path,
    len: u64,
) -> Result<(), WalError> {
    if len > SEGMENT_HEADER_LEN as u64 {
        let mut file = storage
            .open_append(path)
            .map_err(|e| WalError::io("open", path, e))?;
        return file.sync().map_err(|e| WalError::io("sync", path, e));
    }
    storage
        .remove(path)
        .map_err(|e| WalError::io("remove", path, e))?;
    storage.sync_dir(dir).map_err(|e| WalError::io("sync", dir, e))
}

impl SegmentWriter {
    /// Before a commit unit of `octets` whose first record is `lsn`: starts a new segment
    /// when the unit would take this one past the limit (unless this one is empty).
    fn make_room(&mut self, lsn: Lsn, octets: u64) -> Result<(), WalError> {
        if self.records_in_segment > 0 && self.size.saturating_add(octets) > self.limit {
            // A segment is complete and fsynced before its successor exists; recovery
            // relies on it (damage in a non-last segment is never a torn write).
            self.flush()?;
            self.sync()?;
            // Only the last segment may end in reserved zeros (recovery's rule).
            self.file
                .trim()
                .map_err(|e| WalError::io("truncate", &self.path, e))?;
            let path = self.dir.join(segment_name(lsn));
            // Noted before it exists: a creation that fails halfway leaves a file to remove.
            self.mark.created.push(path.clone());
            self.file = create_segment(&*self.storage, &self.dir, lsn, self.limit)?;
            self.path = path;
            self.size = SEGMENT_HEADER_LEN as u64;
            self.records_in_segment = 0;
        }
        Ok(())
    }

    /// Frames one record into the buffer ([`SegmentWriter::make_room`] was called for its
    /// unit).
    fn push(&mut self, lsn: Lsn, record: &LogRecord) -> Result<(), WalError> {
        let frame = (RECORD_HEADER_LEN + record.payload.len()) as u64;
        encode_record(lsn, &record.payload, record.continues, &mut self.buf);
        self.size = self.size.saturating_add(frame);
        self.records_in_segment += 1;
        self.framed_lsn = lsn;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), WalError> {
        if !self.buf.is_empty() {
            self.file
                .write_all(&self.buf)
                .map_err(|e| WalError::io("write", &self.path, e))?;
            self.buf.clear();
        }
        self.written_lsn = self.framed_lsn;
        Ok(())
    }

    fn sync(&mut self) -> Result<(), WalError> {
        if self.synced_lsn < self.written_lsn {
            self.file
                .sync()
                .map_err(|e| WalError::io("sync", &self.path, e))?;
            self.synced_lsn = self.written_lsn;
        }
        Ok(())
    }

    /// [`Wal::truncate_from`] on the writer thread, everything before it written and
    /// fsynced: the records from `from` on removed ([`super::truncate`]), and writing
    /// goes on at the end of what is left.
    fn cut_from(&mut self, from: Lsn, next: Lsn) -> Result<(), WalError> {
        let last = next - 1;
        match super::truncate::cut_from(&*self.storage, &self.dir, from)? {
            Some(end) => {
                self.file = open_segment(&*self.storage, &end.path, self.limit, "open")?;
                self.path = end.path;
                self.size = end.len;
            }
            None => {
                self.file = create_segment(&*self.storage, &self.dir, next, self.limit)?;
                self.path = self.dir.join(segment_name(next));
                self.size = SEGMENT_HEADER_LEN as u64;
                self.storage
                    .sync_dir(&self.dir)
                    .map_err(|e| WalError::io("sync", &self.dir, e))?;
            }
        }
        self.records_in_segment = u64::from(self.size > SEGMENT_HEADER_LEN as u64);
        self.framed_lsn = last;
        self.written_lsn = last;
        self.synced_lsn = last;
        Ok(())
    }

    /// Step 6, before a batch: remembers where it begins.
    fn begin_batch(&mut self) {
        self.mark = BatchMark {
            path: self.path.clone(),
            size: self.size,
            records_in_segment: self.records_in_segment,
            written_lsn: self.written_lsn,
            synced_lsn: self.synced_lsn,
            created: Vec::new(),
        };
    }

    /// Step 6, after a batch failed: removes the segments it created and truncates the one
    /// it began in to its length before it (durably). The writer stops afterwards; the
    /// LSNs are set back so that what it reports matches the file.
    fn undo_batch(&mut self) -> Result<(), WalError> {
        self.buf.clear();
        let mark = std::mem::take(&mut self.mark);
        for path in &mark.created {
            match self.storage.remove(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(WalError::io("remove", path, e)),
            }
        }
        if !mark.created.is_empty() {
            self.storage
                .sync_dir(&self.dir)
                .map_err(|e| WalError::io("sync", &self.dir, e))?;
        }
        self.storage
            .truncate(&mark.path, mark.size)
            .map_err(|e| WalError::io("truncate", &mark.path, e))?;
        self.path = mark.path;
        self.size = mark.size;
        self.records_in_segment = mark.records_in_segment;
        self.framed_lsn = mark.written_lsn;
        self.written_lsn = mark.written_lsn;
        self.synced_lsn = mark.synced_lsn.min(mark.written_lsn);
        Ok(())
    }
}

impl Wal {
    /// Opens (creating if needed) the log in `dir`: runs recovery (see
    /// [`super::recover`]), then starts the writer thread. The report says what was found
    /// and what, if anything, was cut; callers must log a cut.
    pub fn open(
        storage: Arc<dyn Storage>,
        dir: &Path,
        options: WalOptions,
    ) -> Result<(Wal, RecoveryReport), WalError> {
        storage
            .create_dir_all(dir)
            .map_err(|e| WalError::io("create", dir, e))?;
        let report = recover(&*storage, dir)?;
        // `last_segment_len` is 0 when there is no segment, or when recovery removed a last
        // segment whose header was torn: then a fresh segment is started. So is one after
        // a last segment of an older format, which is never appended to.
        let last_segment = report.segments.last().filter(|_| report.last_segment_len > 0);
        let last_segment = match last_segment {
            Some(path) if report.last_segment_version != FORMAT_VERSION => {
                retire_old_format_segment(&*storage, dir, path, report.last_segment_len)?;
                None
            }
            other => other,
        };
        let (file, path, next_lsn, size) = match (report.next_lsn, last_segment) {
            (Some(next), Some(path)) => {
                let file = open_segment(&*storage, path, options.segment_size_limit, "open")?;
                (file, path.clone(), next, report.last_segment_len)
            }
            (next, _) => {
                let first = next.unwrap_or(options.first_lsn).max(1);
                (
                    create_segment(&*storage, dir, first, options.segment_size_limit)?,
                    dir.join(segment_name(first)),
                    first,
                    SEGMENT_HEADER_LEN as u64,
                )
            }
        };
        let last = next_lsn.saturating_sub(1);
        let writer = SegmentWriter {
            storage: Arc::clone(&storage),
            dir: dir.to_path_buf(),
            path,
            file,
            size,
            records_in_segment: u64::from(size > SEGMENT_HEADER_LEN as u64),
            limit: options.segment_size_limit,
            buf: Vec::new(),
            framed_lsn: last,
            written_lsn: last,
            synced_lsn: last,
            mark: BatchMark::default(),
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                next_lsn,
                acked_lsn: last,
                durable_lsn: last,
                ..State::default()
            }),
            work: Condvar::new(),
            done: Condvar::new(),
        });
        let thread_shared = Arc::clone(&shared);
        let policy = options.sync;
        let on_failure = options.on_failure.clone();
        let thread = std::thread::Builder::new()
            .name("larch-wal".into())
            .spawn(move || run_writer(&thread_shared, writer, policy, on_failure))
            .map_err(|e| WalError::io("spawn writer for", dir, e))?;
        let wal = Wal {
            storage,
            dir: dir.to_path_buf(),
            shared,
            thread: Some(thread),
        };
        Ok((wal, report))
    }

    /// Appends one record and waits until it is acknowledged per the [`SyncPolicy`];
    /// returns its LSN. Concurrent callers share fsyncs (group commit).
    pub fn append(&self, payload: &[u8]) -> Result<Lsn, WalError> {
        let lsn = self.submit(payload.to_vec())?;
        self.wait_for(lsn)?;
        Ok(lsn)
    }

    /// Queues one record without waiting and returns its LSN; [`Wal::wait_for`] then waits
    /// for its acknowledgement. A caller that submits several records and waits for the
    /// last one waits for all of them (records are acknowledged in LSN order).
    pub fn submit(&self, payload: Vec<u8>) -> Result<Lsn, WalError> {
        if payload.len() > MAX_RECORD_PAYLOAD {
            return Err(WalError::RecordTooLarge { len: payload.len() });
        }
        let mut s = self.shared.lock();
        if let Some(msg) = &s.failed {
            return Err(WalError::Failed(msg.clone()));
        }
        if s.closing {
            return Err(WalError::Closed);
        }
        let lsn = s.next_lsn;
        s.next_lsn = lsn.checked_add(1).ok_or(WalError::LsnExhausted)?;
        s.queue.push(Queued {
            lsn,
            record: LogRecord::single(payload),
        });
        self.shared.work.notify_one();
        Ok(lsn)
    }

    /// Queues `records` at once, without waiting, and returns the LSNs of the first and the
    /// last; [`Wal::wait_for`] of the last then waits for all of them. The writer takes
    /// them in one batch, so a failure takes all of them out of the log or none (see the
    /// module documentation, step 6). Records marked [`LogRecord::continues`] form commit
    /// units with the records after them; a unit never extends past the last record of the
    /// call (its mark is ignored). `None` when `records` is empty.
    pub fn submit_batch(&self, mut records: Vec<LogRecord>) -> Result<Option<(Lsn, Lsn)>, WalError> {
        if let Some(r) = records.iter().find(|r| r.payload.len() > MAX_RECORD_PAYLOAD) {
            return Err(WalError::RecordTooLarge { len: r.payload.len() });
        }
        if let Some(last) = records.last_mut() {
            last.continues = false;
        }
        let mut s = self.shared.lock();
        if let Some(msg) = &s.failed {
            return Err(WalError::Failed(msg.clone()));
        }
        if s.closing {
            return Err(WalError::Closed);
        }
        let first = s.next_lsn;
        let count = records.len() as u64;
        if count == 0 {
            return Ok(None);
        }
        s.next_lsn = first.checked_add(count).ok_or(WalError::LsnExhausted)?;
        s.queue
            .extend((first..).zip(records).map(|(lsn, record)| Queued { lsn, record }));
        self.shared.work.notify_one();
        Ok(Some((first, first + count - 1)))
    }

    /// Waits until every record up to `lsn` is acknowledged per the [`SyncPolicy`], or the
    /// writer has failed.
    pub fn wait_for(&self, lsn: Lsn) -> Result<(), WalError> {
        let mut s = self.shared.lock();
        loop {
            if s.acked_lsn >= lsn {
                return Ok(());
            }
            if let Some(msg) = &s.failed {
                return Err(WalError::Failed(msg.clone()));
            }
            s = self.shared.done.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Runs `then` once every record up to `lsn` is acknowledged per the [`SyncPolicy`]
    /// (at once, on this thread, when they are already), or with the error that stopped
    /// the writer: [`Wal::wait_for`] without a thread waiting. `then` runs on the writer
    /// thread after the batch that acknowledged `lsn`, so it must not block.
    pub fn on_acknowledged(&self, lsn: Lsn, then: Acknowledged) {
        let mut s = self.shared.lock();
        if s.acked_lsn >= lsn {
            drop(s);
            return then(Ok(()));
        }
        if let Some(msg) = &s.failed {
            let e = WalError::Failed(msg.clone());
            drop(s);
            return then(Err(e));
        }
        // Kept in LSN order: callers wait for records they submitted, in order.
        let at = s.on_acked.partition_point(|(l, _)| *l <= lsn);
        s.on_acked.insert(at, (lsn, then));
    }

    /// Fsyncs everything appended so far (whatever the policy) and returns the last LSN
    /// that is now durable.
    pub fn sync(&self) -> Result<Lsn, WalError> {
        let mut s = self.shared.lock();
        let target = s.next_lsn.saturating_sub(1);
        s.sync_requested = true;
        self.shared.work.notify_one();
        loop {
            if s.durable_lsn >= target {
                return Ok(s.durable_lsn);
            }
            if let Some(msg) = &s.failed {
                return Err(WalError::Failed(msg.clone()));
            }
            s = self.shared.done.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The last LSN known to be fsynced.
    pub fn durable_lsn(&self) -> Lsn {
        self.shared.lock().durable_lsn
    }

    /// The last acknowledged LSN (equal to [`Wal::durable_lsn`] under `Always`).
    pub fn last_lsn(&self) -> Lsn {
        self.shared.lock().acked_lsn
    }

    /// Reads the acknowledged records with LSN > `after`.
    pub fn read_after(&self, after: Lsn) -> Result<WalReader<'_>, WalError> {
        let up_to = self.last_lsn();
        WalReader::open(&*self.storage, &self.dir, after, up_to)
    }

    /// Removes every segment whose records all have LSN < `lsn` (after a snapshot covering
    /// them is durable), then fsyncs the directory. The segment being written is never
    /// removed. Returns how many segments were removed.
    pub fn remove_segments_before(&self, lsn: Lsn) -> Result<usize, WalError> {
        let segments = super::recovery::list_segments(&*self.storage, &self.dir)?;
        let mut removed = 0;
        for pair in segments.windows(2) {
            let (Some(seg), Some(next)) = (pair.first(), pair.get(1)) else {
                continue;
            };
            // Every record of `seg` is below `next.first_lsn`.
            if next.first_lsn > lsn {
                break;
            }
            self.storage
                .remove(&seg.path)
                .map_err(|e| WalError::io("remove", &seg.path, e))?;
            removed += 1;
        }
        if removed > 0 {
            self.storage
                .sync_dir(&self.dir)
                .map_err(|e| WalError::io("sync", &self.dir, e))?;
        }
        Ok(removed)
    }

    /// Removes every record with LSN >= `from` (written or queued), durably, and makes
    /// `from` the next LSN; waits until it is done. For a replicated log, whose
    /// uncommitted tail a new leader may replace; a single server never cuts its log.
    /// Cutting after the last record changes nothing.
    pub fn truncate_from(&self, from: Lsn) -> Result<(), WalError> {
        if from >= self.next_lsn() {
            return match self.shared.lock().failed.clone() {
                Some(msg) => Err(WalError::Failed(msg)),
                None => Ok(()),
            };
        }
        self.cut(from.max(1), from.max(1))
    }

    /// Removes every record, durably, and makes `next` the next LSN; waits until it is
    /// done. For a replicated log whose node installed a snapshot covering every entry
    /// before `next` (the records it held are older than the snapshot, or of a history the
    /// snapshot replaces). A crash before it is done leaves an empty log (which opens at
    /// the LSN after the store's snapshot) or the old records, never a mix.
    pub fn restart_at(&self, next: Lsn) -> Result<(), WalError> {
        self.cut(1, next.max(1))
    }

    /// Asks the writer thread to remove the records from `from` on and go on at `next`,
    /// and waits for it.
    fn cut(&self, from: Lsn, next: Lsn) -> Result<(), WalError> {
        let mut s = self.shared.lock();
        if let Some(msg) = &s.failed {
            return Err(WalError::Failed(msg.clone()));
        }
        if s.closing {
            return Err(WalError::Closed);
        }
        let done = s.cuts_done + 1;
        s.cut = Some((from, next));
        self.shared.work.notify_one();
        loop {
            if s.cuts_done >= done {
                return Ok(());
            }
            if let Some(msg) = &s.failed {
                return Err(WalError::Failed(msg.clone()));
            }
            s = self.shared.done.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The LSN the next record gets.
    pub fn next_lsn(&self) -> Lsn {
        self.shared.lock().next_lsn
    }

    /// Stops the writer after it has written and fsynced everything queued; reports an
    /// error if the writer had failed.
    pub fn close(mut self) -> Result<(), WalError> {
        self.stop();
        match self.shared.lock().failed.clone() {
            Some(msg) => Err(WalError::Failed(msg)),
            None => Ok(()),
        }
    }

    fn stop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.work.notify_one();
        if let Some(t) = self.thread.take() {
            // The writer thread does not panic: every error becomes `failed`.
            let _ = t.join();
        }
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The callbacks [`Wal::on_acknowledged`] left whose record is now acknowledged, with
/// their result; with `ending` (the writer stops) every one left, with the error that
/// stopped it or [`WalError::Closed`].
fn take_acknowledged(s: &mut State, ending: bool) -> Vec<(Acknowledged, Result<(), WalError>)> {
    let mut ready = Vec::new();
    while s.on_acked.front().is_some_and(|(lsn, _)| *lsn <= s.acked_lsn) {
        if let Some((_, then)) = s.on_acked.pop_front() {
            ready.push((then, Ok(())));
        }
    }
    if ending {
        let failed = s.failed.clone();
        let error = || match &failed {
            Some(msg) => WalError::Failed(msg.clone()),
            None => WalError::Closed,
        };
        ready.extend(s.on_acked.drain(..).map(|(_, then)| (then, Err(error()))));
    }
    ready
}

fn run_writer(shared: &Shared, mut w: SegmentWriter, policy: SyncPolicy, on_failure: Option<FailureHook>) {
    // When the oldest acknowledged-but-unsynced write happened (Batch policy).
    let mut unsynced_since: Option<Instant> = None;
    loop {
        let (batch, closing, sync_requested, cut) = {
            let mut s = shared.lock();
            loop {
                if !s.queue.is_empty() || s.closing || s.sync_requested || s.cut.is_some() {
                    break;
                }
                match (policy, unsynced_since) {
                    (SyncPolicy::Batch { window }, Some(t)) => {
                        // A window too large to add to an instant means "never by time".
                        let Some(deadline) = t.checked_add(window) else {
                            s = shared.work.wait(s).unwrap_or_else(|e| e.into_inner());
                            continue;
                        };
                        let now = Instant::now();
                        if now >= deadline {
                            break;
                        }
                        s = shared
                            .work
                            .wait_timeout(s, deadline - now)
                            .map(|(g, _)| g)
                            .unwrap_or_else(|e| e.into_inner().0);
                    }
                    _ => s = shared.work.wait(s).unwrap_or_else(|e| e.into_inner()),
                }
            }
            let sync_requested = std::mem::take(&mut s.sync_requested);
            (
                std::mem::take(&mut s.queue),
                s.closing,
                sync_requested,
                s.cut.take(),
            )
        };
        w.begin_batch();
        let result = (|| {
            let mut start = 0;
            while let Some(first) = batch.get(start) {
                let end = unit_end(&batch, start);
                let unit = batch.get(start..end).unwrap_or_default();
                w.make_room(first.lsn, frame_octets(unit))?;
                for q in unit {
                    w.push(q.lsn, &q.record)?;
                }
                start = end;
            }
            w.flush()?;
            let window_passed = match (policy, unsynced_since) {
                (SyncPolicy::Batch { window }, Some(t)) => t.elapsed() >= window,
                _ => false,
            };
            if policy == SyncPolicy::Always || closing || sync_requested || window_passed || cut.is_some() {
                w.sync()?;
            }
            if let Some((from, next)) = cut {
                w.cut_from(from, next)?;
            }
            if closing {
                // A log closed cleanly ends where its records end; only a crash leaves the
                // last segment's reserved zeros behind.
                w.file.trim().map_err(|e| WalError::io("truncate", &w.path, e))?;
            }
            Ok::<(), WalError>(())
        })();
        // Step 6: the failed batch out of the log, then `on_failure`, before any waiter can
        // see the failure.
        if let Err(e) = &result {
            let undo = w.undo_batch();
            if let Some(hook) = &on_failure {
                hook(e, undo.as_ref().err());
            }
        }
        let mut s = shared.lock();
        s.durable_lsn = w.synced_lsn;
        s.acked_lsn = match policy {
            SyncPolicy::Always => w.synced_lsn,
            _ => w.written_lsn,
        };
        unsynced_since = if w.synced_lsn < w.written_lsn {
            unsynced_since.or_else(|| Some(Instant::now()))
        } else {
            None
        };
        if let (Some((_, next)), Ok(())) = (cut, &result) {
            s.next_lsn = next;
            s.cuts_done += 1;
        }
        let failed = match result {
            Ok(()) => false,
            Err(e) => {
                s.failed = Some(e.to_string());
                true
            }
        };
        let acked = take_acknowledged(&mut s, closing || failed);
        drop(s);
        shared.done.notify_all();
        for (then, result) in acked {
            then(result);
        }
        if closing || failed {
            return;
        }
    }
}
