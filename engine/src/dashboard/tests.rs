#![allow(clippy::unwrap_used)]
use super::pivot::stacked;
use super::*;
use serde_json::json;

fn day(text: &str) -> NaiveDate {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap()
}

#[test]
fn every_panel_is_one_query_of_the_range() {
    let range = Range {
        since: Some(day("2026-03-01")),
        until: Some(day("2026-03-31")),
    };
    for id in PanelId::ALL {
        let q = id.query(&range);
        assert!(
            q.contains("time >= 2026-03-01 AND time < 2026-04-01"),
            "{}: {q}",
            id.name()
        );
        assert_eq!(PanelId::from_name(id.name()), Some(id));
        quarry_grammar::parse(&q).unwrap_or_else(|e| panic!("{q}: {e:?}"));
    }
    assert_eq!(
        PanelId::Usage.query(&range),
        range.report(Kind::Daily, Some(By::Model)).query()
    );
    assert_eq!(
        PanelId::SessionsByOrigin.query(&Range::default()),
        "sessions | group by time:day, origin | agg count"
    );
}

#[test]
fn a_bounded_range_charts_every_day() {
    let range = Range {
        since: Some(day("2026-02-27")),
        until: Some(day("2026-03-02")),
    };
    assert_eq!(
        range.days().unwrap(),
        ["2026-02-27", "2026-02-28", "2026-03-01", "2026-03-02"]
    );
    assert_eq!(Range::default().days(), None);
}

#[test]
fn stacked_series_keep_the_largest_and_sum_the_rest() {
    let rows = vec![
        vec![json!("d1"), json!("a"), json!(5)],
        vec![json!("d1"), json!("b"), json!(1)],
        vec![json!("d2"), json!("c"), json!(2)],
        vec![json!("d2"), json!("a"), json!(1)],
        vec![json!("d9"), json!("a"), json!(100)],
    ];
    let (categories, series) = stacked(
        &rows,
        |r| r[0].as_str().unwrap().into(),
        |r| r[1].as_str().unwrap().into(),
        |r| r[2].as_f64().unwrap(),
        Some(vec!["d1".into(), "d2".into(), "d3".into()]),
        2,
        None,
    );
    // d9 is outside the categories given; d3 has no rows.
    assert_eq!(categories, ["d1", "d2", "d3"]);
    let got: Vec<(&str, Vec<f64>)> = series
        .iter()
        .map(|s| (s.name.as_str(), s.values.clone()))
        .collect();
    assert_eq!(
        got,
        [
            ("a", vec![5.0, 1.0, 0.0]),
            ("c", vec![0.0, 2.0, 0.0]),
            ("(others)", vec![1.0, 0.0, 0.0])
        ]
    );
}

#[test]
fn a_report_panel_sums_its_rows_and_says_what_it_ran() {
    let sums = |tokens: u64, cost: Option<f64>| Sums {
        responses: 1,
        input_tokens: tokens,
        output_tokens: 1,
        cache_write_tokens: 0,
        cache_read_tokens: 0,
        cost_usd: cost,
    };
    let row = |d: &str, m: &str, s: Sums| report::Row {
        keys: vec![("period".into(), d.into()), ("model".into(), m.into())],
        sums: s,
    };
    let mut totals = Sums::default();
    let rows = vec![
        row("2026-03-01", "opus", sums(10, Some(0.5))),
        row("2026-03-02", "gpt", sums(20, None)),
    ];
    for r in &rows {
        totals.add(&r.sums);
    }
    let report = Report {
        report: "daily",
        query: "usage | …".into(),
        key_names: vec!["period".into(), "model".into()],
        rows,
        totals,
        approximate_left_out: 0,
    };
    let range = Range {
        since: Some(day("2026-03-01")),
        until: Some(day("2026-03-03")),
    };
    let panel = of_report(&report, "T", &range);
    assert_eq!(panel.id, "usage");
    assert_eq!(panel.query, "usage | …");
    let figure = |id: &str| panel.figures.iter().find(|f| f.id == id).unwrap().clone();
    assert_eq!(figure("total-tokens").value, json!(32));
    assert_eq!(figure("total-cost").value, json!(0.5));
    assert_eq!(figure("total-cost").text, "$0.50");
    assert_eq!(panel.rows[1][panel.columns.len() - 1], Value::Null);
    assert_eq!(panel.charts.len(), 2);
    assert!(
        panel.charts[0].svg.contains("2026-03-03"),
        "every day drawn"
    );
    let doc = html::document("r", &[], &[panel]);
    assert!(doc.contains("id=\"usage-total-tokens\" data-value=\"32\""));
    assert!(!doc.contains("http") && !doc.contains("<script") && !doc.contains("src="));
}
