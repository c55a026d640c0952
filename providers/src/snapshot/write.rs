//! Writing and refreshing a snapshot.
//!
//! One read transaction on the archive decides the generation the snapshot is as of and reads
//! every row it writes, so the files agree with each other and with that generation. The rows
//! of each (table, partition) are read session by session (sessions in order of creation, each
//! session's rows in insertion order, through the tables' session indexes), gathered into
//! batches on a blocking thread and written as one Parquet file through the object store; only
//! when every file is complete is the new manifest published. A refresh rewrites the partitions
//! `snapshot_changes` records as changed since the previous manifest's generation and keeps the
//! previous files of every other partition. Files that neither the new nor the previous manifest
//! names (the previous one may still be in use by a running query) are removed last.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc;
use datafusion::arrow::record_batch::RecordBatch;
use futures::TryStreamExt;
use object_store::ObjectStoreExt;
use object_store::buffered::BufWriter;
use parquet::arrow::AsyncArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use quarry_schema::Table;
use rusqlite::{Connection, OpenFlags};

use super::SnapshotError;
use super::manifest::{self, FORMAT, FileEntry, LAYOUT, Manifest, PartitionFiles, TableFiles};
use crate::sqlite::arrow_schema;
use crate::sqlite::scan::BatchBuilder;
use crate::store::Location;
use quarry_archive::schema::{SCHEMA_VERSION, SNAPSHOT_PARTITION, WHOLE_TABLE_PARTITION};

/// Rows per batch handed from the reader to the writer.
const BATCH_ROWS: usize = 8192;

/// How a snapshot is written.
#[derive(Debug, Clone)]
pub struct WriteSettings {
    /// The Parquet codec: `zstd` (level 1), `zstd(N)`, `lz4`, `snappy` or `none`.
    pub compression: String,
    /// The codec of every table's `text` column, where most of the bytes are and which a text
    /// search decompresses whole; `None` for [`WriteSettings::compression`].
    pub text_compression: Option<String>,
    /// Rows per row group.
    pub row_group_rows: usize,
    /// Dictionary-encode Parquet columns (on by default; off is one of the measured layouts).
    pub dictionary: bool,
    /// `parquet`, or `arrow` (Arrow IPC files, uncompressed, no decode: a local-only layout the
    /// measurements compare).
    pub file_format: String,
    /// Rewrite every partition, whatever changed.
    pub full: bool,
}

impl Default for WriteSettings {
    /// The layout the measurements in `docs/benchmarks.md` chose.
    fn default() -> Self {
        WriteSettings {
            compression: "zstd(1)".into(),
            text_compression: Some("none".into()),
            row_group_rows: 131_072,
            dictionary: true,
            file_format: "parquet".into(),
            full: false,
        }
    }
}

/// What one table's refresh did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TableReport {
    /// The table.
    pub table: String,
    /// Its rows in the new snapshot.
    pub rows: u64,
    /// Partitions written anew.
    pub partitions_written: usize,
    /// Partitions whose previous files were kept.
    pub partitions_kept: usize,
    /// Rows written anew.
    pub rows_written: u64,
}

/// What a snapshot write did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WriteReport {
    /// Where.
    pub location: String,
    /// The generation the snapshot is now as of.
    pub generation: i64,
    /// The generation it was as of before (`None`: there was none, or it was rewritten whole).
    pub previous_generation: Option<i64>,
    /// Whether every partition was written (no usable previous snapshot, or `--full`).
    pub full: bool,
    /// Nothing had changed: the previous manifest still holds.
    pub unchanged: bool,
    /// Per table.
    pub tables: Vec<TableReport>,
    /// Files written, relative to the snapshot's root.
    pub files_written: Vec<String>,
    /// Files removed (neither the new nor the previous manifest names them).
    pub files_removed: usize,
    /// Bytes of the files the new manifest names.
    pub bytes: u64,
}

/// One (table, partition) to write.
struct Job {
    table: &'static Table,
    partition: String,
}

/// What the reader decided, sent before any rows.
struct Plan {
    generation: i64,
    jobs: Vec<(String, String)>,
    counts: BTreeMap<String, u64>,
    full: bool,
}

/// What the reader sends.
enum Message {
    Plan(Plan),
    /// Rows of job `n`.
    Rows(usize, RecordBatch),
    /// Job `n` has no more rows.
    Done(usize),
}

