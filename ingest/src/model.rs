//! The normalised shape every source adapter produces: sessions with their messages, blocks,
//! source records (events), usage and context boundaries, before anything is derived or stored.
//!
//! Adapters fill these drafts from their format; `derive` computes actions, files, turns, runs,
//! observed events and session counters from them; `store` writes the result. Nothing here
//! knows a source format or SQLite.

/// Where a session came from (the `origin` column and `origin:` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// Claude Code JSONL transcripts.
    ClaudeCode,
    /// Codex CLI rollout JSONL.
    Codex,
    /// ChatGPT `conversations.json` export.
    ChatGpt,
    /// Claude.ai export.
    ClaudeAi,
    /// Gemini CLI session JSON / JSONL.
    GeminiCli,
    /// Google AI Studio `chunkedPrompt` files.
    AiStudio,
    /// pi coding agent session JSONL.
    Pi,
    /// Qwen Code session JSONL.
    QwenCode,
    /// Kimi CLI event log JSONL.
    KimiCli,
    /// GitHub Copilot CLI event log JSONL.
    CopilotCli,
    /// OpenCode's session database.
    OpenCode,
    /// Kilo CLI's session database (OpenCode's tables).
    Kilo,
    /// Goose's session database.
    Goose,
    /// Amp's thread files (`T-<id>.json`).
    Amp,
    /// Cline's task folders.
    Cline,
    /// Roo Code's task folders.
    RooCode,
    /// Kilo Code's task folders (the extension before Kilo 7).
    KiloCode,
    /// Aider's Markdown chat history (`.aider.chat.history.md`), a session per run.
    Aider,
    /// Cursor's conversations in its `state.vscdb` databases.
    Cursor,
    /// Crush's per-project database (`.crush/crush.db`).
    Crush,
    /// Cline's SDK sessions (Cline 4, CLI 3: `~/.cline/data/sessions`).
    ClineSdk,
}

impl Origin {
    /// Every origin, in the order of [`quarry_schema::ORIGINS`] (which declares their names).
    pub const ALL: [Origin; 21] = [
        Origin::ClaudeCode,
        Origin::Codex,
        Origin::ChatGpt,
        Origin::ClaudeAi,
        Origin::GeminiCli,
        Origin::AiStudio,
        Origin::Pi,
        Origin::QwenCode,
        Origin::KimiCli,
        Origin::CopilotCli,
        Origin::OpenCode,
        Origin::Kilo,
        Origin::Goose,
        Origin::Amp,
        Origin::Cline,
        Origin::RooCode,
        Origin::KiloCode,
        Origin::Aider,
        Origin::Cursor,
        Origin::Crush,
        Origin::ClineSdk,
    ];

    /// The origin's declaration: the variants are in the order of [`quarry_schema::ORIGINS`].
    fn decl(self) -> &'static quarry_schema::OriginDecl {
        &quarry_schema::ORIGINS[self as usize]
    }

    /// The origin's stable name.
    pub fn as_str(self) -> &'static str {
        self.decl().name
    }

    /// The harness name recorded on runs.
    pub fn harness(self) -> &'static str {
        self.decl().harness
    }
}

#[cfg(test)]
mod origin_tests {
    use super::Origin;

    #[test]
    fn every_origin_is_declared_once_in_order() {
        assert_eq!(Origin::ALL.len(), quarry_schema::ORIGINS.len());
        for (i, origin) in Origin::ALL.iter().enumerate() {
            assert_eq!(*origin as usize, i);
            assert_eq!(origin.as_str(), quarry_schema::ORIGINS[i].name);
        }
    }
}

/// Token counts of one model response (Claude's meaning: `input` excludes cache reads/writes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Uncached input tokens.
    pub input: i64,
    /// Output tokens, reasoning included.
    pub output: i64,
    /// Reasoning tokens where the source reports them.
    pub reasoning: Option<i64>,
    /// Input tokens read from the prompt cache.
    pub cache_read: i64,
    /// Input tokens written to the prompt cache, both lifetimes.
    pub cache_write: i64,
    /// Of `cache_write`, the tokens written with the 1-hour lifetime (the rest are 5-minute
    /// writes, the default lifetime).
    pub cache_write_1h: i64,
}

