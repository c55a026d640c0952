//! The verbs that write transcripts into the archive: `quarry ingest` (with a progress bar drawn
//! here from the ingest's progress reports), `quarry watch` (a log line per batch) and
//! `quarry reindex`.

use std::io::IsTerminal;

use quarry::Format;
use quarry_archive::location::{host_name, os_user};
use quarry_ingest::{IngestError, IngestOptions, Progress, ingest_reporting, reindex};

use crate::flags::{Cli, IngestArgs, ReadAs, SnapshotArgs, WatchArgs};
use crate::{Failure, emit, open_archive, storage};

/// What to read, as whom and where (the owner and machine defaulting to the OS user and host).
fn read_options(paths: Vec<std::path::PathBuf>, read_as: ReadAs) -> IngestOptions {
    IngestOptions {
        paths,
        owner: read_as.owner.or_else(os_user),
        machine: read_as.machine.or_else(host_name),
        ..IngestOptions::default()
    }
}

/// `quarry ingest [PATH...]`.
pub fn run_ingest(cli: &Cli, args: IngestArgs) -> Result<(), Failure> {
    let json = cli.format() == Format::Json;
    let mut archive = open_archive(cli.archive.clone())?;
    let options = IngestOptions {
        replace: args.replace,
        verify: args.verify,
        ..read_options(args.paths, args.read_as)
    };
    let bar = ProgressBar::new(!args.no_progress && !args.progress_lines && !json);
    let mut lines = args.progress_lines.then(ProgressLines::new);
    let summary = ingest_reporting(&mut archive, &options, &mut |p| {
        bar.show(p);
        if let Some(lines) = &mut lines {
            lines.show(p);
        }
    })
    .map_err(|e| match e {
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

/// `quarry watch [PATH...]`: runs until stopped; each batch that changed something (and every
/// failure) is a line on standard error.
pub fn run_watch(cli: &Cli, args: WatchArgs) -> Result<(), Failure> {
    let mut archive = open_archive(cli.archive.clone())?;
    let options = quarry_ingest::watch::WatchOptions {
        ingest: read_options(args.paths, args.read_as),
        settle: args.settle,
        rescan: args.rescan,
        poll: args.poll,
        verify_every: args.verify_every,
    };
    // When the snapshot was last refreshed, and whether the archive changed since.
    let mut refreshed = std::time::Instant::now();
    let mut changed = false;
    quarry_ingest::watch::watch(
        &mut archive,
        &options,
        &mut |source, roots| eprintln!("{}", watch_start(source, roots, args.rescan)),
        &mut |batch| {
            if let Some(line) = batch_line(batch) {
                eprintln!("{line}");
            }
            changed |= batch
                .outcome
                .as_ref()
                .is_ok_and(|s| s.generation_after != s.generation_before);
            if let Some(every) = args.snapshot_every
                && changed
                && refreshed.elapsed() >= every
            {
                match storage::refresh_quietly(cli) {
                    Ok(line) => eprintln!("{} watch snapshot: {line}", now()),
                    Err(e) => eprintln!(
                        "{} watch snapshot: failed: {}; watching on",
                        now(),
                        e.message
                    ),
                }
                refreshed = std::time::Instant::now();
                changed = false;
            }
            true
        },
    )
    .map_err(Failure::usage)
}

/// The line a watch starts with: what it watches and how.
pub(crate) fn watch_start(
    source: quarry_ingest::watch::Source,
    roots: &[std::path::PathBuf],
    rescan: std::time::Duration,
) -> String {
    let how = match source {
        quarry_ingest::watch::Source::Notifications => {
            format!("file notifications, every file again each {rescan:?}")
        }
        quarry_ingest::watch::Source::Polling => {
            format!("every file each {rescan:?} (no notifications)")
        }
    };
    let roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    format!("{} watch: {} by {how}", now(), roots.join(", "))
}

/// A batch's log line: what it read and wrote, or why it failed; `None` when it changed nothing.
pub(crate) fn batch_line(batch: &quarry_ingest::watch::Batch) -> Option<String> {
    let s = match &batch.outcome {
        Err(e) => {
            return Some(format!(
                "{} watch {}: failed: {e}; watching on",
                now(),
                batch.trigger.name()
            ));
        }
        Ok(s) => s,
    };
    let changed = s.files_new + s.files_changed;
    if changed == 0
        && s.diagnostics.is_empty()
        && batch.trigger != quarry_ingest::watch::Trigger::Start
    {
        return None;
    }
    let mut line = format!(
        "{} watch {}: {} new and {} grown files ({} read from where they were left), {} records, generation {} -> {} ({} ms{})",
        now(),
        batch.trigger.name(),
        s.files_new,
        s.files_changed,
        s.files_continued,
        s.records,
        s.generation_before,
        s.generation_after,
        batch.took.as_millis(),
        batch
            .wal_bytes
            .map(|b| format!(", WAL {:.1} MB", b as f64 / 1e6))
            .unwrap_or_default()
    );
    for d in s.diagnostics.iter().take(3) {
        line.push_str(&format!("\n  {}: {} — {}", d.file, d.kind, d.reason));
    }
    if s.diagnostics.len() > 3 {
        line.push_str(&format!(
            "\n  … and {} more diagnostics",
            s.diagnostics.len() - 3
        ));
    }
    Some(line)
}

fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
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

/// The ingest's progress as JSON lines on standard error, one at most every 200 ms and one for
/// the last file (`--progress-lines`).
struct ProgressLines {
    started: std::time::Instant,
    last: Option<std::time::Instant>,
}

impl ProgressLines {
    fn new() -> Self {
        ProgressLines {
            started: std::time::Instant::now(),
            last: None,
        }
    }

    fn show(&mut self, p: Progress) {
        let now = std::time::Instant::now();
        let due = self
            .last
            .is_none_or(|t| now.duration_since(t).as_millis() >= 200);
        if !due && p.files_done < p.files_total {
            return;
        }
        self.last = Some(now);
        eprintln!(
            "{}",
            serde_json::json!({
                "elapsed_ms": now.duration_since(self.started).as_millis() as u64,
                "files_done": p.files_done,
                "files_total": p.files_total,
                "bytes_done": p.bytes_done,
                "bytes_total": p.bytes_total,
                "records": p.records,
            })
        );
    }
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
