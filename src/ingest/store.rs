//! Writing one input file's sessions into the archive in one transaction: the file's previous
//! sessions are replaced atomically, `source_files` records size and hash, and `generation` is
//! bumped. A failure rolls the whole file back; files committed before it stay.
//!
//! Every statement's column list comes from the declaration of the tables (`quarry_schema`,
//! through `insert_statement`): each `INSERT` names every declared column and numbers a
//! placeholder per column in declaration order, so the parameters below are passed in
//! declaration order, and a column that is computed in SQL is named in the statement's
//! expressions instead.

use rusqlite::{Connection, params};

use quarry_providers::schema::FTS_DELETE_SESSION;
use quarry_providers::{
    bump_generation, fulltext_insert_statement, insert_statement, upsert_statement,
};

use super::derive::SessionRows;

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
}

/// How a file stands against the archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileState {
    /// Never ingested.
    New,
    /// Ingested with the same size and hash: nothing to do.
    Unchanged,
    /// Ingested, but its content changed (grew or was rewritten).
    Changed,
}

/// Compares a file's size and hash with what the archive recorded.
pub fn file_state(
    conn: &Connection,
    path: &str,
    size: i64,
    hash: &str,
) -> rusqlite::Result<FileState> {
    let mut stmt = conn.prepare_cached("SELECT size, hash FROM source_files WHERE path = ?1")?;
    let mut rows = stmt.query([path])?;
    Ok(match rows.next()? {
        None => FileState::New,
        Some(row) => {
            let (s, h): (i64, String) = (row.get(0)?, row.get(1)?);
            if s == size && h == hash {
                FileState::Unchanged
            } else {
                FileState::Changed
            }
        }
    })
}

/// The source file that owns a session id, if any.
pub fn session_owner(conn: &Connection, session_id: &str) -> rusqlite::Result<Option<String>> {
    let mut stmt = conn.prepare_cached("SELECT source_path FROM sessions WHERE session_id = ?1")?;
    let mut rows = stmt.query([session_id])?;
    rows.next()?.map(|r| r.get(0)).transpose()
}

/// Replaces everything `stamp.path` contributed with `sessions` and bumps the generation, inside
/// the caller's transaction (see `writer`). Returns the rows written.
pub fn write_file(
    conn: &Connection,
    stamp: &FileStamp,
    sessions: &[SessionRows],
) -> rusqlite::Result<usize> {
    write_file_rows(conn, stamp, sessions)
}

fn write_file_rows(
    tx: &Connection,
    stamp: &FileStamp,
    sessions: &[SessionRows],
) -> rusqlite::Result<usize> {
    delete_file_sessions(tx, &stamp.path)?;
    let mut rows = 0;
    for s in sessions {
        rows += insert_session(tx, s, &stamp.path)?;
    }
    let generation = bump_generation(tx).map_err(|e| match e {
        quarry_providers::ArchiveError::Sqlite(e) => e,
        other => rusqlite::Error::ToSqlConversionFailure(Box::new(other)),
    })?;
    tx.execute(
        &upsert_statement("source_files", &[])?,
        params![
            stamp.path,
            stamp.origin,
            stamp.size,
            stamp.hash,
            stamp.records,
            sessions.len() as i64,
            generation,
            chrono::Utc::now().timestamp_millis()
        ],
    )?;
    Ok(rows)
}

fn delete_file_sessions(tx: &Connection, path: &str) -> rusqlite::Result<()> {
    let ids: Vec<String> = {
        let mut stmt =
            tx.prepare_cached("SELECT session_id FROM sessions WHERE source_path = ?1")?;
        stmt.query_map([path], |r| r.get(0))?
            .collect::<Result<_, _>>()?
    };
    for id in &ids {
        // The index first: its delete reads the blocks' values.
        tx.prepare_cached(FTS_DELETE_SESSION)?.execute([id])?;
        // Every table whose rows a re-ingest replaces, `sessions` and `delegations` included.
        for table in quarry_schema::TABLES
            .iter()
            .filter(|t| t.replaced_per_session)
        {
            if let Some(key) = table.session_key {
                tx.prepare_cached(&format!("DELETE FROM {} WHERE {key} = ?1", table.name))?
                    .execute([id])?;
            }
        }
    }
    Ok(())
}

fn insert_session(tx: &Connection, s: &SessionRows, source_path: &str) -> rusqlite::Result<usize> {
    let sid = s.session.session_id.as_str();
    let r = &s.session;
    // `tags` mirrors the session's active tag assertions (they outlive re-ingest).
    tx.prepare_cached(&insert_statement(
        "sessions",
        &[(
            "tags",
            "(SELECT COALESCE(json_group_array(value), '[]') FROM
               (SELECT DISTINCT value FROM assertions
                WHERE target_ref = {session_id} AND kind = 'tag' AND status = 'active'
                ORDER BY value))",
        )],
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
        r.message_count,
        r.word_count,
        r.user_messages,
        r.authored_user_messages,
        r.assistant_messages,
        r.system_messages,
        r.tool_messages,
        r.tool_use_messages,
        r.thinking_messages,
        r.paste_messages,
        r.user_words,
        r.authored_user_words,
        r.assistant_words,
        r.input_tokens,
        r.output_tokens,
        r.cache_read_tokens,
        r.cache_write_tokens,
        r.reported_cost_usd,
        source_path
    ])?;

    let mut stmt = tx.prepare_cached(&insert_statement("messages", &[])?)?;
    for m in &s.messages {
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
        ])?;
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
        ])?;
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
        ])?;
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
            f.last_tool_use_block_id
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
            o.occurred_at_ms
        ])?;
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
    }

    let mut stmt = tx.prepare_cached(&insert_statement("events_raw", &[])?)?;
    for e in &s.events {
        stmt.execute(params![
            sid,
            e.seq,
            e.event.kind,
            e.event.time,
            e.event.surface.as_str(),
            s.turn_id(e.turn),
            s.turn_committed(e.turn),
            e.event.payload
        ])?;
    }

    let mut stmt = tx.prepare_cached(&insert_statement("turns", &[])?)?;
    for t in &s.turns {
        stmt.execute(params![
            sid,
            t.turn_id,
            t.started_at_ms,
            t.completed_at_ms,
            t.committed
        ])?;
    }

    let mut stmt = tx.prepare_cached(&insert_statement("usage", &[])?)?;
    for u in &s.usage {
        stmt.execute(params![
            sid,
            u.message_id,
            u.request_id,
            u.model,
            u.tokens.input,
            u.tokens.output,
            u.tokens.reasoning,
            u.tokens.cache_read,
            u.tokens.cache_write,
            u.occurred_at_ms,
            s.turn_id(u.turn),
            s.turn_committed(u.turn)
        ])?;
    }
    Ok(s.row_count())
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
