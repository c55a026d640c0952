//! The dashboards: tokens and cost per day by model, the 5-hour blocks, sessions per day by
//! origin and by repository, tool error rates, response and tool durations, the files touched
//! most and the busiest repositories, each over a range of days in a zone.
//!
//! A panel is one query of the language (the usage panel and the blocks are the reports'
//! queries, [`crate::report`]), run in the caller's [`Session`], so its scope applies before
//! anything is computed. Its answer is kept as it came (`columns`, `rows`: the table view) and
//! drawn as server-side SVG ([`quarry_chart`]); the headline figures (total tokens, cost) are
//! sums of those rows. Panels do not depend on one another: the page asks for each on its own.
//! The web page shows them (`GET /api/dashboard/{panel}`) and `quarry report … --format html`
//! writes them into one self-contained file ([`html`]).

pub mod html;
mod pivot;

use chrono::NaiveDate;
use quarry_chart::{Chart, Orientation, Series, Unit};
use serde::Serialize;
use serde_json::Value;

use crate::api::Session;
use crate::error::Error;
use crate::report::blocks::{self, BlocksReport};
use crate::report::{self, By, Kind, Report, Sums};
use crate::request::Caps;

use pivot::{day_of, number, stacked, text_of};

/// The days a dashboard covers, in the session's zone (both ends included; open when absent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Range {
    /// From this day on.
    pub since: Option<NaiveDate>,
    /// Through this day.
    pub until: Option<NaiveDate>,
}

impl Range {
    /// The clauses that keep a unit's rows to the range (its `time` field), joined with `extra`
    /// by `AND`: ` where …`, or nothing when there is no clause.
    fn clause(&self, extra: &[&str]) -> String {
        let mut clauses: Vec<String> = extra.iter().map(|c| c.to_string()).collect();
        if let Some(since) = self.since {
            clauses.push(format!("time >= {}", since.format("%Y-%m-%d")));
        }
        if let Some(until) = self.until.and_then(|d| d.succ_opt()) {
            clauses.push(format!("time < {}", until.format("%Y-%m-%d")));
        }
        if clauses.is_empty() {
            String::new()
        } else {
            format!(" where {}", clauses.join(" AND "))
        }
    }

    /// Every day of a bounded range (at most two years of them), as `YYYY-MM-DD`: the
    /// categories of a per-day chart, so a day without rows shows as a gap.
    fn days(&self) -> Option<Vec<String>> {
        let (since, until) = (self.since?, self.until?);
        let count = (until - since).num_days();
        if !(0..=731).contains(&count) {
            return None;
        }
        Some(
            since
                .iter_days()
                .take(count as usize + 1)
                .map(|d| d.format("%Y-%m-%d").to_string())
                .collect(),
        )
    }

    /// The report request of `kind` over the range.
    fn report(&self, kind: Kind, by: Option<By>) -> report::Request {
        report::Request {
            kind,
            since: self.since,
            until: self.until,
            by,
            approximate: false,
        }
    }
}

/// One panel of the dashboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PanelId {
    /// Tokens and cost per day by model (the daily report by model).
    Usage,
    /// Claude Code's 5-hour windows, the active one marked (the blocks report).
    Blocks,
    /// Sessions started per day by origin.
    SessionsByOrigin,
    /// Sessions started per day by repository.
    SessionsByRepo,
    /// The share of tool calls that failed, by tool.
    ToolErrors,
    /// p50 and p90 of the time from a prompt to the turn's completion, by agent.
    ResponseDurations,
    /// p50 and p90 of the time from a tool call to its result, by tool.
    ToolDurations,
    /// The files read, written or edited most often.
    Files,
    /// The repositories with the most messages.
    Repos,
}

