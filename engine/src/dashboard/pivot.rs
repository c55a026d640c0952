//! From a panel's rows (JSON values, as the table view shows them) to a chart's categories and
//! series.

use std::collections::{BTreeMap, BTreeSet};

use datafusion::arrow::record_batch::RecordBatch;
use quarry_chart::Series;
use serde_json::Value;

use crate::error::Error;

/// The name of the series the smaller ones are summed into (in parentheses, as `(none)`, so no
/// model or repository can be called the same).
pub(super) const OTHERS: &str = "(others)";

/// The rows of `batches` as JSON values, one array per row (times as RFC 3339 in the
/// session's zone, NULL as `null`).
pub(super) fn rows(batches: &[RecordBatch]) -> Result<Vec<Vec<Value>>, Error> {
    Ok(match crate::output::rows_json(batches)? {
        Value::Array(rows) => rows
            .into_iter()
            .map(|r| match r {
                Value::Array(cells) => cells,
                other => vec![other],
            })
            .collect(),
        _ => Vec::new(),
    })
}

/// A value as a number (NULL and text as 0).
pub(super) fn number(value: &Value) -> f64 {
    match value {
        Value::Number(n) => n.as_f64().unwrap_or(0.0),
        Value::Bool(b) => f64::from(u8::from(*b)),
        _ => 0.0,
    }
}

/// A value as a label: text as it is, NULL as `(none)`.
pub(super) fn text_of(value: &Value) -> String {
    match value {
        Value::Null => String::from("(none)"),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A time bucket's day (`YYYY-MM-DD`, the first ten characters of its RFC 3339 text in the
/// session's zone).
pub(super) fn day_of(value: &Value) -> String {
    text_of(value).chars().take(10).collect()
}

/// Stacked series: one category per distinct `category` of the rows (or each of `all`, in
/// order, when given), one series per distinct `series`, the `keep` largest by total first (or
/// in the order of `order`, so two charts of the same rows colour a series alike) and the rest
/// summed as [`OTHERS`]; a category and series without rows is 0.
pub(super) fn stacked(
    rows: &[Vec<Value>],
    category: impl Fn(&Vec<Value>) -> String,
    series: impl Fn(&Vec<Value>) -> String,
    value: impl Fn(&Vec<Value>) -> f64,
    all: Option<Vec<String>>,
    keep: usize,
    order: Option<&[String]>,
) -> (Vec<String>, Vec<Series>) {
    let categories: Vec<String> = all.unwrap_or_else(|| {
        rows.iter()
            .map(&category)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    });
    let position: BTreeMap<&str, usize> = categories
        .iter()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i))
        .collect();
    let mut by_series: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for row in rows {
        let Some(&at) = position.get(category(row).as_str()) else {
            continue;
        };
        by_series
            .entry(series(row))
            .or_insert_with(|| vec![0.0; categories.len()])[at] += value(row);
    }
    let mut named: Vec<(String, Vec<f64>)> = by_series.into_iter().collect();
    let total = |v: &Vec<f64>| v.iter().sum::<f64>();
    match order {
        Some(order) => {
            let rank = |name: &str| order.iter().position(|o| o == name).unwrap_or(usize::MAX);
            named.sort_by(|a, b| rank(&a.0).cmp(&rank(&b.0)).then(a.0.cmp(&b.0)));
        }
        None => named.sort_by(|a, b| total(&b.1).total_cmp(&total(&a.1)).then(a.0.cmp(&b.0))),
    }
    let mut out: Vec<Series> = Vec::new();
    let mut other: Option<Vec<f64>> = None;
    for (i, (name, values)) in named.into_iter().enumerate() {
        if i < keep {
            out.push(Series { name, values });
        } else {
            let sum = other.get_or_insert_with(|| vec![0.0; categories.len()]);
            for (s, v) in sum.iter_mut().zip(values) {
                *s += v;
            }
        }
    }
    if let Some(values) = other {
        out.push(Series {
            name: OTHERS.into(),
            values,
        });
    }
    (categories, out)
}
