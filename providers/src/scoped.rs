//! `ScopedTable`: one catalog table as a reader scope sees it. It wraps the table's provider
//! (SQLite or snapshot) and is what the reader's catalog registers under the table's name, so
//! nothing a query can name reaches the rows or columns outside the scope:
//!
//! - only the scope's sessions' rows exist: every scan filters the session column on the
//!   scope's session ids (pushed into the inner scan where it can be, and always applied again
//!   above it);
//! - admin-only columns are not in the schema (a query naming one gets "no such column");
//! - [`Visibility::Masked`] columns come out through `mask_credentials`, and a filter on one is
//!   evaluated above the masking, never pushed down onto the stored text (so a `LIKE` cannot
//!   probe for a masked secret); the full-text marker is the one exception, answered by the
//!   archive's index;
//! - [`Visibility::Identity`] columns show the scope's own owner and NULL for anyone else.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNode;
use datafusion::common::{Column, DFSchema, DataFusionError, Result, ScalarValue};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, cast, col, lit, when};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::limit::LocalLimitExec;
use datafusion::physical_plan::projection::ProjectionExec;
use quarry_schema::{Table, Visibility};

/// What a reader scope lets a session see: the sessions whose rows exist, and the owner whose
/// identity it may read.
#[derive(Debug, Clone)]
pub struct ReaderView {
    /// The session ids of the scope, decided before any planning.
    pub sessions: Arc<Vec<String>>,
    /// The scope's owner, the one identity a reader sees (`None`: it sees none).
    pub owner: Option<String>,
    /// Messages the source marks as never shown to the user: neither they nor the rows of
    /// other tables naming them (by `message_id`) exist for a reader.
    pub hidden_messages: Arc<Vec<String>>,
}

/// How one visible column comes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Treatment {
    AsIs,
    Masked,
    Identity,
}

/// One visible column: where it is in the inner provider's schema, and how it comes out.
#[derive(Debug, Clone)]
struct Visible {
    inner: usize,
    name: &'static str,
    treatment: Treatment,
}

/// A catalog table as a reader scope sees it (see the module docs).
#[derive(Debug)]
pub struct ScopedTable {
    inner: Arc<dyn TableProvider>,
    schema: SchemaRef,
    columns: Vec<Visible>,
    session_column: &'static str,
    /// The table's `message_id` column, when it has one.
    message_column: Option<&'static str>,
    view: ReaderView,
}

/// The column of `table` naming the session a row belongs to: its session key, else the
/// column linking it to `sessions` (`assertions.target_ref`). `None`: the table has no
/// session rows, and a reader scope does not see it.
pub fn session_column(table: &Table) -> Option<&'static str> {
    table.session_key.or_else(|| {
        table
            .links
            .iter()
            .find(|l| l.table == "sessions" && l.references == "session_id")
            .map(|l| l.column)
    })
}

impl ScopedTable {
    /// `inner` (the provider of `table`) as `view` sees it. Fails when the table has no
    /// session column or the provider lacks a declared column.
    pub fn new(inner: Arc<dyn TableProvider>, table: &Table, view: ReaderView) -> Result<Self> {
        let session_column = session_column(table).ok_or_else(|| {
            DataFusionError::Plan(format!(
                "{} has no session column, so a reader scope cannot see it",
                table.name
            ))
        })?;
        let inner_schema = inner.schema();
        let mut columns = Vec::new();
        let mut fields = Vec::new();
        for c in table.columns.iter().filter(|c| c.is_visible_to_readers()) {
            let index = inner_schema.index_of(c.name)?;
            let treatment = match c.visibility {
                Visibility::Masked => Treatment::Masked,
                Visibility::Identity => Treatment::Identity,
                _ => Treatment::AsIs,
            };
            let field = inner_schema.field(index).clone();
            fields.push(match treatment {
                Treatment::Identity => field.with_nullable(true),
                _ => field,
            });
            columns.push(Visible {
                inner: index,
                name: c.name,
                treatment,
            });
        }
        inner_schema.index_of(session_column)?;
        let message_column = table.column("message_id").map(|c| c.name);
        Ok(ScopedTable {
            inner,
            schema: Arc::new(Schema::new(fields)),
            columns,
            session_column,
            message_column,
            view,
        })
    }

    /// The filter every scan of the table carries: the row's session is one of the scope's,
    /// and it is not (part of) a hidden message.
    fn restriction(&self) -> Expr {
        if self.view.sessions.is_empty() {
            return lit(false);
        }
        let in_scope = col(Column::from_name(self.session_column)).in_list(
            self.view.sessions.iter().map(|s| lit(s.as_str())).collect(),
            false,
        );
        match self.message_column {
            Some(column) if !self.view.hidden_messages.is_empty() => {
                let message = col(Column::from_name(column));
                let shown = message.clone().is_null().or(message.in_list(
                    self.view
                        .hidden_messages
                        .iter()
                        .map(|s| lit(s.as_str()))
                        .collect(),
                    true,
                ));
                in_scope.and(shown)
            }
            _ => in_scope,
        }
    }

    /// The inner columns the restriction reads.
    fn restriction_columns(&self) -> Result<Vec<usize>> {
        let schema = self.inner.schema();
        let mut out = vec![schema.index_of(self.session_column)?];
        if let Some(column) = self.message_column {
            out.push(schema.index_of(column)?);
        }
        Ok(out)
    }

