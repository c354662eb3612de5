//! `cn=Monitor`: the server's figures as a subtree of entries, laid out as OpenLDAP's
//! back-monitor lays them out, so scripts and exporters written for slapd read Larch
//! unchanged (they search below `cn=Monitor` for `(objectClass=monitorCounterObject)`
//! reading `monitorCounter`, `(objectClass=monitoredObject)` reading `monitoredInfo`, and
//! `(objectClass=monitorOperation)` below `cn=Operations` reading `monitorOpCompleted`).
//!
//! The entries are built from one [`ServerReport`] when a search reaches them (never
//! stored, never written): the same figures `/metrics` shows. Layout (OpenLDAP's names;
//! Larch's own additions marked +):
//!
//! ```text
//! cn=Monitor                                monitorServer (monitoredInfo: Larch version)
//!   cn=Connections                          monitorContainer
//!     cn=Max File Descriptors               monitorCounterObject (the connection limit)
//!     cn=Total, cn=Current                  monitorCounterObject
//!     cn=Refused +                          monitorCounterObject
//!     cn=Connection N                       monitorConnection (one per open connection)
//!   cn=Databases                            monitorContainer
//!     cn=Database 1                         monitoredObject (namingContexts, entries, LSN)
//!   cn=Listeners                            monitorContainer
//!     cn=Listener N                         monitoredObject (labeledURI)
//!   cn=Log                                  monitorContainer
//!     cn=Access +, cn=Audit +               monitorCounterObject (lines written)
//!   cn=Operations                           monitorContainer (every kind summed)
//!     cn=Bind ... cn=Extended               monitorOperation (initiated, completed)
//!   cn=Statistics                           monitorContainer
//!     cn=Bytes, cn=PDU, cn=Entries,         monitorCounterObject
//!     cn=Referrals
//!   cn=Threads                              monitorContainer
//!     cn=Max, cn=Open, cn=Pending, ...      monitoredObject
//!   cn=Time                                 monitorContainer
//!     cn=Start, cn=Current                  monitoredObject (monitorTimestamp)
//!     cn=Uptime                             monitoredObject (seconds)
//!   cn=Store +                              monitorContainer
//!     cn=Entries, cn=LSN, cn=Commits, ...   monitorCounterObject
//!     cn=Health                             monitoredObject (writable, or why not)
//!     cn=Index <attribute>                  monitorCounterObject (keys)
//!   cn=Results +                            monitorContainer
//!     cn=<result name>                      monitorCounterObject (responses with the code)
//!   cn=Binds +                              monitorContainer
//!     cn=<method> <success|failure>         monitorCounterObject
//!   cn=Replication +                        monitorContainer (on a replica only)
//!     cn=Consumer <rid>                     monitorContainer (one per [[replication]])
//!       cn=Provider, cn=Base                monitoredObject (the URL, the base)
//!       cn=State                            monitoredObject (state, monitorTimestamp since)
//!       cn=CSN                              monitoredObject (newest CSN stored)
//!       cn=Changes                          monitorCounterObject (entries changed)
//!       cn=Lag Seconds                      monitoredObject (time since last in step; "unknown")
//!       cn=Last Change Delay                monitoredObject (seconds; "none")
//!       cn=Last Error                       monitoredObject (time and text; "none")
//!   cn=Cluster +                            monitorContainer (on a cluster node only)
//!     cn=Node, cn=Role, cn=Term, cn=Leader  monitoredObject (this node, its role, the term, the leader's ID)
//!     cn=Last Log LSN, cn=Applied LSN       monitorCounterObject (how far the log and the store reach)
//!     cn=Member N                           monitoredObject (one per member: its Raft address, LDAP URL, voter or learner)
//!   cn=Sync Provider +                      monitorContainer (unless sync_provider.enabled = false)
//!     cn=Context CSN                        monitoredObject (the context CSNs, `;`-separated)
//!     cn=Session Log                        monitorCounterObject (changes held)
//!     cn=Persistent Searches                monitorCounterObject (live)
//!     cn=Refreshing Searches                monitorCounterObject (persist asked, refresh running)
//!     cn=Search N                           monitorContainer (one per refreshAndPersist search)
//!       cn=Connection, cn=Peer, cn=Identity, monitoredObject
//!       cn=RID, cn=Base, cn=CSN
//!       cn=State                            monitoredObject (refreshing, persisting, closing; since)
//!       cn=Changes Sent, cn=Lag Changes     monitorCounterObject
//!       cn=Lag Seconds                      monitoredObject
//! ```
//!
//! Every attribute but `objectClass`, `cn` and `description` is operational, as in slapd:
//! asked for by name or with `+`. Who may read the subtree is decided by the access rules;
//! the default policy gives it to the administrator only.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::{BuildHasherDefault, Hasher};

