//! `larch passwd`: a userPassword value for a password, as OpenLDAP's `slappasswd` makes
//! one, so that operators keep their habits (`-s`, `-T`, `-h {SSHA}`, `-c`, `-n`).
//!
//! The hashing is the server's own (`larch_server::password`), never a second
//! implementation: without `-h` the value is what the server writes for a new password
//! (argon2id), and every scheme `-h` accepts is one the server verifies.
//!
//! Where the password comes from, in order: `-s SECRET`; `-T FILE` (its first line);
//! otherwise the terminal, asked twice without echo when standard input is one; otherwise
//! one line of standard input (for scripts: `printf '%s\n' "$pw" | larch passwd`).

use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::path::PathBuf;

use clap::{ArgAction, Args};
use larch_server::config::PasswordSettings;
use larch_server::password::named::{self, CryptFormat, SCHEME_NAMES};
use larch_server::password::{self, MAX_PASSWORD_BYTES};

use crate::tty;

/// `larch passwd`. `-h` is the scheme, as in slappasswd, so help is `--help` only.
#[derive(Debug, Args)]
#[command(
    disable_help_flag = true,
    after_help = "Examples:\n  \
    larch passwd                          ask twice on the terminal, print an {ARGON2} value\n  \
    larch passwd -h '{SSHA}' -s secret    {SSHA}... as `slappasswd -h {SSHA} -s secret`\n  \
    larch passwd -h CRYPT -c '$6$%.16s'   {CRYPT}$6$... (SHA-512-crypt)\n  \
    printf '%s\\n' \"$pw\" | larch passwd   one line of standard input when it is not a terminal\n\n\
    The value goes on one line of standard output; put it in an LDIF file as\n  \
    userPassword: {ARGON2}$argon2id$...\n\
    Exit status: 0 when a value was printed, 1 with the reason on standard error."
)]
pub struct PasswdArgs {
    /// The password (visible to other users in the process list: prefer the prompt or -T).
    #[arg(short = 's', long = "secret", value_name = "SECRET", conflicts_with = "file")]
    secret: Option<String>,
    /// Read the password from the first line of FILE.
    #[arg(short = 'T', long = "file", value_name = "FILE")]
    file: Option<PathBuf>,
    /// The scheme, braces optional, any case (default: ARGON2, the server's own). One of
    /// ARGON2, SSHA, SSHA256, SSHA384, SSHA512, SHA, SHA256, SHA384, SHA512, SMD5, MD5,
    /// PBKDF2, PBKDF2-SHA1, PBKDF2-SHA256, PBKDF2-SHA512, PBKDF2_SHA256 (389-ds), CRYPT,
    /// CLEARTEXT.
    #[arg(short = 'h', long = "scheme", value_name = "SCHEME")]
    scheme: Option<String>,
    /// The crypt(3) format of -h CRYPT, as slappasswd's -c: $6$ (the default, optionally
    /// $6$rounds=N$), $5$, or $2b$ (bcrypt, optionally $2b$NN$ for the cost).
    #[arg(short = 'c', long = "crypt-format", value_name = "FORMAT")]
    crypt_format: Option<String>,
    /// No newline after the value.
    #[arg(short = 'n')]
    no_newline: bool,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
}

/// The most a password line may hold, with its line ending: longer ones never verify.
const MAX_LINE_BYTES: u64 = MAX_PASSWORD_BYTES as u64 + 2;

/// `larch passwd`.
pub fn passwd(a: PasswdArgs) -> Result<(), String> {
    // Checked before the password is asked for: a typo costs no typing.
    let scheme = a.scheme.as_deref().map(named::canonical_name);
    if let Some(s) = &scheme {
        if !SCHEME_NAMES.contains(&s.as_str()) {
            return Err(format!(
                "unknown scheme `{}` (known: {})",
                a.scheme.as_deref().unwrap_or(""),
                SCHEME_NAMES.join(", ")
            ));
        }
    }
    let crypt_format = match &a.crypt_format {
        None => CryptFormat::default(),
        Some(_) if scheme.as_deref() != Some("CRYPT") => {
            return Err("-c (the crypt format) goes with -h CRYPT".into())
        }
        Some(f) => CryptFormat::parse(f).map_err(|e| format!("-c: {e}"))?,
    };
    let secret = match (&a.secret, &a.file) {
        (Some(s), _) => s.clone().into_bytes(),
        (None, Some(f)) => {
            let file = File::open(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?;
            first_line(file).map_err(|e| format!("{}: {e}", f.display()))?
        }
        (None, None) if std::io::stdin().is_terminal() => ask_twice()?,
        (None, None) => first_line(std::io::stdin().lock()).map_err(|e| format!("standard input: {e}"))?,
    };
    if secret.is_empty() {
        return Err("the password is empty (a bind with an empty password is anonymous)".into());
    }
    let value = match &scheme {
        None => password::hash_new(&PasswordSettings::default(), &secret).map_err(|e| e.to_string())?,
        Some(s) => named::hash_named(s, &secret, crypt_format).map_err(|e| e.to_string())?,
    };
    let mut out = std::io::stdout().lock();
    out.write_all(&value)
        .and_then(|()| {
            if a.no_newline {
                Ok(())
            } else {
                out.write_all(b"\n")
            }
        })
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write the value: {e}"))
}

/// The first line of `input`, without its line ending; refused when longer than a
/// password may be, or absent.
fn first_line(input: impl Read) -> Result<Vec<u8>, String> {
    let mut line = Vec::new();
    BufReader::new(input.take(MAX_LINE_BYTES))
        .read_until(b'\n', &mut line)
        .map_err(|e| e.to_string())?;
    if line.is_empty() {
        return Err("no password (empty input)".into());
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.len() > MAX_PASSWORD_BYTES {
        return Err(format!(
            "the password is longer than {MAX_PASSWORD_BYTES} octets; it would never verify"
        ));
    }
    Ok(line)
}

/// Asks for the password twice on the terminal (standard input), without echo.
fn ask_twice() -> Result<Vec<u8>, String> {
    let first = tty::read_hidden("New password: ")?;
    let second = tty::read_hidden("Re-enter new password: ")?;
    if first != second {
        return Err("the passwords do not match".into());
    }
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_lines() {
        assert_eq!(first_line(&b"pw\nrest\n"[..]).unwrap(), b"pw");
        assert_eq!(first_line(&b"pw\r\n"[..]).unwrap(), b"pw");
        assert_eq!(first_line(&b"no newline"[..]).unwrap(), b"no newline");
        assert_eq!(first_line(&b"\n"[..]).unwrap(), b"");
        assert!(first_line(&b""[..]).is_err());
        let long = vec![b'a'; MAX_PASSWORD_BYTES + 10];
        assert!(first_line(&long[..]).is_err());
        let mut fits = vec![b'a'; MAX_PASSWORD_BYTES];
        fits.push(b'\n');
        assert_eq!(first_line(&fits[..]).unwrap().len(), MAX_PASSWORD_BYTES);
    }
}
