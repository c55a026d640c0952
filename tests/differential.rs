//! The differential test: quarry's answers to 51 queries (every aggregate form, percentiles,
//! median and stddev, time buckets, exists, seq, session fields, the scope form, sorts and pages,
//! projections with first/last) against an oracle computed independently of the engine —
//! hand-written SQL run by rusqlite on the same archive, with percentiles, medians, deviations
//! and ordered subsequences computed in the test from plain rows. It runs on the real corpus and
//! on a generated archive of 100,000 messages.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use quarry::{Caps, Options, Quarry, QueryResult};
use serde_json::Value;

use crate::support::corpus;

/// A statistic the test computes from a group's values.
#[derive(Debug, Clone, Copy)]
enum Stat {
    /// Nearest-rank percentile: the smallest value with at least p% of the values at or below.
    P(usize),
    /// Interpolated median.
    Median,
    /// Sample standard deviation.
    Stddev,
}

/// How the oracle answers a query.
enum Oracle {
    /// Hand-written SQL; rows compared in order.
    Sql(&'static str),
    /// Hand-written SQL; rows compared as multisets (the query leaves the order of ties open),
    /// and quarry's rows must be in descending order of the given column.
    Descending(&'static str, usize),
    /// SQL returning `keys` group columns then one value per row, ordered by the keys; the test
    /// computes each statistic per group (groups in key order, NULL values ignored).
    Computed {
        sql: &'static str,
        keys: usize,
        stats: &'static [Stat],
    },
    /// The number of sessions whose actions, ordered by (time, id), contain actions with these
    /// tool names (case-insensitive) as a subsequence.
    Seq(&'static [&'static str]),
    /// A projection: the selected session ids (any order), then each attachment's rows (SQL,
    /// in order).
    Projection {
        sessions: &'static str,
        attached: &'static [&'static str],
    },
}

use Oracle::*;
use Stat::*;

