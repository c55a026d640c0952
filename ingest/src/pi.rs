//! pi coding agent sessions (`badlogic/pi-mono`, `packages/coding-agent`):
//! `~/.pi/agent/sessions/--<cwd>--/<ISO time>_<session id>.jsonl` (`$PI_CODING_AGENT_DIR`
//! overrides `~/.pi/agent`). Line 1 is the header `{type: "session", id, timestamp, cwd,
//! version?, parentSession? | branchedFrom?}`; every later line an entry `{type, id?,
//! parentId?, timestamp}`: `message` (roles user, assistant, toolResult, bashExecution, custom,
//! branchSummary, compactionSummary), `model_change`, `thinking_level_change`, `compaction`,
//! `branch_summary`, `label`, `session_info`, `custom`, `custom_message`. Entries form a tree
//! (a branch moves the leaf and deletes nothing), so every assistant entry of a file is a
//! response that was billed, abandoned branches included.
//!
//! Usage is per assistant message (`usage {input, output, cacheRead, cacheWrite, cacheWrite1h?,
//! reasoning?, totalTokens, cost}`), never cumulative. The trap is the fork: `/fork` (and
//! version 1's `/branch`) copies the path's entries verbatim (same ids, times and usage) into a
//! new file of a new session whose header names the old file, and pi rewrites a version 1 or 2
//! file with new random entry ids when it opens it. The response key is therefore what survives
//! both: the provider's `responseId` where pi records it, else the message's own time (ms),
//! provider, model and token counts; the archive counts each key once (docs/accounting.md). An
//! aborted response with every count 0 has no usage row (nothing was billed, and ccusage skips it
//! too). Some Google providers of pi write `input` with the cache reads in it (then `input +
//! output` is the whole `totalTokens`); those are taken out, as `input` means uncached input here.
//! The format as pi 0.58 writes it: `packages/coding-agent/src/core/session-manager.ts`
//! (/work/shared/notes/agents/pi-amp.md).

use serde_json::Value;

use super::lines::Line;
use super::model::*;
use super::text::{flatten_text, json_time, str_field};

/// Whether a JSONL line is a pi session header.
pub fn is_header(value: &Value) -> bool {
    value.get("type").and_then(Value::as_str) == Some("session")
        && value.get("cwd").is_some()
        && value.get("id").is_some_and(Value::is_string)
        && value.get("sessionId").is_none()
}

/// Reads one session file.
pub fn parse(name: &str, lines: Vec<Line>, parsed: &mut ParsedFile) {
    let Some(first) = lines.iter().find(|l| is_header(&l.value)) else {
        return;
    };
    let mut session = header(&first.value);
    let mut cost: Option<f64> = None;
    for line in lines {
        parsed.records += 1;
        let value = &line.value;
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        let time = json_time(value.get("timestamp"));
        if time.is_some() {
            session.updated_at = session.updated_at.max(time);
        }
        match kind {
            "message" => {
                let Some(message) = value.get("message").filter(|m| m.is_object()) else {
                    parsed.diagnostics.push(Diagnostic {
                        file: name.to_string(),
                        line: Some(line.number),
                        kind: "bad_record",
                        reason: "a pi message entry without a message object".into(),
                    });
                    session.push_event(kind, time, Surface::LogOnly, line.text);
                    continue;
                };
                let event_index =
                    session.push_event(kind, time, Surface::Current, line.text.clone());
                if let Some(c) = read_message(&mut session, value, message, time, event_index) {
                    *cost.get_or_insert(0.0) += c;
                }
            }
            "session" => {
                session.push_event(kind, time, Surface::LogOnly, line.text);
            }
            "session_info" => {
                if let Some(title) = str_field(value, "name").filter(|t| !t.trim().is_empty()) {
                    session.title = Some(title);
                }
                session.push_event(kind, time, Surface::LogOnly, line.text);
            }
            "compaction" => {
                if let Some(summary) = str_field(value, "summary") {
                    session
                        .snapshots
                        .push(SnapshotDraft::compaction(summary, time));
                }
                session.push_event(kind, time, Surface::LogOnly, line.text);
            }
            "model_change"
            | "thinking_level_change"
            | "branch_summary"
            | "label"
            | "custom"
            | "custom_message" => {
                session.push_event(kind, time, Surface::LogOnly, line.text);
            }
            other => {
                *parsed
                    .unknown_records
                    .entry(format!("pi:{other}"))
                    .or_default() += 1;
                session.push_event(other, time, Surface::LogOnly, line.text);
            }
        }
    }
    session.reported_cost_usd = cost;
    parsed.sessions.push(session);
}

