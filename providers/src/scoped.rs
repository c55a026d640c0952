//! `ScopedTable`: one catalog table as a reader scope sees it. It wraps the table's provider
//! (SQLite or snapshot) and is what the reader's catalog registers under the table's name, so
//! nothing a query can name reaches the rows or columns outside the scope:
//!
//! - only the scope's sessions' rows exist: every scan filters the session column on the
//!   scope's session ids, a lookup in the scope's [`MemberSet`] made once per scope and archive
//!   generation (and, when the scope holds few sessions, also pushed into the inner scan as an
//!   `IN` list, so SQLite reads only their rows); it is always applied above the inner scan;
//! - admin-only columns are not in the schema (a query naming one gets "no such column");
//! - [`Visibility::Masked`] columns come out through `mask_credentials`, and a filter on one is
//!   evaluated above the masking, never decided on the stored text (so a `LIKE` cannot probe
//!   for a masked secret); the full-text marker is the one exception, answered by the
//!   archive's index. A search for a literal that no replacement could hold (`LIKE '%x%'`,
//!   `quarry_text_match`) is also run on the stored text first, below the masking, as a
//!   prefilter: it keeps every row the search of the masked text keeps (see
//!   `quarry_udf::mask::may_match_replacement`), so only the rows it keeps are masked, and
//!   the answer is the masked search's;
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
use quarry_schema::{AuthorPrivate, Table, Visibility};
use quarry_udf::functions::{MemberSet, member_of};

use crate::pass_through::PassThroughExec;

/// At most this many sessions (or hidden messages) are also pushed into the inner scan as an
/// `IN` list: SQLite then reads only their rows, and a limit can be pushed with them. Beyond
/// it the inner scan reads every row and the lookup above it decides.
pub const PUSHED_LIST_MAX: usize = 1000;

