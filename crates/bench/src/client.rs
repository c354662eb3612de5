//! The load client: many LDAP operations in flight, pipelined on each connection, responses
//! matched by message ID, latencies in HDR histograms.
//!
//! How a run goes:
//! 1. the configuration is checked and the value files are shared (`Arc`) by all threads;
//! 2. `threads` OS threads each run a single-threaded tokio runtime and own every
//!    `threads`-th connection (no work stealing, no locks on the request path; each thread
//!    records into its own [`Stats`]);
//! 3. every thread opens its connections (and binds, when asked), then all threads and the
//!    coordinator meet at a barrier; the first to pass fixes the start instant `t0`;
//! 4. operations started in `[t0, t0 + warm-up)` are sent but not measured; operations
//!    started in `[t0 + warm-up, t0 + warm-up + duration)` are measured when they complete
//!    (so the count is "operations started in the window", exact in both open and closed
//!    loop; in open loop "started" means scheduled, and a client that fell behind still
//!    sends what was scheduled in the window, late); after that nothing new is started and
//!    the operations in flight are drained until a deadline, after which they count as
//!    client errors;
//! 5. the coordinator prints a progress line every second, samples this process's CPU
//!    (getrusage) and the server's (`/proc/PID/stat`) at the window's edges, merges the
//!    threads' statistics and builds the [`Report`].
//!
//! On one connection (step 4), the loop is: start operations until `depth` are in flight
//! (or, in open loop, until the schedule says wait), write every new request with one
//! `write`, wait until the socket is readable (or writable, with output left) or a timer
//! fires, read everything there is, frame and decode each PDU with `larch-proto` (buffers
//! reused, no allocation per response), and complete the operations they answer.
//!
//! Open loop (`rate`): each connection sends on a fixed schedule and latency is measured
//! from the *scheduled* instant, so a server that stalls is charged for the queue it
//! causes (no coordinated omission).
//!
//! TLS (`ldaps://`, `--starttls`; see [`crate::tls`]): before the threads start, one probe
//! connection checks the TLS set-up (StartTLS accepted, certificate verified, a root DSE
//! search answered) so that a wrong CA or a refused StartTLS is a set-up error, and gives
//! the version and cipher suite the report names. Long-lived connections do their
//! handshake (and bind) in step 3; the pipelined loop is generic over
//! `tls::ConnIo`, compiled once for plain sockets and once for TLS. The
//! auth workload's connection per operation does StartTLS and the handshake inside the
//! measured operation: they are part of what such a client waits for. Every handshake is
//! counted by kind (full, resumed, full after HelloRetryRequest).

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant};

use larch_proto::frame::{frame, Frame};
use larch_proto::limits::DEFAULT_MAX_PDU_BYTES;
use larch_proto::{
    AddRequest, Authentication, BindRequest, Change, DelRequest, DerefAliases, LdapMessage, MessageId,
    ModifyOperation, ModifyRequest, OwnedFilter, PartialAttribute, ProtocolOp, ResultCode, SearchRequest,
    SearchScope, SeqOf,
};
use tokio::io::{AsyncRead, AsyncWrite, Interest};
use tokio::net::TcpStream;

use crate::cpu::{self, CpuTimes};
use crate::gen::{GenConfig, Generator};
use crate::password::PasswordScheme;
use crate::report::{HandshakeCounts, OpKind, Report, RunShape, Stats, TlsSession};
use crate::rng::{mix64, Rng};
use crate::simple::{tls_open, SimpleConn};
use crate::template::{FilterTemplate, ValueFile};
use crate::tls::{count_handshake, ConnIo, TlsIo, TlsOptions, TlsSetup, Transport};
use crate::url::LdapUrl;

/// Largest response PDU the client accepts.
pub const MAX_RESPONSE_BYTES: usize = DEFAULT_MAX_PDU_BYTES;
/// Initial read buffer per connection (grows to fit a larger PDU).
const READ_BUFFER: usize = 64 * 1024;
/// Churn keeps at most this many of its own entries per connection before deleting.
const CHURN_WINDOW: usize = 16;

/// What the client does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Workload {
    /// Searches with a random value in the filter template.
    Search,
    /// SLAMD's authentication: search by uid, then simple bind as the entry found.
    Auth,
    /// Replace one attribute of a random entry with a random value (DSRK modrate).
    Modify,
    /// Searches and modifies at `search_percent` / `100 - search_percent`.
    Mixed,
    /// Adds new entries (left in place).
    Add,
    /// Deletes the DNs of the DN file, each once, in order.
    Delete,
    /// Adds new entries and deletes them again (the directory keeps its size).
    Churn,
}

impl Workload {
    /// Every workload, for help texts.
    pub const ALL: [Workload; 7] = [
        Workload::Search,
        Workload::Auth,
        Workload::Modify,
        Workload::Mixed,
        Workload::Add,
        Workload::Delete,
        Workload::Churn,
    ];

    /// The workload's name.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Search => "search",
            Workload::Auth => "auth",
            Workload::Modify => "modify",
            Workload::Mixed => "mixed",
            Workload::Add => "add",
            Workload::Delete => "delete",
            Workload::Churn => "churn",
        }
    }

    /// Parses a workload name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|w| w.name() == s)
    }
}

/// Where the auth workload binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthConnection {
    /// On the same long-lived connection (one auth at a time per connection: RFC 4511
    /// section 4.2.1 forbids sending anything while a bind is outstanding).
    Same,
    /// On a new TCP connection per operation: connect, search, bind, unbind, close.
    New,
}

/// Which attributes a search asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attributes {
    /// All user attributes (an empty list).
    All,
    /// None: the special `1.1`.
    NoAttributes,
    /// These.
    List(Vec<String>),
}

impl Attributes {
    /// `all` (or `*`), `none` (or `1.1`), or a comma-separated list.
    pub fn parse(s: &str) -> Self {
        match s.trim() {
            "" | "all" | "*" => Attributes::All,
            "none" | "1.1" => Attributes::NoAttributes,
            list => Attributes::List(
                list.split(',')
                    .map(|a| a.trim().to_string())
                    .filter(|a| !a.is_empty())
                    .collect(),
            ),
        }
    }

    fn names(&self) -> Vec<String> {
        match self {
            Attributes::All => Vec::new(),
            Attributes::NoAttributes => vec!["1.1".into()],
            Attributes::List(l) => l.clone(),
        }
    }
}

