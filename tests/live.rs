//! A transcript read while it is being written: what the archive shows after each record an
//! agent appends. Only committed turns reach `events` (docs/tables.md, "turns" and "events"), and
//! an archive grown record by record equals a fresh ingest of the final file.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use crate::support::ingest_with;
use crate::support::rows::sql_rows;

/// A Claude Code turn, record by record: a prompt; one response written as two lines sharing
/// `message.id` (its text, then its tool call); the tool's result; the final answer; and the
/// next prompt.
fn records() -> Vec<Value> {
    let common = |uuid: &str, parent: Option<&str>, second: u32| {
        json!({
            "parentUuid": parent, "isSidechain": false, "userType": "external",
            "cwd": "/home/alice/live", "sessionId": "11fe0000-0000-4000-8000-000000000001",
            "version": "2.1.38", "uuid": uuid,
            "timestamp": format!("2026-03-01T10:00:{second:02}.000Z")
        })
    };
    let with = |mut record: Value, kind: &str, message: Value| {
        record["type"] = kind.into();
        record["message"] = message;
        record
    };
    let usage = json!({"input_tokens": 10, "output_tokens": 5});
    vec![
        with(
            common("u1", None, 0),
            "user",
            json!({"role": "user", "content": "list the files"}),
        ),
        with(
            common("a1", Some("u1"), 1),
            "assistant",
            json!({"model": "claude-opus-4-6", "id": "msg_1", "type": "message", "role": "assistant",
                   "content": [{"type": "text", "text": "Let me look."}], "usage": usage}),
        ),
        with(
            common("a1b", Some("a1"), 2),
            "assistant",
            json!({"model": "claude-opus-4-6", "id": "msg_1", "type": "message", "role": "assistant",
                   "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                "input": {"command": "ls"}}], "usage": usage}),
        ),
        with(
            common("u2", Some("a1b"), 3),
            "user",
            json!({"role": "user", "content": [{"tool_use_id": "toolu_1", "type": "tool_result",
                   "content": "a.txt\nb.txt", "is_error": false}]}),
        ),
        with(
            common("a2", Some("u2"), 4),
            "assistant",
            json!({"model": "claude-opus-4-6", "id": "msg_2", "type": "message", "role": "assistant",
                   "content": [{"type": "text", "text": "There are two files."}], "usage": usage}),
        ),
        with(
            common("u3", Some("a2"), 5),
            "user",
            json!({"role": "user", "content": "thanks"}),
        ),
    ]
}

/// Rows of every table but the bookkeeping ones, by table: what two archives must share.
fn counts(archive: &Path) -> Vec<(String, i64)> {
    let tables = sql_rows(
        archive,
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%fts%'
         AND name NOT IN ('meta', 'source_files', 'snapshot_changes') ORDER BY name",
    );
    tables
        .into_iter()
        .map(|t| {
            let name = t[0].as_str().unwrap().to_string();
            let n = sql_rows(archive, &format!("SELECT count(*) FROM \"{name}\""))[0][0]
                .as_i64()
                .unwrap();
            (name, n)
        })
        .collect()
}

/// Asserts that `archive` holds what a fresh ingest of `folder` into `fresh` holds: every
/// table's rows and the usage sums; returns the usage (responses, input and output tokens).
fn same_as_fresh(archive: &Path, folder: &Path, fresh: &Path) -> Vec<Vec<Value>> {
    ingest_with(fresh, &["--owner", "alice"], &[folder]);
    assert_eq!(counts(archive), counts(fresh));
    let usage = |a: &Path| {
        sql_rows(
            a,
            "SELECT count(*), sum(input_tokens), sum(output_tokens) FROM usage",
        )
    };
    assert_eq!(usage(archive), usage(fresh));
    usage(archive)
}

#[test]
fn a_turn_written_record_by_record_is_visible_exactly_when_committed() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("projects");
    std::fs::create_dir_all(&folder).unwrap();
    let file = folder.join("11fe0000-0000-4000-8000-000000000001.jsonl");
    let archive = dir.path().join("archive.db");
    // After each record: the records `events` shows, and each turn's committed flag, as the
    // rule reads (committed when every tool call has its result and an assistant message
    // follows the last result; with no tool call, when an assistant message answered).
    let expected: [(i64, &[bool]); 6] = [
        (0, &[false]),       // a prompt alone
        (2, &[true]),        // answered by text (the rule cannot know a tool call follows)
        (0, &[false]),       // the same response now calls a tool, not yet answered
        (0, &[false]),       // the result, with no reply after it
        (5, &[true]),        // the reply after the result
        (5, &[true, false]), // the next prompt opens a turn of its own
    ];
    let session = "claude-code-session:11fe0000-0000-4000-8000-000000000001";
    for (i, (record, (visible, turns))) in records().into_iter().zip(expected).enumerate() {
        let mut out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .unwrap();
        writeln!(out, "{}", serde_json::to_string(&record).unwrap()).unwrap();
        drop(out);
        ingest_with(&archive, &["--owner", "alice"], &[&folder]);
        let shown = sql_rows(
            &archive,
            &format!("SELECT count(*) FROM events WHERE session_id = '{session}'"),
        )[0][0]
            .as_i64()
            .unwrap();
        let committed: Vec<bool> = sql_rows(
            &archive,
            &format!(
                "SELECT committed FROM turns WHERE session_id = '{session}' ORDER BY started_at_ms"
            ),
        )
        .into_iter()
        .map(|r| r[0].as_i64() == Some(1))
        .collect();
        let raw = sql_rows(
            &archive,
            &format!("SELECT count(*) FROM events_raw WHERE session_id = '{session}'"),
        )[0][0]
            .as_i64()
            .unwrap();
        assert_eq!(
            raw,
            i as i64 + 1,
            "after record {i}: every record is archived"
        );
        assert_eq!(
            (shown, committed.as_slice()),
            (visible, turns),
            "after record {i}"
        );
    }
    // Grown record by record, the archive holds what a fresh ingest of the final file holds.
    let usage = same_as_fresh(&archive, &folder, &dir.path().join("fresh.db"));
    assert_eq!(usage[0][0], 2, "two billed responses");
}

/// `quarry watch` as a child process, its log in `log`.
fn watch(archive: &Path, folder: &Path, log: &Path, extra: &[&str]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(["--archive", archive.to_str().unwrap(), "watch"])
        .arg(folder)
        .args(["--owner", "alice", "--settle", "100ms"])
        .args(extra)
        .env_remove("QUARRY_ARCHIVE")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("start quarry watch")
}

/// Waits (up to a minute: a liveness check, not a timing) until `sql` answers `want`.
fn wait_for(archive: &Path, sql: &str, want: i64) {
    let started = std::time::Instant::now();
    loop {
        let got = archive
            .exists()
            .then(|| {
                let conn = rusqlite::Connection::open(archive).ok()?;
                conn.query_row(sql, [], |r| r.get::<_, i64>(0)).ok()
            })
            .flatten();
        if got == Some(want) {
            return;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "{sql}: {got:?}, waiting for {want}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn append(file: &Path, records: &[Value]) {
    let mut bytes = Vec::new();
    for r in records {
        bytes.extend(serde_json::to_vec(r).unwrap());
        bytes.push(b'\n');
    }
    crate::support::append_bytes(file, &bytes);
}

#[test]
fn watch_reads_what_agents_write_and_a_kill_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("projects");
    std::fs::create_dir_all(&folder).unwrap();
    let file = folder.join("11fe0000-0000-4000-8000-000000000001.jsonl");
    let archive = dir.path().join("archive.db");
    let log = dir.path().join("watch.log");
    let records = records();
    let raw = "SELECT count(*) FROM events_raw";

    // Written while the watch runs: each batch of records is read as it settles.
    let mut child = watch(&archive, &folder, &log, &[]);
    // (Its first line says it watches; a record written before that is read by its start.)
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains(" watch: ")
    {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the watch did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    append(&file, &records[..3]);
    wait_for(&archive, raw, 3);
    append(&file, &records[3..5]);
    wait_for(&archive, raw, 5);
    wait_for(&archive, "SELECT count(*) FROM events", 5);

    // Killed outright: the archive is whole, and what was written meanwhile is read at the next
    // start, once.
    child.kill().unwrap();
    child.wait().unwrap();
    let check = sql_rows(&archive, "PRAGMA integrity_check");
    assert_eq!(check[0][0], "ok");
    append(&file, &records[5..]);
    let mut child = watch(&archive, &folder, &log, &[]);
    wait_for(&archive, raw, 6);
    child.kill().unwrap();
    child.wait().unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("watch start: 0 new and 1 grown files"),
        "{text}"
    );

    // Polling alone (no notifications) finds a new session too.
    let second = folder.join("22fe0000-0000-4000-8000-000000000002.jsonl");
    let mut child = watch(&archive, &folder, &log, &["--poll", "--rescan", "300ms"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let renamed: Vec<Value> = records[..2]
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r["sessionId"] = "22fe0000-0000-4000-8000-000000000002".into();
            r
        })
        .collect();
    append(&second, &renamed);
    wait_for(&archive, "SELECT count(*) FROM sessions", 2);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("no notifications")
    );

    // Nothing lost or counted twice: the same as a fresh ingest of the final files.
    same_as_fresh(&archive, &folder, &dir.path().join("fresh.db"));
}

#[test]
fn a_server_that_watches_answers_what_was_just_written() {
    let Some(f) = crate::server::fixture() else {
        return;
    };
    let folder = f.archive.with_file_name("live-projects");
    std::fs::create_dir_all(&folder).unwrap();
    let server = crate::server::Server::start(
        &f.archive,
        &f.tokens,
        &["--watch-path", folder.to_str().unwrap()],
    );
    let id = "claude-code-session:11fe0000-0000-4000-8000-000000000001";
    let ask = || {
        crate::server::units(
            &server,
            &f.admin,
            &format!("sessions where session:{id} | count"),
        )
        .json()["rows"][0][0]
            .as_i64()
    };
    assert_eq!(ask(), Some(0));
    append(
        &folder.join("11fe0000-0000-4000-8000-000000000001.jsonl"),
        &records()[..2],
    );
    let started = std::time::Instant::now();
    while ask() != Some(1) {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the server never saw the new session"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// `records()` as another session writes them: its own session id, record ids and response ids.
fn records_of(session: &str) -> Vec<Value> {
    let text = serde_json::to_string(&records()).unwrap();
    let text = text
        .replace("11fe0000-0000-4000-8000-000000000001", session)
        .replace("\"msg_", &format!("\"msg_{}_", &session[..4]))
        .replace("\"uuid\":\"", &format!("\"uuid\":\"{}-", &session[..4]))
        .replace(
            "\"parentUuid\":\"",
            &format!("\"parentUuid\":\"{}-", &session[..4]),
        );
    serde_json::from_str(&text).unwrap()
}

/// A `GET /api/live` stream read by curl into a file as it comes.
struct Live {
    child: std::process::Child,
    out: std::path::PathBuf,
}

impl Live {
    fn open(server: &crate::server::Server, token: &str, out: std::path::PathBuf) -> Live {
        let child = std::process::Command::new("curl")
            .args(["-sS", "-N", "-H", &format!("Authorization: Bearer {token}")])
            .arg("-o")
            .arg(&out)
            .arg(format!("{}/api/live", server.base))
            .spawn()
            .expect("run curl");
        let live = Live { child, out };
        live.wait_for("event: hello");
        live
    }

    fn text(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap_or_default()
    }

    /// Waits (up to a minute: a liveness check, not a timing) until the stream holds `what`.
    fn wait_for(&self, what: &str) {
        let started = std::time::Instant::now();
        while !self.text().contains(what) {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "the live stream never said {what}: {}",
                self.text()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_live_stream_names_only_what_the_callers_scope_sees_and_ends_when_revoked() {
    let Some(f) = crate::server::fixture() else {
        return;
    };
    let folder = f.archive.with_file_name("live-projects");
    let bob_folder = f.archive.with_file_name("bob-projects");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::create_dir_all(&bob_folder).unwrap();
    let mut server = crate::server::Server::start(
        &f.archive,
        &f.tokens,
        &[
            "--watch-path",
            folder.to_str().unwrap(),
            "--watch-owner",
            "alice",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let alice = Live::open(&server, &f.alice, dir.path().join("alice.sse"));
    let admin = Live::open(&server, &f.admin, dir.path().join("admin.sse"));
    // bob's session first (another writer, ingested under his name), then alice's turn.
    let bob = "22fe0000-0000-4000-8000-000000000002";
    append(&bob_folder.join(format!("{bob}.jsonl")), &records_of(bob));
    crate::support::ingest_with(&f.archive, &["--owner", "bob"], &[&bob_folder]);
    let mine = "11fe0000-0000-4000-8000-000000000001";
    append(&folder.join(format!("{mine}.jsonl")), &records()[..5]);
    alice.wait_for(mine);
    admin.wait_for(mine);
    admin.wait_for(bob);
    assert!(!alice.text().contains(bob), "{}", alice.text());
    // Each change names the session with its committed turns, as the archive holds them.
    let last = alice
        .text()
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .rfind(|v| v["sessions"].is_array())
        .unwrap();
    let session = &last["sessions"][0];
    let id = format!("claude-code-session:{mine}");
    assert_eq!(session["session_id"], id.as_str());
    let committed = crate::server::oracle_count(
        &f.archive,
        &format!("SELECT count(*) FROM turns WHERE session_id = '{id}' AND committed = 1"),
    );
    assert_eq!(session["committed_turns"], committed, "{last}");
    assert_eq!(committed, 1);
    // The admin's token moved to alice's scope in the tokens file: from the next change on, its
    // stream is narrowed too (bob writes again; only alice's session is named after that).
    let text = std::fs::read_to_string(&f.tokens).unwrap();
    let narrowed = text.replacen(
        "name = \"ops\"\nscope = \"admin\"",
        "name = \"ops\"\nscope = \"alice\"",
        1,
    );
    assert_ne!(narrowed, text, "the tokens file names ops as admin");
    std::fs::write(&f.tokens, narrowed).unwrap();
    let before = admin.text().len();
    let bob_again = "33fe0000-0000-4000-8000-000000000003";
    append(
        &bob_folder.join(format!("{bob_again}.jsonl")),
        &records_of(bob_again),
    );
    crate::support::ingest_with(&f.archive, &["--owner", "bob"], &[&bob_folder]);
    append(&folder.join(format!("{mine}.jsonl")), &records()[5..]);
    alice.wait_for("\"turns\":2");
    let started = std::time::Instant::now();
    while !admin.text()[before..].contains("\"turns\":2") {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "{}",
            admin.text()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        !admin.text()[before..].contains(bob_again),
        "{}",
        admin.text()
    );
    // Revoked, the stream ends at the next look with why.
    f.revoke("alice-laptop");
    alice.wait_for("event: end");
    assert!(alice.text().contains("revoked"), "{}", alice.text());
    // Each stream is audited once, when it opened, under its token's name and scope then.
    drop((alice, admin));
    assert!(server.terminate());
    let audit = crate::support::open(&f.archive.with_file_name("archive.audit.db"));
    let opened = crate::support::rows::query_rows(
        &audit,
        "SELECT who, scope, status FROM requests WHERE kind = 'live' ORDER BY request_id",
    )
    .unwrap();
    assert_eq!(
        opened,
        vec![
            vec![json!("alice-laptop"), json!("alice"), json!("ok")],
            vec![json!("ops"), json!("admin"), json!("ok")],
        ]
    );
}

/// `quarry watch` on OpenCode's database (a file, as `$OPENCODE_DB` names it) reads a session
/// again as soon as OpenCode commits to it: the commit lands in `opencode.db-wal`, which the
/// watch maps to the database (the rescan is an hour away, so only the notification can do it).
#[test]
fn watch_reads_an_opencode_database_as_opencode_commits() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("opencode");
    std::fs::create_dir_all(&data).unwrap();
    let db = data.join("opencode.db");
    let conn = crate::agents::opencode_traps(&db);
    let archive = dir.path().join("archive.db");
    let log = dir.path().join("watch.log");
    let mut child = watch(&archive, &db, &log, &["--rescan", "1h"]);
    let usage = "SELECT count(*) FROM usage";
    wait_for(&archive, usage, 4);
    crate::agents::oc_message(
        &conn,
        "ses_b",
        "msg_b5",
        crate::agents::oc_assistant(
            crate::agents::T0 + 13_000,
            "anthropic",
            "claude-sonnet-4-5",
            [9, 9, 0, 0, 0],
        ),
        &[crate::agents::oc_text("Also done.")],
    );
    wait_for(&archive, usage, 5);
    child.kill().unwrap();
    child.wait().unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("no notifications"), "{text}");
}
