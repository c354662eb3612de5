//! A connection used one request at a time, over a plain socket or TLS (`ldaps://` or
//! StartTLS): the load client's set-up binds, StartTLS and auth on new connections, and the
//! `larch` binary's administrative requests (`larch backup`, `larch status`), which need no
//! pipelining.

use larch_proto::frame::{frame, Frame};
use larch_proto::{
    exop, Authentication, BindRequest, DerefAliases, ExtendedRequest, LdapMessage, MessageId, OwnedFilter,
    ProtocolOp, ResultCode, SearchRequest, SearchScope, SeqOf,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use crate::client::MAX_RESPONSE_BYTES;
use crate::tls::{TlsSetup, Transport};
use crate::url::LdapUrl;

/// Turns a connected socket into a TLS stream: StartTLS first when that is the transport
/// (message ID 1), then the handshake.
pub async fn tls_open(
    url: &LdapUrl,
    tls: &TlsSetup,
    stream: TcpStream,
) -> Result<TlsStream<TcpStream>, String> {
    let stream = if tls.transport == Transport::StartTls {
        let mut c = SimpleConn::new(stream);
        c.start_tls(1, url).await?;
        c.stream
    } else {
        stream
    };
    tls.handshake(stream).await.map_err(|e| {
        format!("TLS handshake with {url} failed: {e} (check --ca-file, --tls-server-name, --tls-version)")
    })
}

/// A connection used one request at a time (set-up binds, StartTLS, auth on new
/// connections), over a plain socket or a tokio-rustls stream.
pub struct SimpleConn<S> {
    pub(crate) stream: S,
    rbuf: Vec<u8>,
    lo: usize,
    hi: usize,
    pub(crate) wbuf: Vec<u8>,
}

/// What a simple exchange ended with.
#[derive(Debug)]
pub enum SimpleError {
    /// The socket failed.
    Io(std::io::Error),
    /// The server closed the connection.
    Closed,
    /// The server sent octets that are not an LDAPMessage.
    Decode,
}

impl std::fmt::Display for SimpleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimpleError::Io(e) => write!(f, "{e}"),
            SimpleError::Closed => f.write_str("connection closed by the server"),
            SimpleError::Decode => f.write_str("undecodable response"),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> SimpleConn<S> {
    /// A connection over `stream`, nothing sent yet.
    pub fn new(stream: S) -> Self {
        SimpleConn {
            stream,
            rbuf: vec![0; 16 * 1024],
            lo: 0,
            hi: 0,
            wbuf: Vec::with_capacity(512),
        }
    }

    /// Writes what was encoded into the write buffer.
    pub async fn send(&mut self) -> Result<(), SimpleError> {
        self.stream.write_all(&self.wbuf).await.map_err(SimpleError::Io)?;
        self.wbuf.clear();
        Ok(())
    }

    /// Reads messages, giving each to `f`, until `f` returns a value.
    pub async fn read_until<T>(
        &mut self,
        mut f: impl FnMut(&LdapMessage<'_>) -> Option<T>,
    ) -> Result<T, SimpleError> {
        loop {
            while let Ok(Frame::Complete(n)) = frame(&self.rbuf[self.lo..self.hi], MAX_RESPONSE_BYTES) {
                let msg =
                    LdapMessage::decode(&self.rbuf[self.lo..self.lo + n]).map_err(|_| SimpleError::Decode)?;
                self.lo += n;
                if let Some(t) = f(&msg) {
                    return Ok(t);
                }
            }
            match frame(&self.rbuf[self.lo..self.hi], MAX_RESPONSE_BYTES) {
                Err(_) => return Err(SimpleError::Decode),
                Ok(Frame::Incomplete { total }) => {
                    self.rbuf.copy_within(self.lo..self.hi, 0);
                    self.hi -= self.lo;
                    self.lo = 0;
                    let want = total.unwrap_or(0).max(self.hi + 4096);
                    if want > self.rbuf.len() {
                        self.rbuf.resize(want.next_power_of_two(), 0);
                    }
                }
                Ok(Frame::Complete(_)) => unreachable!("complete frames are consumed above"),
            }
            let n = self
                .stream
                .read(&mut self.rbuf[self.hi..])
                .await
                .map_err(SimpleError::Io)?;
            if n == 0 {
                return Err(SimpleError::Closed);
            }
            self.hi += n;
        }
    }

    /// A simple Bind as `dn` with `password`; its result code.
    pub async fn bind(
        &mut self,
        id: MessageId,
        dn: &[u8],
        password: &[u8],
    ) -> Result<ResultCode, SimpleError> {
        let req = BindRequest {
            version: 3,
            name: dn,
            authentication: Authentication::Simple(password),
        };
        LdapMessage::new(id, ProtocolOp::BindRequest(req)).encode(&mut self.wbuf);
        self.send().await?;
        self.read_until(|m| match m.op {
            ProtocolOp::BindResponse(b) if m.message_id == id => Some(b.result.code),
            _ => None,
        })
        .await
    }
}

/// One entry of a search's answer: its DN and attributes, values as text (lossy UTF-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundEntry {
    /// The DN.
    pub dn: String,
    /// The attributes, in the order received.
    pub attributes: Vec<(String, Vec<String>)>,
}

impl FoundEntry {
    /// The first value of attribute `name` (compared without regard to case).
    pub fn first(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| v.first())
            .map(String::as_str)
    }
}

