//! A cluster's follower forwards its clients' writes to the leader
//! (`cluster.writes = "forward"`, the default once `cluster.bind_dn` and its password are
//! set): clients may write to any node. The forwarding is a replica's chaining
//! ([`crate::syncrepl::chain`]) aimed at the leader of the moment; the cluster node
//! ([`crate::cluster`]) sets it up at start, the session routes writes through it.
//!
//! A client's write on a cluster node, in steps:
//! 1. the session routes it before running it ([`route_write_text`], [`route_write`]), on
//!    the node's role now: when this node leads, or knows of no leader (an election), the
//!    write runs here (during an election the store refuses it: `unavailable`, 52); a
//!    write that already carries the [`FORWARDED`] control came from a follower and runs
//!    here too, whatever this node's role, so a write is forwarded at most once (a node
//!    that no longer leads answers it with a referral to the leader it knows, passed back
//!    to the client as it is);
//! 2. a write to a DN outside the directory's suffixes runs here (the answer is the same
//!    on every node);
//! 3. otherwise it goes to the leader's `ldap_url` (the cluster's configuration) through the
//!    chain to that URL: one pool of bound connections per leader, made at the first write
//!    it leads for, replaced when another node leads, dropped at the first write that
//!    finds this node leading or no leader known; the client's identity travels as a
//!    Proxied Authorization control, so the leader applies its access rules to the client.
//!    `cluster.bind_dn` must be allowed to proxy on the leader (the administrator may;
//!    `[access_proxy]` for others);
//! 4. the leader's answer (result, controls, referral) is the client's.
//!
//! A write routed to run here on a node that stops leading meanwhile fails in the store
//! with `NotLeader` and is answered with a referral to the new leader (`crate::error`),
//! as with `writes = "refer"`. A chain that cannot be made (an unreadable `ca_file`) sends
//! the write the same way, and the error log says why.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use larch_cluster::ClusterNode;
use larch_model::dn::NormDn;
use larch_model::schema::Schema;
use larch_proto::controls::Control;
use larch_proto::SeqOf;

use crate::config::cluster::{ClusterSettings, ForwardSettings};
use crate::config::ListenUrl;
use crate::syncrepl::chain::{Chain, FORWARDED};
use crate::syncrepl::connection::{ClientTls, Upstream};
use crate::syncrepl::read_only::Route;

/// A follower's forwarding of writes to the leader.
pub struct Forwarding {
    node: Arc<ClusterNode>,
    settings: ForwardSettings,
    max_pdu: usize,
    /// The chain to the leader last forwarded to.
    current: Mutex<Option<Arc<Chain>>>,
    /// True while `current` holds a chain (read without the lock on the leader's path).
    holds_chain: AtomicBool,
}

impl std::fmt::Debug for Forwarding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forwarding")
            .field("bind_dn", &self.settings.bind_dn)
            .finish_non_exhaustive()
    }
}

impl Forwarding {
    /// The forwarding of `node`, bound as `settings` say; the TLS configuration of every
    /// `ldaps://` member is built now, so that a mistake stops the start.
    pub fn new(
        node: Arc<ClusterNode>,
        cluster: &ClusterSettings,
        settings: &ForwardSettings,
        max_pdu: usize,
    ) -> Result<Forwarding, String> {
        let forwarding = Forwarding {
            node,
            settings: settings.clone(),
            max_pdu,
            current: Mutex::new(None),
            holds_chain: AtomicBool::new(false),
        };
        for url in cluster.members.iter().filter_map(|m| m.ldap_url.as_deref()) {
            let upstream = forwarding.upstream(url)?;
            ClientTls::new(&upstream).map_err(|e| format!("cluster.ca_file, for {url}: {e}"))?;
        }
        Ok(forwarding)
    }

