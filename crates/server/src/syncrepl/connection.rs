//! An LDAP connection to another server, as its client: the consumer's to its provider,
//! a chained write's to the provider, a cluster follower's to its leader. TCP (with
//! keepalive), TLS (`ldaps://`, or StartTLS on `ldap://`), a simple Bind, then messages
//! sent and received one PDU at a time. What to connect to and how to bind is an
//! [`Upstream`]: a `[[replication]]` table's, or `[cluster]`'s with the leader's URL.
//!
//! Protocol, in steps:
//! 1. resolve the provider's host and connect, within [`CONNECT_TIMEOUT`];
//! 2. `ldaps://`: the TLS handshake; `starttls = true`: the StartTLS extended operation
//!    (message 1), its success, then the handshake; within [`RESPONSE_TIMEOUT`] each. The
//!    provider's certificate is verified against `ca_file` and the provider's host name;
//!    `client_cert`/`client_key` are presented when configured;
//! 3. a simple Bind as `bind_dn` with the credentials (message 2), within
//!    [`RESPONSE_TIMEOUT`]; anything but success ends the session;
//! 4. the caller sends its search and reads PDUs ([`Connection::next_pdu`]).
//!
//! Limits: a PDU whose header declares more than `limits.max_pdu_bytes` is refused before
//! its body is read ([`larch_proto::frame`]), so the read buffer never grows beyond that
//! plus one read; a provider that sends 100 MB in one message ends the session with
//! [`SyncError::TooLarge`], it cannot exhaust memory.

use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use larch_proto::frame::{frame, Frame};
use larch_proto::{exop, Authentication, BindRequest, ExtendedRequest, LdapMessage, ProtocolOp, ResultCode};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::TlsConnector;

use super::error::SyncError;
use crate::config::{Credentials, ListenUrl, ReplicationSettings};
use crate::tls::pem;

/// Longest wait for the TCP connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for the answer to StartTLS, the handshake or the Bind.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);
/// The read buffer's first size and the least room asked of each read.
const READ_CHUNK: usize = 64 * 1024;
/// Message IDs of the set-up requests.
const STARTTLS_ID: i32 = 1;
const BIND_ID: i32 = 2;

/// A socket, plain or TLS.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// The server a connection goes to and how it binds there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// The server's URL, as written (`ldap://host:port` or `ldaps://host:port`).
    pub url: String,
    /// The URL, parsed.
    pub parsed_url: ListenUrl,
    /// The DN of the simple Bind.
    pub bind_dn: String,
    /// Its password.
    pub credentials: Credentials,
    /// StartTLS on an `ldap://` URL.
    pub starttls: bool,
    /// The CA certificates (PEM) the server's certificate is verified against (TLS).
    pub ca_file: Option<std::path::PathBuf>,
    /// The client certificate presented (TLS), with its key.
    pub client_cert: Option<std::path::PathBuf>,
    /// The client certificate's key.
    pub client_key: Option<std::path::PathBuf>,
}

impl Upstream {
    /// True when the connection uses TLS.
    pub fn uses_tls(&self) -> bool {
        self.starttls || self.parsed_url.tls
    }
}

impl From<&ReplicationSettings> for Upstream {
    /// A table's provider.
    fn from(s: &ReplicationSettings) -> Upstream {
        Upstream {
            url: s.provider.clone(),
            parsed_url: s.provider_url.clone(),
            bind_dn: s.bind_dn.clone(),
            credentials: s.credentials.clone(),
            starttls: s.starttls,
            ca_file: s.ca_file.clone(),
            client_cert: s.client_cert.clone(),
            client_key: s.client_key.clone(),
        }
    }
}

/// The TLS side of an [`Upstream`]: the rustls configuration and the name the certificate
/// must carry. Built once per consumer or chain ([`ClientTls::new`]).
#[derive(Clone)]
pub struct ClientTls {
    connector: TlsConnector,
    name: ServerName<'static>,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls").field("name", &self.name).finish()
    }
}