/// What a search was answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchAnswer {
    /// The entries.
    pub entries: Vec<FoundEntry>,
    /// The SearchResultDone's code.
    pub code: ResultCode,
    /// Its diagnostic message.
    pub message: String,
}

impl<S: AsyncRead + AsyncWrite + Unpin> SimpleConn<S> {
    /// Search `id` of `base` with `scope`, filter `filter` (RFC 4515 text) and attribute
    /// list `attributes`; every entry until the SearchResultDone (references are skipped).
    pub async fn search(
        &mut self,
        id: MessageId,
        base: &str,
        scope: SearchScope,
        filter: &str,
        attributes: &[&[u8]],
    ) -> Result<SearchAnswer, String> {
        let filter = OwnedFilter::parse(filter).map_err(|e| format!("filter {filter}: {e}"))?;
        let req = SearchRequest {
            base: base.as_bytes(),
            scope,
            deref_aliases: DerefAliases::Never,
            size_limit: 0,
            time_limit: 0,
            types_only: false,
            filter: filter.as_filter(),
            attributes: SeqOf::from_items(attributes),
        };
        LdapMessage::new(id, ProtocolOp::SearchRequest(req)).encode(&mut self.wbuf);
        self.send().await.map_err(|e| e.to_string())?;
        let mut entries = Vec::new();
        let done = self
            .read_until(|m| {
                if m.message_id != id {
                    return None;
                }
                match &m.op {
                    ProtocolOp::SearchResultEntry(e) => {
                        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                        entries.push(FoundEntry {
                            dn: lossy(e.object_name),
                            attributes: e
                                .attributes
                                .iter()
                                .map(|a| (lossy(a.description), a.values.iter().map(lossy).collect()))
                                .collect(),
                        });
                        None
                    }
                    ProtocolOp::SearchResultDone(r) => {
                        Some((r.code, String::from_utf8_lossy(r.diagnostic_message).into_owned()))
                    }
                    _ => None,
                }
            })
            .await
            .map_err(|e| e.to_string())?;
        Ok(SearchAnswer {
            entries,
            code: done.0,
            message: done.1,
        })
    }
}

