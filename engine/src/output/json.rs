//! The JSON answers, written as the rows arrive: the envelope (`--format json`, HTTP's
//! `/api/query-units`, MCP's `query_units`) and the SQL data access spec's shape (`sql-json`,
//! HTTP's `/api/query`, MCP's `sql_query`). The head is written when the schema is known, each
//! batch's rows as they come (encoded by arrow's JSON encoders), and what is known only at the
//! end (`total`, `input_rows`, `truncated`, attached rows) last, which is where the envelope
//! has them; the bytes equal serde's rendering of the typed [`super::Envelope`].

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use serde::Serialize;

use super::encoder::Encode;
use super::envelope::{AttachedRows, Column, attached_rows, columns, encode_batch};
use super::sink::Sink;
use crate::answer::{Attachment, Completion, QueryResult, ResultMeta, Source};
use crate::error::Error;
use quarry_grammar::resolve::Semantics;

/// The envelope's fields before its rows.
#[derive(Serialize)]
struct Head<'a> {
    unit: &'a str,
    semantics: Semantics,
    exact: bool,
    source: Source,
    generation: i64,
    columns: Vec<Column<'a>>,
}

/// The envelope's fields after its rows.
#[derive(Serialize)]
struct Tail<'a> {
    total: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_rows: Option<u64>,
    truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
    skipped_partitions: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    attachments: Vec<AttachedRows<'a>>,
}

/// Rows as they are written: into the sink, comma-separated.
#[derive(Debug, Default)]
struct Rows {
    out: Option<Sink>,
    first: bool,
}

impl Rows {
    fn open(&mut self, out: &Sink, head: &str) {
        out.push(head.as_bytes());
        self.out = Some(out.clone());
        self.first = true;
    }

    fn batch(&mut self, batch: &RecordBatch) -> Result<(), Error> {
        let mut bytes = Vec::new();
        encode_batch(batch, &mut bytes, &mut self.first).map_err(Error::failed)?;
        self.sink()?.push(&bytes);
        Ok(())
    }

    fn close(&mut self, tail: &str) -> Result<(), Error> {
        self.sink()?.push(tail.as_bytes());
        Ok(())
    }

    fn sink(&self) -> Result<&Sink, Error> {
        self.out
            .as_ref()
            .ok_or_else(|| Error::Internal("a JSON answer was written before it began".into()))
    }
}

/// `object` as JSON, less its closing brace: the start of an object to go on with.
fn open_object(object: &impl Serialize) -> Result<String, Error> {
    let mut text = serde_json::to_string(object).map_err(Error::failed)?;
    text.pop();
    Ok(text)
}

/// `object` as JSON, less its opening brace: the rest of an object already begun.
fn rest_of_object(object: &impl Serialize) -> Result<String, Error> {
    let text = serde_json::to_string(object).map_err(Error::failed)?;
    Ok(text.get(1..).unwrap_or_default().to_string())
}

/// The envelope: `{unit, semantics, exact, source, generation, columns, rows, total,
/// input_rows?, truncated, skipped_partitions, attachments?}` and a newline.
#[derive(Debug, Default)]
pub struct EnvelopeEncoder {
    rows: Rows,
    skipped_partitions: u64,
}

impl Encode for EnvelopeEncoder {
    fn begin(&mut self, out: &Sink, meta: &ResultMeta, schema: &SchemaRef) -> Result<(), Error> {
        let head = Head {
            unit: &meta.unit,
            semantics: meta.semantics,
            exact: meta.exact,
            source: meta.source,
            generation: meta.generation,
            columns: columns(schema),
        };
        self.skipped_partitions = meta.skipped_partitions;
        self.rows.open(out, &(open_object(&head)? + ",\"rows\":["));
        Ok(())
    }

    fn batch(&mut self, batch: &RecordBatch) -> Result<(), Error> {
        self.rows.batch(batch)
    }

    fn finish(&mut self, completion: &Completion, attached: &[Attachment]) -> Result<(), Error> {
        let attachments = attached_rows(attached)?;
        let tail = Tail {
            total: completion.rows,
            input_rows: completion.input_rows,
            truncated: completion.truncated,
            next_cursor: completion.next_cursor.clone(),
            skipped_partitions: self.skipped_partitions,
            attachments,
        };
        self.rows.close(&format!("],{}\n", rest_of_object(&tail)?))
    }
}

/// The SQL data access spec's answer: `{"columns":[names],"rows":[[...]],"truncated":..,
/// "skipped_partitions":..}` and a newline.
#[derive(Debug, Default)]
pub struct SqlEncoder {
    rows: Rows,
    skipped_partitions: u64,
}

impl Encode for SqlEncoder {
    fn begin(&mut self, out: &Sink, meta: &ResultMeta, schema: &SchemaRef) -> Result<(), Error> {
        #[derive(Serialize)]
        struct SqlHead<'a> {
            columns: Vec<&'a str>,
        }
        let head = SqlHead {
            columns: schema.fields().iter().map(|f| f.name().as_str()).collect(),
        };
        self.skipped_partitions = meta.skipped_partitions;
        self.rows.open(out, &(open_object(&head)? + ",\"rows\":["));
        Ok(())
    }

    fn batch(&mut self, batch: &RecordBatch) -> Result<(), Error> {
        self.rows.batch(batch)
    }

    fn finish(&mut self, completion: &Completion, _attached: &[Attachment]) -> Result<(), Error> {
        #[derive(Serialize)]
        struct SqlTail {
            truncated: bool,
            skipped_partitions: u64,
        }
        let tail = SqlTail {
            truncated: completion.truncated,
            skipped_partitions: self.skipped_partitions,
        };
        self.rows.close(&format!("],{}\n", rest_of_object(&tail)?))
    }
}

/// A collected answer as one JSON envelope (no trailing newline): the same bytes as
/// `--format json`.
pub fn json(answer: &QueryResult) -> Result<String, Error> {
    collected(answer, crate::format::Format::Json)
}

/// A collected answer in the SQL spec's shape (no trailing newline).
pub fn sql_json(answer: &QueryResult) -> Result<String, Error> {
    collected(answer, crate::format::Format::SqlJson)
}

/// A collected answer through the encoder of `format`, as text without its final newline.
fn collected(answer: &QueryResult, format: crate::format::Format) -> Result<String, Error> {
    let mut encoder = super::Encoder::new(format);
    let mut bytes = encoder.begin(&answer.meta, &answer.schema)?;
    for batch in &answer.batches {
        bytes.extend(encoder.batch(batch)?);
    }
    bytes.extend(encoder.finish(&answer.completion(), &answer.attachments)?);
    let mut text = String::from_utf8(bytes).map_err(Error::failed)?;
    if text.ends_with('\n') {
        text.pop();
    }
    Ok(text)
}
