//! The audit log's thread: reads the change feed, writes each batch of changes to the file
//! in one append, keeps the entries' previous states (`previous`) close to the store's
//! current version, and starts again from the current version when the feed cannot go on.
//!
//! The loop, in steps:
//! 1. reopen the file when SIGHUP asked for it; stop once every change up to the LSN
//!    `close` asked for is handled;
//! 2. wait up to [`POLL`] for a batch; write each change not yet handled (LSN above the
//!    last one) into a buffer: from the entry's states the feed handed over with it (the
//!    batch is kept for `previous`, which does not follow it yet), or, for a change read
//!    from the log, after bringing `previous` up to date with those kept batches, from its
//!    logged attributes and the previous state `previous` gives, then recording its new
//!    one there; append the buffer to the file;
//! 3. when the store's current version is exactly at the last change handled, take it as
//!    the new base of the previous states (cheap: an `Arc`), dropping the kept batches;
//!    when the states tracked or kept on top of the base grew too large and that moment
//!    does not come, subscribe again from the current version `V` (a second
//!    subscription, read from then on only after the first reached `V`'s LSN), and switch
//!    to it, and to `V` as base, once the last change handled is `V`'s;
//! 4. when the feed fails ([`FeedError::SnapshotNeeded`]: the log segments this
//!    subscription needed are gone; or a damaged log), subscribe again from the current
//!    version: the changes in between are not in the audit log; a comment says which
//!    (`# skipped: lsn A to B (N changes): why`), they are counted, and standard error says
//!    so. [`FeedError::Closed`] (the store closed) ends the thread after everything was
//!    written.
//!
//! A failed append loses that batch's records (the octets may be half written, so they
//! are not written again): they are counted, standard error says so once per run of
//! failures, and the next successful append starts with `# lost: lsn A to B (N changes):
//! why`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use larch_model::dn::NormDn;
use larch_model::entry::StoredEntry;
use larch_model::schema::Schema;
use larch_store::wal::record::Change;
use larch_store::wal::Lsn;
use larch_store::{
    CommittedBatch, CommittedChange, EntryRecord, FeedError, FeedSubscription, Store, StoreReader, Version,
};

use super::previous::{Previous, MAX_TRACKED_BYTES, MAX_TRACKED_ENTRIES};
use super::record::Formatter;
use crate::accesslog::file::LogFile;
use crate::opattrs::time::generalized_time;

/// How long the thread waits for a batch before it looks at the reopen and stop requests.
pub const POLL: Duration = Duration::from_millis(100);

/// How long the thread waits before trying again to subscribe after a failure other than
/// the store being closed.
const RESUBSCRIBE_WAIT: Duration = Duration::from_secs(1);

/// What the thread and the [`super::AuditLog`] handle share.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Stop once the last change handled reaches this LSN (`u64::MAX`: run on).
    pub stop_at: AtomicU64,
    /// Reopen the file before the next write.
    pub reopen: AtomicBool,
    /// The LSN of the last change written or skipped.
    pub handled: AtomicU64,
    /// [`super::AuditLogStats`]' figures.
    pub records_written: AtomicU64,
    pub changes_skipped: AtomicU64,
    pub records_lost: AtomicU64,
    pub write_errors: AtomicU64,
}

impl Shared {
    pub(crate) fn new(start: Lsn) -> Shared {
        Shared {
            stop_at: AtomicU64::new(u64::MAX),
            reopen: AtomicBool::new(false),
            handled: AtomicU64::new(start),
            records_written: AtomicU64::new(0),
            changes_skipped: AtomicU64::new(0),
            records_lost: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
        }
    }
}

/// Changes whose records were not written: `first..=last`, and why.
struct Lost {
    first: Lsn,
    last: Lsn,
    why: String,
}

