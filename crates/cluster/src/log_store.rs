//! openraft's log storage on the store's write-ahead log: entry `i` is the WAL record
//! with LSN `i + 1`, its payload the store's replicated entry
//! ([`larch_store::consensus::entry`]). The vote and the purged log ID live in
//! [`crate::raft_state`].
//!
//! Appends go to the log's group commit and are reported flushed when fsynced. The newest
//! entries ([`CACHED_ENTRIES`] and [`CACHED_OCTETS`] at most) are kept in memory as well, so sending them to followers
//! reads no file; older ones are read back from the segments.
//!
//! The committed log ID is kept as a hint in `committed` beside the state file (written at
//! most every [`COMMITTED_HINT_EVERY`], fsynced and renamed into place, off the write
//! path): at a restart the
//! node applies its log up to it at once, so it serves its data before it hears from a
//! leader. A hint lost in a crash only means fewer entries applied before that; a hint
//! beyond the log's end (its tail lost in the crash) is cut back to the last entry, which
//! was committed since every entry up to the hint was.

use std::collections::VecDeque;
use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use larch_store::consensus::ReplicatedEntry;
use larch_store::storage::Storage;
use larch_store::wal::{LogRecord, Lsn, Wal, WalReader};
use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{AnyError, LogId, LogState, RaftLogReader, StorageError, StorageIOError, Vote};

use crate::raft_state::{self, RaftState};
use crate::types::{encode_entry, from_replicated, lsn_of, Entry, Larch, NodeId};

/// Entries kept in memory besides the log (the newest ones), at most.
pub const CACHED_ENTRIES: usize = 8192;

/// Octets of entries kept in memory besides the log, at most (an entry holds a whole batch
/// of writes, up to a WAL record's 16 MiB): the newest entry is always kept.
pub const CACHED_OCTETS: usize = 64 << 20;

/// How often, at most, the committed hint is written.
pub const COMMITTED_HINT_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// The committed hint's file in the state directory.
const COMMITTED_FILE: &str = "committed";

/// The log storage; clones share it (one is openraft's reader).
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<Inner>,
}

struct Inner {
    wal: Arc<Wal>,
    storage: Arc<dyn Storage>,
    wal_dir: PathBuf,
    state_dir: PathBuf,
    state: Mutex<RaftState>,
    cache: Mutex<Cache>,
    /// When the committed hint was last written.
    hint_written: Mutex<Option<std::time::Instant>>,
}

/// The newest entries, consecutive; `last` is the log's last entry.
#[derive(Default)]
struct Cache {
    entries: VecDeque<Entry>,
    last: Option<LogId<NodeId>>,
    /// Octets of the entries' writes.
    octets: usize,
}

/// Octets an entry's writes take (what the cache bound counts).
fn entry_octets(e: &Entry) -> usize {
    match &e.payload {
        openraft::EntryPayload::Normal(batch) => batch.writes.iter().flatten().map(Vec::len).sum(),
        _ => 0,
    }
}

impl Cache {
    fn push(&mut self, e: Entry) {
        self.octets += entry_octets(&e);
        self.entries.push_back(e);
        while self.entries.len() > 1 && (self.entries.len() > CACHED_ENTRIES || self.octets > CACHED_OCTETS) {
            self.pop_front();
        }
    }

    fn pop_front(&mut self) -> Option<Entry> {
        let e = self.entries.pop_front()?;
        self.octets -= entry_octets(&e);
        Some(e)
    }

