//! The one classifier that both answers `supports_filters_pushdown` and translates filters to a
//! parameterised SQLite `WHERE`, so the two cannot drift apart (STYLE point 6).
//!
//! `Exact` only where SQLite computes the same rows as DataFusion: comparisons, `BETWEEN`,
//! `IN`, `IS [NOT] NULL` of a column against literals of its own type (SQLite's BINARY collation
//! compares text bytewise, as Arrow does; NULLs propagate the same way), `LIKE` with
//! `case_sensitive_like` on (set on every scan connection), `AND`, `OR` and `NOT` of exact
//! parts, and the full-text marker `fts_match(...)` on `blocks`, rendered as an FTS5 `MATCH`.
//! Everything else (`ILIKE`: SQLite folds only ASCII; casts; functions) is `Unsupported` and
//! evaluated by DataFusion above the scan.

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Expr, Operator, TableProviderFilterPushDown};
use rusqlite::types::Value;

/// The name of the full-text marker function the provider pushes down as FTS5 `MATCH`.
pub const FTS_FUNCTION: &str = "fts_match";

/// A filter translated to SQL.
#[derive(Debug, Clone, PartialEq)]
pub struct Pushdown {
    /// The SQL condition with `?` placeholders.
    pub sql: String,
    /// The values of the placeholders, in order.
    pub params: Vec<Value>,
}

/// Translates `expr` for a scan of `table` with `schema`, or `None` when it cannot be pushed
/// down exactly.
pub fn classify(expr: &Expr, table: &str, schema: &SchemaRef) -> Option<Pushdown> {
    let mut params = Vec::new();
    let sql = translate(expr, table, schema, &mut params)?;
    Some(Pushdown { sql, params })
}

/// The pushdown answer for one filter.
pub fn support(expr: &Expr, table: &str, schema: &SchemaRef) -> TableProviderFilterPushDown {
    if classify(expr, table, schema).is_some() {
        TableProviderFilterPushDown::Exact
    } else {
        TableProviderFilterPushDown::Unsupported
    }
}

fn translate(
    expr: &Expr,
    table: &str,
    schema: &SchemaRef,
    params: &mut Vec<Value>,
) -> Option<String> {
    match expr {
        Expr::BinaryExpr(b) => match b.op {
            Operator::And | Operator::Or => {
                let left = translate(&b.left, table, schema, params)?;
                let right = translate(&b.right, table, schema, params)?;
                let op = if b.op == Operator::And { "AND" } else { "OR" };
                Some(format!("({left} {op} {right})"))
            }
            Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq => comparison(&b.left, b.op, &b.right, schema, params)
                .or_else(|| comparison(&b.right, flip(b.op)?, &b.left, schema, params)),
            _ => None,
        },
        Expr::Not(inner) => translate(inner, table, schema, params).map(|s| format!("(NOT {s})")),
        Expr::IsNull(inner) => column(inner, schema).map(|(c, _)| format!("({c} IS NULL)")),
        Expr::IsNotNull(inner) => column(inner, schema).map(|(c, _)| format!("({c} IS NOT NULL)")),
        Expr::InList(list) => {
            let (col, data_type) = column(&list.expr, schema)?;
            if list.list.is_empty() {
                return None;
            }
            let mut values = Vec::with_capacity(list.list.len());
            for item in &list.list {
                values.push(literal(item, &data_type)?);
            }
            let marks = vec!["?"; values.len()].join(", ");
            params.extend(values);
            let not = if list.negated { "NOT " } else { "" };
            Some(format!("({col} {not}IN ({marks}))"))
        }
        Expr::Between(between) => {
            let (col, data_type) = column(&between.expr, schema)?;
            let low = literal(&between.low, &data_type)?;
            let high = literal(&between.high, &data_type)?;
            params.push(low);
            params.push(high);
            let not = if between.negated { "NOT " } else { "" };
            Some(format!("({col} {not}BETWEEN ? AND ?)"))
        }
        Expr::Like(like) if !like.case_insensitive => {
            let (col, data_type) = column(&like.expr, schema)?;
            if data_type != DataType::Utf8 {
                return None;
            }
            let pattern = literal(&like.pattern, &DataType::Utf8)?;
            params.push(pattern);
            let not = if like.negated { "NOT " } else { "" };
            match like.escape_char {
                Some(c) if c != '\'' => Some(format!("({col} {not}LIKE ? ESCAPE '{c}')")),
                Some(_) => None,
                None => Some(format!("({col} {not}LIKE ?)")),
            }
        }
        Expr::ScalarFunction(f) if f.name() == FTS_FUNCTION && table == "blocks" => {
            let [_, query] = f.args.as_slice() else {
                return None;
            };
            let query = literal(query, &DataType::Utf8)?;
            params.push(query);
            Some("(rowid IN (SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH ?))".to_string())
        }
        _ => None,
    }
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
    schema: &SchemaRef,
    params: &mut Vec<Value>,
) -> Option<String> {
    let (col, data_type) = column(left, schema)?;
    let value = literal(right, &data_type)?;
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

/// A bare column of the table: its quoted name and type.
fn column(expr: &Expr, schema: &SchemaRef) -> Option<(String, DataType)> {
    let Expr::Column(c) = expr else { return None };
    let field = schema.field_with_name(&c.name).ok()?;
    Some((
        format!("\"{}\"", c.name.replace('"', "\"\"")),
        field.data_type().clone(),
    ))
}

/// A literal of exactly the column's type (no implicit casts: they would change semantics).
fn literal(expr: &Expr, data_type: &DataType) -> Option<Value> {
    let Expr::Literal(value, _) = expr else {
        return None;
    };
    match (data_type, value) {
        (DataType::Int64, ScalarValue::Int64(Some(v))) => Some(Value::Integer(*v)),
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
    use datafusion::logical_expr::{col, lit};

    use super::*;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("role", DataType::Utf8, true),
            Field::new("word_count", DataType::Int64, true),
            Field::new("is_error", DataType::Boolean, true),
        ]))
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
        assert!(classify(&col("role").ilike(lit("A%")), "messages", &s).is_none());
        // A literal of another type would need a cast.
        assert!(classify(&col("word_count").eq(lit("10")), "messages", &s).is_none());
        assert!(classify(&col("word_count").eq(lit(10i32)), "messages", &s).is_none());
        // One inexact side makes the whole AND unsupported.
        let e = col("role").eq(lit("x")).and(col("role").ilike(lit("y")));
        assert!(classify(&e, "messages", &s).is_none());
        assert_eq!(
            support(&e, "messages", &s),
            TableProviderFilterPushDown::Unsupported
        );
    }
}
