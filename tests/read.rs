//! Reading what was found: event windows and lineage traces on the real corpus, checked
//! against the source files themselves (each non-empty line of a Claude Code transcript is one
//! record, seq = its order; the record's type is its `type`, with `/subtype` for a system
//! record), and the errors of a read through the library and the CLI.

use std::path::{Path, PathBuf};

use quarry::read::WindowRequest;
use quarry::{Error, Quarry};

use crate::sql_scope::{open_as, two_owner_archive};
use crate::support::{corpus, ingest_with, quarry as run, runtime};

/// The orphan subagent: its parent's transcript is not in the corpus.
const ORPHAN: &str =
    "claude-code/marot-spotter/6c2214d7-b87e-4432-8e41-22ba294ea584/subagents/agent-afc096d.jsonl";
const ORPHAN_ID: &str = "claude-code-session:6c2214d7-b87e-4432-8e41-22ba294ea584/agent-afc096d";
const ORPHAN_PARENT: &str = "claude-code-session:6c2214d7-b87e-4432-8e41-22ba294ea584";
/// A parent whose subagents' transcripts sit in its folder.
const PARENT: &str = "claude-code/marot-spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46";
const PARENT_ID: &str = "claude-code-session:fa812bfe-b295-4cca-9c2f-fdf01028cb46";

/// The corpus archive, admin engine.
fn corpus_archive(dir: &Path) -> Option<(PathBuf, PathBuf, Quarry)> {
    let corpus = corpus()?;
    let archive = dir.join("archive.db");
    ingest_with(&archive, &["--owner", "test"], &[&corpus]);
    let q = open_as(&archive, "admin");
    Some((corpus, archive, q))
}

/// The records of a Claude Code transcript as the file holds them: (type, raw record).
fn records(file: &Path) -> Vec<(String, serde_json::Value)> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let kind = v["type"].as_str().unwrap().to_string();
            let kind = match (kind.as_str(), v["subtype"].as_str()) {
                ("system", Some(sub)) => format!("system/{sub}"),
                _ => kind,
            };
            (kind, v)
        })
        .collect()
}

fn window(
    q: &Quarry,
    session: &str,
    seq: i64,
    before: i64,
    after: i64,
) -> Result<quarry::read::EventWindow, Error> {
    runtime().block_on(q.read_window(&WindowRequest {
        session: session.into(),
        around: quarry::read::Around::Seq(seq),
        before,
        after,
        surfaces: Vec::new(),
    }))
}

