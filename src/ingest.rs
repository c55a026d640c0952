//! The verbs that write transcripts into the archive: `quarry ingest` (with a progress bar drawn
//! here from the ingest's progress reports) and `quarry reindex`.

use std::io::IsTerminal;

use quarry::Format;
use quarry_archive::location::{host_name, os_user};
use quarry_ingest::{IngestError, IngestOptions, Progress, ingest_reporting, reindex};

use crate::flags::{Cli, IngestArgs, SnapshotArgs};
use crate::{Failure, emit, open_archive, storage};

/// `quarry ingest [PATH...]`.
pub fn run_ingest(cli: &Cli, args: IngestArgs) -> Result<(), Failure> {
    let json = cli.format() == Format::Json;
    let mut archive = open_archive(cli.archive.clone())?;
    let options = IngestOptions {
        paths: args.paths,
        owner: args.owner.or_else(os_user),
        machine: args.machine.or_else(host_name),
        replace: args.replace,
        quick_check: false,
    };
    let bar = ProgressBar::new(!args.no_progress && !json);
    let summary =
        ingest_reporting(&mut archive, &options, &mut |p| bar.show(p)).map_err(|e| match e {
            IngestError::MissingPath(_) | IngestError::NothingToDiscover => Failure::usage(e),
            other => Failure::runtime(other),
        })?;
    drop(bar);
    if json {
        emit(&format!("{}\n", summary.to_json()));
    } else {
        emit(&summary.to_human());
    }
    drop(archive);
    if args.refresh_snapshot {
        storage::run_snapshot(cli, SnapshotArgs::default())?;
    }
    Ok(())
}

/// `quarry reindex`.
pub fn run_reindex(cli: &Cli) -> Result<(), Failure> {
    let archive = open_archive(cli.archive.clone())?;
    let summary = reindex(archive.conn()).map_err(Failure::runtime)?;
    if cli.format() == Format::Json {
        emit(&format!(
            "{}\n",
            serde_json::to_value(&summary).unwrap_or_default()
        ));
    } else {
        emit(&summary.to_human());
    }
    Ok(())
}

/// The ingest's progress as a bar on standard error (drawn only on a terminal, and only when
/// asked for).
struct ProgressBar(indicatif::ProgressBar);

impl ProgressBar {
    fn new(enabled: bool) -> Self {
        if !enabled || !std::io::stderr().is_terminal() {
            return ProgressBar(indicatif::ProgressBar::hidden());
        }
        let bar = indicatif::ProgressBar::new(0);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} {msg}",
        ) {
            bar.set_style(style);
        }
        ProgressBar(bar)
    }

    fn show(&self, p: Progress) {
        self.0.set_length(p.bytes_total);
        self.0.set_position(p.bytes_done);
        self.0.set_message(format!(
            "{}/{} files, {} records",
            p.files_done, p.files_total, p.records
        ));
    }
}

impl Drop for ProgressBar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
