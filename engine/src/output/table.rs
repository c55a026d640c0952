//! The table people read on a terminal: comfy-table, numbers right-aligned, floats at a readable
//! precision (`36.94`, as DuckDB's CLI shows them; the other formats keep full precision),
//! times as RFC 3339, and a footer saying what the rows are.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, Table};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

use crate::answer::{Attachment, Completion, QueryResult};
use crate::error::Error;

/// The answer as a table with its footer (and any attached rows below it).
pub fn render(answer: &QueryResult) -> Result<String, Error> {
    render_parts(
        &answer.meta.unit,
        &answer.schema,
        &answer.batches,
        &answer.completion(),
        &answer.attachments,
    )
}

/// The table of an answer given in its parts.
fn render_parts(
    unit: &str,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    completion: &Completion,
    attachments: &[Attachment],
) -> Result<String, Error> {
    let mut out = grid(schema, batches)?;
    let rows = completion.rows;
    let mut footer = format!("{} ({unit}, exact)", plural(rows, "row"));
    if let Some(n) = completion.input_rows {
        footer.push_str(&format!(" over {}", plural(n as usize, "input row")));
    }
    if completion.truncated {
        footer.push_str("; truncated by --limit");
    }
    if let Some(cursor) = &completion.next_cursor {
        footer.push_str(&format!("; next page: --cursor {cursor}"));
    }
    out.push_str(&footer);
    out.push('\n');
    for attached in attachments {
        out.push_str(&format!("\nattached {}:\n", attached.unit));
        out.push_str(&grid(&attached.schema, &attached.batches)?);
    }
    Ok(out)
}

/// The table, written once the answer is complete (its column widths need every row).
pub(super) fn whole(parts: &super::whole::Parts<'_>) -> Result<String, Error> {
    render_parts(
        &parts.meta.unit,
        parts.schema,
        parts.batches,
        parts.completion,
        parts.attached,
    )
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The rows as a grid; nothing when there are none.
fn grid(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<String, Error> {
    if batches.iter().all(|b| b.num_rows() == 0) {
        return Ok(String::new());
    }
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header(schema.fields().iter().map(|f| f.name().as_str()));
    let options = FormatOptions::default();
    for batch in batches {
        let cells: Vec<Vec<String>> = batch
            .columns()
            .iter()
            .map(|array| column_cells(array.as_ref(), &options))
            .collect::<Result<_, _>>()?;
        for row in 0..batch.num_rows() {
            table.add_row(cells.iter().map(|column| column[row].as_str()));
        }
    }
    for (i, field) in schema.fields().iter().enumerate() {
        if field.data_type().is_numeric()
            && let Some(column) = table.column_mut(i)
        {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    Ok(format!("{table}\n"))
}

fn column_cells(array: &dyn Array, options: &FormatOptions) -> Result<Vec<String>, Error> {
    let readable = |values: &mut dyn Iterator<Item = Option<f64>>| -> Vec<String> {
        values
            .map(|v| v.map(readable_float).unwrap_or_default())
            .collect()
    };
    Ok(match array.data_type() {
        DataType::Float64 => readable(&mut array.as_primitive::<Float64Type>().iter()),
        DataType::Float32 => readable(
            &mut array
                .as_primitive::<Float32Type>()
                .iter()
                .map(|v| v.map(f64::from)),
        ),
        _ => {
            let formatter = ArrayFormatter::try_new(array, options).map_err(Error::failed)?;
            (0..array.len())
                .map(|i| {
                    if array.is_null(i) {
                        String::new()
                    } else {
                        formatter.value(i).to_string()
                    }
                })
                .collect()
        }
    })
}

/// A float as people read it: two decimals from 1 up (`36.94`), four significant digits below
/// (`0.01234`), whole numbers without decimals.
fn readable_float(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if v == v.trunc() && v.abs() < 1e15 {
        return format!("{v:.0}");
    }
    if v.abs() >= 1.0 {
        return format!("{v:.2}");
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(2, 12) as usize;
    let text = format!("{v:.digits$}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::readable_float;

    #[test]
    fn floats_read_like_a_duckdb_table() {
        assert_eq!(readable_float(36.9412), "36.94");
        assert_eq!(readable_float(2.0), "2");
        assert_eq!(readable_float(0.012346), "0.01235");
        assert_eq!(readable_float(0.5), "0.5");
        assert_eq!(readable_float(-1234.5678), "-1234.57");
        assert_eq!(readable_float(f64::NAN), "NaN");
    }
}
