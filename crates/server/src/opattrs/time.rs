//! UTC calendar times from [`SystemTime`], formatted by hand: the GeneralizedTime values of
//! `createTimestamp` and `modifyTimestamp` (`YYYYmmddHHMMSSZ`, RFC 4517 section 3.3.13,
//! the form OpenLDAP writes) and the time part of a CSN (`YYYYmmddHHMMSS.ffffffZ`).
//!
//! How a time is split:
//! 1. the time since the Unix epoch is taken in microseconds, clamped to
//!    [`MAX_UNIX_MICROS`] (the last microsecond of year 9999: GeneralizedTime has four year
//!    digits) and to 0 for times before 1970 (a directory write is never that old);
//! 2. whole days and the second of the day are split off;
//! 3. the day count becomes a proleptic Gregorian date with the days-from-civil inverse
//!    (Howard Hinnant's `civil_from_days`): eras of 400 years (146097 days), the day of
//!    the era, the year of the era, then month and day counted from March so that the
//!    leap day is the last day of the counted year.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds from the epoch to 9999-12-31T23:59:59.999999Z, the last instant four year
/// digits can write. 253402300800 is the Unix time of 10000-01-01T00:00:00Z.
pub const MAX_UNIX_MICROS: u64 = 253_402_300_800 * 1_000_000 - 1;

const SECONDS_PER_DAY: u64 = 86_400;
const MICROS_PER_SECOND: u64 = 1_000_000;

/// A UTC instant split into calendar fields (Gregorian calendar, no leap seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct UtcTime {
    /// Year, 1970..=9999.
    pub year: u32,
    /// Month, 1..=12.
    pub month: u32,
    /// Day of the month, 1..=31.
    pub day: u32,
    /// Hour, 0..=23.
    pub hour: u32,
    /// Minute, 0..=59.
    pub minute: u32,
    /// Second, 0..=59.
    pub second: u32,
    /// Microsecond within the second, 0..=999999.
    pub micros: u32,
}

impl UtcTime {
    /// The calendar fields of `t`, clamped to 1970..=9999 (see the module documentation).
    pub fn from_system_time(t: SystemTime) -> UtcTime {
        UtcTime::from_unix_micros(unix_micros(t))
    }

    /// The calendar fields of a count of microseconds since the epoch, clamped to
    /// [`MAX_UNIX_MICROS`].
    pub fn from_unix_micros(micros: u64) -> UtcTime {
        let micros = micros.min(MAX_UNIX_MICROS);
        let secs = micros / MICROS_PER_SECOND;
        let days = secs / SECONDS_PER_DAY;
        let of_day = secs % SECONDS_PER_DAY;
        let (year, month, day) = civil_from_days(days);
        // Every field below is bounded by the divisions above, so the narrowing is exact.
        UtcTime {
            year,
            month,
            day,
            hour: (of_day / 3600) as u32,
            minute: (of_day / 60 % 60) as u32,
            second: (of_day % 60) as u32,
            micros: (micros % MICROS_PER_SECOND) as u32,
        }
    }

    /// The GeneralizedTime form with whole seconds: `YYYYmmddHHMMSSZ`.
    pub fn generalized(&self) -> String {
        let mut out = String::with_capacity(15);
        self.write_seconds(&mut out);
        out.push('Z');
        out
    }

    /// The time part of an OpenLDAP CSN: `YYYYmmddHHMMSS.ffffffZ`.
    pub fn csn_time(&self) -> String {
        let mut out = String::with_capacity(22);
        self.write_seconds(&mut out);
        // Writing to a String cannot fail.
        let _ = write!(out, ".{:06}Z", self.micros);
        out
    }

    fn write_seconds(&self, out: &mut String) {
        let _ = write!(
            out,
            "{:04}{:02}{:02}{:02}{:02}{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        );
    }
}

/// Microseconds since the Unix epoch, 0 for earlier times, clamped to [`MAX_UNIX_MICROS`].
pub fn unix_micros(t: SystemTime) -> u64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => u64::try_from(d.as_micros())
            .unwrap_or(u64::MAX)
            .min(MAX_UNIX_MICROS),
        Err(_) => 0,
    }
}

/// The GeneralizedTime value (`YYYYmmddHHMMSSZ`, UTC, whole seconds) of `t`.
pub fn generalized_time(t: SystemTime) -> String {
    UtcTime::from_system_time(t).generalized()
}

/// The proleptic Gregorian date (year, month, day) of a count of days since 1970-01-01.
pub fn civil_from_days(days: u64) -> (u32, u32, u32) {
    // Shift the origin to 0000-03-01 so that eras start on a March 1st; 719468 is the
    // number of days from 0000-03-01 to 1970-01-01. Unsigned arithmetic suffices as the
    // input is never before 1970.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097; // day of era, 0..=146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // year of era, 0..=399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of the March-based year, 0..=365
    let mp = (5 * doy + 2) / 153; // March-based month, 0..=11
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    // The caller clamps `days` to year 9999, so the year fits in u32.
    (u32::try_from(year).unwrap_or(u32::MAX), month as u32, day as u32)
}

/// The count of days since 1970-01-01 of a proleptic Gregorian date from 1970 on (the
/// inverse of [`civil_from_days`]); `None` for a date before 1970 or a month or day out of
/// range.
pub fn days_from_civil(year: u32, month: u32, day: u32) -> Option<u64> {
    if year < 1970 || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let y = u64::from(year) - u64::from(month <= 2);
    let era = y / 400;
    let yoe = y - era * 400; // 0..=399
    let mp = if month > 2 { month - 3 } else { month + 9 }; // March-based month, 0..=11
    let doy = (153 * u64::from(mp) + 2) / 5 + u64::from(day) - 1; // 0..=365
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // 0..=146096
    (era * 146_097 + doe).checked_sub(719_468)
}
