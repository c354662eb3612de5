//! A [`ServerReport`] in Prometheus' text exposition format (version 0.0.4): every family
//! with `# HELP` and `# TYPE`, names prefixed `larch_`, base units (seconds, bytes),
//! counters ending in `_total`, latency as cumulative histograms.
//!
//! Written by hand rather than through a metrics crate: those crates keep metrics of their
//! own that the code updates, while Larch's counters already exist (per-thread slots,
//! `crate::monitor`) and are summed into a report at scrape time; rendering that report is
//! a page of string formatting, and the format is a stable, documented text.
//!
//! With `monitor.enabled = false` the families that come from the counters are absent; the
//! store, log, thread and process families remain.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use larch_proto::ResultCode;

use crate::monitor::counters::Totals;
use crate::monitor::kinds::{BindMethod, OpKind};
use crate::monitor::latency::{upper_bound_micros, LATENCY_BUCKETS};
use crate::outcome::CloseReason;
use crate::report::{ServerReport, SERVER_VERSION};

/// The content type of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Renders `report`.
pub fn render(report: &ServerReport) -> String {
    let mut w = Writer::default();
    w.family("larch_build_info", "gauge", "The server's version (value 1).");
    w.sample("larch_build_info", &[("version", SERVER_VERSION)], 1);
    w.family(
        "larch_start_time_seconds",
        "gauge",
        "When the server started, in Unix seconds.",
    );
    w.sample_f("larch_start_time_seconds", &[], unix_seconds(report.started));
    w.family("larch_uptime_seconds", "gauge", "How long the server has run.");
    w.sample_f("larch_uptime_seconds", &[], report.uptime.as_secs_f64());
    if let Some(totals) = &report.totals {
        operations(&mut w, totals);
        results(&mut w, totals);
        latency(&mut w, totals);
        traffic(&mut w, totals);
        connections(&mut w, report, totals);
        binds(&mut w, totals);
    }
    store(&mut w, report);
    logs(&mut w, report);
    threads(&mut w, report);
    process(&mut w, report);
    replication(&mut w, report);
    sync_provider(&mut w, report);
    cluster(&mut w, report);
    w.out
}

/// This node's view of its cluster: its role (1 for the role it has), the term, the
/// leader, how far its log reaches and how far its store has applied it.
fn cluster(w: &mut Writer, report: &ServerReport) {
    use larch_cluster::status::Role;
    let Some(c) = &report.cluster else { return };
    w.family(
        "larch_cluster_role",
        "gauge",
        "This node's role in the cluster (1 for the role it has).",
    );
    for role in [
        Role::Leader,
        Role::Follower,
        Role::Candidate,
        Role::Learner,
        Role::Stopped,
    ] {
        w.sample(
            "larch_cluster_role",
            &[("role", role.name())],
            u64::from(c.role == role),
        );
    }
    let gauges: [(&str, &str, u64); 5] = [
        ("larch_cluster_node_id", "This node's number.", c.node_id),
        (
            "larch_cluster_term",
            "The cluster's current term as this node knows it.",
            c.term,
        ),
        (
            "larch_cluster_leader_id",
            "The node this node knows as the leader (0: none known).",
            c.leader.unwrap_or(0),
        ),
        (
            "larch_cluster_last_log_lsn",
            "The LSN of the last entry in this node's log.",
            c.last_log_lsn,
        ),
        (
            "larch_cluster_applied_lsn",
            "The LSN of the last entry this node's store applied (compare with the leader's).",
            c.applied_lsn,
        ),
    ];
    for (name, help, value) in gauges {
        w.family(name, "gauge", help);
        w.sample(name, &[], value);
    }
    w.family("larch_cluster_voters", "gauge", "Voting members of the cluster.");
    w.sample("larch_cluster_voters", &[], c.voters.len() as u64);
}

