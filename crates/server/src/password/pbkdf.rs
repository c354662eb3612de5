//! PBKDF2 (RFC 8018) schemes.
//!
//! Two stored forms:
//! 1. OpenLDAP's `pw-pbkdf2` module, passlib's `ldap_pbkdf2_*` and 389-ds's newer
//!    `{PBKDF2-SHA*}` schemes: `{PBKDF2-SHA512}<rounds>$<salt>$<derived key>`, salt and key
//!    in "adapted base64" (the standard alphabet with `.` for `+`, no padding). `{PBKDF2}`
//!    and `{PBKDF2-SHA1}` use HMAC-SHA1, `{PBKDF2-SHA256}` HMAC-SHA256, `{PBKDF2-SHA512}`
//!    HMAC-SHA512; the derived key is as long as the digest (as slapd requires).
//! 2. 389-ds's older `{PBKDF2_SHA256}`: base64 of 324 octets, the rounds (4 octets, big
//!    endian), a 64-octet salt and a 256-octet HMAC-SHA256 key (389-ds's `pbkdf2_pwd.c`).
//!
//! Work bound: a stored value names its own round count, and stored values can come from
//! LDIF imports, so a count above [`MAX_PBKDF2_ROUNDS`] never verifies instead of costing
//! seconds per bind. PBKDF2 is slow on purpose: binds check it on a blocking thread.

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD as B64};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use sha1::Sha1;
use sha2::{Sha256, Sha512};
use subtle::ConstantTimeEq;

/// Most PBKDF2 rounds a stored value may ask for: OWASP's 2023 figure for PBKDF2-SHA1
/// (1,300,000) with room to spare; about half a second of one core for SHA-512.
pub const MAX_PBKDF2_ROUNDS: u32 = 2_000_000;

/// Rounds of a new `{PBKDF2-SHA512}` hash: passlib's default for `ldap_pbkdf2_sha512`,
/// about 8 ms of one core, a quarter of argon2id's default cost. OWASP asks for 210,000
/// for PBKDF2-SHA512; this scheme is the documented faster choice, not the stronger one.
pub const PBKDF2_SHA512_ROUNDS: u32 = 25_000;

/// Salt of a new `{PBKDF2-SHA512}` hash, in octets (as OpenLDAP's `pw-pbkdf2`).
pub const PBKDF2_SALT_LEN: usize = 16;

/// 389-ds's `{PBKDF2_SHA256}`: rounds, salt and key lengths ("NEVER CHANGE THESE VALUES"
/// in its source).
pub const DS389_SALT_LEN: usize = 64;
const DS389_KEY_LEN: usize = 256;
const DS389_TOTAL_LEN: usize = 4 + DS389_SALT_LEN + DS389_KEY_LEN;

/// Longest salt looked at in the OpenLDAP form (slapd writes 16 octets; passlib up to 1024).
const MAX_SALT_LEN: usize = 1024;

/// The HMAC digest of a PBKDF2 scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prf {
    /// HMAC-SHA1 (`{PBKDF2}`, `{PBKDF2-SHA1}`).
    Sha1,
    /// HMAC-SHA256.
    Sha256,
    /// HMAC-SHA512.
    Sha512,
}

impl Prf {
    fn len(self) -> usize {
        match self {
            Prf::Sha1 => 20,
            Prf::Sha256 => 32,
            Prf::Sha512 => 64,
        }
    }

    fn derive(self, password: &[u8], salt: &[u8], rounds: u32, out: &mut [u8]) {
        match self {
            Prf::Sha1 => pbkdf2::pbkdf2_hmac::<Sha1>(password, salt, rounds, out),
            Prf::Sha256 => pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, rounds, out),
            Prf::Sha512 => pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, rounds, out),
        }
    }
}

/// Adapted base64 (passlib's `ab64`): the standard alphabet with `.` in place of `+`,
/// padding optional.
fn ab64() -> GeneralPurpose {
    GeneralPurpose::new(
        &alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_encode_padding(false)
            .with_decode_padding_mode(DecodePaddingMode::Indifferent),
    )
}

fn ab64_decode(text: &[u8]) -> Option<Vec<u8>> {
    let standard: Vec<u8> = text.iter().map(|&b| if b == b'.' { b'+' } else { b }).collect();
    ab64().decode(standard).ok()
}

fn ab64_encode(raw: &[u8]) -> String {
    ab64().encode(raw).replace('+', ".")
}

/// A round count: decimal digits, 1 to [`MAX_PBKDF2_ROUNDS`].
fn rounds(text: &[u8]) -> Option<u32> {
    if text.is_empty() || text.len() > 10 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u32 = std::str::from_utf8(text).ok()?.parse().ok()?;
    (1..=MAX_PBKDF2_ROUNDS).contains(&n).then_some(n)
}

/// True when `password` matches `encoded` in the OpenLDAP form (`rounds$salt$key`).
pub(super) fn verify(prf: Prf, password: &[u8], encoded: &[u8]) -> bool {
    let mut parts = encoded.trim_ascii().split(|&b| b == b'$');
    let (Some(r), Some(s), Some(k), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let (Some(rounds), Some(salt), Some(key)) = (rounds(r), ab64_decode(s), ab64_decode(k)) else {
        return false;
    };
    if salt.is_empty() || salt.len() > MAX_SALT_LEN || key.len() != prf.len() {
        return false;
    }
    let mut out = vec![0u8; key.len()];
    prf.derive(password, &salt, rounds, &mut out);
    bool::from(out.as_slice().ct_eq(&key))
}

/// True when `password` matches `encoded` in 389-ds's `{PBKDF2_SHA256}` form.
pub(super) fn verify_389(password: &[u8], encoded: &[u8]) -> bool {
    let Ok(raw) = B64.decode(encoded.trim_ascii()) else {
        return false;
    };
    if raw.len() != DS389_TOTAL_LEN {
        return false;
    }
    let (head, rest) = raw.split_at(4);
    let (salt, key) = rest.split_at(DS389_SALT_LEN);
    let rounds = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    if !(1..=MAX_PBKDF2_ROUNDS).contains(&rounds) {
        return false;
    }
    let mut out = vec![0u8; DS389_KEY_LEN];
    Prf::Sha256.derive(password, salt, rounds, &mut out);
    bool::from(out.as_slice().ct_eq(key))
}

/// 389-ds's `{PBKDF2_SHA256}` form of `password` (without the scheme name): the rounds
/// (big-endian), the salt and the key in one base64 string. `salt` must be
/// [`DS389_SALT_LEN`] octets; `None` otherwise.
pub(super) fn encode_389(password: &[u8], salt: &[u8], rounds: u32) -> Option<String> {
    if salt.len() != DS389_SALT_LEN {
        return None;
    }
    let mut raw = Vec::with_capacity(DS389_TOTAL_LEN);
    raw.extend_from_slice(&rounds.to_be_bytes());
    raw.extend_from_slice(salt);
    let mut key = vec![0u8; DS389_KEY_LEN];
    Prf::Sha256.derive(password, salt, rounds, &mut key);
    raw.extend_from_slice(&key);
    Some(B64.encode(raw))
}

/// The OpenLDAP form of `password` (without the scheme name) with `salt` and `rounds`.
pub(super) fn encode(prf: Prf, password: &[u8], salt: &[u8], rounds: u32) -> String {
    let mut key = vec![0u8; prf.len()];
    prf.derive(password, salt, rounds, &mut key);
    format!("{rounds}${}${}", ab64_encode(salt), ab64_encode(&key))
}
