//! The engine behind the library API: one long-lived [`Engine`] per archive and process, and a
//! cheap [`Session`] per request.
//!
//! The engine is built once: one DataFusion runtime (one fair spill pool shared by every
//! running query, one disk manager), the language's functions registered once, the planner that
//! knows [`count::CountRows`], the price table. What depends on the archive's contents is kept
//! per archive generation and refreshed when the generation moves: the chosen storage and its
//! providers, the admin scope's view ([`view::Catalog`]), and each reader scope's view
//! ([`scope::Readers`], refreshed partition by partition). A session is a clone of its scope's
//! session state over those shared providers; nothing is read from the archive when nothing
//! changed, and every request still computes its own answer (there is no result cache).
//!
//! Every table reference is scanned once: an aggregate's `input_rows` is counted as its input
//! flows.

mod cost;
mod count;
mod interrupt;
mod memo;
mod scope;
pub mod source;
mod sql;
mod topk;
mod unit_rows;
mod view;
mod yields;

use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::DataFusionError;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::context::SessionState;
use datafusion::execution::memory_pool::{FairSpillPool, TrackConsumersPool};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};

use self::count::{CountRows, QuarryQueryPlanner};
pub(crate) use self::interrupt::Interrupt;
use self::view::{Catalog, Stamp, View, Watch};
pub(crate) use self::view::{file_identity, read_only};
use crate::answer::page::{At, PageCursor, Pager};
use crate::answer::{Attached, LogicalPlans, QueryStream, ResultMeta, RowCounter, Source};
use crate::audit::{AuditLog, Caller, Language, Outcome, Ticket};
use crate::error::{Error, engine_error};
use crate::lower::clock::{Clock, ClockError};
use crate::lower::keyset::Keyset;
use crate::lower::tables::Tables;
use crate::lower::{LowerError, lower};
use crate::request::{Caps, Deadline, Options, Request};
use crate::scope::Scope;

/// How long `--source auto`, having fallen back to the archive, trusts that no fresh snapshot
/// appeared at the same generation before it looks again.
const SNAPSHOT_RECHECK: Duration = Duration::from_secs(1);

fn lower_error(e: LowerError) -> Error {
    match e {
        LowerError::EmbeddingsUnavailable => Error::EmbeddingsUnavailable,
        LowerError::LaneUnavailable(lane) => Error::LaneUnavailable(lane),
        LowerError::Plan(message) => Error::Unplannable(message),
        LowerError::Cursor(message) => Error::InvalidCursor(message),
        LowerError::DataFusion(e) => Error::Unplannable(e.to_string()),
    }
}

fn clock_error(e: ClockError) -> Error {
    Error::Setting(e.0)
}

/// Runs blocking work (SQLite reads) off the async workers when there are any.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle
            .spawn_blocking(work)
            .await
            .map_err(|e| Error::Internal(format!("a blocking task failed: {e}")))?,
        Err(_) => work(),
    }
}

/// The long-lived engine over one archive (see the module docs).
pub struct Engine {
    options: Options,
    template: SessionState,
    pricing: Arc<cost::Pricing>,
    audit: AuditLog,
    watch: Watch,
    catalog: tokio::sync::Mutex<Current>,
    /// The storage of the catalog last opened (readable without waiting for a refresh).
    source: std::sync::Mutex<Option<Source>>,
    readers: tokio::sync::Mutex<scope::Readers>,
    /// Values derived per generation (search statistics, ...).
    memo: memo::Memo,
    /// What answers the language's ranked form (the search, a layer above the engine).
    ranker: Option<Arc<dyn Ranker>>,
}

/// Answers a query in the language's ranked form (`quarry_grammar::ranked`): its page of
/// ranked sessions as rows, and the generation the ranking is as of. The search implements
/// it; the engine calls it without depending on the search.
pub(crate) trait Ranker: Send + Sync {
    /// `limit` sessions of `form` in `session`'s scope, best first.
    fn rank<'a>(
        &'a self,
        session: &'a Session,
        form: &'a quarry_grammar::ranked::RankedForm,
        limit: usize,
    ) -> futures::future::BoxFuture<'a, Result<(RecordBatch, i64), Error>>;
}

/// The catalog of the generation last seen.
#[derive(Default)]
struct Current {
    catalog: Option<Arc<Catalog>>,
    /// When a fallen-back catalog last looked for a fresh snapshot.
    checked: Option<Instant>,
}

