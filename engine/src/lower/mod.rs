//! Lowering: a resolved query (`quarry_grammar::resolve::Resolved`) → a DataFusion
//! `LogicalPlan` over the archive's tables. Predicates become filters (`predicate`); the pipeline
//! stages become aggregate, sort, projection and limit nodes; `with` projections become window
//! plans computed per session. Nothing here executes; `engine` runs the plans.

pub mod clock;
pub mod keyset;
mod planted;
pub mod predicate;
pub mod tables;

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::DataFusionError;
use datafusion::functions_aggregate::expr_fn::{
    avg, count, count_distinct, max, median, min, stddev, sum,
};
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{
    Expr, ExprFunctionExt, JoinType, LogicalPlan, LogicalPlanBuilder, SortExpr, cast, col, ident,
    in_subquery, lit,
};
use quarry_grammar::ir::{
    AggFunction, ColumnRef, FieldScope, GroupKey, Metric, Number, PipelineStage, Resolved,
    ResolvedProjection, SortKey, Value,
};
use quarry_grammar::registry::{Source, Unit, UnitId, unit_def};

pub use self::planted::PlantedBug;

use self::clock::Clock;
use self::predicate::PredicateLowerer;
use self::tables::Tables;

/// Why a query could not be lowered. Users see these as [`crate::Error`]'s variants of the same
/// names, which carry the full wording.
#[derive(Debug, thiserror::Error)]
pub enum LowerError {
    /// A `near:` / `semantic:` leaf: no embeddings in this archive.
    #[error("embeddings unavailable")]
    EmbeddingsUnavailable,
    /// A retrieval lane that is not available.
    #[error("lane unavailable: {0}")]
    LaneUnavailable(String),
    /// A query the lowering cannot express.
    #[error("cannot plan the query: {0}")]
    Plan(String),
    /// A page cursor whose anchor does not fit the query's order.
    #[error("invalid cursor: {0}")]
    Cursor(String),
    /// DataFusion refused the plan.
    #[error(transparent)]
    DataFusion(DataFusionError),
}

/// The column linking rows of `unit` to their session.
pub fn session_key(unit: UnitId) -> Option<&'static str> {
    match unit {
        UnitId::Sessions => Some("session_id"),
        UnitId::Assertions => Some("session_id"),
        UnitId::Delegations => Some("parent_session_id"),
        other => unit_def(other).session_column,
    }
}

