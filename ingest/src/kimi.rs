//! Kimi CLI sessions (`MoonshotAI/kimi-cli`): `~/.kimi/sessions/<md5 of the work dir>/<session
//! id>/wire.jsonl` (`$KIMI_SHARE_DIR` overrides `~/.kimi`), the session's event log; a subagent
//! writes its own in `<session>/subagents/<agent id>/wire.jsonl`. Line 1 is `{type: "metadata",
//! protocol_version}` (absent in old files); every other line `{timestamp: <epoch seconds>,
//! message: {type: <event>, payload}}`: `TurnBegin {user_input}`, `StepBegin {n}` (one model
//! call a step), `ContentPart` (`text` or `think`), `ToolCall {id, function {name,
//! arguments}}`, `ToolResult {tool_call_id, return_value {is_error, output}}`, `StatusUpdate`,
//! `SubagentEvent`, `TurnEnd`, ... The session's id is its folder's name: no line names it.
//!
//! Usage is `StatusUpdate.payload.token_usage {input_other, output, input_cache_read,
//! input_cache_creation}`, once per successful call (`input_other` excludes both cache
//! counts), with `message_id`, the provider's response id. Kimi CLI forwards each event of a
//! subagent into the parent's log as a `SubagentEvent`, so a subagent's calls are in both
//! files: only the top-level `StatusUpdate`s of each file are read. `/fork` and `/undo` copy
//! the log's lines into a new session's folder; the response key `kimi:<message_id>` lets the
//! archive count those once (docs/accounting.md). No line names the model (it is a setting of
//! `config.toml`), so Kimi CLI's responses have none. `context.jsonl` (the model's history,
//! whose `_usage` records are context sizes, not billing), `state.json` and a subagent's
//! `meta.json` sit beside the log and are not read. The format as kimi-cli 1.52.0 writes it
//! (`kimi_cli/wire/file.py`, `wire/types.py`, `soul/kimisoul.py`).

use std::path::Path;

use serde_json::Value;

use super::lines::Line;
use super::model::*;
use super::text::{flatten_text, str_field};

/// Whether a JSONL line is Kimi CLI's: the log's header, or an event in its envelope.
pub fn is_line(value: &Value) -> bool {
    if value.get("type").and_then(Value::as_str) == Some("metadata") {
        return value.get("protocol_version").is_some();
    }
    value.get("timestamp").is_some_and(Value::is_number)
        && value.get("message").is_some_and(|m| {
            m.get("type").is_some_and(Value::is_string) && m.get("payload").is_some()
        })
}

/// Whether a JSONL file is one of Kimi CLI's companions of the log that hold no transcript of
/// their own: `context.jsonl`, the model's history, with its `_system_prompt`, `_checkpoint`
/// and `_usage` records.
pub fn is_context_line(value: &Value) -> bool {
    matches!(
        value.get("role").and_then(Value::as_str),
        Some("_system_prompt" | "_checkpoint" | "_usage")
    )
}

