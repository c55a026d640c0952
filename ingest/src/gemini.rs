//! Gemini CLI sessions: `chats/session-*.json` objects `{sessionId, startTime, lastUpdated,
//! messages[]}` and the newer append-only JSONL form (a header line, message lines, `$set` and
//! `$rewindTo` records). `type` user → user, gemini → assistant, info/error/warning → system.
//!
//! The JSONL form is replayed the way gemini-cli's own loader does (`loadConversationRecord` in
//! `chatRecordingService.ts`): a message line whose `id` was written before replaces that
//! message in place (tool calls and tokens are added by rewriting it); `$rewindTo: <id>` drops
//! that message and every later one (all of them when the id is unknown). Replaced versions and
//! rewound messages stay as `shadowed` events and are not messages; each names what replaced
//! it (`replaced_by`): the next version of the message, or the `$rewindTo` record.

use std::collections::HashMap;

use serde_json::Value;

use super::lines::Line;
use super::model::*;
use super::text::{flatten_text, json_time, str_field};

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
        let event_index =
            push_message_event(&mut session, message, Surface::Current, message.to_string());
        read_message(&mut session, message, event_index);
    }
    parsed.sessions.push(session);
}

/// Reads the JSONL form.
pub fn parse_lines(lines: Vec<Line>, parsed: &mut ParsedFile) {
    let Some(first) = lines.first() else { return };
    let mut session = header(&first.value);
    let mut replay = Replay::default();
    for line in lines {
        parsed.records += 1;
        read_line(&mut session, &mut replay, line);
    }
    replay.finish(&mut session);
    parsed.sessions.push(session);
}

/// The messages of a JSONL session as they stand so far: ids in first-write order, each with
/// the event index and record of its latest version.
#[derive(Default)]
struct Replay {
    order: Vec<String>,
    latest: HashMap<String, (usize, Value)>,
}

impl Replay {
    /// A message record: a new message, or a new version of one already written (which the
    /// new version replaces).
    fn write(&mut self, session: &mut SessionDraft, id: String, event_index: usize, record: Value) {
        match self.latest.insert(id.clone(), (event_index, record)) {
            None => self.order.push(id),
            Some((older, _)) => replace(session, older, event_index),
        }
    }

    /// `$rewindTo` (the record `event_index`): drops the message `id` and every later one; all
    /// of them if `id` is unknown. The rewind replaces each.
    fn rewind(&mut self, session: &mut SessionDraft, id: &str, event_index: usize) {
        let from = self.order.iter().position(|m| m == id).unwrap_or(0);
        for removed in self.order.drain(from..) {
            if let Some((older, _)) = self.latest.remove(&removed) {
                replace(session, older, event_index);
            }
        }
    }

    /// Turns the live messages into the session's messages and marks their events current.
    fn finish(self, session: &mut SessionDraft) {
        let Replay { order, mut latest } = self;
        for id in order {
            let Some((event_index, record)) = latest.remove(&id) else {
                continue;
            };
            if let Some(event) = session.events.get_mut(event_index) {
                event.surface = Surface::Current;
            }
            read_message(session, &record, event_index);
        }
    }
}

fn read_line(session: &mut SessionDraft, replay: &mut Replay, line: Line) {
    let value = line.value;
    if let Some(set) = value.get("$set") {
        read_set(session, set);
        session.push_event("$set", None, Surface::LogOnly, line.text);
    } else if let Some(target) = value.get("$rewindTo") {
        let event_index = session.push_event("$rewindTo", None, Surface::LogOnly, line.text);
        if let Some(id) = target.as_str() {
            replay.rewind(session, id, event_index);
        }
    } else if value.get("sessionId").is_some() && value.get("type").is_none() {
        let time = json_time(value.get("startTime"));
        session.push_event("session", time, Surface::LogOnly, line.text);
    } else {
        // Message records are shadowed until the replay ends with them still live.
        let event_index = push_message_event(session, &value, Surface::Shadowed, line.text);
        let id = str_field(&value, "id").unwrap_or_else(|| format!("line-{}", line.number));
        replay.write(session, id, event_index, value);
    }
}

/// Records that event `older` was positionally replaced by event `by`.
fn replace(session: &mut SessionDraft, older: usize, by: usize) {
    if let Some(event) = session.events.get_mut(older) {
        event.replaced_by = Some(by);
    }
}

/// A `$set` metadata patch: `lastUpdated` and `summary` (the session's title).
fn read_set(session: &mut SessionDraft, set: &Value) {
    if let Some(t) = json_time(set.get("lastUpdated")) {
        session.updated_at = Some(t);
    }
    if let Some(summary) = str_field(set, "summary").filter(|s| !s.trim().is_empty()) {
        session.title = Some(summary);
    }
}

/// Pushes the event of a message record and returns its index.
fn push_message_event(
    session: &mut SessionDraft,
    message: &Value,
    surface: Surface,
    payload: String,
) -> usize {
    let kind = str_field(message, "type").unwrap_or_else(|| "message".to_string());
    let time = json_time(message.get("timestamp"));
    session.push_event(&kind, time, surface, payload)
}

fn header(value: &Value) -> SessionDraft {
    let native = str_field(value, "sessionId").unwrap_or_else(|| "session".to_string());
    let mut session = SessionDraft::new(Origin::GeminiCli, native);
    session.created_at = json_time(value.get("startTime"));
    session.updated_at = json_time(value.get("lastUpdated"));
    session.title = str_field(value, "summary");
    session
}

/// Reads one message record (whose event is `event_index`) into the session.
fn read_message(session: &mut SessionDraft, message: &Value, event_index: usize) {
    let time = json_time(message.get("timestamp"));
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
        let args = call.get("args").unwrap_or(&Value::Null);
        let use_block = BlockDraft::tool_use(str_field(call, "name"), str_field(call, "id"), args);
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
    if let Some(tokens) = message.get("tokens").filter(|t| t.is_object()) {
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
