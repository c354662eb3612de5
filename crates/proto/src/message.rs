//! `LDAPMessage` (RFC 4511 section 4.1.1): the envelope, the operation choice, and the
//! entry points for decoding one framed PDU and encoding a message into a reused buffer.

use crate::ber::{tag, Reader, Writer};
use crate::controls::Control;
use crate::error::{DecodeError, DecodeErrorKind, Result};
use crate::filter::FilterCheck;
use crate::limits::MAX_MESSAGE_ID;
use crate::ops::*;
use crate::result::LdapResult;
use crate::seq::SeqOf;

/// An LDAP message ID (`INTEGER (0 .. maxInt)`); 0 is reserved for unsolicited notifications.
pub type MessageId = i32;

/// Tag of the optional controls of an LDAPMessage (`[0]`, constructed).
pub const CONTROLS_TAG: u8 = tag::context_constructed(0);

/// One LDAP message: ID, operation, and optional controls. Decoded messages borrow from the
/// buffer that held the PDU.
///
/// ```
/// use larch_proto::{LdapMessage, ProtocolOp, DelRequest};
/// let msg = LdapMessage::new(7, ProtocolOp::DelRequest(DelRequest { dn: b"cn=old,dc=example,dc=com" }));
/// let mut buf = Vec::new();
/// msg.encode(&mut buf);
/// assert_eq!(LdapMessage::decode(&buf).unwrap(), msg);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LdapMessage<'a> {
    /// The message ID.
    pub message_id: MessageId,
    /// The operation.
    pub op: ProtocolOp<'a>,
    /// Controls; `None` when the element is absent (an empty list is `Some` of nothing).
    pub controls: Option<SeqOf<'a, Control<'a>>>,
}

