//! Goose sessions (`block/goose`, `crates/goose/src/session/session_manager.rs`), from its
//! SQLite store `sessions.db`: `${XDG_DATA_HOME:-~/.local/share}/goose/sessions/sessions.db`
//! (`$GOOSE_PATH_ROOT/data/sessions/sessions.db`), in WAL mode, written since Goose 1.10. Tables
//! `sessions (id, name, description, session_type, working_dir, created_at, updated_at,
//! model_config_json, accumulated_input_tokens, accumulated_output_tokens,
//! accumulated_cache_read_tokens, accumulated_cache_write_tokens, parent_session_id, ...)`,
//! `messages (id, session_id, role, content_json, created_timestamp, metadata_json)`, and from
//! schema 15 `usage_ledger (id, session_id, created_timestamp, model, input_tokens,
//! output_tokens, cache_read_tokens, cache_write_tokens, cost_source, is_compaction)`, one row per
//! model call. [`super::sources`] reads each session into a document of JSON Lines (the session's
//! row, its messages, its ledger rows), which [`parse`] reads.
//!
//! A message's `content_json` is the list of its items: `text`, `thinking`, `image`,
//! `toolRequest {id, toolCall {value {name, arguments}}}`, and `toolResponse {id, toolResult
//! {status, value {content, isError}}}` in a user-role row. Times are epoch seconds (a few rows
//! milliseconds); the session's are SQLite's `YYYY-MM-DD HH:MM:SS` (UTC) or RFC 3339.
//!
//! Usage: each ledger row is one model call, compaction calls included; its `input_tokens`
//! holds the cache reads and writes (Goose folds them in), so the uncached input is the input
//! less both, and `output_tokens` holds the reasoning. The first call after Goose added the
//! ledger writes one `carried_forward` row with every earlier call's tokens and no model, dated
//! that day: it is counted once, as it is, with no model. A database from before the ledger
//! has only the session's running totals (`accumulated_*`): they are one row, dated at the
//! session's start (the cache split exists from schema 14). A subagent runs in a session of its
//! own (`session_type` `sub_agent`, `parent_session_id`), its calls in its own rows.

use rusqlite::Connection;
use serde_json::Value;

use super::lines::Line;
use super::model::*;
use super::text::{json_time, parse_time, str_field};

/// The sessions of a Goose database, oldest first, with the size of each one's messages.
pub fn sessions(conn: &Connection) -> rusqlite::Result<Vec<(String, u64)>> {
    super::sources::list(
        conn,
        "SELECT s.id, (SELECT COALESCE(SUM(length(m.content_json)), 0) FROM messages m
                       WHERE m.session_id = s.id)
         FROM sessions s ORDER BY s.created_at, s.id",
    )
}

/// One session's rows as JSON Lines: the session (and whether the database keeps a ledger),
/// its messages in Goose's order, its ledger rows; `None` when the session is gone.
pub fn document(conn: &Connection, session: &str) -> rusqlite::Result<Option<Vec<u8>>> {
    let ledger = conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'usage_ledger'",
        [],
        |r| r.get::<_, i64>(0),
    )? > 0;
    let mut rows = super::sources::rows(conn, "SELECT * FROM sessions WHERE id = ?1", session)?;
    let Some(row) = rows.pop() else {
        return Ok(None);
    };
    let mut out = Vec::new();
    let mut line = |value: Value| super::sources::json_line(&mut out, &value);
    line(serde_json::json!({"goose": "session", "ledger": ledger, "row": row}));
    for row in super::sources::rows(
        conn,
        "SELECT * FROM messages WHERE session_id = ?1 ORDER BY created_timestamp, id",
        session,
    )? {
        line(serde_json::json!({"goose": "message", "row": row}));
    }
    if ledger {
        for row in super::sources::rows(
            conn,
            "SELECT * FROM usage_ledger WHERE session_id = ?1 ORDER BY id",
            session,
        )? {
            line(serde_json::json!({"goose": "usage", "row": row}));
        }
    }
    Ok(Some(out))
}

