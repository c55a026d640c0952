//! Rendering a report (engine builds): the readable table, JSON, YAML, CSV and NDJSON.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, Table};

use super::report::{ReportArgs, dollars, parse_day, refresh, thousands, unpriced_lines};
use super::{Cli, Failure, by_class, emit, options};
use crate::format::Format;
use crate::report::blocks::{self, BlocksReport};
use crate::report::{By, Kind, Report, Request, Sums};
use crate::{Quarry, UnpricedModel, block_on};

/// Runs `quarry report`.
pub fn run_report(cli: &Cli, args: ReportArgs) -> Result<(), Failure> {
    let kind = Kind::from_name(&args.report)
        .ok_or_else(|| Failure::usage(format!("no report {}", args.report)))?;
    let request = Request {
        kind,
        since: args
            .since
            .as_deref()
            .map(|d| parse_day("since", d))
            .transpose()?,
        until: args
            .until
            .as_deref()
            .map(|d| parse_day("until", d))
            .transpose()?,
        by: args.by.as_deref().and_then(By::from_name),
    };
    if kind == Kind::Blocks && request.by.is_some() {
        return Err(Failure::usage(
            "report blocks has no --by: a window holds every model",
        ));
    }
    if args.explain {
        let note = if kind == Kind::Blocks {
            "# blocks groups these rows into 5-hour windows (an estimate from timestamps)\n"
        } else {
            ""
        };
        emit(&format!("{note}{}\n", request.query()));
        return Ok(());
    }
    let format = cli.format();
    if !args.no_refresh {
        refresh(cli)?;
    }
    if cli.output.is_some() || matches!(format, Format::Arrow | Format::Parquet | Format::SqlJson) {
        if kind == Kind::Blocks {
            return Err(Failure::usage(
                "report blocks writes table, json, yaml, csv or ndjson to standard output",
            ));
        }
        return super::run_query(&request.query(), cli, crate::audit::Language::Query);
    }
    let options = options(cli)?;
    let zone = options.tz.clone().unwrap_or_else(|| "local".into());
    let quarry = Quarry::open(&options).map_err(by_class)?;
    let text = if kind == Kind::Blocks {
        let now = now_ms();
        let report = block_on(blocks::run(&quarry, &request, now))
            .and_then(|r| r)
            .map_err(by_class)?;
        let unpriced = quarry.take_unpriced();
        render_blocks(&report, format, &zone, &unpriced)?
    } else {
        let report = block_on(crate::report::run(&quarry, &request))
            .and_then(|r| r)
            .map_err(by_class)?;
        let unpriced = quarry.take_unpriced();
        render(&report, format, &zone, &unpriced)?
    };
    emit(&text);
    Ok(())
}

/// Now in epoch milliseconds (`QUARRY_NOW` when set, as the language's clock reads it).
fn now_ms() -> i64 {
    std::env::var("QUARRY_NOW")
        .ok()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
        .map(|t| t.timestamp_millis())
        .unwrap_or_else(|| chrono::Utc::now().timestamp_millis())
}

const SUM_HEADERS: [&str; 7] = [
    "responses",
    "input",
    "output",
    "cache write",
    "cache read",
    "total tokens",
    "cost (USD)",
];

fn sum_cells(s: &Sums) -> Vec<String> {
    vec![
        thousands(s.responses),
        thousands(s.input_tokens),
        thousands(s.output_tokens),
        thousands(s.cache_write_tokens),
        thousands(s.cache_read_tokens),
        thousands(s.total_tokens()),
        dollars(s.cost_usd),
    ]
}

fn grid(
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    totals: Vec<String>,
    numeric_from: usize,
) -> Table {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header(headers);
    for row in rows {
        table.add_row(row);
    }
    table.add_row(totals.into_iter().map(Cell::new));
    let columns = table.column_count();
    for i in numeric_from..columns {
        if let Some(column) = table.column_mut(i) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}

/// A flat record per row for CSV and NDJSON.
fn flat(keys: &[(String, String)], s: &Sums) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    for (k, v) in keys {
        m.insert(k.clone(), v.clone().into());
    }
    m.insert("responses".into(), s.responses.into());
    m.insert("input_tokens".into(), s.input_tokens.into());
    m.insert("output_tokens".into(), s.output_tokens.into());
    m.insert("cache_write_tokens".into(), s.cache_write_tokens.into());
    m.insert("cache_read_tokens".into(), s.cache_read_tokens.into());
    m.insert("total_tokens".into(), s.total_tokens().into());
    m.insert("cost_usd".into(), s.cost_usd.into());
    m
}

