//! Claude Code JSONL transcripts (`~/.claude/projects/<project>/<session>.jsonl` and
//! `<session>/subagents/**/agent-*.jsonl`).
//!
//! One file is one session; inline `isSidechain` records (older versions) become child sessions
//! of their own; a file under `subagents/` (at any depth) is a subagent session of the session
//! named by its records' `sessionId`. Session-state records (`mode`, `ai-title`, `attachment`,
//! ...) are log-only events; the title is `custom-title`, else `ai-title`, else `summary`.
//! Assistant lines sharing `message.id` merge into one message, and each (`message.id`,
//! `requestId`) is billed once with its largest usage. A grown transcript is read on from its
//! last cut ([`resume`]; see `tail`).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lines::Line;
use super::model::*;
use super::text::{exit_code_in, flatten_text, json_time, str_field};

/// Record types this adapter knows (anything else is kept as a raw event and counted).
pub(crate) const KNOWN_TYPES: &[&str] = &[
    "user",
    "assistant",
    "system",
    "summary",
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

/// Markers of user-role text that a person did not type.
const INJECTED_PREFIXES: &[&str] = &[
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<system-reminder>",
    "<user-prompt-submit-hook>",
    "Caveat: The messages below were generated",
    "[Request interrupted by user",
];

/// Reads one Claude Code file. `path` decides whether it is a subagent file.
pub fn parse(path: &str, lines: Vec<Line>, parsed: &mut ParsedFile) {
    let stem = std::path::Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("session")
        .to_string();
    let session_native = lines
        .iter()
        .find_map(|l| str_field(&l.value, "sessionId"))
        .unwrap_or_else(|| stem.clone());
    let agent_id = subagent_id(path, &lines);

    let mut main = match &agent_id {
        Some(agent) => {
            let mut s = SessionDraft::new(
                Origin::ClaudeCode,
                format!("{session_native}/agent-{agent}"),
            );
            s.parent_native_id = Some(session_native.clone());
            s.branch_type = Some(if agent.starts_with("acompact") {
                "compaction"
            } else {
                "subagent"
            });
            s.agent = Some(agent.clone());
            s
        }
        None => SessionDraft::new(Origin::ClaudeCode, session_native.clone()),
    };

    // Inline sidechains (only in main files): group records by their sidechain root.
    let by_uuid: HashMap<String, (Option<String>, bool)> = lines
        .iter()
        .filter_map(|l| {
            let uuid = str_field(&l.value, "uuid")?;
            Some((
                uuid,
                (str_field(&l.value, "parentUuid"), is_sidechain(&l.value)),
            ))
        })
        .collect();
    let mut children: Vec<SessionDraft> = Vec::new();
    let mut child_of_root: HashMap<String, usize> = HashMap::new();

    let mut builders: Vec<Builder> = vec![Builder::default()];
    for line in lines {
        parsed.records += 1;
        let target = if agent_id.is_none() && is_sidechain(&line.value) {
            let root = sidechain_root(&line.value, &by_uuid);
            *child_of_root.entry(root.clone()).or_insert_with(|| {
                let mut child = SessionDraft::new(
                    Origin::ClaudeCode,
                    format!("{session_native}/sidechain-{root}"),
                );
                child.parent_native_id = Some(session_native.clone());
                child.branch_type = Some("sidechain");
                children.push(child);
                builders.push(Builder::default());
                children.len()
            })
        } else {
            0
        };
        let session = if target == 0 {
            &mut main
        } else {
            match children.get_mut(target - 1) {
                Some(child) => child,
                None => continue,
            }
        };
        let Some(builder) = builders.get_mut(target) else {
            continue;
        };
        read_record(session, builder, line, parsed, path);
    }

    let mut sessions = vec![main];
    sessions.extend(children);
    for (session, builder) in sessions.iter_mut().zip(builders) {
        builder.finish(session);
    }
    link_inline_sidechains(&mut sessions);
    // A file with inline sidechains is read whole each time (its records feed several sessions).
    if sessions.len() > 1 {
        for session in &mut sessions {
            session.resume = None;
        }
    }
    parsed.sessions.extend(sessions);
}

/// A checkpoint's state as JSON, to keep in the archive (`Null` for a state not this
/// adapter's).
pub fn state_value(state: &(dyn std::any::Any + Send + Sync)) -> Value {
    state
        .downcast_ref::<Carried>()
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or(Value::Null)
}

/// Continues reading a session from a cut: `records` are the archived records from the cut on,
/// then the new ones. The draft holds only what lies after the cut (indexes local to it), its
/// session-wide fields (times, title, model, snapshots) as a whole read would give them, and
/// `opened`: the message ids and response keys first seen here, which the caller checks are not
/// the archive's before the cut.
pub fn resume(
    path: &str,
    from: Continue<'_>,
    records: Vec<Line>,
    snapshots: Vec<SnapshotDraft>,
    parsed: &mut ParsedFile,
) -> Result<(SessionDraft, Vec<(String, RecordedVia)>), Whole> {
    let carried: Carried = from.carried()?;
    let mut session = carried.header.draft();
    carried.apply(&mut session);
    session.snapshots = snapshots;
    let is_subagent = session.parent_native_id.is_some();
    let mut b = Builder {
        base: from.events,
        models: carried.models.clone().into_iter().collect(),
        summary_title: carried.summary_title.clone(),
        custom_title: carried.custom_title.clone(),
        ai_title: carried.ai_title.clone(),
        opened: Some(Vec::new()),
        ..Builder::default()
    };
    let mut sources = from.archived_sources.into_iter();
    for (i, line) in records.into_iter().enumerate() {
        parsed.records += 1;
        if !is_subagent && is_sidechain(&line.value) {
            return Err(Whole("an inline sidechain record"));
        }
        let archived = if i < from.archived {
            Some(sources.next().unwrap_or_default())
        } else {
            None
        };
        let fresh = archived.is_none();
        read_record_with(&mut session, &mut b, line, parsed, path, archived);
        if fresh && b.lost_parent {
            return Err(Whole("a new record names a parent before the cut"));
        }
        b.lost_parent = false;
    }
    let opened = b.opened.take().unwrap_or_default();
    b.finish(&mut session);
    Ok((session, opened))
}

/// The agent id of a subagent file: from `subagents/agent-<id>.jsonl` (or an `agent-*.jsonl`
/// anywhere below a `subagents` folder, as workflow fan-outs nest them), else from records that
/// are all sidechain records carrying `agentId`.
fn subagent_id(path: &str, lines: &[Line]) -> Option<String> {
    let p = std::path::Path::new(path);
    let in_subagents = in_subagents_folder(p);
    let from_records = lines.first().and_then(|l| {
        if is_sidechain(&l.value) {
            str_field(&l.value, "agentId")
        } else {
            None
        }
    });
    if in_subagents {
        let stem = p.file_stem()?.to_str()?;
        return Some(
            from_records.unwrap_or_else(|| stem.strip_prefix("agent-").unwrap_or(stem).to_string()),
        );
    }
    from_records
}

/// Whether `path` is a subagent transcript: its folder is `subagents`, or it is named
/// `agent-*` and some folder above it is `subagents`
/// (`<session>/subagents/workflows/wf_<run>/agent-<id>.jsonl`).
fn in_subagents_folder(path: &std::path::Path) -> bool {
    let is_subagents = |d: &std::path::Path| d.file_name().is_some_and(|n| n == "subagents");
    if path.parent().is_some_and(is_subagents) {
        return true;
    }
    let agent_named = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("agent-"));
    agent_named && path.ancestors().skip(1).any(is_subagents)
}

