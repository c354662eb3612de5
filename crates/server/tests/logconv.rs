//! The 389 access log format read by 389 Directory Server's own analyser, `logconv`.
//!
//! A synthetic log (nine connections: binds that succeed and fail, simple and SASL;
//! searches, one partly unindexed, one unindexed, one paged; adds, modifies, deletes,
//! renames, compares; StartTLS, "Who am I?" and Password Modify; abandons; an unbind;
//! closures with eight different codes; a refused connection; TLS handshakes; a request
//! that does not decode) is written with `format_389`, and `logconv -V` must count exactly
//! what was written. The same events written with `format_json` must count the same.
//!
//! When `/usr/bin/logconv` (Debian's `389-ds-base`) is missing the test says so and
//! passes, unless `LARCH_REQUIRE_LOGCONV=1`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use larch_proto::controls::{oid, Control};
use larch_proto::{
    exop, op_tag, AbandonRequest, AddRequest, AttributeValueAssertion, Authentication, BindRequest, Change,
    CompareRequest, DelRequest, DerefAliases, ExtendedRequest, LdapMessage, ModifyDnRequest, ModifyOperation,
    ModifyRequest, OwnedFilter, PartialAttribute, ProtocolOp, SearchRequest, SearchScope, SeqOf,
};
use larch_server::accesslog::event::{Close, CloseReason, Connect, Event, Op, Refused, Tls};
use larch_server::accesslog::level::Level;
use larch_server::accesslog::time::TimeCache;
use larch_server::accesslog::{format_389, format_json};

const LOGCONV: &str = "/usr/bin/logconv";
/// 2026-11-22T10:00:00Z, in nanoseconds.
const START: u64 = 1_795_341_600_000_000_000;

/// Both formats of the same events, written as they come.
struct Log {
    level: Level,
    text: Vec<u8>,
    json: Vec<u8>,
    text_clock: TimeCache,
    json_clock: TimeCache,
    now: u64,
}

impl Log {
    fn new(level: Level) -> Log {
        Log {
            level,
            text: Vec::new(),
            json: Vec::new(),
            text_clock: TimeCache::new(),
            json_clock: TimeCache::new(),
            now: START,
        }
    }

    /// The next instant: a millisecond after the last.
    fn tick(&mut self) -> u64 {
        self.now += 1_000_000;
        self.now
    }

    fn event(&mut self, event: &Event<'_>) {
        format_389::write(&mut self.text, event, self.level, &mut self.text_clock);
        format_json::write(
            &mut self.json,
            event,
            self.level,
            &mut self.json_clock,
            START / 1_000_000_000,
        );
    }

    fn connect(&mut self, conn: u64, ldaps: bool) {
        let time = self.tick();
        self.event(&Event::Connect(Connect {
            conn,
            time,
            peer: Some(format!("192.0.2.{conn}:40000").parse().unwrap()),
            local: Some("192.0.2.100:389".parse().unwrap()),
            fd: 63 + conn as u32,
            ldaps,
        }));
    }

    fn tls(&mut self, conn: u64) {
        let time = self.tick();
        self.event(&Event::Tls(Tls {
            conn,
            time,
            version: "TLS1.3",
            cipher: "TLS13_AES_128_GCM_SHA256",
            keysize: 128,
        }));
    }

    fn close(&mut self, conn: u64, last_op: i64, reason: CloseReason) {
        let time = self.tick();
        self.event(&Event::Close(Close {
            conn,
            time,
            op: last_op,
            fd: 63 + conn as u32,
            reason,
        }));
    }

    /// One operation: `request` answered with `response_tag` (0: nothing sent) and `result`;
    /// `edit` sets the rest.
    fn op(
        &mut self,
        conn: u64,
        op: i64,
        request: &[u8],
        response_tag: u8,
        result: u32,
        edit: impl FnOnce(&mut Op<'_>),
    ) {
        let received = self.tick();
        let finished = self.tick();
        let mut o = Op {
            conn,
            op,
            msgid: op as i32 + 1,
            received,
            finished,
            wait_ns: 20_000,
            work_ns: finished - received - 20_000,
            request_tag: LdapMessage::decode(request).map_or(0, |m| m.op.tag()),
            request,
            decoded: None,
            undecodable: false,
            response_tag,
            result,
            matched: "",
            message: "",
            entries: 0,
            references: 0,
            bytes: 0,
            authz_dn: "",
            target_op: -1,
            response_controls: "",
            notes: "",
        };
        edit(&mut o);
        self.event(&Event::Op(o));
    }
}

fn pdu(id: i32, op: ProtocolOp<'_>, controls: &[Control<'_>]) -> Vec<u8> {
    let mut msg = LdapMessage::new(id, op);
    if !controls.is_empty() {
        msg.controls = Some(SeqOf::from_items(controls));
    }
    let mut buf = Vec::new();
    msg.encode(&mut buf);
    buf
}

