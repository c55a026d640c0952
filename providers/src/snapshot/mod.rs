//! Columnar snapshots of the archive: every table of the catalog as Parquet files under one
//! root (a folder beside the archive, or any object store URL), listed by a manifest that
//! records the archive generation they are as of.
//!
//! Layout under the root:
//!
//! ```text
//! manifest.json                                  what a reader opens (replaced whole)
//! data/<table>/<partition>/g<generation>-<stamp>.parquet
//! ```
//!
//! A row's partition is its owning session's UTC creation month (`2026-03`, or `none`), so a
//! new day's sessions land in the newest partition and a refresh after an ingest rewrites only
//! the partitions the ingest touched (the archive records them in `snapshot_changes`); tables
//! with no owning session are one partition, `all`. Rows are in session order (sessions by
//! creation time), so row-group statistics on `session_id` and the time columns prune.

pub mod manifest;
mod table;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::common::Result;
use datafusion::datasource::TableProvider;
use datafusion::execution::context::SessionContext;

pub use self::manifest::Manifest;
pub use self::table::SnapshotTable;
pub use self::write::{TableReport, WriteReport, WriteSettings, check_codec, write_snapshot};
use crate::sqlite::SqliteTable;
use crate::store::Location;

/// What can go wrong with a snapshot.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The object store failed.
    #[error("snapshot at {location}: {message}")]
    Store {
        /// The snapshot's URL.
        location: String,
        /// The store's error.
        message: String,
    },
    /// The manifest is not a snapshot manifest.
    #[error("snapshot manifest at {location} is unreadable: {message}")]
    Manifest {
        /// The snapshot's URL.
        location: String,
        /// What is wrong.
        message: String,
    },
    /// Writing one file failed.
    #[error("writing snapshot file {file}: {message}")]
    Write {
        /// The file, relative to the root.
        file: String,
        /// Why.
        message: String,
    },
    /// Reading the archive failed.
    #[error("reading the archive for the snapshot: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A setting is invalid.
    #[error("{0}")]
    Setting(String),
    /// The written rows do not add up to the archive's (nothing was published).
    #[error(
        "the snapshot of {table} would hold {snapshot} rows but the archive has {archive}; nothing was published (run `quarry snapshot --full`)"
    )]
    Inconsistent {
        /// The table.
        table: String,
        /// Rows the snapshot would hold.
        snapshot: u64,
        /// Rows in the archive.
        archive: u64,
    },
    /// A fault of quarry's own.
    #[error("snapshot: {0}")]
    Internal(String),
}

impl SnapshotError {
    fn store(root: &Location, e: impl std::fmt::Display) -> Self {
        SnapshotError::Store {
            location: root.display.clone(),
            message: e.to_string(),
        }
    }

    fn write(file: &str, e: impl std::fmt::Display) -> Self {
        SnapshotError::Write {
            file: file.to_string(),
            message: e.to_string(),
        }
    }
}

/// The default snapshot root of the archive at `archive`: `<stem>.snapshot` beside it
/// (`archive.db` → `archive.snapshot/`).
pub fn default_root(archive: &Path) -> PathBuf {
    let stem = archive
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "archive".into());
    archive.with_file_name(format!("{stem}.snapshot"))
}

/// Registers every table of `manifest` (rooted at `root`) in `ctx` under its SQL name, with the
/// archive at `archive` answering full-text matches.
pub fn register_snapshot(
    ctx: &SessionContext,
    archive: &Path,
    root: &Location,
    manifest: &Manifest,
) -> Result<()> {
    ctx.register_object_store(&root.store_url, Arc::clone(&root.store));
    for (name, table) in snapshot_tables(archive, root, manifest)? {
        ctx.register_table(name, table)?;
    }
    Ok(())
}

/// The provider of every table of `manifest` (rooted at `root`), by SQL name in the catalog's
/// order, with the archive at `archive` answering full-text matches. The store of `root` must
/// be registered in the runtime that runs their scans.
pub fn snapshot_tables(
    archive: &Path,
    root: &Location,
    manifest: &Manifest,
) -> Result<Vec<(&'static str, Arc<dyn TableProvider>)>> {
    let mut tables: Vec<(&'static str, Arc<dyn TableProvider>)> = Vec::new();
    for def in quarry_schema::CATALOG {
        let files = manifest.tables.get(def.name).ok_or_else(|| {
            datafusion::common::DataFusionError::Plan(format!(
                "the snapshot at {} has no table {}",
                root.display, def.name
            ))
        })?;
        let fulltext = if def.name == "blocks" {
            Some(Arc::new(SqliteTable::open(archive, def.name)?))
        } else {
            None
        };
        let arrow = manifest.file_format == "arrow";
        let table = SnapshotTable::with_format(def, root, files, fulltext, arrow)?;
        tables.push((def.name, Arc::new(table)));
    }
    Ok(tables)
}
