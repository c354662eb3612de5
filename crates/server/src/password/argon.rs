//! `{ARGON2}`: Argon2 (RFC 9106) in the PHC string format, as OpenLDAP's `argon2` module
//! writes it: `{ARGON2}$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`, salt and hash in
//! base64 without padding. `argon2i`, `argon2id` and `argon2d` are accepted, `v=19` and
//! `v=16` (no `v=` means 16, as in the reference implementation); the parameters come in
//! the order `m`, `t`, `p` (the reference decoder's order).
//!
//! Work bound: the memory (`m`, KiB), passes (`t`) and lanes (`p`) are read from the
//! stored value, which can come from an LDIF import; a value asking for more than
//! [`MAX_ARGON2_MEMORY_KIB`], [`MAX_ARGON2_PASSES`] or [`MAX_ARGON2_LANES`] never
//! verifies. Checking costs tens of milliseconds: binds run it on a blocking thread, and at
//! most a few checks run at once (`super::gate`), which bounds the memory they take.
//!
//! New hashes: argon2id, version 19, with OWASP's parameters ([`ARGON2_MEMORY_KIB`],
//! [`ARGON2_PASSES`], [`ARGON2_LANES`]), a 16-octet salt and a 32-octet hash.

use argon2::{Algorithm, Argon2, Params, Version};
use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use subtle::ConstantTimeEq;

/// Memory of a new hash, KiB: OWASP's password storage recommendation for argon2id
/// (19 MiB with 2 passes and 1 lane).
pub const ARGON2_MEMORY_KIB: u32 = 19 * 1024;

/// Passes of a new hash (OWASP).
pub const ARGON2_PASSES: u32 = 2;

/// Lanes of a new hash (OWASP).
pub const ARGON2_LANES: u32 = 1;

/// Salt of a new hash, in octets (RFC 9106 recommends 16).
pub const ARGON2_SALT_LEN: usize = 16;

/// Hash of a new hash, in octets (RFC 9106's tag length for password hashing).
pub const ARGON2_HASH_LEN: usize = 32;

/// Most memory a stored value may ask for, KiB: 64 MiB, RFC 9106's second recommended
/// option; more times the concurrent checks would take a server's memory.
pub const MAX_ARGON2_MEMORY_KIB: u32 = 64 * 1024;

/// Most passes a stored value may ask for: 10 passes over 64 MiB are about a second.
pub const MAX_ARGON2_PASSES: u32 = 10;

/// Most lanes a stored value may ask for (they run one after the other here).
pub const MAX_ARGON2_LANES: u32 = 16;

/// Salt lengths accepted in a stored value (Argon2's minimum is 8 octets).
const SALT_LEN: std::ops::RangeInclusive<usize> = 8..=64;

/// Hash lengths accepted in a stored value (Argon2's minimum is 4 octets).
const HASH_LEN: std::ops::RangeInclusive<usize> = 4..=128;

/// The PHC strings' base64: standard alphabet, no padding (padding tolerated on input).
fn b64() -> GeneralPurpose {
    GeneralPurpose::new(
        &alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_encode_padding(false)
            .with_decode_padding_mode(DecodePaddingMode::Indifferent),
    )
}

/// A decimal number without sign or leading zero.
fn number(text: &str) -> Option<u32> {
    let ok = !text.is_empty()
        && text.len() <= 10
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    if ok {
        text.parse().ok()
    } else {
        None
    }
}

/// A parsed PHC string.
struct Phc {
    algorithm: Algorithm,
    version: Version,
    m: u32,
    t: u32,
    p: u32,
    salt: Vec<u8>,
    hash: Vec<u8>,
}

