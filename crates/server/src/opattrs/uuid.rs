//! Random version-4 UUIDs (RFC 9562 section 5.4, formerly RFC 4122) for `entryUUID`, in the
//! text form of RFC 4530's UUID syntax (1.3.6.1.1.16.1): 32 lowercase hex digits grouped
//! 8-4-4-4-12 with hyphens, as OpenLDAP writes them.
//!
//! How one is made:
//! 1. 16 bytes come from the operating system's random source;
//! 2. the top four bits of byte 6 become the version, `0100`;
//! 3. the top two bits of byte 8 become the variant, `10` (RFC 9562);
//! 4. the bytes are written as hex, a hyphen after bytes 4, 6, 8 and 10.

use std::fmt;

/// A UUID as its 16 bytes, most significant first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Uuid(pub [u8; 16]);

/// The operating system's random source failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("no random bytes for a UUID: {0}")]
pub struct RandomError(String);

impl Uuid {
    /// A new random version-4 UUID.
    pub fn new_v4() -> Result<Uuid, RandomError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| RandomError(e.to_string()))?;
        Ok(Uuid::v4_from_bytes(bytes))
    }

    /// The version-4 UUID made of `bytes` (random in use), version and variant bits set.
    pub fn v4_from_bytes(mut bytes: [u8; 16]) -> Uuid {
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        Uuid(bytes)
    }

    /// The version field (the top four bits of byte 6).
    pub fn version(&self) -> u8 {
        self.0[6] >> 4
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}
