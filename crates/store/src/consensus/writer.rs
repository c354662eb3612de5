//! The writer thread of a replicated store (steps 1 to 5 of [`super`]), and the thread
//! that waits for its batches' ends (the settler).
//!
//! The writer takes a batch of jobs, computes it on a copy of a version and proposes it,
//! then takes the next batch at once. A batch is computed on the newest published version
//! when nothing of the writer's is in flight (after [`Replicator::ready`]), and otherwise
//! on the writer's copy of the version after its last proposed batch, stamped with the LSN
//! after that one's (step 5). The settler waits for each proposed batch in the order they
//! were proposed, reports its jobs' results and tells the writer how it ended; after a
//! batch that was not applied, the writer waits until nothing is in flight and starts
//! again from the newest version.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::{Prepared, PreparedChain, Proposal, ReplicateError, Replicator, ReplicatorSlot, WriteBatch};
use crate::error::StoreError;
use crate::feed::EntryStates;
use crate::stats::StoreStats;
use crate::txn::WriteTxn;
use crate::version::Version;
use crate::version_cell::VersionCell;
use crate::wal::record::Change;
use crate::wal::{LogRecord, Lsn, MAX_RECORD_PAYLOAD};
use crate::writer::{next_batch, Finish, Job};

/// Runs of batches a leader's writer keeps proposed and not yet ended, by default
/// ([`crate::StoreOptions::writes_in_flight`]): while one is replicated (a round trip to
/// the followers and their fsync), the next is computed and proposed, so the log's appends
/// and fsyncs on every node overlap the writer's work.
pub const MAX_IN_FLIGHT: usize = 4;

/// The writer loop; returns when every sender is gone and every proposed batch has ended.
pub(crate) fn run(
    jobs: Receiver<Job>,
    cell: Arc<VersionCell<Version>>,
    slot: ReplicatorSlot,
    prepared: Arc<Mutex<PreparedChain>>,
    stats: Arc<StoreStats>,
    most_in_flight: usize,
) {
    let (to_settler, settler_jobs) = mpsc::channel::<InFlight>();
    let (settled_tx, settled) = mpsc::channel::<bool>();
    let settler_stats = Arc::clone(&stats);
    let settler = std::thread::Builder::new()
        .name("larch-settler".into())
        .spawn(move || settle_in_order(&settler_jobs, &settled_tx, &settler_stats));
    let Ok(settler) = settler else {
        // No thread for the settler: every write is refused (the store stays readable).
        while let Some(batch) = next_batch(&jobs) {
            refuse(
                batch,
                &ReplicateError::Unavailable("no thread to wait for writes".into()),
            );
        }
        return;
    };
    let mut flight = Flight {
        settled,
        most: most_in_flight,
        in_flight: 0,
        broken: false,
        ahead: None,
    };
    let mut txn_buffers = TxnBuffers::default();
    while let Some(batch) = next_batch(&jobs) {
        let Some(replicator) = slot.get() else {
            refuse(
                batch,
                &ReplicateError::Unavailable("the cluster is not started".into()),
            );
            continue;
        };
        flight.take_ends();
        let start = match flight.continue_from() {
            Some(ahead) => ahead,
            None => match fresh_start(replicator.as_ref(), &cell, &prepared) {
                Ok(start) => start,
                Err(e) => {
                    refuse(batch, &e);
                    continue;
                }
            },
        };
        let Start {
            leadership,
            base,
            mut working,
            lsn,
        } = start;
        // Step 2: the batch on the copy, one write per job that changed something, cut
        // into entries of at most MAX_ENTRY_WRITE_OCTETS.
        let mut run = Run::new(lsn);
        for job in batch {
            let before = working.clone();
            let finish = job(Ok(&mut txn_buffers.txn(&mut working)));
            let write: Vec<Vec<u8>> = txn_buffers.log.drain(..).map(|r| r.payload).collect();
            if write_octets(&write) > MAX_ENTRY_WRITE_OCTETS {
                // Too large for any entry: undone, refused as a single server refuses a
                // change too large for a log record.
                working = before;
                let len = write_octets(&write);
                run.finishers
                    .push((finish, Outcome::Refused(StoreError::TooLarge { len })));
                continue;
            }
            run.add(finish, write, &before);
        }
        if run.entries.iter().all(|e| e.writes.is_empty()) {
            // Nothing to propose: the copy is unchanged, and so is what follows it.
            if base.is_some() {
                run.finish_all(&[]);
                continue;
            }
            // Computed on batches still in flight, the jobs' answers (a refusal, or
            // nothing to change) hold only once those are applied: the settler gives them
            // in turn.
            run.entries.clear();
            flight.send(
                &to_settler,
                InFlight::new(Vec::new(), run, true, 0, Instant::now()),
            );
            flight.ahead = Some(Start {
                leadership,
                base: None,
                working,
                lsn,
            });
            continue;
        }
        // Steps 3 and 5: each entry proposed, the first with its version prepared; the
        // settler waits for them.
        let records = run
            .entries
            .iter()
            .flat_map(|e| &e.writes)
            .map(|w| w.len() as u64)
            .sum();
        let entries = std::mem::take(&mut run.entries);
        let next_lsn = entries.last().map_or(lsn, |e| e.expected_lsn + 1);
        let first_done = run.first_done.take().unwrap_or_else(|| working.clone());
        let ahead = base.is_none();
        if ahead {
            stats.proposed_ahead();
        }
        lock(&prepared).queue.push_back(Prepared {
            leadership,
            lsn: entries[0].expected_lsn,
            base,
            working: first_done,
        });
        let handed = Instant::now();
        let proposals = entries
            .into_iter()
            .map(|entry| replicator.propose(entry))
            .collect::<Vec<_>>();
        let proposed = proposals.iter().all(Result::is_ok);
        flight.send(&to_settler, InFlight::new(proposals, run, ahead, records, handed));
        flight.ahead = proposed.then_some(Start {
            leadership,
            base: None,
            working,
            lsn: next_lsn,
        });
        flight.broken |= !proposed;
    }
    drop(to_settler);
    let _ = settler.join();
}

