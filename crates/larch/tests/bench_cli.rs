//! `larch gen` and `larch bench` as a user runs them: the binary against a fake LDAP server
//! started in the test (no slapd needed).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use larch_bench::fake::{FakeCounts, FakeServer};
use serde_json::Value;

fn larch() -> Command {
    Command::new(env!("CARGO_BIN_EXE_larch"))
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("larch-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run_json(args: &[&str]) -> Value {
    let out = larch().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "larch {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn search_for_two_seconds_reports_what_the_server_saw() {
    let dir = temp_dir("search");
    let values = dir.join("cn.txt");
    std::fs::write(&values, "Alice Smith\nBob Jones\nCarol (temp) *star*\n").unwrap();
    // A little latency keeps operations in flight at the end of the window, so the count
    // is only right if the client drains them.
    let server = FakeServer::start_with_latency(Duration::from_millis(2)).unwrap();
    let url = server.url();
    let r = run_json(&[
        "bench",
        "-H",
        &url,
        "-W",
        "search",
        "--values",
        values.to_str().unwrap(),
        "-c",
        "4",
        "-d",
        "8",
        "-t",
        "2",
        "--duration",
        "2s",
        "--warmup",
        "0",
        "--json",
        "--quiet",
    ]);
    let c = server.counts();
    let seen = FakeCounts::get(&c.searches);
    let ops = r["ops"].as_u64().unwrap();
    assert!(ops > 200, "{r}");
    assert_eq!(ops, seen, "every request the server saw is reported, and no more");
    assert_eq!(r["ok"].as_u64().unwrap(), ops);
    assert_eq!(r["errors"].as_u64().unwrap(), 0, "{r}");
    assert_eq!(r["kinds"][0]["kind"], "search");
    assert!((r["kinds"][0]["entries_per_op"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    assert_eq!(FakeCounts::get(&c.connections), 4);
    assert_eq!(
        FakeCounts::get(&c.unbinds),
        4,
        "every connection ends with an unbind"
    );
    let rate = r["ops_per_sec"].as_f64().unwrap();
    assert!((rate - ops as f64 / 2.0).abs() < 1e-6);
    let lat = &r["latency"];
    assert!(lat["p50_us"].as_f64().unwrap() <= lat["p99_us"].as_f64().unwrap());
    assert!(lat["p99_us"].as_f64().unwrap() <= lat["max_us"].as_f64().unwrap());
    assert!(r["client_cpu"]["cores"].as_f64().unwrap() > 0.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn warm_up_traffic_is_sent_but_not_counted_and_server_cpu_is_read() {
    let dir = temp_dir("warmup");
    let values = dir.join("uid.txt");
    std::fs::write(&values, "user.1\nuser.2\n").unwrap();
    let server = FakeServer::start().unwrap();
    let url = server.url();
    let me = std::process::id().to_string();
    let r = run_json(&[
        "bench",
        "-H",
        &url,
        "-W",
        "auth",
        "--auth-values",
        values.to_str().unwrap(),
        "-c",
        "2",
        "--duration",
        "1s",
        "--warmup",
        "1s",
        "--server-pid",
        &me,
        "--json",
        "--quiet",
    ]);
    let c = server.counts();
    let ops = r["ops"].as_u64().unwrap();
    let binds = FakeCounts::get(&c.binds);
    assert!(ops > 20, "{r}");
    assert!(binds > ops, "warm-up binds are not reported: {binds} vs {ops}");
    assert_eq!(FakeCounts::get(&c.searches), binds, "one search per bind");
    assert_eq!(r["depth"].as_u64().unwrap(), 1);
    assert_eq!(r["errors"].as_u64().unwrap(), 0, "{r}");
    // The "server" is this test process (the fake server runs in it).
    assert!(r["server_cpu"]["us_per_op"].as_f64().is_some(), "{r}");
    assert!(r["server_rss_kib"].as_u64().unwrap() > 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gen_then_sweep_with_a_chart() {
    let dir = temp_dir("gen");
    let data = dir.join("data");
    let g = run_json(&[
        "gen",
        "-n",
        "2000",
        "-o",
        data.to_str().unwrap(),
        "--seed",
        "9",
        "--json",
    ]);
    assert_eq!(g["people"], 2000);
    for f in ["data.ldif", "cn.txt", "uid.txt", "mail.txt", "dn.txt"] {
        assert!(data.join(f).exists(), "{f}");
    }
    let uids = std::fs::read_to_string(data.join("uid.txt")).unwrap();
    assert_eq!(uids.lines().count(), 2000);

    let server = FakeServer::start().unwrap();
    let url = server.url();
    let svg = dir.join("chart.svg");
    let r = run_json(&[
        "bench",
        "-H",
        &url,
        "--data",
        data.to_str().unwrap(),
        "-W",
        "mixed",
        "--search-percent",
        "50",
        "--sweep",
        "connections=1,2",
        "--svg",
        svg.to_str().unwrap(),
        "--duration",
        "500ms",
        "--warmup",
        "0",
        "--json",
        "--quiet",
    ]);
    let points = r["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    let total: u64 = points.iter().map(|p| p["report"]["ops"].as_u64().unwrap()).sum();
    let c = server.counts();
    assert_eq!(total, FakeCounts::get(&c.searches) + FakeCounts::get(&c.modifies));
    assert!(FakeCounts::get(&c.modifies) > 0 && FakeCounts::get(&c.searches) > 0);
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(chart.starts_with("<svg") && chart.contains("connections"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn no_subcommand_prints_help_and_ldaps_needs_a_ca_file() {
    let out = larch().output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let help = String::from_utf8_lossy(&out.stdout);
    for command in ["serve", "gen", "bench", "import", "export", "verify", "snapshot"] {
        assert!(help.contains(command), "{help}");
    }
    let out = larch()
        .args(["bench", "-H", "ldaps://127.0.0.1:636"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("TLS to ldaps://127.0.0.1:636 needs --ca-file") && err.contains("--tls-insecure"),
        "{err}"
    );
    let help = larch().args(["bench", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in [
        "--starttls",
        "--ca-file",
        "--tls-insecure",
        "--cert",
        "--key",
        "--tls-server-name",
        "--tls-version",
        "--no-tls-resumption",
    ] {
        assert!(help.contains(flag), "{flag}: {help}");
    }
}
