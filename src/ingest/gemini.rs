//! Gemini CLI sessions: `chats/session-*.json` objects `{sessionId, startTime, lastUpdated,
//! messages[]}` and the newer JSONL form (a header line, message lines, `$set` and `$rewindTo`
//! records). `type` user → user, gemini → assistant, info/error/warning → system.

use serde_json::Value;

use super::lines::Line;
use super::model::*;
use super::text::{command_of, flatten_text, json_time, path_of, str_field};

/// Reads a whole-file JSON session.
pub fn parse_json(root: &Value, parsed: &mut ParsedFile) {
    let mut session = header(root);
    for message in root
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        parsed.records += 1;
        read_message(&mut session, message, message.to_string());
    }
    parsed.sessions.push(session);
}

/// Reads the JSONL form.
pub fn parse_lines(lines: Vec<Line>, parsed: &mut ParsedFile) {
    let Some(first) = lines.first() else { return };
    let mut session = header(&first.value);
    for line in lines {
        parsed.records += 1;
        let value = &line.value;
        if value.get("sessionId").is_some() && value.get("type").is_none() {
            session.events.push(EventDraft {
                kind: "session".to_string(),
                time: json_time(value.get("startTime")),
                surface: Surface::LogOnly,
                payload: line.text,
            });
        } else if let Some(set) = value.get("$set") {
            if let Some(t) = json_time(set.get("lastUpdated")) {
                session.updated_at = Some(t);
            }
            session.events.push(EventDraft {
                kind: "$set".to_string(),
                time: None,
                surface: Surface::LogOnly,
                payload: line.text,
            });
        } else if value.get("$rewindTo").is_some() {
            session.events.push(EventDraft {
                kind: "$rewindTo".to_string(),
                time: None,
                surface: Surface::LogOnly,
                payload: line.text,
            });
        } else {
            read_message(&mut session, value, line.text);
        }
    }
    parsed.sessions.push(session);
}

fn header(value: &Value) -> SessionDraft {
    let native = str_field(value, "sessionId").unwrap_or_else(|| "session".to_string());
    let mut session = SessionDraft::new(Origin::GeminiCli, native);
    session.created_at = json_time(value.get("startTime"));
    session.updated_at = json_time(value.get("lastUpdated"));
    session.title = str_field(value, "summary");
    session
}

fn read_message(session: &mut SessionDraft, message: &Value, payload: String) {
    let time = json_time(message.get("timestamp"));
    let event_index = session.events.len();
    session.events.push(EventDraft {
        kind: str_field(message, "type").unwrap_or_else(|| "message".to_string()),
        time,
        surface: Surface::Current,
        payload,
    });
    let role = match message.get("type").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("gemini") | Some("model") | Some("assistant") => Role::Assistant,
        _ => Role::System,
    };
    let mut m = MessageDraft::new(role, time, event_index);
    m.injected = role != Role::User;
    m.model = str_field(message, "model");
    if m.model.is_some() && session.model.is_none() {
        session.model = m.model.clone();
    }
    for thought in message
        .get("thoughts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = [
            str_field(thought, "subject"),
            str_field(thought, "description"),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(": ");
        m.blocks.push(BlockDraft::text(BlockKind::Thinking, text));
    }
    let text = flatten_text(message.get("content"));
    m.blocks.push(BlockDraft::text(BlockKind::Text, text));
    for call in message
        .get("toolCalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let args = call.get("args").cloned().unwrap_or(Value::Null);
        let mut use_block = BlockDraft::text(BlockKind::ToolUse, String::new());
        use_block.tool_name = str_field(call, "name");
        use_block.tool_id = str_field(call, "id");
        use_block.tool_command = command_of(&args);
        use_block.tool_path = path_of(&args);
        use_block.tool_input = Some(args.to_string());
        let mut result = BlockDraft::text(
            BlockKind::ToolResult,
            flatten_text(call.get("resultDisplay")).to_string()
                + &call
                    .get("result")
                    .map(|r| {
                        if r.is_string() {
                            flatten_text(Some(r))
                        } else {
                            r.to_string()
                        }
                    })
                    .unwrap_or_default(),
        );
        result.tool_id = use_block.tool_id.clone();
        result.is_error = Some(matches!(
            call.get("status").and_then(Value::as_str),
            Some("error" | "cancelled")
        ));
        m.blocks.push(use_block);
        m.blocks.push(result);
    }
    if let Some(tokens) = message.get("tokens") {
        let get = |k: &str| tokens.get(k).and_then(Value::as_i64).unwrap_or(0);
        let t = Tokens {
            input: get("input") - get("cached"),
            output: get("output") + get("thoughts"),
            reasoning: Some(get("thoughts")),
            cache_read: get("cached"),
            cache_write: 0,
            cache_write_1h: 0,
        };
        m.tokens = Some(t);
        session.usage.push(UsageDraft {
            response_key: None,
            via: RecordedVia::Transcript,
            subagent_native_id: None,
            message_index: Some(session.messages.len()),
            request_id: None,
            model: m.model.clone(),
            tokens: t,
            occurred_at_ms: time,
            event_index,
        });
    }
    session.messages.push(m);
}
