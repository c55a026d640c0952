//! The accumulator for many groups (`GROUP BY`).
//!
//! Values are not kept in one `Vec` per group (a header and a growth slack per group, a
//! scattered allocation per group) but flat: rows of `update_batch` as two parallel buffers,
//! `(group, value)` in arrival order; the lists `merge_batch` receives (already one group each)
//! as segments of one buffer, and counted lists (`(value, count)` runs) as segments of another.
//!
//! `evaluate` and `state` then take one of two paths, chosen by the values' range alone (never
//! changing the answer):
//! - **dense**: integers whose range times the number of groups is no larger than the number of
//!   values (word counts, token counts, exit codes, durations in ms) are counted into one
//!   histogram row per group; the percentile is a walk along the row, and a partial state is
//!   the row's non-empty bins as `(value, count)` runs, so partial states stay small and the
//!   final stage never sees ten million values;
//! - **sparse**: otherwise values are bucketed by group with one counting sort and selected
//!   within each group's slice (`select_nth_unstable`), counted runs expanded first.

use std::fmt::Debug;
use std::mem::{size_of, size_of_val};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, ArrowNativeTypeOp, ArrowPrimitiveType, AsArray, BooleanArray, ListArray,
    PrimitiveArray, PrimitiveBuilder,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use datafusion::arrow::datatypes::{DataType, Field, UInt64Type};
use datafusion::common::{DataFusionError, Result, internal_err};
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};

use super::{
    PERCENTILE_NEAREST_RANK, for_each_state_row, input_values, list_array, once_each, select,
    to_offset, try_reserve, try_zeroed,
};
use crate::percentile::nearest_rank_index;

/// Value types that may be counted into a dense histogram: the integers (as `i64` offsets).
/// Floats have no dense form and always take the sparse path.
pub(super) trait DenseValue: Copy {
    /// The smallest and largest of `values` (not empty) as `i64`, or `None` when the type has
    /// no dense form or a value does not fit.
    fn bounds(values: &[Self]) -> Option<(i64, i64)>;
    /// The value as `i64` (only called on values within known bounds).
    fn to_dense(self) -> i64;
    /// The value of `v` (only called with values from within known bounds).
    fn from_dense(v: i64) -> Self;
}

macro_rules! dense_integer {
    ($($t:ty),*) => {$(
        impl DenseValue for $t {
            fn bounds(values: &[Self]) -> Option<(i64, i64)> {
                let (mut lo, mut hi) = (<$t>::MAX, <$t>::MIN);
                for &v in values {
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
                Some((i64::try_from(lo).ok()?, i64::try_from(hi).ok()?))
            }
            fn to_dense(self) -> i64 {
                self as i64
            }
            fn from_dense(v: i64) -> Self {
                v as $t
            }
        }
    )*};
}
dense_integer!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! sparse_only {
    ($($t:ty),*) => {$(
        impl DenseValue for $t {
            fn bounds(_: &[Self]) -> Option<(i64, i64)> {
                None
            }
            fn to_dense(self) -> i64 {
                0
            }
            fn from_dense(_: i64) -> Self {
                0.0
            }
        }
    )*};
}
sparse_only!(f32, f64);

/// What is known of the range of every value held.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Bounds {
    /// No value yet.
    Empty,
    /// Every value lies in `lo..=hi`.
    Range(i64, i64),
    /// A value without a dense form: the sparse path only.
    Unbounded,
}

impl Bounds {
    fn widen(&mut self, seen: Option<(i64, i64)>) {
        *self = match (*self, seen) {
            (Bounds::Unbounded, _) | (_, None) => Bounds::Unbounded,
            (Bounds::Empty, Some((lo, hi))) => Bounds::Range(lo, hi),
            (Bounds::Range(a, b), Some((lo, hi))) => Bounds::Range(a.min(lo), b.max(hi)),
        };
    }
}

/// Histogram cells allowed beyond one per value held: small inputs may always count densely.
const DENSE_SLACK: usize = 1 << 16;

