//! String plumbing shared by the scalar functions: argument coercion to Arrow's string types and
//! uniform access to `Utf8` / `LargeUtf8` / `Utf8View` arrays and scalars. No function semantics.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue, internal_err, plan_err};

/// The string type an argument of `function` is cast to: string types stay as they are (no copy
/// of a `Utf8View` column), NULL becomes `Utf8`, a dictionary its value type.
pub(crate) fn coerce_string(function: &str, arg: &DataType) -> Result<DataType> {
    match arg {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Ok(arg.clone()),
        DataType::Null => Ok(DataType::Utf8),
        DataType::Dictionary(_, inner) => coerce_string(function, inner),
        other => plan_err!("{function} needs string arguments, got {other}"),
    }
}

/// Coerces exactly two string arguments.
pub(crate) fn coerce_two_strings(function: &str, args: &[DataType]) -> Result<Vec<DataType>> {
    let [a, b] = args else {
        return plan_err!("{function} takes two arguments, got {}", args.len());
    };
    Ok(vec![
        coerce_string(function, a)?,
        coerce_string(function, b)?,
    ])
}

/// The string in a string scalar (`None` for NULL).
pub(crate) fn scalar_str<'a>(function: &str, value: &'a ScalarValue) -> Result<Option<&'a str>> {
    match value {
        ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => {
            Ok(s.as_deref())
        }
        ScalarValue::Null => Ok(None),
        other => internal_err!("{function}: expected a string, got {}", other.data_type()),
    }
}

/// The rows of a string array, `None` for NULL.
pub(crate) fn array_strs<'a>(
    function: &str,
    array: &'a dyn Array,
) -> Result<Box<dyn Iterator<Item = Option<&'a str>> + 'a>> {
    if let Some(a) = array.as_string_opt::<i32>() {
        Ok(Box::new(a.iter()))
    } else if let Some(a) = array.as_string_opt::<i64>() {
        Ok(Box::new(a.iter()))
    } else if let Some(a) = array.as_string_view_opt() {
        Ok(Box::new(a.iter()))
    } else if array.data_type().is_null() {
        Ok(Box::new(std::iter::repeat_n(None, array.len())))
    } else {
        internal_err!("{function}: expected strings, got {}", array.data_type())
    }
}
