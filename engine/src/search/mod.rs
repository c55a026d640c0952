//! Ranked full-text search: "find the session where I fixed the flaky login test".
//!
//! A search text ([`text`]) is matched against the archive's one FTS5 index, `blocks_fts`, in a
//! lane ([`rank::Lane`]): `dialogue` ranks text and thinking blocks of user and assistant
//! messages, `actions` tool-use and tool-result blocks (`auto` is `dialogue`; `hybrid` and
//! `semantic` need embeddings, which the archive does not have: a typed error, never a silent
//! fallback). Each matching block gets FTS5's BM25 ([`bm25`]) computed over the caller's rows
//! only, so a reader's scores reveal nothing of sessions it cannot see (the admin scope's equal
//! FTS5's `bm25()`); sessions are ranked by their best block (score, then session id), or, with
//! a session named, that session's messages by their best block (score, then position).
//!
//! Pages are walked with self-contained cursors ([`cursor`]) that pin the generation, the rows
//! and the statistics of the first page, so a walk equals the unpaged ranking at that
//! generation however much is ingested meanwhile; the answer is a [`SearchEnvelope`].
//! Filters (a predicate over sessions in the query language) and the scope narrow the rows
//! before anything is ranked or counted; every search is audited.

pub mod bm25;
pub mod cursor;
pub mod directory;
pub mod envelope;
pub mod rank;
pub mod rows;
pub mod text;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use rusqlite::Connection;

use crate::audit::{Language, Outcome};
use crate::engine::{Ranker, Session, blocking};
use crate::error::Error;
use crate::scope::Scope;
pub use cursor::Cursor;
use datafusion::arrow::record_batch::RecordBatch;
pub use envelope::{Match, MissDiagnostics, SearchEnvelope, SearchHit, render_text};
use envelope::{RANKING_POLICY, RANKING_POLICY_VERSION};
use rank::{Lane, Narrowing, Ranked, Universe};

/// The page size when none is asked for.
pub const DEFAULT_PAGE_SIZE: usize = 20;
/// The largest page.
pub const MAX_PAGE_SIZE: usize = 1000;
/// Rows holding the text from which a ranking is split across cores.
const PARALLEL_ROWS: i64 = 20_000;

/// One search request.
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    /// The search text (words, `prefix*`, `"phrases"`, `AND`/`OR`/`NOT`), always data.
    pub text: String,
    /// The lane: `auto` (default), `dialogue`, `actions`; `hybrid`/`semantic` are refused.
    pub lane: Option<String>,
    /// A predicate over sessions in the query language (`repo:quarry since:2026-01`), applied
    /// before ranking.
    pub filter: Option<String>,
    /// Rank the messages of this session instead of sessions.
    pub session: Option<String>,
    /// Hits per page (default [`DEFAULT_PAGE_SIZE`], at most [`MAX_PAGE_SIZE`]).
    pub page_size: Option<usize>,
    /// Hits to skip (best effort; a cursor is the stable way on).
    pub offset: Option<u64>,
    /// The previous page's `next_cursor`.
    pub cursor: Option<String>,
}

impl SearchRequest {
    /// The text an error of this request is about, to draw its diagnostics under: the filter
    /// for a query error (the only part in the query language), else the search text.
    pub fn text_of(&self, error: &Error) -> &str {
        about(error, self.filter.as_deref(), &self.text)
    }
}

/// The text an error is about: the filter for a filter's error, else the search text.
pub(crate) fn about<'a>(error: &Error, filter: Option<&'a str>, text: &'a str) -> &'a str {
    match (error, filter) {
        (Error::InvalidFilter(_), Some(filter)) => filter,
        _ => text,
    }
}

/// The sessions a search's `where` filter admits; a filter that does not parse or resolve is
/// `invalid_filter`.
pub(crate) async fn filtered_sessions(
    session: &Session,
    filter: &str,
) -> Result<HashSet<String>, Error> {
    session
        .session_ids(Some(filter))
        .await
        .map_err(|e| match e {
            Error::Query(d) => Error::InvalidFilter(d),
            other => other,
        })
}

