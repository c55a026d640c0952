//! The fuzzer's oracle: a generated query translated into SQL and run by SQLite itself on the
//! archive, written from the language's documented semantics (`docs/language.md`, the field
//! kinds, three-valued logic, whole days in the zone) and never from the lowering: nothing here
//! calls quarry's parser, resolver or lowering, or reads SQL out of its registry. Where SQLite
//! cannot compute the answer — time buckets in a zone with daylight saving, percentiles,
//! medians, standard deviations, `seq` — the rows come from SQLite and the answer from the
//! oracle functions of `support::oracle`, the same ones the question files use.
//!
//! What it does take from quarry is data, not logic: the registry's units and fields (which
//! column a field reads, its kind, its `has:` evidence, a unit's session and time columns) and
//! the archive's own FTS5 index. A wrong entry there would look the same on both sides; the
//! question files' hand-written oracles cover those.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use chrono::{Duration, NaiveDate};
use quarry_grammar::registry::{Evidence, Field, FieldKind, Source, Unit, UnitId, unit_def};
use quarry_schema::ColumnType;
use rusqlite::Connection;
use serde_json::Value;

use super::generate::column_type;
use super::model::{Key, Leaf, Lit, Op, Pred, Query, Sort, Target, Test};
use crate::support::oracle::{self, Bucket, Stat, Zone};
use crate::support::rows::query_rows;

/// How quarry's rows are held against the oracle's.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Row by row, in order.
    Ordered,
    /// As multisets (the query leaves the order open).
    Multiset,
    /// As multisets, and quarry's rows must be ordered by this column (NULLs last).
    OrderedBy { column: usize, desc: bool },
    /// A page of rows: as many rows as the oracle's page, each one of the oracle's rows before
    /// paging (a page in no order, or cut through ties, may pick other rows), and, when the
    /// query sorts by `column`, that column as the oracle's page has it, in order.
    Page { column: Option<usize> },
}

/// The oracle's answer.
#[derive(Debug)]
pub struct Expected {
    /// The rows.
    pub rows: Vec<Vec<Value>>,
    /// The rows before `offset` and `limit` (the same as `rows` when the query has neither).
    pub unpaged: Vec<Vec<Value>>,
    /// How to compare.
    pub mode: Mode,
    /// The SQL that SQLite ran (for a report).
    pub sql: String,
    /// Whether Rust finished the answer (buckets in a DST zone, percentiles, ...).
    pub rust: bool,
}

/// The keys joining a unit's rows to a child unit's, for a field read `via` that unit:
/// (the owner's column, the child's column).
pub fn via_keys(owner: UnitId, via: UnitId) -> Option<(&'static str, &'static str)> {
    use UnitId::*;
    Some(match (owner, via) {
        (Sessions, Files | Actions | Blocks) => ("session_id", "session_id"),
        (Messages, Blocks | Actions) => ("message_id", "message_id"),
        (Blocks, Actions) => ("block_id", "tool_use_block_id"),
        (Runs, Sessions) => ("session_id", "session_id"),
        (Files, Actions) => ("path", "tool_path"),
        _ => return None,
    })
}

/// The column linking a unit's rows to their session.
fn session_key(unit: &Unit) -> &'static str {
    match unit.id {
        UnitId::Sessions => "session_id",
        UnitId::Assertions => "session_id",
        UnitId::Delegations => "parent_session_id",
        _ => unit.session_column.unwrap_or("session_id"),
    }
}

