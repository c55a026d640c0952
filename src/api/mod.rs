//! The library API: the one thing every front end (the command line, the HTTP and MCP servers)
//! calls. Open a [`Quarry`] over an archive with typed [`Options`] once per process, open a
//! [`Session`] per request (a scope and a caller; cheap), run a [`Request`] in either language,
//! get a [`QueryStream`] of Arrow record batches with typed metadata ([`ResultMeta`] up front,
//! [`Completion`] when the stream has ended), or collect it into a [`QueryResult`]. Every
//! failure is one [`Error`] of one [`ErrorClass`].
//!
//! No type of clap, tokio or DataFusion appears here, except Arrow's ([`crate::arrow`]).
//!
//! ```no_run
//! # #[cfg(feature = "engine")]
//! # fn main() -> Result<(), quarry::Error> {
//! use quarry::{Caps, Options, Quarry};
//!
//! let quarry = Quarry::open(&Options::new("archive.db"))?;
//! let answer = quarry::block_on(
//!     quarry.query_collect("messages | group by role | agg count, p90:word_count", Caps::default()),
//! )??;
//! println!("{} groups over {:?} messages", answer.num_rows(), answer.input_rows);
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "engine"))]
//! # fn main() {}
//! ```

mod error;
#[cfg(feature = "engine")]
mod stream;

use std::future::Future;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use self::error::{BoxError, Error, ErrorBody, ErrorClass, Refusal};
#[cfg(feature = "engine")]
pub use self::stream::{Attachment, QueryResult, QueryStream};
pub use crate::audit::{Caller, Language};
pub use crate::scope::{ReaderScope, Scope};
pub use quarry_grammar::resolve::Semantics;

/// How a [`Quarry`] is opened.
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
        }
    }
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

/// The storage an answer was read from (the envelope's `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The SQLite archive.
    Sqlite,
    /// The columnar snapshot.
    Snapshot,
}

impl Source {
    /// The name the envelope shows.
    pub fn name(self) -> &'static str {
        match self {
            Source::Sqlite => "sqlite",
            Source::Snapshot => "snapshot",
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

/// What is known of an answer before its first row.
#[derive(Debug, Clone, Serialize)]
pub struct ResultMeta {
    /// The unit the rows come from (`messages`, `observed-events`, ...).
    pub unit: String,
    /// What kind of answer it is (exhaustive rows, top-k, aggregate, ...).
    pub semantics: Semantics,
    /// Whether the answer is exact: always, since quarry never samples.
    pub exact: bool,
    /// The storage the rows are read from.
    pub source: Source,
    /// The archive's generation when the query was planned.
    pub generation: i64,
    /// Partitions skipped because they could not be read (none: a failure fails the query).
    pub skipped_partitions: u64,
    /// Whether the rows are groups of an aggregate (so `input_rows` will be known at the end).
    pub aggregate: bool,
}

/// Responses of one model a query left without a cost (`usage.cost_usd` NULL), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnpricedModel {
    /// The model as `usage.model` holds it (`(none)` when NULL).
    pub model: String,
    /// Why: `no price` for the model at that time, or `no <kind> price` for one kind of its
    /// tokens.
    pub reason: String,
    /// Distinct responses.
    pub responses: u64,
}

/// What is known of an answer once its stream has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Completion {
    /// Rows the stream produced.
    pub rows: usize,
    /// Rows the aggregate reduced (aggregate queries).
    pub input_rows: Option<u64>,
    /// Whether a cap the caller set cut the rows.
    pub truncated: bool,
}

/// A table of a session's catalog, as [`Quarry::catalog`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogTable {
    /// Its name, as both languages' queries name it.
    pub name: String,
    /// What a row is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its columns, in order.
    pub columns: Vec<CatalogColumn>,
}

/// A column of a [`CatalogTable`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogColumn {
    /// Its name.
    pub name: String,
    /// Its type, as the envelope names types (integer, number, boolean, string, timestamp).
    #[serde(rename = "type")]
    pub ty: String,
    /// Whether it may be NULL.
    pub nullable: bool,
    /// What it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A long-lived engine over one archive: open it once per process and ask it as often as
/// needed. It holds one query runtime and memory pool for every query, the language's
/// functions, and the archive's tables as of its latest generation (refreshed when an ingest
/// moves it on). Cloning is cheap and shares the engine.
///
/// Each request runs in a [`Session`] of one scope and caller ([`Quarry::session`]); the
/// methods here (`query`, `sql`, ...) use a session of the scope and caller of the [`Options`]
/// it was opened with.
#[derive(Clone)]
pub struct Quarry {
    #[cfg(feature = "engine")]
    engine: std::sync::Arc<crate::engine::Engine>,
    #[cfg(not(feature = "engine"))]
    never: std::convert::Infallible,
}

