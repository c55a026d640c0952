//! The archive's SQLite schema: one migration list, applied in order, recorded in
//! `PRAGMA user_version`, and the statements derived from the declaration of the tables
//! (`quarry_schema`). The declaration says what each table is (columns, types, keys, docs); the
//! migrations are the fixed history of how an archive file came to hold them, and a drift test
//! (`tests/catalog.rs`) checks that a migrated archive equals the declaration. Adding a column is
//! one edit in `quarry_schema` plus a migration.
//!
//! The schema uses only features of SQLite 3.40 (no JSONB, no contentless-delete FTS), so the
//! archive stays readable by the SQLite that users have.

/// The schema version an up-to-date archive records in `PRAGMA user_version`.
pub const SCHEMA_VERSION: i64 = 11;

/// The migrations, in order; migration `i` moves the archive from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    MIGRATION_1,
    MIGRATION_2,
    MIGRATION_3,
    MIGRATION_4,
    MIGRATION_5,
    MIGRATION_6,
    MIGRATION_7,
    MIGRATION_8,
    MIGRATION_9,
    MIGRATION_10,
    MIGRATION_11,
];

/// Version 10: a session's rows found by its number in order of arrival (issue 31). The
/// indexes of the tables holding many rows per session (`messages`, `blocks`, `events_raw`,
/// `turns`, `usage`, `usage_records`) were keyed by the session id, a random string: every
/// session a batch wrote touched a page of each, anywhere in the file, and an ingest into a
/// large archive read, dirtied and wrote back a page per session and index. `session_numbers`
/// numbers each session id once, in order of arrival (never renumbered, so a session's rows keep
/// their number across re-ingests), and those tables carry the number (`session_num`) and are
/// indexed by it: a new session's rows append to the end of each index. Lookups by session id
/// go through [`SESSION_NUM_OF`]. `source_resume` becomes a rowid table for the same reason: its
/// rows (a few kilobytes of reading state per file) were stored in the order of their paths, so
/// each file written rewrote a page anywhere in the table; now they append, and only the index
/// of the paths takes a random entry.
const MIGRATION_10: &str = r#"
CREATE TABLE session_numbers (
    session_num  INTEGER PRIMARY KEY,
    session_id   TEXT NOT NULL UNIQUE
);
INSERT INTO session_numbers (session_id)
    SELECT session_id FROM sessions WHERE session_id IS NOT NULL ORDER BY rowid;
INSERT OR IGNORE INTO session_numbers (session_id) SELECT DISTINCT session_id FROM messages;
INSERT OR IGNORE INTO session_numbers (session_id) SELECT DISTINCT session_id FROM blocks;
INSERT OR IGNORE INTO session_numbers (session_id) SELECT DISTINCT session_id FROM events_raw;
INSERT OR IGNORE INTO session_numbers (session_id) SELECT DISTINCT session_id FROM turns;
INSERT OR IGNORE INTO session_numbers (session_id) SELECT DISTINCT session_id FROM usage;
INSERT OR IGNORE INTO session_numbers (session_id)
    SELECT DISTINCT session_id FROM usage_records;

DROP INDEX messages_session;
ALTER TABLE messages ADD COLUMN session_num INTEGER NOT NULL DEFAULT 0;
UPDATE messages SET session_num =
    (SELECT n.session_num FROM session_numbers n WHERE n.session_id = messages.session_id);
CREATE INDEX messages_session ON messages (session_num);

DROP INDEX blocks_session;
ALTER TABLE blocks ADD COLUMN session_num INTEGER NOT NULL DEFAULT 0;
UPDATE blocks SET session_num =
    (SELECT n.session_num FROM session_numbers n WHERE n.session_id = blocks.session_id);
CREATE INDEX blocks_session ON blocks (session_num);

DROP INDEX events_raw_session;
ALTER TABLE events_raw ADD COLUMN session_num INTEGER NOT NULL DEFAULT 0;
UPDATE events_raw SET session_num =
    (SELECT n.session_num FROM session_numbers n WHERE n.session_id = events_raw.session_id);
CREATE INDEX events_raw_session ON events_raw (session_num);

DROP INDEX turns_session;
ALTER TABLE turns ADD COLUMN session_num INTEGER NOT NULL DEFAULT 0;
UPDATE turns SET session_num =
    (SELECT n.session_num FROM session_numbers n WHERE n.session_id = turns.session_id);
CREATE INDEX turns_session ON turns (session_num);

DROP INDEX usage_session;
ALTER TABLE usage ADD COLUMN session_num INTEGER NOT NULL DEFAULT 0;
UPDATE usage SET session_num =
    (SELECT n.session_num FROM session_numbers n WHERE n.session_id = usage.session_id);
CREATE INDEX usage_session ON usage (session_num);

DROP INDEX usage_records_record;
ALTER TABLE usage_records ADD COLUMN session_num INTEGER NOT NULL DEFAULT 0;
UPDATE usage_records SET session_num =
    (SELECT n.session_num FROM session_numbers n WHERE n.session_id = usage_records.session_id);
CREATE UNIQUE INDEX usage_records_record ON usage_records (session_num, response_key, recorded_via);

CREATE TABLE source_resume_v10 (
    path   TEXT NOT NULL PRIMARY KEY,
    state  TEXT NOT NULL
);
INSERT INTO source_resume_v10 SELECT path, state FROM source_resume;
DROP TABLE source_resume;
ALTER TABLE source_resume_v10 RENAME TO source_resume;

DROP VIEW events;
CREATE VIEW events AS
    SELECT session_id, seq, type, time, surface, turn_id, payload, replaced_by, source_seqs,
           session_num
    FROM events_raw
    WHERE turn_id IS NULL OR turn_committed = 1;
"#;

/// Version 11: `actions`, `observed_events` and `files` numbered as well (issue 31). After
/// version 10 their indexes were the last ones keyed by the session id that take an entry per
/// row (about 17 MB of index per million messages, against 31 MB for the key hashes of `usage`
/// and `usage_records`): a batch into a ten-million archive touched most of their pages and
/// wrote them back at its commit. Like the tables of version 10 they now carry the session's
/// number and are indexed by it, so a new session's rows append to the end of each index.
const MIGRATION_11: &str = r#"
INSERT OR IGNORE INTO session_numbers (session_id) SELECT DISTINCT session_id FROM actions;
INSERT OR IGNORE INTO session_numbers (session_id)
    SELECT DISTINCT session_id FROM observed_events;
INSERT OR IGNORE INTO session_numbers (session_id) SELECT DISTINCT session_id FROM files;

