//! An independent reading of transcripts, straight from the JSONL with serde_json, used as the
//! oracle for ingest figures. It shares no code with the ingest.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

/// Figures of one Claude Code file's main session (sidechain records excluded).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ClaudeFigures {
    pub user_messages: i64,
    pub assistant_messages: i64,
    pub tool_uses: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    pub usage_rows: i64,
}

fn good_lines(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).expect("read");
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| std::str::from_utf8(l).ok())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

/// Counts a Claude Code file: user records with content, distinct assistant `message.id`s,
/// distinct tool_use ids, and tokens with each (message.id, requestId) billed once at its largest
/// output.
pub fn claude(path: &Path, include_sidechain: bool) -> ClaudeFigures {
    let mut f = ClaudeFigures::default();
    let mut assistant_ids = HashSet::new();
    let mut tool_ids = HashSet::new();
    let mut usage: HashMap<(String, String), Value> = HashMap::new();
    for v in good_lines(path) {
        if !include_sidechain && v["isSidechain"] == Value::Bool(true) {
            continue;
        }
        match v["type"].as_str() {
            Some("user") => {
                let has_content = match &v["message"]["content"] {
                    Value::String(_) => true,
                    Value::Array(items) => items.iter().any(|i| {
                        matches!(
                            i["type"].as_str(),
                            Some("text" | "tool_result" | "image" | "document")
                        )
                    }),
                    _ => false,
                };
                if has_content {
                    f.user_messages += 1;
                }
            }
            Some("assistant") => {
                let id = v["message"]["id"].as_str().unwrap_or_default().to_string();
                assistant_ids.insert(id.clone());
                for item in v["message"]["content"].as_array().into_iter().flatten() {
                    if item["type"] == "tool_use" {
                        tool_ids.insert(item["id"].as_str().unwrap_or_default().to_string());
                    }
                }
                let u = &v["message"]["usage"];
                if u.is_object() {
                    let key = (id, v["requestId"].as_str().unwrap_or_default().to_string());
                    let keep = usage.get(&key).is_none_or(|old| {
                        u["output_tokens"].as_i64() >= old["output_tokens"].as_i64()
                    });
                    if keep {
                        usage.insert(key, u.clone());
                    }
                }
            }
            _ => {}
        }
    }
    f.assistant_messages = assistant_ids.len() as i64;
    f.tool_uses = tool_ids.len() as i64;
    f.usage_rows = usage.len() as i64;
    for u in usage.values() {
        f.input_tokens += u["input_tokens"].as_i64().unwrap_or(0);
        f.output_tokens += u["output_tokens"].as_i64().unwrap_or(0);
        f.cache_read_tokens += u["cache_read_input_tokens"].as_i64().unwrap_or(0);
        f.cache_write_tokens += u["cache_creation_input_tokens"].as_i64().unwrap_or(0);
    }
    f
}

/// Figures of one Codex rollout.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CodexFigures {
    pub user_messages: i64,
    pub tool_calls: i64,
    pub tool_outputs: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub usage_rows: i64,
}

/// Counts a Codex rollout: user messages, tool calls and outputs, and tokens as the last
/// cumulative total (usage rows: the number of distinct successive totals).
pub fn codex(path: &Path) -> CodexFigures {
    let mut f = CodexFigures::default();
    let mut last_total: Option<Value> = None;
    for v in good_lines(path) {
        let p = &v["payload"];
        match (v["type"].as_str(), p["type"].as_str()) {
            (Some("response_item"), Some("message")) if p["role"] == "user" => f.user_messages += 1,
            (
                Some("response_item"),
                Some("function_call" | "custom_tool_call" | "local_shell_call" | "web_search_call"),
            ) => f.tool_calls += 1,
            (
                Some("response_item"),
                Some(
                    "function_call_output" | "custom_tool_call_output" | "local_shell_call_output",
                ),
            ) => f.tool_outputs += 1,
            (Some("event_msg"), Some("token_count")) => {
                let total = &p["info"]["total_token_usage"];
                if total.is_object() && last_total.as_ref() != Some(total) {
                    f.usage_rows += 1;
                    last_total = Some(total.clone());
                }
            }
            _ => {}
        }
    }
    if let Some(t) = last_total {
        let cached = t["cached_input_tokens"].as_i64().unwrap_or(0);
        f.input_tokens = t["input_tokens"].as_i64().unwrap_or(0) - cached;
        f.cache_read_tokens = cached;
        f.output_tokens = t["output_tokens"].as_i64().unwrap_or(0);
    }
    f
}