/// A search text that does not parse, as a query error drawn under the whole text.
fn text_error(text: &str, e: text::TextError) -> Error {
    use quarry_grammar::{Diagnostic, DiagnosticCode, Diagnostics, Span};
    let code = match e {
        text::TextError::Empty => DiagnosticCode::EmptyQuery,
        text::TextError::Malformed(_) => DiagnosticCode::UnexpectedToken,
    };
    let span = Span {
        start: 0,
        end: text.len(),
    };
    Error::Query(Diagnostics::one(
        Diagnostic::new(code, span, e.to_string()).locate(text),
    ))
}

/// The lane a request names.
pub fn lane(name: Option<&str>) -> Result<Lane, Error> {
    match name.unwrap_or("auto") {
        "auto" | "dialogue" => Ok(Lane::Dialogue),
        "actions" => Ok(Lane::Actions),
        "hybrid" | "semantic" => Err(Error::LaneUnavailable(name.unwrap_or_default().into())),
        other => Err(Error::BadRequest(format!(
            "unknown retrieval lane `{other}`: use auto, dialogue or actions"
        ))),
    }
}

/// Runs `request` in `session` (its scope applies before anything is ranked), audited.
pub async fn search(session: &Session, request: &SearchRequest) -> Result<SearchEnvelope, Error> {
    let mut ticket = session.intend(Language::Search, &audit_text(request))?;
    let result = run(session, request).await;
    let message = result.as_ref().err().map(ToString::to_string);
    let outcome = match (&result, &message) {
        (Ok(envelope), _) => Outcome::Ok {
            rows: envelope.hits.len(),
            truncated: false,
        },
        (Err(_), message) => Outcome::Error(message.as_deref().unwrap_or_default()),
    };
    ticket.finish(outcome).map_err(Error::Audit)?;
    result
}

/// What the audit trail records of a request.
fn audit_text(request: &SearchRequest) -> String {
    let mut text = format!("search {}", request.text);
    for (name, value) in [
        ("lane", &request.lane),
        ("where", &request.filter),
        ("session", &request.session),
    ] {
        if let Some(value) = value {
            text.push_str(&format!(" --{name} {value}"));
        }
    }
    text
}

async fn run(session: &Session, request: &SearchRequest) -> Result<SearchEnvelope, Error> {
    let job = Job::prepare(session, request).await?;
    let _stop = job.interrupt.on_drop();
    blocking(move || job.run()).await
}

/// The language's ranked form, answered by the search (the engine's [`Ranker`]).
pub(crate) struct SearchRanker;

impl Ranker for SearchRanker {
    fn rank<'a>(
        &'a self,
        session: &'a Session,
        form: &'a quarry_grammar::ranked::RankedForm,
        limit: usize,
    ) -> futures::future::BoxFuture<'a, Result<(RecordBatch, i64), Error>> {
        Box::pin(async move {
            let request = SearchRequest {
                text: form.text.clone(),
                lane: form.lane.clone(),
                filter: form.filter.clone(),
                offset: Some(form.offset),
                ..Default::default()
            };
            let page = ranked_page(session, &request, limit).await?;
            Ok((rows::batch(&page.hits)?, page.generation))
        })
    }
}

/// The page of `request` holding `limit` hits at most (no page-size cap but the caller's), in
/// a session whose scope applies; not audited (a part of a query that is): the rows of the
/// language's ranked form.
pub(crate) async fn ranked_page(
    session: &Session,
    request: &SearchRequest,
    limit: usize,
) -> Result<SearchEnvelope, Error> {
    let request = SearchRequest {
        page_size: None,
        ..request.clone()
    };
    let mut job = Job::prepare(session, &request).await?;
    job.page_size = limit;
    let _stop = job.interrupt.on_drop();
    blocking(move || job.run()).await
}

/// The sessions `request`'s text matches in its lane under the session's scope and filter
/// (what the facets of a search count), with the normalized text and the lane.
pub(crate) async fn matching_sessions(
    session: &Session,
    request: &SearchRequest,
) -> Result<(String, Lane, HashSet<String>), Error> {
    let job = Job::prepare(session, request).await?;
    let _stop = job.interrupt.on_drop();
    blocking(move || {
        let sessions = job.read(|job, conn| job.matching(conn))?;
        Ok((job.search.normalized, job.lane, sessions))
    })
    .await
}

