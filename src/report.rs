//! `quarry report daily|weekly|monthly|session|blocks`: refreshes the archive from the default
//! transcript locations, runs the report (`quarry::report`) and writes it: a readable table
//! (thousands separators, money to cents, a totals row), JSON, YAML, CSV or NDJSON; Arrow,
//! Parquet and `-o` write the answer of the report's query itself.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, Table};

use quarry::format::Format;
use quarry::report::blocks::{self, BlocksReport};
use quarry::report::{By, Kind, Report, Request, Sums};
use quarry::{Quarry, UnpricedModel, block_on};
use quarry_archive::location::{host_name, os_user};
use quarry_ingest::{IngestError, IngestOptions, ingest};

use crate::flags::{Cli, ReportArgs};
use crate::query::unpriced_lines;
use crate::{Failure, by_class, emit, open_archive, options, scope_of};
use quarry::output::numbers::{dollars, thousands};

/// Ingests new and changed files of the default locations (none there: nothing to do).
fn refresh(cli: &Cli) -> Result<(), Failure> {
    let mut archive = open_archive(cli.archive.clone())?;
    let options = IngestOptions {
        paths: Vec::new(),
        owner: os_user(),
        machine: host_name(),
        replace: Vec::new(),
        quick_check: true,
        verify: false,
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

/// Runs `quarry report`.
pub fn run_report(cli: &Cli, args: ReportArgs) -> Result<(), Failure> {
    let kind = Kind::from_name(&args.report)
        .ok_or_else(|| Failure::usage(format!("no report {}", args.report)))?;
    let request = Request {
        kind,
        since: args.since,
        until: args.until,
        by: args.by.as_deref().and_then(By::from_name),
        approximate: args.approximate,
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
    // HTML (`--format html`, or `-o FILE.html`) is the report's own document; any other `-o`
    // writes the answer of the report's query (to a file or an object store).
    let named = cli
        .output
        .as_deref()
        .and_then(|t| Format::for_path(std::path::Path::new(t)));
    let html =
        cli.format == Some(Format::Html) || (cli.format.is_none() && named == Some(Format::Html));
    let html_path = match cli.output.as_deref() {
        Some(target) if html && target.contains("://") && !target.starts_with("file://") => {
            return Err(Failure::usage(
                "the HTML report is written to a local file (-o report.html) or to standard output",
            ));
        }
        Some(target) if html => Some(quarry::output::output_path(target).map_err(Failure::usage)?),
        _ => None,
    };
    let format = if html {
        // `--format html -o report.csv` contradicts itself.
        crate::query::answer_format(cli, html_path.as_deref())?
    } else {
        cli.format()
    };
    if !args.no_refresh {
        if scope_of(cli)?.is_admin() {
            refresh(cli)?;
        } else {
            // Reading transcripts into the archive is the admin scope's (`quarry ingest`).
            eprintln!("note: a reader scope reports the archive as it is, without refreshing it");
        }
    }
    if format == Format::Html {
        let document = html_report(cli, &request)?;
        return match html_path {
            Some(path) => {
                let mut destination =
                    quarry::output::Destination::file(&path).map_err(Failure::runtime)?;
                destination
                    .write_text(&document)
                    .map_err(Failure::runtime)?;
                destination.commit().map_err(Failure::runtime)?;
                eprintln!(
                    "wrote the {} report (html) to {}",
                    kind.name(),
                    path.display()
                );
                Ok(())
            }
            None => {
                emit(&document);
                Ok(())
            }
        };
    }
    if cli.output.is_some() || matches!(format, Format::Arrow | Format::Parquet | Format::SqlJson) {
        if kind == Kind::Blocks {
            return Err(Failure::usage(
                "report blocks writes table, json, yaml, csv or ndjson to standard output",
            ));
        }
        return crate::query::run_query(
            &request.query(),
            cli,
            quarry::audit::Language::Query,
            None,
        );
    }
    let options = options(cli)?;
    let zone = options.tz.clone().unwrap_or_else(|| "local".into());
    let quarry = Quarry::open(&options).map_err(by_class)?;
    let text = if kind == Kind::Blocks {
        let now = now_ms();
        let report =
            block_on(async { blocks::run(&quarry.default_session().await?, &request, now).await })
                .and_then(|r| r)
                .map_err(by_class)?;
        let unpriced = quarry.take_unpriced();
        render_blocks(&report, format, &zone, &unpriced)?
    } else {
        let report = block_on(async {
            let session = quarry.default_session().await?;
            let mut report = quarry::report::run(&session, &request).await?;
            report.approximate_left_out = quarry::report::left_out(&session, &request).await?;
            Ok(report)
        })
        .and_then(|r| r)
        .map_err(by_class)?;
        let unpriced = quarry.take_unpriced();
        render(&report, format, &zone, &unpriced)?
    };
    emit(&text);
    Ok(())
}

/// The report of `request` as one self-contained HTML document: the report itself as the first
/// panel (its rows, totals and charts), then the dashboard's other panels over the same days
/// and zone, run at once.
fn html_report(cli: &Cli, request: &Request) -> Result<String, Failure> {
    use quarry::dashboard::{self, PanelId, Range};
    let options = options(cli)?;
    let zone = options.tz.clone().unwrap_or_else(|| "local".into());
    let quarry = Quarry::open(&options).map_err(by_class)?;
    let range = Range {
        since: request.since,
        until: request.until,
    };
    let kind = request.kind;
    let by = request
        .by
        .map(|b| format!(" by {}", b.name()))
        .unwrap_or_default();
    let heading = format!("quarry report {}{by}", kind.name());
    let panels = block_on(async {
        let session = quarry.default_session().await?;
        let first = if kind == Kind::Blocks {
            dashboard::of_blocks(&blocks::run(&session, request, now_ms()).await?)
        } else {
            let report = quarry::report::run(&session, request).await?;
            dashboard::of_report(
                &report,
                &format!("Tokens and cost, {}{by}", kind.name()),
                &range,
            )
        };
        // The report is the first panel: the dashboard's own panel of it is left out.
        let same = |p: &PanelId| match p {
            PanelId::Usage => kind == Kind::Daily && request.by == Some(By::Model),
            PanelId::Blocks => kind == Kind::Blocks,
            _ => false,
        };
        let others: Vec<PanelId> = PanelId::ALL.into_iter().filter(|p| !same(p)).collect();
        let mut panels = vec![first];
        for panel in dashboard::panels(&session, &others, &range).await {
            panels.push(panel?);
        }
        Ok::<_, quarry::Error>(panels)
    })
    .and_then(|p| p)
    .map_err(by_class)?;
    let unpriced = quarry.take_unpriced();
    let days = match (request.since, request.until) {
        (None, None) => String::from("every day in the archive"),
        (since, until) => format!(
            "{} through {}",
            since.map_or("the first day".into(), |d| d.to_string()),
            until.map_or("the last day".into(), |d| d.to_string())
        ),
    };
    let mut lines = vec![
        format!("{days}, days in {zone}; scope {}", quarry.scope().name()),
        String::from(
            "costs estimated at the prices in force when each response was billed (docs/cost.md); every number is exact over the archive's rows",
        ),
    ];
    lines.extend(unpriced_lines(&unpriced).lines().map(String::from));
    Ok(quarry::dashboard::html::document(&heading, &lines, &panels))
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

/// A flat record per row (JSON, CSV and NDJSON), its columns in order: the keys, then the sums.
type Record = Vec<(String, serde_json::Value)>;

fn flat(keys: &[(String, serde_json::Value)], s: &Sums) -> Record {
    let mut record: Record = keys.to_vec();
    record.extend([
        ("responses".to_string(), s.responses.into()),
        ("input_tokens".to_string(), s.input_tokens.into()),
        ("output_tokens".to_string(), s.output_tokens.into()),
        (
            "cache_write_tokens".to_string(),
            s.cache_write_tokens.into(),
        ),
        ("cache_read_tokens".to_string(), s.cache_read_tokens.into()),
        ("total_tokens".to_string(), s.total_tokens().into()),
        ("cost_usd".to_string(), s.cost_usd.into()),
    ]);
    record
}

/// `record` as a JSON object.
fn object(record: &Record) -> serde_json::Value {
    serde_json::Value::Object(record.iter().cloned().collect())
}

/// Writes a report as `format` (json, yaml, csv or ndjson): the whole `document`, or its
/// `records` one per line with `columns` as the CSV header.
fn structured(
    document: serde_json::Value,
    columns: &[String],
    records: &[Record],
    format: Format,
) -> Result<String, Failure> {
    match format {
        Format::Json => Ok(format!("{document}\n")),
        Format::Yaml => quarry::report::to_yaml(&document).map_err(Failure::runtime),
        Format::Ndjson => Ok(records
            .iter()
            .map(|r| {
                let fields: Vec<String> = r
                    .iter()
                    .map(|(k, v)| format!("{}:{v}", serde_json::Value::from(k.as_str())))
                    .collect();
                format!("{{{}}}\n", fields.join(","))
            })
            .collect()),
        Format::Csv => {
            let mut out = columns.join(",");
            out.push('\n');
            for r in records {
                let cells: Vec<String> = r
                    .iter()
                    .map(|(_, v)| match v {
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

/// The columns of a report's records: `keys`, then the sums.
fn columns(keys: &[String]) -> Vec<String> {
    let mut all = keys.to_vec();
    all.extend(
        flat(&[], &Sums::default())
            .into_iter()
            .map(|(name, _)| name),
    );
    all
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
        let records: Vec<Record> = report
            .rows
            .iter()
            .map(|r| {
                let keys: Vec<(String, serde_json::Value)> = r
                    .keys
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().into()))
                    .collect();
                flat(&keys, &r.sums)
            })
            .collect();
        let document = serde_json::json!({
            "report": report.report,
            "tz": zone,
            "query": report.query,
            "rows": records.iter().map(object).collect::<Vec<_>>(),
            "totals": object(&flat(&[], &report.totals)),
            "approximate_left_out": report.approximate_left_out,
            "unpriced": unpriced,
        });
        eprint!("{}{}", unpriced_lines(unpriced), left_out_line(report));
        return structured(document, &columns(&report.key_names), &records, format);
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
        "{table}\n{scope}; costs estimated at the prices in force when each response was billed (docs/cost.md)\n{}{}",
        unpriced_lines(unpriced),
        left_out_line(report)
    ))
}

/// The note on the approximate responses a report left out, if any.
fn left_out_line(report: &Report) -> String {
    match report.approximate_left_out {
        0 => String::new(),
        n => format!(
            "note: {n} approximate response{} (token counts an agent printed rounded: Aider) left out; --approximate counts {}\n",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" }
        ),
    }
}

fn render_blocks(
    report: &BlocksReport,
    format: Format,
    zone: &str,
    unpriced: &[UnpricedModel],
) -> Result<String, Failure> {
    let keys = |b: &blocks::Block| -> Vec<(String, serde_json::Value)> {
        vec![
            ("start".into(), blocks::utc(b.start_ms).into()),
            ("end".into(), blocks::utc(b.end_ms).into()),
            ("last".into(), blocks::utc(b.last_ms).into()),
            ("active".into(), b.active.into()),
            ("models".into(), b.models.join(" ").into()),
        ]
    };
    if format != Format::Table {
        let records: Vec<Record> = report
            .blocks
            .iter()
            .map(|b| flat(&keys(b), &b.sums))
            .collect();
        let document = serde_json::json!({
            "report": "blocks",
            "estimate": true,
            "note": "5-hour windows of Claude Code's usage reconstructed from the responses' timestamps; the provider does not record them",
            "query": report.query,
            "blocks": records.iter().map(object).collect::<Vec<_>>(),
            "totals": object(&flat(&[], &report.totals)),
            "unpriced": unpriced,
        });
        eprint!("{}", unpriced_lines(unpriced));
        let names: Vec<String> = ["start", "end", "last", "active", "models"]
            .map(String::from)
            .to_vec();
        return structured(document, &columns(&names), &records, format);
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
        "{table}\nblocks: 5-hour windows of Claude Code's usage reconstructed from the responses' timestamps (an estimate: the provider does not record them); ACTIVE is the window in force now. --tz {zone} does not move them: they open on the UTC hour.\n{}",
        unpriced_lines(unpriced)
    ))
}