const CASES: &[(&str, Oracle)] = &[
    // Counts and plain aggregates.
    ("messages | count", Sql("SELECT COUNT(*) FROM messages")),
    (
        "messages | group by role | count",
        Sql("SELECT role, COUNT(*) FROM messages GROUP BY role ORDER BY role"),
    ),
    (
        "messages | group by role, type | count",
        Sql("SELECT role, type, COUNT(*) FROM messages GROUP BY role, type ORDER BY role, type"),
    ),
    (
        "messages where role:assistant AND type:text | count",
        Sql("SELECT COUNT(*) FROM messages WHERE role = 'assistant' AND type = 'text'"),
    ),
    (
        "messages where NOT role:user | count",
        Sql("SELECT COUNT(*) FROM messages WHERE role <> 'user'"),
    ),
    (
        "messages where role:(user|tool) | group by role | count",
        Sql(
            "SELECT role, COUNT(*) FROM messages WHERE role IN ('user', 'tool') GROUP BY role ORDER BY role",
        ),
    ),
    (
        "messages | group by role | agg count, sum:word_count, min:word_count, max:word_count",
        Sql(
            "SELECT role, COUNT(*), SUM(word_count), MIN(word_count), MAX(word_count) FROM messages GROUP BY role ORDER BY role",
        ),
    ),
    (
        "messages | group by role | agg avg:word_count",
        Sql("SELECT role, AVG(word_count) FROM messages GROUP BY role ORDER BY role"),
    ),
    (
        "messages where words >= 100 | count",
        Sql("SELECT COUNT(*) FROM messages WHERE word_count >= 100"),
    ),
    (
        "messages where words between 10 and 20 | count",
        Sql("SELECT COUNT(*) FROM messages WHERE word_count BETWEEN 10 AND 20"),
    ),
    (
        "messages where text:error | count",
        Sql("SELECT COUNT(*) FROM messages WHERE text LIKE '%error%'"),
    ),
    (
        "actions | group by semantic_type | agg count, avg:is_error",
        Sql(
            "SELECT semantic_type, COUNT(*), AVG(is_error) FROM actions GROUP BY semantic_type ORDER BY semantic_type",
        ),
    ),
    (
        "actions where is_error:true | count",
        Sql("SELECT COUNT(*) FROM actions WHERE is_error = 1"),
    ),
    (
        "actions | group by tool | agg count, sum:is_error | sort by count desc",
        Descending(
            "SELECT tool_name, COUNT(*), SUM(is_error) FROM actions GROUP BY tool_name",
            1,
        ),
    ),
    (
        "blocks | group by type | count",
        Sql("SELECT type, COUNT(*) FROM blocks GROUP BY type ORDER BY type"),
    ),
    (
        "sessions | group by origin | count",
        Sql("SELECT origin, COUNT(*) FROM sessions GROUP BY origin ORDER BY origin"),
    ),
    (
        "sessions | agg count, sum:input_tokens, sum:output_tokens",
        Sql("SELECT COUNT(*), SUM(input_tokens), SUM(output_tokens) FROM sessions"),
    ),
    (
        "sessions | agg count_distinct:repo, count_distinct:model",
        Sql("SELECT COUNT(DISTINCT repo), COUNT(DISTINCT model) FROM sessions"),
    ),
    (
        "sessions where repo:a OR messages:>=40 | count",
        Sql(
            "SELECT COUNT(*) FROM sessions WHERE lower(repo) LIKE '%a%' OR message_count >= 40",
        ),
    ),
    (
        "usage | group by model | agg sum:output_tokens",
        Sql(
            "SELECT model, SUM(output_tokens) FROM usage GROUP BY model ORDER BY model NULLS FIRST",
        ),
    ),
    (
        "files | agg count, count_distinct:path",
        Sql("SELECT COUNT(*), COUNT(DISTINCT path) FROM files"),
    ),
    (
        "files where tool:Edit | count",
        Sql(
            "SELECT COUNT(*) FROM files f WHERE EXISTS (SELECT 1 FROM actions a WHERE a.session_id = f.session_id AND a.tool_path = f.path AND lower(a.tool_name) = 'edit')",
        ),
    ),
    (
        "files where NOT action:file_read OR action_count >= 3 | count",
        Sql(
            "SELECT COUNT(*) FROM files f WHERE NOT EXISTS (SELECT 1 FROM actions a WHERE a.session_id = f.session_id AND a.tool_path = f.path AND a.semantic_type = 'file_read') OR action_count >= 3",
        ),
    ),
    (
        "turns | group by committed | count",
        Sql("SELECT committed, COUNT(*) FROM turns GROUP BY committed ORDER BY committed"),
    ),
    // Session fields, exists, the scope form.
    (
        "messages where session.origin:codex-session | count",
        Sql(
            "SELECT COUNT(*) FROM messages WHERE session_id IN (SELECT session_id FROM sessions WHERE lower(origin) = 'codex-session')",
        ),
    ),
    (
        "messages | group by session.origin | count",
        Sql(
            "SELECT s.origin, COUNT(*) FROM messages m LEFT JOIN sessions s ON s.session_id = m.session_id GROUP BY s.origin ORDER BY s.origin",
        ),
    ),
    (
        "messages where session.messages:>=50 AND role:assistant | agg count, sum:output_tokens",
        Sql(
            "SELECT COUNT(*), SUM(output_tokens) FROM messages WHERE role = 'assistant' AND session_id IN (SELECT session_id FROM sessions WHERE message_count >= 50)",
        ),
    ),
    (
        "sessions where tool:BASH | count",
        Sql(
            "SELECT COUNT(*) FROM sessions WHERE session_id IN (SELECT session_id FROM actions WHERE lower(tool_name) = 'bash')",
        ),
    ),
    (
        "sessions where exists action(is_error:true) | count",
        Sql(
            "SELECT COUNT(*) FROM sessions WHERE session_id IN (SELECT session_id FROM actions WHERE is_error = 1)",
        ),
    ),
    (
        "sessions where NOT exists action(is_error:true) | count",
        Sql(
            "SELECT COUNT(*) FROM sessions WHERE session_id NOT IN (SELECT session_id FROM actions WHERE is_error = 1)",
        ),
    ),
    (
        "sessions where exists message(role:assistant AND words >= 100) | count",
        Sql(
            "SELECT COUNT(*) FROM sessions WHERE session_id IN (SELECT session_id FROM messages WHERE role = 'assistant' AND word_count >= 100)",
        ),
    ),
    (
        "sessions where exists action(tool:Bash AND is_error:true) | group by origin | count",
        Sql(
            "SELECT origin, COUNT(*) FROM sessions WHERE session_id IN (SELECT session_id FROM actions WHERE lower(tool_name) = 'bash' AND is_error = 1) GROUP BY origin ORDER BY origin",
        ),
    ),
    (
        "sessions where origin:claude-code-session | actions where is_error:true | count",
        Sql(
            "SELECT COUNT(*) FROM actions WHERE is_error = 1 AND session_id IN (SELECT session_id FROM sessions WHERE lower(origin) = 'claude-code-session')",
        ),
    ),
    (
        "sessions where messages:>=10 | messages where role:user | agg count, avg:word_count",
        Sql(
            "SELECT COUNT(*), AVG(word_count) FROM messages WHERE role = 'user' AND session_id IN (SELECT session_id FROM sessions WHERE message_count >= 10)",
        ),
    ),
    // Percentiles, medians and deviations, computed in the test.
    (
        "messages | agg p50:word_count, p90:word_count, p99:word_count",
        Computed {
            sql: "SELECT word_count FROM messages",
            keys: 0,
            stats: &[P(50), P(90), P(99)],
        },
    ),
    (
        "messages | group by role | agg p1:word_count, p50:word_count, p90:word_count, p99:word_count",
        Computed {
            sql: "SELECT role, word_count FROM messages ORDER BY role",
            keys: 1,
            stats: &[P(1), P(50), P(90), P(99)],
        },
    ),
    (
        "actions | group by tool | agg p90:duration_ms",
        Computed {
            sql: "SELECT tool_name, duration_ms FROM actions ORDER BY tool_name",
            keys: 1,
            stats: &[P(90)],
        },
    ),
    (
        "messages | group by session.origin | agg p75:word_count",
        Computed {
            sql: "SELECT s.origin, m.word_count FROM messages m LEFT JOIN sessions s ON s.session_id = m.session_id ORDER BY s.origin",
            keys: 1,
            stats: &[P(75)],
        },
    ),
    (
        "usage | agg p95:output_tokens",
        Computed {
            sql: "SELECT output_tokens FROM usage",
            keys: 0,
            stats: &[P(95)],
        },
    ),
    (
        "messages | agg median:word_count, stddev:word_count",
        Computed {
            sql: "SELECT word_count FROM messages",
            keys: 0,
            stats: &[Median, Stddev],
        },
    ),
    (
        "messages | group by role | agg median:word_count, stddev:word_count",
        Computed {
            sql: "SELECT role, word_count FROM messages ORDER BY role",
            keys: 1,
            stats: &[Median, Stddev],
        },
    ),
    // Time buckets (UTC).
    (
        "messages | group by time:day | count",
        Sql(
            "SELECT strftime('%Y-%m-%dT00:00:00Z', occurred_at_ms / 1000, 'unixepoch') AS d, COUNT(*) FROM messages GROUP BY d ORDER BY d",
        ),
    ),
    (
        "sessions | group by time:month | agg count, sum:message_count",
        Sql(
            "SELECT strftime('%Y-%m-01T00:00:00Z', created_at / 1000, 'unixepoch') AS d, COUNT(*), SUM(message_count) FROM sessions GROUP BY d ORDER BY d",
        ),
    ),
    // Sorts, selects and pages (values only, so ties cannot reorder them).
    (
        "messages where role:user | sort by words desc | select word_count | limit 20",
        Sql(
            "SELECT word_count FROM messages WHERE role = 'user' ORDER BY word_count DESC LIMIT 20",
        ),
    ),
    (
        "sessions | sort by messages desc | select message_count | offset 3 | limit 7",
        Sql("SELECT message_count FROM sessions ORDER BY message_count DESC LIMIT 7 OFFSET 3"),
    ),
    // seq: ordered subsequences, computed in the test.
    ("sessions where seq(tool:Bash -> tool:Edit) | count", Seq(&["bash", "edit"])),
    (
        "sessions where seq(tool:Read -> tool:Edit -> tool:Bash) | count",
        Seq(&["read", "edit", "bash"]),
    ),
    ("sessions where seq(tool:Bash -> tool:Bash) | count", Seq(&["bash", "bash"])),
    // Projections with first/last, exactly per session.
    (
        "sessions where origin:claude-code-session with messages(message_id, role)[role:user, first:2]",
        Projection {
            sessions: "SELECT session_id FROM sessions WHERE lower(origin) = 'claude-code-session'",
            attached: &["SELECT session_id, message_id, role FROM (
                SELECT m.*, ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY position) AS n
                FROM messages m WHERE role = 'user' AND session_id IN
                  (SELECT session_id FROM sessions WHERE lower(origin) = 'claude-code-session'))
              WHERE n <= 2 ORDER BY session_id, position"],
        },
    ),
    (
        "sessions where messages:>=20 with messages(message_id)[last:3], actions(action_id, tool_name)[first:1]",
        Projection {
            sessions: "SELECT session_id FROM sessions WHERE message_count >= 20",
            attached: &[
                "SELECT session_id, message_id FROM (
                   SELECT m.*, ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY position DESC) AS n
                   FROM messages m WHERE session_id IN
                     (SELECT session_id FROM sessions WHERE message_count >= 20))
                 WHERE n <= 3 ORDER BY session_id, position",
                "SELECT session_id, action_id, tool_name FROM (
                   SELECT a.*, ROW_NUMBER() OVER (PARTITION BY session_id
                     ORDER BY occurred_at_ms NULLS LAST, action_id) AS n
                   FROM actions a WHERE session_id IN
                     (SELECT session_id FROM sessions WHERE message_count >= 20))
                 WHERE n <= 1 ORDER BY session_id, occurred_at_ms NULLS LAST, action_id",
            ],
        },
    ),
    (
        "sessions where messages:>=20 with blocks(block_id, type)[type:text, last:2]",
        Projection {
            sessions: "SELECT session_id FROM sessions WHERE message_count >= 20",
            attached: &["SELECT session_id, block_id, type FROM (
                SELECT b.*, ROW_NUMBER() OVER (PARTITION BY session_id
                  ORDER BY occurred_at_ms DESC NULLS LAST, position DESC, block_id DESC) AS n
                FROM blocks b WHERE type = 'text' AND session_id IN
                  (SELECT session_id FROM sessions WHERE message_count >= 20))
              WHERE n <= 2 ORDER BY session_id, occurred_at_ms NULLS LAST, position, block_id"],
        },
    ),
];

