//! The agents beyond the first six (issue 32), one section each, on the fixtures of
//! `tests/fixtures/agents/` (MANIFEST.tsv names the source and licence of each): figures from
//! an independent reading of the raw files (`oracle.rs`) or worked out by hand from the
//! fixture's lines, never from the ingest's own output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::{ingest, open, quarry_json};

fn fixtures(folder: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agents")
        .join(folder)
}

/// `usage | group by model | agg count, sum:…` of an archive, as the oracle returns figures.
fn usage_by_model(conn: &rusqlite::Connection) -> BTreeMap<String, [i64; 5]> {
    let mut stmt = conn
        .prepare(
            "SELECT COALESCE(model, ''), COUNT(*), SUM(input_tokens), SUM(output_tokens),
                    SUM(cache_read_tokens), SUM(cache_write_tokens)
             FROM usage GROUP BY 1",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?],
        ))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// An OpenCode database with OpenCode's three tables, as its migrations create them (the
/// columns quarry reads and their neighbours), in WAL mode like OpenCode's own.
fn opencode_db(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
           slug text NOT NULL, directory text NOT NULL, title text NOT NULL,
           version text NOT NULL, share_url text, time_created integer NOT NULL,
           time_updated integer NOT NULL);
         CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
           time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
         CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL,
           session_id text NOT NULL, time_created integer NOT NULL,
           time_updated integer NOT NULL, data text NOT NULL);",
    )
    .unwrap();
    conn
}

/// Writes a session row.
fn oc_session(conn: &rusqlite::Connection, id: &str, parent: Option<&str>, version: &str, at: i64) {
    conn.execute(
        "INSERT INTO session VALUES (?1, 'p1', ?2, 'calm-fox', '/home/alice/src/api', ?3, ?4,
         NULL, ?5, ?5)",
        rusqlite::params![id, parent, format!("session {id}"), version, at],
    )
    .unwrap();
}

/// Writes a message row and its parts (`(part id, data)`, in order).
pub fn oc_message(
    conn: &rusqlite::Connection,
    session: &str,
    id: &str,
    data: serde_json::Value,
    parts: &[serde_json::Value],
) {
    let at = data["time"]["created"].as_i64().unwrap();
    conn.execute(
        "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
        rusqlite::params![id, session, at, data.to_string()],
    )
    .unwrap();
    for (i, part) in parts.iter().enumerate() {
        conn.execute(
            "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            rusqlite::params![format!("prt_{id}_{i}"), id, session, at, part.to_string()],
        )
        .unwrap();
    }
}

/// An assistant message's data: `model` through `provider` at `at` with `tokens` (input,
/// output, reasoning, cache read, cache write).
pub fn oc_assistant(at: i64, provider: &str, model: &str, t: [i64; 5]) -> serde_json::Value {
    serde_json::json!({
        "role": "assistant", "time": {"created": at, "completed": at + 900},
        "parentID": "msg_x", "modelID": model, "providerID": provider, "mode": "build",
        "agent": "build", "path": {"cwd": "/home/alice/src/api", "root": "/home/alice/src/api"},
        "cost": 0, "finish": "stop",
        "tokens": {"input": t[0], "output": t[1], "reasoning": t[2],
                   "cache": {"read": t[3], "write": t[4]}}
    })
}

fn oc_user(at: i64) -> serde_json::Value {
    serde_json::json!({"role": "user", "time": {"created": at}, "agent": "build",
                       "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}})
}

pub fn oc_text(text: &str) -> serde_json::Value {
    serde_json::json!({"type": "text", "text": text})
}

pub const T0: i64 = 1_772_000_000_000;

/// The OpenCode traps, in a database built here: `ses_a` (created by 1.2.15) asks, answers with
/// a shell call (input 1,000, output 200 with 50 of reasoning in it, 300 cache reads, 100
/// writes), answers again (50 / 20 / 1,300 reads) and has an aborted call (all 0: no row);
/// `ses_b`, a fork made by 1.3.17, copies the prompt and the first answer under new ids (same
/// time, model and counts: counted once, as 1.2.15 wrote it) and adds one (70 / 30); `ses_c`, a subagent of `ses_a` created by
/// 1.3.17, calls gpt-5 (500 / 40, and 25 of reasoning that this release keeps outside the
/// output).
pub fn opencode_traps(path: &Path) -> rusqlite::Connection {
    let conn = opencode_db(path);
    let sonnet = |at, t| oc_assistant(at, "anthropic", "claude-sonnet-4-5", t);
    oc_session(&conn, "ses_a", None, "1.2.15", T0);
    // The prompt names a file, whose contents OpenCode adds as a synthetic part; the
    // subagent's first message is only such a part.
    let file = serde_json::json!({"type": "text", "synthetic": true,
        "text": "Called the Read tool with the following input: {\"filePath\": \"ci.yml\"}"});
    oc_message(
        &conn,
        "ses_a",
        "msg_a1",
        oc_user(T0 + 1000),
        &[oc_text("Why is the build red? @ci.yml"), file.clone()],
    );
    let call = serde_json::json!({"type": "tool", "callID": "call_1", "tool": "bash",
        "state": {"status": "completed", "input": {"command": "cargo test"},
                  "output": "1 failed", "time": {"start": T0 + 2100, "end": T0 + 2500}}});
    let first = sonnet(T0 + 2000, [1000, 200, 50, 300, 100]);
    let thinking = serde_json::json!({"type": "reasoning", "text": "Run the tests first."});
    oc_message(
        &conn,
        "ses_a",
        "msg_a2",
        first.clone(),
        &[thinking.clone(), call.clone()],
    );
    oc_message(
        &conn,
        "ses_a",
        "msg_a3",
        sonnet(T0 + 3000, [50, 20, 0, 1300, 0]),
        &[oc_text("One test fails; shall I fix it?")],
    );
    let mut aborted = sonnet(T0 + 4000, [0, 0, 0, 0, 0]);
    aborted["error"] = serde_json::json!({"name": "MessageAbortedError"});
    oc_message(&conn, "ses_a", "msg_a4", aborted, &[]);
    oc_session(&conn, "ses_c", Some("ses_a"), "1.3.17", T0 + 5000);
    oc_message(&conn, "ses_c", "msg_c1", oc_user(T0 + 5000), &[file]);
    oc_message(
        &conn,
        "ses_c",
        "msg_c2",
        oc_assistant(T0 + 6000, "openai", "gpt-5", [500, 40, 25, 0, 0]),
        &[oc_text("tests/login.rs:12")],
    );
    // Forked by a later release, which keeps the reasoning apart: the copies are still the rows
    // as the first session's release wrote them.
    oc_session(&conn, "ses_b", None, "1.3.17", T0 + 10_000);
    oc_message(
        &conn,
        "ses_b",
        "msg_b1",
        oc_user(T0 + 1000),
        &[oc_text("Why is the build red?")],
    );
    oc_message(&conn, "ses_b", "msg_b2", first, &[thinking, call]);
    oc_message(
        &conn,
        "ses_b",
        "msg_b3",
        oc_user(T0 + 11_000),
        &[oc_text("Try another way.")],
    );
    oc_message(
        &conn,
        "ses_b",
        "msg_b4",
        sonnet(T0 + 12_000, [70, 30, 0, 0, 0]),
        &[oc_text("Done.")],
    );
    conn
}

#[test]
fn opencode_counts_each_call_once_across_forks_and_releases() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("opencode");
    std::fs::create_dir(&data).unwrap();
    let conn = opencode_traps(&data.join("opencode.db"));
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&data]);
    assert_eq!(
        summary["sessions_ingested"]["opencode-session"], 3,
        "{summary}"
    );
    assert_eq!(
        summary["diagnostics"].as_array().unwrap().len(),
        0,
        "{summary}"
    );
    let archive = open(&db);
    assert_usage(
        &archive,
        &[
            (
                "claude-sonnet-4-5",
                [3, 1000 + 50 + 70, 200 + 20 + 30, 300 + 1300, 100],
            ),
            ("gpt-5", [1, 500, 40 + 25, 0, 0]),
        ],
        crate::oracle::opencode(&data.join("opencode.db"), [1, 3, 16]),
    );
    assert_eq!(
        responses_by_session(&archive),
        "opencode-session:ses_a=2 opencode-session:ses_b=1 opencode-session:ses_c=1"
    );
    // The fork repeats the first session's opening, which the archive links as a continuation.
    assert_eq!(
        children(&archive),
        "opencode-session:ses_b<opencode-session:ses_a:continuation \
         opencode-session:ses_c<opencode-session:ses_a:subagent"
    );
    assert_eq!(
        roles(&archive, "opencode-session:ses_a"),
        "user assistant tool assistant assistant"
    );
    assert_eq!(
        crate::support::text(
            &archive,
            "SELECT tool_command FROM blocks WHERE session_id = 'opencode-session:ses_a'
             AND type = 'tool_use'",
            []
        ),
        "cargo test"
    );
    // A prompt with a synthetic part beside the typed text is a person's; one with only
    // synthetic text is not.
    assert_eq!(
        crate::support::text(
            &archive,
            "SELECT group_concat(session_id || '=' || authored_user_messages, ' ') FROM
             (SELECT * FROM sessions WHERE session_id IN
              ('opencode-session:ses_a', 'opencode-session:ses_c') ORDER BY session_id)",
            []
        ),
        "opencode-session:ses_a=1 opencode-session:ses_c=0"
    );
    drop(conn);
}

/// A database the agent changed between two ingests (a message's tokens filled in as its steps
/// finished, a title set, a new answer) gives the archive a fresh ingest of its final state
/// gives.
#[test]
fn an_opencode_database_changed_between_ingests_equals_a_fresh_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("opencode");
    std::fs::create_dir(&data).unwrap();
    let conn = opencode_traps(&data.join("opencode.db"));
    let db = dir.path().join("a.db");
    ingest(&db, &[&data]);
    conn.execute(
        "UPDATE message SET data = ?1 WHERE id = 'msg_a3'",
        [oc_assistant(
            T0 + 3000,
            "anthropic",
            "claude-sonnet-4-5",
            [50, 45, 0, 1300, 0],
        )
        .to_string()],
    )
    .unwrap();
    conn.execute(
        "UPDATE session SET title = 'Red build' WHERE id = 'ses_a'",
        [],
    )
    .unwrap();
    oc_message(
        &conn,
        "ses_b",
        "msg_b5",
        oc_assistant(
            T0 + 13_000,
            "anthropic",
            "claude-sonnet-4-5",
            [9, 9, 0, 0, 0],
        ),
        &[oc_text("Also done.")],
    );
    let again = ingest(&db, &[&data]);
    assert_eq!(again["files_changed"], 2, "{again}");
    assert_eq!(again["files_unchanged"], 1, "{again}");
    let fresh = dir.path().join("fresh.db");
    ingest(&fresh, &[&data]);
    let (a, b) = (open(&db), open(&fresh));
    assert_eq!(usage_by_model(&a), usage_by_model(&b));
    assert_eq!(
        usage_by_model(&a)["claude-sonnet-4-5"],
        [4, 1129, 284, 1600, 100]
    );
    assert_eq!(
        crate::support::table_counts(&a),
        crate::support::table_counts(&b)
    );
    let titles =
        "SELECT group_concat(title, ' | ') FROM (SELECT title FROM sessions ORDER BY session_id)";
    assert_eq!(
        crate::support::text(&a, titles, []),
        crate::support::text(&b, titles, [])
    );
}

/// The real database (OpenCode 1.1.65 and 1.2.15 sessions) equals an independent reading, and
/// is found where OpenCode keeps it: `~/.local/share/opencode`, `$XDG_DATA_HOME/opencode`, or
/// the file `$OPENCODE_DB` names.
#[test]
fn opencode_real_database_equals_an_independent_reading_wherever_it_is() {
    let real = |db: &Path| {
        std::fs::copy(fixtures("opencode").join("opencode.db"), db).unwrap();
    };
    in_each_place(
        "opencode",
        "OPENCODE_DB",
        real,
        |place, summary, archive, db| {
            assert_eq!(
                summary["sessions_ingested"]["opencode-session"], 2,
                "{place}: {summary}"
            );
            let want = crate::oracle::opencode(db, [1, 3, 16]);
            assert_eq!(want["glm-5"][0], 8);
            assert_eq!(usage_by_model(archive), want, "{place}");
        },
    );
}

/// Kilo CLI keeps OpenCode's tables in `~/.local/share/kilo/kilo.db` (`$XDG_DATA_HOME/kilo`,
/// `$KILO_DB`): its sessions are Kilo's, and its releases are numbered apart from OpenCode's
/// (the subagent's session, created by "1.3.17", keeps its 25 of reasoning inside the output:
/// gpt-5's output is 40, not 65).
#[test]
fn kilo_sessions_are_found_where_kilo_keeps_them_and_are_kilos() {
    let traps = |db: &Path| drop(opencode_traps(db));
    in_each_place("kilo", "KILO_DB", traps, |place, summary, archive, db| {
        let want = crate::oracle::opencode(db, [7, 0, 0]);
        assert_eq!(want["gpt-5"], [1, 500, 40, 0, 0]);
        assert_eq!(usage_by_model(archive), want, "{place}: {summary}");
        assert_eq!(
            summary["sessions_ingested"]["kilo-session"], 3,
            "{place}: {summary}"
        );
    });
}

