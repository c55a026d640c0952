//! `percentile_nearest_rank(value, p)`: the exact nearest-rank percentile (the language's `pNN`)
//! as a DataFusion `AggregateUDF`, with its `Accumulator` (one group: no `GROUP BY`, windows) and
//! its `GroupsAccumulator` (`GROUP BY`) side by side.
//!
//! Semantics (the kernel in [`crate::percentile`] decides them):
//! - `p` is an integer literal in 1..=100 (one UDAF for every `p`; the lowering writes
//!   `percentile_nearest_rank(word_count, 90)` for `p90:word_count`);
//! - the answer is the value at rank `ceil(p/100 · n)` of the ascending order of the `n` non-NULL
//!   values: always one of the values, never interpolated, never sampled;
//! - NULLs are skipped; a group with no non-NULL value gives NULL;
//! - the result keeps the input type, so integers stay exact (no trip through f64): Int8..Int64,
//!   UInt8..UInt64, Float32, Float64 as they are; Float16 widens to Float32; Boolean counts as 0/1
//!   (Int64); decimals become Float64 (the one lossy case); a NULL-typed input gives Float64 NULLs.
//!   Floats order totally (NaN after every number), as DataFusion's own sort does.
//!
//! Every value is kept until the end (there is no exact percentile in less) — but the one-group
//! accumulator folds repeated values into `(value, count)` runs, so a column of few distinct
//! values costs memory per distinct value, and its partial state carries the runs (`values` and
//! `counts` lists; a NULL `counts` list means once each). Memory is counted in `size()` and every
//! growth goes through `try_reserve`: running out is a `ResourcesExhausted` error, which
//! DataFusion turns into spilling or a clear failure.
//!
//! This module owns the function; it must not know the language or the archive.

use std::cmp::Ordering;
use std::fmt::Debug;
use std::mem::{size_of, size_of_val};
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{
    Array, ArrayRef, ArrowNativeTypeOp, ArrowPrimitiveType, AsArray, ListArray, PrimitiveArray,
    RecordBatch,
};
use datafusion::arrow::buffer::{OffsetBuffer, ScalarBuffer};
use datafusion::arrow::datatypes::{
    DataType, Field, FieldRef, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    Schema, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::common::{
    DataFusionError, Result, ScalarValue, internal_datafusion_err, internal_err, plan_err,
};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::{AggregateOrderSensitivity, format_state_name};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, Documentation, Expr,
    GroupsAccumulator, Signature, Volatility, aggregate_doc_sections, lit,
};
use datafusion::physical_expr::PhysicalExpr;

use self::groups::NearestRankGroupsAccumulator;
use crate::percentile::{nearest_rank_by, nearest_rank_index};

mod groups;

/// Calls `$make!(ArrowType)` for the Arrow type that carries `$data_type`, or returns an
/// `Internal` error from the enclosing function (coercion admits no other type).
macro_rules! dispatch_type {
    ($data_type:expr, $make:ident) => {
        match $data_type {
            DataType::Int8 => $make!(Int8Type),
            DataType::Int16 => $make!(Int16Type),
            DataType::Int32 => $make!(Int32Type),
            DataType::Int64 => $make!(Int64Type),
            DataType::UInt8 => $make!(UInt8Type),
            DataType::UInt16 => $make!(UInt16Type),
            DataType::UInt32 => $make!(UInt32Type),
            DataType::UInt64 => $make!(UInt64Type),
            DataType::Float32 => $make!(Float32Type),
            DataType::Float64 => $make!(Float64Type),
            other => {
                return internal_err!("{PERCENTILE_NEAREST_RANK}: no accumulator for type {other}");
            }
        }
    };
}

/// The SQL name of the nearest-rank percentile aggregate.
pub const PERCENTILE_NEAREST_RANK: &str = "percentile_nearest_rank";

/// `percentile_nearest_rank(value, p)` as an expression, for the lowering: `p` in 1..=100.
pub fn percentile_nearest_rank(value: Expr, p: u8) -> Expr {
    percentile_nearest_rank_udaf().call(vec![value, lit(i64::from(p))])
}

/// The shared `AggregateUDF` instance of [`PercentileNearestRank`].
pub fn percentile_nearest_rank_udaf() -> Arc<AggregateUDF> {
    static UDAF: LazyLock<Arc<AggregateUDF>> =
        LazyLock::new(|| Arc::new(AggregateUDF::from(PercentileNearestRank::new())));
    Arc::clone(&UDAF)
}