/// The differential set's queries.
pub fn queries() -> impl Iterator<Item = &'static str> {
    CASES.iter().map(|(query, _)| *query)
}

// The issue asks for at least 40 differential queries.
const _: () = assert!(CASES.len() >= 40);

/// A runtime with two workers, as on the CI machine.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// An engine in UTC (the time-bucket oracle is UTC).
pub fn engine(path: &Path) -> Quarry {
    let mut options = Options::new(path);
    options.tz = Some("UTC".into());
    Quarry::open(&options).unwrap()
}

/// Rows of a row set as JSON arrays.
pub fn json_rows(batches: &[quarry::arrow::record_batch::RecordBatch]) -> Vec<Vec<Value>> {
    let Value::Array(rows) = quarry::output::rows_json(batches).unwrap() else {
        panic!("rows are an array")
    };
    rows.into_iter()
        .map(|r| match r {
            Value::Array(v) => v,
            other => panic!("a row is an array: {other}"),
        })
        .collect()
}

/// The rows of an SQLite query on the archive, as JSON.
pub fn sql_rows(archive: &Path, sql: &str) -> Vec<Vec<Value>> {
    let conn = crate::support::open(archive);
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

/// Integers compare exactly; other numbers as f64 (booleans as 0/1, as SQLite stores them)
/// with a relative tolerance of 1e-9 for averages and deviations; everything else exactly.
fn same(a: &Value, b: &Value) -> bool {
    let number = |v: &Value| {
        v.as_bool()
            .map(|b| if b { 1.0 } else { 0.0 })
            .or_else(|| v.as_f64())
    };
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return x == y;
    }
    match (number(a), number(b)) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
        _ => a == b,
    }
}

