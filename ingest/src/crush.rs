//! Crush sessions (`charmbracelet/crush`, `internal/db/migrations`), from the SQLite file each
//! project keeps: `<project>/.crush/crush.db` (`--data-dir`, `options.data_directory`), in WAL
//! mode (a copy often holds everything in `crush.db-wal`, which the reader sees). Tables
//! `sessions (id, parent_session_id, title, message_count, prompt_tokens, completion_tokens,
//! cost, updated_at, created_at, summary_message_id?, todos?)` and `messages (id, session_id,
//! role, parts, model, provider?, created_at, updated_at, finished_at, is_summary_message?)`,
//! times in Unix seconds (whatever the DDL's comments say). [`super::sources`] reads each
//! session into a document of JSON Lines (the session, with the cost of its sub-sessions, then
//! its messages in order), which [`parse`] reads.
//!
//! A message's `parts` is a JSON list of `{type, data}`: `text {text}`, `reasoning
//! {thinking}`, `tool_call {id, name, input}`, `tool_result {tool_call_id, name, content,
//! is_error}` (in a `tool` row), `finish {reason, time}`, `image_url`, `binary`; an unknown
//! type is kept in the raw record and skipped. Each assistant row is one model step, with its
//! `model` and `provider`.
//!
//! Usage: Crush keeps no counts per request. The session's `prompt_tokens` and
//! `completion_tokens` are overwritten after each step with that step's context (and their
//! meaning changed between releases), so they are no usage at all: a Crush session has no usage
//! rows. Its `cost` is Crush's own running sum of every step's cost (0 for flat-rate or unpriced
//! models), into which a sub-session's cost is added as well: it is the top-level session's
//! `reported_cost_usd`, and a sub-session (an agent tool's, a title's) reports none, so the
//! costs add up once.

use rusqlite::Connection;
use serde_json::Value;

use super::lines::Line;
use super::model::*;
use super::text::str_field;

/// Whether a database has Crush's tables.
pub fn is_store(conn: &Connection) -> rusqlite::Result<bool> {
    use super::sources::has_column;
    Ok(
        has_column(conn, "sessions", "completion_tokens")?
            && has_column(conn, "messages", "parts")?,
    )
}

/// The sessions of a Crush database, oldest first, with the size of each one's messages.
pub fn sessions(conn: &Connection) -> rusqlite::Result<Vec<(String, u64)>> {
    super::sources::list(
        conn,
        "SELECT s.id, (SELECT COALESCE(SUM(length(m.parts)), 0) FROM messages m
                       WHERE m.session_id = s.id)
         FROM sessions s ORDER BY s.created_at, s.id",
    )
}

/// One session's rows as JSON Lines: the session, then its messages in Crush's order; `None`
/// when the session is gone.
pub fn document(conn: &Connection, session: &str) -> rusqlite::Result<Option<Vec<u8>>> {
    let Some(row) =
        super::sources::rows(conn, "SELECT * FROM sessions WHERE id = ?1", session)?.pop()
    else {
        return Ok(None);
    };
    let mut out = Vec::new();
    let mut line = |value: Value| super::sources::json_line(&mut out, &value);
    line(serde_json::json!({"crush": "session", "row": row}));
    for row in super::sources::rows(
        conn,
        "SELECT * FROM messages WHERE session_id = ?1 ORDER BY created_at, rowid",
        session,
    )? {
        line(serde_json::json!({"crush": "message", "row": row}));
    }
    Ok(Some(out))
}

/// Whether a JSONL line is a row of a Crush session's document.
pub fn is_line(value: &Value) -> bool {
    matches!(
        value.get("crush").and_then(Value::as_str),
        Some("session" | "message")
    )
}

/// Epoch milliseconds of a Crush time: seconds (milliseconds in a few rows).
fn time(value: Option<&Value>) -> Option<i64> {
    let n = value?.as_i64().filter(|n| *n > 0)?;
    Some(if n > 10_000_000_000 {
        n
    } else {
        n.saturating_mul(1000)
    })
}

