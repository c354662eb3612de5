//! Reading the PEM files of `[tls]`: a certificate chain, a private key, CA certificates.
//!
//! Each file is read whole (at most [`MAX_PEM_BYTES`]) and parsed by `rustls-pki-types`;
//! a missing file, an unreadable one, malformed PEM, and a file without the expected block
//! are told apart, naming the file.

use std::io::Read;
use std::path::Path;

use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::TlsError;

/// Largest PEM file read: a chain of a few certificates is a few kilobytes and a CA bundle
/// a few hundred; beyond this the file is not what the configuration says.
pub const MAX_PEM_BYTES: u64 = 4 * 1024 * 1024;

/// Most certificates taken from one file (the system CA bundle holds about 150).
pub const MAX_CERTIFICATES: usize = 1000;

/// The octets of `path`, which should hold `what`.
fn read(path: &Path, what: &'static str) -> Result<Vec<u8>, TlsError> {
    let file = std::fs::File::open(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            TlsError::Missing {
                path: path.to_path_buf(),
                what,
            }
        } else {
            TlsError::Unreadable {
                path: path.to_path_buf(),
                what,
                source,
            }
        }
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| TlsError::Unreadable {
            path: path.to_path_buf(),
            what,
            source,
        })?;
    if bytes.len() as u64 > MAX_PEM_BYTES {
        return Err(TlsError::TooLarge {
            path: path.to_path_buf(),
            what,
            limit: MAX_PEM_BYTES,
        });
    }
    Ok(bytes)
}

fn bad_pem(path: &Path, what: &'static str, e: pem::Error) -> TlsError {
    TlsError::BadPem {
        path: path.to_path_buf(),
        what,
        reason: e.to_string(),
    }
}

/// Every certificate of the PEM file `path` (`what` names it in errors), in file order; at
/// least one.
pub fn certificates(path: &Path, what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(path, what)?;
    let mut certs = Vec::new();
    for item in CertificateDer::pem_slice_iter(&bytes) {
        certs.push(item.map_err(|e| bad_pem(path, what, e))?);
        if certs.len() > MAX_CERTIFICATES {
            return Err(TlsError::BadPem {
                path: path.to_path_buf(),
                what,
                reason: format!("more than {MAX_CERTIFICATES} certificates"),
            });
        }
    }
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

/// The first private key of the PEM file `path`.
pub fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let what = "private key";
    let bytes = read(path, what)?;
    match PrivateKeyDer::from_pem_slice(&bytes) {
        Ok(k) => Ok(k),
        Err(pem::Error::NoItemsFound) => Err(TlsError::NoKey {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(bad_pem(path, what, e)),
    }
}
