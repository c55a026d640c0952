//! The archive side of a search: the blocks a lane matches, scored with [`super::bm25`] over the
//! caller's statistics; the statistics themselves; snippets and the summaries of a page.
//!
//! Every statement reads the one FTS5 index (`blocks_fts`), whichever source answers other
//! queries, so both sources rank alike. Which rows may match is decided in Rust per row: the
//! lane's block types, the scope's sessions, the filter's sessions, hidden messages, rows
//! holding a credential in a masked column (for readers), and the pin (rows that existed at the
//! first page's generation).

use std::collections::{HashMap, HashSet};

use quarry_udf::functions::MemberSet;
use rusqlite::{Connection, OptionalExtension, params};

use super::bm25::{self, Stats};
use super::directory::{Directory, Kind};
use super::text::Search;
use quarry_fts5::{self as fts5, RowHit};

/// A retrieval lane the archive has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Text and thinking blocks of user and assistant messages.
    Dialogue,
    /// Tool-use and tool-result blocks (commands, paths, outputs).
    Actions,
}

impl Lane {
    /// The lane's name.
    pub fn name(self) -> &'static str {
        match self {
            Lane::Dialogue => "dialogue",
            Lane::Actions => "actions",
        }
    }

    /// The block types it ranks.
    fn block_types(self) -> &'static str {
        match self {
            Lane::Dialogue => "('text', 'thinking')",
            Lane::Actions => "('tool_use', 'tool_result')",
        }
    }

    /// What a hit of the lane matched.
    pub fn surface(self) -> &'static str {
        match self {
            Lane::Dialogue => "message",
            Lane::Actions => "action",
        }
    }
}

/// Who may see which rows.
pub struct Universe<'a> {
    /// The scope's sessions (`None`: every session, the admin scope).
    pub sessions: Option<&'a HashSet<String>>,
    /// Messages the scope never sees (`None`: it sees them all).
    pub hidden: Option<&'a MemberSet>,
    /// Whether rows holding a credential in a masked indexed column are left out (a reader's
    /// full-text guard, docs/security.md).
    pub guard: bool,
}

impl Universe<'_> {
    fn admits(&self, session: &str, message: &str) -> bool {
        self.sessions.is_none_or(|s| s.contains(session))
            && self.hidden.is_none_or(|h| !h.contains(message))
    }
}

/// What narrows the rows that may match, beyond the scope.
pub struct Narrowing<'a> {
    /// The lane.
    pub lane: Lane,
    /// Sessions a filter admits (`None`: no filter).
    pub candidates: Option<&'a HashSet<String>>,
    /// Only this session's blocks.
    pub session: Option<&'a str>,
    /// Messages the lane never ranks (system messages, for dialogue).
    pub excluded: &'a HashSet<String>,
    /// The highest block row id that may match.
    pub pin: i64,
    /// The row directory of the search's generation, when the ranking may read it instead of
    /// joining `blocks` (the admin scope, sessions ranked: see [`super::directory`]).
    pub directory: Option<&'a Directory>,
}

/// One matching block, scored.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The block's row id.
    pub rowid: i64,
    /// Its session.
    pub session_id: String,
    /// Its message.
    pub message_id: String,
    /// The message's position in the session.
    pub message_position: i64,
    /// The block's position in the message.
    pub block_position: i64,
    /// Its BM25 (lower is better).
    pub score: f64,
}

impl Hit {
    /// Whether this block beats `other` as its entry's best: lower score, then earlier
    /// message, then earlier block.
    fn beats(&self, score: f64, message_position: i64, block_position: i64) -> bool {
        ahead(
            (score, message_position, block_position),
            (self.score, self.message_position, self.block_position),
        )
    }
}

/// Whether block `a` (score, message position, block position) ranks ahead of block `b` in
/// one entry: lower score, then earlier message, then earlier block.
fn ahead(a: (f64, i64, i64), b: (f64, i64, i64)) -> bool {
    a.0.total_cmp(&b.0)
        .then(a.1.cmp(&b.1))
        .then(a.2.cmp(&b.2))
        .is_lt()
}