use larch_model::entry::StoredBuilder;
use larch_model::schema::{AttributeTypeId, Schema};
use larch_proto::ResultCode;

use super::{Computed, DseEntry};
use crate::directory::Directory;
use crate::monitor::connections::ConnectionView;
use crate::monitor::counters::Totals;
use crate::monitor::kinds::{BindMethod, OpKind};
use crate::opattrs::time::generalized_time;
use crate::report::{ServerReport, SERVER_VERSION};

/// The monitor's naming context, as the root DSE publishes it (`monitorContext`).
pub const MONITOR_DN: &str = "cn=Monitor";

/// Every entry of the subtree, parents before children, built from `report`.
pub fn monitor_entries(dir: &Directory, report: &ServerReport) -> Vec<DseEntry> {
    let open = report.connections.as_ref().map_or(0, Vec::len);
    let mut t = Tree {
        schema: &dir.schema,
        types: TypeCache::default(),
        stored: StoredBuilder::default(),
        computed: Computed::of(&dir.schema),
        out: Vec::with_capacity(open + 128),
    };
    t.server();
    connections(&mut t, report);
    databases(&mut t, report);
    listeners(&mut t, dir);
    logs(&mut t, report);
    if let Some(totals) = &report.totals {
        operations(&mut t, totals);
        statistics(&mut t, totals);
        results(&mut t, totals);
        binds(&mut t, totals);
    }
    threads(&mut t, report);
    time(&mut t, report);
    store(&mut t, report);
    replication(&mut t, report);
    sync_provider(&mut t, report);
    cluster(&mut t, report);
    t.out
}

/// Builds entries below `cn=Monitor`.
struct Tree<'a> {
    schema: &'a Schema,
    /// Attribute types by name, looked up in the schema once per name (a read of the
    /// subtree with a thousand connections adds some fifteen thousand attributes).
    types: TypeCache,
    /// Writes each entry's values straight into the stored form, its buffers reused from
    /// entry to entry (a thousand connection entries would otherwise cost some forty
    /// allocations each).
    stored: StoredBuilder,
    computed: Computed,
    out: Vec<DseEntry>,
}

/// Attribute types by the address of their name: every name is a literal, so the address
/// stands for the text, and a lookup costs a multiplication instead of hashing the text
/// (two copies of one literal at two addresses just take two places).
type TypeCache = HashMap<usize, Option<AttributeTypeId>, BuildHasherDefault<AddressHasher>>;

/// Hashes one address (Fibonacci hashing).
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// One entry's attributes, named.
struct Fill<'t, 'a> {
    schema: &'a Schema,
    types: &'t mut TypeCache,
    b: &'t mut StoredBuilder,
}

impl Fill<'_, '_> {
    /// The type called `name` (`None`: the schema lacks it, and its values are left out).
    fn ty(&mut self, name: &'static str) -> Option<AttributeTypeId> {
        let schema = self.schema;
        *self
            .types
            .entry(name.as_ptr() as usize)
            .or_insert_with(|| schema.attribute_type(name).map(|t| t.id))
    }

    fn add<V: AsRef<[u8]>>(&mut self, name: &'static str, values: &[V]) {
        if let Some(ty) = self.ty(name) {
            for v in values {
                self.b.value(ty, v.as_ref());
            }
        }
    }

    /// Adds `n` in decimal.
    fn number(&mut self, name: &'static str, n: u64) {
        if let Some(ty) = self.ty(name) {
            self.b.decimal(ty, n);
        }
    }
}