/// The thread's state.
pub(crate) struct Writer {
    store: Store,
    reader: StoreReader,
    format: Formatter,
    file: LogFile,
    shared: Arc<Shared>,
    sub: FeedSubscription,
    previous: Previous,
    /// The LSN up to which `previous` follows the changes (its base's, or the last change
    /// written from the log's form).
    tracked: Lsn,
    /// The batches holding the changes written from their states since `tracked`, which
    /// `previous` has not followed (see [`Writer::catch_up_previous`]), how many changes
    /// and about how many octets they hold.
    deferred: Vec<Arc<CommittedBatch>>,
    deferred_changes: usize,
    deferred_bytes: usize,
    /// The LSN of the last change handled (written or skipped).
    handled: Lsn,
    /// A newer subscription and its starting version, waiting for `handled` to reach it.
    next: Option<(Arc<Version>, FeedSubscription)>,
    /// Records waiting for the next append, and the LSNs they cover.
    buf: Vec<u8>,
    buf_lsns: Option<(Lsn, Lsn)>,
    /// Records lost to failed appends since the last successful one.
    lost: Option<Lost>,
}

impl Writer {
    /// A writer starting after the version `base` (whose LSN is the subscription's start).
    pub(crate) fn new(
        store: Store,
        schema: Arc<Schema>,
        file: LogFile,
        shared: Arc<Shared>,
        base: Arc<Version>,
        sub: FeedSubscription,
    ) -> Writer {
        Writer {
            reader: store.reader(),
            store,
            format: Formatter::new(schema),
            file,
            shared,
            sub,
            handled: base.lsn(),
            tracked: base.lsn(),
            previous: Previous::new(base),
            deferred: Vec::new(),
            deferred_changes: 0,
            deferred_bytes: 0,
            next: None,
            buf: Vec::new(),
            buf_lsns: None,
            lost: None,
        }
    }

    /// The loop of the module documentation, until `close` or the store's end.
    pub(crate) fn run(mut self) {
        let started = generalized_time(SystemTime::now());
        self.format.note(
            &mut self.buf,
            &[(
                "audit log started",
                &format!("{started}, with the changes after lsn {}", self.handled),
            )],
        );
        self.flush();
        loop {
            self.reopen_if_asked();
            if self.handled >= self.shared.stop_at.load(Ordering::Acquire) {
                break;
            }
            match self.sub.recv_timeout(POLL) {
                Ok(Some(batch)) => self.batch(&batch),
                Ok(None) => {}
                Err(FeedError::Closed) => break,
                Err(e) => {
                    if !self.resubscribe(&e) {
                        break;
                    }
                }
            }
            self.flush();
            self.follow_store();
        }
        self.flush();
        if let Err(e) = self.file.sync() {
            eprintln!(
                "larch: audit log: cannot sync {}: {e}",
                self.file.path().display()
            );
        }
    }

    /// Step 1's reopen, also done before each append (so a write after
    /// [`super::AuditLog::reopen`] goes to the new file).
    fn reopen_if_asked(&mut self) {
        if self.shared.reopen.swap(false, Ordering::AcqRel) {
            if let Err(e) = self.file.reopen() {
                eprintln!(
                    "larch: audit log: cannot reopen {}: {e} (trying again at the next write)",
                    self.file.path().display()
                );
            }
        }
    }

    /// Step 2 for one batch.
    fn batch(&mut self, batch: &Arc<CommittedBatch>) {
        let mut kept = false;
        for c in batch.changes() {
            if c.lsn <= self.handled {
                continue;
            }
            if c.lsn > self.handled + 1 {
                // The feed promises no gap; say so if it ever happened.
                self.skip(
                    self.handled + 1,
                    c.lsn - 1,
                    "the change feed did not deliver them",
                );
            }
            if self.write_states(c) {
                if !kept {
                    self.deferred.push(Arc::clone(batch));
                    kept = true;
                }
                self.deferred_changes += 1;
                // About the octets the change's logged form holds (the records it shares with
                // the store are not counted).
                self.deferred_bytes += c.change.contents_len();
            } else {
                self.catch_up_previous();
                self.write(c.lsn, &c.change);
                self.tracked = c.lsn;
            }
            self.handled = c.lsn;
            self.buf_lsns = Some(match self.buf_lsns {
                Some((first, _)) => (first, c.lsn),
                None => (c.lsn, c.lsn),
            });
            self.shared.handled.store(c.lsn, Ordering::Release);
            self.switch_if_due();
        }
    }

