//! The registry: every unit of the language and every field of every unit, declared once as data.
//!
//! The parser, the resolver, completions, "did you mean" and the generated field table in
//! `docs/language.md` all read these tables. A field names the archive column it reads
//! (`column`), or says how the lowering reaches it when it has no column of its own (`via` a
//! child unit, `any_of` several columns, `derived`, or a retrieval `lane`). This module owns no
//! parsing and no storage access.

use quarry_schema::Table;
use serde::Serialize;

/// One unit of the language (a row source): `sessions`, `messages`, ...
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnitId {
    /// Sessions (conversations, agent sessions, subagent sessions).
    Sessions,
    /// Logical messages.
    Messages,
    /// Content blocks of messages.
    Blocks,
    /// Tool calls paired with their results.
    Actions,
    /// File paths touched by a session's tool calls.
    Files,
    /// Tags, notes and imported claims.
    Assertions,
    /// Agent runs.
    Runs,
    /// Observed lifecycle events.
    ObservedEvents,
    /// Context boundaries.
    ContextSnapshots,
    /// Hand-offs to subagents.
    Delegations,
    /// Source records of committed turns.
    Events,
    /// Turns, from a user prompt to the next.
    Turns,
    /// Billed model responses.
    Usage,
}

/// How a field compares values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    /// Case-insensitive substring match.
    Substring,
    /// Exact (case-insensitive) equality; `field:(a|b)` matches any.
    Equality,
    /// Prefix match.
    Prefix,
    /// A ref (`kind:id`), matched exactly (ignoring case); a value that is not a ref of a known
    /// kind also matches as a session's id (`target:abc` finds `session:abc`).
    Ref,
    /// One of a closed set of values (`values`).
    Enum,
    /// A non-negative count: `f:>=N`, `f >= N`, `f between A and B`.
    Count,
    /// A number (integer or decimal), with the same comparisons as counts.
    Number,
    /// A time: `since:7d`, `until:2026-06-30`, `f >= DATE`, `f between DATE and DATE`.
    Date,
    /// `true` or `false`.
    Bool,
    /// A file path: substring match on path components.
    Path,
    /// A JSON array or object column: membership/substring match.
    Json,
    /// A semantic-vector leaf (`near:`, `semantic:`): needs embeddings.
    Semantic,
    /// A lineage seed (`lineage:id:<session>`).
    Lineage,
}

impl FieldKind {
    /// The stable lower-case name of the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldKind::Substring => "substring",
            FieldKind::Equality => "equality",
            FieldKind::Prefix => "prefix",
            FieldKind::Ref => "ref",
            FieldKind::Enum => "enum",
            FieldKind::Count => "count",
            FieldKind::Number => "number",
            FieldKind::Date => "date",
            FieldKind::Bool => "bool",
            FieldKind::Path => "path",
            FieldKind::Json => "json",
            FieldKind::Semantic => "semantic",
            FieldKind::Lineage => "lineage",
        }
    }

    /// Whether the kind takes ordered comparisons (`>=`, `between`).
    pub fn is_ordered(self) -> bool {
        matches!(self, FieldKind::Count | FieldKind::Number | FieldKind::Date)
    }

    /// Whether the kind is numeric (a metric when it has a column).
    pub fn is_numeric(self) -> bool {
        matches!(self, FieldKind::Count | FieldKind::Number)
    }
}

/// Where a field's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Source {
    /// A column of the unit's own table.
    Column {
        /// The column name.
        column: &'static str,
    },
    /// A column of another unit's table, joined on the owning session (or message).
    Via {
        /// The unit whose table holds the column.
        unit: UnitId,
        /// The column in that table.
        column: &'static str,
    },
    /// Any of several columns of the unit's own table (matches when one matches).
    AnyOf {
        /// The columns searched.
        columns: &'static [&'static str],
    },
    /// Computed from other data: each value of the field stands for a piece of evidence.
    Derived {
        /// The rule, for people.
        rule: &'static str,
        /// What each value stands for (one entry per value of the field).
        #[serde(skip)]
        evidence: &'static [Evidence],
    },
    /// A retrieval lane, not a column (`near:`, `semantic:`, `lineage:`, `lane:`).
    Lane,
}