impl PanelId {
    /// Every panel, in the order the dashboard shows them.
    pub const ALL: [PanelId; 9] = [
        PanelId::Usage,
        PanelId::Blocks,
        PanelId::SessionsByOrigin,
        PanelId::SessionsByRepo,
        PanelId::ToolErrors,
        PanelId::ResponseDurations,
        PanelId::ToolDurations,
        PanelId::Files,
        PanelId::Repos,
    ];

    /// Its name in a URL (`/api/dashboard/usage`).
    pub fn name(self) -> &'static str {
        match self {
            PanelId::Usage => "usage",
            PanelId::Blocks => "blocks",
            PanelId::SessionsByOrigin => "sessions-by-origin",
            PanelId::SessionsByRepo => "sessions-by-repo",
            PanelId::ToolErrors => "tool-errors",
            PanelId::ResponseDurations => "response-durations",
            PanelId::ToolDurations => "tool-durations",
            PanelId::Files => "files",
            PanelId::Repos => "repos",
        }
    }

    /// The panel `name` names.
    pub fn from_name(name: &str) -> Option<PanelId> {
        PanelId::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Its heading.
    pub fn title(self) -> &'static str {
        match self {
            PanelId::Usage => "Tokens and cost per day by model",
            PanelId::Blocks => "5-hour blocks (Claude Code)",
            PanelId::SessionsByOrigin => "Sessions per day by origin",
            PanelId::SessionsByRepo => "Sessions per day by repository",
            PanelId::ToolErrors => "Tool error rate by tool",
            PanelId::ResponseDurations => "Response durations (prompt to completed turn)",
            PanelId::ToolDurations => "Tool durations (call to result)",
            PanelId::Files => "Files touched most",
            PanelId::Repos => "Busiest repositories",
        }
    }

    /// The query of the language the panel runs over `range` (for the blocks, the usage rows
    /// it groups into windows).
    pub fn query(self, range: &Range) -> String {
        match self {
            PanelId::Usage => range.report(Kind::Daily, Some(By::Model)).query(),
            PanelId::Blocks => range.report(Kind::Blocks, None).query(),
            PanelId::SessionsByOrigin => format!(
                "sessions{} | group by time:day, origin | agg count",
                range.clause(&[])
            ),
            PanelId::SessionsByRepo => format!(
                "sessions{} | group by time:day, repo | agg count",
                range.clause(&[])
            ),
            PanelId::ToolErrors => format!(
                "actions{} | group by tool | agg count, sum:is_error, avg:is_error | sort by count desc | limit 15",
                range.clause(&[])
            ),
            PanelId::ResponseDurations => format!(
                "turns{} | group by session.origin | agg count, p50:duration_ms, p90:duration_ms",
                range.clause(&["committed:true"])
            ),
            PanelId::ToolDurations => format!(
                "actions{} | group by tool | agg count, p50:duration_ms, p90:duration_ms | sort by count desc | limit 15",
                range.clause(&[])
            ),
            PanelId::Files => format!(
                "actions{} | group by path | agg count | sort by count desc | limit 15",
                range.clause(&["action:(file_read|file_write|file_edit)"])
            ),
            PanelId::Repos => format!(
                "sessions{} | group by repo | agg count, sum:messages | sort by sum_messages desc | limit 12",
                range.clause(&[])
            ),
        }
    }
}

/// A headline number of a panel (total tokens, cost).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// Its id on the page (`total-tokens`, `total-cost`, `responses`).
    pub id: &'static str,
    /// Its label.
    pub label: &'static str,
    /// The exact value (a whole number of tokens, a cost in USD; `null`: nothing priced).
    pub value: Value,
    /// The value as shown (`1,234,567`, `$12.35`).
    pub text: String,
}

/// A drawn chart: its title and inline SVG.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drawn {
    /// The chart's title.
    pub title: String,
    /// The chart as SVG, to inline in HTML.
    pub svg: String,
}

