//! Qwen Code sessions (`QwenLM/qwen-code`, `packages/core/src/services/chatRecordingService.ts`):
//! `~/.qwen/projects/<cwd with every non-alphanumeric character made '-'>/chats/<session id>.jsonl`
//! (`$QWEN_RUNTIME_DIR`, else `$QWEN_HOME`, else `~/.qwen`), append-only, one record a line:
//! `{uuid, parentUuid, sessionId, timestamp, type, provenance?, cwd, version, gitBranch?, ...}`
//! with `type` `user`, `assistant`, `tool_result` or `system` (`subtype` `ui_telemetry`,
//! `chat_compression`, `custom_title`, `slash_command`, `rewind`, ...). Messages are Gemini
//! `Content`: `message {role, parts: [{text, thought?} | {functionCall {id, name, args}} |
//! {functionResponse {id, name, response}}]}`. A subagent writes its own file,
//! `subagents/<session id>/agent-<agent id>.jsonl`, whose records carry the parent's `sessionId`
//! and their `agentId` (and no `model`: such a response's model is not known).
//!
//! Usage is per assistant record (`usageMetadata {promptTokenCount, candidatesTokenCount,
//! thoughtsTokenCount, totalTokenCount, cachedContentTokenCount}`, one record per completed API
//! call, the stream's final counts). The prompt count includes the cached tokens, and whether
//! the thoughts are inside the candidates depends on the provider (inside them on the
//! OpenAI-compatible path Qwen OAuth uses, beside them on Gemini's), which the record does not
//! name; the total is right on both, so output is `total - prompt`. The same usage is repeated
//! by the `ui_telemetry` record of the call (`qwen-code.api_response`) and, for a subagent, by
//! the agent tool's `executionSummary`: neither is counted. The trap is the fork (`/branch`,
//! `--fork-session`): a new file of a new session copying the chain's records with the same
//! `uuid` and usage, each marked `forkedFrom`; the response key is the record's `uuid`, so the
//! archive counts each response once (docs/accounting.md). Resuming a session appends to its file.
//! The format as Qwen Code 0.24.4 writes it.

use serde_json::Value;

use super::lines::Line;
use super::model::*;
use super::text::{json_time, str_field};

/// Whether a JSONL record is Qwen Code's: a session record whose message is Gemini `Content`
/// (`parts`), or that carries Gemini usage or a system payload (Claude Code's records, which
/// share the envelope, have `content` and `usage`).
pub fn is_record(value: &Value) -> bool {
    value.get("sessionId").is_some_and(Value::is_string)
        && value.get("uuid").is_some()
        && (value
            .get("message")
            .and_then(|m| m.get("parts"))
            .is_some_and(Value::is_array)
            || value.get("usageMetadata").is_some_and(Value::is_object)
            || value.get("systemPayload").is_some_and(Value::is_object))
}

/// Reads one session file.
pub fn parse(name: &str, lines: Vec<Line>, parsed: &mut ParsedFile) {
    let Some(first) = lines.iter().find(|l| is_record(&l.value)) else {
        return;
    };
    let mut session = header(&first.value);
    for line in lines {
        parsed.records += 1;
        let value = &line.value;
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        let time = json_time(value.get("timestamp"));
        if time.is_some() {
            session.created_at = session.created_at.min(time).or(time);
            session.updated_at = session.updated_at.max(time);
        }
        if session.git_branch.is_none() {
            session.git_branch = str_field(value, "gitBranch");
        }
        match kind {
            "user" | "assistant" | "tool_result" => {
                if value.get("message").and_then(|m| m.get("parts")).is_none() {
                    parsed.diagnostics.push(Diagnostic {
                        file: name.to_string(),
                        line: Some(line.number),
                        kind: "bad_record",
                        reason: format!("a Qwen Code {kind} record without message parts"),
                    });
                    session.push_event(kind, time, Surface::LogOnly, line.text);
                    continue;
                }
                let event_index =
                    session.push_event(kind, time, Surface::Current, line.text.clone());
                read_message(&mut session, kind, value, time, event_index);
            }
            "system" => {
                let subtype = str_field(value, "subtype").unwrap_or_default();
                let payload = value.get("systemPayload");
                match subtype.as_str() {
                    "custom_title" => {
                        if let Some(title) = payload
                            .and_then(|p| str_field(p, "customTitle"))
                            .filter(|t| !t.trim().is_empty())
                        {
                            session.title = Some(title);
                        }
                    }
                    "chat_compression" => {
                        if let Some(summary) = payload.and_then(compression_summary) {
                            session
                                .snapshots
                                .push(SnapshotDraft::compaction(summary, time));
                        }
                    }
                    _ => {}
                }
                let kind = if subtype.is_empty() {
                    "system".to_string()
                } else {
                    format!("system/{subtype}")
                };
                session.push_event(&kind, time, Surface::LogOnly, line.text);
            }
            other => {
                *parsed
                    .unknown_records
                    .entry(format!("qwen:{other}"))
                    .or_default() += 1;
                session.push_event(other, time, Surface::LogOnly, line.text);
            }
        }
    }
    parsed.sessions.push(session);
}

