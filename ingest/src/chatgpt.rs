//! ChatGPT `conversations.json` exports: an array of conversations or one conversation object
//! (also inside a browser capture's `raw_provider_payload`). The path from `current_node` to the
//! root is the current surface; other branches (edits, regenerations) are `shadowed` events.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::model::*;
use super::text::{flatten_text, json_time, str_field};

/// Reads every conversation in `root`.
pub fn parse(root: &Value, parsed: &mut ParsedFile) {
    for conversation in conversations(root) {
        parse_conversation(conversation, parsed);
    }
}

/// The conversations a ChatGPT document holds.
pub fn conversations(root: &Value) -> Vec<&Value> {
    match root {
        Value::Array(items) => items
            .iter()
            .filter(|c| c.get("mapping").is_some())
            .collect(),
        Value::Object(_) if root.get("mapping").is_some() => vec![root],
        Value::Object(_) => root
            .get("raw_provider_payload")
            .filter(|p| p.get("mapping").is_some())
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

fn parse_conversation(conversation: &Value, parsed: &mut ParsedFile) {
    let native = str_field(conversation, "conversation_id")
        .or_else(|| str_field(conversation, "id"))
        .unwrap_or_else(|| format!("conversation-{}", parsed.sessions.len()));
    let mut session = SessionDraft::new(Origin::ChatGpt, native);
    session.title = str_field(conversation, "title");
    session.created_at = json_time(conversation.get("create_time"));
    session.updated_at = json_time(conversation.get("update_time"));
    session.model = str_field(conversation, "default_model_slug");
    let Some(Value::Object(mapping)) = conversation.get("mapping") else {
        parsed.sessions.push(session);
        return;
    };
    let current = current_path(conversation, mapping);
    // Walk the tree depth-first from the roots so that the order follows the conversation.
    let mut order = Vec::new();
    let mut roots: Vec<&String> = mapping
        .iter()
        .filter(|(_, node)| node.get("parent").is_none_or(Value::is_null))
        .map(|(id, _)| id)
        .collect();
    roots.sort();
    let mut stack: Vec<&String> = roots.into_iter().rev().collect();
    let mut seen = HashSet::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        order.push(id);
        if let Some(Value::Array(children)) = mapping.get(id).and_then(|n| n.get("children")) {
            for child in children.iter().rev().filter_map(Value::as_str) {
                if let Some((key, _)) = mapping.get_key_value(child) {
                    stack.push(key);
                }
            }
        }
    }
    let mut event_of: HashMap<&str, usize> = HashMap::new();
    for id in order {
        let Some(node) = mapping.get(id) else {
            continue;
        };
        let Some(message) = node.get("message").filter(|m| !m.is_null()) else {
            continue;
        };
        parsed.records += 1;
        let on_surface = current.contains(id.as_str());
        let time = json_time(message.get("create_time"));
        let event_index = session.events.len();
        event_of.insert(id.as_str(), event_index);
        session.events.push(EventDraft {
            kind: "mapping_node".to_string(),
            time,
            surface: if on_surface {
                Surface::Current
            } else {
                Surface::Shadowed
            },
            payload: node.to_string(),
            ..EventDraft::default()
        });
        if !on_surface {
            continue;
        }
        if let Some(m) = read_message(message, time, event_index) {
            if m.role == Role::Assistant
                && let Some(model) = &m.model
                && session.model.is_none()
            {
                session.model = Some(model.clone());
            }
            session.messages.push(m);
        }
    }
    link_nodes(&mut session, mapping, &current, &event_of);
    parsed.sessions.push(session);
}

/// The links the tree records: a node's provenance is its nearest ancestor that is an event;
/// a shadowed node whose parent is on the current path was positionally replaced by that
/// parent's child on the current path (the regeneration or edit kept).
fn link_nodes(
    session: &mut SessionDraft,
    mapping: &serde_json::Map<String, Value>,
    current: &HashSet<&str>,
    event_of: &HashMap<&str, usize>,
) {
    let parent_of = |id: &str| {
        mapping
            .get(id)
            .and_then(|n| n.get("parent"))
            .and_then(Value::as_str)
    };
    for (id, &index) in event_of {
        let mut source = None;
        let mut up = parent_of(id);
        // A malformed tree may hold a cycle: never walk further than its size.
        for _ in 0..mapping.len() {
            let Some(p) = up else { break };
            if let Some(&e) = event_of.get(p) {
                source = Some(e);
                break;
            }
            up = parent_of(p);
        }
        let replaced_by = parent_of(id)
            .filter(|p| !current.contains(id) && current.contains(p))
            .and_then(|p| mapping.get(p)?.get("children")?.as_array())
            .and_then(|children| {
                children
                    .iter()
                    .filter_map(Value::as_str)
                    .find(|c| current.contains(c))
            })
            .and_then(|kept| event_of.get(kept).copied());
        if let Some(event) = session.events.get_mut(index) {
            event.sources = source.into_iter().collect();
            event.replaced_by = replaced_by;
        }
    }
}

/// Node ids on the path from `current_node` up to the root (all nodes when it is absent).
fn current_path<'a>(
    conversation: &Value,
    mapping: &'a serde_json::Map<String, Value>,
) -> HashSet<&'a str> {
    let mut path = HashSet::new();
    let Some(mut id) = conversation
        .get("current_node")
        .and_then(Value::as_str)
        .and_then(|c| mapping.get_key_value(c).map(|(k, _)| k.as_str()))
    else {
        return mapping.keys().map(String::as_str).collect();
    };
    let parents: HashMap<&str, &str> = mapping
        .iter()
        .filter_map(|(k, node)| Some((k.as_str(), node.get("parent")?.as_str()?)))
        .collect();
    while path.insert(id) {
        match parents.get(id).and_then(|p| mapping.get_key_value(*p)) {
            Some((parent, _)) => id = parent.as_str(),
            None => break,
        }
    }
    path
}