/// One panel's answer: the query it ran, that query's rows, the charts drawn from them and the
/// figures summed from them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Panel {
    /// Its name (`usage`, …).
    pub id: &'static str,
    /// Its heading.
    pub title: String,
    /// The query of the language it ran (what the console runs to get the same rows).
    pub query: String,
    /// What to know when reading it.
    pub note: Option<String>,
    /// Headline figures.
    pub figures: Vec<Figure>,
    /// Its charts.
    pub charts: Vec<Drawn>,
    /// The table view's columns.
    pub columns: Vec<String>,
    /// The table view's rows (the query's answer).
    pub rows: Vec<Vec<Value>>,
}

/// A chart's size in SVG pixels (it scales to its box).
const WIDTH: u32 = 600;
const HEIGHT: u32 = 280;

/// At most this many series in a stacked chart: the rest are summed as `(others)`.
const SERIES_SHOWN: usize = 6;

/// Runs panel `id` over `range` in `session`: its scope, its zone, and its clock's now (which
/// 5-hour window is active).
pub async fn panel(session: &Session, id: PanelId, range: &Range) -> Result<Panel, Error> {
    match id {
        PanelId::Usage => {
            let report = report::run(session, &range.report(Kind::Daily, Some(By::Model))).await?;
            Ok(of_report(&report, id.title(), range))
        }
        PanelId::Blocks => {
            let now_ms = session.clock().now.timestamp_millis();
            let report = blocks::run(session, &range.report(Kind::Blocks, None), now_ms).await?;
            Ok(of_blocks(&report))
        }
        _ => {
            let query = id.query(range);
            let answer = session
                .query(&query, Caps::default())
                .await?
                .collect()
                .await?;
            let columns: Vec<String> = answer
                .schema
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
            let rows = pivot::rows(&answer.batches)?;
            Ok(drawn(id, query, columns, rows, range))
        }
    }
}

/// Runs every panel of `ids` over `range` in `session` at once (none waits on another), their
/// answers in the order of `ids`.
pub async fn panels(
    session: &Session,
    ids: &[PanelId],
    range: &Range,
) -> Vec<Result<Panel, Error>> {
    futures::future::join_all(ids.iter().map(|id| panel(session, *id, range))).await
}

/// The charts and figures of a panel answered by its own query.
fn drawn(
    id: PanelId,
    query: String,
    columns: Vec<String>,
    rows: Vec<Vec<Value>>,
    range: &Range,
) -> Panel {
    let mut note = None;
    let charts = match id {
        PanelId::SessionsByOrigin | PanelId::SessionsByRepo => {
            let (categories, series) = stacked(
                &rows,
                |r| day_of(&r[0]),
                |r| text_of(&r[1]),
                |r| number(&r[2]),
                range.days(),
                SERIES_SHOWN,
                None,
            );
            let by = if id == PanelId::SessionsByOrigin {
                "origin"
            } else {
                "repository"
            };
            vec![draw(Chart {
                title: format!("Sessions started per day, stacked by {by}"),
                categories,
                series,
                unit: Unit::Count,
                orientation: Orientation::Columns,
                marked: None,
            })]
        }
        PanelId::ToolErrors => vec![draw(Chart {
            title: "Share of calls that failed".into(),
            categories: rows
                .iter()
                .map(|r| format!("{} ({} calls)", text_of(&r[0]), number(&r[1])))
                .collect(),
            series: vec![Series {
                name: "error rate".into(),
                values: rows.iter().map(|r| number(&r[3])).collect(),
            }],
            unit: Unit::Percent,
            orientation: Orientation::Rows,
            marked: None,
        })],
        PanelId::ResponseDurations | PanelId::ToolDurations => {
            if id == PanelId::ResponseDurations {
                note = Some(
                    "committed turns only: from the prompt to the turn's completion marker or last message"
                        .into(),
                );
            }
            let of = if id == PanelId::ResponseDurations {
                "by agent"
            } else {
                "by tool, most called first"
            };
            vec![draw(Chart {
                title: format!("p50 and p90 {of}"),
                categories: rows.iter().map(|r| text_of(&r[0])).collect(),
                series: ["p50", "p90"]
                    .iter()
                    .enumerate()
                    .map(|(i, name)| Series {
                        name: (*name).into(),
                        values: rows.iter().map(|r| number(&r[2 + i])).collect(),
                    })
                    .collect(),
                unit: Unit::Millis,
                orientation: Orientation::Rows,
                marked: None,
            })]
        }
        PanelId::Files | PanelId::Repos => {
            let (value, label, title) = if id == PanelId::Files {
                (
                    1,
                    "calls",
                    "Tool calls reading, writing or editing each file",
                )
            } else {
                (
                    2,
                    "messages",
                    "Messages of the sessions started in each repository",
                )
            };
            vec![draw(Chart {
                title: title.into(),
                categories: rows.iter().map(|r| text_of(&r[0])).collect(),
                series: vec![Series {
                    name: label.into(),
                    values: rows.iter().map(|r| number(&r[value])).collect(),
                }],
                unit: Unit::Count,
                orientation: Orientation::Rows,
                marked: None,
            })]
        }
        PanelId::Usage | PanelId::Blocks => Vec::new(),
    };
    Panel {
        id: id.name(),
        title: id.title().into(),
        query,
        note,
        figures: Vec::new(),
        charts,
        columns,
        rows,
    }
}

