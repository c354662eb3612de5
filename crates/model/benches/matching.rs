//! Matching-rule benchmarks: the keys computed for every indexed value and every filter
//! assertion. Each benchmark appends to a reused buffer, as the store and the filter
//! evaluator do.
//!
//! Run: `cargo bench -p larch-model --bench matching`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use larch_model::matching::{self, SubstringPosition};
use larch_model::syntax;

fn bench_key(c: &mut Criterion, group: &str, rule: &str, values: &[(&str, &[u8])]) {
    let r = matching::lookup(rule).unwrap();
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(1));
    for (label, value) in values {
        let mut out = Vec::with_capacity(256);
        g.bench_function(*label, |b| {
            b.iter(|| {
                out.clear();
                r.normalize(black_box(value), &mut out).unwrap();
                black_box(out.len())
            })
        });
    }
    g.finish();
}

fn string_rules(c: &mut Criterion) {
    bench_key(
        c,
        "caseIgnoreMatch key",
        "caseIgnoreMatch",
        &[
            ("ascii name", b"Babs Jensen"),
            ("ascii with extra spaces", b"  Babs   Jensen  "),
            ("latin-1 accents", "Åsa Lindström-Øberg".as_bytes()),
            ("greek", "Σωκράτης Παπαδόπουλος".as_bytes()),
            ("fullwidth (NFKC work)", "Ｂａｂｓ Ｊｅｎｓｅｎ".as_bytes()),
        ],
    );
    bench_key(
        c,
        "caseIgnoreIA5Match key",
        "caseIgnoreIA5Match",
        &[("mail", b"Babs.Jensen@Example.COM")],
    );
    bench_key(
        c,
        "telephoneNumberMatch key",
        "telephoneNumberMatch",
        &[("e.123", b"+1 408 555 1212")],
    );
}

fn other_rules(c: &mut Criterion) {
    bench_key(
        c,
        "integerOrderingMatch key",
        "integerOrderingMatch",
        &[("uidNumber", b"100042"), ("negative", b"-9876543210")],
    );
    bench_key(
        c,
        "generalizedTimeMatch key",
        "generalizedTimeOrderingMatch",
        &[
            ("utc", b"20240315103000Z"),
            ("offset and fraction", b"20240315053000.25-0500"),
        ],
    );
    bench_key(
        c,
        "distinguishedNameMatch key",
        "distinguishedNameMatch",
        &[("4 RDNs", b"uid=babs,ou=People,dc=example,dc=com")],
    );
}

fn substrings(c: &mut Criterion) {
    let r = matching::lookup("caseIgnoreSubstringsMatch").unwrap();
    let mut value_key = Vec::new();
    r.normalize(b"Babs Jensen of the Example Corporation", &mut value_key)
        .unwrap();
    let mut any = Vec::new();
    r.normalize_substring(b"jen", SubstringPosition::Any, &mut any)
        .unwrap();
    let mut initial = Vec::new();
    r.normalize_substring(b"bab", SubstringPosition::Initial, &mut initial)
        .unwrap();
    let mut g = c.benchmark_group("caseIgnoreSubstringsMatch");
    g.throughput(Throughput::Elements(1));
    g.bench_function("match bab*jen*", |b| {
        b.iter(|| r.matches_substrings(black_box(&value_key), Some(&initial), &[&any], None))
    });
    let mut out = Vec::new();
    g.bench_function("prepare piece", |b| {
        b.iter(|| {
            out.clear();
            r.normalize_substring(black_box(b"Jen"), SubstringPosition::Any, &mut out)
                .unwrap();
            black_box(out.len())
        })
    });
    g.finish();
}

fn approx_and_syntax(c: &mut Criterion) {
    let mut g = c.benchmark_group("other");
    g.throughput(Throughput::Elements(1));
    let mut out = Vec::new();
    g.bench_function("approx_key name", |b| {
        b.iter(|| {
            out.clear();
            matching::approx_key(black_box(b"Babs Jensen"), &mut out);
            black_box(out.len())
        })
    });
    let dn = syntax::lookup("1.3.6.1.4.1.1466.115.121.1.12").unwrap();
    g.bench_function("validate DN syntax", |b| {
        b.iter(|| dn.validate(black_box(b"uid=babs,ou=People,dc=example,dc=com")))
    });
    let time = syntax::lookup("1.3.6.1.4.1.1466.115.121.1.24").unwrap();
    g.bench_function("validate Generalized Time", |b| {
        b.iter(|| time.validate(black_box(b"20240315103000Z")))
    });
    g.finish();
}

criterion_group!(benches, string_rules, other_rules, substrings, approx_and_syntax);
criterion_main!(benches);
