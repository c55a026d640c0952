//! Reading only what was appended to a grown JSONL file.
//!
//! A single-session file whose adapter can resume (Claude Code) is archived with a *cut*: a turn
//! start before which nothing a later record does can change a row (every tool call there has
//! its result there, every error its follow-up, no response spans the cut). `source_resume`
//! keeps the byte offset read so far, the cut, the adapter's state at it, what the derived
//! session-wide facts sum over the rows before it ([`Prefix`]), and the first row id after it in
//! each table ([`Marks`]).
//!
//! When the file grew, the records after the cut are read back from `events_raw`, the appended
//! lines are read from the file, and both are read and derived again from the cut; the rows
//! after the cut are replaced and the rows before it stay. Whatever the continued read cannot
//! show to be equal to a whole read (a new record naming a parent before the cut, a response id
//! or usage key the archive holds before the cut, an inline sidechain) makes the caller read the
//! file whole instead.

use rusqlite::{Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::claude_code;
use super::codex;
use super::derive::{self, Cut, Prefix, SessionRows};
use super::lines::{self, Line};
use super::model::{Checkpoint, Continue, ParsedFile, RecordedVia, Resume, SnapshotDraft, Whole};

/// The version of [`ResumeState`]; a state of another version is ignored (the file is read whole).
const VERSION: u32 = 1;

/// Where the next read of a grown file continues (`source_resume.state`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResumeState {
    /// [`VERSION`].
    pub version: u32,
    /// The file's one session.
    pub session_id: String,
    /// The format, which decides the reader that continues (`claude-code-session`,
    /// `codex-session`).
    pub origin: String,
    /// Bytes read: the end of the last complete line.
    pub offset: u64,
    /// Lines before `offset`.
    pub lines: usize,
    /// Records read before `offset`.
    pub records: usize,
    /// The rows before the cut.
    pub prefix: Prefix,
    /// The adapter's state at the cut.
    pub carried: Value,
    /// The first row id after the cut in each table.
    pub marks: Marks,
    /// The state's text as archived (not stored in it).
    #[serde(skip)]
    pub text: String,
}

/// The first row id after the cut in each table (`i64::MAX` when the table has none).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Marks {
    pub messages: i64,
    pub blocks: i64,
    pub actions: i64,
    pub events: i64,
    pub turns: i64,
    pub observed: i64,
    pub delegations: i64,
    /// The session's `session_started` observed event (rewritten with the session).
    pub session_started: i64,
    /// The first row of the turn the cut falls inside, in `messages`, `actions` and
    /// `events_raw` (its rows before the cut take the turn's new `turn_committed`).
    pub turn_messages: i64,
    pub turn_actions: i64,
    pub turn_events: i64,
}

impl Default for Marks {
    fn default() -> Self {
        Marks {
            messages: i64::MAX,
            blocks: i64::MAX,
            actions: i64::MAX,
            events: i64::MAX,
            turns: i64::MAX,
            observed: i64::MAX,
            delegations: i64::MAX,
            session_started: i64::MAX,
            turn_messages: i64::MAX,
            turn_actions: i64::MAX,
            turn_events: i64::MAX,
        }
    }
}

/// A cut to record with a session's rows: where in them, and the state to keep.
#[derive(Debug, Clone)]
pub struct Resumable {
    /// The cut, local to the rows written.
    pub cut: Cut,
    /// The state to keep (its `marks` are filled in when the rows are written).
    pub state: ResumeState,
}

/// A continued read's rows: they replace the rows after `marks` (and `usage` rows from
/// `usage_from`).
#[derive(Debug, Clone)]
pub struct Continued {
    /// The rows replaced.
    pub marks: Marks,
    /// The first usage seq replaced.
    pub usage_from: usize,
    /// When the cut fell inside a turn: that turn's first usage seq.
    pub turn_usage_from: Option<usize>,
    /// The archived state the read continued (`source_resume.state`), which the write checks is
    /// still the archive's: another writer may have written the file since.
    pub state_text: String,
}

