//! The engine end to end: every conformance positive executes on an archive ingested from the
//! real corpus, and query results equal an oracle computed by hand-written SQL run by rusqlite
//! directly on the archive (percentiles by sorting in the test).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use quarry::engine::{Answer, Caps, Engine, EngineError, EngineOptions};
use quarry::lower::LowerError;
use serde_json::Value;

use crate::support::{corpus, shared};

/// One archive of the whole corpus, ingested once for all tests of this module.
fn corpus_archive() -> Option<&'static PathBuf> {
    static ARCHIVE: OnceLock<Option<(tempfile::TempDir, PathBuf)>> = OnceLock::new();
    ARCHIVE
        .get_or_init(|| {
            let corpus = corpus()?;
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("archive.db");
            let mut archive = quarry_providers::Archive::open(&path).unwrap();
            quarry::ingest::ingest(
                &mut archive,
                &quarry::ingest::IngestOptions {
                    paths: vec![corpus],
                    owner: Some("test".into()),
                    progress: false,
                },
            )
            .unwrap();
            Some((dir, path))
        })
        .as_ref()
        .map(|(_, p)| p)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn engine(path: &Path) -> Engine {
    // SAFETY of the test: QUARRY_NOW is read at open; tests use absolute dates or a fixed now.
    Engine::open(
        path,
        &EngineOptions {
            memory_limit: None,
            tz: Some("UTC".into()),
        },
    )
    .unwrap()
}

fn run(engine: &Engine, rt: &tokio::runtime::Runtime, query: &str) -> Answer {
    rt.block_on(engine.run(query, Caps::default()))
        .unwrap_or_else(|e| panic!("{query}: {e:?}"))
}