fn draw(chart: Chart) -> Drawn {
    Drawn {
        svg: chart.svg(WIDTH, chart.height(HEIGHT)),
        title: chart.title,
    }
}

/// The columns of a report's sums, after its keys.
const SUM_COLUMNS: [&str; 7] = [
    "responses",
    "input_tokens",
    "output_tokens",
    "cache_write_tokens",
    "cache_read_tokens",
    "total_tokens",
    "cost_usd",
];

fn sum_cells(s: &Sums) -> Vec<Value> {
    vec![
        s.responses.into(),
        s.input_tokens.into(),
        s.output_tokens.into(),
        s.cache_write_tokens.into(),
        s.cache_read_tokens.into(),
        s.total_tokens().into(),
        s.cost_usd.into(),
    ]
}

/// The headline figures of a report's totals: tokens, cost, responses.
fn figures(totals: &Sums) -> Vec<Figure> {
    vec![
        Figure {
            id: "total-tokens",
            label: "tokens",
            value: totals.total_tokens().into(),
            text: html::cell_text(&totals.total_tokens().into()),
        },
        Figure {
            id: "total-cost",
            label: "estimated cost",
            value: totals.cost_usd.into(),
            text: crate::output::numbers::dollars(totals.cost_usd),
        },
        Figure {
            id: "responses",
            label: "billed responses",
            value: totals.responses.into(),
            text: html::cell_text(&totals.responses.into()),
        },
    ]
}

