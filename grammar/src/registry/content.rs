//! Messages and their content blocks.

use super::values::*;
use super::{Field, FieldKind as K, Table, Unit, UnitId as U, col, declared, via};

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

const MESSAGES_TABLE: &Table = declared("messages");

pub(super) const MESSAGES: Unit = Unit {
    id: U::Messages,
    name: "messages",
    singular: "message",
    table: MESSAGES_TABLE.name,
    schema: MESSAGES_TABLE,
    doc: "one logical message: a user record or one assistant API response",
    time_column: MESSAGES_TABLE.time_column,
    session_column: MESSAGES_TABLE.session_key,
    fields: MESSAGE_FIELDS,
    bracket_fields: &["role", "type"],
    fts: true,
};

const BLOCKS_TABLE: &Table = declared("blocks");

pub(super) const BLOCKS: Unit = Unit {
    id: U::Blocks,
    name: "blocks",
    singular: "block",
    table: BLOCKS_TABLE.name,
    schema: BLOCKS_TABLE,
    doc: "one content block of a message (text, thinking, tool_use, tool_result, ...)",
    time_column: BLOCKS_TABLE.time_column,
    session_column: BLOCKS_TABLE.session_key,
    fields: BLOCK_FIELDS,
    bracket_fields: &["type", "tool"],
    fts: true,
};
