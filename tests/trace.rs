//! Event traces and the replacement epoch (issue 26): the links between records that each
//! format logs, checked against values worked out by hand from fixture lines and against short
//! oracles reading the raw corpus files; `quarry reindex` adding the links to an archive written
//! before them; transcript cursors that survive a growing session and go stale after a
//! replacement; and the read errors through the CLI and HTTP.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use quarry::read::{EventTrace, ReadAnswer, ReadRequest, TraceRequest};
use serde_json::Value;

use crate::sql_scope::open_as;
use crate::support::{corpus, ingest, ingest_with, quarry as run, quarry_json, runtime};

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/formats")
        .join(case)
}

fn trace(q: &quarry::Quarry, session: &str, seq: i64) -> Result<EventTrace, quarry::Error> {
    let request = ReadRequest::Trace(TraceRequest {
        session: session.into(),
        seq,
    });
    match runtime().block_on(q.read(&request))? {
        ReadAnswer::Trace(t) => Ok(t),
        other => panic!("not a trace: {other:?}"),
    }
}

/// (surface, replacedBy, replacementChain, replacedEventSeqs, sourceEventSeqs,
/// derivedEventSeqs) of one record.
type Links = (
    &'static str,
    Option<i64>,
    Vec<i64>,
    Vec<i64>,
    Vec<i64>,
    Vec<i64>,
);

/// [`Links`] as a trace gives them.
type GotLinks = (String, Option<i64>, Vec<i64>, Vec<i64>, Vec<i64>, Vec<i64>);

fn links(t: &EventTrace) -> GotLinks {
    (
        t.target.surface.clone(),
        t.replaced_by,
        t.replacement_chain.clone(),
        t.replaced_event_seqs.clone(),
        t.source_event_seqs.clone(),
        t.derived_event_seqs.clone(),
    )
}

fn assert_links(q: &quarry::Quarry, session: &str, want: &[(i64, Links)]) {
    for (seq, (surface, by, chain, replaced, sources, derived)) in want {
        let got = trace(q, session, *seq).unwrap();
        assert_eq!(
            links(&got),
            (
                surface.to_string(),
                *by,
                chain.clone(),
                replaced.clone(),
                sources.clone(),
                derived.clone()
            ),
            "{session} record {seq}"
        );
    }
}

const CHAIN_ID: &str = "gemini-cli-session:c4a1e2f0-7b3d-4e21-9a55-00000000e009";
const REWIND_ID: &str = "gemini-cli-session:abcd1234-5e6f-4a0b-8c9d-00000000e008";

/// The chain fixture's links, worked out by hand from its lines (its README says how).
fn chain_links() -> Vec<(i64, Links)> {
    let none = Vec::new;
    vec![
        (0, ("log-only", None, none(), none(), none(), none())),
        (1, ("current", None, none(), none(), none(), none())),
        (2, ("shadowed", Some(3), vec![3, 5], none(), none(), none())),
        (3, ("shadowed", Some(5), vec![5], vec![2], none(), none())),
        (4, ("shadowed", Some(5), vec![5], none(), none(), none())),
        (5, ("log-only", None, none(), vec![3, 4], none(), none())),
        (6, ("current", None, none(), none(), none(), none())),
        (7, ("log-only", None, none(), none(), none(), none())),
    ]
}