DROP INDEX actions_session;
ALTER TABLE actions ADD COLUMN session_num INTEGER NOT NULL DEFAULT 0;
UPDATE actions SET session_num =
    (SELECT n.session_num FROM session_numbers n WHERE n.session_id = actions.session_id);
CREATE INDEX actions_session ON actions (session_num);

DROP INDEX observed_events_session;
ALTER TABLE observed_events ADD COLUMN session_num INTEGER NOT NULL DEFAULT 0;
UPDATE observed_events SET session_num =
    (SELECT n.session_num FROM session_numbers n WHERE n.session_id = observed_events.session_id);
CREATE INDEX observed_events_session ON observed_events (session_num);

DROP INDEX files_session;
ALTER TABLE files ADD COLUMN session_num INTEGER NOT NULL DEFAULT 0;
UPDATE files SET session_num =
    (SELECT n.session_num FROM session_numbers n WHERE n.session_id = files.session_id);
CREATE INDEX files_session ON files (session_num);
"#;

/// The number of the session whose id is the statement's `?1`, as a scalar subquery: what a
/// lookup of a session's rows in a numbered table ([`quarry_schema::Table::numbered`]) compares
/// `session_num` with (`WHERE session_num = (SELECT ...)`, which SQLite answers from the
/// `session_num` index).
pub const SESSION_NUM_OF: &str = "(SELECT session_num FROM session_numbers WHERE session_id = ?1)";

/// The condition selecting the rows of the session `?1` in `table`: `session_num =
/// (SELECT ...)` where the table is numbered ([`quarry_schema::Table::numbered`]), else its
/// session column (`delegations`: `parent_session_id`) `= ?1`.
pub fn of_session(table: &str) -> Result<String, StatementError> {
    let def =
        quarry_schema::table(table).ok_or_else(|| StatementError(format!("no table {table}")))?;
    if def.numbered() {
        return Ok(format!("session_num = {SESSION_NUM_OF}"));
    }
    let key = def
        .session_key
        .ok_or_else(|| StatementError(format!("{table} has no owning session")))?;
    Ok(format!("{key} = ?1"))
}

/// Numbers the session `?1` (if the archive has not seen it yet): run before its rows are
/// written; [`SESSION_NUM_OF`] then finds its number.
pub const NUMBER_SESSION: &str = "INSERT OR IGNORE INTO session_numbers (session_id) VALUES (?1)";

/// Version 9: responses looked up by a 64-bit hash of their key (issue 31). Resolving a
/// batch's usage looks each of its responses up in `usage_records` and `usage` several times;
/// by the text key those were probes into indexes of long random strings (about 120 bytes an
/// entry, 0.8 GB at nine million messages) that slowed every ingest as the archive grew.
/// `key_hash` ([`key_hash`]) is what both tables are now searched by (an index entry of about
/// 16 bytes), the text compared only on the rows it finds. `usage_records` becomes a rowid
/// table (its rows append in arrival order; a record is still unique per session, key and
/// kind), and `usage` keeps no index on the text key.
const MIGRATION_9: &str = r#"
CREATE TABLE usage_records_v9 (
    session_id             TEXT NOT NULL,
    response_key           TEXT NOT NULL,
    recorded_via           TEXT NOT NULL,
    subagent_session_id    TEXT,
    message_id             TEXT,
    request_id             TEXT,
    model                  TEXT,
    input_tokens           INTEGER NOT NULL,
    output_tokens          INTEGER NOT NULL,
    reasoning_tokens       INTEGER,
    cache_read_tokens      INTEGER NOT NULL,
    cache_write_tokens     INTEGER NOT NULL,
    cache_write_5m_tokens  INTEGER NOT NULL,
    cache_write_1h_tokens  INTEGER NOT NULL,
    occurred_at_ms         INTEGER,
    turn_id                TEXT,
    turn_committed         INTEGER,
    seq                    INTEGER NOT NULL,
    key_hash               INTEGER NOT NULL
);
INSERT INTO usage_records_v9
    SELECT session_id, response_key, recorded_via, subagent_session_id, message_id, request_id,
           model, input_tokens, output_tokens, reasoning_tokens, cache_read_tokens,
           cache_write_tokens, cache_write_5m_tokens, cache_write_1h_tokens, occurred_at_ms,
           turn_id, turn_committed, seq, quarry_key_hash(response_key)
    FROM usage_records;
DROP TABLE usage_records;
ALTER TABLE usage_records_v9 RENAME TO usage_records;
CREATE UNIQUE INDEX usage_records_record ON usage_records (session_id, response_key, recorded_via);
CREATE INDEX usage_records_key ON usage_records (key_hash);
CREATE INDEX usage_records_subagent ON usage_records (subagent_session_id)
    WHERE subagent_session_id IS NOT NULL;

CREATE TABLE usage_v9 (
    session_id             TEXT NOT NULL,
    response_key           TEXT,
    message_id             TEXT,
    request_id             TEXT,
    model                  TEXT,
    input_tokens           INTEGER NOT NULL,
    output_tokens          INTEGER NOT NULL,
    reasoning_tokens       INTEGER,
    cache_read_tokens      INTEGER NOT NULL,
    cache_write_tokens     INTEGER NOT NULL,
    cache_write_5m_tokens  INTEGER NOT NULL,
    cache_write_1h_tokens  INTEGER NOT NULL,
    occurred_at_ms         INTEGER,
    turn_id                TEXT,
    turn_committed         INTEGER,
    recorded_via           TEXT NOT NULL,
    record_count           INTEGER NOT NULL,
    key_hash               INTEGER NOT NULL
);
INSERT INTO usage_v9
    SELECT session_id, response_key, message_id, request_id, model, input_tokens, output_tokens,
           reasoning_tokens, cache_read_tokens, cache_write_tokens, cache_write_5m_tokens,
           cache_write_1h_tokens, occurred_at_ms, turn_id, turn_committed, recorded_via,
           record_count, quarry_key_hash(response_key)
    FROM usage ORDER BY rowid;
DROP TABLE usage;
ALTER TABLE usage_v9 RENAME TO usage;
CREATE INDEX usage_session ON usage (session_id);
CREATE INDEX usage_key ON usage (key_hash);
"#;

