//! Top-k queries on the snapshot, answered from the row groups that can hold the answer.
//!
//! A query such as `messages where role:assistant | sort by output_tokens desc | limit 10`
//! needs ten rows, yet a plain plan decodes every projected column of every row (ten million
//! message ids, say) to find them. Parquet records each row group's smallest and largest value
//! of every column, and before running such a plan the engine tries, in turn:
//! 1. **At the extreme.** When at least k row groups reach the key's largest value of all (the
//!    smallest, ascending) — token counts capped by `max_tokens` do — rows equal to it tie for
//!    the top, and nothing lies beyond it (integer and time statistics are exact). The plan runs
//!    with `key = extreme` on its scan and its sort replaced by a limit, so the scan stops after
//!    the first k matching rows. Only for a sort on one key, NULLs last.
//! 2. **Beyond the k-th extreme.** With `M` the k-th largest of the row groups' maxima (the k-th
//!    smallest minimum, ascending), the plan runs with `key >= M` on its scan (with
//!    `OR key IS NULL` when NULLs sort first), which DataFusion's Parquet scan turns into
//!    row-group and page pruning.
//!
//! Each guess is verified, so the answer is exact whatever the statistics say: every row a
//! bound leaves out sorts after every row it keeps (or ties with them on the only key), so when
//! at least k rows pass, the bounded plan's answer is the query's answer. When fewer pass (the
//! query's filter rejected the rows holding the extremes), the next is tried, and last the
//! original plan. Among rows tied on every sort key any may be picked, as DataFusion itself
//! may.
//!
//! Applies to a plan whose rows come from one snapshot table through filters and plain-column
//! projections into a sort with a fetch, above which only projections and limits follow.

use std::sync::Arc;

use datafusion::arrow::array::{Array, RecordBatch};
use datafusion::arrow::compute::{SortOptions, sort_to_indices};
use datafusion::catalog::default_table_source::source_as_provider;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, Result, ScalarValue};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::logical_expr::logical_plan::{FetchType, Filter, SkipType};
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder, Sort, lit};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::prelude::SessionContext;
use quarry_providers::snapshot::SnapshotTable;

/// A top-k plan the bound applies to.
#[derive(Debug)]
pub(crate) struct TopK {
    /// The optimized plan.
    plan: LogicalPlan,
    /// The scanned table and the key's column in it.
    table: datafusion::common::TableReference,
    column: String,
    provider: Arc<dyn datafusion::catalog::TableProvider>,
    /// Rows the sort keeps.
    k: usize,
    /// Whether the sort has one key only.
    single_key: bool,
    /// The sort's direction on its first key.
    descending: bool,
    nulls_first: bool,
    /// Rows the whole plan gives when at least `k` rows reach the sort.
    expected: usize,
}

/// The snapshot table `provider` reads: itself, or the stored table under a unit table's
/// computed columns.
fn snapshot_of(
    provider: &Arc<dyn datafusion::datasource::TableProvider>,
) -> Option<&SnapshotTable> {
    let provider = provider.as_ref();
    provider.downcast_ref::<SnapshotTable>().or_else(|| {
        provider
            .downcast_ref::<super::unit_rows::UnitRows>()
            .and_then(|rows| rows.stored().downcast_ref::<SnapshotTable>())
    })
}

/// A filter a top-k plan's scan gets from the row groups' statistics.
#[derive(Debug)]
pub(crate) enum Bound {
    /// At least k row groups reach the key's extreme (the largest value of all, descending):
    /// rows equal to it tie for the top, so the first k such rows the scan meets are an answer
    /// and the sort is not needed. Only for a sort on one key.
    AtExtreme(Expr),
    /// Rows at or beyond the k-th row group's extreme: the plan sorts those.
    Beyond(Expr),
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bound::AtExtreme(p) => write!(f, "the first rows with {p}, unsorted"),
            Bound::Beyond(p) => write!(f, "{p}"),
        }
    }
}

