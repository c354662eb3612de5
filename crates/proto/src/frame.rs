//! Framing: finding where one LDAPMessage ends in a byte stream, before buffering it.
//!
//! Steps, for the bytes a connection has read so far:
//! 1. the first octet must be the SEQUENCE tag (0x30); anything else means the stream is
//!    not LDAP (or is out of step) and the connection cannot continue;
//! 2. the length octets are read as soon as they are all there; an indefinite length or one
//!    that makes the PDU larger than the limit is refused *before* the rest arrives;
//! 3. once the whole PDU is buffered, [`Frame::Complete`] gives its size, and the caller
//!    decodes exactly those octets with [`crate::LdapMessage::decode`].
//!
//! A framing error is fatal to the connection (send a Notice of Disconnection and close); a
//! decode error inside a complete frame concerns that one message only.

use crate::ber::{reader::read_header, tag};
use crate::error::{DecodeError, DecodeErrorKind, Result};
use crate::limits::MAX_LENGTH_OCTETS;

/// What framing found at the start of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// A whole PDU of this many octets is buffered.
    Complete(usize),
    /// More octets are needed; `total` is the PDU size once the header has been read.
    Incomplete {
        /// The size of the whole PDU, when its header is complete.
        total: Option<usize>,
    },
}

/// Frames the next PDU in `buf`, refusing any whose declared size exceeds `max_pdu`.
///
/// ```
/// use larch_proto::frame::{frame, Frame};
/// let unbind = [0x30, 0x05, 0x02, 0x01, 0x03, 0x42, 0x00];
/// assert_eq!(frame(&unbind, 1024).unwrap(), Frame::Complete(7));
/// assert_eq!(frame(&unbind[..3], 1024).unwrap(), Frame::Incomplete { total: Some(7) });
/// // A 2 GiB declaration is refused after six octets.
/// assert!(frame(&[0x30, 0x84, 0x80, 0, 0, 0], 1024).is_err());
/// ```
pub fn frame(buf: &[u8], max_pdu: usize) -> Result<Frame> {
    const CTX: &str = "LDAPMessage framing";
    let Some(&first) = buf.first() else {
        return Ok(Frame::Incomplete { total: None });
    };
    if first != tag::SEQUENCE {
        return Err(DecodeError::new(
            DecodeErrorKind::UnexpectedTag {
                expected: tag::SEQUENCE,
                found: first,
            },
            CTX,
        ));
    }
    let Some(&len0) = buf.get(1) else {
        return Ok(Frame::Incomplete { total: None });
    };
    if len0 > 0x80 {
        let count = usize::from(len0 & 0x7f);
        if count > MAX_LENGTH_OCTETS {
            return Err(DecodeError::new(DecodeErrorKind::LengthTooLong, CTX));
        }
        if buf.len() < 2 + count {
            return Ok(Frame::Incomplete { total: None });
        }
    }
    let (_, len, hdr) = read_header(buf, CTX)?;
    let total = len.saturating_add(hdr as u64);
    if total > max_pdu as u64 {
        return Err(DecodeError::new(
            DecodeErrorKind::PduTooLarge {
                declared: total,
                limit: max_pdu,
            },
            CTX,
        ));
    }
    let total = total as usize;
    if buf.len() >= total {
        Ok(Frame::Complete(total))
    } else {
        Ok(Frame::Incomplete { total: Some(total) })
    }
}
