//! quarry's ingest: transcript files on disk into the SQLite archive, with no query engine.
//!
//! Data flows one way: `discover` finds files → `detect` picks an adapter from the content → the
//! adapter (`claude_code`, `codex`, `chatgpt`, `claude_ai`, `gemini`, `aistudio`) reads records
//! into drafts (`model`) → `derive` computes the derived facts → `store` writes each file in one
//! transaction (`writer` batches whole files). Parsing runs on a second thread while the first
//! one writes. A file is checked against its archived hash (`chunks`: for a grown file, only its
//! archived prefix's last chunks); a grown single-session JSONL file is read from where it was
//! left and its session derived again from its last cut (`tail`). [`reindex`] re-derives sessions from the archive's own records; [`assertions`]
//! adds tags, notes and imported claims.
//!
//! The public API is small: [`ingest`] (or [`ingest_reporting`], which tells a callback how far
//! it is; drawing a bar is the caller's business), its [`IngestOptions`], [`Summary`] and
//! [`IngestError`], [`reindex()`], and [`assertions`]. Everything else is private.

mod aider;
mod aistudio;
mod amp;
pub mod assertions;
mod chatgpt;
mod checkpoint;
mod chunks;
mod claude_ai;
mod claude_code;
mod cline;
mod cline_sdk;
mod codex;
mod copilot;
mod crush;
mod cursor;
mod cursor_agent;
#[cfg(test)]
mod damage;
mod derive;
mod detect;
mod discover;
mod gemini;
mod goose;
pub mod judge;
mod kimi;
mod lines;
mod merge;
mod model;
mod opencode;
mod opencode_files;
mod pi;
mod qwen;
mod reindex;
mod sources;
mod store;
mod summary;
mod tail;
mod text;
pub mod watch;
mod writer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Instant;

use rusqlite::{Connection, OpenFlags};

use quarry_archive::Archive;

use self::detect::Format;
use self::discover::Candidate;
pub use self::model::Diagnostic;
use self::model::ParsedFile;
pub use self::reindex::{ReindexSummary, reindex};
use self::store::{FileStamp, FileState};
pub use self::summary::Summary;

/// How far an ingest is, as [`ingest_reporting`] tells its callback after each file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Files found to read.
    pub files_total: usize,
    /// Their bytes.
    pub bytes_total: u64,
    /// Files done (written, unchanged, or skipped with a diagnostic).
    pub files_done: usize,
    /// Their bytes.
    pub bytes_done: u64,
    /// Records read so far.
    pub records: usize,
}

/// What to ingest and how.
#[derive(Debug, Clone, Default)]
pub struct IngestOptions {
    /// Files or folders; empty means the default transcript locations.
    pub paths: Vec<PathBuf>,
    /// Owner recorded on new sessions.
    pub owner: Option<String>,
    /// The machine the files are read on (`source_files.machine`, `sessions.machine`).
    pub machine: Option<String>,
    /// Files whose archived sessions may be replaced although the file was rewritten (not
    /// merely appended to): `quarry ingest --replace PATH`.
    pub replace: Vec<PathBuf>,
    /// Take a file as unchanged, without reading it, when its size is the archived size and it
    /// was last modified before it was archived (the "quick check" of rsync). An append always
    /// changes the size; only a rewrite to the same size that also keeps an older modification
    /// time goes unseen. `quarry report`'s refresh uses it; `quarry ingest` reads every file.
    pub quick_check: bool,
    /// Read every file whole and compare it with its archived hash, instead of the cheap check
    /// of its last chunks (`quarry ingest --verify`): a change anywhere in an archived prefix is
    /// found.
    pub verify: bool,
}

