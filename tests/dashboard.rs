//! The dashboards over HTTP (`/api/dashboard/{panel}`) and as a file (`quarry report …
//! --format html`): each panel under the caller's scope, in the zone asked for, its numbers
//! checked against SQLite on the archive file; the HTML report one self-contained document with
//! the report's totals. (The page itself is driven in a browser by tests/clients/web_client.cjs.)

use std::collections::BTreeMap;

use serde_json::Value;

use crate::server::{Server, encode, fixture, request};
use crate::support::quarry;
use crate::support::rows::sql_rows;

fn panel(server: &Server, token: &str, name: &str, params: &[(&str, &str)]) -> (u16, Value) {
    let query: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect();
    let url = format!("{}/api/dashboard/{name}?{}", server.base, query.join("&"));
    let reply = request("GET", &url, Some(token), None, None);
    (reply.status, reply.json())
}

fn figure(panel: &Value, id: &str) -> Value {
    panel["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .map(|f| f["value"].clone())
        .unwrap_or_else(|| panic!("no figure {id}: {panel}"))
}

#[test]
fn each_panel_answers_under_the_callers_scope_in_the_zone_asked() {
    let Some(f) = fixture() else { return };
    let server = Server::start(&f.archive, &f.tokens, &[]);
    let list = request(
        "GET",
        &format!("{}/api/dashboard", server.base),
        Some(&f.alice),
        None,
        None,
    )
    .json();
    let names: Vec<String> = list["panels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names.len(), 9, "{list}");

    // Every panel answers alice's token; none names a repository only bob's sessions have.
    let bob_only: Vec<String> = sql_rows(
        &f.archive,
        "SELECT DISTINCT repo FROM sessions WHERE owner = 'bob' AND repo IS NOT NULL
         AND repo NOT IN (SELECT repo FROM sessions WHERE owner = 'alice' AND repo IS NOT NULL)",
    )
    .into_iter()
    .map(|r| r[0].as_str().unwrap().to_string())
    .collect();
    assert!(!bob_only.is_empty());
    for name in &names {
        let (status, body) = panel(&server, &f.alice, name, &[("tz", "UTC")]);
        assert_eq!(status, 200, "{name}: {body}");
        assert!(!body["charts"].as_array().unwrap().is_empty(), "{name}");
        assert!(body["query"].as_str().unwrap().len() > 10, "{name}");
        let text = body.to_string();
        for repo in &bob_only {
            assert!(
                !text.contains(&format!("\"{repo}\"")),
                "{name} shows bob's {repo} to alice"
            );
        }
    }

    // Every panel in one streamed answer: a line per panel, each equal to its own endpoint's.
    let all = request(
        "GET",
        &format!("{}/api/dashboard/all?tz=UTC", server.base),
        Some(&f.alice),
        None,
        None,
    );
    assert_eq!(all.status, 200);
    assert!(
        all.headers.contains("application/x-ndjson"),
        "{}",
        all.headers
    );
    let lines: BTreeMap<String, Value> = String::from_utf8(all.body)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["id"].as_str().unwrap().to_string(), v["panel"].clone())
        })
        .collect();
    assert_eq!(lines.keys().cloned().collect::<Vec<_>>().len(), 9);
    for name in &names {
        let (_, one) = panel(&server, &f.alice, name, &[("tz", "UTC")]);
        assert_eq!(lines[name]["rows"], one["rows"], "{name}");
        assert_eq!(lines[name]["figures"], one["figures"], "{name}");
    }

    // Busiest repositories: alice's sessions and messages by repository, as SQLite counts them.
    let (_, repos) = panel(&server, &f.alice, "repos", &[]);
    let got: BTreeMap<String, (i64, i64)> = repos["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r[0].as_str().unwrap_or("(none)").to_string(),
                (r[1].as_i64().unwrap(), r[2].as_i64().unwrap()),
            )
        })
        .collect();
    let want: BTreeMap<String, (i64, i64)> = sql_rows(
        &f.archive,
        "SELECT coalesce(repo, '(none)'), count(*), sum(message_count) FROM sessions
         WHERE owner = 'alice' GROUP BY repo",
    )
    .into_iter()
    .map(|r| {
        (
            r[0].as_str().unwrap().to_string(),
            (r[1].as_i64().unwrap(), r[2].as_i64().unwrap()),
        )
    })
    .collect();
    assert!(want.len() <= 12, "the panel shows the top 12");
    assert_eq!(got, want);

    // Sessions per day by origin in +09:00: the days shift with the zone, as SQLite shifts them.
    let (_, by_origin) = panel(&server, &f.admin, "sessions-by-origin", &[("tz", "+09:00")]);
    // (Sessions without a time fall in no day: SQLite's side leaves them out too.)
    let got: BTreeMap<(String, String), i64> = by_origin["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r[0].is_null())
        .map(|r| {
            (
                (
                    r[0].as_str().unwrap()[..10].to_string(),
                    r[1].as_str().unwrap().to_string(),
                ),
                r[2].as_i64().unwrap(),
            )
        })
        .collect();
    let want: BTreeMap<(String, String), i64> = sql_rows(
        &f.archive,
        "SELECT date(created_at / 1000 + 9 * 3600, 'unixepoch'), origin, count(*) FROM sessions
         WHERE created_at IS NOT NULL GROUP BY 1, 2",
    )
    .into_iter()
    .map(|r| {
        (
            (
                r[0].as_str().unwrap().to_string(),
                r[1].as_str().unwrap().to_string(),
            ),
            r[2].as_i64().unwrap(),
        )
    })
    .collect();
    assert_eq!(got, want);

    // Tokens over a range of days: the admin's equal SQLite's sum; alice's are fewer and equal
    // her report's over the same days.
    let days = sql_rows(
        &f.archive,
        "SELECT min(date(occurred_at_ms / 1000, 'unixepoch')), max(date(occurred_at_ms / 1000, 'unixepoch')) FROM usage",
    );
    let (since, until) = (days[0][0].as_str().unwrap(), days[0][1].as_str().unwrap());
    let range = [("since", since), ("until", until), ("tz", "UTC")];
    let (_, admin) = panel(&server, &f.admin, "usage", &range);
    let total = sql_rows(
        &f.archive,
        "SELECT sum(input_tokens + output_tokens + cache_write_tokens + cache_read_tokens) FROM usage",
    );
    assert_eq!(figure(&admin, "total-tokens"), total[0][0]);
    let (_, alice) = panel(&server, &f.alice, "usage", &range);
    let report = crate::support::quarry_json(&[
        "--archive",
        f.archive.to_str().unwrap(),
        "--scope",
        "alice",
        "--tz",
        "UTC",
        "--format",
        "json",
        "report",
        "daily",
        "--since",
        since,
        "--until",
        until,
        "--no-refresh",
    ]);
    assert_eq!(
        figure(&alice, "total-tokens"),
        report["totals"]["total_tokens"]
    );
    let cents = |v: &Value| (v.as_f64().unwrap() * 100.0).round() as i64;
    assert_eq!(
        cents(&figure(&alice, "total-cost")),
        cents(&report["totals"]["cost_usd"])
    );
    assert!(
        figure(&alice, "total-tokens").as_u64() < figure(&admin, "total-tokens").as_u64(),
        "alice sees fewer tokens than the admin"
    );

    // Wrong requests are refused, saying what is expected.
    for (name, params, status, says) in [
        ("nope", vec![], 404, "the panels are usage, blocks"),
        ("usage", vec![("since", "2026-13-01")], 400, "YYYY-MM-DD"),
        ("usage", vec![("until", "+10000-01-01")], 400, "YYYY-MM-DD"),
        (
            "usage",
            vec![("since", "2026-03-02"), ("until", "2026-03-01")],
            400,
            "is after until",
        ),
        ("usage", vec![("tz", "Mars/Base")], 400, "Mars/Base"),
        ("usage", vec![("days", "7")], 400, "days"),
    ] {
        let (got, body) = panel(&server, &f.alice, name, &params);
        assert_eq!(got, status, "{name} {params:?}: {body}");
        assert!(body["message"].as_str().unwrap().contains(says), "{body}");
    }
    // Every query a panel ran for alice is in the audit trail under her token's name, with its
    // outcome: nine panels one by one, nine streamed, nine again, the repositories and her usage
    // over the range (the refused requests ran none).
    let (intents, outcomes) = crate::server::audit_counts(&f.archive, "alice-laptop");
    assert_eq!((intents, outcomes), (29, 29));
    let anonymous = request(
        "GET",
        &format!("{}/api/dashboard/usage", server.base),
        None,
        None,
        None,
    );
    assert_eq!(anonymous.status, 401);
}

