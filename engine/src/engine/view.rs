//! What a long-lived engine keeps between requests: the archive's identity and generation
//! ([`Watch`], [`Stamp`]), the tables of one generation ([`Catalog`]: the chosen storage's
//! providers and the admin scope's [`View`]), and a [`View`]: one scope's tables under one
//! DataFusion session state, from which every session of that scope is a cheap clone.
//!
//! A view's catalog is read-only: a session cannot register or drop a table in it, so what
//! one request does never reaches another.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::catalog::{
    CatalogProvider, CatalogProviderList, MemoryCatalogProvider, MemoryCatalogProviderList,
    SchemaProvider,
};
use datafusion::common::DataFusionError;
use datafusion::datasource::TableProvider;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::context::SessionState;
use rusqlite::{Connection, OpenFlags};

use super::source::{Chosen, Providers};
use crate::error::Error;
use crate::error::engine_error;

/// Which archive file, at which generation: what the tables of a [`Catalog`] are as of. The
/// file's identity (device and inode) tells a replaced archive from one that moved on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stamp {
    /// The file's device and inode (0 where the platform has none).
    pub file: (u64, u64),
    /// The archive's generation.
    pub generation: i64,
}

/// Reads the archive's [`Stamp`] with one read-only connection kept open (reopened when the
/// file is replaced), so checking for a new generation costs a few microseconds.
#[derive(Debug)]
pub struct Watch {
    path: PathBuf,
    open: Mutex<Option<((u64, u64), Connection)>>,
}

impl Watch {
    /// A watch on the archive at `path`.
    pub fn new(path: &Path) -> Watch {
        Watch {
            path: path.to_path_buf(),
            open: Mutex::new(None),
        }
    }

    /// The archive's stamp now.
    pub fn stamp(&self) -> Result<Stamp, Error> {
        let file = file_identity(&self.path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::MissingArchive(self.path.clone())
            } else {
                Error::archive(&self.path, e)
            }
        })?;
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.as_ref().is_none_or(|(seen, _)| *seen != file) {
            let conn = read_only(&self.path).map_err(|e| Error::archive(&self.path, e))?;
            *open = Some((file, conn));
        }
        let Some((_, conn)) = open.as_ref() else {
            return Err(Error::Internal("the archive's connection is gone".into()));
        };
        match quarry_archive::read_generation(conn) {
            Ok(generation) => Ok(Stamp { file, generation }),
            Err(e) => {
                // Not kept: the next call opens the file afresh.
                *open = None;
                Err(Error::archive(&self.path, e))
            }
        }
    }
}

/// The device and inode of the file at `path`.
pub(crate) fn file_identity(path: &Path) -> std::io::Result<(u64, u64)> {
    let metadata = std::fs::metadata(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok((metadata.dev(), metadata.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        Ok((0, 0))
    }
}

/// The tables of one archive generation: the chosen storage, its providers as stored (what
/// reader scopes wrap), and the admin scope's view of them.
pub struct Catalog {
    /// The archive and generation they are as of.
    pub stamp: Stamp,
    /// The storage chosen, and why.
    pub chosen: Chosen,
    /// The storage's providers, before scopes and computed columns.
    pub stored: Providers,
    /// Everything, as the admin scope sees it.
    pub admin: Arc<View>,
}

/// One scope's tables in one DataFusion session state (the engine's runtime, functions and
/// planner): a session of the scope clones the state, which shares everything else.
pub struct View {
    state: SessionState,
    tables: BTreeMap<String, Arc<dyn TableProvider>>,
    chosen: Chosen,
}

impl View {
    /// A view of `tables` over `template` (the engine's state), read from `chosen`.
    pub fn new(template: &SessionState, tables: Providers, chosen: &Chosen) -> Result<View, Error> {
        let tables: BTreeMap<String, Arc<dyn TableProvider>> = tables
            .into_iter()
            .map(|(name, provider)| (name.to_string(), provider))
            .collect();
        let state = state_over(template, &tables)?;
        Ok(View {
            state,
            tables,
            chosen: chosen.clone(),
        })
    }

    /// The session state every session of the view starts from.
    pub fn state(&self) -> &SessionState {
        &self.state
    }

    /// Its tables by name.
    pub fn tables(&self) -> &BTreeMap<String, Arc<dyn TableProvider>> {
        &self.tables
    }

    /// The storage it reads.
    pub fn chosen(&self) -> &Chosen {
        &self.chosen
    }

    /// The same view with `name` answered by `provider` instead (tests wrap a provider).
    #[cfg(test)]
    pub fn with_table(&self, name: &str, provider: Arc<dyn TableProvider>) -> Result<View, Error> {
        let mut tables = self.tables.clone();
        tables.insert(name.to_string(), provider);
        Ok(View {
            state: state_over(&self.state, &tables)?,
            tables,
            chosen: self.chosen.clone(),
        })
    }
}

/// `template` with a catalog holding `tables` (read-only) as `datafusion.public`.
fn state_over(
    template: &SessionState,
    tables: &BTreeMap<String, Arc<dyn TableProvider>>,
) -> Result<SessionState, Error> {
    let options = template.config().options();
    let (catalog_name, schema_name) = (
        options.catalog.default_catalog.clone(),
        options.catalog.default_schema.clone(),
    );
    let catalog = MemoryCatalogProvider::new();
    catalog
        .register_schema(&schema_name, Arc::new(ReadOnlySchema(tables.clone())))
        .map_err(engine_error)?;
    let list = MemoryCatalogProviderList::new();
    list.register_catalog(catalog_name, Arc::new(catalog));
    Ok(SessionStateBuilder::new_from_existing(template.clone())
        .with_catalog_list(Arc::new(list) as Arc<dyn CatalogProviderList>)
        .build())
}

/// A schema whose tables are fixed when it is made.
#[derive(Debug)]
struct ReadOnlySchema(BTreeMap<String, Arc<dyn TableProvider>>);

#[async_trait]
impl SchemaProvider for ReadOnlySchema {
    fn table_names(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>, DataFusionError> {
        Ok(self.0.get(name).cloned())
    }

    fn table_exist(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
}

/// The archive opened read-only for one blocking read.
pub(crate) fn read_only(archive: &Path) -> rusqlite::Result<Connection> {
    Connection::open_with_flags(
        archive,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_view_refuses_new_tables() {
        let schema = ReadOnlySchema(BTreeMap::new());
        let table: Arc<dyn TableProvider> =
            Arc::new(datafusion::datasource::empty::EmptyTable::new(Arc::new(
                datafusion::arrow::datatypes::Schema::empty(),
            )));
        assert!(schema.register_table("x".into(), table).is_err());
        assert!(!schema.table_exist("x"));
    }
}
