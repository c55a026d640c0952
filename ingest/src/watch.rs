//! Keeping the archive up with agents that are writing now (`quarry watch`, `quarry serve
//! --watch`): the transcript folders are watched through the operating system's file
//! notifications (inotify, FSEvents, ReadDirectoryChangesW through the `notify` crate), and a
//! file that was created or written is ingested once its writes settle. Every `rescan` the
//! folders are also read again with the quick check (a file whose size and time are as archived
//! is not opened), which catches what a notification missed; where notifications are not
//! available (or with `poll`) that rescan is the only source.
//!
//! Each batch is an ordinary ingest: one transaction per file, so a watcher killed at any moment
//! leaves the archive as it was after its last committed file, and the next start catches up.
//! What becomes visible is what the archive's rules say: the rows of committed turns (the
//! `events` view) and every session, message and response read so far.
//!
//! A file that grew is read from where it was left (`tail`): its archived prefix's last chunks
//! are checked, the appended lines read, and its session derived again from the last cut.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use notify::{EventKind, RecursiveMode, Watcher};
use quarry_archive::Archive;

use crate::discover::{default_roots, is_transcript_name};
use crate::{IngestError, IngestOptions, Summary, ingest};

/// The longest a written file waits for its writes to settle: an agent writing without pause
/// is still read at least this often.
const LONGEST_WAIT: Duration = Duration::from_secs(1);

/// The write-ahead log is truncated back to this after a checkpoint that empties it, and a
/// batch that leaves it larger asks for a checkpoint that waits for readers.
const WAL_LIMIT: u64 = 64 * 1024 * 1024;

/// How to watch.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// What to ingest (`paths` empty: the default transcript locations), who owns it, and on
    /// which machine; `quick_check` and `replace` are decided per batch.
    pub ingest: IngestOptions,
    /// How long a changed file must stay quiet before it is read (its writer is mid-record).
    pub settle: Duration,
    /// How often every watched file is looked at again (the quick check), in case a
    /// notification was missed; with `poll`, the interval of the only look.
    pub rescan: Duration,
    /// Use no notifications: look at every file each `rescan`.
    pub poll: bool,
    /// How often every watched file is read whole and compared with its archived hash (the
    /// rescans only check the last chunks of a grown file; see `chunks`).
    pub verify_every: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            ingest: IngestOptions::default(),
            settle: Duration::from_millis(200),
            rescan: Duration::from_secs(60),
            poll: false,
            verify_every: Duration::from_secs(24 * 3600),
        }
    }
}

/// Why a batch ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The first look, when the watch starts (catching up with what changed while it was off).
    Start,
    /// Files the operating system said were written.
    Notified,
    /// The periodic look at every file.
    Rescan,
    /// The periodic full verification: every file read whole.
    Verify,
}

impl Trigger {
    /// Its name in a log line.
    pub fn name(self) -> &'static str {
        match self {
            Trigger::Start => "start",
            Trigger::Notified => "notified",
            Trigger::Rescan => "rescan",
            Trigger::Verify => "verify",
        }
    }
}

/// One batch the watcher ran: why, how many files it was given, how long it took, and the
/// ingest's summary (or why it failed; the watch goes on).
#[derive(Debug)]
pub struct Batch {
    /// Why it ran.
    pub trigger: Trigger,
    /// Files named by the notifications (a rescan or the start: the watched folders).
    pub files: usize,
    /// How long the ingest took.
    pub took: Duration,
    /// What the ingest did.
    pub outcome: Result<Summary, IngestError>,
    /// The archive's write-ahead log after the batch and its checkpoint, in bytes.
    pub wal_bytes: Option<u64>,
}

/// How the watch is fed: the operating system's notifications, or polling only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// File notifications, with a periodic rescan.
    Notifications,
    /// A look at every file each rescan interval.
    Polling,
}

/// Failures that stop a watch before it starts.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// No path given and no default transcript folder exists.
    #[error(
        "nothing to watch: none of {} exists; pass a path",
        crate::discover::DEFAULT_LOCATIONS
    )]
    NothingToWatch,
    /// A path given does not exist.
    #[error("no such file or folder: {0}")]
    MissingPath(PathBuf),
}

