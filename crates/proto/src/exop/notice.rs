use super::NOTICE_OF_DISCONNECTION;
use crate::message::{LdapMessage, ProtocolOp};
use crate::ops::ExtendedResponse;
use crate::result::{LdapResult, ResultCode};

/// The Notice of Disconnection (RFC 4511 section 4.4.1) a server sends before closing a
/// connection it cannot continue, e.g. after an undecodable PDU: message ID 0,
/// `protocolError`, the notice's OID as responseName.
pub fn notice_of_disconnection(diagnostic: &[u8]) -> LdapMessage<'_> {
    notice_with_code(ResultCode::PROTOCOL_ERROR, diagnostic)
}

/// A Notice of Disconnection with another result code (`unavailable` on shutdown,
/// `strongerAuthRequired` when a security layer failed).
pub fn notice_with_code(code: ResultCode, diagnostic: &[u8]) -> LdapMessage<'_> {
    LdapMessage::new(
        0,
        ProtocolOp::ExtendedResponse(ExtendedResponse {
            result: LdapResult::new(code, b"", diagnostic),
            name: Some(NOTICE_OF_DISCONNECTION.as_bytes()),
            value: None,
        }),
    )
}
