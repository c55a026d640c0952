//! `quarry_text_match(text, pattern)`: the literal, Unicode case-insensitive, whitespace-flexible
//! text match of `spec/session-query.md` as a DataFusion `ScalarUDF` returning Boolean. The
//! semantics are the kernel's ([`crate::TextPattern`]); this module only adapts Arrow arrays.
//!
//! A constant pattern (the usual case) is compiled once per batch; a pattern column is compiled
//! per row. NULL text or NULL pattern gives NULL (SQL's three-valued logic, so a `WHERE` drops
//! the row, and `NOT quarry_text_match(...)` does not select rows whose text is NULL).
//!
//! This module must not know the language or the archive.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{ArrayRef, BooleanArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue, internal_err};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility, scalar_doc_sections,
};

use super::strings::{array_strs, coerce_two_strings, scalar_str};
use crate::TextPattern;

/// The SQL name of the text match function.
pub const TEXT_MATCH: &str = "quarry_text_match";

/// `quarry_text_match(text, pattern)` as an expression, for the lowering.
pub fn text_match(text: Expr, pattern: Expr) -> Expr {
    text_match_udf().call(vec![text, pattern])
}

/// The shared `ScalarUDF` instance of [`TextMatch`].
pub fn text_match_udf() -> Arc<ScalarUDF> {
    static UDF: LazyLock<Arc<ScalarUDF>> =
        LazyLock::new(|| Arc::new(ScalarUDF::from(TextMatch::new())));
    Arc::clone(&UDF)
}

/// The literal, case-insensitive, whitespace-flexible text match (see the module docs).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TextMatch {
    signature: Signature,
}

impl Default for TextMatch {
    fn default() -> Self {
        Self::new()
    }
}

impl TextMatch {
    /// The function; both arguments are coerced to strings.
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        scalar_doc_sections::DOC_SECTION_STRING,
        "Whether `pattern` occurs in `text`, literally (no wildcards or regular expressions), \
         ignoring Unicode case, with every whitespace run in the pattern matching any whitespace \
         run in the text. An empty pattern matches every text. NULL if either argument is NULL.",
        "quarry_text_match(text, pattern)",
    )
    .with_sql_example(
        "```sql\n> SELECT quarry_text_match('error: Connection\\n  refused', 'connection refused');\n\
         true\n```",
    )
    .with_argument("text", "The text to search.")
    .with_argument("pattern", "The literal words to find, in order.")
    .build()
});

