//! TLS: the server's certificate and key, the handshake, reloading, and the demo
//! certificates.
//!
//! - [`pem`] reads the PEM files, [`check`] refuses an expired or not yet valid
//!   certificate and a key that is not the certificate's (naming the file and the dates),
//!   [`server_config`] builds the rustls configuration (client certificates, TLS 1.2 and
//!   1.3, session resumption);
//! - [`TlsState`] holds the configuration connections use: `ldaps://` listeners hand every
//!   accepted socket to [`TlsState::handshake`] before the first request, `ldap://`
//!   connections after a successful StartTLS (`crate::session`);
//! - [`TlsState::reload`] (SIGHUP) reads the files again: connections accepted afterwards
//!   use the new certificate, existing ones keep the TLS session they have; a reload that
//!   fails leaves the previous configuration in place;
//! - [`demo`] makes the self-signed CA and server certificate of `larch serve --demo-tls`.
//!
//! Invariant: a [`TlsState`] always holds a configuration that was complete and valid when
//! it was loaded; nothing is swapped in before every check passed.

pub mod check;
pub mod demo;
mod error;
pub mod pem;
pub mod server_config;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls_pki_types::CertificateDer;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

pub use check::CertificateInfo;
pub use error::TlsError;

use crate::config::TlsSettings;

/// Longest a TLS handshake may take: a client that opens a connection and sends nothing
/// would otherwise hold a connection slot until the idle timeout.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The server's TLS configuration, replaceable while the server runs.
#[derive(Debug)]
pub struct TlsState {
    settings: TlsSettings,
    current: RwLock<Current>,
}

#[derive(Debug, Clone)]
struct Current {
    config: Arc<rustls::ServerConfig>,
    info: CertificateInfo,
}

impl TlsState {
    /// Reads and checks the files of `settings`.
    pub fn load(settings: &TlsSettings) -> Result<TlsState, TlsError> {
        let built = server_config::build(settings)?;
        Ok(TlsState {
            settings: settings.clone(),
            current: RwLock::new(Current {
                config: built.config,
                info: built.info,
            }),
        })
    }

    /// The settings the files are read from.
    pub fn settings(&self) -> &TlsSettings {
        &self.settings
    }

    /// Reads the certificate, key and client CA files again; on success new handshakes use
    /// them and the new certificate is returned, on failure nothing changes.
    pub fn reload(&self) -> Result<CertificateInfo, TlsError> {
        let built = server_config::build(&self.settings)?;
        let info = built.info.clone();
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Current {
            config: built.config,
            info: built.info,
        };
        Ok(info)
    }

    /// The certificate in use.
    pub fn certificate(&self) -> CertificateInfo {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .info
            .clone()
    }

    fn acceptor(&self) -> TlsAcceptor {
        let config = self
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .config
            .clone();
        TlsAcceptor::from(config)
    }

    /// Runs the server side of a handshake on `tcp` (at most [`HANDSHAKE_TIMEOUT`]): the
    /// protected stream and the client's certificate when it presented one; `None` when
    /// the handshake fails or times out (the connection is then dropped).
    pub async fn handshake(
        &self,
        tcp: TcpStream,
    ) -> Option<(TlsStream<TcpStream>, Option<CertificateDer<'static>>)> {
        let acceptor = self.acceptor();
        let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp))
            .await
            .ok()?
            .ok()?;
        let cert = stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
            .map(|c| c.clone().into_owned());
        Some((stream, cert))
    }
}

/// What a completed handshake agreed, as the access log prints it: the protocol version
/// (`TLS1.2`, `TLS1.3`), the cipher suite's name and its symmetric key size in bits.
pub fn negotiated(conn: &rustls::ServerConnection) -> (&'static str, &'static str, u32) {
    let version = match conn.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_3) => "TLS1.3",
        Some(rustls::ProtocolVersion::TLSv1_2) => "TLS1.2",
        _ => "TLS",
    };
    let cipher = conn
        .negotiated_cipher_suite()
        .and_then(|s| s.suite().as_str())
        .unwrap_or("unknown");
    let keysize = if cipher.contains("AES_128") { 128 } else { 256 };
    (version, cipher, keysize)
}
