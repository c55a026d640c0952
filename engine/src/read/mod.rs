//! Reading what a search or a query found (`../shared/spec/session-query.md`): refs
//! ([`refs`]), transcripts ([`transcript`]), bounded event windows ([`window`]), lineage traces
//! ([`lineage`]), event traces ([`trace`]) and the ref resolver ([`resolve`]).
//!
//! Every read decides first which sessions the caller's scope sees, then resolves the ref
//! among those only: a session that does not exist and one the scope does not see give the same
//! `session_not_found`, by the same code path (no prefix match or count of an unseen session is
//! used; the only ids of unseen sessions an answer holds are links the reader's own rows hold,
//! a parent's or a subagent's id). Each answer's rows are read in one SQLite read transaction,
//! at one archive generation, which it reports (the scope's sessions are decided just before).
//! A reader scope gets no raw record payloads, reads the `events` view's records only, and its
//! texts are masked; every read is audited.

pub mod lineage;
pub use quarry_schema::refs;
pub mod resolve;
pub mod trace;
pub mod transcript;
pub mod window;

use std::collections::HashSet;
use std::path::PathBuf;

use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;

use crate::audit::{Language, Outcome};
use crate::engine::{Session, blocking};
use crate::error::Error;
use crate::scope::Scope;
use crate::search::rank::{SUMMARY_COLUMNS, SessionSummary};
pub use lineage::{LineageNode, LineageTrace, SessionRecord, lineage, render_lineage};
pub use refs::{Ref, RefKind};
pub use resolve::Resolution;
pub use trace::{EventRecord, EventTrace, TraceRequest};
pub use transcript::{Transcript, TranscriptRequest};
pub use window::{
    Around, EventBlock, EventMessage, EventWindow, MAX_NEIGHBOURS, SURFACES, SessionEvent,
    WindowRequest, render_window, window,
};

/// A session as a read shows it (the spec's `SessionHeader`, in quarry's fields): what a search
/// hit shows of it (its fields, flattened; the title masked for a reader), and its lineage and
/// epoch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionHeader {
    /// Id, origin, title, repository, model, times and message count.
    #[serde(flatten)]
    pub summary: SessionSummary,
    /// The session that started it (a subagent's parent, a resumed or forked session's
    /// origin), as the source records it, whether or not the archive holds that session.
    pub parent_session_id: Option<String>,
    /// The archive generation at which the session's rows were last replaced rather than
    /// grown: a transcript cursor from before it is stale.
    pub replacement_epoch: i64,
}

impl std::ops::Deref for SessionHeader {
    type Target = SessionSummary;

    fn deref(&self) -> &SessionSummary {
        &self.summary
    }
}

impl std::ops::DerefMut for SessionHeader {
    fn deref_mut(&mut self) -> &mut SessionSummary {
        &mut self.summary
    }
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
            .prepare_cached(&format!(
                "SELECT {SUMMARY_COLUMNS}, parent_session_id, replacement_epoch FROM sessions \
                 WHERE session_id = ?1"
            ))
            .and_then(|mut s| {
                s.query_row([id], |r| {
                    Ok(SessionHeader {
                        summary: SessionSummary::from_row(r)?,
                        parent_session_id: r.get(8)?,
                        replacement_epoch: r.get(9)?,
                    })
                })
                .optional()
            })
            .map_err(|e| self.failed(e))?;
        Ok(header.map(|mut h| {
            if self.visible.is_some() {
                h.summary.title = h
                    .summary
                    .title
                    .take()
                    .map(|t| quarry_udf::mask_credentials(&t).into_owned());
            }
            h
        }))
    }
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
