//! quarry's archive: the SQLite schema with its migrations, and the catalog of tables.
//!
//! This crate owns storage: the DDL of every archive table (whose declaration, `quarry_schema`,
//! gives the Arrow schemas and the ingest's statements), opening an archive file (WAL,
//! migrations, the `generation` counter) and describing its tables. It knows nothing about the
//! query language. DataFusion `TableProvider`s over these tables join this crate with the engine.

pub mod archive;
#[cfg(feature = "engine")]
pub mod pass_through;
pub mod schema;
#[cfg(feature = "engine")]
pub mod scoped;
#[cfg(feature = "engine")]
pub mod snapshot;
#[cfg(feature = "engine")]
pub mod sqlite;
#[cfg(feature = "engine")]
pub mod store;

pub use archive::{Archive, ArchiveError, TableInfo, bump_generation, read_generation};
pub use schema::{
    AFFECTED_TABLES, NOTE_SESSION_PARTITION, RECORD_SESSION_CHANGE, RECORD_WHOLE_TABLE_CHANGE,
    RESOLVE_USAGE, SCHEMA_VERSION, SNAPSHOT_PARTITION, StatementError, WHOLE_TABLE_PARTITION,
    fulltext_insert_statement, insert_statement, upsert_statement,
};
