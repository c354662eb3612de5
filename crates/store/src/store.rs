//! The store: opening (snapshot load, log replay), reading, writing, snapshots, closing.
//!
//! A data directory holds `snapshots/` (see [`crate::snapshot`]) and `wal/` (see
//! [`crate::wal`]). Opening, in steps:
//! 0. leftover temporary snapshot files are removed ([`OpenReport::removed_temp_files`]);
//! 1. the newest snapshot is loaded on one thread per core ([`crate::load`]); if it is
//!    damaged, opening stops with [`StoreError::CorruptSnapshot`], whose message names the
//!    file and says whether an older snapshot can take its place: never an empty or
//!    partial directory served silently;
//! 2. the log is opened; recovery cuts a torn tail and reports it ([`OpenReport::wal_cut`]);
//!    a log that starts after the snapshot's LSN + 1 is missing records and stops opening;
//! 3. the records after the snapshot's LSN are replayed;
//! 4. the version is published and the writer thread starts;
//! 5. a snapshot is written at once when the replayed log was long: before returning when
//!    it was very long, else in the background ([`crate::schedule`], which also says how
//!    this bounds the log any start replays); the snapshot schedule starts.
//!
//! Log segments are removed only when every retained snapshot covers them
//! ([`KEEP_SNAPSHOTS`] are kept), so falling back to the previous snapshot loses nothing.
//!
//! The store's health ([`crate::health`]: writes halted after the log failed, snapshot
//! failures and their back-off) is read with [`Store::health`] and reported to
//! [`StoreOptions::events`].

use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use larch_model::schema::Schema;

use crate::backup::pin::LogPins;
use crate::backup::take::{self, Source, BACKUP_DUTY_CYCLE};
use crate::backup::{check_target, BackupError, BackupOptions, BackupReport};
use crate::consensus::{self, Applied, ReplicatedEntry, Replicator, ReplicatorSlot};
use crate::error::StoreError;
use crate::feed::{self, FeedError, FeedHub, FeedStart, FeedSubscription, LogSource};
use crate::health::{EventSink, Health, StoreHealth, WriteHalt};
use crate::index::{IndexConfig, Keyer, ResolvedIndexes};
use crate::load::{build_version, decode_dictionary, encode_extra, remap_record, split_extra, TypeMap};
use crate::record::{EntryId, EntryRecord};
use crate::schedule::{due_at_open, AtOpen, Pace, Schedule};
use crate::snapshot::{self, SnapshotError, SnapshotInfo, SnapshotMeta, WriteOptions};
use crate::stats::{SnapshotRecord, StoreStats, StoreStatsView};
use crate::storage::{FsStorage, ReadSeek, Storage};
use crate::txn::{apply_change, WriteTxn};
use crate::version::{Shared, Version};
use crate::version_cell::{VersionCell, VersionReader};
use crate::wal::record::Change;
use crate::wal::{Lsn, SyncPolicy, TailCut, Wal, WalOptions, SEGMENT_SIZE_LIMIT};
use crate::writer::{self, Finish, Job, MAX_QUEUED_WRITES};

/// Snapshots kept: the newest and one previous, so a damaged newest file has a fallback.
pub const KEEP_SNAPSHOTS: usize = 2;

/// Log records after which a running store writes a snapshot: replaying a million records
/// takes seconds at startup, loading a snapshot of a million entries about one.
pub const DEFAULT_SNAPSHOT_AFTER_RECORDS: u64 = 1_000_000;

/// Share of one core a background snapshot may keep busy. A snapshot pins the version it
/// writes, so every node the writer copies meanwhile stays allocated until it ends: pacing
/// harder spreads the CPU cost but holds that memory longer. On a 2-core machine under 64
/// durable writers, duty cycles from 0.05 to 1.0 all measured writers at 64% to 88% of
/// their rate (the machine's noise is larger than the differences; `docs/benchmarks.md`);
/// 0.5 keeps a 1M-entry snapshot to about 2 s.
pub const DEFAULT_SNAPSHOT_DUTY_CYCLE: f64 = 0.5;

/// How to open a store.
#[derive(Clone)]
pub struct StoreOptions {
    /// The data directory.
    pub dir: PathBuf,
    /// Where files live (the real filesystem, or a fault-injecting one in tests).
    pub storage: Arc<dyn Storage>,
    /// The schema.
    pub schema: Arc<Schema>,
    /// What to index.
    pub indexes: IndexConfig,
    /// When a write counts as durable.
    pub sync: SyncPolicy,
    /// Threads for loading (0: one per core).
    pub threads: usize,
    /// Size at which a new log segment starts.
    pub segment_size_limit: u64,
    /// Write a snapshot this often while running (`None`: only on demand and at close).
    pub snapshot_interval: Option<Duration>,
    /// Also write one when this many log records have accumulated since the last snapshot
    /// (`None`: never), so the log replayed at startup stays short.
    pub snapshot_after_records: Option<u64>,
    /// Fraction of one core a snapshot written while the store runs may keep busy (see
    /// [`crate::snapshot::WriteOptions::duty_cycle`]); the snapshot at close runs at full
    /// speed on every core.
    pub snapshot_duty_cycle: f64,
    /// Told of every change of the store's health (writes halted, snapshots failing and
    /// recovering; see [`crate::health`]); `None`: nobody is told, [`Store::health`] still
    /// says.
    pub events: Option<EventSink>,
    /// The log is a cluster's replicated log ([`crate::consensus`]): opening replays
    /// nothing (the consensus engine applies the committed entries through
    /// [`Store::apply_replicated`]), writes are proposed through the replicator set with
    /// [`Store::set_replicator`], and no snapshot is written.
    pub replicated: bool,
    /// A replicated store's leader: how many runs of batches its writer keeps proposed and
    /// not yet ended (at least 1: a batch proposed only once the last has ended). Default
    /// [`crate::consensus::MAX_IN_FLIGHT`].
    pub writes_in_flight: usize,
}

