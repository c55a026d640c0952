//! The one classifier that both answers `supports_filters_pushdown` and translates filters to a
//! parameterised SQLite `WHERE`, so the two cannot drift apart (STYLE point 6).
//!
//! `Exact` only where SQLite computes the same rows as DataFusion: comparisons, `BETWEEN`,
//! `IN`, `IS [NOT] NULL` of a column against literals of its own type (SQLite's BINARY collation
//! compares text bytewise, as Arrow does; NULLs propagate the same way), `LIKE` with
//! `case_sensitive_like` on (set on every scan connection) and `\` as the escape (Arrow's),
//! `AND`, `OR` and `NOT` of exact parts, and the full-text marker `fts_match(...)` on `blocks`,
//! rendered as an FTS5 `MATCH`.
//!
//! A time column (`Timestamp(Millisecond, UTC)`, stored as epoch milliseconds) compares with a
//! millisecond or second timestamp literal of any time zone (an instant is the same instant in
//! every zone) or an `Int64` of milliseconds, as the stored integer: exact. So does the column
//! cast to `Int64` (its milliseconds) or to a millisecond timestamp of another zone.
//!
//! `ILIKE` becomes `lower(col) LIKE lowered-pattern`, which folds ASCII case only. Arrow folds
//! Unicode case, where exactly two non-ASCII characters fold to ASCII letters (KELVIN SIGN to
//! `k`, LONG S to `s`), and non-ASCII letters fold among themselves. So a pattern of ASCII
//! without `k` or `s` is `Exact`; otherwise each `k`, `s` and non-ASCII character becomes `_`
//! (any one character), SQLite returns a superset and the filter is `Inexact` (DataFusion checks
//! it again above the scan). An `Inexact` part may sit under `AND`/`OR` (a superset either way)
//! but not under `NOT`. Everything else (casts, functions) is `Unsupported`.

use datafusion::arrow::datatypes::{DataType, SchemaRef, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Expr, Operator, TableProviderFilterPushDown};
use rusqlite::types::Value;

/// The name of the full-text marker function the provider pushes down as FTS5 `MATCH`.
pub const FTS_FUNCTION: &str = "fts_match";

/// The longest `IN` list rendered into the scan's SQL.
const MAX_IN_LIST: usize = 10_000;

/// A filter translated to SQL.
#[derive(Debug, Clone, PartialEq)]
pub struct Pushdown {
    /// The SQL condition with `?` placeholders.
    pub sql: String,
    /// The values of the placeholders, in order.
    pub params: Vec<Value>,
    /// Whether SQLite selects exactly the rows DataFusion would (else a superset of them).
    pub exact: bool,
}

/// Translates `expr` for a scan of `table` with `schema`, or `None` when it cannot be pushed
/// down.
pub fn classify(expr: &Expr, table: &str, schema: &SchemaRef) -> Option<Pushdown> {
    let mut params = Vec::new();
    let (sql, exact) = translate(expr, table, schema, &mut params)?;
    Some(Pushdown { sql, params, exact })
}

/// The pushdown answer for one filter.
pub fn support(expr: &Expr, table: &str, schema: &SchemaRef) -> TableProviderFilterPushDown {
    match classify(expr, table, schema) {
        Some(p) if p.exact => TableProviderFilterPushDown::Exact,
        Some(_) => TableProviderFilterPushDown::Inexact,
        None => TableProviderFilterPushDown::Unsupported,
    }
}

