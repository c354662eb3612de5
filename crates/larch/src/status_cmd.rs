//! `larch status`: a running server's state in a few lines, read from its `cn=Monitor`
//! (`docs/monitoring.md`) with one search, as the administrator or an account the access
//! rules let read it. What each line says:
//!
//! ```text
//! Larch 0.1.0, up 2h 3m 4s (since 20261126180000Z)
//! connections: 12 open, 3401 since start, 0 refused (limit 19744)
//! operations: 1234567 completed, 2 in progress (search 1200000, bind 30000, ...)
//! results: success 1234000, noSuchObject 400, invalidCredentials 12
//! binds: simple 3000 ok 12 failed, anonymous 10 ok
//! store: 100002 entries, LSN 5123, writable; 123 log records since the last snapshot (LSN 5000, 20261126200000Z)
//! logs: access 2468000 lines written, 0 dropped, 0 lost
//! threads: 14 in the process (2 workers, 2 search, 4 blocking at most), 0 searches waiting
//! cluster: node 2 follower, leader 1, term 3; log LSN 812, applied LSN 812
//! cluster members: 1 127.0.0.1:7001 ldap://127.0.0.1:3891/ voter, 2 127.0.0.1:7002 ldap://127.0.0.1:3892/ voter, ...
//! ```
//!
//! The two `cluster` lines appear on a cluster node only; `larch cluster status` prints them
//! alone.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use larch_bench::simple::FoundEntry;
use larch_proto::{ResultCode, SearchScope};

use crate::ldap_client::{runtime, Target};

/// `larch status`.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  \
    larch status -H ldap://127.0.0.1:389 -D cn=admin,dc=example,dc=com -y pwfile\n\n\
    Reads cn=Monitor (the admin may by default; see docs/monitoring.md to let a monitoring\n\
    account read it). Exits 1 with the reason when the server cannot be reached or read.")]
pub struct StatusArgs {
    /// Server URL: ldap://host[:389] or ldaps://host[:636].
    #[arg(short = 'H', long, default_value = "ldap://127.0.0.1:389")]
    pub url: String,
    /// The DN to bind as (the administrator, or an account allowed to read cn=Monitor).
    #[arg(short = 'D', long, value_name = "DN")]
    pub bind_dn: String,
    /// Its password.
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

/// `larch status`: prints the summary.
pub fn status(a: StatusArgs) -> Result<(), String> {
    let entries = read_monitor(a)?;
    let monitor = Monitor::new(&entries);
    for line in monitor.lines() {
        println!("{line}");
    }
    Ok(())
}

/// `larch cluster status`: the cluster lines of the summary; an error on a server that is
/// not a cluster node.
pub fn cluster_status(a: StatusArgs) -> Result<(), String> {
    let entries = read_monitor(a)?;
    let monitor = Monitor::new(&entries);
    let lines = monitor.cluster();
    if lines.is_empty() {
        return Err("the server is not a cluster node (no cn=Cluster,cn=Monitor)".into());
    }
    for line in lines {
        println!("{line}");
    }
    Ok(())
}

/// The entries of cn=Monitor but the per-connection ones.
fn read_monitor(a: StatusArgs) -> Result<Vec<FoundEntry>, String> {
    let target = Target {
        url: a.url,
        bind_dn: a.bind_dn,
        password: a.password,
        password_file: a.password_file,
        starttls: a.starttls,
        ca_file: a.ca_file,
    };
    let answer = runtime()?.block_on(async {
        let (mut c, url) = target.connect().await?;
        let answer = c
            .search(
                3,
                "cn=Monitor",
                SearchScope::Subtree,
                "(!(objectClass=monitorConnection))",
                &[b"*", b"+"],
            )
            .await
            .map_err(|e| format!("reading cn=Monitor from {url}: {e}"))?;
        c.unbind(4).await;
        Ok::<_, String>(answer)
    })?;
    if answer.code != ResultCode::SUCCESS {
        let why = if answer.code == ResultCode::NO_SUCH_OBJECT {
            " (no cn=Monitor: the monitor is off, or this account may not read it)"
        } else {
            ""
        };
        return Err(format!(
            "reading cn=Monitor: {}{why}: {}",
            answer.code, answer.message
        ));
    }
    Ok(answer.entries)
}

/// The entries read, by lower-case DN.
struct Monitor<'a> {
    by_dn: BTreeMap<String, &'a FoundEntry>,
    entries: &'a [FoundEntry],
}

