//! Re-deriving an archive's transcript sessions from its own `events_raw`, without the source
//! files (which the vendor may have deleted): `quarry reindex`, and the first ingest after a
//! migration that changed how rows are derived (`meta.rederive = 'pending'`).
//!
//! Each source file's JSONL records are put back in order from the events of its sessions, read
//! by the same adapter and derivation as at ingest, and written in place of the file's sessions
//! in one transaction per file, keeping the file's identity (`source_files` size and hash),
//! owner and machine. Whole-file exports (ChatGPT, Claude.ai, Gemini JSON, AI Studio) keep the
//! rows they have: their events are nodes of a document, and the rules that changed concern
//! JSONL transcripts.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;

use super::derive::{self, SessionRows};
use super::merge;
use super::model::Diagnostic;
use super::store::{self, FileStamp};
use super::{IngestError, parse_bytes};

/// What a re-derivation changed.
#[derive(Debug, Default, Serialize)]
pub struct ReindexSummary {
    /// Source files whose sessions were re-derived.
    pub files: usize,
    /// Sessions written.
    pub sessions: usize,
    /// `usage` rows before and after.
    pub usage_rows: (i64, i64),
    /// Sums of `usage` input / output / cache-read / cache-write tokens before and after.
    pub tokens_before: [i64; 4],
    /// The same sums after.
    pub tokens_after: [i64; 4],
    /// Sessions whose title changed.
    pub titles_changed: i64,
    /// Problems, each naming the file.
    pub diagnostics: Vec<Diagnostic>,
}

impl ReindexSummary {
    /// One paragraph for people.
    pub fn to_human(&self) -> String {
        let [i0, o0, r0, w0] = self.tokens_before;
        let [i1, o1, r1, w1] = self.tokens_after;
        let mut out = format!(
            "re-derived {} sessions of {} files from the archive's own records\n\
             usage rows {} -> {}\n\
             tokens input {i0} -> {i1}, output {o0} -> {o1}, cache read {r0} -> {r1}, cache write {w0} -> {w1}\n\
             titles changed: {}\n",
            self.sessions, self.files, self.usage_rows.0, self.usage_rows.1, self.titles_changed
        );
        for d in &self.diagnostics {
            out.push_str(&format!("  {}: {}: {}\n", d.file, d.kind, d.reason));
        }
        out
    }
}

/// Whether the archive asks for re-derivation (a migration changed the rules).
pub fn pending(conn: &Connection) -> rusqlite::Result<bool> {
    let value: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'rederive'", [], |r| {
            r.get(0)
        })
        .optional()?;
    Ok(value.as_deref() == Some("pending"))
}

/// Re-derives every JSONL transcript session of the archive from `events_raw`.
pub fn reindex(conn: &Connection) -> Result<ReindexSummary, IngestError> {
    conn.set_prepared_statement_cache_capacity(64);
    store::prepare(conn)?;
    let mut summary = ReindexSummary {
        usage_rows: (count(conn, "SELECT COUNT(*) FROM usage")?, 0),
        tokens_before: token_sums(conn)?,
        ..ReindexSummary::default()
    };
    let titles_before = titles(conn)?;
    let files: Vec<FileStamp> = {
        let mut stmt = conn.prepare(
            "SELECT f.path, f.origin, f.size, f.hash, f.records, f.machine, f.copy_of, f.chunks,
                    f.file_id
             FROM source_files f
             WHERE f.path NOT LIKE '%.json'
               AND EXISTS (SELECT 1 FROM sessions s WHERE s.source_path = f.path)
             ORDER BY f.path",
        )?;
        stmt.query_map([], |r| {
            Ok(FileStamp {
                path: r.get(0)?,
                origin: r.get(1)?,
                size: r.get(2)?,
                hash: r.get(3)?,
                records: r.get(4)?,
                machine: r.get(5)?,
                copy_of: r.get(6)?,
                keep_missing: false,
                grew: false,
                links: r.get(7)?,
                file_id: r.get(8)?,
            })
        })?
        .collect::<Result<_, _>>()?
    };
    for stamp in files
        .into_iter()
        // Re-derived: the origins whose files are transcripts of one record a line.
        .filter(|f| {
            quarry_schema::ORIGINS
                .iter()
                .any(|o| o.lines && o.name == f.origin)
        })
    {
        let sessions = rederive_file(conn, &stamp, &mut summary.diagnostics)?;
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let index_before = merge::shape(conn);
        match store::write_file(conn, &stamp, &sessions, None, None)
            .and_then(|_| store::resolve_usage(conn))
        {
            Ok(_) => {
                conn.execute_batch("COMMIT")?;
                // The full-text merge work of what the file flushed (`merge`); a failed merge
                // is left to the next commit.
                let _ = merge::merge_after(conn, index_before);
            }
            Err(e) => {
                conn.execute_batch("ROLLBACK")?;
                summary.diagnostics.push(Diagnostic {
                    file: stamp.path.clone(),
                    line: None,
                    kind: "write_failed",
                    reason: format!("not re-derived, kept as it was: {e}"),
                });
                continue;
            }
        }
        summary.files += 1;
        summary.sessions += sessions.len();
    }
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('rederive', 'done')
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [],
    )?;
    store::link(conn)?;
    summary.usage_rows.1 = count(conn, "SELECT COUNT(*) FROM usage")?;
    summary.tokens_after = token_sums(conn)?;
    summary.titles_changed = titles(conn)?
        .into_iter()
        .filter(|(id, title)| titles_before.get(id).is_some_and(|t| t != title))
        .count() as i64;
    Ok(summary)
}