/// `token` as a cursor of this request, or why not.
fn checked_cursor(token: &str, lane: Lane, digest: &str) -> Result<Cursor, Error> {
    let cursor = Cursor::decode(token).ok_or_else(|| {
        Error::InvalidCursor(
            "the cursor is not one quarry wrote: pass `next_cursor` back unchanged".into(),
        )
    })?;
    if cursor.lane != lane.name() {
        return Err(Error::InvalidCursor(format!(
            "the cursor was minted in the `{}` lane, not `{}`: start a new search to change lanes",
            cursor.lane,
            lane.name()
        )));
    }
    if cursor.digest != digest {
        return Err(Error::InvalidCursor(
            "the cursor belongs to another search (its text, filter, page size, session or scope differ): start a new search without it".into(),
        ));
    }
    Ok(cursor)
}

/// The blocking part of a search: everything read in one SQLite read transaction.
struct Job {
    archive: PathBuf,
    /// Stops the search's SQLite work when its request goes away (a time limit, a client gone).
    interrupt: crate::engine::Interrupt,
    scope_key: String,
    engine: Arc<crate::engine::Engine>,
    guard: bool,
    lane: Lane,
    search: text::Search,
    scope_sessions: Option<HashSet<String>>,
    candidates: Option<HashSet<String>>,
    hidden: Option<Arc<quarry_udf::functions::MemberSet>>,
    within: Option<String>,
    page_size: usize,
    offset: u64,
    cursor: Option<Cursor>,
    digest: String,
}

/// The key of `entry` in the order: a session id, or a message position within one session.
fn key(entry: &Ranked, within: bool) -> String {
    if within {
        entry.best.message_position.to_string()
    } else {
        entry.best.session_id.clone()
    }
}

impl Job {
    /// The job of `request` in `session`: its text, lane and cursor checked, the scope's and
    /// the filter's sessions decided by the engine before anything is ranked.
    async fn prepare(session: &Session, request: &SearchRequest) -> Result<Job, Error> {
        let lane = lane(request.lane.as_deref())?;
        let search = text::parse(&request.text).map_err(|e| text_error(&request.text, e))?;
        let page_size = request.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
        if page_size == 0 || page_size > MAX_PAGE_SIZE {
            return Err(Error::InvalidLimit(format!(
                "page size {page_size} is out of range: ask for 1 to {MAX_PAGE_SIZE} hits per page"
            )));
        }
        let filter = request
            .filter
            .as_deref()
            .map(str::trim)
            .filter(|f| !f.is_empty());
        let scope = session.scope().clone();
        let digest = crate::token::digest(&[
            "search",
            &RANKING_POLICY_VERSION.to_string(),
            lane.name(),
            &search.normalized,
            filter.unwrap_or(""),
            &page_size.to_string(),
            &scope.identity(),
            request.session.as_deref().unwrap_or(""),
        ]);
        let cursor = match &request.cursor {
            Some(token) => Some(checked_cursor(token, lane, &digest)?),
            None => None,
        };
        let scope_sessions = match &scope {
            Scope::Admin => None,
            Scope::Reader(_) => Some(session.session_ids(None).await?),
        };
        let candidates = match filter {
            Some(filter) => Some(filtered_sessions(session, filter).await?),
            None => None,
        };
        if let Some(id) = &request.session {
            let visible = match &scope_sessions {
                Some(sessions) => sessions.contains(id),
                None => session.session_exists(id).await?,
            };
            if !visible {
                return Err(Error::NotFound(format!("no session `{id}` in this scope")));
            }
        }
        let hidden = match &scope {
            Scope::Admin => None,
            Scope::Reader(_) => session.engine().hidden_messages().await,
        };
        Ok(Job {
            archive: session.engine().path().to_path_buf(),
            interrupt: crate::engine::Interrupt::default(),
            scope_key: scope.identity(),
            engine: session.engine().clone(),
            guard: !scope.is_admin(),
            lane,
            search,
            scope_sessions,
            candidates,
            hidden,
            within: request.session.clone(),
            page_size,
            offset: request.offset.unwrap_or(0),
            cursor,
            digest,
        })
    }

