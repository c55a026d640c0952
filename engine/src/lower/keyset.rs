//! Keyset paging of a unit query's rows: a total order (the query's sort keys, then the unit's
//! primary key) and the rows strictly after the last row of the previous page.
//!
//! The plan carries the order's values as hidden columns (`__sk_<i>` for the sort keys,
//! `__pk_<j>` for the key), which the answer's stream strips from what it returns and keeps
//! from the last row it passed on: they are the next page's anchor. An anchor's values travel
//! as text (arrow's cast to and from `Utf8`, exact for integers, times and strings, and
//! shortest-round-trip for floats).

use datafusion::arrow::datatypes::DataType;
use datafusion::common::DFSchemaRef;
use datafusion::logical_expr::{Expr, LogicalPlanBuilder, SortExpr, cast, col, ident, lit};

use super::LowerError;

/// The prefix of a hidden sort-key column.
pub const SORT_KEY: &str = "__sk_";
/// The prefix of a hidden primary-key column.
pub const PRIMARY_KEY: &str = "__pk_";

/// Whether `name` is a hidden order column (stripped from answers).
pub fn hidden(name: &str) -> bool {
    name.starts_with(SORT_KEY) || name.starts_with(PRIMARY_KEY)
}

/// A keyset page asked of the lowering.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keyset {
    /// The previous page's last row: the values of its order columns, sort keys then primary
    /// key (`None`: the first page).
    pub after: Option<Vec<Option<String>>>,
    /// Rows the earlier pages returned (the query's own `limit` counts them).
    pub returned: u64,
}

/// The scan's columns plus the unit's primary key copied as `__pk_<j>` (carried through every
/// stage, `select` included).
pub fn with_primary_key(
    builder: LogicalPlanBuilder,
    key: &[&str],
) -> datafusion::common::Result<LogicalPlanBuilder> {
    let mut exprs = every_column(builder.schema());
    for (j, column) in key.iter().enumerate() {
        exprs.push(col(*column).alias(format!("{PRIMARY_KEY}{j}")));
    }
    builder.project(exprs)
}

/// The hidden columns of `schema`, to carry through a projection.
pub fn hidden_columns(schema: &DFSchemaRef) -> Vec<Expr> {
    every_column(schema)
        .into_iter()
        .filter(|e| matches!(e, Expr::Column(c) if hidden(&c.name)))
        .collect()
}

/// Orders `builder` totally: `sort` (the query's order, maybe empty) then the primary key,
/// with the sort keys copied into `__sk_<i>` columns, keeping only the rows after
/// `keyset.after`.
pub fn order(
    builder: LogicalPlanBuilder,
    sort: &[SortExpr],
    keyset: &Keyset,
) -> Result<LogicalPlanBuilder, LowerError> {
    // The sort keys replace any of an earlier sort stage.
    let mut exprs: Vec<Expr> = every_column(builder.schema())
        .into_iter()
        .filter(|e| !matches!(e, Expr::Column(c) if c.name.starts_with(SORT_KEY)))
        .collect();
    for (i, s) in sort.iter().enumerate() {
        exprs.push(s.expr.clone().alias(format!("{SORT_KEY}{i}")));
    }
    let builder = builder.project(exprs)?;
    let schema = builder.schema().clone();
    let mut keys: Vec<SortExpr> = sort
        .iter()
        .enumerate()
        .map(|(i, s)| ident(format!("{SORT_KEY}{i}")).sort(s.asc, s.nulls_first))
        .collect();
    keys.extend(
        schema
            .fields()
            .iter()
            .filter(|f| f.name().starts_with(PRIMARY_KEY))
            .map(|f| ident(f.name().clone()).sort(true, false)),
    );
    let builder = match &keyset.after {
        Some(values) => {
            let typed = keys
                .iter()
                .map(|k| {
                    let Expr::Column(c) = &k.expr else {
                        return Ok(DataType::Utf8);
                    };
                    Ok(schema
                        .field_with_unqualified_name(&c.name)?
                        .data_type()
                        .clone())
                })
                .collect::<datafusion::common::Result<Vec<_>>>()?;
            check_anchor(values, &typed)?;
            builder.filter(after(&keys, &typed, values))?
        }
        None => builder,
    };
    Ok(builder.sort(keys)?)
}

