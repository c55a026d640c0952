//! `quarry serve` over loopback, asked by a real HTTP client (curl), never the router in-process:
//! every endpoint; 400, 401, 408 and 413 with their JSON bodies; NDJSON and Arrow streams read
//! back (Arrow with the arrow crate); the time limit cancelling a slow query (the server's CPU
//! time stops growing); a body over the limit; reader-scope tokens that reach no other session's
//! rows in either language; a revocation honoured without a restart; one intent and one outcome
//! per query in the audit trail; SIGTERM letting a running query finish. Oracles are SQLite on
//! the archive file.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::sql_scope::two_owner_archive;
use crate::support::quarry;
use crate::support::rows::sql_rows;

/// A running `quarry serve`, stopped with SIGTERM when dropped.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) base: String,
    pub(crate) log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Server {
    pub(crate) fn start(archive: &Path, tokens: &Path, flags: &[&str]) -> Server {
        Server::start_with(archive, tokens, flags, &[])
    }

    /// [`Server::start`] with environment variables set for the server.
    pub(crate) fn start_with(
        archive: &Path,
        tokens: &Path,
        flags: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_quarry"))
            .args([
                "--archive",
                &archive.display().to_string(),
                "--tz",
                "UTC",
                "serve",
            ])
            .args([
                "--listen",
                "127.0.0.1:0",
                "--tokens",
                &tokens.display().to_string(),
            ])
            .args(flags)
            .envs(env.iter().copied())
            .env_remove("QUARRY_ARCHIVE")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start quarry serve");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        let base = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {first:?}"))
            .to_string();
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            sink.lock().unwrap().push_str(&text);
        });
        Server { child, base, log }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the server with SIGTERM and returns whether it exited cleanly.
    pub(crate) fn terminate(&mut self) -> bool {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        self.child.wait().map(|s| s.success()).unwrap_or(false)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A response: status, headers, body.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: String,
    pub(crate) body: Vec<u8>,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}), status {}: {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// One request with curl: `token` as a bearer token, `accept`, a JSON `body` (POST when given).
pub(crate) fn request(
    method: &str,
    url: &str,
    token: Option<&str>,
    accept: Option<&str>,
    body: Option<&[u8]>,
) -> Reply {
    let dir = tempfile::tempdir().unwrap();
    let headers = dir.path().join("headers");
    let out = dir.path().join("body");
    let mut command = Command::new("curl");
    command
        .args(["-sS", "-X", method, "-D"])
        .arg(&headers)
        .arg("-o")
        .arg(&out)
        .args(["-w", "%{http_code}", "--max-time", "60"]);
    if let Some(token) = token {
        command.args(["-H", &format!("Authorization: Bearer {token}")]);
    }
    if let Some(accept) = accept {
        // A streamed answer's row count and truncation come in trailers, sent when asked for.
        command.args(["-H", &format!("Accept: {accept}"), "-H", "TE: trailers"]);
    }
    let input = dir.path().join("request");
    if let Some(body) = body {
        std::fs::write(&input, body).unwrap();
        command
            .args(["-H", "Content-Type: application/json", "--data-binary"])
            .arg(format!("@{}", input.display()));
    }
    command.arg(url);
    let output = command.output().expect("run curl");
    let status: u16 = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("curl: {}", String::from_utf8_lossy(&output.stderr)));
    Reply {
        status,
        headers: std::fs::read_to_string(&headers).unwrap_or_default(),
        body: std::fs::read(&out).unwrap_or_default(),
    }
}

pub(crate) fn sql(server: &Server, token: &str, sql: &str) -> Reply {
    let body = serde_json::json!({ "sql": sql }).to_string();
    request(
        "POST",
        &format!("{}/api/query", server.base),
        Some(token),
        None,
        Some(body.as_bytes()),
    )
}

