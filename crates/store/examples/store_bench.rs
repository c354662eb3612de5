//! Store figures on a data directory made by `larch import`: lookups, durable commits, and
//! commits while a snapshot is written.
//!
//! Run: `cargo run --release -p larch-store --example store_bench -- <figure>... --data DIR
//! [options]`, where each figure is one of:
//! - `lookup`: `--lookups` equality lookups of random values of `--uids` (one value per
//!   line, e.g. the `uid.txt` of `larch gen`) on one thread, each taking the version from a
//!   `StoreReader`, looking the value up in the `uid` equality index, fetching the entry and
//!   reading its `uid` back (compared with the value looked up: a miss or a mismatch is
//!   counted and fails the run);
//! - `commit`: `--writers` threads each commit, one after another for `--seconds`, a modify
//!   replacing the `description` of a random entry that has a `uid`; reports commits per
//!   second, the latency each writer saw (p50, p99, max), and the mean batch (commits per
//!   published version: the writer publishes once per durable batch);
//! - `snapshot-under-load`: the same writers for twice `--seconds`; at the middle another
//!   thread calls `Store::snapshot`; reports commits per second before the snapshot (after a
//!   warm-up of a quarter of `--seconds`) and while it was written, their ratio, and the
//!   snapshot's time and size.
//!
//! Options: `--sync always|batch|none` (default `always`; `--batch-window-ms`, default 10,
//! for `batch`), `--threads` (loading threads, 0: one per core), `--seed`, `--json` (one
//! JSON object on stdout instead of one line per figure), `--feed none|live|paused` (for
//! `commit`: no change feed subscriber, default; one that reads every batch on its own
//! thread as the writes go; one that reads nothing until the writers stop, then catches up,
//! the time of which is reported), `--import FILE` (when `--data` holds no data yet, import
//! this LDIF into it first, as `larch import` does).
//!
//! The store is closed without a snapshot, so the modifies stay in the log and the next run
//! replays them (the entry count does not change; `snapshot-under-load` does write a
//! snapshot, which later runs load).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use larch_model::entry::{Attribute, Options, StoredEntry};
use larch_model::schema::{AttributeTypeId, Schema};
use larch_store::import::{import_ldif, ImportOptions};
use larch_store::storage::FsStorage;
use larch_store::wal::SyncPolicy;
use larch_store::{
    EntryId, FeedError, FeedStart, FeedSubscription, Store, StoreError, StoreOptions, Version, WriteTxn,
};

/// The allocator the `larch` binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Lookups made before the measured ones (caches, branch predictors), at most.
const LOOKUP_WARMUP: u64 = 100_000;

/// Share of `--seconds` skipped before the "before the snapshot" window (the first commits
/// fill the log's buffers and the queue).
const WARMUP_SHARE: f64 = 0.25;

struct Args {
    figures: Vec<String>,
    data: PathBuf,
    uids: Option<PathBuf>,
    lookups: u64,
    writers: usize,
    seconds: f64,
    sync: SyncPolicy,
    sync_name: String,
    threads: usize,
    seed: u64,
    duty_cycle: f64,
    json: bool,
    feed: String,
    import: Option<PathBuf>,
}