fn header(value: &Value) -> SessionDraft {
    let native = str_field(value, "id").unwrap_or_else(|| "session".to_string());
    let mut session = SessionDraft::new(Origin::Pi, native);
    session.created_at = json_time(value.get("timestamp"));
    session.updated_at = session.created_at;
    session.cwd = str_field(value, "cwd");
    // A fork names the file it was copied from; its session id is that file's name after the
    // first `_` (`<ISO time>_<session id>.jsonl`).
    if let Some(parent) =
        str_field(value, "parentSession").or_else(|| str_field(value, "branchedFrom"))
    {
        let stem = parent
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or(&parent)
            .trim_end_matches(".jsonl");
        let id = stem.split_once('_').map_or(stem, |(_, id)| id);
        if !id.is_empty() {
            session.parent_native_id = Some(id.to_string());
            session.branch_type = Some("fork");
        }
    }
    session
}

/// Reads one `message` entry; returns the cost pi recorded for a billed response.
fn read_message(
    session: &mut SessionDraft,
    entry: &Value,
    message: &Value,
    entry_time: Option<i64>,
    event_index: usize,
) -> Option<f64> {
    // The entry's time: when pi appended the message (a response's is when it ended; the
    // message's own `timestamp` is when its request started). ccusage dates responses so too.
    let time = entry_time.or_else(|| json_time(message.get("timestamp")));
    let role = message.get("role").and_then(Value::as_str).unwrap_or("");
    let mut m = MessageDraft::new(
        match role {
            "assistant" => Role::Assistant,
            "toolResult" => Role::Tool,
            "user" => Role::User,
            _ => Role::User,
        },
        time,
        event_index,
    );
    match role {
        "assistant" => read_assistant(&mut m, message),
        "toolResult" => {
            let mut result =
                BlockDraft::text(BlockKind::ToolResult, flatten_text(message.get("content")));
            result.tool_id = str_field(message, "toolCallId");
            result.tool_name = str_field(message, "toolName");
            result.is_error = message.get("isError").and_then(Value::as_bool);
            m.blocks.push(result);
            push_images(&mut m, message.get("content"));
        }
        // A shell command the user ran (`!cmd`): the user's side, not a result of the model's
        // tool call (a tool result after the last response would leave the turn unfinished).
        "bashExecution" => {
            m.injected = true;
            let command = str_field(message, "command").unwrap_or_default();
            let output = flatten_text(message.get("output"));
            let mut block = BlockDraft::text(BlockKind::Code, format!("$ {command}\n{output}"));
            block.tool_command = Some(command);
            block.exit_code = message.get("exitCode").and_then(Value::as_i64);
            block.is_error = block.exit_code.map(|code| code != 0);
            m.blocks.push(block);
        }
        "user" => {
            m.blocks.push(BlockDraft::text(
                BlockKind::Text,
                flatten_text(message.get("content")),
            ));
            push_images(&mut m, message.get("content"));
        }
        // custom, branchSummary, compactionSummary: context pi adds, not typed by the user.
        other => {
            m.injected = true;
            // An extension's message it asked pi not to show.
            m.hidden = message.get("display").and_then(Value::as_bool) == Some(false);
            m.compaction_summary = other == "compactionSummary";
            let text = match message.get("summary") {
                Some(summary) => flatten_text(Some(summary)),
                None => flatten_text(message.get("content")),
            };
            m.blocks.push(BlockDraft::text(BlockKind::Text, text));
        }
    }
    let mut cost = None;
    if role == "assistant"
        && let Some(tokens) = tokens_of(message)
    {
        m.tokens = Some(tokens);
        cost = message
            .get("usage")
            .and_then(|u| u.get("cost"))
            .and_then(|c| c.get("total"))
            .and_then(Value::as_f64);
        session.usage.push(UsageDraft {
            response_key: Some(response_key(entry, message, &tokens)),
            via: RecordedVia::Transcript,
            subagent_native_id: None,
            message_index: Some(session.messages.len()),
            request_id: str_field(message, "responseId"),
            model: m.model.clone(),
            tokens,
            occurred_at_ms: time,
            event_index,
        });
    }
    session.messages.push(m);
    cost
}