/// A complete run description.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// The server.
    pub url: LdapUrl,
    /// What to do.
    pub workload: Workload,
    /// Connections (for auth on new connections: concurrent operations).
    pub connections: usize,
    /// Operations in flight per connection.
    pub depth: usize,
    /// Client threads (each a single-threaded runtime owning some connections).
    pub threads: usize,
    /// Measured window.
    pub duration: Duration,
    /// Unmeasured time before it.
    pub warmup: Duration,
    /// Target operations per second over all connections (open loop); `None` = as fast as
    /// the server answers (closed loop).
    pub rate: Option<f64>,
    /// Bind DN and password used on every connection before the run (none: anonymous).
    pub bind: Option<(String, String)>,
    /// Search base.
    pub base: String,
    /// Search scope.
    pub scope: SearchScope,
    /// Search filter template.
    pub filter: FilterTemplate,
    /// Attributes searches ask for.
    pub attributes: Attributes,
    /// Values substituted into `filter`.
    pub values: Option<Arc<ValueFile>>,
    /// Size limit sent with searches (0: none).
    pub size_limit: u32,
    /// The auth workload's search filter (default `(uid={})`).
    pub auth_filter: FilterTemplate,
    /// Values for `auth_filter` (uid values).
    pub auth_values: Option<Arc<ValueFile>>,
    /// The password the auth workload binds with.
    pub auth_password: String,
    /// Same or new connection per auth.
    pub auth_connection: AuthConnection,
    /// DNs for modify and delete.
    pub dns: Option<Arc<ValueFile>>,
    /// The attribute modify replaces.
    pub modify_attribute: String,
    /// Percentage of searches in the mixed workload.
    pub search_percent: u32,
    /// Parent DN of entries the add and churn workloads create.
    pub add_parent: String,
    /// Seed of the random choices (values, DNs, modify values).
    pub seed: u64,
    /// The server's PID, to report its CPU use.
    pub server_pid: Option<u32>,
    /// Print a progress line every second on stderr.
    pub progress: bool,
    /// How long to wait for operations in flight after the window.
    pub drain_timeout: Duration,
    /// TLS: StartTLS, trusted CA, client certificate, version, resumption. `ldaps://` in
    /// `url` or `tls.starttls` turns TLS on.
    pub tls: TlsOptions,
}

impl BenchConfig {
    /// A configuration with the defaults of `larch bench`: 8 connections x depth 8, one
    /// thread per CPU the process may use, 10 s after 2 s of warm-up, `(cn={})` searches
    /// under `dc=example,dc=com`, subtree, all attributes.
    pub fn new(url: LdapUrl, workload: Workload) -> Self {
        BenchConfig {
            url,
            workload,
            connections: 8,
            depth: 8,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            duration: Duration::from_secs(10),
            warmup: Duration::from_secs(2),
            rate: None,
            bind: None,
            base: "dc=example,dc=com".into(),
            scope: SearchScope::Subtree,
            filter: FilterTemplate::parse("(cn={})").expect("valid template"),
            attributes: Attributes::All,
            values: None,
            size_limit: 0,
            auth_filter: FilterTemplate::parse("(uid={})").expect("valid template"),
            auth_values: None,
            auth_password: "password".into(),
            auth_connection: AuthConnection::Same,
            dns: None,
            modify_attribute: "description".into(),
            search_percent: 80,
            add_parent: "ou=People,dc=example,dc=com".into(),
            seed: 1,
            server_pid: None,
            progress: false,
            drain_timeout: Duration::from_secs(10),
            tls: TlsOptions::default(),
        }
    }

    /// The depth actually used: auth carries one operation at a time per connection.
    pub fn effective_depth(&self) -> usize {
        match self.workload {
            Workload::Auth => 1,
            _ => self.depth.max(1),
        }
    }
}

/// Why a run could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The configuration is incomplete or contradictory.
    #[error("{0}")]
    Config(String),
    /// The server could not be reached or refused the set-up.
    #[error("{0}")]
    Setup(String),
    /// A thread or runtime failed.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Counters shared by all threads, for the progress line and the start barrier.
struct Shared {
    completed: AtomicU64,
    errors: AtomicU64,
    barrier: Barrier,
    start: OnceLock<Instant>,
    setup_failed: AtomicBool,
    setup_error: Mutex<Option<String>>,
    delete_cursor: AtomicUsize,
}

/// The instants of one run.
#[derive(Debug, Clone, Copy)]
struct Timeline {
    start: Instant,
    warm_end: Instant,
    stop: Instant,
    drain_end: Instant,
}

/// What every connection of a thread reads.
struct Ctx {
    cfg: Arc<BenchConfig>,
    addr: SocketAddr,
    tls: Option<Arc<TlsSetup>>,
    depth: usize,
    timeline: Timeline,
    shared: Arc<Shared>,
    stats: RefCell<Stats>,
    generator: Option<Generator>,
    run_id: u64,
}

