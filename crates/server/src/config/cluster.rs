//! `[cluster]`: this server as a node of a cluster whose writes survive the loss of a
//! node (`crate::cluster`, `docs/cluster.md`). Without the table the server stands alone.
//!
//! Keys:
//! - `cluster.node_id` (required): this node's number, from 1; it must be among
//!   `cluster.members`, and never reused for a node whose data was lost;
//! - `cluster.listen`: the socket the Raft transport listens on (default: this node's
//!   `raft` address in `cluster.members`);
//! - `cluster.bootstrap` (`false`): this node creates the cluster of `cluster.members` at
//!   its first start (set it on one node only; it does nothing once the node has a log);
//! - `cluster.tls` (`false`): the Raft transport runs over TLS with client certificates:
//!   each node presents `[tls]`'s certificate and key, and accepts peers whose certificate
//!   `tls.client_ca` issued (both required then);
//! - `[[cluster.members]]`: `id`, `raft` (`host:port` where its Raft transport listens),
//!   `ldap_url` (where clients reach it: a follower refers writes there when that node
//!   leads). The bootstrapping node lists every first member with all three: they become
//!   the cluster's first configuration, which then records them (and every node added
//!   later, `larch cluster add-node`). Any other node needs only its own `id` and `raft`
//!   (for its `listen` default); it learns the members from the leader, and the other
//!   tables it lists are not read.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use serde::Deserialize;

use super::ConfigError;

/// The most nodes a cluster may list (a cluster of 3 or 5 is usual; more voters make
/// every write wait for more acknowledgements): the cluster's own bound.
pub const MAX_CLUSTER_MEMBERS: usize = larch_cluster::membership::MAX_MEMBERS;

/// `[cluster]`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSettings {
    /// `cluster.node_id`.
    pub node_id: u64,
    /// `cluster.listen`.
    pub listen: SocketAddr,
    /// `cluster.bootstrap`.
    pub bootstrap: bool,
    /// `cluster.tls`.
    pub tls: bool,
    /// `[[cluster.members]]`, by ID.
    pub members: Vec<ClusterMember>,
}

/// One `[[cluster.members]]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterMember {
    /// `id`.
    pub id: u64,
    /// `raft`: `host:port`.
    pub raft: String,
    /// `ldap_url` (required of every member on the bootstrapping node only).
    pub ldap_url: Option<String>,
}

/// `[cluster]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCluster {
    pub node_id: Option<u64>,
    pub listen: Option<String>,
    pub bootstrap: Option<bool>,
    pub tls: Option<bool>,
    pub members: Option<Vec<RawMember>>,
}

/// `[[cluster.members]]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMember {
    pub id: Option<u64>,
    pub raft: Option<String>,
    pub ldap_url: Option<String>,
}

impl ClusterSettings {
    pub(crate) fn from_raw(raw: RawCluster) -> Result<ClusterSettings, ConfigError> {
        let node_id = match raw.node_id {
            None => {
                return Err(ConfigError::invalid(
                    "cluster.node_id",
                    "required: this node's number, from 1",
                ))
            }
            Some(0) => {
                return Err(ConfigError::invalid(
                    "cluster.node_id",
                    "0 is not a node number (from 1)",
                ))
            }
            Some(n) => n,
        };
        let bootstrap = raw.bootstrap.unwrap_or(false);
        let raw_members = raw.members.unwrap_or_default();
        if raw_members.is_empty() {
            return Err(ConfigError::invalid(
                "cluster.members",
                "list this node (id and raft), and on the bootstrapping node every first member",
            ));
        }
        if raw_members.len() > MAX_CLUSTER_MEMBERS {
            return Err(ConfigError::invalid(
                "cluster.members",
                format!("{} nodes; at most {MAX_CLUSTER_MEMBERS}", raw_members.len()),
            ));
        }
        let members = raw_members
            .into_iter()
            .map(|m| ClusterMember::from_raw(m, bootstrap))
            .collect::<Result<Vec<_>, _>>()?;
        let mut ids = BTreeSet::new();
        for m in &members {
            if !ids.insert(m.id) {
                return Err(ConfigError::invalid(
                    "cluster.members",
                    format!("node {} is listed twice", m.id),
                ));
            }
        }
        let Some(me) = members.iter().find(|m| m.id == node_id) else {
            return Err(ConfigError::invalid(
                "cluster.node_id",
                format!("node {node_id} is not among cluster.members"),
            ));
        };
        let listen_text = raw.listen.as_deref().unwrap_or(&me.raft);
        let listen: SocketAddr = listen_text.parse().map_err(|_| {
            ConfigError::invalid(
                "cluster.listen",
                format!("`{listen_text}` is not an IP address and port (write cluster.listen when the raft address is a name)"),
            )
        })?;
        Ok(ClusterSettings {
            node_id,
            listen,
            bootstrap,
            tls: raw.tls.unwrap_or(false),
            members,
        })
    }

    /// This node's own member table.
    pub fn me(&self) -> Option<&ClusterMember> {
        self.members.iter().find(|m| m.id == self.node_id)
    }
}

