//! When the store writes a snapshot on its own, so that the log a start replays stays
//! short whatever came before it, crashes included.
//!
//! A start costs loading the newest snapshot plus replaying the log records after it. A
//! clean shutdown writes a snapshot, so a clean start replays nothing; after a crash a start
//! replays whatever the log gained since the newest snapshot. `R` below is the trigger,
//! `snapshot_after_records` ([`crate::StoreOptions::snapshot_after_records`]). In steps:
//! 1. Opening removes leftover temporary snapshot files (a write that a crash interrupted
//!    before its rename; they are never loaded) and reports them
//!    ([`crate::OpenReport::removed_temp_files`]).
//! 2. After replay, [`due_at_open`] compares the records replayed with `R`: below it
//!    nothing is due; from `R` a snapshot is due at once and written in the background, on
//!    one core at full speed, while the store serves ([`AtOpen::Background`]); from
//!    [`BLOCKING_SNAPSHOT_TRIGGERS`] × `R` it is written before the store opens, on every
//!    core ([`AtOpen::BeforeServing`]): a log that long means a snapshot due earlier did not
//!    complete (the process was killed first), and another background attempt could lose
//!    the same race.
//! 3. While the store runs, the schedule is checked at once and then every
//!    [`SNAPSHOT_CHECK_EVERY`] ([`Schedule::due`]): a snapshot is due when the log holds `R`
//!    records past the newest snapshot, or when the interval has passed since the last one.
//!    A failed one is retried at the next check; the log holds every change meanwhile.
//!
//! The bound this gives. A start that goes on to serve begins with fewer than
//! `BLOCKING_SNAPSHOT_TRIGGERS × R` records past the newest snapshot (step 2 folds a longer
//! log before serving; if that snapshot is killed, no write was accepted, so the next start
//! finds the same log and tries again). While it serves, the log grows past that only by the
//! writes accepted before a due snapshot completes: at most one check interval plus one
//! snapshot write. So every start, after any number of crashes, replays at most
//! `BLOCKING_SNAPSHOT_TRIGGERS × R` records plus the writes of one check interval and one
//! snapshot write, and costs at most a clean start plus that replay plus one snapshot write
//! (`docs/store.md`, "Startup after a crash", has the measured figures). Safety does not
//! depend on any of it: a snapshot is written under a temporary name, synced, renamed and
//! its directory synced ([`crate::snapshot`]), and the log segments it covers are removed
//! only after that, so a kill at any moment leaves the previous snapshot and the whole log.

use std::time::{Duration, Instant};

use crate::wal::Lsn;

/// How often a running store checks whether a snapshot is due. A check reads one LSN, so
/// it costs nothing; the interval is how long the log may grow past the trigger before a
/// snapshot starts, and how long a short-lived process (one killed soon after each start)
/// writes without one being started.
pub const SNAPSHOT_CHECK_EVERY: Duration = Duration::from_secs(1);

/// A start whose replayed log holds at least this many times the trigger writes its snapshot
/// before serving (step 2). At 1 a start after every crash would wait for a snapshot, the
/// delay the background write exists to avoid; at 2 only a start that follows a lost race
/// (a background snapshot not completed, or a run writing faster than a snapshot folds)
/// waits, and the replay any start faces stays under two triggers' worth of records plus
/// one check interval and one snapshot write of writes.
pub const BLOCKING_SNAPSHOT_TRIGGERS: u64 = 2;

/// What a start does about the log it replayed (step 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtOpen {
    /// Fewer records than the trigger, or no trigger.
    Nothing,
    /// At least the trigger: a snapshot at once, in the background.
    Background,
    /// At least [`BLOCKING_SNAPSHOT_TRIGGERS`] × the trigger: a snapshot before serving.
    BeforeServing,
}

/// Step 2: what a start that replayed `replayed` records does, under the trigger `records`.
pub fn due_at_open(replayed: u64, records: Option<u64>) -> AtOpen {
    match records {
        Some(r) if replayed >= r.saturating_mul(BLOCKING_SNAPSHOT_TRIGGERS) => AtOpen::BeforeServing,
        Some(r) if replayed >= r => AtOpen::Background,
        _ => AtOpen::Nothing,
    }
}

