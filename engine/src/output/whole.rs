//! The encoder of the formats written once the answer is complete (table, YAML, HTML): it holds
//! the answer, and each format gives the one function that writes it whole.

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;

use super::encoder::Encode;
use super::sink::Sink;
use crate::answer::{Attachment, Completion, ResultMeta};
use crate::error::Error;

/// A whole answer's parts, as a format's writer reads them.
pub(super) struct Parts<'a> {
    /// What the answer is.
    pub meta: &'a ResultMeta,
    /// Its columns.
    pub schema: &'a SchemaRef,
    /// Its rows.
    pub batches: &'a [RecordBatch],
    /// How it ended.
    pub completion: &'a Completion,
    /// Rows attached by `with` projections.
    pub attached: &'a [Attachment],
}

/// Writes a whole answer as text.
pub(super) type Render = fn(&Parts<'_>) -> Result<String, Error>;

/// Holds an answer until it is complete, then writes it with its format's [`Render`].
pub(super) struct WholeEncoder {
    /// The format's answer, for the error of one finished before it began (`a table`).
    what: &'static str,
    render: Render,
    out: Option<Sink>,
    meta: Option<ResultMeta>,
    schema: Option<SchemaRef>,
    batches: Vec<RecordBatch>,
}

impl WholeEncoder {
    /// The encoder of the format whose answer is `what`, written by `render`.
    pub(super) fn new(what: &'static str, render: Render) -> WholeEncoder {
        WholeEncoder {
            what,
            render,
            out: None,
            meta: None,
            schema: None,
            batches: Vec::new(),
        }
    }
}

impl Encode for WholeEncoder {
    fn begin(&mut self, out: &Sink, meta: &ResultMeta, schema: &SchemaRef) -> Result<(), Error> {
        self.out = Some(out.clone());
        self.meta = Some(meta.clone());
        self.schema = Some(schema.clone());
        Ok(())
    }

    fn batch(&mut self, batch: &RecordBatch) -> Result<(), Error> {
        self.batches.push(batch.clone());
        Ok(())
    }

    fn finish(&mut self, completion: &Completion, attached: &[Attachment]) -> Result<(), Error> {
        let (Some(out), Some(meta), Some(schema)) = (&self.out, &self.meta, &self.schema) else {
            return Err(Error::Internal(format!(
                "{} was finished before it began",
                self.what
            )));
        };
        let parts = Parts {
            meta,
            schema,
            batches: &self.batches,
            completion,
            attached,
        };
        out.push((self.render)(&parts)?.as_bytes());
        Ok(())
    }
}
