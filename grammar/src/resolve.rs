//! The resolver: a parsed [`Query`] checked against the registry → [`Resolved`].
//!
//! Resolution binds every field to its unit's registry entry (column or lookup), types every value
//! (numbers, dates, booleans, enum members), checks pipeline stages in order, and builds the
//! ordered `pipeline_stages` the lowering executes. Errors never broaden a query: an unknown field,
//! a stage that cannot run, or a ranked leaf in the wrong place is a diagnostic with a correction.
//! This module owns no syntax and no storage.

use serde::Serialize;

use crate::ast::{self, Expr, ExprKind, FieldClause, FieldRef, FieldTest, Query, Span, StageKind};
use crate::diagnostic::{Diagnostic, DiagnosticCode as C, Diagnostics, splice};
use crate::lexer::CmpOp;
use crate::registry::{
    self, Field, FieldKind, Source, TIME_BUCKETS, Unit, UnitId, session_scoped_field,
    session_scoped_names, unit_by_name, unit_def,
};

/// The closest candidate to `word` (for "did you mean"), if one is close enough.
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let mut best: Option<(&'a str, f64)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(word, c);
        let lev = strsim::levenshtein(word, c);
        let ok = score >= 0.85 || (lev <= 2 && word.len() > 2);
        if ok && best.is_none_or(|(_, s)| score > s) {
            best = Some((c, score));
        }
    }
    best.map(|(c, _)| c)
}

/// The query form, as the spec names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QueryForm {
    /// `field:value ...` selecting sessions.
    Compact,
    /// `sessions where P`.
    Session,
    /// `<unit> where P` or a bare unit.
    Terminal,
    /// A unit query with pipeline stages.
    Pipeline,
    /// `sessions where P | <unit> where Q ...`.
    Scope,
    /// `... with unit(cols)`.
    Projection,
}

/// What the result rows mean (the envelope's `semantics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Semantics {
    /// Every matching row.
    Exhaustive,
    /// Ranked by relevance (text or vector lanes).
    TopK,
    /// Aggregate buckets over every matching row.
    Aggregate,
    /// Sessions with attached rows (projection).
    BoundedContext,
    /// A recursive lineage walk.
    RecursivePage,
}

/// A resolved, typed query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolved {
    /// The unit the result rows belong to.
    pub unit: UnitId,
    /// Its name (`observed-events`).
    pub unit_source: &'static str,
    /// The query form.
    pub form: QueryForm,
    /// What the rows mean.
    pub semantics: Semantics,
    /// The ordered stages the lowering executes.
    pub pipeline_stages: Vec<PipelineStage>,
}

impl Resolved {
    /// The row predicate (the `filter` stage), if any.
    pub fn predicate(&self) -> Option<&Pred> {
        self.pipeline_stages.iter().find_map(|s| match s {
            PipelineStage::Filter { predicate } => Some(predicate),
            _ => None,
        })
    }

    /// The session scope (scope form), if any.
    pub fn session_scope(&self) -> Option<&Pred> {
        self.pipeline_stages.iter().find_map(|s| match s {
            PipelineStage::SessionScope { predicate } => Some(predicate),
            _ => None,
        })
    }
}

/// One executable stage, in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "stage")]
pub enum PipelineStage {
    /// Scope form: the rows' owning sessions must match this session predicate.
    SessionScope {
        /// The session predicate.
        predicate: Pred,
    },
    /// Scan a unit.
    Source {
        /// The unit.
        unit: UnitId,
        /// Its table.
        table: &'static str,
    },
    /// Keep rows matching the predicate.
    Filter {
        /// The predicate.
        predicate: Pred,
    },
    /// Group rows.
    GroupBy {
        /// The keys.
        keys: Vec<GroupKey>,
    },
    /// Reduce groups (or all rows).
    Aggregate {
        /// The metrics, in order.
        metrics: Vec<Metric>,
        /// Whether `count` was implied by a `group by` without `count`/`agg`.
        implicit: bool,
    },
    /// Order rows or buckets.
    Sort {
        /// The key.
        key: SortKey,
        /// Descending.
        descending: bool,
    },
    /// Keep these columns.
    Select {
        /// The columns, in order.
        columns: Vec<ColumnRef>,
    },
    /// Skip rows.
    Offset {
        /// How many.
        n: u64,
    },
    /// Keep at most N rows.
    Limit {
        /// How many.
        n: u64,
    },
    /// Attach rows of other units to every session.
    Project {
        /// The projections.
        projections: Vec<ResolvedProjection>,
    },
}

impl PipelineStage {
    /// The stage's stable name (`session_scope`, `filter`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            PipelineStage::SessionScope { .. } => "session_scope",
            PipelineStage::Source { .. } => "source",
            PipelineStage::Filter { .. } => "filter",
            PipelineStage::GroupBy { .. } => "group_by",
            PipelineStage::Aggregate { .. } => "aggregate",
            PipelineStage::Sort { .. } => "sort",
            PipelineStage::Select { .. } => "select",
            PipelineStage::Offset { .. } => "offset",
            PipelineStage::Limit { .. } => "limit",
            PipelineStage::Project { .. } => "project",
        }
    }
}

/// A column of the unit's table or of the owning session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColumnRef {
    /// `own` or `session`.
    pub scope: FieldScope,
    /// The field name as written (without `session.`).
    pub field: String,
    /// Where the value comes from.
    pub source: Source,
}

/// Whose field a reference names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldScope {
    /// The row's own unit.
    Own,
    /// The row's owning session (`session.<f>`).
    Session,
}

/// A resolved `group by` key.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "key")]
pub enum GroupKey {
    /// A field.
    Field {
        /// The column.
        column: ColumnRef,
        /// The output label.
        label: String,
    },
    /// A time bucket over the unit's time column.
    Time {
        /// hour, day, week, month or year.
        bucket: &'static str,
        /// The time column.
        column: &'static str,
        /// The output label (`time_day`).
        label: String,
    },
}

/// A resolved aggregate metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metric {
    /// The function.
    pub function: AggFunction,
    /// The field, absent for `count`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<ColumnRef>,
    /// The stable output key (`count`, `avg_word_count`).
    pub label: String,
}

/// Aggregate functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "fn", content = "n")]
pub enum AggFunction {
    /// Number of rows.
    Count,
    /// Number of distinct values.
    CountDistinct,
    /// Sum (booleans as 0/1).
    Sum,
    /// Mean (booleans as 0/1).
    Avg,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Exact interpolated median.
    Median,
    /// Sample standard deviation.
    Stddev,
    /// Exact nearest-rank percentile p1..p99.
    Percentile(u8),
}

/// A resolved sort key.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "by")]
pub enum SortKey {
    /// The unit's time column.
    Time {
        /// The column.
        column: &'static str,
    },
    /// The `count` metric of an aggregate.
    Count,
    /// The group key(s).
    Key,
    /// A metric label of an aggregate.
    Metric {
        /// The label.
        label: String,
    },
    /// A field of the rows.
    Field {
        /// The column.
        column: ColumnRef,
    },
}

/// A resolved `with` projection item.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedProjection {
    /// The attached unit.
    pub unit: UnitId,
    /// Selected columns (empty: the default payload).
    pub columns: Vec<String>,
    /// Bracket filters `field:value`.
    pub filters: Vec<(String, String)>,
    /// `first:N` / `last:N`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
}

/// A `first:N` / `last:N` window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Window {
    /// Last rather than first.
    pub last: bool,
    /// N.
    pub n: u64,
}

