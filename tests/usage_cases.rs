//! Token accounting at the edges (docs/accounting.md), one fixture per case in
//! `tests/fixtures/accounting`. Every expected figure is computed by hand from the fixture's
//! lines (see its README).

use std::path::{Path, PathBuf};

use crate::support::{ingest, ingest_with, open, quarry, quarry_json, scalar};

const S1: &str = "claude-code-session:11111111-1111-4111-8111-111111111111";
const SUB: &str = "claude-code-session:11111111-1111-4111-8111-111111111111/agent-x1";
const S2: &str = "claude-code-session:22222222-2222-4222-8222-222222222222";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/accounting")
}

fn parent_file() -> PathBuf {
    fixtures().join("claude/projects/-home-dev-acme/11111111-1111-4111-8111-111111111111.jsonl")
}

fn subagent_file() -> PathBuf {
    fixtures().join(
        "claude/projects/-home-dev-acme/11111111-1111-4111-8111-111111111111/subagents/agent-x1.jsonl",
    )
}

/// One usage row as the tests compare it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    key: String,
    session: String,
    via: String,
    input: i64,
    output: i64,
    cache_read: i64,
    cache_write: i64,
    write_5m: i64,
    write_1h: i64,
    has_message: bool,
}

fn usage(archive: &Path) -> Vec<Row> {
    let conn = open(archive);
    let mut stmt = conn
        .prepare(
            "SELECT response_key, session_id, recorded_via, input_tokens, output_tokens,
                    cache_read_tokens, cache_write_tokens, cache_write_5m_tokens,
                    cache_write_1h_tokens, message_id IS NOT NULL
             FROM usage ORDER BY response_key",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok(Row {
            key: r.get(0)?,
            session: r.get(1)?,
            via: r.get(2)?,
            input: r.get(3)?,
            output: r.get(4)?,
            cache_read: r.get(5)?,
            cache_write: r.get(6)?,
            write_5m: r.get(7)?,
            write_1h: r.get(8)?,
            has_message: r.get(9)?,
        })
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

#[allow(clippy::too_many_arguments)]
fn row(
    key: &str,
    session: &str,
    via: &str,
    [input, output, cache_read, cache_write, write_5m, write_1h]: [i64; 6],
    has_message: bool,
) -> Row {
    Row {
        key: key.into(),
        session: session.into(),
        via: via.into(),
        input,
        output,
        cache_read,
        cache_write,
        write_5m,
        write_1h,
        has_message,
    }
}

/// msg_A (two lines, output 5 then 12; 100 + 200 cache writes) and msg_D (a total of 50 only:
/// 5-minute writes) are the parent's own.
fn parent_rows() -> Vec<Row> {
    vec![
        row(
            "claude:msg_A",
            S1,
            "transcript",
            [3, 12, 1000, 300, 100, 200],
            true,
        ),
        row(
            "claude:msg_D",
            S1,
            "transcript",
            [1, 7, 1300, 50, 50, 0],
            true,
        ),
    ]
}

/// The parent ingested without its subagent's file: msg_B streams twice (output 3, then 9) and
/// counts once at its largest; the parent owns both streamed responses, without messages.
fn progress_only_rows() -> Vec<Row> {
    let mut rows = parent_rows();
    rows.push(row(
        "claude:msg_B",
        S1,
        "progress",
        [2, 9, 500, 40, 0, 40],
        false,
    ));
    rows.push(row(
        "claude:msg_C",
        S1,
        "progress",
        [4, 20, 540, 0, 0, 0],
        false,
    ));
    rows.sort();
    rows
}

/// Session token sums equal the usage rows each session owns, and summing sessions equals
/// summing usage; and resolving everything again changes nothing.
fn assert_sessions_sum_usage(archive: &Path) {
    crate::support::assert_resolved_as_a_whole(archive);
    let conn = open(archive);
    for column in [
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "cache_write_5m_tokens",
        "cache_write_1h_tokens",
    ] {
        let mismatched = scalar(
            &conn,
            &format!(
                "SELECT COUNT(*) FROM sessions s WHERE s.{column} !=
                 (SELECT COALESCE(SUM(u.{column}), 0) FROM usage u WHERE u.session_id = s.session_id)"
            ),
            [],
        );
        assert_eq!(
            mismatched, 0,
            "sessions.{column} differs from its usage rows"
        );
        assert_eq!(
            scalar(&conn, &format!("SELECT SUM({column}) FROM sessions"), []),
            scalar(&conn, &format!("SELECT SUM({column}) FROM usage"), []),
            "{column}"
        );
    }
    assert_eq!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM usage WHERE cache_write_5m_tokens + cache_write_1h_tokens != cache_write_tokens",
            []
        ),
        0
    );
}