/// The `[[replication]]` consumers: entries changed, and which state each is in (1 for
/// its state, 0 for the others, so a query can select on the label).
fn replication(w: &mut Writer, report: &ServerReport) {
    if report.replication.is_empty() {
        return;
    }
    w.family(
        "larch_replication_changes_applied_total",
        "counter",
        "Entries the replication consumer added, replaced, renamed or deleted.",
    );
    for r in &report.replication {
        let rid = r.rid.to_string();
        w.sample(
            "larch_replication_changes_applied_total",
            &[("rid", &rid)],
            r.changes_applied,
        );
    }
    w.family(
        "larch_replication_state",
        "gauge",
        "The replication consumer's state (1 for the state it is in).",
    );
    for r in &report.replication {
        let rid = r.rid.to_string();
        for s in crate::syncrepl::ConsumerState::ALL {
            w.sample(
                "larch_replication_state",
                &[("rid", &rid), ("state", s.name())],
                u64::from(r.state == s),
            );
        }
    }
    w.family(
        "larch_replication_last_error_time_seconds",
        "gauge",
        "When the replication consumer last failed, in Unix seconds (0: never).",
    );
    for r in &report.replication {
        let rid = r.rid.to_string();
        let t = r.last_error.as_ref().map_or(0.0, |(t, _)| unix_seconds(*t));
        w.sample_f("larch_replication_last_error_time_seconds", &[("rid", &rid)], t);
    }
    type Gauge = fn(&crate::syncrepl::StatusView, SystemTime) -> Option<f64>;
    let gauges: [(&str, &str, Gauge); 3] = [
        (
            "larch_replication_lag_seconds",
            "Seconds since the replica last held everything its provider had sent (0 while persisting in \
             step; no sample while unknown).",
            |r, now| r.lag(now).map(|d| d.as_secs_f64()),
        ),
        (
            "larch_replication_last_change_delay_seconds",
            "For the newest change applied while persisting: when it was durable here less the time of its CSN.",
            |r, _| r.last_delay.map(|d| d.as_secs_f64()),
        ),
        (
            "larch_replication_last_csn_time_seconds",
            "The time of the newest CSN the replica stored, in Unix seconds (compare with the provider's \
             larch_syncprov_context_csn_time_seconds).",
            |r, _| {
                r.last_csn
                    .as_deref()
                    .and_then(crate::syncrepl::status::csn_time)
                    .map(unix_seconds)
            },
        ),
    ];
    for (name, help, value) in gauges {
        w.family(name, "gauge", help);
        for r in &report.replication {
            if let Some(v) = value(r, report.now) {
                w.sample_f(name, &[("rid", &r.rid.to_string())], v);
            }
        }
    }
}

/// The synchronization provider: its session log and its consumers' searches.
fn sync_provider(w: &mut Writer, report: &ServerReport) {
    let Some(p) = &report.sync_provider else { return };
    for (name, help, value) in [
        (
            "larch_syncprov_session_log_changes",
            "Changes the synchronization provider's session log holds (for delta refreshes).",
            p.session_log as u64,
        ),
        (
            "larch_syncprov_persistent_searches",
            "Consumers following the directory in refreshAndPersist mode, past their refresh.",
            p.persistent as u64,
        ),
        (
            "larch_syncprov_refreshing_searches",
            "refreshAndPersist searches still in their refresh.",
            p.refreshing as u64,
        ),
    ] {
        w.family(name, "gauge", help);
        w.sample(name, &[], value);
    }
    let newest = p
        .context_csn
        .split(';')
        .filter_map(crate::syncrepl::status::csn_time)
        .max();
    if let Some(t) = newest {
        w.family(
            "larch_syncprov_context_csn_time_seconds",
            "gauge",
            "The time of the newest context CSN (the newest change a consumer can receive), in Unix seconds.",
        );
        w.sample_f("larch_syncprov_context_csn_time_seconds", &[], unix_seconds(t));
    }
    follower_lags(w, p);
}

/// Each refreshAndPersist search: changes sent, and how far behind it is (labels: the
/// connection's number, the cookie's rid, the client's address).
fn follower_lags(w: &mut Writer, p: &crate::syncprov::ProviderStatus) {
    if p.followers.is_empty() {
        return;
    }
    let labels: Vec<[String; 3]> = p
        .followers
        .iter()
        .map(|f| {
            [
                f.who.conn.to_string(),
                f.who.rid.map_or_else(String::new, |r| r.to_string()),
                f.who.peer.map_or_else(String::new, |a| a.to_string()),
            ]
        })
        .collect();
    type Value = fn(&crate::syncprov::FollowerStatus) -> f64;
    let families: [(&str, &str, &str, Value); 3] = [
        (
            "larch_syncprov_consumer_changes_sent_total",
            "counter",
            "Entries a refreshAndPersist search sent since its refresh ended.",
            |f| f.changes_sent as f64,
        ),
        (
            "larch_syncprov_consumer_lag_changes",
            "gauge",
            "Changes committed that a refreshAndPersist search's connection has not yet taken.",
            |f| f.lag.changes as f64,
        ),
        (
            "larch_syncprov_consumer_lag_seconds",
            "gauge",
            "The age of the oldest change a refreshAndPersist search's connection has not yet taken (0: none).",
            |f| f.lag.age.as_secs_f64(),
        ),
    ];
    for (name, kind, help, value) in families {
        w.family(name, kind, help);
        for (f, [conn, rid, peer]) in p.followers.iter().zip(&labels) {
            w.sample_f(name, &[("conn", conn), ("rid", rid), ("peer", peer)], value(f));
        }
    }
}