const USAGE: &str = "usage: store_bench <lookup|commit|snapshot-under-load>... --data DIR [--uids FILE] \
                     [--lookups N] [--writers N] [--seconds S] [--sync always|batch|none] [--duty-cycle F] \
                     [--batch-window-ms MS] [--threads N] [--seed N] [--json] [--feed none|live|paused] \
                     [--import FILE]";

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        figures: Vec::new(),
        data: PathBuf::new(),
        uids: None,
        lookups: 1_000_000,
        writers: 64,
        seconds: 10.0,
        sync: SyncPolicy::Always,
        sync_name: "always".into(),
        threads: 0,
        seed: 1,
        duty_cycle: larch_store::DEFAULT_SNAPSHOT_DUTY_CYCLE,
        json: false,
        feed: "none".into(),
        import: None,
    };
    let mut data = None;
    let mut window_ms = 10u64;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        let num = |name: &str, v: String| {
            v.parse::<u64>()
                .map_err(|_| format!("{name}: `{v}` is not a number"))
        };
        match arg.as_str() {
            "--data" => data = Some(PathBuf::from(value("--data")?)),
            "--uids" => a.uids = Some(PathBuf::from(value("--uids")?)),
            "--lookups" => a.lookups = num("--lookups", value("--lookups")?)?.max(1),
            "--writers" => a.writers = num("--writers", value("--writers")?)?.max(1) as usize,
            "--seconds" => {
                let v = value("--seconds")?;
                a.seconds = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| format!("--seconds: `{v}` is not a positive number"))?;
            }
            "--sync" => a.sync_name = value("--sync")?,
            "--batch-window-ms" => window_ms = num("--batch-window-ms", value("--batch-window-ms")?)?,
            "--threads" => a.threads = num("--threads", value("--threads")?)? as usize,
            "--seed" => a.seed = num("--seed", value("--seed")?)?,
            "--duty-cycle" => {
                let v = value("--duty-cycle")?;
                a.duty_cycle = v
                    .parse::<f64>()
                    .ok()
                    .filter(|d| *d > 0.0 && *d <= 1.0)
                    .ok_or_else(|| format!("--duty-cycle: `{v}` is not in (0, 1]"))?;
            }
            "--json" => a.json = true,
            "--feed" => a.feed = value("--feed")?,
            "--import" => a.import = Some(PathBuf::from(value("--import")?)),
            "-h" | "--help" => return Err(USAGE.into()),
            f @ ("lookup" | "commit" | "snapshot-under-load") => a.figures.push(f.into()),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    a.data = data.ok_or_else(|| format!("--data is required\n{USAGE}"))?;
    if a.figures.is_empty() {
        return Err(format!("no figure asked for\n{USAGE}"));
    }
    if !matches!(a.feed.as_str(), "none" | "live" | "paused") {
        return Err(format!("--feed: `{}` is not none, live or paused", a.feed));
    }
    a.sync = match a.sync_name.as_str() {
        "always" => SyncPolicy::Always,
        "batch" => SyncPolicy::Batch {
            window: Duration::from_millis(window_ms),
        },
        "none" => SyncPolicy::None,
        other => return Err(format!("--sync: `{other}` is not always, batch or none")),
    };
    Ok(a)
}

/// xorshift64*: a fast, seedable generator (quality is not the point here).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // SplitMix64's constant keeps a zero seed away from the fixed point.
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A JSON object written by hand (numbers, strings and nested objects only).
#[derive(Default)]
struct Json(Vec<(String, String)>);

impl Json {
    fn num(&mut self, key: &str, v: f64) -> &mut Json {
        let v = if v.is_finite() {
            format!("{v}")
        } else {
            "null".into()
        };
        self.0.push((key.into(), v));
        self
    }

    fn str(&mut self, key: &str, v: &str) -> &mut Json {
        let mut s = String::with_capacity(v.len() + 2);
        s.push('"');
        for c in v.chars() {
            match c {
                '"' => s.push_str("\\\""),
                '\\' => s.push_str("\\\\"),
                c if (c as u32) < 0x20 => s.push_str(&format!("\\u{:04x}", c as u32)),
                c => s.push(c),
            }
        }
        s.push('"');
        self.0.push((key.into(), s));
        self
    }

    fn obj(&mut self, key: &str, v: Json) -> &mut Json {
        self.0.push((key.into(), v.render()));
        self
    }

    fn render(&self) -> String {
        let fields: Vec<String> = self.0.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
        format!("{{{}}}", fields.join(", "))
    }
}

fn attribute_type(schema: &Schema, name: &str) -> Result<AttributeTypeId, String> {
    schema
        .attribute_type(name)
        .map(|t| t.id)
        .ok_or_else(|| format!("the schema has no `{name}`"))
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("store_bench: {e}");
            std::process::exit(2);
        }
    };
    match run(&args) {
        Ok(json) => {
            if args.json {
                println!("{}", json.render());
            }
        }
        Err(e) => {
            eprintln!("store_bench: {e}");
            std::process::exit(1);
        }
    }
}

