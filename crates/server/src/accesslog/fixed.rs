//! The fixed-width parts of a log line (time stamp, numbers, durations and the literals
//! between them) assembled in a stack array, then appended to the line in one copy.
//!
//! Appended one by one, the dozen small pieces of a RESULT line were a dozen capacity
//! checks of the output `Vec`, and a number a push per digit: with the times and durations,
//! about a quarter of what formatting a search's lines cost (callgrind). The capacity `N`
//! is the sum of the widest forms of the parts a caller writes ([`U64`], [`I64`],
//! [`DURATION`]), so no input can overflow it.

use super::number::{digit_count, put_decimal, MAX_DIGITS};
use super::time::{nanos_digits, NANOS_PER_SECOND};

/// The widest `u64` in decimal.
pub const U64: usize = MAX_DIGITS;
/// The widest `i64` in decimal, sign included.
pub const I64: usize = MAX_DIGITS;
/// The widest duration: the seconds of a `u64` of nanoseconds (11 digits), a point and
/// nine decimals.
pub const DURATION: usize = 11 + 1 + 9;

/// Up to `N` octets assembled on the stack.
pub struct Fixed<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> Default for Fixed<N> {
    fn default() -> Self {
        Fixed { buf: [0; N], len: 0 }
    }
}

impl<const N: usize> Fixed<N> {
    /// Nothing yet.
    #[inline]
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `s` as it is.
    #[inline(always)]
    pub fn text(&mut self, s: &[u8]) -> &mut Self {
        let end = self.len + s.len();
        self.buf[self.len..end].copy_from_slice(s);
        self.len = end;
        self
    }

    /// Appends `v` in decimal.
    #[inline(always)]
    pub fn u64(&mut self, v: u64) -> &mut Self {
        // Most numbers of a line are one digit (`err=0`, `nentries=1`, the seconds of a
        // duration): a store. The others go straight into place: through a digit array they
        // were a copy of a length known only here, a call to `memcpy`.
        if v < 10 {
            return self.text(&[b'0' + v as u8]);
        }
        let end = self.len + digit_count(v);
        put_decimal(&mut self.buf[self.len..end], v);
        self.len = end;
        self
    }

    /// Appends `v` in decimal, with a minus sign when negative.
    #[inline(always)]
    pub fn i64(&mut self, v: i64) -> &mut Self {
        if v < 0 {
            self.text(b"-");
        }
        self.u64(v.unsigned_abs())
    }

    /// Appends a duration in seconds with nine decimals, as 389 writes `etime`:
    /// `0.000051234`, `12.000000001`.
    #[inline(always)]
    pub fn duration(&mut self, nanos: u64) -> &mut Self {
        let seconds = nanos / NANOS_PER_SECOND;
        let mut text = [b'.'; 11];
        text[2..].copy_from_slice(&nanos_digits(nanos % NANOS_PER_SECOND));
        if seconds < 10 {
            // The usual case, in one copy of a known length.
            text[0] = b'0' + seconds as u8;
            return self.text(&text);
        }
        self.u64(seconds).text(&text[1..])
    }

    /// What was assembled.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Appends what was assembled to `out`.
    #[inline]
    pub fn append_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accesslog::number::tests::every_length;

    #[test]
    fn parts_agree_with_format_at_every_length_and_the_widest_fit() {
        for v in every_length() {
            let mut f = Fixed::<{ 3 + U64 + I64 + I64 + DURATION }>::new();
            f.text(b"a=")
                .u64(v)
                .text(b" ")
                .i64(v as i64)
                .i64(i64::MIN)
                .duration(v);
            let expected = format!(
                "a={v} {}{}{}.{:09}",
                v as i64,
                i64::MIN,
                v / NANOS_PER_SECOND,
                v % NANOS_PER_SECOND
            );
            assert_eq!(std::str::from_utf8(f.as_bytes()).unwrap(), expected);
            let mut out = b"<".to_vec();
            f.append_to(&mut out);
            assert_eq!(out, format!("<{expected}").as_bytes());
        }
        let mut widest = Fixed::<{ U64 + I64 + DURATION }>::new();
        widest.u64(u64::MAX).i64(i64::MIN).duration(u64::MAX);
        assert_eq!(widest.as_bytes().len(), U64 + I64 + DURATION);
    }
}