fn is_sidechain(record: &Value) -> bool {
    record.get("isSidechain").and_then(Value::as_bool) == Some(true)
}

fn sidechain_root(record: &Value, by_uuid: &HashMap<String, (Option<String>, bool)>) -> String {
    let mut current = str_field(record, "uuid").unwrap_or_default();
    let mut parent = str_field(record, "parentUuid");
    for _ in 0..100_000 {
        match parent.and_then(|p| by_uuid.get(&p).map(|entry| (p, entry.clone()))) {
            Some((p, (grand, true))) => {
                current = p;
                parent = grand;
            }
            _ => break,
        }
    }
    current
}

/// Per-session state while reading records.
#[derive(Default)]
struct Builder {
    /// message.id → message index (assistant lines of one response merge).
    by_message_id: HashMap<String, usize>,
    /// (response key, kind) → usage index: one record per response and kind in a session.
    usage_by_key: HashMap<(String, RecordedVia), usize>,
    /// tool_use id → (message index, Task input) for delegations.
    task_calls: HashMap<String, (usize, Value)>,
    models: HashMap<String, usize>,
    summary_title: Option<String>,
    /// The title a person gave (`custom-title`); wins over the others.
    custom_title: Option<String>,
    /// The title Claude Code generated (`ai-title`); wins over `summary`.
    ai_title: Option<String>,
    pending_compaction: Option<usize>,
    /// Record `uuid` → its index in the session, for the records that name it as their parent.
    by_uuid: HashMap<String, usize>,
    /// The session index of this read's first record (0 unless it continues from a cut).
    base: usize,
    /// Turn starts whose state is known, and the records no cut may fall inside.
    resume: Resume,
    /// For a continued read: the message ids and response keys first seen in it.
    opened: Option<Vec<(String, RecordedVia)>>,
    /// The record just read names a parent this read does not hold.
    lost_parent: bool,
    /// Message ids whose message has no usage yet (`finish` blocks cuts after them).
    unbilled: Vec<(String, usize)>,
}

