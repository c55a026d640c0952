//! Deciding which adapter reads a file, from its content (never from its name alone).

use serde_json::Value;

use super::lines::Line;

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
}

const CLAUDE_TYPES: &[&str] = &[
    "user",
    "assistant",
    "summary",
    "system",
    "progress",
    "file-history-snapshot",
    "queue-operation",
    "attachment",
    "custom-title",
    "ai-title",
    "last-prompt",
    "agent-name",
    "pr-link",
    "worktree-state",
    "permission-mode",
    "mode",
    "bridge-session",
    "atis-latch",
];
const CODEX_TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
];

/// The format of a JSON Lines file, from its first records.
pub fn detect_lines(lines: &[Line]) -> Option<Format> {
    for line in lines.iter().take(20) {
        let v = &line.value;
        let kind = v.get("type").and_then(Value::as_str);
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
    if probe.get("sessionId").is_some() && probe.get("messages").is_some() {
        return Some(Format::GeminiJson);
    }
    None
}
