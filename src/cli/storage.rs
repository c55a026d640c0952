//! The verbs that write storage other than standard output: `quarry snapshot`, `quarry export`,
//! and `-o` to an object store URL (staged in a local file, uploaded when complete). They need
//! the engine; a build without it says so.

#[cfg(feature = "engine")]
use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;

use super::{Cli, Failure};
#[cfg(not(feature = "engine"))]
use crate::Error;
#[cfg(feature = "engine")]
use {
    super::{by_class, emit, options},
    crate::block_on,
    crate::format::Format,
};

/// `quarry snapshot`'s flags.
#[derive(Debug, Default, Args)]
pub struct SnapshotArgs {
    /// Keep the snapshot at this URL (a folder, s3://bucket/prefix, ...) instead of the
    /// folder beside the archive; read it with --snapshot-url.
    #[arg(long, value_name = "URL")]
    pub to: Option<String>,
    /// Rewrite every partition.
    #[arg(long)]
    pub full: bool,
    /// Parquet codec: zstd(1) (the default), zstd(LEVEL), zstd, lz4, snappy or none.
    #[arg(long, value_name = "CODEC")]
    pub compression: Option<String>,
    /// Parquet codec of the `text` columns alone (default: as --compression when it is given,
    /// else the default layout's).
    #[arg(long, value_name = "CODEC")]
    pub text_compression: Option<String>,
    /// Rows per Parquet row group.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub row_group_rows: Option<u64>,
    /// Plain-encode Parquet columns instead of dictionary pages (a layout to measure).
    #[arg(long)]
    pub no_dictionary: bool,
    /// parquet (the default), or arrow: uncompressed Arrow IPC files, local folders only
    /// (a layout to measure).
    #[arg(long, value_name = "FORMAT", value_parser = ["parquet", "arrow"])]
    pub file_format: Option<String>,
}

/// `quarry export`'s flags.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Where: a folder, file://, s3://bucket/prefix or memory:// URL.
    #[arg(long, value_name = "URL")]
    pub to: String,
    /// The tables (comma-separated; default every table of the catalog).
    #[arg(long, value_name = "T,...", value_delimiter = ',')]
    pub tables: Vec<String>,
    /// Write each table as Hive-style partition folders of this column.
    #[arg(long, value_name = "COLUMN")]
    pub partition_by: Option<String>,
}

/// `quarry snapshot` (and `ingest --refresh-snapshot`).
#[cfg(feature = "engine")]
pub fn run_snapshot(cli: &Cli, args: SnapshotArgs) -> Result<(), Failure> {
    use quarry_providers::snapshot::{TableReport, WriteSettings};
    let json = cli.format() == Format::Json;
    let mut options = options(cli)?;
    if !options.scope.is_admin() {
        return Err(Failure::usage(
            "`quarry snapshot` copies the whole archive: it is only for the admin scope (a reader exports what it sees with `quarry export`)",
        ));
    }
    if args.to.is_some() {
        options.snapshot_url = args.to;
    }
    let defaults = WriteSettings::default();
    // Text follows a codec given alone; the default layout's text codec goes with its own.
    let text_compression = match (&args.compression, args.text_compression) {
        (_, Some(text)) => Some(text),
        (Some(_), None) => None,
        (None, None) => defaults.text_compression,
    };
    let compression = args.compression.unwrap_or(defaults.compression);
    let settings = WriteSettings {
        text_compression: text_compression.filter(|text| *text != compression),
        compression,
        row_group_rows: args
            .row_group_rows
            .map_or(defaults.row_group_rows, |n| n as usize),
        dictionary: !args.no_dictionary,
        file_format: args.file_format.unwrap_or(defaults.file_format),
        full: args.full,
    };
    let started = std::time::Instant::now();
    let show = !json && std::io::stderr().is_terminal();
    let progress = move |t: &TableReport| {
        if show {
            eprintln!(
                "  {:<18} {:>12} rows  {} partitions written, {} kept",
                t.table, t.rows, t.partitions_written, t.partitions_kept
            );
        }
    };
    let report = block_on(crate::export::write_snapshot(
        &options, &settings, &progress,
    ))
    .and_then(|r| r)
    .map_err(by_class)?;
    if json {
        emit(&format!(
            "{}\n",
            serde_json::to_value(&report).unwrap_or_default()
        ));
    } else if report.unchanged {
        emit(&format!(
            "snapshot at {} is up to date (generation {})\n",
            report.location, report.generation
        ));
    } else {
        let written: u64 = report.tables.iter().map(|t| t.rows_written).sum();
        let parts: usize = report.tables.iter().map(|t| t.partitions_written).sum();
        let kept: usize = report.tables.iter().map(|t| t.partitions_kept).sum();
        emit(&format!(
            "snapshot at {} now as of generation {}{}: {} rows in {} partition files written, {} kept, {} old files removed; {:.1} MB in all ({:.1} s)\n",
            report.location,
            report.generation,
            match (report.full, report.previous_generation) {
                (false, Some(g)) => format!(" (refreshed from {g})"),
                _ => " (written whole)".to_string(),
            },
            written,
            parts,
            kept,
            report.files_removed,
            report.bytes as f64 / 1e6,
            started.elapsed().as_secs_f64()
        ));
    }
    Ok(())
}

