//! The access log's writer thread: it takes the lines the request threads formatted into
//! their buffers, puts them in time order and appends them to the file.
//!
//! One round, in steps:
//! 1. wait for [`DRAIN_INTERVAL`], or until a buffer passes its wake mark or the log
//!    closes; reopen the file first if a reopen was asked for (SIGHUP);
//! 2. note the cutoff, the monotonic time now, then swap every thread's buffers for empty
//!    ones (each swap takes that thread's slot lock for a moment);
//! 3. list the events with their stamps, with the ones held over from the last round,
//!    and sort them by time;
//! 4. copy the lines of every event stamped at or before the cutoff; hold the later ones
//!    for the next round. An event is stamped just before its thread formats it into its
//!    buffer, so an event stamped before the cutoff is in this round's buffers, and the
//!    events of different threads come out in the order they happened (an operation's
//!    result after the connection that brought it, its connection's close after it);
//! 5. append the lines to the file in one write (rotating first when due), and add a line
//!    saying how many events were dropped when a buffer was full. One write per round,
//!    not one per few dozen kilobytes: writing the same lines in 64 KiB pieces cost 5 to
//!    18% more server CPU per search pipelined (`docs/benchmarks.md`).
//!
//! The writer never blocks a request: threads only ever wait for their own slot's lock,
//! which the writer holds for one swap. When the disk fails, the lines of the failed
//! write are counted as lost, the failure is reported in the error log (a `tracing` error
//! event) once per run of failures, and the file is reopened for the next round; the first
//! write that works again is reported too, with the count of lines lost so far.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::buffers::{Buffers, Stamp};
use super::file::LogFile;
use super::style::Style;
use super::time::TimeCache;
use crate::clock::Mono;
use crate::config::AccessLogFormat;

/// How often the writer drains the buffers when nothing wakes it earlier: how far behind
/// the file may be from what happened.
pub const DRAIN_INTERVAL: Duration = Duration::from_millis(100);

/// What the writer thread and the log's owner share.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Set by SIGHUP: reopen the file by name before the next write.
    pub reopen: AtomicBool,
    /// Lines written to the file.
    pub lines_written: AtomicU64,
    /// Events dropped because a buffer was full.
    pub records_dropped: AtomicU64,
    /// Lines lost because a write failed.
    pub lines_lost: AtomicU64,
    /// Writes that failed.
    pub write_errors: AtomicU64,
}

/// The writer's state between rounds.
pub(crate) struct Writer {
    pub buffers: Arc<Buffers>,
    pub shared: Arc<Shared>,
    pub file: LogFile,
    pub style: Style,
}

/// One thread's lines taken for a round (or the lines held over from the last round).
#[derive(Default)]
struct Taken {
    text: Vec<u8>,
    stamps: Vec<Stamp>,
}

impl Writer {
    /// Runs rounds until the log closes and every line is written.
    pub(crate) fn run(mut self) {
        // The round's lines, read in place: the ones held over from the last round first,
        // then one per thread's slot (swapped out of the slot, not copied).
        let mut taken: Vec<Taken> = vec![Taken::default()];
        let mut held_next = Taken::default();
        // (buffer, where its lines start, its stamp) of every event of the round.
        let mut order: Vec<(usize, usize, Stamp)> = Vec::new();
        let mut out: Vec<u8> = Vec::new();
        let mut clock = TimeCache::default();
        let mut failing = false;
        loop {
            // Step 1.
            let closing = self.buffers.is_closed();
            if !closing {
                self.buffers.wait(DRAIN_INTERVAL);
            }
            if self.shared.reopen.swap(false, Ordering::AcqRel) {
                if let Err(e) = self.file.reopen() {
                    tracing::error!(
                        path = %self.file.path().display(),
                        error = %e,
                        "cannot reopen the access log"
                    );
                }
            }
            // Step 2.
            let cutoff = Mono::now().as_nanos();
            let closing = closing || self.buffers.is_closed();
            let slots = self.buffers.slots();
            taken.resize_with(slots.len() + 1, Taken::default);
            let mut dropped = 0;
            for (slot, t) in slots.iter().zip(taken.iter_mut().skip(1)) {
                dropped += slot.lock().take(&mut t.text, &mut t.stamps);
            }
            // Step 3.
            order.clear();
            for (b, t) in taken.iter().enumerate() {
                let mut start = 0;
                for &s in &t.stamps {
                    order.push((b, start, s));
                    start = s.end as usize;
                }
            }
            order.sort_by_key(|(_, _, s)| s.mono);
            // Step 4.
            held_next.text.clear();
            held_next.stamps.clear();
            let mut lines = 0;
            for &(b, start, s) in &order {
                let text = &taken[b].text[start..s.end as usize];
                if s.mono > cutoff && !closing {
                    held_next.text.extend_from_slice(text);
                    held_next.stamps.push(Stamp {
                        end: held_next.text.len() as u32,
                        ..s
                    });
                    continue;
                }
                out.extend_from_slice(text);
                lines += u64::from(s.lines);
            }
            if dropped > 0 {
                self.shared.records_dropped.fetch_add(dropped, Ordering::Relaxed);
                self.dropped_notice(&mut out, dropped, &mut clock);
                lines += 1;
            }
            // Step 5.
            self.write_out(&mut out, lines, &mut failing);
            std::mem::swap(&mut taken[0], &mut held_next);
            if closing && taken[0].stamps.is_empty() {
                let _ = self.file.sync();
                return;
            }
        }
    }

