//! The engine end to end: every conformance positive executes on an archive ingested from the
//! real corpus; `explain --plan` shows pushdown; exports stream to Parquet, Arrow and CSV files
//! whose contents equal the archive read by rusqlite. (The differential test of answers against
//! hand-written SQL is in `differential.rs`.)

use std::path::Path;

use quarry::{Caps, Error, Options, Quarry};

use crate::support::rows::{json_rows, sql_rows};
use crate::support::{corpus_archive, engine, runtime};
use crate::support::{quarry, shared};

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
        match rt.block_on(engine.query_collect(query, Caps::default())) {
            Ok(answer) => {
                if answer.meta.unit != *unit {
                    failures.push(format!("{query}: unit {} != {unit}", answer.meta.unit));
                }
            }
            Err(Error::EmbeddingsUnavailable)
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

#[test]
fn explain_plan_shows_pushdown_into_the_scan() {
    let Some(archive) = corpus_archive() else {
        return;
    };
    let rt = runtime();
    let engine = engine(archive);
    let text = rt
        .block_on(engine.explain_plan("messages where role:assistant AND type:text | limit 5"))
        .unwrap();
    let scan = text
        .lines()
        .find(|l| l.contains("SqliteScanExec: table=messages"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        scan.contains("\"role\" = ?") && scan.contains("\"type\" = ?"),
        "{scan}"
    );
    assert!(scan.contains("limit=5"), "{scan}");
    let text = rt
        .block_on(engine.explain_plan("messages where role:assistant AND session.repo:x"))
        .unwrap();
    assert!(text.contains("join_type=LeftSemi"), "{text}");
    // The sessions predicate (`repo:x`, a case-insensitive substring) runs inside the sessions
    // scan, as SQLite `lower(repo) LIKE '%x%'`, exact since `x` folds the same in both engines.
    let sessions = text
        .lines()
        .find(|l| l.contains("SqliteScanExec: table=sessions") && l.contains("repo"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(sessions.contains("lower(\"repo\") LIKE ?"), "{sessions}");
    assert!(
        !text.contains("FilterExec"),
        "nothing left above the scans: {text}"
    );
}

/// The rows of Parquet and Arrow IPC files, read back with the parquet and arrow readers.
fn read_batches(path: &Path) -> Vec<datafusion::arrow::record_batch::RecordBatch> {
    let file = std::fs::File::open(path).unwrap();
    if path.extension().is_some_and(|e| e == "parquet") {
        datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap()
            .map(Result::unwrap)
            .collect()
    } else {
        datafusion::arrow::ipc::reader::FileReader::try_new(file, None)
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }
}

/// The rows of an exported file as JSON, times as epoch milliseconds (as SQLite stores them):
/// the files carry Arrow timestamps.
fn file_rows(path: &Path) -> Vec<Vec<serde_json::Value>> {
    use datafusion::arrow::compute::cast;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    let as_millis = |batch: RecordBatch| {
        let (fields, columns): (Vec<Field>, Vec<_>) = batch
            .schema()
            .fields()
            .iter()
            .zip(batch.columns())
            .map(|(f, c)| match c.data_type() {
                DataType::Timestamp(..) => (
                    f.as_ref().clone().with_data_type(DataType::Int64),
                    cast(c, &DataType::Int64).unwrap(),
                ),
                _ => (f.as_ref().clone(), c.clone()),
            })
            .unzip();
        RecordBatch::try_new(std::sync::Arc::new(Schema::new(fields)), columns).unwrap()
    };
    let batches: Vec<RecordBatch> = read_batches(path).into_iter().map(as_millis).collect();
    json_rows(&batches)
}

/// The names of the files in `dir`, in order.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn sorted(mut rows: Vec<Vec<serde_json::Value>>) -> Vec<Vec<serde_json::Value>> {
    rows.sort_by_key(|r| serde_json::Value::Array(r.clone()).to_string());
    rows
}

#[test]
fn a_sorted_export_streams_every_row_to_parquet_and_arrow() {
    let Some(archive) = corpus_archive() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let query =
        "messages | sort by time desc | select message_id, session_id, word_count, occurred_at_ms";
    let want = sorted(sql_rows(
        archive,
        "SELECT message_id, session_id, word_count, occurred_at_ms FROM messages",
    ));
    assert!(want.len() > 1000);
    for name in ["all.parquet", "all.arrow"] {
        let path = dir.path().join(name);
        let out = quarry(&[
            "--archive",
            &archive.display().to_string(),
            query,
            "-o",
            &path.display().to_string(),
            "--memory-limit",
            "64MB",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("wrote {} rows (messages", want.len())),
            "{stderr}"
        );
        let files = files_in(dir.path());
        assert!(
            files.iter().all(|f| !f.ends_with(".partial")) && files.iter().any(|f| f == name),
            "{name} whole and no temporary file beside it: {files:?}"
        );
        let got = file_rows(&path);
        // Every row, and in time order (latest first; rows without a time come last).
        let times: Vec<i64> = got.iter().filter_map(|r| r[3].as_i64()).collect();
        assert!(times.windows(2).all(|w| w[0] >= w[1]), "{name} not sorted");
        assert!(
            got.iter().rev().take_while(|r| r[3].is_null()).count()
                == got.iter().filter(|r| r[3].is_null()).count(),
            "{name}: rows without a time come last"
        );
        assert_eq!(sorted(got), want, "{name}");
    }
}

#[test]
fn exports_pick_the_format_from_the_extension_and_flags_may_follow_the_query() {
    let Some(archive) = corpus_archive() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let archive = archive.display().to_string();
    let csv = dir.path().join("roles.csv");
    let out = quarry(&[
        "--archive",
        &archive,
        "messages | group by role | count",
        "-o",
        &csv.display().to_string(),
    ]);
    assert!(out.status.success());
    let mut want = String::from("role,count\n");
    for row in sql_rows(
        Path::new(&archive),
        // A count's buckets come most rows first, ties in key order.
        "SELECT role, COUNT(*) FROM messages GROUP BY role ORDER BY COUNT(*) DESC, role",
    ) {
        want.push_str(&format!("{},{}\n", row[0].as_str().unwrap(), row[1]));
    }
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), want);
    // Flags after a query apply to it (they are not words of the query).
    let out = quarry(&[
        "--archive",
        &archive,
        "messages | count",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let total = sql_rows(Path::new(&archive), "SELECT COUNT(*) FROM messages")[0][0].clone();
    assert_eq!(envelope["rows"][0][0], total);
    // An extension naming no format is a usage error that creates no file.
    let bad = dir.path().join("roles.txt");
    let out = quarry(&[
        "--archive",
        &archive,
        "messages | count",
        "-o",
        &bad.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(".parquet"));
    assert!(!bad.exists());
    // -o with a verb, a --format that contradicts the extension, and a `with` projection to a
    // streamed format are usage errors (exit 2) that write nothing.
    let target = dir.path().join("t.csv").display().to_string();
    for args in [
        vec!["tables", "-o", target.as_str()],
        vec![
            "--format",
            "json",
            "messages | count",
            "-o",
            target.as_str(),
        ],
        vec![
            "sessions where messages:>=2 with messages(role)[first:1]",
            "-o",
            target.as_str(),
        ],
    ] {
        let mut all = vec!["--archive", archive.as_str()];
        all.extend(args.iter().copied());
        let out = quarry(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!Path::new(&target).exists(), "{args:?}");
    }
}

#[test]
fn a_query_that_cannot_fit_the_memory_limit_fails_clearly_and_leaves_no_file() {
    let Some(archive) = corpus_archive() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sorted.parquet");
    let out = quarry(&[
        "--archive",
        &archive.display().to_string(),
        "--memory-limit",
        "100KB",
        "messages | sort by words desc | select message_id, text",
        "-o",
        &path.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("needs more memory than --memory-limit allows"),
        "{stderr}"
    );
    assert!(
        files_in(dir.path()).is_empty(),
        "no file, partial or whole, is left: {:?}",
        files_in(dir.path())
    );
}

#[test]
fn group_by_a_raw_column_counts_per_session() {
    let Some(archive) = corpus_archive() else {
        return;
    };
    let rt = runtime();
    let engine = engine(archive);
    let answer = rt
        .block_on(engine.query_collect(
            "messages | group by session_id | agg count, p90:word_count",
            Caps::default(),
        ))
        .unwrap();
    let got = json_rows(&answer.batches);
    let want = sql_rows(
        archive,
        "SELECT session_id, COUNT(*) FROM messages GROUP BY session_id \
         ORDER BY COUNT(*) DESC, session_id",
    );
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g[..2], w[..], "per-session counts");
    }
}

#[test]
fn day_buckets_follow_an_iana_zone() {
    use chrono::TimeZone;
    use std::str::FromStr;
    let Some(archive) = corpus_archive() else {
        return;
    };
    let zone = "America/New_York";
    let mut options = Options::new(archive);
    options.tz = Some(zone.into());
    let engine = Quarry::open(&options).unwrap();
    let answer = runtime()
        .block_on(engine.query_collect("messages | group by time:day | count", Caps::default()))
        .unwrap();
    let got: Vec<(Option<String>, i64)> = json_rows(&answer.batches)
        .into_iter()
        .map(|r| {
            (
                r[0].as_str().map(|t| t[..10].to_string()),
                r[1].as_i64().unwrap(),
            )
        })
        .collect();
    // The oracle: each message's local date by the zone database, counted here.
    let tz = datafusion::arrow::array::timezone::Tz::from_str(zone).unwrap();
    let mut want: std::collections::BTreeMap<Option<String>, i64> = Default::default();
    for row in sql_rows(archive, "SELECT occurred_at_ms FROM messages") {
        let day = row[0].as_i64().map(|ms| {
            tz.timestamp_millis_opt(ms)
                .unwrap()
                .date_naive()
                .to_string()
        });
        *want.entry(day).or_default() += 1;
    }
    assert_eq!(got, want.into_iter().collect::<Vec<_>>());
    // A zone that does not exist is a clear error.
    let mut options = Options::new(archive);
    options.tz = Some("Mars/Olympus".into());
    let err = Quarry::open(&options).err().unwrap();
    assert!(err.to_string().contains("Europe/Warsaw"), "{err}");
}

/// SQL's `date_trunc` in a zone (`AT TIME ZONE`) cuts the same days as the language's `time:day`
/// in `--tz`, across Europe/Warsaw's daylight-saving changes, both by quarry's `date_trunc`.
#[test]
fn sql_date_trunc_in_a_zone_cuts_the_languages_days() {
    let Some(archive) = corpus_archive() else {
        return;
    };
    let mut options = Options::new(archive);
    options.tz = Some("Europe/Warsaw".into());
    let engine = Quarry::open(&options).unwrap();
    let rt = runtime();
    let language = rt
        .block_on(engine.query_collect("messages | group by time:day | count", Caps::default()))
        .unwrap();
    let sql = rt
        .block_on(engine.sql_collect(
            "SELECT date_trunc('day', occurred_at_ms AT TIME ZONE 'Europe/Warsaw') AS d, COUNT(*) \
             FROM messages GROUP BY 1 ORDER BY 1 NULLS FIRST",
            Caps::default(),
        ))
        .unwrap();
    let sorted = |batches| {
        let mut rows: Vec<String> = json_rows(batches)
            .iter()
            .map(|r| format!("{r:?}"))
            .collect();
        rows.sort();
        rows
    };
    let language = sorted(&language.batches);
    assert!(language.len() > 1, "{language:?}");
    assert_eq!(language, sorted(&sql.batches));
}

#[test]
fn full_text_leaves_fold_the_l_stroke_like_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = one_message_archive(dir.path());
    let rt = runtime();
    let engine = engine(&path);
    let count = |query: &str| -> i64 {
        let answer = rt
            .block_on(engine.query_collect(query, Caps::default()))
            .unwrap();
        json_rows(&answer.batches)[0][0].as_i64().unwrap()
    };
    for query in [
        "sessions where ~\"łodzi\" | count",
        "sessions where ~\"lodzi\" | count",
        "północy | count",
        "messages where ~\"ŁODZI północy\" | count",
    ] {
        assert_eq!(count(query), 1, "{query}");
    }
    assert_eq!(count("sessions where ~\"łodzią\" | count"), 0);
    // Substring fields push a widened `LIKE` into SQLite where its ASCII-only folding is not
    // enough (non-ASCII letters, `k`, `s`); DataFusion checks the exact match above the scan.
    for (query, want) in [
        ("messages where text:\"ŁODZI\" | count", 1),
        ("messages where text:\"SPOTKANIE\" | count", 1),
        ("messages where text:ó | count", 1),
        ("messages where text:ą | count", 0),
        ("messages where NOT text:ą | count", 1),
    ] {
        assert_eq!(count(query), want, "{query}");
    }
    // The aggregate's input is counted above the re-applied exact match, not below it: the
    // widened `LIKE` lets the one message through the scan for `ą`, the count sees none.
    for (query, want) in [
        ("messages where text:ą | count", 0),
        ("messages where text:ó | count", 1),
    ] {
        let answer = rt
            .block_on(engine.query_collect(query, Caps::default()))
            .unwrap();
        assert_eq!(answer.input_rows, Some(want), "{query}");
    }
}

/// An archive of one Claude Code session with one user message with Polish letters.
fn one_message_archive(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("claude/projects/-home-dev-x/s1.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let line = serde_json::json!({
        "parentUuid": null, "isSidechain": false, "userType": "external", "cwd": "/home/dev/x",
        "sessionId": "0f6d8a8e-0000-4000-8000-000000000001", "version": "2.1.39",
        "gitBranch": "main", "type": "user",
        "message": {"role": "user", "content": "Spotkanie w Łodzi o północy"},
        "uuid": "0f6d8a8e-0000-4000-8000-000000000002", "timestamp": "2026-01-05T09:00:00.000Z"
    });
    std::fs::write(&file, format!("{line}\n")).unwrap();
    let path = dir.join("archive.db");
    let mut archive = quarry_archive::Archive::open(&path).unwrap();
    quarry_ingest::ingest(
        &mut archive,
        &quarry_ingest::IngestOptions {
            paths: vec![dir.join("claude")],
            owner: None,
            ..Default::default()
        },
    )
    .unwrap();
    path
}

#[cfg(unix)]
#[test]
fn exports_get_the_ordinary_mode_of_a_new_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let archive = one_message_archive(dir.path());
    // Streamed (parquet, csv) and whole-file (json) exports, each under umask 022.
    for name in ["roles.parquet", "roles.csv", "roles.json"] {
        let path = dir.path().join(name);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg("umask 022 && exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_quarry"))
            .args(["--archive", &archive.display().to_string()])
            .args(["messages | group by role | count", "-o"])
            .arg(&path)
            .env_remove("QUARRY_ARCHIVE")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "{name}: mode {mode:o}");
    }
}