/// What a reader scope lets a session see: the sessions whose rows exist, and the owner whose
/// identity it may read.
#[derive(Debug, Clone)]
pub struct ReaderView {
    /// The session ids of the scope, decided before any planning.
    pub sessions: Arc<MemberSet>,
    /// The scope's owner, the one identity a reader sees (`None`: it sees none).
    pub owner: Option<String>,
    /// Messages the source marks as never shown to the user: neither they nor the rows of
    /// other tables naming them (by `message_id`) exist for a reader.
    pub hidden_messages: Arc<MemberSet>,
    /// The scope admits every session of rows that cannot change (a snapshot's): the tables
    /// whose rows are each owned by a session the archive holds (written and replaced with
    /// it) need no session filter then. Tables whose rows may name a session the archive does
    /// not hold (`usage`, `assertions`) keep theirs.
    pub every_session: bool,
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
    /// Whether each row is owned by a session the archive holds (see
    /// [`ReaderView::every_session`]).
    owned: bool,
    /// The columns the table's full-text index holds.
    fulltext: &'static [&'static str],
    /// The rows only their author sees (candidates), when the table has such rows.
    author_private: Option<AuthorPrivate>,
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
            owned: table.replaced_per_session && table.session_key.is_some(),
            fulltext: table.fulltext,
            author_private: table.author_private,
            view,
        })
    }

    /// The filter hiding the rows only their author sees from everyone else: the row is not
    /// private, or its author is the scope's owner.
    fn authored(&self) -> Option<Expr> {
        let private = self.author_private?;
        let marks: Vec<Expr> = private.values.iter().map(|v| lit(*v)).collect();
        let public = col(Column::from_name(private.column)).in_list(marks, true);
        Some(match &self.view.owner {
            Some(owner) => {
                public.or(col(Column::from_name(private.author)).eq(lit(owner.as_str())))
            }
            None => public,
        })
    }

    /// The filter every scan of the table carries: the row's session is one of the scope's,
    /// and it is not (part of) a hidden message.
    fn restriction(&self) -> Option<Expr> {
        if self.view.sessions.is_empty() {
            return Some(lit(false));
        }
        let in_scope = (!self.every_session()).then(|| {
            member_of(
                &self.view.sessions,
                col(Column::from_name(self.session_column)),
            )
        });
        let shown = match self.message_column {
            Some(column) if !self.view.hidden_messages.is_empty() => {
                let message = col(Column::from_name(column));
                Some(message.clone().is_null().or(std::ops::Not::not(member_of(
                    &self.view.hidden_messages,
                    message,
                ))))
            }
            _ => None,
        };
        [in_scope, shown, self.authored()]
            .into_iter()
            .flatten()
            .reduce(Expr::and)
    }

    /// Whether the scope's sessions are all this table's rows can belong to.
    fn every_session(&self) -> bool {
        self.view.every_session && self.owned
    }

    /// The restriction as the inner scan may take it, when the sets are small enough to be
    /// written out, with whether that is all of it (so a limit may go down with it).
    fn pushed_restriction(&self) -> (Option<Expr>, bool) {
        let sessions = &self.view.sessions;
        if sessions.is_empty() {
            return (Some(lit(false)), true);
        }
        let (in_scope, sessions_whole) = if self.every_session() {
            (None, true)
        } else if sessions.len() > PUSHED_LIST_MAX {
            (None, false)
        } else {
            let listed = col(Column::from_name(self.session_column))
                .in_list(sorted_literals(sessions), false);
            (Some(listed), true)
        };
        let hidden = &self.view.hidden_messages;
        let (shown, shown_whole) = match self.message_column {
            Some(_) if hidden.is_empty() => (None, true),
            None => (None, true),
            Some(_) if hidden.len() > PUSHED_LIST_MAX => (None, false),
            Some(column) => {
                let message = col(Column::from_name(column));
                let shown = message
                    .clone()
                    .is_null()
                    .or(message.in_list(sorted_literals(hidden), true));
                (Some(shown), true)
            }
        };
        let pushed = [in_scope, shown, self.authored()]
            .into_iter()
            .flatten()
            .reduce(Expr::and);
        (pushed, sessions_whole && shown_whole)
    }

    /// The inner columns the restriction reads.
    fn restriction_columns(&self) -> Result<Vec<usize>> {
        let schema = self.inner.schema();
        let mut out = Vec::new();
        if !self.every_session() {
            out.push(schema.index_of(self.session_column)?);
        }
        if let Some(column) = self.message_column
            && !self.view.hidden_messages.is_empty()
        {
            out.push(schema.index_of(column)?);
        }
        if let Some(private) = self.author_private {
            out.push(schema.index_of(private.column)?);
            out.push(schema.index_of(private.author)?);
        }
        Ok(out)
    }

    /// Whether `filter`, on masked columns, may also run on the stored text first (see the
    /// module docs): a positive search for one literal in one masked column.
    fn is_prefilter(&self, filter: &Expr) -> bool {
        let masked_column = |e: &Expr| {
            let e = match e {
                Expr::Cast(c) => c.expr.as_ref(),
                other => other,
            };
            match e {
                Expr::Column(c) => self
                    .columns
                    .iter()
                    .any(|v| v.name == c.name && v.treatment == Treatment::Masked),
                _ => false,
            }
        };
        let literal = |e: &Expr| match e {
            Expr::Literal(
                ScalarValue::Utf8(Some(s))
                | ScalarValue::Utf8View(Some(s))
                | ScalarValue::LargeUtf8(Some(s)),
                _,
            ) => Some(s.clone()),
            _ => None,
        };
        match filter {
            Expr::Like(like) if !like.negated && like.escape_char.is_none() => {
                let Some(pattern) = literal(&like.pattern) else {
                    return false;
                };
                let Some(inner) = pattern.strip_prefix('%').and_then(|p| p.strip_suffix('%'))
                else {
                    return false;
                };
                masked_column(&like.expr)
                    && !inner.contains(['%', '_', '\\'])
                    && !quarry_udf::mask::may_match_replacement(inner)
            }
            Expr::ScalarFunction(f) if f.func.name() == quarry_udf::functions::TEXT_MATCH => {
                match f.args.as_slice() {
                    [text, pattern] => {
                        masked_column(text)
                            && literal(pattern)
                                .is_some_and(|p| !quarry_udf::mask::may_match_replacement(&p))
                    }
                    _ => false,
                }
            }
            _ => false,
        }
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

/// The values of `set` as literals, in order (so the pushed SQL is the same every time).
fn sorted_literals(set: &MemberSet) -> Vec<Expr> {
    let mut values: Vec<&str> = set.iter().collect();
    values.sort_unstable();
    values.into_iter().map(lit).collect()
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
                    // Evaluated above the masking, on what the reader sees (a prefilter also
                    // runs below it).
                    return Ok(if self.is_prefilter(f) {
                        TableProviderFilterPushDown::Inexact
                    } else {
                        TableProviderFilterPushDown::Unsupported
                    });
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
        // holding a credential in an indexed column are left out, so no search (a prefix
        // query, its complement) can spell out a masked secret. A masked column the index does
        // not hold cannot be searched, so it needs no check (a table that declares no index
        // columns has all of its masked columns checked).
        let masked: Vec<&Visible> = self
            .columns
            .iter()
            .filter(|c| c.treatment == Treatment::Masked)
            .filter(|c| self.fulltext.is_empty() || self.fulltext.contains(&c.name))
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
        // Searches of masked text first run on the stored text (see the module docs).
        let prefilters: Vec<Expr> = filters
            .iter()
            .filter(|f| self.touches_treated_column(f) && self.is_prefilter(f))
            .cloned()
            .collect();
        let has_prefilters = !prefilters.is_empty();
        let mut prefilter_columns = Vec::new();
        for f in &prefilters {
            for c in f.column_refs() {
                prefilter_columns.push(self.inner.schema().index_of(&c.name)?);
            }
        }
        let mut inner_projection: Vec<usize> = Vec::new();
        for i in wanted
            .iter()
            .map(|c| c.inner)
            .chain(self.restriction_columns()?)
            .chain(guard_columns)
            .chain(prefilter_columns)
        {
            if !inner_projection.contains(&i) {
                inner_projection.push(i);
            }
        }
        let restriction = self.restriction();
        let (pushed, whole) = self.pushed_restriction();
        let mut inner_filters = filters.to_vec();
        let exact = match pushed {
            Some(pushed) => {
                let exact = matches!(
                    self.inner.supports_filters_pushdown(&[&pushed])?.as_slice(),
                    [TableProviderFilterPushDown::Exact]
                );
                inner_filters.push(pushed);
                exact && whole
            }
            // Nothing to filter: the limit goes down as it is.
            None => whole,
        };
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
        // The cheap tests first: a search of the stored text, the scope, then the guard.
        let predicate = prefilters
            .into_iter()
            .chain(restriction)
            .chain(fulltext_guard)
            .reduce(Expr::and);
        let filtered: Arc<dyn ExecutionPlan> = match predicate {
            Some(predicate) => {
                let predicate = state.create_physical_expr(predicate, &input_schema)?;
                Arc::new(FilterExec::try_new(predicate, input)?)
            }
            None => input,
        };
        let mut outputs = Vec::with_capacity(wanted.len());
        for c in &wanted {
            let expr = state.create_physical_expr(self.output(c)?, &input_schema)?;
            outputs.push((expr, c.name.to_string()));
        }
        let mut projected: Arc<dyn ExecutionPlan> =
            Arc::new(ProjectionExec::try_new(outputs, filtered)?);
        if has_prefilters {
            // The search of the masked text stays above the masking, where the rows the
            // prefilter dropped are gone (pushed into the filter below, it would mask them all
            // first).
            projected = Arc::new(PassThroughExec::new("MaskedSearchFence", projected, None));
        }
        Ok(match limit {
            Some(limit) => Arc::new(LocalLimitExec::new(projected, limit)),
            None => projected,
        })
    }
}