impl Tokens {
    /// Cache writes with the 5-minute lifetime.
    pub fn cache_write_5m(&self) -> i64 {
        self.cache_write - self.cache_write_1h
    }

    /// Each count the larger of the two (records of one response repeat or grow its usage).
    pub fn max(self, other: Tokens) -> Tokens {
        let cache_write = self.cache_write.max(other.cache_write);
        Tokens {
            input: self.input.max(other.input),
            output: self.output.max(other.output),
            reasoning: match (self.reasoning, other.reasoning) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            },
            cache_read: self.cache_read.max(other.cache_read),
            cache_write,
            cache_write_1h: self
                .cache_write_1h
                .max(other.cache_write_1h)
                .min(cache_write),
        }
    }

    /// Adds `other` to each count (a message's usage rows).
    pub fn add(&mut self, other: &Tokens) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.cache_write_1h += other.cache_write_1h;
        if let Some(r) = other.reasoning {
            self.reasoning = Some(self.reasoning.unwrap_or(0) + r);
        }
    }
}

/// Which kind of record carried a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RecordedVia {
    /// An assistant record of the session's own transcript.
    #[default]
    Transcript,
    /// A parent transcript's `progress` record streaming a subagent's response.
    Progress,
    /// Counts the agent printed rounded or estimated (Aider's `Tokens:` reports): kept, but
    /// left out of the sessions' sums and cost and of reports unless asked.
    Approximate,
}

impl RecordedVia {
    /// The `recorded_via` column value.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordedVia::Transcript => "transcript",
            RecordedVia::Progress => "progress",
            RecordedVia::Approximate => "approximate",
        }
    }
}

/// The kind of a content block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// Plain text.
    Text,
    /// Model reasoning.
    Thinking,
    /// A tool call.
    ToolUse,
    /// A tool's result.
    ToolResult,
    /// An image.
    Image,
    /// Code (e.g. executable code in AI Studio).
    Code,
    /// A document or attachment.
    Document,
}

impl BlockKind {
    /// The block's `type` column value.
    pub fn as_str(self) -> &'static str {
        match self {
            BlockKind::Text => "text",
            BlockKind::Thinking => "thinking",
            BlockKind::ToolUse => "tool_use",
            BlockKind::ToolResult => "tool_result",
            BlockKind::Image => "image",
            BlockKind::Code => "code",
            BlockKind::Document => "document",
        }
    }
}

/// One content block as read from the source.
#[derive(Debug, Clone)]
pub struct BlockDraft {
    /// Kind.
    pub kind: BlockKind,
    /// Text (for tool results: the output text).
    pub text: String,
    /// Tool name (tool_use; copied onto the matching tool_result by `derive`).
    pub tool_name: Option<String>,
    /// Tool call id pairing a tool_use with its tool_result.
    pub tool_id: Option<String>,
    /// Tool input as JSON text.
    pub tool_input: Option<String>,
    /// The shell command of a shell-like tool call.
    pub tool_command: Option<String>,
    /// The file path a tool call names.
    pub tool_path: Option<String>,
    /// Whether a tool result reports an error.
    pub is_error: Option<bool>,
    /// Exit code of a command, where the result reports one.
    pub exit_code: Option<i64>,
}

impl BlockDraft {
    /// A block holding only text of the given kind.
    pub fn text(kind: BlockKind, text: impl Into<String>) -> Self {
        BlockDraft {
            kind,
            text: text.into(),
            tool_name: None,
            tool_id: None,
            tool_input: None,
            tool_command: None,
            tool_path: None,
            is_error: None,
            exit_code: None,
        }
    }

    /// A tool call: its name, id and input (kept as JSON text), with the command and file path
    /// the input names, where it names one.
    pub fn tool_use(name: Option<String>, id: Option<String>, input: &serde_json::Value) -> Self {
        let mut block = BlockDraft::text(BlockKind::ToolUse, String::new());
        block.tool_name = name;
        block.tool_id = id;
        block.tool_command = super::text::command_of(input);
        block.tool_path = super::text::path_of(input);
        block.tool_input = Some(input.to_string());
        block
    }
}

/// The role of a message as the source states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user side (provider-role truth: may carry tool results or injected context).
    User,
    /// The model.
    Assistant,
    /// System or developer instructions, notices.
    System,
    /// Tool output written as its own message (Codex).
    Tool,
}

