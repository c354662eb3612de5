//! A new password hashed in any scheme this server verifies, the scheme named as
//! `slappasswd -h` names it (`{SSHA}`, `ssha`, `PBKDF2-SHA512`, any case, braces or not):
//! what `larch passwd` prints. [`super::hash_with`] covers only the four schemes the server
//! itself writes (`[password] default_scheme`); an operator preparing an LDIF for another
//! directory, or a value for a client that reads the stored form, may need any of the
//! others, and every value made here is one [`super::verify`] accepts (a test checks each).
//!
//! Each hash gets a fresh salt from the operating system's random source. `{CRYPT}` takes
//! a format as `slappasswd -c` does ([`CryptFormat`]): SHA-512-crypt unless told otherwise.

use super::{argon, crypt, digest, pbkdf, HashError, Scheme, MAX_PASSWORD_BYTES, SALT_LEN};

/// Every scheme name [`hash_named`] accepts, in the order `larch passwd --help` lists them
/// (the server's default first).
pub const SCHEME_NAMES: [&str; 18] = [
    "ARGON2",
    "SSHA",
    "SSHA256",
    "SSHA384",
    "SSHA512",
    "SHA",
    "SHA256",
    "SHA384",
    "SHA512",
    "SMD5",
    "MD5",
    "PBKDF2",
    "PBKDF2-SHA1",
    "PBKDF2-SHA256",
    "PBKDF2-SHA512",
    "PBKDF2_SHA256",
    "CRYPT",
    "CLEARTEXT",
];

/// PBKDF2 rounds of a new `{PBKDF2-*}` value: the server's own for `{PBKDF2-SHA512}`,
/// used for the SHA-1 and SHA-256 variants too (above OpenLDAP `pw-pbkdf2`'s 10,000).
pub const PBKDF2_NEW_ROUNDS: u32 = pbkdf::PBKDF2_SHA512_ROUNDS;

/// Rounds of a new 389-ds `{PBKDF2_SHA256}` value (well within `MAX_PBKDF2_ROUNDS`).
pub const DS389_NEW_ROUNDS: u32 = 30_000;

/// Longest `{CRYPT}` format accepted: `$6$rounds=1000000$%.16s` is 24 characters.
pub const MAX_CRYPT_FORMAT_LEN: usize = 64;

/// The crypt(3) family and cost of a new `{CRYPT}` value, from a `slappasswd -c` format:
/// `$5$`, `$6$` (optionally `$6$rounds=N$`), `$2a$`, `$2b$` or `$2y$` (optionally with a
/// two-digit cost, `$2b$12$`); whatever follows (slappasswd's `%.16s` salt template) is
/// ignored, the salt is always random.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CryptFormat {
    /// `$5$`: SHA-256-crypt.
    Sha256 {
        /// Rounds.
        rounds: u32,
    },
    /// `$6$`: SHA-512-crypt.
    Sha512 {
        /// Rounds.
        rounds: u32,
    },
    /// `$2b$`: bcrypt (`$2a$` and `$2y$` are written as `$2b$`, the same algorithm).
    Bcrypt {
        /// Cost (log2 of the rounds).
        cost: u32,
    },
}

impl Default for CryptFormat {
    /// SHA-512-crypt with the specification's default rounds.
    fn default() -> Self {
        CryptFormat::Sha512 {
            rounds: crypt::SHA_CRYPT_NEW_ROUNDS,
        }
    }
}

