//! The tables themselves, as data. Columns are listed in the order the DDL declares them
//! (`archive/src/schema.rs`); a drift test compares them with a migrated archive.

use crate::ColumnType::{Boolean, Integer, Json, Real, Text, Time};
use crate::Visibility::{AdminOnly, Identity, Masked, Public};
use crate::{AuthorPrivate, Column, ColumnType, Link, Table, TableKind};

/// A `NOT NULL` column.
const fn req(name: &'static str, ty: ColumnType, doc: &'static str) -> Column {
    Column {
        name,
        ty,
        nullable: false,
        doc,
        visibility: Public,
    }
}

/// A nullable column.
const fn opt(name: &'static str, ty: ColumnType, doc: &'static str) -> Column {
    Column {
        name,
        ty,
        nullable: true,
        doc,
        visibility: Public,
    }
}

/// `column` with credentials masked for reader scopes.
const fn masked(column: Column) -> Column {
    Column {
        visibility: Masked,
        ..column
    }
}

/// `column` holds a person's identity, shown to a reader scope only where it is its own.
const fn identity(column: Column) -> Column {
    Column {
        visibility: Identity,
        ..column
    }
}

/// `column` holds `table.references`.
const fn link(column: &'static str, table: &'static str, references: &'static str) -> Link {
    Link {
        column,
        table,
        references,
    }
}

/// `column` holds a session id.
const fn to_session(column: &'static str) -> Link {
    link(column, "sessions", "session_id")
}

/// `column` holds a message id.
const fn to_message(column: &'static str) -> Link {
    link(column, "messages", "message_id")
}

/// `column` holds a block id.
const fn to_block(column: &'static str) -> Link {
    link(column, "blocks", "block_id")
}

/// Every table of the archive: the catalog in the order `quarry tables` lists it (tables and
/// views), then the bookkeeping tables, then the full-text index.
pub const TABLES: &[Table] = &[
    SESSIONS,
    MESSAGES,
    BLOCKS,
    ACTIONS,
    FILES,
    ASSERTIONS,
    RUNS,
    OBSERVED_EVENTS,
    CONTEXT_SNAPSHOTS,
    DELEGATIONS,
    EVENTS,
    EVENTS_RAW,
    TURNS,
    USAGE,
    META,
    SOURCE_FILES,
    SOURCE_RESUME,
    SNAPSHOT_CHANGES,
    SESSION_NUMBERS,
    USAGE_RECORDS,
    BLOCKS_FTS,
];