/// One ranked entry: a session (or a message within one), its best block and how many of its
/// blocks matched.
#[derive(Debug, Clone)]
pub struct Ranked {
    /// The best block.
    pub best: Hit,
    /// Matching blocks.
    pub blocks: u64,
}

/// The whole table's rows and tokens as FTS5 keeps them (what `bm25()` reads), from any row
/// `search` matches below `pin`; `None` when it matches none.
pub fn table_totals(
    conn: &Connection,
    search: &Search,
    pin: i64,
) -> rusqlite::Result<Option<(i64, i64)>> {
    let sql = format!(
        "SELECT {hit}(blocks_fts) FROM blocks_fts WHERE blocks_fts MATCH ?1 AND rowid <= ?2 LIMIT 1",
        hit = fts5::HIT
    );
    let blob: Option<Vec<u8>> = conn
        .prepare_cached(&sql)?
        .query_row(params![search.fts, pin], |r| r.get(0))
        .optional()?;
    Ok(blob
        .as_deref()
        .and_then(RowHit::decode)
        .map(|h| (h.table_rows, h.table_tokens)))
}

/// Every block `search` matches under `universe` and `narrowing`, scored with `stats` and
/// grouped: per session (or per message, `within` one session) the best block. The row ids up
/// to the pin are split into one range per connection, `conn` and each of `more` (opened in
/// read transactions at the same generation) scanning its own on its own thread, and the
/// groups merged; a string is copied only when a block becomes its entry's best.
pub fn rank(
    conn: &Connection,
    more: Vec<Connection>,
    search: &Search,
    universe: &Universe<'_>,
    narrowing: &Narrowing<'_>,
    stats: &Stats,
    within: bool,
) -> rusqlite::Result<Vec<Ranked>> {
    let parts = more.len() as i64 + 1;
    let range = |i: i64| {
        let (pin, lo) = (narrowing.pin.max(0), i * narrowing.pin.max(0) / parts);
        (lo + 1, (i + 1) * pin / parts)
    };
    let scan = |conn: &Connection, part: i64| {
        rank_range(
            conn,
            search,
            universe,
            narrowing,
            stats,
            within,
            range(part),
        )
    };
    let mut entries = std::thread::scope(|threads| -> rusqlite::Result<HashMap<String, Ranked>> {
        let others: Vec<_> = more
            .into_iter()
            .enumerate()
            .map(|(i, other)| threads.spawn(move || scan(&other, i as i64 + 1)))
            .collect();
        let mut entries = scan(conn, 0)?;
        for other in others {
            let found = other
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
            merge(&mut entries, found);
        }
        Ok(entries)
    })?;
    let mut ranking: Vec<Ranked> = entries.drain().map(|(_, r)| r).collect();
    ranking.sort_by(|a, b| {
        a.best.score.total_cmp(&b.best.score).then_with(|| {
            if within {
                a.best.message_position.cmp(&b.best.message_position)
            } else {
                a.best.session_id.cmp(&b.best.session_id)
            }
        })
    });
    Ok(ranking)
}

/// Adds `other`'s entries to `entries`: matching blocks summed, the better best kept.
fn merge(entries: &mut HashMap<String, Ranked>, other: HashMap<String, Ranked>) {
    for (key, found) in other {
        match entries.get_mut(&key) {
            Some(entry) => {
                entry.blocks += found.blocks;
                let b = &found.best;
                if entry
                    .best
                    .beats(b.score, b.message_position, b.block_position)
                {
                    entry.best = found.best;
                }
            }
            None => {
                entries.insert(key, found);
            }
        }
    }
}

