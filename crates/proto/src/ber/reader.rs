//! A cursor over borrowed BER octets. Every read checks bounds; nothing here panics,
//! allocates or recurses.

use super::tag;
use crate::error::{DecodeError, DecodeErrorKind, Result};
use crate::limits::{MAX_INTEGER_OCTETS, MAX_LENGTH_OCTETS};

/// A forward-only cursor over the contents of one BER element.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

/// Reads a tag and a definite length at the start of `buf`.
///
/// Returns `(tag, content length, header length)`. The content itself may not be in `buf`
/// yet; framing uses this to learn a PDU's size before buffering it.
pub(crate) fn read_header(buf: &[u8], ctx: &'static str) -> Result<(u8, u64, usize)> {
    let err = |kind| DecodeError::new(kind, ctx);
    let &t = buf.first().ok_or(err(DecodeErrorKind::Truncated))?;
    if t & tag::NUMBER_MASK == tag::NUMBER_MASK {
        return Err(err(DecodeErrorKind::HighTagNumber));
    }
    let &first = buf.get(1).ok_or(err(DecodeErrorKind::Truncated))?;
    if first < 0x80 {
        return Ok((t, u64::from(first), 2));
    }
    if first == 0x80 {
        return Err(err(DecodeErrorKind::IndefiniteLength));
    }
    let count = usize::from(first & 0x7f);
    if count > MAX_LENGTH_OCTETS {
        return Err(err(DecodeErrorKind::LengthTooLong));
    }
    let octets = buf.get(2..2 + count).ok_or(err(DecodeErrorKind::Truncated))?;
    let mut len: u64 = 0;
    for &o in octets {
        if len > (u64::MAX >> 8) {
            return Err(err(DecodeErrorKind::LengthTooLong));
        }
        len = (len << 8) | u64::from(o);
    }
    Ok((t, len, 2 + count))
}

