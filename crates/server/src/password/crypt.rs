//! `{CRYPT}`: values in crypt(3)'s modular formats, as slapd stores them when built with
//! crypt support and as migrations from `/etc/shadow` or 389-ds bring them.
//!
//! Verified:
//! - `$5$` (SHA-256-crypt) and `$6$` (SHA-512-crypt), Ulrich Drepper's specification:
//!   `$6$[rounds=N$]salt$hash`; `rounds` is 5000 when absent and clamped to at least 1000
//!   as the specification says, the salt is cut to 16 characters;
//! - `$2a$`, `$2b$` and `$2y$` (bcrypt): the three mean the same algorithm for passwords a
//!   client can send (the differences concern 8-bit passwords in one buggy 2011 library
//!   and lengths above 255); passwords longer than 72 octets are cut there, as bcrypt does.
//!
//! Never verified (no match, never an error): DES crypt, MD5-crypt (`$1$`), `$2x$` (the
//! output of that buggy library), yescrypt (`$y$`), and every other format: no maintained
//! Rust implementation exists for them, and a guess at one would be worse than an honest
//! refusal. An operator migrating such values resets those passwords.
//!
//! Work bounds: the cost is read from the stored value; SHA-crypt above
//! [`MAX_SHA_CRYPT_ROUNDS`] rounds or bcrypt above cost [`MAX_BCRYPT_COST`] never verifies.
//! SHA-crypt's work also grows with the password's length times the rounds, so a password
//! longer than [`MAX_SHA_CRYPT_PASSWORD_BYTES`] never verifies against it. A password
//! containing a NUL octet never verifies against any crypt value: crypt(3) reads C strings
//! and would compare only what precedes the NUL.

use sha_crypt::{Algorithm, CustomizedPasswordHasher, Params, PasswordVerifier, ShaCrypt};

/// Most SHA-crypt rounds a stored value may ask for: passlib's defaults (535,000 for
/// SHA-256, 656,000 for SHA-512) fit; a million rounds are about 0.2 s of one core.
pub const MAX_SHA_CRYPT_ROUNDS: u32 = 1_000_000;

/// Highest bcrypt cost a stored value may ask for: each step doubles the work; 14 is about
/// a second of one core (OWASP asks for at least 10).
pub const MAX_BCRYPT_COST: u32 = 14;

/// Longest password checked against a SHA-crypt value: its work is proportional to the
/// password's length times the rounds.
pub const MAX_SHA_CRYPT_PASSWORD_BYTES: usize = 256;

/// The rounds SHA-crypt uses when the value names none.
const SHA_CRYPT_DEFAULT_ROUNDS: u32 = 5000;

/// The fewest rounds SHA-crypt uses (smaller counts are raised to it).
const SHA_CRYPT_MIN_ROUNDS: u32 = 1000;

/// Longest salt SHA-crypt uses; longer ones are cut.
const SHA_CRYPT_MAX_SALT: usize = 16;

/// Raw salt octets of a new SHA-crypt value: 12 octets are the 16 characters of crypt's
/// base64 the specification keeps (a longer salt would be cut when verified).
pub const SHA_CRYPT_SALT_OCTETS: usize = 12;

/// Rounds of a new SHA-crypt value when the format names none: the specification's
/// default, what `slappasswd -c '$6$%.16s'` and glibc write.
pub const SHA_CRYPT_NEW_ROUNDS: u32 = SHA_CRYPT_DEFAULT_ROUNDS;

/// Cost of a new bcrypt value when the format names none: OWASP's minimum.
pub const BCRYPT_NEW_COST: u32 = 10;

