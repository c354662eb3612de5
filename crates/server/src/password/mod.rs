//! userPassword values (RFC 2307 / RFC 3112 storage schemes): checking a password against
//! a stored value, and hashing new passwords.
//!
//! A stored value is `{SCHEME}data`; the scheme name is case-insensitive. Schemes checked,
//! one file per family:
//! - [`digest`]: `{MD5}`, `{SMD5}`, `{SHA}`, `{SSHA}`, `{SHA256}`, `{SSHA256}`,
//!   `{SHA384}`, `{SSHA384}`, `{SHA512}`, `{SSHA512}` (cheap);
//! - [`pbkdf`]: `{PBKDF2}` (= `{PBKDF2-SHA1}`), `{PBKDF2-SHA1}`, `{PBKDF2-SHA256}`,
//!   `{PBKDF2-SHA512}` (OpenLDAP `pw-pbkdf2`, passlib, 389-ds) and 389-ds's older
//!   `{PBKDF2_SHA256}` (slow);
//! - [`argon`]: `{ARGON2}`, PHC strings as OpenLDAP's `argon2` module writes (slow);
//! - [`crypt`]: `{CRYPT}` with `$5$`, `$6$`, `$2a$`, `$2b$`, `$2y$` (slow);
//! - cleartext: `{CLEARTEXT}x` or a value without a scheme, only when
//!   `[password] allow_cleartext` is on; otherwise such a value never verifies.
//!
//! Rules every check follows:
//! 1. a value or password longer than [`MAX_PASSWORD_BYTES`] never verifies (nothing is
//!    hashed for it);
//! 2. an unknown scheme, a malformed value, or a value asking for more work than the
//!    family's named bound never verifies; nothing here panics on any octets;
//! 3. digests are compared in constant time (`subtle`);
//! 4. the slow families are checked off the connection threads ([`gate`]); the caller asks
//!    [`is_slow`] first.
//!
//! New passwords are hashed by [`hash_new`] with `[password] default_scheme` (argon2id by
//! default) and a fresh salt from the operating system's random source; [`named`] hashes
//! in any scheme checked here, for `larch passwd`.

pub mod argon;
pub mod crypt;
pub mod digest;
pub mod gate;
pub mod named;
pub mod pbkdf;

use subtle::ConstantTimeEq;

use crate::config::{DefaultScheme, PasswordSettings};

/// Longest stored value or presented password looked at: the longest stored form written
/// (389-ds's `{PBKDF2_SHA256}`) is under 500 octets; anything far longer is refused without
/// hashing it.
pub const MAX_PASSWORD_BYTES: usize = 4096;

/// Most userPassword values of one entry a password is checked against (an entry rarely
/// holds more than two; each slow check costs tens of milliseconds).
pub const MAX_VALUES_CHECKED: usize = 16;

/// Length of a password generated for the Password Modify operation: 16 characters from a
/// 62-letter alphabet, about 95 bits (slapd generates 8 characters for old getpass(3)
/// implementations that cut there; no current client does).
pub const GENERATED_PASSWORD_LEN: usize = 16;

/// Length of a generated administrator password (about 142 bits).
pub const GENERATED_ADMIN_PASSWORD_LEN: usize = 24;

/// Salt of new `{SSHA}`/`{SSHA512}` hashes: 16 octets, as 389-ds uses for its salted SHA-2
/// schemes.
pub const SALT_LEN: usize = 16;

/// The schemes this server checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `{CLEARTEXT}` or no scheme.
    Cleartext,
    /// One digest, salted or not.
    Digest {
        /// The digest function.
        algorithm: digest::Algorithm,
        /// `{S...}`: a salt follows the digest.
        salted: bool,
    },
    /// PBKDF2 in the OpenLDAP form.
    Pbkdf2(pbkdf::Prf),
    /// 389-ds's `{PBKDF2_SHA256}`.
    Pbkdf2Ds389,
    /// `{ARGON2}`.
    Argon2,
    /// `{CRYPT}`.
    Crypt,
}

