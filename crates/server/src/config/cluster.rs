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
//! - `cluster.snapshot_after_entries` (100,000): a node writes a snapshot after this many
//!   log entries were applied since its last one, and purges its log up to
//!   [`log_kept_after_snapshot`] entries before it;
//! - `cluster.reads` (`"local"`): `"linearizable"` makes every search and compare of the
//!   directory's data wait until this node holds every write acknowledged before it
//!   (`crate::linearizable`); `"local"` reads what the node holds;
//! - `cluster.writes` (`"forward"`; `"refer"`): what a follower does with a client's write:
//!   forwards it to the leader on the client's behalf (`crate::forwarding`), or
//!   answers with a referral to the leader;
//! - `cluster.bind_dn` and exactly one of `cluster.credentials` or
//!   `cluster.credentials_file` (a file whose first line is the password): the simple Bind
//!   a follower makes at the leader to forward writes, as `[[replication]]` chains. Left
//!   out, a follower refers writes (said at start); with `writes = "forward"` written,
//!   they are required;
//! - `cluster.ca_file`: the CA certificates (PEM) that issue the leaders' certificates,
//!   required when forwarding and a member's `ldap_url` is `ldaps://`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{ConfigError, Credentials};

/// The most nodes a cluster may list (a cluster of 3 or 5 is usual; more voters make
/// every write wait for more acknowledgements): the cluster's own bound.
pub const MAX_CLUSTER_MEMBERS: usize = larch_cluster::membership::MAX_MEMBERS;

/// The fewest entries `cluster.snapshot_after_entries` may name: a snapshot every few
/// entries would rewrite the whole directory for every few writes.
pub const MIN_SNAPSHOT_AFTER_ENTRIES: u64 = 10;

/// The log kept before a node's newest snapshot, so that a follower a little behind
/// catches up from the log rather than being sent the snapshot: half the snapshot
/// interval, at most [`larch_cluster::node::DEFAULT_LOG_KEPT_AFTER_SNAPSHOT`] entries.
pub fn log_kept_after_snapshot(snapshot_after_entries: u64) -> u64 {
    (snapshot_after_entries / 2).min(larch_cluster::node::DEFAULT_LOG_KEPT_AFTER_SNAPSHOT)
}

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
    /// `cluster.snapshot_after_entries`.
    pub snapshot_after_entries: u64,
    /// `cluster.reads = "linearizable"`.
    pub linearizable_reads: bool,
    /// `cluster.writes`, with the forwarding's Bind.
    pub writes: ClusterWrites,
}

/// What a follower does with a client's write (`cluster.writes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterWrites {
    /// Forwards it to the leader, bound as the settings say.
    Forward(ForwardSettings),
    /// Refers the client to the leader (`writes = "refer"`).
    Refer,
    /// Refers the client to the leader because `writes` was left to its default and no
    /// Bind was configured for forwarding (the node says so at start).
    ReferWithoutCredentials,
}

/// How a follower connects to the leader to forward writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardSettings {
    /// `cluster.bind_dn`.
    pub bind_dn: String,
    /// `cluster.credentials` or `cluster.credentials_file`.
    pub credentials: Credentials,
    /// `cluster.ca_file`.
    pub ca_file: Option<PathBuf>,
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
    pub snapshot_after_entries: Option<u64>,
    pub reads: Option<String>,
    pub writes: Option<String>,
    pub bind_dn: Option<String>,
    pub credentials: Option<String>,
    pub credentials_file: Option<String>,
    pub ca_file: Option<String>,
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
    pub(crate) fn from_raw(mut raw: RawCluster) -> Result<ClusterSettings, ConfigError> {
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
        let raw_members = raw.members.take().unwrap_or_default();
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
        let snapshot_after_entries = raw
            .snapshot_after_entries
            .unwrap_or(larch_cluster::node::DEFAULT_SNAPSHOT_AFTER_ENTRIES);
        if snapshot_after_entries < MIN_SNAPSHOT_AFTER_ENTRIES {
            return Err(ConfigError::invalid(
                "cluster.snapshot_after_entries",
                format!("{snapshot_after_entries}: at least {MIN_SNAPSHOT_AFTER_ENTRIES}"),
            ));
        }
        let linearizable_reads = match raw.reads.as_deref() {
            None | Some("local") => false,
            Some("linearizable") => true,
            Some(other) => {
                return Err(ConfigError::invalid(
                    "cluster.reads",
                    format!("`{other}`: write \"local\" or \"linearizable\""),
                ))
            }
        };
        let writes = ClusterWrites::from_raw(&raw, &members)?;
        Ok(ClusterSettings {
            node_id,
            linearizable_reads,
            listen,
            bootstrap,
            tls: raw.tls.unwrap_or(false),
            members,
            snapshot_after_entries,
            writes,
        })
    }

    /// Takes relative paths from `base` (the configuration file's directory).
    pub(crate) fn resolve_paths(&mut self, base: &Path) {
        if let ClusterWrites::Forward(f) = &mut self.writes {
            if let Credentials::File(p) = &mut f.credentials {
                *p = base.join(&*p);
            }
            if let Some(p) = &mut f.ca_file {
                *p = base.join(&*p);
            }
        }
    }

    /// This node's own member table.
    pub fn me(&self) -> Option<&ClusterMember> {
        self.members.iter().find(|m| m.id == self.node_id)
    }
}