impl<'a> Monitor<'a> {
    fn new(entries: &'a [FoundEntry]) -> Monitor<'a> {
        Monitor {
            by_dn: entries.iter().map(|e| (e.dn.to_ascii_lowercase(), e)).collect(),
            entries,
        }
    }

    /// Attribute `attr` of entry `rdns` below cn=Monitor (`"cn=total,cn=connections"`).
    fn value(&self, rdns: &str, attr: &str) -> Option<&'a str> {
        let dn = if rdns.is_empty() {
            "cn=monitor".to_string()
        } else {
            format!("{rdns},cn=monitor")
        };
        self.by_dn.get(&dn).and_then(|e| e.first(attr))
    }

    fn number(&self, rdns: &str, attr: &str) -> u64 {
        self.value(rdns, attr).and_then(|v| v.parse().ok()).unwrap_or(0)
    }

    fn counter(&self, rdns: &str) -> u64 {
        self.number(rdns, "monitorCounter")
    }

    /// The children of `parent` (lower-case DN) with their first RDN's value.
    fn children(&self, parent: &str) -> Vec<(String, &'a FoundEntry)> {
        let suffix = format!(",{parent}");
        self.entries
            .iter()
            .filter_map(|e| {
                let dn = e.dn.to_ascii_lowercase();
                let rdn = dn.strip_suffix(&suffix)?;
                if rdn.contains(',') {
                    return None;
                }
                let name = e.dn.split(',').next()?.split_once('=')?.1.to_string();
                Some((name, e))
            })
            .collect()
    }

    fn lines(&self) -> Vec<String> {
        let mut out = vec![
            self.server(),
            self.connections(),
            self.operations(),
            self.results(),
            self.binds(),
            self.store(),
        ];
        out.extend(self.logs());
        out.push(self.threads());
        out.extend(self.replication());
        out.extend(self.cluster());
        out
    }

    /// On a cluster node: its role, the leader, the term, how far its log and its store
    /// reach, and the members (none on a server that is not a cluster node).
    fn cluster(&self) -> Vec<String> {
        let info = |leaf: &str| self.value(&format!("cn={leaf},cn=cluster"), "monitoredInfo");
        let Some(node) = info("node") else {
            return Vec::new();
        };
        let members: Vec<String> = self
            .children("cn=cluster,cn=monitor")
            .into_iter()
            .filter_map(|(name, e)| {
                let id = name.strip_prefix("Member ")?;
                Some(format!("{id} {}", e.first("monitoredInfo").unwrap_or("?")))
            })
            .collect();
        vec![
            format!(
                "cluster: node {node} {}, leader {}, term {}; log LSN {}, applied LSN {}",
                info("role").unwrap_or("?"),
                info("leader").unwrap_or("?"),
                info("term").unwrap_or("?"),
                self.counter("cn=last log lsn,cn=cluster"),
                self.counter("cn=applied lsn,cn=cluster"),
            ),
            format!("cluster members: {}", members.join(", ")),
        ]
    }

    /// One line per `[[replication]]` consumer (none on a server that is not a replica).
    fn replication(&self) -> Vec<String> {
        self.children("cn=replication,cn=monitor")
            .into_iter()
            .map(|(name, _)| {
                let at = |leaf: &str| format!("cn={leaf},cn={},cn=replication", name.to_ascii_lowercase());
                let info = |leaf: &str| self.value(&at(leaf), "monitoredInfo").unwrap_or("?");
                format!(
                    "replication {}: {} from {}, {} changes applied, CSN {}, last error: {}",
                    name.to_ascii_lowercase(),
                    info("state"),
                    info("provider"),
                    self.counter(&at("changes")),
                    info("csn"),
                    info("last error"),
                )
            })
            .collect()
    }

