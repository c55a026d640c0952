//! Reading what a search or a query found: refs ([`refs`]), bounded event windows and lineage
//! traces (`../shared/spec/session-query.md` § Bounded event reads, § Session lineage).
//!
//! Every read decides first which sessions the caller's scope sees, then resolves the ref
//! among those only: a session that does not exist and one the scope does not see give the same
//! `session_not_found`, by the same code path (no prefix match or count of an unseen session is
//! used; the only ids of unseen sessions an answer holds are links the reader's own rows hold,
//! a parent's or a subagent's id). Each answer's rows are read in one SQLite read transaction,
//! at one archive generation, which it reports (the scope's sessions are decided just before).
//! A reader scope gets no raw record payloads, reads the `events` view's records only, and its
//! texts are masked; every read is audited.

pub mod refs;
pub mod resolve;
pub mod trace;
pub mod transcript;

use std::collections::HashSet;
use std::path::PathBuf;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use crate::audit::{Language, Outcome};
use crate::engine::{Session, blocking};
use crate::error::Error;
use crate::scope::Scope;
pub use refs::{Ref, RefKind};
pub use resolve::Resolution;
pub use trace::{EventRecord, EventTrace, TraceRequest};
pub use transcript::{Transcript, TranscriptRequest};

/// The most neighbouring events a window takes on either side.
pub const MAX_NEIGHBOURS: i64 = 200;

/// A session as a read shows it (the spec's `SessionHeader`, in quarry's fields).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionHeader {
    /// The session's id.
    pub session_id: String,
    /// Where it came from (`claude-code-session`, `codex-session`, ...).
    pub origin: String,
    /// Its title (masked for a reader).
    pub title: Option<String>,
    /// Its repository.
    pub repo: Option<String>,
    /// Its model.
    pub model: Option<String>,
    /// When it started (epoch milliseconds).
    pub created_at: Option<i64>,
    /// When it last changed (epoch milliseconds).
    pub updated_at: Option<i64>,
    /// Its messages.
    pub message_count: i64,
    /// The session that started it (a subagent's parent, a resumed or forked session's
    /// origin), as the source records it, whether or not the archive holds that session.
    pub parent_session_id: Option<String>,
    /// The archive generation at which the session's rows were last replaced rather than
    /// grown: a transcript cursor from before it is stale.
    pub replacement_epoch: i64,
}

/// A session in a lineage trace (the spec's `SessionRecord`): its header, and where it is
/// available. quarry reads an archive, not a live process: `live` is always false and
/// `persisted` true.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionRecord {
    /// The header.
    pub header: SessionHeader,
    /// Whether a live process holds it (never, for an archive).
    pub live: bool,
    /// Whether the archive holds it.
    pub persisted: bool,
    /// Whether only its id, origin, title, times and parent are given (a session outside the
    /// conversation a pinned server reads).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub header_only: bool,
}

/// One source record of a session (the spec's `SessionEvent`, in quarry's fields).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionEvent {
    /// Its 0-based order among the session's records.
    pub seq: i64,
    /// The record type (`user`, `assistant`, `system/compact_boundary`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// Its time (epoch milliseconds).
    pub time: Option<i64>,
    /// `current`, `shadowed` or `log-only`.
    pub surface: String,
    /// The turn it falls in.
    pub turn_id: Option<String>,
    /// The raw record (`None` for a reader scope, which never sees raw payloads).
    pub payload: Option<serde_json::Value>,
    /// The messages read from the record, their text bounded (and masked for a reader).
    pub messages: Vec<EventMessage>,
}

/// A message a record produced, as a window shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventMessage {
    /// Its id.
    pub message_id: String,
    /// `user`, `assistant`, `system` or `tool`.
    pub role: String,
    /// Its blocks, in order.
    pub blocks: Vec<EventBlock>,
}

/// A block of a message a record produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventBlock {
    /// `text`, `thinking`, `tool_use`, `tool_result`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// A tool call's or result's tool.
    pub tool_name: Option<String>,
    /// Its text (a tool call's: its command or path), at most [`resolve::MAX_WINDOW_EXCERPT`]
    /// characters (masked for a reader).
    pub text: String,
    /// Whether the text was cut.
    pub truncated: bool,
}

/// The surfaces a record can be on.
pub const SURFACES: [&str; 3] = ["current", "shadowed", "log-only"];