#[test]
fn windows_at_the_start_middle_and_end_hold_the_files_records() {
    let dir = tempfile::tempdir().unwrap();
    let Some((corpus, _, q)) = corpus_archive(dir.path()) else {
        return;
    };
    let want = records(&corpus.join(ORPHAN));
    assert_eq!(want.len(), 199);
    // (seq, before, after) → the expected first and last seq, worked out from 199 records.
    for (seq, before, after, start, end) in [
        (0, 5, 5, 0, 5),
        (100, 3, 4, 97, 104),
        (198, 10, 10, 188, 198),
        (7, 0, 0, 7, 7),
        (3, 200, 200, 0, 198),
    ] {
        let w = window(&q, &format!("session:{ORPHAN_ID}"), seq, before, after).unwrap();
        assert_eq!((w.start_seq, w.end_seq), (start, end), "around {seq}");
        assert_eq!(w.target.seq, seq);
        assert_eq!(w.session.session_id, ORPHAN_ID);
        let seqs: Vec<i64> = w.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (start..=end).collect::<Vec<_>>());
        for e in &w.events {
            let (kind, raw) = &want[e.seq as usize];
            assert_eq!(&e.kind, kind, "seq {}", e.seq);
            // The admin scope gets the record as the file holds it.
            assert_eq!(e.payload.as_ref(), Some(raw), "seq {}", e.seq);
        }
    }
    // Around a message: the record it was read from. From the file: the first message is the
    // first `user` record, the second the first `assistant` record.
    let first_of = |kind: &str| want.iter().position(|(k, _)| k == kind).unwrap() as i64;
    let around = |message: String| {
        runtime().block_on(q.read_window(&WindowRequest {
            session: ORPHAN_ID.into(),
            around: quarry::read::Around::Message(message),
            before: 1,
            after: 1,
            surfaces: Vec::new(),
        }))
    };
    for (message, seq) in [("m0", first_of("user")), ("m1", first_of("assistant"))] {
        let w = around(format!("message:{ORPHAN_ID}/{message}")).unwrap();
        assert_eq!(w.target.seq, seq, "{message}");
        assert_eq!(
            w.target.messages[0].message_id,
            format!("{ORPHAN_ID}/{message}")
        );
    }
    let err = around(format!("{PARENT_ID}/m0")).unwrap_err();
    assert_eq!(
        err.code(),
        "not_found",
        "a message of another session: {err}"
    );
    // A native id and a unique prefix name the same session.
    let by_prefix = window(
        &q,
        "6c2214d7-b87e-4432-8e41-22ba294ea584/agent-afc",
        1,
        0,
        0,
    )
    .unwrap();
    assert_eq!(by_prefix.session.session_id, ORPHAN_ID);
    // The errors, typed.
    let err = window(&q, ORPHAN_ID, 199, 1, 1).unwrap_err();
    assert_eq!(
        (err.code(), err.class()),
        ("event_not_found", quarry::ErrorClass::NotFound)
    );
    for (before, after) in [(201, 0), (0, 201), (-1, 0)] {
        let err = window(&q, ORPHAN_ID, 5, before, after).unwrap_err();
        assert_eq!(err.code(), "invalid_window", "{before} {after}: {err}");
        assert_eq!(err.class(), quarry::ErrorClass::Usage);
    }
    let err = window(&q, "session:no-such-session", 0, 0, 0).unwrap_err();
    assert_eq!(err.code(), "session_not_found");
    let err = window(&q, &format!("message:{ORPHAN_ID}/m0"), 0, 0, 0).unwrap_err();
    assert_eq!(err.code(), "bad_request", "{err}");
    // A prefix of a session and its subagents names the session; of unrelated sessions, none.
    let parent = window(&q, "claude-code-session:fa812bfe", 0, 0, 0).unwrap();
    assert_eq!(parent.session.session_id, PARENT_ID);
    let err = window(&q, "claude-code-session:", 0, 0, 0).unwrap_err();
    assert_eq!(err.code(), "bad_request", "{err}");
    assert!(err.to_string().contains("is the start of"), "{err}");
}

#[test]
fn lineage_follows_parents_and_subagents_and_says_where_the_chain_leaves_the_archive() {
    let dir = tempfile::tempdir().unwrap();
    let Some((corpus, _, q)) = corpus_archive(dir.path()) else {
        return;
    };
    let rt = runtime();
    // The orphan: its parent is not in the archive.
    let trace = rt.block_on(q.lineage(ORPHAN_ID)).unwrap();
    assert!(!trace.complete);
    assert_eq!(trace.unresolved_parent_id.as_deref(), Some(ORPHAN_PARENT));
    assert!(trace.root.is_none() && trace.ancestors.is_empty());
    let json = serde_json::to_value(&trace).unwrap();
    assert_eq!(json["unresolvedParentId"], ORPHAN_PARENT);
    assert!(json.get("root").is_none());
    // The parent: its descendants are the transcripts in its subagents folder.
    let mut subagents: Vec<String> = std::fs::read_dir(corpus.join(PARENT).join("subagents"))
        .unwrap()
        .map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            format!("{PARENT_ID}/{}", name.trim_end_matches(".jsonl"))
        })
        .collect();
    subagents.sort();
    assert_eq!(subagents.len(), 3);
    let trace = rt
        .block_on(q.lineage(&format!("session:{PARENT_ID}")))
        .unwrap();
    assert!(trace.complete);
    assert_eq!(trace.root.as_ref().unwrap().header.session_id, PARENT_ID);
    let mut children: Vec<String> = trace
        .descendants
        .iter()
        .map(|n| n.session.header.session_id.clone())
        .collect();
    children.sort();
    assert_eq!(children, subagents);
    // A child: its parent is its ancestor and the root.
    let trace = rt.block_on(q.lineage(&subagents[0])).unwrap();
    assert!(trace.complete);
    let ancestors: Vec<&str> = trace
        .ancestors
        .iter()
        .map(|a| a.header.session_id.as_str())
        .collect();
    assert_eq!(ancestors, [PARENT_ID]);
    assert_eq!(trace.root.unwrap().header.session_id, PARENT_ID);
    assert!(trace.descendants.is_empty());
}

