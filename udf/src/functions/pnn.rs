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
//! Every value is kept until the end (there is no exact percentile in less), so memory is counted
//! in `size()` and every growth goes through `try_reserve`: running out is a
//! `ResourcesExhausted` error, which DataFusion turns into spilling or a clear failure.
//!
//! This module owns the function; it must not know the language or the archive.

use std::cmp::Ordering;
use std::fmt::Debug;
use std::mem::{size_of, size_of_val};
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{
    Array, ArrayRef, ArrowNativeTypeOp, ArrowPrimitiveType, AsArray, BooleanArray, ListArray,
    PrimitiveArray, PrimitiveBuilder, RecordBatch,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
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
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, Documentation, EmitTo, Expr,
    GroupsAccumulator, Signature, Volatility, aggregate_doc_sections, lit,
};
use datafusion::physical_expr::PhysicalExpr;

use crate::percentile::nearest_rank_by;

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
        Ok(vec![Arc::new(Field::new(
            format_state_name(args.name, "values"),
            DataType::List(Arc::new(item)),
            true,
        ))])
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

/// The accumulator for one group: every non-NULL value, in one buffer.
#[derive(Debug)]
struct NearestRankAccumulator<T: ArrowPrimitiveType> {
    p: u8,
    data_type: DataType,
    values: Vec<T::Native>,
}

impl<T: ArrowPrimitiveType> NearestRankAccumulator<T> {
    fn new(p: u8, data_type: DataType) -> Self {
        Self {
            p,
            data_type,
            values: Vec::new(),
        }
    }
}

impl<T: ArrowPrimitiveType + Debug> Accumulator for NearestRankAccumulator<T> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let array = input_values::<T>(values)?;
        try_reserve(&mut self.values, array.len() - array.null_count(), "values")?;
        extend_valid(&mut self.values, array, 0, array.len())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        for_each_state_list::<T>(states, |_, items, start, end| {
            try_reserve(&mut self.values, end - start, "values")?;
            extend_valid(&mut self.values, items, start, end)
        })
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let values = std::mem::take(&mut self.values);
        let offsets = vec![0, to_offset(values.len())?];
        let list = list_array::<T>(&self.data_type, offsets, values)?;
        Ok(vec![ScalarValue::List(Arc::new(list))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let value = select::<T>(&mut self.values, self.p);
        ScalarValue::new_primitive::<T>(value, &self.data_type)
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.values.capacity() * size_of::<T::Native>()
    }
}

// ---------------------------------------------------------------------------------------------
// Many groups.

/// The accumulator for many groups. Values are not kept in one `Vec` per group (a header and a
/// growth slack per group, a scattered allocation per group) but as two flat parallel buffers,
/// `(group, value)` in arrival order; `evaluate`/`state` bucket them by group with one counting
/// sort, then select within each group's slice.
#[derive(Debug)]
struct NearestRankGroupsAccumulator<T: ArrowPrimitiveType> {
    p: u8,
    data_type: DataType,
    /// Group index of each value (u32: 4 bytes instead of 8 per value).
    groups: Vec<u32>,
    /// The non-NULL values, parallel to `groups`.
    values: Vec<T::Native>,
    /// Number of groups seen so far (some may have no value).
    num_groups: usize,
}

/// Values bucketed by group: group `i` owns `values[offsets[i]..offsets[i + 1]]`.
struct Buckets<N> {
    offsets: Vec<usize>,
    values: Vec<N>,
}

impl<T: ArrowPrimitiveType> NearestRankGroupsAccumulator<T> {
    fn new(p: u8, data_type: DataType) -> Self {
        Self {
            p,
            data_type,
            groups: Vec::new(),
            values: Vec::new(),
            num_groups: 0,
        }
    }

    /// Records that group indices up to `total_num_groups - 1` exist.
    fn see_groups(&mut self, total_num_groups: usize) -> Result<()> {
        if total_num_groups > (u32::MAX as usize) + 1 {
            return Err(DataFusionError::ResourcesExhausted(format!(
                "{PERCENTILE_NEAREST_RANK}: more than 2^32 groups"
            )));
        }
        self.num_groups = self.num_groups.max(total_num_groups);
        Ok(())
    }

    /// Reserves room for `additional` more values.
    fn reserve(&mut self, additional: usize) -> Result<()> {
        try_reserve(&mut self.groups, additional, "group indices")?;
        try_reserve(&mut self.values, additional, "values")
    }

    /// Removes the first `n` groups (`emit_to`) and returns their values bucketed by group;
    /// the remaining groups shift down by `n`.
    fn take_buckets(&mut self, emit_to: EmitTo) -> Result<Buckets<T::Native>> {
        let n = match emit_to {
            EmitTo::All => self.num_groups,
            EmitTo::First(n) => n.min(self.num_groups),
        };
        // Counting sort: counts, then exclusive prefix sums, then scatter.
        let mut offsets = try_zeroed::<usize>(n + 1, "group offsets")?;
        for &g in &self.groups {
            let g = g as usize;
            if g < n {
                match offsets.get_mut(g + 1) {
                    Some(count) => *count += 1,
                    None => return internal_err!("{PERCENTILE_NEAREST_RANK}: group out of range"),
                }
            }
        }
        let mut running = 0;
        for offset in offsets.iter_mut() {
            running += *offset;
            *offset = running;
        }
        let mut bucketed = try_zeroed::<T::Native>(running, "values")?;
        let mut cursor = offsets.clone();
        for (&g, &v) in self.groups.iter().zip(self.values.iter()) {
            let g = g as usize;
            if g >= n {
                continue;
            }
            let slot = cursor.get_mut(g).and_then(|at| {
                let slot = *at;
                *at += 1;
                bucketed.get_mut(slot)
            });
            match slot {
                Some(slot) => *slot = v,
                None => return internal_err!("{PERCENTILE_NEAREST_RANK}: bucket overflow"),
            }
        }
        self.keep_after(n, emit_to);
        Ok(Buckets {
            offsets,
            values: bucketed,
        })
    }

