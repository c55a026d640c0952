//! Ingest throughput on the real corpus (`../shared/corpus`), with full-text indexing, into a
//! fresh archive per iteration. Criterion reports bytes per second.
//!
//! Run: `cargo bench --bench ingest`. The scale run on a generated corpus of about 1 GB, with
//! peak memory, is `benches/ingest_scale.sh`.

use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use quarry_archive::Archive;
use quarry_ingest::{IngestOptions, ingest};

fn corpus() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    dir.is_dir().then_some(dir)
}

fn corpus_bytes(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

fn bench_ingest(c: &mut Criterion) {
    let Some(dir) = corpus() else {
        eprintln!("notice: ../shared/corpus not found; nothing to measure");
        return;
    };
    let mut group = c.benchmark_group("ingest");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(corpus_bytes(&dir)));
    group.bench_function("real_corpus", |b| {
        b.iter_with_setup(
            || tempfile::tempdir().map(|d| (d.path().join("archive.db"), d)),
            |setup| {
                let Ok((path, _guard)) = setup else { return };
                let Ok(mut archive) = Archive::open(&path) else {
                    return;
                };
                let options = IngestOptions {
                    paths: vec![dir.clone()],
                    owner: None,
                    ..IngestOptions::default()
                };
                let _ = ingest(&mut archive, &options);
            },
        )
    });
    group.finish();
}

criterion_group!(benches, bench_ingest);
criterion_main!(benches);