fn assert_rows(query: &str, got: &[Vec<Value>], want: &[Vec<Value>]) {
    assert_eq!(
        got.len(),
        want.len(),
        "{query}: {} rows, the oracle {}",
        got.len(),
        want.len()
    );
    for (g, w) in got.iter().zip(want) {
        assert!(
            g.len() == w.len() && g.iter().zip(w).all(|(a, b)| same(a, b)),
            "{query}: {g:?} != oracle {w:?}"
        );
    }
}

fn sorted(mut rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    rows.sort_by_key(|r| Value::Array(r.clone()).to_string());
    rows
}

/// Nearest rank: the smallest value with at least p% of the values at or below it.
pub fn nearest_rank(sorted: &[f64], p: usize) -> Option<f64> {
    let n = sorted.len();
    let rank = (1..=n).find(|k| 100 * k >= p * n)?;
    sorted.get(rank - 1).copied()
}

fn stat(values: &[f64], stat: Stat) -> Value {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let out = match stat {
        P(p) => nearest_rank(&v, p),
        Median if n == 0 => None,
        Median if n % 2 == 1 => Some(v[n / 2]),
        Median => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
        Stddev if n < 2 => None,
        Stddev => {
            let mean = v.iter().sum::<f64>() / n as f64;
            let ss: f64 = v.iter().map(|x| (x - mean) * (x - mean)).sum();
            Some((ss / (n - 1) as f64).sqrt())
        }
    };
    out.map_or(Value::Null, Value::from)
}