/// A resolved predicate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum Pred {
    /// All of.
    And {
        /// Operands.
        operands: Vec<Pred>,
    },
    /// Any of.
    Or {
        /// Operands.
        operands: Vec<Pred>,
    },
    /// Not.
    Not {
        /// Operand.
        operand: Box<Pred>,
    },
    /// A field test.
    Field(FieldPred),
    /// A full-text term over session content (compact bare or quoted text).
    Text {
        /// The term or phrase.
        text: String,
        /// Quoted: a phrase.
        phrase: bool,
    },
    /// An explicit FTS leaf `~"..."`.
    Fts {
        /// The FTS query.
        query: String,
    },
    /// A semantic-vector leaf (needs embeddings).
    Semantic {
        /// The probe.
        probe: SemanticProbe,
    },
    /// A lineage seed.
    Lineage {
        /// The seed session id.
        session_id: String,
    },
    /// A child unit has at least one matching row in the session.
    Exists {
        /// The child unit.
        unit: UnitId,
        /// The child predicate.
        predicate: Box<Pred>,
    },
    /// Ordered action steps within a session.
    Seq {
        /// Each step is a predicate over `actions`.
        steps: Vec<Pred>,
    },
}

/// What a semantic leaf compares against.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "probe", content = "value")]
pub enum SemanticProbe {
    /// A text.
    Text(String),
    /// A session's embedding.
    Session(String),
}

/// A typed field test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldPred {
    /// The unit whose field it is.
    pub unit: UnitId,
    /// Own field or `session.` field.
    pub scope: FieldScope,
    /// The field name.
    pub field: &'static str,
    /// Its kind.
    pub kind: FieldKind,
    /// Where its value comes from.
    pub source: Source,
    /// The test.
    pub test: Test,
    /// The clause's span in the query.
    pub span: Span,
}

/// A typed test.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "test")]
pub enum Test {
    /// Matches any of the values (substring, equality, prefix, enum, path, json — per kind).
    Match {
        /// The values.
        values: Vec<String>,
    },
    /// A boolean.
    Bool {
        /// The value.
        value: bool,
    },
    /// An ordered comparison.
    Compare {
        /// The operator.
        op: CmpOp,
        /// The value.
        value: Literal,
    },
    /// Inclusive range.
    Between {
        /// Lower bound.
        low: Literal,
        /// Upper bound.
        high: Literal,
    },
}

/// A typed literal.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "type", content = "value")]
pub enum Literal {
    /// An integer.
    Int(i64),
    /// A decimal.
    Float(f64),
    /// A time.
    Date(DateLit),
}

/// A time literal; the lowering turns it into epoch milliseconds with `QUARRY_NOW` and `--tz`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "date")]
pub enum DateLit {
    /// Now minus an amount.
    Relative {
        /// How many units.
        amount: u32,
        /// s, m (minutes), h, d, w, mo, y.
        unit: &'static str,
    },
    /// Start of today (local zone).
    Today,
    /// Start of yesterday.
    Yesterday,
    /// An ISO date (`2026-06-30`) or RFC 3339 timestamp.
    Absolute {
        /// The text as written.
        text: String,
        /// Year.
        year: u16,
        /// Month 1-12.
        month: u8,
        /// Day 1-31.
        day: u8,
        /// Whether a time of day was given.
        has_time: bool,
    },
}

/// Parses a date value: `7d`, `12h`, `today`, `2026-06-30`, `2026-06-30T10:00:00Z`.
pub fn parse_date(s: &str) -> Option<DateLit> {
    match s {
        "today" => return Some(DateLit::Today),
        "yesterday" => return Some(DateLit::Yesterday),
        "now" => {
            return Some(DateLit::Relative {
                amount: 0,
                unit: "s",
            });
        }
        _ => {}
    }
    let digits = s.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits > 0 && digits < s.len() && !s.contains('-') {
        let (num, unit) = s.split_at(digits);
        let unit: &'static str = match unit {
            "s" => "s",
            "m" | "min" => "m",
            "h" => "h",
            "d" => "d",
            "w" => "w",
            "mo" => "mo",
            "y" => "y",
            _ => return None,
        };
        let amount = num.parse::<u32>().ok()?;
        return Some(DateLit::Relative { amount, unit });
    }
    let (date, time) = match s.split_once(['T', ' ']) {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let mut parts = date.split('-');
    let y = parts.next()?;
    let m = parts.next()?;
    let d = parts.next()?;
    if parts.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let year = y.parse::<u16>().ok()?;
    let month = m.parse::<u8>().ok()?;
    let day = d.parse::<u8>().ok()?;
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let max_day = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if day == 0 || day > max_day {
        return None;
    }
    if let Some(t) = time
        && !valid_time(t)
    {
        return None;
    }
    Some(DateLit::Absolute {
        text: s.to_string(),
        year,
        month,
        day,
        has_time: time.is_some(),
    })
}

fn valid_time(t: &str) -> bool {
    // hh:mm[:ss[.fff]][Z|±hh:mm]
    let (clock, zone) = match t.find(['Z', '+', '-']) {
        Some(i) => (t.get(..i).unwrap_or(""), t.get(i..).unwrap_or("")),
        None => (t, ""),
    };
    let mut parts = clock.split(':');
    let ok_num = |p: Option<&str>, max: u32| {
        p.is_some_and(|p| {
            let int = p.split('.').next().unwrap_or("");
            int.len() == 2 && int.parse::<u32>().is_ok_and(|n| n <= max)
        })
    };
    let hh = ok_num(parts.next(), 23);
    let mm = ok_num(parts.next(), 59);
    let ss = match parts.next() {
        Some(p) => ok_num(Some(p), 60),
        None => true,
    };
    let zone_ok = zone.is_empty()
        || zone == "Z"
        || (zone.len() == 6
            && zone
                .get(1..)
                .is_some_and(|z| z.len() == 5 && z.as_bytes().get(2) == Some(&b':')));
    hh && mm && ss && parts.next().is_none() && zone_ok
}

// ---- resolution -----------------------------------------------------------------------------

