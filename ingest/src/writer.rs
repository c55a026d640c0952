//! The writer side of ingest: groups whole files into one transaction until about
//! [`BATCH_BYTES`] of input or [`BATCH_MILLIS`] have passed, so small files share one commit and
//! one full-text flush instead of paying for their own. A file is counted only once its
//! transaction commits; a kill loses only the open batch, never part of a file. If writing any
//! file of a batch fails, the batch is rolled back and its files are written again one
//! transaction each, so one bad file costs only itself.

use std::sync::mpsc;

use rusqlite::Connection;

use super::checkpoint::Checkpointer;
use super::derive::SessionRows;
use super::merge::{self, Shape};
use super::model::{Diagnostic, ParsedFile};
use super::store::{self, FileStamp, FileState};
use super::summary::Summary;
use super::tail::{Continued, Resumable};

/// Input bytes after which a batch commits. A commit writes every page the batch touched once,
/// so the pages of indexes keyed by random ids (a response's key) cost once per batch, not
/// once per row: larger batches keep ingest into a large archive from rewriting most of those
/// indexes at every commit (docs/benchmarks.md, "Ingest as the archive grows").
pub const BATCH_BYTES: u64 = 256 * 1024 * 1024;
/// Milliseconds after which a batch commits (what a reader of a long ingest waits for news).
pub const BATCH_MILLIS: u128 = 10_000;

/// One parsed file waiting to be written.
pub struct PendingFile {
    /// Identity of the file's content.
    pub stamp: FileStamp,
    /// New or changed.
    pub state: FileState,
    /// Its sessions' rows.
    pub sessions: Vec<SessionRows>,
    /// What the adapter reported.
    pub parsed: ParsedFile,
    /// Where the next read of the file continues, when it can.
    pub resume: Option<Resumable>,
    /// For a continued read: the archived rows it replaces.
    pub continued: Option<Continued>,
    /// Bytes read from the file.
    pub bytes_read: u64,
    /// Why a grown file was read whole rather than from where it was left.
    pub reread: Option<&'static str>,
}

impl PendingFile {
    fn write(&self, conn: &Connection) -> rusqlite::Result<usize> {
        store::write_file(
            conn,
            &self.stamp,
            &self.sessions,
            self.resume.as_ref(),
            self.continued.as_ref(),
        )
    }
}

/// Batches files into transactions.
pub struct Writer {
    pending: Vec<(PendingFile, usize)>,
    bytes: u64,
    started: std::time::Instant,
    failed: bool,
    checkpointer: Option<Checkpointer>,
    spent: Option<Spent>,
    /// The full-text index when the open transaction began ([`merge::merge_after`]).
    index_before: Option<Shape>,
}

/// Where the rows of committed files go to be freed: back to the thread that allocated them.
/// Freeing another thread's allocations takes that thread's allocator lock, and it cost the
/// writer, the ingest's busiest thread, about a twentieth of its time.
pub type Spent = mpsc::Sender<Vec<SessionRows>>;

impl Writer {
    /// An idle writer; `checkpointer`, when given, checkpoints the WAL after each commit, and
    /// `spent`, when given, takes the rows of committed files to free them.
    pub fn new(checkpointer: Option<Checkpointer>, spent: Option<Spent>) -> Self {
        Writer {
            pending: Vec::new(),
            bytes: 0,
            started: std::time::Instant::now(),
            failed: false,
            checkpointer,
            spent,
            index_before: None,
        }
    }

    fn free(&self, rows: Vec<SessionRows>) {
        if let Some(spent) = &self.spent {
            // When the receiver is gone the rows come back and are dropped here.
            let _ = spent.send(rows);
        }
    }

    fn begin(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        if let Some(c) = &self.checkpointer {
            c.before_transaction();
        }
        conn.execute_batch("BEGIN IMMEDIATE")?;
        self.index_before = merge::shape(conn);
        Ok(())
    }

    /// Commits, then runs the full-text merge work of what the transaction flushed in a
    /// transaction of its own, while the checkpoint thread copies the first (`merge`). The files
    /// are committed whatever the merge does: a merge that fails is left to the next commit.
    fn commit(&self, conn: &Connection) -> rusqlite::Result<()> {
        conn.execute_batch("COMMIT")?;
        if let Some(c) = &self.checkpointer {
            c.committed();
        }
        if merge::merge_after(conn, self.index_before).unwrap_or(false)
            && let Some(c) = &self.checkpointer
        {
            c.committed();
        }
        Ok(())
    }

