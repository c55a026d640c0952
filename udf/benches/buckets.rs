//! quarry's `date_trunc` against DataFusion's built-in on the same arrays: 1,000,000 millisecond
//! times over two years in batches of 8,192 (sorted within a batch, as an archive's rows mostly
//! are, and shuffled), for a day, an hour and a month, in a fixed offset (`+00:00`, what the
//! language casts UTC to) and in Europe/Warsaw. Only the function is timed, not a plan.
//! Run: `cargo bench -p quarry-udf --bench buckets`.

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::arrow::array::{ArrayRef, TimestampMillisecondArray};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::ScalarValue;
use datafusion::common::config::ConfigOptions;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF};

const ROWS: usize = 1_000_000;
const BATCH: usize = 8_192;
/// 2025-01-01 and two years on, in milliseconds.
const FROM_MS: i64 = 1_735_689_600_000;
const SPAN_MS: i64 = 2 * 365 * 86_400_000;

fn batches(zone: &str, sorted: bool) -> Vec<ArrayRef> {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut out = Vec::new();
    let mut done = 0;
    while done < ROWS {
        let n = BATCH.min(ROWS - done);
        let mut values: Vec<i64> = if sorted {
            // A batch of rows close in time: a few days of one stretch.
            let start = FROM_MS + (next() % SPAN_MS as u64) as i64;
            (0..n)
                .map(|_| start + (next() % (4 * 86_400_000)) as i64)
                .collect()
        } else {
            (0..n)
                .map(|_| FROM_MS + (next() % SPAN_MS as u64) as i64)
                .collect()
        };
        if sorted {
            values.sort_unstable();
        }
        out.push(Arc::new(TimestampMillisecondArray::from(values).with_timezone(zone)) as ArrayRef);
        done += n;
    }
    out
}

fn run(f: &ScalarUDF, granularity: &str, arrays: &[ArrayRef]) -> usize {
    let config = Arc::new(ConfigOptions::default());
    let mut rows = 0;
    for array in arrays {
        let field = Arc::new(Field::new("t", array.data_type().clone(), true));
        let out = f
            .invoke_with_args(ScalarFunctionArgs {
                args: vec![
                    ColumnarValue::Scalar(ScalarValue::Utf8(Some(granularity.into()))),
                    ColumnarValue::Array(Arc::clone(array)),
                ],
                arg_fields: vec![
                    Arc::new(Field::new("g", DataType::Utf8, false)),
                    field.clone(),
                ],
                number_rows: array.len(),
                return_field: field,
                config_options: Arc::clone(&config),
            })
            .unwrap_or_else(|e| panic!("{granularity}: {e}"));
        if let ColumnarValue::Array(a) = out {
            rows += a.len();
        }
    }
    rows
}

fn bench(c: &mut Criterion) {
    let ours = quarry_udf::functions::date_trunc_udf();
    let builtin = datafusion::functions::datetime::date_trunc();
    for zone in ["+00:00", "Europe/Warsaw"] {
        for (order, sorted) in [("sorted", true), ("shuffled", false)] {
            let arrays = batches(zone, sorted);
            for granularity in ["day", "hour", "month"] {
                let mut group =
                    c.benchmark_group(format!("date_trunc_1m_{granularity}_{zone}_{order}"));
                group.sample_size(10);
                group.bench_function("quarry", |b| b.iter(|| run(&ours, granularity, &arrays)));
                group.bench_function("datafusion", |b| {
                    b.iter(|| run(&builtin, granularity, &arrays))
                });
                group.finish();
            }
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