/// [`rank`]'s groups of the blocks whose row ids lie in `range`.
fn rank_range(
    conn: &Connection,
    search: &Search,
    universe: &Universe<'_>,
    narrowing: &Narrowing<'_>,
    stats: &Stats,
    within: bool,
    range: (i64, i64),
) -> rusqlite::Result<HashMap<String, Ranked>> {
    if let Some(directory) = indexed(universe, narrowing, within) {
        return rank_indexed(conn, directory, search, narrowing, stats, range);
    }
    let idf = stats.idf();
    let avgdl = stats.avgdl();
    let mut entries: HashMap<String, Ranked> = HashMap::new();
    let mut frequencies = Vec::with_capacity(idf.len());
    each_match(
        conn,
        search,
        universe,
        narrowing,
        (true, range),
        |row, session_id, message_id| {
            let Some(row_tokens) =
                RowHit::frequencies(row.get_ref(4)?.as_blob()?, &mut frequencies)
            else {
                return Ok(());
            };
            let score = bm25::score(&idf, avgdl, row_tokens, &frequencies);
            let key = if within { message_id } else { session_id };
            // A worse score than the entry's best decides without the positions.
            if let Some(entry) = entries.get_mut(key)
                && score > entry.best.score
            {
                entry.blocks += 1;
                return Ok(());
            }
            let message_position = message_position(message_id);
            let block_position: i64 = row.get(3)?;
            let hit = || -> rusqlite::Result<Hit> {
                Ok(Hit {
                    rowid: row.get(0)?,
                    session_id: session_id.to_string(),
                    message_id: message_id.to_string(),
                    message_position,
                    block_position,
                    score,
                })
            };
            match entries.get_mut(key) {
                Some(entry) => {
                    entry.blocks += 1;
                    if entry.best.beats(score, message_position, block_position) {
                        entry.best = hit()?;
                    }
                }
                None => {
                    entries.insert(
                        key.to_string(),
                        Ranked {
                            best: hit()?,
                            blocks: 1,
                        },
                    );
                }
            }
            Ok(())
        },
    )?;
    Ok(entries)
}

/// The sessions holding a block `search` matches under `universe` and `narrowing`: the
/// sessions [`rank`] would rank, without scoring them.
pub fn sessions(
    conn: &Connection,
    search: &Search,
    universe: &Universe<'_>,
    narrowing: &Narrowing<'_>,
) -> rusqlite::Result<HashSet<String>> {
    if let Some(directory) = indexed(universe, narrowing, false) {
        let mut found = vec![false; directory.sessions()];
        each_indexed(
            conn,
            directory,
            search,
            narrowing,
            (false, (i64::MIN, narrowing.pin)),
            |_, entry| {
                found[entry.session as usize] = true;
                Ok(())
            },
        )?;
        return Ok(found
            .iter()
            .enumerate()
            .filter(|(_, f)| **f)
            .map(|(i, _)| directory.session(i as u32).to_string())
            .collect());
    }
    let mut found = HashSet::new();
    each_match(
        conn,
        search,
        universe,
        narrowing,
        (false, (i64::MIN, narrowing.pin)),
        |_, session_id, _| {
            if !found.contains(session_id) {
                found.insert(session_id.to_string());
            }
            Ok(())
        },
    )?;
    Ok(found)
}

