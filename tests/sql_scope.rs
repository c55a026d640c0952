//! Read-only SQL, scopes, committed turns and the audit trail, end to end: hostile statements
//! are refused before planning and change no byte of the archive; a reader scope reaches no
//! other session's rows by any route, in either language; credentials are masked for a reader
//! in results and exports and raw for admin; a transcript cut mid-turn shows its raw rows only
//! in `events_raw`; every query has exactly one intent and one outcome, and a query whose
//! intent cannot be recorded does not run. Oracles are SQLite on the archive file and the
//! fixture's own text.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use quarry::{Caps, Error, Options, Quarry, Scope};
use serde_json::Value;

use crate::support::rows::{json_rows, sql_rows};
use crate::support::runtime;
use crate::support::{corpus, ingest_with, quarry};

/// An archive in `dir` of `files` (relative to the corpus), each group with its owner.
fn archive_of(dir: &Path, groups: &[(&str, &[&str])]) -> Option<PathBuf> {
    let corpus = corpus()?;
    let archive = dir.join("archive.db");
    for (owner, files) in groups {
        let paths: Vec<PathBuf> = files.iter().map(|f| corpus.join(f)).collect();
        let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        ingest_with(&archive, &["--owner", owner], &refs);
    }
    Some(archive)
}

const ALICE: &[&str] = &["claude-code/chiphuyen-sniffly"];
const BOB: &[&str] = &[
    "claude-code/d-kimuson-claude-code-viewer",
    "codex/jnarowski-agentcmd",
];

/// The two-owner archive with its scopes file.
pub fn two_owner_archive(dir: &Path) -> Option<PathBuf> {
    let archive = archive_of(dir, &[("alice", ALICE), ("bob", BOB)])?;
    std::fs::write(
        dir.join("scopes.toml"),
        r#"
[scope.alice]
owner = "alice"

[scope.demo]
sessions = "cwd:/path/to/Demo"

[scope.nobody]
owner = "carol"

[scope.offbranch]
sessions = "-git_branch:feat/none"
"#,
    )
    .unwrap();
    Some(archive)
}

pub(crate) fn open_as(archive: &Path, scope: &str) -> Quarry {
    let mut options = Options::new(archive);
    options.tz = Some("UTC".into());
    options.scope = quarry::scope::resolve(scope, &archive.with_file_name("scopes.toml")).unwrap();
    Quarry::open(&options).unwrap()
}

fn sql(q: &Quarry, text: &str) -> Result<Vec<Vec<Value>>, Error> {
    runtime().block_on(async {
        let answer = q.sql_collect(text, Caps::default()).await?;
        Ok(json_rows(&answer.batches))
    })
}

fn lang(q: &Quarry, text: &str) -> Result<Vec<Vec<Value>>, Error> {
    runtime().block_on(async {
        let answer = q.query_collect(text, Caps::default()).await?;
        Ok(json_rows(&answer.batches))
    })
}

fn one(rows: &[Vec<Value>]) -> i64 {
    rows[0][0].as_i64().unwrap()
}

/// The corpus of hostile statements: `(expected refusal, statement)`.
fn hostile() -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sql/hostile.sql");
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    for entry in text.split("\n-- ----\n") {
        let Some(start) = entry.find("-- kind: ") else {
            continue;
        };
        let rest = &entry[start + "-- kind: ".len()..];
        let (kind, statement) = rest.split_once('\n').unwrap_or((rest, ""));
        out.push((
            kind.trim().to_string(),
            statement.trim_end_matches('\n').to_string(),
        ));
    }
    out
}

/// Names and contents of the files in `dir` (the audit file's contents excepted).
fn files_of(dir: &Path) -> BTreeSet<(String, String)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().to_string();
            let hash = if name.contains(".audit.db") {
                String::new()
            } else {
                blake3::hash(&std::fs::read(e.path()).unwrap())
                    .to_hex()
                    .to_string()
            };
            (name, hash)
        })
        .collect()
}

