//! Codex CLI rollout JSONL (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`), CLI 0.40 and 0.104
//! shapes, and the event-stream variant without top-level timestamps.
//!
//! Consecutive model-side items (reasoning, tool calls, assistant text) form one assistant
//! message, closed by the next user, developer or tool item. Usage is the delta of the cumulative
//! `total_token_usage` between `token_count` events, never a sum of events (0.104 repeats totals).
//! `task_started` / `task_complete` write the turn boundaries. Turn items inside newer CLIs'
//! `item_completed` envelopes are read like their direct `response_item` form (`envelope`).
//! A grown rollout is read on from its last cut ([`resume`]; see `tail`).

mod envelope;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lines::Line;
use super::model::*;
use super::text::{exit_code_in, flatten_text, json_time, str_field};

/// Record types this adapter knows (anything else is kept as a raw event and counted).
pub(crate) const KNOWN_TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
];

/// Texts Codex injects as user-role messages (environment, instructions).
const INJECTED_PREFIXES: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "<permissions",
    "<turn_aborted>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
];

#[derive(Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Cumulative {
    input: i64,
    cached: i64,
    output: i64,
    reasoning: i64,
}

/// Reads one Codex rollout file.
pub fn parse(path: &str, lines: Vec<Line>, parsed: &mut ParsedFile) {
    let stem = std::path::Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("session")
        .to_string();
    let native = lines
        .iter()
        .find(|l| l.value.get("type").and_then(Value::as_str) == Some("session_meta"))
        .and_then(|l| l.value.get("payload").and_then(|p| str_field(p, "id")))
        .unwrap_or(stem);
    let mut session = SessionDraft::new(Origin::Codex, native);
    let mut state = State {
        direct: envelope::DirectItems::scan(&lines, 0),
        ..State::default()
    };
    for line in lines {
        parsed.records += 1;
        read_line(&mut session, &mut state, line, parsed);
    }
    finish(&mut session, state);
    parsed.sessions.push(session);
}

/// The session-wide fields once every record is read, and where a later read may continue.
fn finish(session: &mut SessionDraft, mut state: State) {
    let mut models: Vec<(&String, &usize)> = state.models.iter().collect();
    models.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    session.model = models.first().map(|(m, _)| (*m).clone());
    session.has_turn_markers = !session.turn_markers.is_empty();
    // Each cut knows what the read before it left: the history's text, the calls, and whether
    // a direct item or an envelope before it found no twin (a later twin would reach back).
    let shared = Arc::new(Shared {
        history: std::mem::take(&mut state.history_text),
        calls: std::mem::take(&mut state.call_hashes),
        unmatched_from: state.direct.first_unmatched(),
        unabsorbed_from: state.unabsorbed_from,
        prior_unmatched: state.prior_unmatched,
        prior_unabsorbed: state.prior_unabsorbed,
    });
    let mut resume = std::mem::take(&mut state.resume);
    // In a rollout that writes turn markers, its turns are theirs: only a marker is a cut.
    let marked = session.has_turn_markers || state.prior_markers;
    resume.checkpoints = std::mem::take(&mut state.pending)
        .into_iter()
        .filter(|(_, lite)| !marked || lite.scalars.at_marker)
        .map(|(at, lite)| Checkpoint {
            event: at.event,
            messages: at.messages,
            usage: at.usage,
            state: Arc::new(Point {
                lite,
                shared: shared.clone(),
                at: state.base + at.event,
            }),
        })
        .collect();
    session.resume = Some(resume);
}

/// Where a checkpoint is: the counts the model's checkpoint keeps.
struct At {
    event: usize,
    messages: usize,
    usage: usize,
}

/// What every checkpoint of one read shares (kept once).
struct Shared {
    /// The cumulative totals counted, as the history hashes them.
    history: String,
    /// Each tool call's id (hashed), with the global index of its record.
    calls: Vec<(u64, usize)>,
    /// The global index of the first direct item no envelope matched.
    unmatched_from: Option<usize>,
    /// The global index of the first envelope read as content (no direct twin).
    unabsorbed_from: Option<usize>,
    /// Whether the read this one continued had such items before its cut.
    prior_unmatched: bool,
    prior_unabsorbed: bool,
}

