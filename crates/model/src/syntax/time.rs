//! Generalized Time (RFC 4517 3.3.13) and UTC Time (3.3.34): parsing, and conversion to
//! the UTC form the time matching rules compare.
//!
//! Unlike the bare ABNF, day numbers are checked against the month (with leap years),
//! as OpenLDAP does: "20230230..." names no instant and is refused.

/// A parsed Generalized Time, fields as written (not yet moved to UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GeneralizedTime<'a> {
    pub year: u16,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: Option<u8>,
    /// 0..=60 (60 is a leap second).
    pub second: Option<u8>,
    /// The digits after `.` or `,`, belonging to the last field written.
    pub fraction: Option<&'a [u8]>,
    /// Offset from UTC in minutes, east positive; 0 for `Z`.
    pub offset_minutes: i16,
}

fn two_digits(v: &[u8], at: usize) -> Option<u8> {
    match v.get(at..at + 2)? {
        [a, b] if a.is_ascii_digit() && b.is_ascii_digit() => Some((a - b'0') * 10 + (b - b'0')),
        _ => None,
    }
}

pub(crate) fn is_leap_year(year: u16) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

pub(crate) fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap_year(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// `g-differential` / `u-differential`: `( MINUS / PLUS ) hour [ minute ]`, minute
/// required when `minute_required`.
fn differential(v: &[u8], minute_required: bool) -> Option<i16> {
    let (sign, rest) = v.split_first()?;
    let sign: i16 = match sign {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let hours = two_digits(rest, 0).filter(|&h| h <= 23)?;
    let minutes = match rest.len() {
        2 if !minute_required => 0,
        4 => two_digits(rest, 2).filter(|&m| m <= 59)?,
        _ => return None,
    };
    Some(sign * (i16::from(hours) * 60 + i16::from(minutes)))
}

/// Parses `GeneralizedTime = century year month day hour [ minute [ second / leap-second ] ]
/// [ fraction ] g-time-zone`.
pub(crate) fn parse_generalized_time(v: &[u8]) -> Option<GeneralizedTime<'_>> {
    let century = two_digits(v, 0)?;
    let year = u16::from(century) * 100 + u16::from(two_digits(v, 2)?);
    let month = two_digits(v, 4).filter(|m| (1..=12).contains(m))?;
    let day = two_digits(v, 6).filter(|&d| d >= 1 && d <= days_in_month(year, month))?;
    let hour = two_digits(v, 8).filter(|&h| h <= 23)?;
    let mut at = 10;
    let mut minute = None;
    let mut second = None;
    if let Some(m) = two_digits(v, at) {
        if m > 59 {
            return None;
        }
        minute = Some(m);
        at += 2;
        if let Some(s) = two_digits(v, at) {
            if s > 60 {
                return None;
            }
            second = Some(s);
            at += 2;
        }
    }
    let mut fraction = None;
    if matches!(v.get(at), Some(b'.' | b',')) {
        let digits = v[at + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        fraction = Some(&v[at + 1..at + 1 + digits]);
        at += 1 + digits;
    }
    let zone = &v[at..];
    let offset_minutes = if zone == b"Z" {
        0
    } else {
        differential(zone, false)?
    };
    Some(GeneralizedTime {
        year,
        month,
        day,
        hour,
        minute,
        second,
        fraction,
        offset_minutes,
    })
}

/// Parses `UTCTime = year month day hour minute [ second ] [ u-time-zone ]`. The two-digit
/// year is read as 1950-2049 (the X.509 convention); a missing zone is taken as UTC.
pub(crate) fn parse_utc_time(v: &[u8]) -> Option<GeneralizedTime<'static>> {
    let yy = two_digits(v, 0)?;
    let year = if yy >= 50 { 1900 } else { 2000 } + u16::from(yy);
    let month = two_digits(v, 2).filter(|m| (1..=12).contains(m))?;
    let day = two_digits(v, 4).filter(|&d| d >= 1 && d <= days_in_month(year, month))?;
    let hour = two_digits(v, 6).filter(|&h| h <= 23)?;
    let minute = two_digits(v, 8).filter(|&m| m <= 59)?;
    let mut at = 10;
    let mut second = None;
    if let Some(s) = two_digits(v, at) {
        if s > 59 {
            return None;
        }
        second = Some(s);
        at += 2;
    }
    let zone = &v[at..];
    let offset_minutes = match zone {
        b"" | b"Z" => 0,
        _ => differential(zone, true)?,
    };
    Some(GeneralizedTime {
        year,
        month,
        day,
        hour,
        minute: Some(minute),
        second,
        fraction: None,
        offset_minutes,
    })
}

/// Generalized Time syntax (1.3.6.1.4.1.1466.115.121.1.24).
pub(crate) fn generalized_time(v: &[u8]) -> bool {
    parse_generalized_time(v).is_some()
}

/// UTC Time syntax (1.3.6.1.4.1.1466.115.121.1.53).
pub(crate) fn utc_time(v: &[u8]) -> bool {
    parse_utc_time(v).is_some()
}

/// Days from 0000-03-01 style civil date to a day count (Howard Hinnant's algorithm),
/// valid for every year 0..=9999 and beyond.
fn days_from_civil(year: i64, month: u8, day: u8) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe
}

