//! The snapshot's manifest: which files hold which rows of which table, as of which archive
//! generation. Readers open only the files the manifest names, so files written by an
//! unfinished refresh are never read; a refresh publishes itself by replacing the manifest.

use std::collections::BTreeMap;

use object_store::{ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};

use super::SnapshotError;
use crate::store::Location;

/// The manifest's name under the snapshot's root.
pub const MANIFEST: &str = "manifest.json";

/// What the manifest's `format` says.
pub const FORMAT: &str = "quarry-snapshot";

/// The layout version: a snapshot of another layout is rewritten whole, never refreshed.
pub const LAYOUT: u32 = 1;

fn yes() -> bool {
    true
}

fn parquet() -> String {
    "parquet".into()
}

/// A snapshot's table of contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`LAYOUT`] when written.
    pub layout: u32,
    /// The archive's schema version when written.
    pub schema_version: i64,
    /// The archive generation the rows are as of.
    pub generation: i64,
    /// When it was written (epoch milliseconds).
    pub written_at_ms: i64,
    /// The Parquet codec of its files (`zstd(1)`, `lz4`, `snappy`, `none`).
    pub compression: String,
    /// The codec of the `text` columns, when it is not `compression`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_compression: Option<String>,
    /// Rows per row group.
    pub row_group_rows: usize,
    /// Whether Parquet columns are dictionary-encoded.
    #[serde(default = "yes")]
    pub dictionary: bool,
    /// `parquet` or `arrow` (Arrow IPC files).
    #[serde(default = "parquet")]
    pub file_format: String,
    /// Every table of the catalog.
    pub tables: BTreeMap<String, TableFiles>,
}

/// One table's files, by partition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableFiles {
    /// Rows in all.
    pub rows: u64,
    /// Partition key (`YYYY-MM`, `none`, or `all`) to its files.
    pub partitions: BTreeMap<String, PartitionFiles>,
}

/// One partition of one table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionFiles {
    /// The generation its files were written at.
    pub generation: i64,
    /// Its files.
    pub files: Vec<FileEntry>,
}

/// One Parquet file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path relative to the snapshot's root.
    pub path: String,
    /// Rows in it.
    pub rows: u64,
    /// Its size in bytes.
    pub bytes: u64,
}

impl Manifest {
    /// Every file it names, relative to the root.
    pub fn files(&self) -> impl Iterator<Item = &FileEntry> {
        self.tables
            .values()
            .flat_map(|t| t.partitions.values())
            .flat_map(|p| p.files.iter())
    }

    /// Total bytes of its files.
    pub fn bytes(&self) -> u64 {
        self.files().map(|f| f.bytes).sum()
    }
}

/// The manifest at `root`, or `None` when there is no snapshot there.
pub async fn read(root: &Location) -> Result<Option<Manifest>, SnapshotError> {
    let path = root.child(MANIFEST);
    let bytes = match root.store.get(&path).await {
        Ok(found) => found
            .bytes()
            .await
            .map_err(|e| SnapshotError::store(root, e))?,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(SnapshotError::store(root, e)),
    };
    let manifest: Manifest =
        serde_json::from_slice(&bytes).map_err(|e| SnapshotError::Manifest {
            location: root.display.clone(),
            message: e.to_string(),
        })?;
    if manifest.format != FORMAT {
        return Err(SnapshotError::Manifest {
            location: root.display.clone(),
            message: format!("format {:?} is not {FORMAT:?}", manifest.format),
        });
    }
    Ok(Some(manifest))
}

/// Publishes `manifest` at `root`: one whole-object write (a rename on the local file system,
/// a single PUT on an object store), so a reader sees the previous manifest or this one.
pub async fn publish(root: &Location, manifest: &Manifest) -> Result<(), SnapshotError> {
    let bytes = serde_json::to_vec_pretty(manifest).map_err(|e| SnapshotError::Manifest {
        location: root.display.clone(),
        message: e.to_string(),
    })?;
    root.store
        .put(&root.child(MANIFEST), PutPayload::from(bytes))
        .await
        .map_err(|e| SnapshotError::store(root, e))?;
    Ok(())
}
