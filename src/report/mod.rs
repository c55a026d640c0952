//! Usage reports (`quarry report daily|weekly|monthly|session|blocks`): tokens and estimated
//! cost per period, session or billing window.
//!
//! Every report but `blocks` is one query of the language ([`Request::query`]), run like any
//! other, so `--explain` can show it and a user can take it further; its rows become
//! [`Row`]s. `blocks` reads the priced usage rows in time order with a query of the language too
//! and groups them into 5-hour windows ([`blocks`]).

pub mod blocks;

use chrono::NaiveDate;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

use crate::api::{Caps, Error, Quarry};

/// Which report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Per day (in `--tz`).
    Daily,
    /// Per week, starting on Monday (in `--tz`).
    Weekly,
    /// Per calendar month (in `--tz`).
    Monthly,
    /// Per session.
    Session,
    /// Per 5-hour billing window (an estimate from timestamps).
    Blocks,
}

impl Kind {
    /// The report's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Daily => "daily",
            Kind::Weekly => "weekly",
            Kind::Monthly => "monthly",
            Kind::Session => "session",
            Kind::Blocks => "blocks",
        }
    }

    /// The report `name` names.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Kind::Daily,
            Kind::Weekly,
            Kind::Monthly,
            Kind::Session,
            Kind::Blocks,
        ]
        .into_iter()
        .find(|k| k.name() == name)
    }

    /// The time bucket of a period report.
    fn bucket(self) -> Option<&'static str> {
        match self {
            Kind::Daily => Some("day"),
            Kind::Weekly => Some("week"),
            Kind::Monthly => Some("month"),
            Kind::Session | Kind::Blocks => None,
        }
    }
}

/// A breakdown of each period: by model, or by a field of the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// The response's model.
    Model,
    /// The session's repository.
    Repo,
    /// The machine the session was read on.
    Machine,
    /// The source format.
    Origin,
}

impl By {
    /// Its name on the command line (and the column the report shows).
    pub fn name(self) -> &'static str {
        match self {
            By::Model => "model",
            By::Repo => "repo",
            By::Machine => "machine",
            By::Origin => "origin",
        }
    }

    /// The breakdown `name` names.
    pub fn from_name(name: &str) -> Option<Self> {
        [By::Model, By::Repo, By::Machine, By::Origin]
            .into_iter()
            .find(|b| b.name() == name)
    }

    /// The group key in the language.
    fn key(self) -> &'static str {
        match self {
            By::Model => "model",
            By::Repo => "session.repo",
            By::Machine => "session.machine",
            By::Origin => "session.origin",
        }
    }
}

/// What to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Which report.
    pub kind: Kind,
    /// From this day on (in `--tz`).
    pub since: Option<NaiveDate>,
    /// Through this day (in `--tz`).
    pub until: Option<NaiveDate>,
    /// A breakdown of each row.
    pub by: Option<By>,
}

/// The metrics every report sums, in the order the query names them.
const METRICS: &str = "count, sum:input_tokens, sum:output_tokens, sum:cache_write_tokens, sum:cache_read_tokens, sum:cost_usd";

impl Request {
    /// The `where` clause of the days asked for (empty when there is no bound).
    fn range(&self) -> String {
        let mut bounds = Vec::new();
        if let Some(since) = self.since {
            bounds.push(format!("time >= {}", since.format("%Y-%m-%d")));
        }
        if let Some(until) = self.until.and_then(|d| d.succ_opt()) {
            bounds.push(format!("time < {}", until.format("%Y-%m-%d")));
        }
        if bounds.is_empty() {
            String::new()
        } else {
            format!(" where {}", bounds.join(" AND "))
        }
    }

    /// The query of the language the report runs: for `blocks`, the priced usage rows in time
    /// order it groups into windows.
    pub fn query(&self) -> String {
        let range = self.range();
        let by = self
            .by
            .map(|b| format!(", {}", b.key()))
            .unwrap_or_default();
        match self.kind.bucket() {
            Some(bucket) => {
                format!("usage{range} | group by time:{bucket}{by} | agg {METRICS}")
            }
            None if self.kind == Kind::Session => {
                format!(
                    "usage{range} | group by session_id, session.repo{by} | agg {METRICS} | sort by sum_cost_usd desc"
                )
            }
            None => format!(
                "usage{range} | sort by time | select occurred_at_ms, model, input_tokens, output_tokens, cache_write_tokens, cache_read_tokens, cost_usd"
            ),
        }
    }
}

/// Token counts and cost of one report row (or of the totals).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Sums {
    /// Responses.
    pub responses: u64,
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cache-write tokens (both lifetimes).
    pub cache_write_tokens: u64,
    /// Cache-read tokens.
    pub cache_read_tokens: u64,
    /// Estimated cost in USD of the priced responses (`None`: none of them has a price).
    pub cost_usd: Option<f64>,
}

impl Sums {
    /// All four token kinds.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_write_tokens + self.cache_read_tokens
    }

    /// `other` added to these.
    pub fn add(&mut self, other: &Sums) {
        self.responses += other.responses;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }
}

/// One row of a report: its keys as shown (period, breakdown, session ...) and its sums.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    /// Key columns by name, in order.
    pub keys: Vec<(String, String)>,
    /// What the row adds up.
    #[serde(flatten)]
    pub sums: Sums,
}

