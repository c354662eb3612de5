//! TLS for the load client: `ldaps://` (TLS from the first octet) and StartTLS (RFC 4511
//! section 4.14) on `ldap://`, with rustls (aws-lc-rs provider) and tokio-rustls.
//!
//! Invariants:
//! - one [`TlsSetup`] per run: a single `rustls::ClientConfig`, so every connection of every
//!   client thread shares its session store, a [`ClientSessions`] sized for the run's
//!   connections (resumption works across connections and threads unless
//!   `--no-tls-resumption` turns it off);
//! - TLS is never silently weaker than asked: without `--ca-file` the run is refused unless
//!   `--tls-insecure` says so, and an insecure run says so in its report;
//! - the plain path is untouched: the pipelined loop is generic over `ConnIo` and is
//!   compiled once for a `TcpStream` (whose methods it calls directly, as before) and once
//!   for `TlsIo`; nothing is boxed or copied per operation on the plain path.
//!
//! How a TLS connection is opened (`client.rs` drives the steps):
//! 1. TCP connect (`TCP_NODELAY`), as for plain LDAP;
//! 2. StartTLS only: the ExtendedRequest `1.3.6.1.4.1.1466.20037` is sent and its response
//!    read; anything but `success` is a set-up error naming the result code and the server's
//!    diagnostic message;
//! 3. the TLS handshake, by tokio-rustls ([`TlsSetup::handshake`]); the kind of handshake
//!    (full, resumed, full after HelloRetryRequest) is counted;
//! 4. connections used one request at a time (set-up binds, the auth workload's connection per
//!    operation) keep the tokio-rustls stream; pipelined connections take the socket and the
//!    rustls connection out of it and run them as a `TlsIo`: rustls driven by the socket's
//!    readiness, the same way the plain loop drives the socket (`ready`, `try_read`,
//!    `try_write`), so one loop serves both.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme};
use serde::Serialize;
use tokio::io::{Interest, Ready};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use crate::sessions::ClientSessions;
use tokio_rustls::TlsConnector;

use crate::report::{HandshakeCounts, TlsSession};
use crate::url::LdapUrl;

/// How the client reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// LDAP over TCP.
    Plain,
    /// `ldaps://`: TLS from the first octet.
    Ldaps,
    /// `ldap://` upgraded by the StartTLS extended operation.
    #[serde(rename = "starttls")]
    StartTls,
}

impl Transport {
    /// `plain`, `ldaps` or `starttls`.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Plain => "plain",
            Transport::Ldaps => "ldaps",
            Transport::StartTls => "starttls",
        }
    }
}

/// A TLS protocol version to pin (`--tls-version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TlsVersion {
    /// TLS 1.2 only.
    Tls12,
    /// TLS 1.3 only.
    Tls13,
}

impl TlsVersion {
    /// Parses `1.2` or `1.3` (also `tls1.2`, `TLSv1.3`).
    pub fn parse(s: &str) -> Option<Self> {
        let lower = s.trim().to_ascii_lowercase();
        let bare = lower
            .strip_prefix("tlsv")
            .or_else(|| lower.strip_prefix("tls"))
            .unwrap_or(&lower);
        match bare {
            "1.2" => Some(TlsVersion::Tls12),
            "1.3" => Some(TlsVersion::Tls13),
            _ => None,
        }
    }
}

