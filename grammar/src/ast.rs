//! The typed syntax tree (`Query`) the parser produces. Every node carries its byte span.
//!
//! The tree says what was written, not what it means: field names are not yet checked against
//! the registry (that is `resolve`'s job). This module owns no parsing logic.

use serde::Serialize;

/// A byte range `start..end` in the query text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }

    /// The text of the span in `query` (empty when out of range).
    pub fn text(self, query: &str) -> &str {
        query.get(self.start..self.end).unwrap_or_default()
    }
}

/// A name as written, with its span.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Name {
    /// The text.
    pub text: String,
    /// Where it is.
    pub span: Span,
}

/// The whole query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Query {
    /// The row source and its predicate.
    pub source: SourceClause,
    /// Pipeline stages after `|`, in order.
    pub stages: Vec<Stage>,
    /// `with unit(...)[...]` projections.
    pub projections: Vec<Projection>,
    /// The whole query.
    pub span: Span,
}

/// How the query names its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceForm {
    /// Compact clauses selecting sessions (`repo:acme since:7d`).
    Compact,
    /// `<unit> where <predicate>`.
    Where,
    /// A unit name alone: all its rows.
    Bare,
}

/// The row source: a unit (or implicit sessions) and an optional predicate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceClause {
    /// How it was written.
    pub form: SourceForm,
    /// The unit name, absent for compact queries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<Name>,
    /// The predicate, absent for a bare unit or an empty compact query.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicate: Option<Expr>,
    /// The whole clause.
    pub span: Span,
}

/// A Boolean predicate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Expr {
    /// What it is.
    #[serde(flatten)]
    pub kind: ExprKind,
    /// Where it is.
    pub span: Span,
}

/// The kinds of predicate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "expr")]
pub enum ExprKind {
    /// Any of the operands.
    Or {
        /// Operands.
        operands: Vec<Expr>,
    },
    /// All of the operands; `implicit` when written without `AND` (compact form).
    And {
        /// Operands.
        operands: Vec<Expr>,
        /// Juxtaposed rather than joined by `AND`.
        implicit: bool,
    },
    /// Negation (`NOT p` or `-clause`).
    Not {
        /// The negated predicate.
        operand: Box<Expr>,
        /// Written as `-` (compact form).
        dash: bool,
    },
    /// A parenthesised predicate.
    Group {
        /// The inner predicate.
        inner: Box<Expr>,
    },
    /// A field clause.
    Field(FieldClause),
    /// Bare or quoted text (compact form): a full-text term.
    Text {
        /// The text.
        text: String,
        /// Written in quotes (a phrase).
        quoted: bool,
    },
    /// `~"..."`: an explicit FTS leaf.
    Fts {
        /// The FTS query.
        text: String,
    },
    /// `exists unit(predicate)`.
    Exists {
        /// The (singular) unit name.
        unit: Name,
        /// The child predicate.
        predicate: Box<Expr>,
    },
    /// `seq(step -> step ...)`.
    Seq {
        /// The steps, in order.
        steps: Vec<SeqStep>,
    },
}

/// One step of `seq(...)`: action clauses joined by `AND`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeqStep {
    /// The clauses of the step.
    pub clauses: Vec<FieldClause>,
    /// Where the step is.
    pub span: Span,
}

/// A field reference: `role`, or `session.repo` (`session` set).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldRef {
    /// Written with the `session.` prefix.
    pub session: bool,
    /// The field name (without the prefix).
    pub name: String,
    /// The whole reference, prefix included.
    pub span: Span,
}

impl FieldRef {
    /// The reference as written (`session.repo`).
    pub fn display(&self) -> String {
        if self.session {
            format!("session.{}", self.name)
        } else {
            self.name.clone()
        }
    }
}

/// A field clause: `field:value`, `field:(a|b)`, `field:>=N`, `field >= N`,
/// `field between A and B`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldClause {
    /// The field.
    pub field: FieldRef,
    /// The test.
    pub test: FieldTest,
    /// The whole clause.
    pub span: Span,
}

