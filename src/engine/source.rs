//! Which storage a session reads: the SQLite archive, or the columnar snapshot when it is as of
//! the archive's generation (`--source auto`, the default), and the tables of the chosen one
//! registered in the session's context.

use std::path::Path;

use datafusion::prelude::SessionContext;
use quarry_providers::snapshot::{self, Manifest};
use quarry_providers::store::{self, Location};

use super::engine_error;
use crate::api::{Error, Options, Source, SourceChoice};

/// The storage chosen, and why.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// The storage.
    pub source: Source,
    /// The snapshot's generation, when the snapshot was chosen.
    pub snapshot_generation: Option<i64>,
    /// One line saying what was chosen and why (shown by `explain --plan`).
    pub reason: String,
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

/// Reads the manifest at `root`, from any context (a thread of its own runs the store's I/O).
pub fn read_manifest(root: &Location) -> Result<Option<Manifest>, Error> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| Error::Snapshot(format!("cannot start a runtime: {e}")))?;
                runtime
                    .block_on(snapshot::manifest::read(root))
                    .map_err(|e| Error::Snapshot(e.to_string()))
            })
            .join()
            .map_err(|_| Error::Snapshot("reading the snapshot manifest panicked".into()))?
    })
}

/// Chooses the storage for `options` over the archive at generation `generation` and registers
/// its tables in `ctx`.
pub fn register(ctx: &SessionContext, options: &Options, generation: i64) -> Result<Chosen, Error> {
    let archive = options.archive.as_path();
    if options.source == SourceChoice::Sqlite {
        register_archive(ctx, archive)?;
        return Ok(Chosen {
            source: Source::Sqlite,
            snapshot_generation: None,
            reason: "sqlite (--source sqlite)".into(),
        });
    }
    let root = snapshot_location(options)?;
    let manifest = read_manifest(&root)?;
    let usable = match &manifest {
        None => Err(Error::NoSnapshot(root.display.clone())),
        Some(m)
            if m.generation != generation
                || m.schema_version != quarry_providers::SCHEMA_VERSION =>
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
            snapshot::register_snapshot(ctx, archive, &root, manifest).map_err(engine_error)?;
            Ok(Chosen {
                source: Source::Snapshot,
                snapshot_generation: Some(manifest.generation),
                reason: format!(
                    "snapshot at {} (generation {}, the archive's)",
                    root.display, manifest.generation
                ),
            })
        }
        (Err(e), SourceChoice::Auto) => {
            register_archive(ctx, archive)?;
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
            Ok(Chosen {
                source: Source::Sqlite,
                snapshot_generation: None,
                reason: format!("sqlite (auto: {why})"),
            })
        }
        (Err(e), _) => Err(e),
    }
}

fn register_archive(ctx: &SessionContext, archive: &Path) -> Result<(), Error> {
    quarry_providers::sqlite::register_archive(ctx, archive).map_err(engine_error)
}
