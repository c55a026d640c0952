//! OpenCode sessions (`sst/opencode`, `packages/opencode/src/session/`), from its SQLite store:
//! `${XDG_DATA_HOME:-~/.local/share}/opencode/opencode.db` (`$OPENCODE_DB` moves it; a
//! non-release build writes `opencode-<channel>.db`), in WAL mode, written since OpenCode 1.2.0.
//! Tables `session (id, project_id, parent_id, directory, title, version, time_created,
//! time_updated, ...)`, `message (id, session_id, time_created, time_updated, data)` and `part
//! (id, message_id, session_id, time_created, time_updated, data)`, whose `data` is the JSON of
//! the message or part without its ids. [`super::sources`] reads each session into a document
//! of JSON Lines, `{"opencode": "session", "row": {...}}`, then each message
//! (`{"opencode": "message", "id", "data"}`) followed by its parts (`{"opencode": "part", "id",
//! "message_id", "data"}`), which [`parse`] reads.
//!
//! A message's `data` is `{role: "user", time {created}, ...}` or `{role: "assistant", time
//! {created, completed?}, modelID, providerID, agent, path {cwd, root}, cost, tokens {input,
//! output, reasoning, cache {read, write}, total?}, finish?, error?}`; each model call is a
//! message of its own (OpenCode 0.8 on), its `tokens` the call's. Parts: `text {text,
//! synthetic?}`, `reasoning {text}`, `tool {callID, tool, state {status, input, output?,
//! error?}}`, `file {mime, filename}`, `compaction`, and bookkeeping (`step-start`,
//! `step-finish`, `snapshot`, `patch`, `agent`, `subtask`, `retry`).
//!
//! Usage: one row per assistant message with tokens. `tokens.input` excludes both cache counts
//! (OpenCode 1.0.62 on). `tokens.output` holds the reasoning up to OpenCode 1.3.15 and not from
//! 1.3.16 (Kilo CLI: not in 7), which the message does not name: its `tokens.total` tells where
//! it matches one reading only, else the session's `version` (the release that created it), so
//! `output_tokens` always includes the reasoning. Kilo CLI, a fork, writes the same tables to
//! `kilo.db`; its sessions get their own origin. A subagent's calls are in its own
//! session (`parent_id`). The trap is the fork: a new session copying the messages and parts
//! under new ids with the same times, models and tokens; the response key is what survives the
//! copy, `opencode:<created ms>:<provider>/<model>:<counts>` (Kilo's `kilo:...`), so the copy adds nothing and the
//! earlier session owns the response. A message whose counts are all 0 (an aborted call) has
//! no row.
//!
//! Two traps of older releases, whose sessions come from the JSON files of
//! [`super::opencode_files`]: before 0.8 a message ran many model calls (steps), each with a
//! `step-finish` part carrying its tokens, while the message's `tokens` kept the last step's
//! only, so a message with several such parts counts each step; and before 1.0.62 `input` was
//! the AI SDK's as it came, which holds the cache reads for every provider but Anthropic's and
//! Bedrock's, so a session created by such a release has them taken out of the input (where
//! the input is not below them: a later release writing into the session stored it without).

use rusqlite::Connection;
use serde_json::Value;

use super::lines::Line;
use super::model::*;
use super::text::{json_time, str_field};

/// The sessions of an OpenCode database, oldest first, with the size of each one's rows.
pub fn sessions(conn: &Connection) -> rusqlite::Result<Vec<(String, u64)>> {
    super::sources::list(
        conn,
        "SELECT s.id,
                (SELECT COALESCE(SUM(length(m.data)), 0) FROM message m WHERE m.session_id = s.id)
              + (SELECT COALESCE(SUM(length(p.data)), 0) FROM part p WHERE p.session_id = s.id)
         FROM session s ORDER BY s.time_created, s.id",
    )
}

