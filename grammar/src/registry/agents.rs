//! Agent runs, observed lifecycle events, context boundaries and delegations.

use super::values::*;
use super::{Field, FieldKind as K, Source, Table, Unit, UnitId as U, col, declared, via};

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

const RUNS_TABLE: &Table = declared("runs");

pub(super) const RUNS: Unit = Unit {
    id: U::Runs,
    name: "runs",
    singular: "run",
    table: RUNS_TABLE.name,
    schema: RUNS_TABLE,
    doc: "one agent run: the main run of a session or a subagent run",
    time_column: RUNS_TABLE.time_column,
    session_column: RUNS_TABLE.session_key,
    fields: RUN_FIELDS,
    bracket_fields: &["role", "status", "agent"],
    fts: false,
};

const OBSERVED_EVENTS_TABLE: &Table = declared("observed_events");

pub(super) const OBSERVED_EVENTS: Unit = Unit {
    id: U::ObservedEvents,
    name: "observed-events",
    singular: "observed-event",
    table: OBSERVED_EVENTS_TABLE.name,
    schema: OBSERVED_EVENTS_TABLE,
    doc: "one observed lifecycle event (session started, tool finished)",
    time_column: OBSERVED_EVENTS_TABLE.time_column,
    session_column: OBSERVED_EVENTS_TABLE.session_key,
    fields: OBSERVED_EVENT_FIELDS,
    bracket_fields: &["kind", "status", "handler", "delivery_state"],
    fts: false,
};

const CONTEXT_SNAPSHOTS_TABLE: &Table = declared("context_snapshots");

pub(super) const CONTEXT_SNAPSHOTS: Unit = Unit {
    id: U::ContextSnapshots,
    name: "context-snapshots",
    singular: "context-snapshot",
    table: CONTEXT_SNAPSHOTS_TABLE.name,
    schema: CONTEXT_SNAPSHOTS_TABLE,
    doc: "one context boundary: session start, subagent start, compaction",
    time_column: CONTEXT_SNAPSHOTS_TABLE.time_column,
    session_column: CONTEXT_SNAPSHOTS_TABLE.session_key,
    fields: CONTEXT_SNAPSHOT_FIELDS,
    bracket_fields: &["boundary", "segment"],
    fts: false,
};

const DELEGATIONS_TABLE: &Table = declared("delegations");

pub(super) const DELEGATIONS: Unit = Unit {
    id: U::Delegations,
    name: "delegations",
    singular: "delegation",
    table: DELEGATIONS_TABLE.name,
    schema: DELEGATIONS_TABLE,
    doc: "one hand-off from a parent session to a subagent",
    time_column: DELEGATIONS_TABLE.time_column,
    session_column: DELEGATIONS_TABLE.session_key,
    fields: DELEGATION_FIELDS,
    bracket_fields: &["mapping_state", "result_status", "is_error"],
    fts: false,
};