fn run(a: &Args) -> Result<Json, String> {
    let schema = Arc::new(Schema::builtin().map_err(|e| e.to_string())?);
    if let Some(ldif) = &a.import {
        let empty = std::fs::read_dir(&a.data).map_or(true, |mut d| d.next().is_none());
        if empty {
            let file = std::fs::File::open(ldif).map_err(|e| format!("{}: {e}", ldif.display()))?;
            let options = ImportOptions {
                dir: a.data.clone(),
                storage: Arc::new(FsStorage),
                schema: Arc::clone(&schema),
                threads: a.threads,
                naming_contexts: Vec::new(),
                hook: None,
                allow_file_urls: false,
            };
            import_ldif(&options, std::io::BufReader::new(file), |_| {}).map_err(|e| e.to_string())?;
        }
    }
    if !a.data.is_dir() {
        return Err(format!("{} is not a data directory", a.data.display()));
    }
    let mut options = StoreOptions::new(&a.data, Arc::clone(&schema));
    options.sync = a.sync;
    options.threads = a.threads;
    options.snapshot_interval = None;
    options.snapshot_after_records = None;
    options.snapshot_duty_cycle = a.duty_cycle;
    let started = Instant::now();
    let (store, report) = Store::open(options).map_err(|e| e.to_string())?;
    let open_secs = started.elapsed().as_secs_f64();
    let mut out = Json::default();
    out.num("entries", report.entries as f64)
        .num("open_seconds", open_secs)
        .num("replayed", report.replayed as f64);
    if !a.json {
        println!(
            "open: {} entries in {open_secs:.2} s (snapshot {:.2} s, replay of {} log records {:.2} s)",
            report.entries,
            report.load_time.as_secs_f64(),
            report.replayed,
            report.replay_time.as_secs_f64()
        );
    }
    let result = (|| {
        for f in &a.figures {
            match f.as_str() {
                "lookup" => {
                    out.obj("lookup", lookup(a, &store, &schema)?);
                }
                "commit" => {
                    out.obj("commit", commit(a, &store, &schema)?);
                }
                _ => {
                    out.obj("snapshot_under_load", snapshot_under_load(a, &store, &schema)?);
                }
            }
        }
        Ok::<(), String>(())
    })();
    let closed = store
        .close(false)
        .map_err(|e| format!("closing the store failed: {e}"));
    result?;
    closed?;
    Ok(out)
}

fn lookup(a: &Args, store: &Store, schema: &Schema) -> Result<Json, String> {
    let path = a
        .uids
        .clone()
        .ok_or("lookup needs --uids FILE (one value per line, e.g. uid.txt from larch gen)")?;
    let text = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let values: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty())
        .collect();
    if values.is_empty() {
        return Err(format!("{} holds no value", path.display()));
    }
    let uid = attribute_type(schema, "uid")?;
    let rule = schema
        .attribute_type_by_id(uid)
        .and_then(|t| t.equality)
        .ok_or("uid has no equality rule")?;
    let mut reader = store.reader();
    let mut rng = Rng::new(a.seed);
    let mut found = 0u64;
    let mut wrong = 0u64;
    // The values to look up, drawn at random up front and laid out one after another, so
    // the timed loop reads them sequentially and the figure is the store's, not the cache
    // misses of picking a random value out of the file.
    let draw = |rng: &mut Rng, n: u64| -> (Vec<u8>, Vec<usize>) {
        let mut bytes = Vec::new();
        let mut ends = Vec::with_capacity(n as usize);
        for _ in 0..n {
            bytes.extend_from_slice(values[rng.below(values.len())]);
            ends.push(bytes.len());
        }
        (bytes, ends)
    };
    let (warm_bytes, warm_ends) = draw(&mut rng, LOOKUP_WARMUP.min(a.lookups));
    let (sample_bytes, sample_ends) = draw(&mut rng, a.lookups);
    let mut one = |value: &[u8], found: &mut u64, wrong: &mut u64| {
        let version: &Version = reader.current();
        let Some(index) = version.index(uid) else {
            return false;
        };
        let id = index
            .equality(rule, value, version.keyer())
            .and_then(|set| set.first());
        match id.and_then(|id| version.entry(id)) {
            Some(e) => {
                let back = e
                    .attrs()
                    .attribute(uid)
                    .next()
                    .and_then(|a| a.values.iter().next());
                if back == Some(value) {
                    *found += 1;
                } else {
                    *wrong += 1;
                }
            }
            None => *wrong += 1,
        }
        true
    };
    let (mut f0, mut w0) = (0, 0);
    let mut start = 0;
    for &end in &warm_ends {
        if !one(&warm_bytes[start..end], &mut f0, &mut w0) {
            return Err("uid is not indexed for equality".into());
        }
        start = end;
    }
    let started = Instant::now();
    let mut start = 0;
    for &end in &sample_ends {
        one(&sample_bytes[start..end], &mut found, &mut wrong);
        start = end;
    }
    let secs = started.elapsed().as_secs_f64();
    let ns = secs * 1e9 / a.lookups as f64;
    if !a.json {
        println!(
            "lookup: {} uid equality lookups + entry fetch + uid read on 1 thread: {ns:.0} ns per lookup \
             ({:.2} M lookups/s); {found} found, {wrong} missing or wrong",
            a.lookups,
            a.lookups as f64 / secs / 1e6
        );
    }
    if wrong > 0 {
        return Err(format!(
            "{wrong} of {} lookups found no entry or the wrong one (is --uids the file of this directory?)",
            a.lookups
        ));
    }
    let mut j = Json::default();
    j.num("lookups", a.lookups as f64)
        .num("ns_per_lookup", ns)
        .num("lookups_per_sec", a.lookups as f64 / secs)
        .num("found", found as f64);
    Ok(j)
}

