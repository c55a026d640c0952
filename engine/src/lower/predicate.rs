//! Predicates → DataFusion expressions over one unit's rows. Every leaf is an expression of the
//! row: own columns directly; `session.` fields, child-unit fields (`tool:`, `path:`),
//! `exists`, `seq`, full-text and lineage leaves as `IN (subquery)` over the owning session (or
//! message), which DataFusion turns into semi-joins.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, Result};
use datafusion::functions::expr_fn::{lower, strpos};
use datafusion::functions_aggregate::expr_fn::min;
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{
    Expr, ExprFunctionExt, JoinType, LogicalPlan, LogicalPlanBuilder, col, exists, in_subquery,
    lit, out_ref_col,
};
use quarry_archive::schema::{fold_for_index, fts_query};
use quarry_grammar::ast::CmpOp;
use quarry_grammar::ir::{FieldPred, FieldScope, Literal, Number, Pred, Test, Value};
use quarry_grammar::registry::{Evidence, FieldKind, Source, UnitId, unit_def};

use super::clock::{Clock, time_lit};
use super::planted::PlantedBug;
use super::tables::Tables;
use super::{LowerError, session_key};

/// Builds predicate expressions.
pub struct PredicateLowerer<'a> {
    /// Table sources.
    pub tables: &'a Tables,
    /// Relative dates and zones.
    pub clock: &'a Clock,
    /// A bug planted for the differential fuzzer's self-test (never set otherwise).
    pub planted: Option<PlantedBug>,
}

fn plan_err(message: impl Into<String>) -> LowerError {
    LowerError::Plan(message.into())
}

