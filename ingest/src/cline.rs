//! Cline and its forks Roo Code and Kilo Code (the extension before Kilo 7), in their classic
//! task folders: `<editor user data>/User/globalStorage/<extension>/tasks/<task id>/` (and the
//! CLIs' `~/.cline/data/tasks`, `~/.vscode-mock/global-storage/tasks`,
//! `~/.kilocode/cli/global/tasks`), each task one folder of JSON files the extension rewrites
//! whole:
//!
//! - `api_conversation_history.json`: what was sent to the model, Anthropic's `MessageParam`s
//!   (`role`, `content` as text or blocks: text, image, tool_use, tool_result, thinking), with
//!   `ts` on newer releases; Roo and Kilo append an `<environment_details>` text block to each
//!   user message, which names the model (`<model>...</model>`);
//! - `ui_messages.json`: what the user saw, `{ts, type: ask | say, ask?, say?, text?, ...}`;
//!   each API request is a `say: "api_req_started"` whose `text` is the JSON `{request?,
//!   tokensIn, tokensOut, cacheWrites, cacheReads, cost, cancelReason?}` (filled in as the
//!   stream ends; Cline 3.37 on stamps `modelInfo {modelId, providerId}` on it, Roo and Kilo
//!   `apiProtocol`);
//! - `task_metadata.json`: Cline's `model_usage [{ts, model_id, model_provider_id}]` (3.11 on),
//!   appended when the model changes.
//!
//! Sources: Cline v3.89.2 (`apps/vscode/src/core/task/index.ts`, `shared/ExtensionMessage.ts`,
//! `shared/getApiMetrics.ts`, `integrations/checkpoints/index.ts`), Roo Code v3.52.1
//! (`src/core/task/Task.ts`, `src/shared/cost.ts`, `packages/types/src/message.ts`), Kilo Code
//! legacy v5.10.4.
//!
//! [`document`] turns a task folder into JSON Lines (`{"cline": "task", ...}`, then each history
//! message `{"cline": "api", ...}`, then each UI message `{"cline": "ui", ...}`), which [`parse`]
//! reads: the messages and tool calls from the history, the usage from the UI messages.
//!
//! Usage: one row per `api_req_started` with any count, cancelled ones included (a stream cut
//! or stopped by the user was billed for what it received), keyed `<agent>:<task>:<ts>` (the
//! request's start, unique in a task and kept across the rewrites of a resumed task). A
//! checkpoint restore removes the requests after the restore point from the files and writes
//! their sum as one `deleted_api_reqs` (Cline) or `api_req_deleted` (Roo, Kilo): one row of its
//! own, with no model. Cline's subagents write no requests of their own, only a
//! `subagent_usage` sum per batch: one row, no model. Roo's and Kilo's condensing call records
//! only a cost (`condense_context`): no row, its cost in the session's reported cost.
//! `tokensIn` is not the same count everywhere: Cline passes on what the provider's handler
//! yields, without the cache for Anthropic, OpenRouter, Gemini, DeepSeek, OpenAI's own API and
//! others, with the cache reads inside for the "OpenAI Compatible" provider, LiteLLM, LM Studio,
//! xAI, Z.ai, Fireworks, Doubao, Qwen and a few more; Roo (3.29.5 on, 2025-10-31) and Kilo
//! (4.119 on) write the total with both cache counts inside, earlier Roo the handler's (without
//! the cache for Anthropic's protocol, with it for OpenAI's). `input_tokens` is always the
//! input without the cache. The extension's own `cost` is summed into the session's
//! `reported_cost_usd`. A task resumed in Cline 4 continues in an SDK session
//! ([`super::cline_sdk`]); Cline writes that session's turns back after the task's own
//! (`sdk_writeback.json` says where they start): they are the session's, not read here.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::lines::Line;
use super::model::*;
use super::sources::Kind;
use super::text::{json_time, str_field};

/// The files of a task folder, in the order the document holds them.
const FILES: [&str; 2] = ["api_conversation_history.json", "ui_messages.json"];

/// Whether a folder is a task folder: inside a `tasks` folder, with one of the two files.
pub fn is_task_folder(dir: &Path) -> bool {
    dir.parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "tasks")
        && FILES.iter().any(|f| dir.join(f).is_file())
}