    /// Appends `out` (`lines` lines) to the file and empties it; counts the lines written
    /// or lost, and reports the start and end of a run of failed writes.
    fn write_out(&mut self, out: &mut Vec<u8>, lines: u64, failing: &mut bool) {
        if out.is_empty() {
            return;
        }
        match self.file.append(out) {
            Ok(()) => {
                self.shared.lines_written.fetch_add(lines, Ordering::Relaxed);
                if *failing {
                    tracing::info!(
                        path = %self.file.path().display(),
                        lost = self.shared.lines_lost.load(Ordering::Relaxed),
                        "writing the access log works again"
                    );
                }
                *failing = false;
            }
            Err(e) => {
                self.shared.lines_lost.fetch_add(lines, Ordering::Relaxed);
                self.shared.write_errors.fetch_add(1, Ordering::Relaxed);
                if !*failing {
                    tracing::error!(
                        path = %self.file.path().display(),
                        error = %e,
                        "writing the access log failed; its lines are counted as lost until a write succeeds"
                    );
                }
                *failing = true;
            }
        }
        out.clear();
    }

    /// A line saying that `n` records were dropped, in the log's own time format
    /// (logconv skips lines it does not know).
    fn dropped_notice(&self, out: &mut Vec<u8>, n: u64, clock: &mut TimeCache) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let what = format!(
            "{n} access log records were dropped: the server produced them faster than the log could be written"
        );
        match self.style.format {
            AccessLogFormat::Text389 => {
                clock.write_text(out, now);
                out.extend_from_slice(b" larch: ");
                out.extend_from_slice(what.as_bytes());
            }
            AccessLogFormat::Json => {
                out.extend_from_slice(b"{\"local_time\":\"");
                clock.write_iso(out, now);
                out.extend_from_slice(
                    format!("\",\"operation\":\"LARCH_DROPPED\",\"count\":{n},\"msg\":\"{what}\"}}")
                        .as_bytes(),
                );
            }
        }
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accesslog::file::Rotation;
    use crate::accesslog::level::Level;
    use crate::accesslog::test_events::close;
    use larch_store::storage::{FsStorage, Storage};

    /// The `conn=` numbers of the file's lines, in order.
    fn conns(path: &std::path::Path) -> Vec<u64> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter_map(|l| l.split(" conn=").nth(1))
            .map(|rest| rest.split(' ').next().unwrap().parse().unwrap())
            .collect()
    }

    #[test]
    fn the_lines_of_every_thread_come_out_in_the_order_they_happened() {
        let dir = std::env::temp_dir().join(format!("larch-accesslog-writer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let storage: Arc<dyn Storage> = Arc::new(FsStorage);
        let rotation = Rotation {
            max_size: 0,
            every: None,
            keep: 1,
        };
        let style = Style {
            format: AccessLogFormat::Text389,
            level: Level::Default,
            started: 0,
        };
        let buffers = Buffers::new(style);
        let shared = Arc::new(Shared::default());
        let writer = Writer {
            buffers: buffers.clone(),
            shared: shared.clone(),
            file: LogFile::open(storage, dir.join("access"), rotation).unwrap(),
            style,
        };
        let thread = std::thread::spawn(move || writer.run());
        // Two threads, each with its own slot, stamping events in turn: even
        // connection numbers on one, odd on the other, each event one microsecond after
        // the last; a few rounds of the writer pass while they do. The stamps start a
        // little ahead of the clock, so the first rounds hold events over for the next.
        let t0 = Mono::now().as_nanos() + 3 * DRAIN_INTERVAL.as_nanos() as u64 / 2;
        let threads: Vec<_> = (0..2u64)
            .map(|parity| {
                let buffers = buffers.clone();
                std::thread::spawn(move || {
                    for i in 0..200u64 {
                        let n = i * 2 + parity;
                        buffers.append(t0 + n * 1_000, close(n, t0 + n * 1_000));
                        if i % 50 == 0 {
                            std::thread::sleep(DRAIN_INTERVAL / 2);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        buffers.close();
        thread.join().unwrap();
        assert_eq!(conns(&dir.join("access")), (0..400).collect::<Vec<_>>());
        assert_eq!(shared.lines_written.load(Ordering::Relaxed), 400);
        assert_eq!(shared.records_dropped.load(Ordering::Relaxed), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
