//! Snapshots and exports: the library calls behind `quarry snapshot`, `quarry export` and `-o`
//! to an object store. Every URL goes through `quarry_providers::store` (a path, `file://`,
//! `s3://`, `memory://`).

use std::path::Path;
use std::sync::Arc;

use datafusion::datasource::file_format::arrow::ArrowFormatFactory;
use datafusion::datasource::file_format::csv::CsvFormatFactory;
use datafusion::datasource::file_format::format_as_file_type;
use datafusion::datasource::file_format::json::JsonFormatFactory;
use datafusion::datasource::file_format::parquet::ParquetFormatFactory;
use datafusion::logical_expr::LogicalPlanBuilder;
use object_store::{ObjectStoreExt, WriteMultipart};
use quarry_providers::snapshot;
use quarry_providers::store;
use serde::Serialize;

pub use quarry_providers::snapshot::{TableReport, WriteReport, WriteSettings, check_codec};
pub use quarry_providers::store::{Location, StoreError, locate};

use crate::api::{Quarry, Session};
use crate::audit::{Language, Outcome};
use crate::engine::source::snapshot_location;
use crate::error::{Error, engine_error};
use crate::format::Format;
use crate::request::Options;

/// Writes or refreshes the snapshot of `options`' archive at `options.snapshot_url` (or the
/// folder beside the archive); `progress` hears of each table as it is done.
pub async fn write_snapshot(
    options: &Options,
    settings: &WriteSettings,
    progress: &(dyn Fn(&TableReport) + Send + Sync),
) -> Result<WriteReport, Error> {
    if !options.archive.exists() {
        return Err(Error::MissingArchive(options.archive.clone()));
    }
    let root = snapshot_location(options)?;
    snapshot::write_snapshot(&options.archive, &root, settings, progress)
        .await
        .map_err(|e| match e {
            snapshot::SnapshotError::Setting(message) => Error::Setting(message),
            other => Error::Snapshot(other.to_string()),
        })
}

/// One table an export wrote.
#[derive(Debug, Clone, Serialize)]
pub struct ExportedTable {
    /// The table.
    pub table: String,
    /// Rows written.
    pub rows: u64,
    /// Where (a file, or a folder of Hive-style partitions).
    pub url: String,
}

/// The file type DataFusion writes for `format`.
fn file_type(
    format: Format,
) -> Result<Arc<dyn datafusion::common::file_options::file_type::FileType>, Error> {
    Ok(match format {
        Format::Parquet => format_as_file_type(Arc::new(ParquetFormatFactory::new())),
        Format::Arrow => format_as_file_type(Arc::new(ArrowFormatFactory::new())),
        Format::Csv => format_as_file_type(Arc::new(CsvFormatFactory::new())),
        Format::Ndjson => format_as_file_type(Arc::new(JsonFormatFactory::new())),
        other => {
            return Err(Error::Setting(format!(
                "export writes parquet, arrow, csv or ndjson, not {}",
                other.name()
            )));
        }
    })
}

/// Writes whole `tables` of `quarry`'s session (every table of the catalog when empty) under
/// `to` in `format`: `<to>/<table>.<ext>`, or with `partition_by` a folder
/// `<to>/<table>/<column>=<value>/...` per table (Hive-style). The rows are read from the
/// session's source (the snapshot when it is fresh).
pub async fn export_tables(
    quarry: &Quarry,
    to: &str,
    tables: &[String],
    format: Format,
    partition_by: Option<&str>,
) -> Result<Vec<ExportedTable>, Error> {
    // Audited like a query: what is read, and where it goes.
    let what = format!(
        "export {} to {to} as {}{}",
        if tables.is_empty() {
            "every table".to_string()
        } else {
            tables.join(",")
        },
        format.name(),
        partition_by
            .map(|c| format!(" partitioned by {c}"))
            .unwrap_or_default()
    );
    let session = quarry.default_session().await?;
    let mut ticket = session.intend(Language::Export, &what)?;
    let exported = write_tables(&session, to, tables, format, partition_by).await;
    let _ = match &exported {
        Ok(written) => ticket.finish(Outcome::Ok {
            rows: written.iter().map(|t| t.rows as usize).sum(),
            truncated: false,
        }),
        Err(e) => ticket.finish(Outcome::Error(&e.message())),
    };
    exported
}

async fn write_tables(
    session: &Session,
    to: &str,
    tables: &[String],
    format: Format,
    partition_by: Option<&str>,
) -> Result<Vec<ExportedTable>, Error> {
    let root = store::locate(to).map_err(|e| Error::Setting(e.to_string()))?;
    let ctx = session.context();
    ctx.register_object_store(&root.store_url, Arc::clone(&root.store));
    // The session's catalog: a reader scope's lacks what it may not see.
    let visible = |name: &str| ctx.table_exist(name).unwrap_or(false);
    let names: Vec<String> = if tables.is_empty() {
        quarry_schema::CATALOG
            .iter()
            .filter(|t| visible(t.name))
            .map(|t| t.name.to_string())
            .collect()
    } else {
        tables.to_vec()
    };
    let extension = format.name();
    // Every name and the partition column are checked before anything is written.
    for name in &names {
        let def = quarry_schema::table(name)
            .filter(|t| t.is_in_catalog() && visible(t.name))
            .ok_or_else(|| {
                Error::Setting(format!(
                    "unknown table {name} (information_schema.tables lists the catalog)"
                ))
            })?;
        if let Some(column) = partition_by
            && !def.columns.iter().any(|c| {
                c.name == column && (session.scope().is_admin() || c.is_visible_to_readers())
            })
        {
            return Err(Error::Setting(format!(
                "--partition-by {column}: {name} has no such column"
            )));
        }
    }
    let mut out = Vec::new();
    for name in &names {
        let url = match partition_by {
            Some(_) => format!("{}/", root.url_of(&root.child(name))),
            None => root.url_of(&root.child(&format!("{name}.{extension}"))),
        };
        let df = ctx.table(name).await.map_err(engine_error)?;
        let plan = LogicalPlanBuilder::copy_to(
            df.logical_plan().clone(),
            url.clone(),
            file_type(format)?,
            Default::default(),
            partition_by
                .map(|c| vec![c.to_string()])
                .unwrap_or_default(),
        )
        .and_then(|b| b.build())
        .map_err(engine_error)?;
        let written = session.collect_plan(plan).await?;
        let rows = written
            .first()
            .and_then(|b| {
                b.column(0)
                    .as_any()
                    .downcast_ref::<datafusion::arrow::array::UInt64Array>()
                    .map(|a| a.value(0))
            })
            .unwrap_or(0);
        out.push(ExportedTable {
            table: name.clone(),
            rows,
            url,
        });
    }
    Ok(out)
}

/// Uploads the local file `file` to `location` (an object store URL naming the object).
pub async fn upload(file: &Path, location: &Location) -> Result<u64, Error> {
    use std::io::Read;
    let write_error = |e: &dyn std::fmt::Display| Error::Write {
        path: location.display.clone(),
        message: e.to_string(),
    };
    let mut reader = std::fs::File::open(file).map_err(|e| write_error(&e))?;
    let upload = location
        .store
        .put_multipart(&location.prefix)
        .await
        .map_err(|e| write_error(&e))?;
    let mut writer = WriteMultipart::new(upload);
    let mut buffer = vec![0u8; 8 * 1024 * 1024];
    let mut total = 0u64;
    loop {
        let n = reader.read(&mut buffer).map_err(|e| write_error(&e))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        writer.write(&buffer[..n]);
    }
    writer.finish().await.map_err(|e| write_error(&e))?;
    Ok(total)
}
