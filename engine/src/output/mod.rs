//! Writing answers: one streaming encoder per format, and the destination the bytes go to. An
//! encoder sees only the answer's metadata, its record batches and how it ended, never a plan
//! or a front end: the command line, the HTTP bodies and MCP all encode through it, so a
//! format's bytes are the same wherever they are asked for.
//!
//! | format | module | how |
//! |---|---|---|
//! | json, sql-json | [`json`] | the envelope (or the SQL spec's shape) written as rows arrive: its head, the rows encoded by arrow's JSON encoders, then what is known at the end |
//! | yaml | [`envelope`] | the typed [`Envelope`], through `serde_yaml_ng`, at the end |
//! | table | `table` | comfy-table, floats at a readable precision, at the end |
//! | html | [`html`] | one self-contained document (a table; a report's dashboards), at the end |
//! | ndjson, csv | `text` | arrow's JSON (line-delimited) and CSV writers, batch by batch |
//! | arrow, arrow-stream, parquet | `binary` | arrow's IPC file and stream writers, parquet's `ArrowWriter`, batch by batch |
//!
//! Every encoder has three steps, [`Encoder::begin`] (the schema is known), [`Encoder::batch`]
//! and [`Encoder::finish`] (the [`Completion`] and any attached rows are known), each returning
//! the bytes ready so far. [`encode`] drives one over a [`QueryStream`]; formats that do not
//! stream ([`Format::streams`]) are handed on whole, only once the answer is complete, so a
//! failure never leaves half a document behind.
//!
//! Times are Arrow timestamps in the binary formats and RFC 3339 in the text formats, as Arrow
//! renders them: `Z` for UTC, fractional seconds to the millisecond when there are any
//! (`2026-01-05T09:30:00.250Z`, `2026-01-05T00:00:00Z`).

mod binary;
mod destination;
pub mod envelope;
pub mod html;
pub mod json;
pub mod numbers;
mod sink;
mod table;
mod text;
mod whole;

pub use self::destination::{Destination, format_for_path, output_path};
pub use self::envelope::{Envelope, rows_json};
pub use self::table::render as render_table;

use crate::answer::{Completion, QueryStream};

use crate::error::Error;
use crate::format::Format;

pub use self::encoder::{Encoder, encode};

mod encoder {
    use datafusion::arrow::datatypes::SchemaRef;
    use datafusion::arrow::record_batch::RecordBatch;
    use futures::StreamExt;

    use super::sink::Sink;
    use super::whole::WholeEncoder;
    use super::{binary, envelope, html, json, table, text};
    use crate::answer::{Attachment, Completion, QueryStream, ResultMeta};
    use crate::error::Error;
    use crate::format::Format;

    /// One format's encoder, writing into a [`Sink`] that [`Encoder`] drains after each step.
    pub(super) trait Encode: Send {
        /// The answer's metadata and schema are known: the bytes that open it.
        fn begin(&mut self, out: &Sink, meta: &ResultMeta, schema: &SchemaRef)
        -> Result<(), Error>;
        /// One batch of rows.
        fn batch(&mut self, batch: &RecordBatch) -> Result<(), Error>;
        /// The answer ended: what is known only now, and the bytes that close it.
        fn finish(&mut self, completion: &Completion, attached: &[Attachment])
        -> Result<(), Error>;
    }

    /// The encoder of one answer in one format.
    pub struct Encoder {
        format: Format,
        sink: Sink,
        inner: Box<dyn Encode>,
    }

    impl Encoder {
        /// An encoder of `format`.
        pub fn new(format: Format) -> Encoder {
            let inner: Box<dyn Encode> = match format {
                Format::Json => Box::new(json::EnvelopeEncoder::default()),
                Format::SqlJson => Box::new(json::SqlEncoder::default()),
                Format::Yaml => Box::new(WholeEncoder::new("a YAML answer", envelope::yaml_whole)),
                Format::Table => Box::new(WholeEncoder::new("a table", table::whole)),
                Format::Html => Box::new(WholeEncoder::new("an HTML answer", html::whole)),
                Format::Ndjson => Box::new(text::NdjsonEncoder::default()),
                Format::Csv => Box::new(text::CsvEncoder::default()),
                Format::Arrow => Box::new(binary::ArrowFileEncoder::default()),
                Format::ArrowStream => Box::new(binary::ArrowStreamEncoder::default()),
                Format::Parquet => Box::new(binary::ParquetEncoder::default()),
            };
            Encoder {
                format,
                sink: Sink::default(),
                inner,
            }
        }

