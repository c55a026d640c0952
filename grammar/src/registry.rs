//! The registry: every unit of the language and every field of every unit, declared once as data.
//!
//! The parser, the resolver, completions, "did you mean" and the generated field table in
//! `docs/language.md` all read these tables. A field names the archive column it reads
//! (`column`), or says how the lowering reaches it when it has no column of its own (`via` a
//! child unit, `any_of` several columns, `derived`, or a retrieval `lane`). This module owns no
//! parsing and no storage access.

use serde::Serialize;

/// One unit of the language (a row source): `sessions`, `messages`, ...
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnitId {
    /// Sessions (conversations, agent sessions, subagent sessions).
    Sessions,
    /// Logical messages.
    Messages,
    /// Content blocks of messages.
    Blocks,
    /// Tool calls paired with their results.
    Actions,
    /// File paths touched by a session's tool calls.
    Files,
    /// Tags, notes and imported claims.
    Assertions,
    /// Agent runs.
    Runs,
    /// Observed lifecycle events.
    ObservedEvents,
    /// Context boundaries.
    ContextSnapshots,
    /// Hand-offs to subagents.
    Delegations,
    /// Source records of committed turns.
    Events,
    /// Turns, from a user prompt to the next.
    Turns,
    /// Billed model responses.
    Usage,
}

/// How a field compares values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    /// Case-insensitive substring match.
    Substring,
    /// Exact (case-insensitive) equality; `field:(a|b)` matches any.
    Equality,
    /// Prefix match.
    Prefix,
    /// One of a closed set of values (`values`).
    Enum,
    /// A non-negative count: `f:>=N`, `f >= N`, `f between A and B`.
    Count,
    /// A number (integer or decimal), with the same comparisons as counts.
    Number,
    /// A time: `since:7d`, `until:2026-06-30`, `f >= DATE`, `f between DATE and DATE`.
    Date,
    /// `true` or `false`.
    Bool,
    /// A file path: substring match on path components.
    Path,
    /// A JSON array or object column: membership/substring match.
    Json,
    /// A semantic-vector leaf (`near:`, `semantic:`): needs embeddings.
    Semantic,
    /// A lineage seed (`lineage:id:<session>`).
    Lineage,
}

impl FieldKind {
    /// The stable lower-case name of the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldKind::Substring => "substring",
            FieldKind::Equality => "equality",
            FieldKind::Prefix => "prefix",
            FieldKind::Enum => "enum",
            FieldKind::Count => "count",
            FieldKind::Number => "number",
            FieldKind::Date => "date",
            FieldKind::Bool => "bool",
            FieldKind::Path => "path",
            FieldKind::Json => "json",
            FieldKind::Semantic => "semantic",
            FieldKind::Lineage => "lineage",
        }
    }

    /// Whether the kind takes ordered comparisons (`>=`, `between`).
    pub fn is_ordered(self) -> bool {
        matches!(self, FieldKind::Count | FieldKind::Number | FieldKind::Date)
    }

    /// Whether the kind is numeric (a metric when it has a column).
    pub fn is_numeric(self) -> bool {
        matches!(self, FieldKind::Count | FieldKind::Number)
    }
}

/// Where a field's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Source {
    /// A column of the unit's own table.
    Column {
        /// The column name.
        column: &'static str,
    },
    /// A column of another unit's table, joined on the owning session (or message).
    Via {
        /// The unit whose table holds the column.
        unit: UnitId,
        /// The column in that table.
        column: &'static str,
    },
    /// Any of several columns of the unit's own table (matches when one matches).
    AnyOf {
        /// The columns searched.
        columns: &'static [&'static str],
    },
    /// Computed from columns by a rule the lowering owns (described in the text).
    Derived {
        /// What the lowering computes.
        rule: &'static str,
    },
    /// A retrieval lane, not a column (`near:`, `semantic:`, `lineage:`, `lane:`).
    Lane,
}

impl Source {
    /// The column of the unit's own table, when the field has one.
    pub fn column(&self) -> Option<&'static str> {
        match self {
            Source::Column { column } => Some(column),
            _ => None,
        }
    }

    /// A short human rendering: `word_count`, `via actions.tool_name`, ...
    pub fn describe(&self) -> String {
        match self {
            Source::Column { column } => (*column).to_string(),
            Source::Via { unit, column } => format!("via {}.{}", unit_def(*unit).table, column),
            Source::AnyOf { columns } => format!("any of {}", columns.join(", ")),
            Source::Derived { rule } => format!("derived: {rule}"),
            Source::Lane => "retrieval lane".to_string(),
        }
    }
}

/// One field of a unit.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Field {
    /// The name used in the language (`words`, `role`).
    pub name: &'static str,
    /// How values compare.
    pub kind: FieldKind,
    /// Where the value comes from.
    pub source: Source,
    /// For `Enum` fields: the accepted values.
    pub values: &'static [&'static str],
    /// Whether `group by` accepts the field.
    pub groupable: bool,
    /// Whether the field is a metric (`sum|avg|min|max|median|stddev|pNN:F`).
    pub metric: bool,
    /// One line saying what the field means.
    pub doc: &'static str,
    /// One clause using the field (`role:assistant`).
    pub example: &'static str,
}

impl Field {
    const fn new(
        name: &'static str,
        kind: FieldKind,
        source: Source,
        doc: &'static str,
        example: &'static str,
    ) -> Field {
        let own_column = matches!(source, Source::Column { .. });
        let numeric = matches!(kind, FieldKind::Count | FieldKind::Number | FieldKind::Bool);
        Field {
            name,
            kind,
            source,
            values: &[],
            groupable: false,
            metric: own_column && numeric,
            doc,
            example,
        }
    }

    const fn group(mut self) -> Field {
        self.groupable = true;
        self
    }

    const fn vals(mut self, values: &'static [&'static str]) -> Field {
        self.values = values;
        self
    }

    /// Whether the field is a boolean column (allowed in sum/avg only, as 0/1).
    pub fn is_bool(&self) -> bool {
        self.kind == FieldKind::Bool
    }
}