/// The exact nearest-rank percentile aggregate (see the module docs for its semantics).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PercentileNearestRank {
    signature: Signature,
}

impl Default for PercentileNearestRank {
    fn default() -> Self {
        Self::new()
    }
}

impl PercentileNearestRank {
    /// The aggregate; its argument types are checked and coerced by `coerce_types`.
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        aggregate_doc_sections::DOC_SECTION_STATISTICAL,
        "Returns the exact nearest-rank percentile of the non-NULL input values: the value at \
         rank ceil(p/100 * n) of their ascending order. Never interpolates and never samples; \
         NULL when the group has no non-NULL value. The result has the input's type (integers \
         stay exact; booleans count as 0/1; decimals become Float64).",
        "percentile_nearest_rank(expression, p)",
    )
    .with_sql_example(
        "```sql\n> SELECT percentile_nearest_rank(v, 50) FROM (VALUES (1), (2), (3), (4)) t(v);\n\
         +------------------------------------+\n\
         | percentile_nearest_rank(t.v,Int64(50)) |\n\
         +------------------------------------+\n\
         | 2                                  |\n\
         +------------------------------------+\n```",
    )
    .with_standard_argument("expression", Some("The numeric"))
    .with_argument(
        "p",
        "The percentile, an integer literal from 1 to 100 (90 for p90; 100 is the maximum).",
    )
    .with_related_udf("percentile_cont")
    .with_related_udf("median")
    .build()
});

impl AggregateUDFImpl for PercentileNearestRank {
    fn name(&self) -> &str {
        PERCENTILE_NEAREST_RANK
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [value, p] = arg_types else {
            return plan_err!(
                "{PERCENTILE_NEAREST_RANK} takes two arguments (value, p), got {}",
                arg_types.len()
            );
        };
        Ok(vec![coerce_value_type(value)?, coerce_p_type(p)?])
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(value) => coerce_value_type(value),
            None => plan_err!("{PERCENTILE_NEAREST_RANK} takes two arguments (value, p)"),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let item = Field::new_list_field(args.return_field.data_type().clone(), true);
        let count = Field::new_list_field(DataType::UInt64, true);
        Ok(vec![
            Arc::new(Field::new(
                format_state_name(args.name, "values"),
                DataType::List(Arc::new(item)),
                true,
            )),
            // How often each value occurred; a NULL list means once each.
            Arc::new(Field::new(
                format_state_name(args.name, "counts"),
                DataType::List(Arc::new(count)),
                true,
            )),
        ])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let p = percentile_of(&args)?;
        #[cfg(test)]
        tests::ACCUMULATORS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let data_type = args.return_field.data_type().clone();
        macro_rules! make {
            ($t:ty) => {
                Box::new(NearestRankAccumulator::<$t>::new(p, data_type)) as Box<dyn Accumulator>
            };
        }
        Ok(dispatch_type!(args.return_field.data_type(), make))
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        !args.is_distinct
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        let p = percentile_of(&args)?;
        #[cfg(test)]
        tests::GROUPS_ACCUMULATORS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let data_type = args.return_field.data_type().clone();
        macro_rules! make {
            ($t:ty) => {
                Box::new(NearestRankGroupsAccumulator::<$t>::new(p, data_type))
                    as Box<dyn GroupsAccumulator>
            };
        }
        Ok(dispatch_type!(args.return_field.data_type(), make))
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}

/// The type the value argument is cast to (also the result type).
fn coerce_value_type(value: &DataType) -> Result<DataType> {
    Ok(match value {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Float32
        | DataType::Float64 => value.clone(),
        DataType::Float16 => DataType::Float32,
        DataType::Boolean => DataType::Int64,
        DataType::Null
        | DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => DataType::Float64,
        DataType::Dictionary(_, inner) => coerce_value_type(inner)?,
        other => {
            return plan_err!(
                "{PERCENTILE_NEAREST_RANK} needs a numeric or boolean value, got {other}"
            );
        }
    })
}

/// The type the `p` argument is cast to: any integer becomes Int64.
fn coerce_p_type(p: &DataType) -> Result<DataType> {
    if p.is_integer() || p.is_null() {
        Ok(DataType::Int64)
    } else {
        plan_err!("{PERCENTILE_NEAREST_RANK}: p must be an integer literal from 1 to 100, got {p}")
    }
}

/// Reads `p` from the second argument, which must be a constant integer in 1..=100.
fn percentile_of(args: &AccumulatorArgs) -> Result<u8> {
    if args.is_distinct {
        return plan_err!("{PERCENTILE_NEAREST_RANK} does not support DISTINCT");
    }
    let Some(expr) = args.exprs.get(1) else {
        return plan_err!("{PERCENTILE_NEAREST_RANK} takes two arguments (value, p)");
    };
    let p = match constant_of(expr) {
        Some(ScalarValue::Int64(Some(p))) => p,
        _ => {
            return plan_err!(
                "{PERCENTILE_NEAREST_RANK}: p must be an integer literal from 1 to 100"
            );
        }
    };
    match u8::try_from(p) {
        Ok(p) if (1..=100).contains(&p) => Ok(p),
        _ => plan_err!("{PERCENTILE_NEAREST_RANK}: p must be from 1 to 100, got {p}"),
    }
}

/// The value of a constant expression (evaluated against an empty batch), or `None` when the
/// expression depends on a column.
fn constant_of(expr: &Arc<dyn PhysicalExpr>) -> Option<ScalarValue> {
    let batch = RecordBatch::new_empty(Arc::new(Schema::empty()));
    match expr.evaluate(&batch) {
        Ok(ColumnarValue::Scalar(value)) => Some(value),
        _ => None,
    }
}

/// A failed allocation as the error DataFusion's memory handling understands.
fn exhausted(
    what: &str,
    additional: usize,
    error: std::collections::TryReserveError,
) -> DataFusionError {
    DataFusionError::ResourcesExhausted(format!(
        "{PERCENTILE_NEAREST_RANK}: cannot reserve {additional} more {what}: {error}"
    ))
}

/// Reserves room for `additional` more elements in `vec`, as an error when memory runs out.
fn try_reserve<T>(vec: &mut Vec<T>, additional: usize, what: &str) -> Result<()> {
    vec.try_reserve(additional)
        .map_err(|e| exhausted(what, additional, e))
}

/// A zero-filled vector of `len` elements, as an error when memory runs out.
fn try_zeroed<T: Copy + Default>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut vec = Vec::new();
    try_reserve(&mut vec, len, what)?;
    vec.resize(len, T::default());
    Ok(vec)
}