impl Engine {
    /// An engine over the archive of `options` (which must exist). Opening reads only the
    /// archive's generation; the tables are opened by the first session.
    pub fn open(options: &Options) -> Result<Self, Error> {
        let path = &options.archive;
        if !path.exists() {
            return Err(Error::MissingArchive(path.clone()));
        }
        let watch = Watch::new(path);
        // Fails early on a file that is not an archive.
        watch.stamp()?;
        // Fails early on a wrong zone.
        Clock::from_env(options.tz.as_deref()).map_err(clock_error)?;
        let mut runtime = RuntimeEnvBuilder::new();
        if let Some(limit) = options.memory_limit {
            // One fair pool for every query of the process: spilling operators (sorts,
            // aggregates) share what the others leave, so one sort cannot starve the merge
            // that follows it, nor one query the others; errors name the top consumers.
            let pool = TrackConsumersPool::new(
                FairSpillPool::new(limit),
                NonZeroUsize::new(5).unwrap_or(NonZeroUsize::MIN),
            );
            runtime = runtime.with_memory_pool(Arc::new(pool));
        }
        let state = SessionStateBuilder::new()
            .with_config(SessionConfig::new().with_information_schema(true))
            .with_runtime_env(runtime.build_arc().map_err(engine_error)?)
            .with_default_features()
            .with_query_planner(Arc::new(QuarryQueryPlanner))
            .with_physical_optimizer_rule(Arc::new(yields::YieldingJoins))
            .build();
        let ctx = SessionContext::new_with_state(state);
        quarry_udf::functions::register_all(&ctx);
        let template = ctx.state();
        let prices = crate::prices::PriceTable::load(options.prices.as_deref())
            .map_err(|e| Error::Setting(e.to_string()))?;
        let pricing = Arc::new(cost::Pricing::new(prices));
        let audit = AuditLog::at(
            options
                .audit_file
                .clone()
                .unwrap_or_else(|| crate::audit::default_audit_file(path)),
        );
        Ok(Engine {
            options: options.clone(),
            template,
            pricing,
            audit,
            watch,
            catalog: tokio::sync::Mutex::new(Current::default()),
            source: std::sync::Mutex::new(None),
            readers: tokio::sync::Mutex::new(scope::Readers::default()),
            memo: memo::Memo::default(),
            ranker: None,
        })
    }

    /// The same engine, answering the language's ranked form with `ranker`.
    pub(crate) fn with_ranker(mut self, ranker: Arc<dyn Ranker>) -> Self {
        self.ranker = Some(ranker);
        self
    }

    /// The responses its queries have left without a cost since the last call (see
    /// [`cost::Pricing::take_unpriced`]).
    pub fn take_unpriced(&self) -> Vec<crate::answer::UnpricedModel> {
        self.pricing.take_unpriced()
    }

    /// The audit trail of this archive.
    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    /// Values derived from the archive per generation.
    pub(crate) fn memo(&self) -> &memo::Memo {
        &self.memo
    }

    /// The messages no reader sees, as of the last reader view built (`None` before one).
    pub(crate) async fn hidden_messages(&self) -> Option<Arc<quarry_udf::functions::MemberSet>> {
        self.readers.lock().await.hidden()
    }

    /// The archive file.
    pub fn path(&self) -> &Path {
        &self.options.archive
    }

