//! Cursor's agent transcripts: `~/.cursor/projects/<workspace slug>/agent-transcripts/`, one
//! JSON Lines file per conversation of Cursor's agent (the `cursor-agent` CLI, and the IDE's
//! agent, which keeps the same conversation in `state.vscdb` too): `<id>.jsonl` or
//! `<id>/<id>.jsonl`, a subagent's at `<parent>/subagents/<child>.jsonl`. Each line is
//! `{"role": "user" | "assistant", "message": {"content": [blocks] | "text"}}` with Anthropic's
//! blocks (`text`, `thinking`, `tool_use {name, input}`), or `{"type": "turn_ended", "status"}`;
//! the user's text wraps what was typed in `<user_query>` beside the context Cursor adds.
//! Shapes as agentsview (`internal/parser/cursor*.go`) and cass read them; no public transcript
//! under a licence that allows copying was found.
//!
//! The files hold no tool results, no model, no counts and no times: sessions and messages
//! with no usage, and no model. A conversation also in a `state.vscdb` (the IDE's, same id) is
//! the store's, which holds more; the transcript is the copy (`keeps_copy` in `lib.rs`).

use serde_json::Value;

use super::lines::Line;
use super::model::*;
use super::text::str_field;

/// Whether a JSONL line is one of an agent transcript's.
pub fn is_line(value: &Value) -> bool {
    let Some(object) = value.as_object() else {
        return false;
    };
    if object.get("type").and_then(Value::as_str) == Some("turn_ended") {
        return object.contains_key("status");
    }
    !object.contains_key("type")
        && matches!(
            object.get("role").and_then(Value::as_str),
            Some("user" | "assistant")
        )
        && object
            .get("message")
            .is_some_and(|m| m.get("content").is_some())
}

/// Whether a path is an agent transcript's (`…/agent-transcripts/…/<id>.jsonl`).
pub fn is_transcript_path(name: &str) -> bool {
    let path = std::path::Path::new(name);
    path.extension().is_some_and(|e| e == "jsonl")
        && path
            .components()
            .any(|c| c.as_os_str() == "agent-transcripts")
}

/// The conversation id of an agent transcript: its file's stem.
pub fn id_of(name: &str) -> Option<&str> {
    let file = std::path::Path::new(name).file_name()?.to_str()?;
    file.strip_suffix(".jsonl")
}

/// Reads one agent transcript.
pub fn parse(name: &str, lines: Vec<Line>, parsed: &mut ParsedFile) {
    let id = id_of(name).unwrap_or(name).to_string();
    let mut session = SessionDraft::new(Origin::Cursor, id);
    // `<parent>/subagents/<child>.jsonl`.
    let path = std::path::Path::new(name);
    if path
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|f| f == "subagents")
        && let Some(parent) = path
            .parent()
            .and_then(|p| p.parent())
            .and_then(|p| p.file_name())
            .and_then(|f| f.to_str())
    {
        session.parent_native_id = Some(parent.to_string());
        session.branch_type = Some("subagent");
    }
    for line in lines {
        parsed.records += 1;
        let value = &line.value;
        if value.get("type").and_then(Value::as_str) == Some("turn_ended") {
            session.push_event("turn_ended", None, Surface::LogOnly, line.text.clone());
            let failed = str_field(value, "status").as_deref() == Some("error");
            if let Some(last) = session
                .messages
                .iter_mut()
                .rev()
                .find(|m| m.role == Role::Assistant)
                .filter(|_| failed)
            {
                last.stop_reason = Some("error".into());
            }
            continue;
        }
        let role = str_field(value, "role");
        if !matches!(role.as_deref(), Some("user" | "assistant")) {
            // A record of another kind: kept as it is, no message.
            session.push_event("other", None, Surface::LogOnly, line.text.clone());
            continue;
        }
        let assistant = role.as_deref() == Some("assistant");
        let event = session.push_event(
            if assistant { "assistant" } else { "user" },
            None,
            Surface::Current,
            line.text.clone(),
        );
        let mut m = MessageDraft::new(
            if assistant {
                Role::Assistant
            } else {
                Role::User
            },
            None,
            event,
        );
        let content = value.pointer("/message/content").unwrap_or(&Value::Null);
        let blocks = match content {
            Value::Array(blocks) => blocks.clone(),
            Value::String(s) => vec![serde_json::json!({"type": "text", "text": s})],
            _ => Vec::new(),
        };
        for block in &blocks {
            match str_field(block, "type").as_deref() {
                Some("text") => {
                    let text = str_field(block, "text").unwrap_or_default();
                    let text = if assistant { text } else { typed(&text) };
                    m.blocks.push(BlockDraft::text(BlockKind::Text, text));
                }
                Some("thinking") => m.blocks.push(BlockDraft::text(
                    BlockKind::Thinking,
                    str_field(block, "thinking")
                        .or_else(|| str_field(block, "text"))
                        .unwrap_or_default(),
                )),
                Some("tool_use") => m.blocks.push(BlockDraft::tool_use(
                    str_field(block, "name"),
                    str_field(block, "id"),
                    block.get("input").unwrap_or(&Value::Null),
                )),
                _ => {}
            }
        }
        if !m.blocks.is_empty() {
            session.messages.push(m);
        }
    }
    parsed.sessions.push(session);
}

/// What the user typed: the text inside `<user_query>`, else the whole text.
fn typed(text: &str) -> String {
    let Some(start) = text.find("<user_query>") else {
        return text.to_string();
    };
    let inner = &text[start + "<user_query>".len()..];
    let end = inner.find("</user_query>").unwrap_or(inner.len());
    inner[..end].trim().to_string()
}