/// One unit with its fields.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Unit {
    /// Which unit.
    pub id: UnitId,
    /// Plural name in the language (`observed-events`).
    pub name: &'static str,
    /// Singular name in the language (`observed-event`), used by `exists`.
    pub singular: &'static str,
    /// The archive table (`observed_events`).
    pub table: &'static str,
    /// One line saying what a row is.
    pub doc: &'static str,
    /// The column `time`, `sort by time` and `group by time:...` read, if rows have a time.
    pub time_column: Option<&'static str>,
    /// The column linking a row to its owning session, if any.
    pub session_column: Option<&'static str>,
    /// Every column of the archive table (what `with unit(cols)` and `select` may name).
    pub columns: &'static [&'static str],
    /// The fields of the unit.
    pub fields: &'static [Field],
    /// Fields accepted inside a projection bracket `with unit[field:value]`.
    pub bracket_fields: &'static [&'static str],
    /// Whether `~"..."` full-text leaves apply to the unit.
    pub fts: bool,
}

impl Unit {
    /// The field named `name`, if the unit has it.
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The names of all fields of the unit, sorted.
    pub fn field_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.fields.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names
    }

    /// Whether `column` is a column of the unit's table.
    pub fn has_column(&self, column: &str) -> bool {
        self.columns.contains(&column)
    }
}

use FieldKind as K;

const fn col(column: &'static str) -> Source {
    Source::Column { column }
}

const fn via(unit: UnitId, column: &'static str) -> Source {
    Source::Via { unit, column }
}

const ORIGINS: &[&str] = &[
    "claude-code-session",
    "codex-session",
    "chatgpt-export",
    "claude-ai-export",
    "gemini-cli-session",
    "aistudio-drive",
];
const SEMANTIC_TYPES: &[&str] = &[
    "file_read",
    "file_write",
    "file_edit",
    "shell",
    "search",
    "web",
    "agent",
    "subagent",
    "git",
    "other",
];
const MESSAGE_ROLES: &[&str] = &["user", "assistant", "system", "tool"];
const MESSAGE_TYPES: &[&str] = &[
    "text",
    "thinking",
    "tool_use",
    "tool_result",
    "code",
    "image",
    "document",
    "summary",
];
const BLOCK_TYPES: &[&str] = &[
    "text",
    "thinking",
    "tool_use",
    "tool_result",
    "image",
    "code",
    "document",
];
const BRANCH_TYPES: &[&str] = &[
    "continuation",
    "sidechain",
    "fork",
    "subagent",
    "compaction",
];
const HAS_VALUES: &[&str] = &["paste", "tools", "thinking", "summary", "attachments"];
const LANES: &[&str] = &["auto", "dialogue", "actions", "hybrid", "semantic"];
const ASSERTION_STATUS: &[&str] = &[
    "active",
    "candidate",
    "accepted",
    "rejected",
    "deferred",
    "superseded",
    "deleted",
    "inactive",
];
const FOLLOWUPS: &[&str] = &["retry", "change", "silent_proceed", "stop"];
const RUN_ROLES: &[&str] = &["main", "subagent"];
const BOUNDARIES: &[&str] = &["session_start", "subagent_start", "compaction"];
const MAPPING_STATES: &[&str] = &["resolved", "unresolved"];
const SURFACES: &[&str] = &["current", "shadowed", "log-only"];

use UnitId as U;

const SESSION_FIELDS: &[Field] = &[
    Field::new("repo", K::Substring, col("repo"), "repository name (last path component of the git remote or cwd)", "repo:acme").group(),
    Field::new("origin", K::Equality, col("origin"), "source format the session came from (claude-code-session, codex-session, ...)", "origin:codex-session").group(),
    Field::new("tag", K::Json, col("tags"), "a tag of the session (JSON array membership)", "tag:review").group(),
    Field::new("path", K::Path, via(U::Files, "path"), "a file path the session's tool calls touched (substring)", "path:src/query"),
    Field::new("cwd", K::Prefix, col("cwd"), "working-directory prefix", "cwd:/work/acme").group(),
    Field::new("tool", K::Equality, via(U::Actions, "tool_name"), "a tool the session used", "tool:Bash"),
    Field::new("action", K::Enum, via(U::Actions, "semantic_type"), "a semantic action category the session performed", "action:file_edit").vals(SEMANTIC_TYPES),
    Field::new("has", K::Enum, Source::Derived { rule: "paste/tools/thinking → paste_messages/tool_use_messages/thinking_messages > 0; summary/attachments → block types" }, "content or evidence present in the session", "has:tools").vals(HAS_VALUES),
    Field::new("id", K::Prefix, col("session_id"), "session id or a prefix of it", "id:codex-session:abc"),
    Field::new("session", K::Equality, col("session_id"), "exact session id (alias of id, exact match)", "session:codex-session:abc"),
    Field::new("native_id", K::Equality, col("native_id"), "the source's own session id", "native_id:abc"),
    Field::new("root", K::Equality, col("root_session_id"), "root session of the session's lineage tree", "root:codex-session:abc").group(),
    Field::new("parent", K::Equality, col("parent_session_id"), "parent session id (subagents, continuations)", "parent:codex-session:abc").group(),
    Field::new("branch_type", K::Enum, col("branch_type"), "how the session branched from its parent", "branch_type:subagent").vals(BRANCH_TYPES).group(),
    Field::new("title", K::Substring, col("title"), "session title substring", "title:refactor"),
    Field::new("owner", K::Equality, col("owner"), "owner given at ingest", "owner:alice").group(),
    Field::new("model", K::Equality, col("model"), "main model of the session", "model:claude-opus-4").group(),
    Field::new("git_branch", K::Equality, col("git_branch"), "git branch the session worked on", "git_branch:main").group(),
    Field::new("since", K::Date, col("created_at"), "sessions created on or after a time (ISO date or relative: 7d, 12h, 2w)", "since:7d"),
    Field::new("until", K::Date, col("created_at"), "sessions created on or before a time", "until:2026-06-30"),
    Field::new("date", K::Date, col("created_at"), "session creation time, with comparisons and between", "date:>=2026-01-02"),
    Field::new("time", K::Date, col("created_at"), "session creation time (what sort by time and time buckets read)", "time >= 2026-01-01"),
    Field::new("updated", K::Date, col("updated_at"), "time of the session's last record", "updated:>=2026-06-01"),
    Field::new("contains", K::Substring, via(U::Blocks, "text"), "exact content substring in any block of the session", "contains:\"schema migration\""),
    Field::new("messages", K::Count, col("message_count"), "number of messages", "messages:>=10"),
    Field::new("words", K::Count, col("word_count"), "number of words in the session's messages", "words:<=2000"),
    Field::new("user_messages", K::Count, col("user_messages"), "messages with role user (provider-role count)", "user_messages >= 2"),
    Field::new("authored_user_messages", K::Count, col("authored_user_messages"), "user messages a person typed", "authored_user_messages >= 2"),
    Field::new("assistant_messages", K::Count, col("assistant_messages"), "assistant messages (API responses)", "assistant_messages >= 1"),
    Field::new("system_messages", K::Count, col("system_messages"), "system messages", "system_messages = 0"),
    Field::new("tool_messages", K::Count, col("tool_messages"), "tool messages", "tool_messages = 0"),
    Field::new("tool_use_messages", K::Count, col("tool_use_messages"), "messages carrying a tool call", "tool_use_messages >= 1"),
    Field::new("thinking_messages", K::Count, col("thinking_messages"), "messages carrying thinking", "thinking_messages >= 1"),
    Field::new("paste_messages", K::Count, col("paste_messages"), "messages carrying paste evidence", "paste_messages = 0"),
    Field::new("user_words", K::Count, col("user_words"), "words in user messages", "user_words >= 100"),
    Field::new("authored_user_words", K::Count, col("authored_user_words"), "words a person typed", "authored_user_words >= 100"),
    Field::new("assistant_words", K::Count, col("assistant_words"), "words in assistant messages", "assistant_words between 500 and 2000"),
    Field::new("duration_ms", K::Number, col("duration_ms"), "reported session duration in milliseconds", "duration_ms >= 60000"),
    Field::new("input_tokens", K::Count, col("input_tokens"), "input tokens, excluding cache reads and writes", "input_tokens >= 1000"),
    Field::new("output_tokens", K::Count, col("output_tokens"), "output tokens (including reasoning)", "output_tokens >= 1000"),
    Field::new("cache_read_tokens", K::Count, col("cache_read_tokens"), "tokens read from the prompt cache", "cache_read_tokens >= 1000"),
    Field::new("cache_write_tokens", K::Count, col("cache_write_tokens"), "tokens written to the prompt cache", "cache_write_tokens >= 1000"),
    Field::new("reported_cost_usd", K::Number, col("reported_cost_usd"), "cost in USD, only when the source reports one", "reported_cost_usd >= 1.5"),
    Field::new("source_path", K::Path, col("source_path"), "the transcript file the session was read from", "source_path:projects/acme"),
    Field::new("near", K::Semantic, Source::Lane, "vector similarity to a text or a session (near:\"text\", near:text:X, near:id:SESSION); needs embeddings", "near:\"semantic search\""),
    Field::new("semantic", K::Semantic, Source::Lane, "vector similarity to a text; needs embeddings", "semantic:\"query compiler failure\""),
    Field::new("lineage", K::Lineage, Source::Lane, "sessions sharing lineage topology with a seed session", "lineage:id:codex-session:abc"),
    Field::new("lane", K::Enum, Source::Lane, "retrieval lane for ranked text search", "lane:dialogue").vals(LANES),
];

