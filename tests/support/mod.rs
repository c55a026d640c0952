//! Shared helpers of the integration tests: locating `../shared`, running the binary, opening
//! and ingesting archives, an engine to ask; rows and their comparison ([`rows`]), the question
//! files of `tests/queries/` ([`questions`]) and the oracle functions computed in Rust
//! ([`oracle`]), which the differential test and the fuzzer share.

pub mod oracle;
pub mod questions;
pub mod rows;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `../shared` beside the checkout, or `None` (with a notice) when it is absent outside CI.
/// Under `CI=true` a missing folder fails the test.
pub fn shared() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("shared");
    if dir.join("corpus").is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("../shared/corpus is missing under CI: {}", dir.display());
    }
    eprintln!("notice: {} not found; skipping this test", dir.display());
    None
}

/// The corpus folder.
pub fn corpus() -> Option<PathBuf> {
    shared().map(|s| s.join("corpus"))
}

/// Runs the quarry binary with `args`.
pub fn quarry(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(args)
        .env_remove("QUARRY_ARCHIVE")
        .output()
        .expect("run quarry")
}

/// Runs quarry and parses its stdout as JSON, asserting success.
pub fn quarry_json(args: &[&str]) -> serde_json::Value {
    let out = quarry(args);
    assert!(
        out.status.success(),
        "quarry {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// SQL taking an archive of schema version 11 back to version 10: `actions`, `observed_events`
/// and `files` indexed by the session id again, without their session numbers (`user_version`
/// is left to the caller).
pub const UNDO_VERSION_11: &str = "DROP INDEX actions_session;
     ALTER TABLE actions DROP COLUMN session_num;
     CREATE INDEX actions_session ON actions (session_id);
     DROP INDEX observed_events_session;
     ALTER TABLE observed_events DROP COLUMN session_num;
     CREATE INDEX observed_events_session ON observed_events (session_id);
     DROP INDEX files_session;
     ALTER TABLE files DROP COLUMN session_num;
     CREATE INDEX files_session ON files (session_id);";

/// SQL taking an archive of schema version 10 back to version 9: the session numbers removed
/// and the per-session indexes keyed by the session id again (`user_version` is left to the
/// caller).
pub const UNDO_VERSION_10: &str = "DROP VIEW events;
     DROP INDEX messages_session;
     ALTER TABLE messages DROP COLUMN session_num;
     CREATE INDEX messages_session ON messages (session_id);
     DROP INDEX blocks_session;
     ALTER TABLE blocks DROP COLUMN session_num;
     CREATE INDEX blocks_session ON blocks (session_id);
     DROP INDEX events_raw_session;
     ALTER TABLE events_raw DROP COLUMN session_num;
     CREATE INDEX events_raw_session ON events_raw (session_id);
     DROP INDEX turns_session;
     ALTER TABLE turns DROP COLUMN session_num;
     CREATE INDEX turns_session ON turns (session_id);
     DROP INDEX usage_session;
     ALTER TABLE usage DROP COLUMN session_num;
     CREATE INDEX usage_session ON usage (session_id);
     DROP INDEX usage_records_record;
     ALTER TABLE usage_records DROP COLUMN session_num;
     CREATE UNIQUE INDEX usage_records_record
         ON usage_records (session_id, response_key, recorded_via);
     CREATE VIEW events AS
         SELECT session_id, seq, type, time, surface, turn_id, payload, replaced_by, source_seqs
         FROM events_raw
         WHERE turn_id IS NULL OR turn_committed = 1;
     DROP TABLE session_numbers;";

/// SQL taking an archive of schema version 8 back to version 7: the chunk chain's columns and
/// the resume states removed (`user_version` is left to the caller).
pub const UNDO_VERSION_8: &str = "ALTER TABLE source_files DROP COLUMN chunks;
     ALTER TABLE source_files DROP COLUMN file_id;
     DROP TABLE source_resume;";

/// SQL taking an archive of schema version 7 back to version 6: the turn's duration removed
/// (`user_version` is left to the caller).
pub const UNDO_VERSION_7: &str = "ALTER TABLE turns DROP COLUMN duration_ms;";

/// SQL taking an archive of schema version 6 back to version 5: the assertion lifecycle's
/// index and columns removed (`user_version` is left to the caller).
pub const UNDO_VERSION_6: &str = "DROP INDEX assertions_session;
     ALTER TABLE assertions DROP COLUMN session_id;
     ALTER TABLE assertions DROP COLUMN message_id;
     ALTER TABLE assertions DROP COLUMN supersedes;
     ALTER TABLE assertions DROP COLUMN context_policy;
     ALTER TABLE assertions DROP COLUMN staleness;
     ALTER TABLE assertions DROP COLUMN original_status;";

/// Generates a corpus of `sessions` sessions from `seed` into `out` (`quarry gen`) and returns
/// its report.
pub fn generate(out: &Path, sessions: usize, seed: u64) -> serde_json::Value {
    quarry_json(&[
        "--format",
        "json",
        "gen",
        "--sessions",
        &sessions.to_string(),
        "--seed",
        &seed.to_string(),
        "--out",
        out.to_str().expect("a UTF-8 path"),
    ])
}

/// Ingests `paths` into `archive` with `--format json` and returns the summary.
pub fn ingest(archive: &Path, paths: &[&Path]) -> serde_json::Value {
    ingest_with(archive, &[], paths)
}

/// [`ingest`] with more ingest flags (`--machine NAME`, `--replace PATH`).
pub fn ingest_with(archive: &Path, flags: &[&str], paths: &[&Path]) -> serde_json::Value {
    let mut args = vec![
        "--archive".to_string(),
        archive.display().to_string(),
        "--format".into(),
        "json".into(),
        "ingest".into(),
    ];
    args.extend(flags.iter().map(|f| f.to_string()));
    args.extend(paths.iter().map(|p| p.display().to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    quarry_json(&refs)
}

/// Appends `bytes` to `file` (created if need be), as an agent writing its transcript does.
pub fn append_bytes(file: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .expect("open for append");
    out.write_all(bytes).expect("append");
}

/// A read-only connection to an archive.
pub fn open(archive: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(archive, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open archive")
}

/// One integer from a query.
pub fn scalar(conn: &rusqlite::Connection, sql: &str, params: impl rusqlite::Params) -> i64 {
    conn.query_row(sql, params, |r| r.get::<_, Option<i64>>(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .unwrap_or(0)
}

/// The one text value `sql` answers.
pub fn text(conn: &rusqlite::Connection, sql: &str, params: impl rusqlite::Params) -> String {
    conn.query_row(sql, params, |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Row counts of every archive table.
pub fn table_counts(conn: &rusqlite::Connection) -> Vec<(String, i64)> {
    quarry_schema::CATALOG
        .iter()
        .map(|t| {
            (
                t.name.to_string(),
                scalar(conn, &format!("SELECT COUNT(*) FROM {}", t.name), []),
            )
        })
        .collect()
}

/// Asserts that every row of every numbered table carries its session's number
/// (`session_numbers`), and that each number names one session.
pub fn assert_numbered(conn: &rusqlite::Connection) {
    for table in quarry_schema::TABLES.iter().filter(|t| t.numbered()) {
        let wrong = scalar(
            conn,
            &format!(
                "SELECT COUNT(*) FROM {} t WHERE t.session_num IS NOT
                     (SELECT n.session_num FROM session_numbers n WHERE n.session_id = t.session_id)",
                table.name
            ),
            [],
        );
        assert_eq!(
            wrong, 0,
            "{}: rows without their session's number",
            table.name
        );
    }
    let numbers = scalar(
        conn,
        "SELECT COUNT(DISTINCT session_num) FROM session_numbers",
        [],
    );
    let ids = scalar(
        conn,
        "SELECT COUNT(DISTINCT session_id) FROM session_numbers",
        [],
    );
    let all = scalar(conn, "SELECT COUNT(*) FROM session_numbers", []);
    assert_eq!((numbers, ids), (all, all), "session numbers one to one");
}

/// Each session id with its number (`session_numbers`), in the numbers' order.
pub fn session_numbers(conn: &rusqlite::Connection) -> Vec<(String, i64)> {
    conn.prepare("SELECT session_id, session_num FROM session_numbers ORDER BY session_num")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A runtime with two workers, as on the CI machine.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// An engine in UTC over the archive at `path` (the time-bucket oracles of the question files
/// are UTC).
pub fn engine(path: &Path) -> quarry::Quarry {
    let mut options = quarry::Options::new(path);
    options.tz = Some("UTC".into());
    quarry::Quarry::open(&options).unwrap()
}

/// Ingests `paths` through the library into a new archive in `dir`.
pub fn ingest_into(dir: &Path, paths: Vec<PathBuf>) -> PathBuf {
    let path = dir.join("archive.db");
    let mut archive = quarry_archive::Archive::open(&path).unwrap();
    quarry_ingest::ingest(
        &mut archive,
        &quarry_ingest::IngestOptions {
            paths,
            owner: Some("test".into()),
            ..Default::default()
        },
    )
    .unwrap();
    path
}

/// One archive of the whole corpus, shared by the tests that only read it.
pub fn corpus_archive() -> Option<&'static PathBuf> {
    static ARCHIVE: std::sync::OnceLock<Option<(tempfile::TempDir, PathBuf)>> =
        std::sync::OnceLock::new();
    ARCHIVE
        .get_or_init(|| {
            let corpus = corpus()?;
            let dir = tempfile::tempdir().unwrap();
            let path = ingest_into(dir.path(), vec![corpus]);
            Some((dir, path))
        })
        .as_ref()
        .map(|(_, p)| p)
}

/// Diagnostics of an ingest summary as (file name, kind).
pub fn diagnostic_kinds(summary: &serde_json::Value) -> Vec<(String, String)> {
    summary["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let file = Path::new(d["file"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_string();
            (file, d["kind"].as_str().unwrap().to_string())
        })
        .collect()
}

/// The table names of `quarry tables --format json`.
pub fn table_names(tables: &serde_json::Value) -> Vec<&str> {
    tables["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

/// The integer `field` of each object of the JSON array `array` (`w["events"]`, `"seq"`).
pub fn ints_of(array: &serde_json::Value, field: &str) -> Vec<i64> {
    array
        .as_array()
        .expect("a JSON array")
        .iter()
        .map(|item| item[field].as_i64().expect("an integer field"))
        .collect()
}

/// Every `usage` row (all its columns) and every session's links and token sums, in a fixed
/// order.
pub fn resolved(conn: &rusqlite::Connection) -> Vec<Vec<rusqlite::types::Value>> {
    let mut rows = Vec::new();
    for sql in [
        "SELECT session_id, response_key, message_id, request_id, model, input_tokens,
                output_tokens, reasoning_tokens, cache_read_tokens, cache_write_tokens,
                cache_write_5m_tokens, cache_write_1h_tokens, occurred_at_ms, turn_id,
                turn_committed, recorded_via, record_count, key_hash, session_num
         FROM usage ORDER BY response_key",
        "SELECT session_id, parent_session_id, root_session_id, branch_type, input_tokens,
                output_tokens, cache_read_tokens, cache_write_tokens, cache_write_5m_tokens,
                cache_write_1h_tokens
         FROM sessions ORDER BY session_id",
    ] {
        let mut stmt = conn.prepare(sql).unwrap();
        let n = stmt.column_count();
        let found = stmt
            .query_map([], |r| (0..n).map(|i| r.get(i)).collect())
            .unwrap();
        rows.extend(found.map(Result::unwrap));
    }
    rows
}

/// The archive as its ingests left it equals the archive with every response and session
/// resolved again at once (`RESOLVE_USAGE` over all of them, rolled back): an ingest writes the
/// `usage` row of a response only one record holds as it writes the record, and that must be
/// what the whole rule gives, whatever the order the files came in. (A `usage` row left without
/// a record is resolved away, so it fails too.)
pub fn assert_resolved_as_a_whole(archive: &Path) {
    let conn = rusqlite::Connection::open(archive).unwrap();
    let ingested = resolved(&conn);
    conn.execute_batch("BEGIN").unwrap();
    for sql in quarry_archive::AFFECTED_TABLES {
        conn.execute(sql, []).unwrap();
    }
    conn.execute_batch(
        "INSERT INTO temp.affected_keys SELECT DISTINCT response_key, key_hash FROM usage_records;
         INSERT OR IGNORE INTO temp.affected_keys
             SELECT response_key, key_hash FROM usage WHERE response_key IS NOT NULL;
         INSERT INTO temp.affected_sessions SELECT session_id FROM sessions;",
    )
    .unwrap();
    for sql in quarry_archive::RESOLVE_USAGE {
        conn.execute(sql, []).unwrap();
    }
    let whole = resolved(&conn);
    conn.execute_batch("ROLLBACK").unwrap();
    assert_eq!(
        ingested, whole,
        "resolved as the files came, then as a whole"
    );
}