/// The identity of a session, as a continued read starts it.
#[derive(Clone, Default, Serialize, Deserialize)]
struct Header {
    native_id: String,
    parent_native_id: Option<String>,
    branch_type: Option<String>,
    agent: Option<String>,
}

impl Header {
    fn of(session: &SessionDraft) -> Self {
        Header {
            native_id: session.native_id.clone(),
            parent_native_id: session.parent_native_id.clone(),
            branch_type: session.branch_type.map(str::to_string),
            agent: session.agent.clone(),
        }
    }

    fn draft(&self) -> SessionDraft {
        let mut s = SessionDraft::new(Origin::ClaudeCode, self.native_id.clone());
        s.parent_native_id = self.parent_native_id.clone();
        s.branch_type = match self.branch_type.as_deref() {
            Some("compaction") => Some("compaction"),
            Some("subagent") => Some("subagent"),
            Some("sidechain") => Some("sidechain"),
            _ => None,
        };
        s.agent = self.agent.clone();
        s
    }
}

/// The reading state a later record can still change, kept before each record that opens a
/// message.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct Carried {
    header: Header,
    created_at: Option<i64>,
    updated_at: Option<i64>,
    cwd: Option<String>,
    git_branch: Option<String>,
    reported_cost_usd: Option<f64>,
    models: BTreeMap<String, usize>,
    summary_title: Option<String>,
    custom_title: Option<String>,
    ai_title: Option<String>,
    /// Context snapshots read before the cut (the archive holds them).
    snapshots: usize,
}

impl Carried {
    fn of(session: &SessionDraft, b: &Builder) -> Self {
        Carried {
            header: Header::of(session),
            created_at: session.created_at,
            updated_at: session.updated_at,
            cwd: session.cwd.clone(),
            git_branch: session.git_branch.clone(),
            reported_cost_usd: session.reported_cost_usd,
            models: b.models.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            summary_title: b.summary_title.clone(),
            custom_title: b.custom_title.clone(),
            ai_title: b.ai_title.clone(),
            snapshots: session.snapshots.len(),
        }
    }