/// An SQL string literal.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `%`, `_` and `\` taken literally in a LIKE pattern with `ESCAPE '\'`.
fn escape_like(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// One `seq` leaf's sessions, computed before the query runs.
struct SeqTable {
    name: String,
    steps: Vec<String>,
}

/// Builds the SQL of one query.
struct Translator {
    zone: Zone,
    aliases: usize,
    seqs: Vec<SeqTable>,
}

impl Translator {
    fn alias(&mut self, prefix: &str) -> String {
        self.aliases += 1;
        format!("{prefix}{}", self.aliases)
    }

    fn pred(&mut self, p: &Pred, unit: &'static Unit, alias: &str) -> String {
        match p {
            Pred::And(ps) => {
                let parts: Vec<String> = ps.iter().map(|p| self.pred(p, unit, alias)).collect();
                format!("({})", parts.join(" AND "))
            }
            Pred::Or(ps) => {
                let parts: Vec<String> = ps.iter().map(|p| self.pred(p, unit, alias)).collect();
                format!("({})", parts.join(" OR "))
            }
            Pred::Not(inner) => format!("(NOT {})", self.pred(inner, unit, alias)),
            Pred::Leaf(leaf) => self.leaf(leaf, unit, alias),
        }
    }

    fn leaf(&mut self, leaf: &Leaf, unit: &'static Unit, alias: &str) -> String {
        match leaf {
            Leaf::Field {
                session,
                field,
                test,
                ..
            } => {
                if *session && unit.id != UnitId::Sessions {
                    let sessions = unit_def(UnitId::Sessions);
                    let s = self.alias("s");
                    let inner = self.field(sessions, field, test, &s);
                    format!(
                        "{alias}.{} IN (SELECT {s}.session_id FROM sessions {s} WHERE {inner})",
                        session_key(unit)
                    )
                } else {
                    self.field(unit, field, test, alias)
                }
            }
            Leaf::Exists { unit: child, pred } => {
                let c = self.alias("c");
                let inner = self.pred(pred, child, &c);
                format!(
                    "{alias}.session_id IN (SELECT {c}.{} FROM {} {c} WHERE {inner})",
                    session_key(child),
                    child.table
                )
            }
            Leaf::Seq { steps } => {
                let actions = unit_def(UnitId::Actions);
                let steps: Vec<String> = steps
                    .iter()
                    .map(|clauses| {
                        let parts: Vec<String> = clauses
                            .iter()
                            .map(|(f, v)| {
                                self.field(actions, f, &Test::Match(vec![v.clone()]), "a")
                            })
                            .collect();
                        format!("COALESCE(({}), 0)", parts.join(" AND "))
                    })
                    .collect();
                let name = format!("seq_{}", self.seqs.len());
                self.seqs.push(SeqTable {
                    name: name.clone(),
                    steps,
                });
                format!("{alias}.session_id IN (SELECT session_id FROM temp.{name})")
            }
            Leaf::Fts { word } => {
                let (own, theirs) = match unit.id {
                    UnitId::Messages => ("message_id", "message_id"),
                    _ => ("session_id", "session_id"),
                };
                format!(
                    "{alias}.{own} IN (SELECT {theirs} FROM blocks WHERE rowid IN (SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH {}))",
                    quote(word)
                )
            }
            Leaf::Lineage { session_id } => format!(
                "{alias}.session_id IN (SELECT session_id FROM sessions WHERE root_session_id IN (SELECT root_session_id FROM sessions WHERE session_id = {id} OR native_id = {id}))",
                id = quote(session_id)
            ),
        }
    }

    /// The test of `field` of `unit` on the row `alias`.
    fn field(&mut self, unit: &'static Unit, field: &Field, test: &Test, alias: &str) -> String {
        match field.source {
            Source::Column { column } => {
                let ty = column_type(unit, column);
                self.test(&format!("{alias}.\"{column}\""), field.kind, ty, test)
            }
            Source::AnyOf { columns } => {
                let parts: Vec<String> = columns
                    .iter()
                    .map(|c| {
                        let ty = column_type(unit, c);
                        self.test(&format!("{alias}.\"{c}\""), field.kind, ty, test)
                    })
                    .collect();
                format!("({})", parts.join(" OR "))
            }
            Source::Via { unit: via, column } => {
                let child = unit_def(via);
                let v = self.alias("v");
                let ty = column_type(child, column);
                let inner = self.test(&format!("{v}.\"{column}\""), field.kind, ty, test);
                let (own, theirs) = via_keys(unit.id, via).unwrap_or(("session_id", "session_id"));
                if unit.id == UnitId::Files {
                    // A file's action fields: an action of the same session on exactly that path.
                    format!(
                        "EXISTS (SELECT 1 FROM {} {v} WHERE {inner} AND {v}.session_id = {alias}.session_id AND {v}.{theirs} = {alias}.{own})",
                        child.table
                    )
                } else {
                    format!(
                        "{alias}.{own} IN (SELECT {v}.{theirs} FROM {} {v} WHERE {inner})",
                        child.table
                    )
                }
            }
            Source::Derived { evidence, .. } => {
                let Test::Match(values) = test else {
                    return "0".into();
                };
                let parts: Vec<String> = values
                    .iter()
                    .filter_map(|v| evidence.iter().find(|e| e.name() == v))
                    .map(|e| match e {
                        Evidence::Counter { column, .. } => format!("{alias}.\"{column}\" > 0"),
                        Evidence::Row {
                            unit: of,
                            column,
                            values,
                            ..
                        } => {
                            let list: Vec<String> = values.iter().map(|v| quote(v)).collect();
                            format!(
                                "{alias}.session_id IN (SELECT session_id FROM {} WHERE \"{column}\" IN ({}))",
                                unit_def(*of).table,
                                list.join(", ")
                            )
                        }
                    })
                    .collect();
                format!("({})", parts.join(" OR "))
            }
            Source::Lane => "0".into(),
        }
    }

    /// One column's test by the field's kind.
    fn test(&self, column: &str, kind: FieldKind, ty: Option<ColumnType>, test: &Test) -> String {
        match test {
            Test::Match(values) => {
                let parts: Vec<String> =
                    values.iter().map(|v| match_sql(column, kind, v)).collect();
                format!("({})", parts.join(" OR "))
            }
            Test::Bool(b) => format!("{column} = {}", i32::from(*b)),
            Test::Cmp(op, lit) => {
                if ty == Some(ColumnType::Time) {
                    let (low, high) = self.bounds(lit);
                    match op {
                        Op::Eq => format!("({column} >= {low} AND {column} <= {high})"),
                        Op::Ne => format!("({column} < {low} OR {column} > {high})"),
                        Op::Lt => format!("{column} < {low}"),
                        Op::Le => format!("{column} <= {high}"),
                        Op::Gt => format!("{column} > {high}"),
                        Op::Ge => format!("{column} >= {low}"),
                    }
                } else {
                    let sql_op = match op {
                        Op::Eq => "=",
                        Op::Ne => "<>",
                        other => other.text(),
                    };
                    format!("{column} {sql_op} {}", number(lit))
                }
            }
            Test::Between(a, b) => {
                if ty == Some(ColumnType::Time) {
                    let (low, _) = self.bounds(a);
                    let (_, high) = self.bounds(b);
                    format!("({column} >= {low} AND {column} <= {high})")
                } else {
                    format!("({column} >= {} AND {column} <= {})", number(a), number(b))
                }
            }
        }
    }

    /// The first and last millisecond a date literal stands for, in the query's zone: a day is
    /// from its local midnight to the next one's millisecond before; an instant or a wall-clock
    /// time is one millisecond.
    fn bounds(&self, lit: &Lit) -> (i64, i64) {
        match lit {
            Lit::Day(d) => {
                let start = self.midnight(*d);
                let next = self.midnight(*d + Duration::days(1));
                (start, next - 1)
            }
            Lit::Instant(ms) => (*ms, *ms),
            Lit::Local(t) => {
                let ms = self.zone.local_instant(*t);
                (ms, ms)
            }
            Lit::Int(n) => (*n, *n),
            Lit::Float(x) => (*x as i64, *x as i64),
        }
    }

    fn midnight(&self, day: NaiveDate) -> i64 {
        self.zone
            .local_instant(day.and_hms_opt(0, 0, 0).unwrap_or_default())
    }
}

fn number(lit: &Lit) -> String {
    match lit {
        Lit::Int(n) => n.to_string(),
        Lit::Float(x) => format!("{x:.3}"),
        _ => "NULL".into(),
    }
}

/// `field:value` by kind.
fn match_sql(column: &str, kind: FieldKind, v: &str) -> String {
    match kind {
        FieldKind::Substring | FieldKind::Path => format!(
            "{column} LIKE {} ESCAPE '\\'",
            quote(&format!("%{}%", escape_like(v)))
        ),
        FieldKind::Prefix => format!(
            "{column} LIKE {} ESCAPE '\\'",
            quote(&format!("{}%", escape_like(v)))
        ),
        // A bare id also reads as a session's.
        FieldKind::Ref => format!(
            "(lower({column}) = {} OR ({} AND lower({column}) = {}))",
            quote(&v.to_lowercase()),
            if quarry::read::Ref::parse(v).is_some() {
                "0"
            } else {
                "1"
            },
            quote(&format!("session:{}", v.trim().to_lowercase()))
        ),
        FieldKind::Equality => format!("lower({column}) = {}", quote(&v.to_lowercase())),
        FieldKind::Json => format!(
            "instr({column}, {}) > 0",
            quote(&Value::String(v.to_string()).to_string())
        ),
        _ => format!("{column} = {}", quote(v)),
    }
}

/// The fuzzer's answer to `q`, computed by SQLite on `conn` (and Rust where SQLite cannot).
pub fn expected(q: &Query, conn: &Connection) -> Result<Expected, String> {
    let zone = Zone::parse(q.zone).ok_or(format!("no zone {}", q.zone))?;
    let mut t = Translator {
        zone,
        aliases: 0,
        seqs: Vec::new(),
    };
    let unit = q.unit;
    let mut conditions = Vec::new();
    if let Some(scope) = &q.scope {
        let s = t.alias("s");
        let p = t.pred(scope, unit_def(UnitId::Sessions), &s);
        conditions.push(format!(
            "t0.{} IN (SELECT {s}.session_id FROM sessions {s} WHERE {p})",
            session_key(unit)
        ));
    }
    if let Some(filter) = &q.filter {
        conditions.push(t.pred(filter, unit, "t0"));
    }
    fill_seqs(conn, &t.seqs)?;
    let join = if uses_session_columns(q) {
        format!(
            " LEFT JOIN sessions sj ON sj.session_id = t0.{}",
            session_key(unit)
        )
    } else {
        String::new()
    };
    let from = format!(
        "FROM {} t0{join}{}",
        unit.table,
        if conditions.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conditions.join(" AND "))
        }
    );
    if q.aggregated() {
        aggregate(q, &zone, &from, conn)
    } else {
        rows(q, &from, conn)
    }
}