    /// The options it was opened with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The storage the current generation's catalog reads (`None` before the first session).
    pub fn source(&self) -> Option<Source> {
        *self.source.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A session under `scope` for `caller`: its scope's view as of the archive's generation
    /// now (brought up to date first when the generation moved).
    pub async fn session(self: &Arc<Self>, scope: Scope, caller: Caller) -> Result<Session, Error> {
        let catalog = self.catalog().await?;
        let view = match &scope {
            Scope::Admin => catalog.admin.clone(),
            Scope::Reader(reader) => {
                let parts = scope::Parts {
                    archive: &self.options.archive,
                    template: &self.template,
                    pricing: &self.pricing,
                };
                self.readers
                    .lock()
                    .await
                    .view(reader, &catalog, &parts)
                    .await?
            }
        };
        Session::new(self.clone(), view, scope, caller)
    }

    /// The catalog of the archive's generation now.
    async fn catalog(&self) -> Result<Arc<Catalog>, Error> {
        let stamp = self.watch.stamp()?;
        let mut current = self.catalog.lock().await;
        if let Some(catalog) = current.catalog.clone()
            && catalog.stamp == stamp
        {
            let recheck = catalog.chosen.fell_back
                && current
                    .checked
                    .is_none_or(|at| at.elapsed() >= SNAPSHOT_RECHECK);
            if !recheck {
                return Ok(catalog);
            }
            current.checked = Some(Instant::now());
            if !self.fresh_snapshot(stamp).await {
                return Ok(catalog);
            }
        }
        let catalog = Arc::new(self.open_catalog(stamp).await?);
        *self.source.lock().unwrap_or_else(|p| p.into_inner()) = Some(catalog.chosen.source);
        current.catalog = Some(catalog.clone());
        current.checked = Some(Instant::now());
        Ok(catalog)
    }

    /// Whether a snapshot as of `stamp`'s generation exists now.
    async fn fresh_snapshot(&self, stamp: Stamp) -> bool {
        let Ok(root) = source::snapshot_location(&self.options) else {
            return false;
        };
        matches!(
            quarry_providers::snapshot::manifest::read(&root).await,
            Ok(Some(m)) if m.generation == stamp.generation
                && m.schema_version == quarry_archive::SCHEMA_VERSION
        )
    }

    /// Opens the tables of the archive as of `stamp`.
    async fn open_catalog(&self, stamp: Stamp) -> Result<Catalog, Error> {
        let (chosen, stored) =
            source::open(&self.options, stamp.generation, self.template.runtime_env()).await?;
        let admin = cost::priced(stored.clone(), &self.pricing)
            .and_then(unit_rows::with_unit_columns)
            .map_err(engine_error)?;
        let admin = Arc::new(View::new(&self.template, admin, &chosen)?);
        Ok(Catalog {
            stamp,
            chosen,
            stored,
            admin,
        })
    }

    /// The archive's generation now.
    fn generation(&self) -> Result<i64, Error> {
        Ok(self.watch.stamp()?.generation)
    }

    /// The archive's generation now (for the library API).
    pub(crate) fn archive_generation(&self) -> Result<i64, Error> {
        self.generation()
    }
}

/// One request's session: its scope's view, a DataFusion context cloned from it, the clock of
/// the request, and who asks.
pub struct Session {
    engine: Arc<Engine>,
    view: Arc<View>,
    ctx: SessionContext,
    clock: Clock,
    scope: Scope,
    caller: Caller,
}

impl Session {
    fn new(
        engine: Arc<Engine>,
        view: Arc<View>,
        scope: Scope,
        caller: Caller,
    ) -> Result<Self, Error> {
        let clock = Clock::from_env(engine.options.tz.as_deref()).map_err(clock_error)?;
        Ok(Session {
            ctx: SessionContext::new_with_state(view.state().clone()),
            engine,
            view,
            clock,
            scope,
            caller,
        })
    }

    /// The same session with its day boundaries and time buckets in `tz` (`UTC`, `local`, an
    /// offset like `+02:00` or an IANA name like `Europe/Warsaw`); `None` keeps the engine's
    /// zone. A zone it cannot read is [`Error::BadRequest`].
    pub fn in_zone(mut self, tz: Option<&str>) -> Result<Session, Error> {
        if let Some(tz) = tz {
            self.clock = Clock::from_env(Some(tz)).map_err(|e| Error::BadRequest(e.0))?;
        }
        Ok(self)
    }

    /// The scope the session was opened with.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// Who asks.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The engine it belongs to.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The storage the session reads.
    pub fn source(&self) -> Source {
        self.view.chosen().source
    }

    /// The clock its relative dates and time buckets are read with.
    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The session's DataFusion context (exports run their plans in it).
    pub(crate) fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// Records the intent to run `text`: the query may run only when this succeeds.
    pub(crate) fn intend(&self, language: Language, text: &str) -> Result<Ticket, Error> {
        self.engine
            .audit
            .intend(&self.caller, self.scope.name(), language, text)
            .map_err(Error::Audit)
    }

    /// Parses, resolves and lowers `query`: the plan of its rows (an aggregate's input counted
    /// on the way), what the answer is, and the plans of attached rows.
    async fn plan(&self, query: &str) -> Result<Planned, Error> {
        self.plan_paged(query, None).await
    }

    /// As [`Session::plan`], in keyset order when `keyset` is given and the query returns rows
    /// of a unit with a primary key (`Planned::keyset`).
    async fn plan_paged(&self, query: &str, keyset: Option<&Keyset>) -> Result<Planned, Error> {
        let parsed = quarry_grammar::parse(query).map_err(Error::Query)?;
        let resolved = quarry_grammar::resolve(query, &parsed).map_err(Error::Query)?;
        if let Some(form) = quarry_grammar::ranked::ranked_form(query, &parsed) {
            // Boxed: the search plans its filter with this very function.
            return Box::pin(self.plan_ranked(&form, &resolved)).await;
        }
        let tables = Tables::from_providers(self.view.tables());
        let lowered = lower(
            &resolved,
            &tables,
            &self.clock,
            self.engine.options.planted,
            keyset,
        )
        .map_err(lower_error)?;
        let keyset = lowered.keyset;
        let (plan, counter) = if lowered.aggregated {
            let counter = RowCounter::default();
            let plan = count_aggregate_input(lowered.plan, &counter).map_err(engine_error)?;
            (plan, Some(counter))
        } else {
            (lowered.plan, None)
        };
        let meta = ResultMeta {
            unit: resolved.unit_source.to_string(),
            semantics: resolved.semantics,
            exact: true,
            source: self.source(),
            generation: self.generation()?,
            skipped_partitions: 0,
            aggregate: counter.is_some(),
        };
        Ok(Planned {
            plan,
            counter,
            meta,
            attached: Attached {
                ctx: self.ctx.clone(),
                plans: lowered.attachments,
            },
            keyset,
        })
    }

