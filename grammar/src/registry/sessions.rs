//! The sessions unit and its fields (own columns, child-unit lookups, evidence, lanes).

use super::values::*;
use super::{
    Evidence, Field, FieldKind as K, Source, Table, Unit, UnitId as U, col, declared, via,
};

/// What each `has:` value stands for (in the order of `HAS_VALUES`).
const HAS_EVIDENCE: &[Evidence] = &[
    Evidence::Counter {
        name: "paste",
        column: "paste_messages",
    },
    Evidence::Counter {
        name: "tools",
        column: "tool_use_messages",
    },
    Evidence::Counter {
        name: "thinking",
        column: "thinking_messages",
    },
    Evidence::Row {
        name: "summary",
        unit: U::Messages,
        column: "type",
        values: &["summary"],
    },
    Evidence::Row {
        name: "attachments",
        unit: U::Blocks,
        column: "type",
        values: &["image", "document"],
    },
];

const SESSION_FIELDS: &[Field] = &[
    Field::new("repo", K::Substring, col("repo"), "repository name (last path component of the git remote or cwd)", "repo:acme").group(),
    Field::new("origin", K::Equality, col("origin"), "source format the session came from (claude-code-session, codex-session, ...)", "origin:codex-session").group(),
    Field::new("tag", K::Json, col("tags"), "a tag of the session (JSON array membership)", "tag:review").group(),
    Field::new("path", K::Path, via(U::Files, "path"), "a file path the session's tool calls touched (substring)", "path:src/query"),
    Field::new("cwd", K::Prefix, col("cwd"), "working-directory prefix", "cwd:/work/acme").group(),
    Field::new("tool", K::Equality, via(U::Actions, "tool_name"), "a tool the session used", "tool:Bash"),
    Field::new("action", K::Enum, via(U::Actions, "semantic_type"), "a semantic action category the session performed", "action:file_edit").vals(SEMANTIC_TYPES),
    Field::new("has", K::Enum, Source::Derived { rule: "paste/tools/thinking → paste_messages/tool_use_messages/thinking_messages > 0; summary/attachments → block types", evidence: HAS_EVIDENCE }, "content or evidence present in the session", "has:tools").vals(HAS_VALUES),
    Field::new("id", K::Prefix, col("session_id"), "session id or a prefix of it", "id:codex-session:abc"),
    Field::new("session", K::Equality, col("session_id"), "exact session id (alias of id, exact match)", "session:codex-session:abc"),
    Field::new("native_id", K::Equality, col("native_id"), "the source's own session id", "native_id:abc"),
    Field::new("root", K::Equality, col("root_session_id"), "root session of the session's lineage tree", "root:codex-session:abc").group(),
    Field::new("parent", K::Equality, col("parent_session_id"), "parent session id (subagents, continuations)", "parent:codex-session:abc").group(),
    Field::new("branch_type", K::Enum, col("branch_type"), "how the session branched from its parent", "branch_type:subagent").vals(BRANCH_TYPES).group(),
    Field::new("title", K::Substring, col("title"), "session title substring", "title:refactor"),
    Field::new("owner", K::Equality, col("owner"), "owner given at ingest", "owner:alice").group(),
    Field::new("machine", K::Equality, col("machine"), "machine the session was first read from (`quarry ingest --machine`, default the host name)", "machine:laptop").group(),
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
    Field::new("cost_usd", K::Number, col("cost_usd"), "estimated cost in USD: the sum over its usage at the prices in force then (NULL when a response has no price)", "cost_usd >= 1.5"),
    Field::new("reported_cost_usd", K::Number, col("reported_cost_usd"), "cost in USD, only when the source reports one", "reported_cost_usd >= 1.5"),
    Field::new("source_path", K::Path, col("source_path"), "the transcript file the session was read from", "source_path:projects/acme"),
    Field::new("near", K::Semantic, Source::Lane, "vector similarity to a text or a session (near:\"text\", near:text:X, near:id:SESSION); needs embeddings", "near:\"semantic search\""),
    Field::new("semantic", K::Semantic, Source::Lane, "vector similarity to a text; needs embeddings", "semantic:\"query compiler failure\""),
    Field::new("lineage", K::Lineage, Source::Lane, "sessions sharing lineage topology with a seed session", "lineage:id:codex-session:abc"),
    Field::new("lane", K::Enum, Source::Lane, "retrieval lane of the ranked form (beside search text)", "~\"login\" AND lane:dialogue").vals(LANES),
];

const SESSIONS_TABLE: &Table = declared("sessions");

pub(super) const SESSIONS: Unit = Unit {
    id: U::Sessions,
    name: "sessions",
    singular: "session",
    table: SESSIONS_TABLE.name,
    schema: SESSIONS_TABLE,
    doc: "one conversation or agent session (subagents are sessions of their own)",
    time_column: SESSIONS_TABLE.time_column,
    session_column: SESSIONS_TABLE.session_key,
    fields: SESSION_FIELDS,
    bracket_fields: &[],
    fts: true,
};
