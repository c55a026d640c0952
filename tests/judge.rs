//! The assertion lifecycle (docs/judgments.md), end to end through the binary: machine claims
//! land as private candidates, `quarry judge` judges them and shows the queue, a judgment
//! survives re-import, statuses outside the vocabulary are refused, old archives migrate, and a
//! reader scope sees its sessions' claims but not other authors' candidates. Every expectation
//! is written from the fixture by hand or read back from the archive with plain SQL.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::rows::sql_rows;
use crate::support::{generate, ingest_with, open, quarry, quarry_json, scalar, text};

/// Two generated sessions, owned by alice and bob, and a scopes file naming both owners.
/// Returns (archive, alice's session, bob's session, a message of alice's session).
fn two_owners(dir: &Path) -> (PathBuf, String, String, String) {
    let archive = dir.join("archive.db");
    for (owner, seed) in [("alice", 11), ("bob", 12)] {
        let corpus = dir.join(format!("corpus-{owner}"));
        generate(&corpus, 1, seed);
        ingest_with(&archive, &["--owner", owner], &[&corpus]);
    }
    std::fs::write(
        dir.join("scopes.toml"),
        "[scope.alice]\nowner = \"alice\"\n\n[scope.bob]\nowner = \"bob\"\n",
    )
    .unwrap();
    let conn = open(&archive);
    let of = |owner: &str| -> String {
        text(
            &conn,
            "SELECT session_id FROM sessions WHERE owner = ?1 AND parent_session_id IS NULL
             ORDER BY session_id LIMIT 1",
            [owner],
        )
    };
    let (alice, bob) = (of("alice"), of("bob"));
    let message: String = text(
        &conn,
        "SELECT message_id FROM messages WHERE session_id = ?1 ORDER BY position LIMIT 1",
        [&alice],
    );
    (archive, alice, bob, message)
}

/// `quarry --scope SCOPE --format json ARGS...` on `archive`, asserting success.
fn as_scope(archive: &str, scope: &str, args: &[&str]) -> Value {
    let mut all = vec!["--archive", archive, "--scope", scope, "--format", "json"];
    all.extend_from_slice(args);
    quarry_json(&all)
}

fn import(archive: &Path, lines: &[Value]) -> Value {
    let file = archive.with_file_name(format!(
        "claims-{}.jsonl",
        blake3::hash(format!("{lines:?}").as_bytes()).to_hex()
    ));
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, text).unwrap();
    quarry_json(&[
        "--archive",
        archive.to_str().unwrap(),
        "--format",
        "json",
        "assertions",
        "import",
        file.to_str().unwrap(),
    ])
}

/// `(status, visibility, context_policy, session_id, target_ref)` of one stored assertion.
fn stored(archive: &Path, id: &str) -> (String, String, Value, Option<String>, String) {
    open(archive)
        .query_row(
            "SELECT status, visibility, context_policy, session_id, target_ref FROM assertions
             WHERE assertion_id = ?1",
            [id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    serde_json::from_str(&r.get::<_, String>(2)?).unwrap(),
                    r.get(3)?,
                    r.get(4)?,
                ))
            },
        )
        .unwrap()
}

fn judge(archive: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec![
        "--archive",
        archive.to_str().unwrap(),
        "--format",
        "json",
        "judge",
    ];
    all.extend_from_slice(args);
    quarry(&all)
}

