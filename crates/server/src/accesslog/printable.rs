//! Whether a field can be copied into a line as it is: every octet printable ASCII and
//! none the format escapes. Nearly every DN and filter is, and is checked eight octets at
//! a time; an octet at a time, the check of a search's base DN and filter was a tenth of
//! what formatting a search's lines cost (callgrind).

const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGH: u64 = ONES << 7;

/// Whether some octet of `w` is zero (exact: a borrow only ever crosses into an octet
/// above a zero one).
#[inline]
fn has_zero(w: u64) -> bool {
    w.wrapping_sub(ONES) & !w & HIGH != 0
}

/// Whether some octet of `w` is below `n` (at most 128), as [`has_zero`].
#[inline]
fn has_below(w: u64, n: u8) -> bool {
    w.wrapping_sub(ONES * u64::from(n)) & !w & HIGH != 0
}

/// True when every octet of `s` is printable ASCII (0x20 to 0x7e) and none is in `also`.
#[inline]
pub fn printable_except(s: &[u8], also: &[u8]) -> bool {
    let mut words = s.chunks_exact(8);
    for word in &mut words {
        let w = u64::from_ne_bytes(word.try_into().expect("eight octets"));
        if w & HIGH != 0 || has_below(w, 0x20) || has_zero(w ^ (ONES * 0x7f)) {
            return false;
        }
        if also.iter().any(|&a| has_zero(w ^ (ONES * u64::from(a)))) {
            return false;
        }
    }
    words
        .remainder()
        .iter()
        .all(|&b| (0x20..0x7f).contains(&b) && !also.contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow(s: &[u8], also: &[u8]) -> bool {
        s.iter().all(|&b| (0x20..0x7f).contains(&b) && !also.contains(&b))
    }

    #[test]
    fn every_octet_at_every_place_agrees_with_an_octet_by_octet_check() {
        for also in [&b""[..], b"\"", b"\"\\/"] {
            for len in 0..20 {
                let base: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                assert!(printable_except(&base, also));
                for at in 0..len {
                    for b in 0..=255u8 {
                        let mut s = base.clone();
                        s[at] = b;
                        assert_eq!(printable_except(&s, also), slow(&s, also), "{s:02x?} {also:?}");
                    }
                }
            }
        }
        // A zero octet followed by 0x01 (where a borrow crosses octets).
        assert!(!printable_except(b"abcd\x00\x01gh", b""));
        assert!(!printable_except(b"abcdefg\x7f", b""));
        assert!(printable_except(
            b"dc=example,dc=com (cn=Person 00001 Surname)",
            b"\""
        ));
    }
}