/// One checkpoint's state: what the read carried there, and the shared rest.
struct Point {
    lite: Lite,
    shared: Arc<Shared>,
    /// Its global record index.
    at: usize,
}

/// What a checkpoint copies from the read (small): the scalars, and how much of the shared
/// history and calls lie before it.
#[derive(Clone)]
struct Lite {
    scalars: Scalars,
    history_len: usize,
    calls_len: usize,
}

/// The reading state at a cut that is copied as it is.
#[derive(Clone, Default, Serialize, Deserialize)]
struct Scalars {
    header: Header,
    created_at: Option<i64>,
    updated_at: Option<i64>,
    cwd: Option<String>,
    git_remote: Option<String>,
    git_branch: Option<String>,
    seen_meta: bool,
    model: Option<String>,
    models: BTreeMap<String, usize>,
    totals: Cumulative,
    anonymous_turns: usize,
    /// An assistant message before the cut a token count could still be billed to.
    assistant: bool,
    /// The rollout writes turn markers (`task_started`) before the cut.
    markers: bool,
    /// A turn before the cut has no completion marker.
    incomplete: bool,
    /// The cut is a turn marker (`task_started`).
    at_marker: bool,
    /// Context snapshots read before the cut.
    snapshots: usize,
}

/// The identity of a session, as a continued read starts it.
#[derive(Clone, Default, Serialize, Deserialize)]
struct Header {
    native_id: String,
    parent_native_id: Option<String>,
    branch_type: Option<String>,
}

/// The reading state at a cut, as the archive keeps it (`source_resume`).
#[derive(Default, Serialize, Deserialize)]
pub struct Carried {
    #[serde(flatten)]
    scalars: Scalars,
    /// The cumulative totals counted before the cut, as the history hashes them.
    history: String,
    /// The hashed ids of the tool calls before the cut.
    calls: Vec<u64>,
    /// A direct item before the cut found no envelope twin.
    unmatched: bool,
    /// An envelope before the cut was read as content (no direct twin).
    unabsorbed: bool,
}

/// A checkpoint's state as JSON, or `None` for one not this adapter's.
pub fn state_value(state: &(dyn std::any::Any + Send + Sync)) -> Option<Value> {
    let point = state.downcast_ref::<Point>()?;
    let (lite, shared) = (&point.lite, &point.shared);
    let carried = Carried {
        scalars: lite.scalars.clone(),
        history: shared.history.get(..lite.history_len)?.to_string(),
        calls: shared
            .calls
            .iter()
            .take(lite.calls_len)
            .map(|(h, _)| *h)
            .collect(),
        unmatched: shared.prior_unmatched || shared.unmatched_from.is_some_and(|u| u < point.at),
        unabsorbed: shared.prior_unabsorbed || shared.unabsorbed_from.is_some_and(|u| u < point.at),
    };
    serde_json::to_value(carried).ok()
}