/// Per group (in key order), each statistic of the group's non-NULL values.
fn computed(archive: &Path, sql: &str, keys: usize, stats: &[Stat]) -> Vec<Vec<Value>> {
    let mut groups: Vec<(Vec<Value>, Vec<f64>)> = Vec::new();
    for row in sql_rows(archive, sql) {
        let key = row[..keys].to_vec();
        if groups.last().is_none_or(|(k, _)| *k != key) {
            groups.push((key, Vec::new()));
        }
        if let (Some(group), Some(x)) = (groups.last_mut(), row[keys].as_f64()) {
            group.1.push(x);
        }
    }
    if keys == 0 && groups.is_empty() {
        groups.push((Vec::new(), Vec::new()));
    }
    groups
        .into_iter()
        .map(|(mut key, values)| {
            key.extend(stats.iter().map(|s| stat(&values, *s)));
            key
        })
        .collect()
}

/// Sessions whose actions, in (time with NULLs first, id) order, contain the tools in order.
fn seq_count(archive: &Path, tools: &[&str]) -> usize {
    let mut per_session: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in sql_rows(
        archive,
        "SELECT session_id, lower(tool_name) FROM actions ORDER BY session_id, occurred_at_ms NULLS FIRST, action_id",
    ) {
        per_session
            .entry(row[0].as_str().unwrap().to_string())
            .or_default()
            .push(row[1].as_str().unwrap_or_default().to_string());
    }
    per_session
        .values()
        .filter(|actions| {
            let mut want = tools.iter().peekable();
            for a in actions.iter() {
                if want.peek().is_some_and(|t| *t == a) {
                    want.next();
                }
            }
            want.peek().is_none()
        })
        .count()
}

