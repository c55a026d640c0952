//! Cost at query time: the computed columns of `usage` (`cost_usd` and its four parts) and
//! `sessions.cost_usd`, priced with the session's [`PriceTable`].
//!
//! Registered last, over whatever the catalog holds then (the SQLite or snapshot providers, a
//! reader scope's tables): `usage` becomes a view that adds the five columns, each a call of a
//! [`CostFunction`] on the row's model, time and token counts; `sessions` becomes a
//! [`SessionsWithCost`], which joins the sum of its usage only when a query reads `cost_usd`.
//! Nothing is stored, so a new price table (`--prices`) changes the answers of that run and a
//! snapshot never goes stale over a price.
//!
//! A response the table cannot price has a NULL cost; the functions note it in the
//! [`Pricing`]'s tally (once per response key, however often a plan evaluates it), which the
//! command line reports after the answer.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Builder, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::{DataFusionError, Result, ScalarValue, internal_err};
use datafusion::datasource::{MemTable, TableProvider, TableType, ViewTable, provider_as_source};
use datafusion::functions_aggregate::expr_fn::{count, sum};
use datafusion::logical_expr::{
    ColumnarValue, Expr, JoinType, LogicalPlanBuilder, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, TableProviderFilterPushDown, Volatility, cast, col, in_subquery, lit,
    when,
};
use datafusion::physical_plan::{ExecutionPlan, collect};

use super::source::Providers;
use crate::answer::UnpricedModel;
use crate::prices::{Cost, Missing, PriceTable, Tokens};

/// A price table and the responses it could not price so far.
#[derive(Debug)]
pub struct Pricing {
    table: PriceTable,
    unpriced: Mutex<HashMap<(String, Missing), HashSet<u64>>>,
    /// Numbers responses without a key, so each counts once in the tally.
    unkeyed: AtomicU64,
}

impl Pricing {
    /// Pricing with `table`, nothing tallied yet.
    pub fn new(table: PriceTable) -> Self {
        Pricing {
            table,
            unpriced: Mutex::new(HashMap::new()),
            unkeyed: AtomicU64::new(0),
        }
    }

    /// The price table.
    pub fn table(&self) -> &PriceTable {
        &self.table
    }

    /// The responses left without a cost since the last call, by model (most first), and
    /// forgets them.
    pub fn take_unpriced(&self) -> Vec<UnpricedModel> {
        let drained = match self.unpriced.lock() {
            Ok(mut tally) => std::mem::take(&mut *tally),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        let mut out: Vec<UnpricedModel> = drained
            .into_iter()
            .map(|((model, why), keys)| UnpricedModel {
                model,
                reason: why.to_string(),
                responses: keys.len() as u64,
            })
            .collect();
        out.sort_by(|a, b| b.responses.cmp(&a.responses).then(a.model.cmp(&b.model)));
        out
    }

    fn note(&self, notes: HashMap<(String, Missing), HashSet<u64>>) {
        if notes.is_empty() {
            return;
        }
        let mut tally = match self.unpriced.lock() {
            Ok(tally) => tally,
            Err(poisoned) => poisoned.into_inner(),
        };
        for (key, keys) in notes {
            tally.entry(key).or_default().extend(keys);
        }
    }
}

/// Which part of a cost a [`CostFunction`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Part {
    /// The whole cost.
    Total,
    /// Uncached input.
    Input,
    /// Output.
    Output,
    /// Cache reads.
    CacheRead,
    /// Cache writes.
    CacheWrite,
}