/// One commit as its writer saw it: when it completed (since the run began) and how long it
/// took, in nanoseconds.
#[derive(Clone, Copy)]
struct Sample {
    end: u64,
    latency: u64,
}

/// Replaces the `description` of entry `id` by `value` (the whole entry is rewritten, as an
/// LDAP modify does).
fn set_description(
    t: &mut WriteTxn<'_>,
    id: EntryId,
    description: AttributeTypeId,
    value: Vec<u8>,
) -> Result<(), StoreError> {
    let entry = t.version().entry(id).ok_or(StoreError::NoSuchEntry)?;
    let mut attrs: Vec<Attribute> = entry
        .attrs()
        .attributes()
        .filter(|a| a.ty != description)
        .map(|a| Attribute {
            ty: a.ty,
            options: a.options(),
            values: a.values.iter().map(<[u8]>::to_vec).collect(),
        })
        .collect();
    attrs.push(Attribute {
        ty: description,
        options: Options::none(),
        values: vec![value],
    });
    t.modify(id, &StoredEntry::build(&attrs))
}

/// What a run of writers did.
struct Load {
    samples: Vec<Sample>,
    errors: u64,
    first_error: Option<String>,
    elapsed: Duration,
    /// Versions published during the run (one per durable batch).
    batches: u64,
}

/// Runs `--writers` threads committing modifies until `stop`; `during` runs on this thread
/// meanwhile with the run's start, then sets `stop`.
fn load<T>(
    a: &Args,
    store: &Store,
    schema: &Schema,
    during: impl FnOnce(Instant) -> T,
) -> Result<(Load, T), String> {
    let uid = attribute_type(schema, "uid")?;
    let description = attribute_type(schema, "description")?;
    let ids: Arc<Vec<EntryId>> = Arc::new(
        store
            .current()
            .entries()
            .filter(|e| e.attrs().has(uid))
            .map(|e| e.id)
            .collect(),
    );
    if ids.is_empty() {
        return Err("no entry has a uid to modify".into());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let cell = Arc::clone(store.reader().cell());
    let generation = cell.generation();
    let start = Instant::now();
    let handles: Vec<_> = (0..a.writers)
        .map(|w| {
            let (store, ids, stop) = (store.clone(), Arc::clone(&ids), Arc::clone(&stop));
            let seed = a.seed ^ ((w as u64 + 1) << 32);
            std::thread::spawn(move || {
                let mut rng = Rng::new(seed);
                let mut samples = Vec::with_capacity(1 << 16);
                let mut error = None;
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let id = ids[rng.below(ids.len())];
                    let value = format!("store_bench writer {w} commit {n}").into_bytes();
                    n += 1;
                    let t0 = Instant::now();
                    let r = store.write(move |t| set_description(t, id, description, value));
                    let t1 = Instant::now();
                    match r {
                        Ok(Ok(())) => samples.push(Sample {
                            end: t1.duration_since(start).as_nanos() as u64,
                            latency: t1.duration_since(t0).as_nanos() as u64,
                        }),
                        Ok(Err(e)) | Err(e) => {
                            error = Some(e.to_string());
                            break;
                        }
                    }
                }
                (samples, error)
            })
        })
        .collect();
    let extra = during(start);
    stop.store(true, Ordering::Relaxed);
    let mut out = Load {
        samples: Vec::new(),
        errors: 0,
        first_error: None,
        elapsed: Duration::ZERO,
        batches: 0,
    };
    for h in handles {
        let (samples, error) = h.join().map_err(|_| "a writer thread panicked".to_string())?;
        out.samples.extend(samples);
        if let Some(e) = error {
            out.errors += 1;
            out.first_error.get_or_insert(e);
        }
    }
    out.elapsed = start.elapsed();
    out.batches = cell.generation().wrapping_sub(generation);
    out.samples.sort_unstable_by_key(|s| s.end);
    Ok((out, extra))
}