impl ClusterWrites {
    /// `cluster.writes` and the forwarding's keys, checked together.
    fn from_raw(raw: &RawCluster, members: &[ClusterMember]) -> Result<ClusterWrites, ConfigError> {
        let forward = match raw.writes.as_deref() {
            None => None,
            Some("forward") => Some(true),
            Some("refer") => Some(false),
            Some(other) => {
                return Err(ConfigError::invalid(
                    "cluster.writes",
                    format!("`{other}`: expected \"forward\" or \"refer\""),
                ))
            }
        };
        let given = [
            ("cluster.bind_dn", raw.bind_dn.is_some()),
            ("cluster.credentials", raw.credentials.is_some()),
            ("cluster.credentials_file", raw.credentials_file.is_some()),
            ("cluster.ca_file", raw.ca_file.is_some()),
        ];
        let any_given = given.iter().any(|(_, g)| *g);
        match (forward, any_given) {
            (Some(false), true) => {
                let (key, _) = given.iter().find(|(_, g)| *g).copied().unwrap_or(given[0]);
                return Err(ConfigError::invalid(
                    key,
                    "only with cluster.writes = \"forward\": a follower that refers writes binds nowhere",
                ));
            }
            (Some(false), false) => return Ok(ClusterWrites::Refer),
            (None, false) => return Ok(ClusterWrites::ReferWithoutCredentials),
            _ => {}
        }
        let bind_dn = raw.bind_dn.clone().filter(|d| !d.trim().is_empty()).ok_or_else(|| {
            ConfigError::invalid(
                "cluster.bind_dn",
                "required to forward writes (cluster.writes = \"forward\"): the DN a follower binds as at the \
                 leader, which must be allowed to proxy (or write cluster.writes = \"refer\")",
            )
        })?;
        let credentials = match (&raw.credentials, &raw.credentials_file) {
            (Some(c), None) => Credentials::Inline(c.clone()),
            (None, Some(f)) => Credentials::File(PathBuf::from(f)),
            (Some(_), Some(_)) => {
                return Err(ConfigError::invalid(
                    "cluster.credentials_file",
                    "give `credentials` or `credentials_file`, not both",
                ))
            }
            (None, None) => {
                return Err(ConfigError::invalid(
                    "cluster.credentials",
                    "required with cluster.bind_dn (or `credentials_file`)",
                ))
            }
        };
        let ldaps = members
            .iter()
            .find(|m| m.ldap_url.as_deref().is_some_and(|u| u.starts_with("ldaps://")));
        match (ldaps, &raw.ca_file) {
            (Some(m), None) => {
                return Err(ConfigError::invalid(
                    "cluster.ca_file",
                    format!(
                        "required to forward writes over ldaps:// (node {}'s ldap_url): the CA certificates \
                         (PEM) that issue the nodes' certificates",
                        m.id
                    ),
                ))
            }
            (None, Some(_)) => {
                return Err(ConfigError::invalid(
                    "cluster.ca_file",
                    "only when a member's ldap_url is ldaps://",
                ))
            }
            _ => {}
        }
        Ok(ClusterWrites::Forward(ForwardSettings {
            bind_dn,
            credentials,
            ca_file: raw.ca_file.as_ref().map(PathBuf::from),
        }))
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
        assert_eq!(s.writes, ClusterWrites::ReferWithoutCredentials);
    }