/// A report's answer.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Report {
    /// `daily`, `weekly`, ...
    pub report: &'static str,
    /// The query of the language it ran.
    pub query: String,
    /// The key columns' names.
    pub key_names: Vec<String>,
    /// The rows, in key order.
    pub rows: Vec<Row>,
    /// The sums of every row.
    pub totals: Sums,
}

/// Runs `request` on `quarry` (any kind but [`Kind::Blocks`], which [`blocks::run`] answers).
pub async fn run(quarry: &Quarry, request: &Request) -> Result<Report, Error> {
    let query = request.query();
    let result = quarry.query_collect(&query, Caps::default()).await?;
    let key_count = result.schema.fields().len() - 6;
    let key_names: Vec<String> = result.schema.fields()[..key_count]
        .iter()
        .map(|f| key_name(f.name()))
        .collect();
    let mut rows = Vec::new();
    let mut totals = Sums::default();
    for batch in &result.batches {
        let keys: Vec<Vec<String>> = (0..key_count)
            .map(|i| column_text(batch.column(i), request.kind))
            .collect::<Result<_, _>>()?;
        let metric = |i: usize| batch.column(key_count + i);
        let counts: Vec<Vec<u64>> = (0..5)
            .map(|i| integers(metric(i)))
            .collect::<Result<_, _>>()?;
        let cost = floats(metric(5))?;
        for r in 0..batch.num_rows() {
            let sums = Sums {
                responses: counts[0][r],
                input_tokens: counts[1][r],
                output_tokens: counts[2][r],
                cache_write_tokens: counts[3][r],
                cache_read_tokens: counts[4][r],
                cost_usd: cost[r],
            };
            totals.add(&sums);
            rows.push(Row {
                keys: key_names
                    .iter()
                    .zip(&keys)
                    .map(|(name, column)| (name.clone(), column[r].clone()))
                    .collect(),
                sums,
            });
        }
    }
    Ok(Report {
        report: request.kind.name(),
        query,
        key_names,
        rows,
        totals,
    })
}

/// The name a report shows for a key column of the query's answer.
fn key_name(column: &str) -> String {
    match column {
        c if c.starts_with("time") => String::from("period"),
        "session_id" => String::from("session_id"),
        c => c.trim_start_matches("session_").to_string(),
    }
}

/// The values of a key column as text: a period as its first day (`2026-03-09`) or month
/// (`2026-03`), NULL as `(none)`.
fn column_text(array: &ArrayRef, kind: Kind) -> Result<Vec<String>, Error> {
    let options = FormatOptions::default().with_null("(none)");
    let formatter = ArrayFormatter::try_new(array.as_ref(), &options)
        .map_err(|e| Error::Execution(e.to_string()))?;
    let timestamp = matches!(array.data_type(), DataType::Timestamp(..));
    Ok((0..array.len())
        .map(|i| {
            let text = formatter.value(i).to_string();
            match (timestamp, kind) {
                (true, Kind::Monthly) => text.chars().take(7).collect(),
                (true, _) => text.chars().take(10).collect(),
                (false, _) => text,
            }
        })
        .collect())
}

/// An integer column's values (NULL as 0: a sum over no rows).
fn integers(array: &ArrayRef) -> Result<Vec<u64>, Error> {
    let cast = cast(array, &DataType::Int64).map_err(|e| Error::Execution(e.to_string()))?;
    let values = cast.as_primitive::<Int64Type>();
    Ok((0..values.len())
        .map(|i| {
            if values.is_null(i) {
                0
            } else {
                u64::try_from(values.value(i)).unwrap_or(0)
            }
        })
        .collect())
}

/// A float column's values, NULL as `None`.
fn floats(array: &ArrayRef) -> Result<Vec<Option<f64>>, Error> {
    let cast = cast(array, &DataType::Float64).map_err(|e| Error::Execution(e.to_string()))?;
    let values = cast.as_primitive::<Float64Type>();
    Ok((0..values.len())
        .map(|i| (!values.is_null(i)).then(|| values.value(i)))
        .collect())
}

/// The rows of `batches` as (epoch ms, model, sums) for [`blocks`].
fn usage_rows(batches: &[RecordBatch]) -> Result<Vec<blocks::Entry>, Error> {
    let mut out = Vec::new();
    for batch in batches {
        let at =
            cast(batch.column(0), &DataType::Int64).map_err(|e| Error::Execution(e.to_string()))?;
        let at = at.as_primitive::<Int64Type>();
        let model = column_text(batch.column(1), Kind::Daily)?;
        let counts: Vec<Vec<u64>> = (2..6)
            .map(|i| integers(batch.column(i)))
            .collect::<Result<_, _>>()?;
        let cost = floats(batch.column(6))?;
        for r in 0..batch.num_rows() {
            if at.is_null(r) {
                continue;
            }
            out.push(blocks::Entry {
                at_ms: at.value(r),
                model: model[r].clone(),
                sums: Sums {
                    responses: 1,
                    input_tokens: counts[0][r],
                    output_tokens: counts[1][r],
                    cache_write_tokens: counts[2][r],
                    cache_read_tokens: counts[3][r],
                    cost_usd: cost[r],
                },
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