/// The state archived for `path`, if any (and of this version).
pub fn archived(conn: &Connection, path: &str) -> Option<ResumeState> {
    let text: String = conn
        .prepare_cached("SELECT state FROM source_resume WHERE path = ?1")
        .ok()?
        .query_row([path], |r| r.get(0))
        .optional()
        .ok()??;
    serde_json::from_str::<ResumeState>(&text)
        .ok()
        .filter(|s| s.version == VERSION)
        .map(|s| ResumeState { text, ..s })
}

/// Where a file's complete lines end: the offset after the last newline, and the lines before
/// it; `None` when a last line is still being written (no newline yet).
pub fn complete_lines(bytes: &[u8]) -> Option<(u64, usize)> {
    let end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    if !bytes.get(end..)?.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let lines = bytes.get(..end)?.iter().filter(|b| **b == b'\n').count();
    Some((end as u64, lines))
}

/// Where a whole read of a file that ended its complete lines at `ends` ([`complete_lines`]),
/// read `records` records and produced one session's `rows` can be cut.
pub fn cut_whole(
    ends: (u64, usize),
    records: usize,
    draft_resume: Option<&Resume>,
    rows: &SessionRows,
) -> Option<Resumable> {
    let resume = draft_resume?;
    let (offset, lines) = ends;
    let (cut, carried) = choose(resume, rows, &Value::Null, false);
    // A session stored under another id than its records give (a duplicate renamed on ingest)
    // is read whole each time.
    if carried
        .pointer("/header/native_id")
        .is_some_and(|id| id.as_str() != Some(rows.session.native_id.as_str()))
    {
        return None;
    }
    Some(Resumable {
        cut,
        state: ResumeState {
            version: VERSION,
            session_id: rows.session.session_id.clone(),
            origin: rows.session.origin.to_string(),
            offset,
            lines,
            records,
            prefix: Prefix::default().advance(rows, cut),
            carried,
            marks: Marks::default(),
            text: String::new(),
        },
    })
}

/// A continued read's result: the rows after the old cut, the new cut, the records the file now
/// holds.
pub struct Read {
    pub rows: SessionRows,
    pub continued: Continued,
    pub resumable: Resumable,
    pub records: usize,
}

