//! Facets against SQLite: every family's global counts equal SQLite's counts of sessions on the
//! archive file, scoped counts the same counts over the sessions a filter or a search finds
//! (found here by SQLite's own FTS5 index), idf `ln(N / df)` computed here; a reader's counts
//! are over its own sessions only; a budget defers families; the global view is kept per scope
//! and generation and recomputed when the generation moves.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use quarry::Quarry;
use quarry::facets::{Facets, FacetsRequest};
use rusqlite::Connection;

use crate::sql_scope::{open_as, two_owner_archive};
use crate::support::{quarry as quarry_cli, runtime};

/// Per family, SQLite's statement of (session id, value) pairs: the oracle's own reading of
/// what each family means. `{reader}` is where a reader's statement leaves out the actions of
/// hidden messages (docs/security.md: a reader sees neither them nor their actions).
const FAMILIES: &[(&str, &str)] = &[
    ("origin", "SELECT session_id, origin FROM sessions"),
    ("model", "SELECT session_id, model FROM sessions"),
    ("machine", "SELECT session_id, machine FROM sessions"),
    ("repo", "SELECT session_id, repo FROM sessions"),
    (
        "day",
        "SELECT session_id, strftime('%Y-%m-%d', created_at / 1000, 'unixepoch') FROM sessions",
    ),
    (
        "tool",
        "SELECT DISTINCT a.session_id, a.tool_name FROM actions a \
         JOIN messages m ON m.message_id = a.message_id{reader}",
    ),
    (
        "tag",
        "SELECT DISTINCT s.session_id, j.value FROM sessions s, json_each(s.tags) j",
    ),
];

type Counts = BTreeMap<Option<String>, u64>;

/// Per family, SQLite's session counts of each value over the sessions `keep` admits, as the
/// admin scope or a `reader` sees them.
fn oracle(
    conn: &Connection,
    reader: bool,
    keep: &dyn Fn(&str) -> bool,
) -> BTreeMap<&'static str, Counts> {
    let mut out = BTreeMap::new();
    for (family, sql) in FAMILIES {
        let mut counts = Counts::new();
        let sql = sql.replace("{reader}", if reader { " WHERE NOT m.hidden" } else { "" });
        let mut stmt = conn.prepare(&sql).unwrap();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            let session: String = row.get(0).unwrap();
            if keep(&session) {
                *counts.entry(row.get(1).unwrap()).or_default() += 1;
            }
        }
        out.insert(*family, counts);
    }
    out
}

/// A view of the answer as counts per family.
fn view(facets: &Facets, scoped: bool) -> BTreeMap<&'static str, Counts> {
    let side = if scoped {
        &facets.scoped
    } else {
        &facets.global
    };
    side.iter()
        .map(|(family, buckets)| {
            (
                *family,
                buckets.iter().map(|b| (b.value.clone(), b.count)).collect(),
            )
        })
        .collect()
}

