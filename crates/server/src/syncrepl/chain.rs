//! Chaining: on a replica whose `[[replication]]` table says `writes = "chain"`, a client
//! write inside the replicated subtree (Add, Delete, Modify, ModifyDN, Password Modify) is
//! forwarded to the provider on the client's behalf instead of being referred, as
//! OpenLDAP's chain overlay does. The client sees the provider's answer; the change comes
//! back through replication like any other. A cluster's follower forwards its clients'
//! writes to the leader the same way (`crate::forwarding`): a [`Chain`] goes to one
//! server (an [`Upstream`]: the provider, or the leader of the moment).
//!
//! A chained write, in steps:
//! 1. the session finds the chain ([`super::read_only::route_write`], or the cluster's
//!    route), parses the client's controls and works out the identity the write runs as
//!    (a Proxied Authorization control the client sent is checked here, by this server's
//!    rules);
//! 2. it takes a connection from the chain's pool: at most [`MAX_CHAIN_CONNECTIONS`] are
//!    open, a write waits for one (a task, never a thread). An idle connection the
//!    provider has closed meanwhile is dropped before anything is sent on it; a new one is
//!    opened (TCP, TLS as the upstream says, a simple Bind as its `bind_dn`);
//! 3. it sends the request with a message ID of the connection's: the client's operation
//!    as the client encoded it, the client's controls except its own Proxied Authorization
//!    control, and a critical Proxied Authorization control (RFC 4370) naming the
//!    identity of step 1 (`dn:<DN>`, empty for anonymous), so the provider applies its
//!    access rules to the client, not to the replica. The provider must let `bind_dn`
//!    proxy (Larch: the administrator may; `[access_proxy]` for others; slapd: `authzTo`
//!    and `authz-policy`). A cluster's chain also marks the request as forwarded (a
//!    non-critical [`FORWARDED`] control), so that the node receiving it runs it or
//!    refuses it, and never forwards it again;
//! 4. it reads the provider's response, waiting at most [`CHAIN_TIMEOUT`]: its result code,
//!    matched DN, diagnostic message and referrals, the response controls Larch knows
//!    (pre-read, post-read, password policy) and an extended response's value become the
//!    reply of the operation on this server (one outcome, logged and counted as any
//!    other);
//! 5. the connection goes back to the pool. A connection that failed or timed out is
//!    closed, and the write is answered `unavailable` (52), saying why: the request may
//!    or may not have reached the provider, so it is never sent again.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use larch_proto::controls::{oid, Control};
use larch_proto::{LdapMessage, ProtocolOp, ResultCode, SeqOf};
use tokio::sync::Semaphore;

use super::connection::{ClientTls, Connection, Upstream};
use super::error::SyncError;
use crate::config::ReplicationSettings;
use crate::controls::ResponseControl;
use crate::error::OpError;
use crate::outcome::Reply;

/// Most connections one table keeps open to its provider for chained writes, each carrying
/// one write at a time: the chained writes in flight, which the provider's commits group
/// (with 8, 64 writes in flight went through at 0.4 of the provider's own rate; with 32,
/// at 0.6 to 0.7; docs/benchmarks.md).
pub const MAX_CHAIN_CONNECTIONS: usize = 32;

/// Longest wait for the provider's answer to a chained write (and for a connection to
/// open and bind).
pub const CHAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// The control a cluster's follower adds to a write it forwards to the leader
/// (`LARCH_ARC`.2.1, no value, never critical: another server ignores it): the node that
/// receives it does not forward it again.
pub const FORWARDED: &str = "2.25.268705614682925665270291760309126455850.2.1";

/// Response controls passed on to the client (a control's OID must be known to be
/// encoded again; others are dropped).
const PASSED_ON: [&str; 3] = [oid::PRE_READ, oid::POST_READ, oid::PASSWORD_POLICY];

/// Writes chained to one server: a `[[replication]]` table's provider, or a cluster's
/// leader.
pub struct Chain {
    upstream: Upstream,
    /// What the server is to this one, for messages ("provider", "leader").
    role: &'static str,
    /// Whether requests carry the [`FORWARDED`] control.
    mark_forwarded: bool,
    tls: Option<ClientTls>,
    max_pdu: usize,
    slots: Semaphore,
    idle: Mutex<Vec<Connection>>,
    next_id: AtomicI32,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain")
            .field(self.role, &self.upstream.url)
            .finish_non_exhaustive()
    }
}

impl Chain {
    /// The chaining of table `settings` (its TLS files read now); messages up to `max_pdu`.
    pub fn new(settings: &ReplicationSettings, max_pdu: usize) -> Result<Chain, SyncError> {
        Chain::to(Upstream::from(settings), "provider", false, max_pdu)
    }

    /// A cluster follower's chain to the leader at `upstream` (its TLS files read now);
    /// its requests carry the [`FORWARDED`] control.
    pub fn to_leader(upstream: Upstream, max_pdu: usize) -> Result<Chain, SyncError> {
        Chain::to(upstream, "leader", true, max_pdu)
    }

