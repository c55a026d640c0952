//! The audit trail, in a SQLite file of its own beside the archive (`<archive stem>.audit.db`),
//! so querying never changes the archive's bytes. Three tables:
//!
//! - `intents` and `outcomes`: every query, from any surface and in either language, records
//!   an intent before it runs and an outcome after. If the intent cannot be recorded the query
//!   does not run. An intent without an outcome means no result was returned (the process
//!   died, or the outcome could not be written).
//! - `requests`: every other request of a caller the server knows (a valid token, or the
//!   MCP server's user): those that run no query (`explain`, `tables`, `completions`) and those
//!   refused before a query started (a scope that may not, a bad or too large body, a busy
//!   server, an archive that could not be opened), each with its outcome and error code.
//! - `refusals`: requests refused before anyone was known (no valid token, no such endpoint),
//!   counted per minute, surface, source address and code rather than recorded one by one, so
//!   an unauthenticated caller cannot grow the file without bound: the first refusal of a
//!   minute is written at once, the rest of that minute's are added at most once a second and
//!   when the log is dropped ([`AuditLog::flush`]).
//!
//! One connection is kept open per log and shared by its clones (a long-lived server writes
//! through it), opened again after a failure; several processes (a server and the command
//! line) share the file, and SQLite serialises their writes.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
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
CREATE TABLE IF NOT EXISTS requests (
    request_id INTEGER PRIMARY KEY,
    at_ms INTEGER NOT NULL,
    who TEXT,
    scope TEXT,
    surface TEXT NOT NULL,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    text TEXT,
    status TEXT NOT NULL,
    code TEXT,
    error TEXT,
    duration_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS refusals (
    minute INTEGER NOT NULL,
    surface TEXT NOT NULL,
    source TEXT NOT NULL,
    code TEXT NOT NULL,
    count INTEGER NOT NULL,
    first_ms INTEGER NOT NULL,
    last_ms INTEGER NOT NULL,
    PRIMARY KEY (minute, surface, source, code)
) WITHOUT ROWID;
";

/// How often the counts of anonymous refusals held in memory are written, at most.
const REFUSALS_FLUSH: Duration = Duration::from_secs(1);

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
            who: quarry_archive::location::os_user(),
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
    /// A ranked full-text search (`quarry search`, `/api/search`, MCP `search`).
    Search,
    /// Facet counts (`quarry facets`, `/api/facets`, MCP `facets`).
    Facets,
    /// A read of what a ref names (`quarry read`).
    Read,
}

impl Language {
    fn name(self) -> &'static str {
        match self {
            Language::Query => "query",
            Language::Sql => "sql",
            Language::Export => "export",
            Language::Search => "search",
            Language::Facets => "facets",
            Language::Read => "read",
        }
    }
}

/// The audit file of one archive (clones share one connection and one tally of refusals).
#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
    shared: Arc<Shared>,
}

/// What the clones of one log share.
#[derive(Debug, Default)]
struct Shared {
    conn: Mutex<Option<Connection>>,
    refusals: Mutex<Tally>,
}

/// Anonymous refusals counted but not yet written.
#[derive(Debug, Default)]
struct Tally {
    pending: HashMap<RefusalKey, Pending>,
    /// Keys already in the file (so the next ones of the minute may wait).
    written: HashSet<RefusalKey>,
    flushed: Option<Instant>,
}

/// The row of `refusals` a refusal is counted in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RefusalKey {
    minute: i64,
    surface: String,
    source: String,
    code: String,
}

/// Refusals of one key held in memory.
#[derive(Debug, Clone, Copy)]
struct Pending {
    count: i64,
    first_ms: i64,
    last_ms: i64,
}

impl Drop for Shared {
    fn drop(&mut self) {
        let tally = std::mem::take(&mut *self.refusals.lock().unwrap_or_else(|p| p.into_inner()));
        if tally.pending.is_empty() {
            return;
        }
        if let Some(conn) = self.conn.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            let _ = write_refusals(conn, &tally.pending);
        }
    }
}

