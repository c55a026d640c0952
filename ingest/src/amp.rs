//! Amp threads (Sourcegraph's agent, closed source): `${XDG_DATA_HOME:-~/.local/share}/amp/
//! threads/T-<id>.json`, each thread one JSON document that Amp rewrote whole on every change
//! (`v` counts the writes), as local Amp releases kept them until about March 2026 (later
//! releases keep threads on Amp's servers; `amp threads export <id>` prints the same document).
//! No first-party schema is published: the shapes are as readers of real files describe them
//! (ccusage's `adapter/amp`, agentsview's `internal/parser/amp.go`) and as a real export shows
//! (`tests/fixtures/agents/MANIFEST.tsv`).
//!
//! `{id, v, created (ms), title, env {initial {trees [{uri, displayName}]}}, messages [{role:
//! user | assistant | info, messageId, content [text | thinking | tool_use {id, name, input} |
//! tool_result {toolUseID, run {status, result | error}} | image], state {type, stopReason},
//! meta {sentAt}, usage {model?, timestamp?, inputTokens, outputTokens,
//! cacheCreationInputTokens, cacheReadInputTokens, totalInputTokens, maxInputTokens}}],
//! usageLedger? {events [{id, timestamp, model, credits, tokens {input, output},
//! operationType, fromMessageId, toMessageId}]}}`.
//!
//! Usage: one row per assistant message with a `usage` (one model call each, not running
//! totals), `inputTokens` without either cache count (`totalInputTokens` is their sum, never
//! added). For OpenAI's models Amp writes `inputTokens: 0` and the uncached prompt as
//! `cacheCreationInputTokens` (OpenAI bills no cache writes): it is read as input. Threads
//! written before about January 2026 also hold `usageLedger.events`, the same calls again
//! (`toMessageId` is the message's `messageId`, with its input and output but no cache split):
//! an event whose message has a usage adds nothing (it names the model and time where the
//! message does not); one without such a message is a call of its own, with the counts it
//! has. Keys `amp:<thread>:<messageId>` (a ledger event's `amp:<thread>:ledger:<id>`), so a
//! thread exported into the folder again counts once. `maxInputTokens` (the context window)
//! and `~debug.lastInferenceUsage` (a copy of the last call) are not counts. The sub-agents
//! Amp runs (Task, oracle) leave no usage in the thread: their calls cannot be counted.

use std::collections::HashMap;

use serde_json::Value;

use super::model::*;
use super::text::{flatten_text, json_time, str_field};

/// Whether a JSON document is an Amp thread: an id `T-...` and a list of messages, or a usage
/// ledger.
pub fn is_thread(root: &Value) -> bool {
    let messages = root.get("messages").is_some_and(Value::is_array);
    let id = str_field(root, "id").is_some_and(|id| id.starts_with("T-"));
    (messages && id) || root.get("usageLedger").is_some_and(Value::is_object)
}

