//! Random valid queries of the language, drawn from the field registry (units, fields, kinds,
//! groupable and metric flags, enum values) with values taken from the archive itself, so that
//! tests match rows often enough to mean something. Every draw is counted in a [`Histogram`],
//! so the fuzzer's reach is visible.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Duration, NaiveDate, Utc};
use quarry_grammar::registry::{
    Evidence, Field, FieldKind, SEQ_FIELDS, Source, UNITS, Unit, UnitId, session_scoped_field,
    unit_by_plural, unit_def,
};
use quarry_schema::ColumnType;
use rand::Rng;
use rand::seq::IndexedRandom;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::model::{Key, Leaf, Lit, Metric, Op, Pred, Query, Sort, Target, Test};
use crate::support::oracle::{Bucket, Stat, Zone};
use crate::support::rows::query_rows;

/// The zones queries are asked in: UTC, fixed offsets, and zones with daylight saving (one with
/// a half-hour change).
pub const ZONES: &[&str] = &[
    "UTC",
    "+05:30",
    "-03:00",
    "Europe/Warsaw",
    "America/New_York",
    "Australia/Lord_Howe",
];

/// How often each form was generated.
#[derive(Debug, Default)]
pub struct Histogram(pub BTreeMap<String, u64>);

impl Histogram {
    /// Counts one `form`.
    pub fn add(&mut self, form: impl Into<String>) {
        *self.0.entry(form.into()).or_default() += 1;
    }
}

/// Values seen in the archive, per table and column, read once.
pub struct Pool {
    conn: rusqlite::Connection,
    cache: HashMap<(String, String), Vec<Value>>,
}

impl Pool {
    /// A pool over the archive `conn` reads.
    pub fn new(conn: rusqlite::Connection) -> Pool {
        Pool {
            conn,
            cache: HashMap::new(),
        }
    }

    /// Up to 2,000 non-NULL values of `table.column`, in storage order.
    fn values(&mut self, table: &str, column: &str) -> &[Value] {
        let key = (table.to_string(), column.to_string());
        let conn = &self.conn;
        self.cache.entry(key).or_insert_with(|| {
            let sql = format!(
                "SELECT \"{column}\" FROM \"{table}\" WHERE \"{column}\" IS NOT NULL LIMIT 2000"
            );
            query_rows(conn, &sql)
                .unwrap_or_default()
                .into_iter()
                .map(|mut r| r.remove(0))
                .collect()
        })
    }
}

/// Draws queries.
pub struct Generator<'a> {
    /// The seeded source of every choice.
    pub rng: ChaCha8Rng,
    /// The archive's values.
    pub pool: &'a mut Pool,
    /// What was drawn.
    pub histogram: Histogram,
}

/// The session fields a `session.F` leaf may name: a column of their own or a via/derived
/// source the translator knows, never a computed column or a retrieval lane.
fn session_fields() -> Vec<&'static Field> {
    unit_def(UnitId::Sessions)
        .fields
        .iter()
        .filter(|f| session_scoped_field(f.name).is_some() && usable(unit_def(UnitId::Sessions), f))
        .collect()
}

/// Whether the fuzzer can test `field` of `unit`: a stored column (not a computed cost), a via
/// column of a pair the translator joins, any-of columns, or derived evidence.
pub fn usable(unit: &Unit, field: &Field) -> bool {
    match field.source {
        Source::Column { column } => unit.schema.column(column).is_some(),
        Source::Via { unit: via, .. } => super::translate::via_keys(unit.id, via).is_some(),
        Source::AnyOf { .. } | Source::Derived { .. } => true,
        Source::Lane => false,
    }
}

/// The type of a stored column of `unit`'s table.
pub fn column_type(unit: &Unit, column: &str) -> Option<ColumnType> {
    unit.schema.column(column).map(|c| c.ty)
}