/// The nearest-rank percentile of `values` under the Arrow total order of `T`.
fn select<T: ArrowPrimitiveType>(values: &mut [T::Native], p: u8) -> Option<T::Native> {
    nearest_rank_by(values, p, |a: &T::Native, b: &T::Native| -> Ordering {
        a.compare(*b)
    })
}

/// One row of the state: values `items[start..end]` and, when the values were folded, how often
/// each occurred (`None`: once each).
struct StateRow<'a, T: ArrowPrimitiveType> {
    row: usize,
    items: &'a PrimitiveArray<T>,
    start: usize,
    end: usize,
    counts: Option<&'a [u64]>,
}

impl<T: ArrowPrimitiveType> StateRow<'_, T> {
    /// Appends the row's non-NULL values to `out`, each as often as it occurred.
    fn extend_into(&self, out: &mut Vec<T::Native>) -> Result<()> {
        let Some(counts) = self.counts else {
            try_reserve(out, self.end - self.start, "values")?;
            return extend_valid(out, self.items, self.start, self.end);
        };
        let total: u64 = counts.iter().sum();
        try_reserve(out, usize::try_from(total).unwrap_or(usize::MAX), "values")?;
        for (i, &count) in (self.start..self.end).zip(counts) {
            if self.items.is_valid(i) {
                let v = self.items.value(i);
                out.extend(std::iter::repeat_n(v, count as usize));
            }
        }
        Ok(())
    }
}

