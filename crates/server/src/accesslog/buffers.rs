//! The access log's per-thread buffers: where the request path formats its lines.
//!
//! Each thread that completes operations (the runtime's workers, search threads, the
//! store's writer) gets one [`Slot`] per log the first time it logs: the lines it
//! formatted, and one [`Stamp`] per event saying when it happened and where its lines end,
//! behind a mutex that only that thread and the log's writer ever lock, so the lock is
//! uncontended except for the moment the writer swaps the buffers out. Nothing else is
//! shared on the request path: no global queue, no shared counter.
//!
//! The lines are formatted here, on the thread that has the request, its DN and filter in
//! its caches, rather than by the writer from a copy: the writer only puts the events of
//! all threads in time order and copies their lines to the file, so it never reads a
//! request again, and it scales with the threads that format.
//!
//! An event's times are monotonic ([`crate::clock::Mono`]); a slot maps them to the wall
//! clock with an offset it reads again when an event is more than [`ANCHOR_NANOS`] from
//! the last reading, so a request reads the wall clock about once a second, not twice.
//!
//! Bounds: a slot holds at most [`MAX_SLOT_BYTES`]; an event that does not fit is dropped
//! and counted in the slot (the writer reports drops in the log itself). When a slot
//! passes [`WAKE_BYTES`] the writer is woken early, so a busy server drains well before
//! its buffers fill.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

use super::event::Event;
use super::style::Style;
use super::time::TimeCache;
use crate::clock::Mono;

/// Most octets of lines one thread's slot holds before events are dropped (about 16,000
/// searches at the default level). With the writer draining every
/// [`super::writer::DRAIN_INTERVAL`] and on [`WAKE_BYTES`], a slot fills only when the
/// disk cannot keep up.
pub const MAX_SLOT_BYTES: usize = 4 << 20;

/// A slot this full wakes the writer before its next round.
pub const WAKE_BYTES: usize = 256 << 10;

/// How far an event's time may be from a slot's last reading of the wall clock before the
/// slot reads it again: a step of the wall clock shows in the log at most this late.
pub const ANCHOR_NANOS: u64 = 1_000_000_000;

/// One thread's lines for one log.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    inner: Mutex<SlotData>,
}

#[derive(Debug, Default)]
pub(crate) struct SlotData {
    /// Formatted lines, oldest first.
    text: Vec<u8>,
    /// One per event whose lines are in `text`, in the same order (each `end` at or after
    /// the one before, none past `text`'s length).
    stamps: Vec<Stamp>,
    /// Events dropped because the slot was full, since the writer last looked.
    dropped: u64,
    /// The writer was woken for this slot since it last drained it.
    woken: bool,
    /// This thread's time stamps, formatted once per second.
    clock: TimeCache,
    /// Wall clock minus monotonic clock, in nanoseconds, as last read.
    wall_offset: i64,
    /// The monotonic time of that reading (0: not read yet).
    anchor: u64,
}

/// One event's place in a slot's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// The event's monotonic time in nanoseconds: the writer's merge order.
    pub mono: u64,
    /// Where its lines end in the slot's text.
    pub end: u32,
    /// How many lines it has.
    pub lines: u32,
}

impl Slot {
    pub(crate) fn lock(&self) -> MutexGuard<'_, SlotData> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl SlotData {
    /// Hands the lines to the writer, keeping the spares' allocations for the next ones;
    /// says how many events were dropped since the last time.
    pub(crate) fn take(&mut self, text: &mut Vec<u8>, stamps: &mut Vec<Stamp>) -> u64 {
        text.clear();
        stamps.clear();
        std::mem::swap(&mut self.text, text);
        std::mem::swap(&mut self.stamps, stamps);
        self.woken = false;
        std::mem::take(&mut self.dropped)
    }

    /// Formats `event`, which happened at the monotonic time `mono_ns`, at the end of the
    /// lines; drops it (and counts it) when the slot is full.
    fn format(&mut self, style: &Style, mono_ns: u64, mut event: Event<'_>) {
        if self.text.len() >= MAX_SLOT_BYTES {
            self.dropped += 1;
            return;
        }
        if self.anchor == 0 || mono_ns.abs_diff(self.anchor) > ANCHOR_NANOS {
            self.read_wall_clock();
        }
        let offset = self.wall_offset;
        event.map_times(|mono| mono.saturating_add_signed(offset));
        let lines = style.write(&mut self.text, &event, &mut self.clock);
        self.stamps.push(Stamp {
            mono: mono_ns,
            // MAX_SLOT_BYTES plus one event's lines is far below 4 GiB.
            end: self.text.len() as u32,
            lines: lines as u32,
        });
    }

    fn read_wall_clock(&mut self) {
        let mono = Mono::now().as_nanos();
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        self.anchor = mono.max(1);
        self.wall_offset = (i128::from(wall) - i128::from(mono)) as i64;
    }
}

/// Every slot of one log, and the writer's wake-up.
#[derive(Debug)]
pub(crate) struct Buffers {
    /// This log's number, to find its slot among a thread's.
    id: u64,
    /// What the lines look like.
    style: Style,
    slots: Mutex<Vec<Arc<Slot>>>,
    wake: Mutex<bool>,
    wake_cv: Condvar,
    closed: AtomicBool,
}

