//! Tests of `percentile_nearest_rank` through real `SessionContext`s, against an independent
//! oracle (sort, then the smallest rank k with k/n >= p/100, in exact integers).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use datafusion::arrow::array::{BooleanArray, Float64Array, Int64Array};
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::EmitTo;
use datafusion::prelude::{SessionConfig, SessionContext};

use super::*;

/// How many `Accumulator`s / `GroupsAccumulator`s were created and how often `convert_to_state`
/// ran, so the tests can show which path a query took.
pub(super) static ACCUMULATORS: AtomicUsize = AtomicUsize::new(0);
pub(super) static GROUPS_ACCUMULATORS: AtomicUsize = AtomicUsize::new(0);
pub(super) static CONVERTED: AtomicUsize = AtomicUsize::new(0);

/// A deterministic xorshift generator.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The definition, literally.
fn oracle<T: Copy>(values: &[T], p: u8, cmp: impl Fn(&T, &T) -> std::cmp::Ordering) -> Option<T> {
    let mut sorted = values.to_vec();
    sorted.sort_by(cmp);
    let n = sorted.len();
    let rank = (1..=n).find(|k| 100 * k >= usize::from(p) * n)?;
    sorted.get(rank - 1).copied()
}

/// Per group: the answers for the float, integer and boolean (as 0/1) columns.
type Answers = BTreeMap<i64, (Option<f64>, Option<i64>, Option<i64>)>;

/// Per group: the non-NULL float, integer and boolean values.
type Values = BTreeMap<i64, (Vec<f64>, Vec<i64>, Vec<i64>)>;

/// One row: group, float value, integer value, boolean value.
type Row = (i64, Option<f64>, Option<i64>, Option<bool>);

/// Groups of many shapes: one row, ties, negatives, all NULL, a few large.
fn rows(seed: u64, groups: i64) -> Vec<Row> {
    let mut rng = Rng(seed);
    let mut rows = Vec::new();
    for g in 0..groups {
        let size = match g % 7 {
            0 => 1,
            1 => 2 + rng.below(3),
            2 => 200 + rng.below(300),
            _ => rng.below(60) + 1,
        };
        let all_null = g % 11 == 5;
        let null_every = 2 + rng.below(6);
        for k in 0..size {
            let null = all_null || k % null_every == 0 && size > 3;
            let int = (rng.below(41) as i64 - 20) * (1 + g % 3);
            let v = (!null).then_some(int as f64 * 0.5);
            let i = (!null).then_some(int * 1_000_003);
            let b = (!null).then_some(int > 0);
            rows.push((g, v, i, b));
        }
    }
    // Shuffle so each group spreads over batches and partitions.
    for i in (1..rows.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        rows.swap(i, j);
    }
    rows
}

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("g", DataType::Int64, false),
        Field::new("v", DataType::Float64, true),
        Field::new("i", DataType::Int64, true),
        Field::new("b", DataType::Boolean, true),
    ]))
}

/// A session with `t` over `rows`, cut into batches of `batch` rows dealt over 4 partitions,
/// and 4 target partitions, so partial states are merged.
fn context(rows: &[Row], batch: usize) -> Result<SessionContext> {
    let config = SessionConfig::new()
        .with_target_partitions(4)
        .with_batch_size(64);
    context_with(rows, batch, config)
}

fn context_with(rows: &[Row], batch: usize, config: SessionConfig) -> Result<SessionContext> {
    let ctx = SessionContext::new_with_config(config);
    crate::functions::register_all(&ctx);
    let mut partitions: Vec<Vec<RecordBatch>> = vec![Vec::new(); 4];
    for (n, chunk) in rows.chunks(batch.max(1)).enumerate() {
        let b = RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int64Array::from_iter_values(chunk.iter().map(|r| r.0))),
                Arc::new(Float64Array::from_iter(chunk.iter().map(|r| r.1))),
                Arc::new(Int64Array::from_iter(chunk.iter().map(|r| r.2))),
                Arc::new(BooleanArray::from_iter(chunk.iter().map(|r| r.3))),
            ],
        )?;
        if let Some(p) = partitions.get_mut(n % 4) {
            p.push(b);
        }
    }
    ctx.register_table("t", Arc::new(MemTable::try_new(schema(), partitions)?))?;
    Ok(ctx)
}