/// Runs one benchmark and returns its report.
pub fn run(cfg: &BenchConfig) -> Result<Report, BenchError> {
    validate(cfg)?;
    let tls = TlsSetup::new(&cfg.tls, &cfg.url, cfg.connections)
        .map_err(BenchError::Config)?
        .map(Arc::new);
    let transport = tls.as_ref().map_or(Transport::Plain, |t| t.transport);
    let addr = (cfg.url.host.as_str(), cfg.url.port)
        .to_socket_addrs()
        .map_err(|e| BenchError::Setup(format!("{}: {e}", cfg.url)))?
        .next()
        .ok_or_else(|| BenchError::Setup(format!("{}: no address", cfg.url)))?;
    let mut probe_handshakes = HandshakeCounts::default();
    let tls_session = match &tls {
        Some(t) => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| BenchError::Internal(format!("tokio runtime: {e}")))?;
            Some(
                rt.block_on(probe(&cfg.url, addr, t, &mut probe_handshakes))
                    .map_err(BenchError::Setup)?,
            )
        }
        None => None,
    };
    let depth = cfg.effective_depth();
    let threads = cfg.threads.clamp(1, cfg.connections.max(1));
    let shared = Arc::new(Shared {
        completed: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        barrier: Barrier::new(threads + 1),
        start: OnceLock::new(),
        setup_failed: AtomicBool::new(false),
        setup_error: Mutex::new(None),
        delete_cursor: AtomicUsize::new(0),
    });
    let run_id = mix64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id()),
    ) & 0xffff_ffff;
    let cfg = Arc::new(cfg.clone());
    let generator = match cfg.workload {
        Workload::Add | Workload::Churn => Some(
            Generator::new(GenConfig {
                entries: 0,
                seed: cfg.seed,
                suffix: cfg.add_parent.clone(),
                scheme: PasswordScheme::Ssha,
                password: cfg.auth_password.clone(),
                ..GenConfig::default()
            })
            .map_err(|e| BenchError::Config(format!("--add-parent: {e}")))?,
        ),
        _ => None,
    };
    let mut handles = Vec::new();
    for t in 0..threads {
        let owned: Vec<usize> = (t..cfg.connections).step_by(threads).collect();
        let (cfg, shared, generator) = (cfg.clone(), shared.clone(), generator.clone());
        let h = std::thread::Builder::new()
            .name(format!("larch-bench-{t}"))
            .spawn({
                let tls = tls.clone();
                move || thread_main(cfg, addr, tls, depth, owned, shared, generator, run_id)
            })
            .map_err(|e| BenchError::Internal(format!("spawn: {e}")))?;
        handles.push(h);
    }

    shared.barrier.wait();
    let t0 = *shared.start.get_or_init(Instant::now);
    let timeline = timeline(&cfg, t0);
    let mut cpu_start: (CpuTimes, Option<CpuTimes>, Option<cpu::MachineTimes>) =
        (CpuTimes::default(), None, None);
    let mut cpu_end = cpu_start.clone();
    if !shared.setup_failed.load(Ordering::Acquire) {
        let sample = || {
            let server = cfg.server_pid.and_then(|pid| cpu::of_pid(pid).ok());
            (cpu::own().unwrap_or_default(), server, cpu::machine().ok())
        };
        if timeline.warm_end == t0 {
            cpu_start = sample();
        }
        let mut last = (t0, 0u64);
        let mut tick = 1u64;
        let mut sampled_start = timeline.warm_end == t0;
        loop {
            let next_tick = t0 + Duration::from_secs(tick);
            let next = if !sampled_start {
                next_tick.min(timeline.warm_end)
            } else {
                next_tick.min(timeline.stop)
            };
            sleep_until_std(next);
            let now = Instant::now();
            if !sampled_start && now >= timeline.warm_end {
                cpu_start = sample();
                sampled_start = true;
            }
            if now >= timeline.stop {
                cpu_end = sample();
                break;
            }
            if now >= next_tick {
                if cfg.progress {
                    let done = shared.completed.load(Ordering::Relaxed);
                    let secs = now.duration_since(last.0).as_secs_f64();
                    let phase = if now < timeline.warm_end {
                        "warm-up"
                    } else {
                        "measure"
                    };
                    eprintln!(
                        "[{:>4}s] {phase:<8} {:>10} ops/s  errors {}",
                        tick,
                        crate::report::fmt_rate((done - last.1) as f64 / secs),
                        shared.errors.load(Ordering::Relaxed)
                    );
                    last = (now, done);
                }
                tick += 1;
            }
        }
    }

    let mut stats = Stats::new();
    for h in handles {
        let s = h
            .join()
            .map_err(|_| BenchError::Internal("a client thread panicked".into()))?;
        stats.merge(&s);
    }
    stats.other_handshakes.merge(&probe_handshakes);
    if shared.setup_failed.load(Ordering::Acquire) {
        let msg = shared.setup_error.lock().map(|m| m.clone()).unwrap_or_default();
        return Err(BenchError::Setup(msg.unwrap_or_else(|| "set-up failed".into())));
    }
    let server = cfg.server_pid.and_then(|pid| {
        let (Some(a), Some(b)) = (cpu_start.1, cpu_end.1) else {
            return None;
        };
        Some((pid, b.since(&a), cpu::rss_kib(pid).ok()))
    });
    let mut notes = Vec::new();
    if cfg.workload == Workload::Auth && cfg.depth > 1 {
        notes.push(format!(
            "depth {} lowered to 1 for auth: no request may follow a bind before its response (RFC 4511 4.2.1)",
            cfg.depth
        ));
    }
    if cfg.server_pid.is_some() && server.is_none() {
        notes.push("server CPU could not be read from /proc".into());
    }
    let workload = match (cfg.workload, cfg.auth_connection) {
        (Workload::Auth, AuthConnection::New) => "auth (new connection per operation)".to_string(),
        (Workload::Auth, AuthConnection::Same) => "auth (same connection)".to_string(),
        (Workload::Mixed, _) => format!("mixed {}/{}", cfg.search_percent, 100 - cfg.search_percent),
        (w, _) => w.name().to_string(),
    };
    Ok(Report::build(
        RunShape {
            workload,
            url: cfg.url.to_string(),
            transport,
            tls: tls_session,
            connections: cfg.connections,
            depth,
            threads,
            target_rate: cfg.rate,
            warmup: cfg.warmup,
            duration: cfg.duration,
        },
        &stats,
        cpu_end.0.since(&cpu_start.0),
        server,
        cpu_end.2.zip(cpu_start.2).map(|(b, a)| b.since(&a)),
        notes,
    ))
}

fn timeline(cfg: &BenchConfig, start: Instant) -> Timeline {
    let warm_end = start + cfg.warmup;
    let stop = warm_end + cfg.duration;
    Timeline {
        start,
        warm_end,
        stop,
        drain_end: stop + cfg.drain_timeout,
    }
}

fn sleep_until_std(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

fn validate(cfg: &BenchConfig) -> Result<(), BenchError> {
    cfg.tls.transport(&cfg.url).map_err(BenchError::Config)?;
    let need = |v: &Option<Arc<ValueFile>>, what: &str| {
        if v.is_none() {
            Err(BenchError::Config(format!(
                "the {} workload needs {what}",
                cfg.workload.name()
            )))
        } else {
            Ok(())
        }
    };
    if cfg.connections == 0 {
        return Err(BenchError::Config("--connections must be at least 1".into()));
    }
    if cfg.duration.is_zero() {
        return Err(BenchError::Config("--duration must be more than 0".into()));
    }
    if let Some(r) = cfg.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(BenchError::Config("--rate must be a positive number".into()));
        }
    }
    match cfg.workload {
        Workload::Search if cfg.filter.placeholders() > 0 => need(&cfg.values, "a value file (--values)"),
        Workload::Auth => need(&cfg.auth_values, "uid values (--auth-values)"),
        Workload::Modify | Workload::Delete => need(&cfg.dns, "a DN file (--dns)"),
        Workload::Mixed => {
            if cfg.search_percent > 100 {
                return Err(BenchError::Config("--search-percent must be 0 to 100".into()));
            }
            if cfg.filter.placeholders() > 0 {
                need(&cfg.values, "a value file (--values)")?;
            }
            need(&cfg.dns, "a DN file (--dns)")
        }
        _ => Ok(()),
    }
}