fn judge_json(archive: &Path, args: &[&str]) -> Value {
    let out = judge(archive, args);
    assert!(
        out.status.success(),
        "judge {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn ids(rows: &Value) -> Vec<String> {
    rows["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["assertion_ref"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn machine_claims_are_candidates_and_each_judgment_does_what_the_spec_says() {
    let dir = tempfile::tempdir().unwrap();
    let (archive, alice, bob, message) = two_owners(dir.path());
    let summary = import(
        &archive,
        &[
            serde_json::json!({"assertion_id": "c-accept", "target_ref": alice, "kind": "decision",
                "key": "storage", "value": "sqlite", "body_text": "the archive is SQLite",
                "author_kind": "agent", "author_ref": "detector:a",
                "evidence_refs": [format!("message:{message}"), "message:no-such-message"]}),
            serde_json::json!({"assertion_id": "c-reject", "target_ref": format!("session:{bob}"),
                "kind": "caveat", "body_text": "tests are flaky", "author_kind": "detector",
                "status": "active"}),
            serde_json::json!({"assertion_id": "c-defer", "target_ref": format!("message:{message}"),
                "kind": "decision", "body_text": "maybe"}),
            serde_json::json!({"assertion_id": "c-supersede", "target_ref": alice, "kind": "summary",
                "body_text": "first draft", "author_kind": "agent"}),
            serde_json::json!({"assertion_id": "t-machine", "target_ref": bob, "kind": "tag",
                "key": "tag", "value": "machine-tag", "author_kind": "agent"}),
            serde_json::json!({"assertion_id": "u-note", "target_ref": alice, "kind": "note",
                "body_text": "mine", "author_kind": "user"}),
        ],
    );
    assert_eq!(summary["imported"], 6, "{summary}");
    assert_eq!(summary["candidates"], 4, "{summary}");
    // Machine claims: private candidates, not injected, waiting (an import's own `active` too).
    let candidate_policy = serde_json::json!({"inject": false, "promotion_required": true});
    for id in ["c-accept", "c-reject", "c-defer", "c-supersede"] {
        let (status, visibility, policy, _, _) = stored(&archive, id);
        assert_eq!(
            (status.as_str(), visibility.as_str(), &policy),
            ("candidate", "private", &candidate_policy),
            "{id}"
        );
    }
    // Tags opt out, and a user's claim keeps its status.
    let trusted = serde_json::json!({"inject": true, "promotion_required": false});
    assert_eq!(stored(&archive, "t-machine").0, "active");
    assert_eq!(stored(&archive, "t-machine").2, trusted);
    assert_eq!(stored(&archive, "u-note").0, "active");
    let tags: String = text(
        &open(&archive),
        "SELECT tags FROM sessions WHERE session_id = ?1",
        [&bob],
    );
    assert_eq!(tags, r#"["machine-tag"]"#);
    // Targets are canonical refs, and each names its session.
    let (.., session, target) = stored(&archive, "c-accept");
    assert_eq!(
        (session.as_deref(), target),
        (Some(alice.as_str()), format!("session:{alice}"))
    );
    let (.., session, target) = stored(&archive, "c-defer");
    assert_eq!(
        (session.as_deref(), target),
        (Some(alice.as_str()), format!("message:{message}"))
    );

    // The queue holds the four, oldest first.
    let list = judge_json(&archive, &["--list"]);
    let mut listed = ids(&list);
    listed.sort();
    assert_eq!(
        listed,
        ["c-accept", "c-defer", "c-reject", "c-supersede"].map(|i| format!("assertion:{i}"))
    );
    assert!(
        list["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["actions"] == serde_json::json!(["accept", "reject", "defer", "supersede"]))
    );
    // About one session: its claims and its objects' claims.
    let mut about_alice = ids(&judge_json(
        &archive,
        &["--list", "--target-ref", &format!("session:{alice}")],
    ));
    about_alice.sort();
    assert_eq!(
        about_alice,
        ["c-accept", "c-defer", "c-supersede"].map(|i| format!("assertion:{i}"))
    );

    // A judgment needs its reason; supersede needs the replacement.
    assert_eq!(
        judge(&archive, &["--accept", "assertion:c-accept"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        judge(&archive, &["--supersede", "c-supersede"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        judge(&archive, &["--accept", "assertion:nope", "--reason", "x"])
            .status
            .code(),
        Some(2)
    );

    let accepted = judge_json(
        &archive,
        &[
            "--accept",
            "assertion:c-accept",
            "--reason",
            "confirmed by transcript",
        ],
    );
    assert_eq!(accepted["status"], "accepted");
    let claim = accepted["replacement_ref"]
        .as_str()
        .unwrap()
        .strip_prefix("assertion:")
        .unwrap()
        .to_string();
    let rejected = judge_json(
        &archive,
        &[
            "--reject",
            "c-reject",
            "--reason",
            "unsupported by evidence",
        ],
    );
    assert_eq!(rejected["replacement_ref"], Value::Null);
    judge_json(
        &archive,
        &["--defer", "c-defer", "--reason", "needs another source"],
    );
    let superseded = judge_json(
        &archive,
        &[
            "--supersede",
            "c-supersede",
            "--replacement-kind",
            "decision",
            "--body",
            "replacement claim",
        ],
    );
    let replacement = superseded["replacement_ref"]
        .as_str()
        .unwrap()
        .strip_prefix("assertion:")
        .unwrap()
        .to_string();

    let conn = open(&archive);
    let row = |id: &str| -> (
        String,
        String,
        String,
        Option<String>,
        Option<String>,
        String,
        String,
    ) {
        conn.query_row(
            "SELECT status, kind, author_kind, body_text, supersedes, evidence_refs, target_ref
             FROM assertions WHERE assertion_id = ?1",
            [id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            },
        )
        .unwrap()
    };
    // Each candidate holds its judgment's status and no longer waits.
    for (id, status) in [
        ("c-accept", "accepted"),
        ("c-reject", "rejected"),
        ("c-defer", "deferred"),
        ("c-supersede", "superseded"),
    ] {
        assert_eq!(row(id).0, status);
        assert_eq!(
            stored(&archive, id).2,
            serde_json::json!({"inject": false, "promotion_required": false})
        );
    }
    // accept: an active copy by the user, citing the candidate and its evidence, superseding it.
    let (status, kind, author_kind, body, supersedes, evidence, target) = row(&claim);
    assert_eq!(
        (status.as_str(), kind.as_str(), author_kind.as_str()),
        ("active", "decision", "user")
    );
    assert_eq!(body.as_deref(), Some("the archive is SQLite"));
    assert_eq!(supersedes.as_deref(), Some("c-accept"));
    assert_eq!(target, format!("session:{alice}"));
    let evidence: Vec<String> = serde_json::from_str(&evidence).unwrap();
    assert_eq!(
        evidence,
        [
            format!("message:{message}"),
            "message:no-such-message".into(),
            "assertion:c-accept".into()
        ]
    );
    // supersede: the replacement's kind and text.
    let (status, kind, _, body, supersedes, evidence, _) = row(&replacement);
    assert_eq!((status.as_str(), kind.as_str()), ("active", "decision"));
    assert_eq!(body.as_deref(), Some("replacement claim"));
    assert_eq!(supersedes.as_deref(), Some("c-supersede"));
    assert!(evidence.contains("\"assertion:c-supersede\""));
    // Every judgment leaves a record about its candidate, with the reason.
    let judgments: Vec<(String, String, Option<String>)> = conn
        .prepare(
            "SELECT target_ref, value, body_text FROM assertions WHERE kind = 'judgment'
             ORDER BY target_ref",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        judgments,
        vec![
            (
                "assertion:c-accept".into(),
                "accepted".into(),
                Some("confirmed by transcript".into())
            ),
            (
                "assertion:c-defer".into(),
                "deferred".into(),
                Some("needs another source".into())
            ),
            (
                "assertion:c-reject".into(),
                "rejected".into(),
                Some("unsupported by evidence".into())
            ),
            ("assertion:c-supersede".into(), "superseded".into(), None),
        ]
    );
    drop(conn);

    // The queue is empty; the review shows each judged candidate with why it takes no action.
    assert_eq!(
        ids(&judge_json(&archive, &["--list"])),
        Vec::<String>::new()
    );
    let review = judge_json(&archive, &["--review"]);
    let reasons: std::collections::BTreeMap<String, (String, String)> = review["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["assertion_ref"].as_str().unwrap().to_string(),
                (
                    r["disabled_reason"].as_str().unwrap().to_string(),
                    r["judgment"]["verdict"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        [
            ("c-accept", "candidate_already_accepted", "accepted"),
            ("c-defer", "candidate_deferred", "deferred"),
            ("c-reject", "candidate_already_rejected", "rejected"),
            ("c-supersede", "candidate_superseded", "superseded"),
        ]
        .into_iter()
        .map(|(id, reason, verdict)| (
            format!("assertion:{id}"),
            (reason.to_string(), verdict.to_string())
        ))
        .collect()
    );
    // Its evidence previews: the message resolves, the missing one is a state, not a failure.
    let accepted_row = review["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["assertion_ref"] == "assertion:c-accept")
        .unwrap();
    assert_eq!(accepted_row["evidence_count"], 2);
    let states: Vec<&str> = accepted_row["evidence_previews"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["resolved", "not_found"]);
    assert_eq!(
        accepted_row["judgment"]["replacement_ref"],
        format!("assertion:{claim}")
    );
    // A judged candidate takes no second judgment, and says why.
    let again = judge(
        &archive,
        &["--reject", "c-accept", "--reason", "changed my mind"],
    );
    assert_eq!(
        again.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let body: Value = serde_json::from_slice(&again.stderr)
        .unwrap_or_else(|_| serde_json::from_slice(&again.stdout).unwrap());
    assert!(
        body.to_string().contains("candidate_already_accepted"),
        "{body}"
    );

    // Re-importing judged claims keeps their judgments (and still refreshes their text).
    let again = import(
        &archive,
        &[
            serde_json::json!({"assertion_id": "c-accept", "target_ref": alice, "kind": "decision",
                "body_text": "the archive is SQLite (again)", "author_kind": "agent"}),
            serde_json::json!({"assertion_id": "c-reject", "target_ref": bob, "kind": "caveat",
                "body_text": "tests are flaky", "author_kind": "detector", "status": "candidate"}),
        ],
    );
    assert_eq!(again["kept_judgments"], 2, "{again}");
    assert_eq!(again["candidates"], 0, "{again}");
    assert_eq!(stored(&archive, "c-accept").0, "accepted");
    assert_eq!(stored(&archive, "c-reject").0, "rejected");
    let body = text(
        &open(&archive),
        "SELECT body_text FROM assertions WHERE assertion_id = 'c-accept'",
        [],
    );
    assert_eq!(body, "the archive is SQLite (again)");

    // The queue's health from what the archive holds, checked against plain SQL.
    let status = judge_json(&archive, &["--status"]);
    assert_eq!(status["pending"], 0);
    assert_eq!(status["state"], "empty_unverified");
    let conn = open(&archive);
    for (name, n) in status["by_status"].as_object().unwrap() {
        assert_eq!(
            n.as_i64().unwrap(),
            scalar(
                &conn,
                "SELECT COUNT(*) FROM assertions WHERE status = ?1 AND kind <> 'judgment'",
                [name]
            ),
            "{name}"
        );
    }
    assert_eq!(
        status["judgments"],
        serde_json::json!({"accepted": 1, "deferred": 1, "rejected": 1, "superseded": 1})
    );
    assert!(status["unobserved"].to_string().contains("producer runs"));
}

#[test]
fn statuses_outside_the_vocabulary_are_refused_and_the_language_sees_the_lifecycle() {
    let dir = tempfile::tempdir().unwrap();
    let (archive, alice, _, _) = two_owners(dir.path());
    let summary = import(
        &archive,
        &[
            serde_json::json!({"assertion_id": "ok", "target_ref": alice, "kind": "decision", "author_kind": "agent"}),
            serde_json::json!({"assertion_id": "bad", "target_ref": alice, "kind": "decision", "status": "approved"}),
        ],
    );
    assert_eq!(summary["imported"], 1);
    let reason = summary["diagnostics"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("'approved'")
            && reason.contains(
                "active, candidate, accepted, rejected, deferred, superseded, deleted, inactive"
            ),
        "{reason}"
    );
    assert_eq!(summary["diagnostics"][0]["line"], 2);
    assert_eq!(
        scalar(
            &open(&archive),
            "SELECT COUNT(*) FROM assertions WHERE assertion_id = 'bad'",
            []
        ),
        0
    );
    let a = archive.to_str().unwrap();
    // The language's status field is the same closed set.
    let out = quarry(&["--archive", a, "query", "assertions where status:approved"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("candidate"));
    // Its predicates see the current status and match a target in either form.
    let count = |q: &str| -> i64 {
        let v = quarry_json(&["--archive", a, "--format", "json", "query", q]);
        v["rows"][0][0].as_i64().unwrap()
    };
    assert_eq!(count("assertions where status:candidate | count"), 1);
    assert_eq!(
        count(&format!("assertions where target:session:{alice} | count")),
        1
    );
    assert_eq!(
        count(&format!("assertions where target:{alice} | count")),
        1
    );
    assert_eq!(
        count(&format!(
            "assertions where target_ref:{alice} AND context:promotion_required | count"
        )),
        1
    );
    judge_json(&archive, &["--accept", "ok", "--reason", "fine"]);
    assert_eq!(count("assertions where status:candidate | count"), 0);
    assert_eq!(count("assertions where status:accepted | count"), 1);
    assert_eq!(count("assertions where supersedes:ok | count"), 1);
    // A ref matches whole: `ok` is not a prefix of `ok2`'s ref.
    import(
        &archive,
        &[
            serde_json::json!({"assertion_id": "ok2", "target_ref": alice, "kind": "decision", "author_kind": "agent"}),
        ],
    );
    judge_json(&archive, &["--reject", "ok2", "--reason", "no"]);
    assert_eq!(
        count("assertions where target:assertion:ok AND kind:judgment | count"),
        1
    );
    assert_eq!(
        count("assertions where target:assertion:ok2 AND kind:judgment | count"),
        1
    );
    assert_eq!(
        count(&format!(
            "assertions where target:{} | count",
            &alice[..alice.len() - 2]
        )),
        0
    );
    // `judgment` is the judge's kind alone.
    let reserved = import(
        &archive,
        &[serde_json::json!({"target_ref": alice, "kind": "judgment", "value": "accepted"})],
    );
    assert_eq!(reserved["imported"], 0);
    assert!(
        reserved["diagnostics"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("reserved")
    );
    assert_eq!(
        count("assertions where target:assertion:ok AND kind:judgment | count"),
        1
    );
    // Session filters reach claims through the session they name.
    assert_eq!(
        count("assertions where session.owner:alice AND kind:decision | count"),
        3
    );
    assert_eq!(count("assertions where session.owner:bob | count"), 0);
}

#[test]
fn a_reader_sees_its_sessions_claims_and_only_its_own_candidates() {
    let dir = tempfile::tempdir().unwrap();
    let (archive, alice, bob, message) = two_owners(dir.path());
    import(
        &archive,
        &[
            serde_json::json!({"assertion_id": "a-user", "target_ref": alice, "kind": "note", "author_kind": "user", "author_ref": "alice"}),
            serde_json::json!({"assertion_id": "a-own-candidate", "target_ref": alice, "kind": "decision", "author_kind": "agent", "author_ref": "alice"}),
            serde_json::json!({"assertion_id": "a-detector", "target_ref": format!("message:{message}"), "kind": "decision", "author_kind": "detector", "author_ref": "detector:x"}),
            serde_json::json!({"assertion_id": "b-user", "target_ref": bob, "kind": "note", "author_kind": "user", "author_ref": "bob"}),
            serde_json::json!({"assertion_id": "b-candidate", "target_ref": bob, "kind": "decision", "author_kind": "agent", "author_ref": "alice"}),
            serde_json::json!({"assertion_id": "nowhere", "target_ref": "session:not-in-archive", "kind": "note", "author_kind": "user"}),
        ],
    );
    let a = archive.to_str().unwrap();
    let seen = |scope: &str, how: &str| -> Vec<String> {
        let rows = match how {
            "sql" => as_scope(
                a,
                scope,
                &[
                    "sql",
                    "SELECT assertion_id FROM assertions ORDER BY assertion_id",
                ],
            ),
            _ => as_scope(a, scope, &["query", "assertions | sort by id | select id"]),
        };
        rows["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[0].as_str().unwrap().to_string())
            .collect()
    };
    for how in ["sql", "language"] {
        // alice: her sessions' claims, her own candidate, not a detector's.
        assert_eq!(seen("alice", how), ["a-own-candidate", "a-user"], "{how}");
        // bob: his session's claims; alice's candidate about it stays hers.
        assert_eq!(seen("bob", how), ["b-user"], "{how}");
    }
    // Admin sees everything.
    assert_eq!(seen("admin", "sql").len(), 6);
    // The resolver and the aggregates apply the same rule.
    let resolved = as_scope(a, "alice", &["read", "--resolve", "assertion:a-detector"]);
    assert_eq!(resolved["resolved"], false, "{resolved}");
    let resolved = as_scope(
        a,
        "alice",
        &["read", "--resolve", "assertion:a-own-candidate"],
    );
    assert_eq!(resolved["resolved"], true, "{resolved}");
    let counted = as_scope(
        a,
        "bob",
        &["query", "assertions | group by status | agg count"],
    );
    assert_eq!(counted["rows"], serde_json::json!([["active", 1]]));
    // Attached rows (`with assertions(...)`) apply it too.
    let attached = as_scope(
        a,
        "bob",
        &["query", "owner:bob with assertions(assertion_id)"],
    );
    let text = attached.to_string();
    assert!(
        text.contains("b-user") && !text.contains("b-candidate"),
        "{text}"
    );
    // Judged out of force, a machine claim stays private; the accepted copy is the judge's
    // claim, in force, and readers see it.
    judge_json(&archive, &["--reject", "b-candidate", "--reason", "no"]);
    judge_json(&archive, &["--accept", "a-detector", "--reason", "yes"]);
    judge_json(
        &archive,
        &["--defer", "a-own-candidate", "--reason", "later"],
    );
    let alice_sees = seen("alice", "sql");
    assert!(
        alice_sees.contains(&"a-own-candidate".to_string()),
        "{alice_sees:?}"
    );
    assert!(
        !alice_sees.contains(&"a-detector".to_string()),
        "{alice_sees:?}"
    );
    assert!(
        alice_sees.iter().any(|id| id.starts_with("claim-")),
        "{alice_sees:?}"
    );
    let bob_sees = seen("bob", "sql");
    assert!(
        !bob_sees.contains(&"b-candidate".to_string()),
        "{bob_sees:?}"
    );
    // Judging is the admin's.
    let out = quarry(&["--archive", a, "--scope", "alice", "judge", "--list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("admin"));
}

#[test]
fn claims_about_a_hidden_message_are_not_a_readers() {
    let dir = tempfile::tempdir().unwrap();
    let (archive, _, _) = crate::sql_scope::secret_archive(dir.path());
    let conn = open(&archive);
    let hidden: String = conn
        .query_row("SELECT message_id FROM messages WHERE hidden", [], |r| {
            r.get(0)
        })
        .unwrap();
    let (shown, block): (String, String) = conn
        .query_row(
            "SELECT m.message_id, b.block_id FROM messages m JOIN blocks b USING (message_id)
             WHERE NOT m.hidden ORDER BY m.position LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let hidden_block: String = text(
        &conn,
        "SELECT block_id FROM blocks WHERE message_id = ?1",
        [&hidden],
    );
    drop(conn);
    import(
        &archive,
        &[
            serde_json::json!({"assertion_id": "on-hidden", "target_ref": format!("message:{hidden}"), "kind": "note", "author_kind": "user"}),
            serde_json::json!({"assertion_id": "on-hidden-block", "target_ref": format!("block:{hidden_block}"), "kind": "note", "author_kind": "user"}),
            serde_json::json!({"assertion_id": "on-shown", "target_ref": format!("message:{shown}"), "kind": "note", "author_kind": "user"}),
            serde_json::json!({"assertion_id": "on-shown-block", "target_ref": format!("block:{block}"), "kind": "note", "author_kind": "user"}),
        ],
    );
    let a = archive.to_str().unwrap();
    let ids = |scope: &str| -> Vec<String> {
        as_scope(
            a,
            scope,
            &["sql", "SELECT assertion_id FROM assertions ORDER BY 1"],
        )["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[0].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        ids("admin"),
        ["on-hidden", "on-hidden-block", "on-shown", "on-shown-block"]
    );
    assert_eq!(ids("alice"), ["on-shown", "on-shown-block"]);
}

#[test]
fn a_version_5_archive_finds_the_sessions_and_messages_its_claims_name() {
    let dir = tempfile::tempdir().unwrap();
    let (archive, session, _, message) = two_owners(dir.path());
    let conn = rusqlite::Connection::open(&archive).unwrap();
    let native: String = text(
        &conn,
        "SELECT native_id FROM sessions WHERE session_id = ?1",
        [&session],
    );
    let (block, block_message): (String, String) = conn
        .query_row(
            "SELECT block_id, message_id FROM blocks WHERE session_id = ?1 AND message_id <> ?2
             ORDER BY block_id LIMIT 1",
            [&session, &message],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    // Back to version 5, with claims as version 5 stored them.
    conn.execute_batch(crate::support::UNDO_VERSION_11).unwrap();
    conn.execute_batch(crate::support::UNDO_VERSION_10).unwrap();
    conn.execute_batch(crate::support::UNDO_VERSION_8).unwrap();
    conn.execute_batch(crate::support::UNDO_VERSION_7).unwrap();
    conn.execute_batch(crate::support::UNDO_VERSION_6).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA user_version = 5;
         INSERT INTO assertions (assertion_id, target_ref, kind, author_kind, status, visibility,
             created_at_ms, updated_at_ms) VALUES
         ('by-native', '{native}', 'note', 'user', 'active', 'private', 1, 1),
         ('msg', 'message:{message}', 'note', 'user', 'active', 'private', 1, 1),
         ('blk', 'block:{block}', 'note', 'user', 'active', 'private', 1, 1),
         ('gone', 'message:no-such-message', 'note', 'user', 'active', 'private', 1, 1),
         ('on-claim', 'assertion:msg', 'judgment', 'user', 'active', 'private', 1, 1),
         ('rej', 'session:{session}', 'caveat', 'import', 'rejected', 'private', 1, 1);"
    ))
    .unwrap();
    drop(conn);
    let out = quarry(&["--archive", archive.to_str().unwrap(), "tables"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = sql_rows(
        &archive,
        "SELECT assertion_id, target_ref, session_id, message_id, staleness, context_policy
         FROM assertions ORDER BY assertion_id",
    );
    let trusted = r#"{"inject":true,"promotion_required":false}"#;
    let judged = r#"{"inject":false,"promotion_required":false}"#;
    let row = |v: Value| v.as_array().unwrap().clone();
    assert_eq!(
        rows,
        vec![
            row(serde_json::json!([
                "blk",
                format!("block:{block}"),
                session,
                block_message,
                "current",
                trusted
            ])),
            row(serde_json::json!([
                "by-native",
                format!("session:{session}"),
                session,
                null,
                "current",
                trusted
            ])),
            row(serde_json::json!([
                "gone",
                "message:no-such-message",
                null,
                null,
                "target_missing",
                trusted
            ])),
            row(serde_json::json!([
                "msg",
                format!("message:{message}"),
                session,
                message,
                "current",
                trusted
            ])),
            row(serde_json::json!([
                "on-claim",
                "assertion:msg",
                session,
                message,
                "current",
                trusted
            ])),
            row(serde_json::json!([
                "rej",
                format!("session:{session}"),
                session,
                null,
                "current",
                judged
            ])),
        ]
    );
}

#[test]
fn a_version_5_archive_migrates_its_claims() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    {
        let conn = rusqlite::Connection::open(&archive).unwrap();
        for m in &quarry_archive::schema::MIGRATIONS[..5] {
            conn.execute_batch(m).unwrap();
        }
        conn.pragma_update(None, "user_version", 5).unwrap();
        conn.execute_batch(
            "INSERT INTO assertions (assertion_id, target_ref, kind, author_kind, status,
                 visibility, created_at_ms, updated_at_ms) VALUES
             ('t', 'claude-code-session:abc', 'tag', 'user', 'active', 'private', 1, 1),
             ('odd', 'codex-session:xyz', 'decision', 'import', 'approved', 'private', 1, 1),
             ('odd2', 'codex-session:xyz', 'decision', 'import', 'approved', 'private', 1, 1),
             ('c', 'session:codex-session:xyz', 'decision', 'import', 'candidate', 'shared', 1, 1);",
        )
        .unwrap();
    }
    let out = quarry(&[
        "--archive",
        archive.to_str().unwrap(),
        "--format",
        "json",
        "tables",
    ]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("'approved' (2)") && stderr.contains("original_status"),
        "{stderr}"
    );
    let rows = sql_rows(
        &archive,
        "SELECT assertion_id, target_ref, status, original_status, session_id, visibility
         FROM assertions ORDER BY assertion_id",
    );
    let row = |v: Value| v.as_array().unwrap().clone();
    let (xyz, abc) = (
        "session:codex-session:xyz",
        "session:claude-code-session:abc",
    );
    assert_eq!(
        rows,
        vec![
            row(serde_json::json!([
                "c",
                xyz,
                "candidate",
                null,
                "codex-session:xyz",
                "private"
            ])),
            row(serde_json::json!([
                "odd",
                xyz,
                "inactive",
                "approved",
                "codex-session:xyz",
                "private"
            ])),
            row(serde_json::json!([
                "odd2",
                xyz,
                "inactive",
                "approved",
                "codex-session:xyz",
                "private"
            ])),
            row(serde_json::json!([
                "t",
                abc,
                "active",
                null,
                "claude-code-session:abc",
                "private"
            ])),
        ]
    );
    let status = judge_json(&archive, &["--status"]);
    assert_eq!(
        status["outside_vocabulary"],
        serde_json::json!({"approved": 2})
    );
    assert_eq!(status["pending"], 1);
    assert_eq!(status["state"], "pending");
}

#[test]
fn a_claim_about_an_object_a_re_read_drops_goes_stale() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    generate(&corpus, 1, 21);
    let archive = dir.path().join("archive.db");
    ingest_with(&archive, &[], &[&corpus]);
    let conn = open(&archive);
    let (session, path, last, first): (String, String, String, String) = conn
        .query_row(
            "SELECT s.session_id, s.source_path,
                (SELECT message_id FROM messages m WHERE m.session_id = s.session_id ORDER BY position DESC LIMIT 1),
                (SELECT message_id FROM messages m WHERE m.session_id = s.session_id ORDER BY position LIMIT 1)
             FROM sessions s WHERE s.parent_session_id IS NULL ORDER BY s.session_id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    drop(conn);
    import(
        &archive,
        &[
            serde_json::json!({"assertion_id": "last", "target_ref": format!("message:{last}"), "kind": "note", "author_kind": "user"}),
            serde_json::json!({"assertion_id": "first", "target_ref": format!("message:{first}"), "kind": "note", "author_kind": "user"}),
            serde_json::json!({"assertion_id": "whole", "target_ref": session, "kind": "note", "author_kind": "user"}),
        ],
    );
    // A machine claim about the last message, judged: the judgment is about the claim.
    import(
        &archive,
        &[
            serde_json::json!({"assertion_id": "cand", "target_ref": format!("message:{last}"), "kind": "decision", "author_kind": "agent"}),
        ],
    );
    judge_json(&archive, &["--reject", "cand", "--reason", "no"]);
    // The file loses its later records; asked to, the re-read replaces the session.
    let whole = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = whole.lines().collect();
    let kept: String = lines[..lines.len() / 2]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, kept).unwrap();
    ingest_with(&archive, &["--replace", &path], &[&corpus]);
    let conn = open(&archive);
    let gone = scalar(
        &conn,
        "SELECT COUNT(*) FROM messages WHERE message_id = ?1",
        [&last],
    );
    assert_eq!(gone, 0, "the fixture must drop the last message");
    let staleness = |id: &str| -> String {
        text(
            &conn,
            "SELECT staleness FROM assertions WHERE assertion_id = ?1",
            [id],
        )
    };
    assert_eq!(staleness("last"), "target_missing");
    assert_eq!(staleness("first"), "current");
    assert_eq!(staleness("whole"), "current");
    assert_eq!(staleness("cand"), "target_missing");
    let judgment: String = text(
        &conn,
        "SELECT assertion_id FROM assertions WHERE kind = 'judgment'",
        [],
    );
    assert_eq!(
        staleness(&judgment),
        "current",
        "its candidate is still there"
    );
    // Written back whole, the file holds the message again.
    std::fs::write(&path, &whole).unwrap();
    ingest_with(&archive, &["--replace", &path], &[&corpus]);
    assert_eq!(staleness("last"), "current");
}

#[test]
fn a_claim_written_before_its_session_is_found_when_the_session_comes() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    generate(&corpus, 1, 23);
    // The same corpus in a scratch archive tells the ids the real one will have.
    let scratch = dir.path().join("scratch.db");
    ingest_with(&scratch, &[], &[&corpus]);
    let (session, message): (String, String) = open(&scratch)
        .query_row(
            "SELECT session_id, message_id FROM messages ORDER BY session_id, position LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let archive = dir.path().join("archive.db");
    quarry(&["--archive", archive.to_str().unwrap(), "tables"]);
    import(
        &archive,
        &[
            serde_json::json!({"assertion_id": "early", "target_ref": format!("message:{message}"), "kind": "note", "author_kind": "user"}),
        ],
    );
    let (_, _, _, before, _) = stored(&archive, "early");
    assert_eq!(before, None);
    let staleness = |a: &Path| -> String {
        text(
            &open(a),
            "SELECT staleness FROM assertions WHERE assertion_id = 'early'",
            [],
        )
    };
    assert_eq!(staleness(&archive), "target_missing");
    ingest_with(&archive, &[], &[&corpus]);
    assert_eq!(stored(&archive, "early").3, Some(session));
    assert_eq!(staleness(&archive), "current");
}
