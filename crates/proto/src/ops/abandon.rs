use crate::ber::reader::decode_integer;
use crate::error::{DecodeError, DecodeErrorKind, Result};
use crate::message::MessageId;

/// AbandonRequest (RFC 4511 section 4.11): stop the operation with this message ID.
/// There is no response.
///
/// ```
/// use larch_proto::{AbandonRequest, LdapMessage, ProtocolOp};
/// let msg = LdapMessage::new(9, ProtocolOp::AbandonRequest(AbandonRequest { message_id: 4 }));
/// let mut buf = Vec::new();
/// msg.encode(&mut buf);
/// assert_eq!(buf, [0x30, 0x06, 0x02, 0x01, 0x09, 0x50, 0x01, 0x04]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbandonRequest {
    /// The message ID of the operation to abandon.
    pub message_id: MessageId,
}

impl AbandonRequest {
    pub(crate) fn decode_contents(c: &[u8]) -> Result<Self> {
        const CTX: &str = "AbandonRequest";
        let v = decode_integer(c, CTX)?;
        if !(0..=i64::from(crate::limits::MAX_MESSAGE_ID)).contains(&v) {
            return Err(DecodeError::new(DecodeErrorKind::OutOfRange { value: v }, CTX));
        }
        Ok(AbandonRequest {
            message_id: v as MessageId,
        })
    }
}
