//! `report blocks`: Claude Code's usage grouped into the 5-hour windows Claude plans bill by
//! (other agents' usage is not billed by them and is left out).
//!
//! The provider does not record the windows, so they are reconstructed from the responses'
//! times, the way the windows are documented to work: a window opens at the hour (UTC) of the
//! first response after the previous window ended, and lasts five hours; a response at or past
//! the end, or more than five hours after the one before it, opens the next. The result is an
//! estimate, and says so. The window holding `now` whose last response is less than five hours
//! old is the active one.

use chrono::DateTime;

use super::{Kind, Request, Sums};
use crate::api::Session;
use crate::error::Error;

/// The length of a window.
pub const WINDOW_MS: i64 = 5 * 60 * 60 * 1000;
const HOUR_MS: i64 = 60 * 60 * 1000;

/// One priced response.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// When it was billed (epoch milliseconds).
    pub at_ms: i64,
    /// Its model.
    pub model: String,
    /// Its tokens and cost (`responses` = 1).
    pub sums: Sums,
}

/// One 5-hour window.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Block {
    /// When it opened (epoch milliseconds, on the hour).
    pub start_ms: i64,
    /// When it closes: `start_ms` + 5 hours.
    pub end_ms: i64,
    /// Its last response.
    pub last_ms: i64,
    /// Whether it is the window in force now.
    pub active: bool,
    /// The models of its responses, sorted.
    pub models: Vec<String>,
    /// What it adds up.
    #[serde(flatten)]
    pub sums: Sums,
}

/// The `blocks` report.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BlocksReport {
    /// Always `blocks`.
    pub report: &'static str,
    /// The query of the language whose rows were grouped.
    pub query: String,
    /// Always true: the windows are reconstructed from timestamps.
    pub estimate: bool,
    /// The windows, oldest first.
    pub blocks: Vec<Block>,
    /// The sums of every window.
    pub totals: Sums,
}

/// Groups `entries` (in time order) into windows, marking the one active at `now_ms`.
pub fn group(entries: &[Entry], now_ms: i64) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    for e in entries {
        let fits = blocks
            .last()
            .is_some_and(|b| e.at_ms < b.end_ms && e.at_ms - b.last_ms < WINDOW_MS);
        if !fits {
            let start_ms = e.at_ms.div_euclid(HOUR_MS) * HOUR_MS;
            blocks.push(Block {
                start_ms,
                end_ms: start_ms + WINDOW_MS,
                last_ms: e.at_ms,
                active: false,
                models: Vec::new(),
                sums: Sums::default(),
            });
        }
        if let Some(b) = blocks.last_mut() {
            b.last_ms = b.last_ms.max(e.at_ms);
            b.sums.add(&e.sums);
            if let Err(i) = b.models.binary_search(&e.model) {
                b.models.insert(i, e.model.clone());
            }
        }
    }
    if let Some(b) = blocks.last_mut() {
        b.active = now_ms < b.end_ms && now_ms - b.last_ms < WINDOW_MS;
    }
    blocks
}

/// Runs the `blocks` report of `request` (its range) in `session` (its scope and zone), with
/// `now_ms` deciding the active window.
pub async fn run(session: &Session, request: &Request, now_ms: i64) -> Result<BlocksReport, Error> {
    let request = Request {
        kind: Kind::Blocks,
        by: None,
        ..request.clone()
    };
    let query = request.query();
    let entries = super::usage_entries(session, &query).await?;
    let blocks = group(&entries, now_ms);
    let mut totals = Sums::default();
    for b in &blocks {
        totals.add(&b.sums);
    }
    Ok(BlocksReport {
        report: "blocks",
        query,
        estimate: true,
        blocks,
        totals,
    })
}

/// `ms` as an RFC 3339 UTC time.
pub fn utc(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}