const MESSAGE_FIELDS: &[Field] = &[
    Field::new(
        "id",
        K::Prefix,
        col("message_id"),
        "message id or a prefix of it",
        "id:codex-session:abc:m1",
    ),
    Field::new(
        "role",
        K::Enum,
        col("role"),
        "author role",
        "role:assistant",
    )
    .vals(MESSAGE_ROLES)
    .group(),
    Field::new(
        "type",
        K::Enum,
        col("type"),
        "message type: what its content mainly is",
        "type:text",
    )
    .vals(MESSAGE_TYPES)
    .group(),
    Field::new(
        "material_origin",
        K::Equality,
        col("material_origin"),
        "where the material came from (typed, paste, tool, ...)",
        "material_origin:paste",
    )
    .group(),
    Field::new(
        "model",
        K::Equality,
        col("model"),
        "model that produced the message",
        "model:gpt-5",
    )
    .group(),
    Field::new(
        "text",
        K::Substring,
        col("text"),
        "message text substring",
        "text:timeout",
    ),
    Field::new(
        "words",
        K::Count,
        col("word_count"),
        "whitespace-separated words of the text blocks",
        "words >= 100",
    ),
    Field::new(
        "position",
        K::Count,
        col("position"),
        "position of the message in its session",
        "position <= 5",
    ),
    Field::new(
        "time",
        K::Date,
        col("occurred_at_ms"),
        "when the message occurred",
        "time >= 2026-01-01",
    ),
    Field::new(
        "input_tokens",
        K::Count,
        col("input_tokens"),
        "input tokens of the response",
        "input_tokens >= 1000",
    ),
    Field::new(
        "output_tokens",
        K::Count,
        col("output_tokens"),
        "output tokens of the response",
        "output_tokens >= 1000",
    ),
    Field::new(
        "cache_read_tokens",
        K::Count,
        col("cache_read_tokens"),
        "cache-read tokens of the response",
        "cache_read_tokens >= 1000",
    ),
    Field::new(
        "cache_write_tokens",
        K::Count,
        col("cache_write_tokens"),
        "cache-write tokens of the response",
        "cache_write_tokens >= 1000",
    ),
    Field::new(
        "duration_ms",
        K::Number,
        col("duration_ms"),
        "stored per-message duration in milliseconds",
        "duration_ms between 2000 and 3000",
    ),
    Field::new(
        "stop_reason",
        K::Equality,
        col("stop_reason"),
        "why the model stopped",
        "stop_reason:end_turn",
    )
    .group(),
    Field::new(
        "is_sidechain",
        K::Bool,
        col("is_sidechain"),
        "message of an inline sidechain",
        "is_sidechain:true",
    )
    .group(),
    Field::new(
        "turn",
        K::Equality,
        col("turn_id"),
        "turn the message belongs to",
        "turn:t1",
    )
    .group(),
    Field::new(
        "turn_committed",
        K::Bool,
        col("turn_committed"),
        "whether the message's turn completed",
        "turn_committed:true",
    )
    .group(),
    Field::new(
        "tool",
        K::Equality,
        via(U::Blocks, "tool_name"),
        "a tool called in the message",
        "tool:Bash",
    ),
    Field::new(
        "action",
        K::Enum,
        via(U::Actions, "semantic_type"),
        "a semantic action the message performed",
        "action:shell",
    )
    .vals(SEMANTIC_TYPES),
    Field::new(
        "command",
        K::Substring,
        via(U::Blocks, "tool_command"),
        "a shell command in the message",
        "command:pytest",
    ),
    Field::new(
        "path",
        K::Path,
        via(U::Blocks, "tool_path"),
        "a file path a tool call in the message touched",
        "path:src/query",
    ),
    Field::new(
        "output",
        K::Substring,
        via(U::Actions, "output_text"),
        "output of the message's tool calls",
        "output:failed",
    ),
];

