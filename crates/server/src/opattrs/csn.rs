//! Change sequence numbers in OpenLDAP's format, so that syncrepl peers and clients reading
//! `entryCSN` see the values slapd would write:
//! `YYYYmmddHHMMSS.ffffffZ#cccccc#sss#mmmmmm`, where
//! - `YYYYmmddHHMMSS.ffffff` is the UTC time of the change in microseconds;
//! - `cccccc` is a change count in lowercase hex, 0 for the first change of a microsecond
//!   and increased for each further change within the same microsecond;
//! - `sss` is the server ID (`olcServerID`) in lowercase hex, 0..=0xfff;
//! - `mmmmmm` is a modifier number, always `000000` (as slapd writes it).
//!
//! Invariant: the CSNs of one [`CsnGenerator`] are strictly increasing, compared as octet
//! strings (the way `entryCSN`'s ordering rule compares them), whatever the clock does:
//! 1. the time given is turned into microseconds since the epoch (clamped as in
//!    [`super::time`]);
//! 2. if it is later than the last CSN's time, that time is taken and the count resets to 0;
//! 3. otherwise (same microsecond, or a clock that stepped backwards) the last time is
//!    kept and the count increases;
//! 4. if the count would pass [`MAX_COUNT`] (six hex digits), the time moves one
//!    microsecond forward and the count resets to 0.
//!
//! The fixed-width fields make octet order equal (time, count) order. The generator is
//! thread-safe (a [`Mutex`] around the last time and count); a poisoned lock is recovered,
//! as the state is two integers updated together and is never left half-written.

use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use super::time::{days_from_civil, unix_micros, UtcTime, MAX_UNIX_MICROS};

/// The largest change count: six hex digits.
pub const MAX_COUNT: u32 = 0xff_ffff;
/// The largest server ID: three hex digits (OpenLDAP's `olcServerID` range is 0..=4095).
pub const MAX_SID: u16 = 0xfff;

/// One change sequence number, in its text form.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Csn(String);

impl Csn {
    /// The CSN of (time in microseconds since the epoch, change count, server ID); the
    /// time is clamped to year 9999, the count to [`MAX_COUNT`], the ID to [`MAX_SID`].
    pub fn from_parts(unix_micros: u64, count: u32, sid: u16) -> Csn {
        let time = UtcTime::from_unix_micros(unix_micros).csn_time();
        Csn(format!(
            "{time}#{:06x}#{:03x}#000000",
            count.min(MAX_COUNT),
            sid.min(MAX_SID)
        ))
    }

    /// The text form.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text form as an attribute value.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0.into_bytes()
    }
}

impl fmt::Display for Csn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The server ID is outside 0..=[`MAX_SID`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("server ID {0} is out of range: a CSN holds 0 to 4095 (three hex digits)")]
pub struct InvalidServerId(pub u32);

#[derive(Debug, Default)]
struct Last {
    /// Microseconds since the epoch of the last CSN; `None` before the first.
    micros: Option<u64>,
    /// Change count of the last CSN.
    count: u32,
}

/// Issues strictly increasing CSNs for one server ID. See the module documentation.
#[derive(Debug, Default)]
pub struct CsnGenerator {
    sid: u16,
    last: Mutex<Last>,
}

impl CsnGenerator {
    /// A generator for server ID `sid` (0..=4095).
    pub fn new(sid: u32) -> Result<CsnGenerator, InvalidServerId> {
        let sid = u16::try_from(sid)
            .ok()
            .filter(|&s| s <= MAX_SID)
            .ok_or(InvalidServerId(sid))?;
        Ok(CsnGenerator {
            sid,
            last: Mutex::new(Last::default()),
        })
    }

    /// The server ID written in every CSN.
    pub fn sid(&self) -> u16 {
        self.sid
    }

    /// The next CSN for a change made at `now` (the clock is passed in so that tests can
    /// drive it; the server passes [`SystemTime::now`]).
    pub fn next(&self, now: SystemTime) -> Csn {
        let now = unix_micros(now);
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let (micros, count) = match last.micros {
            Some(prev) if now <= prev => {
                if last.count < MAX_COUNT {
                    (prev, last.count + 1)
                } else {
                    // Past year 9999 the time cannot move; the clamp in `from_parts` then
                    // repeats the last CSN, 8000 years from now.
                    (prev.saturating_add(1).min(MAX_UNIX_MICROS), 0)
                }
            }
            _ => (now, 0),
        };
        last.micros = Some(micros);
        last.count = count;
        drop(last);
        Csn::from_parts(micros, count, self.sid)
    }

    /// Makes every later CSN greater than `csn` (text form, any server ID): a cluster node
    /// that starts to lead raises its generator to the greatest CSN its predecessors
    /// issued, so its changes follow theirs even when its clock is behind theirs. A text
    /// that is not a CSN changes nothing (and says so).
    pub fn observe(&self, csn: &str) -> bool {
        let Some((micros, count)) = parse_time_and_count(csn) else {
            return false;
        };
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if last.micros.is_none_or(|m| (micros, count) > (m, last.count)) {
            last.micros = Some(micros);
            last.count = count;
        }
        true
    }
}

/// The time (microseconds since the epoch) and change count of a CSN's text form,
/// `YYYYmmddHHMMSS.uuuuuuZ#count#sid#mod`.
fn parse_time_and_count(csn: &str) -> Option<(u64, u32)> {
    let mut fields = csn.split('#');
    let time = fields.next()?.as_bytes();
    let count = u32::from_str_radix(fields.next()?, 16).ok()?;
    if time.len() != 22 || time.get(14) != Some(&b'.') || time.get(21) != Some(&b'Z') {
        return None;
    }
    let number = |from: usize, to: usize| -> Option<u64> {
        let digits = std::str::from_utf8(time.get(from..to)?).ok()?;
        digits
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| digits.parse().ok())?
    };
    let as_u32 = |n: u64| u32::try_from(n).ok();
    let days = days_from_civil(
        as_u32(number(0, 4)?)?,
        as_u32(number(4, 6)?)?,
        as_u32(number(6, 8)?)?,
    )?;
    let (hour, minute, second) = (number(8, 10)?, number(10, 12)?, number(12, 14)?);
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second;
    Some((seconds * 1_000_000 + number(15, 21)?, count))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn a_csn_read_back_gives_its_time_and_count() {
        for micros in [0u64, 1_234_567, 1_795_000_000_123_456, 4_102_444_799_999_999] {
            for count in [0u32, 1, 0xab, MAX_COUNT] {
                let csn = Csn::from_parts(micros, count, 7);
                assert_eq!(parse_time_and_count(csn.as_str()), Some((micros, count)), "{csn}");
            }
        }
        for bad in [
            "",
            "x",
            "20261127183512Z#000000#001#000000",
            "20261327183512.000000Z#000000#001#000000",
        ] {
            assert_eq!(parse_time_and_count(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_generator_raised_to_a_later_csn_issues_after_it() {
        let g = CsnGenerator::new(1).unwrap();
        let now = UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        let first = g.next(now);
        // Another node, its clock an hour ahead, issued this one.
        let theirs = Csn::from_parts(unix_micros(now) + 3_600_000_000, 5, 2);
        assert!(g.observe(theirs.as_str()));
        let next = g.next(now);
        assert!(next > theirs && next > first, "{next} after {theirs}");
        assert_eq!(next, Csn::from_parts(unix_micros(now) + 3_600_000_000, 6, 1));
        // An older CSN lowers nothing.
        assert!(g.observe(first.as_str()));
        assert!(g.next(now) > next);
        assert!(!g.observe("not a csn"));
    }
}