impl Source {
    /// The column of the unit's own table, when the field has one.
    pub fn column(&self) -> Option<&'static str> {
        match self {
            Source::Column { column } => Some(column),
            _ => None,
        }
    }

    /// A short human rendering: `word_count`, `via actions.tool_name`, ...
    pub fn describe(&self) -> String {
        match self {
            Source::Column { column } => (*column).to_string(),
            Source::Via { unit, column } => format!("via {}.{}", unit_def(*unit).table, column),
            Source::AnyOf { columns } => format!("any of {}", columns.join(", ")),
            Source::Derived { rule, .. } => format!("derived: {rule}"),
            Source::Lane => "retrieval lane".to_string(),
        }
    }
}

/// What a value of a derived field (`has:tools`) stands for, as data the lowering reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// A counter column of the session that must be greater than zero.
    Counter {
        /// The value (`tools`).
        name: &'static str,
        /// The sessions column (`tool_use_messages`).
        column: &'static str,
    },
    /// A row of `unit` in the session whose `column` is one of `values`.
    Row {
        /// The value (`attachments`).
        name: &'static str,
        /// The unit whose rows are looked for.
        unit: UnitId,
        /// The column tested.
        column: &'static str,
        /// The accepted values of the column.
        values: &'static [&'static str],
    },
}

impl Evidence {
    /// The field value this evidence stands for.
    pub fn name(&self) -> &'static str {
        match self {
            Evidence::Counter { name, .. } | Evidence::Row { name, .. } => name,
        }
    }
}

/// One field of a unit.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Field {
    /// The name used in the language (`words`, `role`).
    pub name: &'static str,
    /// How values compare.
    pub kind: FieldKind,
    /// Where the value comes from.
    pub source: Source,
    /// For `Enum` fields: the accepted values.
    pub values: &'static [&'static str],
    /// Whether `group by` accepts the field.
    pub groupable: bool,
    /// Whether the field is a metric (`sum|avg|min|max|median|stddev|pNN:F`).
    pub metric: bool,
    /// One line saying what the field means.
    pub doc: &'static str,
    /// One clause using the field (`role:assistant`).
    pub example: &'static str,
}

impl Field {
    const fn new(
        name: &'static str,
        kind: FieldKind,
        source: Source,
        doc: &'static str,
        example: &'static str,
    ) -> Field {
        let own_column = matches!(source, Source::Column { .. });
        let numeric = matches!(kind, FieldKind::Count | FieldKind::Number | FieldKind::Bool);
        Field {
            name,
            kind,
            source,
            values: &[],
            groupable: false,
            metric: own_column && numeric,
            doc,
            example,
        }
    }

    const fn group(mut self) -> Field {
        self.groupable = true;
        self
    }

    const fn vals(mut self, values: &'static [&'static str]) -> Field {
        self.values = values;
        self
    }

    /// Whether the field is a boolean column (allowed in sum/avg only, as 0/1).
    pub fn is_bool(&self) -> bool {
        self.kind == FieldKind::Bool
    }
}

/// One unit with its fields.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Unit {
    /// Which unit.
    pub id: UnitId,
    /// Plural name in the language (`observed-events`).
    pub name: &'static str,
    /// Singular name in the language (`observed-event`), used by `exists`.
    pub singular: &'static str,
    /// The archive table (`observed_events`).
    pub table: &'static str,
    /// One line saying what a row is.
    pub doc: &'static str,
    /// The column `time`, `sort by time` and `group by time:...` read, if rows have a time.
    pub time_column: Option<&'static str>,
    /// The column linking a row to its owning session, if any.
    pub session_column: Option<&'static str>,
    /// The archive table's declaration: its columns (what `with unit(cols)` and `select` may
    /// name), keys and time column. Shown as the column names.
    #[serde(rename = "columns", serialize_with = "column_names")]
    pub schema: &'static Table,
    /// The fields of the unit.
    pub fields: &'static [Field],
    /// Fields accepted inside a projection bracket `with unit[field:value]`.
    pub bracket_fields: &'static [&'static str],
    /// Whether `~"..."` full-text leaves apply to the unit.
    pub fts: bool,
}

