//! Measurements and the final report: per-kind latency histograms (HDR, nanoseconds, 3
//! significant digits), result codes, client-side errors, CPU use, the transport (plain,
//! ldaps, StartTLS) with what TLS negotiated and how many handshakes were full or resumed;
//! text and JSON output.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;
use larch_proto::ResultCode;
use serde::Serialize;

use crate::cpu::{CpuTimes, MachineTimes};
use crate::tls::Transport;

/// Highest latency a histogram holds (longer ones are recorded as this): one hour.
pub const MAX_LATENCY_NS: u64 = 3_600 * 1_000_000_000;

/// The kinds of operation the client measures separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    /// A search (one request, its entries, its done message).
    Search,
    /// Search by uid, then bind as the DN found (one operation, two round trips).
    Auth,
    /// A modify.
    Modify,
    /// An add.
    Add,
    /// A delete.
    Delete,
}

impl OpKind {
    /// Every kind, in report order.
    pub const ALL: [OpKind; 5] = [
        OpKind::Search,
        OpKind::Auth,
        OpKind::Modify,
        OpKind::Add,
        OpKind::Delete,
    ];

    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Search => "search",
            OpKind::Auth => "auth",
            OpKind::Modify => "modify",
            OpKind::Add => "add",
            OpKind::Delete => "delete",
        }
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid histogram bounds")
}

/// What one kind of operation did.
#[derive(Debug, Clone)]
pub struct KindStats {
    /// Latency of every completed operation, in nanoseconds.
    pub latency_ns: Histogram<u64>,
    /// Operations that completed with `success`.
    pub ok: u64,
    /// Operations that completed with another result code, by code.
    pub codes: BTreeMap<u32, u64>,
    /// Search entries received (searches and the search step of auth).
    pub entries: u64,
}

impl KindStats {
    fn new() -> Self {
        KindStats {
            latency_ns: new_histogram(),
            ok: 0,
            codes: BTreeMap::new(),
            entries: 0,
        }
    }

    /// Completed operations (any result code).
    pub fn completed(&self) -> u64 {
        self.latency_ns.len()
    }
}

/// The measurements of one client thread (or, merged, of the run).
#[derive(Debug, Clone, Default)]
pub struct Stats {
    kinds: [Option<Box<KindStats>>; 5],
    /// Failures that are not LDAP results (connection closed, undecodable response,
    /// operation still pending at the drain deadline, ...), by description.
    pub client_errors: BTreeMap<String, u64>,
    /// TLS handshakes of operations started in the measured window (the auth workload's
    /// connection per operation).
    pub handshakes: HandshakeCounts,
    /// The other TLS handshakes: the set-up probe, long-lived connections, the warm-up.
    pub other_handshakes: HandshakeCounts,
}

/// TLS handshakes by kind (rustls' `HandshakeKind`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct HandshakeCounts {
    /// Full handshakes.
    pub full: u64,
    /// Resumed from a cached session (a TLS 1.3 ticket, a TLS 1.2 session ID or ticket).
    pub resumed: u64,
    /// Full handshakes that needed a HelloRetryRequest (an extra round trip).
    pub full_hello_retry: u64,
}

impl HandshakeCounts {
    /// All handshakes.
    pub fn total(&self) -> u64 {
        self.full + self.resumed + self.full_hello_retry
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &HandshakeCounts) {
        self.full += other.full;
        self.resumed += other.resumed;
        self.full_hello_retry += other.full_hello_retry;
    }

    fn describe(&self) -> String {
        format!(
            "{} ({} resumed, {} full, {} full after HelloRetryRequest)",
            group(self.total()),
            group(self.resumed),
            group(self.full),
            group(self.full_hello_retry)
        )
    }
}

/// What TLS negotiated on the run's first connection, and how it was set up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TlsSession {
    /// `TLS 1.2` or `TLS 1.3`.
    pub version: String,
    /// The cipher suite, as the IANA registry names it.
    pub cipher_suite: String,
    /// The key exchange group (e.g. `X25519MLKEM768`, `X25519`).
    pub key_exchange: String,
    /// The name the certificate was checked against (and sent as SNI when a DNS name).
    pub server_name: String,
    /// False with `--tls-insecure`: the server's certificate was not verified.
    pub verified: bool,
    /// Whether the client kept a session cache (`--no-tls-resumption` turns it off).
    pub resumption: bool,
    /// Whether a client certificate was presented.
    pub client_certificate: bool,
}