    /// The plan of a query in the ranked form (docs/language.md, "Ranked form"): the search's
    /// page of `limit` sessions after `offset` (the best 100 without a limit), best first, as
    /// rows.
    async fn plan_ranked(
        &self,
        form: &quarry_grammar::ranked::RankedForm,
        resolved: &quarry_grammar::Resolved,
    ) -> Result<Planned, Error> {
        let ranker = self.engine.ranker.as_ref().ok_or_else(|| {
            Error::Internal("this engine was opened without the search: nothing ranks".into())
        })?;
        let limit = form.limit.unwrap_or(RANKED_ROWS);
        if limit > RANKED_MOST {
            return Err(Error::BadRequest(format!(
                "the ranked form returns at most {RANKED_MOST} sessions a query (`| limit {limit}`): read further with `| offset N | limit M`, or walk `quarry search` with its cursors"
            )));
        }
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let (batch, generation) = ranker.rank(self, form, limit).await?;
        let table = datafusion::datasource::MemTable::try_new(batch.schema(), vec![vec![batch]])
            .map_err(engine_error)?;
        let plan = LogicalPlanBuilder::scan(
            "ranked",
            datafusion::datasource::provider_as_source(Arc::new(table)),
            None,
        )
        .and_then(LogicalPlanBuilder::build)
        .map_err(engine_error)?;
        Ok(Planned {
            plan,
            counter: None,
            meta: ResultMeta {
                unit: resolved.unit_source.to_string(),
                semantics: resolved.semantics,
                exact: true,
                source: self.source(),
                generation,
                skipped_partitions: 0,
                aggregate: false,
            },
            attached: Attached {
                ctx: self.ctx.clone(),
                plans: Vec::new(),
            },
            keyset: false,
        })
    }

    /// Runs `request` (either language), streaming its rows subject only to its caps, within
    /// its time limit: planning and every batch after it (the stream fails with
    /// [`Error::Timeout`] once the limit passes, and records it as the outcome).
    pub async fn run(&self, request: &Request) -> Result<QueryStream, Error> {
        self.run_by(request, request.timeout.map(Deadline::after))
            .await
    }

    /// Runs `request` as [`Session::run`] does, within `deadline` rather than its own time
    /// limit (a server's deadline counts from when the request came, its wait for a query slot
    /// included).
    pub async fn run_by(
        &self,
        request: &Request,
        deadline: Option<Deadline>,
    ) -> Result<QueryStream, Error> {
        if let Some(tz) = &request.tz {
            // The same view and context, another clock.
            let zoned = Session {
                engine: self.engine.clone(),
                view: self.view.clone(),
                ctx: self.ctx.clone(),
                clock: self.clock,
                scope: self.scope.clone(),
                caller: self.caller.clone(),
            }
            .in_zone(Some(tz))?;
            let request = Request {
                tz: None,
                ..request.clone()
            };
            return Box::pin(zoned.run_by(&request, deadline)).await;
        }
        let mut ticket = self.intend(request.language, &request.text)?;
        if let Some(fault) = injected_fault() {
            let _ = ticket.finish(Outcome::Error(&fault.message()));
            return Err(fault);
        }
        let started = async {
            match request.language {
                Language::Sql if request.paged || request.cursor.is_some() => {
                    Err(Error::BadRequest(
                        "SQL answers do not page: use LIMIT and OFFSET, or ask in the language"
                            .into(),
                    ))
                }
                Language::Sql => self.start_sql(&request.text, request.caps).await,
                _ if request.paged || request.cursor.is_some() => self.start_paged(request).await,
                _ => self.start_query(&request.text, request.caps).await,
            }
        };
        let started = match deadline {
            Some(d) => tokio::time::timeout_at(d.at, started)
                .await
                .unwrap_or(Err(Error::Timeout(d.limit))),
            None => started.await,
        };
        audited(ticket, started, request.caps).map(|stream| stream.until(deadline))
    }

    /// Runs `query`, streaming its rows subject only to the caller's `caps`.
    pub async fn query(&self, query: &str, caps: Caps) -> Result<QueryStream, Error> {
        self.run(&Request::query(query).with_caps(caps)).await
    }

    /// Runs one read-only SQL query (checked before planning, see [`sql`]), streaming its rows
    /// subject only to the caller's `caps`.
    pub async fn sql(&self, text: &str, caps: Caps) -> Result<QueryStream, Error> {
        self.run(&Request::sql(text).with_caps(caps)).await
    }