#[test]
fn a_subagent_whose_file_is_absent_is_counted_once_from_progress_records() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    ingest(&archive, &[&parent_file()]);
    assert_eq!(usage(&archive), progress_only_rows());
    let conn = open(&archive);
    assert_eq!(
        scalar(
            &conn,
            "SELECT output_tokens FROM sessions WHERE session_id = ?1",
            [S1]
        ),
        12 + 7 + 9 + 20
    );
    // No messages for progress-only responses: the parent's messages are its own records.
    assert_eq!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM messages WHERE role = 'assistant'",
            []
        ),
        2
    );
    assert_sessions_sum_usage(&archive);
}

#[test]
fn a_subagent_whose_file_is_present_is_not_counted_twice() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    ingest(&archive, &[&parent_file(), &subagent_file()]);
    let mut expected = parent_rows();
    expected.push(row(
        "claude:msg_B",
        SUB,
        "transcript",
        [2, 9, 500, 40, 0, 40],
        true,
    ));
    expected.push(row(
        "claude:msg_C",
        SUB,
        "transcript",
        [4, 20, 540, 0, 0, 0],
        true,
    ));
    expected.sort();
    assert_eq!(usage(&archive), expected);
    let conn = open(&archive);
    assert_eq!(
        scalar(
            &conn,
            "SELECT record_count FROM usage WHERE response_key = 'claude:msg_B'",
            []
        ),
        2,
        "the subagent's transcript and the parent's progress records"
    );
    assert_eq!(
        scalar(
            &conn,
            "SELECT output_tokens FROM sessions WHERE session_id = ?1",
            [S1]
        ),
        19
    );
    assert_eq!(
        scalar(
            &conn,
            "SELECT output_tokens FROM sessions WHERE session_id = ?1",
            [SUB]
        ),
        29
    );
    assert_sessions_sum_usage(&archive);
}

#[test]
fn a_subagent_file_arriving_after_its_parent_gives_the_same_answer() {
    let dir = tempfile::tempdir().unwrap();
    let together = dir.path().join("together.db");
    ingest(&together, &[&parent_file(), &subagent_file()]);
    for (first, second) in [
        (parent_file(), subagent_file()),
        (subagent_file(), parent_file()),
    ] {
        let archive = dir.path().join(format!(
            "{}.db",
            first.file_stem().unwrap().to_string_lossy()
        ));
        ingest(&archive, &[&first]);
        ingest(&archive, &[&second]);
        assert_eq!(usage(&archive), usage(&together), "{}", first.display());
        assert_sessions_sum_usage(&archive);
    }
}

#[test]
fn a_resumed_session_replays_its_responses_without_owning_them() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let resumed = fixtures()
        .join("resumed/projects/-home-dev-acme/22222222-2222-4222-8222-222222222222.jsonl");
    for order in [
        [parent_file(), resumed.clone()],
        [resumed.clone(), parent_file()],
    ] {
        let _ = std::fs::remove_file(&archive);
        for file in &order {
            ingest(&archive, &[file]);
        }
        let rows = usage(&archive);
        let a: Vec<&Row> = rows.iter().filter(|r| r.key == "claude:msg_A").collect();
        assert_eq!(a.len(), 1, "msg_A once: {rows:?}");
        assert_eq!(
            a[0].session, S1,
            "owned by the session that recorded it first"
        );
        let e = rows.iter().find(|r| r.key == "claude:msg_E").unwrap();
        assert_eq!((e.session.as_str(), e.output), (S2, 11));
        let conn = open(&archive);
        // Messages stay where each transcript puts them.
        assert_eq!(
            scalar(
                &conn,
                "SELECT COUNT(*) FROM messages WHERE session_id = ?1 AND role = 'assistant'",
                [S2]
            ),
            2
        );
        assert_eq!(
            scalar(
                &conn,
                "SELECT output_tokens FROM sessions WHERE session_id = ?1",
                [S2]
            ),
            11
        );
        assert_sessions_sum_usage(&archive);
        // Both files in one command (one transaction): the first written holds its responses
        // alone until the second records them.
        let together = dir.path().join("together.db");
        let _ = std::fs::remove_file(&together);
        ingest(&together, &[&order[0], &order[1]]);
        assert_eq!(
            usage(&together),
            rows,
            "one command, {}",
            order[0].display()
        );
        assert_sessions_sum_usage(&together);
    }
}

