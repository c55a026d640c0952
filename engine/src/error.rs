//! The one error type of the library: every way opening an archive, running a query, answering
//! a request or writing its answer can fail. Each error has a stable `code` and one
//! [`ErrorClass`]; the class alone decides the command line's exit code, the HTTP status and how
//! MCP reports it (the table in `docs/server.md`), and [`Error::body`] is the one serialisable
//! error body every surface sends.

use std::path::PathBuf;

use datafusion::common::DataFusionError;
use serde::Serialize;

/// Any error as a cause kept behind another (its chain stays readable through `source()`).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What kind of failure an error is: the one thing front ends map to exit codes, HTTP statuses
/// and MCP errors (see [`ErrorClass::exit_code`], [`ErrorClass::http_status`],
/// [`ErrorClass::mcp_code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The request is wrong: a query, a setting, a flag, a body.
    Usage,
    /// No valid credentials came with the request.
    Unauthorized,
    /// The caller's scope may not do this, or the scope itself is not usable.
    Forbidden,
    /// What the request names does not exist (a table, an endpoint, a session).
    NotFound,
    /// The request contradicts the current state (a stale cursor, a source conflict).
    Conflict,
    /// The request is larger than allowed.
    TooLarge,
    /// The request ran longer than its time limit and was cancelled.
    Timeout,
    /// The caller cancelled the request.
    Cancelled,
    /// Something the request needs is not available now: the archive, the snapshot, the audit
    /// trail, memory, a free query slot, the tokens file.
    Unavailable,
    /// quarry failed: a bug, or a failure it cannot attribute to the request.
    Internal,
}

impl ErrorClass {
    /// Every class, in the order the documentation lists them.
    pub const ALL: [ErrorClass; 10] = [
        ErrorClass::Usage,
        ErrorClass::Unauthorized,
        ErrorClass::Forbidden,
        ErrorClass::NotFound,
        ErrorClass::Conflict,
        ErrorClass::TooLarge,
        ErrorClass::Timeout,
        ErrorClass::Cancelled,
        ErrorClass::Unavailable,
        ErrorClass::Internal,
    ];

    /// The class's name, as error bodies show it.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Usage => "usage",
            ErrorClass::Unauthorized => "unauthorized",
            ErrorClass::Forbidden => "forbidden",
            ErrorClass::NotFound => "not_found",
            ErrorClass::Conflict => "conflict",
            ErrorClass::TooLarge => "too_large",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Cancelled => "cancelled",
            ErrorClass::Unavailable => "unavailable",
            ErrorClass::Internal => "internal",
        }
    }

    /// The command line's exit code: 2 when the caller asked for something wrong or not
    /// allowed, 1 when running failed, 130 when cancelled (as an interrupt).
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorClass::Usage
            | ErrorClass::Unauthorized
            | ErrorClass::Forbidden
            | ErrorClass::NotFound
            | ErrorClass::Conflict
            | ErrorClass::TooLarge => 2,
            ErrorClass::Cancelled => 130,
            ErrorClass::Timeout | ErrorClass::Unavailable | ErrorClass::Internal => 1,
        }
    }

    /// The HTTP status.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorClass::Usage => 400,
            ErrorClass::Unauthorized => 401,
            ErrorClass::Forbidden => 403,
            ErrorClass::NotFound => 404,
            ErrorClass::Conflict => 409,
            ErrorClass::TooLarge => 413,
            ErrorClass::Timeout => 408,
            // No response reaches a client that went away; 499 is what logs record.
            ErrorClass::Cancelled => 499,
            ErrorClass::Unavailable => 503,
            ErrorClass::Internal => 500,
        }
    }

    /// The JSON-RPC error code of the class, carried in an MCP tool error's body as
    /// `jsonrpc_code` (a tool failure is a result with `isError: true`, so the agent reads it;
    /// the codes are those a JSON-RPC error of the same meaning would have).
    pub fn mcp_code(self) -> i32 {
        match self {
            // Invalid params.
            ErrorClass::Usage | ErrorClass::TooLarge => -32602,
            // Server-defined errors (-32000 to -32099).
            ErrorClass::Unauthorized => -32001,
            ErrorClass::Forbidden => -32003,
            ErrorClass::NotFound => -32004,
            ErrorClass::Conflict => -32009,
            ErrorClass::Timeout => -32008,
            ErrorClass::Cancelled => -32800,
            ErrorClass::Unavailable => -32005,
            // Internal error.
            ErrorClass::Internal => -32603,
        }
    }
}