/// The 64-bit hash `usage.key_hash` and `usage_records.key_hash` hold for a response key: the
/// first eight bytes of its BLAKE3 hash, little-endian. Fixed forever (archives store it);
/// lookups compare the key itself too, so two keys with one hash stay apart.
pub fn key_hash(key: &str) -> i64 {
    let hash = blake3::hash(key.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    i64::from_le_bytes(first)
}

/// The SQL function computing [`key_hash`], registered on every connection [`crate::Archive`]
/// opens (the migration to version 9 fills the column with it).
pub const KEY_HASH_FUNCTION: &str = "quarry_key_hash";

/// Version 7: a turn's duration, `turns.duration_ms`: from its prompt to its completion
/// (`completed_at_ms - started_at_ms`), what the dashboards' response durations read.
/// Version 8: grown files read from where they were left (docs/live.md). `source_files.hash`
/// becomes a hash chained over 256 KiB chunks, with the links the cheap check starts from
/// (`chunks`) and the file's identity (`file_id`); a row written before keeps its plain blake3
/// (`chunks` NULL) until the file is next read whole. `source_resume` holds where the next read
/// of a single-session JSONL file continues.
const MIGRATION_8: &str = r#"
ALTER TABLE source_files ADD COLUMN chunks TEXT;
ALTER TABLE source_files ADD COLUMN file_id TEXT;
CREATE TABLE source_resume (
    path   TEXT PRIMARY KEY,
    state  TEXT NOT NULL
) WITHOUT ROWID;
"#;

const MIGRATION_7: &str = r#"
ALTER TABLE turns ADD COLUMN duration_ms INTEGER;
UPDATE turns SET duration_ms = completed_at_ms - started_at_ms
    WHERE completed_at_ms IS NOT NULL AND started_at_ms IS NOT NULL;
"#;

/// Version 6: the assertion lifecycle (`docs/judgments.md`). `status` takes one of the closed
/// vocabulary ([`ASSERTION_STATUSES`]); an imported status outside it becomes `inactive`, its
/// value kept in `original_status` (and reported when the archive is opened). `target_ref`
/// holds a canonical ref: a bare session id (or native id), as earlier versions stored it,
/// becomes `session:<session id>`. `session_id` and `message_id` name the session and message
/// the target is or belongs to (what scopes, hidden messages and `sessions.tags` read);
/// `supersedes` the assertion an accepted or superseding one replaces; `context_policy` whether
/// the claim may be injected into context and whether it waits for a judgment; `staleness`
/// whether the object it cites is still in the archive.
const MIGRATION_6: &str = r#"
ALTER TABLE assertions ADD COLUMN session_id TEXT;
ALTER TABLE assertions ADD COLUMN message_id TEXT;
ALTER TABLE assertions ADD COLUMN supersedes TEXT;
ALTER TABLE assertions ADD COLUMN context_policy TEXT NOT NULL
    DEFAULT '{"inject":true,"promotion_required":false}';
ALTER TABLE assertions ADD COLUMN staleness TEXT NOT NULL DEFAULT 'current';
ALTER TABLE assertions ADD COLUMN original_status TEXT;
UPDATE assertions SET original_status = status, status = 'inactive'
    WHERE status NOT IN ('active', 'candidate', 'accepted', 'rejected', 'deferred', 'superseded',
                         'deleted', 'inactive');
UPDATE assertions SET target_ref = 'session:' || trim(target_ref)
    WHERE target_ref NOT GLOB 'session:*' AND target_ref NOT GLOB 'message:*'
      AND target_ref NOT GLOB 'block:*' AND target_ref NOT GLOB 'action:*'
      AND target_ref NOT GLOB 'assertion:*' AND target_ref NOT GLOB 'delegation:*'
      AND target_ref NOT GLOB 'run:*' AND target_ref NOT GLOB 'observed-event:*'
      AND target_ref NOT GLOB 'context-snapshot:*';
UPDATE assertions SET session_id = COALESCE(
        (SELECT s.session_id FROM sessions s WHERE s.session_id = substr(assertions.target_ref, 9)),
        (SELECT s.session_id FROM sessions s WHERE s.native_id = substr(assertions.target_ref, 9)
         ORDER BY s.session_id LIMIT 1),
        substr(target_ref, 9))
    WHERE target_ref GLOB 'session:*';
UPDATE assertions SET target_ref = 'session:' || session_id
    WHERE target_ref GLOB 'session:*' AND target_ref <> 'session:' || session_id;
UPDATE assertions SET
    session_id = CASE
        WHEN target_ref GLOB 'message:*' THEN
            (SELECT o.session_id FROM messages o WHERE o.message_id = substr(assertions.target_ref, 9))
        WHEN target_ref GLOB 'block:*' THEN
            (SELECT o.session_id FROM blocks o WHERE o.block_id = substr(assertions.target_ref, 7))
        WHEN target_ref GLOB 'action:*' THEN
            (SELECT o.session_id FROM actions o WHERE o.action_id = substr(assertions.target_ref, 8))
        WHEN target_ref GLOB 'delegation:*' THEN
            (SELECT o.parent_session_id FROM delegations o
             WHERE o.delegation_id = substr(assertions.target_ref, 12))
        WHEN target_ref GLOB 'run:*' THEN
            (SELECT o.session_id FROM runs o WHERE o.run_id = substr(assertions.target_ref, 5))
        WHEN target_ref GLOB 'observed-event:*' THEN
            (SELECT o.session_id FROM observed_events o
             WHERE o.event_id = substr(assertions.target_ref, 16))
        WHEN target_ref GLOB 'context-snapshot:*' THEN
            (SELECT o.session_id FROM context_snapshots o
             WHERE o.snapshot_id = substr(assertions.target_ref, 18))
        END,
    message_id = CASE
        WHEN target_ref GLOB 'message:*' THEN
            (SELECT o.message_id FROM messages o WHERE o.message_id = substr(assertions.target_ref, 9))
        WHEN target_ref GLOB 'block:*' THEN
            (SELECT o.message_id FROM blocks o WHERE o.block_id = substr(assertions.target_ref, 7))
        WHEN target_ref GLOB 'action:*' THEN
            (SELECT o.message_id FROM actions o WHERE o.action_id = substr(assertions.target_ref, 8))
        WHEN target_ref GLOB 'delegation:*' THEN
            (SELECT o.parent_message_id FROM delegations o
             WHERE o.delegation_id = substr(assertions.target_ref, 12))
        END
    WHERE target_ref NOT GLOB 'session:*' AND target_ref NOT GLOB 'assertion:*';
UPDATE assertions SET (session_id, message_id) = (SELECT o.session_id, o.message_id
        FROM assertions o WHERE o.assertion_id = substr(assertions.target_ref, 11))
    WHERE target_ref GLOB 'assertion:*';
UPDATE assertions SET staleness = 'target_missing'
    WHERE session_id IS NULL AND target_ref NOT GLOB 'session:*';
UPDATE assertions SET visibility = 'private',
    context_policy = '{"inject":false,"promotion_required":true}'
    WHERE status = 'candidate';
UPDATE assertions SET context_policy = '{"inject":false,"promotion_required":false}'
    WHERE status NOT IN ('active', 'candidate');
CREATE INDEX assertions_session ON assertions (session_id);
"#;

/// The closed vocabulary of `assertions.status` (declared in `quarry_schema`).
pub use quarry_schema::ASSERTION_STATUSES;

/// Version 5: the links between a session's records that its source logs, and the session's
/// replacement epoch. `events_raw.replaced_by` names the record that positionally replaced a
/// shadowed one (a rewritten or rewound Gemini message, a regenerated ChatGPT branch) and
/// `events_raw.source_seqs` the records a record names as its provenance (a Claude Code
/// `parentUuid`, a Codex call output's `call_id`, an export node's parent); the `events` view
/// shows both. `sessions.replacement_epoch` is the archive generation at which the session's
/// rows were last replaced rather than grown (a read cursor from before it is stale). Existing
/// sessions are re-derived by the next ingest (or `quarry reindex`) so their links are set.
/// `messages.event_seq` names the record a message was read from.
const MIGRATION_5: &str = r#"
ALTER TABLE events_raw ADD COLUMN replaced_by INTEGER;
ALTER TABLE events_raw ADD COLUMN source_seqs TEXT;
ALTER TABLE sessions ADD COLUMN replacement_epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN event_seq INTEGER;
DROP VIEW events;
CREATE VIEW events AS
    SELECT session_id, seq, type, time, surface, turn_id, payload, replaced_by, source_seqs
    FROM events_raw
    WHERE turn_id IS NULL OR turn_committed = 1;
INSERT INTO meta (key, value) SELECT 'rederive', 'pending' WHERE EXISTS (SELECT 1 FROM sessions)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value;
"#;

/// Version 4: `messages.hidden`, set where the source marks a message as never shown to the
/// user (reader scopes never see such messages). Existing sessions are re-derived by the next
/// ingest (or `quarry reindex`) so their flags are set.
const MIGRATION_4: &str = r#"
ALTER TABLE messages ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
INSERT INTO meta (key, value) SELECT 'rederive', 'pending' WHERE EXISTS (SELECT 1 FROM sessions)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value;
"#;

/// Version 3: `snapshot_changes`, the partitions of the columnar snapshot each write touched
/// (see [`SNAPSHOT_PARTITION`]). An archive migrated to it has no snapshot yet, so nothing is
/// recorded for what came before.
const MIGRATION_3: &str = r#"
CREATE TABLE snapshot_changes (
    partition   TEXT PRIMARY KEY,
    generation  INTEGER NOT NULL
) WITHOUT ROWID;
"#;

/// The snapshot partition of a session, as an SQL expression over its `created_at` (epoch
/// milliseconds): the UTC month `YYYY-MM`, or `none` for a session with no time. Every row of
/// a unit table lives in its owning session's partition; tables with no owning session
/// (`assertions`) are one partition, [`WHOLE_TABLE_PARTITION`].
pub const SNAPSHOT_PARTITION: &str =
    "COALESCE(strftime('%Y-%m', created_at / 1000, 'unixepoch'), 'none')";

/// The one partition of a table with no owning session.
pub const WHOLE_TABLE_PARTITION: &str = "all";

/// Notes, inside a write's transaction, the snapshot partition of session `?1` before its rows
/// are deleted; [`RESOLVE_USAGE`] records the noted partitions, with those of every session
/// written or whose usage moved, in `snapshot_changes` at the generation the write reached.
pub const NOTE_SESSION_PARTITION: &str = "INSERT OR IGNORE INTO temp.affected_partitions
     SELECT COALESCE(strftime('%Y-%m', created_at / 1000, 'unixepoch'), 'none')
     FROM sessions WHERE session_id = ?1";

/// Records, after the generation was bumped, that the partition of session `?1` changed (a tag).
pub const RECORD_SESSION_CHANGE: &str = "INSERT INTO snapshot_changes (partition, generation)
     SELECT COALESCE(strftime('%Y-%m', created_at / 1000, 'unixepoch'), 'none'),
            (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation')
     FROM sessions WHERE session_id = ?1
     ON CONFLICT (partition) DO UPDATE SET generation = excluded.generation";

/// Records that the tables with no owning session (`assertions`) changed.
pub const RECORD_WHOLE_TABLE_CHANGE: &str = "INSERT INTO snapshot_changes (partition, generation)
     SELECT 'all', (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation') WHERE true
     ON CONFLICT (partition) DO UPDATE SET generation = excluded.generation";

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

/// Version 2: usage counted once across the archive (`usage_records` → `usage` keyed by
/// `response_key`, `recorded_via`, `record_count`), the 5-minute / 1-hour cache-write split, the
/// machine a file was read on, copies of session files. Rows written by version 1 move over as
/// one record per usage row (5-minute writes, the default lifetime), and `meta.rederive` asks
/// the next ingest (or `quarry reindex`) to re-derive transcript sessions from `events_raw`
/// under the new rules.
const MIGRATION_2: &str = r#"
ALTER TABLE sessions ADD COLUMN cache_write_5m_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN cache_write_1h_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN machine TEXT;
UPDATE sessions SET cache_write_5m_tokens = cache_write_tokens;

ALTER TABLE messages ADD COLUMN cache_write_5m_tokens INTEGER;
ALTER TABLE messages ADD COLUMN cache_write_1h_tokens INTEGER;
UPDATE messages SET cache_write_5m_tokens = cache_write_tokens, cache_write_1h_tokens = 0
    WHERE cache_write_tokens IS NOT NULL;

ALTER TABLE source_files ADD COLUMN machine TEXT;
ALTER TABLE source_files ADD COLUMN copy_of TEXT;

CREATE TABLE usage_records (
    session_id             TEXT NOT NULL,
    response_key           TEXT NOT NULL,
    recorded_via           TEXT NOT NULL,
    subagent_session_id    TEXT,
    message_id             TEXT,
    request_id             TEXT,
    model                  TEXT,
    input_tokens           INTEGER NOT NULL,
    output_tokens          INTEGER NOT NULL,
    reasoning_tokens       INTEGER,
    cache_read_tokens      INTEGER NOT NULL,
    cache_write_tokens     INTEGER NOT NULL,
    cache_write_5m_tokens  INTEGER NOT NULL,
    cache_write_1h_tokens  INTEGER NOT NULL,
    occurred_at_ms         INTEGER,
    turn_id                TEXT,
    turn_committed         INTEGER,
    seq                    INTEGER NOT NULL,
    PRIMARY KEY (session_id, response_key, recorded_via)
) WITHOUT ROWID;
CREATE INDEX usage_records_key ON usage_records (response_key);
CREATE INDEX usage_records_subagent ON usage_records (subagent_session_id)
    WHERE subagent_session_id IS NOT NULL;

INSERT INTO usage_records
SELECT session_id, session_id || '#u' || rowid, 'transcript', NULL, message_id, request_id,
       model, input_tokens, output_tokens, reasoning_tokens, cache_read_tokens,
       cache_write_tokens, cache_write_tokens, 0, occurred_at_ms, turn_id, turn_committed, rowid
FROM usage;
DROP TABLE usage;

CREATE TABLE usage (
    session_id             TEXT NOT NULL,
    response_key           TEXT PRIMARY KEY,
    message_id             TEXT,
    request_id             TEXT,
    model                  TEXT,
    input_tokens           INTEGER NOT NULL,
    output_tokens          INTEGER NOT NULL,
    reasoning_tokens       INTEGER,
    cache_read_tokens      INTEGER NOT NULL,
    cache_write_tokens     INTEGER NOT NULL,
    cache_write_5m_tokens  INTEGER NOT NULL,
    cache_write_1h_tokens  INTEGER NOT NULL,
    occurred_at_ms         INTEGER,
    turn_id                TEXT,
    turn_committed         INTEGER,
    recorded_via           TEXT NOT NULL,
    record_count           INTEGER NOT NULL
);
CREATE INDEX usage_session ON usage (session_id);
INSERT INTO usage
SELECT session_id, response_key, message_id, request_id, model, input_tokens, output_tokens,
       reasoning_tokens, cache_read_tokens, cache_write_tokens, cache_write_5m_tokens,
       cache_write_1h_tokens, occurred_at_ms, turn_id, turn_committed, recorded_via, 1
FROM usage_records;

INSERT INTO meta (key, value) SELECT 'rederive', 'pending' WHERE EXISTS (SELECT 1 FROM sessions)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value;
"#;

/// Creates (once per connection) and empties the temporary tables [`RESOLVE_USAGE`] reads: the
/// response keys whose `usage` row must be resolved again, and sessions whose token sums must be
/// summed again whether or not they own one of those keys (a session just written).
pub const AFFECTED_TABLES: &[&str] = &[
    "CREATE TEMP TABLE IF NOT EXISTS affected_keys (key TEXT PRIMARY KEY, hash INTEGER NOT NULL)",
    "CREATE TEMP TABLE IF NOT EXISTS affected_sessions (session_id TEXT PRIMARY KEY)",
    "CREATE TEMP TABLE IF NOT EXISTS affected_partitions (partition TEXT PRIMARY KEY)",
    "CREATE TEMP TABLE IF NOT EXISTS shared_keys (key TEXT PRIMARY KEY, hash INTEGER NOT NULL)",
    "CREATE TEMP TABLE IF NOT EXISTS fresh_sessions (session_id TEXT PRIMARY KEY)",
    "DELETE FROM temp.affected_keys",
    "DELETE FROM temp.affected_sessions",
    "DELETE FROM temp.affected_partitions",
    "DELETE FROM temp.shared_keys",
    "DELETE FROM temp.fresh_sessions",
];

/// The `usage` rows of the keys a records query (`$records`: usage_records columns plus
/// `rank`, the `max_*` values and `record_count`) yields, one per key: its rank-1 record's.
macro_rules! resolve_usage_from {
    ($records:literal) => {
        concat!(
            "INSERT OR IGNORE INTO usage (session_id, response_key, message_id, request_id, model, input_tokens,
                                    output_tokens, reasoning_tokens, cache_read_tokens, cache_write_tokens,
                                    cache_write_5m_tokens, cache_write_1h_tokens, occurred_at_ms, turn_id,
                                    turn_committed, recorded_via, record_count, key_hash, session_num)
                 SELECT owner, response_key,
                        CASE WHEN owner = session_id THEN message_id END, request_id, model,
                        max_input, max_output, max_reasoning, max_cache_read, max_cache_write,
                        max_cache_write - MIN(max_cache_write_1h, max_cache_write), MIN(max_cache_write_1h, max_cache_write),
                        occurred_at_ms,
                        CASE WHEN owner = session_id THEN turn_id END,
                        CASE WHEN owner = session_id THEN turn_committed END,
                        recorded_via, record_count, key_hash,
                        CASE WHEN owner = session_id THEN session_num
                             ELSE (SELECT n.session_num FROM session_numbers n
                                   WHERE n.session_id = owner) END
             FROM (
                 SELECT q.*,
                        CASE WHEN q.recorded_via = 'progress' AND q.subagent_session_id IS NOT NULL
                                  AND EXISTS (SELECT 1 FROM sessions c
                                              WHERE c.session_id = q.subagent_session_id)
                             THEN q.subagent_session_id ELSE q.session_id END AS owner
                 FROM (",
            $records,
            ") q)
             WHERE rank = 1"
        )
    };
}

/// The `usage` row of a response one record alone holds: what [`RESOLVE_USAGE`] would resolve
/// it to (its owner, its values, the 1-hour cache writes at most the total and the rest
/// 5-minute), written as the record is (ingest). Its parameters are those of the record's own
/// insert into `usage_records` (its columns in order, `?1`–`?20`), so one parameter list serves
/// both. A `VALUES` insert writes one row and opens no statement journal; an `INSERT ... SELECT`
/// (even of one row) does, and FTS5 flushes its pending terms into a new segment at every
/// statement journal: one ingest batch then wrote a segment per response instead of one.
pub const RESOLVE_ALONE: &str =
    "INSERT INTO usage (session_id, response_key, message_id, request_id, model,
         input_tokens, output_tokens, reasoning_tokens, cache_read_tokens, cache_write_tokens,
         cache_write_5m_tokens, cache_write_1h_tokens, occurred_at_ms, turn_id, turn_committed,
         recorded_via, record_count, key_hash, session_num)
     VALUES (?1, ?2, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12 - MIN(?14, ?12), MIN(?14, ?12), ?15,
             ?16, ?17, ?3, 1, ?19, ?20)";

/// Whether any record of the response key `?1` (hash `?2`) is archived: a row when one is.
pub const RECORDED: &str =
    "SELECT 1 FROM usage_records WHERE key_hash = ?2 AND response_key = ?1 LIMIT 1";

/// Lists in `temp.affected_sessions` the other sessions whose transcripts record a response
/// that session `?1`'s transcript records (their links are looked at again).
pub const SHARING_SESSIONS: &str = "INSERT OR IGNORE INTO temp.affected_sessions
     SELECT DISTINCT o.session_id FROM usage_records r
     JOIN usage_records o ON o.key_hash = r.key_hash AND o.response_key = r.response_key
          AND o.session_id <> r.session_id AND o.recorded_via = 'transcript'
     WHERE r.session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1)
       AND r.recorded_via = 'transcript'";

/// Lists the sessions owning a `usage` row of a key in `temp.affected_keys` (before the rows
/// are resolved again, and after).
const AFFECTED_OWNERS: &str = "INSERT OR IGNORE INTO temp.affected_sessions
     SELECT u.session_id FROM temp.affected_keys k
     CROSS JOIN usage u ON u.key_hash = k.hash AND u.response_key = k.key";

/// Re-resolves the `usage` rows of every key in `temp.affected_keys` from `usage_records`, and
/// the token sums of every session that owned or now owns one of them (plus the sessions listed
/// in `temp.affected_sessions`). The rule (docs/accounting.md): one row per response key; the
/// owner is the earliest session (by `created_at`, then id) with a transcript record, else —
/// for a response only progress records carry — the subagent's session when it is in the
/// archive, else the earliest recording session; each token count is the largest over the
/// records, and the 1-hour cache writes never exceed the total (the rest are 5-minute).
/// The writes say `OR IGNORE` (nothing can conflict: the keys' rows were just deleted, every
/// value is a MAX or SUM of NOT NULL columns, and every owner is a numbered session) so that no statement journal opens: FTS5 flushes
/// its pending index at each one.
pub const RESOLVE_USAGE: &[&str] = &[
    AFFECTED_OWNERS,
    "DELETE FROM usage WHERE rowid IN (SELECT u.rowid FROM temp.affected_keys k
                                       CROSS JOIN usage u ON u.key_hash = k.hash AND u.response_key = k.key)",
    // Keys with more than one record go through the window below; the rest (most keys: a
    // response one transcript recorded) are their one record.
    "INSERT OR IGNORE INTO temp.shared_keys
         SELECT key, hash FROM temp.affected_keys k
         WHERE (SELECT COUNT(*) FROM (SELECT 1 FROM usage_records o
                                      WHERE o.key_hash = k.hash AND o.response_key = k.key
                                      LIMIT 2)) = 2",
    resolve_usage_from!(
        "SELECT r.*, 1 AS rank,
                r.input_tokens AS max_input, r.output_tokens AS max_output,
                r.reasoning_tokens AS max_reasoning, r.cache_read_tokens AS max_cache_read,
                r.cache_write_tokens AS max_cache_write,
                r.cache_write_1h_tokens AS max_cache_write_1h, 1 AS record_count
         FROM temp.affected_keys k
         CROSS JOIN usage_records r ON r.key_hash = k.hash AND r.response_key = k.key
         WHERE k.key NOT IN (SELECT key FROM temp.shared_keys)"
    ),
    resolve_usage_from!(
        "SELECT r.*,
                ROW_NUMBER() OVER (PARTITION BY r.response_key
                                   ORDER BY r.recorded_via = 'progress', s.created_at IS NULL,
                                            s.created_at, r.session_id, r.seq) AS rank,
                MAX(r.input_tokens) OVER k AS max_input,
                MAX(r.output_tokens) OVER k AS max_output,
                MAX(r.reasoning_tokens) OVER k AS max_reasoning,
                MAX(r.cache_read_tokens) OVER k AS max_cache_read,
                MAX(r.cache_write_tokens) OVER k AS max_cache_write,
                MAX(r.cache_write_1h_tokens) OVER k AS max_cache_write_1h,
                COUNT(*) OVER k AS record_count
         FROM temp.shared_keys k
         CROSS JOIN usage_records r ON r.key_hash = k.hash AND r.response_key = k.key
         LEFT JOIN sessions s ON s.session_id = r.session_id
         WINDOW k AS (PARTITION BY r.response_key)"
    ),
    AFFECTED_OWNERS,
    // Continuations: a session whose transcript replays responses another session recorded
    // (a resumed or forked session: the same response ids) continues the session holding the
    // latest of them that came before it: started earlier, or at the same time (a resumed
    // session replays its origin's first records) and ended earlier. That order is strict, so
    // the links form no cycle. Only sessions whose source names no parent are linked so; each holder of a touched
    // response is looked at again.
    "INSERT OR IGNORE INTO temp.affected_sessions
         SELECT r.session_id FROM temp.affected_keys k
         CROSS JOIN usage_records r ON r.key_hash = k.hash AND r.response_key = k.key
         WHERE r.recorded_via = 'transcript'",
    // A session listed in `temp.fresh_sessions` (new, and every response of it its own at the
    // time it was written) is looked at only if a later file recorded one of its responses.
    "DELETE FROM temp.fresh_sessions WHERE session_id IN (
         SELECT r.session_id FROM temp.affected_keys k
         CROSS JOIN usage_records r ON r.key_hash = k.hash AND r.response_key = k.key)",
    "UPDATE OR IGNORE sessions SET parent_session_id = c.parent,
            root_session_id = COALESCE(
                (SELECT COALESCE(p.root_session_id, p.session_id) FROM sessions p
                 WHERE p.session_id = c.parent), sessions.session_id),
            branch_type = CASE WHEN c.parent IS NULL THEN NULL ELSE 'continuation' END
     FROM (SELECT a.session_id AS id,
                  (SELECT o.session_id FROM usage_records r
                   JOIN usage_records o ON o.key_hash = r.key_hash
                        AND o.response_key = r.response_key
                        AND o.session_id <> r.session_id AND o.recorded_via = 'transcript'
                   JOIN sessions t ON t.session_id = o.session_id
                   JOIN sessions s ON s.session_id = r.session_id
                   WHERE r.session_num = (SELECT n.session_num FROM session_numbers n
                                          WHERE n.session_id = a.session_id)
                     AND r.recorded_via = 'transcript'
                     AND (t.created_at < s.created_at
                          OR (t.created_at = s.created_at AND t.updated_at < s.updated_at))
                     AND t.parent_session_id IS NOT r.session_id
                   ORDER BY r.seq DESC, t.created_at DESC, t.updated_at DESC, t.session_id
                   LIMIT 1) AS parent
           FROM temp.affected_sessions a
           WHERE a.session_id NOT IN (SELECT session_id FROM temp.fresh_sessions)) c
     WHERE sessions.session_id = c.id
       -- Said again so that SQLite looks the sessions up instead of reading the whole table.
       AND sessions.session_id IN (SELECT session_id FROM temp.affected_sessions)
       AND (sessions.parent_session_id IS NULL OR sessions.branch_type = 'continuation')
       AND sessions.parent_session_id IS NOT c.parent",
    // Roots: a session with a parent has its parent's root (the parent itself when the parent
    // has none, the parent's id when the archive lacks it), for the sessions written and
    // their children.
    "INSERT OR IGNORE INTO temp.affected_sessions
         SELECT session_id FROM sessions
         WHERE parent_session_id IN (SELECT session_id FROM temp.affected_sessions)",
    "UPDATE OR IGNORE sessions SET root_session_id = COALESCE(
            (SELECT COALESCE(p.root_session_id, p.session_id) FROM sessions p
             WHERE p.session_id = sessions.parent_session_id), sessions.parent_session_id)
     WHERE parent_session_id IS NOT NULL
       AND session_id IN (SELECT session_id FROM temp.affected_sessions)",
    // Twice: a child updated before its parent in one pass reads the parent's old root.
    "UPDATE OR IGNORE sessions SET root_session_id = COALESCE(
            (SELECT COALESCE(p.root_session_id, p.session_id) FROM sessions p
             WHERE p.session_id = sessions.parent_session_id), sessions.parent_session_id)
     WHERE parent_session_id IS NOT NULL
       AND session_id IN (SELECT session_id FROM temp.affected_sessions)",
    "UPDATE OR IGNORE sessions SET (input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
                          cache_write_5m_tokens, cache_write_1h_tokens) =
         (SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
                 COALESCE(SUM(cache_read_tokens), 0), COALESCE(SUM(cache_write_tokens), 0),
                 COALESCE(SUM(cache_write_5m_tokens), 0), COALESCE(SUM(cache_write_1h_tokens), 0)
          FROM usage u
          WHERE u.session_num = (SELECT n.session_num FROM session_numbers n
                                 WHERE n.session_id = sessions.session_id)
            AND u.recorded_via <> 'approximate')
     WHERE session_id IN (SELECT session_id FROM temp.affected_sessions)",
    // The snapshot partitions of every session written, or whose usage moved, with those noted
    // before sessions were deleted (`NOTE_SESSION_PARTITION`), changed at this generation.
    "INSERT OR IGNORE INTO temp.affected_partitions
     SELECT COALESCE(strftime('%Y-%m', created_at / 1000, 'unixepoch'), 'none')
     FROM sessions WHERE session_id IN (SELECT session_id FROM temp.affected_sessions)",
    "INSERT INTO snapshot_changes (partition, generation)
     SELECT partition, (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation')
     FROM temp.affected_partitions WHERE true
     ON CONFLICT (partition) DO UPDATE SET generation = excluded.generation",
    "DELETE FROM temp.affected_partitions",
    "DELETE FROM temp.shared_keys",
    "DELETE FROM temp.affected_keys",
    "DELETE FROM temp.affected_sessions",
    "DELETE FROM temp.fresh_sessions",
];