pub(crate) fn units(server: &Server, token: &str, expression: &str) -> Reply {
    let url = format!(
        "{}/api/query-units?expression={}",
        server.base,
        encode(expression)
    );
    request("GET", &url, Some(token), None, None)
}

/// Percent-encodes a query-string value.
pub(crate) fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub(crate) fn oracle_count(archive: &Path, sql: &str) -> i64 {
    sql_rows(archive, sql)[0][0].as_i64().unwrap()
}

/// Adds a token with `quarry token add` and returns it (the last line of the output).
pub(crate) fn add_token(archive: &Path, tokens: &Path, name: &str, scope: &str) -> String {
    let out = quarry(&[
        "--archive",
        &archive.display().to_string(),
        "token",
        "add",
        name,
        "--scope",
        scope,
        "--tokens",
        &tokens.display().to_string(),
    ]);
    assert!(
        out.status.success(),
        "token add: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let token = text.lines().last().unwrap().trim().to_string();
    assert!(token.starts_with("qry_") && token.len() == 68, "{text}");
    token
}

/// The audit trail's intents and outcomes of surface `http` by `who`.
pub(crate) fn audit_counts(archive: &Path, who: &str) -> (i64, i64) {
    let audit = archive.with_file_name("archive.audit.db");
    let conn = rusqlite::Connection::open(audit).unwrap();
    let intents: i64 = conn
        .query_row(
            "SELECT count(*) FROM intents WHERE surface = 'http' AND who = ?1",
            [who],
            |r| r.get(0),
        )
        .unwrap();
    let outcomes: i64 = conn
        .query_row(
            "SELECT count(*) FROM outcomes JOIN intents USING (intent_id) WHERE surface = 'http' AND who = ?1",
            [who],
            |r| r.get(0),
        )
        .unwrap();
    (intents, outcomes)
}

/// The recorded error of the (first) query whose text is `query`.
fn audit_error(archive: &Path, query: &str) -> String {
    let conn = rusqlite::Connection::open(archive.with_file_name("archive.audit.db")).unwrap();
    conn.query_row(
        "SELECT o.error FROM intents i JOIN outcomes o USING (intent_id) WHERE i.query = ?1",
        [query],
        |r| r.get(0),
    )
    .unwrap()
}

pub(crate) struct Fixture {
    pub(crate) _dir: tempfile::TempDir,
    pub(crate) archive: PathBuf,
    pub(crate) tokens: PathBuf,
    pub(crate) admin: String,
    pub(crate) alice: String,
}

impl Fixture {
    /// Revokes the token called `name` (`quarry token revoke`).
    pub(crate) fn revoke(&self, name: &str) {
        let out = quarry(&[
            "--archive",
            &self.archive.display().to_string(),
            "token",
            "revoke",
            name,
            "--tokens",
            &self.tokens.display().to_string(),
        ]);
        assert!(out.status.success());
    }
}

pub(crate) fn fixture() -> Option<Fixture> {
    let dir = tempfile::tempdir().unwrap();
    let archive = two_owner_archive(dir.path())?;
    let tokens = dir.path().join("tokens.toml");
    let admin = add_token(&archive, &tokens, "ops", "admin");
    let alice = add_token(&archive, &tokens, "alice-laptop", "alice");
    Some(Fixture {
        _dir: dir,
        archive,
        tokens,
        admin,
        alice,
    })
}

#[test]
fn the_server_refuses_to_start_on_a_tokens_file_others_can_read() {
    let Some(f) = fixture() else { return };
    let text = std::fs::read_to_string(&f.tokens).unwrap();
    assert!(
        !text.contains(&f.admin) && !text.contains(&f.alice),
        "only hashes are stored"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&f.tokens).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "a new tokens file is private");
        std::fs::set_permissions(&f.tokens, std::fs::Permissions::from_mode(0o644)).unwrap();
        let out = quarry(&[
            "--archive",
            &f.archive.display().to_string(),
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--tokens",
            &f.tokens.display().to_string(),
        ]);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("chmod 600"));
    }
    let missing = f.tokens.with_file_name("none.toml");
    let out = quarry(&[
        "--archive",
        &f.archive.display().to_string(),
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        &missing.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(2), "no tokens file, no server");
}

