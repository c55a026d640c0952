//! The fuzzer's own description of a query — not the grammar's AST or IR, so that neither the
//! generator nor the translator leans on quarry's parser or lowering — and its rendering as text
//! of quarry's language.

use chrono::{NaiveDate, NaiveDateTime};
use quarry_grammar::registry::{Field, Unit};

use crate::support::oracle::{Bucket, Stat};

/// One generated query.
#[derive(Debug, Clone)]
pub struct Query {
    /// The unit whose rows (or groups) answer.
    pub unit: &'static Unit,
    /// `sessions where P | UNIT where Q`: the sessions predicate of the scope form.
    pub scope: Option<Pred>,
    /// Whether the query starts with a sessions head (`sessions where P | UNIT ...`, or bare
    /// `sessions | UNIT` when `scope` is none).
    pub scope_form: bool,
    /// The unit's own predicate.
    pub filter: Option<Pred>,
    /// Written in the compact form (`clause clause -clause`; sessions only).
    pub compact: bool,
    /// `group by` keys.
    pub group: Vec<Key>,
    /// The aggregate's metrics (empty: rows).
    pub metrics: Vec<Metric>,
    /// `| count` rather than `| agg count` (a lone count).
    pub count_stage: bool,
    /// The sort stage.
    pub sort: Option<Sort>,
    /// `select` columns (rows only).
    pub select: Vec<Target>,
    /// `offset N`.
    pub offset: Option<u64>,
    /// `limit N`.
    pub limit: Option<u64>,
    /// The zone of day boundaries and buckets (`--tz`).
    pub zone: &'static str,
}

/// A predicate.
#[derive(Debug, Clone)]
pub enum Pred {
    /// All of them.
    And(Vec<Pred>),
    /// Any of them.
    Or(Vec<Pred>),
    /// Not it.
    Not(Box<Pred>),
    /// One test.
    Leaf(Leaf),
}

/// One leaf of a predicate.
#[derive(Debug, Clone)]
pub enum Leaf {
    /// A field's test; `session`: the field is a session field written `session.F` from
    /// another unit (or plain on sessions).
    Field {
        session: bool,
        field: &'static Field,
        test: Test,
        /// How a comparison is written (`f:>=N` or `f >= N`).
        colon: bool,
    },
    /// `exists UNIT(P)` (sessions only).
    Exists {
        unit: &'static Unit,
        pred: Box<Pred>,
    },
    /// `seq(step -> step ...)`: each step clauses on actions fields, joined by AND.
    Seq {
        steps: Vec<Vec<(&'static Field, String)>>,
    },
    /// `~"word"`: a full-text match (sessions, messages, blocks).
    Fts { word: String },
    /// `lineage:id:X` (sessions only).
    Lineage { session_id: String },
}

/// A field's test.
#[derive(Debug, Clone)]
pub enum Test {
    /// `f:v` or `f:(a|b)`.
    Match(Vec<String>),
    /// `f:true|false`.
    Bool(bool),
    /// `f OP v` (counts, numbers, dates).
    Cmp(Op, Lit),
    /// `f between a and b`.
    Between(Lit, Lit),
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    /// Every operator.
    pub const ALL: [Op; 6] = [Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge];

    /// As written.
    pub fn text(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
}

/// A literal of a comparison.
#[derive(Debug, Clone, Copy)]
pub enum Lit {
    /// An integer.
    Int(i64),
    /// A decimal number.
    Float(f64),
    /// A calendar day (its whole day in the zone).
    Day(NaiveDate),
    /// An instant, written with `Z`.
    Instant(i64),
    /// A wall-clock time in the zone (no offset written).
    Local(NaiveDateTime),
}

/// A `group by` key.
#[derive(Debug, Clone)]
pub enum Key {
    /// A groupable field (`session.F` when `session`).
    Field {
        session: bool,
        field: &'static Field,
    },
    /// A raw column no field reads.
    Raw(&'static str),
    /// `time:<bucket>`.
    Bucket(Bucket),
}

/// A metric of `agg`.
#[derive(Debug, Clone)]
pub struct Metric {
    /// The function.
    pub func: Stat,
    /// Its argument (none for `count`).
    pub target: Option<Target>,
}

/// A column a metric, a sort or a select names.
#[derive(Debug, Clone)]
pub enum Target {
    /// A field with a column of its own (`session.F` when `session`).
    Field {
        session: bool,
        field: &'static Field,
    },
    /// A raw column of the unit's table.
    Raw(&'static str),
}

impl Target {
    /// As written.
    pub fn text(&self) -> String {
        match self {
            Target::Field {
                session: true,
                field,
            } => format!("session.{}", field.name),
            Target::Field { field, .. } => field.name.to_string(),
            Target::Raw(column) => (*column).to_string(),
        }
    }
}

/// The sort stage.
#[derive(Debug, Clone)]
pub enum Sort {
    /// `sort by <metric label>` (index into the metrics); `desc`.
    Metric(usize, bool),
    /// `sort by key`; `desc`.
    Keys(bool),
    /// `sort by <column>` over rows; `desc`.
    Rows(Target, bool),
    /// `sort by time` over rows; `desc`.
    Time(bool),
}

impl Query {
    /// Whether the query aggregates.
    pub fn aggregated(&self) -> bool {
        !self.metrics.is_empty()
    }