/// Calls `each(row, session_id, message_id)` for every block `search` matches that
/// `universe` and `narrowing` admit, its row id in `range` (inclusive). A row holds the block's
/// rowid, session, message and position, then (`scored`) the FTS5 function's report at
/// column 4.
fn each_match(
    conn: &Connection,
    search: &Search,
    universe: &Universe<'_>,
    narrowing: &Narrowing<'_>,
    (scored, range): (bool, (i64, i64)),
    mut each: impl FnMut(&rusqlite::Row<'_>, &str, &str) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    // The guard's columns come last, after the report when there is one.
    let report = if scored {
        format!(", {}(blocks_fts)", fts5::HIT)
    } else {
        String::new()
    };
    let guard_at = if scored { 5 } else { 4 };
    let guard_columns = if universe.guard {
        ", b.text, b.tool_command"
    } else {
        ""
    };
    let session_filter = if narrowing.session.is_some() {
        " AND b.session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?4)"
    } else {
        ""
    };
    let sql = format!(
        "SELECT b.rowid, b.session_id, b.message_id, b.position{report}{guard_columns} \
         FROM blocks_fts CROSS JOIN blocks b ON b.rowid = blocks_fts.rowid \
         WHERE blocks_fts MATCH ?1 AND blocks_fts.rowid BETWEEN ?2 AND ?3 \
         AND b.type IN {types}{session_filter}",
        types = narrowing.lane.block_types(),
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let (lo, hi) = (range.0, range.1.min(narrowing.pin));
    let mut rows = match narrowing.session {
        Some(session) => stmt.query(params![search.fts, lo, hi, session])?,
        None => stmt.query(params![search.fts, lo, hi])?,
    };
    let exclude = narrowing.lane == Lane::Dialogue && !narrowing.excluded.is_empty();
    while let Some(row) = rows.next()? {
        let session_id = row.get_ref(1)?.as_str()?;
        let message_id = row.get_ref(2)?.as_str()?;
        if !universe.admits(session_id, message_id)
            || narrowing
                .candidates
                .is_some_and(|c| !c.contains(session_id))
            || (exclude && narrowing.excluded.contains(message_id))
        {
            continue;
        }
        if universe.guard && guarded(row, guard_at, guard_at + 1)? {
            continue;
        }
        each(row, session_id, message_id)?;
    }
    Ok(())
}

/// The directory a scan may read: one is at hand, the universe is every row (the admin scope:
/// no session, message or credential left out) and sessions are ranked, not one session's
/// messages.
fn indexed<'a>(
    universe: &Universe<'_>,
    narrowing: &Narrowing<'a>,
    within: bool,
) -> Option<&'a Directory> {
    let everything = universe.sessions.is_none() && universe.hidden.is_none() && !universe.guard;
    // Its system flags stand for `narrowing.excluded` (both read at one generation).
    narrowing.directory.filter(|d| {
        everything
            && !within
            && narrowing.session.is_none()
            && d.system_messages == narrowing.excluded.len()
    })
}

/// [`rank_range`] through the row directory: the index alone is scanned, each row looked up
/// in `directory` (its session, positions, type and length), the groups kept per session
/// index.
fn rank_indexed(
    conn: &Connection,
    directory: &Directory,
    search: &Search,
    narrowing: &Narrowing<'_>,
    stats: &Stats,
    range: (i64, i64),
) -> rusqlite::Result<HashMap<String, Ranked>> {
    let idf = stats.idf();
    let avgdl = stats.avgdl();
    // Per session index: its best block and matching blocks.
    let mut best: Vec<Option<Best>> = vec![None; directory.sessions()];
    let mut frequencies = Vec::with_capacity(idf.len());
    each_indexed(
        conn,
        directory,
        search,
        narrowing,
        (true, range),
        |row, entry| {
            let blob = row.get_ref(1)?.as_blob()?;
            if !fts5::frequencies(blob, &mut frequencies) {
                return Ok(());
            }
            let score = bm25::score(&idf, avgdl, i64::from(entry.tokens), &frequencies);
            let found = Best {
                score,
                message: entry.message,
                block: entry.block,
                rowid: 0,
                blocks: 1,
            };
            match &mut best[entry.session as usize] {
                Some(b) => {
                    b.blocks += 1;
                    if found.beats(b) {
                        *b = Best {
                            rowid: row.get(0)?,
                            blocks: b.blocks,
                            ..found
                        };
                    }
                }
                slot => {
                    *slot = Some(Best {
                        rowid: row.get(0)?,
                        ..found
                    })
                }
            }
            Ok(())
        },
    )?;
    Ok(best
        .into_iter()
        .enumerate()
        .filter_map(|(i, b)| {
            let b = b?;
            let session_id = directory.session(i as u32).to_string();
            let hit = Hit {
                rowid: b.rowid,
                message_id: format!("{session_id}/m{}", b.message),
                session_id: session_id.clone(),
                message_position: i64::from(b.message),
                block_position: i64::from(b.block),
                score: b.score,
            };
            Some((
                session_id,
                Ranked {
                    best: hit,
                    blocks: b.blocks,
                },
            ))
        })
        .collect())
}

/// A session's best block in [`rank_indexed`], and its matching blocks.
#[derive(Debug, Clone, Copy)]
struct Best {
    score: f64,
    message: u32,
    block: u32,
    rowid: i64,
    blocks: u64,
}

impl Best {
    /// Whether it ranks ahead of `other` ([`ahead`]).
    fn beats(&self, other: &Best) -> bool {
        let key = |b: &Best| (b.score, i64::from(b.message), i64::from(b.block));
        ahead(key(self), key(other))
    }
}

