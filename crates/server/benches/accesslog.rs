//! What the access log costs a request thread per search: formatting its request and
//! RESULT lines into the thread's buffer, `format_389` and `format_json` (the log's writer
//! thread then only copies the lines, in time order, to the file). Each format twice: with
//! the request as the request path decoded it (a search that ended on the connection's
//! task, nearly all of them) and from its PDU alone (one that ended on a search thread).
//!
//! The operation is the DirectoryMark-style exact search of `docs/benchmarks.md`:
//! `(cn=<name>)` from the suffix, subtree, attributes `1.1`, one entry found. A thousand
//! searches with different names.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use larch_proto::{DerefAliases, LdapMessage, OwnedFilter, ProtocolOp, SearchRequest, SearchScope, SeqOf};
use larch_server::accesslog::event::{Event, Op};
use larch_server::accesslog::level::Level;
use larch_server::accesslog::time::TimeCache;
use larch_server::accesslog::{format_389, format_json};

const RECORDS: usize = 1_000;
/// 2026-11-22T10:00:00Z, in nanoseconds.
const T0: u64 = 1_795_341_600_000_000_000;

fn search_pdu(msgid: i32, name: &str) -> Vec<u8> {
    let filter = OwnedFilter::parse(&format!("(cn={name})")).expect("a valid filter");
    let attrs: [&[u8]; 1] = [b"1.1"];
    let op = ProtocolOp::SearchRequest(SearchRequest {
        base: b"dc=example,dc=com",
        scope: SearchScope::Subtree,
        deref_aliases: DerefAliases::Never,
        size_limit: 0,
        time_limit: 0,
        types_only: false,
        filter: filter.as_filter(),
        attributes: SeqOf::from_items(&attrs),
    });
    let mut pdu = Vec::new();
    LdapMessage::new(msgid, op).encode(&mut pdu);
    pdu
}

fn op<'a>(i: usize, request: &'a [u8], decoded: Option<&'a LdapMessage<'a>>) -> Op<'a> {
    let received = T0 + i as u64 * 9_000;
    Op {
        conn: 12 + (i % 8) as u64,
        op: (i / 8) as i64,
        msgid: (i / 8) as i32 + 1,
        received,
        finished: received + 8_123,
        wait_ns: 1_234,
        work_ns: 6_889,
        request_tag: 0x63,
        request,
        decoded,
        undecodable: false,
        response_tag: 0x65,
        result: 0,
        matched: "",
        message: "",
        entries: 1,
        references: 0,
        bytes: 120,
        authz_dn: "",
        target_op: -1,
        response_controls: "",
        notes: "",
    }
}

fn bench(c: &mut Criterion) {
    let pdus: Vec<Vec<u8>> = (0..RECORDS)
        .map(|i| search_pdu((i / 8) as i32 + 1, &format!("Person {i:05} Surname")))
        .collect();
    let messages: Vec<LdapMessage<'_>> = pdus
        .iter()
        .map(|p| LdapMessage::decode(p).expect("a search request"))
        .collect();
    let events = |decoded: bool| -> Vec<Event<'_>> {
        pdus.iter()
            .zip(&messages)
            .enumerate()
            .map(|(i, (p, m))| Event::Op(op(i, p, decoded.then_some(m))))
            .collect()
    };
    let (decoded, from_pdu) = (events(true), events(false));
    let mut g = c.benchmark_group("access_log_search");
    g.throughput(Throughput::Elements(RECORDS as u64));
    let mut out = Vec::with_capacity(RECORDS * 512);
    let mut clock = TimeCache::new();
    let cases = [
        ("format_389", false, &decoded),
        ("format_389_from_pdu", false, &from_pdu),
        ("format_json", true, &decoded),
        ("format_json_from_pdu", true, &from_pdu),
    ];
    for (name, json, events) in cases {
        g.bench_function(name, |b| {
            b.iter(|| {
                out.clear();
                for event in events.iter() {
                    if json {
                        format_json::write(&mut out, event, Level::Default, &mut clock, 1_795_341_600);
                    } else {
                        format_389::write(&mut out, event, Level::Default, &mut clock);
                    }
                }
                out.len()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