    /// The query as text of quarry's language.
    pub fn text(&self) -> String {
        let mut out = String::new();
        if self.scope_form {
            out.push_str("sessions");
            if let Some(p) = &self.scope {
                out.push_str(" where ");
                out.push_str(&pred_text(p, false));
            }
            out.push_str(" | ");
            out.push_str(self.unit.name);
            if let Some(p) = &self.filter {
                out.push_str(" where ");
                out.push_str(&pred_text(p, false));
            }
        } else if self.compact {
            let p = self.filter.as_ref().map(compact_text).unwrap_or_default();
            out.push_str(&p);
        } else {
            out.push_str(self.unit.name);
            if let Some(p) = &self.filter {
                out.push_str(" where ");
                out.push_str(&pred_text(p, false));
            }
        }
        if !self.group.is_empty() {
            let keys: Vec<String> = self.group.iter().map(key_text).collect();
            out.push_str(&format!(" | group by {}", keys.join(", ")));
        }
        if self.count_stage {
            out.push_str(" | count");
        } else if !self.metrics.is_empty() {
            let ms: Vec<String> = self.metrics.iter().map(metric_text).collect();
            out.push_str(&format!(" | agg {}", ms.join(", ")));
        }
        if let Some(sort) = &self.sort {
            let (what, desc) = match sort {
                Sort::Metric(i, desc) => (metric_label(&self.metrics[*i]), *desc),
                Sort::Keys(desc) => ("key".to_string(), *desc),
                Sort::Rows(t, desc) => (t.text(), *desc),
                Sort::Time(desc) => ("time".to_string(), *desc),
            };
            out.push_str(&format!(
                " | sort by {what} {}",
                if desc { "desc" } else { "asc" }
            ));
        }
        if !self.select.is_empty() {
            let cols: Vec<String> = self.select.iter().map(Target::text).collect();
            out.push_str(&format!(" | select {}", cols.join(", ")));
        }
        if let Some(n) = self.offset {
            out.push_str(&format!(" | offset {n}"));
        }
        if let Some(n) = self.limit {
            out.push_str(&format!(" | limit {n}"));
        }
        out
    }
}

/// A group key as written (`role`, `session.repo`, `time:day`).
pub fn key_text(key: &Key) -> String {
    match key {
        Key::Field { session, field } => Target::Field {
            session: *session,
            field,
        }
        .text(),
        Key::Raw(column) => (*column).to_string(),
        Key::Bucket(b) => format!("time:{}", bucket_name(*b)),
    }
}

/// The bucket's name in the language.
pub fn bucket_name(b: Bucket) -> &'static str {
    match b {
        Bucket::Hour => "hour",
        Bucket::Day => "day",
        Bucket::Week => "week",
        Bucket::Month => "month",
        Bucket::Year => "year",
    }
}

fn metric_text(m: &Metric) -> String {
    match &m.target {
        None => m.func.name(),
        Some(t) => format!("{}:{}", m.func.name(), t.text()),
    }
}

/// The label the language gives a metric (what `sort by` names).
pub fn metric_label(m: &Metric) -> String {
    match &m.target {
        None => m.func.name(),
        Some(t) => format!("{}_{}", m.func.name(), t.text().replace('.', "_")),
    }
}

/// A value as a word of the language: bare unless it holds a character that ends a word
/// (white space, `( ) [ ] | , " < > = !`, a backslash) or could be read as something else (a
/// leading `-`, an operator word), else quoted with `\\` and `\"` escaped.
pub fn value_text(v: &str) -> String {
    let ends_word = |c: char| c.is_whitespace() || "()[]|,\"<>=!\\".contains(c);
    let plain = !v.is_empty()
        && !v.chars().any(ends_word)
        && !v.starts_with(['-', '~'])
        && !matches!(
            v.to_ascii_lowercase().as_str(),
            "and" | "or" | "not" | "between" | "exists"
        );
    if plain {
        v.to_string()
    } else {
        let escaped = v.replace('\\', "\\\\").replace('"', "\\\"");
        format!("\"{escaped}\"")
    }
}

fn lit_text(l: &Lit) -> String {
    match l {
        Lit::Int(n) => n.to_string(),
        Lit::Float(x) => format!("{x:.3}"),
        Lit::Day(d) => d.format("%Y-%m-%d").to_string(),
        Lit::Instant(ms) => crate::support::oracle::rfc3339(*ms),
        Lit::Local(t) => t.format("%Y-%m-%dT%H:%M:%S").to_string(),
    }
}

fn leaf_text(leaf: &Leaf) -> String {
    match leaf {
        Leaf::Field {
            session,
            field,
            test,
            colon,
        } => {
            let name = if *session {
                format!("session.{}", field.name)
            } else {
                field.name.to_string()
            };
            match test {
                Test::Match(values) if values.len() == 1 => {
                    format!("{name}:{}", value_text(&values[0]))
                }
                Test::Match(values) => {
                    let vs: Vec<String> = values.iter().map(|v| value_text(v)).collect();
                    format!("{name}:({})", vs.join("|"))
                }
                Test::Bool(b) => format!("{name}:{b}"),
                Test::Cmp(op, lit) if *colon => match op {
                    // `since:D` is `>= D` and `until:D` is `<= D`; any other field's `f:v` is `=`.
                    Op::Ge if field.name == "since" => format!("{name}:{}", lit_text(lit)),
                    Op::Le if field.name == "until" => format!("{name}:{}", lit_text(lit)),
                    Op::Eq if !matches!(field.name, "since" | "until") => {
                        format!("{name}:{}", lit_text(lit))
                    }
                    op => format!("{name}:{}{}", op.text(), lit_text(lit)),
                },
                Test::Cmp(op, lit) => format!("{name} {} {}", op.text(), lit_text(lit)),
                Test::Between(a, b) => {
                    format!("{name} between {} and {}", lit_text(a), lit_text(b))
                }
            }
        }
        Leaf::Exists { unit, pred } => {
            format!("exists {}({})", unit.singular, pred_text(pred, false))
        }
        Leaf::Seq { steps } => {
            let ss: Vec<String> = steps
                .iter()
                .map(|clauses| {
                    clauses
                        .iter()
                        .map(|(f, v)| format!("{}:{}", f.name, value_text(v)))
                        .collect::<Vec<_>>()
                        .join(" AND ")
                })
                .collect();
            format!("seq({})", ss.join(" -> "))
        }
        Leaf::Fts { word } => format!("~\"{word}\""),
        Leaf::Lineage { session_id } => format!("lineage:id:{}", value_text(session_id)),
    }
}

/// A predicate of the Boolean form; `nested`: it sits under an operator, so a compound is
/// parenthesized.
pub fn pred_text(p: &Pred, nested: bool) -> String {
    let wrap = |s: String| if nested { format!("({s})") } else { s };
    match p {
        Pred::Leaf(leaf) => leaf_text(leaf),
        Pred::Not(inner) => format!("NOT {}", pred_text(inner, true)),
        Pred::And(ps) => wrap(
            ps.iter()
                .map(|p| pred_text(p, true))
                .collect::<Vec<_>>()
                .join(" AND "),
        ),
        Pred::Or(ps) => wrap(
            ps.iter()
                .map(|p| pred_text(p, true))
                .collect::<Vec<_>>()
                .join(" OR "),
        ),
    }
}

/// A predicate of the compact form: an AND of leaves and negated leaves, side by side.
fn compact_text(p: &Pred) -> String {
    match p {
        Pred::And(ps) => ps.iter().map(compact_text).collect::<Vec<_>>().join(" "),
        Pred::Not(inner) => format!("-{}", compact_text(inner)),
        Pred::Leaf(leaf) => leaf_text(leaf),
        Pred::Or(_) => pred_text(p, true),
    }
}
