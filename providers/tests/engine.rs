//! The SQLite TableProviders through a real DataFusion `SessionContext`, checked against the same
//! questions asked of SQLite directly.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use datafusion::arrow::array::{Array, Int64Array, StringArray};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{SessionConfig, SessionContext};
use quarry_archive::Archive;
use quarry_providers::sqlite::register_archive;

/// 2026-01-01T00:00:00Z in epoch milliseconds.
const T0: i64 = 1_767_225_600_000;

/// An archive with `n` messages over a few sessions, roles and word counts (deterministic).
fn archive(n: i64) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("archive.db");
    let mut archive = Archive::open(&path).unwrap();
    let tx = archive.conn_mut().transaction().unwrap();
    {
        let mut stmt = tx
            .prepare(
                "INSERT INTO messages (message_id, session_id, position, role, type, material_origin, word_count, input_tokens, text, is_sidechain, turn_committed, occurred_at_ms)
                 VALUES (?1, ?2, ?3, ?4, 'text', 'model', ?5, ?8, ?6, 0, ?7, ?9)",
            )
            .unwrap();
        for i in 0..n {
            let role = ["user", "assistant", "Assistant", "tool"][(i % 4) as usize];
            let words = if i % 10 == 0 {
                None
            } else {
                Some((i * 7919) % 1000)
            };
            let committed = if i % 3 == 0 { None } else { Some(i % 2 == 0) };
            stmt.execute(rusqlite::params![
                format!("s{}/m{i}", i % 13),
                format!("s{}", i % 13),
                i,
                role,
                (i * 7919) % 1000,
                format!("text {i} ünïcode"),
                committed,
                words,
                // Every 7th message has no time; the others one a minute from 2026-01-01.
                (i % 7 != 0).then_some(T0 + i * 60_000)
            ])
            .unwrap();
        }
        // Numbered as the ingest numbers them (the provider finds a session's rows by number).
        tx.execute_batch(
            "INSERT INTO session_numbers (session_id) SELECT DISTINCT session_id FROM messages;
             UPDATE messages SET session_num =
                 (SELECT session_num FROM session_numbers n WHERE n.session_id = messages.session_id);",
        )
        .unwrap();
    }
    tx.commit().unwrap();
    (dir, path)
}

fn context(path: &std::path::Path, partitions: usize) -> SessionContext {
    let ctx =
        SessionContext::new_with_config(SessionConfig::new().with_target_partitions(partitions));
    register_archive(&ctx, path).unwrap();
    ctx
}

fn sqlite_i64(path: &std::path::Path, sql: &str) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

