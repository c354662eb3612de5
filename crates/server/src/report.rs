//! Everything monitoring reports, gathered at one moment from the places that keep it: the
//! counters and open connections ([`crate::monitor`]), the store (entries, LSN, commits,
//! snapshots, health, index sizes), the logs, the bind throttle, the threads and the
//! process. `cn=Monitor` ([`crate::dse::monitor`]) and the Prometheus endpoint render the
//! same [`ServerReport`], so they never disagree on a figure.
//!
//! Gathering costs a sum over the counter slots, a lock per connection-table shard (only
//! when the connections are asked for), and two small reads of `/proc/self`: well under a
//! millisecond with thousands of connections open. Nothing here walks the entries.

use std::time::{Duration, SystemTime};

use larch_store::index::IndexKeyCounts;
use larch_store::wal::Lsn;
use larch_store::StoreStatsView;

use crate::accesslog::AccessLogStats;
use crate::auditlog::AuditLogStats;
use crate::directory::Directory;
use crate::monitor::connections::ConnectionView;
use crate::monitor::counters::Totals;

/// The server's version, as `larch --version` prints it.
pub const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the server reports about itself at one moment.
#[derive(Debug, Clone)]
pub struct ServerReport {
    /// When the server started.
    pub started: SystemTime,
    /// When this report was gathered.
    pub now: SystemTime,
    /// How long the server has run.
    pub uptime: Duration,
    /// The counters (`None` with `monitor.enabled = false`).
    pub totals: Option<Totals>,
    /// The open connections, when asked for.
    pub connections: Option<Vec<ConnectionView>>,
    /// The connection limit in force.
    pub connection_limit: u64,
    /// The threads.
    pub threads: ThreadReport,
    /// The store.
    pub store: StoreReport,
    /// The access log's figures, when it is on.
    pub access_log: Option<AccessLogStats>,
    /// The audit log's figures, when it is on.
    pub audit_log: Option<AuditLogStats>,
    /// Failure counts the bind throttle remembers (pairs, accounts, addresses).
    pub throttle_tracked: usize,
    /// Response octets waiting for clients, server-wide.
    pub output_buffered: usize,
    /// The process's resident memory in octets (Linux; `None` elsewhere).
    pub resident_bytes: Option<u64>,
    /// Open file descriptors of the process (Linux; `None` elsewhere).
    pub open_files: Option<u64>,
    /// The `[[replication]]` consumers' status (empty when this server is not a replica).
    pub replication: Vec<crate::syncrepl::StatusView>,
    /// The synchronization provider's status (`None` with `sync_provider.enabled = false`).
    pub sync_provider: Option<crate::syncprov::ProviderStatus>,
    /// This node's view of its cluster (`None`: not a cluster node, or not started yet).
    pub cluster: Option<larch_cluster::status::Status>,
}

/// The threads the server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadReport {
    /// The runtime's worker threads (connections, small searches, binds).
    pub workers: usize,
    /// The threads large searches run on.
    pub search_threads: usize,
    /// Large searches waiting for a search thread.
    pub search_queued: usize,
    /// The most threads the blocking pool may have (slow password checks).
    pub blocking_max: usize,
    /// Threads of the whole process (Linux; `None` elsewhere).
    pub process: Option<u64>,
}

/// The store's figures.
#[derive(Debug, Clone)]
pub struct StoreReport {
    /// Entries.
    pub entries: u64,
    /// The LSN of the current version (the last change published).
    pub lsn: Lsn,
    /// Log records since the newest snapshot (what a start would replay).
    pub records_since_snapshot: u64,
    /// Commits and snapshots.
    pub stats: StoreStatsView,
    /// Writes are accepted (false after a failed log write, until a restart).
    pub writable: bool,
    /// Why writes stopped, when they did.
    pub write_halt: Option<String>,
    /// Snapshots failed in a row (0 after a success).
    pub snapshot_failures: u32,
    /// Keys per indexed attribute, by attribute name.
    pub indexes: Vec<(String, IndexKeyCounts)>,
    /// The naming contexts.
    pub suffixes: Vec<String>,
}

