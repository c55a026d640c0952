//! Source records (events), turns and billed model responses (usage).

use super::values::*;
use super::{Field, FieldKind as K, Table, Unit, UnitId as U, col, declared};

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
    Field::new(
        "duration_ms",
        K::Number,
        col("duration_ms"),
        "time from the prompt to the turn's completion in milliseconds",
        "duration_ms >= 60000",
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
        "response",
        K::Equality,
        col("response_key"),
        "the response's key across files (`claude:<message.id>`, `codex:<fingerprint>`)",
        "response:claude:msg_01",
    ),
    Field::new(
        "recorded_via",
        K::Equality,
        col("recorded_via"),
        "`transcript`; `progress` for a subagent response only its parent's progress records carry; `approximate` for counts the agent printed rounded (Aider), which sessions' sums and reports leave out",
        "recorded_via:progress",
    )
    .group(),
    Field::new(
        "cache_write_5m_tokens",
        K::Count,
        col("cache_write_5m_tokens"),
        "cache writes with the 5-minute lifetime",
        "cache_write_5m_tokens >= 1000",
    ),
    Field::new(
        "cache_write_1h_tokens",
        K::Count,
        col("cache_write_1h_tokens"),
        "cache writes with the 1-hour lifetime",
        "cache_write_1h_tokens >= 1000",
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
        "cost_usd",
        K::Number,
        col("cost_usd"),
        "estimated cost in USD at the price in force when the response was billed (NULL: no price for the model)",
        "cost_usd >= 0.5",
    ),
    Field::new(
        "input_cost_usd",
        K::Number,
        col("input_cost_usd"),
        "the part of cost_usd for uncached input",
        "input_cost_usd >= 0.1",
    ),
    Field::new(
        "output_cost_usd",
        K::Number,
        col("output_cost_usd"),
        "the part of cost_usd for output",
        "output_cost_usd >= 0.1",
    ),
    Field::new(
        "cache_read_cost_usd",
        K::Number,
        col("cache_read_cost_usd"),
        "the part of cost_usd for cache reads",
        "cache_read_cost_usd >= 0.1",
    ),
    Field::new(
        "cache_write_cost_usd",
        K::Number,
        col("cache_write_cost_usd"),
        "the part of cost_usd for cache writes (5-minute and 1-hour each at its rate)",
        "cache_write_cost_usd >= 0.1",
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

const EVENTS_TABLE: &Table = declared("events");

pub(super) const EVENTS: Unit = Unit {
    id: U::Events,
    name: "events",
    singular: "event",
    table: EVENTS_TABLE.name,
    schema: EVENTS_TABLE,
    doc: "source records of committed turns (and records outside any turn)",
    time_column: EVENTS_TABLE.time_column,
    session_column: EVENTS_TABLE.session_key,
    fields: EVENT_FIELDS,
    bracket_fields: &["type", "surface"],
    fts: false,
};

const TURNS_TABLE: &Table = declared("turns");

pub(super) const TURNS: Unit = Unit {
    id: U::Turns,
    name: "turns",
    singular: "turn",
    table: TURNS_TABLE.name,
    schema: TURNS_TABLE,
    doc: "one turn: from a user prompt to the next",
    time_column: TURNS_TABLE.time_column,
    session_column: TURNS_TABLE.session_key,
    fields: TURN_FIELDS,
    bracket_fields: &["committed"],
    fts: false,
};

const USAGE_TABLE: &Table = declared("usage");

pub(super) const USAGE: Unit = Unit {
    id: U::Usage,
    name: "usage",
    singular: "usage",
    table: USAGE_TABLE.name,
    schema: USAGE_TABLE,
    doc: "one billed model response, counted once across the archive",
    time_column: USAGE_TABLE.time_column,
    session_column: USAGE_TABLE.session_key,
    fields: USAGE_FIELDS,
    bracket_fields: &["model"],
    fts: false,
};
