//! The closed value sets of enum fields.

pub(super) const SEMANTIC_TYPES: &[&str] = &[
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
pub(super) const MESSAGE_ROLES: &[&str] = &["user", "assistant", "system", "tool"];
pub(super) const MESSAGE_TYPES: &[&str] = &[
    "text",
    "thinking",
    "tool_use",
    "tool_result",
    "code",
    "image",
    "document",
    "summary",
];
pub(super) const BLOCK_TYPES: &[&str] = &[
    "text",
    "thinking",
    "tool_use",
    "tool_result",
    "image",
    "code",
    "document",
];
pub(super) const BRANCH_TYPES: &[&str] = &[
    "continuation",
    "sidechain",
    "fork",
    "subagent",
    "compaction",
];
pub(super) const HAS_VALUES: &[&str] = &["paste", "tools", "thinking", "summary", "attachments"];
pub(super) const LANES: &[&str] = &["auto", "dialogue", "actions", "hybrid", "semantic"];
pub(super) const ASSERTION_STATUS: &[&str] = quarry_schema::ASSERTION_STATUSES;
pub(super) const FOLLOWUPS: &[&str] = &["retry", "change", "silent_proceed", "stop"];
pub(super) const RUN_ROLES: &[&str] = &["main", "subagent"];
pub(super) const BOUNDARIES: &[&str] = &["session_start", "subagent_start", "compaction"];
pub(super) const MAPPING_STATES: &[&str] = &["resolved", "unresolved"];
pub(super) const SURFACES: &[&str] = &["current", "shadowed", "log-only"];