impl CryptFormat {
    /// Reads a `slappasswd -c` format; the error says what is accepted.
    pub fn parse(format: &str) -> Result<CryptFormat, String> {
        const ACCEPTED: &str = "expected $5$, $6$ (optionally $6$rounds=N$) or $2b$ (optionally $2b$NN$)";
        if format.len() > MAX_CRYPT_FORMAT_LEN {
            return Err(format!(
                "a crypt format is at most {MAX_CRYPT_FORMAT_LEN} characters"
            ));
        }
        let sha = |rest: &str, sha512: bool| -> Result<CryptFormat, String> {
            let rounds = match rest.strip_prefix("rounds=") {
                None => crypt::SHA_CRYPT_NEW_ROUNDS,
                Some(r) => {
                    let n = r.split('$').next().unwrap_or("");
                    let n: u32 = n
                        .parse()
                        .map_err(|_| format!("`rounds={n}` is not a number of rounds"))?;
                    if !(1000..=crypt::MAX_SHA_CRYPT_ROUNDS).contains(&n) {
                        return Err(format!(
                            "rounds={n} is outside 1000 to {} (Larch would not verify it)",
                            crypt::MAX_SHA_CRYPT_ROUNDS
                        ));
                    }
                    n
                }
            };
            Ok(if sha512 {
                CryptFormat::Sha512 { rounds }
            } else {
                CryptFormat::Sha256 { rounds }
            })
        };
        if let Some(rest) = format.strip_prefix("$5$") {
            return sha(rest, false);
        }
        if let Some(rest) = format.strip_prefix("$6$") {
            return sha(rest, true);
        }
        let Some(rest) = ["$2a$", "$2b$", "$2y$"]
            .iter()
            .find_map(|p| format.strip_prefix(p))
        else {
            return Err(format!("`{format}`: {ACCEPTED}"));
        };
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() {
            return Ok(CryptFormat::Bcrypt {
                cost: crypt::BCRYPT_NEW_COST,
            });
        }
        let cost: u32 = digits
            .parse()
            .map_err(|_| format!("`{digits}` is not a bcrypt cost"))?;
        if !(4..=crypt::MAX_BCRYPT_COST).contains(&cost) {
            return Err(format!(
                "bcrypt cost {cost} is outside 4 to {} (Larch would not verify it)",
                crypt::MAX_BCRYPT_COST
            ));
        }
        Ok(CryptFormat::Bcrypt { cost })
    }
}

