//! The engine behind the library API: one DataFusion `SessionContext` over the archive (a
//! TableProvider per table, the language's functions, a memory pool that spills, a planner that
//! knows [`count::CountRows`]), turning a query into a record-batch stream. Every table
//! reference is scanned once: an aggregate's `input_rows` is counted as its input flows.

mod cost;
mod count;
mod scope;
pub mod source;
mod sql;
mod topk;
mod yields;

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::common::DataFusionError;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::memory_pool::{FairSpillPool, TrackConsumersPool};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};

pub use self::count::RowCounter;
use self::count::{CountRows, QuarryQueryPlanner};
use crate::api::{Attachment, Caps, Error, Options, QueryStream, ResultMeta, Scope, Source};
use crate::audit::{AuditLog, Caller, Language, Outcome, Ticket};
use crate::lower::clock::{Clock, ClockError};
use crate::lower::tables::Tables;
use crate::lower::{LowerError, lower};

/// A DataFusion failure as the library's error: running out of the memory pool is
/// [`Error::MemoryLimit`], anything else [`Error::Execution`]. (A function rather than a `From`
/// impl, so no DataFusion type shows in the public API.)
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
        _ => Error::Execution(e.to_string()),
    }
}

fn lower_error(e: LowerError) -> Error {
    match e {
        LowerError::EmbeddingsUnavailable => Error::EmbeddingsUnavailable,
        LowerError::LaneUnavailable(lane) => Error::LaneUnavailable(lane),
        LowerError::Plan(message) => Error::Unplannable(message),
        LowerError::DataFusion(e) => Error::Unplannable(e.to_string()),
    }
}

fn clock_error(e: ClockError) -> Error {
    Error::Setting(e.0)
}

/// The engine over one archive.
pub struct Engine {
    ctx: SessionContext,
    clock: Clock,
    path: PathBuf,
    chosen: source::Chosen,
    pricing: Arc<cost::Pricing>,
    scope: Scope,
    caller: Caller,
    audit: AuditLog,
}