/// Commits per second, p50/p99/max latency (ms) of the samples ending in `[from, to)` ns.
struct Window {
    commits: u64,
    rate: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

fn window(samples: &[Sample], from: u64, to: u64) -> Window {
    let mut lat: Vec<u64> = samples
        .iter()
        .filter(|s| s.end >= from && s.end < to)
        .map(|s| s.latency)
        .collect();
    lat.sort_unstable();
    let q = |p: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1;
        lat.get(i).copied().unwrap_or(0) as f64 / 1e6
    };
    let secs = to.saturating_sub(from) as f64 / 1e9;
    Window {
        commits: lat.len() as u64,
        rate: if secs > 0.0 { lat.len() as f64 / secs } else { 0.0 },
        p50_ms: q(0.50),
        p99_ms: q(0.99),
        max_ms: lat.last().copied().unwrap_or(0) as f64 / 1e6,
    }
}

fn window_json(w: &Window) -> Json {
    let mut j = Json::default();
    j.num("commits", w.commits as f64)
        .num("commits_per_sec", w.rate)
        .num("p50_ms", w.p50_ms)
        .num("p99_ms", w.p99_ms)
        .num("max_ms", w.max_ms);
    j
}

fn check_errors(l: &Load) -> Result<(), String> {
    match &l.first_error {
        Some(e) => Err(format!(
            "{} writers stopped on an error; the first: {e}",
            l.errors
        )),
        None => Ok(()),
    }
}

/// What a change feed subscriber received.
#[derive(Default)]
struct FeedCount {
    changes: u64,
    batches: u64,
    from_log: u64,
}