    /// Formats a change from the entry's states the feed handed over with it (a change
    /// the store's writer delivered), without the schema and without `previous`. False
    /// when the change came without them (read from the log while catching up).
    fn write_states(&mut self, c: &CommittedChange) -> bool {
        let Some(states) = &c.states else {
            return false;
        };
        let after = match (&c.change, &states.after, &states.described) {
            (Change::Delete { .. }, _, Some(described)) => described.as_ref(),
            (Change::Delete { .. }, _, None) => return false,
            (_, Some(after), _) => after.attrs(),
            (_, None, _) => return false,
        };
        let before = match &c.change {
            Change::Add { .. } => None,
            _ => states.before.as_ref().map(EntryRecord::attrs),
        };
        self.format.stored(&mut self.buf, c.lsn, &c.change, before, after);
        true
    }

    /// Brings `previous` up to the last change handled: the changes written from their
    /// states since `tracked` are followed now, from their logged form, as [`Writer::write`]
    /// follows one. Needed only before a change read from the log (the feed's catch-up,
    /// after this thread fell [`larch_store::feed::MAX_FEED_BATCHES`] batches behind), whose
    /// previous state `previous` must give; the steady path never comes here.
    fn catch_up_previous(&mut self) {
        let deferred = std::mem::take(&mut self.deferred);
        for batch in &deferred {
            for c in batch.changes() {
                if c.lsn > self.tracked && c.lsn <= self.handled {
                    let norm = self.format.normalize(c.change.dn());
                    let after = match &c.change {
                        Change::Delete { .. } => None,
                        _ => self.format.attributes(&c.change),
                    };
                    self.follow(&c.change, norm, after);
                    self.tracked = c.lsn;
                }
            }
        }
        self.deferred_changes = 0;
        self.deferred_bytes = 0;
    }

    /// Takes `version` (at the LSN of the last change handled) as the base of the
    /// previous states: nothing deferred remains.
    fn rebase(&mut self, version: Arc<Version>) {
        self.tracked = version.lsn();
        self.previous.rebase(version);
        self.deferred.clear();
        self.deferred_changes = 0;
        self.deferred_bytes = 0;
    }

    /// True when the states tracked or deferred on top of the base should be dropped for
    /// a newer version.
    fn tracking_is_large(&self) -> bool {
        self.previous.is_large()
            || self.deferred_changes > MAX_TRACKED_ENTRIES
            || self.deferred_bytes > MAX_TRACKED_BYTES
    }

    /// Step 3's switch to the newer subscription, once the last change handled is its
    /// version's (dropped if a skip jumped past it).
    fn switch_if_due(&mut self) {
        let Some(at) = self.next.as_ref().map(|(v, _)| v.lsn()) else {
            return;
        };
        if at < self.handled {
            self.next = None;
        } else if at == self.handled {
            if let Some((version, sub)) = self.next.take() {
                self.rebase(version);
                self.sub = sub;
            }
        }
    }

    /// Formats one change from its logged form into the buffer, its previous state from
    /// `previous`, and records the entry's new state there.
    fn write(&mut self, lsn: Lsn, change: &Change) {
        let norm = self.format.normalize(change.dn());
        let before = match change {
            Change::Add { .. } => None,
            _ => norm.as_ref().and_then(|n| self.previous.get(n)),
        };
        let after = self.format.change(&mut self.buf, lsn, change, before);
        self.follow(change, norm, after);
    }

    /// Records in `previous` the entry's state after `change` (`after`: its attributes,
    /// `None` for a delete or when they did not decode).
    fn follow(&mut self, change: &Change, norm: Option<NormDn>, after: Option<StoredEntry>) {
        match (change, norm, after) {
            (Change::Add { .. } | Change::Modify { .. }, Some(n), Some(a)) => self.previous.set(n, a),
            (Change::Delete { .. }, Some(n), _) => self.previous.remove(&n),
            (Change::ModifyDn { new_dn, .. }, Some(n), Some(a)) => match self.format.normalize(new_dn) {
                Some(new) => self.previous.rename(&n, new, a),
                None => self.previous.lose_track(),
            },
            _ => self.previous.lose_track(),
        }
    }