#[test]
fn a_gemini_rewind_shows_its_replacement_chain() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    ingest(
        &archive,
        &[&fixture("gemini-rewind-chain"), &fixture("gemini-rewind")],
    );
    let q = open_as(&archive, "admin");
    assert_links(&q, CHAIN_ID, &chain_links());
    // The other fixture, by hand: m2 written twice (records 3, 4), `$rewindTo: m4` (record 9)
    // removing m4 and m5 (records 7, 8).
    let none = Vec::new;
    assert_links(
        &q,
        REWIND_ID,
        &[
            (3, ("shadowed", Some(4), vec![4], none(), none(), none())),
            (4, ("current", None, none(), vec![3], none(), none())),
            (7, ("shadowed", Some(9), vec![9], none(), none(), none())),
            (8, ("shadowed", Some(9), vec![9], none(), none(), none())),
            (9, ("log-only", None, none(), vec![7, 8], none(), none())),
            (10, ("current", None, none(), none(), none(), none())),
        ],
    );
    // An absent record is event_not_found; the session's messages are what stands.
    let err = trace(&q, CHAIN_ID, 8).unwrap_err();
    assert_eq!(err.code(), "event_not_found");
    let conn = crate::support::open(&archive);
    let texts: Vec<String> = conn
        .prepare("SELECT text FROM messages WHERE session_id = ?1 ORDER BY position")
        .unwrap()
        .query_map([CHAIN_ID], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(texts, ["List the files here", "Two files: a.rs and b.rs."]);
    // The CLI: the trace as JSON in the spec's names, and a window of shadowed records only.
    let a = archive.to_str().unwrap();
    let t = quarry_json(&[
        "--archive",
        a,
        "--format",
        "json",
        "read",
        CHAIN_ID,
        "--trace",
        "2",
    ]);
    assert_eq!(t["replacedBy"], 3);
    assert_eq!(t["replacementChain"], serde_json::json!([3, 5]));
    assert_eq!(t["target"]["surface"], "shadowed");
    let text =
        String::from_utf8_lossy(&run(&["--archive", a, "read", CHAIN_ID, "--trace", "5"]).stdout)
            .to_string();
    assert!(text.contains("replaced records:  3, 4"), "{text}");
    let w = quarry_json(&[
        "--archive",
        a,
        "--format",
        "json",
        "read",
        CHAIN_ID,
        "--around",
        "4",
        "--before",
        "4",
        "--after",
        "3",
        "--surface",
        "shadowed",
    ]);
    assert_eq!(crate::support::ints_of(&w["events"], "seq"), [2, 3, 4]);
    assert_eq!(
        (w["startSeq"].clone(), w["endSeq"].clone()),
        (0.into(), 7.into())
    );
}

#[test]
fn codex_outputs_and_envelopes_name_the_records_they_come_from() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    ingest(&archive, &[&fixture("codex-item-completed")]);
    let q = open_as(&archive, "admin");
    // By hand from the d007 rollout's lines: the user message envelope (4) repeats the direct
    // message (3); the reasoning envelope (5) the direct reasoning written after it (6); the
    // outputs (8, 11) and the envelopes (9, 12) name their calls (7, 10); the agent message
    // envelope (14) the direct message (13); the plan (15) has no direct form.
    let id = "codex-session:019fc8be-3658-7ca3-9e29-00000000d007";
    let none = Vec::new;
    assert_links(
        &q,
        id,
        &[
            (4, ("log-only", None, none(), none(), vec![3], none())),
            (3, ("current", None, none(), none(), none(), vec![4])),
            (5, ("log-only", None, none(), none(), vec![6], none())),
            (6, ("current", None, none(), none(), none(), vec![5])),
            (7, ("current", None, none(), none(), none(), vec![8, 9])),
            (8, ("current", None, none(), none(), vec![7], none())),
            (10, ("current", None, none(), none(), none(), vec![11, 12])),
            (12, ("log-only", None, none(), none(), vec![10], none())),
            (14, ("log-only", None, none(), none(), vec![13], none())),
            (15, ("log-only", None, none(), none(), none(), none())),
        ],
    );
}

/// The seqs each record of a one-session JSONL file names as its source, by `key` (a record
/// naming an earlier record's `id_key`): an oracle over the raw lines.
fn oracle_sources(
    file: &Path,
    source: impl Fn(&Value) -> Option<String>,
    id: impl Fn(&Value) -> Option<String>,
) -> Vec<Vec<i64>> {
    let records: Vec<Value> = std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut seen: HashMap<String, i64> = HashMap::new();
    let mut out = Vec::new();
    for (seq, r) in records.iter().enumerate() {
        out.push(
            source(r)
                .and_then(|s| seen.get(&s).copied())
                .into_iter()
                .collect(),
        );
        if let Some(i) = id(r) {
            seen.entry(i).or_insert(seq as i64);
        }
    }
    out
}

fn archived_sources(conn: &rusqlite::Connection, session: &str) -> Vec<Vec<i64>> {
    conn.prepare("SELECT source_seqs FROM events_raw WHERE session_id = ?1 ORDER BY seq")
        .unwrap()
        .query_map([session], |r| r.get::<_, Option<String>>(0))
        .unwrap()
        .map(|s| {
            s.unwrap()
                .map(|s| serde_json::from_str(&s).unwrap())
                .unwrap_or_default()
        })
        .collect()
}