/// [`each_match`] through the row directory, for the admin scope: `each(row, entry)` for every
/// block `search` matches in `range` (inclusive, at most the pin) whose entry the lane and the
/// filter admit. A row holds the block's row id, then (`scored`) [`fts5::FREQUENCIES`]'s
/// report.
fn each_indexed(
    conn: &Connection,
    directory: &Directory,
    search: &Search,
    narrowing: &Narrowing<'_>,
    (scored, range): (bool, (i64, i64)),
    mut each: impl FnMut(&rusqlite::Row<'_>, &super::directory::Entry) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    let report = if scored {
        format!(", {}(blocks_fts)", fts5::FREQUENCIES)
    } else {
        String::new()
    };
    let sql = format!(
        "SELECT rowid{report} FROM blocks_fts WHERE blocks_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(params![search.fts, range.0, range.1.min(narrowing.pin)])?;
    let kind = match narrowing.lane {
        Lane::Dialogue => Kind::Dialogue,
        Lane::Actions => Kind::Action,
    };
    let exclude = narrowing.lane == Lane::Dialogue;
    let candidates = narrowing.candidates.map(|c| directory.members(c));
    let mut lookup = directory.lookup();
    while let Some(row) = rows.next()? {
        let Some(entry) = lookup.find(row.get(0)?) else {
            continue;
        };
        if entry.kind != kind
            || (exclude && entry.system)
            || candidates
                .as_ref()
                .is_some_and(|c| !c[entry.session as usize])
        {
            continue;
        }
        each(row, entry)?;
    }
    Ok(())
}

/// Whether the row holds a credential in one of the masked indexed columns (`text`,
/// `tool_command`): its text and its masked text differ.
fn guarded(row: &rusqlite::Row<'_>, text: usize, command: usize) -> rusqlite::Result<bool> {
    for column in [text, command] {
        if let Some(value) = row.get_ref(column)?.as_str_or_null()?
            && quarry_udf::mask_credentials(value) != value
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The position of a message from its id (`<session_id>/m<position>`); 0 when it has none.
fn message_position(message_id: &str) -> i64 {
    message_id
        .rsplit_once("/m")
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(0)
}

/// Per phrase of `search` not under `NOT`, the rows of `universe` holding it (at most `pin`).
pub fn holding(
    conn: &Connection,
    search: &Search,
    universe: &Universe<'_>,
    pin: i64,
) -> rusqlite::Result<Vec<Option<i64>>> {
    let mut out = Vec::with_capacity(search.phrases.len());
    for phrase in &search.phrases {
        if phrase.negated {
            out.push(None);
            continue;
        }
        let count = if universe.sessions.is_none() && universe.hidden.is_none() && !universe.guard {
            conn.prepare_cached(
                "SELECT count(*) FROM blocks_fts WHERE blocks_fts MATCH ?1 AND rowid <= ?2",
            )?
            .query_row(params![phrase.fts, pin], |r| r.get(0))?
        } else {
            let mut stmt = conn.prepare_cached(
                "SELECT b.session_id, b.message_id, b.text, b.tool_command \
                 FROM blocks_fts CROSS JOIN blocks b ON b.rowid = blocks_fts.rowid \
                 WHERE blocks_fts MATCH ?1 AND blocks_fts.rowid <= ?2",
            )?;
            let mut rows = stmt.query(params![phrase.fts, pin])?;
            let mut count = 0i64;
            while let Some(row) = rows.next()? {
                let session = row.get_ref(0)?.as_str()?;
                let message = row.get_ref(1)?.as_str()?;
                if universe.admits(session, message) && !(universe.guard && guarded(row, 2, 3)?) {
                    count += 1;
                }
            }
            count
        };
        out.push(Some(count));
    }
    Ok(out)
}

/// The indexed rows of `universe` and their tokens: the blocks of its sessions that may match
/// for it (hidden messages' and, under the guard, credential-holding rows left out).
pub fn scope_totals(
    conn: &Connection,
    sessions: &HashSet<String>,
    universe: &Universe<'_>,
) -> rusqlite::Result<(i64, i64)> {
    let mut stmt = conn.prepare_cached(
        "SELECT b.message_id, d.sz, b.text, b.tool_command FROM blocks b INDEXED BY blocks_session \
         CROSS JOIN blocks_fts_docsize d ON d.id = b.rowid \
         WHERE b.session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1)",
    )?;
    let (mut rows, mut tokens) = (0i64, 0i64);
    for session in sessions {
        let mut found = stmt.query(params![session])?;
        while let Some(row) = found.next()? {
            let message = row.get_ref(0)?.as_str()?;
            if universe.hidden.is_some_and(|h| h.contains(message))
                || (universe.guard && guarded(row, 2, 3)?)
            {
                continue;
            }
            rows += 1;
            tokens += fts5::docsize_tokens(row.get_ref(1)?.as_blob()?);
        }
    }
    Ok((rows, tokens))
}

/// The system messages of the archive (no lexical lane ranks them as dialogue).
pub fn system_messages(conn: &Connection) -> rusqlite::Result<HashSet<String>> {
    let mut stmt = conn.prepare(
        "SELECT m.message_id FROM sessions s \
         CROSS JOIN session_numbers n ON n.session_id = s.session_id \
         CROSS JOIN messages m ON m.session_num = n.session_num \
         WHERE s.system_messages > 0 AND m.role = 'system'",
    )?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    rows.collect()
}

/// The highest block row id now.
pub fn max_rowid(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT coalesce(max(rowid), 0) FROM blocks", [], |r| {
        r.get(0)
    })
}

/// FTS5's highlighted excerpt of one block (`«term»`, `…` where text was cut).
pub fn snippet(conn: &Connection, search: &Search, rowid: i64) -> rusqlite::Result<String> {
    conn.prepare_cached(
        "SELECT snippet(blocks_fts, -1, '«', '»', '…', 24) FROM blocks_fts \
         WHERE blocks_fts MATCH ?1 AND rowid = ?2",
    )?
    .query_row(params![search.fts, rowid], |r| {
        r.get::<_, Option<String>>(0)
    })
    .optional()
    .map(|s| s.flatten().unwrap_or_default())
}

/// What a hit shows of its session (and what a read's [`crate::read::SessionHeader`] starts
/// with).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SessionSummary {
    /// The session's id.
    pub session_id: String,
    /// Where it came from.
    pub origin: String,
    /// Its title.
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
}