impl std::fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreOptions")
            .field("dir", &self.dir)
            .field("sync", &self.sync)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl StoreOptions {
    /// Defaults: the real filesystem, the default indexes, `sync = always`, one load
    /// thread per core, a daily snapshot.
    pub fn new(dir: impl Into<PathBuf>, schema: Arc<Schema>) -> StoreOptions {
        StoreOptions {
            dir: dir.into(),
            storage: Arc::new(FsStorage),
            schema,
            indexes: IndexConfig::default(),
            sync: SyncPolicy::Always,
            threads: 0,
            segment_size_limit: SEGMENT_SIZE_LIMIT,
            snapshot_interval: Some(Duration::from_secs(24 * 3600)),
            snapshot_after_records: Some(DEFAULT_SNAPSHOT_AFTER_RECORDS),
            snapshot_duty_cycle: DEFAULT_SNAPSHOT_DUTY_CYCLE,
            events: None,
            replicated: false,
            writes_in_flight: consensus::writer::MAX_IN_FLIGHT,
        }
    }

    fn thread_count(&self) -> usize {
        if self.threads > 0 {
            self.threads
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        }
    }
}

/// A cluster node's snapshot: where it is, the LSN it covers and the consensus engine's
/// state at that LSN, as its header carries it ([`Store::newest_replicated_snapshot`]).
#[derive(Debug, Clone)]
pub struct ReplicatedSnapshot {
    /// The LSN it covers.
    pub lsn: Lsn,
    /// The file.
    pub path: PathBuf,
    /// The consensus engine's state (opaque to the store).
    pub consensus: Vec<u8>,
}

/// A cluster node's snapshot and the file opened for reading.
pub type OpenedSnapshot = (ReplicatedSnapshot, Box<dyn ReadSeek>);

/// A snapshot file opened for sending to a new replica ([`Store::snapshot_for_transfer`]).
pub struct TransferSnapshot {
    /// The snapshot's LSN: the replica follows the changes after it.
    pub lsn: crate::wal::Lsn,
    /// The file.
    pub path: PathBuf,
    /// Its octets, from the start.
    pub reader: Box<dyn std::io::Read + Send>,
}

impl std::fmt::Debug for TransferSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransferSnapshot")
            .field("lsn", &self.lsn)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// What opening found and did.
#[derive(Debug, Clone, Default)]
pub struct OpenReport {
    /// The snapshot loaded and the LSN it covers.
    pub snapshot: Option<(PathBuf, u64)>,
    /// Entries after replay.
    pub entries: usize,
    /// Log records replayed.
    pub replayed: u64,
    /// A torn or corrupt log tail that was cut (operators must be told).
    pub wal_cut: Option<TailCut>,
    /// Time to load the snapshot.
    pub load_time: Duration,
    /// Time to replay the log.
    pub replay_time: Duration,
    /// Temporary snapshot files removed before loading: each a snapshot write that a crash
    /// (or an error) interrupted before its rename.
    pub removed_temp_files: Vec<PathBuf>,
    /// What opening did about a long replayed log ([`crate::schedule`], step 2).
    pub startup_snapshot: StartupSnapshot,
}

/// What opening did about the log it replayed ([`crate::schedule`], step 2).
#[derive(Debug, Clone, Default)]
pub enum StartupSnapshot {
    /// Nothing: the log was shorter than `snapshot_after_records`, or that trigger is off.
    #[default]
    NotDue,
    /// The log held at least `snapshot_after_records` records: a snapshot is being written
    /// in the background, started at once.
    Background,
    /// The log held at least [`crate::schedule::BLOCKING_SNAPSHOT_TRIGGERS`] times that:
    /// this snapshot was written before the store opened, in `time`.
    Written {
        /// The snapshot.
        info: SnapshotInfo,
        /// How long writing it took.
        time: Duration,
    },
    /// The snapshot due before opening could not be written; the store opened anyway (the
    /// log holds every change) and retries it in the background.
    Failed {
        /// Why.
        problem: String,
    },
}

struct Inner {
    storage: Arc<dyn Storage>,
    threads: usize,
    duty_cycle: f64,
    snapshot_dir: PathBuf,
    wal_dir: PathBuf,
    cell: Arc<VersionCell<Version>>,
    wal: Arc<Wal>,
    /// The change feed's subscribers.
    feed: Arc<FeedHub>,
    jobs: Mutex<Option<SyncSender<Job>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    /// One snapshot at a time.
    snapshot_lock: Mutex<()>,
    /// Stops the periodic snapshot thread.
    stop: Arc<(Mutex<bool>, Condvar)>,
    timer: Mutex<Option<JoinHandle<()>>>,
    /// Whether writes are accepted, how snapshots fare ([`crate::health`]).
    health: Arc<Health>,
    /// Commits and snapshots, for monitoring ([`crate::stats`]).
    stats: Arc<StoreStats>,
    /// The log a backup still copies ([`crate::backup::pin`]).
    pins: Arc<LogPins>,
    /// In a cluster: where the writer finds the replicator, and the lock that keeps one
    /// caller at a time applying committed entries (with its scratch buffer).
    replicated: Option<Replicated>,
}

struct Replicated {
    slot: ReplicatorSlot,
    apply: Mutex<Vec<u8>>,
    /// The leader's writer's computed versions of its batches in flight.
    prepared: Arc<Mutex<consensus::PreparedChain>>,
}

/// The in-memory directory database. Cheap to clone (a reference).
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("snapshot_dir", &self.inner.snapshot_dir)
            .finish_non_exhaustive()
    }
}

/// A reader's handle: the current version without a lock (see [`VersionReader`]).
pub type StoreReader = VersionReader<Version>;