/// Writes or refreshes the snapshot of the archive at `archive` under `root`; `progress` hears
/// of each table when its files are written.
pub async fn write_snapshot(
    archive: &Path,
    root: &Location,
    settings: &WriteSettings,
    progress: &(dyn Fn(&TableReport) + Send + Sync),
) -> Result<WriteReport, SnapshotError> {
    let compression = codec(&settings.compression)?;
    let text_compression = settings
        .text_compression
        .as_deref()
        .map(codec)
        .transpose()?;
    let previous = match manifest::read(root).await {
        Ok(found) => found,
        // An unreadable manifest is replaced by a whole new snapshot.
        Err(SnapshotError::Manifest { .. }) => None,
        Err(e) => return Err(e),
    };
    let reusable = previous.clone().filter(|m| {
        !settings.full
            && m.layout == LAYOUT
            && m.schema_version == SCHEMA_VERSION
            && m.compression == settings.compression
            && m.text_compression == settings.text_compression
            && m.row_group_rows == settings.row_group_rows
            && m.dictionary == settings.dictionary
            && m.file_format == settings.file_format
    });
    let arrow = match settings.file_format.as_str() {
        "parquet" => false,
        "arrow" if root.is_local() => true,
        "arrow" => {
            return Err(SnapshotError::Setting(
                "an Arrow IPC snapshot is a local layout: give a folder, not an object store URL"
                    .into(),
            ));
        }
        other => {
            return Err(SnapshotError::Setting(format!(
                "unknown snapshot file format {other:?}: use parquet or arrow"
            )));
        }
    };
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Result<Message, SnapshotError>>(4);
    let path = archive.to_path_buf();
    let since = reusable.as_ref().map(|m| m.generation);
    let reader = tokio::task::spawn_blocking(move || {
        if let Err(e) = read_archive(&path, since, &sender) {
            let _ = sender.blocking_send(Err(e));
        }
    });
    let plan = match receiver.recv().await {
        Some(Ok(Message::Plan(plan))) => plan,
        Some(Err(e)) => return Err(e),
        _ => {
            return Err(SnapshotError::Internal(
                "the archive reader stopped early".into(),
            ));
        }
    };
    if let Some(previous) = &reusable
        && plan.jobs.is_empty()
        && previous.generation == plan.generation
    {
        let _ = reader.await;
        return Ok(WriteReport {
            location: root.display.clone(),
            generation: plan.generation,
            previous_generation: Some(previous.generation),
            full: false,
            unchanged: true,
            tables: Vec::new(),
            files_written: Vec::new(),
            files_removed: 0,
            bytes: previous.bytes(),
        });
    }
    let mut properties = WriterProperties::builder()
        .set_compression(compression)
        .set_max_row_group_row_count(Some(settings.row_group_rows.max(1)))
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_dictionary_enabled(settings.dictionary);
    if let Some(text) = text_compression {
        properties = properties.set_column_compression(ColumnPath::from("text"), text);
    }
    let properties = properties.build();
    let extension = if arrow { "arrow" } else { "parquet" };
    let stamp = chrono_stamp();
    let mut writers: Vec<Option<FileWriter>> = plan.jobs.iter().map(|_| None).collect();
    let mut written: BTreeMap<(String, String), FileEntry> = BTreeMap::new();
    while let Some(message) = receiver.recv().await {
        match message? {
            Message::Plan(_) => {
                return Err(SnapshotError::Internal("a second plan".into()));
            }
            Message::Rows(n, batch) => {
                let slot = &mut writers[n];
                if slot.is_none() {
                    let (table, partition) = &plan.jobs[n];
                    let relative = format!(
                        "data/{table}/{partition}/g{}-{stamp}.{extension}",
                        plan.generation
                    );
                    *slot = Some(if arrow {
                        FileWriter::open_arrow(root, relative, &batch.schema())?
                    } else {
                        FileWriter::open(root, relative, batch.schema(), &properties)?
                    });
                }
                if let Some(writer) = slot {
                    writer.write(&batch).await?;
                }
            }
            Message::Done(n) => {
                if let Some(writer) = writers[n].take() {
                    let entry = writer.close(root).await?;
                    written.insert(plan.jobs[n].clone(), entry);
                }
            }
        }
    }
    reader
        .await
        .map_err(|e| SnapshotError::Internal(format!("the archive reader failed: {e}")))?;

    // The new manifest: rewritten partitions from this run, the others from the previous one.
    let rewritten: HashSet<&(String, String)> = plan.jobs.iter().collect();
    let mut tables = BTreeMap::new();
    let mut reports = Vec::new();
    for def in quarry_schema::CATALOG {
        let name = def.name.to_string();
        let mut partitions = BTreeMap::new();
        let mut report = TableReport {
            table: name.clone(),
            rows: 0,
            partitions_written: 0,
            partitions_kept: 0,
            rows_written: 0,
        };
        if !plan.full
            && let Some(old) = reusable.as_ref().and_then(|m| m.tables.get(&name))
        {
            for (key, files) in &old.partitions {
                if !rewritten.contains(&(name.clone(), key.clone())) {
                    partitions.insert(key.clone(), files.clone());
                    report.partitions_kept += 1;
                }
            }
        }
        for ((table, key), entry) in written.range((name.clone(), String::new())..) {
            if *table != name {
                break;
            }
            report.partitions_written += 1;
            report.rows_written += entry.rows;
            partitions.insert(
                key.clone(),
                PartitionFiles {
                    generation: plan.generation,
                    files: vec![entry.clone()],
                },
            );
        }
        report.rows = partitions
            .values()
            .flat_map(|p| p.files.iter())
            .map(|f| f.rows)
            .sum();
        let expected = plan.counts.get(&name).copied().unwrap_or(0);
        if report.rows != expected {
            return Err(SnapshotError::Inconsistent {
                table: name,
                snapshot: report.rows,
                archive: expected,
            });
        }
        progress(&report);
        tables.insert(
            name,
            TableFiles {
                rows: report.rows,
                partitions,
            },
        );
        reports.push(report);
    }
    let manifest = Manifest {
        format: FORMAT.to_string(),
        layout: LAYOUT,
        schema_version: SCHEMA_VERSION,
        generation: plan.generation,
        written_at_ms: now_ms(),
        compression: settings.compression.clone(),
        text_compression: settings.text_compression.clone(),
        row_group_rows: settings.row_group_rows,
        dictionary: settings.dictionary,
        file_format: settings.file_format.clone(),
        tables,
    };
    manifest::publish(root, &manifest).await?;
    let files_removed = remove_unreferenced(root, &manifest, previous.as_ref()).await?;
    Ok(WriteReport {
        location: root.display.clone(),
        generation: manifest.generation,
        previous_generation: reusable
            .as_ref()
            .filter(|_| !plan.full)
            .map(|m| m.generation),
        full: plan.full,
        unchanged: false,
        tables: reports,
        files_written: written.values().map(|f| f.path.clone()).collect(),
        files_removed,
        bytes: manifest.bytes(),
    })
}

