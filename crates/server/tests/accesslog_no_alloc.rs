//! The access log formatters allocate nothing per line once the output buffer has grown:
//! every kind of event, at the full level, in both formats, counted with a counting global
//! allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use larch_proto::controls::Control;
use larch_proto::{
    op_tag, AbandonRequest, AddRequest, AttributeValueAssertion, Authentication, BindRequest, Change,
    CompareRequest, DelRequest, DerefAliases, ExtendedRequest, LdapMessage, ModifyDnRequest, ModifyOperation,
    ModifyRequest, OwnedFilter, PartialAttribute, ProtocolOp, SearchRequest, SearchScope, SeqOf,
};
use larch_server::accesslog::event::{Close, CloseReason, Connect, Event, Op, Refused, Tls};
use larch_server::accesslog::level::Level;
use larch_server::accesslog::time::TimeCache;
use larch_server::accesslog::{format_389, format_json};

struct Counting;

thread_local! {
    /// Allocations made by this thread (the harness runs tests on several threads).
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn note_allocation() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// The workspace denies unsafe code; `GlobalAlloc` is an unsafe trait, so this test binary
// allows it here, for an allocator that only counts and forwards to the system one.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f` on this thread.
fn count(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

fn pdu(op: ProtocolOp<'_>) -> Vec<u8> {
    let control = [Control {
        oid: b"2.16.840.1.113730.3.4.18",
        critical: true,
        value: Some(b"dn:uid=b,dc=x"),
    }];
    let mut msg = LdapMessage::new(2, op);
    msg.controls = Some(SeqOf::from_items(&control));
    let mut buf = Vec::new();
    msg.encode(&mut buf);
    buf
}

/// One request PDU of every operation.
fn requests() -> Vec<Vec<u8>> {
    let filter = OwnedFilter::parse("(&(objectClass=person)(|(cn=a*b)(!(sn=\"x\"\n))))").unwrap();
    let attrs: [&[u8]; 2] = [b"cn", b"sn"];
    let values: [&[u8]; 1] = [b"v"];
    let attributes = [PartialAttribute {
        description: b"cn",
        values: SeqOf::from_items(&values),
    }];
    let changes = [Change {
        operation: ModifyOperation::Replace,
        modification: attributes[0],
    }];
    vec![
        pdu(ProtocolOp::BindRequest(BindRequest {
            version: 3,
            name: b"uid=a,dc=x",
            authentication: Authentication::Simple(b"pw"),
        })),
        pdu(ProtocolOp::BindRequest(BindRequest {
            version: 3,
            name: b"",
            authentication: Authentication::Sasl {
                mechanism: b"PLAIN",
                credentials: None,
            },
        })),
        pdu(ProtocolOp::UnbindRequest),
        pdu(ProtocolOp::SearchRequest(SearchRequest {
            base: "dc=例,dc=x".as_bytes(),
            scope: SearchScope::Subtree,
            deref_aliases: DerefAliases::Never,
            size_limit: 0,
            time_limit: 0,
            types_only: false,
            filter: filter.as_filter(),
            attributes: SeqOf::from_items(&attrs),
        })),
        pdu(ProtocolOp::AddRequest(AddRequest {
            entry: b"cn=\"q\",dc=x",
            attributes: SeqOf::from_items(&attributes),
        })),
        pdu(ProtocolOp::ModifyRequest(ModifyRequest {
            object: b"cn=a,dc=x",
            changes: SeqOf::from_items(&changes),
        })),
        pdu(ProtocolOp::DelRequest(DelRequest { dn: b"cn=a\xff,dc=x" })),
        pdu(ProtocolOp::ModifyDnRequest(ModifyDnRequest {
            entry: b"cn=a,dc=x",
            new_rdn: b"cn=b",
            delete_old_rdn: true,
            new_superior: Some(b"ou=y,dc=x"),
        })),
        pdu(ProtocolOp::CompareRequest(CompareRequest {
            entry: b"cn=a,dc=x",
            ava: AttributeValueAssertion {
                description: b"cn",
                value: b"a",
            },
        })),
        pdu(ProtocolOp::ExtendedRequest(ExtendedRequest {
            name: b"1.3.6.1.4.1.1466.20037",
            value: None,
        })),
        pdu(ProtocolOp::AbandonRequest(AbandonRequest { message_id: 1 })),
        vec![0x30, 0x03, 0x02, 0x01],
    ]
}

fn op(request: &[u8]) -> Op<'_> {
    Op {
        conn: 12,
        op: 1,
        msgid: 2,
        received: 1_795_341_600_123_456_789,
        finished: 1_795_341_601_000_000_001,
        wait_ns: 51_234,
        work_ns: 210_000,
        request_tag: 0x63,
        request,
        decoded: None,
        undecodable: false,
        response_tag: op_tag::SEARCH_RESULT_DONE,
        result: 32,
        matched: "dc=x",
        message: "no such entry\n",
        entries: 3,
        references: 0,
        bytes: 100,
        authz_dn: "uid=b,dc=x",
        target_op: 4,
        response_controls: "1.2.840.113556.1.4.319",
        notes: "UPA",
    }
}

fn write_all(out: &mut Vec<u8>, requests: &[Vec<u8>], text: &mut TimeCache, json: &mut TimeCache) {
    let peer = Some("[::ffff:10.0.0.7]:40000".parse().unwrap());
    let local = Some("[::1]:389".parse().unwrap());
    let mut events = vec![
        Event::Connect(Connect {
            conn: 12,
            time: 1_795_341_600_000_000_000,
            peer,
            local,
            fd: 64,
            ldaps: true,
        }),
        Event::Tls(Tls {
            conn: 12,
            time: 1_795_341_600_000_000_001,
            version: "TLS1.3",
            cipher: "TLS13_AES_128_GCM_SHA256",
            keysize: 128,
        }),
        Event::Refused(Refused {
            conn: 13,
            time: 1_795_341_600_000_000_002,
            peer,
            local,
            reason: "busy",
        }),
        Event::Close(Close {
            conn: 12,
            time: 1_795_341_602_000_000_000,
            op: 7,
            fd: 64,
            reason: CloseReason::Unbind,
        }),
    ];
    events.extend(requests.iter().map(|r| Event::Op(op(r))));
    // The events above allocated; only the writing is counted.
    let n = count(|| {
        for event in &events {
            format_389::write(out, event, Level::Full, text);
            format_json::write(out, event, Level::Full, json, 1_795_341_000);
        }
    });
    assert_eq!(n, 0, "writing {} events allocated {n} times", events.len());
}

#[test]
fn writing_lines_allocates_nothing_once_the_buffer_has_grown() {
    let requests = requests();
    let (mut text, mut json) = (TimeCache::new(), TimeCache::new());
    let mut out = Vec::with_capacity(1 << 16);
    write_all(&mut out, &requests, &mut text, &mut json);
    let written = out.len();
    assert!(written > 4000 && written < 1 << 16, "{written} octets");
    out.clear();
    write_all(&mut out, &requests, &mut text, &mut json);
    assert_eq!(out.len(), written);
}