fn operations(w: &mut Writer, t: &Totals) {
    w.family(
        "larch_operations_initiated_total",
        "counter",
        "Operations started, by kind (cn=Operations,cn=Monitor monitorOpInitiated).",
    );
    for k in OpKind::ALL {
        w.sample(
            "larch_operations_initiated_total",
            &[("op", k.label())],
            t.initiated(k),
        );
    }
    w.family(
        "larch_operations_completed_total",
        "counter",
        "Operations ended, by kind (cn=Operations,cn=Monitor monitorOpCompleted).",
    );
    for k in OpKind::ALL {
        w.sample(
            "larch_operations_completed_total",
            &[("op", k.label())],
            t.completed(k),
        );
    }
}

fn results(w: &mut Writer, t: &Totals) {
    w.family(
        "larch_results_total",
        "counter",
        "Responses by LDAP result code and its RFC 4511 name (code \"other\": every code above \
         123).",
    );
    // Success always has a sample, so the family is never empty and a rate of it exists
    // from the first scrape.
    let success = (Some(0), t.result(0));
    let counted = t.results().filter(|&(code, _)| code != Some(0));
    for (code, n) in std::iter::once(success).chain(counted) {
        let (code, name) = match code {
            Some(c) => (c.to_string(), ResultCode(c).name().unwrap_or("unnamed")),
            None => ("other".to_string(), "other"),
        };
        w.sample("larch_results_total", &[("code", &code), ("result", name)], n);
    }
}

fn latency(w: &mut Writer, t: &Totals) {
    let name = "larch_operation_duration_seconds";
    w.family(
        name,
        "histogram",
        "Time from a request's read to its answer, by kind of operation.",
    );
    for k in OpKind::ALL {
        let (buckets, sum_ns) = t.latency(k);
        let mut cumulative = 0u64;
        for (i, n) in buckets.iter().enumerate().take(LATENCY_BUCKETS) {
            cumulative += n;
            let le = match upper_bound_micros(i) {
                Some(us) => format_seconds(us as f64 / 1e6),
                None => "+Inf".to_string(),
            };
            w.sample(
                &format!("{name}_bucket"),
                &[("op", k.label()), ("le", &le)],
                cumulative,
            );
        }
        w.sample_f(&format!("{name}_sum"), &[("op", k.label())], sum_ns as f64 / 1e9);
        w.sample(&format!("{name}_count"), &[("op", k.label())], cumulative);
    }
}

fn traffic(w: &mut Writer, t: &Totals) {
    let counters: [(&str, &str, u64); 5] = [
        (
            "larch_entries_sent_total",
            "SearchResultEntry messages sent.",
            t.entries(),
        ),
        (
            "larch_references_sent_total",
            "SearchResultReference messages sent.",
            t.references(),
        ),
        (
            "larch_sent_bytes_total",
            "Octets of LDAP messages sent to clients.",
            t.bytes(),
        ),
        (
            "larch_pdus_sent_total",
            "LDAP messages sent to clients.",
            t.pdus(),
        ),
        (
            "larch_undecodable_requests_total",
            "Requests that did not decode (answered with a Notice of Disconnection).",
            t.undecodable(),
        ),
    ];
    for (name, help, v) in counters {
        w.family(name, "counter", help);
        w.sample(name, &[], v);
    }
}

fn connections(w: &mut Writer, report: &ServerReport, t: &Totals) {
    w.family("larch_connections", "gauge", "Connections open now.");
    w.sample("larch_connections", &[], t.current());
    w.family(
        "larch_connections_accepted_total",
        "counter",
        "Connections accepted since the start.",
    );
    w.sample("larch_connections_accepted_total", &[], t.accepted());
    w.family(
        "larch_connections_refused_total",
        "counter",
        "Connections refused at a connection limit.",
    );
    w.sample("larch_connections_refused_total", &[], t.refused());
    w.family(
        "larch_connections_closed_total",
        "counter",
        "Connections closed, by reason (the access log's closure codes).",
    );
    for r in (1..=u8::MAX).map_while(CloseReason::from_u8) {
        w.sample(
            "larch_connections_closed_total",
            &[("reason", r.describe()), ("code", r.code())],
            t.closed_for(r as u8),
        );
    }
    w.family(
        "larch_connection_limit",
        "gauge",
        "The connection limit in force.",
    );
    w.sample("larch_connection_limit", &[], report.connection_limit);
    w.family(
        "larch_tls_handshakes_total",
        "counter",
        "TLS handshakes completed.",
    );
    w.sample("larch_tls_handshakes_total", &[], t.tls());
}