/// Calls `sink` once per non-NULL row of the state (`values` lists and, if present, their
/// `counts` lists).
fn for_each_state_row<T: ArrowPrimitiveType>(
    states: &[ArrayRef],
    mut sink: impl FnMut(StateRow<'_, T>) -> Result<()>,
) -> Result<()> {
    let counts = match states.get(1) {
        None => None,
        Some(c) => Some(c.as_list_opt::<i32>().ok_or_else(|| {
            internal_datafusion_err!("{PERCENTILE_NEAREST_RANK}: counts are {}", c.data_type())
        })?),
    };
    let count_values = match counts {
        None => None,
        Some(c) => Some(c.values().as_primitive_opt::<UInt64Type>().ok_or_else(|| {
            internal_datafusion_err!("{PERCENTILE_NEAREST_RANK}: count items are not UInt64")
        })?),
    };
    for_each_state_list::<T>(states, |row, items, start, end| {
        let counts = match (counts, count_values) {
            (Some(c), Some(v)) if c.is_valid(row) => {
                let offsets = c.value_offsets();
                let (Some(&from), Some(&to)) = (offsets.get(row), offsets.get(row + 1)) else {
                    return internal_err!("{PERCENTILE_NEAREST_RANK}: malformed count offsets");
                };
                let range = usize::try_from(from).unwrap_or(0)..usize::try_from(to).unwrap_or(0);
                match v.values().get(range) {
                    Some(slice) if slice.len() == end - start => Some(slice),
                    _ => {
                        return internal_err!(
                            "{PERCENTILE_NEAREST_RANK}: counts do not match values"
                        );
                    }
                }
            }
            _ => None,
        };
        sink(StateRow {
            row,
            items,
            start,
            end,
            counts,
        })
    })
}

/// Appends the non-NULL values of the lists in `states` (the `List<T>` state of this aggregate)
/// to `sink`, calling it once per list row with `(row, values of that row)`.
fn for_each_state_list<T: ArrowPrimitiveType>(
    states: &[ArrayRef],
    mut sink: impl FnMut(usize, &PrimitiveArray<T>, usize, usize) -> Result<()>,
) -> Result<()> {
    let Some(state) = states.first() else {
        return internal_err!("{PERCENTILE_NEAREST_RANK}: merge without state");
    };
    let Some(lists) = state.as_list_opt::<i32>() else {
        return internal_err!(
            "{PERCENTILE_NEAREST_RANK}: state is {}, not a list",
            state.data_type()
        );
    };
    let Some(items) = lists.values().as_primitive_opt::<T>() else {
        return internal_err!(
            "{PERCENTILE_NEAREST_RANK}: state items are {}, not {}",
            lists.values().data_type(),
            T::DATA_TYPE
        );
    };
    for (row, window) in lists.value_offsets().windows(2).enumerate() {
        if lists.is_null(row) {
            continue;
        }
        let (Some(start), Some(end)) = (window.first(), window.last()) else {
            return internal_err!("{PERCENTILE_NEAREST_RANK}: malformed list offsets");
        };
        let (Ok(start), Ok(end)) = (usize::try_from(*start), usize::try_from(*end)) else {
            return internal_err!("{PERCENTILE_NEAREST_RANK}: negative list offsets");
        };
        if start > end || end > items.len() {
            return internal_err!("{PERCENTILE_NEAREST_RANK}: list offsets out of range");
        }
        sink(row, items, start, end)?;
    }
    Ok(())
}

/// The non-NULL values of `items[start..end]`, appended to `out`.
fn extend_valid<T: ArrowPrimitiveType>(
    out: &mut Vec<T::Native>,
    items: &PrimitiveArray<T>,
    start: usize,
    end: usize,
) -> Result<()> {
    let Some(slice) = items.values().get(start..end) else {
        return internal_err!("{PERCENTILE_NEAREST_RANK}: list range out of bounds");
    };
    match items.nulls() {
        None => out.extend_from_slice(slice),
        Some(nulls) => out.extend(
            slice
                .iter()
                .zip(start..end)
                .filter(|(_, i)| nulls.is_valid(*i))
                .map(|(v, _)| *v),
        ),
    }
    Ok(())
}

/// The first argument of an update as `PrimitiveArray<T>`.
fn input_values<T: ArrowPrimitiveType>(values: &[ArrayRef]) -> Result<&PrimitiveArray<T>> {
    let Some(array) = values.first() else {
        return internal_err!("{PERCENTILE_NEAREST_RANK}: update without values");
    };
    array.as_primitive_opt::<T>().ok_or_else(|| {
        internal_datafusion_err!(
            "{PERCENTILE_NEAREST_RANK}: input is {}, expected {}",
            array.data_type(),
            T::DATA_TYPE
        )
    })
}

/// A `List<T>` array with the given offsets over `items` (no NULL lists: an empty group is an
/// empty list).
fn list_array<T: ArrowPrimitiveType>(
    data_type: &DataType,
    offsets: Vec<i32>,
    items: Vec<T::Native>,
) -> Result<ListArray> {
    let items = PrimitiveArray::<T>::try_new(ScalarBuffer::from(items), None)?
        .with_data_type(data_type.clone());
    let field = Arc::new(Field::new_list_field(data_type.clone(), true));
    Ok(ListArray::try_new(
        field,
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Arc::new(items),
        None,
    )?)
}

/// A counts state of `len` NULL lists (every value counted once).
fn once_each(len: usize) -> ArrayRef {
    let field = Arc::new(Field::new_list_field(DataType::UInt64, true));
    Arc::new(ListArray::new_null(field, len))
}

/// A list offset as `i32`, or an error when a state list would exceed Arrow's `List` limit.
fn to_offset(n: usize) -> Result<i32> {
    i32::try_from(n).map_err(|_| {
        DataFusionError::ResourcesExhausted(format!(
            "{PERCENTILE_NEAREST_RANK}: {n} values exceed one partial-state list"
        ))
    })
}

// ---------------------------------------------------------------------------------------------
// One group.

/// Values gathered before the first fold.
const FIRST_FOLD: usize = 1 << 16;

/// The accumulator for one group. Values arrive in `values`; every so often they are sorted and
/// folded into `runs` (each distinct value once, with how often it occurred), so a column of few
/// distinct values — word counts, token counts, exit codes — takes memory for its distinct
/// values, not its rows, and ten million rows fit in a small pool. When folding does not pay
/// (mostly distinct values) the runs are unfolded and every value is kept as it came.
#[derive(Debug)]
struct NearestRankAccumulator<T: ArrowPrimitiveType> {
    p: u8,
    data_type: DataType,
    /// Values not folded yet, in arrival order.
    values: Vec<T::Native>,
    /// Distinct values in ascending total order, with their counts; always empty once folding
    /// has stopped (`fold_at` is `None`), so the answer is the values' or the runs'.
    runs: Vec<(T::Native, u64)>,
    /// Fold when `values` reaches this length; `None` once folding has stopped paying.
    fold_at: Option<usize>,
}

impl<T: ArrowPrimitiveType> NearestRankAccumulator<T> {
    fn new(p: u8, data_type: DataType) -> Self {
        Self {
            p,
            data_type,
            values: Vec::new(),
            runs: Vec::new(),
            fold_at: Some(FIRST_FOLD),
        }
    }

    fn fold_if_due(&mut self) -> Result<()> {
        match self.fold_at {
            Some(at) if self.values.len() >= at => {
                if self.runs.is_empty() && mostly_distinct::<T>(&self.values) {
                    // Decided on a sample before paying for a sort of every value.
                    self.fold_at = None;
                    return Ok(());
                }
                self.fold()
            }
            _ => Ok(()),
        }
    }

    /// Sorts `values` and merges them into `runs`; stops folding for good when the runs would
    /// take more than half the memory of the values they stand for.
    fn fold(&mut self) -> Result<()> {
        if self.values.is_empty() || self.fold_at.is_none() {
            return Ok(());
        }
        let mut values = std::mem::take(&mut self.values);
        values.sort_unstable_by(|a, b| a.compare(*b));
        let mut incoming: Vec<(T::Native, u64)> = Vec::new();
        let distinct = distinct_in_sorted::<T>(&values);
        try_reserve(&mut incoming, distinct, "value runs")?;
        for v in values {
            match incoming.last_mut() {
                Some((last, n)) if last.compare(v) == Ordering::Equal => *n += 1,
                _ => incoming.push((v, 1)),
            }
        }
        self.merge_runs(&incoming)?;
        let total: u64 = self.runs.iter().map(|(_, n)| n).sum();
        if (self.runs.len() as u64).saturating_mul(4) > total {
            // Mostly distinct values: runs cost more than they save.
            self.fold_at = None;
            let runs = std::mem::take(&mut self.runs);
            try_reserve(
                &mut self.values,
                usize::try_from(total).unwrap_or(usize::MAX),
                "values",
            )?;
            for (v, n) in runs {
                self.values.extend(std::iter::repeat_n(v, n as usize));
            }
        } else {
            self.fold_at = Some(FIRST_FOLD.max(self.runs.len() * 2));
        }
        Ok(())
    }

    /// Merges sorted, distinct `(value, count)` pairs into `runs`.
    fn merge_runs(&mut self, incoming: &[(T::Native, u64)]) -> Result<()> {
        if self.runs.is_empty() {
            try_reserve(&mut self.runs, incoming.len(), "value runs")?;
            self.runs.extend_from_slice(incoming);
            return Ok(());
        }
        let mut merged = Vec::new();
        try_reserve(&mut merged, self.runs.len() + incoming.len(), "value runs")?;
        let (mut a, mut b) = (self.runs.iter().peekable(), incoming.iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) => match x.0.compare(y.0) {
                    Ordering::Less => a.next().copied(),
                    Ordering::Greater => b.next().copied(),
                    Ordering::Equal => {
                        let (v, n) = **x;
                        let m = y.1;
                        a.next();
                        b.next();
                        Some((v, n + m))
                    }
                },
                (Some(_), None) => a.next().copied(),
                (None, Some(_)) => b.next().copied(),
                (None, None) => None,
            };
            match next {
                Some(run) => merged.push(run),
                None => break,
            }
        }
        self.runs = merged;
        Ok(())
    }
}