/// Runs a query with columns `(g: Int64, a: Float64, b: Int64, c: Int64)` into a map by `g`.
async fn by_group(ctx: &SessionContext, sql: &str) -> Result<Answers> {
    let mut out = BTreeMap::new();
    for b in ctx.sql(sql).await?.collect().await? {
        let g = b.column(0).as_primitive::<Int64Type>();
        let a = b.column(1).as_primitive::<Float64Type>();
        let i = b.column(2).as_primitive::<Int64Type>();
        let c = b.column(3).as_primitive::<Int64Type>();
        for r in 0..b.num_rows() {
            let get_f = |x: &PrimitiveArray<Float64Type>| x.is_valid(r).then(|| x.value(r));
            let get_i = |x: &PrimitiveArray<Int64Type>| x.is_valid(r).then(|| x.value(r));
            out.insert(g.value(r), (get_f(a), get_i(i), get_i(c)));
        }
    }
    Ok(out)
}

/// The oracle's answer per group for the rows that pass `keep`.
fn expected(rows: &[Row], p: u8, keep: impl Fn(&Row) -> bool) -> Answers {
    let mut groups = Values::new();
    for r in rows {
        let e = groups.entry(r.0).or_default();
        if !keep(r) {
            continue;
        }
        e.0.extend(r.1);
        e.1.extend(r.2);
        e.2.extend(r.3.map(i64::from));
    }
    groups
        .into_iter()
        .map(|(g, (v, i, b))| {
            (
                g,
                (
                    oracle(&v, p, f64::total_cmp),
                    oracle(&i, p, i64::cmp),
                    oracle(&b, p, i64::cmp),
                ),
            )
        })
        .collect()
}

const PS: [u8; 8] = [1, 5, 25, 50, 75, 90, 99, 100];

#[tokio::test]
async fn group_by_matches_the_oracle() -> Result<()> {
    let rows = rows(0x5eed, 300);
    let ctx = context(&rows, 97)?;
    let before = GROUPS_ACCUMULATORS.load(AtomicOrdering::Relaxed);
    for p in PS {
        let sql = format!(
            "SELECT g, percentile_nearest_rank(v, {p}), percentile_nearest_rank(i, {p}), \
             percentile_nearest_rank(b, {p}) FROM t GROUP BY g"
        );
        assert_eq!(
            by_group(&ctx, &sql).await?,
            expected(&rows, p, |_| true),
            "p{p}"
        );
    }
    assert!(
        GROUPS_ACCUMULATORS.load(AtomicOrdering::Relaxed) > before,
        "GROUP BY must use the GroupsAccumulator"
    );
    Ok(())
}

#[tokio::test]
async fn group_by_with_filter_leaves_empty_groups_null() -> Result<()> {
    let rows = rows(0xf117e5, 120);
    let ctx = context(&rows, 50)?;
    for p in [1, 50, 90, 100] {
        // FILTER reaches update_batch as opt_filter; many groups end up with no value at all.
        let sql = format!(
            "SELECT g, percentile_nearest_rank(v, {p}) FILTER (WHERE i > 20000000), \
             percentile_nearest_rank(i, {p}) FILTER (WHERE i > 20000000), \
             percentile_nearest_rank(b, {p}) FILTER (WHERE i > 20000000) FROM t GROUP BY g"
        );
        let want = expected(&rows, p, |r| r.2.is_some_and(|i| i > 20_000_000));
        assert!(
            want.values().any(|w| w.0.is_none()),
            "some group must be empty"
        );
        assert_eq!(by_group(&ctx, &sql).await?, want, "p{p}");
    }
    Ok(())
}

