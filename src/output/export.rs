//! Streaming result writers: Parquet, Arrow IPC, CSV and NDJSON are written batch by batch as
//! the plan produces them, so an export of any size holds one batch (and, for Parquet, one row
//! group) in memory. A file is written under a unique temporary name in its folder, synced and
//! renamed when complete, so a failed export never leaves a partial file behind and two exports
//! to one path never mix.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::writer::FileWriter;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;
use futures::StreamExt;
use tempfile::NamedTempFile;

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
    closed: bool,
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
    fn note(&mut self, e: &std::io::Error) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            self.closed = true;
        }
    }
}

/// Where the bytes go.
enum Sink {
    Stdout(BufWriter<Stdout>),
    /// A uniquely named temporary file beside the target (removed unless persisted).
    File(BufWriter<NamedTempFile>, PathBuf),
}

/// A destination that is either standard output or a file that appears whole at its path when
/// committed, or not at all.
pub struct Destination {
    sink: Sink,
    label: String,
}

impl Destination {
    /// Standard output.
    pub fn stdout() -> Self {
        Destination {
            sink: Sink::Stdout(BufWriter::new(Stdout { closed: false })),
            label: "standard output".into(),
        }
    }

    /// A new file at `path`, written under a temporary name in the same folder until
    /// [`Destination::commit`].
    pub fn file(path: &Path) -> Result<Self, ExportError> {
        let label = path.display().to_string();
        let error = |e: std::io::Error| ExportError::Write {
            path: label.clone(),
            message: e.to_string(),
        };
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.is_dir() {
            return Err(error(std::io::Error::other("it is a folder")));
        }
        let file = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".partial")
            .tempfile_in(&folder)
            .map_err(error)?;
        Ok(Destination {
            sink: Sink::File(BufWriter::with_capacity(1 << 20, file), path.to_path_buf()),
            label,
        })
    }

    /// Whether the reader of standard output went away (not an error: the output was wanted
    /// only so far).
    pub fn closed(&self) -> bool {
        matches!(&self.sink, Sink::Stdout(w) if w.get_ref().closed)
    }

    fn error(&self, e: impl std::fmt::Display) -> ExportError {
        ExportError::Write {
            path: self.label.clone(),
            message: e.to_string(),
        }
    }

    /// Writes all of `text` (nothing, without error, once standard output's reader is gone).
    pub fn write_text(&mut self, text: &str) -> Result<(), ExportError> {
        match self.write_all(text.as_bytes()) {
            Err(_) if self.closed() => Ok(()),
            other => other.map_err(|e| self.error(e)),
        }
    }

    /// Flushes standard output (a reader that went away is not an error), or syncs the file and
    /// moves it into place.
    pub fn commit(self) -> Result<(), ExportError> {
        let label = self.label;
        let error = |e: &dyn std::fmt::Display| ExportError::Write {
            path: label.clone(),
            message: e.to_string(),
        };
        match self.sink {
            Sink::Stdout(mut out) => match out.flush() {
                Err(_) if out.get_ref().closed => Ok(()),
                other => other.map_err(|e| error(&e)),
            },
            Sink::File(out, path) => {
                let file = out
                    .into_inner()
                    .map_err(|e| error(&e.error().to_string()))?;
                file.as_file().sync_all().map_err(|e| error(&e))?;
                file.persist(&path).map_err(|e| error(&e.error))?;
                Ok(())
            }
        }
    }
}

impl Write for Destination {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.sink {
            Sink::Stdout(w) => w.write(buf),
            Sink::File(w, _) => w.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.sink {
            Sink::Stdout(w) => w.flush(),
            Sink::File(w, _) => w.flush(),
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
    let mut writer = BatchWriter::new(format, &schema, destination).map_err(write_error)?;
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
