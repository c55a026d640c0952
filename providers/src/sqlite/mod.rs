//! DataFusion `TableProvider`s over the SQLite archive: one per table of the catalog.
//!
//! Each scan streams `RecordBatch`es from SQLite (never the whole table in memory) on blocking
//! threads, selects only the projected columns, pushes down the filters `pushdown` can translate
//! (reported `Exact` only where SQLite's semantics equal DataFusion's) and the limit, and splits
//! large tables into rowid ranges so both cores scan at once.

mod pushdown;
pub(crate) mod scan;
mod schema;
mod table;

pub use pushdown::{FTS_FUNCTION, Pushdown, classify};
pub use scan::SqliteScanExec;
pub use schema::{TIME_ZONE, arrow_field, arrow_schema, data_type};
pub use table::{SqliteTable, archive_tables, register_archive};