fn io<'p>(op: &'static str, path: &'p Path) -> impl FnOnce(std::io::Error) -> StoreError + 'p {
    move |source| StoreError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

impl Store {
    /// Opens (creating if needed) the store in `options.dir`; see the module documentation.
    pub fn open(options: StoreOptions) -> Result<(Store, OpenReport), StoreError> {
        let storage = Arc::clone(&options.storage);
        let snapshot_dir = options.dir.join("snapshots");
        let wal_dir = options.dir.join("wal");
        for d in [&options.dir, &snapshot_dir, &wal_dir] {
            storage.create_dir_all(d).map_err(io("create", d))?;
        }
        let shared = Arc::new(Shared {
            schema: Arc::clone(&options.schema),
            indexes: ResolvedIndexes::resolve(&options.indexes, &options.schema)?,
            keyer: Keyer::new(),
        });
        let mut report = OpenReport {
            removed_temp_files: snapshot::remove_temp_files(&*storage, &snapshot_dir)?,
            ..OpenReport::default()
        };
        let started = Instant::now();
        let mut version = load_newest(
            &*storage,
            &snapshot_dir,
            &shared,
            options.thread_count(),
            &mut report,
        )?;
        report.load_time = started.elapsed();
        // The loaded snapshot's size and time, for monitoring only: read from the file
        // system's metadata (a storage that is not the file system gives none).
        let loaded_snapshot = report.snapshot.as_ref().map(|(path, lsn)| {
            let meta = std::fs::metadata(path).ok();
            SnapshotRecord {
                lsn: *lsn,
                bytes: meta.as_ref().map_or(0, |m| m.len()),
                entries: version.len() as u64,
                finished: meta.and_then(|m| m.modified().ok()).unwrap_or(UNIX_EPOCH),
                duration: Duration::ZERO,
                loaded: true,
            }
        });
        let snap_lsn = version.lsn;

        let health = Arc::new(Health::new(options.events.clone()));
        let wal_options = WalOptions {
            sync: options.sync,
            segment_size_limit: options.segment_size_limit,
            first_lsn: snap_lsn + 1,
            on_failure: Some(halt_on_failure(&health)),
        };
        let (mut wal, mut recovery) = Wal::open(Arc::clone(&storage), &wal_dir, wal_options.clone())?;
        if !options.replicated && recovery.next_lsn.is_some_and(|next| next <= snap_lsn) {
            // The whole log is older than the snapshot (it covers all of it): start a new
            // log after the snapshot.
            wal.close()?;
            for name in storage.list(&wal_dir).map_err(io("list", &wal_dir))? {
                let path = wal_dir.join(name);
                storage.remove(&path).map_err(io("remove", &path))?;
            }
            storage.sync_dir(&wal_dir).map_err(io("sync", &wal_dir))?;
            (wal, recovery) = Wal::open(Arc::clone(&storage), &wal_dir, wal_options)?;
        }
        report.wal_cut = recovery.cut.clone();
        let log_start = recovery.first_lsn.or(recovery.next_lsn).unwrap_or(snap_lsn + 1);
        if log_start > snap_lsn + 1 {
            return Err(StoreError::Replay {
                lsn: snap_lsn + 1,
                problem: format!(
                    "the snapshot covers up to LSN {snap_lsn} but the log in {} starts at LSN {log_start}: \
                     records in between are missing",
                    wal_dir.display()
                ),
            });
        }

        let started = Instant::now();
        let mut scratch = Vec::new();
        // A replicated log is applied by the consensus engine, committed entries only.
        let replay = if options.replicated {
            None
        } else {
            Some(wal.read_after(snap_lsn)?)
        };
        for record in replay.into_iter().flatten() {
            let record = record?;
            let change = Change::decode(&record.payload).map_err(|e| StoreError::Replay {
                lsn: record.lsn,
                problem: e.to_string(),
            })?;
            apply_change(&mut version, &change, &mut scratch).map_err(|problem| StoreError::Replay {
                lsn: record.lsn,
                problem,
            })?;
            version.lsn = record.lsn;
            report.replayed += 1;
        }
        report.replay_time = started.elapsed();
        report.entries = version.len();

        let cell = Arc::new(VersionCell::new(Arc::new(version)));
        let wal = Arc::new(wal);
        let feed = Arc::new(FeedHub::new());
        let stats = Arc::new(StoreStats::default());
        if let Some(loaded) = &loaded_snapshot {
            stats.snapshot(*loaded);
        }
        let (tx, rx) = sync_channel::<Job>(MAX_QUEUED_WRITES);
        let replicated = options.replicated.then(|| Replicated {
            slot: ReplicatorSlot::default(),
            apply: Mutex::new(Vec::new()),
            prepared: Arc::default(),
        });
        let writer = {
            let cell = Arc::clone(&cell);
            let wal = Arc::clone(&wal);
            let feed = Arc::clone(&feed);
            let health = Arc::clone(&health);
            let stats = Arc::clone(&stats);
            let slot = replicated
                .as_ref()
                .map(|r| (Arc::clone(&r.slot), Arc::clone(&r.prepared)));
            let in_flight = options.writes_in_flight.max(1);
            std::thread::Builder::new()
                .name("larch-writer".into())
                .spawn(move || match slot {
                    Some((slot, prepared)) => {
                        consensus::writer::run(rx, cell, slot, prepared, stats, in_flight)
                    }
                    None => writer::run(rx, cell, wal, feed, health, stats),
                })
                .map_err(io("start the writer for", &options.dir))?
        };
        let store = Store {
            inner: Arc::new(Inner {
                storage,
                threads: options.thread_count(),
                duty_cycle: options.snapshot_duty_cycle,
                snapshot_dir,
                wal_dir,
                cell,
                wal,
                feed,
                jobs: Mutex::new(Some(tx)),
                writer: Mutex::new(Some(writer)),
                snapshot_lock: Mutex::new(()),
                stop: Arc::new((Mutex::new(false), Condvar::new())),
                timer: Mutex::new(None),
                health,
                stats,
                pins: Arc::new(LogPins::default()),
                replicated,
            }),
        };
        if options.replicated {
            return Ok((store, report));
        }
        let at_open = due_at_open(report.replayed, options.snapshot_after_records);
        let newest = match at_open {
            AtOpen::BeforeServing => store.snapshot_before_serving(&mut report),
            AtOpen::Background => {
                report.startup_snapshot = StartupSnapshot::Background;
                None
            }
            AtOpen::Nothing => None,
        };
        let schedule = Schedule::new(
            options.snapshot_interval,
            options.snapshot_after_records,
            newest.unwrap_or(snap_lsn),
            Instant::now(),
            at_open != AtOpen::Nothing && newest.is_none(),
        );
        if !schedule.is_off() {
            store.start_timer(schedule);
        }
        Ok((store, report))
    }

    /// Step 5 for a very long replayed log: the snapshot written on every core before
    /// [`Store::open`] returns, so no write is accepted until the log is folded. Returns the
    /// LSN it covers, `None` if it failed (reported; the schedule retries it).
    fn snapshot_before_serving(&self, report: &mut OpenReport) -> Option<u64> {
        let started = Instant::now();
        match self.write_snapshot(Pace::AllCores) {
            Ok(Some(info)) => {
                let lsn = info.lsn;
                report.startup_snapshot = StartupSnapshot::Written {
                    info,
                    time: started.elapsed(),
                };
                Some(lsn)
            }
            // The newest snapshot already covers the version: nothing was replayed after it.
            Ok(None) => Some(self.current().lsn),
            Err(e) => {
                report.startup_snapshot = StartupSnapshot::Failed {
                    problem: e.to_string(),
                };
                None
            }
        }
    }

    /// Starts the thread that writes the snapshots `schedule` makes due, checking at once
    /// and then every [`Schedule::check_every`] until the store closes.
    fn start_timer(&self, mut schedule: Schedule) {
        let weak = Arc::downgrade(&self.inner);
        let stop = Arc::clone(&self.inner.stop);
        let handle = std::thread::Builder::new()
            .name("larch-snapshot".into())
            .spawn(move || loop {
                if stopped_within(&stop, Duration::ZERO) {
                    return;
                }
                let Some(inner) = weak.upgrade() else { return };
                Store { inner }.snapshot_if_due(&mut schedule);
                if stopped_within(&stop, schedule.check_every()) {
                    return;
                }
            })
            .ok();
        *self.inner.timer.lock().unwrap_or_else(|e| e.into_inner()) = handle;
    }

    /// The store's health: whether it accepts writes (and why not), how snapshots fare.
    /// Cheap: a lock-free read and a short lock.
    pub fn health(&self) -> StoreHealth {
        self.inner.health.read()
    }

    /// `Some` once the store has stopped accepting writes (its log failed), with why; every
    /// write then fails with [`StoreError::Failed`] carrying this halt, until the store is
    /// reopened. Lock-free.
    pub fn write_halt(&self) -> Option<Arc<WriteHalt>> {
        self.inner.health.write_halt()
    }

    /// One check of the schedule: a snapshot if one is due. A failed one is retried at the
    /// next check; the log still holds every change, so nothing is lost meanwhile.
    fn snapshot_if_due(&self, schedule: &mut Schedule) {
        let lsn = self.current().lsn;
        // A failed snapshot is retried after a back-off (`crate::health`).
        if !schedule.due(lsn, Instant::now()) || !self.inner.health.snapshot_due(Instant::now()) {
            return;
        }
        if let Ok(written) = self.write_snapshot(schedule.pace()) {
            let covered = written.map_or(lsn, |info| info.lsn);
            schedule.written(covered, Instant::now());
        }
    }

    /// Commits and snapshots so far ([`crate::stats`]). Lock-free but for one short lock.
    pub fn stats(&self) -> StoreStatsView {
        self.inner.stats.view()
    }

    /// A reader's handle on the current version (one per worker thread or connection).
    pub fn reader(&self) -> StoreReader {
        self.inner.cell.reader()
    }

    /// The current version (takes a lock: readers on hot paths use [`Store::reader`]).
    pub fn current(&self) -> Arc<Version> {
        self.inner.cell.load()
    }

    /// Queues a write: `op` runs on the writer thread with a [`WriteTxn`]; `done` gets its
    /// result once the batch it belongs to is durable and published (or the store failed).
    /// Blocks while [`MAX_QUEUED_WRITES`] jobs are waiting.
    pub fn submit<R, Op, Done>(&self, op: Op, done: Done)
    where
        R: Send + 'static,
        Op: FnOnce(&mut WriteTxn<'_>) -> R + Send + 'static,
        Done: FnOnce(Result<R, StoreError>) + Send + 'static,
    {
        let job: Job = Box::new(move |txn: Result<&mut WriteTxn<'_>, StoreError>| -> Finish {
            match txn {
                Ok(txn) => {
                    let r = op(txn);
                    Box::new(move |settled: Result<(), StoreError>| done(settled.map(|()| r)))
                }
                Err(e) => Box::new(move |_| done(Err(e))),
            }
        });
        let sender = self.inner.jobs.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match sender {
            Some(tx) => {
                if let Err(returned) = tx.send(job) {
                    (returned.0)(Err(StoreError::Closed))(Err(StoreError::Closed));
                }
            }
            None => job(Err(StoreError::Closed))(Err(StoreError::Closed)),
        }
    }

    /// [`Store::submit`] and wait for the result.
    pub fn write<R, Op>(&self, op: Op) -> Result<R, StoreError>
    where
        R: Send + 'static,
        Op: FnOnce(&mut WriteTxn<'_>) -> R + Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::channel();
        self.submit(op, move |r| {
            let _ = tx.send(r);
        });
        rx.recv().unwrap_or(Err(StoreError::Closed))
    }

    /// Subscribes to the change feed ([`crate::feed`]): every change committed after
    /// `from`, in commit order, batch by batch. From [`FeedStart::After`] the changes already
    /// committed are read from the log segments on disk first; if a snapshot has removed
    /// the segment holding the first of them, this fails with
    /// [`FeedError::SnapshotNeeded`]. The writer never waits for a subscriber: one that
    /// falls behind reads the log until it is live again.
    pub fn subscribe(&self, from: FeedStart) -> Result<FeedSubscription, FeedError> {
        feed::subscribe(&self.inner.feed, self.log_source(), from).map(|(sub, _)| sub)
    }

    /// Subscribes from the current version: the version, and a subscription that delivers
    /// every change after its LSN. The way to start again after
    /// [`FeedError::SnapshotNeeded`]: the version is the snapshot.
    pub fn subscribe_at_current(&self) -> Result<(Arc<Version>, FeedSubscription), FeedError> {
        feed::subscribe(&self.inner.feed, self.log_source(), FeedStart::Now).map(|(sub, v)| (v, sub))
    }

    /// How many change feed subscriptions are registered (a dropped one is gone at once).
    pub fn subscriber_count(&self) -> usize {
        self.inner.feed.subscriber_count()
    }

    fn log_source(&self) -> LogSource {
        LogSource {
            storage: Arc::clone(&self.inner.storage),
            wal_dir: self.inner.wal_dir.clone(),
            cell: Arc::clone(&self.inner.cell),
            replicated: self.inner.replicated.is_some(),
        }
    }

    /// In a cluster ([`StoreOptions::replicated`]): the replicator the writer proposes
    /// writes through, set once the consensus engine runs on this store. `false` if one
    /// was set already, or the store is not replicated.
    pub fn set_replicator(&self, replicator: Arc<dyn Replicator>) -> bool {
        self.inner
            .replicated
            .as_ref()
            .is_some_and(|r| r.slot.set(replicator).is_ok())
    }

    /// The write-ahead log, for a cluster's log storage: in a replicated store it holds
    /// the replicated log ([`crate::consensus::entry`]).
    pub fn wal(&self) -> &Arc<Wal> {
        &self.inner.wal
    }

    /// The directory of the write-ahead log's segments.
    pub fn wal_dir(&self) -> &Path {
        &self.inner.wal_dir
    }

    /// Where the store's files live.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.inner.storage
    }

    /// In a cluster: how many committed batches were published from the leader's writer's
    /// own computed version instead of replayed ([`crate::consensus`], step 4).
    pub fn batches_from_writer(&self) -> u64 {
        self.inner
            .replicated
            .as_ref()
            .map_or(0, |r| consensus::writer::lock(&r.prepared).taken_total)
    }

    /// In a cluster: applies committed entries of the replicated log, each with its LSN,
    /// in log order ([`crate::consensus::apply`]), publishes the version that holds them
    /// and hands their changes to the change feed. One result per entry. An error means
    /// this node's state no longer matches the log; nothing of the call is published.
    pub fn apply_replicated<'e>(
        &self,
        entries: impl IntoIterator<Item = (Lsn, &'e ReplicatedEntry)>,
    ) -> Result<Vec<Applied>, StoreError> {
        let Some(replicated) = &self.inner.replicated else {
            return Err(StoreError::Unsupported(
                "only a store in a cluster applies replicated entries",
            ));
        };
        let mut scratch = replicated.apply.lock().unwrap_or_else(|e| e.into_inner());
        let current = self.inner.cell.load();
        let mut next = (*current).clone();
        let mut changes = self.inner.feed.has_subscribers().then(Vec::new);
        let mut prepared = consensus::writer::lock(&replicated.prepared);
        let taken = prepared.taken_total;
        let done = consensus::apply::apply_entries(
            &mut next,
            &current,
            entries,
            &mut prepared,
            &mut scratch,
            &mut changes,
        );
        if done.is_err() {
            // Nothing of the call is published: what the chain says was taken is not.
            prepared.taken = None;
            prepared.taken_total = taken;
        }
        drop(prepared);
        let done = done?;
        if next.lsn != current.lsn {
            self.inner.cell.publish(Arc::new(next));
            self.inner.feed.deliver_committed(changes.unwrap_or_default());
        }
        Ok(done)
    }

    /// Writes a snapshot of the current version (writes go on meanwhile, the writer paced to
    /// [`StoreOptions::snapshot_duty_cycle`]), then removes snapshots beyond
    /// [`KEEP_SNAPSHOTS`] and the log segments every kept snapshot covers. `None` when the
    /// newest snapshot already covers the current version.
    pub fn snapshot(&self) -> Result<Option<SnapshotInfo>, StoreError> {
        self.write_snapshot(Pace::Paced)
    }

    /// [`Store::snapshot`] at full speed on every core (at shutdown, or offline).
    pub fn snapshot_now(&self) -> Result<Option<SnapshotInfo>, StoreError> {
        self.write_snapshot(Pace::AllCores)
    }

    /// Writes a snapshot and records how it went in the store's health.
    fn write_snapshot(&self, pace: Pace) -> Result<Option<SnapshotInfo>, StoreError> {
        self.recorded(|| self.write_snapshot_file(pace))
    }

    /// Runs `write` (a snapshot's writing) and records how it went in the store's health
    /// and figures.
    fn recorded(
        &self,
        write: impl FnOnce() -> Result<Option<SnapshotInfo>, StoreError>,
    ) -> Result<Option<SnapshotInfo>, StoreError> {
        let started = Instant::now();
        let result = write();
        match &result {
            Ok(info) => {
                if let Some(info) = info {
                    self.inner.stats.snapshot(SnapshotRecord {
                        lsn: info.lsn,
                        bytes: info.bytes,
                        entries: info.entries,
                        finished: SystemTime::now(),
                        duration: started.elapsed(),
                        loaded: false,
                    });
                }
                self.inner.health.snapshot_written()
            }
            Err(e) => self.inner.health.snapshot_failed(e.to_string(), Instant::now()),
        }
        result
    }

    fn write_snapshot_file(&self, pace: Pace) -> Result<Option<SnapshotInfo>, StoreError> {
        if self.inner.replicated.is_some() {
            return Err(StoreError::Unsupported(
                "a store in a cluster writes its snapshots when the consensus engine asks \
                 (Store::write_replicated_snapshot)",
            ));
        }
        let _one = self.inner.snapshot_lock.lock().unwrap_or_else(|e| e.into_inner());
        let version = self.current();
        let Some(info) = self.write_snapshot_of(&version, None, pace)? else {
            return Ok(None);
        };
        let kept = snapshot::list_snapshots(&*self.inner.storage, &self.inner.snapshot_dir)?;
        if let Some((oldest, _)) = kept.last() {
            // A backup copying the log keeps what it still needs.
            self.inner
                .pins
                .remove_below(oldest + 1, |bound| self.inner.wal.remove_segments_before(bound))?;
        }
        Ok(Some(info))
    }

    /// Writes a snapshot of `version` (its header carrying `consensus`, a cluster node's
    /// state) unless the newest snapshot is at its LSN already, then removes snapshots
    /// beyond [`KEEP_SNAPSHOTS`]. The caller holds the snapshot lock.
    fn write_snapshot_of(
        &self,
        version: &Version,
        consensus: Option<&[u8]>,
        pace: Pace,
    ) -> Result<Option<SnapshotInfo>, StoreError> {
        let storage = &*self.inner.storage;
        let dir = &self.inner.snapshot_dir;
        let existing = snapshot::list_snapshots(storage, dir)?;
        if existing.first().is_some_and(|(lsn, _)| *lsn == version.lsn) {
            return Ok(None);
        }
        let info = snapshot::write_snapshot_with(
            storage,
            dir,
            &snapshot_meta(version, consensus),
            version.entries.iter().map(|(id, r)| (id, r.as_bytes())),
            &self.write_options(pace),
        )?;
        snapshot::remove_stale(storage, dir, KEEP_SNAPSHOTS)?;
        Ok(Some(info))
    }

    /// In a cluster: writes a snapshot of `version` (a version this store published),
    /// paced like the scheduled ones, with `consensus` (the consensus engine's state at
    /// its LSN: last applied entry, configuration) in its header, unless the newest
    /// snapshot is at that LSN already; removes snapshots beyond [`KEEP_SNAPSHOTS`]. The
    /// log is left alone: the consensus engine purges it. Returns the snapshot at the
    /// version's LSN, opened (under the snapshot lock, so no clean-up removes it first).
    pub fn write_replicated_snapshot(
        &self,
        version: &Version,
        consensus: &[u8],
    ) -> Result<OpenedSnapshot, StoreError> {
        if self.inner.replicated.is_none() {
            return Err(StoreError::Unsupported(
                "only a store in a cluster writes a replicated snapshot",
            ));
        }
        let path = self.inner.snapshot_dir.join(snapshot::snapshot_name(version.lsn));
        let mut opened = None;
        self.recorded(|| {
            let _one = self.inner.snapshot_lock.lock().unwrap_or_else(|e| e.into_inner());
            let written = self.write_snapshot_of(version, Some(consensus), Pace::Paced)?;
            opened = Some(
                self.inner
                    .storage
                    .open_read_seek(&path)
                    .map_err(io("open", &path))?,
            );
            Ok(written)
        })?;
        let file = opened.ok_or(StoreError::Unsupported("the snapshot written was not opened"))?;
        let snapshot = ReplicatedSnapshot {
            lsn: version.lsn,
            path,
            consensus: consensus.to_vec(),
        };
        Ok((snapshot, file))
    }

    /// A single server's data made a cluster's starting point ([`crate::consensus::existing`]):
    /// on a store opened as a single server (its log replayed), with nothing writing, in
    /// steps, each of which leaves a directory that opens (as a single server's after
    /// steps 1 and 2, as a cluster node's after step 3):
    /// 1. a snapshot of the current version (LSN `n`) is written, unless the newest is at
    ///    `n` already: the log is no longer needed;
    /// 2. the log is started again at `n + 1` (every record removed): a cluster node's log
    ///    holds replicated entries only;
    /// 3. the snapshot at `n` is written again with `consensus(n)` (the consensus engine's
    ///    state at `n`) in its header, replacing step 1's by a rename: from now on the
    ///    directory is a cluster node's, which opens with [`StoreOptions::replicated`].
    ///
    /// `larch import`'s output holds its entries at LSN 0 with no log; a cluster's first
    /// entry is at LSN 1, so such a version is taken as LSN 1 (`n = 1`). Returns `n`.
    /// Refused on a replicated store, and on an empty one (nothing to convert).
    pub fn convert_to_replicated(&self, consensus: impl FnOnce(Lsn) -> Vec<u8>) -> Result<Lsn, StoreError> {
        if self.inner.replicated.is_some() {
            return Err(StoreError::Unsupported("the store is a cluster node's already"));
        }
        let mut version = self.current();
        if version.lsn == 0 {
            if version.is_empty() {
                return Err(StoreError::Unsupported("the store holds nothing to convert"));
            }
            let mut imported = (*version).clone();
            imported.lsn = 1;
            version = Arc::new(imported);
        }
        let _one = self.inner.snapshot_lock.lock().unwrap_or_else(|e| e.into_inner());
        // Step 1.
        self.write_snapshot_of(&version, None, Pace::AllCores)?;
        // Step 2.
        self.inner.wal.restart_at(version.lsn + 1)?;
        // Step 3.
        snapshot::write_snapshot_with(
            &*self.inner.storage,
            &self.inner.snapshot_dir,
            &snapshot_meta(&version, Some(&consensus(version.lsn))),
            version.entries.iter().map(|(id, r)| (id, r.as_bytes())),
            &self.write_options(Pace::AllCores),
        )?;
        Ok(version.lsn)
    }

    /// In a cluster: the newest snapshot file, its LSN and the consensus state its header
    /// carries (read from the header alone), and the file opened (under the snapshot lock,
    /// so no clean-up removes it first). `None` when there is no snapshot.
    pub fn newest_replicated_snapshot(&self) -> Result<Option<OpenedSnapshot>, StoreError> {
        let storage = &*self.inner.storage;
        let _one = self.inner.snapshot_lock.lock().unwrap_or_else(|e| e.into_inner());
        let Some((lsn, path)) = snapshot::list_snapshots(storage, &self.inner.snapshot_dir)?
            .into_iter()
            .next()
        else {
            return Ok(None);
        };
        let meta = snapshot::read_meta(storage, &path)?;
        let consensus = consensus_section(&meta, &path)?;
        let file = storage.open_read_seek(&path).map_err(io("open", &path))?;
        Ok(Some((ReplicatedSnapshot { lsn, path, consensus }, file)))
    }

    /// In a cluster: installs the snapshot file at `received` (sent by the leader, written
    /// on the same file system as the data directory), in steps:
    /// 1. its header's consensus section is read, and the whole file is checked and
    ///    loaded into a version (on every core);
    /// 2. it is renamed into the snapshot directory under its LSN's name, the directory
    ///    fsynced, and snapshots beyond [`KEEP_SNAPSHOTS`] removed: from now on the node
    ///    starts from it;
    /// 3. with committed entries held off (the apply lock), its version is published and
    ///    the change feed's subscribers told to start again from a snapshot.
    ///
    /// The log is left to the consensus engine, which purges what the snapshot covers.
    pub fn install_replicated_snapshot(&self, received: &Path) -> Result<ReplicatedSnapshot, StoreError> {
        let Some(replicated) = &self.inner.replicated else {
            return Err(StoreError::Unsupported(
                "only a store in a cluster installs a replicated snapshot",
            ));
        };
        let storage = &*self.inner.storage;
        let meta = snapshot::read_meta(storage, received)?;
        let consensus = consensus_section(&meta, received)?;
        let shared = Arc::clone(self.current().shared());
        let version = load_snapshot(storage, received, &shared, self.inner.threads).map_err(|problem| {
            StoreError::CorruptSnapshot {
                path: received.to_path_buf(),
                problem,
            }
        })?;
        let lsn = version.lsn;
        let bytes = std::fs::metadata(received).map_or(0, |m| m.len());
        let path = self.inner.snapshot_dir.join(snapshot::snapshot_name(lsn));
        {
            let _one = self.inner.snapshot_lock.lock().unwrap_or_else(|e| e.into_inner());
            storage.rename(received, &path).map_err(io("rename", received))?;
            storage
                .sync_dir(&self.inner.snapshot_dir)
                .map_err(io("sync", &self.inner.snapshot_dir))?;
            snapshot::remove_stale(storage, &self.inner.snapshot_dir, KEEP_SNAPSHOTS)?;
        }
        let entries = version.len() as u64;
        {
            let _apply = replicated.apply.lock().unwrap_or_else(|e| e.into_inner());
            consensus::writer::lock(&replicated.prepared).clear();
            self.inner.cell.publish(Arc::new(version));
            self.inner.feed.reset(lsn);
        }
        self.inner.stats.snapshot(SnapshotRecord {
            lsn,
            bytes,
            entries,
            finished: SystemTime::now(),
            duration: Duration::ZERO,
            loaded: true,
        });
        Ok(ReplicatedSnapshot { lsn, path, consensus })
    }

    /// How a snapshot at `pace` is written.
    fn write_options(&self, pace: Pace) -> WriteOptions {
        let (threads, duty_cycle) = match pace {
            Pace::Paced => (1, self.inner.duty_cycle),
            Pace::OneCore => (1, 1.0),
            Pace::AllCores => (self.inner.threads, 1.0),
        };
        WriteOptions {
            threads,
            duty_cycle,
            ..WriteOptions::default()
        }
    }

    /// A snapshot of the directory for a new replica ([`TransferSnapshot`]): one is written
    /// from the current version (paced, like the scheduled ones) unless the newest already
    /// holds it, and the newest is opened for reading under the snapshot lock, so no
    /// clean-up removes it first (once open, it stays readable to the end).
    pub fn snapshot_for_transfer(&self) -> Result<TransferSnapshot, StoreError> {
        self.write_snapshot(Pace::Paced)?;
        let _one = self.inner.snapshot_lock.lock().unwrap_or_else(|e| e.into_inner());
        let storage = &*self.inner.storage;
        let newest = snapshot::list_snapshots(storage, &self.inner.snapshot_dir)?
            .into_iter()
            .next();
        let dir = &self.inner.snapshot_dir;
        let Some((lsn, path)) = newest else {
            let gone = std::io::Error::new(std::io::ErrorKind::NotFound, "no snapshot in the directory");
            return Err(SnapshotError::io("find a snapshot in", dir, gone).into());
        };
        let reader = storage
            .open_read(&path)
            .map_err(|e| SnapshotError::io("open", &path, e))?;
        Ok(TransferSnapshot { lsn, path, reader })
    }

    /// Takes a backup into `to` while reads and writes go on ([`crate::backup`]): the
    /// current version's snapshot written there (paced to [`BACKUP_DUTY_CYCLE`] of one core
    /// unless [`BackupOptions::full_speed`]), the log after it up to the LSN durable once the
    /// snapshot is written, the manifest last. `to` must be absolute and missing or empty
    /// ([`BackupError::Target`] otherwise, with nothing written). The log from the
    /// snapshot's next LSN is pinned meanwhile, so the store's own snapshots do not remove
    /// it; one snapshot is written at a time, so a scheduled one waits for the backup's
    /// (but not for its copy of the log). A cluster node's backup is the snapshot of its
    /// current (committed) version alone, with no log: it restores as a single server's
    /// data.
    pub fn backup(&self, to: &Path, options: &BackupOptions) -> Result<BackupReport, BackupError> {
        check_target(&*self.inner.storage, to, "backup directory")?;
        let (_pin, version) = self.inner.pins.pin(|| {
            let version = self.current();
            (version.lsn + 1, version)
        });
        let write = if options.full_speed {
            self.write_options(Pace::AllCores)
        } else {
            WriteOptions {
                threads: 1,
                duty_cycle: BACKUP_DUTY_CYCLE.min(self.inner.duty_cycle),
                ..WriteOptions::default()
            }
        };
        let wal = Arc::clone(&self.inner.wal);
        // A cluster node's log is the replicated log, whose tail may not be committed and
        // whose records a single server cannot replay: its backup is the snapshot of a
        // committed version alone (it restores as a single server's data).
        let replicated = self.inner.replicated.is_some();
        let durable = move || if replicated { 0 } else { wal.durable_lsn() };
        let source = Source {
            storage: &*self.inner.storage,
            wal_dir: &self.inner.wal_dir,
            version: &version,
            meta: snapshot_meta(&version, None),
            write,
            durable_lsn: &durable,
            snapshot_lock: &self.inner.snapshot_lock,
        };
        take::take(&source, to, options)
    }

    /// Stops the writer (queued jobs finish first), writes a snapshot when `snapshot` is
    /// set, and closes the log. Other clones of this handle can no longer write.
    pub fn close(&self, snapshot: bool) -> Result<(), StoreError> {
        {
            let (lock, cv) = &*self.inner.stop;
            *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
            cv.notify_all();
        }
        if let Some(t) = self.inner.timer.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
        drop(self.inner.jobs.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Some(w) = self.inner.writer.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = w.join();
        }
        if snapshot && self.inner.replicated.is_none() {
            self.snapshot_now()?;
        }
        // A halted store says so in its own words (the log's error says less).
        self.inner.wal.sync().map_err(|e| match self.write_halt() {
            Some(halt) => StoreError::Failed(halt),
            None => e.into(),
        })?;
        Ok(())
    }
}