/// Checks every case on `archive`.
fn check_all(archive: &Path) {
    let rt = runtime();
    let engine = engine(archive);
    for (query, oracle) in CASES {
        let answer: QueryResult = rt
            .block_on(engine.query_collect(query, Caps::default()))
            .unwrap_or_else(|e| panic!("{query}: {e:?}"));
        let got = json_rows(&answer.batches);
        match oracle {
            Sql(sql) => assert_rows(query, &got, &sql_rows(archive, sql)),
            Descending(sql, column) => {
                let values: Vec<f64> = got.iter().filter_map(|r| r[*column].as_f64()).collect();
                assert!(
                    values.windows(2).all(|w| w[0] >= w[1]),
                    "{query}: not in descending order"
                );
                assert_rows(query, &sorted(got), &sorted(sql_rows(archive, sql)))
            }
            Computed { sql, keys, stats } => {
                assert_rows(query, &got, &computed(archive, sql, *keys, stats))
            }
            Seq(tools) => assert_rows(
                query,
                &got,
                &[vec![Value::from(seq_count(archive, tools) as i64)]],
            ),
            Projection { sessions, attached } => {
                let id = answer
                    .schema
                    .index_of("session_id")
                    .expect("sessions have session_id");
                let ids: Vec<Vec<Value>> = got.iter().map(|r| vec![r[id].clone()]).collect();
                assert_rows(query, &sorted(ids), &sorted(sql_rows(archive, sessions)));
                assert_eq!(answer.attachments.len(), attached.len(), "{query}");
                for (attachment, sql) in answer.attachments.iter().zip(attached.iter()) {
                    let label = format!("{query} [{}]", attachment.unit);
                    assert_rows(
                        &label,
                        &json_rows(&attachment.batches),
                        &sql_rows(archive, sql),
                    );
                }
            }
        }
    }
}

/// Ingests `paths` into a new archive in `dir`.
fn ingest(dir: &Path, paths: Vec<PathBuf>) -> PathBuf {
    let path = dir.join("archive.db");
    let mut archive = quarry_providers::Archive::open(&path).unwrap();
    quarry::ingest::ingest(
        &mut archive,
        &quarry::ingest::IngestOptions {
            paths,
            owner: Some("test".into()),
            progress: false,
            ..Default::default()
        },
    )
    .unwrap();
    path
}

/// One archive of the whole corpus, shared by the engine tests.
pub fn corpus_archive() -> Option<&'static PathBuf> {
    static ARCHIVE: OnceLock<Option<(tempfile::TempDir, PathBuf)>> = OnceLock::new();
    ARCHIVE
        .get_or_init(|| {
            let corpus = corpus()?;
            let dir = tempfile::tempdir().unwrap();
            let path = ingest(dir.path(), vec![corpus]);
            Some((dir, path))
        })
        .as_ref()
        .map(|(_, p)| p)
}

#[test]
fn differential_on_the_corpus() {
    let Some(archive) = corpus_archive() else {
        return;
    };
    check_all(archive);
}

#[test]
fn differential_on_a_generated_archive_of_100k_messages() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    let report = quarry::synth::generate(
        &corpus,
        quarry::synth::Size::Messages(100_000),
        quarry::synth::Shape::Realistic,
        11,
    )
    .unwrap();
    let archive = ingest(dir.path(), vec![corpus]);
    let messages = sql_rows(&archive, "SELECT COUNT(*) FROM messages")[0][0]
        .as_i64()
        .unwrap();
    assert!(
        messages >= 100_000,
        "{messages} messages ({} generated)",
        report.messages
    );
    check_all(&archive);
}
