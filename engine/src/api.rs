//! The library API: the one thing every front end (the command line, the HTTP and MCP servers)
//! calls. Open a [`Quarry`] over an archive with typed [`Options`] once per process, open a
//! [`Session`] per request (a scope and a caller; cheap), run a [`Request`] in either language,
//! get a [`QueryStream`] of Arrow record batches with typed metadata ([`ResultMeta`] up front,
//! [`Completion`] when the stream has ended), or collect it into a [`QueryResult`]. Every
//! failure is one [`Error`] of one [`ErrorClass`](crate::ErrorClass).
//!
//! No type of clap, tokio or DataFusion appears here, except Arrow's ([`crate::arrow`]).
//!
//! ```no_run
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
//! ```

use std::future::Future;
use std::path::Path;

use crate::answer::{CatalogTable, LogicalPlans, QueryResult, QueryStream, Source, UnpricedModel};
use crate::audit::Caller;
use crate::engine::Engine;
use crate::error::Error;
use crate::request::{Caps, Options, Request};
use crate::scope::Scope;

pub use crate::engine::Session;

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
    engine: std::sync::Arc<Engine>,
}

impl Quarry {
    /// Opens the engine over the archive of `options` (it must exist; [`Error::MissingArchive`]
    /// otherwise) and readies the tables of its scope, so a wrong setting (a missing or stale
    /// snapshot under `--source snapshot`, an unreadable archive) fails here.
    pub fn open(options: &Options) -> Result<Quarry, Error> {
        let quarry = Quarry {
            engine: std::sync::Arc::new(
                Engine::open(options)?
                    .with_ranker(std::sync::Arc::new(crate::search::SearchRanker)),
            ),
        };
        run_aside(quarry.default_session())?;
        Ok(quarry)
    }

    /// A session under `scope` for `caller`, over the archive as it is now: a session ingested
    /// since the last one is seen; nothing is read again when nothing changed.
    pub async fn session(&self, scope: Scope, caller: Caller) -> Result<Session, Error> {
        self.engine.session(scope, caller).await
    }

    /// A session of the scope and caller the engine was opened with.
    pub async fn default_session(&self) -> Result<Session, Error> {
        let options = self.engine.options();
        self.session(options.scope.clone(), options.caller.clone())
            .await
    }

    /// The responses the engine's queries have left without a cost (`cost_usd` NULL) since
    /// the last call, by model, most first; the tally then starts again. With several queries
    /// running at once it is theirs together.
    pub fn take_unpriced(&self) -> Vec<UnpricedModel> {
        self.engine.take_unpriced()
    }

    /// The storage the archive's current tables are read from.
    pub fn source(&self) -> Source {
        self.engine.source().unwrap_or(Source::Sqlite)
    }

    /// The archive's generation now (one read of a kept connection: cheap to ask often).
    pub fn archive_generation(&self) -> Result<i64, Error> {
        self.engine.archive_generation()
    }

    /// The archive file.
    pub fn archive(&self) -> &Path {
        self.engine.path()
    }

    /// The scope of the default session.
    pub fn scope(&self) -> &Scope {
        &self.engine.options().scope
    }

    /// Runs `request` in the default session (see [`Session::run`]).
    pub async fn run(&self, request: &Request) -> Result<QueryStream, Error> {
        self.default_session().await?.run(request).await
    }

    /// Runs a query of the language; its rows stream as they are computed, subject only to the
    /// caller's `caps`.
    pub async fn query(&self, query: &str, caps: Caps) -> Result<QueryStream, Error> {
        self.run(&Request::query(query).with_caps(caps)).await
    }

    /// Runs a query and collects every row (and any attached rows of `with` projections).
    pub async fn query_collect(&self, query: &str, caps: Caps) -> Result<QueryResult, Error> {
        self.query(query, caps).await?.collect().await
    }

    /// Runs a ranked full-text search (see [`crate::search`]) in a session of the options'
    /// scope and caller.
    pub async fn search(
        &self,
        request: &crate::search::SearchRequest,
    ) -> Result<crate::search::SearchEnvelope, Error> {
        crate::search::search(&self.default_session().await?, request).await
    }

    /// Readies what a long-lived server's searches read (the row directory of the archive's
    /// current generation, [`crate::search::directory`]) and lets later searches rebuild it
    /// when an ingest moves the generation on. It reads the archive once (a second or so per
    /// million blocks): call it on a thread of its own at start. A one-shot command does not:
    /// searches are exact without it. Returns the blocks it holds (`None`: another call is
    /// building it).
    pub fn prepare_search(&self) -> Result<Option<usize>, Error> {
        crate::search::directory::prepare(&self.engine)
            .map_err(|e| Error::archive(self.archive(), e))
    }