impl ClientTls {
    /// The configuration of `s`: `None` without TLS.
    pub fn new(s: &Upstream) -> Result<Option<ClientTls>, SyncError> {
        if !s.uses_tls() {
            return Ok(None);
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| SyncError::Tls(e.to_string()))?;
        let mut roots = RootCertStore::empty();
        let ca = s
            .ca_file
            .as_deref()
            .ok_or_else(|| SyncError::Tls("ca_file is required with TLS".into()))?;
        for cert in pem::certificates(ca, "ca_file").map_err(|e| SyncError::Tls(e.to_string()))? {
            roots
                .add(cert)
                .map_err(|e| SyncError::Tls(format!("ca_file {}: {e}", ca.display())))?;
        }
        let builder = builder.with_root_certificates(roots);
        let config = match (&s.client_cert, &s.client_key) {
            (Some(cert), Some(key)) => {
                let chain =
                    pem::certificates(cert, "client_cert").map_err(|e| SyncError::Tls(e.to_string()))?;
                let key = pem::private_key(key).map_err(|e| SyncError::Tls(e.to_string()))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| SyncError::Tls(format!("client_cert: {e}")))?
            }
            _ => builder.with_no_client_auth(),
        };
        let name = ServerName::try_from(s.parsed_url.host.clone())
            .map_err(|_| SyncError::Tls(format!("`{}` is not a TLS server name", s.parsed_url.host)))?;
        Ok(Some(ClientTls {
            connector: TlsConnector::from(Arc::new(config)),
            name,
        }))
    }
}

/// The password of `s`: `credentials`, or the first line of `credentials_file` (read at
/// each connection, so a changed file is used without a restart).
pub fn password(s: &Upstream) -> Result<String, SyncError> {
    match &s.credentials {
        Credentials::Inline(p) => Ok(p.clone()),
        Credentials::File(path) => read_first_line(path),
    }
}

