use crate::ber::{tag, Reader, Writer};
use crate::error::Result;
use crate::result::{LdapResult, RESULT_COMPONENTS};

const REQUEST_NAME: u8 = tag::context(0);
const REQUEST_VALUE: u8 = tag::context(1);
const RESPONSE_NAME: u8 = tag::context(10);
const RESPONSE_VALUE: u8 = tag::context(11);
const INTERMEDIATE_NAME: u8 = tag::context(0);
const INTERMEDIATE_VALUE: u8 = tag::context(1);

/// ExtendedRequest (RFC 4511 section 4.12). Typed values of the known operations are in
/// [`crate::exop`].
///
/// ```
/// use larch_proto::{exop, ExtendedRequest, LdapMessage, ProtocolOp};
/// let req = ExtendedRequest { name: exop::WHO_AM_I.as_bytes(), value: None };
/// let mut buf = Vec::new();
/// LdapMessage::new(3, ProtocolOp::ExtendedRequest(req)).encode(&mut buf);
/// assert_eq!(LdapMessage::decode(&buf).unwrap().op, ProtocolOp::ExtendedRequest(req));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtendedRequest<'a> {
    /// `requestName`: the operation's OID.
    pub name: &'a [u8],
    /// `requestValue`.
    pub value: Option<&'a [u8]>,
}

impl<'a> ExtendedRequest<'a> {
    pub(crate) fn decode_contents(c: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(c);
        let name = r.read_octets(REQUEST_NAME, "ExtendedRequest.requestName")?;
        let value = r.read_optional(REQUEST_VALUE, "ExtendedRequest.requestValue")?;
        r.finish_sequence("ExtendedRequest", &[REQUEST_NAME, REQUEST_VALUE])?;
        Ok(ExtendedRequest { name, value })
    }

    pub(crate) fn encode_contents(&self, w: &mut Writer<'_>) {
        w.octets(REQUEST_NAME, self.name);
        if let Some(v) = self.value {
            w.octets(REQUEST_VALUE, v);
        }
    }
}

/// ExtendedResponse (RFC 4511 section 4.12). With message ID 0 and the name
/// [`crate::exop::NOTICE_OF_DISCONNECTION`] it is the unsolicited Notice of Disconnection.
///
/// ```
/// use larch_proto::{exop, LdapMessage, ProtocolOp};
/// let mut buf = Vec::new();
/// exop::notice_of_disconnection(b"bad PDU").encode(&mut buf);
/// let msg = LdapMessage::decode(&buf).unwrap();
/// assert_eq!(msg.message_id, 0);
/// let ProtocolOp::ExtendedResponse(r) = msg.op else { panic!() };
/// assert_eq!(r.name, Some(exop::NOTICE_OF_DISCONNECTION.as_bytes()));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtendedResponse<'a> {
    /// The result.
    pub result: LdapResult<'a>,
    /// `responseName`.
    pub name: Option<&'a [u8]>,
    /// `responseValue`.
    pub value: Option<&'a [u8]>,
}

impl<'a> ExtendedResponse<'a> {
    pub(crate) fn decode_contents(c: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(c);
        let result = LdapResult::decode_from(&mut r)?;
        let name = r.read_optional(RESPONSE_NAME, "ExtendedResponse.responseName")?;
        let value = r.read_optional(RESPONSE_VALUE, "ExtendedResponse.responseValue")?;
        r.finish_sequence(
            "ExtendedResponse",
            &[
                RESULT_COMPONENTS[0],
                RESULT_COMPONENTS[1],
                RESULT_COMPONENTS[2],
                RESPONSE_NAME,
                RESPONSE_VALUE,
            ],
        )?;
        Ok(ExtendedResponse { result, name, value })
    }

    pub(crate) fn encode_contents(&self, w: &mut Writer<'_>) {
        self.result.encode_into(w);
        if let Some(n) = self.name {
            w.octets(RESPONSE_NAME, n);
        }
        if let Some(v) = self.value {
            w.octets(RESPONSE_VALUE, v);
        }
    }
}

/// IntermediateResponse (RFC 4511 section 4.13), e.g. the Sync Info Message of RFC 4533.
///
/// ```
/// use larch_proto::{IntermediateResponse, LdapMessage, ProtocolOp};
/// let r = IntermediateResponse { name: Some(b"1.3.6.1.4.1.4203.1.9.1.4"), value: Some(&[0x80, 0x01, 0x07]) };
/// let mut buf = Vec::new();
/// LdapMessage::new(3, ProtocolOp::IntermediateResponse(r)).encode(&mut buf);
/// assert_eq!(LdapMessage::decode(&buf).unwrap().op, ProtocolOp::IntermediateResponse(r));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntermediateResponse<'a> {
    /// `responseName`.
    pub name: Option<&'a [u8]>,
    /// `responseValue`.
    pub value: Option<&'a [u8]>,
}

impl<'a> IntermediateResponse<'a> {
    pub(crate) fn decode_contents(c: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(c);
        let name = r.read_optional(INTERMEDIATE_NAME, "IntermediateResponse.responseName")?;
        let value = r.read_optional(INTERMEDIATE_VALUE, "IntermediateResponse.responseValue")?;
        r.finish_sequence("IntermediateResponse", &[INTERMEDIATE_NAME, INTERMEDIATE_VALUE])?;
        Ok(IntermediateResponse { name, value })
    }

    pub(crate) fn encode_contents(&self, w: &mut Writer<'_>) {
        if let Some(n) = self.name {
            w.octets(INTERMEDIATE_NAME, n);
        }
        if let Some(v) = self.value {
            w.octets(INTERMEDIATE_VALUE, v);
        }
    }
}