impl Engine {
    /// An engine over the archive of `options` (which must exist).
    pub fn open(options: &Options) -> Result<Self, Error> {
        let path = &options.archive;
        if !path.exists() {
            return Err(Error::MissingArchive(path.clone()));
        }
        // Fails early on a file that is not an archive.
        let generation = read_generation(path)?;
        let mut runtime = RuntimeEnvBuilder::new();
        if let Some(limit) = options.memory_limit {
            // A fair pool: spilling operators (sorts, aggregates) share what the others leave,
            // so one sort cannot starve the merge that follows it; errors name the top
            // consumers.
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
        let chosen = source::register(&ctx, options, generation)?;
        if let Scope::Reader(reader) = &options.scope {
            scope::apply(&ctx, path, reader)?;
        }
        let prices = crate::prices::PriceTable::load(options.prices.as_deref())
            .map_err(|e| Error::Setting(e.to_string()))?;
        let pricing = Arc::new(cost::Pricing::new(prices));
        cost::register(&ctx, &pricing).map_err(engine_error)?;
        let audit = AuditLog::at(
            options
                .audit_file
                .clone()
                .unwrap_or_else(|| crate::audit::default_audit_file(path)),
        );
        Ok(Engine {
            ctx,
            clock: Clock::from_env(options.tz.as_deref()).map_err(clock_error)?,
            path: path.clone(),
            chosen,
            pricing,
            scope: options.scope.clone(),
            caller: options.caller.clone(),
            audit,
        })
    }

    /// The responses its queries have left without a cost since the last call (see
    /// [`cost::Pricing::take_unpriced`]).
    pub fn take_unpriced(&self) -> Vec<crate::api::UnpricedModel> {
        self.pricing.take_unpriced()
    }

    /// The scope the session was opened with.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The audit trail of this archive.
    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    /// Records the intent to run `text`: the query may run only when this succeeds.
    pub(crate) fn intend(&self, language: Language, text: &str) -> Result<Ticket, Error> {
        self.audit
            .intend(&self.caller, self.scope.name(), language, text)
            .map_err(|e| Error::Audit(e.to_string()))
    }

    /// The storage this engine reads.
    pub fn source(&self) -> Source {
        self.chosen.source
    }

    /// The session's DataFusion context (exports run their plans in it).
    pub(crate) fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// The archive file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Parses, resolves and lowers `query`: the plan of its rows (an aggregate's input counted
    /// on the way), what the answer is, and the plans of attached rows.
    async fn plan(&self, query: &str) -> Result<Planned, Error> {
        let resolved = quarry_grammar::check(query).map_err(Error::Query)?;
        let tables = Tables::load(&self.ctx).await.map_err(engine_error)?;
        let lowered = lower(&resolved, &tables, &self.clock).map_err(lower_error)?;
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
            source: self.chosen.source,
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
        })
    }

    /// Runs `query`, streaming its rows subject only to the caller's `caps`.
    pub async fn query(&self, query: &str, caps: Caps) -> Result<QueryStream, Error> {
        let ticket = self.intend(Language::Query, query)?;
        let started = async {
            let planned = self.plan(query).await?;
            let stream = self.execute(planned.plan, caps).await?;
            Ok(Started {
                meta: planned.meta,
                stream,
                counter: planned.counter,
                attached: planned.attached,
            })
        }
        .await;
        audited(ticket, started, caps)
    }

    /// Runs one read-only SQL query (checked before planning, see [`sql`]), streaming its rows
    /// subject only to the caller's `caps`.
    pub async fn sql(&self, text: &str, caps: Caps) -> Result<QueryStream, Error> {
        let ticket = self.intend(Language::Sql, text)?;
        let started = async {
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
                semantics: crate::api::Semantics::Exhaustive,
                exact: true,
                source: self.chosen.source,
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
            })
        }
        .await;
        audited(ticket, started, caps)
    }

    /// The rows of `plan` under `caps`, as DataFusion streams them.
    async fn execute(
        &self,
        plan: LogicalPlan,
        caps: Caps,
    ) -> Result<datafusion::execution::SendableRecordBatchStream, Error> {
        // One row more than the cap tells whether the cap cut anything.
        let plan = with_caps(plan, caps).map_err(engine_error)?;
        if self.chosen.source == Source::Snapshot
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
    fn generation(&self) -> Result<i64, Error> {
        match self.chosen.snapshot_generation {
            Some(generation) => Ok(generation),
            None => read_generation(&self.path),
        }
    }

    /// The tables and columns this session's catalog holds (for a reader scope, only what it
    /// may see), in name order, with the schema's description of each.
    pub async fn catalog(&self) -> Result<Vec<crate::api::CatalogTable>, Error> {
        let schema = self
            .ctx
            .catalog("datafusion")
            .and_then(|c| c.schema("public"))
            .ok_or_else(|| Error::Execution("the session has no default schema".into()))?;
        let mut names = schema.table_names();
        names.sort();
        let mut tables = Vec::with_capacity(names.len());
        for name in names {
            let Some(provider) = schema.table(&name).await.map_err(engine_error)? else {
                continue;
            };
            let described = quarry_schema::table(&name);
            let columns = provider
                .schema()
                .fields()
                .iter()
                .map(|field| crate::api::CatalogColumn {
                    name: field.name().clone(),
                    ty: crate::output::envelope::type_name(field.data_type()),
                    nullable: field.is_nullable(),
                    description: described
                        .and_then(|t| t.query_column(field.name()))
                        .map(|c| c.doc.to_string()),
                })
                .collect();
            tables.push(crate::api::CatalogTable {
                description: described.map(|t| t.doc.to_string()),
                name,
                columns,
            });
        }
        Ok(tables)
    }

    /// The logical and physical plans of `query`, as DataFusion prints them.
    pub async fn explain(&self, query: &str) -> Result<String, Error> {
        if !self.scope.is_admin() {
            // As SQL's EXPLAIN: the plan shows the scope's own machinery.
            return Err(Error::AdminOnly("explaining a plan"));
        }
        let planned = self.plan(query).await?;
        let bound = match self.chosen.source {
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
            .map_err(|e| Error::Execution(e.to_string()))?
            .to_string();
        let bound = match bound {
            Some(bounds) => format!(
                "top-k: bounds from row-group statistics, tried in turn until k rows pass one: \
                 {bounds}; else the plan below\n"
            ),
            None => String::new(),
        };
        Ok(format!("source: {}\n{bound}{text}", self.chosen.reason))
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
}

/// The stream of a started query with its audit ticket, or the failure recorded as its outcome.
fn audited(
    mut ticket: Ticket,
    started: Result<Started, Error>,
    caps: Caps,
) -> Result<QueryStream, Error> {
    match started {
        Ok(s) => Ok(QueryStream::new(
            s.meta,
            s.stream,
            caps.limit,
            s.counter,
            s.attached,
            Some(ticket),
        )),
        Err(e) => {
            let _ = ticket.finish(Outcome::Error(&e.to_string()));
            Err(e)
        }
    }
}

/// A SQL statement DataFusion could not plan: a name outside the catalog (which, for a reader,
/// is everything outside its scope) or a type error, reported as the query's fault.
fn sql_plan_error(e: DataFusionError) -> Error {
    match e.find_root() {
        DataFusionError::ResourcesExhausted(_) => engine_error(e),
        root => Error::Unplannable(root.to_string()),
    }
}

/// A query whose stream has started.
struct Started {
    meta: ResultMeta,
    stream: datafusion::execution::SendableRecordBatchStream,
    counter: Option<RowCounter>,
    attached: Attached,
}

/// A query ready to run.
struct Planned {
    plan: LogicalPlan,
    counter: Option<RowCounter>,
    meta: ResultMeta,
    attached: Attached,
}

/// The plans of rows `with` projections attach, run when an answer is collected.
#[derive(Default)]
pub struct Attached {
    ctx: SessionContext,
    plans: Vec<(&'static str, LogicalPlan)>,
}

impl Attached {
    /// The attached units, in the query's order.
    pub fn units(&self) -> Vec<&'static str> {
        self.plans.iter().map(|(unit, _)| *unit).collect()
    }

    /// Runs every attached plan.
    pub async fn collect(self) -> Result<Vec<Attachment>, Error> {
        let mut out = Vec::with_capacity(self.plans.len());
        for (unit, plan) in self.plans {
            let df = self
                .ctx
                .execute_logical_plan(plan)
                .await
                .map_err(engine_error)?;
            let schema = Arc::new(df.schema().as_arrow().clone());
            out.push(Attachment {
                unit: unit.to_string(),
                schema,
                batches: df.collect().await.map_err(engine_error)?,
            });
        }
        Ok(out)
    }
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

/// The archive's generation now (it grows with every ingest that changed something).
fn read_generation(path: &Path) -> Result<i64, Error> {
    quarry_providers::Archive::open_read_only(path)
        .and_then(|archive| archive.generation())
        .map_err(|e| Error::Archive {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
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
