//! Durations in the configuration file: `"24h"`, `"15m"`, `"1h30m"`, `"500ms"`, `"0"`, or a
//! TOML integer counting seconds.
//!
//! A string is one or more `<digits><unit>` groups with the units `d`, `h`, `m`, `s` and
//! `ms`; each group adds to the total. `"0"` alone is the only number accepted without a
//! unit, so `"30"` (seconds? minutes?) is refused rather than guessed. Arithmetic is
//! checked: a value above [`MAX_DURATION_SECS`] is refused, never wrapped.

use std::time::Duration;

/// Longest duration accepted (about 100 years): every configured duration is a timeout or
/// an interval, and a larger number is a typo. It also keeps every sum far from overflow.
pub const MAX_DURATION_SECS: u64 = 100 * 365 * 24 * 3600;

/// Longest duration string accepted; a longer one is not a hand-written duration.
const MAX_DURATION_TEXT: usize = 64;

/// Parses a duration string; the error says what is wrong, not where (the caller adds the
/// key).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s.len() > MAX_DURATION_TEXT {
        return Err(format!("a duration is at most {MAX_DURATION_TEXT} characters"));
    }
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err("empty duration: write for example \"30s\", \"15m\", \"24h\" or \"0\"".into());
    }
    let bytes = s.as_bytes();
    let mut pos = 0;
    let mut total_ms: u64 = 0;
    while pos < bytes.len() {
        let start = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        let digits = &s[start..pos];
        if digits.is_empty() {
            return Err(format!(
                "`{s}` is not a duration: expected a number at `{}`",
                &s[start..]
            ));
        }
        let unit_start = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_alphabetic() {
            pos += 1;
        }
        let unit = &s[unit_start..pos];
        let ms_per_unit: u64 = match unit {
            "ms" => 1,
            "s" => 1000,
            "m" => 60 * 1000,
            "h" => 3600 * 1000,
            "d" => 24 * 3600 * 1000,
            "" => {
                return Err(format!(
                "`{s}` has no unit: write for example \"{digits}s\" or \"{digits}m\" (units: ms, s, m, h, d)"
            ))
            }
            other => return Err(format!("`{s}`: unknown unit `{other}` (units: ms, s, m, h, d)")),
        };
        let n: u64 = digits.parse().map_err(|_| too_large(s))?;
        let add = n.checked_mul(ms_per_unit).ok_or_else(|| too_large(s))?;
        total_ms = total_ms.checked_add(add).ok_or_else(|| too_large(s))?;
        if total_ms / 1000 > MAX_DURATION_SECS {
            return Err(too_large(s));
        }
    }
    Ok(Duration::from_millis(total_ms))
}

/// A duration given as a TOML integer: seconds.
pub fn duration_from_secs(secs: i64) -> Result<Duration, String> {
    match u64::try_from(secs) {
        Err(_) => Err(format!("{secs} is negative: a duration counts seconds from 0")),
        Ok(s) if s > MAX_DURATION_SECS => Err(format!(
            "{s} seconds is more than the largest duration accepted ({MAX_DURATION_SECS})"
        )),
        Ok(s) => Ok(Duration::from_secs(s)),
    }
}

fn too_large(s: &str) -> String {
    format!("`{s}` is more than the largest duration accepted ({MAX_DURATION_SECS} seconds)")
}

/// Writes a duration the way the parser reads it back: the largest units first
/// (`"1h30m"`), `"0"` for zero.
pub fn format_duration(d: Duration) -> String {
    let mut ms = d.as_millis();
    if ms == 0 {
        return "0".to_string();
    }
    let mut out = String::new();
    for (unit, size) in [
        ("d", 86_400_000u128),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
        ("ms", 1),
    ] {
        let n = ms / size;
        if n > 0 {
            out.push_str(&n.to_string());
            out.push_str(unit);
            ms -= n * size;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_sums() {
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(172_800)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn refuses_malformed() {
        for bad in [
            "",
            "30",
            "h",
            "5x",
            "1.5h",
            "-1s",
            "1h 30m",
            "99999999999999999999s",
            "4000000d",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!(duration_from_secs(-1).is_err());
        assert!(duration_from_secs(i64::MAX).is_err());
    }

    #[test]
    fn format_round_trips() {
        for ms in [0u64, 1, 999, 1000, 61_000, 5_400_000, 86_400_000, 90_061_001] {
            let d = Duration::from_millis(ms);
            assert_eq!(parse_duration(&format_duration(d)), Ok(d), "{ms}");
        }
    }
}