    /// The visible column `expr`'s columns name, when one of them is not shown as stored.
    fn touches_treated_column(&self, expr: &Expr) -> bool {
        let names: HashSet<&str> = self
            .columns
            .iter()
            .filter(|c| c.treatment != Treatment::AsIs)
            .map(|c| c.name)
            .collect();
        expr.column_refs()
            .iter()
            .any(|c| names.contains(c.name.as_str()))
    }

    /// The output expression of visible column `c`, over the inner scan's columns.
    fn output(&self, c: &Visible) -> Result<Expr> {
        let stored = col(Column::from_name(c.name));
        Ok(match c.treatment {
            Treatment::AsIs => stored,
            Treatment::Masked => quarry_udf::functions::mask_credentials(stored),
            Treatment::Identity => {
                let ty = self.inner.schema().field(c.inner).data_type().clone();
                match &self.view.owner {
                    Some(owner) => when(stored.clone().eq(lit(owner.as_str())), stored)
                        .otherwise(cast(lit(ScalarValue::Null), ty))?,
                    None => cast(lit(ScalarValue::Null), ty),
                }
            }
        })
    }
}

/// Whether `expr` is the full-text marker, answered by the archive's index.
fn is_fulltext(expr: &Expr) -> bool {
    quarry_udf::functions::as_fts_match(expr).is_some()
}

/// How `provider` takes the one filter `filter` (a wrapping provider asks its inner one filter
/// by filter).
pub fn filter_pushdown(
    provider: &dyn TableProvider,
    filter: &Expr,
) -> Result<TableProviderFilterPushDown> {
    Ok(provider
        .supports_filters_pushdown(&[filter])?
        .into_iter()
        .next()
        .unwrap_or(TableProviderFilterPushDown::Unsupported))
}

/// Whether the full-text marker occurs anywhere in `expr` (under an `OR` or a `NOT` too).
fn contains_fulltext(expr: &Expr) -> bool {
    expr.exists(|e| Ok(is_fulltext(e))).unwrap_or(true)
}

#[async_trait]
impl TableProvider for ScopedTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        filters
            .iter()
            .map(|f| {
                if self.touches_treated_column(f) && !is_fulltext(f) {
                    // Evaluated above the masking, on what the reader sees.
                    return Ok(TableProviderFilterPushDown::Unsupported);
                }
                filter_pushdown(self.inner.as_ref(), f)
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
        let wanted: Vec<&Visible> = match projection {
            Some(p) => p
                .iter()
                .map(|&i| {
                    self.columns.get(i).ok_or_else(|| {
                        DataFusionError::Internal(format!("projection index {i} out of range"))
                    })
                })
                .collect::<Result<_>>()?,
            None => self.columns.iter().collect(),
        };
        // A full-text match is answered by the index over the stored text, which a reader
        // does not see: whenever a filter holds one (alone, or under an OR or a NOT), rows
        // holding a credential are left out, so no search (a prefix query, its complement)
        // can spell out a masked secret.
        let masked: Vec<&Visible> = self
            .columns
            .iter()
            .filter(|c| c.treatment == Treatment::Masked)
            .collect();
        let fulltext_guard =
            (filters.iter().any(contains_fulltext) && !masked.is_empty()).then(|| {
                masked
                    .iter()
                    .map(|c| {
                        let stored = col(Column::from_name(c.name));
                        stored
                            .clone()
                            .is_null()
                            .or(quarry_udf::functions::mask_credentials(stored.clone()).eq(stored))
                    })
                    .reduce(Expr::and)
                    .unwrap_or_else(|| lit(true))
            });
        let guard_columns: Vec<usize> = if fulltext_guard.is_some() {
            masked.iter().map(|c| c.inner).collect()
        } else {
            Vec::new()
        };
        let mut inner_projection: Vec<usize> = Vec::new();
        for i in wanted
            .iter()
            .map(|c| c.inner)
            .chain(self.restriction_columns()?)
            .chain(guard_columns)
        {
            if !inner_projection.contains(&i) {
                inner_projection.push(i);
            }
        }
        let restriction = self.restriction();
        let exact = matches!(
            self.inner
                .supports_filters_pushdown(&[&restriction])?
                .as_slice(),
            [TableProviderFilterPushDown::Exact]
        );
        let mut inner_filters = filters.to_vec();
        inner_filters.push(restriction.clone());
        let input = self
            .inner
            .scan(
                state,
                Some(&inner_projection),
                &inner_filters,
                if exact && fulltext_guard.is_none() {
                    limit
                } else {
                    None
                },
            )
            .await?;
        let input_schema = DFSchema::try_from(input.schema().as_ref().clone())?;
        let predicate = match fulltext_guard {
            Some(guard) => restriction.and(guard),
            None => restriction,
        };
        let predicate = state.create_physical_expr(predicate, &input_schema)?;
        let filtered: Arc<dyn ExecutionPlan> = Arc::new(FilterExec::try_new(predicate, input)?);
        let mut outputs = Vec::with_capacity(wanted.len());
        for c in &wanted {
            let expr = state.create_physical_expr(self.output(c)?, &input_schema)?;
            outputs.push((expr, c.name.to_string()));
        }
        let projected: Arc<dyn ExecutionPlan> =
            Arc::new(ProjectionExec::try_new(outputs, filtered)?);
        Ok(match limit {
            Some(limit) => Arc::new(LocalLimitExec::new(projected, limit)),
            None => projected,
        })
    }
}
