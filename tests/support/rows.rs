//! Rows as the tests compare them: an answer's record batches and an SQLite query's rows as
//! JSON arrays, and the one comparison every oracle uses (the tolerance rules of
//! `benches/answers.py`: integers exactly, other numbers to 1e-9 relative, booleans as 0/1,
//! timestamps as instants, everything else exactly).

use std::path::Path;

use serde_json::Value;

/// Rows of a row set as JSON arrays.
pub fn json_rows(batches: &[quarry::arrow::record_batch::RecordBatch]) -> Vec<Vec<Value>> {
    let Value::Array(rows) = quarry::output::rows_json(batches).unwrap() else {
        panic!("rows are an array")
    };
    rows.into_iter()
        .map(|r| match r {
            Value::Array(v) => v,
            other => panic!("a row is an array: {other}"),
        })
        .collect()
}

/// The rows of an SQLite query on the archive, as JSON.
pub fn sql_rows(archive: &Path, sql: &str) -> Vec<Vec<Value>> {
    let conn = super::open(archive);
    query_rows(&conn, sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// The rows of an SQLite query on an open connection, as JSON.
pub fn query_rows(conn: &rusqlite::Connection, sql: &str) -> rusqlite::Result<Vec<Vec<Value>>> {
    let mut stmt = conn.prepare(sql)?;
    let n = stmt.column_count();
    stmt.query_map([], |r| {
        (0..n)
            .map(|i| {
                Ok(match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Null => Value::Null,
                    rusqlite::types::ValueRef::Integer(v) => Value::from(v),
                    rusqlite::types::ValueRef::Real(v) => Value::from(v),
                    rusqlite::types::ValueRef::Text(t) => {
                        Value::from(String::from_utf8_lossy(t).to_string())
                    }
                    rusqlite::types::ValueRef::Blob(_) => Value::Null,
                })
            })
            .collect()
    })?
    .collect()
}

/// A timestamp as an instant (milliseconds since the epoch), when `text` is an RFC 3339 one.
fn instant(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// Whether two values agree: integers exactly; other numbers as f64 (booleans as 0/1, as
/// SQLite stores them) to 1e-9 relative; timestamps as instants; everything else exactly.
pub fn same(a: &Value, b: &Value) -> bool {
    let number = |v: &Value| {
        v.as_bool()
            .map(|b| if b { 1.0 } else { 0.0 })
            .or_else(|| v.as_f64())
    };
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return x == y;
    }
    if let (Some(x), Some(y)) = (a.as_str().and_then(instant), b.as_str().and_then(instant)) {
        return x == y;
    }
    match (number(a), number(b)) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
        _ => a == b,
    }
}

/// The first difference between two answers, rows compared in order (`None`: they agree).
pub fn difference(got: &[Vec<Value>], want: &[Vec<Value>]) -> Option<String> {
    if got.len() != want.len() {
        let first = got
            .iter()
            .zip(want)
            .position(|(g, w)| !same_row(g, w))
            .map(|i| {
                format!(
                    "; first differing row {i}: {:?} against {:?}",
                    got[i], want[i]
                )
            })
            .unwrap_or_default();
        return Some(format!(
            "{} rows, the oracle {}{first}",
            got.len(),
            want.len()
        ));
    }
    got.iter()
        .zip(want)
        .position(|(g, w)| !same_row(g, w))
        .map(|i| format!("row {i}: {:?} != oracle {:?}", got[i], want[i]))
}

fn same_row(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
}

/// A value's sort key, the same for both sides of a comparison: whole numbers exactly (whether
/// written as integers or not; booleans as 0/1), other numbers to nine significant digits;
/// timestamps as instants.
fn key(v: &Value) -> String {
    let number = |x: f64| {
        if x.fract() == 0.0 && x.abs() < 9.0e15 {
            format!("n{:+020}", x as i64)
        } else {
            format!("r{x:.8e}")
        }
    };
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => number(f64::from(u8::from(*b))),
        Value::Number(n) => match n.as_i64() {
            Some(i) => format!("n{i:+020}"),
            None => number(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => match instant(s) {
            Some(ms) => format!("t{ms:020}"),
            None => format!("s{s}"),
        },
        other => format!("v{other}"),
    }
}

/// Rows in one canonical order (for answers whose order the question leaves open).
pub fn sorted(mut rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    rows.sort_by_cached_key(|r| r.iter().map(key).collect::<Vec<_>>());
    rows
}

/// Only the columns at `columns`, of every row.
pub fn keep_columns(rows: Vec<Vec<Value>>, columns: &[usize]) -> Vec<Vec<Value>> {
    rows.into_iter()
        .map(|r| columns.iter().map(|&i| r[i].clone()).collect())
        .collect()
}
