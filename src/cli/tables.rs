//! `quarry tables`: the catalog as a table for people or as JSON.

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use quarry_providers::TableInfo;

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
