//! Pages of unit queries against SQLite: a walk of a row query with `next_cursor` equals
//! SQLite's `ORDER BY` (sort keys, NULLs last, then the primary key), also while sessions are
//! ingested between pages (no row twice, none of the first page's archive skipped); the query's
//! own limit spans the walk; aggregates page by offset and refuse a page once the generation
//! moved (`stale_cursor`); another query's or scope's cursor is `invalid_cursor`; HTTP pages the
//! same way.

use std::path::{Path, PathBuf};

use quarry::{Caps, Quarry, QueryResult, Request};
use rusqlite::Connection;
use serde_json::Value;

use crate::sql_scope::{open_as, two_owner_archive};
use crate::support::rows::json_rows;
use crate::support::{corpus, ingest_with, quarry as quarry_cli, runtime};

/// One page of `query` under a cap of `limit`, after `cursor`.
fn page(q: &Quarry, query: &str, limit: usize, cursor: Option<String>) -> QueryResult {
    let request = Request::query(query)
        .with_caps(Caps {
            limit: Some(limit),
            offset: None,
        })
        .paged(cursor);
    runtime()
        .block_on(async { q.run(&request).await?.collect().await })
        .unwrap()
}

/// Every page of `query` under a cap of `limit`; `between(n)` runs after page `n`.
fn walk(q: &Quarry, query: &str, limit: usize, between: &mut dyn FnMut(usize)) -> Vec<Vec<Value>> {
    let mut rows = Vec::new();
    let mut cursor = None;
    for n in 1.. {
        let answer = page(q, query, limit, cursor.take());
        assert!(answer.num_rows() <= limit, "{query}: page {n} too long");
        rows.extend(json_rows(&answer.batches));
        match answer.next_cursor.clone() {
            Some(next) => {
                assert!(answer.truncated, "a cursor only when the cap cut rows");
                assert_eq!(
                    answer.num_rows(),
                    limit,
                    "{query}: a short page with a cursor"
                );
                cursor = Some(next);
            }
            None => break,
        }
        between(n);
        assert!(n < 10_000, "{query}: the walk ends");
    }
    rows
}

/// SQLite's first column for `sql`, as JSON strings.
fn ids(conn: &Connection, sql: &str) -> Vec<Value> {
    conn.prepare(sql)
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|r| Value::String(r.unwrap()))
        .collect()
}

fn first_column(rows: Vec<Vec<Value>>) -> Vec<Value> {
    rows.into_iter().map(|mut r| r.remove(0)).collect()
}

fn archive(dir: &Path) -> Option<PathBuf> {
    two_owner_archive(dir)
}

#[test]
fn a_walk_of_rows_equals_sqlites_order_and_survives_an_ingest_between_pages() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = archive(dir.path()) else {
        return;
    };
    let q = open_as(&archive, "admin");
    let conn = Connection::open(&archive).unwrap();
    // A sort with ties and NULLs: word counts repeat, so the key decides among them.
    let query = "messages where role:assistant | sort by word_count desc | select message_id";
    let order = "SELECT message_id FROM messages WHERE role = 'assistant' \
                 ORDER BY word_count DESC NULLS LAST, message_id";
    let want = ids(&conn, order);
    assert!(want.len() > 40, "enough rows for pages: {}", want.len());
    assert_eq!(first_column(walk(&q, query, 17, &mut |_| {})), want);
    // No sort: primary-key order.
    let want = ids(&conn, "SELECT action_id FROM actions ORDER BY action_id");
    let got = first_column(walk(&q, "actions | select action_id", 50, &mut |_| {}));
    assert_eq!(got, want);
    // The query's own limit spans the walk; its offset is the first page's.
    let want = ids(
        &conn,
        "SELECT message_id FROM messages ORDER BY occurred_at_ms NULLS LAST, message_id LIMIT 23 OFFSET 4",
    );
    let got = first_column(walk(
        &q,
        "messages | sort by time | offset 4 | limit 23 | select message_id",
        10,
        &mut |_| {},
    ));
    assert_eq!(got, want);
    // Sessions ingested between pages: every row there at the start comes once, in order, and
    // the walk is in the order SQLite gives the archive at its end.
    let before = ids(&conn, order);
    let more = corpus().unwrap().join("codex/madshn-localpush");
    let got = first_column(walk(&q, query, 17, &mut |n| {
        if n == 2 {
            ingest_with(&archive, &["--owner", "carol"], &[&more]);
        }
    }));
    let after = ids(&conn, order);
    assert!(
        after.len() > before.len(),
        "the ingest added assistant messages"
    );
    let mut unique = got.clone();
    unique.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    unique.dedup();
    assert_eq!(unique.len(), got.len(), "a row came twice");
    assert!(
        before.iter().all(|id| got.contains(id)),
        "a row of the first page's archive was skipped"
    );
    let positions: Vec<usize> = got
        .iter()
        .map(|id| after.iter().position(|a| a == id).unwrap())
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "the walk is in the archive's order"
    );
}