    fn apply(&self, session: &mut SessionDraft) {
        session.created_at = self.created_at;
        session.updated_at = self.updated_at;
        session.cwd = self.cwd.clone();
        session.git_branch = self.git_branch.clone();
        session.reported_cost_usd = self.reported_cost_usd;
    }
}

fn read_record(
    session: &mut SessionDraft,
    b: &mut Builder,
    line: Line,
    parsed: &mut ParsedFile,
    file: &str,
) {
    read_record_with(session, b, line, parsed, file, None);
}

/// Reads one record; `known_sources` is the provenance the archive already holds for it (a
/// continued read re-reading an archived record whose parent lies before the cut).
fn read_record_with(
    session: &mut SessionDraft,
    b: &mut Builder,
    line: Line,
    parsed: &mut ParsedFile,
    file: &str,
    known_sources: Option<Vec<usize>>,
) {
    let record = &line.value;
    let place = (file, line.number);
    let kind = str_field(record, "type").unwrap_or_else(|| "unknown".to_string());
    // A record that opens a message is a place a later read may continue from.
    let opens = kind == "user"
        || (kind == "assistant"
            && record
                .pointer("/message/id")
                .and_then(Value::as_str)
                .is_none_or(|id| !b.by_message_id.contains_key(id)));
    if opens && b.pending_compaction.is_none() {
        b.resume.checkpoints.push(Checkpoint {
            event: session.events.len(),
            messages: session.messages.len(),
            usage: session.usage.len(),
            state: std::sync::Arc::new(Carried::of(session, b)),
        });
    }
    let time = json_time(record.get("timestamp"));
    if let Some(t) = time {
        session.created_at = Some(session.created_at.map_or(t, |c| c.min(t)));
        session.updated_at = Some(session.updated_at.map_or(t, |u| u.max(t)));
    }
    if session.cwd.is_none() {
        session.cwd = str_field(record, "cwd");
    }
    if session.git_branch.is_none() {
        session.git_branch = str_field(record, "gitBranch").filter(|b| !b.is_empty());
    }
    if let Some(cost) = record.get("costUSD").and_then(Value::as_f64) {
        session.reported_cost_usd = Some(session.reported_cost_usd.unwrap_or(0.0) + cost);
    }
    let subtype = str_field(record, "subtype");
    let event_kind = match &subtype {
        Some(s) => format!("{kind}/{s}"),
        None => kind.clone(),
    };
    let is_message = kind == "user" || kind == "assistant";
    let event_index = session.events.len();
    // Provenance: the record's `parentUuid` (a compaction boundary names the record before it
    // as `logicalParentUuid`), when that record is in this session.
    let parent = ["parentUuid", "logicalParentUuid"]
        .iter()
        .find_map(|k| str_field(record, k));
    let found = parent.as_ref().and_then(|p| b.by_uuid.get(p).copied());
    b.lost_parent = parent.is_some() && found.is_none() && b.base > 0;

    let sources = match (found, known_sources) {
        (None, Some(known)) => known,
        (found, _) => found.into_iter().collect(),
    };
    if let Some(uuid) = str_field(record, "uuid") {
        b.by_uuid.entry(uuid).or_insert(b.base + event_index);
    }
    session.events.push(EventDraft {
        kind: event_kind,
        time,
        surface: if is_message {
            Surface::Current
        } else {
            Surface::LogOnly
        },
        payload: line.text,
        sources,
        ..EventDraft::default()
    });
    if !KNOWN_TYPES.contains(&kind.as_str()) {
        *parsed
            .unknown_records
            .entry(format!("claude-code:{kind}"))
            .or_default() += 1;
    }
    match kind.as_str() {
        "user" => read_user(session, b, record, time, event_index),
        "assistant" => read_assistant(session, b, record, time, event_index, (&place, parsed)),
        "progress" => read_progress(session, b, record, event_index, (&place, parsed)),
        "summary" => b.summary_title = str_field(record, "summary").or(b.summary_title.take()),
        "custom-title" => {
            b.custom_title = title_of(record, "customTitle").or(b.custom_title.take());
        }
        "ai-title" => b.ai_title = title_of(record, "aiTitle").or(b.ai_title.take()),
        "system" if subtype.as_deref() == Some("compact_boundary") => {
            b.pending_compaction = Some(session.snapshots.len());
            session
                .snapshots
                .push(SnapshotDraft::compaction(String::new(), time));
        }
        _ => {}
    }
}