#[test]
fn a_reader_gets_for_another_scopes_session_what_a_missing_one_gets_and_no_payloads() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = two_owner_archive(dir.path()) else {
        return;
    };
    let rt = runtime();
    let conn = rusqlite::Connection::open(&archive).unwrap();
    let owned = |owner: &str| -> String {
        conn.query_row(
            "SELECT session_id FROM sessions WHERE owner = ?1 ORDER BY session_id LIMIT 1",
            [owner],
            |r| r.get(0),
        )
        .unwrap()
    };
    let (alices, bobs) = (owned("alice"), owned("bob"));
    let alice = open_as(&archive, "alice");
    // Bob's session, by id, by prefix and for its lineage, is what an absent one is.
    let absent = format!("{bobs}-absent");
    for (asked, read) in [(&bobs, &bobs), (&absent, &absent)] {
        let err = window(&alice, read, 0, 0, 0).unwrap_err();
        assert_eq!(err.code(), "session_not_found");
        assert_eq!(
            err.to_string().replace(asked.as_str(), "X"),
            "no session `X` in this scope"
        );
        let err = rt.block_on(alice.lineage(read)).unwrap_err();
        assert_eq!(err.code(), "session_not_found");
    }
    let prefix = &bobs[..bobs.len() - 4];
    assert_eq!(
        window(&alice, prefix, 0, 0, 0).unwrap_err().code(),
        "session_not_found"
    );
    // Her own: the records without their raw payloads, the same seqs as the admin's.
    let mine = window(&alice, &alices, 1, 1, 1).unwrap();
    assert!(mine.events.iter().all(|e| e.payload.is_none()));
    let admin = window(&open_as(&archive, "admin"), &alices, 1, 1, 1).unwrap();
    assert!(admin.events.iter().all(|e| e.payload.is_some()));
    let seqs = |w: &quarry::read::EventWindow| {
        w.events
            .iter()
            .map(|e| (e.seq, e.kind.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(seqs(&mine), seqs(&admin));
    // Reads are audited.
    let records = open_as(&archive, "admin").audit_records(50).unwrap();
    assert!(
        records
            .iter()
            .any(|r| r.language == "read" && r.scope == "alice" && r.query.starts_with("read ")),
        "{records:?}"
    );
}

#[test]
fn the_cli_reads_windows_and_lineage_and_exits_with_each_errors_class() {
    let dir = tempfile::tempdir().unwrap();
    let Some((_, archive, _)) = corpus_archive(dir.path()) else {
        return;
    };
    let archive = archive.to_str().unwrap();
    let out = run(&[
        "--archive",
        archive,
        "--format",
        "json",
        "read",
        ORPHAN_ID,
        "--around",
        "10",
        "--before",
        "2",
        "--after",
        "2",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let w: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (w["startSeq"].as_i64(), w["endSeq"].as_i64()),
        (Some(8), Some(12))
    );
    assert_eq!(w["target"]["seq"], 10);
    let out = run(&["--archive", archive, "read", ORPHAN_ID, "--lineage"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("incomplete: parent {ORPHAN_PARENT}")),
        "{text}"
    );
    for (args, code) in [
        (
            vec!["read", ORPHAN_ID, "--around", "500"],
            "event_not_found",
        ),
        (
            vec!["read", ORPHAN_ID, "--around", "5", "--before", "201"],
            "invalid_window",
        ),
        (
            vec!["read", "no-such-session", "--lineage"],
            "session_not_found",
        ),
    ] {
        let mut all = vec!["--archive", archive, "--format", "json"];
        all.extend(args);
        let out = run(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        let body: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(body["code"], code, "{body}");
    }
    // Neither: the transcript; a window's flag with a transcript's is a usage error.
    let out = run(&["--archive", archive, "read", ORPHAN_ID, "--page-size", "3"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[m0] user") && text.contains("(more: --cursor "),
        "{text}"
    );
    let out = run(&[
        "--archive",
        archive,
        "read",
        ORPHAN_ID,
        "--lineage",
        "--markdown",
    ]);
    assert_eq!(out.status.code(), Some(2));
    // A message is shown in its context (3 messages on each side); `--resolve` resolves it,
    // and a ref of another kind is resolved without the flag.
    let message = format!("message:{ORPHAN_ID}/m5");
    let out = run(&["--archive", archive, "--format", "json", "read", &message]);
    assert!(out.status.success());
    let page: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(page["focus"], format!("{ORPHAN_ID}/m5"));
    let positions = crate::support::ints_of(&page["messages"], "position");
    assert_eq!(positions, (2..=8).collect::<Vec<i64>>());
    let out = run(&["--archive", archive, "read", &message]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[m5] ")
            && text
                .lines()
                .any(|l| l.starts_with("[m5]") && l.ends_with("◀")),
        "{text}"
    );
    let out = run(&[
        "--archive",
        archive,
        "--format",
        "json",
        "read",
        &message,
        "--resolve",
    ]);
    assert!(out.status.success());
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (r["resolved"].clone(), r["session_id"].clone()),
        (true.into(), ORPHAN_ID.into())
    );
    let run_ref = format!("run:{ORPHAN_ID}");
    let out = run(&["--archive", archive, "--format", "json", "read", &run_ref]);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["kind"], "run", "{r}");
    // A message no scope holds is not_found.
    let out = run(&[
        "--archive",
        archive,
        "--format",
        "json",
        "read",
        "message:no-such/m0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let body: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "not_found", "{body}");
}

#[test]
fn http_reads_in_the_tokens_scope_with_each_errors_status() {
    use crate::server::{Server, encode, fixture, request};
    let Some(f) = fixture() else { return };
    let conn = rusqlite::Connection::open(&f.archive).unwrap();
    let first = |owner: &str| -> (String, i64) {
        conn.query_row(
            "SELECT s.session_id, count(*) FROM sessions s JOIN events_raw e \
             ON e.session_id = s.session_id WHERE s.owner = ?1 \
             GROUP BY s.session_id ORDER BY s.session_id LIMIT 1",
            [owner],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    };
    let ((alices, records), (bobs, _)) = (first("alice"), first("bob"));
    let server = Server::start(&f.archive, &f.tokens, &[]);
    let get = |token: &str, query: &str| {
        request(
            "GET",
            &format!("{}/api/read?{query}", server.base),
            Some(token),
            None,
            None,
        )
    };
    let reply = get(
        &f.alice,
        &format!(
            "ref={}&around=1&before=1&after=2",
            encode(&format!("session:{alices}"))
        ),
    );
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let w = reply.json();
    let want: Vec<i64> = (0..=3.min(records - 1)).collect();
    assert_eq!(crate::support::ints_of(&w["events"], "seq"), want);
    assert!(
        w["events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["payload"].is_null())
    );
    // The admin token reads the raw records.
    let w = get(
        &f.admin,
        &format!("ref={}&around=0&before=0&after=0", encode(&alices)),
    )
    .json();
    assert!(w["target"]["payload"].is_object(), "{w}");
    let lineage = get(&f.alice, &format!("ref={}&lineage=true", encode(&alices)));
    assert_eq!(lineage.status, 200);
    assert_eq!(
        lineage.json()["target"]["header"]["session_id"],
        alices.as_str()
    );
    // The resolver: her session, and bob's as an absent one.
    let resolve = |token: &str, r: &str| {
        request(
            "GET",
            &format!("{}/api/refs/resolve?ref={}", server.base, encode(r)),
            Some(token),
            None,
            None,
        )
        .json()
    };
    assert_eq!(
        resolve(&f.alice, &format!("session:{alices}"))["resolved"],
        true
    );
    let theirs = resolve(&f.alice, &format!("session:{bobs}"));
    assert_eq!(
        (theirs["resolved"].clone(), theirs["reason"].clone()),
        (false.into(), "not_found".into())
    );
    assert_eq!(
        resolve(&f.admin, &format!("session:{bobs}"))["resolved"],
        true
    );
    // Her transcript, a page at a time.
    let page = get(&f.alice, &format!("ref={}&limit=2", encode(&alices))).json();
    assert_eq!(page["session"]["session_id"], alices.as_str());
    assert!(page["messages"].as_array().unwrap().len() <= 2);
    // Errors: her scope does not hold bob's session (as an absent one), a seq past the end,
    // a window too wide, neither a window nor a lineage.
    for (token, query, status, code) in [
        (
            &f.alice,
            format!("ref={}&lineage=true", encode(&bobs)),
            404,
            "session_not_found",
        ),
        (
            &f.alice,
            "ref=no-such-session&lineage=true".to_string(),
            404,
            "session_not_found",
        ),
        (
            &f.alice,
            format!("ref={}&around={records}", encode(&alices)),
            404,
            "event_not_found",
        ),
        (
            &f.alice,
            format!("ref={}&around=0&after=201", encode(&alices)),
            400,
            "invalid_window",
        ),
        (
            &f.alice,
            format!("ref={}&limit=5&lineage=true", encode(&alices)),
            400,
            "bad_request",
        ),
        (
            &f.alice,
            format!("ref={}&limit=0", encode(&alices)),
            400,
            "invalid_limit",
        ),
        (
            &f.alice,
            format!("ref={}&cursor=junk", encode(&alices)),
            409,
            "invalid_cursor",
        ),
        (
            &f.alice,
            format!("ref={}&lineage=true&colour=blue", encode(&alices)),
            400,
            "bad_request",
        ),
    ] {
        let reply = get(token, &query);
        assert_eq!(
            (reply.status, reply.json()["code"].clone()),
            (status, code.into()),
            "{query}"
        );
    }
}

/// Every page of a transcript, walked with its cursors (`size` messages a page).
fn transcript_pages(q: &Quarry, session: &str, size: usize) -> Vec<quarry::read::Transcript> {
    let mut pages = Vec::new();
    let mut cursor = None;
    loop {
        let page = runtime()
            .block_on(q.read(&quarry::read::ReadRequest::Transcript(
                quarry::read::TranscriptRequest {
                    session: session.into(),
                    page_size: Some(size),
                    cursor: cursor.take(),
                },
            )))
            .unwrap();
        let quarry::read::ReadAnswer::Transcript(page) = page else {
            panic!("not a transcript")
        };
        cursor = page.next_cursor.clone();
        pages.push(page);
        if cursor.is_none() {
            return pages;
        }
        assert!(pages.len() < 1000);
    }
}

#[test]
fn a_transcript_nests_each_subagent_where_it_was_started_and_marks_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let Some((corpus, archive, q)) = corpus_archive(dir.path()) else {
        return;
    };
    let pages = transcript_pages(&q, PARENT_ID, 37);
    assert!(pages.len() > 2);
    // The pages hold every message once, in order (SQLite's positions).
    let conn = rusqlite::Connection::open(&archive).unwrap();
    let want: Vec<i64> = conn
        .prepare("SELECT position FROM messages WHERE session_id = ?1 ORDER BY position")
        .unwrap()
        .query_map([PARENT_ID], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let got: Vec<i64> = pages
        .iter()
        .flat_map(|p| p.messages.iter().map(|m| m.position))
        .collect();
    assert_eq!(got, want);
    // The parent file: each Task call's prompt and the time its message began (an API message
    // spans several lines sharing `message.id`; the first line's time is the message's).
    let parent = records(&corpus.join(format!("{PARENT}.jsonl")));
    let began = |id: &serde_json::Value| -> i64 {
        let first = parent
            .iter()
            .find(|(_, v)| !id.is_null() && v["message"]["id"] == *id)
            .map(|(_, v)| v["timestamp"].as_str().unwrap_or(""))
            .unwrap_or("");
        chrono::DateTime::parse_from_rfc3339(first)
            .map(|t| t.timestamp_millis())
            .unwrap_or(-1)
    };
    let calls: Vec<(String, i64)> = parent
        .iter()
        .flat_map(|(_, v)| {
            let time = began(&v["message"]["id"]);
            v["message"]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b["type"] == "tool_use" && b["name"] == "Task")
                .map(move |b| (b["input"]["prompt"].as_str().unwrap().to_string(), time))
        })
        .collect();
    // Each subagent's transcript is nested at the call that started it: its first message is
    // the subagent file's first prompt, under the message of the call's time.
    let nested: Vec<(
        &quarry::read::transcript::TranscriptMessage,
        &quarry::read::transcript::Subagent,
    )> = pages
        .iter()
        .flat_map(|p| p.messages.iter())
        .flat_map(|m| {
            m.blocks
                .iter()
                .filter_map(move |b| b.subagent.as_deref().map(|s| (m, s)))
        })
        .collect();
    let files: Vec<PathBuf> = std::fs::read_dir(corpus.join(PARENT).join("subagents"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let mut shown = 0;
    for file in &files {
        let name = file.file_stem().unwrap().to_str().unwrap();
        let child = format!("{PARENT_ID}/{name}");
        let first = records(file)[0].1["message"]["content"]
            .as_str()
            .unwrap()
            .to_string();
        let Some(&(message, sub)) = nested
            .iter()
            .find(|(_, s)| s.child_session_id.as_deref() == Some(child.as_str()))
        else {
            // A compaction's summarizer is no Task call of the parent.
            assert!(
                !calls.iter().any(|(prompt, _)| *prompt == first),
                "{child} not nested"
            );
            continue;
        };
        let transcript = sub.transcript.as_ref().unwrap();
        assert_eq!(transcript.session.session_id, child);
        assert_eq!(transcript.messages[0].blocks[0].text, first, "{child}");
        let (_, time) = calls.iter().find(|(prompt, _)| *prompt == first).unwrap();
        assert_eq!(message.time, Some(*time), "{child}: the delegating message");
        shown += 1;
    }
    assert_eq!(shown, calls.len());
    assert!(shown >= 2);
    // The compaction the file records is marked.
    let boundaries = parent
        .iter()
        .filter(|(kind, _)| kind == "system/compact_boundary")
        .count();
    let listed: usize = pages.iter().map(|p| p.compactions.len()).sum();
    assert_eq!(listed, boundaries);
    assert!(boundaries >= 1);
    // Each on the page where it happened: after the page's first message began, by its last.
    for (i, page) in pages.iter().enumerate() {
        for c in &page.compactions {
            let last = page.messages.last().unwrap().time;
            assert!(i + 1 == pages.len() || c.time <= last, "page {i}");
            assert!(i == 0 || c.time > pages[i - 1].messages.last().unwrap().time);
        }
    }
    let compacted = pages.iter().find(|p| !p.compactions.is_empty()).unwrap();
    let text = quarry::read::transcript::render(compacted, false, false);
    assert!(text.contains("──── context compacted:"), "{text}");
    let text = quarry::read::transcript::render(&pages[0], false, false);
    assert!(text.contains("↳ subagent"), "{text}");
    // A cursor of another session is refused.
    let other = transcript_pages(&q, ORPHAN_ID, 1000);
    assert_eq!(other.len(), 1);
    let err = runtime()
        .block_on(q.read(&quarry::read::ReadRequest::Transcript(
            quarry::read::TranscriptRequest {
                session: ORPHAN_ID.into(),
                page_size: Some(37),
                cursor: pages[0].next_cursor.clone(),
            },
        )))
        .unwrap_err();
    assert_eq!(err.code(), "invalid_cursor");
}

#[test]
fn a_readers_transcript_and_window_show_no_credential() {
    let dir = tempfile::tempdir().unwrap();
    let (archive, api_key, bearer) = crate::sql_scope::secret_archive(dir.path());
    let session = "claude-code-session:5ec2e7a1-0000-4000-8000-000000000001";
    let admin = transcript_pages(&open_as(&archive, "admin"), session, 100);
    let admin = serde_json::to_string(&admin[0]).unwrap();
    assert!(
        admin.contains(&bearer),
        "the admin reads the command as written"
    );
    let alice = open_as(&archive, "alice");
    let pages = transcript_pages(&alice, session, 100);
    let json = serde_json::to_string(&pages[0]).unwrap();
    assert!(!pages[0].messages.is_empty());
    for secret in [&api_key, &bearer] {
        assert!(
            !json.contains(secret.as_str()),
            "a credential in her transcript: {json}"
        );
        let text = quarry::read::transcript::render(&pages[0], true, true);
        assert!(!text.contains(secret.as_str()));
    }
    // The record the source never shows the user is the admin's only.
    assert!(admin.contains("Caveat: the messages below"));
    assert!(
        !json.contains("Caveat: the messages below"),
        "a hidden message in her transcript"
    );
    let w = window(&alice, session, 1, 5, 5).unwrap();
    let json = serde_json::to_string(&w).unwrap();
    assert!(!json.contains(&api_key) && !json.contains(&bearer));
    // Her window shows what each record produced, masked: the tool result (record 3) holds
    // the key for the admin and its mask for her (records: meta, prompt, call, result, reply).
    let result_of = |w: &quarry::read::EventWindow| -> String {
        let event = w.events.iter().find(|e| e.seq == 3).unwrap();
        let block = event.messages[0]
            .blocks
            .iter()
            .find(|b| b.kind == "tool_result")
            .unwrap();
        block.text.clone()
    };
    assert!(
        result_of(&w).contains("OPENAI_API_KEY=[REDACTED:"),
        "{}",
        result_of(&w)
    );
    let admin_window = window(&open_as(&archive, "admin"), session, 1, 5, 5).unwrap();
    assert!(result_of(&admin_window).contains(&api_key));
    assert!(w.events.iter().all(|e| e.payload.is_none()));
}

fn resolve(q: &Quarry, reference: &str) -> quarry::read::Resolution {
    match runtime()
        .block_on(q.read(&quarry::read::ReadRequest::Resolve(reference.into())))
        .unwrap()
    {
        quarry::read::ReadAnswer::Resolution(r) => r,
        _ => panic!("not a resolution"),
    }
}

#[test]
fn every_kind_of_ref_resolves_to_its_row_and_a_delegation_to_its_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let Some((corpus, archive, q)) = corpus_archive(dir.path()) else {
        return;
    };
    let conn = rusqlite::Connection::open(&archive).unwrap();
    let one = |sql: &str| -> String { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    for (kind, table, column) in [
        ("message", "messages", "message_id"),
        ("block", "blocks", "block_id"),
        ("action", "actions", "action_id"),
        ("delegation", "delegations", "delegation_id"),
        ("run", "runs", "run_id"),
        ("observed-event", "observed_events", "event_id"),
        ("context-snapshot", "context_snapshots", "snapshot_id"),
    ] {
        let id = one(&format!(
            "SELECT {column} FROM {table} ORDER BY {column} LIMIT 1"
        ));
        let r = resolve(&q, &format!("{kind}:{id}"));
        assert!(r.resolved, "{kind}:{id}: {r:?}");
        assert_eq!(r.kind, Some(kind));
        assert_eq!(r.object.as_ref().unwrap()[column], id.as_str());
        let missing = resolve(&q, &format!("{kind}:{id}-absent"));
        assert_eq!(
            (missing.resolved, missing.reason),
            (false, Some("not_found"))
        );
    }
    // A message: SQLite's row, its long text cut with a caveat.
    let (message, text): (String, String) = conn
        .query_row(
            "SELECT message_id, text FROM messages WHERE length(text) > 4000 LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let r = resolve(&q, &format!("message:{message}"));
    let got = r.object.as_ref().unwrap()["text"].as_str().unwrap();
    assert_eq!(got, text.chars().take(4000).collect::<String>());
    assert!(
        r.caveats.iter().any(|c| c.contains("`text` cut at 4000")),
        "{r:?}"
    );
    // A delegation's card: the whole instruction (the subagent file's first prompt), the
    // parent's tool result and the child's last reply, bounded.
    let child = format!("{PARENT_ID}/agent-a93ccab");
    let delegation = one(&format!(
        "SELECT delegation_id FROM delegations WHERE child_session_id = '{child}'"
    ));
    let r = resolve(&q, &format!("delegation:{delegation}"));
    let card = r.evidence.unwrap();
    let file = corpus.join(PARENT).join("subagents/agent-a93ccab.jsonl");
    let prompt = records(&file)[0].1["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(card.instruction.as_deref(), Some(prompt.as_str()));
    let result = one(&format!(
        "SELECT b.text FROM blocks b WHERE b.session_id = '{PARENT_ID}' AND b.type = 'tool_result' \
         AND '{PARENT_ID}/' || b.tool_id = '{delegation}'"
    ));
    let dispatch = card.dispatch_result.unwrap();
    assert_eq!(dispatch.text, result.chars().take(2000).collect::<String>());
    assert_eq!(dispatch.truncated, result.chars().count() > 2000);
    let reply = one(&format!(
        "SELECT text FROM messages WHERE session_id = '{child}' AND role = 'assistant' \
         AND text <> '' ORDER BY position DESC LIMIT 1"
    ));
    assert_eq!(card.child_excerpt.unwrap().chars, reply.chars().count());
    // The parent's windows: the three messages before the delegating one, and the three after
    // the one holding its result, each text cut at 1,000 characters.
    let ids = |sql: String| -> Vec<String> {
        conn.prepare(&sql)
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let call_at = format!(
        "(SELECT m.position FROM delegations d JOIN messages m ON m.message_id = d.parent_message_id \
         WHERE d.delegation_id = '{delegation}')"
    );
    let result_at = format!(
        "(SELECT min(m.position) FROM blocks b JOIN messages m ON m.message_id = b.message_id \
         WHERE b.session_id = '{PARENT_ID}' AND b.type = 'tool_result' \
         AND '{PARENT_ID}/' || b.tool_id = '{delegation}')"
    );
    let mut before = ids(format!(
        "SELECT message_id FROM messages WHERE session_id = '{PARENT_ID}' AND position < {call_at} \
         ORDER BY position DESC LIMIT 3"
    ));
    before.reverse();
    let after = ids(format!(
        "SELECT message_id FROM messages WHERE session_id = '{PARENT_ID}' AND position > {result_at} \
         ORDER BY position LIMIT 3"
    ));
    let got = |w: &quarry::read::resolve::ParentWindow| -> Vec<String> {
        w.messages.iter().map(|m| m.message_id.clone()).collect()
    };
    assert_eq!(got(&card.parent_context), before);
    assert_eq!(got(&card.parent_follow_up), after);
    assert_eq!(before.len(), 3);
    assert!(card.parent_context.truncated && card.parent_follow_up.truncated);
    assert!(
        card.parent_context
            .messages
            .iter()
            .chain(&card.parent_follow_up.messages)
            .all(|m| m.text.text.chars().count() <= 1000)
    );
    // A session ref, a bare id, and text that names nothing.
    assert!(resolve(&q, &format!("session:{PARENT_ID}")).resolved);
    let bare = resolve(&q, "fa812bfe");
    assert_eq!(bare.session_id.as_deref(), Some(PARENT_ID));
    let nothing = resolve(&q, "no such thing");
    assert_eq!(
        (nothing.resolved, nothing.reason),
        (false, Some("not_found"))
    );
}

#[test]
fn a_reader_resolves_another_scopes_objects_as_missing_ones() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = two_owner_archive(dir.path()) else {
        return;
    };
    let conn = rusqlite::Connection::open(&archive).unwrap();
    let message = |owner: &str| -> String {
        conn.query_row(
            "SELECT m.message_id FROM messages m JOIN sessions s ON s.session_id = m.session_id \
             WHERE s.owner = ?1 AND NOT m.hidden ORDER BY m.message_id LIMIT 1",
            [owner],
            |r| r.get(0),
        )
        .unwrap()
    };
    let alice = open_as(&archive, "alice");
    let mine = resolve(&alice, &format!("message:{}", message("alice")));
    assert!(mine.resolved);
    let bobs = format!("message:{}", message("bob"));
    let theirs = serde_json::to_value(resolve(&alice, &bobs)).unwrap();
    let absent = serde_json::to_value(resolve(&alice, "message:absent/m0")).unwrap();
    let without_ref = |mut v: serde_json::Value| {
        v.as_object_mut().unwrap().remove("ref");
        v
    };
    assert_eq!(without_ref(theirs), without_ref(absent));
    assert!(resolve(&open_as(&archive, "admin"), &bobs).resolved);
}
