//! Resolved predicates and their typed tests and values.

use serde::Serialize;

use super::FieldScope;
use super::time::DateLit;
use crate::ast::{CmpOp, Span};
use crate::registry::{Evidence, FieldKind, Source, UnitId};

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
        values: Vec<Value>,
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

/// A typed value of a match (or of a projection bracket).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Text, compared by the field's kind (substring, equality, prefix, path, JSON).
    Text(String),
    /// A member of the field's closed set of values (the registry's own spelling).
    Enum(&'static str),
    /// A `has:` value: the evidence the registry says it stands for.
    Evidence(Evidence),
    /// A boolean.
    Bool(bool),
    /// A number.
    Number(Number),
}

/// A number as written: an integer when it is one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Number {
    /// An integer.
    Int(i64),
    /// A decimal.
    Float(f64),
}

impl From<Number> for Literal {
    fn from(n: Number) -> Literal {
        match n {
            Number::Int(i) => Literal::Int(i),
            Number::Float(x) => Literal::Float(x),
        }
    }
}

/// The value as the canonical query text writes it.
impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Text(t) => f.write_str(t),
            Value::Enum(e) => f.write_str(e),
            Value::Evidence(e) => f.write_str(e.name()),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Number(Number::Int(n)) => write!(f, "{n}"),
            Value::Number(Number::Float(x)) => write!(f, "{x}"),
        }
    }
}

/// A match value shows as what it matches: the text, the enum member, the `has:` value's name.
impl Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Text(t) => s.serialize_str(t),
            Value::Enum(e) => s.serialize_str(e),
            Value::Evidence(e) => s.serialize_str(e.name()),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Number(n) => n.serialize(s),
        }
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