/// Whose task folder: the extension (or CLI) folder it lies in, else `None` (a folder
/// elsewhere: a custom storage path, a copy), which [`parse`] tells from the records.
pub fn kind_of(dir: &Path) -> Option<Kind> {
    dir.ancestors().find_map(|a| {
        let name = a.file_name()?.to_str()?.to_ascii_lowercase();
        match name.as_str() {
            "saoudrizwan.claude-dev" | ".cline" => Some(Kind::Cline),
            "rooveterinaryinc.roo-cline" | ".vscode-mock" | ".roocode" => Some(Kind::RooCode),
            "kilocode.kilo-code" | ".kilocode" => Some(Kind::KiloCode),
            _ => None,
        }
    })
}

/// The size of a task folder's files (for progress).
pub fn size(dir: &Path) -> u64 {
    FILES
        .iter()
        .chain(["task_metadata.json"].iter())
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

/// A file of the task as JSON; a damaged file is a `damaged` line naming it (the reader reports
/// it) and reads as nothing.
pub(crate) fn read(path: &Path) -> std::io::Result<Result<Value, String>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).map_err(|e| e.to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Ok(Value::Null)),
        Err(e) => Err(e),
    }
}

/// A task folder's files as JSON Lines: the task (its agent, id and metadata), then each
/// message of the history, then each UI message.
pub fn document(dir: &Path, kind: Option<Kind>) -> std::io::Result<Vec<u8>> {
    let id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut line = |value: Value| super::sources::json_line(&mut out, &value);
    // Cline 4 writes the turns of a resumed task back after the task's own (`sdk_writeback.json`
    // says where they start); the SDK session counts them.
    let mut damaged = Vec::new();
    let mut side = |file: &str| -> std::io::Result<Value> {
        let path = dir.join(file);
        Ok(read(&path)?.unwrap_or_else(|error| {
            damaged.push(serde_json::json!({
                "cline": "damaged", "file": path.display().to_string(), "error": error
            }));
            Value::Null
        }))
    };
    let metadata = side("task_metadata.json")?;
    let writeback = side("sdk_writeback.json")?;
    line(serde_json::json!({
        "cline": "task", "agent": kind.map(Kind::agent), "id": id, "metadata": metadata,
        "writeback": writeback
    }));
    damaged.into_iter().for_each(&mut line);
    for (file, kind) in FILES.iter().zip(["api", "ui"]) {
        let path: PathBuf = dir.join(file);
        match read(&path)? {
            Ok(Value::Array(items)) => {
                for (n, item) in items.into_iter().enumerate() {
                    line(serde_json::json!({"cline": kind, "n": n, "message": item}));
                }
            }
            Ok(Value::Null) => {}
            Ok(_) => line(serde_json::json!({
                "cline": "damaged", "file": path.display().to_string(), "error": "not a JSON list"
            })),
            Err(error) => line(serde_json::json!({
                "cline": "damaged", "file": path.display().to_string(), "error": error
            })),
        }
    }
    Ok(out)
}

/// Whether a JSONL line is a record of a task folder's document.
pub fn is_line(value: &Value) -> bool {
    value.get("cline").and_then(Value::as_str) == Some("task")
}

/// The report of a `damaged` line: the file of the folder that did not read, and why.
pub(crate) fn damaged(name: &str, line: &Line) -> Diagnostic {
    Diagnostic {
        file: name.to_string(),
        line: Some(line.number),
        kind: "bad_record",
        reason: format!(
            "{} cannot be read: {}",
            str_field(&line.value, "file").unwrap_or_default(),
            str_field(&line.value, "error").unwrap_or_default()
        ),
    }
}

/// The place of a history or UI message in its file (`n`).
fn line_index(value: &Value) -> usize {
    value
        .get("n")
        .and_then(Value::as_u64)
        .map_or(0, |n| n as usize)
}

/// A UI message's request: when it started, its counts as written, and what it names.
struct Request {
    ts: i64,
    info: Value,
    model: Option<String>,
    provider: Option<String>,
    event_index: usize,
    /// `api_req_started`, or the sums of `deleted_api_reqs` / `subagent_usage`.
    kind: &'static str,
}