    fn server(&self) -> String {
        let version = self.value("", "monitoredInfo").unwrap_or("Larch");
        let up = self.number("cn=uptime,cn=time", "monitoredInfo");
        let since = self.value("cn=start,cn=time", "monitorTimestamp").unwrap_or("?");
        format!("{version}, up {} (since {since})", duration(up))
    }

    fn connections(&self) -> String {
        format!(
            "connections: {} open, {} since start, {} refused (limit {})",
            self.counter("cn=current,cn=connections"),
            self.counter("cn=total,cn=connections"),
            self.counter("cn=refused,cn=connections"),
            self.counter("cn=max file descriptors,cn=connections"),
        )
    }

    fn operations(&self) -> String {
        let completed = self.number("cn=operations", "monitorOpCompleted");
        let initiated = self.number("cn=operations", "monitorOpInitiated");
        let mut kinds: Vec<(String, u64)> = self
            .children("cn=operations,cn=monitor")
            .into_iter()
            .map(|(name, e)| {
                let n = e
                    .first("monitorOpCompleted")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                (name.to_ascii_lowercase(), n)
            })
            .filter(|(_, n)| *n > 0)
            .collect();
        kinds.sort_by_key(|k| std::cmp::Reverse(k.1));
        let list: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
        format!(
            "operations: {completed} completed, {} in progress ({})",
            initiated.saturating_sub(completed),
            list.join(", ")
        )
    }

    fn results(&self) -> String {
        let mut codes: Vec<(String, u64)> = self
            .children("cn=results,cn=monitor")
            .into_iter()
            .map(|(name, e)| {
                (
                    name,
                    e.first("monitorCounter")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0),
                )
            })
            .collect();
        codes.sort_by_key(|c| std::cmp::Reverse(c.1));
        let list: Vec<String> = codes.iter().map(|(k, n)| format!("{k} {n}")).collect();
        format!(
            "results: {}",
            if list.is_empty() {
                "none yet".into()
            } else {
                list.join(", ")
            }
        )
    }

    fn binds(&self) -> String {
        let mut methods: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for (name, e) in self.children("cn=binds,cn=monitor") {
            let n: u64 = e
                .first("monitorCounter")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let Some((method, outcome)) = name.rsplit_once(' ') else {
                continue;
            };
            let slot = methods.entry(method.to_string()).or_default();
            if outcome == "success" {
                slot.0 += n;
            } else {
                slot.1 += n;
            }
        }
        let list: Vec<String> = methods
            .iter()
            .filter(|(_, (ok, failed))| ok + failed > 0)
            .map(|(m, (ok, failed))| format!("{m} {ok} ok {failed} failed"))
            .collect();
        format!(
            "binds: {}",
            if list.is_empty() {
                "none yet".into()
            } else {
                list.join(", ")
            }
        )
    }

    fn store(&self) -> String {
        let health = self.value("cn=health,cn=store", "monitoredInfo").unwrap_or("?");
        let mut line = format!(
            "store: {} entries, LSN {}, {health}; {} log records since the last snapshot",
            self.counter("cn=entries,cn=store"),
            self.counter("cn=lsn,cn=store"),
            self.counter("cn=records since snapshot,cn=store"),
        );
        if let Some(when) = self.value("cn=last snapshot,cn=store", "monitorTimestamp") {
            let info = self
                .value("cn=last snapshot,cn=store", "monitoredInfo")
                .unwrap_or("");
            line.push_str(&format!(" (taken {when}: {info})"));
        }
        line
    }

    fn logs(&self) -> Vec<String> {
        ["access", "audit"]
            .iter()
            .filter_map(|log| {
                let info = self.value(&format!("cn={log},cn=log"), "monitoredInfo")?;
                Some(format!(
                    "{log} log: {}",
                    info.replace('=', " ").replace("  ", " ")
                ))
            })
            .collect()
    }

    fn threads(&self) -> String {
        let t = |name: &str| self.number(&format!("cn={name},cn=threads"), "monitoredInfo");
        format!(
            "threads: {} in the process ({} workers, {} search, {} blocking at most), {} searches waiting",
            t("open"),
            t("workers"),
            t("search"),
            t("blocking max"),
            t("pending"),
        )
    }
}