impl Scheme {
    /// The scheme called `name` (without braces, any case); `None` for one this server
    /// does not check.
    pub fn from_name(name: &str) -> Option<Scheme> {
        use digest::Algorithm::*;
        let d = |algorithm, salted| Scheme::Digest { algorithm, salted };
        Some(match name.to_ascii_uppercase().as_str() {
            "CLEARTEXT" => Scheme::Cleartext,
            "MD5" => d(Md5, false),
            "SMD5" => d(Md5, true),
            "SHA" => d(Sha1, false),
            "SSHA" => d(Sha1, true),
            "SHA256" => d(Sha256, false),
            "SSHA256" => d(Sha256, true),
            "SHA384" => d(Sha384, false),
            "SSHA384" => d(Sha384, true),
            "SHA512" => d(Sha512, false),
            "SSHA512" => d(Sha512, true),
            "PBKDF2" | "PBKDF2-SHA1" => Scheme::Pbkdf2(pbkdf::Prf::Sha1),
            "PBKDF2-SHA256" => Scheme::Pbkdf2(pbkdf::Prf::Sha256),
            "PBKDF2-SHA512" => Scheme::Pbkdf2(pbkdf::Prf::Sha512),
            "PBKDF2_SHA256" => Scheme::Pbkdf2Ds389,
            "ARGON2" => Scheme::Argon2,
            "CRYPT" => Scheme::Crypt,
            _ => return None,
        })
    }

    /// True for the families that cost milliseconds or more per check (PBKDF2, argon2,
    /// crypt): they run off the connection threads.
    pub fn is_slow(self) -> bool {
        !matches!(self, Scheme::Cleartext | Scheme::Digest { .. })
    }
}

/// Splits `{SCHEME}rest` into the scheme name and the rest; `None` when the value does not
/// start with a braced name.
fn split_scheme(stored: &[u8]) -> Option<(&str, &[u8])> {
    let inner = stored.strip_prefix(b"{")?;
    let end = inner.iter().take(32).position(|&b| b == b'}')?;
    let name = std::str::from_utf8(inner.get(..end)?).ok()?;
    Some((name, inner.get(end + 1..)?))
}

/// The scheme of a stored value and its data: `Some((Cleartext, value))` for a value
/// without a scheme, `None` for an unknown scheme.
pub fn parse_stored(stored: &[u8]) -> Option<(Scheme, &[u8])> {
    match split_scheme(stored) {
        None => Some((Scheme::Cleartext, stored)),
        Some((name, rest)) => Scheme::from_name(name).map(|s| (s, rest)),
    }
}

/// True when checking a password against `stored` is slow (see [`Scheme::is_slow`]).
pub fn is_slow(stored: &[u8]) -> bool {
    parse_stored(stored).is_some_and(|(s, _)| s.is_slow())
}

/// True when `value`, given by a client as a new userPassword, is already in a storage
/// scheme this server checks (so it must not be hashed again). `{CLEARTEXT}` counts only
/// when cleartext values are allowed; a value without a scheme, or with an unknown one, is
/// a cleartext password.
pub fn is_prehashed(value: &[u8], settings: &PasswordSettings) -> bool {
    match split_scheme(value).and_then(|(name, _)| Scheme::from_name(name)) {
        Some(Scheme::Cleartext) => settings.allow_cleartext,
        Some(_) => true,
        None => false,
    }
}

/// The scheme name a pre-hashed value starts with, for messages (`{SSHA}`).
pub fn scheme_label(value: &[u8]) -> String {
    split_scheme(value).map_or_else(String::new, |(n, _)| format!("{{{n}}}"))
}

/// True when `password` matches the stored userPassword value `stored` (see the module
/// documentation for the rules).
pub fn verify(password: &[u8], stored: &[u8], settings: &PasswordSettings) -> bool {
    if password.len() > MAX_PASSWORD_BYTES || stored.len() > MAX_PASSWORD_BYTES {
        return false;
    }
    let Some((scheme, data)) = parse_stored(stored) else {
        return false;
    };
    match scheme {
        Scheme::Cleartext => settings.allow_cleartext && bool::from(password.ct_eq(data)),
        Scheme::Digest { algorithm, salted } => digest::verify(algorithm, salted, password, data),
        Scheme::Pbkdf2(prf) => pbkdf::verify(prf, password, data),
        Scheme::Pbkdf2Ds389 => pbkdf::verify_389(password, data),
        Scheme::Argon2 => argon::verify(password, data),
        Scheme::Crypt => crypt::verify(password, data),
    }
}

/// The stored values among `values` that `password` verifies against, looking at the first
/// [`MAX_VALUES_CHECKED`] values only.
pub fn matching<'v>(password: &[u8], values: &'v [Vec<u8>], settings: &PasswordSettings) -> Vec<&'v [u8]> {
    values
        .iter()
        .take(MAX_VALUES_CHECKED)
        .filter(|v| verify(password, v, settings))
        .map(Vec::as_slice)
        .collect()
}

/// True when `password` verifies against one of the first [`MAX_VALUES_CHECKED`] `values`.
pub fn verify_any(password: &[u8], values: &[Vec<u8>], settings: &PasswordSettings) -> bool {
    values
        .iter()
        .take(MAX_VALUES_CHECKED)
        .any(|v| verify(password, v, settings))
}