/// What kind of request, of those that are not queries, a [`RequestRecord`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// How a query parses, or its plans.
    Explain,
    /// The caller's catalog.
    Tables,
    /// Example queries and typical mistakes.
    Completions,
    /// A request refused before it could run anything.
    Refused,
    /// A browser signed in with a token (the web page).
    SignIn,
    /// A browser signed out.
    SignOut,
    /// A stream of what the archive's writers committed opened (`GET /api/live`).
    Live,
}

impl RequestKind {
    fn name(self) -> &'static str {
        match self {
            RequestKind::Explain => "explain",
            RequestKind::Tables => "tables",
            RequestKind::Completions => "completions",
            RequestKind::Refused => "refused",
            RequestKind::SignIn => "sign_in",
            RequestKind::SignOut => "sign_out",
            RequestKind::Live => "live",
        }
    }
}

/// A request that ran no query, as [`AuditLog::request`] records it.
#[derive(Debug, Clone)]
pub struct RequestRecord<'a> {
    /// Who asked.
    pub caller: &'a Caller,
    /// Under what scope (`None` when it was not known yet).
    pub scope: Option<&'a str>,
    /// What kind of request.
    pub kind: RequestKind,
    /// The endpoint or tool (`GET /api/tables`, `explain`).
    pub target: &'a str,
    /// The query text it was about, if any.
    pub text: Option<&'a str>,
    /// `None` when it succeeded, else the error's code and message.
    pub error: Option<(&'a str, &'a str)>,
    /// How long it took.
    pub duration: Duration,
}

/// One row of `requests`, as [`AuditLog::recent_requests`] lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestRow {
    /// Its number.
    pub request_id: i64,
    /// When (ms since the epoch, UTC).
    pub at_ms: i64,
    /// Who asked.
    pub who: Option<String>,
    /// Under what scope.
    pub scope: Option<String>,
    /// Through what surface.
    pub surface: String,
    /// `explain`, `tables`, `completions` or `refused`.
    pub kind: String,
    /// The endpoint or tool.
    pub target: String,
    /// The query text, if any.
    pub text: Option<String>,
    /// `ok` or `error`.
    pub status: String,
    /// The error's code.
    pub code: Option<String>,
    /// The error.
    pub error: Option<String>,
}

