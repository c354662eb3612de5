//! StartTLS (RFC 4511 section 4.14, RFC 4513 section 3): an `ldap://` connection becomes a
//! TLS connection.
//!
//! The request is checked in slapd's order (servers/slapd/starttls.c):
//! 1. a request value -> `protocolError` (2);
//! 2. TLS already active -> `operationsError` (1);
//! 3. operations outstanding (in flight on this connection) -> `operationsError` (1);
//! 4. no `[tls]` on this server -> `unavailable` (52);
//! 5. otherwise the response is `success` with the StartTLS OID as responseName, sent in
//!    plaintext; the connection becomes anonymous (as slapd does unless `disallow
//!    tls_2_anon`) and forgets its paged searches.
//!
//! Then [`Session::upgrade`], called by the reading loop once the response is queued:
//! 1. the senders of the writing side are replaced, so the writer task sends what it has
//!    (the response), ends and hands back its half of the socket;
//! 2. the two halves become one socket again and the server side of the TLS handshake
//!    runs on it ([`crate::tls::TlsState::handshake`], bounded in time);
//! 3. the connection's [`Client`] says `tls: true`, the client's certificate is kept for
//!    SASL EXTERNAL, and a new writer task serves the protected stream.
//!
//! A failed handshake closes the connection. Octets the client sent after its StartTLS
//! request without waiting for the response also close it (the reading loop sees them).

use std::sync::Arc;

use larch_proto::exop::START_TLS;
use larch_proto::ResultCode;
use tokio::task::JoinHandle;

use super::stream::{self, Conn, ConnRead, ConnWrite};
use super::writer::{self, Outbox};
use super::{Closing, Session};
use crate::client::Client;
use crate::error::OpError;
use crate::identity::Identity;
use crate::outcome::Reply;

impl Session {
    /// Answers a StartTLS request (see the module steps); on success sets `start_tls` so
    /// the reading loop upgrades the connection after sending the response.
    pub(super) fn start_tls_request(&mut self, has_value: bool) -> Reply {
        let refuse = |code: ResultCode, message: &str| Reply::from(OpError::new(code, message));
        if has_value {
            return refuse(
                ResultCode::PROTOCOL_ERROR,
                "StartTLS: the request carries no value (RFC 4511 4.14.1)",
            );
        }
        if self.client.tls {
            return refuse(
                ResultCode::OPERATIONS_ERROR,
                "StartTLS: TLS is already active on this connection",
            );
        }
        if !self.inflight.is_empty() || self.permits.available_permits() < self.max_ops as usize {
            return refuse(
                ResultCode::OPERATIONS_ERROR,
                "StartTLS: cannot start TLS while operations are outstanding; wait for their responses",
            );
        }
        if self.dir.tls.is_none() {
            return refuse(
                ResultCode::UNAVAILABLE,
                "StartTLS: TLS is not configured on this server",
            );
        }
        self.identity = Arc::new(Identity::Anonymous);
        self.paged_reset();
        self.start_tls = true;
        Reply {
            name: Some(START_TLS),
            ..Reply::success()
        }
    }

    /// Runs the TLS handshake after a successful StartTLS (see the module steps): the
    /// reading half and the writer task of the protected stream, or `None` when the
    /// connection must close.
    pub(super) async fn upgrade(
        &mut self,
        rd: ConnRead,
        writer_task: Option<JoinHandle<Option<ConnWrite>>>,
        closing: &Arc<Closing>,
    ) -> Option<(ConnRead, JoinHandle<Option<ConnWrite>>)> {
        let tls = self.dir.tls.clone()?;
        let (outbox, out_tx, done_tx, queues) = Outbox::new(closing.clone(), self.dir.output_budget.clone());
        drop(std::mem::replace(&mut self.out_tx, out_tx));
        drop(std::mem::replace(&mut self.done_tx, done_tx));
        let wr = writer_task?.await.ok()??;
        let tcp = stream::reunite(rd, wr)?;
        let (tls_stream, cert) = tokio::select! {
            h = tls.handshake(tcp) => h?,
            _ = closing.closed() => return None,
        };
        super::tls_established(&self.dir, self.conn, &tls_stream);
        self.client = Arc::new(Client {
            addr: self.client.addr,
            tls: true,
        });
        self.peer_cert = cert;
        let (rd, wr) = Conn::Tls(Box::new(tls_stream)).split();
        outbox.install(wr);
        let writer_task = tokio::spawn(writer::run(outbox, queues, self.dir.config.limits.write_timeout));
        Some((rd, writer_task))
    }
}
