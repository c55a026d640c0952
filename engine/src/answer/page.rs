//! Pages of a unit query's answer: the cursor a capped answer hands out (`next_cursor`), and
//! what the answer's stream keeps to mint it.
//!
//! Rows of a unit with a primary key page by keyset: the plan orders them totally (the query's
//! sort keys, then the key) and carries the order's values in hidden columns
//! ([`crate::lower::keyset`]); the stream strips those and keeps the last row's, which the
//! cursor carries, so the next page starts strictly after that row however much is ingested
//! meanwhile. Aggregates and answers with attached rows page by offset: the cursor pins the
//! generation, and a page asked once it moved is `stale_cursor` rather than a shifted page.
//! Either cursor carries a digest of the query text and scope; another query's is
//! `invalid_cursor`.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::lower::keyset::{PRIMARY_KEY, SORT_KEY, hidden};

/// The cursor format's version.
const VERSION: u32 = 1;

/// Where a walk of a unit query's answer stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageCursor {
    /// The format's version.
    pub v: u32,
    /// The digest of the query and scope it belongs to.
    pub digest: String,
    /// Rows the pages so far returned.
    pub returned: u64,
    /// Where the next page starts.
    #[serde(flatten)]
    pub at: At,
}

/// Where the next page starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum At {
    /// After the row whose order values (sort keys, then primary key) these are, as text.
    Key {
        /// The values.
        key: Vec<Option<String>>,
    },
    /// At `returned` rows into the answer as of `generation`.
    Offset {
        /// The generation the first page was answered at.
        generation: i64,
    },
}

impl PageCursor {
    /// The token.
    pub fn encode(&self) -> String {
        crate::token::encode(self)
    }

    /// `token` as a cursor of the query whose digest is `digest`, or why not.
    pub fn checked(token: &str, digest: &str) -> Result<PageCursor, Error> {
        let cursor = crate::token::decode::<PageCursor>(token)
            .filter(|c| c.v == VERSION)
            .ok_or_else(|| {
                Error::InvalidCursor(
                    "the cursor is not one quarry wrote: pass `next_cursor` back unchanged".into(),
                )
            })?;
        if cursor.digest != digest {
            return Err(Error::InvalidCursor(
                "the cursor belongs to another query (its text or scope differ): run the query without it".into(),
            ));
        }
        Ok(cursor)
    }
}

/// The digest binding a cursor to `query` under the scope identified by `scope`.
pub fn digest(query: &str, scope: &str) -> String {
    crate::token::digest(&["units", &VERSION.to_string(), query.trim(), scope])
}

/// What a paged answer's stream keeps to mint the next cursor.
#[derive(Debug)]
pub struct Pager {
    digest: String,
    /// Rows earlier pages returned.
    returned: u64,
    mode: Mode,
}

#[derive(Debug)]
enum Mode {
    Key {
        /// The hidden order columns of the plan's rows, and the columns returned.
        order: Vec<usize>,
        visible: Vec<usize>,
        /// The last row passed on: its order values.
        last: Option<Vec<Option<String>>>,
    },
    Offset {
        generation: i64,
    },
}

impl Pager {
    /// A pager of rows in keyset order, whose plan's rows have `schema`.
    pub fn keyset(digest: String, returned: u64, schema: &Schema) -> Pager {
        let (mut order, visible): (Vec<usize>, Vec<usize>) =
            (0..schema.fields().len()).partition(|&i| hidden(schema.field(i).name()));
        // The order the plan sorts by: the sort keys by number, then the primary key's.
        order.sort_by_key(|&i| {
            let name = schema.field(i).name();
            let number = name
                .trim_start_matches(SORT_KEY)
                .trim_start_matches(PRIMARY_KEY)
                .parse::<usize>()
                .unwrap_or(usize::MAX);
            (name.starts_with(PRIMARY_KEY), number)
        });
        Pager {
            digest,
            returned,
            mode: Mode::Key {
                order,
                visible,
                last: None,
            },
        }
    }

    /// A pager by offset of an answer as of `generation`.
    pub fn offset(digest: String, returned: u64, generation: i64) -> Pager {
        Pager {
            digest,
            returned,
            mode: Mode::Offset { generation },
        }
    }

    /// The schema of what the answer returns (the hidden columns left out).
    pub fn returned_schema(&self, schema: &SchemaRef) -> Result<SchemaRef, ArrowError> {
        match &self.mode {
            Mode::Key { visible, .. } => Ok(Arc::new(schema.project(visible)?)),
            Mode::Offset { .. } => Ok(schema.clone()),
        }
    }

    /// `batch` as the answer returns it, its last row's order values kept.
    pub fn pass(&mut self, batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
        let Mode::Key {
            order,
            visible,
            last,
        } = &mut self.mode
        else {
            return Ok(batch);
        };
        if batch.num_rows() > 0 {
            let row = batch.num_rows() - 1;
            let mut values = Vec::with_capacity(order.len());
            for &i in order.iter() {
                let text = cast(&batch.column(i).slice(row, 1), &DataType::Utf8)?;
                let text = text.as_string::<i32>();
                values.push(text.is_valid(0).then(|| text.value(0).to_string()));
            }
            *last = Some(values);
        }
        batch.project(visible)
    }

    /// The cursor of the next page, after `rows` rows of this one.
    pub fn next_cursor(&self, rows: usize) -> Option<String> {
        let at = match &self.mode {
            Mode::Key { last, .. } => At::Key { key: last.clone()? },
            Mode::Offset { generation } => At::Offset {
                generation: *generation,
            },
        };
        Some(
            PageCursor {
                v: VERSION,
                digest: self.digest.clone(),
                returned: self.returned + rows as u64,
                at,
            }
            .encode(),
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::Field;

    #[test]
    fn a_keyset_pager_strips_the_order_columns_and_keeps_the_last_rows() {
        // The key is copied at the scan, the sort key later: the cursor holds the sort key first.
        let schema = Arc::new(Schema::new(vec![
            Field::new("__pk_0", DataType::Utf8, false),
            Field::new("text", DataType::Utf8, true),
            Field::new("__sk_0", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(vec!["m1", "m2"])),
                Arc::new(StringArray::from(vec![Some("a"), Some("b")])),
                Arc::new(Int64Array::from(vec![Some(3), None])),
            ],
        )
        .unwrap();
        let mut pager = Pager::keyset(digest("q", "admin"), 10, &schema);
        assert_eq!(pager.returned_schema(&schema).unwrap().fields().len(), 1);
        let out = pager.pass(batch).unwrap();
        assert_eq!(out.num_columns(), 1);
        let token = pager.next_cursor(2).unwrap();
        let cursor = PageCursor::checked(&token, &digest("q", "admin")).unwrap();
        assert_eq!(cursor.returned, 12);
        assert_eq!(
            cursor.at,
            At::Key {
                key: vec![None, Some("m2".into())]
            }
        );
        // Another query's or another scope's digest refuses it.
        let e = PageCursor::checked(&token, &digest("q", "alice")).unwrap_err();
        assert_eq!(e.code(), "invalid_cursor");
        assert_eq!(
            PageCursor::checked("junk", "d").unwrap_err().code(),
            "invalid_cursor"
        );
    }
}