        /// An encoder of `format` for `stream`'s answer: refused (and the refusal recorded as
        /// the answer's outcome) when the format streams and the answer has rows attached by
        /// `with` projections, which one table of rows cannot hold.
        pub fn for_stream(format: Format, stream: &mut QueryStream) -> Result<Encoder, Error> {
            if format.streams() && !stream.attached_units().is_empty() {
                let e = Error::NotStreamable(format.name());
                stream.record_failure(&e);
                return Err(e);
            }
            Ok(Encoder::new(format))
        }

        /// The format it writes.
        pub fn format(&self) -> Format {
            self.format
        }

        /// Opens the answer.
        pub fn begin(&mut self, meta: &ResultMeta, schema: &SchemaRef) -> Result<Vec<u8>, Error> {
            self.inner.begin(&self.sink, meta, schema)?;
            Ok(self.sink.take())
        }

        /// Encodes one batch.
        pub fn batch(&mut self, batch: &RecordBatch) -> Result<Vec<u8>, Error> {
            self.inner.batch(batch)?;
            Ok(self.sink.take())
        }

        /// Closes the answer.
        pub fn finish(
            &mut self,
            completion: &Completion,
            attached: &[Attachment],
        ) -> Result<Vec<u8>, Error> {
            self.inner.finish(completion, attached)?;
            Ok(self.sink.take())
        }
    }

    /// Encodes all of `stream` in `format`, handing the bytes to `emit` as they are ready (for
    /// a format that does not stream, once, at the end), and reports how the answer ended. A
    /// failure of `emit` fails the answer and is recorded as its outcome.
    pub async fn encode(
        mut stream: QueryStream,
        format: Format,
        mut emit: impl FnMut(Vec<u8>) -> Result<(), Error>,
    ) -> Result<Completion, Error> {
        let mut encoder = Encoder::for_stream(format, &mut stream)?;
        let whole = !format.streams();
        let mut held = Vec::new();
        let mut pass = |bytes: Vec<u8>, stream: &mut QueryStream| -> Result<(), Error> {
            if whole {
                held.extend(bytes);
                return Ok(());
            }
            if bytes.is_empty() {
                return Ok(());
            }
            emit(bytes).inspect_err(|e| stream.record_failure(e))
        };
        let meta = stream.meta().clone();
        let opened = encoder.begin(&meta, &stream.schema());
        pass(failing(opened, &mut stream)?, &mut stream)?;
        while let Some(batch) = stream.next().await {
            let bytes = encoder.batch(&batch?);
            pass(failing(bytes, &mut stream)?, &mut stream)?;
        }
        let attached = stream.attachments().await?;
        let completion = stream.finished()?;
        let closed = encoder.finish(&completion, &attached);
        pass(failing(closed, &mut stream)?, &mut stream)?;
        if whole {
            emit(held)?;
        }
        Ok(completion)
    }

    /// `result`, with a failure recorded as the answer's outcome.
    fn failing<T>(result: Result<T, Error>, stream: &mut QueryStream) -> Result<T, Error> {
        result.inspect_err(|e| stream.record_failure(e))
    }
}

/// Writes the answer of `stream` to `destination` in `format` and reports how it ended. The
/// streamed formats (parquet, arrow, arrow-stream, csv, ndjson) hold one batch at a time, so
/// an answer of any size fits; json, yaml and table are written once complete. A streamed
/// format refuses an answer with rows attached by `with` projections
/// ([`Error::NotStreamable`]).
pub async fn write(
    stream: QueryStream,
    format: Format,
    destination: &mut Destination,
) -> Result<Completion, Error> {
    encode(stream, format, |bytes| destination.write_bytes(&bytes)).await
}