/// The TLS options of a run (`larch bench --starttls --ca-file ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    /// Send StartTLS on an `ldap://` URL before anything else.
    pub starttls: bool,
    /// PEM file of the certificates to trust (required unless `insecure`).
    pub ca_file: Option<PathBuf>,
    /// Accept any server certificate (signatures of the handshake are still checked).
    pub insecure: bool,
    /// PEM certificate chain presented to the server (with `key`).
    pub cert: Option<PathBuf>,
    /// PEM private key of `cert`.
    pub key: Option<PathBuf>,
    /// Name sent as SNI and verified in the certificate (default: the URL's host; an IP
    /// literal is verified against the certificate's IP addresses).
    pub server_name: Option<String>,
    /// Pin one TLS version (default: 1.2 and 1.3 offered).
    pub version: Option<TlsVersion>,
    /// Keep a session cache shared by every connection of the run (default: on).
    pub resumption: bool,
    /// Key exchange groups offered, in order (`--tls-groups`; default: rustls' own order,
    /// X25519MLKEM768 first). Names as in [`key_exchange_groups`].
    pub groups: Option<Vec<String>>,
}

impl Default for TlsOptions {
    fn default() -> Self {
        TlsOptions {
            starttls: false,
            ca_file: None,
            insecure: false,
            cert: None,
            key: None,
            server_name: None,
            version: None,
            resumption: true,
            groups: None,
        }
    }
}

/// The key exchange groups named in `names` (case-insensitive, as rustls prints them:
/// `X25519MLKEM768`, `X25519`, `secp256r1`, `secp384r1`, `secp256r1MLKEM768`, `MLKEM768`), in
/// that order, or which name is unknown. `X25519` alone is what an OpenSSL 3.0 client (Debian
/// 12's ldapsearch, python-ldap) offers first; OpenSSL 3.5 and rustls offer X25519MLKEM768.
pub fn key_exchange_groups(
    names: &[String],
) -> Result<Vec<&'static dyn rustls::crypto::SupportedKxGroup>, String> {
    let all = rustls::crypto::aws_lc_rs::ALL_KX_GROUPS;
    names
        .iter()
        .map(|n| {
            all.iter()
                .find(|g| format!("{:?}", g.name()).eq_ignore_ascii_case(n))
                .copied()
                .ok_or_else(|| {
                    let known: Vec<String> = all.iter().map(|g| format!("{:?}", g.name())).collect();
                    format!(
                        "--tls-groups: unknown key exchange group `{n}` (known: {})",
                        known.join(", ")
                    )
                })
        })
        .collect()
}

impl TlsOptions {
    /// The transport these options and `url` ask for, or why they contradict each other.
    ///
    /// Refused: StartTLS on `ldaps://`; TLS without `--ca-file` and without `--tls-insecure`;
    /// both of those; `--cert` without `--key` (and the reverse); TLS options on a plain
    /// `ldap://` run (they would silently measure something else than asked).
    pub fn transport(&self, url: &LdapUrl) -> Result<Transport, String> {
        let transport = match (url.ldaps, self.starttls) {
            (true, true) => {
                return Err(format!(
                    "--starttls cannot be used with {url}: ldaps:// is TLS from the first octet \
                     (use ldap:// with --starttls, or ldaps:// alone)"
                ))
            }
            (true, false) => Transport::Ldaps,
            (false, true) => Transport::StartTls,
            (false, false) => Transport::Plain,
        };
        match (&self.cert, &self.key) {
            (Some(_), None) => return Err("--cert needs --key (the client certificate's private key)".into()),
            (None, Some(_)) => return Err("--key needs --cert (the client certificate)".into()),
            _ => {}
        }
        if transport == Transport::Plain {
            let given = [
                (self.ca_file.is_some(), "--ca-file"),
                (self.insecure, "--tls-insecure"),
                (self.cert.is_some(), "--cert"),
                (self.server_name.is_some(), "--tls-server-name"),
                (self.version.is_some(), "--tls-version"),
                (!self.resumption, "--no-tls-resumption"),
                (self.groups.is_some(), "--tls-groups"),
            ];
            if let Some((_, flag)) = given.iter().find(|(on, _)| *on) {
                return Err(format!(
                    "{flag} is a TLS option but {url} is plain LDAP (use ldaps:// or --starttls)"
                ));
            }
            return Ok(transport);
        }
        match (&self.ca_file, self.insecure) {
            (None, false) => Err(format!(
                "TLS to {url} needs --ca-file PEM (the CA that signed the server's certificate), \
                 or --tls-insecure to skip verification"
            )),
            (Some(_), true) => {
                Err("--ca-file and --tls-insecure contradict each other: give one of them".into())
            }
            _ => Ok(transport),
        }
    }
}