fn simple_bind(id: i32, dn: &str, password: &str) -> Vec<u8> {
    let bind = BindRequest {
        version: 3,
        name: dn.as_bytes(),
        authentication: Authentication::Simple(password.as_bytes()),
    };
    pdu(id, ProtocolOp::BindRequest(bind), &[])
}

fn sasl_bind(id: i32, mechanism: &str, controls: &[Control<'_>]) -> Vec<u8> {
    let bind = BindRequest {
        version: 3,
        name: b"",
        authentication: Authentication::Sasl {
            mechanism: mechanism.as_bytes(),
            credentials: None,
        },
    };
    pdu(id, ProtocolOp::BindRequest(bind), controls)
}

fn search(id: i32, base: &str, filter: &str, attrs: &[&[u8]], controls: &[Control<'_>]) -> Vec<u8> {
    let filter = OwnedFilter::parse(filter).unwrap();
    let req = SearchRequest {
        base: base.as_bytes(),
        scope: SearchScope::Subtree,
        deref_aliases: DerefAliases::Never,
        size_limit: 0,
        time_limit: 0,
        types_only: false,
        filter: filter.as_filter(),
        attributes: SeqOf::from_items(attrs),
    };
    pdu(id, ProtocolOp::SearchRequest(req), controls)
}

fn extended(id: i32, oid: &str) -> Vec<u8> {
    let req = ExtendedRequest {
        name: oid.as_bytes(),
        value: None,
    };
    pdu(id, ProtocolOp::ExtendedRequest(req), &[])
}

/// The events of the synthetic log, in both formats.
fn scenario(level: Level) -> Log {
    let mut log = Log::new(level);
    let done = op_tag::SEARCH_RESULT_DONE;

    // 1: the directory manager does a bit of everything, then unbinds.
    log.connect(1, false);
    let req = simple_bind(1, "cn=directory manager", "secret");
    log.op(1, 0, &req, op_tag::BIND_RESPONSE, 0, |o| {
        o.authz_dn = "cn=directory manager"
    });
    let req = search(2, "dc=example,dc=com", "(description=*x*)", &[], &[]);
    log.op(1, 1, &req, done, 0, |o| {
        o.entries = 4;
        o.notes = "U";
    });
    let req = search(3, "dc=example,dc=com", "(objectClass=*)", &[b"cn", b"sn"], &[]);
    log.op(1, 2, &req, done, 0, |o| {
        o.entries = 900;
        o.notes = "A";
    });
    let paged = Control {
        oid: oid::PAGED_RESULTS.as_bytes(),
        critical: false,
        value: Some(&[0x30, 0x05, 0x02, 0x01, 0x0a, 0x04, 0x00]),
    };
    let req = search(
        4,
        "ou=People,dc=example,dc=com",
        "(uid=user.*)",
        &[b"uid"],
        &[paged],
    );
    log.op(1, 3, &req, done, 0, |o| {
        o.entries = 10;
        o.notes = "P";
        o.response_controls = oid::PAGED_RESULTS;
    });
    let cn: [&[u8]; 1] = [b"new"];
    let attrs = [PartialAttribute {
        description: b"cn",
        values: SeqOf::from_items(&cn),
    }];
    let add = AddRequest {
        entry: b"cn=new,dc=example,dc=com",
        attributes: SeqOf::from_items(&attrs),
    };
    let req = pdu(5, ProtocolOp::AddRequest(add), &[]);
    log.op(1, 4, &req, op_tag::ADD_RESPONSE, 0, |_| {});
    let changes = [Change {
        operation: ModifyOperation::Replace,
        modification: attrs[0],
    }];
    for (n, (dn, result)) in [("cn=new,dc=example,dc=com", 0), ("cn=gone,dc=example,dc=com", 32)]
        .into_iter()
        .enumerate()
    {
        let modify = ModifyRequest {
            object: dn.as_bytes(),
            changes: SeqOf::from_items(&changes),
        };
        let req = pdu(6 + n as i32, ProtocolOp::ModifyRequest(modify), &[]);
        log.op(1, 5 + n as i64, &req, op_tag::MODIFY_RESPONSE, result, |o| {
            if result != 0 {
                o.matched = "dc=example,dc=com";
                o.message = "no such entry";
            }
        });
    }
    let proxy = Control {
        oid: oid::PROXIED_AUTHZ.as_bytes(),
        critical: true,
        value: Some(b"dn:uid=helper,dc=example,dc=com"),
    };
    let req = pdu(
        8,
        ProtocolOp::DelRequest(DelRequest {
            dn: b"cn=new,dc=example,dc=com",
        }),
        &[proxy],
    );
    log.op(1, 7, &req, op_tag::DEL_RESPONSE, 0, |_| {});
    let rename = ModifyDnRequest {
        entry: b"cn=old,dc=example,dc=com",
        new_rdn: b"cn=renamed",
        delete_old_rdn: true,
        new_superior: None,
    };
    let req = pdu(9, ProtocolOp::ModifyDnRequest(rename), &[]);
    log.op(1, 8, &req, op_tag::MODIFY_DN_RESPONSE, 0, |_| {});
    let compare = CompareRequest {
        entry: b"cn=renamed,dc=example,dc=com",
        ava: AttributeValueAssertion {
            description: b"cn",
            value: b"renamed",
        },
    };
    let req = pdu(10, ProtocolOp::CompareRequest(compare), &[]);
    log.op(1, 9, &req, op_tag::COMPARE_RESPONSE, 6, |_| {});
    let req = extended(11, exop::WHO_AM_I);
    log.op(1, 10, &req, op_tag::EXTENDED_RESPONSE, 0, |_| {});
    let req = extended(12, exop::PASSWORD_MODIFY);
    log.op(1, 11, &req, op_tag::EXTENDED_RESPONSE, 0, |_| {});
    let req = pdu(
        13,
        ProtocolOp::AbandonRequest(AbandonRequest { message_id: 4 }),
        &[],
    );
    log.op(1, 12, &req, 0, 0, |o| o.target_op = 3);
    let req = pdu(
        14,
        ProtocolOp::AbandonRequest(AbandonRequest { message_id: 99 }),
        &[],
    );
    log.op(1, 13, &req, 0, 0, |_| {});
    let req = pdu(15, ProtocolOp::UnbindRequest, &[]);
    log.op(1, 14, &req, 0, 0, |_| {});
    log.close(1, 14, CloseReason::Unbind);

    // 2: a wrong password, then anonymous; the client goes away.
    log.connect(2, false);
    let req = simple_bind(1, "uid=mallory,dc=example,dc=com", "guess");
    log.op(2, 0, &req, op_tag::BIND_RESPONSE, 49, |o| {
        o.message = "invalid credentials"
    });
    let req = simple_bind(2, "", "");
    log.op(2, 1, &req, op_tag::BIND_RESPONSE, 0, |_| {});
    let req = search(3, "", "(objectClass=*)", &[b"+"], &[]);
    log.op(2, 2, &req, done, 0, |o| o.entries = 1);
    log.close(2, 2, CloseReason::ClientClosed);

    // 3: ldaps, SASL EXTERNAL, idle.
    log.connect(3, true);
    log.tls(3);
    let req = sasl_bind(1, "EXTERNAL", &[]);
    log.op(3, 0, &req, op_tag::BIND_RESPONSE, 0, |o| {
        o.authz_dn = "uid=app,dc=example,dc=com"
    });
    let req = search(2, "dc=example,dc=com", "(uid=app)", &[], &[]);
    log.op(3, 1, &req, done, 0, |o| o.entries = 1);
    log.close(3, 1, CloseReason::Idle);

    // 4: StartTLS, SASL PLAIN, a failed read.
    log.connect(4, false);
    let req = extended(1, exop::START_TLS);
    log.op(4, 0, &req, op_tag::EXTENDED_RESPONSE, 0, |_| {});
    log.tls(4);
    let policy = Control {
        oid: b"1.3.6.1.4.1.42.2.27.8.5.1",
        critical: false,
        value: None,
    };
    let req = sasl_bind(2, "PLAIN", &[policy]);
    log.op(4, 1, &req, op_tag::BIND_RESPONSE, 0, |o| {
        o.authz_dn = "uid=user.1,dc=example,dc=com"
    });
    log.close(4, 1, CloseReason::ReadError);

    // 5: refused at the connection limit.
    let time = log.tick();
    log.event(&Event::Refused(Refused {
        conn: 5,
        time,
        peer: Some("192.0.2.5:40000".parse().unwrap()),
        local: Some("192.0.2.100:389".parse().unwrap()),
        reason: "too many connections",
    }));

    // 6: a request that does not decode, a Notice of Disconnection.
    log.connect(6, false);
    let garbage = [0x30, 0x06, 0x02, 0x01, 0x01, 0x63, 0x01, 0xff];
    log.op(6, 0, &garbage, done, 2, |o| {
        o.undecodable = true;
        o.request_tag = 0x63;
    });
    log.op(6, -1, &[], op_tag::EXTENDED_RESPONSE, 2, |o| o.msgid = 0);
    log.close(6, 0, CloseReason::BadPdu);

    // 7: bound when the server shut down.
    log.connect(7, false);
    let req = simple_bind(1, "uid=user.2,dc=example,dc=com", "pw");
    log.op(7, 0, &req, op_tag::BIND_RESPONSE, 0, |o| {
        o.authz_dn = "uid=user.2,dc=example,dc=com"
    });
    log.close(7, 0, CloseReason::PduTooLarge);

    // 8: a client that never read its answers; 9: a failed TLS handshake.
    log.connect(8, false);
    log.close(8, -1, CloseReason::WriteTimeout);
    log.connect(9, true);
    log.close(9, -1, CloseReason::TlsFailed);
    log
}

/// What the scenario wrote, counted by hand.
fn expected() -> BTreeMap<&'static str, u64> {
    BTreeMap::from([
        ("Total Connections:", 8),
        (" - LDAPS Connections:", 2),
        (" - StartTLS Extended Ops:", 1),
        ("Searches:", 5),
        ("Modifications:", 2),
        ("Adds:", 1),
        ("Deletes:", 1),
        ("Mod RDNs:", 1),
        ("Compares:", 1),
        ("Binds:", 6),
        ("Unbinds:", 1),
        ("Extended Operations:", 3),
        ("Abandoned Requests:", 2),
        ("Total Operations:", 22),
        ("Total Results:", 24),
        ("Proxied Auth Operations:", 1),
        ("Paged Searches:", 1),
        ("Unindexed Searches:", 1),
        ("Unindexed Components:", 1),
        ("FDs Taken:", 8),
        ("FDs Returned:", 8),
        (" - LDAP v3 Binds:", 6),
        (" - SASL Binds:", 2),
        (" - Directory Manager Binds:", 1),
        (" - Anonymous Binds:", 1),
        ("err=0", 17),
        ("err=2", 2),
        ("err=6", 1),
        ("err=32", 1),
        ("err=49", 1),
        ("A1", 1),
        ("B1", 1),
        ("B2", 1),
        ("B3", 1),
        ("P2", 1),
        ("T1", 1),
        ("T2", 1),
        ("U1", 1),
    ])
}

/// The counts of logconv's report: `Label:  N` lines, the `err=N  count` lines of the
/// Errors section, the `CODE  count` lines of the Total Connection Codes section.
fn logconv_counts(report: &str) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    let mut section = "";
    for line in report.lines() {
        if line.starts_with("-----") || line.starts_with("\n-----") {
            section = line;
            continue;
        }
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        if let Some((label, rest)) = line.split_once(':') {
            let number = rest.split_whitespace().next().and_then(|n| n.parse().ok());
            if let Some(n) = number {
                counts.entry(format!("{label}:")).or_insert(n);
                continue;
            }
        }
        let in_errors = section.contains("Errors") && first.starts_with("err=");
        let in_codes = section.contains("Total Connection Codes") && first.len() == 2;
        if in_errors || in_codes {
            if let Some(n) = words.next().and_then(|n| n.parse().ok()) {
                counts.insert(first.to_string(), n);
            }
        }
    }
    counts
}