fn read_message(message: &Value, time: Option<i64>, event_index: usize) -> Option<MessageDraft> {
    let role = match message
        .get("author")
        .and_then(|a| a.get("role"))
        .and_then(Value::as_str)
    {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some("tool") => Role::Tool,
        _ => Role::System,
    };
    let content = message.get("content")?;
    let content_type = str_field(content, "content_type").unwrap_or_else(|| "text".to_string());
    let text = match content.get("parts") {
        Some(parts) => flatten_text(Some(parts)),
        None => content
            .get("text")
            .or_else(|| content.get("result"))
            .map(|v| flatten_text(Some(v)))
            .or_else(|| content.get("thoughts").map(|t| flatten_text(Some(t))))
            .unwrap_or_default(),
    };
    let hidden = message
        .get("metadata")
        .and_then(|m| m.get("is_visually_hidden_from_conversation"))
        .and_then(Value::as_bool)
        == Some(true);
    if text.trim().is_empty() && role != Role::Assistant {
        return None;
    }
    let kind = match content_type.as_str() {
        "thoughts" | "reasoning_recap" => BlockKind::Thinking,
        "code" => BlockKind::Code,
        "execution_output" | "tether_browsing_display" | "tether_quote" => BlockKind::ToolResult,
        _ if role == Role::Tool => BlockKind::ToolResult,
        _ => BlockKind::Text,
    };
    let mut m = MessageDraft::new(role, time, event_index);
    m.model = message
        .get("metadata")
        .and_then(|md| str_field(md, "model_slug"));
    m.injected = role != Role::User || hidden || content_type == "user_editable_context";
    m.hidden = hidden;
    m.stop_reason = message
        .get("metadata")
        .and_then(|md| md.get("finish_details"))
        .and_then(|f| str_field(f, "type"));
    let mut block = BlockDraft::text(kind, text);
    if kind == BlockKind::Code {
        block.tool_name = str_field(message, "recipient");
    }
    m.blocks.push(block);
    Some(m)
}