const SESSIONS: Table = Table {
    name: "sessions",
    doc: "one conversation or agent session (subagents are sessions of their own)",
    kind: TableKind::Table,
    columns: &[
        // `TEXT PRIMARY KEY` without `NOT NULL`: SQLite lets it be NULL, so it is nullable here.
        opt("session_id", Text, "`origin:native_id`"),
        req(
            "origin",
            Text,
            "`claude-code-session`, `codex-session`, `chatgpt-export`, `claude-ai-export`, `gemini-cli-session`, `aistudio-drive`, `pi-session`, `qwen-code-session`, `kimi-cli-session`, `copilot-cli-session`, `opencode-session`, `kilo-session`, `goose-session`, `amp-thread`, `cline-task`, `roo-code-task`, `kilo-code-task`, `aider-chat`, `cursor-chat`, `crush-session`, `cline-session`",
        ),
        req(
            "native_id",
            Text,
            "the source's id; subagents: `<parent>/agent-<id>`, inline sidechains: `<parent>/sidechain-<root uuid>`; a second file claiming an id already owned by another file gets `~<hash of its path>` appended (and a `duplicate_session_id` diagnostic)",
        ),
        identity(opt(
            "owner",
            Text,
            "given at ingest (`--owner`, default the OS user's name from the user database)",
        )),
        opt(
            "parent_session_id",
            Text,
            "the parent session for subagents, sidechains and forks (recorded even when the parent is not in the archive; the ingest summary lists such sessions), and for a continuation the session it continues",
        ),
        req(
            "root_session_id",
            Text,
            "the top of the lineage (the session itself when it has no parent)",
        ),
        opt(
            "branch_type",
            Text,
            "`subagent` (a Claude Code subagent, a Codex thread spawned by another), `sidechain`, `compaction` (Claude Code `agent-acompact-*` runs), `fork` (a Codex rollout naming the one it was forked from, `forked_from_id`), `continuation` (a resumed or forked session whose transcript replays responses of the session it continues, which came before it), or NULL for a main session",
        ),
        masked(opt(
            "title",
            Text,
            "the source's title (Claude Code: last `summary`, `custom-title` or `ai-title`), else the first authored prompt (80 characters)",
        )),
        opt("cwd", Text, "working directory"),
        opt(
            "repo",
            Text,
            "last path component of the git remote URL when the source gives one, else of `cwd`",
        ),
        opt("git_branch", Text, "git branch"),
        opt("model", Text, "the most frequent assistant model"),
        opt("created_at", Time, "first record time"),
        opt("updated_at", Time, "last record time"),
        opt("duration_ms", Integer, "`updated_at - created_at`"),
        req("message_count", Integer, "messages of the session"),
        req("word_count", Integer, "words of its messages' text blocks"),
        req(
            "user_messages",
            Integer,
            "messages with role `user` (provider-role truth: includes tool results and injected context)",
        ),
        req(
            "authored_user_messages",
            Integer,
            "user messages a person typed (not tool results, meta, commands, system reminders, compaction summaries, Codex environment context)",
        ),
        req(
            "assistant_messages",
            Integer,
            "messages with role `assistant`",
        ),
        req(
            "system_messages",
            Integer,
            "messages with role `system` (system, developer, info notices)",
        ),
        req(
            "tool_messages",
            Integer,
            "messages with role `tool` (Codex tool outputs)",
        ),
        req(
            "tool_use_messages",
            Integer,
            "messages carrying at least one tool call",
        ),
        req("thinking_messages", Integer, "messages carrying reasoning"),
        req(
            "paste_messages",
            Integer,
            "messages carrying pasted material (Claude Code `[Pasted text`, `pastedContents`; Claude.ai attachments)",
        ),
        req("user_words", Integer, "words of user messages"),
        req(
            "authored_user_words",
            Integer,
            "words of authored user messages",
        ),
        req("assistant_words", Integer, "words of assistant messages"),
        req("input_tokens", Integer, "sum over `usage`: uncached input"),
        req(
            "output_tokens",
            Integer,
            "sum over `usage`: output, reasoning included",
        ),
        req(
            "cache_read_tokens",
            Integer,
            "sum over `usage`: prompt-cache reads",
        ),
        req(
            "cache_write_tokens",
            Integer,
            "sum over `usage`: prompt-cache writes",
        ),
        opt(
            "reported_cost_usd",
            Real,
            "cost the source itself reports (`costUSD`), else NULL",
        ),
        req(
            "tags",
            Json,
            "JSON array of the session's active tag assertions, sorted",
        ),
        req("source_path", Text, "the file it came from"),
        req(
            "cache_write_5m_tokens",
            Integer,
            "sum over `usage`: 5-minute prompt-cache writes",
        ),
        req(
            "cache_write_1h_tokens",
            Integer,
            "sum over `usage`: 1-hour prompt-cache writes",
        ),
        opt(
            "machine",
            Text,
            "the machine the session was first read from (`quarry ingest --machine`, default the host name)",
        ),
        req(
            "replacement_epoch",
            Integer,
            "the archive generation at which the session's rows were last replaced rather than grown (`--replace`, a re-read export, `quarry reindex`); 0 before version 5",
        ),
    ],
    key: &["session_id"],
    session_key: Some("session_id"),
    links: &[
        to_session("parent_session_id"),
        to_session("root_session_id"),
        link("source_path", "source_files", "path"),
    ],
    time_column: Some("created_at"),
    fulltext: &[],
    visibility: Public,
    replaced_per_session: true,
    computed: SESSION_COST,
    author_private: None,
};

const MESSAGES: Table = Table {
    name: "messages",
    doc: "one logical message: a user record or one assistant API response",
    kind: TableKind::Table,
    columns: &[
        req("message_id", Text, "`<session_id>/m<position>`"),
        req("session_id", Text, "owning session"),
        req("position", Integer, "0-based order in the session"),
        req("role", Text, "`user`, `assistant`, `system`, `tool`"),
        req(
            "type",
            Text,
            "what the content mainly is: `tool_use` if it calls a tool, else `tool_result`, `text`, `thinking`, `code`, `image`, `document`; `summary` for a compaction summary",
        ),
        req(
            "material_origin",
            Text,
            "`human`, `model`, `tool_output`, `injected_context`, `compaction_summary`, `system`",
        ),
        opt("model", Text, "model of an assistant message"),
        opt("occurred_at_ms", Time, "time of its first record"),
        req(
            "word_count",
            Integer,
            "whitespace-separated words of its text blocks",
        ),
        masked(req("text", Text, "its text blocks, joined by a blank line")),
        opt(
            "input_tokens",
            Integer,
            "tokens of its response as its own transcript recorded them (NULL when none); a response replayed in another file shows on both messages, so count billed tokens over `usage` or `sessions`",
        ),
        opt("output_tokens", Integer, "likewise"),
        opt("cache_read_tokens", Integer, "likewise"),
        opt("cache_write_tokens", Integer, "likewise"),
        opt("duration_ms", Integer, "duration the source reports for it"),
        opt(
            "stop_reason",
            Text,
            "as reported (Claude Code leaves it NULL on most lines)",
        ),
        req(
            "is_sidechain",
            Boolean,
            "written on a Claude Code sidechain",
        ),
        opt(
            "turn_id",
            Text,
            "the turn it falls in (NULL before the first prompt)",
        ),
        opt("turn_committed", Boolean, "whether that turn is committed"),
        opt(
            "cache_write_5m_tokens",
            Integer,
            "5-minute cache writes of its usage rows (NULL when none)",
        ),
        opt("cache_write_1h_tokens", Integer, "likewise, 1-hour"),
        req(
            "hidden",
            Boolean,
            "the source marks it as never shown to the user (Claude Code `isMeta`, ChatGPT `is_visually_hidden_from_conversation`); reader scopes see neither it nor its blocks, actions and usage",
        ),
        opt(
            "event_seq",
            Integer,
            "the seq of the source record it was read from (the first, when several records make one response)",
        ),
        SESSION_NUM,
    ],
    key: &["message_id"],
    session_key: Some("session_id"),
    links: &[to_session("session_id")],
    time_column: Some("occurred_at_ms"),
    fulltext: &[],
    visibility: Public,
    replaced_per_session: true,
    computed: MESSAGE_UNIT,
    author_private: None,
};