/// An agent's database made by `make` where the agent keeps it (`~/.local/share/<agent>/
/// <agent>.db`, `$XDG_DATA_HOME/<agent>/<agent>.db`, and a file of another name that the
/// variable `var` names), found by `quarry ingest` with no path; `check` gets the place, the
/// summary, the archive and the database.
fn in_each_place(
    agent: &str,
    var: &str,
    make: impl Fn(&Path),
    check: impl Fn(&str, &serde_json::Value, &rusqlite::Connection, &Path),
) {
    for place in ["home", "xdg", "variable"] {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let (folder, vars): (PathBuf, Vec<(&str, PathBuf)>) = match place {
            "home" => (home.join(".local/share").join(agent), Vec::new()),
            "xdg" => (
                dir.path().join("xdg").join(agent),
                vec![("XDG_DATA_HOME", dir.path().join("xdg"))],
            ),
            _ => (dir.path().join("elsewhere"), Vec::new()),
        };
        std::fs::create_dir_all(&folder).unwrap();
        let db = match place {
            "variable" => folder.join("mine.db"),
            _ => folder.join(format!("{agent}.db")),
        };
        make(&db);
        let vars = if place == "variable" {
            vec![(var, db.clone())]
        } else {
            vars
        };
        let summary = ingest_discovered(dir.path(), &home, &vars);
        check(place, &summary, &open(&dir.path().join("a.db")), &db);
    }
}

/// The Goose traps (`goose/sessions.sql` and `goose/old-sessions.sql` say what each holds),
/// built as databases at `db` and `old`.
fn goose_traps(db: &Path, old: &Path) {
    for (path, script) in [(db, "sessions.sql"), (old, "old-sessions.sql")] {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let sql = std::fs::read_to_string(fixtures("goose").join(script)).unwrap();
        rusqlite::Connection::open(path)
            .unwrap()
            .execute_batch(&sql)
            .unwrap();
    }
}

#[test]
fn goose_counts_each_ledger_call_once_and_older_sessions_by_their_totals() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("goose/sessions/sessions.db");
    let old = dir.path().join("old/sessions.db");
    goose_traps(&db, &old);
    let archive_path = dir.path().join("a.db");
    let summary = ingest(&archive_path, &[&dir.path().join("goose"), &old]);
    assert_eq!(
        summary["sessions_ingested"]["goose-session"], 3,
        "{summary}"
    );
    assert_eq!(
        summary["diagnostics"].as_array().unwrap().len(),
        0,
        "{summary}"
    );
    let archive = open(&archive_path);
    assert_usage(
        &archive,
        &[
            ("", [1, 5000, 300, 0, 0]),
            ("claude-haiku-4-5", [1, 3000 - 500, 60, 0, 500]),
            (
                "claude-sonnet-4-5",
                [
                    2,
                    (12000 - 9000 - 1000) + (13000 - 12000),
                    200 + 80,
                    9000 + 12000,
                    1000,
                ],
            ),
            ("gpt-4o", [1, 7000, 400, 0, 0]),
        ],
        crate::oracle::goose(&[&db, &old]),
    );
    assert_eq!(
        children(&archive),
        "goose-session:20260301_2<goose-session:20260301_1:subagent"
    );
    assert_eq!(
        roles(&archive, "goose-session:20260301_1"),
        "user assistant tool assistant"
    );
    assert_eq!(
        crate::support::text(
            &archive,
            "SELECT group_concat(type, ' ') FROM (SELECT b.type FROM blocks b
             JOIN messages m USING (message_id) WHERE b.session_id = 'goose-session:20260301_1'
             ORDER BY m.position, b.position)",
            []
        ),
        "text thinking text tool_use tool_result text"
    );
    // A message whose content is not JSON is reported with its session and line; the rest of
    // the session, its usage included, is kept.
    let broken = rusqlite::Connection::open(&db).unwrap();
    broken
        .execute(
            "UPDATE messages SET content_json = '[{\"type\": \"te' WHERE id = 2",
            [],
        )
        .unwrap();
    drop(broken);
    let damaged = dir.path().join("damaged.db");
    let summary = ingest(&damaged, &[&dir.path().join("goose")]);
    let diagnostics = summary["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{summary}");
    assert!(
        diagnostics[0]["file"]
            .as_str()
            .unwrap()
            .ends_with("sessions.db#20260301_1")
    );
    assert_eq!(diagnostics[0]["line"], 3, "{summary}");
    assert_eq!(usage_by_model(&open(&damaged))["claude-sonnet-4-5"][0], 2);
    // Goose's `sessions.db` is found under `~/.local/share/goose/sessions`, or under
    // `$GOOSE_PATH_ROOT/data/sessions`.
    for root_var in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let (db, vars) = if root_var {
            let root = dir.path().join("root");
            (
                root.join("data/sessions/sessions.db"),
                vec![("GOOSE_PATH_ROOT", root)],
            )
        } else {
            (
                home.join(".local/share/goose/sessions/sessions.db"),
                Vec::new(),
            )
        };
        goose_traps(&db, &dir.path().join("old/sessions.db"));
        let summary = ingest_discovered(dir.path(), &home, &vars);
        assert_eq!(
            summary["sessions_ingested"]["goose-session"], 2,
            "GOOSE_PATH_ROOT {root_var}: {summary}"
        );
    }
}

/// A message row that is not JSON is reported with its session and line, the rest of the
/// session kept; a file named like OpenCode's database that is not one is reported and the
/// ingest goes on.
#[test]
fn opencode_damaged_rows_and_databases_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("opencode");
    let broken = dir.path().join("broken");
    std::fs::create_dir(&data).unwrap();
    std::fs::create_dir(&broken).unwrap();
    let conn = opencode_traps(&data.join("opencode.db"));
    conn.execute(
        "UPDATE message SET data = '{\"role\": \"assis' WHERE id = 'msg_a3'",
        [],
    )
    .unwrap();
    std::fs::write(broken.join("opencode.db"), b"not a database, only its name").unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&data, &broken]);
    let diagnostics = summary["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 2, "{summary}");
    assert!(
        diagnostics
            .iter()
            .any(|d| d["file"].as_str().unwrap().ends_with("opencode.db#ses_a") && d["line"] == 8),
        "{summary}"
    );
    assert!(
        diagnostics
            .iter()
            .any(|d| d["kind"] == "unreadable" && d["file"].as_str().unwrap().contains("broken")),
        "{summary}"
    );
    let archive = open(&db);
    let figures = usage_by_model(&archive);
    assert_eq!(figures["claude-sonnet-4-5"], [2, 1070, 230, 300, 100]);
    // The unreadable answer's text goes nowhere: not onto the answer before it.
    assert_eq!(
        roles(&archive, "opencode-session:ses_a"),
        "user assistant tool assistant"
    );
    assert_eq!(
        crate::support::scalar(
            &archive,
            "SELECT COUNT(*) FROM blocks WHERE session_id = 'opencode-session:ses_a'
             AND text LIKE 'One test fails%'",
            []
        ),
        0
    );
}

/// A Goose database the agent went on writing between two ingests (a new call and its answer in
/// the first session) gives the archive a fresh ingest of its final state gives; a message
/// whose `content_json` is damaged is reported with its session and place, and the session's
/// other messages and every call are kept.
#[test]
fn goose_changed_and_damaged_databases_keep_every_call() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("goose/sessions/sessions.db");
    goose_traps(&db, &dir.path().join("old/sessions.db"));
    let archive = dir.path().join("a.db");
    ingest(&archive, &[&dir.path().join("goose")]);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json)
           VALUES ('20260301_1', 'assistant', '[{\"type\":\"text\",\"text\":\"Done.\"}]',
                   1772355700, '{}');
         INSERT INTO usage_ledger (session_id, created_timestamp, model, input_tokens,
           output_tokens, total_tokens, cache_read_tokens, cache_write_tokens, cost_source)
           VALUES ('20260301_1', 1772355700, 'claude-sonnet-4-5', 14000, 40, 14040, 13000, 0,
                   'estimated');
         UPDATE messages SET content_json = '[{\"type\":\"te' WHERE id = 4;",
    )
    .unwrap();
    let again = ingest(&archive, &[&dir.path().join("goose")]);
    assert_eq!(again["files_changed"], 1, "{again}");
    assert_eq!(again["files_unchanged"], 1, "{again}");
    let diagnostics = again["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{again}");
    assert!(
        diagnostics[0]["file"]
            .as_str()
            .unwrap()
            .ends_with("sessions.db#20260301_1")
            && diagnostics[0]["kind"] == "bad_record"
            && diagnostics[0]["line"].as_i64().is_some(),
        "{again}"
    );
    let fresh = dir.path().join("fresh.db");
    ingest(&fresh, &[&dir.path().join("goose")]);
    let (a, b) = (open(&archive), open(&fresh));
    assert_eq!(usage_by_model(&a), usage_by_model(&b));
    // The new call: 14,000 in with 13,000 read, 40 out.
    assert_eq!(
        usage_by_model(&a)["claude-sonnet-4-5"],
        [
            3,
            2000 + 1000 + 1000,
            200 + 80 + 40,
            9000 + 12000 + 13000,
            1000
        ]
    );
    assert_eq!(
        crate::support::table_counts(&a),
        crate::support::table_counts(&b)
    );
    // The damaged answer keeps its place (its row's role and time read) without its text; the
    // new one follows.
    assert_eq!(
        roles(&a, "goose-session:20260301_1"),
        "user assistant tool assistant assistant"
    );
    let texts = "SELECT group_concat(text, ' | ') FROM (SELECT b.text FROM blocks b
                 JOIN messages m USING (message_id) WHERE b.session_id = 'goose-session:20260301_1'
                 AND b.type = 'text' ORDER BY m.position, b.position)";
    assert_eq!(
        crate::support::text(&a, texts, []),
        "Fix the flaky test | Running the tests. | Done."
    );
}