fn binds(w: &mut Writer, t: &Totals) {
    w.family("larch_binds_total", "counter", "Binds by method and result.");
    for m in BindMethod::ALL {
        for (ok, result) in [(true, "success"), (false, "failure")] {
            w.sample(
                "larch_binds_total",
                &[("method", m.label()), ("result", result)],
                t.binds(m, ok),
            );
        }
    }
}

fn store(w: &mut Writer, report: &ServerReport) {
    let s = &report.store;
    let gauges: [(&str, &str, u64); 4] = [
        ("larch_store_entries", "Entries in the directory.", s.entries),
        (
            "larch_store_lsn",
            "The log sequence number of the last change published.",
            s.lsn,
        ),
        (
            "larch_store_records_since_snapshot",
            "Log records since the newest snapshot (what a start would replay).",
            s.records_since_snapshot,
        ),
        (
            "larch_store_writable",
            "1 while writes are accepted, 0 after a failed log write.",
            u64::from(s.writable),
        ),
    ];
    for (name, help, v) in gauges {
        w.family(name, "gauge", help);
        w.sample(name, &[], v);
    }
    let counters: [(&str, &str, u64); 4] = [
        (
            "larch_store_commit_batches_total",
            "Batches committed (one log wait each).",
            s.stats.batches,
        ),
        (
            "larch_store_commit_jobs_total",
            "Write jobs committed.",
            s.stats.jobs,
        ),
        (
            "larch_store_commit_records_total",
            "Log records written.",
            s.stats.records,
        ),
        (
            "larch_store_snapshots_total",
            "Snapshots written since the start.",
            s.stats.snapshots,
        ),
    ];
    for (name, help, v) in counters {
        w.family(name, "counter", help);
        w.sample(name, &[], v);
    }
    w.family(
        "larch_store_commit_seconds_total",
        "counter",
        "Time from handing batches to the log to their durability, summed.",
    );
    w.sample_f(
        "larch_store_commit_seconds_total",
        &[],
        s.stats.commit_time.as_secs_f64(),
    );
    w.family(
        "larch_store_commit_max_seconds",
        "gauge",
        "The longest time to durability of one batch.",
    );
    w.sample_f(
        "larch_store_commit_max_seconds",
        &[],
        s.stats.commit_max.as_secs_f64(),
    );
    w.family(
        "larch_store_largest_batch_jobs",
        "gauge",
        "The most jobs one batch held.",
    );
    w.sample("larch_store_largest_batch_jobs", &[], s.stats.largest_batch);
    w.family(
        "larch_store_snapshot_failures",
        "gauge",
        "Snapshots failed in a row (0 after a success).",
    );
    w.sample(
        "larch_store_snapshot_failures",
        &[],
        u64::from(s.snapshot_failures),
    );
    if let Some(snap) = s.stats.last_snapshot {
        w.family(
            "larch_store_last_snapshot_timestamp_seconds",
            "gauge",
            "When the newest snapshot was complete, in Unix seconds.",
        );
        w.sample_f(
            "larch_store_last_snapshot_timestamp_seconds",
            &[],
            unix_seconds(snap.finished),
        );
        w.family(
            "larch_store_last_snapshot_duration_seconds",
            "gauge",
            "How long writing the newest snapshot took.",
        );
        w.sample_f(
            "larch_store_last_snapshot_duration_seconds",
            &[],
            snap.duration.as_secs_f64(),
        );
        w.family(
            "larch_store_last_snapshot_bytes",
            "gauge",
            "The newest snapshot's size.",
        );
        w.sample("larch_store_last_snapshot_bytes", &[], snap.bytes);
        w.family(
            "larch_store_last_snapshot_lsn",
            "gauge",
            "The LSN the newest snapshot covers.",
        );
        w.sample("larch_store_last_snapshot_lsn", &[], snap.lsn);
    }
    w.family(
        "larch_index_keys",
        "gauge",
        "Keys held by each index, by attribute and kind.",
    );
    for (attr, k) in &s.indexes {
        for (kind, n) in [
            ("equality", k.equality),
            ("presence", k.presence),
            ("substring", k.substring),
            ("ordering", k.ordering),
        ] {
            w.sample(
                "larch_index_keys",
                &[("attribute", attr), ("kind", kind)],
                n as u64,
            );
        }
    }
}

