//! Ingest of the real corpus in `../shared/corpus`, checked against the independent oracle.

use std::path::Path;

use crate::oracle;
use crate::support::{
    assert_numbered, corpus, ingest, open, scalar, session_numbers, table_counts,
};

#[test]
fn whole_corpus_ingests_per_origin_and_rerun_changes_nothing() {
    let Some(corpus) = corpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let first = ingest(&archive, &[&corpus]);
    for origin in [
        "claude-code-session",
        "codex-session",
        "chatgpt-export",
        "claude-ai-export",
        "gemini-cli-session",
        "aistudio-drive",
    ] {
        assert!(
            first["archive_sessions"][origin].as_i64().unwrap_or(0) > 0,
            "no {origin} sessions: {}",
            first["archive_sessions"]
        );
    }
    assert_eq!(first["files_failed"], 0, "{}", first["diagnostics"]);
    // Other tools' fixtures are reported as unsupported, each named.
    let unsupported: Vec<String> = first["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "unsupported_format")
        .map(|d| d["file"].as_str().unwrap().to_string())
        .collect();
    for tool in [
        "hermes",
        "grok",
        "beads",
        "antigravity",
        "material_protocol",
    ] {
        assert!(
            unsupported.iter().any(|f| f.contains(tool)),
            "{tool} not reported unsupported"
        );
    }
    assert!(
        !unsupported
            .iter()
            .any(|f| f.contains("/claude-code/") || f.contains("/codex/sessions/"))
    );
    // Every Claude Code and Codex transcript of the corpus became a source file.
    let conn = open(&archive);
    let transcripts = walk(&corpus.join("claude-code")).len()
        + walk(&corpus.join("codex").join("jnarowski-agentcmd")).len()
        + walk(
            &corpus
                .join("codex")
                .join("madshn-localpush")
                .join("sessions"),
        )
        .len();
    let ingested = scalar(
        &conn,
        "SELECT COUNT(*) FROM source_files WHERE path LIKE '%/corpus/claude-code/%' OR path LIKE '%/corpus/codex/%'",
        [],
    );
    assert_eq!(ingested as usize, transcripts);
    let before = table_counts(&conn);
    assert_numbered(&conn);
    let numbers = session_numbers(&conn);
    // Numbered from 1 in order of arrival, one per session ingested.
    assert_eq!(
        numbers.len() as i64,
        scalar(&conn, "SELECT COUNT(*) FROM sessions", [])
    );
    assert!(
        numbers
            .iter()
            .enumerate()
            .all(|(i, (_, n))| *n == i as i64 + 1)
    );
    let generation = first["generation_after"].as_i64().unwrap();
    assert!(generation > 0);

    let second = ingest(&archive, &[&corpus]);
    assert_eq!(second["rows_written"], 0);
    assert_eq!(second["files_new"], 0);
    assert_eq!(second["files_changed"], 0);
    assert_eq!(second["generation_after"].as_i64().unwrap(), generation);
    assert_eq!(table_counts(&open(&archive)), before);
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(dir) {
        let entry = entry.unwrap();
        if entry.path().extension().is_some_and(|e| e == "jsonl") {
            out.push(entry.path().to_path_buf());
        }
    }
    out
}

struct Ingested {
    _dir: tempfile::TempDir,
    conn: rusqlite::Connection,
}

fn ingest_one(path: &Path) -> Ingested {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    ingest(&archive, &[path]);
    Ingested {
        conn: open(&archive),
        _dir: dir,
    }
}

fn session_figure(conn: &rusqlite::Connection, session: &str, column: &str) -> i64 {
    scalar(
        conn,
        &format!("SELECT {column} FROM sessions WHERE session_id = ?1"),
        [session],
    )
}

#[test]
fn claude_code_files_match_the_oracle() {
    let Some(corpus) = corpus() else { return };
    let files = [
        (
            "claude-code/marot-spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
            false,
        ),
        (
            "claude-code/marot-spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
            false,
        ),
        (
            "claude-code/marot-spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-a93ccab.jsonl",
            true,
        ),
        (
            "claude-code/chiphuyen-sniffly/projects/-Users-chip-dev-ai-music/d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl",
            false,
        ),
        (
            "claude-code/d-kimuson-claude-code-viewer/projects/sample-project/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
            false,
        ),
        (
            "claude-code/jnarowski-agentcmd/full/full-session-four.jsonl",
            false,
        ),
        ("claude-code/marot-spotter/tool_heavy.jsonl", false),
    ];
    for (file, subagent) in files {
        let path = corpus.join(file);
        let expected = oracle::claude(&path, subagent);
        let got = ingest_one(&path);
        let c = &got.conn;
        // The main session is the one with no parent (or, for a subagent file, the only one).
        let session: String = c
            .query_row(
                if subagent {
                    "SELECT session_id FROM sessions"
                } else {
                    "SELECT session_id FROM sessions WHERE parent_session_id IS NULL"
                },
                [],
                |r| r.get(0),
            )
            .unwrap();
        let figures = oracle::ClaudeFigures {
            user_messages: session_figure(c, &session, "user_messages"),
            assistant_messages: session_figure(c, &session, "assistant_messages"),
            tool_uses: scalar(
                c,
                "SELECT COUNT(*) FROM actions WHERE session_id = ?1",
                [&session],
            ),
            input_tokens: session_figure(c, &session, "input_tokens"),
            output_tokens: session_figure(c, &session, "output_tokens"),
            cache_read_tokens: session_figure(c, &session, "cache_read_tokens"),
            cache_write_tokens: session_figure(c, &session, "cache_write_tokens"),
            usage_rows: scalar(
                c,
                "SELECT COUNT(*) FROM usage WHERE session_id = ?1",
                [&session],
            ),
        };
        assert_eq!(figures, expected, "{file}");
        assert_eq!(
            session_figure(c, &session, "message_count"),
            expected.user_messages + expected.assistant_messages,
            "{file}"
        );
        assert!(
            expected.assistant_messages > 0 && expected.output_tokens > 0,
            "{file}: empty oracle"
        );
    }
}

#[test]
fn claude_code_usage_counts_each_response_once() {
    // The file repeats usage over several lines of one response; counting lines overcounts.
    let Some(corpus) = corpus() else { return };
    let path = corpus.join("claude-code/marot-spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let per_line: i64 = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "assistant" && v["isSidechain"] != true)
        .filter_map(|v| v["message"]["usage"]["output_tokens"].as_i64())
        .sum();
    let expected = oracle::claude(&path, false);
    assert!(
        per_line > expected.output_tokens,
        "the file should repeat usage lines"
    );
    let got = ingest_one(&path);
    let stored = scalar(&got.conn, "SELECT SUM(output_tokens) FROM usage", []);
    assert_eq!(stored, expected.output_tokens);
}

#[test]
fn codex_files_match_the_oracle() {
    let Some(corpus) = corpus() else { return };
    let files = [
        "codex/jnarowski-agentcmd/sessions/2025/09/24/rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl",
        "codex/jnarowski-agentcmd/sessions/2025/09/25/rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl",
        "codex/madshn-localpush/sessions/2026/02/23/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
        "codex/madshn-localpush/sessions/2026/02/23/rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl",
        "codex/madshn-localpush/sessions/2026/02/23/rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
    ];
    for file in files {
        let path = corpus.join(file);
        let expected = oracle::codex(&path);
        let got = ingest_one(&path);
        let c = &got.conn;
        let figures = oracle::CodexFigures {
            user_messages: scalar(c, "SELECT SUM(user_messages) FROM sessions", []),
            tool_calls: scalar(c, "SELECT COUNT(*) FROM actions", []),
            tool_outputs: scalar(c, "SELECT SUM(tool_messages) FROM sessions", []),
            input_tokens: scalar(c, "SELECT SUM(input_tokens) FROM sessions", []),
            output_tokens: scalar(c, "SELECT SUM(output_tokens) FROM sessions", []),
            cache_read_tokens: scalar(c, "SELECT SUM(cache_read_tokens) FROM sessions", []),
            usage_rows: scalar(c, "SELECT COUNT(*) FROM usage", []),
        };
        assert_eq!(figures, expected, "{file}");
        assert!(expected.output_tokens > 0, "{file}: empty oracle");
        // Usage rows add up to the session totals.
        assert_eq!(
            scalar(c, "SELECT SUM(output_tokens) FROM usage", []),
            expected.output_tokens
        );
    }
}

#[test]
fn subagent_files_become_sessions_linked_to_their_parent() {
    let Some(corpus) = corpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let summary = ingest(&archive, &[&corpus.join("claude-code/marot-spotter")]);
    let conn = open(&archive);
    let mut stmt = conn
        .prepare("SELECT session_id, parent_session_id, source_path FROM sessions WHERE source_path LIKE '%/subagents/%'")
        .unwrap();
    let rows: Vec<(String, String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 12);
    for (session, parent, source) in &rows {
        // The parent is the folder holding `subagents/`, and the child is not merged into it.
        let folder = Path::new(source).parent().unwrap().parent().unwrap();
        let parent_native = folder.file_name().unwrap().to_str().unwrap();
        assert_eq!(parent, &format!("claude-code-session:{parent_native}"));
        assert_ne!(session, parent);
    }
    // The one whose parent file is absent keeps the parent id and is reported, not invented.
    let orphan_parent = "claude-code-session:6c2214d7-b87e-4432-8e41-22ba294ea584";
    assert_eq!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM sessions WHERE session_id = ?1",
            [orphan_parent]
        ),
        0
    );
    let missing = summary["missing_parents"].as_array().unwrap();
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0][1], orphan_parent);
    // Subagent runs, delegations from the parents' Task calls, and subagent_start snapshots.
    assert_eq!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM runs WHERE role = 'subagent'",
            []
        ),
        12
    );
    let resolved = scalar(
        &conn,
        "SELECT COUNT(*) FROM delegations d JOIN sessions c ON c.session_id = d.child_session_id",
        [],
    );
    assert!(
        resolved >= 5,
        "only {resolved} delegations reach their subagent session"
    );
    assert_eq!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM context_snapshots WHERE boundary = 'subagent_start'",
            []
        ),
        12
    );
}

