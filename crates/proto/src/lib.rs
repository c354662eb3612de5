//! `larch-proto`: the LDAPv3 wire protocol (RFC 4511) as a zero-copy BER codec.
//!
//! What it is:
//! - [`frame::frame`] finds the end of one PDU in a byte stream and refuses oversized or
//!   malformed headers before the body is buffered;
//! - [`LdapMessage::decode`] decodes one PDU into a message that *borrows* from the buffer:
//!   no copy, no heap allocation, no recursion (lists and filters are validated once and
//!   read lazily through [`SeqOf`] and [`Filter`]);
//! - [`LdapMessage::encode`] appends a message to a reused `Vec<u8>` with minimal lengths,
//!   and [`encode_search_result_entry`] writes an entry from its stored BER form with one
//!   exact header and two copies;
//! - typed controls ([`controls`]) and extended operations ([`exop`]);
//! - RFC 4515 string filters to and from BER ([`OwnedFilter::parse`], `Display`).
//!
//! What it is not: no I/O, no sockets, no schema, no DN parsing (that is `larch-model`),
//! no policy (which result code a server sends for what is the server's business; this
//! crate only reports what was wrong and the message ID it had read).
//!
//! Every limit on input-driven work is a named constant in [`limits`].
//!
//! ```
//! use larch_proto::{frame::{frame, Frame}, LdapMessage, ProtocolOp, limits::DEFAULT_MAX_PDU_BYTES};
//! // A pipelined stream: two anonymous binds.
//! let bind = [0x30, 0x0c, 0x02, 0x01, 0x01, 0x60, 0x07, 0x02, 0x01, 0x03, 0x04, 0x00, 0x80, 0x00];
//! let stream = [bind, bind].concat();
//! let mut rest = &stream[..];
//! let mut seen = 0;
//! while let Frame::Complete(n) = frame(rest, DEFAULT_MAX_PDU_BYTES).unwrap() {
//!     let msg = LdapMessage::decode(&rest[..n]).unwrap();
//!     assert!(matches!(msg.op, ProtocolOp::BindRequest(_)));
//!     rest = &rest[n..];
//!     seen += 1;
//! }
//! assert_eq!(seen, 2);
//! ```

#![forbid(unsafe_code)]

pub mod ber;
pub mod controls;
mod error;
pub mod exop;
mod filter;
pub mod frame;
pub mod limits;
mod message;
mod ops;
mod result;
mod seq;

pub use error::{DecodeError, DecodeErrorKind, Result};
pub use filter::{
    filter_tag, AttributeValueAssertion, Filter, FilterBuilder, FilterNode, FilterParseError, FilterSet,
    FilterSetIter, MatchingRuleAssertion, OwnedFilter, Substring, SubstringFilter,
};
pub use message::{op_name, op_tag, LdapMessage, MessageId, ProtocolOp, CONTROLS_TAG};
pub use ops::*;
pub use result::{LdapResult, ResultCode};
pub use seq::{Element, SeqIter, SeqOf};
