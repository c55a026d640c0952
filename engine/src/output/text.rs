//! NDJSON and CSV, batch by batch, with arrow's own writers: one JSON object per row (nulls
//! written as `null`), or comma-separated values under one header line (the header alone when
//! there are no rows).

use datafusion::arrow::csv::{Writer as CsvWriter, WriterBuilder as CsvWriterBuilder};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::json::writer::LineDelimited;
use datafusion::arrow::json::{LineDelimitedWriter, WriterBuilder as JsonWriterBuilder};
use datafusion::arrow::record_batch::RecordBatch;

use super::encoder::Encode;
use super::sink::Sink;
use crate::answer::{Attachment, Completion, ResultMeta};
use crate::error::Error;

/// One JSON object per row.
#[derive(Default)]
pub struct NdjsonEncoder {
    writer: Option<LineDelimitedWriter<Sink>>,
}

impl Encode for NdjsonEncoder {
    fn begin(&mut self, out: &Sink, _meta: &ResultMeta, _schema: &SchemaRef) -> Result<(), Error> {
        self.writer = Some(
            JsonWriterBuilder::new()
                .with_explicit_nulls(true)
                .build::<_, LineDelimited>(out.clone()),
        );
        Ok(())
    }

    fn batch(&mut self, batch: &RecordBatch) -> Result<(), Error> {
        writer(&mut self.writer)?
            .write(batch)
            .map_err(Error::failed)
    }

    fn finish(&mut self, _completion: &Completion, _attached: &[Attachment]) -> Result<(), Error> {
        writer(&mut self.writer)?.finish().map_err(Error::failed)
    }
}

/// Comma-separated values with a header line.
#[derive(Default)]
pub struct CsvEncoder {
    writer: Option<CsvWriter<Sink>>,
    schema: Option<SchemaRef>,
    wrote: bool,
}

impl Encode for CsvEncoder {
    fn begin(&mut self, out: &Sink, _meta: &ResultMeta, schema: &SchemaRef) -> Result<(), Error> {
        self.writer = Some(CsvWriterBuilder::new().with_header(true).build(out.clone()));
        self.schema = Some(schema.clone());
        Ok(())
    }

    fn batch(&mut self, batch: &RecordBatch) -> Result<(), Error> {
        self.wrote = true;
        writer(&mut self.writer)?
            .write(batch)
            .map_err(Error::failed)
    }

    fn finish(&mut self, _completion: &Completion, _attached: &[Attachment]) -> Result<(), Error> {
        if !self.wrote
            && let Some(schema) = self.schema.clone()
        {
            // No rows: the header alone says what the columns are.
            let empty = RecordBatch::new_empty(schema);
            writer(&mut self.writer)?
                .write(&empty)
                .map_err(Error::failed)?;
        }
        Ok(())
    }
}

/// The writer of an encoder that has begun.
pub(super) fn writer<W>(writer: &mut Option<W>) -> Result<&mut W, Error> {
    writer
        .as_mut()
        .ok_or_else(|| Error::Internal("an answer was written before it began".into()))
}