const BLOCKS: Table = Table {
    name: "blocks",
    doc: "one content block of a message (text, thinking, tool_use, tool_result, ...)",
    kind: TableKind::Table,
    columns: &[
        req("block_id", Text, "`<message_id>/b<position>`"),
        req("message_id", Text, "owning message"),
        req("session_id", Text, "owning session"),
        req("position", Integer, "0-based order in the message"),
        req(
            "type",
            Text,
            "`text`, `thinking`, `tool_use`, `tool_result`, `image`, `code`, `document`",
        ),
        masked(req("text", Text, "text; for a tool result, its output")),
        opt(
            "tool_name",
            Text,
            "tool of a tool_use (copied onto its tool_result)",
        ),
        opt(
            "tool_id",
            Text,
            "call id pairing a tool_use with its tool_result",
        ),
        masked(opt("tool_input", Json, "tool input as JSON text")),
        masked(opt(
            "tool_command",
            Text,
            "shell command of a shell-like call",
        )),
        opt(
            "tool_path",
            Text,
            "file path the call names (`file_path`, `path`, `notebook_path`, or the first file of a patch)",
        ),
        opt("is_error", Boolean, "a tool result that reports an error"),
        opt(
            "exit_code",
            Integer,
            "exit code the result states (`Exit code N`, `Process exited with code N`, Codex metadata)",
        ),
        opt("occurred_at_ms", Time, "time of its message"),
        SESSION_NUM,
    ],
    key: &["block_id"],
    session_key: Some("session_id"),
    links: &[to_message("message_id"), to_session("session_id")],
    time_column: Some("occurred_at_ms"),
    fulltext: &["text", "tool_name", "tool_command", "tool_path"],
    visibility: Public,
    replaced_per_session: true,
    computed: &[],
    author_private: None,
};

const ACTIONS: Table = Table {
    name: "actions",
    doc: "one tool call paired with its result",
    kind: TableKind::Table,
    columns: &[
        req("action_id", Text, "the tool_use block id"),
        req("session_id", Text, "owning session"),
        req("message_id", Text, "message holding the call"),
        req("tool_use_block_id", Text, "the call's block"),
        opt(
            "tool_result_block_id",
            Text,
            "the result's block (NULL while no result arrived)",
        ),
        req("tool_name", Text, "tool"),
        req(
            "semantic_type",
            Text,
            "`file_read` (Read/view), `file_write` (Write), `file_edit` (Edit/MultiEdit/NotebookEdit/apply_patch), `shell` (Bash/shell/exec_command), `git` (a shell command starting with `git`), `search` (Grep/Glob/LS), `web` (WebFetch/WebSearch/web_search_call), `subagent` (Task/Agent), `other`",
        ),
        masked(opt("tool_command", Text, "shell command")),
        opt("tool_path", Text, "file path"),
        masked(opt("tool_input", Json, "input as JSON text")),
        masked(opt("output_text", Text, "result text")),
        req(
            "is_error",
            Boolean,
            "the result reports an error or a non-zero exit code",
        ),
        opt("exit_code", Integer, "exit code of the result"),
        opt("occurred_at_ms", Time, "time of the call"),
        opt("duration_ms", Integer, "result time minus call time"),
        opt(
            "followup_class",
            Text,
            "error actions only: `retry` (next step calls the same tool), `change` (another tool), `stop` (no next step, or it reports the failure), `silent_proceed` (goes on without mentioning it)",
        ),
        opt("turn_id", Text, "turn of the call"),
        opt("turn_committed", Boolean, "whether that turn is committed"),
        SESSION_NUM,
    ],
    key: &["action_id"],
    session_key: Some("session_id"),
    links: &[
        to_session("session_id"),
        to_message("message_id"),
        to_block("tool_use_block_id"),
        to_block("tool_result_block_id"),
    ],
    time_column: Some("occurred_at_ms"),
    fulltext: &[],
    visibility: Public,
    replaced_per_session: true,
    computed: ACTION_UNIT,
    author_private: None,
};

const FILES: Table = Table {
    name: "files",
    doc: "one file path touched by a session's tool calls",
    kind: TableKind::Table,
    columns: &[
        req("session_id", Text, "owning session"),
        req("path", Text, "the path"),
        req("action_count", Integer, "calls naming it"),
        opt("first_seen_ms", Time, "first call time"),
        opt("last_seen_ms", Time, "last call time"),
        req("first_message_id", Text, "message of the first call"),
        req("first_tool_use_block_id", Text, "first call"),
        req("last_tool_use_block_id", Text, "last call"),
        SESSION_NUM,
    ],
    key: &["session_id", "path"],
    session_key: Some("session_id"),
    links: &[
        to_session("session_id"),
        to_message("first_message_id"),
        to_block("first_tool_use_block_id"),
        to_block("last_tool_use_block_id"),
    ],
    time_column: Some("first_seen_ms"),
    fulltext: &[],
    visibility: Public,
    replaced_per_session: true,
    computed: FILE_UNIT,
    author_private: None,
};

