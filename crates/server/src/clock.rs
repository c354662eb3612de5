//! The monotonic clock as one number of nanoseconds: what operations time themselves with.
//!
//! `std::time::Instant` reads the same clock (`CLOCK_MONOTONIC`), but the difference of two
//! `Instant`s is a checked subtraction of (seconds, nanoseconds) pairs made into a
//! `Duration`, about 30 instructions, and an operation took five of them (its latency, the
//! connection's last activity, the access log's wait, work and receive time): more than the
//! monitor's counting itself. A [`Mono`] is a `u64`, so a difference is one subtraction.
//! The clock is read once per socket read (the requests' receive time) and once when an
//! operation ends, and only when something observes operations or an idle timeout is set.

use std::time::Duration;

use nix::time::{clock_gettime, ClockId};

/// A moment on the monotonic clock: nanoseconds since an unspecified start (the machine's
/// boot on Linux), so only differences and order mean anything. 584 years fit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mono(u64);

impl Mono {
    /// Now.
    #[inline]
    pub fn now() -> Mono {
        // CLOCK_MONOTONIC always exists and the call cannot fault on its own buffer; a
        // failure anyway reads as the clock's start, which only makes a duration longer.
        clock_gettime(ClockId::CLOCK_MONOTONIC).map_or(Mono(0), |t| {
            let secs = u64::try_from(t.tv_sec()).unwrap_or(0);
            let nanos = u64::try_from(t.tv_nsec()).unwrap_or(0);
            Mono(secs.wrapping_mul(1_000_000_000).wrapping_add(nanos))
        })
    }

    /// The moment `nanos` after the clock's start.
    pub const fn from_nanos(nanos: u64) -> Mono {
        Mono(nanos)
    }

    /// Nanoseconds since the clock's start.
    #[inline]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Nanoseconds from `earlier` to `self`; 0 when `earlier` is later.
    #[inline]
    pub const fn nanos_since(self, earlier: Mono) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// The time from `earlier` to `self`; zero when `earlier` is later.
    pub const fn since(self, earlier: Mono) -> Duration {
        Duration::from_nanos(self.nanos_since(earlier))
    }

    /// `d` later (saturating).
    pub fn after(self, d: Duration) -> Mono {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Mono(self.0.saturating_add(nanos))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn the_clock_is_the_one_instant_reads() {
        // Each Instant read is bracketed by two Mono reads: on the same clock, the Instant
        // span lies within the outer brackets and covers the inner ones.
        let (m0a, i0, m0b) = (Mono::now(), Instant::now(), Mono::now());
        std::thread::sleep(Duration::from_millis(20));
        let (m1a, i1, m1b) = (Mono::now(), Instant::now(), Mono::now());
        let instant = i1 - i0;
        assert!(m1a > m0b);
        assert!(m1a.since(m0b) >= Duration::from_millis(20));
        assert!(instant <= m1b.since(m0a), "{instant:?} > {:?}", m1b.since(m0a));
        assert!(instant >= m1a.since(m0b), "{instant:?} < {:?}", m1a.since(m0b));
    }

    #[test]
    fn differences_saturate_at_zero() {
        let a = Mono::from_nanos(5);
        let b = Mono::from_nanos(9);
        assert_eq!(b.nanos_since(a), 4);
        assert_eq!(a.nanos_since(b), 0);
        assert_eq!(a.since(b), Duration::ZERO);
        assert_eq!(a.after(Duration::from_nanos(4)), b);
        assert_eq!(
            Mono::from_nanos(u64::MAX)
                .after(Duration::from_secs(1))
                .as_nanos(),
            u64::MAX
        );
    }
}
