//! Parse + resolve each conformance positive (`../shared/conformance/polylogue-positive.tsv`);
//! the mean per query must stay under 20 µs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn positives() -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/conformance/polylogue-positive.tsv");
    match std::fs::read_to_string(&path) {
        Ok(text) => text
            .lines()
            .skip(1)
            .filter_map(|l| l.split('\t').nth(1).map(str::to_string))
            .collect(),
        Err(_) => {
            eprintln!(
                "notice: {} missing; benchmarking the completion examples",
                path.display()
            );
            quarry_grammar::complete::examples()
                .into_iter()
                .map(|e| e.query)
                .collect()
        }
    }
}

fn bench(c: &mut Criterion) {
    let queries = positives();
    for q in &queries {
        assert!(quarry_grammar::check(q).is_ok(), "{q}");
    }
    let n = queries.len();
    let mut group = c.benchmark_group("grammar");
    // Throughput in elements: criterion also reports queries per second; time / n is per query.
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(format!("parse+resolve {n} positives"), |b| {
        b.iter(|| {
            for q in &queries {
                black_box(quarry_grammar::check(black_box(q)).is_ok());
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
