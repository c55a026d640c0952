//! The archive's SQLite schema: one migration list, applied in order, recorded in
//! `PRAGMA user_version`. Every table of DESIGN.md's data model is declared here and nowhere else.
//!
//! The schema uses only features of SQLite 3.40 (no JSONB, no contentless-delete FTS), so the
//! archive stays readable by the SQLite that users have.

/// The schema version an up-to-date archive records in `PRAGMA user_version`.
pub const SCHEMA_VERSION: i64 = 1;

/// One archive table (or view) as the catalog shows it.
#[derive(Debug, Clone, Copy)]
pub struct TableDef {
    /// SQL name (underscores, as in `observed_events`).
    pub name: &'static str,
    /// One line saying what a row is.
    pub doc: &'static str,
    /// Whether only the admin scope may read it (raw payloads).
    pub admin_only: bool,
}

/// Every table of the archive, in catalog order.
pub const TABLES: &[TableDef] = &[
    TableDef {
        name: "sessions",
        doc: "one conversation or agent session (subagents are sessions of their own)",
        admin_only: false,
    },
    TableDef {
        name: "messages",
        doc: "one logical message: a user record or one assistant API response",
        admin_only: false,
    },
    TableDef {
        name: "blocks",
        doc: "one content block of a message (text, thinking, tool_use, tool_result, ...)",
        admin_only: false,
    },
    TableDef {
        name: "actions",
        doc: "one tool call paired with its result",
        admin_only: false,
    },
    TableDef {
        name: "files",
        doc: "one file path touched by a session's tool calls",
        admin_only: false,
    },
    TableDef {
        name: "assertions",
        doc: "one tag, note or imported claim about a session or message",
        admin_only: false,
    },
    TableDef {
        name: "runs",
        doc: "one agent run: the main run of a session or a subagent run",
        admin_only: false,
    },
    TableDef {
        name: "observed_events",
        doc: "one observed lifecycle event (session started, tool finished)",
        admin_only: false,
    },
    TableDef {
        name: "context_snapshots",
        doc: "one context boundary: session start, subagent start, compaction",
        admin_only: false,
    },
    TableDef {
        name: "delegations",
        doc: "one hand-off from a parent session to a subagent",
        admin_only: false,
    },
    TableDef {
        name: "events",
        doc: "source records of committed turns (and records outside any turn)",
        admin_only: false,
    },
    TableDef {
        name: "events_raw",
        doc: "every source record, committed or not, with its raw payload",
        admin_only: true,
    },
    TableDef {
        name: "turns",
        doc: "one turn: from a user prompt to the next",
        admin_only: false,
    },
    TableDef {
        name: "usage",
        doc: "one billed model response, de-duplicated",
        admin_only: false,
    },
];

/// The migrations, in order; migration `i` moves the archive from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[MIGRATION_1];

const MIGRATION_1: &str = r#"
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT INTO meta (key, value) VALUES ('generation', '0');

CREATE TABLE source_files (
    path            TEXT PRIMARY KEY,
    origin          TEXT NOT NULL,
    size            INTEGER NOT NULL,
    hash            TEXT NOT NULL,
    records         INTEGER NOT NULL,
    sessions        INTEGER NOT NULL,
    generation      INTEGER NOT NULL,
    ingested_at_ms  INTEGER NOT NULL
);

CREATE TABLE sessions (
    session_id              TEXT PRIMARY KEY,
    origin                  TEXT NOT NULL,
    native_id               TEXT NOT NULL,
    owner                   TEXT,
    parent_session_id       TEXT,
    root_session_id         TEXT NOT NULL,
    branch_type             TEXT,
    title                   TEXT,
    cwd                     TEXT,
    repo                    TEXT,
    git_branch              TEXT,
    model                   TEXT,
    created_at              INTEGER,
    updated_at              INTEGER,
    duration_ms             INTEGER,
    message_count           INTEGER NOT NULL,
    word_count              INTEGER NOT NULL,
    user_messages           INTEGER NOT NULL,
    authored_user_messages  INTEGER NOT NULL,
    assistant_messages      INTEGER NOT NULL,
    system_messages         INTEGER NOT NULL,
    tool_messages           INTEGER NOT NULL,
    tool_use_messages       INTEGER NOT NULL,
    thinking_messages       INTEGER NOT NULL,
    paste_messages          INTEGER NOT NULL,
    user_words              INTEGER NOT NULL,
    authored_user_words     INTEGER NOT NULL,
    assistant_words         INTEGER NOT NULL,
    input_tokens            INTEGER NOT NULL,
    output_tokens           INTEGER NOT NULL,
    cache_read_tokens       INTEGER NOT NULL,
    cache_write_tokens      INTEGER NOT NULL,
    reported_cost_usd       REAL,
    tags                    TEXT NOT NULL DEFAULT '[]',
    source_path             TEXT NOT NULL
);
CREATE INDEX sessions_source ON sessions (source_path);
CREATE INDEX sessions_parent ON sessions (parent_session_id);

