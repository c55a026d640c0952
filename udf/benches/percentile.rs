//! Our exact nearest-rank p90 (`percentile_nearest_rank(v, 90)`) against DataFusion's own exact
//! `percentile_cont(v, 0.9)` on the same data through SQL on a MemTable: 1,000,000 Float64 rows
//! in 1,000 groups (the `GroupsAccumulator` path) and in one global group (the `Accumulator`
//! path). Run: `cargo bench -p quarry-udf --bench percentile`.

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::arrow::array::{Float64Array, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use tokio::runtime::Runtime;

const ROWS: usize = 1_000_000;
const GROUPS: u64 = 1_000;
const BATCH: usize = 8_192;

/// The same table for every query: `t(g BIGINT, v DOUBLE)`, random, batches dealt over as many
/// partitions as the session has.
fn context() -> SessionContext {
    let ctx = SessionContext::new();
    quarry_udf::functions::register_all(&ctx);
    let schema = Arc::new(Schema::new(vec![
        Field::new("g", DataType::Int64, false),
        Field::new("v", DataType::Float64, false),
    ]));
    let partitions = ctx.copied_config().target_partitions().max(1);
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut parts: Vec<Vec<RecordBatch>> = vec![Vec::new(); partitions];
    let mut done = 0;
    while done < ROWS {
        let n = BATCH.min(ROWS - done);
        let g: Vec<i64> = (0..n).map(|_| (next() % GROUPS) as i64).collect();
        let v: Vec<f64> = (0..n)
            .map(|_| (next() % 1_000_000) as f64 / 100.0)
            .collect();
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from(g)),
                Arc::new(Float64Array::from(v)),
            ],
        )
        .unwrap_or_else(|e| panic!("batch: {e}"));
        let k = (done / BATCH) % partitions;
        if let Some(p) = parts.get_mut(k) {
            p.push(batch);
        }
        done += n;
    }
    let table = MemTable::try_new(schema, parts).unwrap_or_else(|e| panic!("table: {e}"));
    ctx.register_table("t", Arc::new(table))
        .unwrap_or_else(|e| panic!("register: {e}"));
    ctx
}

fn run(rt: &Runtime, ctx: &SessionContext, sql: &str) -> usize {
    rt.block_on(async {
        let batches = ctx
            .sql(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .collect()
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        batches.iter().map(RecordBatch::num_rows).sum()
    })
}

fn bench(c: &mut Criterion) {
    let rt = Runtime::new().unwrap_or_else(|e| panic!("runtime: {e}"));
    let ctx = context();
    let shapes = [
        (
            "1000_groups",
            "SELECT g, percentile_nearest_rank(v, 90) FROM t GROUP BY g",
            "SELECT g, percentile_cont(v, 0.9) FROM t GROUP BY g",
        ),
        (
            "global",
            "SELECT percentile_nearest_rank(v, 90) FROM t",
            "SELECT percentile_cont(v, 0.9) FROM t",
        ),
    ];
    for (shape, ours, theirs) in shapes {
        let mut group = c.benchmark_group(format!("p90_1m_rows_{shape}"));
        group.sample_size(20);
        group.bench_function("percentile_nearest_rank", |b| {
            b.iter(|| run(&rt, &ctx, ours))
        });
        group.bench_function("percentile_cont", |b| b.iter(|| run(&rt, &ctx, theirs)));
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