/// The non-empty title a title record carries in `field` (or, defensively, `title`).
fn title_of(record: &Value, field: &str) -> Option<String> {
    str_field(record, field)
        .or_else(|| str_field(record, "title"))
        .filter(|t| !t.trim().is_empty())
}

fn read_user(
    session: &mut SessionDraft,
    b: &mut Builder,
    record: &Value,
    time: Option<i64>,
    event_index: usize,
) {
    let Some(message) = record.get("message") else {
        return;
    };
    let mut m = MessageDraft::new(Role::User, time, event_index);
    m.is_sidechain = is_sidechain(record);
    let meta = record.get("isMeta").and_then(Value::as_bool) == Some(true);
    m.compaction_summary = record.get("isCompactSummary").and_then(Value::as_bool) == Some(true);
    let tool_use_result = record.get("toolUseResult");
    match message.get("content") {
        Some(Value::String(text)) => m
            .blocks
            .push(BlockDraft::text(BlockKind::Text, text.clone())),
        Some(Value::Array(items)) => {
            for item in items {
                if let Some(block) = user_block(item, tool_use_result) {
                    m.blocks.push(block);
                }
            }
        }
        _ => {}
    }
    let text = m
        .blocks
        .iter()
        .filter(|bl| bl.kind == BlockKind::Text)
        .map(|bl| bl.text.trim_start())
        .collect::<Vec<_>>()
        .join("\n");
    m.hidden = meta;
    m.injected = meta
        || m.compaction_summary
        || INJECTED_PREFIXES.iter().any(|p| text.starts_with(p))
        || m.blocks.iter().all(|bl| bl.kind != BlockKind::Text);
    m.pasted =
        text.contains("[Pasted text") || record.get("pastedContents").is_some_and(|v| !v.is_null());
    if m.compaction_summary
        && let Some(index) = b.pending_compaction.take()
        && let Some(snapshot) = session.snapshots.get_mut(index)
    {
        snapshot.text = text.clone();
    }
    // A Task result names the subagent that ran it.
    if let Some(result) = tool_use_result {
        for block in m
            .blocks
            .iter()
            .filter(|bl| bl.kind == BlockKind::ToolResult)
        {
            let Some(tool_id) = &block.tool_id else {
                continue;
            };
            let Some((message_index, input)) = b.task_calls.get(tool_id) else {
                continue;
            };
            session.delegations.push(DelegationDraft {
                message_index: *message_index,
                tool_id: tool_id.clone(),
                child_native_id: str_field(result, "agentId").map(|a| {
                    let parent = &session.native_id;
                    format!("{parent}/agent-{a}")
                }),
                instruction: str_field(input, "prompt"),
                requested_model: str_field(input, "model"),
                result_status: str_field(result, "status").or_else(|| {
                    Some(
                        if block.is_error == Some(true) {
                            "error"
                        } else {
                            "completed"
                        }
                        .to_string(),
                    )
                }),
                occurred_at_ms: time,
            });
            b.task_calls.remove(tool_id);
            break;
        }
    }
    if !m.blocks.is_empty() {
        session.messages.push(m);
    }
}

