//! `fts_match(column, query)`: the marker for a full-text (FTS5) match. DataFusion SQL cannot
//! express SQLite's `MATCH`, so the lowering writes this call as a filter and the archive's
//! provider recognises it ([`as_fts_match`]), reports the filter `Exact`, and renders it as
//! `... MATCH ?` inside the scan. It has no row-by-row meaning here: evaluating it is an error,
//! never a silent fallback to a different match.
//!
//! This module must not know the language or the archive's SQL; it only names the contract.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility, scalar_doc_sections,
};

use super::strings::coerce_two_strings;

/// The SQL name of the full-text marker function.
pub const FTS_MATCH: &str = "fts_match";

/// The error text when the marker reaches execution.
pub const NOT_PUSHED_DOWN: &str = "full-text match must be pushed down into the archive scan: \
     fts_match(column, query) is answered by the archive's FTS5 index and cannot be evaluated per \
     row (query a table with a full-text index, and use it directly as a filter of that table)";

/// `fts_match(column, query)` as an expression, for the lowering.
pub fn fts_match(column: Expr, query: Expr) -> Expr {
    fts_match_udf().call(vec![column, query])
}

/// The shared `ScalarUDF` instance of [`FtsMatch`].
pub fn fts_match_udf() -> Arc<ScalarUDF> {
    static UDF: LazyLock<Arc<ScalarUDF>> =
        LazyLock::new(|| Arc::new(ScalarUDF::from(FtsMatch::new())));
    Arc::clone(&UDF)
}

/// For a provider's filter classifier: the `(column, query)` arguments when `expr` is an
/// `fts_match` call, else `None`.
pub fn as_fts_match(expr: &Expr) -> Option<(&Expr, &Expr)> {
    match expr {
        Expr::ScalarFunction(ScalarFunction { func, args }) if func.name() == FTS_MATCH => {
            match args.as_slice() {
                [column, query] => Some((column, query)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The full-text marker (see the module docs).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct FtsMatch {
    signature: Signature,
}

impl Default for FtsMatch {
    fn default() -> Self {
        Self::new()
    }
}

impl FtsMatch {
    /// The marker; both arguments are coerced to strings. Immutable, not volatile: DataFusion
    /// offers only non-volatile filters to `supports_filters_pushdown`.
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        scalar_doc_sections::DOC_SECTION_STRING,
        "Full-text match of `query` (FTS5 query syntax) against a table's full-text index. Only \
         valid as a filter on a table whose provider pushes it down into its scan; evaluating \
         it anywhere else is an error.",
        "fts_match(column, query)",
    )
    .with_sql_example("```sql\n> SELECT block_id FROM blocks WHERE fts_match(search_text, 'connection refused');\n```")
    .with_argument("column", "The full-text indexed column.")
    .with_argument("query", "The FTS5 query.")
    .build()
});

impl ScalarUDFImpl for FtsMatch {
    fn name(&self) -> &str {
        FTS_MATCH
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce_two_strings(FTS_MATCH, arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        exec_err!("{NOT_PUSHED_DOWN}")
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::logical_expr::{col, lit};
    use datafusion::prelude::SessionContext;

    use super::*;

    #[tokio::test]
    async fn evaluating_is_an_error() -> Result<()> {
        let ctx = SessionContext::new();
        ctx.register_udf((*fts_match_udf()).clone());
        ctx.sql(
            "CREATE TABLE blocks(id INT, search_text TEXT) AS VALUES (1, 'connection refused')",
        )
        .await?
        .collect()
        .await?;
        for sql in [
            "SELECT id FROM blocks WHERE fts_match(search_text, 'refused')",
            "SELECT fts_match(search_text, 'refused') FROM blocks",
        ] {
            let err = match ctx.sql(sql).await {
                Ok(df) => df.collect().await.err(),
                Err(e) => Some(e),
            };
            let err = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(
                err.contains("full-text match must be pushed down into the archive scan"),
                "{sql}: {err}"
            );
        }
        Ok(())
    }

    #[test]
    fn the_classifier_sees_the_marker() {
        let expr = fts_match(col("search_text"), lit("refused"));
        let (column, query) = as_fts_match(&expr).unwrap_or_else(|| panic!("not recognised"));
        assert_eq!(column, &col("search_text"));
        assert_eq!(query, &lit("refused"));
        assert!(as_fts_match(&col("search_text")).is_none());
        assert!(as_fts_match(&crate::functions::text_match(col("a"), lit("b"))).is_none());
    }

    #[tokio::test]
    async fn rejects_non_strings() -> Result<()> {
        let ctx = SessionContext::new();
        ctx.register_udf((*fts_match_udf()).clone());
        assert!(ctx.sql("SELECT fts_match(1, 2)").await.is_err());
        Ok(())
    }
}