/// The accumulator for many groups (see the module docs).
#[derive(Debug)]
pub(super) struct NearestRankGroupsAccumulator<T: ArrowPrimitiveType> {
    p: u8,
    data_type: DataType,
    /// Group index of each value (u32: 4 bytes instead of 8 per value).
    groups: Vec<u32>,
    /// The non-NULL values, parallel to `groups`.
    values: Vec<T::Native>,
    /// Number of groups seen so far (some may have no value).
    num_groups: usize,
    /// Values merged from partial states listed once each, one segment per state row.
    merged: Vec<T::Native>,
    /// The segments of `merged`: `(group, start, len)`.
    segments: Vec<(u32, usize, usize)>,
    /// `(value, count)` runs merged from counted partial states, one segment per state row.
    runs: Vec<(T::Native, u64)>,
    /// The segments of `runs`: `(group, start, len)`.
    run_segments: Vec<(u32, usize, usize)>,
    /// The range of every value held (wider after `EmitTo::First`, never narrower).
    bounds: Bounds,
}

/// Values bucketed by group: group `i` owns `values[offsets[i]..offsets[i + 1]]`.
struct Buckets<N> {
    offsets: Vec<usize>,
    values: Vec<N>,
}

impl<N> Buckets<N> {
    /// Calls `f` with each group's values, in group order.
    fn for_each_group(mut self, mut f: impl FnMut(&mut [N])) -> Result<()> {
        for window in self.offsets.windows(2) {
            let (Some(&start), Some(&end)) = (window.first(), window.last()) else {
                return internal_err!("{PERCENTILE_NEAREST_RANK}: malformed buckets");
            };
            let Some(values) = self.values.get_mut(start..end) else {
                return internal_err!("{PERCENTILE_NEAREST_RANK}: bucket out of range");
            };
            f(values);
        }
        Ok(())
    }
}

/// Counts by group and value: group `i`'s count of value `lo + j` is `cells[i * width + j]`.
struct Histogram {
    lo: i64,
    width: usize,
    cells: Vec<u64>,
}

impl Histogram {
    /// The rows, one per group.
    fn rows(&self) -> impl Iterator<Item = &[u64]> {
        self.cells.chunks(self.width.max(1))
    }
}

