//! Full-text merges in a transaction of their own, after each commit.
//!
//! FTS5 merges a level's segments into one once `automerge` of them have gathered. It does so
//! a few leaves at a time: each flush (one a batch, at its commit) is followed by merge work of
//! the leaves it wrote times the number of levels. With `automerge` set, that work runs inside
//! the batch's transaction, on the writer's path, and the checkpoint thread can copy the batch
//! into the archive file only after it.
//!
//! An ingest keeps `automerge` 0 instead and runs the same work itself
//! ([`Writer`](crate::writer::Writer) calls [`merge_after`] after each commit). It is FTS5's
//! `'merge'` command: at most the leaves the batch flushed times the levels, on levels holding
//! `usermerge` (16) segments. It runs as a transaction of its own while the checkpoint thread
//! copies the batch, so the two overlap on the two cores. A first million into an empty archive
//! never gathers 16 segments on a level and pays nothing. A daily million into ten million merges
//! for about 2 s (docs/benchmarks.md, "The daily million's extra writes, by B-tree").
//!
//! A kill between the two commits leaves the batch committed and its merge work undone. The
//! next commit's merge takes up what was left, since `'merge'` works on every level that holds
//! 16 segments, and `crisismerge` still bounds a level at 64.

use rusqlite::{Connection, OptionalExtension};

/// The full-text index's table (`blocks_fts`) and the rowid of its structure record in
/// `blocks_fts_data` (FTS5's `FTS5_STRUCTURE_ROWID`).
const INDEX: &str = "blocks_fts";
const STRUCTURE_ROWID: i64 = 10;

/// Merge work, in leaves, when the structure record cannot be read: enough to keep merges going.
const FALLBACK_WORK: u64 = 8 * 1024;

/// What the merge pacing needs of the full-text index's structure record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// Leaves in all segments.
    pub leaves: u64,
    /// Levels (FTS5's `nLevel`, empty ones included).
    pub levels: u64,
    /// Segments on the level that holds the most.
    pub widest: u64,
    /// Whether a level's merge is under way (FTS5 goes on with it whatever the level holds).
    pub merging: bool,
}

/// The index's shape now: empty when it has no structure record yet (nothing indexed), `None`
/// when the record is not in a format this reads (FTS5's, with or without the version-2
/// segment fields) or cannot be read.
pub fn shape(conn: &Connection) -> Option<Shape> {
    let record: Option<Vec<u8>> = conn
        .prepare_cached(&format!("SELECT block FROM {INDEX}_data WHERE id = ?1"))
        .ok()?
        .query_row([STRUCTURE_ROWID], |r| r.get(0))
        .optional()
        .ok()?;
    record.map_or(Some(Shape::default()), |r| parse(&r))
}

/// Reads a structure record: a 4-byte cookie, the optional version-2 marker, the counts of
/// levels and segments, the write counter, then per level the segments in the merge under way,
/// the segment count, and per segment its id and first and last leaf (plus five more values in
/// version 2).
fn parse(record: &[u8]) -> Option<Shape> {
    let mut at = 4;
    let v2 = record.get(4..8) == Some(&[0xff, 0x00, 0x00, 0x01][..]);
    if v2 {
        at += 4;
    }
    let mut next = || varint(record, &mut at);
    let levels = next()?;
    let _segments = next()?;
    let _write_counter = next()?;
    let mut shape = Shape {
        levels,
        ..Shape::default()
    };
    for _ in 0..levels {
        shape.merging |= next()? > 0;
        let count = next()?;
        shape.widest = shape.widest.max(count);
        for _ in 0..count {
            let _id = next()?;
            let first = next()?;
            let last = next()?;
            shape.leaves += last.checked_sub(first)? + 1;
            if v2 {
                for _ in 0..5 {
                    next()?;
                }
            }
        }
    }
    Some(shape)
}