fn logs(w: &mut Writer, report: &ServerReport) {
    if let Some(a) = &report.access_log {
        let rows: [(&str, &str, u64); 4] = [
            (
                "larch_access_log_lines_written_total",
                "Access log lines written.",
                a.lines_written,
            ),
            (
                "larch_access_log_records_dropped_total",
                "Access log records dropped because a buffer was full.",
                a.records_dropped,
            ),
            (
                "larch_access_log_lines_lost_total",
                "Access log lines lost to failed writes.",
                a.lines_lost,
            ),
            (
                "larch_access_log_write_errors_total",
                "Failed writes to the access log.",
                a.write_errors,
            ),
        ];
        for (name, help, v) in rows {
            w.family(name, "counter", help);
            w.sample(name, &[], v);
        }
    }
    if let Some(a) = &report.audit_log {
        let rows: [(&str, &str, u64); 4] = [
            (
                "larch_audit_log_records_written_total",
                "Committed changes written to the audit log.",
                a.records_written,
            ),
            (
                "larch_audit_log_changes_skipped_total",
                "Committed changes the audit log could not get from the change feed.",
                a.changes_skipped,
            ),
            (
                "larch_audit_log_records_lost_total",
                "Audit log records lost to failed writes.",
                a.records_lost,
            ),
            (
                "larch_audit_log_write_errors_total",
                "Failed writes to the audit log.",
                a.write_errors,
            ),
        ];
        for (name, help, v) in rows {
            w.family(name, "counter", help);
            w.sample(name, &[], v);
        }
    }
    w.family(
        "larch_bind_throttle_tracked",
        "gauge",
        "Failed-bind counts the throttle remembers (pairs, accounts, addresses).",
    );
    w.sample("larch_bind_throttle_tracked", &[], report.throttle_tracked as u64);
    w.family(
        "larch_output_buffered_bytes",
        "gauge",
        "Response octets waiting for clients to read them.",
    );
    w.sample("larch_output_buffered_bytes", &[], report.output_buffered as u64);
}

fn threads(w: &mut Writer, report: &ServerReport) {
    let t = &report.threads;
    w.family(
        "larch_threads",
        "gauge",
        "Threads by pool (blocking: the most the pool may have).",
    );
    for (pool, n) in [
        ("workers", t.workers),
        ("search", t.search_threads),
        ("blocking_max", t.blocking_max),
    ] {
        w.sample("larch_threads", &[("pool", pool)], n as u64);
    }
    w.family(
        "larch_searches_waiting",
        "gauge",
        "Large searches waiting for a search thread.",
    );
    w.sample("larch_searches_waiting", &[], t.search_queued as u64);
}

fn process(w: &mut Writer, report: &ServerReport) {
    if let Some(n) = report.threads.process {
        w.family("larch_process_threads", "gauge", "Threads of the process.");
        w.sample("larch_process_threads", &[], n);
    }
    if let Some(n) = report.resident_bytes {
        w.family(
            "larch_process_resident_memory_bytes",
            "gauge",
            "Resident memory of the process.",
        );
        w.sample("larch_process_resident_memory_bytes", &[], n);
    }
    if let Some(n) = report.open_files {
        w.family(
            "larch_process_open_fds",
            "gauge",
            "Open file descriptors of the process.",
        );
        w.sample("larch_process_open_fds", &[], n);
    }
}

fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// A bucket bound in seconds, as short as it is exact (`0.000001`, `0.004096`, `4.194304`).
fn format_seconds(s: f64) -> String {
    let text = format!("{s:.6}");
    let text = text.trim_end_matches('0');
    text.strip_suffix('.').unwrap_or(text).to_string()
}

/// The text being written.
#[derive(Default)]
struct Writer {
    out: String,
}

impl Writer {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    fn labels(&mut self, labels: &[(&str, &str)]) {
        if labels.is_empty() {
            return;
        }
        self.out.push('{');
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.out.push_str(k);
            self.out.push_str("=\"");
            escape_label(&mut self.out, v);
            self.out.push('"');
        }
        self.out.push('}');
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: u64) {
        self.out.push_str(name);
        self.labels(labels);
        let _ = writeln!(self.out, " {value}");
    }

    fn sample_f(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        self.labels(labels);
        let _ = writeln!(self.out, " {value}");
    }
}