/// Everything a run needs to open TLS connections, built once and shared by every thread.
pub struct TlsSetup {
    /// ldaps or StartTLS.
    pub transport: Transport,
    connector: TlsConnector,
    server_name: ServerName<'static>,
    verified: bool,
    resumption: bool,
    client_certificate: bool,
}

impl std::fmt::Debug for TlsSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSetup")
            .field("transport", &self.transport)
            .field("server_name", &self.server_name)
            .field("verified", &self.verified)
            .field("resumption", &self.resumption)
            .finish_non_exhaustive()
    }
}

impl TlsSetup {
    /// Builds the client configuration for `url`, for a run of `connections` concurrent
    /// connections; `None` for plain LDAP. Errors name the file or option concerned.
    pub fn new(opts: &TlsOptions, url: &LdapUrl, connections: usize) -> Result<Option<Self>, String> {
        let transport = opts.transport(url)?;
        if transport == Transport::Plain {
            return Ok(None);
        }
        let mut provider = rustls::crypto::aws_lc_rs::default_provider();
        if let Some(names) = &opts.groups {
            provider.kx_groups = key_exchange_groups(names)?;
            if provider.kx_groups.is_empty() {
                return Err("--tls-groups: no key exchange group given".into());
            }
        }
        let provider = Arc::new(provider);
        let versions: &[&'static rustls::SupportedProtocolVersion] = match opts.version {
            None => rustls::DEFAULT_VERSIONS,
            Some(TlsVersion::Tls12) => &[&rustls::version::TLS12],
            Some(TlsVersion::Tls13) => &[&rustls::version::TLS13],
        };
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .map_err(|e| format!("TLS configuration: {e}"))?;
        let builder = match &opts.ca_file {
            Some(path) => {
                let mut roots = RootCertStore::empty();
                for cert in read_certs(path)? {
                    roots
                        .add(cert)
                        .map_err(|e| format!("--ca-file {}: {e}", path.display()))?;
                }
                builder.with_root_certificates(roots)
            }
            None => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerification(provider))),
        };
        let mut config = match (&opts.cert, &opts.key) {
            (Some(cert), Some(key)) => {
                let chain = read_certs(cert)?;
                let key = PrivateKeyDer::from_pem_file(key)
                    .map_err(|e| format!("--key {}: no private key read: {e}", key.display()))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("--cert {} / --key: {e}", cert.display()))?
            }
            _ => builder.with_no_client_auth(),
        };
        config.resumption = if opts.resumption {
            Resumption::store(Arc::new(ClientSessions::new(connections)))
        } else {
            Resumption::disabled()
        };
        let name = opts.server_name.clone().unwrap_or_else(|| url.host.clone());
        let server_name = ServerName::try_from(name.clone()).map_err(|_| {
            format!("`{name}` is not a valid TLS server name (a DNS name or an IP address; see --tls-server-name)")
        })?;
        Ok(Some(TlsSetup {
            transport,
            connector: TlsConnector::from(Arc::new(config)),
            server_name,
            verified: opts.ca_file.is_some(),
            resumption: opts.resumption,
            client_certificate: opts.cert.is_some(),
        }))
    }

    /// Runs the TLS handshake on `tcp` (after StartTLS, when that is the transport).
    pub async fn handshake(&self, tcp: TcpStream) -> io::Result<TlsStream<TcpStream>> {
        self.connector.connect(self.server_name.clone(), tcp).await
    }

    /// What was negotiated on `conn`, for the report.
    pub fn session(&self, conn: &ClientConnection) -> TlsSession {
        let version = match conn.protocol_version() {
            Some(rustls::ProtocolVersion::TLSv1_3) => "TLS 1.3".to_string(),
            Some(rustls::ProtocolVersion::TLSv1_2) => "TLS 1.2".to_string(),
            Some(v) => format!("{v:?}"),
            None => "-".to_string(),
        };
        let cipher_suite = conn.negotiated_cipher_suite().map_or("-".to_string(), |s| {
            let s = s.suite();
            s.as_str().map_or_else(|| format!("{s:?}"), str::to_string)
        });
        let key_exchange = conn.negotiated_key_exchange_group().map_or("-".to_string(), |g| {
            let n = g.name();
            n.as_str().map_or_else(|| format!("{n:?}"), str::to_string)
        });
        let server_name = match &self.server_name {
            ServerName::DnsName(d) => d.as_ref().to_string(),
            ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
            other => format!("{other:?}"),
        };
        TlsSession {
            version,
            cipher_suite,
            key_exchange,
            server_name,
            verified: self.verified,
            resumption: self.resumption,
            client_certificate: self.client_certificate,
        }
    }
}