const ASSERTIONS: Table = Table {
    name: "assertions",
    doc: "one tag, note, judgment or imported claim about a session or one of its objects",
    kind: TableKind::Table,
    columns: &[
        // `TEXT PRIMARY KEY` without `NOT NULL`.
        opt(
            "assertion_id",
            Text,
            "`tag-<hash>` (one per session and tag), `note-<hash>`, or the imported id",
        ),
        req(
            "target_ref",
            Text,
            "what it is about, as a ref: `session:<id>`, `message:<id>`, `assertion:<id>` (a judgment) …; a bare session id given to an import is stored as `session:<id>`",
        ),
        opt("scope_ref", Text, "optional scope"),
        req(
            "kind",
            Text,
            "`tag`, `note`, `judgment` (a verdict on a candidate), or an imported kind",
        ),
        opt("key", Text, "key (`tag` for tags)"),
        opt("value", Text, "value (the tag)"),
        masked(opt("body_text", Text, "note text")),
        identity(opt("author_ref", Text, "who (the OS user for tag/note)")),
        req(
            "author_kind",
            Text,
            "`user` for tag, note and judgments; `import` by default for imports",
        ),
        req(
            "status",
            Text,
            "one of active, candidate, accepted, rejected, deferred, superseded, deleted, inactive; a write not by a user lands as `candidate` (see docs/judgments.md)",
        ),
        req(
            "visibility",
            Text,
            "`private` unless imported otherwise; candidates are always `private`; claims not in force (candidate, and the judged: accepted, rejected, deferred, superseded, deleted) are their author's alone in a reader scope",
        ),
        req(
            "evidence_refs",
            Json,
            "JSON array of refs; a judgment's and an accepted claim's include `assertion:<candidate>`",
        ),
        req("created_at_ms", Time, "creation time"),
        req("updated_at_ms", Time, "last update"),
        opt(
            "session_id",
            Text,
            "the session the target is or belongs to (NULL when the archive does not hold the target)",
        ),
        opt(
            "message_id",
            Text,
            "the message the target is or belongs to (a message, block, action or delegation target, or a judgment of a claim about one)",
        ),
        opt(
            "supersedes",
            Text,
            "the assertion this one replaces (an accepted or superseding claim names its candidate)",
        ),
        req(
            "context_policy",
            Json,
            "`{\"inject\": bool, \"promotion_required\": bool}`: candidates are not injected and wait for a judgment",
        ),
        req(
            "staleness",
            Text,
            "`current`, or `target_missing` while the archive does not hold the object it cites (never written, or gone in a re-read)",
        ),
        opt(
            "original_status",
            Text,
            "a status outside the vocabulary that an import stored before version 6 (the row is `inactive`)",
        ),
    ],
    key: &["assertion_id"],
    // Assertions outlive re-ingest: they are about a session, not part of it.
    session_key: None,
    links: &[
        to_session("session_id"),
        link("supersedes", "assertions", "assertion_id"),
    ],
    time_column: Some("created_at_ms"),
    fulltext: &[],
    visibility: Public,
    replaced_per_session: false,
    computed: ASSERTION_UNIT,
    author_private: Some(AuthorPrivate {
        column: "status",
        values: &[
            "candidate",
            "accepted",
            "rejected",
            "deferred",
            "superseded",
            "deleted",
        ],
        author: "author_ref",
    }),
};

const RUNS: Table = Table {
    name: "runs",
    doc: "one agent run: the main run of a session or a subagent run",
    kind: TableKind::Table,
    columns: &[
        req("run_id", Text, "`<session_id>/run`"),
        req("session_id", Text, "the session"),
        req("role", Text, "`main` or `subagent`"),
        opt("agent", Text, "the subagent's id (NULL for main runs)"),
        req(
            "status",
            Text,
            "`completed` when every turn is committed, else `incomplete`",
        ),
        req(
            "harness",
            Text,
            "`claude-code`, `codex`, `chatgpt`, `claude-ai`, `gemini-cli`, `aistudio`",
        ),
        opt("cwd", Text, "working directory"),
        opt("git_branch", Text, "git branch"),
        opt("model", Text, "main model"),
        opt("started_at_ms", Time, "session start"),
        opt("ended_at_ms", Time, "last record"),
    ],
    key: &["run_id"],
    session_key: Some("session_id"),
    links: &[to_session("session_id")],
    time_column: Some("started_at_ms"),
    fulltext: &[],
    visibility: Public,
    replaced_per_session: true,
    computed: &[],
    author_private: None,
};