/// Removes one session's blocks (`?1` = session id) from the full-text index; run before the
/// blocks themselves are deleted.
pub const FTS_DELETE_SESSION: &str =
    "INSERT INTO blocks_fts (blocks_fts, rowid, text, tool_name, tool_command, tool_path)
     SELECT 'delete', rowid, replace(replace(text, 'ł', 'l'), 'Ł', 'L'),
            replace(replace(tool_name, 'ł', 'l'), 'Ł', 'L'),
            replace(replace(tool_command, 'ł', 'l'), 'Ł', 'L'),
            replace(replace(tool_path, 'ł', 'l'), 'Ł', 'L')
     FROM blocks
     WHERE session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1)
       AND (text != '' OR COALESCE(tool_name, '') != '' OR COALESCE(tool_command, '') != ''
            OR COALESCE(tool_path, '') != '')";

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

/// A statement that cannot be built from the declaration (a table or column it does not
/// declare): a mistake in the caller, reported rather than panicking.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot build a statement from the declaration of the tables: {0}")]
pub struct StatementError(pub String);

impl From<StatementError> for rusqlite::Error {
    fn from(e: StatementError) -> Self {
        rusqlite::Error::ToSqlConversionFailure(Box::new(e))
    }
}

/// `INSERT INTO table (every declared column) VALUES (...)`, columns in declaration order.
///
/// Each column gets the next numbered placeholder (`?1`, `?2`, ...), so the parameters are the
/// declared columns in order — except the columns of `exprs`, whose SQL expression stands in
/// their place and takes no parameter. An expression names another column's placeholder as
/// `{column}` (`("dispatch_model", "{requested_model}")`).
pub fn insert_statement(table: &str, exprs: &[(&str, &str)]) -> Result<String, StatementError> {
    let def = quarry_schema::table(table)
        .filter(|t| t.kind != quarry_schema::TableKind::View)
        .ok_or_else(|| StatementError(format!("no table {table}")))?;
    for (column, _) in exprs {
        if def.column(column).is_none() {
            return Err(StatementError(format!("{table} has no column {column}")));
        }
    }
    let mut placeholders: Vec<(&str, String)> = Vec::new();
    for column in def.column_names() {
        if !exprs.iter().any(|(c, _)| *c == column) {
            let n = placeholders.len() + 1;
            placeholders.push((column, format!("?{n}")));
        }
    }
    let mut values = Vec::with_capacity(def.columns.len());
    for column in def.column_names() {
        let value = match exprs.iter().find(|(c, _)| *c == column) {
            None => placeholders
                .iter()
                .find(|(c, _)| *c == column)
                .map(|(_, p)| p.clone())
                .unwrap_or_default(),
            Some((_, expr)) => substitute(expr, &placeholders).map_err(|name| {
                StatementError(format!("{table}.{column}: no placeholder {{{name}}}"))
            })?,
        };
        values.push(value);
    }
    Ok(format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        def.column_names().collect::<Vec<_>>().join(", "),
        values.join(", ")
    ))
}