/// Where the writer computes its next batch.
struct Start {
    /// The leadership its entries are appended under.
    leadership: super::Leadership,
    /// The published version it is computed on; `None`: the writer's copy of the version
    /// after its last proposed batch.
    base: Option<Arc<Version>>,
    /// The copy the batch is computed on.
    working: Version,
    /// The LSN the batch is computed to land at.
    lsn: Lsn,
}

/// The writer's view of its batches in flight.
struct Flight {
    /// One message per run of batches ended: whether all of them were applied.
    settled: Receiver<bool>,
    /// The most runs in flight at once.
    most: usize,
    /// Runs proposed and not yet ended.
    in_flight: usize,
    /// A run ended without being applied: what follows it in flight cannot be either.
    broken: bool,
    /// Where the next batch goes on when the last one is still in flight.
    ahead: Option<Start>,
}

impl Flight {
    /// Hands a run to the settler.
    fn send(&mut self, to_settler: &Sender<InFlight>, run: InFlight) {
        // The settler exits only after the writer: a send fails only if it panicked, and
        // then nothing waits for the run.
        if to_settler.send(run).is_ok() {
            self.in_flight += 1;
        }
    }

    /// Takes the ends the settler reported, without waiting.
    fn take_ends(&mut self) {
        while let Ok(applied) = self.settled.try_recv() {
            self.ended(applied);
        }
    }