    /// Writes `file` into the open batch (opening one if needed) and commits when the batch is
    /// full. Returns an error only when the archive can take no more writes.
    pub fn push(
        &mut self,
        conn: &Connection,
        file: PendingFile,
        summary: &mut Summary,
    ) -> rusqlite::Result<()> {
        if self.pending.is_empty() {
            self.begin(conn)?;
            self.started = std::time::Instant::now();
            self.bytes = 0;
            self.failed = false;
        }
        self.bytes += file.stamp.size as u64;
        let rows = if self.failed {
            0
        } else {
            match file.write(conn) {
                Ok(rows) => rows,
                Err(_) => {
                    self.failed = true;
                    0
                }
            }
        };
        self.pending.push((file, rows));
        if self.bytes >= BATCH_BYTES || self.started.elapsed().as_millis() >= BATCH_MILLIS {
            self.finish(conn, summary)?;
        }
        Ok(())
    }

    /// Commits the open batch (or, after a failure, rolls it back and writes its files one by
    /// one) and counts its files in `summary`.
    pub fn finish(&mut self, conn: &Connection, summary: &mut Summary) -> rusqlite::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        if !self.failed && store::resolve_usage(conn).is_ok() && self.commit(conn).is_ok() {
            let spent = pending
                .into_iter()
                .flat_map(|(file, rows)| account(summary, file, Ok(rows)))
                .collect();
            self.free(spent);
            return Ok(());
        }
        let _ = conn.execute_batch("ROLLBACK");
        for (file, _) in pending {
            let result = self.begin(conn).and_then(|()| {
                match file
                    .write(conn)
                    .and_then(|rows| store::resolve_usage(conn).map(|()| rows))
                {
                    Ok(rows) => self.commit(conn).map(|()| rows),
                    Err(e) => {
                        let _ = conn.execute_batch("ROLLBACK");
                        Err(e)
                    }
                }
            });
            let fatal = result.as_ref().err().is_some_and(is_fatal);
            let error = result.as_ref().err().map(ToString::to_string);
            let spent = account(summary, file, result.map_err(|_| error.unwrap_or_default()));
            self.free(spent);
            if fatal {
                return Err(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
                    Some("the archive cannot take more writes".into()),
                ));
            }
        }
        Ok(())
    }
}

/// Errors after which no further file can be written (disk full, read-only archive).
fn is_fatal(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(
            rusqlite::ErrorCode::DiskFull
                | rusqlite::ErrorCode::ReadOnly
                | rusqlite::ErrorCode::CannotOpen
        )
    )
}

/// Counts one file's outcome in the summary.
/// Counts one file's outcome in the summary; returns its rows, to be freed.
fn account(
    summary: &mut Summary,
    file: PendingFile,
    result: Result<usize, String>,
) -> Vec<SessionRows> {
    summary.records += file.parsed.records;
    summary.bytes_read += file.bytes_read;
    match result {
        Ok(rows) => {
            summary.rows_written += rows;
            match file.state {
                FileState::Appended | FileState::Rewritten => summary.files_changed += 1,
                _ => summary.files_new += 1,
            }
            if file.continued.is_some() {
                summary.files_continued += 1;
            }
            if let Some(why) = file.reread {
                *summary.read_whole.entry(why.to_string()).or_default() += 1;
            }
            for s in &file.sessions {
                *summary
                    .sessions_ingested
                    .entry(s.session.origin.to_string())
                    .or_default() += 1;
            }
            for (kind, n) in file.parsed.unknown_records {
                *summary.unknown_records.entry(kind).or_default() += n;
            }
            summary.diagnostics.extend(file.parsed.diagnostics);
        }
        Err(reason) => {
            summary.files_failed += 1;
            summary.diagnostics.push(Diagnostic {
                file: file.stamp.path.clone(),
                line: None,
                kind: "write_failed",
                reason: format!(
                    "not written, the archive keeps its previous state for this file: {reason}"
                ),
            });
        }
    }
    file.sessions
}
