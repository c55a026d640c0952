//! Ranked search against independent oracles: the admin scope's ranking equals FTS5's own
//! `bm25()` in a hand-written `sqlite3` statement (the statements below, not quarry's); a
//! reader's equals `bm25()` over a copy of the index holding only the reader's rows; sessions
//! are grouped by their best block as the spec says (grouped here, by this file's own code);
//! cursors walk the ranking without duplicates or gaps, across an ingest, and refuse another
//! search's; a reader finds no masked secret.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use quarry::search::{SearchEnvelope, SearchRequest};
use quarry::{Error, Quarry};
use rusqlite::{Connection, params};

use crate::sql_scope::{open_as, secret_archive, two_owner_archive};
use crate::support::{corpus, ingest_with, runtime};

/// One session as the oracle ranks it: its best block's score and message, and its key.
#[derive(Debug, Clone, PartialEq)]
struct Ranked {
    session: String,
    score: f64,
    message: String,
    blocks: u64,
}

/// The oracle's statement for a lane: every matching block with FTS5's `bm25()`, restricted to
/// the lane's block types (and, for dialogue, to user and assistant messages).
fn oracle_sql(lane: &str, table: &str) -> String {
    let restriction = match lane {
        "actions" => "b.type IN ('tool_use', 'tool_result')",
        _ => "b.type IN ('text', 'thinking') AND m.role IN ('user', 'assistant')",
    };
    format!(
        "SELECT b.session_id, b.message_id, m.position, b.position, bm25({table}) \
         FROM {table} JOIN blocks b ON b.rowid = {table}.rowid \
         JOIN messages m ON m.message_id = b.message_id AND m.session_id = b.session_id \
         WHERE {table} MATCH ?1 AND {restriction}"
    )
}

/// One matching block as the oracle's statement reads it.
struct Block {
    session: String,
    message: String,
    message_position: i64,
    block_position: i64,
    score: f64,
}