/// OpenCode's JSON files (`opencode/legacy/storage`, made by `make.py`, which says what each
/// session holds), worked out by hand: `ses_old` (0.7.5) ran three calls in one message, whose
/// own tokens are the last call's: 1,200 + 30 + 25 in, 80 + 60 + 150 out, 3,200 + 3,300 read,
/// 2,000 written; `ses_mid` (1.0.40, gpt-5) 5,000 in with its 4,000 reads inside (1,000), 800,
/// and 200 below its 3,000 reads (kept), outputs 300 + 40 + 20, the aborted call no row;
/// `ses_sub` 400 / 50 / 1,000 and `ses_bad` 70 / 7 after a message file cut short, reported
/// with its path. Beside them, files modelled on a real 1.0.114 archive (`opencode/cchistory`,
/// anonymised by their publisher): two calls of mock-planner-4.6 (1,600 / 120 / 400 read and
/// 900 / 80 / 500 read; that release's input is without the cache) and a session without
/// messages, archived and reported as empty.
#[test]
fn opencode_json_files_count_each_step_and_the_cache_once() {
    let storage = fixtures("opencode/legacy/storage");
    let modelled = fixtures("opencode/cchistory/storage");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&storage, &modelled]);
    assert_eq!(
        summary["sessions_ingested"]["opencode-session"], 6,
        "{summary}"
    );
    let reported: Vec<(&str, &str, &str)> = summary["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let file = d["file"].as_str().unwrap();
            let session = file.rsplit_once('#').map_or(file, |(_, s)| s);
            (
                session,
                d["kind"].as_str().unwrap(),
                d["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(reported.len(), 2, "{summary}");
    assert!(
        reported
            .iter()
            .any(|(s, k, r)| *s == "ses_bad" && *k == "bad_record" && r.contains("msg_bad1.json")),
        "{summary}"
    );
    assert!(
        reported
            .iter()
            .any(|(s, k, _)| *s == "ses_22222222bbbbMockOpenCode02" && *k == "empty_transcript"),
        "{summary}"
    );
    let archive = open(&db);
    let mut oracle = crate::oracle::opencode_files(&storage);
    oracle.extend(crate::oracle::opencode_files(&modelled));
    assert_usage(
        &archive,
        &[
            (
                "claude-sonnet-4-20250514",
                [3, 1200 + 30 + 25, 80 + 60 + 150, 3200 + 3300, 2000],
            ),
            ("claude-sonnet-4-5", [2, 400 + 70, 50 + 7, 1000, 0]),
            (
                "gpt-5",
                [3, 1000 + 800 + 200, 300 + 40 + 20, 4000 + 3000, 0],
            ),
            ("mock-planner-4.6", [2, 1600 + 900, 120 + 80, 400 + 500, 0]),
        ],
        oracle,
    );
    assert_eq!(
        children(&archive),
        "opencode-session:ses_sub<opencode-session:ses_mid:subagent"
    );
    // Both tool calls of the message that ran three steps, and their results.
    assert_eq!(
        roles(&archive, "opencode-session:ses_old"),
        "user assistant tool tool"
    );
    // A second ingest of the unchanged files changes nothing.
    let again = ingest(&db, &[&storage, &modelled]);
    assert_eq!(again["files_unchanged"], 6, "{again}");
    assert_eq!(again["files_changed"], 0, "{again}");
}

/// OpenCode 1.2 copied the JSON files into `opencode.db` and left them: a session in both is
/// one session, the database's (where the agent went on, here with one more answer), whichever
/// is read first; a session only in the files is read from them.
#[test]
fn opencode_json_files_and_the_database_they_went_into_are_one_session() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("opencode");
    copy_tree(&fixtures("opencode/legacy/storage"), &data.join("storage"));
    let conn = opencode_db(&data.join("opencode.db"));
    // The migration: ses_mid's files as rows, ids from the paths, out of the data.
    let files = data.join("storage");
    oc_session(&conn, "ses_mid", None, "1.0.40", 1_761_000_000_000);
    for entry in std::fs::read_dir(files.join("message/ses_mid")).unwrap() {
        let path = entry.unwrap().path();
        let id = path.file_stem().unwrap().to_str().unwrap().to_string();
        let mut data: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        data.as_object_mut()
            .unwrap()
            .retain(|k, _| k != "id" && k != "sessionID");
        oc_message(&conn, "ses_mid", &id, data, &[]);
    }
    // After the move, a call only the database holds.
    oc_message(
        &conn,
        "ses_mid",
        "msg_mid9",
        oc_assistant(1_771_000_000_000, "openai", "gpt-5", [60, 6, 0, 0, 0]),
        &[oc_text("Cached the dependencies.")],
    );
    let gpt5 = [4, 1000 + 800 + 200 + 60, 300 + 40 + 20 + 6, 4000 + 3000, 0];
    let both = dir.path().join("both.db");
    let summary = ingest(&both, &[&data]);
    assert_eq!(
        summary["sessions_ingested"]["opencode-session"], 4,
        "{summary}"
    );
    let archive = open(&both);
    assert_eq!(usage_by_model(&archive)["gpt-5"], gpt5);
    let source = "SELECT source_path FROM sessions WHERE session_id = 'opencode-session:ses_mid'";
    assert!(crate::support::text(&archive, source, []).ends_with("opencode.db#ses_mid"));
    // The files first, then the database: the database's session replaces the files' one.
    let later = dir.path().join("later.db");
    ingest(&later, &[&files]);
    ingest(&later, &[&data.join("opencode.db")]);
    let later = open(&later);
    assert_eq!(usage_by_model(&later), usage_by_model(&archive));
    assert_eq!(
        crate::support::table_counts(&later),
        crate::support::table_counts(&archive)
    );
    assert!(crate::support::text(&later, source, []).ends_with("opencode.db#ses_mid"));
    drop(conn);
}

/// A home under `dir` and the data folder agents keep their files in for `place`: `home`
/// (`~/.local/share`) or `xdg` (`$XDG_DATA_HOME`, with the variable set).
fn data_home(dir: &Path, place: &str) -> (PathBuf, PathBuf, Vec<(&'static str, PathBuf)>) {
    let home = dir.join("home");
    match place {
        "home" => (home.clone(), home.join(".local/share"), Vec::new()),
        _ => {
            let xdg = dir.join("xdg");
            (home, xdg.clone(), vec![("XDG_DATA_HOME", xdg)])
        }
    }
}

/// With no path, `quarry ingest` finds the JSON files where OpenCode and Kilo CLI kept them
/// (`~/.local/share/<agent>/storage`, `$XDG_DATA_HOME/<agent>/storage`), Kilo's as Kilo's, and
/// nothing else of the data folder (no file of the store read as a transcript of its own).
#[test]
fn opencode_and_kilo_json_files_are_found_where_they_kept_them() {
    for (agent, origin) in [("opencode", "opencode-session"), ("kilo", "kilo-session")] {
        for place in ["home", "xdg"] {
            let dir = tempfile::tempdir().unwrap();
            let (home, data, vars) = data_home(dir.path(), place);
            copy_tree(
                &fixtures("opencode/legacy/storage"),
                &data.join(agent).join("storage"),
            );
            std::fs::write(data.join(agent).join("storage/migration"), b"5").unwrap();
            let summary = ingest_discovered(dir.path(), &home, &vars);
            assert_eq!(
                summary["sessions_ingested"][origin], 4,
                "{place}: {summary}"
            );
            assert_eq!(
                summary["diagnostics"].as_array().unwrap().len(),
                1,
                "{place}: {summary}"
            );
            let archive = open(&dir.path().join("a.db"));
            let want = crate::oracle::opencode_files(&fixtures("opencode/legacy/storage"));
            let got = usage_by_model(&archive);
            if agent == "opencode" {
                assert_eq!(got, want, "{place}");
            } else {
                // Kilo's releases are numbered apart from OpenCode's: its "1.0.40" is not the
                // OpenCode release whose input held the cache reads.
                let sonnet = "claude-sonnet-4-20250514";
                assert_eq!(got[sonnet], want[sonnet], "{place}");
                assert_eq!(got["gpt-5"], [3, 5000 + 800 + 200, 360, 7000, 0], "{place}");
            }
        }
    }
}

/// Amp threads (`amp/threads`): a real export of a gpt-5.6-sol thread (12 calls; Amp writes
/// OpenAI's uncached prompt as cache creation: read as input) and a thread of the ledger era,
/// worked out by hand: two calls of claude-sonnet-4-5 (12 + 8 in, 300 + 120 out, 5,000 read,
/// 5,000 + 400 written; the second's model from its ledger event), a cancelled call (all 0: no
/// row), the ledger's events of those two adding nothing, and its event for a message the
/// thread does not hold (claude-haiku-4-5, 900 / 20) a call of its own.
#[test]
fn amp_threads_count_each_call_once_beside_their_ledger() {
    let threads = fixtures("amp/threads");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&threads]);
    assert_eq!(summary["sessions_ingested"]["amp-thread"], 2, "{summary}");
    assert_eq!(
        summary["diagnostics"].as_array().unwrap().len(),
        0,
        "{summary}"
    );
    let archive = open(&db);
    let creation: i64 = [
        16954, 1146, 225, 468, 157, 474, 155, 184, 176, 502, 183, 134,
    ]
    .iter()
    .sum();
    let output: i64 = [117, 142, 112, 119, 112, 128, 149, 139, 143, 150, 111, 115]
        .iter()
        .sum();
    let read: i64 = [
        0, 16951, 18094, 18316, 18781, 18935, 19406, 19558, 19739, 19912, 20411, 20591,
    ]
    .iter()
    .sum();
    assert_usage(
        &archive,
        &[
            ("claude-haiku-4-5", [1, 900, 20, 0, 0]),
            (
                "claude-sonnet-4-5",
                [2, 12 + 8, 300 + 120, 5000, 5000 + 400],
            ),
            ("gpt-5.6-sol", [12, creation, output, read, 0]),
        ],
        crate::oracle::amp(&threads),
    );
    let thread = "amp-thread:T-0a11ce00-0000-4000-8000-000000000001";
    assert_eq!(
        roles(&archive, thread),
        "user assistant tool assistant assistant system"
    );
    assert_eq!(
        crate::support::text(
            &archive,
            &format!("SELECT cwd FROM sessions WHERE session_id = '{thread}'"),
            []
        ),
        "/home/alice/src/login service"
    );
    // The tool's result is linked to its call by id.
    assert_eq!(
        crate::support::text(
            &archive,
            &format!(
                "SELECT r.tool_name || ': ' || r.text FROM blocks r WHERE r.session_id = '{thread}'
                 AND r.type = 'tool_result'"
            ),
            []
        ),
        "Bash: test login ... FAILED"
    );
}

/// With no path, `quarry ingest` finds Amp's threads in `~/.local/share/amp/threads` (on macOS
/// too) or `$XDG_DATA_HOME/amp/threads`; a thread cut short is reported with its file and line
/// and the others are read.
#[test]
fn amp_threads_are_found_where_amp_keeps_them_and_a_cut_one_is_reported() {
    for place in ["home", "xdg"] {
        let dir = tempfile::tempdir().unwrap();
        let (home, data, vars) = data_home(dir.path(), place);
        let threads = data.join("amp/threads");
        copy_tree(&fixtures("amp/threads"), &threads);
        let whole = std::fs::read(fixtures(
            "amp/threads/T-0a11ce00-0000-4000-8000-000000000001.json",
        ))
        .unwrap();
        let cut = threads.join("T-0a11ce00-0000-4000-8000-00000000000c.json");
        std::fs::write(&cut, &whole[..whole.len() * 2 / 3]).unwrap();
        let summary = ingest_discovered(dir.path(), &home, &vars);
        assert_eq!(
            summary["sessions_ingested"]["amp-thread"], 2,
            "{place}: {summary}"
        );
        let diagnostics = summary["diagnostics"].as_array().unwrap();
        assert_eq!(diagnostics.len(), 1, "{place}: {summary}");
        assert_eq!(diagnostics[0]["kind"], "invalid_json", "{summary}");
        assert!(
            diagnostics[0]["file"]
                .as_str()
                .unwrap()
                .ends_with("00000000000c.json")
                && diagnostics[0]["line"].as_i64().unwrap() > 1,
            "{summary}"
        );
        std::fs::remove_file(&cut).unwrap();
        let archive = open(&dir.path().join("a.db"));
        assert_eq!(
            usage_by_model(&archive),
            crate::oracle::amp(&threads),
            "{place}"
        );
    }
}

/// Cline's traps (`cline/make.py` says what its task holds), worked out by hand: claude-sonnet-4-5
/// three requests (1,000 / 200 with 3,000 written, its model from the task's model log; a
/// cancelled one, 50 / 80 with 3,000 read; one stamped with its model, 20 / 40 with 5,000 read),
/// gpt-5 through the "OpenAI Compatible" provider 5,000 in with its 4,000 reads inside (1,000),
/// and, with no model, the subagents' sum (700 / 70) and a checkpoint's removed requests (300 /
/// 30 with 100 read); the placeholder request no row. Beside it real Roo Code tasks
/// (`roo/`, RooCodeInc/Roo-Code's own fixtures): ten requests through OpenRouter's
/// anthropic/claude-sonnet-4.5 in 2025-10 (OpenAI's protocol: 535,406 in with its 447,080 reads
/// inside, 88,326 without; 4,547 out), and two of 2025-02 whose input is Anthropic's, without the
/// cache (3 + 3 in, 384 + 160 out, 16,041 + 15,791 written), before Roo named the model.
#[test]
fn cline_family_tasks_count_each_request_once() {
    let (cline, roo) = (fixtures("cline"), fixtures("roo"));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&cline, &roo]);
    assert_eq!(summary["sessions_ingested"]["cline-task"], 1, "{summary}");
    assert_eq!(
        summary["sessions_ingested"]["roo-code-task"], 3,
        "{summary}"
    );
    assert_eq!(
        summary["diagnostics"].as_array().unwrap().len(),
        0,
        "{summary}"
    );
    let archive = open(&db);
    let mut oracle = crate::oracle::cline_tasks(&cline);
    for (model, figures) in crate::oracle::cline_tasks(&roo) {
        let row = oracle.entry(model).or_default();
        for (a, b) in row.iter_mut().zip(figures) {
            *a += b;
        }
    }
    assert_usage(
        &archive,
        &[
            (
                "",
                [
                    2 + 2,
                    700 + 300 + 3 + 3,
                    70 + 30 + 384 + 160,
                    100,
                    16041 + 15791,
                ],
            ),
            (
                "anthropic/claude-sonnet-4.5",
                [10, 535406 - 447080, 4547, 447080, 0],
            ),
            (
                "claude-sonnet-4-5-20250929",
                [3, 1000 + 50 + 20, 200 + 80 + 40, 3000 + 5000, 3000],
            ),
            ("gpt-5", [1, 5000 - 4000, 100, 4000, 0]),
        ],
        oracle,
    );
    let task = "cline-task:1760000000000";
    assert_eq!(
        roles(&archive, task),
        "user assistant tool assistant tool assistant"
    );
    let number = |sql: &str| crate::support::scalar(&archive, sql, []);
    // The extension's own cost of every request and sum, beside quarry's estimate.
    assert_eq!(
        number(&format!(
            "SELECT CAST(ROUND(reported_cost_usd * 1000) AS INTEGER) FROM sessions
             WHERE session_id = '{task}'"
        )),
        20 + 5 + 10 + 3 + 1 + 16
    );
    assert_eq!(
        crate::support::text(
            &archive,
            &format!("SELECT title || ' @ ' || cwd FROM sessions WHERE session_id = '{task}'"),
            []
        ),
        "Fix the login bug @ /home/alice/src/api"
    );
    // A second ingest of the unchanged folders changes nothing.
    let again = ingest(&db, &[&cline, &roo]);
    assert_eq!(again["files_unchanged"], 4, "{again}");
}

/// A task folder whose UI messages are cut short keeps its conversation and reports the file;
/// one whose history is cut keeps its requests; neither is a panic or a lost task.
#[test]
fn cline_family_damaged_task_files_keep_the_rest() {
    let task = fixtures("cline/saoudrizwan.claude-dev/tasks/1760000000000");
    // Without its history the task holds no message, which is reported too.
    for (file, want_roles, requests, reported) in [
        (
            "ui_messages.json",
            "user assistant tool assistant tool assistant",
            0,
            1,
        ),
        ("api_conversation_history.json", "(none)", 6, 2),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir
            .path()
            .join("saoudrizwan.claude-dev/tasks/1760000000000");
        copy_tree(&task, &copy);
        let bytes = std::fs::read(copy.join(file)).unwrap();
        std::fs::write(copy.join(file), &bytes[..bytes.len() / 2]).unwrap();
        let db = dir.path().join("a.db");
        let summary = ingest(&db, &[dir.path()]);
        let diagnostics = summary["diagnostics"].as_array().unwrap();
        assert_eq!(diagnostics.len(), reported, "{file}: {summary}");
        assert!(
            diagnostics[0]["reason"].as_str().unwrap().contains(file),
            "{file}: {summary}"
        );
        let archive = open(&db);
        let messages = crate::support::scalar(&archive, "SELECT COUNT(*) FROM messages", []);
        let got = if messages == 0 {
            "(none)".to_string()
        } else {
            roles(&archive, "cline-task:1760000000000")
        };
        assert_eq!(got, want_roles, "{file}");
        assert_eq!(
            crate::support::scalar(&archive, "SELECT COUNT(*) FROM usage", []),
            requests,
            "{file}"
        );
    }
}

