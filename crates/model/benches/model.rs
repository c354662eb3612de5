//! Model benchmarks: DN normalization and filter evaluation, the per-request and
//! per-candidate costs of a search. Figures and the command are in docs/benchmarks.md.
//!
//! Run: `cargo bench -p larch-model --bench model`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use larch_model::dn::{Dn, NormDn};
use larch_model::entry::Entry;
use larch_model::filter::CompiledFilter;
use larch_model::schema::Schema;
use larch_proto::{AddRequest, OwnedFilter, PartialAttribute, SeqOf};

/// The codec benchmark's sample PDUs: the same DN and 22-attribute inetOrgPerson.
#[path = "../../proto/tests/common/samples.rs"]
mod samples;

use samples::{ENTRY_ATTRIBUTES as ATTRIBUTES, ENTRY_DN as DN};

fn dn_normalize(c: &mut Criterion) {
    let schema = Schema::builtin().unwrap();
    let mut g = c.benchmark_group("DN uid=user.12345,ou=People,dc=example,dc=com");
    g.bench_function("parse", |b| b.iter(|| Dn::parse(black_box(DN)).unwrap()));
    let dn = Dn::parse(DN).unwrap();
    g.bench_function("normalize (parsed)", |b| {
        b.iter(|| NormDn::normalize(black_box(&dn), &schema).unwrap())
    });
    g.bench_function("parse + normalize", |b| {
        b.iter(|| NormDn::parse(black_box(DN), &schema).unwrap())
    });
    g.bench_function("normalize from text (no Dn)", |b| {
        b.iter(|| NormDn::from_text(black_box(DN), &schema).unwrap())
    });
    g.finish();
}

fn filter_eval(c: &mut Criterion) {
    let schema = Schema::builtin().unwrap();
    let values: Vec<Vec<&[u8]>> = ATTRIBUTES
        .iter()
        .map(|(_, vs)| vs.iter().map(|v| v.as_bytes()).collect())
        .collect();
    let attrs: Vec<PartialAttribute<'_>> = ATTRIBUTES
        .iter()
        .zip(&values)
        .map(|((d, _), vs)| PartialAttribute {
            description: d.as_bytes(),
            values: SeqOf::from_items(vs),
        })
        .collect();
    let entry = Entry::from_add_request(
        &AddRequest {
            entry: DN,
            attributes: SeqOf::from_items(&attrs),
        },
        &schema,
    )
    .unwrap();
    let stored = entry.to_stored();
    let mut scratch = Vec::with_capacity(256);
    let mut g = c.benchmark_group("filter on a 22-attribute entry");
    for (name, text) in [
        (
            "(&(objectClass=inetOrgPerson)(cn=Some Name)) false",
            "(&(objectClass=inetOrgPerson)(cn=Some Name))",
        ),
        (
            "(&(objectClass=inetOrgPerson)(cn=Aaren Atp)) true",
            "(&(objectClass=inetOrgPerson)(cn=Aaren Atp))",
        ),
    ] {
        let f = OwnedFilter::parse(text).unwrap();
        let compiled = CompiledFilter::compile(f.as_filter(), &schema);
        g.bench_function(format!("evaluate {name}"), |b| {
            b.iter(|| compiled.evaluate(black_box(stored.as_ref()), Some(&entry.dn), &schema, &mut scratch))
        });
    }
    let mut out = Vec::with_capacity(2048);
    g.bench_function("write all attributes as BER from the stored form", |b| {
        b.iter(|| {
            out.clear();
            black_box(stored.as_ref()).write_attributes_ber(&schema, &mut out);
            out.len()
        })
    });
    let f = OwnedFilter::parse("(&(objectClass=inetOrgPerson)(cn=Some Name))").unwrap();
    g.bench_function("compile (&(objectClass=inetOrgPerson)(cn=Some Name))", |b| {
        b.iter(|| CompiledFilter::compile(black_box(f.as_filter()), &schema))
    });
    g.finish();
}

criterion_group!(benches, dn_normalize, filter_eval);
criterion_main!(benches);
