//! Cline's SDK sessions, written by the Cline CLI from 3.0 (2026-05) and the extension from
//! 4.0 (2026-06) (`cline/cline`, `sdk/packages/core`): `~/.cline/data/sessions/<id>/`
//! (`$CLINE_SESSION_DATA_DIR`, else `$CLINE_DATA_DIR/sessions`, else `$CLINE_DIR/data/sessions`),
//! the extension's too. A session folder holds the manifest `<id>.json` (`session_id`,
//! `started_at`, `ended_at`, `cwd`, `model`, `metadata {title, fork {forkedFromSessionId,
//! forkedAt}}`), the messages `<id>.messages.json` (`{version, sessionId, agent, messages:
//! [{id, role, ts?, content, modelInfo {id, provider}, metrics {inputTokens, outputTokens,
//! cacheReadTokens, cacheWriteTokens, cost}}]}`), and a subagent's `<sub>.messages.json` (with
//! its manifest) beside the root's. [`document`] turns a folder into JSON Lines, each messages
//! file a session, which [`parse`] reads; origin `cline-session`.
//!
//! Usage: a row per assistant message with `metrics`, keyed `cline:<message id>`: a fork
//! copies its parent's messages with their ids and metrics, so the copy adds nothing (the
//! parent owns them). `inputTokens` holds both cache counts: the uncached input is the input
//! less both. The message's `cost` (Cline's figure) is summed into `reported_cost_usd`, a
//! fork's copied messages (before `forkedAt`) not again.
//!
//! The trap of 4.0: resuming a task of the classic format starts a session with the task's id
//! whose first messages are the task's history converted, the last assistant one carrying the
//! whole task's totals as synthetic `metrics` (provider `unknown`), ended by a warning that
//! the conversation is a legacy one. Those messages, up to the warning, are the classic task
//! folder's (read from it): they are kept as records but are no messages or usage here. The
//! turns after the warning Cline writes back into the task folder too (`sdk_writeback.json`),
//! which the task folder's reading leaves to this one.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::cline::read;
use super::lines::Line;
use super::model::*;
use super::text::{json_time, str_field};

/// The suffix of a messages file.
const MESSAGES: &str = ".messages.json";

/// Whether a folder is an SDK session's: inside a `sessions` folder, holding
/// `<folder name>.messages.json`.
pub fn is_session_folder(dir: &Path) -> bool {
    let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    dir.parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "sessions")
        && dir.join(format!("{name}{MESSAGES}")).is_file()
}

/// The messages files of a session folder: the root's first, then its subagents' by name.
fn messages_files(dir: &Path) -> Vec<PathBuf> {
    let root = dir
        .file_name()
        .map(|n| format!("{}{MESSAGES}", n.to_string_lossy()))
        .unwrap_or_default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(MESSAGES))
        })
        .collect();
    files.sort_by_key(|p| (p.file_name().is_none_or(|n| n != root.as_str()), p.clone()));
    files
}

/// The size of a session folder's JSON files (for progress).
pub fn size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len())
        .sum()
}

/// A session folder as JSON Lines: per messages file, `{"cline_sdk": "session", "id",
/// "manifest"}` then each message `{"cline_sdk": "message", "id", "n", "message"}`; a file
/// that does not read is a `damaged` line naming it.
pub fn document(dir: &Path) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut line = |value: Value| super::sources::json_line(&mut out, &value);
    let folder = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for file in messages_files(dir) {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let id = name.strip_suffix(MESSAGES).unwrap_or(&name).to_string();
        let manifest_path = dir.join(format!("{id}.json"));
        let manifest = match read(&manifest_path)? {
            Ok(manifest) => manifest,
            Err(error) => {
                line(serde_json::json!({
                    "cline_sdk": "damaged", "id": id,
                    "file": manifest_path.display().to_string(), "error": error
                }));
                Value::Null
            }
        };
        line(serde_json::json!({
            "cline_sdk": "session", "id": id, "folder": folder, "manifest": manifest
        }));
        match read(&file)? {
            Ok(doc) => {
                let messages = doc
                    .get("messages")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for (n, message) in messages.into_iter().enumerate() {
                    line(serde_json::json!({
                        "cline_sdk": "message", "id": id, "n": n, "message": message
                    }));
                }
            }
            Err(error) => line(serde_json::json!({
                "cline_sdk": "damaged", "id": id, "file": file.display().to_string(), "error": error
            })),
        }
    }
    Ok(out)
}

/// Whether a JSONL line is a record of a session folder's document.
pub fn is_line(value: &Value) -> bool {
    value.get("cline_sdk").and_then(Value::as_str) == Some("session")
}

/// Whether a user message is the warning that ends a classic task's converted history (4.0's
/// text and the marked one of later releases).
fn is_legacy_warning(message: &Value) -> bool {
    if str_field(message, "role").as_deref() != Some("user") {
        return false;
    }
    let texts: Vec<String> = match message.get("content") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(blocks)) => blocks.iter().filter_map(|b| str_field(b, "text")).collect(),
        _ => Vec::new(),
    };
    texts.iter().any(|t| {
        t.contains("[cline-legacy-resume-warning:")
            || t.contains("Warning: this is a legacy conversation")
    })
}

/// One session being read, and where its converted classic history ends.
struct Reading {
    session: SessionDraft,
    messages: Vec<(Value, usize)>,
    forked_at: Option<i64>,
}