/// A bounded read around one event (the spec's `SessionEventWindow`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventWindow {
    /// The session's header, from the same observation.
    pub session: SessionHeader,
    /// The target event, whole.
    pub target: SessionEvent,
    /// The events from `start_seq` through `end_seq`, the target among them.
    pub events: Vec<SessionEvent>,
    /// The first seq in `events`.
    pub start_seq: i64,
    /// The last seq in `events`.
    pub end_seq: i64,
    /// The archive generation the observation is of.
    pub generation: i64,
}

/// A window request: one event of a session and how many neighbours on each side.
#[derive(Debug, Clone)]
pub struct WindowRequest {
    /// The session (a ref or an id, a native id or a unique prefix of one).
    pub session: String,
    /// The target event's seq.
    pub seq: i64,
    /// Instead of `seq`: the record a message of the session was read from (its id, with or
    /// without `message:`).
    pub message: Option<String>,
    /// Preceding events (0 to [`MAX_NEIGHBOURS`]).
    pub before: i64,
    /// Following events (0 to [`MAX_NEIGHBOURS`]).
    pub after: i64,
    /// Only records on these surfaces (of [`SURFACES`]; empty: all); the bounds stay the
    /// window's.
    pub surfaces: Vec<String>,
}

/// What a window is around, as a caller writes it: a seq, or a message (`message:ID` or an id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Around {
    /// A record's seq.
    Seq(i64),
    /// A message of the session: the record it was read from.
    Message(String),
}

impl Around {
    /// A number is a seq; anything else names a message.
    pub fn parse(text: &str) -> Around {
        match text.trim().parse() {
            Ok(seq) => Around::Seq(seq),
            Err(_) => Around::Message(text.trim().to_string()),
        }
    }

    /// The seq (0 for a message: [`WindowRequest::message`] decides).
    pub fn seq(&self) -> i64 {
        match self {
            Around::Seq(seq) => *seq,
            Around::Message(_) => 0,
        }
    }

    /// The message, if it is one.
    pub fn message(&self) -> Option<String> {
        match self {
            Around::Seq(_) => None,
            Around::Message(m) => Some(m.clone()),
        }
    }
}

/// A descendant in a lineage trace (the spec's `SessionLineageNode`).
#[derive(Debug, Clone, Serialize)]
pub struct LineageNode {
    /// The descendant.
    pub session: SessionRecord,
    /// Its own direct children, each with theirs.
    pub descendants: Vec<LineageNode>,
}

/// Known ancestry and descendants of one session (the spec's `SessionLineageTrace`): either
/// `complete` with the `root`, or not, with the first parent the caller's corpus does not hold.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LineageTrace {
    /// The traced session.
    pub target: SessionRecord,
    /// Its known parents, from the immediate one outward.
    pub ancestors: Vec<SessionRecord>,
    /// Its direct children, each with its descendants.
    pub descendants: Vec<LineageNode>,
    /// Whether the whole parent chain is in the caller's corpus.
    pub complete: bool,
    /// The top of the chain, when it is complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<SessionRecord>,
    /// The first parent id the caller's corpus does not hold, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unresolved_parent_id: Option<String>,
    /// The archive generation the observation is of.
    pub generation: i64,
}

/// One read: a page of a transcript, a window around an event, or a lineage.
#[derive(Debug, Clone)]
pub enum ReadRequest {
    /// A page of a session's transcript.
    Transcript(TranscriptRequest),
    /// A window of a session's source records.
    Window(WindowRequest),
    /// The lineage of the session a ref names.
    Lineage(String),
    /// What a ref of any kind names, bounded.
    Resolve(String),
    /// The direct relationships of one record.
    Trace(TraceRequest),
    /// A message or block (a `message:` or `block:` ref) shown in its context.
    Context(String),
}

impl ReadRequest {
    /// The ref it reads (what an error is about).
    pub fn reference(&self) -> &str {
        match self {
            ReadRequest::Transcript(t) => &t.session,
            ReadRequest::Window(w) => &w.session,
            ReadRequest::Trace(t) => &t.session,
            ReadRequest::Lineage(r) | ReadRequest::Resolve(r) | ReadRequest::Context(r) => r,
        }
    }
}