impl Role {
    /// The `role` column value.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
            Role::Tool => "tool",
        }
    }
}

/// One logical message.
#[derive(Debug, Clone)]
pub struct MessageDraft {
    /// Role.
    pub role: Role,
    /// Model that produced it (assistant).
    pub model: Option<String>,
    /// When it happened (epoch ms UTC).
    pub occurred_at_ms: Option<i64>,
    /// Content blocks in order.
    pub blocks: Vec<BlockDraft>,
    /// Tokens of this response (already de-duplicated).
    pub tokens: Option<Tokens>,
    /// Duration reported by the source.
    pub duration_ms: Option<i64>,
    /// Stop reason as reported.
    pub stop_reason: Option<String>,
    /// Written on a sidechain (Claude Code `isSidechain`).
    pub is_sidechain: bool,
    /// Not typed by a person although the role is user: meta records, commands, injected context.
    pub injected: bool,
    /// A compaction summary handed to the model after a context compaction.
    pub compaction_summary: bool,
    /// The source marks it as never shown to the user (`isMeta`, ChatGPT's hidden messages).
    pub hidden: bool,
    /// Carries evidence of pasted material.
    pub pasted: bool,
    /// Index (into the session's `events`) of the source record that opened this message.
    pub event_index: usize,
}

impl MessageDraft {
    /// A message with no blocks yet.
    pub fn new(role: Role, occurred_at_ms: Option<i64>, event_index: usize) -> Self {
        MessageDraft {
            role,
            model: None,
            occurred_at_ms,
            blocks: Vec::new(),
            tokens: None,
            duration_ms: None,
            stop_reason: None,
            is_sidechain: false,
            injected: false,
            compaction_summary: false,
            pasted: false,
            hidden: false,
            event_index,
        }
    }
}

/// Where a source record sits on the conversation surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Surface {
    /// Part of the conversation as it stands.
    Current,
    /// A branch that was edited or regenerated away.
    Shadowed,
    /// A record that is not a message (progress, snapshots, token counts, ...).
    #[default]
    LogOnly,
}

impl Surface {
    /// The `surface` column value.
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Current => "current",
            Surface::Shadowed => "shadowed",
            Surface::LogOnly => "log-only",
        }
    }
}

/// One source record (a JSONL line, or one node of an export).
#[derive(Debug, Clone, Default)]
pub struct EventDraft {
    /// The record's type as the source names it (`assistant`, `event_msg/token_count`, ...).
    pub kind: String,
    /// When (epoch ms UTC).
    pub time: Option<i64>,
    /// Surface.
    pub surface: Surface,
    /// The raw record as JSON text.
    pub payload: String,
    /// For a shadowed record: the index of the record that positionally replaced it.
    pub replaced_by: Option<usize>,
    /// Indexes of the records this one names as its provenance, in recorded order.
    pub sources: Vec<usize>,
}

/// One billed model response as this file records it.
#[derive(Debug, Clone)]
pub struct UsageDraft {
    /// What identifies the response across files (`claude:<message.id>`, `codex:<fingerprint>`);
    /// `None` when the source gives nothing that survives a copy (then the row is the
    /// session's own).
    pub response_key: Option<String>,
    /// Which kind of record carried it.
    pub via: RecordedVia,
    /// For a progress record: the native id of the subagent session it streams.
    pub subagent_native_id: Option<String>,
    /// Index of the message it belongs to, when known (never for progress records).
    pub message_index: Option<usize>,
    /// The provider's request id.
    pub request_id: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Tokens.
    pub tokens: Tokens,
    /// When.
    pub occurred_at_ms: Option<i64>,
    /// Index of the source record it came from.
    pub event_index: usize,
}

impl UsageDraft {
    /// A response's usage as a transcript records it under `key`, tied to no message.
    pub fn keyed(
        key: String,
        model: Option<String>,
        tokens: Tokens,
        occurred_at_ms: Option<i64>,
        event_index: usize,
    ) -> Self {
        UsageDraft {
            response_key: Some(key),
            via: RecordedVia::Transcript,
            subagent_native_id: None,
            message_index: None,
            request_id: None,
            model,
            tokens,
            occurred_at_ms,
            event_index,
        }
    }
}