/// Writes `rows` of flat records as `format` (json, yaml, csv or ndjson).
fn structured(
    document: serde_json::Value,
    rows: Vec<serde_json::Map<String, serde_json::Value>>,
    format: Format,
) -> Result<String, Failure> {
    match format {
        Format::Json => Ok(format!("{document}\n")),
        Format::Yaml => serde_yaml_ng::to_string(&document).map_err(Failure::runtime),
        Format::Ndjson => Ok(rows
            .iter()
            .map(|r| format!("{}\n", serde_json::Value::Object(r.clone())))
            .collect()),
        Format::Csv => {
            let mut out = String::new();
            if let Some(first) = rows.first() {
                out.push_str(&first.keys().cloned().collect::<Vec<_>>().join(","));
                out.push('\n');
            }
            for r in &rows {
                let cells: Vec<String> = r
                    .values()
                    .map(|v| match v {
                        serde_json::Value::Null => String::new(),
                        serde_json::Value::String(s) => csv_field(s),
                        other => other.to_string(),
                    })
                    .collect();
                out.push_str(&cells.join(","));
                out.push('\n');
            }
            Ok(out)
        }
        other => Err(Failure::usage(format!(
            "report writes table, json, yaml, csv or ndjson (not {})",
            other.name()
        ))),
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn render(
    report: &Report,
    format: Format,
    zone: &str,
    unpriced: &[UnpricedModel],
) -> Result<String, Failure> {
    if format != Format::Table {
        let document = serde_json::json!({
            "report": report.report,
            "tz": zone,
            "query": report.query,
            "rows": report.rows.iter().map(|r| serde_json::Value::Object(flat(&r.keys, &r.sums))).collect::<Vec<_>>(),
            "totals": serde_json::Value::Object(flat(&[], &report.totals)),
            "unpriced": unpriced,
        });
        let rows = report.rows.iter().map(|r| flat(&r.keys, &r.sums)).collect();
        eprint!("{}", unpriced_lines(unpriced));
        return structured(document, rows, format);
    }
    let mut headers = report.key_names.clone();
    let numeric_from = headers.len();
    headers.extend(SUM_HEADERS.iter().map(|h| h.to_string()));
    let rows = report
        .rows
        .iter()
        .map(|r| {
            let mut cells: Vec<String> = r.keys.iter().map(|(_, v)| v.clone()).collect();
            cells.extend(sum_cells(&r.sums));
            cells
        })
        .collect();
    let mut totals = vec![String::new(); numeric_from];
    if let Some(first) = totals.first_mut() {
        *first = "Total".into();
    }
    totals.extend(sum_cells(&report.totals));
    let table = grid(headers, rows, totals, numeric_from);
    let scope = if report.report == "session" {
        String::from("session, most costly first")
    } else {
        format!("{}, days in {zone}", report.report)
    };
    Ok(format!(
        "{table}\n{scope}; costs estimated at the prices in force when each response was billed (docs/cost.md)\n{}",
        unpriced_lines(unpriced)
    ))
}

fn render_blocks(
    report: &BlocksReport,
    format: Format,
    zone: &str,
    unpriced: &[UnpricedModel],
) -> Result<String, Failure> {
    let keys = |b: &blocks::Block| {
        vec![
            ("start".to_string(), blocks::utc(b.start_ms)),
            ("end".to_string(), blocks::utc(b.end_ms)),
            ("last".to_string(), blocks::utc(b.last_ms)),
            ("active".to_string(), b.active.to_string()),
            ("models".to_string(), b.models.join(" ")),
        ]
    };
    if format != Format::Table {
        let document = serde_json::json!({
            "report": "blocks",
            "estimate": true,
            "note": "5-hour windows reconstructed from the responses' timestamps; the provider does not record them",
            "query": report.query,
            "blocks": report.blocks.iter().map(|b| serde_json::Value::Object(flat(&keys(b), &b.sums))).collect::<Vec<_>>(),
            "totals": serde_json::Value::Object(flat(&[], &report.totals)),
            "unpriced": unpriced,
        });
        let rows = report
            .blocks
            .iter()
            .map(|b| flat(&keys(b), &b.sums))
            .collect();
        eprint!("{}", unpriced_lines(unpriced));
        return structured(document, rows, format);
    }
    let mut headers: Vec<String> = vec!["window (UTC)".into(), "models".into()];
    headers.extend(SUM_HEADERS.iter().map(|h| h.to_string()));
    let rows = report
        .blocks
        .iter()
        .map(|b| {
            let start = blocks::utc(b.start_ms);
            let end = blocks::utc(b.end_ms);
            let mut window = format!("{} – {}", &start[..16].replace('T', " "), &end[11..16]);
            if b.active {
                window.push_str(" ACTIVE");
            }
            let mut cells = vec![window, b.models.join("\n")];
            cells.extend(sum_cells(&b.sums));
            cells
        })
        .collect();
    let mut totals = vec!["Total".to_string(), String::new()];
    totals.extend(sum_cells(&report.totals));
    let table = grid(headers, rows, totals, 2);
    Ok(format!(
        "{table}\nblocks: 5-hour windows reconstructed from the responses' timestamps (an estimate: the provider does not record them); ACTIVE is the window in force now. --tz {zone} does not move them: they open on the UTC hour.\n{}",
        unpriced_lines(unpriced)
    ))
}