impl Tree<'_> {
    /// An entry `cn=<name>,<parent>` of class `class`, with `fill` adding the rest.
    fn entry(&mut self, parent: &str, name: &str, class: &str, fill: impl FnOnce(&mut Fill<'_, '_>)) {
        let dn = child_dn(parent, name);
        let mut f = Fill {
            schema: self.schema,
            types: &mut self.types,
            b: &mut self.stored,
        };
        f.add("objectClass", &[class]);
        f.add("cn", &[name]);
        f.add("structuralObjectClass", &[class]);
        fill(&mut f);
        let stored = self.stored.finish();
        self.out.push(DseEntry::new(dn, stored, self.computed));
    }

    fn server(&mut self) {
        self.entry("", "Monitor", "monitorServer", |b| {
            b.add(
                "description",
                &["This subtree contains monitoring/managing objects."],
            );
            b.add("monitoredInfo", &[format!("Larch {SERVER_VERSION}")]);
        });
    }

    fn container(&mut self, parent: &str, name: &str, description: &str) -> String {
        self.entry(parent, name, "monitorContainer", |b| {
            b.add("description", &[description]);
        });
        child_dn(parent, name)
    }

    fn counter(&mut self, parent: &str, name: &str, value: u64) {
        self.entry(parent, name, "monitorCounterObject", |b| {
            b.number("monitorCounter", value);
        });
    }

    fn info(&mut self, parent: &str, name: &str, value: &str) {
        self.entry(parent, name, "monitoredObject", |b| {
            b.add("monitoredInfo", &[value]);
        });
    }
}

fn child_dn(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        format!("cn={name}")
    } else {
        format!("cn={name},{parent}")
    }
}

fn connections(t: &mut Tree<'_>, report: &ServerReport) {
    let parent = t.container(MONITOR_DN, "Connections", "Network connections");
    t.counter(&parent, "Max File Descriptors", report.connection_limit);
    if let Some(totals) = &report.totals {
        t.counter(&parent, "Total", totals.accepted());
        t.counter(&parent, "Current", totals.current());
        t.counter(&parent, "Refused", totals.refused());
    }
    for c in report.connections.iter().flatten() {
        connection(t, &parent, c);
    }
}

/// `cn=Connection N`: the attributes slapd gives a connection.
fn connection(t: &mut Tree<'_>, parent: &str, c: &ConnectionView) {
    let name = format!("Connection {}", c.conn);
    let listener = match (c.ldaps, c.local) {
        (true, Some(a)) => format!("ldaps://{a}"),
        (false, Some(a)) => format!("ldap://{a}"),
        (_, None) => String::new(),
    };
    let executing = c.received.saturating_sub(c.completed);
    t.entry(parent, &name, "monitorConnection", |b| {
        b.number("monitorConnectionNumber", c.conn);
        b.add("monitorConnectionProtocol", &["3"]);
        b.number("monitorConnectionOpsReceived", c.received);
        b.number("monitorConnectionOpsExecuting", executing);
        b.add("monitorConnectionOpsPending", &["0"]);
        b.number("monitorConnectionOpsCompleted", c.completed);
        let mask = match &c.tls {
            Some((version, cipher)) => format!("tls {version} {cipher}"),
            None => String::from("plain"),
        };
        b.add("monitorConnectionMask", &[mask]);
        if !listener.is_empty() {
            b.add("monitorConnectionListener", &[listener.as_str()]);
        }
        if let Some(p) = c.peer {
            b.add("monitorConnectionPeerAddress", &[format!("IP={p}")]);
        }
        if let Some(l) = c.local {
            b.add("monitorConnectionLocalAddress", &[format!("IP={l}")]);
        }
        b.add("monitorConnectionAuthzDN", &[c.authz_dn.as_str()]);
        b.add("monitorConnectionStartTime", &[generalized_time(c.started)]);
        b.add("monitorConnectionActivityTime", &[generalized_time(c.activity)]);
    });
}

