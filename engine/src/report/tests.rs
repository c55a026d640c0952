#![allow(clippy::unwrap_used)]
use super::blocks::{Entry, WINDOW_MS, group};
use super::*;

fn day(text: &str) -> NaiveDate {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap()
}

#[test]
fn a_period_report_is_one_query_of_the_language() {
    let r = Request {
        kind: Kind::Daily,
        since: Some(day("2026-03-01")),
        until: Some(day("2026-03-31")),
        by: Some(By::Model),
        approximate: true,
    };
    assert_eq!(
        r.query(),
        format!(
            "usage where time >= 2026-03-01 AND time < 2026-04-01 | group by time:day, model | agg {METRICS}"
        )
    );
    let r = Request {
        kind: Kind::Monthly,
        since: None,
        until: None,
        by: Some(By::Repo),
        approximate: true,
    };
    assert_eq!(
        r.query(),
        format!("usage | group by time:month, session.repo | agg {METRICS}")
    );
    // Exact totals unless asked: approximate usage (Aider's rounded reports) left out.
    let exact = Request {
        approximate: false,
        ..r
    };
    assert_eq!(
        exact.query(),
        format!(
            "usage where NOT recorded_via:approximate | group by time:month, session.repo | agg {METRICS}"
        )
    );
    let blocks = Request {
        kind: Kind::Blocks,
        since: Some(day("2026-03-01")),
        until: None,
        by: None,
        approximate: false,
    };
    assert!(
        blocks.query().starts_with(
            "usage where NOT recorded_via:approximate AND session.origin:claude-code-session AND time >= 2026-03-01 | sort by time"
        ),
        "{}",
        blocks.query()
    );
    for kind in ["daily", "weekly", "monthly", "session", "blocks"] {
        let r = Request {
            kind: Kind::from_name(kind).unwrap(),
            since: Some(day("2026-01-01")),
            until: None,
            by: None,
            approximate: false,
        };
        assert!(
            quarry_grammar::check(&r.query()).is_ok(),
            "{kind}: {}",
            r.query()
        );
    }
}

fn entry(at_ms: i64, model: &str, cost: Option<f64>) -> Entry {
    Entry {
        at_ms,
        model: model.into(),
        sums: Sums {
            responses: 1,
            input_tokens: 10,
            output_tokens: 1,
            cache_write_tokens: 0,
            cache_read_tokens: 0,
            cost_usd: cost,
        },
    }
}

#[test]
fn windows_open_on_the_hour_last_five_hours_and_the_last_may_be_active() {
    const H: i64 = 3_600_000;
    const M: i64 = 60_000;
    let t0 = 1_767_225_600_000; // 2026-01-01T00:00Z
    let entries = vec![
        entry(t0 + 9 * H + 17 * M, "a", Some(1.0)), // opens 09:00-14:00
        entry(t0 + 13 * H + 59 * M, "b", Some(2.0)), // same window
        entry(t0 + 14 * H, "a", None),              // at the end: opens 14:00-19:00
        entry(t0 + 23 * H + 30 * M, "a", Some(0.5)), // after a gap: 23:00-04:00
    ];
    let blocks = group(&entries, t0 + 24 * H);
    assert_eq!(blocks.len(), 3);
    assert_eq!(blocks[0].start_ms, t0 + 9 * H);
    assert_eq!(blocks[0].end_ms, t0 + 9 * H + WINDOW_MS);
    assert_eq!(blocks[0].models, vec!["a", "b"]);
    assert_eq!(blocks[0].sums.responses, 2);
    assert_eq!(blocks[0].sums.cost_usd, Some(3.0));
    assert_eq!(blocks[1].start_ms, t0 + 14 * H);
    assert_eq!(blocks[1].sums.cost_usd, None);
    assert_eq!(blocks[2].start_ms, t0 + 23 * H);
    assert!(!blocks[0].active && !blocks[1].active);
    assert!(blocks[2].active, "00:00 is inside 23:00-04:00");
    let later = group(&entries, t0 + 28 * H);
    assert!(!later[2].active, "04:00 has closed it");
}
