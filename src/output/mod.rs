//! The result envelope shared by every surface, and one encoder per format. Encoders see only
//! the envelope's record batches (STYLE point 8); `export` writes the streaming formats batch by
//! batch.

pub mod export;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{
    DataType, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use serde_json::{Value, json};

use crate::engine::{Answer, RowSet};
use crate::format::Format;

/// The envelope of one answer as JSON.
pub fn envelope(answer: &Answer) -> Value {
    let semantics = serde_json::to_value(answer.resolved.semantics).unwrap_or(Value::Null);
    let mut value = json!({
        "unit": answer.resolved.unit_source,
        "semantics": semantics,
        "exact": true,
        "source": "sqlite",
        "columns": columns(&answer.rows),
        "rows": rows(&answer.rows),
        "total": answer.rows.len(),
        "truncated": answer.truncated,
        "skipped_partitions": 0,
    });
    if let Some(obj) = value.as_object_mut() {
        if let Some(n) = answer.input_rows {
            obj.insert("input_rows".into(), json!(n));
        }
        if !answer.attachments.is_empty() {
            let attached: Vec<Value> = answer
                .attachments
                .iter()
                .map(|(unit, set)| json!({"unit": unit, "columns": columns(set), "rows": rows(set), "total": set.len()}))
                .collect();
            obj.insert("attachments".into(), Value::Array(attached));
        }
    }
    value
}

fn columns(set: &RowSet) -> Value {
    Value::Array(
        set.schema
            .fields()
            .iter()
            .map(|f| json!({"name": f.name(), "type": type_name(f.data_type())}))
            .collect(),
    )
}

fn type_name(t: &DataType) -> String {
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

/// Rows as arrays of JSON values, in column order.
pub fn rows(set: &RowSet) -> Value {
    let mut out = Vec::with_capacity(set.len());
    for batch in &set.batches {
        let columns: Vec<Vec<Value>> = batch.columns().iter().map(column_values).collect();
        for row in 0..batch.num_rows() {
            out.push(Value::Array(
                columns
                    .iter()
                    .map(|c| c.get(row).cloned().unwrap_or(Value::Null))
                    .collect(),
            ));
        }
    }
    Value::Array(out)
}

fn column_values(array: &ArrayRef) -> Vec<Value> {
    fn ints<T: datafusion::arrow::datatypes::ArrowPrimitiveType>(a: &ArrayRef) -> Vec<Value>
    where
        T::Native: Into<serde_json::Number>,
    {
        let a = a.as_primitive::<T>();
        (0..a.len())
            .map(|i| {
                if a.is_null(i) {
                    Value::Null
                } else {
                    Value::Number(a.value(i).into())
                }
            })
            .collect()
    }
    fn floats<T: datafusion::arrow::datatypes::ArrowPrimitiveType>(a: &ArrayRef) -> Vec<Value>
    where
        T::Native: Into<f64>,
    {
        let a = a.as_primitive::<T>();
        (0..a.len())
            .map(|i| {
                if a.is_null(i) {
                    Value::Null
                } else {
                    serde_json::Number::from_f64(a.value(i).into())
                        .map_or(Value::Null, Value::Number)
                }
            })
            .collect()
    }
    match array.data_type() {
        DataType::Int8 => ints::<Int8Type>(array),
        DataType::Int16 => ints::<Int16Type>(array),
        DataType::Int32 => ints::<Int32Type>(array),
        DataType::Int64 => ints::<Int64Type>(array),
        DataType::UInt8 => ints::<UInt8Type>(array),
        DataType::UInt16 => ints::<UInt16Type>(array),
        DataType::UInt32 => ints::<UInt32Type>(array),
        DataType::UInt64 => ints::<UInt64Type>(array),
        DataType::Float32 => floats::<Float32Type>(array),
        DataType::Float64 => floats::<Float64Type>(array),
        DataType::Boolean => {
            let a = array.as_boolean();
            (0..a.len())
                .map(|i| {
                    if a.is_null(i) {
                        Value::Null
                    } else {
                        Value::Bool(a.value(i))
                    }
                })
                .collect()
        }
        _ => {
            let options = FormatOptions::default();
            match ArrayFormatter::try_new(array.as_ref(), &options) {
                Ok(f) => (0..array.len())
                    .map(|i| {
                        if array.is_null(i) {
                            Value::Null
                        } else {
                            Value::String(f.value(i).to_string())
                        }
                    })
                    .collect(),
                Err(_) => vec![Value::Null; array.len()],
            }
        }
    }
}

/// Renders an answer in `format`.
pub fn render(answer: &Answer, format: Format) -> String {
    match format {
        Format::Json => format!("{}\n", envelope(answer)),
        Format::Yaml => yaml(&envelope(answer), 0),
        Format::Ndjson => ndjson(&answer.rows),
        Format::Csv => csv(&answer.rows),
        Format::Table => table(answer),
        // Binary formats are streamed by `export`; an answer already collected is shown as
        // its envelope.
        Format::Arrow | Format::Parquet => format!("{}\n", envelope(answer)),
    }
}

/// Rows as JSON objects, one per line.
pub fn ndjson(set: &RowSet) -> String {
    let names: Vec<String> = set
        .schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let mut out = String::new();
    if let Value::Array(rows) = rows(set) {
        for row in rows {
            if let Value::Array(values) = row {
                let obj: serde_json::Map<String, Value> =
                    names.iter().cloned().zip(values).collect();
                out.push_str(&Value::Object(obj).to_string());
                out.push('\n');
            }
        }
    }
    out
}

fn csv_field(v: &Value) -> String {
    let text = match v {
        Value::Null => return String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

fn csv(set: &RowSet) -> String {
    let mut out = csv_header(&set.schema);
    out.push_str(&csv_rows(set));
    out
}

/// The CSV header line.
pub fn csv_header(schema: &datafusion::arrow::datatypes::SchemaRef) -> String {
    let mut out = schema
        .fields()
        .iter()
        .map(|f| csv_field(&Value::String(f.name().clone())))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    out
}

/// CSV lines of the rows (no header).
pub fn csv_rows(set: &RowSet) -> String {
    let mut out = String::new();
    if let Value::Array(rows) = rows(set) {
        for row in rows {
            if let Value::Array(values) = row {
                out.push_str(&values.iter().map(csv_field).collect::<Vec<_>>().join(","));
                out.push('\n');
            }
        }
    }
    out
}

fn table(answer: &Answer) -> String {
    let mut out = pretty(&answer.rows);
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let mut footer = format!(
        "{} ({}, exact)",
        plural(answer.rows.len(), "row"),
        answer.resolved.unit_source
    );
    if let Some(n) = answer.input_rows {
        footer.push_str(&format!(" over {}", plural(n, "input row")));
    }
    if answer.truncated {
        footer.push_str("; truncated by --limit");
    }
    out.push_str(&footer);
    out.push('\n');
    for (unit, set) in &answer.attachments {
        out.push_str(&format!("\nattached {unit}:\n"));
        out.push_str(&pretty(set));
    }
    out
}

fn pretty(set: &RowSet) -> String {
    match datafusion::arrow::util::pretty::pretty_format_batches(&set.batches) {
        Ok(t) if !set.batches.is_empty() => format!("{t}\n"),
        _ => String::new(),
    }
}

/// A small YAML emitter for JSON values (strings quoted JSON-style, which YAML accepts).
fn yaml(value: &Value, indent: usize) -> String {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) if !map.is_empty() => map
            .iter()
            .map(|(k, v)| match v {
                Value::Object(m) if !m.is_empty() => format!("{pad}{k}:\n{}", yaml(v, indent + 2)),
                Value::Array(a) if !a.is_empty() => format!("{pad}{k}:\n{}", yaml(v, indent + 2)),
                scalar => format!("{pad}{k}: {}\n", scalar_yaml(scalar)),
            })
            .collect(),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|v| match v {
                Value::Object(m) if !m.is_empty() => {
                    let inner = yaml(v, indent + 2);
                    format!("{pad}- {}\n", inner.trim_start().trim_end_matches('\n'))
                }
                Value::Array(_) => format!("{pad}- {}\n", v),
                scalar => format!("{pad}- {}\n", scalar_yaml(scalar)),
            })
            .collect(),
        scalar => format!("{pad}{}\n", scalar_yaml(scalar)),
    }
}

fn scalar_yaml(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        other => other.to_string(),
    }
}