/// A turn boundary written by the source itself (Codex task markers).
#[derive(Debug, Clone)]
pub struct TurnMarker {
    /// The source's turn id.
    pub turn_id: String,
    /// Index of the `task_started` record.
    pub start_event: usize,
    /// Time of the start.
    pub started_at_ms: Option<i64>,
    /// Time of the `task_complete` record, if one exists.
    pub completed_at_ms: Option<i64>,
    /// Whether a completion marker exists.
    pub completed: bool,
}

/// A context boundary read from the source (session start instructions, compaction).
#[derive(Debug, Clone)]
pub struct SnapshotDraft {
    /// `session_start`, `subagent_start` or `compaction`.
    pub boundary: &'static str,
    /// How context carries over (`fresh`, `summary`, `inherited`).
    pub inheritance_mode: Option<&'static str>,
    /// Which part of the context (`instructions`, `summary`, `prompt`).
    pub segment: Option<&'static str>,
    /// The text.
    pub text: String,
    /// When.
    pub occurred_at_ms: Option<i64>,
}

impl SnapshotDraft {
    /// A context compaction whose summary the model is handed next (empty when the source
    /// gives it later or not at all).
    pub fn compaction(summary: String, occurred_at_ms: Option<i64>) -> Self {
        SnapshotDraft {
            boundary: "compaction",
            inheritance_mode: Some("summary"),
            segment: Some("summary"),
            text: summary,
            occurred_at_ms,
        }
    }
}

/// A hand-off to a subagent seen in the parent session.
#[derive(Debug, Clone)]
pub struct DelegationDraft {
    /// Index of the parent message holding the tool call.
    pub message_index: usize,
    /// The tool call id.
    pub tool_id: String,
    /// The child session's native id, when the source names it.
    pub child_native_id: Option<String>,
    /// The instruction handed over.
    pub instruction: Option<String>,
    /// Model requested in the call.
    pub requested_model: Option<String>,
    /// Result status reported back (`completed`, ...).
    pub result_status: Option<String>,
    /// When.
    pub occurred_at_ms: Option<i64>,
}

/// One session as an adapter read it.
#[derive(Debug, Clone)]
pub struct SessionDraft {
    /// Origin.
    pub origin: Origin,
    /// The id the source gives (stable across re-ingest).
    pub native_id: String,
    /// The parent session's native id (subagents, sidechains).
    pub parent_native_id: Option<String>,
    /// continuation / sidechain / fork / subagent / compaction.
    pub branch_type: Option<&'static str>,
    /// Agent name or id for subagent runs.
    pub agent: Option<String>,
    /// Title.
    pub title: Option<String>,
    /// Working directory.
    pub cwd: Option<String>,
    /// Git remote URL, when the source gives one.
    pub git_remote: Option<String>,
    /// Git branch.
    pub git_branch: Option<String>,
    /// Main model (the most frequent assistant model if the adapter leaves it empty).
    pub model: Option<String>,
    /// Creation time.
    pub created_at: Option<i64>,
    /// Last update time.
    pub updated_at: Option<i64>,
    /// Cost the source reports.
    pub reported_cost_usd: Option<f64>,
    /// Messages in order.
    pub messages: Vec<MessageDraft>,
    /// Source records in order.
    pub events: Vec<EventDraft>,
    /// Usage rows (already de-duplicated).
    pub usage: Vec<UsageDraft>,
    /// Turn markers written by the source, if any.
    pub turn_markers: Vec<TurnMarker>,
    /// Whether the source writes turn markers at all (then they decide commitment).
    pub has_turn_markers: bool,
    /// Context boundaries.
    pub snapshots: Vec<SnapshotDraft>,
    /// Hand-offs to subagents.
    pub delegations: Vec<DelegationDraft>,
    /// Where a later read of the same file, grown, may continue instead of reading it whole
    /// (adapters that can resume fill it; `tail` picks one).
    pub resume: Option<Resume>,
}

/// The places in a session's records where its reading could stop and later continue: each turn
/// start whose adapter state is known, and the spans of records a resumed read must not cut.
#[derive(Debug, Clone, Default)]
pub struct Resume {
    /// Candidate cuts, in record order.
    pub checkpoints: Vec<Checkpoint>,
    /// `(first, last)` record indexes of one message or response read from several records: no
    /// cut may fall after `first` and at or before `last`.
    pub spans: Vec<(usize, usize)>,
}

