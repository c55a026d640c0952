//! The columnar snapshot: both sources give the same answers (every conformance positive and
//! every differential query), a further ingest makes the snapshot stale and `auto` reads the
//! archive until an incremental refresh rewrites exactly the partitions the ingest touched, a
//! killed `quarry snapshot` leaves the previous snapshot answering, and exports read back with
//! the parquet and arrow crates equal the query's answer, types included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use quarry::arrow::datatypes::DataType;
use quarry::arrow::record_batch::RecordBatch;
use quarry::{Caps, Error, Options, Quarry, Source, SourceChoice};
use quarry_providers::snapshot::{Manifest, WriteSettings};
use serde_json::Value;

use crate::support::rows::json_rows;
use crate::support::{corpus, open, quarry, shared};
use crate::support::{corpus_archive, runtime};

/// A session over `archive` reading `source`, the snapshot at `snapshot`, in UTC.
fn session(archive: &Path, source: SourceChoice, snapshot: &Path) -> Result<Quarry, Error> {
    let mut options = Options::new(archive);
    options.tz = Some("UTC".into());
    options.source = source;
    options.snapshot_url = Some(snapshot.display().to_string());
    Quarry::open(&options)
}

/// Writes (or refreshes) the snapshot of `archive` at `snapshot`.
fn write_snapshot(archive: &Path, snapshot: &Path) -> quarry_providers::snapshot::WriteReport {
    write_snapshot_with(archive, snapshot, &WriteSettings::default())
}

/// Writes (or refreshes) the snapshot of `archive` at `snapshot` in the layout `settings` says.
fn write_snapshot_with(
    archive: &Path,
    snapshot: &Path,
    settings: &WriteSettings,
) -> quarry_providers::snapshot::WriteReport {
    let mut options = Options::new(archive);
    options.snapshot_url = Some(snapshot.display().to_string());
    runtime()
        .block_on(quarry::export::write_snapshot(&options, settings, &|_| {}))
        .unwrap()
}

fn manifest(snapshot: &Path) -> Manifest {
    serde_json::from_slice(&std::fs::read(snapshot.join("manifest.json")).unwrap()).unwrap()
}

/// Floats equal to 1e-12 relative, everything else exactly.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// Rows as comparable text, sorted (the sources may return unordered rows in another order).
fn sorted(rows: &[Vec<Value>]) -> Vec<Vec<Value>> {
    let mut rows = rows.to_vec();
    rows.sort_by_key(|r| Value::Array(r.clone()).to_string());
    rows
}

/// Whether a query fixes the order and the membership of its rows, so both sources must give
/// the same rows in the same order: anything but a `limit` or `top` over ties.
fn answers_are_comparable(query: &str) -> bool {
    !query.contains("limit") && !query.contains("first") && !query.contains("last")
}

/// One source's answer: its schema's types, its rows (with attachments), and whether the
/// snapshot answered.
type Answer = (Vec<DataType>, Vec<Vec<Value>>, bool);

/// The answer of `query` from `quarry`.
fn answer(quarry: &Quarry, query: &str) -> Result<Answer, Error> {
    let result = runtime().block_on(quarry.query_collect(query, Caps::default()))?;
    let types = result
        .schema
        .fields()
        .iter()
        .map(|f| f.data_type().clone())
        .collect();
    let mut rows = json_rows(&result.batches);
    for attachment in &result.attachments {
        rows.push(vec![Value::from(attachment.unit.clone())]);
        rows.extend(sorted(&json_rows(&attachment.batches)));
    }
    Ok((types, rows, result.meta.source == Source::Snapshot))
}

