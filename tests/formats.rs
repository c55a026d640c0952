//! Transcript format changes seen in the wild (issue 9, item 4): one fixture per change under
//! `tests/fixtures/formats/` (the README there names the public source of each shape). Every
//! expectation is computed from the fixture's own records, never from quarry's output.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{corpus, diagnostic_kinds, ingest, open, scalar};

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/formats")
        .join(case)
}

/// The JSON records of a JSONL fixture.
fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every `*.jsonl` file under `dir`, sorted.
fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

struct Ingested {
    _dir: tempfile::TempDir,
    conn: rusqlite::Connection,
    summary: Value,
}

fn ingest_path(path: &Path) -> Ingested {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let summary = ingest(&archive, &[path]);
    Ingested {
        conn: open(&archive),
        summary,
        _dir: dir,
    }
}

/// Rows of a query as strings (NULL as `None`).
fn rows(conn: &rusqlite::Connection, sql: &str, params: &[&str]) -> Vec<Vec<Option<String>>> {
    let mut stmt = conn.prepare(sql).unwrap();
    let width = stmt.column_count();
    stmt.query_map(rusqlite::params_from_iter(params), |r| {
        (0..width)
            .map(|i| {
                let v: rusqlite::types::Value = r.get(i)?;
                Ok(match v {
                    rusqlite::types::Value::Null => None,
                    rusqlite::types::Value::Integer(n) => Some(n.to_string()),
                    rusqlite::types::Value::Real(x) => Some(x.to_string()),
                    rusqlite::types::Value::Text(t) => Some(t),
                    rusqlite::types::Value::Blob(_) => Some("<blob>".into()),
                })
            })
            .collect()
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

fn some(values: &[&str]) -> Vec<Option<String>> {
    values.iter().map(|v| Some((*v).to_string())).collect()
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// Diagnostics of an ingest summary as (file name, kind).
fn diagnostics(summary: &Value) -> BTreeSet<(String, String)> {
    diagnostic_kinds(summary).into_iter().collect()
}

#[test]
fn task_and_agent_calls_are_subagent_actions_and_delegations() {
    let dir = fixture("claude-agent-tool");
    let files = jsonl_files(&dir);
    let parent_file = files
        .iter()
        .find(|p| !p.to_string_lossy().contains("/subagents/"))
        .unwrap();
    let parent_records = records(parent_file);
    let parent_native = str_of(&parent_records[0]["sessionId"]);
    let parent = format!("claude-code-session:{parent_native}");
    // The hand-offs in the fixture: each Task/Agent tool_use and the agentId its result names.
    let mut expected = Vec::new();
    for record in &parent_records {
        for block in record["message"]["content"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let name = str_of(&block["name"]);
            if block["type"] != "tool_use" || !(name == "Task" || name == "Agent") {
                continue;
            }
            let result = parent_records
                .iter()
                .find(|r| {
                    r["message"]["content"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|b| b["tool_use_id"] == block["id"]))
                })
                .unwrap();
            let agent = str_of(&result["toolUseResult"]["agentId"]);
            let child_file = files
                .iter()
                .find(|p| p.ends_with(format!("agent-{agent}.jsonl")))
                .unwrap();
            let child_model = records(child_file)
                .iter()
                .find_map(|r| r["message"]["model"].as_str().map(str::to_string))
                .unwrap();
            expected.push((
                name,
                vec![
                    Some(format!("{parent}/agent-{agent}")),
                    Some(str_of(&block["input"]["prompt"])),
                    block["input"]["model"].as_str().map(str::to_string),
                    Some("resolved".to_string()),
                    Some(str_of(&result["toolUseResult"]["status"])),
                    Some(child_model),
                ],
            ));
        }
    }
    let names: BTreeSet<&str> = expected.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, BTreeSet::from(["Agent", "Task"]), "fixture has both");

    let got = ingest_path(&dir);
    let c = &got.conn;
    let actions = rows(
        c,
        "SELECT tool_name, semantic_type FROM actions WHERE session_id = ?1 ORDER BY tool_name",
        &[&parent],
    );
    assert_eq!(
        actions,
        vec![some(&["Agent", "subagent"]), some(&["Task", "subagent"])]
    );
    let delegations = rows(
        c,
        "SELECT child_session_id, instruction, requested_model, mapping_state, result_status, child_model
         FROM delegations WHERE parent_session_id = ?1 ORDER BY occurred_at_ms",
        &[&parent],
    );
    let expected_rows: Vec<Vec<Option<String>>> =
        expected.into_iter().map(|(_, row)| row).collect();
    assert_eq!(delegations, expected_rows);
    // Each delegation reaches a subagent session ingested from its file.
    assert_eq!(
        scalar(
            c,
            "SELECT COUNT(*) FROM delegations d JOIN sessions s ON s.session_id = d.child_session_id
             WHERE s.parent_session_id = ?1 AND s.branch_type = 'subagent'",
            [&parent],
        ),
        2
    );
}

#[test]
fn subagent_files_nested_below_subagents_are_subagents_of_the_session() {
    let dir = fixture("claude-nested-subagents");
    let mut parent = None;
    let mut expected = Vec::new();
    for file in jsonl_files(&dir) {
        let session = str_of(&records(&file)[0]["sessionId"]);
        let below_subagents = file
            .ancestors()
            .skip(1)
            .any(|a| a.file_name().is_some_and(|n| n == "subagents"));
        if !below_subagents {
            parent = Some(session);
            continue;
        }
        let stem = file.file_stem().unwrap().to_str().unwrap();
        let agent = stem.strip_prefix("agent-").unwrap();
        expected.push(vec![
            Some(format!("claude-code-session:{session}/agent-{agent}")),
            Some(format!("claude-code-session:{session}")),
            Some("subagent".to_string()),
        ]);
    }
    expected.sort();
    assert_eq!(expected.len(), 3, "one direct, two nested subagent files");
    let parent = format!("claude-code-session:{}", parent.unwrap());

    let got = ingest_path(&dir);
    let c = &got.conn;
    let children = rows(
        c,
        "SELECT session_id, parent_session_id, branch_type FROM sessions
         WHERE session_id <> ?1 ORDER BY session_id",
        &[&parent],
    );
    assert_eq!(children, expected);
    assert_eq!(
        scalar(c, "SELECT COUNT(*) FROM runs WHERE role = 'subagent'", []),
        3
    );
    assert_eq!(got.summary["missing_parents"].as_array().unwrap().len(), 0);
}

#[test]
fn newer_claude_code_records_are_log_only_events_and_titles_rank() {
    let dir = fixture("claude-newer-records");
    let got = ingest_path(&dir);
    let c = &got.conn;
    for file in jsonl_files(&dir) {
        let recs = records(&file);
        let session = format!("claude-code-session:{}", str_of(&recs[0]["sessionId"]));
        let is_message = |r: &Value| {
            (r["type"] == "user" || r["type"] == "assistant") && r["message"].is_object()
        };
        let messages = recs.iter().filter(|r| is_message(r)).count() as i64;
        let log_only = recs.len() as i64 - messages;
        // custom-title, else the last ai-title, else summary.
        let last = |kind: &str, field: &str| {
            recs.iter()
                .rev()
                .find(|r| r["type"] == kind)
                .map(|r| str_of(&r[field]))
        };
        let title = last("custom-title", "customTitle")
            .or_else(|| last("ai-title", "aiTitle"))
            .or_else(|| last("summary", "summary"));
        assert!(messages > 0 && log_only > 10);
        assert_eq!(
            scalar(
                c,
                "SELECT COUNT(*) FROM messages WHERE session_id = ?1",
                [&session]
            ),
            messages
        );
        let surfaces = rows(
            c,
            "SELECT surface, COUNT(*) FROM events_raw WHERE session_id = ?1 GROUP BY surface ORDER BY surface",
            &[&session],
        );
        assert_eq!(
            surfaces,
            vec![
                some(&["current", &messages.to_string()]),
                some(&["log-only", &log_only.to_string()]),
            ],
            "{}",
            file.display()
        );
        assert_eq!(
            scalar(
                c,
                "SELECT COUNT(*) FROM events_raw WHERE session_id = ?1 AND type = 'system/away_summary' AND surface = 'log-only'",
                [&session]
            ),
            1
        );
        let stored: Option<String> = c
            .query_row(
                "SELECT title FROM sessions WHERE session_id = ?1",
                [&session],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(stored, title, "{}", file.display());
    }
    let unknown = got.summary["unknown_records"].as_object().unwrap();
    assert!(
        unknown.keys().all(|k| !k.starts_with("claude-code:")),
        "{unknown:?}"
    );
    assert!(diagnostics(&got.summary).is_empty(), "{}", got.summary);
}

/// Message and block rows of a session, positions included (ids left out).
fn conversation(c: &rusqlite::Connection, session: &str) -> Vec<Vec<Option<String>>> {
    rows(
        c,
        "SELECT m.position, m.role, m.type, m.text, b.position, b.type, b.text, b.tool_name,
                b.tool_input, b.tool_command, b.tool_path, b.exit_code, b.is_error
         FROM messages m JOIN blocks b ON b.message_id = m.message_id
         WHERE m.session_id = ?1 ORDER BY m.position, b.position",
        &[session],
    )
}

#[test]
fn codex_item_completed_envelopes_read_like_their_direct_items_once() {
    let dir = fixture("codex-item-completed");
    let files = jsonl_files(&dir);
    let session_of = |file: &Path| {
        let recs = records(file);
        let id = str_of(&recs[0]["payload"]["id"]);
        (recs, format!("codex-session:{id}"))
    };
    let kinds = |recs: &[Value]| -> (usize, usize) {
        let direct = recs.iter().filter(|r| r["type"] == "response_item").count();
        let envelopes = recs
            .iter()
            .filter(|r| r["payload"]["type"] == "item_completed")
            .count();
        (direct, envelopes)
    };
    let (mut direct, mut envelope, mut both) = (None, None, None);
    for file in &files {
        let (recs, session) = session_of(file);
        match kinds(&recs) {
            (d, 0) if d > 0 => direct = Some((recs, session)),
            (0, e) if e > 0 => envelope = Some((recs, session)),
            _ => both = Some((recs, session)),
        }
    }
    let (direct_recs, direct) = direct.unwrap();
    let (envelope_recs, envelope) = envelope.unwrap();
    let (_, both) = both.unwrap();

    // What the direct rollout says, read from its records.
    let items: Vec<&Value> = direct_recs
        .iter()
        .filter(|r| r["type"] == "response_item")
        .map(|r| &r["payload"])
        .collect();
    let users: Vec<String> = items
        .iter()
        .filter(|p| p["type"] == "message" && p["role"] == "user")
        .map(|p| str_of(&p["content"][0]["text"]))
        .collect();
    let answer = items
        .iter()
        .find(|p| p["type"] == "message" && p["role"] == "assistant")
        .map(|p| str_of(&p["content"][0]["text"]))
        .unwrap();
    let calls: Vec<String> = items
        .iter()
        .filter(|p| p["type"] == "function_call" || p["type"] == "custom_tool_call")
        .map(|p| str_of(&p["name"]))
        .collect();
    let exit_codes: Vec<Option<String>> = items
        .iter()
        .filter(|p| str_of(&p["type"]).ends_with("_output"))
        .map(|p| {
            let output: Value = serde_json::from_str(p["output"].as_str().unwrap()).unwrap();
            Some(output["metadata"]["exit_code"].to_string())
        })
        .collect();

    let got = ingest_path(&dir);
    let c = &got.conn;
    let user_texts = rows(
        c,
        "SELECT text FROM messages WHERE session_id = ?1 AND role = 'user' ORDER BY position",
        &[&direct],
    );
    assert_eq!(
        user_texts,
        users
            .iter()
            .map(|u| vec![Some(u.clone())])
            .collect::<Vec<_>>()
    );
    let last_assistant = rows(
        c,
        "SELECT text FROM messages WHERE session_id = ?1 AND role = 'assistant' ORDER BY position DESC LIMIT 1",
        &[&direct],
    );
    assert_eq!(last_assistant, vec![vec![Some(answer)]]);
    let actions = rows(
        c,
        "SELECT tool_name, exit_code FROM actions WHERE session_id = ?1 ORDER BY occurred_at_ms, tool_name",
        &[&direct],
    );
    let expected_actions: Vec<Vec<Option<String>>> = calls
        .iter()
        .zip(&exit_codes)
        .map(|(name, code)| vec![Some(name.clone()), code.clone()])
        .collect();
    assert_eq!(actions, expected_actions);
    assert!(
        scalar(
            c,
            "SELECT COUNT(*) FROM actions WHERE session_id = ?1 AND tool_name = 'apply_patch' AND tool_path = 'README.md'",
            [&direct]
        ) == 1
    );

    // The envelope-only and the doubled rollouts hold the same conversation, row for row.
    let reference = conversation(c, &direct);
    assert!(!reference.is_empty());
    assert_eq!(conversation(c, &envelope), reference, "envelope-only");
    assert_eq!(conversation(c, &both), reference, "direct + envelope");
    for session in [&envelope, &both] {
        assert_eq!(
            rows(
                c,
                "SELECT tool_name, exit_code FROM actions WHERE session_id = ?1 ORDER BY occurred_at_ms, tool_name",
                &[session]
            ),
            expected_actions
        );
    }
    // Envelopes with a message form join the surface when they stand alone; beside their
    // direct twins they stay log-only.
    let with_form = envelope_recs
        .iter()
        .filter(|r| {
            r["payload"]["type"] == "item_completed" && r["payload"]["item"]["type"] != "Plan"
        })
        .count() as i64;
    let current_envelopes = |session: &str| {
        scalar(
            c,
            "SELECT COUNT(*) FROM events_raw WHERE session_id = ?1 AND type = 'event_msg/item_completed' AND surface = 'current'",
            [session],
        )
    };
    assert_eq!(current_envelopes(&envelope), with_form);
    assert_eq!(current_envelopes(&both), 0);
    assert!(
        got.summary["unknown_records"]
            .as_object()
            .unwrap()
            .keys()
            .all(|k| !k.starts_with("codex:")),
        "{}",
        got.summary["unknown_records"]
    );
}

/// gemini-cli's replay of a JSONL session, written out independently: message ids in first-write
/// order with their latest record; `$rewindTo` drops the target and what follows (everything
/// when the target is unknown).
fn gemini_replay(recs: &[Value]) -> Vec<Value> {
    let mut live: Vec<(String, Value)> = Vec::new();
    for r in recs {
        if let Some(target) = r["$rewindTo"].as_str() {
            let at = live.iter().position(|(id, _)| id == target).unwrap_or(0);
            live.truncate(at);
        } else if let Some(id) = r["id"].as_str() {
            match live.iter_mut().find(|(i, _)| i == id) {
                Some(slot) => slot.1 = r.clone(),
                None => live.push((id.to_string(), r.clone())),
            }
        }
    }
    live.into_iter().map(|(_, r)| r).collect()
}

#[test]
fn gemini_rewind_and_rewrites_leave_shadowed_events_not_messages() {
    let dir = fixture("gemini-rewind");
    let file = jsonl_files(&dir).remove(0);
    let recs = records(&file);
    let session = format!("gemini-cli-session:{}", str_of(&recs[0]["sessionId"]));
    let live = gemini_replay(&recs);
    let message_records = recs.iter().filter(|r| r["id"].is_string()).count();
    let text = |r: &Value| match &r["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    let expected: Vec<Vec<Option<String>>> = live
        .iter()
        .map(|r| {
            let role = if r["type"] == "user" {
                "user"
            } else {
                "assistant"
            };
            vec![Some(role.to_string()), Some(text(r))]
        })
        .collect();
    let with_tokens: Vec<&Value> = live.iter().filter(|r| r["tokens"].is_object()).collect();
    let output: i64 = with_tokens
        .iter()
        .map(|r| {
            r["tokens"]["output"].as_i64().unwrap() + r["tokens"]["thoughts"].as_i64().unwrap()
        })
        .sum();
    let title = recs
        .iter()
        .rev()
        .find_map(|r| r["$set"]["summary"].as_str().map(str::to_string));
    assert!(
        live.len() < message_records,
        "the fixture rewinds and rewrites"
    );

    let got = ingest_path(&dir);
    let c = &got.conn;
    assert_eq!(
        rows(
            c,
            "SELECT role, text FROM messages WHERE session_id = ?1 ORDER BY position",
            &[&session]
        ),
        expected
    );
    let surface = |s: &str| {
        scalar(
            c,
            "SELECT COUNT(*) FROM events_raw WHERE session_id = ?1 AND surface = ?2",
            [session.as_str(), s],
        )
    };
    assert_eq!(surface("current"), live.len() as i64);
    assert_eq!(surface("shadowed"), (message_records - live.len()) as i64);
    assert_eq!(surface("log-only"), (recs.len() - message_records) as i64);
    assert_eq!(
        scalar(
            c,
            "SELECT COUNT(*) FROM usage WHERE session_id = ?1",
            [&session]
        ),
        with_tokens.len() as i64
    );
    assert_eq!(
        scalar(
            c,
            "SELECT SUM(output_tokens) FROM usage WHERE session_id = ?1",
            [&session]
        ),
        output
    );
    // The rewritten tool call is one action, with the result of its last version.
    assert_eq!(
        rows(
            c,
            "SELECT tool_name, substr(output_text, 1, 10) FROM actions WHERE session_id = ?1",
            &[&session]
        ),
        vec![some(&["run_shell_command", "42 main.rs"])]
    );
    let stored: Option<String> = c
        .query_row(
            "SELECT title FROM sessions WHERE session_id = ?1",
            [&session],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored, title);
}

/// Record types and keys only the transcript formats quarry reads write.
fn transcript_like(recs: &[Value]) -> bool {
    const KEYS: [&str; 5] = [
        "sessionId",
        "parentUuid",
        "leafUuid",
        "isSidechain",
        "projectHash",
    ];
    const TYPES: [&str; 6] = [
        "file-history-snapshot",
        "queue-operation",
        "session_meta",
        "response_item",
        "turn_context",
        "event_msg",
    ];
    recs.iter()
        .any(|r| KEYS.iter().any(|k| r.get(*k).is_some()) || TYPES.iter().any(|t| r["type"] == *t))
}

#[test]
fn transcripts_without_messages_are_empty_transcript_diagnostics() {
    let dir = fixture("empty");
    let mut expected = BTreeSet::new();
    for file in jsonl_files(&dir) {
        let recs = records(&file);
        let has_message = recs.iter().any(|r| {
            r["message"].is_object() || r["payload"]["type"] == "message" || r["id"].is_string()
        });
        // A file of `summary` records only titles sessions of other files: nothing is lost.
        let summaries_only = recs.iter().all(|r| r["type"] == "summary");
        if !has_message && !summaries_only && transcript_like(&recs) {
            expected.insert(file.file_name().unwrap().to_string_lossy().to_string());
        }
    }
    assert_eq!(expected.len(), 3);
    let got = ingest_path(&dir);
    let flagged: BTreeSet<String> = diagnostics(&got.summary)
        .into_iter()
        .filter(|(_, kind)| kind == "empty_transcript")
        .map(|(file, _)| file)
        .collect();
    assert_eq!(flagged, expected);
    assert_eq!(got.summary["files_failed"], 0);
}

#[test]
fn the_corpus_summary_only_file_is_no_empty_transcript() {
    let Some(corpus) = corpus() else { return };
    let path = corpus.join(
        "claude-code/chiphuyen-sniffly/projects/-Users-chip-dev-ai-music/ff71dbed-a4f2-4284-a4fc-fe2fb90de929.jsonl",
    );
    assert!(records(&path).iter().all(|r| r["type"] == "summary"));
    let got = ingest_path(&path);
    assert!(diagnostics(&got.summary).is_empty(), "{}", got.summary);
}