    async fn start_query(&self, query: &str, caps: Caps) -> Result<Started, Error> {
        let planned = self.plan(query).await?;
        self.start(planned, caps, None).await
    }

    /// Starts running `planned` under `caps`, its pages kept by `pager`.
    async fn start(
        &self,
        planned: Planned,
        caps: Caps,
        pager: Option<Pager>,
    ) -> Result<Started, Error> {
        let stream = self.execute(planned.plan, caps).await?;
        Ok(Started {
            meta: planned.meta,
            stream,
            counter: planned.counter,
            attached: planned.attached,
            pager,
        })
    }

    /// Starts a paged query: the first page, or the page after `request.cursor` (checked to
    /// be this query's, in this scope, and for an offset page, at this generation).
    async fn start_paged(&self, request: &Request) -> Result<Started, Error> {
        let digest = crate::answer::page::digest(&request.text, &self.scope.identity());
        let cursor = match &request.cursor {
            Some(token) => Some(PageCursor::checked(token, &digest)?),
            None => None,
        };
        if cursor.is_some() && request.caps.offset.is_some_and(|o| o > 0) {
            return Err(Error::BadRequest(
                "pass either an offset or a cursor, not both: the cursor knows where the page starts"
                    .into(),
            ));
        }
        // Rows before the next page: the cursor's, or on a first page the rows its offset skips.
        let returned = cursor
            .as_ref()
            .map_or_else(|| request.caps.offset.unwrap_or(0) as u64, |c| c.returned);
        let keyset = Keyset {
            after: match &cursor {
                Some(PageCursor {
                    at: At::Key { key },
                    ..
                }) => Some(key.clone()),
                _ => None,
            },
            returned,
        };
        let planned = self.plan_paged(&request.text, Some(&keyset)).await?;
        let mut caps = request.caps;
        let generation = planned.meta.generation;
        match (&cursor, planned.keyset) {
            (
                Some(PageCursor {
                    at: At::Key { .. }, ..
                }),
                false,
            )
            | (
                Some(PageCursor {
                    at: At::Offset { .. },
                    ..
                }),
                true,
            ) => {
                return Err(Error::InvalidCursor(
                    "the cursor does not fit this query's pages: run the query without it".into(),
                ));
            }
            (
                Some(PageCursor {
                    at: At::Offset { generation: then },
                    ..
                }),
                false,
            ) if *then != generation => {
                return Err(Error::StaleCursor(format!(
                    "the archive moved from generation {then} to {generation} since the first page, so this answer's rows could have shifted: run the query again without the cursor"
                )));
            }
            (Some(_), false) => caps.offset = Some(usize::try_from(returned).unwrap_or(usize::MAX)),
            _ => {}
        }
        let schema = planned.plan.schema().as_arrow().clone();
        let pager = if planned.keyset {
            Pager::keyset(digest, returned, &schema)
        } else {
            Pager::offset(digest, returned, generation)
        };
        self.start(planned, caps, Some(pager)).await
    }

    async fn start_sql(&self, text: &str, caps: Caps) -> Result<Started, Error> {
        let statement = sql::check(text, self.scope.is_admin())?;
        let plan = self
            .ctx
            .state()
            .statement_to_plan(statement)
            .await
            .map_err(sql_plan_error)?;
        datafusion::execution::context::SQLOptions::new()
            .with_allow_ddl(false)
            .with_allow_dml(false)
            .with_allow_statements(false)
            .verify_plan(&plan)
            .map_err(sql_plan_error)?;
        let meta = ResultMeta {
            unit: "sql".into(),
            semantics: quarry_grammar::resolve::Semantics::Exhaustive,
            exact: true,
            source: self.source(),
            generation: self.generation()?,
            skipped_partitions: 0,
            aggregate: false,
        };
        let stream = self.execute(plan, caps).await?;
        Ok(Started {
            meta,
            stream,
            counter: None,
            attached: Attached {
                ctx: self.ctx.clone(),
                plans: Vec::new(),
            },
            pager: None,
        })
    }

    /// The ids of the sessions the scope sees that `filter` (session clauses of the query
    /// language's compact form; `None`: every one) admits. Not audited: a part of a request that is.
    pub(crate) async fn session_ids(
        &self,
        filter: Option<&str>,
    ) -> Result<std::collections::HashSet<String>, Error> {
        let query = match filter {
            // The compact form: clauses side by side mean AND (`repo:acme since:7d`). Checked
            // alone first, so its diagnostics and corrections are about what the caller wrote.
            Some(filter) => {
                quarry_grammar::check(filter).map_err(Error::Query)?;
                format!("{filter} | select session_id")
            }
            None => "sessions | select session_id".to_string(),
        };
        let rows = self.string_rows(&query).await?;
        Ok(rows
            .into_iter()
            .filter_map(|mut row| row.remove(0))
            .collect())
    }