/// Parses `$argon2id$v=19$m=..,t=..,p=..$salt$hash`; `None` when malformed or above the
/// work bounds.
fn parse(encoded: &[u8]) -> Option<Phc> {
    let text = std::str::from_utf8(encoded.trim_ascii()).ok()?;
    let mut fields = text.split('$');
    if !fields.next()?.is_empty() {
        return None;
    }
    let algorithm = match fields.next()? {
        "argon2id" => Algorithm::Argon2id,
        "argon2i" => Algorithm::Argon2i,
        "argon2d" => Algorithm::Argon2d,
        _ => return None,
    };
    let mut field = fields.next()?;
    let version = match field.strip_prefix("v=") {
        Some(v) => {
            field = fields.next()?;
            match number(v)? {
                0x13 => Version::V0x13,
                0x10 => Version::V0x10,
                _ => return None,
            }
        }
        None => Version::V0x10,
    };
    let mut params = field.split(',');
    let m = number(params.next()?.strip_prefix("m=")?)?;
    let t = number(params.next()?.strip_prefix("t=")?)?;
    let p = number(params.next()?.strip_prefix("p=")?)?;
    if params.next().is_some() {
        return None;
    }
    let salt = b64().decode(fields.next()?).ok()?;
    let hash = b64().decode(fields.next()?).ok()?;
    if fields.next().is_some() {
        return None;
    }
    let within = m <= MAX_ARGON2_MEMORY_KIB
        && (1..=MAX_ARGON2_PASSES).contains(&t)
        && (1..=MAX_ARGON2_LANES).contains(&p)
        && SALT_LEN.contains(&salt.len())
        && HASH_LEN.contains(&hash.len());
    within.then_some(Phc {
        algorithm,
        version,
        m,
        t,
        p,
        salt,
        hash,
    })
}

/// True when `password` matches `encoded` (what follows `{ARGON2}`).
pub(super) fn verify(password: &[u8], encoded: &[u8]) -> bool {
    let Some(phc) = parse(encoded) else {
        return false;
    };
    let Ok(params) = Params::new(phc.m, phc.t, phc.p, Some(phc.hash.len())) else {
        return false;
    };
    let mut out = vec![0u8; phc.hash.len()];
    if Argon2::new(phc.algorithm, phc.version, params)
        .hash_password_into(password, &phc.salt, &mut out)
        .is_err()
    {
        return false;
    }
    bool::from(out.as_slice().ct_eq(&phc.hash))
}

/// The PHC string of a new argon2id hash of `password` with `salt` (without `{ARGON2}`);
/// `None` only if the library refuses the fixed parameters or cannot allocate.
pub(super) fn encode(password: &[u8], salt: &[u8]) -> Option<String> {
    let params = Params::new(
        ARGON2_MEMORY_KIB,
        ARGON2_PASSES,
        ARGON2_LANES,
        Some(ARGON2_HASH_LEN),
    )
    .ok()?;
    let mut out = [0u8; ARGON2_HASH_LEN];
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password_into(password, salt, &mut out)
        .ok()?;
    Some(format!(
        "$argon2id$v=19$m={ARGON2_MEMORY_KIB},t={ARGON2_PASSES},p={ARGON2_LANES}${}${}",
        b64().encode(salt),
        b64().encode(out)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_and_oversized_values_are_refused_before_any_work() {
        // The phc-winner-argon2 vector with its parameters raised past the bounds.
        let ok = "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc";
        assert!(parse(ok.as_bytes()).is_some());
        for bad in [
            "$argon2id$v=19$m=65537,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
            "$argon2id$v=19$m=65536,t=11,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
            "$argon2id$v=19$m=65536,t=2,p=17$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
            "$argon2id$v=19$m=65536,t=0,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
            "$argon2id$v=18$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
            "$argon2id$v=19$t=2,m=65536,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
            "$argon2id$v=19$m=065536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
            "$argon2id$v=19$m=65536,t=2,p=1$c29tZQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
            "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc$",
            "$argon2x$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
            "argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
            "$argon2id$v=19$m=99999999999,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
            "$argon2id",
            "",
        ] {
            assert!(parse(bad.as_bytes()).is_none(), "{bad}");
            assert!(!verify(b"password", bad.as_bytes()), "{bad}");
        }
    }
}