/// The TLS part of a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TlsReport {
    /// What was negotiated.
    #[serde(flatten)]
    pub session: TlsSession,
    /// Handshakes of operations started in the measured window.
    pub handshakes: HandshakeCounts,
    /// Handshakes of the set-up (probe, long-lived connections) and the warm-up.
    pub other_handshakes: HandshakeCounts,
}

impl Stats {
    /// Empty statistics.
    pub fn new() -> Self {
        Self::default()
    }

    fn slot(&mut self, kind: OpKind) -> &mut KindStats {
        self.kinds[kind as usize].get_or_insert_with(|| Box::new(KindStats::new()))
    }

    /// Records one completed operation.
    pub fn record(&mut self, kind: OpKind, latency: Duration, code: ResultCode, entries: u64) {
        let s = self.slot(kind);
        let ns = u64::try_from(latency.as_nanos())
            .unwrap_or(u64::MAX)
            .clamp(1, MAX_LATENCY_NS);
        s.latency_ns.saturating_record(ns);
        s.entries += entries;
        if code == ResultCode::SUCCESS {
            s.ok += 1;
        } else {
            *s.codes.entry(code.0).or_default() += 1;
        }
    }

    /// Records a failure that is not an LDAP result.
    pub fn client_error(&mut self, what: &str, count: u64) {
        if count > 0 {
            *self.client_errors.entry(what.to_string()).or_default() += count;
        }
    }

    /// The statistics of one kind, if any operation of it completed or was started.
    pub fn kind(&self, kind: OpKind) -> Option<&KindStats> {
        self.kinds[kind as usize].as_deref()
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &Stats) {
        for kind in OpKind::ALL {
            if let Some(o) = other.kind(kind) {
                let s = self.slot(kind);
                s.latency_ns.add(&o.latency_ns).expect("same histogram bounds");
                s.ok += o.ok;
                s.entries += o.entries;
                for (code, n) in &o.codes {
                    *s.codes.entry(*code).or_default() += n;
                }
            }
        }
        for (what, n) in &other.client_errors {
            *self.client_errors.entry(what.clone()).or_default() += n;
        }
        self.handshakes.merge(&other.handshakes);
        self.other_handshakes.merge(&other.other_handshakes);
    }

    /// All kinds' latencies in one histogram.
    pub fn total_latency(&self) -> Histogram<u64> {
        let mut h = new_histogram();
        for s in self.kinds.iter().flatten() {
            h.add(&s.latency_ns).expect("same histogram bounds");
        }
        h
    }

    /// Completed operations of every kind.
    pub fn completed(&self) -> u64 {
        self.kinds.iter().flatten().map(|s| s.completed()).sum()
    }
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Operations measured.
    pub count: u64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest.
    pub max_us: f64,
}

