//! The row directory: for every indexed block of one generation, what a ranking needs besides
//! FTS5's frequencies (its session, message and block positions, type, whether its message is
//! a system message, and its length in tokens), in memory.
//!
//! Without it each matching block is joined to `blocks` and FTS5 reads its length from
//! `blocks_fts_docsize`, two B-tree lookups per match that take most of a common word's time.
//! With it the scan reads only the index (`rowid` and [`quarry_fts5::FREQUENCIES`]) and looks
//! each row up here, in row id order (the order FTS5 returns). It is an accelerator only: a
//! ranking through it equals one through the join (tests/search.rs compares them), and a
//! search uses it only when it was built at the search's own generation, for the admin scope
//! (a reader's credential guard reads each row's text) and a ranking of sessions.
//!
//! A long-lived server builds it at start ([`prepare`]) and again, on a thread of its own,
//! when a search finds the generation moved; searches meanwhile take the join. It costs about
//! 28 bytes a block (a million blocks: 28 MB) and one read of `blocks` and its index's
//! lengths (docs/benchmarks.md, "Ranked search").

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use crate::engine::Engine;

/// The memo slot holding an engine's directory.
const SLOT: &str = "search:directory";

/// A block's type, as the lanes ask for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `text` or `thinking`: the dialogue lane.
    Dialogue,
    /// `tool_use` or `tool_result`: the actions lane.
    Action,
    /// Any other type: no lane.
    Other,
}

impl Kind {
    fn of(block_type: &str) -> Kind {
        match block_type {
            "text" | "thinking" => Kind::Dialogue,
            "tool_use" | "tool_result" => Kind::Action,
            _ => Kind::Other,
        }
    }
}

/// One indexed block.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Its session (an index into [`Directory::session`]).
    pub session: u32,
    /// Its message's position in the session.
    pub message: u32,
    /// Its position in the message.
    pub block: u32,
    /// Its length in tokens, as `bm25()` reads it.
    pub tokens: u32,
    /// Its type.
    pub kind: Kind,
    /// Whether its message is a system message (no lane ranks those as dialogue).
    pub system: bool,
}

/// The directory of one generation.
pub struct Directory {
    /// The generation it was read at.
    pub generation: i64,
    /// The archive file it was read from (device and inode).
    pub file: (u64, u64),
    /// How many system messages it was built with (a ranking whose own set differs in size
    /// does not read it).
    pub system_messages: usize,
    rowids: Vec<i64>,
    entries: Vec<Entry>,
    sessions: Vec<String>,
    index: HashMap<String, u32>,
}

/// Why a directory could not be built: the archive holds something it has no room for (a
/// message id not of the form `<session>/m<position>`, a position beyond `u32`), or SQLite
/// failed. Searches then take the join.
#[derive(Debug)]
pub struct Unsupported(pub String);

impl From<rusqlite::Error> for Unsupported {
    fn from(e: rusqlite::Error) -> Self {
        Unsupported(e.to_string())
    }
}

impl From<rusqlite::types::FromSqlError> for Unsupported {
    fn from(e: rusqlite::types::FromSqlError) -> Self {
        Unsupported(e.to_string())
    }
}