impl TopK {
    /// The top-k shape of `plan` (optimized first), or `None` when the bound does not apply.
    pub(crate) fn find(ctx: &SessionContext, plan: &LogicalPlan) -> Result<Option<TopK>> {
        // Most plans have no sort at all: no need to optimize them twice.
        if !plan.exists(|node| Ok(matches!(node, LogicalPlan::Sort(_))))? {
            return Ok(None);
        }
        let plan = ctx.state().optimize(plan)?;
        let Some((sort, above, below)) = sort_with_fetch(&plan)? else {
            return Ok(None);
        };
        let (Some(k), Some(first)) = (sort.fetch, sort.expr.first()) else {
            return Ok(None);
        };
        let Expr::Column(key) = &first.expr else {
            return Ok(None);
        };
        let Some((table, column, provider)) = scan_column(below, key)? else {
            return Ok(None);
        };
        if snapshot_of(&provider).is_none() || k == 0 {
            return Ok(None);
        }
        let Some(expected) = rows_through(&above, k)? else {
            return Ok(None);
        };
        Ok(Some(TopK {
            table,
            column,
            provider,
            k,
            single_key: sort.expr.len() == 1,
            descending: !first.asc,
            nulls_first: first.nulls_first,
            expected,
            plan,
        }))
    }

    /// The bounds to try in turn, from the row groups' statistics of the key: none when fewer
    /// than k row groups have them (a bound could then cut nothing worth its check).
    pub(crate) async fn bounds(&self, ctx: &SessionContext) -> Result<Vec<Bound>> {
        let Some(snapshot) = snapshot_of(&self.provider) else {
            return Ok(Vec::new());
        };
        let extremes = snapshot
            .row_group_extremes(&ctx.state(), &self.column, self.descending)
            .await?;
        if extremes.len() < self.k {
            return Ok(Vec::new());
        }
        let options = SortOptions {
            descending: self.descending,
            nulls_first: false,
        };
        let order = sort_to_indices(&extremes, Some(options), Some(self.k))?;
        let (Some(&top), Some(&kth)) = (order.values().first(), order.values().get(self.k - 1))
        else {
            return Ok(Vec::new());
        };
        let top = ScalarValue::try_from_array(&extremes, top as usize)?;
        let kth = ScalarValue::try_from_array(&extremes, kth as usize)?;
        let key = Expr::Column(Column::new(Some(self.table.clone()), self.column.clone()));
        let mut bounds = Vec::new();
        // Integer and time statistics are exact values, so nothing lies beyond the extreme.
        let exact = {
            let t = extremes.data_type();
            t.is_integer() || t.is_temporal()
        };
        if self.single_key && !self.nulls_first && exact && top == kth {
            bounds.push(Bound::AtExtreme(key.clone().eq(lit(top))));
        }
        let mut beyond = if self.descending {
            key.clone().gt_eq(lit(kth))
        } else {
            key.clone().lt_eq(lit(kth))
        };
        if self.nulls_first {
            beyond = beyond.or(key.is_null());
        }
        bounds.push(Bound::Beyond(beyond));
        Ok(bounds)
    }

    /// Runs the plan under `bound`; the rows when they are the answer (at least k rows passed
    /// the bound), else `None`.
    pub(crate) async fn run(
        &self,
        ctx: &SessionContext,
        bound: &Bound,
    ) -> Result<Option<Vec<RecordBatch>>> {
        let bounded = with_bound(self.plan.clone(), &self.table, bound)?;
        let batches = ctx.execute_logical_plan(bounded).await?.collect().await?;
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        Ok((rows == self.expected).then_some(batches))
    }
}

/// Runs `plan` through the first bound that applies and holds: the answer's stream, or `None`
/// for the caller to run `plan` as it is.
pub(crate) async fn execute(
    ctx: &SessionContext,
    plan: &LogicalPlan,
) -> Result<Option<SendableRecordBatchStream>> {
    let Some(topk) = TopK::find(ctx, plan)? else {
        return Ok(None);
    };
    for bound in topk.bounds(ctx).await? {
        if let Some(batches) = topk.run(ctx, &bound).await? {
            let schema = Arc::new(topk.plan.schema().as_arrow().clone());
            let stream = futures::stream::iter(batches.into_iter().map(Ok));
            return Ok(Some(Box::pin(RecordBatchStreamAdapter::new(
                schema, stream,
            ))));
        }
    }
    Ok(None)
}