/// [`insert_statement`] that replaces an existing row with the same key: `ON CONFLICT (key) DO
/// UPDATE SET` every other column to the new value.
pub fn upsert_statement(table: &str, exprs: &[(&str, &str)]) -> Result<String, StatementError> {
    let insert = insert_statement(table, exprs)?;
    let def =
        quarry_schema::table(table).ok_or_else(|| StatementError(format!("no table {table}")))?;
    if def.key.is_empty() {
        return Err(StatementError(format!("{table} has no key to conflict on")));
    }
    let set: Vec<String> = def
        .column_names()
        .filter(|c| !def.key.contains(c))
        .map(|c| format!("{c} = excluded.{c}"))
        .collect();
    Ok(format!(
        "{insert} ON CONFLICT ({}) DO UPDATE SET {}",
        def.key.join(", "),
        set.join(", ")
    ))
}

/// `INSERT INTO <table>_fts (rowid, <the fulltext columns>) VALUES (?1, ?2, ...)`: one row of
/// `table`'s full-text index, `?1` the row's rowid and then its full-text columns in declared
/// order (folded with [`fold_for_index`]).
pub fn fulltext_insert_statement(table: &str) -> Result<String, StatementError> {
    let def =
        quarry_schema::table(table).ok_or_else(|| StatementError(format!("no table {table}")))?;
    let index = def
        .fulltext_index()
        .ok_or_else(|| StatementError(format!("{table} has no full-text index")))?;
    let marks: Vec<String> = (1..=def.fulltext.len() + 1)
        .map(|n| format!("?{n}"))
        .collect();
    Ok(format!(
        "INSERT INTO {} (rowid, {}) VALUES ({})",
        index.name,
        def.fulltext.join(", "),
        marks.join(", ")
    ))
}

