//! The question files of `tests/queries/`: one question each, in quarry's language and in its
//! read-only SQL, with the oracle that answers it independently of the engine — an SQLite
//! statement over the archive, or the name of an oracle function computed in Rust
//! ([`super::oracle`]). The differential test, the source-parity test, the plan snapshots and the
//! benchmarks (`benches/compare`, the files with a `[bench]` table) all read these files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::oracle::{Stat, seq_sessions, stats_by_group};
use super::rows::{difference, json_rows, keep_columns, sorted, sql_rows};

/// One question file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The file's name without `.toml`.
    #[serde(skip)]
    pub name: String,
    /// The question, for people.
    pub question: String,
    /// The question in quarry's language (absent only for a benchmark's report question).
    pub quarry: Option<String>,
    /// The same question in quarry's read-only SQL (the main rows, for a projection).
    pub sql: Option<String>,
    /// Whether the question's plans are snapshot-tested.
    #[serde(default)]
    pub plan: bool,
    /// How the answer is checked.
    pub oracle: Option<Oracle>,
    /// How the benchmarks ask it (read by `benches/compare`, not here).
    pub bench: Option<toml::Value>,
}

/// How a question's answer is known.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Oracle {
    /// `stats`, `seq` or `projection`: an oracle function; none: `sqlite` is the answer.
    pub function: Option<String>,
    /// The SQLite statement: the answer itself, or the rows a function reads.
    pub sqlite: Option<String>,
    /// `any`: the rows are compared as multisets (the question leaves their order open).
    pub order: Option<String>,
    /// quarry's rows must be in descending order of this column (then compared as multisets).
    pub descending: Option<usize>,
    /// Only these columns are compared (ties may legitimately pick other rows).
    pub columns: Option<Vec<usize>>,
    /// `stats`: how many group columns the SQLite rows start with.
    pub keys: Option<usize>,
    /// `stats`: the statistics per group (`p90`, `median`, `stddev`, ...).
    pub stats: Option<Vec<String>>,
    /// `seq`: the tool names, in order (lower case).
    pub tools: Option<Vec<String>>,
    /// `projection`: the selected sessions' ids.
    pub sessions: Option<String>,
    /// `projection`: each attachment's rows, in order.
    pub attached: Option<Vec<String>>,
}

/// The folder of question files.
pub fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/queries")
}

/// Every question file, in name order.
pub fn all() -> Vec<Question> {
    let mut out = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(folder())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut q: Question =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        q.name = path.file_stem().unwrap().to_string_lossy().to_string();
        out.push(q);
    }
    out
}

/// The questions with an oracle (every one but the benchmarks' report).
pub fn checked() -> Vec<Question> {
    all().into_iter().filter(|q| q.oracle.is_some()).collect()
}

/// The language queries of the checked questions.
pub fn queries() -> Vec<String> {
    checked().into_iter().filter_map(|q| q.quarry).collect()
}

/// quarry's answer to one form of a question: its main rows and the attached rows per unit.
pub struct Answer {
    /// The main rows.
    pub rows: Vec<Vec<Value>>,
    /// The column names of the main rows.
    pub columns: Vec<String>,
    /// Attached rows of `with` projections, in the query's order.
    pub attached: Vec<Vec<Vec<Value>>>,
}

impl Answer {
    /// The answer of a collected result.
    pub fn of(result: &quarry::QueryResult) -> Answer {
        Answer {
            rows: json_rows(&result.batches),
            columns: result
                .schema
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect(),
            attached: result
                .attachments
                .iter()
                .map(|a| json_rows(&a.batches))
                .collect(),
        }
    }
}