/// A lowered query: the main plan, whether it aggregates (so the engine counts the aggregate's
/// input), and the plans of attached rows (`with` projections).
pub struct Lowered {
    /// The result rows.
    pub plan: LogicalPlan,
    /// Whether the plan's main chain ends in an aggregate.
    pub aggregated: bool,
    /// Attached rows per projection: (unit name, plan with a `session_id` column).
    pub attachments: Vec<(&'static str, LogicalPlan)>,
    /// Whether the rows are in keyset order, with their hidden order columns
    /// ([`keyset`]): asked for, and the query returns rows of a unit with a primary key.
    pub keyset: bool,
}

/// Lowers `resolved` with the archive's `tables` and `clock` (and, for the differential
/// fuzzer's self-test only, a `planted` bug). With `paging`, a query returning rows of a unit
/// with a primary key is ordered totally and starts after the keyset's anchor.
pub fn lower(
    resolved: &Resolved,
    tables: &Tables,
    clock: &Clock,
    planted: Option<PlantedBug>,
    paging: Option<&keyset::Keyset>,
) -> Result<Lowered, LowerError> {
    let predicates = PredicateLowerer {
        tables,
        clock,
        planted,
    };
    let unit = resolved.unit;
    let def = unit_def(unit);
    let mut builder = tables.scan(def.table)?;
    let mut group: Option<Vec<GroupKey>> = None;
    let mut aggregated = false;
    let mut offset = 0usize;
    let mut limit: Option<usize> = None;
    let mut attachments = Vec::new();
    let mut sort: Vec<SortExpr> = Vec::new();
    // The buckets' key order, when aggregated (`sort by key`, and ties of a sorted page).
    let mut bucket_keys: Vec<SortExpr> = Vec::new();
    let session_columns = session_refs(resolved);
    let mut joined_sessions = false;
    let paged = paging.is_some();
    let paging = paging.filter(|_| pageable(resolved, def));
    let last_sort = resolved
        .pipeline_stages
        .iter()
        .rposition(|s| matches!(s, PipelineStage::Sort { .. }));
    if paging.is_some() {
        builder = keyset::with_primary_key(builder, def.schema.key)?;
    }

    for (index, stage) in resolved.pipeline_stages.iter().enumerate() {
        match stage {
            PipelineStage::SessionScope { predicate } => {
                let expr = predicates.lower(predicate, UnitId::Sessions)?;
                let key = session_key(unit).ok_or_else(|| {
                    LowerError::Plan(format!("{} rows have no session", def.name))
                })?;
                let sessions = tables
                    .scan("sessions")?
                    .filter(expr)?
                    .project(vec![col("session_id")])?
                    .build()?;
                builder = builder.filter(in_subquery(col(key), Arc::new(sessions)))?;
            }
            PipelineStage::Source { .. } => {}
            PipelineStage::Filter { predicate } => {
                builder = builder.filter(predicates.lower(predicate, unit)?)?;
            }
            PipelineStage::GroupBy { keys } => {
                if !session_columns.is_empty() && !joined_sessions {
                    builder = join_sessions(builder, tables, unit, &session_columns)?;
                    joined_sessions = true;
                }
                group = Some(keys.clone());
            }
            PipelineStage::Aggregate { metrics, .. } => {
                if !session_columns.is_empty() && !joined_sessions {
                    builder = join_sessions(builder, tables, unit, &session_columns)?;
                    joined_sessions = true;
                }
                let keys = group.take().unwrap_or_default();
                let group_exprs = keys
                    .iter()
                    .map(|k| group_expr(k, clock, planted))
                    .collect::<Result<Vec<_>, _>>()?;
                let metric_exprs = metrics
                    .iter()
                    .map(metric_expr)
                    .collect::<Result<Vec<_>, _>>()?;
                builder = builder.aggregate(group_exprs, metric_exprs)?;
                aggregated = true;
                bucket_keys = keys
                    .iter()
                    .map(|k| ident(key_label(k)).sort(true, true))
                    .collect();
                sort = default_bucket_order(&keys, metrics);
            }
            PipelineStage::Sort { key, descending } => {
                if !aggregated && !session_columns.is_empty() && !joined_sessions {
                    builder = join_sessions(builder, tables, unit, &session_columns)?;
                    joined_sessions = true;
                }
                sort = sort_exprs(key, *descending, aggregated, resolved, &bucket_keys)?;
                if aggregated {
                    // One order, whatever the run: buckets tied on the sort come in key order
                    // (pages by offset need it, and `sort by count desc | limit 15` keeps the
                    // same fifteen).
                    sort.extend(bucket_keys.iter().cloned());
                }
                builder = match paging {
                    // Only the last sort stage orders the pages.
                    Some(k) if Some(index) == last_sort => keyset::order(builder, &sort, k)?,
                    Some(_) => builder,
                    None => builder.sort(sort.clone())?,
                };
                sort.clear();
            }
            PipelineStage::Select { columns } => {
                if !aggregated && !session_columns.is_empty() && !joined_sessions {
                    builder = join_sessions(builder, tables, unit, &session_columns)?;
                    joined_sessions = true;
                }
                if !sort.is_empty() {
                    builder = builder.sort(std::mem::take(&mut sort))?;
                }
                let mut exprs = columns
                    .iter()
                    .map(|c| column_expr(c).map(|e| e.alias(c.field.clone())))
                    .collect::<Result<Vec<_>, _>>()?;
                if paging.is_some() {
                    exprs.extend(keyset::hidden_columns(builder.schema()));
                }
                builder = builder.project(exprs)?;
            }
            PipelineStage::Offset { n } => offset = usize::try_from(*n).unwrap_or(usize::MAX),
            PipelineStage::Limit { n } => limit = Some(usize::try_from(*n).unwrap_or(usize::MAX)),
            PipelineStage::Project { projections } => {
                let sessions_plan = builder.clone().project(vec![col("session_id")])?.build()?;
                for projection in projections {
                    attachments.push(attachment(projection, tables, &sessions_plan)?);
                }
            }
        }
    }
    if !sort.is_empty() {
        builder = builder.sort(sort)?;
    }
    if paged && paging.is_none() && !aggregated && last_sort.is_none() && !def.schema.key.is_empty()
    {
        // Rows paged by offset (sessions with attached rows) need one order: the key's.
        let key: Vec<SortExpr> = def
            .schema
            .key
            .iter()
            .map(|c| col(*c).sort(true, false))
            .collect();
        builder = builder.sort(key)?;
    }
    if let Some(k) = paging {
        if last_sort.is_none() {
            builder = keyset::order(builder, &[], k)?;
        }
        // A later page starts after its anchor: the query's offset is behind it, and its
        // limit counts the rows earlier pages returned.
        if k.after.is_some() {
            offset = 0;
            limit = limit.map(|l| l.saturating_sub(usize::try_from(k.returned).unwrap_or(l)));
        }
    }
    if joined_sessions && !aggregated {
        // Keep the unit's own columns (and any selected session columns) only.
        let schema = builder.schema().clone();
        let keep: Vec<Expr> = schema
            .fields()
            .iter()
            .filter(|f| f.name() != "__session_key")
            .map(|f| ident(f.name().clone()))
            .collect();
        builder = builder.project(keep)?;
    }
    if offset > 0 || limit.is_some() {
        builder = builder.limit(offset, limit)?;
    }
    Ok(Lowered {
        plan: builder.build()?,
        aggregated,
        attachments,
        keyset: paging.is_some(),
    })
}

/// Whether `resolved` can page by keyset: it returns rows (no aggregate, no attached rows) of
/// a unit whose table has a primary key.
fn pageable(resolved: &Resolved, def: &Unit) -> bool {
    !def.schema.key.is_empty()
        && !resolved.pipeline_stages.iter().any(|s| {
            matches!(
                s,
                PipelineStage::Aggregate { .. }
                    | PipelineStage::GroupBy { .. }
                    | PipelineStage::Project { .. }
            )
        })
}

/// Every `session.<field>` column the pipeline reads (group keys, metrics, sort, select).
fn session_refs(resolved: &Resolved) -> Vec<ColumnRef> {
    let mut refs: Vec<ColumnRef> = Vec::new();
    let mut push = |c: &ColumnRef| {
        if c.scope == FieldScope::Session && !refs.iter().any(|r| r.field == c.field) {
            refs.push(c.clone());
        }
    };
    for stage in &resolved.pipeline_stages {
        match stage {
            PipelineStage::GroupBy { keys } => keys.iter().for_each(|k| {
                if let GroupKey::Field { column, .. } = k {
                    push(column);
                }
            }),
            PipelineStage::Aggregate { metrics, .. } => metrics
                .iter()
                .filter_map(|m| m.column.as_ref())
                .for_each(&mut push),
            PipelineStage::Sort {
                key: SortKey::Field { column },
                ..
            } => push(column),
            PipelineStage::Select { columns } => columns.iter().for_each(&mut push),
            _ => {}
        }
    }
    refs
}

/// Left-joins the owning session's columns, named `session.<field>`.
fn join_sessions(
    builder: LogicalPlanBuilder,
    tables: &Tables,
    unit: UnitId,
    refs: &[ColumnRef],
) -> Result<LogicalPlanBuilder, LowerError> {
    let key = session_key(unit)
        .ok_or_else(|| LowerError::Plan(format!("{} rows have no session", unit_def(unit).name)))?;
    let mut exprs = vec![col("session_id").alias("__session_key")];
    for r in refs {
        let column = r
            .source
            .column()
            .ok_or_else(|| LowerError::Plan(format!("session.{} has no column", r.field)))?;
        exprs.push(col(column).alias(format!("session.{}", r.field)));
    }
    let sessions = tables.scan("sessions")?.project(exprs)?.build()?;
    Ok(builder.join(
        sessions,
        JoinType::Left,
        (vec![key], vec!["__session_key"]),
        None,
    )?)
}

/// The expression of a column reference (own column, or a joined `session.` column).
fn column_expr(c: &ColumnRef) -> Result<Expr, LowerError> {
    match (c.scope, &c.source) {
        (FieldScope::Session, _) => Ok(ident(format!("session.{}", c.field))),
        (FieldScope::Own, Source::Column { column }) => Ok(col(*column)),
        _ => Err(LowerError::Plan(format!(
            "`{}` is not a column of the rows",
            c.field
        ))),
    }
}

/// The order buckets come out in unless a sort stage says otherwise: the most rows first (ties
/// in key order) when the aggregate counts rows; key order when it does not, and time order
/// when a key is a time bucket.
fn default_bucket_order(keys: &[GroupKey], metrics: &[Metric]) -> Vec<SortExpr> {
    let by_key = keys.iter().map(|k| ident(key_label(k)).sort(true, true));
    // (The same key order as `bucket_keys`.)
    let timed = keys.iter().any(|k| matches!(k, GroupKey::Time { .. }));
    let count = metrics
        .iter()
        .find(|m| m.function == AggFunction::Count)
        .filter(|_| !timed && !keys.is_empty());
    match count {
        Some(count) => std::iter::once(ident(count.label.clone()).sort(false, false))
            .chain(by_key)
            .collect(),
        None => by_key.collect(),
    }
}

fn key_label(key: &GroupKey) -> String {
    match key {
        GroupKey::Field { label, .. } | GroupKey::Time { label, .. } => label.clone(),
    }
}

fn group_expr(
    key: &GroupKey,
    clock: &Clock,
    planted: Option<PlantedBug>,
) -> Result<Expr, LowerError> {
    match key {
        GroupKey::Field { column, label } => Ok(column_expr(column)?.alias(label.clone())),
        GroupKey::Time {
            bucket,
            column,
            label,
        } => {
            let zone = match planted {
                Some(PlantedBug::DayAtStandardOffset) if *bucket == "day" => {
                    clock.standard_offset_name()
                }
                _ => clock.zone_name(),
            };
            let zoned = cast(
                col(*column),
                DataType::Timestamp(TimeUnit::Millisecond, Some(zone.into())),
            );
            Ok(quarry_udf::functions::date_trunc(lit(*bucket), zoned).alias(label.clone()))
        }
    }
}

/// Whether a catalog table declares `column` as a real number (costs).
fn is_real_column(column: &str) -> bool {
    quarry_schema::CATALOG.iter().any(|t| {
        t.query_column(column)
            .is_some_and(|c| c.ty == quarry_schema::ColumnType::Real)
    })
}

fn metric_expr(metric: &Metric) -> Result<Expr, LowerError> {
    let value = || -> Result<Expr, LowerError> {
        let c = metric
            .column
            .as_ref()
            .ok_or_else(|| LowerError::Plan(format!("{} needs a field", metric.label)))?;
        column_expr(c)
    };
    let numeric = || -> Result<Expr, LowerError> { Ok(cast(value()?, DataType::Float64)) };
    let counted = || -> Result<Expr, LowerError> {
        // Booleans count as 0/1 in sum and avg; real numbers (costs) stay real.
        let real = metric
            .column
            .as_ref()
            .and_then(|c| c.source.column())
            .is_some_and(is_real_column);
        Ok(cast(
            value()?,
            if real {
                DataType::Float64
            } else {
                DataType::Int64
            },
        ))
    };
    let expr = match metric.function {
        AggFunction::Count => count(lit(1i64)),
        AggFunction::CountDistinct => count_distinct(value()?),
        AggFunction::Sum => sum(counted()?),
        AggFunction::Avg => avg(counted()?),
        AggFunction::Min => min(value()?),
        AggFunction::Max => max(value()?),
        AggFunction::Median => median(numeric()?),
        AggFunction::Stddev => stddev(numeric()?),
        AggFunction::Percentile(p) => quarry_udf::functions::percentile_nearest_rank(value()?, p),
    };
    Ok(expr.alias(metric.label.clone()))
}

/// The order of a unit's rows within a session, total so that `first:N`/`last:N` pick the same
/// rows every time: messages by their position in the session; other rows by time (rows without
/// a time last), then their position within their message where they have one, then their id.
fn session_order(def: &Unit, key: &str, last: bool) -> Vec<SortExpr> {
    let asc = !last;
    if def.id == UnitId::Messages {
        return vec![col("position").sort(asc, false)];
    }
    let mut order = Vec::new();
    if let Some(time) = def.time_column {
        order.push(col(time).sort(asc, false));
    }
    if def.has_column("position") {
        order.push(col("position").sort(asc, false));
    }
    if let Some(id) = def.schema.column_names().find(|c| *c != key) {
        order.push(col(id).sort(asc, false));
    }
    order
}

/// Where a `sort` stage puts rows without a value: last, in both directions (docs/language.md).
const NULLS_FIRST: bool = false;

fn sort_exprs(
    key: &SortKey,
    descending: bool,
    aggregated: bool,
    resolved: &Resolved,
    key_sort: &[SortExpr],
) -> Result<Vec<SortExpr>, LowerError> {
    let asc = !descending;
    Ok(match key {
        SortKey::Time { column } => vec![col(*column).sort(asc, NULLS_FIRST)],
        SortKey::Count => vec![ident("count").sort(asc, NULLS_FIRST)],
        SortKey::Metric { label } => vec![ident(label.clone()).sort(asc, NULLS_FIRST)],
        SortKey::Key => {
            if aggregated {
                key_sort
                    .iter()
                    .map(|s| s.expr.clone().sort(asc, NULLS_FIRST))
                    .collect()
            } else {
                let def = unit_def(resolved.unit);
                let first = def.schema.column_names().next().unwrap_or("rowid");
                vec![col(first).sort(asc, NULLS_FIRST)]
            }
        }
        SortKey::Field { column } => {
            let expr = if aggregated {
                ident(column.field.clone())
            } else {
                column_expr(column)?
            };
            vec![expr.sort(asc, NULLS_FIRST)]
        }
    })
}

/// The attached rows of one `with` projection: the unit's rows of the selected sessions,
/// bracket filters applied, and `first:N` / `last:N` taken exactly per session by a window.
fn attachment(
    projection: &ResolvedProjection,
    tables: &Tables,
    sessions: &LogicalPlan,
) -> Result<(&'static str, LogicalPlan), LowerError> {
    let def = unit_def(projection.unit);
    let key = session_key(projection.unit)
        .ok_or_else(|| LowerError::Plan(format!("{} rows have no session", def.name)))?;
    let mut builder = tables
        .scan(def.table)?
        .filter(in_subquery(col(key), Arc::new(sessions.clone())))?;
    for filter in &projection.filters {
        builder = builder.filter(col(filter.column).eq(value_lit(&filter.value)?))?;
    }
    let order = |last: bool| session_order(def, key, last);
    if let Some(window) = projection.window {
        builder = builder
            .window(vec![
                row_number()
                    .partition_by(vec![col(key)])
                    .order_by(order(window.last))
                    .build()?
                    .alias("__rank"),
            ])?
            .filter(col("__rank").lt_eq(lit(window.n as i64)))?;
    }
    let mut sort = vec![col(key).sort(true, true)];
    sort.extend(order(false));
    builder = builder.sort(sort)?;
    let columns: Vec<Expr> = if projection.columns.is_empty() {
        def.schema.column_names().map(col).collect()
    } else {
        let mut cols: Vec<Expr> = projection.columns.iter().map(|c| col(c.as_str())).collect();
        if !projection.columns.iter().any(|c| c == key) {
            cols.insert(0, col(key));
        }
        cols
    };
    Ok((def.name, builder.project(columns)?.build()?))
}

/// The literal of a bracket value.
fn value_lit(value: &Value) -> Result<Expr, LowerError> {
    Ok(match value {
        Value::Text(text) => lit(text.clone()),
        Value::Enum(member) => lit(*member),
        Value::Bool(b) => lit(*b),
        Value::Number(Number::Int(n)) => lit(*n),
        Value::Number(Number::Float(x)) => lit(*x),
        Value::Evidence(e) => {
            return Err(LowerError::Plan(format!(
                "`{}` is evidence, not a column value",
                e.name()
            )));
        }
    })
}