/// Whether an evenly strided sample of `values` is mostly distinct (more than a quarter of it),
/// in which case folding into runs would not pay. Only the strategy depends on the sample,
/// never the answer.
fn mostly_distinct<T: ArrowPrimitiveType>(values: &[T::Native]) -> bool {
    const SAMPLE: usize = 4096;
    let step = (values.len() / SAMPLE).max(1);
    let mut sample: Vec<T::Native> = values.iter().step_by(step).take(SAMPLE).copied().collect();
    sample.sort_unstable_by(|a, b| a.compare(*b));
    distinct_in_sorted::<T>(&sample) * 4 > sample.len()
}

/// The number of distinct values in a sorted slice (under the Arrow total order of `T`).
fn distinct_in_sorted<T: ArrowPrimitiveType>(sorted: &[T::Native]) -> usize {
    let changes = sorted
        .windows(2)
        .filter(|w| w[0].compare(w[1]) != Ordering::Equal)
        .count();
    if sorted.is_empty() { 0 } else { 1 + changes }
}

impl<T: ArrowPrimitiveType + Debug> Accumulator for NearestRankAccumulator<T> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let array = input_values::<T>(values)?;
        try_reserve(&mut self.values, array.len() - array.null_count(), "values")?;
        extend_valid(&mut self.values, array, 0, array.len())?;
        self.fold_if_due()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        for_each_state_row::<T>(states, |row| {
            if let (Some(counts), Some(_)) = (row.counts, self.fold_at) {
                // Folding the values that came before may find them mostly distinct and stop
                // folding for good (the runs then go back into the values).
                self.fold()?;
                if self.fold_at.is_some() {
                    // Folded runs stay folded (they arrive sorted and distinct).
                    let mut runs = Vec::new();
                    try_reserve(&mut runs, counts.len(), "value runs")?;
                    for (i, &n) in (row.start..row.end).zip(counts) {
                        if row.items.is_valid(i) && n > 0 {
                            runs.push((row.items.value(i), n));
                        }
                    }
                    self.merge_runs(&runs)?;
                    return self.fold_if_due();
                }
            }
            row.extend_into(&mut self.values)?;
            self.fold_if_due()
        })
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.fold()?;
        let field = Arc::new(Field::new_list_field(DataType::UInt64, true));
        let (values, counts) = if self.fold_at.is_some() {
            let runs = std::mem::take(&mut self.runs);
            let n = to_offset(runs.len())?;
            let (values, counts): (Vec<T::Native>, Vec<u64>) = runs.into_iter().unzip();
            let counts = ListArray::try_new(
                field,
                OffsetBuffer::new(ScalarBuffer::from(vec![0, n])),
                Arc::new(PrimitiveArray::<UInt64Type>::from(counts)),
                None,
            )?;
            (values, counts)
        } else {
            (
                std::mem::take(&mut self.values),
                ListArray::new_null(field, 1),
            )
        };
        let offsets = vec![0, to_offset(values.len())?];
        let list = list_array::<T>(&self.data_type, offsets, values)?;
        Ok(vec![
            ScalarValue::List(Arc::new(list)),
            ScalarValue::List(Arc::new(counts)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.fold()?;
        let value = if self.runs.is_empty() {
            select::<T>(&mut self.values, self.p)
        } else {
            let total: u64 = self.runs.iter().map(|(_, n)| n).sum();
            let index = nearest_rank_index(usize::try_from(total).unwrap_or(usize::MAX), self.p);
            index.and_then(|index| {
                let mut seen = 0u64;
                self.runs.iter().find_map(|&(v, n)| {
                    seen += n;
                    (seen > index as u64).then_some(v)
                })
            })
        };
        ScalarValue::new_primitive::<T>(value, &self.data_type)
    }

    fn size(&self) -> usize {
        size_of_val(self)
            + self.values.capacity() * size_of::<T::Native>()
            + self.runs.capacity() * size_of::<(T::Native, u64)>()
    }
}

#[cfg(test)]
mod tests;
