//! The computed columns of unit rows (`unit`, `origin`, `title` on messages, actions and files;
//! `unit` on assertions), as the spec's row shapes list them, computed when a query reads them.
//!
//! Registered after the cost columns, over whatever the catalog holds then (so a reader scope's
//! `sessions` is the one titles come from, masked as it shows them). `unit` is the unit's
//! name, `origin` the part of `session_id` before its first colon (a session id is
//! `origin:native_id`), and `title` the owning session's: when a query reads it, the scan reads
//! the titles of `sessions` once into a map and looks each row's up ([`SessionTitle`]), so
//! the rows still stream in the stored scan's order. Nothing is stored, so no archive or
//! snapshot changes for them.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::{DataFusionError, Result, internal_err};
use datafusion::datasource::{TableProvider, TableType, provider_as_source};
use datafusion::functions::string::expr_fn::split_part;
use datafusion::logical_expr::{
    ColumnarValue, Expr, LogicalPlanBuilder, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, TableProviderFilterPushDown, Volatility, cast, col, lit,
};
use datafusion::physical_plan::{ExecutionPlan, collect};

use super::source::Providers;

/// The names of the columns this module computes.
const COMPUTED: [&str; 3] = ["unit", "origin", "title"];

/// `tables` with each unit table's declared `unit`/`origin`/`title` columns added (a
/// [`UnitRows`] over the table); the rest stay as they are.
pub fn with_unit_columns(tables: Providers) -> Result<Providers> {
    let sessions = tables
        .iter()
        .find(|(name, _)| *name == "sessions")
        .map(|(_, p)| Arc::clone(p));
    Ok(tables
        .into_iter()
        .map(|(name, provider)| {
            let computed: Vec<&'static str> = quarry_schema::table(name)
                .map(|t| {
                    t.computed
                        .iter()
                        .map(|c| c.name)
                        .filter(|c| COMPUTED.contains(c))
                        .collect()
                })
                .unwrap_or_default();
            let unit = quarry_grammar::registry::UNITS
                .iter()
                .find(|u| u.table == name)
                .map(|u| u.singular);
            match (unit, computed.is_empty()) {
                (Some(unit), false) => {
                    let rows: Arc<dyn TableProvider> =
                        Arc::new(UnitRows::new(provider, sessions.clone(), unit, &computed));
                    (name, rows)
                }
                _ => (name, provider),
            }
        })
        .collect())
}

/// A unit table with its computed columns after the stored ones. A scan that reads none of
/// them is the stored table's own scan (filters and limits pushed as before); one that reads
/// `title` looks each row's session up in the titles of `sessions`.
#[derive(Debug)]
pub struct UnitRows {
    stored: Arc<dyn TableProvider>,
    sessions: Option<Arc<dyn TableProvider>>,
    unit: &'static str,
    computed: Vec<&'static str>,
    schema: SchemaRef,
}