impl ClusterMember {
    /// One table; `ldap_url` is required when `bootstrap` (the first configuration records
    /// it) and checked whenever written.
    fn from_raw(raw: RawMember, bootstrap: bool) -> Result<ClusterMember, ConfigError> {
        let id = match raw.id {
            None | Some(0) => {
                return Err(ConfigError::invalid(
                    "cluster.members.id",
                    "each member needs an id, from 1",
                ))
            }
            Some(n) => n,
        };
        let raft = raw.raft.filter(|r| is_host_port(r)).ok_or_else(|| {
            ConfigError::invalid("cluster.members.raft", format!("node {id}: write `host:port`"))
        })?;
        let bad_url = || {
            let why = if bootstrap {
                "an ldap:// or ldaps:// URL where clients reach it (required of every member on the bootstrapping node)"
            } else {
                "an ldap:// or ldaps:// URL where clients reach it"
            };
            ConfigError::invalid("cluster.members.ldap_url", format!("node {id}: {why}"))
        };
        let ldap_url = match raw.ldap_url {
            Some(u) if is_ldap_url(&u) => Some(u),
            Some(_) => return Err(bad_url()),
            None if bootstrap => return Err(bad_url()),
            None => None,
        };
        Ok(ClusterMember { id, raft, ldap_url })
    }
}

/// An `ldap://` or `ldaps://` URL naming a host.
pub fn is_ldap_url(s: &str) -> bool {
    let rest = s.strip_prefix("ldap://").or_else(|| s.strip_prefix("ldaps://"));
    rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/'))
}

/// `host:port` with a port number (an IPv6 host in brackets).
pub fn is_host_port(s: &str) -> bool {
    match s.rsplit_once(':') {
        Some((host, port)) => !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: u64) -> RawMember {
        RawMember {
            id: Some(id),
            raft: Some(format!("127.0.0.{id}:7389")),
            ldap_url: Some(format!("ldap://127.0.0.{id}:389")),
        }
    }

    fn raw(node_id: u64, members: Vec<RawMember>) -> RawCluster {
        RawCluster {
            node_id: Some(node_id),
            members: Some(members),
            ..RawCluster::default()
        }
    }

    #[test]
    fn a_three_node_cluster() {
        let s = ClusterSettings::from_raw(raw(2, vec![member(1), member(2), member(3)])).unwrap();
        assert_eq!(s.node_id, 2);
        assert_eq!(s.listen, "127.0.0.2:7389".parse().unwrap());
        assert!(!s.bootstrap && !s.tls);
        assert_eq!(s.me().unwrap().ldap_url.as_deref(), Some("ldap://127.0.0.2:389"));
    }

    #[test]
    fn a_joining_node_lists_only_its_own_id_and_raft_address() {
        let me = RawMember {
            ldap_url: None,
            ..member(4)
        };
        let s = ClusterSettings::from_raw(raw(4, vec![me])).unwrap();
        assert_eq!(s.listen, "127.0.0.4:7389".parse().unwrap());
        assert_eq!(s.me().unwrap().ldap_url, None);
        // The bootstrapping node seeds the configuration: every URL is needed there.
        let seed = RawCluster {
            bootstrap: Some(true),
            ..raw(
                1,
                vec![
                    member(1),
                    RawMember {
                        ldap_url: None,
                        ..member(2)
                    },
                ],
            )
        };
        let e = ClusterSettings::from_raw(seed).unwrap_err().to_string();
        assert!(
            e.contains("cluster.members.ldap_url") && e.contains("node 2"),
            "{e}"
        );
    }

    #[test]
    fn addresses_are_checked() {
        assert!(is_host_port("10.0.0.1:7389") && is_host_port("[::1]:7389") && is_host_port("db1:1"));
        assert!(!is_host_port("db1") && !is_host_port(":7389") && !is_host_port("db1:0"));
        assert!(is_ldap_url("ldap://10.0.0.1:389") && is_ldap_url("ldaps://db1"));
        assert!(!is_ldap_url("ldap://") && !is_ldap_url("ldap:///dc=x") && !is_ldap_url("http://db1"));
    }

    #[test]
    fn mistakes_name_their_key() {
        let cases: Vec<(RawCluster, &str)> = vec![
            (RawCluster::default(), "cluster.node_id"),
            (raw(0, vec![member(1)]), "cluster.node_id"),
            (raw(4, vec![member(1), member(2)]), "cluster.node_id"),
            (raw(1, vec![]), "cluster.members"),
            (raw(1, vec![member(1), member(1)]), "cluster.members"),
            (
                raw(
                    1,
                    vec![RawMember {
                        raft: Some("nohost".into()),
                        ..member(1)
                    }],
                ),
                "cluster.members.raft",
            ),
            (
                raw(
                    1,
                    vec![RawMember {
                        ldap_url: Some("http://x".into()),
                        ..member(1)
                    }],
                ),
                "cluster.members.ldap_url",
            ),
            (
                RawCluster {
                    listen: Some("somewhere:1".into()),
                    ..raw(1, vec![member(1)])
                },
                "cluster.listen",
            ),
            (raw(1, (1..=10).map(member).collect()), "cluster.members"),
        ];
        for (raw, key) in cases {
            let e = ClusterSettings::from_raw(raw).unwrap_err();
            assert!(e.to_string().contains(key), "{e} should name {key}");
        }
    }
}