#[test]
fn the_whole_accounting_folder_resolves_as_it_would_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    ingest(&archive, &[&fixtures()]);
    assert_sessions_sum_usage(&archive);
}

#[test]
fn a_forked_codex_session_counts_the_replayed_prefix_once() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    ingest(&archive, &[&fixtures().join("codex")]);
    let conn = open(&archive);
    let parent = "codex-session:019c0000-0000-7000-8000-00000000000a";
    let fork = "codex-session:019c0000-0000-7000-8000-00000000000b";
    // Parent: deltas of the cumulative total (the repeated total adds nothing):
    // (30000-3000, 3000, 400), (31000-30000, 30000, 250), (31500-30000, 30000, 50).
    let sums = |session: &str| {
        conn.query_row(
            "SELECT COUNT(*), SUM(input_tokens), SUM(cache_read_tokens), SUM(output_tokens),
                    SUM(reasoning_tokens)
             FROM usage WHERE session_id = ?1",
            [session],
            |r| {
                Ok([
                    r.get::<_, i64>(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                ])
            },
        )
        .unwrap()
    };
    assert_eq!(sums(parent), [3, 29_500, 63_000, 700, 300]);
    // The fork replays the first two responses and adds one: (95000-61000) - (62000-33000).
    assert_eq!(sums(fork), [1, 5_000, 29_000, 1_000, 600]);
    assert_eq!(scalar(&conn, "SELECT COUNT(*) FROM usage", []), 4);
    assert_eq!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM usage WHERE record_count = 2",
            []
        ),
        2
    );
    // Both sessions keep their messages.
    assert_eq!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM messages WHERE session_id = ?1 AND role = 'assistant'",
            [fork]
        ),
        3
    );
    assert_sessions_sum_usage(&archive);
}

#[test]
fn cache_writes_split_into_lifetimes_and_a_disagreeing_split_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let summary = ingest(&archive, &[&parent_file(), &fixtures().join("mismatch")]);
    let diagnostics = summary["diagnostics"].as_array().unwrap();
    let mismatch: Vec<_> = diagnostics
        .iter()
        .filter(|d| d["kind"] == "cache_split_mismatch")
        .collect();
    assert_eq!(mismatch.len(), 1, "{diagnostics:?}");
    assert!(mismatch[0]["file"].as_str().unwrap().ends_with(".jsonl"));
    assert_eq!(mismatch[0]["line"], 2);
    let rows = usage(&archive);
    let m = rows.iter().find(|r| r.key == "claude:msg_M").unwrap();
    assert_eq!((m.cache_write, m.write_5m, m.write_1h), (90, 90, 0));
    let conn = open(&archive);
    assert_eq!(
        scalar(
            &conn,
            "SELECT cache_write_1h_tokens FROM sessions WHERE session_id = ?1",
            [S1]
        ),
        200 + 40
    );
    // The message carries its own split.
    assert_eq!(
        scalar(
            &conn,
            "SELECT cache_write_1h_tokens FROM messages WHERE session_id = ?1 AND position = 1",
            [S1]
        ),
        200
    );
    assert_sessions_sum_usage(&archive);
}

/// Copies `file` into `dir/<relative>` and returns the copy.
fn copy_into(file: &Path, dir: &Path, relative: &str) -> PathBuf {
    let to = dir.join(relative);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(file, &to).unwrap();
    to
}

