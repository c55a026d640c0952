//! What an answer is: its metadata up front ([`ResultMeta`]), its rows as a stream of Arrow
//! record batches ([`QueryStream`]) or collected ([`QueryResult`]), and what is known once it
//! has ended ([`Completion`]). The engine makes them; the encoders and the front ends read them.

pub mod page;
mod stream;

use datafusion::arrow::datatypes::DataType;
use quarry_grammar::resolve::Semantics;
use serde::Serialize;

pub use self::stream::{Attached, Attachment, QueryResult, QueryStream, RowCounter};

/// The storage an answer was read from (the envelope's `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The SQLite archive.
    Sqlite,
    /// The columnar snapshot.
    Snapshot,
}

impl Source {
    /// The name the envelope shows.
    pub fn name(self) -> &'static str {
        match self {
            Source::Sqlite => "sqlite",
            Source::Snapshot => "snapshot",
        }
    }
}

/// What is known of an answer before its first row.
#[derive(Debug, Clone, Serialize)]
pub struct ResultMeta {
    /// The unit the rows come from (`messages`, `observed-events`, ...).
    pub unit: String,
    /// What kind of answer it is (exhaustive rows, top-k, aggregate, ...).
    pub semantics: Semantics,
    /// Whether the answer is exact: always, since quarry never samples.
    pub exact: bool,
    /// The storage the rows are read from.
    pub source: Source,
    /// The archive's generation when the query was planned.
    pub generation: i64,
    /// Partitions skipped because they could not be read (none: a failure fails the query).
    pub skipped_partitions: u64,
    /// Whether the rows are groups of an aggregate (so `input_rows` will be known at the end).
    pub aggregate: bool,
}

/// Responses of one model a query left without a cost (`usage.cost_usd` NULL), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnpricedModel {
    /// The model as `usage.model` holds it (`(none)` when NULL).
    pub model: String,
    /// Why: `no price` for the model at that time, or `no <kind> price` for one kind of its
    /// tokens.
    pub reason: String,
    /// Distinct responses.
    pub responses: u64,
}

/// What is known of an answer once its stream has ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Completion {
    /// Rows the stream produced.
    pub rows: usize,
    /// Rows the aggregate reduced (aggregate queries).
    pub input_rows: Option<u64>,
    /// Whether a cap the caller set cut the rows.
    pub truncated: bool,
    /// The cursor of the next page, when a cap cut a paged answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A table of a session's catalog, as [`Quarry::catalog`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogTable {
    /// Its name, as both languages' queries name it.
    pub name: String,
    /// What a row is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its columns, in order.
    pub columns: Vec<CatalogColumn>,
}

/// A column of a [`CatalogTable`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogColumn {
    /// Its name.
    pub name: String,
    /// Its type, as the envelope names types (integer, number, boolean, string, timestamp).
    #[serde(rename = "type")]
    pub ty: String,
    /// Whether it may be NULL.
    pub nullable: bool,
    /// What it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A query's logical plan, as lowered and as optimized (DataFusion's indented display).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogicalPlans {
    /// The plan the lowering built.
    pub lowered: String,
    /// The plan after DataFusion's logical optimizer (pushdown, decorrelation, ...).
    pub optimized: String,
    /// The lowered plans of the rows `with` projections attach, one per unit (`unit:` first).
    pub attached: Vec<String>,
}

/// The envelope's name of an Arrow type.
pub fn type_name(t: &DataType) -> String {
    match t {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64 => "integer".into(),
        DataType::Float32 | DataType::Float64 | DataType::Decimal128(..) => "number".into(),
        DataType::Boolean => "boolean".into(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "string".into(),
        DataType::Timestamp(..) | DataType::Date32 | DataType::Date64 => "timestamp".into(),
        other => other.to_string(),
    }
}