const OBSERVED_EVENTS: Table = Table {
    name: "observed_events",
    doc: "one observed lifecycle event (session started, tool finished)",
    kind: TableKind::Table,
    columns: &[
        req(
            "event_id",
            Text,
            "`<session_id>/session_started` or `<action_id>/finished`",
        ),
        req("session_id", Text, "the session"),
        req(
            "kind",
            Text,
            "`session_started` (one per session) or `tool_finished` (one per tool result)",
        ),
        opt("subject", Text, "the session or action"),
        masked(opt("object", Text, "cwd, or the action's path or command")),
        opt(
            "handler",
            Text,
            "the harness, the tool, or the MCP server of an `mcp__server__tool` call",
        ),
        opt("status", Text, "`ok` or `error`"),
        opt("delivery_state", Text, "`delivered`"),
        masked(opt(
            "summary",
            Text,
            "title, or the first line of the tool output (200 characters)",
        )),
        opt("occurred_at_ms", Time, "when"),
        SESSION_NUM,
    ],
    key: &["event_id"],
    session_key: Some("session_id"),
    links: &[to_session("session_id")],
    time_column: Some("occurred_at_ms"),
    fulltext: &[],
    visibility: Public,
    replaced_per_session: true,
    computed: &[],
    author_private: None,
};

const CONTEXT_SNAPSHOTS: Table = Table {
    name: "context_snapshots",
    doc: "one context boundary: session start, subagent start, compaction",
    kind: TableKind::Table,
    columns: &[
        req("snapshot_id", Text, "`<session_id>/ctx<n>`"),
        req("session_id", Text, "the session"),
        req("run_id", Text, "its run"),
        req(
            "boundary",
            Text,
            "`session_start` (Codex instructions), `subagent_start` (the instruction handed to a subagent or sidechain), `compaction` (Claude Code `compact_boundary` with its summary, Codex `compacted`)",
        ),
        opt(
            "inheritance_mode",
            Text,
            "`fresh`, `inherited` or `summary`",
        ),
        opt("segment", Text, "`instructions`, `prompt` or `summary`"),
        masked(req("text", Text, "the context text")),
        opt("occurred_at_ms", Time, "when"),
    ],
    key: &["snapshot_id"],
    session_key: Some("session_id"),
    links: &[to_session("session_id"), link("run_id", "runs", "run_id")],
    time_column: Some("occurred_at_ms"),
    fulltext: &[],
    visibility: Public,
    replaced_per_session: true,
    computed: &[],
    author_private: None,
};

const DELEGATIONS: Table = Table {
    name: "delegations",
    doc: "one hand-off from a parent session to a subagent",
    kind: TableKind::Table,
    columns: &[
        req(
            "delegation_id",
            Text,
            "`<parent session_id>/<tool call id>`",
        ),
        req("parent_session_id", Text, "the parent"),
        req("parent_message_id", Text, "the message holding the call"),
        opt(
            "child_session_id",
            Text,
            "the subagent session (from the result's `agentId`, or the inline sidechain whose first prompt equals the call's prompt)",
        ),
        masked(opt("instruction", Text, "the prompt handed over")),
        opt("requested_model", Text, "model named in the call"),
        opt(
            "dispatch_model",
            Text,
            "the same as requested_model (the source records no other)",
        ),
        opt(
            "child_model",
            Text,
            "the child session's model, once the child is in the archive",
        ),
        req(
            "mapping_state",
            Text,
            "`resolved` when the child is named, else `unresolved`",
        ),
        opt(
            "result_status",
            Text,
            "`completed`, `error`, ... as the result reports; NULL while none arrived",
        ),
        opt("is_error", Boolean, "the result reports a failure"),
        opt("exit_code", Integer, "NULL (subagents report no exit code)"),
        opt(
            "occurred_at_ms",
            Time,
            "time of the result (or of the call)",
        ),
    ],
    key: &["delegation_id"],
    session_key: Some("parent_session_id"),
    links: &[
        to_session("parent_session_id"),
        to_message("parent_message_id"),
        to_session("child_session_id"),
    ],
    time_column: Some("occurred_at_ms"),
    fulltext: &[],
    visibility: Public,
    replaced_per_session: true,
    computed: &[],
    author_private: None,
};

const EVENTS_SESSION_ID: Column = req("session_id", Text, "the session");
const EVENTS_SEQ: Column = req("seq", Integer, "0-based order of the record in the session");
const EVENTS_TYPE: Column = req(
    "type",
    Text,
    "the record type (`assistant`, `system/compact_boundary`, `event_msg/token_count`, `mapping_node`, ...)",
);
const EVENTS_TIME: Column = opt("time", Time, "record time");
const EVENTS_SURFACE: Column = req(
    "surface",
    Text,
    "`current` (part of the conversation as it stands), `shadowed` (an edited or regenerated branch), `log-only` (progress, snapshots, token counts, ...)",
);
const EVENTS_TURN_ID: Column = opt("turn_id", Text, "the turn it falls in");
const EVENTS_PAYLOAD: Column = Column {
    visibility: AdminOnly,
    ..req("payload", Json, "the raw record")
};
const EVENTS_REPLACED_BY: Column = opt(
    "replaced_by",
    Integer,
    "for a shadowed record: the seq of the record that positionally replaced it (a newer version of a rewritten message, a rewind, the branch kept instead)",
);
const EVENTS_SOURCE_SEQS: Column = opt(
    "source_seqs",
    Json,
    "JSON array of the seqs of the records this one names as its provenance, in recorded order (a Claude Code `parentUuid`, a Codex output's `call_id`, an export node's parent); NULL when it names none",
);