impl Generator<'_> {
    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn pick<'b, T>(&mut self, items: &'b [T]) -> Option<&'b T> {
        items.choose(&mut self.rng)
    }

    /// One query.
    pub fn query(&mut self) -> Query {
        let unit: &'static Unit = self.pick(UNITS).unwrap_or(&UNITS[0]);
        self.histogram.add(format!("unit {}", unit.name));
        let zone = *self.pick(ZONES).unwrap_or(&"UTC");
        let mut q = Query {
            unit,
            scope: None,
            scope_form: false,
            filter: None,
            compact: false,
            group: Vec::new(),
            metrics: Vec::new(),
            count_stage: false,
            sort: None,
            select: Vec::new(),
            offset: None,
            limit: None,
            zone,
        };
        if unit.id != UnitId::Sessions && self.chance(0.2) {
            q.scope_form = true;
            self.histogram.add("form scope");
            if self.chance(0.8) {
                q.scope = Some(self.pred(unit_def(UnitId::Sessions), 0, true));
            }
        }
        if self.chance(0.8) {
            q.filter = Some(self.pred(unit, 0, unit.id == UnitId::Sessions));
        }
        if unit.id == UnitId::Sessions
            && !q.scope_form
            && self.chance(0.25)
            && let Some(p) = self.compact_pred()
        {
            q.filter = Some(p);
            q.compact = true;
            self.histogram.add("form compact");
        }
        if self.chance(0.55) {
            self.aggregate(&mut q);
        } else {
            self.rows(&mut q);
        }
        if self.chance(0.3) {
            q.limit = Some(self.rng.random_range(0..40));
            self.histogram.add("stage limit");
        }
        if self.chance(0.15) {
            q.offset = Some(self.rng.random_range(0..10));
            self.histogram.add("stage offset");
        }
        if q.group.iter().any(|k| matches!(k, Key::Bucket(_))) {
            let kind = match Zone::parse(zone) {
                Some(Zone::Named(_)) => "zone with daylight saving",
                _ if zone == "UTC" => "zone UTC",
                _ => "zone fixed offset",
            };
            self.histogram.add(format!("bucket in {kind}"));
        }
        q
    }

    /// A predicate over `unit` (`session_level`: exists, seq and lineage are allowed).
    fn pred(&mut self, unit: &'static Unit, depth: usize, session_level: bool) -> Pred {
        let r: f64 = self.rng.random();
        if depth < 3 && r < 0.3 {
            let and = r < 0.15;
            self.histogram
                .add(if and { "logic AND" } else { "logic OR" });
            let n = self.rng.random_range(2..=3);
            let parts = (0..n)
                .map(|_| self.pred(unit, depth + 1, session_level))
                .collect();
            return if and {
                Pred::And(parts)
            } else {
                Pred::Or(parts)
            };
        }
        if depth < 3 && r < 0.42 {
            self.histogram.add("logic NOT");
            return Pred::Not(Box::new(self.pred(unit, depth + 1, session_level)));
        }
        Pred::Leaf(self.leaf(unit, session_level, depth))
    }

    /// A compact-form sessions predicate: leaves and negated field leaves side by side.
    fn compact_pred(&mut self) -> Option<Pred> {
        let sessions = unit_def(UnitId::Sessions);
        let n = self.rng.random_range(1..=3);
        let mut parts = Vec::new();
        for _ in 0..n {
            let leaf = self.field_leaf(sessions, false)?;
            if self.chance(0.25) {
                parts.push(Pred::Not(Box::new(Pred::Leaf(leaf))));
            } else {
                parts.push(Pred::Leaf(leaf));
            }
        }
        Some(Pred::And(parts))
    }

    fn leaf(&mut self, unit: &'static Unit, session_level: bool, depth: usize) -> Leaf {
        let r: f64 = self.rng.random();
        let special = match r {
            r if r < 0.15 && session_level && depth < 2 => self.exists(depth),
            r if (0.15..0.25).contains(&r) && session_level => self.seq(),
            r if (0.25..0.27).contains(&r) && session_level => self.lineage(),
            r if (0.27..0.31).contains(&r) && unit.fts && unit.id != UnitId::Blocks => self.fts(),
            _ => None,
        };
        if let Some(leaf) = special {
            return leaf;
        }
        let session = unit.id != UnitId::Sessions && (0.31..0.45).contains(&r);
        for _ in 0..8 {
            if let Some(leaf) = self.field_leaf(unit, session) {
                return leaf;
            }
        }
        // A unit whose fields all failed to draw a value: a test that always holds.
        self.histogram.add("leaf fallback");
        Leaf::Field {
            session: false,
            field: unit
                .fields
                .iter()
                .find(|f| f.kind == FieldKind::Date)
                .unwrap_or(&unit.fields[0]),
            test: Test::Cmp(
                Op::Ge,
                Lit::Day(NaiveDate::from_ymd_opt(1971, 1, 1).unwrap()),
            ),
            colon: false,
        }
    }

    fn exists(&mut self, depth: usize) -> Option<Leaf> {
        let child: &'static Unit = self.pick(UNITS)?;
        self.histogram.add(format!("exists {}", child.singular));
        let pred = self.pred(child, depth + 1, false);
        Some(Leaf::Exists {
            unit: child,
            pred: Box::new(pred),
        })
    }

    fn seq(&mut self) -> Option<Leaf> {
        let actions = unit_def(UnitId::Actions);
        let n = self.rng.random_range(2..=3);
        let mut steps = Vec::new();
        for _ in 0..n {
            let clauses = self.rng.random_range(1..=2);
            let mut step = Vec::new();
            for _ in 0..clauses {
                let name = *self.pick(SEQ_FIELDS)?;
                let field = actions.field(name)?;
                let value = self.match_values(actions, field, 1)?.remove(0);
                self.histogram.add(format!("seq step {name}"));
                step.push((field, value));
            }
            steps.push(step);
        }
        self.histogram.add(format!("seq of {n} steps"));
        Some(Leaf::Seq { steps })
    }

    fn lineage(&mut self) -> Option<Leaf> {
        let ids = self.pool.values("sessions", "session_id").to_vec();
        let id = ids.choose(&mut self.rng)?.as_str()?.to_string();
        self.histogram.add("lineage");
        Some(Leaf::Lineage { session_id: id })
    }

    fn fts(&mut self) -> Option<Leaf> {
        let texts = self.pool.values("blocks", "text").to_vec();
        let text = texts.choose(&mut self.rng)?.as_str()?.to_string();
        let words: Vec<&str> = text
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| w.len() >= 3 && w.len() <= 12)
            .collect();
        let word = words.choose(&mut self.rng)?.to_ascii_lowercase();
        self.histogram.add("fts ~\"word\"");
        Some(Leaf::Fts { word })
    }

    /// A test of one of `unit`'s fields (`session`: of a session field, as `session.F`).
    fn field_leaf(&mut self, unit: &'static Unit, session: bool) -> Option<Leaf> {
        let (owner, candidates): (&Unit, Vec<&'static Field>) = if session {
            (unit_def(UnitId::Sessions), session_fields())
        } else {
            (
                unit,
                unit.fields
                    .iter()
                    .filter(|f| {
                        usable(unit, f)
                            && !matches!(f.kind, FieldKind::Semantic | FieldKind::Lineage)
                    })
                    .collect(),
            )
        };
        let field = *self.pick(&candidates)?;
        let test = self.test(owner, field)?;
        let family = match &test {
            Test::Match(v) if v.len() > 1 => format!("{} (a|b)", field.kind.as_str()),
            Test::Match(_) => format!("{} :", field.kind.as_str()),
            Test::Bool(_) => "bool :".into(),
            Test::Cmp(op, _) => format!("{} {}", field.kind.as_str(), op.text()),
            Test::Between(..) => format!("{} between", field.kind.as_str()),
        };
        self.histogram.add(format!("op {family}"));
        if session {
            self.histogram.add("session. field in a predicate");
        }
        let source = match field.source {
            Source::Column { .. } => "column",
            Source::Via { .. } => "via",
            Source::AnyOf { .. } => "any-of",
            Source::Derived { .. } => "derived",
            Source::Lane => "lane",
        };
        self.histogram.add(format!("source {source}"));
        Some(Leaf::Field {
            session,
            field,
            test,
            colon: self.chance(0.5),
        })
    }

    fn test(&mut self, unit: &Unit, field: &'static Field) -> Option<Test> {
        Some(match field.kind {
            FieldKind::Bool => Test::Bool(self.chance(0.5)),
            FieldKind::Count | FieldKind::Number | FieldKind::Date => {
                if self.chance(0.2) {
                    let a = self.literal(unit, field)?;
                    let b = self.literal(unit, field)?;
                    Test::Between(a, b)
                } else {
                    let op = if matches!(field.name, "since" | "until") {
                        if field.name == "since" {
                            Op::Ge
                        } else {
                            Op::Le
                        }
                    } else {
                        *self.pick(&Op::ALL)?
                    };
                    Test::Cmp(op, self.literal(unit, field)?)
                }
            }
            _ => {
                let n = if self.chance(0.2) {
                    self.rng.random_range(2..=3)
                } else {
                    1
                };
                Test::Match(self.match_values(unit, field, n)?)
            }
        })
    }

    /// The table and column a field's values are read from.
    fn value_column(unit: &Unit, field: &Field) -> Option<(&'static str, &'static str)> {
        match field.source {
            Source::Column { column } => Some((unit_table(unit), column)),
            Source::Via { unit: via, column } => Some((unit_def(via).table, column)),
            Source::AnyOf { columns } => Some((unit_table(unit), columns[0])),
            _ => None,
        }
    }

    /// `n` values a match of `field` may take.
    fn match_values(&mut self, unit: &Unit, field: &Field, n: usize) -> Option<Vec<String>> {
        let mut out = Vec::new();
        for _ in 0..n {
            let v = match field.kind {
                FieldKind::Enum => (*self.pick(field.values)?).to_string(),
                _ if matches!(field.source, Source::Derived { .. }) => {
                    let Source::Derived { evidence, .. } = field.source else {
                        return None;
                    };
                    self.pick(evidence).map(Evidence::name)?.to_string()
                }
                kind => {
                    let (table, column) = Self::value_column(unit, field)?;
                    let column = match field.source {
                        Source::AnyOf { columns } => *self.pick(columns)?,
                        _ => column,
                    };
                    let values = self.pool.values(table, column).to_vec();
                    let text = if self.chance(0.08) || values.is_empty() {
                        "zqxj".to_string()
                    } else {
                        let v = values.choose(&mut self.rng)?;
                        match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        }
                    };
                    self.shape_value(kind, &text)?
                }
            };
            out.push(v);
        }
        Some(out)
    }

    /// A value of `kind` drawn from a stored `text`: a piece of it, in a random case where the
    /// kind ignores case.
    fn shape_value(&mut self, kind: FieldKind, text: &str) -> Option<String> {
        let ascii: String = text
            .chars()
            .filter(|c| c.is_ascii() && !c.is_ascii_control())
            .collect();
        let out = match kind {
            FieldKind::Json => {
                let parsed: Value = serde_json::from_str(text).ok()?;
                let mut strings = Vec::new();
                json_strings(&parsed, &mut strings);
                strings.retain(|s| !s.is_empty() && s.is_ascii() && s.len() <= 40);
                strings.choose(&mut self.rng)?.clone()
            }
            FieldKind::Equality | FieldKind::Ref => self.recase(&ascii),
            FieldKind::Prefix => {
                let len = ascii.len();
                if len == 0 {
                    return None;
                }
                let end = self.rng.random_range(1..=len.min(24));
                self.recase(&ascii[..end])
            }
            FieldKind::Substring | FieldKind::Path => {
                let len = ascii.len();
                if len == 0 {
                    return None;
                }
                let start = self.rng.random_range(0..len);
                let end = (start + self.rng.random_range(1..=8)).min(len);
                self.recase(&ascii[start..end])
            }
            _ => ascii,
        };
        (!out.trim().is_empty()).then_some(out)
    }

    fn recase(&mut self, s: &str) -> String {
        match self.rng.random_range(0..4) {
            0 => s.to_ascii_uppercase(),
            1 => s.to_ascii_lowercase(),
            _ => s.to_string(),
        }
    }

    /// A literal for a comparison of `field` (a count, number or date), near a stored value.
    fn literal(&mut self, unit: &Unit, field: &Field) -> Option<Lit> {
        let (table, column) = Self::value_column(unit, field)?;
        let values = self.pool.values(table, column).to_vec();
        let stored = values.choose(&mut self.rng).and_then(Value::as_i64);
        match field.kind {
            FieldKind::Date => {
                let ms = stored.unwrap_or(1_750_000_000_000);
                let t = DateTime::<Utc>::from_timestamp_millis(ms)?;
                Some(match self.rng.random_range(0..3) {
                    0 => {
                        self.histogram.add("date as a day");
                        Lit::Day((t + Duration::days(self.rng.random_range(-2..=2))).date_naive())
                    }
                    1 => {
                        self.histogram.add("date as an instant");
                        Lit::Instant(ms + self.rng.random_range(-2..=2) * 60_000)
                    }
                    _ => {
                        self.histogram.add("date as a local time");
                        let seconds = t.timestamp() - t.timestamp() % 60;
                        Lit::Local(DateTime::<Utc>::from_timestamp(seconds, 0)?.naive_utc())
                    }
                })
            }
            FieldKind::Number if self.chance(0.2) => {
                Some(Lit::Float(stored.unwrap_or(0) as f64 + 0.5))
            }
            FieldKind::Count => Some(Lit::Int(
                (stored.unwrap_or(3) + self.rng.random_range(-1..=1)).max(0),
            )),
            _ => Some(Lit::Int(
                stored.unwrap_or(3) + self.rng.random_range(-1..=1),
            )),
        }
    }

    /// An aggregate: keys, metrics, maybe a sort.
    fn aggregate(&mut self, q: &mut Query) {
        let unit = q.unit;
        let keys = self.rng.random_range(0..=2);
        for _ in 0..keys {
            if let Some(key) = self.key(unit) {
                let label = key_label(&key);
                if !q.group.iter().any(|k| key_label(k) == label) {
                    q.group.push(key);
                }
            }
        }
        let metrics = self.rng.random_range(1..=3);
        for _ in 0..metrics {
            if let Some(m) = self.metric(unit) {
                let label = super::model::metric_label(&m);
                if !q
                    .metrics
                    .iter()
                    .any(|x| super::model::metric_label(x) == label)
                {
                    q.metrics.push(m);
                }
            }
        }
        if q.metrics.is_empty() || (q.group.len() == 1 && self.chance(0.2)) {
            q.metrics = vec![Metric {
                func: Stat::Count,
                target: None,
            }];
        }
        if q.metrics.len() == 1 && q.metrics[0].func == Stat::Count && self.chance(0.5) {
            q.count_stage = true;
            self.histogram.add("stage count");
        }
        for m in &q.metrics {
            let name = match m.func {
                Stat::P(_) => "pNN".to_string(),
                other => other.name(),
            };
            self.histogram.add(format!("agg {name}"));
        }
        match self.rng.random_range(0..4) {
            0 => {
                let i = self.rng.random_range(0..q.metrics.len());
                q.sort = Some(Sort::Metric(i, self.chance(0.6)));
                self.histogram.add("sort by metric");
            }
            1 if !q.group.is_empty() => {
                q.sort = Some(Sort::Keys(self.chance(0.5)));
                self.histogram.add("sort by key");
            }
            _ => {}
        }
    }

    fn key(&mut self, unit: &'static Unit) -> Option<Key> {
        let r: f64 = self.rng.random();
        if r < 0.3 {
            let b = *self.pick(&[
                Bucket::Hour,
                Bucket::Day,
                Bucket::Week,
                Bucket::Month,
                Bucket::Year,
            ])?;
            self.histogram
                .add(format!("group time:{}", super::model::bucket_name(b)));
            return Some(Key::Bucket(b));
        }
        if r < 0.45 && unit.id != UnitId::Sessions {
            let sessions = unit_def(UnitId::Sessions);
            let fields: Vec<&'static Field> = sessions
                .fields
                .iter()
                .filter(|f| f.groupable && matches!(f.source, Source::Column { .. }))
                .collect();
            let field = *self.pick(&fields)?;
            self.histogram.add("group session.F");
            return Some(Key::Field {
                session: true,
                field,
            });
        }
        if r < 0.55 {
            let raw = raw_columns(unit);
            let column = *self.pick(&raw)?;
            self.histogram.add("group raw column");
            return Some(Key::Raw(column));
        }
        let fields: Vec<&'static Field> = unit
            .fields
            .iter()
            .filter(|f| f.groupable && matches!(f.source, Source::Column { .. }))
            .collect();
        let field = *self.pick(&fields)?;
        self.histogram.add("group field");
        Some(Key::Field {
            session: false,
            field,
        })
    }

    fn metric(&mut self, unit: &'static Unit) -> Option<Metric> {
        let p = self.rng.random_range(1..=99);
        let func = *self.pick(&[
            Stat::Count,
            Stat::CountDistinct,
            Stat::Sum,
            Stat::Avg,
            Stat::Min,
            Stat::Max,
            Stat::Median,
            Stat::Stddev,
            Stat::P(p),
        ])?;
        if func == Stat::Count {
            return Some(Metric { func, target: None });
        }
        let session = unit.id != UnitId::Sessions && self.chance(0.2);
        let owner = if session {
            unit_def(UnitId::Sessions)
        } else {
            unit
        };
        if func == Stat::CountDistinct {
            let target = self.target(unit, session)?;
            return Some(Metric {
                func,
                target: Some(target),
            });
        }
        let bools_ok = matches!(func, Stat::Sum | Stat::Avg);
        let fields: Vec<&'static Field> = owner
            .fields
            .iter()
            .filter(|f| f.metric && usable(owner, f) && (bools_ok || !f.is_bool()))
            .collect();
        let field = *self.pick(&fields)?;
        if session {
            self.histogram.add("agg over session.F");
        }
        Some(Metric {
            func,
            target: Some(Target::Field { session, field }),
        })
    }

    /// A column to select, count distinct or sort by.
    fn target(&mut self, unit: &'static Unit, session: bool) -> Option<Target> {
        let owner = if session {
            unit_def(UnitId::Sessions)
        } else {
            unit
        };
        if !session && self.chance(0.2) {
            let raw = raw_columns(unit);
            return self.pick(&raw).map(|c| Target::Raw(c));
        }
        let fields: Vec<&'static Field> = owner
            .fields
            .iter()
            .filter(|f| matches!(f.source, Source::Column { column } if owner.schema.column(column).is_some()))
            .collect();
        let field = *self.pick(&fields)?;
        Some(Target::Field { session, field })
    }

    /// Rows: a select, maybe a sort.
    fn rows(&mut self, q: &mut Query) {
        let unit = q.unit;
        let n = self.rng.random_range(1..=3);
        for _ in 0..n {
            let session = unit.id != UnitId::Sessions && self.chance(0.15);
            if let Some(t) = self.target(unit, session) {
                let alias = target_alias(&t);
                if !q.select.iter().any(|s| target_alias(s) == alias) {
                    if session {
                        self.histogram.add("select session.F");
                    }
                    q.select.push(t);
                }
            }
        }
        if q.select.is_empty() {
            // Every unit has a time: select it rather than every column.
            if let Some(time) = unit.fields.iter().find(|f| f.name == "time") {
                q.select.push(Target::Field {
                    session: false,
                    field: time,
                });
            }
        }
        self.histogram.add("stage select");
        match self.rng.random_range(0..3) {
            0 => {
                let i = self.rng.random_range(0..q.select.len());
                // `sort by key` and `sort by count` name an aggregate's buckets, never a column.
                if !matches!(q.select[i].text().as_str(), "key" | "count") {
                    q.sort = Some(Sort::Rows(q.select[i].clone(), self.chance(0.5)));
                    self.histogram.add("sort rows by a column");
                }
            }
            1 => {
                let Some(time) = unit.fields.iter().find(|f| f.name == "time") else {
                    return;
                };
                let t = Target::Field {
                    session: false,
                    field: time,
                };
                let own = |s: &Target| matches!(s, Target::Field { session: false, field } if field.name == "time");
                match q.select.iter().find(|s| target_alias(s) == "time") {
                    // `session.time` would stand where the sorted time is looked for.
                    Some(other) if !own(other) => return,
                    Some(_) => {}
                    None => q.select.push(t),
                }
                q.sort = Some(Sort::Time(self.chance(0.5)));
                self.histogram.add("sort rows by time");
            }
            _ => {}
        }
    }
}

