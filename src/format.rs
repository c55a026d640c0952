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
    /// Arrow IPC file (binary; streamed).
    Arrow,
    /// Parquet, zstd-compressed (binary; streamed).
    Parquet,
}

impl Format {
    /// Every format, in the order help texts list them.
    pub const ALL: [Format; 8] = [
        Format::Table,
        Format::Json,
        Format::SqlJson,
        Format::Ndjson,
        Format::Csv,
        Format::Yaml,
        Format::Arrow,
        Format::Parquet,
    ];

    /// The format called `name` (`table`, `json`, `sql-json`, `ndjson`, `csv`, `yaml`, `arrow`, `parquet`).
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
            Format::Arrow => "arrow",
            Format::Parquet => "parquet",
        }
    }

    /// Whether the format is binary (never written to a terminal).
    pub fn is_binary(self) -> bool {
        matches!(self, Format::Arrow | Format::Parquet)
    }

    /// Whether results in this format are written batch by batch rather than as one envelope.
    pub fn streams(self) -> bool {
        matches!(
            self,
            Format::Parquet | Format::Arrow | Format::Csv | Format::Ndjson
        )
    }

    /// The format a file name's extension names, if any.
    pub fn for_path(path: &Path) -> Option<Format> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match extension.as_str() {
            "parquet" | "pq" => Format::Parquet,
            "arrow" | "ipc" | "feather" => Format::Arrow,
            "csv" => Format::Csv,
            "ndjson" | "jsonl" => Format::Ndjson,
            "json" => Format::Json,
            "yaml" | "yml" => Format::Yaml,
            _ => return None,
        })
    }
}