#[allow(clippy::too_many_arguments)]
fn thread_main(
    cfg: Arc<BenchConfig>,
    addr: SocketAddr,
    tls: Option<Arc<TlsSetup>>,
    depth: usize,
    owned: Vec<usize>,
    shared: Arc<Shared>,
    generator: Option<Generator>,
    run_id: u64,
) -> Stats {
    let fail = |shared: &Shared, msg: String| {
        if let Ok(mut e) = shared.setup_error.lock() {
            e.get_or_insert(msg);
        }
        shared.setup_failed.store(true, Ordering::Release);
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            fail(&shared, format!("tokio runtime: {e}"));
            shared.barrier.wait();
            return Stats::new();
        }
    };
    let per_op_connections = cfg.workload == Workload::Auth && cfg.auth_connection == AuthConnection::New;
    let mut handshakes = HandshakeCounts::default();
    let streams: Vec<Option<Conn>> = if per_op_connections {
        owned.iter().map(|_| None).collect()
    } else {
        match rt.block_on(connect_all(
            &cfg,
            addr,
            tls.as_deref(),
            owned.len(),
            &mut handshakes,
        )) {
            Ok(s) => s.into_iter().map(Some).collect(),
            Err(e) => {
                fail(&shared, e);
                Vec::new()
            }
        }
    };
    shared.barrier.wait();
    if shared.setup_failed.load(Ordering::Acquire) {
        return Stats::new();
    }
    let t0 = *shared.start.get_or_init(Instant::now);
    let mut stats = Stats::new();
    stats.other_handshakes = handshakes;
    let ctx = Rc::new(Ctx {
        timeline: timeline(&cfg, t0),
        cfg,
        addr,
        tls,
        depth,
        shared,
        stats: RefCell::new(stats),
        generator,
        run_id,
    });
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let mut tasks = Vec::new();
        for (conn_index, stream) in owned.into_iter().zip(streams) {
            let ctx = ctx.clone();
            tasks.push(tokio::task::spawn_local(async move {
                // One dispatch per connection: each arm is the loop compiled for its stream.
                match stream {
                    Some(Conn::Plain(s)) => pipelined_connection(ctx, conn_index, s).await,
                    Some(Conn::Tls(s)) => pipelined_connection(ctx, conn_index, *s).await,
                    None => auth_new_connections(ctx, conn_index).await,
                }
            }));
        }
        for t in tasks {
            if t.await.is_err() {
                ctx.stats.borrow_mut().client_error("connection task panicked", 1);
            }
        }
    });
    ctx.stats.take()
}

/// A long-lived connection, ready for the pipelined loop.
enum Conn {
    Plain(TcpStream),
    /// Boxed once per connection (the rustls state is large), never per operation.
    Tls(Box<TlsIo>),
}

async fn connect_all(
    cfg: &BenchConfig,
    addr: SocketAddr,
    tls: Option<&TlsSetup>,
    n: usize,
    handshakes: &mut HandshakeCounts,
) -> Result<Vec<Conn>, String> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let stream = connect(addr)
            .await
            .map_err(|e| format!("connect to {}: {e}", cfg.url))?;
        let conn = match tls {
            None => {
                let mut c = SimpleConn::new(stream);
                setup_bind(cfg, &mut c).await?;
                Conn::Plain(c.stream)
            }
            Some(t) => {
                let stream = tls_open(&cfg.url, t, stream).await?;
                count_handshake(handshakes, stream.get_ref().1);
                let mut c = SimpleConn::new(stream);
                setup_bind(cfg, &mut c).await?;
                Conn::Tls(Box::new(TlsIo::new(c.stream)))
            }
        };
        out.push(conn);
    }
    Ok(out)
}

/// The bind of `--bind-dn` on a new long-lived connection (message ID 1; a StartTLS before
/// it, also ID 1, has completed, so the ID is not in use).
async fn setup_bind<S: AsyncRead + AsyncWrite + Unpin>(
    cfg: &BenchConfig,
    c: &mut SimpleConn<S>,
) -> Result<(), String> {
    if let Some((dn, pw)) = &cfg.bind {
        let code = c
            .bind(1, dn.as_bytes(), pw.as_bytes())
            .await
            .map_err(|e| format!("bind as {dn}: {e}"))?;
        if code != ResultCode::SUCCESS {
            return Err(format!("bind as {dn} failed: {code}"));
        }
    }
    Ok(())
}

/// The TLS probe before a run: open a connection the way the run will, search the root DSE
/// (base scope, `(objectClass=*)`, no attributes; any result code will do) so that the
/// server's session tickets, sent after the handshake, are read into the session cache,
/// then unbind and close. Returns what was negotiated.
async fn probe(
    url: &LdapUrl,
    addr: SocketAddr,
    tls: &TlsSetup,
    handshakes: &mut HandshakeCounts,
) -> Result<TlsSession, String> {
    let stream = connect(addr)
        .await
        .map_err(|e| format!("connect to {url}: {e}"))?;
    let stream = tls_open(url, tls, stream).await?;
    count_handshake(handshakes, stream.get_ref().1);
    let session = tls.session(stream.get_ref().1);
    let mut c = SimpleConn::new(stream);
    let filter = OwnedFilter::parse("(objectClass=*)").map_err(|e| format!("probe filter: {e}"))?;
    let one_one: [&[u8]; 1] = [b"1.1"];
    let req = SearchRequest {
        base: b"",
        scope: SearchScope::Base,
        deref_aliases: DerefAliases::Never,
        size_limit: 0,
        time_limit: 0,
        types_only: false,
        filter: filter.as_filter(),
        attributes: SeqOf::from_items(&one_one),
    };
    LdapMessage::new(2, ProtocolOp::SearchRequest(req)).encode(&mut c.wbuf);
    c.send()
        .await
        .map_err(|e| format!("root DSE search over TLS to {url}: {e}"))?;
    c.read_until(|m| match m.op {
        ProtocolOp::SearchResultDone(_) if m.message_id == 2 => Some(()),
        _ => None,
    })
    .await
    .map_err(|e| format!("root DSE search over TLS to {url}: {e}"))?;
    c.close_tls(3).await;
    Ok(session)
}

async fn connect(addr: SocketAddr) -> std::io::Result<TcpStream> {
    crate::source::connect(addr).await
}