/// Resolves a parsed query against the registry.
pub fn resolve(query_text: &str, query: &Query) -> Result<Resolved, Diagnostics> {
    let mut r = Resolver {
        q: query_text,
        diags: Vec::new(),
    };
    let resolved = r.query(query);
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

    // ---- predicates --------------------------------------------------------------------

    fn expr(&mut self, e: &Expr, ctx: Ctx) -> Option<Pred> {
        match &e.kind {
            ExprKind::Or { operands } => {
                let ops: Vec<Option<Pred>> = operands.iter().map(|o| self.expr(o, ctx)).collect();
                let ops: Option<Vec<Pred>> = ops.into_iter().collect();
                Some(Pred::Or { operands: ops? })
            }
            ExprKind::And { operands, .. } => {
                let ops: Vec<Option<Pred>> = operands.iter().map(|o| self.expr(o, ctx)).collect();
                let ops: Option<Vec<Pred>> = ops.into_iter().collect();
                Some(Pred::And { operands: ops? })
            }
            ExprKind::Not { operand, .. } => {
                let inner = self.expr(
                    operand,
                    Ctx {
                        negated: true,
                        ..ctx
                    },
                )?;
                Some(Pred::Not {
                    operand: Box::new(inner),
                })
            }
            ExprKind::Group { inner } => self.expr(inner, ctx),
            ExprKind::Field(fc) => self.field_clause(fc, ctx),
            ExprKind::Text { text, quoted } => {
                if !self.session_only(e, ctx, "text search") {
                    return None;
                }
                Some(Pred::Text {
                    text: text.clone(),
                    phrase: *quoted,
                })
            }
            ExprKind::Fts { text } => {
                let unit = unit_def(ctx.unit);
                if !ctx.session_level && !unit.fts {
                    self.err(self.session_only_diag(e, ctx, "`~` full-text leaves"));
                    return None;
                }
                Some(Pred::Fts {
                    query: text.clone(),
                })
            }
            ExprKind::Exists { unit, predicate } => {
                if !self.session_only(e, ctx, "`exists`") {
                    return None;
                }
                let child = match registry::unit_by_singular(&unit.text) {
                    Some(u) => u,
                    None => {
                        self.err(Diagnostic::new(
                            C::UnknownUnit,
                            unit.span,
                            format!("`{}` is not a unit", unit.text),
                        ));
                        return None;
                    }
                };
                let inner = self.expr(
                    predicate,
                    Ctx {
                        unit: child.id,
                        session_level: false,
                        negated: false,
                    },
                )?;
                Some(Pred::Exists {
                    unit: child.id,
                    predicate: Box::new(inner),
                })
            }
            ExprKind::Seq { steps } => {
                if !self.session_only(e, ctx, "`seq`") {
                    return None;
                }
                let mut out = Vec::new();
                for step in steps {
                    let mut clauses = Vec::new();
                    for c in &step.clauses {
                        if c.field.session || !registry::SEQ_FIELDS.contains(&c.field.name.as_str())
                        {
                            let d = Diagnostic::new(
                                C::InvalidSequence,
                                c.field.span,
                                format!(
                                    "`{}` cannot be used in a sequence step",
                                    c.field.display()
                                ),
                            )
                            .supported(registry::SEQ_FIELDS.iter().copied())
                            .found(format!("`{}`", c.field.display()));
                            let d = d.replace(self.q, c.field.span, "action");
                            self.err(d);
                            continue;
                        }
                        let actx = Ctx {
                            unit: UnitId::Actions,
                            session_level: false,
                            negated: false,
                        };
                        if let Some(p) = self.field_clause(c, actx) {
                            clauses.push(p);
                        }
                    }
                    out.push(if clauses.len() == 1 {
                        clauses.pop()?
                    } else {
                        Pred::And { operands: clauses }
                    });
                }
                Some(Pred::Seq { steps: out })
            }
        }
    }

    fn session_only(&mut self, e: &Expr, ctx: Ctx, what: &str) -> bool {
        if ctx.session_level {
            return true;
        }
        let d = self.session_only_diag(e, ctx, what);
        self.err(d);
        false
    }

    fn session_only_diag(&self, e: &Expr, ctx: Ctx, what: &str) -> Diagnostic {
        let unit = unit_def(ctx.unit);
        let clause = e.span.text(self.q);
        let d = Diagnostic::new(
            C::SessionOnlyPredicate,
            e.span,
            format!(
                "{what} cannot be used in a predicate over {}: it selects sessions",
                unit.name
            ),
        )
        .hint(format!(
            "scope the rows by session instead: `sessions where {clause} | {} where ...`",
            unit.name
        ));
        // Correction: drop the clause if it is one operand of the query's only AND at top level.
        match self
            .remove_operand(e.span)
            .or_else(|| self.to_scope_form(e.span, unit))
        {
            Some(fixed) => d.correction(fixed),
            None => d,
        }
    }

    /// `<unit> where <clause> REST` → `sessions where <clause> | <unit> REST`.
    fn to_scope_form(&self, span: Span, unit: &Unit) -> Option<String> {
        let head = format!("{} where ", unit.name);
        let before = self.q.get(..span.start)?;
        if before.trim_start() != head {
            return None;
        }
        let clause = span.text(self.q);
        let rest = self.q.get(span.end..)?.trim_start();
        if !(rest.is_empty() || rest.starts_with('|')) {
            return None;
        }
        let rest = if rest.is_empty() {
            String::new()
        } else {
            format!(" {rest}")
        };
        Some(format!("sessions where {clause} | {}{rest}", unit.name))
    }

    /// The query without the clause at `span` and its `AND` (when that leaves a valid shape).
    fn remove_operand(&self, span: Span) -> Option<String> {
        let after = self.q.get(span.end..)?;
        let before = self.q.get(..span.start)?;
        if let Some(rest) = after.strip_prefix(" AND ") {
            return Some(format!("{before}{rest}"));
        }
        if let Some(head) = before.strip_suffix(" AND ") {
            return Some(format!("{head}{after}"));
        }
        None
    }

    fn field_clause(&mut self, fc: &FieldClause, ctx: Ctx) -> Option<Pred> {
        let (field, scope) = self.lookup(&fc.field, fc, ctx)?;
        // ranked leaves
        match field.kind {
            FieldKind::Semantic => return self.semantic(fc, field, ctx),
            FieldKind::Lineage => return self.lineage(fc, ctx),
            _ => {}
        }
        let unit = if scope == FieldScope::Session {
            UnitId::Sessions
        } else {
            ctx.unit
        };
        let test = self.test(fc, field)?;
        Some(Pred::Field(FieldPred {
            unit,
            scope,
            field: field.name,
            kind: field.kind,
            source: field.source,
            test,
            span: fc.span,
        }))
    }

    fn lookup(
        &mut self,
        fref: &FieldRef,
        fc: &FieldClause,
        ctx: Ctx,
    ) -> Option<(&'static Field, FieldScope)> {
        let unit = unit_def(ctx.unit);
        if fref.session {
            if let Some(f) = session_scoped_field(&fref.name) {
                return Some((f, FieldScope::Session));
            }
            let names = session_scoped_names();
            let mut d = Diagnostic::new(
                C::UnknownSessionField,
                fref.span,
                format!("`session.{}` is not a session field", fref.name),
            )
            .found(format!("`session.{}`", fref.name))
            .supported(names.iter().map(|n| format!("session.{n}")));
            if let Some(best) = closest(&fref.name, &names) {
                d = d.hint(format!("did you mean `session.{best}`?")).replace(
                    self.q,
                    fref.span,
                    &format!("session.{best}"),
                );
            }
            self.err(d);
            return None;
        }
        if !ctx.session_level
            && unit.field(&fref.name).is_none()
            && let Some(f) = unit_def(UnitId::Sessions).field(&fref.name)
            && f.source == Source::Lane
        {
            let e = Expr {
                kind: ExprKind::Field(fc.clone()),
                span: fc.span,
            };
            let d = self.session_only_diag(&e, ctx, &format!("`{}:`", f.name));
            self.err(d);
            return None;
        }
        if let Some(f) = unit.field(&fref.name) {
            if (matches!(f.kind, FieldKind::Semantic | FieldKind::Lineage)
                || f.source == Source::Lane)
                && !ctx.session_level
            {
                let d = self.session_only_diag(
                    &Expr {
                        kind: ExprKind::Field(fc.clone()),
                        span: fc.span,
                    },
                    ctx,
                    &format!("`{}:`", f.name),
                );
                self.err(d);
                return None;
            }
            return Some((f, FieldScope::Own));
        }
        self.err(self.unsupported_field(fref, fc, unit, ctx));
        None
    }

    fn unsupported_field(
        &self,
        fref: &FieldRef,
        fc: &FieldClause,
        unit: &Unit,
        ctx: Ctx,
    ) -> Diagnostic {
        let name = fref.name.as_str();
        let known_somewhere = registry::UNITS.iter().any(|u| u.field(name).is_some());
        let code = if known_somewhere {
            C::UnsupportedField
        } else {
            C::UnknownField
        };
        let message = if known_somewhere {
            format!(
                "field `{name}` is not supported for {} predicates",
                unit.singular
            )
        } else {
            format!("unknown field `{name}` for {} predicates", unit.singular)
        };
        let names = unit.field_names();
        let mut d = Diagnostic::new(code, fref.span, message)
            .found(format!("`{name}`"))
            .supported(names.iter().copied());
        // 1. a session field on a child unit → session.<f>
        if unit.id != UnitId::Sessions && session_scoped_field(name).is_some() {
            return d
                .hint(format!(
                    "`{name}` is a session field: scope the rows with `session.{name}`"
                ))
                .replace(self.q, fref.span, &format!("session.{name}"));
        }
        // 2. sessions: text → contains
        if unit.id == UnitId::Sessions && matches!(name, "text" | "body" | "content") {
            let value = clause_value_text(fc);
            return d
                .hint("session content is searched with `contains:` (substring) or `~\"...\"` (full text)")
                .replace(self.q, fc.span, &format!("contains:{value}"));
        }
        // 3. sessions: a child unit's field → exists <unit>(...)
        if unit.id == UnitId::Sessions
            && ctx.session_level
            && let Some(child) = registry::UNITS
                .iter()
                .find(|u| u.id != UnitId::Sessions && u.field(name).is_some())
        {
            let clause = fc.span.text(self.q);
            return d
                .hint(format!(
                    "`{name}` is a field of {}: test it with `exists {}(...)`",
                    child.name, child.singular
                ))
                .replace(
                    self.q,
                    fc.span,
                    &format!("exists {}({clause})", child.singular),
                );
        }
        // 4. did you mean
        if let Some(best) = closest(name, &names) {
            d = d
                .hint(format!("did you mean `{best}`?"))
                .replace(self.q, fref.span, best);
        } else if !known_somewhere && !fc.field.session {
            let text = fc.span.text(self.q).replace('"', "");
            d = d
                .hint("to search for text containing `:`, quote it: \"a:b\"")
                .replace(self.q, fc.span, &format!("\"{text}\""));
        }
        d
    }

    fn semantic(&mut self, fc: &FieldClause, field: &Field, ctx: Ctx) -> Option<Pred> {
        if ctx.negated {
            let d = Diagnostic::new(
                C::NegatedRankedLeaf,
                fc.span,
                format!("a ranked `{}:` leaf cannot be negated", field.name),
            )
            .hint("ranked leaves order sessions by similarity; there is no \"not similar\" set")
            .found(format!("`NOT {}`", fc.span.text(self.q)));
            let d = match self.unnegate(fc.span) {
                Some(fixed) => d.correction(fixed),
                None => d,
            };
            self.err(d);
            return None;
        }
        let value = match &fc.test {
            FieldTest::Match { value } => value,
            _ => {
                self.err(
                    Diagnostic::new(
                        C::InvalidRef,
                        fc.span,
                        format!(
                            "`{}:` takes a text or a session: `{}:\"text\"`",
                            field.name, field.name
                        ),
                    )
                    .replace(
                        self.q,
                        fc.span,
                        &format!("{}:\"text\"", field.name),
                    ),
                );
                return None;
            }
        };
        let probe = if value.quoted {
            SemanticProbe::Text(value.text.clone())
        } else if let Some(id) = value.text.strip_prefix("id:") {
            SemanticProbe::Session(id.to_string())
        } else if let Some(t) = value.text.strip_prefix("text:") {
            SemanticProbe::Text(t.to_string())
        } else {
            SemanticProbe::Text(value.text.clone())
        };
        let empty = match &probe {
            SemanticProbe::Text(t) | SemanticProbe::Session(t) => t.trim().is_empty(),
        };
        if empty {
            self.err(
                Diagnostic::new(C::InvalidRef, value.span, "the semantic probe is empty").replace(
                    self.q,
                    fc.span,
                    &format!("{}:\"text\"", field.name),
                ),
            );
            return None;
        }
        Some(Pred::Semantic { probe })
    }

    /// The query with the `NOT `/`-` directly before `span` removed.
    fn unnegate(&self, span: Span) -> Option<String> {
        let before = self.q.get(..span.start)?;
        let after = self.q.get(span.start..)?;
        if let Some(h) = before.strip_suffix("NOT ") {
            return Some(format!("{h}{after}"));
        }
        if let Some(h) = before.strip_suffix('-') {
            return Some(format!("{h}{after}"));
        }
        None
    }

    fn lineage(&mut self, fc: &FieldClause, _ctx: Ctx) -> Option<Pred> {
        if let FieldTest::Match { value } = &fc.test {
            if let Some(id) = value.text.strip_prefix("id:")
                && !id.is_empty()
            {
                return Some(Pred::Lineage {
                    session_id: id.to_string(),
                });
            }
            let d = Diagnostic::new(
                C::InvalidRef,
                value.span,
                "`lineage:` takes a session: `lineage:id:<session-id>`",
            )
            .expected(["`id:<session-id>`"])
            .found(format!("`{}`", value.text));
            let fixed = if value.text.is_empty() {
                "SESSION"
            } else {
                value.text.as_str()
            };
            self.err(d.replace(self.q, value.span, &format!("id:{fixed}")));
            return None;
        }
        self.err(Diagnostic::new(
            C::InvalidRef,
            fc.span,
            "`lineage:` takes a session: `lineage:id:<session-id>`",
        ));
        None
    }

    fn test(&mut self, fc: &FieldClause, field: &Field) -> Option<Test> {
        let name = fc.field.display();
        match &fc.test {
            FieldTest::Match { value } => self.match_value(fc, field, std::slice::from_ref(value)),
            FieldTest::AnyOf { values } => {
                if field.kind.is_ordered() || field.kind == FieldKind::Bool {
                    let first = values.first().map(|v| v.text.clone()).unwrap_or_default();
                    let d = Diagnostic::new(
                        C::InvalidValue,
                        fc.span,
                        format!(
                            "alternatives `(a|b)` need a text field; `{name}` is of kind {}",
                            field.kind.as_str()
                        ),
                    )
                    .replace(self.q, fc.span, &format!("{name}:{first}"));
                    self.err(d);
                    return None;
                }
                self.match_value(fc, field, values)
            }
            FieldTest::Compare { op, value, .. } => {
                if !field.kind.is_ordered() {
                    self.err(self.not_ordered(fc, field, &value.text));
                    return None;
                }
                let lit = self.literal(field, value)?;
                Some(Test::Compare {
                    op: *op,
                    value: lit,
                })
            }
            FieldTest::Between { low, high } => {
                if !field.kind.is_ordered() {
                    self.err(self.not_ordered(fc, field, &low.text));
                    return None;
                }
                let lo = self.literal(field, low);
                let hi = self.literal(field, high);
                Some(Test::Between {
                    low: lo?,
                    high: hi?,
                })
            }
        }
    }

    fn not_ordered(&self, fc: &FieldClause, field: &Field, value: &str) -> Diagnostic {
        let name = fc.field.display();
        let value = quote_if_needed(value);
        Diagnostic::new(
            C::ComparisonOnTextField,
            fc.span,
            format!(
                "`{name}` is a text field ({}); comparisons (`=`, `>=`, `between`) apply to counts, numbers and dates",
                field.kind.as_str()
            ),
        )
        .expected([format!("`{name}:VALUE`")])
        .hint(format!("write `{name}:{value}`"))
        .replace(self.q, fc.span, &format!("{name}:{value}"))
    }

    fn match_value(
        &mut self,
        fc: &FieldClause,
        field: &Field,
        values: &[ast::Value],
    ) -> Option<Test> {
        let name = fc.field.display();
        match field.kind {
            FieldKind::Count | FieldKind::Number | FieldKind::Date => {
                let v = values.first()?;
                let lit = self.literal(field, v)?;
                let op = match field.name {
                    "since" => CmpOp::Ge,
                    "until" => CmpOp::Le,
                    _ => CmpOp::Eq,
                };
                Some(Test::Compare { op, value: lit })
            }
            FieldKind::Bool => {
                let v = values.first()?;
                match v.text.to_ascii_lowercase().as_str() {
                    "true" | "yes" | "1" => Some(Test::Bool { value: true }),
                    "false" | "no" | "0" => Some(Test::Bool { value: false }),
                    _ => {
                        let d = Diagnostic::new(
                            C::InvalidBool,
                            v.span,
                            format!("`{name}` is true or false"),
                        )
                        .expected(["`true`", "`false`"])
                        .found(format!("`{}`", v.text))
                        .replace(self.q, v.span, "true");
                        self.err(d);
                        None
                    }
                }
            }
            FieldKind::Enum => {
                let mut out = Vec::new();
                for v in values {
                    let lower = v.text.to_ascii_lowercase();
                    if field.values.contains(&lower.as_str()) {
                        out.push(lower);
                        continue;
                    }
                    let mut d = Diagnostic::new(
                        C::InvalidValue,
                        v.span,
                        format!("`{}` is not a value of `{name}`", v.text),
                    )
                    .expected(field.values.iter().map(|x| format!("`{x}`")))
                    .found(format!("`{}`", v.text));
                    let best = closest(&lower, field.values).or(field.values.first().copied());
                    if let Some(best) = best {
                        d = d.replace(self.q, v.span, best);
                    }
                    self.err(d);
                    return None;
                }
                Some(Test::Match { values: out })
            }
            _ => {
                let vals: Vec<String> = values.iter().map(|v| v.text.clone()).collect();
                if vals.iter().any(|v| v.is_empty()) {
                    let d = Diagnostic::new(
                        C::MissingValue,
                        fc.span,
                        format!("`{name}` needs a non-empty value"),
                    )
                    .replace(
                        self.q,
                        fc.span,
                        &format!("{name}:{}", crate::parser::field_example_value(&name)),
                    );
                    self.err(d);
                    return None;
                }
                Some(Test::Match { values: vals })
            }
        }
    }

    fn literal(&mut self, field: &Field, v: &ast::Value) -> Option<Literal> {
        match field.kind {
            FieldKind::Count => match v.text.parse::<i64>() {
                Ok(n) if n >= 0 => Some(Literal::Int(n)),
                _ => {
                    let d = Diagnostic::new(
                        C::InvalidNumber,
                        v.span,
                        format!(
                            "`{}` is a count; expected a non-negative integer",
                            field.name
                        ),
                    )
                    .expected(["an integer"])
                    .found(format!("`{}`", v.text))
                    .replace(self.q, v.span, "1");
                    self.err(d);
                    None
                }
            },
            FieldKind::Number => {
                if let Ok(n) = v.text.parse::<i64>() {
                    return Some(Literal::Int(n));
                }
                match v.text.parse::<f64>() {
                    Ok(x) if x.is_finite() => Some(Literal::Float(x)),
                    _ => {
                        let d = Diagnostic::new(
                            C::InvalidNumber,
                            v.span,
                            format!("`{}` is a number", field.name),
                        )
                        .expected(["a number"])
                        .found(format!("`{}`", v.text))
                        .replace(self.q, v.span, "0");
                        self.err(d);
                        None
                    }
                }
            }
            FieldKind::Date => match parse_date(&v.text) {
                Some(d) => Some(Literal::Date(d)),
                None => {
                    let d = Diagnostic::new(
                        C::InvalidDate,
                        v.span,
                        format!("`{}` is not a date", v.text),
                    )
                    .expected([
                        "`YYYY-MM-DD`",
                        "an RFC 3339 time",
                        "a relative time (`7d`, `12h`, `2w`)",
                        "`today`",
                    ])
                    .found(format!("`{}`", v.text))
                    .replace(self.q, v.span, "7d");
                    self.err(d);
                    None
                }
            },
            _ => None,
        }
    }

    // ---- stages ------------------------------------------------------------------------

    /// Resolves the stages after the source; returns whether the result is aggregated.
    fn stages(
        &mut self,
        stages: &[ast::Stage],
        unit: &'static Unit,
        out: &mut Vec<PipelineStage>,
    ) -> bool {
        let mut aggregated = false;
        let mut group_keys: Vec<GroupKey> = Vec::new();
        let mut metric_labels: Vec<String> = Vec::new();
        let mut seen: Vec<&'static str> = Vec::new();
        for (i, stage) in stages.iter().enumerate() {
            let next_is_agg = matches!(
                stages.get(i + 1).map(|s| &s.kind),
                Some(StageKind::Count | StageKind::Agg { .. })
            );
            match &stage.kind {
                StageKind::Unit { unit: u, .. } => {
                    let d = Diagnostic::new(
                        C::MisplacedUnitStage,
                        u.span,
                        format!("`{} where ...` can only follow `sessions where ...` as the first stage", u.text),
                    )
                    .hint("a pipeline has one row unit; scope it by session with `sessions where P | <unit> where Q`");
                    let d = self.remove_stage(d, stage.span);
                    self.err(d);
                }
                StageKind::GroupBy { keys } => {
                    if aggregated || seen.contains(&"group_by") {
                        let d = Diagnostic::new(
                            C::StageOrder,
                            stage.span,
                            "`group by` must come before `count`/`agg`, once",
                        );
                        self.err(self.remove_stage(d, stage.span));
                        continue;
                    }
                    if self.follows_row_stage(&seen, "`group by`", stage.span) {
                        continue;
                    }
                    seen.push("group_by");
                    let resolved: Vec<GroupKey> = keys
                        .iter()
                        .filter_map(|k| self.group_key(k, unit))
                        .collect();
                    group_keys = resolved.clone();
                    out.push(PipelineStage::GroupBy { keys: resolved });
                    if !next_is_agg {
                        aggregated = true;
                        metric_labels.push("count".into());
                        out.push(PipelineStage::Aggregate {
                            metrics: vec![Metric {
                                function: AggFunction::Count,
                                column: None,
                                label: "count".into(),
                            }],
                            implicit: true,
                        });
                    }
                }
                StageKind::Count | StageKind::Agg { .. } => {
                    if aggregated {
                        let d = Diagnostic::new(
                            C::DuplicateStage,
                            stage.span,
                            "the query already aggregates; one `count`/`agg` stage per pipeline",
                        );
                        self.err(self.remove_stage(d, stage.span));
                        continue;
                    }
                    if self.follows_row_stage(&seen, "aggregation", stage.span) {
                        continue;
                    }
                    aggregated = true;
                    let metrics = match &stage.kind {
                        StageKind::Agg { metrics } => metrics
                            .iter()
                            .filter_map(|m| self.metric(m, unit))
                            .collect(),
                        _ => vec![Metric {
                            function: AggFunction::Count,
                            column: None,
                            label: "count".into(),
                        }],
                    };
                    metric_labels.extend(metrics.iter().map(|m: &Metric| m.label.clone()));
                    out.push(PipelineStage::Aggregate {
                        metrics,
                        implicit: false,
                    });
                }
                StageKind::Sort {
                    key, descending, ..
                } => {
                    if seen.contains(&"sort") {
                        let d = Diagnostic::new(
                            C::DuplicateStage,
                            stage.span,
                            "one `sort by` stage per pipeline",
                        );
                        self.err(self.remove_stage(d, stage.span));
                        continue;
                    }
                    if let Some(bad) = seen.iter().find(|s| matches!(**s, "limit" | "offset")) {
                        let d = Diagnostic::new(
                            C::StageOrder,
                            stage.span,
                            format!("`sort by` must come before `{bad}`"),
                        );
                        self.err(self.remove_stage(d, stage.span));
                        continue;
                    }
                    seen.push("sort");
                    if let Some(k) =
                        self.sort_key(key, unit, aggregated, &group_keys, &metric_labels)
                    {
                        out.push(PipelineStage::Sort {
                            key: k,
                            descending: *descending,
                        });
                    }
                }
                StageKind::Select { fields } => {
                    if aggregated {
                        let d = Diagnostic::new(
                            C::StageOrder,
                            stage.span,
                            "`select` picks row columns and cannot follow an aggregate",
                        )
                        .hint("an aggregate's columns are its group keys and metrics");
                        self.err(self.remove_stage(d, stage.span));
                        continue;
                    }
                    if seen.contains(&"select") {
                        let d = Diagnostic::new(
                            C::DuplicateStage,
                            stage.span,
                            "one `select` stage per pipeline",
                        );
                        self.err(self.remove_stage(d, stage.span));
                        continue;
                    }
                    seen.push("select");
                    let columns = fields
                        .iter()
                        .filter_map(|f| self.column_ref(f, unit, Purpose::Select))
                        .collect();
                    out.push(PipelineStage::Select { columns });
                }
                StageKind::Limit { n } | StageKind::Offset { n } => {
                    let name = if matches!(stage.kind, StageKind::Limit { .. }) {
                        "limit"
                    } else {
                        "offset"
                    };
                    if seen.contains(&name) {
                        let d = Diagnostic::new(
                            C::DuplicateStage,
                            stage.span,
                            format!("one `{name}` stage per pipeline"),
                        );
                        self.err(self.remove_stage(d, stage.span));
                        continue;
                    }
                    seen.push(name);
                    out.push(if name == "limit" {
                        PipelineStage::Limit { n: *n }
                    } else {
                        PipelineStage::Offset { n: *n }
                    });
                }
            }
        }
        // offset applies before limit regardless of the written order
        let limit_pos = out
            .iter()
            .position(|s| matches!(s, PipelineStage::Limit { .. }));
        let offset_pos = out
            .iter()
            .position(|s| matches!(s, PipelineStage::Offset { .. }));
        if let (Some(l), Some(o)) = (limit_pos, offset_pos)
            && l < o
        {
            out.swap(l, o);
        }
        aggregated
    }

    /// The correction that removes a stage (from its `|`).
    /// Reports `what` (a grouping or aggregate stage) written after a row stage (sort,
    /// limit, offset, select) it must precede; true when it did.
    fn follows_row_stage(&mut self, seen: &[&'static str], what: &str, span: Span) -> bool {
        let Some(bad) = seen
            .iter()
            .find(|s| matches!(**s, "sort" | "limit" | "offset" | "select"))
        else {
            return false;
        };
        let d = Diagnostic::new(
            C::StageOrder,
            span,
            format!("{what} must come before `{bad}`"),
        );
        self.err(self.remove_stage(d, span));
        true
    }

    fn remove_stage(&self, d: Diagnostic, span: Span) -> Diagnostic {
        let before = self.q.get(..span.start).unwrap_or("");
        let pipe = before.rfind('|').unwrap_or(span.start);
        let fixed = splice(self.q, Span::new(pipe, span.end), "")
            .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "));
        match fixed {
            Some(f) if !f.is_empty() => d.correction(f),
            _ => d,
        }
    }

    fn group_key(&mut self, key: &ast::GroupKey, unit: &'static Unit) -> Option<GroupKey> {
        match key {
            ast::GroupKey::Time { bucket, span } => {
                let Some(column) = unit.time_column else {
                    self.err(Diagnostic::new(
                        C::NoTimeColumn,
                        *span,
                        format!("{} rows have no time to bucket", unit.singular),
                    ));
                    return None;
                };
                match TIME_BUCKETS.iter().find(|b| **b == bucket.text) {
                    Some(b) => Some(GroupKey::Time {
                        bucket: b,
                        column,
                        label: format!("time_{b}"),
                    }),
                    None => {
                        let best = closest(&bucket.text, TIME_BUCKETS).unwrap_or("day");
                        let d = Diagnostic::new(
                            C::InvalidTimeBucket,
                            bucket.span,
                            format!("`{}` is not a time bucket", bucket.text),
                        )
                        .expected(TIME_BUCKETS.iter().map(|b| format!("`{b}`")))
                        .found(format!("`{}`", bucket.text))
                        .replace(self.q, *span, &format!("time:{best}"));
                        self.err(d);
                        None
                    }
                }
            }
            ast::GroupKey::Field { field } => {
                if !field.session && field.name == "time" {
                    let d = Diagnostic::new(
                        C::InvalidTimeBucket,
                        field.span,
                        "grouping by time needs a bucket: `time:hour|day|week|month|year`",
                    )
                    .expected(TIME_BUCKETS.iter().map(|b| format!("`time:{b}`")))
                    .replace(self.q, field.span, "time:day");
                    self.err(d);
                    return None;
                }
                let column = self.column_ref(field, unit, Purpose::Group)?;
                Some(GroupKey::Field {
                    label: field.display().replace('.', "_"),
                    column,
                })
            }
        }
    }

    fn column_ref(
        &mut self,
        fref: &FieldRef,
        unit: &'static Unit,
        purpose: Purpose,
    ) -> Option<ColumnRef> {
        let (field, scope, owner) = if fref.session {
            match session_scoped_field(&fref.name) {
                Some(f) => (f, FieldScope::Session, unit_def(UnitId::Sessions)),
                None => {
                    let names = session_scoped_names();
                    let mut d = Diagnostic::new(
                        C::UnknownSessionField,
                        fref.span,
                        format!("`session.{}` is not a session field", fref.name),
                    )
                    .supported(names.iter().map(|n| format!("session.{n}")));
                    if let Some(best) = closest(&fref.name, &names) {
                        d = d.replace(self.q, fref.span, &format!("session.{best}"));
                    }
                    self.err(d);
                    return None;
                }
            }
        } else {
            // A column name of the unit's table stands for the field reading it
            // (`word_count` for `words`): any numeric column is a metric, as DESIGN.md says.
            let by_column = || {
                unit.fields
                    .iter()
                    .find(|f| f.source.column() == Some(fref.name.as_str()))
            };
            match unit.field(&fref.name).or_else(by_column) {
                Some(f) => (f, FieldScope::Own, unit),
                None => {
                    // A raw column of the unit's table (one no field reads, like
                    // `session_id`) can be selected, grouped by, sorted by and counted
                    // distinct; metrics need a field's kind.
                    if purpose != Purpose::Metric && unit.has_column(&fref.name) {
                        let column = unit
                            .columns
                            .iter()
                            .find(|c| **c == fref.name)
                            .copied()
                            .unwrap_or("");
                        return Some(ColumnRef {
                            scope: FieldScope::Own,
                            field: fref.name.clone(),
                            source: Source::Column { column },
                        });
                    }
                    let candidates = purpose.candidates(unit);
                    let mut d = Diagnostic::new(
                        C::UnsupportedField,
                        fref.span,
                        format!(
                            "`{}` is not a field of {} {}",
                            fref.name,
                            unit.name,
                            purpose.noun()
                        ),
                    )
                    .found(format!("`{}`", fref.name))
                    .supported(candidates.iter().copied());
                    if session_scoped_field(&fref.name).is_some() && unit.id != UnitId::Sessions {
                        d = d.replace(self.q, fref.span, &format!("session.{}", fref.name));
                    } else if let Some(best) = closest(&fref.name, &candidates) {
                        d = d.replace(self.q, fref.span, best);
                    }
                    self.err(d);
                    return None;
                }
            }
        };
        let ok = match purpose {
            Purpose::Group => field.groupable,
            Purpose::Metric => field.metric,
            Purpose::Select | Purpose::Sort | Purpose::Distinct => field.source.column().is_some(),
        };
        if !ok {
            let candidates = purpose.candidates(owner);
            let code = match purpose {
                Purpose::Group => C::NotGroupable,
                Purpose::Metric => C::NotAMetric,
                _ => C::UnsupportedField,
            };
            let prefix = if scope == FieldScope::Session {
                "session."
            } else {
                ""
            };
            let mut d = Diagnostic::new(
                code,
                fref.span,
                format!(
                    "`{}` cannot be used in {} {}",
                    fref.display(),
                    owner.name,
                    purpose.noun()
                ),
            )
            .found(format!("`{}`", fref.display()))
            .supported(candidates.iter().map(|c| format!("{prefix}{c}")));
            let first = purpose.first_candidate(owner);
            if let Some(best) = closest(&fref.name, &candidates).or(first) {
                d = d.replace(self.q, fref.span, &format!("{prefix}{best}"));
            }
            self.err(d);
            return None;
        }
        Some(ColumnRef {
            scope,
            field: field.name.to_string(),
            source: field.source,
        })
    }

    fn metric(&mut self, m: &ast::MetricSpec, unit: &'static Unit) -> Option<Metric> {
        let fname = m.function.text.as_str();
        let function = match fname {
            "count" => AggFunction::Count,
            "count_distinct" => AggFunction::CountDistinct,
            "sum" => AggFunction::Sum,
            "avg" => AggFunction::Avg,
            "min" => AggFunction::Min,
            "max" => AggFunction::Max,
            "median" => AggFunction::Median,
            "stddev" => AggFunction::Stddev,
            p if p.len() > 1
                && p.strip_prefix('p')
                    .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit())) =>
            {
                match p.get(1..).and_then(|n| n.parse::<u8>().ok()) {
                    Some(n) if (1..=99).contains(&n) => AggFunction::Percentile(n),
                    _ => {
                        let d = Diagnostic::new(
                            C::InvalidPercentile,
                            m.function.span,
                            format!("`{p}` is not a percentile; use p1..p99"),
                        )
                        .expected(["`p1`..`p99`"])
                        .replace(self.q, m.function.span, "p99");
                        self.err(d);
                        return None;
                    }
                }
            }
            other => {
                let known = [
                    "count",
                    "count_distinct",
                    "sum",
                    "avg",
                    "min",
                    "max",
                    "median",
                    "stddev",
                    "p50",
                    "p90",
                    "p99",
                ];
                let mut d = Diagnostic::new(
                    C::UnknownAggregate,
                    m.function.span,
                    format!("`{other}` is not an aggregate function"),
                )
                .expected(registry::AGG_FUNCTIONS.iter().map(|f| format!("`{f}`")))
                .found(format!("`{other}`"));
                if let Some(best) = closest(other, &known) {
                    d = d.replace(self.q, m.function.span, best);
                }
                self.err(d);
                return None;
            }
        };
        let Some(fref) = &m.field else {
            if function == AggFunction::Count {
                return Some(Metric {
                    function,
                    column: None,
                    label: "count".into(),
                });
            }
            self.err(Diagnostic::new(
                C::NotAMetric,
                m.span,
                format!("`{fname}` needs a field: `{fname}:FIELD`"),
            ));
            return None;
        };
        if function == AggFunction::Count {
            let d = Diagnostic::new(
                C::UnknownAggregate,
                m.span,
                "`count` takes no field; count distinct values with `count_distinct:FIELD`",
            )
            .replace(self.q, m.function.span, "count_distinct");
            self.err(d);
            return None;
        }
        let purpose = match function {
            AggFunction::CountDistinct => Purpose::Distinct,
            _ => Purpose::Metric,
        };
        if purpose == Purpose::Metric && self.is_plain_column(fref, unit) {
            let d = Diagnostic::new(
                C::NotAMetric,
                fref.span,
                format!(
                    "`{}` is not numeric; `{fname}` needs a count or number field",
                    fref.display()
                ),
            )
            .found(format!("`{}`", fref.display()))
            .supported(Purpose::Metric.candidates(unit))
            .hint(format!(
                "count its distinct values with `count_distinct:{}`, or group by it",
                fref.display()
            ))
            .replace(self.q, m.function.span, "count_distinct");
            self.err(d);
            return None;
        }
        let column = self.column_ref(fref, unit, purpose)?;
        // booleans only in sum/avg
        let owner = if column.scope == FieldScope::Session {
            unit_def(UnitId::Sessions)
        } else {
            unit
        };
        if let Some(f) = owner.field(&column.field)
            && f.is_bool()
            && !matches!(
                function,
                AggFunction::Sum | AggFunction::Avg | AggFunction::CountDistinct
            )
        {
            let d = Diagnostic::new(
                C::NotAMetric,
                fref.span,
                format!(
                    "`{}` is a boolean; booleans count as 0/1 in `sum` and `avg` only",
                    fref.display()
                ),
            )
            .replace(self.q, m.function.span, "avg");
            self.err(d);
            return None;
        }
        let fn_label = match function {
            AggFunction::Percentile(n) => format!("p{n}"),
            _ => fname.to_string(),
        };
        Some(Metric {
            function,
            label: format!("{fn_label}_{}", fref.display().replace('.', "_")),
            column: Some(column),
        })
    }

    /// The query without the bracket `[...]` around `span`.
    fn drop_bracket(&self, span: Span) -> Option<String> {
        let open = self.q.get(..span.start)?.rfind('[')?;
        let close = span.end + self.q.get(span.end..)?.find(']')?;
        splice(self.q, Span::new(open, close + 1), "")
    }

    /// A field with a column of its own that is not numeric.
    fn is_plain_column(&self, fref: &FieldRef, unit: &'static Unit) -> bool {
        let f = if fref.session {
            session_scoped_field(&fref.name)
        } else {
            unit.field(&fref.name)
        };
        f.is_some_and(|f| f.source.column().is_some() && !f.metric)
    }

    fn sort_key(
        &mut self,
        key: &ast::Name,
        unit: &'static Unit,
        aggregated: bool,
        group_keys: &[GroupKey],
        metric_labels: &[String],
    ) -> Option<SortKey> {
        let k = key.text.as_str();
        if aggregated {
            if k == "count" && metric_labels.iter().any(|l| l == "count") {
                return Some(SortKey::Count);
            }
            if k == "key" {
                return Some(SortKey::Key);
            }
            if metric_labels.iter().any(|l| l == k) {
                return Some(SortKey::Metric {
                    label: k.to_string(),
                });
            }
            let group_labels: Vec<String> = group_keys
                .iter()
                .map(|g| match g {
                    GroupKey::Field { label, .. } | GroupKey::Time { label, .. } => label.clone(),
                })
                .collect();
            if group_labels.iter().any(|l| l == k)
                || (k == "time"
                    && group_keys
                        .iter()
                        .any(|g| matches!(g, GroupKey::Time { .. })))
            {
                return Some(SortKey::Key);
            }
            let mut options: Vec<String> = vec!["key".into()];
            options.extend(metric_labels.iter().cloned());
            let opts: Vec<&str> = options.iter().map(String::as_str).collect();
            let best = closest(k, &opts).unwrap_or(if metric_labels.iter().any(|l| l == "count") {
                "count"
            } else {
                "key"
            });
            let d = Diagnostic::new(
                C::StageOrder,
                key.span,
                format!("after an aggregate, `sort by` takes `key` or a metric label, not `{k}`"),
            )
            .expected(options.iter().map(|o| format!("`{o}`")))
            .found(format!("`{k}`"))
            .replace(self.q, key.span, best);
            self.err(d);
            return None;
        }
        if k == "time" {
            return match unit.time_column {
                Some(column) => Some(SortKey::Time { column }),
                None => {
                    self.err(Diagnostic::new(
                        C::NoTimeColumn,
                        key.span,
                        format!("{} rows have no time", unit.singular),
                    ));
                    None
                }
            };
        }
        if k == "count" || k == "key" {
            let d = Diagnostic::new(
                C::StageOrder,
                key.span,
                format!("`sort by {k}` orders aggregate buckets; add `| group by FIELD | count` before it, or sort rows by time"),
            )
            .expected(["`time`", "a field"])
            .found(format!("`{k}`"))
            .replace(self.q, key.span, "time");
            self.err(d);
            return None;
        }
        let fref = FieldRef {
            session: k.starts_with("session."),
            name: k.strip_prefix("session.").unwrap_or(k).to_string(),
            span: key.span,
        };
        let column = self.column_ref(&fref, unit, Purpose::Sort)?;
        Some(SortKey::Field { column })
    }

    fn projection(&mut self, p: &ast::Projection) -> Option<ResolvedProjection> {
        let Some(unit) = unit_by_name(&p.unit.text) else {
            self.err(Diagnostic::new(
                C::UnknownUnit,
                p.unit.span,
                format!("`{}` is not a unit", p.unit.text),
            ));
            return None;
        };
        let mut ok = true;
        let mut columns = Vec::new();
        for c in &p.columns {
            if unit.has_column(&c.text) {
                columns.push(c.text.clone());
                continue;
            }
            ok = false;
            let mut d = Diagnostic::new(
                C::UnknownColumn,
                c.span,
                format!("`{}` is not a column of {}", c.text, unit.table),
            )
            .found(format!("`{}`", c.text))
            .supported(unit.columns.iter().copied());
            // a field name whose column differs: suggest the column
            let suggestion = unit
                .field(&c.text)
                .and_then(|f| f.source.column())
                .or_else(|| closest(&c.text, unit.columns));
            if let Some(best) = suggestion {
                d = d.replace(self.q, c.span, best);
            }
            self.err(d);
        }
        let mut filters = Vec::new();
        let mut window = None;
        for b in &p.bracket {
            match b {
                ast::BracketClause::Filter { field, value } => {
                    if unit.bracket_fields.contains(&field.text.as_str()) {
                        filters.push((field.text.clone(), value.text.clone()));
                    } else {
                        ok = false;
                        let mut d = Diagnostic::new(
                            C::InvalidBracket,
                            field.span,
                            format!("`{}` is not a bracket field of {}", field.text, unit.name),
                        )
                        .found(format!("`{}`", field.text))
                        .supported(unit.bracket_fields.iter().copied());
                        if let Some(best) = closest(&field.text, unit.bracket_fields) {
                            d = d.replace(self.q, field.span, best);
                        } else if let Some(fixed) = self.drop_bracket(field.span) {
                            d = d.correction(fixed);
                        }
                        self.err(d);
                    }
                }
                ast::BracketClause::Window { last, n, span } => {
                    if window.is_some() {
                        ok = false;
                        self.err(Diagnostic::new(
                            C::InvalidBracket,
                            *span,
                            "one `first:N` or `last:N` per bracket",
                        ));
                    }
                    window = Some(Window { last: *last, n: *n });
                }
            }
        }
        ok.then_some(ResolvedProjection {
            unit: unit.id,
            columns,
            filters,
            window,
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Group,
    Metric,
    Select,
    Sort,
    Distinct,
}

impl Purpose {
    fn noun(self) -> &'static str {
        match self {
            Purpose::Group => "groups",
            Purpose::Metric => "metrics",
            Purpose::Select => "selections",
            Purpose::Sort => "sort keys",
            Purpose::Distinct => "distinct counts",
        }
    }

    fn first_candidate(self, unit: &Unit) -> Option<&'static str> {
        unit.fields
            .iter()
            .find(|f| match self {
                Purpose::Group => f.groupable,
                Purpose::Metric => f.metric && !f.is_bool(),
                _ => f.source.column().is_some(),
            })
            .map(|f| f.name)
    }

    fn candidates(self, unit: &Unit) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = unit
            .fields
            .iter()
            .filter(|f| match self {
                Purpose::Group => f.groupable,
                Purpose::Metric => f.metric,
                _ => f.source.column().is_some(),
            })
            .map(|f| f.name)
            .collect();
        v.sort_unstable();
        v
    }
}