const EVENTS: Table = Table {
    name: "events",
    doc: "source records of committed turns (and records outside any turn)",
    kind: TableKind::View,
    // A view: SQLite reports none of its columns as NOT NULL; these are `events_raw`'s.
    columns: &[
        EVENTS_SESSION_ID,
        EVENTS_SEQ,
        EVENTS_TYPE,
        EVENTS_TIME,
        EVENTS_SURFACE,
        EVENTS_TURN_ID,
        EVENTS_PAYLOAD,
        EVENTS_REPLACED_BY,
        EVENTS_SOURCE_SEQS,
        SESSION_NUM,
    ],
    key: &["session_id", "seq"],
    session_key: Some("session_id"),
    links: &[to_session("session_id")],
    time_column: Some("time"),
    fulltext: &[],
    visibility: Public,
    // Its rows are `events_raw`'s.
    replaced_per_session: false,
    computed: &[],
    author_private: None,
};

const EVENTS_RAW: Table = Table {
    name: "events_raw",
    doc: "every source record, committed or not, with its raw payload",
    kind: TableKind::Table,
    columns: &[
        EVENTS_SESSION_ID,
        EVENTS_SEQ,
        EVENTS_TYPE,
        EVENTS_TIME,
        EVENTS_SURFACE,
        EVENTS_TURN_ID,
        opt("turn_committed", Boolean, "whether that turn is committed"),
        EVENTS_PAYLOAD,
        EVENTS_REPLACED_BY,
        EVENTS_SOURCE_SEQS,
        SESSION_NUM,
    ],
    key: &["session_id", "seq"],
    session_key: Some("session_id"),
    links: &[to_session("session_id")],
    time_column: Some("time"),
    fulltext: &[],
    visibility: AdminOnly,
    replaced_per_session: true,
    computed: &[],
    author_private: None,
};

const TURNS: Table = Table {
    name: "turns",
    doc: "one turn: from a user prompt to the next",
    kind: TableKind::Table,
    columns: &[
        req("session_id", Text, "the session"),
        req("turn_id", Text, "`t<n>`, or the source's turn id"),
        opt("started_at_ms", Time, "prompt time"),
        opt(
            "completed_at_ms",
            Time,
            "completion marker time, or the last message time of a committed turn",
        ),
        req("committed", Boolean, "whether the turn is committed"),
        opt(
            "duration_ms",
            Integer,
            "`completed_at_ms - started_at_ms`: from the prompt to the turn's completion (NULL while either is unknown)",
        ),
        SESSION_NUM,
    ],
    key: &["session_id", "turn_id"],
    session_key: Some("session_id"),
    links: &[to_session("session_id")],
    time_column: Some("started_at_ms"),
    fulltext: &[],
    visibility: Public,
    replaced_per_session: true,
    computed: &[],
    author_private: None,
};

const USAGE_COST: &[Column] = &[
    opt(
        "cost_usd",
        Real,
        "estimated cost in USD: the token counts priced at the rates in force at `occurred_at_ms` for `model` (see docs/cost.md); NULL when the price table has no price for the model then; 0 for a response with no tokens",
    ),
    opt(
        "input_cost_usd",
        Real,
        "the part of `cost_usd` for uncached input",
    ),
    opt(
        "output_cost_usd",
        Real,
        "the part of `cost_usd` for output (reasoning included)",
    ),
    opt(
        "cache_read_cost_usd",
        Real,
        "the part of `cost_usd` for prompt-cache reads",
    ),
    opt(
        "cache_write_cost_usd",
        Real,
        "the part of `cost_usd` for prompt-cache writes, 5-minute and 1-hour writes each at its own rate",
    ),
];

/// The owning session's origin: the part of `session_id` before its first colon (a session id
/// is `origin:native_id`).
const ORIGIN: Column = opt(
    "origin",
    Text,
    "the owning session's origin (`session_id` is `origin:native_id`)",
);
/// The owning session's title, read from `sessions` only when a query reads it.
const TITLE: Column = masked(opt("title", Text, "the owning session's title"));

const MESSAGE_UNIT: &[Column] = &[req("unit", Text, "`message`"), ORIGIN, TITLE];
const ACTION_UNIT: &[Column] = &[req("unit", Text, "`action`"), ORIGIN, TITLE];
const FILE_UNIT: &[Column] = &[req("unit", Text, "`file`"), ORIGIN, TITLE];
const ASSERTION_UNIT: &[Column] = &[req("unit", Text, "`assertion`")];

const SESSION_COST: &[Column] = &[opt(
    "cost_usd",
    Real,
    "estimated cost in USD: the sum of `usage.cost_usd` over the responses the session owns; NULL when one of them has no price or is approximate (`recorded_via` `approximate`: Aider's rounded reports), 0 when it owns none",
)];

/// The hash the archive looks a response up by (bookkeeping, admin only).
const KEY_HASH: Column = Column {
    visibility: AdminOnly,
    ..req(
        "key_hash",
        Integer,
        "what the archive looks the response up by: the first 8 bytes of the BLAKE3 hash of `response_key`, little-endian (bookkeeping)",
    )
};

/// The owning session's number in order of arrival (bookkeeping, admin only): what the archive
/// finds a session's rows by, so that a new session's rows append to the index's end.
const SESSION_NUM: Column = Column {
    visibility: AdminOnly,
    ..req(
        "session_num",
        Integer,
        "the owning session's number in order of arrival (`session_numbers`): what the archive finds the session's rows by (bookkeeping)",
    )
};