/// The interval between sends of one connection in open loop, and its first send.
fn schedule(ctx: &Ctx, conn_index: usize) -> Option<(Duration, Instant)> {
    let rate = ctx.cfg.rate?;
    let connections = ctx.cfg.connections.max(1);
    let interval = Duration::from_secs_f64(connections as f64 / rate);
    // Spread the connections over one interval so they do not send in bursts.
    let offset = interval.mul_f64(conn_index as f64 / connections as f64);
    Some((interval, ctx.timeline.start + offset))
}

/// One step of an operation in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Single,
    AuthSearch,
    AuthBind,
}

#[derive(Debug)]
struct Pending {
    kind: OpKind,
    step: Step,
    start: Instant,
    measured: bool,
    entries: u64,
    /// Auth: the DN found; add: the DN added; delete (churn clean-up): unused.
    dn: Option<Vec<u8>>,
}

/// The state of one pipelined connection, apart from its read buffer.
struct ConnState<'c> {
    ctx: &'c Ctx,
    attrs: Vec<&'c [u8]>,
    conn_index: usize,
    wbuf: Vec<u8>,
    pending: HashMap<MessageId, Pending>,
    next_id: MessageId,
    rng: Rng,
    scratch: String,
    added: VecDeque<Vec<u8>>,
    add_seq: u64,
    exhausted: bool,
}

enum Fatal {
    Closed,
    Io,
    Decode,
    Notice,
}

impl Fatal {
    fn what(&self) -> &'static str {
        match self {
            Fatal::Closed => "connection closed by the server",
            Fatal::Io => "connection error",
            Fatal::Decode => "undecodable response",
            Fatal::Notice => "notice of disconnection",
        }
    }
}

impl<'c> ConnState<'c> {
    fn id(&mut self) -> MessageId {
        let id = self.next_id;
        self.next_id = if id == MessageId::MAX { 1 } else { id + 1 };
        id
    }

    /// Starts one operation; false when the workload has nothing more to do.
    fn start_op(&mut self, start: Instant, measured: bool) -> bool {
        let cfg = &self.ctx.cfg;
        let kind = match cfg.workload {
            Workload::Search => OpKind::Search,
            Workload::Auth => OpKind::Auth,
            Workload::Modify => OpKind::Modify,
            Workload::Mixed => {
                if self.rng.below(100) < u64::from(cfg.search_percent) {
                    OpKind::Search
                } else {
                    OpKind::Modify
                }
            }
            Workload::Add => OpKind::Add,
            Workload::Delete => OpKind::Delete,
            Workload::Churn => {
                let n = self.added.len();
                if n > 0 && (n >= CHURN_WINDOW || self.rng.below(2) == 0) {
                    OpKind::Delete
                } else {
                    OpKind::Add
                }
            }
        };
        let id = self.id();
        let mut pending = Pending {
            kind,
            step: Step::Single,
            start,
            measured,
            entries: 0,
            dn: None,
        };
        let ctx = self.ctx;
        match kind {
            OpKind::Search => {
                let value = cfg.values.as_deref().map_or(&b""[..], |v| v.pick(&mut self.rng));
                let attrs = SeqOf::from_items(&self.attrs);
                if !encode_search(
                    &mut self.wbuf,
                    id,
                    cfg,
                    &cfg.filter,
                    value,
                    attrs,
                    &mut self.scratch,
                ) {
                    self.bad_filter(measured);
                    return true;
                }
            }
            OpKind::Auth => {
                let value = cfg
                    .auth_values
                    .as_deref()
                    .map_or(&b""[..], |v| v.pick(&mut self.rng));
                let one_one: [&[u8]; 1] = [b"1.1"];
                let attrs = SeqOf::from_items(&one_one);
                if !encode_search(
                    &mut self.wbuf,
                    id,
                    cfg,
                    &cfg.auth_filter,
                    value,
                    attrs,
                    &mut self.scratch,
                ) {
                    self.bad_filter(measured);
                    return true;
                }
                pending.step = Step::AuthSearch;
            }
            OpKind::Modify => {
                let dn = cfg.dns.as_deref().map_or(&b""[..], |v| v.pick(&mut self.rng));
                let mut value = *b"bench 0000000000000000";
                let r = self.rng.next_u64();
                for (i, b) in value[6..].iter_mut().enumerate() {
                    *b = b"0123456789abcdef"[((r >> (60 - 4 * i)) & 15) as usize];
                }
                let values: [&[u8]; 1] = [&value];
                let changes = [Change {
                    operation: ModifyOperation::Replace,
                    modification: PartialAttribute {
                        description: cfg.modify_attribute.as_bytes(),
                        values: SeqOf::from_items(&values),
                    },
                }];
                let req = ModifyRequest {
                    object: dn,
                    changes: SeqOf::from_items(&changes),
                };
                LdapMessage::new(id, ProtocolOp::ModifyRequest(req)).encode(&mut self.wbuf);
            }
            OpKind::Add => {
                let seq = self.add_seq;
                self.add_seq += 1;
                let uid = format!("bench.{:08x}.{}.{}", ctx.run_id, self.conn_index, seq);
                let dn = format!("uid={uid},{}", cfg.add_parent).into_bytes();
                encode_add(&mut self.wbuf, id, ctx, &dn, uid.as_bytes(), &mut self.rng);
                pending.dn = Some(dn);
            }
            OpKind::Delete => {
                let dn = if cfg.workload == Workload::Churn {
                    self.added.pop_front().unwrap_or_default()
                } else {
                    let dns = cfg.dns.as_deref().expect("validated");
                    let i = ctx.shared.delete_cursor.fetch_add(1, Ordering::Relaxed);
                    if i >= dns.len() {
                        self.exhausted = true;
                        return false;
                    }
                    dns.get(i).to_vec()
                };
                LdapMessage::new(id, ProtocolOp::DelRequest(DelRequest { dn: &dn })).encode(&mut self.wbuf);
            }
        }
        self.pending.insert(id, pending);
        true
    }

    fn bad_filter(&mut self, measured: bool) {
        if measured {
            self.ctx
                .stats
                .borrow_mut()
                .client_error("a value made an invalid filter", 1);
        }
    }

    /// Sends a delete of an entry this connection added, outside the measurement.
    fn cleanup_delete(&mut self, dn: Vec<u8>) {
        let id = self.id();
        LdapMessage::new(id, ProtocolOp::DelRequest(DelRequest { dn: &dn })).encode(&mut self.wbuf);
        self.pending.insert(
            id,
            Pending {
                kind: OpKind::Delete,
                step: Step::Single,
                start: Instant::now(),
                measured: false,
                entries: 0,
                dn: None,
            },
        );
    }