/// The consensus section of a cluster node's snapshot header (an error for a snapshot
/// without one: a single server's, which a cluster node cannot start from).
fn consensus_section(meta: &SnapshotMeta, path: &Path) -> Result<Vec<u8>, StoreError> {
    let corrupt = |problem: String| StoreError::CorruptSnapshot {
        path: path.to_path_buf(),
        problem,
    };
    match split_extra(&meta.extra).map_err(corrupt)? {
        (_, Some(state)) => Ok(state.to_vec()),
        (_, None) => Err(corrupt(
            "the snapshot carries no cluster state: it was not written by a cluster node".into(),
        )),
    }
}

/// The header of a snapshot of `version`, created now; `consensus` is a cluster node's
/// state at its LSN.
fn snapshot_meta(version: &Version, consensus: Option<&[u8]>) -> SnapshotMeta {
    SnapshotMeta {
        lsn: version.lsn,
        next_id: version.next_id,
        entry_count: version.len() as u64,
        created_unix_secs: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        extra: encode_extra(version.schema(), consensus),
    }
}

/// The log's failure hook: the failure becomes the store's write halt (reported once).
fn halt_on_failure(health: &Arc<Health>) -> crate::wal::FailureHook {
    let health = Arc::clone(health);
    Arc::new(move |error, undo| {
        let mut halt = WriteHalt::from_wal(error);
        halt.undo_failed = undo.map(ToString::to_string);
        health.halt(halt);
    })
}

