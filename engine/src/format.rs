//! The output formats, shared by every front end (the command line's `--format` and `-o FILE`)
//! and the encoders. No front end's types appear here.

use std::path::Path;

/// How results (and verbs' reports) are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A table for people (the default).
    Table,
    /// One JSON document: the envelope.
    Json,
    /// One JSON document in the SQL data access spec's shape: `{"columns":[names],"rows":[[...]],
    /// "truncated":..,"skipped_partitions":..}`.
    SqlJson,
    /// One JSON object per row.
    Ndjson,
    /// Comma-separated values with a header.
    Csv,
    /// The envelope as YAML.
    Yaml,
    /// One self-contained HTML document (no script, no other host): a query's answer as a
    /// table; a report as its dashboards, charts inline.
    Html,
    /// Arrow IPC file (binary; streamed; the footer comes last).
    Arrow,
    /// Arrow IPC stream (binary; streamed, readable as it arrives).
    ArrowStream,
    /// Parquet, zstd-compressed (binary; streamed).
    Parquet,
}

impl Format {
    /// Every format, in the order help texts list them.
    pub const ALL: [Format; 10] = [
        Format::Table,
        Format::Json,
        Format::SqlJson,
        Format::Ndjson,
        Format::Csv,
        Format::Yaml,
        Format::Html,
        Format::Arrow,
        Format::ArrowStream,
        Format::Parquet,
    ];

    /// The format called `name` (`table`, `json`, `sql-json`, `ndjson`, `csv`, `yaml`, `html`, `arrow`,
    /// `arrow-stream`, `parquet`).
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::SqlJson => "sql-json",
            Format::Ndjson => "ndjson",
            Format::Csv => "csv",
            Format::Yaml => "yaml",
            Format::Html => "html",
            Format::Arrow => "arrow",
            Format::ArrowStream => "arrow-stream",
            Format::Parquet => "parquet",
        }
    }

    /// The media type of an answer in this format (an HTTP `Content-Type`).
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Table => "text/plain; charset=utf-8",
            Format::Json | Format::SqlJson => "application/json",
            Format::Ndjson => "application/x-ndjson",
            Format::Csv => "text/csv; charset=utf-8",
            Format::Yaml => "application/yaml",
            Format::Html => "text/html; charset=utf-8",
            Format::Arrow => "application/vnd.apache.arrow.file",
            Format::ArrowStream => "application/vnd.apache.arrow.stream",
            Format::Parquet => "application/vnd.apache.parquet",
        }
    }

    /// The format an HTTP `Accept` header asks for (never HTML: a browser's navigation lists
    /// `text/html` first, and the API answers it as it answers anyone): the first media type it
    /// lists (in order,
    /// quality values ignored) that names a format; `json` is `fallback` (the envelope, or the
    /// SQL shape). `None` when it names none and does not accept any type (`*/*`).
    pub fn from_accept(accept: &str, fallback: Format) -> Option<Format> {
        if accept.trim().is_empty() {
            return Some(fallback);
        }
        for item in accept.split(',') {
            let media = item
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase();
            let format = match media.as_str() {
                "application/json" | "application/*" | "*/*" => fallback,
                "application/x-ndjson" | "application/jsonl" | "application/ndjson" => {
                    Format::Ndjson
                }
                "text/csv" => Format::Csv,
                "application/yaml" | "application/x-yaml" | "text/yaml" => Format::Yaml,
                "text/plain" => Format::Table,
                "application/vnd.apache.arrow.stream" => Format::ArrowStream,
                "application/vnd.apache.arrow.file" => Format::Arrow,
                "application/vnd.apache.parquet" | "application/x-parquet" => Format::Parquet,
                _ => continue,
            };
            return Some(format);
        }
        None
    }

    /// Whether the format is binary (never written to a terminal).
    pub fn is_binary(self) -> bool {
        matches!(self, Format::Arrow | Format::ArrowStream | Format::Parquet)
    }

    /// Whether results in this format are written batch by batch rather than as one envelope.
    pub fn streams(self) -> bool {
        matches!(
            self,
            Format::Parquet | Format::Arrow | Format::ArrowStream | Format::Csv | Format::Ndjson
        )
    }

    /// The format a file name's extension names, if any.
    pub fn for_path(path: &Path) -> Option<Format> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match extension.as_str() {
            "parquet" | "pq" => Format::Parquet,
            "arrow" | "ipc" | "feather" => Format::Arrow,
            "arrows" => Format::ArrowStream,
            "csv" => Format::Csv,
            "ndjson" | "jsonl" => Format::Ndjson,
            "json" => Format::Json,
            "yaml" | "yml" => Format::Yaml,
            "html" | "htm" => Format::Html,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers_name_formats() {
        let json = Format::Json;
        assert_eq!(Format::from_accept("", json), Some(Format::Json));
        assert_eq!(
            Format::from_accept("*/*", Format::SqlJson),
            Some(Format::SqlJson)
        );
        assert_eq!(
            Format::from_accept("application/vnd.apache.arrow.stream", json),
            Some(Format::ArrowStream)
        );
        assert_eq!(
            Format::from_accept("text/html, application/x-ndjson;q=0.9", json),
            Some(Format::Ndjson)
        );
        assert_eq!(Format::from_accept("image/png", json), None);
        // A browser's navigation asks for text/html first: the API still answers JSON there.
        assert_eq!(Format::from_accept("text/html", json), None);
        for format in Format::ALL.into_iter().filter(|f| *f != Format::Html) {
            let media = format.media_type().split(';').next().unwrap_or_default();
            let fallback = if format == Format::SqlJson {
                Format::SqlJson
            } else {
                json
            };
            assert_eq!(
                Format::from_accept(media, fallback),
                Some(format),
                "{media}"
            );
        }
    }
}