    /// The rows of `query` (the language, run in the session's scope with no caps, not
    /// audited: a part of a request that is), every column as text (`None`: NULL; a time as
    /// its epoch milliseconds).
    pub(crate) async fn string_rows(&self, query: &str) -> Result<Vec<Vec<Option<String>>>, Error> {
        use datafusion::arrow::array::{Array, AsArray};
        use datafusion::arrow::datatypes::DataType;
        let planned = self.plan(query).await?;
        let batches = self.collect_plan(planned.plan).await?;
        let mut rows = Vec::new();
        for batch in batches {
            let text = |c: &datafusion::arrow::array::ArrayRef| match c.data_type() {
                DataType::Timestamp(..) => datafusion::arrow::compute::cast(c, &DataType::Int64)
                    .and_then(|ms| datafusion::arrow::compute::cast(&ms, &DataType::Utf8)),
                _ => datafusion::arrow::compute::cast(c, &DataType::Utf8),
            };
            let columns = batch
                .columns()
                .iter()
                .map(text)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| engine_error(e.into()))?;
            for i in 0..batch.num_rows() {
                rows.push(
                    columns
                        .iter()
                        .map(|c| {
                            let strings = c.as_string::<i32>();
                            strings.is_valid(i).then(|| strings.value(i).to_string())
                        })
                        .collect(),
                );
            }
        }
        Ok(rows)
    }

    /// The rows of one SQL statement of quarry's own (never a caller's text) in the session's
    /// scope, with no caps and not audited (a part of a request that is): its column names and
    /// each row as JSON values.
    pub(crate) async fn sql_rows(
        &self,
        sql: &str,
    ) -> Result<(Vec<String>, Vec<Vec<serde_json::Value>>), Error> {
        let frame = self.ctx.sql(sql).await.map_err(engine_error)?;
        let columns = frame
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let batches = frame.collect().await.map_err(engine_error)?;
        let rows = match crate::output::rows_json(&batches)? {
            serde_json::Value::Array(rows) => rows
                .into_iter()
                .map(|r| match r {
                    serde_json::Value::Array(values) => values,
                    other => vec![other],
                })
                .collect(),
            _ => Vec::new(),
        };
        Ok((columns, rows))
    }

    /// Every batch of `plan`, run in the session's context with no caps (a part of a request
    /// the caller audits).
    pub(crate) async fn collect_plan(
        &self,
        plan: LogicalPlan,
    ) -> Result<Vec<datafusion::arrow::record_batch::RecordBatch>, Error> {
        self.ctx
            .execute_logical_plan(plan)
            .await
            .map_err(engine_error)?
            .collect()
            .await
            .map_err(engine_error)
    }

    /// The archive's generation now (whatever storage this session reads).
    pub(crate) fn archive_generation(&self) -> Result<i64, Error> {
        self.engine.generation()
    }

    /// The ids of (at most `limit`) sessions whose files were written after generation `since`,
    /// whatever the scope: the caller narrows them to its scope.
    pub(crate) async fn sessions_written_after(
        &self,
        since: i64,
        limit: usize,
    ) -> Result<Vec<String>, Error> {
        let archive = self.engine.path().to_path_buf();
        blocking(move || {
            let conn = read_only(&archive).map_err(|e| Error::archive(&archive, e))?;
            let mut stmt = conn
                .prepare(
                    "SELECT s.session_id FROM source_files f
                     JOIN sessions s ON s.source_path = f.path
                     WHERE f.generation > ?1 ORDER BY s.session_id LIMIT ?2",
                )
                .map_err(|e| Error::archive(&archive, e))?;
            let ids = stmt
                .query_map(params_of(since, limit), |r| r.get::<_, String>(0))
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(|e| Error::archive(&archive, e))?;
            Ok(ids)
        })
        .await
    }

    /// Whether the archive holds session `id` (for the admin scope, which sees every one).
    pub(crate) async fn session_exists(&self, id: &str) -> Result<bool, Error> {
        let archive = self.engine.path().to_path_buf();
        let id = id.to_string();
        blocking(move || {
            let conn = read_only(&archive).map_err(|e| Error::archive(&archive, e))?;
            conn.query_row(
                "SELECT count(*) FROM sessions WHERE session_id = ?1",
                [&id],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)
            .map_err(|e| Error::archive(&archive, e))
        })
        .await
    }