/// SQL and whether it is exact (`false`: it selects a superset).
fn translate(
    expr: &Expr,
    table: &str,
    schema: &SchemaRef,
    params: &mut Vec<Value>,
) -> Option<(String, bool)> {
    let exact = |sql: Option<String>| sql.map(|s| (s, true));
    match expr {
        Expr::BinaryExpr(b) => match b.op {
            Operator::And | Operator::Or => {
                let (left, l) = translate(&b.left, table, schema, params)?;
                let (right, r) = translate(&b.right, table, schema, params)?;
                let op = if b.op == Operator::And { "AND" } else { "OR" };
                Some((format!("({left} {op} {right})"), l && r))
            }
            Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq => exact(
                comparison(&b.left, b.op, &b.right, table, schema, params)
                    .or_else(|| comparison(&b.right, flip(b.op)?, &b.left, table, schema, params)),
            ),
            _ => None,
        },
        // The complement of a superset is a subset: only exact parts are negated.
        Expr::Not(inner) => match translate(inner, table, schema, params)? {
            (sql, true) => Some((format!("(NOT {sql})"), true)),
            (_, false) => None,
        },
        Expr::IsNull(inner) => exact(column(inner, schema).map(|(c, _)| format!("({c} IS NULL)"))),
        Expr::IsNotNull(inner) => {
            exact(column(inner, schema).map(|(c, _)| format!("({c} IS NOT NULL)")))
        }
        Expr::InList(list) => {
            let (col, data_type) = column(&list.expr, schema)?;
            // SQLite binds at most 32,766 parameters: a longer list (a reader scope of many
            // sessions) is filtered above the scan instead.
            if list.list.is_empty() || list.list.len() > MAX_IN_LIST {
                return None;
            }
            let mut values = Vec::with_capacity(list.list.len());
            for item in &list.list {
                values.push(literal(item, &data_type)?);
            }
            let marks = vec!["?"; values.len()].join(", ");
            params.extend(values);
            if !list.negated
                && let Some(num) = by_number(&col, table)
            {
                return Some((format!("({num} IN ({marks})))"), true));
            }
            let not = if list.negated { "NOT " } else { "" };
            Some((format!("({col} {not}IN ({marks}))"), true))
        }
        Expr::Between(between) => {
            let (col, data_type) = column(&between.expr, schema)?;
            let low = literal(&between.low, &data_type)?;
            let high = literal(&between.high, &data_type)?;
            params.push(low);
            params.push(high);
            let not = if between.negated { "NOT " } else { "" };
            Some((format!("({col} {not}BETWEEN ? AND ?)"), true))
        }
        Expr::Like(like) => {
            let (col, data_type) = column(&like.expr, schema)?;
            if data_type != DataType::Utf8 {
                return None;
            }
            let Value::Text(pattern) = literal(&like.pattern, &DataType::Utf8)? else {
                return None;
            };
            // Arrow escapes with `\` unless told otherwise.
            let escape = like.escape_char.unwrap_or('\\');
            if escape == '\''
                || pattern.ends_with(escape) && !pattern.ends_with(&format!("{escape}{escape}"))
            {
                return None;
            }
            let not = if like.negated { "NOT " } else { "" };
            let (target, pattern, exact) = if like.case_insensitive {
                let (pattern, exact) = ascii_folding_pattern(&pattern, escape);
                if like.negated && !exact {
                    return None;
                }
                (format!("lower({col})"), pattern, exact)
            } else {
                (col, pattern, true)
            };
            params.push(Value::Text(pattern));
            Some((format!("({target} {not}LIKE ? ESCAPE '{escape}')"), exact))
        }
        Expr::ScalarFunction(f) if f.name() == FTS_FUNCTION && table == "blocks" => {
            let [_, query] = f.args.as_slice() else {
                return None;
            };
            let query = literal(query, &DataType::Utf8)?;
            params.push(query);
            Some((
                "(rowid IN (SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH ?))".to_string(),
                true,
            ))
        }
        _ => None,
    }
}

/// An `ILIKE` pattern for `lower(col) LIKE ...` under ASCII-only folding: ASCII letters lowered;
/// `k`, `s` and non-ASCII characters (which Unicode case folding can match with characters
/// SQLite would not) widened to `_`. Returns the pattern and whether nothing was widened.
fn ascii_folding_pattern(pattern: &str, escape: char) -> (String, bool) {
    let mut out = String::with_capacity(pattern.len());
    let mut exact = true;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        let (literal, escaped) = if c == escape {
            match chars.next() {
                Some(next) => (next, true),
                None => (c, false),
            }
        } else {
            (c, false)
        };
        if !escaped && (literal == '%' || literal == '_') {
            out.push(literal);
            continue;
        }
        let lower = literal.to_ascii_lowercase();
        if !lower.is_ascii() || lower == 'k' || lower == 's' {
            out.push('_');
            exact = false;
        } else {
            if escaped {
                out.push(escape);
            }
            out.push(lower);
        }
    }
    (out, exact)
}

fn flip(op: Operator) -> Option<Operator> {
    Some(match op {
        Operator::Eq => Operator::Eq,
        Operator::NotEq => Operator::NotEq,
        Operator::Lt => Operator::Gt,
        Operator::LtEq => Operator::GtEq,
        Operator::Gt => Operator::Lt,
        Operator::GtEq => Operator::LtEq,
        _ => return None,
    })
}

