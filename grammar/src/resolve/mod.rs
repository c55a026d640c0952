//! The resolver: a parsed [`Query`] checked against the registry → [`Resolved`].
//!
//! Resolution binds every field to its unit's registry entry (column or lookup), types every value
//! (numbers, dates, booleans, enum members), checks pipeline stages in order, and builds the
//! ordered `pipeline_stages` the lowering executes. Errors never broaden a query: an unknown field,
//! a stage that cannot run, or a ranked leaf in the wrong place is a diagnostic with a correction.
//! This module owns no syntax and no storage.

mod column;
mod predicate;
mod projection;
mod stage;
mod value;

pub use crate::dates::parse_date;
pub use crate::ir::*;

use crate::ast::{self, Expr, ExprKind, FieldClause, FieldRef, FieldTest, Query, Span, StageKind};
use crate::diagnostic::{Diagnostic, DiagnosticCode as C, Diagnostics, splice};
use crate::lexer::CmpOp;
use crate::registry::{
    self, Field, FieldKind, Source, TIME_BUCKETS, Unit, UnitId, session_scoped_field,
    session_scoped_names, unit_by_name, unit_def,
};
use crate::suggest::closest;

use column::Purpose;
use value::clause_value_text;

// ---- resolution -----------------------------------------------------------------------------

/// Resolves a parsed query against the registry.
pub fn resolve(query_text: &str, query: &Query) -> Result<Resolved, Diagnostics> {
    let mut r = Resolver {
        q: query_text,
        diags: Vec::new(),
    };
    let resolved = r.query(query);
    if r.diags.is_empty() {
        r.lane_needs_ranking(query);
    }
    if r.diags.is_empty()
        && let Some(res) = resolved
    {
        return Ok(res);
    }
    let mut diags: Vec<Diagnostic> = r.diags.into_iter().map(|d| d.locate(query_text)).collect();
    if diags.is_empty() {
        diags.push(
            Diagnostic::new(C::Internal, Span::default(), "resolution failed").locate(query_text),
        );
    }
    diags.sort_by_key(|d| d.span.start);
    Err(Diagnostics { diagnostics: diags })
}

#[derive(Clone, Copy)]
struct Ctx {
    unit: UnitId,
    /// Session-level predicate (exists/seq/~/near/lineage allowed).
    session_level: bool,
    /// Under a NOT.
    negated: bool,
}

struct Resolver<'q> {
    q: &'q str,
    diags: Vec<Diagnostic>,
}