fn civil_from_days(z: i64) -> (i64, u8, u8) {
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Multiplies the decimal digit string `digits` (a fraction 0.digits) by `factor` and
/// returns (whole part, fraction digits with trailing zeros removed). Exact: the
/// product of a decimal fraction by an integer is again a finite decimal fraction.
fn scale_fraction(digits: &[u8], factor: u32) -> (u32, Vec<u8>) {
    let mut out = vec![0u8; digits.len()];
    let mut carry: u32 = 0;
    for (i, &d) in digits.iter().enumerate().rev() {
        let p = u32::from(d - b'0') * factor + carry;
        out[i] = b'0' + (p % 10) as u8;
        carry = p / 10;
    }
    while out.last() == Some(&b'0') {
        out.pop();
    }
    (carry, out)
}

/// Appends the comparison key of a time: `YYYYMMDDHHMMSS` in UTC, then the fraction of a
/// second without trailing zeros (no separator). Byte order of keys is time order, and
/// two times are equal iff their keys are. A leap second (`60`) sorts after `59` of its
/// minute. `Err` if the UTC instant falls outside years 0000-9999.
pub(crate) fn utc_key(t: &GeneralizedTime<'_>, out: &mut Vec<u8>) -> Result<(), &'static str> {
    // Everything below the written precision is zero; a fraction applies to the last field.
    let mut minute = u32::from(t.minute.unwrap_or(0));
    let mut second = u32::from(t.second.unwrap_or(0));
    let mut frac: Vec<u8> = Vec::new();
    if let Some(f) = t.fraction {
        match (t.minute, t.second) {
            (None, _) => {
                let (secs, rest) = scale_fraction(f, 3600);
                minute = secs / 60;
                second = secs % 60;
                frac = rest;
            }
            (Some(_), None) => {
                let (secs, rest) = scale_fraction(f, 60);
                second = secs;
                frac = rest;
            }
            (Some(_), Some(_)) => {
                frac = f.to_vec();
                while frac.last() == Some(&b'0') {
                    frac.pop();
                }
            }
        }
    }
    // The offset is whole minutes, so moving to UTC never touches seconds and fractions.
    let local_minutes = days_from_civil(i64::from(t.year), t.month, t.day) * 1440
        + i64::from(t.hour) * 60
        + i64::from(minute);
    let utc_minutes = local_minutes - i64::from(t.offset_minutes);
    let (year, month, day) = civil_from_days(utc_minutes.div_euclid(1440));
    let minute_of_day = utc_minutes.rem_euclid(1440);
    if !(0..=9999).contains(&year) {
        return Err("the time in UTC falls outside years 0000-9999");
    }
    let fields = [
        (year / 100) as u32,
        (year % 100) as u32,
        u32::from(month),
        u32::from(day),
        (minute_of_day / 60) as u32,
        (minute_of_day % 60) as u32,
        second,
    ];
    for f in fields {
        out.push(b'0' + (f / 10) as u8);
        out.push(b'0' + (f % 10) as u8);
    }
    out.extend_from_slice(&frac);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(v: &str) -> String {
        let t = parse_generalized_time(v.as_bytes()).expect(v);
        let mut out = Vec::new();
        utc_key(&t, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn civil_round_trip() {
        for z in [-800_000i64, -1, 0, 1, 59, 60, 365, 10_957, 2_932_896] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z, "{z}");
        }
        assert_eq!(days_from_civil(1970, 1, 1) - days_from_civil(1969, 12, 31), 1);
    }

    #[test]
    fn keys() {
        assert_eq!(key("199412161032Z"), "19941216103200");
        assert_eq!(key("199412160532-0500"), "19941216103200");
        assert_eq!(key("2001123123+0100"), "20011231220000");
        assert_eq!(key("20000101000000-01"), "20000101010000");
        assert_eq!(key("2000010100+0001"), "19991231235900");
        assert_eq!(key("1994121610.5Z"), "19941216103000");
        assert_eq!(key("199412161032.25Z"), "19941216103215");
        assert_eq!(key("19941216103201.500Z"), "199412161032015");
        assert_eq!(key("1994121610,0001Z"), "1994121610000036");
        assert_eq!(key("1994121610,0001Z"), key("19941216100000.36Z"));
    }
}
