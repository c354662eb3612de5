//! Building the rustls server configuration from `[tls]`.
//!
//! Steps:
//! 1. read the certificate chain and check every certificate's validity
//!    ([`super::check::check_validity`]);
//! 2. read the private key and check it is the leaf's key ([`super::check::certified_key`]);
//! 3. with a client CA file, build the client certificate verifier: `"request"` lets a
//!    client without a certificate connect, `"require"` fails its handshake;
//! 4. offer TLS 1.3 and 1.2 (aws-lc-rs provider), and session resumption both ways: TLS
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
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
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
    config.ticketer =
        rustls::crypto::aws_lc_rs::Ticketer::new().map_err(|e| TlsError::Config(e.to_string()))?;
    config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE_ENTRIES);
    Ok(Built {
        config: Arc::new(config),
        info,
    })
}

/// The CA certificates of `path` as trust anchors for client certificates.
fn client_roots(path: &Path) -> Result<RootCertStore, TlsError> {
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