/// With no path, `quarry ingest` finds the task folders in each editor's storage (VS Code and
/// Cursor here, under `$XDG_CONFIG_HOME` or `~/.config`), a remote server's, and the Cline
/// CLI's (`~/.cline/data/tasks`, `$CLINE_DIR`).
#[test]
fn cline_family_tasks_are_found_in_each_editors_storage() {
    let task = fixtures("cline/saoudrizwan.claude-dev/tasks/1760000000000");
    let roo = fixtures("roo/rooveterinaryinc.roo-cline/tasks/natural-mini-uncondensed");
    for place in ["home", "xdg", "server", "cli", "variable"] {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let (config, mut vars) = match place {
            "xdg" => {
                let xdg = dir.path().join("xdg");
                (xdg.clone(), vec![("XDG_CONFIG_HOME", xdg)])
            }
            _ => (home.join(".config"), Vec::new()),
        };
        let cline_tasks = match place {
            "server" => {
                home.join(".vscode-server/data/User/globalStorage/saoudrizwan.claude-dev/tasks")
            }
            "cli" => home.join(".cline/data/tasks"),
            "variable" => {
                vars.push(("CLINE_DIR", dir.path().join("cline")));
                dir.path().join("cline/data/tasks")
            }
            _ => config.join("Code/User/globalStorage/saoudrizwan.claude-dev/tasks"),
        };
        copy_tree(&task, &cline_tasks.join("1760000000000"));
        let roo_tasks = config.join("Cursor/User/globalStorage/rooveterinaryinc.roo-cline/tasks");
        copy_tree(&roo, &roo_tasks.join("natural-mini-uncondensed"));
        std::fs::write(
            roo_tasks.join("_index.json"),
            b"{\"version\": 1, \"entries\": []}",
        )
        .unwrap();
        let summary = ingest_discovered(dir.path(), &home, &vars);
        assert_eq!(
            summary["sessions_ingested"]["cline-task"], 1,
            "{place}: {summary}"
        );
        assert_eq!(
            summary["sessions_ingested"]["roo-code-task"], 1,
            "{place}: {summary}"
        );
        assert_eq!(
            summary["diagnostics"].as_array().unwrap().len(),
            0,
            "{place}: {summary}"
        );
    }
}

/// The archive's usage by model is `want` (figures worked out by hand), and so is the
/// independent reading of the raw files.
fn assert_usage(
    conn: &rusqlite::Connection,
    want: &[(&str, [i64; 5])],
    oracle: BTreeMap<String, [i64; 5]>,
) {
    let want: BTreeMap<String, [i64; 5]> = want.iter().map(|(m, f)| (m.to_string(), *f)).collect();
    assert_eq!(usage_by_model(conn), want);
    assert_eq!(want, oracle);
}

/// The pi traps, worked out by hand from `pi-traps/`: the fork `f0000002` copies four entries
/// of `p0000001` (responses a1 and a2), adds a7 (OpenAI, `responseId`) and a shell command the
/// user ran; `p0000001` also holds a3 (an abandoned branch beside a2: billed), a4 (aborted, all
/// zero: no row), a5 (Google, input 5000 with its 4000 cache reads in it: 5000 + 60 is the whole
/// total), a8 (Google through newer pi, input 700 without its 300 cache reads: 700 + 10 + 300 is
/// the total) and a broken line; `v1bbbbbb`, a branch of the version 1 session `v1aaaaaa`,
/// copies its one response and adds one, and pi has since rewritten it as version 3 with new
/// random entry ids; `c0000003` holds a pasted image and two extension messages, one that pi
/// does not show (`display: false`), and no response.
#[test]
fn pi_forks_branches_and_aborted_requests_are_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&fixtures("pi-traps")]);
    assert_eq!(summary["sessions_ingested"]["pi-session"], 5, "{summary}");
    assert_one_diagnostic(&summary, "p0000001-aaaa.jsonl", 9);
    let conn = open(&db);
    let want: BTreeMap<String, [i64; 5]> = [
        ("claude-opus-4-5", [2, 11 + 1, 22 + 2, 33 + 3, 44 + 4]),
        (
            "claude-sonnet-4-5",
            [3, 100 + 10 + 7, 20 + 30 + 40, 1000 + 1200 + 1200, 200 + 50],
        ),
        ("gemini-2.5-flash", [1, 700, 10, 300, 0]),
        ("gemini-2.5-pro", [1, 5000 - 4000, 60, 4000, 0]),
        ("gpt-5", [1, 300, 70, 100, 0]),
    ]
    .into_iter()
    .map(|(m, f)| (m.to_string(), f))
    .collect();
    assert_eq!(usage_by_model(&conn), want);
    assert_eq!(want, crate::oracle::pi(&fixtures("pi-traps")));
    // The copied responses belong to the session that recorded them first; the fork owns a7.
    let owned = |sql: &str| crate::support::text(&conn, sql, []);
    assert_eq!(
        owned(
            "SELECT group_concat(session_id || '=' || input_tokens, ' ') FROM
             (SELECT session_id, SUM(input_tokens) AS input_tokens FROM usage
              GROUP BY session_id ORDER BY session_id)"
        ),
        "pi-session:f0000002-bbbb=300 pi-session:p0000001-aaaa=1817 \
         pi-session:v1aaaaaa=11 pi-session:v1bbbbbb=1"
    );
    assert_eq!(
        children(&conn),
        "pi-session:f0000002-bbbb<pi-session:p0000001-aaaa:fork \
         pi-session:v1bbbbbb<pi-session:v1aaaaaa:fork"
    );
    assert_eq!(
        owned("SELECT title FROM sessions WHERE session_id = 'pi-session:p0000001-aaaa'"),
        "Fix the bug"
    );
    // The tool call and its result, the reasoning OpenAI reported inside the output.
    assert_eq!(
        owned(
            "SELECT tool_name || ' ' || tool_path FROM blocks
             WHERE session_id = 'pi-session:p0000001-aaaa' AND type = 'tool_use'"
        ),
        "read src/main.rs"
    );
    let number = |sql: &str| crate::support::scalar(&conn, sql, []);
    assert_eq!(
        number("SELECT reasoning_tokens FROM usage WHERE response_key = 'pi:resp_abc'"),
        30
    );
    // The user's shell command is theirs, with its exit code; the turn of a7 stays finished.
    assert_eq!(
        owned(
            "SELECT tool_command || ' ' || exit_code FROM blocks
             WHERE session_id = 'pi-session:f0000002-bbbb' AND type = 'code'"
        ),
        "cargo test 0"
    );
    assert_eq!(
        number(
            "SELECT COUNT(*) FROM turns WHERE session_id = 'pi-session:f0000002-bbbb'
             AND committed = 0"
        ),
        0
    );
    // The image is a block; the extension message pi hides is hidden, the other is not.
    assert_eq!(
        owned(
            "SELECT group_concat(type, ' ') FROM (SELECT b.type FROM blocks b
             JOIN messages m ON m.message_id = b.message_id
             WHERE m.session_id = 'pi-session:c0000003-dddd' AND m.material_origin = 'human'
             ORDER BY b.position)"
        ),
        "text image"
    );
    assert_eq!(
        owned(
            "SELECT group_concat(hidden, ' ') FROM (SELECT hidden FROM messages
             WHERE session_id = 'pi-session:c0000003-dddd' ORDER BY position)"
        ),
        "0 1 0"
    );
    // A second ingest of the same files changes nothing.
    let again = ingest(&db, &[&fixtures("pi-traps")]);
    assert_eq!(again["files_unchanged"], 5, "{again}");
    assert_eq!(usage_by_model(&open(&db)), want);
}

/// The real pi sessions (pi-mono's own test fixtures) and the synthetic version 3 one: the
/// archive's usage by model equals the independent reading of the raw files.
#[test]
fn pi_real_sessions_equal_an_independent_reading() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&fixtures("pi")]);
    assert_eq!(summary["sessions_ingested"]["pi-session"], 3, "{summary}");
    let want = crate::oracle::pi(&fixtures("pi"));
    assert!(want.values().map(|f| f[0]).sum::<i64>() > 900, "{want:?}");
    assert_eq!(usage_by_model(&open(&db)), want);
    // The pipeline language gives the same figures.
    let answer = quarry_json(&[
        "--archive",
        db.to_str().unwrap(),
        "--format",
        "json",
        "usage where session.origin:pi-session | group by model \
         | agg count, sum:input_tokens, sum:output_tokens, sum:cache_read_tokens, sum:cache_write_tokens",
    ]);
    let got: BTreeMap<String, [i64; 5]> = answer["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let n = |i: usize| r[i].as_i64().unwrap();
            (
                r[0].as_str().unwrap().to_string(),
                [n(1), n(2), n(3), n(4), n(5)],
            )
        })
        .collect();
    assert_eq!(got, want);
}

/// A cut and a corrupted pi file keep their good records, report the bad line with the file
/// and line number, and do not fail the ingest.
#[test]
fn pi_damaged_files_keep_their_good_records() {
    let dir = tempfile::tempdir().unwrap();
    let damaged = dir.path().join("damaged");
    std::fs::create_dir(&damaged).unwrap();
    let traps = fixtures("pi-traps");
    // The parent cut inside its last line (line 11, a8; line 9 is broken already).
    let parent = std::fs::read(traps.join("2026-01-01T10-00-00-000Z_p0000001-aaaa.jsonl")).unwrap();
    let mut cut = parent[..parent.len() - 30].to_vec();
    cut.push(b'\n');
    std::fs::write(
        damaged.join("2026-01-01T10-00-00-000Z_p0000001-aaaa.jsonl"),
        cut,
    )
    .unwrap();
    // The fork as another session, with a NUL byte inside line 3 (its copy of a1).
    let fork = std::fs::read_to_string(traps.join("2026-01-01T11-00-00-000Z_f0000002-bbbb.jsonl"))
        .unwrap()
        .replacen("f0000002-bbbb", "f0000003-cccc", 1);
    let mut fork = fork.into_bytes();
    put_nul(&mut fork, 3, 20);
    std::fs::write(
        damaged.join("2026-01-01T11-00-00-000Z_f0000003-cccc.jsonl"),
        fork,
    )
    .unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&damaged]);
    let lines = diagnosed_lines(&summary, |file| {
        file[file.rfind('_').unwrap() + 1..].to_string()
    });
    assert_eq!(
        lines,
        vec![
            ("f0000003-cccc.jsonl".to_string(), 3),
            ("p0000001-aaaa.jsonl".to_string(), 9),
            ("p0000001-aaaa.jsonl".to_string(), 11),
        ],
        "{summary}"
    );
    // What survives: a1, a2, a3 and a5 in the parent (not a8); a2 (a copy) and a7 in the fork.
    let figures = usage_by_model(&open(&db));
    assert_eq!(figures["claude-sonnet-4-5"], [3, 117, 90, 3400, 250]);
    assert_eq!(figures["gemini-2.5-pro"], [1, 1000, 60, 4000, 0]);
    assert_eq!(figures["gpt-5"], [1, 300, 70, 100, 0]);
}

/// `quarry ingest` with no path finds pi's sessions where pi writes them: under
/// `~/.pi/agent/sessions/--<cwd>--/`, or under `$PI_CODING_AGENT_DIR/sessions` (a leading `~`
/// is the home folder, as pi reads it).
#[test]
fn pi_sessions_are_found_where_pi_writes_them() {
    for agent_dir in [None, Some("~/pi-elsewhere")] {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let sessions = match agent_dir {
            None => home.join(".pi/agent/sessions"),
            Some(_) => home.join("pi-elsewhere/sessions"),
        };
        let project = sessions.join("--home-dev-app--");
        std::fs::create_dir_all(&project).unwrap();
        for name in [
            "2026-01-01T10-00-00-000Z_p0000001-aaaa.jsonl",
            "2026-01-01T11-00-00-000Z_f0000002-bbbb.jsonl",
        ] {
            std::fs::copy(fixtures("pi-traps").join(name), project.join(name)).unwrap();
        }
        let vars: Vec<(&str, PathBuf)> = agent_dir
            .map(|d| ("PI_CODING_AGENT_DIR", PathBuf::from(d)))
            .into_iter()
            .collect();
        let summary = ingest_discovered(dir.path(), &home, &vars);
        assert_eq!(
            summary["sessions_ingested"]["pi-session"], 2,
            "{agent_dir:?}: {summary}"
        );
    }
}