#[test]
fn every_endpoint_answers_as_sqlite_does_within_its_scope() {
    let Some(f) = fixture() else { return };
    let mut server = Server::start(&f.archive, &f.tokens, &["--max-rows", "50"]);

    // Liveness needs no token; everything else does.
    let health = request("GET", &format!("{}/healthz", server.base), None, None, None);
    assert_eq!(
        (health.status, health.json()["status"].clone()),
        (200, "ok".into())
    );
    let none = request(
        "GET",
        &format!("{}/api/tables", server.base),
        None,
        None,
        None,
    );
    assert_eq!(none.status, 401);
    assert!(
        none.headers
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer")
    );
    assert_eq!(none.json()["code"], "unauthorized");
    assert_eq!(sql(&server, "qry_not-a-token", "SELECT 1").status, 401);
    let missing = request(
        "GET",
        &format!("{}/api/nothing", server.base),
        Some(&f.admin),
        None,
        None,
    );
    assert_eq!(missing.status, 404);

    // SQL and the language, as admin: SQLite's counts.
    let messages = oracle_count(&f.archive, "SELECT count(*) FROM messages");
    let reply = sql(&server, &f.admin, "SELECT count(*) AS n FROM messages");
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let answer = reply.json();
    assert_eq!(answer["columns"], serde_json::json!(["n"]));
    assert_eq!(answer["rows"], serde_json::json!([[messages]]));
    assert_eq!(answer["truncated"], false);
    let reply = units(&server, &f.admin, "messages | count");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["rows"], serde_json::json!([[messages]]));
    let post = request(
        "POST",
        &format!("{}/api/query-units", server.base),
        Some(&f.admin),
        None,
        Some(br#"{"expression": "messages where role:assistant | count"}"#),
    );
    let assistant = oracle_count(
        &f.archive,
        "SELECT count(*) FROM messages WHERE role = 'assistant'",
    );
    assert_eq!(post.json()["rows"], serde_json::json!([[assistant]]));

    // A row limit: the request's, and the server's --max-rows; both set `truncated`.
    let body =
        serde_json::json!({"sql": "SELECT message_id FROM messages", "limit": 3}).to_string();
    let reply = request(
        "POST",
        &format!("{}/api/query", server.base),
        Some(&f.admin),
        None,
        Some(body.as_bytes()),
    )
    .json();
    assert_eq!(
        (
            reply["rows"].as_array().unwrap().len(),
            reply["truncated"].clone()
        ),
        (3, true.into())
    );
    let reply = units(&server, &f.admin, "messages").json();
    assert_eq!(reply["rows"].as_array().unwrap().len(), 50);
    assert_eq!(reply["truncated"], true);

    // Streams are not capped: every row, a batch at a time.
    let body =
        serde_json::json!({"sql": "SELECT message_id, word_count FROM messages"}).to_string();
    let ndjson = request(
        "POST",
        &format!("{}/api/query", server.base),
        Some(&f.admin),
        Some("application/x-ndjson"),
        Some(body.as_bytes()),
    );
    assert_eq!(ndjson.status, 200);
    assert!(ndjson.headers.contains("application/x-ndjson"));
    let lines: Vec<Value> = String::from_utf8_lossy(&ndjson.body)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len() as i64, messages);
    let words = oracle_count(&f.archive, "SELECT sum(word_count) FROM messages");
    let summed: i64 = lines
        .iter()
        .map(|l| l["word_count"].as_i64().unwrap())
        .sum();
    assert_eq!(summed, words);
    let arrow = request(
        "POST",
        &format!("{}/api/query", server.base),
        Some(&f.admin),
        Some("application/vnd.apache.arrow.stream"),
        Some(body.as_bytes()),
    );
    assert_eq!(arrow.status, 200);
    let reader =
        quarry::arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(arrow.body), None)
            .unwrap();
    let (mut rows, mut summed) = (0i64, 0i64);
    for batch in reader {
        let batch = batch.unwrap();
        rows += batch.num_rows() as i64;
        let column = batch
            .column(1)
            .as_any()
            .downcast_ref::<quarry::arrow::array::Int64Array>()
            .expect("word_count is Int64");
        summed += column.iter().flatten().sum::<i64>();
    }
    assert_eq!((rows, summed), (messages, words));
    // The end of a stream comes in trailers: how many rows, and whether `limit` cut them.
    let body =
        serde_json::json!({"sql": "SELECT message_id FROM messages", "limit": 3}).to_string();
    let cut = request(
        "POST",
        &format!("{}/api/query", server.base),
        Some(&f.admin),
        Some("application/x-ndjson"),
        Some(body.as_bytes()),
    );
    assert_eq!(String::from_utf8_lossy(&cut.body).lines().count(), 3);
    let trailers = cut.headers.to_ascii_lowercase();
    assert!(
        trailers.contains("x-quarry-rows: 3") && trailers.contains("x-quarry-truncated: true"),
        "{trailers}"
    );
    assert!(
        ndjson
            .headers
            .to_ascii_lowercase()
            .contains("x-quarry-truncated: false")
    );

    // Bad queries are 400 with the typed diagnostic; a table outside the scope is the same
    // "not found" as a table that does not exist.
    let reply = units(&server, &f.admin, "messages where rol:assistant");
    assert_eq!(reply.status, 400);
    let error = reply.json();
    assert_eq!(error["code"], "invalid_query");
    assert!(error["diagnostics"][0]["column"].as_u64().unwrap() >= 1);
    assert!(error["rendered"].as_str().unwrap().contains("rol"));
    let reply = sql(&server, &f.admin, "DROP TABLE messages");
    assert_eq!(
        (reply.status, reply.json()["code"].clone()),
        (400, "sql_refused".into())
    );
    let hidden = sql(&server, &f.alice, "SELECT * FROM events_raw").json();
    let absent = sql(&server, &f.alice, "SELECT * FROM no_such_tbl").json();
    assert_eq!(hidden["code"], absent["code"]);
    assert_eq!(
        hidden["message"]
            .as_str()
            .unwrap()
            .replace("events_raw", "X"),
        absent["message"]
            .as_str()
            .unwrap()
            .replace("no_such_tbl", "X")
    );
    assert!(sql(&server, &f.admin, "SELECT count(*) FROM events_raw").status == 200);

    // A reader token sees its sessions only, in both languages.
    let alice_sessions = oracle_count(
        &f.archive,
        "SELECT count(*) FROM sessions WHERE owner = 'alice'",
    );
    let alice_messages = oracle_count(
        &f.archive,
        "SELECT count(*) FROM messages JOIN sessions USING (session_id) WHERE owner = 'alice' AND NOT hidden",
    );
    assert!(alice_sessions > 0 && alice_messages < messages);
    let reply = sql(
        &server,
        &f.alice,
        "SELECT count(DISTINCT session_id) AS n, count(*) AS m FROM messages",
    )
    .json();
    let seen_sessions = oracle_count(
        &f.archive,
        "SELECT count(DISTINCT session_id) FROM messages JOIN sessions USING (session_id) WHERE owner = 'alice' AND NOT hidden",
    );
    assert_eq!(
        reply["rows"],
        serde_json::json!([[seen_sessions, alice_messages]])
    );
    assert_eq!(
        units(&server, &f.alice, "sessions | count").json()["rows"],
        serde_json::json!([[alice_sessions]])
    );
    assert_eq!(
        units(&server, &f.alice, "messages | count").json()["rows"],
        serde_json::json!([[alice_messages]])
    );
    let bob = sql(
        &server,
        &f.alice,
        "SELECT count(*) FROM sessions WHERE owner = 'bob'",
    )
    .json();
    assert_eq!(bob["rows"], serde_json::json!([[0]]));

    // The caller's catalog; explain.
    let tables = request(
        "GET",
        &format!("{}/api/tables", server.base),
        Some(&f.alice),
        None,
        None,
    )
    .json();
    let names = crate::support::table_names(&tables);
    assert!(
        names.contains(&"messages") && !names.contains(&"events_raw"),
        "{names:?}"
    );
    assert_eq!(tables["scope"], "alice");
    let admin_tables = request(
        "GET",
        &format!("{}/api/tables", server.base),
        Some(&f.admin),
        None,
        None,
    )
    .json();
    assert!(
        admin_tables["tables"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "events_raw")
    );
    let explained = request(
        "GET",
        &format!(
            "{}/api/explain?expression={}",
            server.base,
            encode("messages | group by role | count")
        ),
        Some(&f.alice),
        None,
        None,
    );
    assert_eq!(
        (explained.status, explained.json()["unit_source"].clone()),
        (200, "messages".into())
    );
    let plan = request(
        "GET",
        &format!(
            "{}/api/explain?plan=true&expression={}",
            server.base,
            encode("messages | count")
        ),
        Some(&f.alice),
        None,
        None,
    );
    assert_eq!(plan.status, 403, "plans are for the admin scope");
    let plan = request(
        "GET",
        &format!(
            "{}/api/explain?plan=true&expression={}",
            server.base,
            encode("messages | count")
        ),
        Some(&f.admin),
        None,
        None,
    );
    assert!(plan.json()["plan"].as_str().unwrap().contains("source:"));

    // A revocation is honoured at the next request, without a restart.
    f.revoke("alice-laptop");
    assert_eq!(units(&server, &f.alice, "messages | count").status, 401);
    assert_eq!(units(&server, &f.admin, "messages | count").status, 200);

    // Every query has one intent and one outcome, under the token's name.
    // (alice's six queries: events_raw, a missing table, two SQL counts, two in the language;
    // explain and tables run no query, and the revoked request never started one.)
    let (intents, outcomes) = audit_counts(&f.archive, "alice-laptop");
    assert_eq!((intents, outcomes), (6, 6));
    let (intents, outcomes) = audit_counts(&f.archive, "ops");
    assert_eq!(intents, outcomes);
    assert!(
        server.terminate(),
        "SIGTERM stops the server cleanly: {}",
        server.log.lock().unwrap()
    );
}