    fn finish(&mut self, p: Pending, code: ResultCode, now: Instant) {
        let shared = &self.ctx.shared;
        shared.completed.fetch_add(1, Ordering::Relaxed);
        if code != ResultCode::SUCCESS {
            shared.errors.fetch_add(1, Ordering::Relaxed);
        }
        if p.measured {
            self.ctx.stats.borrow_mut().record(
                p.kind,
                now.saturating_duration_since(p.start),
                code,
                p.entries,
            );
        }
        if p.kind == OpKind::Add && code == ResultCode::SUCCESS && self.ctx.cfg.workload == Workload::Churn {
            if let Some(dn) = p.dn {
                self.added.push_back(dn);
            }
        }
    }

    fn fail_op(&mut self, p: &Pending, what: &str) {
        self.ctx.shared.errors.fetch_add(1, Ordering::Relaxed);
        if p.measured {
            self.ctx.stats.borrow_mut().client_error(what, 1);
        }
    }

    /// Handles one response.
    fn on_message(&mut self, msg: LdapMessage<'_>, now: Instant) -> Result<(), Fatal> {
        let id = msg.message_id;
        match msg.op {
            ProtocolOp::SearchResultEntry(e) => {
                if let Some(p) = self.pending.get_mut(&id) {
                    p.entries += 1;
                    if p.step == Step::AuthSearch && p.dn.is_none() {
                        p.dn = Some(e.object_name.to_vec());
                    }
                } else {
                    self.unexpected();
                }
            }
            ProtocolOp::SearchResultReference(_) => {}
            ProtocolOp::SearchResultDone(r) => {
                let Some(mut p) = self.pending.remove(&id) else {
                    self.unexpected();
                    return Ok(());
                };
                if p.step == Step::AuthSearch && r.code == ResultCode::SUCCESS {
                    match p.dn.take() {
                        Some(dn) => {
                            let bid = self.id();
                            let bind = BindRequest {
                                version: 3,
                                name: &dn,
                                authentication: Authentication::Simple(self.ctx.cfg.auth_password.as_bytes()),
                            };
                            LdapMessage::new(bid, ProtocolOp::BindRequest(bind)).encode(&mut self.wbuf);
                            p.step = Step::AuthBind;
                            self.pending.insert(bid, p);
                        }
                        None => self.fail_op(&p, "auth: the search found no entry"),
                    }
                } else {
                    self.finish(p, r.code, now);
                }
            }
            ProtocolOp::BindResponse(b) => match self.pending.remove(&id) {
                Some(p) => self.finish(p, b.result.code, now),
                None => self.unexpected(),
            },
            ProtocolOp::ModifyResponse(r) | ProtocolOp::AddResponse(r) | ProtocolOp::DelResponse(r) => {
                match self.pending.remove(&id) {
                    Some(p) => self.finish(p, r.code, now),
                    None => self.unexpected(),
                }
            }
            ProtocolOp::ExtendedResponse(_) if id == 0 => return Err(Fatal::Notice),
            _ => self.unexpected(),
        }
        Ok(())
    }

    fn unexpected(&mut self) {
        self.ctx
            .stats
            .borrow_mut()
            .client_error("response to no operation in flight", 1);
    }

    /// Counts every operation still in flight as failed with `what`.
    fn abandon_all(&mut self, what: &str) {
        let pending: Vec<Pending> = self.pending.drain().map(|(_, p)| p).collect();
        for p in pending {
            self.fail_op(&p, what);
        }
    }
}

/// Encodes a search for `value` with `template`; false if the value gave no valid filter.
fn encode_search(
    out: &mut Vec<u8>,
    id: MessageId,
    cfg: &BenchConfig,
    template: &FilterTemplate,
    value: &[u8],
    attributes: SeqOf<'_, &[u8]>,
    scratch: &mut String,
) -> bool {
    let Ok(filter) = template.build(value, scratch) else {
        return false;
    };
    let req = SearchRequest {
        base: cfg.base.as_bytes(),
        scope: cfg.scope,
        deref_aliases: DerefAliases::Never,
        size_limit: cfg.size_limit,
        time_limit: 0,
        types_only: false,
        filter: filter.as_filter(),
        attributes,
    };
    LdapMessage::new(id, ProtocolOp::SearchRequest(req)).encode(out);
    true
}

