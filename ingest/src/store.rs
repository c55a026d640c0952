//! Writing one input file's sessions into the archive in one transaction: the file's previous
//! sessions are replaced atomically, `source_files` records size and hash, and `generation` is
//! bumped. A failure rolls the whole file back; files committed before it stay.
//!
//! Every statement's column list comes from the declaration of the tables (`quarry_schema`,
//! through `insert_statement`): each `INSERT` names every declared column and numbers a
//! placeholder per column in declaration order, so the parameters below are passed in
//! declaration order, and a column that is computed in SQL is named in the statement's
//! expressions instead.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use quarry_archive::schema::FTS_DELETE_SESSION;
use quarry_archive::{
    AFFECTED_TABLES, NOTE_SESSION_PARTITION, NUMBER_SESSION, RECORDED, RESOLVE_ALONE,
    RESOLVE_USAGE, SESSION_NUM_OF, SHARING_SESSIONS, bump_generation, fulltext_insert_statement,
    insert_statement, key_hash, of_session, upsert_statement,
};

use super::chunks::Chain;
use super::derive::{Cut, SessionRows};
use super::model::RecordedVia;
use super::tail::{Continued, Marks, Resumable};

use super::text::fold_for_index;

/// What identifies a file's content.
#[derive(Debug, Clone)]
pub struct FileStamp {
    /// Path as given (absolute when possible).
    pub path: String,
    /// Origin of its sessions (or `unsupported`).
    pub origin: String,
    /// Size in bytes.
    pub size: i64,
    /// blake3 of the content, hex.
    pub hash: String,
    /// Records read.
    pub records: i64,
    /// The machine the file was read on.
    pub machine: Option<String>,
    /// When the file is a copy of a session file archived from another path: that path (the
    /// copy adds no sessions).
    pub copy_of: Option<String>,
    /// A whole-file export: a re-export replaces the sessions it holds and keeps the archived
    /// sessions it lacks.
    pub keep_missing: bool,
    /// The file only grew since it was archived (an append-only source written further): its
    /// sessions keep their replacement epoch, so read cursors into them stay valid.
    pub grew: bool,
    /// The chain's last links (`source_files.chunks`), `None` for a hash of another kind.
    pub links: Option<String>,
    /// The file's identity (`device:inode`).
    pub file_id: Option<String>,
}

/// How a file stands against the archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileState {
    /// Never ingested.
    New,
    /// Ingested with the same size and hash: nothing to do.
    Unchanged,
    /// Ingested, and it still starts with the archived bytes: it grew (an append-only JSONL
    /// source written further).
    Appended,
    /// Ingested, but it no longer starts with the archived bytes: it shrank or its earlier
    /// content changed. A JSONL source is then kept out (its archived sessions stay) unless
    /// `--replace` names it; a whole-file export is replaced.
    Rewritten,
}

/// What the archive recorded of a file: its chain (size, hash, links; the links are empty for
/// a plain blake3 written before version 8) and identity.
pub fn archived_file(conn: &Connection, path: &str) -> Option<(Chain, Option<String>)> {
    conn.prepare_cached("SELECT size, hash, chunks, file_id FROM source_files WHERE path = ?1")
        .ok()?
        .query_row([path], |r| {
            Ok((
                Chain {
                    size: r.get::<_, i64>(0)? as u64,
                    hash: r.get(1)?,
                    links: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                },
                r.get(3)?,
            ))
        })
        .optional()
        .ok()?
}

/// Compares a file's whole content with what the archive recorded of it (`archived`, from
/// [`archived_file`]); `chain` is the content's own.
pub fn file_state(archived: Option<&Chain>, bytes: &[u8], chain: &Chain) -> FileState {
    let Some(archived) = archived else {
        return FileState::New;
    };
    let size = bytes.len() as u64;
    let prefix_hash = |prefix: &[u8]| {
        if archived.links.is_empty() {
            blake3::hash(prefix).to_hex().to_string()
        } else {
            Chain::of(prefix).hash
        }
    };
    if archived.size == size && (archived.hash == chain.hash || prefix_hash(bytes) == archived.hash)
    {
        FileState::Unchanged
    } else if archived.size < size
        && bytes
            .get(..archived.size as usize)
            .is_some_and(|prefix| prefix_hash(prefix) == archived.hash)
    {
        FileState::Appended
    } else {
        FileState::Rewritten
    }
}