#[test]
fn claude_code_and_codex_records_name_their_sources_as_the_files_do() {
    let Some(corpus) = corpus() else { return };
    let claude = corpus.join(
        "claude-code/marot-spotter/6c2214d7-b87e-4432-8e41-22ba294ea584/subagents/agent-afc096d.jsonl",
    );
    let codex_dir = corpus.join("codex/madshn-localpush");
    let codex = walkdir::WalkDir::new(&codex_dir)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .find(|p| p.to_string_lossy().contains("019c8a59"))
        .expect("the Codex rollout 019c8a59");
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    ingest(&archive, &[&claude, &codex]);
    let conn = crate::support::open(&archive);
    let str_at = |v: &Value, k: &str| v[k].as_str().map(str::to_string);
    // Claude Code: a record's `parentUuid` names the record with that `uuid`.
    let want = oracle_sources(
        &claude,
        |r| str_at(r, "parentUuid").or_else(|| str_at(r, "logicalParentUuid")),
        |r| str_at(r, "uuid"),
    );
    let got = archived_sources(
        &conn,
        "claude-code-session:6c2214d7-b87e-4432-8e41-22ba294ea584/agent-afc096d",
    );
    assert_eq!(got, want);
    assert!(want.iter().filter(|s| !s.is_empty()).count() > 100);
    // Codex: an output (or an event about a call) names the call with its `call_id`.
    let is_call = |r: &Value| {
        r["type"] == "response_item"
            && matches!(
                r["payload"]["type"].as_str(),
                Some("function_call" | "custom_tool_call" | "local_shell_call")
            )
    };
    let want = oracle_sources(
        &codex,
        |r| {
            (!is_call(r))
                .then(|| str_at(&r["payload"], "call_id"))
                .flatten()
        },
        |r| {
            is_call(r)
                .then(|| str_at(&r["payload"], "call_id"))
                .flatten()
        },
    );
    let native = codex
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .rsplit('-')
        .take(5)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("-");
    let got = archived_sources(&conn, &format!("codex-session:{native}"));
    assert_eq!(got.len(), want.len(), "{native}");
    assert_eq!(got, want);
    assert!(want.iter().filter(|s| !s.is_empty()).count() > 50);
}

/// Turns an archive back into one written before the links existed (schema version 4): the
/// columns of version 6, and the view and columns of version 5, removed.
fn strip_to_version_4(archive: &Path) {
    let conn = rusqlite::Connection::open(archive).unwrap();
    conn.execute_batch(crate::support::UNDO_VERSION_11).unwrap();
    conn.execute_batch(crate::support::UNDO_VERSION_10).unwrap();
    conn.execute_batch(crate::support::UNDO_VERSION_8).unwrap();
    conn.execute_batch(crate::support::UNDO_VERSION_7).unwrap();
    conn.execute_batch(crate::support::UNDO_VERSION_6).unwrap();
    conn.execute_batch(
        "DROP VIEW events;
         ALTER TABLE events_raw DROP COLUMN replaced_by;
         ALTER TABLE events_raw DROP COLUMN source_seqs;
         ALTER TABLE sessions DROP COLUMN replacement_epoch;
         ALTER TABLE messages DROP COLUMN event_seq;
         CREATE VIEW events AS
             SELECT session_id, seq, type, time, surface, turn_id, payload
             FROM events_raw
             WHERE turn_id IS NULL OR turn_committed = 1;
         DELETE FROM meta WHERE key = 'rederive';
         PRAGMA user_version = 4;",
    )
    .unwrap();
}

#[test]
fn reindex_of_an_archive_from_before_the_links_adds_them() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    ingest(&archive, &[&fixture("gemini-rewind-chain")]);
    strip_to_version_4(&archive);
    let a = archive.to_str().unwrap();
    let out = quarry_json(&["--archive", a, "--format", "json", "reindex"]);
    assert_eq!(out["sessions"], 1, "{out}");
    let q = open_as(&archive, "admin");
    assert_links(&q, CHAIN_ID, &chain_links());
    let conn = crate::support::open(&archive);
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, quarry_archive::SCHEMA_VERSION);
    let event_seqs: Vec<i64> = conn
        .prepare("SELECT event_seq FROM messages WHERE session_id = ?1 ORDER BY position")
        .unwrap()
        .query_map([CHAIN_ID], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(event_seqs, [1, 6], "u1 and g3 are records 1 and 6");
}