/// One request's session: a scope and a caller over the engine's tables (cheap to make; see
/// [`Quarry::session`]).
#[cfg(feature = "engine")]
pub use crate::engine::Session;

/// One request's session (this build has no engine, so there is never one).
#[cfg(not(feature = "engine"))]
pub enum Session {}

/// One question, in either language, with the caps and the time limit of the caller: what
/// [`Session::run`] answers.
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
}

impl Request {
    /// A query of the language, uncapped, with no time limit.
    pub fn query(text: impl Into<String>) -> Request {
        Request {
            language: Language::Query,
            text: text.into(),
            caps: Caps::default(),
            timeout: None,
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
}

/// When a request's time is up, and how long it was given.
#[cfg(feature = "engine")]
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    /// When the request must have ended.
    pub at: tokio::time::Instant,
    /// The limit it was given (what the timeout error says).
    pub limit: std::time::Duration,
}

#[cfg(feature = "engine")]
impl Deadline {
    /// A deadline `limit` from now.
    pub fn after(limit: std::time::Duration) -> Deadline {
        Deadline {
            at: tokio::time::Instant::now() + limit,
            limit,
        }
    }
}

impl Quarry {
    /// Opens the engine over the archive of `options` (it must exist; [`Error::MissingArchive`]
    /// otherwise) and readies the tables of its scope, so a wrong setting (a missing or stale
    /// snapshot under `--source snapshot`, an unreadable archive) fails here.
    pub fn open(options: &Options) -> Result<Quarry, Error> {
        #[cfg(feature = "engine")]
        {
            let quarry = Quarry {
                engine: std::sync::Arc::new(crate::engine::Engine::open(options)?),
            };
            run_aside(quarry.default_session())?;
            Ok(quarry)
        }
        #[cfg(not(feature = "engine"))]
        {
            let _ = options;
            Err(Error::EngineUnavailable)
        }
    }

    /// A session under `scope` for `caller`, over the archive as it is now: a session ingested
    /// since the last one is seen; nothing is read again when nothing changed.
    pub async fn session(&self, scope: Scope, caller: Caller) -> Result<Session, Error> {
        #[cfg(feature = "engine")]
        {
            self.engine.session(scope, caller).await
        }
        #[cfg(not(feature = "engine"))]
        {
            let _ = (scope, caller);
            match self.never {}
        }
    }

    /// A session of the scope and caller the engine was opened with.
    pub async fn default_session(&self) -> Result<Session, Error> {
        #[cfg(feature = "engine")]
        {
            let options = self.engine.options();
            self.session(options.scope.clone(), options.caller.clone())
                .await
        }
        #[cfg(not(feature = "engine"))]
        match self.never {}
    }

    /// The responses the engine's queries have left without a cost (`cost_usd` NULL) since
    /// the last call, by model, most first; the tally then starts again. With several queries
    /// running at once it is theirs together.
    pub fn take_unpriced(&self) -> Vec<UnpricedModel> {
        #[cfg(feature = "engine")]
        {
            self.engine.take_unpriced()
        }
        #[cfg(not(feature = "engine"))]
        match self.never {}
    }

    /// The storage the archive's current tables are read from.
    pub fn source(&self) -> Source {
        #[cfg(feature = "engine")]
        {
            self.engine.source().unwrap_or(Source::Sqlite)
        }
        #[cfg(not(feature = "engine"))]
        match self.never {}
    }

    /// The archive file.
    pub fn archive(&self) -> &Path {
        #[cfg(feature = "engine")]
        {
            self.engine.path()
        }
        #[cfg(not(feature = "engine"))]
        match self.never {}
    }

    /// The scope of the default session.
    pub fn scope(&self) -> &Scope {
        #[cfg(feature = "engine")]
        {
            &self.engine.options().scope
        }
        #[cfg(not(feature = "engine"))]
        match self.never {}
    }

    /// Runs `request` in the default session (see [`Session::run`]).
    pub async fn run(&self, request: &Request) -> Result<QueryStream, Error> {
        #[cfg(feature = "engine")]
        {
            self.default_session().await?.run(request).await
        }
        #[cfg(not(feature = "engine"))]
        {
            let _ = request;
            match self.never {}
        }
    }

    /// Runs a query of the language; its rows stream as they are computed, subject only to the
    /// caller's `caps`.
    pub async fn query(&self, query: &str, caps: Caps) -> Result<QueryStream, Error> {
        self.run(&Request::query(query).with_caps(caps)).await
    }

    /// Runs a query and collects every row (and any attached rows of `with` projections).
    #[cfg(feature = "engine")]
    pub async fn query_collect(&self, query: &str, caps: Caps) -> Result<QueryResult, Error> {
        self.query(query, caps).await?.collect().await
    }

