//! The envelope every surface returns (`--format json`, HTTP and MCP): a typed serde struct
//! whose rows are encoded straight from the record batches by arrow's JSON encoders. The JSON
//! encoders of [`super::json`] write the same bytes as rows arrive; YAML is this struct through
//! `serde_yaml_ng`.

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::json::writer::{EncoderOptions, make_encoder};
use datafusion::arrow::record_batch::RecordBatch;
use serde::Serialize;
use serde_json::value::RawValue;

use crate::answer::{Attachment, Completion, QueryResult, ResultMeta, Source, type_name};
use crate::error::Error;
use quarry_grammar::resolve::Semantics;

/// One answer as the JSON envelope: `{unit, semantics, exact, source, generation, columns,
/// rows, total, input_rows?, truncated, skipped_partitions, attachments?}`. `R` is how the rows
/// are held: raw JSON as arrow encoded it (the default), or parsed values (for YAML).
#[derive(Debug, Serialize)]
pub struct Envelope<'a, R = Box<RawValue>> {
    /// The unit the rows come from.
    pub unit: &'a str,
    /// What kind of answer it is.
    pub semantics: Semantics,
    /// Always true: quarry never samples.
    pub exact: bool,
    /// The storage the rows were read from.
    pub source: Source,
    /// The archive's generation the answer reflects.
    pub generation: i64,
    /// Column names and types.
    pub columns: Vec<Column<'a>>,
    /// The rows, each an array in column order.
    pub rows: R,
    /// How many rows.
    pub total: usize,
    /// Rows the aggregate reduced (aggregate queries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_rows: Option<u64>,
    /// Whether a cap the caller set (not the query's own `limit`) cut the rows.
    pub truncated: bool,
    /// The cursor of the next page, when a cap cut a paged answer (docs/language.md, "Pages").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Partitions that could not be read (always 0: a failure fails the query).
    pub skipped_partitions: u64,
    /// Rows of other units attached by `with` projections.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachedRows<'a, R>>,
}

/// A column of the envelope.
#[derive(Debug, Serialize)]
pub struct Column<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its type: integer, number, boolean, string, timestamp (or Arrow's name of another type).
    #[serde(rename = "type")]
    pub ty: String,
}

/// Attached rows of one unit.
#[derive(Debug, Serialize)]
pub struct AttachedRows<'a, R = Box<RawValue>> {
    /// The unit.
    pub unit: &'a str,
    /// Column names and types.
    pub columns: Vec<Column<'a>>,
    /// The rows, each an array in column order.
    pub rows: R,
    /// How many rows.
    pub total: usize,
}

impl<'a> AttachedRows<'a> {
    /// The rows of one attachment.
    pub(crate) fn of(attached: &'a Attachment) -> Result<Self, Error> {
        Ok(AttachedRows {
            unit: &attached.unit,
            columns: columns(&attached.schema),
            rows: raw_rows(&attached.batches)?,
            total: attached.batches.iter().map(RecordBatch::num_rows).sum(),
        })
    }
}

/// The rows of every attachment, in order.
pub(crate) fn attached_rows(attached: &[Attachment]) -> Result<Vec<AttachedRows<'_>>, Error> {
    attached.iter().map(AttachedRows::of).collect()
}

impl<'a> Envelope<'a> {
    /// The envelope of a collected answer.
    pub fn new(answer: &'a QueryResult) -> Result<Self, Error> {
        Envelope::of(
            &answer.meta,
            &answer.schema,
            &answer.batches,
            &answer.completion(),
            &answer.attachments,
        )
    }

    /// The envelope of an answer given in its parts.
    pub fn of(
        meta: &'a ResultMeta,
        schema: &'a SchemaRef,
        batches: &[RecordBatch],
        completion: &Completion,
        attached: &'a [Attachment],
    ) -> Result<Self, Error> {
        Ok(Envelope {
            unit: &meta.unit,
            semantics: meta.semantics,
            exact: meta.exact,
            source: meta.source,
            generation: meta.generation,
            columns: columns(schema),
            rows: raw_rows(batches)?,
            total: completion.rows,
            input_rows: completion.input_rows,
            truncated: completion.truncated,
            next_cursor: completion.next_cursor.clone(),
            skipped_partitions: meta.skipped_partitions,
            attachments: attached_rows(attached)?,
        })
    }
}