fn read_first_line(path: &Path) -> Result<String, SyncError> {
    let err = |reason: String| SyncError::Credentials {
        path: path.display().to_string(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    if meta.len() > crate::config::replication::MAX_CREDENTIALS_FILE_BYTES {
        return Err(err("larger than 64 KiB, not a password file".into()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    Ok(text.lines().next().unwrap_or("").to_string())
}

/// One connection to the provider.
pub struct Connection {
    stream: Box<dyn Stream>,
    rbuf: Vec<u8>,
    lo: usize,
    hi: usize,
    wbuf: Vec<u8>,
    max_pdu: usize,
}

impl Connection {
    /// Steps 1 to 3 of the module documentation.
    pub async fn open(
        s: &Upstream,
        tls: Option<&ClientTls>,
        max_pdu: usize,
    ) -> Result<Connection, SyncError> {
        let url = &s.parsed_url;
        let tcp = tokio::time::timeout(CONNECT_TIMEOUT, connect(&url.host, url.port))
            .await
            .map_err(|_| SyncError::Timeout("TCP connection"))??;
        let mut conn = Connection::over(Box::new(tcp), max_pdu);
        if let Some(tls) = tls {
            if s.starttls {
                conn.start_tls().await?;
            }
            conn = conn.handshake(tls).await?;
        }
        let password = password(s)?;
        conn.bind(s.bind_dn.as_bytes(), password.as_bytes()).await?;
        Ok(conn)
    }

    /// A connection over `stream` (tests use an in-memory one).
    pub fn over(stream: Box<dyn Stream>, max_pdu: usize) -> Connection {
        Connection {
            stream,
            rbuf: vec![0; READ_CHUNK],
            lo: 0,
            hi: 0,
            wbuf: Vec::with_capacity(1024),
            max_pdu,
        }
    }

    async fn start_tls(&mut self) -> Result<(), SyncError> {
        let req = ExtendedRequest {
            name: exop::START_TLS.as_bytes(),
            value: None,
        };
        self.send(&LdapMessage::new(STARTTLS_ID, ProtocolOp::ExtendedRequest(req)))
            .await?;
        let (code, message) = self.answer(STARTTLS_ID, "StartTLS").await?;
        if code != ResultCode::SUCCESS {
            return Err(SyncError::Refused {
                what: "StartTLS",
                code,
                message,
            });
        }
        if self.lo != self.hi {
            return Err(SyncError::Protocol("octets after the StartTLS response".into()));
        }
        Ok(())
    }

    async fn handshake(self, tls: &ClientTls) -> Result<Connection, SyncError> {
        let max_pdu = self.max_pdu;
        let connect = tls.connector.connect(tls.name.clone(), self.stream);
        let stream = tokio::time::timeout(RESPONSE_TIMEOUT, connect)
            .await
            .map_err(|_| SyncError::Timeout("TLS handshake"))?
            .map_err(|e| SyncError::Tls(format!("handshake: {e}")))?;
        Ok(Connection::over(Box::new(stream), max_pdu))
    }

    async fn bind(&mut self, dn: &[u8], password: &[u8]) -> Result<(), SyncError> {
        let req = BindRequest {
            version: 3,
            name: dn,
            authentication: Authentication::Simple(password),
        };
        self.send(&LdapMessage::new(BIND_ID, ProtocolOp::BindRequest(req)))
            .await?;
        let (code, message) = self.answer(BIND_ID, "Bind").await?;
        if code != ResultCode::SUCCESS {
            return Err(SyncError::Refused {
                what: "Bind",
                code,
                message,
            });
        }
        Ok(())
    }

    /// The result of request `id` (a BindResponse or an ExtendedResponse).
    async fn answer(&mut self, id: i32, what: &'static str) -> Result<(ResultCode, String), SyncError> {
        tokio::time::timeout(RESPONSE_TIMEOUT, async {
            loop {
                let pdu = self.next_pdu().await?;
                let msg = LdapMessage::decode(pdu).map_err(|e| SyncError::Protocol(e.to_string()))?;
                let result = match msg.op {
                    ProtocolOp::BindResponse(b) => b.result,
                    ProtocolOp::ExtendedResponse(e) => e.result,
                    _ => continue,
                };
                let text = String::from_utf8_lossy(result.diagnostic_message).into_owned();
                if msg.message_id == 0 {
                    // A Notice of Disconnection.
                    return Err(SyncError::Refused {
                        what,
                        code: result.code,
                        message: text,
                    });
                }
                if msg.message_id == id {
                    return Ok((result.code, text));
                }
            }
        })
        .await
        .map_err(|_| SyncError::Timeout(what))?
    }

    /// Encodes and writes `msg`.
    pub async fn send(&mut self, msg: &LdapMessage<'_>) -> Result<(), SyncError> {
        let mut buf = std::mem::take(&mut self.wbuf);
        buf.clear();
        msg.encode(&mut buf);
        let r = self.send_encoded(&buf).await;
        self.wbuf = buf;
        r
    }

    /// Writes an encoded message.
    pub async fn send_encoded(&mut self, pdu: &[u8]) -> Result<(), SyncError> {
        self.stream
            .write_all(pdu)
            .await
            .map_err(|e| SyncError::io("writing to the provider", e))?;
        self.stream
            .flush()
            .await
            .map_err(|e| SyncError::io("writing to the provider", e))
    }

    /// The next whole PDU (one framed LDAPMessage, not yet decoded).
    pub async fn next_pdu(&mut self) -> Result<&[u8], SyncError> {
        loop {
            if let Some(n) = self.framed()? {
                let start = self.lo;
                self.lo += n;
                return Ok(&self.rbuf[start..start + n]);
            }
            let n = self
                .stream
                .read(&mut self.rbuf[self.hi..])
                .await
                .map_err(|e| SyncError::io("reading from the provider", e))?;
            if n == 0 {
                return Err(SyncError::Closed);
            }
            self.hi += n;
        }
    }

    /// True when a whole PDU is buffered, or arrives with what the socket holds now: one
    /// read that does not wait (the consumer keeps adding to its batch while the provider's
    /// messages keep coming, and commits when they pause).
    pub async fn pdu_ready(&mut self) -> Result<bool, SyncError> {
        loop {
            if self.framed()?.is_some() {
                return Ok(true);
            }
            match read_now(&mut self.stream, &mut self.rbuf[self.hi..]).await {
                None | Some(Ok(0)) => return Ok(false),
                Some(Ok(n)) => self.hi += n,
                Some(Err(e)) => return Err(SyncError::io("reading from the provider", e)),
            }
        }
    }

    /// False when the provider has closed the connection or sent something unasked (a
    /// Notice of Disconnection) while it sat idle: one read that does not wait. A pooled
    /// connection is checked so before a request is sent on it, so that no request is
    /// sent twice.
    pub async fn idle_and_open(&mut self) -> bool {
        if self.lo != self.hi {
            return false;
        }
        read_now(&mut self.stream, &mut [0u8; 1]).await.is_none()
    }

    /// The length of the whole PDU at the front of the buffer, if there is one; else makes
    /// room for the rest of the partial one (kept at the front).
    fn framed(&mut self) -> Result<Option<usize>, SyncError> {
        match frame(&self.rbuf[self.lo..self.hi], self.max_pdu) {
            Ok(Frame::Complete(n)) => Ok(Some(n)),
            Ok(Frame::Incomplete { total }) => {
                self.rbuf.copy_within(self.lo..self.hi, 0);
                self.hi -= self.lo;
                self.lo = 0;
                let want = total.unwrap_or(0).max(self.hi + READ_CHUNK);
                if want > self.rbuf.len() {
                    self.rbuf.resize(want, 0);
                }
                Ok(None)
            }
            Err(e) => Err(match e.kind {
                larch_proto::DecodeErrorKind::PduTooLarge { .. } => SyncError::TooLarge { max: self.max_pdu },
                _ => SyncError::Protocol(e.to_string()),
            }),
        }
    }
}

/// One read into `buf` that does not wait: `None` when nothing can be read now (the waker
/// the poll registered only makes a spurious wake-up later).
async fn read_now(stream: &mut Box<dyn Stream>, buf: &mut [u8]) -> Option<io::Result<usize>> {
    std::future::poll_fn(|cx| {
        let mut buf = ReadBuf::new(buf);
        Poll::Ready(match Pin::new(&mut **stream).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) => Some(Ok(buf.filled().len())),
            Poll::Ready(Err(e)) => Some(Err(e)),
            Poll::Pending => None,
        })
    })
    .await
}

/// A TCP connection with keepalive on (a provider gone without a word is noticed by the
/// kernel's keepalive probes while the consumer waits in persist mode).
async fn connect(host: &str, port: u16) -> Result<TcpStream, SyncError> {
    let what = || format!("connecting to {host}:{port}");
    let mut last = None;
    let addrs = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| SyncError::io(format!("resolving {host}"), e))?;
    for addr in addrs {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        }
        .map_err(|e| SyncError::io(what(), e))?;
        socket.set_keepalive(true).map_err(|e| SyncError::io(what(), e))?;
        match socket.connect(addr).await {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(SyncError::io(
        what(),
        last.unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use larch_proto::{DelRequest, LdapMessage};
    use tokio::io::AsyncWriteExt;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn pdus_are_framed_across_reads_and_bursts() {
        runtime().block_on(async {
            let (ours, mut theirs) = tokio::io::duplex(64);
            let mut conn = Connection::over(Box::new(ours), 1024);
            let mut wire = Vec::new();
            for id in 1..=3 {
                LdapMessage::new(
                    id,
                    ProtocolOp::DelRequest(DelRequest {
                        dn: b"cn=a,dc=example,dc=com",
                    }),
                )
                .encode(&mut wire);
            }
            let writer = tokio::spawn(async move {
                // A byte at a time, then the connection closes.
                for b in wire {
                    theirs.write_all(&[b]).await.unwrap();
                }
            });
            for id in 1..=3 {
                let pdu = conn.next_pdu().await.unwrap().to_vec();
                assert_eq!(LdapMessage::decode(&pdu).unwrap().message_id, id);
            }
            writer.await.unwrap();
            assert!(matches!(conn.next_pdu().await, Err(SyncError::Closed)));
        });
    }

    #[test]
    fn a_message_over_the_limit_is_refused_from_its_header() {
        runtime().block_on(async {
            let (ours, mut theirs) = tokio::io::duplex(1024);
            let mut conn = Connection::over(Box::new(ours), 8 * 1024 * 1024);
            // A SEQUENCE declaring 100 MB: refused after six octets, nothing else read.
            theirs
                .write_all(&[0x30, 0x84, 0x06, 0x40, 0x00, 0x00])
                .await
                .unwrap();
            assert!(matches!(conn.next_pdu().await, Err(SyncError::TooLarge { .. })));
            assert!(conn.rbuf.len() <= READ_CHUNK);
            // Octets that are no LDAPMessage at all.
            let (ours, mut theirs) = tokio::io::duplex(1024);
            let mut conn = Connection::over(Box::new(ours), 1024);
            theirs.write_all(&[0x04, 0x01, 0x00]).await.unwrap();
            assert!(conn.next_pdu().await.is_err());
        });
    }

    #[test]
    fn the_password_comes_from_the_file_first_line() {
        let dir = std::env::temp_dir().join(format!("larch-syncrepl-pw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("pw");
        std::fs::write(&file, "s3cret\nignored\n").unwrap();
        let text = format!(
            "[[replication]]\nrid = 1\nprovider = \"ldap://p\"\nbind_dn = \"cn=r\"\ncredentials_file = \"{}\"\nbase = \"dc=example,dc=com\"\n",
            file.display()
        );
        let s = Upstream::from(
            &crate::config::ServerConfig::from_toml_str(&text)
                .unwrap()
                .replication
                .remove(0),
        );
        assert_eq!(password(&s).unwrap(), "s3cret");
        std::fs::remove_file(&file).unwrap();
        assert!(matches!(password(&s), Err(SyncError::Credentials { .. })));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