/// Checks that `name` names a Parquet codec (`zstd`, `zstd(LEVEL)`, `lz4`, `snappy`, `none`):
/// what a command line's value parser asks before any work starts.
pub fn check_codec(name: &str) -> Result<(), SnapshotError> {
    codec(name).map(|_| ())
}

/// The Parquet codec `name` names.
fn codec(name: &str) -> Result<Compression, SnapshotError> {
    let bad = || {
        SnapshotError::Setting(format!(
            "unknown compression {name:?}: use zstd, zstd(LEVEL), lz4, snappy or none"
        ))
    };
    Ok(match name {
        "none" => Compression::UNCOMPRESSED,
        "lz4" => Compression::LZ4_RAW,
        "snappy" => Compression::SNAPPY,
        "zstd" => Compression::ZSTD(ZstdLevel::default()),
        other => {
            let level = other
                .strip_prefix("zstd(")
                .and_then(|l| l.strip_suffix(')'))
                .and_then(|l| l.parse().ok())
                .ok_or_else(bad)?;
            Compression::ZSTD(ZstdLevel::try_new(level).map_err(|_| bad())?)
        }
    })
}

/// One file being written.
struct FileWriter {
    relative: String,
    sink: Sink,
    rows: u64,
}

/// Where a file's batches go.
enum Sink {
    /// Parquet through the object store.
    Parquet(AsyncArrowWriter<BufWriter>),
    /// An Arrow IPC file on the local file system, renamed into place when complete.
    Arrow {
        writer: ipc::writer::FileWriter<std::io::BufWriter<std::fs::File>>,
        staged: PathBuf,
        path: PathBuf,
    },
}

