//! NDJSON and CSV, batch by batch, with arrow's own writers: one JSON object per row (nulls
//! written as `null`), or comma-separated values under one header line.

use datafusion::arrow::csv::WriterBuilder as CsvWriterBuilder;
use datafusion::arrow::json::writer::LineDelimited;
use datafusion::arrow::json::{LineDelimitedWriter, WriterBuilder as JsonWriterBuilder};
use futures::StreamExt;

use super::Destination;
use crate::api::{Completion, Error, QueryStream};
use crate::format::Format;

/// Streams `stream` to `destination` as NDJSON or CSV.
pub async fn write(
    mut stream: QueryStream,
    format: Format,
    destination: &mut Destination,
) -> Result<Completion, Error> {
    let label = destination.label().to_string();
    let failed = |e: &dyn std::fmt::Display| Error::Write {
        path: label.clone(),
        message: e.to_string(),
    };
    if format == Format::Csv {
        let mut writer = CsvWriterBuilder::new()
            .with_header(true)
            .build(&mut *destination);
        let mut wrote_any = false;
        while let Some(batch) = stream.next().await {
            writer.write(&batch?).map_err(|e| failed(&e))?;
            wrote_any = true;
        }
        // `write` flushes every batch; dropping the writer releases the destination.
        drop(writer);
        if !wrote_any {
            // No batch, no header from the writer: the header alone says what the columns are.
            let schema = stream.schema();
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            destination
                .write_text(&(csv_line(&names) + "\n"))
                .map_err(|e| failed(&e))?;
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
    stream
        .completion()
        .ok_or_else(|| Error::Execution("the answer's stream did not end".into()))
}

/// One CSV line of `fields`, quoted where a field needs it.
fn csv_line(fields: &[&str]) -> String {
    fields
        .iter()
        .map(|f| {
            if f.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", f.replace('"', "\"\""))
            } else {
                (*f).to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}