CREATE TABLE messages (
    message_id          TEXT NOT NULL,
    session_id          TEXT NOT NULL,
    position            INTEGER NOT NULL,
    role                TEXT NOT NULL,
    type                TEXT NOT NULL,
    material_origin     TEXT NOT NULL,
    model               TEXT,
    occurred_at_ms      INTEGER,
    word_count          INTEGER NOT NULL,
    text                TEXT NOT NULL,
    input_tokens        INTEGER,
    output_tokens       INTEGER,
    cache_read_tokens   INTEGER,
    cache_write_tokens  INTEGER,
    duration_ms         INTEGER,
    stop_reason         TEXT,
    is_sidechain        INTEGER NOT NULL,
    turn_id             TEXT,
    turn_committed      INTEGER
);
CREATE INDEX messages_session ON messages (session_id);

CREATE TABLE blocks (
    block_id        TEXT NOT NULL,
    message_id      TEXT NOT NULL,
    session_id      TEXT NOT NULL,
    position        INTEGER NOT NULL,
    type            TEXT NOT NULL,
    text            TEXT NOT NULL,
    tool_name       TEXT,
    tool_id         TEXT,
    tool_input      TEXT,
    tool_command    TEXT,
    tool_path       TEXT,
    is_error        INTEGER,
    exit_code       INTEGER,
    occurred_at_ms  INTEGER
);
CREATE INDEX blocks_session ON blocks (session_id);