/// The sort at the top of `plan` (below projections and limits only), the nodes above it (top
/// first) and its input.
#[allow(clippy::type_complexity)]
fn sort_with_fetch(plan: &LogicalPlan) -> Result<Option<(&Sort, Vec<&LogicalPlan>, &LogicalPlan)>> {
    let mut above = Vec::new();
    let mut node = plan;
    loop {
        match node {
            LogicalPlan::Projection(p) => {
                above.push(node);
                node = p.input.as_ref();
            }
            LogicalPlan::Limit(l) => {
                above.push(node);
                node = l.input.as_ref();
            }
            LogicalPlan::SubqueryAlias(a) => {
                above.push(node);
                node = a.input.as_ref();
            }
            LogicalPlan::Sort(sort) => return Ok(Some((sort, above, sort.input.as_ref()))),
            _ => return Ok(None),
        }
    }
}

/// Follows `key` down through filters and plain-column projections to a table scan: the
/// scanned table, the key's column in it and the table's provider.
#[allow(clippy::type_complexity)]
fn scan_column(
    plan: &LogicalPlan,
    key: &Column,
) -> Result<
    Option<(
        datafusion::common::TableReference,
        String,
        Arc<dyn datafusion::catalog::TableProvider>,
    )>,
> {
    let mut key = key.clone();
    let mut node = plan;
    loop {
        match node {
            LogicalPlan::Filter(f) => node = f.input.as_ref(),
            LogicalPlan::Projection(p) => {
                let Ok(index) = p.schema.index_of_column(&key) else {
                    return Ok(None);
                };
                let inner = match p.expr.get(index) {
                    Some(Expr::Column(c)) => c,
                    Some(Expr::Alias(a)) => match a.expr.as_ref() {
                        Expr::Column(c) => c,
                        _ => return Ok(None),
                    },
                    _ => return Ok(None),
                };
                key = inner.clone();
                node = p.input.as_ref();
            }
            LogicalPlan::TableScan(scan) => {
                let named = key
                    .relation
                    .as_ref()
                    .is_none_or(|r| r.resolved_eq(&scan.table_name));
                if !named || scan.projected_schema.index_of_column(&key).is_err() {
                    return Ok(None);
                }
                let provider = source_as_provider(&scan.source)?;
                return Ok(Some((scan.table_name.clone(), key.name, provider)));
            }
            _ => return Ok(None),
        }
    }
}

/// The rows the nodes `above` a sort give when the sort gives `k` (limits skip and fetch,
/// projections keep), or `None` for a limit that is not a literal.
fn rows_through(above: &[&LogicalPlan], k: usize) -> Result<Option<usize>> {
    let mut rows = k;
    for node in above.iter().rev() {
        if let LogicalPlan::Limit(limit) = node {
            let SkipType::Literal(skip) = limit.get_skip_type()? else {
                return Ok(None);
            };
            let FetchType::Literal(fetch) = limit.get_fetch_type()? else {
                return Ok(None);
            };
            rows = rows.saturating_sub(skip);
            if let Some(fetch) = fetch {
                rows = rows.min(fetch);
            }
        }
    }
    Ok(Some(rows))
}

/// `plan` under `bound`: its filter on the scan of `table`; for [`Bound::AtExtreme`] the sort
/// becomes a plain limit of as many rows.
fn with_bound(
    plan: LogicalPlan,
    table: &datafusion::common::TableReference,
    bound: &Bound,
) -> Result<LogicalPlan> {
    let (predicate, unsorted) = match bound {
        Bound::AtExtreme(p) => (p, true),
        Bound::Beyond(p) => (p, false),
    };
    plan.transform_up(|node| match node {
        LogicalPlan::TableScan(scan) if &scan.table_name == table => {
            let scan = LogicalPlan::TableScan(scan);
            let filter = Filter::try_new(predicate.clone(), Arc::new(scan))?;
            Ok(Transformed::yes(LogicalPlan::Filter(filter)))
        }
        LogicalPlan::Sort(sort) if unsorted => {
            let limit = LogicalPlanBuilder::from(sort.input.as_ref().clone())
                .limit(0, sort.fetch)?
                .build()?;
            Ok(Transformed::yes(limit))
        }
        other => Ok(Transformed::no(other)),
    })
    .map(|t| t.data)
}