/// What a field clause tests.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "test")]
pub enum FieldTest {
    /// `field:value`.
    Match {
        /// The value.
        value: Value,
    },
    /// `field:(a|b|c)`.
    AnyOf {
        /// The alternatives.
        values: Vec<Value>,
    },
    /// `field:>=N` (compact) or `field >= N` (readable).
    Compare {
        /// The operator.
        op: CmpOp,
        /// The value.
        value: Value,
        /// Written compactly after a colon.
        compact: bool,
    },
    /// `field between A and B` (inclusive).
    Between {
        /// Lower bound.
        low: Value,
        /// Upper bound.
        high: Value,
    },
}

/// A literal value as written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Value {
    /// The text (unquoted).
    pub text: String,
    /// Written in quotes.
    pub quoted: bool,
    /// Where it is.
    pub span: Span,
}

/// One pipeline stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stage {
    /// What it is.
    #[serde(flatten)]
    pub kind: StageKind,
    /// Where it is.
    pub span: Span,
}

/// The kinds of pipeline stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "stage")]
pub enum StageKind {
    /// `<unit> where <predicate>` (or a bare unit) after `sessions where ...`.
    Unit {
        /// The unit name.
        unit: Name,
        /// The predicate, absent for a bare unit.
        #[serde(skip_serializing_if = "Option::is_none")]
        predicate: Option<Expr>,
    },
    /// `sort by KEY [asc|desc]`.
    Sort {
        /// The key (`time`, `count`, `key`, a field or a metric label).
        key: Name,
        /// Descending.
        descending: bool,
        /// Whether a direction was written.
        explicit_direction: bool,
    },
    /// `group by F[, F]`.
    GroupBy {
        /// The keys.
        keys: Vec<GroupKey>,
    },
    /// `count`.
    Count,
    /// `agg M[, M]`.
    Agg {
        /// The metrics.
        metrics: Vec<MetricSpec>,
    },
    /// `select F[, F]`.
    Select {
        /// The fields.
        fields: Vec<FieldRef>,
    },
    /// `limit N`.
    Limit {
        /// N.
        n: u64,
    },
    /// `offset N`.
    Offset {
        /// N.
        n: u64,
    },
}

/// A `group by` key: a field or a time bucket.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "key")]
pub enum GroupKey {
    /// A field (`role`, `session.repo`).
    Field {
        /// The field.
        field: FieldRef,
    },
    /// `time:hour|day|week|month|year`.
    Time {
        /// The bucket name as written.
        bucket: Name,
        /// The whole key.
        span: Span,
    },
}

/// An `agg` metric: `count` or `FN:FIELD`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricSpec {
    /// The function (`count`, `avg`, `p90`, ...).
    pub function: Name,
    /// The field, absent for `count`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<FieldRef>,
    /// The whole metric.
    pub span: Span,
}

/// One `with` projection item: `unit(cols)[clauses]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Projection {
    /// The unit name.
    pub unit: Name,
    /// Selected columns (empty: the default payload).
    pub columns: Vec<Name>,
    /// Bracket clauses.
    pub bracket: Vec<BracketClause>,
    /// The whole item.
    pub span: Span,
}

/// A bracket clause: `field:value` or `first:N` / `last:N`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "clause")]
pub enum BracketClause {
    /// `field:value`.
    Filter {
        /// The field.
        field: Name,
        /// The value.
        value: Value,
    },
    /// `first:N` or `last:N`.
    Window {
        /// `last` rather than `first`.
        last: bool,
        /// N.
        n: u64,
        /// Where it is.
        span: Span,
    },
}

/// Comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum CmpOp {
    /// `=`
    #[serde(rename = "=")]
    Eq,
    /// `!=`
    #[serde(rename = "!=")]
    Ne,
    /// `<`
    #[serde(rename = "<")]
    Lt,
    /// `<=`
    #[serde(rename = "<=")]
    Le,
    /// `>`
    #[serde(rename = ">")]
    Gt,
    /// `>=`
    #[serde(rename = ">=")]
    Ge,
}

impl CmpOp {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}
