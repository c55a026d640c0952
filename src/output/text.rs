//! NDJSON and CSV, batch by batch, with arrow's own writers: one JSON object per row (nulls
//! written as `null`), or comma-separated values under one header line.

use datafusion::arrow::csv::WriterBuilder as CsvWriterBuilder;
use datafusion::arrow::json::writer::LineDelimited;
use datafusion::arrow::json::{LineDelimitedWriter, WriterBuilder as JsonWriterBuilder};
use futures::StreamExt;

use datafusion::arrow::record_batch::RecordBatch;

use super::Destination;
use super::destination::write_error;
use crate::api::{Completion, Error, QueryStream};
use crate::format::Format;

/// Streams `stream` to `destination` as NDJSON or CSV.
pub async fn write(
    mut stream: QueryStream,
    format: Format,
    destination: &mut Destination,
) -> Result<Completion, Error> {
    let label = destination.label().to_string();
    let failed = write_error(&label);
    if format == Format::Csv {
        let mut writer = CsvWriterBuilder::new()
            .with_header(true)
            .build(&mut *destination);
        let mut wrote_any = false;
        while let Some(batch) = stream.next().await {
            writer.write(&batch?).map_err(|e| failed(&e))?;
            wrote_any = true;
        }
        if !wrote_any {
            // No rows: the header alone says what the columns are.
            let empty = RecordBatch::new_empty(stream.schema());
            writer.write(&empty).map_err(|e| failed(&e))?;
        }
    } else {
        let mut writer: LineDelimitedWriter<&mut Destination> = JsonWriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, LineDelimited>(&mut *destination);
        while let Some(batch) = stream.next().await {
            writer.write(&batch?).map_err(|e| failed(&e))?;
        }
        writer.finish().map_err(|e| failed(&e))?;
    }
    stream.finished()
}