#[test]
fn aggregates_page_by_offset_and_refuse_a_page_once_the_generation_moved() {
    let dir = tempfile::tempdir().unwrap();
    let Some(archive) = archive(dir.path()) else {
        return;
    };
    let q = open_as(&archive, "admin");
    let conn = Connection::open(&archive).unwrap();
    let query = "messages | group by session_id | count";
    let want = ids(
        &conn,
        "SELECT session_id FROM messages GROUP BY session_id ORDER BY session_id",
    );
    assert!(want.len() > 4);
    let got = first_column(walk(
        &q,
        "messages | group by session_id | count | sort by key asc",
        2,
        &mut |_| {},
    ));
    assert_eq!(got, want);
    // Buckets tied on a sorted metric (and a count's buckets by default, most rows first) come
    // in key order, so offset pages neither repeat nor skip one.
    let want = ids(
        &conn,
        "SELECT session_id FROM messages GROUP BY session_id ORDER BY count(*) DESC, session_id",
    );
    for query in [
        query,
        "messages | group by session_id | count | sort by count desc",
    ] {
        let got = first_column(walk(&q, query, 2, &mut |_| {}));
        assert_eq!(got, want, "{query}");
    }
    // A page asked after a tag moved the generation is refused, not shifted.
    let first = page(&q, query, 2, None);
    let cursor = first.next_cursor.clone().unwrap();
    let out = quarry_cli(&[
        "--archive",
        archive.to_str().unwrap(),
        "tag",
        want[0].as_str().unwrap(),
        "review",
    ]);
    assert!(out.status.success());
    let request = Request::query(query)
        .with_caps(Caps {
            limit: Some(2),
            offset: None,
        })
        .paged(Some(cursor.clone()));
    let err = runtime()
        .block_on(async { q.run(&request).await?.collect().await })
        .unwrap_err();
    assert_eq!(err.code(), "stale_cursor", "{err}");
    // Another query's cursor, and the admin's cursor in a reader's scope, are not theirs.
    let rows = page(&q, "messages | select message_id", 3, None);
    let rows_cursor = rows.next_cursor.unwrap();
    for (scope, query, cursor) in [
        ("admin", "actions | select action_id", &rows_cursor),
        ("alice", "messages | select message_id", &rows_cursor),
        (
            "admin",
            "messages | select message_id",
            &"not a cursor".to_string(),
        ),
    ] {
        let request = Request::query(query)
            .with_caps(Caps {
                limit: Some(3),
                offset: None,
            })
            .paged(Some(cursor.clone()));
        let err = runtime()
            .block_on(async {
                open_as(&archive, scope)
                    .run(&request)
                    .await?
                    .collect()
                    .await
            })
            .unwrap_err();
        assert_eq!(err.code(), "invalid_cursor", "{scope} {query}: {err}");
    }
}

#[test]
fn a_cursor_whose_anchor_does_not_fit_the_order_is_invalid() {
    use quarry::answer::page::{At, PageCursor, digest};
    let Some(archive) = crate::support::corpus_archive() else {
        return;
    };
    let q = open_as(archive, "admin");
    let query = "messages | sort by word_count desc | select message_id";
    for key in [
        vec![Some("many".to_string()), Some("m".to_string())],
        vec![Some("5".to_string())],
    ] {
        let forged = PageCursor {
            v: 1,
            digest: digest(query, "admin"),
            returned: 3,
            at: At::Key { key },
        }
        .encode();
        let request = Request::query(query)
            .with_caps(Caps {
                limit: Some(3),
                offset: None,
            })
            .paged(Some(forged));
        let err = runtime()
            .block_on(async { q.run(&request).await?.collect().await })
            .unwrap_err();
        assert_eq!(err.code(), "invalid_cursor", "{err}");
    }
}

#[test]
fn http_query_units_hands_out_cursors_for_a_capped_answer() {
    use crate::server::{Server, encode, fixture, request};
    let Some(f) = fixture() else { return };
    let conn = Connection::open(&f.archive).unwrap();
    let server = Server::start(&f.archive, &f.tokens, &[]);
    let expression = "messages where role:user | select message_id";
    let want = ids(
        &conn,
        "SELECT message_id FROM messages WHERE role = 'user' ORDER BY message_id",
    );
    let mut got = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut url = format!(
            "{}/api/query-units?expression={}&limit=25",
            server.base,
            encode(expression)
        );
        if let Some(c) = &cursor {
            url.push_str(&format!("&cursor={}", encode(c)));
        }
        let reply = request("GET", &url, Some(&f.admin), None, None);
        assert_eq!(
            reply.status,
            200,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
        let envelope = reply.json();
        for row in envelope["rows"].as_array().unwrap() {
            got.push(row[0].clone());
        }
        cursor = envelope["next_cursor"].as_str().map(str::to_string);
        if cursor.is_none() {
            break;
        }
        assert_eq!(envelope["truncated"], true);
    }
    assert_eq!(got, want);
    // A POST body takes the cursor as well; another query's cursor is a 409.
    let first = request(
        "GET",
        &format!(
            "{}/api/query-units?expression={}&limit=5",
            server.base,
            encode(expression)
        ),
        Some(&f.admin),
        None,
        None,
    )
    .json();
    let body = serde_json::json!({
        "expression": "actions | select action_id",
        "limit": 5,
        "cursor": first["next_cursor"],
    })
    .to_string();
    let foreign = request(
        "POST",
        &format!("{}/api/query-units", server.base),
        Some(&f.admin),
        None,
        Some(body.as_bytes()),
    );
    assert_eq!(
        (foreign.status, foreign.json()["code"].clone()),
        (409, "invalid_cursor".into())
    );
}
