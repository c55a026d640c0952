//! The service core, end to end, through the real binary: one encoder per format (the same
//! bytes over HTTP and from the command line), one error map (each class with one code, its
//! exit code, its status and its MCP tool error), a long-lived engine that sees an edited
//! scopes file and a new ingest at the next request, and an audit trail that records every
//! refused request while an unauthenticated caller cannot grow it without bound. Oracles are
//! SQLite on the archive file and the error table of `docs/server.md`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::server::{Server, add_token, encode, fixture, oracle_count, request, sql, units};
use crate::support::{corpus, ingest_with, quarry};

/// The quarry binary run with `args` and `env`.
fn quarry_env(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(args)
        .envs(env.iter().copied())
        .env_remove("QUARRY_ARCHIVE")
        .output()
        .expect("run quarry")
}

/// The SQL statement whose answer every streamed format is compared on: ordered, several
/// batches long (every message twelve times), with strings, integers, NULLs and times.
const ORDERED: &str = "SELECT message_id, copy, session_id, role, word_count, model, occurred_at_ms FROM messages CROSS JOIN (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9), (10), (11), (12)) AS copies(copy) ORDER BY message_id, copy";

#[test]
fn one_query_has_the_same_bytes_over_http_and_from_the_command_line() {
    let Some(f) = fixture() else { return };
    let mut server = Server::start(&f.archive, &f.tokens, &[]);
    let a = f.archive.display().to_string();
    let body = json!({ "sql": ORDERED }).to_string();
    let mut seen = Vec::new();
    for (accept, format) in [
        ("application/x-ndjson", "ndjson"),
        ("application/vnd.apache.arrow.stream", "arrow-stream"),
    ] {
        let http = request(
            "POST",
            &format!("{}/api/query", server.base),
            Some(&f.admin),
            Some(accept),
            Some(body.as_bytes()),
        );
        assert_eq!(http.status, 200, "{}", String::from_utf8_lossy(&http.body));
        assert!(http.headers.contains(accept), "{}", http.headers);
        let cli = quarry(&[
            "--archive",
            &a,
            "--tz",
            "UTC",
            "--format",
            format,
            "sql",
            ORDERED,
        ]);
        assert!(
            cli.status.success(),
            "{}",
            String::from_utf8_lossy(&cli.stderr)
        );
        assert!(!cli.stdout.is_empty());
        assert!(
            cli.stdout == http.body,
            "{format}: the command line wrote {} bytes, HTTP sent {}",
            cli.stdout.len(),
            http.body.len()
        );
        seen.push(http.body);
    }
    // The bytes are the answer: every message, in order, as SQLite has them.
    let messages = oracle_count(&f.archive, "SELECT count(*) FROM messages");
    let ndjson = String::from_utf8(seen[0].clone()).unwrap();
    let ids: Vec<String> = ndjson
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["message_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids.len() as i64, 12 * messages);
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
    let reader = quarry::arrow::ipc::reader::StreamReader::try_new(
        std::io::Cursor::new(seen[1].clone()),
        None,
    )
    .unwrap();
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    assert!(batches.len() > 1, "several batches: {}", batches.len());
    assert_eq!(
        batches.iter().map(|b| b.num_rows() as i64).sum::<i64>(),
        12 * messages
    );
    assert!(server.terminate());
}

/// A tiny MCP client over the server's standard input and output (newline-delimited JSON-RPC).
pub(crate) struct Mcp {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next_id: u64,
}

impl Mcp {
    pub(crate) fn start(archive: &Path, flags: &[&str], env: &[(&str, &str)]) -> Mcp {
        let mut child = Command::new(env!("CARGO_BIN_EXE_quarry"))
            .args(["--archive", &archive.display().to_string(), "--tz", "UTC"])
            .args(flags)
            .arg("mcp")
            .envs(env.iter().copied())
            .env_remove("QUARRY_ARCHIVE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start quarry mcp");
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut mcp = Mcp {
            child,
            input,
            output,
            next_id: 0,
        };
        let info = mcp.call(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "quarry-tests", "version": "0"}}),
        );
        assert_eq!(info["result"]["serverInfo"]["name"], "quarry", "{info}");
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.input, "{message}").unwrap();
        self.input.flush().unwrap();
    }

    /// The response to one request.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.output.read_line(&mut line).unwrap() > 0,
                "the MCP server closed"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// A tool call's result.
    pub(crate) fn tool(&mut self, name: &str, arguments: Value) -> Value {
        let response = self.call("tools/call", json!({"name": name, "arguments": arguments}));
        response["result"].clone()
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One way to reach an error class on every surface.
struct Case {
    class: &'static str,
    code: &'static str,
    exit: i32,
    status: u16,
    /// The command line's arguments after `--archive A --format json`.
    cli: Vec<&'static str>,
    /// The HTTP request: method, path and query, JSON body, token (admin unless `alice`).
    http: (&'static str, String, Option<Value>, bool),
    /// The MCP server's flags, the tool and its arguments.
    mcp: (Vec<&'static str>, &'static str, Value),
    /// Environment of all three processes.
    env: Vec<(&'static str, &'static str)>,
}

impl Case {
    /// `messages | count` as an admin on every surface, failing with `code` (exit code 1).
    fn count(
        class: &'static str,
        code: &'static str,
        status: u16,
        env: Vec<(&'static str, &'static str)>,
    ) -> Case {
        let expression = "messages | count";
        Case {
            class,
            code,
            exit: 1,
            status,
            cli: vec![expression],
            http: (
                "GET",
                format!("/api/query-units?expression={}", encode(expression)),
                None,
                false,
            ),
            mcp: (
                vec!["--scope", "admin"],
                "query_units",
                json!({ "expression": expression }),
            ),
            env,
        }
    }
}

/// A query that runs for minutes on the fixture unless cancelled.
/// A query that runs far longer than a test's time limits on any machine: three messages
/// tables crossed (2·10^9 rows of the fixture) with arithmetic on each (22 s on an idle machine
/// here; a bare sum took 3.5 s, less than the 4 s one check waits).
const SLOW: &str = "SELECT count(*) FROM messages a, messages b, messages c WHERE a.word_count + b.word_count + c.word_count = -1 OR sqrt(CAST(a.word_count * b.word_count + c.word_count AS DOUBLE)) < -1 OR a.position * c.position = -7";

#[test]
fn every_error_class_has_one_code_on_every_surface() {
    let Some(f) = fixture() else { return };
    let a = f.archive.display().to_string();
    let cases = vec![
        Case {
            class: "usage",
            code: "invalid_query",
            exit: 2,
            status: 400,
            cli: vec!["messages where rol:assistant"],
            http: (
                "GET",
                format!(
                    "/api/query-units?expression={}",
                    encode("messages where rol:assistant")
                ),
                None,
                false,
            ),
            mcp: (
                vec!["--scope", "admin"],
                "query_units",
                json!({"expression": "messages where rol:assistant"}),
            ),
            env: vec![],
        },
        Case {
            class: "not_found",
            code: "not_found",
            exit: 2,
            status: 404,
            cli: vec!["sql", "SELECT * FROM no_such_table"],
            http: (
                "POST",
                "/api/query".into(),
                Some(json!({"sql": "SELECT * FROM no_such_table"})),
                false,
            ),
            mcp: (
                vec!["--scope", "admin"],
                "sql_query",
                json!({"sql": "SELECT * FROM no_such_table"}),
            ),
            env: vec![],
        },
        Case {
            class: "forbidden",
            code: "admin_only",
            exit: 2,
            status: 403,
            cli: vec!["--scope", "alice", "explain", "--plan", "messages | count"],
            http: (
                "GET",
                format!(
                    "/api/explain?plan=true&expression={}",
                    encode("messages | count")
                ),
                None,
                true,
            ),
            mcp: (
                vec!["--scope", "alice"],
                "explain",
                json!({"expression": "messages | count", "plan": true}),
            ),
            env: vec![],
        },
        Case {
            class: "timeout",
            code: "timeout",
            exit: 1,
            status: 408,
            cli: vec!["--timeout", "500ms", "sql", SLOW],
            http: (
                "POST",
                "/api/query".into(),
                Some(json!({"sql": SLOW, "timeout_ms": 500})),
                false,
            ),
            mcp: (
                vec!["--scope", "admin", "--timeout", "500ms"],
                "sql_query",
                json!({"sql": SLOW}),
            ),
            env: vec![],
        },
        Case::count(
            "internal",
            "internal",
            500,
            vec![("QUARRY_FAULT", "internal")],
        ),
    ];
    for case in &cases {
        check_case(&f, &a, case);
    }
    // Unavailable: the audit trail cannot record the query, so it does not run.
    let audit = f.archive.with_file_name("archive.audit.db");
    for leftover in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{leftover}", audit.display()));
    }
    std::fs::create_dir(&audit).unwrap();
    check_case(
        &f,
        &a,
        &Case::count("unavailable", "audit_failed", 503, vec![]),
    );
    std::fs::remove_dir(&audit).unwrap();
}

fn check_case(f: &crate::server::Fixture, a: &str, case: &Case) {
    let what = format!("{} ({})", case.class, case.code);
    // The command line: its class's exit code, the body on standard output.
    let mut args = vec!["--archive", a, "--tz", "UTC", "--format", "json"];
    args.extend(case.cli.iter().copied());
    let out = quarry_env(&args, &case.env);
    assert_eq!(
        out.status.code(),
        Some(case.exit),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(
        (body["code"].as_str(), body["class"].as_str()),
        (Some(case.code), Some(case.class)),
        "{what}: {body}"
    );
    assert_eq!(body["status"], case.status, "{what}");
    // HTTP: its class's status, the same body.
    let mut server = Server::start_with(&f.archive, &f.tokens, &[], &case.env);
    let (method, path, json_body, alice) = &case.http;
    let token = if *alice { &f.alice } else { &f.admin };
    let sent = json_body.as_ref().map(|b| b.to_string());
    let reply = request(
        method,
        &format!("{}{path}", server.base),
        Some(token),
        None,
        sent.as_deref().map(str::as_bytes),
    );
    assert_eq!(
        reply.status,
        case.status,
        "{what}: {}",
        String::from_utf8_lossy(&reply.body)
    );
    let http = reply.json();
    assert_eq!(
        (http["code"].as_str(), http["class"].as_str()),
        (Some(case.code), Some(case.class)),
        "{what}"
    );
    assert!(server.terminate());
    // MCP: a tool error with the same body.
    let (flags, tool, arguments) = &case.mcp;
    let mut mcp = Mcp::start(&f.archive, flags, &case.env);
    let result = mcp.tool(tool, arguments.clone());
    assert_eq!(result["isError"], true, "{what}: {result}");
    let structured = &result["structuredContent"];
    assert_eq!(
        (structured["code"].as_str(), structured["class"].as_str()),
        (Some(case.code), Some(case.class)),
        "{what}: {result}"
    );
    assert_eq!(structured["status"], case.status, "{what}");
    assert!(structured["jsonrpc_code"].is_i64(), "{what}: {structured}");
}

#[test]
fn an_edited_scopes_file_and_a_new_ingest_are_seen_at_the_next_request() {
    let Some(f) = fixture() else { return };
    let Some(corpus) = corpus() else { return };
    let mut server = Server::start(&f.archive, &f.tokens, &[]);
    let count = |token: &str, query: &str| -> i64 {
        let reply = units(&server, token, query);
        assert_eq!(
            reply.status,
            200,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
        reply.json()["rows"][0][0].as_i64().unwrap()
    };
    let alice_sessions = "SELECT count(*) FROM sessions WHERE owner = 'alice'";
    let wide = oracle_count(&f.archive, alice_sessions);
    assert_eq!(count(&f.alice, "sessions | count"), wide);
    // Narrow alice to one of her sessions' working directories, with no ingest in between.
    let cwd: String = crate::support::rows::sql_rows(
        &f.archive,
        "SELECT cwd FROM sessions WHERE owner = 'alice' AND cwd IS NOT NULL GROUP BY cwd ORDER BY count(*) LIMIT 1",
    )[0][0]
        .as_str()
        .unwrap()
        .to_string();
    let scopes = f.archive.with_file_name("scopes.toml");
    let original = std::fs::read_to_string(&scopes).unwrap();
    std::fs::write(
        &scopes,
        original.replace(
            "[scope.alice]\nowner = \"alice\"",
            &format!("[scope.alice]\nowner = \"alice\"\nsessions = \"cwd:{cwd}\""),
        ),
    )
    .unwrap();
    let narrow = oracle_count(
        &f.archive,
        &format!("SELECT count(*) FROM sessions WHERE owner = 'alice' AND cwd = '{cwd}'"),
    );
    assert!(narrow > 0 && narrow < wide, "{narrow} of {wide}");
    assert_eq!(count(&f.alice, "sessions | count"), narrow);
    let messages = oracle_count(
        &f.archive,
        &format!(
            "SELECT count(*) FROM messages JOIN sessions USING (session_id) WHERE owner = 'alice' AND cwd = '{cwd}' AND NOT hidden"
        ),
    );
    assert_eq!(count(&f.alice, "messages | count"), messages);
    std::fs::write(&scopes, &original).unwrap();
    assert_eq!(count(&f.alice, "sessions | count"), wide);

    // A new ingest while the server runs: seen at the next request, by admin and by alice.
    let admin_before = count(&f.admin, "sessions | count");
    let extra: PathBuf = corpus.join("claude-code/marot-spotter");
    ingest_with(&f.archive, &["--owner", "alice"], &[extra.as_path()]);
    let all = oracle_count(&f.archive, "SELECT count(*) FROM sessions");
    assert!(all > admin_before);
    assert_eq!(count(&f.admin, "sessions | count"), all);
    let now_alice = oracle_count(&f.archive, alice_sessions);
    assert!(now_alice > wide);
    assert_eq!(count(&f.alice, "sessions | count"), now_alice);
    let alice_messages = oracle_count(
        &f.archive,
        "SELECT count(*) FROM messages JOIN sessions USING (session_id) WHERE owner = 'alice' AND NOT hidden",
    );
    assert_eq!(count(&f.alice, "messages | count"), alice_messages);
    // And bob's rows still reach alice by no route.
    let bob = sql(
        &server,
        &f.alice,
        "SELECT count(*) FROM messages m JOIN sessions s USING (session_id) WHERE s.owner = 'bob'",
    );
    assert_eq!(bob.json()["rows"], json!([[0]]));
    assert!(server.terminate());
}

/// The audit trail's `requests` rows: (kind, target, status, code), oldest first.
fn audited_requests(archive: &Path) -> Vec<(String, String, String, Option<String>)> {
    let conn = rusqlite::Connection::open(archive.with_file_name("archive.audit.db")).unwrap();
    let mut statement = conn
        .prepare("SELECT kind, target, status, code FROM requests ORDER BY request_id")
        .unwrap();
    statement
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The audit trail's anonymous refusals: code → count.
fn audited_refusals(archive: &Path) -> std::collections::BTreeMap<String, i64> {
    let conn = rusqlite::Connection::open(archive.with_file_name("archive.audit.db")).unwrap();
    let mut statement = conn
        .prepare("SELECT code, sum(count) FROM refusals GROUP BY code")
        .unwrap();
    statement
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn a_refused_request_of_each_kind_is_in_the_audit_trail() {
    let Some(f) = fixture() else { return };
    // A token whose scope the scopes file does not define.
    let stray = add_token(&f.archive, &f.tokens, "stray", "demo");
    let scopes = f.archive.with_file_name("scopes.toml");
    let text = std::fs::read_to_string(&scopes).unwrap();
    std::fs::write(
        &scopes,
        text.replace("[scope.demo]\nsessions = \"cwd:/path/to/Demo\"\n", ""),
    )
    .unwrap();
    let mut server = Server::start(
        &f.archive,
        &f.tokens,
        &[
            "--max-concurrent",
            "1",
            "--max-body",
            "64KB",
            "--timeout",
            "20s",
        ],
    );
    let base = server.base.clone();
    // 401: no token, and a wrong one.
    assert_eq!(
        request("GET", &format!("{base}/api/tables"), None, None, None).status,
        401
    );
    assert_eq!(
        request(
            "GET",
            &format!("{base}/api/tables"),
            Some("qry_wrong"),
            None,
            None
        )
        .status,
        401
    );
    // 404: no such endpoint.
    assert_eq!(
        request("GET", &format!("{base}/api/nothing"), None, None, None).status,
        404
    );
    // 403: a scope that cannot be used.
    assert_eq!(units(&server, &stray, "messages | count").status, 403);
    // 413 and a bad body.
    let big = json!({"sql": format!("SELECT '{}'", "x".repeat(100_000))}).to_string();
    assert_eq!(
        request(
            "POST",
            &format!("{base}/api/query"),
            Some(&f.admin),
            None,
            Some(big.as_bytes())
        )
        .status,
        413
    );
    assert_eq!(
        request(
            "POST",
            &format!("{base}/api/query"),
            Some(&f.admin),
            None,
            Some(b"{not json")
        )
        .status,
        400
    );
    // Requests that run no query: explain, tables.
    let explained = request(
        "GET",
        &format!(
            "{base}/api/explain?expression={}",
            encode("messages | count")
        ),
        Some(&f.admin),
        None,
        None,
    );
    assert_eq!(explained.status, 200);
    assert_eq!(
        request(
            "GET",
            &format!("{base}/api/tables"),
            Some(&f.alice),
            None,
            None
        )
        .status,
        200
    );
    // A busy server: the one slot is taken by a slow query, the next request waits out its time.
    let (slow_base, token) = (base.clone(), f.admin.clone());
    let slow = std::thread::spawn(move || {
        let body = json!({"sql": SLOW, "timeout_ms": 4000}).to_string();
        request(
            "POST",
            &format!("{slow_base}/api/query"),
            Some(&token),
            None,
            Some(body.as_bytes()),
        )
    });
    std::thread::sleep(Duration::from_millis(700));
    let body = json!({"sql": "SELECT 1", "timeout_ms": 500}).to_string();
    let busy = request(
        "POST",
        &format!("{base}/api/query"),
        Some(&f.admin),
        None,
        Some(body.as_bytes()),
    );
    assert_eq!(busy.status, 503, "{}", String::from_utf8_lossy(&busy.body));
    assert_eq!(busy.json()["code"], "busy");
    assert!(
        busy.headers.to_ascii_lowercase().contains("retry-after"),
        "{}",
        busy.headers
    );
    assert_eq!(slow.join().unwrap().status, 408);
    // An archive that cannot be opened (moved away), then back.
    let moved = f.archive.with_file_name("moved.db");
    std::fs::rename(&f.archive, &moved).unwrap();
    let gone = units(&server, &f.admin, "messages | count");
    std::fs::rename(&moved, &f.archive).unwrap();
    assert_eq!(gone.status, 503, "{}", String::from_utf8_lossy(&gone.body));
    assert_eq!(gone.json()["code"], "missing_archive");
    assert_eq!(units(&server, &f.admin, "messages | count").status, 200);
    assert!(server.terminate());

    let requests = audited_requests(&f.archive);
    let has = |kind: &str, status: &str, code: Option<&str>| {
        requests
            .iter()
            .any(|(k, _, s, c)| k == kind && s == status && c.as_deref() == code)
    };
    for code in [
        "invalid_scope",
        "body_too_large",
        "bad_request",
        "busy",
        "missing_archive",
    ] {
        assert!(has("refused", "error", Some(code)), "{code}: {requests:?}");
    }
    assert!(has("explain", "ok", None), "{requests:?}");
    assert!(has("tables", "ok", None), "{requests:?}");
    let refusals = audited_refusals(&f.archive);
    assert_eq!(refusals.get("unauthorized"), Some(&2), "{refusals:?}");
    assert_eq!(refusals.get("not_found"), Some(&1), "{refusals:?}");
    // Queries keep their intents and outcomes: the slow one and the last count (the others
    // were refused before a query started).
    let (intents, outcomes) = crate::server::audit_counts(&f.archive, "ops");
    assert_eq!(intents, 2);
    assert_eq!(intents, outcomes);
}

/// Sends `n` requests without a token over one keep-alive connection; returns how many were
/// answered 401.
fn unauthenticated(address: &str, n: usize) -> usize {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut refused = 0;
    for _ in 0..n {
        stream
            .write_all(b"GET /api/tables HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        if status.contains(" 401 ") {
            refused += 1;
        }
    }
    refused
}

/// The bytes of the audit file and its write-ahead log.
fn audit_bytes(archive: &Path) -> u64 {
    ["", "-wal"]
        .iter()
        .map(|suffix| {
            std::fs::metadata(format!(
                "{}{suffix}",
                archive.with_file_name("archive.audit.db").display()
            ))
            .map(|m| m.len())
            .unwrap_or(0)
        })
        .sum()
}

/// The bound: 10,000 refusals are counted in a few rows, so the audit file and its log grow by
/// less than 128 KiB (recorded one by one they would be about 10,000 rows of some 100 bytes,
/// a megabyte, and many times that in the log).
const REFUSALS_GROWTH_BOUND: u64 = 128 * 1024;

#[test]
fn ten_thousand_unauthenticated_requests_grow_the_audit_file_by_a_bounded_amount() {
    let Some(f) = fixture() else { return };
    let mut server = Server::start(&f.archive, &f.tokens, &[]);
    // The file exists, with its tables, before the refusals come.
    assert_eq!(units(&server, &f.admin, "messages | count").status, 200);
    let before = audit_bytes(&f.archive);
    let address = server.base.trim_start_matches("http://").to_string();
    let refused = unauthenticated(&address, 10_000);
    assert_eq!(refused, 10_000);
    assert!(server.terminate());
    let after = audit_bytes(&f.archive);
    eprintln!(
        "10,000 unauthenticated requests grew the audit file by {} bytes",
        after.saturating_sub(before)
    );
    assert!(
        after.saturating_sub(before) < REFUSALS_GROWTH_BOUND,
        "the audit file grew by {} bytes",
        after.saturating_sub(before)
    );
    // Every refusal is counted, none lost, in a row per minute (the run may cross a minute).
    let refusals = audited_refusals(&f.archive);
    assert_eq!(refusals.get("unauthorized"), Some(&10_000), "{refusals:?}");
    let conn = rusqlite::Connection::open(f.archive.with_file_name("archive.audit.db")).unwrap();
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM refusals", [], |r| r.get(0))
        .unwrap();
    assert!(rows <= 3, "{rows} rows");
}

/// The rows of each table a reader of `owner` sees, by SQLite (hidden messages and the rows
/// naming them left out), and by quarry under that scope reading `source`.
fn reader_counts(archive: &Path, owner: &str, source: &str) -> Vec<(String, i64, i64)> {
    let a = archive.display().to_string();
    let mut out = Vec::new();
    for (table, oracle) in [
        (
            "messages",
            "SELECT count(*) FROM messages m JOIN sessions s USING (session_id) WHERE s.owner = ?1 AND NOT m.hidden",
        ),
        (
            "blocks",
            "SELECT count(*) FROM blocks b JOIN sessions s USING (session_id) WHERE s.owner = ?1 AND b.message_id NOT IN (SELECT message_id FROM messages WHERE hidden)",
        ),
        (
            "actions",
            "SELECT count(*) FROM actions a JOIN sessions s USING (session_id) WHERE s.owner = ?1 AND (a.message_id IS NULL OR a.message_id NOT IN (SELECT message_id FROM messages WHERE hidden))",
        ),
        ("sessions", "SELECT count(*) FROM sessions WHERE owner = ?1"),
        (
            "usage",
            "SELECT count(*) FROM usage u JOIN sessions s USING (session_id) WHERE s.owner = ?1 AND (u.message_id IS NULL OR u.message_id NOT IN (SELECT message_id FROM messages WHERE hidden))",
        ),
    ] {
        let conn = crate::support::open(archive);
        let want: i64 = conn.query_row(oracle, [owner], |r| r.get(0)).unwrap();
        let out_json = quarry(&[
            "--archive",
            &a,
            "--scope",
            "reader",
            "--source",
            source,
            "--format",
            "json",
            "sql",
            &format!("SELECT count(*) FROM {table}"),
        ]);
        assert!(
            out_json.status.success(),
            "{}",
            String::from_utf8_lossy(&out_json.stderr)
        );
        let got = serde_json::from_slice::<Value>(&out_json.stdout).unwrap()["rows"][0][0]
            .as_i64()
            .unwrap();
        out.push((table.to_string(), want, got));
    }
    out
}

#[test]
fn a_reader_of_every_session_sees_on_the_snapshot_what_sqlite_says() {
    let Some(corpus) = corpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    let files = corpus.join("claude-code/marot-spotter");
    ingest_with(&archive, &["--owner", "alice"], &[files.as_path()]);
    let a = archive.display().to_string();
    assert!(quarry(&["--archive", &a, "snapshot"]).status.success());
    let scopes = dir.path().join("scopes.toml");
    // Every session of the archive: the snapshot's tables owned by sessions need no filter.
    std::fs::write(&scopes, "[scope.reader]\nowner = \"alice\"\n").unwrap();
    let hidden =
        crate::server::oracle_count(&archive, "SELECT count(*) FROM messages WHERE hidden");
    assert!(hidden > 0, "the fixture has hidden messages to leave out");
    for source in ["snapshot", "sqlite"] {
        for (table, want, got) in reader_counts(&archive, "alice", source) {
            assert_eq!(got, want, "{table} on {source}");
        }
    }
    // A second owner: the reader sees part of the sessions, on both sources.
    let more = corpus.join("codex/jnarowski-agentcmd");
    ingest_with(&archive, &["--owner", "bob"], &[more.as_path()]);
    assert!(quarry(&["--archive", &a, "snapshot"]).status.success());
    for source in ["snapshot", "sqlite"] {
        for (table, want, got) in reader_counts(&archive, "alice", source) {
            assert_eq!(got, want, "{table} on {source}, with bob's sessions too");
        }
    }
}
