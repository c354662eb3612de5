//! Named limits of the codec. Every bound on input-derived work lives here, so an operator
//! or a reviewer can see at a glance what a hostile client can make the decoder do.

/// Default upper bound on one LDAPMessage, tag and length octets included (8 MiB).
///
/// A client that declares a longer PDU is refused before any of it is buffered. OpenLDAP's
/// default for authenticated sessions (`sockbuf_max_incoming_auth`) is 4 MiB; Larch allows
/// twice that so large `jpegPhoto` or certificate adds still fit. The server makes it
/// configurable; the codec only enforces the number it is given.
pub const DEFAULT_MAX_PDU_BYTES: usize = 8 * 1024 * 1024;

/// Deepest nesting of `and`, `or` and `not` accepted in a search filter (BER or RFC 4515
/// string). Filters are the only recursive structure in LDAP; validation walks them with an
/// explicit stack of this many frames, never with recursion. Real clients stay below 10.
pub const MAX_FILTER_DEPTH: usize = 64;

/// Most length octets accepted in a long-form BER length, leading zero octets included.
///
/// RFC 4511 section 5.1 lets clients send non-minimal lengths, so leading zeros are
/// tolerated, but a length spread over more octets than this is refused as hostile.
pub const MAX_LENGTH_OCTETS: usize = 16;

/// Most content octets accepted in an INTEGER or ENUMERATED (leading sign octets included).
/// Every LDAP integer fits in 32 bits; 9 octets allow a redundant sign octet on an `i64`.
pub const MAX_INTEGER_OCTETS: usize = 9;

/// Largest `MessageID` (RFC 4511 `maxInt`, 2^31 - 1).
pub const MAX_MESSAGE_ID: i32 = i32::MAX;

/// Highest LDAP protocol version a BindRequest may carry (RFC 4511: `INTEGER (1 .. 127)`).
pub const MAX_PROTOCOL_VERSION: i64 = 127;