/// A Claude Code transcript of `n` prompt/answer pairs (records `2n`), uuid-chained.
fn transcript_lines(session: &str, n: usize, first_prompt: &str) -> String {
    let mut out = String::new();
    let mut parent = Value::Null;
    for i in 0..n {
        for (role, text) in [
            (
                "user",
                if i == 0 {
                    first_prompt.to_string()
                } else {
                    format!("prompt {i}")
                },
            ),
            ("assistant", format!("answer {i}")),
        ] {
            let uuid = format!("00000000-0000-4000-8000-{:012}", out.lines().count());
            let content = if role == "user" {
                Value::String(text)
            } else {
                serde_json::json!([{"type": "text", "text": text}])
            };
            let record = serde_json::json!({
                "type": role, "uuid": uuid, "parentUuid": parent, "sessionId": session,
                "timestamp": format!("2026-06-01T10:{:02}:{:02}.000Z", out.lines().count() / 60, out.lines().count() % 60),
                "message": {"role": role, "content": content},
            });
            out.push_str(&record.to_string());
            out.push('\n');
            parent = Value::String(uuid);
        }
    }
    out
}

/// `quarry read SESSION --page-size N [--cursor C]` as JSON.
fn read_page(
    archive: &Path,
    session: &str,
    size: usize,
    cursor: Option<&str>,
) -> std::process::Output {
    let (archive, size) = (archive.display().to_string(), size.to_string());
    let mut args = vec![
        "--archive",
        &archive,
        "--format",
        "json",
        "read",
        session,
        "--page-size",
        &size,
    ];
    if let Some(c) = cursor {
        args.extend(["--cursor", c]);
    }
    run(&args)
}

#[test]
fn a_transcript_cursor_survives_growth_and_goes_stale_after_a_replacement() {
    use crate::server::{Server, add_token, encode, request};
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let session = "5e551011-0000-4000-8000-000000000001";
    let id = format!("claude-code-session:{session}");
    let file = dir
        .path()
        .join("projects/-work/5e551011-0000-4000-8000-000000000001.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, transcript_lines(session, 3, "first")).unwrap();
    ingest(&archive, &[&file]);
    let a = archive.to_str().unwrap();
    let page = |cursor: Option<&str>| read_page(&archive, &id, 2, cursor);
    let first: Value = serde_json::from_slice(&page(None).stdout).unwrap();
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    let epoch = first["session"]["replacement_epoch"].as_i64().unwrap();
    assert!(epoch > 0);
    // The file grows (the agent wrote on): the cursor reads on, the epoch stays.
    std::fs::write(&file, transcript_lines(session, 5, "first")).unwrap();
    ingest(&archive, &[&file]);
    let second = page(Some(&cursor));
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stdout)
    );
    let second: Value = serde_json::from_slice(&second.stdout).unwrap();
    let positions: Vec<i64> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["position"].as_i64().unwrap())
        .collect();
    assert_eq!(positions, [2, 3]);
    assert_eq!(second["session"]["replacement_epoch"], epoch);
    // Rewritten and read again with --replace: the session's rows were replaced.
    std::fs::write(&file, transcript_lines(session, 5, "first, edited")).unwrap();
    ingest_with(&archive, &["--replace", file.to_str().unwrap()], &[&file]);
    let out = page(Some(&cursor));
    assert_eq!(out.status.code(), Some(2));
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "stale_cursor", "{body}");
    let mut mcp = crate::service::Mcp::start(&archive, &["--scope", "admin"], &[]);
    let result = mcp.tool(
        "read",
        serde_json::json!({"ref": id, "limit": 2, "cursor": cursor}),
    );
    assert_eq!(
        result["structuredContent"]["code"], "stale_cursor",
        "{result}"
    );
    drop(mcp);
    // A new cursor works, and `quarry reindex` makes it stale in turn; over HTTP too.
    let fresh: Value = serde_json::from_slice(&page(None).stdout).unwrap();
    let cursor = fresh["next_cursor"].as_str().unwrap().to_string();
    assert!(page(Some(&cursor)).status.success());
    quarry_json(&["--archive", a, "--format", "json", "reindex"]);
    let tokens = dir.path().join("tokens.toml");
    let admin = add_token(&archive, &tokens, "ops", "admin");
    let server = Server::start(&archive, &tokens, &[]);
    let reply = request(
        "GET",
        &format!(
            "{}/api/read?ref={}&limit=2&cursor={}",
            server.base,
            encode(&id),
            encode(&cursor)
        ),
        Some(&admin),
        None,
        None,
    );
    assert_eq!(
        (reply.status, reply.json()["code"].clone()),
        (409, "stale_cursor".into())
    );
}

/// CLI arguments, HTTP query, MCP tool and arguments, code, HTTP status.
type ErrorCase<'a> = (Vec<&'a str>, String, (&'a str, Value), &'a str, u16);

