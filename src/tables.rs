//! `quarry tables`: the catalog as a table for people or as JSON.

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use quarry::Format;
use quarry_archive::TableInfo;

use crate::flags::Cli;
use crate::{Failure, emit, open_archive};

/// `quarry tables`: every table of the archive with its exact row count and columns.
pub fn run_tables(cli: &Cli) -> Result<(), Failure> {
    let archive = open_archive(cli.archive.clone())?;
    let tables = archive.tables().map_err(Failure::runtime)?;
    let json = cli.format() == Format::Json;
    emit(&render(&tables, json, archive.generation().unwrap_or(0)));
    Ok(())
}

/// Renders the catalog.
pub fn render(tables: &[TableInfo], json: bool, generation: i64) -> String {
    if json {
        let value = serde_json::json!({
            "generation": generation,
            "tables": tables.iter().map(|t| serde_json::json!({
                "name": t.name,
                "doc": t.doc,
                "rows": t.rows,
                "columns": t.columns.iter().map(|(n, ty)| serde_json::json!({"name": n, "type": ty})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        return format!("{value}\n");
    }
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header(vec!["table", "rows", "columns"]);
    for t in tables {
        let columns = t
            .columns
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        table.add_row(vec![t.name.to_string(), t.rows.to_string(), columns]);
    }
    format!("{table}\ngeneration {generation}\n")
}
