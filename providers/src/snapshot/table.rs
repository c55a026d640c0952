//! `SnapshotTable`: the `TableProvider` of one table of a snapshot — DataFusion's Parquet scan
//! over exactly the files the manifest names (projection, row-group and page pruning by the
//! pushed-down filters, files split across the session's partitions). A full-text match on
//! `blocks` is answered by the archive's FTS5 index: a scan carrying one is the archive's own
//! scan of `blocks`, so both sources give the same rows.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, new_empty_array};
use datafusion::arrow::compute::{concat, filter, is_not_null};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::{Result, Statistics};
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::arrow::ArrowFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::metadata::DFParquetMetadata;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::empty::EmptyExec;
use object_store::ObjectMeta;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;

use super::manifest::TableFiles;
use crate::sqlite::{FTS_FUNCTION, SqliteTable, arrow_schema};
use crate::store::Location;

/// The provider of one table of a snapshot.
#[derive(Debug)]
pub struct SnapshotTable {
    schema: SchemaRef,
    store_url: ObjectStoreUrl,
    /// (path inside the store, bytes), in partition order.
    files: Vec<(String, u64)>,
    rows: u64,
    /// Arrow IPC files rather than Parquet.
    arrow: bool,
    is_view: bool,
    /// The archive's own provider of the table, for full-text matches.
    fulltext: Option<Arc<SqliteTable>>,
}

impl SnapshotTable {
    /// The provider of `def` over `files` under `root`; `fulltext` answers full-text matches.
    pub fn new(
        def: &quarry_schema::Table,
        root: &Location,
        files: &TableFiles,
        fulltext: Option<Arc<SqliteTable>>,
    ) -> Result<Self> {
        Self::with_format(def, root, files, fulltext, false)
    }

    /// [`SnapshotTable::new`] over Arrow IPC files when `arrow`.
    pub fn with_format(
        def: &quarry_schema::Table,
        root: &Location,
        files: &TableFiles,
        fulltext: Option<Arc<SqliteTable>>,
        arrow: bool,
    ) -> Result<Self> {
        let store_url = ObjectStoreUrl::parse(root.store_url.as_str())?;
        Ok(SnapshotTable {
            schema: arrow_schema(def),
            store_url,
            files: files
                .partitions
                .values()
                .flat_map(|p| p.files.iter())
                .map(|f| (root.child(&f.path).to_string(), f.bytes))
                .collect(),
            rows: files.rows,
            arrow,
            is_view: def.kind == quarry_schema::TableKind::View,
            fulltext,
        })
    }
}

impl SnapshotTable {
    /// Each row group's largest (`largest`) or smallest value of `column`, across every file of
    /// the table, as its Parquet statistics record it; row groups without one are left out.
    /// Empty for an Arrow IPC snapshot (no statistics) or a column the files lack. The values
    /// have the column's Arrow type. Only footers are read, never data pages.
    pub async fn row_group_extremes(
        &self,
        state: &dyn Session,
        column: &str,
        largest: bool,
    ) -> Result<ArrayRef> {
        let Ok(field) = self.schema.field_with_name(column) else {
            return Ok(new_empty_array(&DataType::Null));
        };
        if self.arrow {
            return Ok(new_empty_array(field.data_type()));
        }
        let store = state.runtime_env().object_store(&self.store_url)?;
        let cache = state.runtime_env().cache_manager.get_file_metadata_cache();
        let mut parts: Vec<ArrayRef> = Vec::with_capacity(self.files.len());
        for (path, bytes) in &self.files {
            let meta = ObjectMeta {
                location: path.as_str().into(),
                // As the scan's `PartitionedFile::new` has it, so the scan finds the footer in
                // the session's metadata cache instead of reading it again.
                last_modified: Default::default(),
                size: *bytes,
                e_tag: None,
                version: None,
            };
            let metadata = DFParquetMetadata::new(store.as_ref(), &meta)
                .with_file_metadata_cache(Some(cache.clone()))
                .fetch_metadata()
                .await?;
            let converter = StatisticsConverter::try_new(
                column,
                &self.schema,
                metadata.file_metadata().schema_descr(),
            )?;
            let row_groups = metadata.row_groups().iter();
            parts.push(if largest {
                converter.row_group_maxes(row_groups)?
            } else {
                converter.row_group_mins(row_groups)?
            });
        }
        let parts: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
        let all = match parts.is_empty() {
            true => new_empty_array(field.data_type()),
            false => concat(&parts)?,
        };
        Ok(filter(&all, &is_not_null(&all)?)?)
    }
}

fn is_fulltext(expr: &Expr) -> bool {
    matches!(expr, Expr::ScalarFunction(f) if f.name() == FTS_FUNCTION)
}

#[async_trait]
impl TableProvider for SnapshotTable {
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
        // Parquet pruning skips row groups and pages, not rows: every other filter stays in the
        // plan above the scan.
        Ok(filters
            .iter()
            .map(|f| {
                if self.fulltext.is_some() && is_fulltext(f) {
                    TableProviderFilterPushDown::Exact
                } else {
                    TableProviderFilterPushDown::Inexact
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if let Some(archive) = &self.fulltext
            && filters.iter().any(is_fulltext)
        {
            return archive.scan(state, projection, filters, limit).await;
        }
        if self.files.is_empty() {
            let schema = match projection {
                Some(p) => Arc::new(self.schema.project(p)?),
                None => Arc::clone(&self.schema),
            };
            return Ok(Arc::new(EmptyExec::new(schema)));
        }
        let format: Arc<dyn FileFormat> = if self.arrow {
            Arc::new(ArrowFormat)
        } else {
            Arc::new(ParquetFormat::default().with_options(state.default_table_options().parquet))
        };
        let source = format.file_source(Arc::clone(&self.schema).into());
        // Files spread over the session's partitions by size, largest first.
        let groups = state
            .config()
            .target_partitions()
            .max(1)
            .min(self.files.len());
        let mut sized: Vec<&(String, u64)> = self.files.iter().collect();
        sized.sort_by_key(|f| std::cmp::Reverse(f.1));
        let mut buckets: Vec<(u64, Vec<PartitionedFile>)> =
            (0..groups).map(|_| (0, Vec::new())).collect();
        for (path, bytes) in sized {
            if let Some(bucket) = buckets.iter_mut().min_by_key(|b| b.0) {
                bucket.0 += bytes;
                bucket.1.push(PartitionedFile::new(path.clone(), *bytes));
            }
        }
        let statistics = Statistics::new_unknown(&self.schema)
            .with_num_rows(Precision::Inexact(self.rows as usize));
        let config = FileScanConfigBuilder::new(self.store_url.clone(), source)
            .with_file_groups(
                buckets
                    .into_iter()
                    .map(|(_, f)| FileGroup::new(f))
                    .collect(),
            )
            .with_statistics(statistics)
            .with_projection_indices(projection.cloned())?
            .with_limit(limit)
            .build();
        format.create_physical_plan(state, config).await
    }
}
