//! `mask_credentials(text)`: the text with every credential the kernel recognises replaced by
//! `[REDACTED:<kind>]` ([`crate::mask`]). A reader scope sees tool inputs and outputs through
//! it. The result has the argument's string type and nullability; NULL stays NULL.
//!
//! This module must not know the language or the archive.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, internal_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility, scalar_doc_sections,
};

use super::strings::{array_strs, coerce_string, scalar_str};
use crate::mask::mask_credentials as mask_text;

/// The SQL name of the masking function.
pub const MASK_CREDENTIALS: &str = "mask_credentials";

/// `mask_credentials(text)` as an expression.
pub fn mask_credentials(text: Expr) -> Expr {
    mask_credentials_udf().call(vec![text])
}

/// The shared `ScalarUDF` instance of [`MaskCredentials`].
pub fn mask_credentials_udf() -> Arc<ScalarUDF> {
    static UDF: LazyLock<Arc<ScalarUDF>> =
        LazyLock::new(|| Arc::new(ScalarUDF::from(MaskCredentials::new())));
    Arc::clone(&UDF)
}

/// Credential masking (see the module docs).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct MaskCredentials {
    signature: Signature,
}

impl Default for MaskCredentials {
    fn default() -> Self {
        Self::new()
    }
}

impl MaskCredentials {
    /// The function; its argument is coerced to a string.
    pub fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        scalar_doc_sections::DOC_SECTION_STRING,
        "`text` with every credential quarry recognises (API keys, bearer tokens, private keys, \
         passwords in URLs and secret-named assignments) replaced by `[REDACTED:<kind>]`. A \
         reader scope sees tool inputs and outputs through it. NULL if `text` is NULL.",
        "mask_credentials(text)",
    )
    .with_sql_example(
        "```sql\n> SELECT mask_credentials('curl -H \"Authorization: Bearer abcdef1234567890\"');\n\
         curl -H \"Authorization: Bearer [REDACTED:bearer_token]\"\n```",
    )
    .with_argument("text", "The text to mask.")
    .build()
});

impl ScalarUDFImpl for MaskCredentials {
    fn name(&self) -> &str {
        MASK_CREDENTIALS
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [one] => Ok(vec![coerce_string(MASK_CREDENTIALS, one)?]),
            _ => plan_err!("{MASK_CREDENTIALS} takes one argument"),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [one] => Ok(one.clone()),
            _ => plan_err!("{MASK_CREDENTIALS} takes one argument"),
        }
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        match args.arg_fields {
            [one] => Ok(Arc::new(Field::new(
                MASK_CREDENTIALS,
                one.data_type().clone(),
                one.is_nullable(),
            ))),
            _ => plan_err!("{MASK_CREDENTIALS} takes one argument"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [text] = args.args.as_slice() else {
            return internal_err!("{MASK_CREDENTIALS} takes one argument");
        };
        match text {
            ColumnarValue::Scalar(value) => {
                let masked =
                    scalar_str(MASK_CREDENTIALS, value)?.map(|t| mask_text(t).into_owned());
                let out = ScalarValue::Utf8(masked).cast_to(&value.data_type())?;
                Ok(ColumnarValue::Scalar(out))
            }
            ColumnarValue::Array(array) => Ok(ColumnarValue::Array(mask_array(array)?)),
        }
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}

/// Masks every row of a string array; the result has the array's type. Most batches hold no
/// credential: one whose every row the masking leaves as it is (the same text, not a copy) is
/// answered with the array itself, so its text is neither copied nor cast.
fn mask_array(array: &ArrayRef) -> Result<ArrayRef> {
    if array.data_type().is_null() {
        return Ok(Arc::clone(array));
    }
    let rows: Vec<(Option<&str>, Option<Cow<'_, str>>)> =
        array_strs(MASK_CREDENTIALS, array.as_ref())?
            .map(|t| (t, t.map(mask_text)))
            .collect();
    let unchanged = rows.iter().all(|(text, masked)| match (text, masked) {
        (Some(text), Some(Cow::Borrowed(masked))) => std::ptr::eq(*text, *masked),
        (None, None) => true,
        _ => false,
    });
    if unchanged {
        return Ok(Arc::clone(array));
    }
    let masked: StringArray = rows.iter().map(|(_, masked)| masked.as_deref()).collect();
    if array.data_type() == &DataType::Utf8 {
        return Ok(Arc::new(masked));
    }
    Ok(cast(&masked, array.data_type())?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use datafusion::arrow::array::{AsArray, StringViewArray};

    use super::*;

    #[test]
    fn masks_every_row_and_keeps_type_and_nulls() {
        let input: ArrayRef = Arc::new(StringViewArray::from(vec![
            Some("token: Bearer abcdef1234567890xyz"),
            None,
            Some("nothing secret here"),
        ]));
        let out = mask_array(&input).unwrap();
        assert_eq!(out.data_type(), &DataType::Utf8View);
        let out = out.as_string_view();
        assert!(
            !out.value(0).contains("abcdef1234567890xyz"),
            "{}",
            out.value(0)
        );
        assert!(out.is_null(1));
        assert_eq!(out.value(2), "nothing secret here");
    }

    #[test]
    fn a_batch_with_nothing_to_mask_is_the_array_itself() {
        let clean: ArrayRef = Arc::new(StringViewArray::from(vec![
            Some("a token of thanks"),
            None,
            Some("pass the salt"),
        ]));
        assert!(Arc::ptr_eq(&mask_array(&clean).unwrap(), &clean));
        let secret: ArrayRef = Arc::new(StringArray::from(vec![
            Some("a token of thanks"),
            Some("export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
        ]));
        let out = mask_array(&secret).unwrap();
        assert!(!Arc::ptr_eq(&out, &secret));
        let out = out.as_string::<i32>();
        assert_eq!(out.value(0), "a token of thanks");
        assert!(!out.value(1).contains("ghp_abcdef"), "{}", out.value(1));
    }
}
