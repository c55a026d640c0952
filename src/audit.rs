//! `quarry audit`: the audit trail as people read it, or as JSON.

use quarry::{Format, Quarry};

use crate::flags::Cli;
use crate::{Failure, by_class, emit, options};

/// `quarry audit`: the most recent audited queries, requests and refusals.
pub fn run_audit(cli: &Cli) -> Result<(), Failure> {
    let quarry = Quarry::open(&options(cli)?).map_err(by_class)?;
    let limit = cli.limit.unwrap_or(50);
    let records = quarry.audit_records(limit).map_err(by_class)?;
    let (requests, refusals) = quarry.audit_requests(limit).map_err(by_class)?;
    if cli.format() == Format::Json {
        emit(&format!(
            "{}\n",
            serde_json::json!({ "records": records, "requests": requests, "refusals": refusals })
        ));
        return Ok(());
    }
    let mut out = String::new();
    for r in &records {
        let when = utc_time(r.at_ms);
        let outcome = match (&r.status, &r.error) {
            (None, _) => "no outcome (no result was returned)".to_string(),
            (Some(_), Some(e)) => format!("error: {e}"),
            (Some(s), None) => format!(
                "{s}, {} rows{}, {} ms",
                r.rows.unwrap_or(0),
                if r.truncated == Some(true) {
                    " (truncated)"
                } else {
                    ""
                },
                r.duration_ms.unwrap_or(0)
            ),
        };
        out.push_str(&format!(
            "#{} {when} UTC  {} via {} as {} ({}): {}\n    {outcome}\n",
            r.intent_id,
            r.who.as_deref().unwrap_or("?"),
            r.surface,
            r.scope,
            r.language,
            r.query.replace('\n', " "),
        ));
    }
    if records.is_empty() {
        out.push_str("no audited queries yet\n");
    }
    if !requests.is_empty() {
        out.push_str("\nrequests that ran no query, newest first:\n");
    }
    for r in &requests {
        let outcome = match (&r.code, &r.error) {
            (Some(code), Some(e)) => format!("{code}: {e}"),
            _ => r.status.clone(),
        };
        out.push_str(&format!(
            "#{} {} UTC  {} via {} as {}: {} {}{}\n    {outcome}\n",
            r.request_id,
            utc_time(r.at_ms),
            r.who.as_deref().unwrap_or("?"),
            r.surface,
            r.scope.as_deref().unwrap_or("?"),
            r.kind,
            r.target,
            r.text
                .as_deref()
                .map(|t| format!(": {}", t.replace('\n', " ")))
                .unwrap_or_default(),
        ));
    }
    if !refusals.is_empty() {
        out.push_str("\nrefused before the caller was known, per minute and source:\n");
    }
    for r in &refusals {
        out.push_str(&format!(
            "{} UTC  {} from {}: {} × {}\n",
            utc_time(r.minute_ms),
            r.surface,
            r.source,
            r.count,
            r.code
        ));
    }
    emit(&out);
    Ok(())
}

/// Milliseconds since the epoch as `YYYY-MM-DD HH:MM:SS` (UTC).
fn utc_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}
