//! `quarry gen`, incremental re-ingest, assertions and the catalog, end to end.

use std::io::Write;

use crate::support::{
    assert_numbered, generate, ingest, ingest_with, open, quarry, quarry_json, scalar,
    session_numbers,
};

fn digest(dir: &std::path::Path) -> String {
    let mut files: Vec<_> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().to_path_buf())
        .collect();
    files.sort();
    let mut hasher = blake3::Hasher::new();
    for f in files {
        hasher.update(f.strip_prefix(dir).unwrap().to_str().unwrap().as_bytes());
        hasher.update(&std::fs::read(f).unwrap());
    }
    hasher.finalize().to_hex().to_string()
}

#[test]
fn gen_is_deterministic_and_ingests_with_subagents_errors_and_unfinished_turns() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    let report = quarry_json(&[
        "--format",
        "json",
        "gen",
        "--messages",
        "3000",
        "--seed",
        "42",
        "--out",
        a.to_str().unwrap(),
    ]);
    quarry_json(&[
        "--format",
        "json",
        "gen",
        "--messages",
        "3000",
        "--seed",
        "42",
        "--out",
        b.to_str().unwrap(),
    ]);
    assert_eq!(digest(&a), digest(&b));
    let archive = dir.path().join("archive.db");
    let summary = ingest(&archive, &[&a]);
    assert_eq!(
        summary["diagnostics"].as_array().unwrap().len(),
        0,
        "{}",
        summary["diagnostics"]
    );
    let conn = open(&archive);
    let messages = scalar(&conn, "SELECT COUNT(*) FROM messages", []);
    assert_eq!(
        messages,
        report["messages"].as_i64().unwrap(),
        "gen's count and ingest's agree"
    );
    assert!(messages >= 3000);
    assert!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM sessions WHERE origin = 'codex-session'",
            []
        ) > 0
    );
    assert!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM sessions WHERE branch_type = 'subagent'",
            []
        ) > 0
    );
    assert!(scalar(&conn, "SELECT COUNT(*) FROM actions WHERE is_error = 1", []) > 0);
    assert!(scalar(&conn, "SELECT COUNT(*) FROM turns WHERE committed = 0", []) > 0);
    assert_eq!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM delegations WHERE child_session_id NOT IN (SELECT session_id FROM sessions)",
            []
        ),
        0
    );
}

#[test]
fn grown_and_rewritten_files_are_brought_up_to_date() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    generate(&corpus, 3, 9);
    let file = walkdir::WalkDir::new(&corpus)
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| {
            e.path().extension().is_some_and(|x| x == "jsonl")
                && !e.path().to_str().unwrap().contains("subagents")
        })
        .unwrap()
        .path()
        .to_path_buf();
    let archive = dir.path().join("archive.db");
    ingest(&archive, &[&corpus]);
    // Each session's number in order of arrival, which no later write of it changes.
    let numbers = |archive: &std::path::Path| -> Vec<(String, i64)> {
        let conn = open(archive);
        assert_numbered(&conn);
        session_numbers(&conn)
    };
    let numbered = numbers(&archive);
    assert_eq!(
        numbered.len() as i64,
        scalar(&open(&archive), "SELECT COUNT(*) FROM sessions", [])
    );
    let before = scalar(&open(&archive), "SELECT COUNT(*) FROM events_raw", []);
    let generation = scalar(
        &open(&archive),
        "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation'",
        [],
    );

    // Grow: append a record copied from the file itself (same session).
    let text = std::fs::read_to_string(&file).unwrap();
    let last = text.lines().last().unwrap().to_string();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    writeln!(f, "{last}").unwrap();
    drop(f);
    let grown = ingest(&archive, &[&corpus]);
    assert_eq!(grown["files_changed"], 1);
    assert_eq!(
        numbers(&archive),
        numbered,
        "a grown session keeps its number"
    );
    assert_eq!(grown["generation_after"].as_i64().unwrap(), generation + 1);
    assert_eq!(
        scalar(&open(&archive), "SELECT COUNT(*) FROM events_raw", []),
        before + 1
    );

    // Rewrite with fewer lines: the archived session is kept (the source lost records, the
    // archive does not), with a warning naming the file.
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&file, lines[..lines.len() / 2].join("\n") + "\n").unwrap();
    let rewritten = ingest(&archive, &[&corpus]);
    assert_eq!(rewritten["files_rewritten"], 1);
    assert!(
        rewritten["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["kind"] == "source_rewritten"),
        "{rewritten}"
    );
    assert_eq!(
        scalar(&open(&archive), "SELECT COUNT(*) FROM events_raw", []),
        before + 1
    );
    // Asked to, the rewrite replaces the file's sessions (not merged).
    ingest_with(&archive, &["--replace", file.to_str().unwrap()], &[&corpus]);
    let now = scalar(&open(&archive), "SELECT COUNT(*) FROM events_raw", []);
    assert_eq!(now, before - (lines.len() - lines.len() / 2) as i64);
    assert_eq!(
        numbers(&archive),
        numbered,
        "a replaced session keeps its number"
    );
    // Unchanged: nothing written, generation kept.
    let again = ingest(&archive, &[&corpus]);
    assert_eq!(again["rows_written"], 0);
    assert_eq!(again["generation_before"], again["generation_after"]);
}

