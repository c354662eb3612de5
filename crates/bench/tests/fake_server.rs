//! The load client against the in-process fake server: every workload, exact counts.

use std::sync::Arc;
use std::time::Duration;

use larch_bench::fake::{FakeCounts, FakeServer};
use larch_bench::report::OpKind;
use larch_bench::template::{FilterTemplate, ValueFile};
use larch_bench::url::LdapUrl;
use larch_bench::{run, AuthConnection, BenchConfig, Workload};

fn config(server: &FakeServer, workload: Workload) -> BenchConfig {
    let mut c = BenchConfig::new(LdapUrl::parse(&server.url()).unwrap(), workload);
    c.duration = Duration::from_millis(700);
    c.warmup = Duration::ZERO;
    c.connections = 3;
    c.depth = 4;
    c.threads = 2;
    c.values = Some(Arc::new(ValueFile::from_values(&["a", "b", "missing"]).unwrap()));
    c.auth_values = Some(Arc::new(ValueFile::from_values(&["user.1", "user.2"]).unwrap()));
    c.dns = Some(Arc::new(
        ValueFile::from_values(&[
            "uid=user.1,ou=People,dc=example,dc=com",
            "uid=user.2,ou=People,dc=example,dc=com",
        ])
        .unwrap(),
    ));
    c
}

fn get(c: &std::sync::atomic::AtomicU64) -> u64 {
    FakeCounts::get(c)
}

#[test]
fn search_counts_entries_and_uses_the_bind_dn() {
    let server = FakeServer::start().unwrap();
    let mut cfg = config(&server, Workload::Search);
    cfg.bind = Some(("cn=admin,dc=example,dc=com".into(), "password".into()));
    cfg.filter = FilterTemplate::parse("(uid={})").unwrap();
    let r = run(&cfg).unwrap();
    let c = server.counts();
    assert_eq!(r.ops, get(&c.searches));
    assert_eq!(get(&c.binds), 3, "one set-up bind per connection");
    let k = &r.kinds[0];
    // "missing" finds nothing: about a third of the searches return no entry.
    assert!(
        k.entries_per_op > 0.5 && k.entries_per_op < 0.8,
        "{}",
        k.entries_per_op
    );
    assert_eq!(r.errors, 0);
}

#[test]
fn a_failed_setup_bind_stops_the_run() {
    let server = FakeServer::start().unwrap();
    let mut cfg = config(&server, Workload::Search);
    cfg.bind = Some(("cn=admin,dc=example,dc=com".into(), "wrong".into()));
    let e = run(&cfg).unwrap_err();
    assert!(e.to_string().contains("invalidCredentials"), "{e}");
    assert_eq!(get(&server.counts().searches), 0);
}

#[test]
fn auth_with_wrong_password_reports_invalid_credentials() {
    let server = FakeServer::start().unwrap();
    let mut cfg = config(&server, Workload::Auth);
    cfg.auth_password = "nope".into();
    let r = run(&cfg).unwrap();
    assert!(r.ops > 0);
    assert_eq!(r.ok, 0);
    assert_eq!(r.result_codes.len(), 1);
    assert_eq!(r.result_codes[0].name, "invalidCredentials");
    assert_eq!(r.result_codes[0].count, r.ops);
    assert_eq!(r.ops, get(&server.counts().binds));
}

#[test]
fn auth_on_new_connections_opens_one_connection_per_operation() {
    let server = FakeServer::start().unwrap();
    let mut cfg = config(&server, Workload::Auth);
    cfg.auth_connection = AuthConnection::New;
    let r = run(&cfg).unwrap();
    let c = server.counts();
    assert!(r.ops > 10, "{}", r.to_text());
    assert_eq!(r.errors, 0, "{}", r.to_text());
    assert_eq!(r.ops, get(&c.binds));
    assert_eq!(r.ops, get(&c.connections));
    // Unbinds are sent after the bind response, so each one may still be in flight.
    assert!(get(&c.unbinds) <= r.ops && get(&c.unbinds) + 3 >= r.ops);
}