/// Waits up to `wait` for [`Store::close`] to set the stop flag; true once it is set.
fn stopped_within(stop: &(Mutex<bool>, Condvar), wait: Duration) -> bool {
    let (lock, cv) = stop;
    let guard = lock.lock().unwrap_or_else(|e| e.into_inner());
    let (guard, _) = cv
        .wait_timeout_while(guard, wait, |stopped| !*stopped)
        .unwrap_or_else(|e| e.into_inner());
    *guard
}

/// Loads the newest snapshot, or starts empty when there is none.
fn load_newest(
    storage: &dyn Storage,
    dir: &Path,
    shared: &Arc<Shared>,
    threads: usize,
    report: &mut OpenReport,
) -> Result<Version, StoreError> {
    let snapshots = snapshot::list_snapshots(storage, dir)?;
    let Some((lsn, path)) = snapshots.first() else {
        return Ok(Version::empty(Arc::clone(shared)));
    };
    match load_snapshot(storage, path, shared, threads) {
        Ok(v) => {
            report.snapshot = Some((path.clone(), *lsn));
            Ok(v)
        }
        Err(problem) => {
            let fallback = snapshots
                .get(1)
                .filter(|(_, p)| snapshot::verify_snapshot(storage, p).is_ok());
            let advice = match fallback {
                Some((prev_lsn, prev)) => format!(
                    "the previous snapshot {} (LSN {prev_lsn}) is intact: move {} out of {} to start from it; \
                     the transaction log since LSN {prev_lsn} is kept and will be replayed on top of it",
                    prev.display(),
                    path.display(),
                    dir.display()
                ),
                None => "no intact older snapshot exists: restore the data directory from a backup".to_string(),
            };
            // Snapshot errors name the file already; others (a record or dictionary the
            // current schema cannot take) get it in front.
            let shown = path.display().to_string();
            let problem = if problem.contains(&shown) {
                problem
            } else {
                format!("{shown}: {problem}")
            };
            Err(StoreError::CorruptSnapshot {
                path: path.clone(),
                problem: format!(
                    "snapshot damaged: {problem}; startup stopped so that no data is silently lost; {advice}"
                ),
            })
        }
    }
}