/// One row of `refusals`: anonymous refusals of one minute, surface, source and code.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RefusalRow {
    /// The minute (ms since the epoch of its start, UTC).
    pub minute_ms: i64,
    /// Through what surface.
    pub surface: String,
    /// Where from (the client's address).
    pub source: String,
    /// The error's code (`unauthorized`, `not_found`, ...).
    pub code: String,
    /// How many.
    pub count: i64,
    /// The first and last of them (ms since the epoch).
    pub first_ms: i64,
    /// The last of them.
    pub last_ms: i64,
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
        AuditLog {
            path: path.into(),
            shared: Arc::default(),
        }
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

    /// Runs `work` on the log's connection (opened first when there is none; dropped after a
    /// failure, so the next call opens the file again).
    fn with<T>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, AuditError> {
        let mut conn = self.shared.conn.lock().unwrap_or_else(|p| p.into_inner());
        if conn.is_none() {
            *conn = Some(self.open()?);
        }
        let Some(open) = conn.as_ref() else {
            return Err(self.error("the audit file is not open"));
        };
        match work(open) {
            Ok(value) => Ok(value),
            Err(e) => {
                *conn = None;
                Err(self.error(e))
            }
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
        let intent_id = self.with(|conn| {
            conn.prepare_cached(
                "INSERT INTO intents (at_ms, who, scope, surface, language, query) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![now_ms(), caller.who, scope, caller.surface, language.name(), query])?;
            Ok(conn.last_insert_rowid())
        })?;
        Ok(Ticket {
            log: self.clone(),
            intent_id,
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
        self.with(|conn| {
            let mut statement = conn.prepare(
                "SELECT i.intent_id, i.at_ms, i.who, i.scope, i.surface, i.language, i.query,
                        o.status, o.rows, o.truncated, o.duration_ms, o.error
                 FROM intents i LEFT JOIN outcomes o USING (intent_id)
                 ORDER BY i.intent_id DESC LIMIT ?1",
            )?;
            let rows = statement.query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
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
            })?;
            rows.collect()
        })
    }

    /// Records a request that ran no query: one that was answered without one (`explain`,
    /// `tables`, `completions`), or one refused before a query could start.
    pub fn request(&self, record: &RequestRecord<'_>) -> Result<(), AuditError> {
        let (status, code, error) = match record.error {
            None => ("ok", None, None),
            Some((code, message)) => ("error", Some(code), Some(message)),
        };
        let duration = i64::try_from(record.duration.as_millis()).unwrap_or(i64::MAX);
        self.with(|conn| {
            conn.prepare_cached(
                "INSERT INTO requests (at_ms, who, scope, surface, kind, target, text, status, code, error, duration_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )?
            .execute(params![
                now_ms(),
                record.caller.who,
                record.scope,
                record.caller.surface,
                record.kind.name(),
                record.target,
                record.text,
                status,
                code,
                error,
                duration
            ])?;
            Ok(())
        })
    }

    /// Counts a request refused before the caller was known (no valid token, no such
    /// endpoint) from `source` through `surface`, with the error's `code`: written at once when
    /// it is the first of its minute, source and code, else added to the count within a
    /// second (see the module docs).
    pub fn refused(&self, surface: &str, source: &str, code: &str) -> Result<(), AuditError> {
        let at = now_ms();
        let key = RefusalKey {
            minute: at.div_euclid(60_000),
            surface: surface.to_string(),
            source: source.to_string(),
            code: code.to_string(),
        };
        let due = {
            let mut tally = self
                .shared
                .refusals
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            tally.written.retain(|k| k.minute >= key.minute);
            let first = !tally.written.contains(&key);
            let pending = tally.pending.entry(key.clone()).or_insert(Pending {
                count: 0,
                first_ms: at,
                last_ms: at,
            });
            pending.count += 1;
            pending.last_ms = at;
            let stale = tally.flushed.is_none_or(|t| t.elapsed() >= REFUSALS_FLUSH);
            if first || stale {
                tally.written.insert(key);
                tally.flushed = Some(Instant::now());
                std::mem::take(&mut tally.pending)
            } else {
                HashMap::new()
            }
        };
        if due.is_empty() {
            return Ok(());
        }
        self.with(|conn| write_refusals(conn, &due))
    }

    /// Writes the counts of anonymous refusals held in memory (done by itself at most once a
    /// second, and when the last clone of the log is dropped).
    pub fn flush(&self) -> Result<(), AuditError> {
        let due = std::mem::take(
            &mut self
                .shared
                .refusals
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pending,
        );
        if due.is_empty() {
            return Ok(());
        }
        self.with(|conn| write_refusals(conn, &due))
    }

    /// The `limit` most recent requests that ran no query, newest first.
    pub fn recent_requests(&self, limit: usize) -> Result<Vec<RequestRow>, AuditError> {
        if !self.path.exists() {
            return Ok(Vec::new());
        }
        self.with(|conn| {
            let mut statement = conn.prepare(
                "SELECT request_id, at_ms, who, scope, surface, kind, target, text, status, code, error
                 FROM requests ORDER BY request_id DESC LIMIT ?1",
            )?;
            let rows = statement.query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
                Ok(RequestRow {
                    request_id: r.get(0)?,
                    at_ms: r.get(1)?,
                    who: r.get(2)?,
                    scope: r.get(3)?,
                    surface: r.get(4)?,
                    kind: r.get(5)?,
                    target: r.get(6)?,
                    text: r.get(7)?,
                    status: r.get(8)?,
                    code: r.get(9)?,
                    error: r.get(10)?,
                })
            })?;
            rows.collect()
        })
    }

    /// The `limit` most recent rows of anonymous refusals, newest first.
    pub fn recent_refusals(&self, limit: usize) -> Result<Vec<RefusalRow>, AuditError> {
        if !self.path.exists() {
            return Ok(Vec::new());
        }
        self.with(|conn| {
            let mut statement = conn.prepare(
                "SELECT minute, surface, source, code, count, first_ms, last_ms FROM refusals
                 ORDER BY minute DESC, last_ms DESC LIMIT ?1",
            )?;
            let rows = statement.query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
                Ok(RefusalRow {
                    minute_ms: r.get::<_, i64>(0)? * 60_000,
                    surface: r.get(1)?,
                    source: r.get(2)?,
                    code: r.get(3)?,
                    count: r.get(4)?,
                    first_ms: r.get(5)?,
                    last_ms: r.get(6)?,
                })
            })?;
            rows.collect()
        })
    }
}

