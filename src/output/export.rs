//! Streaming result writers: Parquet, Arrow IPC, CSV and NDJSON are written batch by batch as
//! the plan produces them, so an export of any size holds one batch (and, for Parquet, one row
//! group) in memory. A file is written under a temporary name and renamed when complete, so a
//! failed export never leaves a partial file behind.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::writer::FileWriter;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;
use futures::StreamExt;

use super::{csv_header, csv_rows, ndjson};
use crate::engine::RowSet;
use crate::format::Format;

/// Rows per Parquet row group: small enough to bound the writer's memory, large enough for
/// good compression and for readers to skip groups by their statistics.
const ROW_GROUP_ROWS: usize = 128 * 1024;

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The file name's extension names no format.
    #[error(
        "cannot tell the format of {0} from its extension (use .parquet, .arrow, .csv, .ndjson, .json or .yaml, or give --format)"
    )]
    UnknownExtension(PathBuf),
    /// `-o` was given a URL of a store quarry does not write to.
    #[error("cannot write to {0}: only local paths and file:// URLs are supported")]
    UnsupportedUrl(String),
    /// Writing failed.
    #[error("cannot write {path}: {message}")]
    Write {
        /// The file (or `-` for standard output).
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// The local path an `-o` argument names (`file://` URLs included).
pub fn output_path(target: &str) -> Result<PathBuf, ExportError> {
    if let Some(rest) = target.strip_prefix("file://") {
        return Ok(PathBuf::from(rest));
    }
    if target.contains("://") {
        return Err(ExportError::UnsupportedUrl(target.to_string()));
    }
    Ok(PathBuf::from(target))
}

/// The format a file name's extension names.
pub fn format_for_path(path: &Path) -> Result<Format, ExportError> {
    Format::for_path(path).ok_or_else(|| ExportError::UnknownExtension(path.to_path_buf()))
}

/// Standard output that remembers whether the reader went away (`quarry ... | head`).
struct Stdout {
    closed: Arc<AtomicBool>,
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::io::stdout().write(buf).inspect_err(|e| self.note(e))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().flush().inspect_err(|e| self.note(e))
    }
}

impl Stdout {
    fn note(&self, e: &std::io::Error) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            self.closed.store(true, Ordering::Relaxed);
        }
    }
}

/// A destination that is either standard output or a file completed by renaming.
pub struct Destination {
    out: Box<dyn Write + Send>,
    finish: Option<(PathBuf, PathBuf)>,
    label: String,
    closed: Arc<AtomicBool>,
}

impl Destination {
    /// Standard output.
    pub fn stdout() -> Self {
        let closed = Arc::new(AtomicBool::new(false));
        Destination {
            out: Box::new(BufWriter::new(Stdout {
                closed: closed.clone(),
            })),
            finish: None,
            label: "standard output".into(),
            closed,
        }
    }