impl Latency {
    /// Percentiles of a nanosecond histogram (each is the highest value equivalent to the
    /// recorded ones at 3 significant digits, as HdrHistogram reports).
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Latency::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Latency {
            count: h.len(),
            mean_us: h.mean() / 1000.0,
            p50_us: us(h.value_at_quantile(0.50)),
            p90_us: us(h.value_at_quantile(0.90)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
}

/// CPU use over the measured window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CpuUse {
    /// User-mode seconds.
    pub user_secs: f64,
    /// Kernel seconds.
    pub system_secs: f64,
    /// Cores kept busy on average (CPU seconds per wall-clock second; 1.0 = one core).
    pub cores: f64,
    /// CPU microseconds per completed operation.
    pub us_per_op: f64,
    /// Of them, microseconds in the kernel (system calls, the network stack).
    pub kernel_us_per_op: f64,
}

impl CpuUse {
    /// CPU use from a CPU-time difference over `elapsed` and `ops` operations.
    pub fn new(spent: CpuTimes, elapsed: Duration, ops: u64) -> Self {
        let total = spent.total().as_secs_f64();
        CpuUse {
            user_secs: spent.user.as_secs_f64(),
            system_secs: spent.system.as_secs_f64(),
            cores: ratio(total, elapsed.as_secs_f64()),
            us_per_op: ratio(total * 1e6, ops as f64),
            kernel_us_per_op: ratio(spent.system.as_secs_f64() * 1e6, ops as f64),
        }
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// One kind's line of the report.
#[derive(Debug, Clone, Serialize)]
pub struct KindReport {
    /// The kind.
    pub kind: OpKind,
    /// Completed operations.
    pub ops: u64,
    /// Of which `success`.
    pub ok: u64,
    /// Completed operations per second.
    pub ops_per_sec: f64,
    /// Entries returned per operation (searches and auth).
    pub entries_per_op: f64,
    /// Latency.
    pub latency: Latency,
}

/// A count of one non-success result code.
#[derive(Debug, Clone, Serialize)]
pub struct CodeCount {
    /// The operation kind.
    pub kind: OpKind,
    /// The numeric result code.
    pub code: u32,
    /// Its RFC 4511 name, when known.
    pub name: String,
    /// How many operations ended with it.
    pub count: u64,
}

/// The final report of one run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Workload name.
    pub workload: String,
    /// Server URL.
    pub url: String,
    /// How the client reached the server: `plain`, `ldaps` or `starttls`.
    pub transport: Transport,
    /// What TLS negotiated and the handshake counts (none for plain LDAP).
    pub tls: Option<TlsReport>,
    /// Connections (or concurrent new-connection slots for auth per new connection).
    pub connections: usize,
    /// Operations in flight per connection.
    pub depth: usize,
    /// Client threads.
    pub threads: usize,
    /// Target rate in operations per second (open loop), or none (as fast as possible).
    pub target_rate: Option<f64>,
    /// Warm-up seconds (not measured).
    pub warmup_secs: f64,
    /// Measured seconds.
    pub duration_secs: f64,
    /// Operations started in the measured window and completed (any result code).
    pub ops: u64,
    /// Of which `success`.
    pub ok: u64,
    /// Operations that ended with another result code or a client-side failure.
    pub errors: u64,
    /// `ops / duration_secs`.
    pub ops_per_sec: f64,
    /// Latency of all operations.
    pub latency: Latency,
    /// Per-kind lines.
    pub kinds: Vec<KindReport>,
    /// Non-success result codes.
    pub result_codes: Vec<CodeCount>,
    /// Client-side failures by description.
    pub client_errors: BTreeMap<String, u64>,
    /// The client's own CPU use (getrusage, all threads).
    pub client_cpu: CpuUse,
    /// The server's CPU use, when its PID was given (`/proc/PID/stat`).
    pub server_cpu: Option<CpuUse>,
    /// The server PID, when given.
    pub server_pid: Option<u32>,
    /// The server's resident set size at the end, KiB, when its PID was given.
    pub server_rss_kib: Option<u64>,
    /// Cores the whole machine kept busy during the window (`/proc/stat`): what is left
    /// after the client and the server is other load that disturbed the measurement.
    pub machine_cores: Option<f64>,
    /// Cores' worth of time stolen by the hypervisor during the window.
    pub steal_cores: Option<f64>,
    /// How busy each CPU was during the window (0 to 1, interrupts and softirqs included):
    /// with the server pinned to one CPU, that CPU's figure says whether it was saturated.
    pub cpu_busy: Vec<f64>,
    /// Remarks about how the run was carried out (e.g. a forced depth).
    pub notes: Vec<String>,
}

/// How the run was set up, for [`Report::build`].
#[derive(Debug, Clone)]
pub struct RunShape {
    /// Workload name.
    pub workload: String,
    /// Server URL.
    pub url: String,
    /// Transport.
    pub transport: Transport,
    /// What TLS negotiated on the first connection (none for plain LDAP).
    pub tls: Option<TlsSession>,
    /// Connections.
    pub connections: usize,
    /// Depth.
    pub depth: usize,
    /// Threads.
    pub threads: usize,
    /// Target rate.
    pub target_rate: Option<f64>,
    /// Warm-up.
    pub warmup: Duration,
    /// Measured window.
    pub duration: Duration,
}

impl Report {
    /// Builds the report from merged statistics and CPU differences over the window.
    pub fn build(
        shape: RunShape,
        stats: &Stats,
        client_cpu: CpuTimes,
        server: Option<(u32, CpuTimes, Option<u64>)>,
        machine: Option<MachineTimes>,
        notes: Vec<String>,
    ) -> Report {
        let secs = shape.duration.as_secs_f64();
        let ops = stats.completed();
        let mut kinds = Vec::new();
        let mut result_codes = Vec::new();
        let mut ok = 0;
        for kind in OpKind::ALL {
            let Some(s) = stats.kind(kind) else { continue };
            ok += s.ok;
            kinds.push(KindReport {
                kind,
                ops: s.completed(),
                ok: s.ok,
                ops_per_sec: ratio(s.completed() as f64, secs),
                entries_per_op: ratio(s.entries as f64, s.completed() as f64),
                latency: Latency::from_histogram(&s.latency_ns),
            });
            for (&code, &count) in &s.codes {
                result_codes.push(CodeCount {
                    kind,
                    code,
                    name: ResultCode(code).name().unwrap_or("unknown").to_string(),
                    count,
                });
            }
        }
        let client_failures: u64 = stats.client_errors.values().sum();
        Report {
            workload: shape.workload,
            url: shape.url,
            transport: shape.transport,
            tls: shape.tls.map(|session| TlsReport {
                session,
                handshakes: stats.handshakes,
                other_handshakes: stats.other_handshakes,
            }),
            connections: shape.connections,
            depth: shape.depth,
            threads: shape.threads,
            target_rate: shape.target_rate,
            warmup_secs: shape.warmup.as_secs_f64(),
            duration_secs: secs,
            ops,
            ok,
            errors: ops - ok + client_failures,
            ops_per_sec: ratio(ops as f64, secs),
            latency: Latency::from_histogram(&stats.total_latency()),
            kinds,
            result_codes,
            client_errors: stats.client_errors.clone(),
            client_cpu: CpuUse::new(client_cpu, shape.duration, ops),
            server_cpu: server.map(|(_, cpu, _)| CpuUse::new(cpu, shape.duration, ops)),
            server_pid: server.map(|(pid, _, _)| pid),
            server_rss_kib: server.and_then(|(_, _, rss)| rss),
            machine_cores: machine.as_ref().map(|m| ratio(m.busy.as_secs_f64(), secs)),
            steal_cores: machine.as_ref().map(|m| ratio(m.steal.as_secs_f64(), secs)),
            cpu_busy: machine
                .as_ref()
                .map(|m| {
                    m.per_cpu_busy
                        .iter()
                        .map(|b| ratio(b.as_secs_f64(), secs))
                        .collect()
                })
                .unwrap_or_default(),
            notes,
        }
    }