#[tokio::test]
async fn single_group_matches_the_oracle() -> Result<()> {
    let rows = rows(0xa11, 80);
    let ctx = context(&rows, 33)?;
    let before = ACCUMULATORS.load(AtomicOrdering::Relaxed);
    for p in PS {
        let sql = format!(
            "SELECT 0::BIGINT, percentile_nearest_rank(v, {p}), percentile_nearest_rank(i, {p}), \
             percentile_nearest_rank(b, {p}) FROM t"
        );
        let all: Vec<Row> = rows.iter().map(|r| (0, r.1, r.2, r.3)).collect();
        assert_eq!(
            by_group(&ctx, &sql).await?,
            expected(&all, p, |_| true),
            "p{p}"
        );
    }
    assert!(ACCUMULATORS.load(AtomicOrdering::Relaxed) > before);
    // The plan has a partial and a final stage, so `state` and `merge_batch` both run.
    let plan = ctx
        .sql("EXPLAIN SELECT percentile_nearest_rank(v, 90) FROM t")
        .await?
        .collect()
        .await?;
    let plan = datafusion::arrow::util::pretty::pretty_format_batches(&plan)?.to_string();
    assert!(
        plan.contains("mode=Partial") && plan.contains("mode=Final"),
        "{plan}"
    );
    Ok(())
}

