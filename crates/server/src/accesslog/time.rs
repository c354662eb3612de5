//! Timestamps, durations and numbers of the access log, written without allocating.
//!
//! Rules:
//! - times are UTC, written with nanoseconds and the offset `+0000`: 389's text form
//!   `[22/Nov/2026:10:00:00.123456789 +0000]` and its JSON form
//!   `2026-11-22T10:00:00.123456789 +0000` (strftime `%FT%T`, then `.%09ld %z`);
//! - [`TimeCache`] keeps the date-and-time part of the last second it wrote, so a second
//!   is turned into a calendar date once, not once per line;
//! - durations are seconds with nine decimals, as 389 writes `wtime`, `optime` and
//!   `etime` (`0.000051234`);
//! - the digits come from `number`'s table of pairs, and a duration is assembled on the
//!   stack (`fixed`): no `format!`, no allocation beyond the buffer's own growth.

use super::event::WallNanos;
use super::fixed::{Fixed, DURATION};
use super::number::put_pair;

pub(super) const NANOS_PER_SECOND: u64 = 1_000_000_000;
const SECONDS_PER_DAY: u64 = 86_400;
const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// The length of [`TimeCache::text`]: `[22/Nov/2026:10:00:00.123456789 +0000]`.
pub const TEXT_LEN: usize = 38;
/// The length of [`TimeCache::iso`]: `2026-11-22T10:00:00.123456789 +0000`.
pub const ISO_LEN: usize = 35;

/// The calendar form of the last second written, in both log formats.
#[derive(Debug, Clone)]
pub struct TimeCache {
    /// The Unix second the cached texts are for (`u64::MAX`: none yet).
    second: u64,
    /// `[22/Nov/2026:10:00:00`
    text: [u8; 21],
    /// `2026-11-22T10:00:00`
    iso: [u8; 19],
}

impl Default for TimeCache {
    fn default() -> Self {
        TimeCache::new()
    }
}

impl TimeCache {
    /// An empty cache.
    pub fn new() -> TimeCache {
        TimeCache {
            second: u64::MAX,
            text: [0; 21],
            iso: [0; 19],
        }
    }

    /// Appends `t` as 389's text log writes it: `[22/Nov/2026:10:00:00.123456789 +0000]`.
    pub fn write_text(&mut self, out: &mut Vec<u8>, t: WallNanos) {
        out.extend_from_slice(&self.text(t));
    }

    /// `t` as 389's text log writes it, assembled whole (a known length).
    #[inline]
    pub fn text(&mut self, t: WallNanos) -> [u8; TEXT_LEN] {
        self.refresh(t / NANOS_PER_SECOND);
        let mut line = *b"[dd/Mmm/yyyy:hh:mm:ss.nnnnnnnnn +0000]";
        line[..21].copy_from_slice(&self.text);
        line[22..31].copy_from_slice(&nanos_digits(t % NANOS_PER_SECOND));
        line
    }

    /// Appends `t` as 389's JSON log writes `local_time`: `2026-11-22T10:00:00.123456789 +0000`.
    pub fn write_iso(&mut self, out: &mut Vec<u8>, t: WallNanos) {
        out.extend_from_slice(&self.iso(t));
    }

    /// `t` as 389's JSON log writes `local_time`, assembled whole.
    #[inline]
    pub fn iso(&mut self, t: WallNanos) -> [u8; ISO_LEN] {
        self.refresh(t / NANOS_PER_SECOND);
        let mut text = *b"yyyy-mm-ddThh:mm:ss.nnnnnnnnn +0000";
        text[..19].copy_from_slice(&self.iso);
        text[20..29].copy_from_slice(&nanos_digits(t % NANOS_PER_SECOND));
        text
    }

    fn refresh(&mut self, second: u64) {
        if second == self.second {
            return;
        }
        self.second = second;
        let (year, month, day) = civil_date(second / SECONDS_PER_DAY);
        let in_day = second % SECONDS_PER_DAY;
        let (hour, minute, sec) = (in_day / 3600, in_day % 3600 / 60, in_day % 60);
        let month_name = MONTHS[(month - 1) as usize];
        let t = &mut self.text;
        t[0] = b'[';
        put2(&mut t[1..3], day);
        t[3] = b'/';
        t[4..7].copy_from_slice(month_name);
        t[7] = b'/';
        put4(&mut t[8..12], year);
        t[12] = b':';
        put2(&mut t[13..15], hour);
        t[15] = b':';
        put2(&mut t[16..18], minute);
        t[18] = b':';
        put2(&mut t[19..21], sec);
        let i = &mut self.iso;
        put4(&mut i[0..4], year);
        i[4] = b'-';
        put2(&mut i[5..7], month);
        i[7] = b'-';
        put2(&mut i[8..10], day);
        i[10] = b'T';
        i[11..19].copy_from_slice(&t[13..21]);
    }
}

