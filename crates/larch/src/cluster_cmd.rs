//! `larch cluster add-node` and `larch cluster remove-node` (`docs/cluster.md`, "Adding
//! and removing nodes"): a membership change of a running cluster, asked of any node with
//! Larch's extended operations and made by the leader.
//!
//! Steps:
//! 1. connect to `-H` and bind as the administrator (as `larch cluster status` does);
//! 2. send the request; a follower answers with a referral to the leader's LDAP URL: the
//!    command binds there with the same credentials and asks again (at most
//!    [`MAX_REFERRALS`] times, as leadership may move meanwhile);
//! 3. print the leader's one line on success (exit 0), or one line with the result code
//!    and the reason (exit 1).
//!
//! add-node returns once the new node has caught up with the log and votes; that takes as
//! long as sending it the whole log does.

use std::path::PathBuf;

use clap::Args;
use larch_bench::simple::ExtendedAnswer;
use larch_proto::exop::{AddNodeRequest, ExtendedValue, RemoveNodeRequest};
use larch_proto::ResultCode;

use crate::ldap_client::{runtime, Target};

/// Referrals followed before giving up (the leader may change between two of them).
pub const MAX_REFERRALS: usize = 3;

/// The server to ask and how to bind: the options of `larch cluster status`.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Any node of the cluster: ldap://host[:389] or ldaps://host[:636] (a follower refers
    /// the command to the leader, which the command then asks).
    #[arg(short = 'H', long, default_value = "ldap://127.0.0.1:389")]
    pub url: String,
    /// The administrator's DN (`directory.admin_dn`).
    #[arg(short = 'D', long, value_name = "DN")]
    pub bind_dn: String,
    /// The administrator's password.
    #[arg(short = 'w', long, value_name = "PASSWORD", conflicts_with = "password_file")]
    pub password: Option<String>,
    /// A file holding the password (one trailing newline is ignored).
    #[arg(short = 'y', long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// Send StartTLS on the ldap:// URL first.
    #[arg(long)]
    pub starttls: bool,
    /// PEM file of the CA certificates to trust for ldaps:// or StartTLS.
    #[arg(long, value_name = "PEM")]
    pub ca_file: Option<PathBuf>,
}

impl ServerArgs {
    fn target(&self) -> Target {
        Target {
            url: self.url.clone(),
            bind_dn: self.bind_dn.clone(),
            password: self.password.clone(),
            password_file: self.password_file.clone(),
            starttls: self.starttls,
            ca_file: self.ca_file.clone(),
        }
    }
}

/// `larch cluster add-node`.
#[derive(Debug, Args)]
#[command(
    after_help = "Start the new node first: an empty data directory, [cluster] with its own\n\
    node_id, bootstrap = false, and a [[cluster.members]] table for itself (id and raft).\n\
    Then, on any node:\n  \
    larch cluster add-node --id 4 --raft 10.0.0.4:7389 --ldap-url ldap://10.0.0.4:389 \\\n    \
    -H ldap://10.0.0.1 -D cn=admin,dc=example,dc=com -y pwfile\n\n\
    The leader adds the node as a learner, sends it the whole log, and makes it a voter once\n\
    it has caught up; the command returns then. A node that takes no entry for 15 s (down,\n\
    unreachable, a wrong --raft) is not added. Exits 1 with the reason on failure."
)]
pub struct AddNodeArgs {
    /// The new node's number (its `cluster.node_id`); never the number of a node whose
    /// data was lost.
    #[arg(long, value_name = "N")]
    pub id: u64,
    /// Where the new node's Raft transport listens (`host:port`), as the other nodes dial
    /// it.
    #[arg(long, value_name = "HOST:PORT")]
    pub raft: String,
    /// Where clients reach the new node: followers refer writes there while it leads.
    #[arg(long, value_name = "URL")]
    pub ldap_url: String,
    #[command(flatten)]
    pub server: ServerArgs,
}

/// `larch cluster remove-node`.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  \
    larch cluster remove-node --id 3 -H ldap://10.0.0.1 -D cn=admin,dc=example,dc=com -y pwfile\n\n\
    The node may be down. It may be the leader: it steps down once the cluster without it\n\
    is committed, and the others elect a leader. Stop the removed node afterwards and never\n\
    start it again on its data. The last voting member cannot be removed. Exits 1 with the\n\
    reason on failure.")]
pub struct RemoveNodeArgs {
    /// The number of the node to remove.
    #[arg(long, value_name = "N")]
    pub id: u64,
    #[command(flatten)]
    pub server: ServerArgs,
}

/// `larch cluster add-node`.
pub fn add_node(a: AddNodeArgs) -> Result<(), String> {
    if a.id == 0 {
        return Err("--id: node numbers start at 1".into());
    }
    let mut value = Vec::new();
    AddNodeRequest {
        node_id: a.id,
        raft: a.raft.as_bytes(),
        ldap_url: a.ldap_url.as_bytes(),
    }
    .encode_value(&mut value);
    ask(&a.server, AddNodeRequest::OID, &value)
}

/// `larch cluster remove-node`.
pub fn remove_node(a: RemoveNodeArgs) -> Result<(), String> {
    if a.id == 0 {
        return Err("--id: node numbers start at 1".into());
    }
    let mut value = Vec::new();
    RemoveNodeRequest { node_id: a.id }.encode_value(&mut value);
    ask(&a.server, RemoveNodeRequest::OID, &value)
}

/// Steps 1 to 3.
fn ask(server: &ServerArgs, oid: &str, value: &[u8]) -> Result<(), String> {
    let mut target = server.target();
    let answer = runtime()?.block_on(async {
        for _ in 0..=MAX_REFERRALS {
            let answer = request(&target, oid, value).await?;
            match leader_url(&answer) {
                Some(url) => target.url = url,
                None => return Ok(answer),
            }
        }
        Err(format!(
            "referred {MAX_REFERRALS} times without reaching the leader (leadership is moving: try again)"
        ))
    })?;
    if answer.code != ResultCode::SUCCESS {
        return Err(format!(
            "{} refused: {}: {}",
            target.url, answer.code, answer.message
        ));
    }
    println!("{}", answer.message);
    Ok(())
}

/// One request on a new connection bound as the administrator.
async fn request(target: &Target, oid: &str, value: &[u8]) -> Result<ExtendedAnswer, String> {
    let (mut c, url) = target.connect().await?;
    let answer = c
        .extended(3, oid, Some(value))
        .await
        .map_err(|e| format!("request to {url}: {e}"))?;
    c.unbind(4).await;
    Ok(answer)
}

/// The leader's URL a follower's referral names.
fn leader_url(answer: &ExtendedAnswer) -> Option<String> {
    if answer.code != ResultCode::REFERRAL {
        return None;
    }
    answer.referrals.first().cloned()
}