/// Every query of `queries` answered alike by both sources over `archive`.
fn check_sources_agree(archive: &Path, snapshot: &Path, queries: &[String]) {
    let sqlite = session(archive, SourceChoice::Sqlite, snapshot).unwrap();
    let columnar = session(archive, SourceChoice::Snapshot, snapshot).unwrap();
    assert_eq!(columnar.source(), Source::Snapshot);
    let mut failures = Vec::new();
    let mut compared = 0;
    let mut unavailable = 0;
    for query in queries {
        let (a, b) = (answer(&sqlite, query), answer(&columnar, query));
        match (a, b) {
            (Ok((types_a, rows_a, false)), Ok((types_b, rows_b, true))) => {
                compared += 1;
                if types_a != types_b {
                    failures.push(format!("{query}: types {types_a:?} != {types_b:?}"));
                    continue;
                }
                if rows_a.len() != rows_b.len() {
                    failures.push(format!(
                        "{query}: {} rows != {}",
                        rows_a.len(),
                        rows_b.len()
                    ));
                    continue;
                }
                if !answers_are_comparable(query) {
                    continue;
                }
                let (ordered_a, ordered_b) = (sorted(&rows_a), sorted(&rows_b));
                if !ordered_a
                    .iter()
                    .zip(&ordered_b)
                    .all(|(x, y)| same(&Value::Array(x.clone()), &Value::Array(y.clone())))
                {
                    let first = ordered_a.iter().zip(&ordered_b).find(|(x, y)| {
                        !same(&Value::Array((*x).clone()), &Value::Array((*y).clone()))
                    });
                    failures.push(format!("{query}: rows differ, first {first:?}"));
                }
            }
            (Err(Error::EmbeddingsUnavailable), Err(Error::EmbeddingsUnavailable)) => {
                unavailable += 1;
            }
            (a, b) => failures.push(format!(
                "{query}: sqlite {:?} / snapshot {:?}",
                a.map(|r| r.1.len()),
                b.map(|r| r.1.len())
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {compared}:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(
        compared + unavailable,
        queries.len(),
        "every query compared (or refused alike)"
    );
}

fn conformance_positives(shared: &Path) -> Vec<String> {
    std::fs::read_to_string(shared.join("conformance/polylogue-positive.tsv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split('\t').nth(1).unwrap().to_string())
        .collect()
}

fn ingest(archive: &Path, paths: &[PathBuf]) {
    let mut a = quarry_archive::Archive::open(archive).unwrap();
    quarry_ingest::ingest(
        &mut a,
        &quarry_ingest::IngestOptions {
            paths: paths.to_vec(),
            owner: Some("test".into()),
            ..Default::default()
        },
    )
    .unwrap();
}

#[test]
fn both_sources_answer_every_conformance_and_differential_query_alike() {
    let (Some(shared), Some(archive)) = (shared(), corpus_archive()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("snap");
    let report = write_snapshot(archive, &snapshot);
    assert!(report.full && !report.unchanged);
    let mut queries = conformance_positives(&shared);
    queries.extend(crate::support::questions::queries());
    assert!(queries.len() >= 150, "{} queries", queries.len());
    check_sources_agree(archive, &snapshot, &queries);
    // Every table's rows are in the snapshot, as many as the archive has.
    let conn = open(archive);
    for (table, count) in crate::support::table_counts(&conn) {
        assert_eq!(
            report
                .tables
                .iter()
                .find(|t| t.table == table)
                .unwrap()
                .rows,
            count as u64,
            "{table}"
        );
    }
}

/// Partition → file paths of every table.
fn files_by_partition(m: &Manifest) -> BTreeMap<(String, String), Vec<String>> {
    m.tables
        .iter()
        .flat_map(|(t, files)| {
            files.partitions.iter().map(move |(p, f)| {
                (
                    (t.clone(), p.clone()),
                    f.files.iter().map(|f| f.path.clone()).collect(),
                )
            })
        })
        .collect()
}

#[test]
fn a_further_ingest_makes_the_snapshot_stale_and_a_refresh_rewrites_only_its_partitions() {
    let Some(corpus) = corpus() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let snapshot = dir.path().join("archive.snapshot");
    ingest(&archive, &[corpus.join("claude-code")]);
    let first = write_snapshot(&archive, &snapshot);
    let before = manifest(&snapshot);
    // Auto reads the fresh snapshot (its default place is beside the archive).
    let auto = Quarry::open(&Options::new(&archive)).unwrap();
    assert_eq!(auto.source(), Source::Snapshot);
    drop(auto);

    ingest(&archive, &[corpus.join("codex")]);
    let auto = Quarry::open(&Options::new(&archive)).unwrap();
    assert_eq!(
        auto.source(),
        Source::Sqlite,
        "a stale snapshot is not read"
    );
    let plan = runtime()
        .block_on(auto.explain_plan("messages | count"))
        .unwrap();
    assert!(
        plan.starts_with("source: sqlite (auto: the snapshot"),
        "{plan}"
    );
    match session(&archive, SourceChoice::Snapshot, &snapshot) {
        Err(Error::StaleSnapshot {
            snapshot, archive, ..
        }) => assert!(snapshot < archive),
        other => panic!(
            "--source snapshot on a stale snapshot: {:?}",
            other.map(|q| q.source())
        ),
    }

    let refresh = write_snapshot(&archive, &snapshot);
    assert!(!refresh.full && refresh.previous_generation == Some(first.generation));
    let after = manifest(&snapshot);
    // The oracle: the months of the sessions the second ingest added, by SQLite.
    let conn = open(&archive);
    let mut stmt = conn
        .prepare(
            "SELECT DISTINCT COALESCE(strftime('%Y-%m', created_at / 1000, 'unixepoch'), 'none')
             FROM sessions WHERE origin = 'codex-session'",
        )
        .unwrap();
    let touched: BTreeSet<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!touched.is_empty());
    let (old, new) = (files_by_partition(&before), files_by_partition(&after));
    let mut rewritten = BTreeSet::new();
    for (key, files) in &new {
        match old.get(key) {
            Some(previous) if previous == files => {}
            _ => {
                rewritten.insert(key.1.clone());
            }
        }
    }
    assert_eq!(
        rewritten, touched,
        "partitions rewritten vs. partitions the ingest touched"
    );
    for (key, files) in &old {
        if !touched.contains(&key.1) {
            assert_eq!(new.get(key), Some(files), "{key:?} kept");
        }
    }
    // Unchanged files are the very same files.
    let kept: usize = refresh.tables.iter().map(|t| t.partitions_kept).sum();
    assert!(kept > 0);
    // Fresh again: auto reads it, and it answers as the archive does.
    let auto = Quarry::open(&Options::new(&archive)).unwrap();
    assert_eq!(auto.source(), Source::Snapshot);
    let queries: Vec<String> = crate::support::questions::queries();
    check_sources_agree(&archive, &snapshot, &queries);
    // Nothing changed since: a no-op.
    assert!(write_snapshot(&archive, &snapshot).unchanged);
}

#[test]
fn a_killed_snapshot_leaves_the_previous_one_answering() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    quarry_synth::generate(
        &corpus,
        quarry_synth::Size::Messages(30_000),
        quarry_synth::Shape::Lean,
        5,
    )
    .unwrap();
    let archive = dir.path().join("archive.db");
    ingest(&archive, &[corpus]);
    let snapshot = dir.path().join("archive.snapshot");
    write_snapshot(&archive, &snapshot);
    let before = std::fs::read(snapshot.join("manifest.json")).unwrap();
    let count = |source: &str| {
        let out = quarry(&[
            "--archive",
            archive.to_str().unwrap(),
            "--source",
            source,
            "--format",
            "json",
            "messages | group by role | count",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (v["source"].clone(), v["rows"].clone())
    };
    let mut killed_midway = false;
    for _ in 0..5 {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_quarry"))
            .args(["--archive", archive.to_str().unwrap(), "snapshot", "--full"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Wait for the first file of the new snapshot, then kill the writer.
        let listed = |dir: &Path| -> usize {
            walkdir::WalkDir::new(dir)
                .into_iter()
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_file())
                .count()
        };
        let existing = listed(&snapshot);
        let started = std::time::Instant::now();
        while listed(&snapshot) == existing && started.elapsed().as_secs() < 60 {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        child.kill().ok();
        let status = child.wait().unwrap();
        if !status.success() {
            killed_midway = true;
            break;
        }
    }
    assert!(killed_midway, "the snapshot writer was never caught midway");
    assert_eq!(
        std::fs::read(snapshot.join("manifest.json")).unwrap(),
        before,
        "the manifest is the previous one"
    );
    let (source, rows) = count("snapshot");
    assert_eq!(source, "snapshot");
    assert_eq!(rows, count("sqlite").1);
    // The next write completes and removes what the killed one left.
    let report = write_snapshot(&archive, &snapshot);
    assert!(report.full || report.unchanged);
}

/// Reads a Parquet file back with the parquet crate.
fn read_parquet(path: &Path) -> Vec<RecordBatch> {
    let file = std::fs::File::open(path).unwrap();
    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Reads an Arrow IPC file back with the arrow crate.
fn read_arrow(path: &Path) -> Vec<RecordBatch> {
    let file = std::fs::File::open(path).unwrap();
    quarry::arrow::ipc::reader::FileReader::try_new(file, None)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn types(batches: &[RecordBatch]) -> Vec<(String, DataType)> {
    batches[0]
        .schema()
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().clone()))
        .collect()
}

#[test]
fn exports_read_back_equal_the_answer_with_their_types() {
    let Some(archive) = corpus_archive() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let query = "messages where role:assistant | sort by time";
    let want = runtime()
        .block_on(crate::support::engine(archive).query_collect(query, Caps::default()))
        .unwrap();
    assert!(want.batches.iter().any(|b| b.num_rows() > 0));
    let want_types: Vec<(String, DataType)> = want
        .schema
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().clone()))
        .collect();
    assert!(
        want_types
            .iter()
            .any(|(_, t)| matches!(t, DataType::Timestamp(_, Some(_))))
    );
    for (file, read) in [
        ("a.parquet", read_parquet as fn(&Path) -> Vec<RecordBatch>),
        ("a.arrow", read_arrow),
    ] {
        let path = dir.path().join(file);
        let out = quarry(&[
            "--archive",
            archive.to_str().unwrap(),
            "--tz",
            "UTC",
            query,
            "-o",
            path.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = read(&path);
        assert_eq!(types(&got), want_types, "{file}");
        assert_eq!(json_rows(&got), json_rows(&want.batches), "{file}");
    }
    // Whole tables, Hive-partitioned, read back per partition.
    let to = dir.path().join("export");
    let out = quarry(&[
        "--archive",
        archive.to_str().unwrap(),
        "export",
        "--to",
        to.to_str().unwrap(),
        "--tables",
        "sessions",
        "--partition-by",
        "origin",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let conn = open(archive);
    let origins: Vec<(String, i64)> = conn
        .prepare("SELECT origin, COUNT(*) FROM sessions GROUP BY origin")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (origin, count) in origins {
        let folder = to.join("sessions").join(format!("origin={origin}"));
        let rows: usize = std::fs::read_dir(&folder)
            .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
            .map(|f| {
                read_parquet(&f.unwrap().path())
                    .iter()
                    .map(RecordBatch::num_rows)
                    .sum::<usize>()
            })
            .sum();
        assert_eq!(rows as i64, count, "{origin}");
    }
    // Arrow IPC of a whole table, with its timestamps.
    let out = quarry(&[
        "--archive",
        archive.to_str().unwrap(),
        "--format",
        "arrow",
        "export",
        "--to",
        to.to_str().unwrap(),
        "--tables",
        "messages",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = read_arrow(&to.join("messages.arrow"));
    let rows: usize = got.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(
        rows as i64,
        crate::support::scalar(&conn, "SELECT COUNT(*) FROM messages", [])
    );
    let time = got[0]
        .schema()
        .field_with_name("occurred_at_ms")
        .unwrap()
        .data_type()
        .clone();
    assert!(matches!(time, DataType::Timestamp(_, Some(_))), "{time:?}");
}

#[test]
fn memory_urls_hold_a_snapshot_and_an_export_within_the_process() {
    let Some(archive) = corpus_archive() else {
        return;
    };
    let mut options = Options::new(archive);
    options.snapshot_url = Some("memory://tests/snap".into());
    let rt = runtime();
    rt.block_on(quarry::export::write_snapshot(
        &options,
        &WriteSettings::default(),
        &|_| {},
    ))
    .unwrap();
    options.source = SourceChoice::Snapshot;
    let q = Quarry::open(&options).unwrap();
    assert_eq!(q.source(), Source::Snapshot);
    let n = rt
        .block_on(q.query_collect("messages | count", Caps::default()))
        .unwrap();
    let conn = open(archive);
    assert_eq!(
        json_rows(&n.batches)[0][0],
        Value::from(crate::support::scalar(
            &conn,
            "SELECT COUNT(*) FROM messages",
            []
        ))
    );
    let written = rt
        .block_on(quarry::export::export_tables(
            &q,
            "memory://tests/out",
            &["turns".into()],
            quarry::Format::Ndjson,
            None,
        ))
        .unwrap();
    assert_eq!(
        written[0].rows as i64,
        crate::support::scalar(&conn, "SELECT COUNT(*) FROM turns", [])
    );
}

/// The S3-compatible server `.ci/run` starts on loopback (`QUARRY_TEST_S3_ENDPOINT`, with the
/// bucket `QUARRY_TEST_S3_BUCKET` made), or `None` with a notice; under `CI=true` its absence
/// fails the test.
fn s3_server() -> Option<(String, String)> {
    match std::env::var("QUARRY_TEST_S3_ENDPOINT") {
        Ok(endpoint) => Some((
            endpoint,
            std::env::var("QUARRY_TEST_S3_BUCKET").unwrap_or_else(|_| "quarry-test".into()),
        )),
        Err(_) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("QUARRY_TEST_S3_ENDPOINT is not set under CI: .ci/run starts moto's server")
        }
        Err(_) => {
            eprintln!(
                "notice: QUARRY_TEST_S3_ENDPOINT not set (see .ci/run); skipping the S3 test"
            );
            None
        }
    }
}

#[test]
fn snapshot_and_exports_on_an_s3_compatible_server() {
    let (Some((endpoint, bucket)), Some(archive)) = (s3_server(), corpus_archive()) else {
        return;
    };
    let env = [
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "quarry-test"),
        ("AWS_SECRET_ACCESS_KEY", "quarry-test"),
        ("AWS_REGION", "us-east-1"),
    ];
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_quarry"))
            .arg("--archive")
            .arg(archive)
            .args(args)
            .envs(env)
            .env_remove("QUARRY_ARCHIVE")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "quarry {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let prefix = format!("s3://{bucket}/run-{}", std::process::id());
    let snapshot = format!("{prefix}/snapshot");
    run(&["snapshot", "--to", &snapshot]);
    let query = "messages | group by role | agg count, sum:word_count";
    let answer = |source: &str| -> Value {
        let out = run(&[
            "--snapshot-url",
            &snapshot,
            "--source",
            source,
            "--format",
            "json",
            query,
        ]);
        serde_json::from_slice(&out).unwrap()
    };
    let (remote, local) = (answer("snapshot"), answer("sqlite"));
    assert_eq!(remote["source"], "snapshot");
    assert_eq!(remote["rows"], local["rows"]);
    // A refresh with nothing changed is a no-op on the object store too.
    assert!(String::from_utf8_lossy(&run(&["snapshot", "--to", &snapshot])).contains("up to date"));
    run(&[
        "export",
        "--to",
        &format!("{prefix}/export"),
        "--tables",
        "sessions",
    ]);
    run(&[
        "--tz",
        "UTC",
        "usage | group by model | agg sum:output_tokens",
        "-o",
        &format!("{prefix}/by-model.parquet"),
    ]);

    // Read back with object_store and the parquet crate.
    let store = object_store::aws::AmazonS3Builder::new()
        .with_endpoint(&endpoint)
        .with_allow_http(true)
        .with_bucket_name(&bucket)
        .with_access_key_id("quarry-test")
        .with_secret_access_key("quarry-test")
        .with_region("us-east-1")
        .build()
        .unwrap();
    let get = |key: String| {
        runtime().block_on(async {
            use object_store::ObjectStoreExt;
            store
                .get(&object_store::path::Path::from(key))
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap()
        })
    };
    let read = |bytes| -> Vec<RecordBatch> {
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let run_id = format!("run-{}", std::process::id());
    let sessions = read(get(format!("{run_id}/export/sessions.parquet")));
    let conn = open(archive);
    let rows: usize = sessions.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(
        rows as i64,
        crate::support::scalar(&conn, "SELECT COUNT(*) FROM sessions", [])
    );
    let by_model = read(get(format!("{run_id}/by-model.parquet")));
    let total: i64 = json_rows(&by_model)
        .iter()
        .filter_map(|r| r[1].as_i64())
        .sum();
    assert_eq!(
        total,
        crate::support::scalar(&conn, "SELECT SUM(output_tokens) FROM usage", [])
    );
    let manifest: Manifest =
        serde_json::from_slice(&get(format!("{run_id}/snapshot/manifest.json"))).unwrap();
    assert_eq!(
        manifest.tables["messages"].rows as i64,
        crate::support::scalar(&conn, "SELECT COUNT(*) FROM messages", [])
    );
}

/// The sort-key values of `sql` asked of SQLite directly (the oracle), as JSON.
fn sqlite_column(conn: &rusqlite::Connection, sql: &str) -> Vec<Value> {
    let mut statement = conn.prepare(sql).unwrap();
    statement
        .query_map([], |row| row.get::<_, Option<i64>>(0))
        .unwrap()
        .map(|v| v.unwrap().map_or(Value::Null, Value::from))
        .collect()
}

#[test]
fn top_k_on_the_snapshot_is_bounded_by_row_group_statistics_and_stays_exact() {
    let Some(archive) = corpus_archive() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("snap");
    // Small row groups, so there are many to choose among.
    let settings = WriteSettings {
        row_group_rows: 64,
        ..WriteSettings::default()
    };
    write_snapshot_with(archive, &snapshot, &settings);
    let columnar = session(archive, SourceChoice::Snapshot, &snapshot).unwrap();
    let conn = open(archive);
    // (SQL rather than the language, the query, the oracle's SQL for the first column).
    let cases: [(bool, &str, &str); 7] = [
        // The language sorts NULLs last in both directions.
        (
            false,
            "messages where role:assistant | sort by output_tokens desc | limit 10 | select output_tokens, message_id",
            "SELECT output_tokens FROM messages WHERE role = 'assistant' ORDER BY output_tokens DESC NULLS LAST LIMIT 10",
        ),
        // SQL's DESC puts NULLs first (DataFusion's default): the bound keeps the NULLs.
        (
            true,
            "SELECT output_tokens, message_id FROM messages WHERE role = 'assistant' ORDER BY output_tokens DESC LIMIT 10",
            "SELECT output_tokens FROM messages WHERE role = 'assistant' ORDER BY output_tokens DESC NULLS FIRST LIMIT 10",
        ),
        (
            true,
            "SELECT output_tokens, message_id FROM messages WHERE role = 'assistant' ORDER BY output_tokens DESC NULLS LAST LIMIT 10",
            "SELECT output_tokens FROM messages WHERE role = 'assistant' ORDER BY output_tokens DESC NULLS LAST LIMIT 10",
        ),
        (
            false,
            "messages | sort by word_count | limit 7 | select word_count, message_id",
            "SELECT word_count FROM messages ORDER BY word_count ASC NULLS LAST LIMIT 7",
        ),
        (
            true,
            "SELECT word_count, session_id FROM messages ORDER BY word_count DESC NULLS LAST, message_id LIMIT 5 OFFSET 3",
            "SELECT word_count FROM messages ORDER BY word_count DESC NULLS LAST LIMIT 5 OFFSET 3",
        ),
        // No user message has output tokens: nothing passes the bound, and the plain plan
        // answers (NULLs last, so ten NULLs).
        (
            true,
            "SELECT output_tokens FROM messages WHERE role = 'user' ORDER BY output_tokens DESC NULLS LAST LIMIT 10",
            "SELECT output_tokens FROM messages WHERE role = 'user' ORDER BY output_tokens DESC NULLS LAST LIMIT 10",
        ),
        // A filter most rows fail: the bound's rows are too few, so the plain plan answers.
        (
            true,
            "SELECT word_count FROM messages WHERE role = 'system' ORDER BY word_count DESC NULLS LAST LIMIT 20",
            "SELECT word_count FROM messages WHERE role = 'system' ORDER BY word_count DESC NULLS LAST LIMIT 20",
        ),
    ];
    for (sql, query, oracle) in cases {
        let result = runtime()
            .block_on(async {
                if sql {
                    columnar.sql_collect(query, Caps::default()).await
                } else {
                    columnar.query_collect(query, Caps::default()).await
                }
            })
            .unwrap();
        assert_eq!(result.meta.source, Source::Snapshot);
        let got: Vec<Value> = json_rows(&result.batches)
            .into_iter()
            .map(|r| r[0].clone())
            .collect();
        let expected = sqlite_column(&conn, oracle);
        assert!(!expected.is_empty(), "{oracle}");
        assert_eq!(got, expected, "{query}");
    }
    // The bound is taken for a top-k over the snapshot (explain shows it), and only there.
    let explained = runtime()
        .block_on(columnar.explain_plan(cases[0].1))
        .unwrap();
    assert!(
        explained.contains("top-k: bounds from row-group statistics"),
        "{explained}"
    );
    // Position 0 (a session's first message) is the column's smallest value and most row
    // groups hold one: the first ten rows equal to it are the answer, read without sorting.
    let query = "messages | sort by position | limit 10 | select position, message_id";
    let explained = runtime().block_on(columnar.explain_plan(query)).unwrap();
    assert!(
        explained.contains("the first rows with messages.position = Int64(0), unsorted"),
        "{explained}"
    );
    let result = runtime()
        .block_on(columnar.query_collect(query, Caps::default()))
        .unwrap();
    let got: Vec<Value> = json_rows(&result.batches)
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    let expected = sqlite_column(
        &conn,
        "SELECT position FROM messages ORDER BY position ASC NULLS LAST LIMIT 10",
    );
    assert_eq!(got, expected);
    let explained = runtime()
        .block_on(columnar.explain_plan("messages | group by role | count"))
        .unwrap();
    assert!(!explained.contains("top-k"), "{explained}");
    let sqlite = session(archive, SourceChoice::Sqlite, &snapshot).unwrap();
    let explained = runtime().block_on(sqlite.explain_plan(cases[0].1)).unwrap();
    assert!(!explained.contains("top-k"), "{explained}");
}

#[test]
fn the_text_columns_take_their_own_codec_and_a_change_of_it_rewrites_the_snapshot() {
    let Some(archive) = corpus_archive() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("snap");
    let write = |text: Option<&str>| {
        let settings = WriteSettings {
            compression: "zstd(1)".into(),
            text_compression: text.map(str::to_string),
            ..WriteSettings::default()
        };
        write_snapshot_with(archive, &snapshot, &settings)
    };
    // The codec of every column chunk of every file, by column name.
    let codecs = || {
        let mut seen: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for file in manifest(&snapshot).files() {
            let reader = parquet::file::reader::SerializedFileReader::new(
                std::fs::File::open(snapshot.join(&file.path)).unwrap(),
            )
            .unwrap();
            use parquet::file::reader::FileReader;
            for group in reader.metadata().row_groups() {
                for column in group.columns() {
                    seen.entry(column.column_path().string())
                        .or_default()
                        .insert(format!("{:?}", column.compression()));
                }
            }
        }
        seen
    };
    let report = write(Some("lz4"));
    assert!(report.full);
    assert_eq!(manifest(&snapshot).text_compression.as_deref(), Some("lz4"));
    let seen = codecs();
    assert_eq!(seen["text"], BTreeSet::from(["LZ4_RAW".to_string()]));
    for (column, codecs) in seen.iter().filter(|(c, _)| *c != "text") {
        assert!(
            codecs.iter().all(|c| c.starts_with("ZSTD")),
            "{column}: {codecs:?}"
        );
    }
    // Answers read through the text column equal the archive's.
    check_sources_agree(
        archive,
        &snapshot,
        &[
            "messages where text:error | group by role | count".to_string(),
            "blocks where text:the | count".to_string(),
            "messages where text:timeout | group by role | count".to_string(),
        ],
    );
    // Unchanged settings reuse the files; another text codec rewrites them all.
    assert!(write(Some("lz4")).unchanged);
    let again = write(None);
    assert!(again.full && !again.unchanged);
    assert!(manifest(&snapshot).text_compression.is_none());
    assert!(codecs()["text"].iter().all(|c| c.starts_with("ZSTD")));
}
