//! Parquet and Arrow IPC (file and stream), batch by batch: an answer of any size holds one
//! batch (and, for Parquet, one row group) in memory. What is known only at the end (rows,
//! `input_rows`, `truncated`) is written last into the files, as their `quarry` key-value
//! metadata (JSON); the Arrow stream format has no place for it once the schema is sent.

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::writer::{FileWriter, StreamWriter};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::metadata::KeyValue;
use datafusion::parquet::file::properties::WriterProperties;

use super::encoder::Encode;
use super::sink::Sink;
use super::text::writer;
use crate::answer::{Attachment, Completion, ResultMeta};
use crate::error::Error;

/// Rows per Parquet row group: small enough to bound the writer's memory, large enough for
/// good compression and for readers to skip groups by their statistics.
const ROW_GROUP_ROWS: usize = 128 * 1024;

/// The key of the metadata quarry writes into a file.
pub const METADATA_KEY: &str = "quarry";

/// An Arrow IPC file.
#[derive(Default)]
pub struct ArrowFileEncoder {
    writer: Option<FileWriter<Sink>>,
    meta: Option<ResultMeta>,
}

impl Encode for ArrowFileEncoder {
    fn begin(&mut self, out: &Sink, meta: &ResultMeta, schema: &SchemaRef) -> Result<(), Error> {
        self.writer = Some(FileWriter::try_new(out.clone(), schema).map_err(Error::failed)?);
        self.meta = Some(meta.clone());
        Ok(())
    }

    fn batch(&mut self, batch: &RecordBatch) -> Result<(), Error> {
        writer(&mut self.writer)?
            .write(batch)
            .map_err(Error::failed)
    }

    fn finish(&mut self, completion: &Completion, _attached: &[Attachment]) -> Result<(), Error> {
        let metadata = metadata(self.meta.as_ref(), completion);
        let writer = writer(&mut self.writer)?;
        writer.write_metadata(METADATA_KEY, metadata);
        writer.finish().map_err(Error::failed)
    }
}

/// An Arrow IPC stream: the schema message, then one message per batch, then the end marker.
#[derive(Default)]
pub struct ArrowStreamEncoder {
    writer: Option<StreamWriter<Sink>>,
}

impl Encode for ArrowStreamEncoder {
    fn begin(&mut self, out: &Sink, _meta: &ResultMeta, schema: &SchemaRef) -> Result<(), Error> {
        self.writer = Some(StreamWriter::try_new(out.clone(), schema).map_err(Error::failed)?);
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

/// Parquet, zstd-compressed.
#[derive(Default)]
pub struct ParquetEncoder {
    writer: Option<ArrowWriter<Sink>>,
    meta: Option<ResultMeta>,
}

impl Encode for ParquetEncoder {
    fn begin(&mut self, out: &Sink, meta: &ResultMeta, schema: &SchemaRef) -> Result<(), Error> {
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .build();
        self.writer = Some(
            ArrowWriter::try_new(out.clone(), schema.clone(), Some(properties))
                .map_err(Error::failed)?,
        );
        self.meta = Some(meta.clone());
        Ok(())
    }

    fn batch(&mut self, batch: &RecordBatch) -> Result<(), Error> {
        writer(&mut self.writer)?
            .write(batch)
            .map_err(Error::failed)
    }

    fn finish(&mut self, completion: &Completion, _attached: &[Attachment]) -> Result<(), Error> {
        let metadata = metadata(self.meta.as_ref(), completion);
        let mut writer = self.writer.take().ok_or_else(|| {
            Error::Internal("a Parquet answer was finished before it began".into())
        })?;
        writer.append_key_value_metadata(KeyValue::new(METADATA_KEY.to_string(), metadata));
        writer.close().map_err(Error::failed)?;
        Ok(())
    }
}

/// The answer's metadata as the JSON a file carries: what was known up front and at the end.
fn metadata(meta: Option<&ResultMeta>, completion: &Completion) -> String {
    #[derive(serde::Serialize)]
    struct FileMetadata<'a> {
        #[serde(flatten)]
        meta: Option<&'a ResultMeta>,
        #[serde(flatten)]
        completion: &'a Completion,
    }
    serde_json::to_string(&FileMetadata { meta, completion }).unwrap_or_default()
}
