//! `date_trunc(granularity, time)`: DataFusion's function of that name, with the zone-dependent
//! sizes (hour, day, week, month, quarter, year) of timestamp columns computed by
//! [`crate::buckets`] with integer arithmetic per row instead of chrono per row. Registered in
//! place of the built-in, so the language's `time:` buckets, SQL's `date_trunc` and the reports
//! share it. Everything else (scalars, finer sizes, time-of-day types, batches outside the safe
//! range, errors) is DataFusion's own function, unchanged; the answers are the built-in's in
//! every case (the tests compare them).
//!
//! This module must not know the language or the archive.

use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{Array, ArrayRef, PrimitiveArray};
use datafusion::arrow::datatypes::{
    ArrowTimestampType, DataType, FieldRef, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType,
};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::sort_properties::{ExprProperties, SortProperties};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature,
};

use crate::buckets::{Bucket, OffsetCache, truncate};

/// The SQL name of the function (DataFusion's).
pub const DATE_TRUNC: &str = "date_trunc";

/// `date_trunc(granularity, time)` as an expression.
pub fn date_trunc(granularity: Expr, time: Expr) -> Expr {
    date_trunc_udf().call(vec![granularity, time])
}

/// The shared `ScalarUDF` instance of [`DateTrunc`] (one offset cache per process).
pub fn date_trunc_udf() -> Arc<ScalarUDF> {
    static UDF: LazyLock<Arc<ScalarUDF>> =
        LazyLock::new(|| Arc::new(ScalarUDF::from(DateTrunc::new())));
    Arc::clone(&UDF)
}

/// `date_trunc` with time buckets by arithmetic (see the module docs).
#[derive(Debug)]
pub struct DateTrunc {
    builtin: Arc<ScalarUDF>,
    offsets: OffsetCache,
}

impl Default for DateTrunc {
    fn default() -> Self {
        Self::new()
    }
}

impl DateTrunc {
    /// The function, wrapping DataFusion's built-in.
    pub fn new() -> Self {
        Self {
            builtin: datafusion::functions::datetime::date_trunc(),
            offsets: OffsetCache::default(),
        }
    }

    /// The batch truncated here, or `None` when it is the built-in's to answer.
    fn truncate_array(&self, bucket: Bucket, array: &ArrayRef) -> Option<ArrayRef> {
        match array.data_type() {
            DataType::Timestamp(TimeUnit::Second, tz) => {
                self.truncate_typed::<TimestampSecondType>(bucket, array, tz, 1)
            }
            DataType::Timestamp(TimeUnit::Millisecond, tz) => {
                self.truncate_typed::<TimestampMillisecondType>(bucket, array, tz, 1_000)
            }
            DataType::Timestamp(TimeUnit::Microsecond, tz) => {
                self.truncate_typed::<TimestampMicrosecondType>(bucket, array, tz, 1_000_000)
            }
            DataType::Timestamp(TimeUnit::Nanosecond, tz) => {
                self.truncate_typed::<TimestampNanosecondType>(bucket, array, tz, 1_000_000_000)
            }
            _ => None,
        }
    }

    fn truncate_typed<T: ArrowTimestampType>(
        &self,
        bucket: Bucket,
        array: &ArrayRef,
        tz: &Option<Arc<str>>,
        per_second: i64,
    ) -> Option<ArrayRef> {
        let array = array.as_any().downcast_ref::<PrimitiveArray<T>>()?;
        let zone = match tz {
            Some(name) => Some((name, Tz::from_str(name).ok()?)),
            None => None,
        };
        let values = truncate(
            array.values(),
            array.nulls(),
            per_second,
            bucket,
            zone.as_ref().map(|(name, tz)| (*name, tz)),
            &self.offsets,
        )
        .ok()?;
        let out = PrimitiveArray::<T>::new(values.into(), array.nulls().cloned())
            .with_timezone_opt(tz.clone());
        Some(Arc::new(out))
    }
}

impl PartialEq for DateTrunc {
    fn eq(&self, _: &Self) -> bool {
        // The cache is not part of what the function computes.
        true
    }
}

impl Eq for DateTrunc {}

impl Hash for DateTrunc {
    fn hash<H: Hasher>(&self, state: &mut H) {
        DATE_TRUNC.hash(state);
    }
}

impl ScalarUDFImpl for DateTrunc {
    fn name(&self) -> &str {
        self.builtin.name()
    }

    fn aliases(&self) -> &[String] {
        self.builtin.aliases()
    }

    fn signature(&self) -> &Signature {
        self.builtin.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.builtin.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.builtin.return_field_from_args(args)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.builtin.coerce_types(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if let [
            ColumnarValue::Scalar(granularity),
            ColumnarValue::Array(array),
        ] = args.args.as_slice()
        {
            let name = match granularity {
                ScalarValue::Utf8(Some(name))
                | ScalarValue::Utf8View(Some(name))
                | ScalarValue::LargeUtf8(Some(name)) => Some(name.as_str()),
                _ => None,
            };
            if let Some(bucket) = name.and_then(Bucket::parse)
                && let Some(out) = self.truncate_array(bucket, array)
            {
                return Ok(ColumnarValue::Array(out));
            }
        }
        self.builtin.invoke_with_args(args)
    }

    fn output_ordering(&self, inputs: &[ExprProperties]) -> Result<SortProperties> {
        self.builtin.output_ordering(inputs)
    }

    fn preserves_lex_ordering(&self, inputs: &[ExprProperties]) -> Result<bool> {
        self.builtin.preserves_lex_ordering(inputs)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.builtin.documentation()
    }
}

#[cfg(test)]
mod tests;
