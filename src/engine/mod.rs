//! The engine: one DataFusion `SessionContext` over the archive (a TableProvider per table, the
//! language's functions, a memory pool that spills), running a query's lowered plan and
//! collecting its rows exactly — no cap, no sample.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::DataFusionError;
use datafusion::execution::memory_pool::{FairSpillPool, TrackConsumersPool};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::LogicalPlanBuilder;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::prelude::{SessionConfig, SessionContext};
use quarry_grammar::resolve::Resolved;

use crate::lower::clock::{Clock, ClockError};
use crate::lower::tables::Tables;
use crate::lower::{LowerError, lower};

/// How the engine runs.
#[derive(Debug, Clone, Default)]
pub struct EngineOptions {
    /// Memory pool size in bytes; sorts and aggregates spill to disk beyond it.
    pub memory_limit: Option<usize>,
    /// Zone of day boundaries and time buckets (`UTC`, `local`, `+02:00`).
    pub tz: Option<String>,
}

/// Caps the caller puts on a result (not part of the query): they set `truncated`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Caps {
    /// At most this many rows.
    pub limit: Option<usize>,
    /// Skip this many rows first.
    pub offset: Option<usize>,
}

/// Why a query failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The query does not parse or resolve.
    #[error("invalid query")]
    Query(quarry_grammar::Diagnostics),
    /// The query cannot be planned (embeddings, lanes, ...).
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// A clock setting is wrong.
    #[error(transparent)]
    Clock(#[from] ClockError),
    /// The query needs more memory than the pool allows, even after spilling.
    #[error(
        "the query needs more memory than --memory-limit allows, even spilling to disk: {0}; raise --memory-limit, or narrow the query (a where, fewer groups or columns)"
    )]
    MemoryLimit(String),
    /// `with` projections attach other units' rows, which a streamed export cannot hold.
    #[error(
        "a query with `with` projections cannot be streamed to {0}; export each unit with its own query, or use --format json"
    )]
    AttachmentsNotStreamable(&'static str),
    /// Execution failed (archive error, ...).
    #[error("{0}")]
    Execution(DataFusionError),
}

impl From<DataFusionError> for EngineError {
    fn from(e: DataFusionError) -> Self {
        match e.find_root() {
            DataFusionError::ResourcesExhausted(message) => {
                // DataFusion lists the top consumers first; the allocation that failed is last.
                let failed = message
                    .rsplit("Error: ")
                    .next()
                    .unwrap_or(message)
                    .trim()
                    .trim_end_matches('.');
                EngineError::MemoryLimit(failed.to_string())
            }
            _ => EngineError::Execution(e),
        }
    }
}

/// Rows of one result set.
#[derive(Debug, Clone)]
pub struct RowSet {
    /// Column names and types.
    pub schema: SchemaRef,
    /// The rows.
    pub batches: Vec<RecordBatch>,
}

impl RowSet {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A query's answer.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The resolved query.
    pub resolved: Resolved,
    /// The rows.
    pub rows: RowSet,
    /// Rows an aggregate reduced (aggregate queries).
    pub input_rows: Option<usize>,
    /// Whether a cap the caller set (not the query's own `limit`) cut the rows.
    pub truncated: bool,
    /// Attached rows of `with` projections: (unit, rows).
    pub attachments: Vec<(&'static str, RowSet)>,
}

/// The engine over one archive.
pub struct Engine {
    ctx: SessionContext,
    clock: Clock,
    path: PathBuf,
}

impl Engine {
    /// An engine over the archive at `path` (which must exist).
    pub fn open(path: &Path, options: &EngineOptions) -> Result<Self, EngineError> {
        if !path.exists() {
            return Err(EngineError::Execution(DataFusionError::Plan(format!(
                "no archive at {}: run `quarry ingest` first",
                path.display()
            ))));
        }
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
        let config = SessionConfig::new().with_information_schema(true);
        let ctx = SessionContext::new_with_config_rt(config, runtime.build_arc()?);
        quarry_udf::functions::register_all(&ctx);
        quarry_providers::sqlite::register_archive(&ctx, path)?;
        Ok(Engine {
            ctx,
            clock: Clock::from_env(options.tz.as_deref())?,
            path: path.to_path_buf(),
        })
    }

