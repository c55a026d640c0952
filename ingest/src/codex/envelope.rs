//! Codex `item_completed` envelopes (newer CLIs): an `event_msg` whose payload is
//! `{type: "item_completed", thread_id, turn_id, item, completed_at_ms}` with `item` a `TurnItem`
//! (`codex-rs/protocol/src/items.rs`, tagged by `type`: `UserMessage`, `AgentMessage`,
//! `Reasoning`, `CommandExecution`, `McpToolCall`, `WebSearch`, `FileChange`, `DynamicToolCall`,
//! ...).
//!
//! Each item is rewritten into the `response_item` payloads its direct form has, so both forms
//! go through the same reader and become the same messages and blocks. Items without a message
//! form (plans, sleeps, collaboration and image events, compaction markers) stay log-only. An
//! item the rollout also writes directly is read once: [`DirectItems`] remembers the direct
//! items of the file and absorbs their envelope twins.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::super::lines::Line;
use super::super::text::{flatten_text, str_field};

/// What a direct item is, for matching an envelope twin that carries no shared id.
type TextKey = (&'static str, String);

/// One turn item a rollout writes directly (`response_item`).
struct DirectItem {
    /// The item's own id, when the direct form has one.
    id: Option<String>,
    /// Its position among the rollout's records (its event index).
    record: usize,
    /// Whether an envelope twin has been matched to it.
    used: bool,
}

/// The direct turn items of one rollout, indexed by id and by text.
#[derive(Default)]
pub struct DirectItems {
    items: Vec<DirectItem>,
    by_id: HashMap<String, usize>,
    by_text: HashMap<TextKey, Vec<usize>>,
}

impl DirectItems {
    /// Collects the direct items of a rollout (messages, reasoning, tool calls and outputs);
    /// `base` is the session index of the first line (its records are numbered from it).
    pub fn scan(lines: &[Line], base: usize) -> Self {
        let mut direct = DirectItems::default();
        for (record, line) in lines.iter().enumerate() {
            if line.value.get("type").and_then(Value::as_str) != Some("response_item") {
                continue;
            }
            if let Some(payload) = line.value.get("payload") {
                direct.add(payload, base + record);
            }
        }
        direct
    }

    /// The record of the first direct item no envelope matched.
    pub fn first_unmatched(&self) -> Option<usize> {
        self.items
            .iter()
            .filter(|d| !d.used)
            .map(|d| d.record)
            .min()
    }

    fn add(&mut self, payload: &Value, record: usize) {
        let ids: Vec<String> = ["id", "call_id"]
            .iter()
            .filter_map(|k| str_field(payload, k))
            .filter(|id| !id.is_empty())
            .collect();
        let index = self.items.len();
        self.items.push(DirectItem {
            id: ids.first().cloned(),
            record,
            used: false,
        });
        for id in ids {
            self.by_id.entry(id).or_insert(index);
        }
        if let Some(key) = direct_text_key(payload) {
            self.by_text.entry(key).or_default().push(index);
        }
    }

    /// Whether `item` (a `TurnItem`) is the twin of a direct item, and then the record index of
    /// that direct item; the first unmatched twin is taken. Ids decide where both forms share
    /// one (agent messages, reasoning, tool calls); a user message's envelope id is always new,
    /// so user messages (and direct items written without an id) match by role and text.
    pub fn absorbs(&mut self, item: &Value) -> Option<usize> {
        if let Some(index) = str_field(item, "id").and_then(|id| self.by_id.get(&id).copied()) {
            let direct = self.items.get_mut(index)?;
            direct.used = true;
            return Some(direct.record);
        }
        let key = item_text_key(item)?;
        let is_user = key.0 == "user";
        let candidates = self.by_text.get(&key).cloned().unwrap_or_default();
        for index in candidates {
            if let Some(direct) = self.items.get_mut(index)
                && !direct.used
                && (is_user || direct.id.is_none())
            {
                direct.used = true;
                return Some(direct.record);
            }
        }
        None
    }
}

/// Text with all whitespace removed: the two forms join text parts differently.
fn fingerprint(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

fn direct_text_key(payload: &Value) -> Option<TextKey> {
    match payload.get("type").and_then(Value::as_str)? {
        "message" => {
            let role = match payload.get("role").and_then(Value::as_str)? {
                "user" => "user",
                "assistant" => "assistant",
                _ => return None,
            };
            Some((role, fingerprint(&flatten_text(payload.get("content")))))
        }
        "reasoning" => Some((
            "reasoning",
            fingerprint(&flatten_text(payload.get("summary"))),
        )),
        _ => None,
    }
}

fn item_text_key(item: &Value) -> Option<TextKey> {
    let (kind, text) = match item.get("type").and_then(Value::as_str)? {
        "UserMessage" => ("user", item_text(item.get("content"))),
        "AgentMessage" => ("assistant", item_text(item.get("content"))),
        "Reasoning" => ("reasoning", item_text(item.get("summary_text"))),
        _ => return None,
    };
    Some((kind, fingerprint(&text)))
}

/// The text parts of a `TurnItem` content list (`[{type: "text"|"Text", text}]` or strings).
fn item_text(content: Option<&Value>) -> String {
    content
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| match part {
            Value::String(s) => Some(s.clone()),
            Value::Object(_) => str_field(part, "text"),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A field written in snake_case by some CLI versions and camelCase by others.
fn field<'a>(item: &'a Value, snake: &str, camel: &str) -> Option<&'a Value> {
    item.get(snake)
        .or_else(|| item.get(camel))
        .filter(|v| !v.is_null())
}

/// The `response_item` payloads equivalent to a `TurnItem`; empty for an item with no message
/// form.
pub fn direct_forms(item: &Value) -> Vec<Value> {
    let id = str_field(item, "id").unwrap_or_default();
    match item.get("type").and_then(Value::as_str) {
        Some("UserMessage") => vec![message("user", "input_text", item)],
        Some("AgentMessage") => {
            let mut m = message("assistant", "output_text", item);
            if let Some(obj) = m.as_object_mut() {
                obj.insert("id".into(), Value::String(id));
            }
            vec![m]
        }
        Some("Reasoning") => vec![reasoning(item, &id)],
        Some("CommandExecution") => command_execution(item, &id),
        Some("McpToolCall") => mcp_tool_call(item, &id),
        Some("DynamicToolCall") => dynamic_tool_call(item, &id),
        Some("WebSearch") => vec![json!({
            "type": "web_search_call",
            "id": id,
            "status": "completed",
            "action": item.get("action").cloned().unwrap_or_else(|| json!({
                "type": "search",
                "query": str_field(item, "query"),
            })),
        })],
        Some("FileChange") => file_change(item, &id),
        _ => Vec::new(),
    }
}

fn message(role: &str, part_type: &str, item: &Value) -> Value {
    let parts: Vec<Value> = item
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| str_field(part, "text"))
        .map(|text| json!({"type": part_type, "text": text}))
        .collect();
    json!({"type": "message", "role": role, "content": parts})
}

fn reasoning(item: &Value, id: &str) -> Value {
    let parts = |key: &str, part_type: &str| -> Vec<Value> {
        item.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|text| json!({"type": part_type, "text": text}))
            .collect()
    };
    json!({
        "type": "reasoning",
        "id": id,
        "summary": parts("summary_text", "summary_text"),
        "content": parts("raw_content", "reasoning_text"),
    })
}