#[test]
fn a_slow_query_is_cancelled_at_the_time_limit_and_big_bodies_are_refused() {
    let Some(f) = fixture() else { return };
    let mut server = Server::start(
        &f.archive,
        &f.tokens,
        &["--timeout", "2s", "--max-body", "64KB"],
    );
    let slow = "SELECT sum(length(a.text) + length(b.text) + length(c.text)) FROM messages a, messages b, messages c";
    let started = Instant::now();
    let reply = sql(&server, &f.admin, slow);
    let took = started.elapsed();
    assert_eq!(
        reply.status,
        408,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.json()["code"], "timeout");
    assert!(took < Duration::from_secs(15), "answered after {took:?}");
    // The query stopped: the server's CPU time no longer grows.
    let cpu = || {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", server.pid())).unwrap();
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    };
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu();
    std::thread::sleep(Duration::from_secs(2));
    let spent = cpu() - before;
    assert!(
        spent < 50,
        "the cancelled query kept running: {spent} ticks in 2 s"
    );
    // Its outcome is recorded as the timeout.
    let error = audit_error(&f.archive, slow);
    assert!(error.contains("time limit"), "{error}");
    // A request may ask for less than the server's limit.
    let body = serde_json::json!({"sql": slow, "timeout_ms": 300}).to_string();
    let started = Instant::now();
    let reply = request(
        "POST",
        &format!("{}/api/query", server.base),
        Some(&f.admin),
        None,
        Some(body.as_bytes()),
    );
    assert_eq!(reply.status, 408);
    assert!(started.elapsed() < Duration::from_millis(1900));

    // A streamed answer that times out before its first row is a 408 too.
    let body = serde_json::json!({"sql": slow, "timeout_ms": 500}).to_string();
    let reply = request(
        "POST",
        &format!("{}/api/query", server.base),
        Some(&f.admin),
        Some("application/x-ndjson"),
        Some(body.as_bytes()),
    );
    assert_eq!(reply.status, 408);
    // A client that reads too slowly is cut off at the time limit: the transfer is incomplete
    // (curl exit 18), never a short answer that looks whole, and the outcome is the timeout.
    // (What the kernel already buffered on loopback, megabytes, still reaches the client
    // first: the rate is high enough for that to take seconds.)
    let endless = "SELECT a.message_id, b.message_id AS other FROM messages a, messages b";
    let started = Instant::now();
    let out = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "--limit-rate",
            "2M",
            "--max-time",
            "60",
        ])
        .args(["-H", &format!("Authorization: Bearer {}", f.admin)])
        .args(["-H", "Accept: application/x-ndjson"])
        .args([
            "--data-binary",
            &serde_json::json!({ "sql": endless }).to_string(),
        ])
        .arg(format!("{}/api/query", server.base))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(18),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(40),
        "{:?}",
        started.elapsed()
    );
    let error = audit_error(&f.archive, endless);
    assert!(error.contains("time limit"), "{error}");

    // A body over --max-body is 413, and the server still answers afterwards.
    let big = serde_json::json!({"sql": format!("SELECT '{}'", "x".repeat(100_000))}).to_string();
    let reply = request(
        "POST",
        &format!("{}/api/query", server.base),
        Some(&f.admin),
        None,
        Some(big.as_bytes()),
    );
    assert_eq!(reply.status, 413);
    assert_eq!(reply.json()["code"], "body_too_large");
    let reply = request(
        "POST",
        &format!("{}/api/query", server.base),
        Some(&f.admin),
        None,
        Some(b"{not json"),
    );
    assert_eq!(
        (reply.status, reply.json()["code"].clone()),
        (400, "bad_request".into())
    );
    assert_eq!(
        sql(&server, &f.admin, "SELECT 1 AS one").json()["rows"],
        serde_json::json!([[1]])
    );
    assert!(server.terminate());
}

#[test]
fn sigterm_lets_a_running_query_finish_and_records_its_outcome() {
    let Some(f) = fixture() else { return };
    let mut server = Server::start(&f.archive, &f.tokens, &["--timeout", "3s"]);
    // A query that runs until its time limit, asked in the background.
    let base = server.base.clone();
    let token = f.admin.clone();
    let asked = std::thread::spawn(move || {
        let body = serde_json::json!({"sql": "SELECT count(*) FROM messages a, messages b, messages c WHERE a.word_count + b.word_count + c.word_count = -1"}).to_string();
        request(
            "POST",
            &format!("{base}/api/query"),
            Some(&token),
            None,
            Some(body.as_bytes()),
        )
    });
    std::thread::sleep(Duration::from_millis(800));
    let stopped = Instant::now();
    assert!(
        server.terminate(),
        "a clean exit: {}",
        server.log.lock().unwrap()
    );
    let reply = asked.join().unwrap();
    // The running query was answered (by its time limit), not cut off.
    assert_eq!(
        reply.status,
        408,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert!(stopped.elapsed() > Duration::from_millis(1000));
    let (intents, outcomes) = audit_counts(&f.archive, "ops");
    assert_eq!((intents, outcomes), (1, 1));
}