/// Why a password could not be hashed in the scheme asked for.
#[derive(Debug, thiserror::Error)]
pub enum NamedHashError {
    /// No scheme of that name is verified here.
    #[error("unknown scheme `{0}` (known: {names})", names = SCHEME_NAMES.join(", "))]
    UnknownScheme(String),
    /// The password cannot be stored in this scheme so that it verifies.
    #[error("{0}")]
    Unusable(String),
    /// No random salt, or the library failed.
    #[error(transparent)]
    Hash(#[from] HashError),
}

/// The scheme name without braces, upper case: `{ssha}` and `SSHA` give `SSHA`.
pub fn canonical_name(name: &str) -> String {
    let inner = name
        .strip_prefix('{')
        .and_then(|n| n.strip_suffix('}'))
        .unwrap_or(name);
    inner.to_ascii_uppercase()
}

fn random<const N: usize>() -> Result<[u8; N], HashError> {
    let mut salt = [0u8; N];
    getrandom::fill(&mut salt).map_err(HashError::Random)?;
    Ok(salt)
}

/// Hashes `cleartext` in the scheme called `name` (see [`SCHEME_NAMES`]); `{CRYPT}` uses
/// `crypt_format`. The result is a complete userPassword value, `{CLEARTEXT}` included
/// for the cleartext scheme (a bare value starting with `{` would read as a scheme).
pub fn hash_named(
    name: &str,
    cleartext: &[u8],
    crypt_format: CryptFormat,
) -> Result<Vec<u8>, NamedHashError> {
    let canonical = canonical_name(name);
    let scheme = match Scheme::from_name(&canonical) {
        Some(s) if SCHEME_NAMES.contains(&canonical.as_str()) => s,
        _ => return Err(NamedHashError::UnknownScheme(name.to_string())),
    };
    if cleartext.len() > MAX_PASSWORD_BYTES {
        return Err(NamedHashError::Unusable(format!(
            "the password is longer than {MAX_PASSWORD_BYTES} octets; it would never verify"
        )));
    }
    let unusable = |why: &str| NamedHashError::Unusable(format!("{{{canonical}}}: {why}"));
    let data = match scheme {
        Scheme::Cleartext => {
            let mut v = b"{CLEARTEXT}".to_vec();
            v.extend_from_slice(cleartext);
            return Ok(v);
        }
        Scheme::Digest { algorithm, salted } => {
            digest::encode(algorithm, salted, cleartext, &random::<SALT_LEN>()?)
        }
        Scheme::Pbkdf2(prf) => pbkdf::encode(
            prf,
            cleartext,
            &random::<{ pbkdf::PBKDF2_SALT_LEN }>()?,
            PBKDF2_NEW_ROUNDS,
        ),
        Scheme::Pbkdf2Ds389 => pbkdf::encode_389(
            cleartext,
            &random::<{ pbkdf::DS389_SALT_LEN }>()?,
            DS389_NEW_ROUNDS,
        )
        .ok_or(HashError::Library)?,
        Scheme::Argon2 => {
            argon::encode(cleartext, &random::<{ argon::ARGON2_SALT_LEN }>()?).ok_or(HashError::Library)?
        }
        Scheme::Crypt => {
            if cleartext.contains(&0) {
                return Err(unusable("crypt(3) cannot store a password holding a NUL octet"));
            }
            match crypt_format {
                CryptFormat::Sha256 { rounds } | CryptFormat::Sha512 { rounds } => {
                    let sha512 = matches!(crypt_format, CryptFormat::Sha512 { .. });
                    let salt = random::<{ crypt::SHA_CRYPT_SALT_OCTETS }>()?;
                    crypt::encode_sha_crypt(sha512, cleartext, &salt, rounds).ok_or_else(|| {
                        unusable(&format!(
                            "SHA-crypt takes passwords of at most {} octets",
                            crypt::MAX_SHA_CRYPT_PASSWORD_BYTES
                        ))
                    })?
                }
                CryptFormat::Bcrypt { cost } => crypt::encode_bcrypt(cleartext, random::<16>()?, cost)
                    .ok_or_else(|| {
                        unusable("bcrypt reads at most 72 octets of a password; a longer one would be cut")
                    })?,
            }
        }
    };
    Ok(format!("{{{canonical}}}{data}").into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PasswordSettings;

    #[test]
    fn every_scheme_name_hashes_to_a_value_the_verifier_accepts() {
        let settings = PasswordSettings {
            allow_cleartext: true,
            ..PasswordSettings::default()
        };
        for name in SCHEME_NAMES {
            for written in [name.to_string(), format!("{{{}}}", name.to_ascii_lowercase())] {
                let h = hash_named(&written, b"s3cret pw", CryptFormat::default()).unwrap();
                assert!(super::super::verify(b"s3cret pw", &h, &settings), "{written}");
                assert!(!super::super::verify(b"s3cret pX", &h, &settings), "{written}");
                let prefix = format!("{{{name}}}");
                assert!(h.starts_with(prefix.as_bytes()), "{written}");
            }
        }
        // A fresh salt each time.
        let a = hash_named("SSHA", b"pw", CryptFormat::default()).unwrap();
        let b = hash_named("SSHA", b"pw", CryptFormat::default()).unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn crypt_formats() {
        let settings = PasswordSettings::default();
        for (format, prefix) in [
            ("$6$%.16s", "{CRYPT}$6$rounds=5000$"),
            ("$5$rounds=2000$%.16s", "{CRYPT}$5$rounds=2000$"),
            ("$2y$05$", "{CRYPT}$2b$05$"),
            ("$2b$", "{CRYPT}$2b$10$"),
        ] {
            let f = CryptFormat::parse(format).unwrap();
            let h = hash_named("crypt", b"pw", f).unwrap();
            assert!(
                h.starts_with(prefix.as_bytes()),
                "{format}: {}",
                String::from_utf8_lossy(&h)
            );
            assert!(super::super::verify(b"pw", &h, &settings), "{format}");
        }
        for bad in ["$1$", "$6$rounds=10$", "$6$rounds=x$", "$2b$31$", "$y$", ""] {
            assert!(CryptFormat::parse(bad).is_err(), "{bad}");
        }
        assert!(CryptFormat::parse(&"$6$".repeat(30)).is_err());
    }

    #[test]
    fn refusals() {
        let e = hash_named("{NOPE}", b"pw", CryptFormat::default()).unwrap_err();
        assert!(e.to_string().contains("unknown scheme `{NOPE}`"), "{e}");
        assert!(hash_named("", b"pw", CryptFormat::default()).is_err());
        assert!(hash_named("{}", b"pw", CryptFormat::default()).is_err());
        let long = vec![b'a'; MAX_PASSWORD_BYTES + 1];
        assert!(hash_named("SSHA", &long, CryptFormat::default()).is_err());
        let bcrypt = CryptFormat::parse("$2b$04$").unwrap();
        assert!(hash_named("CRYPT", &[b'a'; 73], bcrypt).is_err());
        assert!(hash_named("CRYPT", b"a\0b", CryptFormat::default()).is_err());
    }
}