/// The file's size when its size is the archived size and it was last modified more than two
/// seconds before it was archived (so a write racing the ingest that archived it is not taken
/// for the archived content); `None` otherwise, or when it is not archived.
pub fn unchanged_by_stat(conn: &Connection, name: &str, path: &std::path::Path) -> Option<u64> {
    let (size, archived_at): (i64, i64) = conn
        .prepare_cached("SELECT size, ingested_at_ms FROM source_files WHERE path = ?1")
        .ok()?
        .query_row([name], |r| Ok((r.get(0)?, r.get(1)?)))
        .ok()?;
    let meta = std::fs::metadata(path).ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_millis();
    let modified = i64::try_from(modified).ok()?;
    (meta.len() == u64::try_from(size).ok()? && modified < archived_at - 2_000)
        .then_some(meta.len())
}

/// The source file that holds a session id, with that file's archived size.
pub fn session_source(
    conn: &Connection,
    session_id: &str,
) -> rusqlite::Result<Option<(String, i64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT s.source_path, COALESCE(f.size, 0) FROM sessions s
         LEFT JOIN source_files f ON f.path = s.source_path WHERE s.session_id = ?1",
    )?;
    stmt.query_row([session_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
}

/// Replaces everything `stamp.path` contributed with `sessions` and bumps the generation, inside
/// the caller's transaction (see `writer`), which calls [`resolve_usage`] before it commits.
/// With `continued`, the one session's rows after the archived cut are replaced instead (a
/// continued read, `tail`); with `resume`, where the next read continues is kept. Returns the
/// rows written.
pub fn write_file(
    conn: &Connection,
    stamp: &FileStamp,
    sessions: &[SessionRows],
    resume: Option<&Resumable>,
    continued: Option<&Continued>,
) -> rusqlite::Result<usize> {
    let (rows, marks) = match (continued, sessions) {
        (Some(continued), [session]) => write_continued(conn, stamp, session, continued, resume)?,
        _ => write_file_rows(conn, stamp, sessions, resume)?,
    };
    conn.prepare_cached("DELETE FROM source_resume WHERE path = ?1")?
        .execute([&stamp.path])?;
    if let (Some(resume), Some(marks)) = (resume, marks) {
        let mut state = resume.state.clone();
        state.marks = marks;
        let text = serde_json::to_string(&state)
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        conn.prepare_cached("INSERT INTO source_resume (path, state) VALUES (?1, ?2)")?
            .execute([&stamp.path, &text])?;
    }
    Ok(rows)
}

/// The rows of a continued read: the session's rows after the archived cut, its session-wide
/// rows (`sessions`, `runs`, `files`, `context_snapshots`, its `session_started` event) and the
/// usage rows from the cut are replaced; the rows before the cut stay.
fn write_continued(
    tx: &Connection,
    stamp: &FileStamp,
    s: &SessionRows,
    continued: &Continued,
    resume: Option<&Resumable>,
) -> rusqlite::Result<(usize, Option<Marks>)> {
    let sid = s.session.session_id.as_str();
    // The archive as the read found it: another writer may have written the file since (its
    // rows then lie elsewhere than the marks say).
    let archived: Option<String> = tx
        .prepare_cached("SELECT state FROM source_resume WHERE path = ?1")?
        .query_row([&stamp.path], |r| r.get(0))
        .optional()?;
    if archived.as_deref() != Some(continued.state_text.as_str()) {
        return Err(rusqlite::Error::ToSqlConversionFailure(
            "another writer wrote this file since it was read; it is read again at the next ingest"
                .into(),
        ));
    }
    let (epoch, machine, created_at, updated_at): (i64, Option<String>, Option<i64>, Option<i64>) =
        tx.prepare_cached(
            "SELECT replacement_epoch, machine, created_at, updated_at FROM sessions
             WHERE session_id = ?1",
        )?
        .query_row([sid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
    let m = &continued.marks;
    // Responses to resolve again: those recorded after the cut before (the rows written after
    // it are resolved by `insert_session`), and those of the turn the cut fell inside (their
    // commitment may change); every one of the session's when its start moved (the earliest
    // session owns a shared response).
    let mut keys: Vec<String> = Vec::new();
    let everything = created_at != s.session.created_at;
    let from = continued.turn_usage_from.unwrap_or(continued.usage_from);
    for sql in [
        "SELECT response_key FROM usage_records
         WHERE session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1)
           AND (seq >= ?2 OR ?3)",
        "SELECT response_key FROM usage_records WHERE subagent_session_id = ?1 AND ?3",
    ] {
        let mut stmt = tx.prepare_cached(sql)?;
        let found = stmt.query_map(params![sid, from as i64, everything], |r| {
            r.get::<_, String>(0)
        })?;
        for key in found {
            keys.push(key?);
        }
    }
    mark_affected(tx, keys.iter())?;
    tx.prepare_cached("INSERT OR IGNORE INTO temp.affected_sessions VALUES (?1)")?
        .execute([sid])?;
    // Whether another session continues this one depends on when this one ended: the sessions
    // sharing a response with it are linked again.
    if updated_at != s.session.updated_at || everything {
        tx.prepare_cached(SHARING_SESSIONS)?.execute([sid])?;
    }
    tx.prepare_cached(NOTE_SESSION_PARTITION)?.execute([sid])?;
    tx.prepare_cached(&format!("{FTS_DELETE_SESSION} AND rowid >= ?2"))?
        .execute(params![sid, m.blocks])?;
    for (table, from) in [
        ("messages", m.messages),
        ("blocks", m.blocks),
        ("actions", m.actions),
        ("events_raw", m.events),
        ("turns", m.turns),
        ("delegations", m.delegations),
    ] {
        let owned = of_session(table)?;
        tx.prepare_cached(&format!(
            "DELETE FROM {table} WHERE {owned} AND rowid >= ?2"
        ))?
        .execute(params![sid, from])?;
    }
    tx.prepare_cached(&format!(
        "DELETE FROM observed_events WHERE {} AND (rowid >= ?2 OR rowid = ?3)",
        of_session("observed_events")?
    ))?
    .execute(params![sid, m.observed, m.session_started])?;
    tx.prepare_cached(&format!(
        "DELETE FROM usage_records WHERE {} AND seq >= ?2",
        of_session("usage_records")?
    ))?
    .execute(params![sid, continued.usage_from as i64])?;
    for table in ["files", "context_snapshots", "runs", "sessions"] {
        tx.prepare_cached(&format!("DELETE FROM {table} WHERE {}", of_session(table)?))?
            .execute([sid])?;
    }
    // The continued turn's rows before the old cut take its new commitment.
    if let (Some(turn_usage), Some(turn)) = (continued.turn_usage_from, s.turns.first()) {
        for (table, from, to) in [
            ("messages", m.turn_messages, m.messages),
            ("actions", m.turn_actions, m.actions),
            ("events_raw", m.turn_events, m.events),
        ] {
            tx.prepare_cached(&format!(
                "UPDATE {table} SET turn_committed = ?4
                 WHERE {} AND rowid >= ?2 AND rowid < ?3",
                of_session(table)?
            ))?
            .execute(params![sid, from, to, turn.committed])?;
        }
        tx.prepare_cached(
            "UPDATE usage_records SET turn_committed = ?4
             WHERE session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1)
               AND seq >= ?2 AND seq < ?3",
        )?
        .execute(params![
            sid,
            turn_usage as i64,
            continued.usage_from as i64,
            turn.committed
        ])?;
    }
    let (rows, mut marks) = insert_session(
        tx,
        s,
        &stamp.path,
        machine.as_deref().or(stamp.machine.as_deref()),
        resume.map(|r| r.cut),
        false,
    )?;
    // A cut still inside the continued turn: that turn's first rows are the earlier of the
    // old ones and those just written.
    if let (Some(marks), Some(_)) = (marks.as_mut(), continued.turn_usage_from)
        && resume.is_some_and(|r| r.cut.open_turn == Some(0))
    {
        marks.turn_messages = marks.turn_messages.min(m.turn_messages);
        marks.turn_actions = marks.turn_actions.min(m.turn_actions);
        marks.turn_events = marks.turn_events.min(m.turn_events);
    }
    let generation = bump_generation(tx).map_err(|e| match e {
        quarry_archive::ArchiveError::Sqlite(e) => e,
        other => rusqlite::Error::ToSqlConversionFailure(Box::new(other)),
    })?;
    tx.prepare_cached("UPDATE sessions SET replacement_epoch = ?2 WHERE session_id = ?1")?
        .execute(params![sid, epoch])?;
    finish_file(tx, stamp, &[sid], 1, generation)?;
    Ok((rows, marks))
}

fn write_file_rows(
    tx: &Connection,
    stamp: &FileStamp,
    sessions: &[SessionRows],
    resume: Option<&Resumable>,
) -> rusqlite::Result<(usize, Option<Marks>)> {
    let mut old_ids = file_session_ids(tx, &stamp.path)?;
    if stamp.keep_missing {
        old_ids.retain(|id| sessions.iter().any(|s| &s.session.session_id == id));
    }
    let held = held_sessions(tx, sessions)?;
    // Every response this file's sessions recorded before (under this file or another), or
    // that progress records attribute to one of them, is resolved again once the file's rows
    // are replaced; the responses it records now, by `insert_session`.
    // (Read, then one row at a time: a statement writing several rows opens a statement
    // journal, and FTS5 flushes its pending index at every one.)
    let mut keys: Vec<String> = Vec::new();
    for id in old_ids
        .iter()
        .map(String::as_str)
        .chain(sessions.iter().map(|s| s.session.session_id.as_str()))
    {
        for sql in [
            "SELECT response_key FROM usage_records
             WHERE session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1)",
            "SELECT response_key FROM usage_records WHERE subagent_session_id = ?1",
        ] {
            let mut stmt = tx.prepare_cached(sql)?;
            let found = stmt.query_map([id], |r| r.get::<_, String>(0))?;
            for key in found {
                keys.push(key?);
            }
        }
        tx.prepare_cached("INSERT OR IGNORE INTO temp.affected_sessions VALUES (?1)")?
            .execute([id])?;
    }
    mark_affected(tx, keys.iter())?;
    // A session that only grew keeps its replacement epoch: its file grew and its archived
    // messages are the first of its new ones (same positions and records; a Gemini rewind
    // appended to the file removes messages, so it does not). Any other write starts a new one.
    let mut kept_epochs: Vec<(String, i64)> = Vec::new();
    if stamp.grew {
        let mut epoch_of =
            tx.prepare_cached("SELECT replacement_epoch FROM sessions WHERE session_id = ?1")?;
        let mut messages_of = tx.prepare_cached(
            "SELECT position, event_seq FROM messages
             WHERE session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1)
             ORDER BY position",
        )?;
        for id in &old_ids {
            let Some(epoch) = epoch_of.query_row([id], |r| r.get(0)).optional()? else {
                continue;
            };
            let old: Vec<(i64, Option<i64>)> = messages_of
                .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            let grown = sessions
                .iter()
                .find(|s| &s.session.session_id == id)
                .is_some_and(|s| {
                    old.len() <= s.messages.len()
                        && old.iter().zip(&s.messages).all(|((position, seq), new)| {
                            *position == new.position && *seq == Some(new.event_seq)
                        })
                });
            if grown {
                kept_epochs.push((id.clone(), epoch));
            }
        }
    }
    delete_sessions(tx, &old_ids)?;
    // A session another file held before (a copy this file supersedes) moves to this file.
    let moved: Vec<String> = held
        .iter()
        .filter(|h| h.path.as_deref().is_some_and(|p| p != stamp.path))
        .map(|h| h.id.clone())
        .collect();
    delete_sessions(tx, &moved)?;
    let mut superseded: Vec<&str> = held
        .iter()
        .filter_map(|h| h.path.as_deref())
        .filter(|p| *p != stamp.path)
        .collect();
    superseded.dedup();
    for path in superseded {
        tx.prepare_cached(
            "UPDATE source_files SET copy_of = ?2,
                 sessions = (SELECT COUNT(*) FROM sessions WHERE source_path = ?1)
             WHERE path = ?1",
        )?
        .execute([path, stamp.path.as_str()])?;
    }
    let mut rows = 0;
    let mut marks = None;
    for (s, h) in sessions.iter().zip(&held) {
        let machine = h.machine.clone().or_else(|| stamp.machine.clone());
        let cut = resume.filter(|_| sessions.len() == 1).map(|r| r.cut);
        let new = h.path.is_none();
        let (written, m) = insert_session(tx, s, &stamp.path, machine.as_deref(), cut, new)?;
        rows += written;
        marks = marks.or(m);
    }
    let generation = bump_generation(tx).map_err(|e| match e {
        quarry_archive::ArchiveError::Sqlite(e) => e,
        other => rusqlite::Error::ToSqlConversionFailure(Box::new(other)),
    })?;
    let mut stmt =
        tx.prepare_cached("UPDATE sessions SET replacement_epoch = ?2 WHERE session_id = ?1")?;
    for s in sessions {
        let id = &s.session.session_id;
        let epoch = kept_epochs
            .iter()
            .find(|(kept, _)| kept == id)
            .map_or(generation, |(_, e)| *e);
        stmt.execute(params![id, epoch])?;
    }
    // The claims about the written (or removed) sessions' objects: whether the rows hold them.
    let mut written: Vec<&str> = sessions
        .iter()
        .map(|s| s.session.session_id.as_str())
        .collect();
    written.extend(old_ids.iter().map(String::as_str));
    written.sort_unstable();
    written.dedup();
    finish_file(tx, stamp, &written, sessions.len(), generation)?;
    Ok((rows, marks))
}

