//! Google AI Studio prompts saved to Drive: `{chunkedPrompt: {chunks: [{role, text, ...}]}}`.
//! A chunk that has been replaced by a later branch (`branchChildren`) is `shadowed`.

use serde_json::Value;

use super::model::*;
use super::text::{flatten_text, json_time, str_field};

/// Reads one AI Studio file.
pub fn parse(path: &str, root: &Value, parsed: &mut ParsedFile) {
    let stem = std::path::Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("prompt")
        .to_string();
    let native = str_field(root, "id").unwrap_or(stem);
    let mut session = SessionDraft::new(Origin::AiStudio, native);
    session.title = str_field(root, "displayName").or_else(|| str_field(root, "title"));
    session.created_at = json_time(root.get("createTime"));
    session.updated_at = json_time(root.get("updateTime"));
    session.model = root.get("runSettings").and_then(|r| str_field(r, "model"));
    let chunks = root
        .get("chunkedPrompt")
        .and_then(|c| c.get("chunks"))
        .and_then(Value::as_array);
    for chunk in chunks.into_iter().flatten() {
        parsed.records += 1;
        let time = json_time(chunk.get("createTime"));
        let shadowed = chunk
            .get("branchChildren")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty());
        let event_index = session.events.len();
        session.events.push(EventDraft {
            kind: "chunk".to_string(),
            time,
            surface: if shadowed {
                Surface::Shadowed
            } else {
                Surface::Current
            },
            payload: chunk.to_string(),
            ..EventDraft::default()
        });
        if shadowed {
            continue;
        }
        let role = match chunk.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("model") | Some("assistant") => Role::Assistant,
            _ => Role::System,
        };
        let mut m = MessageDraft::new(role, time, event_index);
        m.injected = role != Role::User;
        m.model = session.model.clone();
        let thought = chunk.get("isThought").and_then(Value::as_bool) == Some(true);
        let text = flatten_text(chunk.get("text").or_else(|| chunk.get("parts")));
        let kind = if thought {
            BlockKind::Thinking
        } else {
            BlockKind::Text
        };
        m.blocks.push(BlockDraft::text(kind, text));
        if let Some(code) = chunk.get("executableCode") {
            m.blocks.push(BlockDraft::text(
                BlockKind::Code,
                flatten_text(code.get("code")),
            ));
        }
        if let Some(result) = chunk.get("codeExecutionResult") {
            m.blocks.push(BlockDraft::text(
                BlockKind::ToolResult,
                flatten_text(result.get("output")),
            ));
        }
        if chunk.get("inlineImage").is_some() || chunk.get("driveImage").is_some() {
            m.blocks
                .push(BlockDraft::text(BlockKind::Image, String::new()));
        }
        if let Some(tokens) = chunk.get("tokenCount").and_then(Value::as_i64)
            && role == Role::Assistant
        {
            m.tokens = Some(Tokens {
                output: tokens,
                ..Tokens::default()
            });
        }
        session.messages.push(m);
    }
    parsed.sessions.push(session);
}