const USAGE: Table = Table {
    name: "usage",
    doc: "one billed model response, counted once across the whole archive (see docs/accounting.md)",
    kind: TableKind::Table,
    columns: &[
        req(
            "session_id",
            Text,
            "the session that owns the response: the earliest session (by creation time, then id) whose own transcript recorded it; for a response only a parent's progress records carry, the subagent's session when it is in the archive, else the parent's",
        ),
        // `TEXT PRIMARY KEY` without `NOT NULL`: SQLite lets it be NULL, so it is nullable here.
        opt(
            "response_key",
            Text,
            "what identifies the response across files: `claude:<message.id>` (Claude Code), `codex:<fingerprint of the cumulative token history>` (Codex; a forked rollout's replayed prefix has the same keys), else `<session_id>#u<n>`",
        ),
        opt(
            "message_id",
            Text,
            "the response's message in the owning session (NULL for a response recorded only in progress records)",
        ),
        opt(
            "request_id",
            Text,
            "the provider's request id (Claude Code)",
        ),
        opt("model", Text, "model"),
        req(
            "input_tokens",
            Integer,
            "uncached input (Codex: `input_tokens - cached_input_tokens`); each token count is the largest over the response's records",
        ),
        req("output_tokens", Integer, "output, reasoning included"),
        opt("reasoning_tokens", Integer, "reasoning, where reported"),
        req(
            "cache_read_tokens",
            Integer,
            "cache reads (Codex: `cached_input_tokens`)",
        ),
        req(
            "cache_write_tokens",
            Integer,
            "cache writes, both lifetimes (= `cache_write_5m_tokens + cache_write_1h_tokens`)",
        ),
        req(
            "cache_write_5m_tokens",
            Integer,
            "cache writes with the 5-minute lifetime (`cache_creation.ephemeral_5m_input_tokens`; all writes when the source gives only the total)",
        ),
        req(
            "cache_write_1h_tokens",
            Integer,
            "cache writes with the 1-hour lifetime (`cache_creation.ephemeral_1h_input_tokens`)",
        ),
        opt("occurred_at_ms", Time, "when (the owning record's time)"),
        opt("turn_id", Text, "the owning session's turn"),
        opt("turn_committed", Boolean, "whether that turn is committed"),
        req(
            "recorded_via",
            Text,
            "`transcript` (an assistant record of a session's own transcript), `progress` (only a parent's streamed `progress` records carry it) or `approximate` (counts the agent printed rounded or estimated: Aider's token reports; left out of the sessions' sums and cost and of `quarry report` unless `--approximate`)",
        ),
        req(
            "record_count",
            Integer,
            "how many records carry the response across the archive, one per session and kind (1 unless replayed, resumed, forked, copied or streamed into a parent)",
        ),
        KEY_HASH,
        SESSION_NUM,
    ],
    key: &["response_key"],
    session_key: Some("session_id"),
    links: &[to_session("session_id"), to_message("message_id")],
    time_column: Some("occurred_at_ms"),
    fulltext: &[],
    visibility: Public,
    // Resolved across files from `usage_records`, not replaced with one session's rows.
    replaced_per_session: false,
    computed: USAGE_COST,
    author_private: None,
};

const USAGE_RECORDS: Table = Table {
    name: "usage_records",
    doc: "one response as one session's file recorded it (the input `usage` is resolved from)",
    kind: TableKind::Bookkeeping,
    columns: &[
        req(
            "session_id",
            Text,
            "the session whose file carries the record",
        ),
        req("response_key", Text, "as in `usage`"),
        req("recorded_via", Text, "`transcript` or `progress`"),
        opt(
            "subagent_session_id",
            Text,
            "for a progress record: the subagent session it streams (`<parent>/agent-<agentId>`)",
        ),
        opt(
            "message_id",
            Text,
            "the message in this session (transcript records)",
        ),
        opt("request_id", Text, "the provider's request id"),
        opt("model", Text, "model"),
        req("input_tokens", Integer, "as in `usage`"),
        req("output_tokens", Integer, "as in `usage`"),
        opt("reasoning_tokens", Integer, "as in `usage`"),
        req("cache_read_tokens", Integer, "as in `usage`"),
        req("cache_write_tokens", Integer, "as in `usage`"),
        req("cache_write_5m_tokens", Integer, "as in `usage`"),
        req("cache_write_1h_tokens", Integer, "as in `usage`"),
        opt("occurred_at_ms", Time, "when"),
        opt("turn_id", Text, "this session's turn"),
        opt("turn_committed", Boolean, "whether that turn is committed"),
        req("seq", Integer, "order within the session"),
        KEY_HASH,
        SESSION_NUM,
    ],
    key: &["session_id", "response_key", "recorded_via"],
    session_key: Some("session_id"),
    links: &[to_session("session_id"), to_session("subagent_session_id")],
    time_column: Some("occurred_at_ms"),
    fulltext: &[],
    visibility: AdminOnly,
    replaced_per_session: true,
    computed: &[],
    author_private: None,
};