    fn forwarding(raw: RawCluster) -> RawCluster {
        RawCluster {
            bind_dn: Some("cn=admin,dc=example,dc=com".into()),
            credentials_file: Some("forward.pw".into()),
            ..raw
        }
    }

    #[test]
    fn what_a_follower_does_with_writes() {
        let three = || raw(1, vec![member(1), member(2), member(3)]);
        let s = ClusterSettings::from_raw(forwarding(three())).unwrap();
        let ClusterWrites::Forward(f) = &s.writes else {
            panic!("{:?}", s.writes)
        };
        assert_eq!(f.bind_dn, "cn=admin,dc=example,dc=com");
        assert_eq!(f.credentials, Credentials::File("forward.pw".into()));
        assert_eq!(f.ca_file, None);
        let explicit = RawCluster {
            writes: Some("forward".into()),
            credentials: Some("secret".into()),
            credentials_file: None,
            ..forwarding(three())
        };
        let s = ClusterSettings::from_raw(explicit).unwrap();
        assert!(
            matches!(&s.writes, ClusterWrites::Forward(f) if f.credentials == Credentials::Inline("secret".into()))
        );
        let refer = RawCluster {
            writes: Some("refer".into()),
            ..three()
        };
        assert_eq!(
            ClusterSettings::from_raw(refer).unwrap().writes,
            ClusterWrites::Refer
        );
        let mut s = ClusterSettings::from_raw(forwarding(three())).unwrap();
        s.resolve_paths(Path::new("/etc/larch"));
        assert!(
            matches!(&s.writes, ClusterWrites::Forward(f) if f.credentials == Credentials::File("/etc/larch/forward.pw".into()))
        );
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
    fn forwarding_over_tls_needs_a_ca() {
        let tls_member = |id: u64| RawMember {
            ldap_url: Some(format!("ldaps://node{id}.example:636")),
            ..member(id)
        };
        let three = || raw(1, vec![tls_member(1), tls_member(2), tls_member(3)]);
        let e = ClusterSettings::from_raw(forwarding(three())).unwrap_err();
        assert!(e.to_string().contains("cluster.ca_file"), "{e}");
        let with_ca = RawCluster {
            ca_file: Some("ca.pem".into()),
            ..forwarding(three())
        };
        let s = ClusterSettings::from_raw(with_ca).unwrap();
        assert!(matches!(&s.writes, ClusterWrites::Forward(f) if f.ca_file == Some(PathBuf::from("ca.pem"))));
        // Referring needs no CA.
        assert_eq!(
            ClusterSettings::from_raw(three()).unwrap().writes,
            ClusterWrites::ReferWithoutCredentials
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
                RawCluster {
                    reads: Some("fresh".into()),
                    ..raw(1, vec![member(1)])
                },
                "cluster.reads",
            ),
            (
                RawCluster {
                    snapshot_after_entries: Some(3),
                    ..raw(1, vec![member(1)])
                },
                "cluster.snapshot_after_entries",
            ),
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
            (
                RawCluster {
                    writes: Some("chain".into()),
                    ..raw(1, vec![member(1)])
                },
                "cluster.writes",
            ),
            (
                RawCluster {
                    writes: Some("forward".into()),
                    ..raw(1, vec![member(1)])
                },
                "cluster.bind_dn",
            ),
            (
                RawCluster {
                    bind_dn: Some("cn=admin,dc=example,dc=com".into()),
                    ..raw(1, vec![member(1)])
                },
                "cluster.credentials",
            ),
            (
                RawCluster {
                    credentials: Some("secret".into()),
                    ..raw(1, vec![member(1)])
                },
                "cluster.bind_dn",
            ),
            (
                RawCluster {
                    credentials: Some("secret".into()),
                    ..forwarding(raw(1, vec![member(1)]))
                },
                "cluster.credentials_file",
            ),
            (
                RawCluster {
                    writes: Some("refer".into()),
                    ..forwarding(raw(1, vec![member(1)]))
                },
                "cluster.bind_dn",
            ),
            (
                RawCluster {
                    ca_file: Some("ca.pem".into()),
                    ..forwarding(raw(1, vec![member(1)]))
                },
                "cluster.ca_file",
            ),
        ];
        for (raw, key) in cases {
            let e = ClusterSettings::from_raw(raw).unwrap_err();
            assert!(e.to_string().contains(key), "{e} should name {key}");
        }
    }
}