/// Reads a task folder's document.
pub fn parse(name: &str, lines: Vec<Line>, parsed: &mut ParsedFile) {
    let mut session = SessionDraft::new(Origin::Cline, String::new());
    let mut kind: Option<Kind> = None;
    let mut metadata = Value::Null;
    let mut history: Vec<(Value, usize)> = Vec::new();
    let mut requests: Vec<Request> = Vec::new();
    let mut cost = None::<f64>;
    let mut protocol_seen = false;
    // Where the turns Cline 4 wrote back start, in the history and the UI messages.
    let mut written_back = (usize::MAX, usize::MAX);
    for line in lines {
        parsed.records += 1;
        let value = &line.value;
        let record = str_field(value, "cline").unwrap_or_default();
        let message = value.get("message").unwrap_or(&Value::Null);
        if record != "task" && record != "damaged" && !message.is_object() {
            parsed.diagnostics.push(Diagnostic {
                file: name.to_string(),
                line: Some(line.number),
                kind: "bad_record",
                reason: format!("a task's {record} message that is not a JSON object"),
            });
            continue;
        }
        match record.as_str() {
            "task" => {
                session.native_id = str_field(value, "id").unwrap_or_default();
                kind = str_field(value, "agent").and_then(|a| Kind::named(&a));
                metadata = value.get("metadata").cloned().unwrap_or(Value::Null);
                let base = |k: &str| {
                    value
                        .pointer(&format!("/writeback/{k}"))
                        .and_then(Value::as_u64)
                        .map_or(usize::MAX, |n| n as usize)
                };
                written_back = (base("baseApiMessageCount"), base("baseUiMessageCount"));
                session.push_event("task", None, Surface::LogOnly, line.text.clone());
            }
            "damaged" => parsed.diagnostics.push(damaged(name, &line)),
            "api" | "ui"
                if line_index(value)
                    >= if record == "api" {
                        written_back.0
                    } else {
                        written_back.1
                    } =>
            {
                // A turn of the Cline 4 session this task was resumed in, written back.
                session.push_event("written-back", None, Surface::LogOnly, line.text.clone());
            }
            "api" => {
                let time = json_time(message.get("ts"));
                let event_index =
                    session.push_event("api", time, Surface::Current, line.text.clone());
                history.push((message.clone(), event_index));
            }
            _ => {
                let ts = json_time(message.get("ts"));
                let say = str_field(message, "say").unwrap_or_default();
                let event_index = session.push_event(
                    &format!("ui/{}", str_field(message, "type").unwrap_or_default()),
                    ts,
                    Surface::LogOnly,
                    line.text.clone(),
                );
                session.created_at = session.created_at.or(ts);
                session.updated_at = ts.or(session.updated_at);
                if say == "task" && session.title.is_none() {
                    session.title = str_field(message, "text")
                        .and_then(|t| t.lines().next().map(|l| l.trim().to_string()))
                        .filter(|t| !t.is_empty());
                }
                let text = str_field(message, "text").unwrap_or_default();
                let info: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                protocol_seen |= info.get("apiProtocol").is_some();
                if say == "condense_context" {
                    let c = message
                        .pointer("/contextCondense/cost")
                        .and_then(Value::as_f64);
                    if let Some(c) = c.filter(|c| *c > 0.0) {
                        cost = Some(cost.unwrap_or(0.0) + c);
                    }
                    continue;
                }
                let kind = match say.as_str() {
                    "api_req_started" => "api_req_started",
                    "deleted_api_reqs" | "api_req_deleted" => "deleted",
                    "subagent_usage" => "subagents",
                    _ => continue,
                };
                let (Some(ts), true) = (ts, info.is_object()) else {
                    continue;
                };
                if let Some(c) = info
                    .get("cost")
                    .and_then(Value::as_f64)
                    .filter(|c| *c > 0.0)
                {
                    cost = Some(cost.unwrap_or(0.0) + c);
                }
                requests.push(Request {
                    ts,
                    model: message
                        .pointer("/modelInfo/modelId")
                        .and_then(Value::as_str)
                        .map(String::from),
                    provider: message
                        .pointer("/modelInfo/providerId")
                        .and_then(Value::as_str)
                        .map(String::from),
                    info,
                    event_index,
                    kind,
                });
            }
        }
    }
    // A folder outside the extensions' own: Roo and Kilo stamp their requests' protocol.
    let kind = kind.unwrap_or(if protocol_seen {
        Kind::RooCode
    } else {
        Kind::Cline
    });
    session.origin = match kind {
        Kind::RooCode => Origin::RooCode,
        Kind::KiloCode => Origin::KiloCode,
        _ => Origin::Cline,
    };
    session.reported_cost_usd = cost;
    let models = history_models(&history);
    read_history(&mut session, &history, &requests);
    for request in &requests {
        let (model, provider) = model_of(kind, request, &metadata, &models);
        let t = tokens(kind, request, provider.as_deref());
        if [t.input, t.output, t.cache_read, t.cache_write] == [0; 4] {
            continue;
        }
        let key = match request.kind {
            "api_req_started" => format!("{}:{}:{}", kind.agent(), session.native_id, request.ts),
            other => format!(
                "{}:{}:{other}:{}",
                kind.agent(),
                session.native_id,
                request.ts
            ),
        };
        // The sums of removed requests and of subagents name no model.
        let model = model.filter(|_| request.kind == "api_req_started");
        session.usage.push(UsageDraft::keyed(
            key,
            model,
            t,
            Some(request.ts),
            request.event_index,
        ));
    }
    parsed.sessions.push(session);
}

