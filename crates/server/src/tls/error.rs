//! Why TLS could not be set up: every message names the file concerned and says what is
//! wrong with it, in terms an operator can act on.

use std::path::PathBuf;

/// A TLS file or configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The file does not exist.
    #[error("{}: the {what} file does not exist", path.display())]
    Missing {
        /// The file.
        path: PathBuf,
        /// What it should hold ("certificate", "private key", "client CA").
        what: &'static str,
    },
    /// The file exists but cannot be read.
    #[error("{}: cannot read the {what} file: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What it should hold.
        what: &'static str,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than any PEM file of certificates or a key.
    #[error("{}: the {what} file is larger than {limit} bytes; it is not a PEM file", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// What it should hold.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// The PEM text is malformed.
    #[error("{}: the {what} file is not valid PEM: {reason}", path.display())]
    BadPem {
        /// The file.
        path: PathBuf,
        /// What it should hold.
        what: &'static str,
        /// The PEM reader's message.
        reason: String,
    },
    /// No `CERTIFICATE` block in the file.
    #[error("{}: no certificate in it (expected a -----BEGIN CERTIFICATE----- block)", path.display())]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// No private key block in the file.
    #[error(
        "{}: no private key in it (expected a -----BEGIN PRIVATE KEY-----, RSA PRIVATE KEY or EC PRIVATE KEY block)",
        path.display()
    )]
    NoKey {
        /// The file.
        path: PathBuf,
    },
    /// The key is of a kind the crypto provider does not support.
    #[error("{}: the private key cannot be used: {reason}", path.display())]
    BadKey {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A certificate does not parse as X.509.
    #[error("{}: certificate {index} of the file is not a valid X.509 certificate: {reason}", path.display())]
    BadCertificate {
        /// The file.
        path: PathBuf,
        /// Its position in the file, from 1.
        index: usize,
        /// Why.
        reason: String,
    },
    /// A certificate's validity ended.
    #[error("{}: the certificate `{subject}` expired on {not_after} (valid from {not_before})", path.display())]
    Expired {
        /// The file.
        path: PathBuf,
        /// The certificate's subject.
        subject: String,
        /// Start of validity.
        not_before: String,
        /// End of validity.
        not_after: String,
    },
    /// A certificate's validity has not begun.
    #[error(
        "{}: the certificate `{subject}` is not valid yet: valid from {not_before} (until {not_after}); check the clock",
        path.display()
    )]
    NotYetValid {
        /// The file.
        path: PathBuf,
        /// The certificate's subject.
        subject: String,
        /// Start of validity.
        not_before: String,
        /// End of validity.
        not_after: String,
    },
    /// The key is not the key of the certificate.
    #[error(
        "{}: the private key does not match the certificate `{subject}` of {}",
        key.display(),
        certificate.display()
    )]
    KeyMismatch {
        /// The key file.
        key: PathBuf,
        /// The certificate file.
        certificate: PathBuf,
        /// The leaf certificate's subject.
        subject: String,
    },
    /// The client CA file cannot serve to verify clients.
    #[error("{}: the client CA certificates cannot be used: {reason}", path.display())]
    ClientCa {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Config(String),
    /// `--demo-tls` could not make or use its files.
    #[error("--demo-tls: {0}")]
    Demo(String),
}