/// The operation an LDAPMessage carries.
///
/// ```
/// use larch_proto::{LdapMessage, ProtocolOp};
/// // UnbindRequest is `[APPLICATION 2] NULL`: it has no fields of its own.
/// let mut buf = Vec::new();
/// LdapMessage::new(5, ProtocolOp::UnbindRequest).encode(&mut buf);
/// assert_eq!(buf, [0x30, 0x05, 0x02, 0x01, 0x05, 0x42, 0x00]);
/// let op = LdapMessage::decode(&buf).unwrap().op;
/// assert_eq!((op.name(), op.is_request()), ("UnbindRequest", true));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // each variant is named after its RFC 4511 production
pub enum ProtocolOp<'a> {
    BindRequest(BindRequest<'a>),
    BindResponse(BindResponse<'a>),
    UnbindRequest,
    SearchRequest(SearchRequest<'a>),
    SearchResultEntry(SearchResultEntry<'a>),
    SearchResultDone(LdapResult<'a>),
    SearchResultReference(SearchResultReference<'a>),
    ModifyRequest(ModifyRequest<'a>),
    ModifyResponse(LdapResult<'a>),
    AddRequest(AddRequest<'a>),
    AddResponse(LdapResult<'a>),
    DelRequest(DelRequest<'a>),
    DelResponse(LdapResult<'a>),
    ModifyDnRequest(ModifyDnRequest<'a>),
    ModifyDnResponse(LdapResult<'a>),
    CompareRequest(CompareRequest<'a>),
    CompareResponse(LdapResult<'a>),
    AbandonRequest(AbandonRequest),
    ExtendedRequest(ExtendedRequest<'a>),
    ExtendedResponse(ExtendedResponse<'a>),
    IntermediateResponse(IntermediateResponse<'a>),
}

/// The application tags of the operations.
pub mod op_tag {
    #![allow(missing_docs)]
    pub const BIND_REQUEST: u8 = 0x60;
    pub const BIND_RESPONSE: u8 = 0x61;
    pub const UNBIND_REQUEST: u8 = 0x42;
    pub const SEARCH_REQUEST: u8 = 0x63;
    pub const SEARCH_RESULT_ENTRY: u8 = 0x64;
    pub const SEARCH_RESULT_DONE: u8 = 0x65;
    pub const MODIFY_REQUEST: u8 = 0x66;
    pub const MODIFY_RESPONSE: u8 = 0x67;
    pub const ADD_REQUEST: u8 = 0x68;
    pub const ADD_RESPONSE: u8 = 0x69;
    pub const DEL_REQUEST: u8 = 0x4a;
    pub const DEL_RESPONSE: u8 = 0x6b;
    pub const MODIFY_DN_REQUEST: u8 = 0x6c;
    pub const MODIFY_DN_RESPONSE: u8 = 0x6d;
    pub const COMPARE_REQUEST: u8 = 0x6e;
    pub const COMPARE_RESPONSE: u8 = 0x6f;
    pub const ABANDON_REQUEST: u8 = 0x50;
    pub const SEARCH_RESULT_REFERENCE: u8 = 0x73;
    pub const EXTENDED_REQUEST: u8 = 0x77;
    pub const EXTENDED_RESPONSE: u8 = 0x78;
    pub const INTERMEDIATE_RESPONSE: u8 = 0x79;
}

impl<'a> ProtocolOp<'a> {
    /// The BER tag of this operation.
    pub fn tag(&self) -> u8 {
        use op_tag::*;
        match self {
            ProtocolOp::BindRequest(_) => BIND_REQUEST,
            ProtocolOp::BindResponse(_) => BIND_RESPONSE,
            ProtocolOp::UnbindRequest => UNBIND_REQUEST,
            ProtocolOp::SearchRequest(_) => SEARCH_REQUEST,
            ProtocolOp::SearchResultEntry(_) => SEARCH_RESULT_ENTRY,
            ProtocolOp::SearchResultDone(_) => SEARCH_RESULT_DONE,
            ProtocolOp::SearchResultReference(_) => SEARCH_RESULT_REFERENCE,
            ProtocolOp::ModifyRequest(_) => MODIFY_REQUEST,
            ProtocolOp::ModifyResponse(_) => MODIFY_RESPONSE,
            ProtocolOp::AddRequest(_) => ADD_REQUEST,
            ProtocolOp::AddResponse(_) => ADD_RESPONSE,
            ProtocolOp::DelRequest(_) => DEL_REQUEST,
            ProtocolOp::DelResponse(_) => DEL_RESPONSE,
            ProtocolOp::ModifyDnRequest(_) => MODIFY_DN_REQUEST,
            ProtocolOp::ModifyDnResponse(_) => MODIFY_DN_RESPONSE,
            ProtocolOp::CompareRequest(_) => COMPARE_REQUEST,
            ProtocolOp::CompareResponse(_) => COMPARE_RESPONSE,
            ProtocolOp::AbandonRequest(_) => ABANDON_REQUEST,
            ProtocolOp::ExtendedRequest(_) => EXTENDED_REQUEST,
            ProtocolOp::ExtendedResponse(_) => EXTENDED_RESPONSE,
            ProtocolOp::IntermediateResponse(_) => INTERMEDIATE_RESPONSE,
        }
    }

    /// The RFC 4511 name of this operation, for logs and diagnostics.
    pub fn name(&self) -> &'static str {
        op_name(self.tag()).unwrap_or("unknown")
    }

    /// True for the operations a client sends.
    pub fn is_request(&self) -> bool {
        matches!(
            self,
            ProtocolOp::BindRequest(_)
                | ProtocolOp::UnbindRequest
                | ProtocolOp::SearchRequest(_)
                | ProtocolOp::ModifyRequest(_)
                | ProtocolOp::AddRequest(_)
                | ProtocolOp::DelRequest(_)
                | ProtocolOp::ModifyDnRequest(_)
                | ProtocolOp::CompareRequest(_)
                | ProtocolOp::AbandonRequest(_)
                | ProtocolOp::ExtendedRequest(_)
        )
    }

    fn decode(t: u8, c: &'a [u8], filters: FilterCheck) -> Result<Self> {
        use op_tag::*;
        Ok(match t {
            BIND_REQUEST => ProtocolOp::BindRequest(BindRequest::decode_contents(c)?),
            BIND_RESPONSE => ProtocolOp::BindResponse(BindResponse::decode_contents(c)?),
            UNBIND_REQUEST => {
                if !c.is_empty() {
                    return Err(DecodeError::new(DecodeErrorKind::InvalidNull, "UnbindRequest"));
                }
                ProtocolOp::UnbindRequest
            }
            SEARCH_REQUEST => ProtocolOp::SearchRequest(SearchRequest::decode_contents_with(c, filters)?),
            SEARCH_RESULT_ENTRY => ProtocolOp::SearchResultEntry(SearchResultEntry::decode_contents(c)?),
            SEARCH_RESULT_DONE => {
                ProtocolOp::SearchResultDone(LdapResult::decode_contents(c, "SearchResultDone")?)
            }
            SEARCH_RESULT_REFERENCE => {
                ProtocolOp::SearchResultReference(SearchResultReference::decode_contents(c)?)
            }
            MODIFY_REQUEST => ProtocolOp::ModifyRequest(ModifyRequest::decode_contents(c)?),
            MODIFY_RESPONSE => ProtocolOp::ModifyResponse(LdapResult::decode_contents(c, "ModifyResponse")?),
            ADD_REQUEST => ProtocolOp::AddRequest(AddRequest::decode_contents(c)?),
            ADD_RESPONSE => ProtocolOp::AddResponse(LdapResult::decode_contents(c, "AddResponse")?),
            DEL_REQUEST => ProtocolOp::DelRequest(DelRequest { dn: c }),
            DEL_RESPONSE => ProtocolOp::DelResponse(LdapResult::decode_contents(c, "DelResponse")?),
            MODIFY_DN_REQUEST => ProtocolOp::ModifyDnRequest(ModifyDnRequest::decode_contents(c)?),
            MODIFY_DN_RESPONSE => {
                ProtocolOp::ModifyDnResponse(LdapResult::decode_contents(c, "ModifyDNResponse")?)
            }
            COMPARE_REQUEST => ProtocolOp::CompareRequest(CompareRequest::decode_contents(c)?),
            COMPARE_RESPONSE => {
                ProtocolOp::CompareResponse(LdapResult::decode_contents(c, "CompareResponse")?)
            }
            ABANDON_REQUEST => ProtocolOp::AbandonRequest(AbandonRequest::decode_contents(c)?),
            EXTENDED_REQUEST => ProtocolOp::ExtendedRequest(ExtendedRequest::decode_contents(c)?),
            EXTENDED_RESPONSE => ProtocolOp::ExtendedResponse(ExtendedResponse::decode_contents(c)?),
            INTERMEDIATE_RESPONSE => {
                ProtocolOp::IntermediateResponse(IntermediateResponse::decode_contents(c)?)
            }
            other => {
                return Err(DecodeError::new(
                    DecodeErrorKind::UnknownOperation { tag: other },
                    "LDAPMessage.protocolOp",
                ))
            }
        })
    }

    fn encode(&self, w: &mut Writer<'_>) {
        match self {
            ProtocolOp::UnbindRequest => w.null(op_tag::UNBIND_REQUEST),
            ProtocolOp::DelRequest(d) => w.octets(op_tag::DEL_REQUEST, d.dn),
            ProtocolOp::AbandonRequest(a) => w.integer(op_tag::ABANDON_REQUEST, i64::from(a.message_id)),
            _ => {
                let m = w.begin(self.tag());
                match self {
                    ProtocolOp::BindRequest(o) => o.encode_contents(w),
                    ProtocolOp::BindResponse(o) => o.encode_contents(w),
                    ProtocolOp::SearchRequest(o) => o.encode_contents(w),
                    ProtocolOp::SearchResultEntry(o) => o.encode_contents(w),
                    ProtocolOp::SearchResultReference(o) => o.encode_contents(w),
                    ProtocolOp::ModifyRequest(o) => o.encode_contents(w),
                    ProtocolOp::AddRequest(o) => o.encode_contents(w),
                    ProtocolOp::ModifyDnRequest(o) => o.encode_contents(w),
                    ProtocolOp::CompareRequest(o) => o.encode_contents(w),
                    ProtocolOp::ExtendedRequest(o) => o.encode_contents(w),
                    ProtocolOp::ExtendedResponse(o) => o.encode_contents(w),
                    ProtocolOp::IntermediateResponse(o) => o.encode_contents(w),
                    ProtocolOp::SearchResultDone(r)
                    | ProtocolOp::ModifyResponse(r)
                    | ProtocolOp::AddResponse(r)
                    | ProtocolOp::DelResponse(r)
                    | ProtocolOp::ModifyDnResponse(r)
                    | ProtocolOp::CompareResponse(r) => r.encode_into(w),
                    ProtocolOp::UnbindRequest | ProtocolOp::DelRequest(_) | ProtocolOp::AbandonRequest(_) => {
                    }
                }
                w.end(m);
            }
        }
    }
}

/// The RFC 4511 name of the operation with this tag.
pub fn op_name(t: u8) -> Option<&'static str> {
    use op_tag::*;
    Some(match t {
        BIND_REQUEST => "BindRequest",
        BIND_RESPONSE => "BindResponse",
        UNBIND_REQUEST => "UnbindRequest",
        SEARCH_REQUEST => "SearchRequest",
        SEARCH_RESULT_ENTRY => "SearchResultEntry",
        SEARCH_RESULT_DONE => "SearchResultDone",
        SEARCH_RESULT_REFERENCE => "SearchResultReference",
        MODIFY_REQUEST => "ModifyRequest",
        MODIFY_RESPONSE => "ModifyResponse",
        ADD_REQUEST => "AddRequest",
        ADD_RESPONSE => "AddResponse",
        DEL_REQUEST => "DelRequest",
        DEL_RESPONSE => "DelResponse",
        MODIFY_DN_REQUEST => "ModifyDNRequest",
        MODIFY_DN_RESPONSE => "ModifyDNResponse",
        COMPARE_REQUEST => "CompareRequest",
        COMPARE_RESPONSE => "CompareResponse",
        ABANDON_REQUEST => "AbandonRequest",
        EXTENDED_REQUEST => "ExtendedRequest",
        EXTENDED_RESPONSE => "ExtendedResponse",
        INTERMEDIATE_RESPONSE => "IntermediateResponse",
        _ => return None,
    })
}

impl<'a> LdapMessage<'a> {
    /// A message with no controls.
    pub const fn new(message_id: MessageId, op: ProtocolOp<'a>) -> Self {
        LdapMessage {
            message_id,
            op,
            controls: None,
        }
    }

    /// Decodes one complete LDAPMessage. `pdu` must be exactly one framed PDU (see
    /// [`crate::frame`]); nothing is copied and nothing is allocated.
    ///
    /// On failure, [`DecodeError::message_id`] is set whenever the message ID had been read,
    /// so a server can answer that operation with `protocolError`.
    pub fn decode(pdu: &'a [u8]) -> Result<Self> {
        Self::decode_with(pdu, FilterCheck::Validate)
    }

    /// Decodes a copy of a PDU that [`LdapMessage::decode`] accepted before, without
    /// validating a search filter again (the access log's writer prints requests the
    /// server already decoded). Octets that were not accepted before still decode or fail
    /// without a panic; a malformed filter in them reads as `Unknown` nodes.
    pub fn decode_validated_before(pdu: &'a [u8]) -> Result<Self> {
        Self::decode_with(pdu, FilterCheck::ValidatedBefore)
    }

    fn decode_with(pdu: &'a [u8], filters: FilterCheck) -> Result<Self> {
        let mut outer = Reader::new(pdu);
        let mut r = outer.read_constructed(tag::SEQUENCE, "LDAPMessage")?;
        outer.finish("LDAPMessage")?;
        let id = r.read_integer_in(
            tag::INTEGER,
            0,
            i64::from(MAX_MESSAGE_ID),
            "LDAPMessage.messageID",
        )? as MessageId;
        Self::decode_rest(&mut r, id, filters).map_err(|e| e.with_message_id(id))
    }

    fn decode_rest(r: &mut Reader<'a>, message_id: MessageId, filters: FilterCheck) -> Result<Self> {
        let (t, contents, _) = r.read_any("LDAPMessage.protocolOp")?;
        if t & tag::CLASS_MASK != tag::APPLICATION {
            return Err(DecodeError::new(
                DecodeErrorKind::UnknownOperation { tag: t },
                "LDAPMessage.protocolOp",
            ));
        }
        let op = ProtocolOp::decode(t, contents, filters)?;
        let controls = match r.read_optional(CONTROLS_TAG, "LDAPMessage.controls")? {
            Some(c) => Some(SeqOf::decode_contents(c)?),
            None => None,
        };
        r.finish_sequence_where("LDAPMessage", |t| {
            t & !tag::CONSTRUCTED == tag::INTEGER
                || t & tag::CLASS_MASK == tag::APPLICATION
                || t | tag::CONSTRUCTED == CONTROLS_TAG
        })?;
        Ok(LdapMessage {
            message_id,
            op,
            controls,
        })
    }

    /// Appends the BER encoding of this message to `out` (minimal, definite lengths).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer::new(out);
        let m = w.begin(tag::SEQUENCE);
        w.integer(tag::INTEGER, i64::from(self.message_id));
        self.op.encode(&mut w);
        if let Some(controls) = &self.controls {
            let c = w.begin(CONTROLS_TAG);
            controls.encode_contents(&mut w);
            w.end(c);
        }
        w.end(m);
    }

    /// The controls, or an empty list when there are none.
    pub fn controls(&self) -> SeqOf<'a, Control<'a>> {
        self.controls.unwrap_or_default()
    }
}
