//! Bad input never crashes and never loses data: corrupted lines, unreadable paths, unrelated
//! files, wrong flags, and an ingest killed mid-way.

use std::io::Write;

use crate::oracle;
use crate::support::{corpus, diagnostic_kinds, ingest, open, quarry, scalar, table_counts};

#[test]
fn corrupted_copy_ingests_every_good_line_and_names_the_bad_ones() {
    let Some(corpus) = corpus() else { return };
    let original = corpus.join("claude-code/marot-spotter/tool_heavy.jsonl");
    let text = std::fs::read_to_string(&original).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("corrupted.jsonl");
    let mut out = std::fs::File::create(&copy).unwrap();
    // line 1..=5 good, 6 garbage, 7.. good, then invalid UTF-8, then the rest, then a cut line.
    for l in &lines[..5] {
        writeln!(out, "{l}").unwrap();
    }
    writeln!(out, "this is not json {{").unwrap();
    for l in &lines[5..10] {
        writeln!(out, "{l}").unwrap();
    }
    out.write_all(&[0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d, b'\n'])
        .unwrap();
    for l in &lines[10..] {
        writeln!(out, "{l}").unwrap();
    }
    let last = lines[lines.len() - 1];
    write!(out, "{}", &last[..last.len() / 2]).unwrap();
    drop(out);

    let archive = dir.path().join("archive.db");
    let summary = ingest(&archive, &[&copy]);
    let mut bad: Vec<(i64, String)> = summary["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["line"].as_i64().unwrap(),
                d["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    bad.sort();
    let cut_line = lines.len() as i64 + 3;
    assert_eq!(
        bad,
        vec![
            (6, "invalid_json".into()),
            (12, "invalid_utf8".into()),
            (cut_line, "truncated_line".into())
        ]
    );
    // Every good line is in: the oracle over the same corrupted file agrees (it skips bad lines).
    let expected = oracle::claude(&copy, false);
    let conn = open(&archive);
    assert_eq!(
        scalar(&conn, "SELECT SUM(user_messages) FROM sessions", []),
        expected.user_messages
    );
    assert_eq!(
        scalar(&conn, "SELECT SUM(assistant_messages) FROM sessions", []),
        expected.assistant_messages
    );
    assert_eq!(
        scalar(&conn, "SELECT SUM(output_tokens) FROM sessions", []),
        expected.output_tokens
    );
    assert_eq!(
        scalar(&conn, "SELECT COUNT(*) FROM events_raw", []),
        lines.len() as i64
    );
}

#[test]
fn unreadable_and_unrelated_paths_are_reported_while_the_rest_ingests() {
    let Some(corpus) = corpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input");
    std::fs::create_dir_all(input.join("folder.jsonl")).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("nowhere.jsonl"),
        input.join("dangling.jsonl"),
    )
    .unwrap();
    std::fs::write(
        input.join("unrelated.json"),
        r#"{"name": "package", "version": "1.0.0"}"#,
    )
    .unwrap();
    std::fs::write(input.join("broken.json"), "{ not json").unwrap();
    std::fs::copy(
        corpus.join("claude-code/marot-spotter/short.jsonl"),
        input.join("short.jsonl"),
    )
    .unwrap();
    let archive = dir.path().join("archive.db");
    let summary = ingest(&archive, &[&input]);
    let kinds = diagnostic_kinds(&summary);
    for (file, kind) in [
        ("folder.jsonl", "unreadable"),
        ("dangling.jsonl", "unreadable"),
        ("unrelated.json", "unsupported_format"),
        ("broken.json", "invalid_json"),
    ] {
        assert!(
            kinds.contains(&(file.to_string(), kind.to_string())),
            "{file} {kind} missing in {kinds:?}"
        );
    }
    assert_eq!(summary["files_new"], 1);
    assert_eq!(
        scalar(&open(&archive), "SELECT COUNT(*) FROM sessions", []),
        1
    );
    // The reason names every agent quarry reads.
    let reason = summary["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "unsupported_format")
        .and_then(|d| d["reason"].as_str())
        .unwrap()
        .to_string();
    for agent in ["Claude Code", "Codex", "Gemini CLI", "pi", "Qwen Code"] {
        assert!(reason.contains(agent), "{reason}");
    }
}

#[test]
fn wrong_paths_and_flags_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let a = archive.to_str().unwrap();
    let missing = quarry(&["--archive", a, "ingest", "/definitely/not/here"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/definitely/not/here"));
    let flag = quarry(&["--archive", a, "ingest", "--no-such-flag"]);
    assert_eq!(flag.status.code(), Some(2));
    // An archive under a regular file cannot be created.
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let bad_archive = file.join("archive.db");
    let out = quarry(&["--archive", bad_archive.to_str().unwrap(), "tables"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("plain-file"));
}

#[test]
fn killed_ingest_leaves_the_archive_as_after_its_last_committed_file() {
    let dir = tempfile::tempdir().unwrap();
    let corpus_dir = dir.path().join("corpus");
    let generated = quarry(&[
        "gen",
        "--sessions",
        "600",
        "--seed",
        "3",
        "--out",
        corpus_dir.to_str().unwrap(),
    ]);
    assert!(generated.status.success());
    let archive = dir.path().join("archive.db");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args([
            "--archive",
            archive.to_str().unwrap(),
            "ingest",
            "--no-progress",
            corpus_dir.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until some files are committed, then kill without warning.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let generation = rusqlite::Connection::open_with_flags(
            &archive,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .ok()
        .and_then(|c| {
            c.query_row(
                "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .ok()
        })
        .unwrap_or(0);
        if generation >= 20 || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    let conn = rusqlite::Connection::open(&archive).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let files = scalar(&conn, "SELECT COUNT(*) FROM source_files", []);
    assert!(files >= 20, "only {files} files committed before the kill");
    // Exactly the committed files' sessions are there, each complete.
    assert_eq!(
        scalar(&conn, "SELECT COUNT(*) FROM sessions", []),
        scalar(&conn, "SELECT SUM(sessions) FROM source_files", [])
    );
    assert_eq!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM sessions s WHERE message_count != (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.session_id)",
            []
        ),
        0
    );
    assert_eq!(
        scalar(
            &conn,
            "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation'",
            []
        ),
        files
    );
    drop(conn);
    // Finishing the ingest gives exactly what one uninterrupted ingest gives.
    ingest(&archive, &[&corpus_dir]);
    let clean = dir.path().join("clean.db");
    ingest(&clean, &[&corpus_dir]);
    assert_eq!(table_counts(&open(&archive)), table_counts(&open(&clean)));
}