/// Fills one temporary table per `seq` leaf with the sessions whose actions, in order, match the
/// steps (the oracle function `seq_sessions`).
fn fill_seqs(conn: &Connection, seqs: &[SeqTable]) -> Result<(), String> {
    for seq in seqs {
        let sql = format!(
            "SELECT a.session_id, {} FROM actions a ORDER BY a.session_id, a.occurred_at_ms NULLS FIRST, a.action_id",
            seq.steps.join(", ")
        );
        let rows = query_rows(conn, &sql).map_err(|e| format!("{sql}: {e}"))?;
        let flags: Vec<(String, Vec<bool>)> = rows
            .into_iter()
            .map(|r| {
                let session = r[0].as_str().unwrap_or_default().to_string();
                let matches = r[1..]
                    .iter()
                    .map(|v| v.as_i64().unwrap_or(0) != 0)
                    .collect();
                (session, matches)
            })
            .collect();
        let sessions = oracle::seq_sessions(&flags, seq.steps.len());
        let create = format!(
            "DROP TABLE IF EXISTS temp.{0}; CREATE TEMP TABLE {0} (session_id TEXT);",
            seq.name
        );
        conn.execute_batch(&create).map_err(|e| e.to_string())?;
        let mut insert = conn
            .prepare(&format!("INSERT INTO temp.{} VALUES (?1)", seq.name))
            .map_err(|e| e.to_string())?;
        for s in sessions {
            insert.execute([s]).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn uses_session_columns(q: &Query) -> bool {
    let target = |t: &Target| matches!(t, Target::Field { session: true, .. });
    q.group
        .iter()
        .any(|k| matches!(k, Key::Field { session: true, .. }))
        || q.metrics
            .iter()
            .filter_map(|m| m.target.as_ref())
            .any(target)
        || q.select.iter().any(target)
        || matches!(&q.sort, Some(Sort::Rows(t, _)) if target(t))
}

/// A column of the row (or of its session) as SQL, with its stored type.
fn target_sql(q: &Query, t: &Target) -> (String, Option<ColumnType>) {
    match t {
        Target::Field { session, field } => {
            let column = field.source.column().unwrap_or("NULL");
            if *session && q.unit.id != UnitId::Sessions {
                let sessions = unit_def(UnitId::Sessions);
                (format!("sj.\"{column}\""), column_type(sessions, column))
            } else {
                (format!("t0.\"{column}\""), column_type(q.unit, column))
            }
        }
        Target::Raw(column) => (format!("t0.\"{column}\""), column_type(q.unit, column)),
    }
}

/// Whether the query pages its rows.
fn paged(q: &Query) -> bool {
    q.limit.is_some() || q.offset.is_some()
}

/// The answer of `unpaged` rows (in the query's order): its page, and how to compare.
fn answer(q: &Query, unpaged: Vec<Vec<Value>>, mode: Mode, sql: String, rust: bool) -> Expected {
    let skip = q.offset.unwrap_or(0) as usize;
    let take = q.limit.map_or(usize::MAX, |l| l as usize);
    let rows = unpaged.iter().skip(skip).take(take).cloned().collect();
    Expected {
        rows,
        unpaged,
        mode,
        sql,
        rust,
    }
}

/// A row query: the selected columns, in the sort's order, paged.
fn rows(q: &Query, from: &str, conn: &Connection) -> Result<Expected, String> {
    let columns: Vec<(String, Option<ColumnType>)> =
        q.select.iter().map(|t| target_sql(q, t)).collect();
    let list: Vec<&str> = columns.iter().map(|(c, _)| c.as_str()).collect();
    let (order, mode) = match &q.sort {
        None => (
            String::new(),
            if paged(q) {
                Mode::Page { column: None }
            } else {
                Mode::Multiset
            },
        ),
        Some(sort) => {
            let (expr, desc, column) = match sort {
                Sort::Rows(t, desc) => {
                    let expr = target_sql(q, t).0;
                    let column = columns.iter().position(|(c, _)| *c == expr).unwrap_or(0);
                    (expr, *desc, column)
                }
                Sort::Time(desc) => {
                    let expr = format!("t0.\"{}\"", q.unit.time_column.unwrap_or("rowid"));
                    let column = columns.iter().position(|(c, _)| *c == expr).unwrap_or(0);
                    (expr, *desc, column)
                }
                _ => return Err("a row query sorted by an aggregate".into()),
            };
            let mode = if paged(q) {
                Mode::Page {
                    column: Some(column),
                }
            } else {
                Mode::OrderedBy { column, desc }
            };
            (
                format!(
                    " ORDER BY {expr} {} NULLS LAST",
                    if desc { "DESC" } else { "ASC" }
                ),
                mode,
            )
        }
    };
    let sql = format!("SELECT {} {from}{order}", list.join(", "));
    let mut out = query_rows(conn, &sql).map_err(|e| format!("{sql}: {e}"))?;
    for row in &mut out {
        for (value, (_, ty)) in row.iter_mut().zip(&columns) {
            if *ty == Some(ColumnType::Time)
                && let Some(ms) = value.as_i64()
            {
                *value = Value::from(oracle::rfc3339(ms));
            }
        }
    }
    Ok(answer(q, out, mode, sql, false))
}

/// The bucket of a time column in a fixed offset, as SQLite's `strftime` computes it, written
/// the way quarry writes a time in that zone.
fn bucket_sql(column: &str, bucket: Bucket, offset: i32) -> String {
    let x = format!("{column} / 1000 + {offset}");
    let suffix = if offset == 0 {
        "Z".to_string()
    } else {
        let sign = if offset < 0 { '-' } else { '+' };
        let o = offset.abs();
        format!("{sign}{:02}:{:02}", o / 3600, (o % 3600) / 60)
    };
    let body = match bucket {
        Bucket::Hour => format!("strftime('%Y-%m-%dT%H:00:00', {x}, 'unixepoch')"),
        Bucket::Day => format!("strftime('%Y-%m-%dT00:00:00', {x}, 'unixepoch')"),
        Bucket::Week => {
            format!("strftime('%Y-%m-%dT00:00:00', {x}, 'unixepoch', 'weekday 0', '-6 days')")
        }
        Bucket::Month => format!("strftime('%Y-%m-01T00:00:00', {x}, 'unixepoch')"),
        Bucket::Year => format!("strftime('%Y-01-01T00:00:00', {x}, 'unixepoch')"),
    };
    format!("({body} || {})", quote(&suffix))
}

fn key_sql(q: &Query, key: &Key) -> String {
    match key {
        Key::Field { session, field } => {
            target_sql(
                q,
                &Target::Field {
                    session: *session,
                    field,
                },
            )
            .0
        }
        Key::Raw(column) => format!("t0.\"{column}\""),
        Key::Bucket(_) => format!("t0.\"{}\"", q.unit.time_column.unwrap_or("rowid")),
    }
}

fn aggregate_mode(q: &Query) -> Mode {
    match &q.sort {
        Some(Sort::Metric(i, desc)) => {
            let column = q.group.len() + i;
            if paged(q) {
                Mode::Page {
                    column: Some(column),
                }
            } else {
                Mode::OrderedBy {
                    column,
                    desc: *desc,
                }
            }
        }
        _ => Mode::Ordered,
    }
}

/// Without a sort, a count's buckets come most rows first (ties in key order), unless a key is
/// a time bucket: the index of that count among the metrics.
fn default_count(q: &Query) -> Option<usize> {
    let timed = q.group.iter().any(|k| matches!(k, Key::Bucket(_)));
    if q.sort.is_some() || q.group.is_empty() || timed {
        return None;
    }
    q.metrics.iter().position(|m| matches!(m.func, Stat::Count))
}

/// An aggregate: in SQLite when it can (UTC or fixed-offset buckets, the SQL aggregates), else
/// the group's rows from SQLite and the rest in Rust.
fn aggregate(q: &Query, zone: &Zone, from: &str, conn: &Connection) -> Result<Expected, String> {
    let dst_bucket =
        matches!(zone, Zone::Named(_)) && q.group.iter().any(|k| matches!(k, Key::Bucket(_)));
    let rust_metric = q
        .metrics
        .iter()
        .any(|m| matches!(m.func, Stat::Median | Stat::Stddev | Stat::P(_)));
    if dst_bucket || rust_metric {
        return aggregate_in_rust(q, zone, from, conn);
    }
    let offset = match zone {
        Zone::Fixed(s) => *s,
        Zone::Named(_) => 0,
    };
    let keys: Vec<String> = q
        .group
        .iter()
        .map(|k| match k {
            Key::Bucket(b) => bucket_sql(&key_sql(q, k), *b, offset),
            other => key_sql(q, other),
        })
        .collect();
    let metrics: Vec<String> = q
        .metrics
        .iter()
        .map(|m| {
            let arg = m
                .target
                .as_ref()
                .map(|t| target_sql(q, t).0)
                .unwrap_or_default();
            match m.func {
                Stat::Count => "COUNT(*)".to_string(),
                Stat::CountDistinct => format!("COUNT(DISTINCT {arg})"),
                Stat::Sum => format!("SUM({arg})"),
                Stat::Avg => format!("AVG({arg})"),
                Stat::Min => format!("MIN({arg})"),
                Stat::Max => format!("MAX({arg})"),
                _ => "NULL".into(),
            }
        })
        .collect();
    let n = keys.len();
    let positions: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    let group = if n == 0 {
        String::new()
    } else {
        format!(" GROUP BY {}", positions.join(", "))
    };
    let order = match &q.sort {
        Some(Sort::Keys(desc)) if n > 0 => {
            let dir = if *desc { "DESC" } else { "ASC" };
            let parts: Vec<String> = positions
                .iter()
                .map(|p| format!("{p} {dir} NULLS LAST"))
                .collect();
            format!(" ORDER BY {}", parts.join(", "))
        }
        Some(Sort::Metric(i, desc)) => format!(
            " ORDER BY {} {} NULLS LAST",
            n + i + 1,
            if *desc { "DESC" } else { "ASC" }
        ),
        _ if n > 0 => match default_count(q) {
            Some(i) => format!(" ORDER BY {} DESC, {}", n + i + 1, positions.join(", ")),
            None => format!(" ORDER BY {}", positions.join(", ")),
        },
        _ => String::new(),
    };
    let mut select = keys;
    select.extend(metrics);
    let sql = format!("SELECT {} {from}{group}{order}", select.join(", "));
    let rows = query_rows(conn, &sql).map_err(|e| format!("{sql}: {e}"))?;
    Ok(answer(q, rows, aggregate_mode(q), sql, false))
}

/// One value of a group key, ordered as quarry orders keys.
#[derive(Debug, Clone, PartialEq)]
enum KeyValue {
    Null,
    Number(f64),
    Text(String),
    Instant(i64),
}

impl Eq for KeyValue {}

impl PartialOrd for KeyValue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for KeyValue {
    fn cmp(&self, other: &Self) -> Ordering {
        use KeyValue::*;
        match (self, other) {
            (Null, Null) => Ordering::Equal,
            (Null, _) => Ordering::Less,
            (_, Null) => Ordering::Greater,
            (Number(a), Number(b)) => a.total_cmp(b),
            (Text(a), Text(b)) => a.cmp(b),
            (Instant(a), Instant(b)) => a.cmp(b),
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }
}

impl KeyValue {
    fn rank(&self) -> u8 {
        match self {
            KeyValue::Null => 0,
            KeyValue::Number(_) => 1,
            KeyValue::Text(_) => 2,
            KeyValue::Instant(_) => 3,
        }
    }

    fn of(v: &Value) -> KeyValue {
        match v {
            Value::Null => KeyValue::Null,
            Value::Number(n) => KeyValue::Number(n.as_f64().unwrap_or(0.0)),
            Value::Bool(b) => KeyValue::Number(f64::from(u8::from(*b))),
            Value::String(s) => KeyValue::Text(s.clone()),
            other => KeyValue::Text(other.to_string()),
        }
    }

    fn value(&self, original: &Value) -> Value {
        match self {
            KeyValue::Instant(ms) => Value::from(oracle::rfc3339(*ms)),
            _ => original.clone(),
        }
    }
}

/// One group of the Rust aggregate: its keys as shown, and each metric's argument per row.
type Group = (Vec<Value>, Vec<Vec<Value>>);

/// The aggregate computed in Rust over the rows SQLite selects: keys (a bucket's raw time), then
/// each metric's argument.
fn aggregate_in_rust(
    q: &Query,
    zone: &Zone,
    from: &str,
    conn: &Connection,
) -> Result<Expected, String> {
    let mut select: Vec<String> = q.group.iter().map(|k| key_sql(q, k)).collect();
    for m in &q.metrics {
        select.push(
            m.target
                .as_ref()
                .map(|t| target_sql(q, t).0)
                .unwrap_or_else(|| "1".into()),
        );
    }
    let sql = format!("SELECT {} {from}", select.join(", "));
    let rows = query_rows(conn, &sql).map_err(|e| format!("{sql}: {e}"))?;
    let n = q.group.len();
    let mut groups: BTreeMap<Vec<KeyValue>, Group> = BTreeMap::new();
    for row in rows {
        let mut key = Vec::with_capacity(n);
        let mut shown = Vec::with_capacity(n);
        for (k, v) in q.group.iter().zip(&row) {
            let kv = match (k, v.as_i64()) {
                (Key::Bucket(b), Some(ms)) => KeyValue::Instant(oracle::bucket_start(ms, zone, *b)),
                _ => KeyValue::of(v),
            };
            shown.push(kv.value(v));
            key.push(kv);
        }
        let entry = groups
            .entry(key)
            .or_insert_with(|| (shown, vec![Vec::new(); q.metrics.len()]));
        for (i, v) in row[n..].iter().enumerate() {
            entry.1[i].push(v.clone());
        }
    }
    if n == 0 && groups.is_empty() {
        groups.insert(Vec::new(), (Vec::new(), vec![Vec::new(); q.metrics.len()]));
    }
    let mut out: Vec<(Vec<KeyValue>, Vec<Value>)> = groups
        .into_iter()
        .map(|(key, (shown, values))| {
            let mut row = shown;
            for (m, vs) in q.metrics.iter().zip(&values) {
                row.push(oracle::stat(vs, m.func));
            }
            (key, row)
        })
        .collect();
    match &q.sort {
        Some(Sort::Keys(desc)) => out.sort_by(|a, b| keys_nulls_last(&a.0, &b.0, *desc)),
        Some(Sort::Metric(i, desc)) => {
            let c = n + i;
            out.sort_by(|a, b| nulls_last(&KeyValue::of(&a.1[c]), &KeyValue::of(&b.1[c]), *desc));
        }
        // Key order, then (stable) most rows first when the default order counts.
        _ => {
            if let Some(i) = default_count(q) {
                let c = n + i;
                out.sort_by(|a, b| {
                    nulls_last(&KeyValue::of(&a.1[c]), &KeyValue::of(&b.1[c]), true)
                });
            }
        }
    }
    let rows = out.into_iter().map(|(_, r)| r).collect();
    Ok(answer(q, rows, aggregate_mode(q), sql, true))
}

/// Two values in a sort's direction, NULLs last either way.
pub fn nulls_last_values(a: &Value, b: &Value, desc: bool) -> Ordering {
    let instant = |v: &Value| {
        v.as_str()
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
            .map(|t| KeyValue::Instant(t.timestamp_millis()))
    };
    let (x, y) = match (instant(a), instant(b)) {
        (Some(x), Some(y)) => (x, y),
        _ => (KeyValue::of(a), KeyValue::of(b)),
    };
    nulls_last(&x, &y, desc)
}

fn nulls_last(a: &KeyValue, b: &KeyValue, desc: bool) -> Ordering {
    match (a, b) {
        (KeyValue::Null, KeyValue::Null) => Ordering::Equal,
        (KeyValue::Null, _) => Ordering::Greater,
        (_, KeyValue::Null) => Ordering::Less,
        _ if desc => b.cmp(a),
        _ => a.cmp(b),
    }
}

fn keys_nulls_last(a: &[KeyValue], b: &[KeyValue], desc: bool) -> Ordering {
    a.iter()
        .zip(b)
        .map(|(x, y)| nulls_last(x, y, desc))
        .find(|o| *o != Ordering::Equal)
        .unwrap_or(Ordering::Equal)
}
