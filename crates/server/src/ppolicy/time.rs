//! The GeneralizedTime values password policy keeps, as OpenLDAP writes them: seconds
//! (`YYYYmmddHHMMSSZ`, pwdChangedTime, pwdAccountLockedTime) and microseconds
//! (`YYYYmmddHHMMSS.ffffffZ`, pwdFailureTime, pwdGraceUseTime). Times are microseconds
//! since the Unix epoch (negative before it: the permanent lock `000001010000Z` is year 0).

use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds in a second.
pub const MICROS: i64 = 1_000_000;

/// Now, in microseconds since the epoch (0 when the clock is before it).
pub fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// Days from 0000-03-01 based civil date to days since 1970-01-01 (Howard Hinnant's
/// algorithm, exact for every year of four digits).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Reads `YYYYmmddHH[MM[SS]][.f*]Z` (UTC only, as every server writes these values).
pub fn parse(v: &[u8]) -> Option<i64> {
    let v = v.strip_suffix(b"Z")?;
    let (whole, fraction) = match v.iter().position(|&c| c == b'.' || c == b',') {
        Some(i) => (&v[..i], Some(&v[i + 1..])),
        None => (v, None),
    };
    if !matches!(whole.len(), 10 | 12 | 14) || !whole.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let num = |i: usize, n: usize| -> i64 {
        whole[i..i + n]
            .iter()
            .fold(0i64, |acc, c| acc * 10 + i64::from(c - b'0'))
    };
    let (y, mo, d, h) = (num(0, 4), num(4, 2), num(6, 2), num(8, 2));
    let mi = if whole.len() >= 12 { num(10, 2) } else { 0 };
    let s = if whole.len() == 14 { num(12, 2) } else { 0 };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut micros = 0i64;
    if let Some(f) = fraction {
        if f.is_empty() || !f.iter().all(u8::is_ascii_digit) {
            return None;
        }
        for (i, c) in f.iter().take(6).enumerate() {
            micros += i64::from(c - b'0') * 10i64.pow(5 - i as u32);
        }
    }
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s;
    Some(secs * MICROS + micros)
}

/// `YYYYmmddHHMMSS` of a time.
fn civil(micros: i64) -> String {
    let secs = micros.div_euclid(MICROS);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let t = secs.rem_euclid(86_400);
    format!("{y:04}{m:02}{d:02}{:02}{:02}{:02}", t / 3600, t / 60 % 60, t % 60)
}

/// `YYYYmmddHHMMSSZ`.
pub fn format_secs(micros: i64) -> String {
    format!("{}Z", civil(micros))
}

/// `YYYYmmddHHMMSS.ffffffZ`.
pub fn format_micros(micros: i64) -> String {
    format!("{}.{:06}Z", civil(micros), micros.rem_euclid(MICROS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_forms() {
        let t = parse(b"20240229123456Z").unwrap();
        assert_eq!(t, 1_709_210_096 * MICROS);
        assert_eq!(format_secs(t), "20240229123456Z");
        let f = parse(b"20240229123456.000042Z").unwrap();
        assert_eq!(f, t + 42);
        assert_eq!(format_micros(f), "20240229123456.000042Z");
        assert_eq!(parse(b"197001010000Z"), Some(0));
        assert!(parse(b"000001010000Z").unwrap() < 0);
        for bad in [
            &b""[..],
            b"2024",
            b"20241301000000Z",
            b"20240101000000",
            b"2024010100000xZ",
            b"20240101000000.Z",
        ] {
            assert_eq!(parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