/// Whether a cursor's anchor fits an order of columns of `types`: one value each, each
/// readable as its column's type.
fn check_anchor(values: &[Option<String>], types: &[DataType]) -> Result<(), LowerError> {
    let misfit = || {
        LowerError::Cursor(
            "the cursor does not fit this query's order: pass `next_cursor` back with the query it came from".into(),
        )
    };
    if values.len() != types.len() {
        return Err(misfit());
    }
    for (value, ty) in values.iter().zip(types) {
        if let Some(value) = value {
            let text = datafusion::arrow::array::StringArray::from(vec![value.as_str()]);
            let options = datafusion::arrow::compute::CastOptions {
                safe: false,
                ..Default::default()
            };
            datafusion::arrow::compute::cast_with_options(&text, ty, &options)
                .map_err(|_| misfit())?;
        }
    }
    Ok(())
}

/// The rows strictly after `values` in the order of `keys` (each of type `types[i]`).
fn after(keys: &[SortExpr], types: &[DataType], values: &[Option<String>]) -> Expr {
    // (k0 after v0) OR (k0 = v0 AND k1 after v1) OR ...
    let mut any: Option<Expr> = None;
    let mut equal_so_far: Option<Expr> = None;
    for ((key, ty), value) in keys.iter().zip(types).zip(values) {
        let column = key.expr.clone();
        let anchor = value.as_ref().map(|v| cast(lit(v.clone()), ty.clone()));
        let beyond = match &anchor {
            // After a NULL come the values only when NULLs sort first.
            None if key.nulls_first => column.clone().is_not_null(),
            None => lit(false),
            Some(v) => {
                let past = if key.asc {
                    column.clone().gt(v.clone())
                } else {
                    column.clone().lt(v.clone())
                };
                if key.nulls_first {
                    past
                } else {
                    past.or(column.clone().is_null())
                }
            }
        };
        let step = match &equal_so_far {
            Some(e) => e.clone().and(beyond),
            None => beyond,
        };
        any = Some(match any {
            Some(a) => a.or(step),
            None => step,
        });
        let same = match anchor {
            Some(v) => column.eq(v),
            None => column.is_null(),
        };
        equal_so_far = Some(match equal_so_far {
            Some(e) => e.and(same),
            None => same,
        });
    }
    any.unwrap_or(lit(false))
}

/// Every column of `schema`, by name.
fn every_column(schema: &DFSchemaRef) -> Vec<Expr> {
    schema.columns().into_iter().map(Expr::Column).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn after_an_anchor_means_beyond_it_on_the_first_key_that_differs() {
        let keys = [ident("a").sort(false, false), ident("b").sort(true, false)];
        let types = [DataType::Int64, DataType::Utf8];
        let text = after(&keys, &types, &[Some("5".into()), Some("x".into())]).to_string();
        // a descending with NULLs last: a < 5 or a is null; then a = 5 and b > 'x' (or null).
        assert!(text.contains("a < CAST(Utf8(\"5\") AS Int64)"), "{text}");
        assert!(text.contains("a IS NULL"), "{text}");
        assert!(text.contains("b > CAST(Utf8(\"x\") AS Utf8)"), "{text}");
        // After a NULL that sorts last nothing comes on that key: only the next key decides.
        let text = after(&keys, &types, &[None, Some("x".into())]).to_string();
        assert!(text.contains("Boolean(false)"), "{text}");
        assert!(text.contains("a IS NULL AND"), "{text}");
        assert!(hidden("__pk_0") && hidden("__sk_3") && !hidden("pk_0"));
    }
}
