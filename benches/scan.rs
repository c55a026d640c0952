//! Provider scan throughput: rows per second that the SQLite `TableProvider` of `messages`
//! delivers to DataFusion, for a narrow scan (two integer columns), a wide one (every column of
//! the benchmark's Parquet export, text included) and a scan with a filter pushed into SQLite.
//! The archive is 200,000 generated lean messages (`quarry gen --lean`), built once per run in
//! a temporary folder. Criterion reports rows per second (elements).
//!
//! Run: `cargo bench --bench scan`. The same scans at 1M and 10M messages, against DuckDB on
//! Parquet, are `benches/compare` (docs/benchmarks.md).

use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use quarry_archive::Archive;
use quarry_ingest::{IngestOptions, ingest};

const MESSAGES: u64 = 200_000;

/// Builds the archive; `None` (with a notice) when it cannot.
fn build(dir: &Path) -> Option<std::path::PathBuf> {
    let corpus = dir.join("corpus");
    let size = quarry_synth::Size::Messages(MESSAGES);
    if let Err(e) = quarry_synth::generate(&corpus, size, quarry_synth::Shape::Lean, 5) {
        eprintln!("notice: cannot generate the corpus: {e}");
        return None;
    }
    let path = dir.join("archive.db");
    let mut archive = Archive::open(&path).ok()?;
    let options = IngestOptions {
        paths: vec![corpus],
        ..IngestOptions::default()
    };
    ingest(&mut archive, &options).ok()?;
    Some(path)
}

/// Rows the query's stream delivers (the batches are dropped as they come).
async fn scan(ctx: &SessionContext, sql: &str) -> usize {
    let Ok(frame) = ctx.sql(sql).await else {
        return 0;
    };
    let Ok(mut stream) = frame.execute_stream().await else {
        return 0;
    };
    let mut rows = 0;
    while let Some(Ok(batch)) = stream.next().await {
        rows += batch.num_rows();
    }
    rows
}

fn bench_scan(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let Some(path) = build(dir.path()) else {
        return;
    };
    let Ok(rt) = tokio::runtime::Runtime::new() else {
        return;
    };
    let ctx = SessionContext::new();
    if let Err(e) = quarry_providers::sqlite::register_archive(&ctx, &path) {
        eprintln!("notice: cannot open the archive: {e}");
        return;
    }
    let scans = [
        ("narrow", "SELECT position, word_count FROM messages"),
        (
            "wide",
            "SELECT message_id, session_id, position, role, type, model, occurred_at_ms, \
             word_count, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, text \
             FROM messages",
        ),
        (
            "filtered",
            "SELECT word_count FROM messages WHERE role = 'assistant'",
        ),
    ];
    let mut group = c.benchmark_group("sqlite_scan");
    group.sample_size(10);
    for (name, sql) in scans {
        let rows = rt.block_on(scan(&ctx, sql));
        if rows == 0 {
            eprintln!("notice: {name} scanned no rows; skipped");
            continue;
        }
        group.throughput(Throughput::Elements(rows as u64));
        group.bench_function(format!("{name} ({rows} rows)"), |b| {
            b.iter(|| rt.block_on(scan(&ctx, sql)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_scan);
criterion_main!(benches);