/// Counts the handshake `conn` made into `counts`.
pub fn count_handshake(counts: &mut HandshakeCounts, conn: &ClientConnection) {
    match conn.handshake_kind() {
        Some(rustls::HandshakeKind::Resumed) => counts.resumed += 1,
        Some(rustls::HandshakeKind::FullWithHelloRetryRequest) => counts.full_hello_retry += 1,
        // A handshake that completed is one of the three; count anything else as full.
        _ => counts.full += 1,
    }
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no PEM certificate in the file", path.display()));
    }
    Ok(certs)
}

/// `--tls-insecure`: accepts any certificate chain and name, but still checks the
/// handshake's signatures, so an insecure run costs the server what a verified one does.
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// What the pipelined loop needs of its connection: the readiness-driven calls of a tokio
/// `TcpStream`. Non-blocking calls return `WouldBlock` when they cannot progress.
pub(crate) trait ConnIo {
    /// Waits until the socket is ready for `interest`.
    async fn ready(&self, interest: Interest) -> io::Result<Ready>;
    /// Reads received LDAP octets; `Ok(0)` is the end of the stream.
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    /// Writes LDAP octets; returns how many were taken.
    fn try_write(&mut self, buf: &[u8]) -> io::Result<usize>;
    /// True when octets already taken still wait to go out (TLS records); the loop then
    /// waits for writability and calls [`ConnIo::try_flush`].
    fn wants_write(&self) -> bool;
    /// Sends what [`ConnIo::wants_write`] reports.
    fn try_flush(&mut self) -> io::Result<()>;
    /// Best effort polite end: `last` (an UnbindRequest), then, for TLS, close_notify.
    fn close(&mut self, last: &[u8]);
}

impl ConnIo for TcpStream {
    #[inline]
    async fn ready(&self, interest: Interest) -> io::Result<Ready> {
        TcpStream::ready(self, interest).await
    }

    #[inline]
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        TcpStream::try_read(self, buf)
    }

    #[inline]
    fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        TcpStream::try_write(self, buf)
    }

    #[inline]
    fn wants_write(&self) -> bool {
        false
    }

    #[inline]
    fn try_flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn close(&mut self, last: &[u8]) {
        let _ = TcpStream::try_write(self, last);
    }
}

/// A pipelined TLS connection: the socket and the rustls connection taken out of a
/// tokio-rustls stream once the handshake (and the set-up bind) are done.
///
/// Reads: plaintext rustls already holds first; then TLS records from the socket
/// (`try_read`), decrypted, until rustls has plaintext or the socket would block. Writes:
/// records rustls still holds go out first; then the plaintext is taken (up to rustls'
/// buffer limit) and encrypted, and as much as the socket takes is sent.
pub(crate) struct TlsIo {
    sock: TcpStream,
    tls: ClientConnection,
}