    /// The rows of `plan` under `caps`, as DataFusion streams them.
    async fn execute(
        &self,
        plan: LogicalPlan,
        caps: Caps,
    ) -> Result<datafusion::execution::SendableRecordBatchStream, Error> {
        // One row more than the cap tells whether the cap cut anything.
        let plan = with_caps(plan, caps).map_err(engine_error)?;
        if self.source() == Source::Snapshot
            && let Some(stream) = topk::execute(&self.ctx, &plan)
                .await
                .map_err(engine_error)?
        {
            return Ok(stream);
        }
        self.ctx
            .execute_logical_plan(plan)
            .await
            .map_err(engine_error)?
            .execute_stream()
            .await
            .map_err(engine_error)
    }

    /// The generation the answer reflects: the snapshot's, or the archive's now.
    pub(crate) fn generation(&self) -> Result<i64, Error> {
        match self.view.chosen().snapshot_generation {
            Some(generation) => Ok(generation),
            None => self.engine.generation(),
        }
    }

    /// The tables and columns this session's catalog holds (for a reader scope, only what it
    /// may see), in name order, with the schema's description of each.
    pub fn catalog(&self) -> Vec<crate::answer::CatalogTable> {
        self.view
            .tables()
            .iter()
            .map(|(name, provider)| {
                let described = quarry_schema::table(name);
                let columns = provider
                    .schema()
                    .fields()
                    .iter()
                    .map(|field| crate::answer::CatalogColumn {
                        name: field.name().clone(),
                        ty: crate::answer::type_name(field.data_type()),
                        nullable: field.is_nullable(),
                        description: described
                            .and_then(|t| t.query_column(field.name()))
                            .map(|c| c.doc.to_string()),
                    })
                    .collect();
                crate::answer::CatalogTable {
                    description: described.map(|t| t.doc.to_string()),
                    name: name.clone(),
                    columns,
                }
            })
            .collect()
    }

    /// The logical and physical plans of `query`, as DataFusion prints them.
    pub async fn explain(&self, query: &str) -> Result<String, Error> {
        if !self.scope.is_admin() {
            // As SQL's EXPLAIN: the plan shows the scope's own machinery.
            return Err(Error::AdminOnly("explaining a plan"));
        }
        let planned = self.plan(query).await?;
        let bound = match self.source() {
            Source::Snapshot => self.topk_bound(&planned.plan).await?,
            Source::Sqlite => None,
        };
        let explained = async {
            let df = self.ctx.execute_logical_plan(planned.plan).await?;
            df.explain(false, false)?.collect().await
        }
        .await
        .map_err(engine_error)?;
        let text = datafusion::arrow::util::pretty::pretty_format_batches(&explained)
            .map_err(Error::failed)?
            .to_string();
        let bound = match bound {
            Some(bounds) => format!(
                "top-k: bounds from row-group statistics, tried in turn until k rows pass one: \
                 {bounds}; else the plan below\n"
            ),
            None => String::new(),
        };
        Ok(format!(
            "source: {}\n{bound}{text}",
            self.view.chosen().reason
        ))
    }

    /// The query's logical plan as the lowering built it and as DataFusion's optimizer leaves
    /// it, one node a line (admin scope only, as `explain`): what the plan snapshot tests
    /// record, so a change to the lowering or the planner shows in review.
    pub async fn logical_plans(&self, query: &str) -> Result<LogicalPlans, Error> {
        if !self.scope.is_admin() {
            return Err(Error::AdminOnly("explaining a plan"));
        }
        let planned = self.plan(query).await?;
        let optimized = self
            .ctx
            .state()
            .optimize(&planned.plan)
            .map_err(engine_error)?;
        let attached = planned
            .attached
            .plans
            .iter()
            .map(|(unit, plan)| format!("{unit}:\n{}", plan.display_indent()))
            .collect();
        Ok(LogicalPlans {
            lowered: planned.plan.display_indent().to_string(),
            optimized: optimized.display_indent().to_string(),
            attached,
        })
    }

    /// The bounds a top-k plan's scan would get from the snapshot's statistics (see [`topk`]).
    async fn topk_bound(&self, plan: &LogicalPlan) -> Result<Option<String>, Error> {
        let Some(found) = topk::TopK::find(&self.ctx, plan).map_err(engine_error)? else {
            return Ok(None);
        };
        let bounds = found.bounds(&self.ctx).await.map_err(engine_error)?;
        Ok((!bounds.is_empty()).then(|| {
            let shown: Vec<String> = bounds.iter().map(ToString::to_string).collect();
            shown.join(", then ")
        }))
    }

    /// The same session with `name` answered by `provider` (tests wrap a provider).
    #[cfg(test)]
    pub(crate) fn with_table(
        &self,
        name: &str,
        provider: Arc<dyn datafusion::datasource::TableProvider>,
    ) -> Result<Session, Error> {
        let view = Arc::new(self.view.with_table(name, provider)?);
        Session::new(
            self.engine.clone(),
            view,
            self.scope.clone(),
            self.caller.clone(),
        )
    }