/// The same counts taken from the JSON lines.
fn json_counts(json: &[u8]) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for line in std::str::from_utf8(json).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        for label in json_labels(&v) {
            *counts.entry(label).or_insert(0) += 1;
        }
    }
    counts
}

/// What logconv would count for one JSON object.
fn json_labels(v: &serde_json::Value) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    let operation = v["operation"].as_str().unwrap();
    let op_label = match operation {
        "SEARCH" => Some("Searches:"),
        "MODIFY" => Some("Modifications:"),
        "ADD" => Some("Adds:"),
        "DELETE" => Some("Deletes:"),
        "MODRDN" => Some("Mod RDNs:"),
        "COMPARE" => Some("Compares:"),
        "BIND" => Some("Binds:"),
        "EXTENDED_OP" => Some("Extended Operations:"),
        "ABANDON" => Some("Abandoned Requests:"),
        _ => None,
    };
    if let Some(label) = op_label {
        labels.extend(["Total Operations:".to_string(), label.to_string()]);
    }
    match operation {
        "CONNECTION" => {
            labels.extend(["Total Connections:".into(), "FDs Taken:".into()]);
            if v["tls"] == true {
                labels.push(" - LDAPS Connections:".into());
            }
        }
        "DISCONNECT" => {
            let reason = v["close_reason"].as_str().unwrap();
            labels.extend([
                "FDs Returned:".into(),
                reason.rsplit(" - ").next().unwrap().to_string(),
            ]);
        }
        "UNBIND" => labels.push("Unbinds:".into()),
        "RESULT" => labels.extend(["Total Results:".into(), format!("err={}", v["err"])]),
        "ABANDON" => labels.push("Total Results:".into()),
        "EXTENDED_OP" if v["oid"] == exop::START_TLS => labels.push(" - StartTLS Extended Ops:".into()),
        "BIND" => {
            labels.push(format!(" - LDAP v{} Binds:", v["version"]));
            match (v["method"].as_str(), v["bind_dn"].as_str()) {
                (Some("sasl"), _) => labels.push(" - SASL Binds:".into()),
                (_, Some("")) => labels.push(" - Anonymous Binds:".into()),
                (_, Some("cn=directory manager")) => labels.push(" - Directory Manager Binds:".into()),
                _ => {}
            }
        }
        _ => {}
    }
    if v.get("authzid").is_some() {
        labels.push("Proxied Auth Operations:".into());
    }
    for note in v["notes"].as_array().into_iter().flatten() {
        let label = match note["note"].as_str().unwrap() {
            "P" => "Paged Searches:",
            "A" => "Unindexed Searches:",
            _ => "Unindexed Components:",
        };
        labels.push(label.into());
    }
    labels
}