/// Why a library call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The query does not parse or resolve: diagnostics with spans and corrections.
    #[error("{0}")]
    Query(quarry_grammar::Diagnostics),
    /// A `near:` / `semantic:` leaf: the archive has no vector index.
    #[error(
        "embeddings unavailable: semantic and near: leaves need a vector index, which this archive does not have; use a text leaf (~\"...\") instead"
    )]
    EmbeddingsUnavailable,
    /// A retrieval lane the archive does not have.
    #[error("lane unavailable: `{0}` names a retrieval lane this archive does not have")]
    LaneUnavailable(String),
    /// A search cursor that is not one of this request's (another text, lane, filter, page
    /// size, session or scope), or not a cursor at all.
    #[error("invalid cursor: {0}")]
    InvalidCursor(String),
    /// A page cursor of an answer paged by offset (an aggregate) asked for after the archive's
    /// generation moved: its rows could have shifted.
    #[error("stale cursor: {0}")]
    StaleCursor(String),
    /// A query the engine cannot plan.
    #[error("cannot plan the query: {0}")]
    Unplannable(String),
    /// A setting is wrong (a zone, a size, a flag's value).
    #[error("{0}")]
    Setting(String),
    /// A request's body or parameters are not what the endpoint or tool takes.
    #[error("{0}")]
    BadRequest(String),
    /// What the request names does not exist (a table, an endpoint, a session).
    #[error("{0}")]
    NotFound(String),
    /// A read names no session the caller's scope sees (absent and out of scope alike).
    #[error("no session `{0}` in this scope")]
    SessionNotFound(String),
    /// A read names a seq its session does not have.
    #[error("session `{session}` has no event at seq {seq}")]
    EventNotFound {
        /// The session.
        session: String,
        /// The seq asked for.
        seq: i64,
    },
    /// A window's bounds are out of range.
    #[error("invalid window: {0}")]
    InvalidWindow(String),
    /// The archive's lineage links contradict themselves (a cycle of parents).
    #[error("invalid lineage: {0}")]
    InvalidLineage(String),
    /// A page size or count out of its range.
    #[error("invalid limit: {0}")]
    InvalidLimit(String),
    /// A surface that is not `current`, `shadowed` or `log-only`, or replacement links of a
    /// session's records that contradict themselves (a cycle).
    #[error("invalid surface: {0}")]
    InvalidSurface(String),
    /// A search's session filter does not parse or resolve: diagnostics with spans.
    #[error("{0}")]
    InvalidFilter(quarry_grammar::Diagnostics),
    /// A request body larger than the server takes.
    #[error("the request body is larger than the server's --max-body ({limit} bytes)")]
    BodyTooLarge {
        /// The largest body taken, in bytes.
        limit: usize,
    },
    /// There is no archive where one was expected.
    #[error("no archive at {}: run `quarry ingest` first", .0.display())]
    MissingArchive(PathBuf),
    /// The archive could not be opened or read (not an archive, corrupt, unreadable).
    #[error("cannot read the archive {}: {source}", .path.display())]
    Archive {
        /// The archive file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: BoxError,
    },
    /// The query needs more memory than the limit allows, even spilling to disk.
    #[error(
        "the query needs more memory than --memory-limit allows, even spilling to disk: {0}; raise --memory-limit, or narrow the query (a where, fewer groups or columns)"
    )]
    MemoryLimit(String),
    /// `with` projections attach rows of other units, which a streamed format cannot hold.
    #[error(
        "a query with `with` projections returns rows of several units, which {0} cannot hold; export each unit with its own query, or use --format json"
    )]
    NotStreamable(&'static str),
    /// The result could not be written.
    #[error("cannot write {path}: {message}")]
    Write {
        /// The file (or `standard output`).
        path: String,
        /// What went wrong.
        message: String,
    },
    /// `--source snapshot` and there is no snapshot.
    #[error("no snapshot at {0}: run `quarry snapshot` first, or use --source auto or sqlite")]
    NoSnapshot(String),
    /// `--source snapshot` and the snapshot is older than the archive.
    #[error(
        "the snapshot at {location} is as of generation {snapshot}, the archive is at {archive}: run `quarry snapshot` to refresh it, or use --source auto (which reads the archive until then)"
    )]
    StaleSnapshot {
        /// Where the snapshot is.
        location: String,
        /// Its generation.
        snapshot: i64,
        /// The archive's.
        archive: i64,
    },
    /// Writing or reading a snapshot failed.
    #[error("{0}")]
    Snapshot(String),
    /// A SQL statement refused before planning: it is not one read-only query this scope may
    /// run.
    #[error("refused ({}): {message}", .refusal.name())]
    SqlRefused {
        /// What kind of statement it is.
        refusal: Refusal,
        /// What was refused, and what to do instead.
        message: String,
    },
    /// A scope could not be found or made (the scopes file, its name, its predicate).
    #[error("{0}")]
    Scope(String),
    /// Something only the admin scope may do.
    #[error("{0} is only for the admin scope")]
    AdminOnly(&'static str),
    /// No valid credentials came with the request (no token, or one unknown or revoked).
    #[error("{0}")]
    Unauthorized(String),
    /// A browser request from another site, or one that changes state without saying where it
    /// comes from, carrying a sign-in cookie.
    #[error("{0}")]
    CrossSite(String),
    /// The server cannot read its tokens file, so it cannot tell who asks.
    #[error("the server cannot read its tokens file; its operator has been told")]
    TokensUnavailable,
    /// The audit trail could not record the request, so it did not run.
    #[error("the query did not run: {0}")]
    Audit(crate::audit::AuditError),
    /// The query ran longer than the caller's time limit and was cancelled (its scans stopped,
    /// its memory released).
    #[error(
        "the query ran longer than the time limit of {} and was cancelled; narrow it (a where, fewer groups or columns) or ask for a longer timeout",
        humanize_duration(*.0)
    )]
    Timeout(std::time::Duration),
    /// Every query slot of the server stayed taken for the whole time limit.
    #[error(
        "the server was busy: every query slot stayed taken for {}; try again shortly",
        humanize_duration(*.0)
    )]
    Busy(std::time::Duration),
    /// Running the query failed (the archive could not be read, ...); the cause is kept.
    #[error(transparent)]
    Execution(BoxError),
    /// quarry broke one of its own invariants (a bug: please report it).
    #[error("internal error: {0}")]
    Internal(String),
}