/// Adds `due` to the counts of `refusals`, in one transaction.
fn write_refusals(conn: &Connection, due: &HashMap<RefusalKey, Pending>) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let written = (|| {
        let mut statement = conn.prepare_cached(
            "INSERT INTO refusals (minute, surface, source, code, count, first_ms, last_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (minute, surface, source, code) DO UPDATE SET
                 count = count + excluded.count,
                 first_ms = min(first_ms, excluded.first_ms),
                 last_ms = max(last_ms, excluded.last_ms)",
        )?;
        for (key, p) in due {
            statement.execute(params![
                key.minute,
                key.surface,
                key.source,
                key.code,
                p.count,
                p.first_ms,
                p.last_ms
            ])?;
        }
        Ok(())
    })();
    match written {
        Ok(()) => conn.execute_batch("COMMIT"),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
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
        let intent_id = self.intent_id;
        self.log.with(|conn| {
            conn.prepare_cached(
                "INSERT INTO outcomes (intent_id, at_ms, status, rows, truncated, duration_ms, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                intent_id,
                now_ms(),
                status,
                rows.map(|r| r as i64),
                truncated,
                duration,
                error
            ])?;
            Ok(())
        })
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
    fn anonymous_refusals_are_counted_not_listed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.audit.db");
        let log = AuditLog::at(&path);
        for _ in 0..5000 {
            log.refused("http", "10.0.0.1", "unauthorized").unwrap();
        }
        log.refused("http", "10.0.0.2", "not_found").unwrap();
        // The first of each key is in the file at once.
        let written = AuditLog::at(&path).recent_refusals(10).unwrap();
        assert!(
            written
                .iter()
                .any(|r| r.code == "not_found" && r.count == 1)
        );
        assert!(written.iter().any(|r| r.code == "unauthorized"));
        drop(log);
        let rows = AuditLog::at(&path).recent_refusals(10).unwrap();
        let count = |code: &str| -> i64 {
            rows.iter()
                .filter(|r| r.code == code)
                .map(|r| r.count)
                .sum()
        };
        assert_eq!((count("unauthorized"), count("not_found")), (5000, 1));
        assert!(rows.len() <= 4, "{rows:?}");
    }

    #[test]
    fn a_request_without_a_query_is_recorded_with_its_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::at(dir.path().join("a.audit.db"));
        let caller = Caller {
            who: Some("ops".into()),
            surface: "http".into(),
        };
        log.request(&RequestRecord {
            caller: &caller,
            scope: Some("alice"),
            kind: RequestKind::Refused,
            target: "POST /api/query",
            text: None,
            error: Some(("body_too_large", "too large")),
            duration: Duration::from_millis(3),
        })
        .unwrap();
        let rows = log.recent_requests(5).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (
                rows[0].kind.as_str(),
                rows[0].code.as_deref(),
                rows[0].who.as_deref()
            ),
            ("refused", Some("body_too_large"), Some("ops"))
        );
        assert!(log.recent(5).unwrap().is_empty(), "no query intent");
    }

    #[test]
    fn the_file_sits_beside_the_archive() {
        assert_eq!(
            default_audit_file(Path::new("/x/y/archive.db")),
            PathBuf::from("/x/y/archive.audit.db")
        );
    }
}
