//! The resolved, typed query (`Resolved`): what the resolver produces and the lowering consumes.
//!
//! Every value is typed once here (numbers, dates, booleans, enum members, evidence); fields are
//! bound to their registry entry. This module owns no parsing and no resolution.

mod pred;
mod time;

pub use pred::*;
pub use time::*;

use serde::Serialize;

use crate::registry::{Source, UnitId};

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
    pub filters: Vec<BracketFilter>,
    /// `first:N` / `last:N`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
}

/// A bracket filter `field:value` of a projection: the rows' `column` equals `value`.
#[derive(Debug, Clone, PartialEq)]
pub struct BracketFilter {
    /// The field as the registry names it.
    pub field: &'static str,
    /// The column of the attached unit's table it reads.
    pub column: &'static str,
    /// The value as written.
    pub text: String,
    /// The value, typed by the field's kind.
    pub value: Value,
}

/// Shown as written: `["role", "user"]`.
impl Serialize for BracketFilter {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (self.field, self.text.as_str()).serialize(s)
    }
}

/// A `first:N` / `last:N` window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Window {
    /// Last rather than first.
    pub last: bool,
    /// N.
    pub n: u64,
}