#[test]
fn hostile_statements_are_refused_before_planning_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = archive_of(dir.path(), &[("alice", ALICE)]) else {
        return;
    };
    std::fs::write(
        dir.path().join("scopes.toml"),
        "[scope.alice]\nowner = \"alice\"\n",
    )
    .unwrap();
    let admin = open_as(&archive, "admin");
    let reader = open_as(&archive, "alice");
    // A first query creates the audit file; nothing after it may create another.
    assert_eq!(
        one(&sql(&admin, "SELECT COUNT(*) FROM sessions").unwrap()),
        4
    );
    let before = files_of(dir.path());
    let statements = hostile();
    assert!(statements.len() >= 100, "{} statements", statements.len());
    let kinds: BTreeSet<&str> = statements.iter().map(|(k, _)| k.as_str()).collect();
    for kind in [
        "empty",
        "multiple_statements",
        "ddl",
        "dml",
        "select_into",
        "show",
        "copy",
        "set",
        "pragma_attach",
        "transaction",
        "function",
        "external_read",
        "explain_analyze",
        "nested_explain",
        "not_a_query",
    ] {
        assert!(kinds.contains(kind), "no {kind} statement in the corpus");
    }
    let mut wrong = Vec::new();
    for (kind, statement) in &statements {
        for (scope, q) in [("admin", &admin), ("alice", &reader)] {
            match sql(q, statement) {
                Err(Error::SqlRefused { refusal, .. }) if refusal.name() == kind => {}
                other => wrong.push(format!(
                    "[{scope}] expected {kind}, got {:?}: {statement}",
                    other.map(|r| r.len())
                )),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert_eq!(
        files_of(dir.path()),
        before,
        "a statement changed or created a file"
    );
    // Plain EXPLAIN: admin only.
    assert!(sql(&admin, "EXPLAIN SELECT COUNT(*) FROM messages").is_ok());
    assert!(matches!(
        sql(&reader, "EXPLAIN SELECT COUNT(*) FROM messages"),
        Err(Error::SqlRefused {
            refusal: quarry::Refusal::ExplainAdminOnly,
            ..
        })
    ));
    // The command line: exit 2 and the refusal named, in text and in JSON.
    let a = archive.display().to_string();
    let out = quarry(&["--archive", &a, "sql", "SELECT 1; DROP TABLE sessions"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("multiple_statements"));
    let out = quarry(&[
        "--archive",
        &a,
        "--format",
        "json",
        "sql",
        "DELETE FROM sessions",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["diagnostics"][0]["refusal"], "dml");
    assert_eq!(files_of(dir.path()), before);
}

#[test]
fn the_spec_examples_equal_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = archive_of(
        dir.path(),
        &[(
            "alice",
            &["claude-code/marot-spotter", "codex/jnarowski-agentcmd"],
        )],
    ) else {
        return;
    };
    // A transcript cut mid-turn holds a call whose result never came.
    let (_, cut) = cut_mid_turn(dir.path()).unwrap();
    ingest_with(&archive, &["--owner", "alice"], &[&cut]);
    let q = open_as(&archive, "admin");
    // Tokens per turn (the spec groups one conversation by turn; turn ids are per session).
    let per_turn = "SELECT session_id, turn_id, SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens \
                    FROM usage GROUP BY session_id, turn_id ORDER BY session_id, turn_id NULLS FIRST";
    let got = sql(&q, per_turn).unwrap();
    assert!(got.len() > 20, "{} turns", got.len());
    assert_eq!(got, sql_rows(&archive, per_turn));
    // Tool calls without a recorded result (the spec's `tool_calls` are `actions`).
    let unanswered = "SELECT c.tool_name, c.turn_id, c.action_id \
                      FROM actions c \
                      LEFT JOIN (SELECT tool_use_block_id FROM actions WHERE tool_result_block_id IS NOT NULL) r \
                             ON r.tool_use_block_id = c.tool_use_block_id \
                      WHERE r.tool_use_block_id IS NULL \
                      ORDER BY c.action_id DESC";
    let got = sql(&q, unanswered).unwrap();
    assert!(!got.is_empty(), "the corpus has calls without a result");
    assert_eq!(got, sql_rows(&archive, unanswered));
    // The spec's JSON shape, with `truncated` exactly when a cap cut the rows.
    let a = archive.display().to_string();
    for (limit, truncated) in [("1000000", false), ("3", true)] {
        let out = quarry(&[
            "--archive",
            &a,
            "--format",
            "sql-json",
            "--limit",
            limit,
            "sql",
            per_turn,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            v["columns"],
            serde_json::json!(["session_id", "turn_id", "input_tokens", "output_tokens"])
        );
        assert_eq!(v["truncated"], truncated);
        assert_eq!(v["skipped_partitions"], 0);
        let rows = v["rows"].as_array().unwrap().len();
        assert_eq!(
            rows,
            if truncated {
                3
            } else {
                got_len(&archive, per_turn)
            }
        );
    }
    // Global flags may follow the statement, as they may follow a query.
    let out = quarry(&[
        "--archive",
        &a,
        "sql",
        "SELECT COUNT(*) AS n FROM sessions",
        "--format",
        "sql-json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["columns"], serde_json::json!(["n"]));
}

fn got_len(archive: &Path, sql: &str) -> usize {
    sql_rows(archive, sql).len()
}

#[test]
fn a_reader_scope_reaches_no_other_session() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = two_owner_archive(dir.path()) else {
        return;
    };
    let mine = "(SELECT session_id FROM sessions WHERE owner = 'alice')";
    let count = |sql: &str| sql_rows(&archive, sql)[0][0].as_i64().unwrap();
    let my_messages = count(&format!(
        "SELECT COUNT(*) FROM messages WHERE session_id IN {mine}"
    ));
    let my_sessions = count(&format!(
        "SELECT COUNT(*) FROM sessions WHERE session_id IN {mine}"
    ));
    let my_blocks = count(&format!(
        "SELECT COUNT(*) FROM blocks WHERE session_id IN {mine}"
    ));
    let all_messages = count("SELECT COUNT(*) FROM messages");
    assert!(my_messages > 0 && my_messages < all_messages);
    let bob: String = sql_rows(
        &archive,
        "SELECT session_id FROM sessions WHERE owner = 'bob' LIMIT 1",
    )[0][0]
        .as_str()
        .unwrap()
        .to_string();

    let alice = open_as(&archive, "alice");
    for (query, want) in [
        ("SELECT COUNT(*) FROM messages".to_string(), my_messages),
        ("SELECT COUNT(*) FROM messages m JOIN sessions s ON m.session_id = s.session_id".into(), my_messages),
        ("SELECT COUNT(*) FROM messages m LEFT JOIN sessions s ON m.session_id = s.session_id".into(), my_messages),
        ("SELECT COUNT(*) FROM sessions WHERE session_id IN (SELECT session_id FROM blocks) OR session_id NOT IN (SELECT session_id FROM blocks)".into(), my_sessions),
        ("SELECT COUNT(*) FROM (SELECT session_id FROM sessions UNION ALL SELECT session_id FROM sessions)".into(), 2 * my_sessions),
        ("WITH b AS (SELECT * FROM blocks) SELECT COUNT(*) FROM b".into(), my_blocks),
        (format!("SELECT COUNT(*) FROM messages WHERE session_id = '{bob}'"), 0),
        (format!("SELECT COUNT(*) FROM sessions WHERE session_id = '{bob}' OR owner = 'bob'"), 0),
        ("SELECT COUNT(DISTINCT owner) FROM sessions".into(), 1),
        ("SELECT SUM(n) FROM (SELECT COUNT(*) AS n FROM messages GROUP BY session_id)".into(), my_messages),
    ] {
        assert_eq!(one(&sql(&alice, &query).unwrap()), want, "{query}");
    }
    // The language: bare units, `session.` fields, aggregates.
    assert_eq!(one(&lang(&alice, "messages | count").unwrap()), my_messages);
    assert_eq!(
        lang(&alice, "messages where session.owner:bob | count").unwrap(),
        vec![vec![Value::from(0)]]
    );
    assert_eq!(one(&lang(&alice, "sessions | count").unwrap()), my_sessions);
    let by_owner = lang(&alice, "sessions | group by owner | count").unwrap();
    assert_eq!(
        by_owner,
        vec![vec![Value::from("alice"), Value::from(my_sessions)]]
    );
    // Admin-only tables and columns are unknown, not forbidden.
    for query in [
        "SELECT * FROM events_raw",
        "SELECT payload FROM events",
        "SELECT * FROM usage_records",
        "SELECT * FROM source_files",
        "SELECT * FROM meta",
    ] {
        let err = sql(&alice, query).unwrap_err().to_string();
        assert!(
            (err.contains("not found")
                || err.contains("No field named")
                || err.contains("not exist"))
                && !err.to_lowercase().contains("forbidden")
                && !err.contains("admin"),
            "{query}: {err}"
        );
    }
    // What admin sees of the catalog.
    let admin = open_as(&archive, "admin");
    for query in [
        "SELECT COUNT(*) FROM events_raw",
        "SELECT COUNT(payload) FROM events",
    ] {
        assert!(one(&sql(&admin, query).unwrap()) > 0, "admin: {query}");
    }
    let listed = sql(
        &alice,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    )
    .unwrap();
    let listed: Vec<&str> = listed.iter().map(|r| r[0].as_str().unwrap()).collect();
    assert!(
        listed.contains(&"messages") && !listed.contains(&"events_raw"),
        "{listed:?}"
    );

    // A predicate scope: exactly the sessions under the folder, and no one's identity.
    let demo = open_as(&archive, "demo");
    let under = count(
        "SELECT COUNT(*) FROM sessions WHERE cwd = '/path/to/Demo' OR cwd LIKE '/path/to/Demo/%'",
    );
    assert!(under > 0);
    assert_eq!(
        one(&sql(&demo, "SELECT COUNT(*) FROM sessions").unwrap()),
        under
    );
    assert_eq!(
        one(&sql(
            &demo,
            "SELECT COUNT(*) FROM sessions WHERE owner IS NOT NULL"
        )
        .unwrap()),
        0
    );
    // A clause on a NULL field is unknown, its negation too: the scope grants what the
    // language selects, and SQLite's `<>` (which leaves NULL out) agrees.
    let off = open_as(&archive, "offbranch");
    let off_branch = count("SELECT COUNT(*) FROM sessions WHERE git_branch <> 'feat/none'");
    assert!(
        off_branch < count("SELECT COUNT(*) FROM sessions"),
        "some sessions have no branch"
    );
    assert_eq!(
        one(&sql(&off, "SELECT COUNT(*) FROM sessions").unwrap()),
        off_branch
    );
    assert_eq!(
        one(&lang(
            &open_as(&archive, "admin"),
            "sessions where NOT git_branch:feat/none | count"
        )
        .unwrap()),
        off_branch
    );
    // A scope whose owner has no sessions sees none, and its queries still run.
    let nobody = open_as(&archive, "nobody");
    assert_eq!(
        one(&sql(&nobody, "SELECT COUNT(*) FROM messages").unwrap()),
        0
    );
    assert_eq!(one(&lang(&nobody, "actions | count").unwrap()), 0);
    // The command line: --scope, and admin-only verbs.
    let a = archive.display().to_string();
    let out = quarry(&[
        "--archive",
        &a,
        "--scope",
        "alice",
        "--format",
        "sql-json",
        "sql",
        "SELECT COUNT(*) FROM messages",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows"][0][0], my_messages);
    // An export names every table before it writes one.
    let refused = dir.path().join("refused");
    let out = quarry(&[
        "--archive",
        &a,
        "--scope",
        "alice",
        "--format",
        "csv",
        "export",
        "--tables",
        "sessions,events_raw",
        "--to",
        &refused.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!refused.exists() || std::fs::read_dir(&refused).unwrap().next().is_none());
    for verb in ["audit", "tables", "snapshot", "ingest", "reindex"] {
        let out = quarry(&["--archive", &a, "--scope", "alice", verb]);
        assert_eq!(out.status.code(), Some(2), "{verb}");
    }
    let out = quarry(&["--archive", &a, "--scope", "mallory", "messages | count"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no scope named mallory"));
}

/// A Claude Code session whose tool call and output hold credentials.
/// An archive in `dir` of the secret session, owned by alice, with her scope: the archive, the
/// API key and the bearer token it holds.
pub(crate) fn secret_archive(dir: &Path) -> (PathBuf, String, String) {
    // Split so no scanner mistakes the fixture for a leaked key.
    let api_key = format!("sk-proj-{}", "Zx81kQ2vLm0pR7tY4wB9nC3dF6gH1jK5");
    let bearer = format!("{}{}", "eyQ9c2VjcmV0LXRva2Vu", "4f7a9b2c");
    let transcript = secret_session(dir, &api_key, &bearer);
    let archive = dir.join("archive.db");
    ingest_with(&archive, &["--owner", "alice"], &[&transcript]);
    std::fs::write(
        dir.join("scopes.toml"),
        "[scope.alice]\nowner = \"alice\"\n",
    )
    .unwrap();
    (archive, api_key, bearer)
}

fn secret_session(dir: &Path, api_key: &str, bearer: &str) -> PathBuf {
    let path = dir.join("secret.jsonl");
    let line = |v: Value| serde_json::to_string(&v).unwrap();
    let common = |uuid: &str, parent: Option<&str>, at: &str| {
        serde_json::json!({
            "parentUuid": parent, "isSidechain": false, "userType": "external",
            "cwd": "/home/alice/acme-web", "sessionId": "5ec2e7a1-0000-4000-8000-000000000001",
            "version": "2.1.38", "uuid": uuid, "timestamp": at
        })
    };
    let mut prompt = common("u1", None, "2026-03-01T10:00:00.000Z");
    prompt["type"] = "user".into();
    prompt["message"] = serde_json::json!({"role": "user", "content": "check the API"});
    let mut call = common("a1", Some("u1"), "2026-03-01T10:00:01.000Z");
    call["type"] = "assistant".into();
    call["requestId"] = "req_1".into();
    call["message"] = serde_json::json!({
        "model": "claude-opus-4-6", "id": "msg_1", "type": "message", "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                     "input": {"command": format!("curl -H 'Authorization: Bearer {bearer}' https://api.example.com/v1")}}],
        "usage": {"input_tokens": 10, "output_tokens": 5}
    });
    let mut result = common("u2", Some("a1"), "2026-03-01T10:00:02.000Z");
    result["type"] = "user".into();
    result["message"] = serde_json::json!({"role": "user", "content": [{
        "tool_use_id": "toolu_1", "type": "tool_result",
        "content": format!("env:\nOPENAI_API_KEY={api_key}\nstatus: ok"), "is_error": false}]});
    let mut reply = common("a2", Some("u2"), "2026-03-01T10:00:03.000Z");
    reply["type"] = "assistant".into();
    reply["requestId"] = "req_2".into();
    reply["message"] = serde_json::json!({
        "model": "claude-opus-4-6", "id": "msg_2", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": "The API answered."}],
        "usage": {"input_tokens": 12, "output_tokens": 4}
    });
    // A record Claude Code never shows the user (`isMeta`).
    let mut meta = common("u0", None, "2026-03-01T09:59:59.000Z");
    meta["type"] = "user".into();
    meta["isMeta"] = true.into();
    meta["message"] = serde_json::json!({"role": "user", "content": "Caveat: the messages below were generated by the user while running local commands."});
    let text = [meta, prompt, call, result, reply].map(line).join("\n") + "\n";
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn credentials_are_masked_for_a_reader_and_raw_for_admin() {
    let dir = tempfile::tempdir().unwrap();
    let (archive, api_key, bearer) = secret_archive(dir.path());
    let admin = open_as(&archive, "admin");
    let reader = open_as(&archive, "alice");
    let all = |q: &Quarry, query: &str, sql_mode: bool| {
        let rows = if sql_mode {
            sql(q, query)
        } else {
            lang(q, query)
        }
        .unwrap();
        serde_json::to_string(&rows).unwrap()
    };
    for (query, sql_mode) in [
        (
            "SELECT tool_command, tool_input, output_text FROM actions",
            true,
        ),
        ("SELECT text, tool_input, tool_command FROM blocks", true),
        ("actions", false),
        ("blocks", false),
    ] {
        let raw = all(&admin, query, sql_mode);
        assert!(
            raw.contains(&api_key) && raw.contains(&bearer),
            "admin sees raw: {query}"
        );
        let masked = all(&reader, query, sql_mode);
        assert!(
            !masked.contains(&api_key) && !masked.contains(&bearer),
            "a reader sees a credential: {query}: {masked}"
        );
        assert!(masked.contains("[REDACTED:"), "{query}: {masked}");
    }
    // The record the source never shows the user is admin's only.
    let hidden = "SELECT COUNT(*) FROM messages WHERE text LIKE 'Caveat:%'";
    assert_eq!(one(&sql(&admin, hidden).unwrap()), 1);
    assert_eq!(
        one(&sql(&admin, "SELECT COUNT(*) FROM messages WHERE hidden").unwrap()),
        1
    );
    assert_eq!(one(&sql(&reader, hidden).unwrap()), 0);
    assert_eq!(
        one(&sql(&reader, "SELECT COUNT(*) FROM messages").unwrap()),
        one(&sql(&admin, "SELECT COUNT(*) FROM messages").unwrap()) - 1
    );
    assert_eq!(
        one(&sql(
            &reader,
            "SELECT COUNT(*) FROM blocks WHERE text LIKE 'Caveat:%'"
        )
        .unwrap()),
        0
    );
    assert_eq!(
        one(&lang(&reader, "messages | count").unwrap()),
        one(&sql(&reader, "SELECT COUNT(*) FROM messages").unwrap())
    );
    // Full-text search cannot spell out a masked secret: rows holding one are left out of a
    // reader's matches (admin's prefix query finds it).
    let prefix = format!("blocks where ~\"{}*\" | count", &api_key[8..14]);
    assert_eq!(one(&lang(&admin, &prefix).unwrap()), 1, "{prefix}");
    assert_eq!(one(&lang(&reader, &prefix).unwrap()), 0, "{prefix}");
    assert_eq!(
        one(&lang(&reader, "blocks where ~\"status\" | count").unwrap()),
        0
    );
    assert_eq!(
        one(&lang(&reader, "blocks where ~\"answered\" | count").unwrap()),
        1
    );
    // Nor under an OR or a NOT, through a column that is not masked (the index covers them
    // all): the reader's answer is the same whether or not the prefix occurs.
    let piece = &api_key[8..14];
    for (query, admin_rows) in [
        (
            format!(
                "SELECT COUNT(*) FROM blocks WHERE fts_match(tool_name, '{piece}*') OR session_id = 'none'"
            ),
            1,
        ),
        (
            format!("SELECT COUNT(*) FROM blocks WHERE NOT fts_match(tool_name, '{piece}*')"),
            -1,
        ),
    ] {
        let absent = query.replace(piece, "Qq0Qq0");
        let reader_rows = one(&sql(&reader, &query).unwrap());
        assert_eq!(reader_rows, one(&sql(&reader, &absent).unwrap()), "{query}");
        if admin_rows == 1 {
            assert_eq!(one(&sql(&admin, &query).unwrap()), 1, "{query}");
            assert_eq!(reader_rows, 0, "{query}");
        }
    }
    // A filter is evaluated on what the reader sees, so it cannot probe for the secret.
    let probe = format!("SELECT COUNT(*) FROM actions WHERE output_text LIKE '%{api_key}%'");
    assert_eq!(one(&sql(&admin, &probe).unwrap()), 1);
    assert_eq!(one(&sql(&reader, &probe).unwrap()), 0);
    // Exports: a query's result file and whole-table exports.
    let a = archive.display().to_string();
    let scopes = dir.path().join("scopes.toml").display().to_string();
    let csv = dir.path().join("out.csv");
    let out = quarry(&[
        "--archive",
        &a,
        "--scopes",
        &scopes,
        "--scope",
        "alice",
        "-o",
        &csv.display().to_string(),
        "sql",
        "SELECT * FROM actions",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(
        !text.contains(&api_key) && text.contains("[REDACTED:"),
        "{text}"
    );
    let exported = dir.path().join("export");
    let out = quarry(&[
        "--archive",
        &a,
        "--scopes",
        &scopes,
        "--scope",
        "alice",
        "--format",
        "csv",
        "export",
        "--to",
        &exported.display().to_string(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut seen = 0;
    for entry in std::fs::read_dir(&exported).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains(&api_key) && !text.contains(&bearer),
            "{}",
            path.display()
        );
        seen += 1;
    }
    assert!(exported.join("actions.csv").exists() && !exported.join("events_raw.csv").exists());
    assert!(seen > 5);
}

/// A real Claude Code transcript whose first turn is committed, and a copy of it cut right
/// after that turn's first tool call (its result never arrives): `(full, cut)`. The copy
/// claims the same session id, so it is stored as a second session (`<id>~<hash>`).
fn cut_mid_turn(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let full = corpus()?.join(
        "claude-code/chiphuyen-sniffly/projects/-Users-chip-dev-ai-music/d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl",
    );
    let text = std::fs::read_to_string(&full).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let is_call =
        |l: &str| l.contains("\"type\":\"tool_use\"") || l.contains("\"type\": \"tool_use\"");
    let cut_at = (0..lines.len())
        .find(|&i| is_call(lines[i]) && lines[i + 1..].iter().any(|r| r.contains("tool_result")))
        .unwrap();
    let cut = dir.join("cut.jsonl");
    std::fs::write(&cut, lines[..=cut_at].join("\n") + "\n").unwrap();
    Some((full, cut))
}

#[test]
fn a_transcript_cut_mid_turn_shows_its_raw_rows_only_in_events_raw() {
    let dir = tempfile::tempdir().unwrap();
    let Some((full, cut)) = cut_mid_turn(dir.path()) else {
        return;
    };
    let archive = dir.path().join("archive.db");
    ingest_with(&archive, &["--owner", "alice"], &[&full, &cut]);
    let db = crate::support::open(&archive);
    let (cut_session, turn): (String, String) = db
        .query_row(
            "SELECT session_id, turn_id FROM turns WHERE session_id LIKE '%~%' AND committed = 0",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let full_session: String = db
        .query_row(
            "SELECT session_id FROM turns WHERE turn_id = ?1 AND committed = 1 AND session_id <> ?2",
            [&turn, &cut_session],
            |r| r.get(0),
        )
        .unwrap();
    let raw_unfinished = crate::support::scalar(
        &db,
        "SELECT COUNT(*) FROM events_raw WHERE session_id = ?1 AND turn_id = ?2",
        [&cut_session, &turn],
    );
    assert!(raw_unfinished >= 1);
    let q = open_as(&archive, "admin");
    let count = |table: &str, session: &str| {
        one(&sql(
            &q,
            &format!(
                "SELECT COUNT(*) FROM {table} WHERE session_id = '{session}' AND turn_id = '{turn}'"
            ),
        )
        .unwrap())
    };
    assert_eq!(count("events_raw", &cut_session), raw_unfinished);
    assert_eq!(
        count("events", &cut_session),
        0,
        "no row of the unfinished turn in events"
    );
    // The same turn id committed in the other session stays visible, and does not make the
    // cut session's turn eligible.
    assert!(count("events", &full_session) > 0);
    assert_eq!(
        one(&sql(&q, &format!("SELECT COUNT(*) FROM messages WHERE session_id = '{cut_session}' AND turn_id = '{turn}' AND turn_committed")).unwrap()),
        0
    );
    assert!(one(&sql(&q, &format!("SELECT COUNT(*) FROM messages WHERE session_id = '{cut_session}' AND turn_id = '{turn}' AND NOT turn_committed")).unwrap()) > 0);
}

#[test]
fn every_query_has_one_intent_and_one_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = archive_of(dir.path(), &[("alice", ALICE)]) else {
        return;
    };
    let q = open_as(&archive, "admin");
    let rt = runtime();
    let mut asked = 0;
    // Ok, in both languages; a refused statement; a bad query; a capped answer; an
    // abandoned stream.
    assert!(sql(&q, "SELECT COUNT(*) FROM messages").is_ok());
    assert!(lang(&q, "messages | group by role | count").is_ok());
    assert!(sql(&q, "DROP TABLE sessions").is_err());
    assert!(lang(&q, "messages | group by").is_err());
    asked += 4;
    let capped = rt
        .block_on(q.sql_collect(
            "SELECT * FROM messages",
            Caps {
                limit: Some(2),
                offset: None,
            },
        ))
        .unwrap();
    assert!(capped.truncated);
    asked += 1;
    rt.block_on(async {
        let mut stream = q.query("blocks", Caps::default()).await.unwrap();
        let _first = stream.next_batch().await;
    });
    asked += 1;
    let db = rusqlite::Connection::open(dir.path().join("archive.audit.db")).unwrap();
    let n = |sql: &str| crate::support::scalar(&db, sql, []);
    assert_eq!(n("SELECT COUNT(*) FROM intents"), asked);
    assert_eq!(n("SELECT COUNT(*) FROM outcomes"), asked);
    assert_eq!(
        n("SELECT COUNT(*) FROM intents WHERE intent_id NOT IN (SELECT intent_id FROM outcomes)"),
        0
    );
    let statuses = sql_rows(
        &dir.path().join("archive.audit.db"),
        "SELECT i.language, o.status, o.truncated FROM intents i JOIN outcomes o USING (intent_id) ORDER BY intent_id",
    );
    let statuses: Vec<String> = statuses
        .iter()
        .map(|r| {
            format!(
                "{} {} {}",
                r[0].as_str().unwrap(),
                r[1].as_str().unwrap(),
                r[2]
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            "sql ok 0",
            "query ok 0",
            "sql error null",
            "query error null",
            "sql ok 1",
            "query abandoned null",
        ]
    );
    // `quarry audit` lists them, newest first; the command line records its surface.
    let a = archive.display().to_string();
    assert!(
        quarry(&["--archive", &a, "sessions | count"])
            .status
            .success()
    );
    let listed = crate::support::quarry_json(&[
        "--archive",
        &a,
        "--format",
        "json",
        "--limit",
        "3",
        "audit",
    ]);
    let records = listed["records"].as_array().unwrap();
    assert_eq!(records.len(), 3);
    assert_eq!(records[0]["surface"], "cli");
    assert_eq!(records[0]["query"], "sessions | count");
    assert_eq!(records[0]["status"], "ok");
}

#[test]
fn a_query_whose_intent_cannot_be_recorded_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = archive_of(dir.path(), &[("alice", ALICE)]) else {
        return;
    };
    // Tests run as root, so permissions cannot stop the write: a directory can.
    std::fs::create_dir(dir.path().join("archive.audit.db")).unwrap();
    let q = open_as(&archive, "admin");
    assert!(matches!(sql(&q, "SELECT 1"), Err(Error::Audit(_))));
    assert!(matches!(lang(&q, "messages | count"), Err(Error::Audit(_))));
    let a = archive.display().to_string();
    let out = quarry(&["--archive", &a, "messages | count"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "no result was returned");
    assert!(String::from_utf8_lossy(&out.stderr).contains("did not run"));
    assert_eq!(q.scope(), &Scope::Admin);
}

/// The name the user database gives uid `uid` (read from /etc/passwd, independently of quarry).
fn passwd_name(uid: u32) -> Option<String> {
    std::fs::read_to_string("/etc/passwd")
        .ok()?
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.get(2)? == &uid.to_string().as_str()).then(|| f[0].to_string())
        })
}

#[test]
fn the_default_owner_comes_from_the_user_database_without_user_set() {
    use std::os::unix::fs::MetadataExt;
    let Some(corpus) = corpus() else { return };
    let uid = std::fs::metadata("/proc/self").unwrap().uid();
    let Some(expected) = passwd_name(uid) else {
        eprintln!("notice: uid {uid} is not in /etc/passwd; skipping");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let file = corpus.join("claude-code/marot-spotter/short.jsonl");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args([
            "--archive",
            &archive.display().to_string(),
            "ingest",
            "--no-progress",
        ])
        .arg(&file)
        .env_remove("USER")
        .env_remove("USERNAME")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let owners = sql_rows(&archive, "SELECT DISTINCT owner FROM sessions");
    assert_eq!(owners, vec![vec![Value::from(expected)]]);
}

#[test]
fn a_readers_search_of_masked_text_keeps_what_it_sees_and_finds_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let (archive, api_key, _) = secret_archive(dir.path());
    let admin = open_as(&archive, "admin");
    let reader = open_as(&archive, "alice");
    let piece = &api_key[8..16];
    // (query, SQL?, admin's count, the reader's): a search the stored text answers first
    // (`status: ok`, a piece of the secret) and one it must not (the replacement's own words).
    for (query, sql_mode, admin_rows, reader_rows) in [
        (
            "SELECT COUNT(*) FROM actions WHERE output_text LIKE '%status: ok%'".to_string(),
            true,
            1,
            1,
        ),
        (
            format!("SELECT COUNT(*) FROM actions WHERE output_text ILIKE '%{piece}%'"),
            true,
            1,
            0,
        ),
        (
            "SELECT COUNT(*) FROM actions WHERE output_text ILIKE '%redacted%'".to_string(),
            true,
            0,
            1,
        ),
        (
            "SELECT COUNT(*) FROM blocks WHERE text LIKE '%OPENAI_API_KEY=%'".to_string(),
            true,
            1,
            1,
        ),
        (
            "blocks where text:\"OPENAI_API_KEY\" | count".to_string(),
            false,
            1,
            1,
        ),
        (
            format!("blocks where text:\"{piece}\" | count"),
            false,
            1,
            0,
        ),
        (
            "blocks where text:\"REDACTED:openai\" | count".to_string(),
            false,
            0,
            1,
        ),
    ] {
        let count = |q: &Quarry| {
            let rows = if sql_mode {
                sql(q, &query)
            } else {
                lang(q, &query)
            }
            .unwrap();
            rows[0][0].as_i64().unwrap()
        };
        assert_eq!(count(&admin), admin_rows, "admin: {query}");
        assert_eq!(count(&reader), reader_rows, "reader: {query}");
    }
}

#[test]
fn unit_rows_titles_come_through_the_readers_sessions_masked() {
    let dir = tempfile::tempdir().unwrap();
    let (archive, api_key, _) = secret_archive(dir.path());
    // The session's title holds the key (a `custom-title` record); re-read it.
    let transcript = dir.path().join("secret.jsonl");
    let mut text = std::fs::read_to_string(&transcript).unwrap();
    text.push_str(
        &serde_json::json!({"type": "custom-title", "customTitle": format!("rotate {api_key}"),
            "sessionId": "5ec2e7a1-0000-4000-8000-000000000001"})
        .to_string(),
    );
    text.push('\n');
    std::fs::write(&transcript, text).unwrap();
    ingest_with(&archive, &["--owner", "alice"], &[&transcript]);
    let admin = open_as(&archive, "admin");
    let reader = open_as(&archive, "alice");
    for q in [&admin, &reader] {
        for query in [
            "SELECT DISTINCT unit, origin, title FROM messages",
            "SELECT DISTINCT unit, origin, title FROM actions",
        ] {
            let rows = sql(q, query).unwrap();
            let sessions = sql(q, "SELECT origin, title FROM sessions").unwrap();
            assert_eq!(rows.len(), 1, "{query}");
            assert_eq!(rows[0][1..], sessions[0][..], "{query}");
            let unit = query.split("FROM ").nth(1).unwrap().trim_end_matches('s');
            assert_eq!(rows[0][0], unit, "{query}");
        }
    }
    let title =
        |q: &Quarry| lang(q, "messages | limit 1 | select title").unwrap()[0][0].to_string();
    assert!(title(&admin).contains(&api_key));
    let masked = title(&reader);
    assert!(
        !masked.contains(&api_key) && masked.contains("[REDACTED:"),
        "{masked}"
    );
    // A filter on a computed column is exact, and the title stays masked in it.
    let filtered = format!(
        "SELECT COUNT(*) FROM messages WHERE title LIKE '%{}%'",
        &api_key[8..20]
    );
    assert!(one(&sql(&admin, &filtered).unwrap()) > 0);
    assert_eq!(one(&sql(&reader, &filtered).unwrap()), 0);
}
