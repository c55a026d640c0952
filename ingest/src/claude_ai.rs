//! Claude.ai exports (`conversations.json`): conversations with `uuid`, `name` or `title`, and
//! `chat_messages` whose `sender` is `human` or `assistant`. The export carries no model.

use serde_json::Value;

use super::model::*;
use super::text::{flatten_text, json_time, str_field};

/// Reads every conversation in `root` (an array, or one conversation object).
pub fn parse(root: &Value, parsed: &mut ParsedFile) {
    let conversations: Vec<&Value> = match root {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    for conversation in conversations
        .into_iter()
        .filter(|c| c.get("chat_messages").is_some())
    {
        parse_conversation(conversation, parsed);
    }
}

fn parse_conversation(conversation: &Value, parsed: &mut ParsedFile) {
    let native = str_field(conversation, "uuid")
        .unwrap_or_else(|| format!("conversation-{}", parsed.sessions.len()));
    let mut session = SessionDraft::new(Origin::ClaudeAi, native);
    session.title = str_field(conversation, "name")
        .filter(|n| !n.is_empty())
        .or_else(|| str_field(conversation, "title"));
    session.created_at = json_time(conversation.get("created_at"));
    session.updated_at = json_time(conversation.get("updated_at"));
    let Some(Value::Array(messages)) = conversation.get("chat_messages") else {
        parsed.sessions.push(session);
        return;
    };
    for message in messages {
        parsed.records += 1;
        let time = json_time(message.get("created_at"));
        let event_index = session.events.len();
        session.events.push(EventDraft {
            kind: "chat_message".to_string(),
            time,
            surface: Surface::Current,
            payload: message.to_string(),
            ..EventDraft::default()
        });
        let role = match message.get("sender").and_then(Value::as_str) {
            Some("human") | Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            _ => Role::System,
        };
        let mut m = MessageDraft::new(role, time, event_index);
        m.injected = role != Role::User;
        match message.get("content") {
            Some(Value::Array(blocks)) if !blocks.is_empty() => {
                for block in blocks {
                    if let Some(b) = read_block(block) {
                        m.blocks.push(b);
                    }
                }
            }
            _ => m.blocks.push(BlockDraft::text(
                BlockKind::Text,
                flatten_text(message.get("text")),
            )),
        }
        for attachment in message
            .get("attachments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            m.pasted = true;
            let text = flatten_text(attachment.get("extracted_content"));
            m.blocks.push(BlockDraft::text(BlockKind::Document, text));
        }
        session.messages.push(m);
    }
    parsed.sessions.push(session);
}

fn read_block(block: &Value) -> Option<BlockDraft> {
    match block.get("type").and_then(Value::as_str)? {
        "text" => Some(BlockDraft::text(
            BlockKind::Text,
            flatten_text(block.get("text")),
        )),
        "thinking" => Some(BlockDraft::text(
            BlockKind::Thinking,
            flatten_text(block.get("thinking")),
        )),
        "tool_use" => {
            let input = block.get("input").unwrap_or(&Value::Null);
            Some(BlockDraft::tool_use(
                str_field(block, "name"),
                str_field(block, "id"),
                input,
            ))
        }
        "tool_result" => {
            let mut b = BlockDraft::text(BlockKind::ToolResult, flatten_text(block.get("content")));
            b.tool_id = str_field(block, "tool_use_id");
            b.tool_name = str_field(block, "name");
            b.is_error = Some(block.get("is_error").and_then(Value::as_bool) == Some(true));
            Some(b)
        }
        _ => None,
    }
}
