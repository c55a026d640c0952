//! `quarry prices`: the price table in force for this run (the bundled one, or `--prices
//! FILE`), with each period's dates and sources.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, Table};

use quarry::Format;
use quarry::prices::{Period, PriceTable, Rates};

use crate::flags::Cli;
use crate::{Failure, emit};

/// `quarry prices [MODEL]`.
pub fn run_prices(cli: &Cli, model: Option<&str>) -> Result<(), Failure> {
    let table = PriceTable::load(cli.prices.as_deref()).map_err(Failure::usage)?;
    emit(&render(&table, model, cli.format() == Format::Json));
    Ok(())
}

/// The table, or the models whose id or alias contains `filter`, as a table for people or as
/// JSON. With a filter (or as JSON) every source is shown in full.
pub fn render(table: &PriceTable, filter: Option<&str>, json: bool) -> String {
    let models: Vec<_> = table
        .models()
        .iter()
        .filter(|m| {
            filter.is_none_or(|f| m.id.contains(f) || m.aliases.iter().any(|a| a.contains(f)))
        })
        .collect();
    if json {
        let value = serde_json::json!({
            "origin": table.origin().to_string(),
            "summary": table.summary(),
            "unit": "USD per million tokens",
            "models": models.iter().map(|m| serde_json::json!({
                "provider": m.provider,
                "id": m.id,
                "aliases": m.aliases,
                "periods": m.periods.iter().map(period_json).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "unpriced": table.unpriced().iter().map(|u| serde_json::json!({"id": u.id, "reason": u.reason})).collect::<Vec<_>>(),
        });
        return format!("{value}\n");
    }
    let mut grid = Table::new();
    grid.load_preset(UTF8_FULL_CONDENSED);
    grid.set_header(vec![
        "model",
        "from",
        "until",
        "input",
        "output",
        "cache read",
        "cache write 5m",
        "cache write 1h",
        "long context",
        "source",
    ]);
    let mut sources = Vec::new();
    for m in &models {
        for p in &m.periods {
            let mut name = m.id.clone();
            if !m.aliases.is_empty() {
                name.push_str(&format!("\n= {}", m.aliases.join(", ")));
            }
            let tiers: Vec<String> = p
                .tiers
                .iter()
                .map(|t| {
                    format!(
                        "> {}k: {}",
                        t.above_prompt_tokens / 1000,
                        short_rates(&t.rates)
                    )
                })
                .collect();
            grid.add_row(vec![
                name,
                format!("{} ({})", p.from, p.from_basis),
                p.until
                    .map(|u| u.to_string())
                    .unwrap_or_else(|| "open".into()),
                money(p.rates.input),
                money(p.rates.output),
                money(p.rates.cache_read),
                money(p.rates.cache_write_5m),
                money(p.rates.cache_write_1h),
                tiers.join("\n"),
                short_source(&p.source),
            ]);
            if filter.is_some() {
                sources.push(format!("{} from {}: {}", m.id, p.from, p.source));
                if let Some(dates) = &p.date_source {
                    sources.push(format!("{} from {} (dates): {dates}", m.id, p.from));
                }
            }
        }
    }
    for i in 3..8 {
        if let Some(column) = grid.column_mut(i) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = format!("{grid}\n");
    out.push_str(&format!(
        "USD per million tokens; {} ({}). A period prices responses from its `from` day (UTC) until its `until`; the first also prices earlier ones (see docs/cost.md).\n",
        table.origin(),
        table.summary()
    ));
    if !sources.is_empty() {
        out.push_str("\nsources:\n");
        for s in sources {
            out.push_str(&format!("  {s}\n"));
        }
    } else {
        out.push_str("Full sources: quarry prices MODEL, or --format json.\n");
    }
    if filter.is_none() && !table.unpriced().is_empty() {
        out.push_str("\nno price, on purpose:\n");
        for u in table.unpriced() {
            out.push_str(&format!("  {}: {}\n", u.id, u.reason));
        }
    }
    out
}

fn period_json(p: &Period) -> serde_json::Value {
    serde_json::json!({
        "from": p.from.to_string(),
        "from_basis": p.from_basis,
        "until": p.until.map(|u| u.to_string()),
        "rates": rates_json(&p.rates),
        "tiers": p.tiers.iter().map(|t| serde_json::json!({
            "above_prompt_tokens": t.above_prompt_tokens,
            "rates": rates_json(&t.rates),
        })).collect::<Vec<_>>(),
        "source": p.source,
        "date_source": p.date_source,
    })
}

fn rates_json(r: &Rates) -> serde_json::Value {
    serde_json::json!({
        "input": r.input,
        "output": r.output,
        "cache_read": r.cache_read,
        "cache_write_5m": r.cache_write_5m,
        "cache_write_1h": r.cache_write_1h,
    })
}

/// A rate as `$3.75`, or `—` when there is none.
fn money(rate: Option<f64>) -> String {
    rate.map(|r| format!("${r}")).unwrap_or_else(|| "—".into())
}

fn short_rates(r: &Rates) -> String {
    [
        ("in", r.input),
        ("out", r.output),
        ("read", r.cache_read),
        ("5m", r.cache_write_5m),
        ("1h", r.cache_write_1h),
    ]
    .iter()
    .filter_map(|(n, v)| v.map(|v| format!("{n} ${v}")))
    .collect::<Vec<_>>()
    .join(" ")
}

/// The first words of a source: `litellm 1.110.2`, or a page's address.
fn short_source(source: &str) -> String {
    match source.split_once(" litellm-") {
        Some((head, _)) => head.to_string(),
        None => source.chars().take(40).collect(),
    }
}