fn source_stage(u: &Unit) -> PipelineStage {
    PipelineStage::Source {
        unit: u.id,
        table: u.table,
    }
}

fn clause_value_text(fc: &FieldClause) -> String {
    match &fc.test {
        FieldTest::Match { value } => quote_if_needed(&value.text),
        FieldTest::AnyOf { values } => values
            .first()
            .map(|v| quote_if_needed(&v.text))
            .unwrap_or_default(),
        FieldTest::Compare { value, .. } => quote_if_needed(&value.text),
        FieldTest::Between { low, .. } => quote_if_needed(&low.text),
    }
}

fn quote_if_needed(v: &str) -> String {
    let plain = !v.is_empty()
        && v.chars().all(|c| {
            !c.is_whitespace()
                && !matches!(
                    c,
                    '(' | ')' | '[' | ']' | '|' | ',' | '"' | '<' | '>' | '=' | '!'
                )
        })
        && !v.starts_with(['-', '~']);
    if plain {
        v.to_string()
    } else {
        format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
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

/// Calls `f` on every node of a predicate (depth-first).
pub fn visit(p: &Pred, f: &mut dyn FnMut(&Pred)) {
    f(p);
    match p {
        Pred::And { operands } | Pred::Or { operands } => operands.iter().for_each(|o| visit(o, f)),
        Pred::Not { operand } => visit(operand, f),
        Pred::Exists { predicate, .. } => visit(predicate, f),
        Pred::Seq { steps } => steps.iter().for_each(|s| visit(s, f)),
        _ => {}
    }
}