impl ScalarUDFImpl for TextMatch {
    fn name(&self) -> &str {
        TEXT_MATCH
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce_two_strings(TEXT_MATCH, arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [text, pattern] = args.args.as_slice() else {
            return internal_err!("{TEXT_MATCH} takes two arguments");
        };
        match (text, pattern) {
            (ColumnarValue::Scalar(text), ColumnarValue::Scalar(pattern)) => {
                let text = scalar_str(TEXT_MATCH, text)?;
                let pattern = scalar_str(TEXT_MATCH, pattern)?;
                let result = match (text, pattern) {
                    (Some(t), Some(p)) => Some(TextPattern::new(p).matches(t)),
                    _ => None,
                };
                Ok(ColumnarValue::Scalar(ScalarValue::Boolean(result)))
            }
            (ColumnarValue::Array(text), ColumnarValue::Scalar(pattern)) => {
                let result = match scalar_str(TEXT_MATCH, pattern)? {
                    Some(p) => match_constant(text, &TextPattern::new(p))?,
                    None => BooleanArray::new_null(text.len()),
                };
                Ok(ColumnarValue::Array(Arc::new(result)))
            }
            (text, pattern) => {
                let texts = text.to_array(args.number_rows)?;
                let patterns = pattern.to_array(args.number_rows)?;
                let result: BooleanArray = array_strs(TEXT_MATCH, &texts)?
                    .zip(array_strs(TEXT_MATCH, &patterns)?)
                    .map(|(t, p)| Some(TextPattern::new(p?).matches(t?)))
                    .collect();
                Ok(ColumnarValue::Array(Arc::new(result)))
            }
        }
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}

/// Matches every row of `texts` against one compiled pattern.
fn match_constant(texts: &ArrayRef, pattern: &TextPattern) -> Result<BooleanArray> {
    Ok(array_strs(TEXT_MATCH, texts)?
        .map(|t| t.map(|t| pattern.matches(t)))
        .collect())
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{
        Array, LargeStringArray, RecordBatch, StringArray, StringViewArray,
    };
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::prelude::SessionContext;

    use super::*;

    const TEXTS: [Option<&str>; 9] = [
        Some("error: Connection\n\trefused by peer"),
        Some("connectionrefused"),
        Some("ŁÓDŹ  Gęślą jaźń"),
        Some("a.b"),
        Some("abc"),
        Some(""),
        None,
        Some("x (Y)* z"),
        Some("ÉCOLE"),
    ];

    fn context() -> Result<SessionContext> {
        let ctx = SessionContext::new();
        ctx.register_udf((*text_match_udf()).clone());
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("t", DataType::Utf8, true),
            Field::new("tl", DataType::LargeUtf8, true),
            Field::new("tv", DataType::Utf8View, true),
        ]));
        let ids: Vec<i64> = (0..TEXTS.len() as i64).collect();
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(datafusion::arrow::array::Int64Array::from(ids)),
                Arc::new(StringArray::from(TEXTS.to_vec())),
                Arc::new(LargeStringArray::from(TEXTS.to_vec())),
                Arc::new(StringViewArray::from(TEXTS.to_vec())),
            ],
        )?;
        ctx.register_batch("t", batch)?;
        Ok(ctx)
    }

    /// Runs `sql` and returns its first column as booleans.
    async fn bools(ctx: &SessionContext, sql: &str) -> Result<Vec<Option<bool>>> {
        let batches = ctx.sql(sql).await?.collect().await?;
        let mut out = Vec::new();
        for b in batches {
            let col = b.column(0);
            let col = col.as_any().downcast_ref::<BooleanArray>().ok_or_else(|| {
                datafusion::common::DataFusionError::Internal("not boolean".into())
            })?;
            out.extend(col.iter());
        }
        Ok(out)
    }

    fn kernel(pattern: &str) -> Vec<Option<bool>> {
        TEXTS
            .iter()
            .map(|t| t.map(|t| TextPattern::new(pattern).matches(t)))
            .collect()
    }

    #[tokio::test]
    async fn agrees_with_the_kernel_on_every_string_type() -> Result<()> {
        let ctx = context()?;
        for pattern in [
            "connection refused",
            "CONNECTION   REFUSED",
            "łódź gęślą",
            "a.b",
            "(y)*",
            "",
            "école",
            "zzz",
        ] {
            for column in ["t", "tl", "tv"] {
                let sql =
                    format!("SELECT quarry_text_match({column}, '{pattern}') FROM t ORDER BY id");
                assert_eq!(bools(&ctx, &sql).await?, kernel(pattern), "{sql}");
            }
        }
        Ok(())
    }

    #[tokio::test]
    async fn plain_expectations() -> Result<()> {
        let ctx = context()?;
        let got = bools(
            &ctx,
            "SELECT quarry_text_match(t, 'connection refused') FROM t ORDER BY id",
        )
        .await?;
        assert_eq!(
            got,
            vec![
                Some(true),
                Some(false),
                Some(false),
                Some(false),
                Some(false),
                Some(false),
                None,
                Some(false),
                Some(false)
            ]
        );
        let got = bools(
            &ctx,
            "SELECT quarry_text_match(t, 'a.b') FROM t ORDER BY id",
        )
        .await?;
        assert_eq!(got.get(3), Some(&Some(true)));
        assert_eq!(got.get(4), Some(&Some(false)), "the dot is literal");
        // In a WHERE clause: NULL text is not a match, and not a non-match either.
        let got = bools(
            &ctx,
            "SELECT count(*) > 0 FROM t WHERE NOT quarry_text_match(t, 'x')",
        )
        .await?;
        assert_eq!(got, vec![Some(true)]);
        let n = ctx
            .sql("SELECT id FROM t WHERE quarry_text_match(t, 'ŁÓDŹ gęślą JAŹŃ')")
            .await?
            .collect()
            .await?
            .iter()
            .map(|b| b.num_rows())
            .sum::<usize>();
        assert_eq!(n, 1);
        Ok(())
    }

    #[tokio::test]
    async fn nulls_scalars_and_pattern_columns() -> Result<()> {
        let ctx = context()?;
        assert_eq!(
            bools(&ctx, "SELECT quarry_text_match('A  b', 'a b')").await?,
            vec![Some(true)]
        );
        assert_eq!(
            bools(&ctx, "SELECT quarry_text_match(NULL, 'a')").await?,
            vec![None]
        );
        assert_eq!(
            bools(&ctx, "SELECT quarry_text_match('a', NULL)").await?,
            vec![None]
        );
        let got = bools(&ctx, "SELECT quarry_text_match(t, NULL) FROM t").await?;
        assert!(got.iter().all(Option::is_none));
        // Pattern from a column: each row against itself (uppercased), compiled per row.
        let got = bools(
            &ctx,
            "SELECT quarry_text_match(t, upper(tv)) FROM t ORDER BY id",
        )
        .await?;
        let want: Vec<Option<bool>> = TEXTS.iter().map(|t| t.map(|_| true)).collect();
        assert_eq!(got, want);
        Ok(())
    }

    #[tokio::test]
    async fn rejects_non_strings() -> Result<()> {
        let ctx = context()?;
        assert!(ctx.sql("SELECT quarry_text_match(1, 'a')").await.is_err());
        assert!(ctx.sql("SELECT quarry_text_match('a')").await.is_err());
        Ok(())
    }
}