/// Qwen Code, worked out by hand from `qwen/`: the session `3f6c…` holds three responses
/// (prompt 14,210 none cached, 186 out of a 14,396 total; prompt 14,689 with 14,080 cached,
/// 95 out; prompt 2,210, 140 out), each repeated by a `ui_telemetry` record that is not counted;
/// the fork `c0ffee…` (`/branch`) copies its first three records, the first response among them
/// (same `uuid`), and adds one of its own (prompt 3,000 with 2,900 cached, 20 out) whose tool
/// call failed; the subagent's file (`agentId` 7e1f) holds one response whose 30 thoughts are
/// beside its 50 candidates, as on Gemini's path (prompt 1,000 with 400 cached, a 1,080 total:
/// 80 out) and which names no model (Qwen Code writes none on a subagent's records), one with
/// every count 0 (no row) and a cut last line; beside it its metadata (`agent-7e1f.meta.json`),
/// which is no transcript and no problem either.
#[test]
fn qwen_code_counts_cached_prompts_forks_and_subagents_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&fixtures("qwen")]);
    assert_eq!(
        summary["sessions_ingested"]["qwen-code-session"], 3,
        "{summary}"
    );
    assert_one_diagnostic(&summary, "agent-7e1f.jsonl", 4);
    let conn = open(&db);
    assert_usage(
        &conn,
        &[
            ("", [1, 1000 - 400, 1080 - 1000, 400, 0]),
            (
                "qwen3-coder-plus",
                [
                    4,
                    14210 + (14689 - 14080) + 2210 + (3000 - 2900),
                    186 + 95 + 140 + 20,
                    14080 + 2900,
                    0,
                ],
            ),
        ],
        crate::oracle::qwen(&fixtures("qwen")),
    );
    let owned = |sql: &str| crate::support::text(&conn, sql, []);
    let main = "qwen-code-session:3f6c2a1e-8b4d-4c7a-9e21-5d0f7b9a4c13";
    let fork = "qwen-code-session:c0ffee00-1111-4222-8333-444455556666";
    // The copied response is the first session's; the fork owns only its own.
    assert_eq!(
        responses_by_session(&conn),
        format!("{main}=3 {main}/agent-7e1f=1 {fork}=1")
    );
    assert_eq!(
        children(&conn),
        format!("{main}/agent-7e1f<{main}:subagent {fork}<{main}:fork")
    );
    assert_eq!(
        owned(&format!(
            "SELECT title FROM sessions WHERE session_id = '{fork}'"
        )),
        "Fix failing npm test (Branch)"
    );
    // Thoughts are reasoning inside the output; the telemetry records are events, not messages.
    let number = |sql: &str| crate::support::scalar(&conn, sql, []);
    assert_eq!(
        number("SELECT SUM(reasoning_tokens) FROM usage WHERE model = 'qwen3-coder-plus'"),
        58 + 31
    );
    assert_eq!(
        number(&format!(
            "SELECT COUNT(*) FROM messages WHERE session_id = '{main}'"
        )),
        6
    );
    assert_eq!(
        owned(&format!(
            "SELECT group_concat(type, ' ') FROM (SELECT b.type FROM blocks b
             JOIN messages m ON m.message_id = b.message_id
             WHERE m.session_id = '{main}' AND m.role = 'assistant'
             ORDER BY m.position, b.position)"
        )),
        "thinking text tool_use thinking text text"
    );
    // The tool call, its result linked by id, and the fork's failed call.
    assert_eq!(
        owned(&format!(
            "SELECT tool_name || ' ' || tool_path FROM blocks
             WHERE session_id = '{main}' AND type = 'tool_use'"
        )),
        "read_file /home/alice/src/demo-app/package.json"
    );
    assert_eq!(
        owned(&format!(
            "SELECT tool_name || ' ' || is_error FROM blocks
             WHERE session_id = '{fork}' AND type = 'tool_result' AND is_error = 1"
        )),
        "run_shell_command 1"
    );
    // The compression's summary is a context snapshot.
    assert_eq!(
        number(&format!(
            "SELECT COUNT(*) FROM context_snapshots WHERE session_id = '{main}'
             AND boundary = 'compaction' AND text LIKE '%<overall_goal>Fix failing npm test%'"
        )),
        1
    );
    // The language knows the origin.
    let out = quarry_json(&[
        "--archive",
        db.to_str().unwrap(),
        "--format",
        "json",
        "sessions where origin:qwen-code-session | agg count",
    ]);
    assert_eq!(out["rows"][0][0], 3, "{out}");
}

/// Qwen Code's sessions are found under `~/.qwen/projects`, `$QWEN_HOME/projects`, or
/// `$QWEN_RUNTIME_DIR/projects`, which wins over `$QWEN_HOME` (the chats and the subagent
/// files both).
#[test]
fn qwen_sessions_are_found_where_qwen_code_writes_them() {
    for (home_var, runtime_var) in [(false, false), (true, false), (true, true)] {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let base = if runtime_var {
            dir.path().join("runtime")
        } else if home_var {
            dir.path().join("qwen-home")
        } else {
            home.join(".qwen")
        };
        let from = fixtures("qwen");
        copy_tree(&from, &base);
        // A decoy where QWEN_HOME points when the runtime folder wins: not read.
        if runtime_var {
            let decoy = dir.path().join("qwen-home/projects/x/chats");
            std::fs::create_dir_all(&decoy).unwrap();
            std::fs::copy(
                from.join("projects/-home-alice-src-demo-app/chats/c0ffee00-1111-4222-8333-444455556666.jsonl"),
                decoy.join("c0ffee00-1111-4222-8333-444455556666.jsonl"),
            )
            .unwrap();
        }
        let mut vars = Vec::new();
        if home_var {
            vars.push(("QWEN_HOME", dir.path().join("qwen-home")));
        }
        if runtime_var {
            vars.push(("QWEN_RUNTIME_DIR", dir.path().join("runtime")));
        }
        let summary = ingest_discovered(dir.path(), &home, &vars);
        assert_eq!(
            summary["sessions_ingested"]["qwen-code-session"], 3,
            "QWEN_HOME {home_var}, QWEN_RUNTIME_DIR {runtime_var}: {summary}"
        );
        // The three transcripts and the subagent's metadata, which is not a problem.
        assert_eq!(summary["files_seen"], 4, "{summary}");
    }
}

/// `quarry ingest` with no path, in a home of its own (`HOME`, and the Claude Code and Codex
/// folders under it) with only `vars` of the agents' variables set; its JSON summary. The
/// archive is `dir/a.db`.
fn ingest_discovered(dir: &Path, home: &Path, vars: &[(&str, PathBuf)]) -> serde_json::Value {
    let archive = dir.join("a.db");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_quarry"));
    command
        .args([
            "--archive",
            archive.to_str().unwrap(),
            "--format",
            "json",
            "ingest",
        ])
        .env_remove("QUARRY_ARCHIVE")
        .env_remove("PI_CODING_AGENT_DIR")
        .env_remove("QWEN_HOME")
        .env_remove("QWEN_RUNTIME_DIR")
        .env_remove("KIMI_SHARE_DIR")
        .env_remove("COPILOT_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("OPENCODE_DB")
        .env_remove("KILO_DB")
        .env_remove("GOOSE_PATH_ROOT")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("VSCODE_APPDATA")
        .env_remove("CLINE_DIR")
        .env_remove("CLINE_DATA_DIR")
        .env_remove("AIDER_CHAT_HISTORY_FILE")
        .env("HOME", home)
        .env("CLAUDE_CONFIG_DIR", home.join(".claude"))
        .env("CODEX_HOME", home.join(".codex"));
    for (name, value) in vars {
        command.env(name, value);
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The summary reports one diagnostic, on line `line` of the file whose name ends so.
fn assert_one_diagnostic(summary: &serde_json::Value, file: &str, line: i64) {
    let diagnostics = summary["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{summary}");
    assert!(
        diagnostics[0]["file"].as_str().unwrap().ends_with(file),
        "{summary}"
    );
    assert_eq!(diagnostics[0]["line"], line, "{summary}");
}

/// Kimi CLI, worked out by hand from `kimi/` (a session kimi-cli 1.52.0's own classes wrote):
/// three steps in the session's log (input 12,000 / output 150; 400 / 80 with 11,776 cache
/// reads; 90 / 40 with 12,288) and the subagent's step in its own log (3,000 / 60 with 2,048),
/// which the parent's log repeats inside a `SubagentEvent` and is counted once. Beside the logs:
/// `context.jsonl` (its `_usage` records are context sizes), `state.json`, the subagent's
/// `meta.json` and `kimi.json`, none a transcript and none a problem.
#[test]
fn kimi_cli_counts_each_step_once_and_a_subagents_steps_in_its_own_log() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&fixtures("kimi")]);
    assert_eq!(
        summary["sessions_ingested"]["kimi-cli-session"], 2,
        "{summary}"
    );
    assert_eq!(
        summary["diagnostics"].as_array().unwrap().len(),
        0,
        "{summary}"
    );
    assert_eq!(summary["files_seen"], 7, "{summary}");
    let conn = open(&db);
    let want: BTreeMap<String, [i64; 5]> = [(
        String::new(),
        [
            4,
            12000 + 400 + 90 + 3000,
            150 + 80 + 40 + 60,
            11776 + 12288 + 2048,
            0,
        ],
    )]
    .into_iter()
    .collect();
    assert_eq!(usage_by_model(&conn), want);
    assert_eq!(want, crate::oracle::kimi(&fixtures("kimi")));
    let owned = |sql: &str| crate::support::text(&conn, sql, []);
    let main = "kimi-cli-session:3f2b8c1e-6a4d-4e2f-9b1a-7c5d0e9f1a22";
    assert_eq!(
        responses_by_session(&conn),
        format!("{main}=3 {main}/a1b2c3d4=1")
    );
    assert_eq!(children(&conn), format!("{main}/a1b2c3d4<{main}:subagent"));
    // The turn as Kimi CLI showed it: the prompt, three steps (thinking and a shell call; the
    // agent call; the answer) and the two tool results between them.
    assert_eq!(
        roles(&conn, main),
        "user assistant tool assistant tool assistant"
    );
    assert_eq!(
        owned(&format!(
            "SELECT group_concat(type || ':' || COALESCE(tool_name, ''), ' ') FROM
             (SELECT b.type, b.tool_name FROM blocks b JOIN messages m ON m.message_id = b.message_id
              WHERE m.session_id = '{main}' AND m.role = 'assistant'
              ORDER BY m.position, b.position)"
        )),
        "thinking: tool_use:Shell tool_use:Agent text:"
    );
    assert_eq!(
        owned(&format!(
            "SELECT tool_command FROM blocks WHERE session_id = '{main}' AND type = 'tool_use'
             AND tool_name = 'Shell'"
        )),
        "ls"
    );
}

/// Kimi CLI's sessions are found under `~/.kimi/sessions` or `$KIMI_SHARE_DIR/sessions`.
#[test]
fn kimi_sessions_are_found_where_kimi_cli_writes_them() {
    assert_found_at_home_or_under_variable(
        "kimi",
        ".kimi",
        "KIMI_SHARE_DIR",
        "kimi-cli-session",
        2,
    );
}

/// `quarry ingest` with no path finds the `sessions` sessions of the agent whose fixture folder
/// is `folder` (laid out as the agent's own folder) in `~/<dot>`, and in the folder the
/// variable `var` names when it is set.
fn assert_found_at_home_or_under_variable(
    folder: &str,
    dot: &str,
    var: &str,
    origin: &str,
    sessions: i64,
) {
    for set in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let base = if set {
            dir.path().join("elsewhere")
        } else {
            home.join(dot)
        };
        copy_tree(&fixtures(folder), &base);
        let vars = if set { vec![(var, base)] } else { Vec::new() };
        let summary = ingest_discovered(dir.path(), &home, &vars);
        assert_eq!(
            summary["sessions_ingested"][origin], sessions,
            "{var} set: {set}: {summary}"
        );
    }
}

/// GitHub Copilot CLI, worked out by hand from `copilot/` (field names as the Copilot SDK's
/// session-events schema declares them). Session `1a1a1a1a` was created by 1.0.40 and resumed
/// three times. Run 1 ends in a shutdown of its own calls: claude-sonnet-4.5 12,000 input with
/// 9,000 cache reads and 1,000 writes in it, 300 output. Run 2, resumed by 1.0.60 (no
/// `sessionLimits` on its resume), ends in a shutdown of its own calls again: sonnet 5,000 with
/// 4,000 reads, 100 out; gpt-5 800, 50 out. Run 3, resumed by 1.0.70, ends in the running total:
/// sonnet as before (no calls this run: no row), gpt-5 2,800 with 1,200 reads and 200 out (this
/// run: 2,000, 1,200, 150) and its explore subagent's claude-haiku-4.5, 900 with 100 writes, 40
/// out. Run 4 was killed: no shutdown, no usage. Session `2b2b2b2b` (1.0.102) writes running
/// totals from its first resume: claude-opus-4.5 30,000 with 20,000 reads and 6,000 writes, 900
/// out; then 40,000, 29,000, 6,500, 1,000. `3c3c3c3c.jsonl`, in the legacy place, is from a
/// release that wrote no shutdown. Another machine's copy of the first log, synced after run 2,
/// adds nothing.
#[test]
fn copilot_cli_counts_each_run_once_whichever_release_wrote_it() {
    let dir = tempfile::tempdir().unwrap();
    let from = fixtures("copilot");
    // The laptop's copy, synced after run 2: the first 19 lines.
    let copy = dir
        .path()
        .join("laptop/session-state/1a1a1a1a-0000-4000-8000-000000000001");
    std::fs::create_dir_all(&copy).unwrap();
    let log = std::fs::read_to_string(
        from.join("session-state/1a1a1a1a-0000-4000-8000-000000000001/events.jsonl"),
    )
    .unwrap();
    let synced: String = log.split_inclusive('\n').take(19).collect();
    assert!(synced.lines().last().unwrap().contains("session.shutdown"));
    std::fs::write(copy.join("events.jsonl"), synced).unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&from, &dir.path().join("laptop")]);
    // The three logs and the subagent's session inside the first; the copy is an earlier state
    // of the first log, not a session of its own.
    assert_eq!(
        summary["sessions_ingested"]["copilot-cli-session"], 4,
        "{summary}"
    );
    assert_eq!(summary["files_seen"], 4, "{summary}");
    assert_eq!(
        summary["diagnostics"].as_array().unwrap().len(),
        0,
        "{summary}"
    );
    let conn = open(&db);
    assert_usage(
        &conn,
        &[
            (
                "claude-sonnet-4.5",
                [
                    2,
                    (12000 - 9000 - 1000) + (5000 - 4000),
                    300 + 100,
                    9000 + 4000,
                    1000,
                ],
            ),
            ("gpt-5", [2, 800 + (2000 - 1200), 50 + 150, 1200, 0]),
            ("claude-haiku-4.5", [1, 900 - 100, 40, 0, 100]),
            (
                "claude-opus-4.5",
                [
                    2,
                    (30000 - 20000 - 6000) + (10000 - 9000 - 500),
                    900 + 100,
                    20000 + 9000,
                    6000 + 500,
                ],
            ),
        ],
        crate::oracle::copilot(&fixtures("copilot")),
    );
    let p = "copilot-cli-session:1a1a1a1a-0000-4000-8000-000000000001";
    let n = "copilot-cli-session:2b2b2b2b-0000-4000-8000-000000000002";
    assert_eq!(responses_by_session(&conn), format!("{p}=5 {n}=2"));
    assert_eq!(
        children(&conn),
        format!("{p}/agent-call_task1<{p}:subagent")
    );
    let owned = |sql: &str| crate::support::text(&conn, sql, []);
    // The subagent's two steps and its grep's result are its own, not the parent's.
    assert_eq!(
        roles(&conn, &format!("{p}/agent-call_task1")),
        "assistant tool assistant"
    );
    assert_eq!(
        owned(&format!(
            "SELECT r.agent || ' ' || s.cwd FROM runs r JOIN sessions s USING (session_id)
             WHERE session_id = '{p}/agent-call_task1'"
        )),
        "explore /home/alice/src/api"
    );
    // The parent's turns: 4 prompts, 7 answers or calls, 4 tool results; reasoning shown
    // before its message (run 1) and inside it (run 2) both kept as thinking.
    assert_eq!(
        owned(&format!(
            "SELECT group_concat(role || ':' || n, ' ') FROM (SELECT role, COUNT(*) AS n
             FROM messages WHERE session_id = '{p}' GROUP BY role ORDER BY role)"
        )),
        "assistant:7 tool:4 user:4"
    );
    assert_eq!(
        owned(&format!(
            "SELECT group_concat(text, ' | ') FROM (SELECT b.text FROM blocks b
             JOIN messages m USING (message_id)
             WHERE b.session_id = '{p}' AND b.type = 'thinking' ORDER BY m.position)"
        )),
        "I should look at the handler first. | Edit line 43, then run pytest."
    );
    assert_eq!(
        owned(&format!(
            "SELECT group_concat(tool_name || '=' || COALESCE(is_error, ''), ' ') FROM
             (SELECT b.tool_name, b.is_error FROM blocks b JOIN messages m USING (message_id)
              WHERE b.session_id = '{p}' AND b.type = 'tool_result' ORDER BY m.position)"
        )),
        "bash=0 edit=0 bash=1 task=0"
    );
    assert_eq!(
        owned(&format!(
            "SELECT git_branch || ' ' || repo FROM sessions WHERE session_id = '{p}'"
        )),
        "main api"
    );
    assert_eq!(
        crate::support::scalar(
            &conn,
            "SELECT COUNT(*) FROM messages WHERE session_id LIKE '%3c3c3c3c%'",
            []
        ),
        4
    );
}

