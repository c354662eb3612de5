//! `userPassword` values in the RFC 2307 / OpenLDAP `{SCHEME}base64` form, with a salt
//! drawn from the generator's seeded stream so the data set is reproducible.
//!
//! `{SSHA}` is SHA-1 over password then salt, followed by the salt (8 octets here, as
//! slappasswd uses). `{SSHA256}` and `{SSHA512}` are the same with SHA-2 (OpenLDAP needs its
//! `pw-sha2` module for them). `{CLEARTEXT}` writes the password itself, without a prefix,
//! which is how OpenLDAP stores and compares cleartext.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sha1::Digest;

/// The length of the generated salts.
pub const SALT_LEN: usize = 8;

/// A password storage scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum PasswordScheme {
    /// `{SSHA}`: salted SHA-1 (the seed benchmarks' default).
    Ssha,
    /// `{SSHA256}`: salted SHA-256.
    Ssha256,
    /// `{SSHA512}`: salted SHA-512.
    Ssha512,
    /// The password in clear (stored without a prefix, as OpenLDAP does).
    Cleartext,
}

impl PasswordScheme {
    /// Parses a scheme name, with or without braces, in any case: `SSHA`, `{ssha256}`, ...
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim().trim_start_matches('{').trim_end_matches('}');
        Some(match s.to_ascii_uppercase().as_str() {
            "SSHA" => PasswordScheme::Ssha,
            "SSHA256" => PasswordScheme::Ssha256,
            "SSHA512" => PasswordScheme::Ssha512,
            "CLEARTEXT" | "PLAIN" => PasswordScheme::Cleartext,
            _ => return None,
        })
    }

    /// The prefix this scheme writes (empty for cleartext).
    pub fn prefix(self) -> &'static str {
        match self {
            PasswordScheme::Ssha => "{SSHA}",
            PasswordScheme::Ssha256 => "{SSHA256}",
            PasswordScheme::Ssha512 => "{SSHA512}",
            PasswordScheme::Cleartext => "",
        }
    }

    /// The name as written on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            PasswordScheme::Ssha => "{SSHA}",
            PasswordScheme::Ssha256 => "{SSHA256}",
            PasswordScheme::Ssha512 => "{SSHA512}",
            PasswordScheme::Cleartext => "{CLEARTEXT}",
        }
    }
}

impl std::fmt::Display for PasswordScheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for PasswordScheme {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s)
            .ok_or_else(|| format!("unknown password scheme `{s}` (SSHA, SSHA256, SSHA512, CLEARTEXT)"))
    }
}

/// Appends the stored form of `password` with `salt` to `out`.
///
/// ```
/// use larch_bench::password::{hash_into, verify, PasswordScheme};
/// let mut v = Vec::new();
/// hash_into(PasswordScheme::Ssha, b"password", &[1, 2, 3, 4, 5, 6, 7, 8], &mut v);
/// assert!(v.starts_with(b"{SSHA}"));
/// assert!(verify(&v, b"password"));
/// assert!(!verify(&v, b"Password"));
/// ```
pub fn hash_into(scheme: PasswordScheme, password: &[u8], salt: &[u8], out: &mut Vec<u8>) {
    let mut raw = [0u8; 64 + 32];
    let n = match scheme {
        PasswordScheme::Cleartext => {
            out.extend_from_slice(password);
            return;
        }
        PasswordScheme::Ssha => digest_salted::<sha1::Sha1>(password, salt, &mut raw),
        PasswordScheme::Ssha256 => digest_salted::<sha2::Sha256>(password, salt, &mut raw),
        PasswordScheme::Ssha512 => digest_salted::<sha2::Sha512>(password, salt, &mut raw),
    };
    out.extend_from_slice(scheme.prefix().as_bytes());
    let start = out.len();
    out.resize(start + base64::encoded_len(n, true).unwrap_or(0), 0);
    let written = STANDARD
        .encode_slice(&raw[..n], &mut out[start..])
        .expect("buffer sized by encoded_len");
    out.truncate(start + written);
}

/// Writes digest(password || salt) || salt into `raw` and returns its length.
fn digest_salted<D: Digest>(password: &[u8], salt: &[u8], raw: &mut [u8]) -> usize {
    let mut d = D::new();
    d.update(password);
    d.update(salt);
    let digest = d.finalize();
    let n = digest.len();
    raw[..n].copy_from_slice(&digest);
    let salt = &salt[..salt.len().min(raw.len() - n)];
    raw[n..n + salt.len()].copy_from_slice(salt);
    n + salt.len()
}

/// Checks a stored `userPassword` value against a password, the way a server would:
/// `{SSHA}`, `{SSHA256}`, `{SSHA512}`, `{SHA}`, or cleartext when there is no known prefix.
/// Used by the tests and by `larch gen --verify`-style checks; not constant-time (this is
/// a benchmark tool, not a server).
pub fn verify(stored: &[u8], password: &[u8]) -> bool {
    fn check<D: Digest>(b64: &[u8], password: &[u8], salted: bool) -> bool {
        let Ok(raw) = STANDARD.decode(b64) else {
            return false;
        };
        let n = <D as Digest>::output_size();
        if raw.len() < n || (!salted && raw.len() != n) {
            return false;
        }
        let (digest, salt) = raw.split_at(n);
        let mut d = D::new();
        d.update(password);
        d.update(salt);
        d.finalize().as_slice() == digest
    }
    let upper: Vec<u8> = stored.iter().take(10).map(u8::to_ascii_uppercase).collect();
    if upper.starts_with(b"{SSHA512}") {
        check::<sha2::Sha512>(&stored[9..], password, true)
    } else if upper.starts_with(b"{SSHA256}") {
        check::<sha2::Sha256>(&stored[9..], password, true)
    } else if upper.starts_with(b"{SSHA}") {
        check::<sha1::Sha1>(&stored[6..], password, true)
    } else if upper.starts_with(b"{SHA}") {
        check::<sha1::Sha1>(&stored[5..], password, false)
    } else {
        stored == password
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssha_matches_a_known_vector() {
        // The digest was computed independently: `printf passwordsaltsalt | sha1sum`.
        let mut v = Vec::new();
        hash_into(PasswordScheme::Ssha, b"password", b"saltsalt", &mut v);
        let text = String::from_utf8(v.clone()).unwrap();
        let raw = STANDARD.decode(&text[6..]).unwrap();
        assert_eq!(raw.len(), 28);
        assert_eq!(&raw[20..], b"saltsalt");
        assert_eq!(hex(&raw[..20]), SHA1_PASSWORDSALTSALT);
        assert!(verify(&v, b"password"));
    }

    const SHA1_PASSWORDSALTSALT: &str = "cab86dd6261710891e8cb56ee3625691a75df344";

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn every_scheme_round_trips_and_rejects_wrong_passwords() {
        for scheme in [
            PasswordScheme::Ssha,
            PasswordScheme::Ssha256,
            PasswordScheme::Ssha512,
            PasswordScheme::Cleartext,
        ] {
            let mut v = Vec::new();
            hash_into(scheme, b"password", &[9; SALT_LEN], &mut v);
            assert!(v.starts_with(scheme.prefix().as_bytes()));
            assert!(verify(&v, b"password"), "{scheme}");
            assert!(!verify(&v, b"passwore"), "{scheme}");
            assert_eq!(PasswordScheme::parse(scheme.name()), Some(scheme));
        }
        assert_eq!(PasswordScheme::parse("ssha"), Some(PasswordScheme::Ssha));
        assert_eq!(PasswordScheme::parse("md5"), None);
        assert!(!verify(b"{SSHA}!!notbase64", b"password"));
    }
}