impl Directory {
    /// Reads the directory of the generation `conn`'s read transaction sees, of archive file
    /// `file`; `excluded` are the system messages of that generation.
    pub fn build(
        conn: &Connection,
        excluded: &HashSet<String>,
        file: (u64, u64),
    ) -> Result<Directory, Unsupported> {
        let generation =
            quarry_archive::read_generation(conn).map_err(|e| Unsupported(e.to_string()))?;
        let mut sizes = conn.prepare("SELECT id, sz FROM blocks_fts_docsize ORDER BY id")?;
        let mut sizes = sizes.query([])?;
        let mut blocks = conn.prepare(
            "SELECT rowid, session_id, message_id, position, type FROM blocks ORDER BY rowid",
        )?;
        let mut blocks = blocks.query([])?;
        let mut directory = Directory {
            generation,
            file,
            system_messages: excluded.len(),
            rowids: Vec::new(),
            entries: Vec::new(),
            sessions: Vec::new(),
            index: HashMap::new(),
        };
        let too_big = |what: &str| Unsupported(format!("{what} does not fit the directory"));
        let mut last: Option<u32> = None;
        // Both scans go in row id order; a block with no length is not indexed (never matches).
        while let Some(size) = sizes.next()? {
            let id: i64 = size.get(0)?;
            let tokens = quarry_fts5::docsize_tokens(size.get_ref(1)?.as_blob()?);
            let block = loop {
                let Some(block) = blocks.next()? else {
                    return Err(Unsupported(format!("indexed row {id} has no block")));
                };
                let rowid: i64 = block.get(0)?;
                if rowid == id {
                    break block;
                }
                if rowid > id {
                    return Err(Unsupported(format!("indexed row {id} has no block")));
                }
            };
            let session_id = block.get_ref(1)?.as_str()?;
            let message_id = block.get_ref(2)?.as_str()?;
            let message = message_position(session_id, message_id)
                .ok_or_else(|| Unsupported(format!("message id `{message_id}`")))?;
            let session = match last {
                Some(i) if directory.sessions[i as usize] == session_id => i,
                _ => directory
                    .intern(session_id)
                    .ok_or_else(|| too_big("sessions"))?,
            };
            last = Some(session);
            directory.rowids.push(id);
            directory.entries.push(Entry {
                session,
                message,
                block: u32::try_from(block.get::<_, i64>(3)?).map_err(|_| too_big("a block"))?,
                tokens: u32::try_from(tokens).map_err(|_| too_big("a length"))?,
                kind: Kind::of(block.get_ref(4)?.as_str()?),
                system: !excluded.is_empty() && excluded.contains(message_id),
            });
        }
        directory.rowids.shrink_to_fit();
        directory.entries.shrink_to_fit();
        Ok(directory)
    }

    fn intern(&mut self, session_id: &str) -> Option<u32> {
        if let Some(&i) = self.index.get(session_id) {
            return Some(i);
        }
        let i = u32::try_from(self.sessions.len()).ok()?;
        self.sessions.push(session_id.to_string());
        self.index.insert(session_id.to_string(), i);
        Some(i)
    }

    /// The id of session `i`.
    pub fn session(&self, i: u32) -> &str {
        &self.sessions[i as usize]
    }

    /// How many sessions it holds (session indexes are below it).
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Per session index, whether it is one of `sessions`.
    pub fn members(&self, sessions: &HashSet<String>) -> Vec<bool> {
        let mut members = vec![false; self.sessions.len()];
        for id in sessions {
            if let Some(&i) = self.index.get(id) {
                members[i as usize] = true;
            }
        }
        members
    }

    /// A reader of entries by ascending row id.
    pub fn lookup(&self) -> Lookup<'_> {
        Lookup {
            directory: self,
            at: 0,
        }
    }

    /// Blocks it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no block.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The position of message `message_id` of session `session_id` when the id is the canonical
/// `<session>/m<position>` (what a ranking rebuilds it from).
fn message_position(session_id: &str, message_id: &str) -> Option<u32> {
    let digits = message_id.strip_prefix(session_id)?.strip_prefix("/m")?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

/// Finds entries by row id, fastest when asked in ascending order (a gallop from the last
/// answer), correct in any order.
pub struct Lookup<'a> {
    directory: &'a Directory,
    at: usize,
}