/// What every write of a file ends with: the claims about its sessions' objects refreshed, and
/// its `source_files` row.
fn finish_file(
    tx: &Connection,
    stamp: &FileStamp,
    written: &[&str],
    sessions: usize,
    generation: i64,
) -> rusqlite::Result<()> {
    let refreshed = crate::assertions::refresh_targets(tx, written).map_err(|e| match e {
        crate::assertions::AssertionError::Sqlite(e) => e,
        other => rusqlite::Error::ToSqlConversionFailure(Box::new(other)),
    })?;
    if refreshed > 0 {
        tx.execute(quarry_archive::RECORD_WHOLE_TABLE_CHANGE, [])?;
    }
    tx.execute(
        &upsert_statement("source_files", &[])?,
        params![
            stamp.path,
            stamp.origin,
            stamp.size,
            stamp.hash,
            stamp.records,
            sessions as i64,
            generation,
            chrono::Utc::now().timestamp_millis(),
            stamp.machine,
            stamp.copy_of,
            stamp.links,
            stamp.file_id
        ],
    )?;
    Ok(())
}

/// The `source_seqs` column: a JSON array of seqs (an event's seq is its index), NULL for none.
fn source_seqs(sources: &[usize]) -> Option<String> {
    (!sources.is_empty()).then(|| {
        let seqs: Vec<String> = sources.iter().map(usize::to_string).collect();
        format!("[{}]", seqs.join(","))
    })
}