/// `d` as people write it: `30 s`, `1.5 s`, `250 ms`.
fn humanize_duration(d: std::time::Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// Why a SQL statement was refused before planning (the `refusal` of [`Error::SqlRefused`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// Empty, whitespace, comments or semicolons only.
    Empty,
    /// More than one statement.
    MultipleStatements,
    /// Data definition (CREATE, ALTER, DROP, TRUNCATE, CREATE EXTERNAL TABLE, ...).
    Ddl,
    /// Data modification (INSERT, UPDATE, DELETE, MERGE), a `WITH` wrapping one included.
    Dml,
    /// `SELECT ... INTO`.
    SelectInto,
    /// `SHOW ...`.
    Show,
    /// `COPY`.
    Copy,
    /// `SET` / `RESET`.
    Set,
    /// `PRAGMA`, `ATTACH`, `DETACH`.
    PragmaAttach,
    /// Transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, ...).
    Transaction,
    /// `CREATE FUNCTION`, `DROP FUNCTION`, macros, procedures.
    Function,
    /// A table function, or a file path or URL used as a table.
    ExternalRead,
    /// `EXPLAIN ANALYZE` (it runs the query).
    ExplainAnalyze,
    /// `EXPLAIN EXPLAIN ...`.
    NestedExplain,
    /// `EXPLAIN` of a statement that is not a query.
    ExplainOfNonQuery,
    /// Plain `EXPLAIN` outside the admin scope.
    ExplainAdminOnly,
    /// Any other statement (GRANT, CALL, USE, PREPARE, ...).
    NotAQuery,
    /// Not SQL the parser understands.
    Syntax,
    /// Too large to check or plan safely (thousands of chained set operations).
    TooLarge,
}

impl Refusal {
    /// The stable name (as the JSON error shows it).
    pub fn name(self) -> &'static str {
        match self {
            Refusal::Empty => "empty",
            Refusal::MultipleStatements => "multiple_statements",
            Refusal::Ddl => "ddl",
            Refusal::Dml => "dml",
            Refusal::SelectInto => "select_into",
            Refusal::Show => "show",
            Refusal::Copy => "copy",
            Refusal::Set => "set",
            Refusal::PragmaAttach => "pragma_attach",
            Refusal::Transaction => "transaction",
            Refusal::Function => "function",
            Refusal::ExternalRead => "external_read",
            Refusal::ExplainAnalyze => "explain_analyze",
            Refusal::NestedExplain => "nested_explain",
            Refusal::ExplainOfNonQuery => "explain_of_non_query",
            Refusal::ExplainAdminOnly => "explain_admin_only",
            Refusal::NotAQuery => "not_a_query",
            Refusal::Syntax => "syntax",
            Refusal::TooLarge => "too_large",
        }
    }
}