/// Failures that stop an ingest before it starts.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// A path given on the command line does not exist.
    #[error("no such file or folder: {0}")]
    MissingPath(PathBuf),
    /// No path given and no default transcript folder exists.
    #[error(
        "no transcripts found: none of {} exists; pass a path",
        discover::DEFAULT_LOCATIONS
    )]
    NothingToDiscover,
    /// The archive could not be read or written.
    #[error("archive error: {0}")]
    Archive(#[from] quarry_archive::ArchiveError),
    /// SQLite failed outside a file's transaction.
    #[error("archive error: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// One unit of work handed from the parser thread to the writer.
enum Work {
    /// A file to (re)write.
    Write(Box<writer::PendingFile>),
    /// A file that needs nothing (unchanged) or cannot be ingested (unsupported, unreadable).
    Skip {
        bytes: u64,
        state: Option<FileState>,
        diagnostics: Vec<Diagnostic>,
        unsupported: bool,
        /// Bytes read from the file.
        read: u64,
    },
}

impl Work {
    /// A file that needs nothing or cannot be ingested.
    fn skip(bytes: u64, state: Option<FileState>, diagnostics: Vec<Diagnostic>, read: u64) -> Self {
        Work::Skip {
            bytes,
            state,
            diagnostics,
            unsupported: false,
            read,
        }
    }
}

/// Ingests `options.paths` (or the default locations) into `archive`.
pub fn ingest(archive: &mut Archive, options: &IngestOptions) -> Result<Summary, IngestError> {
    ingest_reporting(archive, options, &mut |_| {})
}

/// [`ingest`], calling `progress` once the files are found and after each file.
pub fn ingest_reporting(
    archive: &mut Archive,
    options: &IngestOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Summary, IngestError> {
    let started = Instant::now();
    let roots = if options.paths.is_empty() {
        let roots = discover::default_roots();
        if roots.is_empty() {
            return Err(IngestError::NothingToDiscover);
        }
        roots
    } else {
        for p in &options.paths {
            if std::fs::symlink_metadata(p).is_err() {
                return Err(IngestError::MissingPath(p.clone()));
            }
        }
        options.paths.clone()
    };
    let candidates = sources::expand(discover::walk(&roots));
    let total_bytes: u64 = candidates
        .iter()
        .filter_map(|c| match c {
            Candidate::File(p) => std::fs::metadata(p).ok().map(|m| m.len()),
            Candidate::Session(s) => Some(s.size),
            Candidate::Database(_) | Candidate::Files(_) | Candidate::Unreadable(..) => None,
        })
        .sum();
    let mut summary = Summary {
        generation_before: archive.generation()?,
        ..Summary::default()
    };
    // Every statement a file's write runs (one INSERT per table, the usage resolution, the
    // bookkeeping) stays prepared: rusqlite's default cache of 16 would re-prepare them.
    archive.conn().set_prepared_statement_cache_capacity(64);
    // The temporary tables first: `tune_for_ingest` sizes their cache.
    store::prepare(archive.conn())?;
    let cache_sizes = tune_for_ingest(archive.conn(), cache_bytes())?;
    if reindex::pending(archive.conn())? {
        summary.rederived = Some(reindex::reindex(archive.conn())?);
    }
    let mut done = Progress {
        files_total: candidates.len(),
        bytes_total: total_bytes,
        files_done: 0,
        bytes_done: 0,
        records: 0,
    };
    progress(done);

    let archive_path = archive.path().to_path_buf();
    let context = FileContext {
        owner: options.owner.clone(),
        machine: options.machine.clone(),
        replace: options.replace.iter().map(|p| canonical_name(p)).collect(),
        quick_check: options.quick_check,
        verify: options.verify,
    };
    let (sender, receiver) = mpsc::sync_channel::<Work>(2);
    let (spent, freed) = mpsc::channel();
    let parser =
        std::thread::spawn(move || parse_all(candidates, &archive_path, &context, sender, &freed));

    // The WAL is checkpointed on a thread of its own while the writer writes (`checkpoint`);
    // without it, by the writer every 128 MiB.
    let checkpointer = checkpoint::Checkpointer::start(archive.path());
    let own_checkpoints = if checkpointer.is_some() {
        0
    } else {
        WAL_AUTOCHECKPOINT
    };
    archive
        .conn()
        .pragma_update(None, "wal_autocheckpoint", own_checkpoints)?;
    let mut writer = writer::Writer::new(checkpointer, Some(spent));
    let mut write_error = None;
    for work in receiver {
        match work {
            Work::Skip {
                bytes,
                state,
                diagnostics,
                unsupported,
                read,
            } => {
                summary.files_seen += 1;
                summary.bytes += bytes;
                summary.bytes_read += read;
                match state {
                    Some(FileState::Unchanged) => summary.files_unchanged += 1,
                    Some(FileState::Rewritten) => summary.files_rewritten += 1,
                    _ if unsupported => summary.files_unsupported += 1,
                    _ => summary.files_failed += 1,
                }
                summary.diagnostics.extend(diagnostics);
                done.files_done += 1;
                done.bytes_done += bytes;
                progress(done);
            }
            Work::Write(file) => {
                summary.files_seen += 1;
                summary.bytes += file.stamp.size as u64;
                let bytes = file.stamp.size as u64;
                if let Err(e) = writer.push(archive.conn(), *file, &mut summary) {
                    write_error = Some(e);
                    break;
                }
                done.files_done += 1;
                done.bytes_done += bytes;
                done.records = summary.records;
                progress(done);
            }
        }
    }
    if write_error.is_none()
        && let Err(e) = writer.finish(archive.conn(), &mut summary)
    {
        write_error = Some(e);
    }
    let _ = parser.join();
    // Waits for the last checkpoint; later writes on this connection checkpoint themselves, in
    // the page cache the connection had (a watch keeps its connection for days).
    drop(writer);
    restore_after_ingest(archive.conn(), cache_sizes)?;
    if let Some(e) = write_error {
        return Err(IngestError::Sqlite(e));
    }
    summary.missing_parents = store::link(archive.conn())?;
    summary.generation_after = archive.generation()?;
    summary.archive_sessions = sessions_by_origin(archive.conn())?;
    summary.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(summary)
}

/// Page cache and full-text buffer sized to an ingest's work. A batch's dirty pages and the
/// index pages it touches stay in memory (`cache` bytes, [`cache_bytes`], allocated only as
/// used; past it SQLite spills dirty pages to the WAL before the commit). FTS5
/// flushes the terms it holds into a new index segment whenever they pass its `hashsize`
/// (1 MiB by default), and every segment is merged again later; at 64 MiB a batch's terms go
/// out as one segment at its commit. The setting is stored in the archive and read by FTS5
/// only when the table is opened, so it is written once. The temporary tables of the usage
/// resolution (a batch's response keys and sessions, tens of MB) get the same cache: in
/// SQLite's default 2 MB they went to a temporary file and back, 18 GB each way over a first
/// million messages. Returns the cache sizes to restore ([`restore_after_ingest`]).
fn tune_for_ingest(conn: &Connection, cache: u64) -> rusqlite::Result<(i64, i64)> {
    let cache_size: i64 = conn.pragma_query_value(None, "cache_size", |r| r.get(0))?;
    let temp_cache_size: i64 = conn.pragma_query_value(Some("temp"), "cache_size", |r| r.get(0))?;
    let kib = -((cache / 1024) as i64);
    conn.pragma_update(None, "cache_size", kib)?;
    conn.pragma_update(Some("temp"), "cache_size", kib)?;
    for (key, value) in FTS_CONFIG {
        let stored: Option<i64> = conn
            .query_row("SELECT v FROM blocks_fts_config WHERE k = ?1", [key], |r| {
                r.get(0)
            })
            .ok();
        if stored != Some(value) {
            conn.execute(
                "INSERT INTO blocks_fts (blocks_fts, rank) VALUES (?1, ?2)",
                rusqlite::params![key, value],
            )?;
        }
    }
    Ok((cache_size, temp_cache_size))
}

/// Gives the connection back the cache sizes [`tune_for_ingest`] replaced (a watch keeps its
/// connection for days).
fn restore_after_ingest(
    conn: &Connection,
    (cache, temp_cache): (i64, i64),
) -> rusqlite::Result<()> {
    conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT)?;
    conn.pragma_update(None, "cache_size", cache)?;
    conn.pragma_update(Some("temp"), "cache_size", temp_cache)
}

/// The ingest's page cache: [`INGEST_CACHE`], at most a quarter of the memory available
/// (Linux) and at least 64 MiB.
fn cache_bytes() -> u64 {
    let available = available_memory().map_or(u64::MAX, |m| m / 4);
    INGEST_CACHE.min(available.max(64 << 20))
}

/// The page cache an ingest gives its connection, whatever the archive's size: 512 MiB. What a
/// batch reads again is small: its rows append to the ends of their tables and indexes, and the
/// indexes keyed by random values (response key hashes, session ids, paths; about 255 MB at ten
/// million messages) are read back from the OS where they do not fit. A larger cache mostly
/// holds appended pages the ingest never reads again, and each new 64 KiB page buffer costs a
/// page fault and the kernel's zeroing of it (on a VM that hands freed memory back to its host,
/// a fault in the host too: docs/benchmarks.md, "The daily million, thread by thread"): at
/// 4 GiB (a sixth of the archive, the earlier rule) a million into ten million spent 7 s of its
/// writer in `clear_page_erms`. Measured from 14 to 24 million messages, cold: the daily million
/// took 51–54 s at 4 GiB, 43–46 s at 2 GiB, 41–43 s at 1 GiB, 37–38 s at 512 MiB and 48 s at
/// 256 MiB, where each batch spilled dirty pages to the WAL (docs/benchmarks.md, "The page
/// cache, smaller").
const INGEST_CACHE: u64 = 512 << 20;

/// Memory the system can still give (`MemAvailable` in `/proc/meminfo`), where it says.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// WAL pages after which a commit on the ingest's own connection checkpoints (128 MiB), when
/// no checkpoint thread does it.
const WAL_AUTOCHECKPOINT: i64 = 16384;

/// The full-text index's settings an ingest keeps (`tune_for_ingest`): the pending-terms buffer
/// (`hashsize`), how many segments of one level gather before they are merged (`usermerge`,
/// which the writer's own merges read, [`merge`]; `automerge` 0 keeps FTS5 from merging inside
/// the batches), and how many before FTS5 merges them all at once (`crisismerge`, 16 by
/// default). The work of merging is the bytes indexed times the levels each byte passes through;
/// at 16 segments a level a ten-million-message index has about half the levels it has at 4, so
/// an ingest into it merges about half as much (docs/benchmarks.md, "Ingest"), and a search
/// reads up to 15 segments a level instead of 3. A merge, once started, goes on a few pages at a
/// time after each batch's flush (that flush's pages times the number of levels), while new
/// segments keep arriving on the level; at `crisismerge` 16 the 16 segments that start a merge
/// also reach the crisis bound in the same flush, and the whole level (about 450 MB at ten
/// million messages) was merged inside one batch: the million that held it took a third longer
/// than its neighbours. At 64 the merge is spread over the next seven or eight batches and the
/// level holds at most about 24 segments meanwhile (docs/benchmarks.md, "The level merges,
/// spread").
const FTS_CONFIG: [(&str, i64); 4] = [
    ("hashsize", 64 * 1024 * 1024),
    ("automerge", 0),
    ("usermerge", merge::USERMERGE),
    ("crisismerge", 64),
];

fn sessions_by_origin(
    conn: &Connection,
) -> rusqlite::Result<std::collections::BTreeMap<String, i64>> {
    let mut stmt =
        conn.prepare("SELECT origin, COUNT(*) FROM sessions GROUP BY origin ORDER BY origin")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// What every file of one ingest shares.
struct FileContext {
    owner: Option<String>,
    machine: Option<String>,
    /// Canonical names of the files `--replace` lets a rewrite replace.
    replace: Vec<String>,
    /// [`IngestOptions::quick_check`].
    quick_check: bool,
    /// [`IngestOptions::verify`].
    verify: bool,
}

/// A session id some file of this run (or the archive) already holds: that file and its size.
struct Claim {
    path: String,
    size: i64,
}

/// The parser thread: reads, checks, parses and derives each candidate in order.
fn parse_all(
    candidates: Vec<Candidate>,
    archive_path: &Path,
    context: &FileContext,
    sender: mpsc::SyncSender<Work>,
    freed: &mpsc::Receiver<Vec<derive::SessionRows>>,
) {
    let conn = Connection::open_with_flags(archive_path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok();
    let mut claimed: HashMap<String, Claim> = HashMap::new();
    // The agent database the sessions being read come from, kept open between them.
    let mut database: Option<(PathBuf, Connection)> = None;
    for candidate in candidates {
        let unreadable = |file: String, reason: String| {
            Work::skip(
                0,
                None,
                vec![Diagnostic {
                    file,
                    line: None,
                    kind: "unreadable",
                    reason,
                }],
                0,
            )
        };
        let work = match candidate {
            Candidate::Unreadable(path, reason) => unreadable(path.display().to_string(), reason),
            Candidate::File(path) => prepare_file(&path, conn.as_ref(), context, &mut claimed),
            Candidate::Database(path) | Candidate::Files(path) => unreadable(
                path.display().to_string(),
                "a store whose sessions were not listed".to_string(),
            ),
            Candidate::Session(source) => {
                prepare_session(&source, &mut database, conn.as_ref(), context, &mut claimed)
            }
        };
        // The rows of files the writer committed, freed on the thread that made them.
        while let Ok(rows) = freed.try_recv() {
            drop(rows);
        }
        if sender.send(work).is_err() {
            return;
        }
    }
}

/// Reads one session of an agent's database ([`sources`]) on `database`, the connection kept
/// open for the database's sessions (opened again for another database, or after an error).
fn prepare_session(
    source: &sources::SessionSource,
    database: &mut Option<(PathBuf, Connection)>,
    conn: Option<&Connection>,
    context: &FileContext,
    claimed: &mut HashMap<String, Claim>,
) -> Work {
    let read = if source.files {
        sources::files_document(source).map_err(|e| e.to_string())
    } else {
        if database.as_ref().is_none_or(|(p, _)| *p != source.store) {
            *database = sources::open(&source.store)
                .ok()
                .map(|c| (source.store.clone(), c));
        }
        database
            .as_ref()
            .ok_or_else(|| "the database could not be opened again".to_string())
            .and_then(|(_, db)| sources::document(db, source).map_err(|e| e.to_string()))
    };
    match read {
        Ok(Some(bytes)) => prepare_bytes(
            Input::document(source.name(), bytes),
            conn,
            context,
            claimed,
        ),
        // Deleted since the sessions were listed: its archived copy stays.
        Ok(None) => Work::skip(0, None, Vec::new(), 0),
        Err(reason) => {
            *database = None;
            Work::skip(
                0,
                None,
                vec![Diagnostic {
                    file: source.name(),
                    line: None,
                    kind: "unreadable",
                    reason: format!(
                        "cannot read the session from where the agent keeps it: {reason}"
                    ),
                }],
                0,
            )
        }
    }
}

/// The name a file is archived under: its canonical path when it has one.
fn canonical_name(path: &Path) -> String {
    path.canonicalize()
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

fn prepare_file(
    path: &Path,
    conn: Option<&Connection>,
    context: &FileContext,
    claimed: &mut HashMap<String, Claim>,
) -> Work {
    let name = canonical_name(path);
    if context.quick_check
        && let Some(size) = conn.and_then(|c| store::unchanged_by_stat(c, &name, path))
    {
        return Work::skip(size, Some(FileState::Unchanged), Vec::new(), 0);
    }
    let file_id = file_identity(path);
    let archived = conn.and_then(|c| store::archived_file(c, &name));
    let whole_document = name.ends_with(".json");
    let mut read_before = 0;
    let mut reread = None;
    if let (Some(c), Some((chain, archived_id)), false, false) =
        (conn, &archived, context.verify, whole_document)
        && !chain.links.is_empty()
        && *archived_id == file_id
    {
        let resume = tail::archived(c, &name);
        let want = resume.as_ref().map_or(u64::MAX, |r| r.offset);
        match chunks::check(path, chain, want) {
            Ok(Some((chunks::Checked::Unchanged, read))) => {
                return Work::skip(chain.size, Some(FileState::Unchanged), Vec::new(), read);
            }
            Ok(Some((chunks::Checked::Rewritten, read))) if !context.replace.contains(&name) => {
                return rewritten(name, chain.size.max(file_size(path)), read);
            }
            Ok(Some((
                chunks::Checked::Grew {
                    from,
                    bytes,
                    chain: grown,
                },
                read,
            ))) => {
                read_before = read;
                reread = Some("it holds no resumable session");
                let grown_size = grown.size;
                if let Some(state) = resume
                    && own_session(c, &name, &state.session_id, claimed)
                {
                    match continue_file(
                        c,
                        &name,
                        context,
                        &state,
                        &bytes,
                        from,
                        grown,
                        read,
                        file_id.clone(),
                    ) {
                        Ok(work) => {
                            claimed.insert(
                                state.session_id.clone(),
                                Claim {
                                    path: name.clone(),
                                    size: grown_size as i64,
                                },
                            );
                            return work;
                        }
                        Err(why) => reread = Some(why),
                    }
                }
            }
            _ => {}
        }
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            return Work::skip(
                0,
                None,
                vec![Diagnostic {
                    file: name,
                    line: None,
                    kind: "unreadable",
                    reason: e.to_string(),
                }],
                read_before,
            );
        }
    };
    let input = Input {
        name,
        read: read_before + bytes.len() as u64,
        bytes,
        file_id,
        archived,
        whole_document,
        reread,
        database: false,
    };
    prepare_bytes(input, conn, context, claimed)
}

/// A source's content, read, with what the archive knows of it.
struct Input {
    /// The name it is archived under.
    name: String,
    /// Its content.
    bytes: Vec<u8>,
    /// Bytes read to get it (a check of the archived part included).
    read: u64,
    /// The file's identity ([`file_identity`]).
    file_id: Option<String>,
    /// What the archive holds of it: its chunk chain and identity.
    archived: Option<(chunks::Chain, Option<String>)>,
    /// A document read whole, each time: a changed one replaces its archived sessions.
    whole_document: bool,
    /// Why a file that grew was read whole.
    reread: Option<&'static str>,
    /// A session read from an agent's database ([`sources`]).
    database: bool,
}

impl Input {
    /// An agent database's session ([`sources`]), a whole document.
    fn document(name: String, bytes: Vec<u8>) -> Self {
        Input {
            read: bytes.len() as u64,
            bytes,
            file_id: None,
            archived: None,
            whole_document: true,
            reread: None,
            database: true,
            name,
        }
    }
}

/// Checks, parses and derives a source's content.
fn prepare_bytes(
    input: Input,
    conn: Option<&Connection>,
    context: &FileContext,
    claimed: &mut HashMap<String, Claim>,
) -> Work {
    let Input {
        name,
        bytes,
        read,
        file_id,
        mut archived,
        whole_document,
        reread,
        database,
    } = input;
    if database {
        archived = conn.and_then(|c| store::archived_file(c, &name));
    }
    let size = bytes.len() as i64;
    let chain = chunks::Chain::of(&bytes);
    let state = store::file_state(archived.as_ref().map(|(c, _)| c), &bytes, &chain);
    if state == FileState::Unchanged {
        return Work::skip(size as u64, Some(state), Vec::new(), read);
    }
    if state == FileState::Rewritten && !whole_document && !context.replace.contains(&name) {
        return rewritten(name, size as u64, read);
    }
    // A database's session is read whole each time: no place to continue from.
    let ends = if database {
        None
    } else {
        tail::complete_lines(&bytes)
    };
    let (format, mut parsed) = parse_bytes(&name, &bytes);
    drop(bytes);
    let Some(format) = format else {
        let mut diagnostics = parsed.diagnostics;
        // A document that is not JSON at all (cut short) has said so already.
        let invalid = diagnostics.iter().any(|d| d.kind == "invalid_json");
        if !parsed.sidecar && !invalid {
            let agents: Vec<&str> = quarry_schema::ORIGINS.iter().map(|o| o.label).collect();
            diagnostics.push(Diagnostic {
                file: name,
                line: None,
                kind: "unsupported_format",
                reason: format!(
                    "not a transcript format quarry reads ({})",
                    agents.join(", ")
                ),
            });
        }
        return Work::Skip {
            bytes: size as u64,
            state: Some(state),
            diagnostics,
            unsupported: true,
            read,
        };
    };
    let origin = parsed
        .sessions
        .first()
        .map(|s| s.origin.as_str().to_string())
        .unwrap_or_else(|| format!("{format:?}"));
    let mut copy_of = None;
    let mut sessions = Vec::with_capacity(parsed.sessions.len());
    let single = parsed.sessions.len() == 1;
    let mut draft_resume = None;
    for mut draft in std::mem::take(&mut parsed.sessions) {
        let mut id = draft.session_id();
        let claim = claimed
            .get(&id)
            .map(|c| (c.path.clone(), c.size))
            .or_else(|| conn.and_then(|c| store::session_source(c, &id).ok().flatten()));
        if let Some((other, other_size)) = claim.filter(|(p, _)| *p != name) {
            if let Some(keep_other) = keeps_copy(&other, &name, size <= other_size) {
                if keep_other {
                    copy_of = Some(other);
                    continue;
                }
            } else {
                let suffix = blake3::hash(name.as_bytes()).to_hex();
                let renamed = format!("{}~{}", draft.native_id, suffix.get(..8).unwrap_or("dup"));
                parsed.diagnostics.push(Diagnostic {
                    file: name.clone(),
                    line: None,
                    kind: "duplicate_session_id",
                    reason: format!(
                        "session {id} is already ingested from another file; stored as {renamed}"
                    ),
                });
                draft.native_id = renamed;
                id = draft.session_id();
            }
        }
        claimed.insert(
            id,
            Claim {
                path: name.clone(),
                size,
            },
        );
        if single {
            draft_resume = draft.resume.take();
        }
        sessions.push(derive::derive(draft, context.owner.as_deref()));
    }
    let resume = match (&sessions[..], ends) {
        ([rows], Some(ends)) => tail::cut_whole(ends, parsed.records, draft_resume.as_ref(), rows),
        _ => None,
    };
    if whole_document && state != FileState::New {
        parsed
            .diagnostics
            .extend(missing_from_export(conn, &name, &sessions));
    }
    Work::Write(Box::new(writer::PendingFile {
        stamp: FileStamp {
            path: name,
            origin,
            size,
            hash: chain.hash.clone(),
            records: parsed.records as i64,
            machine: context.machine.clone(),
            copy_of: if sessions.is_empty() { copy_of } else { None },
            keep_missing: whole_document,
            grew: state == FileState::Appended,
            links: Some(chain.links),
            file_id,
        },
        state,
        sessions,
        parsed,
        resume,
        continued: None,
        bytes_read: read,
        reread,
    }))
}

/// The skip of an append-only file that no longer starts with its archived content.
fn rewritten(name: String, size: u64, read: u64) -> Work {
    let reason = format!(
        "the file no longer starts with the content archived from it (it shrank or its earlier records changed); its archived sessions are kept and the new content is not ingested (replace them with `quarry ingest --replace {name}`)"
    );
    Work::skip(
        size,
        Some(FileState::Rewritten),
        vec![Diagnostic {
            file: name,
            line: None,
            kind: "source_rewritten",
            reason,
        }],
        read,
    )
}

/// Whether the session a resume state names is this file's own (no other file of the archive or
/// of this run holds it).
fn own_session(
    conn: &Connection,
    name: &str,
    session_id: &str,
    claimed: &HashMap<String, Claim>,
) -> bool {
    claimed.get(session_id).is_none_or(|c| c.path == name)
        && store::session_source(conn, session_id)
            .ok()
            .flatten()
            .is_some_and(|(path, _)| path == name)
}

/// A grown file read from where it was left (`tail`); the reason when it must be read whole.
#[allow(clippy::too_many_arguments)]
fn continue_file(
    conn: &Connection,
    name: &str,
    context: &FileContext,
    state: &tail::ResumeState,
    bytes: &[u8],
    from: u64,
    chain: chunks::Chain,
    read: u64,
    file_id: Option<String>,
) -> Result<Work, &'static str> {
    let data = state
        .offset
        .checked_sub(from)
        .and_then(|skip| bytes.get(usize::try_from(skip).ok()?..))
        .ok_or("the archived read state lies outside the file")?;
    let mut parsed = model::ParsedFile::default();
    let continued = tail::read(
        conn,
        name,
        state,
        data,
        context.owner.as_deref(),
        &mut parsed,
    )
    .map_err(|model::Whole(why)| why)?;
    Ok(Work::Write(Box::new(writer::PendingFile {
        stamp: FileStamp {
            path: name.to_string(),
            origin: continued.rows.session.origin.to_string(),
            size: chain.size as i64,
            hash: chain.hash,
            records: continued.records as i64,
            machine: context.machine.clone(),
            copy_of: None,
            keep_missing: false,
            grew: true,
            links: Some(chain.links),
            file_id,
        },
        state: FileState::Appended,
        sessions: vec![continued.rows],
        parsed,
        resume: Some(continued.resumable),
        continued: Some(continued.continued),
        bytes_read: read,
        reread: None,
    })))
}

/// The file's size now (0 when it cannot be read).
fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// The file's identity, `device:inode` (`None` where the platform has none).
fn file_identity(path: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path)
            .ok()
            .map(|m| format!("{}:{}", m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Whether two archived paths name the same file in different folders (`<session>.jsonl` on
/// two machines).
/// When a session is already archived from another document, whether that one stays (`None`:
/// the two are not copies of one session). The same file from another folder or machine (a
/// synced or copied folder) is one session, read from the longer copy (`other_longer`: the
/// archived one is at least as long); so is one session of an agent's store in two places.
/// OpenCode's JSON files and the database it migrated them into are one session too, the
/// database's, where the agent went on; and a Cursor conversation in several of Cursor's places,
/// the fullest's ([`cursor_rank`]).
fn keeps_copy(other: &str, name: &str, other_longer: bool) -> Option<bool> {
    // One Cursor conversation in several places: the fullest place's.
    if let (Some(a), Some(b)) = (cursor_rank(other), cursor_rank(name)) {
        return Some(if a == b { other_longer } else { a > b });
    }
    let same_file = Path::new(other).file_name() == Path::new(name).file_name();
    let same_session = sources::session_of(other).is_some()
        && sources::session_of(other) == sources::session_of(name);
    if !same_file && !same_session {
        return None;
    }
    Some(
        match (
            sources::is_files_document(other),
            sources::is_files_document(name),
        ) {
            (true, false) => false,
            (false, true) => true,
            _ => other_longer,
        },
    )
}

/// How much of a Cursor conversation a document holds, when it is one of Cursor's: a global
/// store's composer (bubbles with counts) 2, a workspace store's composers or tabs (2023–2024)
/// 1, an agent transcript (no tool results, no counts) 0.
fn cursor_rank(name: &str) -> Option<u8> {
    if cursor_agent::is_transcript_path(name) {
        return Some(0);
    }
    let (store, session) = name.rsplit_once('#')?;
    if Path::new(store).file_name()? != "state.vscdb" {
        return None;
    }
    match session {
        s if s.starts_with("composer:") => Some(2),
        "composers" | "tabs" => Some(1),
        _ => None,
    }
}

/// A re-exported document (ChatGPT, Claude.ai, Gemini JSON) replaces the conversations it still
/// holds; one it lacks stays archived, reported here.
fn missing_from_export(
    conn: Option<&Connection>,
    name: &str,
    sessions: &[derive::SessionRows],
) -> Vec<Diagnostic> {
    let archived = conn
        .and_then(|c| store::file_session_ids(c, name).ok())
        .unwrap_or_default();
    archived
        .into_iter()
        .filter(|id| !sessions.iter().any(|s| &s.session.session_id == id))
        .map(|id| Diagnostic {
            file: name.to_string(),
            line: None,
            kind: "conversation_missing",
            reason: format!("session {id} is not in the new export; it stays archived as it was"),
        })
        .collect()
}

/// Detects the format of a file's bytes and parses it. `None` means unsupported.
pub fn parse_bytes(name: &str, bytes: &[u8]) -> (Option<Format>, ParsedFile) {
    let mut parsed = ParsedFile::default();
    if aider::is_history(bytes) {
        aider::parse(name, bytes, &mut parsed);
        report_empty(name, Some(Format::Aider), &mut parsed);
        return (Some(Format::Aider), parsed);
    }
    let is_json_document = name.ends_with(".json");
    if is_json_document {
        match serde_json::from_slice::<serde_json::Value>(bytes) {
            Ok(root) => {
                let format = detect::detect_json(&root);
                match format {
                    Some(Format::ChatGpt) => chatgpt::parse(&root, &mut parsed),
                    Some(Format::ClaudeAi) => claude_ai::parse(&root, &mut parsed),
                    Some(Format::AiStudio) => aistudio::parse(name, &root, &mut parsed),
                    Some(Format::GeminiJson) => gemini::parse_json(&root, &mut parsed),
                    Some(Format::Amp) => amp::parse(name, &root, &mut parsed),
                    _ => {
                        parsed.sidecar = detect::is_sidecar(&root);
                        return (None, parsed);
                    }
                }
                report_empty(name, format, &mut parsed);
                return (format, parsed);
            }
            Err(e) if !looks_like_lines(bytes) => {
                parsed.diagnostics.push(Diagnostic {
                    file: name.to_string(),
                    line: Some(e.line()),
                    kind: "invalid_json",
                    reason: format!("invalid JSON document: {e}"),
                });
                return (None, parsed);
            }
            Err(_) => {}
        }
    }
    let lines = lines::read_lines(name, bytes, &mut parsed.diagnostics);
    let format = detect::detect_lines(&lines);
    match format {
        Some(Format::ClaudeCode) => claude_code::parse(name, lines, &mut parsed),
        Some(Format::Codex) => codex::parse(name, lines, &mut parsed),
        Some(Format::GeminiLines) => gemini::parse_lines(lines, &mut parsed),
        Some(Format::Pi) => pi::parse(name, lines, &mut parsed),
        Some(Format::Qwen) => qwen::parse(name, lines, &mut parsed),
        Some(Format::Kimi) => kimi::parse(name, lines, &mut parsed),
        Some(Format::Copilot) => copilot::parse(name, lines, &mut parsed),
        Some(Format::OpenCode) => opencode::parse(name, lines, &mut parsed),
        Some(Format::Goose) => goose::parse(name, lines, &mut parsed),
        Some(Format::Cline) => cline::parse(name, lines, &mut parsed),
        Some(Format::ClineSdk) => cline_sdk::parse(name, lines, &mut parsed),
        Some(Format::Cursor) => cursor::parse(name, lines, &mut parsed),
        Some(Format::CursorAgent) => cursor_agent::parse(name, lines, &mut parsed),
        Some(Format::Crush) => crush::parse(name, lines, &mut parsed),
        _ => {
            parsed.sidecar = detect::is_sidecar_lines(&lines);
            parsed
                .diagnostics
                .extend(detect::unrecognised_transcript(name, &lines));
            return (None, parsed);
        }
    }
    report_empty(name, format, &mut parsed);
    (format, parsed)
}

/// A file read as a known format that yields no message is a diagnostic, never a silent zero.
fn report_empty(name: &str, format: Option<Format>, parsed: &mut ParsedFile) {
    if let Some(diagnostic) = format.and_then(|f| detect::empty_transcript(name, f, parsed)) {
        parsed.diagnostics.push(diagnostic);
    }
}

fn looks_like_lines(bytes: &[u8]) -> bool {
    // A pretty-printed document (a thread cut short) opens with a line of `{` alone, which no
    // JSON Lines record is.
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    bytes.iter().filter(|b| **b == b'\n').take(2).count() >= 2
        && bytes.first() == Some(&b'{')
        && first.trim_ascii() != b"{"
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{
        FTS_CONFIG, available_memory, cache_bytes, restore_after_ingest, store, tune_for_ingest,
    };

    const GIB: u64 = 1 << 30;

    #[test]
    fn the_cache_is_512_mib_where_memory_allows() {
        let cap = available_memory().map_or(u64::MAX, |m| m / 4).max(64 << 20);
        assert_eq!(cache_bytes(), (512 << 20).min(cap));
        assert!(cache_bytes() >= 64 << 20);
    }

    #[test]
    fn the_usage_resolutions_temporary_tables_share_the_ingest_cache_and_give_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let archive = quarry_archive::Archive::open(&dir.path().join("a.db")).unwrap();
        let conn = archive.conn();
        let cache = |schema| -> i64 {
            conn.pragma_query_value(Some(schema), "cache_size", |r| r.get(0))
                .unwrap()
        };
        store::prepare(conn).unwrap();
        let before = (cache("main"), cache("temp"));
        let saved = tune_for_ingest(conn, GIB).unwrap();
        assert_eq!(saved, before);
        // 1 GiB in KiB, for the archive's pages and for the temporary tables' (SQLite's default
        // of 2 MB sent a batch's response keys to a temporary file and back).
        assert_eq!((cache("main"), cache("temp")), (-1_048_576, -1_048_576));
        restore_after_ingest(conn, saved).unwrap();
        assert_eq!((cache("main"), cache("temp")), before);
    }

    #[test]
    fn an_ingest_leaves_the_full_text_settings_in_the_archive() {
        let dir = tempfile::tempdir().unwrap();
        let archive = quarry_archive::Archive::open(&dir.path().join("a.db")).unwrap();
        let conn = archive.conn();
        let stored = |key: &str| -> Option<i64> {
            conn.query_row("SELECT v FROM blocks_fts_config WHERE k = ?1", [key], |r| {
                r.get(0)
            })
            .ok()
        };
        // A new archive has FTS5's defaults (no rows); the ingest writes its own, and writing
        // them again (the next ingest) changes nothing.
        assert_eq!(
            (
                stored("hashsize"),
                stored("automerge"),
                stored("crisismerge")
            ),
            (None, None, None)
        );
        for _ in 0..2 {
            let saved = tune_for_ingest(conn, GIB).unwrap();
            restore_after_ingest(conn, saved).unwrap();
            for (key, value) in FTS_CONFIG {
                assert_eq!(stored(key), Some(value), "{key}");
            }
        }
        assert_eq!(
            (
                stored("hashsize"),
                stored("automerge"),
                stored("usermerge"),
                stored("crisismerge")
            ),
            (Some(64 << 20), Some(0), Some(16), Some(64))
        );
    }
}
