//! Decode errors. Each says what was wrong and where, and carries the message ID when it was
//! readable, so a server can answer `protocolError` for that one operation instead of
//! dropping the whole connection.

use crate::message::MessageId;

/// What was wrong with the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The input ended inside an element.
    #[error("the data ends before the element does")]
    Truncated,
    /// A tag other than the one the grammar requires.
    #[error("expected tag 0x{expected:02x}, found 0x{found:02x}")]
    UnexpectedTag {
        /// The tag the grammar requires here.
        expected: u8,
        /// The tag that was present.
        found: u8,
    },
    /// A tag that is not allowed in this position (no single expected value).
    #[error("tag 0x{found:02x} is not allowed here")]
    InvalidTag {
        /// The tag that was present.
        found: u8,
    },
    /// The high-tag-number form (tag number >= 31), which LDAP never uses.
    #[error("multi-octet (high tag number) tags are not used by LDAP")]
    HighTagNumber,
    /// The BER indefinite length form (0x80), which RFC 4511 section 5.1 forbids.
    #[error("indefinite lengths are not allowed in LDAP (RFC 4511 section 5.1)")]
    IndefiniteLength,
    /// A long-form length with more octets than the codec accepts, or the reserved 0xFF.
    #[error("the length field is longer than {max} octets", max = crate::limits::MAX_LENGTH_OCTETS)]
    LengthTooLong,
    /// A declared PDU length above the configured limit.
    #[error("the message declares {declared} octets, above the limit of {limit}")]
    PduTooLarge {
        /// Octets the client declared (tag and length included).
        declared: u64,
        /// The configured limit.
        limit: usize,
    },
    /// A primitive element where a constructed one is needed, or the reverse.
    #[error("an INTEGER, ENUMERATED or BOOLEAN has an invalid encoding")]
    InvalidPrimitive,
    /// An INTEGER or ENUMERATED outside the range the grammar allows.
    #[error("the value {value} is out of range")]
    OutOfRange {
        /// The decoded value (saturated to i64).
        value: i64,
    },
    /// An ENUMERATED value the grammar does not define.
    #[error("{value} is not a defined value")]
    UnknownEnumerated {
        /// The decoded value.
        value: i64,
    },
    /// Octets after the last element that are not themselves a well-formed element (or,
    /// where nothing may follow, any octets at all).
    #[error("unexpected data after the last element")]
    TrailingData,
    /// A component of this SEQUENCE out of place, repeated, or in the wrong form.
    #[error("tag 0x{tag:02x} belongs to this element but is out of place, repeated or in the wrong form")]
    MisplacedComponent {
        /// The tag that was present.
        tag: u8,
    },
    /// A NULL with content.
    #[error("a NULL must be empty")]
    InvalidNull,
    /// The protocolOp tag is not an LDAP operation.
    #[error("0x{tag:02x} is not an LDAP operation")]
    UnknownOperation {
        /// The tag that was present.
        tag: u8,
    },
    /// A set that must hold at least one element was empty.
    #[error("must hold at least one element")]
    Empty,
    /// A search filter nested deeper than [`crate::limits::MAX_FILTER_DEPTH`].
    #[error("the filter is nested deeper than {limit} levels")]
    FilterTooDeep {
        /// The limit.
        limit: usize,
    },
    /// A `not` filter with no or several sub-filters.
    #[error("a `not` filter must hold exactly one filter")]
    NotArity,
    /// Substrings out of order: `initial` must come first, `final` last, each at most once.
    #[error("`initial` must be first and `final` last, each at most once (RFC 4511 4.5.1.7.2)")]
    SubstringOrder,
    /// An extensible match with neither a matching rule nor an attribute type.
    #[error("an extensible match needs a matching rule, a type or both (RFC 4511 4.5.1.7.7)")]
    ExtensibleMatchIncomplete,
    /// A control or extended operation value that is not what its specification says.
    #[error("the value does not follow its specification")]
    InvalidValue,
}

/// A decode failure: what ([`DecodeErrorKind`]), where (the element being decoded), and the
/// message ID when it had been read before the failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{context}: {kind}")]
pub struct DecodeError {
    /// What was wrong.
    pub kind: DecodeErrorKind,
    /// The element being decoded, e.g. `"SearchRequest.scope"`.
    pub context: &'static str,
    /// The message ID of the LDAPMessage, if it had been decoded before the failure.
    pub message_id: Option<MessageId>,
}

impl DecodeError {
    pub(crate) const fn new(kind: DecodeErrorKind, context: &'static str) -> Self {
        DecodeError {
            kind,
            context,
            message_id: None,
        }
    }

    /// Attaches the message ID once the caller knows it.
    #[must_use]
    pub(crate) fn with_message_id(mut self, id: MessageId) -> Self {
        self.message_id = Some(id);
        self
    }

    /// Replaces the context with a more specific one.
    #[must_use]
    pub(crate) fn within(mut self, context: &'static str) -> Self {
        self.context = context;
        self
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = DecodeError> = std::result::Result<T, E>;