    fn ended(&mut self, applied: bool) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.broken |= !applied;
    }

    /// Waits for one run to end.
    fn wait_one(&mut self) {
        match self.settled.recv() {
            Ok(applied) => self.ended(applied),
            // The settler is gone: nothing is in flight any more.
            Err(_) => self.in_flight = 0,
        }
    }

    /// Where the next batch goes on from: the copy after the last batch when that one is
    /// still in flight and everything before it was applied (waiting while the most runs
    /// are in flight), or `None` after waiting for every run to end (start afresh).
    fn continue_from(&mut self) -> Option<Start> {
        while self.in_flight >= self.most && !self.broken {
            self.wait_one();
        }
        if self.in_flight > 0 && !self.broken {
            if let Some(ahead) = self.ahead.take() {
                return Some(ahead);
            }
        }
        self.ahead = None;
        while self.in_flight > 0 {
            self.wait_one();
        }
        self.broken = false;
        None
    }
}

/// Nothing of the writer's in flight: the newest version, once this node may write on it
/// (step 1). Prepared versions left from earlier batches are forgotten.
fn fresh_start(
    replicator: &dyn Replicator,
    cell: &VersionCell<Version>,
    prepared: &Mutex<PreparedChain>,
) -> Result<Start, ReplicateError> {
    let leadership = replicator.ready()?;
    lock(prepared).clear();
    let base = cell.load();
    let working = (*base).clone();
    Ok(Start {
        leadership,
        lsn: base.lsn + 1,
        base: Some(base),
        working,
    })
}

/// The buffers a job's transaction writes into, kept from job to job.
#[derive(Default)]
struct TxnBuffers {
    log: Vec<LogRecord>,
    kept: Vec<(Change, EntryStates)>,
    scratch: Vec<u8>,
}

impl TxnBuffers {
    fn txn<'a>(&'a mut self, version: &'a mut Version) -> WriteTxn<'a> {
        self.log.clear();
        WriteTxn {
            version,
            log: &mut self.log,
            scratch: &mut self.scratch,
            changes: &mut self.kept,
            keep_changes: false,
        }
    }
}

/// A run of batches proposed, for the settler.
struct InFlight {
    /// One per entry, in order (none: the run changed nothing).
    proposals: Vec<Result<Box<dyn Proposal>, ReplicateError>>,
    run: Run,
    /// Computed on the writer's copy after runs still in flight, not on a published
    /// version.
    ahead: bool,
    jobs_count: u64,
    records: u64,
    handed: Instant,
}

impl InFlight {
    /// `run`, its `records` handed to the cluster at `handed` as `proposals`.
    fn new(
        proposals: Vec<Result<Box<dyn Proposal>, ReplicateError>>,
        run: Run,
        ahead: bool,
        records: u64,
        handed: Instant,
    ) -> InFlight {
        InFlight {
            jobs_count: run.finishers.len() as u64,
            proposals,
            run,
            ahead,
            records,
            handed,
        }
    }
}

/// The settler: waits for each run in the order it was proposed, reports its jobs'
/// results, and tells the writer whether it was applied. A run computed ahead on one that
/// was not applied fails whole, its refusals too: they were decided on writes that never
/// happened.
fn settle_in_order(runs: &Receiver<InFlight>, ended: &Sender<bool>, stats: &StoreStats) {
    // A run since the last one computed on a published version was not applied.
    let mut broken = false;
    for f in runs {
        if !f.ahead {
            broken = false;
        }
        if broken {
            // Its proposals cannot land where they were computed to: not waited for.
            f.run.fail_all(&ReplicateError::Superseded);
            let _ = ended.send(false);
            continue;
        }
        let mut results: Vec<Result<Lsn, ReplicateError>> = Vec::with_capacity(f.proposals.len());
        for proposal in f.proposals {
            let result = match (results.last(), proposal) {
                // Computed on an entry that was not applied: it cannot land where it was
                // computed to (a no-op on every node if it is committed at all).
                (Some(Err(_)), _) => Err(ReplicateError::Superseded),
                (_, Err(e)) => Err(e),
                (_, Ok(p)) => p.wait(),
            };
            results.push(result);
        }
        if !results.is_empty() {
            let nanos = u64::try_from(f.handed.elapsed().as_nanos()).unwrap_or(u64::MAX);
            stats.committed(f.jobs_count, f.records, nanos);
        }
        let applied = results.iter().all(Result::is_ok);
        broken = !applied;
        f.run.finish_all(&results);
        let _ = ended.send(applied);
    }
}