/// A period report (`daily`, `weekly`, `monthly`, `session`) as a panel: its rows, its totals,
/// and its tokens and cost per period stacked by the breakdown (a session report: the costliest
/// sessions).
pub fn of_report(report: &Report, title: &str, range: &Range) -> Panel {
    let mut columns = report.key_names.clone();
    columns.extend(SUM_COLUMNS.iter().map(|c| c.to_string()));
    let rows: Vec<Vec<Value>> = report
        .rows
        .iter()
        .map(|r| {
            let mut cells: Vec<Value> = r.keys.iter().map(|(_, v)| v.as_str().into()).collect();
            cells.extend(sum_cells(&r.sums));
            cells
        })
        .collect();
    let keys = report.key_names.len();
    let charts = if report.report == "session" {
        let top: Vec<&report::Row> = report.rows.iter().take(15).collect();
        vec![draw(Chart {
            title: "Costliest sessions".into(),
            categories: top
                .iter()
                .map(|r| r.keys.first().map(|(_, v)| v.clone()).unwrap_or_default())
                .collect(),
            series: vec![Series {
                name: "cost".into(),
                values: top.iter().map(|r| r.sums.cost_usd.unwrap_or(0.0)).collect(),
            }],
            unit: Unit::Usd,
            orientation: Orientation::Rows,
            marked: None,
        })]
    } else {
        let days = (report.report == "daily").then(|| range.days()).flatten();
        let series_of = |r: &Vec<Value>| {
            if keys > 1 {
                text_of(&r[1])
            } else {
                String::from("all")
            }
        };
        let per = match report.report {
            "daily" => "day",
            "weekly" => "week",
            "monthly" => "month",
            other => other,
        };
        let by = report.key_names.get(1).cloned().unwrap_or_default();
        let titled = |what: &str| {
            if by.is_empty() {
                format!("{what} per {per}")
            } else {
                format!("{what} per {per} by {by}")
            }
        };
        // The cost chart colours each series as the tokens chart does.
        let mut order: Option<Vec<String>> = None;
        let mut charts = Vec::new();
        for (chart_title, unit, column) in [
            (titled("Tokens"), Unit::Count, keys + 5),
            (titled("Cost"), Unit::Usd, keys + 6),
        ] {
            let (categories, series) = stacked(
                &rows,
                |r| text_of(&r[0]),
                series_of,
                |r| number(&r[column]),
                days.clone(),
                SERIES_SHOWN,
                order.as_deref(),
            );
            order.get_or_insert_with(|| series.iter().map(|s| s.name.clone()).collect());
            charts.push(draw(Chart {
                title: chart_title,
                categories,
                series,
                unit,
                orientation: Orientation::Columns,
                marked: None,
            }));
        }
        charts
    };
    Panel {
        id: if report.report == "daily" {
            PanelId::Usage.name()
        } else {
            report.report
        },
        title: title.into(),
        query: report.query.clone(),
        note: Some("costs estimated at the prices in force when each response was billed".into()),
        figures: figures(&report.totals),
        charts,
        columns,
        rows,
    }
}

/// The blocks report as a panel: tokens per window, the active one marked.
pub fn of_blocks(report: &BlocksReport) -> Panel {
    let mut columns: Vec<String> = ["start", "end", "last", "active", "models"]
        .map(String::from)
        .to_vec();
    columns.extend(SUM_COLUMNS.iter().map(|c| c.to_string()));
    let rows = report
        .blocks
        .iter()
        .map(|b| {
            let mut cells: Vec<Value> = vec![
                blocks::utc(b.start_ms).into(),
                blocks::utc(b.end_ms).into(),
                blocks::utc(b.last_ms).into(),
                b.active.into(),
                b.models.join(" ").into(),
            ];
            cells.extend(sum_cells(&b.sums));
            cells
        })
        .collect();
    let label = |ms: i64| {
        let t = blocks::utc(ms);
        format!(
            "{} {}",
            t.get(5..10).unwrap_or(""),
            t.get(11..16).unwrap_or("")
        )
    };
    let chart = Chart {
        title: "Tokens per 5-hour window (UTC)".into(),
        categories: report.blocks.iter().map(|b| label(b.start_ms)).collect(),
        series: vec![Series {
            name: "tokens".into(),
            values: report
                .blocks
                .iter()
                .map(|b| b.sums.total_tokens() as f64)
                .collect(),
        }],
        unit: Unit::Count,
        orientation: Orientation::Columns,
        marked: report
            .blocks
            .iter()
            .position(|b| b.active)
            .map(|i| (i, "active".to_string())),
    };
    Panel {
        id: PanelId::Blocks.name(),
        title: PanelId::Blocks.title().into(),
        query: report.query.clone(),
        note: Some(
            "an estimate: windows reconstructed from the responses' times (the provider does not record them); they open on the UTC hour".into(),
        ),
        figures: figures(&report.totals),
        charts: vec![draw(chart)],
        columns,
        rows,
    }
}

#[cfg(test)]
mod tests;