    /// The archive file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The DataFusion context (for SQL and tests).
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// Parses, resolves and lowers `query`.
    pub async fn plan(
        &self,
        query: &str,
    ) -> Result<(Resolved, crate::lower::Lowered), EngineError> {
        let resolved = quarry_grammar::check(query).map_err(EngineError::Query)?;
        let tables = Tables::load(&self.ctx).await?;
        let lowered = lower(&resolved, &tables, &self.clock)?;
        Ok((resolved, lowered))
    }

    /// Runs `query` and streams its rows (subject only to the caller's `caps`), for exports of
    /// any size: nothing is collected. `format` names the destination in the error a `with`
    /// projection gets.
    pub async fn stream(
        &self,
        query: &str,
        caps: Caps,
        format: &'static str,
    ) -> Result<(Resolved, SendableRecordBatchStream), EngineError> {
        let (resolved, lowered) = self.plan(query).await?;
        if !lowered.attachments.is_empty() {
            return Err(EngineError::AttachmentsNotStreamable(format));
        }
        let plan = with_caps(lowered.plan, caps, 0)?;
        let stream = self
            .ctx
            .execute_logical_plan(plan)
            .await?
            .execute_stream()
            .await?;
        Ok((resolved, stream))
    }

    /// Runs `query` and collects every row (subject only to the caller's `caps`).
    pub async fn run(&self, query: &str, caps: Caps) -> Result<Answer, EngineError> {
        let (resolved, lowered) = self.plan(query).await?;
        // One row more than the cap tells whether the cap cut anything.
        let plan = with_caps(lowered.plan, caps, 1)?;
        let df = self.ctx.execute_logical_plan(plan).await?;
        let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
        let mut batches = df.collect().await?;
        let mut truncated = false;
        if let Some(limit) = caps.limit {
            let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
            if total > limit {
                truncated = true;
                batches = keep_rows(batches, limit);
            }
        }
        let input_rows = match lowered.input {
            Some(input) => {
                let counted = LogicalPlanBuilder::from(input)
                    .aggregate(
                        Vec::<datafusion::logical_expr::Expr>::new(),
                        vec![
                            datafusion::functions_aggregate::expr_fn::count(
                                datafusion::logical_expr::lit(1i64),
                            )
                            .alias("n"),
                        ],
                    )?
                    .build()?;
                let batches = self
                    .ctx
                    .execute_logical_plan(counted)
                    .await?
                    .collect()
                    .await?;
                first_i64(&batches).map(|n| n as usize)
            }
            None => None,
        };
        let mut attachments = Vec::new();
        for (unit, plan) in lowered.attachments {
            let df = self.ctx.execute_logical_plan(plan).await?;
            let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
            attachments.push((
                unit,
                RowSet {
                    schema,
                    batches: df.collect().await?,
                },
            ));
        }
        Ok(Answer {
            resolved,
            rows: RowSet { schema, batches },
            input_rows,
            truncated,
            attachments,
        })
    }

    /// The logical and physical plans of `query`, as DataFusion prints them.
    pub async fn explain(&self, query: &str) -> Result<String, EngineError> {
        let (_, lowered) = self.plan(query).await?;
        let df = self.ctx.execute_logical_plan(lowered.plan).await?;
        let explained = df.explain(false, false)?.collect().await?;
        let text = datafusion::arrow::util::pretty::pretty_format_batches(&explained)
            .map_err(DataFusionError::from)?
            .to_string();
        Ok(text)
    }
}

/// `plan` under the caller's caps, fetching `extra` rows beyond the limit.
fn with_caps(
    plan: datafusion::logical_expr::LogicalPlan,
    caps: Caps,
    extra: usize,
) -> Result<datafusion::logical_expr::LogicalPlan, DataFusionError> {
    let offset = caps.offset.unwrap_or(0);
    if caps.limit.is_none() && offset == 0 {
        return Ok(plan);
    }
    LogicalPlanBuilder::from(plan)
        .limit(offset, caps.limit.map(|l| l.saturating_add(extra)))?
        .build()
}

fn keep_rows(batches: Vec<RecordBatch>, mut remaining: usize) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    for batch in batches {
        if remaining == 0 {
            break;
        }
        let take = remaining.min(batch.num_rows());
        out.push(batch.slice(0, take));
        remaining -= take;
    }
    out
}

fn first_i64(batches: &[RecordBatch]) -> Option<i64> {
    let batch = batches.iter().find(|b| b.num_rows() > 0)?;
    let array = batch
        .column(0)
        .as_any()
        .downcast_ref::<datafusion::arrow::array::Int64Array>()?;
    Some(array.value(0))
}