/// The session ids SQLite finds for `sql`.
fn ids(conn: &Connection, sql: &str) -> BTreeSet<String> {
    conn.prepare(sql)
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn facets(q: &Quarry, request: FacetsRequest) -> Facets {
    runtime()
        .block_on(q.facets(&request))
        .unwrap_or_else(|e| panic!("{request:?}: {e}"))
}

/// Both views and idf of `got` against SQLite over `universe` (the scope's sessions) and
/// `found` (the sessions the request found).
fn assert_views(
    what: &str,
    conn: &Connection,
    reader: bool,
    got: &Facets,
    universe: &BTreeSet<String>,
    found: &BTreeSet<String>,
) {
    let global = oracle(conn, reader, &|s| universe.contains(s));
    let mut scoped = oracle(conn, reader, &|s| found.contains(s));
    for counts in scoped.values_mut() {
        counts.retain(|_, c| *c > 0);
    }
    assert_eq!(view(got, false), global, "{what}: global counts");
    assert_eq!(view(got, true), scoped, "{what}: scoped counts");
    assert_eq!(got.total_sessions.global, universe.len() as u64, "{what}");
    assert_eq!(got.total_sessions.scoped, found.len() as u64, "{what}");
    let n = universe.len() as f64;
    for side in [&got.scoped, &got.global] {
        for (family, buckets) in side {
            for b in buckets {
                let df = global[family][&b.value] as f64;
                let want = (n / df).ln();
                let idf = b.idf.unwrap();
                assert!(
                    (idf - want).abs() <= 1e-12 * want.abs().max(1.0),
                    "{what}: idf of {family} {:?}: {idf} vs {want}",
                    b.value
                );
            }
        }
    }
}

#[test]
fn facets_equal_sqlites_session_counts_for_filters_and_searches() {
    let Some(archive) = crate::support::corpus_archive() else {
        return;
    };
    let q = open_as(archive, "admin");
    let conn = Connection::open(archive).unwrap();
    let every = ids(&conn, "SELECT session_id FROM sessions");
    // No filter: both views are the whole archive.
    let all = facets(&q, FacetsRequest::default());
    assert!(!all.scoped_to_query);
    assert_eq!(all.complete_families.len(), 7);
    assert_views("unfiltered", &conn, false, &all, &every, &every);
    // A filter of session clauses, and a unit query (sessions holding a row of it).
    for (filter, sql) in [
        (
            "origin:codex-session",
            "SELECT session_id FROM sessions WHERE origin = 'codex-session'",
        ),
        (
            "messages where role:assistant AND model:claude-sonnet-4-5-20250929",
            "SELECT DISTINCT session_id FROM messages WHERE role = 'assistant' AND model = 'claude-sonnet-4-5-20250929'",
        ),
    ] {
        let found = ids(&conn, sql);
        assert!(!found.is_empty(), "{filter} finds sessions");
        let got = facets(
            &q,
            FacetsRequest {
                filter: Some(filter.into()),
                ..Default::default()
            },
        );
        assert!(got.scoped_to_query);
        assert_views(filter, &conn, false, &got, &every, &found);
    }
    // A search: the sessions holding a dialogue block SQLite's index matches.
    let found = ids(
        &conn,
        "SELECT DISTINCT b.session_id FROM blocks_fts JOIN blocks b ON b.rowid = blocks_fts.rowid \
         JOIN messages m ON m.message_id = b.message_id AND m.session_id = b.session_id \
         WHERE blocks_fts MATCH 'test' AND b.type IN ('text', 'thinking') \
         AND m.role IN ('user', 'assistant')",
    );
    let got = facets(
        &q,
        FacetsRequest {
            text: Some("test".into()),
            ..Default::default()
        },
    );
    assert_eq!(got.query.as_deref(), Some("test"));
    assert_eq!(got.retrieval_lane, Some("dialogue"));
    assert_views("search test", &conn, false, &got, &every, &found);
    // A filter nothing passes: scoped families are empty, global ones whole.
    let none = facets(
        &q,
        FacetsRequest {
            filter: Some("origin:codex-session since:2099-01-01".into()),
            ..Default::default()
        },
    );
    assert_eq!(none.total_sessions.scoped, 0);
    assert!(none.scoped.values().all(Vec::is_empty));
    assert_views(
        "nothing found",
        &conn,
        false,
        &none,
        &every,
        &BTreeSet::new(),
    );
}

#[test]
fn a_readers_facets_count_its_own_sessions_only() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = two_owner_archive(dir.path()) else {
        return;
    };
    let conn = Connection::open(&archive).unwrap();
    let alice = ids(
        &conn,
        "SELECT session_id FROM sessions WHERE owner = 'alice'",
    );
    let q = open_as(&archive, "alice");
    let got = facets(&q, FacetsRequest::default());
    assert_views("alice", &conn, true, &got, &alice, &alice);
    // Bob's codex sessions are not hers: a filter for them finds nothing, and no value of his
    // appears anywhere.
    let codex = facets(
        &q,
        FacetsRequest {
            filter: Some("origin:codex-session".into()),
            ..Default::default()
        },
    );
    assert_eq!(codex.total_sessions.scoped, 0);
    assert!(
        codex.global["origin"]
            .iter()
            .all(|b| b.value.as_deref() != Some("codex-session")),
        "{:?}",
        codex.global["origin"]
    );
    // A search scoped by text counts only her matching sessions.
    let found = ids(
        &conn,
        "SELECT DISTINCT b.session_id FROM blocks_fts JOIN blocks b ON b.rowid = blocks_fts.rowid \
         JOIN messages m ON m.message_id = b.message_id AND m.session_id = b.session_id \
         JOIN sessions s ON s.session_id = b.session_id \
         WHERE blocks_fts MATCH 'the' AND b.type IN ('text', 'thinking') \
         AND m.role IN ('user', 'assistant') AND NOT m.hidden AND s.owner = 'alice'",
    );
    let searched = facets(
        &q,
        FacetsRequest {
            text: Some("the".into()),
            ..Default::default()
        },
    );
    assert_views("alice searches the", &conn, true, &searched, &alice, &found);
}

