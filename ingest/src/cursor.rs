//! Cursor's conversations, from the editor's SQLite stores `state.vscdb` (VS Code's key-value
//! tables `ItemTable (key, value)` and, from late 2024, Cursor's `cursorDiskKV (key, value)`):
//! the user folder's `globalStorage/state.vscdb` and each workspace's
//! `workspaceStorage/<hash>/state.vscdb` (beside its `workspace.json` naming the folder), in
//! `~/.config/Cursor/User`, `~/Library/Application Support/Cursor/User` or
//! `%APPDATA%\Cursor\User`. Three generations, each a session per conversation:
//!
//! - chat tabs (2023–2024): the workspace's `workbench.panel.aichat.view.aichat.chatdata`,
//!   `{tabs: [{tabId, chatTitle, lastSendTime, bubbles: [{type: "user" | "ai", text,
//!   modelType}]}]}`; no times per bubble, no counts;
//! - composers in the workspace (late 2024): `composer.composerData`, `{allComposers:
//!   [{composerId, createdAt, name, conversation: [{type: 1 | 2, bubbleId, text}]}]}`;
//! - composers in the global store (2025 on): `cursorDiskKV` `composerData:<id>` (`createdAt`,
//!   `lastUpdatedAt`, `name`, `status`, `modelConfig {modelName}`,
//!   `fullConversationHeadersOnly: [{bubbleId, type}]` giving the order, `subComposerIds`),
//!   each bubble at `bubbleId:<composer>:<bubble>` (`type` 1 user / 2 assistant, `text`,
//!   `createdAt`, `thinking {text}`, `toolFormerData {toolCallId, name, rawArgs, params,
//!   result, additionalData {status}}`, `modelInfo {modelName}`, `tokenCount {inputTokens,
//!   outputTokens}`, `usageUuid`, `timingInfo {clientEndTime}`).
//!
//! [`super::sources`] reads each composer of the global store into a document of JSON Lines
//! (the conversation, then its bubbles in order, a header whose bubble is gone as a `missing`
//! line), and a workspace store's composers, and its tabs, each into one document of all of
//! them (one value each in the store: read once, however many conversations it holds), which
//! [`parse`] reads, a session per conversation. Only those keys are read, each by name: the
//! global store's `ItemTable` holds Cursor's credentials (`cursorAuth/...`), which are never
//! read (an old global store has the two chat keys there too).
//!
//! Usage: Cursor writes counts only on the assistant bubble that ends a request (`tokenCount`
//! with `usageUuid`), no cache counts, and `{0, 0}` placeholders elsewhere (on every bubble
//! since about February 2026): a row per bubble whose counts are not both 0, keyed by its
//! `usageUuid` (a duplicated conversation copies bubbles under new ids with the same one),
//! else by its bubble; the older generations have none. Never summed: the context gauges
//! (`contextTokensUsed`, `contextWindowStatusAtCreation`). The model is the bubble's, else the
//! conversation's `modelConfig`, else the legacy `modelType`; `default` (Cursor's Auto) names
//! no model. Traps: a conversation being generated is rewritten in place (its document
//! replaces the archived one), a user bubble with no text is the input box's draft (not a
//! message), a bubble not in the headers (deleted, rolled back) is not read.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};
use serde_json::Value;

use super::lines::Line;
use super::model::*;
use super::sources::has_table;
use super::text::{json_time, str_field};

