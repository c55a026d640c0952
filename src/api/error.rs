//! The one error type of the library: every way opening an archive, running a query or writing
//! its answer can fail, each with a stable code (for JSON envelopes and, later, HTTP bodies) and
//! a class a front end maps to an exit code or a status.

use std::path::PathBuf;

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
    /// A query the engine cannot plan.
    #[error("cannot plan the query: {0}")]
    Unplannable(String),
    /// A setting is wrong (a zone, a size, a flag's value).
    #[error("{0}")]
    Setting(String),
    /// There is no archive where one was expected.
    #[error("no archive at {}: run `quarry ingest` first", .0.display())]
    MissingArchive(PathBuf),
    /// The archive could not be opened or read (not an archive, corrupt, unreadable).
    #[error("cannot read the archive {}: {message}", .path.display())]
    Archive {
        /// The archive file.
        path: PathBuf,
        /// What went wrong.
        message: String,
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
    /// This build has no query engine (cargo feature `engine`).
    #[error(
        "this quarry was built without the query engine (cargo feature `engine`); `quarry explain QUERY` shows how a query parses"
    )]
    EngineUnavailable,
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
    /// The audit trail could not record the query's intent, so the query did not run.
    #[error("the query did not run: {0}")]
    Audit(String),
    /// The query ran longer than the caller's time limit and was cancelled (its scans stopped,
    /// its memory released).
    #[error(
        "the query ran longer than the time limit of {} and was cancelled; narrow it (a where, fewer groups or columns) or ask for a longer timeout",
        humanize_duration(*.0)
    )]
    Timeout(std::time::Duration),
    /// Running the query failed (the archive could not be read, ...).
    #[error("{0}")]
    Execution(String),
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
            Error::Unplannable(_) => "unplannable",
            Error::Setting(_) => "invalid_setting",
            Error::MissingArchive(_) => "missing_archive",
            Error::Archive { .. } => "archive_unreadable",
            Error::MemoryLimit(_) => "memory_limit",
            Error::NotStreamable(_) => "not_streamable",
            Error::Write { .. } => "write_failed",
            Error::EngineUnavailable => "engine_unavailable",
            Error::NoSnapshot(_) => "no_snapshot",
            Error::StaleSnapshot { .. } => "stale_snapshot",
            Error::Snapshot(_) => "snapshot_failed",
            Error::SqlRefused { .. } => "sql_refused",
            Error::Scope(_) => "invalid_scope",
            Error::AdminOnly(_) => "admin_only",
            Error::Audit(_) => "audit_failed",
            Error::Timeout(_) => "timeout",
            Error::Execution(_) => "execution_failed",
        }
    }

    /// Whether the caller asked for something wrong (a query, a setting, a format): exit code
    /// 2 on the command line, a 4xx status over HTTP. Anything else failed while running.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::Query(_)
                | Error::EmbeddingsUnavailable
                | Error::LaneUnavailable(_)
                | Error::Unplannable(_)
                | Error::Setting(_)
                | Error::NotStreamable(_)
                | Error::EngineUnavailable
                | Error::NoSnapshot(_)
                | Error::StaleSnapshot { .. }
                | Error::SqlRefused { .. }
                | Error::Scope(_)
                | Error::AdminOnly(_)
        )
    }

    /// The error as a list of diagnostics, the JSON every surface reports: a query's own
    /// diagnostics (with spans, columns and corrections), a SQL refusal with its kind, anything
    /// else as `{code, message}`.
    pub fn diagnostics_json(&self) -> serde_json::Value {
        match self {
            Error::Query(diagnostics) => {
                serde_json::to_value(&diagnostics.diagnostics).unwrap_or_default()
            }
            Error::SqlRefused { refusal, message } => serde_json::json!([
                {"code": self.code(), "refusal": refusal, "message": message}
            ]),
            _ => serde_json::json!([{"code": self.code(), "message": self.to_string()}]),
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