#[test]
fn modify_and_mixed_send_what_they_report() {
    let server = FakeServer::start().unwrap();
    let r = run(&config(&server, Workload::Modify)).unwrap();
    assert_eq!(r.ops, get(&server.counts().modifies));
    assert_eq!(r.kinds[0].kind, OpKind::Modify);

    let server = FakeServer::start().unwrap();
    let mut cfg = config(&server, Workload::Mixed);
    cfg.search_percent = 80;
    let r = run(&cfg).unwrap();
    let (s, m) = (get(&server.counts().searches), get(&server.counts().modifies));
    assert_eq!(r.ops, s + m);
    let share = s as f64 / (s + m) as f64;
    assert!((0.7..0.9).contains(&share), "{share}");
}

#[test]
fn churn_deletes_every_entry_it_added() {
    let server = FakeServer::start().unwrap();
    let r = run(&config(&server, Workload::Churn)).unwrap();
    let c = server.counts();
    let add = r.kinds.iter().find(|k| k.kind == OpKind::Add).unwrap();
    let del = r.kinds.iter().find(|k| k.kind == OpKind::Delete).unwrap();
    assert_eq!(add.ops, get(&c.adds));
    assert!(del.ops > 0 && del.ops <= add.ops);
    assert_eq!(get(&c.deletes), get(&c.adds), "the clean-up deleted the rest");
}

#[test]
fn delete_stops_when_the_dn_file_is_used_up() {
    let server = FakeServer::start().unwrap();
    let mut cfg = config(&server, Workload::Delete);
    cfg.duration = Duration::from_secs(5);
    let start = std::time::Instant::now();
    let r = run(&cfg).unwrap();
    assert_eq!(r.ops, 2);
    assert_eq!(get(&server.counts().deletes), 2);
    assert!(start.elapsed() < Duration::from_secs(6));
}

#[test]
fn open_loop_sends_exactly_the_scheduled_operations() {
    let server = FakeServer::start().unwrap();
    let mut cfg = config(&server, Workload::Search);
    cfg.connections = 2;
    cfg.rate = Some(500.0);
    cfg.duration = Duration::from_secs(2);
    let r = run(&cfg).unwrap();
    assert_eq!(r.ops, 1000, "{}", r.to_text());
    assert_eq!(get(&server.counts().searches), 1000);
    assert!((r.ops_per_sec - 500.0).abs() < 1e-9);
}

#[test]
fn a_server_that_goes_away_gives_client_errors_not_a_hang() {
    let server = FakeServer::start().unwrap();
    let mut cfg = config(&server, Workload::Search);
    cfg.duration = Duration::from_secs(2);
    cfg.drain_timeout = Duration::from_secs(1);
    let handle = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        drop(server);
    });
    let start = std::time::Instant::now();
    let r = run(&cfg).unwrap();
    handle.join().unwrap();
    assert!(start.elapsed() < Duration::from_secs(4));
    assert!(r.ops > 0);
    assert!(!r.client_errors.is_empty(), "{}", r.to_text());
}

#[test]
fn open_loop_behind_schedule_sends_late_and_charges_the_delay() {
    // The server answers each batch after 20 ms: one connection, depth 2, carries at most
    // 100 operations/s, a quarter of the 400/s asked for.
    let server = FakeServer::start_with_latency(Duration::from_millis(20)).unwrap();
    let mut cfg = config(&server, Workload::Search);
    cfg.connections = 1;
    cfg.threads = 1;
    cfg.depth = 2;
    cfg.rate = Some(400.0);
    cfg.duration = Duration::from_millis(500);
    let r = run(&cfg).unwrap();
    assert_eq!(
        r.ops,
        200,
        "every scheduled operation is sent, late: {}",
        r.to_text()
    );
    assert_eq!(get(&server.counts().searches), 200);
    // Latency counts from the scheduled instant, so the queue the slow server causes shows:
    // the median operation waited far longer than the server's 20 ms.
    assert!(r.latency.p50_us > 300_000.0, "{}", r.to_text());
    assert!(r.latency.max_us > 1_000_000.0, "{}", r.to_text());
}
