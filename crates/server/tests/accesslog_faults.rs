//! The access log when its disk misbehaves: a full disk (every write fails) and a disk that
//! stalls (writes block). Records are handed to the log through its observer interface, as
//! the server does; the file goes through a `Storage` that fails or blocks on command.
//!
//! What must hold: handing a record to the log never fails and never waits for the disk;
//! a failed write is counted (lines lost, write errors) and the log goes on once the disk
//! works again; while the disk stalls, records beyond the buffers' bound are dropped and
//! counted, and the log says so in a line of its own once it can write.

mod common;

use common::gated::{Gate, GatedStorage};

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use larch_server::accesslog::AccessLog;
use larch_server::config::AccessLogSettings;
use larch_server::identity::Identity;
use larch_server::outcome::{ConnectionEvent, Observer, Outcome, Reply, SearchNotes, Sent, Times};

/// A search's outcome on connection `conn`, operation `op`.
fn search_outcome(log: &AccessLog, conn: u64, op: i64, request: &[u8], reply: &Reply) {
    let now = larch_server::clock::Mono::now();
    log.operation(&Outcome {
        conn,
        op,
        msgid: (op + 1) as i32,
        request_tag: larch_proto::op_tag::SEARCH_REQUEST,
        request,
        decoded: None,
        undecodable: false,
        response_tag: larch_proto::op_tag::SEARCH_RESULT_DONE,
        reply: Some(reply),
        sent: Sent {
            entries: 1,
            references: 0,
            bytes: 100,
        },
        times: Times {
            received: now,
            started: now,
            finished: now,
        },
        identity: &Identity::Anonymous,
        target_op: -1,
        notes: SearchNotes::default(),
        bind_method: None,
    });
}

fn search_pdu() -> Vec<u8> {
    let filter = larch_proto::OwnedFilter::parse("(uid=someone)").unwrap();
    let msg = larch_proto::LdapMessage {
        message_id: 1,
        op: larch_proto::ProtocolOp::SearchRequest(larch_proto::SearchRequest {
            base: b"dc=example,dc=com",
            scope: larch_proto::SearchScope::Subtree,
            deref_aliases: larch_proto::DerefAliases::Never,
            size_limit: 0,
            time_limit: 0,
            types_only: false,
            filter: filter.as_filter(),
            attributes: larch_proto::SeqOf::from_items(&[]),
        }),
        controls: None,
    };
    let mut out = Vec::new();
    msg.encode(&mut out);
    out
}

fn open(name: &str, disk: &Arc<Gate>) -> (Arc<AccessLog>, PathBuf) {
    let dir = common::fresh_data_dir(name);
    let path = dir.join("logs/access");
    let log = AccessLog::start(
        &AccessLogSettings::default(),
        path.clone(),
        Arc::new(GatedStorage(disk.clone())),
    )
    .unwrap();
    (log, path)
}

/// Waits until `cond` holds (the writer runs every 100 ms), at most 10 s.
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_full_disk_loses_counted_lines_and_the_log_resumes_when_it_has_room() {
    let disk = Arc::new(Gate::default());
    let (log, path) = open("accesslog-full", &disk);
    let pdu = search_pdu();
    let ok = Reply::success();
    disk.full.store(true, Ordering::SeqCst);
    for op in 0..100 {
        search_outcome(&log, 1, op, &pdu, &ok);
    }
    wait_for("a failed write", || log.stats().write_errors > 0);
    let failed = log.stats();
    assert_eq!(failed.lines_written, 0);
    assert!(failed.lines_lost >= 1, "{failed:?}");
    // Room again: later lines are written.
    disk.full.store(false, Ordering::SeqCst);
    for op in 100..110 {
        search_outcome(&log, 1, op, &pdu, &ok);
    }
    log.connection(&ConnectionEvent::Closed {
        conn: 1,
        op: 109,
        fd: 0,
        reason: larch_server::outcome::CloseReason::Unbind,
    });
    log.close();
    let stats = log.stats();
    let text = std::fs::read_to_string(&path).unwrap();
    let results = text
        .lines()
        .filter(|l| l.contains(" RESULT err=0 tag=101"))
        .count() as u64;
    assert!(results >= 10, "{text}");
    // Every line is either written or counted as lost.
    assert_eq!(stats.lines_written + stats.lines_lost, 2 * 110 + 1, "{stats:?}");
    assert_eq!(stats.lines_written, text.lines().count() as u64);
}

#[test]
fn a_stalled_disk_never_holds_up_the_server_and_drops_are_counted_and_said() {
    let disk = Arc::new(Gate::default());
    let (log, path) = open("accesslog-stall", &disk);
    let pdu = search_pdu();
    let ok = Reply::success();
    // A first record, so that the writer is inside a write when the disk stalls.
    disk.hold();
    search_outcome(&log, 1, 0, &pdu, &ok);
    wait_for("the writer to reach the disk", || {
        disk.attempts.load(Ordering::SeqCst) > 0
    });
    // The writer is blocked: this thread's buffer fills and the rest is dropped; handing a
    // record over still returns (the test would hang otherwise).
    let n = 200_000;
    for op in 1..=n {
        search_outcome(&log, 1, op, &pdu, &ok);
    }
    disk.release();
    log.close();
    let stats = log.stats();
    assert!(stats.records_dropped > 0, "{stats:?}");
    let text = std::fs::read_to_string(&path).unwrap();
    let notice = text
        .lines()
        .find(|l| l.contains("access log records were dropped"))
        .unwrap_or_else(|| panic!("no drop notice in the log"));
    assert!(
        notice.contains(&format!(" {} access log records", stats.records_dropped)),
        "{notice}"
    );
    // Written requests and results plus dropped records account for every record.
    let results = text.lines().filter(|l| l.contains(" RESULT err=0")).count() as u64;
    assert_eq!(results + stats.records_dropped, n as u64 + 1, "{stats:?}");
}
