//! Arrow schemas of the archive's tables, read from SQLite's declared column types: `INTEGER` →
//! Int64 (Boolean for the flag columns), `REAL` → Float64, `TEXT` → Utf8. Every column is
//! nullable on the Arrow side (SQLite does not enforce types).

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use rusqlite::Connection;

/// Columns stored as 0/1 integers that are booleans to the engine.
pub const BOOLEAN_COLUMNS: &[&str] = &["is_sidechain", "turn_committed", "is_error", "committed"];

/// The Arrow schema of `table` (a table or view of the archive).
pub fn arrow_schema(conn: &Connection, table: &str) -> rusqlite::Result<SchemaRef> {
    let mut stmt = conn.prepare("SELECT name, type FROM pragma_table_info(?1) ORDER BY cid")?;
    let fields = stmt
        .query_map([table], |r| {
            let name: String = r.get(0)?;
            let declared: String = r.get(1)?;
            Ok((name, declared))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .map(|(name, declared)| {
            let data_type = if BOOLEAN_COLUMNS.contains(&name.as_str()) {
                DataType::Boolean
            } else {
                match declared.to_ascii_uppercase().as_str() {
                    "INTEGER" | "INT" => DataType::Int64,
                    "REAL" | "FLOAT" | "DOUBLE" => DataType::Float64,
                    _ => DataType::Utf8,
                }
            };
            Field::new(name, data_type, true)
        })
        .collect::<Vec<_>>();
    Ok(Arc::new(Schema::new(fields)))
}
