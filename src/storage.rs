//! The verbs that write storage other than standard output: `quarry snapshot`, `quarry export`,
//! and `-o` to an object store URL (staged in a local file, uploaded when complete).

use std::io::IsTerminal;
use std::path::PathBuf;

use quarry::block_on;
use quarry::export::{Location, TableReport, WriteSettings, locate};
use quarry::format::Format;

use crate::flags::{Cli, ExportArgs, SnapshotArgs};
use crate::{Failure, by_class, emit, options};

/// Refreshes the snapshot in place (its changed partitions, default settings) and says what it
/// did in one line (`quarry watch --snapshot-every`).
pub fn refresh_quietly(cli: &Cli) -> Result<String, Failure> {
    let options = options(cli)?;
    let started = std::time::Instant::now();
    let report = block_on(quarry::export::write_snapshot(
        &options,
        &WriteSettings::default(),
        &|_| {},
    ))
    .and_then(|r| r)
    .map_err(by_class)?;
    let parts: usize = report.tables.iter().map(|t| t.partitions_written).sum();
    Ok(if report.unchanged {
        format!("up to date (generation {})", report.generation)
    } else {
        format!(
            "now as of generation {} ({parts} partition files written, {:.1} s)",
            report.generation,
            started.elapsed().as_secs_f64()
        )
    })
}

/// `quarry snapshot` (and `ingest --refresh-snapshot`).
pub fn run_snapshot(cli: &Cli, args: SnapshotArgs) -> Result<(), Failure> {
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
    let report = block_on(quarry::export::write_snapshot(
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
pub fn run_export(cli: &Cli, args: ExportArgs) -> Result<(), Failure> {
    let format = cli.format.unwrap_or(Format::Parquet);
    let quarry = quarry::Quarry::open(&options(cli)?).map_err(Failure::runtime)?;
    let written = block_on(quarry::export::export_tables(
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

/// An `-o` target on an object store: the answer is written to a local staging file, then
/// uploaded whole.
pub struct RemoteOutput {
    location: Location,
    staging: tempfile::TempDir,
    name: String,
}

impl RemoteOutput {
    /// The remote output `target` names, or `None` for a local path or `file://` URL.
    pub fn for_target(target: &str) -> Result<Option<Self>, Failure> {
        if !target.contains("://") || target.starts_with("file://") {
            return Ok(None);
        }
        let location = locate(target).map_err(Failure::usage)?;
        let name = location.prefix.filename().unwrap_or("answer").to_string();
        Ok(Some(RemoteOutput {
            location,
            staging: tempfile::tempdir().map_err(Failure::runtime)?,
            name,
        }))
    }

    /// The local file the answer is written to first (its name is the target's, so the
    /// extension still chooses the format).
    pub fn staged(&self) -> PathBuf {
        self.staging.path().join(&self.name)
    }

    /// Uploads the staged file; returns the target's URL.
    pub fn upload(&self) -> Result<String, Failure> {
        block_on(quarry::export::upload(&self.staged(), &self.location))
            .and_then(|r| r)
            .map_err(Failure::runtime)?;
        Ok(self.location.display.clone())
    }
}
