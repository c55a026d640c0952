//! Where an answer's bytes go: standard output, or a file that appears whole at its path when
//! committed, or not at all. A file is written under a unique temporary name in its folder,
//! synced and renamed, so a failed export never leaves a partial file and two exports to one path
//! never mix; it gets the ordinary mode of a new file (0666 less the umask: 0644 under 022), so
//! whoever the export is for can read it.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::Error;
use crate::format::Format;

/// The local path an `-o` argument names (`file://` URLs included).
pub fn output_path(target: &str) -> Result<PathBuf, Error> {
    if let Some(rest) = target.strip_prefix("file://") {
        return Ok(PathBuf::from(rest));
    }
    if target.contains("://") {
        return Err(Error::Setting(format!(
            "cannot write to {target}: only local paths and file:// URLs are supported"
        )));
    }
    Ok(PathBuf::from(target))
}

/// The format a file name's extension names.
pub fn format_for_path(path: &Path) -> Result<Format, Error> {
    Format::for_path(path).ok_or_else(|| {
        Error::Setting(format!(
            "cannot tell the format of {} from its extension (use .parquet, .arrow, .csv, .ndjson, .json, .yaml or .html, or give --format)",
            path.display()
        ))
    })
}

/// Turns a writer's failure into the error of writing to `label` (for encoders, whose writer
/// holds the destination while they report).
pub(crate) fn write_error(label: &str) -> impl Fn(&dyn std::fmt::Display) -> Error + '_ {
    move |e| Error::Write {
        path: label.to_string(),
        message: e.to_string(),
    }
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

/// Standard output, or a new file that appears at its path only when [`Destination::commit`]
/// succeeds.
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
    pub fn file(path: &Path) -> Result<Self, Error> {
        let label = path.display().to_string();
        let error = |e: std::io::Error| Error::Write {
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
        let prefix = format!(".{name}.");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".partial");
        // A temporary file is private (0600) by default; an export is an ordinary new file.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let file = builder.tempfile_in(&folder).map_err(error)?;
        Ok(Destination {
            sink: Sink::File(BufWriter::with_capacity(1 << 20, file), path.to_path_buf()),
            label,
        })
    }

    /// What the destination is called in messages (`standard output` or the path).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Whether the reader of standard output went away (not an error: the output was wanted
    /// only so far).
    pub fn closed(&self) -> bool {
        matches!(&self.sink, Sink::Stdout(w) if w.get_ref().closed)
    }

    /// The error of a failed write here.
    pub fn error(&self, e: impl std::fmt::Display) -> Error {
        write_error(&self.label)(&e)
    }

    /// Writes all of `text` (nothing, without error, once standard output's reader is gone).
    pub fn write_text(&mut self, text: &str) -> Result<(), Error> {
        match self.write_bytes(text.as_bytes()) {
            Err(_) if self.closed() => Ok(()),
            other => other,
        }
    }

    /// Writes all of `bytes`. Once standard output's reader is gone this fails, so an answer
    /// stops being computed; [`Destination::closed`] then tells the caller it was no error.
    pub fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.write_all(bytes).map_err(|e| self.error(e))
    }

    /// Flushes standard output (a reader that went away is not an error), or syncs the file and
    /// moves it into place.
    pub fn commit(self) -> Result<(), Error> {
        let label = self.label;
        let error = |e: &dyn std::fmt::Display| Error::Write {
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