impl<'a> Lookup<'a> {
    /// The entry of `rowid`, if the directory holds it.
    pub fn find(&mut self, rowid: i64) -> Option<&'a Entry> {
        let rowids = &self.directory.rowids;
        let mut at = self.at;
        if at >= rowids.len() || rowids[at] > rowid {
            // At or before the last answer: the first index not below `rowid` is `at` itself
            // unless the row before it is not below `rowid` either.
            if at > 0 && rowids[at - 1] >= rowid {
                at = rowids.partition_point(|&r| r < rowid);
            }
        } else if rowids[at] < rowid {
            // Gallop: the first index whose row id is not below `rowid` lies in (lo, hi].
            let (mut lo, mut step) = (at, 1);
            let mut hi = at + 1;
            while hi < rowids.len() && rowids[hi] < rowid {
                lo = hi;
                step *= 2;
                hi = lo + step;
            }
            let hi = hi.min(rowids.len());
            at = lo + 1 + rowids[lo + 1..hi].partition_point(|&r| r < rowid);
        }
        self.at = at;
        (rowids.get(at) == Some(&rowid)).then(|| &self.directory.entries[at])
    }
}

/// An engine's directory and whether one is being built.
#[derive(Default)]
struct Slot {
    state: Mutex<State>,
    /// Searches answered through it.
    uses: AtomicU64,
}

#[derive(Default)]
struct State {
    /// Whether searches may build it (a long-lived server asked, [`prepare`]).
    enabled: bool,
    /// The latest built.
    ready: Option<Arc<Directory>>,
    /// Whether a thread is building one.
    building: bool,
    /// The archive file and generation a build last failed at (not tried again there).
    failed: Option<((u64, u64), i64)>,
}

/// The engine's directory of generation `now` of the archive file there now, if it has one.
/// When it has none, directories are enabled and the archive has moved past the one it has
/// (a newer generation, or another file), a thread starts building one; the caller goes on
/// without it.
pub fn at(engine: &Engine, now: i64) -> Option<Arc<Directory>> {
    let file = crate::engine::file_identity(engine.path()).ok()?;
    let slot = engine.memo().slot::<Slot>(SLOT);
    let mut state = slot.state.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(ready) = &state.ready
        && (ready.file, ready.generation) == (file, now)
    {
        slot.uses.fetch_add(1, Ordering::Relaxed);
        return Some(ready.clone());
    }
    let moved_on = state
        .ready
        .as_ref()
        .is_none_or(|r| r.file != file || r.generation < now);
    if state.enabled && !state.building && moved_on && state.failed != Some((file, now)) {
        state.building = true;
        let (slot, archive) = (slot.clone(), engine.path().to_path_buf());
        std::thread::spawn(move || finish(&slot, build(&archive)));
    }
    None
}

/// What an engine's directory is now: the generation it was read at, the blocks it holds, and
/// the searches answered through it so far (`None` before one was built).
pub fn status(engine: &Engine) -> Option<(i64, usize, u64)> {
    let slot = engine.memo().slot::<Slot>(SLOT);
    let state = slot.state.lock().unwrap_or_else(|p| p.into_inner());
    let ready = state.ready.as_ref()?;
    Some((
        ready.generation,
        ready.len(),
        slot.uses.load(Ordering::Relaxed),
    ))
}

/// Enables directories for `engine` (a long-lived server: `quarry serve`, `quarry mcp`) and
/// builds the current generation's on this thread: the blocks it holds, or `None` when a
/// build was under way already. A one-shot command never calls it: the join is cheaper than a
/// directory it would use once.
pub fn prepare(engine: &Engine) -> Result<Option<usize>, String> {
    let slot = engine.memo().slot::<Slot>(SLOT);
    {
        let mut state = slot.state.lock().unwrap_or_else(|p| p.into_inner());
        state.enabled = true;
        if state.building {
            return Ok(None);
        }
        state.building = true;
    }
    let built = build(engine.path());
    let answer = match &built {
        Ok(directory) => Ok(Some(directory.len())),
        Err(failure) => Err(failure.why.clone()),
    };
    finish(&slot, built);
    answer
}

/// Why a build failed, and where.
struct Failure {
    /// The archive file and generation it was building (`None` when it never read them).
    at: Option<((u64, u64), i64)>,
    why: String,
}