fn tsv(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

#[test]
fn every_conformance_positive_executes_on_the_corpus() {
    let (Some(shared), Some(archive)) = (shared(), corpus_archive()) else {
        return;
    };
    let rt = runtime();
    let engine = engine(archive);
    let mut cases: Vec<(String, String)> = tsv(&shared.join("conformance/polylogue-positive.tsv"))
        .into_iter()
        .map(|r| (r[1].clone(), r[3].clone()))
        .collect();
    cases.push((
        "sessions where repo:example-repo | count".into(),
        "sessions".into(),
    ));
    cases.push((
        "runs where status:completed | group by status | count".into(),
        "runs".into(),
    ));
    cases.push((
        "context-snapshots where boundary:session_start | count".into(),
        "context-snapshots".into(),
    ));
    let mut semantic = 0;
    let mut failures = Vec::new();
    for (query, unit) in &cases {
        match rt.block_on(engine.run(query, Caps::default())) {
            Ok(answer) => {
                if answer.resolved.unit_source != unit {
                    failures.push(format!(
                        "{query}: unit {} != {unit}",
                        answer.resolved.unit_source
                    ));
                }
            }
            Err(EngineError::Lower(LowerError::EmbeddingsUnavailable))
                if query.contains("near:") || query.contains("semantic:") =>
            {
                semantic += 1;
            }
            Err(e) => failures.push(format!("{query}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert_eq!(
        semantic, 6,
        "the near:/semantic: expressions fail with the typed diagnostic"
    );
}

/// The rows of an answer as JSON arrays.
fn rows(answer: &Answer) -> Vec<Vec<Value>> {
    let Value::Array(rows) = quarry::output::rows(&answer.rows) else {
        panic!()
    };
    rows.into_iter()
        .map(|r| match r {
            Value::Array(v) => v,
            _ => panic!(),
        })
        .collect()
}

/// The rows of an SQLite query, as JSON.
fn oracle(archive: &Path, sql: &str) -> Vec<Vec<Value>> {
    let conn =
        rusqlite::Connection::open_with_flags(archive, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let n = stmt.column_count();
    stmt.query_map([], |r| {
        (0..n)
            .map(|i| {
                Ok(match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Null => Value::Null,
                    rusqlite::types::ValueRef::Integer(v) => Value::from(v),
                    rusqlite::types::ValueRef::Real(v) => Value::from(v),
                    rusqlite::types::ValueRef::Text(t) => {
                        Value::from(String::from_utf8_lossy(t).to_string())
                    }
                    rusqlite::types::ValueRef::Blob(_) => Value::Null,
                })
            })
            .collect()
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// Numbers compared as f64 with a relative tolerance for averages; everything else exactly.
fn same(a: &Value, b: &Value) -> bool {
    // SQLite stores booleans as 0/1.
    let number = |v: &Value| {
        v.as_bool()
            .map(|b| if b { 1.0 } else { 0.0 })
            .or_else(|| v.as_f64())
    };
    match (number(a), number(b)) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
        _ => a == b,
    }
}

fn assert_same(query: &str, got: &[Vec<Value>], want: &[Vec<Value>]) {
    assert_eq!(
        got.len(),
        want.len(),
        "{query}: {} rows, oracle {}",
        got.len(),
        want.len()
    );
    for (g, w) in got.iter().zip(want) {
        assert!(
            g.len() == w.len() && g.iter().zip(w).all(|(a, b)| same(a, b)),
            "{query}: {g:?} != {w:?}"
        );
    }
}

/// Nearest-rank percentile by sorting, in the test.
fn nearest_rank(mut values: Vec<i64>, p: usize) -> Option<i64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let n = values.len();
    let rank = (1..=n).find(|k| 100 * k >= p * n)?;
    values.get(rank - 1).copied()
}

#[test]
fn results_equal_the_sqlite_oracle() {
    let Some(archive) = corpus_archive() else {
        return;
    };
    let rt = runtime();
    let engine = engine(archive);
    let cases: &[(&str, &str)] = &[
        ("messages | count", "SELECT COUNT(*) FROM messages"),
        (
            "messages | group by role | count",
            "SELECT role, COUNT(*) FROM messages GROUP BY role ORDER BY role",
        ),
        (
            "messages where role:assistant | count",
            "SELECT COUNT(*) FROM messages WHERE role = 'assistant'",
        ),
        (
            "messages where role:assistant AND type:text | count",
            "SELECT COUNT(*) FROM messages WHERE role = 'assistant' AND type = 'text'",
        ),
        (
            "messages | group by role | agg count, sum:word_count, min:word_count, max:word_count",
            "SELECT role, COUNT(*), SUM(word_count), MIN(word_count), MAX(word_count) FROM messages GROUP BY role ORDER BY role",
        ),
        (
            "messages | group by role | agg avg:word_count",
            "SELECT role, AVG(word_count) FROM messages GROUP BY role ORDER BY role",
        ),
        (
            "actions | group by semantic_type | agg count, avg:is_error",
            "SELECT semantic_type, COUNT(*), AVG(is_error) FROM actions GROUP BY semantic_type ORDER BY semantic_type",
        ),
        (
            "actions where is_error:true | count",
            "SELECT COUNT(*) FROM actions WHERE is_error = 1",
        ),
        (
            "sessions | group by origin | count",
            "SELECT origin, COUNT(*) FROM sessions GROUP BY origin ORDER BY origin",
        ),
        (
            "sessions | agg count, sum:input_tokens, sum:output_tokens",
            "SELECT COUNT(*), SUM(input_tokens), SUM(output_tokens) FROM sessions",
        ),
        (
            "usage | group by model | agg sum:output_tokens",
            "SELECT model, SUM(output_tokens) FROM usage GROUP BY model ORDER BY model NULLS FIRST",
        ),
        (
            "messages where session.origin:codex-session | count",
            "SELECT COUNT(*) FROM messages WHERE session_id IN (SELECT session_id FROM sessions WHERE lower(origin) = 'codex-session')",
        ),
        (
            "sessions where tool:Bash | count",
            "SELECT COUNT(*) FROM sessions WHERE session_id IN (SELECT session_id FROM actions WHERE lower(tool_name) = 'bash')",
        ),
        (
            "sessions where exists action(is_error:true) | count",
            "SELECT COUNT(*) FROM sessions WHERE session_id IN (SELECT session_id FROM actions WHERE is_error = 1)",
        ),
        (
            "sessions where origin:claude-code-session | actions where is_error:true | count",
            "SELECT COUNT(*) FROM actions WHERE is_error = 1 AND session_id IN (SELECT session_id FROM sessions WHERE lower(origin) = 'claude-code-session')",
        ),
        (
            "messages | group by session.origin | count",
            "SELECT s.origin, COUNT(*) FROM messages m LEFT JOIN sessions s ON s.session_id = m.session_id GROUP BY s.origin ORDER BY s.origin",
        ),
        (
            "messages where words >= 100 | count",
            "SELECT COUNT(*) FROM messages WHERE word_count >= 100",
        ),
        (
            "messages where words between 10 and 20 | count",
            "SELECT COUNT(*) FROM messages WHERE word_count BETWEEN 10 AND 20",
        ),
        (
            "files | agg count, count_distinct:path",
            "SELECT COUNT(*), COUNT(DISTINCT path) FROM files",
        ),
        (
            "turns | group by committed | count",
            "SELECT committed, COUNT(*) FROM turns GROUP BY committed ORDER BY committed",
        ),
    ];
    for (query, sql) in cases {
        let answer = run(&engine, &rt, query);
        assert_same(query, &rows(&answer), &oracle(archive, sql));
    }
    // Percentiles: nearest rank over every row, per group, against a sort in the test.
    let answer = run(
        &engine,
        &rt,
        "messages | group by role | agg count, p50:word_count, p90:word_count, p99:word_count",
    );
    let got = rows(&answer);
    for row in &got {
        let role = row[0].as_str().unwrap();
        let values: Vec<i64> = oracle(
            archive,
            &format!(
                "SELECT word_count FROM messages WHERE role = '{role}' AND word_count IS NOT NULL"
            ),
        )
        .into_iter()
        .map(|r| r[0].as_i64().unwrap())
        .collect();
        for (i, p) in [50, 90, 99].iter().enumerate() {
            let want = nearest_rank(values.clone(), *p)
                .map(Value::from)
                .unwrap_or(Value::Null);
            assert!(
                same(&row[2 + i], &want),
                "p{p} of {role}: {} != {want}",
                row[2 + i]
            );
        }
    }
    assert_eq!(
        answer.input_rows,
        Some(
            oracle(archive, "SELECT COUNT(*) FROM messages")[0][0]
                .as_u64()
                .unwrap() as usize
        )
    );
}

#[test]
fn explain_plan_shows_pushdown_into_the_scan() {
    let Some(archive) = corpus_archive() else {
        return;
    };
    let rt = runtime();
    let engine = engine(archive);
    let text = rt
        .block_on(engine.explain("messages where role:assistant AND type:text | limit 5"))
        .unwrap();
    let scan = text
        .lines()
        .find(|l| l.contains("SqliteScanExec"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        scan.contains("\"role\" = ?") && scan.contains("\"type\" = ?"),
        "{scan}"
    );
    assert!(scan.contains("limit=5"), "{scan}");
    let text = rt
        .block_on(engine.explain("messages where role:assistant AND session.repo:x"))
        .unwrap();
    assert!(text.contains("LeftSemi") || text.contains("Semi"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("SqliteScanExec: table=sessions")),
        "{text}"
    );
}