    fn run(self) -> Result<SearchEnvelope, Error> {
        self.read(|job, conn| job.ranked_page(conn))
    }

    /// `work` over the archive in one read transaction, with the FTS5 function registered.
    fn read<T>(
        &self,
        work: impl FnOnce(&Self, &Connection) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let archive_error = |e: rusqlite::Error| Error::archive(&self.archive, e);
        let conn = crate::engine::read_only(&self.archive).map_err(archive_error)?;
        self.interrupt.install(&conn);
        quarry_fts5::register(&conn).map_err(archive_error)?;
        conn.execute_batch("BEGIN").map_err(archive_error)?;
        let answer = work(self, &conn);
        let _ = conn.execute_batch("COMMIT");
        answer
    }

    /// Connections for a parallel ranking when the text matches many rows (one per core
    /// beyond the first, at most three): each in a read transaction at generation `now`, like
    /// the job's own; none when one cannot be opened there (the generation moved meanwhile).
    fn more_connections(&self, stats: &bm25::Stats, now: i64) -> Vec<Connection> {
        let matching: i64 = stats.holding.iter().flatten().sum();
        if matching < PARALLEL_ROWS || self.within.is_some() {
            return Vec::new();
        }
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let open = || -> Option<Connection> {
            let conn = crate::engine::read_only(&self.archive).ok()?;
            self.interrupt.install(&conn);
            quarry_fts5::register(&conn).ok()?;
            conn.execute_batch("BEGIN").ok()?;
            let at = quarry_archive::read_generation(&conn).ok()?;
            (at == now).then_some(conn)
        };
        let more: Option<Vec<Connection>> = (1..cores.min(4)).map(|_| open()).collect();
        more.unwrap_or_default()
    }

    /// The messages no dialogue search ranks (system messages), kept per generation.
    fn excluded(&self, conn: &Connection, now: i64) -> Result<Arc<HashSet<String>>, Error> {
        self.engine.memo().get("search:system-messages", now, || {
            rank::system_messages(conn).map_err(|e| Error::archive(&self.archive, e))
        })
    }

    /// The row directory of generation `now` when this search may read it: the admin scope
    /// ranking sessions (a reader's guard reads each row's text; one session's messages are
    /// few). `None` also while it is being built.
    fn directory(&self, now: i64) -> Option<Arc<directory::Directory>> {
        let admin = self.scope_sessions.is_none() && self.hidden.is_none() && !self.guard;
        (admin && self.within.is_none())
            .then(|| directory::at(&self.engine, now))
            .flatten()
    }

    /// The sessions holding a row the text matches, as a first page would rank them.
    fn matching(&self, conn: &Connection) -> Result<HashSet<String>, Error> {
        let archive_error = |e: rusqlite::Error| Error::archive(&self.archive, e);
        let now =
            quarry_archive::read_generation(conn).map_err(|e| Error::archive(&self.archive, e))?;
        let excluded = self.excluded(conn, now)?;
        let universe = Universe {
            sessions: self.scope_sessions.as_ref(),
            hidden: self.hidden.as_deref(),
            guard: self.guard,
        };
        let directory = self.directory(now);
        let narrowing = Narrowing {
            lane: self.lane,
            candidates: self.candidates.as_ref(),
            session: self.within.as_deref(),
            excluded: &excluded,
            pin: rank::max_rowid(conn).map_err(archive_error)?,
            directory: directory.as_deref(),
        };
        rank::sessions(conn, &self.search, &universe, &narrowing).map_err(archive_error)
    }