    /// Steps 1 and 3 for a write inside the directory: the chain to the leader when
    /// another node leads, `None` when the write runs here.
    pub fn leader_chain(&self) -> Option<Arc<Chain>> {
        let Some(leader) = self.node.leader_elsewhere() else {
            self.drop_chain();
            return None;
        };
        let url = self.node.client_url(leader)?;
        let url = url.as_str();
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(chain) = current.as_ref().filter(|c| c.url() == url) {
            return Some(Arc::clone(chain));
        }
        let chain = match self
            .upstream(url)
            .and_then(|u| Chain::to_leader(u, self.max_pdu).map_err(|e| e.to_string()))
        {
            Ok(chain) => Arc::new(chain),
            Err(e) => {
                tracing::warn!(leader = %url, error = %e, "cluster: cannot forward writes to the leader; referring them");
                return None;
            }
        };
        *current = Some(Arc::clone(&chain));
        self.holds_chain.store(true, Ordering::Relaxed);
        Some(chain)
    }

    /// The node this forwarding serves.
    pub fn node(&self) -> &Arc<ClusterNode> {
        &self.node
    }

    /// Who the follower binds as at the leader (`cluster.bind_dn`).
    pub fn bind_dn(&self) -> &str {
        &self.settings.bind_dn
    }

    /// Drops the chain to a former leader once this node leads or knows of none (its
    /// connections close when the writes still using them end).
    fn drop_chain(&self) {
        if self.holds_chain.swap(false, Ordering::Relaxed) {
            self.current.lock().unwrap_or_else(PoisonError::into_inner).take();
        }
    }

    /// The leader at `url`, reached as `cluster.bind_dn`.
    fn upstream(&self, url: &str) -> Result<Upstream, String> {
        let parsed_url = ListenUrl::parse(url.trim_end_matches('/'))
            .map_err(|e| format!("cluster.members.ldap_url `{url}`: {e}"))?;
        Ok(Upstream {
            url: url.to_string(),
            parsed_url,
            bind_dn: self.settings.bind_dn.clone(),
            credentials: self.settings.credentials.clone(),
            starttls: false,
            ca_file: self.settings.ca_file.clone(),
            client_cert: None,
            client_key: None,
        })
    }
}

/// True when request controls `controls` mark the write as forwarded by a follower.
pub fn is_forwarded(controls: Option<&SeqOf<'_, Control<'_>>>) -> bool {
    controls.is_some_and(|list| list.iter().any(|c| c.oid == FORWARDED.as_bytes()))
}

/// Where a write to `dn` goes on this node (steps 1 to 3): `forwarding` is the node's
/// (none: not a cluster node, or one that refers writes), `suffixes` the directory's;
/// `forwarded` when the request carries the [`FORWARDED`] control.
pub fn route_write(
    forwarding: Option<&Forwarding>,
    suffixes: &[NormDn],
    dn: Option<&NormDn>,
    forwarded: bool,
) -> Route {
    let Some(forwarding) = forwarding else {
        return Route::Local;
    };
    if forwarded || !dn.is_some_and(|dn| suffixes.iter().any(|s| dn.is_within(s))) {
        return Route::Local;
    }
    match forwarding.leader_chain() {
        Some(chain) => Route::Chain(chain),
        None => Route::Local,
    }
}

/// [`route_write`] for a DN as the client wrote it, normalized through `schema` only on a
/// node that forwards and does not lead.
pub fn route_write_text(
    forwarding: Option<&Forwarding>,
    schema: &Schema,
    suffixes: &[NormDn],
    dn_text: &[u8],
    forwarded: bool,
) -> Route {
    let Some(f) = forwarding else {
        return Route::Local;
    };
    if forwarded {
        return Route::Local;
    }
    if f.node.leader_elsewhere().is_none() {
        f.drop_chain();
        return Route::Local;
    }
    let dn = NormDn::from_text(dn_text, schema).ok();
    route_write(forwarding, suffixes, dn.as_ref(), forwarded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use larch_proto::controls::oid;

    #[test]
    fn only_the_forwarded_control_marks_a_write() {
        let control = |o: &'static str| Control {
            oid: o.as_bytes(),
            critical: false,
            value: None,
        };
        let marked = [control(oid::POST_READ), control(FORWARDED)];
        let unmarked = [control(oid::POST_READ), control(oid::PROXIED_AUTHZ)];
        assert!(is_forwarded(Some(&SeqOf::from_items(&marked))));
        assert!(!is_forwarded(Some(&SeqOf::from_items(&unmarked))));
        assert!(!is_forwarded(None));
    }
}