/// `expr` with each `{column}` replaced by that column's placeholder; `Err(name)` for a name
/// without one.
fn substitute(expr: &str, placeholders: &[(&str, String)]) -> Result<String, String> {
    let mut out = String::with_capacity(expr.len());
    let mut rest = expr;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after.find('}').ok_or_else(|| after.to_string())?;
        let name = &after[..close];
        let (_, p) = placeholders
            .iter()
            .find(|(c, _)| *c == name)
            .ok_or_else(|| name.to_string())?;
        out.push_str(p);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn insert_numbers_declared_columns_in_order() {
        assert_eq!(
            insert_statement("turns", &[]).unwrap(),
            "INSERT INTO turns (session_id, turn_id, started_at_ms, completed_at_ms, committed, \
             duration_ms, session_num) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
        );
        let sql = insert_statement(
            "delegations",
            &[
                ("dispatch_model", "{requested_model}"),
                (
                    "child_model",
                    "(SELECT model FROM sessions WHERE session_id = {child_session_id})",
                ),
                ("exit_code", "NULL"),
            ],
        )
        .unwrap();
        assert!(
            sql.ends_with(
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, (SELECT model FROM sessions WHERE session_id = ?4), ?7, ?8, ?9, NULL, ?10)"
            ),
            "{sql}"
        );
    }

    #[test]
    fn upsert_sets_every_non_key_column() {
        let sql = upsert_statement("meta", &[]).unwrap();
        assert_eq!(
            sql,
            "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        );
    }

    #[test]
    fn fulltext_statements_name_the_declared_columns() {
        assert_eq!(
            fulltext_insert_statement("blocks").unwrap(),
            "INSERT INTO blocks_fts (rowid, text, tool_name, tool_command, tool_path) \
             VALUES (?1, ?2, ?3, ?4, ?5)"
        );
        assert!(fulltext_insert_statement("messages").is_err());
        // The delete (written by hand for its folding) names the same columns.
        let declared = quarry_schema::table("blocks").unwrap().fulltext.join(", ");
        assert!(
            FTS_DELETE_SESSION.contains(&format!("(blocks_fts, rowid, {declared})")),
            "{FTS_DELETE_SESSION}"
        );
    }

    /// The plan SQLite gives each statement of the usage resolution and each lookup of records
    /// by key: every table of the archive is searched by a key or an index, never read whole
    /// (only the temporary tables listing what to resolve, and the rows of subqueries, are),
    /// and no automatic index is built. A scan there reads a whole table of the archive once per
    /// batch: the continuation links' update read all of `sessions` until it named the sessions
    /// to look up a second time.
    #[test]
    fn lookups_search_and_never_scan() {
        let dir = tempfile::tempdir().unwrap();
        let archive = crate::Archive::open(&dir.path().join("a.db")).unwrap();
        let conn = archive.conn();
        for sql in AFFECTED_TABLES {
            conn.execute(sql, []).unwrap();
        }
        let mut statements: Vec<&str> = RESOLVE_USAGE.to_vec();
        statements.extend([RECORDED, SHARING_SESSIONS, RESOLVE_ALONE]);
        let mut problems = Vec::new();
        for sql in statements {
            let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            let nulls = vec![rusqlite::types::Value::Null; stmt.parameter_count()];
            let details: Vec<String> = stmt
                .query_map(rusqlite::params_from_iter(nulls), |r| r.get::<_, String>(3))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            // What may be read whole: a temporary table (by its name or the alias the statement
            // gives it) and the rows a subquery yielded (a subquery's own name, or an alias
            // the plan materializes or runs as a co-routine).
            let words: Vec<&str> = sql.split_whitespace().collect();
            let temporary = |t: &str| {
                t.starts_with("temp.")
                    || t.starts_with("(subquery-")
                    || words
                        .windows(2)
                        .any(|w| w[0].starts_with("temp.") && w[1] == t)
                    || details.iter().any(|d| {
                        d == &format!("MATERIALIZE {t}") || d == &format!("CO-ROUTINE {t}")
                    })
            };
            for d in &details {
                let scanned = d
                    .strip_prefix("SCAN ")
                    .map(|t| t.split(' ').next().unwrap_or(""));
                if d.contains("AUTOMATIC") || scanned.is_some_and(|t| !temporary(t)) {
                    problems.push(format!("{d}\n    in {sql}"));
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn mistakes_are_errors() {
        assert!(insert_statement("nope", &[]).is_err());
        assert!(insert_statement("events", &[]).is_err(), "a view");
        assert!(insert_statement("turns", &[("nope", "1")]).is_err());
        assert!(insert_statement("turns", &[("committed", "{nope}")]).is_err());
        assert!(insert_statement("turns", &[("committed", "{committed}")]).is_err());
        assert!(upsert_statement("blocks_fts", &[]).is_err());
    }
}
