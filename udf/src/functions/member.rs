//! `quarry_member_of(value)`: whether a string is one of a fixed set of values, decided by a
//! hash lookup in the set the function was made with. A reader scope keeps its sessions (and
//! the archive's hidden messages) as such sets, made once per scope and archive generation, so
//! a scan's scope filter costs one lookup per row and nothing per query, however many sessions
//! the scope has (an `IN` list of literals would be planned, copied and hashed again for every
//! scan of every query).
//!
//! Rows of one session come together in every table (SQLite's row order and the snapshot's
//! files keep them so), so a value equal to the one before it reuses its answer: a scan pays
//! one hash lookup per run of equal values, and a comparison per row.
//!
//! Each set is its own function instance: two instances are equal only when they share the
//! set. NULL is never a member (the result is NULL, which a filter treats as false).
//!
//! This module must not know the language or the archive.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{HashSet, Result, ScalarValue, internal_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::strings::{array_strs, coerce_string, scalar_str};

/// The SQL name of the membership function (it is never registered by name: a query cannot
/// call it, only the scope machinery places it).
pub const MEMBER_OF: &str = "quarry_member_of";

/// A fixed set of strings, shared by every scan that tests membership in it.
#[derive(Debug, Default, Clone)]
pub struct MemberSet {
    values: HashSet<String>,
}

impl MemberSet {
    /// The set of `values`.
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        MemberSet {
            values: values.into_iter().collect(),
        }
    }

    /// How many values it holds.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Whether `value` is one of them.
    pub fn contains(&self, value: &str) -> bool {
        self.values.contains(value)
    }

    /// Its values, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.values.iter().map(String::as_str)
    }
}

/// `quarry_member_of(value)` over `set`, as an expression.
pub fn member_of(set: &Arc<MemberSet>, value: Expr) -> Expr {
    Arc::new(ScalarUDF::from(MemberOf::new(Arc::clone(set)))).call(vec![value])
}

/// Membership in one [`MemberSet`] (see the module docs).
#[derive(Debug)]
pub struct MemberOf {
    set: Arc<MemberSet>,
    signature: Signature,
}

impl MemberOf {
    /// The function testing membership in `set`.
    pub fn new(set: Arc<MemberSet>) -> Self {
        MemberOf {
            set,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl PartialEq for MemberOf {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.set, &other.set)
    }
}

impl Eq for MemberOf {}

impl Hash for MemberOf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::ptr::hash(Arc::as_ptr(&self.set), state);
    }
}

impl ScalarUDFImpl for MemberOf {
    fn name(&self) -> &str {
        MEMBER_OF
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [one] => Ok(vec![coerce_string(MEMBER_OF, one)?]),
            _ => plan_err!("{MEMBER_OF} takes one argument"),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [value] = args.args.as_slice() else {
            return internal_err!("{MEMBER_OF} takes one argument");
        };
        match value {
            ColumnarValue::Scalar(value) => Ok(ColumnarValue::Scalar(ScalarValue::Boolean(
                scalar_str(MEMBER_OF, value)?.map(|v| self.set.contains(v)),
            ))),
            ColumnarValue::Array(array) => {
                let mut last: Option<(&str, bool)> = None;
                let members: BooleanArray = array_strs(MEMBER_OF, array.as_ref())?
                    .map(|v| {
                        v.map(|v| match last {
                            Some((seen, answer)) if seen == v => answer,
                            _ => {
                                let answer = self.set.contains(v);
                                last = Some((v, answer));
                                answer
                            }
                        })
                    })
                    .collect();
                Ok(ColumnarValue::Array(Arc::new(members) as ArrayRef))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use datafusion::arrow::array::{Array, RecordBatch, StringViewArray};
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::prelude::{SessionContext, col};

    use super::*;

    #[tokio::test]
    async fn members_are_found_by_lookup_and_null_is_none() {
        let set = Arc::new(MemberSet::new(["a".to_string(), "c".to_string()]));
        let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8View, true)]));
        let values: ArrayRef = Arc::new(StringViewArray::from(vec![
            Some("a"),
            Some("a"),
            Some("b"),
            Some("b"),
            None,
            Some("c"),
            Some("a"),
        ]));
        let batch = RecordBatch::try_new(schema, vec![values]).unwrap();
        let ctx = SessionContext::new();
        let out = ctx
            .read_batch(batch)
            .unwrap()
            .select(vec![member_of(&set, col("s")).alias("m")])
            .unwrap()
            .collect()
            .await
            .unwrap();
        let m = out[0]
            .column(0)
            .as_any()
            .downcast_ref::<BooleanArray>()
            .unwrap();
        assert_eq!(
            (0..7)
                .map(|i| (!m.is_null(i)).then(|| m.value(i)))
                .collect::<Vec<_>>(),
            vec![
                Some(true),
                Some(true),
                Some(false),
                Some(false),
                None,
                Some(true),
                Some(true)
            ]
        );
    }

    #[test]
    fn two_functions_are_equal_only_over_one_set() {
        let set = Arc::new(MemberSet::new(["a".to_string()]));
        let same = Arc::new(MemberSet::new(["a".to_string()]));
        assert_eq!(MemberOf::new(set.clone()), MemberOf::new(set.clone()));
        assert_ne!(MemberOf::new(set), MemberOf::new(same));
    }
}