/// The largest write (its changes, as an entry holds them) a batch entry takes: a WAL
/// record's limit, less room for the entry's own fields.
pub const MAX_ENTRY_WRITE_OCTETS: usize = MAX_RECORD_PAYLOAD - (64 << 10);

/// Octets `write` takes in an entry.
fn write_octets(write: &[Vec<u8>]) -> usize {
    4 + write.iter().map(|c| 4 + c.len()).sum::<usize>()
}

/// How a job ends once its entry is settled.
enum Outcome {
    /// It changed nothing.
    Unchanged,
    /// Its write is in entry `i` of the run.
    In(usize),
    /// It was refused before it was proposed.
    Refused(StoreError),
}

/// One batch of jobs cut into entries.
struct Run {
    entries: Vec<WriteBatch>,
    /// Octets of the last entry's writes.
    octets: usize,
    finishers: Vec<(Finish, Outcome)>,
    /// The version after the first entry's writes, once a second entry starts.
    first_done: Option<Version>,
}

impl Run {
    fn new(expected_lsn: Lsn) -> Run {
        Run {
            entries: vec![WriteBatch {
                expected_lsn,
                writes: Vec::new(),
            }],
            octets: 0,
            finishers: Vec::new(),
            first_done: None,
        }
    }

    /// Adds a job's write (empty: it changed nothing); a write that does not fit the
    /// current entry starts the next one, to land right after it. `before` is the version
    /// before the write.
    fn add(&mut self, finish: Finish, write: Vec<Vec<u8>>, before: &Version) {
        if write.is_empty() {
            self.finishers.push((finish, Outcome::Unchanged));
            return;
        }
        let size = write_octets(&write);
        let current_lsn = self.entries.last().map_or(0, |e| e.expected_lsn);
        if self.octets + size > MAX_ENTRY_WRITE_OCTETS {
            if self.entries.len() == 1 {
                self.first_done = Some(before.clone());
            }
            self.entries.push(WriteBatch {
                expected_lsn: current_lsn + 1,
                writes: Vec::new(),
            });
            self.octets = 0;
        }
        self.octets += size;
        let i = self.entries.len() - 1;
        if let Some(entry) = self.entries.last_mut() {
            entry.writes.push(write);
        }
        self.finishers.push((finish, Outcome::In(i)));
    }

    /// Fails every job with `why`.
    fn fail_all(self, why: &ReplicateError) {
        for (finish, _) in self.finishers {
            finish(Err(StoreError::Replication(why.clone())));
        }
    }

    /// Reports each job's result: `results` has one per entry.
    fn finish_all(self, results: &[Result<Lsn, ReplicateError>]) {
        for (finish, outcome) in self.finishers {
            finish(match outcome {
                Outcome::Unchanged => Ok(()),
                Outcome::Refused(e) => Err(e),
                Outcome::In(i) => match results.get(i) {
                    Some(Ok(_)) => Ok(()),
                    Some(Err(e)) => Err(StoreError::Replication(e.clone())),
                    None => Err(StoreError::Replication(ReplicateError::Superseded)),
                },
            });
        }
    }
}

/// Fails every job of a batch that cannot be written here.
fn refuse(batch: Vec<Job>, why: &ReplicateError) {
    for job in batch {
        let e = || StoreError::Replication(why.clone());
        job(Err(e()))(Err(e()));
    }
}

/// The prepared chain; its holders never leave it half written.
pub(crate) fn lock(prepared: &Mutex<PreparedChain>) -> MutexGuard<'_, PreparedChain> {
    prepared.lock().unwrap_or_else(|e| e.into_inner())
}