impl<'a, R> Envelope<'a, R> {
    /// The same envelope with its rows (and attached rows) held another way.
    pub fn map_rows<S>(
        self,
        mut f: impl FnMut(R) -> Result<S, Error>,
    ) -> Result<Envelope<'a, S>, Error> {
        let attachments = self
            .attachments
            .into_iter()
            .map(|a| {
                Ok(AttachedRows {
                    unit: a.unit,
                    columns: a.columns,
                    rows: f(a.rows)?,
                    total: a.total,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(Envelope {
            unit: self.unit,
            semantics: self.semantics,
            exact: self.exact,
            source: self.source,
            generation: self.generation,
            columns: self.columns,
            rows: f(self.rows)?,
            total: self.total,
            input_rows: self.input_rows,
            truncated: self.truncated,
            next_cursor: self.next_cursor,
            skipped_partitions: self.skipped_partitions,
            attachments,
        })
    }
}

/// The envelope as YAML, fields in the envelope's order (written once the answer is complete).
pub(super) fn yaml_whole(parts: &super::whole::Parts<'_>) -> Result<String, Error> {
    yaml(Envelope::of(
        parts.meta,
        parts.schema,
        parts.batches,
        parts.completion,
        parts.attached,
    )?)
}

/// `envelope` as YAML, ending with a newline.
fn yaml(envelope: Envelope<'_>) -> Result<String, Error> {
    // Raw JSON means nothing to a YAML writer: the rows go as parsed values.
    let envelope = envelope.map_rows(|raw| {
        serde_json::from_str::<serde_json::Value>(raw.get()).map_err(Error::failed)
    })?;
    let mut text = serde_yaml_ng::to_string(&envelope).map_err(Error::failed)?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// Rows of `batches` as a JSON array of arrays, in column order, encoded by arrow's JSON
/// encoders (nulls as `null`, times as RFC 3339, non-finite floats as `null`).
pub fn rows_json(batches: &[RecordBatch]) -> Result<serde_json::Value, Error> {
    let raw = raw_rows(batches)?;
    serde_json::from_str(raw.get()).map_err(Error::failed)
}

/// Rows of `batches` as one raw JSON array of arrays.
pub(crate) fn raw_rows(batches: &[RecordBatch]) -> Result<Box<RawValue>, Error> {
    let mut out = vec![b'['];
    let mut first = true;
    for batch in batches {
        encode_batch(batch, &mut out, &mut first).map_err(Error::failed)?;
    }
    out.push(b']');
    let text = String::from_utf8(out).map_err(Error::failed)?;
    RawValue::from_string(text).map_err(Error::failed)
}

/// Appends the rows of `batch` to `out` as JSON arrays in column order, each after a comma
/// unless it is the `first` row of the answer.
pub(crate) fn encode_batch(
    batch: &RecordBatch,
    out: &mut Vec<u8>,
    first: &mut bool,
) -> Result<(), ArrowError> {
    let options = EncoderOptions::default().with_explicit_nulls(true);
    let schema = batch.schema();
    let mut encoders = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, array)| make_encoder(field, array.as_ref(), &options))
        .collect::<Result<Vec<_>, _>>()?;
    for row in 0..batch.num_rows() {
        if !*first {
            out.push(b',');
        }
        *first = false;
        out.push(b'[');
        for (i, encoder) in encoders.iter_mut().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            if encoder.is_null(row) {
                out.extend_from_slice(b"null");
            } else {
                encoder.encode(row, out);
            }
        }
        out.push(b']');
    }
    Ok(())
}

/// The envelope's columns of `schema`.
pub(crate) fn columns(schema: &SchemaRef) -> Vec<Column<'_>> {
    schema
        .fields()
        .iter()
        .map(|f| Column {
            name: f.name(),
            ty: type_name(f.data_type()),
        })
        .collect()
}