/// A read's answer, in the spec's shape of its kind.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum ReadAnswer {
    /// A page of a transcript.
    Transcript(Transcript),
    /// A `SessionEventWindow`.
    Window(EventWindow),
    /// A `SessionLineageTrace`.
    Lineage(LineageTrace),
    /// A ref's resolution.
    Resolution(Resolution),
    /// A `SessionEventTraceObservation`.
    Trace(EventTrace),
}

impl ReadAnswer {
    /// The answer as lines for people.
    pub fn render_text(&self) -> String {
        match self {
            ReadAnswer::Transcript(t) => transcript::render(t, false, false),
            ReadAnswer::Window(w) => render_window(w),
            ReadAnswer::Lineage(t) => render_lineage(t),
            ReadAnswer::Resolution(r) => resolve::render(r),
            ReadAnswer::Trace(t) => trace::render(t),
        }
    }
}

/// Runs `request` in `session`'s scope, audited: what every surface calls.
pub async fn read(session: &Session, request: &ReadRequest) -> Result<ReadAnswer, Error> {
    match request {
        ReadRequest::Transcript(t) => transcript(session, t).await.map(ReadAnswer::Transcript),
        ReadRequest::Window(w) => window(session, w).await.map(ReadAnswer::Window),
        ReadRequest::Lineage(r) => lineage(session, r).await.map(ReadAnswer::Lineage),
        ReadRequest::Context(r) => {
            let text = format!("read {r}");
            let rows = |t: &Transcript| t.messages.len();
            let work = |reader: &Reader, conn: &Connection, r: &String| reader.context(conn, r);
            run(session, &text, rows, r.clone(), work)
                .await
                .map(ReadAnswer::Transcript)
        }
        ReadRequest::Trace(t) => {
            let text = format!("read {} --trace {}", t.session, t.seq);
            run(session, &text, |_: &EventTrace| 1, t.clone(), Reader::trace)
                .await
                .map(ReadAnswer::Trace)
        }
        ReadRequest::Resolve(r) => {
            let text = format!("resolve {r}");
            audited(
                session,
                &text,
                |r: &Resolution| usize::from(r.resolved),
                resolve::resolve(session, r),
            )
            .await
            .map(ReadAnswer::Resolution)
        }
    }
}

/// The transcript page `request` asks for, in `session`'s scope, audited.
pub async fn transcript(
    session: &Session,
    request: &TranscriptRequest,
) -> Result<Transcript, Error> {
    let text = format!("read {}", request.session);
    let rows = |t: &Transcript| t.messages.len();
    run(session, &text, rows, request.clone(), Reader::transcript).await
}

/// Runs `work` over `request` in one read transaction of `session`'s archive, audited as
/// `text` (`rows` counts what its answer holds); its SQLite work stops when the awaiting
/// request goes away.
async fn run<R, T>(
    session: &Session,
    text: &str,
    rows: impl Fn(&T) -> usize,
    request: R,
    work: fn(&Reader, &Connection, &R) -> Result<T, Error>,
) -> Result<T, Error>
where
    R: Send + 'static,
    T: Send + 'static,
{
    audited(session, text, rows, async {
        let reader = Reader::new(session).await?;
        let _stop = reader.interrupt.on_drop();
        blocking(move || reader.read(|conn, reader| work(reader, conn, &request))).await
    })
    .await
}

/// The window `request` asks for, in `session`'s scope, audited.
pub async fn window(session: &Session, request: &WindowRequest) -> Result<EventWindow, Error> {
    let around = match &request.message {
        Some(message) => message.clone(),
        None => request.seq.to_string(),
    };
    let text = format!(
        "read {} --around {around} --before {} --after {}",
        request.session, request.before, request.after
    );
    let rows = |w: &EventWindow| w.events.len();
    run(session, &text, rows, request.clone(), Reader::window).await
}

/// The lineage of the session `reference` names, in `session`'s scope, audited.
pub async fn lineage(session: &Session, reference: &str) -> Result<LineageTrace, Error> {
    let text = format!("read {reference} --lineage");
    let rows = |t: &LineageTrace| t.ancestors.len() + 1;
    run(
        session,
        &text,
        rows,
        reference.to_string(),
        |reader, conn, r: &String| reader.lineage(conn, r),
    )
    .await
}