impl PredicateLowerer<'_> {
    /// The expression of `pred` over rows of `unit`.
    pub fn lower(&self, pred: &Pred, unit: UnitId) -> Result<Expr, LowerError> {
        match pred {
            Pred::And { operands } => self.fold(operands, unit, Expr::and, lit(true)),
            Pred::Or { operands } => self.fold(operands, unit, Expr::or, lit(false)),
            Pred::Not { operand } => {
                let operand = self.lower(operand, unit)?;
                Ok(match self.planted {
                    Some(PlantedBug::NotKeepsNulls) => operand.is_not_true(),
                    _ => !operand,
                })
            }
            Pred::Field(field) => self.field(field, unit),
            Pred::Text { text, phrase } => self.fts(&fts_query(text, *phrase), unit),
            // An explicit FTS5 query keeps its syntax; its terms fold like indexed text.
            Pred::Fts { query } => self.fts(&fold_for_index(query), unit),
            Pred::Semantic { .. } => Err(LowerError::EmbeddingsUnavailable),
            Pred::Lineage { session_id } => {
                let seeds = self
                    .tables
                    .scan("sessions")?
                    .filter(
                        col("session_id")
                            .eq(lit(session_id.as_str()))
                            .or(col("native_id").eq(lit(session_id.as_str()))),
                    )?
                    .project(vec![col("root_session_id")])?
                    .build()?;
                let roots = self
                    .tables
                    .scan("sessions")?
                    .filter(in_subquery(col("root_session_id"), Arc::new(seeds)))?;
                let ids = roots.project(vec![col("session_id")])?.build()?;
                Ok(in_subquery(self.key_of(unit)?, Arc::new(ids)))
            }
            Pred::Exists {
                unit: child,
                predicate,
            } => {
                let child_def = unit_def(*child);
                let key = session_key(*child).ok_or_else(|| {
                    plan_err(format!("{} rows have no owning session", child_def.name))
                })?;
                let inner = self.lower(predicate, *child)?;
                let plan = self
                    .tables
                    .scan(child_def.table)?
                    .filter(inner)?
                    .project(vec![col(key)])?
                    .build()?;
                Ok(in_subquery(self.key_of(unit)?, Arc::new(plan)))
            }
            Pred::Seq { steps } => {
                let plan = self.seq(steps)?;
                Ok(in_subquery(self.key_of(unit)?, Arc::new(plan)))
            }
        }
    }

    fn fold(
        &self,
        operands: &[Pred],
        unit: UnitId,
        join: fn(Expr, Expr) -> Expr,
        empty: Expr,
    ) -> Result<Expr, LowerError> {
        let mut exprs = operands.iter().map(|p| self.lower(p, unit));
        let Some(first) = exprs.next() else {
            return Ok(empty);
        };
        exprs.try_fold(first?, |acc, next| Ok(join(acc, next?)))
    }

    /// The column of `unit` that names its owning session.
    fn key_of(&self, unit: UnitId) -> Result<Expr, LowerError> {
        session_key(unit).map(col).ok_or_else(|| {
            plan_err(format!(
                "{} rows have no owning session",
                unit_def(unit).name
            ))
        })
    }

    /// Full-text `query` (FTS5 syntax) over the blocks of the row's session, message or block.
    fn fts(&self, query: &str, unit: UnitId) -> Result<Expr, LowerError> {
        let matching = self
            .tables
            .scan("blocks")?
            .filter(quarry_udf::functions::fts_match(col("text"), lit(query)))?;
        match unit {
            UnitId::Blocks => Ok(quarry_udf::functions::fts_match(col("text"), lit(query))),
            UnitId::Messages => {
                let plan = matching.project(vec![col("message_id")])?.build()?;
                Ok(in_subquery(col("message_id"), Arc::new(plan)))
            }
            _ => {
                let plan = matching.project(vec![col("session_id")])?.build()?;
                Ok(in_subquery(self.key_of(unit)?, Arc::new(plan)))
            }
        }
    }

    fn field(&self, field: &FieldPred, unit: UnitId) -> Result<Expr, LowerError> {
        if field.scope == FieldScope::Session && unit != UnitId::Sessions {
            let mut own = field.clone();
            own.scope = FieldScope::Own;
            own.unit = UnitId::Sessions;
            let test = self.field(&own, UnitId::Sessions)?;
            let plan = self
                .tables
                .scan("sessions")?
                .filter(test)?
                .project(vec![col("session_id")])?
                .build()?;
            return Ok(in_subquery(self.key_of(unit)?, Arc::new(plan)));
        }
        match &field.source {
            Source::Column { column } => self.test(col(*column), field),
            Source::AnyOf { columns } => {
                let mut tests = columns.iter().map(|c| self.test(col(*c), field));
                let first = tests
                    .next()
                    .ok_or_else(|| plan_err("a field with no columns"))??;
                tests.try_fold(first, |acc, t| Ok(acc.or(t?)))
            }
            Source::Via {
                unit: UnitId::Actions,
                column,
            } if unit == UnitId::Files => {
                // A file's actions are its session's actions on its path: a correlated
                // EXISTS, which DataFusion turns into a semi-join on both columns.
                let outer = |c: &str| out_ref_col(DataType::Utf8, format!("files.{c}"));
                let test = self.test(col(*column), field)?;
                let plan = self
                    .tables
                    .scan("actions")?
                    .filter(
                        test.and(col("actions.session_id").eq(outer("session_id")))
                            .and(col("actions.tool_path").eq(outer("path"))),
                    )?
                    .build()?;
                Ok(exists(Arc::new(plan)))
            }
            Source::Via { unit: via, column } => {
                let (own_key, via_key) = via_keys(unit, *via);
                let test = self.test(col(*column), field)?;
                let plan = self
                    .tables
                    .scan(unit_def(*via).table)?
                    .filter(test)?
                    .project(vec![col(via_key)])?
                    .build()?;
                Ok(in_subquery(col(own_key), Arc::new(plan)))
            }
            Source::Derived { .. } => self.derived(field, unit),
            Source::Lane => Err(LowerError::LaneUnavailable(field.field.to_string())),
        }
    }

    /// `has:` — evidence present in the session, as the registry declares each value.
    fn derived(&self, field: &FieldPred, unit: UnitId) -> Result<Expr, LowerError> {
        let Test::Match { values } = &field.test else {
            return Err(plan_err(format!("{} takes values", field.field)));
        };
        let exprs = values
            .iter()
            .map(|value| match value {
                Value::Evidence(evidence) => self.evidence(evidence),
                other => Err(plan_err(format!(
                    "`{}:{other}` is not evidence",
                    field.field
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let combined = exprs
            .into_iter()
            .reduce(Expr::or)
            .ok_or_else(|| plan_err("has: needs a value"))?;
        if unit == UnitId::Sessions {
            Ok(combined)
        } else {
            let plan = self
                .tables
                .scan("sessions")?
                .filter(combined)?
                .project(vec![col("session_id")])?
                .build()?;
            Ok(in_subquery(self.key_of(unit)?, Arc::new(plan)))
        }
    }

    /// One piece of evidence, over session rows.
    fn evidence(&self, evidence: &Evidence) -> Result<Expr, LowerError> {
        Ok(match evidence {
            Evidence::Counter { column, .. } => col(*column).gt(lit(0i64)),
            Evidence::Row {
                unit,
                column,
                values,
                ..
            } => {
                let values = values.iter().map(|v| lit(*v)).collect();
                let plan = self
                    .tables
                    .scan(unit_def(*unit).table)?
                    .filter(col(*column).in_list(values, false))?
                    .project(vec![self.key_of(*unit)?])?
                    .build()?;
                in_subquery(col("session_id"), Arc::new(plan))
            }
        })
    }

    /// The test of one column by the field's kind.
    fn test(&self, column: Expr, field: &FieldPred) -> Result<Expr, LowerError> {
        match &field.test {
            Test::Match { values } => {
                let mut exprs = Vec::new();
                for v in values {
                    exprs.push(self.match_value(column.clone(), field.kind, v)?);
                }
                exprs
                    .into_iter()
                    .reduce(Expr::or)
                    .ok_or_else(|| plan_err("a match with no values"))
            }
            Test::Bool { value } => Ok(column.eq(lit(*value))),
            Test::Compare { op, value } => self.compare(column, *op, value, field.kind),
            Test::Between { low, high } => {
                let low = self.bound(low, false)?;
                let high = self.bound(high, true)?;
                Ok(column.clone().gt_eq(low).and(column.lt_eq(high)))
            }
        }
    }

    fn match_value(
        &self,
        column: Expr,
        kind: FieldKind,
        value: &Value,
    ) -> Result<Expr, LowerError> {
        Ok(match value {
            Value::Text(text) => match kind {
                FieldKind::Prefix => column.ilike(lit(format!("{}%", escape_like(text)))),
                FieldKind::Ref => {
                    let stored = lower(column);
                    let exact = stored.clone().eq(lit(text.to_lowercase()));
                    match quarry_schema::refs::Ref::parse(text) {
                        Some(_) => exact,
                        None => exact
                            .or(stored.eq(lit(format!("session:{}", text.trim().to_lowercase())))),
                    }
                }
                FieldKind::Equality => lower(column).eq(lit(text.to_lowercase())),
                FieldKind::Json => strpos(
                    column,
                    lit(serde_json::Value::String(text.clone()).to_string()),
                )
                .gt(lit(0i64)),
                FieldKind::Substring | FieldKind::Path => {
                    column.ilike(lit(format!("%{}%", escape_like(text))))
                }
                other => {
                    return Err(plan_err(format!(
                        "a {} field does not match text",
                        other.as_str()
                    )));
                }
            },
            Value::Enum(member) => column.eq(lit(*member)),
            Value::Bool(b) => column.eq(lit(*b)),
            Value::Number(Number::Int(n)) => column.eq(lit(*n)),
            Value::Number(Number::Float(x)) => column.eq(lit(*x)),
            Value::Evidence(e) => {
                return Err(plan_err(format!("`{}` is evidence, not a value", e.name())));
            }
        })
    }

    fn bound(&self, value: &Literal, upper: bool) -> Result<Expr, LowerError> {
        Ok(match value {
            Literal::Int(n) => lit(*n),
            Literal::Float(f) => lit(*f),
            Literal::Date(d) if upper => {
                time_lit(self.clock.end_of_day_millis(d).map_err(|e| plan_err(e.0))?)
            }
            Literal::Date(d) => time_lit(self.clock.millis(d).map_err(|e| plan_err(e.0))?),
        })
    }

    fn compare(
        &self,
        column: Expr,
        op: CmpOp,
        value: &Literal,
        _kind: FieldKind,
    ) -> Result<Expr, LowerError> {
        // Whole days: `> day` means after the day, `<= day` through its end.
        let after_day = matches!(op, CmpOp::Gt | CmpOp::Le);
        let v = self.bound(value, after_day)?;
        Ok(match op {
            CmpOp::Eq => match value {
                Literal::Date(_) => column
                    .clone()
                    .gt_eq(self.bound(value, false)?)
                    .and(column.lt_eq(self.bound(value, true)?)),
                _ => column.eq(v),
            },
            CmpOp::Ne => match value {
                Literal::Date(_) => column
                    .clone()
                    .lt(self.bound(value, false)?)
                    .or(column.gt(self.bound(value, true)?)),
                _ => column.not_eq(v),
            },
            CmpOp::Lt => column.lt(v),
            CmpOp::Le => column.lt_eq(v),
            CmpOp::Gt => column.gt(v),
            CmpOp::Ge if self.planted == Some(PlantedBug::GreaterEqualAsGreater) => column.gt(v),
            CmpOp::Ge => column.gt_eq(v),
        })
    }

    /// Sessions having actions matching each step in order (a subsequence by time, then id):
    /// each step keeps, per session, the earliest matching action after the previous step's.
    fn seq(&self, steps: &[Pred]) -> Result<LogicalPlan, LowerError> {
        let ordered = self.tables.scan("actions")?.window(vec![
            row_number()
                .partition_by(vec![col("session_id")])
                .order_by(vec![
                    col("occurred_at_ms").sort(true, true),
                    col("action_id").sort(true, true),
                ])
                .build()?
                .alias("__ord"),
        ])?;
        let mut previous: Option<LogicalPlan> = None;
        for step in steps {
            let predicate = self.lower(step, UnitId::Actions)?;
            let matching = ordered.clone().filter(predicate)?;
            let joined = match previous.take() {
                None => matching,
                Some(prev) => matching.join(
                    prev,
                    JoinType::Inner,
                    (vec!["session_id"], vec!["__prev_session"]),
                    Some(col("__ord").gt(col("__prev_ord"))),
                )?,
            };
            let next = joined
                .aggregate(
                    vec![col("session_id").alias("__prev_session")],
                    vec![min(col("__ord")).alias("__prev_ord")],
                )?
                .build()?;
            previous = Some(next);
        }
        let last = previous.ok_or_else(|| plan_err("seq needs at least one step"))?;
        Ok(LogicalPlanBuilder::from(last)
            .project(vec![col("__prev_session").alias("session_id")])?
            .build()?)
    }
}

/// The columns joining `owner` rows with `via` rows.
fn via_keys(owner: UnitId, via: UnitId) -> (&'static str, &'static str) {
    match (owner, via) {
        (UnitId::Messages, UnitId::Blocks | UnitId::Actions) => ("message_id", "message_id"),
        (UnitId::Blocks, UnitId::Actions) => ("block_id", "tool_use_block_id"),
        (owner, via) => (
            session_key(owner).unwrap_or("session_id"),
            unit_def(via).session_column.unwrap_or("session_id"),
        ),
    }
}

/// Escapes `%`, `_` and `\` for a LIKE pattern (DataFusion's default escape is `\`).
fn escape_like(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

impl From<DataFusionError> for LowerError {
    fn from(e: DataFusionError) -> Self {
        LowerError::DataFusion(e)
    }
}