/// A call and its output, as `function_call` / `function_call_output` (or the custom kind).
fn call_and_output(call: Value, output: Option<Value>) -> Vec<Value> {
    let mut forms = vec![call];
    forms.extend(output);
    forms
}

/// Output text with an exit code, in the `{"output", "metadata": {"exit_code"}}` JSON text the
/// direct form of 0.40 writes (the reader takes the code from there).
fn output_text(text: String, exit_code: Option<i64>) -> String {
    match exit_code {
        Some(code) => json!({"output": text, "metadata": {"exit_code": code}}).to_string(),
        None => text,
    }
}

fn command_execution(item: &Value, id: &str) -> Vec<Value> {
    let command = item.get("command").cloned().unwrap_or(Value::Null);
    let cwd = item.get("cwd").cloned().unwrap_or(Value::Null);
    // Argv is the `shell` tool's form, a string the `exec_command` tool's.
    let (name, arguments) = match &command {
        Value::String(_) => ("exec_command", json!({"cmd": command, "workdir": cwd})),
        _ => ("shell", json!({"command": command, "workdir": cwd})),
    };
    let call = json!({
        "type": "function_call",
        "name": name,
        "arguments": arguments.to_string(),
        "call_id": id,
    });
    let text = field(item, "aggregated_output", "aggregatedOutput")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| {
            ["stdout", "stderr"]
                .iter()
                .filter_map(|k| str_field(item, k))
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("\n")
        });
    let exit_code = field(item, "exit_code", "exitCode").and_then(Value::as_i64);
    let output = json!({
        "type": "function_call_output",
        "call_id": id,
        "output": output_text(text, exit_code),
    });
    call_and_output(call, Some(output))
}

fn mcp_tool_call(item: &Value, id: &str) -> Vec<Value> {
    let server = str_field(item, "server").unwrap_or_default();
    let tool = str_field(item, "tool").unwrap_or_default();
    let call = json!({
        "type": "function_call",
        "name": format!("mcp__{server}__{tool}"),
        "arguments": item.get("arguments").cloned().unwrap_or(Value::Null).to_string(),
        "call_id": id,
    });
    let text = match (item.get("result"), item.get("error")) {
        (Some(result), _) if !result.is_null() => flatten_text(result.get("content")),
        (_, Some(error)) if !error.is_null() => str_field(error, "message").unwrap_or_default(),
        _ => return vec![call],
    };
    let output = json!({"type": "function_call_output", "call_id": id, "output": text});
    call_and_output(call, Some(output))
}