/// One session's rows as JSON Lines: the session (with the name of the agent whose database it
/// is), then each message and its parts; `None` when the session is gone (deleted since the
/// sessions were listed).
pub fn document(
    conn: &Connection,
    session: &str,
    agent: &str,
) -> rusqlite::Result<Option<Vec<u8>>> {
    let Some(row) =
        super::sources::rows(conn, "SELECT * FROM session WHERE id = ?1", session)?.pop()
    else {
        return Ok(None);
    };
    let mut out = Vec::new();
    let mut line = |value: Value| super::sources::json_line(&mut out, &value);
    line(serde_json::json!({"opencode": "session", "agent": agent, "row": row}));
    let mut parts = conn.prepare(
        "SELECT id, message_id, data FROM part WHERE session_id = ?1 ORDER BY message_id, id",
    )?;
    let mut by_message: std::collections::HashMap<String, Vec<(String, String)>> =
        std::collections::HashMap::new();
    for part in parts.query_map([session], |r| {
        Ok((
            super::sources::text(r.get_ref(0)?),
            super::sources::text(r.get_ref(1)?),
            super::sources::text(r.get_ref(2)?),
        ))
    })? {
        let (id, message, data) = part?;
        by_message.entry(message).or_default().push((id, data));
    }
    let mut messages = conn
        .prepare("SELECT id, data FROM message WHERE session_id = ?1 ORDER BY time_created, id")?;
    for message in messages.query_map([session], |r| {
        Ok((
            super::sources::text(r.get_ref(0)?),
            super::sources::text(r.get_ref(1)?),
        ))
    })? {
        let (id, data) = message?;
        line(serde_json::json!({"opencode": "message", "id": id, "data": json_of(&data)}));
        for (part, data) in by_message.remove(&id).unwrap_or_default() {
            line(serde_json::json!({
                "opencode": "part", "id": part, "message_id": id, "data": json_of(&data)
            }));
        }
    }
    Ok(Some(out))
}

/// A `data` column's JSON; text that is not JSON is kept as a string (the reader reports it).
fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// Whether a JSONL line is a row of an OpenCode session's document.
pub fn is_line(value: &Value) -> bool {
    matches!(
        value.get("opencode").and_then(Value::as_str),
        Some("session" | "message" | "part")
    )
}

/// The session's reading: the message being assembled from its parts, and the tool results
/// that follow it.
struct Reader {
    session: SessionDraft,
    /// The release that created the session keeps the reasoning out of `tokens.output`
    /// (OpenCode 1.3.16 on, Kilo CLI 7 on), where a call's `total` does not say.
    reasoning_apart: bool,
    /// The release that created the session stored the AI SDK's input as it came, the cache
    /// reads inside for every provider but Anthropic's and Bedrock's (OpenCode before 1.0.62).
    input_holds_cache: bool,
    /// The assistant message's call, counted when its parts have been read.
    call: Option<Call>,
    /// Its `step-finish` parts' tokens (with their events): more than one in a message of
    /// OpenCode before 0.8, whose own `tokens` are then the last step's.
    steps: Vec<(Value, usize)>,
    /// The message being read (`None` after a message that could not be read: its parts are
    /// dropped).
    message: Option<MessageDraft>,
    /// The tool results of its calls, which follow it.
    results: Vec<MessageDraft>,
    /// Its text parts: some OpenCode added (`synthetic`), some not.
    synthetic: bool,
    authored: bool,
}

impl Reader {
    /// Ends the message being read: its usage, one row per call (each step of a message that
    /// ran several, else the message's own tokens); a user message whose text OpenCode wrote
    /// all itself (a file's contents, a tool's replayed output) is not one a person typed.
    fn flush(&mut self) {
        let steps = std::mem::take(&mut self.steps);
        if let Some(mut m) = self.message.take() {
            if let Some(call) = self.call.take() {
                m.tokens = if steps.len() > 1 {
                    let mut sum: Option<Tokens> = None;
                    for (step, (tokens, event_index)) in steps.iter().enumerate() {
                        if let Some(t) = usage(self, &call, tokens, Some(step), *event_index) {
                            sum.get_or_insert_with(Tokens::default).add(&t);
                        }
                    }
                    sum
                } else {
                    usage(self, &call, &call.tokens, None, call.event_index)
                };
            }
            m.injected = m.role == Role::User && self.synthetic && !self.authored;
            self.session.messages.push(m);
        }
        self.call = None;
        self.session.messages.append(&mut self.results);
        (self.synthetic, self.authored) = (false, false);
    }
}

/// An assistant message's model call, as its data names it.
struct Call {
    /// The message's id.
    id: Option<String>,
    provider: String,
    model: Option<String>,
    /// When it was created (the key's time, which a fork's copy keeps).
    time: Option<i64>,
    /// Its `tokens`.
    tokens: Value,
    event_index: usize,
}