/// How fast a snapshot is written: the balance between finishing it and leaving the cores
/// to the work the store serves meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// One thread paced to the configured duty cycle: a snapshot of a running store, due
    /// by size or time; the writes it must not slow come first.
    Paced,
    /// One thread at full speed: the snapshot due at once after a long replay, which the
    /// next crash would otherwise have to replay again; the other cores serve.
    OneCore,
    /// Every core at full speed: nothing else runs (before serving, at close, offline).
    AllCores,
}

/// Step 3: when a running store's next snapshot is due.
#[derive(Debug, Clone)]
pub struct Schedule {
    every: Option<Duration>,
    records: Option<u64>,
    last_time: Instant,
    last_lsn: Lsn,
    /// The next snapshot is the one due at open (written at [`Pace::OneCore`]).
    startup: bool,
}

impl Schedule {
    /// A schedule for a store opened at `now` whose newest snapshot covers `snapshot_lsn`:
    /// every `every`, or after `records` log records, whichever comes first. `startup`:
    /// the first snapshot is the one due at open.
    pub fn new(
        every: Option<Duration>,
        records: Option<u64>,
        snapshot_lsn: Lsn,
        now: Instant,
        startup: bool,
    ) -> Schedule {
        Schedule {
            every,
            records,
            last_time: now,
            last_lsn: snapshot_lsn,
            startup,
        }
    }

    /// True when neither trigger is set: nothing is ever due.
    pub fn is_off(&self) -> bool {
        self.every.is_none() && self.records.is_none()
    }

    /// How long to wait between checks.
    pub fn check_every(&self) -> Duration {
        self.every
            .map_or(SNAPSHOT_CHECK_EVERY, |e| e.min(SNAPSHOT_CHECK_EVERY))
    }

    /// Whether a snapshot is due when the current version is at `lsn`.
    pub fn due(&self, lsn: Lsn, now: Instant) -> bool {
        let by_time = self
            .every
            .is_some_and(|e| now.saturating_duration_since(self.last_time) >= e);
        let by_size = self
            .records
            .is_some_and(|r| lsn.saturating_sub(self.last_lsn) >= r);
        by_time || by_size
    }

    /// How fast the due snapshot is written.
    pub fn pace(&self) -> Pace {
        if self.startup {
            Pace::OneCore
        } else {
            Pace::Paced
        }
    }

    /// A snapshot covering `lsn` was written at `now`.
    pub fn written(&mut self, lsn: Lsn, now: Instant) {
        self.last_time = now;
        self.last_lsn = self.last_lsn.max(lsn);
        self.startup = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replayed_log_decides_what_a_start_does() {
        assert_eq!(due_at_open(5, None), AtOpen::Nothing);
        assert_eq!(due_at_open(99, Some(100)), AtOpen::Nothing);
        assert_eq!(due_at_open(100, Some(100)), AtOpen::Background);
        assert_eq!(due_at_open(199, Some(100)), AtOpen::Background);
        assert_eq!(due_at_open(200, Some(100)), AtOpen::BeforeServing);
        assert_eq!(due_at_open(u64::MAX, Some(u64::MAX)), AtOpen::BeforeServing);
    }

    #[test]
    fn a_schedule_is_due_by_size_or_time_and_restarts_after_a_snapshot() {
        let t0 = Instant::now();
        let mut s = Schedule::new(Some(Duration::from_secs(60)), Some(10), 5, t0, true);
        assert!(!s.due(14, t0));
        assert!(s.due(15, t0));
        assert_eq!(s.pace(), Pace::OneCore);
        s.written(15, t0);
        assert_eq!(s.pace(), Pace::Paced);
        assert!(!s.due(24, t0));
        assert!(s.due(24, t0 + Duration::from_secs(60)));
        assert_eq!(s.check_every(), SNAPSHOT_CHECK_EVERY);
        let short = Schedule::new(Some(Duration::from_millis(200)), None, 0, t0, false);
        assert_eq!(short.check_every(), Duration::from_millis(200));
        assert!(Schedule::new(None, None, 0, t0, false).is_off());
    }
}