/// Why a new password could not be hashed.
#[derive(Debug, thiserror::Error)]
pub enum HashError {
    /// The operating system's random source failed (no salt).
    #[error("the operating system's random source failed: {0}")]
    Random(getrandom::Error),
    /// The hashing library refused (out of memory for argon2).
    #[error("the password hashing library failed (out of memory?)")]
    Library,
}

/// Hashes `cleartext` with `settings.default_scheme` and a fresh random salt; the result
/// is a complete userPassword value (`{ARGON2}$argon2id$...`). Slow for argon2id and
/// PBKDF2: call it from a thread that may block ([`gate::blocking_section`]).
pub fn hash_new(settings: &PasswordSettings, cleartext: &[u8]) -> Result<Vec<u8>, HashError> {
    hash_with(settings.default_scheme, cleartext)
}

/// Hashes `cleartext` with `scheme` and a fresh random salt.
pub fn hash_with(scheme: DefaultScheme, cleartext: &[u8]) -> Result<Vec<u8>, HashError> {
    let mut salt = [0u8; SALT_LEN];
    getrandom::fill(&mut salt).map_err(HashError::Random)?;
    let text = match scheme {
        DefaultScheme::Argon2id => format!(
            "{{ARGON2}}{}",
            argon::encode(cleartext, &salt).ok_or(HashError::Library)?
        ),
        DefaultScheme::Pbkdf2Sha512 => format!(
            "{{PBKDF2-SHA512}}{}",
            pbkdf::encode(
                pbkdf::Prf::Sha512,
                cleartext,
                &salt[..pbkdf::PBKDF2_SALT_LEN.min(SALT_LEN)],
                pbkdf::PBKDF2_SHA512_ROUNDS
            )
        ),
        DefaultScheme::Ssha512 => format!(
            "{{SSHA512}}{}",
            digest::encode(digest::Algorithm::Sha512, true, cleartext, &salt)
        ),
        DefaultScheme::Ssha => format!(
            "{{SSHA}}{}",
            digest::encode(digest::Algorithm::Sha1, true, cleartext, &salt)
        ),
    };
    Ok(text.into_bytes())
}

/// Hashes `password` in one of the digest schemes (`SSHA`, `SHA512`, ... any case) with
/// `salt` (ignored by the unsalted ones); `None` for any other scheme. For tests and tools
/// that need a fixed output.
pub fn hash_with_salt(scheme: &str, password: &[u8], salt: &[u8]) -> Option<Vec<u8>> {
    let Some(Scheme::Digest { algorithm, salted }) = Scheme::from_name(scheme) else {
        return None;
    };
    let name = scheme.to_ascii_uppercase();
    Some(format!("{{{name}}}{}", digest::encode(algorithm, salted, password, salt)).into_bytes())
}

/// A random password of `len` characters from a 62-letter alphabet (letters and digits),
/// from the operating system's random source.
pub fn generate_len(len: usize) -> Result<String, getrandom::Error> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = String::with_capacity(len);
    while out.len() < len {
        let mut b = [0u8; 32];
        getrandom::fill(&mut b)?;
        // Rejection sampling keeps the letters uniform: 248 = 4 * 62.
        out.extend(
            b.iter()
                .filter(|&&x| x < 248)
                .filter_map(|&x| ALPHABET.get(usize::from(x % 62)).map(|&c| char::from(c))),
        );
    }
    out.truncate(len);
    Ok(out)
}