/// A call id's hash, as the state keeps it.
fn call_hash(id: &str) -> u64 {
    let hash = blake3::hash(id.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(hash.as_bytes().get(..8).unwrap_or(&[0; 8]));
    u64::from_le_bytes(bytes)
}

/// Continues reading a rollout from a cut (a `task_started` record): `records` are the archived
/// records from the cut on, then the new ones (see `claude_code::resume`).
pub fn resume(
    from: Continue<'_>,
    records: Vec<Line>,
    snapshots: Vec<SnapshotDraft>,
    parsed: &mut ParsedFile,
) -> Result<SessionDraft, Whole> {
    let c: Carried = from.carried()?;
    let kind = |l: &Line| {
        l.value
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let envelope = |l: &Line| {
        kind(l).as_deref() == Some("event_msg")
            && l.value.pointer("/payload/type").and_then(Value::as_str) == Some("item_completed")
    };
    if c.unmatched && records.iter().any(envelope) {
        return Err(Whole(
            "an envelope may be the twin of an item before the cut",
        ));
    }
    if c.unabsorbed
        && records
            .iter()
            .any(|l| kind(l).as_deref() == Some("response_item"))
    {
        return Err(Whole(
            "an item may be the twin of an envelope before the cut",
        ));
    }
    let marker = |l: &Line| {
        kind(l).as_deref() == Some("event_msg")
            && l.value.pointer("/payload/type").and_then(Value::as_str) == Some("task_started")
    };
    if !c.scalars.markers && !c.scalars.at_marker && from.events > 0 && records.iter().any(marker) {
        // The whole session's turns would come from the markers, those before the cut too.
        return Err(Whole("turn markers begin after the cut"));
    }
    let mut session = SessionDraft::new(Origin::Codex, c.scalars.header.native_id.clone());
    session.parent_native_id = c.scalars.header.parent_native_id.clone();
    session.branch_type = match c.scalars.header.branch_type.as_deref() {
        Some("subagent") => Some("subagent"),
        Some("fork") => Some("fork"),
        _ => None,
    };
    session.created_at = c.scalars.created_at;
    session.updated_at = c.scalars.updated_at;
    session.cwd = c.scalars.cwd.clone();
    session.git_remote = c.scalars.git_remote.clone();
    session.git_branch = c.scalars.git_branch.clone();
    session.snapshots = snapshots;
    let mut history = blake3::Hasher::new();
    history.update(c.history.as_bytes());
    let mut state = State {
        seen_meta: c.scalars.seen_meta,
        model: c.scalars.model.clone(),
        models: c.scalars.models.clone().into_iter().collect(),
        totals: c.scalars.totals,
        history,
        history_text: c.history.clone(),
        anonymous_turns: c.scalars.anonymous_turns,
        direct: envelope::DirectItems::scan(&records, from.events),
        base: from.events,
        prior_calls: c.calls.iter().copied().collect(),
        // Kept for the next cut too (their records lie before this one).
        call_hashes: c.calls.iter().map(|h| (*h, 0)).collect(),
        prior_assistant: c.scalars.assistant,
        prior_unmatched: c.unmatched,
        prior_unabsorbed: c.unabsorbed,
        prior_markers: c.scalars.markers || c.scalars.at_marker,
        prior_incomplete: c.scalars.incomplete,
        ..State::default()
    };
    for line in records {
        parsed.records += 1;
        read_line(&mut session, &mut state, line, parsed);
        if let Some(why) = state.whole {
            return Err(Whole(why));
        }
    }
    finish(&mut session, state);
    Ok(session)
}

#[derive(Default)]
struct State {
    seen_meta: bool,
    model: Option<String>,
    models: std::collections::HashMap<String, usize>,
    /// Index of the open assistant message, if the model is mid-response.
    open_assistant: Option<usize>,
    /// The last assistant message (usage attaches to it).
    last_assistant: Option<usize>,
    totals: Cumulative,
    /// The cumulative totals counted so far, in order: a response's key is a fingerprint of this
    /// history, so a forked rollout that replays its parent's records (and so its token
    /// counts) gives the replayed responses the parent's keys.
    history: blake3::Hasher,
    /// Turn started without an id (0.40): pair with the next completion in order.
    anonymous_turns: usize,
    /// The file's direct turn items, so that their `item_completed` twins are not read again.
    direct: envelope::DirectItems,
    /// `call_id` → the record of the tool call (global index), for the records that answer it.
    calls: std::collections::HashMap<String, usize>,
    /// The history's text (what `history` hashed).
    history_text: String,
    /// Each tool call's hashed id and record, in order.
    call_hashes: Vec<(u64, usize)>,
    /// The session index of this read's first record (0 unless it continues from a cut).
    base: usize,
    /// For a continued read: the hashed ids of the calls before the cut.
    prior_calls: std::collections::HashSet<u64>,
    /// For a continued read: an assistant message before the cut could still be billed.
    prior_assistant: bool,
    prior_unmatched: bool,
    prior_unabsorbed: bool,
    /// For a continued read: the rollout wrote turn markers before the cut.
    prior_markers: bool,
    /// For a continued read: a turn before the cut has no completion marker.
    prior_incomplete: bool,
    /// The global index of the first envelope read as content.
    unabsorbed_from: Option<usize>,
    /// Checkpoints found so far (made into the model's at `finish`).
    pending: Vec<(At, Lite)>,
    /// Spans no cut may fall inside.
    resume: Resume,
    /// Why this continued read must give way to a whole one.
    whole: Option<&'static str>,
}

fn read_line(session: &mut SessionDraft, state: &mut State, line: Line, parsed: &mut ParsedFile) {
    let record = &line.value;
    let kind = str_field(record, "type").unwrap_or_else(|| "unknown".to_string());
    let payload = record.get("payload").cloned().unwrap_or(Value::Null);
    let sub = str_field(&payload, "type");
    // A place a later read may continue from: a turn's start with every earlier turn complete,
    // or, in a rollout that writes no turn markers, a record that opens a message other than
    // the model's.
    let marked_turn = kind == "event_msg"
        && sub.as_deref() == Some("task_started")
        && state.open_assistant.is_none();
    let opens_message = session.turn_markers.is_empty()
        && kind == "response_item"
        && match sub.as_deref() {
            Some("message") => str_field(&payload, "role").as_deref() != Some("assistant"),
            Some(s) => s.ends_with("_output"),
            None => false,
        };
    if marked_turn || opens_message {
        let scalars = Scalars {
            header: Header {
                native_id: session.native_id.clone(),
                parent_native_id: session.parent_native_id.clone(),
                branch_type: session.branch_type.map(str::to_string),
            },
            created_at: session.created_at,
            updated_at: session.updated_at,
            cwd: session.cwd.clone(),
            git_remote: session.git_remote.clone(),
            git_branch: session.git_branch.clone(),
            seen_meta: state.seen_meta,
            model: state.model.clone(),
            models: state.models.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            totals: state.totals,
            anonymous_turns: state.anonymous_turns,
            assistant: state.last_assistant.is_some() || state.prior_assistant,
            markers: !session.turn_markers.is_empty() || state.prior_markers,
            incomplete: session.turn_markers.iter().any(|m| !m.completed) || state.prior_incomplete,
            snapshots: session.snapshots.len(),
            at_marker: marked_turn,
        };
        let lite = Lite {
            scalars,
            history_len: state.history_text.len(),
            calls_len: state.call_hashes.len(),
        };
        let at = At {
            event: session.events.len(),
            messages: session.messages.len(),
            usage: session.usage.len(),
        };
        state.pending.push((at, lite));
    }
    let time = json_time(record.get("timestamp")).or_else(|| json_time(payload.get("timestamp")));
    if let Some(t) = time {
        session.created_at = Some(session.created_at.map_or(t, |c| c.min(t)));
        session.updated_at = Some(session.updated_at.map_or(t, |u| u.max(t)));
    }
    let event_index = session.events.len();
    let surface = if kind == "response_item" {
        Surface::Current
    } else {
        Surface::LogOnly
    };
    session.events.push(EventDraft {
        kind: match &sub {
            Some(s) => format!("{kind}/{s}"),
            None => kind.clone(),
        },
        time,
        surface,
        sources: call_link(
            state,
            &kind,
            sub.as_deref(),
            &payload,
            state.base + event_index,
        ),
        payload: line.text,
        ..EventDraft::default()
    });
    if !KNOWN_TYPES.contains(&kind.as_str()) {
        *parsed
            .unknown_records
            .entry(format!("codex:{kind}"))
            .or_default() += 1;
        return;
    }
    match kind.as_str() {
        "session_meta" => read_meta(session, state, &payload, time),
        "turn_context" => {
            if let Some(model) = str_field(&payload, "model") {
                state.model = Some(model);
            }
            if session.cwd.is_none() {
                session.cwd = str_field(&payload, "cwd");
            }
        }
        "response_item" => read_item(
            session,
            state,
            &payload,
            sub.as_deref(),
            time,
            event_index,
            parsed,
        ),
        "event_msg" if sub.as_deref() == Some("item_completed") => {
            read_item_completed(session, state, &payload, time, event_index, parsed);
        }
        "event_msg" => read_event(session, state, &payload, sub.as_deref(), time, event_index),
        "compacted" => session.snapshots.push(SnapshotDraft::compaction(
            flatten_text(payload.get("message")),
            time,
        )),
        _ => {}
    }
}

fn read_meta(session: &mut SessionDraft, state: &mut State, payload: &Value, time: Option<i64>) {
    if state.seen_meta {
        return;
    }
    state.seen_meta = true;
    // Where the rollout came from, as its header says: a subagent names the thread that
    // spawned it, a fork the rollout it was forked from.
    let own = |p: &String| !p.is_empty() && *p != session.native_id;
    let spawned_by = payload
        .pointer("/source/subagent/thread_spawn/parent_thread_id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| str_field(payload, "parent_thread_id"))
        .filter(own);
    if let Some(parent) = spawned_by {
        session.parent_native_id = Some(parent);
        session.branch_type = Some("subagent");
    } else if let Some(parent) = str_field(payload, "forked_from_id").filter(own) {
        session.parent_native_id = Some(parent);
        session.branch_type = Some("fork");
    }
    session.cwd = str_field(payload, "cwd").or(session.cwd.take());
    if let Some(git) = payload.get("git") {
        session.git_remote = str_field(git, "repository_url");
        session.git_branch = str_field(git, "branch");
    }
    if let Some(t) = json_time(payload.get("timestamp")) {
        session.created_at = Some(session.created_at.map_or(t, |c| c.min(t)));
    }
    let instructions = payload
        .get("instructions")
        .or_else(|| payload.get("base_instructions"))
        .map(|v| flatten_text(Some(v)))
        .unwrap_or_default();
    if !instructions.is_empty() {
        session.snapshots.push(SnapshotDraft {
            boundary: "session_start",
            inheritance_mode: Some("fresh"),
            segment: Some("instructions"),
            text: instructions,
            occurred_at_ms: time,
        });
    }
}

fn read_item(
    session: &mut SessionDraft,
    state: &mut State,
    payload: &Value,
    sub: Option<&str>,
    time: Option<i64>,
    event_index: usize,
    parsed: &mut ParsedFile,
) {
    match sub {
        Some("message") => {
            let role = str_field(payload, "role").unwrap_or_default();
            let text = flatten_text(payload.get("content"));
            match role.as_str() {
                "assistant" => {
                    let m = open_assistant(session, state, time, event_index);
                    m.blocks.push(BlockDraft::text(BlockKind::Text, text));
                }
                _ => {
                    state.open_assistant = None;
                    let role = if role == "user" {
                        Role::User
                    } else {
                        Role::System
                    };
                    let mut m = MessageDraft::new(role, time, event_index);
                    m.injected = role != Role::User
                        || INJECTED_PREFIXES
                            .iter()
                            .any(|p| text.trim_start().starts_with(p));
                    m.blocks.push(BlockDraft::text(BlockKind::Text, text));
                    session.messages.push(m);
                }
            }
        }
        Some("reasoning") => {
            let text = flatten_text(payload.get("summary"));
            let m = open_assistant(session, state, time, event_index);
            m.blocks.push(BlockDraft::text(BlockKind::Thinking, text));
        }
        Some("function_call" | "custom_tool_call" | "local_shell_call" | "web_search_call") => {
            let name =
                str_field(payload, "name").unwrap_or_else(|| sub.unwrap_or("tool").to_string());
            let input = tool_input(payload);
            let id = str_field(payload, "call_id").or_else(|| str_field(payload, "id"));
            let mut block = BlockDraft::tool_use(Some(name), id, &input);
            // A string input (a custom tool's free text) is kept as the text itself.
            if let Value::String(s) = &input {
                block.tool_input = Some(s.clone());
            }
            let m = open_assistant(session, state, time, event_index);
            m.blocks.push(block);
        }
        Some("function_call_output" | "custom_tool_call_output" | "local_shell_call_output") => {
            state.open_assistant = None;
            let (text, exit_code) = tool_output(payload.get("output"));
            let mut block = BlockDraft::text(BlockKind::ToolResult, text);
            block.tool_id = str_field(payload, "call_id");
            block.exit_code = exit_code;
            block.is_error = Some(exit_code.is_some_and(|c| c != 0));
            let mut m = MessageDraft::new(Role::Tool, time, event_index);
            m.injected = true;
            m.blocks.push(block);
            session.messages.push(m);
        }
        other => {
            let name = format!("codex:response_item/{}", other.unwrap_or("unknown"));
            *parsed.unknown_records.entry(name).or_default() += 1;
        }
    }
}

/// The provenance a record names by `call_id`: a tool call's output (or an `event_msg` about
/// it) names the call. Calls (`function_call`, `custom_tool_call`, `local_shell_call`) are
/// remembered by their `call_id`.
fn call_link(
    state: &mut State,
    kind: &str,
    sub: Option<&str>,
    payload: &Value,
    event_index: usize,
) -> Vec<usize> {
    let Some(call_id) = str_field(payload, "call_id").filter(|c| !c.is_empty()) else {
        return Vec::new();
    };
    let is_call = kind == "response_item"
        && matches!(
            sub,
            Some("function_call" | "custom_tool_call" | "local_shell_call")
        );
    if is_call {
        let hash = call_hash(&call_id);
        if !state.calls.contains_key(&call_id) {
            state.call_hashes.push((hash, event_index));
        }
        state.calls.entry(call_id).or_insert(event_index);
        return Vec::new();
    }
    let found = state.calls.get(&call_id).copied();
    if found.is_none() && state.prior_calls.contains(&call_hash(&call_id)) {
        state.whole = Some("a record names a tool call before the cut");
    }
    found.into_iter().collect()
}

/// An `item_completed` envelope: its item is read in its direct form and the envelope joins the
/// conversation surface, unless the rollout also writes that item directly (then the envelope
/// stays a log-only event).
fn read_item_completed(
    session: &mut SessionDraft,
    state: &mut State,
    payload: &Value,
    time: Option<i64>,
    event_index: usize,
    parsed: &mut ParsedFile,
) {
    let Some(item) = payload.get("item") else {
        return;
    };
    if let Some(direct) = state.direct.absorbs(item) {
        // The envelope repeats an item the rollout wrote directly: that record is its source.
        if let Some(event) = session.events.get_mut(event_index) {
            event.sources.push(direct);
        }
        // No cut between the twins.
        let here = state.base + event_index;
        let (first, last) = (direct.min(here), direct.max(here));
        state
            .resume
            .spans
            .push((first.saturating_sub(state.base), last - state.base));
        return;
    }
    let forms = envelope::direct_forms(item);
    if forms.is_empty() {
        return;
    }
    state
        .unabsorbed_from
        .get_or_insert(state.base + event_index);
    if let Some(event) = session.events.get_mut(event_index) {
        event.surface = Surface::Current;
    }
    for form in forms {
        let sub = str_field(&form, "type");
        read_item(
            session,
            state,
            &form,
            sub.as_deref(),
            time,
            event_index,
            parsed,
        );
    }
}

/// The input of a tool call: `arguments` (JSON text) parsed when possible, else `input`.
fn tool_input(payload: &Value) -> Value {
    if let Some(args) = payload.get("arguments").and_then(Value::as_str) {
        return serde_json::from_str(args).unwrap_or_else(|_| Value::String(args.to_string()));
    }
    if let Some(input) = payload.get("input") {
        return match input {
            Value::String(s) => serde_json::json!({ "input": s }),
            other => other.clone(),
        };
    }
    payload.get("action").cloned().unwrap_or(Value::Null)
}

/// Output text and exit code of a tool result (0.40 wraps it as `{"output", "metadata"}` JSON).
fn tool_output(output: Option<&Value>) -> (String, Option<i64>) {
    let raw = match output {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    if let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(&raw) {
        let text = obj
            .get("output")
            .map(|v| flatten_text(Some(v)))
            .unwrap_or_else(|| raw.clone());
        let code = obj
            .get("metadata")
            .and_then(|m| m.get("exit_code"))
            .and_then(Value::as_i64);
        return (text, code.or_else(|| exit_code_in(&raw)));
    }
    let code = exit_code_in(&raw);
    (raw, code)
}

fn open_assistant<'a>(
    session: &'a mut SessionDraft,
    state: &mut State,
    time: Option<i64>,
    event_index: usize,
) -> &'a mut MessageDraft {
    let index = match state.open_assistant {
        Some(i) if i < session.messages.len() => {
            if let Some(m) = session.messages.get(i) {
                state.resume.spans.push((m.event_index, event_index));
            }
            i
        }
        _ => {
            let mut m = MessageDraft::new(Role::Assistant, time, event_index);
            m.model = state.model.clone();
            if let Some(model) = &state.model {
                *state.models.entry(model.clone()).or_default() += 1;
            }
            session.messages.push(m);
            session.messages.len() - 1
        }
    };
    state.open_assistant = Some(index);
    state.last_assistant = Some(index);
    #[allow(clippy::indexing_slicing)]
    &mut session.messages[index]
}

fn read_event(
    session: &mut SessionDraft,
    state: &mut State,
    payload: &Value,
    sub: Option<&str>,
    time: Option<i64>,
    event_index: usize,
) {
    match sub {
        Some("token_count") => read_token_count(session, state, payload, time, event_index),
        Some("task_started") => {
            let turn_id = str_field(payload, "turn_id").unwrap_or_else(|| {
                state.anonymous_turns += 1;
                format!("task-{}", state.anonymous_turns)
            });
            session.turn_markers.push(TurnMarker {
                turn_id,
                start_event: event_index,
                started_at_ms: time,
                completed_at_ms: None,
                completed: false,
            });
        }
        Some("task_complete") => {
            let id = str_field(payload, "turn_id");
            let marker = match &id {
                Some(id) => session
                    .turn_markers
                    .iter_mut()
                    .rev()
                    .find(|m| m.turn_id == *id),
                None => session.turn_markers.iter_mut().rev().find(|m| !m.completed),
            };
            if marker.is_none() && (id.is_some() || state.prior_incomplete) && state.base > 0 {
                state.whole = Some("a turn before the cut completes");
            }
            if let Some(m) = marker {
                m.completed = true;
                m.completed_at_ms = time;
            }
        }
        _ => {}
    }
}

fn read_token_count(
    session: &mut SessionDraft,
    state: &mut State,
    payload: &Value,
    time: Option<i64>,
    event_index: usize,
) {
    let Some(total) = payload.get("info").and_then(|i| i.get("total_token_usage")) else {
        return;
    };
    let get = |k: &str| total.get(k).and_then(Value::as_i64).unwrap_or(0);
    let now = Cumulative {
        input: get("input_tokens"),
        cached: get("cached_input_tokens"),
        output: get("output_tokens"),
        reasoning: get("reasoning_output_tokens"),
    };
    let delta = Cumulative {
        input: now.input - state.totals.input,
        cached: now.cached - state.totals.cached,
        output: now.output - state.totals.output,
        reasoning: now.reasoning - state.totals.reasoning,
    };
    // A repeated total is no new response; a smaller total is a restart of the counter.
    if delta.input == 0 && delta.cached == 0 && delta.output == 0 && delta.reasoning == 0 {
        return;
    }
    let delta = if delta.input < 0 || delta.output < 0 || delta.cached < 0 {
        now
    } else {
        delta
    };
    state.totals = now;
    let line = format!(
        "{},{},{},{};",
        now.input, now.cached, now.output, now.reasoning
    );
    state.history.update(line.as_bytes());
    state.history_text.push_str(&line);
    let fingerprint = state.history.finalize().to_hex();
    let tokens = Tokens {
        input: delta.input - delta.cached,
        output: delta.output,
        reasoning: Some(delta.reasoning),
        cache_read: delta.cached,
        cache_write: 0,
        cache_write_1h: 0,
    };
    if state.last_assistant.is_none() && state.prior_assistant {
        state.whole = Some("a token count bills a response before the cut");
    }
    if let Some(m) = state
        .last_assistant
        .and_then(|i| session.messages.get_mut(i))
    {
        m.tokens.get_or_insert_with(Tokens::default).add(&tokens);
        state.resume.spans.push((m.event_index, event_index));
    }
    session.usage.push(UsageDraft {
        response_key: Some(format!(
            "codex:{}",
            fingerprint.get(..32).unwrap_or(fingerprint.as_str())
        )),
        via: RecordedVia::Transcript,
        subagent_native_id: None,
        message_index: state.last_assistant,
        request_id: None,
        model: state.model.clone(),
        tokens,
        occurred_at_ms: time,
        event_index,
    });
    state.open_assistant = None;
}
