//! Parquet and Arrow IPC files, batch by batch: an export of any size holds one batch (and, for
//! Parquet, one row group) in memory. What is known only at the end (rows, `input_rows`,
//! `truncated`) is written last, as the file's `quarry` key-value metadata (JSON).

use datafusion::arrow::ipc::writer::FileWriter;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::metadata::KeyValue;
use datafusion::parquet::file::properties::WriterProperties;
use futures::StreamExt;

use super::Destination;
use super::destination::write_error;
use crate::api::{Completion, Error, QueryStream, ResultMeta};
use crate::format::Format;

/// Rows per Parquet row group: small enough to bound the writer's memory, large enough for
/// good compression and for readers to skip groups by their statistics.
const ROW_GROUP_ROWS: usize = 128 * 1024;

/// The key of the metadata quarry writes into a file.
pub const METADATA_KEY: &str = "quarry";

/// Streams `stream` to `destination` as Parquet (zstd) or an Arrow IPC file.
pub async fn write(
    mut stream: QueryStream,
    format: Format,
    destination: &mut Destination,
) -> Result<Completion, Error> {
    let schema = stream.schema();
    let label = destination.label().to_string();
    let failed = write_error(&label);
    if format == Format::Parquet {
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .build();
        let mut writer = ArrowWriter::try_new(&mut *destination, schema, Some(properties))
            .map_err(|e| failed(&e))?;
        while let Some(batch) = stream.next().await {
            writer.write(&batch?).map_err(|e| failed(&e))?;
        }
        let completion = stream.finished()?;
        writer.append_key_value_metadata(KeyValue::new(
            METADATA_KEY.to_string(),
            metadata(stream.meta(), &completion),
        ));
        writer.close().map_err(|e| failed(&e))?;
        Ok(completion)
    } else {
        let mut writer = FileWriter::try_new(&mut *destination, &schema).map_err(|e| failed(&e))?;
        while let Some(batch) = stream.next().await {
            writer.write(&batch?).map_err(|e| failed(&e))?;
        }
        let completion = stream.finished()?;
        writer.write_metadata(METADATA_KEY, metadata(stream.meta(), &completion));
        writer.finish().map_err(|e| failed(&e))?;
        Ok(completion)
    }
}

/// The answer's metadata as the JSON a file carries: what was known up front and at the end.
fn metadata(meta: &ResultMeta, completion: &Completion) -> String {
    #[derive(serde::Serialize)]
    struct FileMetadata<'a> {
        #[serde(flatten)]
        meta: &'a ResultMeta,
        #[serde(flatten)]
        completion: &'a Completion,
    }
    serde_json::to_string(&FileMetadata { meta, completion }).unwrap_or_default()
}