const BLOCK_FIELDS: &[Field] = &[
    Field::new(
        "id",
        K::Prefix,
        col("block_id"),
        "block id or a prefix of it",
        "id:codex-session:abc:m1:0",
    ),
    Field::new("type", K::Enum, col("type"), "block type", "type:code")
        .vals(BLOCK_TYPES)
        .group(),
    Field::new(
        "text",
        K::Substring,
        col("text"),
        "block text substring",
        "text:sqlite",
    ),
    Field::new(
        "tool",
        K::Equality,
        col("tool_name"),
        "tool name of a tool_use block",
        "tool:Bash",
    )
    .group(),
    Field::new(
        "tool_id",
        K::Equality,
        col("tool_id"),
        "tool call id",
        "tool_id:toolu_1",
    ),
    Field::new(
        "command",
        K::Substring,
        col("tool_command"),
        "shell command of the tool call",
        "command:pytest",
    ),
    Field::new(
        "path",
        K::Path,
        col("tool_path"),
        "file path of the tool call",
        "path:README.md",
    )
    .group(),
    Field::new(
        "input",
        K::Json,
        col("tool_input"),
        "raw tool input JSON (substring)",
        "input:file_path",
    ),
    Field::new(
        "is_error",
        K::Bool,
        col("is_error"),
        "tool result reported an error",
        "is_error:true",
    )
    .group(),
    Field::new(
        "exit_code",
        K::Number,
        col("exit_code"),
        "exit code of a shell tool result",
        "exit_code != 0",
    )
    .group(),
    Field::new(
        "position",
        K::Count,
        col("position"),
        "position of the block in its message",
        "position = 0",
    ),
    Field::new(
        "time",
        K::Date,
        col("occurred_at_ms"),
        "when the block occurred",
        "time >= 2026-01-01",
    ),
    Field::new(
        "action",
        K::Enum,
        via(U::Actions, "semantic_type"),
        "semantic action of the block's tool call",
        "action:file_edit",
    )
    .vals(SEMANTIC_TYPES),
];

const ACTION_FIELDS: &[Field] = &[
    Field::new(
        "id",
        K::Prefix,
        col("action_id"),
        "action id or a prefix of it",
        "id:codex-session:abc",
    ),
    Field::new(
        "tool",
        K::Equality,
        col("tool_name"),
        "tool name (Bash, Edit, ...)",
        "tool:shell",
    )
    .group(),
    Field::new(
        "action",
        K::Enum,
        col("semantic_type"),
        "semantic action category",
        "action:file_edit",
    )
    .vals(SEMANTIC_TYPES)
    .group(),
    Field::new(
        "type",
        K::Enum,
        col("semantic_type"),
        "alias of action",
        "type:shell",
    )
    .vals(SEMANTIC_TYPES)
    .group(),
    Field::new(
        "command",
        K::Substring,
        col("tool_command"),
        "shell command substring",
        "command:pytest",
    ),
    Field::new(
        "path",
        K::Path,
        col("tool_path"),
        "file path the tool touched",
        "path:src/query",
    )
    .group(),
    Field::new(
        "output",
        K::Substring,
        col("output_text"),
        "tool output substring",
        "output:failed",
    ),
    Field::new(
        "text",
        K::Substring,
        Source::AnyOf {
            columns: &["tool_input", "tool_command", "tool_path", "output_text"],
        },
        "raw tool input JSON, command, path or output (unindexed substring)",
        "text:\"needle\"",
    ),
    Field::new(
        "is_error",
        K::Bool,
        col("is_error"),
        "tool result reported an error",
        "is_error:true",
    )
    .group(),
    Field::new(
        "exit_code",
        K::Number,
        col("exit_code"),
        "exit code of a shell action",
        "exit_code != 0",
    )
    .group(),
    Field::new(
        "duration_ms",
        K::Number,
        col("duration_ms"),
        "time from tool call to result in milliseconds",
        "duration_ms >= 1000",
    ),
    Field::new(
        "followup_class",
        K::Enum,
        col("followup_class"),
        "what the next assistant step did after an error",
        "followup_class:silent_proceed",
    )
    .vals(FOLLOWUPS)
    .group(),
    Field::new(
        "time",
        K::Date,
        col("occurred_at_ms"),
        "when the tool was called",
        "time >= 2026-01-01",
    ),
    Field::new(
        "turn",
        K::Equality,
        col("turn_id"),
        "turn the action belongs to",
        "turn:t1",
    )
    .group(),
    Field::new(
        "turn_committed",
        K::Bool,
        col("turn_committed"),
        "whether the action's turn completed",
        "turn_committed:false",
    )
    .group(),
];

const FILE_FIELDS: &[Field] = &[
    Field::new(
        "path",
        K::Path,
        col("path"),
        "normalized file path",
        "path:src/query/parser.py",
    )
    .group(),
    Field::new(
        "action_count",
        K::Count,
        col("action_count"),
        "actions that touched the path in the session",
        "action_count >= 3",
    ),
    Field::new(
        "first_seen",
        K::Date,
        col("first_seen_ms"),
        "first time the path was touched",
        "first_seen >= 2026-01-01",
    ),
    Field::new(
        "last_seen",
        K::Date,
        col("last_seen_ms"),
        "last time the path was touched",
        "last_seen >= 2026-01-01",
    ),
    Field::new(
        "time",
        K::Date,
        col("first_seen_ms"),
        "first time the path was touched",
        "time >= 2026-01-01",
    ),
    Field::new(
        "action",
        K::Enum,
        via(U::Actions, "semantic_type"),
        "a semantic action on the path",
        "action:file_edit",
    )
    .vals(SEMANTIC_TYPES),
    Field::new(
        "type",
        K::Enum,
        via(U::Actions, "semantic_type"),
        "alias of action",
        "type:file_read",
    )
    .vals(SEMANTIC_TYPES),
    Field::new(
        "tool",
        K::Equality,
        via(U::Actions, "tool_name"),
        "a tool that touched the path",
        "tool:Edit",
    ),
    Field::new(
        "command",
        K::Substring,
        via(U::Actions, "tool_command"),
        "a command that touched the path",
        "command:sed",
    ),
    Field::new(
        "text",
        K::Substring,
        via(U::Actions, "tool_input"),
        "tool input of an action on the path",
        "text:needle",
    ),
];