/// Watches until `on_batch` returns `false`, calling it after every batch (the first one is
/// the catch-up at the start) and once with the source chosen (`on_start`).
pub fn watch(
    archive: &mut Archive,
    options: &WatchOptions,
    on_start: &mut dyn FnMut(Source, &[PathBuf]),
    on_batch: &mut dyn FnMut(&Batch) -> bool,
) -> Result<(), WatchError> {
    let roots = if options.ingest.paths.is_empty() {
        let roots = default_roots();
        if roots.is_empty() {
            return Err(WatchError::NothingToWatch);
        }
        roots
    } else {
        if let Some(missing) = options.ingest.paths.iter().find(|p| !p.exists()) {
            return Err(WatchError::MissingPath(missing.clone()));
        }
        options.ingest.paths.clone()
    };
    // Notifications first, so nothing written during the catch-up is missed.
    let (sender, events) = mpsc::channel::<notify::Result<notify::Event>>();
    let watcher = if options.poll {
        None
    } else {
        notify::recommended_watcher(sender)
            .and_then(|mut w| {
                for root in &roots {
                    match root.parent().filter(|_| root.is_file()) {
                        // A database, whose commits land in `<database>-wal` beside it.
                        Some(folder) => w.watch(folder, RecursiveMode::NonRecursive)?,
                        None => w.watch(root, RecursiveMode::Recursive)?,
                    }
                }
                Ok(w)
            })
            .ok()
    };
    let source = if watcher.is_some() {
        Source::Notifications
    } else {
        Source::Polling
    };
    on_start(source, &roots);
    let _ = archive
        .conn()
        .pragma_update(None, "journal_size_limit", WAL_LIMIT as i64);
    let wal = {
        let mut name = archive.path().as_os_str().to_owned();
        name.push("-wal");
        PathBuf::from(name)
    };
    let run = |archive: &mut Archive, trigger: Trigger, paths: Vec<PathBuf>| {
        let files = paths.len();
        let options = IngestOptions {
            paths,
            quick_check: matches!(trigger, Trigger::Start | Trigger::Rescan),
            verify: trigger == Trigger::Verify,
            ..options.ingest.clone()
        };
        let started = Instant::now();
        let outcome = ingest(archive, &options);
        let took = started.elapsed();
        Batch {
            trigger,
            files,
            took,
            outcome,
            wal_bytes: checkpoint(archive, &wal),
        }
    };
    if !on_batch(&run(archive, Trigger::Start, roots.clone())) {
        return Ok(());
    }
    let mut next_rescan = Instant::now() + options.rescan;
    let mut next_verify = Instant::now() + options.verify_every;
    let mut pending: BTreeSet<PathBuf> = BTreeSet::new();
    // When the oldest pending change came.
    let mut since: Option<Instant> = None;
    loop {
        // Wait for a notification, for the pending files to settle (never longer than
        // LONGEST_WAIT after the first change), or for the rescan.
        let wait = match since {
            None => next_rescan.saturating_duration_since(Instant::now()),
            Some(first) => options
                .settle
                .min(LONGEST_WAIT.saturating_sub(first.elapsed())),
        };
        let event = if watcher.is_some() {
            events.recv_timeout(wait)
        } else {
            std::thread::sleep(wait);
            Err(mpsc::RecvTimeoutError::Timeout)
        };
        match event {
            Ok(Ok(event)) => {
                if matches!(event.kind, EventKind::Create(_) | EventKind::Modify(_)) {
                    pending.extend(event.paths.into_iter().filter_map(|p| changed(&p, &roots)));
                }
                if !pending.is_empty() {
                    since.get_or_insert_with(Instant::now);
                }
                if since.is_none_or(|first| first.elapsed() < LONGEST_WAIT) {
                    continue;
                }
            }
            // A notification error (an overflowed queue, say): the rescan catches up.
            Ok(Err(_)) => {
                next_rescan = Instant::now();
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                next_rescan = Instant::now();
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if !pending.is_empty() {
            // Quiet for `settle`, or waiting since LONGEST_WAIT: read what was written (a file
            // removed since is not asked for).
            since = None;
            let files: Vec<PathBuf> = std::mem::take(&mut pending)
                .into_iter()
                .filter(|p| p.is_file())
                .collect();
            if !files.is_empty() && !on_batch(&run(archive, Trigger::Notified, files)) {
                return Ok(());
            }
        }
        if Instant::now() >= next_rescan {
            let trigger = if Instant::now() >= next_verify {
                next_verify = Instant::now() + options.verify_every;
                Trigger::Verify
            } else {
                Trigger::Rescan
            };
            if !on_batch(&run(archive, trigger, roots.clone())) {
                return Ok(());
            }
            next_rescan = Instant::now() + options.rescan;
        }
    }
}

/// What a notified change asks to read: a transcript under a watched folder (or the OpenCode
/// store of JSON files it is part of), or a database
/// given or found (a root file, or an agent's database by name) when it or its `-wal` changed.
/// Other files beside a database (its folder is watched for the log) are not read.
fn changed(path: &Path, roots: &[PathBuf]) -> Option<PathBuf> {
    if is_transcript_name(path) && roots.iter().any(|r| r.is_dir() && path.starts_with(r)) {
        // A file of OpenCode's JSON store asks for the store, read a session at a time; a file
        // of a Cline-family task folder for the folder.
        let task = path
            .parent()
            .filter(|d| crate::cline::is_task_folder(d) || crate::cline_sdk::is_session_folder(d));
        return Some(
            task.map(Path::to_path_buf)
                .or_else(|| crate::opencode_files::store_of(path))
                .unwrap_or_else(|| path.to_path_buf()),
        );
    }
    let database = path
        .to_str()
        .and_then(|p| p.strip_suffix("-wal"))
        .map_or_else(|| path.to_path_buf(), PathBuf::from);
    if roots.contains(&database) {
        return Some(database);
    }
    crate::sources::database_of(path)
}

/// Checkpoints the write-ahead log after a batch, so readers that come and go never let it
/// grow: a passive checkpoint (it copies what no reader still needs and waits for no one), and
/// when the log is over [`WAL_LIMIT`], one that waits (up to the archive's busy timeout) for
/// the readers to move on and truncates it. Returns the log's size afterwards.
fn checkpoint(archive: &Archive, wal: &std::path::Path) -> Option<u64> {
    let conn = archive.conn();
    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
    if std::fs::metadata(wal).is_ok_and(|m| m.len() > WAL_LIMIT) {
        let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    }
    std::fs::metadata(wal).ok().map(|m| m.len())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::changed;

    /// A database's commits land in its `-wal`: that asks for the database; the files beside a
    /// database (its folder is watched for the log) ask for nothing, transcripts under a
    /// watched folder for themselves.
    /// A file of a Cline-family task folder asks for the folder, read as one document.
    #[test]
    fn a_file_of_a_task_folder_asks_for_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let task = dir
            .path()
            .join("saoudrizwan.claude-dev/tasks/1760000000000");
        std::fs::create_dir_all(&task).unwrap();
        std::fs::write(task.join("ui_messages.json"), b"[]").unwrap();
        let roots = vec![dir.path().to_path_buf()];
        assert_eq!(
            changed(&task.join("ui_messages.json"), &roots),
            Some(task.clone())
        );
        assert_eq!(
            changed(&task.join("api_conversation_history.json"), &roots),
            Some(task)
        );
    }

    /// A file of OpenCode's JSON store asks for the store, read a session at a time.
    #[test]
    fn a_file_of_opencodes_json_store_asks_for_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("opencode/storage");
        for folder in ["session/global", "message/ses_a", "part/msg_a"] {
            std::fs::create_dir_all(store.join(folder)).unwrap();
        }
        let roots = vec![dir.path().to_path_buf()];
        let part = store.join("part/msg_a/prt_a.json");
        assert_eq!(changed(&part, &roots), Some(store.clone()));
        let elsewhere = dir.path().join("notes/storage/a.json");
        assert_eq!(changed(&elsewhere, &roots), Some(elsewhere.clone()));
    }

    #[test]
    fn a_databases_log_asks_for_the_database_and_its_neighbours_for_nothing() {
        let folder = std::env::temp_dir();
        let db = PathBuf::from("/data/agent/mine.sqlite");
        let roots = vec![folder.clone(), db.clone()];
        let transcript = folder.join("s.jsonl");
        assert_eq!(changed(&transcript, &roots), Some(transcript));
        assert_eq!(
            changed(Path::new("/data/agent/mine.sqlite-wal"), &roots),
            Some(db.clone())
        );
        assert_eq!(changed(&db, &roots), Some(db));
        assert_eq!(changed(Path::new("/data/agent/auth.json"), &roots), None);
        assert_eq!(
            changed(Path::new("/data/agent/mine.sqlite-shm"), &roots),
            None
        );
        assert_eq!(
            changed(Path::new("/data/opencode/opencode.db-wal"), &roots),
            Some(PathBuf::from("/data/opencode/opencode.db"))
        );
    }
}