fn temp_dir(level: Level) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("larch-logconv-{}-{level}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run_logconv(log: &Path, data: &Path) -> String {
    let out = Command::new(LOGCONV)
        .arg("-D")
        .arg(data)
        .arg("-V")
        .arg(log)
        .output()
        .expect("logconv runs");
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "logconv failed: {}\n{report}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    report
}

/// The counts do not depend on how much each request line says.
#[test]
fn logconv_counts_what_was_written_at_the_default_level() {
    check_counts(Level::Default);
}

#[test]
fn logconv_counts_what_was_written_at_the_full_level() {
    check_counts(Level::Full);
}

fn check_counts(level: Level) {
    let log = scenario(level);
    let expected = expected();

    // The JSON lines of the same events count the same.
    let json = json_counts(&log.json);
    let expected_owned: BTreeMap<String, u64> = expected.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    assert_eq!(json, expected_owned, "the JSON lines' counts");

    if !Path::new(LOGCONV).exists() {
        let required = std::env::var("LARCH_REQUIRE_LOGCONV").is_ok_and(|v| v == "1");
        assert!(!required, "{LOGCONV} is missing and LARCH_REQUIRE_LOGCONV=1");
        eprintln!("{LOGCONV} is missing (Debian's 389-ds-base installs it): the logconv check is skipped");
        return;
    }
    let dir = temp_dir(level);
    let path = dir.join("access");
    std::fs::write(&path, &log.text).unwrap();
    let report = run_logconv(&path, &dir);
    let counts = logconv_counts(&report);
    let _ = std::fs::remove_dir_all(&dir);

    let mut wrong = Vec::new();
    for (label, n) in &expected {
        let got = counts.get(*label).copied();
        if got != Some(*n) {
            wrong.push(format!("{label} expected {n}, logconv counted {got:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{}\n\n--- log ---\n{}\n--- logconv ---\n{report}",
        wrong.join("\n"),
        String::from_utf8_lossy(&log.text)
    );
    assert!(
        report.contains("TLS1.3 128-bit AES-GCM (2 connections)"),
        "the TLS lines are counted:\n{report}"
    );
    assert!(
        report.contains("uid=mallory,dc=example,dc=com"),
        "the failed bind is reported:\n{report}"
    );
    // logconv reads the mechanism to the end of the line.
    assert!(
        report.contains("   - PLAIN: 1\n") && report.contains("   - EXTERNAL: 1\n"),
        "the SASL mechanisms are read whole:\n{report}"
    );
    // logconv reads a filter up to the line's last `" `: every filter is read whole.
    assert!(
        report.contains("Number of Unique Search Filters: 4") && !report.contains("\" attrs="),
        "the filters are read whole:\n{report}"
    );
    assert!(
        report.contains("Search Filter:         (objectclass=*)\n"),
        "the unindexed search's filter is read whole:\n{report}"
    );
}
