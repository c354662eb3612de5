//! Codec benchmarks: the PDUs a search-heavy directory handles most, decoded and encoded by
//! larch-proto, and the same octets decoded and encoded by rasn-ldap and ldap-parser for
//! comparison. Figures and the command are in docs/benchmarks.md.
//!
//! Run: `cargo bench -p larch-proto --bench codec`

#[path = "../tests/common/samples.rs"]
mod samples;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use larch_proto::{encode_search_result_entry, LdapMessage};

fn search_request(c: &mut Criterion) {
    let pdu = samples::search_request();
    let mut g = c.benchmark_group("decode SearchRequest");
    g.throughput(Throughput::Elements(1));
    g.bench_function("larch-proto decode", |b| {
        b.iter(|| LdapMessage::decode(black_box(&pdu)).unwrap())
    });
    g.bench_function("larch-proto decode+walk", |b| {
        b.iter(|| samples::walk(&LdapMessage::decode(black_box(&pdu)).unwrap()))
    });
    g.bench_function("rasn-ldap decode", |b| {
        b.iter(|| rasn::ber::decode::<rasn_ldap::LdapMessage>(black_box(&pdu)).unwrap())
    });
    g.bench_function("ldap-parser decode", |b| {
        b.iter(|| {
            <ldap_parser::ldap::LdapMessage as ldap_parser::FromBer<ldap_parser::error::LdapError>>::from_ber(
                black_box(&pdu),
            )
            .unwrap()
        })
    });
    g.finish();
}

fn search_result_entry(c: &mut Criterion) {
    let pdu = samples::search_result_entry();
    let stored = samples::stored_attributes(&pdu);
    let mut g = c.benchmark_group(format!("SearchResultEntry ({} octets, 22 attributes)", pdu.len()));
    g.throughput(Throughput::Elements(1));
    g.bench_function("larch-proto decode+walk", |b| {
        b.iter(|| samples::walk(&LdapMessage::decode(black_box(&pdu)).unwrap()))
    });
    g.bench_function("rasn-ldap decode", |b| {
        b.iter(|| rasn::ber::decode::<rasn_ldap::LdapMessage>(black_box(&pdu)).unwrap())
    });
    g.bench_function("ldap-parser decode", |b| {
        b.iter(|| {
            <ldap_parser::ldap::LdapMessage as ldap_parser::FromBer<ldap_parser::error::LdapError>>::from_ber(
                black_box(&pdu),
            )
            .unwrap()
        })
    });

    let mut out = Vec::with_capacity(4096);
    g.bench_function("larch-proto encode from stored BER", |b| {
        b.iter(|| {
            out.clear();
            encode_search_result_entry(
                &mut out,
                black_box(12345),
                black_box(samples::ENTRY_DN),
                black_box(&stored),
            );
            out.len()
        })
    });
    let decoded = LdapMessage::decode(&pdu).unwrap();
    g.bench_function("larch-proto encode (generic)", |b| {
        b.iter(|| {
            out.clear();
            black_box(&decoded).encode(&mut out);
            out.len()
        })
    });
    let rasn_msg = rasn::ber::decode::<rasn_ldap::LdapMessage>(&pdu).unwrap();
    g.bench_function("rasn-ldap encode", |b| {
        b.iter(|| rasn::ber::encode(black_box(&rasn_msg)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, search_request, search_result_entry);
criterion_main!(benches);