-- Full-text index over each block's search text (text + tool + command + path), rowid =
-- blocks.rowid. External content: the text lives once, in `blocks`; the index holds the terms of
-- the values with l-stroke folded to l (unicode61 has no decomposition for it), so a delete
-- passes the same folded values (see `FTS_DELETE_SESSION`).
CREATE VIRTUAL TABLE blocks_fts USING fts5 (
    text, tool_name, tool_command, tool_path,
    content = 'blocks',
    content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TABLE actions (
    action_id             TEXT NOT NULL,
    session_id            TEXT NOT NULL,
    message_id            TEXT NOT NULL,
    tool_use_block_id     TEXT NOT NULL,
    tool_result_block_id  TEXT,
    tool_name             TEXT NOT NULL,
    semantic_type         TEXT NOT NULL,
    tool_command          TEXT,
    tool_path             TEXT,
    tool_input            TEXT,
    output_text           TEXT,
    is_error              INTEGER NOT NULL,
    exit_code             INTEGER,
    occurred_at_ms        INTEGER,
    duration_ms           INTEGER,
    followup_class        TEXT,
    turn_id               TEXT,
    turn_committed        INTEGER
);
CREATE INDEX actions_session ON actions (session_id);

CREATE TABLE files (
    session_id               TEXT NOT NULL,
    path                     TEXT NOT NULL,
    action_count             INTEGER NOT NULL,
    first_seen_ms            INTEGER,
    last_seen_ms             INTEGER,
    first_message_id         TEXT NOT NULL,
    first_tool_use_block_id  TEXT NOT NULL,
    last_tool_use_block_id   TEXT NOT NULL
);
CREATE INDEX files_session ON files (session_id);

CREATE TABLE assertions (
    assertion_id   TEXT PRIMARY KEY,
    target_ref     TEXT NOT NULL,
    scope_ref      TEXT,
    kind           TEXT NOT NULL,
    key            TEXT,
    value          TEXT,
    body_text      TEXT,
    author_ref     TEXT,
    author_kind    TEXT NOT NULL,
    status         TEXT NOT NULL,
    visibility     TEXT NOT NULL,
    evidence_refs  TEXT NOT NULL DEFAULT '[]',
    created_at_ms  INTEGER NOT NULL,
    updated_at_ms  INTEGER NOT NULL
);
CREATE INDEX assertions_target ON assertions (target_ref);

CREATE TABLE runs (
    run_id         TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    role           TEXT NOT NULL,
    agent          TEXT,
    status         TEXT NOT NULL,
    harness        TEXT NOT NULL,
    cwd            TEXT,
    git_branch     TEXT,
    model          TEXT,
    started_at_ms  INTEGER,
    ended_at_ms    INTEGER
);
CREATE INDEX runs_session ON runs (session_id);

CREATE TABLE observed_events (
    event_id        TEXT NOT NULL,
    session_id      TEXT NOT NULL,
    kind            TEXT NOT NULL,
    subject         TEXT,
    object          TEXT,
    handler         TEXT,
    status          TEXT,
    delivery_state  TEXT,
    summary         TEXT,
    occurred_at_ms  INTEGER
);
CREATE INDEX observed_events_session ON observed_events (session_id);

CREATE TABLE context_snapshots (
    snapshot_id       TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    run_id            TEXT NOT NULL,
    boundary          TEXT NOT NULL,
    inheritance_mode  TEXT,
    segment           TEXT,
    text              TEXT NOT NULL,
    occurred_at_ms    INTEGER
);
CREATE INDEX context_snapshots_session ON context_snapshots (session_id);

CREATE TABLE delegations (
    delegation_id      TEXT NOT NULL,
    parent_session_id  TEXT NOT NULL,
    parent_message_id  TEXT NOT NULL,
    child_session_id   TEXT,
    instruction        TEXT,
    requested_model    TEXT,
    dispatch_model     TEXT,
    child_model        TEXT,
    mapping_state      TEXT NOT NULL,
    result_status      TEXT,
    is_error           INTEGER,
    exit_code          INTEGER,
    occurred_at_ms     INTEGER
);
CREATE INDEX delegations_parent ON delegations (parent_session_id);
CREATE INDEX delegations_child ON delegations (child_session_id);

CREATE TABLE events_raw (
    session_id      TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    type            TEXT NOT NULL,
    time            INTEGER,
    surface         TEXT NOT NULL,
    turn_id         TEXT,
    turn_committed  INTEGER,
    payload         TEXT NOT NULL
);
CREATE INDEX events_raw_session ON events_raw (session_id);

CREATE VIEW events AS
    SELECT session_id, seq, type, time, surface, turn_id, payload
    FROM events_raw
    WHERE turn_id IS NULL OR turn_committed = 1;

CREATE TABLE turns (
    session_id      TEXT NOT NULL,
    turn_id         TEXT NOT NULL,
    started_at_ms   INTEGER,
    completed_at_ms INTEGER,
    committed       INTEGER NOT NULL
);
CREATE INDEX turns_session ON turns (session_id);

CREATE TABLE usage (
    session_id          TEXT NOT NULL,
    message_id          TEXT,
    request_id          TEXT,
    model               TEXT,
    input_tokens        INTEGER NOT NULL,
    output_tokens       INTEGER NOT NULL,
    reasoning_tokens    INTEGER,
    cache_read_tokens   INTEGER NOT NULL,
    cache_write_tokens  INTEGER NOT NULL,
    occurred_at_ms      INTEGER,
    turn_id             TEXT,
    turn_committed      INTEGER
);
CREATE INDEX usage_session ON usage (session_id);
"#;

/// Removes one session's blocks (`?1` = session id) from the full-text index; run before the
/// blocks themselves are deleted.
pub const FTS_DELETE_SESSION: &str =
    "INSERT INTO blocks_fts (blocks_fts, rowid, text, tool_name, tool_command, tool_path)
     SELECT 'delete', rowid, replace(replace(text, 'ł', 'l'), 'Ł', 'L'),
            replace(replace(tool_name, 'ł', 'l'), 'Ł', 'L'),
            replace(replace(tool_command, 'ł', 'l'), 'Ł', 'L'),
            replace(replace(tool_path, 'ł', 'l'), 'Ł', 'L')
     FROM blocks
     WHERE session_id = ?1
       AND (text != '' OR COALESCE(tool_name, '') != '' OR COALESCE(tool_command, '') != ''
            OR COALESCE(tool_path, '') != '')";

/// Tables whose rows belong to one session through a `session_id` column: replacing or
/// deleting a session touches exactly these (plus `blocks_fts`, keyed by block rowid).
pub const SESSION_CHILD_TABLES: &[&str] = &[
    "messages",
    "blocks",
    "actions",
    "files",
    "runs",
    "observed_events",
    "context_snapshots",
    "events_raw",
    "turns",
    "usage",
];

/// A value as the full-text index stores it: `ł`/`Ł` folded to `l`/`L` (unicode61 has no
/// decomposition for them; `fts_query` folds queries the same way).
pub fn fold_for_index(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains(['ł', 'Ł']) {
        std::borrow::Cow::Owned(text.replace('ł', "l").replace('Ł', "L"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// The FTS5 query for `text` as the index stores terms: every word quoted (so no operator
/// syntax leaks through) and folded like indexed values; `phrase` keeps the words adjacent.
pub fn fts_query(text: &str, phrase: bool) -> String {
    let quote = |t: &str| format!("\"{}\"", fold_for_index(t).replace('"', "\"\""));
    if phrase {
        quote(text)
    } else {
        text.split_whitespace()
            .map(quote)
            .collect::<Vec<_>>()
            .join(" ")
    }
}