#[test]
fn the_same_session_from_two_machines_is_one_session() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let name = "projects/-home-dev-acme/11111111-1111-4111-8111-111111111111.jsonl";
    let laptop = copy_into(&parent_file(), &dir.path().join("laptop"), name);
    let desktop = copy_into(&parent_file(), &dir.path().join("desktop"), name);
    ingest_with(&archive, &["--machine", "laptop"], &[&laptop]);
    let once = usage(&archive);
    ingest_with(&archive, &["--machine", "desktop"], &[&desktop]);
    let conn = open(&archive);
    assert_eq!(scalar(&conn, "SELECT COUNT(*) FROM sessions", []), 1);
    assert_eq!(usage(&archive), once, "responses counted once");
    let machine: String = conn
        .query_row("SELECT machine FROM sessions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(machine, "laptop");
    assert_eq!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM source_files WHERE machine = 'desktop' AND copy_of IS NOT NULL AND sessions = 0",
            []
        ),
        1
    );
    // The desktop copy grows (the session went on there): it becomes the session's source,
    // still first read on the laptop.
    let mut grown = std::fs::read(&desktop).unwrap();
    grown.extend_from_slice(
        br#"{"parentUuid":"a3","isSidechain":false,"type":"user","sessionId":"11111111-1111-4111-8111-111111111111","uuid":"u9","timestamp":"2026-02-10T11:00:00.000Z","message":{"role":"user","content":"one more thing"}}
"#,
    );
    std::fs::write(&desktop, grown).unwrap();
    ingest_with(&archive, &["--machine", "desktop"], &[&desktop]);
    let conn = open(&archive);
    let (count, machine, messages): (i64, String, i64) = conn
        .query_row(
            "SELECT COUNT(*), MAX(machine), MAX(message_count) FROM sessions",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((count, machine.as_str()), (1, "laptop"));
    assert_eq!(messages, 5, "the four messages and the appended prompt");
    assert_eq!(usage(&archive), once);
    // The language filters by machine.
    let answer = quarry_json(&[
        "--archive",
        archive.to_str().unwrap(),
        "--format",
        "json",
        "sessions where machine:laptop | count",
    ]);
    assert_eq!(answer["rows"][0][0], 1, "{answer}");
    assert_sessions_sum_usage(&archive);
}

