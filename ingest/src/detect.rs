//! Deciding which adapter reads a file, from its content (never from its name alone), and
//! whether a file that yielded no message still looked like a transcript (`empty_transcript`).

use serde_json::Value;

use super::lines::Line;
use super::model::{Diagnostic, ParsedFile};

/// The format of one input file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Claude Code JSONL.
    ClaudeCode,
    /// Codex rollout JSONL.
    Codex,
    /// Gemini CLI JSONL.
    GeminiLines,
    /// Gemini CLI whole-file JSON.
    GeminiJson,
    /// ChatGPT export JSON.
    ChatGpt,
    /// Claude.ai export JSON.
    ClaudeAi,
    /// AI Studio chunkedPrompt JSON.
    AiStudio,
    /// pi coding agent session JSONL.
    Pi,
    /// Qwen Code session JSONL.
    Qwen,
    /// Kimi CLI event log JSONL.
    Kimi,
    /// GitHub Copilot CLI event log JSONL.
    Copilot,
    /// An OpenCode session's rows, read from its database.
    OpenCode,
    /// A Goose session's rows, read from its database.
    Goose,
    /// An Amp thread (whole-file JSON).
    Amp,
    /// A Cline, Roo Code or Kilo Code task folder, read as one document.
    Cline,
    /// Aider's Markdown chat history.
    Aider,
    /// A Cursor conversation's rows, read from its `state.vscdb`.
    Cursor,
    /// A Crush session's rows, read from its project's `crush.db`.
    Crush,
    /// A Cline SDK session folder, read as one document.
    ClineSdk,
    /// A Cursor agent transcript (JSONL).
    CursorAgent,
}

impl Format {
    /// The format's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Format::ClaudeCode => "a Claude Code transcript",
            Format::Codex => "a Codex rollout",
            Format::GeminiLines => "a Gemini CLI session (JSONL)",
            Format::GeminiJson => "a Gemini CLI session (JSON)",
            Format::ChatGpt => "a ChatGPT export",
            Format::ClaudeAi => "a Claude.ai export",
            Format::AiStudio => "an AI Studio prompt",
            Format::Pi => "a pi session",
            Format::Qwen => "a Qwen Code session",
            Format::Kimi => "a Kimi CLI log",
            Format::Copilot => "a GitHub Copilot CLI log",
            Format::OpenCode => "an OpenCode session",
            Format::Goose => "a Goose session",
            Format::Amp => "an Amp thread",
            Format::Cline => "a Cline-family task",
            Format::Aider => "an Aider chat history",
            Format::Cursor => "a Cursor conversation",
            Format::Crush => "a Crush session",
            Format::ClineSdk => "a Cline SDK session",
            Format::CursorAgent => "a Cursor agent transcript",
        }
    }
}

/// The record types each JSONL adapter knows: a line of one of them names the format.
const CLAUDE_TYPES: &[&str] = super::claude_code::KNOWN_TYPES;
const CODEX_TYPES: &[&str] = super::codex::KNOWN_TYPES;

/// The format of a JSON Lines file, from its first records.
pub fn detect_lines(lines: &[Line]) -> Option<Format> {
    for line in lines.iter().take(20) {
        let v = &line.value;
        let kind = v.get("type").and_then(Value::as_str);
        // Before Claude Code's check: Qwen Code's records share its envelope.
        if super::qwen::is_record(v) {
            return Some(Format::Qwen);
        }
        if super::kimi::is_line(v) {
            return Some(Format::Kimi);
        }
        if super::copilot::is_line(v) {
            return Some(Format::Copilot);
        }
        if super::opencode::is_line(v) {
            return Some(Format::OpenCode);
        }
        if super::goose::is_line(v) {
            return Some(Format::Goose);
        }
        if super::cline::is_line(v) {
            return Some(Format::Cline);
        }
        if super::cline_sdk::is_line(v) {
            return Some(Format::ClineSdk);
        }
        if super::cursor::is_line(v) {
            return Some(Format::Cursor);
        }
        if super::crush::is_line(v) {
            return Some(Format::Crush);
        }
        if v.get("payload").is_some() && kind.is_some_and(|k| CODEX_TYPES.contains(&k)) {
            return Some(Format::Codex);
        }
        if kind.is_some_and(|k| CLAUDE_TYPES.contains(&k))
            && (v.get("sessionId").is_some()
                || v.get("uuid").is_some()
                || v.get("leafUuid").is_some())
        {
            return Some(Format::ClaudeCode);
        }
        if v.get("sessionId").is_some() && v.get("projectHash").is_some() {
            return Some(Format::GeminiLines);
        }
        if super::pi::is_header(v) {
            return Some(Format::Pi);
        }
        if super::cursor_agent::is_line(v) {
            return Some(Format::CursorAgent);
        }
    }
    None
}

