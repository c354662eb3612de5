//! Checks of the server's certificate chain and key before they are used: every
//! certificate parses and is within its validity period (the error says the dates), and
//! the key is the leaf certificate's key.
//!
//! These are the mistakes that otherwise show only as handshake failures on the clients'
//! side ("certificate expired", "decrypt error"), long after the server started.

use std::path::Path;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::sign::CertifiedKey;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use x509_parser::prelude::{FromDer, X509Certificate};

use super::TlsError;
use crate::cert_subject::Subject;

/// What the server prints about its certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateInfo {
    /// The subject, RFC 4514.
    pub subject: String,
    /// The serial number, hexadecimal with colons.
    pub serial: String,
    /// Start of validity, `YYYY-MM-DD HH:MM:SS UTC`.
    pub not_before: String,
    /// End of validity, `YYYY-MM-DD HH:MM:SS UTC`.
    pub not_after: String,
}

/// A Unix time as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn format_time(unix: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp(unix) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        Err(_) => format!("{unix} seconds after 1970"),
    }
}

/// The subject of a parsed certificate, RFC 4514 when its values are strings.
fn subject_text(der: &[u8], cert: &X509Certificate<'_>) -> String {
    Subject::from_certificate(der)
        .map(|s| s.to_rfc4514())
        .unwrap_or_else(|_| cert.subject().to_string())
}

/// Checks the validity of every certificate of `chain` (read from `path`) at `now` (Unix
/// seconds); returns what to print about the first one.
pub fn check_validity(
    path: &Path,
    chain: &[CertificateDer<'_>],
    now: i64,
) -> Result<CertificateInfo, TlsError> {
    let mut leaf = None;
    for (i, der) in chain.iter().enumerate() {
        let (_, cert) = X509Certificate::from_der(der).map_err(|e| TlsError::BadCertificate {
            path: path.to_path_buf(),
            index: i + 1,
            reason: e.to_string(),
        })?;
        let v = cert.validity();
        let (from, until) = (v.not_before.timestamp(), v.not_after.timestamp());
        let info = CertificateInfo {
            subject: subject_text(der, &cert),
            serial: cert.raw_serial_as_string(),
            not_before: format_time(from),
            not_after: format_time(until),
        };
        if now > until {
            return Err(TlsError::Expired {
                path: path.to_path_buf(),
                subject: info.subject,
                not_before: info.not_before,
                not_after: info.not_after,
            });
        }
        if now < from {
            return Err(TlsError::NotYetValid {
                path: path.to_path_buf(),
                subject: info.subject,
                not_before: info.not_before,
                not_after: info.not_after,
            });
        }
        leaf.get_or_insert(info);
    }
    leaf.ok_or_else(|| TlsError::NoCertificate {
        path: path.to_path_buf(),
    })
}

/// The chain and key as rustls uses them, refused when the key is not the leaf's key.
pub fn certified_key(
    cert_path: &Path,
    key_path: &Path,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    provider: &CryptoProvider,
    leaf_subject: &str,
) -> Result<Arc<CertifiedKey>, TlsError> {
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| TlsError::BadKey {
            path: key_path.to_path_buf(),
            reason: e.to_string(),
        })?;
    let certified = CertifiedKey::new(chain, signing);
    match certified.keys_match() {
        Ok(()) => Ok(Arc::new(certified)),
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            Err(TlsError::KeyMismatch {
                key: key_path.to_path_buf(),
                certificate: cert_path.to_path_buf(),
                subject: leaf_subject.to_string(),
            })
        }
        // The provider cannot tell the key's public half: rustls's own check is skipped
        // too, and a mismatch would show in the first handshake.
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => Ok(Arc::new(certified)),
        Err(e) => Err(TlsError::BadCertificate {
            path: cert_path.to_path_buf(),
            index: 1,
            reason: e.to_string(),
        }),
    }
}