/// `quarry export --to URL`.
#[cfg(feature = "engine")]
pub fn run_export(cli: &Cli, args: ExportArgs) -> Result<(), Failure> {
    let format = cli.format.unwrap_or(Format::Parquet);
    let quarry = crate::Quarry::open(&options(cli)?).map_err(Failure::runtime)?;
    let written = block_on(crate::export::export_tables(
        &quarry,
        &args.to,
        &args.tables,
        format,
        args.partition_by.as_deref(),
    ))
    .and_then(|r| r)
    .map_err(by_class)?;
    let mut out = String::new();
    for t in &written {
        out.push_str(&format!(
            "wrote {} rows of {} ({}) to {}\n",
            t.rows,
            t.table,
            format.name(),
            t.url
        ));
    }
    out.push_str(&format!("read from: {}\n", quarry.source().name()));
    emit(&out);
    Ok(())
}

/// `quarry snapshot` without the engine.
#[cfg(not(feature = "engine"))]
pub fn run_snapshot(_cli: &Cli, _args: SnapshotArgs) -> Result<(), Failure> {
    Err(Failure::runtime(Error::EngineUnavailable))
}

/// `quarry export` without the engine.
#[cfg(not(feature = "engine"))]
pub fn run_export(_cli: &Cli, _args: ExportArgs) -> Result<(), Failure> {
    Err(Failure::runtime(Error::EngineUnavailable))
}

/// An `-o` target on an object store: the answer is written to a local staging file, then
/// uploaded whole. (A build without the engine never makes one.)
#[cfg_attr(not(feature = "engine"), allow(dead_code))]
pub struct RemoteOutput {
    #[cfg(feature = "engine")]
    location: quarry_providers::store::Location,
    staging: tempfile::TempDir,
    name: String,
}

#[cfg_attr(not(feature = "engine"), allow(dead_code))]
impl RemoteOutput {
    /// The remote output `target` names, or `None` for a local path or `file://` URL.
    pub fn for_target(target: &str) -> Result<Option<Self>, Failure> {
        if !target.contains("://") || target.starts_with("file://") {
            return Ok(None);
        }
        #[cfg(feature = "engine")]
        {
            let location = quarry_providers::store::locate(target).map_err(Failure::usage)?;
            let name = location.prefix.filename().unwrap_or("answer").to_string();
            Ok(Some(RemoteOutput {
                location,
                staging: tempfile::tempdir().map_err(Failure::runtime)?,
                name,
            }))
        }
        #[cfg(not(feature = "engine"))]
        Err(Failure::runtime(Error::EngineUnavailable))
    }

    /// The local file the answer is written to first (its name is the target's, so the
    /// extension still chooses the format).
    pub fn staged(&self) -> PathBuf {
        self.staging.path().join(&self.name)
    }

    /// Uploads the staged file; returns the target's URL.
    pub fn upload(&self) -> Result<String, Failure> {
        #[cfg(feature = "engine")]
        {
            block_on(crate::export::upload(&self.staged(), &self.location))
                .and_then(|r| r)
                .map_err(Failure::runtime)?;
            Ok(self.location.display.clone())
        }
        #[cfg(not(feature = "engine"))]
        Err(Failure::runtime(Error::EngineUnavailable))
    }
}
