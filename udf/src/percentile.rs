//! The exact nearest-rank percentile: for `p` in 1..=99 over `n` values, the value at rank
//! `ceil(p/100 · n)` of the ascending order. No interpolation, no sampling: the answer is always
//! one of the values. NULLs are not values (the caller leaves them out); no values, no answer.
//!
//! ```
//! use quarry_udf::nearest_rank;
//! let mut values = vec![15.0, 20.0, 35.0, 40.0, 50.0];
//! assert_eq!(nearest_rank(&mut values, 30), Some(20.0));
//! assert_eq!(nearest_rank(&mut values, 100), Some(50.0));
//! ```

/// The 0-based index of the nearest-rank `p`-th percentile among `n` sorted values, or `None`
/// when `n` is 0 or `p` is outside 1..=100.
pub fn nearest_rank_index(n: usize, p: u8) -> Option<usize> {
    if n == 0 || !(1..=100).contains(&p) {
        return None;
    }
    // ceil(p * n / 100) without floating point; at least rank 1.
    let rank = (usize::from(p) * n).div_ceil(100).max(1);
    Some(rank - 1)
}

/// The nearest-rank `p`-th percentile of `values` (reordered in place, partially). NaN sorts
/// after every number, as in DataFusion's total order for floats.
pub fn nearest_rank(values: &mut [f64], p: u8) -> Option<f64> {
    nearest_rank_by(values, p, f64::total_cmp)
}

/// The nearest-rank `p`-th percentile of `values` under the total order `cmp`, for any copyable
/// value type (integers stay exact). Selects in place with `select_nth_unstable_by`: O(n) on
/// average, no full sort; `values` is reordered but keeps every element, so it can be asked again.
///
/// ```
/// use quarry_udf::percentile::nearest_rank_by;
/// let mut values = vec![i64::MAX, -3, 7, 7];
/// assert_eq!(nearest_rank_by(&mut values, 50, i64::cmp), Some(7));
/// ```
pub fn nearest_rank_by<T: Copy>(
    values: &mut [T],
    p: u8,
    cmp: impl FnMut(&T, &T) -> std::cmp::Ordering,
) -> Option<T> {
    let index = nearest_rank_index(values.len(), p)?;
    let (_, value, _) = values.select_nth_unstable_by(index, cmp);
    Some(*value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, literally: sort, then take the smallest rank k with k/n >= p/100 (exact
    /// rationals: floating point misplaces ranks like 0.28 · 50).
    fn oracle(values: &[f64], p: u8) -> Option<f64> {
        if values.is_empty() {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let rank = (1..=n).find(|k| 100 * k >= usize::from(p) * n)?;
        sorted.get(rank - 1).copied()
    }

    #[test]
    fn matches_the_definition_on_many_shapes() {
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15_u64);
        for n in 0..60 {
            // Few distinct values, so ties are common.
            let values: Vec<f64> = (0..n).map(|_| (next() % 7) as f64).collect();
            for p in 1..=99 {
                let mut work = values.clone();
                assert_eq!(
                    nearest_rank(&mut work, p),
                    oracle(&values, p),
                    "n={n} p={p}"
                );
            }
        }
    }

    #[test]
    fn edges() {
        assert_eq!(nearest_rank(&mut [], 50), None);
        assert_eq!(nearest_rank(&mut [3.0], 1), Some(3.0));
        assert_eq!(nearest_rank(&mut [3.0], 99), Some(3.0));
        assert_eq!(nearest_rank_index(10, 0), None);
        assert_eq!(nearest_rank_index(10, 101), None);
        // p50 of 1..=4 is 2 (rank 2), not the interpolated 2.5.
        assert_eq!(nearest_rank(&mut [4.0, 1.0, 3.0, 2.0], 50), Some(2.0));
        assert!(nearest_rank(&mut [1.0, f64::NAN], 99).is_some_and(f64::is_nan));
    }
}