/// Reads one thread.
pub fn parse(path: &str, root: &Value, parsed: &mut ParsedFile) {
    let stem = std::path::Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("thread")
        .to_string();
    let id = str_field(root, "id").unwrap_or(stem);
    let mut session = SessionDraft::new(Origin::Amp, id.clone());
    session.title = str_field(root, "title").filter(|t| !t.trim().is_empty());
    session.created_at = json_time(root.get("created"));
    session.cwd = root
        .pointer("/env/initial/trees/0/uri")
        .and_then(Value::as_str)
        .and_then(folder_of_uri);
    let events: Vec<&Value> = root
        .pointer("/usageLedger/events")
        .and_then(Value::as_array)
        .map(|e| e.iter().collect())
        .unwrap_or_default();
    // The ledger's event of each message, by `toMessageId`.
    let mut ledger: HashMap<i64, &Value> = HashMap::new();
    for event in &events {
        if let Some(to) = event.get("toMessageId").and_then(Value::as_i64) {
            ledger.insert(to, event);
        }
    }
    let mut counted = Vec::new();
    let mut last_time = session.created_at;
    let messages = root.get("messages").and_then(Value::as_array);
    for (n, message) in messages.into_iter().flatten().enumerate() {
        parsed.records += 1;
        let number = message.get("messageId").and_then(Value::as_i64);
        let event = number.and_then(|n| ledger.get(&n).copied());
        let usage = message.get("usage").filter(|u| u.is_object());
        let time = usage
            .and_then(|u| json_time(u.get("timestamp")))
            .or_else(|| json_time(message.pointer("/meta/sentAt")))
            .or_else(|| event.and_then(|e| json_time(e.get("timestamp"))))
            .or(last_time);
        last_time = time;
        let event_index = session.push_event(
            str_field(message, "role").as_deref().unwrap_or("message"),
            time,
            Surface::Current,
            message.to_string(),
        );
        if !message.is_object() {
            parsed.diagnostics.push(Diagnostic {
                file: path.to_string(),
                line: None,
                kind: "bad_record",
                reason: format!("message {} of the thread is not a JSON object", n + 1),
            });
            continue;
        }
        let mut m = read_message(message, time, event_index);
        if let Some(usage) = usage {
            let model = str_field(usage, "model")
                .or_else(|| event.and_then(|e| str_field(e, "model")))
                .or_else(|| str_field(message, "model"));
            m.model = model.clone();
            let key = format!("amp:{id}:{}", number.unwrap_or(n as i64));
            let tokens = usage_tokens(usage, model.as_deref());
            let at = Some(session.messages.len());
            m.tokens = push_usage(&mut session, tokens, model, key, (time, at, event_index));
            if let Some(n) = number {
                counted.push(n);
            }
        }
        session.messages.push(m);
    }
    // Ledger events whose message holds no usage: calls of their own.
    for event in events {
        let to = event.get("toMessageId").and_then(Value::as_i64);
        if to.is_some_and(|to| counted.contains(&to)) {
            continue;
        }
        let n = |k: &str| event.pointer(k).and_then(Value::as_i64).unwrap_or(0);
        let tokens = Tokens {
            input: n("/tokens/input"),
            output: n("/tokens/output"),
            ..Tokens::default()
        };
        let time = json_time(event.get("timestamp"));
        let event_index = session.push_event(
            "usageLedger.event",
            time,
            Surface::LogOnly,
            event.to_string(),
        );
        let key = format!(
            "amp:{id}:ledger:{}",
            str_field(event, "id").unwrap_or_else(|| event_index.to_string())
        );
        let model = str_field(event, "model");
        push_usage(&mut session, tokens, model, key, (time, None, event_index));
    }
    parsed.sessions.push(session);
}

/// A message's role and blocks: a user message of tool results only is the tools' message.
fn read_message(message: &Value, time: Option<i64>, event_index: usize) -> MessageDraft {
    let role = match str_field(message, "role").as_deref() {
        Some("assistant") => Role::Assistant,
        Some("user") => Role::User,
        _ => Role::System,
    };
    let mut m = MessageDraft::new(role, time, event_index);
    m.injected = role == Role::System;
    m.stop_reason = message
        .pointer("/state/stopReason")
        .and_then(Value::as_str)
        .map(String::from);
    let blocks = message.get("content").and_then(Value::as_array);
    for block in blocks.into_iter().flatten() {
        let kind = str_field(block, "type").unwrap_or_default();
        m.blocks.push(match kind.as_str() {
            "thinking" | "redacted_thinking" => BlockDraft::text(
                BlockKind::Thinking,
                str_field(block, "thinking").unwrap_or_default(),
            ),
            "tool_use" => BlockDraft::tool_use(
                str_field(block, "name"),
                str_field(block, "id"),
                block.get("input").unwrap_or(&Value::Null),
            ),
            "tool_result" => {
                let run = block.get("run").unwrap_or(&Value::Null);
                let status = str_field(run, "status").unwrap_or_default();
                let output = run.get("result").or_else(|| run.get("error"));
                let text = match output {
                    Some(Value::Object(o)) => o
                        .get("output")
                        .or_else(|| o.get("content"))
                        .or_else(|| o.get("summary"))
                        .map_or_else(
                            || Value::Object(o.clone()).to_string(),
                            |v| flatten_text(Some(v)),
                        ),
                    other => flatten_text(other),
                };
                let mut b = BlockDraft::text(BlockKind::ToolResult, text);
                b.tool_id = str_field(block, "toolUseID");
                b.is_error = Some(status == "error" || run.get("error").is_some());
                b
            }
            "image" => BlockDraft::text(BlockKind::Image, String::new()),
            _ => BlockDraft::text(
                BlockKind::Text,
                str_field(block, "text").unwrap_or_default(),
            ),
        });
    }
    let results_only =
        !m.blocks.is_empty() && m.blocks.iter().all(|b| b.kind == BlockKind::ToolResult);
    if role == Role::User && results_only {
        m.role = Role::Tool;
    }
    m
}