    /// Drops the values of the first `n` groups and renumbers the rest.
    fn keep_after(&mut self, n: usize, emit_to: EmitTo) {
        if matches!(emit_to, EmitTo::All) {
            // Back to the state of a new accumulator, memory released.
            self.groups = Vec::new();
            self.values = Vec::new();
            self.num_groups = 0;
            return;
        }
        let shift = n as u32;
        let mut kept = 0;
        for i in 0..self.groups.len() {
            if let (Some(&g), Some(&v)) = (self.groups.get(i), self.values.get(i))
                && g >= shift
            {
                if let (Some(gk), Some(vk)) = (self.groups.get_mut(kept), self.values.get_mut(kept))
                {
                    *gk = g - shift;
                    *vk = v;
                }
                kept += 1;
            }
        }
        self.groups.truncate(kept);
        self.values.truncate(kept);
        self.num_groups -= n;
    }
}

impl<T: ArrowPrimitiveType + Debug> GroupsAccumulator for NearestRankGroupsAccumulator<T> {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        let array = input_values::<T>(values)?;
        if array.len() != group_indices.len() {
            return internal_err!(
                "{PERCENTILE_NEAREST_RANK}: values and group indices differ in length"
            );
        }
        self.see_groups(total_num_groups)?;
        self.reserve(array.len() - array.null_count())?;
        let data = array.values();
        match (array.nulls(), opt_filter) {
            (None, None) => {
                self.groups.extend(group_indices.iter().map(|&g| g as u32));
                self.values.extend_from_slice(data);
            }
            (nulls, filter) => {
                for (i, (&g, &v)) in group_indices.iter().zip(data.iter()).enumerate() {
                    let valid = nulls.is_none_or(|n| n.is_valid(i))
                        && filter.is_none_or(|f| f.is_valid(i) && f.value(i));
                    if valid {
                        self.groups.push(g as u32);
                        self.values.push(v);
                    }
                }
            }
        }
        Ok(())
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.see_groups(total_num_groups)?;
        if let Some(lists) = values.first().and_then(|v| v.as_list_opt::<i32>()) {
            if lists.len() != group_indices.len() {
                return internal_err!(
                    "{PERCENTILE_NEAREST_RANK}: states and group indices differ in length"
                );
            }
            let offsets = lists.value_offsets();
            let (first, last) = (offsets.first().copied(), offsets.last().copied());
            let total = usize::try_from(last.unwrap_or(0) - first.unwrap_or(0)).unwrap_or(0);
            self.reserve(total)?;
        }
        let groups = &mut self.groups;
        let vals = &mut self.values;
        for_each_state_list::<T>(values, |row, items, start, end| {
            let Some(&g) = group_indices.get(row) else {
                return internal_err!("{PERCENTILE_NEAREST_RANK}: state row without group");
            };
            let before = vals.len();
            extend_valid(vals, items, start, end)?;
            groups.resize(groups.len() + (vals.len() - before), g as u32);
            Ok(())
        })
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let mut buckets = self.take_buckets(emit_to)?;
        let groups = buckets.offsets.len().saturating_sub(1);
        let mut out =
            PrimitiveBuilder::<T>::with_capacity(groups).with_data_type(self.data_type.clone());
        for window in buckets.offsets.windows(2) {
            let (Some(&start), Some(&end)) = (window.first(), window.last()) else {
                return internal_err!("{PERCENTILE_NEAREST_RANK}: malformed buckets");
            };
            let Some(slice) = buckets.values.get_mut(start..end) else {
                return internal_err!("{PERCENTILE_NEAREST_RANK}: bucket out of range");
            };
            out.append_option(select::<T>(slice, self.p));
        }
        Ok(Arc::new(out.finish()))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let buckets = self.take_buckets(emit_to)?;
        let offsets = buckets
            .offsets
            .iter()
            .map(|&o| to_offset(o))
            .collect::<Result<Vec<i32>>>()?;
        let list = list_array::<T>(&self.data_type, offsets, buckets.values)?;
        Ok(vec![Arc::new(list)])
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        // Each row becomes its own group: a one-value list, or a NULL list when the value is
        // NULL or filtered out.
        #[cfg(test)]
        tests::CONVERTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let array = input_values::<T>(values)?;
        let items = PrimitiveArray::<T>::try_new(array.values().clone(), None)?
            .with_data_type(self.data_type.clone());
        let filter = opt_filter.map(|f| match f.nulls() {
            Some(nulls) => NullBuffer::new(f.values() & nulls.inner()),
            None => NullBuffer::new(f.values().clone()),
        });
        let nulls = NullBuffer::union(array.nulls(), filter.as_ref());
        to_offset(array.len())?;
        let offsets = OffsetBuffer::<i32>::from_lengths(std::iter::repeat_n(1, array.len()));
        let field = Arc::new(Field::new_list_field(self.data_type.clone(), true));
        let list = ListArray::try_new(field, offsets, Arc::new(items), nulls)?;
        Ok(vec![Arc::new(list)])
    }

    fn size(&self) -> usize {
        size_of_val(self)
            + self.groups.capacity() * size_of::<u32>()
            + self.values.capacity() * size_of::<T::Native>()
    }
}

#[cfg(test)]
mod tests;