/// Lists response keys whose `usage` row [`resolve_usage`] must resolve again.
fn mark_affected<'a>(
    tx: &Connection,
    keys: impl Iterator<Item = &'a String>,
) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare_cached("INSERT OR IGNORE INTO temp.affected_keys VALUES (?1, ?2)")?;
    for key in keys {
        stmt.execute(params![key, key_hash(key)])?;
    }
    Ok(())
}

/// Makes `conn` ready to write files: the temporary tables that collect, file by file, what
/// [`resolve_usage`] resolves (created once per connection, emptied).
pub fn prepare(conn: &Connection) -> rusqlite::Result<()> {
    run_all(conn, AFFECTED_TABLES)
}

/// Resolves, inside the caller's transaction and before it commits, the `usage` rows of every
/// response the files written since the last call touched, and the token sums of the sessions
/// that owned or now own them. Once per transaction, not per file: FTS5 flushes its pending
/// index at each multi-row statement, so per-file resolution would cut the index into small
/// segments.
pub fn resolve_usage(conn: &Connection) -> rusqlite::Result<()> {
    run_all(conn, RESOLVE_USAGE)
}

/// Runs each statement, prepared once per connection.
fn run_all(tx: &Connection, statements: &[&str]) -> rusqlite::Result<()> {
    for sql in statements {
        tx.prepare_cached(sql)?.execute([])?;
    }
    Ok(())
}