/// A label value: backslash, double quote and line feed escaped.
fn escape_label(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A HELP text: backslash and line feed escaped.
fn escape_help(h: &str) -> String {
    h.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::time::Duration;

    use larch_store::index::IndexKeyCounts;
    use larch_store::stats::SnapshotRecord;
    use larch_store::StoreStatsView;

    use super::*;
    use crate::accesslog::AccessLogStats;
    use crate::auditlog::AuditLogStats;
    use crate::monitor::counters::Counters;
    use crate::report::{StoreReport, ThreadReport};

    /// A report with every optional part present, `totals` as given, and an indexed
    /// attribute whose name needs escaping.
    fn report(totals: Option<Totals>) -> ServerReport {
        let started = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        ServerReport {
            started,
            now: started + Duration::from_secs(90),
            uptime: Duration::from_secs(90),
            totals,
            connections: None,
            connection_limit: 1000,
            threads: ThreadReport {
                workers: 2,
                search_threads: 2,
                search_queued: 1,
                blocking_max: 8,
                process: Some(9),
            },
            store: StoreReport {
                entries: 3,
                lsn: 7,
                records_since_snapshot: 2,
                stats: StoreStatsView {
                    batches: 4,
                    jobs: 5,
                    records: 7,
                    commit_time: Duration::from_millis(3),
                    commit_max: Duration::from_millis(2),
                    largest_batch: 2,
                    proposed_ahead: 0,
                    snapshots: 1,
                    last_snapshot: Some(SnapshotRecord {
                        lsn: 5,
                        bytes: 4096,
                        entries: 3,
                        finished: started + Duration::from_secs(60),
                        duration: Duration::from_millis(15),
                        loaded: false,
                    }),
                },
                writable: true,
                write_halt: None,
                snapshot_failures: 0,
                indexes: vec![
                    (
                        "cn".into(),
                        IndexKeyCounts {
                            equality: 3,
                            ..IndexKeyCounts::default()
                        },
                    ),
                    ("we\"ird\\name\n".into(), IndexKeyCounts::default()),
                ],
                suffixes: vec!["dc=example,dc=com".into()],
            },
            access_log: Some(AccessLogStats::default()),
            audit_log: Some(AuditLogStats::default()),
            throttle_tracked: 0,
            output_buffered: 0,
            resident_bytes: Some(1 << 20),
            open_files: Some(12),
            replication: Vec::new(),
            sync_provider: None,
            cluster: Some(larch_cluster::status::Status {
                node_id: 2,
                role: larch_cluster::status::Role::Follower,
                term: 7,
                leader: Some(1),
                last_log_lsn: 812,
                applied_lsn: 810,
                voters: vec![1, 2, 3],
                members: [(1, "127.0.0.1:7001"), (2, "127.0.0.1:7002")]
                    .into_iter()
                    .map(|(id, raft)| larch_cluster::status::MemberStatus {
                        id,
                        raft: raft.into(),
                        ldap_url: Some(format!("ldap://127.0.0.{id}/")),
                    })
                    .collect(),
            }),
        }
    }

    /// A sample: its name, its labels in order, its value.
    type Sample = (String, Vec<(String, String)>, f64);

    /// One family of an exposition.
    #[derive(Debug, Default)]
    struct Family {
        kind: String,
        help: bool,
        samples: Vec<Sample>,
    }

    /// The families of `text`, checked against the format as they are read: every family
    /// named `larch_...` once, `# HELP` then `# TYPE` before its samples, its samples
    /// together and named after it, label values with only the three escapes, values that
    /// parse, one line feed after every line.
    fn parse(text: &str) -> BTreeMap<String, Family> {
        assert!(text.ends_with('\n'));
        let mut families: BTreeMap<String, Family> = BTreeMap::new();
        let mut current: Option<String> = None;
        let mut pending_help: Option<String> = None;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').unwrap();
                assert!(!help.is_empty(), "{line}");
                assert!(!families.contains_key(name), "{name} declared twice");
                pending_help = Some(name.to_string());
                current = None;
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                assert_eq!(pending_help.take().as_deref(), Some(name), "HELP before TYPE");
                assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
                assert!(name.starts_with("larch_"), "{name}");
                assert!(
                    name.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':'),
                    "{name}"
                );
                if kind == "counter" {
                    assert!(name.ends_with("_total"), "counter {name}");
                }
                families.insert(
                    name.to_string(),
                    Family {
                        kind: kind.to_string(),
                        help: true,
                        samples: Vec::new(),
                    },
                );
                current = Some(name.to_string());
            } else {
                assert!(!line.starts_with('#'), "{line}");
                let family = current.as_ref().expect("a sample after its TYPE");
                let (name, labels, value) = sample(line);
                let f = families.get_mut(family).unwrap();
                let allowed: Vec<String> = if f.kind == "histogram" {
                    ["_bucket", "_sum", "_count"]
                        .iter()
                        .map(|s| format!("{family}{s}"))
                        .collect()
                } else {
                    vec![family.clone()]
                };
                assert!(allowed.contains(&name), "{name} under {family}");
                f.samples.push((name, labels, value));
            }
        }
        assert!(pending_help.is_none(), "a HELP without a TYPE");
        families
    }

    /// `name{k="v",...} value`.
    fn sample(line: &str) -> Sample {
        let (head, value) = line.rsplit_once(' ').unwrap();
        let value = match value {
            "+Inf" => f64::INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("value of {line}")),
        };
        let Some((name, rest)) = head.split_once('{') else {
            return (head.to_string(), Vec::new(), value);
        };
        let body = rest.strip_suffix('}').expect(line);
        let mut labels = Vec::new();
        let mut chars = body.chars().peekable();
        while chars.peek().is_some() {
            let key: String = chars.by_ref().take_while(|&c| c != '=').collect();
            assert_eq!(chars.next(), Some('"'), "{line}");
            let mut v = String::new();
            loop {
                match chars.next().expect(line) {
                    '"' => break,
                    '\\' => match chars.next() {
                        Some('\\') => v.push('\\'),
                        Some('"') => v.push('"'),
                        Some('n') => v.push('\n'),
                        other => panic!("escape {other:?} in {line}"),
                    },
                    '\n' => panic!("raw line feed in {line}"),
                    c => v.push(c),
                }
            }
            labels.push((key, v));
            if chars.peek() == Some(&',') {
                chars.next();
            }
        }
        (name.to_string(), labels, value)
    }

    fn label<'a>(labels: &'a [(String, String)], key: &str) -> Option<&'a str> {
        labels.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    #[test]
    fn label_values_and_help_are_escaped() {
        let mut s = String::new();
        escape_label(&mut s, "a\"b\\c\nd");
        assert_eq!(s, "a\\\"b\\\\c\\nd");
        assert_eq!(escape_help("x\\y\nz"), "x\\\\y\\nz");
        // Through a whole rendering: the attribute name comes back as it was.
        let families = parse(&render(&report(Some(Counters::new().totals()))));
        let attrs: BTreeSet<&str> = families["larch_index_keys"]
            .samples
            .iter()
            .filter_map(|(_, l, _)| label(l, "attribute"))
            .collect();
        assert_eq!(attrs, BTreeSet::from(["cn", "we\"ird\\name\n"]));
    }

    #[test]
    fn bucket_bounds_are_exact_decimal_seconds() {
        assert_eq!(format_seconds(1e-6), "0.000001");
        assert_eq!(format_seconds(4096e-6), "0.004096");
        assert_eq!(format_seconds(4.194304), "4.194304");
        assert_eq!(format_seconds(1.0), "1");
    }

    #[test]
    fn every_family_has_help_and_type_and_the_listed_families_are_there() {
        let text = render(&report(Some(Counters::new().totals())));
        let families = parse(&text);
        for (name, f) in &families {
            assert!(f.help, "{name}");
            assert!(!f.samples.is_empty(), "{name} has no sample");
        }
        for name in [
            "larch_build_info",
            "larch_start_time_seconds",
            "larch_uptime_seconds",
            "larch_operations_initiated_total",
            "larch_operations_completed_total",
            "larch_results_total",
            "larch_operation_duration_seconds",
            "larch_entries_sent_total",
            "larch_references_sent_total",
            "larch_sent_bytes_total",
            "larch_pdus_sent_total",
            "larch_undecodable_requests_total",
            "larch_connections",
            "larch_connections_accepted_total",
            "larch_connections_refused_total",
            "larch_connections_closed_total",
            "larch_connection_limit",
            "larch_tls_handshakes_total",
            "larch_binds_total",
            "larch_store_entries",
            "larch_store_lsn",
            "larch_store_records_since_snapshot",
            "larch_store_writable",
            "larch_store_commit_batches_total",
            "larch_store_commit_jobs_total",
            "larch_store_commit_records_total",
            "larch_store_commit_seconds_total",
            "larch_store_commit_max_seconds",
            "larch_store_largest_batch_jobs",
            "larch_store_snapshots_total",
            "larch_store_snapshot_failures",
            "larch_store_last_snapshot_timestamp_seconds",
            "larch_store_last_snapshot_duration_seconds",
            "larch_store_last_snapshot_bytes",
            "larch_index_keys",
            "larch_access_log_lines_written_total",
            "larch_access_log_records_dropped_total",
            "larch_access_log_lines_lost_total",
            "larch_access_log_write_errors_total",
            "larch_audit_log_records_written_total",
            "larch_audit_log_changes_skipped_total",
            "larch_audit_log_records_lost_total",
            "larch_bind_throttle_tracked",
            "larch_output_buffered_bytes",
            "larch_threads",
            "larch_searches_waiting",
            "larch_process_threads",
            "larch_process_resident_memory_bytes",
            "larch_process_open_fds",
            "larch_cluster_role",
            "larch_cluster_node_id",
            "larch_cluster_term",
            "larch_cluster_leader_id",
            "larch_cluster_last_log_lsn",
            "larch_cluster_applied_lsn",
            "larch_cluster_voters",
        ] {
            assert!(families.contains_key(name), "{name} missing");
        }
        let build = &families["larch_build_info"].samples[0];
        assert_eq!(label(&build.1, "version"), Some(SERVER_VERSION));
        assert_eq!(build.2, 1.0);
        assert_eq!(families["larch_start_time_seconds"].samples[0].2, 1_700_000_000.0);
        // Every kind of operation, every closure reason, both bind results.
        let ops: BTreeSet<&str> = families["larch_operations_completed_total"]
            .samples
            .iter()
            .filter_map(|(_, l, _)| label(l, "op"))
            .collect();
        assert_eq!(ops.len(), OpKind::ALL.len());
        let reasons = families["larch_connections_closed_total"].samples.len();
        assert_eq!(reasons, (1..=u8::MAX).map_while(CloseReason::from_u8).count());
        assert!(reasons > 0);
        // One role is 1, the others 0.
        let roles: Vec<(Option<&str>, f64)> = families["larch_cluster_role"]
            .samples
            .iter()
            .map(|(_, l, v)| (label(l, "role"), *v))
            .collect();
        assert_eq!(roles.iter().filter(|(_, v)| *v == 1.0).count(), 1);
        assert!(roles.contains(&(Some("follower"), 1.0)), "{roles:?}");
        assert_eq!(families["larch_cluster_applied_lsn"].samples[0].2, 810.0);
    }

    #[test]
    fn latency_buckets_are_cumulative_with_the_sum_in_seconds() {
        let counters = Counters::new();
        counters.count(|t| {
            t.completed(OpKind::Search, 500); // 1 µs
            t.completed(OpKind::Search, 1_000); // 1 µs
            t.completed(OpKind::Search, 3_000); // 4 µs
            t.completed(OpKind::Search, 1_500_000); // 2,048 µs
            t.completed(OpKind::Search, 10_000_000_000); // over 4.2 s: +Inf only
            t.completed(OpKind::Compare, 2_000);
            t.result(49);
            t.result(49);
            t.result(4096);
        });
        let families = parse(&render(&report(Some(counters.totals()))));
        let h = &families["larch_operation_duration_seconds"];
        assert_eq!(h.kind, "histogram");
        let search: Vec<_> = h
            .samples
            .iter()
            .filter(|(_, l, _)| label(l, "op") == Some("search"))
            .collect();
        let buckets: Vec<(f64, f64)> = search
            .iter()
            .filter(|(n, _, _)| n.ends_with("_bucket"))
            .map(|(_, l, v)| {
                let le = label(l, "le").unwrap();
                let le = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                };
                (le, *v)
            })
            .collect();
        assert_eq!(buckets.len(), LATENCY_BUCKETS);
        assert!(buckets.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        assert_eq!(buckets.last().unwrap().0, f64::INFINITY);
        let at = |le: f64| buckets.iter().find(|b| b.0 == le).unwrap().1;
        assert_eq!(at(0.000001), 2.0);
        assert_eq!(at(0.000002), 2.0);
        assert_eq!(at(0.000004), 3.0);
        assert_eq!(at(0.001024), 3.0);
        assert_eq!(at(0.002048), 4.0);
        assert_eq!(at(4.194304), 4.0);
        assert_eq!(at(f64::INFINITY), 5.0);
        let one = |suffix: &str| search.iter().find(|(n, _, _)| n.ends_with(suffix)).unwrap().2;
        assert_eq!(one("_count"), 5.0);
        let sum = (500 + 1_000 + 3_000 + 1_500_000 + 10_000_000_000u64) as f64 / 1e9;
        assert!((one("_sum") - sum).abs() < 1e-9, "{}", one("_sum"));
        // Results by code and name; success is there though none was counted.
        let results: BTreeMap<(&str, &str), f64> = families["larch_results_total"]
            .samples
            .iter()
            .map(|(_, l, v)| ((label(l, "code").unwrap(), label(l, "result").unwrap()), *v))
            .collect();
        assert_eq!(
            results,
            BTreeMap::from([
                (("0", "success"), 0.0),
                (("49", "invalidCredentials"), 2.0),
                (("other", "other"), 1.0),
            ])
        );
    }

    #[test]
    fn without_counters_only_the_store_log_thread_and_process_families_remain() {
        let families = parse(&render(&report(None)));
        for gone in [
            "larch_operations_initiated_total",
            "larch_operations_completed_total",
            "larch_results_total",
            "larch_operation_duration_seconds",
            "larch_sent_bytes_total",
            "larch_connections",
            "larch_connections_accepted_total",
            "larch_binds_total",
        ] {
            assert!(!families.contains_key(gone), "{gone}");
        }
        for kept in [
            "larch_build_info",
            "larch_start_time_seconds",
            "larch_uptime_seconds",
            "larch_store_entries",
            "larch_store_commit_batches_total",
            "larch_index_keys",
            "larch_access_log_lines_written_total",
            "larch_threads",
            "larch_process_resident_memory_bytes",
            "larch_process_open_fds",
        ] {
            assert!(families.contains_key(kept), "{kept}");
        }
    }
}
