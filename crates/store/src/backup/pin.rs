//! Log pins: the LSNs from which a backup still needs the log.
//!
//! The store removes the log segments its snapshots cover; a backup copying segments after
//! its own snapshot must not see them vanish. A backup pins its first needed LSN for as long
//! as it copies; the store removes segments only below the lowest pin, and takes the pins'
//! lock for the removal itself, so a pin taken concurrently is either seen by the removal
//! or taken after it (and then names an LSN the removal left, see [`LogPins::pin`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::wal::Lsn;

/// The pinned LSNs, each with the number of pins on it.
#[derive(Debug, Default)]
pub struct LogPins {
    pins: Mutex<BTreeMap<Lsn, usize>>,
}

/// One pin; dropping it releases the log.
#[derive(Debug)]
pub struct LogPin {
    pins: Arc<LogPins>,
    lsn: Lsn,
}

impl LogPin {
    /// The first LSN this pin keeps.
    pub fn lsn(&self) -> Lsn {
        self.lsn
    }
}

impl LogPins {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<Lsn, usize>> {
        // Counts are changed in single steps; a panicking holder leaves them consistent.
        self.pins.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Pins the LSN `first` returns, computed under the pins' lock: the caller reads the
    /// current version's LSN there, and a removal (which holds the same lock) can only run
    /// wholly before it, when every snapshot it honoured was at or below that version, so
    /// it kept the segments from that version's next LSN on.
    pub fn pin<T>(self: &Arc<Self>, first: impl FnOnce() -> (Lsn, T)) -> (LogPin, T) {
        let mut pins = self.lock();
        let (lsn, value) = first();
        *pins.entry(lsn).or_insert(0) += 1;
        (
            LogPin {
                pins: Arc::clone(self),
                lsn,
            },
            value,
        )
    }

    /// Runs `remove` with the bound below which segments may go: `wanted`, lowered to the
    /// lowest pin, while no pin can be taken or released.
    pub fn remove_below<R>(&self, wanted: Lsn, remove: impl FnOnce(Lsn) -> R) -> R {
        let pins = self.lock();
        let bound = pins.keys().next().map_or(wanted, |&low| low.min(wanted));
        remove(bound)
    }

    /// How many pins are held.
    pub fn count(&self) -> usize {
        self.lock().values().sum()
    }
}

impl Drop for LogPin {
    fn drop(&mut self) {
        let mut pins = self.pins.lock();
        if let Some(n) = pins.get_mut(&self.lsn) {
            *n -= 1;
            if *n == 0 {
                pins.remove(&self.lsn);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removal_stops_at_the_lowest_pin_until_released() {
        let pins = Arc::new(LogPins::default());
        assert_eq!(pins.remove_below(100, |b| b), 100);
        let (a, ()) = pins.pin(|| (40, ()));
        let (b, ()) = pins.pin(|| (60, ()));
        assert_eq!(pins.remove_below(100, |b| b), 40);
        assert_eq!(pins.remove_below(30, |b| b), 30);
        drop(a);
        assert_eq!(pins.remove_below(100, |b| b), 60);
        drop(b);
        assert_eq!(pins.remove_below(100, |b| b), 100);
        assert_eq!(pins.count(), 0);
    }
}