/// Reads one session's document.
pub fn parse(name: &str, lines: Vec<Line>, parsed: &mut ParsedFile) {
    let mut reader = Reader {
        session: SessionDraft::new(Origin::OpenCode, id_from_name(name)),
        reasoning_apart: false,
        input_holds_cache: false,
        call: None,
        steps: Vec::new(),
        message: None,
        results: Vec::new(),
        synthetic: false,
        authored: false,
    };
    for line in lines {
        parsed.records += 1;
        let value = &line.value;
        let kind = str_field(value, "opencode").unwrap_or_default();
        let data = value.get("data").unwrap_or(&Value::Null);
        let time = json_time(data.get("time").and_then(|t| t.get("created")))
            .or_else(|| json_time(data.get("time").and_then(|t| t.get("start"))));
        // A session of JSON files names the file the record came from (a session's own file
        // only when it is damaged).
        let file = str_field(value, "file").map_or_else(String::new, |f| format!(" ({f})"));
        if kind == "session" && value.get("data").is_some_and(|d| !d.is_object()) {
            parsed.diagnostics.push(Diagnostic {
                file: name.to_string(),
                line: Some(line.number),
                kind: "bad_record",
                reason: format!("an OpenCode session whose file is not a JSON object{file}"),
            });
        }
        if kind != "session" && !data.is_object() {
            parsed.diagnostics.push(Diagnostic {
                file: name.to_string(),
                line: Some(line.number),
                kind: "bad_record",
                reason: format!("an OpenCode {kind} whose data is not a JSON object{file}"),
            });
            if kind == "message" {
                // Its parts belong to no message read.
                reader.flush();
            }
            reader
                .session
                .push_event(&kind, time, Surface::LogOnly, line.text);
            continue;
        }
        match kind.as_str() {
            "session" => {
                if str_field(value, "agent").as_deref() == Some("kilo") {
                    reader.session.origin = Origin::Kilo;
                }
                reader
                    .session
                    .push_event("session", None, Surface::LogOnly, line.text.clone());
                read_session(&mut reader, value.get("row").unwrap_or(&Value::Null));
            }
            "message" => {
                reader.flush();
                let event_index =
                    reader
                        .session
                        .push_event("message", time, Surface::Current, line.text.clone());
                read_message(&mut reader, value, data, time, event_index);
            }
            _ => {
                let part = str_field(data, "type").unwrap_or_default();
                let surface = match part.as_str() {
                    "text" | "reasoning" | "tool" | "file" => Surface::Current,
                    _ => Surface::LogOnly,
                };
                let event_index = reader.session.push_event(
                    &format!("part/{part}"),
                    time,
                    surface,
                    line.text.clone(),
                );
                read_part(&mut reader, &part, data, time, event_index);
            }
        }
    }
    reader.flush();
    parsed.sessions.push(reader.session);
}

/// The session id of a document `<database>#<session id>`.
fn id_from_name(name: &str) -> String {
    name.rsplit_once('#').map_or(name, |(_, id)| id).to_string()
}

/// The session's row: its id, parent (a subagent's), title, folder, times and release.
fn read_session(reader: &mut Reader, row: &Value) {
    let s = &mut reader.session;
    if let Some(id) = str_field(row, "id").filter(|id| !id.is_empty()) {
        s.native_id = id;
    }
    if let Some(parent) = str_field(row, "parent_id").filter(|p| !p.is_empty()) {
        s.parent_native_id = Some(parent);
        s.branch_type = Some("subagent");
    }
    s.title = str_field(row, "title").filter(|t| !t.trim().is_empty());
    s.cwd = str_field(row, "directory").filter(|d| !d.is_empty());
    s.created_at = json_time(row.get("time_created"));
    s.updated_at = json_time(row.get("time_updated"));
    let since = match reader.session.origin {
        Origin::Kilo => [7, 0, 0],
        _ => [1, 3, 16],
    };
    let version = str_field(row, "version");
    reader.reasoning_apart = version.as_deref().is_some_and(|v| at_least(v, since));
    reader.input_holds_cache = reader.session.origin == Origin::OpenCode
        && version.as_deref().is_some_and(|v| !at_least(v, [1, 0, 62]));
}

/// Whether a version `major.minor.patch` is at least `want`.
fn at_least(version: &str, want: [u64; 3]) -> bool {
    let mut have = [0u64; 3];
    for (slot, part) in have.iter_mut().zip(version.split(['.', '-'])) {
        *slot = part.parse().unwrap_or(0);
    }
    have >= want
}