/// The format of a whole-file JSON document.
pub fn detect_json(root: &Value) -> Option<Format> {
    let probe = match root {
        Value::Array(items) => items.first()?,
        other => other,
    };
    if probe.get("mapping").is_some()
        || probe
            .get("raw_provider_payload")
            .is_some_and(|p| p.get("mapping").is_some())
    {
        return Some(Format::ChatGpt);
    }
    if probe.get("chat_messages").is_some() {
        return Some(Format::ClaudeAi);
    }
    if probe.get("chunkedPrompt").is_some() {
        return Some(Format::AiStudio);
    }
    if super::amp::is_thread(probe) {
        return Some(Format::Amp);
    }
    if probe.get("sessionId").is_some() && probe.get("messages").is_some() {
        return Some(Format::GeminiJson);
    }
    None
}

/// Whether a JSON document is a known companion of transcripts quarry reads that holds no
/// transcript itself: Qwen Code's subagent metadata (`subagents/<session>/agent-<id>.meta.json`,
/// `{agentId, agentType, description, createdAt, parentSessionId, ...}`), Kimi CLI's session
/// state (`state.json`: `approval`, `plan_mode`, `todos`), subagent metadata (`meta.json`:
/// `agent_id`, `subagent_type`, `launch_spec`) and index of work folders (`kimi.json`:
/// `work_dirs`).
pub fn is_sidecar(root: &Value) -> bool {
    let has = |keys: &[&str]| keys.iter().all(|k| root.get(k).is_some());
    has(&["agentId", "agentType", "parentSessionId", "createdAt"])
        || has(&["approval", "plan_mode", "todos"])
        || has(&["agent_id", "subagent_type", "launch_spec"])
        || (has(&["work_dirs"]) && root.as_object().is_some_and(|o| o.len() <= 2))
}

/// Whether a JSON Lines file is a known companion that holds no transcript: Kimi CLI's
/// `context.jsonl` (the model's history beside the event log).
pub fn is_sidecar_lines(lines: &[Line]) -> bool {
    lines
        .iter()
        .take(20)
        .any(|l| super::kimi::is_context_line(&l.value))
}

/// Keys only the transcript formats quarry reads write (Claude Code, Gemini CLI).
const TRANSCRIPT_KEYS: &[&str] = &[
    "sessionId",
    "parentUuid",
    "leafUuid",
    "isSidechain",
    "projectHash",
];
/// Record types only those formats write (Claude Code, Codex).
const TRANSCRIPT_TYPES: &[&str] = &[
    "file-history-snapshot",
    "queue-operation",
    "session_meta",
    "response_item",
    "turn_context",
    "event_msg",
];

/// The transcript keys (or record types) found in JSON lines that no adapter claimed, in order
/// of first appearance: evidence that the file is a transcript quarry failed to recognise.
pub fn transcript_like_keys(lines: &[Line]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for line in lines {
        let v = &line.value;
        let keys = TRANSCRIPT_KEYS
            .iter()
            .filter(|k| v.get(**k).is_some())
            .map(|k| (*k).to_string());
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .filter(|t| TRANSCRIPT_TYPES.contains(t))
            .map(|t| format!("type {t}"));
        for key in keys.chain(kind) {
            if !found.contains(&key) {
                found.push(key);
            }
        }
    }
    found
}

/// The `empty_transcript` diagnostic of a file parsed as `format` that holds no message, or
/// `None` when it has messages. A Claude Code file of `summary` records only is not one: those
/// records title sessions of other files (their `leafUuid` points there), so nothing is lost.
pub fn empty_transcript(name: &str, format: Format, parsed: &ParsedFile) -> Option<Diagnostic> {
    if parsed.sessions.iter().any(|s| !s.messages.is_empty()) {
        return None;
    }
    let events = || parsed.sessions.iter().flat_map(|s| s.events.iter());
    let summaries_only = format == Format::ClaudeCode
        && events().next().is_some()
        && events().all(|e| e.kind == "summary");
    if summaries_only {
        return None;
    }
    Some(Diagnostic {
        file: name.to_string(),
        line: None,
        kind: "empty_transcript",
        reason: format!(
            "read as {} but holds no message ({} records, {} sessions)",
            format.name(),
            parsed.records,
            parsed.sessions.len()
        ),
    })
}

/// The `empty_transcript` diagnostic of JSON lines no adapter claimed although they carry
/// transcript keys, or `None` when they carry none.
pub fn unrecognised_transcript(name: &str, lines: &[Line]) -> Option<Diagnostic> {
    let keys = transcript_like_keys(lines);
    if keys.is_empty() {
        return None;
    }
    Some(Diagnostic {
        file: name.to_string(),
        line: None,
        kind: "empty_transcript",
        reason: format!(
            "JSON lines with transcript keys ({}) but no record quarry reads as a message",
            keys.join(", ")
        ),
    })
}