    /// The provider answering `name` in this session.
    #[cfg(test)]
    pub(crate) fn table(
        &self,
        name: &str,
    ) -> Option<Arc<dyn datafusion::datasource::TableProvider>> {
        self.view.tables().get(name).cloned()
    }
}

/// The failure a test asks for with `QUARRY_FAULT=internal`, in builds with debug assertions
/// only (the test build): the one way to see an internal error on every surface.
fn injected_fault() -> Option<Error> {
    if cfg!(debug_assertions) && std::env::var("QUARRY_FAULT").is_ok_and(|v| v == "internal") {
        return Some(Error::Internal(
            "a fault injected by QUARRY_FAULT (a test hook of debug builds)".into(),
        ));
    }
    None
}

/// The stream of a started query with its audit ticket, or the failure recorded as its outcome.
fn audited(
    mut ticket: Ticket,
    started: Result<Started, Error>,
    caps: Caps,
) -> Result<QueryStream, Error> {
    match started.and_then(|s| {
        QueryStream::new(s.meta, s.stream, caps.limit, s.counter, s.attached, s.pager)
    }) {
        Ok(stream) => Ok(stream.with_ticket(ticket)),
        Err(e) => {
            let _ = ticket.finish(Outcome::Error(&e.message()));
            Err(e)
        }
    }
}

/// A SQL statement DataFusion could not plan: a name outside the catalog (which, for a reader,
/// is everything outside its scope: the same "not found" as a table that does not exist) or a
/// type error, reported as the query's fault.
fn sql_plan_error(e: DataFusionError) -> Error {
    match e.find_root() {
        DataFusionError::ResourcesExhausted(_) => engine_error(e),
        root => {
            let message = root.to_string();
            if is_table_not_found(root) {
                Error::NotFound(message)
            } else {
                Error::Unplannable(message)
            }
        }
    }
}

/// Whether `e` is DataFusion's "table '…' not found".
fn is_table_not_found(e: &DataFusionError) -> bool {
    match e {
        DataFusionError::Plan(message) => {
            message.starts_with("table '") && message.ends_with("' not found")
        }
        _ => false,
    }
}

/// A query whose stream has started.
struct Started {
    meta: ResultMeta,
    stream: datafusion::execution::SendableRecordBatchStream,
    counter: Option<RowCounter>,
    attached: Attached,
    pager: Option<Pager>,
}

/// Sessions the ranked form returns without a `limit` (its answers are the top k).
const RANKED_ROWS: u64 = 100;
/// The most sessions one query in the ranked form returns (each row reads its snippet).
const RANKED_MOST: u64 = 10_000;

/// A query ready to run.
struct Planned {
    plan: LogicalPlan,
    counter: Option<RowCounter>,
    meta: ResultMeta,
    attached: Attached,
    /// Whether the plan's rows are in keyset order (with hidden order columns).
    keyset: bool,
}

/// `plan` with the aggregate of its main chain (the first one met walking down first inputs)
/// reading its input through a [`CountRows`] node. The count is complete when the answer's
/// stream ends, even if a cap or a `| limit` stops it early: the aggregate is a hash aggregate
/// (the scans declare no order, so DataFusion never streams groups), which reads all of its
/// input before it emits a group.
fn count_aggregate_input(
    plan: LogicalPlan,
    counter: &RowCounter,
) -> Result<LogicalPlan, DataFusionError> {
    if let LogicalPlan::Aggregate(aggregate) = &plan {
        let input = CountRows::plan(aggregate.input.as_ref().clone(), counter.clone());
        return plan.with_new_exprs(plan.expressions(), vec![input]);
    }
    let inputs = plan.inputs();
    if inputs.len() != 1 {
        return Err(DataFusionError::Internal(format!(
            "an aggregate query's plan has no aggregate on its main chain: {}",
            plan.display()
        )));
    }
    let input = count_aggregate_input(inputs[0].clone(), counter)?;
    plan.with_new_exprs(plan.expressions(), vec![input])
}

/// `plan` under the caller's caps, fetching one row beyond the limit.
fn with_caps(plan: LogicalPlan, caps: Caps) -> Result<LogicalPlan, DataFusionError> {
    let offset = caps.offset.unwrap_or(0);
    if caps.limit.is_none() && offset == 0 {
        return Ok(plan);
    }
    LogicalPlanBuilder::from(plan)
        .limit(offset, caps.limit.map(|l| l.saturating_add(1)))?
        .build()
}

#[cfg(test)]
mod tests;

/// The parameters of a generation and a row limit.
fn params_of(since: i64, limit: usize) -> [i64; 2] {
    [since, i64::try_from(limit).unwrap_or(i64::MAX)]
}