impl<T> NearestRankGroupsAccumulator<T>
where
    T: ArrowPrimitiveType,
    T::Native: DenseValue,
{
    pub(super) fn new(p: u8, data_type: DataType) -> Self {
        Self {
            p,
            data_type,
            groups: Vec::new(),
            values: Vec::new(),
            num_groups: 0,
            merged: Vec::new(),
            segments: Vec::new(),
            runs: Vec::new(),
            run_segments: Vec::new(),
            bounds: Bounds::Empty,
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

    /// Widens the bounds by `values` (any may be held).
    fn see_values(&mut self, values: &[T::Native]) {
        if !values.is_empty() {
            self.bounds.widen(T::Native::bounds(values));
        }
    }

    /// Reserves room for `additional` more values.
    fn reserve(&mut self, additional: usize) -> Result<()> {
        try_reserve(&mut self.groups, additional, "group indices")?;
        try_reserve(&mut self.values, additional, "values")
    }

    /// How many of the groups `emit_to` takes.
    fn emitted(&self, emit_to: EmitTo) -> usize {
        match emit_to {
            EmitTo::All => self.num_groups,
            EmitTo::First(n) => n.min(self.num_groups),
        }
    }

    /// The histogram's lowest value and row width for the first `n` groups, when counting them
    /// densely costs no more cells than the values held.
    pub(super) fn dense_layout(&self, n: usize) -> Option<(i64, usize)> {
        let Bounds::Range(lo, hi) = self.bounds else {
            return None;
        };
        let width = usize::try_from(i128::from(hi) - i128::from(lo) + 1).ok()?;
        let held = self.values.len() + self.merged.len() + self.runs.len();
        let cells = width.checked_mul(n.max(1))?;
        (cells <= held.saturating_add(DENSE_SLACK)).then_some((lo, width))
    }

    /// Removes the first `n` groups (`emit_to`) and returns their values counted in a histogram
    /// whose rows start at `lo` and are `width` wide; the remaining groups shift down by `n`.
    fn take_histogram(
        &mut self,
        emit_to: EmitTo,
        n: usize,
        lo: i64,
        width: usize,
    ) -> Result<Histogram> {
        let mut cells = try_zeroed::<u64>(n * width, "histogram cells")?;
        let mut count = |g: u32, v: T::Native, by: u64| -> Result<()> {
            let g = g as usize;
            if g >= n {
                return Ok(());
            }
            let at = v
                .to_dense()
                .checked_sub(lo)
                .and_then(|j| usize::try_from(j).ok())
                .filter(|&j| j < width)
                .and_then(|j| cells.get_mut(g * width + j));
            match at {
                Some(cell) => {
                    *cell += by;
                    Ok(())
                }
                None => internal_err!("{PERCENTILE_NEAREST_RANK}: value outside its bounds"),
            }
        };
        for (&g, &v) in self.groups.iter().zip(self.values.iter()) {
            count(g, v, 1)?;
        }
        for &(g, start, len) in &self.segments {
            let Some(values) = self.merged.get(start..start + len) else {
                return internal_err!("{PERCENTILE_NEAREST_RANK}: segment out of range");
            };
            for &v in values {
                count(g, v, 1)?;
            }
        }
        for &(g, start, len) in &self.run_segments {
            let Some(runs) = self.runs.get(start..start + len) else {
                return internal_err!("{PERCENTILE_NEAREST_RANK}: run segment out of range");
            };
            for &(v, by) in runs {
                count(g, v, by)?;
            }
        }
        self.keep_after(n, emit_to)?;
        Ok(Histogram { lo, width, cells })
    }

    /// Removes the first `n` groups (`emit_to`) and returns their values bucketed by group,
    /// counted runs expanded; the remaining groups shift down by `n`.
    fn take_buckets(&mut self, emit_to: EmitTo, n: usize) -> Result<Buckets<T::Native>> {
        // Counting sort: counts, then exclusive prefix sums, then scatter.
        let mut offsets = try_zeroed::<usize>(n + 1, "group offsets")?;
        let mut add = |g: u32, by: usize| -> Result<()> {
            let g = g as usize;
            if g >= n {
                return Ok(());
            }
            match offsets.get_mut(g + 1) {
                Some(count) => {
                    *count += by;
                    Ok(())
                }
                None => internal_err!("{PERCENTILE_NEAREST_RANK}: group out of range"),
            }
        };
        for &g in &self.groups {
            add(g, 1)?;
        }
        for &(g, _, len) in &self.segments {
            add(g, len)?;
        }
        for &(g, start, len) in &self.run_segments {
            let Some(runs) = self.runs.get(start..start + len) else {
                return internal_err!("{PERCENTILE_NEAREST_RANK}: run segment out of range");
            };
            let total: u64 = runs.iter().map(|(_, by)| by).sum();
            add(g, usize::try_from(total).unwrap_or(usize::MAX))?;
        }
        let running = prefix_sums(&mut offsets);
        let mut bucketed = try_zeroed::<T::Native>(running, "values")?;
        let mut cursor = offsets.clone();
        let mut place = |g: u32, v: T::Native, times: usize| -> Result<()> {
            let g = g as usize;
            if g >= n {
                return Ok(());
            }
            let target = cursor.get_mut(g).and_then(|at| {
                let from = *at;
                *at += times;
                bucketed.get_mut(from..from + times)
            });
            match target {
                Some(target) => {
                    target.fill(v);
                    Ok(())
                }
                None => internal_err!("{PERCENTILE_NEAREST_RANK}: bucket overflow"),
            }
        };
        for (&g, &v) in self.groups.iter().zip(self.values.iter()) {
            place(g, v, 1)?;
        }
        for &(g, start, len) in &self.run_segments {
            for &(v, by) in self.runs.get(start..start + len).unwrap_or_default() {
                place(g, v, usize::try_from(by).unwrap_or(usize::MAX))?;
            }
        }
        scatter_segments(&self.merged, &self.segments, n, &mut cursor, &mut bucketed)?;
        self.keep_after(n, emit_to)?;
        Ok(Buckets {
            offsets,
            values: bucketed,
        })
    }

    /// Whether every value held is in counted runs (a final stage merging dense partial states).
    fn only_runs(&self) -> bool {
        self.values.is_empty() && self.merged.is_empty()
    }

    /// Removes the first `n` groups (`emit_to`) and returns their runs bucketed by group, each
    /// group's runs sorted by value and equal values merged; the remaining groups shift down.
    fn take_runs(&mut self, emit_to: EmitTo, n: usize) -> Result<Buckets<(T::Native, u64)>> {
        let mut offsets = try_zeroed::<usize>(n + 1, "group offsets")?;
        for &(g, _, len) in &self.run_segments {
            if let Some(count) = offsets.get_mut(g as usize + 1).filter(|_| (g as usize) < n) {
                *count += len;
            }
        }
        let running = prefix_sums(&mut offsets);
        let mut bucketed = try_zeroed::<(T::Native, u64)>(running, "value runs")?;
        let mut cursor = offsets.clone();
        scatter_segments(
            &self.runs,
            &self.run_segments,
            n,
            &mut cursor,
            &mut bucketed,
        )?;
        self.keep_after(n, emit_to)?;
        // Sort each group's runs and merge equal values, compacting in place.
        let mut compact = 0usize;
        let mut new_offsets = Vec::new();
        try_reserve(&mut new_offsets, n + 1, "group offsets")?;
        new_offsets.push(0);
        for window in offsets.windows(2) {
            let (Some(&start), Some(&end)) = (window.first(), window.last()) else {
                return internal_err!("{PERCENTILE_NEAREST_RANK}: malformed buckets");
            };
            let Some(group) = bucketed.get_mut(start..end) else {
                return internal_err!("{PERCENTILE_NEAREST_RANK}: bucket out of range");
            };
            group.sort_unstable_by(|a, b| a.0.compare(b.0));
            for i in start..end {
                let Some(&(v, by)) = bucketed.get(i) else {
                    return internal_err!("{PERCENTILE_NEAREST_RANK}: bucket out of range");
                };
                let group_start = new_offsets.last().copied().unwrap_or(0);
                match bucketed.get_mut(compact.wrapping_sub(1)) {
                    Some(last) if compact > group_start && last.0.compare(v).is_eq() => {
                        last.1 += by;
                    }
                    _ => {
                        if let Some(slot) = bucketed.get_mut(compact) {
                            *slot = (v, by);
                        }
                        compact += 1;
                    }
                }
            }
            new_offsets.push(compact);
        }
        bucketed.truncate(compact);
        Ok(Buckets {
            offsets: new_offsets,
            values: bucketed,
        })
    }

    /// Drops the values of the first `n` groups and renumbers the rest.
    fn keep_after(&mut self, n: usize, emit_to: EmitTo) -> Result<()> {
        if matches!(emit_to, EmitTo::All) {
            // Back to the state of a new accumulator, memory released.
            self.groups = Vec::new();
            self.values = Vec::new();
            self.num_groups = 0;
            self.merged = Vec::new();
            self.segments = Vec::new();
            self.runs = Vec::new();
            self.run_segments = Vec::new();
            self.bounds = Bounds::Empty;
            return Ok(());
        }
        let shift = n as u32;
        (self.merged, self.segments) = keep_segments(&self.merged, &self.segments, shift)?;
        (self.runs, self.run_segments) = keep_segments(&self.runs, &self.run_segments, shift)?;
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
        Ok(())
    }
}

/// Turns per-group counts (shifted by one: `counts[g + 1]`) into the groups' start offsets, in
/// place; returns the total.
fn prefix_sums(offsets: &mut [usize]) -> usize {
    let mut running = 0usize;
    for offset in offsets.iter_mut() {
        running = running.saturating_add(*offset);
        *offset = running;
    }
    running
}

/// Copies each segment `(group, start, len)` of `source` whose group is below `n` to its
/// group's next place in `into` (`cursor[group]`, which advances).
fn scatter_segments<V: Copy>(
    source: &[V],
    segments: &[(u32, usize, usize)],
    n: usize,
    cursor: &mut [usize],
    into: &mut [V],
) -> Result<()> {
    for &(g, start, len) in segments {
        let g = g as usize;
        if g >= n {
            continue;
        }
        let target = cursor.get_mut(g).and_then(|at| {
            let from = *at;
            *at += len;
            into.get_mut(from..from + len)
        });
        match (target, source.get(start..start + len)) {
            (Some(target), Some(source)) => target.copy_from_slice(source),
            _ => return internal_err!("{PERCENTILE_NEAREST_RANK}: segment out of range"),
        }
    }
    Ok(())
}

/// The segments of groups `shift..` moved to a compacted buffer, renumbered from 0.
#[allow(clippy::type_complexity)]
fn keep_segments<V: Copy>(
    buffer: &[V],
    segments: &[(u32, usize, usize)],
    shift: u32,
) -> Result<(Vec<V>, Vec<(u32, usize, usize)>)> {
    let kept: usize = segments
        .iter()
        .filter(|(g, _, _)| *g >= shift)
        .map(|(_, _, len)| len)
        .sum();
    let mut out = Vec::new();
    try_reserve(&mut out, kept, "values")?;
    let mut kept_segments = Vec::new();
    for &(g, start, len) in segments {
        if g < shift {
            continue;
        }
        let Some(source) = buffer.get(start..start + len) else {
            return internal_err!("{PERCENTILE_NEAREST_RANK}: segment out of range");
        };
        kept_segments.push((g - shift, out.len(), len));
        out.extend_from_slice(source);
    }
    Ok((out, kept_segments))
}

impl<T> GroupsAccumulator for NearestRankGroupsAccumulator<T>
where
    T: ArrowPrimitiveType + Debug,
    T::Native: DenseValue,
{
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
        // The bounds of the whole buffer (NULL slots included) hold those of the values kept.
        self.see_values(data);
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
            // Room for the listed values (some may be counted runs instead: a small excess).
            let offsets = lists.value_offsets();
            let (first, last) = (offsets.first().copied(), offsets.last().copied());
            let total = usize::try_from(last.unwrap_or(0) - first.unwrap_or(0)).unwrap_or(0);
            try_reserve(&mut self.merged, total, "values")?;
            try_reserve(&mut self.segments, lists.len(), "segments")?;
        }
        let mut bounds = self.bounds;
        let (merged, segments) = (&mut self.merged, &mut self.segments);
        let (runs, run_segments) = (&mut self.runs, &mut self.run_segments);
        for_each_state_row::<T>(values, |row| {
            let Some(&g) = group_indices.get(row.row) else {
                return internal_err!("{PERCENTILE_NEAREST_RANK}: state row without group");
            };
            if let Some(counts) = row.counts {
                // Counted runs stay counted: a dense partial state is its histogram's bins.
                let start = runs.len();
                try_reserve(runs, counts.len(), "value runs")?;
                for (i, &by) in (row.start..row.end).zip(counts) {
                    if row.items.is_valid(i) && by > 0 {
                        let v = row.items.value(i);
                        bounds.widen(T::Native::bounds(&[v]));
                        runs.push((v, by));
                    }
                }
                if runs.len() > start {
                    try_reserve(run_segments, 1, "segments")?;
                    run_segments.push((g as u32, start, runs.len() - start));
                }
                return Ok(());
            }
            let start = merged.len();
            row.extend_into(merged)?;
            if merged.len() > start {
                if let Some(added) = merged.get(start..) {
                    bounds.widen(T::Native::bounds(added));
                }
                try_reserve(segments, 1, "segments")?;
                segments.push((g as u32, start, merged.len() - start));
            }
            Ok(())
        })?;
        self.bounds = bounds;
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let n = self.emitted(emit_to);
        let mut out =
            PrimitiveBuilder::<T>::with_capacity(n).with_data_type(self.data_type.clone());
        if let Some((lo, width)) = self.dense_layout(n) {
            let histogram = self.take_histogram(emit_to, n, lo, width)?;
            for row in histogram.rows().take(n) {
                out.append_option(histogram_rank::<T>(row, histogram.lo, self.p));
            }
            return Ok(Arc::new(out.finish()));
        }
        if self.only_runs() {
            let p = self.p;
            self.take_runs(emit_to, n)?
                .for_each_group(|runs| out.append_option(runs_rank::<T>(runs, p)))?;
            return Ok(Arc::new(out.finish()));
        }
        let p = self.p;
        self.take_buckets(emit_to, n)?
            .for_each_group(|values| out.append_option(select::<T>(values, p)))?;
        Ok(Arc::new(out.finish()))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let n = self.emitted(emit_to);
        if let Some((lo, width)) = self.dense_layout(n) {
            let histogram = self.take_histogram(emit_to, n, lo, width)?;
            return histogram_state::<T>(&histogram, n, &self.data_type);
        }
        if self.only_runs() {
            let buckets = self.take_runs(emit_to, n)?;
            let offsets = buckets
                .offsets
                .iter()
                .map(|&o| to_offset(o))
                .collect::<Result<Vec<i32>>>()?;
            let (values, counts): (Vec<T::Native>, Vec<u64>) = buckets.values.into_iter().unzip();
            return counted_state::<T>(&self.data_type, offsets, values, counts);
        }
        let buckets = self.take_buckets(emit_to, n)?;
        let offsets = buckets
            .offsets
            .iter()
            .map(|&o| to_offset(o))
            .collect::<Result<Vec<i32>>>()?;
        let groups = offsets.len().saturating_sub(1);
        let list = list_array::<T>(&self.data_type, offsets, buckets.values)?;
        Ok(vec![Arc::new(list), once_each(groups)])
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        // Each row becomes its own group: a one-value list, or a NULL list when the value is
        // NULL or filtered out.
        #[cfg(test)]
        super::tests::CONVERTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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
        Ok(vec![Arc::new(list), once_each(array.len())])
    }

    fn size(&self) -> usize {
        size_of_val(self)
            + self.groups.capacity() * size_of::<u32>()
            + self.values.capacity() * size_of::<T::Native>()
            + self.merged.capacity() * size_of::<T::Native>()
            + self.segments.capacity() * size_of::<(u32, usize, usize)>()
            + self.runs.capacity() * size_of::<(T::Native, u64)>()
            + self.run_segments.capacity() * size_of::<(u32, usize, usize)>()
    }
}