    fn ranked_page(&self, conn: &Connection) -> Result<SearchEnvelope, Error> {
        let archive_error = |e: rusqlite::Error| Error::archive(&self.archive, e);
        let now =
            quarry_archive::read_generation(conn).map_err(|e| Error::archive(&self.archive, e))?;
        let (generation, pin) = match &self.cursor {
            Some(c) => (c.generation, c.pin),
            None => (now, rank::max_rowid(conn).map_err(archive_error)?),
        };
        let universe = Universe {
            sessions: self.scope_sessions.as_ref(),
            hidden: self.hidden.as_deref(),
            guard: self.guard,
        };
        let excluded = self.excluded(conn, now)?;
        let directory = self.directory(now);
        let narrowing = Narrowing {
            lane: self.lane,
            candidates: self.candidates.as_ref(),
            session: self.within.as_deref(),
            excluded: &excluded,
            pin,
            directory: directory.as_deref(),
        };
        let stats = match &self.cursor {
            Some(c) => c.stats.clone(),
            None => self.stats(conn, &universe, pin, generation)?,
        };
        let within = self.within.is_some();
        let more = self.more_connections(&stats, now);
        let ranking = rank::rank(
            conn,
            more,
            &self.search,
            &universe,
            &narrowing,
            &stats,
            within,
        )
        .map_err(archive_error)?;
        let total = ranking.len() as u64;
        let start = match &self.cursor {
            Some(c) => ranking
                .iter()
                .position(|r| after(r, c, within))
                .unwrap_or(ranking.len()),
            None => (self.offset as usize).min(ranking.len()),
        };
        let end = start.saturating_add(self.page_size).min(ranking.len());
        let page = &ranking[start..end];
        let more = end < ranking.len();
        let next_cursor = match (more, page.last()) {
            (true, Some(last)) => Some(
                Cursor::new(
                    self.lane.name(),
                    self.digest.clone(),
                    generation,
                    pin,
                    stats.clone(),
                    end as u64,
                    last.best.score,
                    key(last, within),
                )
                .encode(),
            ),
            _ => None,
        };
        let hits = self.hits(conn, page, start as u64)?;
        let diagnostics = match (&self.candidates, total) {
            (Some(candidates), 0) => {
                Some(self.miss(conn, &universe, &excluded, pin, generation, candidates)?)
            }
            _ => None,
        };
        Ok(SearchEnvelope {
            hits,
            total: Some(total),
            limit: self.page_size,
            offset: start as u64,
            next_offset: more.then_some(end as u64),
            next_cursor,
            query: self.search.normalized.clone(),
            sort: None,
            retrieval_lane: self.lane.name(),
            ranking_policy: RANKING_POLICY,
            ranking_policy_version: RANKING_POLICY_VERSION,
            generation,
            diagnostics,
            session: self.header(conn)?,
        })
    }

    /// Within one session, its header (masked for readers).
    fn header(&self, conn: &Connection) -> Result<Option<rank::SessionSummary>, Error> {
        let Some(id) = &self.within else {
            return Ok(None);
        };
        let mut summaries =
            rank::summaries(conn, &[id.as_str()]).map_err(|e| Error::archive(&self.archive, e))?;
        Ok(summaries.remove(id).map(|mut s| {
            if self.guard {
                s.title = s
                    .title
                    .map(|t| quarry_udf::mask_credentials(&t).into_owned());
            }
            s
        }))
    }

    /// The statistics of the first page: the whole table's for the admin scope (what FTS5's
    /// `bm25()` reads), the scope's rows' for a reader (kept per scope and generation).
    fn stats(
        &self,
        conn: &Connection,
        universe: &Universe<'_>,
        pin: i64,
        generation: i64,
    ) -> Result<bm25::Stats, Error> {
        let archive_error = |e: rusqlite::Error| Error::archive(&self.archive, e);
        let table = rank::table_totals(conn, &self.search, pin).map_err(archive_error)?;
        let (rows, tokens) = match &self.scope_sessions {
            None => table.unwrap_or((0, 0)),
            Some(sessions) => *self.engine.memo().get(
                &format!("search:totals:{}", self.scope_key),
                generation,
                || rank::scope_totals(conn, sessions, universe).map_err(archive_error),
            )?,
        };
        let holding = if table.is_some() {
            rank::holding(conn, &self.search, universe, pin).map_err(archive_error)?
        } else {
            // Nothing matches anywhere: no statistics are needed.
            vec![None; self.search.phrases.len()]
        };
        Ok(bm25::Stats {
            rows,
            tokens,
            holding,
        })
    }