    /// Runs one read-only SQL query over the same catalog (the scope's), checked by its type
    /// before planning: anything but a single query is [`Error::SqlRefused`]. Its rows stream
    /// as they are computed, subject only to the caller's `caps`.
    pub async fn sql(&self, sql: &str, caps: Caps) -> Result<QueryStream, Error> {
        self.run(&Request::sql(sql).with_caps(caps)).await
    }

    /// Runs a SQL query and collects every row.
    #[cfg(feature = "engine")]
    pub async fn sql_collect(&self, sql: &str, caps: Caps) -> Result<QueryResult, Error> {
        self.sql(sql, caps).await?.collect().await
    }

    /// The tables and columns the default session's scope may query (a reader scope's catalog
    /// holds nothing else), in name order.
    pub async fn catalog(&self) -> Result<Vec<CatalogTable>, Error> {
        #[cfg(feature = "engine")]
        {
            Ok(self.default_session().await?.catalog())
        }
        #[cfg(not(feature = "engine"))]
        match self.never {}
    }

    /// The `limit` most recent audit records, newest first (admin scope only).
    pub fn audit_records(&self, limit: usize) -> Result<Vec<crate::audit::Record>, Error> {
        #[cfg(feature = "engine")]
        {
            if !self.scope().is_admin() {
                return Err(Error::AdminOnly("the audit trail"));
            }
            self.engine.audit().recent(limit).map_err(Error::Audit)
        }
        #[cfg(not(feature = "engine"))]
        {
            let _ = limit;
            match self.never {}
        }
    }

    /// The `limit` most recent requests that ran no query, and rows of anonymous refusals,
    /// newest first (admin scope only).
    #[allow(clippy::type_complexity)]
    pub fn audit_requests(
        &self,
        limit: usize,
    ) -> Result<(Vec<crate::audit::RequestRow>, Vec<crate::audit::RefusalRow>), Error> {
        #[cfg(feature = "engine")]
        {
            if !self.scope().is_admin() {
                return Err(Error::AdminOnly("the audit trail"));
            }
            let audit = self.engine.audit();
            Ok((
                audit.recent_requests(limit).map_err(Error::Audit)?,
                audit.recent_refusals(limit).map_err(Error::Audit)?,
            ))
        }
        #[cfg(not(feature = "engine"))]
        {
            let _ = limit;
            match self.never {}
        }
    }

    /// The audit trail of the archive.
    #[cfg(feature = "engine")]
    pub(crate) fn audit(&self) -> &crate::audit::AuditLog {
        self.engine.audit()
    }

    /// The query's logical and physical plans, as DataFusion prints them (pushdown is visible
    /// there).
    pub async fn explain_plan(&self, query: &str) -> Result<String, Error> {
        #[cfg(feature = "engine")]
        {
            self.default_session().await?.explain(query).await
        }
        #[cfg(not(feature = "engine"))]
        {
            let _ = query;
            match self.never {}
        }
    }
}

/// A query's answer as it streams (this build has no engine, so there is never one).
#[cfg(not(feature = "engine"))]
pub struct QueryStream {
    never: std::convert::Infallible,
}

#[cfg(not(feature = "engine"))]
impl QueryStream {
    /// What is known of the answer before its first row.
    pub fn meta(&self) -> &ResultMeta {
        match self.never {}
    }

    /// Never returns: there is no stream in a build without the engine.
    pub(crate) fn unreachable(&self) -> ! {
        match self.never {}
    }
}

/// The process's one query runtime (multi-threaded), made on first use.
#[cfg(feature = "engine")]
fn runtime() -> Result<&'static tokio::runtime::Runtime, Error> {
    static RUNTIME: std::sync::OnceLock<Result<tokio::runtime::Runtime, String>> =
        std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("quarry")
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::failed(format!("cannot start the query runtime: {e}")))
}

/// Runs `future` to completion on the process's one query runtime: the way a synchronous
/// caller (the command line, a test) drives the async API. Consume a [`QueryStream`] inside
/// the same future that made it (as `query_collect` does, or `output::write`). An async caller
/// (a server) awaits the API on its own runtime instead, and must not call this from inside
/// one.
pub fn block_on<F: Future>(future: F) -> Result<F::Output, Error> {
    #[cfg(feature = "engine")]
    {
        Ok(runtime()?.block_on(future))
    }
    #[cfg(not(feature = "engine"))]
    {
        drop(future);
        Err(Error::EngineUnavailable)
    }
}

/// Runs `future` on the process's runtime from a thread of its own, so a synchronous call
/// (opening an engine) works from any context, inside an async runtime too.
#[cfg(feature = "engine")]
fn run_aside<T: Send>(future: impl Future<Output = Result<T, Error>> + Send) -> Result<T, Error> {
    let runtime = runtime()?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| runtime.block_on(future))
            .join()
            .map_err(|_| Error::Internal("opening the archive panicked".into()))?
    })
}
