//! userPassword values (RFC 2307 / RFC 3112 storage schemes): checking a password against
//! a stored value, and hashing a new one.
//!
//! Schemes verified here: `{SSHA}`, `{SHA}`, `{SSHA256}`, `{SHA256}`, `{SSHA384}`,
//! `{SHA384}`, `{SSHA512}`, `{SHA512}` (digest, then salt for the salted forms, in base64:
//! the layout OpenLDAP's `slappasswd` and 389-ds write), and a value without a scheme,
//! compared as cleartext (as OpenLDAP does for a plain userPassword). Any other `{SCHEME}`
//! never verifies. New passwords are hashed with [`DEFAULT_SCHEME`].
//!
//! Every comparison of secrets is constant-time in the length of the digest (`subtle`).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha384, Sha512};
use subtle::ConstantTimeEq;

/// The scheme new passwords are stored in.
pub const DEFAULT_SCHEME: &str = "SSHA512";

/// Salt length of new hashes: 16 octets, as 389-ds uses for its salted SHA-2 schemes.
pub const SALT_LEN: usize = 16;

/// Longest stored value or presented password looked at (a hash in base64 is under 200
/// octets; anything far longer is refused without hashing it).
pub const MAX_PASSWORD_BYTES: usize = 4096;

/// The digest functions of the schemes, by name.
fn digest(scheme: &str, parts: &[&[u8]]) -> Option<Vec<u8>> {
    fn run<D: Digest>(parts: &[&[u8]]) -> Vec<u8> {
        let mut d = D::new();
        for p in parts {
            d.update(p);
        }
        d.finalize().to_vec()
    }
    Some(match scheme {
        "SHA" | "SSHA" => run::<Sha1>(parts),
        "SHA256" | "SSHA256" => run::<Sha256>(parts),
        "SHA384" | "SSHA384" => run::<Sha384>(parts),
        "SHA512" | "SSHA512" => run::<Sha512>(parts),
        _ => return None,
    })
}

/// The digest length of a scheme.
fn digest_len(scheme: &str) -> Option<usize> {
    Some(match scheme {
        "SHA" | "SSHA" => 20,
        "SHA256" | "SSHA256" => 32,
        "SHA384" | "SSHA384" => 48,
        "SHA512" | "SSHA512" => 64,
        _ => return None,
    })
}

/// Splits `{SCHEME}rest` into the upper-cased scheme and the rest.
fn split_scheme(stored: &[u8]) -> Option<(String, &[u8])> {
    if stored.first() != Some(&b'{') {
        return None;
    }
    let end = stored.iter().position(|&b| b == b'}')?;
    let scheme = std::str::from_utf8(&stored[1..end]).ok()?.to_ascii_uppercase();
    Some((scheme, &stored[end + 1..]))
}

/// True when `password` matches the stored userPassword value `stored`.
pub fn verify(password: &[u8], stored: &[u8]) -> bool {
    if password.len() > MAX_PASSWORD_BYTES || stored.len() > MAX_PASSWORD_BYTES {
        return false;
    }
    let Some((scheme, rest)) = split_scheme(stored) else {
        return bool::from(password.ct_eq(stored));
    };
    let (Some(len), Ok(decoded)) = (digest_len(&scheme), B64.decode(rest.trim_ascii())) else {
        return false;
    };
    let salted = scheme.starts_with('S');
    if decoded.len() < len || (!salted && decoded.len() != len) {
        return false;
    }
    let (hash, salt) = decoded.split_at(len);
    match digest(&scheme, &[password, salt]) {
        Some(computed) => bool::from(computed.as_slice().ct_eq(hash)),
        None => false,
    }
}

/// Hashes `password` with [`DEFAULT_SCHEME`] and a fresh random salt.
pub fn hash(password: &[u8]) -> Result<Vec<u8>, getrandom::Error> {
    let mut salt = [0u8; SALT_LEN];
    getrandom::fill(&mut salt)?;
    Ok(hash_with_salt(DEFAULT_SCHEME, password, &salt).unwrap_or_default())
}

/// Hashes `password` in a salted or unsalted SHA scheme with `salt` (ignored by the
/// unsalted ones); `None` for a scheme not listed in the module documentation.
pub fn hash_with_salt(scheme: &str, password: &[u8], salt: &[u8]) -> Option<Vec<u8>> {
    let scheme = scheme.to_ascii_uppercase();
    let salted = scheme.starts_with('S');
    let salt = if salted { salt } else { &[] };
    let mut raw = digest(&scheme, &[password, salt])?;
    raw.extend_from_slice(salt);
    Some(format!("{{{scheme}}}{}", B64.encode(raw)).into_bytes())
}

/// A random password for a generated administrator account: 24 characters from a
/// 62-letter alphabet (about 142 bits).
pub fn generate() -> Result<String, getrandom::Error> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = String::with_capacity(24);
    while out.len() < 24 {
        let mut b = [0u8; 32];
        getrandom::fill(&mut b)?;
        // Rejection sampling keeps the letters uniform: 248 = 4 * 62.
        out.extend(
            b.iter()
                .filter(|&&x| x < 248)
                .map(|&x| ALPHABET[usize::from(x % 62)] as char),
        );
    }
    out.truncate(24);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slappasswd_vectors_verify() {
        // Produced by OpenLDAP's `slappasswd -h {SSHA} -s secret` and `-h {SHA}`.
        assert!(verify(b"secret", b"{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ="));
        assert!(!verify(b"Secret", b"{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ="));
        let ssha = hash_with_salt("SSHA", b"secret", b"salt").unwrap();
        assert!(verify(b"secret", &ssha));
        assert!(!verify(b"secreT", &ssha));
    }

    #[test]
    fn every_scheme_round_trips_and_refuses_other_passwords() {
        for scheme in [
            "SHA", "SSHA", "SHA256", "SSHA256", "SHA384", "SSHA384", "SHA512", "SSHA512",
        ] {
            let stored = hash_with_salt(scheme, b"pw one", b"0123456789abcdef").unwrap();
            assert!(verify(b"pw one", &stored), "{scheme}");
            assert!(!verify(b"pw two", &stored), "{scheme}");
            let lower = String::from_utf8(stored)
                .unwrap()
                .replacen(scheme, &scheme.to_lowercase(), 1);
            assert!(verify(b"pw one", lower.as_bytes()), "{scheme} in lower case");
        }
        let h = hash(b"x").unwrap();
        assert!(h.starts_with(b"{SSHA512}") && verify(b"x", &h) && !verify(b"y", &h));
        assert_ne!(hash(b"x").unwrap(), h, "a fresh salt each time");
    }

    #[test]
    fn cleartext_unknown_and_damaged_values() {
        assert!(verify(b"plain", b"plain"));
        assert!(!verify(b"plain", b"plain2"));
        assert!(!verify(b"x", b"{MD4}abcd"));
        assert!(!verify(b"x", b"{SSHA}not base64!"));
        assert!(!verify(b"x", b"{SSHA}AAAA"));
        assert!(!verify(b"", b"{SSHA512}"));
    }

    #[test]
    fn generated_passwords() {
        let a = generate().unwrap();
        assert_eq!(a.len(), 24);
        assert!(a.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_ne!(a, generate().unwrap());
    }
}