/// What an extended operation was answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtendedAnswer {
    /// The result code.
    pub code: ResultCode,
    /// The diagnostic message.
    pub message: String,
    /// The referral URIs (with `referral`, 10).
    pub referrals: Vec<String>,
    /// The responseValue.
    pub value: Option<Vec<u8>>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> SimpleConn<S> {
    /// Sends ExtendedRequest `id` (`name`, `value`) and waits for its response, however long
    /// the server takes. A Notice of Disconnection (message ID 0) is returned as the answer.
    pub async fn extended(
        &mut self,
        id: MessageId,
        name: &str,
        value: Option<&[u8]>,
    ) -> Result<ExtendedAnswer, SimpleError> {
        let req = ExtendedRequest {
            name: name.as_bytes(),
            value,
        };
        LdapMessage::new(id, ProtocolOp::ExtendedRequest(req)).encode(&mut self.wbuf);
        self.send().await?;
        self.read_until(|m| match &m.op {
            ProtocolOp::ExtendedResponse(r) if m.message_id == id || m.message_id == 0 => {
                Some(ExtendedAnswer {
                    code: r.result.code,
                    message: String::from_utf8_lossy(r.result.diagnostic_message).into_owned(),
                    referrals: r
                        .result
                        .referral
                        .iter()
                        .flat_map(|uris| uris.iter())
                        .map(|uri| String::from_utf8_lossy(uri).into_owned())
                        .collect(),
                    value: r.value.map(<[u8]>::to_vec),
                })
            }
            _ => None,
        })
        .await
    }

    /// UnbindRequest `id`, then the socket is shut down; errors are ignored (the connection
    /// is being dropped).
    pub async fn unbind(&mut self, id: MessageId) {
        LdapMessage::new(id, ProtocolOp::UnbindRequest).encode(&mut self.wbuf);
        let _ = self.send().await;
        let _ = self.stream.shutdown().await;
    }
}

impl SimpleConn<TcpStream> {
    /// StartTLS (RFC 4511 section 4.14): sends the request and checks the response. A
    /// refusal names the result code and the server's diagnostic message; octets after the
    /// response (the server must send none before the handshake) are refused too.
    pub async fn start_tls(&mut self, id: MessageId, url: &LdapUrl) -> Result<(), String> {
        let req = ExtendedRequest {
            name: exop::START_TLS.as_bytes(),
            value: None,
        };
        LdapMessage::new(id, ProtocolOp::ExtendedRequest(req)).encode(&mut self.wbuf);
        let fail = |e: SimpleError| format!("StartTLS to {url}: {e}");
        self.send().await.map_err(fail)?;
        let answer = self
            .read_until(|m| match m.op {
                ProtocolOp::ExtendedResponse(r) if m.message_id == id || m.message_id == 0 => Some((
                    m.message_id,
                    r.result.code,
                    String::from_utf8_lossy(r.result.diagnostic_message).into_owned(),
                )),
                _ => None,
            })
            .await
            .map_err(fail)?;
        match answer {
            (0, code, diag) => Err(format!(
                "StartTLS to {url}: the server disconnected ({code}: {})",
                if diag.is_empty() {
                    "no diagnostic message"
                } else {
                    &diag
                }
            )),
            (_, ResultCode::SUCCESS, _) if self.lo != self.hi => Err(format!(
                "StartTLS to {url}: the server sent data after its response, before the TLS handshake"
            )),
            (_, ResultCode::SUCCESS, _) => Ok(()),
            (_, code, diag) => Err(format!(
                "StartTLS refused by {url}: {code}{}",
                if diag.is_empty() {
                    String::new()
                } else {
                    format!(": {diag}")
                }
            )),
        }
    }
}

impl SimpleConn<TlsStream<TcpStream>> {
    /// Polite end of a TLS connection: UnbindRequest `id` and close_notify, sent with one
    /// flush; errors are ignored (the connection is closed right after).
    pub async fn close_tls(&mut self, id: MessageId) {
        LdapMessage::new(id, ProtocolOp::UnbindRequest).encode(&mut self.wbuf);
        let tls = self.stream.get_mut().1;
        let _ = std::io::Write::write_all(&mut tls.writer(), &self.wbuf);
        tls.send_close_notify();
        self.wbuf.clear();
        let _ = self.stream.flush().await;
    }
}