    /// The hits of `page`, their sessions and snippets read.
    fn hits(
        &self,
        conn: &Connection,
        page: &[Ranked],
        before: u64,
    ) -> Result<Vec<SearchHit>, Error> {
        let archive_error = |e: rusqlite::Error| Error::archive(&self.archive, e);
        let ids: Vec<&str> = page.iter().map(|r| r.best.session_id.as_str()).collect();
        let summaries = rank::summaries(conn, &ids).map_err(archive_error)?;
        let mut out = Vec::with_capacity(page.len());
        for (i, entry) in page.iter().enumerate() {
            let best = &entry.best;
            let Some(mut summary) = summaries.get(&best.session_id).cloned() else {
                continue;
            };
            let mut snippet =
                rank::snippet(conn, &self.search, best.rowid).map_err(archive_error)?;
            if self.guard {
                snippet = quarry_udf::mask_credentials(&snippet).into_owned();
                summary.title = summary
                    .title
                    .map(|t| quarry_udf::mask_credentials(&t).into_owned());
            }
            let facts = rank::message_facts(conn, &best.session_id, &best.message_id)
                .map_err(archive_error)?;
            let rank = before + i as u64 + 1;
            out.push(SearchHit {
                session: summary,
                matched: Match {
                    rank,
                    retrieval_lane: self.lane.name(),
                    match_surface: self.lane.surface(),
                    score: best.score,
                    score_kind: "bm25",
                    score_components: BTreeMap::from([("bm25_raw", best.score)]),
                    lane_rank: rank,
                    lane_contribution: None,
                    raw_score: best.score,
                    matched_terms: self.search.terms.clone(),
                    snippet,
                    message_id: best.message_id.clone(),
                    role: facts.as_ref().map(|f| f.0.clone()),
                    occurred_at: facts.and_then(|f| f.1),
                    target_ref: best.message_id.clone(),
                    anchor: format!("{}/b{}", best.message_id, best.block_position),
                    actions: vec!["open", "copy_link"],
                    matching_blocks: entry.blocks,
                },
            });
        }
        Ok(out)
    }

    /// Why a filtered search found nothing: how many sessions the filter admitted and how many
    /// the text matched without it.
    fn miss(
        &self,
        conn: &Connection,
        universe: &Universe<'_>,
        excluded: &HashSet<String>,
        pin: i64,
        generation: i64,
        candidates: &HashSet<String>,
    ) -> Result<MissDiagnostics, Error> {
        let now =
            quarry_archive::read_generation(conn).map_err(|e| Error::archive(&self.archive, e))?;
        let directory = self.directory(now);
        let unfiltered = Narrowing {
            lane: self.lane,
            candidates: None,
            session: self.within.as_deref(),
            excluded,
            pin,
            directory: directory.as_deref(),
        };
        let stats = self.stats(conn, universe, pin, generation)?;
        let sessions = rank::rank(
            conn,
            Vec::new(),
            &self.search,
            universe,
            &unfiltered,
            &stats,
            false,
        )
        .map_err(|e| Error::archive(&self.archive, e))?
        .len();
        Ok(MissDiagnostics {
            message: format!(
                "the filter admitted {} sessions and none of them matched; without it the text matches {} sessions: widen the filter (a longer since:, another repo:)",
                candidates.len(),
                sessions
            ),
            filtered_sessions: candidates.len() as u64,
            matching_sessions_unfiltered: sessions as u64,
        })
    }
}

/// Whether `entry` sorts strictly after the cursor's anchor.
fn after(entry: &Ranked, cursor: &Cursor, within: bool) -> bool {
    match entry.best.score.total_cmp(&cursor.score()) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => {
            if within {
                entry.best.message_position > cursor.key.parse::<i64>().unwrap_or(i64::MAX)
            } else {
                entry.best.session_id.as_str() > cursor.key.as_str()
            }
        }
    }
}