/// Keeps a build's directory (the latest build wins: it read the archive last) or its failure
/// in the slot.
fn finish(slot: &Slot, built: Result<Directory, Failure>) {
    let mut state = slot.state.lock().unwrap_or_else(|p| p.into_inner());
    state.building = false;
    match built {
        Ok(directory) => state.ready = Some(Arc::new(directory)),
        Err(failure) => state.failed = failure.at,
    }
}

/// Builds the directory of the archive's current generation in one read transaction; a panic
/// while reading is a failure like any other (the slot is never left building).
fn build(archive: &Path) -> Result<Directory, Failure> {
    std::panic::catch_unwind(AssertUnwindSafe(|| read(archive))).unwrap_or_else(|_| {
        Err(Failure {
            at: None,
            why: "the directory's build panicked".into(),
        })
    })
}

fn read(archive: &Path) -> Result<Directory, Failure> {
    let failed = |at, why: String| Failure { at, why };
    let file = crate::engine::file_identity(archive).map_err(|e| failed(None, e.to_string()))?;
    let conn = crate::engine::read_only(archive).map_err(|e| failed(None, e.to_string()))?;
    conn.execute_batch("BEGIN")
        .map_err(|e| failed(None, e.to_string()))?;
    let generation =
        quarry_archive::read_generation(&conn).map_err(|e| failed(None, e.to_string()))?;
    let at = Some((file, generation));
    let excluded = super::rank::system_messages(&conn).map_err(|e| failed(at, e.to_string()))?;
    let directory =
        Directory::build(&conn, &excluded, file).map_err(|Unsupported(e)| failed(at, e));
    let _ = conn.execute_batch("COMMIT");
    // A file replaced while it was read: what was read may be either; the next search builds
    // again.
    match crate::engine::file_identity(archive) {
        Ok(now) if now == file => directory,
        _ => Err(failed(
            None,
            "the archive file was replaced while it was read".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn directory(rowids: &[i64]) -> Directory {
        Directory {
            generation: 1,
            file: (0, 0),
            system_messages: 0,
            rowids: rowids.to_vec(),
            entries: rowids
                .iter()
                .map(|&r| Entry {
                    session: 0,
                    message: r as u32,
                    block: 0,
                    tokens: 1,
                    kind: Kind::Dialogue,
                    system: false,
                })
                .collect(),
            sessions: vec!["s".into()],
            index: HashMap::from([("s".to_string(), 0)]),
        }
    }

    #[test]
    fn a_lookup_finds_every_row_in_any_order_and_no_other() {
        let rowids: Vec<i64> = (1..2000).filter(|r| r % 3 != 0 && r % 7 != 0).collect();
        let d = directory(&rowids);
        let held: HashSet<i64> = rowids.iter().copied().collect();
        // Ascending (the scan's order), with gaps of every size.
        let mut lookup = d.lookup();
        for r in 0..2100 {
            assert_eq!(
                lookup.find(r).map(|e| i64::from(e.message)),
                held.contains(&r).then_some(r)
            );
        }
        // Ascending by large strides, then backwards.
        let mut lookup = d.lookup();
        for r in (0..2100).step_by(97).chain((0..2100).rev().step_by(13)) {
            assert_eq!(
                lookup.find(r).map(|e| i64::from(e.message)),
                held.contains(&r).then_some(r)
            );
        }
        assert!(directory(&[]).lookup().find(1).is_none());
    }

    #[test]
    fn only_a_canonical_message_id_gives_a_position() {
        assert_eq!(message_position("s", "s/m0"), Some(0));
        assert_eq!(message_position("s", "s/m42"), Some(42));
        for other in ["s/m", "s/m+5", "s/m05", "s/m-1", "t/m1", "s/x1", "s/m1 "] {
            assert_eq!(message_position("s", other), None, "{other}");
        }
    }
}