async fn df_i64(ctx: &SessionContext, sql: &str) -> i64 {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let batch = batches.iter().find(|b| b.num_rows() > 0).unwrap();
    batch
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
        .value(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_and_filters_match_sqlite_across_partitions() {
    let (_dir, path) = archive(200_003);
    for partitions in [1, 2, 4] {
        let ctx = context(&path, partitions);
        for (df, sqlite) in [
            (
                "SELECT COUNT(*) FROM messages",
                "SELECT COUNT(*) FROM messages",
            ),
            (
                "SELECT COUNT(*) FROM messages WHERE role = 'assistant'",
                "SELECT COUNT(*) FROM messages WHERE role = 'assistant'",
            ),
            (
                "SELECT COUNT(*) FROM messages WHERE role LIKE 'A%'",
                "SELECT COUNT(*) FROM messages WHERE role GLOB 'A*'",
            ),
            (
                "SELECT COUNT(*) FROM messages WHERE role ILIKE 'a%'",
                "SELECT COUNT(*) FROM messages WHERE lower(role) GLOB 'a*'",
            ),
            (
                "SELECT COUNT(*) FROM messages WHERE input_tokens IS NULL",
                "SELECT COUNT(*) FROM messages WHERE input_tokens IS NULL",
            ),
            (
                "SELECT SUM(input_tokens) FROM messages WHERE input_tokens > 300",
                "SELECT SUM(input_tokens) FROM messages WHERE input_tokens > 300",
            ),
            (
                "SELECT COUNT(*) FROM messages WHERE word_count BETWEEN 100 AND 200 OR role IN ('tool')",
                "SELECT COUNT(*) FROM messages WHERE word_count BETWEEN 100 AND 200 OR role IN ('tool')",
            ),
            (
                "SELECT COUNT(*) FROM messages WHERE NOT (word_count > 500)",
                "SELECT COUNT(*) FROM messages WHERE NOT (word_count > 500)",
            ),
            (
                "SELECT COUNT(*) FROM messages WHERE turn_committed",
                "SELECT COUNT(*) FROM messages WHERE turn_committed = 1",
            ),
            (
                "SELECT COUNT(*) FROM messages WHERE turn_committed IS NOT TRUE",
                "SELECT COUNT(*) FROM messages WHERE turn_committed IS NOT 1",
            ),
            (
                "SELECT SUM(word_count) FROM messages",
                "SELECT SUM(word_count) FROM messages",
            ),
            // A session's rows, found by the session's number (the scan's own rewrite).
            (
                "SELECT COUNT(*) FROM messages WHERE session_id = 's3'",
                "SELECT COUNT(*) FROM messages WHERE session_id = 's3'",
            ),
            (
                "SELECT SUM(word_count) FROM messages WHERE session_id IN ('s1', 's12', 'none')",
                "SELECT SUM(word_count) FROM messages WHERE session_id IN ('s1', 's12', 'none')",
            ),
            (
                "SELECT COUNT(*) FROM messages WHERE session_id = 'none'",
                "SELECT COUNT(*) FROM messages WHERE session_id = 'none'",
            ),
            (
                "SELECT COUNT(*) FROM messages WHERE session_id <> 's3' AND session_id NOT IN ('s4')",
                "SELECT COUNT(*) FROM messages WHERE session_id <> 's3' AND session_id NOT IN ('s4')",
            ),
            (
                "SELECT COUNT(DISTINCT session_id) FROM messages WHERE upper(text) LIKE '%ÜNÏCODE'",
                "SELECT COUNT(DISTINCT session_id) FROM messages",
            ),
        ] {
            assert_eq!(
                df_i64(&ctx, df).await,
                sqlite_i64(&path, sqlite),
                "{df} with {partitions} partitions"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_shows_projection_filter_and_limit_in_the_scan() {
    let (_dir, path) = archive(1000);
    let ctx = context(&path, 2);
    let plan = ctx
        .sql("EXPLAIN SELECT message_id FROM messages WHERE role = 'assistant' AND word_count > 10 LIMIT 5")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let text = pretty_format_batches(&plan).unwrap().to_string();
    let scan = text
        .lines()
        .find(|l| l.contains("SqliteScanExec"))
        .expect(&text);
    assert!(
        scan.contains("where=((\"role\" = ?) AND (\"word_count\" > ?))")
            || scan.contains("where=(\"role\" = ?) AND (\"word_count\" > ?)"),
        "{scan}"
    );
    assert!(scan.contains("limit=5"), "{scan}");
    // A session's rows are found by its number, through the index.
    let plan = ctx
        .sql("EXPLAIN SELECT message_id FROM messages WHERE session_id = 's3'")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let text = pretty_format_batches(&plan).unwrap().to_string();
    assert!(
        text.contains(
            "\"session_num\" IN (SELECT session_num FROM session_numbers WHERE session_id = ?)"
        ),
        "{text}"
    );
    assert!(
        !scan.contains("text"),
        "only the needed columns are read: {scan}"
    );
    // Large tables split into rowid ranges.
    let (_dir2, big) = archive(150_000);
    let ctx = context(&big, 2);
    let plan = ctx
        .sql("EXPLAIN SELECT COUNT(*) FROM messages")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let text = pretty_format_batches(&plan).unwrap().to_string();
    assert!(text.contains("partitions=2"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_catalog_table_scans() {
    let (_dir, path) = archive(10);
    let ctx = context(&path, 2);
    for def in quarry_schema::CATALOG {
        let batches = ctx
            .sql(&format!("SELECT * FROM {}", def.name))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        let expected = sqlite_i64(&path, &format!("SELECT COUNT(*) FROM {}", def.name));
        assert_eq!(rows as i64, expected, "{}", def.name);
    }
    let batches = ctx
        .sql("SELECT role FROM messages ORDER BY position LIMIT 2")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let roles = batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    assert_eq!(roles.len(), 2);
    assert_eq!(roles.value(1), "assistant");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_columns_are_utc_timestamps_and_time_filters_push_down() {
    use datafusion::arrow::array::TimestampMillisecondArray;
    use datafusion::arrow::datatypes::{DataType, TimeUnit};
    let (_dir, path) = archive(1000);
    let ctx = context(&path, 2);
    let batches = ctx
        .sql("SELECT occurred_at_ms FROM messages WHERE position = 1")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let column = batches[0].column(0);
    assert_eq!(
        column.data_type(),
        &DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
    );
    let times = column
        .as_any()
        .downcast_ref::<TimestampMillisecondArray>()
        .unwrap();
    assert_eq!(times.value(0), T0 + 60_000);
    for (df, sqlite) in [
        (
            "SELECT COUNT(*) FROM messages WHERE occurred_at_ms >= TIMESTAMP '2026-01-01T05:00:00Z'",
            format!(
                "SELECT COUNT(*) FROM messages WHERE occurred_at_ms >= {}",
                T0 + 5 * 3_600_000
            ),
        ),
        (
            "SELECT COUNT(*) FROM messages WHERE occurred_at_ms < TIMESTAMP '2026-01-01T07:00:00+02:00'",
            format!(
                "SELECT COUNT(*) FROM messages WHERE occurred_at_ms < {}",
                T0 + 5 * 3_600_000
            ),
        ),
        (
            "SELECT COUNT(*) FROM messages WHERE occurred_at_ms IS NULL",
            "SELECT COUNT(*) FROM messages WHERE occurred_at_ms IS NULL".to_string(),
        ),
    ] {
        assert_eq!(df_i64(&ctx, df).await, sqlite_i64(&path, &sqlite), "{df}");
        let plan = ctx
            .sql(&format!("EXPLAIN {df}"))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let text = pretty_format_batches(&plan).unwrap().to_string();
        assert!(
            text.lines()
                .any(|l| l.contains("SqliteScanExec") && l.contains("where=")),
            "the time filter is pushed into the scan: {text}"
        );
        assert!(
            !text.contains("FilterExec"),
            "and exactly (no filter left above it): {text}"
        );
    }
}
