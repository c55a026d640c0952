//! Usage reports (`quarry report daily|weekly|monthly|session|blocks`): tokens and estimated
//! cost per period, session or billing window.
//!
//! Every report but `blocks` is one query of the language ([`Request::query`]), run like any
//! other, so `--explain` can show it and a user can take it further; its rows become
//! [`Row`]s. `blocks` reads the priced usage rows in time order with a query of the language too
//! and groups them into 5-hour windows ([`blocks`]).

pub mod blocks;
mod rows;

use chrono::NaiveDate;

use crate::api::Session;

use crate::error::Error;

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
    /// Whether approximate usage (`recorded_via:approximate`, Aider's rounded reports) counts
    /// too; exact totals leave it out.
    pub approximate: bool,
}

/// The metrics every report sums, in the order the query names them.
const METRICS: &str = "count, sum:input_tokens, sum:output_tokens, sum:cache_write_tokens, sum:cache_read_tokens, sum:cost_usd";

impl Request {
    /// The `where` clause: exact usage only unless asked, the days asked for and, for `blocks`,
    /// Claude Code's usage only (the windows are Claude plans'); empty when there is no
    /// condition.
    fn conditions(&self) -> String {
        self.conditions_on(if self.approximate {
            None
        } else {
            Some("NOT recorded_via:approximate")
        })
    }

    /// The `where` clause of the days asked for (and the blocks' origin) with `first` before.
    fn conditions_on(&self, first: Option<&str>) -> String {
        let mut conditions: Vec<String> = first.into_iter().map(String::from).collect();
        if self.kind == Kind::Blocks {
            conditions.push(String::from("session.origin:claude-code-session"));
        }
        if let Some(since) = self.since {
            conditions.push(format!("time >= {}", since.format("%Y-%m-%d")));
        }
        if let Some(until) = self.until.and_then(|d| d.succ_opt()) {
            conditions.push(format!("time < {}", until.format("%Y-%m-%d")));
        }
        if conditions.is_empty() {
            String::new()
        } else {
            format!(" where {}", conditions.join(" AND "))
        }
    }

    /// The query that counts the approximate responses the report leaves out; `None` when it
    /// counts them (`--approximate`).
    pub fn left_out_query(&self) -> Option<String> {
        (!self.approximate).then(|| {
            format!(
                "usage{} | agg count",
                self.conditions_on(Some("recorded_via:approximate"))
            )
        })
    }

    /// The query of the language the report runs: for `blocks`, the priced usage rows in time
    /// order it groups into windows.
    pub fn query(&self) -> String {
        let range = self.conditions();
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
    /// Approximate responses in the report's days it left out (not asked for them), when the
    /// caller counted them ([`left_out`]; 0 otherwise).
    pub approximate_left_out: u64,
}

/// Runs `request` in `session`, under its scope and in its zone (any kind but
/// [`Kind::Blocks`], which [`blocks::run`] answers).
pub async fn run(session: &Session, request: &Request) -> Result<Report, Error> {
    rows::run(session, request).await
}

/// How many approximate responses (`recorded_via:approximate`) the days of `request` hold that
/// it leaves out (0 when it counts them): what the command line notes under a report.
pub async fn left_out(session: &Session, request: &Request) -> Result<u64, Error> {
    rows::left_out(session, request).await
}

/// The priced usage rows of `query` (a `blocks` query), in time order.
async fn usage_entries(session: &Session, query: &str) -> Result<Vec<blocks::Entry>, Error> {
    let result = session
        .query(query, crate::request::Caps::default())
        .await?
        .collect()
        .await?;
    rows::usage_rows(&result.batches)
}

/// A report's JSON document as YAML.
pub fn to_yaml(document: &serde_json::Value) -> Result<String, Error> {
    serde_yaml_ng::to_string(document).map_err(Error::failed)
}

#[cfg(test)]
mod tests;