/// The session a file holds, from its first record: the session's own, a subagent's (records
/// with `agentId`, in the parent session's folder), or a fork's (`forkedFrom` names the parent).
fn header(value: &Value) -> SessionDraft {
    let session_id = str_field(value, "sessionId").unwrap_or_else(|| "session".to_string());
    let agent = str_field(value, "agentId").filter(|a| !a.is_empty());
    let native = match &agent {
        Some(agent) => format!("{session_id}/agent-{agent}"),
        None => session_id.clone(),
    };
    let mut session = SessionDraft::new(Origin::QwenCode, native);
    session.cwd = str_field(value, "cwd");
    if agent.is_some() {
        session.parent_native_id = Some(session_id);
        session.branch_type = Some("subagent");
        session.agent = str_field(value, "agentName").or(agent);
    } else if let Some(parent) = value
        .get("forkedFrom")
        .and_then(|f| str_field(f, "sessionId"))
        .filter(|p| !p.is_empty())
    {
        session.parent_native_id = Some(parent);
        session.branch_type = Some("fork");
    }
    session
}

fn read_message(
    session: &mut SessionDraft,
    kind: &str,
    record: &Value,
    time: Option<i64>,
    event_index: usize,
) {
    let parts = record
        .get("message")
        .and_then(|m| m.get("parts"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let role = match kind {
        "assistant" => Role::Assistant,
        "tool_result" => Role::Tool,
        _ => Role::User,
    };
    let mut m = MessageDraft::new(role, time, event_index);
    m.is_sidechain = record.get("isSidechain").and_then(Value::as_bool) == Some(true);
    if role == Role::User {
        // What a person typed: Qwen Code's `real_user` records; a user record with another
        // subtype (or provenance) is context Qwen Code added.
        let subtype = str_field(record, "subtype");
        let provenance = str_field(record, "provenance");
        m.injected = !matches!(subtype.as_deref(), None | Some("mid_turn_user_message"))
            || !matches!(provenance.as_deref(), None | Some("real_user"));
    }
    for part in parts {
        if let Some(call) = part.get("functionCall") {
            m.blocks.push(BlockDraft::tool_use(
                str_field(call, "name"),
                str_field(call, "id"),
                call.get("args").unwrap_or(&Value::Null),
            ));
        } else if let Some(response) = part.get("functionResponse") {
            let body = response.get("response");
            let error = body.and_then(|b| b.get("error"));
            let output = error.or_else(|| body.and_then(|b| b.get("output")));
            let text = match output {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            let mut block = BlockDraft::text(BlockKind::ToolResult, text);
            block.tool_id = str_field(response, "id");
            block.tool_name = str_field(response, "name");
            let status = record
                .get("toolCallResult")
                .and_then(|r| str_field(r, "status"));
            block.is_error = Some(error.is_some() || status.as_deref() == Some("error"));
            m.blocks.push(block);
        } else if let Some(text) = part.get("text").and_then(Value::as_str) {
            let kind = if part.get("thought").and_then(Value::as_bool) == Some(true) {
                BlockKind::Thinking
            } else {
                BlockKind::Text
            };
            m.blocks.push(BlockDraft::text(kind, text));
        } else if part.get("inlineData").is_some() || part.get("fileData").is_some() {
            m.blocks
                .push(BlockDraft::text(BlockKind::Image, String::new()));
        }
    }
    if role == Role::Assistant {
        m.model = str_field(record, "model");
        if let Some(tokens) = record.get("usageMetadata").and_then(tokens_of) {
            m.tokens = Some(tokens);
            session.usage.push(UsageDraft {
                response_key: str_field(record, "uuid").map(|u| format!("qwen:{u}")),
                via: RecordedVia::Transcript,
                subagent_native_id: None,
                message_index: Some(session.messages.len()),
                request_id: None,
                model: m.model.clone(),
                tokens,
                occurred_at_ms: time,
                event_index,
            });
        }
    }
    session.messages.push(m);
}

/// The tokens of one `usageMetadata`, or `None` when it billed nothing. The prompt count holds
/// the cached tokens; output is what the total adds to the prompt (the thoughts within it on
/// every provider), else the candidates.
fn tokens_of(usage: &Value) -> Option<Tokens> {
    let get = |k: &str| usage.get(k).and_then(Value::as_i64).unwrap_or(0).max(0);
    let prompt = get("promptTokenCount");
    let cached = get("cachedContentTokenCount").min(prompt);
    let total = get("totalTokenCount");
    let output = if total > 0 {
        (total - prompt).max(0)
    } else {
        get("candidatesTokenCount")
    };
    let thoughts = get("thoughtsTokenCount");
    if prompt == 0 && output == 0 {
        return None;
    }
    Some(Tokens {
        input: prompt - cached,
        output,
        reasoning: (thoughts > 0).then_some(thoughts.min(output)),
        cache_read: cached,
        cache_write: 0,
        cache_write_1h: 0,
    })
}

/// The summary a compression handed the model: the text of the compressed history's first
/// user content (Qwen Code's `<state_snapshot>`).
fn compression_summary(payload: &Value) -> Option<String> {
    let history = payload.get("compressedHistory")?.as_array()?;
    let first = history
        .iter()
        .find(|c| c.get("role").and_then(Value::as_str) == Some("user"))?;
    let text: Vec<&str> = first
        .get("parts")?
        .as_array()?
        .iter()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    (!text.is_empty()).then(|| text.join("\n"))
}