/// A random password for a generated administrator account
/// ([`GENERATED_ADMIN_PASSWORD_LEN`] characters).
pub fn generate() -> Result<String, getrandom::Error> {
    generate_len(GENERATED_ADMIN_PASSWORD_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(allow_cleartext: bool) -> PasswordSettings {
        PasswordSettings {
            allow_cleartext,
            ..PasswordSettings::default()
        }
    }

    #[test]
    fn digest_schemes_round_trip_in_any_case() {
        let s = settings(false);
        for scheme in [
            "MD5", "SMD5", "SHA", "SSHA", "SHA256", "SSHA256", "SHA384", "SSHA384", "SHA512", "SSHA512",
        ] {
            let stored = hash_with_salt(scheme, b"pw one", b"0123456789abcdef").unwrap();
            assert!(verify(b"pw one", &stored, &s), "{scheme}");
            assert!(!verify(b"pw two", &stored, &s), "{scheme}");
            assert!(!is_slow(&stored), "{scheme}");
            let lower = String::from_utf8(stored)
                .unwrap()
                .replacen(scheme, &scheme.to_lowercase(), 1);
            assert!(verify(b"pw one", lower.as_bytes(), &s), "{scheme} in lower case");
        }
        assert_eq!(hash_with_salt("ARGON2", b"x", b"y"), None);
    }

    #[test]
    fn cleartext_only_when_allowed() {
        for stored in [&b"plain"[..], b"{CLEARTEXT}plain", b"{cleartext}plain"] {
            assert!(!verify(b"plain", stored, &settings(false)));
            assert!(verify(b"plain", stored, &settings(true)));
            assert!(!verify(b"plain2", stored, &settings(true)));
        }
        assert!(!is_prehashed(b"{CLEARTEXT}x", &settings(false)));
        assert!(is_prehashed(b"{CLEARTEXT}x", &settings(true)));
        assert!(is_prehashed(b"{ssha}abcd", &settings(false)));
        assert!(!is_prehashed(b"{MD4}abcd", &settings(false)));
        assert!(!is_prehashed(b"secret", &settings(false)));
        assert_eq!(scheme_label(b"{ssha}abcd"), "{ssha}");
    }

    #[test]
    fn unknown_damaged_and_oversized_values_never_verify() {
        let s = settings(true);
        for stored in [
            &b"{MD4}abcd"[..],
            b"{SSHA}not base64!",
            b"{SSHA}AAAA",
            b"{SSHA512}",
            b"{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ",
            b"{PBKDF2-SHA512}0$AAAA$AAAA",
            b"{PBKDF2-SHA512}99999999999$AAAA$AAAA",
            b"{PBKDF2}10000$$",
            b"{PBKDF2_SHA256}AAAA",
            b"{ARGON2}garbage",
            b"{CRYPT}$1$DgJpWDOP$FcQdS1jXksoIyO8qTTv0Z/",
            b"{CRYPT}jRWNvUNRFzPjc",
            b"{CRYPT}$6$rounds=99999999$salt$hash",
            b"{CRYPT}$2b$31$KtsenlEfHfZQRZLk5jD8ZuzXJpiOwRy7CBvxxz7.nUPqLdK.g9Xs2",
            b"{",
            b"{}",
            b"{\xff\xfe}x",
        ] {
            assert!(
                !verify(b"secret", stored, &s),
                "{}",
                String::from_utf8_lossy(stored)
            );
        }
        let long = vec![b'a'; MAX_PASSWORD_BYTES + 1];
        assert!(!verify(&long, &long, &s));
        assert!(verify(b"secret", b"{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=", &s));
    }

    #[test]
    fn every_default_scheme_hashes_with_a_fresh_salt() {
        let s = settings(false);
        for (scheme, name) in DefaultScheme::ALL {
            let h = hash_with(scheme, b"new pw").unwrap();
            let text = String::from_utf8(h.clone()).unwrap();
            let prefix = match scheme {
                DefaultScheme::Argon2id => "{ARGON2}$argon2id$v=19$m=19456,t=2,p=1$",
                DefaultScheme::Pbkdf2Sha512 => "{PBKDF2-SHA512}25000$",
                DefaultScheme::Ssha512 => "{SSHA512}",
                DefaultScheme::Ssha => "{SSHA}",
            };
            assert!(text.starts_with(prefix), "{name}: {text}");
            assert!(verify(b"new pw", &h, &s) && !verify(b"new pW", &h, &s), "{name}");
            assert!(is_prehashed(&h, &s), "{name}");
            assert_ne!(
                hash_with(scheme, b"new pw").unwrap(),
                h,
                "{name}: a fresh salt each time"
            );
        }
    }

    #[test]
    fn matching_values_and_the_bound_on_values_checked() {
        let s = settings(false);
        let a = hash_with_salt("SSHA", b"a", b"salt1").unwrap();
        let b = hash_with_salt("SSHA", b"b", b"salt2").unwrap();
        let a2 = hash_with_salt("SHA256", b"a", b"").unwrap();
        let values = vec![a.clone(), b.clone(), a2.clone()];
        assert_eq!(matching(b"a", &values, &s), vec![a.as_slice(), a2.as_slice()]);
        assert!(verify_any(b"b", &values, &s) && !verify_any(b"c", &values, &s));
        let mut many = vec![b.clone(); MAX_VALUES_CHECKED];
        many.push(a);
        assert!(
            !verify_any(b"a", &many, &s),
            "values past the bound are not checked"
        );
    }

    #[test]
    fn generated_passwords() {
        let a = generate().unwrap();
        assert_eq!(a.len(), GENERATED_ADMIN_PASSWORD_LEN);
        assert!(a.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_ne!(a, generate().unwrap());
        assert_eq!(generate_len(GENERATED_PASSWORD_LEN).unwrap().len(), 16);
    }
}
