//! Which storage answers at one archive generation: the SQLite archive, or the columnar
//! snapshot when it is as of the archive's generation (`--source auto`, the default), and the
//! providers of the chosen one's tables.

use std::path::Path;
use std::sync::Arc;

use datafusion::datasource::TableProvider;
use datafusion::execution::runtime_env::RuntimeEnv;
use quarry_providers::snapshot::{self, Manifest};
use quarry_providers::store::{self, Location};

use crate::answer::Source;
use crate::error::Error;
use crate::error::engine_error;
use crate::request::{Options, SourceChoice};

/// The tables of one storage, by SQL name, in the catalog's order.
pub type Providers = Vec<(&'static str, Arc<dyn TableProvider>)>;

/// The storage chosen, and why.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// The storage.
    pub source: Source,
    /// The snapshot's generation, when the snapshot was chosen.
    pub snapshot_generation: Option<i64>,
    /// One line saying what was chosen and why (shown by `explain --plan`).
    pub reason: String,
    /// Whether `--source auto` fell back to the archive because the snapshot was missing or
    /// stale (so a snapshot written later, at the same generation, is worth looking for).
    pub fell_back: bool,
}

/// The snapshot location of `options`: `--snapshot-url`, else the folder beside the archive.
pub fn snapshot_location(options: &Options) -> Result<Location, Error> {
    let target = match &options.snapshot_url {
        Some(url) => url.clone(),
        None => snapshot::default_root(&options.archive)
            .to_string_lossy()
            .to_string(),
    };
    store::locate(&target).map_err(|e| Error::Setting(e.to_string()))
}

/// Chooses the storage for `options` over the archive at `generation` and opens its tables;
/// a snapshot's store is registered in `runtime`, which runs their scans.
pub async fn open(
    options: &Options,
    generation: i64,
    runtime: &RuntimeEnv,
) -> Result<(Chosen, Providers), Error> {
    let archive = options.archive.clone();
    if options.source == SourceChoice::Sqlite {
        return Ok((
            Chosen {
                source: Source::Sqlite,
                snapshot_generation: None,
                reason: "sqlite (--source sqlite)".into(),
                fell_back: false,
            },
            archive_tables(&archive).await?,
        ));
    }
    let root = snapshot_location(options)?;
    let manifest = snapshot::manifest::read(&root)
        .await
        .map_err(|e| Error::Snapshot(e.to_string()))?;
    let usable = match &manifest {
        None => Err(Error::NoSnapshot(root.display.clone())),
        Some(m)
            if m.generation != generation || m.schema_version != quarry_archive::SCHEMA_VERSION =>
        {
            Err(Error::StaleSnapshot {
                location: root.display.clone(),
                snapshot: m.generation,
                archive: generation,
            })
        }
        Some(m) => Ok(m),
    };
    match (usable, options.source) {
        (Ok(manifest), _) => {
            runtime.register_object_store(&root.store_url, Arc::clone(&root.store));
            let tables = snapshot_tables(&archive, &root, manifest).await?;
            Ok((
                Chosen {
                    source: Source::Snapshot,
                    snapshot_generation: Some(manifest.generation),
                    reason: format!(
                        "snapshot at {} (generation {}, the archive's)",
                        root.display, manifest.generation
                    ),
                    fell_back: false,
                },
                tables,
            ))
        }
        (Err(e), SourceChoice::Auto) => {
            let why = match e {
                Error::StaleSnapshot {
                    location,
                    snapshot,
                    archive,
                } => format!(
                    "the snapshot at {location} is stale: generation {snapshot}, the archive's {archive}"
                ),
                _ => format!("no snapshot at {}", root.display),
            };
            Ok((
                Chosen {
                    source: Source::Sqlite,
                    snapshot_generation: None,
                    reason: format!("sqlite (auto: {why})"),
                    fell_back: true,
                },
                archive_tables(&archive).await?,
            ))
        }
        (Err(e), _) => Err(e),
    }
}

/// The SQLite archive's tables (opening each checks that the archive has it).
async fn archive_tables(archive: &Path) -> Result<Providers, Error> {
    let path = archive.to_path_buf();
    super::blocking(move || {
        quarry_providers::sqlite::archive_tables(&path).map_err(|e| Error::archive(&path, e))
    })
    .await
}

/// The snapshot's tables (the full-text index stays the archive's).
async fn snapshot_tables(
    archive: &Path,
    root: &Location,
    manifest: &Manifest,
) -> Result<Providers, Error> {
    let (archive, root, manifest) = (archive.to_path_buf(), root.clone(), manifest.clone());
    super::blocking(move || {
        snapshot::snapshot_tables(&archive, &root, &manifest).map_err(engine_error)
    })
    .await
}
