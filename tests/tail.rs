//! A grown transcript read from where it was left: after many small appends every table equals
//! a fresh ingest of the final file (and of the file at points in between); a file grown by a
//! record is read only from its last chunks on; truncations and rewrites of the archived tail are
//! caught, and `--verify` finds what the cheap check cannot (docs/live.md).

use std::path::Path;

use serde_json::Value;

use crate::support::{corpus, ingest_with};

/// The tables a transcript's rows live in, each compared whole (every column but the session's
/// replacement epoch, which a grown session keeps from its first write).
const TABLES: &[&str] = &[
    "sessions",
    "messages",
    "blocks",
    "actions",
    "files",
    "runs",
    "observed_events",
    "context_snapshots",
    "delegations",
    "events_raw",
    "turns",
    "usage_records",
    "usage",
];

/// Every row of every table, as sorted text lines (per table).
fn contents(archive: &Path) -> Vec<(String, Vec<String>)> {
    let conn = crate::support::open(archive);
    TABLES
        .iter()
        .map(|table| {
            let mut stmt = conn.prepare(&format!("SELECT * FROM {table}")).unwrap();
            let names: Vec<String> = stmt.column_names().iter().map(|n| n.to_string()).collect();
            let mut rows: Vec<String> = stmt
                .query_map([], |r| {
                    let mut row = Vec::new();
                    for (i, name) in names.iter().enumerate() {
                        // Both depend on the order the writes came in (`session_num`: the
                        // session's number in order of arrival, checked apart).
                        if name == "replacement_epoch" || name == "session_num" {
                            continue;
                        }
                        let v = match r.get_ref(i)? {
                            rusqlite::types::ValueRef::Null => Value::Null,
                            rusqlite::types::ValueRef::Integer(v) => Value::from(v),
                            rusqlite::types::ValueRef::Real(v) => Value::from(v),
                            rusqlite::types::ValueRef::Text(t) => {
                                Value::from(String::from_utf8_lossy(t).to_string())
                            }
                            rusqlite::types::ValueRef::Blob(b) => Value::from(b.len()),
                        };
                        row.push(format!("{name}={v}"));
                    }
                    Ok(row.join(" | "))
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            rows.sort();
            (table.to_string(), rows)
        })
        .collect()
}

/// Asserts `archive` holds what a fresh ingest of `folder` gives, table by table and row by
/// row, and that the full-text index agrees with its content.
fn equals_fresh(archive: &Path, folder: &Path, scratch: &Path, at: &str) {
    let fresh = scratch.join(format!("fresh-{at}.db"));
    let _ = std::fs::remove_file(&fresh);
    ingest_with(&fresh, &["--owner", "alice", "--machine", "m"], &[folder]);
    let (got, want) = (contents(archive), contents(&fresh));
    for ((table, got), (_, want)) in got.iter().zip(&want) {
        if got != want {
            let missing: Vec<&String> = want.iter().filter(|r| !got.contains(r)).take(3).collect();
            let extra: Vec<&String> = got.iter().filter(|r| !want.contains(r)).take(3).collect();
            panic!(
                "{at}: table {table} differs ({} rows, fresh {}):\n  missing {missing:#?}\n  extra {extra:#?}",
                got.len(),
                want.len()
            );
        }
    }
    crate::support::assert_numbered(&crate::support::open(archive));
    crate::support::assert_resolved_as_a_whole(archive);
    // The full-text index: consistent, and finding the same blocks as the fresh one's (a block
    // replaced after the cut leaves no entry behind).
    let conn = rusqlite::Connection::open(archive).unwrap();
    conn.execute(
        "INSERT INTO blocks_fts (blocks_fts) VALUES ('integrity-check')",
        [],
    )
    .unwrap_or_else(|e| panic!("{at}: the full-text index is damaged: {e}"));
    let hits = |a: &Path| {
        let conn = crate::support::open(a);
        [
            "the", "file", "error", "test", "run", "import", "data", "a", "md", "is",
        ]
        .iter()
        .map(|term| {
            let n = crate::support::scalar(
                &conn,
                "SELECT count(*) FROM blocks_fts WHERE blocks_fts MATCH ?1",
                [term],
            );
            format!("{term}:{n}")
        })
        .collect::<Vec<_>>()
    };
    assert_eq!(hits(archive), hits(&fresh), "{at}: full-text hits");
    let _ = std::fs::remove_file(&fresh);
}

fn append(file: &Path, bytes: &[u8]) {
    crate::support::append_bytes(file, bytes);
}

fn ingest(archive: &Path, folder: &Path) -> Value {
    ingest_with(archive, &["--owner", "alice", "--machine", "m"], &[folder])
}

/// Line boundaries (byte offsets after each newline) of `bytes`.
fn line_ends(bytes: &[u8]) -> Vec<usize> {
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect()
}

/// Writes `bytes` to `file` in pieces ending at `cuts`, ingesting after each; compares every
/// table with a fresh ingest at each cut in `compare_at` (indexes into `cuts`) and at the end.
/// Returns the summed `files_continued` and the `read_whole` reasons.
fn grow(
    bytes: &[u8],
    cuts: &[usize],
    compare_at: &[usize],
    file: &Path,
    archive: &Path,
    scratch: &Path,
) -> (u64, Vec<String>) {
    let folder = file.parent().unwrap();
    let mut written = 0;
    let mut continued = 0;
    let mut whole = Vec::new();
    for (i, &cut) in cuts.iter().chain(std::iter::once(&bytes.len())).enumerate() {
        if cut <= written {
            continue;
        }
        append(file, &bytes[written..cut]);
        written = cut;
        let summary = ingest(archive, folder);
        continued += summary["files_continued"].as_u64().unwrap();
        if let Some(reasons) = summary["read_whole"].as_object() {
            whole.extend(reasons.keys().cloned());
        }
        if compare_at.contains(&i) || written == bytes.len() {
            equals_fresh(
                archive,
                folder,
                scratch,
                &format!("append {i} ({written} bytes)"),
            );
        }
    }
    (continued, whole)
}

#[test]
fn a_claude_code_session_grown_in_many_appends_equals_a_fresh_ingest() {
    let Some(corpus) = corpus() else { return };
    let source =
        corpus.join("claude-code/marot-spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl");
    let bytes = std::fs::read(&source).unwrap();
    let ends = line_ends(&bytes);
    let records: Vec<Value> = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    // Cuts: every 60th line end; between two records of one response (sharing `message.id`);
    // and two in the middle of a line.
    let mut cuts: Vec<usize> = ends.iter().step_by(60).copied().collect();
    let id = |r: &Value| {
        r.pointer("/message/id")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let straddles: Vec<usize> = (1..records.len())
        .filter(|&i| {
            records[i]["type"] == "assistant"
                && records[i - 1]["type"] == "assistant"
                && id(&records[i]).is_some()
                && id(&records[i]) == id(&records[i - 1])
        })
        .collect();
    assert!(
        straddles.len() > 10,
        "the file has responses written as several records"
    );
    for &i in straddles.iter().step_by(straddles.len() / 5) {
        cuts.push(ends[i - 1]);
    }
    cuts.push(ends[700] + 17);
    cuts.push(ends[1300] + 3);
    cuts.sort_unstable();
    cuts.dedup();
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("projects");
    std::fs::create_dir_all(&folder).unwrap();
    let file = folder.join(source.file_name().unwrap());
    let archive = dir.path().join("archive.db");
    let compare_at: Vec<usize> = (0..cuts.len()).step_by(3).collect();
    let (continued, whole) = grow(&bytes, &cuts, &compare_at, &file, &archive, dir.path());
    // Most appends were read from where the last read stopped; the rest were read whole for a
    // stated reason (a line cut in the middle, or a response reaching back before the cut).
    assert!(
        continued as usize * 3 >= cuts.len() * 2,
        "{continued} of {} appends continued; whole: {whole:?}",
        cuts.len()
    );
    // The cut moved on with the session: what stays archived as it is covers most of it.
    let state: Value = serde_json::from_str(&crate::support::text(
        &crate::support::open(&archive),
        "SELECT state FROM source_resume",
        [],
    ))
    .unwrap();
    let prefix = state["prefix"]["events"].as_u64().unwrap();
    assert!(prefix * 10 >= records.len() as u64 * 8, "cut at {prefix}");
}

#[test]
fn every_claude_code_corpus_file_grown_together_equals_a_fresh_ingest() {
    let Some(corpus) = corpus() else { return };
    let (files, continued) = grow_corpus(&corpus.join("claude-code"));
    assert!(files > 30, "{files} files");
    assert!(continued > 100, "{continued} continued reads");
}

#[test]
fn every_codex_corpus_file_grown_together_equals_a_fresh_ingest() {
    let Some(corpus) = corpus() else { return };
    let (files, continued) = grow_corpus(&corpus.join("codex"));
    assert!(files > 10, "{files} files");
    // 11 rollouts, 7 rounds after the first each: most continue.
    assert!(continued > 60, "{continued} continued reads");
}

#[test]
fn a_session_stored_under_a_new_id_beside_its_copy_grows_as_a_fresh_ingest_reads_it() {
    let Some(corpus) = corpus() else { return };
    let source = corpus.join("claude-code/chiphuyen-sniffly/projects/-Users-chip-dev-ai-music/ba79134d-b6e9-4867-af0c-6941038c9e4b.jsonl");
    let bytes = std::fs::read(&source).unwrap();
    let ends = line_ends(&bytes);
    let half = ends[ends.len() / 2];
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("projects");
    std::fs::create_dir_all(&folder).unwrap();
    // The same session in two files of one folder: the second read is stored under a new id.
    std::fs::write(folder.join("a-copy.jsonl"), &bytes[..half]).unwrap();
    let file = folder.join("b-live.jsonl");
    std::fs::write(&file, &bytes[..half]).unwrap();
    let archive = dir.path().join("archive.db");
    let first = ingest(&archive, &folder);
    let kinds = crate::support::diagnostic_kinds(&first);
    assert!(
        kinds.iter().any(|(_, k)| k == "duplicate_session_id"),
        "{kinds:?}"
    );
    append(&file, &bytes[half..]);
    ingest(&archive, &folder);
    equals_fresh(&archive, &folder, dir.path(), "the renamed session grown");
}

/// Grows every JSONL file under `root` in eight rounds, all files a round at a time, ingesting
/// after each; compares every table with a fresh ingest halfway and at the end. Returns the
/// files and the reads that continued.
fn grow_corpus(root: &Path) -> (usize, u64) {
    let files: Vec<std::path::PathBuf> = walk(root)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("corpus");
    let archive = dir.path().join("archive.db");
    // Each file grows in eight rounds, cut at line ends (so inside multi-record responses as
    // often as they fall there), all files a round at a time, like agents writing side by side.
    let rounds = 8;
    let plans: Vec<(std::path::PathBuf, Vec<u8>, Vec<usize>)> = files
        .iter()
        .map(|f| {
            let bytes = std::fs::read(f).unwrap();
            let ends = line_ends(&bytes);
            let cuts = (1..=rounds)
                .map(|k| {
                    if k == rounds {
                        bytes.len()
                    } else {
                        ends.get(ends.len() * k / rounds).copied().unwrap_or(0)
                    }
                })
                .collect();
            (folder.join(f.strip_prefix(root).unwrap()), bytes, cuts)
        })
        .collect();
    let mut continued = 0;
    for round in 0..rounds {
        for (path, bytes, cuts) in &plans {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let from = if round == 0 { 0 } else { cuts[round - 1] };
            append(path, &bytes[from.min(cuts[round])..cuts[round]]);
        }
        let summary = ingest(&archive, &folder);
        continued += summary["files_continued"].as_u64().unwrap();
        if round == rounds / 2 || round == rounds - 1 {
            equals_fresh(&archive, &folder, dir.path(), &format!("round {round}"));
        }
    }
    (files.len(), continued)
}

/// The files under `dir`, recursively.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

#[test]
fn gemini_and_codex_sessions_grown_record_by_record_equal_a_fresh_ingest() {
    let dir = tempfile::tempdir().unwrap();
    // Gemini CLI JSONL with a rewind: read whole at each append (a rewind rewrites earlier
    // messages), and equal to a fresh ingest after every one.
    let gemini = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/fixtures/formats/gemini-rewind/tmp/0b7dfb1274ee51b336813b17f2ddab1f56b6591f723e7314126bbd502c69e9c9/chats/session-2026-05-01T10-00-abcd1234.jsonl",
    );
    let bytes = std::fs::read(&gemini).unwrap();
    assert!(String::from_utf8_lossy(&bytes).contains("$rewindTo"));
    let folder = dir.path().join("gemini/chats");
    std::fs::create_dir_all(&folder).unwrap();
    let ends = line_ends(&bytes);
    let all: Vec<usize> = (0..ends.len()).collect();
    grow(
        &bytes,
        &ends,
        &all,
        &folder.join(gemini.file_name().unwrap()),
        &dir.path().join("gemini.db"),
        dir.path(),
    );
    // Codex: cumulative token counters (each response's usage is the difference of two totals,
    // its key a hash of every total before it) continue across appends.
    let Some(corpus) = corpus() else { return };
    let codex = corpus.join(
        "codex/madshn-localpush/sessions/2026/02/23/rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl",
    );
    let bytes = std::fs::read(&codex).unwrap();
    let folder = dir.path().join("codex/sessions");
    std::fs::create_dir_all(&folder).unwrap();
    let cuts: Vec<usize> = line_ends(&bytes).into_iter().step_by(40).collect();
    let compare: Vec<usize> = (0..cuts.len()).collect();
    let (continued, whole) = grow(
        &bytes,
        &cuts,
        &compare,
        &folder.join(codex.file_name().unwrap()),
        &dir.path().join("codex.db"),
        dir.path(),
    );
    assert!(
        continued as usize * 2 >= cuts.len(),
        "{continued} of {} Codex appends continued; whole: {whole:?}",
        cuts.len()
    );
}

/// A Claude Code user record of about 1 KB continuing the session of `last`.
fn kilobyte_record(last: &Value, n: usize) -> Vec<u8> {
    let mut record = serde_json::json!({
        "parentUuid": last["uuid"], "isSidechain": false, "userType": "external",
        "cwd": last["cwd"], "sessionId": last["sessionId"], "version": last["version"],
        "type": "user", "uuid": format!("00000000-0000-4000-8000-{n:012}"),
        "timestamp": "2026-12-01T10:00:00.000Z",
        "message": {"role": "user", "content": "x"},
    });
    let size = serde_json::to_vec(&record).unwrap().len();
    record["message"]["content"] = Value::from(format!("more, please {}", "x".repeat(1010 - size)));
    let mut bytes = serde_json::to_vec(&record).unwrap();
    bytes.push(b'\n');
    bytes
}

#[test]
fn a_grown_file_is_read_from_its_last_chunks_and_rewrites_are_caught() {
    let Some(corpus) = corpus() else { return };
    let source =
        corpus.join("claude-code/marot-spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl");
    let original = std::fs::read(&source).unwrap();
    let last: Value = serde_json::from_slice(
        original[..original.len() - 1]
            .rsplit(|b| *b == b'\n')
            .next()
            .unwrap(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("projects");
    std::fs::create_dir_all(&folder).unwrap();
    let file = folder.join(source.file_name().unwrap());
    let archive = dir.path().join("archive.db");
    std::fs::write(&file, &original).unwrap();
    let first = ingest(&archive, &folder);
    assert_eq!(first["bytes_read"].as_u64(), Some(original.len() as u64));

    // Grown by one 1 KB record: read from the start of the archived prefix's last full 256 KiB
    // chunk to the end, nothing before.
    let chunk = 256usize * 1024;
    let record = kilobyte_record(&last, 1);
    assert!((1000..1100).contains(&record.len()));
    append(&file, &record);
    let grown = ingest(&archive, &folder);
    let size = original.len() + record.len();
    let verify_from = (original.len() / chunk - 1) * chunk;
    assert_eq!(grown["files_continued"], 1, "{grown:#}");
    assert_eq!(
        grown["bytes_read"].as_u64(),
        Some((size - verify_from) as u64)
    );
    equals_fresh(&archive, &folder, dir.path(), "grown by 1 KB");

    // Unchanged: only the last chunks are read.
    let unchanged = ingest(&archive, &folder);
    assert_eq!(unchanged["files_unchanged"], 1);
    assert_eq!(
        unchanged["bytes_read"].as_u64(),
        Some((size - (size / chunk - 1) * chunk) as u64)
    );

    let current = std::fs::read(&file).unwrap();
    let caught = |bytes: &[u8], what: &str| {
        std::fs::write(&file, bytes).unwrap();
        let summary = ingest(&archive, &folder);
        assert_eq!(summary["files_rewritten"], 1, "{what}: {summary:#}");
        let kinds = crate::support::diagnostic_kinds(&summary);
        assert!(
            kinds.iter().any(|(_, k)| k == "source_rewritten"),
            "{what}: {kinds:?}"
        );
    };
    // A truncation.
    caught(&current[..current.len() - 200], "truncated");
    // A rewritten tail that also grew.
    let mut tail = current[..current.len() - record.len()].to_vec();
    tail.extend_from_slice(&kilobyte_record(&last, 2));
    tail.extend_from_slice(&kilobyte_record(&last, 3));
    caught(&tail, "rewritten tail");
    // The same length, one byte of the last chunk changed.
    let mut same = current.clone();
    let at = same.len() - 300;
    same[at] = if same[at] == b'x' { b'y' } else { b'x' };
    caught(&same, "same-length rewrite of the last chunk");

    // A same-length change near the start is beyond the cheap check (documented); `--verify`
    // reads the file whole and finds it.
    let mut early = current.clone();
    let at = early.iter().position(|b| *b == b'a').unwrap();
    early[at] = b'b';
    std::fs::write(&file, &early).unwrap();
    let cheap = ingest(&archive, &folder);
    assert_eq!(cheap["files_unchanged"], 1, "{cheap:#}");
    let verified = ingest_with(
        &archive,
        &["--owner", "alice", "--machine", "m", "--verify"],
        &[&folder],
    );
    assert_eq!(verified["files_rewritten"], 1, "{verified:#}");
    assert_eq!(verified["bytes_read"].as_u64(), Some(early.len() as u64));
    // Restored, the file is what the archive holds.
    std::fs::write(&file, &current).unwrap();
    let restored = ingest_with(
        &archive,
        &["--owner", "alice", "--machine", "m", "--verify"],
        &[&folder],
    );
    assert_eq!(restored["files_unchanged"], 1, "{restored:#}");
}