    /// The row directory searches read now, if one was built: the generation it was read at,
    /// the blocks it holds, and the searches answered through it so far.
    pub fn search_directory(&self) -> Option<(i64, usize, u64)> {
        crate::search::directory::status(&self.engine)
    }

    /// Reads what a ref names (see [`crate::read`]) in a session of the options' scope and
    /// caller.
    pub async fn read(
        &self,
        request: &crate::read::ReadRequest,
    ) -> Result<crate::read::ReadAnswer, Error> {
        crate::read::read(&self.default_session().await?, request).await
    }

    /// A window of a session's source records around one: [`Quarry::read`] of a window.
    pub async fn read_window(
        &self,
        request: &crate::read::WindowRequest,
    ) -> Result<crate::read::EventWindow, Error> {
        crate::read::window(&self.default_session().await?, request).await
    }

    /// The lineage of the session `reference` names: [`Quarry::read`] of a lineage.
    pub async fn lineage(&self, reference: &str) -> Result<crate::read::LineageTrace, Error> {
        crate::read::lineage(&self.default_session().await?, reference).await
    }

    /// Counts facets (see [`crate::facets`]) in a session of the options' scope and caller.
    pub async fn facets(
        &self,
        request: &crate::facets::FacetsRequest,
    ) -> Result<crate::facets::Facets, Error> {
        crate::facets::facets(&self.default_session().await?, request).await
    }

    /// Runs one read-only SQL query over the same catalog (the scope's), checked by its type
    /// before planning: anything but a single query is [`Error::SqlRefused`]. Its rows stream
    /// as they are computed, subject only to the caller's `caps`.
    pub async fn sql(&self, sql: &str, caps: Caps) -> Result<QueryStream, Error> {
        self.run(&Request::sql(sql).with_caps(caps)).await
    }

    /// Runs a SQL query and collects every row.
    pub async fn sql_collect(&self, sql: &str, caps: Caps) -> Result<QueryResult, Error> {
        self.sql(sql, caps).await?.collect().await
    }

    /// The tables and columns the default session's scope may query (a reader scope's catalog
    /// holds nothing else), in name order.
    pub async fn catalog(&self) -> Result<Vec<CatalogTable>, Error> {
        Ok(self.default_session().await?.catalog())
    }

    /// The `limit` most recent audit records, newest first (admin scope only).
    pub fn audit_records(&self, limit: usize) -> Result<Vec<crate::audit::Record>, Error> {
        if !self.scope().is_admin() {
            return Err(Error::AdminOnly("the audit trail"));
        }
        self.engine.audit().recent(limit).map_err(Error::Audit)
    }

    /// The `limit` most recent requests that ran no query, and rows of anonymous refusals,
    /// newest first (admin scope only).
    #[allow(clippy::type_complexity)]
    pub fn audit_requests(
        &self,
        limit: usize,
    ) -> Result<(Vec<crate::audit::RequestRow>, Vec<crate::audit::RefusalRow>), Error> {
        if !self.scope().is_admin() {
            return Err(Error::AdminOnly("the audit trail"));
        }
        let audit = self.engine.audit();
        Ok((
            audit.recent_requests(limit).map_err(Error::Audit)?,
            audit.recent_refusals(limit).map_err(Error::Audit)?,
        ))
    }

    /// The audit trail of the archive.
    pub fn audit(&self) -> &crate::audit::AuditLog {
        self.engine.audit()
    }

    /// The query's logical plan as lowered and as optimized (admin scope only).
    pub async fn logical_plans(&self, query: &str) -> Result<LogicalPlans, Error> {
        self.default_session().await?.logical_plans(query).await
    }

    /// The query's logical and physical plans, as DataFusion prints them (pushdown is visible
    /// there).
    pub async fn explain_plan(&self, query: &str) -> Result<String, Error> {
        self.default_session().await?.explain(query).await
    }
}

/// The process's one query runtime (multi-threaded), made on first use.
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
    Ok(runtime()?.block_on(future))
}

/// Runs `future` on the process's runtime from a thread of its own, so a synchronous call
/// (opening an engine) works from any context, inside an async runtime too.
fn run_aside<T: Send>(future: impl Future<Output = Result<T, Error>> + Send) -> Result<T, Error> {
    let runtime = runtime()?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| runtime.block_on(future))
            .join()
            .map_err(|_| Error::Internal("opening the archive panicked".into()))?
    })
}