/// Runs `read` with its audit record (`rows` counts what an answer holds).
async fn audited<T>(
    session: &Session,
    text: &str,
    rows: impl Fn(&T) -> usize,
    read: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let mut ticket = session.intend(Language::Read, text)?;
    let result = read.await;
    let message = result.as_ref().err().map(ToString::to_string);
    let outcome = match (&result, &message) {
        (Ok(answer), _) => Outcome::Ok {
            rows: rows(answer),
            truncated: false,
        },
        (Err(_), message) => Outcome::Error(message.as_deref().unwrap_or_default()),
    };
    ticket.finish(outcome).map_err(Error::Audit)?;
    result
}

/// What one read needs of its session: the archive and which sessions the scope sees.
struct Reader {
    archive: PathBuf,
    /// Stops the read's SQLite work when the request goes away.
    interrupt: crate::engine::Interrupt,
    /// The scope's sessions (`None`: every one, the admin scope).
    visible: Option<HashSet<String>>,
    /// For a conversation's own server: its session. The lineage then shows sessions outside
    /// the conversation as headers only.
    pinned: Option<String>,
}

/// Session `root` and the sessions it started (subagents, sidechains, compactions), theirs too,
/// among those the archive holds: not the sessions that resumed or forked it later.
fn conversation(
    archive: &std::path::Path,
    root: &str,
    interrupt: &crate::engine::Interrupt,
) -> Result<HashSet<String>, Error> {
    let failed = |e| Error::archive(archive, e);
    let conn = crate::engine::read_only(archive).map_err(failed)?;
    interrupt.install(&conn);
    let ids: Vec<String> = conn
        .prepare(
            "WITH RECURSIVE c(id) AS (SELECT session_id FROM sessions WHERE session_id = ?1 \
             UNION SELECT s.session_id FROM sessions s JOIN c ON s.parent_session_id = c.id \
             WHERE s.branch_type IN ('subagent', 'sidechain', 'compaction')) \
             SELECT id FROM c",
        )
        .and_then(|mut s| s.query_map([root], |r| r.get(0))?.collect())
        .map_err(failed)?;
    Ok(ids.into_iter().collect())
}

impl Reader {
    async fn new(session: &Session) -> Result<Reader, Error> {
        let archive = session.engine().path().to_path_buf();
        let interrupt = crate::engine::Interrupt::default();
        let (visible, pinned) = match session.scope() {
            Scope::Admin => (None, None),
            // A conversation's own server reads its conversation: the session and the
            // subagent sessions it started (theirs too), nothing else.
            Scope::Reader(r) if r.session.is_some() => {
                let pinned = r.session.clone().unwrap_or_default();
                let path = archive.clone();
                let root = pinned.clone();
                let stop = interrupt.clone();
                let ids = blocking(move || conversation(&path, &root, &stop)).await?;
                (Some(ids), Some(pinned))
            }
            Scope::Reader(_) => (Some(session.session_ids(None).await?), None),
        };
        Ok(Reader {
            archive,
            interrupt,
            visible,
            pinned,
        })
    }

    /// The header of the session `reference` names, in its own read transaction.
    async fn header_of(self, reference: &str) -> Result<SessionHeader, Error> {
        let reference = reference.to_string();
        let _stop = self.interrupt.on_drop();
        blocking(move || {
            self.read(|conn, reader| {
                let id = reader.session_id(conn, &reference)?;
                reader.header(conn, &id)?.ok_or(Error::SessionNotFound(id))
            })
        })
        .await
    }

    fn sees(&self, id: &str) -> bool {
        self.visible.as_ref().is_none_or(|v| v.contains(id))
    }

    /// `work` in one read transaction of the archive, with its generation.
    fn read<T>(
        &self,
        work: impl FnOnce(&Connection, &Self) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let conn = crate::engine::read_only(&self.archive).map_err(|e| self.failed(e))?;
        self.interrupt.install(&conn);
        conn.execute_batch("BEGIN").map_err(|e| self.failed(e))?;
        let answer = work(&conn, self);
        let _ = conn.execute_batch("COMMIT");
        answer
    }

    fn failed(&self, e: rusqlite::Error) -> Error {
        Error::archive(&self.archive, e)
    }

    fn generation(&self, conn: &Connection) -> Result<i64, Error> {
        quarry_archive::read_generation(conn).map_err(|e| Error::archive(&self.archive, e))
    }

