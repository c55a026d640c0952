//! The DataFusion functions of quarry: one file per function, and here the one list of all of
//! them, so a session registers everything in one call.
//!
//! | SQL name | kind | file |
//! |---|---|---|
//! | `percentile_nearest_rank(value, p)` | aggregate | `pnn.rs` |
//! | `quarry_text_match(text, pattern)` | scalar | `text_match.rs` |
//! | `fts_match(column, query)` | scalar (pushdown marker) | `fts.rs` |
//! | `mask_credentials(text)` | scalar | `mask.rs` |
//! | `date_trunc(granularity, time)` | scalar, in place of DataFusion's (same answers, time buckets by arithmetic) | `date_trunc.rs` |
//! | `quarry_member_of(value)` | scalar over a fixed set (never registered by name) | `member.rs` |
//!
//! This module knows nothing about the language or the archive.

mod date_trunc;
mod fts;
mod mask;
mod member;
mod pnn;
mod strings;
mod text_match;

use std::sync::Arc;

use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion::prelude::SessionContext;

pub use date_trunc::{DATE_TRUNC, DateTrunc, date_trunc, date_trunc_udf};
pub use fts::{FTS_MATCH, FtsMatch, NOT_PUSHED_DOWN, as_fts_match, fts_match, fts_match_udf};
pub use mask::{MASK_CREDENTIALS, MaskCredentials, mask_credentials, mask_credentials_udf};
pub use member::{MEMBER_OF, MemberOf, MemberSet, member_of};
pub use pnn::{
    PERCENTILE_NEAREST_RANK, PercentileNearestRank, percentile_nearest_rank,
    percentile_nearest_rank_udaf,
};
pub use text_match::{TEXT_MATCH, TextMatch, text_match, text_match_udf};

/// Every scalar function of this crate.
pub fn scalar_functions() -> Vec<Arc<ScalarUDF>> {
    vec![
        text_match_udf(),
        fts_match_udf(),
        mask_credentials_udf(),
        date_trunc_udf(),
    ]
}

/// Every aggregate function of this crate.
pub fn aggregate_functions() -> Vec<Arc<AggregateUDF>> {
    vec![percentile_nearest_rank_udaf()]
}

/// Registers every function of this crate in `ctx` (replacing any of the same name).
pub fn register_all(ctx: &SessionContext) {
    for f in scalar_functions() {
        ctx.register_udf(f.as_ref().clone());
    }
    for f in aggregate_functions() {
        ctx.register_udaf(f.as_ref().clone());
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::HashSet;

    use datafusion::logical_expr::registry::FunctionRegistry;

    use super::*;

    #[test]
    fn no_name_repeats() {
        let mut seen = HashSet::new();
        let scalar = scalar_functions().into_iter().flat_map(|f| {
            std::iter::once(f.name().to_string())
                .chain(f.aliases().iter().cloned())
                .collect::<Vec<_>>()
        });
        let aggregate = aggregate_functions().into_iter().flat_map(|f| {
            std::iter::once(f.name().to_string())
                .chain(f.aliases().iter().cloned())
                .collect::<Vec<_>>()
        });
        for name in scalar.chain(aggregate) {
            assert!(seen.insert(name.clone()), "{name} is registered twice");
        }
        // Four of quarry's own, and date_trunc with DataFusion's alias datetrunc.
        assert_eq!(seen.len(), 6);
    }

    #[test]
    fn no_name_shadows_a_builtin() {
        let ctx = SessionContext::new();
        for name in [TEXT_MATCH, FTS_MATCH, MASK_CREDENTIALS] {
            assert!(ctx.udf(name).is_err(), "{name} is a DataFusion built-in");
        }
        assert!(ctx.udaf(PERCENTILE_NEAREST_RANK).is_err());
    }

    #[test]
    fn date_trunc_replaces_the_builtin_under_every_name() {
        let ctx = SessionContext::new();
        register_all(&ctx);
        for name in [DATE_TRUNC, "datetrunc"] {
            let f = ctx.udf(name).unwrap();
            let inner: &dyn std::any::Any = f.inner().as_ref();
            assert!(inner.downcast_ref::<DateTrunc>().is_some(), "{name}");
        }
    }

    #[test]
    fn every_function_is_documented() {
        for f in scalar_functions() {
            assert!(f.documentation().is_some(), "{}", f.name());
        }
        for f in aggregate_functions() {
            assert!(f.documentation().is_some(), "{}", f.name());
        }
    }

    #[tokio::test]
    async fn register_all_makes_them_callable() -> datafusion::common::Result<()> {
        let ctx = SessionContext::new();
        register_all(&ctx);
        let batches = ctx
            .sql("SELECT percentile_nearest_rank(v, 50), bool_and(quarry_text_match('a b', 'A  B')) FROM (VALUES (1), (2), (3), (4)) t(v)")
            .await?
            .collect()
            .await?;
        let shown = datafusion::arrow::util::pretty::pretty_format_batches(&batches)?.to_string();
        assert!(shown.contains("| 2 ") && shown.contains("true"), "{shown}");
        Ok(())
    }
}
