//! What a caller asks with: the [`Options`] an engine is opened with, one [`Request`] (either
//! language, [`Caps`] on its rows, a time limit) and its [`Deadline`]. Plain data, no engine.

use std::path::PathBuf;

use crate::audit::{Caller, Language};
use crate::lower::PlantedBug;
use crate::scope::Scope;

/// How a [`Quarry`](crate::Quarry) is opened.
#[derive(Debug, Clone)]
pub struct Options {
    /// The archive file.
    pub archive: PathBuf,
    /// Memory for a query's sorts and aggregates, in bytes; beyond it they spill to disk.
    pub memory_limit: Option<usize>,
    /// Zone of day boundaries and time buckets: `UTC`, `local` (the default), an offset like
    /// `+02:00` or an IANA name like `Europe/Warsaw`.
    pub tz: Option<String>,
    /// Which storage answers queries.
    pub source: SourceChoice,
    /// Where the columnar snapshot is (a path or an object store URL); `None`: the
    /// `<stem>.snapshot` folder beside the archive.
    pub snapshot_url: Option<String>,
    /// Which tables, columns and sessions the session may see (decided when it is opened).
    pub scope: Scope,
    /// Who asks, through what surface: recorded in the audit trail with every query.
    pub caller: Caller,
    /// The audit file; `None`: `<archive stem>.audit.db` beside the archive.
    pub audit_file: Option<PathBuf>,
    /// The price table costs are computed with (TOML, the layout of `data/prices.toml`);
    /// `None`: the table compiled in.
    pub prices: Option<PathBuf>,
    /// A bug planted in the lowering, for the differential fuzzer's test that it finds one
    /// (`tests/fuzz/`); `None` everywhere else.
    #[doc(hidden)]
    pub planted: Option<PlantedBug>,
}

impl Options {
    /// Options for the archive at `archive`, everything else at its default.
    pub fn new(archive: impl Into<PathBuf>) -> Self {
        Options {
            archive: archive.into(),
            memory_limit: None,
            tz: None,
            source: SourceChoice::default(),
            snapshot_url: None,
            scope: Scope::default(),
            caller: Caller::default(),
            audit_file: None,
            prices: None,
            planted: None,
        }
    }
}

/// Checks that `tz` names a zone [`Options::tz`] takes (`UTC`, `local`, an offset like `+02:00`
/// or an IANA name like `Europe/Warsaw`), so a command line can refuse a wrong one as it parses
/// its flags; the message says what is accepted.
pub fn check_zone(tz: &str) -> Result<(), String> {
    crate::lower::clock::check_zone(tz).map_err(|e| e.0)
}

/// Which storage a session reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SourceChoice {
    /// The snapshot when it is as of the archive's generation, else the SQLite archive.
    #[default]
    Auto,
    /// The SQLite archive.
    Sqlite,
    /// The columnar snapshot (an error when there is none, or it is older than the archive).
    Snapshot,
}

impl SourceChoice {
    /// The choice `name` names (`auto`, `sqlite`, `snapshot`).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "auto" => Some(SourceChoice::Auto),
            "sqlite" => Some(SourceChoice::Sqlite),
            "snapshot" => Some(SourceChoice::Snapshot),
            _ => None,
        }
    }
}

/// Caps the caller puts on a result, not part of the query: when one cuts rows the result is
/// `truncated` (a query's own `| limit` never sets it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caps {
    /// At most this many rows.
    pub limit: Option<usize>,
    /// Skip this many rows first.
    pub offset: Option<usize>,
}

/// One question, in either language, with the caps and the time limit of the caller: what
/// [`Session::run`](crate::Session::run) answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The language of `text`.
    pub language: Language,
    /// The query or SQL statement.
    pub text: String,
    /// Caps on the rows.
    pub caps: Caps,
    /// The longest the answer may take, planning and every row included: past it the query is
    /// cancelled and fails with [`Error::Timeout`].
    pub timeout: Option<std::time::Duration>,
    /// Whether a query of the language pages: its rows come in a total order and a cap that
    /// cuts them hands out `next_cursor` (docs/language.md, "Pages").
    pub paged: bool,
    /// The previous page's `next_cursor` (a query of the language; it pages).
    pub cursor: Option<String>,
    /// The zone of its day boundaries and time buckets (`UTC`, `+02:00`, `Europe/Warsaw`);
    /// `None`: the session's.
    pub tz: Option<String>,
}

impl Request {
    /// A query of the language, uncapped, with no time limit.
    pub fn query(text: impl Into<String>) -> Request {
        Request {
            language: Language::Query,
            text: text.into(),
            caps: Caps::default(),
            timeout: None,
            paged: false,
            cursor: None,
            tz: None,
        }
    }

    /// A read-only SQL query, uncapped, with no time limit.
    pub fn sql(text: impl Into<String>) -> Request {
        Request {
            language: Language::Sql,
            ..Request::query(text)
        }
    }

    /// The same request under `caps`.
    pub fn with_caps(mut self, caps: Caps) -> Request {
        self.caps = caps;
        self
    }

    /// The same request with a time limit (`None`: none).
    pub fn with_timeout(mut self, timeout: Option<std::time::Duration>) -> Request {
        self.timeout = timeout;
        self
    }

    /// The same request with its days and time buckets in `tz` (`None`: the session's zone).
    pub fn in_zone(mut self, tz: Option<String>) -> Request {
        self.tz = tz;
        self
    }

    /// The same request, paged: from the first page, or after `cursor`.
    pub fn paged(mut self, cursor: Option<String>) -> Request {
        self.paged = true;
        self.cursor = cursor;
        self
    }
}

/// When a request's time is up, and how long it was given.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    /// When the request must have ended.
    pub at: tokio::time::Instant,
    /// The limit it was given (what the timeout error says).
    pub limit: std::time::Duration,
}

impl Deadline {
    /// A deadline `limit` from now.
    pub fn after(limit: std::time::Duration) -> Deadline {
        Deadline {
            at: tokio::time::Instant::now() + limit,
            limit,
        }
    }
}