impl FileWriter {
    fn open(
        root: &Location,
        relative: String,
        schema: SchemaRef,
        properties: &WriterProperties,
    ) -> Result<Self, SnapshotError> {
        let sink = BufWriter::with_capacity(
            Arc::clone(&root.store),
            root.child(&relative),
            16 * 1024 * 1024,
        );
        let writer = AsyncArrowWriter::try_new(sink, schema, Some(properties.clone()))
            .map_err(|e| SnapshotError::write(&relative, e))?;
        Ok(FileWriter {
            relative,
            sink: Sink::Parquet(writer),
            rows: 0,
        })
    }

    fn open_arrow(
        root: &Location,
        relative: String,
        schema: &SchemaRef,
    ) -> Result<Self, SnapshotError> {
        let path = PathBuf::from(format!("/{}", root.child(&relative)));
        let staged = path.with_extension("arrow.partial");
        let fail = |e: &dyn std::fmt::Display| SnapshotError::write(&relative, e);
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).map_err(|e| fail(&e))?;
        }
        let file = std::fs::File::create(&staged).map_err(|e| fail(&e))?;
        let writer = ipc::writer::FileWriter::try_new(std::io::BufWriter::new(file), schema)
            .map_err(|e| fail(&e))?;
        Ok(FileWriter {
            relative,
            sink: Sink::Arrow {
                writer,
                staged,
                path,
            },
            rows: 0,
        })
    }

    async fn write(&mut self, batch: &RecordBatch) -> Result<(), SnapshotError> {
        self.rows += batch.num_rows() as u64;
        let done = match &mut self.sink {
            Sink::Parquet(writer) => writer.write(batch).await.map_err(|e| e.to_string()),
            Sink::Arrow { writer, .. } => writer.write(batch).map_err(|e| e.to_string()),
        };
        done.map_err(|e| SnapshotError::write(&self.relative, e))
    }

    async fn close(self, root: &Location) -> Result<FileEntry, SnapshotError> {
        let relative = self.relative;
        let done = match self.sink {
            Sink::Parquet(writer) => writer.close().await.map(|_| ()).map_err(|e| e.to_string()),
            Sink::Arrow {
                mut writer,
                staged,
                path,
            } => writer
                .finish()
                .map_err(|e| e.to_string())
                .and_then(|()| std::fs::rename(&staged, &path).map_err(|e| e.to_string())),
        };
        done.map_err(|e| SnapshotError::write(&relative, e))?;
        let meta = root
            .store
            .head(&root.child(&relative))
            .await
            .map_err(|e| SnapshotError::store(root, e))?;
        Ok(FileEntry {
            path: relative,
            rows: self.rows,
            bytes: meta.size,
        })
    }
}