const ASSERTION_FIELDS: &[Field] = &[
    Field::new(
        "id",
        K::Prefix,
        col("assertion_id"),
        "assertion id or a prefix of it",
        "id:a1",
    ),
    Field::new(
        "kind",
        K::Equality,
        col("kind"),
        "assertion kind (tag, note, decision, caveat, ...)",
        "kind:decision",
    )
    .group(),
    Field::new("key", K::Equality, col("key"), "assertion key", "key:owner").group(),
    Field::new(
        "value",
        K::Substring,
        col("value"),
        "assertion value",
        "value:alice",
    ),
    Field::new(
        "text",
        K::Substring,
        col("body_text"),
        "assertion body substring",
        "text:review",
    ),
    Field::new(
        "body",
        K::Substring,
        col("body_text"),
        "alias of text",
        "body:review",
    ),
    Field::new(
        "target",
        K::Prefix,
        col("target_ref"),
        "ref the assertion is about",
        "target:session:codex-session:abc",
    )
    .group(),
    Field::new(
        "target_ref",
        K::Prefix,
        col("target_ref"),
        "alias of target",
        "target_ref:session:codex-session:abc",
    )
    .group(),
    Field::new(
        "scope",
        K::Prefix,
        col("scope_ref"),
        "scope ref of the assertion",
        "scope:repo:acme",
    )
    .group(),
    Field::new(
        "scope_ref",
        K::Prefix,
        col("scope_ref"),
        "alias of scope",
        "scope_ref:repo:acme",
    )
    .group(),
    Field::new(
        "author",
        K::Equality,
        col("author_ref"),
        "who wrote the assertion",
        "author:user",
    )
    .group(),
    Field::new(
        "author_ref",
        K::Equality,
        col("author_ref"),
        "alias of author",
        "author_ref:user",
    )
    .group(),
    Field::new(
        "author_kind",
        K::Equality,
        col("author_kind"),
        "kind of author (user, agent, ...)",
        "author_kind:user",
    )
    .group(),
    Field::new(
        "status",
        K::Enum,
        col("status"),
        "lifecycle status",
        "status:active",
    )
    .vals(ASSERTION_STATUS)
    .group(),
    Field::new(
        "visibility",
        K::Equality,
        col("visibility"),
        "visibility (private, shared, ...)",
        "visibility:private",
    )
    .group(),
    Field::new(
        "evidence",
        K::Json,
        col("evidence_refs"),
        "an evidence ref of the assertion",
        "evidence:message:abc",
    ),
    Field::new(
        "time",
        K::Date,
        col("created_at_ms"),
        "when the assertion was created",
        "time >= 2026-01-01",
    ),
    Field::new(
        "updated",
        K::Date,
        col("updated_at_ms"),
        "when the assertion last changed",
        "updated >= 2026-01-01",
    ),
];

const RUN_FIELDS: &[Field] = &[
    Field::new("run", K::Equality, col("run_id"), "run id", "run:r1"),
    Field::new(
        "role",
        K::Enum,
        col("role"),
        "main run or subagent run",
        "role:subagent",
    )
    .vals(RUN_ROLES)
    .group(),
    Field::new(
        "agent",
        K::Equality,
        col("agent"),
        "agent name",
        "agent:worker",
    )
    .group(),
    Field::new(
        "status",
        K::Equality,
        col("status"),
        "run status (completed, failed, ...)",
        "status:completed",
    )
    .group(),
    Field::new(
        "harness",
        K::Equality,
        col("harness"),
        "harness that ran the agent",
        "harness:claude-code",
    )
    .group(),
    Field::new(
        "cwd",
        K::Prefix,
        col("cwd"),
        "working-directory prefix",
        "cwd:/work/acme",
    )
    .group(),
    Field::new(
        "branch",
        K::Equality,
        col("git_branch"),
        "git branch",
        "branch:main",
    )
    .group(),
    Field::new(
        "git_branch",
        K::Equality,
        col("git_branch"),
        "alias of branch",
        "git_branch:main",
    )
    .group(),
    Field::new(
        "model",
        K::Equality,
        col("model"),
        "model of the run",
        "model:gpt-5",
    )
    .group(),
    Field::new(
        "time",
        K::Date,
        col("started_at_ms"),
        "when the run started",
        "time >= 2026-01-01",
    ),
    Field::new(
        "ended",
        K::Date,
        col("ended_at_ms"),
        "when the run ended",
        "ended >= 2026-01-01",
    ),
    Field::new(
        "origin",
        K::Equality,
        via(U::Sessions, "origin"),
        "origin of the run's session",
        "origin:codex-session",
    ),
    Field::new(
        "provider_origin",
        K::Equality,
        via(U::Sessions, "origin"),
        "alias of origin (the provider's source format)",
        "provider_origin:codex-session",
    ),
    Field::new(
        "title",
        K::Substring,
        via(U::Sessions, "title"),
        "title of the run's session",
        "title:refactor",
    ),
    Field::new(
        "native_session_id",
        K::Equality,
        via(U::Sessions, "native_id"),
        "the source's own id of the run's session",
        "native_session_id:abc",
    ),
    Field::new(
        "native_parent_session_id",
        K::Equality,
        via(U::Sessions, "parent_session_id"),
        "parent session of the run's session",
        "native_parent_session_id:codex-session:abc",
    ),
    Field::new(
        "parent",
        K::Equality,
        via(U::Sessions, "parent_session_id"),
        "alias of native_parent_session_id",
        "parent:codex-session:abc",
    ),
];

const OBSERVED_EVENT_FIELDS: &[Field] = &[
    Field::new(
        "id",
        K::Prefix,
        col("event_id"),
        "event id or a prefix of it",
        "id:e1",
    ),
    Field::new(
        "kind",
        K::Equality,
        col("kind"),
        "event kind (session_started, tool_finished)",
        "kind:tool_finished",
    )
    .group(),
    Field::new(
        "subject",
        K::Substring,
        col("subject"),
        "event subject",
        "subject:Bash",
    )
    .group(),
    Field::new(
        "subject_ref",
        K::Substring,
        col("subject"),
        "alias of subject",
        "subject_ref:Bash",
    )
    .group(),
    Field::new(
        "object",
        K::Substring,
        col("object"),
        "event object",
        "object:review",
    )
    .group(),
    Field::new(
        "object_ref",
        K::Substring,
        col("object"),
        "alias of object",
        "object_ref:review:example",
    )
    .group(),
    Field::new(
        "handler",
        K::Equality,
        col("handler"),
        "tool or MCP server that handled the event",
        "handler:mcp",
    )
    .group(),
    Field::new(
        "status",
        K::Equality,
        col("status"),
        "event status (ok, error)",
        "status:error",
    )
    .group(),
    Field::new(
        "delivery_state",
        K::Equality,
        col("delivery_state"),
        "delivery state of the event",
        "delivery_state:acted_on",
    )
    .group(),
    Field::new(
        "summary",
        K::Substring,
        col("summary"),
        "event summary substring",
        "summary:timeout",
    ),
    Field::new(
        "text",
        K::Substring,
        Source::AnyOf {
            columns: &["summary", "subject", "object"],
        },
        "summary, subject or object substring",
        "text:issue-2100",
    ),
    Field::new(
        "time",
        K::Date,
        col("occurred_at_ms"),
        "when the event occurred",
        "time >= 2026-01-01",
    ),
];

