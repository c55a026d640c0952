//! The audit trail: every query, from any surface and in either language, records an intent
//! before it runs and an outcome after, in a SQLite file of its own beside the archive
//! (`<archive stem>.audit.db`), so querying never changes the archive's bytes.
//!
//! If the intent cannot be recorded the query does not run. An intent without an outcome means
//! no result was returned (the process died, or the outcome could not be written). Each call
//! opens the file afresh, so several processes (a server and the command line) share it; SQLite
//! serialises their writes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, params};
use serde::Serialize;

/// The audit file's schema (created on first use).
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS intents (
    intent_id INTEGER PRIMARY KEY,
    at_ms INTEGER NOT NULL,
    who TEXT,
    scope TEXT NOT NULL,
    surface TEXT NOT NULL,
    language TEXT NOT NULL,
    query TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS outcomes (
    intent_id INTEGER PRIMARY KEY REFERENCES intents(intent_id),
    at_ms INTEGER NOT NULL,
    status TEXT NOT NULL,
    rows INTEGER,
    truncated INTEGER,
    duration_ms INTEGER NOT NULL,
    error TEXT
);
";

/// Why the audit file could not be written or read.
#[derive(Debug, thiserror::Error)]
#[error("cannot use the audit file {}: {message}", .path.display())]
pub struct AuditError {
    /// The audit file.
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
}

/// Who asks, through what: the part of an intent that is not the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The person or token name (`None` when unknown).
    pub who: Option<String>,
    /// The surface: `cli`, `http`, `mcp`, `library`.
    pub surface: String,
}

impl Default for Caller {
    fn default() -> Self {
        Caller {
            who: crate::location::os_user(),
            surface: "library".into(),
        }
    }
}

/// The language of an audited query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    /// quarry's pipeline language.
    Query,
    /// Read-only SQL.
    Sql,
    /// Whole tables written out (`quarry export`).
    Export,
}

impl Language {
    fn name(self) -> &'static str {
        match self {
            Language::Query => "query",
            Language::Sql => "sql",
            Language::Export => "export",
        }
    }
}

/// The audit file of one archive.
#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
}

/// The audit file beside `archive`: `<stem>.audit.db` in its folder.
pub fn default_audit_file(archive: &Path) -> PathBuf {
    let stem = archive
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "archive".into());
    archive.with_file_name(format!("{stem}.audit.db"))
}

/// One audited query as `quarry audit` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    /// The intent's number.
    pub intent_id: i64,
    /// When it was asked (ms since the epoch, UTC).
    pub at_ms: i64,
    /// Who asked.
    pub who: Option<String>,
    /// Under what scope.
    pub scope: String,
    /// Through what surface.
    pub surface: String,
    /// In which language.
    pub language: String,
    /// The query text.
    pub query: String,
    /// `ok`, `error`, `abandoned`, or `None`: no outcome (no result was returned).
    pub status: Option<String>,
    /// Rows returned.
    pub rows: Option<i64>,
    /// Whether a row cap cut them.
    pub truncated: Option<bool>,
    /// From intent to outcome.
    pub duration_ms: Option<i64>,
    /// The error, when it failed.
    pub error: Option<String>,
}

impl AuditLog {
    /// The audit file at `path` (created on first write).
    pub fn at(path: impl Into<PathBuf>) -> AuditLog {
        AuditLog { path: path.into() }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, e: impl std::fmt::Display) -> AuditError {
        AuditError {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    fn open(&self) -> Result<Connection, AuditError> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| self.error(e))?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(|e| self.error(e))?;
        // WAL: concurrent readers and one writer at a time (a server's queries and the
        // command line); a committed intent survives the process dying.
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .map_err(|e| self.error(e))?;
        conn.execute_batch("PRAGMA synchronous = NORMAL;")
            .map_err(|e| self.error(e))?;
        conn.execute_batch(SCHEMA).map_err(|e| self.error(e))?;
        Ok(conn)
    }

    /// Records the intent to run `query`; the ticket records its outcome.
    pub fn intend(
        &self,
        caller: &Caller,
        scope: &str,
        language: Language,
        query: &str,
    ) -> Result<Ticket, AuditError> {
        let conn = self.open()?;
        conn.execute(
            "INSERT INTO intents (at_ms, who, scope, surface, language, query) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![now_ms(), caller.who, scope, caller.surface, language.name(), query],
        )
        .map_err(|e| self.error(e))?;
        Ok(Ticket {
            log: self.clone(),
            intent_id: conn.last_insert_rowid(),
            started: Instant::now(),
            rows: 0,
            done: false,
        })
    }