/// Copilot CLI's logs are found under `~/.copilot/session-state` or
/// `$COPILOT_HOME/session-state`, the folders of its sessions and the legacy files beside them.
#[test]
fn copilot_sessions_are_found_where_copilot_cli_writes_them() {
    assert_found_at_home_or_under_variable(
        "copilot",
        ".copilot",
        "COPILOT_HOME",
        "copilot-cli-session",
        4,
    );
}

/// A cut and a corrupted Copilot CLI log keep their good events, report the bad line with the
/// file and line number, and do not fail the ingest: the cut takes the last shutdown's usage with
/// it, the corrupted line (a user message) takes nothing else.
#[test]
fn copilot_damaged_logs_keep_their_good_records() {
    let dir = tempfile::tempdir().unwrap();
    let from = fixtures("copilot").join("session-state");
    let p = "1a1a1a1a-0000-4000-8000-000000000001";
    let n = "2b2b2b2b-0000-4000-8000-000000000002";
    for id in [p, n] {
        std::fs::create_dir_all(dir.path().join(id)).unwrap();
    }
    // The second log cut inside its last line (13: the second shutdown).
    let log = std::fs::read(from.join(n).join("events.jsonl")).unwrap();
    std::fs::write(
        dir.path().join(n).join("events.jsonl"),
        &log[..log.len() - 40],
    )
    .unwrap();
    // The first with a NUL byte inside line 3 (the first prompt).
    let mut log = std::fs::read(from.join(p).join("events.jsonl")).unwrap();
    put_nul(&mut log, 3, 30);
    std::fs::write(dir.path().join(p).join("events.jsonl"), log).unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[dir.path()]);
    let lines = diagnosed_lines(&summary, |file| {
        file.rsplit('/').nth(1).unwrap()[..8].to_string()
    });
    assert_eq!(
        lines,
        vec![("1a1a1a1a".to_string(), 3), ("2b2b2b2b".to_string(), 13)],
        "{summary}"
    );
    let conn = open(&db);
    let figures = usage_by_model(&conn);
    assert_eq!(figures["claude-opus-4.5"], [1, 4000, 900, 20000, 6000]);
    assert_eq!(figures["gpt-5"], [2, 1600, 200, 1200, 0]);
    assert_eq!(
        crate::support::scalar(
            &conn,
            &format!(
                "SELECT COUNT(*) FROM messages WHERE session_id = 'copilot-cli-session:{p}'
                 AND role = 'user'"
            ),
            []
        ),
        3
    );
}

/// Copies the folder `from` (files and subfolders) to `to`.
fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let dest = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// Each session with a parent, as `child<parent:branch_type`, in session id order.
fn children(conn: &rusqlite::Connection) -> String {
    crate::support::text(
        conn,
        "SELECT group_concat(session_id || '<' || parent_session_id || ':' || branch_type, ' ')
         FROM (SELECT * FROM sessions WHERE parent_session_id IS NOT NULL ORDER BY session_id)",
        [],
    )
}

/// The summary's diagnostics as `(name, line)`, sorted, each file named by `name_of`.
fn diagnosed_lines(
    summary: &serde_json::Value,
    name_of: impl Fn(&str) -> String,
) -> Vec<(String, i64)> {
    let mut lines: Vec<(String, i64)> = summary["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                name_of(d["file"].as_str().unwrap()),
                d["line"].as_i64().unwrap(),
            )
        })
        .collect();
    lines.sort();
    lines
}

/// Puts a NUL byte `offset` bytes into line `line` (1-based, line 2 or later) of a file's bytes.
fn put_nul(bytes: &mut [u8], line: usize, offset: usize) {
    let start = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(line - 2)
        .unwrap()
        .0;
    bytes[start + offset] = 0;
}

/// The roles of a session's messages in order, space-separated.
fn roles(conn: &rusqlite::Connection, session: &str) -> String {
    crate::support::text(
        conn,
        "SELECT group_concat(role, ' ') FROM (SELECT role FROM messages
         WHERE session_id = ?1 ORDER BY position)",
        [session],
    )
}

/// The responses each session owns, as `session=count`, in session id order.
fn responses_by_session(conn: &rusqlite::Connection) -> String {
    crate::support::text(
        conn,
        "SELECT group_concat(session_id || '=' || n, ' ') FROM
         (SELECT session_id, COUNT(*) AS n FROM usage GROUP BY session_id ORDER BY session_id)",
        [],
    )
}

/// Aider's chat histories: the real ones (`aider/aider-ai`, Aider's own history of 2024-08
/// with every report form: `5,244 sent … $0.02 request`, `1,278 cached`, cache write and hit
/// with `Cost:` on the next line, ten `/undo`s; `aider/mozgoslav`, a local model with no cost
/// and `<thinking-content-…>` replies) equal the independent reading of the raw lines; every
/// report is one `approximate` row, which the sessions' sums and the report leave out.
#[test]
fn aider_reports_are_approximate_usage_read_as_printed() {
    let real = fixtures("aider");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&real.join("aider-ai"), &real.join("mozgoslav")]);
    let (oracle, runs, inputs) = crate::oracle::aider(&real.join("aider-ai"));
    let (more, more_runs, more_inputs) = crate::oracle::aider(&real.join("mozgoslav"));
    assert_eq!(
        summary["sessions_ingested"]["aider-chat"],
        runs + more_runs,
        "{summary}"
    );
    assert_eq!(
        summary["diagnostics"].as_array().unwrap().len(),
        0,
        "{summary}"
    );
    let mut oracle = oracle;
    oracle.extend(more);
    let archive = open(&db);
    assert_eq!(usage_by_model(&archive), oracle);
    let number = |sql: &str| crate::support::scalar(&archive, sql, []);
    assert_eq!(
        number("SELECT COUNT(*) FROM messages WHERE role = 'user'"),
        (inputs + more_inputs) as i64
    );
    assert_eq!(
        number("SELECT COUNT(*) FROM usage WHERE recorded_via <> 'approximate'"),
        0
    );
    // The replies, counted by reading the files: Aider's own history has 14 (12 before a report,
    // one cut by an `Overloaded` error, one before a `/clear`), mozgoslav's 7; not the lines of a
    // `/test` output after a blank one, nor `Costs do not reflect caching` after a report.
    assert_eq!(
        crate::support::text(
            &archive,
            "SELECT group_concat(n, ' ') FROM (SELECT COUNT(*) AS n FROM messages m
             JOIN sessions s USING (session_id) WHERE m.role = 'assistant'
             GROUP BY s.cwd ORDER BY s.cwd)",
            []
        ),
        "14 7"
    );
    // Exact totals leave the rounded counts out.
    assert_eq!(
        number("SELECT SUM(input_tokens + output_tokens) FROM sessions"),
        0
    );
}

/// The traps of Aider's history, worked out by hand from `aider/traps` (hand-made in Aider
/// 0.86's shapes): an architect run (the DeepSeek reasoner's report, then its reply handed to
/// the editor as a `####` line: injected, and the next report the editor model's), a `/undo`
/// (the undone edit's request still counted), `/model` switching mid-run, a reply holding a
/// `####` heading and a `>` quotation (Aider's own lines end in two spaces), `Cost:` on the
/// line after a report with both cache counts, a run cut by Ctrl-C, two runs started in the
/// same second, and a local model with no cost.
#[test]
fn aider_history_traps_counted_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&fixtures("aider/traps")]);
    assert_eq!(summary["sessions_ingested"]["aider-chat"], 3, "{summary}");
    let archive = open(&db);
    let want: BTreeMap<String, [i64; 5]> = [
        // 2.1k sent with DeepSeek's 1.5k hits inside.
        ("deepseek/deepseek-reasoner", [1, 2100 - 1500, 456, 1500, 0]),
        ("deepseek/deepseek-chat", [1, 3400, 210, 0, 0]),
        // 12,963 sent with the 11,191 writes Aider adds.
        ("claude-sonnet-4-5", [1, 12963 - 11191, 105, 1270, 11191]),
        ("lm_studio/qwen3", [1, 1800, 653, 0, 0]),
    ]
    .into_iter()
    .map(|(m, f)| (m.to_string(), f))
    .collect();
    assert_eq!(usage_by_model(&archive), want);
    let sessions: Vec<String> = {
        let mut stmt = archive
            .prepare("SELECT session_id FROM sessions ORDER BY created_at, session_id")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert_eq!(sessions.len(), 3);
    assert!(
        sessions[2].ends_with(":2026-03-02T11:30:00#2"),
        "{sessions:?}"
    );
    assert_eq!(
        roles(&archive, &sessions[0]),
        "system user assistant user assistant system user system user system user assistant"
    );
    assert_eq!(roles(&archive, &sessions[1]), "system user system");
    let number = |sql: &str| crate::support::scalar(&archive, sql, []);
    // Typed: the two-line request and "Try again"; not the hand-off, `/undo`, `/model`.
    assert_eq!(
        number(&format!(
            "SELECT authored_user_messages FROM sessions WHERE session_id = '{}'",
            sessions[0]
        )),
        2
    );
    assert_eq!(
        crate::support::text(
            &archive,
            "SELECT text FROM messages WHERE session_id = ?1 AND role = 'assistant'
             ORDER BY position DESC LIMIT 1",
            [&sessions[0]]
        ),
        "Here is the smaller change.\n\n#### A heading of the reply\n\n> a quotation in the reply\n\nDone."
    );
    assert_eq!(
        number(&format!(
            "SELECT COUNT(*) FROM blocks WHERE session_id = '{}' AND type = 'thinking'",
            sessions[0]
        )),
        1
    );
    // The messages' own costs (never the running session figure), beside quarry's estimate.
    assert_eq!(
        number(&format!(
            "SELECT CAST(ROUND(reported_cost_usd * 10000) AS INTEGER) FROM sessions
             WHERE session_id = '{}'",
            sessions[0]
        )),
        31 + 12 + 500
    );
    assert_eq!(
        number("SELECT COUNT(*) FROM sessions WHERE reported_cost_usd IS NULL"),
        2
    );
    // The run's start, read in the local zone (Aider writes no zone).
    let start =
        chrono::NaiveDateTime::parse_from_str("2026-03-02 10:00:00", "%Y-%m-%d %H:%M:%S").unwrap();
    let local = chrono::TimeZone::from_local_datetime(&chrono::Local, &start)
        .earliest()
        .unwrap()
        .timestamp_millis();
    assert_eq!(
        number(&format!(
            "SELECT created_at FROM sessions WHERE session_id = '{}'",
            sessions[0]
        )),
        local
    );
    // Approximate counts have no exact cost: a session holding them has none (NULL, not 0);
    // the run cut by Ctrl-C billed nothing (0).
    let costs = quarry_json(&[
        "--archive",
        db.to_str().unwrap(),
        "--format",
        "json",
        "sessions | sort by session_id | select session_id, cost_usd",
    ]);
    let cost_of: Vec<serde_json::Value> = costs["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[1].clone())
        .collect();
    assert_eq!(
        cost_of,
        [
            serde_json::Value::Null,
            serde_json::json!(0.0),
            serde_json::Value::Null
        ],
        "{costs}"
    );
    // The report counts the approximate usage only when asked.
    let report = |extra: &[&str]| {
        let mut args = vec![
            "--archive",
            db.to_str().unwrap(),
            "--format",
            "json",
            "report",
            "monthly",
            "--no-refresh",
        ];
        args.extend(extra);
        quarry_json(&args)
    };
    let exact = report(&[]);
    let asked = report(&["--approximate"]);
    assert_eq!(exact["totals"]["responses"], 0, "{exact}");
    assert_eq!(exact["approximate_left_out"], 4, "{exact}");
    assert_eq!(asked["totals"]["responses"], 4, "{asked}");
    assert_eq!(
        asked["totals"]["input_tokens"],
        600 + 3400 + 1772 + 1800,
        "{asked}"
    );
}

/// With no path, `quarry ingest` finds Aider's histories in the repositories of the home folder
/// (four folders deep, not in hidden or dependency folders) and the one
/// `$AIDER_CHAT_HISTORY_FILE` names, under any name.
#[test]
fn aider_histories_are_found_in_the_home_folders_repositories() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let history = fixtures("aider/traps/.aider.chat.history.md");
    let place = |rel: &str| {
        let to = home.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&history, &to).unwrap();
    };
    place("src/work/api/.aider.chat.history.md");
    place("notes/.aider.chat.history.md");
    // Not searched: hidden folders, dependencies, deeper than four folders.
    place(".cache/x/.aider.chat.history.md");
    place("src/web/node_modules/pkg/.aider.chat.history.md");
    place("a/b/c/d/e/.aider.chat.history.md");
    let named = dir.path().join("elsewhere/chat-log.md");
    std::fs::create_dir_all(named.parent().unwrap()).unwrap();
    std::fs::copy(&history, &named).unwrap();
    let summary = ingest_discovered(
        dir.path(),
        &home,
        &[("AIDER_CHAT_HISTORY_FILE", named.clone())],
    );
    // Three runs in each of the three files found.
    assert_eq!(summary["sessions_ingested"]["aider-chat"], 9, "{summary}");
    let archive = open(&dir.path().join("a.db"));
    let cwds = crate::support::text(
        &archive,
        "SELECT group_concat(cwd, ' ') FROM (SELECT DISTINCT cwd FROM sessions ORDER BY cwd)",
        [],
    );
    let want: Vec<String> = [
        dir.path().join("elsewhere"),
        home.join("notes"),
        home.join("src/work/api"),
    ]
    .iter()
    .map(|p| p.canonicalize().unwrap().display().to_string())
    .collect();
    assert_eq!(cwds, want.join(" "));
}