const CONTEXT_SNAPSHOT_FIELDS: &[Field] = &[
    Field::new(
        "id",
        K::Prefix,
        col("snapshot_id"),
        "snapshot id or a prefix of it",
        "id:s1",
    ),
    Field::new(
        "boundary",
        K::Enum,
        col("boundary"),
        "boundary kind",
        "boundary:session_start",
    )
    .vals(BOUNDARIES)
    .group(),
    Field::new(
        "inheritance_mode",
        K::Equality,
        col("inheritance_mode"),
        "how context was inherited (isolated, inherited, ...)",
        "inheritance_mode:isolated",
    )
    .group(),
    Field::new(
        "segment",
        K::Equality,
        col("segment"),
        "context segment",
        "segment:instructions",
    )
    .group(),
    Field::new(
        "run",
        K::Equality,
        col("run_id"),
        "run the snapshot belongs to",
        "run:r1",
    )
    .group(),
    Field::new(
        "text",
        K::Substring,
        col("text"),
        "snapshot text substring",
        "text:handoff",
    ),
    Field::new(
        "time",
        K::Date,
        col("occurred_at_ms"),
        "when the boundary occurred",
        "time >= 2026-01-01",
    ),
];

const DELEGATION_FIELDS: &[Field] = &[
    Field::new(
        "id",
        K::Prefix,
        col("delegation_id"),
        "delegation id or a prefix of it",
        "id:d1",
    ),
    Field::new(
        "instruction",
        K::Substring,
        col("instruction"),
        "instruction handed to the subagent",
        "instruction:review",
    ),
    Field::new(
        "text",
        K::Substring,
        col("instruction"),
        "alias of instruction",
        "text:review",
    ),
    Field::new(
        "mapping_state",
        K::Enum,
        col("mapping_state"),
        "whether the child session was found",
        "mapping_state:resolved",
    )
    .vals(MAPPING_STATES)
    .group(),
    Field::new(
        "result_status",
        K::Equality,
        col("result_status"),
        "result status of the delegation",
        "result_status:completed",
    )
    .group(),
    Field::new(
        "requested_model",
        K::Equality,
        col("requested_model"),
        "model the parent asked for",
        "requested_model:haiku",
    )
    .group(),
    Field::new(
        "dispatch_model",
        K::Equality,
        col("dispatch_model"),
        "model the dispatcher used",
        "dispatch_model:haiku",
    )
    .group(),
    Field::new(
        "child_model",
        K::Equality,
        col("child_model"),
        "model of the child session",
        "child_model:haiku",
    )
    .group(),
    Field::new(
        "child",
        K::Equality,
        col("child_session_id"),
        "child session id",
        "child:claude-code-session:abc",
    ),
    Field::new(
        "parent",
        K::Equality,
        col("parent_session_id"),
        "parent session id",
        "parent:claude-code-session:abc",
    )
    .group(),
    Field::new(
        "is_error",
        K::Bool,
        col("is_error"),
        "the delegation ended in an error",
        "is_error:false",
    )
    .group(),
    Field::new(
        "exit_code",
        K::Number,
        col("exit_code"),
        "exit code of the delegation",
        "exit_code != 0",
    )
    .group(),
    Field::new(
        "time",
        K::Date,
        col("occurred_at_ms"),
        "when the delegation happened",
        "time >= 2026-01-01",
    ),
];

const EVENT_FIELDS: &[Field] = &[
    Field::new(
        "type",
        K::Equality,
        col("type"),
        "source record type",
        "type:assistant",
    )
    .group(),
    Field::new(
        "seq",
        K::Count,
        col("seq"),
        "position of the record in its source file",
        "seq <= 10",
    ),
    Field::new(
        "surface",
        K::Enum,
        col("surface"),
        "event surface",
        "surface:current",
    )
    .vals(SURFACES)
    .group(),
    Field::new(
        "turn",
        K::Equality,
        col("turn_id"),
        "turn the record belongs to",
        "turn:t1",
    )
    .group(),
    Field::new(
        "payload",
        K::Json,
        col("payload"),
        "raw JSON payload substring (admin scope)",
        "payload:tool_use",
    ),
    Field::new(
        "time",
        K::Date,
        col("time"),
        "when the record was written",
        "time >= 2026-01-01",
    ),
];

const TURN_FIELDS: &[Field] = &[
    Field::new("turn", K::Equality, col("turn_id"), "turn id", "turn:t1"),
    Field::new(
        "committed",
        K::Bool,
        col("committed"),
        "whether the turn completed",
        "committed:false",
    )
    .group(),
    Field::new(
        "time",
        K::Date,
        col("started_at_ms"),
        "when the turn started",
        "time >= 2026-01-01",
    ),
    Field::new(
        "completed",
        K::Date,
        col("completed_at_ms"),
        "when the turn completed",
        "completed >= 2026-01-01",
    ),
];

const USAGE_FIELDS: &[Field] = &[
    Field::new(
        "model",
        K::Equality,
        col("model"),
        "model that was billed",
        "model:gpt-5",
    )
    .group(),
    Field::new(
        "request",
        K::Equality,
        col("request_id"),
        "API request id",
        "request:req_1",
    ),
    Field::new(
        "message",
        K::Equality,
        col("message_id"),
        "message the response belongs to",
        "message:m1",
    ),
    Field::new(
        "input_tokens",
        K::Count,
        col("input_tokens"),
        "input tokens, excluding cache reads and writes",
        "input_tokens >= 1000",
    ),
    Field::new(
        "output_tokens",
        K::Count,
        col("output_tokens"),
        "output tokens, including reasoning",
        "output_tokens >= 1000",
    ),
    Field::new(
        "reasoning_tokens",
        K::Count,
        col("reasoning_tokens"),
        "reasoning tokens",
        "reasoning_tokens >= 1",
    ),
    Field::new(
        "cache_read_tokens",
        K::Count,
        col("cache_read_tokens"),
        "cache-read tokens",
        "cache_read_tokens >= 1000",
    ),
    Field::new(
        "cache_write_tokens",
        K::Count,
        col("cache_write_tokens"),
        "cache-write tokens",
        "cache_write_tokens >= 1000",
    ),
    Field::new(
        "turn",
        K::Equality,
        col("turn_id"),
        "turn the response belongs to",
        "turn:t1",
    )
    .group(),
    Field::new(
        "turn_committed",
        K::Bool,
        col("turn_committed"),
        "whether the response's turn completed",
        "turn_committed:true",
    )
    .group(),
    Field::new(
        "time",
        K::Date,
        col("occurred_at_ms"),
        "when the response was billed",
        "time >= 2026-01-01",
    ),
];