    /// The `limit` most recent records, newest first.
    pub fn recent(&self, limit: usize) -> Result<Vec<Record>, AuditError> {
        if !self.path.exists() {
            return Ok(Vec::new());
        }
        let conn = self.open()?;
        let mut statement = conn
            .prepare(
                "SELECT i.intent_id, i.at_ms, i.who, i.scope, i.surface, i.language, i.query,
                        o.status, o.rows, o.truncated, o.duration_ms, o.error
                 FROM intents i LEFT JOIN outcomes o USING (intent_id)
                 ORDER BY i.intent_id DESC LIMIT ?1",
            )
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
                Ok(Record {
                    intent_id: r.get(0)?,
                    at_ms: r.get(1)?,
                    who: r.get(2)?,
                    scope: r.get(3)?,
                    surface: r.get(4)?,
                    language: r.get(5)?,
                    query: r.get(6)?,
                    status: r.get(7)?,
                    rows: r.get(8)?,
                    truncated: r.get(9)?,
                    duration_ms: r.get(10)?,
                    error: r.get(11)?,
                })
            })
            .map_err(|e| self.error(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.error(e))
    }
}

/// An intent awaiting its outcome. Dropped without one, it records `abandoned` (the caller
/// stopped reading the answer before its end).
#[derive(Debug)]
pub struct Ticket {
    log: AuditLog,
    intent_id: i64,
    started: Instant,
    rows: usize,
    done: bool,
}

/// How a query ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<'a> {
    /// It returned `rows` rows (`truncated`: a cap cut them).
    Ok {
        /// Rows returned.
        rows: usize,
        /// Whether a cap cut them.
        truncated: bool,
    },
    /// It failed.
    Error(&'a str),
    /// The caller stopped reading after `rows` rows.
    Abandoned {
        /// Rows read until then.
        rows: usize,
    },
}

impl Ticket {
    /// The intent's number.
    pub fn intent_id(&self) -> i64 {
        self.intent_id
    }

    /// Notes that `rows` rows have been returned so far (what `abandoned` reports).
    pub fn returned(&mut self, rows: usize) {
        self.rows = rows;
    }

    /// Records the outcome (once; later calls do nothing).
    pub fn finish(&mut self, outcome: Outcome<'_>) -> Result<(), AuditError> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        let (status, rows, truncated, error) = match outcome {
            Outcome::Ok { rows, truncated } => ("ok", Some(rows), Some(truncated), None),
            Outcome::Error(e) => ("error", None, None, Some(e)),
            Outcome::Abandoned { rows } => ("abandoned", Some(rows), None, None),
        };
        let duration = i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let conn = self.log.open()?;
        conn.execute(
            "INSERT INTO outcomes (intent_id, at_ms, status, rows, truncated, duration_ms, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                self.intent_id,
                now_ms(),
                status,
                rows.map(|r| r as i64),
                truncated,
                duration,
                error
            ],
        )
        .map_err(|e| self.log.error(e))?;
        Ok(())
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.done {
            // Nothing to report to: a failed write leaves the intent without an outcome, which
            // reads as "no result was returned".
            let rows = self.rows;
            let _ = self.finish(Outcome::Abandoned { rows });
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_intent_then_its_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::at(dir.path().join("a.audit.db"));
        let caller = Caller {
            who: Some("alice".into()),
            surface: "cli".into(),
        };
        let mut ticket = log
            .intend(&caller, "admin", Language::Sql, "SELECT 1")
            .unwrap();
        ticket
            .finish(Outcome::Ok {
                rows: 1,
                truncated: false,
            })
            .unwrap();
        drop(ticket);
        let pending = log
            .intend(&caller, "r", Language::Query, "messages | count")
            .unwrap();
        std::mem::forget(pending);
        let records = log.recent(10).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].status, None, "the newest has no outcome");
        assert_eq!(records[1].status.as_deref(), Some("ok"));
        assert_eq!(records[1].rows, Some(1));
        assert_eq!(records[1].who.as_deref(), Some("alice"));
    }

    #[test]
    fn a_dropped_ticket_records_abandoned() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::at(dir.path().join("a.audit.db"));
        drop(
            log.intend(&Caller::default(), "admin", Language::Query, "x")
                .unwrap(),
        );
        assert_eq!(
            log.recent(1).unwrap()[0].status.as_deref(),
            Some("abandoned")
        );
    }

    #[test]
    fn an_unwritable_audit_file_fails_the_intent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.audit.db");
        std::fs::create_dir(&path).unwrap();
        let log = AuditLog::at(&path);
        assert!(
            log.intend(&Caller::default(), "admin", Language::Sql, "SELECT 1")
                .is_err()
        );
    }

    #[test]
    fn the_file_sits_beside_the_archive() {
        assert_eq!(
            default_audit_file(Path::new("/x/y/archive.db")),
            PathBuf::from("/x/y/archive.audit.db")
        );
    }
}