    /// One line of `key=value` pairs (no spaces in values) for shell scripts:
    /// `ops=... ops_per_sec=... ok=... errors=... p50_us=... p90_us=... p99_us=...
    /// p999_us=... max_us=... client_cores=... client_us_per_op=... server_cores=...
    /// server_us_per_op=... server_kernel_us_per_op=... server_rss_kib=... machine_cores=... steal_cores=... cpu_busy=...
    /// transport=... tls_version=... tls_cipher=... tls_group=... tls_verified=... tls_full=...
    /// tls_resumed=... tls_hrr=... tls_other=...` (the server fields are `-` without a PID;
    /// the TLS fields are `-` for plain LDAP; `tls_full`, `tls_resumed` and `tls_hrr` count
    /// the handshakes of operations started in the measured window, `tls_other` the rest).
    pub fn to_line(&self) -> String {
        let l = &self.latency;
        let (sc, su, sk) = match &self.server_cpu {
            Some(c) => (
                format!("{:.3}", c.cores),
                format!("{:.2}", c.us_per_op),
                format!("{:.2}", c.kernel_us_per_op),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let mut line = format!(
            "ops={} ops_per_sec={:.1} ok={} errors={} p50_us={:.1} p90_us={:.1} p99_us={:.1} p999_us={:.1} \
             max_us={:.1} client_cores={:.3} client_us_per_op={:.2} server_cores={sc} server_us_per_op={su} \
             server_kernel_us_per_op={sk} server_rss_kib={} machine_cores={} steal_cores={} cpu_busy={}",
            self.ops,
            self.ops_per_sec,
            self.ok,
            self.errors,
            l.p50_us,
            l.p90_us,
            l.p99_us,
            l.p999_us,
            l.max_us,
            self.client_cpu.cores,
            self.client_cpu.us_per_op,
            self.server_rss_kib.map_or("-".to_string(), |k| k.to_string()),
            self.machine_cores.map_or("-".to_string(), |c| format!("{c:.3}")),
            self.steal_cores.map_or("-".to_string(), |c| format!("{c:.3}")),
            if self.cpu_busy.is_empty() {
                "-".to_string()
            } else {
                self.cpu_busy
                    .iter()
                    .map(|c| format!("{c:.3}"))
                    .collect::<Vec<_>>()
                    .join(",")
            },
        );
        let _ = write!(line, " transport={}", self.transport.name());
        match &self.tls {
            Some(t) => {
                let _ = write!(
                    line,
                    " tls_version={} tls_cipher={} tls_group={} tls_verified={} tls_full={} tls_resumed={} tls_hrr={} tls_other={}",
                    t.session.version.replace(' ', ""),
                    t.session.cipher_suite,
                    t.session.key_exchange,
                    t.session.verified,
                    t.handshakes.full,
                    t.handshakes.resumed,
                    t.handshakes.full_hello_retry,
                    t.other_handshakes.total()
                );
            }
            None => line.push_str(
                " tls_version=- tls_cipher=- tls_group=- tls_verified=- tls_full=- tls_resumed=- tls_hrr=- tls_other=-",
            ),
        }
        line
    }

    /// The human-readable report.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let rate = match self.target_rate {
            Some(r) => format!("target {} ops/s", group(r.round() as u64)),
            None => "max rate".into(),
        };
        let _ = writeln!(
            s,
            "{} on {}: {} connections x depth {}, {} thread(s), {}, {:.1} s measured after {:.1} s warm-up",
            self.workload,
            self.url,
            self.connections,
            self.depth,
            self.threads,
            rate,
            self.duration_secs,
            self.warmup_secs
        );
        if let Some(t) = &self.tls {
            let tls = &t.session;
            let verified = if tls.verified {
                format!("server certificate verified for {}", tls.server_name)
            } else {
                "server certificate NOT VERIFIED (--tls-insecure)".to_string()
            };
            let _ = writeln!(
                s,
                "  TLS      {} ({}), {}, {}, {}{}, session resumption {}",
                self.transport.name(),
                tls.version,
                tls.cipher_suite,
                tls.key_exchange,
                verified,
                if tls.client_certificate {
                    ", client certificate sent"
                } else {
                    ""
                },
                if tls.resumption { "on" } else { "off" }
            );
            let _ = writeln!(
                s,
                "  TLS handshakes in the window {}; set-up and warm-up {}",
                t.handshakes.describe(),
                t.other_handshakes.describe()
            );
        }
        let _ = writeln!(
            s,
            "  total    {:>12} ops/s  ({} ops, {} errors)",
            fmt_rate(self.ops_per_sec),
            group(self.ops),
            group(self.errors)
        );
        let _ = writeln!(
            s,
            "  {:<8} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  entries/op",
            "kind", "ops/s", "mean µs", "p50", "p90", "p99", "p99.9", "max"
        );
        let mut line = |name: &str, rate: f64, l: &Latency, entries: Option<f64>| {
            let _ = writeln!(
                s,
                "  {:<8} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  {}",
                name,
                fmt_rate(rate),
                fmt_us(l.mean_us),
                fmt_us(l.p50_us),
                fmt_us(l.p90_us),
                fmt_us(l.p99_us),
                fmt_us(l.p999_us),
                fmt_us(l.max_us),
                entries.map(|e| format!("{e:.2}")).unwrap_or_default()
            );
        };
        for k in &self.kinds {
            let entries = matches!(k.kind, OpKind::Search | OpKind::Auth).then_some(k.entries_per_op);
            line(k.kind.name(), k.ops_per_sec, &k.latency, entries);
        }
        if self.kinds.len() > 1 {
            line("all", self.ops_per_sec, &self.latency, None);
        }
        for c in &self.result_codes {
            let _ = writeln!(
                s,
                "  result   {} {}({}): {}",
                c.kind.name(),
                c.name,
                c.code,
                group(c.count)
            );
        }
        for (what, n) in &self.client_errors {
            let _ = writeln!(s, "  client error: {what}: {}", group(*n));
        }
        let cpu = |c: &CpuUse| {
            format!(
                "{:.2} cores, {:.1} µs/op (user {:.2} s, system {:.2} s)",
                c.cores, c.us_per_op, c.user_secs, c.system_secs
            )
        };
        let _ = writeln!(s, "  client CPU  {}", cpu(&self.client_cpu));
        if let (Some(c), Some(pid)) = (&self.server_cpu, self.server_pid) {
            let rss = self
                .server_rss_kib
                .map(|k| format!(", RSS {} MiB", group(k / 1024)))
                .unwrap_or_default();
            let _ = writeln!(s, "  server CPU  {} [pid {pid}{rss}]", cpu(c));
        }
        if let Some(m) = self.machine_cores {
            let others = m - self.client_cpu.cores - self.server_cpu.map_or(0.0, |c| c.cores);
            let _ =
                writeln!(
                s,
                "  machine     {m:.2} cores busy, {:.2} not this client{}, {:.2} stolen by the hypervisor",
                others.max(0.0),
                if self.server_cpu.is_some() { " or the server" } else { "" },
                self.steal_cores.unwrap_or(0.0)
            );
            let per: Vec<String> = self
                .cpu_busy
                .iter()
                .enumerate()
                .map(|(i, b)| format!("cpu{i} {:.0}%", b * 100.0))
                .collect();
            if !per.is_empty() {
                let _ = writeln!(
                    s,
                    "  CPUs busy   {} (interrupts and softirqs included)",
                    per.join(", ")
                );
            }
        }
        for n in &self.notes {
            let _ = writeln!(s, "  note: {n}");
        }
        s
    }
}

/// Formats a rate with thousands separators and one decimal below 100.
pub fn fmt_rate(r: f64) -> String {
    if r < 100.0 {
        format!("{r:.1}")
    } else {
        group(r.round() as u64)
    }
}

/// Formats microseconds: one decimal below 1000, whole numbers above.
pub fn fmt_us(us: f64) -> String {
    if us < 1000.0 {
        format!("{us:.1}")
    } else {
        group(us.round() as u64)
    }
}

/// `1234567` as `1,234,567`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(secs: u64) -> RunShape {
        RunShape {
            workload: "search".into(),
            url: "ldap://x".into(),
            transport: Transport::Plain,
            tls: None,
            connections: 2,
            depth: 4,
            threads: 1,
            target_rate: None,
            warmup: Duration::ZERO,
            duration: Duration::from_secs(secs),
        }
    }

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut s = Stats::new();
        // 1..=1000 µs, once each.
        for us in 1..=1000u64 {
            s.record(OpKind::Search, Duration::from_micros(us), ResultCode::SUCCESS, 1);
        }
        let l = Latency::from_histogram(&s.kind(OpKind::Search).unwrap().latency_ns);
        assert_eq!(l.count, 1000);
        let near = |got: f64, want: f64| (got - want).abs() <= want * 0.001 + 0.001;
        assert!(near(l.p50_us, 500.0), "{l:?}");
        assert!(near(l.p90_us, 900.0), "{l:?}");
        assert!(near(l.p99_us, 990.0), "{l:?}");
        assert!(near(l.p999_us, 999.0), "{l:?}");
        assert!(near(l.max_us, 1000.0), "{l:?}");
        assert!(near(l.mean_us, 500.5), "{l:?}");
    }

    #[test]
    fn merge_adds_counts_codes_and_histograms() {
        let mut a = Stats::new();
        let mut b = Stats::new();
        for _ in 0..10 {
            a.record(OpKind::Search, Duration::from_micros(100), ResultCode::SUCCESS, 1);
        }
        for _ in 0..5 {
            b.record(OpKind::Search, Duration::from_micros(300), ResultCode::SUCCESS, 2);
        }
        b.record(
            OpKind::Modify,
            Duration::from_micros(50),
            ResultCode::INSUFFICIENT_ACCESS_RIGHTS,
            0,
        );
        b.record(OpKind::Modify, Duration::from_micros(50), ResultCode(4242), 0);
        b.client_error("connection closed", 3);
        b.client_error("nothing", 0);
        a.merge(&b);
        assert_eq!(a.completed(), 17);
        let s = a.kind(OpKind::Search).unwrap();
        assert_eq!((s.completed(), s.ok, s.entries), (15, 15, 20));
        assert_eq!(a.kind(OpKind::Modify).unwrap().ok, 0);
        assert_eq!(a.client_errors.len(), 1);

        let r = Report::build(shape(2), &a, CpuTimes::default(), None, None, vec![]);
        assert_eq!((r.ops, r.ok, r.errors), (17, 15, 2 + 3));
        assert!((r.ops_per_sec - 8.5).abs() < 1e-9);
        assert_eq!(r.kinds.len(), 2);
        assert!((r.kinds[0].entries_per_op - 20.0 / 15.0).abs() < 1e-9);
        assert!((r.kinds[0].ops_per_sec - 7.5).abs() < 1e-9);
        assert_eq!(r.result_codes.len(), 2);
        assert_eq!(r.result_codes[0].name, "insufficientAccessRights");
        assert_eq!(r.result_codes[1].name, "unknown");
        // p50 of all: 10 x 100 µs, 5 x 300, 2 x 50: the 9th of 17 is 100 µs.
        assert!((r.latency.p50_us - 100.0).abs() < 0.1, "{:?}", r.latency);
        let text = r.to_text();
        assert!(text.contains("insufficientAccessRights(50): 1"), "{text}");
        assert!(text.contains("connection closed: 3"), "{text}");
        let line = r.to_line();
        assert!(
            line.starts_with("ops=17 ops_per_sec=8.5 ok=15 errors=5 p50_us=100.0"),
            "{line}"
        );
        assert!(
            line.contains(
                "server_cores=- server_us_per_op=- server_kernel_us_per_op=- server_rss_kib=- machine_cores=- \
                 steal_cores=- cpu_busy=- "
            ),
            "{line}"
        );
        assert!(
            line.ends_with(
                " transport=plain tls_version=- tls_cipher=- tls_group=- tls_verified=- tls_full=- tls_resumed=- tls_hrr=- tls_other=-"
            ),
            "{line}"
        );
        assert!(!r.to_text().contains("TLS"), "{}", r.to_text());
        assert!(!line.contains("  "));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["ops"], 17);
        assert_eq!(json["kinds"][1]["kind"], "modify");
    }

    #[test]
    fn cpu_use_per_operation_and_per_core() {
        let spent = CpuTimes {
            user: Duration::from_millis(1500),
            system: Duration::from_millis(500),
        };
        let c = CpuUse::new(spent, Duration::from_secs(4), 100_000);
        assert!((c.cores - 0.5).abs() < 1e-9);
        assert!((c.us_per_op - 20.0).abs() < 1e-9);
        assert!((c.kernel_us_per_op - 5.0).abs() < 1e-9);
        assert_eq!(CpuUse::new(spent, Duration::ZERO, 0).cores, 0.0);
        let mut s = Stats::new();
        s.record(OpKind::Auth, Duration::from_secs(7200), ResultCode::SUCCESS, 1);
        let machine = MachineTimes {
            busy: Duration::from_secs(5),
            steal: Duration::from_millis(100),
            per_cpu_busy: vec![Duration::from_secs(1), Duration::from_millis(500)],
        };
        let r = Report::build(
            shape(1),
            &s,
            spent,
            Some((7, spent, Some(2048))),
            Some(machine),
            vec!["n".into()],
        );
        assert_eq!(r.machine_cores, Some(5.0));
        assert_eq!(r.cpu_busy, vec![1.0, 0.5]);
        assert!(r.to_line().contains(" cpu_busy=1.000,0.500 "), "{}", r.to_line());
        assert!(
            r.to_line()
                .contains(" server_us_per_op=2000000.00 server_kernel_us_per_op=500000.00 "),
            "{}",
            r.to_line()
        );
        assert!(r.to_text().contains("cpu0 100%, cpu1 50%"), "{}", r.to_text());
        assert!(
            r.to_text()
                .contains("5.00 cores busy, 1.00 not this client or the server, 0.10 stolen"),
            "{}",
            r.to_text()
        );
        assert_eq!(
            r.latency.max_us,
            Latency::from_histogram(&s.total_latency()).max_us
        );
        assert!(
            r.latency.max_us >= 3_599_000_000.0,
            "clamped to the histogram's top"
        );
        assert!(r.to_text().contains("server CPU  2.00 cores"), "{}", r.to_text());
    }

    #[test]
    fn tls_fields_in_every_format() {
        let mut a = Stats::new();
        a.record(OpKind::Auth, Duration::from_micros(900), ResultCode::SUCCESS, 1);
        a.handshakes = HandshakeCounts {
            full: 1,
            resumed: 3,
            full_hello_retry: 0,
        };
        a.other_handshakes.full = 1;
        let mut b = Stats::new();
        b.handshakes.resumed = 4;
        b.handshakes.full_hello_retry = 2;
        b.other_handshakes.resumed = 2;
        a.merge(&b);
        assert_eq!(
            a.handshakes,
            HandshakeCounts {
                full: 1,
                resumed: 7,
                full_hello_retry: 2
            }
        );
        assert_eq!(a.other_handshakes.total(), 3);
        let mut sh = shape(1);
        sh.url = "ldaps://h:636".into();
        sh.transport = Transport::Ldaps;
        sh.tls = Some(TlsSession {
            version: "TLS 1.3".into(),
            cipher_suite: "TLS13_AES_256_GCM_SHA384".into(),
            key_exchange: "X25519".into(),
            server_name: "h".into(),
            verified: false,
            resumption: true,
            client_certificate: false,
        });
        let r = Report::build(sh, &a, CpuTimes::default(), None, None, vec![]);
        let text = r.to_text();
        assert!(
            text.contains("  TLS      ldaps (TLS 1.3), TLS13_AES_256_GCM_SHA384, X25519, server certificate NOT VERIFIED (--tls-insecure), session resumption on"),
            "{text}"
        );
        assert!(
            text.contains("TLS handshakes in the window 10 (7 resumed, 1 full, 2 full after HelloRetryRequest); set-up and warm-up 3 (2 resumed, 1 full, 0 full"),
            "{text}"
        );
        let line = r.to_line();
        assert!(
            line.ends_with(
                " transport=ldaps tls_version=TLS1.3 tls_cipher=TLS13_AES_256_GCM_SHA384 tls_group=X25519 tls_verified=false tls_full=1 tls_resumed=7 tls_hrr=2 tls_other=3"
            ),
            "{line}"
        );
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["transport"], "ldaps");
        assert_eq!(json["tls"]["version"], "TLS 1.3");
        assert_eq!(json["tls"]["verified"], false);
        assert_eq!(json["tls"]["handshakes"]["resumed"], 7);
        assert_eq!(json["tls"]["other_handshakes"]["full"], 1);
        let plain = Report::build(shape(1), &Stats::new(), CpuTimes::default(), None, None, vec![]);
        let json = serde_json::to_value(&plain).unwrap();
        assert_eq!(json["transport"], "plain");
        assert!(json["tls"].is_null());
    }

    #[test]
    fn number_formatting() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1234567), "1,234,567");
        assert_eq!(fmt_rate(12.345), "12.3");
        assert_eq!(fmt_rate(12345.6), "12,346");
        assert_eq!(fmt_us(99.94), "99.9");
        assert_eq!(fmt_us(12345.6), "12,346");
    }
}