/// SQLite's variable-length integer: up to eight bytes of seven bits, most significant first,
/// and a ninth of eight.
fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for i in 0..9 {
        let byte = *bytes.get(*at)?;
        *at += 1;
        if i == 8 {
            return Some((value << 8) | u64::from(byte));
        }
        value = (value << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// After a commit whose transaction began when the index was `before`: runs the merge work FTS5
/// would have run inside it, as a transaction of its own. Returns whether it committed one. A
/// failed merge is rolled back and left to the next commit; the error is returned.
pub fn merge_after(conn: &Connection, before: Option<Shape>) -> rusqlite::Result<bool> {
    let work = match (before, shape(conn)) {
        (Some(before), Some(after)) if after.leaves <= before.leaves => return Ok(false),
        // Below 16 segments a level and no merge under way, `'merge'` finds nothing to do: no
        // transaction at all.
        (_, Some(after)) if after.widest < USERMERGE as u64 && !after.merging => return Ok(false),
        (Some(before), Some(after)) => (after.leaves - before.leaves) * after.levels.max(1),
        // A record this cannot read: some work, so merges go on.
        _ => FALLBACK_WORK,
    };
    // `'merge'` takes a 32-bit count.
    let work = work.min(i32::MAX as u64) as i64;
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let merged = conn
        .prepare_cached(&format!(
            "INSERT INTO {INDEX} ({INDEX}, rank) VALUES ('merge', ?1)"
        ))
        .and_then(|mut s| s.execute([work]))
        .and_then(|_| conn.execute_batch("COMMIT"));
    match merged {
        Ok(()) => Ok(true),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Segments a level gathers before [`merge_after`] merges them (FTS5's `usermerge`, which
/// `'merge'` reads; 16 is its largest).
pub const USERMERGE: i64 = 16;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Commits one transaction of `rows` rows into the index, ids from `from`.
    fn commit_rows(conn: &Connection, from: i64, rows: i64) {
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        for id in from..from + rows {
            conn.execute(
                "INSERT INTO blocks_fts (rowid, text, tool_name, tool_command, tool_path)
                 VALUES (?1, ?2, NULL, NULL, NULL)",
                rusqlite::params![id, format!("word{} common term{}", id % 97, id % 13)],
            )
            .unwrap();
        }
        conn.execute_batch("COMMIT").unwrap();
    }

    /// A new archive with the settings an ingest keeps: its index merges only when told to.
    fn open(dir: &std::path::Path) -> quarry_archive::Archive {
        let archive = quarry_archive::Archive::open(&dir.join("a.db")).unwrap();
        crate::tune_for_ingest(archive.conn(), 64 << 20).unwrap();
        archive
    }

    #[test]
    fn each_commit_flushes_one_segment_and_the_shape_counts_them() {
        let dir = tempfile::tempdir().unwrap();
        let archive = open(dir.path());
        let conn = archive.conn();
        assert_eq!(shape(conn), Some(Shape::default()), "nothing indexed yet");
        for n in 1..=20 {
            let before = shape(conn);
            commit_rows(conn, n * 1000, 50);
            let after = shape(conn).unwrap();
            // Without merges, every commit adds one level-0 segment of new leaves.
            assert_eq!(after.widest, n as u64);
            assert!(after.leaves > before.map_or(0, |b| b.leaves));
            assert!(after.levels >= 1);
        }
    }

    #[test]
    fn merging_after_each_commit_keeps_levels_narrow_and_the_index_whole() {
        let dir = tempfile::tempdir().unwrap();
        let archive = open(dir.path());
        let conn = archive.conn();
        let mut merges = 0;
        for n in 1..=60 {
            let before = shape(conn);
            commit_rows(conn, n * 1000, 50);
            if merge_after(conn, before).unwrap() {
                merges += 1;
            }
            // A merge of 16 segments takes about eight commits at this pace (the leaves flushed
            // times the two levels), while a segment a commit keeps arriving: about 24 at most,
            // where without merges the level would hold one segment a commit (60).
            assert!(shape(conn).unwrap().widest <= 26, "commit {n}");
        }
        assert!(merges > 0);
        // Every row is still found, by a term each has and by one only some have.
        let count = |q: &str| -> i64 {
            conn.query_row(
                "SELECT count(*) FROM blocks_fts WHERE blocks_fts MATCH ?1",
                [q],
                |r| r.get(0),
            )
            .unwrap()
        };
        assert_eq!(count("common"), 60 * 50);
        let expected = (1..=60)
            .flat_map(|n| n * 1000..n * 1000 + 50)
            .filter(|id| id % 97 == 5)
            .count() as i64;
        assert_eq!(count("word5"), expected);
    }

    #[test]
    fn a_record_this_cannot_read_is_no_shape() {
        assert_eq!(parse(&[0, 0, 0, 1]), None);
        assert_eq!(parse(&[0, 0, 0, 1, 0x80]), None);
        // One level, one segment of leaves 1..=3, version 1.
        assert_eq!(
            parse(&[0, 0, 0, 1, 1, 1, 0, 0, 1, 7, 1, 3]),
            Some(Shape {
                leaves: 3,
                levels: 1,
                widest: 1,
                merging: false
            })
        );
        // A segment whose last leaf comes before its first.
        assert_eq!(parse(&[0, 0, 0, 1, 1, 1, 0, 0, 1, 7, 3, 1]), None);
    }
}