/// Opens a message: its role, and for an assistant message the model, timing and usage.
fn read_message(
    reader: &mut Reader,
    value: &Value,
    data: &Value,
    time: Option<i64>,
    event_index: usize,
) {
    let role = match str_field(data, "role").as_deref() {
        Some("assistant") => Role::Assistant,
        _ => Role::User,
    };
    let mut m = MessageDraft::new(role, time, event_index);
    if role == Role::Assistant {
        m.model = str_field(data, "modelID");
        m.stop_reason = str_field(data, "finish");
        if let (Some(created), Some(done)) = (
            time,
            json_time(data.get("time").and_then(|t| t.get("completed"))),
        ) {
            m.duration_ms = Some(done.saturating_sub(created));
        }
        if reader.session.cwd.is_none() {
            reader.session.cwd = data
                .get("path")
                .and_then(|p| str_field(p, "cwd"))
                .filter(|c| !c.is_empty());
        }
        if let Some(tokens) = data.get("tokens").filter(|t| t.is_object()) {
            reader.call = Some(Call {
                id: str_field(value, "id"),
                provider: str_field(data, "providerID").unwrap_or_default(),
                model: str_field(data, "modelID"),
                time,
                tokens: tokens.clone(),
                event_index,
            });
        }
    }
    reader.message = Some(m);
}

/// The usage row of a call's `tokens` (a message's, or one step's of several), none when
/// every count is 0 (an aborted call), keyed by what a fork's copy keeps: the time, provider,
/// model and counts as stored (and the step's place).
fn usage(
    reader: &mut Reader,
    call: &Call,
    tokens: &Value,
    step: Option<usize>,
    event_index: usize,
) -> Option<Tokens> {
    let n = |v: Option<&Value>| v.and_then(Value::as_i64).unwrap_or(0);
    let cache = tokens.get("cache");
    let counts = Counts {
        input: n(tokens.get("input")),
        output: n(tokens.get("output")),
        reasoning: n(tokens.get("reasoning")),
        cache_read: n(cache.and_then(|c| c.get("read"))),
        cache_write: n(cache.and_then(|c| c.get("write"))),
    };
    // A message older than its session is a fork's copy, written by an earlier release than
    // the one that made the fork: the fork's release says nothing of it.
    let copied = matches!((call.time, reader.session.created_at), (Some(t), Some(c)) if t < c);
    let apart = counts.reasoning_apart(
        tokens.get("total").and_then(Value::as_i64),
        reader.reasoning_apart && !copied,
    );
    // Before 1.0.62 the input of every provider but Anthropic's (and Bedrock's, which passes
    // Anthropic's counts on) holds the cache reads, so it is never below them.
    let anthropic = call.provider.starts_with("anthropic")
        || matches!(
            call.provider.as_str(),
            "amazon-bedrock" | "google-vertex-anthropic"
        );
    let input = if reader.input_holds_cache
        && !copied
        && !anthropic
        && counts.cache_read > 0
        && counts.input >= counts.cache_read
    {
        counts.input - counts.cache_read
    } else {
        counts.input
    };
    let t = Tokens {
        input,
        output: counts
            .output
            .saturating_add(if apart { counts.reasoning } else { 0 }),
        reasoning: tokens.get("reasoning").and_then(Value::as_i64),
        cache_read: counts.cache_read,
        cache_write: counts.cache_write,
        cache_write_1h: 0,
    };
    if [t.input, t.output, t.cache_read, t.cache_write] == [0; 4] {
        return None;
    }
    let agent = match reader.session.origin {
        Origin::Kilo => "kilo",
        _ => "opencode",
    };
    let mut key = format!(
        "{agent}:{}:{}/{}:{}/{}/{}/{}/{}",
        call.time.unwrap_or(0),
        call.provider,
        call.model.as_deref().unwrap_or(""),
        counts.input,
        counts.output,
        counts.cache_read,
        counts.cache_write,
        counts.reasoning
    );
    if let Some(step) = step {
        key.push_str(&format!(":step{step}"));
    }
    reader.session.usage.push(UsageDraft {
        response_key: Some(key),
        via: RecordedVia::Transcript,
        subagent_native_id: None,
        message_index: Some(reader.session.messages.len()),
        request_id: call.id.clone(),
        model: call.model.clone(),
        tokens: t,
        occurred_at_ms: call.time,
        event_index,
    });
    Some(t)
}

/// A call's `tokens` as OpenCode writes them.
struct Counts {
    input: i64,
    output: i64,
    reasoning: i64,
    cache_read: i64,
    cache_write: i64,
}

