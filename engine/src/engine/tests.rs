//! The engine scans each table reference once: an aggregate's `input_rows` is counted as its
//! input flows, not by running the input a second time. Checked with a provider that counts
//! its `scan` calls, wrapped around the archive's own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::Result;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use futures::StreamExt;

use super::{Engine, Session as QuarrySession};
use crate::audit::Caller;
use crate::request::{Caps, Options};
use crate::scope::Scope;

/// A provider that counts how often it is scanned.
#[derive(Debug)]
struct CountingScans {
    inner: Arc<dyn TableProvider>,
    scans: Arc<AtomicUsize>,
}

#[async_trait]
impl TableProvider for CountingScans {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.scans.fetch_add(1, Ordering::SeqCst);
        self.inner.scan(state, projection, filters, limit).await
    }
}

/// A small generated archive (no corpus needed).
fn archive(dir: &std::path::Path) -> std::path::PathBuf {
    let corpus = dir.join("corpus");
    quarry_synth::generate(
        &corpus,
        quarry_synth::Size::Sessions(12),
        quarry_synth::Shape::Realistic,
        5,
    )
    .unwrap();
    let path = dir.join("archive.db");
    let mut archive = quarry_archive::Archive::open(&path).unwrap();
    quarry_ingest::ingest(
        &mut archive,
        &quarry_ingest::IngestOptions {
            paths: vec![corpus],
            owner: Some("test".into()),
            ..Default::default()
        },
    )
    .unwrap();
    path
}

fn sqlite_count(path: &std::path::Path, sql: &str) -> u64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aggregate_scans_its_table_once_and_counts_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let path = archive(dir.path());
    let engine = Arc::new(Engine::open(&Options::new(&path)).unwrap());
    let session = engine
        .session(Scope::Admin, Caller::default())
        .await
        .unwrap();
    let scans = Arc::new(AtomicUsize::new(0));
    let inner = session.table("messages").unwrap();
    let engine = session
        .with_table(
            "messages",
            Arc::new(CountingScans {
                inner,
                scans: Arc::clone(&scans),
            }),
        )
        .unwrap();
    let cases = [
        (
            "messages | group by role | agg count, avg:word_count, p90:word_count",
            "SELECT COUNT(*) FROM messages",
        ),
        (
            "messages | agg count, p50:word_count, p90:word_count, p99:word_count",
            "SELECT COUNT(*) FROM messages",
        ),
        (
            "messages where role:assistant | group by model | count | sort by count desc | limit 1",
            "SELECT COUNT(*) FROM messages WHERE role = 'assistant'",
        ),
    ];
    for (query, oracle) in cases {
        scans.store(0, Ordering::SeqCst);
        let mut stream = engine.query(query, Caps::default()).await.unwrap();
        assert!(stream.meta().aggregate, "{query}");
        assert!(stream.completion().is_none(), "unknown before the end");
        while let Some(batch) = stream.next().await {
            batch.unwrap();
        }
        let completion = stream.completion().unwrap();
        assert_eq!(
            scans.load(Ordering::SeqCst),
            1,
            "{query}: one scan of messages"
        );
        let want = sqlite_count(&path, oracle);
        assert!(want > 0);
        assert_eq!(completion.input_rows, Some(want), "{query}");
    }
    // A cap that cuts the groups still counts every input row, and says it cut.
    let answer = capped(&engine, "messages | group by session_id | count", 2).await;
    assert_eq!(answer.num_rows(), 2);
    assert!(answer.truncated);
    assert_eq!(
        answer.input_rows,
        Some(sqlite_count(&path, "SELECT COUNT(*) FROM messages"))
    );
    // Rows, not groups: no input count, and a cap that does not cut is not `truncated`.
    let answer = capped(&engine, "messages | limit 3", 5).await;
    assert_eq!(
        (answer.num_rows(), answer.truncated, answer.input_rows),
        (3, false, None)
    );
}

/// The answer of `query` under a caller's cap of `limit` rows.
async fn capped(engine: &QuarrySession, query: &str, limit: usize) -> crate::answer::QueryResult {
    let caps = Caps {
        limit: Some(limit),
        offset: None,
    };
    let stream = engine.query(query, caps).await.unwrap();
    stream.collect().await.unwrap()
}
