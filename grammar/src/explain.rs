//! `quarry explain`: the typed AST and the ordered `pipeline_stages` of a query, as text or JSON.
//!
//! The scope form shows its `session_scope` stage first. This module only presents what `parse`
//! and `resolve` produced; it decides nothing about the query.

use serde::Serialize;

use crate::ast::Query;
use crate::diagnostic::Diagnostics;
use crate::ir::{
    AggFunction, ColumnRef, DateLit, FieldScope, GroupKey, Literal, PipelineStage, Pred, QueryForm,
    Resolved, SemanticProbe, Semantics, SortKey, Test,
};

/// What `explain` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The query as given.
    pub query: String,
    /// The unit the rows belong to.
    pub unit_source: &'static str,
    /// The query form.
    pub form: QueryForm,
    /// What the rows mean.
    pub semantics: Semantics,
    /// The ordered stages, each with a one-line rendering.
    pub pipeline_stages: Vec<StageView>,
    /// The typed syntax tree.
    pub ast: Query,
    /// The resolved query.
    pub resolved: Resolved,
}

/// One stage with its canonical text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageView {
    /// The stage name (`session_scope`, `filter`, ...).
    pub stage: &'static str,
    /// A one-line rendering (`role:assistant AND text:timeout`).
    pub text: String,
    /// The resolved stage.
    pub detail: PipelineStage,
}

/// Parses, resolves and explains a query.
pub fn explain(query: &str) -> Result<Explanation, Diagnostics> {
    let ast = crate::parse(query)?;
    let resolved = crate::resolve(query, &ast)?;
    let pipeline_stages = resolved
        .pipeline_stages
        .iter()
        .map(|s| StageView {
            stage: s.name(),
            text: stage_text(s),
            detail: s.clone(),
        })
        .collect();
    Ok(Explanation {
        query: query.to_string(),
        unit_source: resolved.unit_source,
        form: resolved.form,
        semantics: resolved.semantics,
        pipeline_stages,
        ast,
        resolved,
    })
}

impl Explanation {
    /// As pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".to_string())
    }

    /// As text: a header and one numbered line per stage.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "query:     {}\nunit:      {}\nform:      {}\nsemantics: {}\npipeline_stages:\n",
            self.query,
            self.unit_source,
            json_name(&self.form),
            json_name(&self.semantics),
        );
        for (i, s) in self.pipeline_stages.iter().enumerate() {
            out.push_str(&format!("  {}. {:<13} {}\n", i + 1, s.stage, s.text));
        }
        out
    }
}

