//! `quarry report daily|weekly|monthly|session|blocks`: refreshes the archive from the default
//! transcript locations, runs the report (`crate::report`) and writes it: a readable table
//! (thousands separators, money to cents, a totals row), JSON, YAML, CSV or NDJSON; Arrow,
//! Parquet and `-o` write the answer of the report's query itself.

use chrono::NaiveDate;

use super::{Cli, Failure, open_archive};
use crate::ingest::{IngestError, IngestOptions, ingest};
use crate::location::{host_name, os_user};

/// `quarry report` arguments.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// daily, weekly (Monday to Sunday), monthly, session or blocks (5-hour billing windows,
    /// an estimate from timestamps).
    #[arg(value_parser = ["daily", "weekly", "monthly", "session", "blocks"])]
    pub report: String,
    /// From this day on, in --tz (YYYY-MM-DD or YYYYMMDD).
    #[arg(long, value_name = "DAY")]
    pub since: Option<String>,
    /// Through this day, in --tz (YYYY-MM-DD or YYYYMMDD).
    #[arg(long, value_name = "DAY")]
    pub until: Option<String>,
    /// Break each row down by model, repo, machine or origin.
    #[arg(long, value_name = "FIELD", value_parser = ["model", "repo", "machine", "origin"])]
    pub by: Option<String>,
    /// Do not ingest new and changed transcripts from the default locations first.
    #[arg(long)]
    pub no_refresh: bool,
    /// Print the query of the language the report runs, and stop.
    #[arg(long)]
    pub explain: bool,
}

/// A day as `--since` and `--until` take it.
#[cfg_attr(not(feature = "engine"), allow(dead_code))]
pub(super) fn parse_day(flag: &str, text: &str) -> Result<NaiveDate, Failure> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .or_else(|_| NaiveDate::parse_from_str(text, "%Y%m%d"))
        .map_err(|_| {
            Failure::usage(format!(
                "--{flag} {text}: give a day as YYYY-MM-DD or YYYYMMDD"
            ))
        })
}

/// Runs `quarry report`.
#[cfg(not(feature = "engine"))]
pub fn run_report(_cli: &Cli, _args: ReportArgs) -> Result<(), Failure> {
    Err(Failure::runtime(crate::Error::EngineUnavailable))
}

/// Ingests new and changed files of the default locations (none there: nothing to do).
#[cfg_attr(not(feature = "engine"), allow(dead_code))]
pub(super) fn refresh(cli: &Cli) -> Result<(), Failure> {
    let mut archive = open_archive(cli.archive.clone())?;
    let options = IngestOptions {
        paths: Vec::new(),
        owner: os_user(),
        progress: false,
        machine: host_name(),
        replace: Vec::new(),
    };
    match ingest(&mut archive, &options) {
        Ok(summary) => {
            let changed = summary.files_new + summary.files_changed;
            if changed > 0 {
                eprintln!("refreshed: read {changed} new or changed transcript files");
            }
            Ok(())
        }
        Err(IngestError::NothingToDiscover) => Ok(()),
        Err(e) => Err(Failure::runtime(format!("refreshing the archive: {e}"))),
    }
}

/// `n` with thousands separators: `1,234,567`.
#[cfg_attr(not(feature = "engine"), allow(dead_code))]
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A cost to the cent: `$1,234.57`; `—` when unknown.
#[cfg_attr(not(feature = "engine"), allow(dead_code))]
pub fn dollars(cost: Option<f64>) -> String {
    match cost {
        None => "—".into(),
        Some(c) => {
            let cents = (c * 100.0).round() as u64;
            format!("${}.{:02}", thousands(cents / 100), cents % 100)
        }
    }
}

/// One line per model a query left without a cost, for standard error.
pub(super) fn unpriced_lines(unpriced: &[crate::UnpricedModel]) -> String {
    unpriced
        .iter()
        .map(|u| {
            format!(
                "note: {} for model {}: {} responses (their cost_usd is NULL; sums leave them out)\n",
                u.reason,
                u.model,
                thousands(u.responses)
            )
        })
        .collect()
}