impl Error {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Query(_) => "invalid_query",
            Error::EmbeddingsUnavailable => "embeddings_unavailable",
            Error::LaneUnavailable(_) => "lane_unavailable",
            Error::InvalidCursor(_) => "invalid_cursor",
            Error::StaleCursor(_) => "stale_cursor",
            Error::Unplannable(_) => "unplannable",
            Error::Setting(_) => "invalid_setting",
            Error::BadRequest(_) => "bad_request",
            Error::NotFound(_) => "not_found",
            Error::SessionNotFound(_) => "session_not_found",
            Error::EventNotFound { .. } => "event_not_found",
            Error::InvalidWindow(_) => "invalid_window",
            Error::InvalidLineage(_) => "invalid_lineage",
            Error::InvalidLimit(_) => "invalid_limit",
            Error::InvalidSurface(_) => "invalid_surface",
            Error::InvalidFilter(_) => "invalid_filter",
            Error::BodyTooLarge { .. } => "body_too_large",
            Error::MissingArchive(_) => "missing_archive",
            Error::Archive { .. } => "archive_unreadable",
            Error::MemoryLimit(_) => "memory_limit",
            Error::NotStreamable(_) => "not_streamable",
            Error::Write { .. } => "write_failed",
            Error::NoSnapshot(_) => "no_snapshot",
            Error::StaleSnapshot { .. } => "stale_snapshot",
            Error::Snapshot(_) => "snapshot_failed",
            Error::SqlRefused { .. } => "sql_refused",
            Error::Scope(_) => "invalid_scope",
            Error::AdminOnly(_) => "admin_only",
            Error::CrossSite(_) => "cross_site",
            Error::Unauthorized(_) => "unauthorized",
            Error::TokensUnavailable => "tokens_unavailable",
            Error::Audit(_) => "audit_failed",
            Error::Timeout(_) => "timeout",
            Error::Busy(_) => "busy",
            Error::Execution(_) => "execution_failed",
            Error::Internal(_) => "internal",
        }
    }

    /// The error's class: what every front end maps to its exit code, status or MCP error.
    pub fn class(&self) -> ErrorClass {
        match self {
            Error::Query(_)
            | Error::EmbeddingsUnavailable
            | Error::LaneUnavailable(_)
            | Error::Unplannable(_)
            | Error::Setting(_)
            | Error::BadRequest(_)
            | Error::InvalidWindow(_)
            | Error::InvalidLimit(_)
            | Error::InvalidSurface(_)
            | Error::InvalidFilter(_)
            | Error::NotStreamable(_) => ErrorClass::Usage,
            Error::SqlRefused {
                refusal: Refusal::ExplainAdminOnly,
                ..
            } => ErrorClass::Forbidden,
            Error::SqlRefused { .. } => ErrorClass::Usage,
            Error::Scope(_) | Error::AdminOnly(_) | Error::CrossSite(_) => ErrorClass::Forbidden,
            Error::Unauthorized(_) => ErrorClass::Unauthorized,
            Error::InvalidCursor(_) | Error::StaleCursor(_) | Error::InvalidLineage(_) => {
                ErrorClass::Conflict
            }
            Error::NotFound(_) | Error::SessionNotFound(_) | Error::EventNotFound { .. } => {
                ErrorClass::NotFound
            }
            Error::BodyTooLarge { .. } => ErrorClass::TooLarge,
            Error::Timeout(_) => ErrorClass::Timeout,
            Error::MissingArchive(_)
            | Error::Archive { .. }
            | Error::MemoryLimit(_)
            | Error::Write { .. }
            | Error::NoSnapshot(_)
            | Error::StaleSnapshot { .. }
            | Error::Snapshot(_)
            | Error::TokensUnavailable
            | Error::Audit(_)
            | Error::Busy(_) => ErrorClass::Unavailable,
            Error::Execution(_) | Error::Internal(_) => ErrorClass::Internal,
        }
    }

    /// A failure while running, with its cause kept (a string, or any error).
    pub fn failed(cause: impl Into<BoxError>) -> Error {
        Error::Execution(cause.into())
    }

    /// The archive at `path` could not be read, for `cause`.
    pub fn archive(path: impl Into<PathBuf>, cause: impl Into<BoxError>) -> Error {
        Error::Archive {
            path: path.into(),
            source: cause.into(),
        }
    }

    /// The error as a list of diagnostics: a query's own diagnostics (with spans, columns and
    /// corrections), a SQL refusal with its kind, anything else as `{code, message}`.
    pub fn diagnostics_json(&self) -> serde_json::Value {
        match self {
            Error::Query(diagnostics) | Error::InvalidFilter(diagnostics) => {
                serde_json::to_value(&diagnostics.diagnostics).unwrap_or_default()
            }
            Error::SqlRefused { refusal, message } => serde_json::json!([
                {"code": self.code(), "refusal": refusal, "message": message}
            ]),
            _ => serde_json::json!([{"code": self.code(), "message": self.message()}]),
        }
    }

    /// The message people read: the error and its causes, without a trailing newline.
    pub fn message(&self) -> String {
        self.to_string().trim_end().to_string()
    }

    /// The one error body every surface sends (HTTP, MCP, the command line's `--format json`).
    /// `query` is the text the error is about: a query error then carries it drawn with the
    /// error under it (`rendered`).
    pub fn body(&self, query: Option<&str>) -> ErrorBody {
        let class = self.class();
        ErrorBody {
            code: self.code(),
            class,
            status: class.http_status(),
            message: self.message(),
            diagnostics: self.diagnostics_json(),
            rendered: match (self, query) {
                (Error::Query(diagnostics) | Error::InvalidFilter(diagnostics), Some(query)) => {
                    Some(quarry_grammar::render(query, diagnostics, false))
                }
                _ => None,
            },
        }
    }

    /// Whether the error is a planning refusal of a valid query (reported as a diagnostic).
    pub fn is_plan_refusal(&self) -> bool {
        matches!(
            self,
            Error::EmbeddingsUnavailable | Error::LaneUnavailable(_) | Error::Unplannable(_)
        )
    }
}