#[test]
fn a_shrunken_source_file_keeps_its_archived_session() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let file = copy_into(
        &parent_file(),
        dir.path(),
        "p/11111111-1111-4111-8111-111111111111.jsonl",
    );
    ingest(&archive, &[&file]);
    let before = usage(&archive);
    let messages = |archive: &Path| scalar(&open(archive), "SELECT COUNT(*) FROM messages", []);
    let archived_messages = messages(&archive);
    // The vendor rewrites the file to one line.
    let first_line = std::fs::read_to_string(&file).unwrap();
    let first_line = first_line.lines().next().unwrap().to_string() + "\n";
    std::fs::write(&file, first_line).unwrap();
    let out = quarry(&[
        "--archive",
        archive.to_str().unwrap(),
        "--format",
        "json",
        "ingest",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "a rewrite is a warning, exit 0");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let warning = summary["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "source_rewritten")
        .expect("source_rewritten warning");
    assert!(warning["file"].as_str().unwrap().ends_with(".jsonl"));
    assert_eq!(summary["files_rewritten"], 1);
    assert_eq!(messages(&archive), archived_messages);
    assert_eq!(usage(&archive), before);
    // Asked for, the rewrite replaces the session.
    ingest_with(&archive, &["--replace", file.to_str().unwrap()], &[&file]);
    assert_eq!(messages(&archive), 1);
    assert!(usage(&archive).is_empty());
}

#[test]
fn an_archive_of_the_previous_version_is_rederived_without_its_sources() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    std::fs::copy(fixtures().join("archive-v1.db"), &archive).unwrap();
    // Its source file was a temporary copy, long gone: re-derivation reads only the archive.
    let out = quarry_json(&[
        "--archive",
        archive.to_str().unwrap(),
        "--format",
        "json",
        "reindex",
    ]);
    assert_eq!(out["sessions"], 1, "{out}");
    assert_eq!(out["usage_rows"], serde_json::json!([2, 4]), "{out}");
    assert_eq!(usage(&archive), progress_only_rows());
    let conn = open(&archive);
    assert_eq!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM sessions WHERE owner = 'alice'",
            []
        ),
        1,
        "the owner given at the original ingest stays"
    );
    assert_sessions_sum_usage(&archive);
    // The links of schema version 5 are added: each record names the record its `parentUuid`
    // names (an oracle over the archived raw records themselves).
    let records: Vec<(serde_json::Value, Option<String>)> = conn
        .prepare("SELECT payload, source_seqs FROM events_raw ORDER BY session_id, seq")
        .unwrap()
        .query_map([], |r| {
            let payload: String = r.get(0)?;
            Ok((serde_json::from_str(&payload).unwrap(), r.get(1)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let seq_of = |uuid: &str| {
        records
            .iter()
            .position(|(p, _)| p["uuid"].as_str() == Some(uuid))
            .map(|i| i as i64)
    };
    let mut linked = 0;
    for (payload, sources) in &records {
        let want = payload["parentUuid"].as_str().and_then(seq_of);
        let got: Option<Vec<i64>> = sources.as_deref().map(|s| serde_json::from_str(s).unwrap());
        assert_eq!(got, want.map(|w| vec![w]), "{payload}");
        linked += usize::from(want.is_some());
    }
    assert!(linked > 0);
}

#[test]
fn a_conversation_missing_from_a_new_export_stays_archived() {
    let Some(corpus) = crate::support::corpus() else {
        return;
    };
    let fixtures = corpus.join("polylogue-fixtures");
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(fixtures.join(name)).unwrap()).unwrap()
    };
    let first = read("tests__fixtures__origin-capability__chatgpt-export.json");
    let second = read("tests__fixtures__chatgpt__native-conversation-v1.json");
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("conversations.json");
    let archive = dir.path().join("a.db");
    std::fs::write(&export, serde_json::json!([first, second]).to_string()).unwrap();
    ingest(&archive, &[&export]);
    let sessions = |archive: &Path| scalar(&open(archive), "SELECT COUNT(*) FROM sessions", []);
    assert_eq!(sessions(&archive), 2);
    let second_id = format!("chatgpt-export:{}", second["id"].as_str().unwrap());
    let messages_of_second = scalar(
        &open(&archive),
        "SELECT COUNT(*) FROM messages WHERE session_id = ?1",
        [&second_id],
    );
    assert!(messages_of_second > 0);
    // The next export lacks the second conversation (deleted at the vendor).
    std::fs::write(&export, serde_json::json!([first]).to_string()).unwrap();
    let summary = ingest(&archive, &[&export]);
    assert_eq!(sessions(&archive), 2, "{summary}");
    let missing: Vec<_> = summary["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "conversation_missing")
        .collect();
    assert_eq!(missing.len(), 1, "{summary}");
    assert!(missing[0]["reason"].as_str().unwrap().contains(&second_id));
    assert_eq!(
        scalar(
            &open(&archive),
            "SELECT COUNT(*) FROM messages WHERE session_id = ?1",
            [&second_id],
        ),
        messages_of_second
    );
}

#[test]
fn one_batch_of_an_ingest_writes_one_full_text_segment() {
    // FTS5 flushes the terms it holds into a new segment whenever a statement opens a statement
    // journal inside the transaction; the `usage` rows written with their records once did so
    // (an `INSERT ... SELECT`), one segment per response, each merged again later. A small
    // generated corpus is one batch (far under its 256 MiB and 10 s).
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    let corpus_arg = corpus.to_str().unwrap();
    quarry_json(&[
        "--format",
        "json",
        "gen",
        "--messages",
        "2000",
        "--seed",
        "7",
        "--out",
        corpus_arg,
    ]);
    let archive = dir.path().join("a.db");
    let summary = ingest(&archive, &[&corpus]);
    assert_eq!(summary["files_failed"], 0, "{}", summary["diagnostics"]);
    let conn = open(&archive);
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert!(count("SELECT COUNT(*) FROM usage") > 100);
    assert!(count("SELECT COUNT(DISTINCT session_id) FROM usage") > 10);
    assert_eq!(count("SELECT COUNT(DISTINCT segid) FROM blocks_fts_idx"), 1);
}