/// Reads a session folder's document: a session per messages file.
pub fn parse(name: &str, lines: Vec<Line>, parsed: &mut ParsedFile) {
    let mut current: Option<Reading> = None;
    for line in lines {
        parsed.records += 1;
        let value = &line.value;
        match str_field(value, "cline_sdk").as_deref() {
            Some("session") => {
                if let Some(done) = current.take() {
                    parsed.sessions.push(finish(done));
                }
                current = Some(start(value, &line.text));
            }
            Some("damaged") => parsed.diagnostics.push(super::cline::damaged(name, &line)),
            _ => {
                let message = value.get("message").unwrap_or(&Value::Null);
                let Some(r) = current.as_mut() else {
                    continue;
                };
                if !message.is_object() {
                    parsed.diagnostics.push(Diagnostic {
                        file: name.to_string(),
                        line: Some(line.number),
                        kind: "bad_record",
                        reason: "a Cline session message that is not a JSON object".into(),
                    });
                    r.session
                        .push_event("message", None, Surface::LogOnly, line.text);
                    continue;
                }
                let time = json_time(message.get("ts"));
                let event =
                    r.session
                        .push_event("message", time, Surface::Current, line.text.clone());
                r.messages.push((message.clone(), event));
            }
        }
    }
    if let Some(done) = current.take() {
        parsed.sessions.push(finish(done));
    }
}

/// A session from its manifest line.
fn start(value: &Value, text: &str) -> Reading {
    let id = str_field(value, "id").unwrap_or_default();
    let folder = str_field(value, "folder").unwrap_or_default();
    let manifest = value.get("manifest").unwrap_or(&Value::Null);
    // A subagent's id is its file's name in the root session's folder, unique there only.
    let native = if id != folder && !folder.is_empty() {
        format!("{folder}/{id}")
    } else {
        id.clone()
    };
    let mut session = SessionDraft::new(Origin::ClineSdk, native);
    session.push_event("session", None, Surface::LogOnly, text.to_string());
    session.created_at = json_time(manifest.get("started_at"));
    session.updated_at = json_time(manifest.get("ended_at")).or(session.created_at);
    session.cwd = str_field(manifest, "cwd")
        .or_else(|| str_field(manifest, "workspace_root"))
        .filter(|c| !c.is_empty());
    session.title = manifest
        .pointer("/metadata/title")
        .and_then(Value::as_str)
        .map(str::to_string)
        .filter(|t| !t.trim().is_empty());
    session.model = str_field(manifest, "model");
    let parent = str_field(manifest, "parent_session_id")
        .or_else(|| {
            manifest
                .pointer("/metadata/parentSessionId")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .or_else(|| (id != folder && !folder.is_empty()).then(|| folder.clone()));
    let fork = manifest.pointer("/metadata/fork");
    if let Some(parent) = parent {
        session.parent_native_id = Some(parent);
        session.branch_type = Some("subagent");
    } else if let Some(from) = fork.and_then(|f| str_field(f, "forkedFromSessionId")) {
        session.parent_native_id = Some(from);
        session.branch_type = Some("fork");
    }
    Reading {
        session,
        messages: Vec::new(),
        forked_at: fork.and_then(|f| json_time(f.get("forkedAt"))),
    }
}

/// The session's messages and usage, the converted classic history left out.
fn finish(r: Reading) -> SessionDraft {
    let Reading {
        mut session,
        messages,
        forked_at,
    } = r;
    let skip = messages
        .iter()
        .position(|(m, _)| is_legacy_warning(m))
        .map_or(0, |w| w + 1);
    let mut last = session.created_at;
    let mut cost = None::<f64>;
    for (message, event) in messages.iter().skip(skip) {
        let time = json_time(message.get("ts")).or(last);
        last = time;
        let mut m = super::cline::history_message(&mut session, message, time, *event);
        let model = message
            .pointer("/modelInfo/id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .filter(|m| !m.is_empty());
        if m.role == Role::Assistant {
            m.model = model.clone().or_else(|| session.model.clone());
        }
        session.messages.push(m);
        let Some(metrics) = message.get("metrics").filter(|x| x.is_object()) else {
            continue;
        };
        if m_role(message) != Some("assistant") {
            continue;
        }
        let n = |k: &str| metrics.get(k).and_then(Value::as_i64).unwrap_or(0).max(0);
        let (input, output, read, write) = (
            n("inputTokens"),
            n("outputTokens"),
            n("cacheReadTokens"),
            n("cacheWriteTokens"),
        );
        let copied = forked_at.zip(time).is_some_and(|(f, t)| t <= f);
        if !copied
            && let Some(c) = metrics
                .get("cost")
                .and_then(Value::as_f64)
                .filter(|c| *c > 0.0)
        {
            cost = Some(cost.unwrap_or(0.0) + c);
        }
        if [input, output, read, write] == [0; 4] {
            continue;
        }
        let key = match str_field(message, "id").filter(|i| !i.is_empty()) {
            Some(id) => format!("cline:{id}"),
            None => format!("cline:{}:{event}", session.native_id),
        };
        let mut usage = UsageDraft::keyed(
            key,
            model.or_else(|| session.model.clone()),
            Tokens {
                input: (input - read - write).max(0),
                output,
                reasoning: None,
                cache_read: read,
                cache_write: write,
                cache_write_1h: 0,
            },
            time,
            *event,
        );
        usage.message_index = Some(session.messages.len() - 1);
        session.usage.push(usage);
    }
    session.reported_cost_usd = cost;
    session
}

fn m_role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}
