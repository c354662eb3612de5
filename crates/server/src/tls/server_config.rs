//! Building the rustls server configuration from `[tls]`.
//!
//! Steps:
//! 1. read the certificate chain and check every certificate's validity
//!    ([`super::check::check_validity`]);
//! 2. read the private key and check it is the leaf's key ([`super::check::certified_key`]);
//! 3. with a client CA file, build the client certificate verifier: `"request"` lets a
//!    client without a certificate connect, `"require"` fails its handshake;
//! 4. offer TLS 1.3 and 1.2 (aws-lc-rs provider) with the server's cipher suite order
//!    ([`server_cipher_suites`]: SHA-256 suites first), and session resumption both ways: TLS
//!    1.3 and 1.2 tickets from a [`rustls::crypto::aws_lc_rs::Ticketer`] (stateless, keys
//!    rotated by rustls) and a session cache of [`SESSION_CACHE_ENTRIES`] for clients that
//!    do not take tickets, so a reconnecting client skips the full handshake.
//!
//! Each build makes new ticket keys and an empty cache, so after a reload clients do one
//! full handshake with the new certificate.

use std::path::Path;
use std::sync::Arc;

use rustls::server::{ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::sign::SingleCertAndKey;
use rustls::{RootCertStore, ServerConfig};

use super::check::{self, CertificateInfo};
use super::{pem, TlsError};
use crate::config::{ClientCertificates, TlsSettings};

/// Sessions the server remembers for resumption by session ID (each a few hundred
/// octets): enough for the clients of a busy directory that reconnect within minutes.
pub const SESSION_CACHE_ENTRIES: usize = 4096;

/// The configuration rustls serves with, and what to print about its certificate.
pub struct Built {
    /// The rustls configuration.
    pub config: Arc<ServerConfig>,
    /// The leaf certificate.
    pub info: CertificateInfo,
}

/// Seconds since 1970, now.
fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Reads the files of `settings` and builds the configuration (see the module steps).
pub fn build(settings: &TlsSettings) -> Result<Built, TlsError> {
    build_at(settings, now_unix())
}

/// [`build`] with the validity checked at `now` (Unix seconds).
pub fn build_at(settings: &TlsSettings, now: i64) -> Result<Built, TlsError> {
    let provider = Arc::new(rustls::crypto::CryptoProvider {
        cipher_suites: server_cipher_suites(),
        ..rustls::crypto::aws_lc_rs::default_provider()
    });
    let chain = pem::certificates(&settings.certificate, "certificate")?;
    let info = check::check_validity(&settings.certificate, &chain, now)?;
    let key = pem::private_key(&settings.key)?;
    let certified = check::certified_key(
        &settings.certificate,
        &settings.key,
        chain,
        key,
        &provider,
        &info.subject,
    )?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let builder = match (&settings.client_ca, settings.client_certificates) {
        (Some(ca), mode) if mode != ClientCertificates::None => {
            let roots = client_roots(ca)?;
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if mode == ClientCertificates::Request {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier.build().map_err(|e| TlsError::ClientCa {
                path: ca.clone(),
                reason: e.to_string(),
            })?;
            builder.with_client_cert_verifier(verifier)
        }
        _ => builder.with_no_client_auth(),
    };
    let mut config = builder.with_cert_resolver(Arc::new(SingleCertAndKey::from(certified)));
    config.ignore_client_order = true;
    config.ticketer =
        rustls::crypto::aws_lc_rs::Ticketer::new().map_err(|e| TlsError::Config(e.to_string()))?;
    config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE_ENTRIES);
    Ok(Built {
        config: Arc::new(config),
        info,
    })
}

/// The cipher suites offered, in the order the server picks from: every suite of the
/// aws-lc-rs defaults, those whose hash is SHA-256 first (AES-128-GCM, then ChaCha20 for
/// TLS 1.3; the AES-256-GCM/SHA-384 suites after them).
///
/// Why: besides the key exchange, a TLS 1.3 handshake's cost is HMAC in the key schedule
/// (about 35 HKDF steps, 76 HMAC keys, per resumed handshake) and the transcript hash, and
/// SHA-256 runs in hardware on x86 (SHA-NI) and ARMv8 while SHA-384 does not; with SHA-384 the key schedule was a third of the
/// instructions of a resumed TLS 1.3 handshake (callgrind). AES-128 matches the 128-bit
/// strength of the key exchange (X25519, P-256) and the certificate. Clients commonly list
/// AES-256 first (OpenSSL, rustls), so the server's order is used
/// (`ignore_client_order`), as Go's crypto/tls does; a client that offers only SHA-384
/// suites still gets one.
pub fn server_cipher_suites() -> Vec<rustls::SupportedCipherSuite> {
    let mut suites = rustls::crypto::aws_lc_rs::DEFAULT_CIPHER_SUITES.to_vec();
    // Stable: within each hash the defaults' order is kept.
    suites.sort_by_key(|s| {
        let common = match s {
            rustls::SupportedCipherSuite::Tls13(s) => &s.common,
            rustls::SupportedCipherSuite::Tls12(s) => &s.common,
        };
        common.hash_provider.algorithm() != rustls::crypto::hash::HashAlgorithm::SHA256
    });
    suites
}

/// The CA certificates of `path` as trust anchors for client certificates.
pub(crate) fn client_roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let certs = pem::certificates(path, "client CA")?;
    let mut roots = RootCertStore::empty();
    for (i, c) in certs.into_iter().enumerate() {
        roots.add(c).map_err(|e| TlsError::ClientCa {
            path: path.to_path_buf(),
            reason: format!("certificate {}: {e}", i + 1),
        })?;
    }
    Ok(roots)
}