fn databases(t: &mut Tree<'_>, report: &ServerReport) {
    let parent = t.container(MONITOR_DN, "Databases", "Databases");
    let store = &report.store;
    t.entry(&parent, "Database 1", "monitoredObject", |b| {
        b.add("monitoredInfo", &["larch"]);
        b.add("namingContexts", &store.suffixes);
        b.add("readOnly", &[if store.writable { "FALSE" } else { "TRUE" }]);
        b.add("monitorIsShadow", &["FALSE"]);
    });
}

fn listeners(t: &mut Tree<'_>, dir: &Directory) {
    let parent = t.container(MONITOR_DN, "Listeners", "Listeners");
    for (i, l) in dir.config.server.listen.iter().enumerate() {
        let url = l.to_string();
        t.entry(&parent, &format!("Listener {i}"), "monitoredObject", |b| {
            b.add("labeledURI", &[url.as_str()]);
            b.add(
                "monitorConnectionLocalAddress",
                &[format!("IP={}:{}", l.host, l.port)],
            );
        });
    }
}

fn logs(t: &mut Tree<'_>, report: &ServerReport) {
    let parent = t.container(MONITOR_DN, "Log", "Logs");
    if let Some(a) = &report.access_log {
        t.entry(&parent, "Access", "monitorCounterObject", |b| {
            b.add(
                "description",
                &["access log: lines written (monitorCounter), dropped, lost"],
            );
            b.number("monitorCounter", a.lines_written);
            b.add(
                "monitoredInfo",
                &[format!(
                    "written={} dropped={} lost={} write_errors={}",
                    a.lines_written, a.records_dropped, a.lines_lost, a.write_errors
                )],
            );
        });
    }
    if let Some(a) = &report.audit_log {
        t.entry(&parent, "Audit", "monitorCounterObject", |b| {
            b.add(
                "description",
                &["audit log: changes written (monitorCounter), skipped, lost"],
            );
            b.number("monitorCounter", a.records_written);
            b.add(
                "monitoredInfo",
                &[format!(
                    "written={} skipped={} lost={} write_errors={}",
                    a.records_written, a.changes_skipped, a.records_lost, a.write_errors
                )],
            );
        });
    }
}

fn operations(t: &mut Tree<'_>, totals: &Totals) {
    t.entry(MONITOR_DN, "Operations", "monitorContainer", |b| {
        b.add("description", &["Operations"]);
        b.number("monitorOpInitiated", totals.initiated_all());
        b.number("monitorOpCompleted", totals.completed_all());
    });
    let parent = child_dn(MONITOR_DN, "Operations");
    for kind in OpKind::ALL {
        t.entry(&parent, kind.monitor_name(), "monitorOperation", |b| {
            b.number("monitorOpInitiated", totals.initiated(kind));
            b.number("monitorOpCompleted", totals.completed(kind));
        });
    }
}

fn statistics(t: &mut Tree<'_>, totals: &Totals) {
    let parent = t.container(MONITOR_DN, "Statistics", "Statistics");
    t.counter(&parent, "Bytes", totals.bytes());
    t.counter(&parent, "PDU", totals.pdus());
    t.counter(&parent, "Entries", totals.entries());
    t.counter(&parent, "Referrals", totals.references());
    t.counter(&parent, "Undecodable", totals.undecodable());
    t.counter(&parent, "TLS Handshakes", totals.tls());
}

fn results(t: &mut Tree<'_>, totals: &Totals) {
    let parent = t.container(MONITOR_DN, "Results", "Responses by result code");
    for (code, count) in totals.results() {
        let name = match code {
            Some(c) => result_name(c),
            None => "other codes".to_string(),
        };
        t.entry(&parent, &name, "monitorCounterObject", |b| {
            if let Some(c) = code {
                b.add("description", &[format!("result code {c}")]);
            }
            b.number("monitorCounter", count);
        });
    }
}

/// The name of result code `code` (`success`, `noSuchObject`...), or `code N`.
fn result_name(code: u32) -> String {
    match ResultCode(code).name() {
        Some(name) => name.to_string(),
        None => format!("code {code}"),
    }
}