impl Counts {
    /// Whether `output` leaves the reasoning out. `total` (the provider's total through the AI
    /// SDK, which counts the reasoning once, and the cache reads and writes or not by provider)
    /// says so where it matches only one reading; else the session's release (`by_release`).
    fn reasoning_apart(&self, total: Option<i64>, by_release: bool) -> bool {
        if self.reasoning == 0 {
            return false;
        }
        if let Some(total) = total {
            let (i, o, r) = (self.input, self.output, self.reasoning);
            let bases = [
                i + o,
                i + self.cache_read + o,
                i + self.cache_read + self.cache_write + o,
            ];
            let inside = bases.contains(&total);
            let apart = bases.iter().any(|b| b + r == total);
            if inside != apart {
                return apart;
            }
        }
        by_release
    }
}

/// Adds a part to the message being read: its text, reasoning, file or tool call (whose result
/// becomes a tool message after it), or a compaction boundary.
fn read_part(reader: &mut Reader, part: &str, data: &Value, time: Option<i64>, event_index: usize) {
    let Some(m) = reader.message.as_mut() else {
        return;
    };
    match part {
        "text" => {
            let text = str_field(data, "text").unwrap_or_default();
            // Text OpenCode adds itself (a file's contents read for the model, a tool's
            // output replayed) is marked synthetic.
            if data.get("synthetic").and_then(Value::as_bool) == Some(true) {
                reader.synthetic = true;
            } else {
                reader.authored = true;
            }
            m.blocks.push(BlockDraft::text(BlockKind::Text, text));
        }
        "reasoning" => m.blocks.push(BlockDraft::text(
            BlockKind::Thinking,
            str_field(data, "text").unwrap_or_default(),
        )),
        "file" => {
            let kind = if str_field(data, "mime").is_some_and(|t| t.starts_with("image/")) {
                BlockKind::Image
            } else {
                BlockKind::Document
            };
            m.blocks.push(BlockDraft::text(
                kind,
                str_field(data, "filename").unwrap_or_default(),
            ));
        }
        "tool" => {
            let state = data.get("state").unwrap_or(&Value::Null);
            let id = str_field(data, "callID");
            m.blocks.push(BlockDraft::tool_use(
                str_field(data, "tool"),
                id.clone(),
                state.get("input").unwrap_or(&Value::Null),
            ));
            let status = str_field(state, "status").unwrap_or_default();
            if matches!(status.as_str(), "completed" | "error") {
                let text = str_field(state, "output")
                    .or_else(|| str_field(state, "error"))
                    .unwrap_or_default();
                let mut block = BlockDraft::text(BlockKind::ToolResult, text);
                block.tool_id = id;
                block.is_error = Some(status == "error");
                let done = json_time(state.get("time").and_then(|t| t.get("end"))).or(time);
                let mut result = MessageDraft::new(Role::Tool, done, event_index);
                result.blocks.push(block);
                reader.results.push(result);
            }
        }
        "compaction" => reader
            .session
            .snapshots
            .push(SnapshotDraft::compaction(String::new(), time)),
        "step-finish" => {
            if let Some(tokens) = data.get("tokens").filter(|t| t.is_object()) {
                reader.steps.push((tokens.clone(), event_index));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::Counts;

    fn counts(output: i64, reasoning: i64) -> Counts {
        Counts {
            input: 100,
            output,
            reasoning,
            cache_read: 1000,
            cache_write: 10,
        }
    }

    /// The total tells where the reasoning is, for a total with or without the cache, and the
    /// release decides only where the total is missing or fits both readings.
    #[test]
    fn the_total_says_whether_the_output_holds_the_reasoning() {
        // 1.3.15 and before: output 50 holds 20 of reasoning.
        assert!(!counts(50, 20).reasoning_apart(Some(100 + 1000 + 10 + 50), true));
        assert!(!counts(50, 20).reasoning_apart(Some(100 + 50), true));
        // 1.3.16 on: output 30 without the 20.
        assert!(counts(30, 20).reasoning_apart(Some(100 + 1000 + 10 + 30 + 20), false));
        assert!(counts(30, 20).reasoning_apart(Some(100 + 30 + 20), false));
        // No total, or one that fits neither: the release.
        assert!(counts(30, 20).reasoning_apart(None, true));
        assert!(!counts(30, 20).reasoning_apart(Some(7), false));
        // No reasoning: nothing to add.
        assert!(!counts(30, 0).reasoning_apart(Some(130), true));
    }
}