/// `2h 3m 4s`.
fn duration(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m {s}s"),
        _ => format!("{d}d {h}h {m}m"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(dn: &str, attrs: &[(&str, &str)]) -> FoundEntry {
        FoundEntry {
            dn: dn.into(),
            attributes: attrs
                .iter()
                .map(|(a, v)| (a.to_string(), vec![v.to_string()]))
                .collect(),
        }
    }

    #[test]
    fn the_summary_reads_the_entries_it_names() {
        let entries = vec![
            entry("cn=Monitor", &[("monitoredInfo", "Larch 9.9")]),
            entry("cn=Uptime,cn=Time,cn=Monitor", &[("monitoredInfo", "3725")]),
            entry("cn=Current,cn=Connections,cn=Monitor", &[("monitorCounter", "3")]),
            entry("cn=Total,cn=Connections,cn=Monitor", &[("monitorCounter", "40")]),
            entry(
                "cn=Operations,cn=Monitor",
                &[("monitorOpInitiated", "12"), ("monitorOpCompleted", "11")],
            ),
            entry(
                "cn=Search,cn=Operations,cn=Monitor",
                &[("monitorOpInitiated", "8"), ("monitorOpCompleted", "7")],
            ),
            entry(
                "cn=Bind,cn=Operations,cn=Monitor",
                &[("monitorOpInitiated", "4"), ("monitorOpCompleted", "4")],
            ),
            entry("cn=success,cn=Results,cn=Monitor", &[("monitorCounter", "10")]),
            entry(
                "cn=simple success,cn=Binds,cn=Monitor",
                &[("monitorCounter", "3")],
            ),
            entry(
                "cn=simple failure,cn=Binds,cn=Monitor",
                &[("monitorCounter", "1")],
            ),
        ];
        let lines = Monitor::new(&entries).lines();
        assert_eq!(lines[0], "Larch 9.9, up 1h 2m 5s (since ?)");
        assert!(
            lines[1].starts_with("connections: 3 open, 40 since start"),
            "{}",
            lines[1]
        );
        assert_eq!(
            lines[2],
            "operations: 11 completed, 1 in progress (search 7, bind 4)"
        );
        assert_eq!(lines[3], "results: success 10");
        assert_eq!(lines[4], "binds: simple 3 ok 1 failed");
        assert!(!lines.iter().any(|l| l.starts_with("replication")));
        let mut replica = entries.clone();
        for (dn, attr, v) in [
            ("cn=Consumer 7,cn=Replication,cn=Monitor", "description", "rid 7"),
            (
                "cn=State,cn=Consumer 7,cn=Replication,cn=Monitor",
                "monitoredInfo",
                "persisting",
            ),
            (
                "cn=Provider,cn=Consumer 7,cn=Replication,cn=Monitor",
                "monitoredInfo",
                "ldap://p:389",
            ),
            (
                "cn=Changes,cn=Consumer 7,cn=Replication,cn=Monitor",
                "monitorCounter",
                "12",
            ),
            (
                "cn=CSN,cn=Consumer 7,cn=Replication,cn=Monitor",
                "monitoredInfo",
                "c",
            ),
            (
                "cn=Last Error,cn=Consumer 7,cn=Replication,cn=Monitor",
                "monitoredInfo",
                "none",
            ),
        ] {
            replica.push(entry(dn, &[(attr, v)]));
        }
        let lines = Monitor::new(&replica).lines();
        assert_eq!(
            lines.last().unwrap(),
            "replication consumer 7: persisting from ldap://p:389, 12 changes applied, CSN c, last error: none"
        );
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(duration(5), "5s");
        assert_eq!(duration(65), "1m 5s");
        assert_eq!(duration(90_061), "1d 1h 1m");
    }
}