    fn pop_back(&mut self) -> Option<Entry> {
        let e = self.entries.pop_back()?;
        self.octets -= entry_octets(&e);
        Some(e)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn read_err(e: impl std::fmt::Display) -> StorageError<NodeId> {
    StorageIOError::read_logs(AnyError::error(e.to_string())).into()
}

fn write_err(e: impl std::fmt::Display) -> StorageError<NodeId> {
    StorageIOError::write_logs(AnyError::error(e.to_string())).into()
}

impl LogStore {
    /// The log storage over `wal` (in `wal_dir` of `storage`), its state file in
    /// `state_dir`; reads the newest entries into memory.
    pub fn open(
        wal: Arc<Wal>,
        storage: Arc<dyn Storage>,
        wal_dir: PathBuf,
        state_dir: PathBuf,
    ) -> Result<LogStore, StorageError<NodeId>> {
        storage.create_dir_all(&state_dir).map_err(write_err)?;
        let state = raft_state::read(&*storage, &state_dir).map_err(read_err)?;
        let last_lsn = wal.next_lsn().saturating_sub(1);
        let from = last_lsn.saturating_sub(CACHED_ENTRIES as u64);
        let store = LogStore {
            inner: Arc::new(Inner {
                wal,
                storage,
                wal_dir,
                state_dir,
                state: Mutex::new(state),
                cache: Mutex::new(Cache::default()),
                hint_written: Mutex::new(None),
            }),
        };
        let newest = store.read_from_disk(from, last_lsn)?;
        let mut cache = lock(&store.inner.cache);
        cache.last = newest.last().map(|e| e.log_id);
        for e in newest {
            cache.push(e);
        }
        drop(cache);
        Ok(store)
    }

    /// Entries with LSN in `after + 1 ..= up_to`, read from the segments.
    fn read_from_disk(&self, after: Lsn, up_to: Lsn) -> Result<Vec<Entry>, StorageError<NodeId>> {
        if up_to <= after {
            return Ok(Vec::new());
        }
        let reader =
            WalReader::open(&*self.inner.storage, &self.inner.wal_dir, after, up_to).map_err(read_err)?;
        let mut out = Vec::new();
        for record in reader {
            let record = record.map_err(read_err)?;
            let entry = ReplicatedEntry::decode(&record.payload)
                .and_then(|e| from_replicated(record.lsn, e))
                .map_err(|e| read_err(format!("log record {}: {e}", record.lsn)))?;
            out.push(entry);
        }
        Ok(out)
    }

    /// Writes the committed hint: 24 octets (term, leader node, index), then its CRC32C.
    fn write_hint(&self, committed: LogId<NodeId>) -> std::io::Result<()> {
        let mut bytes = Vec::with_capacity(28);
        bytes.extend_from_slice(&committed.leader_id.term.to_le_bytes());
        bytes.extend_from_slice(&committed.leader_id.node_id.to_le_bytes());
        bytes.extend_from_slice(&committed.index.to_le_bytes());
        let crc = crc32c::crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        raft_state::replace_file(
            &*self.inner.storage,
            &self.inner.state_dir,
            COMMITTED_FILE,
            &bytes,
        )
    }

    /// The committed hint, when there is a whole one.
    fn read_hint(&self) -> Option<LogId<NodeId>> {
        let bytes = self
            .inner
            .storage
            .read(&self.inner.state_dir.join(COMMITTED_FILE))
            .ok()?;
        let word = |at: usize| {
            bytes
                .get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes)
        };
        let crc = bytes
            .get(24..28)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)?;
        if bytes.len() != 28 || crc32c::crc32c(bytes.get(..24)?) != crc {
            return None;
        }
        Some(LogId::new(
            openraft::CommittedLeaderId::new(word(0)?, word(8)?),
            word(16)?,
        ))
    }

    fn save_state(&self, change: impl FnOnce(&mut RaftState)) -> Result<(), StorageError<NodeId>> {
        let mut state = lock(&self.inner.state);
        let mut next = *state;
        change(&mut next);
        raft_state::write(&*self.inner.storage, &self.inner.state_dir, &next)
            .map_err(|e| StorageIOError::write_vote(AnyError::error(e.to_string())))?;
        *state = next;
        Ok(())
    }
}

/// The index range `range` names, as `start..end`.
fn bounds(range: &impl RangeBounds<u64>) -> (u64, u64) {
    let start = match range.start_bound() {
        Bound::Included(s) => *s,
        Bound::Excluded(s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(e) => e.saturating_add(1),
        Bound::Excluded(e) => *e,
        Bound::Unbounded => u64::MAX,
    };
    (start, end)
}

impl RaftLogReader<Larch> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError<NodeId>> {
        let (start, end) = bounds(&range);
        let (cached_first, end) = {
            let cache = lock(&self.inner.cache);
            let Some(last) = cache.last else {
                return Ok(Vec::new());
            };
            let end = end.min(last.index + 1);
            if start >= end {
                return Ok(Vec::new());
            }
            let first = cache.entries.front().map_or(last.index + 1, |e| e.log_id.index);
            if start >= first {
                let skip = (start - first) as usize;
                return Ok(cache
                    .entries
                    .iter()
                    .skip(skip)
                    .take((end - start) as usize)
                    .cloned()
                    .collect());
            }
            (first, end)
        };
        // Older than the cache: from the segments (then the cached rest).
        let mut out = self.read_from_disk(start, cached_first.min(end))?;
        if end > cached_first {
            let cache = lock(&self.inner.cache);
            out.extend(cache.entries.iter().take_while(|e| e.log_id.index < end).cloned());
        }
        // Purged entries may still be in a kept segment; entries before `start` never.
        out.retain(|e| e.log_id.index >= start);
        Ok(out)
    }
}