impl ServerReport {
    /// Gathers the report from `dir`; `with_connections` adds the open connections.
    pub fn gather(dir: &Directory, with_connections: bool) -> ServerReport {
        let monitor = dir.monitor.as_deref();
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let (started, uptime) = match monitor {
            Some(m) => (m.started, m.started_at.elapsed()),
            None => (dir.started, dir.started_at.elapsed()),
        };
        ServerReport {
            started,
            now: SystemTime::now(),
            uptime,
            totals: monitor.map(|m| m.totals()),
            connections: monitor
                .filter(|_| with_connections)
                .map(|m| m.connections.views()),
            connection_limit: monitor.map_or(0, |m| m.connection_limit()),
            threads: ThreadReport {
                // The runtime has as many workers as there are search threads (both are
                // `workers::threads_for` of `server.worker_threads`).
                workers: dir.search_workers.threads(),
                search_threads: dir.search_workers.threads(),
                search_queued: dir.search_workers.queued(),
                blocking_max: crate::password::gate::blocking_threads(),
                process: status_field(&status, "Threads:"),
            },
            store: store_report(dir),
            access_log: dir.access_log.as_ref().map(|l| l.stats()),
            audit_log: dir.audit_log.as_ref().map(|l| l.stats()),
            throttle_tracked: dir.bind_throttle.tracked(std::time::Instant::now()),
            output_buffered: dir.output_budget.used(),
            resident_bytes: status_field(&status, "VmRSS:").map(|kib| kib * 1024),
            open_files: open_files(),
            replication: dir.replication.views(),
            sync_provider: dir.sync_provider.as_ref().map(|p| p.status()),
            cluster: dir.cluster.get().map(|n| n.status()),
        }
    }
}

fn store_report(dir: &Directory) -> StoreReport {
    let v = dir.store.current();
    let stats = dir.store.stats();
    let health = dir.store.health();
    let since = stats
        .last_snapshot
        .map_or(v.lsn(), |s| v.lsn().saturating_sub(s.lsn));
    let schema = v.schema();
    let indexes = v
        .indexes()
        .map(|(ty, index)| {
            let name = schema
                .attribute_type_by_id(ty)
                .map_or_else(|| format!("{ty:?}"), |t| t.name().to_string());
            (name, index.key_counts())
        })
        .collect();
    StoreReport {
        entries: v.len() as u64,
        lsn: v.lsn(),
        records_since_snapshot: since,
        stats,
        writable: health.writable(),
        write_halt: health.write_halt.as_ref().map(|h| h.to_string()),
        snapshot_failures: health.snapshot_failures,
        indexes,
        suffixes: dir.config.suffixes().map(str::to_string).collect(),
    }
}

/// A number field of `/proc/self/status`'s text (`Threads:`, `VmRSS:` in KiB); `None`
/// where the file is missing (not Linux).
fn status_field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// Open file descriptors: since Linux 6.2 the size `stat` gives for `/proc/self/fd` is
/// their number, at the cost of one system call; older kernels say 0 there, and the
/// directory is listed (with a thousand sockets open, listing is most of a cn=Monitor read's
/// kernel time).
fn open_files() -> Option<u64> {
    const PROC_FD: &str = "/proc/self/fd";
    match std::fs::metadata(PROC_FD) {
        Ok(m) if m.len() > 0 => Some(m.len()),
        _ => std::fs::read_dir(PROC_FD).ok().map(|d| d.count() as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::open_files;

    #[test]
    fn open_files_counts_the_descriptors_the_process_holds() {
        let before = open_files().expect("/proc/self/fd is readable");
        let held: Vec<std::fs::File> = (0..5)
            .map(|_| std::fs::File::open("/proc/self/status").unwrap())
            .collect();
        let during = open_files().unwrap();
        drop(held);
        // Other test threads may open or close a file meanwhile; five more is the signal.
        assert!(before > 0);
        assert!(
            during >= before + 3 && during <= before + 7,
            "{before} then {during}"
        );
    }
}