impl<'a> Reader<'a> {
    /// A reader over `buf`.
    #[inline]
    pub const fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    /// True when every octet has been read.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The octets not read yet.
    #[inline]
    pub const fn remaining(&self) -> &'a [u8] {
        self.buf
    }

    /// The tag of the next element, if any.
    #[inline]
    pub fn peek_tag(&self) -> Option<u8> {
        self.buf.first().copied()
    }

    /// Reads one element: its tag, its contents, and the whole TLV.
    #[inline]
    pub fn read_any(&mut self, ctx: &'static str) -> Result<(u8, &'a [u8], &'a [u8])> {
        let buf = self.buf;
        // Fast path: single-octet tag and short-form length, the common case.
        if let [t, len, ..] = *buf {
            if len < 0x80 && t & tag::NUMBER_MASK != tag::NUMBER_MASK {
                let end = 2 + usize::from(len);
                if end <= buf.len() {
                    self.buf = &buf[end..];
                    return Ok((t, &buf[2..end], &buf[..end]));
                }
                return Err(DecodeError::new(DecodeErrorKind::Truncated, ctx));
            }
        }
        let (t, len, hdr) = read_header(buf, ctx)?;
        let available = (buf.len() - hdr) as u64;
        if len > available {
            return Err(DecodeError::new(DecodeErrorKind::Truncated, ctx));
        }
        let end = hdr + len as usize;
        self.buf = &buf[end..];
        Ok((t, &buf[hdr..end], &buf[..end]))
    }

    /// Reads one element that must carry `expected`, returning its contents.
    #[inline]
    pub fn read(&mut self, expected: u8, ctx: &'static str) -> Result<&'a [u8]> {
        let (t, content, _) = self.read_any(ctx)?;
        if t != expected {
            return Err(DecodeError::new(
                DecodeErrorKind::UnexpectedTag { expected, found: t },
                ctx,
            ));
        }
        Ok(content)
    }

    /// Reads an element tagged `expected` if it is next; `None` otherwise.
    #[inline]
    pub fn read_optional(&mut self, expected: u8, ctx: &'static str) -> Result<Option<&'a [u8]>> {
        if self.peek_tag() == Some(expected) {
            self.read(expected, ctx).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Reads an element tagged `expected` and returns a reader over its contents.
    #[inline]
    pub fn read_constructed(&mut self, expected: u8, ctx: &'static str) -> Result<Reader<'a>> {
        self.read(expected, ctx).map(Reader::new)
    }

    /// Reads an OCTET STRING (or any string type carried in one) under tag `expected`.
    #[inline]
    pub fn read_octets(&mut self, expected: u8, ctx: &'static str) -> Result<&'a [u8]> {
        self.read(expected, ctx)
    }

    /// Reads an INTEGER (or ENUMERATED, under its tag) that must fit in an `i64`.
    #[inline]
    pub fn read_integer(&mut self, expected: u8, ctx: &'static str) -> Result<i64> {
        let content = self.read(expected, ctx)?;
        decode_integer(content, ctx)
    }

    /// Reads an INTEGER in `min..=max`.
    #[inline]
    pub fn read_integer_in(&mut self, expected: u8, min: i64, max: i64, ctx: &'static str) -> Result<i64> {
        let v = self.read_integer(expected, ctx)?;
        if v < min || v > max {
            return Err(DecodeError::new(DecodeErrorKind::OutOfRange { value: v }, ctx));
        }
        Ok(v)
    }

    /// Reads a BOOLEAN. Any non-zero octet is TRUE, as RFC 4511 section 5.1 allows.
    #[inline]
    pub fn read_bool(&mut self, expected: u8, ctx: &'static str) -> Result<bool> {
        let content = self.read(expected, ctx)?;
        decode_bool(content, ctx)
    }

    /// Reads a NULL.
    pub fn read_null(&mut self, expected: u8, ctx: &'static str) -> Result<()> {
        let content = self.read(expected, ctx)?;
        if !content.is_empty() {
            return Err(DecodeError::new(DecodeErrorKind::InvalidNull, ctx));
        }
        Ok(())
    }

    /// Ends the contents of a SEQUENCE whose components carry the tags in `components`.
    ///
    /// RFC 4511 section 4: "clients and servers MUST (unless otherwise specified) ignore
    /// trailing SEQUENCE components whose tags they do not recognize." So further elements
    /// are skipped when their tag is not one of this SEQUENCE's own (compared by class and
    /// number, either form); a known tag out of place, repeated or in the wrong form is
    /// refused with [`DecodeErrorKind::MisplacedComponent`], because skipping it would
    /// change the meaning (a constructed `newSuperior` would turn a move into a rename).
    /// Octets that do not form elements are refused with [`DecodeErrorKind::TrailingData`].
    #[inline]
    pub fn finish_sequence(&self, ctx: &'static str, components: &[u8]) -> Result<()> {
        self.finish_sequence_where(ctx, |t| {
            components
                .iter()
                .any(|&k| (k | tag::CONSTRUCTED) == (t | tag::CONSTRUCTED))
        })
    }

    /// [`Reader::finish_sequence`] with a predicate saying which tags are recognized.
    pub fn finish_sequence_where(&self, ctx: &'static str, recognized: impl Fn(u8) -> bool) -> Result<()> {
        let mut rest = *self;
        while !rest.is_empty() {
            let (t, _, _) = rest
                .read_any(ctx)
                .map_err(|_| DecodeError::new(DecodeErrorKind::TrailingData, ctx))?;
            if recognized(t) {
                return Err(DecodeError::new(
                    DecodeErrorKind::MisplacedComponent { tag: t },
                    ctx,
                ));
            }
        }
        Ok(())
    }

    /// Fails with [`DecodeErrorKind::TrailingData`] unless every octet was read. For the
    /// end of a SEQUENCE's contents use [`Reader::finish_sequence`]; this strict form is for
    /// the end of a PDU, of an OCTET STRING-wrapped value, or of a single filter.
    #[inline]
    pub fn finish(&self, ctx: &'static str) -> Result<()> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::new(DecodeErrorKind::TrailingData, ctx))
        }
    }
}

/// Decodes INTEGER contents (two's complement, big-endian). Redundant leading sign octets
/// are tolerated; empty or oversized contents are not.
#[inline]
pub(crate) fn decode_integer(content: &[u8], ctx: &'static str) -> Result<i64> {
    if content.is_empty() {
        return Err(DecodeError::new(DecodeErrorKind::InvalidPrimitive, ctx));
    }
    if content.len() > MAX_INTEGER_OCTETS {
        let value = if content[0] & 0x80 != 0 {
            i64::MIN
        } else {
            i64::MAX
        };
        return Err(DecodeError::new(DecodeErrorKind::OutOfRange { value }, ctx));
    }
    let negative = content[0] & 0x80 != 0;
    let mut v: i128 = if negative { -1 } else { 0 };
    for &o in content {
        v = (v << 8) | i128::from(o);
    }
    i64::try_from(v).map_err(|_| {
        let value = if negative { i64::MIN } else { i64::MAX };
        DecodeError::new(DecodeErrorKind::OutOfRange { value }, ctx)
    })
}

/// Decodes BOOLEAN contents: exactly one octet, zero is FALSE, anything else TRUE.
#[inline]
pub(crate) fn decode_bool(content: &[u8], ctx: &'static str) -> Result<bool> {
    match content {
        [b] => Ok(*b != 0),
        _ => Err(DecodeError::new(DecodeErrorKind::InvalidPrimitive, ctx)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_decode_with_sign_and_redundant_octets() {
        assert_eq!(decode_integer(&[0x00], "t").unwrap(), 0);
        assert_eq!(decode_integer(&[0x7f], "t").unwrap(), 127);
        assert_eq!(decode_integer(&[0x00, 0x80], "t").unwrap(), 128);
        assert_eq!(decode_integer(&[0xff], "t").unwrap(), -1);
        assert_eq!(decode_integer(&[0xff, 0x7f], "t").unwrap(), -129);
        assert_eq!(decode_integer(&[0x00, 0x00, 0x05], "t").unwrap(), 5);
        assert_eq!(
            decode_integer(&[0x7f, 0xff, 0xff, 0xff], "t").unwrap(),
            i64::from(i32::MAX)
        );
        assert!(decode_integer(&[], "t").is_err());
        assert!(decode_integer(&[1; 10], "t").is_err());
        assert!(decode_integer(&[0x01, 0, 0, 0, 0, 0, 0, 0, 0], "t").is_err());
    }

    #[test]
    fn lengths_accept_leading_zeros_and_refuse_indefinite() {
        assert_eq!(read_header(&[0x04, 0x82, 0x00, 0x05], "t").unwrap(), (4, 5, 4));
        assert_eq!(read_header(&[0x04, 0x81, 0x90], "t").unwrap(), (4, 0x90, 3));
        assert_eq!(
            read_header(&[0x04, 0x80], "t").unwrap_err().kind,
            DecodeErrorKind::IndefiniteLength
        );
        assert_eq!(
            read_header(&[0x1f, 0x01], "t").unwrap_err().kind,
            DecodeErrorKind::HighTagNumber
        );
        assert_eq!(
            read_header(&[0x04, 0xff], "t").unwrap_err().kind,
            DecodeErrorKind::LengthTooLong
        );
    }

    #[test]
    fn booleans_accept_any_non_zero() {
        assert!(!decode_bool(&[0], "t").unwrap());
        assert!(decode_bool(&[1], "t").unwrap());
        assert!(decode_bool(&[0x42], "t").unwrap());
        assert!(decode_bool(&[], "t").is_err());
        assert!(decode_bool(&[0, 0], "t").is_err());
    }

    #[test]
    fn reads_are_bounded() {
        let mut r = Reader::new(&[0x04, 0x05, b'a']);
        assert_eq!(r.read_any("t").unwrap_err().kind, DecodeErrorKind::Truncated);
        let mut r = Reader::new(&[0x04, 0x84, 0xff, 0xff, 0xff, 0xff, 0]);
        assert_eq!(r.read_any("t").unwrap_err().kind, DecodeErrorKind::Truncated);
    }
}
