//! Tool calls (actions) and the files they touched.

use super::values::*;
use super::{Field, FieldKind as K, Source, Table, Unit, UnitId as U, col, declared, via};

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

const ACTIONS_TABLE: &Table = declared("actions");

pub(super) const ACTIONS: Unit = Unit {
    id: U::Actions,
    name: "actions",
    singular: "action",
    table: ACTIONS_TABLE.name,
    schema: ACTIONS_TABLE,
    doc: "one tool call paired with its result",
    time_column: ACTIONS_TABLE.time_column,
    session_column: ACTIONS_TABLE.session_key,
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
};

const FILES_TABLE: &Table = declared("files");

pub(super) const FILES: Unit = Unit {
    id: U::Files,
    name: "files",
    singular: "file",
    table: FILES_TABLE.name,
    schema: FILES_TABLE,
    doc: "one file path touched by a session's tool calls",
    time_column: FILES_TABLE.time_column,
    session_column: FILES_TABLE.session_key,
    fields: FILE_FIELDS,
    bracket_fields: &["path"],
    fts: false,
};