fn comparison(
    left: &Expr,
    op: Operator,
    right: &Expr,
    table: &str,
    schema: &SchemaRef,
    params: &mut Vec<Value>,
) -> Option<String> {
    let (col, data_type) = column(left, schema)?;
    let value = literal(right, &data_type)?;
    if op == Operator::Eq
        && let Some(num) = by_number(&col, table)
    {
        params.push(value);
        return Some(format!("({num} = ?))"));
    }
    let sql_op = match op {
        Operator::Eq => "=",
        Operator::NotEq => "!=",
        Operator::Lt => "<",
        Operator::LtEq => "<=",
        Operator::Gt => ">",
        Operator::GtEq => ">=",
        _ => return None,
    };
    params.push(value);
    Some(format!("({col} {sql_op} ?)"))
}

/// For the session id column of a numbered table ([`quarry_schema::Table::numbered`]), the
/// start of the condition that finds the rows by the session's number instead (through its
/// index): `"session_num" IN (SELECT session_num FROM session_numbers WHERE session_id`, to be
/// followed by ` = ?)` or ` IN (...))`. Session ids and numbers are one to one, so it selects
/// exactly the rows the id would.
fn by_number(col: &str, table: &str) -> Option<String> {
    let def = quarry_schema::table(table)?;
    if !def.numbered() || def.session_key.map(|k| format!("\"{k}\"")) != Some(col.to_string()) {
        return None;
    }
    Some(format!(
        "\"{}\" IN (SELECT session_num FROM session_numbers WHERE session_id",
        quarry_schema::SESSION_NUM
    ))
}

/// A bare column of the table: its quoted name and type. A time column cast to `Int64` or to a
/// millisecond timestamp (any zone) is the same stored integer, so it counts as the column, with
/// the cast's type.
fn column(expr: &Expr, schema: &SchemaRef) -> Option<(String, DataType)> {
    let (c, cast) = match expr {
        Expr::Column(c) => (c, None),
        Expr::Cast(cast) => match cast.expr.as_ref() {
            Expr::Column(c) => (c, Some(cast.field.data_type())),
            _ => return None,
        },
        _ => return None,
    };
    let field = schema.field_with_name(&c.name).ok()?;
    let data_type = match cast {
        None => field.data_type().clone(),
        Some(to) if is_time(field.data_type()) && (is_time(to) || *to == DataType::Int64) => {
            to.clone()
        }
        Some(_) => return None,
    };
    Some((format!("\"{}\"", c.name.replace('"', "\"\"")), data_type))
}

/// A time column's type: milliseconds since the epoch, whatever the zone.
fn is_time(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Timestamp(TimeUnit::Millisecond, _))
}