/// The SHA-crypt value (`$5$...` when `sha512` is false, `$6$...` otherwise) of `password`
/// with `salt` ([`SHA_CRYPT_SALT_OCTETS`] raw octets) and `rounds` (within
/// 1000..=[`MAX_SHA_CRYPT_ROUNDS`]); `None` when the library refuses or the result would
/// not verify here.
pub(super) fn encode_sha_crypt(sha512: bool, password: &[u8], salt: &[u8], rounds: u32) -> Option<String> {
    if !(SHA_CRYPT_MIN_ROUNDS..=MAX_SHA_CRYPT_ROUNDS).contains(&rounds)
        || password.len() > MAX_SHA_CRYPT_PASSWORD_BYTES
        || password.contains(&0)
    {
        return None;
    }
    let algorithm = if sha512 {
        Algorithm::Sha512Crypt
    } else {
        Algorithm::Sha256Crypt
    };
    let params = Params::new(rounds).ok()?;
    let hash = ShaCrypt::new(algorithm, params)
        .hash_password_customized(password, salt, None, None, params)
        .ok()?;
    Some(hash.to_string())
}

/// The bcrypt value (`$2b$cost$...`) of `password` with a 16-octet `salt`; `None` when the
/// cost is outside 4..=[`MAX_BCRYPT_COST`], the password holds a NUL or is longer than the
/// 72 octets bcrypt reads (it would be cut silently).
pub(super) fn encode_bcrypt(password: &[u8], salt: [u8; 16], cost: u32) -> Option<String> {
    if cost > MAX_BCRYPT_COST || password.len() > 72 || password.contains(&0) {
        return None;
    }
    let parts = bcrypt::hash_with_salt(password, cost, salt).ok()?;
    Some(parts.format_for_version(bcrypt::Version::TwoB))
}

/// True when `password` matches `encoded` (what follows `{CRYPT}`).
pub(super) fn verify(password: &[u8], encoded: &[u8]) -> bool {
    if password.contains(&0) {
        return false;
    }
    let Ok(text) = std::str::from_utf8(encoded.trim_ascii()) else {
        return false;
    };
    if let Some(rest) = text.strip_prefix("$5$") {
        sha_crypt(password, "5", rest)
    } else if let Some(rest) = text.strip_prefix("$6$") {
        sha_crypt(password, "6", rest)
    } else if ["$2a$", "$2b$", "$2y$"].iter().any(|p| text.starts_with(p)) {
        bcrypt(password, text)
    } else {
        false
    }
}

/// SHA-crypt: the value is rewritten into the canonical form the library reads (explicit
/// rounds, clamped; the salt cut to 16 characters), after the work bounds are checked.
fn sha_crypt(password: &[u8], id: &str, rest: &str) -> bool {
    if password.len() > MAX_SHA_CRYPT_PASSWORD_BYTES {
        return false;
    }
    let (rounds, rest) = match rest.strip_prefix("rounds=") {
        Some(r) => {
            let Some((n, rest)) = r.split_once('$') else {
                return false;
            };
            if n.is_empty() || n.len() > 10 || !n.bytes().all(|b| b.is_ascii_digit()) {
                return false;
            }
            let Ok(n) = n.parse::<u64>() else {
                return false;
            };
            (n, rest)
        }
        None => (u64::from(SHA_CRYPT_DEFAULT_ROUNDS), rest),
    };
    if rounds > u64::from(MAX_SHA_CRYPT_ROUNDS) {
        return false;
    }
    let rounds = u32::try_from(rounds)
        .unwrap_or(MAX_SHA_CRYPT_ROUNDS)
        .max(SHA_CRYPT_MIN_ROUNDS);
    let Some((salt, hash)) = rest.split_once('$') else {
        return false;
    };
    let salt: String = salt.chars().take(SHA_CRYPT_MAX_SALT).collect();
    if salt.contains('$') || hash.contains('$') {
        return false;
    }
    let canonical = format!("${id}$rounds={rounds}${salt}${hash}");
    ShaCrypt::default()
        .verify_password(password, canonical.as_str())
        .is_ok()
}

/// bcrypt, after checking the cost.
fn bcrypt(password: &[u8], text: &str) -> bool {
    let cost = text.get(4..6).and_then(|c| c.parse::<u32>().ok());
    match cost {
        Some(c) if c <= MAX_BCRYPT_COST && text.get(6..7) == Some("$") => {
            bcrypt::verify(password, text).unwrap_or(false)
        }
        _ => false,
    }
}