impl Question {
    /// Whether `answer` agrees with the oracle on `archive`; `Err` says how not. `main_only`:
    /// the answer is the SQL form's, which has no attachments and, for a projection, only the
    /// session ids.
    pub fn check(&self, archive: &Path, answer: &Answer, main_only: bool) -> Result<(), String> {
        let oracle = self.oracle.as_ref().ok_or("no oracle")?;
        let sqlite = || {
            oracle
                .sqlite
                .as_deref()
                .ok_or("the oracle has no sqlite statement")
        };
        let (got, want) = match oracle.function.as_deref() {
            None => (answer.rows.clone(), sql_rows(archive, sqlite()?)),
            Some("stats") => {
                let stats: Vec<Stat> = oracle
                    .stats
                    .iter()
                    .flatten()
                    .map(|s| Stat::from_name(s).ok_or(format!("no statistic {s}")))
                    .collect::<Result<_, _>>()?;
                let keys = oracle.keys.unwrap_or(0);
                let rows = sql_rows(archive, sqlite()?);
                (answer.rows.clone(), stats_by_group(rows, keys, &stats))
            }
            Some("seq") => {
                let tools = oracle.tools.as_deref().ok_or("a seq oracle names tools")?;
                (
                    answer.rows.clone(),
                    vec![vec![Value::from(seq_count(archive, tools))]],
                )
            }
            Some("projection") => return self.check_projection(archive, oracle, answer, main_only),
            Some(other) => return Err(format!("no oracle function {other}")),
        };
        compare(oracle, got, want)
    }

    fn check_projection(
        &self,
        archive: &Path,
        oracle: &Oracle,
        answer: &Answer,
        main_only: bool,
    ) -> Result<(), String> {
        let sessions = oracle
            .sessions
            .as_deref()
            .ok_or("a projection names its sessions")?;
        let id = answer
            .columns
            .iter()
            .position(|c| c == "session_id")
            .ok_or("the answer has no session_id")?;
        let ids = keep_columns(answer.rows.clone(), &[id]);
        if let Some(d) = difference(&sorted(ids), &sorted(sql_rows(archive, sessions))) {
            return Err(format!("sessions: {d}"));
        }
        if main_only {
            return Ok(());
        }
        let attached = oracle.attached.as_deref().unwrap_or_default();
        if answer.attached.len() != attached.len() {
            return Err(format!(
                "{} attachments, the oracle {}",
                answer.attached.len(),
                attached.len()
            ));
        }
        for (i, (rows, sql)) in answer.attached.iter().zip(attached).enumerate() {
            if let Some(d) = difference(rows, &sql_rows(archive, sql)) {
                return Err(format!("attachment {i}: {d}"));
            }
        }
        Ok(())
    }
}

/// Compares under the oracle's rules: the chosen columns, in order or as multisets, with
/// quarry's rows in the order the question asks.
fn compare(oracle: &Oracle, got: Vec<Vec<Value>>, want: Vec<Vec<Value>>) -> Result<(), String> {
    if let Some(column) = oracle.descending {
        let values: Vec<f64> = got.iter().filter_map(|r| r[column].as_f64()).collect();
        if !values.windows(2).all(|w| w[0] >= w[1]) {
            return Err(format!("not in descending order of column {column}"));
        }
    }
    let (got, want) = match &oracle.columns {
        Some(columns) => (keep_columns(got, columns), keep_columns(want, columns)),
        None => (got, want),
    };
    let any_order = oracle.order.as_deref() == Some("any") || oracle.descending.is_some();
    let (got, want) = if any_order {
        (sorted(got), sorted(want))
    } else {
        (got, want)
    };
    difference(&got, &want).map_or(Ok(()), Err)
}

/// Sessions whose actions, in (time with NULLs first, id) order, contain actions with these
/// tool names (case-insensitive) in order.
fn seq_count(archive: &Path, tools: &[String]) -> i64 {
    let rows = sql_rows(
        archive,
        "SELECT session_id, lower(tool_name) FROM actions ORDER BY session_id, occurred_at_ms NULLS FIRST, action_id",
    );
    let flags: Vec<(String, Vec<bool>)> = rows
        .into_iter()
        .map(|r| {
            let tool = r[1].as_str().unwrap_or_default().to_string();
            let matches = tools.iter().map(|t| *t == tool).collect();
            (r[0].as_str().unwrap_or_default().to_string(), matches)
        })
        .collect();
    seq_sessions(&flags, tools.len()).len() as i64
}

/// How many questions of each oracle kind there are (for the counts a test prints).
pub fn census(questions: &[Question]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for q in questions {
        let kind = match &q.oracle {
            Some(o) => o.function.clone().unwrap_or_else(|| "sqlite".into()),
            None => "none".into(),
        };
        *out.entry(kind).or_default() += 1;
    }
    out
}