/// Continues reading the file `name` from `state`: `data` are its bytes from `state.offset` on.
pub fn read(
    conn: &Connection,
    name: &str,
    state: &ResumeState,
    data: &[u8],
    owner: Option<&str>,
    parsed: &mut ParsedFile,
) -> Result<Read, Whole> {
    let sql = |_: rusqlite::Error| Whole("the archived rows could not be read");
    let sid = state.session_id.as_str();
    // The archived records after the cut, with the provenance the archive holds for them.
    let mut stmt = conn
        .prepare_cached(
            "SELECT payload, source_seqs FROM events_raw
             WHERE session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1)
               AND rowid >= ?2 ORDER BY seq",
        )
        .map_err(sql)?;
    let archived: Vec<(String, Option<String>)> = stmt
        .query_map(rusqlite::params![sid, state.marks.events], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .map_err(sql)?
        .collect::<Result<_, _>>()
        .map_err(sql)?;
    let mut records = Vec::with_capacity(archived.len());
    let mut sources = Vec::with_capacity(archived.len());
    for (payload, seqs) in archived {
        let value =
            serde_json::from_str(&payload).map_err(|_| Whole("an archived record is not JSON"))?;
        records.push(Line {
            number: 0,
            text: payload,
            value,
        });
        sources.push(
            seqs.and_then(|s| serde_json::from_str::<Vec<usize>>(&s).ok())
                .unwrap_or_default(),
        );
    }
    let archived_count = records.len();

    // The appended lines, up to the last complete one.
    let end = data.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let mut new_lines = lines::read_lines(name, data, &mut parsed.diagnostics);
    for line in &mut new_lines {
        line.number += state.lines;
    }
    for d in &mut parsed.diagnostics {
        if let Some(line) = d.line.as_mut() {
            *line += state.lines;
        }
    }
    let complete_lines = data
        .get(..end)
        .map_or(0, |d| d.iter().filter(|b| **b == b'\n').count());
    if new_lines
        .iter()
        .any(|l| l.number > state.lines + complete_lines)
    {
        return Err(Whole("the last line has no newline yet"));
    }
    let fresh_count = new_lines.len();
    records.extend(new_lines);
    let snapshots = archived_snapshots(conn, sid, &state.carried).map_err(sql)?;
    let mut scratch = ParsedFile::default();
    let from = Continue {
        state: &state.carried,
        events: state.prefix.events,
        archived: archived_count,
        archived_sources: sources,
    };
    let (draft, opened) = match state.origin.as_str() {
        "codex-session" => (
            codex::resume(from, records, snapshots, &mut scratch)?,
            Vec::new(),
        ),
        _ => claude_code::resume(name, from, records, snapshots, &mut scratch)?,
    };
    // Diagnostics of the re-read archived records were reported when they were first read.
    parsed.diagnostics.extend(
        scratch
            .diagnostics
            .into_iter()
            .filter(|d| d.line != Some(0)),
    );
    for (kind, n) in scratch.unknown_records {
        *parsed.unknown_records.entry(kind).or_default() += n;
    }
    if check_opened(conn, sid, &opened, state.prefix.usage).map_err(sql)? {
        return Err(Whole(
            "a response the archive holds before the cut continues",
        ));
    }
    let resume = draft.resume.clone().unwrap_or_default();
    if draft.session_id() != state.session_id {
        return Err(Whole("the session is stored under another id"));
    }
    let rows = derive::derive_after(draft, owner, &state.prefix);
    let (cut, carried) = choose(
        &resume,
        &rows,
        &state.carried,
        state.prefix.open_turn.is_some(),
    );
    let records_total = state.records + fresh_count;
    parsed.records = fresh_count;
    Ok(Read {
        continued: Continued {
            marks: state.marks,
            usage_from: state.prefix.usage,
            turn_usage_from: state.prefix.open_turn.as_ref().map(|o| o.usage_from),
            state_text: state.text.clone(),
        },
        resumable: Resumable {
            cut,
            state: ResumeState {
                version: VERSION,
                session_id: state.session_id.clone(),
                origin: state.origin.clone(),
                offset: state.offset + end as u64,
                lines: state.lines + complete_lines,
                records: state.records + fresh_count,
                prefix: state.prefix.advance(&rows, cut),
                carried,
                marks: Marks::default(),
                text: String::new(),
            },
        },
        rows,
        records: records_total,
    })
}

/// Whether a message id or response key first seen after the cut is one the archive holds
/// before it (a record reaching back across the cut).
fn check_opened(
    conn: &Connection,
    sid: &str,
    opened: &[(String, RecordedVia)],
    usage_from: usize,
) -> Result<bool, rusqlite::Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq FROM usage_records
         WHERE session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1)
           AND response_key = ?2 AND recorded_via = ?3",
    )?;
    for (key, via) in opened {
        let seq: Option<i64> = stmt
            .query_row(rusqlite::params![sid, key, via.as_str()], |r| r.get(0))
            .optional()?;
        if seq.is_some_and(|s| (s as usize) < usage_from) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The snapshots the session's reading had produced at the cut (the first `snapshots` of its
/// `context_snapshots` rows read from the source, in order).
fn archived_snapshots(
    conn: &Connection,
    sid: &str,
    carried: &Value,
) -> rusqlite::Result<Vec<SnapshotDraft>> {
    let count = carried
        .get("snapshots")
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize;
    let mut stmt = conn.prepare_cached(
        "SELECT boundary, inheritance_mode, segment, text, occurred_at_ms FROM context_snapshots
         WHERE session_id = ?1 AND boundary != 'subagent_start' ORDER BY rowid",
    )?;
    let rows = stmt.query_map([sid], |r| {
        Ok(SnapshotDraft {
            boundary: known(r.get::<_, String>(0)?.as_str()).unwrap_or("compaction"),
            inheritance_mode: r.get::<_, Option<String>>(1)?.as_deref().and_then(known),
            segment: r.get::<_, Option<String>>(2)?.as_deref().and_then(known),
            text: r.get(3)?,
            occurred_at_ms: r.get(4)?,
        })
    })?;
    rows.take(count).collect()
}

/// The static name of a snapshot's boundary, inheritance or segment value.
fn known(value: &str) -> Option<&'static str> {
    [
        "session_start",
        "subagent_start",
        "compaction",
        "fresh",
        "summary",
        "inherited",
        "instructions",
        "prompt",
    ]
    .into_iter()
    .find(|k| *k == value)
}