#[tokio::test]
async fn edges_empty_all_null_one_row() -> Result<()> {
    let rows: Vec<Row> = vec![
        (0, None, None, None),
        (0, None, None, None),
        (1, Some(-2.5), Some(-7), Some(false)),
    ];
    let ctx = context(&rows, 1)?;
    let sql = "SELECT g, percentile_nearest_rank(v, 50), percentile_nearest_rank(i, 50), \
               percentile_nearest_rank(b, 50) FROM t GROUP BY g";
    let got = by_group(&ctx, sql).await?;
    assert_eq!(got.get(&0), Some(&(None, None, None)), "all-NULL group");
    assert_eq!(
        got.get(&1),
        Some(&(Some(-2.5), Some(-7), Some(0))),
        "one row"
    );
    // No rows at all: one NULL row without GROUP BY, no row with it.
    let sql = "SELECT 0::BIGINT, percentile_nearest_rank(v, 90), percentile_nearest_rank(i, 90), \
               percentile_nearest_rank(b, 90) FROM t WHERE g > 5";
    assert_eq!(
        by_group(&ctx, sql).await?.get(&0),
        Some(&(None, None, None))
    );
    let sql = "SELECT g, percentile_nearest_rank(v, 90), percentile_nearest_rank(i, 90), \
               percentile_nearest_rank(b, 90) FROM t WHERE g > 5 GROUP BY g";
    assert!(by_group(&ctx, sql).await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn skipped_partial_aggregation_matches_the_oracle() -> Result<()> {
    // Nearly one row per group, and thresholds that make the partial stage give up at once and
    // pass rows on through `convert_to_state`.
    let rows = rows(0x5c1b, 3000);
    let mut config = SessionConfig::new()
        .with_target_partitions(4)
        .with_batch_size(64);
    config = config
        .set_usize(
            "datafusion.execution.skip_partial_aggregation_probe_rows_threshold",
            10,
        )
        .set_str(
            "datafusion.execution.skip_partial_aggregation_probe_ratio_threshold",
            "0.0",
        );
    let ctx = context_with(&rows, 200, config)?;
    let before = CONVERTED.load(AtomicOrdering::Relaxed);
    for p in [1, 50, 90] {
        let sql = format!(
            "SELECT g, percentile_nearest_rank(v, {p}), percentile_nearest_rank(i, {p}) \
             FILTER (WHERE i <> 0), percentile_nearest_rank(b, {p}) FROM t GROUP BY g"
        );
        let want: BTreeMap<_, _> = expected(&rows, p, |_| true)
            .into_iter()
            .zip(expected(&rows, p, |r| r.2 != Some(0)))
            .map(|((g, (v, _, b)), (_, (_, i, _)))| (g, (v, i, b)))
            .collect();
        assert_eq!(by_group(&ctx, &sql).await?, want, "p{p}");
    }
    assert!(
        CONVERTED.load(AtomicOrdering::Relaxed) > before,
        "convert_to_state must run"
    );
    Ok(())
}

#[tokio::test]
async fn result_types_and_bad_p() -> Result<()> {
    let ctx = context(&rows(1, 5), 10)?;
    // One query per expression: a CAST does not show in a column's name, so they would clash.
    for (arg, want) in [
        ("i", DataType::Int64),
        ("v", DataType::Float64),
        ("b", DataType::Int64),
        ("CAST(i AS INT)", DataType::Int32),
        (
            "CAST(abs(i) % 60000 AS SMALLINT UNSIGNED)",
            DataType::UInt16,
        ),
        ("CAST(v AS REAL)", DataType::Float32),
        ("CAST(v AS DECIMAL(10, 2))", DataType::Float64),
    ] {
        let df = ctx
            .sql(&format!("SELECT percentile_nearest_rank({arg}, 50) FROM t"))
            .await?;
        let types: Vec<DataType> = df
            .schema()
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        assert_eq!(types, vec![want], "{arg}");
        df.collect().await?;
    }
    for bad in [
        "percentile_nearest_rank(v, 0)",
        "percentile_nearest_rank(v, 101)",
        "percentile_nearest_rank(v, -1)",
        "percentile_nearest_rank(v, 0.9)",
        "percentile_nearest_rank(v, i)",
        "percentile_nearest_rank(v, NULL)",
        "percentile_nearest_rank(v)",
        "percentile_nearest_rank('x', 50)",
        "percentile_nearest_rank(DISTINCT v, 50)",
    ] {
        let sql = format!("SELECT {bad} FROM t");
        let result = match ctx.sql(&sql).await {
            Ok(df) => df.collect().await.map(|_| ()),
            Err(e) => Err(e),
        };
        assert!(result.is_err(), "{bad} must fail");
    }
    Ok(())
}

#[test]
fn emit_first_keeps_and_renumbers_the_rest() -> Result<()> {
    let mut acc = NearestRankGroupsAccumulator::<Int64Type>::new(50, DataType::Int64);
    let values: ArrayRef = Arc::new(Int64Array::from(vec![
        Some(5),
        Some(1),
        None,
        Some(9),
        Some(3),
        Some(7),
    ]));
    acc.update_batch(&[values], &[0, 1, 1, 2, 0, 3], None, 5)?;
    let first = acc.evaluate(EmitTo::First(2))?;
    assert_eq!(
        first.as_primitive::<Int64Type>(),
        &Int64Array::from(vec![Some(3), Some(1)])
    );
    // Old groups 2, 3, 4 are now 0, 1, 2; group 2 (old 4) never saw a value.
    let more: ArrayRef = Arc::new(Int64Array::from(vec![10, 11]));
    acc.update_batch(&[more], &[0, 3], None, 4)?;
    let state = acc.state(EmitTo::First(1))?;
    let mut other = NearestRankGroupsAccumulator::<Int64Type>::new(50, DataType::Int64);
    other.merge_batch(&state, &[0], 1)?;
    assert_eq!(
        other.evaluate(EmitTo::All)?.as_primitive::<Int64Type>(),
        &Int64Array::from(vec![Some(9)])
    );
    let rest = acc.evaluate(EmitTo::All)?;
    assert_eq!(
        rest.as_primitive::<Int64Type>(),
        &Int64Array::from(vec![Some(7), None, Some(11)])
    );
    assert_eq!(acc.size(), size_of_val(&acc), "emptied after EmitTo::All");
    Ok(())
}

#[test]
fn convert_to_state_respects_nulls_and_filter() -> Result<()> {
    let acc = NearestRankGroupsAccumulator::<Float64Type>::new(100, DataType::Float64);
    let values: ArrayRef = Arc::new(Float64Array::from(vec![
        Some(1.0),
        None,
        Some(3.0),
        Some(4.0),
    ]));
    let filter = BooleanArray::from(vec![Some(true), Some(true), Some(false), None]);
    let state = acc.convert_to_state(&[values], Some(&filter))?;
    let mut merged = NearestRankGroupsAccumulator::<Float64Type>::new(100, DataType::Float64);
    merged.merge_batch(&state, &[0, 0, 1, 1], 2)?;
    let out = merged.evaluate(EmitTo::All)?;
    assert_eq!(
        out.as_primitive::<Float64Type>(),
        &Float64Array::from(vec![Some(1.0), None])
    );
    Ok(())
}

#[test]
fn size_counts_the_values() -> Result<()> {
    let mut acc = NearestRankGroupsAccumulator::<Float64Type>::new(90, DataType::Float64);
    let empty = acc.size();
    let values: ArrayRef = Arc::new(Float64Array::from_iter_values((0..1000).map(f64::from)));
    let groups: Vec<usize> = (0..1000).map(|i| i % 10).collect();
    acc.update_batch(std::slice::from_ref(&values), &groups, None, 10)?;
    assert!(acc.size() >= empty + 1000 * (8 + 4));
    let mut one = NearestRankAccumulator::<Float64Type>::new(90, DataType::Float64);
    let empty = one.size();
    one.update_batch(&[values])?;
    assert!(one.size() >= empty + 1000 * 8);
    assert_eq!(one.evaluate()?, ScalarValue::Float64(Some(899.0)));
    Ok(())
}

/// Feeds `values` to a one-group accumulator in batches of 10,000 and returns it.
fn one_group(values: &[i64], p: u8) -> Result<NearestRankAccumulator<Int64Type>> {
    let mut acc = NearestRankAccumulator::<Int64Type>::new(p, DataType::Int64);
    for chunk in values.chunks(10_000) {
        let array: ArrayRef = Arc::new(Int64Array::from(chunk.to_vec()));
        acc.update_batch(&[array])?;
    }
    Ok(acc)
}

#[test]
fn folding_few_distinct_values_stays_exact_and_small() -> Result<()> {
    // 1,000,000 values of 150 distinct word counts: folded into 150 runs.
    let mut rng = Rng(17);
    let values: Vec<i64> = (0..1_000_000).map(|_| rng.below(150) as i64).collect();
    for p in [1, 50, 90, 99, 100] {
        let mut acc = one_group(&values, p)?;
        assert!(
            acc.size() < 2 * FIRST_FOLD * size_of::<i64>(),
            "p{p}: {} bytes for 150 distinct values",
            acc.size()
        );
        let want = oracle(&values, p, i64::cmp);
        assert_eq!(acc.evaluate()?, ScalarValue::Int64(want), "p{p}");
    }
    Ok(())
}

#[test]
fn folding_stops_when_values_are_mostly_distinct() -> Result<()> {
    let mut rng = Rng(23);
    let values: Vec<i64> = (0..200_000).map(|_| rng.next() as i64 >> 8).collect();
    let mut acc = one_group(&values, 90)?;
    assert!(acc.fold_at.is_none(), "folding gave up");
    assert!(acc.runs.is_empty());
    assert_eq!(
        acc.evaluate()?,
        ScalarValue::Int64(oracle(&values, 90, i64::cmp))
    );
    Ok(())
}

#[test]
fn folded_and_raw_states_merge_exactly() -> Result<()> {
    // Partial states of every kind — folded runs, raw values, both — merged into a folding and a
    // raw final accumulator, against the oracle of all values together.
    let mut rng = Rng(29);
    let few: Vec<i64> = (0..150_000).map(|_| rng.below(40) as i64).collect();
    let many: Vec<i64> = (0..150_000).map(|_| rng.next() as i64 >> 20).collect();
    let small: Vec<i64> = vec![5, 5, 7];
    let mut all = Vec::new();
    let mut states = Vec::new();
    for part in [&few, &many, &small] {
        all.extend_from_slice(part);
        let mut acc = one_group(part, 75)?;
        let state: Vec<ArrayRef> = acc
            .state()?
            .into_iter()
            .map(|s| s.to_array())
            .collect::<Result<_>>()?;
        states.push(state);
    }
    let want = ScalarValue::Int64(oracle(&all, 75, i64::cmp));
    for start_raw in [false, true] {
        let mut fin = NearestRankAccumulator::<Int64Type>::new(75, DataType::Int64);
        if start_raw {
            fin.fold_at = None;
        }
        for state in &states {
            fin.merge_batch(state)?;
        }
        assert_eq!(fin.evaluate()?, want, "final accumulator raw={start_raw}");
        // A groups accumulator merges the same states.
        let mut groups = NearestRankGroupsAccumulator::<Int64Type>::new(75, DataType::Int64);
        for state in &states {
            groups.merge_batch(state, &[0], 1)?;
        }
        assert_eq!(
            groups.evaluate(EmitTo::All)?.as_primitive::<Int64Type>(),
            &Int64Array::from(vec![want.clone().try_into().ok() as Option<i64>])
        );
    }
    Ok(())
}

#[test]
fn a_folded_state_after_mostly_distinct_values_merges_exactly() -> Result<()> {
    // Found by the differential fuzzer (`events | agg p80:seq, avg:session.tool_messages` over a
    // join): a final accumulator holding a few distinct values merges a folded state; folding
    // its own values stops folding, and the incoming runs must join the values, not stand
    // beside them.
    let mut rng = Rng(31);
    let distinct: Vec<i64> = (0..500).map(|i| i * 1_000 + 7).collect();
    let few: Vec<i64> = (0..20_000).map(|_| rng.below(30) as i64 * 100).collect();
    let mut folded = one_group(&few, 80)?;
    let state: Vec<ArrayRef> = folded
        .state()?
        .into_iter()
        .map(|s| s.to_array())
        .collect::<Result<_>>()?;
    assert!(!state[1].is_null(0), "the partial state is folded runs");
    for p in [1, 45, 80, 99] {
        let mut fin = one_group(&distinct, p)?;
        fin.merge_batch(&state)?;
        assert!(fin.fold_at.is_none() || fin.values.is_empty());
        assert!(fin.fold_at.is_some() || fin.runs.is_empty());
        let all: Vec<i64> = distinct.iter().chain(&few).copied().collect();
        assert_eq!(
            fin.evaluate()?,
            ScalarValue::Int64(oracle(&all, p, i64::cmp)),
            "p{p}"
        );
    }
    Ok(())
}

/// Per group, the percentile of `rows` computed by two partial groups accumulators (half the
/// rows each) whose states one final accumulator merges; and whether the partial states were
/// counted (dense) rather than listed value by value.
fn two_stage(rows: &[(usize, i64)], groups: usize, p: u8) -> Result<(Vec<Option<i64>>, bool)> {
    let mut states = Vec::new();
    for half in rows.chunks(rows.len().div_ceil(2).max(1)) {
        let mut partial = NearestRankGroupsAccumulator::<Int64Type>::new(p, DataType::Int64);
        for batch in half.chunks(8192) {
            let values: ArrayRef =
                Arc::new(Int64Array::from_iter_values(batch.iter().map(|r| r.1)));
            let indices: Vec<usize> = batch.iter().map(|r| r.0).collect();
            partial.update_batch(&[values], &indices, None, groups)?;
        }
        states.push(partial.state(EmitTo::All)?);
    }
    let counted = states
        .iter()
        .all(|s| s.get(1).is_some_and(|c| c.null_count() == 0));
    let mut fin = NearestRankGroupsAccumulator::<Int64Type>::new(p, DataType::Int64);
    let indices: Vec<usize> = (0..groups).collect();
    for state in &states {
        fin.merge_batch(state, &indices, groups)?;
    }
    let out = fin.evaluate(EmitTo::All)?;
    Ok((out.as_primitive::<Int64Type>().iter().collect(), counted))
}

/// The oracle's answer per group.
fn per_group(rows: &[(usize, i64)], groups: usize, p: u8) -> Vec<Option<i64>> {
    let mut by_group = vec![Vec::new(); groups];
    for &(g, v) in rows {
        by_group[g].push(v);
    }
    by_group
        .iter()
        .map(|values| oracle(values, p, i64::cmp))
        .collect()
}

/// Groups, a source of values, and whether the partial states come out counted.
type Shape = (usize, Box<dyn FnMut() -> i64>, bool);

#[test]
fn dense_and_sparse_group_paths_match_the_oracle() -> Result<()> {
    let (mut narrow, mut two, mut wide) = (Rng(41), Rng(7), Rng(9));
    // (groups, values per row, whether the partial states are counted): a narrow range counts
    // densely, a wide one does not.
    let shapes: [Shape; 4] = [
        (4, Box::new(|| 0), true),
        (5, Box::new(move || (narrow.below(3000) as i64) - 500), true),
        (
            300,
            Box::new(move || two.below(2) as i64 * 1_000_000_000),
            false,
        ),
        (7, Box::new(move || (wide.next() >> 3) as i64), false),
    ];
    for (i, (groups, mut value, dense)) in shapes.into_iter().enumerate() {
        let mut pick = Rng(100 + i as u64);
        let rows: Vec<(usize, i64)> = (0..200_000)
            .map(|_| (pick.below(groups as u64) as usize, value()))
            .collect();
        for p in [1, 50, 90, 99, 100] {
            let (got, counted) = two_stage(&rows, groups, p)?;
            assert_eq!(got, per_group(&rows, groups, p), "shape {i} p{p}");
            assert_eq!(counted, dense, "shape {i}: counted partial states");
        }
    }
    // Wide values in many groups take the sparse path; every group still matches.
    let mut rng = Rng(43);
    let rows: Vec<(usize, i64)> = (0..100_000)
        .map(|_| (rng.below(1000) as usize, (rng.next() >> 1) as i64))
        .collect();
    let (got, counted) = two_stage(&rows, 1000, 90)?;
    assert!(!counted);
    assert_eq!(got, per_group(&rows, 1000, 90));
    Ok(())
}

#[test]
fn counted_states_of_a_wide_range_merge_without_expanding() -> Result<()> {
    // Counted states whose values span far more than the histogram allows: the final stage
    // selects over the runs themselves, and its own state stays counted.
    let list = |rows: Vec<Vec<i64>>| -> ArrayRef {
        Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(
            rows.into_iter().map(|r| Some(r.into_iter().map(Some))),
        ))
    };
    let counts = |rows: Vec<Vec<u64>>| -> ArrayRef {
        Arc::new(ListArray::from_iter_primitive::<UInt64Type, _, _>(
            rows.into_iter().map(|r| Some(r.into_iter().map(Some))),
        ))
    };
    let first = vec![
        list(vec![vec![-4_000_000_000_000, 5, 9_000_000_000], vec![7]]),
        counts(vec![vec![3, 1_000_000, 2], vec![4]]),
    ];
    let second = vec![
        list(vec![vec![5, 6], vec![7, 8_000_000_000_000]]),
        counts(vec![vec![10, 500_000], vec![1, 6]]),
    ];
    let expand = |pairs: &[(i64, u64)]| -> Vec<i64> {
        pairs
            .iter()
            .flat_map(|&(v, n)| std::iter::repeat_n(v, n as usize))
            .collect()
    };
    let group0 = expand(&[
        (-4_000_000_000_000, 3),
        (5, 1_000_010),
        (9_000_000_000, 2),
        (6, 500_000),
    ]);
    let group1 = expand(&[(7, 5), (8_000_000_000_000, 6)]);
    for p in [1, 50, 67, 99, 100] {
        let mut fin = NearestRankGroupsAccumulator::<Int64Type>::new(p, DataType::Int64);
        fin.merge_batch(&first, &[0, 1], 2)?;
        fin.merge_batch(&second, &[0, 1], 2)?;
        assert!(
            fin.dense_layout(2).is_none(),
            "the range is too wide to count densely"
        );
        let want = vec![oracle(&group0, p, i64::cmp), oracle(&group1, p, i64::cmp)];
        // Through a state: the runs come out merged and sorted, still counted.
        let state = fin.state(EmitTo::All)?;
        assert_eq!(state.get(1).map(|c| c.null_count()), Some(0));
        let values = state.first().and_then(|v| v.as_list_opt::<i32>());
        assert_eq!(
            values.map(|v| v.value(0).len()),
            Some(4),
            "equal values merged"
        );
        let mut again = NearestRankGroupsAccumulator::<Int64Type>::new(p, DataType::Int64);
        again.merge_batch(&state, &[0, 1], 2)?;
        let out = again.evaluate(EmitTo::All)?;
        let got: Vec<Option<i64>> = out.as_primitive::<Int64Type>().iter().collect();
        assert_eq!(got, want, "p{p}");
    }
    Ok(())
}