    fn to(
        upstream: Upstream,
        role: &'static str,
        mark_forwarded: bool,
        max_pdu: usize,
    ) -> Result<Chain, SyncError> {
        Ok(Chain {
            tls: ClientTls::new(&upstream)?,
            upstream,
            role,
            mark_forwarded,
            max_pdu,
            slots: Semaphore::new(MAX_CHAIN_CONNECTIONS),
            idle: Mutex::new(Vec::new()),
            next_id: AtomicI32::new(1),
        })
    }

    /// The URL of the server writes are chained to.
    pub fn url(&self) -> &str {
        &self.upstream.url
    }

    /// Steps 2 to 5 for request `pdu` (the client's whole LDAPMessage), run as `authz_id`:
    /// the provider's reply, or `unavailable` saying why there is none.
    pub async fn forward(&self, pdu: &[u8], authz_id: &str) -> Reply {
        match self.try_forward(pdu, authz_id).await {
            Ok(reply) => reply,
            Err(e) => Reply::from(OpError::new(
                ResultCode::UNAVAILABLE,
                format!(
                    "the write could not be chained to the {} {}: {e}",
                    self.role, self.upstream.url
                ),
            )),
        }
    }

    async fn try_forward(&self, pdu: &[u8], authz_id: &str) -> Result<Reply, SyncError> {
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| SyncError::Protocol("chaining is closed".into()))?;
        let id = self.message_id();
        let request = rebuild(pdu, id, authz_id, self.mark_forwarded)?;
        let mut conn = match self.pooled().await {
            Some(c) => c,
            None => tokio::time::timeout(
                CHAIN_TIMEOUT,
                Connection::open(&self.upstream, self.tls.as_ref(), self.max_pdu),
            )
            .await
            .map_err(|_| SyncError::Timeout("connection to the provider"))??,
        };
        let answered = tokio::time::timeout(CHAIN_TIMEOUT, async {
            conn.send_encoded(&request).await?;
            answer(&mut conn, id).await
        })
        .await
        .map_err(|_| SyncError::Timeout("the provider's answer"))??;
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(conn);
        Ok(answered)
    }

    /// An idle connection still open, if there is one (closed ones are dropped).
    async fn pooled(&self) -> Option<Connection> {
        loop {
            let conn = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
            let mut conn = conn?;
            if conn.idle_and_open().await {
                return Some(conn);
            }
        }
    }

    /// A message ID for a chained request, 1..=i32::MAX (IDs are unique per connection as
    /// long as fewer than 2^31 requests are in flight, which the slots bound).
    fn message_id(&self) -> i32 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if id > 0 {
            return id;
        }
        self.next_id.store(2, Ordering::Relaxed);
        1
    }
}

/// Step 3: the client's request with message ID `id`, its controls but a Proxied
/// Authorization control (and a [`FORWARDED`] one), ours naming `authz_id`, and with
/// `mark_forwarded` the [`FORWARDED`] control.
fn rebuild(pdu: &[u8], id: i32, authz_id: &str, mark_forwarded: bool) -> Result<Vec<u8>, SyncError> {
    let msg = LdapMessage::decode(pdu).map_err(|e| SyncError::Protocol(format!("the request: {e}")))?;
    let mut controls: Vec<Control<'_>> = match &msg.controls {
        Some(list) => list
            .iter()
            .filter(|c| c.oid != oid::PROXIED_AUTHZ.as_bytes() && c.oid != FORWARDED.as_bytes())
            .collect(),
        None => Vec::new(),
    };
    controls.push(Control {
        oid: oid::PROXIED_AUTHZ.as_bytes(),
        critical: true,
        value: Some(authz_id.as_bytes()),
    });
    if mark_forwarded {
        controls.push(Control {
            oid: FORWARDED.as_bytes(),
            critical: false,
            value: None,
        });
    }
    let chained = LdapMessage {
        message_id: id,
        op: msg.op,
        controls: Some(SeqOf::from_items(&controls)),
    };
    let mut out = Vec::with_capacity(pdu.len() + 64);
    chained.encode(&mut out);
    Ok(out)
}

/// Step 4: the provider's response to request `id`, as this server's reply.
async fn answer(conn: &mut Connection, id: i32) -> Result<Reply, SyncError> {
    loop {
        let pdu = conn.next_pdu().await?;
        let msg = LdapMessage::decode(pdu).map_err(|e| SyncError::Protocol(e.to_string()))?;
        if msg.message_id == 0 {
            let text = match &msg.op {
                ProtocolOp::ExtendedResponse(e) => {
                    String::from_utf8_lossy(e.result.diagnostic_message).into_owned()
                }
                _ => String::new(),
            };
            return Err(SyncError::Protocol(format!(
                "the provider closed the connection: {text}"
            )));
        }
        if msg.message_id != id {
            continue;
        }
        return reply_of(&msg);
    }
}