/// A literal of exactly the column's type (no implicit casts: they would change semantics); a
/// time column takes any instant in whole milliseconds, or milliseconds as `Int64`.
fn literal(expr: &Expr, data_type: &DataType) -> Option<Value> {
    let Expr::Literal(value, _) = expr else {
        return None;
    };
    match (data_type, value) {
        (DataType::Int64, ScalarValue::Int64(Some(v))) => Some(Value::Integer(*v)),
        (DataType::Timestamp(TimeUnit::Millisecond, _), value) => match value {
            ScalarValue::TimestampMillisecond(Some(v), _) | ScalarValue::Int64(Some(v)) => {
                Some(Value::Integer(*v))
            }
            ScalarValue::TimestampSecond(Some(v), _) => v.checked_mul(1000).map(Value::Integer),
            _ => None,
        },
        (DataType::Float64, ScalarValue::Float64(Some(v))) if v.is_finite() => {
            Some(Value::Real(*v))
        }
        (DataType::Boolean, ScalarValue::Boolean(Some(v))) => Some(Value::Integer(i64::from(*v))),
        (
            DataType::Utf8,
            ScalarValue::Utf8(Some(v))
            | ScalarValue::LargeUtf8(Some(v))
            | ScalarValue::Utf8View(Some(v)),
        ) => Some(Value::Text(v.clone())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::logical_expr::{cast, col, lit};

    use super::*;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("role", DataType::Utf8, true),
            Field::new("word_count", DataType::Int64, true),
            Field::new("is_error", DataType::Boolean, true),
            Field::new(
                "occurred_at_ms",
                DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
                true,
            ),
        ]))
    }

    #[test]
    fn a_session_id_of_a_numbered_table_is_looked_up_by_its_number() {
        let s = Arc::new(Schema::new(vec![Field::new(
            "session_id",
            DataType::Utf8,
            false,
        )]));
        let sql = |e: Expr, table: &str| classify(&e, table, &s).map(|p| (p.sql, p.params.len()));
        let by = "\"session_num\" IN (SELECT session_num FROM session_numbers WHERE session_id";
        assert_eq!(
            sql(col("session_id").eq(lit("s1")), "messages"),
            Some((format!("({by} = ?))"), 1))
        );
        assert_eq!(
            sql(lit("s1").eq(col("session_id")), "blocks"),
            Some((format!("({by} = ?))"), 1))
        );
        assert_eq!(
            sql(
                col("session_id").in_list(vec![lit("a"), lit("b")], false),
                "events"
            ),
            Some((format!("({by} IN (?, ?)))"), 2))
        );
        // Not numbered, or not an equality: the column itself.
        assert_eq!(
            sql(col("session_id").eq(lit("s1")), "sessions"),
            Some(("(\"session_id\" = ?)".into(), 1))
        );
        assert_eq!(
            sql(col("session_id").not_eq(lit("s1")), "messages"),
            Some(("(\"session_id\" != ?)".into(), 1))
        );
        assert_eq!(
            sql(col("session_id").in_list(vec![lit("a")], true), "messages"),
            Some(("(\"session_id\" NOT IN (?))".into(), 1))
        );
    }

    #[test]
    fn time_comparisons_are_exact_integer_comparisons() {
        let s = schema();
        let at = |v: i64, tz: Option<&str>| {
            lit(ScalarValue::TimestampMillisecond(
                Some(v),
                tz.map(Into::into),
            ))
        };
        for tz in [Some("UTC"), Some("+02:00"), Some("Europe/Warsaw"), None] {
            let e = col("occurred_at_ms").gt_eq(at(1_700_000_000_000, tz));
            let p = classify(&e, "messages", &s).unwrap();
            assert_eq!(p.sql, "(\"occurred_at_ms\" >= ?)");
            assert_eq!(p.params, vec![Value::Integer(1_700_000_000_000)]);
            assert_eq!(
                support(&e, "messages", &s),
                TableProviderFilterPushDown::Exact
            );
        }
        let e = at(5, None).gt(col("occurred_at_ms"));
        assert_eq!(
            classify(&e, "messages", &s).unwrap().sql,
            "(\"occurred_at_ms\" < ?)"
        );
        let e = col("occurred_at_ms").between(at(1, None), at(2, Some("UTC")));
        let p = classify(&e, "messages", &s).unwrap();
        assert_eq!(p.params, vec![Value::Integer(1), Value::Integer(2)]);
        let e = col("occurred_at_ms").lt(lit(ScalarValue::TimestampSecond(Some(3), None)));
        assert_eq!(
            classify(&e, "messages", &s).unwrap().params,
            vec![Value::Integer(3000)]
        );
        let e = col("occurred_at_ms").lt(lit(42i64));
        assert_eq!(
            classify(&e, "messages", &s).unwrap().params,
            vec![Value::Integer(42)]
        );
        let e = col("occurred_at_ms").in_list(vec![at(1, None), at(2, None)], false);
        assert!(classify(&e, "messages", &s).unwrap().exact);
        // The column cast to its milliseconds, or to another zone, is still the stored integer.
        let e = cast(col("occurred_at_ms"), DataType::Int64).gt(lit(7i64));
        assert_eq!(
            classify(&e, "messages", &s).unwrap().sql,
            "(\"occurred_at_ms\" > ?)"
        );
        let e = cast(
            col("occurred_at_ms"),
            DataType::Timestamp(TimeUnit::Millisecond, Some("+01:00".into())),
        )
        .gt(at(7, Some("+01:00")));
        assert!(classify(&e, "messages", &s).unwrap().exact);
        // Finer units, and casts of other columns, are DataFusion's.
        let e = col("occurred_at_ms").lt(lit(ScalarValue::TimestampMicrosecond(Some(3), None)));
        assert!(classify(&e, "messages", &s).is_none());
        let e = cast(col("word_count"), DataType::Int64).gt(lit(7i64));
        assert!(classify(&e, "messages", &s).is_none());
        let e = cast(col("occurred_at_ms"), DataType::Utf8).eq(lit("x"));
        assert!(classify(&e, "messages", &s).is_none());
        assert!(classify(&col("occurred_at_ms").like(lit("1%")), "messages", &s).is_none());
    }

    #[test]
    fn translates_exact_filters() {
        let s = schema();
        let e = col("role")
            .eq(lit("assistant"))
            .and(col("word_count").gt_eq(lit(10i64)));
        let p = classify(&e, "messages", &s).unwrap();
        assert_eq!(p.sql, "((\"role\" = ?) AND (\"word_count\" >= ?))");
        assert_eq!(
            p.params,
            vec![Value::Text("assistant".into()), Value::Integer(10)]
        );
        let e = lit(5i64).lt(col("word_count"));
        assert_eq!(
            classify(&e, "messages", &s).unwrap().sql,
            "(\"word_count\" > ?)"
        );
        let e = col("role").in_list(vec![lit("a"), lit("b")], true);
        assert_eq!(
            classify(&e, "messages", &s).unwrap().sql,
            "(\"role\" NOT IN (?, ?))"
        );
        let e = col("is_error").eq(lit(true)).or(col("role").is_null());
        assert!(classify(&e, "actions", &s).is_some());
    }

    #[test]
    fn refuses_what_sqlite_computes_differently() {
        let s = schema();
        // A literal of another type would need a cast.
        assert!(classify(&col("word_count").eq(lit("10")), "messages", &s).is_none());
        assert!(classify(&col("word_count").eq(lit(10i32)), "messages", &s).is_none());
        // A function of a column is DataFusion's.
        let e = datafusion::functions::string::expr_fn::lower(col("role")).eq(lit("x"));
        assert_eq!(
            support(&e, "messages", &s),
            TableProviderFilterPushDown::Unsupported
        );
    }

    #[test]
    fn like_escapes_with_backslash_as_arrow_does() {
        let s = schema();
        let p = classify(&col("role").like(lit("a\\_b%")), "messages", &s).unwrap();
        assert_eq!(p.sql, "(\"role\" LIKE ? ESCAPE '\\')");
        assert!(p.exact);
        // A pattern ending in a lone escape means different things to the two engines.
        assert!(classify(&col("role").like(lit("ab\\")), "messages", &s).is_none());
    }

    #[test]
    fn ilike_is_exact_when_ascii_folding_suffices_and_a_superset_otherwise() {
        let s = schema();
        let p = classify(&col("role").ilike(lit("%ASSI%")), "messages", &s).unwrap();
        assert_eq!(p.sql, "(lower(\"role\") LIKE ? ESCAPE '\\')");
        assert_eq!(p.params, vec![Value::Text("%a__i%".into())]);
        assert!(!p.exact, "s folds with LONG S: widened");
        let p = classify(&col("role").ilike(lit("%Tool\\_Use%")), "messages", &s).unwrap();
        assert_eq!(p.params, vec![Value::Text("%tool\\_u_e%".into())]);
        let p = classify(&col("role").ilike(lit("%TOOL%")), "messages", &s).unwrap();
        assert_eq!(p.params, vec![Value::Text("%tool%".into())]);
        assert!(p.exact);
        assert_eq!(
            support(&col("role").ilike(lit("%TOOL%")), "messages", &s),
            TableProviderFilterPushDown::Exact
        );
        let p = classify(&col("role").ilike(lit("%łódź%")), "messages", &s).unwrap();
        assert_eq!(p.params, vec![Value::Text("%__d_%".into())]);
        // A superset under AND/OR stays a superset; under NOT it would be a subset.
        let e = col("role").eq(lit("x")).and(col("role").ilike(lit("%k%")));
        assert_eq!(
            support(&e, "messages", &s),
            TableProviderFilterPushDown::Inexact
        );
        assert!(classify(&!col("role").ilike(lit("%k%")), "messages", &s).is_none());
        assert!(classify(&col("role").not_ilike(lit("%k%")), "messages", &s).is_none());
        assert!(
            classify(&col("role").not_ilike(lit("%t%")), "messages", &s)
                .unwrap()
                .exact
        );
    }
}