impl Unit {
    /// The field named `name`, if the unit has it.
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The names of all fields of the unit, sorted.
    pub fn field_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.fields.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names
    }

    /// Whether `column` is a column of the unit's table (stored or computed).
    pub fn has_column(&self, column: &str) -> bool {
        self.schema.query_column(column).is_some()
    }

    /// Every column of the unit's table: the stored ones in declaration order, then the
    /// computed ones.
    pub fn columns(&self) -> Vec<&'static str> {
        self.schema.query_column_names().collect()
    }
}

fn column_names<S: serde::Serializer>(table: &&'static Table, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(table.column_names())
}

/// The declaration of the archive table `name`; naming an undeclared table fails the build.
const fn declared(name: &str) -> &'static Table {
    let tables = quarry_schema::TABLES;
    let mut i = 0;
    while i < tables.len() {
        if same(tables[i].name, name) {
            return &tables[i];
        }
        i += 1;
    }
    panic!("a unit names a table quarry_schema does not declare")
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

mod agents;
mod assertions;
mod content;
mod records;
mod sessions;
mod tools;
mod values;

const fn col(column: &'static str) -> Source {
    Source::Column { column }
}

const fn via(unit: UnitId, column: &'static str) -> Source {
    Source::Via { unit, column }
}

/// Every unit, in registry order (the order "did you mean" and completions use).
pub const UNITS: &[Unit] = &[
    sessions::SESSIONS,
    content::MESSAGES,
    content::BLOCKS,
    tools::ACTIONS,
    tools::FILES,
    assertions::ASSERTIONS,
    agents::RUNS,
    agents::OBSERVED_EVENTS,
    agents::CONTEXT_SNAPSHOTS,
    agents::DELEGATIONS,
    records::EVENTS,
    records::TURNS,
    records::USAGE,
];

/// The unit definition for `id`.
pub fn unit_def(id: UnitId) -> &'static Unit {
    // UNITS is declared in UnitId order; fall back to a search if that ever changes.
    match UNITS.get(id as usize) {
        Some(u) if u.id == id => u,
        _ => UNITS.iter().find(|u| u.id == id).unwrap_or(&UNITS[0]),
    }
}

/// The unit whose plural or singular name is `name`.
pub fn unit_by_name(name: &str) -> Option<&'static Unit> {
    UNITS.iter().find(|u| u.name == name || u.singular == name)
}

/// The unit whose plural name is `name` (not the singular).
pub fn unit_by_plural(name: &str) -> Option<&'static Unit> {
    UNITS.iter().find(|u| u.name == name)
}

/// The unit whose singular name is `name`.
pub fn unit_by_singular(name: &str) -> Option<&'static Unit> {
    UNITS.iter().find(|u| u.singular == name)
}

/// The session fields usable as `session.<field>` from any unit (every session field except the
/// retrieval lanes).
pub fn session_scoped_field(name: &str) -> Option<&'static Field> {
    sessions::SESSIONS
        .fields
        .iter()
        .find(|f| f.name == name && !matches!(f.source, Source::Lane))
}

/// The names usable after `session.`, sorted.
pub fn session_scoped_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = sessions::SESSIONS
        .fields
        .iter()
        .filter(|f| !matches!(f.source, Source::Lane))
        .map(|f| f.name)
        .collect();
    names.sort_unstable();
    names
}

/// The fields usable in a `seq(step -> step)` step (resolved against `actions`).
pub const SEQ_FIELDS: &[&str] = &["action", "tool", "command", "path", "output", "text"];

/// Aggregate functions that take a field: `FN:FIELD`.
pub const AGG_FUNCTIONS: &[&str] = &[
    "count_distinct",
    "sum",
    "avg",
    "min",
    "max",
    "median",
    "stddev",
    "pNN",
];

/// Time buckets for `group by time:<bucket>`.
pub const TIME_BUCKETS: &[&str] = &["hour", "day", "week", "month", "year"];

/// The origins quarry reads (documented values of `origin:`; other values are accepted): the
/// names of [`quarry_schema::ORIGINS`].
pub const KNOWN_ORIGINS: [&str; quarry_schema::ORIGINS.len()] = {
    let mut names = [""; quarry_schema::ORIGINS.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = quarry_schema::ORIGINS[i].name;
        i += 1;
    }
    names
};
