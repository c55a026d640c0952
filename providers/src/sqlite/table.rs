//! `SqliteTable`: the `TableProvider` of one archive table, and `register_archive`, which
//! registers every table of the catalog in a `SessionContext`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::pushdown::{classify, support};
use super::scan::{ScanSpec, SqliteScanExec};
use super::schema::arrow_schema;

/// Rows per partition below which a table is scanned by one partition.
const ROWS_PER_PARTITION: i64 = 65_536;

/// The provider of one table (or view) of the archive.
#[derive(Debug)]
pub struct SqliteTable {
    path: PathBuf,
    name: String,
    schema: SchemaRef,
    is_view: bool,
}

impl SqliteTable {
    /// The provider of `name` (a table or view of the catalog, as `quarry_schema` declares it)
    /// in the archive at `path`.
    pub fn open(path: &Path, name: &str) -> Result<Self> {
        let def = quarry_schema::table(name)
            .filter(|t| t.is_in_catalog())
            .ok_or_else(|| DataFusionError::Plan(format!("no table {name} in the catalog")))?;
        let conn = read_only(path)?;
        let kind: Option<String> = conn
            .query_row(
                "SELECT type FROM sqlite_schema WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()
            .map_err(external)?;
        if kind.is_none() {
            return Err(DataFusionError::Plan(format!(
                "the archive has no table {name}"
            )));
        }
        Ok(SqliteTable {
            path: path.to_path_buf(),
            name: def.name.to_string(),
            schema: arrow_schema(def),
            is_view: def.kind == quarry_schema::TableKind::View,
        })
    }

    /// Rowid ranges splitting the table for `partitions` scanners.
    fn ranges(&self, partitions: usize) -> Result<Vec<Option<(i64, i64)>>> {
        if self.is_view || partitions <= 1 {
            return Ok(vec![None]);
        }
        let conn = read_only(&self.path)?;
        let bounds: (Option<i64>, Option<i64>) = conn
            .query_row(
                &format!("SELECT MIN(rowid), MAX(rowid) FROM \"{}\"", self.name),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(external)?;
        let (Some(low), Some(high)) = bounds else {
            return Ok(vec![None]);
        };
        let span = high - low + 1;
        let wanted = (span / ROWS_PER_PARTITION).clamp(1, partitions as i64);
        if wanted <= 1 {
            return Ok(vec![None]);
        }
        let step = (span + wanted - 1) / wanted;
        Ok((0..wanted)
            .map(|i| {
                let start = low + i * step;
                Some((start, (start + step - 1).min(high)))
            })
            .collect())
    }
}

fn external(e: rusqlite::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

fn read_only(path: &Path) -> Result<Connection> {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(external)
}

#[async_trait]
impl TableProvider for SqliteTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        if self.is_view {
            TableType::View
        } else {
            TableType::Base
        }
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| support(f, &self.name, &self.schema))
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = match projection {
            Some(p) => Arc::new(self.schema.project(p)?),
            None => Arc::clone(&self.schema),
        };
        let mut conditions = Vec::new();
        let mut params = Vec::new();
        for filter in filters {
            if let Some(p) = classify(filter, &self.name, &self.schema) {
                conditions.push(p.sql);
                params.extend(p.params);
            }
        }
        let ranges = if limit.is_some() {
            vec![None]
        } else {
            self.ranges(state.config().target_partitions())?
        };
        Ok(Arc::new(SqliteScanExec::new(ScanSpec {
            path: self.path.clone(),
            table: self.name.clone(),
            schema,
            filter: (!conditions.is_empty()).then(|| conditions.join(" AND ")),
            params,
            limit,
            ranges,
        })))
    }
}

/// The provider of every table of the catalog (`quarry_schema::CATALOG`) of the archive at
/// `path`, by SQL name, in the catalog's order.
pub fn archive_tables(path: &Path) -> Result<Vec<(&'static str, Arc<dyn TableProvider>)>> {
    quarry_schema::CATALOG
        .iter()
        .map(|def| {
            let table: Arc<dyn TableProvider> = Arc::new(SqliteTable::open(path, def.name)?);
            Ok((def.name, table))
        })
        .collect()
}

/// Registers every table of the catalog (`quarry_schema::CATALOG`) of the archive at `path` in
/// `ctx` under its SQL name.
pub fn register_archive(ctx: &SessionContext, path: &Path) -> Result<()> {
    for (name, table) in archive_tables(path)? {
        ctx.register_table(name, table)?;
    }
    Ok(())
}