/// Every unit, in registry order (the order "did you mean" and completions use).
pub const UNITS: &[Unit] = &[
    Unit {
        id: U::Sessions,
        name: "sessions",
        singular: "session",
        table: "sessions",
        doc: "one conversation or agent session (subagents are sessions of their own)",
        time_column: Some("created_at"),
        session_column: Some("session_id"),
        columns: &[
            "session_id",
            "origin",
            "native_id",
            "owner",
            "parent_session_id",
            "root_session_id",
            "branch_type",
            "title",
            "cwd",
            "repo",
            "git_branch",
            "model",
            "created_at",
            "updated_at",
            "duration_ms",
            "message_count",
            "word_count",
            "user_messages",
            "authored_user_messages",
            "assistant_messages",
            "system_messages",
            "tool_messages",
            "tool_use_messages",
            "thinking_messages",
            "paste_messages",
            "user_words",
            "authored_user_words",
            "assistant_words",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "reported_cost_usd",
            "tags",
            "source_path",
        ],
        fields: SESSION_FIELDS,
        bracket_fields: &[],
        fts: true,
    },
    Unit {
        id: U::Messages,
        name: "messages",
        singular: "message",
        table: "messages",
        doc: "one logical message: a user record or one assistant API response",
        time_column: Some("occurred_at_ms"),
        session_column: Some("session_id"),
        columns: &[
            "message_id",
            "session_id",
            "position",
            "role",
            "type",
            "material_origin",
            "model",
            "occurred_at_ms",
            "word_count",
            "text",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "duration_ms",
            "stop_reason",
            "is_sidechain",
            "turn_id",
            "turn_committed",
        ],
        fields: MESSAGE_FIELDS,
        bracket_fields: &["role", "type"],
        fts: true,
    },
    Unit {
        id: U::Blocks,
        name: "blocks",
        singular: "block",
        table: "blocks",
        doc: "one content block of a message (text, thinking, tool_use, tool_result, ...)",
        time_column: Some("occurred_at_ms"),
        session_column: Some("session_id"),
        columns: &[
            "block_id",
            "message_id",
            "session_id",
            "position",
            "type",
            "text",
            "tool_name",
            "tool_id",
            "tool_input",
            "tool_command",
            "tool_path",
            "is_error",
            "exit_code",
            "occurred_at_ms",
        ],
        fields: BLOCK_FIELDS,
        bracket_fields: &["type", "tool"],
        fts: true,
    },
    Unit {
        id: U::Actions,
        name: "actions",
        singular: "action",
        table: "actions",
        doc: "one tool call paired with its result",
        time_column: Some("occurred_at_ms"),
        session_column: Some("session_id"),
        columns: &[
            "action_id",
            "session_id",
            "message_id",
            "tool_use_block_id",
            "tool_result_block_id",
            "tool_name",
            "semantic_type",
            "tool_command",
            "tool_path",
            "tool_input",
            "output_text",
            "is_error",
            "exit_code",
            "occurred_at_ms",
            "duration_ms",
            "followup_class",
            "turn_id",
            "turn_committed",
        ],
        fields: ACTION_FIELDS,
        bracket_fields: &[
            "tool",
            "action",
            "type",
            "is_error",
            "exit_code",
            "followup_class",
        ],
        fts: false,
    },
    Unit {
        id: U::Files,
        name: "files",
        singular: "file",
        table: "files",
        doc: "one file path touched by a session's tool calls",
        time_column: Some("first_seen_ms"),
        session_column: Some("session_id"),
        columns: &[
            "session_id",
            "path",
            "action_count",
            "first_seen_ms",
            "last_seen_ms",
            "first_message_id",
            "first_tool_use_block_id",
            "last_tool_use_block_id",
        ],
        fields: FILE_FIELDS,
        bracket_fields: &["path"],
        fts: false,
    },
    Unit {
        id: U::Assertions,
        name: "assertions",
        singular: "assertion",
        table: "assertions",
        doc: "one tag, note or imported claim about a session or message",
        time_column: Some("created_at_ms"),
        session_column: None,
        columns: &[
            "assertion_id",
            "target_ref",
            "scope_ref",
            "kind",
            "key",
            "value",
            "body_text",
            "author_ref",
            "author_kind",
            "status",
            "visibility",
            "evidence_refs",
            "created_at_ms",
            "updated_at_ms",
        ],
        fields: ASSERTION_FIELDS,
        bracket_fields: &["kind", "status", "visibility", "author_kind"],
        fts: false,
    },
    Unit {
        id: U::Runs,
        name: "runs",
        singular: "run",
        table: "runs",
        doc: "one agent run: the main run of a session or a subagent run",
        time_column: Some("started_at_ms"),
        session_column: Some("session_id"),
        columns: &[
            "run_id",
            "session_id",
            "role",
            "agent",
            "status",
            "harness",
            "cwd",
            "git_branch",
            "model",
            "started_at_ms",
            "ended_at_ms",
        ],
        fields: RUN_FIELDS,
        bracket_fields: &["role", "status", "agent"],
        fts: false,
    },
    Unit {
        id: U::ObservedEvents,
        name: "observed-events",
        singular: "observed-event",
        table: "observed_events",
        doc: "one observed lifecycle event (session started, tool finished)",
        time_column: Some("occurred_at_ms"),
        session_column: Some("session_id"),
        columns: &[
            "event_id",
            "session_id",
            "kind",
            "subject",
            "object",
            "handler",
            "status",
            "delivery_state",
            "summary",
            "occurred_at_ms",
        ],
        fields: OBSERVED_EVENT_FIELDS,
        bracket_fields: &["kind", "status", "handler", "delivery_state"],
        fts: false,
    },
    Unit {
        id: U::ContextSnapshots,
        name: "context-snapshots",
        singular: "context-snapshot",
        table: "context_snapshots",
        doc: "one context boundary: session start, subagent start, compaction",
        time_column: Some("occurred_at_ms"),
        session_column: Some("session_id"),
        columns: &[
            "snapshot_id",
            "session_id",
            "run_id",
            "boundary",
            "inheritance_mode",
            "segment",
            "text",
            "occurred_at_ms",
        ],
        fields: CONTEXT_SNAPSHOT_FIELDS,
        bracket_fields: &["boundary", "segment"],
        fts: false,
    },
    Unit {
        id: U::Delegations,
        name: "delegations",
        singular: "delegation",
        table: "delegations",
        doc: "one hand-off from a parent session to a subagent",
        time_column: Some("occurred_at_ms"),
        session_column: Some("parent_session_id"),
        columns: &[
            "delegation_id",
            "parent_session_id",
            "parent_message_id",
            "child_session_id",
            "instruction",
            "requested_model",
            "dispatch_model",
            "child_model",
            "mapping_state",
            "result_status",
            "is_error",
            "exit_code",
            "occurred_at_ms",
        ],
        fields: DELEGATION_FIELDS,
        bracket_fields: &["mapping_state", "result_status", "is_error"],
        fts: false,
    },
    Unit {
        id: U::Events,
        name: "events",
        singular: "event",
        table: "events",
        doc: "source records of committed turns (and records outside any turn)",
        time_column: Some("time"),
        session_column: Some("session_id"),
        columns: &[
            "session_id",
            "seq",
            "type",
            "time",
            "surface",
            "turn_id",
            "payload",
        ],
        fields: EVENT_FIELDS,
        bracket_fields: &["type", "surface"],
        fts: false,
    },
    Unit {
        id: U::Turns,
        name: "turns",
        singular: "turn",
        table: "turns",
        doc: "one turn: from a user prompt to the next",
        time_column: Some("started_at_ms"),
        session_column: Some("session_id"),
        columns: &[
            "session_id",
            "turn_id",
            "started_at_ms",
            "completed_at_ms",
            "committed",
        ],
        fields: TURN_FIELDS,
        bracket_fields: &["committed"],
        fts: false,
    },
    Unit {
        id: U::Usage,
        name: "usage",
        singular: "usage",
        table: "usage",
        doc: "one billed model response, de-duplicated",
        time_column: Some("occurred_at_ms"),
        session_column: Some("session_id"),
        columns: &[
            "session_id",
            "message_id",
            "request_id",
            "model",
            "input_tokens",
            "output_tokens",
            "reasoning_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "occurred_at_ms",
            "turn_id",
            "turn_committed",
        ],
        fields: USAGE_FIELDS,
        bracket_fields: &["model"],
        fts: false,
    },
];