fn binds(t: &mut Tree<'_>, totals: &Totals) {
    let parent = t.container(MONITOR_DN, "Binds", "Binds by method and result");
    for method in BindMethod::ALL {
        for ok in [true, false] {
            let mut name = String::from(method.label());
            let _ = write!(name, " {}", if ok { "success" } else { "failure" });
            t.counter(&parent, &name, totals.binds(method, ok));
        }
    }
}

fn threads(t: &mut Tree<'_>, report: &ServerReport) {
    let parent = t.container(MONITOR_DN, "Threads", "Threads");
    let th = &report.threads;
    let max = th.workers + th.search_threads + th.blocking_max;
    t.info(&parent, "Max", &max.to_string());
    t.info(&parent, "Workers", &th.workers.to_string());
    t.info(&parent, "Search", &th.search_threads.to_string());
    t.info(&parent, "Blocking Max", &th.blocking_max.to_string());
    t.info(&parent, "Pending", &th.search_queued.to_string());
    if let Some(n) = th.process {
        t.info(&parent, "Open", &n.to_string());
    }
    t.info(&parent, "State", "running");
}

fn time(t: &mut Tree<'_>, report: &ServerReport) {
    let parent = t.container(MONITOR_DN, "Time", "Time");
    t.entry(&parent, "Start", "monitoredObject", |b| {
        b.add("monitorTimestamp", &[generalized_time(report.started)]);
    });
    t.entry(&parent, "Current", "monitoredObject", |b| {
        b.add("monitorTimestamp", &[generalized_time(report.now)]);
    });
    t.info(&parent, "Uptime", &report.uptime.as_secs().to_string());
}

fn store(t: &mut Tree<'_>, report: &ServerReport) {
    let parent = t.container(MONITOR_DN, "Store", "The in-memory store and its log");
    let st = &report.store;
    t.counter(&parent, "Entries", st.entries);
    t.counter(&parent, "LSN", st.lsn);
    t.counter(&parent, "Records Since Snapshot", st.records_since_snapshot);
    t.counter(&parent, "Commit Batches", st.stats.batches);
    t.counter(&parent, "Commit Jobs", st.stats.jobs);
    t.counter(&parent, "Commit Records", st.stats.records);
    t.counter(
        &parent,
        "Commit Microseconds",
        st.stats.commit_time.as_micros() as u64,
    );
    t.counter(&parent, "Largest Batch", st.stats.largest_batch);
    t.counter(&parent, "Snapshots", st.stats.snapshots);
    if let Some(snap) = st.stats.last_snapshot {
        t.entry(&parent, "Last Snapshot", "monitoredObject", |b| {
            b.add("monitorTimestamp", &[generalized_time(snap.finished)]);
            b.add(
                "monitoredInfo",
                &[format!(
                    "lsn={} entries={} bytes={} duration_ms={} loaded_at_start={}",
                    snap.lsn,
                    snap.entries,
                    snap.bytes,
                    snap.duration.as_millis(),
                    snap.loaded
                )],
            );
        });
    }
    if let Some(rss) = report.resident_bytes {
        t.counter(&parent, "Resident Bytes", rss);
    }
    let health = match &st.write_halt {
        None => "writable".to_string(),
        Some(why) => format!("writes halted: {why}"),
    };
    t.info(&parent, "Health", &health);
    for (name, keys) in &st.indexes {
        t.entry(&parent, &format!("Index {name}"), "monitorCounterObject", |b| {
            let total = keys.equality + keys.presence + keys.substring + keys.ordering;
            b.number("monitorCounter", total as u64);
            b.add(
                "monitoredInfo",
                &[format!(
                    "equality={} presence={} substring={} ordering={}",
                    keys.equality, keys.presence, keys.substring, keys.ordering
                )],
            );
        });
    }
}