/// The sessions of one source file, read again from the records its sessions kept.
fn rederive_file(
    conn: &Connection,
    stamp: &FileStamp,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Vec<SessionRows>, IngestError> {
    let archived: Vec<(String, Option<String>, Option<String>)> = {
        let mut stmt = conn.prepare(
            "SELECT session_id, parent_session_id, owner FROM sessions WHERE source_path = ?1
             ORDER BY parent_session_id IS NOT NULL, session_id",
        )?;
        stmt.query_map([&stamp.path], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?
    };
    let owner = archived.iter().find_map(|(_, _, o)| o.clone());
    let bytes = file_lines(conn, &archived)?;
    let (_, mut parsed) = parse_bytes(&stamp.path, &bytes);
    diagnostics.append(&mut parsed.diagnostics);
    let suffix = blake3::hash(stamp.path.as_bytes()).to_hex();
    let mut sessions = Vec::new();
    for mut draft in parsed.sessions {
        // A session stored under a renamed id (its id was taken by another file) keeps it.
        let renamed = format!("{}~{}", draft.native_id, suffix.get(..8).unwrap_or("dup"));
        let renamed_id = super::model::session_id(draft.origin, &renamed);
        if !archived.iter().any(|(id, _, _)| *id == draft.session_id())
            && archived.iter().any(|(id, _, _)| *id == renamed_id)
        {
            draft.native_id = renamed;
        }
        sessions.push(derive::derive(draft, owner.as_deref()));
    }
    Ok(sessions)
}

/// The file's records in their original order, as JSONL: the events of its sessions merged by
/// time (a record without a time keeps its place after the one before it in its session), the
/// main session first among records of the same time.
fn file_lines(
    conn: &Connection,
    sessions: &[(String, Option<String>, Option<String>)],
) -> Result<Vec<u8>, IngestError> {
    let mut stmt = conn.prepare_cached(
        "SELECT time, payload FROM events_raw
         WHERE session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1)
         ORDER BY seq",
    )?;
    let mut records: Vec<(i64, usize, usize, String)> = Vec::new();
    for (rank, (id, _, _)) in sessions.iter().enumerate() {
        let mut last = i64::MIN;
        let rows = stmt.query_map([id], |r| Ok((r.get::<_, Option<i64>>(0)?, r.get(1)?)))?;
        for (seq, row) in rows.enumerate() {
            let (time, payload) = row?;
            last = time.map_or(last, |t| t.max(last));
            records.push((last, rank, seq, payload));
        }
    }
    records.sort_by_key(|(time, rank, seq, _)| (*time, *rank, *seq));
    let mut bytes = Vec::new();
    for (_, _, _, payload) in records {
        bytes.extend_from_slice(payload.as_bytes());
        bytes.push(b'\n');
    }
    Ok(bytes)
}

fn count(conn: &Connection, sql: &str) -> rusqlite::Result<i64> {
    conn.query_row(sql, [], |r| r.get(0))
}

fn token_sums(conn: &Connection) -> rusqlite::Result<[i64; 4]> {
    conn.query_row(
        "SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
                COALESCE(SUM(cache_read_tokens), 0), COALESCE(SUM(cache_write_tokens), 0)
         FROM usage",
        [],
        |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?]),
    )
}

fn titles(conn: &Connection) -> rusqlite::Result<HashMap<String, Option<String>>> {
    let mut stmt = conn.prepare("SELECT session_id, title FROM sessions ORDER BY session_id")?;
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect()
}