    /// Whether the reader of standard output went away (not an error: the output was wanted
    /// only so far).
    pub fn closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// A new file at `path`, written as `path.partial` until [`Destination::commit`].
    pub fn file(path: &Path) -> Result<Self, ExportError> {
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let file = File::create(&partial).map_err(|e| ExportError::Write {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Ok(Destination {
            out: Box::new(BufWriter::with_capacity(1 << 20, file)),
            finish: Some((partial, path.to_path_buf())),
            label: path.display().to_string(),
            closed: Arc::new(AtomicBool::new(false)),
        })
    }

    fn error(&self, e: impl std::fmt::Display) -> ExportError {
        ExportError::Write {
            path: self.label.clone(),
            message: e.to_string(),
        }
    }

    /// Writes all of `text`.
    pub fn write_text(&mut self, text: &str) -> Result<(), ExportError> {
        self.out
            .write_all(text.as_bytes())
            .map_err(|e| self.error(e))
    }

    /// Flushes, and moves a file into place.
    pub fn commit(mut self) -> Result<(), ExportError> {
        self.out.flush().map_err(|e| self.error(e))?;
        // Close the file before it moves into place.
        drop(std::mem::replace(&mut self.out, Box::new(std::io::sink())));
        if let Some((partial, path)) = self.finish.take() {
            std::fs::rename(&partial, &path).map_err(|e| ExportError::Write {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
        }
        Ok(())
    }
}

impl Drop for Destination {
    fn drop(&mut self) {
        // Not committed: remove the partial file.
        if let Some((partial, _)) = self.finish.take() {
            let _ = std::fs::remove_file(partial);
        }
    }
}

/// One writer per streaming format.
enum BatchWriter<'a> {
    Parquet(ArrowWriter<&'a mut (dyn Write + Send)>),
    Arrow(FileWriter<&'a mut (dyn Write + Send)>),
    Csv(&'a mut (dyn Write + Send)),
    Ndjson(&'a mut (dyn Write + Send)),
}

impl<'a> BatchWriter<'a> {
    fn new(
        format: Format,
        schema: &SchemaRef,
        out: &'a mut (dyn Write + Send),
    ) -> Result<Self, String> {
        Ok(match format {
            Format::Parquet => {
                let properties = WriterProperties::builder()
                    .set_compression(Compression::ZSTD(ZstdLevel::default()))
                    .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
                    .build();
                BatchWriter::Parquet(
                    ArrowWriter::try_new(out, schema.clone(), Some(properties))
                        .map_err(|e| e.to_string())?,
                )
            }
            Format::Arrow => {
                BatchWriter::Arrow(FileWriter::try_new(out, schema).map_err(|e| e.to_string())?)
            }
            Format::Csv => {
                out.write_all(csv_header(schema).as_bytes())
                    .map_err(|e| e.to_string())?;
                BatchWriter::Csv(out)
            }
            _ => BatchWriter::Ndjson(out),
        })
    }

    fn write(&mut self, schema: &SchemaRef, batch: RecordBatch) -> Result<(), String> {
        let one = |batch| RowSet {
            schema: schema.clone(),
            batches: vec![batch],
        };
        match self {
            BatchWriter::Parquet(w) => w.write(&batch).map_err(|e| e.to_string()),
            BatchWriter::Arrow(w) => w.write(&batch).map_err(|e| e.to_string()),
            BatchWriter::Csv(out) => out
                .write_all(csv_rows(&one(batch)).as_bytes())
                .map_err(|e| e.to_string()),
            BatchWriter::Ndjson(out) => out
                .write_all(ndjson(&one(batch)).as_bytes())
                .map_err(|e| e.to_string()),
        }
    }

    fn finish(self) -> Result<(), String> {
        match self {
            BatchWriter::Parquet(w) => w.close().map(|_| ()).map_err(|e| e.to_string()),
            BatchWriter::Arrow(mut w) => w.finish().map_err(|e| e.to_string()),
            BatchWriter::Csv(_) | BatchWriter::Ndjson(_) => Ok(()),
        }
    }
}

/// Writes every batch of `stream` to `destination` in `format`; returns the number of rows.
/// A failing batch (memory limit, archive error) stops the export with that error.
pub async fn write_stream(
    mut stream: datafusion::physical_plan::SendableRecordBatchStream,
    format: Format,
    destination: &mut Destination,
) -> Result<usize, StreamError> {
    let schema = stream.schema();
    let label = destination.label.clone();
    let write_error = |message: String| {
        StreamError::Export(ExportError::Write {
            path: label.clone(),
            message,
        })
    };
    let mut writer =
        BatchWriter::new(format, &schema, destination.out.as_mut()).map_err(write_error)?;
    let mut rows = 0;
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(StreamError::Execution)?;
        rows += batch.num_rows();
        writer.write(&schema, batch).map_err(write_error)?;
    }
    writer.finish().map_err(write_error)?;
    Ok(rows)
}

/// Why a streamed export stopped.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// The query failed while running.
    #[error(transparent)]
    Execution(datafusion::common::DataFusionError),
    /// The destination could not be written.
    #[error(transparent)]
    Export(#[from] ExportError),
}