impl TlsIo {
    /// Takes the parts of a connected stream.
    pub(crate) fn new(stream: TlsStream<TcpStream>) -> Self {
        let (sock, tls) = stream.into_inner();
        TlsIo { sock, tls }
    }

    fn flush_records(&mut self) -> io::Result<()> {
        while self.tls.wants_write() {
            if self.tls.write_tls(&mut SockWriter(&self.sock))? == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
        }
        Ok(())
    }
}

/// `io::Read` over a non-blocking tokio socket (`WouldBlock` when it has nothing).
struct SockReader<'a>(&'a TcpStream);

impl Read for SockReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

/// `io::Write` over a non-blocking tokio socket (`WouldBlock` when it is full).
struct SockWriter<'a>(&'a TcpStream);

impl Write for SockWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.0.try_write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

impl ConnIo for TlsIo {
    async fn ready(&self, interest: Interest) -> io::Result<Ready> {
        self.sock.ready(interest).await
    }

    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.tls.reader().read(buf) {
                // Plaintext, or 0 after the server's close_notify.
                Ok(n) => return Ok(n),
                Err(e) if would_block(&e) => {}
                // The socket ended without close_notify: the end of the stream all the same
                // (servers often close that way, and the plain loop sees the same end).
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            // Nothing decrypted yet: more records from the socket (WouldBlock ends the call;
            // after the socket's end rustls answers the read above with 0 or an error).
            self.tls.read_tls(&mut SockReader(&self.sock))?;
            self.tls
                .process_new_packets()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            // The records read may call for an answer (a key update, an alert).
            match self.flush_records() {
                Err(e) if !would_block(&e) => return Err(e),
                _ => {}
            }
        }
    }

    fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.flush_records()?;
        let n = self.tls.writer().write(buf)?;
        match self.flush_records() {
            Err(e) if !would_block(&e) => return Err(e),
            _ => {}
        }
        if n == 0 && !buf.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(n)
    }

    fn wants_write(&self) -> bool {
        self.tls.wants_write()
    }

    fn try_flush(&mut self) -> io::Result<()> {
        self.flush_records()
    }

    fn close(&mut self, last: &[u8]) {
        let _ = self.tls.writer().write_all(last);
        self.tls.send_close_notify();
        let _ = self.flush_records();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> LdapUrl {
        LdapUrl::parse(s).unwrap()
    }

    #[test]
    fn versions_parse() {
        assert_eq!(TlsVersion::parse("1.2"), Some(TlsVersion::Tls12));
        assert_eq!(TlsVersion::parse("TLSv1.3"), Some(TlsVersion::Tls13));
        assert_eq!(TlsVersion::parse("tls1.3"), Some(TlsVersion::Tls13));
        assert_eq!(TlsVersion::parse("1.1"), None);
        assert_eq!(TlsVersion::parse(""), None);
    }

    #[test]
    fn transports_and_contradictions() {
        let plain = url("ldap://h");
        let ldaps = url("ldaps://h");
        let ca = Some(PathBuf::from("ca.pem"));
        let o = TlsOptions::default();
        assert_eq!(o.transport(&plain), Ok(Transport::Plain));
        let err = o.transport(&ldaps).unwrap_err();
        assert!(
            err.contains("--ca-file") && err.contains("--tls-insecure"),
            "{err}"
        );
        let o = TlsOptions {
            ca_file: ca.clone(),
            ..TlsOptions::default()
        };
        assert_eq!(o.transport(&ldaps), Ok(Transport::Ldaps));
        let err = o.transport(&plain).unwrap_err();
        assert!(err.contains("--ca-file") && err.contains("plain"), "{err}");
        let o = TlsOptions {
            starttls: true,
            insecure: true,
            ..TlsOptions::default()
        };
        assert_eq!(o.transport(&plain), Ok(Transport::StartTls));
        let err = o.transport(&ldaps).unwrap_err();
        assert!(
            err.contains("--starttls") && err.contains("ldaps://h:636"),
            "{err}"
        );
        let o = TlsOptions {
            ca_file: ca.clone(),
            insecure: true,
            ..TlsOptions::default()
        };
        assert!(o.transport(&ldaps).unwrap_err().contains("contradict"));
        let o = TlsOptions {
            ca_file: ca.clone(),
            cert: Some("c.pem".into()),
            ..TlsOptions::default()
        };
        assert!(o.transport(&ldaps).unwrap_err().contains("--cert needs --key"));
        let o = TlsOptions {
            ca_file: ca,
            key: Some("k.pem".into()),
            ..TlsOptions::default()
        };
        assert!(o.transport(&ldaps).unwrap_err().contains("--key needs --cert"));
        let o = TlsOptions {
            resumption: false,
            ..TlsOptions::default()
        };
        assert!(o.transport(&plain).unwrap_err().contains("--no-tls-resumption"));
        let o = TlsOptions {
            groups: Some(vec!["X25519".into()]),
            ..TlsOptions::default()
        };
        assert!(o.transport(&plain).unwrap_err().contains("--tls-groups"));
    }

    #[test]
    fn setup_errors_name_the_file_and_the_name() {
        let dir = std::env::temp_dir().join(format!("larch-bench-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let o = TlsOptions {
            ca_file: Some(empty.clone()),
            ..TlsOptions::default()
        };
        let err = TlsSetup::new(&o, &url("ldaps://h"), 1).unwrap_err();
        assert!(
            err.contains("empty.pem") && err.contains("no PEM certificate"),
            "{err}"
        );
        let missing = dir.join("missing.pem");
        let o = TlsOptions {
            ca_file: Some(missing),
            ..TlsOptions::default()
        };
        let err = TlsSetup::new(&o, &url("ldaps://h"), 1).unwrap_err();
        assert!(err.contains("missing.pem"), "{err}");
        let o = TlsOptions {
            insecure: true,
            server_name: Some("bad name!".into()),
            ..TlsOptions::default()
        };
        let err = TlsSetup::new(&o, &url("ldaps://h"), 1).unwrap_err();
        assert!(err.contains("bad name!"), "{err}");
        assert!(TlsSetup::new(&TlsOptions::default(), &url("ldap://h"), 1)
            .unwrap()
            .is_none());
        let o = TlsOptions {
            insecure: true,
            ..TlsOptions::default()
        };
        let s = TlsSetup::new(&o, &url("ldaps://[::1]"), 1).unwrap().unwrap();
        assert_eq!(s.transport, Transport::Ldaps);
        assert!(matches!(s.server_name, ServerName::IpAddress(_)));
        let o = TlsOptions {
            insecure: true,
            groups: Some(vec!["x25519".into(), "NoSuchGroup".into()]),
            ..TlsOptions::default()
        };
        let err = TlsSetup::new(&o, &url("ldaps://h"), 1).unwrap_err();
        assert!(
            err.contains("`NoSuchGroup`") && err.contains("X25519MLKEM768"),
            "{err}"
        );
        let o = TlsOptions {
            insecure: true,
            groups: Some(Vec::new()),
            ..TlsOptions::default()
        };
        assert!(TlsSetup::new(&o, &url("ldaps://h"), 1).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn key_exchange_groups_by_name_in_the_order_given() {
        let names = |v: &[&str]| key_exchange_groups(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let g = names(&["secp256r1", "x25519"]).unwrap();
        assert_eq!(
            g.iter().map(|g| g.name()).collect::<Vec<_>>(),
            [rustls::NamedGroup::secp256r1, rustls::NamedGroup::X25519]
        );
        assert_eq!(
            names(&["X25519MLKEM768"]).unwrap()[0].name(),
            rustls::NamedGroup::X25519MLKEM768
        );
        assert!(names(&["ffdhe2048"]).is_err());
    }
}