#[test]
fn unit_rows_carry_their_unit_and_their_sessions_origin_and_title() {
    let Some(archive) = corpus_archive() else {
        return;
    };
    let rt = runtime();
    let engine = engine(archive);
    // The oracle: SQLite's join of each unit table with `sessions`.
    for (table, id, unit) in [
        ("messages", "message_id", "message"),
        ("actions", "action_id", "action"),
        ("files", "session_id || path", "file"),
    ] {
        let want = sql_rows(
            archive,
            &format!(
                "SELECT t.{id}, '{unit}', s.origin, s.title FROM {table} t
                 JOIN sessions s ON s.session_id = t.session_id ORDER BY 1"
            ),
        );
        let got = rt
            .block_on(engine.sql_collect(
                &format!("SELECT {id}, unit, origin, title FROM {table} ORDER BY 1"),
                Caps::default(),
            ))
            .unwrap();
        let got = json_rows(&got.batches);
        assert!(want.len() > 100, "{table}");
        assert_eq!(got, want, "{table}");
    }
    // The language reads them as any column: grouped, filtered, projected.
    let grouped = rt
        .block_on(engine.query_collect("messages | group by origin | agg count", Caps::default()))
        .unwrap();
    let want = sql_rows(
        archive,
        "SELECT s.origin, COUNT(*) FROM messages m JOIN sessions s USING (session_id)
         GROUP BY 1 ORDER BY 2 DESC, 1",
    );
    assert_eq!(json_rows(&grouped.batches), want);
    let assertion = rt
        .block_on(engine.sql_collect("SELECT DISTINCT unit FROM assertions", Caps::default()))
        .unwrap();
    assert!(
        json_rows(&assertion.batches)
            .iter()
            .all(|r| r[0] == "assertion")
    );
}