/// Reads one snapshot and builds its version.
pub(crate) fn load_snapshot(
    storage: &dyn Storage,
    path: &Path,
    shared: &Arc<Shared>,
    threads: usize,
) -> Result<Version, String> {
    let parts: Mutex<Vec<Vec<(EntryId, EntryRecord)>>> = Mutex::new(Vec::new());
    let meta = snapshot::read_snapshot(storage, path, threads, |chunk| {
        let mut out = Vec::new();
        for (id, bytes) in chunk {
            let record = EntryRecord::from_bytes(bytes).map_err(|e| format!("entry {id}: {e}"))?;
            out.push((id, record));
        }
        parts.lock().unwrap_or_else(|e| e.into_inner()).push(out);
        Ok::<(), String>(())
    })
    .map_err(|e| e.to_string())?;
    let mut parts = parts.into_inner().unwrap_or_else(|e| e.into_inner());
    parts.sort_by_key(|p| p.first().map_or(0, |(id, _)| *id));
    let mut records: Vec<(EntryId, EntryRecord)> = Vec::with_capacity(meta.entry_count as usize);
    for p in parts {
        records.extend(p);
    }
    let (dictionary, _) = split_extra(&meta.extra)?;
    if let TypeMap::Remap(map) = decode_dictionary(dictionary, &shared.schema)? {
        for (_, r) in &mut records {
            *r = remap_record(r, &map)?;
        }
    }
    let version = build_version(shared, meta.lsn, meta.next_id, records, threads)?;
    if version.len() as u64 != meta.entry_count {
        return Err(format!(
            "the header announces {} entries but {} were read",
            meta.entry_count,
            version.len()
        ));
    }
    Ok(version)
}