#[test]
fn a_budget_defers_families_and_the_global_view_is_kept_until_the_generation_moves() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = two_owner_archive(dir.path()) else {
        return;
    };
    let q = open_as(&archive, "admin");
    // A budget of nothing defers every family it was asked for, and says why.
    let starved = facets(
        &q,
        FacetsRequest {
            families: Some(vec!["origin".into(), "tool".into()]),
            budget_ms: Some(0),
            ..Default::default()
        },
    );
    assert!(starved.budget_exceeded);
    assert!(starved.complete_families.is_empty());
    assert_eq!(starved.deferred_families, ["origin", "tool"]);
    assert!(starved.global.is_empty() && starved.scoped.is_empty());
    let reason = starved.family_status["tool"].reason.clone().unwrap();
    assert!(reason.contains("budget of 0 ms"), "{reason}");
    // Asked again with time, only those families; the first count computes, the second keeps.
    let ask = FacetsRequest {
        families: Some(vec!["tag".into(), "origin".into()]),
        budget_ms: Some(600_000),
        ..Default::default()
    };
    let first = facets(&q, ask.clone());
    assert!(!first.budget_exceeded);
    assert_eq!(first.complete_families, ["origin", "tag"]);
    assert_eq!(first.family_status["tag"].cached, Some(false));
    assert!(first.global["tag"].is_empty(), "no session is tagged yet");
    let second = facets(&q, ask.clone());
    assert_eq!(second.family_status["tag"].cached, Some(true));
    assert_eq!(second.generation, first.generation);
    // Tagging a session moves the generation: the kept view is not used, the tag is counted.
    let conn = Connection::open(&archive).unwrap();
    let session: String = conn
        .query_row(
            "SELECT session_id FROM sessions ORDER BY session_id LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    tag(&archive, &session, "review");
    let third = facets(&q, ask);
    assert!(third.generation > second.generation);
    assert_eq!(third.family_status["tag"].cached, Some(false));
    assert_eq!(third.global["tag"].len(), 1);
    assert_eq!(third.global["tag"][0].value.as_deref(), Some("review"));
    assert_eq!(third.global["tag"][0].count, 1);
    // An unknown family is refused by name.
    let err = runtime()
        .block_on(q.facets(&FacetsRequest {
            families: Some(vec!["colour".into()]),
            ..Default::default()
        }))
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown facet family `colour`"),
        "{err}"
    );
}

/// Tags `session` with `tag` through the CLI.
fn tag(archive: &Path, session: &str, tag: &str) {
    let out = quarry_cli(&["--archive", archive.to_str().unwrap(), "tag", session, tag]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_cli_prints_facets_as_json_or_lines_and_refuses_an_unknown_family() {
    let Some(archive) = crate::support::corpus_archive() else {
        return;
    };
    let conn = Connection::open(archive).unwrap();
    let a = archive.to_str().unwrap();
    let args = [
        "--archive",
        a,
        "--tz",
        "UTC",
        "--format",
        "json",
        "facets",
        "--where",
        "origin:codex-session",
        "--families",
        "origin,day",
    ];
    let json = crate::support::quarry_json(&args);
    let codex = ids(
        &conn,
        "SELECT session_id FROM sessions WHERE origin = 'codex-session'",
    );
    assert_eq!(json["total_sessions"]["scoped"], codex.len() as u64);
    assert_eq!(
        json["scoped"]["origin"],
        serde_json::json!([{
            "value": "codex-session",
            "count": codex.len(),
            "idf": json["global"]["origin"].as_array().unwrap().iter()
                .find(|b| b["value"] == "codex-session").unwrap()["idf"].clone(),
        }])
    );
    let days = oracle(&conn, false, &|s| codex.contains(s))["day"].clone();
    let got: Counts = json["scoped"]["day"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["value"].as_str().map(str::to_string),
                b["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, days);
    // For people: a line per value with its scoped and global counts.
    let text = quarry_cli(
        &args[..4]
            .iter()
            .chain(&args[6..])
            .copied()
            .collect::<Vec<_>>(),
    );
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!(
            "codex-session  {} of {}",
            codex.len(),
            codex.len()
        )),
        "{text}"
    );
    // A family that does not exist is refused by the flag's parser, naming the flag.
    let bad = quarry_cli(&["--archive", a, "facets", "--families", "colour"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("--families"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}
