//! The computed columns of unit rows (`unit`, `origin`, `title` on messages, actions and files;
//! `unit` on assertions), as the spec's row shapes list them, computed when a query reads them.
//!
//! Registered after the cost columns, over whatever the catalog holds then (so a reader scope's
//! `sessions` is the one titles come from, masked as it shows them). `unit` is the unit's
//! name, `origin` the part of `session_id` before its first colon (a session id is
//! `origin:native_id`), and `title` the owning session's, joined from `sessions` only when a
//! query reads it. Nothing is stored, so no archive or snapshot changes for them.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::{TableProvider, TableType, provider_as_source};
use datafusion::functions::string::expr_fn::split_part;
use datafusion::logical_expr::{
    Expr, JoinType, LogicalPlanBuilder, TableProviderFilterPushDown, cast, col, lit,
};
use datafusion::physical_plan::ExecutionPlan;

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
/// `title` joins the titles of `sessions`.
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

    /// The expression of computed column `name` over the stored columns (and the joined
    /// `title_of_session`).
    fn expr(&self, name: &str) -> Expr {
        match name {
            "unit" => lit(self.unit).alias("unit"),
            "origin" => split_part(cast(col("session_id"), DataType::Utf8), lit(":"), lit(1))
                .alias("origin"),
            _ => col("title_of_session").alias("title"),
        }
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
        let mut rows = LogicalPlanBuilder::scan(
            "unit_rows",
            provider_as_source(Arc::clone(&self.stored)),
            None,
        )?;
        for f in filters {
            rows = rows.filter(f.clone())?;
        }
        // A row's session is one row of `sessions`, so the limit may go before the join.
        if let Some(n) = limit {
            rows = rows.limit(0, Some(n))?;
        }
        if reads_title {
            let sessions = self.sessions.as_ref().ok_or_else(|| {
                DataFusionError::Plan("no sessions table to read titles from".into())
            })?;
            let titles = LogicalPlanBuilder::scan(
                "titled_sessions",
                provider_as_source(Arc::clone(sessions)),
                None,
            )?
            .project(vec![
                col("session_id").alias("session_of_title"),
                col("title").alias("title_of_session"),
            ])?
            .build()?;
            rows = rows.join(
                titles,
                JoinType::Left,
                (vec!["session_id"], vec!["session_of_title"]),
                None,
            )?;
        }
        let columns: Vec<Expr> = wanted
            .iter()
            .map(|&i| {
                let name = self.schema.field(i).name();
                if i < stored_len {
                    Expr::Column(datafusion::common::Column::new(
                        Some("unit_rows"),
                        name.as_str(),
                    ))
                } else {
                    self.expr(name)
                }
            })
            .collect();
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
