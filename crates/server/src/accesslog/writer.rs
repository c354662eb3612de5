//! The access log's writer thread: it drains the per-thread buffers, puts the records in
//! time order, formats them and appends them to the file.
//!
//! One round, in steps:
//! 1. wait for [`DRAIN_INTERVAL`], or until a buffer passes its wake mark or the log
//!    closes; reopen the file first if a reopen was asked for (SIGHUP);
//! 2. note the cutoff, the monotonic time now, then swap every thread's buffer for an
//!    empty one (each swap takes that thread's slot lock for a moment);
//! 3. read the records back, with the ones held over from the last round, and sort them by
//!    their time stamps;
//! 4. format every record stamped at or before the cutoff; hold the later ones for the
//!    next round. A record is stamped just before its thread appends it, so a record
//!    stamped before the cutoff is in this round's buffers, and records of different
//!    threads come out in the order they happened (an operation's result after the
//!    connection that brought it, its connection's close after it);
//! 5. append the lines to the file in one write (rotating first when due), and add a line
//!    saying how many records were dropped when a buffer was full.
//!
//! The writer never blocks a request: threads only ever wait for their own slot's lock,
//! which the writer holds for one swap. When the disk fails, the lines of the failed
//! write are counted as lost, the failure is reported in the error log (a `tracing` error
//! event) once per run of failures, and the file is reopened for the next round; the first
//! write that works again is reported too, with the count of lines lost so far.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::buffers::Buffers;
use super::event::{self, Event};
use super::file::LogFile;
use super::level::Level;
use super::time::TimeCache;
use super::{format_389, format_json};
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
    /// Records dropped because a buffer was full.
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
    pub format: AccessLogFormat,
    pub level: Level,
    /// The Unix second the log started (the first half of a JSON line's `key`).
    pub started: u64,
}

impl Writer {
    /// Runs rounds until the log closes and every record is written.
    pub(crate) fn run(mut self) {
        // The round's records, read in place: the ones held over from the last round first,
        // then one buffer per thread's slot (swapped out of the slot, not copied).
        let mut bufs: Vec<Vec<u8>> = vec![Vec::new()];
        let mut held_next: Vec<u8> = Vec::new();
        // (time stamp, buffer, start, length) of every record of the round.
        let mut order: Vec<(u64, usize, usize, usize)> = Vec::new();
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
            bufs.resize_with(slots.len() + 1, Vec::new);
            let mut dropped = 0;
            for (slot, buf) in slots.iter().zip(bufs.iter_mut().skip(1)) {
                dropped += slot.lock().take(buf);
            }
            // Step 3.
            order.clear();
            for (b, buf) in bufs.iter().enumerate() {
                let mut at = 0;
                while at < buf.len() {
                    match event::peek(&buf[at..]) {
                        Some((mono, len)) => {
                            order.push((mono, b, at, len));
                            at += len;
                        }
                        // Records are written whole by this crate; a damaged one means a
                        // bug: drop the rest of that buffer rather than print garbage.
                        None => break,
                    }
                }
            }
            order.sort_by_key(|(mono, _, _, _)| *mono);
            // Step 4. Record times are monotonic: mapped to the wall clock as it is now.
            let anchor_mono = Mono::now().as_nanos();
            let anchor_wall = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            let wall = |mono: u64| anchor_wall.saturating_sub(anchor_mono.saturating_sub(mono));
            out.clear();
            held_next.clear();
            // Every line ends in `\n` and no field holds one (the formats escape it); the
            // formatters say how many lines they wrote.
            let mut lines = 0;
            for &(mono, b, start, len) in &order {
                let record = &bufs[b][start..start + len];
                if mono > cutoff && !closing {
                    held_next.extend_from_slice(record);
                    continue;
                }
                if let Some((_, mut event, _)) = event::decode(record) {
                    event.map_times(wall);
                    lines += self.format_event(&mut out, &event, &mut clock);
                }
            }
            if dropped > 0 {
                self.shared.records_dropped.fetch_add(dropped, Ordering::Relaxed);
                self.dropped_notice(&mut out, dropped, &mut clock);
                lines += 1;
            }
            // Step 5.
            if !out.is_empty() {
                match self.file.append(&out) {
                    Ok(()) => {
                        self.shared.lines_written.fetch_add(lines, Ordering::Relaxed);
                        if failing {
                            tracing::info!(
                                path = %self.file.path().display(),
                                lost = self.shared.lines_lost.load(Ordering::Relaxed),
                                "writing the access log works again"
                            );
                        }
                        failing = false;
                    }
                    Err(e) => {
                        self.shared.lines_lost.fetch_add(lines, Ordering::Relaxed);
                        self.shared.write_errors.fetch_add(1, Ordering::Relaxed);
                        if !failing {
                            tracing::error!(
                                path = %self.file.path().display(),
                                error = %e,
                                "writing the access log failed; its lines are counted as lost until a write succeeds"
                            );
                        }
                        failing = true;
                    }
                }
            }
            std::mem::swap(&mut bufs[0], &mut held_next);
            if closing && bufs[0].is_empty() {
                let _ = self.file.sync();
                return;
            }
        }
    }

    /// Appends the lines of `event`; says how many.
    fn format_event(&self, out: &mut Vec<u8>, event: &Event<'_>, clock: &mut TimeCache) -> u64 {
        match self.format {
            AccessLogFormat::Text389 => format_389::write(out, event, self.level, clock),
            AccessLogFormat::Json => format_json::write(out, event, self.level, clock, self.started),
        }
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
        match self.format {
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