/// Cursor's stores (`cursor/`): a real workspace store of 2024-11 (slevin48/cursor-history,
/// MIT: five chat tabs and 26 composers holding their conversations, no counts) and a global
/// store made by `cursor/make.py` with the traps it lists. Figures by hand: the requests of
/// composer c1 (12,000 in and 800 out; 5,000 and 300 under Auto, the composer's
/// claude-4.5-sonnet) counted once though its duplicate c2 copies them; c5's 1,500 and 100 by
/// gpt-5 keyed by the bubble; the placeholders, the orphan's 999 and the missing bubble
/// nothing. Messages and usage equal the independent reading of the stores.
#[test]
fn cursor_conversations_of_every_generation_counted_once() {
    let root = fixtures("cursor");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&root]);
    assert_eq!(
        summary["sessions_ingested"]["cursor-chat"],
        // The global store's six (the empty c6 none; one moved from the workspace store, whose
        // 26 composers leave 25), five tabs, two agent transcripts (the third is c1's
        // conversation again, the store's kept).
        6 + 25 + 5 + 2,
        "{summary}"
    );
    assert_eq!(
        summary["diagnostics"].as_array().unwrap().len(),
        0,
        "{summary}"
    );
    let archive = open(&db);
    let (oracle, users, assistants) = crate::oracle::cursor(&root);
    assert_usage(
        &archive,
        &[
            ("claude-4.5-sonnet", [2, 12000 + 5000, 800 + 300, 0, 0]),
            ("gpt-5", [1, 1500, 100, 0, 0]),
        ],
        oracle,
    );
    let number = |sql: &str| crate::support::scalar(&archive, sql, []);
    assert_eq!(
        number("SELECT COUNT(*) FROM messages WHERE role = 'user'"),
        users
    );
    assert_eq!(
        number("SELECT COUNT(*) FROM messages WHERE role = 'assistant'"),
        assistants
    );
    assert_eq!(
        roles(&archive, "cursor-chat:c1"),
        "user assistant assistant tool assistant user assistant"
    );
    // The duplicate owns nothing; the original's responses were recorded twice.
    assert_eq!(
        responses_by_session(&archive),
        "cursor-chat:c1=2 cursor-chat:c5=1"
    );
    assert_eq!(
        number("SELECT MAX(record_count) FROM usage WHERE session_id = 'cursor-chat:c1'"),
        2
    );
    let transcript = "cursor-chat:a1b2c3d4-0000-4000-8000-000000000001";
    assert_eq!(
        roles(&archive, transcript),
        "user assistant assistant user assistant"
    );
    assert_eq!(
        crate::support::text(
            &archive,
            "SELECT text FROM messages WHERE session_id = ?1 ORDER BY position LIMIT 1",
            [transcript]
        ),
        "Why does the build fail on CI?"
    );
    assert_eq!(
        crate::support::text(
            &archive,
            "SELECT parent_session_id FROM sessions
             WHERE session_id = 'cursor-chat:b2c3d4e5-0000-4000-8000-000000000002'",
            []
        ),
        transcript
    );
    // A workspace composer Cursor moved into the global store is one session, the global one's.
    assert_eq!(
        crate::support::text(
            &archive,
            "SELECT title FROM sessions
             WHERE session_id = 'cursor-chat:090e988a-b2e3-4fcc-84e0-62a9401ae6ea'",
            []
        ),
        "Sidebar elements (moved)"
    );
    // Auto names no model; the draft in the input box is no message.
    assert_eq!(
        crate::support::text(
            &archive,
            "SELECT COALESCE(model, '(none)') || ' ' || message_count FROM sessions
             WHERE session_id = 'cursor-chat:c3'",
            []
        ),
        "(none) 2"
    );
    assert_eq!(
        crate::support::text(
            &archive,
            "SELECT cwd FROM sessions WHERE session_id =
             'cursor-chat:2aa483d1-573c-4039-ae4e-7415e28d2605'",
            []
        ),
        "c:/Users/ydebray/Documents/mobilechat"
    );
    // Cursor's credentials, beside the conversations in the global store, are never read.
    drop(archive);
    let bytes = std::fs::read(&db).unwrap();
    for secret in ["SECRET-TOKEN-never-archived", "alice@example.com"] {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret} reached the archive"
        );
    }
}

/// With no path, `quarry ingest` finds Cursor's global and workspace stores in its user folder
/// and its agent's transcripts in `~/.cursor/projects`;
/// a bubble Cursor wrote broken costs that bubble only, and a store cut short is reported
/// while the other stores are read.
#[test]
fn cursor_stores_are_found_in_the_user_folder_and_damage_costs_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let user = home.join(".config/Cursor/User");
    copy_tree(&fixtures("cursor/User"), &user);
    copy_tree(&fixtures("cursor/projects"), &home.join(".cursor/projects"));
    let global = user.join("globalStorage/state.vscdb");
    rusqlite::Connection::open(&global)
        .unwrap()
        .execute(
            "UPDATE cursorDiskKV SET value = '{\"type\": 2, \"text\": \"cut' WHERE key = 'bubbleId:c5:a1'",
            [],
        )
        .unwrap();
    let summary = ingest_discovered(dir.path(), &home, &[]);
    assert_eq!(summary["sessions_ingested"]["cursor-chat"], 38, "{summary}");
    let diagnostics = summary["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{summary}");
    assert_eq!(diagnostics[0]["kind"], "bad_record", "{summary}");
    let archive = open(&dir.path().join("a.db"));
    // c5's one request was on the broken bubble; c1's are all there.
    assert_eq!(responses_by_session(&archive), "cursor-chat:c1=2");
    drop(archive);
    // A workspace store cut in half: reported, the global store still read.
    let workspace = user.join("workspaceStorage/f87f6e0b2cf1ae8645cc0c5ffaa99529/state.vscdb");
    let whole = std::fs::read(&workspace).unwrap();
    std::fs::write(&workspace, &whole[..whole.len() / 2]).unwrap();
    let again = tempfile::tempdir().unwrap();
    let summary = ingest_discovered(again.path(), &home, &[]);
    // The global store's six and the two transcripts (c1's copy stays the store's).
    assert_eq!(summary["sessions_ingested"]["cursor-chat"], 8, "{summary}");
    assert!(
        summary["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["file"].as_str().unwrap().ends_with("state.vscdb")),
        "{summary}"
    );
}

/// Crush's project databases (`crush/`): real ones of 2025-08 (Exa-Networks/exabgp, BSD-3:
/// one o4-mini session Crush costed at $0.404; rnwolf/dbr, MIT: a session and its agent tool's
/// sub-session, two OpenRouter models, their first 60 and 6 messages). Crush keeps no counts
/// per request (its sessions' token columns are the last step's context): sessions and
/// messages with no usage row, the cost Crush reports on the top-level session only. Message
/// counts equal a plain SQL count of the databases.
#[test]
fn crush_sessions_have_messages_and_crushs_cost_but_no_invented_usage() {
    let root = fixtures("crush");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&root]);
    assert_eq!(
        summary["sessions_ingested"]["crush-session"], 3,
        "{summary}"
    );
    assert_eq!(
        summary["diagnostics"].as_array().unwrap().len(),
        0,
        "{summary}"
    );
    let archive = open(&db);
    let number = |sql: &str| crate::support::scalar(&archive, sql, []);
    // The oracle: the databases' rows by role, read with SQL alone.
    let mut by_role: BTreeMap<String, i64> = BTreeMap::new();
    for project in ["exabgp", "dbr"] {
        let conn = rusqlite::Connection::open(root.join(project).join(".crush/crush.db")).unwrap();
        let mut stmt = conn
            .prepare("SELECT role, COUNT(*) FROM messages GROUP BY role")
            .unwrap();
        for row in stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .unwrap()
        {
            let (role, n) = row.unwrap();
            *by_role.entry(role).or_default() += n;
        }
    }
    let mut stmt = archive
        .prepare("SELECT role, COUNT(*) FROM messages GROUP BY role")
        .unwrap();
    let archived: BTreeMap<String, i64> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(archived, by_role);
    assert_eq!(number("SELECT COUNT(*) FROM usage"), 0);
    assert_eq!(
        crate::support::text(
            &archive,
            "SELECT group_concat(session_id || '=' || COALESCE(reported_cost_usd, 'none') || '@'
                                 || COALESCE(parent_session_id, '-'), ' ')
             FROM (SELECT * FROM sessions ORDER BY created_at)",
            []
        ),
        "crush-session:9da7d0cd-971b-4040-bb2b-c9e19a088dfb=0.0@- \
         crush-session:call_15c3877e300e486883f29b84=none@crush-session:9da7d0cd-971b-4040-bb2b-c9e19a088dfb \
         crush-session:4f04805a-caf7-4a47-b98f-b50e16556fa2=0.4040267@-"
    );
    assert!(
        crate::support::text(
            &archive,
            "SELECT cwd FROM sessions WHERE session_id LIKE '%4f04805a%'",
            []
        )
        .ends_with("crush/exabgp"),
    );
    assert_eq!(
        crate::support::text(
            &archive,
            "SELECT group_concat(model, ' ') FROM (SELECT DISTINCT model FROM messages
             WHERE session_id LIKE 'crush-session:9da7%' AND model IS NOT NULL ORDER BY model)",
            []
        ),
        "openrouter/horizon-alpha qwen/qwen3-coder:free"
    );
}