/// What a read that continues a session needs besides the records: where it continues.
pub struct Continue<'a> {
    /// The adapter's state at the cut, as the archive keeps it (`Null`: no cut yet).
    pub state: &'a serde_json::Value,
    /// Records before the cut (the first record's index in the session).
    pub events: usize,
    /// How many of the records given were archived already (the rest are new).
    pub archived: usize,
    /// For each archived record, the provenance the archive holds for it (global indexes).
    pub archived_sources: Vec<Vec<usize>>,
}

impl Continue<'_> {
    /// The adapter's state at the cut, read as `T`.
    pub fn carried<T: serde::de::DeserializeOwned>(&self) -> Result<T, Whole> {
        if self.state.is_null() {
            return Err(Whole("no place to continue from yet"));
        }
        serde_json::from_value(self.state.clone())
            .map_err(|_| Whole("the archived read state is of another version"))
    }
}

/// Why a continued read gives up (the file is then read whole).
#[derive(Debug)]
pub struct Whole(pub &'static str);

/// The state of a session's reading just before one of its records (one that opens a message).
#[derive(Clone)]
pub struct Checkpoint {
    /// The record's index in this read (local to it).
    pub event: usize,
    /// Messages read before it.
    pub messages: usize,
    /// Usage drafts before it.
    pub usage: usize,
    /// The adapter's own state there, opaque to everything but the adapter.
    pub state: std::sync::Arc<dyn std::any::Any + Send + Sync>,
}

impl std::fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field("event", &self.event)
            .field("messages", &self.messages)
            .field("usage", &self.usage)
            .finish_non_exhaustive()
    }
}

impl SessionDraft {
    /// Appends a source record of kind `kind` and returns its index in `events`.
    pub fn push_event(
        &mut self,
        kind: &str,
        time: Option<i64>,
        surface: Surface,
        payload: String,
    ) -> usize {
        self.events.push(EventDraft {
            kind: kind.to_string(),
            time,
            surface,
            payload,
            ..EventDraft::default()
        });
        self.events.len() - 1
    }

    /// An empty session of `origin` with `native_id`.
    pub fn new(origin: Origin, native_id: impl Into<String>) -> Self {
        SessionDraft {
            origin,
            native_id: native_id.into(),
            parent_native_id: None,
            branch_type: None,
            agent: None,
            title: None,
            cwd: None,
            git_remote: None,
            git_branch: None,
            model: None,
            created_at: None,
            updated_at: None,
            reported_cost_usd: None,
            messages: Vec::new(),
            events: Vec::new(),
            usage: Vec::new(),
            turn_markers: Vec::new(),
            has_turn_markers: false,
            snapshots: Vec::new(),
            delegations: Vec::new(),
            resume: None,
        }
    }

    /// The archive-wide session id, `origin:native_id`.
    pub fn session_id(&self) -> String {
        session_id(self.origin, &self.native_id)
    }
}

/// The archive-wide id of a session: `origin:native_id`.
pub fn session_id(origin: Origin, native_id: &str) -> String {
    format!("{}:{}", origin.as_str(), native_id)
}

/// A problem with one place in one input file; the rest of the file still ingests.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// The file.
    pub file: String,
    /// 1-based line number, when the problem is on a line.
    pub line: Option<usize>,
    /// Stable kind: invalid_json, invalid_utf8, truncated_line, unreadable, unsupported_format, ...
    pub kind: &'static str,
    /// What happened.
    pub reason: String,
}

/// Everything an adapter read from one file.
#[derive(Debug, Default)]
pub struct ParsedFile {
    /// Sessions in the file (a file may hold several: exports, inline sidechains).
    pub sessions: Vec<SessionDraft>,
    /// Records read (lines of JSONL, nodes or messages of JSON exports).
    pub records: usize,
    /// Per-line problems.
    pub diagnostics: Vec<Diagnostic>,
    /// Record types the adapter did not know, with counts; kept as raw events.
    pub unknown_records: std::collections::BTreeMap<String, usize>,
    /// The file is a known companion of an agent's transcripts that holds none (Qwen Code's
    /// subagent metadata): not read, and not reported as a problem.
    pub sidecar: bool,
}
