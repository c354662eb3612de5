//! A BER writer that appends to a caller-owned, reused `Vec<u8>`.
//!
//! Lengths are always minimal (definite, exact size). A constructed element is opened with
//! [`Writer::begin`], which reserves one length octet; [`Writer::end`] writes the real
//! length and, only when the contents reached 128 octets or more, moves them right by the
//! few extra length octets. Hot paths that know their sizes up front (a SearchResultEntry
//! from its stored BER form) write exact headers directly with [`Writer::header`].

use super::{integer_octets, length_octets, tag};

/// Where a constructed element opened by [`Writer::begin`] starts its contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a constructed element must be closed with Writer::end"]
pub struct Mark(usize);

/// Appends BER elements to a buffer.
#[derive(Debug)]
pub struct Writer<'b> {
    buf: &'b mut Vec<u8>,
}

impl<'b> Writer<'b> {
    /// A writer that appends to `buf` (existing content is kept).
    #[inline]
    pub fn new(buf: &'b mut Vec<u8>) -> Self {
        Writer { buf }
    }

    /// The octets written so far, including what `buf` held before.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        self.buf
    }

    /// Writes a tag and a definite length; the caller writes exactly `len` content octets.
    #[inline]
    pub fn header(&mut self, t: u8, len: usize) {
        self.buf.push(t);
        self.length(len);
    }

    #[inline]
    fn length(&mut self, len: usize) {
        if len < 0x80 {
            self.buf.push(len as u8);
        } else {
            let n = length_octets(len) - 1;
            self.buf.push(0x80 | n as u8);
            self.buf.extend_from_slice(&len.to_be_bytes()[8 - n..]);
        }
    }

    /// Appends raw octets (already valid BER, or content octets after [`Writer::header`]).
    #[inline]
    pub fn raw(&mut self, octets: &[u8]) {
        self.buf.extend_from_slice(octets);
    }

    /// Opens a constructed element tagged `t`.
    #[inline]
    pub fn begin(&mut self, t: u8) -> Mark {
        self.buf.push(t);
        self.buf.push(0);
        Mark(self.buf.len())
    }

    /// Closes the element opened at `mark`, writing its minimal length.
    #[inline]
    pub fn end(&mut self, mark: Mark) {
        let start = mark.0;
        let len = self.buf.len() - start;
        if len < 0x80 {
            self.buf[start - 1] = len as u8;
            return;
        }
        let n = length_octets(len) - 1;
        self.buf.resize(self.buf.len() + n, 0);
        self.buf.copy_within(start..start + len, start + n);
        self.buf[start - 1] = 0x80 | n as u8;
        self.buf[start..start + n].copy_from_slice(&len.to_be_bytes()[8 - n..]);
    }

    /// Writes a constructed element whose contents `f` writes.
    #[inline]
    pub fn constructed(&mut self, t: u8, f: impl FnOnce(&mut Self)) {
        let mark = self.begin(t);
        f(self);
        self.end(mark);
    }

    /// Writes an OCTET STRING (or any string type) under tag `t`.
    #[inline]
    pub fn octets(&mut self, t: u8, value: &[u8]) {
        self.header(t, value.len());
        self.buf.extend_from_slice(value);
    }

    /// Writes an INTEGER (or ENUMERATED, under its tag) in minimal two's complement.
    #[inline]
    pub fn integer(&mut self, t: u8, value: i64) {
        let n = integer_octets(value);
        self.buf.push(t);
        self.buf.push(n as u8);
        self.buf.extend_from_slice(&value.to_be_bytes()[8 - n..]);
    }

    /// Writes a BOOLEAN (TRUE as 0xFF, as DER and most LDAP implementations do).
    #[inline]
    pub fn boolean(&mut self, t: u8, value: bool) {
        self.buf.extend_from_slice(&[t, 1, if value { 0xff } else { 0 }]);
    }

    /// Writes a NULL under tag `t`.
    #[inline]
    pub fn null(&mut self, t: u8) {
        self.buf.extend_from_slice(&[t, 0]);
    }

    /// Writes an OCTET STRING under the universal tag.
    #[inline]
    pub fn octet_string(&mut self, value: &[u8]) {
        self.octets(tag::OCTET_STRING, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ber::Reader;

    #[test]
    fn lengths_are_minimal_at_every_boundary() {
        for len in [0usize, 1, 127, 128, 255, 256, 65535, 65536, 1 << 20] {
            let mut direct = Vec::new();
            Writer::new(&mut direct).octets(0x04, &vec![7u8; len]);
            let mut patched = Vec::new();
            let mut w = Writer::new(&mut patched);
            let m = w.begin(0x04);
            w.raw(&vec![7u8; len]);
            w.end(m);
            assert_eq!(direct, patched, "len {len}");
            assert_eq!(direct.len(), super::super::tlv_len(len));
            let mut r = Reader::new(&direct);
            assert_eq!(r.read(0x04, "t").unwrap().len(), len);
        }
    }

    #[test]
    fn integers_round_trip() {
        for v in [
            0i64,
            1,
            -1,
            127,
            128,
            -128,
            -129,
            255,
            256,
            65535,
            i64::from(i32::MAX),
            i64::MIN,
            i64::MAX,
        ] {
            let mut buf = Vec::new();
            Writer::new(&mut buf).integer(0x02, v);
            assert_eq!(buf[1] as usize, integer_octets(v));
            assert_eq!(Reader::new(&buf).read_integer(0x02, "t").unwrap(), v);
        }
    }
}