/// The providers whose Cline handler yields the cache reads inside the input.
const INPUT_HOLDS_CACHE: &[&str] = &[
    "openai",
    "openai-codex",
    "litellm",
    "lmstudio",
    "xai",
    "zai",
    "fireworks",
    "doubao",
    "qwen",
    "hicap",
    "oca",
    "sapaicore",
];

/// When Roo's `tokensIn` became the whole input with both cache counts (3.29.5, 2025-10-31;
/// Kilo took it over in 4.119, in November 2025).
const ROO_TOTAL_INPUT_SINCE_MS: i64 = 1_761_868_800_000;

/// A request's counts, the input without the cache.
fn tokens(kind: Kind, request: &Request, provider: Option<&str>) -> Tokens {
    let n = |k: &str| {
        request
            .info
            .get(k)
            .and_then(Value::as_i64)
            .unwrap_or(0)
            .max(0)
    };
    let (input, output, read, write) = (
        n("tokensIn"),
        n("tokensOut"),
        n("cacheReads"),
        n("cacheWrites"),
    );
    let without_cache = || input.saturating_sub(read).saturating_sub(write).max(0);
    let input = match kind {
        // The sums of removed requests and of subagents: as the extension adds them up.
        _ if request.kind != "api_req_started" => input,
        Kind::RooCode | Kind::KiloCode => {
            match request.info.get("apiProtocol").and_then(Value::as_str) {
                // Anthropic's protocol: the handler's uncached input until the total came in
                // (never below the cache counts it holds).
                Some("anthropic") => {
                    if request.ts < ROO_TOTAL_INPUT_SINCE_MS || input < read + write {
                        input
                    } else {
                        without_cache()
                    }
                }
                Some(_) => without_cache(),
                None => input,
            }
        }
        _ if provider.is_some_and(|p| INPUT_HOLDS_CACHE.contains(&p)) => without_cache(),
        _ => input,
    };
    Tokens {
        input,
        output,
        cache_read: read,
        cache_write: write,
        ..Tokens::default()
    }
}

/// The model (and provider) of a request: on the record itself (Cline 3.37 on), else the
/// task's model log at the request's start (Cline 3.11 on), else the model the next user
/// message's environment details name (Roo, Kilo).
fn model_of(
    kind: Kind,
    request: &Request,
    metadata: &Value,
    models: &[(i64, String)],
) -> (Option<String>, Option<String>) {
    if request.model.is_some() {
        return (request.model.clone(), request.provider.clone());
    }
    if kind == Kind::Cline {
        // The log grows in time order: its last entry at or before the request.
        let entry = metadata
            .get("model_usage")
            .and_then(Value::as_array)
            .and_then(|log| {
                log.iter()
                    .rev()
                    .find(|e| json_time(e.get("ts")).is_some_and(|t| t <= request.ts))
            });
        return (
            entry.and_then(|e| str_field(e, "model_id")),
            entry.and_then(|e| str_field(e, "model_provider_id")),
        );
    }
    let next = models
        .iter()
        .find(|(t, _)| *t >= request.ts)
        .or_else(|| models.last());
    (next.map(|(_, m)| m.clone()), None)
}

/// The models Roo's and Kilo's user messages name, with their times.
fn history_models(history: &[(Value, usize)]) -> Vec<(i64, String)> {
    history
        .iter()
        .filter(|(m, _)| str_field(m, "role").as_deref() == Some("user"))
        .filter_map(|(m, _)| {
            let ts = json_time(m.get("ts"))?;
            let text = content_texts(m).join("\n");
            let start = text.find("<model>")? + "<model>".len();
            let end = text[start..].find("</model>")? + start;
            Some((ts, text[start..end].trim().to_string()))
        })
        .collect()
}

/// The text blocks of a history message.
fn content_texts(message: &Value) -> Vec<String> {
    match message.get("content") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| str_field(b, "type").as_deref() == Some("text"))
            .filter_map(|b| str_field(b, "text"))
            .collect(),
        _ => Vec::new(),
    }
}