impl<'q> Resolver<'q> {
    fn err(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    fn query(&mut self, query: &Query) -> Option<Resolved> {
        let head_unit = match &query.source.unit {
            Some(name) => match unit_by_name(&name.text) {
                Some(u) => u,
                None => {
                    self.err(Diagnostic::new(
                        C::UnknownUnit,
                        name.span,
                        format!("`{}` is not a unit", name.text),
                    ));
                    return None;
                }
            },
            None => unit_def(UnitId::Sessions),
        };
        let head_pred = query.source.predicate.as_ref().and_then(|e| {
            self.expr(
                e,
                Ctx {
                    unit: head_unit.id,
                    session_level: head_unit.id == UnitId::Sessions,
                    negated: false,
                },
            )
        });
        let mut stages_out = Vec::new();
        let mut unit = head_unit;
        let mut form = match query.source.form {
            ast::SourceForm::Compact => QueryForm::Compact,
            _ if head_unit.id == UnitId::Sessions => QueryForm::Session,
            _ => QueryForm::Terminal,
        };
        let mut rest: &[ast::Stage] = &query.stages;
        // scope form: sessions ... | <unit> where Q
        if let Some((first, tail)) = query.stages.split_first()
            && let StageKind::Unit {
                unit: uname,
                predicate,
            } = &first.kind
            && head_unit.id == UnitId::Sessions
        {
            rest = tail;
            match unit_by_name(&uname.text) {
                Some(u) => {
                    unit = u;
                    form = QueryForm::Scope;
                    if let Some(p) = head_pred.clone() {
                        stages_out.push(PipelineStage::SessionScope { predicate: p });
                    }
                    stages_out.push(source_stage(u));
                    if let Some(e) = predicate {
                        let ctx = Ctx {
                            unit: u.id,
                            session_level: u.id == UnitId::Sessions,
                            negated: false,
                        };
                        if let Some(p) = self.expr(e, ctx) {
                            stages_out.push(PipelineStage::Filter { predicate: p });
                        }
                    }
                }
                None => self.err(Diagnostic::new(
                    C::UnknownUnit,
                    uname.span,
                    format!("`{}` is not a unit", uname.text),
                )),
            }
        }
        if form != QueryForm::Scope {
            stages_out.push(source_stage(head_unit));
            if let Some(p) = head_pred {
                stages_out.push(PipelineStage::Filter { predicate: p });
            }
        }
        if !rest.is_empty() && form != QueryForm::Scope {
            form = QueryForm::Pipeline;
        }
        let aggregated = self.stages(rest, unit, &mut stages_out);
        if !query.projections.is_empty() {
            if unit.id != UnitId::Sessions || aggregated {
                let span = query
                    .projections
                    .first()
                    .map(|p| p.span)
                    .unwrap_or_default();
                let with_start = self
                    .q
                    .get(..span.start)
                    .and_then(|h| h.rfind("with"))
                    .unwrap_or(span.start);
                let d = Diagnostic::new(
                    C::ProjectionNotAllowed,
                    span,
                    "`with` projections attach rows to selected sessions; this query does not return session rows",
                )
                .hint("use a scope form instead: `sessions where ... | messages where ...`");
                let d = d.replace(self.q, Span::new(with_start, self.q.len()), "");
                let d = match d.correction.clone() {
                    Some(c) => d.correction(c.trim_end().to_string()),
                    None => d,
                };
                self.err(d);
            } else {
                let projections = query
                    .projections
                    .iter()
                    .filter_map(|p| self.projection(p))
                    .collect();
                stages_out.push(PipelineStage::Project { projections });
                form = QueryForm::Projection;
            }
        }
        let semantics = semantics_of(&stages_out, unit.id);
        Some(Resolved {
            unit: unit.id,
            unit_source: unit.name,
            form,
            semantics,
            pipeline_stages: stages_out,
        })
    }
}

fn source_stage(u: &Unit) -> PipelineStage {
    PipelineStage::Source {
        unit: u.id,
        table: u.table,
    }
}

fn semantics_of(stages: &[PipelineStage], unit: UnitId) -> Semantics {
    let mut has = (false, false, false); // aggregate, project, lineage
    let mut ranked = false;
    for s in stages {
        match s {
            PipelineStage::Aggregate { .. } => has.0 = true,
            PipelineStage::Project { .. } => has.1 = true,
            PipelineStage::Filter { predicate } if unit == UnitId::Sessions => {
                visit(predicate, &mut |p| match p {
                    Pred::Lineage { .. } => has.2 = true,
                    Pred::Semantic { .. } | Pred::Fts { .. } | Pred::Text { .. } => ranked = true,
                    _ => {}
                });
            }
            _ => {}
        }
    }
    if has.0 {
        Semantics::Aggregate
    } else if has.1 {
        Semantics::BoundedContext
    } else if has.2 {
        Semantics::RecursivePage
    } else if ranked {
        Semantics::TopK
    } else {
        Semantics::Exhaustive
    }
}

impl Resolver<'_> {
    /// A `lane:` clause picks the lane of a ranked search: in a query that is not in the ranked
    /// form (docs/language.md, "Ranked form") nothing is ranked, so it is an error, corrected
    /// by leaving it out.
    fn lane_needs_ranking(&mut self, query: &Query) {
        let Some(predicate) = &query.source.predicate else {
            return;
        };
        let mut lanes = Vec::new();
        lane_clauses(predicate, &mut lanes);
        if lanes.is_empty() || crate::ranked::ranked_form(self.q, query).is_some() {
            return;
        }
        for span in lanes {
            let d = Diagnostic::new(
                C::LaneWithoutRanking,
                span,
                "`lane:` picks the retrieval lane of a ranked search, and this query ranks nothing",
            )
            .found(format!("`{}`", span.text(self.q)))
            .hint("a query is ranked when it is search text beside session clauses, with no stage but `limit` and `offset`: `\"flaky login\" lane:dialogue | limit 10`")
            .replace(self.q, with_following_space(self.q, span), "");
            self.err(d);
        }
    }
}

/// `span` with the spaces after it (a clause left out leaves no gap).
fn with_following_space(text: &str, span: Span) -> Span {
    let rest = text.get(span.end..).unwrap_or_default();
    let spaces = rest.len() - rest.trim_start_matches(' ').len();
    Span::new(span.start, span.end + spaces)
}

/// Whether `expr` is a `lane:` clause.
fn is_lane(expr: &ast::Expr) -> bool {
    matches!(&expr.kind, ast::ExprKind::Field(c) if !c.field.session && c.field.name == "lane")
}

/// The spans of the `lane:` clauses in `expr` (with their negation, when negated).
fn lane_clauses(expr: &ast::Expr, out: &mut Vec<Span>) {
    match &expr.kind {
        ast::ExprKind::Field(clause) if is_lane(expr) => out.push(clause.span),
        ast::ExprKind::And { operands, .. } | ast::ExprKind::Or { operands } => {
            for operand in operands {
                lane_clauses(operand, out);
            }
        }
        // `-lane:x` / `NOT lane:x`: the negation goes with the clause.
        ast::ExprKind::Not { operand, .. } if is_lane(operand) => out.push(expr.span),
        ast::ExprKind::Not { operand, .. } => lane_clauses(operand, out),
        ast::ExprKind::Group { inner } => lane_clauses(inner, out),
        _ => {}
    }
}