static NEXT_LOG: AtomicU64 = AtomicU64::new(1);

/// A thread's slot for one log: the log's number, the log (to forget the slot once the log
/// is gone), the slot.
type ThreadSlot = (u64, Weak<Buffers>, Arc<Slot>);

thread_local! {
    /// This thread's slots, one per live log (a process runs one log; tests run several).
    static SLOTS: RefCell<Vec<ThreadSlot>> = const { RefCell::new(Vec::new()) };
}

impl Buffers {
    pub(crate) fn new(style: Style) -> Arc<Buffers> {
        Arc::new(Buffers {
            id: NEXT_LOG.fetch_add(1, Ordering::Relaxed),
            style,
            slots: Mutex::new(Vec::new()),
            wake: Mutex::new(false),
            wake_cv: Condvar::new(),
            closed: AtomicBool::new(false),
        })
    }

    /// Formats the lines of `event`, which happened at the monotonic time `mono_ns`, into
    /// this thread's slot.
    pub(crate) fn append(self: &Arc<Self>, mono_ns: u64, event: Event<'_>) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        SLOTS.with(|slots| {
            let mut slots = slots.borrow_mut();
            let i = match slots.iter().position(|(id, _, _)| *id == self.id) {
                Some(i) => i,
                None => {
                    // Forget the slots of logs that are gone.
                    slots.retain(|(_, log, _)| log.strong_count() > 0);
                    let slot = Arc::new(Slot::default());
                    self.lock_slots().push(slot.clone());
                    slots.push((self.id, Arc::downgrade(self), slot));
                    slots.len() - 1
                }
            };
            let mut data = slots[i].2.lock();
            data.format(&self.style, mono_ns, event);
            if data.text.len() >= WAKE_BYTES && !data.woken {
                data.woken = true;
                drop(data);
                self.wake();
            }
        });
    }

    /// Wakes the writer.
    pub(crate) fn wake(&self) {
        *self.wake.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake_cv.notify_one();
    }

    /// Waits until woken or `timeout` passes.
    pub(crate) fn wait(&self, timeout: std::time::Duration) {
        let woken = self.wake.lock().unwrap_or_else(|e| e.into_inner());
        let (mut woken, _) = self
            .wake_cv
            .wait_timeout_while(woken, timeout, |w| !*w)
            .unwrap_or_else(|e| e.into_inner());
        *woken = false;
    }

    /// Every slot (the writer drains them in turn).
    pub(crate) fn slots(&self) -> Vec<Arc<Slot>> {
        let mut slots = self.lock_slots();
        // A slot whose thread ended is kept until it is empty, then forgotten.
        slots.retain(|s| Arc::strong_count(s) > 1 || !s.lock().stamps.is_empty());
        slots.clone()
    }

    /// No more records are taken (the log is closing).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        self.wake();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    fn lock_slots(&self) -> MutexGuard<'_, Vec<Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accesslog::level::Level;
    use crate::accesslog::test_events::close;
    use crate::config::AccessLogFormat;

    fn style() -> Style {
        Style {
            format: AccessLogFormat::Text389,
            level: Level::Default,
            started: 0,
        }
    }

    #[test]
    fn an_event_is_formatted_with_its_stamp_and_wall_clock_time() {
        let mut slot = SlotData::default();
        let now = Mono::now().as_nanos();
        slot.format(&style(), now, close(7, now));
        slot.format(&style(), now + 5, close(8, now + 5));
        assert_eq!(slot.stamps.len(), 2);
        assert_eq!(slot.stamps[0].mono, now);
        assert_eq!(slot.stamps[0].lines, 1);
        assert_eq!(slot.stamps[1].end as usize, slot.text.len());
        let text = std::str::from_utf8(&slot.text).unwrap();
        let first = &text[..slot.stamps[0].end as usize];
        assert!(first.ends_with(" conn=7 op=1 fd=9 closed - U1\n"), "{first}");
        assert!(text[first.len()..].contains(" conn=8 "), "{text}");
        // The monotonic time became this year's date, not 1970's.
        let year = civil_year(SystemTime::now());
        assert!(first.contains(&format!("/{year}:")), "{first}");
    }

    fn civil_year(t: SystemTime) -> u64 {
        let days = t.duration_since(UNIX_EPOCH).unwrap().as_secs() / 86_400;
        crate::accesslog::time::civil_date(days).0
    }

    #[test]
    fn a_full_slot_drops_and_counts_and_the_take_empties_it() {
        let mut slot = SlotData::default();
        let now = Mono::now().as_nanos();
        let mut n = 0;
        while slot.dropped == 0 {
            slot.format(&style(), now, close(n, now));
            n += 1;
        }
        assert!(slot.text.len() >= MAX_SLOT_BYTES);
        assert_eq!(slot.stamps.len() as u64, n - 1);
        slot.format(&style(), now, close(n, now));
        let (mut text, mut stamps) = (Vec::new(), Vec::new());
        assert_eq!(slot.take(&mut text, &mut stamps), 2);
        assert_eq!(stamps.len() as u64, n - 1);
        assert!(slot.text.is_empty() && slot.stamps.is_empty() && slot.dropped == 0);
        slot.format(&style(), now, close(1, now));
        assert_eq!(slot.stamps.len(), 1);
    }
}