/// The history's messages: the model's turns and the user's, tool calls and their results. A
/// message without its own time takes the start of the request it belongs to (the n-th user
/// message opens the n-th request).
fn read_history(session: &mut SessionDraft, history: &[(Value, usize)], requests: &[Request]) {
    let starts: Vec<i64> = requests
        .iter()
        .filter(|r| r.kind == "api_req_started")
        .map(|r| r.ts)
        .collect();
    let mut users = 0;
    let mut last = None;
    for (message, event_index) in history {
        let assistant = str_field(message, "role").as_deref() == Some("assistant");
        if !assistant {
            users += 1;
        }
        let time = json_time(message.get("ts"))
            .or_else(|| starts.get(users.max(1) - 1).copied())
            .or(last);
        last = time;
        let m = history_message(session, message, time, *event_index);
        session.messages.push(m);
    }
}

/// One message of a history (Anthropic's `MessageParam`, as Cline's, Roo's and Kilo's histories
/// and Cline's SDK sessions hold it) as a message: a user message holding only tool results is
/// a tool message; the extension's `<environment_details>` are not the user's text (the
/// workspace they name becomes the session's folder).
pub(crate) fn history_message(
    session: &mut SessionDraft,
    message: &Value,
    time: Option<i64>,
    event_index: usize,
) -> MessageDraft {
    let assistant = str_field(message, "role").as_deref() == Some("assistant");
    let mut m = MessageDraft::new(
        if assistant {
            Role::Assistant
        } else {
            Role::User
        },
        time,
        event_index,
    );
    let blocks = match message.get("content") {
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
        _ => Vec::new(),
    };
    let mut authored = false;
    for block in &blocks {
        let text = || str_field(block, "text").unwrap_or_default();
        match str_field(block, "type").as_deref().unwrap_or_default() {
            "text" => {
                let t = text();
                // The extension's own context, added to each user message.
                if t.trim_start().starts_with("<environment_details>") {
                    if session.cwd.is_none() {
                        session.cwd = workspace_of(&t);
                    }
                    continue;
                }
                // A tool's result in the text of older releases: `[tool] Result:`.
                let kind = if !assistant && is_result_text(&t) {
                    BlockKind::ToolResult
                } else {
                    authored = true;
                    BlockKind::Text
                };
                m.blocks.push(BlockDraft::text(kind, t));
            }
            "thinking" => m.blocks.push(BlockDraft::text(
                BlockKind::Thinking,
                str_field(block, "thinking").unwrap_or_default(),
            )),
            "reasoning" => m.blocks.push(BlockDraft::text(
                BlockKind::Thinking,
                super::text::flatten_text(block.get("summary").or(block.get("text"))),
            )),
            "tool_use" => m.blocks.push(BlockDraft::tool_use(
                str_field(block, "name"),
                str_field(block, "id"),
                block.get("input").unwrap_or(&Value::Null),
            )),
            "tool_result" => {
                let mut b = BlockDraft::text(
                    BlockKind::ToolResult,
                    super::text::flatten_text(block.get("content")),
                );
                b.tool_id = str_field(block, "tool_use_id");
                b.is_error = block.get("is_error").and_then(Value::as_bool);
                m.blocks.push(b);
            }
            // A file the user attached (Cline's SDK: `@path`), sent as text.
            "file" => {
                m.pasted = true;
                m.blocks.push(BlockDraft::text(
                    BlockKind::Text,
                    str_field(block, "content").unwrap_or_default(),
                ));
            }
            "image" => m
                .blocks
                .push(BlockDraft::text(BlockKind::Image, String::new())),
            _ => {}
        }
    }
    if !assistant && !authored && m.blocks.iter().any(|b| b.kind == BlockKind::ToolResult) {
        m.role = Role::Tool;
    }
    m
}

/// Whether a user text block is a tool's result as older releases wrote it.
fn is_result_text(text: &str) -> bool {
    let first = text.lines().next().unwrap_or_default();
    first.starts_with('[') && first.trim_end().ends_with("] Result:")
}

/// The workspace folder environment details name (`# Current Workspace Directory (<path>)`,
/// Cline's `# Current Working Directory (<path>)`).
fn workspace_of(text: &str) -> Option<String> {
    [
        "Current Workspace Directory (",
        "Current Working Directory (",
    ]
    .iter()
    .find_map(|marker| {
        let start = text.find(marker)? + marker.len();
        let end = text[start..].find(')')? + start;
        Some(text[start..end].trim().to_string())
    })
    .filter(|p| !p.is_empty())
}