/// The latest checkpoint at which `rows` can be cut (their local indexes), and its state; no
/// cut (the start, with `keep` as its state) when none qualifies.
/// `continuing`: the rows start inside a turn the old cut fell in.
fn choose(resume: &Resume, rows: &SessionRows, keep: &Value, continuing: bool) -> (Cut, Value) {
    let messages = rows.messages.len();
    let events = rows.events.len();
    // Message cuts that would leave an open action before them: a tool call whose result, or an
    // error whose follow-up, lies after the cut.
    let mut blocked_messages = vec![0i32; messages + 2];
    let local = rows.message_index();
    let next_assistant = {
        let mut next = vec![None; messages + 1];
        let mut seen = None;
        for i in (0..messages).rev() {
            next[i] = seen;
            if rows.messages.get(i).is_some_and(|m| m.role == "assistant") {
                seen = Some(i);
            }
        }
        next
    };
    for a in &rows.actions {
        let Some(&u) = local.get(a.message_id.as_str()) else {
            continue;
        };
        let result = a
            .tool_result_block_id
            .as_deref()
            .and_then(|b| b.rsplit_once("/b"))
            .and_then(|(m, _)| local.get(m).copied());
        let end = match result {
            None => messages,
            Some(r) if a.is_error => next_assistant.get(r).copied().flatten().unwrap_or(messages),
            Some(r) => r,
        };
        // Cuts at message index p with u < p <= end are blocked.
        if end > u {
            blocked_messages[u + 1] += 1;
            blocked_messages[end.min(messages) + 1] -= 1;
        }
    }
    let mut blocked_events = vec![0i32; events + 2];
    for &(first, last) in &resume.spans {
        let last = last.min(events);
        if last > first {
            blocked_events[first + 1] += 1;
            blocked_events[last + 1] -= 1;
        }
    }
    let running = |v: &[i32]| {
        let mut sum = 0;
        v.iter()
            .map(|d| {
                sum += d;
                sum > 0
            })
            .collect::<Vec<bool>>()
    };
    let message_blocked = running(&blocked_messages);
    let event_blocked = running(&blocked_events);
    let found = resume.checkpoints.iter().rev().find(|c: &&Checkpoint| {
        c.event > 0
            && c.event <= events
            && c.messages <= messages
            && !message_blocked.get(c.messages).copied().unwrap_or(true)
            && !event_blocked.get(c.event).copied().unwrap_or(true)
    });
    let Some(c) = found else {
        // No new cut: the old one stays, inside the turn it continues, if any.
        return (
            Cut {
                open_turn: continuing.then_some(0),
                ..Cut::default()
            },
            keep.clone(),
        );
    };
    // The turn the record after the cut is in, and whether the cut is that turn's start (the
    // record before it is in another turn) or falls inside it.
    let turn = rows.events.get(c.event).and_then(|e| e.turn);
    let starts_turn = match c.event.checked_sub(1).and_then(|i| rows.events.get(i)) {
        Some(before) => before.turn != turn,
        None => !continuing,
    };
    (
        Cut {
            event: c.event,
            message: c.messages,
            usage: c.usage,
            turn: turn.unwrap_or(0),
            open_turn: turn.filter(|_| !starts_turn),
        },
        codex::state_value(c.state.as_ref())
            .unwrap_or_else(|| claude_code::state_value(c.state.as_ref())),
    )
}