/// Whether a database is one of Cursor's: VS Code's `ItemTable`, with Cursor's conversation
/// keys or table.
pub fn is_store(conn: &Connection) -> rusqlite::Result<bool> {
    if has_table(conn, "cursorDiskKV")? {
        return Ok(true);
    }
    if !has_table(conn, "ItemTable")? {
        return Ok(false);
    }
    conn.query_row(
        "SELECT COUNT(*) FROM ItemTable WHERE key IN (?1, ?2)",
        [CHAT_KEY, COMPOSER_KEY],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

const CHAT_KEY: &str = "workbench.panel.aichat.view.aichat.chatdata";
const COMPOSER_KEY: &str = "composer.composerData";

/// A value of `ItemTable` as JSON (TEXT or BLOB), `Null` when absent or not JSON.
fn item(conn: &Connection, key: &str) -> rusqlite::Result<Value> {
    let value: Option<String> = conn
        .query_row("SELECT value FROM ItemTable WHERE key = ?1", [key], |r| {
            Ok(super::sources::text(r.get_ref(0)?))
        })
        .optional()?;
    Ok(value
        .and_then(|v| serde_json::from_str(&v).ok())
        .unwrap_or(Value::Null))
}

/// The documents of a store, with the size of each one's data: `composer:<id>` for each
/// composer of the global store, and a workspace store's `composers` (those holding their
/// conversation) and `tabs` (the chat tabs), each a document of all of them.
pub fn sessions(conn: &Connection) -> rusqlite::Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    if has_table(conn, "cursorDiskKV")? {
        out.extend(super::sources::list(
            conn,
            // Not the empty composers Cursor makes for each new chat (no headers, no
            // conversation); a value that is no JSON is listed, to be reported.
            "SELECT 'composer:' || substr(key, 14), length(value) FROM cursorDiskKV
             WHERE key >= 'composerData:' AND key < 'composerData;'
               AND (NOT json_valid(CAST(value AS TEXT))
                    OR json_array_length(CAST(value AS TEXT), '$.fullConversationHeadersOnly') > 0
                    OR json_array_length(CAST(value AS TEXT), '$.conversation') > 0)
             ORDER BY key",
        )?);
    }
    if has_table(conn, "ItemTable")? {
        // The workspace's conversations of 2023-2024 live in one value each (all composers, all
        // tabs): one document for each, read (and parsed) once however many it holds.
        for (session, key, list, inner) in [
            ("composers", COMPOSER_KEY, "allComposers", "conversation"),
            ("tabs", CHAT_KEY, "tabs", "bubbles"),
        ] {
            let value = item(conn, key)?;
            let held = value
                .get(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|c| {
                    c.get(inner)
                        .and_then(Value::as_array)
                        .is_some_and(|b| !b.is_empty())
                });
            if held {
                out.push((session.to_string(), value.to_string().len() as u64));
            }
        }
    }
    Ok(out)
}

/// The folder a workspace store's `workspace.json` names (`folder`, a `file://` URI), if any.
fn workspace_folder(store: &Path) -> Option<String> {
    let text = std::fs::read_to_string(store.parent()?.join("workspace.json")).ok()?;
    let json: Value = serde_json::from_str(&text).ok()?;
    let uri = str_field(&json, "folder").or_else(|| str_field(&json, "workspace"))?;
    let path = uri.strip_prefix("file://").unwrap_or(&uri);
    let path = percent_encoding::percent_decode_str(path)
        .decode_utf8_lossy()
        .into_owned();
    // `file:///c%3A/Users/...`: a Windows drive after the URI's slash.
    let bytes = path.as_bytes();
    let drive =
        bytes.len() > 2 && bytes[0] == b'/' && bytes[1].is_ascii_alphabetic() && bytes[2] == b':';
    Some(if drive { path[1..].to_string() } else { path })
}

/// A document's lines: per conversation `{"cursor": "conversation", "kind", "row", "folder"}`,
/// then `{"cursor": "bubble", "row"}` per bubble in order (`"missing"` for a header whose
/// bubble is gone); one conversation for a global composer, every one for a workspace's
/// `composers` or `tabs`; `None` when it is gone.
pub fn document(
    conn: &Connection,
    store: &Path,
    session: &str,
) -> rusqlite::Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    let mut line = |value: Value| super::sources::json_line(&mut out, &value);
    let folder = workspace_folder(store);
    let workspace = match session {
        "tabs" => Some((CHAT_KEY, "tabs", "tab", "bubbles")),
        "composers" => Some((COMPOSER_KEY, "allComposers", "composer", "conversation")),
        _ => None,
    };
    if let Some((key, list, kind, inner)) = workspace {
        let value = item(conn, key)?;
        let Some(all) = value.get(list).and_then(Value::as_array) else {
            return Ok(None);
        };
        for c in all {
            if c.get(inner)
                .and_then(Value::as_array)
                .is_some_and(|b| !b.is_empty())
            {
                inline(&mut line, kind, c, inner, folder.clone());
            }
        }
        return Ok(Some(out));
    }
    let Some(id) = session.strip_prefix("composer:") else {
        return Ok(None);
    };
    if !has_table(conn, "cursorDiskKV")? {
        return Ok(None);
    }
    let value: Option<String> = conn
        .query_row(
            "SELECT value FROM cursorDiskKV WHERE key = ?1",
            [format!("composerData:{id}")],
            |r| Ok(super::sources::text(r.get_ref(0)?)),
        )
        .optional()?;
    let Some(value) = value else {
        return Ok(None);
    };
    let mut row: Value = serde_json::from_str(&value).unwrap_or(Value::String(value));
    let inline = row
        .as_object_mut()
        .and_then(|o| o.remove("conversation"))
        .unwrap_or(Value::Null);
    let folder = folder.or_else(|| header_folder(conn, id));
    line(
        serde_json::json!({"cursor": "conversation", "kind": "composer", "row": row, "folder": folder}),
    );
    let headers = row
        .get("fullConversationHeadersOnly")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if headers.is_empty() {
        // Older composers kept their bubbles inline.
        for b in inline.as_array().into_iter().flatten() {
            line(serde_json::json!({"cursor": "bubble", "row": b}));
        }
    }
    let mut read = conn.prepare("SELECT value FROM cursorDiskKV WHERE key = ?1")?;
    for h in &headers {
        let Some(bubble) = str_field(h, "bubbleId") else {
            continue;
        };
        let found: Option<String> = read
            .query_row([format!("bubbleId:{id}:{bubble}")], |r| {
                Ok(super::sources::text(r.get_ref(0)?))
            })
            .optional()?;
        match found {
            Some(text) => {
                let row: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
                line(serde_json::json!({"cursor": "bubble", "row": row}));
            }
            None => line(serde_json::json!({"cursor": "missing", "bubbleId": bubble})),
        }
    }
    Ok(Some(out))
}