/// The `sessions` columns of a [`SessionSummary`], in [`SessionSummary::from_row`]'s order.
pub const SUMMARY_COLUMNS: &str =
    "session_id, origin, title, repo, model, created_at, updated_at, message_count";

impl SessionSummary {
    /// The summary in the first columns of `row` ([`SUMMARY_COLUMNS`]).
    pub fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionSummary> {
        Ok(SessionSummary {
            session_id: row.get(0)?,
            origin: row.get(1)?,
            title: row.get(2)?,
            repo: row.get(3)?,
            model: row.get(4)?,
            created_at: row.get(5)?,
            updated_at: row.get(6)?,
            message_count: row.get(7)?,
        })
    }
}

/// The summaries of `sessions`.
pub fn summaries(
    conn: &Connection,
    sessions: &[&str],
) -> rusqlite::Result<HashMap<String, SessionSummary>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {SUMMARY_COLUMNS} FROM sessions WHERE session_id = ?1"
    ))?;
    let mut out = HashMap::new();
    for session in sessions {
        if let Some(summary) = stmt
            .query_row(params![session], SessionSummary::from_row)
            .optional()?
        {
            out.insert(summary.session_id.clone(), summary);
        }
    }
    Ok(out)
}

/// A message's role and time.
pub fn message_facts(
    conn: &Connection,
    session: &str,
    message: &str,
) -> rusqlite::Result<Option<(String, Option<i64>)>> {
    conn.prepare_cached(
        "SELECT role, occurred_at_ms FROM messages \
         WHERE session_num = (SELECT session_num FROM session_numbers WHERE session_id = ?1) AND message_id = ?2",
    )?
    .query_row(params![session, message], |r| Ok((r.get(0)?, r.get(1)?)))
    .optional()
}