/// The nearest-rank percentile of one histogram row whose first bin is value `lo`.
fn histogram_rank<T>(row: &[u64], lo: i64, p: u8) -> Option<T::Native>
where
    T: ArrowPrimitiveType,
    T::Native: DenseValue,
{
    let total: u64 = row.iter().sum();
    let index = nearest_rank_index(usize::try_from(total).ok()?, p)? as u64;
    let mut seen = 0u64;
    row.iter().enumerate().find_map(|(j, &count)| {
        seen += count;
        (seen > index).then(|| T::Native::from_dense(lo + j as i64))
    })
}

/// The partial state of the first `n` histogram rows: per group its non-empty bins as a values
/// list and a parallel counts list.
fn histogram_state<T>(
    histogram: &Histogram,
    n: usize,
    data_type: &DataType,
) -> Result<Vec<ArrayRef>>
where
    T: ArrowPrimitiveType,
    T::Native: DenseValue,
{
    let bins = histogram.cells.iter().filter(|&&c| c > 0).count();
    let mut values = Vec::new();
    try_reserve(&mut values, bins, "values")?;
    let mut counts = Vec::new();
    try_reserve(&mut counts, bins, "counts")?;
    let mut offsets = Vec::new();
    try_reserve(&mut offsets, n + 1, "group offsets")?;
    offsets.push(0);
    for row in histogram.rows().take(n) {
        for (j, &count) in row.iter().enumerate() {
            if count > 0 {
                values.push(T::Native::from_dense(histogram.lo + j as i64));
                counts.push(count);
            }
        }
        offsets.push(to_offset(values.len())?);
    }
    // Groups beyond the histogram's rows (none held a value) are empty lists.
    while offsets.len() < n + 1 {
        offsets.push(to_offset(values.len())?);
    }
    counted_state::<T>(data_type, offsets, values, counts)
}

/// A counted partial state: per group a list of values and a parallel list of their counts.
fn counted_state<T: ArrowPrimitiveType>(
    data_type: &DataType,
    offsets: Vec<i32>,
    values: Vec<T::Native>,
    counts: Vec<u64>,
) -> Result<Vec<ArrayRef>> {
    let field = Arc::new(Field::new_list_field(DataType::UInt64, true));
    let count_list = ListArray::try_new(
        field,
        OffsetBuffer::new(ScalarBuffer::from(offsets.clone())),
        Arc::new(PrimitiveArray::<UInt64Type>::from(counts)),
        None,
    )?;
    let list = list_array::<T>(data_type, offsets, values)?;
    Ok(vec![Arc::new(list), Arc::new(count_list)])
}

/// The nearest-rank percentile of one group's runs, sorted by value.
fn runs_rank<T: ArrowPrimitiveType>(runs: &[(T::Native, u64)], p: u8) -> Option<T::Native> {
    let total: u64 = runs.iter().map(|(_, by)| by).sum();
    let index = nearest_rank_index(usize::try_from(total).ok()?, p)? as u64;
    let mut seen = 0u64;
    runs.iter().find_map(|&(v, by)| {
        seen += by;
        (seen > index).then_some(v)
    })
}