/// Where the archive already holds one of a file's sessions: the file it came from and the
/// machine it was first read from.
struct Held {
    id: String,
    path: Option<String>,
    machine: Option<String>,
}

/// For each of `sessions`, in order, where the archive holds it now (nowhere, for a new one).
fn held_sessions(tx: &Connection, sessions: &[SessionRows]) -> rusqlite::Result<Vec<Held>> {
    let mut stmt =
        tx.prepare_cached("SELECT source_path, machine FROM sessions WHERE session_id = ?1")?;
    let mut held = Vec::with_capacity(sessions.len());
    for s in sessions {
        let id = s.session.session_id.clone();
        let found: Option<(String, Option<String>)> = stmt
            .query_row([&id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let (path, machine) = found.map_or((None, None), |(p, m)| (Some(p), m));
        held.push(Held { id, path, machine });
    }
    Ok(held)
}

/// The sessions `path` contributed.
pub fn file_session_ids(tx: &Connection, path: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = tx.prepare_cached("SELECT session_id FROM sessions WHERE source_path = ?1")?;
    stmt.query_map([path], |r| r.get(0))?.collect()
}

/// Deletes every row of `ids` that a re-ingest replaces (`usage` is resolved afterwards).
fn delete_sessions(tx: &Connection, ids: &[String]) -> rusqlite::Result<()> {
    for id in ids {
        // The snapshot partition the session leaves (its rows are about to go).
        tx.prepare_cached(NOTE_SESSION_PARTITION)?.execute([id])?;
        // The index first: its delete reads the blocks' values.
        tx.prepare_cached(FTS_DELETE_SESSION)?.execute([id])?;
        // Every table whose rows a re-ingest replaces, `sessions` and `delegations` included.
        for table in quarry_schema::TABLES
            .iter()
            .filter(|t| t.replaced_per_session && t.session_key.is_some())
        {
            let owned = of_session(table.name)?;
            tx.prepare_cached(&format!("DELETE FROM {} WHERE {owned}", table.name))?
                .execute([id])?;
        }
    }
    Ok(())
}

/// Inserts one session's rows (`new`: the archive held no session of its id); with a `cut`,
/// returns the first row id after it in each table. Its responses are resolved here when they
/// can be, else listed for [`resolve_usage`].
fn insert_session(
    tx: &Connection,
    s: &SessionRows,
    source_path: &str,
    machine: Option<&str>,
    cut: Option<Cut>,
    new: bool,
) -> rusqlite::Result<(usize, Option<Marks>)> {
    let sid = s.session.session_id.as_str();
    let r = &s.session;
    let local = s.message_index();
    let at = cut.unwrap_or_default();
    // Whether a row of message `id` lies after the cut.
    let after = |id: &str| local.get(id).is_some_and(|&i| i >= at.message);
    let mut marks = Marks::default();
    let mark = |slot: &mut i64, hit: bool| {
        if hit && *slot == i64::MAX {
            *slot = tx.last_insert_rowid();
        }
    };
    // The session's number (its own since it was first seen): the numbered tables' rows carry it.
    tx.prepare_cached(NUMBER_SESSION)?.execute([sid])?;
    let num: i64 = tx
        .prepare_cached(&format!("SELECT {SESSION_NUM_OF}"))?
        .query_row([sid], |r| r.get(0))?;
    // `tags` mirrors the session's active tag assertions (they outlive re-ingest).
    tx.prepare_cached(&insert_statement(
        "sessions",
        &[
            (
                "tags",
                "(SELECT COALESCE(json_group_array(value), '[]') FROM
               (SELECT DISTINCT value FROM assertions
                WHERE session_id = {session_id} AND kind = 'tag' AND status = 'active'
                ORDER BY value))",
            ),
            // Sums of the usage rows the session owns: `RESOLVE_USAGE` fills them.
            ("input_tokens", "0"),
            ("output_tokens", "0"),
            ("cache_read_tokens", "0"),
            ("cache_write_tokens", "0"),
            ("cache_write_5m_tokens", "0"),
            ("cache_write_1h_tokens", "0"),
            // Set by `write_file_rows` once the write's generation is known.
            ("replacement_epoch", "0"),
        ],
    )?)?
    .execute(params![
        sid,
        r.origin,
        r.native_id,
        r.owner,
        r.parent_session_id,
        r.root_session_id,
        r.branch_type,
        r.title,
        r.cwd,
        r.repo,
        r.git_branch,
        r.model,
        r.created_at,
        r.updated_at,
        r.duration_ms,
        r.counters.message_count,
        r.counters.word_count,
        r.counters.user_messages,
        r.counters.authored_user_messages,
        r.counters.assistant_messages,
        r.counters.system_messages,
        r.counters.tool_messages,
        r.counters.tool_use_messages,
        r.counters.thinking_messages,
        r.counters.paste_messages,
        r.counters.user_words,
        r.counters.authored_user_words,
        r.counters.assistant_words,
        r.reported_cost_usd,
        source_path,
        machine
    ])?;

    let mut stmt = tx.prepare_cached(&insert_statement("messages", &[])?)?;
    for (i, m) in s.messages.iter().enumerate() {
        stmt.execute(params![
            m.message_id,
            sid,
            m.position,
            m.role,
            m.kind,
            m.material_origin,
            m.model,
            m.occurred_at_ms,
            m.word_count,
            m.text,
            m.tokens.map(|t| t.input),
            m.tokens.map(|t| t.output),
            m.tokens.map(|t| t.cache_read),
            m.tokens.map(|t| t.cache_write),
            m.duration_ms,
            m.stop_reason,
            m.is_sidechain,
            s.turn_id(m.turn),
            s.turn_committed(m.turn),
            m.tokens.map(|t| t.cache_write_5m()),
            m.tokens.map(|t| t.cache_write_1h),
            m.hidden,
            m.event_seq,
            num,
        ])?;
        mark(&mut marks.messages, i >= at.message);
        mark(
            &mut marks.turn_messages,
            m.turn.is_some() && m.turn == at.open_turn,
        );
    }

    let mut block_stmt = tx.prepare_cached(&insert_statement("blocks", &[])?)?;
    let mut fts_stmt = tx.prepare_cached(&fulltext_insert_statement("blocks")?)?;
    for b in &s.blocks {
        let d = &b.block;
        block_stmt.execute(params![
            b.block_id,
            b.message_id,
            sid,
            b.position,
            d.kind.as_str(),
            d.text,
            d.tool_name,
            d.tool_id,
            d.tool_input,
            d.tool_command,
            d.tool_path,
            d.is_error,
            d.exit_code,
            b.occurred_at_ms,
            num,
        ])?;
        mark(&mut marks.blocks, after(&b.message_id));
        let indexed = [
            Some(d.text.as_str()),
            d.tool_name.as_deref(),
            d.tool_command.as_deref(),
            d.tool_path.as_deref(),
        ];
        if indexed.iter().any(|v| v.is_some_and(|v| !v.is_empty())) {
            let [text, name, command, path] = indexed.map(|v| v.map(fold_for_index));
            fts_stmt.execute(params![tx.last_insert_rowid(), text, name, command, path])?;
        }
    }

    let mut stmt = tx.prepare_cached(&insert_statement("actions", &[])?)?;
    for a in &s.actions {
        stmt.execute(params![
            a.action_id,
            sid,
            a.message_id,
            a.tool_use_block_id,
            a.tool_result_block_id,
            a.tool_name,
            a.semantic_type,
            a.tool_command,
            a.tool_path,
            a.tool_input,
            a.output_text,
            a.is_error,
            a.exit_code,
            a.occurred_at_ms,
            a.duration_ms,
            a.followup_class,
            s.turn_id(a.turn),
            s.turn_committed(a.turn),
            num,
        ])?;
        mark(&mut marks.actions, after(&a.message_id));
        mark(
            &mut marks.turn_actions,
            a.turn.is_some() && a.turn == at.open_turn,
        );
    }

    let mut stmt = tx.prepare_cached(&insert_statement("files", &[])?)?;
    for f in &s.files {
        stmt.execute(params![
            sid,
            f.path,
            f.action_count,
            f.first_seen_ms,
            f.last_seen_ms,
            f.first_message_id,
            f.first_tool_use_block_id,
            f.last_tool_use_block_id,
            num,
        ])?;
    }

    let run_id = format!("{sid}/run");
    let last_time = r.updated_at;
    tx.prepare_cached(&insert_statement("runs", &[])?)?
        .execute(params![
            run_id,
            sid,
            s.run_role,
            s.run_agent,
            s.run_status,
            s.harness,
            r.cwd,
            r.git_branch,
            r.model,
            r.created_at,
            last_time
        ])?;

    let mut stmt = tx.prepare_cached(&insert_statement(
        "observed_events",
        &[("delivery_state", "'delivered'")],
    )?)?;
    for o in &s.observed {
        stmt.execute(params![
            o.event_id,
            sid,
            o.kind,
            o.subject,
            o.object,
            o.handler,
            o.status,
            o.summary,
            o.occurred_at_ms,
            num,
        ])?;
        if o.kind == "session_started" {
            marks.session_started = tx.last_insert_rowid();
        } else {
            let message = o
                .subject
                .as_deref()
                .and_then(|a| a.rsplit_once("/b"))
                .map(|(m, _)| m);
            mark(&mut marks.observed, message.is_some_and(after));
        }
    }

    let mut stmt = tx.prepare_cached(&insert_statement("context_snapshots", &[])?)?;
    for (k, c) in s.snapshots.iter().enumerate() {
        stmt.execute(params![
            format!("{sid}/ctx{k}"),
            sid,
            run_id,
            c.boundary,
            c.inheritance_mode,
            c.segment,
            c.text,
            c.occurred_at_ms
        ])?;
    }

    let mut stmt = tx.prepare_cached(&insert_statement(
        "delegations",
        &[
            ("dispatch_model", "{requested_model}"),
            (
                "child_model",
                "(SELECT model FROM sessions WHERE session_id = {child_session_id})",
            ),
            ("exit_code", "NULL"),
        ],
    )?)?;
    for d in &s.delegations {
        stmt.execute(params![
            d.delegation_id,
            sid,
            d.parent_message_id,
            d.child_session_id,
            d.instruction,
            d.requested_model,
            d.mapping_state,
            d.result_status,
            d.is_error,
            d.occurred_at_ms
        ])?;
        mark(&mut marks.delegations, after(&d.parent_message_id));
    }

    let mut stmt = tx.prepare_cached(&insert_statement("events_raw", &[])?)?;
    for (i, e) in s.events.iter().enumerate() {
        stmt.execute(params![
            sid,
            e.seq,
            e.event.kind,
            e.event.time,
            e.event.surface.as_str(),
            s.turn_id(e.turn),
            s.turn_committed(e.turn),
            e.event.payload,
            e.event.replaced_by.map(|i| i as i64),
            source_seqs(&e.event.sources),
            num,
        ])?;
        mark(&mut marks.events, i >= at.event);
        mark(
            &mut marks.turn_events,
            e.turn.is_some() && e.turn == at.open_turn,
        );
    }

    let mut stmt = tx.prepare_cached(&insert_statement("turns", &[])?)?;
    for (i, t) in s.turns.iter().enumerate() {
        stmt.execute(params![
            sid,
            t.turn_id,
            t.started_at_ms,
            t.completed_at_ms,
            t.committed,
            t.completed_at_ms
                .zip(t.started_at_ms)
                .map(|(end, start)| end - start),
            num,
        ])?;
        mark(&mut marks.turns, i >= at.turn);
    }

    // A response this record alone holds (no other record anywhere, none of this session's
    // others, and not among the keys already to be resolved again) resolves to itself: its
    // `usage` row is written here, one row, instead of by `RESOLVE_USAGE`'s statements, which
    // each look the key up again in the indexes of both tables. A progress record naming a
    // subagent is left to `RESOLVE_USAGE` (its owner depends on whether the subagent's session
    // is archived). The rest are listed for `RESOLVE_USAGE`.
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(s.usage.len());
    for u in &s.usage {
        *seen.entry(u.response_key.as_str()).or_default() += 1;
    }
    let mut listed = tx.prepare_cached("SELECT 1 FROM temp.affected_keys WHERE key = ?1")?;
    let mut recorded = tx.prepare_cached(RECORDED)?;
    let mut own = tx.prepare_cached(RESOLVE_ALONE)?;
    let mut unresolved: Vec<&String> = Vec::new();
    let mut stmt = tx.prepare_cached(&insert_statement("usage_records", &[])?)?;
    for u in &s.usage {
        let hash = key_hash(&u.response_key);
        let names_subagent = u.via == RecordedVia::Progress && u.subagent_session_id.is_some();
        let alone = seen[u.response_key.as_str()] == 1
            && !names_subagent
            && !listed.exists([&u.response_key])?
            && !recorded.exists(params![u.response_key, hash])?;
        // The record's values; a response it alone holds gets its `usage` row from the same.
        let values = params![
            sid,
            u.response_key,
            u.via.as_str(),
            u.subagent_session_id,
            u.message_id,
            u.request_id,
            u.model,
            u.tokens.input,
            u.tokens.output,
            u.tokens.reasoning,
            u.tokens.cache_read,
            u.tokens.cache_write,
            u.tokens.cache_write_5m(),
            u.tokens.cache_write_1h,
            u.occurred_at_ms,
            s.turn_id(u.turn),
            s.turn_committed(u.turn),
            u.seq,
            hash,
            num,
        ];
        stmt.execute(values)?;
        if alone {
            own.execute(values)?;
        } else {
            unresolved.push(&u.response_key);
        }
    }
    let all_alone = unresolved.is_empty();
    mark_affected(tx, unresolved.into_iter())?;
    // A new session whose responses all resolved to themselves shares none with another
    // session, so it continues none (`RESOLVE_USAGE` looks again if a later file shares one).
    if new && all_alone {
        tx.prepare_cached("INSERT OR IGNORE INTO temp.fresh_sessions VALUES (?1)")?
            .execute([sid])?;
    }
    Ok((s.row_count(), cut.map(|_| marks)))
}

/// Links delegations to child sessions ingested later (child model, mapping state) and lists
/// subagent sessions whose parent session is not in the archive.
pub fn link(conn: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
    conn.execute(
        "UPDATE delegations SET child_model = (SELECT model FROM sessions WHERE session_id = child_session_id)
         WHERE child_model IS NULL AND child_session_id IS NOT NULL
           AND EXISTS (SELECT 1 FROM sessions WHERE session_id = child_session_id AND model IS NOT NULL)",
        [],
    )?;
    let mut stmt = conn.prepare(
        "SELECT session_id, parent_session_id FROM sessions s
         WHERE parent_session_id IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM sessions p WHERE p.session_id = s.parent_session_id)
         ORDER BY session_id",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}