#[test]
fn tags_notes_and_imported_assertions() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    generate(&corpus, 2, 5);
    let archive = dir.path().join("archive.db");
    let a = archive.to_str().unwrap();
    ingest(&archive, &[&corpus]);
    let session: String = open(&archive)
        .query_row(
            "SELECT session_id FROM sessions ORDER BY session_id LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        quarry(&["--archive", a, "tag", &session, "review"])
            .status
            .success()
    );
    assert!(
        quarry(&["--archive", a, "tag", &session, "review"])
            .status
            .success()
    );
    assert!(
        quarry(&["--archive", a, "note", &session, "flaky test here"])
            .status
            .success()
    );
    let unknown = quarry(&["--archive", a, "tag", "no-such-session", "x"]);
    assert_eq!(unknown.status.code(), Some(2));
    let import = dir.path().join("assertions.jsonl");
    std::fs::write(
        &import,
        format!("{{\"target_ref\": \"{session}\", \"kind\": \"tag\", \"value\": \"stale\"}}\n{{\"kind\": \"note\"}}\nnot json\n"),
    )
    .unwrap();
    let imported = quarry_json(&[
        "--archive",
        a,
        "--format",
        "json",
        "assertions",
        "import",
        import.to_str().unwrap(),
    ]);
    assert_eq!(imported["imported"], 1);
    assert_eq!(imported["diagnostics"].as_array().unwrap().len(), 2);
    let conn = open(&archive);
    assert_eq!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM assertions WHERE kind = 'tag'",
            []
        ),
        2
    );
    assert_eq!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM assertions WHERE kind = 'note'",
            []
        ),
        1
    );
    let tags: String = conn
        .query_row(
            "SELECT tags FROM sessions WHERE session_id = ?1",
            [&session],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(tags, r#"["review","stale"]"#);
    drop(conn);
    // Re-ingesting a changed file keeps the session's tags.
    let tables = quarry_json(&["--archive", a, "--format", "json", "tables"]);
    let names = crate::support::table_names(&tables);
    assert_eq!(names.len(), 14);
    assert!(names.contains(&"observed_events") && names.contains(&"events_raw"));
}

#[test]
fn demo_runs_end_to_end() {
    let out = quarry(&["demo"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("claude-code-session") && text.contains("codex-session"));
    assert!(text.contains("subagent sessions linked"));
    // With the engine, every showcase query is shown with its exact answer.
    {
        let queries = quarry_synth::showcase::QUERIES;
        for q in queries {
            assert!(text.contains(&format!("$ quarry '{q}'")), "{q}");
        }
        assert_eq!(
            text.matches(", exact) over ").count(),
            queries.len(),
            "{text}"
        );
    }
}
