//! WAL checkpoints on a thread of their own, so the writer only writes.
//!
//! SQLite's automatic checkpoint runs inside the `COMMIT` that crosses its threshold: the
//! writer stops to copy the WAL's frames into the archive file and sync it. During an ingest a
//! second connection does that instead, a passive checkpoint after every commit, on the core
//! the parser leaves idle. A passive checkpoint never blocks the writer; the WAL restarts from
//! its beginning when a transaction begins after a checkpoint has copied every frame, so when
//! the WAL has grown past [`WAL_RESTART_BYTES`] the writer waits, before its next transaction,
//! for the checkpoint of its last commit to finish. Checkpoints are ordinary SQLite operations:
//! a kill at any moment leaves the archive as its last commit left it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use rusqlite::{Connection, OpenFlags};

/// WAL size past which the writer lets the checkpoint catch up before a new transaction, so the
/// WAL restarts from its beginning instead of growing.
pub const WAL_RESTART_BYTES: u64 = 256 * 1024 * 1024;

/// Commits made and commits checkpointed, shared by the writer and the checkpoint thread.
#[derive(Default)]
struct Counts {
    committed: u64,
    checkpointed: u64,
    stop: bool,
}

#[derive(Default)]
struct Shared {
    counts: Mutex<Counts>,
    changed: Condvar,
}

/// The checkpoint thread of one ingest.
pub struct Checkpointer {
    shared: Arc<Shared>,
    wal: PathBuf,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts checkpointing the archive at `path` on a second connection, or `None` when that
    /// connection cannot be opened (the writer's own automatic checkpoint then stays on).
    pub fn start(path: &Path) -> Option<Self> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .ok()?;
        conn.busy_timeout(std::time::Duration::from_secs(30)).ok()?;
        let shared = Arc::new(Shared::default());
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("checkpoint".into())
                .spawn(move || run(&conn, &shared))
                .ok()?
        };
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        Some(Checkpointer {
            shared,
            wal: PathBuf::from(wal),
            thread: Some(thread),
        })
    }

    /// Tells the thread a transaction committed.
    pub fn committed(&self) {
        let mut p = lock(&self.shared);
        p.committed += 1;
        self.shared.changed.notify_all();
    }

    /// Called before a transaction begins: when the WAL is past [`WAL_RESTART_BYTES`], waits
    /// until every commit so far is checkpointed, so the transaction restarts the WAL.
    pub fn before_transaction(&self) {
        let big = std::fs::metadata(&self.wal).is_ok_and(|m| m.len() > WAL_RESTART_BYTES);
        if !big {
            return;
        }
        let mut p = lock(&self.shared);
        while p.checkpointed < p.committed && !p.stop {
            p = self
                .shared
                .changed
                .wait(p)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        lock(&self.shared).stop = true;
        self.shared.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Counts> {
    shared.counts.lock().unwrap_or_else(|e| e.into_inner())
}

/// The thread: after each commit, a passive checkpoint; stops when told to, after checkpointing
/// what was committed.
fn run(conn: &Connection, shared: &Shared) {
    loop {
        let target = {
            let mut p = lock(shared);
            while p.checkpointed == p.committed && !p.stop {
                p = shared.changed.wait(p).unwrap_or_else(|e| e.into_inner());
            }
            if p.checkpointed == p.committed {
                return;
            }
            p.committed
        };
        // A busy or failed checkpoint is left to the next one (or to SQLite when the archive
        // closes); it never loses a committed transaction.
        let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        let mut p = lock(shared);
        p.checkpointed = target;
        shared.changed.notify_all();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_commit_is_copied_into_the_file_by_the_thread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        conn.execute_batch("CREATE TABLE t (x TEXT)").unwrap();
        let checkpointer = Checkpointer::start(&path).unwrap();
        for i in 0..20 {
            checkpointer.before_transaction();
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            conn.execute("INSERT INTO t VALUES (?1)", [format!("{i:0>4000}")])
                .unwrap();
            conn.execute_batch("COMMIT").unwrap();
            checkpointer.committed();
        }
        // Dropping waits for the checkpoint of the last commit: the archive file alone, copied
        // without its WAL, holds every row.
        drop(checkpointer);
        let copy = dir.path().join("copy.db");
        std::fs::copy(&path, &copy).unwrap();
        let alone = Connection::open(&copy).unwrap();
        let count: i64 = alone
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, 20);
    }

    #[test]
    fn without_an_archive_file_there_is_no_thread() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Checkpointer::start(&dir.path().join("missing/a.db")).is_none());
    }
}