/// A message's `usage` as counts: the uncached input (for OpenAI's models, what Amp names cache
/// creation), output and cache reads and writes.
fn usage_tokens(usage: &Value, model: Option<&str>) -> Tokens {
    let n = |k: &str| usage.get(k).and_then(Value::as_i64).unwrap_or(0);
    let (input, write) = (n("inputTokens"), n("cacheCreationInputTokens"));
    let openai = model.is_some_and(|m| {
        let m = m.to_ascii_lowercase();
        m.starts_with("gpt-")
            || m.starts_with("codex")
            || (m.starts_with('o') && m[1..].starts_with(|c: char| c.is_ascii_digit()))
    });
    Tokens {
        input: if openai { input + write } else { input },
        output: n("outputTokens"),
        cache_read: n("cacheReadInputTokens"),
        cache_write: if openai { 0 } else { write },
        ..Tokens::default()
    }
}

/// Adds a call's usage row (none when every count is 0) at its time, message (none for a
/// ledger event of its own) and event, and returns its counts.
fn push_usage(
    session: &mut SessionDraft,
    tokens: Tokens,
    model: Option<String>,
    key: String,
    (time, message_index, event_index): (Option<i64>, Option<usize>, usize),
) -> Option<Tokens> {
    if [
        tokens.input,
        tokens.output,
        tokens.cache_read,
        tokens.cache_write,
    ] == [0; 4]
    {
        return None;
    }
    session.usage.push(UsageDraft {
        response_key: Some(key),
        via: RecordedVia::Transcript,
        subagent_native_id: None,
        message_index,
        request_id: None,
        model,
        tokens,
        occurred_at_ms: time,
        event_index,
    });
    Some(tokens)
}

/// The folder of a `file://` URI (percent-escapes decoded).
fn folder_of_uri(uri: &str) -> Option<String> {
    let path = uri.strip_prefix("file://")?;
    percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .ok()
        .map(|p| p.into_owned())
        .filter(|p| !p.is_empty())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    /// The hand-made thread of the ledger era.
    const THREAD: &[u8] = include_bytes!(
        "../../tests/fixtures/agents/amp/threads/T-0a11ce00-0000-4000-8000-000000000001.json"
    );
    const NAME: &str = "threads/T-0a11ce00-0000-4000-8000-000000000001.json";

    /// The calls of a thread's bytes: (model, input, output, cache read, cache write).
    fn calls(bytes: &[u8]) -> Vec<(String, [i64; 4])> {
        let (_, parsed) = crate::parse_bytes(NAME, bytes);
        parsed
            .sessions
            .iter()
            .flat_map(|s| s.usage.iter())
            .map(|u| {
                let t = u.tokens;
                let model = u.model.clone().unwrap_or_default();
                (model, [t.input, t.output, t.cache_read, t.cache_write])
            })
            .collect()
    }

    #[test]
    fn the_ledger_adds_only_the_calls_no_message_holds() {
        let sonnet = "claude-sonnet-4-5".to_string();
        assert_eq!(
            calls(THREAD),
            [
                (sonnet.clone(), [12, 300, 0, 5000]),
                (sonnet, [8, 120, 5000, 400]),
                ("claude-haiku-4-5".to_string(), [900, 20, 0, 0]),
            ]
        );
    }

    /// One byte changed at every eleventh position, and the thread cut at every hundredth:
    /// never a panic; a thread that no longer parses is at most one diagnostic, naming its
    /// line, and one that does is still one thread of Amp's.
    #[test]
    fn a_damaged_thread_is_reported_or_read_never_a_panic() {
        let check = |bytes: &[u8], what: &str| {
            let (format, parsed) = crate::parse_bytes(NAME, bytes);
            match format {
                Some(crate::detect::Format::Amp) => {
                    assert_eq!(parsed.sessions.len(), 1, "{what}");
                }
                Some(other) => panic!("{what}: read as {other:?}"),
                None => {
                    assert!(parsed.diagnostics.len() <= 1, "{what}");
                    assert!(
                        parsed.diagnostics.iter().all(|d| d.line.is_some()),
                        "{what}"
                    );
                }
            }
        };
        for at in (0..THREAD.len()).step_by(11) {
            let mut bytes = THREAD.to_vec();
            bytes[at] ^= 0x5a;
            check(&bytes, &format!("byte {at} changed"));
        }
        for at in (1..THREAD.len()).step_by(100) {
            check(&THREAD[..at], &format!("cut at {at}"));
        }
    }
}