/// The proleptic Gregorian date (year, month 1-12, day 1-31) of a day counted from
/// 1970-01-01 (H. Hinnant's `civil_from_days`, for days on or after the epoch).
pub(crate) fn civil_date(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// Two digits (the value is below 100).
fn put2(to: &mut [u8], v: u64) {
    to[0] = b'0' + (v / 10 % 10) as u8;
    to[1] = b'0' + (v % 10) as u8;
}

/// Four digits (years up to 9999; a u64 of nanoseconds ends in 2554).
fn put4(to: &mut [u8], v: u64) {
    put2(&mut to[0..2], v / 100);
    put2(&mut to[2..4], v % 100);
}

/// `nanos` (below a second) as nine digits, zero-padded.
pub(super) fn nanos_digits(nanos: u64) -> [u8; 9] {
    let mut digits = [b'0'; 9];
    digits[0] = b'0' + (nanos / 100_000_000 % 10) as u8;
    let rest = nanos % 100_000_000;
    let (high, low) = (rest / 10_000, rest % 10_000);
    put_pair(&mut digits[1..3], high / 100);
    put_pair(&mut digits[3..5], high % 100);
    put_pair(&mut digits[5..7], low / 100);
    put_pair(&mut digits[7..9], low % 100);
    digits
}

/// Appends a duration in seconds with nine decimals, as 389 writes `etime`:
/// `0.000051234`, `12.000000001`.
pub fn write_duration(out: &mut Vec<u8>, nanos: u64) {
    Fixed::<DURATION>::new().duration(nanos).append_to(out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accesslog::number::{push_i64, push_u64};

    fn text(clock: &mut TimeCache, t: WallNanos) -> String {
        let mut out = Vec::new();
        clock.write_text(&mut out, t);
        String::from_utf8(out).unwrap()
    }

    fn iso(clock: &mut TimeCache, t: WallNanos) -> String {
        let mut out = Vec::new();
        clock.write_iso(&mut out, t);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn both_forms_of_a_known_instant() {
        // 2026-11-22T10:00:00Z is 1795341600.
        let t = 1_795_341_600 * NANOS_PER_SECOND + 123_456_789;
        let mut clock = TimeCache::new();
        assert_eq!(text(&mut clock, t), "[22/Nov/2026:10:00:00.123456789 +0000]");
        assert_eq!(iso(&mut clock, t), "2026-11-22T10:00:00.123456789 +0000");
        assert_eq!(text(&mut clock, 0), "[01/Jan/1970:00:00:00.000000000 +0000]");
        assert_eq!(iso(&mut clock, 7), "1970-01-01T00:00:00.000000007 +0000");
    }

    #[test]
    fn leap_days_month_ends_and_the_last_representable_second() {
        let mut clock = TimeCache::new();
        let at = |s: u64| s * NANOS_PER_SECOND;
        assert_eq!(
            iso(&mut clock, at(951_782_400)),
            "2000-02-29T00:00:00.000000000 +0000"
        );
        assert_eq!(
            iso(&mut clock, at(1_709_251_199)),
            "2024-02-29T23:59:59.000000000 +0000"
        );
        assert_eq!(
            text(&mut clock, at(1_709_251_200)),
            "[01/Mar/2024:00:00:00.000000000 +0000]"
        );
        assert_eq!(
            text(&mut clock, at(1_735_689_599)),
            "[31/Dec/2024:23:59:59.000000000 +0000]"
        );
        assert_eq!(iso(&mut clock, u64::MAX), "2554-07-21T23:34:33.709551615 +0000");
    }

    #[test]
    fn the_cache_follows_the_second_back_and_forth() {
        let mut clock = TimeCache::new();
        let a = 1_795_341_600 * NANOS_PER_SECOND + 999_999_999;
        let b = a + 1;
        assert_eq!(text(&mut clock, a), "[22/Nov/2026:10:00:00.999999999 +0000]");
        assert_eq!(text(&mut clock, b), "[22/Nov/2026:10:00:01.000000000 +0000]");
        assert_eq!(text(&mut clock, a), "[22/Nov/2026:10:00:00.999999999 +0000]");
    }

    #[test]
    fn every_day_of_four_centuries_agrees_with_a_day_by_day_count() {
        let mut expected = (1970u64, 1u64, 1u64);
        let is_leap = |y: u64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        for days in 0..146_097u64 {
            assert_eq!(civil_date(days), expected, "day {days}");
            let (y, m, d) = expected;
            let len = match m {
                2 if is_leap(y) => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            expected = if d < len {
                (y, m, d + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
        }
    }

    #[test]
    fn durations_agree_with_format_across_every_digit_position() {
        let mut values = vec![
            0,
            9,
            10,
            99,
            100,
            999_999_999,
            NANOS_PER_SECOND,
            9_999_999_999,
            10 * NANOS_PER_SECOND,
        ];
        let mut v = 1u64;
        while v < u64::MAX / 7 {
            values.extend([v, v * 7 / 3, v - 1]);
            v *= 10;
        }
        values.push(u64::MAX);
        for nanos in values {
            let mut out = Vec::new();
            write_duration(&mut out, nanos);
            let expected = format!("{}.{:09}", nanos / NANOS_PER_SECOND, nanos % NANOS_PER_SECOND);
            assert_eq!(String::from_utf8(out).unwrap(), expected, "{nanos}");
        }
    }

    #[test]
    fn durations_and_numbers() {
        let mut out = Vec::new();
        write_duration(&mut out, 51_234);
        out.push(b' ');
        write_duration(&mut out, 12 * NANOS_PER_SECOND + 1);
        out.push(b' ');
        write_duration(&mut out, 0);
        out.push(b' ');
        push_u64(&mut out, u64::MAX);
        out.push(b' ');
        push_i64(&mut out, i64::MIN);
        out.push(b' ');
        push_i64(&mut out, -1);
        out.push(b' ');
        push_u64(&mut out, 0);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "0.000051234 12.000000001 0.000000000 18446744073709551615 -9223372036854775808 -1 0"
        );
    }
}