/// The reply a provider's response makes.
fn reply_of(msg: &LdapMessage<'_>) -> Result<Reply, SyncError> {
    let (result, value) = match &msg.op {
        ProtocolOp::AddResponse(r)
        | ProtocolOp::DelResponse(r)
        | ProtocolOp::ModifyResponse(r)
        | ProtocolOp::ModifyDnResponse(r) => (r, None),
        ProtocolOp::ExtendedResponse(e) => (&e.result, e.value),
        other => {
            return Err(SyncError::Protocol(format!(
                "the provider answered a write with a {}",
                other.name()
            )))
        }
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut reply = Reply::code(result.code);
    reply.matched_dn = text(result.matched_dn);
    reply.message = text(result.diagnostic_message);
    if let Some(urls) = &result.referral {
        reply.referrals = urls.iter().map(text).collect();
    }
    reply.value = value.map(<[u8]>::to_vec);
    if let Some(list) = &msg.controls {
        for c in list.iter() {
            if let Some(known) = PASSED_ON.iter().find(|o| o.as_bytes() == c.oid) {
                reply.controls.push(ResponseControl {
                    oid: known,
                    value: c.value.map(<[u8]>::to_vec),
                });
            }
        }
    }
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use larch_proto::{DelRequest, LdapResult};

    #[test]
    fn a_request_is_sent_with_our_id_and_proxied_authorization_only() {
        let theirs = [
            Control {
                oid: oid::PROXIED_AUTHZ.as_bytes(),
                critical: true,
                value: Some(b"dn:cn=someone else"),
            },
            Control {
                oid: oid::ASSERTION.as_bytes(),
                critical: true,
                value: Some(b"\x87\x0bobjectClass"),
            },
        ];
        let mut pdu = Vec::new();
        LdapMessage {
            message_id: 7,
            op: ProtocolOp::DelRequest(DelRequest {
                dn: b"cn=x,dc=example,dc=com",
            }),
            controls: Some(SeqOf::from_items(&theirs)),
        }
        .encode(&mut pdu);
        let out = rebuild(&pdu, 42, "dn:uid=u,dc=example,dc=com", false).unwrap();
        let msg = LdapMessage::decode(&out).unwrap();
        assert_eq!(msg.message_id, 42);
        assert!(matches!(msg.op, ProtocolOp::DelRequest(d) if d.dn == b"cn=x,dc=example,dc=com"));
        let controls: Vec<Control<'_>> = msg.controls.unwrap().iter().collect();
        assert_eq!(controls.len(), 2);
        assert_eq!(controls[0].oid, oid::ASSERTION.as_bytes());
        assert_eq!(controls[1].oid, oid::PROXIED_AUTHZ.as_bytes());
        assert!(controls[1].critical);
        assert_eq!(controls[1].value, Some(&b"dn:uid=u,dc=example,dc=com"[..]));
    }

    #[test]
    fn a_forwarded_request_is_marked_once() {
        let theirs = [Control {
            oid: FORWARDED.as_bytes(),
            critical: false,
            value: None,
        }];
        let mut pdu = Vec::new();
        LdapMessage {
            message_id: 7,
            op: ProtocolOp::DelRequest(DelRequest {
                dn: b"cn=x,dc=example,dc=com",
            }),
            controls: Some(SeqOf::from_items(&theirs)),
        }
        .encode(&mut pdu);
        let out = rebuild(&pdu, 9, "", true).unwrap();
        let msg = LdapMessage::decode(&out).unwrap();
        let controls: Vec<Control<'_>> = msg.controls.unwrap().iter().collect();
        let oids: Vec<&[u8]> = controls.iter().map(|c| c.oid).collect();
        assert_eq!(oids, [oid::PROXIED_AUTHZ.as_bytes(), FORWARDED.as_bytes()]);
        assert!(!controls[1].critical);
        let out = rebuild(&pdu, 9, "", false).unwrap();
        let msg = LdapMessage::decode(&out).unwrap();
        assert_eq!(msg.controls.unwrap().iter().count(), 1);
    }

    #[test]
    fn a_response_becomes_the_reply_with_the_controls_larch_knows() {
        let controls = [
            Control {
                oid: oid::POST_READ.as_bytes(),
                critical: false,
                value: Some(b"\x30\x00"),
            },
            Control {
                oid: b"1.2.3.4.5",
                critical: false,
                value: None,
            },
        ];
        let msg = LdapMessage {
            message_id: 3,
            op: ProtocolOp::ModifyResponse(LdapResult::new(
                ResultCode::NO_SUCH_OBJECT,
                b"dc=example,dc=com",
                b"no such entry",
            )),
            controls: Some(SeqOf::from_items(&controls)),
        };
        let reply = reply_of(&msg).unwrap();
        assert_eq!(reply.code, ResultCode::NO_SUCH_OBJECT);
        assert_eq!(reply.matched_dn, "dc=example,dc=com");
        assert_eq!(reply.message, "no such entry");
        assert_eq!(reply.controls.len(), 1);
        assert_eq!(reply.controls[0].oid, oid::POST_READ);
        let search = LdapMessage::new(3, ProtocolOp::UnbindRequest);
        assert!(reply_of(&search).is_err());
    }
}