impl FeedCount {
    fn take(&mut self, sub: &mut FeedSubscription, wait: Duration) -> Result<bool, FeedError> {
        match sub.recv_timeout(wait)? {
            Some(b) => {
                self.changes += b.len() as u64;
                self.batches += 1;
                self.from_log += u64::from(b.from_log());
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

fn commit(a: &Args, store: &Store, schema: &Schema) -> Result<Json, String> {
    let run_for = Duration::from_secs_f64(a.seconds);
    let mut paused = None;
    let mut live = None;
    let stop_feed = Arc::new(AtomicBool::new(false));
    match a.feed.as_str() {
        "paused" => paused = Some(store.subscribe(FeedStart::Now).map_err(|e| e.to_string())?),
        "live" => {
            let mut sub = store.subscribe(FeedStart::Now).map_err(|e| e.to_string())?;
            let stop = Arc::clone(&stop_feed);
            live = Some(std::thread::spawn(move || {
                let mut count = FeedCount::default();
                while !stop.load(Ordering::Acquire) {
                    count.take(&mut sub, Duration::from_millis(50))?;
                }
                while count.take(&mut sub, Duration::ZERO)? {}
                Ok::<FeedCount, FeedError>(count)
            }));
        }
        _ => {}
    }
    let start_lsn = store.current().lsn();
    let (l, ()) = load(a, store, schema, |_| std::thread::sleep(run_for))?;
    check_errors(&l)?;
    let committed = store.current().lsn() - start_lsn;
    let feed = match (live, paused) {
        (Some(reader), _) => {
            stop_feed.store(true, Ordering::Release);
            let count = reader
                .join()
                .map_err(|_| "the feed reader panicked".to_string())?
                .map_err(|e| e.to_string())?;
            Some((count, Duration::ZERO))
        }
        (None, Some(mut sub)) => {
            let t0 = Instant::now();
            let mut count = FeedCount::default();
            while count.changes < committed {
                if !count
                    .take(&mut sub, Duration::from_secs(5))
                    .map_err(|e| e.to_string())?
                {
                    return Err("the paused subscriber got nothing for 5 s".into());
                }
            }
            Some((count, t0.elapsed()))
        }
        _ => None,
    };
    if let Some((count, _)) = &feed {
        if count.changes != committed {
            return Err(format!(
                "the feed delivered {} changes of the {committed} committed",
                count.changes
            ));
        }
    }
    let w = window(&l.samples, 0, l.elapsed.as_nanos() as u64);
    let batch = w.commits as f64 / l.batches.max(1) as f64;
    if !a.json {
        println!(
            "commit: {} writers, sync {}, {:.1} s: {} commits, {:.0} commits/s, latency p50 {:.2} ms, \
             p99 {:.2} ms, max {:.2} ms; {} batches, mean batch {batch:.1} commits",
            a.writers,
            a.sync_name,
            l.elapsed.as_secs_f64(),
            w.commits,
            w.rate,
            w.p50_ms,
            w.p99_ms,
            w.max_ms,
            l.batches
        );
    }
    let mut j = window_json(&w);
    j.num("writers", a.writers as f64)
        .str("sync", &a.sync_name)
        .num("seconds", l.elapsed.as_secs_f64())
        .num("batches", l.batches as f64)
        .num("mean_batch", batch)
        .str("feed", &a.feed);
    if let Some((count, catch_up)) = feed {
        if !a.json {
            println!(
                "feed ({}): {} changes in {} batches, {} of them read from the log{}",
                a.feed,
                count.changes,
                count.batches,
                count.from_log,
                if catch_up.is_zero() {
                    String::new()
                } else {
                    format!(
                        "; caught up after the writers stopped in {:.3} s",
                        catch_up.as_secs_f64()
                    )
                }
            );
        }
        j.num("feed_changes", count.changes as f64)
            .num("feed_batches", count.batches as f64)
            .num("feed_batches_from_log", count.from_log as f64)
            .num("feed_catch_up_seconds", catch_up.as_secs_f64());
    }
    Ok(j)
}

fn snapshot_under_load(a: &Args, store: &Store, schema: &Schema) -> Result<Json, String> {
    let half = Duration::from_secs_f64(a.seconds);
    let (l, snap) = load(a, store, schema, |start| {
        std::thread::sleep(half);
        let s = store.clone();
        let t0 = Instant::now();
        let result = std::thread::spawn(move || s.snapshot())
            .join()
            .map_err(|_| "the snapshot thread panicked".to_string());
        let t1 = Instant::now();
        // The second half, or until the snapshot is done when it took longer.
        if let Some(rest) = (start + 2 * half).checked_duration_since(Instant::now()) {
            std::thread::sleep(rest);
        }
        (result, t0.duration_since(start), t1.duration_since(start))
    })?;
    check_errors(&l)?;
    let (result, snap_start, snap_end) = snap;
    let info = result?
        .map_err(|e| format!("the snapshot failed: {e}"))?
        .ok_or("the snapshot was not written (the newest one covers the current version)")?;
    let ns = |d: Duration| d.as_nanos() as u64;
    let before = window(&l.samples, ns(half.mul_f64(WARMUP_SHARE)), ns(snap_start));
    let during = window(&l.samples, ns(snap_start), ns(snap_end));
    let after = window(&l.samples, ns(snap_end), ns(l.elapsed));
    let ratio = if before.rate > 0.0 {
        during.rate / before.rate
    } else {
        0.0
    };
    let snap_secs = (snap_end - snap_start).as_secs_f64();
    if !a.json {
        println!(
            "snapshot-under-load: {} writers, sync {}: before {:.0} commits/s (p99 {:.2} ms), during the \
             snapshot {:.0} commits/s (p99 {:.2} ms, max {:.2} ms), ratio {ratio:.2}, after {:.0} commits/s; \
             snapshot {snap_secs:.2} s, {:.1} MB, {} entries at LSN {}",
            a.writers,
            a.sync_name,
            before.rate,
            before.p99_ms,
            during.rate,
            during.p99_ms,
            during.max_ms,
            after.rate,
            info.bytes as f64 / 1e6,
            info.entries,
            info.lsn
        );
    }
    let mut snapshot = Json::default();
    snapshot
        .num("seconds", snap_secs)
        .num("bytes", info.bytes as f64)
        .num("entries", info.entries as f64)
        .num("lsn", info.lsn as f64)
        .str("path", &info.path.display().to_string());
    let mut j = Json::default();
    j.num("writers", a.writers as f64)
        .str("sync", &a.sync_name)
        .obj("before", window_json(&before))
        .obj("during", window_json(&during))
        .obj("after", window_json(&after))
        .num("ratio", ratio)
        .obj("snapshot", snapshot);
    Ok(j)
}