fn sync_provider(t: &mut Tree<'_>, report: &ServerReport) {
    let Some(p) = &report.sync_provider else { return };
    let top = t.container(
        MONITOR_DN,
        "Sync Provider",
        "The content synchronization provider (RFC 4533) replicas follow.",
    );
    let context = if p.context_csn.is_empty() {
        "none"
    } else {
        &p.context_csn
    };
    t.info(&top, "Context CSN", context);
    t.counter(&top, "Session Log", p.session_log as u64);
    t.counter(&top, "Persistent Searches", p.persistent as u64);
    t.counter(&top, "Refreshing Searches", p.refreshing as u64);
    for f in &p.followers {
        let name = format!("Search {}", f.id);
        let who = &f.who;
        let parent = t.container(
            &top,
            &name,
            &format!("refreshAndPersist search on connection {}", who.conn),
        );
        t.info(&parent, "Connection", &who.conn.to_string());
        let peer = who.peer.map_or_else(|| "none".to_string(), |a| a.to_string());
        t.info(&parent, "Peer", &peer);
        t.info(
            &parent,
            "Identity",
            if who.authz_dn.is_empty() {
                "anonymous"
            } else {
                &who.authz_dn
            },
        );
        t.info(
            &parent,
            "RID",
            &who.rid.map_or_else(|| "none".to_string(), |r| r.to_string()),
        );
        t.info(&parent, "Base", &who.base);
        t.entry(&parent, "State", "monitoredObject", |b| {
            b.add("monitoredInfo", &[f.stage]);
            b.add("monitorTimestamp", &[generalized_time(who.since)]);
        });
        t.counter(&parent, "Changes Sent", f.changes_sent);
        t.counter(&parent, "Lag Changes", f.lag.changes);
        t.info(&parent, "Lag Seconds", &format!("{:.3}", f.lag.age.as_secs_f64()));
        t.info(&parent, "CSN", f.through_csn.as_deref().unwrap_or("none"));
    }
}

fn cluster(t: &mut Tree<'_>, report: &ServerReport) {
    let Some(c) = &report.cluster else { return };
    let top = t.container(MONITOR_DN, "Cluster", "This node's view of its cluster.");
    t.info(&top, "Node", &c.node_id.to_string());
    t.info(&top, "Role", c.role.name());
    t.info(&top, "Term", &c.term.to_string());
    t.info(
        &top,
        "Leader",
        &c.leader.map_or_else(|| "none".to_string(), |l| l.to_string()),
    );
    t.counter(&top, "Last Log LSN", c.last_log_lsn);
    t.counter(&top, "Applied LSN", c.applied_lsn);
    for m in &c.members {
        let kind = if c.voters.contains(&m.id) {
            "voter"
        } else {
            "learner"
        };
        let info = match &m.ldap_url {
            Some(url) => format!("{} {url} {kind}", m.raft),
            None => format!("{} {kind}", m.raft),
        };
        t.info(&top, &format!("Member {}", m.id), &info);
    }
}

fn replication(t: &mut Tree<'_>, report: &ServerReport) {
    if report.replication.is_empty() {
        return;
    }
    let top = t.container(
        MONITOR_DN,
        "Replication",
        "The syncrepl consumers of this read replica.",
    );
    for r in &report.replication {
        let name = format!("Consumer {}", r.rid);
        let parent = t.container(&top, &name, &format!("rid {} from {}", r.rid, r.provider));
        t.info(&parent, "Provider", &r.provider);
        t.info(&parent, "Base", &r.base);
        t.entry(&parent, "State", "monitoredObject", |b| {
            b.add("monitoredInfo", &[r.state.name()]);
            b.add("monitorTimestamp", &[generalized_time(r.since)]);
        });
        t.info(&parent, "CSN", r.last_csn.as_deref().unwrap_or("none"));
        t.counter(&parent, "Changes", r.changes_applied);
        let lag = r
            .lag(report.now)
            .map_or_else(|| "unknown".to_string(), |d| format!("{:.3}", d.as_secs_f64()));
        t.info(&parent, "Lag Seconds", &lag);
        let delay = r
            .last_delay
            .map_or_else(|| "none".to_string(), |d| format!("{:.3}", d.as_secs_f64()));
        t.info(&parent, "Last Change Delay", &delay);
        let error = match &r.last_error {
            Some((at, text)) => format!("{} {text}", generalized_time(*at)),
            None => "none".to_string(),
        };
        t.info(&parent, "Last Error", &error);
    }
}