const META: Table = Table {
    name: "meta",
    doc: "one setting of the archive (the `generation` counter)",
    kind: TableKind::Bookkeeping,
    columns: &[
        opt(
            "key",
            Text,
            "setting name; `generation` is the monotonic counter bumped by every ingest commit that changed something (and every tag, note or import)",
        ),
        req("value", Text, "its value"),
    ],
    key: &["key"],
    session_key: None,
    links: &[],
    time_column: None,
    fulltext: &[],
    visibility: AdminOnly,
    replaced_per_session: false,
    computed: &[],
    author_private: None,
};

const SOURCE_RESUME: Table = Table {
    name: "source_resume",
    doc: "where the next read of a grown single-session JSONL file continues: the byte offset, the cut in its session's rows and the reading state there (docs/live.md)",
    kind: TableKind::Bookkeeping,
    columns: &[
        req("path", Text, "canonical path of the file"),
        req(
            "state",
            Text,
            "JSON: offset, lines and records read, the cut (rows before it stay as they are), the adapter's state at the cut and the first row id after it in each table",
        ),
    ],
    key: &["path"],
    session_key: None,
    links: &[],
    time_column: None,
    fulltext: &[],
    visibility: AdminOnly,
    replaced_per_session: false,
    computed: &[],
    author_private: None,
};

const SESSION_NUMBERS: Table = Table {
    name: "session_numbers",
    doc: "each session id the archive has seen, numbered in order of arrival (never renumbered): the tables with a `session_num` column find a session's rows by it",
    kind: TableKind::Bookkeeping,
    columns: &[
        opt("session_num", Integer, "the number, from 1"),
        req("session_id", Text, "the session"),
    ],
    key: &["session_num"],
    session_key: None,
    links: &[],
    time_column: None,
    fulltext: &[],
    visibility: AdminOnly,
    replaced_per_session: false,
    computed: &[],
    author_private: None,
};

const SNAPSHOT_CHANGES: Table = Table {
    name: "snapshot_changes",
    doc: "the last generation at which each partition of the columnar snapshot changed (what an incremental refresh rewrites)",
    kind: TableKind::Bookkeeping,
    columns: &[
        req(
            "partition",
            Text,
            "a session partition (the UTC month `YYYY-MM` of the session's `created_at`, or `none`), or `all` for the tables with no owning session",
        ),
        req("generation", Integer, "the generation of its last change"),
    ],
    key: &["partition"],
    session_key: None,
    links: &[],
    time_column: None,
    fulltext: &[],
    visibility: AdminOnly,
    replaced_per_session: false,
    computed: &[],
    author_private: None,
};

const SOURCE_FILES: Table = Table {
    name: "source_files",
    doc: "one ingested input file, with the size and hash change detection compares",
    kind: TableKind::Bookkeeping,
    columns: &[
        opt("path", Text, "canonical path of the file"),
        req("origin", Text, "origin of its sessions"),
        req(
            "size",
            Integer,
            "bytes archived: a JSONL file that still starts with these bytes grew (an append); any other change is a rewrite, kept out unless `quarry ingest --replace PATH`",
        ),
        req(
            "hash",
            Text,
            "the archived bytes' hash: blake3 chained over 256 KiB chunks (each link hashes the previous link and the chunk), so the last chunks of an archived prefix can be verified alone",
        ),
        req("records", Integer, "records (lines, nodes, messages) read"),
        req("sessions", Integer, "sessions it produced"),
        req("generation", Integer, "generation of its last write"),
        req("ingested_at_ms", Time, "when it was last written"),
        opt(
            "machine",
            Text,
            "the machine the file was read on (`quarry ingest --machine`)",
        ),
        opt(
            "copy_of",
            Text,
            "for a copy of a session file already archived from another path (a synced or copied folder): that path; the copy adds no sessions",
        ),
        opt(
            "chunks",
            Text,
            "the chain's links before the last two full chunks and before the partial one (hex), which the cheap check of a grown file starts from; NULL for a file archived before version 8",
        ),
        opt(
            "file_id",
            Text,
            "the file's identity when it was archived (`device:inode`); a file replaced under the same name is verified whole",
        ),
    ],
    key: &["path"],
    session_key: None,
    links: &[],
    time_column: Some("ingested_at_ms"),
    fulltext: &[],
    visibility: AdminOnly,
    replaced_per_session: false,
    computed: &[],
    author_private: None,
};

const BLOCKS_FTS: Table = Table {
    name: "blocks_fts",
    doc: "the full-text index (FTS5) over blocks' text, tool name, command and path",
    kind: TableKind::FullText,
    columns: &[
        opt(
            "text",
            Text,
            "the block's `text`, `ł`/`Ł` folded to `l`/`L`",
        ),
        opt("tool_name", Text, "its `tool_name`, folded likewise"),
        opt("tool_command", Text, "its `tool_command`, folded likewise"),
        opt("tool_path", Text, "its `tool_path`, folded likewise"),
    ],
    // rowid = the block's rowid.
    key: &[],
    session_key: None,
    links: &[],
    time_column: None,
    fulltext: &["text", "tool_name", "tool_command", "tool_path"],
    visibility: AdminOnly,
    replaced_per_session: false,
    computed: &[],
    author_private: None,
};