/// The unit definition for `id`.
pub fn unit_def(id: UnitId) -> &'static Unit {
    // UNITS is declared in UnitId order; fall back to a search if that ever changes.
    match UNITS.get(id as usize) {
        Some(u) if u.id == id => u,
        _ => UNITS.iter().find(|u| u.id == id).unwrap_or(&UNITS[0]),
    }
}

/// The unit whose plural or singular name is `name`.
pub fn unit_by_name(name: &str) -> Option<&'static Unit> {
    UNITS.iter().find(|u| u.name == name || u.singular == name)
}

/// The unit whose plural name is `name` (not the singular).
pub fn unit_by_plural(name: &str) -> Option<&'static Unit> {
    UNITS.iter().find(|u| u.name == name)
}

/// The unit whose singular name is `name`.
pub fn unit_by_singular(name: &str) -> Option<&'static Unit> {
    UNITS.iter().find(|u| u.singular == name)
}

/// The session fields usable as `session.<field>` from any unit (every session field except the
/// retrieval lanes).
pub fn session_scoped_field(name: &str) -> Option<&'static Field> {
    SESSION_FIELDS
        .iter()
        .find(|f| f.name == name && !matches!(f.source, Source::Lane))
}

/// The names usable after `session.`, sorted.
pub fn session_scoped_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = SESSION_FIELDS
        .iter()
        .filter(|f| !matches!(f.source, Source::Lane))
        .map(|f| f.name)
        .collect();
    names.sort_unstable();
    names
}

/// The fields usable in a `seq(step -> step)` step (resolved against `actions`).
pub const SEQ_FIELDS: &[&str] = &["action", "tool", "command", "path", "output", "text"];

/// Aggregate functions that take a field: `FN:FIELD`.
pub const AGG_FUNCTIONS: &[&str] = &[
    "count_distinct",
    "sum",
    "avg",
    "min",
    "max",
    "median",
    "stddev",
    "pNN",
];

/// Time buckets for `group by time:<bucket>`.
pub const TIME_BUCKETS: &[&str] = &["hour", "day", "week", "month", "year"];

/// Renders the field table of `docs/language.md` (markdown) from the registry.
pub fn render_field_table() -> String {
    let mut out = String::new();
    for unit in UNITS {
        out.push_str(&format!(
            "### {} (`{}`, table `{}`)\n\n{}.\n\n",
            unit.name, unit.singular, unit.table, unit.doc
        ));
        out.push_str("| field | kind | source | group | metric | meaning | example |\n");
        out.push_str("|---|---|---|---|---|---|---|\n");
        for f in unit.fields {
            let kind = if f.values.is_empty() {
                f.kind.as_str().to_string()
            } else {
                format!("{} ({})", f.kind.as_str(), f.values.join(", "))
            };
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {} | `{}` |\n",
                f.name,
                kind,
                f.source.describe(),
                if f.groupable { "yes" } else { "" },
                if f.metric { "yes" } else { "" },
                f.doc.replace('|', "\\|"),
                f.example.replace('|', "\\|"),
            ));
        }
        if !unit.bracket_fields.is_empty() {
            out.push_str(&format!(
                "\nBracket fields (`with {}[...]`): {}.\n",
                unit.name,
                unit.bracket_fields
                    .iter()
                    .map(|b| format!("`{b}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        out.push('\n');
    }
    out
}

/// Units and fields as JSON (for `quarry complete` and tools).
pub fn registry_json() -> serde_json::Value {
    serde_json::to_value(UNITS).unwrap_or(serde_json::Value::Null)
}

/// The origins quarry reads (documented values of `origin:`; other values are accepted).
pub const KNOWN_ORIGINS: &[&str] = ORIGINS;
