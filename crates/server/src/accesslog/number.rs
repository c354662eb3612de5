//! Decimal numbers of the access log, written without allocating: two digits per
//! division, from a table, into a stack array, then appended in one copy.
//!
//! Written here rather than with a crate (`itoa` does the same) because this is the
//! log's hottest arithmetic, eight numbers or so per search, and the rest of the log's
//! text is assembled the same way (`fixed`).

/// The most digits of a `u64`.
pub const MAX_DIGITS: usize = 20;

/// `00` to `99`, two octets each.
const DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Writes `v` (below 100) as two digits at the start of `to`.
#[inline]
pub fn put_pair(to: &mut [u8], v: u64) {
    let at = (v % 100) as usize * 2;
    to[..2].copy_from_slice(&DIGIT_PAIRS[at..at + 2]);
}

/// How many decimal digits `v` has.
#[inline]
pub fn digit_count(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Writes `v` in decimal filling `to`, which is [`digit_count`] of it long (a shorter one
/// gets the last digits, a longer one leading zeros).
#[inline]
pub fn put_decimal(to: &mut [u8], v: u64) {
    let mut at = to.len();
    let mut v = v;
    while at >= 2 {
        at -= 2;
        put_pair(&mut to[at..], v % 100);
        v /= 100;
    }
    if at == 1 {
        to[0] = b'0' + (v % 10) as u8;
    }
}

/// The decimal digits of `v`, at the end of the array, and where they start.
#[inline]
pub fn decimal(v: u64) -> ([u8; MAX_DIGITS], usize) {
    let at = MAX_DIGITS - digit_count(v);
    let mut digits = [b'0'; MAX_DIGITS];
    put_decimal(&mut digits[at..], v);
    (digits, at)
}

/// Appends `v` in decimal.
#[inline]
pub fn push_u64(out: &mut Vec<u8>, v: u64) {
    if v < 10 {
        out.push(b'0' + v as u8);
        return;
    }
    let (digits, at) = decimal(v);
    out.extend_from_slice(&digits[at..]);
}

/// Appends `v` in decimal, with a minus sign when negative.
#[inline]
pub fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// 0, 1, 9, 10, 11, 99, 100, ... every power of ten, its neighbours and a value of every
    /// length between, up to `u64::MAX`.
    pub(crate) fn every_length() -> Vec<u64> {
        let mut values = vec![0, 1, 9, 42, u64::MAX, u64::MAX - 1];
        let mut p = 10u64;
        loop {
            values.extend([p - 1, p, p + 1, p / 10 * 7 + 3]);
            match p.checked_mul(10) {
                Some(n) => p = n,
                None => break,
            }
        }
        values
    }

    #[test]
    fn numbers_agree_with_format_at_every_length() {
        for v in every_length() {
            let mut out = b"x".to_vec();
            push_u64(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), format!("x{v}"));
            let (digits, at) = decimal(v);
            assert_eq!(std::str::from_utf8(&digits[at..]).unwrap(), v.to_string());
            assert_eq!(digit_count(v), v.to_string().len());
            let mut padded = [b'x'; MAX_DIGITS + 2];
            put_decimal(&mut padded, v);
            assert_eq!(std::str::from_utf8(&padded).unwrap(), format!("{v:022}"));
            for s in [v as i64, (v as i64).wrapping_neg(), i64::MIN, i64::MAX] {
                let mut out = Vec::new();
                push_i64(&mut out, s);
                assert_eq!(String::from_utf8(out).unwrap(), s.to_string());
            }
        }
    }

    #[test]
    fn pairs_are_two_digits() {
        for v in 0..100 {
            let mut to = [0u8; 2];
            put_pair(&mut to, v);
            assert_eq!(&to, format!("{v:02}").as_bytes());
        }
    }
}
