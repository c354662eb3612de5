//! Basic Encoding Rules, the subset LDAP uses (RFC 4511 section 5.1): single-octet tags,
//! definite lengths, primitive OCTET STRING / INTEGER / ENUMERATED / BOOLEAN / NULL, and
//! constructed SEQUENCE / SET.
//!
//! Hand-written rather than taken from a crate: this is the hottest code in the server, and
//! the general ASN.1 crates allocate per element and decode several times slower than a
//! walk over borrowed slices.

pub(crate) mod reader;
mod writer;

pub use reader::Reader;
pub use writer::{Mark, Writer};

/// BER tag octets used by LDAP.
pub mod tag {
    /// Universal BOOLEAN.
    pub const BOOLEAN: u8 = 0x01;
    /// Universal INTEGER.
    pub const INTEGER: u8 = 0x02;
    /// Universal OCTET STRING (also LDAPString, LDAPDN, LDAPOID).
    pub const OCTET_STRING: u8 = 0x04;
    /// Universal NULL.
    pub const NULL: u8 = 0x05;
    /// Universal ENUMERATED.
    pub const ENUMERATED: u8 = 0x0a;
    /// Universal SEQUENCE / SEQUENCE OF (constructed).
    pub const SEQUENCE: u8 = 0x30;
    /// Universal SET / SET OF (constructed).
    pub const SET: u8 = 0x31;

    /// Class bits of a tag octet.
    pub const CLASS_MASK: u8 = 0xc0;
    /// Application class.
    pub const APPLICATION: u8 = 0x40;
    /// Context-specific class.
    pub const CONTEXT: u8 = 0x80;
    /// The constructed bit.
    pub const CONSTRUCTED: u8 = 0x20;
    /// Tag-number bits of a single-octet tag; all ones means the high-tag-number form.
    pub const NUMBER_MASK: u8 = 0x1f;

    /// Context-specific primitive tag `[n]`.
    pub const fn context(n: u8) -> u8 {
        CONTEXT | n
    }
    /// Context-specific constructed tag `[n]`.
    pub const fn context_constructed(n: u8) -> u8 {
        CONTEXT | CONSTRUCTED | n
    }
}

/// Octets needed to encode a definite length of `len`.
#[inline]
pub const fn length_octets(len: usize) -> usize {
    if len < 0x80 {
        1
    } else {
        1 + (usize::BITS as usize / 8) - (len.leading_zeros() as usize / 8)
    }
}

/// Octets of a whole TLV whose contents are `content_len` octets (single-octet tag).
#[inline]
pub const fn tlv_len(content_len: usize) -> usize {
    1 + length_octets(content_len) + content_len
}

/// Octets of the minimal two's-complement content of an INTEGER with this value.
#[inline]
pub const fn integer_octets(value: i64) -> usize {
    let mut n = 1;
    let mut v = value;
    while !(v >= -128 && v <= 127) {
        v >>= 8;
        n += 1;
    }
    n
}
