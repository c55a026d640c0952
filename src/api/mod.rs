//! The library API: the one thing every front end (the command line, and next the HTTP and MCP
//! servers) calls. Open a [`Quarry`] over an archive with typed [`Options`], run a query of the
//! language, get a [`QueryStream`] of Arrow record batches with typed metadata ([`ResultMeta`]
//! up front, [`Completion`] when the stream has ended), or collect it into a [`QueryResult`].
//! Every failure is one [`Error`].
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

pub use self::error::{Error, Refusal};
#[cfg(feature = "engine")]
pub use self::stream::{Attachment, QueryResult, QueryStream};
pub use crate::audit::Caller;
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
#[derive(Debug, Clone, Copy, Default)]
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

/// A session over one archive: the query engine with the archive's tables, the language's
/// functions and a memory pool that spills.
pub struct Quarry {
    #[cfg(feature = "engine")]
    engine: crate::engine::Engine,
    #[cfg(not(feature = "engine"))]
    never: std::convert::Infallible,
}

impl Quarry {
    /// Opens the archive of `options` (it must exist; [`Error::MissingArchive`] otherwise).
    pub fn open(options: &Options) -> Result<Quarry, Error> {
        #[cfg(feature = "engine")]
        {
            Ok(Quarry {
                engine: crate::engine::Engine::open(options)?,
            })
        }
        #[cfg(not(feature = "engine"))]
        {
            let _ = options;
            Err(Error::EngineUnavailable)
        }
    }

    /// The engine (exports run in its context).
    #[cfg(feature = "engine")]
    pub(crate) fn engine(&self) -> &crate::engine::Engine {
        &self.engine
    }

    /// The responses this session's queries have left without a cost (`cost_usd` NULL) since
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

    /// The storage this session reads (decided when it was opened).
    pub fn source(&self) -> Source {
        #[cfg(feature = "engine")]
        {
            self.engine.source()
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

    /// Runs a query of the language; its rows stream as they are computed, subject only to the
    /// caller's `caps`.
    pub async fn query(&self, query: &str, caps: Caps) -> Result<QueryStream, Error> {
        #[cfg(feature = "engine")]
        {
            self.engine.query(query, caps).await
        }
        #[cfg(not(feature = "engine"))]
        {
            let _ = (query, caps);
            match self.never {}
        }
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
        #[cfg(feature = "engine")]
        {
            self.engine.sql(sql, caps).await
        }
        #[cfg(not(feature = "engine"))]
        {
            let _ = (sql, caps);
            match self.never {}
        }
    }

    /// Runs a SQL query and collects every row.
    #[cfg(feature = "engine")]
    pub async fn sql_collect(&self, sql: &str, caps: Caps) -> Result<QueryResult, Error> {
        self.sql(sql, caps).await?.collect().await
    }

    /// The scope this session was opened with.
    pub fn scope(&self) -> &Scope {
        #[cfg(feature = "engine")]
        {
            self.engine.scope()
        }
        #[cfg(not(feature = "engine"))]
        match self.never {}
    }

    /// The tables and columns the session's scope may query (a reader scope's catalog holds
    /// nothing else), in name order.
    pub async fn catalog(&self) -> Result<Vec<CatalogTable>, Error> {
        #[cfg(feature = "engine")]
        {
            self.engine.catalog().await
        }
        #[cfg(not(feature = "engine"))]
        match self.never {}
    }

    /// The `limit` most recent audit records, newest first (admin scope only).
    pub fn audit_records(&self, limit: usize) -> Result<Vec<crate::audit::Record>, Error> {
        #[cfg(feature = "engine")]
        {
            if !self.engine.scope().is_admin() {
                return Err(Error::AdminOnly("the audit trail"));
            }
            self.engine
                .audit()
                .recent(limit)
                .map_err(|e| Error::Audit(e.to_string()))
        }
        #[cfg(not(feature = "engine"))]
        {
            let _ = limit;
            match self.never {}
        }
    }

    /// The query's logical and physical plans, as DataFusion prints them (pushdown is visible
    /// there).
    pub async fn explain_plan(&self, query: &str) -> Result<String, Error> {
        #[cfg(feature = "engine")]
        {
            self.engine.explain(query).await
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

/// Runs `future` to completion on a multi-threaded runtime made for it: the way a synchronous
/// caller (the command line, a test) drives the async API. The runtime ends with the call, so
/// consume a [`QueryStream`] inside the same future that made it (as `query_collect` does, or
/// `output::write`); an async caller (a server) awaits the API on its own runtime instead, and
/// must not call this from inside it.
pub fn block_on<F: Future>(future: F) -> Result<F::Output, Error> {
    #[cfg(feature = "engine")]
    {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Execution(format!("cannot start the query runtime: {e}")))?;
        Ok(runtime.block_on(future))
    }
    #[cfg(not(feature = "engine"))]
    {
        drop(future);
        Err(Error::EngineUnavailable)
    }
}