#[test]
fn each_read_error_has_its_exit_code_and_status() {
    use crate::server::{Server, add_token, encode, request};
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    // Two Codex rollouts that each say they were forked from the other: a lineage cycle.
    let cycle = dir.path().join("cycle");
    std::fs::create_dir_all(&cycle).unwrap();
    for (me, other) in [("c1", "c2"), ("c2", "c1")] {
        let id = |n: &str| format!("019fd000-0000-7000-8000-0000000000{n}");
        let meta = serde_json::json!({"timestamp": "2026-09-02T10:00:00.000Z", "type": "session_meta",
            "payload": {"id": id(me), "forked_from_id": id(other), "timestamp": "2026-09-02T10:00:00.000Z",
                        "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.146.0"}});
        let prompt = serde_json::json!({"timestamp": "2026-09-02T10:00:01.000Z", "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}});
        std::fs::write(
            cycle.join(format!("rollout-2026-09-02T10-00-00-{}.jsonl", id(me))),
            format!("{meta}\n{prompt}\n"),
        )
        .unwrap();
    }
    ingest(&archive, &[&fixture("gemini-rewind-chain"), &cycle]);
    let a = archive.to_str().unwrap();
    const LOOP: &str = "codex-session:019fd000-0000-7000-8000-0000000000c1";
    // `quarry mcp --session` naming no session.
    let out = run(&[
        "--archive",
        a,
        "--format",
        "json",
        "mcp",
        "--session",
        "nothing-here",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "session_not_found", "{body}");
    use serde_json::json;
    // (CLI arguments after `read`, HTTP query of /api/read or /api/search, MCP tool and
    // arguments, code, status)
    let cases: Vec<ErrorCase> = vec![
        (
            vec!["read", "session:nothing-here"],
            "read?ref=session:nothing-here".into(),
            ("read", json!({"ref": "session:nothing-here"})),
            "session_not_found",
            404,
        ),
        (
            vec!["read", CHAIN_ID, "--trace", "99"],
            format!("read?ref={}&trace=99", encode(CHAIN_ID)),
            ("trace", json!({"ref": CHAIN_ID, "seq": 99})),
            "event_not_found",
            404,
        ),
        (
            vec!["read", CHAIN_ID, "--around", "2", "--before", "201"],
            format!("read?ref={}&around=2&before=201", encode(CHAIN_ID)),
            ("read", json!({"ref": CHAIN_ID, "around": 2, "before": 201})),
            "invalid_window",
            400,
        ),
        (
            vec![
                "read",
                CHAIN_ID,
                "--around",
                "2",
                "--surface",
                "current,hidden",
            ],
            format!(
                "read?ref={}&around=2&surface=current,hidden",
                encode(CHAIN_ID)
            ),
            (
                "read",
                json!({"ref": CHAIN_ID, "around": 2, "surface": ["current", "hidden"]}),
            ),
            "invalid_surface",
            400,
        ),
        (
            vec!["read", CHAIN_ID, "--page-size", "0"],
            format!("read?ref={}&limit=0", encode(CHAIN_ID)),
            ("read", json!({"ref": CHAIN_ID, "limit": 0})),
            "invalid_limit",
            400,
        ),
        (
            vec!["read", CHAIN_ID, "--cursor", "not-a-cursor"],
            format!("read?ref={}&cursor=not-a-cursor", encode(CHAIN_ID)),
            ("read", json!({"ref": CHAIN_ID, "cursor": "not-a-cursor"})),
            "invalid_cursor",
            409,
        ),
        (
            vec!["read", LOOP, "--lineage"],
            format!("read?ref={}&lineage=true", encode(LOOP)),
            ("lineage", json!({"ref": LOOP})),
            "invalid_lineage",
            409,
        ),
        (
            vec!["search", "files", "--where", "colour:blue"],
            "search?q=files&where=colour:blue".into(),
            ("search", json!({"query": "files", "where": "colour:blue"})),
            "invalid_filter",
            400,
        ),
        (
            vec!["search", "files AND"],
            format!("search?q={}", encode("files AND")),
            ("search", json!({"query": "files AND"})),
            "invalid_query",
            400,
        ),
        (
            vec!["search", "files", "--page-size", "0"],
            "search?q=files&limit=0".into(),
            ("search", json!({"query": "files", "limit": 0})),
            "invalid_limit",
            400,
        ),
    ];
    let tokens = dir.path().join("tokens.toml");
    let admin = add_token(&archive, &tokens, "ops", "admin");
    let server = Server::start(&archive, &tokens, &[]);
    let mut mcp = crate::service::Mcp::start(&archive, &["--scope", "admin"], &[]);
    for (args, query, (tool, arguments), code, status) in cases {
        let result = mcp.tool(tool, arguments.clone());
        assert_eq!(result["isError"], true, "{tool} {arguments}: {result}");
        assert_eq!(
            result["structuredContent"]["code"], code,
            "{tool} {arguments}: {result}"
        );
        let mut all = vec!["--archive", a, "--format", "json"];
        all.extend(args.iter());
        let out = run(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        let body: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{all:?}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(body["code"], code, "{all:?}: {body}");
        let reply = request(
            "GET",
            &format!("{}/api/{query}", server.base),
            Some(&admin),
            None,
            None,
        );
        assert_eq!(
            (reply.status, reply.json()["code"].clone()),
            (status, code.into()),
            "{query}"
        );
    }
}

#[test]
fn codex_forks_and_spawned_threads_form_a_lineage() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    ingest(&archive, &[&fixture("codex-fork")]);
    let q = open_as(&archive, "admin");
    let id = |n: u8| format!("codex-session:019fd000-0000-7000-8000-0000000000f{n}");
    let lineage = |r: &str| match runtime()
        .block_on(q.read(&ReadRequest::Lineage(r.into())))
        .unwrap()
    {
        ReadAnswer::Lineage(t) => t,
        other => panic!("{other:?}"),
    };
    let sub = lineage(&id(3));
    let ancestors: Vec<&str> = sub
        .ancestors
        .iter()
        .map(|a| a.header.session_id.as_str())
        .collect();
    assert_eq!(ancestors, [id(2), id(1)]);
    assert!(sub.complete);
    assert_eq!(sub.root.unwrap().header.session_id, id(1));
    // Each one's root is the top of its lineage.
    let conn = crate::support::open(&archive);
    for n in [1, 2, 3] {
        let root: String = conn
            .query_row(
                "SELECT root_session_id FROM sessions WHERE session_id = ?1",
                [id(n)],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(root, id(1), "{n}");
    }
    drop(conn);
    let top = lineage(&id(1));
    assert_eq!(top.descendants.len(), 1);
    assert_eq!(top.descendants[0].session.header.session_id, id(2));
    assert_eq!(
        top.descendants[0].descendants[0].session.header.session_id,
        id(3)
    );
    let conn = crate::support::open(&archive);
    let kinds: Vec<(String, Option<String>)> = conn
        .prepare("SELECT session_id, branch_type FROM sessions ORDER BY session_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        kinds,
        [
            (id(1), None),
            (id(2), Some("fork".into())),
            (id(3), Some("subagent".into()))
        ]
    );
}

const PARENT: &str = "claude-code/marot-spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46";
const PARENT_ID: &str = "claude-code-session:fa812bfe-b295-4cca-9c2f-fdf01028cb46";

#[test]
fn a_scope_that_sees_a_parent_but_not_its_subagents_reads_neither_across() {
    let Some(corpus) = corpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let folder = corpus.join(PARENT);
    let file = corpus.join(format!("{PARENT}.jsonl"));
    ingest_with(&archive, &["--owner", "parent"], &[&file]);
    ingest_with(&archive, &["--owner", "children"], &[&folder]);
    std::fs::write(
        dir.path().join("scopes.toml"),
        "[scope.mains]\nowner = \"parent\"\n\n[scope.subagents]\nowner = \"children\"\n",
    )
    .unwrap();
    let children: Vec<String> = crate::support::open(&archive)
        .prepare("SELECT session_id FROM sessions WHERE parent_session_id = ?1 ORDER BY 1")
        .unwrap()
        .query_map([PARENT_ID], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!children.is_empty());
    // The parent's reader: every delegation whose child the archive holds is omitted as not in
    // the archive, exactly as one whose child is absent.
    let mains = open_as(&archive, "mains");
    let page = runtime().block_on(q_transcript(&mains, PARENT_ID)).unwrap();
    let subagents: Vec<&quarry::read::transcript::Subagent> = page
        .messages
        .iter()
        .flat_map(|m| &m.blocks)
        .filter_map(|b| b.subagent.as_deref())
        .collect();
    assert!(!subagents.is_empty());
    for s in &subagents {
        assert!(s.transcript.is_none(), "{:?}", s.child_session_id);
        assert_eq!(
            s.omitted,
            Some(quarry::read::transcript::Omitted::NotInArchive),
            "{:?}",
            s.child_session_id
        );
    }
    // Its window, trace and lineage of a child: the same answer as for no session at all.
    for request in [
        ReadRequest::Lineage(children[0].clone()),
        ReadRequest::Trace(TraceRequest {
            session: children[0].clone(),
            seq: 0,
        }),
    ] {
        let err = runtime().block_on(mains.read(&request)).unwrap_err();
        assert_eq!(err.code(), "session_not_found", "{request:?}");
    }
    // The subagents' reader: a child's lineage stops at the parent it does not see.
    let subs = open_as(&archive, "subagents");
    let ReadAnswer::Lineage(t) = runtime()
        .block_on(subs.read(&ReadRequest::Lineage(children[0].clone())))
        .unwrap()
    else {
        panic!("not a lineage")
    };
    assert!(!t.complete);
    assert!(t.ancestors.is_empty());
    assert_eq!(t.unresolved_parent_id.as_deref(), Some(PARENT_ID));
    // The parent's full id names the parent, never one of its subagents that share its start.
    for reference in [PARENT_ID.to_string(), format!("session:{PARENT_ID}")] {
        let err = runtime()
            .block_on(subs.read(&ReadRequest::Lineage(reference.clone())))
            .unwrap_err();
        assert_eq!(err.code(), "session_not_found", "{reference}");
    }
}

async fn q_transcript(
    q: &quarry::Quarry,
    session: &str,
) -> Result<quarry::read::Transcript, quarry::Error> {
    let request = ReadRequest::Transcript(quarry::read::TranscriptRequest {
        session: session.into(),
        page_size: Some(2000),
        cursor: None,
    });
    match q.read(&request).await? {
        ReadAnswer::Transcript(t) => Ok(t),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_resumed_session_continues_the_one_it_replays_in_either_ingest_order() {
    let accounting = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/accounting");
    let original = accounting
        .join("claude/projects/-home-dev-acme/11111111-1111-4111-8111-111111111111.jsonl");
    let resumed = accounting
        .join("resumed/projects/-home-dev-acme/22222222-2222-4222-8222-222222222222.jsonl");
    let first = "claude-code-session:11111111-1111-4111-8111-111111111111";
    let second = "claude-code-session:22222222-2222-4222-8222-222222222222";
    // By hand from the files: the resumed session replays u1, a1, a2 (response msg_A) of the
    // first and goes on after the first's last record; the first replays nothing.
    for order in [[&original, &resumed], [&resumed, &original]] {
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("a.db");
        for file in order {
            ingest(&archive, &[file.as_path()]);
        }
        let conn = crate::support::open(&archive);
        let link = |id: &str| -> (Option<String>, String, Option<String>) {
            conn.query_row(
                "SELECT parent_session_id, root_session_id, branch_type FROM sessions \
                 WHERE session_id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap()
        };
        assert_eq!(link(first), (None, first.to_string(), None));
        assert_eq!(
            link(second),
            (
                Some(first.to_string()),
                first.to_string(),
                Some("continuation".to_string())
            )
        );
        let q = open_as(&archive, "admin");
        let ReadAnswer::Lineage(t) = runtime()
            .block_on(q.read(&ReadRequest::Lineage(second.into())))
            .unwrap()
        else {
            panic!("not a lineage")
        };
        assert!(t.complete);
        assert_eq!(t.ancestors[0].header.session_id, first);
    }
    // A Codex fork written before rollouts named their origin replays its parent's responses
    // (the same cumulative totals): it continues the parent.
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    ingest(&archive, &[&accounting.join("codex")]);
    let conn = crate::support::open(&archive);
    let parent: Option<String> = conn
        .query_row(
            "SELECT parent_session_id FROM sessions \
             WHERE session_id = 'codex-session:019c0000-0000-7000-8000-00000000000b'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        parent.as_deref(),
        Some("codex-session:019c0000-0000-7000-8000-00000000000a")
    );
}

/// An engine whose scope is a conversation's own server (`quarry mcp --session ID`).
fn pinned(archive: &Path, session: &str) -> quarry::Quarry {
    let mut options = quarry::Options::new(archive);
    options.scope = quarry::Scope::Reader(quarry::scope::ReaderScope::pinned(session));
    quarry::Quarry::open(&options).unwrap()
}

#[test]
fn a_pinned_conversation_does_not_reach_the_sessions_that_resumed_it() {
    let accounting = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/accounting");
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    ingest(
        &archive,
        &[&accounting.join("claude"), &accounting.join("resumed")],
    );
    let first = "claude-code-session:11111111-1111-4111-8111-111111111111";
    let subagent = "claude-code-session:11111111-1111-4111-8111-111111111111/agent-x1";
    let resumed = "claude-code-session:22222222-2222-4222-8222-222222222222";
    let q = pinned(&archive, first);
    // Its own subagent reads; the session that resumed it later is not its conversation.
    assert!(
        runtime()
            .block_on(q.read(&ReadRequest::Lineage(subagent.into())))
            .is_ok()
    );
    let err = runtime()
        .block_on(q.read(&ReadRequest::Lineage(resumed.into())))
        .unwrap_err();
    assert_eq!(err.code(), "session_not_found");
    // Pinned to the resumed session: the session it continues is a header, no further.
    let q = pinned(&archive, resumed);
    let ReadAnswer::Lineage(t) = runtime()
        .block_on(q.read(&ReadRequest::Lineage(resumed.into())))
        .unwrap()
    else {
        panic!("not a lineage")
    };
    assert_eq!(t.ancestors.len(), 1);
    assert!(t.ancestors[0].header_only);
    assert_eq!(t.ancestors[0].header.session_id, first);
    assert_eq!(t.ancestors[0].header.message_count, 0);
    assert!(
        t.descendants.is_empty(),
        "the first's subagent is not the resumed one's"
    );
    let err = runtime()
        .block_on(q.read(&ReadRequest::Lineage(first.into())))
        .unwrap_err();
    assert_eq!(err.code(), "session_not_found");
}

#[test]
fn an_origin_that_goes_on_after_its_fork_does_not_continue_the_fork() {
    // The accounting fork (…0b, 13:00) replays its parent (…0a, 12:00–12:02); here the parent
    // goes on at 14:00, after the fork ended. By hand: the fork continues the parent, and the
    // parent (which started first) continues nothing.
    let accounting = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/accounting/codex");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("codex");
    for entry in walkdir::WalkDir::new(&accounting) {
        let entry = entry.unwrap();
        let to = copy.join(entry.path().strip_prefix(&accounting).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
    let parent_file = walkdir::WalkDir::new(&copy)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .find(|p| p.to_string_lossy().ends_with("00000000000a.jsonl"))
        .unwrap();
    let later = serde_json::json!({"timestamp": "2026-02-23T14:00:00.000Z", "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "One more thing."}]}});
    let mut text = std::fs::read_to_string(&parent_file).unwrap();
    text.push_str(&format!("{later}\n"));
    std::fs::write(&parent_file, text).unwrap();
    let archive = dir.path().join("a.db");
    ingest(&archive, &[&copy]);
    let conn = crate::support::open(&archive);
    let parent_of = |id: &str| -> Option<String> {
        conn.query_row(
            "SELECT parent_session_id FROM sessions WHERE session_id = ?1",
            [id],
            |r| r.get(0),
        )
        .unwrap()
    };
    let parent = "codex-session:019c0000-0000-7000-8000-00000000000a";
    let fork = "codex-session:019c0000-0000-7000-8000-00000000000b";
    assert_eq!(parent_of(parent), None);
    assert_eq!(parent_of(fork).as_deref(), Some(parent));
    let q = open_as(&archive, "admin");
    assert!(
        runtime()
            .block_on(q.read(&ReadRequest::Lineage(parent.into())))
            .is_ok()
    );
}

#[test]
fn a_rewind_appended_to_a_gemini_session_makes_its_cursor_stale() {
    let chain = walkdir::WalkDir::new(fixture("gemini-rewind-chain"))
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let lines: Vec<String> = std::fs::read_to_string(&chain)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir
        .path()
        .join("chats/session-2026-05-02T09-00-c4a1e2f0.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    // Records 0–4 (the header, u1, g1 twice, g2): three messages.
    std::fs::write(&file, lines[..5].join("\n") + "\n").unwrap();
    let archive = dir.path().join("a.db");
    ingest(&archive, &[&file]);
    let page = |cursor: Option<&str>| read_page(&archive, CHAIN_ID, 1, cursor);
    let first: Value = serde_json::from_slice(&page(None).stdout).unwrap();
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    // Growing by the rewind and what follows removes g1 and g2: the file grew, the session was
    // replaced, so the cursor is stale.
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let summary = ingest(&archive, &[&file]);
    assert_eq!(summary["files_rewritten"], 0, "{summary}");
    let out = page(Some(&cursor));
    assert_eq!(out.status.code(), Some(2));
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "stale_cursor", "{body}");
}