/// Reads one `wire.jsonl`.
pub fn parse(name: &str, lines: Vec<Line>, parsed: &mut ParsedFile) {
    let mut session = header(name);
    let mut step: Option<MessageDraft> = None;
    for line in lines {
        parsed.records += 1;
        let value = &line.value;
        let time = value
            .get("timestamp")
            .and_then(Value::as_f64)
            .map(|s| (s * 1000.0).round() as i64);
        if time.is_some() {
            session.created_at = session.created_at.min(time).or(time);
            session.updated_at = session.updated_at.max(time);
        }
        let message = value.get("message");
        let Some(kind) = message.and_then(|m| str_field(m, "type")) else {
            let kind = str_field(value, "type").unwrap_or_else(|| "unknown".into());
            if kind != "metadata" {
                *parsed
                    .unknown_records
                    .entry(format!("kimi:{kind}"))
                    .or_default() += 1;
            }
            session.push_event(&kind, time, Surface::LogOnly, line.text);
            continue;
        };
        let payload = message
            .and_then(|m| m.get("payload"))
            .unwrap_or(&Value::Null);
        let surface = match kind.as_str() {
            "TurnBegin" | "ContentPart" | "ToolCall" | "ToolResult" => Surface::Current,
            _ => Surface::LogOnly,
        };
        let event_index = session.push_event(&kind, time, surface, line.text);
        match kind.as_str() {
            "TurnBegin" => {
                flush(&mut session, &mut step);
                let mut m = MessageDraft::new(Role::User, time, event_index);
                m.blocks.push(BlockDraft::text(
                    BlockKind::Text,
                    flatten_text(payload.get("user_input")),
                ));
                session.messages.push(m);
            }
            "StepBegin" | "TurnEnd" | "StepInterrupted" => flush(&mut session, &mut step),
            "ContentPart" => {
                let m = step
                    .get_or_insert_with(|| MessageDraft::new(Role::Assistant, time, event_index));
                match str_field(payload, "type").as_deref() {
                    Some("text") => m.blocks.push(BlockDraft::text(
                        BlockKind::Text,
                        str_field(payload, "text").unwrap_or_default(),
                    )),
                    Some("think") => m.blocks.push(BlockDraft::text(
                        BlockKind::Thinking,
                        str_field(payload, "think").unwrap_or_default(),
                    )),
                    Some("image_url" | "audio_url" | "video_url") => m
                        .blocks
                        .push(BlockDraft::text(BlockKind::Image, String::new())),
                    _ => {}
                }
            }
            "ToolCall" => {
                let m = step
                    .get_or_insert_with(|| MessageDraft::new(Role::Assistant, time, event_index));
                let function = payload.get("function").unwrap_or(&Value::Null);
                // The arguments are a JSON text.
                let arguments = match function.get("arguments") {
                    Some(Value::String(s)) => {
                        serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
                    }
                    Some(other) => other.clone(),
                    None => Value::Null,
                };
                m.blocks.push(BlockDraft::tool_use(
                    str_field(function, "name"),
                    str_field(payload, "id"),
                    &arguments,
                ));
            }
            "ToolResult" => {
                flush(&mut session, &mut step);
                let result = payload.get("return_value").unwrap_or(&Value::Null);
                let text = match result.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) | None => str_field(result, "message").unwrap_or_default(),
                    Some(other) => flatten_text(Some(other)),
                };
                let mut block = BlockDraft::text(BlockKind::ToolResult, text);
                block.tool_id = str_field(payload, "tool_call_id");
                block.is_error = result.get("is_error").and_then(Value::as_bool);
                let mut m = MessageDraft::new(Role::Tool, time, event_index);
                m.blocks.push(block);
                session.messages.push(m);
            }
            "StatusUpdate" => {
                if let Some(tokens) = payload.get("token_usage").and_then(tokens_of) {
                    let mut m = step
                        .take()
                        .unwrap_or_else(|| MessageDraft::new(Role::Assistant, time, event_index));
                    m.tokens = Some(tokens);
                    session.usage.push(UsageDraft {
                        response_key: str_field(payload, "message_id")
                            .filter(|id| !id.is_empty())
                            .map(|id| format!("kimi:{id}")),
                        via: RecordedVia::Transcript,
                        subagent_native_id: None,
                        message_index: Some(session.messages.len()),
                        request_id: str_field(payload, "message_id"),
                        model: None,
                        tokens,
                        occurred_at_ms: time,
                        event_index,
                    });
                    session.messages.push(m);
                }
            }
            _ => {}
        }
    }
    flush(&mut session, &mut step);
    parsed.sessions.push(session);
}

/// The session of a log, from where it lies: `<session id>/wire.jsonl`, or a subagent's
/// `<session id>/subagents/<agent id>/wire.jsonl`.
fn header(name: &str) -> SessionDraft {
    let folder = |p: Option<&Path>| {
        p.and_then(Path::file_name)
            .and_then(|n| n.to_str())
            .map(str::to_string)
    };
    let path = Path::new(name);
    let dir = path.parent();
    let own = folder(dir).unwrap_or_else(|| "session".to_string());
    let above = dir.and_then(Path::parent);
    if folder(above).as_deref() == Some("subagents")
        && let Some(parent) = folder(above.and_then(Path::parent))
    {
        let mut session = SessionDraft::new(Origin::KimiCli, format!("{parent}/{own}"));
        session.parent_native_id = Some(parent);
        session.branch_type = Some("subagent");
        session.agent = Some(own);
        return session;
    }
    SessionDraft::new(Origin::KimiCli, own)
}

/// Ends the step being read: its message joins the session.
fn flush(session: &mut SessionDraft, step: &mut Option<MessageDraft>) {
    if let Some(m) = step.take() {
        session.messages.push(m);
    }
}

/// The tokens of one `token_usage`, or `None` when it billed nothing.
fn tokens_of(usage: &Value) -> Option<Tokens> {
    let get = |k: &str| usage.get(k).and_then(Value::as_i64).unwrap_or(0).max(0);
    let tokens = Tokens {
        input: get("input_other"),
        output: get("output"),
        reasoning: None,
        cache_read: get("input_cache_read"),
        cache_write: get("input_cache_creation"),
        cache_write_1h: 0,
    };
    (tokens != Tokens::default()).then_some(tokens)
}