fn user_block(item: &Value, tool_use_result: Option<&Value>) -> Option<BlockDraft> {
    match item.get("type").and_then(Value::as_str)? {
        "text" => Some(BlockDraft::text(
            BlockKind::Text,
            flatten_text(item.get("text")),
        )),
        "image" => Some(BlockDraft::text(BlockKind::Image, String::new())),
        "document" => Some(BlockDraft::text(
            BlockKind::Document,
            flatten_text(item.get("title")),
        )),
        "tool_result" => {
            let text = flatten_text(item.get("content"));
            let mut block = BlockDraft::text(BlockKind::ToolResult, text);
            block.tool_id = str_field(item, "tool_use_id");
            block.is_error = Some(item.get("is_error").and_then(Value::as_bool) == Some(true));
            block.exit_code = tool_use_result
                .and_then(|r| r.get("exitCode").or_else(|| r.get("exit_code")))
                .and_then(Value::as_i64)
                .or_else(|| exit_code_in(&block.text));
            Some(block)
        }
        _ => None,
    }
}

fn read_assistant(
    session: &mut SessionDraft,
    b: &mut Builder,
    record: &Value,
    time: Option<i64>,
    event_index: usize,
    (place, parsed): (&Place<'_>, &mut ParsedFile),
) {
    let Some(message) = record.get("message") else {
        return;
    };
    let message_id = str_field(message, "id");
    let index = match message_id.as_ref().and_then(|id| b.by_message_id.get(id)) {
        Some(index) => {
            if let Some(m) = session.messages.get(*index) {
                b.resume.spans.push((m.event_index, event_index));
            }
            *index
        }
        None => {
            if let (Some(opened), Some(id)) = (b.opened.as_mut(), &message_id) {
                opened.push((format!("claude:{id}"), RecordedVia::Transcript));
            }
            let mut m = MessageDraft::new(Role::Assistant, time, event_index);
            m.is_sidechain = is_sidechain(record);
            m.model = str_field(message, "model");
            if let Some(model) = m.model.clone().filter(|m| m != "<synthetic>") {
                *b.models.entry(model).or_default() += 1;
            }
            session.messages.push(m);
            let index = session.messages.len() - 1;
            if let Some(id) = &message_id {
                b.by_message_id.insert(id.clone(), index);
                b.unbilled.push((id.clone(), event_index));
            }
            index
        }
    };
    let Some(m) = session.messages.get_mut(index) else {
        return;
    };
    if let Some(reason) = str_field(message, "stop_reason") {
        m.stop_reason = Some(reason);
    }
    if let Some(d) = record.get("durationMs").and_then(Value::as_i64) {
        m.duration_ms = Some(d);
    }
    match message.get("content") {
        Some(Value::String(text)) => m
            .blocks
            .push(BlockDraft::text(BlockKind::Text, text.clone())),
        Some(Value::Array(items)) => {
            for item in items {
                let Some(block) = assistant_block(item) else {
                    continue;
                };
                if block.kind == BlockKind::ToolUse
                    && matches!(block.tool_name.as_deref(), Some("Task" | "Agent"))
                    && let Some(id) = &block.tool_id
                {
                    b.task_calls.insert(
                        id.clone(),
                        (index, item.get("input").cloned().unwrap_or(Value::Null)),
                    );
                }
                m.blocks.push(block);
            }
        }
        _ => {}
    }
    if let Some(usage) = message.get("usage") {
        let tokens = claude_tokens(usage, place, parsed);
        let key = response_key(
            message_id.as_deref(),
            &session.native_id,
            b.base + event_index,
        );
        let draft = UsageDraft {
            response_key: Some(key),
            via: RecordedVia::Transcript,
            subagent_native_id: None,
            message_index: Some(index),
            request_id: str_field(record, "requestId"),
            model: str_field(message, "model"),
            tokens,
            occurred_at_ms: time,
            event_index,
        };
        merge_usage(session, b, draft);
    }
}

/// A subagent's API response streamed into the parent's transcript as a `progress` record
/// (`data.message.message` with `id`, `model`, `usage`; `data.agentId` names the subagent).
/// It becomes a usage record of this session, counted once with the subagent's own records.
fn read_progress(
    session: &mut SessionDraft,
    b: &mut Builder,
    record: &Value,
    event_index: usize,
    (place, parsed): (&Place<'_>, &mut ParsedFile),
) {
    let Some(data) = record.get("data") else {
        return;
    };
    let Some(streamed) = data.get("message") else {
        return;
    };
    let Some(message) = streamed.get("message") else {
        return;
    };
    let Some(usage) = message.get("usage") else {
        return;
    };
    let message_id = str_field(message, "id");
    let tokens = claude_tokens(usage, place, parsed);
    // Subagent files carry the parent's `sessionId`, so `<sessionId>/agent-<agentId>` names the
    // subagent session from a parent file and from a nested subagent's file alike.
    let parent = str_field(record, "sessionId").unwrap_or_else(|| session.native_id.clone());
    let draft = UsageDraft {
        response_key: Some(response_key(
            message_id.as_deref(),
            &session.native_id,
            b.base + event_index,
        )),
        via: RecordedVia::Progress,
        subagent_native_id: str_field(data, "agentId").map(|a| format!("{parent}/agent-{a}")),
        message_index: None,
        request_id: str_field(streamed, "requestId"),
        model: str_field(message, "model"),
        tokens,
        occurred_at_ms: json_time(streamed.get("timestamp"))
            .or_else(|| json_time(record.get("timestamp"))),
        event_index,
    };
    merge_usage(session, b, draft);
}

/// `claude:<message.id>`: one API response, whichever file and record carries it; a record
/// without an id is a response of its own line.
fn response_key(message_id: Option<&str>, native_id: &str, event_index: usize) -> String {
    match message_id {
        Some(id) => format!("claude:{id}"),
        None => format!("claude:{native_id}#line{event_index}"),
    }
}

/// Adds a usage record, or merges it into this session's record of the same response and kind
/// (a response is written as several lines repeating its usage): each count the largest.
fn merge_usage(session: &mut SessionDraft, b: &mut Builder, draft: UsageDraft) {
    let key = (draft.response_key.clone().unwrap_or_default(), draft.via);
    match b.usage_by_key.get(&key) {
        Some(&u) => {
            if let Some(existing) = session.usage.get_mut(u) {
                b.resume
                    .spans
                    .push((existing.event_index, draft.event_index));
                existing.tokens = existing.tokens.max(draft.tokens);
                if existing.model.is_none() {
                    existing.model = draft.model;
                }
            }
        }
        None => {
            if let Some(opened) = b.opened.as_mut() {
                opened.push(key.clone());
            }
            b.usage_by_key.insert(key, session.usage.len());
            session.usage.push(draft);
        }
    }
}

/// Where a record sits, for a diagnostic: the file and the record's 1-based line.
type Place<'a> = (&'a str, usize);

/// The token counts of one Claude `usage` object. `cache_creation` splits the cache writes into
/// 5-minute and 1-hour entries; without it every write is a 5-minute one (the default lifetime);
/// a split that disagrees with `cache_creation_input_tokens` is reported and the total wins, as
/// 5-minute writes.
fn claude_tokens(usage: &Value, place: &Place<'_>, parsed: &mut ParsedFile) -> Tokens {
    let get = |v: &Value, k: &str| v.get(k).and_then(Value::as_i64);
    let cache_write = get(usage, "cache_creation_input_tokens").unwrap_or(0);
    let split = usage.get("cache_creation").map(|c| {
        (
            get(c, "ephemeral_5m_input_tokens").unwrap_or(0),
            get(c, "ephemeral_1h_input_tokens").unwrap_or(0),
        )
    });
    let cache_write_1h = match split {
        Some((m5, h1)) if m5 + h1 == cache_write => h1,
        Some((m5, h1)) => {
            parsed.diagnostics.push(Diagnostic {
                file: place.0.to_string(),
                line: Some(place.1),
                kind: "cache_split_mismatch",
                reason: format!(
                    "cache_creation splits {m5} 5-minute + {h1} 1-hour tokens but cache_creation_input_tokens is {cache_write}; counted as {cache_write} 5-minute tokens"
                ),
            });
            0
        }
        None => 0,
    };
    Tokens {
        input: get(usage, "input_tokens").unwrap_or(0),
        output: get(usage, "output_tokens").unwrap_or(0),
        reasoning: None,
        cache_read: get(usage, "cache_read_input_tokens").unwrap_or(0),
        cache_write,
        cache_write_1h,
    }
}

fn assistant_block(item: &Value) -> Option<BlockDraft> {
    match item.get("type").and_then(Value::as_str)? {
        "text" => Some(BlockDraft::text(
            BlockKind::Text,
            flatten_text(item.get("text")),
        )),
        "thinking" => Some(BlockDraft::text(
            BlockKind::Thinking,
            flatten_text(item.get("thinking")),
        )),
        "redacted_thinking" => Some(BlockDraft::text(BlockKind::Thinking, String::new())),
        "tool_use" | "server_tool_use" => {
            let input = item.get("input").unwrap_or(&Value::Null);
            Some(BlockDraft::tool_use(
                str_field(item, "name"),
                str_field(item, "id"),
                input,
            ))
        }
        "image" => Some(BlockDraft::text(BlockKind::Image, String::new())),
        _ => None,
    }
}

impl Builder {
    fn finish(mut self, session: &mut SessionDraft) {
        // A message whose id no usage row carries cannot be found again after a cut (a later
        // record of it would open a new message): no cut after it.
        for (id, event) in &self.unbilled {
            if !self
                .usage_by_key
                .contains_key(&(format!("claude:{id}"), RecordedVia::Transcript))
            {
                self.resume.spans.push((*event, usize::MAX));
            }
        }
        session.resume = Some(std::mem::take(&mut self.resume));
        // Message tokens: the sum of its usage records (one per response).
        for usage in &session.usage {
            if let Some(m) = usage
                .message_index
                .and_then(|i| session.messages.get_mut(i))
            {
                m.tokens
                    .get_or_insert_with(Tokens::default)
                    .add(&usage.tokens);
            }
        }
        session.model = self
            .models
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|(model, _)| model);
        session.title = self.custom_title.or(self.ai_title).or(self.summary_title);
        // Delegations whose result never arrived still record the hand-off.
        for (tool_id, (message_index, input)) in self.task_calls {
            session.delegations.push(DelegationDraft {
                message_index,
                tool_id,
                child_native_id: None,
                instruction: str_field(&input, "prompt"),
                requested_model: str_field(&input, "model"),
                result_status: None,
                occurred_at_ms: session
                    .messages
                    .get(message_index)
                    .and_then(|m| m.occurred_at_ms),
            });
        }
        session
            .delegations
            .sort_by_key(|d| (d.message_index, d.tool_id.clone()));
    }
}

/// Resolves the delegations of a main session to its inline sidechain children by matching the
/// Task prompt with the child's first user message.
fn link_inline_sidechains(sessions: &mut [SessionDraft]) {
    let Some((main, children)) = sessions.split_first_mut() else {
        return;
    };
    let mut taken = vec![false; children.len()];
    for delegation in main
        .delegations
        .iter_mut()
        .filter(|d| d.child_native_id.is_none())
    {
        let Some(instruction) = delegation.instruction.as_deref().map(str::trim) else {
            continue;
        };
        let found = children.iter().enumerate().position(|(i, child)| {
            !taken.get(i).copied().unwrap_or(true)
                && child.messages.first().is_some_and(|m| {
                    m.blocks
                        .iter()
                        .any(|b| b.kind == BlockKind::Text && b.text.trim() == instruction)
                })
        });
        if let Some(i) = found
            && let Some(child) = children.get(i)
        {
            if let Some(t) = taken.get_mut(i) {
                *t = true;
            }
            delegation.child_native_id = Some(child.native_id.clone());
        }
    }
}