/// The error body of every surface: `{code, class, status, message, diagnostics, rendered?}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorBody {
    /// The stable code of the error (`invalid_query`, `timeout`, ...).
    pub code: &'static str,
    /// Its class (`usage`, `not_found`, `timeout`, ...), which decides the status and exit code.
    pub class: ErrorClass,
    /// The HTTP status of the class (also in CLI and MCP bodies, so all three are alike).
    pub status: u16,
    /// What went wrong, for people.
    pub message: String,
    /// The diagnostics: a query's own, with spans and corrections, or one `{code, message}`.
    pub diagnostics: serde_json::Value,
    /// For a query error, the query with the error drawn under it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rendered: Option<String>,
}

impl ErrorBody {
    /// The body as one line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| {
            format!(
                "{{\"code\":\"{}\",\"message\":\"the error could not be written\"}}",
                self.code
            )
        })
    }
}

/// A DataFusion failure as the library's error: running out of the memory pool is
/// [`Error::MemoryLimit`], anything else [`Error::Execution`] with the failure kept as its
/// cause. (A function rather than a `From` impl, so no DataFusion type shows in the public
/// API.)
pub(crate) fn engine_error(e: DataFusionError) -> Error {
    match e.find_root() {
        DataFusionError::ResourcesExhausted(message) => {
            // DataFusion lists the top consumers first; the allocation that failed is last.
            let failed = message
                .rsplit("Error: ")
                .next()
                .unwrap_or(message)
                .trim()
                .trim_end_matches('.');
            Error::MemoryLimit(failed.to_string())
        }
        _ => Error::failed(e),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_class_has_its_own_status_and_name() {
        let statuses: std::collections::HashSet<u16> =
            ErrorClass::ALL.iter().map(|c| c.http_status()).collect();
        let names: std::collections::HashSet<&str> =
            ErrorClass::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(statuses.len(), ErrorClass::ALL.len());
        assert_eq!(names.len(), ErrorClass::ALL.len());
        for class in ErrorClass::ALL {
            let json = serde_json::to_value(class).unwrap();
            assert_eq!(json, class.name());
        }
    }

    #[test]
    fn the_statuses_the_server_always_answered_keep_their_meaning() {
        assert_eq!(Error::BadRequest("x".into()).class().http_status(), 400);
        assert_eq!(Error::Unauthorized("x".into()).class().http_status(), 401);
        assert_eq!(Error::AdminOnly("x").class().http_status(), 403);
        assert_eq!(Error::NotFound("x".into()).class().http_status(), 404);
        let timeout = Error::Timeout(std::time::Duration::from_secs(1));
        assert_eq!(timeout.class().http_status(), 408);
        assert_eq!(Error::BodyTooLarge { limit: 1 }.class().http_status(), 413);
        assert_eq!(Error::TokensUnavailable.class().http_status(), 503);
    }

    #[test]
    fn a_cause_stays_behind_the_error() {
        let io = std::io::Error::other("disk on fire");
        let e = Error::archive("/x/archive.db", io);
        let source = std::error::Error::source(&e).unwrap();
        assert_eq!(source.to_string(), "disk on fire");
        assert!(e.to_string().contains("/x/archive.db"));
        assert_eq!(e.body(None).class, ErrorClass::Unavailable);
    }
}