/// `quarry --archive ARCHIVE --tz UTC report ARGS… --no-refresh`.
fn report(archive: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["--archive", archive, "--tz", "UTC", "report"];
    all.extend_from_slice(args);
    all.push("--no-refresh");
    quarry(&all)
}

/// `out`, which must have succeeded.
fn succeeded(out: std::process::Output) -> std::process::Output {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn an_html_report_is_one_self_contained_file_with_the_reports_totals() {
    let Some(f) = fixture() else { return };
    let archive = f.archive.to_str().unwrap();
    let file = f.archive.with_file_name("report.html");
    succeeded(report(
        archive,
        &["daily", "--by", "model", "-o", file.to_str().unwrap()],
    ));
    let html = std::fs::read_to_string(&file).unwrap();
    let json = succeeded(report(archive, &["daily", "--format", "json"])).stdout;
    let totals: Value = serde_json::from_slice(&json).unwrap();
    let value = |id: &str| -> f64 {
        let at = html
            .find(&format!("id=\"{id}\" data-value=\""))
            .unwrap_or_else(|| panic!("no {id}"));
        let rest = &html[at + id.len() + 18..];
        rest[..rest.find('"').unwrap()].parse().unwrap()
    };
    assert_eq!(
        value("usage-total-tokens") as u64,
        totals["totals"]["total_tokens"].as_u64().unwrap()
    );
    assert_eq!(
        (value("usage-total-cost") * 100.0).round(),
        (totals["totals"]["cost_usd"].as_f64().unwrap() * 100.0).round()
    );
    // Self-contained: no script, no stylesheet or image to fetch, no other host.
    for reference in [
        "http:", "https:", "src=", "href=", "url(", "@import", "<script", "<link", "<img",
    ] {
        assert!(!html.contains(reference), "the report holds {reference}");
    }
    assert!(html.matches("<svg class=\"chart\"").count() >= 9);
    assert!(html.contains("<details><summary>Table ("));

    // Any report is a format away: blocks to standard output, weekly by repository.
    for args in [
        &["blocks", "--format", "html"][..],
        &["weekly", "--by", "repo", "--format", "html"][..],
    ] {
        let out = succeeded(report(archive, args));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.starts_with("<!doctype html>"), "{args:?}");
        assert!(
            text.contains(&format!("quarry report {}", args[0])),
            "{args:?}"
        );
    }
    // An answer of the language as HTML: a table, escaped.
    let out = quarry(&[
        "--archive",
        archive,
        "sessions | group by origin | count",
        "--format",
        "html",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("<th>origin</th>"),
        "{text}"
    );
    // Any other -o is the report's query's answer, as before; HTML goes to a local file only.
    let parquet = f.archive.with_file_name("daily.parquet");
    succeeded(report(archive, &["daily", "-o", parquet.to_str().unwrap()]));
    assert!(std::fs::read(&parquet).unwrap().starts_with(b"PAR1"));
    let out = report(archive, &["daily", "-o", "s3://bucket/report.html"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("local file"));
    // A format and an extension that disagree are refused.
    let csv = f.archive.with_file_name("r.csv");
    let out = report(
        archive,
        &["daily", "--format", "html", "-o", csv.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
}