#[test]
fn inline_sidechains_become_child_sessions() {
    let Some(corpus) = corpus() else { return };
    let path = corpus.join("claude-code/d-kimuson-claude-code-viewer/projects/sample-project/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let roots = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["isSidechain"] == true && v["parentUuid"].is_null())
        .count() as i64;
    assert!(roots > 0);
    let got = ingest_one(&path);
    let c = &got.conn;
    assert_eq!(
        scalar(
            c,
            "SELECT COUNT(*) FROM sessions WHERE branch_type = 'sidechain'",
            []
        ),
        roots
    );
    assert_eq!(
        scalar(
            c,
            "SELECT COUNT(*) FROM delegations WHERE mapping_state = 'resolved'",
            []
        ),
        roots,
        "each sidechain is matched to the Task call that started it"
    );
}

#[test]
fn codex_turn_markers_decide_commitment_and_events_hide_unfinished_turns() {
    let Some(corpus) = corpus() else { return };
    let path = corpus.join("codex/madshn-localpush/sessions/2026/02/23/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let values: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let started: std::collections::HashSet<String> = values
        .iter()
        .filter(|v| v["payload"]["type"] == "task_started")
        .filter_map(|v| v["payload"]["turn_id"].as_str().map(str::to_string))
        .collect();
    let completed: std::collections::HashSet<String> = values
        .iter()
        .filter(|v| v["payload"]["type"] == "task_complete")
        .filter_map(|v| v["payload"]["turn_id"].as_str().map(str::to_string))
        .collect();
    let got = ingest_one(&path);
    let c = &got.conn;
    assert_eq!(
        scalar(c, "SELECT COUNT(*) FROM turns", []),
        started.len() as i64
    );
    assert_eq!(
        scalar(c, "SELECT COUNT(*) FROM turns WHERE committed = 1", []),
        started.intersection(&completed).count() as i64
    );
    let raw = scalar(c, "SELECT COUNT(*) FROM events_raw", []);
    assert_eq!(raw, values.len() as i64);
    let hidden = scalar(
        c,
        "SELECT COUNT(*) FROM events_raw WHERE turn_committed = 0",
        [],
    );
    assert_eq!(scalar(c, "SELECT COUNT(*) FROM events", []), raw - hidden);
}