/// Whether a JSONL line is a row of a Goose session's document.
pub fn is_line(value: &Value) -> bool {
    matches!(
        value.get("goose").and_then(Value::as_str),
        Some("session" | "message" | "usage")
    )
}

/// Reads one session's document.
pub fn parse(name: &str, lines: Vec<Line>, parsed: &mut ParsedFile) {
    let id = name.rsplit_once('#').map_or(name, |(_, id)| id);
    let mut session = SessionDraft::new(Origin::Goose, id);
    let mut ledger = false;
    let mut model = None;
    for line in lines {
        parsed.records += 1;
        let value = &line.value;
        let kind = str_field(value, "goose").unwrap_or_default();
        let row = value.get("row").filter(|r| r.is_object());
        let Some(row) = row else {
            parsed.diagnostics.push(Diagnostic {
                file: name.to_string(),
                line: Some(line.number),
                kind: "bad_record",
                reason: format!("a Goose {kind} row that is not a JSON object"),
            });
            session.push_event(&kind, None, Surface::LogOnly, line.text);
            continue;
        };
        match kind.as_str() {
            "session" => {
                session.push_event("session", None, Surface::LogOnly, line.text.clone());
                ledger = value.get("ledger").and_then(Value::as_bool) == Some(true);
                model = row
                    .get("model_config_json")
                    .and_then(|m| str_field(m, "model_name"));
                read_session(&mut session, row, ledger, model.clone());
            }
            "message" => {
                if !row.get("content_json").is_some_and(Value::is_array) {
                    parsed.diagnostics.push(Diagnostic {
                        file: name.to_string(),
                        line: Some(line.number),
                        kind: "bad_record",
                        reason: "a Goose message whose content_json is not a JSON list".into(),
                    });
                }
                let time = seconds(row.get("created_timestamp"));
                let event_index =
                    session.push_event("message", time, Surface::Current, line.text.clone());
                read_message(&mut session, row, time, event_index, model.as_deref());
            }
            _ => {
                let time = seconds(row.get("created_timestamp"));
                let event_index =
                    session.push_event("usage", time, Surface::LogOnly, line.text.clone());
                if ledger {
                    let key = format!(
                        "goose:{}:{}",
                        session.native_id,
                        row.get("id").map_or(String::new(), Value::to_string)
                    );
                    let carried =
                        str_field(row, "cost_source").as_deref() == Some("carried_forward");
                    let n = |k: &str| row.get(k).and_then(Value::as_i64).unwrap_or(0);
                    let counts = [
                        n("input_tokens"),
                        n("output_tokens"),
                        n("cache_read_tokens"),
                        n("cache_write_tokens"),
                    ];
                    push_usage(
                        &mut session,
                        key,
                        if carried {
                            None
                        } else {
                            str_field(row, "model")
                        },
                        counts,
                        time,
                        event_index,
                    );
                }
            }
        }
    }
    parsed.sessions.push(session);
}

/// Epoch milliseconds of a Goose message or ledger time: seconds, or milliseconds in a few rows.
fn seconds(value: Option<&Value>) -> Option<i64> {
    let n = value?.as_i64()?;
    Some(if n > 10_000_000_000 {
        n
    } else {
        n.saturating_mul(1000)
    })
}

/// Epoch milliseconds of a session time: SQLite's `YYYY-MM-DD HH:MM:SS` (UTC) or RFC 3339.
fn session_time(value: Option<&Value>) -> Option<i64> {
    let text = value?.as_str()?;
    parse_time(&text.replacen(' ', "T", 1)).or_else(|| json_time(value))
}

/// One usage row, when it has any tokens; `input` holds the cache counts, taken out.
fn push_usage(
    session: &mut SessionDraft,
    key: String,
    model: Option<String>,
    [input, output, cache_read, cache_write]: [i64; 4],
    time: Option<i64>,
    event_index: usize,
) {
    if [input, output, cache_read, cache_write] == [0; 4] {
        return;
    }
    let tokens = Tokens {
        input: input
            .saturating_sub(cache_read)
            .saturating_sub(cache_write)
            .max(0),
        output,
        reasoning: None,
        cache_read,
        cache_write,
        cache_write_1h: 0,
    };
    session
        .usage
        .push(UsageDraft::keyed(key, model, tokens, time, event_index));
}