    /// Notes that the changes `first..=last` are not in the log (step 4).
    fn skip(&mut self, first: Lsn, last: Lsn, why: &str) {
        if first > last {
            return;
        }
        let n = last - first + 1;
        self.shared.changes_skipped.fetch_add(n, Ordering::Relaxed);
        let plural = if n == 1 { "change" } else { "changes" };
        self.format.note(
            &mut self.buf,
            &[("skipped", &format!("lsn {first} to {last} ({n} {plural}): {why}"))],
        );
        eprintln!(
            "larch: audit log: {n} committed {plural} (LSN {first} to {last}) are not in the audit log: {why}"
        );
        self.handled = self.handled.max(last);
        self.shared.handled.store(self.handled, Ordering::Release);
    }

    /// Step 4: a new subscription from the current version. False when the store is
    /// closed (or closing was asked for while subscribing failed).
    fn resubscribe(&mut self, failure: &FeedError) -> bool {
        let why = match failure {
            FeedError::SnapshotNeeded { .. } => {
                format!("{failure} (the audit log fell behind the log segments a snapshot removed)")
            }
            other => other.to_string(),
        };
        loop {
            match self.store.subscribe_at_current() {
                Ok((version, sub)) => {
                    self.skip(self.handled + 1, version.lsn(), &why);
                    self.rebase(version);
                    self.sub = sub;
                    self.next = None;
                    return true;
                }
                Err(FeedError::Closed) => {
                    let last = self.reader.current().lsn();
                    self.skip(self.handled + 1, last, &why);
                    return false;
                }
                Err(e) => {
                    eprintln!("larch: audit log: cannot subscribe to the change feed again: {e}");
                    if self.handled >= self.shared.stop_at.load(Ordering::Acquire) {
                        return false;
                    }
                    std::thread::sleep(RESUBSCRIBE_WAIT);
                }
            }
        }
    }

    /// Step 3.
    fn follow_store(&mut self) {
        if self.next.is_some() {
            return;
        }
        let current = Arc::clone(self.reader.current());
        if current.lsn() == self.handled {
            if current.lsn() != self.previous.base_lsn()
                || !self.previous.is_clean()
                || !self.deferred.is_empty()
            {
                self.rebase(current);
            }
            return;
        }
        if !self.tracking_is_large() {
            return;
        }
        match self.store.subscribe_at_current() {
            Ok((version, sub)) if version.lsn() == self.handled => {
                self.rebase(version);
                self.sub = sub;
            }
            Ok(next) => self.next = Some(next),
            // The store is closing: the current subscription delivers the rest.
            Err(_) => {}
        }
    }

    /// Appends the buffer to the file (one write), with a note of records lost before.
    fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        self.reopen_if_asked();
        let lsns = self.buf_lsns.take();
        let records = lsns.map_or(0, |(first, last)| last - first + 1);
        let mut octets = Vec::new();
        if let Some(lost) = &self.lost {
            let n = lost.last - lost.first + 1;
            self.format.note(
                &mut octets,
                &[(
                    "lost",
                    &format!(
                        "lsn {} to {} ({n} {}): {}",
                        lost.first,
                        lost.last,
                        if n == 1 { "change" } else { "changes" },
                        lost.why
                    ),
                )],
            );
        }
        let written = if octets.is_empty() {
            self.file.append(&self.buf)
        } else {
            octets.extend_from_slice(&self.buf);
            self.file.append(&octets)
        };
        self.buf.clear();
        match written {
            Ok(()) => {
                if let Some(lost) = self.lost.take() {
                    eprintln!(
                        "larch: audit log: writing to {} again (LSN {} to {} were lost)",
                        self.file.path().display(),
                        lost.first,
                        lost.last
                    );
                }
                self.shared.records_written.fetch_add(records, Ordering::Relaxed);
            }
            Err(e) => {
                self.shared.write_errors.fetch_add(1, Ordering::Relaxed);
                self.shared.records_lost.fetch_add(records, Ordering::Relaxed);
                let Some((first, last)) = lsns else { return };
                match &mut self.lost {
                    Some(lost) => lost.last = last,
                    None => {
                        eprintln!(
                            "larch: audit log: cannot write to {}: {e} (the records of LSN {first} to \
                             {last} are lost; the file is reopened for the next batch)",
                            self.file.path().display()
                        );
                        self.lost = Some(Lost {
                            first,
                            last,
                            why: format!("a write to the audit log failed: {e}"),
                        });
                    }
                }
            }
        }
    }
}