impl RaftLogStorage<Larch> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<Larch>, StorageError<NodeId>> {
        let purged = lock(&self.inner.state).purged;
        let last = lock(&self.inner.cache).last.or(purged);
        Ok(LogState {
            last_purged_log_id: purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        let vote = *vote;
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.save_state(|s| s.vote = Some(vote)))
            .await
            .map_err(write_err)?
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        Ok(lock(&self.inner.state).vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> Result<(), StorageError<NodeId>> {
        let Some(committed) = committed else { return Ok(()) };
        {
            let mut written = lock(&self.inner.hint_written);
            if written.is_some_and(|at| at.elapsed() < COMMITTED_HINT_EVERY) {
                return Ok(());
            }
            *written = Some(std::time::Instant::now());
        }
        let this = self.clone();
        // A hint: a failure to write it costs only a slower start.
        tokio::task::spawn_blocking(move || {
            if let Err(e) = this.write_hint(committed) {
                tracing::debug!(error = %e, "cluster: cannot write the committed hint");
            }
        });
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
        let Some(hint) = self.read_hint() else {
            return Ok(None);
        };
        let last = lock(&self.inner.cache).last;
        Ok(match last {
            Some(last) if last.index < hint.index => Some(last),
            Some(_) => Some(hint),
            None => None,
        })
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<Larch>) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        let Some(first) = entries.first() else {
            callback.log_io_completed(Ok(()));
            return Ok(());
        };
        let expected = self.inner.wal.next_lsn();
        if lsn_of(&first.log_id) != expected {
            return Err(write_err(format!(
                "entry {} would be LSN {}, but the log's next LSN is {expected}",
                first.log_id.index,
                lsn_of(&first.log_id)
            )));
        }
        let records: Vec<LogRecord> = entries
            .iter()
            .map(|e| {
                let mut payload = Vec::new();
                encode_entry(e, &mut payload);
                LogRecord::single(payload)
            })
            .collect();
        let Some((_, last)) = self.inner.wal.submit_batch(records).map_err(write_err)? else {
            callback.log_io_completed(Ok(()));
            return Ok(());
        };
        {
            let mut cache = lock(&self.inner.cache);
            cache.last = entries.last().map(|e| e.log_id);
            for e in entries {
                cache.push(e);
            }
        }
        // Told by the log's writer thread after the fsync: no thread waits for it.
        self.inner.wal.on_acknowledged(
            last,
            Box::new(move |acked| callback.log_io_completed(acked.map_err(std::io::Error::other))),
        );
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let from = lsn_of(&log_id);
        let wal = Arc::clone(&self.inner.wal);
        tokio::task::spawn_blocking(move || wal.truncate_from(from))
            .await
            .map_err(write_err)?
            .map_err(write_err)?;
        let mut cache = lock(&self.inner.cache);
        while cache
            .entries
            .back()
            .is_some_and(|e| e.log_id.index >= log_id.index)
        {
            cache.pop_back();
        }
        cache.last = match cache.entries.back() {
            Some(e) => Some(e.log_id),
            None => {
                drop(cache);
                let before = self.read_from_disk(from.saturating_sub(2), from.saturating_sub(1))?;
                let last = before.last().map(|e| e.log_id).or(lock(&self.inner.state).purged);
                cache = lock(&self.inner.cache);
                last
            }
        };
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            this.save_state(|s| s.purged = Some(log_id))?;
            let wal = &this.inner.wal;
            if lsn_of(&log_id) >= wal.next_lsn() {
                // Beyond the log's end: a snapshot was installed that covers more than
                // this node's log held. The log starts again after it.
                wal.restart_at(lsn_of(&log_id) + 1).map_err(write_err)
            } else {
                wal.remove_segments_before(lsn_of(&log_id) + 1)
                    .map(drop)
                    .map_err(write_err)
            }
        })
        .await
        .map_err(write_err)??;
        let mut cache = lock(&self.inner.cache);
        while cache
            .entries
            .front()
            .is_some_and(|e| e.log_id.index <= log_id.index)
        {
            cache.pop_front();
        }
        if cache.last.is_none_or(|l| l.index < log_id.index) {
            cache.last = Some(log_id);
        }
        Ok(())
    }
}