/// The session's row: its name, folder, times, parent (a subagent's), and, in a database
/// without a ledger, its running totals as one usage row.
fn read_session(session: &mut SessionDraft, row: &Value, ledger: bool, model: Option<String>) {
    if let Some(id) = str_field(row, "id").filter(|i| !i.is_empty()) {
        session.native_id = id;
    }
    session.title = str_field(row, "name")
        .filter(|t| !t.trim().is_empty())
        .or_else(|| str_field(row, "description").filter(|t| !t.trim().is_empty()));
    session.cwd = str_field(row, "working_dir").filter(|c| !c.is_empty());
    session.created_at = session_time(row.get("created_at"));
    session.updated_at = session_time(row.get("updated_at"));
    session.model = model.clone();
    if let Some(parent) = str_field(row, "parent_session_id").filter(|p| !p.is_empty()) {
        session.parent_native_id = Some(parent);
        session.branch_type = Some("subagent");
    }
    if !ledger {
        let n = |k: &str| row.get(k).and_then(Value::as_i64).unwrap_or(0);
        let counts = [
            n("accumulated_input_tokens"),
            n("accumulated_output_tokens"),
            n("accumulated_cache_read_tokens"),
            n("accumulated_cache_write_tokens"),
        ];
        let key = format!("goose:{}:accumulated", session.native_id);
        let time = session.created_at;
        push_usage(session, key, model, counts, time, 0);
    }
}

/// A message row: its items as blocks; a user row holding tool responses is a tool message.
fn read_message(
    session: &mut SessionDraft,
    row: &Value,
    time: Option<i64>,
    event_index: usize,
    model: Option<&str>,
) {
    let items = row
        .get("content_json")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let assistant = str_field(row, "role").as_deref() == Some("assistant");
    let responses = items
        .iter()
        .any(|i| str_field(i, "type").as_deref() == Some("toolResponse"));
    let role = match (assistant, responses) {
        (true, _) => Role::Assistant,
        (false, true) => Role::Tool,
        (false, false) => Role::User,
    };
    let mut m = MessageDraft::new(role, time, event_index);
    if assistant {
        m.model = model.map(str::to_string);
    }
    let metadata = row.get("metadata_json");
    m.hidden = metadata
        .and_then(|d| d.get("userVisible"))
        .and_then(Value::as_bool)
        == Some(false);
    for item in items {
        match str_field(item, "type").as_deref() {
            Some("text") => m.blocks.push(BlockDraft::text(
                BlockKind::Text,
                str_field(item, "text").unwrap_or_default(),
            )),
            Some("thinking") => m.blocks.push(BlockDraft::text(
                BlockKind::Thinking,
                str_field(item, "thinking").unwrap_or_default(),
            )),
            Some("image") => m
                .blocks
                .push(BlockDraft::text(BlockKind::Image, String::new())),
            Some("toolRequest") => {
                let call = item.get("toolCall").and_then(|c| c.get("value"));
                m.blocks.push(BlockDraft::tool_use(
                    call.and_then(|c| str_field(c, "name")),
                    str_field(item, "id"),
                    call.and_then(|c| c.get("arguments"))
                        .unwrap_or(&Value::Null),
                ));
            }
            Some("toolResponse") => {
                let result = item.get("toolResult").unwrap_or(&Value::Null);
                let failed = str_field(result, "status").as_deref() == Some("error");
                let value = result.get("value").unwrap_or(&Value::Null);
                let text = match value.get("content") {
                    Some(content) => super::text::flatten_text(Some(content)),
                    None => str_field(result, "error").unwrap_or_default(),
                };
                let mut block = BlockDraft::text(BlockKind::ToolResult, text);
                block.tool_id = str_field(item, "id");
                block.is_error =
                    Some(failed || value.get("isError").and_then(Value::as_bool) == Some(true));
                m.blocks.push(block);
            }
            _ => {}
        }
    }
    session.messages.push(m);
}
