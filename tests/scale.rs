//! Scale checks, ignored by default (they generate and ingest about a million messages):
//!
//! ```text
//! cargo test --release --test integration -- --ignored scale
//! ```
//!
//! `QUARRY_SCALE_ARCHIVE=PATH` runs them on an existing archive (e.g. one `benches/scale.sh`
//! built) instead of generating one.

use std::path::PathBuf;

use quarry::Caps;
use serde_json::Value;

use crate::support::oracle::nearest_rank;
use crate::support::rows::{json_rows, sql_rows};
use crate::support::{engine, runtime};

/// The archive to check: `QUARRY_SCALE_ARCHIVE`, or 1,000,000 generated lean messages.
fn archive(dir: &tempfile::TempDir) -> PathBuf {
    if let Some(path) = std::env::var_os("QUARRY_SCALE_ARCHIVE") {
        return PathBuf::from(path);
    }
    let corpus = dir.path().join("corpus");
    quarry_synth::generate(
        &corpus,
        quarry_synth::Size::Messages(1_000_000),
        quarry_synth::Shape::Lean,
        3,
    )
    .unwrap();
    let path = dir.path().join("archive.db");
    let mut archive = quarry_archive::Archive::open(&path).unwrap();
    quarry_ingest::ingest(
        &mut archive,
        &quarry_ingest::IngestOptions {
            paths: vec![corpus],
            owner: None,
            ..Default::default()
        },
    )
    .unwrap();
    path
}

#[test]
#[ignore = "generates and ingests 1,000,000 messages; see the module docs"]
fn scale_percentiles_over_a_million_messages_equal_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let archive = archive(&dir);
    // The oracle: every word count, read by rusqlite and sorted here.
    let mut values: Vec<f64> = sql_rows(&archive, "SELECT word_count FROM messages")
        .into_iter()
        .map(|r| r[0].as_f64().unwrap())
        .collect();
    assert!(values.len() >= 1_000_000, "{} messages", values.len());
    values.sort_by(f64::total_cmp);
    let rt = runtime();
    let engine = engine(&archive);
    let answer = rt
        .block_on(engine.query_collect(
            "messages | agg count, p50:word_count, p90:word_count, p99:word_count",
            Caps::default(),
        ))
        .unwrap();
    let envelope = serde_json::to_value(quarry::output::Envelope::new(&answer).unwrap()).unwrap();
    assert_eq!(envelope["exact"], Value::Bool(true));
    assert_eq!(envelope["input_rows"], Value::from(values.len()));
    let row = &json_rows(&answer.batches)[0];
    assert_eq!(row[0].as_u64(), Some(values.len() as u64));
    for (i, p) in [50, 90, 99].into_iter().enumerate() {
        let want = nearest_rank(&values, p).unwrap();
        assert_eq!(row[1 + i].as_f64(), Some(want), "p{p}");
    }
    eprintln!(
        "{} messages: count, p50, p90, p99 = {:?}",
        values.len(),
        row
    );
}