fn json_name<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// One line for a stage.
pub fn stage_text(s: &PipelineStage) -> String {
    match s {
        PipelineStage::SessionScope { predicate } => {
            format!("sessions where {}", pred_text(predicate))
        }
        PipelineStage::Source { table, .. } => (*table).to_string(),
        PipelineStage::Filter { predicate } => pred_text(predicate),
        PipelineStage::GroupBy { keys } => keys
            .iter()
            .map(|k| match k {
                GroupKey::Field { column, .. } => column_text(column),
                GroupKey::Time { bucket, column, .. } => format!("time:{bucket} ({column})"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        PipelineStage::Aggregate { metrics, implicit } => {
            let m = metrics
                .iter()
                .map(|m| match (&m.function, &m.column) {
                    (AggFunction::Count, _) => "count".to_string(),
                    (f, Some(c)) => format!("{}:{}", agg_name(*f), column_text(c)),
                    (f, None) => agg_name(*f),
                })
                .collect::<Vec<_>>()
                .join(", ");
            if *implicit {
                format!("{m} (implied by group by)")
            } else {
                m
            }
        }
        PipelineStage::Sort { key, descending } => {
            let k = match key {
                SortKey::Time { column } => format!("time ({column})"),
                SortKey::Count => "count".into(),
                SortKey::Key => "key".into(),
                SortKey::Metric { label } => label.clone(),
                SortKey::Field { column } => column_text(column),
            };
            format!("{k} {}", if *descending { "desc" } else { "asc" })
        }
        PipelineStage::Select { columns } => columns
            .iter()
            .map(column_text)
            .collect::<Vec<_>>()
            .join(", "),
        PipelineStage::Offset { n } | PipelineStage::Limit { n } => n.to_string(),
        PipelineStage::Project { projections } => projections
            .iter()
            .map(|p| {
                let unit = crate::registry::unit_def(p.unit).name;
                let cols = if p.columns.is_empty() {
                    String::new()
                } else {
                    format!("({})", p.columns.join(","))
                };
                let mut br: Vec<String> = p
                    .filters
                    .iter()
                    .map(|f| format!("{}:{}", f.field, f.text))
                    .collect();
                if let Some(w) = p.window {
                    br.push(format!("{}:{}", if w.last { "last" } else { "first" }, w.n));
                }
                let br = if br.is_empty() {
                    String::new()
                } else {
                    format!("[{}]", br.join(", "))
                };
                format!("{unit}{cols}{br}")
            })
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn agg_name(f: AggFunction) -> String {
    match f {
        AggFunction::Count => "count".into(),
        AggFunction::CountDistinct => "count_distinct".into(),
        AggFunction::Sum => "sum".into(),
        AggFunction::Avg => "avg".into(),
        AggFunction::Min => "min".into(),
        AggFunction::Max => "max".into(),
        AggFunction::Median => "median".into(),
        AggFunction::Stddev => "stddev".into(),
        AggFunction::Percentile(n) => format!("p{n}"),
    }
}

fn column_text(c: &ColumnRef) -> String {
    let name = match c.scope {
        FieldScope::Own => c.field.clone(),
        FieldScope::Session => format!("session.{}", c.field),
    };
    match c.source.column() {
        Some(col) if col != c.field => format!("{name} ({col})"),
        _ => name,
    }
}

/// A canonical rendering of a resolved predicate (fully parenthesised where it matters).
pub fn pred_text(p: &Pred) -> String {
    match p {
        Pred::And { operands } => join(operands, " AND "),
        Pred::Or { operands } => format!("({})", join(operands, " OR ")),
        Pred::Not { operand } => format!("NOT {}", pred_text(operand)),
        Pred::Field(f) => {
            let name = match f.scope {
                FieldScope::Own => f.field.to_string(),
                FieldScope::Session => format!("session.{}", f.field),
            };
            match &f.test {
                Test::Match { values } if values.len() == 1 => {
                    format!(
                        "{name}:{}",
                        values
                            .first()
                            .map(|v| quote(&v.to_string()))
                            .unwrap_or_default()
                    )
                }
                Test::Match { values } => format!(
                    "{name}:({})",
                    values
                        .iter()
                        .map(|v| quote(&v.to_string()))
                        .collect::<Vec<_>>()
                        .join("|")
                ),
                Test::Bool { value } => format!("{name}:{value}"),
                Test::Compare { op, value } => {
                    format!("{name} {} {}", op.as_str(), literal_text(value))
                }
                Test::Between { low, high } => {
                    format!(
                        "{name} between {} and {}",
                        literal_text(low),
                        literal_text(high)
                    )
                }
            }
        }
        Pred::Text { text, phrase } => {
            if *phrase {
                format!("\"{text}\"")
            } else {
                text.clone()
            }
        }
        Pred::Fts { query } => format!("~\"{query}\""),
        Pred::Semantic { probe } => match probe {
            SemanticProbe::Text(t) => format!("near:\"{t}\""),
            SemanticProbe::Session(s) => format!("near:id:{s}"),
        },
        Pred::Lineage { session_id } => format!("lineage:id:{session_id}"),
        Pred::Exists { unit, predicate } => format!(
            "exists {}({})",
            crate::registry::unit_def(*unit).singular,
            pred_text(predicate)
        ),
        Pred::Seq { steps } => format!("seq({})", join(steps, " -> ")),
    }
}

fn join(ps: &[Pred], sep: &str) -> String {
    ps.iter().map(pred_text).collect::<Vec<_>>().join(sep)
}

fn quote(v: &str) -> String {
    if v.chars()
        .any(|c| c.is_whitespace() || matches!(c, '(' | ')' | '|' | '"' | ','))
    {
        format!("\"{}\"", v.replace('"', "\\\""))
    } else {
        v.to_string()
    }
}

fn literal_text(l: &Literal) -> String {
    match l {
        Literal::Int(n) => n.to_string(),
        Literal::Float(x) => x.to_string(),
        Literal::Date(d) => match d {
            DateLit::Relative { amount, unit } => format!("{amount}{unit} ago"),
            DateLit::Today => "today".into(),
            DateLit::Yesterday => "yesterday".into(),
            DateLit::Absolute { text, .. } => text.clone(),
        },
    }
}