/// Crush's traps, in a database written with Crush's schema: the parent's cost includes its
/// sub-session's (reported once, on the parent), times in seconds, a summary message, an
/// unknown part type (skipped, the rest of the message read), a message whose parts are not
/// JSON (reported, the others read); found through Crush's `projects.json` with no path given.
#[test]
fn crush_traps_and_the_projects_list() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("work/api");
    std::fs::create_dir_all(project.join(".crush")).unwrap();
    let conn = rusqlite::Connection::open(project.join(".crush/crush.db")).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL,
           message_count INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER NOT NULL DEFAULT 0,
           completion_tokens INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0.0,
           updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL, summary_message_id TEXT);
         CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
           parts TEXT NOT NULL DEFAULT '[]', model TEXT, created_at INTEGER NOT NULL,
           updated_at INTEGER NOT NULL, finished_at INTEGER, provider TEXT,
           is_summary_message INTEGER DEFAULT 0 NOT NULL);
         INSERT INTO sessions VALUES ('s1', NULL, 'Fix auth', 5, 40000, 900, 0.30, 1767000600, 1767000000, 'm4');
         INSERT INTO sessions VALUES ('call_1', 's1', 'Search', 2, 9000, 50, 0.10, 1767000300, 1767000100, NULL);
         INSERT INTO messages VALUES ('m1', 's1', 'user', '[{\"type\":\"text\",\"data\":{\"text\":\"Fix the auth bug\"}}]', NULL, 1767000000, 1767000000, NULL, NULL, 0);
         INSERT INTO messages VALUES ('m2', 's1', 'assistant', '[{\"type\":\"reasoning\",\"data\":{\"thinking\":\"look\"}},{\"type\":\"hologram\",\"data\":{}},{\"type\":\"tool_call\",\"data\":{\"id\":\"call_1\",\"name\":\"agent\",\"input\":\"{\\\"prompt\\\":\\\"find it\\\"}\"}},{\"type\":\"finish\",\"data\":{\"reason\":\"tool_use\",\"time\":1767000050}}]', 'claude-sonnet-4-5', 1767000050, 1767000050, 1767000050, 'anthropic', 0);
         INSERT INTO messages VALUES ('m3', 's1', 'tool', '[{\"type\":\"tool_result\",\"data\":{\"tool_call_id\":\"call_1\",\"name\":\"agent\",\"content\":\"found it\",\"is_error\":false}}]', NULL, 1767000300, 1767000300, NULL, NULL, 0);
         INSERT INTO messages VALUES ('m4', 's1', 'assistant', '[{\"type\":\"text\",\"data\":{\"text\":\"Summary: fixed\"}}]', 'claude-sonnet-4-5', 1767000400, 1767000400, 1767000400, 'anthropic', 1);
         INSERT INTO messages VALUES ('m5', 's1', 'user', 'not json', NULL, 1767000500, 1767000500, NULL, NULL, 0);
         INSERT INTO messages VALUES ('c1', 'call_1', 'user', '[{\"type\":\"text\",\"data\":{\"text\":\"find it\"}}]', NULL, 1767000100, 1767000100, NULL, NULL, 0);
         INSERT INTO messages VALUES ('c2', 'call_1', 'assistant', '[{\"type\":\"text\",\"data\":{\"text\":\"found it\"}}]', 'claude-haiku-4-5', 1767000200, 1767000200, 1767000200, 'anthropic', 0);",
    )
    .unwrap();
    let global = home.join(".local/share/crush");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(
        global.join("projects.json"),
        serde_json::json!({"projects": [
            {"path": project, "data_dir": ".crush", "last_accessed": "2026-01-01T00:00:00Z"},
            {"path": dir.path().join("gone"), "data_dir": ".crush"}
        ]})
        .to_string(),
    )
    .unwrap();
    let summary = ingest_discovered(dir.path(), &home, &[]);
    drop(conn);
    assert_eq!(
        summary["sessions_ingested"]["crush-session"], 2,
        "{summary}"
    );
    let diagnostics = summary["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{summary}");
    assert!(
        diagnostics[0]["reason"]
            .as_str()
            .unwrap()
            .contains("not a JSON list"),
        "{summary}"
    );
    let archive = open(&dir.path().join("a.db"));
    assert_eq!(
        roles(&archive, "crush-session:s1"),
        "user assistant tool assistant"
    );
    let number = |sql: &str| crate::support::scalar(&archive, sql, []);
    // $0.30 in all: the sub-session's $0.10 is inside the parent's.
    assert_eq!(
        number("SELECT CAST(ROUND(SUM(reported_cost_usd) * 100) AS INTEGER) FROM sessions"),
        30
    );
    assert_eq!(
        number("SELECT created_at FROM sessions WHERE session_id = 'crush-session:s1'"),
        1_767_000_000_000
    );
    assert_eq!(
        number(
            "SELECT COUNT(*) FROM blocks WHERE session_id = 'crush-session:s1'
             AND type IN ('thinking', 'tool_use')"
        ),
        2
    );
    assert_eq!(number("SELECT COUNT(*) FROM usage"), 0);
    assert_eq!(
        crate::support::text(
            &archive,
            "SELECT parent_session_id FROM sessions WHERE session_id = 'crush-session:call_1'",
            []
        ),
        "crush-session:s1"
    );
}

/// Cline 4's SDK sessions (`cline-sdk/sessions`): a real CLI session of 2026-07 (cline/cline's
/// own fixture, Apache-2.0: a fork whose 16 responses are copies of its parent's), its parent
/// and a subagent made by `cline-sdk/make.py`, and cline/cline's `success.messages.json`. Each
/// response once, owned by the parent (the fork adds none and reports no cost for its copies);
/// the subagent's 5,000 in with 4,000 cache reads and 500 writes inside is 500 uncached; the
/// success fixture's 21 with 3 reads and 1 write is 17.
#[test]
fn cline_sdk_sessions_count_each_response_once() {
    let root = fixtures("cline-sdk");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let summary = ingest(&db, &[&root]);
    assert_eq!(
        summary["sessions_ingested"]["cline-session"], 4,
        "{summary}"
    );
    assert_eq!(
        summary["diagnostics"].as_array().unwrap().len(),
        0,
        "{summary}"
    );
    let archive = open(&db);
    let mut usage = usage_by_model(&archive);
    let oracle = crate::oracle::cline_sdk(&root);
    assert_eq!(usage, oracle);
    assert_eq!(
        usage.remove("anthropic/claude-haiku-4.5"),
        Some([1, 5000 - 4000 - 500, 200, 4000, 500])
    );
    assert_eq!(
        usage.remove("claude-sonnet-4-6"),
        Some([1, 21 - 3 - 1, 8, 3, 1])
    );
    assert_eq!(
        responses_by_session(&archive),
        "cline-session:1784094053271_p8pzo=16 cline-session:1784094053271_p8pzo/sub-001=1 \
         cline-session:fixture-success-01=1"
    );
    assert_eq!(
        crate::support::text(
            &archive,
            "SELECT group_concat(session_id || '<' || COALESCE(parent_session_id, '-') || ':'
                                 || COALESCE(branch_type, '-') || ':'
                                 || COALESCE(CAST(ROUND(reported_cost_usd, 2) AS TEXT), 'none'), ' ')
             FROM (SELECT * FROM sessions ORDER BY session_id)",
            []
        ),
        "cline-session:1784094053271_p8pzo<-:-:2.04 \
         cline-session:1784094053271_p8pzo/sub-001<cline-session:1784094053271_p8pzo:subagent:0.01 \
         cline-session:1784094124598_rruoq<cline-session:1784094053271_p8pzo:fork:none \
         cline-session:fixture-success-01<-:-:0.13"
    );
    assert_eq!(
        roles(&archive, "cline-session:fixture-success-01"),
        "user assistant tool assistant"
    );
}

/// A classic Cline task resumed in Cline 4: the SDK session with the task's id opens with the
/// task's history converted, its last response carrying the whole task's totals (provider
/// `unknown`), then the legacy warning, then a new turn (3,000 in with 2,000 cache reads
/// inside, 100 out); Cline writes that turn back into the task folder (`sdk_writeback.json`,
/// an `api_req_started` of 1,000 / 100 / 2,000). Figures by hand: the task's own requests (the
/// oracle of the unchanged folder) plus the new turn once, both found with no path given.
#[test]
fn cline_4_resumed_classic_task_counts_each_request_once() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let data = home.join(".cline/data");
    let original = fixtures("cline/saoudrizwan.claude-dev/tasks/1760000000000");
    let task = data.join("tasks/1760000000000");
    copy_tree(&original, &task);
    let read = |p: &Path| -> Vec<serde_json::Value> {
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    let mut history = read(&task.join("api_conversation_history.json"));
    let mut ui = read(&task.join("ui_messages.json"));
    let (base_api, base_ui) = (history.len(), ui.len());
    let new_turn_ts = 1_790_000_000_000_i64;
    // The SDK session: the converted history, the synthetic totals, the warning, a new turn.
    let mut messages: Vec<serde_json::Value> = history
        .iter()
        .enumerate()
        .map(|(i, m)| serde_json::json!({"id": format!("legacy-{i}"), "role": m["role"], "content": m["content"]}))
        .collect();
    if let Some(last) = messages.iter_mut().rev().find(|m| m["role"] == "assistant") {
        last["metrics"] = serde_json::json!({"inputTokens": 99999, "outputTokens": 999,
            "cacheReadTokens": 0, "cacheWriteTokens": 0, "cost": 9.99});
        last["modelInfo"] =
            serde_json::json!({"id": "claude-sonnet-4-5-20250929", "provider": "unknown"});
    }
    messages.push(serde_json::json!({"id": "warn", "role": "user", "content": [{"type": "text",
        "text": "Warning: this is a legacy conversation, which means tool names may have changed. Please use the most up-to-date tools you are aware of."}]}));
    messages.push(
        serde_json::json!({"id": "msg_new_user", "role": "user", "ts": new_turn_ts - 5000,
        "content": [{"type": "text", "text": "Now add a test"}]}),
    );
    messages.push(
        serde_json::json!({"id": "msg_new_1", "role": "assistant", "ts": new_turn_ts,
        "modelInfo": {"id": "claude-sonnet-4-5-20250929", "provider": "anthropic"},
        "content": [{"type": "text", "text": "Added the test."}],
        "metrics": {"inputTokens": 3000, "outputTokens": 100, "cacheReadTokens": 2000,
                    "cacheWriteTokens": 0, "cost": 0.02}}),
    );
    let session = data.join("sessions/1760000000000");
    std::fs::create_dir_all(&session).unwrap();
    std::fs::write(
        session.join("1760000000000.messages.json"),
        serde_json::json!({"version": 1, "sessionId": "1760000000000", "agent": "lead",
                           "messages": messages})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        session.join("1760000000000.json"),
        serde_json::json!({"version": 1, "session_id": "1760000000000",
            "started_at": "2026-09-21T10:00:00Z", "cwd": "/home/alice/src/api",
            "metadata": {"legacyTask": true, "title": "Fix the login bug"}})
        .to_string(),
    )
    .unwrap();
    // The write-back into the task folder.
    history.push(serde_json::json!({"role": "user", "ts": new_turn_ts - 5000, "content": [{"type": "text", "text": "Now add a test"}]}));
    history.push(serde_json::json!({"role": "assistant", "ts": new_turn_ts, "content": [{"type": "text", "text": "Added the test."}]}));
    ui.push(serde_json::json!({"ts": new_turn_ts - 4000, "type": "say", "say": "user_feedback", "text": "Now add a test"}));
    ui.push(
        serde_json::json!({"ts": new_turn_ts - 3000, "type": "say", "say": "api_req_started",
        "text": serde_json::json!({"tokensIn": 1000, "tokensOut": 100, "cacheReads": 2000,
                                   "cacheWrites": 0, "cost": 0.02}).to_string()}),
    );
    std::fs::write(
        task.join("api_conversation_history.json"),
        serde_json::to_vec(&history).unwrap(),
    )
    .unwrap();
    std::fs::write(
        task.join("ui_messages.json"),
        serde_json::to_vec(&ui).unwrap(),
    )
    .unwrap();
    std::fs::write(
        task.join("sdk_writeback.json"),
        serde_json::json!({"version": 1, "baseApiMessageCount": base_api,
            "baseUiMessageCount": base_ui, "writtenApiMessageCount": base_api + 2,
            "writtenUiMessageCount": base_ui + 2})
        .to_string(),
    )
    .unwrap();
    let summary = ingest_discovered(dir.path(), &home, &[]);
    assert_eq!(summary["sessions_ingested"]["cline-task"], 1, "{summary}");
    assert_eq!(
        summary["sessions_ingested"]["cline-session"], 1,
        "{summary}"
    );
    let archive = open(&dir.path().join("a.db"));
    let mut want = crate::oracle::cline_tasks(&original);
    let row = want
        .entry("claude-sonnet-4-5-20250929".to_string())
        .or_default();
    for (slot, n) in row.iter_mut().zip([1, 1000, 100, 2000, 0]) {
        *slot += n;
    }
    assert_eq!(usage_by_model(&archive), want);
    // The SDK session holds the new turn only; the task keeps its own messages.
    assert_eq!(
        roles(&archive, "cline-session:1760000000000"),
        "user assistant"
    );
    assert_eq!(
        roles(&archive, "cline-task:1760000000000"),
        "user assistant tool assistant tool assistant"
    );
}

/// A Cline SDK session whose messages file is cut short is reported (file and reason) and its
/// folder's other sessions, and the other folders, are read; a Crush database cut short is
/// reported and the other project's read.
#[test]
fn cline_sdk_and_crush_damage_costs_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let sdk = dir.path().join("sdk");
    copy_tree(&fixtures("cline-sdk"), &sdk);
    let parent = sdk.join("sessions/1784094053271_p8pzo/1784094053271_p8pzo.messages.json");
    let whole = std::fs::read(&parent).unwrap();
    std::fs::write(&parent, &whole[..whole.len() / 2]).unwrap();
    let crush = dir.path().join("crush");
    copy_tree(&fixtures("crush"), &crush);
    let cut = crush.join("dbr/.crush/crush.db");
    let whole = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &whole[..whole.len() / 3]).unwrap();
    let summary = ingest(&dir.path().join("a.db"), &[&sdk, &crush]);
    // The cut parent is an empty session beside its subagent; the fork now owns its copies.
    assert_eq!(
        summary["sessions_ingested"]["cline-session"], 4,
        "{summary}"
    );
    assert_eq!(
        summary["sessions_ingested"]["crush-session"], 1,
        "{summary}"
    );
    let diagnostics = summary["diagnostics"].as_array().unwrap();
    assert!(
        diagnostics.iter().any(|d| d["reason"]
            .as_str()
            .unwrap()
            .contains("1784094053271_p8pzo.messages.json cannot be read")),
        "{summary}"
    );
    assert!(
        diagnostics
            .iter()
            .any(|d| d["file"].as_str().unwrap().ends_with("dbr/.crush/crush.db")),
        "{summary}"
    );
    let archive = open(&dir.path().join("a.db"));
    assert_eq!(
        responses_by_session(&archive),
        "cline-session:1784094053271_p8pzo/sub-001=1 cline-session:1784094124598_rruoq=16 \
         cline-session:fixture-success-01=1"
    );
}