/// A conversation that holds its bubbles (under `list`) as its document's lines: the
/// conversation without them, then each bubble.
fn inline(
    line: &mut impl FnMut(Value),
    kind: &str,
    conversation: &Value,
    list: &str,
    folder: Option<String>,
) {
    let mut row = conversation.clone();
    let bubbles = row
        .as_object_mut()
        .and_then(|o| o.remove(list))
        .unwrap_or(Value::Null);
    line(serde_json::json!({"cursor": "conversation", "kind": kind, "row": row, "folder": folder}));
    for b in bubbles.as_array().into_iter().flatten() {
        line(serde_json::json!({"cursor": "bubble", "row": b}));
    }
}

/// The folder Cursor's `composerHeaders` table (2026 builds) gives a composer.
fn header_folder(conn: &Connection, id: &str) -> Option<String> {
    if !has_table(conn, "composerHeaders").ok()? {
        return None;
    }
    let value: String = conn
        .query_row(
            "SELECT value FROM composerHeaders WHERE composerId = ?1",
            [id],
            |r| Ok(super::sources::text(r.get_ref(0)?)),
        )
        .ok()?;
    let json: Value = serde_json::from_str(&value).ok()?;
    json.pointer("/workspaceIdentifier/uri/fsPath")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Whether a JSONL line is a row of a Cursor conversation's document.
pub fn is_line(value: &Value) -> bool {
    matches!(
        value.get("cursor").and_then(Value::as_str),
        Some("conversation" | "bubble" | "missing")
    )
}

/// A model name as Cursor writes it: `default` (Auto) and empty name none.
fn model_name(name: Option<String>) -> Option<String> {
    name.filter(|m| !m.is_empty() && m != "default")
}

/// Reads a document: a session per conversation in it.
pub fn parse(name: &str, lines: Vec<Line>, parsed: &mut ParsedFile) {
    let id = name.rsplit_once('#').map_or(name, |(_, id)| id);
    let fallback = id.strip_prefix("composer:").unwrap_or(id).to_string();
    let mut current: Option<(SessionDraft, Option<String>, Option<i64>)> = None;
    let finish = |done: (SessionDraft, Option<String>, Option<i64>), parsed: &mut ParsedFile| {
        let (mut session, _, updated) = done;
        session.updated_at = updated.or(session.created_at);
        parsed.sessions.push(session);
    };
    for line in lines {
        parsed.records += 1;
        let value = &line.value;
        if value.get("cursor").and_then(Value::as_str) == Some("conversation") {
            if let Some(done) = current.take() {
                finish(done, parsed);
            }
            let row = value.get("row").unwrap_or(&Value::Null);
            let native = str_field(row, "composerId")
                .or_else(|| str_field(row, "tabId"))
                .filter(|i| !i.is_empty())
                .unwrap_or_else(|| fallback.clone());
            let mut session = SessionDraft::new(Origin::Cursor, native);
            session.push_event("conversation", None, Surface::LogOnly, line.text.clone());
            session.title = str_field(row, "name")
                .or_else(|| str_field(row, "chatTitle"))
                .filter(|t| !t.trim().is_empty());
            session.created_at = json_time(row.get("createdAt"));
            let updated =
                json_time(row.get("lastUpdatedAt")).or_else(|| json_time(row.get("lastSendTime")));
            // A chat tab keeps no start: its last message's time is the one it has.
            if session.created_at.is_none() {
                session.created_at = updated;
            }
            session.cwd = str_field(value, "folder").filter(|f| !f.is_empty());
            let model = model_name(
                row.pointer("/modelConfig/modelName")
                    .and_then(|m| m.as_str().map(str::to_string)),
            );
            session.model = model.clone();
            current = Some((session, model, updated));
            continue;
        }
        let Some((session, model, _)) = current.as_mut() else {
            parsed.diagnostics.push(Diagnostic {
                file: name.to_string(),
                line: Some(line.number),
                kind: "bad_record",
                reason: "a Cursor bubble before any conversation".into(),
            });
            continue;
        };
        match value.get("cursor").and_then(Value::as_str) {
            Some("bubble") => {
                let Some(row) = value.get("row").filter(|r| r.is_object()) else {
                    parsed.diagnostics.push(Diagnostic {
                        file: name.to_string(),
                        line: Some(line.number),
                        kind: "bad_record",
                        reason: "a Cursor bubble that is not a JSON object".into(),
                    });
                    session.push_event("bubble", None, Surface::LogOnly, line.text);
                    continue;
                };
                let time = bubble_time(row);
                let event = session.push_event("bubble", time, Surface::Current, line.text.clone());
                read_bubble(session, row, time, event, model.as_deref());
            }
            _ => {
                session.push_event("missing", None, Surface::LogOnly, line.text);
            }
        }
    }
    if let Some(done) = current.take() {
        finish(done, parsed);
    }
}

/// A bubble's time: its `createdAt` (ISO; missing on bubbles before October 2025), else the
/// end of its request (`timingInfo.clientEndTime`, epoch milliseconds).
fn bubble_time(row: &Value) -> Option<i64> {
    json_time(row.get("createdAt")).or_else(|| json_time(row.pointer("/timingInfo/clientEndTime")))
}

/// One bubble: a user message, or the assistant's (its reasoning, text and tool call, and the
/// tool's result as a message of its own), and its usage.
fn read_bubble(
    session: &mut SessionDraft,
    row: &Value,
    time: Option<i64>,
    event: usize,
    composer_model: Option<&str>,
) {
    let user = match row.get("type") {
        Some(Value::Number(n)) => n.as_i64() == Some(1),
        Some(Value::String(s)) => s == "user",
        _ => false,
    };
    let text = str_field(row, "text")
        .filter(|t| !t.is_empty())
        .or_else(|| str_field(row, "rawText"))
        .unwrap_or_default();
    if user {
        // The input box's draft: a user bubble never sent.
        if text.trim().is_empty() {
            return;
        }
        let mut m = MessageDraft::new(Role::User, time, event);
        m.blocks.push(BlockDraft::text(BlockKind::Text, text));
        session.messages.push(m);
        return;
    }
    let model = model_name(
        row.pointer("/modelInfo/modelName")
            .and_then(Value::as_str)
            .map(str::to_string),
    )
    .or_else(|| model_name(str_field(row, "modelType")))
    .or_else(|| composer_model.map(str::to_string));
    let mut m = MessageDraft::new(Role::Assistant, time, event);
    m.model = model.clone();
    if let Some(thinking) = row
        .pointer("/thinking/text")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    {
        m.blocks
            .push(BlockDraft::text(BlockKind::Thinking, thinking.to_string()));
    }
    if !text.is_empty() {
        m.blocks.push(BlockDraft::text(BlockKind::Text, text));
    }
    let tool = row.get("toolFormerData").filter(|t| t.is_object());
    let mut result = None;
    if let Some(tool) = tool {
        let input = ["rawArgs", "params"]
            .iter()
            .find_map(|k| str_field(tool, k).filter(|a| !a.is_empty()))
            .map(|a| serde_json::from_str(&a).unwrap_or(Value::String(a)))
            .unwrap_or(Value::Null);
        let id = str_field(tool, "toolCallId");
        m.blocks.push(BlockDraft::tool_use(
            str_field(tool, "name"),
            id.clone(),
            &input,
        ));
        if let Some(output) = tool.get("result").filter(|r| !r.is_null()) {
            let text = match output {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let mut block = BlockDraft::text(BlockKind::ToolResult, text);
            block.tool_id = id;
            block.is_error = Some(
                tool.pointer("/additionalData/status")
                    .and_then(Value::as_str)
                    == Some("error"),
            );
            result = Some(block);
        }
    }
    let index = if m.blocks.is_empty() {
        None
    } else {
        session.messages.push(m);
        Some(session.messages.len() - 1)
    };
    if let Some(block) = result {
        let mut t = MessageDraft::new(Role::Tool, time, event);
        t.blocks.push(block);
        session.messages.push(t);
    }
    let count = |k: &str| {
        row.get("tokenCount")
            .and_then(|c| c.get(k))
            .and_then(Value::as_i64)
            .unwrap_or(0)
            .max(0)
    };
    let (input, output) = (count("inputTokens"), count("outputTokens"));
    if input == 0 && output == 0 {
        return;
    }
    let key = match str_field(row, "usageUuid").filter(|u| !u.is_empty()) {
        Some(uuid) => format!("cursor:{uuid}"),
        None => format!(
            "cursor:{}:{}",
            session.native_id,
            str_field(row, "bubbleId").unwrap_or_else(|| event.to_string())
        ),
    };
    let at = json_time(row.pointer("/timingInfo/clientEndTime")).or(time);
    let mut usage = UsageDraft::keyed(
        key,
        model,
        Tokens {
            input,
            output,
            reasoning: None,
            cache_read: 0,
            cache_write: 0,
            cache_write_1h: 0,
        },
        at,
        event,
    );
    usage.message_index = index;
    session.usage.push(usage);
}
