//! Reading a report's answer (Arrow record batches) into rows and sums.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

use super::{Kind, Report, Request, Row, Sums, blocks};
use crate::api::Session;
use crate::error::Error;
use crate::request::Caps;

/// [`super::run`] with the engine.
pub(super) async fn run(session: &Session, request: &Request) -> Result<Report, Error> {
    let query = request.query();
    let result = session
        .query(&query, Caps::default())
        .await?
        .collect()
        .await?;
    // The key columns come first, then one column per metric of the query.
    let key_count = result.schema.fields().len() - super::METRICS.split(", ").count();
    let key_names: Vec<String> = result.schema.fields()[..key_count]
        .iter()
        .map(|f| key_name(f.name()))
        .collect();
    let mut rows = Vec::new();
    let mut totals = Sums::default();
    for batch in &result.batches {
        let keys: Vec<Vec<String>> = (0..key_count)
            .map(|i| column_text(batch.column(i), request.kind))
            .collect::<Result<_, _>>()?;
        let metric = |i: usize| batch.column(key_count + i);
        let counts: Vec<Vec<u64>> = (0..5)
            .map(|i| integers(metric(i)))
            .collect::<Result<_, _>>()?;
        let cost = floats(metric(5))?;
        for r in 0..batch.num_rows() {
            let sums = Sums {
                responses: counts[0][r],
                input_tokens: counts[1][r],
                output_tokens: counts[2][r],
                cache_write_tokens: counts[3][r],
                cache_read_tokens: counts[4][r],
                cost_usd: cost[r],
            };
            totals.add(&sums);
            rows.push(Row {
                keys: key_names
                    .iter()
                    .zip(&keys)
                    .map(|(name, column)| (name.clone(), column[r].clone()))
                    .collect(),
                sums,
            });
        }
    }
    Ok(Report {
        report: request.kind.name(),
        query,
        key_names,
        rows,
        totals,
        approximate_left_out: 0,
    })
}

/// How many approximate responses the report's days hold that it left out (0 when it counts
/// them).
pub(super) async fn left_out(session: &Session, request: &Request) -> Result<u64, Error> {
    let Some(query) = request.left_out_query() else {
        return Ok(0);
    };
    let result = session
        .query(&query, Caps::default())
        .await?
        .collect()
        .await?;
    let mut n = 0;
    for batch in &result.batches {
        n += integers(batch.column(0))?.iter().sum::<u64>();
    }
    Ok(n)
}

/// The name a report shows for a key column of the query's answer.
fn key_name(column: &str) -> String {
    match column {
        c if c.starts_with("time") => String::from("period"),
        "session_id" => String::from("session_id"),
        c => c.trim_start_matches("session_").to_string(),
    }
}

/// The values of a key column as text: a period as its first day (`2026-03-09`) or month
/// (`2026-03`), NULL as `(none)`.
fn column_text(array: &ArrayRef, kind: Kind) -> Result<Vec<String>, Error> {
    let options = FormatOptions::default().with_null("(none)");
    let formatter = ArrayFormatter::try_new(array.as_ref(), &options).map_err(Error::failed)?;
    let timestamp = matches!(array.data_type(), DataType::Timestamp(..));
    Ok((0..array.len())
        .map(|i| {
            let text = formatter.value(i).to_string();
            match (timestamp, kind) {
                (true, Kind::Monthly) => text.chars().take(7).collect(),
                (true, _) => text.chars().take(10).collect(),
                (false, _) => text,
            }
        })
        .collect())
}

/// An integer column's values (NULL as 0: a sum over no rows).
fn integers(array: &ArrayRef) -> Result<Vec<u64>, Error> {
    let cast = cast(array, &DataType::Int64).map_err(Error::failed)?;
    let values = cast.as_primitive::<Int64Type>();
    Ok((0..values.len())
        .map(|i| {
            if values.is_null(i) {
                0
            } else {
                u64::try_from(values.value(i)).unwrap_or(0)
            }
        })
        .collect())
}

/// A float column's values, NULL as `None`.
fn floats(array: &ArrayRef) -> Result<Vec<Option<f64>>, Error> {
    let cast = cast(array, &DataType::Float64).map_err(Error::failed)?;
    let values = cast.as_primitive::<Float64Type>();
    Ok((0..values.len())
        .map(|i| (!values.is_null(i)).then(|| values.value(i)))
        .collect())
}

/// The rows of `batches` as (epoch ms, model, sums) for [`blocks`].
pub(super) fn usage_rows(batches: &[RecordBatch]) -> Result<Vec<blocks::Entry>, Error> {
    let mut out = Vec::new();
    for batch in batches {
        let at = cast(batch.column(0), &DataType::Int64).map_err(Error::failed)?;
        let at = at.as_primitive::<Int64Type>();
        let model = column_text(batch.column(1), Kind::Daily)?;
        let counts: Vec<Vec<u64>> = (2..6)
            .map(|i| integers(batch.column(i)))
            .collect::<Result<_, _>>()?;
        let cost = floats(batch.column(6))?;
        for r in 0..batch.num_rows() {
            if at.is_null(r) {
                continue;
            }
            out.push(blocks::Entry {
                at_ms: at.value(r),
                model: model[r].clone(),
                sums: Sums {
                    responses: 1,
                    input_tokens: counts[0][r],
                    output_tokens: counts[1][r],
                    cache_write_tokens: counts[2][r],
                    cache_read_tokens: counts[3][r],
                    cost_usd: cost[r],
                },
            });
        }
    }
    Ok(out)
}
