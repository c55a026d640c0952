//! Arrow schemas of the archive's tables, derived from their declaration (`quarry_schema`):
//! text and JSON → Utf8, integers → Int64, reals → Float64, flags (0/1 in SQLite) → Boolean,
//! times (epoch milliseconds in SQLite) → `Timestamp(Millisecond, "UTC")`; a column is nullable
//! exactly when the declaration says so.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use quarry_schema::{Column, ColumnType, Table};

/// The time zone of every time column: the archive stores UTC instants.
pub const TIME_ZONE: &str = "UTC";

/// The Arrow type of a declared column type.
pub fn data_type(ty: ColumnType) -> DataType {
    match ty {
        ColumnType::Text | ColumnType::Json => DataType::Utf8,
        ColumnType::Integer => DataType::Int64,
        ColumnType::Real => DataType::Float64,
        ColumnType::Boolean => DataType::Boolean,
        ColumnType::Time => DataType::Timestamp(TimeUnit::Millisecond, Some(TIME_ZONE.into())),
    }
}

/// The Arrow field of a declared column.
pub fn arrow_field(column: &Column) -> Field {
    Field::new(column.name, data_type(column.ty), column.nullable)
}

/// The Arrow schema of a declared table (or view), columns in declaration order.
pub fn arrow_schema(table: &Table) -> SchemaRef {
    Arc::new(Schema::new(
        table.columns.iter().map(arrow_field).collect::<Vec<_>>(),
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn types_follow_the_declaration() {
        let messages = quarry_schema::table("messages").unwrap();
        let schema = arrow_schema(messages);
        assert_eq!(schema.fields().len(), messages.columns.len());
        let field = |n: &str| schema.field_with_name(n).unwrap().clone();
        assert_eq!(field("message_id").data_type(), &DataType::Utf8);
        assert!(!field("message_id").is_nullable());
        assert_eq!(field("position").data_type(), &DataType::Int64);
        assert_eq!(field("is_sidechain").data_type(), &DataType::Boolean);
        assert_eq!(
            field("occurred_at_ms").data_type(),
            &DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
        );
        assert!(field("occurred_at_ms").is_nullable());
        assert_eq!(field("duration_ms").data_type(), &DataType::Int64);
        let sessions = arrow_schema(quarry_schema::table("sessions").unwrap());
        assert_eq!(
            sessions
                .field_with_name("reported_cost_usd")
                .unwrap()
                .data_type(),
            &DataType::Float64
        );
        assert_eq!(
            sessions.field_with_name("tags").unwrap().data_type(),
            &DataType::Utf8
        );
    }
}
