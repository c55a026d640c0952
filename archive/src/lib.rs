//! quarry's archive: one SQLite file (WAL, FTS5) holding every table of `quarry_schema`.
//!
//! This crate owns the file and nothing above it: the DDL of every table and its migrations
//! ([`schema`]), opening an archive (WAL, the page cache, migrations, the `generation` counter)
//! and describing its tables ([`archive`]), the statements the ingest writes rows with (INSERT
//! and upsert lists derived from the declaration, the usage resolution, the snapshot change
//! log), and where the archive lives by default ([`location`]). It knows nothing about the query
//! language, the ingest's formats or DataFusion; the ingest writes through it and the
//! providers read through it.

pub mod archive;
pub mod location;
pub mod schema;

pub use archive::{Archive, ArchiveError, TableInfo, bump_generation, read_generation};
pub use schema::{
    AFFECTED_TABLES, NOTE_SESSION_PARTITION, NUMBER_SESSION, RECORD_SESSION_CHANGE,
    RECORD_WHOLE_TABLE_CHANGE, RECORDED, RESOLVE_ALONE, RESOLVE_USAGE, SCHEMA_VERSION,
    SESSION_NUM_OF, SHARING_SESSIONS, SNAPSHOT_PARTITION, StatementError, WHOLE_TABLE_PARTITION,
    fulltext_insert_statement, insert_statement, key_hash, of_session, upsert_statement,
};
