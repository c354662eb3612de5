use super::{ExtendedValue, CANCEL};
use crate::ber::{tag, Reader, Writer};
use crate::error::{DecodeError, DecodeErrorKind, Result};
use crate::limits::MAX_MESSAGE_ID;
use crate::message::MessageId;

/// Cancel request value (RFC 3909): `SEQUENCE { cancelID MessageID }`. Unlike Abandon,
/// Cancel gets a response (`canceled`, `noSuchOperation`, `tooLate`, `cannotCancel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CancelRequest {
    /// The message ID of the operation to cancel.
    pub cancel_id: MessageId,
}

impl<'a> ExtendedValue<'a> for CancelRequest {
    const OID: &'static str = CANCEL;

    fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
        const CTX: &str = "CancelRequest";
        let v = value.ok_or(DecodeError::new(DecodeErrorKind::InvalidValue, CTX))?;
        let mut outer = Reader::new(v);
        let mut r = outer.read_constructed(tag::SEQUENCE, CTX)?;
        outer.finish(CTX)?;
        let id = r.read_integer_in(
            tag::INTEGER,
            0,
            i64::from(MAX_MESSAGE_ID),
            "CancelRequest.cancelID",
        )?;
        r.finish_sequence(CTX, &[tag::INTEGER])?;
        Ok(CancelRequest {
            cancel_id: id as MessageId,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) -> bool {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        w.integer(tag::INTEGER, i64::from(self.cancel_id));
        w.end(m);
        true
    }
}