/// Every block the oracle's statement `sql` matches for the FTS5 expression `fts`.
fn oracle_blocks(conn: &Connection, sql: &str, fts: &str) -> Vec<Block> {
    let mut stmt = conn.prepare(sql).unwrap();
    stmt.query_map(params![fts], |r| {
        Ok(Block {
            session: r.get(0)?,
            message: r.get(1)?,
            message_position: r.get(2)?,
            block_position: r.get(3)?,
            score: r.get(4)?,
        })
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// Sessions ranked by their best block: (score, message position, block position) picks the
/// best, (score, session id) orders the sessions. `keep` filters sessions.
fn oracle(conn: &Connection, sql: &str, fts: &str, keep: &dyn Fn(&str) -> bool) -> Vec<Ranked> {
    // Per session: (score, message position, block position) of the best block, its message,
    // and the matching blocks.
    type Best = ((f64, i64, i64), String, u64);
    let mut best: HashMap<String, Best> = HashMap::new();
    for Block {
        session,
        message,
        message_position: mpos,
        block_position: bpos,
        score,
    } in oracle_blocks(conn, sql, fts)
    {
        if !keep(&session) {
            continue;
        }
        let key = (score, mpos, bpos);
        let entry = best.entry(session).or_insert((key, message.clone(), 0));
        entry.2 += 1;
        if key.0 < entry.0.0 || (key.0 == entry.0.0 && (key.1, key.2) < (entry.0.1, entry.0.2)) {
            entry.0 = key;
            entry.1 = message;
        }
    }
    let mut ranked: Vec<Ranked> = best
        .into_iter()
        .map(|(session, ((score, _, _), message, blocks))| Ranked {
            session,
            score,
            message,
            blocks,
        })
        .collect();
    ranked.sort_by(|a, b| a.score.total_cmp(&b.score).then(a.session.cmp(&b.session)));
    ranked
}

/// The ids of the sessions `condition` (SQL over `sessions`) holds, by SQLite.
fn session_ids(conn: &Connection, condition: &str) -> Vec<String> {
    conn.prepare(&format!(
        "SELECT session_id FROM sessions WHERE {condition}"
    ))
    .unwrap()
    .query_map([], |r| r.get(0))
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// Every page of a search, walked with its cursors.
fn walk(q: &Quarry, request: &SearchRequest) -> (Vec<SearchEnvelope>, Vec<Ranked>) {
    let rt = runtime();
    let mut pages = Vec::new();
    let mut request = request.clone();
    loop {
        let page = rt.block_on(q.search(&request)).unwrap();
        let next = page.next_cursor.clone();
        pages.push(page);
        match next {
            Some(cursor) => request.cursor = Some(cursor),
            None => break,
        }
        assert!(pages.len() < 10_000, "the walk does not end");
    }
    let ranked = pages
        .iter()
        .flat_map(|p| p.hits.iter())
        .map(|h| Ranked {
            session: h.session.session_id.clone(),
            score: h.matched.score,
            message: h.matched.message_id.clone(),
            blocks: h.matched.matching_blocks,
        })
        .collect();
    (pages, ranked)
}

fn assert_same_ranking(what: &str, got: &[Ranked], want: &[Ranked]) {
    assert_eq!(
        got.iter().map(|r| &r.session).collect::<Vec<_>>(),
        want.iter().map(|r| &r.session).collect::<Vec<_>>(),
        "{what}: the order of sessions"
    );
    for (g, w) in got.iter().zip(want) {
        let close = (g.score - w.score).abs() <= 1e-9 * w.score.abs().max(1e-300);
        assert!(
            close,
            "{what}: {} scores {} vs bm25() {}",
            g.session, g.score, w.score
        );
        assert_eq!(
            g.message, w.message,
            "{what}: the best message of {}",
            g.session
        );
        assert_eq!(
            g.blocks, w.blocks,
            "{what}: matching blocks of {}",
            g.session
        );
    }
}

/// Walks `text` in `lane` with pages of `page_size` and checks the walk against the oracle's
/// ranking over the FTS5 table `table`.
fn walk_equals_oracle(
    q: &Quarry,
    conn: &Connection,
    table: &str,
    (text, lane, fts): (&str, &str, &str),
    page_size: usize,
) -> (Vec<SearchEnvelope>, Vec<Ranked>, Vec<Ranked>) {
    let want = oracle(conn, &oracle_sql(lane, table), fts, &|_| true);
    let request = SearchRequest {
        text: text.to_string(),
        lane: Some(lane.to_string()),
        page_size: Some(page_size),
        ..Default::default()
    };
    let (pages, got) = walk(q, &request);
    assert_same_ranking(&format!("{text} ({lane}, {table})"), &got, &want);
    (pages, got, want)
}

/// A session in Polish and French (the corpus has no `ł`), written as Claude Code writes it.
fn accented_session(dir: &Path) -> PathBuf {
    let root = dir.join("accented/projects/-home-dev-x");
    std::fs::create_dir_all(&root).unwrap();
    let texts = [
        (
            "user",
            "Zrobiłem to łatwo: naprawiłem test logowania w Łodzi.",
        ),
        (
            "assistant",
            "Świetnie, test logowania przechodzi; zrobiłem też café au lait.",
        ),
        ("user", "Czy gęślą jaźń działa? Zażółć gęślą jaźń."),
        ("assistant", "Tak, zażółć działa, a café też."),
    ];
    let mut lines = Vec::new();
    let mut parent: Option<String> = None;
    for (i, (role, text)) in texts.iter().enumerate() {
        let uuid = format!("0f6d8a8e-0000-4000-8000-00000000010{i}");
        let mut line = serde_json::json!({
            "parentUuid": parent, "isSidechain": false, "userType": "external",
            "cwd": "/home/dev/x", "sessionId": "0f6d8a8e-0000-4000-8000-0000000000aa",
            "version": "2.1.39", "gitBranch": "main", "type": role, "uuid": uuid,
            "timestamp": format!("2026-01-05T09:00:0{i}.000Z"),
        });
        line["message"] = if *role == "user" {
            serde_json::json!({"role": "user", "content": text})
        } else {
            serde_json::json!({"model": "claude-opus-4-6", "id": format!("msg_{i}"),
                "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "usage": {"input_tokens": 3, "output_tokens": 2}})
        };
        if *role == "assistant" {
            line["requestId"] = format!("req_{i}").into();
        }
        lines.push(line.to_string());
        parent = Some(uuid);
    }
    std::fs::write(root.join("accented.jsonl"), lines.join("\n") + "\n").unwrap();
    dir.join("accented")
}

/// The corpus and the accented session in one archive.
fn search_archive(dir: &Path) -> Option<PathBuf> {
    let corpus = corpus()?;
    let accented = accented_session(dir);
    let archive = dir.join("archive.db");
    ingest_with(&archive, &["--owner", "test"], &[&corpus, &accented]);
    Some(archive)
}

/// The search archive with the admin scope's engine and a connection of the oracle's.
struct Fixture {
    _dir: tempfile::TempDir,
    q: Quarry,
    conn: Connection,
}

impl Fixture {
    fn new() -> Option<Fixture> {
        let dir = tempfile::tempdir().unwrap();
        let archive = search_archive(dir.path())?;
        Some(Fixture {
            q: open_as(&archive, "admin"),
            conn: Connection::open(&archive).unwrap(),
            _dir: dir,
        })
    }
}

/// (search text, lane, the oracle's own FTS5 expression).
const QUERIES: &[(&str, &str, &str)] = &[
    ("test", "dialogue", "test"),
    ("error", "dialogue", "error"),
    ("function", "dialogue", "function"),
    ("music", "dialogue", "music"),
    ("commit", "dialogue", "commit"),
    ("config", "dialogue", "config"),
    ("python install", "dialogue", "python AND install"),
    ("cache timeout", "dialogue", "cache AND timeout"),
    ("sqlite", "dialogue", "sqlite"),
    ("README", "dialogue", "readme"),
    ("login", "dialogue", "login"),
    ("parser", "dialogue", "parser"),
    ("schema migration", "dialogue", "schema AND migration"),
    ("\"unit test\"", "dialogue", "\"unit test\""),
    ("\"the file\"", "dialogue", "\"the file\""),
    ("refactor*", "dialogue", "refactor*"),
    ("config*", "dialogue", "config*"),
    ("web*", "dialogue", "web*"),
    ("react OR rust", "dialogue", "react OR rust"),
    ("bug NOT fix", "dialogue", "bug NOT fix"),
    (
        "(cache OR database) error",
        "dialogue",
        "(cache OR database) AND error",
    ),
    ("TODO", "dialogue", "todo"),
    ("fix bug", "dialogue", "fix bug"),
    ("łatwo", "dialogue", "latwo"),
    ("latwo", "dialogue", "latwo"),
    ("zrobiłem", "dialogue", "zrobilem"),
    ("Łodzi", "dialogue", "Lodzi"),
    ("zazolc gesla", "dialogue", "zazolc gesla"),
    ("café", "dialogue", "cafe"),
    ("\"test logowania\"", "dialogue", "\"test logowania\""),
    ("git", "actions", "git"),
    ("npm", "actions", "npm"),
    ("test*", "actions", "test*"),
    ("\"git status\"", "actions", "\"git status\""),
    ("error", "actions", "error"),
];

#[test]
fn the_admin_ranking_equals_fts5_bm25_for_every_query() {
    let Some(f) = Fixture::new() else { return };
    let (q, conn) = (&f.q, &f.conn);
    // First through the join of the index with `blocks`, then through the row directory a
    // long-lived server prepares: both equal the oracle.
    admin_ranking_equals_fts5_bm25(q, conn);
    assert_eq!(q.search_directory(), None, "built only when asked");
    let indexed: i64 = conn
        .query_row("SELECT count(*) FROM blocks_fts_docsize", [], |r| r.get(0))
        .unwrap();
    assert_eq!(q.prepare_search().unwrap(), Some(indexed as usize));
    admin_ranking_equals_fts5_bm25(q, conn);
    let (generation, blocks, uses) = q.search_directory().unwrap();
    let now: String = conn
        .query_row("SELECT value FROM meta WHERE key = 'generation'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!((generation.to_string(), blocks), (now, indexed as usize));
    assert!(
        uses >= QUERIES.len() as u64,
        "every search read the directory: {uses}"
    );
}

fn admin_ranking_equals_fts5_bm25(q: &Quarry, conn: &Connection) {
    let mut nonempty = 0;
    for (text, lane, fts) in QUERIES {
        let (pages, _, want) = walk_equals_oracle(q, conn, "blocks_fts", (text, lane, fts), 7);
        assert_eq!(pages[0].total, Some(want.len() as u64), "{text}: total");
        nonempty += usize::from(!want.is_empty());
        for page in &pages {
            assert_eq!(page.retrieval_lane, *lane);
            for hit in &page.hits {
                assert!(
                    hit.matched.snippet.contains('«'),
                    "{text}: the snippet highlights a term: {}",
                    hit.matched.snippet
                );
            }
        }
        // Ranks run 1.. across the pages.
        let ranks: Vec<u64> = pages
            .iter()
            .flat_map(|p| p.hits.iter().map(|h| h.matched.rank))
            .collect();
        assert_eq!(
            ranks,
            (1..=ranks.len() as u64).collect::<Vec<_>>(),
            "{text}: ranks"
        );
    }
    assert!(nonempty >= 30, "only {nonempty} queries matched anything");
}

#[test]
fn the_messages_of_one_session_are_ranked_by_their_best_block() {
    let Some(f) = Fixture::new() else { return };
    let (q, conn) = (&f.q, &f.conn);
    let sql = oracle_sql("dialogue", "blocks_fts");
    let sessions = oracle(conn, &sql, "test", &|_| true);
    let session = &sessions[0].session;
    // The oracle per message: best block by (score, block position), then (score, position).
    let mut best: BTreeMap<String, (f64, i64)> = BTreeMap::new();
    for Block {
        session: s,
        message,
        message_position: position,
        score,
        ..
    } in oracle_blocks(conn, &sql, "test")
    {
        if &s != session {
            continue;
        }
        let e = best.entry(message).or_insert((score, position));
        if score < e.0 {
            e.0 = score;
        }
    }
    let mut want: Vec<(String, f64, i64)> = best.into_iter().map(|(m, (s, p))| (m, s, p)).collect();
    want.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.2.cmp(&b.2)));
    let request = SearchRequest {
        text: "test".into(),
        session: Some(session.clone()),
        page_size: Some(3),
        ..Default::default()
    };
    let (_, got) = walk(q, &request);
    assert_eq!(
        got.iter().map(|r| r.message.clone()).collect::<Vec<_>>(),
        want.iter().map(|w| w.0.clone()).collect::<Vec<_>>()
    );
    for (g, w) in got.iter().zip(&want) {
        assert!((g.score - w.1).abs() <= 1e-9 * w.1.abs());
    }
    // The session's header comes with every page, also one without a hit.
    let none = runtime()
        .block_on(q.search(&SearchRequest {
            text: "zzqqxxnothing".into(),
            session: Some(session.clone()),
            ..Default::default()
        }))
        .unwrap();
    assert!(none.hits.is_empty());
    assert_eq!(none.session.as_ref().map(|s| &s.session_id), Some(session));
    // A session the scope does not hold is not found, whoever asks.
    let missing = SearchRequest {
        text: "test".into(),
        session: Some("claude-code:no-such-session".into()),
        ..Default::default()
    };
    let err = runtime().block_on(q.search(&missing)).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err}");
}

#[test]
fn a_readers_scores_equal_bm25_over_a_copy_holding_only_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = two_owner_archive(dir.path()) else {
        return;
    };
    let conn = Connection::open(&archive).unwrap();
    let alice = session_ids(&conn, "owner = 'alice'");
    assert!(!alice.is_empty());
    // The oracle's index: a second FTS5 table in a copy of the archive, filled with the rows
    // that may match for alice (her sessions' indexed blocks, folded as the ingest folds them,
    // without hidden messages' rows and without rows holding a credential in a masked column,
    // which never match for a reader), so FTS5's own bm25() reads her statistics.
    let copy = dir.path().join("copy.db");
    std::fs::copy(&archive, &copy).unwrap();
    let oracle_conn = Connection::open(&copy).unwrap();
    oracle_conn
        .execute_batch(
            "CREATE VIRTUAL TABLE alice_fts USING fts5(text, tool_name, tool_command, tool_path,
                 tokenize = 'unicode61 remove_diacritics 2');",
        )
        .unwrap();
    let fold = |v: Option<String>| v.map(|t| t.replace('ł', "l").replace('Ł', "L"));
    let (mut kept, mut guarded) = (0, 0);
    {
        let mut rows = oracle_conn
            .prepare(
                "SELECT b.rowid, b.text, b.tool_name, b.tool_command, b.tool_path FROM blocks b
                 JOIN sessions s ON s.session_id = b.session_id
                 JOIN messages m ON m.message_id = b.message_id AND m.session_id = b.session_id
                 WHERE s.owner = 'alice' AND NOT m.hidden",
            )
            .unwrap();
        type Row = (
            i64,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let rows: Vec<Row> = rows
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut insert = oracle_conn
            .prepare("INSERT INTO alice_fts (rowid, text, tool_name, tool_command, tool_path) VALUES (?1, ?2, ?3, ?4, ?5)")
            .unwrap();
        for (rowid, text, name, command, path) in rows {
            let empty = |v: &Option<String>| v.as_deref().unwrap_or("").is_empty();
            if empty(&text) && empty(&name) && empty(&command) && empty(&path) {
                continue;
            }
            let holds = |v: &Option<String>| {
                v.as_deref()
                    .is_some_and(|t| quarry_udf::mask_credentials(t) != t)
            };
            if holds(&text) || holds(&command) {
                guarded += 1;
                continue;
            }
            kept += 1;
            insert
                .execute(params![
                    rowid,
                    fold(text),
                    fold(name),
                    fold(command),
                    fold(path)
                ])
                .unwrap();
        }
    }
    assert!(kept > 100, "{kept} rows");
    eprintln!("alice's index: {kept} rows, {guarded} left out for holding a credential");
    let reader = open_as(&archive, "alice");
    let admin = open_as(&archive, "admin");
    let mut differs = false;
    for (text, lane, fts) in [
        ("music", "dialogue", "music"),
        ("test", "dialogue", "test"),
        ("error", "dialogue", "error"),
        ("function", "dialogue", "function"),
        ("git", "actions", "git"),
        ("python*", "dialogue", "python*"),
    ] {
        let (_, got, _) =
            walk_equals_oracle(&reader, &oracle_conn, "alice_fts", (text, lane, fts), 5);
        let request = SearchRequest {
            text: text.into(),
            lane: Some(lane.into()),
            page_size: Some(5),
            ..Default::default()
        };
        assert!(
            got.iter().all(|r| alice.contains(&r.session)),
            "{text}: another owner's session"
        );
        // The admin scope ranks the same sessions with the whole archive's statistics.
        let (_, everyone) = walk(&admin, &request);
        let admin_scores: HashMap<&str, f64> = everyone
            .iter()
            .map(|r| (r.session.as_str(), r.score))
            .collect();
        differs |= got.iter().any(|r| {
            admin_scores
                .get(r.session.as_str())
                .is_some_and(|s| *s != r.score)
        });
    }
    assert!(
        differs,
        "the reader's statistics never changed a score: the test shows nothing"
    );
}

#[test]
fn cursors_walk_without_duplicates_or_gaps_across_an_ingest_and_refuse_another_search() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = search_archive(dir.path()) else {
        return;
    };
    let q = open_as(&archive, "admin");
    // As a server would: the row directory of the first generation is ready, and is stale
    // once the ingest below moves the generation on.
    q.prepare_search().unwrap();
    let rt = runtime();
    let request = SearchRequest {
        text: "test".into(),
        page_size: Some(4),
        ..Default::default()
    };
    let unpaged = rt
        .block_on(q.search(&SearchRequest {
            page_size: Some(1000),
            ..request.clone()
        }))
        .unwrap();
    assert!(unpaged.next_cursor.is_none(), "one page holds it all");
    let first = rt.block_on(q.search(&request)).unwrap();
    let cursor = first.next_cursor.clone().unwrap();
    // Sessions that match are ingested between the pages: the walk still equals the ranking
    // at the first page's generation.
    let more = dir.path().join("more");
    for i in 0..3 {
        let file = more.join(format!("projects/-home-dev-y/{i}.jsonl"));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let line = serde_json::json!({
            "parentUuid": null, "isSidechain": false, "userType": "external", "cwd": "/home/dev/y",
            "sessionId": format!("0f6d8a8e-0000-4000-8000-0000000001{i:02}"), "version": "2.1.39",
            "type": "user", "message": {"role": "user", "content": "test test test test"},
            "uuid": format!("0f6d8a8e-0000-4000-8000-0000000002{i:02}"),
            "timestamp": "2026-02-05T09:00:00.000Z"
        });
        std::fs::write(&file, format!("{line}\n")).unwrap();
    }
    ingest_with(&archive, &["--owner", "test"], &[&more]);
    let mut hits = first.hits.clone();
    let mut next = Some(cursor);
    while let Some(cursor) = next {
        let page = rt
            .block_on(q.search(&SearchRequest {
                cursor: Some(cursor),
                ..request.clone()
            }))
            .unwrap();
        assert_eq!(
            page.generation, first.generation,
            "a walk stays at its generation"
        );
        hits.extend(page.hits.clone());
        next = page.next_cursor;
    }
    let walked: Vec<(&str, f64)> = hits
        .iter()
        .map(|h| (h.session.session_id.as_str(), h.matched.score))
        .collect();
    let whole: Vec<(&str, f64)> = unpaged
        .hits
        .iter()
        .map(|h| (h.session.session_id.as_str(), h.matched.score))
        .collect();
    assert_eq!(walked, whole);
    // A new search sees the new sessions (and ranks them first: four hits in four words).
    let fresh = rt.block_on(q.search(&request)).unwrap();
    assert!(fresh.generation > first.generation);
    assert_eq!(fresh.total.unwrap(), unpaged.total.unwrap() + 3);
    // The searches after the ingest found the directory stale and started the next one on a
    // thread of their own; once it is there, a search reads it and answers the same.
    let mut waited = 0;
    while q
        .search_directory()
        .is_none_or(|(g, _, _)| g < fresh.generation)
    {
        assert!(
            waited < 600,
            "no directory of the new generation after 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
    }
    let (_, _, uses) = q.search_directory().unwrap();
    let again = rt.block_on(q.search(&request)).unwrap();
    assert_eq!(q.search_directory().unwrap().2, uses + 1);
    let ranking = |e: &SearchEnvelope| -> Vec<(String, u64)> {
        e.hits
            .iter()
            .map(|h| (h.session.session_id.clone(), h.matched.score.to_bits()))
            .collect()
    };
    assert_eq!(ranking(&again), ranking(&fresh));
    // Another search's cursor is refused, as is a token quarry did not write.
    let cursor = first.next_cursor.clone().unwrap();
    for other in [
        SearchRequest {
            text: "error".into(),
            ..request.clone()
        },
        SearchRequest {
            lane: Some("actions".into()),
            ..request.clone()
        },
        SearchRequest {
            page_size: Some(5),
            ..request.clone()
        },
        SearchRequest {
            filter: Some("origin:claude-code".into()),
            ..request.clone()
        },
    ] {
        let err = rt
            .block_on(q.search(&SearchRequest {
                cursor: Some(cursor.clone()),
                ..other
            }))
            .unwrap_err();
        assert_eq!(err.code(), "invalid_cursor", "{err}");
        assert_eq!(err.class(), quarry::ErrorClass::Conflict);
    }
    let err = rt
        .block_on(q.search(&SearchRequest {
            cursor: Some("bm90IGEgY3Vyc29y".into()),
            ..request.clone()
        }))
        .unwrap_err();
    assert_eq!(err.code(), "invalid_cursor");
    // Another scope's: a reader given the admin's cursor.
    std::fs::write(
        dir.path().join("scopes.toml"),
        "[scope.tester]\nowner = \"test\"\n",
    )
    .unwrap();
    let reader = open_as(&archive, "tester");
    let err = rt
        .block_on(reader.search(&SearchRequest {
            cursor: Some(cursor),
            ..request.clone()
        }))
        .unwrap_err();
    assert_eq!(err.code(), "invalid_cursor");
}

#[test]
fn filters_narrow_before_ranking_and_an_empty_filtered_search_says_why() {
    let Some(f) = Fixture::new() else { return };
    let (q, conn) = (&f.q, &f.conn);
    let rt = runtime();
    let codex = session_ids(conn, "origin = 'codex-session'");
    let want = oracle(conn, &oracle_sql("dialogue", "blocks_fts"), "test", &|s| {
        codex.iter().any(|c| c == s)
    });
    assert!(!want.is_empty());
    let request = SearchRequest {
        text: "test".into(),
        filter: Some("origin:codex-session".into()),
        page_size: Some(3),
        ..Default::default()
    };
    let (_, got) = walk(q, &request);
    assert_same_ranking("origin:codex-session", &got, &want);
    let none = rt
        .block_on(q.search(&SearchRequest {
            filter: Some("origin:codex-session since:2099-01-01".into()),
            ..request.clone()
        }))
        .unwrap();
    assert!(none.hits.is_empty());
    let d = none
        .diagnostics
        .expect("diagnostics for an empty filtered search");
    assert_eq!(d.filtered_sessions, 0);
    assert!(d.matching_sessions_unfiltered > 0);
    // A wrong filter is the language's own diagnostic.
    let err = rt
        .block_on(q.search(&SearchRequest {
            filter: Some("colour:blue".into()),
            ..request.clone()
        }))
        .unwrap_err();
    assert_eq!(err.code(), "invalid_filter", "{err}");
    // Its diagnostics are about the filter as written, not the query quarry built from it.
    let body = err.body(Some("colour:blue")).to_json().to_string();
    assert!(body.contains("colour"), "{body}");
    assert!(!body.contains("select session_id"), "{body}");
}

#[test]
fn lanes_without_embeddings_and_texts_without_words_are_typed_errors() {
    let Some(archive) = crate::support::corpus_archive() else {
        return;
    };
    let q = open_as(archive, "admin");
    let rt = runtime();
    for lane in ["hybrid", "semantic"] {
        let err = rt
            .block_on(q.search(&SearchRequest {
                text: "test".into(),
                lane: Some(lane.into()),
                ..Default::default()
            }))
            .unwrap_err();
        assert_eq!(err.code(), "lane_unavailable", "{lane}: {err}");
    }
    for text in ["", "  ** -- ", "test AND", "(test"] {
        let err = rt
            .block_on(q.search(&SearchRequest {
                text: text.into(),
                ..Default::default()
            }))
            .unwrap_err();
        assert_eq!(err.code(), "invalid_query", "{text:?}: {err}");
    }
    // FTS5 syntax is data: a column filter finds nothing rather than searching a column.
    let page = rt
        .block_on(q.search(&SearchRequest {
            text: "tool_command:git".into(),
            ..Default::default()
        }))
        .unwrap();
    assert_eq!(page.query, "tool_command:git");
}

#[test]
fn a_reader_finds_no_masked_secret_and_its_snippets_are_masked() {
    let dir = tempfile::tempdir().unwrap();
    let (archive, api_key, _) = secret_archive(dir.path());
    let admin = open_as(&archive, "admin");
    let reader = open_as(&archive, "alice");
    let rt = runtime();
    let ask = |q: &Quarry, text: &str| {
        rt.block_on(q.search(&SearchRequest {
            text: text.into(),
            lane: Some("actions".into()),
            ..Default::default()
        }))
        .unwrap()
    };
    let piece = &api_key[8..14];
    assert_eq!(ask(&admin, &format!("{piece}*")).total, Some(1));
    assert_eq!(ask(&reader, &format!("{piece}*")).total, Some(0));
    assert_eq!(
        ask(&reader, "OPENAI_API_KEY").total,
        Some(0),
        "the row holding the key never matches"
    );
    // What the reader does match shows no secret.
    for text in ["API", "curl OR status OR env"] {
        for q in [&reader] {
            let page = ask(q, text);
            for hit in &page.hits {
                assert!(
                    !hit.matched.snippet.contains(piece),
                    "{}",
                    hit.matched.snippet
                );
            }
        }
    }
    // Every search is audited, with its outcome.
    let records = admin.audit_records(50).unwrap();
    let searches = records
        .iter()
        .filter(|r| format!("{r:?}").contains("search"))
        .count();
    assert!(searches >= 3, "{searches} searches audited");
}

/// `GET /api/search?...` with `token`.
fn http_search(base: &str, token: &str, params: &[(&str, &str)]) -> crate::server::Reply {
    let query: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{k}={}", crate::server::encode(v)))
        .collect();
    crate::server::request(
        "GET",
        &format!("{base}/api/search?{}", query.join("&")),
        Some(token),
        None,
        None,
    )
}

#[test]
fn http_search_pages_within_the_tokens_scope_and_a_cursor_survives_a_restart() {
    use crate::server::{Server, fixture, request};
    let Some(f) = fixture() else { return };
    let conn = Connection::open(&f.archive).unwrap();
    let alice = session_ids(&conn, "owner = 'alice'");
    let mut server = Server::start(&f.archive, &f.tokens, &[]);
    // The reader's walk: only her sessions, each once, across pages.
    let mut walked = Vec::new();
    let mut cursor: Option<String> = None;
    let mut first_cursor = None;
    loop {
        let mut params = vec![("q", "the"), ("limit", "2")];
        if let Some(c) = &cursor {
            params.push(("cursor", c.as_str()));
        }
        let reply = http_search(&server.base, &f.alice, &params);
        assert_eq!(
            reply.status,
            200,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
        let page = reply.json();
        for hit in page["hits"].as_array().unwrap() {
            walked.push(hit["session"]["session_id"].as_str().unwrap().to_string());
        }
        cursor = page["next_cursor"].as_str().map(str::to_string);
        first_cursor = first_cursor.or(cursor.clone());
        if cursor.is_none() {
            assert_eq!(page["total"].as_u64().unwrap() as usize, walked.len());
            break;
        }
    }
    assert!(walked.len() > 2, "more than one page: {}", walked.len());
    assert!(
        walked.iter().all(|s| alice.contains(s)),
        "a session outside alice's scope"
    );
    let mut unique = walked.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), walked.len(), "a session came twice");
    // The admin token's cursor is not the reader's; a POST body works as the query string.
    let admin = http_search(&server.base, &f.admin, &[("q", "the"), ("limit", "2")]).json();
    let foreign = http_search(
        &server.base,
        &f.alice,
        &[
            ("q", "the"),
            ("limit", "2"),
            ("cursor", admin["next_cursor"].as_str().unwrap()),
        ],
    );
    assert_eq!(
        (foreign.status, foreign.json()["code"].clone()),
        (409, "invalid_cursor".into())
    );
    let body =
        serde_json::json!({"q": "test", "limit": 2, "where": "origin:codex-session"}).to_string();
    let post = request(
        "POST",
        &format!("{}/api/search", server.base),
        Some(&f.admin),
        None,
        Some(body.as_bytes()),
    );
    assert_eq!(post.status, 200, "{}", String::from_utf8_lossy(&post.body));
    let unknown = http_search(&server.base, &f.admin, &[("q", "test"), ("colour", "blue")]);
    assert_eq!(unknown.status, 400);
    // Facets over HTTP in the token's scope: her origins only, and the search's sessions.
    let facets = crate::server::request(
        "GET",
        &format!("{}/api/facets?q=the&families=origin,tool", server.base),
        Some(&f.alice),
        None,
        None,
    );
    assert_eq!(
        facets.status,
        200,
        "{}",
        String::from_utf8_lossy(&facets.body)
    );
    let facets = facets.json();
    assert_eq!(
        facets["total_sessions"]["global"].as_u64().unwrap() as usize,
        alice.len()
    );
    assert_eq!(
        facets["total_sessions"]["scoped"].as_u64().unwrap() as usize,
        walked.len()
    );
    assert_eq!(
        facets["complete_families"],
        serde_json::json!(["origin", "tool"])
    );
    let bad = crate::server::request(
        "GET",
        &format!("{}/api/facets?families=colour", server.base),
        Some(&f.alice),
        None,
        None,
    );
    assert_eq!(
        (bad.status, bad.json()["code"].clone()),
        (400, "bad_request".into())
    );
    // A restart loses nothing: the first page's cursor gives the same second page.
    let second = http_search(
        &server.base,
        &f.alice,
        &[
            ("q", "the"),
            ("limit", "2"),
            ("cursor", first_cursor.as_deref().unwrap()),
        ],
    )
    .json();
    assert!(server.terminate());
    let restarted = Server::start(&f.archive, &f.tokens, &[]);
    let again = http_search(
        &restarted.base,
        &f.alice,
        &[
            ("q", "the"),
            ("limit", "2"),
            ("cursor", first_cursor.as_deref().unwrap()),
        ],
    )
    .json();
    assert_eq!(again["hits"], second["hits"]);
}

/// The language's answer to `query` as the oracle's rows: (session, score, best message,
/// matching blocks) in the answer's order, with its semantics.
fn ranked_rows(q: &Quarry, query: &str) -> (String, Vec<Ranked>) {
    let answer = runtime()
        .block_on(async {
            q.query(query, quarry::Caps::default())
                .await?
                .collect()
                .await
        })
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    let column = |name: &str| answer.schema.index_of(name).unwrap();
    let (session, score, message, blocks) = (
        column("session_id"),
        column("score"),
        column("message_id"),
        column("matching_blocks"),
    );
    let rows = crate::support::rows::json_rows(&answer.batches)
        .into_iter()
        .map(|r| Ranked {
            session: r[session].as_str().unwrap().to_string(),
            score: r[score].as_f64().unwrap(),
            message: r[message].as_str().unwrap().to_string(),
            blocks: r[blocks].as_u64().unwrap(),
        })
        .collect();
    let semantics = serde_json::to_value(answer.meta.semantics).unwrap();
    (semantics.as_str().unwrap().to_string(), rows)
}

#[test]
fn the_ranked_form_of_the_language_ranks_as_the_oracle_and_the_rest_stays_a_filter() {
    let Some(f) = Fixture::new() else { return };
    let (q, conn) = (&f.q, &f.conn);
    let dialogue = oracle_sql("dialogue", "blocks_fts");
    let codex = session_ids(conn, "origin = 'codex-session'");
    let in_codex = |s: &str| codex.iter().any(|c| c == s);
    let all = |_: &str| true;
    type Case<'a> = (&'a str, &'a str, &'a dyn Fn(&str) -> bool, usize, usize);
    let cases: [Case; 6] = [
        ("test", "test", &all, 0, 100),
        ("test | limit 5", "test", &all, 0, 5),
        ("test | offset 3 | limit 4", "test", &all, 3, 4),
        ("test origin:codex-session", "test", &in_codex, 0, 100),
        ("test error | limit 3", "test AND error", &all, 0, 3),
        (
            "sessions where ~\"test*\" AND origin:codex-session",
            "test*",
            &in_codex,
            0,
            100,
        ),
    ];
    for (query, fts, keep, skip, take) in cases {
        let want: Vec<Ranked> = oracle(conn, &dialogue, fts, keep)
            .into_iter()
            .skip(skip)
            .take(take)
            .collect();
        let (semantics, got) = ranked_rows(q, query);
        assert_eq!(semantics, "top-k", "{query}");
        assert!(!want.is_empty(), "{query}: the oracle finds sessions");
        assert_same_ranking(query, &got, &want);
    }
    // The actions lane.
    let want: Vec<Ranked> = oracle(conn, &oracle_sql("actions", "blocks_fts"), "git", &|_| true)
        .into_iter()
        .take(10)
        .collect();
    assert_same_ranking(
        "lane:actions git",
        &ranked_rows(q, "git lane:actions | limit 10").1,
        &want,
    );
    // With any other stage the text filters, unranked: every matching session counted.
    let answer = runtime()
        .block_on(async {
            q.query("test | count", quarry::Caps::default())
                .await?
                .collect()
                .await
        })
        .unwrap();
    let counted = crate::support::rows::json_rows(&answer.batches)[0][0]
        .as_u64()
        .unwrap();
    assert!(counted > 0);
    // A ranked answer is bounded: past 10,000 sessions it says how to read further.
    let err = runtime()
        .block_on(async {
            q.query(
                "test | offset 1 | limit 18446744073709551615",
                quarry::Caps::default(),
            )
            .await?
            .collect()
            .await
        })
        .unwrap_err();
    assert_eq!(err.code(), "bad_request", "{err}");
    // A lane without embeddings is the typed error, not a fallback.
    let err = runtime()
        .block_on(async {
            q.query("test lane:semantic", quarry::Caps::default())
                .await?
                .collect()
                .await
        })
        .unwrap_err();
    assert_eq!(err.code(), "lane_unavailable", "{err}");
}

/// A ranking's groups, everything compared: session, score, best block (message, position,
/// row id) and matching blocks.
fn groups(r: &[quarry::search::rank::Ranked]) -> Vec<(String, u64, String, i64, i64, u64)> {
    r.iter()
        .map(|e| {
            (
                e.best.session_id.clone(),
                e.best.score.to_bits(),
                e.best.message_id.clone(),
                e.best.block_position,
                e.best.rowid,
                e.blocks,
            )
        })
        .collect()
}

#[test]
fn a_ranking_split_across_connections_or_read_through_the_directory_equals_the_one_read_on_one() {
    use quarry::search::rank::{self, Lane, Narrowing, Universe};
    let Some(f) = Fixture::new() else { return };
    let path = f._dir.path().join("archive.db");
    let open = || {
        let conn =
            Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        quarry_fts5::register(&conn).unwrap();
        conn
    };
    let conn = open();
    let excluded = rank::system_messages(&conn).unwrap();
    let pin = rank::max_rowid(&conn).unwrap();
    let directory = quarry::search::directory::Directory::build(&conn, &excluded, (0, 0)).unwrap();
    assert!(!directory.is_empty());
    let universe = Universe {
        sessions: None,
        hidden: None,
        guard: false,
    };
    for (text, lane) in [
        ("test", Lane::Dialogue),
        ("git", Lane::Actions),
        ("web*", Lane::Dialogue),
    ] {
        let search = quarry::search::text::parse(text).unwrap();
        let narrowing = Narrowing {
            lane,
            candidates: None,
            session: None,
            excluded: &excluded,
            pin,
            directory: None,
        };
        let (rows, tokens) = rank::table_totals(&conn, &search, pin).unwrap().unwrap();
        let stats = quarry::search::bm25::Stats {
            rows,
            tokens,
            holding: rank::holding(&conn, &search, &universe, pin).unwrap(),
        };
        let ranked = |more: Vec<Connection>| {
            rank::rank(&conn, more, &search, &universe, &narrowing, &stats, false).unwrap()
        };
        let one = ranked(Vec::new());
        let three = ranked(vec![open(), open()]);
        assert!(!one.is_empty(), "{text}");
        let key = |r: &Vec<rank::Ranked>| groups(r);
        assert_eq!(
            key(&three),
            key(&one),
            "{text}: split across three connections"
        );
        // Through the row directory, on one connection and on three: the same groups, and
        // the same sessions matching.
        let indexed = Narrowing {
            directory: Some(&directory),
            ..narrowing
        };
        let ranked = |more: Vec<Connection>| {
            rank::rank(&conn, more, &search, &universe, &indexed, &stats, false).unwrap()
        };
        assert_eq!(key(&ranked(Vec::new())), key(&one), "{text}: directory");
        assert_eq!(
            key(&ranked(vec![open(), open()])),
            key(&one),
            "{text}: directory, split"
        );
        assert_eq!(
            rank::sessions(&conn, &search, &universe, &indexed).unwrap(),
            rank::sessions(&conn, &search, &universe, &narrowing).unwrap(),
            "{text}: matching sessions"
        );
    }
    // A filter's sessions and system messages (here: every message of some sessions that
    // match) narrow the same rows through both paths.
    let search = quarry::search::text::parse("test").unwrap();
    let matching: Vec<String> = session_ids(
        &conn,
        "session_id IN (SELECT b.session_id FROM blocks_fts JOIN blocks b \
         ON b.rowid = blocks_fts.rowid WHERE blocks_fts MATCH 'test')",
    );
    assert!(matching.len() >= 6, "{} sessions match", matching.len());
    let candidates: std::collections::HashSet<String> =
        matching.iter().step_by(2).cloned().collect();
    let system: std::collections::HashSet<String> = conn
        .prepare("SELECT message_id FROM messages WHERE session_id = ?1 OR session_id = ?2")
        .unwrap()
        .query_map([&matching[0], &matching[1]], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_ne!(system.len(), excluded.len());
    let marked = quarry::search::directory::Directory::build(&conn, &system, (0, 0)).unwrap();
    let (rows, tokens) = rank::table_totals(&conn, &search, pin).unwrap().unwrap();
    let stats = quarry::search::bm25::Stats {
        rows,
        tokens,
        holding: rank::holding(&conn, &search, &universe, pin).unwrap(),
    };
    for candidates in [None, Some(&candidates)] {
        let narrowing = |directory| Narrowing {
            lane: Lane::Dialogue,
            candidates,
            session: None,
            excluded: &system,
            pin,
            directory,
        };
        let ranked = |directory| {
            rank::rank(
                &conn,
                Vec::new(),
                &search,
                &universe,
                &narrowing(directory),
                &stats,
                false,
            )
            .unwrap()
        };
        let joined = ranked(None);
        assert!(!joined.is_empty());
        assert!(joined.iter().all(|r| r.best.session_id != matching[0]));
        assert_eq!(groups(&ranked(Some(&marked))), groups(&joined));
        // A directory built with other system messages is not read: the join answers.
        assert_eq!(groups(&ranked(Some(&directory))), groups(&joined));
    }
    // Readers never read it: their universe leaves rows out.
    let some: std::collections::HashSet<String> =
        session_ids(&conn, "1 = 1").into_iter().take(3).collect();
    let reader = Universe {
        sessions: Some(&some),
        hidden: None,
        guard: true,
    };
    let narrowing = |directory| Narrowing {
        lane: Lane::Dialogue,
        candidates: None,
        session: None,
        excluded: &excluded,
        pin,
        directory,
    };
    assert_eq!(
        rank::sessions(&conn, &search, &reader, &narrowing(Some(&directory))).unwrap(),
        rank::sessions(&conn, &search, &reader, &narrowing(None)).unwrap(),
    );
}