/// The output name quarry gives a selected column: the field's name, or the raw column's.
pub fn target_alias(t: &Target) -> String {
    match t {
        Target::Field { field, .. } => field.name.to_string(),
        Target::Raw(c) => (*c).to_string(),
    }
}

/// The label of a group key: as written, `.` and `:` as `_`.
pub fn key_label(k: &Key) -> String {
    super::model::key_text(k).replace(['.', ':'], "_")
}

/// The table of a unit.
pub fn unit_table(unit: &Unit) -> &'static str {
    unit.table
}

/// The stored columns of `unit`'s table that no field reads as its own column (grouped,
/// selected and counted by name), other than times.
pub fn raw_columns(unit: &Unit) -> Vec<&'static str> {
    unit.schema
        .columns
        .iter()
        .filter(|c| c.ty != ColumnType::Time)
        .map(|c| c.name)
        .filter(|name| {
            !unit
                .fields
                .iter()
                .any(|f| matches!(f.source, Source::Column { column } if column == *name))
        })
        .collect()
}

/// Every string in a JSON value (keys and values).
fn json_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| json_strings(x, out)),
        Value::Object(o) => {
            for (k, x) in o {
                out.push(k.clone());
                json_strings(x, out);
            }
        }
        _ => {}
    }
}

/// The plural unit named `name` (a test helper for readable failures).
#[allow(dead_code)]
pub fn unit(name: &str) -> &'static Unit {
    unit_by_plural(name).unwrap()
}