impl Part {
    /// Every part, with the `usage` column it fills.
    pub const COLUMNS: [(Part, &'static str); 5] = [
        (Part::Total, "cost_usd"),
        (Part::Input, "input_cost_usd"),
        (Part::Output, "output_cost_usd"),
        (Part::CacheRead, "cache_read_cost_usd"),
        (Part::CacheWrite, "cache_write_cost_usd"),
    ];

    fn of(self, cost: &Cost) -> Option<f64> {
        match self {
            Part::Total => cost.total(),
            Part::Input => cost.input,
            Part::Output => cost.output,
            Part::CacheRead => cost.cache_read,
            Part::CacheWrite => cost.cache_write,
        }
    }
}

/// `quarry_cost(part)(model, occurred_at_ms, input, output, cache_read, cache_write_5m,
/// cache_write_1h, response_key)`: the part of a response's cost in USD (NULL when unpriced).
#[derive(Debug)]
pub struct CostFunction {
    part: Part,
    name: String,
    pricing: Arc<Pricing>,
    signature: Signature,
}

impl PartialEq for CostFunction {
    fn eq(&self, other: &Self) -> bool {
        self.part == other.part && Arc::ptr_eq(&self.pricing, &other.pricing)
    }
}

impl Eq for CostFunction {}

impl Hash for CostFunction {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl CostFunction {
    /// The function of `part` priced by `pricing`.
    pub fn new(part: Part, column: &str, pricing: Arc<Pricing>) -> Self {
        let mut args = vec![DataType::Utf8];
        args.extend(std::iter::repeat_n(DataType::Int64, 6));
        args.push(DataType::Utf8);
        CostFunction {
            part,
            name: format!("quarry_{column}"),
            pricing,
            signature: Signature::exact(args, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for CostFunction {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [model, at, input, output, read, write_5m, write_1h, key] = arrays.as_slice() else {
            return internal_err!("{} takes eight arguments", self.name);
        };
        let model = model.as_string::<i32>();
        let key: &StringArray = key.as_string::<i32>();
        let at = at.as_primitive::<Int64Type>();
        let counts =
            [input, output, read, write_5m, write_1h].map(|a| a.as_primitive::<Int64Type>());
        let count = |i: usize, row: usize| -> u64 {
            let a = counts[i];
            if a.is_null(row) {
                0
            } else {
                u64::try_from(a.value(row)).unwrap_or(0)
            }
        };
        let table = self.pricing.table();
        let mut out = Float64Builder::with_capacity(rows);
        let mut notes: HashMap<(String, Missing), HashSet<u64>> = HashMap::new();
        for row in 0..rows {
            let tokens = Tokens {
                input: count(0, row),
                output: count(1, row),
                cache_read: count(2, row),
                cache_write_5m: count(3, row),
                cache_write_1h: count(4, row),
            };
            let name = if model.is_null(row) {
                ""
            } else {
                model.value(row)
            };
            let when = if at.is_null(row) {
                None
            } else {
                Some(at.value(row))
            };
            let cost = match when {
                Some(when) => table.cost(name, when, &tokens),
                None if tokens.is_empty() => Cost::ZERO,
                None => Cost::unpriced(Missing::Model),
            };
            out.append_option(self.part.of(&cost));
            if let Some(why) = cost.missing {
                let shown = if model.is_null(row) { "(none)" } else { name };
                let id = if key.is_null(row) {
                    // No key to recognise it by: counted each time it is priced.
                    self.pricing.unkeyed.fetch_add(1, Ordering::Relaxed) | (1 << 63)
                } else {
                    let mut h = DefaultHasher::new();
                    key.value(row).hash(&mut h);
                    h.finish() & !(1 << 63)
                };
                notes
                    .entry((shown.to_string(), why))
                    .or_default()
                    .insert(id);
            }
        }
        self.pricing.note(notes);
        Ok(ColumnarValue::Array(Arc::new(out.finish()) as ArrayRef))
    }
}

/// The cost column `column` of `usage` as an expression over its stored columns.
fn cost_expr(part: Part, column: &str, pricing: &Arc<Pricing>) -> Expr {
    let udf = ScalarUDF::from(CostFunction::new(part, column, Arc::clone(pricing)));
    let int = |name: &str| cast(col(name), DataType::Int64);
    udf.call(vec![
        cast(col("model"), DataType::Utf8),
        cast(col("occurred_at_ms"), DataType::Int64),
        int("input_tokens"),
        int("output_tokens"),
        int("cache_read_tokens"),
        int("cache_write_5m_tokens"),
        int("cache_write_1h_tokens"),
        cast(col("response_key"), DataType::Utf8),
    ])
    .alias(column)
}

/// `tables` with the computed columns: `usage` becomes a view adding `cost_usd` and its parts,
/// `sessions` a [`SessionsWithCost`] over the (unpriced) usage; the rest stay as they are.
pub fn priced(tables: Providers, pricing: &Arc<Pricing>) -> Result<Providers> {
    let Some(usage) = tables
        .iter()
        .find(|(name, _)| *name == "usage")
        .map(|(_, p)| Arc::clone(p))
    else {
        return Ok(tables);
    };
    let mut columns: Vec<Expr> = usage
        .schema()
        .fields()
        .iter()
        .map(|f| col(f.name().as_str()))
        .collect();
    columns.extend(
        Part::COLUMNS
            .iter()
            .map(|(part, name)| cost_expr(*part, name, pricing)),
    );
    let plan = LogicalPlanBuilder::scan("usage", provider_as_source(Arc::clone(&usage)), None)?
        .project(columns)?
        .build()?;
    let view: Arc<dyn TableProvider> = Arc::new(ViewTable::new(plan, None));
    Ok(tables
        .into_iter()
        .map(|(name, provider)| match name {
            "usage" => (name, Arc::clone(&view)),
            "sessions" => {
                let priced: Arc<dyn TableProvider> = Arc::new(SessionsWithCost::new(
                    provider,
                    Arc::clone(&usage),
                    Arc::clone(pricing),
                ));
                (name, priced)
            }
            _ => (name, provider),
        })
        .collect())
}

/// `sessions` with `cost_usd` after its stored columns: a scan that does not read it is the
/// stored table's own scan (filters and limits pushed as before); one that does joins the
/// sum of the usage costs of the sessions it reads, pricing only their responses.
#[derive(Debug)]
pub struct SessionsWithCost {
    stored: Arc<dyn TableProvider>,
    usage: Arc<dyn TableProvider>,
    pricing: Arc<Pricing>,
    schema: SchemaRef,
}

impl SessionsWithCost {
    /// `stored` sessions priced from the stored `usage` with `pricing`.
    pub fn new(
        stored: Arc<dyn TableProvider>,
        usage: Arc<dyn TableProvider>,
        pricing: Arc<Pricing>,
    ) -> Self {
        let base = stored.schema();
        let mut fields: Vec<Field> = base.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.push(Field::new("cost_usd", DataType::Float64, true));
        let schema = Arc::new(Schema::new_with_metadata(fields, base.metadata().clone()));
        SessionsWithCost {
            stored,
            usage,
            pricing,
            schema,
        }
    }

    fn cost_index(&self) -> usize {
        self.schema.fields().len() - 1
    }

    /// How the stored table takes `filter`.
    fn stored_pushdown(&self, filter: &Expr) -> Result<TableProviderFilterPushDown> {
        quarry_providers::scoped::filter_pushdown(self.stored.as_ref(), filter)
    }
}

/// The distinct `session_id`s of `batches`, as literals.
fn session_ids(batches: &[RecordBatch]) -> Result<Vec<Expr>> {
    let mut ids = std::collections::BTreeSet::new();
    for batch in batches {
        let column = batch
            .column_by_name("session_id")
            .ok_or_else(|| DataFusionError::Internal("sessions has no session_id column".into()))?;
        let column = datafusion::arrow::compute::cast(column, &DataType::Utf8)?;
        ids.extend(
            column
                .as_string::<i32>()
                .iter()
                .flatten()
                .map(str::to_string),
        );
    }
    Ok(ids.into_iter().map(lit).collect())
}

/// Whether `expr` reads `cost_usd`.
fn reads_cost(expr: &Expr) -> bool {
    expr.column_refs().iter().any(|c| c.name == "cost_usd")
}

#[async_trait]
impl TableProvider for SessionsWithCost {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        self.stored.table_type()
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        // Every filter but one on the cost is taken: the stored table answers those it can,
        // and when the cost is read, all of them select the sessions whose usage is priced.
        // Those the stored table cannot answer exactly are applied again above (`Inexact`).
        filters
            .iter()
            .map(|f| {
                if reads_cost(f) {
                    return Ok(TableProviderFilterPushDown::Unsupported);
                }
                Ok(match self.stored_pushdown(f)? {
                    TableProviderFilterPushDown::Exact => TableProviderFilterPushDown::Exact,
                    _ => TableProviderFilterPushDown::Inexact,
                })
            })
            .collect()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let cost = self.cost_index();
        if projection.is_some_and(|p| !p.contains(&cost)) {
            let mut answered = Vec::new();
            for f in filters {
                if self.stored_pushdown(f)? != TableProviderFilterPushDown::Unsupported {
                    answered.push(f.clone());
                }
            }
            return self.stored.scan(state, projection, &answered, limit).await;
        }
        let stored = provider_as_source(Arc::clone(&self.stored));
        let mut sessions = LogicalPlanBuilder::scan("sessions", stored, None)?;
        for f in filters {
            sessions = sessions.filter(f.clone())?;
        }
        let mut usage =
            LogicalPlanBuilder::scan("usage", provider_as_source(Arc::clone(&self.usage)), None)?;
        if let Some(n) = limit {
            // A few sessions (`sessions | limit 5`): read them first, then price only their
            // usage, not the whole archive's.
            let plan = sessions.limit(0, Some(n))?.build()?;
            let rows = state.create_physical_plan(&plan).await?;
            let batches = collect(rows, state.task_ctx()).await?;
            let ids = session_ids(&batches)?;
            let read = MemTable::try_new(self.stored.schema(), vec![batches])?;
            sessions =
                LogicalPlanBuilder::scan("sessions", provider_as_source(Arc::new(read)), None)?;
            usage = usage.filter(col("session_id").in_list(ids, false))?;
        } else if !filters.is_empty() {
            // Only the usage of the sessions the filters admit (a semi-join below the pricing).
            let admitted = sessions.clone().project(vec![col("session_id")])?.build()?;
            usage = usage.filter(in_subquery(col("session_id"), Arc::new(admitted)))?;
        }
        // Approximate counts (Aider's rounded reports) have no exact cost: a session holding
        // them has none either (NULL, as for a response with no price), not 0.
        let exact = when(
            col("recorded_via").eq(lit("approximate")),
            lit(ScalarValue::Float64(None)),
        )
        .otherwise(cost_expr(Part::Total, "cost_usd", &self.pricing))?
        .alias("cost_usd");
        let costs = usage
            .project(vec![col("session_id"), exact])?
            .aggregate(
                vec![col("session_id").alias("cost_session_id")],
                vec![
                    sum(col("cost_usd")).alias("cost_sum"),
                    count(col("cost_usd")).alias("cost_priced"),
                    count(lit(1)).alias("cost_rows"),
                ],
            )?
            .build()?;
        // No usage: nothing billed, 0. A response without a price: unknown, NULL.
        let session_cost = when(col("cost_rows").is_null(), lit(0.0_f64))
            .when(col("cost_priced").eq(col("cost_rows")), col("cost_sum"))
            .otherwise(lit(datafusion::common::ScalarValue::Float64(None)))?
            .alias("cost_usd");
        let mut columns: Vec<Expr> = self
            .stored
            .schema()
            .fields()
            .iter()
            .map(|f| Expr::Column(datafusion::common::Column::new(Some("sessions"), f.name())))
            .collect();
        columns.push(session_cost);
        let mut plan = sessions
            .join(
                costs,
                JoinType::Left,
                (vec!["session_id"], vec!["cost_session_id"]),
                None,
            )?
            .project(columns)?;
        if let Some(p) = projection {
            let names: Vec<Expr> = p
                .iter()
                .map(|&i| col(self.schema.field(i).name().as_str()))
                .collect();
            plan = plan.project(names)?;
        }
        if let Some(n) = limit {
            plan = plan.limit(0, Some(n))?;
        }
        let plan = plan.build()?;
        state
            .create_physical_plan(&plan)
            .await
            .map_err(|e| match e {
                DataFusionError::Context(..) => e,
                other => other.context("pricing sessions"),
            })
    }
}