/// Encodes an AddRequest for a new generated person named `dn` with `uid`.
fn encode_add(out: &mut Vec<u8>, id: MessageId, ctx: &Ctx, dn: &[u8], uid: &[u8], rng: &mut Rng) {
    let g = ctx.generator.as_ref().expect("generator for add");
    let person = g.person(rng.below(1 << 40));
    let mut attrs: Vec<(&'static str, Vec<Vec<u8>>)> = Vec::with_capacity(24);
    let mut scratch = Vec::with_capacity(128);
    g.visit_person(
        &person,
        uid,
        &mut scratch,
        &mut |name, value| match attrs.last_mut() {
            Some((n, vs)) if *n == name => vs.push(value.to_vec()),
            _ => attrs.push((name, vec![value.to_vec()])),
        },
    );
    let slices: Vec<Vec<&[u8]>> = attrs
        .iter()
        .map(|(_, vs)| vs.iter().map(Vec::as_slice).collect())
        .collect();
    let list: Vec<PartialAttribute<'_>> = attrs
        .iter()
        .zip(&slices)
        .map(|((name, _), vs)| PartialAttribute {
            description: name.as_bytes(),
            values: SeqOf::from_items(vs),
        })
        .collect();
    let req = AddRequest {
        entry: dn,
        attributes: SeqOf::from_items(&list),
    };
    LdapMessage::new(id, ProtocolOp::AddRequest(req)).encode(out);
}

/// Frames and handles every complete PDU in `buf[*lo..hi]`; advances `*lo`.
fn drain_frames(
    state: &mut ConnState<'_>,
    buf: &[u8],
    lo: &mut usize,
    hi: usize,
    now: Instant,
) -> Result<Option<usize>, Fatal> {
    loop {
        match frame(&buf[*lo..hi], MAX_RESPONSE_BYTES) {
            Ok(Frame::Complete(n)) => {
                let msg = LdapMessage::decode(&buf[*lo..*lo + n]).map_err(|_| Fatal::Decode)?;
                state.on_message(msg, now)?;
                *lo += n;
            }
            Ok(Frame::Incomplete { total }) => return Ok(total),
            Err(_) => return Err(Fatal::Decode),
        }
    }
}

async fn pipelined_connection<S: ConnIo>(ctx: Rc<Ctx>, conn_index: usize, mut stream: S) {
    let ctx: &Ctx = &ctx;
    let attr_names = ctx.cfg.attributes.names();
    let mut state = ConnState {
        ctx,
        attrs: attr_names.iter().map(|a| a.as_bytes()).collect(),
        conn_index,
        wbuf: Vec::with_capacity(16 * 1024),
        pending: HashMap::with_capacity(ctx.depth * 2),
        next_id: 2,
        rng: Rng::for_index(ctx.cfg.seed, conn_index as u64 + 1),
        scratch: String::with_capacity(128),
        added: VecDeque::new(),
        add_seq: 0,
        exhausted: false,
    };
    let mut rbuf = vec![0u8; READ_BUFFER];
    let (mut lo, mut hi) = (0usize, 0usize);
    let mut wpos = 0usize;
    let tl = ctx.timeline;
    let mut sched = schedule(ctx, conn_index);
    let sleep = tokio::time::sleep_until(tl.stop.into());
    tokio::pin!(sleep);
    let mut fatal: Option<Fatal> = None;

    loop {
        let now = Instant::now();
        if now >= tl.drain_end {
            state.abandon_all("no response before the drain deadline");
            break;
        }
        // Closed loop stops starting operations at the end of the window; open loop stops
        // once every operation scheduled inside the window has been started (a client that
        // fell behind its schedule still sends them, late, and is charged for the delay).
        let stopping = state.exhausted
            || match &sched {
                Some((_, next)) => *next >= tl.stop,
                None => now >= tl.stop,
            };
        if stopping {
            if state.ctx.cfg.workload == Workload::Churn {
                while state.pending.len() < ctx.depth {
                    let Some(dn) = state.added.pop_front() else { break };
                    state.cleanup_delete(dn);
                }
            }
            if state.pending.is_empty() && wpos >= state.wbuf.len() && state.added.is_empty() {
                break;
            }
        } else {
            while state.pending.len() < ctx.depth {
                let start = match &mut sched {
                    Some((interval, next)) => {
                        if *next > now {
                            break;
                        }
                        let s = *next;
                        *next += *interval;
                        s
                    }
                    None => now,
                };
                if start >= tl.stop {
                    break;
                }
                if !state.start_op(start, start >= tl.warm_end) {
                    break;
                }
            }
        }

        // Write what is pending.
        while wpos < state.wbuf.len() {
            match stream.try_write(&state.wbuf[wpos..]) {
                Ok(n) => wpos += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    fatal = Some(Fatal::Io);
                    break;
                }
            }
        }
        // TLS records still to go out once the plaintext was taken (never on a plain socket).
        if stream.wants_write() {
            match stream.try_flush() {
                Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => fatal = Some(Fatal::Io),
                _ => {}
            }
        }
        if fatal.is_some() {
            break;
        }
        if wpos >= state.wbuf.len() {
            state.wbuf.clear();
            wpos = 0;
        }

        // Wait for the socket or the next instant that matters.
        let wake = match &sched {
            _ if stopping => tl.drain_end,
            // Open loop: the next scheduled send, or only the socket while the pipe is full.
            Some((_, next)) if state.pending.len() < ctx.depth => *next,
            Some(_) => tl.drain_end,
            // Closed loop: the end of the window.
            None => tl.stop,
        };
        let wake = tokio::time::Instant::from_std(wake);
        if sleep.deadline() != wake {
            sleep.as_mut().reset(wake);
        }
        let interest = if wpos < state.wbuf.len() || stream.wants_write() {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        let ready = tokio::select! {
            biased;
            r = stream.ready(interest) => Some(r),
            _ = &mut sleep => None,
        };
        let Some(ready) = ready else { continue };
        let Ok(ready) = ready else {
            fatal = Some(Fatal::Io);
            break;
        };
        if !ready.is_readable() && !ready.is_read_closed() {
            continue;
        }
        loop {
            if hi == rbuf.len() {
                if lo > 0 {
                    rbuf.copy_within(lo..hi, 0);
                    hi -= lo;
                    lo = 0;
                } else {
                    rbuf.resize(rbuf.len() * 2, 0);
                }
            }
            match stream.try_read(&mut rbuf[hi..]) {
                Ok(0) => {
                    fatal = Some(Fatal::Closed);
                    break;
                }
                Ok(n) => {
                    hi += n;
                    let now = Instant::now();
                    match drain_frames(&mut state, &rbuf, &mut lo, hi, now) {
                        Ok(need) => {
                            if lo == hi {
                                lo = 0;
                                hi = 0;
                            } else if let Some(total) = need {
                                // Make room for the whole PDU being received.
                                if total > rbuf.len() - lo {
                                    rbuf.copy_within(lo..hi, 0);
                                    hi -= lo;
                                    lo = 0;
                                    if total > rbuf.len() {
                                        rbuf.resize(total.next_power_of_two(), 0);
                                    }
                                }
                            }
                        }
                        Err(f) => {
                            fatal = Some(f);
                            break;
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    fatal = Some(Fatal::Io);
                    break;
                }
            }
        }
        if fatal.is_some() {
            break;
        }
    }
    if let Some(f) = fatal {
        if !state.pending.is_empty() || Instant::now() < tl.stop {
            state.abandon_all(f.what());
            if Instant::now() < tl.stop {
                ctx.stats
                    .borrow_mut()
                    .client_error(&format!("{} (connection lost)", f.what()), 1);
            }
        }
    } else {
        // Polite end: unbind, then let the socket close.
        let mut out = Vec::with_capacity(8);
        let id = state.id();
        LdapMessage::new(id, ProtocolOp::UnbindRequest).encode(&mut out);
        stream.close(&out);
    }
}

/// Auth on a new connection per operation: connect, search, bind, unbind, close.
async fn auth_new_connections(ctx: Rc<Ctx>, conn_index: usize) {
    let ctx: &Ctx = &ctx;
    let tl = ctx.timeline;
    let mut rng = Rng::for_index(ctx.cfg.seed, conn_index as u64 + 1);
    let mut sched = schedule(ctx, conn_index);
    let mut scratch = String::new();
    loop {
        let now = Instant::now();
        let start = match &mut sched {
            Some((interval, next)) => {
                let s = *next;
                *next += *interval;
                if s > now {
                    tokio::time::sleep_until(s.into()).await;
                }
                s
            }
            None => now,
        };
        if start >= tl.stop {
            break;
        }
        let measured = start >= tl.warm_end;
        let value = ctx
            .cfg
            .auth_values
            .as_deref()
            .map_or(&b""[..], |v| v.pick(&mut rng));
        let outcome = tokio::time::timeout_at(
            tl.drain_end.max(start + ctx.cfg.drain_timeout).into(),
            one_auth(ctx, value, &mut scratch, measured),
        )
        .await;
        let now = Instant::now();
        ctx.shared.completed.fetch_add(1, Ordering::Relaxed);
        let mut stats = ctx.stats.borrow_mut();
        match outcome {
            Ok(Ok((code, entries))) => {
                if code != ResultCode::SUCCESS {
                    ctx.shared.errors.fetch_add(1, Ordering::Relaxed);
                }
                if measured {
                    stats.record(OpKind::Auth, now.saturating_duration_since(start), code, entries);
                }
            }
            Ok(Err(what)) => {
                ctx.shared.errors.fetch_add(1, Ordering::Relaxed);
                if measured {
                    stats.client_error(&what, 1);
                }
            }
            Err(_) => {
                ctx.shared.errors.fetch_add(1, Ordering::Relaxed);
                if measured {
                    stats.client_error("no response before the drain deadline", 1);
                }
            }
        }
    }
}

async fn one_auth(
    ctx: &Ctx,
    value: &[u8],
    scratch: &mut String,
    measured: bool,
) -> Result<(ResultCode, u64), String> {
    let stream = connect(ctx.addr).await.map_err(|e| format!("connect: {e}"))?;
    let Some(tls) = &ctx.tls else {
        let mut c = SimpleConn::new(stream);
        let outcome = auth_exchange(ctx, &mut c, 1, value, scratch).await?;
        LdapMessage::new(3, ProtocolOp::UnbindRequest).encode(&mut c.wbuf);
        let _ = c.send().await;
        return Ok(outcome);
    };
    // StartTLS (ID 1) and the handshake are part of the measured operation.
    let stream = tls_open(&ctx.cfg.url, tls, stream).await?;
    {
        let mut stats = ctx.stats.borrow_mut();
        let counts = if measured {
            &mut stats.handshakes
        } else {
            &mut stats.other_handshakes
        };
        count_handshake(counts, stream.get_ref().1);
    }
    let mut c = SimpleConn::new(stream);
    let outcome = auth_exchange(ctx, &mut c, 2, value, scratch).await?;
    c.close_tls(4).await;
    Ok(outcome)
}

/// The auth workload's search (message ID `id`) and bind (`id + 1`) on a fresh connection.
async fn auth_exchange<S: AsyncRead + AsyncWrite + Unpin>(
    ctx: &Ctx,
    c: &mut SimpleConn<S>,
    id: MessageId,
    value: &[u8],
    scratch: &mut String,
) -> Result<(ResultCode, u64), String> {
    let one_one: [&[u8]; 1] = [b"1.1"];
    if !encode_search(
        &mut c.wbuf,
        id,
        &ctx.cfg,
        &ctx.cfg.auth_filter,
        value,
        SeqOf::from_items(&one_one),
        scratch,
    ) {
        return Err("a value made an invalid filter".into());
    }
    c.send().await.map_err(|e| format!("auth search: {e}"))?;
    let mut dn: Option<Vec<u8>> = None;
    let mut entries = 0u64;
    let code = c
        .read_until(|m| match m.op {
            ProtocolOp::SearchResultEntry(e) if m.message_id == id => {
                entries += 1;
                dn.get_or_insert_with(|| e.object_name.to_vec());
                None
            }
            ProtocolOp::SearchResultDone(r) if m.message_id == id => Some(r.code),
            _ => None,
        })
        .await
        .map_err(|e| format!("auth search: {e}"))?;
    if code != ResultCode::SUCCESS {
        return Ok((code, entries));
    }
    let dn = dn.ok_or_else(|| "auth: the search found no entry".to_string())?;
    let code = c
        .bind(id + 1, &dn, ctx.cfg.auth_password.as_bytes())
        .await
        .map_err(|e| format!("auth bind: {e}"))?;
    Ok((code, entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_and_attributes_parse() {
        for w in Workload::ALL {
            assert_eq!(Workload::parse(w.name()), Some(w));
        }
        assert_eq!(Workload::parse("nope"), None);
        assert_eq!(Attributes::parse("all"), Attributes::All);
        assert_eq!(Attributes::parse("1.1"), Attributes::NoAttributes);
        assert_eq!(
            Attributes::parse("cn, mail,"),
            Attributes::List(vec!["cn".into(), "mail".into()])
        );
        assert_eq!(Attributes::parse("none").names(), vec!["1.1".to_string()]);
    }

    #[test]
    fn configurations_missing_their_files_are_refused() {
        let url = LdapUrl::parse("ldap://127.0.0.1:1").unwrap();
        for w in [
            Workload::Search,
            Workload::Auth,
            Workload::Modify,
            Workload::Mixed,
            Workload::Delete,
        ] {
            let cfg = BenchConfig::new(url.clone(), w);
            assert!(matches!(run(&cfg), Err(BenchError::Config(_))), "{w:?}");
        }
        let mut cfg = BenchConfig::new(url.clone(), Workload::Search);
        cfg.filter = FilterTemplate::fixed("(objectClass=*)").unwrap();
        cfg.connections = 0;
        assert!(matches!(run(&cfg), Err(BenchError::Config(_))));
        cfg.connections = 1;
        cfg.rate = Some(-1.0);
        assert!(matches!(run(&cfg), Err(BenchError::Config(_))));
        let mut cfg = BenchConfig::new(url, Workload::Auth);
        cfg.depth = 32;
        assert_eq!(cfg.effective_depth(), 1);
    }

    #[test]
    fn an_unreachable_server_is_a_setup_error() {
        // Bind a port, then close it, so nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut cfg = BenchConfig::new(
            LdapUrl::parse(&format!("ldap://127.0.0.1:{port}")).unwrap(),
            Workload::Search,
        );
        cfg.filter = FilterTemplate::fixed("(objectClass=*)").unwrap();
        cfg.threads = 2;
        cfg.connections = 3;
        let e = run(&cfg).unwrap_err();
        assert!(matches!(e, BenchError::Setup(_)), "{e}");
        assert!(e.to_string().contains("connect"), "{e}");
    }
}