/// One image block per `{type: "image"}` item of a content array (its data stays in the event).
fn push_images(m: &mut MessageDraft, content: Option<&Value>) {
    let images = content
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("image"));
    for _ in images {
        m.blocks
            .push(BlockDraft::text(BlockKind::Image, String::new()));
    }
}

fn read_assistant(m: &mut MessageDraft, message: &Value) {
    m.model = str_field(message, "model");
    m.stop_reason = str_field(message, "stopReason");
    for block in message
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => m.blocks.push(BlockDraft::text(
                BlockKind::Text,
                str_field(block, "text").unwrap_or_default(),
            )),
            Some("thinking") => m.blocks.push(BlockDraft::text(
                BlockKind::Thinking,
                str_field(block, "thinking").unwrap_or_default(),
            )),
            Some("toolCall") => {
                let args = block.get("arguments").unwrap_or(&Value::Null);
                m.blocks.push(BlockDraft::tool_use(
                    str_field(block, "name"),
                    str_field(block, "id"),
                    args,
                ));
            }
            Some("image") => m
                .blocks
                .push(BlockDraft::text(BlockKind::Image, String::new())),
            _ => {}
        }
    }
}

/// The tokens of an assistant message's `usage`, or `None` when it billed nothing (every count
/// 0 or absent: an aborted request). Where a Google provider's `input` holds its cache reads
/// (`input + output` is the whole `totalTokens`, so the cache reads are not beside it), they are
/// taken out; newer pi writes Google's `input` without them, and it is kept.
fn tokens_of(message: &Value) -> Option<Tokens> {
    let usage = message.get("usage")?;
    let get = |k: &str| usage.get(k).and_then(Value::as_i64);
    let cache_read = get("cacheRead").unwrap_or(0);
    let cache_write = get("cacheWrite").unwrap_or(0);
    let mut input = get("input").unwrap_or(0);
    let mut output = get("output").unwrap_or(0);
    if get("input").is_none() && get("output").is_none() {
        // Only a total: what the split does not name is output (as ccusage reads it).
        output = (get("totalTokens").unwrap_or(0) - cache_read - cache_write).max(0);
    }
    let google = |k: &str| str_field(message, k).is_some_and(|s| s.starts_with("google"));
    if (google("provider") || google("api"))
        && cache_read > 0
        && get("totalTokens").is_some_and(|t| input + output + cache_read > t)
    {
        input = (input - cache_read).max(0);
    }
    if input == 0 && output == 0 && cache_read == 0 && cache_write == 0 {
        return None;
    }
    Some(Tokens {
        input,
        output,
        reasoning: get("reasoning"),
        cache_read,
        cache_write,
        cache_write_1h: get("cacheWrite1h").unwrap_or(0).min(cache_write),
    })
}

/// What identifies a response across the files a fork copies it into, and across pi's rewrite
/// of an old file with new entry ids (see the module doc).
fn response_key(entry: &Value, message: &Value, tokens: &Tokens) -> String {
    if let Some(id) = str_field(message, "responseId").filter(|s| !s.is_empty()) {
        return format!("pi:{id}");
    }
    let at = json_time(message.get("timestamp"))
        .or_else(|| json_time(entry.get("timestamp")))
        .unwrap_or_default();
    format!(
        "pi:{at}:{}/{}:{}:{}:{}:{}",
        str_field(message, "provider").unwrap_or_default(),
        str_field(message, "model").unwrap_or_default(),
        tokens.input,
        tokens.output,
        tokens.cache_read,
        tokens.cache_write
    )
}