    /// The session `reference` names among those the scope sees: a `session:` ref, an id, a
    /// native id, or a unique prefix of either. Absent and unseen are the same answer.
    fn session_id(&self, conn: &Connection, reference: &str) -> Result<String, Error> {
        let text = match Ref::parse(reference) {
            Some(Ref {
                kind: RefKind::Session,
                id,
            }) => id,
            Some(other) => {
                return Err(Error::BadRequest(format!(
                    "`{reference}` is a {} ref: a session read takes a session (`session:ID`, an id, a native id or a unique prefix)",
                    other.kind.name()
                )));
            }
            None => reference.trim().to_string(),
        };
        let not_found = || Error::SessionNotFound(text.clone());
        if text.is_empty() {
            return Err(not_found());
        }
        let ambiguous = |n: usize, how: &str| {
            Error::BadRequest(format!(
                "`{text}` is {how} {n} sessions: give more of the id"
            ))
        };
        // The id itself, else a native id (two origins may share one).
        let mut exact: Vec<(String, String)> = conn
            .prepare_cached(
                "SELECT session_id, native_id FROM sessions WHERE session_id = ?1 OR native_id = ?1",
            )
            .and_then(|mut s| {
                s.query_map([&text], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(|e| self.failed(e))?;
        exact.retain(|(id, _)| self.sees(id));
        if let Some((id, _)) = exact.iter().find(|(id, _)| *id == text) {
            return Ok(id.clone());
        }
        match exact.as_slice() {
            [(id, _)] => return Ok(id.clone()),
            [] => {}
            more => return Err(ambiguous(more.len(), "the native id of")),
        }
        // A prefix (LIKE ignores ASCII case; the prefix must match as written).
        let like: Vec<(String, String)> = conn
            .prepare_cached(
                "SELECT session_id, coalesce(native_id, '') FROM sessions \
                 WHERE session_id LIKE ?1 ESCAPE '\\' OR native_id LIKE ?1 ESCAPE '\\'",
            )
            .and_then(|mut s| {
                s.query_map([escape_like(&text)], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(|e| self.failed(e))?;
        // A whole id followed by `/` is a session's, not the start of its subagents' ids.
        let starts = |full: &str| {
            full.strip_prefix(text.as_str())
                .is_some_and(|rest| !rest.starts_with('/'))
        };
        let mut seen: Vec<String> = like
            .into_iter()
            .filter(|(id, native)| (starts(id) || starts(native)) && self.sees(id))
            .map(|(id, _)| id)
            .collect();
        // A session and its subagents share the start of their ids: the one whose id starts
        // every other's is the one meant.
        seen.sort();
        let parent = format!("{}/", seen.first().map_or("", String::as_str));
        if seen.len() > 1 && seen[1..].iter().all(|id| id.starts_with(&parent)) {
            seen.truncate(1);
        }
        match seen.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(not_found()),
            more => Err(ambiguous(more.len(), "the start of")),
        }
    }

    fn header(&self, conn: &Connection, id: &str) -> Result<Option<SessionHeader>, Error> {
        let header = conn
            .prepare_cached(
                "SELECT session_id, origin, title, repo, model, created_at, updated_at, \
                 message_count, parent_session_id, replacement_epoch FROM sessions \
                 WHERE session_id = ?1",
            )
            .and_then(|mut s| {
                s.query_row([id], |r| {
                    Ok(SessionHeader {
                        session_id: r.get(0)?,
                        origin: r.get(1)?,
                        title: r.get(2)?,
                        repo: r.get(3)?,
                        model: r.get(4)?,
                        created_at: r.get(5)?,
                        updated_at: r.get(6)?,
                        message_count: r.get(7)?,
                        parent_session_id: r.get(8)?,
                        replacement_epoch: r.get(9)?,
                    })
                })
                .optional()
            })
            .map_err(|e| self.failed(e))?;
        Ok(header.map(|mut h| {
            if self.visible.is_some() {
                h.title = h
                    .title
                    .map(|t| quarry_udf::mask_credentials(&t).into_owned());
            }
            h
        }))
    }

    /// The record of session `id` when the scope sees it and the archive holds it. A
    /// conversation's own server sees the sessions around its conversation in a lineage as
    /// headers only: id, origin, title, times and parent.
    fn record(&self, conn: &Connection, id: &str) -> Result<Option<SessionRecord>, Error> {
        let header_only = !self.sees(id);
        if header_only && self.pinned.is_none() {
            return Ok(None);
        }
        Ok(self.header(conn, id)?.map(|mut header| {
            if header_only {
                header.title = header
                    .title
                    .map(|t| quarry_udf::mask_credentials(&t).into_owned());
                header.repo = None;
                header.model = None;
                header.message_count = 0;
                header.replacement_epoch = 0;
            }
            SessionRecord {
                header,
                live: false,
                persisted: true,
                header_only,
            }
        }))
    }

    fn window(&self, conn: &Connection, request: &WindowRequest) -> Result<EventWindow, Error> {
        for (name, n) in [("before", request.before), ("after", request.after)] {
            if !(0..=MAX_NEIGHBOURS).contains(&n) {
                return Err(Error::InvalidWindow(format!(
                    "--{name} {n} is out of range: a window takes 0 to {MAX_NEIGHBOURS} events on each side"
                )));
            }
        }
        if let Some(bad) = request
            .surfaces
            .iter()
            .find(|s| !SURFACES.contains(&s.as_str()))
        {
            return Err(Error::InvalidSurface(format!(
                "`{bad}` is not a surface: use {}",
                SURFACES.join(", ")
            )));
        }
        let id = self.session_id(conn, &request.session)?;
        let session = self
            .header(conn, &id)?
            .ok_or_else(|| Error::SessionNotFound(id.clone()))?;
        let target_seq = match &request.message {
            Some(message) => self.message_seq(conn, &id, message)?,
            None => request.seq,
        };
        let request = &WindowRequest {
            seq: target_seq,
            ..request.clone()
        };
        let (start, end) = (
            request.seq.saturating_sub(request.before),
            request.seq.saturating_add(request.after),
        );
        // A reader reads what its catalog holds: the `events` view (records of committed
        // turns), without payloads; the admin every record, whole.
        let (table, payload) = if self.visible.is_none() {
            ("events_raw", "payload")
        } else {
            ("events", "NULL")
        };
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT seq, type, time, surface, turn_id, {payload} FROM {table} \
                 WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3 ORDER BY seq"
            ))
            .map_err(|e| self.failed(e))?;
        let events: Vec<SessionEvent> = stmt
            .query_map(params![id, start, end], |r| {
                let payload: Option<String> = r.get(5)?;
                Ok(SessionEvent {
                    seq: r.get(0)?,
                    kind: r.get(1)?,
                    time: r.get(2)?,
                    surface: r.get(3)?,
                    turn_id: r.get(4)?,
                    payload: payload.and_then(|p| serde_json::from_str(&p).ok()),
                    messages: Vec::new(),
                })
            })
            .and_then(Iterator::collect)
            .map_err(|e| self.failed(e))?;
        let mut events = events;
        self.attach_messages(conn, &id, start, end, &mut events)?;
        let target = events
            .iter()
            .find(|e| e.seq == request.seq)
            .cloned()
            .ok_or_else(|| Error::EventNotFound {
                session: id.clone(),
                seq: request.seq,
            })?;
        let start_seq = events.first().map_or(request.seq, |e| e.seq);
        let end_seq = events.last().map_or(request.seq, |e| e.seq);
        if !request.surfaces.is_empty() {
            events.retain(|e| request.surfaces.contains(&e.surface));
        }
        Ok(EventWindow {
            session,
            target,
            start_seq,
            end_seq,
            events,
            generation: self.generation(conn)?,
        })
    }

    /// The seq of the record message `message` of session `id` was read from. A message of
    /// another session, or one the scope does not see, is `not_found` as one that does not
    /// exist; a message whose record is not known (an export archived before schema version 5
    /// and not read since) is `event_not_found`.
    fn message_seq(&self, conn: &Connection, id: &str, message: &str) -> Result<i64, Error> {
        let message = message.strip_prefix("message:").unwrap_or(message);
        let found: Option<(Option<i64>, bool)> = conn
            .prepare_cached(
                "SELECT event_seq, hidden FROM messages WHERE message_id = ?1 AND session_id = ?2",
            )
            .and_then(|mut s| {
                s.query_row(params![message, id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(|e| self.failed(e))?;
        match found {
            Some((seq, hidden)) if !(hidden && self.visible.is_some()) => {
                seq.ok_or_else(|| Error::EventNotFound {
                    session: id.to_string(),
                    seq: -1,
                })
            }
            _ => Err(Error::NotFound(format!(
                "no message `{message}` in session `{id}` in this scope"
            ))),
        }
    }

    /// Gives each record of `events` (seqs `start` to `end`) the messages read from it with
    /// their blocks, texts bounded and, for a reader, masked (hidden messages left out).
    fn attach_messages(
        &self,
        conn: &Connection,
        id: &str,
        start: i64,
        end: i64,
        events: &mut [SessionEvent],
    ) -> Result<(), Error> {
        let hidden = if self.visible.is_some() {
            " AND NOT m.hidden"
        } else {
            ""
        };
        // The messages read from the window's records, then their blocks (the session's, read
        // by its index, kept for those messages).
        let messages: Vec<(i64, String, String)> = conn
            .prepare_cached(&format!(
                "SELECT m.event_seq, m.message_id, m.role FROM messages m \
                 WHERE m.session_id = ?1 AND m.event_seq BETWEEN ?2 AND ?3{hidden} \
                 ORDER BY m.position"
            ))
            .and_then(|mut s| {
                s.query_map(params![id, start, end], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?
                .collect()
            })
            .map_err(|e| self.failed(e))?;
        if messages.is_empty() {
            return Ok(());
        }
        let wanted: HashSet<&str> = messages.iter().map(|(_, m, _)| m.as_str()).collect();
        let mut blocks: std::collections::HashMap<String, Vec<EventBlock>> =
            std::collections::HashMap::new();
        let failed = |e| self.failed(e);
        let mut stmt = conn
            .prepare_cached(
                "SELECT message_id, type, COALESCE(NULLIF(text, ''), tool_command, tool_path, ''), \
                 tool_name FROM blocks WHERE session_id = ?1 ORDER BY message_id, position",
            )
            .map_err(failed)?;
        let mut rows = stmt.query([id]).map_err(failed)?;
        while let Some(r) = rows.next().map_err(failed)? {
            let message: String = r.get(0).map_err(failed)?;
            if !wanted.contains(message.as_str()) {
                continue;
            }
            let text: String = r.get(2).map_err(failed)?;
            let text = if self.visible.is_some() {
                quarry_udf::mask_credentials(&text).into_owned()
            } else {
                text
            };
            let excerpt = resolve::Excerpt::of(&text, resolve::MAX_WINDOW_EXCERPT);
            blocks.entry(message).or_default().push(EventBlock {
                kind: r.get(1).map_err(failed)?,
                tool_name: r.get(3).map_err(failed)?,
                text: excerpt.text,
                truncated: excerpt.truncated,
            });
        }
        for (seq, message_id, role) in messages {
            let Some(event) = events.iter_mut().find(|e| e.seq == seq) else {
                continue;
            };
            let blocks = blocks.remove(&message_id).unwrap_or_default();
            event.messages.push(EventMessage {
                message_id,
                role,
                blocks,
            });
        }
        Ok(())
    }

    fn lineage(&self, conn: &Connection, reference: &str) -> Result<LineageTrace, Error> {
        let id = self.session_id(conn, reference)?;
        let target = self
            .record(conn, &id)?
            .ok_or_else(|| Error::SessionNotFound(id.clone()))?;
        // Parents outward, until one is missing (or unseen) or there is none; a cycle in the
        // source's links ends the walk where it would repeat.
        let mut ancestors: Vec<SessionRecord> = Vec::new();
        let mut walked = HashSet::from([id.clone()]);
        let mut unresolved = None;
        let mut parent = target.header.parent_session_id.clone();
        while let Some(p) = parent.take() {
            if !walked.insert(p.clone()) {
                return Err(Error::InvalidLineage(format!(
                    "the parent links of `{id}` form a cycle through `{p}`"
                )));
            }
            match self.record(conn, &p)? {
                // A pinned conversation sees the session around it as a header, and no further.
                Some(record) if record.header_only => {
                    unresolved = record.header.parent_session_id.clone();
                    ancestors.push(record);
                }
                Some(record) => {
                    parent = record.header.parent_session_id.clone();
                    ancestors.push(record);
                }
                None => unresolved = Some(p),
            }
        }
        let descendants = self.descendants(conn, &id, &mut walked)?;
        let root = match &unresolved {
            Some(_) => None,
            None => Some(ancestors.last().cloned().unwrap_or_else(|| target.clone())),
        };
        Ok(LineageTrace {
            target,
            ancestors,
            descendants,
            complete: unresolved.is_none(),
            root,
            unresolved_parent_id: unresolved,
            generation: self.generation(conn)?,
        })
    }

    /// The seen children of `id` (by start, then id), each with its descendants.
    fn descendants(
        &self,
        conn: &Connection,
        id: &str,
        walked: &mut HashSet<String>,
    ) -> Result<Vec<LineageNode>, Error> {
        let children = strings(
            conn,
            "SELECT session_id FROM sessions WHERE parent_session_id = ?1 \
             ORDER BY created_at, session_id",
            id,
        )
        .map_err(|e| self.failed(e))?;
        let mut nodes = Vec::new();
        for child in children {
            if !walked.insert(child.clone()) {
                continue;
            }
            if let Some(session) = self.record(conn, &child)? {
                let descendants = self.descendants(conn, &child, walked)?;
                nodes.push(LineageNode {
                    session,
                    descendants,
                });
            }
        }
        Ok(nodes)
    }
}

/// The first column of `sql`'s rows with `?1` = `value`.
fn strings(conn: &Connection, sql: &str, value: &str) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached(sql)?
        .query_map([value], |r| r.get(0))?
        .collect()
}

/// `text%` as a LIKE pattern matching `text` literally at the start (`\` escapes).
fn escape_like(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 1);
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// A window as lines: the session, then one line per record (the target marked `>`).
pub fn render_window(window: &EventWindow) -> String {
    let mut out = format!(
        "{} — {} (records {}–{}, generation {})\n",
        window.session.session_id,
        window.session.title.as_deref().unwrap_or("untitled"),
        window.start_seq,
        window.end_seq,
        window.generation
    );
    for event in &window.events {
        let mark = if event.seq == window.target.seq {
            ">"
        } else {
            " "
        };
        out.push_str(&format!(
            "{mark} {:>6}  {:<9} {}  {}\n",
            event.seq,
            event.surface,
            event.time.map_or("-".to_string(), |t| {
                chrono::DateTime::from_timestamp_millis(t).map_or(t.to_string(), |t| {
                    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
                })
            }),
            event.kind
        ));
        for m in &event.messages {
            for b in &m.blocks {
                let line = b.text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                let short: String = line.chars().take(90).collect();
                let cut = if short.len() < line.len() || b.text.lines().count() > 1 {
                    " …"
                } else {
                    ""
                };
                let tool = b
                    .tool_name
                    .as_deref()
                    .map_or(String::new(), |t| format!(" {t}"));
                out.push_str(&format!(
                    "            {} {}{tool}: {short}{cut}\n",
                    m.role, b.kind
                ));
            }
        }
    }
    out
}

/// A lineage as an indented tree: the ancestors outward above the target, its descendants
/// below, and whether the chain is complete.
pub fn render_lineage(trace: &LineageTrace) -> String {
    let line = |r: &SessionRecord| {
        format!(
            "{}  {}",
            r.header.session_id,
            r.header.title.as_deref().unwrap_or("untitled")
        )
    };
    let mut out = String::new();
    match (&trace.root, &trace.unresolved_parent_id) {
        (Some(root), _) => out.push_str(&format!("complete: root {}\n", root.header.session_id)),
        (None, Some(parent)) => out.push_str(&format!(
            "incomplete: parent {parent} is not in this archive (or scope)\n"
        )),
        (None, None) => {}
    }
    for (depth, ancestor) in trace.ancestors.iter().rev().enumerate() {
        out.push_str(&format!("{}{}\n", "  ".repeat(depth), line(ancestor)));
    }
    let depth = trace.ancestors.len();
    out.push_str(&format!(
        "{}* {}\n",
        "  ".repeat(depth),
        line(&trace.target)
    ));
    fn tree(
        nodes: &[LineageNode],
        depth: usize,
        out: &mut String,
        line: &dyn Fn(&SessionRecord) -> String,
    ) {
        for node in nodes {
            out.push_str(&format!("{}{}\n", "  ".repeat(depth), line(&node.session)));
            tree(&node.descendants, depth + 1, out, line);
        }
    }
    tree(&trace.descendants, depth + 1, &mut out, &line);
    out
}