fn dynamic_tool_call(item: &Value, id: &str) -> Vec<Value> {
    let tool = str_field(item, "tool").unwrap_or_default();
    let name = match str_field(item, "namespace") {
        Some(ns) if !ns.is_empty() => format!("{ns}__{tool}"),
        _ => tool,
    };
    let call = json!({
        "type": "function_call",
        "name": name,
        "arguments": item.get("arguments").cloned().unwrap_or(Value::Null).to_string(),
        "call_id": id,
    });
    let text = field(item, "content_items", "contentItems")
        .map(|items| flatten_text(Some(items)))
        .or_else(|| str_field(item, "error"));
    let output = text.map(|t| json!({"type": "function_call_output", "call_id": id, "output": t}));
    call_and_output(call, output)
}

fn file_change(item: &Value, id: &str) -> Vec<Value> {
    let call = json!({
        "type": "custom_tool_call",
        "name": "apply_patch",
        "call_id": id,
        "input": patch_of(item.get("changes")),
    });
    let text = ["stdout", "stderr"]
        .iter()
        .filter_map(|k| str_field(item, k))
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let exit_code = match str_field(item, "status").as_deref() {
        Some("completed") => Some(0),
        Some("failed" | "declined") => Some(1),
        _ => None,
    };
    let output = json!({
        "type": "custom_tool_call_output",
        "call_id": id,
        "output": output_text(text, exit_code),
    });
    call_and_output(call, Some(output))
}

/// The `apply_patch` text of a `FileChange` item's `changes` (`{path: {type: add|delete|update,
/// content | unified_diff}}`), the input the direct `custom_tool_call` carries.
fn patch_of(changes: Option<&Value>) -> String {
    let mut patch = String::from("*** Begin Patch\n");
    for (path, change) in changes.and_then(Value::as_object).into_iter().flatten() {
        let (header, body) = match change.get("type").and_then(Value::as_str) {
            Some("add") => (
                "Add File",
                str_field(change, "content")
                    .unwrap_or_default()
                    .lines()
                    .map(|l| format!("+{l}\n"))
                    .collect::<String>(),
            ),
            Some("delete") => ("Delete File", String::new()),
            _ => (
                "Update File",
                str_field(change, "unified_diff").unwrap_or_default(),
            ),
        };
        patch.push_str(&format!("*** {header}: {path}\n{body}"));
        if !patch.ends_with('\n') {
            patch.push('\n');
        }
    }
    patch.push_str("*** End Patch");
    patch
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(values: &[Value]) -> Vec<Line> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| Line {
                number: i + 1,
                text: v.to_string(),
                value: v.clone(),
            })
            .collect()
    }

    #[test]
    fn twins_match_by_id_or_by_text_once() {
        let direct = lines(&[
            json!({"type": "response_item", "payload": {"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "go on"}]}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": "assistant",
                "id": "msg_1", "content": [{"type": "output_text", "text": "done"}]}}),
        ]);
        let mut items = DirectItems::scan(&direct, 0);
        let user = json!({"type": "UserMessage", "id": "fresh", "content": [{"type": "text", "text": "go on"}]});
        assert_eq!(items.absorbs(&user), Some(0));
        // A second "go on" has no direct twin left.
        assert_eq!(items.absorbs(&user), None);
        let agent = json!({"type": "AgentMessage", "id": "msg_1", "content": [{"type": "Text", "text": "done"}]});
        assert_eq!(items.absorbs(&agent), Some(1));
        // Same text under another id is another message.
        let other = json!({"type": "AgentMessage", "id": "msg_2", "content": [{"type": "Text", "text": "done"}]});
        assert_eq!(items.absorbs(&other), None);
    }

    #[test]
    fn file_changes_become_an_apply_patch_call() {
        let item = json!({"type": "FileChange", "id": "call_9", "status": "completed",
            "changes": {"src/a.rs": {"type": "update", "unified_diff": "@@ -1 +1 @@\n-a\n+b\n"}}});
        let forms = direct_forms(&item);
        assert_eq!(forms.len(), 2);
        let input = forms
            .first()
            .and_then(|f| f.get("input"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        assert!(input.contains("*** Update File: src/a.rs\n@@ -1 +1 @@"));
    }

    #[test]
    fn items_without_a_message_form_have_no_direct_form() {
        assert!(direct_forms(&json!({"type": "Plan", "id": "p", "text": "1. x"})).is_empty());
    }
}
