//! The one-digest schemes of RFC 2307 and their SHA-2 successors: `{MD5}`, `{SMD5}`,
//! `{SHA}`, `{SSHA}`, `{SHA256}`, `{SSHA256}`, `{SHA384}`, `{SSHA384}`, `{SHA512}`,
//! `{SSHA512}`.
//!
//! Stored form, as `slappasswd` (with `pw-sha2` for SHA-2), 389-ds and passlib write it:
//! the scheme, then base64 (with padding) of the digest followed, for the salted (`S`)
//! forms, by the salt: `{SSHA}base64(SHA1(password || salt) || salt)`. The salt may have
//! any length of at least one octet (slapd refuses a salted value with no salt); the
//! unsalted forms hold the digest alone.
//!
//! Checking: decode, split digest and salt, hash the password with the salt, compare the
//! digests in constant time. These schemes are cheap (one digest), so they are checked on
//! the connection's own thread.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use md5::Md5;
use sha1::Sha1;
use sha2::{Sha256, Sha384, Sha512};
use subtle::ConstantTimeEq;

/// The digest function of a scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// MD5 (RFC 1321).
    Md5,
    /// SHA-1.
    Sha1,
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

impl Algorithm {
    /// Octets of the digest.
    fn len(self) -> usize {
        match self {
            Algorithm::Md5 => 16,
            Algorithm::Sha1 => 20,
            Algorithm::Sha256 => 32,
            Algorithm::Sha384 => 48,
            Algorithm::Sha512 => 64,
        }
    }

    /// The digest of `password || salt`.
    fn digest(self, password: &[u8], salt: &[u8]) -> Vec<u8> {
        fn run<D: sha2::Digest>(password: &[u8], salt: &[u8]) -> Vec<u8> {
            let mut d = D::new();
            d.update(password);
            d.update(salt);
            d.finalize().to_vec()
        }
        match self {
            Algorithm::Md5 => run::<Md5>(password, salt),
            Algorithm::Sha1 => run::<Sha1>(password, salt),
            Algorithm::Sha256 => run::<Sha256>(password, salt),
            Algorithm::Sha384 => run::<Sha384>(password, salt),
            Algorithm::Sha512 => run::<Sha512>(password, salt),
        }
    }
}

/// True when `password` matches `encoded` (what follows the scheme name).
pub(super) fn verify(algorithm: Algorithm, salted: bool, password: &[u8], encoded: &[u8]) -> bool {
    let Ok(decoded) = B64.decode(encoded.trim_ascii()) else {
        return false;
    };
    let len = algorithm.len();
    let well_formed = if salted {
        decoded.len() > len
    } else {
        decoded.len() == len
    };
    if !well_formed {
        return false;
    }
    let (hash, salt) = decoded.split_at(len);
    bool::from(algorithm.digest(password, salt).as_slice().ct_eq(hash))
}

/// The stored form of `password` (without the scheme name): the digest with `salt`
/// appended when `salted`, in base64.
pub(super) fn encode(algorithm: Algorithm, salted: bool, password: &[u8], salt: &[u8]) -> String {
    let salt = if salted { salt } else { &[] };
    let mut raw = algorithm.digest(password, salt);
    raw.extend_from_slice(salt);
    B64.encode(raw)
}