/// Removes files under `data/` that neither `current` nor `previous` names (those of older
/// snapshots, and those an interrupted write left). Returns how many.
async fn remove_unreferenced(
    root: &Location,
    current: &Manifest,
    previous: Option<&Manifest>,
) -> Result<usize, SnapshotError> {
    let keep: HashSet<object_store::path::Path> = current
        .files()
        .chain(previous.into_iter().flat_map(Manifest::files))
        .map(|f| root.child(&f.path))
        .collect();
    let listed: Vec<object_store::ObjectMeta> = root
        .store
        .list(Some(&root.child("data")))
        .try_collect()
        .await
        .map_err(|e| SnapshotError::store(root, e))?;
    let mut removed = 0;
    for object in listed {
        if !keep.contains(&object.location) {
            root.store
                .delete(&object.location)
                .await
                .map_err(|e| SnapshotError::store(root, e))?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Reads, in one transaction, the plan and then the rows of every job (see the module docs).
fn read_archive(
    path: &Path,
    since: Option<i64>,
    sender: &tokio::sync::mpsc::Sender<Result<Message, SnapshotError>>,
) -> Result<(), SnapshotError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // One read transaction: every row below is as of one generation.
    conn.execute_batch("BEGIN")?;
    let generation: i64 = conn.query_row(
        "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation'",
        [],
        |r| r.get(0),
    )?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version != SCHEMA_VERSION {
        return Err(SnapshotError::Setting(format!(
            "the archive is at schema version {version}, this quarry writes snapshots of version {SCHEMA_VERSION}: open it with `quarry tables` once to migrate it"
        )));
    }
    // Sessions by partition, in order of creation.
    let mut sessions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    {
        let mut stmt = conn.prepare(&format!(
            "SELECT session_id, {SNAPSHOT_PARTITION} FROM sessions
             WHERE session_id IS NOT NULL ORDER BY created_at IS NULL, created_at, session_id"
        ))?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        for row in rows {
            let (id, partition) = row?;
            sessions.entry(partition).or_default().push(id);
        }
    }
    let changed: Option<BTreeSet<String>> = match since {
        None => None,
        Some(g) if g > generation => None,
        Some(g) => {
            let mut stmt =
                conn.prepare("SELECT partition FROM snapshot_changes WHERE generation > ?1")?;
            let rows = stmt.query_map([g], |r| r.get::<_, String>(0))?;
            Some(rows.collect::<Result<_, _>>()?)
        }
    };
    let full = changed.is_none();
    let wanted = |partition: &str| changed.as_ref().is_none_or(|c| c.contains(partition));
    let mut jobs = Vec::new();
    let mut counts = BTreeMap::new();
    for table in quarry_schema::CATALOG {
        let count: i64 = conn.query_row(
            &format!("SELECT COUNT(*) FROM \"{}\"", table.name),
            [],
            |r| r.get(0),
        )?;
        counts.insert(table.name.to_string(), count as u64);
        if table.session_key.is_some() {
            for partition in sessions.keys().filter(|p| wanted(p)) {
                jobs.push(Job {
                    table,
                    partition: partition.clone(),
                });
            }
            // A partition that lost all its sessions is rewritten as empty (dropped).
            if let Some(changed) = &changed {
                for partition in changed {
                    if partition != WHOLE_TABLE_PARTITION && !sessions.contains_key(partition) {
                        jobs.push(Job {
                            table,
                            partition: partition.clone(),
                        });
                    }
                }
            }
        } else if wanted(WHOLE_TABLE_PARTITION) {
            jobs.push(Job {
                table,
                partition: WHOLE_TABLE_PARTITION.to_string(),
            });
        }
    }
    let plan = Plan {
        generation,
        jobs: jobs
            .iter()
            .map(|j| (j.table.name.to_string(), j.partition.clone()))
            .collect(),
        counts,
        full,
    };
    if sender.blocking_send(Ok(Message::Plan(plan))).is_err() {
        return Ok(());
    }
    for (n, job) in jobs.iter().enumerate() {
        let schema = arrow_schema(job.table);
        let columns = schema
            .fields()
            .iter()
            .map(|f| format!("\"{}\"", f.name()))
            .collect::<Vec<_>>()
            .join(", ");
        let mut batch = BatchBuilder::new(Arc::clone(&schema), BATCH_ROWS);
        let send = |batch: &mut BatchBuilder| -> Result<bool, SnapshotError> {
            let rows = batch
                .finish()
                .map_err(|e| SnapshotError::Internal(e.to_string()))?;
            Ok(sender.blocking_send(Ok(Message::Rows(n, rows))).is_ok())
        };
        // Gathers the rows of one statement; false when the writer has gone away.
        let drain = |mut rows: rusqlite::Rows<'_>, batch: &mut BatchBuilder| {
            while let Some(row) = rows.next()? {
                batch
                    .append(row)
                    .map_err(|e| SnapshotError::Internal(e.to_string()))?;
                if batch.len() == BATCH_ROWS && !send(batch)? {
                    return Ok(false);
                }
            }
            Ok::<bool, SnapshotError>(true)
        };
        let select = format!("SELECT {columns} FROM \"{}\"", job.table.name);
        match job.table.session_key {
            Some(_) => {
                let owned = quarry_archive::of_session(job.table.name)
                    .map_err(|e| SnapshotError::Internal(e.to_string()))?;
                let mut stmt = conn.prepare(&format!("{select} WHERE {owned}"))?;
                for id in sessions.get(&job.partition).into_iter().flatten() {
                    if !drain(stmt.query([id])?, &mut batch)? {
                        return Ok(());
                    }
                }
            }
            None => {
                let mut stmt = conn.prepare(&select)?;
                if !drain(stmt.query([])?, &mut batch)? {
                    return Ok(());
                }
            }
        }
        if batch.len() > 0 && !send(&mut batch)? {
            return Ok(());
        }
        if sender.blocking_send(Ok(Message::Done(n))).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// A name part unique to this write (a killed write's files never collide with the next one's).
fn chrono_stamp() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{nanos:x}-{:x}", std::process::id())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}