impl UnitRows {
    /// `stored` with `computed` (some of `unit`, `origin`, `title`, in that order) after its
    /// columns; titles from `sessions`.
    pub fn new(
        stored: Arc<dyn TableProvider>,
        sessions: Option<Arc<dyn TableProvider>>,
        unit: &'static str,
        computed: &[&'static str],
    ) -> Self {
        let base = stored.schema();
        let mut fields: Vec<Field> = base.fields().iter().map(|f| f.as_ref().clone()).collect();
        for name in computed {
            fields.push(Field::new(*name, DataType::Utf8, *name != "unit"));
        }
        let schema = Arc::new(Schema::new_with_metadata(fields, base.metadata().clone()));
        UnitRows {
            stored,
            sessions,
            unit,
            computed: computed.to_vec(),
            schema,
        }
    }

    /// The stored table.
    pub fn stored(&self) -> &dyn TableProvider {
        self.stored.as_ref()
    }

    /// How many stored columns come before the computed ones.
    fn stored_len(&self) -> usize {
        self.schema.fields().len() - self.computed.len()
    }

    /// Whether `expr` reads a computed column.
    fn reads_computed(&self, expr: &Expr) -> bool {
        expr.column_refs()
            .iter()
            .any(|c| self.computed.contains(&c.name.as_str()))
    }

    /// The expression of computed column `name` over the stored columns (`titles` looks up
    /// a session's title).
    fn expr(&self, name: &str, titles: Option<&ScalarUDF>) -> Result<Expr> {
        let session = || cast(col("session_id"), DataType::Utf8);
        Ok(match (name, titles) {
            ("unit", _) => lit(self.unit).alias("unit"),
            ("origin", _) => split_part(session(), lit(":"), lit(1)).alias("origin"),
            (_, Some(titles)) => titles.call(vec![session()]).alias("title"),
            (other, None) => return internal_err!("no way to compute {other}"),
        })
    }

    /// The titles of the sessions `sessions` shows (as the scope shows them), by session id.
    async fn titles(&self, state: &dyn Session) -> Result<ScalarUDF> {
        let sessions = self
            .sessions
            .as_ref()
            .ok_or_else(|| DataFusionError::Plan("no sessions table to read titles from".into()))?;
        let plan =
            LogicalPlanBuilder::scan("sessions", provider_as_source(Arc::clone(sessions)), None)?
                .filter(col("title").is_not_null())?
                .project(vec![
                    cast(col("session_id"), DataType::Utf8),
                    cast(col("title"), DataType::Utf8),
                ])?
                .build()?;
        let batches = collect(state.create_physical_plan(&plan).await?, state.task_ctx()).await?;
        let mut titles = HashMap::new();
        for batch in &batches {
            let (ids, texts) = (
                batch.column(0).as_string::<i32>(),
                batch.column(1).as_string::<i32>(),
            );
            for row in 0..batch.num_rows() {
                if !ids.is_null(row) && !texts.is_null(row) {
                    titles.insert(ids.value(row).to_string(), texts.value(row).to_string());
                }
            }
        }
        Ok(ScalarUDF::new_from_impl(SessionTitle {
            titles: Arc::new(titles),
            signature: Signature::exact(vec![DataType::Utf8], Volatility::Immutable),
        }))
    }
}

#[async_trait]
impl TableProvider for UnitRows {
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
        // Filters on computed columns are applied above; the rest go to the stored table.
        filters
            .iter()
            .map(|f| {
                if self.reads_computed(f) {
                    Ok(TableProviderFilterPushDown::Unsupported)
                } else {
                    quarry_providers::scoped::filter_pushdown(self.stored.as_ref(), f)
                }
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
        let stored_len = self.stored_len();
        if projection.is_some_and(|p| p.iter().all(|&i| i < stored_len)) {
            return self.stored.scan(state, projection, filters, limit).await;
        }
        let wanted: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let reads_title = wanted
            .iter()
            .any(|&i| self.schema.field(i).name() == "title");
        let titles = match reads_title {
            true => Some(self.titles(state).await?),
            false => None,
        };
        let mut rows = LogicalPlanBuilder::scan(
            "unit_rows",
            provider_as_source(Arc::clone(&self.stored)),
            None,
        )?;
        for f in filters {
            rows = rows.filter(f.clone())?;
        }
        if let Some(n) = limit {
            rows = rows.limit(0, Some(n))?;
        }
        let columns: Vec<Expr> = wanted
            .iter()
            .map(|&i| {
                let name = self.schema.field(i).name();
                if i < stored_len {
                    Ok(col(name.as_str()))
                } else {
                    self.expr(name, titles.as_ref())
                }
            })
            .collect::<Result<_>>()?;
        let plan = rows.project(columns)?.build()?;
        state
            .create_physical_plan(&plan)
            .await
            .map_err(|e| match e {
                DataFusionError::Context(..) => e,
                other => other.context(format!("the {} rows' computed columns", self.unit)),
            })
    }
}

/// `session_title(session_id)`: the title of the session, from a map read once per scan (NULL
/// for a session with none, or one the scope does not see).
#[derive(Debug)]
struct SessionTitle {
    titles: Arc<HashMap<String, String>>,
    signature: Signature,
}

impl PartialEq for SessionTitle {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.titles, &other.titles)
    }
}

impl Eq for SessionTitle {}

impl Hash for SessionTitle {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.titles).hash(state);
    }
}

impl ScalarUDFImpl for SessionTitle {
    fn name(&self) -> &str {
        "session_title"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [ids] = arrays.as_slice() else {
            return internal_err!("session_title takes one argument");
        };
        let ids = ids.as_string::<i32>();
        let mut out = StringBuilder::with_capacity(ids.len(), ids.len() * 32);
        for row in 0..ids.len() {
            let title = (!ids.is_null(row))
                .then(|| self.titles.get(ids.value(row)))
                .flatten();
            out.append_option(title);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}