/// Reads one session's document.
pub fn parse(name: &str, lines: Vec<Line>, parsed: &mut ParsedFile) {
    let id = name.rsplit_once('#').map_or(name, |(_, id)| id);
    let mut session = SessionDraft::new(Origin::Crush, id);
    // The folder holding `.crush` is the project's.
    let store = name.rsplit_once('#').map_or(name, |(store, _)| store);
    session.cwd = std::path::Path::new(store)
        .parent()
        .filter(|d| d.file_name().is_some_and(|f| f == ".crush"))
        .and_then(std::path::Path::parent)
        .map(|p| p.display().to_string());
    for line in lines {
        parsed.records += 1;
        let value = &line.value;
        let kind = str_field(value, "crush").unwrap_or_default();
        let Some(row) = value.get("row").filter(|r| r.is_object()) else {
            parsed.diagnostics.push(Diagnostic {
                file: name.to_string(),
                line: Some(line.number),
                kind: "bad_record",
                reason: format!("a Crush {kind} row that is not a JSON object"),
            });
            session.push_event(&kind, None, Surface::LogOnly, line.text);
            continue;
        };
        if kind == "session" {
            session.push_event("session", None, Surface::LogOnly, line.text.clone());
            session.title = str_field(row, "title").filter(|t| !t.trim().is_empty());
            session.created_at = time(row.get("created_at"));
            session.updated_at = time(row.get("updated_at"));
            match str_field(row, "parent_session_id").filter(|p| !p.is_empty()) {
                Some(parent) => {
                    session.parent_native_id = Some(parent);
                    session.branch_type = Some("subagent");
                }
                None => {
                    session.reported_cost_usd = row.get("cost").and_then(Value::as_f64);
                }
            }
            continue;
        }
        let at = time(row.get("created_at"));
        let event = session.push_event("message", at, Surface::Current, line.text.clone());
        let parts = match row.get("parts") {
            Some(Value::String(text)) => serde_json::from_str::<Value>(text).ok(),
            Some(other) => Some(other.clone()),
            None => None,
        };
        let Some(Value::Array(parts)) = parts else {
            parsed.diagnostics.push(Diagnostic {
                file: name.to_string(),
                line: Some(line.number),
                kind: "bad_record",
                reason: "a Crush message whose parts are not a JSON list".into(),
            });
            continue;
        };
        read_message(&mut session, row, &parts, at, event);
    }
    parsed.sessions.push(session);
}

/// A message row: its parts as blocks.
fn read_message(
    session: &mut SessionDraft,
    row: &Value,
    parts: &[Value],
    at: Option<i64>,
    event: usize,
) {
    let role = match str_field(row, "role").as_deref() {
        Some("assistant") => Role::Assistant,
        Some("tool") => Role::Tool,
        Some("system") => Role::System,
        _ => Role::User,
    };
    let mut m = MessageDraft::new(role, at, event);
    if role == Role::Assistant {
        m.model = str_field(row, "model").filter(|m| !m.is_empty());
    }
    m.compaction_summary = row
        .get("is_summary_message")
        .and_then(Value::as_i64)
        .is_some_and(|n| n != 0);
    for part in parts {
        let data = part.get("data").unwrap_or(&Value::Null);
        match str_field(part, "type").as_deref() {
            Some("text") => m.blocks.push(BlockDraft::text(
                BlockKind::Text,
                str_field(data, "text").unwrap_or_default(),
            )),
            Some("reasoning") => m.blocks.push(BlockDraft::text(
                BlockKind::Thinking,
                str_field(data, "thinking").unwrap_or_default(),
            )),
            Some("image_url" | "binary") => m
                .blocks
                .push(BlockDraft::text(BlockKind::Image, String::new())),
            Some("tool_call") => {
                let input = str_field(data, "input")
                    .map(|i| serde_json::from_str(&i).unwrap_or(Value::String(i)))
                    .unwrap_or(Value::Null);
                m.blocks.push(BlockDraft::tool_use(
                    str_field(data, "name"),
                    str_field(data, "id"),
                    &input,
                ));
            }
            Some("tool_result") => {
                let mut block = BlockDraft::text(
                    BlockKind::ToolResult,
                    str_field(data, "content").unwrap_or_default(),
                );
                block.tool_id = str_field(data, "tool_call_id");
                block.is_error = data.get("is_error").and_then(Value::as_bool);
                m.blocks.push(block);
            }
            Some("finish") => {
                m.stop_reason = str_field(data, "reason");
            }
            _ => {}
        }
    }
    session.messages.push(m);
}
